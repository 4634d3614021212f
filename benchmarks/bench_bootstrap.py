#!/usr/bin/env python
"""Time votebench's bootstraps: Pavao's stability protocol against ranky, and a large instance bootstrap.

What is measured (see ``benchmarks/README.md`` for how to run it):

1. **Pavao's stability protocol** (Pavao, Vaccaro, Guyon, ESANN 2021, sections
   2.3 and 3): for each rule, ``q = 100`` bootstraps of the judge axis
   (``over="tasks"``) and 100 of the candidate axis (``over="systems"``), the
   Spearman concordance of each set of replicate rankings
   (``engine.kernels.metrics.concordance``), the whole repeated over 10 trials with
   different seeds.  Rules: ``mean``, ``median``, ``average_rank``,
   ``success_rate``, ``relative_difference``, ``pavao_copeland`` (Pavao's
   Copeland) and ``copeland`` (wins minus losses, the same order), on every
   shipped ESANN matrix (``data/esann_*.csv`` through ``engine.open_scores``)
   and on a synthetic 292 systems x 76 tasks uniform random matrix.  The
   engine's time is the best (and median) of ``--repeats`` runs of the whole
   protocol.
2. **The same protocol with ranky** (Pavao's package), timed in the same run:
   ``rk.bootstrap`` on a DataFrame (candidates x judges), the rule
   (``rk.score``, ``rk.majority``, ``rk.average_rank``, ``rk.pairwise`` with
   ``rk.success_rate`` / ``rk.relative_difference``, ``rk.copeland``),
   ``rk.rank``, then ``rk.concordance`` (judge axis) or ``rk.corr`` over the
   candidates two replicates share (candidate axis, as in the ESANN notebook).
   Where one ranky ranking of the full matrix takes longer than
   ``--slow-ranking`` seconds (the pairwise rules at 292 x 76), only
   ``--reduced-bootstraps`` replicates per axis of one trial are ranked and the
   ranking time is extrapolated linearly to 100 replicates x 10 trials; the
   results mark these numbers as extrapolated.  ``--ranky-trials`` < 10 also
   extrapolates the measured trials linearly to 10.
3. **Instance bootstrap**: 1,000 replicates of two-level Borda
   (``rule="borda", level="two", over="instances"``) on a synthetic 100 systems
   x 20 tasks x 10,000 instances float64 tensor, in memory (numpy) and from
   dask chunks ``{"task": 5, "instance": 2500}`` with the default threaded
   scheduler.  Each case runs in a fresh subprocess (peak RSS from
   ``VmHWM``); a run that does not finish within ``--instance-timeout``
   seconds is stopped and reported as such.

Usage::

    python benchmarks/bench_bootstrap.py                    # full protocol (about 20-30 min)
    python benchmarks/bench_bootstrap.py --quick            # smoke test, small sizes (about two minutes)
    python benchmarks/bench_bootstrap.py --from-json benchmarks/results/bootstrap.json   # re-render the report

Writes ``benchmarks/results/bootstrap.md`` (``--out``) and ``bootstrap.json`` beside it.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy
import scipy.stats
import xarray as xr
from _machine import machine_info as _machine_info  # the script's own folder is on sys.path
from _machine import proc_status_mb, reset_peak_rss

import engine  # installed (pip install -e .): no sys.path edits
from engine.kernels.metrics import concordance as engine_concordance
from engine.labelled.bootstrap import bootstrap as engine_bootstrap

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "bootstrap.md"
ESANN_GLOB = str(REPO / "data" / "esann_*.csv")
RULES = ("mean", "median", "average_rank", "success_rate", "relative_difference", "pavao_copeland", "copeland")
PAIRWISE = ("success_rate", "relative_difference", "pavao_copeland", "copeland")
TARGET_SPEEDUP = 200.0
TARGET_INSTANCE_S = 10.0
SYNTH_SHAPE = (292, 76)  # systems x tasks
INSTANCE_SHAPE = (100, 20, 10_000)  # systems x tasks x instances
INSTANCE_CHUNKS = {"task": 5, "instance": 2500}


# ------------------------------------------------------------------------------------------
# machine
# ------------------------------------------------------------------------------------------
def _version(mod: str) -> str:
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:  # noqa: BLE001 - informational only
        return "?"


def machine_info() -> dict[str, Any]:
    try:
        import ranky

        ranky_version = getattr(ranky, "__version__", _version("ranky"))
    except ImportError:
        ranky_version = None
    return _machine_info(ranky=ranky_version)


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------
def oriented_matrix(scores: xr.DataArray) -> np.ndarray:
    """Task-level scores (S, T) with lower-is-better tasks negated (higher is better everywhere)."""
    x = scores.transpose("system", "task", "instance")
    v = np.asarray(x.values, dtype=np.float64)
    if v.shape[2] != 1:
        raise SystemExit("the stability protocol expects task-level data (one instance per task)")
    v = v[:, :, 0]
    hib = np.asarray(x.coords["higher_is_better"].values, dtype=bool) if "higher_is_better" in x.coords else np.ones(v.shape[1], bool)
    return np.where(hib[None, :], v, -v)


def load_datasets(pattern: str, synth: tuple[int, int] | None, seed: int = 20210601) -> list[dict[str, Any]]:
    """The shipped ESANN matrices (as ``engine.open_scores`` reads them) plus the synthetic one."""
    out = []
    for f in sorted(glob.glob(pattern)):
        if f.endswith(".meta.json"):
            continue
        scores = engine.open_scores(f)
        out.append({"name": Path(f).name.split(".")[0], "scores": scores, "X": oriented_matrix(scores), "synthetic": False})
    if synth is not None:
        S, T = synth
        rng = np.random.default_rng(seed)
        v = rng.random((S, T))
        scores = engine.scores_from_array(v, systems=[f"s{i:03d}" for i in range(S)], tasks=[f"t{j:02d}" for j in range(T)])
        out.append({"name": f"synthetic_{S}x{T}", "scores": scores, "X": v, "synthetic": True})
    for d in out:
        d["systems"] = [str(s) for s in d["scores"]["system"].values]
        d["shape"] = [int(d["X"].shape[0]), int(d["X"].shape[1])]
    return out


def rule_inputs(d: dict[str, Any], rule: str) -> tuple[xr.DataArray, np.ndarray, str | None]:
    """Engine tensor and oriented (S, T) matrix one rule runs on.

    ``relative_difference`` needs non-negative higher-is-better scores; where the
    oriented matrix has negative values (standardised matrices, negated error
    rates), both implementations get the same globally shifted matrix
    ``X - min(X)``.
    """
    X = d["X"]
    if rule == "relative_difference" and np.nanmin(X) < 0:
        shifted = X - np.nanmin(X)
        scores = engine.scores_from_array(shifted, systems=d["systems"], tasks=[str(t) for t in d["scores"]["task"].values])
        return scores, shifted, f"shifted by -min = {-np.nanmin(X):.4g}"
    return d["scores"], X, None


# ------------------------------------------------------------------------------------------
# engine protocol
# ------------------------------------------------------------------------------------------
def engine_protocol(scores: xr.DataArray, rule: str, *, trials: int, replicates: int) -> dict[str, Any]:
    """One run of the whole protocol, as `engine.labelled.bootstrap.pavao_stability` computes it.

    Per axis, one bootstrap call of ``trials * replicates`` replicates (trial ``k``
    = replicates ``k * replicates ...``, independent draws) and one batched
    concordance over the trials; timed step by step.
    """
    parts = {"bootstrap_tasks": 0.0, "concordance_tasks": 0.0, "bootstrap_systems": 0.0, "concordance_systems": 0.0}
    stab: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    for over in ("tasks", "systems"):
        t = time.perf_counter()
        R = engine_bootstrap(scores, rule=rule, over=over, replicates=trials * replicates, seed=0)["replicate_score"].values
        t1 = time.perf_counter()
        stab[over] = [float(v) for v in np.atleast_1d(engine_concordance(R.reshape(trials, replicates, -1), method="spearman"))]
        parts[f"bootstrap_{over}"] += t1 - t
        parts[f"concordance_{over}"] += time.perf_counter() - t1
    return {"total": time.perf_counter() - t0, "parts": parts, "stability_tasks": stab["tasks"],
            "stability_systems": stab["systems"]}


def time_engine(scores: xr.DataArray, rule: str, *, trials: int, replicates: int, repeats: int) -> dict[str, Any]:
    _ = engine_bootstrap(scores, rule=rule, over="tasks", replicates=2, seed=0)["replicate_score"].values  # warm-up
    runs = [engine_protocol(scores, rule, trials=trials, replicates=replicates) for _ in range(repeats)]
    best = min(runs, key=lambda r: r["total"])
    return {
        "best": best["total"],
        "median": statistics.median(r["total"] for r in runs),
        "times": [r["total"] for r in runs],
        "parts_best": best["parts"],
        "stability_tasks": float(np.nanmean(best["stability_tasks"])),
        "stability_systems": float(np.nanmean(best["stability_systems"])),
        "stability_tasks_trials": best["stability_tasks"],
        "stability_systems_trials": best["stability_systems"],
    }


# ------------------------------------------------------------------------------------------
# ranky protocol
# ------------------------------------------------------------------------------------------
def ranky_rule(rule: str) -> tuple[str, Callable[[Any], Any]]:
    """ranky's function for an engine rule: (label, f(DataFrame candidates x judges) -> Series, higher is better)."""
    import ranky as rk

    table: dict[str, tuple[str, Callable[[Any], Any]]] = {
        "mean": ("rk.score", rk.score),
        "median": ("rk.majority (median)", rk.majority),
        "average_rank": ("-rk.average_rank", lambda m: -rk.average_rank(m)),
        "success_rate": ("rk.pairwise(wins=rk.success_rate)", lambda m: rk.pairwise(m, wins=rk.success_rate)),
        "relative_difference": ("rk.pairwise(wins=rk.relative_difference)", lambda m: rk.pairwise(m, wins=rk.relative_difference)),
        "pavao_copeland": ("rk.copeland", rk.copeland),
        "copeland": ("rk.copeland", rk.copeland),
    }
    return table[rule]


