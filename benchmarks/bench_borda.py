#!/usr/bin/env python
"""Time votebench's Borda aggregation against a plain numpy implementation.

What is measured (see ``benchmarks/README.md`` for how to run it):

1. **In memory**: ``engine.aggregate(scores, rule="borda", level=...)`` on a
   synthetic float32 ``(task, instance, system)`` buffer wrapped without a copy
   by ``engine.scores_from_array(values, layout="system-last")``, against a plain
   numpy reference written here (double ``argsort`` along the system axis,
   summed).  The plain reference breaks ties by argsort position; the engine
   gives tied systems the average of their points.  Correctness is checked
   against a tie-aware oracle (``scipy.stats.rankdata(method="average")``),
   which is also timed for information.
2. **Chunked (dask)**: the same tensor written with ``engine.to_zarr`` under a
   couple of chunkings, reopened lazily with ``engine.open_scores`` and computed
   with the threaded scheduler; every result must equal the in-memory one exactly.
3. **Real data**: the nine instance-level Colombo et al. (2022) datasets shipped in
   ``data/colombo_*.csv.gz`` (loading timed apart from compute).
4. **Memory**: tracemalloc peak of every in-memory call (allocations made
   during the call; the input excluded) and, for the largest size, the peak RSS
   of a fresh subprocess per case (``resource.getrusage``).

Timings are the best (and median) of ``--repeats`` runs after one untimed
warm-up run; the warm-up absorbs one-off costs (first touch of fresh VM memory,
lazy imports), which are reported separately where they matter.

Usage::

    python benchmarks/bench_borda.py            # full size, a few minutes
    python benchmarks/bench_borda.py --quick    # smoke test, seconds

Writes ``benchmarks/results/borda.md`` (``--out``) and ``borda.json`` beside it.
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import scipy
import scipy.stats
import xarray as xr
from _machine import machine_info as _machine_info  # the script's own folder is on sys.path
from _machine import proc_status_mb, reset_peak_rss

import engine  # installed (pip install -e .): no sys.path edits
from engine.kernels.ranking import borda_points

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "borda.md"
REAL_GLOB = "data/colombo_*.csv.gz"  # the nine instance-level sets shipped with the repository (relative to it)
N_SYSTEMS = 100
N_TASKS = 20
TIE_STEP = 0.05  # "ties" tensors: scores rounded to multiples of 0.05 (21 distinct values for 100 systems)
TARGET_RATIO = 1.5
LEVELS = ("one", "two")


# ------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------
def make_values(n_tasks: int, n_instances: int, n_systems: int, *, ties: bool, seed: int = 20240601) -> np.ndarray:
    """Seeded float32 buffer (T, K, S), system last.

    ``ties=False``: every judge is tie-free by construction (a random
    permutation of the systems plus a jitter below half a step, scaled to
    [0, 1)); plain float32 uniforms would tie now and then (24-bit mantissa).
    ``ties=True``: uniforms rounded to multiples of ``TIE_STEP``, so every
    judge has ties.
    """
    rng = np.random.default_rng([seed, n_instances, int(ties)])
    shape = (n_tasks, n_instances, n_systems)
    v = np.empty(shape, dtype=np.float32)
    if ties:
        rng.random(out=v, dtype=np.float32)
        v /= np.float32(TIE_STEP)
        np.rint(v, out=v)
        v *= np.float32(TIE_STEP)
        return v
    perm = v.reshape(-1, n_systems)
    perm[:] = np.arange(n_systems, dtype=np.float32)
    rng.permuted(perm, axis=-1, out=perm)
    jitter = rng.random(shape, dtype=np.float32)
    jitter *= np.float32(0.5)
    v += jitter
    v *= np.float32(1.0 / n_systems)
    return v


def judges_with_ties(v: np.ndarray) -> int:
    """Number of (task, instance) rows with at least two equal scores."""
    s = np.sort(v, axis=-1)
    return int(np.count_nonzero((s[..., 1:] == s[..., :-1]).any(axis=-1)))


# ------------------------------------------------------------------------------------------
# implementations
# ------------------------------------------------------------------------------------------
def plain_numpy(v: np.ndarray, level: str) -> np.ndarray:
    """Plain numpy Borda: double argsort along the system axis (ties broken by position).

    One level: the ranks 0..S-1 of every judge summed over all judges.  Two
    levels: per-task sums of the ranks, then the double argsort of those sums,
    summed over tasks.
    """
    r = np.argsort(np.argsort(v, axis=-1), axis=-1)
    if level == "one":
        return r.sum(axis=(0, 1)).astype(np.float64)
    per_task = r.sum(axis=1)
    return np.argsort(np.argsort(per_task, axis=-1), axis=-1).sum(axis=0).astype(np.float64)


def oracle(v: np.ndarray, level: str) -> np.ndarray:
    """Tie-aware reference: average ranks (scipy.stats.rankdata) minus one, summed."""
    pts = scipy.stats.rankdata(v, method="average", axis=-1) - 1.0
    if level == "one":
        return pts.sum(axis=(0, 1))
    per_task = pts.sum(axis=1)
    return (scipy.stats.rankdata(per_task, method="average", axis=-1) - 1.0).sum(axis=0)


def engine_inmem(scores: xr.DataArray, level: str) -> np.ndarray:
    return np.asarray(engine.aggregate(scores, rule="borda", level=level).values)


def engine_dask(lazy: xr.DataArray, level: str) -> np.ndarray:
    return np.asarray(engine.aggregate(lazy, rule="borda", level=level).compute(scheduler="threads").values)


# ------------------------------------------------------------------------------------------
# measuring
# ------------------------------------------------------------------------------------------
def _stats(runs: list[dict[str, float]], first: float | None) -> dict[str, Any]:
    wall = [r["wall"] for r in runs]
    fastest = min(runs, key=lambda r: r["wall"])
    return {
        "best": min(wall),
        "median": statistics.median(wall),
        "cpu_best": min(r["user"] + r["sys"] for r in runs),
        "user_best": min(r["user"] for r in runs),
        "fastest_run": fastest,
        "first": first,
        "times": wall,
        "runs": runs,
    }


def _timed(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """Call ``fn`` once: wall time, this process's user and system CPU time (all threads), minor page faults."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return out, {
        "wall": wall,
        "user": r1.ru_utime - r0.ru_utime,
        "sys": r1.ru_stime - r0.ru_stime,
        "minflt": float(r1.ru_minflt - r0.ru_minflt),
    }


