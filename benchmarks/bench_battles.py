"""Pairwise battles: votebench's Bradley-Terry with a 100-replicate bootstrap against evalica and choix.

Data: ``--battles`` battles (default 10 million) among ``--models`` models (default 200), drawn from known
strengths ``s ~ N(0, 1)`` (seeded) under Davidson's tie model (``nu = 0.6``, about 20% ties): ``model_a`` and
``model_b`` uniform among the distinct pairs, ``winner`` in {model_a, model_b, tie}.  They are written once as a
Parquet file (dictionary-encoded strings, Arena's column names), so every tool starts from the same file and
reading is measured.

Each tool runs in its own process (peak memory = that process's high-water mark, ``wait4`` rusage):

* **votebench**: ``read_battles`` (Arrow column read -> integer codes) + ``Battles.counts`` (one ``bincount``
  pass) + ``fit_bradley_terry`` + ``bootstrap_battles`` (100 multinomial replicates of the pair counts, each
  refitted by Newton's method; rank intervals, Arena's rank upper bound).  The headline time is the whole of it.
* **choix** (``ilsr_pairwise_dense``, its defaults) on *the same counts*: the full-data matrix and the 100
  replicate matrices that votebench draws (drawn before the clock starts); timed: the 101 fits.  The same
  process times votebench's ``fit_bradley_terry`` on the same 101 matrices (fit only; best of 3 alternating
  rounds for both), and compares the strengths (centred log-odds, ties as half wins): they must agree within 1e-6.
* **evalica** (Rust core): ``pandas.read_parquet`` + its input preparation + ``evalica.bradley_terry`` on the
  records + ``evalica.bootstrap`` (percentile intervals; BCa would need a jackknife over all battles).  Its
  bootstrap resamples the records, so at full size it is run with 1 and with 3 resamples and the time for 100
  is extrapolated linearly (marked as such): ``fixed + 100 x per-resample``.  Its memory at 100 resamples is
  not measured (scipy's bootstrap holds every resample's indices at once: 100 x n x 8 bytes, 8 GB at 1e7).

``--quick`` (200,000 battles among 50 models) runs every tool in full, with no extrapolation, and writes no
result file unless ``--out`` is given.  Results: ``benchmarks/results/battles.md`` and ``battles.json``
(``--out`` changes the folder; ``--quick --out DIR`` writes ``battles_quick.*``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

GIB = 2.0**30
NU = 0.6  # Davidson's tie parameter of the generated battles
ROUNDS = 3  # rounds of the fits-only comparison with choix (best of each)


# --------------------------------------------------------------------------------------------- data
def write_battles(path: Path, *, models: int, battles: int, seed: int) -> dict[str, Any]:
    """Generate the battles (seeded) and write them as Parquet; returns the true strengths and the file size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    strength = rng.standard_normal(models)
    names = pa.array([f"model-{i:03d}" for i in range(models)])
    winners = pa.array(["model_a", "model_b", "tie"])
    schema = pa.schema([("model_a", pa.dictionary(pa.int32(), pa.string())),
                        ("model_b", pa.dictionary(pa.int32(), pa.string())),
                        ("winner", pa.dictionary(pa.int8(), pa.string()))])
    step = 1 << 20
    with pq.ParquetWriter(str(path), schema) as w:
        for s0 in range(0, battles, step):
            n = min(step, battles - s0)
            a = rng.integers(0, models, n)
            b = rng.integers(0, models - 1, n)
            b = np.where(b >= a, b + 1, b)
            d = strength[a] - strength[b]
            z = np.exp(d / 2) + np.exp(-d / 2) + NU
            u = rng.random(n)
            pa_win, p_tie = np.exp(d / 2) / z, NU / z
            o = np.where(u < pa_win, 0, np.where(u < pa_win + p_tie, 2, 1)).astype(np.int8)
            w.write_table(pa.table({
                "model_a": pa.DictionaryArray.from_arrays(pa.array(a.astype(np.int32)), names),
                "model_b": pa.DictionaryArray.from_arrays(pa.array(b.astype(np.int32)), names),
                "winner": pa.DictionaryArray.from_arrays(pa.array(o), winners),
            }, schema=schema))
    return {"strength": strength.tolist(), "file_mib": path.stat().st_size / 2**20}