def ranky_rankings(m: Any, f: Callable[[Any], Any], *, axis: int, n: int) -> list[Any]:
    """``n`` bootstraps of ``m`` along ``axis`` (1 = judges, 0 = candidates), each ranked by ``rk.rank(f(.))``."""
    import ranky as rk

    return [rk.rank(f(rk.bootstrap(m, axis=axis))) for _ in range(n)]


def ranky_concordance(ranks: list[Any], *, axis: int) -> float:
    """Spearman concordance of replicate rankings with ranky.

    Judge axis: every ranking covers all candidates, ``rk.concordance`` over the
    stacked rankings.  Candidate axis: each pair of rankings is compared on the
    candidates both contain (first copy of a candidate drawn several times),
    with ``rk.corr``, as in the ESANN notebook; every unordered pair once (the
    notebook visits each pair twice).
    """
    import ranky as rk

    if axis == 1:
        return float(rk.concordance(np.vstack([np.asarray(r, dtype=np.float64) for r in ranks]), method="spearman", axis=0))
    dedup = [r[~r.index.duplicated(keep="first")] for r in ranks]
    vals = []
    for a, b in itertools.combinations(dedup, 2):
        common = a.index.intersection(b.index)
        if len(common) > 1:
            vals.append(rk.corr(a.loc[common].to_numpy(), b.loc[common].to_numpy(), method="spearman"))
    return float(np.nanmean(vals)) if vals else float("nan")