def timeit(fn: Callable[[], Any], repeats: int, *, warmup: int = 1) -> tuple[Any, dict[str, Any]]:
    """Run ``fn`` ``warmup`` times (the first one's time is kept as ``first``), then ``repeats`` times timed.

    Records wall time (``time.perf_counter``) and, from ``resource.getrusage``,
    user and system CPU time and minor page faults: CPU time is less disturbed
    by other processes taking the cores, and system time shows what page
    faults on fresh large allocations cost (expensive on this VM).
    """
    first = None
    out = None
    for i in range(warmup):
        t = time.perf_counter()
        out = fn()
        if i == 0:
            first = time.perf_counter() - t
    runs = []
    for _ in range(repeats):
        out, r = _timed(fn)
        runs.append(r)
    return out, _stats(runs, first)


def timeit_interleaved(fns: dict[str, Callable[[], Any]], repeats: int) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Like :func:`timeit` for several functions, alternating them in every round.

    Alternating makes a burst of load from other processes hit all of them
    alike, so that their ratio stays meaningful on a shared machine.
    """
    outs: dict[str, Any] = {}
    first: dict[str, float] = {}
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in fns}
    for k, fn in fns.items():  # warm-up round
        t = time.perf_counter()
        outs[k] = fn()
        first[k] = time.perf_counter() - t
    for _ in range(repeats):
        for k, fn in fns.items():
            outs[k], r = _timed(fn)
            runs[k].append(r)
    return outs, {k: _stats(runs[k], first[k]) for k in fns}


def traced_peak_mb(fn: Callable[[], Any]) -> float:
    """Peak of the memory allocated during ``fn()`` (numpy buffers included), in MB."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 1e6