# --------------------------------------------------------------------------------------------- one tool per process
def _peak_gib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def run_votebench(path: str, replicates: int, seed: int, out: str) -> dict[str, Any]:
    from engine.io.readers.battles import read_battles
    from engine.kernels.battles import bootstrap_battles, fit_bradley_terry

    t0 = time.perf_counter()
    battles = read_battles(path)
    t1 = time.perf_counter()
    counts = battles.counts()
    n = len(battles.a)
    models = battles.models
    del battles
    t2 = time.perf_counter()
    fit = fit_bradley_terry(counts.wins, counts.ties)
    t3 = time.perf_counter()
    boot = bootstrap_battles(counts, replicates=replicates, seed=seed)
    t4 = time.perf_counter()
    np.save(out, fit.strength)
    dav = fit_bradley_terry(counts.wins, counts.ties, tie_model="davidson")  # untimed: the generating model's own fit
    np.save(out.replace(".npy", "_davidson.npy"), dav.strength)
    return {"n_battles": n, "n_models": len(models), "read_s": t1 - t0, "count_s": t2 - t1, "fit_s": t3 - t2,
            "bootstrap_s": t4 - t3, "total_s": t4 - t0, "peak_rss_gib": _peak_gib(), "ridge": float(fit.ridge),
            "newton_steps": int(fit.iterations), "replicate_ridges": int((boot.ridge[1:] > 0).sum()),
            "rank_ub_top5": boot.rank_ub[np.argsort(-boot.score)[:5]].tolist(),
            "rank_interval_width_mean": float(np.nanmean(boot.rank_high - boot.rank_low)),
            "davidson_nu": float(dav.tie_param)}


def run_choix(path: str, replicates: int, seed: int, out: str) -> dict[str, Any]:
    import choix

    from engine.io.readers.battles import read_battles
    from engine.kernels.battles import fit_bradley_terry, resample_battle_counts

    counts = read_battles(path).counts()
    W, T = resample_battle_counts(counts, seed=seed, replicates=replicates)
    W = np.concatenate([counts.wins[None], W])
    T = np.concatenate([counts.ties[None], T])
    comp = W + 0.5 * T
    t_choix, t_vb = [], []
    for _ in range(ROUNDS):  # alternating rounds, best of each: other processes share the cores
        t0 = time.perf_counter()
        ch = np.stack([choix.ilsr_pairwise_dense(c) for c in comp])
        t1 = time.perf_counter()
        fit = fit_bradley_terry(W, T)
        t2 = time.perf_counter()
        t_choix.append(t1 - t0)
        t_vb.append(t2 - t1)
    ch = ch - ch.mean(axis=-1, keepdims=True)
    np.save(out, ch[0])
    return {"choix_fits_s": min(t_choix), "votebench_fits_s": min(t_vb), "rounds": ROUNDS, "fits": int(comp.shape[0]),
            "choix_fits_all_s": t_choix, "votebench_fits_all_s": t_vb,
            "max_abs_diff_full": float(np.abs(ch[0] - fit.strength[0]).max()),
            "max_abs_diff_all": float(np.abs(ch - fit.strength).max()), "peak_rss_gib": _peak_gib()}


def _evalica_input(path: str):
    """Read the file with pandas and prepare evalica's input the cheapest way found: names as object arrays,
    winners as a list of evalica's integer codes (Draw 0, X 1, Y 2; a list of ints is faster than its enum)."""
    import evalica
    import pandas as pd

    t0 = time.perf_counter()
    df = pd.read_parquet(path, columns=["model_a", "model_b", "winner"])
    t1 = time.perf_counter()
    xs = df["model_a"].to_numpy(dtype=object)
    ys = df["model_b"].to_numpy(dtype=object)
    code = {"model_a": int(evalica.Winner.X), "model_b": int(evalica.Winner.Y), "tie": int(evalica.Winner.Draw)}
    winners = df["winner"].astype(str).map(code).to_numpy(dtype=np.uint8)
    del df
    index = pd.Index(sorted(set(pd.unique(xs)) | set(pd.unique(ys))))  # given to evalica: it would build it from 2n names
    t2 = time.perf_counter()
    return xs, ys, winners, index, t1 - t0, t2 - t1