def ranky_protocol(
    X: np.ndarray,
    systems: list[str],
    rule: str,
    *,
    trials: int,
    measured_trials: int,
    replicates: int,
    slow_ranking: float,
    reduced: int,
) -> dict[str, Any]:
    """Time ranky on the protocol; measured over ``measured_trials`` trials (or reduced), extrapolated to ``trials``."""
    import pandas as pd
    import ranky as rk

    label, f = ranky_rule(rule)
    m = pd.DataFrame(X, index=systems)
    one_ranking = float("inf")
    for _ in range(2):  # a second timing only if the first looks slow (load from other processes)
        t = time.perf_counter()
        full = np.asarray(f(m), dtype=np.float64)
        rk.rank(full)
        one_ranking = min(one_ranking, time.perf_counter() - t)
        if one_ranking <= slow_ranking:
            break
    out: dict[str, Any] = {"function": label, "full_ranking_s": one_ranking, "full_scores": full.tolist()}
    if one_ranking <= slow_ranking:
        per_trial = []
        stab_j, stab_c = [], []
        for trial in range(measured_trials):
            np.random.seed(trial)  # ranky draws from numpy's global RNG
            row = {}
            for axis, key, stab in ((1, "tasks", stab_j), (0, "systems", stab_c)):
                t = time.perf_counter()
                ranks = ranky_rankings(m, f, axis=axis, n=replicates)
                t1 = time.perf_counter()
                stab.append(ranky_concordance(ranks, axis=axis))
                row[f"rank_{key}"] = t1 - t
                row[f"concordance_{key}"] = time.perf_counter() - t1
            row["total"] = sum(row.values())
            per_trial.append(row)
        measured = sum(r["total"] for r in per_trial)
        out.update(
            mode="measured" if measured_trials >= trials else "extrapolated (trials)",
            measured_trials=measured_trials,
            measured_s=measured,
            per_trial=per_trial,
            total=measured * trials / measured_trials,
            extrapolated=measured_trials < trials,
            stability_tasks=float(np.nanmean(stab_j)),
            stability_systems=float(np.nanmean(stab_c)),
        )
        return out
    # reduced: rank `reduced` replicates per axis of one trial; concordance of 100 rankings timed on
    # rankings of the same bootstrap draws by rk.score (its cost does not depend on the rule)
    np.random.seed(0)
    row = {}
    for axis, key in ((1, "tasks"), (0, "systems")):
        t = time.perf_counter()
        ranky_rankings(m, f, axis=axis, n=reduced)
        row[f"rank_{key}_reduced"] = time.perf_counter() - t
        row[f"rank_{key}"] = row[f"rank_{key}_reduced"] * replicates / reduced
        cheap = ranky_rankings(m, rk.score, axis=axis, n=replicates)
        t = time.perf_counter()
        ranky_concordance(cheap, axis=axis)
        row[f"concordance_{key}"] = time.perf_counter() - t
    per_trial_s = row["rank_tasks"] + row["concordance_tasks"] + row["rank_systems"] + row["concordance_systems"]
    out.update(
        mode=f"extrapolated ({reduced} of {replicates} replicates per axis, 1 of {trials} trials)",
        reduced_bootstraps=reduced,
        measured_s=row["rank_tasks_reduced"] + row["rank_systems_reduced"] + row["concordance_tasks"] + row["concordance_systems"],
        per_trial=[row],
        total=per_trial_s * trials,
        extrapolated=True,
        stability_tasks=None,
        stability_systems=None,
    )
    return out