def peak_rss_mb() -> float:
    """Peak RSS, MB: ``VmHWM`` (resettable), else ``ru_maxrss`` (KiB on Linux).

    ``ru_maxrss`` of a child carries the RSS the forked copy of its parent had
    before ``exec``, so it is only a fallback.
    """
    hwm = proc_status_mb("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_now_mb() -> float:
    """Current resident set size, MB (``VmRSS`` of /proc/self/status)."""
    r = proc_status_mb("VmRSS")
    return float("nan") if r is None else r


def memcase_main(spec: dict[str, Any]) -> None:
    """Subprocess entry: build the input, run one case once, print peak RSS figures as JSON."""
    v = make_values(spec["T"], spec["K"], spec["S"], ties=spec["ties"])
    impl, level = spec["impl"], spec["level"]
    if impl == "plain":
        fn = partial(plain_numpy, v, level)
    elif impl == "engine":
        scores = engine.scores_from_array(v, layout="system-last")
        fn = partial(engine_inmem, scores, level)
    elif impl == "dask":
        del v
        lazy = engine.open_scores(spec["store"])
        fn = partial(engine_dask, lazy, level)
    else:
        raise SystemExit(f"unknown impl {impl!r}")
    peak_before = peak_rss_mb()
    was_reset = reset_peak_rss()
    before = rss_now_mb()
    fn()
    after = peak_rss_mb()
    print(
        json.dumps(
            {
                "rss_before_mb": before,
                "rss_peak_mb": after,
                "extra_mb": after - before,
                "peak_before_call_mb": peak_before,
                "peak_reset": was_reset,
            }
        )
    )


def subprocess_rss(spec: dict[str, Any]) -> dict[str, float] | None:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--_memcase", json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        print(f"  memcase {spec} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------
# machine
# ------------------------------------------------------------------------------------------
def engine_import_seconds() -> float | None:
    """Wall time of ``import engine`` in a fresh interpreter (what a CLI call pays before any work)."""
    code = "import time; t = time.perf_counter(); import engine; print(time.perf_counter() - t)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    try:
        return float(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return None


def machine_info() -> dict[str, Any]:
    import zarr

    return _machine_info(zarr=zarr.__version__, engine_import_s=engine_import_seconds())


# ------------------------------------------------------------------------------------------
# benchmark sections
# ------------------------------------------------------------------------------------------
def bench_real(repeats: int, pattern: str) -> dict[str, Any]:
    files = sorted(glob.glob(pattern, root_dir=None if os.path.isabs(pattern) else REPO))
    files = [f if os.path.isabs(f) else str(REPO / f) for f in files]
    rows = []
    for f in files:
        if f.endswith(".meta.json"):
            continue
        t = time.perf_counter()
        scores = engine.open_scores(f)
        load_first = time.perf_counter() - t
        _, load = timeit(partial(engine.open_scores, f), max(1, repeats // 2), warmup=0)
        n_scores = int(np.count_nonzero(~np.isnan(scores.values)))
        row: dict[str, Any] = {
            "file": os.path.basename(f),
            "shape": {d: int(n) for d, n in scores.sizes.items()},
            "n_scores": n_scores,
            "load_first_s": load_first,
            "load": load,
        }
        for level in LEVELS:
            res, tm = timeit(partial(engine_inmem, scores, level), repeats)
            ok = bool(np.array_equal(res, oracle(np.asarray(scores.transpose("task", "instance", "system").values), level)))
            row[level] = {**tm, "equals_oracle": ok}
        rows.append(row)
        print(
            f"  {row['file']}: {n_scores} scores, load {load['best']:.3f}s, "
            f"one {row['one']['best'] * 1e3:.1f} ms, two {row['two']['best'] * 1e3:.1f} ms",
            flush=True,
        )
    tot = {
        "n_files": len(rows),
        "n_scores": sum(r["n_scores"] for r in rows),
        "load_s": sum(r["load"]["best"] for r in rows),
        "load_first_s": sum(r["load_first_s"] for r in rows),
    }
    for level in LEVELS:
        tot[f"{level}_s"] = sum(r[level]["best"] for r in rows)
        tot[f"{level}_first_s"] = sum(r[level]["first"] for r in rows)
    tot["both_levels_s"] = tot["one_s"] + tot["two_s"]
    return {"pattern": _shown_pattern(pattern), "rows": rows, "total": tot}


def _shown_pattern(pattern: str) -> str:
    """The pattern as the results name it: relative to the repository, else only its file-name part (no machine path)."""
    if not os.path.isabs(pattern):
        return pattern
    try:
        return str(Path(pattern).relative_to(REPO))
    except ValueError:
        return Path(pattern).name


def bench_inmem(sizes: list[int], repeats: int, oracle_repeats: int) -> list[dict[str, Any]]:
    rows = []
    for K in sizes:
        for ties in (False, True):
            v = make_values(N_TASKS, K, N_SYSTEMS, ties=ties)
            scores = engine.scores_from_array(v, layout="system-last")
            assert np.shares_memory(scores.values, v), "scores_from_array(system-last) copied the buffer"
            n_tied = judges_with_ties(v)
            for level in LEVELS:
                outs, st = timeit_interleaved(
                    {"engine": partial(engine_inmem, scores, level), "plain": partial(plain_numpy, v, level)}, repeats
                )
                eng, te, pla, tp = outs["engine"], st["engine"], outs["plain"], st["plain"]
                ora, to = timeit(partial(oracle, v, level), oracle_repeats, warmup=0)
                row = {
                    "case": f"{level}-level",
                    "level": level,
                    "K": K,
                    "size": int(v.size),
                    "shape_TKS": list(v.shape),
                    "ties": ties,
                    "engine": te,
                    "plain": tp,
                    "oracle": to,
                    "ratio": te["best"] / tp["best"],
                    "ratio_cpu": te["cpu_best"] / tp["cpu_best"],
                    "ratio_user": te["user_best"] / tp["user_best"],
                    "ratio_median": te["median"] / tp["median"],
                    "engine_equals_oracle": bool(np.array_equal(eng, ora)),
                    "plain_equals_engine": bool(np.array_equal(pla, eng)),
                    "judges_with_ties": n_tied,
                    "judges": int(v.shape[0] * v.shape[1]),
                    "engine_peak_mb": traced_peak_mb(partial(engine_inmem, scores, level)),
                    "plain_peak_mb": traced_peak_mb(partial(plain_numpy, v, level)),
                    "input_mb": v.nbytes / 1e6,
                }
                rows.append(row)
                print(
                    f"  {row['case']} K={K} ties={ties}: engine {te['best']:.3f}s plain {tp['best']:.3f}s "
                    f"ratio {row['ratio']:.2f} oracle-ok {row['engine_equals_oracle']}",
                    flush=True,
                )
            del scores, v
    return rows


def chunkings_for(K: int) -> dict[str, dict[str, int] | None]:
    """Default (about 4M cells a chunk), one task a chunk, and small chunks (a tenth of a task)."""
    return {
        "default": None,
        "one task a chunk": {"task": 1, "instance": K},
        "small": {"task": 1, "instance": max(1, K // 10)},
    }


def bench_dask(
    sizes: list[int], dask_repeats: int, inmem: list[dict[str, Any]], tmp: Path, rss_size: int | None
) -> list[dict[str, Any]]:
    rows = []
    for K in sizes:
        for ties in (False, True):
            v = make_values(N_TASKS, K, N_SYSTEMS, ties=ties)
            scores = engine.scores_from_array(v, layout="system-last")
            ref = {lvl: engine_inmem(scores, lvl) for lvl in LEVELS}
            for name, chunks in chunkings_for(K).items():
                path = tmp / f"k{K}_ties{int(ties)}_{name.replace(' ', '')}.zarr"
                t = time.perf_counter()
                engine.to_zarr(scores, path, chunks=chunks, overwrite=True)
                write_s = time.perf_counter() - t
                lazy = engine.open_scores(path)
                eff = {d: int(max(c)) for d, c in lazy.chunksizes.items() if d != "system"}
                n_chunks = int(np.prod([len(c) for c in lazy.chunks]))
                store_mb = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
                for level in LEVELS:
                    res, td = timeit(partial(engine_dask, lazy, level), dask_repeats)
                    mem_row = next(r for r in inmem if r["K"] == K and r["ties"] == ties and r["level"] == level)
                    row = {
                        "case": f"{level}-level",
                        "level": level,
                        "K": K,
                        "size": int(v.size),
                        "ties": ties,
                        "chunking": name,
                        "chunks": eff,
                        "n_chunks": n_chunks,
                        "store_mb": store_mb,
                        "write_s": write_s,
                        "dask": td,
                        "scores_per_s": v.size / td["best"],
                        "inmem_engine_best": mem_row["engine"]["best"],
                        "equals_inmem": bool(np.array_equal(res, ref[level])),
                    }
                    if rss_size is not None and K == rss_size and level == "one" and not ties:
                        row["rss"] = subprocess_rss(
                            {
                                "impl": "dask",
                                "level": level,
                                "T": N_TASKS,
                                "K": K,
                                "S": N_SYSTEMS,
                                "ties": ties,
                                "store": str(path),
                            }
                        )
                    rows.append(row)
                    print(
                        f"  dask {level} K={K} ties={ties} [{name}, {n_chunks} chunks]: {td['best']:.3f}s equal {row['equals_inmem']}",
                        flush=True,
                    )
            del scores, v
    return rows


def bench_rss(K: int, quick: bool) -> list[dict[str, Any]]:
    rows = []
    for ties in (False,) if quick else (False, True):
        for level in LEVELS[:1] if quick else LEVELS:
            for impl in ("engine", "plain"):
                spec = {"impl": impl, "level": level, "T": N_TASKS, "K": K, "S": N_SYSTEMS, "ties": ties}
                r = subprocess_rss(spec)
                rows.append({**spec, "rss": r})
                if r:
                    print(
                        f"  rss {impl} {level} ties={ties}: peak {r['rss_peak_mb']:.0f} MB (+{r['extra_mb']:.0f})",
                        flush=True,
                    )
    return rows


def stage_breakdown(K: int, ties: bool, level: str, repeats: int) -> dict[str, Any]:
    """Time the steps of the in-memory aggregate pipeline one by one (same calls as engine.labelled.core)."""
    from engine.dims import INSTANCE
    from engine.labelled.core import orient

    v = make_values(N_TASKS, K, N_SYSTEMS, ties=ties)
    scores = engine.scores_from_array(v, layout="system-last")
    pts_np = borda_points(v)
    pts = xr.DataArray(pts_np, dims=("task", "instance", "system")).transpose("system", "task", "instance")
    stages = {
        "validate_scores (isnan/isfinite scans)": lambda: engine.validate_scores(scores),
        "orient (no-op: all higher-is-better)": lambda: orient(scores),
        "missing_report (isnull & any, sum)": lambda: engine.missing_report(scores),
        "borda_points kernel (argsort + scatter)": lambda: borda_points(v),
        "xarray .sum(instance, skipna=True) of float64 points": lambda: pts.sum(INSTANCE, skipna=True),
        "xarray .notnull().sum(instance) (counts)": lambda: pts.notnull().sum(INSTANCE),
        "xarray .sum(instance, skipna=False) (for comparison)": lambda: pts.sum(INSTANCE, skipna=False),
        "np.sum(points, axis=instance) (for comparison)": lambda: pts_np.sum(axis=1),
        f"whole engine.aggregate (level {level})": lambda: engine_inmem(scores, level),
        f"plain numpy reference (level {level})": lambda: plain_numpy(v, level),
        "np.argsort(v) alone": lambda: np.argsort(v, axis=-1),
    }
    out = {}
    for name, fn in stages.items():
        _, tm = timeit(fn, repeats)
        out[name] = {**tm["fastest_run"], "user_best": tm["user_best"]}
    pr = cProfile.Profile()
    pr.enable()
    engine_inmem(scores, level)
    pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(12)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    prof = "\n".join(ln.replace(str(REPO) + "/", "").replace(sys.prefix + "/lib/", "") for ln in lines[start:])
    return {"K": K, "ties": ties, "level": level, "stages_s": out, "cprofile_tottime": prof}


# ------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------
def _s(x: float) -> str:
    return f"{x:.3f}" if x >= 0.01 else f"{x * 1e3:.2f} ms"


def _ties(r: dict[str, Any]) -> str:
    return f"{'yes' if r['ties'] else 'no'} ({100 * r['judges_with_ties'] / r['judges']:.0f}% of judges)"


def _size(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1e3:g}k"


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    L: list[str] = []
    a = L.append
    a("# Borda benchmark: votebench engine vs plain numpy")
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
        f"zarr {m['zarr']}, pandas {m['pandas']}; votebench {m['votebench']}"
    )
    a(f"- {m['platform']}")
    a(
        f"- load average at start {tuple(round(x, 2) for x in m['loadavg_start'])}, at end "
        f"{tuple(round(x, 2) for x in m['loadavg_end'])} (other processes may share the cores; hence best-of-N)"
    )
    imp = m["engine_import_s"]
    a(
        f"- `import engine` in a fresh interpreter: {'?' if imp is None else f'{imp:.2f} s'}; "
        f"total benchmark wall time {res['wall_s']:.0f} s"
    )
    a("")
    a("## Method")
    a("")
    a(
        f"- Synthetic tensors: {N_SYSTEMS} systems x {N_TASKS} tasks x K instances, float32 uniform [0, 1) from "
        "`numpy.random.default_rng` (seeded), stored system-last `(T, K, S)` and wrapped without a copy by "
        '`engine.scores_from_array(values, layout="system-last")`. '
        f'"ties = yes" rounds every score to a multiple of {TIE_STEP} ({int(round(1 / TIE_STEP)) + 1} distinct '
        "values for 100 systems), so every judge has ties."
    )
    a(
        f"- Timings: best and median of {res['repeats']} runs after one untimed warm-up run "
        "(`time.perf_counter`); engine and plain runs alternate, so that load from other processes hits both alike; "
        "the ratio is engine best / plain best (wall time), the ratio of medians engine median / plain median; "
        "the ratio of CPU times uses the best user + system "
        "CPU time (`resource.getrusage`) of each, which is less disturbed when other processes take the cores."
    )
    a('- **engine**: `engine.aggregate(scores, rule="borda", level=...)` on the in-memory (numpy) path.')
    a(
        "- **plain numpy**: `argsort(argsort(v, axis=-1), axis=-1)` summed over all judges (one level); two levels: "
        "per-task sums of those ranks, then the double argsort of the sums, summed over tasks. "
        "**The plain reference ignores ties: it breaks them by argsort position, so tied systems get different "
        "points, while the engine gives tied systems the average of their points** (0.5 per tie). On tie-free data "
        "the two agree exactly at one level; at two levels they can differ where per-task sums tie."
    )
    a(
        '- **scipy tie-aware**: `scipy.stats.rankdata(v, method="average", axis=-1) - 1`, summed the same way: the '
        "correctness oracle (the engine must equal it exactly) and a tie-aware comparison point "
        f"({'one run' if res['oracle_repeats'] == 1 else 'best of ' + str(res['oracle_repeats'])}, no warm-up)."
    )
    a(
        "- **peak MB**: tracemalloc peak of the allocations made during one call (the "
        f"input tensor, {_size(res['inmem'][-1]['size'])} float32 = {res['inmem'][-1]['input_mb']:.0f} MB for the "
        "largest size, is not counted)."
    )
    a("")
    a("## In-memory path")
    a("")
    a(
        "| case | size (T x K x S) | ties | engine s (median) | plain numpy s (median) | ratio | ratio of medians "
        "| ratio of CPU times | scipy tie-aware s | engine peak MB | plain peak MB | engine = oracle | plain = engine |"
    )
    a("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in res["inmem"]:
        T, K, S = r["shape_TKS"]
        a(
            f"| {r['case']} | {_size(r['size'])} ({T} x {K} x {S}) | {_ties(r)} "
            f"| {_s(r['engine']['best'])} ({_s(r['engine']['median'])}) "
            f"| {_s(r['plain']['best'])} ({_s(r['plain']['median'])}) "
            f"| **{r['ratio']:.2f}** | {r['ratio_median']:.2f} | {r['ratio_cpu']:.2f} | {_s(r['oracle']['best'])} "
            f"| {r['engine_peak_mb']:.0f} | {r['plain_peak_mb']:.0f} "
            f"| {'yes' if r['engine_equals_oracle'] else '**NO**'} | {'yes' if r['plain_equals_engine'] else 'no'} |"
        )
    a("")
    a(
        "CPU split of the fastest run of each (from `resource.getrusage`): user / system CPU seconds and minor page "
        "faults. System time is mostly page faults on fresh large temporaries, which are expensive and erratic on "
        "this VM; the ratio of user times is the most stable measure of the work itself."
    )
    a("")
    a(
        "| case | size | ties | engine user s | engine sys s | "
        "engine faults | plain user s | plain sys s | plain faults "
        "| ratio of best user times |"
    )
    a("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in res["inmem"]:
        e, p_ = r["engine"]["fastest_run"], r["plain"]["fastest_run"]
        a(
            f"| {r['case']} | {_size(r['size'])} | {'yes' if r['ties'] else 'no'} | {e['user']:.3f} | {e['sys']:.3f} "
            f"| {e['minflt']:.0f} | {p_['user']:.3f} | {p_['sys']:.3f} | {p_['minflt']:.0f} | {r['ratio_user']:.2f} |"
        )
    a("")
    a(
        "The engine's first (warm-up) call, for reference: "
        + "; ".join(
            f"{r['case']} {_size(r['size'])} ties={'yes' if r['ties'] else 'no'}: {_s(r['engine']['first'])}" for r in res["inmem"]
        )
        + "."
    )
    a("")
    if res.get("rss"):
        a(f"## Peak RSS, {_size(res['rss'][0]['T'] * res['rss'][0]['K'] * res['rss'][0]['S'])} case (fresh subprocess per case)")
        a("")
        a(
            "RSS before = current RSS after imports and building the input (input included); the kernel's peak-RSS "
            "mark (`VmHWM`) is reset just before one call (`/proc/self/clear_refs`), peak = `VmHWM` after it; "
            "extra = peak - before, i.e. the memory the call needs on top of its input."
        )
        a("")
        a("| impl | level | ties | RSS before MB | peak RSS MB | extra MB |")
        a("|---|---|---|---:|---:|---:|")
        for r in res["rss"]:
            x = r["rss"]
            if x:
                a(
                    f"| {r['impl']} | {r['level']} | {'yes' if r['ties'] else 'no'} | {x['rss_before_mb']:.0f} "
                    f"| {x['rss_peak_mb']:.0f} | {x['extra_mb']:.0f} |"
                )
        for r in res["dask"]:
            x = r.get("rss")
            if x:
                a(
                    f"| dask [{r['chunking']}] | {r['level']} | "
                    f"{'yes' if r['ties'] else 'no'} | {x['rss_before_mb']:.0f} "
                    f"| {x['rss_peak_mb']:.0f} | {x['extra_mb']:.0f} |"
                )
        a("")
    if res.get("dask"):
        a("## Chunked path (zarr store + dask, threaded scheduler)")
        a("")
        a(
            "The tensor is written with `engine.to_zarr(scores, path, chunks=...)` (float32, zarr v3 default "
            "compression) and reopened lazily with `engine.open_scores(path)`; the time is "
            '`engine.aggregate(lazy, ...).compute(scheduler="threads")`, which includes reading and decompressing '
            'the chunks (from the page cache). "default" is `engine.io.store.default_chunks` (about 4M cells a chunk); '
            "the chunking column gives the chunk shape task x instance (system is never chunked). "
            "Best (median) of 3 runs after a warm-up. "
            f"nproc = {m['nproc']}."
        )
        a("")
        a(
            "| case | size | ties | chunking | chunks | store MB | write s | dask "
            "wall s (median) | scores/s | in-memory engine s | = in-memory |"
        )
        a("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|")
        for r in res["dask"]:
            a(
                f"| {r['case']} | {_size(r['size'])} | {'yes' if r['ties'] else 'no'} | "
                f"{r['chunking']} ({r['chunks']['task']} x {r['chunks']['instance']}) "
                f"| {r['n_chunks']} | {r['store_mb']:.0f} | {r['write_s']:.2f} "
                f"| {_s(r['dask']['best'])} ({_s(r['dask']['median'])}) "
                f"| {r['scores_per_s'] / 1e6:.1f}M | {_s(r['inmem_engine_best'])} "
                f"| {'yes' if r['equals_inmem'] else '**NO**'} |"
            )
        a("")
    real = res["real"]
    a("## Real data: Colombo et al. (2022) instance-level datasets")
    a("")
    a(
        f"Files `{real['pattern']}` ({real['total']['n_files']} datasets). Loading (`engine.open_scores`: CSV parse, "
        'sidecar, validation) is timed apart from compute (`engine.aggregate(..., rule="borda", level=...)`). '
        "Compute figures are best of the repeats after a warm-up; the first call is listed too."
    )
    a("")
    a("| dataset | systems x tasks x instances | scores | load s | one-level s (first) | two-level s (first) | = oracle |")
    a("|---|---|---:|---:|---:|---:|---|")
    for r in real["rows"]:
        sh = r["shape"]
        a(
            f"| {r['file']} | {sh['system']} x {sh['task']} x "
            f"{sh['instance']} | {r['n_scores']:,} | {_s(r['load']['best'])} "
            f"| {_s(r['one']['best'])} ({_s(r['one']['first'])}) | {_s(r['two']['best'])} ({_s(r['two']['first'])}) "
            f"| {'yes' if r['one']['equals_oracle'] and r['two']['equals_oracle'] else '**NO**'} |"
        )
    t = real["total"]
    a(
        f"| **total** | | **{t['n_scores']:,}** | {_s(t['load_s'])} | {_s(t['one_s'])} ({_s(t['one_first_s'])}) "
        f"| {_s(t['two_s'])} ({_s(t['two_first_s'])}) | |"
    )
    a("")
    a(
        "The paper ranks nine instance-level datasets (over 270k scores); only these four "
        f"({t['n_scores']:,} scores) are available here, the other five are not, so the 270k figure cannot be "
        "measured directly."
    )
    a("")
    a("## Targets")
    a("")
    for line in res["verdict"]:
        a(f"- {line}")
    a("")
    if res.get("breakdown"):
        b = res["breakdown"]
        a(f"## Where the engine's time goes ({b['level']}-level, K={b['K']}, ties={'yes' if b['ties'] else 'no'})")
        a("")
        a(
            "Each step of the in-memory pipeline of `engine.labelled.core.aggregate`, timed alone (fastest of the repeats, "
            "with its CPU split; last column: lowest user time of any repeat):"
        )
        a("")
        a("| step | wall s | user s | sys s | minor faults | best user s |")
        a("|---|---:|---:|---:|---:|---:|")
        for k, x in b["stages_s"].items():
            a(f"| {k} | {_s(x['wall'])} | {_s(x['user'])} | {_s(x['sys'])} | {x['minflt']:.0f} | {_s(x['user_best'])} |")
        a("")
        a("cProfile of one `engine.aggregate` call, top functions by own time:")
        a("")
        a("```")
        a(b["cprofile_tottime"])
        a("```")
        a("")
    return "\n".join(L) + "\n"


def verdict(res: dict[str, Any]) -> list[str]:
    out = []
    worst = max(res["inmem"], key=lambda r: r["ratio"])
    worst_cpu = max(res["inmem"], key=lambda r: r["ratio_cpu"])
    ok = worst["ratio"] <= TARGET_RATIO
    ok_cpu = worst_cpu["ratio_cpu"] <= TARGET_RATIO
    worst_user = max(res["inmem"], key=lambda r: r["ratio_user"])
    worst_med = max(res["inmem"], key=lambda r: r["ratio_median"])

    def _case(r: dict[str, Any]) -> str:
        return f"{r['case']}, {_size(r['size'])}, ties={'yes' if r['ties'] else 'no'}"

    out.append(
        f"Within {TARGET_RATIO}x of plain numpy on the in-memory path (wall time): **{'met' if ok else 'NOT met'}** "
        f"(worst ratio {worst['ratio']:.2f}: {_case(worst)}; ratios {min(r['ratio'] for r in res['inmem']):.2f}-"
        f"{worst['ratio']:.2f}). By CPU time: **{'met' if ok_cpu else 'NOT met'}** "
        f"(worst {worst_cpu['ratio_cpu']:.2f}: "
        f"{_case(worst_cpu)}); by user CPU time alone: worst {worst_user['ratio_user']:.2f} ({_case(worst_user)}). "
        f"By median wall time: worst {worst_med['ratio_median']:.2f} ({_case(worst_med)}), mostly system time "
        "(page faults on the engine's large temporaries, see the CPU split). "
        "The engine also averages ties, which the plain reference does not."
    )
    bad = [r for r in res["inmem"] if not r["engine_equals_oracle"]] + [r for r in res["dask"] if not r["equals_inmem"]]
    out.append(
        "Exactness: every engine result equals the tie-aware oracle, and every dask result the in-memory one: "
        f"**{'yes' if not bad else 'NO (' + str(len(bad)) + ' mismatches)'}**."
    )
    t = res["real"]["total"]
    both = t["one_s"] + t["two_s"]
    scale = max(270_000 / max(t["n_scores"], 1), 9 / max(t["n_files"], 1))
    est = both * scale
    out.append(
        f"Real data: {t['n_scores']:,} scores in {t['n_files']} datasets ranked in {t['one_s']:.3f} s (one level) "
        f"+ {t['two_s']:.3f} s (two levels) of compute (first calls {t['one_first_s']:.3f} s + "
        f"{t['two_first_s']:.3f} s); loading took {t['load_s']:.2f} s. Extrapolated to the paper's nine datasets "
        f"and 270k scores (x{scale:.2f}, the larger of the score and dataset ratios, since per-call overhead "
        f"dominates at these sizes): about {est:.2f} s for both levels: "
        f"**{'well under a second' if est < 0.5 else 'under a second' if est < 1 else 'NOT under a second'}**."
    )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small smoke sizes (seconds); not the reference figures")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="Markdown results file (a .json with raw numbers is written beside it)")
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed runs per in-memory case (default 7, quick 3; at least 3); dask cases use 3",
    )
    p.add_argument("--real-glob", default=REAL_GLOB, help="instance-level data files to rank")
    p.add_argument("--no-dask", action="store_true", help="skip the zarr/dask chunked path")
    p.add_argument("--no-rss", action="store_true", help="skip the per-case subprocess peak-RSS measurements")
    p.add_argument("--from-json", metavar="JSON", help="re-render the Markdown from a saved .json (no measuring)")
    p.add_argument("--_memcase", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._memcase:
        memcase_main(json.loads(args._memcase))
        return 0
    out = Path(args.out)
    if args.from_json:
        res = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        res["verdict"] = verdict(res)
        out.write_text(render(res), encoding="utf-8")
        print(f"wrote {out} from {args.from_json}")
        return 0
    repeats = max(3, args.repeats or (3 if args.quick else 7))
    oracle_repeats = 1  # the oracle is for correctness; its time is informational
    sizes = [100, 500] if args.quick else [1_000, 10_000]
    t0 = time.perf_counter()
    res: dict[str, Any] = {
        "command": "python benchmarks/bench_borda.py" + (" --quick" if args.quick else ""),
        "quick": args.quick,
        "repeats": repeats,
        "oracle_repeats": oracle_repeats,
        "sizes_K": sizes,
        "S": N_SYSTEMS,
        "T": N_TASKS,
        "tie_step": TIE_STEP,
        "machine": machine_info(),
    }
    print("real datasets", flush=True)
    res["real"] = bench_real(repeats, args.real_glob)
    print("in-memory", flush=True)
    res["inmem"] = bench_inmem(sizes, repeats, oracle_repeats)
    largest = sizes[-1]
    res["rss"] = []
    if not args.no_rss:
        print("peak RSS (subprocesses)", flush=True)
        res["rss"] = bench_rss(largest, args.quick)
    res["dask"] = []
    if not args.no_dask:
        print("dask", flush=True)
        with tempfile.TemporaryDirectory(prefix="votebench-bench-") as d:
            res["dask"] = bench_dask(
                sizes[-1:] if args.quick else sizes,
                3,
                res["inmem"],
                Path(d),
                None if args.no_rss or args.quick else largest,
            )
    # break down the worst case of the largest size (the headline size; small sizes are overhead-dominated)
    target = max((r for r in res["inmem"] if r["K"] == largest), key=lambda r: r["ratio"])
    print(f"stage breakdown ({target['case']} K={target['K']} ties={target['ties']})", flush=True)
    res["breakdown"] = stage_breakdown(target["K"], target["ties"], target["level"], max(3, repeats // 2 + 1))
    res["verdict"] = verdict(res)
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["wall_s"] = time.perf_counter() - t0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(res), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    print("\n".join(res["verdict"]))
    print(f"wrote {out} and {out.with_suffix('.json')} ({res['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
