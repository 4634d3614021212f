"""Benchmark: PROMETHEE II on the Open LLM Leaderboard v2 table (xLLMBench's first context).

Data: ``data/open_llm_leaderboard_v2_2025-03-21.csv.gz`` (shipped; provenance in its sidecar)
(4,576 models x 8 criteria: the six normalised benchmark scores, maximised; ``params_B`` and
``CO2_cost_kg``, minimised as in xLLMBench scenarios S6/S7).  Rows with a missing value are dropped
(listwise deletion, as in xLLMBench Appendix A; 10 rows lack ``params_B``).

Compared, in the same run and interleaved (best of ``--repeats``):

* ``votebench``: :func:`engine.kernels.mcdm.promethee2` (sorted counts / prefix sums / blocked
  Gaussian with a far-field expansion);
* ``pymcdm``: ``pymcdm.methods.PROMETHEE_I/II`` (alternatives x criteria, one preference function
  for all criteria).  pymcdm has no Gaussian function: xLLMBench's (sigma = std of the difference
  table) is registered into pymcdm's preference-function table so that pymcdm's own pairwise
  machinery runs it; xLLMBench's "linear" is pymcdm's ``vshape_2`` with ``q = np.min`` and
  ``p = np.max`` of the difference table;
* ``numpy``: the plain O(T S^2) broadcast definition (``engine.kernels.mcdm._promethee2_reference``,
  the full T x S x S tensor).

Functions: ``usual``; ``linear`` = xLLMBench's linear (``linear_indifference`` with a, b = min, max of
the pairwise differences); ``gaussian`` (sigma = std of the pairwise differences); and the mixed
scenario ``S6+S7`` (linear on the six benchmarks, Gaussian on parameters and CO2; pymcdm cannot mix
functions).  Peak memory: ``tracemalloc`` peak of one call (numpy reports its buffers to
tracemalloc) and, in a fresh subprocess per case, the growth of the resident set size during the
call.  Writes ``benchmarks/results/promethee.md``.

Usage::

    python benchmarks/bench_promethee.py [--repeats 5] [--out benchmarks/results/promethee.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[1] / "data" / "open_llm_leaderboard_v2_2025-03-21.csv.gz"
CRITERIA = ["IFEval", "BBH", "MATH_Lvl_5", "GPQA", "MUSR", "MMLU_PRO", "params_B", "CO2_cost_kg"]
MAXIMIZE = [True] * 6 + [False, False]
TARGETS = {"usual": 50.0, "gaussian": 5.0}
MEMORY_TARGET_MB = 300.0

CASES = {
    "usual": dict(preference="usual"),
    "linear": dict(preference="linear_indifference"),
    "gaussian": dict(preference="gaussian"),
    "S6+S7": dict(preference=["linear_indifference"] * 6 + ["gaussian"] * 2),
}


def import_mcdm():
    """``engine.kernels.mcdm`` without running ``engine/__init__`` (keeps xarray/dask out of the RSS)."""
    if "engine" not in sys.modules:
        for name, path in (("engine", REPO / "engine"), ("engine.kernels", REPO / "engine" / "kernels")):
            mod = types.ModuleType(name)
            mod.__path__ = [str(path)]
            sys.modules[name] = mod
    from engine.kernels import mcdm

    return mcdm


def load_table() -> tuple[np.ndarray, int, int]:
    """(T, S) criteria x models, the number of rows read and the number dropped for missing values."""
    import pandas as pd

    df = pd.read_csv(DATA)
    n_rows = len(df)
    df = df.dropna(subset=CRITERIA)
    return df[CRITERIA].to_numpy(dtype=np.float64).T.copy(), n_rows, n_rows - len(df)


# ---------------------------------------------------------------------------------------------
# the implementations
# ---------------------------------------------------------------------------------------------
def ours(mcdm, X, case):
    return mcdm.promethee2(X, maximize=MAXIMIZE, **CASES[case])


def plain_numpy(mcdm, X, case):
    return mcdm._promethee2_reference(X, maximize=MAXIMIZE, **CASES[case])


def _xllmbench_gaussian(d, q, p):
    """xLLMBench's Gaussian preference (Eq. 7) with sigma = std of the difference table."""
    s = np.std(d)
    out = 1.0 - np.exp(-(d**2) / (2.0 * s * s))
    out[d <= 0] = 0.0
    return out