# ------------------------------------------------------------------------------------------
# instance bootstrap (subprocess per case)
# ------------------------------------------------------------------------------------------
def instance_case_main(spec: dict[str, Any]) -> None:
    """Subprocess entry: build the tensor, run the bootstrap up to ``repeats`` times, one JSON line per run."""
    S, T, K = spec["shape"]
    t = time.perf_counter()
    rng = np.random.default_rng(spec["seed"])
    v = rng.random((S, T, K))  # float64
    scores = engine.scores_from_array(v)
    if spec["chunks"]:
        scores = scores.chunk(spec["chunks"])
    print(json.dumps({"event": "ready", "setup_s": time.perf_counter() - t, "rss_mb": proc_status_mb("VmRSS")}), flush=True)
    for i in range(spec["repeats"]):
        reset = reset_peak_rss()
        before = proc_status_mb("VmRSS")
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        ds = engine_bootstrap(scores, rule="borda", level="two", over="instances", replicates=spec["replicates"], seed=spec["seed"])
        R = np.asarray(ds["replicate_score"].values)
        wall = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        peak = proc_status_mb("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        if i == 0 and spec.get("save"):
            np.save(spec["save"], R)
        rec = {
            "event": "run",
            "run": i,
            "wall": wall,
            "user": r1.ru_utime - r0.ru_utime,
            "sys": r1.ru_stime - r0.ru_stime,
            "rss_before_mb": before,
            "rss_peak_mb": peak,
            "peak_reset": reset,
            "method": ds.attrs.get("method"),
            "shape": list(R.shape),
        }
        print(json.dumps(rec), flush=True)
        if wall > spec["slow_s"]:
            break


def run_instance_case(spec: dict[str, Any], *, setup_timeout: float, run_timeout: float) -> dict[str, Any]:
    """Run one instance-bootstrap case in a fresh interpreter; stop it if a run exceeds ``run_timeout``."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--_instance-case", json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    out: dict[str, Any] = {"spec": spec, "runs": [], "timed_out": False, "error": None}
    timeout = setup_timeout
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            out["timed_out"] = True
            out["timeout_s"] = timeout
            proc.kill()
            break
        if line is None:
            break
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec["event"] == "ready":
            out["setup"] = rec
        else:
            out["runs"].append(rec)
        timeout = run_timeout
    proc.wait()
    err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode not in (0, None) and not out["timed_out"]:
        out["error"] = err[-2000:]
    if out["runs"]:
        walls = [r["wall"] for r in out["runs"]]
        out["first"] = walls[0]
        out["best"] = min(walls)
        out["median"] = statistics.median(walls)
        out["peak_rss_mb"] = max(r["rss_peak_mb"] for r in out["runs"])
        out["peak_extra_mb"] = max(r["rss_peak_mb"] - r["rss_before_mb"] for r in out["runs"])
    return out


def bench_instances(
    shape: tuple[int, int, int], replicates: int, chunks: dict[str, int], repeats: int, run_timeout: float
) -> dict[str, Any]:
    S, T, K = shape
    res: dict[str, Any] = {"shape": list(shape), "replicates": replicates, "chunks": chunks, "run_timeout_s": run_timeout, "cases": {}}
    with tempfile.TemporaryDirectory(prefix="votebench-bench-boot-") as d:
        for name, ch in (("numpy (in memory)", None), ("dask (threaded)", chunks)):
            spec = {
                "shape": [S, T, K],
                "replicates": replicates,
                "chunks": ch,
                "seed": 7,
                "repeats": repeats,
                "slow_s": max(TARGET_INSTANCE_S, run_timeout / 3),
                "save": str(Path(d) / f"{'dask' if ch else 'numpy'}.npy"),
            }
            print(f"  instance bootstrap, {name} ...", flush=True)
            r = run_instance_case(spec, setup_timeout=300, run_timeout=run_timeout)
            r["spec"] = {k: v for k, v in spec.items() if k != "save"}
            res["cases"][name] = r
            msg = "TIMED OUT" if r["timed_out"] and not r["runs"] else f"best {r.get('best', float('nan')):.2f} s"
            print(f"    {msg}; runs {[round(x['wall'], 2) for x in r['runs']]}", flush=True)
        a, b = Path(d) / "numpy.npy", Path(d) / "dask.npy"
        if a.exists() and b.exists():
            A, B = np.load(a), np.load(b)
            res["dask_equals_numpy"] = bool(np.array_equal(A, B, equal_nan=True))
            with np.errstate(invalid="ignore"):
                res["max_abs_diff"] = float(np.nanmax(np.abs(A - B))) if A.shape == B.shape else None
    return res


# ------------------------------------------------------------------------------------------
# stability protocol driver
# ------------------------------------------------------------------------------------------
def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(scipy.stats.spearmanr(a, b).statistic)


def bench_protocol(datasets: list[dict[str, Any]], args: argparse.Namespace, cfg: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        import ranky  # noqa: F401

        have_ranky = not args.no_ranky
    except ImportError:
        have_ranky = False
    rows = []
    for d in datasets:
        ranky_cache: dict[str, dict[str, Any]] = {}
        for rule in RULES:
            scores, X, note = rule_inputs(d, rule)
            row: dict[str, Any] = {"dataset": d["name"], "shape": d["shape"], "rule": rule, "input_note": note}
            try:
                row["engine"] = time_engine(scores, rule, trials=cfg["trials"], replicates=cfg["replicates"], repeats=cfg["repeats"])
            except Exception as e:  # noqa: BLE001 - report and go on
                row["engine"] = {"error": f"{type(e).__name__}: {e}"}
                print(f"  {d['name']} {rule}: engine error {row['engine']['error']}", flush=True)
            if have_ranky:
                fname, _ = ranky_rule(rule)
                key = f"{fname}|{note}"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if key in ranky_cache:
                        row["ranky"] = {**ranky_cache[key], "reused_from": ranky_cache[key]["rule"]}
                    else:
                        row["ranky"] = ranky_protocol(
                            X,
                            d["systems"],
                            rule,
                            trials=cfg["trials"],
                            measured_trials=min(cfg["ranky_trials"], cfg["trials"]),
                            replicates=cfg["replicates"],
                            slow_ranking=cfg["slow_ranking"],
                            reduced=cfg["reduced"],
                        )
                        row["ranky"]["rule"] = rule
                        ranky_cache[key] = row["ranky"]
                if "error" not in row["engine"]:
                    point = np.asarray(engine.aggregate(scores, rule=rule).values, dtype=np.float64)
                    # rounded: equal scores summed in a different order must tie in both
                    row["full_data_spearman"] = _spearman(np.round(point, 9), np.round(np.asarray(row["ranky"]["full_scores"]), 9))
                    row["speedup"] = row["ranky"]["total"] / row["engine"]["best"]
                    row["speedup_median"] = row["ranky"]["total"] / row["engine"]["median"]
            e = row["engine"]
            rk_ = row.get("ranky")
            print(
                f"  {d['name']:22s} {rule:20s} engine {e.get('best', float('nan')):7.3f} s"
                + (
                    f" | ranky {rk_['total']:9.1f} s{' (extrap.)' if rk_['extrapolated'] else ''}"
                    f" | x{row.get('speedup', float('nan')):.0f}"
                    if rk_
                    else ""
                ),
                flush=True,
            )
            rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------
def _s(x: float | None, nd: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{nd}f}"


def _stab(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def _case(r: dict[str, Any], extra: str) -> str:
    return f"{r['dataset']}/{r['rule']} {extra}"


def verdict(res: dict[str, Any]) -> list[str]:
    out = []
    rows = [r for r in res["protocol"] if "speedup" in r]
    if rows:
        sp = [r["speedup"] for r in rows]
        below = [r for r in rows if r["speedup"] < TARGET_SPEEDUP]
        worst = min(rows, key=lambda r: r["speedup"])
        out.append(
            f"Speed-up over ranky on Pavao's protocol (ranky total / engine best): min {min(sp):.0f}x "
            f"({worst['dataset']}, {worst['rule']}), median {statistics.median(sp):.0f}x, max {max(sp):.0f}x; "
            f"target >= {TARGET_SPEEDUP:.0f}x met in {len(rows) - len(below)} of {len(rows)} rule/dataset cases"
            + (
                " (**not met**; lowest: "
                + ", ".join(_case(r, f"{r['speedup']:.0f}x") for r in sorted(below, key=lambda r: r["speedup"])[:5])
                + ")"
                if below
                else " (**met**)"
            )
            + "."
        )
        ex = [r for r in rows if r["ranky"]["extrapolated"]]
        if ex:
            out.append(
                "Rows whose ranky time is extrapolated: "
                + ", ".join(f"{r['dataset']}/{r['rule']} ({r['ranky']['mode']})" for r in ex)
                + "."
            )
        bad = [r for r in rows if not (r.get("full_data_spearman", 1.0) > 0.999)]
        out.append(
            "Full-data ranking of the engine equals ranky's (Spearman > 0.999) in "
            f"{len(rows) - len(bad)} of {len(rows)} cases"
            + ("; differs in " + ", ".join(_case(r, f"({r.get('full_data_spearman', float('nan')):.3f})") for r in bad) if bad else "")
            + "."
        )
    errs = [r for r in res["protocol"] if "error" in r["engine"]]
    if errs:
        out.append("Engine errors: " + "; ".join(f"{r['dataset']}/{r['rule']}: {r['engine']['error']}" for r in errs))
    inst = res.get("instances")
    if inst:
        for name, c in inst["cases"].items():
            if c["runs"]:
                ok = c["best"] < TARGET_INSTANCE_S
                out.append(
                    f"Instance bootstrap ({name}): best {c['best']:.2f} s (first {c['first']:.2f} s) for "
                    f"{inst['replicates']} replicates: target < {TARGET_INSTANCE_S:.0f} s **{'met' if ok else 'NOT met'}**"
                    + ("; a later run exceeded the timeout" if c["timed_out"] else "")
                    + "."
                )
            elif c["timed_out"]:
                out.append(
                    f"Instance bootstrap ({name}): did not finish within {c.get('timeout_s', inst['run_timeout_s']):.0f} s "
                    f"(stopped): target < {TARGET_INSTANCE_S:.0f} s **NOT met**."
                )
            else:
                out.append(f"Instance bootstrap ({name}): failed: {c.get('error')}")
        if "dask_equals_numpy" in inst:
            out.append(
                f"Dask replicate scores identical to the in-memory ones: **{'yes' if inst['dask_equals_numpy'] else 'NO'}**"
                f" (max abs diff {inst.get('max_abs_diff')})."
            )
    return out


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    cfg = res["config"]
    L: list[str] = []
    a = L.append
    a("# Bootstrap benchmark: Pavao's stability protocol (engine vs ranky) and a large instance bootstrap")
    a("")
    a(
        f"Generated by `{res['command']}` on {m['date_utc']}"
        f"{' (QUICK smoke sizes, not the reference figures)' if res['quick'] else ''}."
    )
    a("")
    a("## Machine")
    a("")
    a(f"- CPU: {m['cpu_model']}; nproc {m['nproc']} (cpu_count {m['cpu_count']}); memory {m['memory_gib']} GiB")
    a(
        f"- Python {m['python']}, numpy {m['numpy']}, scipy {m['scipy']}, xarray {m['xarray']}, dask {m['dask']}, "
        f"pandas {m['pandas']}; votebench {m['votebench']}; ranky {m['ranky'] or 'not installed'}"
    )
    a(f"- {m['platform']}")
    a(
        f"- load average at start {tuple(round(x, 2) for x in m['loadavg_start'])}, at end "
        f"{tuple(round(x, 2) for x in m.get('loadavg_end', m['loadavg_start']))} (other processes share the 2 cores); "
        f"total benchmark wall time {res.get('wall_s', 0):.0f} s"
    )
    a("")
    a("## Method")
    a("")
    a(
        f"- **Protocol** (Pavao et al. 2021, sections 2.3 and 3): per rule, {cfg['replicates']} bootstraps of the judge axis "
        f'(`over="tasks"`) + {cfg["replicates"]} of the candidate axis (`over="systems"`), the Spearman concordance '
        f"(mean correlation over the {cfg['replicates'] * (cfg['replicates'] - 1) // 2} pairs of replicate rankings, "
        f"candidate axis restricted to the systems both replicates drew) of each set; repeated over {cfg['trials']} trials "
        "(seeds 0..trials-1)."
    )
    a(
        '- **engine**: `engine.bootstrap(scores, rule=..., over=..., replicates=trials * replicates, seed=0)["replicate_score"]` '
        "(trial k = replicates k*100 ... k*100+99, as `engine.labelled.bootstrap.pavao_stability` does) + "
        f'`engine.kernels.metrics.concordance(R.reshape(trials, 100, S), method="spearman")` (batched over trials); '
        f'time = best (median) of {cfg["repeats"]} runs of the whole '
        "protocol after a tiny warm-up call. ESANN data as read by `engine.open_scores` (Statlog is lower-is-better; the "
        "engine orients it)."
    )
    a(
        "- **ranky**: `rk.bootstrap` of a DataFrame (candidates x judges, oriented: lower-is-better tasks negated), the rule "
        '(column *ranky function*), `rk.rank`; judge axis: `rk.concordance(rankings, method="spearman")`; candidate axis: '
        '`rk.corr(..., method="spearman")` per pair of replicates over the candidates both contain (first copy of a '
        "duplicated candidate), as in the ESANN notebook (which visits every pair twice; here once). ranky draws from "
        "numpy's global RNG (`np.random.seed(trial)`). One run (the 10 trials are the repetition). `copeland` and "
        "`pavao_copeland` map to the same `rk.copeland`, timed once and shown on both rows."
    )
    a(
        f"- **Extrapolated ranky numbers** (marked *extrap.*): where one ranky ranking of the full matrix takes more than "
        f"{cfg['slow_ranking']} s (the pairwise rules at 292 x 76), {cfg['reduced']} bootstraps per axis of one trial are "
        f"ranked and the ranking time is scaled linearly to {cfg['replicates']} bootstraps x {cfg['trials']} trials; the "
        f"concordance step is measured on {cfg['replicates']} rankings (by `rk.score`, same bootstrap draws; its cost "
        f"does not depend on the rule) and scaled x{cfg['trials']}. "
        + (
            f"ranky was measured on {cfg['ranky_trials']} of {cfg['trials']} trials and scaled linearly (all rows marked)."
            if cfg["ranky_trials"] < cfg["trials"]
            else "Every other ranky number is the measured time of all trials."
        )
    )
    a(
        "- `relative_difference` needs non-negative higher-is-better scores (the engine refuses negative oriented scores); "
        "on matrices with negative oriented scores both implementations get the same matrix shifted by its minimum "
        "(column *input*)."
    )
    a(
        "- *stability* columns: mean over trials of the concordance (judge axis / candidate axis), engine and ranky; "
        "they should agree up to bootstrap noise (different RNGs; between trials the concordance varies by several "
        "hundredths on the low-stability matrices). *same ranking*: Spearman between the engine's full-data scores and "
        "ranky's (both rounded to 9 decimals, so that equal scores summed in a different order tie in both)."
    )
    a("")
    a("## Pavao's stability protocol: engine vs ranky")
    a("")
    a(
        "| dataset (S x T) | rule | input | engine s (median) | of which bootstrap / concordance s | ranky function | ranky s "
        "| speed-up | stability judges: engine / ranky | stability candidates: engine / ranky | same ranking |"
    )
    a("|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in res["protocol"]:
        e = r["engine"]
        rk_ = r.get("ranky")
        ds = f"{r['dataset']} ({r['shape'][0]} x {r['shape'][1]})"
        inp = "shifted" if r.get("input_note") else "as is"
        if "error" in e:
            a(f"| {ds} | {r['rule']} | {inp} | error: {e['error'][:80]} | | | | | | | |")
            continue
        p = e["parts_best"]
        boot = p["bootstrap_tasks"] + p["bootstrap_systems"]
        conc = p["concordance_tasks"] + p["concordance_systems"]
        if rk_:
            rtime = f"{rk_['total']:.1f}" + (" *extrap.*" if rk_["extrapolated"] else "")
            sp = f"**{r['speedup']:.0f}x**" if "speedup" in r else "n/a"
            sj = f"{_stab(e['stability_tasks'])} / {_stab(rk_['stability_tasks'])}"
            sc = f"{_stab(e['stability_systems'])} / {_stab(rk_['stability_systems'])}"
            same = _s(r.get("full_data_spearman"), 4)
            fn = f"`{rk_['function']}`"
        else:
            rtime = sp = same = fn = "n/a"
            sj = f"{_stab(e['stability_tasks'])} / n/a"
            sc = f"{_stab(e['stability_systems'])} / n/a"
        a(
            f"| {ds} | {r['rule']} | {inp} | {_s(e['best'])} ({_s(e['median'])}) | {_s(boot)} / {_s(conc)} | {fn} | {rtime} "
            f"| {sp} | {sj} | {sc} | {same} |"
        )
    a("")
    notes = sorted({(r["dataset"], r["input_note"]) for r in res["protocol"] if r.get("input_note")})
    for ds, note in notes:
        a(f"- {ds}, relative_difference input: {note}.")
    if notes:
        a("")
    tot_e = sum(r["engine"]["best"] for r in res["protocol"] if "best" in r["engine"])
    tot_r = sum(r["ranky"]["total"] for r in res["protocol"] if r.get("ranky") and "best" in r["engine"])
    a(
        f"Whole protocol, all rules and datasets: engine {tot_e:.1f} s"
        + (f", ranky {tot_r:.0f} s (x{tot_r / tot_e:.0f})." if tot_r else ".")
    )
    a("")
    ex = [r for r in res["protocol"] if r.get("ranky") and r["ranky"]["extrapolated"] and "reused_from" not in r["ranky"]]
    if ex:
        a("Extrapolated ranky rows, what was measured:")
        a("")
        a("| dataset | ranky function | mode | measured s | one full-data ranking s | extrapolated total s |")
        a("|---|---|---|---:|---:|---:|")
        for r in ex:
            rk_ = r["ranky"]
            a(
                f"| {r['dataset']} | `{rk_['function']}` | {rk_['mode']} | {rk_['measured_s']:.1f} | {rk_['full_ranking_s']:.2f} "
                f"| {rk_['total']:.0f} |"
            )
        a("")
    inst = res.get("instances")
    if inst:
        S, T, K = inst["shape"]
        a(f"## Instance bootstrap: two-level Borda, {inst['replicates']:,} replicates, {S} x {T} x {K:,} float64")
        a("")
        a(
            f'`engine.bootstrap(scores, rule="borda", level="two", over="instances", replicates={inst["replicates"]})'
            f'["replicate_score"].values`, one fresh subprocess per case (data built first, {S * T * K * 8 / 1e6:.0f} MB); '
            f"dask: `scores.chunk({inst['chunks']})`, default threaded scheduler. Peak RSS = `VmHWM` after resetting it "
            f"just before the call; extra = peak minus RSS before the call. A run is stopped after {inst['run_timeout_s']:.0f} s; "
            "repeats stop once a run is slow."
        )
        a("")
        a("| case | runs (s) | best s | first s | user + sys CPU s (best run) | peak RSS MB | extra MB | evaluation | status |")
        a("|---|---|---:|---:|---:|---:|---:|---|---|")
        for name, c in inst["cases"].items():
            if c["runs"]:
                br = min(c["runs"], key=lambda x: x["wall"])
                walls = ", ".join(f"{x['wall']:.2f}" for x in c["runs"])
                status = "ok" if c["best"] < TARGET_INSTANCE_S else f"over the {TARGET_INSTANCE_S:.0f} s target"
                if c["timed_out"]:
                    status += f"; a later run stopped after {c['timeout_s']:.0f} s"
                a(
                    f"| {name} | {walls} | {c['best']:.2f} | {c['first']:.2f} "
                    f"| {br['user'] + br['sys']:.1f} | {c['peak_rss_mb']:.0f} | {c['peak_extra_mb']:.0f} "
                    f"| {br.get('method')} | {status} |"
                )
            elif c["timed_out"]:
                a(
                    f"| {name} | - | > {c['timeout_s']:.0f} | > {c['timeout_s']:.0f} | | | | "
                    f"| **stopped: no result within {c['timeout_s']:.0f} s** |"
                )
            else:
                a(f"| {name} | - | | | | | | | failed: {str(c.get('error'))[-200:]} |")
        a("")
    a("## Targets")
    a("")
    for line in res["verdict"]:
        a(f"- {line}")
    a("")
    return "\n".join(L) + "\n"


# ------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small smoke sizes; not the reference figures")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="Markdown results file (a .json with raw numbers is written beside it)")
    p.add_argument("--repeats", type=int, default=3, help="engine runs of the whole protocol (best-of); default 3")
    p.add_argument("--ranky-trials", type=int, default=None, help="ranky trials actually measured (rest extrapolated); default all")
    p.add_argument("--slow-ranking", type=float, default=0.2, help="ranky s per full-data ranking above which bootstraps are reduced")
    p.add_argument("--reduced-bootstraps", type=int, default=None, help="replicates per axis ranked when reduced (default 5)")
    p.add_argument("--esann-glob", default=ESANN_GLOB, help="ESANN matrices to use")
    p.add_argument("--no-ranky", action="store_true", help="time the engine only")
    p.add_argument("--no-protocol", action="store_true", help="skip the stability protocol")
    p.add_argument("--no-instances", action="store_true", help="skip the instance bootstrap")
    p.add_argument("--instance-timeout", type=float, default=60.0, help="seconds after which an instance-bootstrap run is stopped")
    p.add_argument("--from-json", metavar="JSON", help="re-render the Markdown from a saved .json (no measuring)")
    p.add_argument("--_instance-case", dest="instance_case", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.instance_case:
        instance_case_main(json.loads(args.instance_case))
        return 0
    out = Path(args.out)
    if args.from_json:
        res = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        res["verdict"] = verdict(res)
        out.write_text(render(res), encoding="utf-8")
        print(f"wrote {out} from {args.from_json}")
        return 0
    quick = args.quick
    cfg = {
        "trials": 2 if quick else 10,
        "replicates": 20 if quick else 100,
        "repeats": max(1, args.repeats),
        "slow_ranking": args.slow_ranking,
        "reduced": args.reduced_bootstraps or (2 if quick else 5),
    }
    cfg["ranky_trials"] = min(args.ranky_trials or cfg["trials"], cfg["trials"])
    synth = (60, 20) if quick else SYNTH_SHAPE
    inst_shape = (20, 4, 1000) if quick else INSTANCE_SHAPE
    inst_reps = 50 if quick else 1000
    inst_chunks = {"task": 2, "instance": 250} if quick else INSTANCE_CHUNKS
    t0 = time.perf_counter()
    res: dict[str, Any] = {
        "command": "python benchmarks/bench_bootstrap.py" + (" --quick" if quick else ""),
        "quick": quick,
        "config": cfg,
        "synthetic_shape": list(synth),
        "machine": machine_info(),
        "protocol": [],
    }
    if not args.no_instances:
        print("instance bootstrap", flush=True)
        res["instances"] = bench_instances(inst_shape, inst_reps, inst_chunks, 3, args.instance_timeout)
    if not args.no_protocol:
        print("stability protocol", flush=True)
        datasets = load_datasets(args.esann_glob, synth)
        res["protocol"] = bench_protocol(datasets, args, cfg)
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["wall_s"] = time.perf_counter() - t0
    res["verdict"] = verdict(res)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(res), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    print("\n".join(res["verdict"]))
    print(f"wrote {out} and {out.with_suffix('.json')} ({res['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
