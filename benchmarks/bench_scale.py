#!/usr/bin/env python
"""Out-of-core scale benchmark (issue #5): 1e9 float32 scores from a chunked zarr store on a 2-worker local cluster.

What is measured (see ``benchmarks/README.md`` for how to run it):

1. **Data**: a synthetic 1000 systems x 100 tasks x 10,000 instances float32
   tensor (1e9 scores, 4 GB) generated chunk by chunk with dask (system ``s``
   has quality ``s / S``, plus a per-(system, task) effect of sd 0.3 and a
   per-score standard normal noise; every chunk from its own
   ``engine.kernels.resample.replicate_generator(seed, ., stream="synthetic", key=(task, first instance))``)
   and written with ``engine.to_zarr`` (default chunks: one task x 4194
   instances x all systems, 16.8 MB).
2. **Engine on a cluster**: ``distributed.LocalCluster`` with ``--workers``
   worker processes of one thread each (the scheduler lives in this client
   process); ``engine.open_scores(store)`` (lazy), then
   ``engine.aggregate(scores, rule="borda", level="one")``, the same with
   ``level="two"``, and ``engine.bootstrap(..., rule="borda", level="two",
   over="instances", replicates=200)``, each computed on the cluster (the
   workers read the store's chunks themselves).  Wall time, throughput
   (scores of the tensor / wall time) and memory: every process's peak RSS
   (``VmHWM`` reset before each case, read after it) and the peak of the
   summed RSS of all processes sampled every 0.1 s with psutil.
3. **Plain numpy in memory** (a subprocess, so that its 4 GB do not count
   for the cluster): the whole tensor read into one numpy array, then one pass
   of Borda points per judge (double ``argsort`` per task, ties broken by
   position) summed per task, giving one- and two-level Borda; and the
   instance bootstrap as a per-task product of the engine's own instance
   resample counts ``(B, K)`` with the judge points ``(K, S)``, then Borda
   across tasks per replicate.  The same numbers as the engine when no judge
   has ties (checked: max abs difference).
4. **Sweep scaling**: the same sweep (an instance bootstrap of two-level
   Borda, 8 blocks of 25 replicates, on a 200 x 50 x 2,000 store) run with
   ``engine.sweep.run_sweep`` on a local cluster of 1 and of 2 workers.

Usage::

    python benchmarks/bench_scale.py                     # full size (about 15-30 min on the shared 2-core machine)
    python benchmarks/bench_scale.py --quick             # smoke run, 200 x 20 x 2,000 (a minute or two)
    python benchmarks/bench_scale.py --from-json benchmarks/results/scale.json   # re-render the report

Writes ``benchmarks/results/scale.md`` (``--out``) and ``scale.json`` beside it.  The data go to
``--data-dir`` (default a folder under the system temp dir, removed at the end unless ``--keep-data``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from _machine import machine_info, proc_status_mb, reset_peak_rss  # the script's own folder is on sys.path

import engine  # installed (pip install -e .): no sys.path edits

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "scale.md"
GIB = 2.0**30


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
def _chunk(block_info: Any = None, *, seed: int, n_systems: int) -> np.ndarray:
    """One (task, instance) chunk of the synthetic tensor, laid out (task, instance, system)."""
    from engine.kernels.resample import replicate_generator

    (t0, t1), (k0, k1), _ = block_info[None]["array-location"]
    quality = np.arange(n_systems, dtype=np.float32) / np.float32(n_systems)
    out = np.empty((t1 - t0, k1 - k0, n_systems), dtype=np.float32)
    for t in range(t0, t1):
        effect = 0.3 * replicate_generator(seed, 1, stream="synthetic", key=(t,)).standard_normal(n_systems, dtype=np.float32)
        out[t - t0] = replicate_generator(seed, 0, stream="synthetic", key=(t, k0)).standard_normal((k1 - k0, n_systems),
                                                                                                   dtype=np.float32)
        out[t - t0] += quality + effect
    return out


def synthetic_scores(n_systems: int, n_tasks: int, n_instances: int, *, seed: int) -> Any:
    """The lazy synthetic score tensor (dask), chunked like ``engine.to_zarr`` stores it by default."""
    import dask.array as da
    import xarray as xr

    from engine.io.store import default_chunks

    coords = {"system": np.array([f"sys{i:04d}" for i in range(n_systems)], dtype=object),
              "task": np.array([f"task{t:03d}" for t in range(n_tasks)], dtype=object),
              "instance": np.arange(n_instances)}
    probe = xr.DataArray(da.zeros((n_systems, n_tasks, n_instances), chunks=-1), dims=("system", "task", "instance"))
    ch = default_chunks(probe)
    tc, kc = ch["task"], ch["instance"]
    chunks = (tuple(min(tc, n_tasks - i) for i in range(0, n_tasks, tc)),
              tuple(min(kc, n_instances - i) for i in range(0, n_instances, kc)), (n_systems,))
    arr = da.map_blocks(_chunk, chunks=chunks, dtype=np.float32, meta=np.empty((0, 0, 0), dtype=np.float32), seed=seed,
                        n_systems=n_systems)
    scores = xr.DataArray(arr, dims=("task", "instance", "system"), coords=coords, name="scores").transpose(
        "system", "task", "instance")
    return scores.assign_coords(higher_is_better=("task", np.ones(n_tasks, dtype=bool)), group=("task", coords["task"]),
                                n_instances=("task", np.full(n_tasks, n_instances, dtype=np.int64)))


def generate(path: Path, n_systems: int, n_tasks: int, n_instances: int, *, seed: int) -> dict[str, Any]:
    """Write the synthetic tensor to a zarr store (threaded dask, chunk by chunk)."""
    import dask

    t0 = time.perf_counter()
    scores = synthetic_scores(n_systems, n_tasks, n_instances, seed=seed)
    with dask.config.set(scheduler="threads"):
        engine.to_zarr(scores, path, overwrite=True)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return {"seconds": time.perf_counter() - t0, "store_bytes": size, "shape": [n_systems, n_tasks, n_instances],
            "chunks": {d: list(map(int, c))[:2] for d, c in engine.open_scores(path).chunksizes.items()}}


# --------------------------------------------------------------------------------------------
# memory sampling
# --------------------------------------------------------------------------------------------
class RssSampler:
    """Samples the RSS of a set of processes every ``interval`` s: per-process peaks and the peak of their sum."""

    def __init__(self, pids: dict[str, int], interval: float = 0.1) -> None:
        import psutil

        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.reset()

    def reset(self) -> None:
        self.peak = {name: 0 for name in self.procs}
        self.peak_total = 0
        self.samples = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for name, p in self.procs.items():
                try:
                    rss = p.memory_info().rss
                except Exception:  # noqa: BLE001 - a process that ended
                    rss = 0
                self.peak[name] = max(self.peak[name], rss)
                total += rss
            self.peak_total = max(self.peak_total, total)
            self.samples += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def _vm_hwm_mb() -> float | None:
    return proc_status_mb("VmHWM")


def _cpu_seconds(pids: list[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except Exception:  # noqa: BLE001
            pass
    return total


# --------------------------------------------------------------------------------------------
# engine on a local cluster
# --------------------------------------------------------------------------------------------
def _cluster(n_workers: int) -> tuple[Any, Any]:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                           memory_limit=f"{args_memory_limit}")
    return cluster, Client(cluster)


args_memory_limit = "3GiB"  # per worker; set from --worker-memory


def _measure(name: str, fn: Any, client: Any, sampler: RssSampler, pids: dict[str, int],
             n_scores: int) -> tuple[dict[str, Any], Any]:
    client.run(reset_peak_rss)
    reset_peak_rss()
    sampler.reset()
    cpu0 = _cpu_seconds(list(pids.values()))
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds(list(pids.values())) - cpu0
    hwm = client.run(_vm_hwm_mb)
    per_process = {"client+scheduler": _vm_hwm_mb()}
    for i, (_, mb) in enumerate(sorted(hwm.items())):
        per_process[f"worker {i + 1}"] = mb
    row = {"case": name, "wall_s": wall, "cpu_s": cpu, "scores_per_s": n_scores / wall,
           "peak_rss_mb": per_process, "peak_rss_sum_mb": sum(v or 0 for v in per_process.values()),
           "sampled_peak_total_mb": sampler.peak_total / 2**20,
           "sampled_peak_mb": {k: v / 2**20 for k, v in sampler.peak.items()}, "samples": sampler.samples,
           "loadavg_before": load0, "loadavg_after": os.getloadavg()}
    print(f"  {name}: {wall:.1f} s, {n_scores / wall / 1e6:.1f} M scores/s, peak RSS sum {row['peak_rss_sum_mb']:.0f} MB "
          f"(sampled total {row['sampled_peak_total_mb']:.0f} MB)", flush=True)
    return row, result


def engine_runs(path: Path, *, workers: int, replicates: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    cluster, client = _cluster(workers)
    try:
        client.wait_for_workers(workers)
        wpids = client.run(os.getpid)
        pids = {"client+scheduler": os.getpid(), **{f"worker {i + 1}": p for i, (_, p) in enumerate(sorted(wpids.items()))}}
        scores = engine.open_scores(path)
        n = int(np.prod(scores.shape))
        rows, results = [], {}
        with RssSampler(pids) as sampler:
            for name, fn in [
                ("one-level Borda", lambda: engine.aggregate(scores, rule="borda", level="one").compute(scheduler=client)),
                ("two-level Borda", lambda: engine.aggregate(scores, rule="borda", level="two").compute(scheduler=client)),
                (f"{replicates} instance bootstraps of two-level Borda",
                 lambda: engine.bootstrap(scores, rule="borda", level="two", over="instances", replicates=replicates, seed=seed)
                 ["replicate_score"].compute(scheduler=client)),
            ]:
                row, res = _measure(name, fn, client, sampler, pids, n)
                rows.append(row)
                results[name] = np.asarray(res.values)
        return rows, results
    finally:
        client.close()
        cluster.close()


# --------------------------------------------------------------------------------------------
# plain numpy (child process)
# --------------------------------------------------------------------------------------------
def _borda_points(x: np.ndarray) -> np.ndarray:
    """Points of every system within each row (0 = worst), ties broken by position."""
    return np.argsort(np.argsort(x, axis=-1), axis=-1)


def numpy_child(path: str, replicates: int, seed: int, out: str) -> None:
    import zarr

    from engine.kernels.resample import instance_counts

    reset_peak_rss()
    t0 = time.perf_counter()
    X = zarr.open_group(path, mode="r")["scores"][...]  # (T, K, S) float32, system last
    load_s = time.perf_counter() - t0
    T, K, S = X.shape
    res: dict[str, Any] = {"load_s": load_s, "data_mb": X.nbytes / 2**20}
    # one pass: per-task sums of the judges' Borda points
    t0 = time.perf_counter()
    P = np.empty((T, S))
    for t in range(T):
        P[t] = _borda_points(X[t]).sum(axis=0)
    one = P.sum(axis=0)
    res["one_level_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    two = _borda_points(P).sum(axis=0).astype(np.float64)
    res["two_level_s"] = res["one_level_s"] + time.perf_counter() - t0
    # instance bootstrap: per task, resample counts (B, K) x judge points (K, S), then Borda across tasks
    t0 = time.perf_counter()
    sums = np.empty((replicates, T, S))
    present = np.ones((1, K), dtype=bool)
    for t in range(T):
        J = _borda_points(X[t]).astype(np.float64)
        C = instance_counts(present, seed=seed, replicates=replicates, tasks=[t])[:, 0, :]
        sums[:, t, :] = C @ J
    boot = _borda_points(sums).sum(axis=1).astype(np.float64)
    res["bootstrap_s"] = time.perf_counter() - t0
    res["peak_rss_mb"] = proc_status_mb("VmHWM")
    res["ties_in_judges"] = int(sum((np.diff(np.sort(X[t], axis=-1), axis=-1) == 0).any(axis=-1).sum() for t in range(T)))
    np.savez(out, one=one, two=two, boot=boot)
    print(json.dumps(res))


def numpy_runs(path: Path, *, replicates: int, seed: int, tmp: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    out = tmp / "numpy_results.npz"
    run = subprocess.run([sys.executable, __file__, "--_numpy-child", str(path), "--replicates", str(replicates),
                          "--seed", str(seed), "--_out", str(out)], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr)
    res = json.loads(run.stdout.strip().splitlines()[-1])
    with np.load(out) as z:
        arrays = {k: z[k] for k in z.files}
    return res, arrays


# --------------------------------------------------------------------------------------------
# sweep scaling
# --------------------------------------------------------------------------------------------
def sweep_scaling(tmp: Path, *, shape: tuple[int, int, int], replicates: int, block: int, seed: int) -> list[dict[str, Any]]:
    from distributed import Client, LocalCluster

    from engine.sweep import open_results, parse_config, run_sweep

    data = tmp / "sweep_input.zarr"
    generate(data, *shape, seed=seed)
    rows, first = [], None
    for n in (1, 2):
        store = tmp / f"sweep_{n}.zarr"
        cfg = parse_config({"seed": seed, "store": str(store), "input": {"path": str(data)}, "rules": ["borda"],
                            "perturbations": [{"kind": "bootstrap", "over": "instances", "replicates": replicates,
                                               "block": block}]})
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.wait_for_workers(n)
            load0 = os.getloadavg()
            t0 = time.perf_counter()
            run_sweep(cfg, client=client, progress=False, overwrite=True)
            wall = time.perf_counter() - t0
        values = open_results(store, f"{data.name.split('.')[0]}/bootstrap-instances")["replicate_score"].values
        same = None if first is None else bool(np.array_equal(values, first, equal_nan=True))
        first = values if first is None else first
        rows.append({"workers": n, "wall_s": wall, "loadavg_before": load0, "identical_to_1_worker": same})
        print(f"  sweep with {n} worker(s): {wall:.1f} s", flush=True)
    return rows


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------
def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    S, T, K = res["data"]["shape"]
    n = S * T * K
    lines = [
        "# Scale benchmark: 1e9 scores from a chunked zarr store on a local dask cluster",
        "",
        f"Generated by `python benchmarks/bench_scale.py{' --quick' if res['quick'] else ''}` on {m['date_utc']}.",
        "",
        "## Machine",
        "",
        f"- CPU: {m['cpu_model']}; nproc {m['nproc']} (cpu_count {m['cpu_count']}); memory {m['memory_gib']} GiB",
        f"- Python {m['python']}, numpy {m['numpy']}, xarray {m['xarray']}, dask {m['dask']}, distributed {m.get('distributed')}, "
        f"zarr {m.get('zarr')}; votebench {m['votebench']}",
        f"- load average at start {tuple(round(v, 2) for v in m['loadavg_start'])}, at end "
        f"{tuple(round(v, 2) for v in res['loadavg_end'])}: the machine is shared with other sessions, so wall times "
        f"include their load; total benchmark wall time {res['total_s']:.0f} s",
        "",
        "## Data",
        "",
        f"- {S} systems x {T} tasks x {K:,} instances float32 = {n:.3g} scores ({n * 4 / 1e9:.1f} GB in memory); "
        f"zarr store {res['data']['store_bytes'] / 1e9:.2f} GB on disk (zstd), chunks {res['data']['chunks']}; "
        f"generated and written in {res['data']['seconds']:.0f} s",
        "",
        f"## Engine on a local cluster: {res['workers']} worker processes x 1 thread (scheduler in the client process)",
        "",
        "| case | wall s | scores/s | CPU s (all processes) | peak RSS per process MB | sum of peaks MB | "
        "sampled peak of the total MB | numpy s | engine / numpy |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    npy = res.get("numpy") or {}
    npy_t = {"one-level Borda": npy.get("one_level_s"), "two-level Borda": npy.get("two_level_s")}
    for r in res["engine"]:
        ref = npy_t.get(r["case"], npy.get("bootstrap_s") if "bootstrap" in r["case"] else None)
        per = ", ".join(f"{k} {v:.0f}" for k, v in r["peak_rss_mb"].items() if v is not None)
        ratio = f"**{r['wall_s'] / ref:.2f}**" if ref else "n/a"
        lines.append(f"| {r['case']} | {r['wall_s']:.1f} | {r['scores_per_s'] / 1e6:.1f}M | {r['cpu_s']:.0f} | {per} | "
                     f"{r['peak_rss_sum_mb']:.0f} | {r['sampled_peak_total_mb']:.0f} | {ref:.1f} | {ratio} |"
                     if ref else f"| {r['case']} | {r['wall_s']:.1f} | {r['scores_per_s'] / 1e6:.1f}M | {r['cpu_s']:.0f} | "
                     f"{per} | {r['peak_rss_sum_mb']:.0f} | {r['sampled_peak_total_mb']:.0f} | n/a | n/a |")
    lines += [
        "",
        "- Peak RSS per process: the kernel's `VmHWM`, reset just before the case; *sum of peaks* bounds the total from "
        "above (the processes need not peak together); *sampled peak of the total*: the largest sum of the processes' RSS "
        "seen by a psutil thread every 0.1 s.",
        "- The load average before/after each case is in the JSON (`loadavg_before`, `loadavg_after`).",
    ]
    if npy:
        cpu = {r["case"]: r["cpu_s"] for r in res["engine"]}
        ref = [npy["one_level_s"], npy["two_level_s"], npy["bootstrap_s"]]
        lines.append("- CPU time: the engine cases spend " + ", ".join(
            f"{c / (b + npy['load_s']):.1f}x" for c, b in zip(cpu.values(), ref))
            + " the numpy pass plus its read of the store (numpy's wall times taken as its CPU time; its BLAS products "
            "may use both cores, so the bootstrap ratio is an upper bound); the two workers turn that into the wall times "
            "above.  The engine reads and decompresses every chunk inside the timed case, averages ties and checks "
            "missing scores.")
    if npy:
        lines += [
            "",
            "## Plain numpy, one process, the whole tensor in memory",
            "",
            f"- read the store into one array: {npy['load_s']:.0f} s; data {npy['data_mb']:.0f} MB; peak RSS "
            f"{npy['peak_rss_mb']:.0f} MB",
            f"- one pass of judge Borda points (double argsort per task, ties broken by position): {npy['one_level_s']:.1f} s "
            f"(one-level), + across-task step {npy['two_level_s'] - npy['one_level_s']:.2f} s (two-level)",
            f"- {res['replicates']} instance bootstraps (per task: resample counts (B, K) @ judge points (K, S), then Borda "
            f"across tasks): {npy['bootstrap_s']:.1f} s",
            f"- judges with a tie: {npy['ties_in_judges']} of {T * K:,}; engine vs numpy max abs difference: "
            + ", ".join(f"{k} {v:.3g}" for k, v in res["agreement"].items()),
        ]
    if res.get("sweep"):
        sw = res["sweep"]
        lines += ["", "## Sweep scaling, 1 -> 2 workers", "",
                  f"Sweep: instance bootstrap of two-level Borda, {sw['replicates']} replicates in blocks of {sw['block']}, "
                  f"input {sw['shape'][0]} x {sw['shape'][1]} x {sw['shape'][2]:,} float32 (zarr, loaded once per worker).", "",
                  "| workers | wall s | speed-up | identical to 1 worker | load before |", "|---:|---:|---:|---|---|"]
        base = sw["rows"][0]["wall_s"]
        for r in sw["rows"]:
            lines.append(f"| {r['workers']} | {r['wall_s']:.1f} | {base / r['wall_s']:.2f} | "
                         f"{'-' if r['identical_to_1_worker'] is None else ('yes' if r['identical_to_1_worker'] else 'NO')} | "
                         f"{tuple(round(v, 2) for v in r['loadavg_before'])} |")
    if res.get("other_runs"):
        lines += ["", "## Other full runs (same script and data, other load on the shared machine)", "",
                  "| date | load average during the engine cases | one-level s (x numpy) | two-level s (x numpy) | "
                  "bootstrap s (x numpy) | peak total MB | sweep 1 -> 2 workers s |", "|---|---|---:|---:|---:|---:|---|"]
        for o in res["other_runs"]:
            lines.append(f"| {o['date_utc']} | {o['load']} | {o['one']:.1f} ({o['one_ratio']:.2f}) | {o['two']:.1f} "
                         f"({o['two_ratio']:.2f}) | {o['boot']:.1f} ({o['boot_ratio']:.2f}) | {o['peak_total_mb']:.0f} | "
                         f"{o.get('sweep', 'n/a')} |")
        lines += ["", "Under a load average of 5 on the 2 cores (other sessions' processes) the engine's workers got about a "
                  "third of a core each: the wall times tripled while the numpy pass, run a few minutes later at lower load, "
                  "did not; the CPU time of the engine cases stays about the same across runs."]
    lines += ["", "## Targets", ""] + [f"- {t}" for t in res["targets"]]
    return "\n".join(lines) + "\n"


def targets(res: dict[str, Any]) -> list[str]:
    out = ["finishes: **met**"]
    worst = max(r["sampled_peak_total_mb"] for r in res["engine"])
    worst_sum = max(r["peak_rss_sum_mb"] for r in res["engine"])
    ok = worst < 4096
    out.append(f"peak memory < 4 GiB in total across processes: sampled peak of the total {worst:.0f} MB, sum of per-process "
               f"peaks {worst_sum:.0f} MB: **{'met' if ok else 'NOT met'}**"
               + ("" if worst_sum < 4096 else " (by the sampled total; the sum of peaks is an upper bound)"))
    npy = res.get("numpy")
    if npy:
        ref = {"one-level Borda": npy["one_level_s"], "two-level Borda": npy["two_level_s"]}
        for r in res["engine"]:
            base = ref.get(r["case"], npy["bootstrap_s"])
            ratio = r["wall_s"] / base
            out.append(f"{r['case']}: engine {r['wall_s']:.1f} s vs numpy {base:.1f} s = {ratio:.2f}x: "
                       f"**{'met' if ratio <= 3 else 'NOT met'}** (within 3x)")
    return out


def main(argv: list[str] | None = None) -> int:
    global args_memory_limit
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small smoke sizes; not the reference figures")
    p.add_argument("--systems", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=100)
    p.add_argument("--instances", type=int, default=10_000)
    p.add_argument("--replicates", type=int, default=200)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-memory", default="3GiB", help="memory limit of each worker (default 3GiB)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None, help="where to write the stores (default: a temporary folder)")
    p.add_argument("--keep-data", action="store_true", help="keep the generated stores (and reuse an existing one)")
    p.add_argument("--no-numpy", action="store_true", help="skip the in-memory numpy comparison")
    p.add_argument("--no-sweep", action="store_true", help="skip the 1 vs 2 worker sweep")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="Markdown results file (a .json is written beside it)")
    p.add_argument("--from-json", metavar="JSON", help="re-render the Markdown from a saved .json (no measuring)")
    p.add_argument("--_numpy-child", dest="numpy_child", help=argparse.SUPPRESS)
    p.add_argument("--_out", dest="child_out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.numpy_child:
        numpy_child(a.numpy_child, a.replicates, a.seed, a.child_out)
        return 0
    out = Path(a.out)
    if a.from_json:
        res = json.loads(Path(a.from_json).read_text())
        out.write_text(render(res), encoding="utf-8")
        return 0
    if a.quick:
        a.systems, a.tasks, a.instances, a.replicates = 200, 20, 2000, 20
    args_memory_limit = a.worker_memory
    import distributed
    import zarr

    start = time.perf_counter()
    res: dict[str, Any] = {"quick": a.quick, "workers": a.workers, "replicates": a.replicates, "seed": a.seed,
                           "machine": machine_info(distributed=distributed.__version__, zarr=zarr.__version__,
                                                   worker_memory_limit=a.worker_memory)}
    tmp = Path(a.data_dir) if a.data_dir else Path(tempfile.mkdtemp(prefix="votebench_scale_"))
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "scale.zarr"
    try:
        if a.keep_data and path.exists() and engine.open_scores(path).shape == (a.systems, a.tasks, a.instances):
            print(f"reusing {path}", flush=True)
            res["data"] = json.loads((tmp / "scale.json").read_text())
        else:
            print(f"generating {a.systems} x {a.tasks} x {a.instances} into {path} ...", flush=True)
            res["data"] = generate(path, a.systems, a.tasks, a.instances, seed=a.seed)
            (tmp / "scale.json").write_text(json.dumps(res["data"]))
        print(f"  {res['data']['seconds']:.0f} s, {res['data']['store_bytes'] / 1e9:.2f} GB", flush=True)
        print(f"engine on a local cluster of {a.workers} workers ...", flush=True)
        res["engine"], eng = engine_runs(path, workers=a.workers, replicates=a.replicates, seed=a.seed)
        if not a.no_numpy:
            print("plain numpy in memory (subprocess) ...", flush=True)
            res["numpy"], npy = numpy_runs(path, replicates=a.replicates, seed=a.seed, tmp=tmp)
            keys = list(eng)
            res["agreement"] = {"one-level": float(np.abs(eng[keys[0]] - npy["one"]).max()),
                                "two-level": float(np.abs(eng[keys[1]] - npy["two"]).max()),
                                "bootstrap": float(np.nanmax(np.abs(eng[keys[2]] - npy["boot"])))}
            print(f"  {res['numpy']}", flush=True)
        if not a.no_sweep:
            print("sweep scaling ...", flush=True)
            shape = (50, 10, 1000) if a.quick else (200, 50, 2000)
            reps, block = (40, 5) if a.quick else (200, 25)
            res["sweep"] = {"shape": list(shape), "replicates": reps, "block": block,
                            "rows": sweep_scaling(tmp, shape=shape, replicates=reps, block=block, seed=a.seed)}
    finally:
        if not a.keep_data:
            shutil.rmtree(tmp, ignore_errors=True)
    res["total_s"] = time.perf_counter() - start
    res["loadavg_end"] = os.getloadavg()
    res["targets"] = targets(res)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    out.write_text(render(res), encoding="utf-8")
    print(render(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