def pymcdm_flows(X, case):
    from pymcdm.methods import PROMETHEE_II
    from pymcdm.methods.partial import promethee_i

    if not hasattr(promethee_i._PreferenceFunctions, "gaussian"):
        promethee_i._PreferenceFunctions.gaussian = staticmethod(_xllmbench_gaussian)
    T = X.shape[0]
    name, kw = {
        "usual": ("usual", {}),
        "linear": ("vshape_2", dict(q=[np.min] * T, p=[np.max] * T)),
        "gaussian": ("gaussian", {}),
    }[case]
    types_ = np.where(MAXIMIZE, 1, -1)
    w = np.full(T, 1.0 / T)
    net = PROMETHEE_II(name, **kw)(X.T, w, types_, validation=False)
    return net


def pymcdm_flows_both(X, case):
    """PROMETHEE I flows and II net flow (only for the agreement check)."""
    from pymcdm.methods.partial import PROMETHEE_I

    pymcdm_flows(X, case)  # registers the Gaussian
    T = X.shape[0]
    name, kw = {
        "usual": ("usual", {}),
        "linear": ("vshape_2", dict(q=[np.min] * T, p=[np.max] * T)),
        "gaussian": ("gaussian", {}),
    }[case]
    return PROMETHEE_I(name, **kw)(X.T, np.full(T, 1.0 / T), np.where(MAXIMIZE, 1, -1), validation=False)


IMPLS = {
    "votebench": lambda mcdm, X, case: ours(mcdm, X, case),
    "pymcdm": lambda mcdm, X, case: pymcdm_flows(X, case),
    "numpy": lambda mcdm, X, case: plain_numpy(mcdm, X, case),
}


def applicable(impl: str, case: str) -> bool:
    return not (impl == "pymcdm" and case == "S6+S7")