def run_evalica(path: str, resamples: int, seed: int, out: str) -> dict[str, Any]:
    """evalica.bradley_terry on the records, then evalica.bootstrap with ``resamples`` resamples."""
    import evalica

    xs, ys, winners, index, read_s, prep_s = _evalica_input(path)
    t2 = time.perf_counter()
    wl = winners.tolist()
    res = evalica.bradley_terry(xs, ys, wl, index=index)
    t3 = time.perf_counter()
    boot_s = None
    if resamples > 0:
        evalica.bootstrap(evalica.bradley_terry, xs, ys, wl, index=index, n_resamples=resamples,
                          bootstrap_method="percentile", random_state=seed)
        boot_s = time.perf_counter() - t3
    s = np.log(res.scores.reindex(index).to_numpy(dtype=np.float64))
    np.save(out, s - s.mean())
    return {"read_s": read_s, "prepare_s": prep_s, "fit_s": t3 - t2, "bootstrap_s": boot_s, "resamples": resamples,
            "iterations": int(res.iterations), "peak_rss_gib": _peak_gib()}


def run_evalica_loop(path: str, replicates: int, seed: int, out: str) -> dict[str, Any]:
    """evalica.bradley_terry refitted on ``replicates`` numpy resamples of the integer-coded battles (the cheap way)."""
    import evalica
    import pandas as pd

    xs, ys, winners, index, read_s, prep_s = _evalica_input(path)
    codes = pd.Index(index)
    a, b = codes.get_indexer(xs), codes.get_indexer(ys)
    del xs, ys
    int_index = pd.Index(range(len(codes)))
    t0 = time.perf_counter()
    for r in range(replicates):
        idx = np.random.default_rng([seed, r]).integers(0, a.size, a.size)
        evalica.bradley_terry(a[idx].tolist(), b[idx].tolist(), winners[idx].tolist(), index=int_index)
    loop_s = time.perf_counter() - t0
    return {"read_s": read_s, "prepare_s": prep_s, "loop_s": loop_s, "replicates": replicates,
            "per_replicate_s": loop_s / max(1, replicates), "peak_rss_gib": _peak_gib()}


_TOOLS = {"votebench": run_votebench, "choix": run_choix, "evalica": run_evalica, "evalica_loop": run_evalica_loop}