# ---------------------------------------------------------------------------------------------
# measurements
# ---------------------------------------------------------------------------------------------
def traced_peak_mb(fn) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def _status_mb(field: str) -> float:
    """``VmRSS`` (current) or ``VmHWM`` (peak) of this process, from /proc/self/status.

    (``getrusage().ru_maxrss`` is useless here: a child started by fork/exec inherits the parent's.)
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e3
    raise RuntimeError(field)


def memcase(spec: dict) -> dict:
    """Run one case in this (fresh) process; report the RSS growth during the call."""
    mcdm = import_mcdm()
    X = np.load(spec["data"])
    if spec["impl"] == "pymcdm":
        import pymcdm.methods  # noqa: F401  (import cost outside the measurement)
    before = _status_mb("VmRSS")
    IMPLS[spec["impl"]](mcdm, X, spec["case"])
    peak = _status_mb("VmHWM")  # peak of the whole (short) process life: an upper bound for the call
    return {"rss_before_MB": before, "peak_rss_MB": peak, "growth_MB": max(0.0, peak - before)}


def rss_growth(impl: str, case: str, data_path: str) -> dict:
    spec = json.dumps({"impl": impl, "case": case, "data": data_path})
    out = subprocess.run(
        [sys.executable, __file__, "--_memcase", spec], capture_output=True, text=True, check=True, cwd=REPO
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per implementation (best is reported)")
    ap.add_argument("--numpy-repeats", type=int, default=2, help="timed runs of the slow O(T S^2) reference")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "promethee.md"))
    ap.add_argument("--no-subprocess", action="store_true", help="skip the RSS measurement in subprocesses")
    ap.add_argument("--_memcase", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._memcase:
        print(json.dumps(memcase(json.loads(args._memcase))))
        return

    mcdm = import_mcdm()
    try:
        import pymcdm  # noqa: F401
    except ImportError:
        sys.exit("pymcdm is not installed: pip install pymcdm")
    X, n_rows, n_dropped = load_table()
    T, S = X.shape
    load0 = os.getloadavg()
    print(f"Open LLM Leaderboard v2: {n_rows} rows, {n_dropped} dropped (missing values) -> {S} models x {T} criteria")

    # agreement of the three implementations
    agree = {}
    for case in CASES:
        flows = ours(mcdm, X, case)
        ref = plain_numpy(mcdm, X, case)
        row = {"numpy": max(float(np.abs(a - b).max()) for a, b in zip(flows, ref))}
        if applicable("pymcdm", case):
            fp, fm = pymcdm_flows_both(X, case)
            net = pymcdm_flows(X, case)
            row["pymcdm"] = max(float(np.abs(a - b).max()) for a, b in zip(flows, (fp, fm, net)))
        agree[case] = row
        vs_pm = row.get("pymcdm", float("nan"))
        print(f"  {case}: max |difference| of the flows vs numpy {row['numpy']:.1e}, vs pymcdm {vs_pm:.1e}")

    # timings, interleaved: best wall and best CPU time
    timing = {(impl, case): [] for impl in IMPLS for case in CASES if applicable(impl, case)}
    for rep in range(args.repeats):
        for case in CASES:
            for impl in IMPLS:
                if not applicable(impl, case) or (impl == "numpy" and rep >= args.numpy_repeats):
                    continue
                t0, c0 = time.perf_counter(), time.process_time()
                IMPLS[impl](mcdm, X, case)
                timing[(impl, case)].append((time.perf_counter() - t0, time.process_time() - c0))
        print(f"  repeat {rep + 1}/{args.repeats} done")
    best = {k: (min(t for t, _ in v), min(c for _, c in v)) for k, v in timing.items()}

    # memory
    peak = {k: traced_peak_mb(lambda k=k: IMPLS[k[0]](mcdm, X, k[1])) for k in timing}
    rss = {}
    if not args.no_subprocess:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "X.npy")
            np.save(path, X)
            for k in timing:
                rss[k] = rss_growth(k[0], k[1], path)
                print(f"  RSS {k}: +{rss[k]['growth_MB']:.0f} MB")
    load1 = os.getloadavg()
    write_report(args.out, X, n_rows, n_dropped, best, peak, rss, agree, args, load0, load1)
    print(f"wrote {args.out}")


def write_report(path, X, n_rows, n_dropped, best, peak, rss, agree, args, load0, load1) -> None:
    T, S = X.shape
    ms = lambda v: f"{1e3 * v:,.1f}"  # noqa: E731
    lines = [
        "# PROMETHEE II benchmark: Open LLM Leaderboard v2",
        "",
        f"Generated by `benchmarks/bench_promethee.py` on {time.strftime('%Y-%m-%d %H:%M')} "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"numpy {np.__version__}); load average {load0[0]:.1f} at the start and {load1[0]:.1f} at the end "
        "(the machine is shared, so wall times are noisy; CPU times are reported as well).",
        "",
        f"Data: `{DATA.name}`, {n_rows} models; {n_dropped} rows with a missing value dropped (listwise, as in "
        f"xLLMBench): **{S} models x {T} criteria** ({', '.join(CRITERIA)}; the last two minimised), equal weights.",
        "",
        f"Timings: best of {args.repeats} interleaved runs ({args.numpy_repeats} for the O(T S^2) numpy reference), "
        "wall clock and CPU (`process_time`).  Peak memory: `tracemalloc` peak of one call (numpy buffers "
        "included) and the resident-set growth during the call in a fresh subprocess.",
        "",
        "| function | votebench wall / CPU (ms) | pymcdm wall / CPU (ms) | numpy wall / CPU (ms) "
        "| speed-up vs pymcdm: wall / CPU (target) | speed-up vs numpy (wall) "
        "| peak MB votebench / pymcdm / numpy (tracemalloc) | RSS growth MB votebench / pymcdm / numpy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for case in CASES:
        ov, oc = best[("votebench", case)]
        nv, nc = best[("numpy", case)]
        if ("pymcdm", case) in best:
            pv, pc = best[("pymcdm", case)]
            sp_w, sp_c = pv / ov, pc / oc
            target = TARGETS.get(case)
            tgt = f" (>= {target:.0f}x: {'met' if min(sp_w, sp_c) >= target else 'NOT met'})" if target else ""
            py = f"{ms(pv)} / {ms(pc)}"
            spd = f"{sp_w:,.0f}x / {sp_c:,.0f}x{tgt}"
            if target:
                verdicts.append((case, sp_w, sp_c, target))
        else:
            py, spd = "n/a (one function for all criteria)", "n/a"
        pk = " / ".join(f"{peak[(i, case)]:,.0f}" if (i, case) in peak else "n/a" for i in IMPLS)
        rs = " / ".join(f"{rss[(i, case)]['growth_MB']:,.0f}" if (i, case) in rss else "n/a" for i in IMPLS)
        lines.append(
            f"| {case} | {ms(ov)} / {ms(oc)} | {py} | {ms(nv)} / {ms(nc)} | {spd} | {nv / ov:,.0f}x | {pk} | {rs} |"
        )
    lines += [
        "",
        "## Targets",
        "",
    ]
    for case, sp_w, sp_c, target in verdicts:
        lines.append(
            f"* PROMETHEE II {case}: {sp_w:,.0f}x (wall) and {sp_c:,.0f}x (CPU) faster than pymcdm in the same run; "
            f"target >= {target:.0f}x: **{'met' if min(sp_w, sp_c) >= target else 'NOT met'}**."
        )
    worst = max(peak[("votebench", c)] for c in CASES)
    worst_rss = max((rss[("votebench", c)]["growth_MB"] for c in CASES), default=float("nan")) if rss else float("nan")
    lines.append(
        f"* Peak memory of votebench's PROMETHEE II: at most {worst:,.0f} MB (tracemalloc) and {worst_rss:,.0f} MB "
        f"of RSS growth over all functions; target < {MEMORY_TARGET_MB:.0f} MB: "
        f"**{'met' if max(worst, worst_rss if worst_rss == worst_rss else 0) < MEMORY_TARGET_MB else 'NOT met'}** "
        f"(pymcdm: {max(peak[('pymcdm', c)] for c in CASES if ('pymcdm', c) in peak):,.0f} MB; "
        f"the numpy reference: {max(peak[('numpy', c)] for c in CASES):,.0f} MB)."
    )
    lines += [
        "",
        "## Agreement (largest absolute difference of phi+, phi-, phi over the 4,566 models)",
        "",
        "| function | vs numpy reference | vs pymcdm |",
        "|---|---|---|",
    ]
    for case, row in agree.items():
        py = f"{row['pymcdm']:.1e}" if "pymcdm" in row else "n/a"
        lines.append(f"| {case} | {row['numpy']:.1e} | {py} |")
    lines += [
        "",
        "## Notes",
        "",
        "* `linear` is xLLMBench's linear preference function (Eq. 6) with a, b = min and max of each criterion's "
        "pairwise-difference matrix (`preference='linear_indifference'` with its defaults; pymcdm: `vshape_2` with "
        "`q=np.min`, `p=np.max`).  Its net flow equals that of the V-shape with p = max difference.",
        "* `gaussian`: sigma = standard deviation of the S x S difference matrix (= sqrt(2) x the population std of "
        "the scores), as in xLLMBench's code.  pymcdm has no Gaussian; xLLMBench's function is plugged into "
        "pymcdm's preference-function table, so pymcdm's own pairwise machinery runs it.",
        "* votebench: usual and linear from per-criterion sorting, counts and prefix sums (O(T S log S)); Gaussian "
        "over the distinct values of each criterion: exact pairwise blocks (`block` = 2**16 values); for criteria "
        "with >= 1,024 distinct values (here IFEval, BBH, MUSR, MMLU_PRO, CO2) only for pairs in the same cell of a "
        "0.2 sqrt(2) sigma grid, the rest from a factorised truncated expansion (a 1-D fast Gauss transform, error "
        "< 1e-17 per pair).  The numpy reference materialises the T x S x S tensor.",
        "* `S6+S7` mixes functions per criterion (linear on the six benchmarks, Gaussian on parameters and CO2), "
        "which pymcdm cannot do.",
    ]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