def measured(tool: str, *args: Any) -> dict[str, Any]:
    """Run one tool in a fresh process; its JSON result plus the wall time and the child's peak RSS (wait4)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--run", tool, *map(str, args)]
    from _machine import run_child  # the script's own folder is on sys.path

    out, wall = run_child(argv, tool)
    res = json.loads(out.strip().splitlines()[-1])
    res["process_wall_s"] = wall
    return res


# --------------------------------------------------------------------------------------------- report
def render(r: dict[str, Any]) -> str:
    m = r["machine"]
    v, c, e, lp = r["votebench"], r["choix"], r["evalica"], r["evalica_loop"]
    x = " (extrapolated)" if e["extrapolated"] else ""
    best = min(e["total_100_s"], lp["total_100_s"])
    lines = [
        "# Pairwise battles: Bradley-Terry + 100 bootstrap replicates, votebench vs evalica and choix",
        "",
        "Generated by `benchmarks/bench_battles.py` (see its docstring for the data and what is timed). "
        f"Machine: {m['cpu_model']}, {m['nproc']} usable cores, {m['memory_gib']} GiB RAM; {m['date_utc']}; "
        f"load average at the start {', '.join(f'{v_:.1f}' for v_ in m['loadavg_start'])} (other processes share the cores).",
        "",
        f"Data: {r['n_battles']:,} battles among {r['n_models']} models (Parquet, {r['file_mib']:.0f} MiB), drawn from "
        f"known strengths under Davidson's tie model (nu = {NU}), seed {r['seed']}; {r['replicates']} bootstrap replicates. "
        "Every tool runs in its own process; peak RSS is that process's high-water mark.",
        "",
        "| tool | read (s) | prepare / count (s) | full-data fit (s) | 100 replicates (s) | total (s) | peak RSS (GiB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| votebench (`read_battles`, `counts`, `fit_bradley_terry`, `bootstrap_battles`) | {v['read_s']:.2f} | "
        f"{v['count_s']:.2f} | {v['fit_s']:.2f} | {v['bootstrap_s']:.2f} | **{v['total_s']:.2f}** | {v['peak_rss_gib']:.2f} |",
        f"| evalica {r['versions']['evalica']}, `evalica.bootstrap` (percentile) | {e['read_s']:.2f} | {e['prepare_s']:.2f} | "
        f"{e['fit_s']:.2f} | {e['replicates_100_s']:.0f}{x} | **{e['total_100_s']:.0f}**{x} | {e['peak_rss_gib']:.2f}"
        f"{' (at ' + str(e['measured_resamples']) + ' resamples)' if e['extrapolated'] else ''} |",
        f"| evalica {r['versions']['evalica']}, `evalica.bradley_terry` refitted on numpy resamples of the coded battles | "
        f"{lp['read_s']:.2f} | {lp['prepare_s']:.2f} | {e['fit_s']:.2f} | {lp['replicates_100_s']:.0f}{x} | "
        f"**{lp['total_100_s']:.0f}**{x} | {lp['peak_rss_gib']:.2f} |",
        "",
        f"votebench is **{best / v['total_s']:.0f}x** faster than the faster evalica way{x}, and "
        f"{e['total_100_s'] / v['total_s']:.0f}x faster than `evalica.bootstrap` (target: at least 10x); its peak memory is "
        f"{v['peak_rss_gib']:.2f} GiB (target: under 1 GiB).",
        "",
        f"Fits only, on the same {c['fits']} count matrices (the full data and the {c['fits'] - 1} replicates votebench draws), "
        f"each started from zero, best of {c['rounds']} alternating rounds: choix {r['versions']['choix']} "
        f"`ilsr_pairwise_dense` (its defaults) {c['choix_fits_s']:.2f} s, "
        f"votebench `fit_bradley_terry` {c['votebench_fits_s']:.2f} s (choix / votebench = "
        f"**{c['choix_fits_s'] / c['votebench_fits_s']:.1f}**; inside `bootstrap_battles` the replicates start from the "
        "full-data fit and take fewer Newton steps). "
        f"Largest difference of the centred strengths (log-odds, ties as half wins): {c['max_abs_diff_full']:.1e} on the "
        f"full data, {c['max_abs_diff_all']:.1e} over all {c['fits']} fits (target: within 1e-6). "
        f"evalica's full-data fit differs from votebench's by {r['evalica_vs_votebench']:.1e} (its default tolerance is "
        f"1e-6). Check against the generating model: votebench's Davidson fit (`tie_model=\"davidson\"`) finds "
        f"nu = {v['davidson_nu']:.3f} (generated with {NU}) and strengths {r['davidson_vs_truth_rmse']:.3f} (RMS) from "
        "the generating ones (ties as half wins estimate a different, flatter scale, so they are not compared with them).",
        "",
        f"votebench: {v['newton_steps']} Newton steps on the full data, ridge {v['ridge']:g} (0 = plain maximum "
        f"likelihood; {v['replicate_ridges']} replicates needed the ridge); mean width of the 95% rank intervals "
        f"{v['rank_interval_width_mean']:.2f}; Arena rank upper bound of the five best: {v['rank_ub_top5']}.",
    ]
    if r["quick"]:
        lines += ["", "Smoke size (`--quick`): fixed costs (importing pyarrow, xarray and scipy, about a second) dominate "
                  "votebench's times here; these are not the reference figures."]
    if e["extrapolated"]:
        lines += ["", f"Extrapolation: `evalica.bootstrap` ran with 1 and {e['measured_resamples']} resamples "
                  f"({e['boot_1_s']:.1f} s and {e['boot_k_s']:.1f} s): {e['per_resample_s']:.1f} s per resample, so "
                  f"{r['replicates']} take about {e['replicates_100_s']:.0f} s; its memory at {r['replicates']} resamples "
                  "was not measured (scipy's bootstrap holds the indices of every resample at once: "
                  f"{r['replicates']} x {r['n_battles']:,} x 8 bytes = {r['replicates'] * r['n_battles'] * 8 / GIB:.1f} GiB "
                  f"more). The refit loop ran {lp['replicates']} replicates ({lp['loop_s']:.1f} s, "
                  f"{lp['per_replicate_s']:.1f} s each) and is scaled to {r['replicates']}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="200,000 battles among 50 models, every tool in full")
    ap.add_argument("--battles", type=int, default=None)
    ap.add_argument("--models", type=int, default=None)
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--evalica-resamples", type=int, default=None,
                    help="resamples of evalica's bootstrap actually run (default: all at --quick, else 3, extrapolated)")
    ap.add_argument("--out", type=Path, default=None,
                    help="folder of the result files (default benchmarks/results; --quick writes none unless given)")
    ap.add_argument("--run", nargs=5, metavar=("TOOL", "PATH", "N", "SEED", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.run:
        tool, path, n, seed, out = args.run
        print(json.dumps(_TOOLS[tool](path, int(n), int(seed), out)))
        return 0
    from _machine import machine_info

    battles = args.battles or (200_000 if args.quick else 10_000_000)
    models = args.models or (50 if args.quick else 200)
    full_evalica = args.quick or (args.evalica_resamples is not None and args.evalica_resamples >= args.replicates)
    import choix  # noqa: F401  (fail early when a competitor is missing)
    import evalica

    versions = {"evalica": getattr(evalica, "__version__", _dist_version("evalica")), "choix": _dist_version("choix")}
    with tempfile.TemporaryDirectory(prefix="bench_battles_") as tmp:
        tmp_p = Path(tmp)
        path = tmp_p / "battles.parquet"
        t0 = time.perf_counter()
        gen = write_battles(path, models=models, battles=battles, seed=args.seed)
        print(f"generated {battles:,} battles in {time.perf_counter() - t0:.1f} s ({gen['file_mib']:.0f} MiB)", flush=True)
        v = measured("votebench", path, args.replicates, args.seed, tmp_p / "votebench.npy")
        print("votebench", json.dumps(v), flush=True)
        c = measured("choix", path, args.replicates, args.seed, tmp_p / "choix.npy")
        print("choix", json.dumps(c), flush=True)
        if full_evalica:
            e = measured("evalica", path, args.replicates, args.seed, tmp_p / "evalica.npy")
            e.update(extrapolated=False, replicates_100_s=e["bootstrap_s"],
                     total_100_s=e["read_s"] + e["prepare_s"] + e["fit_s"] + e["bootstrap_s"])
            loop = measured("evalica_loop", path, args.replicates, args.seed, tmp_p / "unused.npy")
            loop.update(extrapolated=False, replicates_100_s=loop["loop_s"])
        else:
            k = args.evalica_resamples or 3
            e1 = measured("evalica", path, 1, args.seed, tmp_p / "evalica.npy")
            print("evalica (1 resample)", json.dumps(e1), flush=True)
            e = measured("evalica", path, k, args.seed, tmp_p / "evalica.npy")
            per = (e["bootstrap_s"] - e1["bootstrap_s"]) / (k - 1)
            fixed = e1["bootstrap_s"] - per
            e.update(extrapolated=True, measured_resamples=k, boot_1_s=e1["bootstrap_s"], boot_k_s=e["bootstrap_s"],
                     per_resample_s=per, replicates_100_s=fixed + args.replicates * per,
                     total_100_s=e["read_s"] + e["prepare_s"] + e["fit_s"] + fixed + args.replicates * per)
            loop = measured("evalica_loop", path, 2, args.seed, tmp_p / "unused.npy")
            loop.update(extrapolated=True, replicates_100_s=args.replicates * loop["per_replicate_s"])
        loop["total_100_s"] = loop["read_s"] + loop["prepare_s"] + e["fit_s"] + loop["replicates_100_s"]
        print("evalica loop", json.dumps(loop), flush=True)
        print("evalica", json.dumps(e), flush=True)
        sv, se = np.load(tmp_p / "votebench.npy"), np.load(tmp_p / "evalica.npy")
        truth = np.asarray(gen["strength"])
        result = {
            "machine": machine_info(), "versions": versions, "n_battles": battles, "n_models": models,
            "replicates": args.replicates, "seed": args.seed, "file_mib": gen["file_mib"], "quick": bool(args.quick),
            "votebench": v, "choix": c, "evalica": e, "evalica_loop": loop,
            "evalica_vs_votebench": float(np.abs(se - sv).max()),
            "davidson_vs_truth_rmse": float(np.sqrt(np.mean((np.load(tmp_p / "votebench_davidson.npy")
                                                              - (truth - truth.mean())) ** 2))),
            "speedup_vs_evalica": min(e["total_100_s"], loop["total_100_s"]) / v["total_s"],
            "speedup_vs_evalica_bootstrap": e["total_100_s"] / v["total_s"],
            "fit_speedup_vs_choix": c["choix_fits_s"] / c["votebench_fits_s"],
        }
    print(render(result))
    out = args.out if args.out is not None else (None if args.quick else HERE / "results")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        stem = "battles_quick" if args.quick else "battles"
        (out / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        (out / f"{stem}.md").write_text(render(result), encoding="utf-8")
    return 0


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    raise SystemExit(main())
