#!/usr/bin/env python
"""Scaling of votebench's cluster work on 1 and 2 local single-thread workers: a bootstrap and a sweep.

What is measured (issue #30; see ``benchmarks/results/cluster_scale.md`` for the results and the 100-worker plan):

1. **bootstrap**: ``votebench bootstrap --scheduler`` as the command runs it
   (:func:`engine.sweep.bootstrap_input` with a client: one task per block of replicates, each worker reading
   the input by path), on a synthetic long CSV (``--systems`` x ``--tasks`` x ``--instances``), two-level Borda
   resampling instances, ``--replicates`` replicates; the block is what the command chooses from the cluster
   (:func:`engine.distributed.choose_block`) and, for comparison, the old fixed default 50.
2. **sweep**: :func:`engine.sweep.run_sweep` of the same input with a bootstrap over tasks and task subsets
   (Colombo's curves), into a fresh store each run.

Each case runs on a fresh ``LocalCluster`` of N worker processes with one thread each (``N`` in ``--workers``);
the time is the best of ``--repeats`` runs (wall clock, the cluster already started and every worker's cache
warmed by one untimed run). Also recorded: the tasks of the run, the CPU time of this process (the scheduler
and the client live here) per task, and the load average of the machine before each case (the machine is
shared: a load above its core count means the workers competed with other processes, and the speed-up
understates what idle cores would give).

3. **simulation** (``--simulate 16,64``): many single-thread workers on this machine,
   hosted a few to a process (``--per-process``; 64 processes of ~250 MB each would take 16 GB of a shared
   machine), a small memory limit reported to the scheduler, all under ``nice -n 10``, and the scheduler in a
   process of its own (``dask scheduler``), so that its CPU time can be read (psutil).  The bootstrap (block chosen
   by :func:`engine.distributed.choose_block` for the cluster) and the sweep (blocks sized by
   :func:`engine.sweep.sizing.sized_blocks`, the sweep file giving none) each run once after a warm-up that
   imports the engine on every worker; recorded: wall time, tasks, tasks per worker (dask's task stream), the
   scheduler's CPU per task (also net of its idle CPU rate, measured over 5 s without tasks: the workers'
   heartbeats), this process's (the client's) CPU per task, and the load average before and after.

Usage::

    python benchmarks/bench_cluster_scale.py            # about 2-4 minutes on 2 cores
    python benchmarks/bench_cluster_scale.py --quick    # small sizes (well under a minute)
    nice -n 10 python benchmarks/bench_cluster_scale.py --simulate 16,64   # a few minutes on 2 cores
    nice -n 10 python benchmarks/bench_cluster_scale.py --convert-rows 1000000   # convert here and on 2 workers

4. **convert** (``--convert-rows N``): a shuffled long CSV of about N rows converted in this process
   (:func:`engine.io.convert.convert`) and on a LocalCluster of 2 single-thread worker processes
   (:func:`engine.distributed.convert.convert_on_cluster`, parts chosen for the cluster), wall time of each and
   whether the two stores are the same files, byte for byte.

Writes ``benchmarks/results/cluster_scale.json`` (``--out``); the Markdown report beside it is written by hand
from it (it also holds the plan for 100 workers).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def write_input(folder: Path, systems: int, tasks: int, instances: int) -> Path:
    """A long CSV of normal scores (system s better by 0.05 s) and its sidecar."""
    path = folder / "scores.csv"
    rng = np.random.default_rng(30)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "task", "instance", "score"])
        for s in range(systems):
            x = rng.normal(0.05 * s, 1.0, size=(tasks, instances))
            for t in range(tasks):
                for i in range(instances):
                    w.writerow([f"s{s}", f"t{t}", i, f"{x[t, i]:.5f}"])
    (folder / "scores.meta.json").write_text(json.dumps({"higher_is_better": {f"t{t}": True for t in range(tasks)}}))
    return path


def tasks_seen(cluster: Any) -> int:
    """Tasks finished on the cluster so far (every task prefix; ``state_counts`` counts transitions into a state)."""
    return sum(int(p.state_counts.get("memory", 0)) for p in cluster.scheduler.task_prefixes.values())


def timed(cluster: Any, work: Any, repeats: int) -> dict[str, Any]:
    """Best wall time of ``repeats`` runs of ``work()`` (after one untimed warm-up), its tasks and CPU here per task."""
    work()
    best: dict[str, Any] | None = None
    for _ in range(repeats):
        load = os.getloadavg()[0]
        n0, c0, t0 = tasks_seen(cluster), time.process_time(), time.perf_counter()
        work()
        wall, cpu, n = time.perf_counter() - t0, time.process_time() - c0, tasks_seen(cluster) - n0
        run = {"seconds": round(wall, 3), "tasks": n, "cpu_here_ms_per_task": round(1e3 * cpu / max(1, n), 2),
               "load_before": round(load, 2)}
        if best is None or run["seconds"] < best["seconds"]:
            best = run
    assert best is not None
    return best


def bootstrap_case(client: Any, path: Path, replicates: int, block: int) -> None:
    from engine.sweep import bootstrap_input

    bootstrap_input(str(path), over="instances", replicates=replicates, seed=0, block=block, client=client,
                    rule="borda", level="two")


def sweep_case(client: Any, path: Path, store: Path, replicates: int, block: int) -> None:
    from engine.sweep import parse_config, run_sweep

    raw = {"input": {"path": str(path), "name": "bench"}, "rules": [{"name": "borda"}, {"name": "copeland"}],
           "seed": 0, "store": str(store),
           "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": replicates, "block": block},
                             {"kind": "subsets", "sizes": [2, 4, 8], "repeats": replicates, "block": block}]}
    run_sweep(parse_config(raw, where="bench"), client=client, progress=False, overwrite=True)


#: a process hosting several single-thread workers (each its own event loop task, one thread for tasks)
_HOST = """
import asyncio, sys
from distributed import Worker

async def main(address, n, memory, prefix):
    workers = [await Worker(address, nthreads=1, memory_limit=memory, name=f"{prefix}-{i}") for i in range(n)]
    await asyncio.gather(*(w.finished() for w in workers))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]))
"""


class Processes:
    """A ``dask scheduler`` process and ``workers`` single-thread workers hosted ``per_process`` to a process (all
    under ``nice -n 10``), stopped (by their ids) on exit.

    The workers' memory limit is what the scheduler reports (it sizes the blocks); dask's memory management is off,
    since workers sharing a process would each see the process's memory as theirs and pause.
    """

    def __init__(self, folder: Path, workers: int, memory: str, per_process: int, logs: Path | None = None) -> None:
        self.folder, self.workers, self.memory, self.per_process, self.logs = folder, workers, memory, per_process, logs
        self.procs: list[Any] = []
        self.files: list[Any] = []

    def _output(self, name: str) -> dict[str, Any]:
        import subprocess

        if self.logs is None:
            return {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        self.logs.mkdir(parents=True, exist_ok=True)
        fh = open(self.logs / f"{name}.log", "w")  # noqa: SIM115 - closed on exit
        self.files.append(fh)
        return {"stdout": fh, "stderr": subprocess.STDOUT}

    def __enter__(self) -> Processes:
        import subprocess

        file = self.folder / f"scheduler-{self.workers}.json"
        env = {**os.environ, **{f"DASK_DISTRIBUTED__WORKER__MEMORY__{k}": "False"
                                for k in ("TARGET", "SPILL", "PAUSE", "TERMINATE")}}
        self.scheduler = subprocess.Popen(["nice", "-n", "10", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                           "--no-dashboard", "--scheduler-file", str(file)], env=env,
                                          **self._output(f"scheduler-{self.workers}"))
        self.procs.append(self.scheduler)
        for _ in range(600):
            if file.exists() and file.stat().st_size:
                break
            time.sleep(0.1)
        self.address = json.loads(file.read_text())["address"]
        left, i = self.workers, 0
        while left > 0:
            n = min(self.per_process, left)
            self.procs.append(subprocess.Popen(["nice", "-n", "10", sys.executable, "-c", _HOST, self.address, str(n),
                                                self.memory, f"p{i}"], env=env,
                                               **self._output(f"workers-{self.workers}-p{i}")))
            left, i = left - n, i + 1
        return self

    def __exit__(self, *exc: Any) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except Exception:  # noqa: BLE001 - a stuck process is killed
                proc.kill()
        for fh in self.files:
            fh.close()


def _warm(dask_worker: Any = None) -> int:
    """Import what the engine's tasks import (run on every worker before timing)."""
    import engine.distributed
    import engine.labelled.bootstrap
    import engine.sweep  # noqa: F401

    return os.getpid()


def simulate(n: int, path: Path, folder: Path, replicates: int, memory: str, per_process: int,
             logs: Path | None = None) -> list[dict[str, Any]]:
    """The bootstrap and the sweep once each on ``n`` single-thread worker processes (see the module's 3.)."""
    import psutil
    from distributed import Client, get_task_stream

    from engine.distributed.cluster import choose_block, cluster_shape
    from engine.sweep import parse_config, run_sweep
    from engine.sweep.sizing import sized_blocks

    rows = []
    t_start = time.perf_counter()
    with Processes(folder, n, memory, per_process, logs) as procs, Client(procs.address, set_as_default=False) as client:
        client.wait_for_workers(n, timeout=900)
        started = time.perf_counter() - t_start
        client.run(_warm)
        sched = psutil.Process(procs.scheduler.pid)
        shape = cluster_shape(client)
        block = choose_block(replicates, shape.threads, shape.memory_per_thread, float(path.stat().st_size))
        raw = {"input": {"path": str(path), "name": "bench"}, "rules": [{"name": "borda"}, {"name": "copeland"}],
               "seed": 0, "store": str(folder / f"sweep-{n}.zarr"),
               "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": replicates},
                                 {"kind": "subsets", "sizes": [2, 4, 8], "repeats": replicates}]}
        cfg, notes = sized_blocks(parse_config(raw, where="bench"), shape)
        cases = [("bootstrap", f"{block} (chosen)", lambda: bootstrap_case(client, path, replicates, block)),
                 ("bootstrap", "50 (old default)", lambda: bootstrap_case(client, path, replicates, 50)),
                 ("sweep", ", ".join(str(p["block"]) for p in cfg.perturbations),
                  lambda: run_sweep(cfg, client=client, progress=False, overwrite=True))]
        bootstrap_case(client, path, replicates, block)  # warm-up: every worker has read the input once
        i0, w0 = sched.cpu_times(), time.perf_counter()
        time.sleep(5.0)  # the scheduler's CPU with no task: heartbeats of the workers, its own periodic callbacks
        i1 = sched.cpu_times()
        idle_rate = ((i1.user + i1.system) - (i0.user + i0.system)) / (time.perf_counter() - w0)
        for name, blocks, work in cases:
            load = os.getloadavg()[0]
            s0, c0, t0 = sched.cpu_times(), time.process_time(), time.perf_counter()
            with get_task_stream(client) as ts:
                work()
            wall = time.perf_counter() - t0
            s1, cpu_here = sched.cpu_times(), time.process_time() - c0
            per_worker: dict[str, int] = {}
            for task in ts.data:
                per_worker[task["worker"]] = per_worker.get(task["worker"], 0) + 1
            counts = sorted(per_worker.values()) + [0] * (n - len(per_worker))
            counts.sort()
            tasks = sum(counts)
            sched_cpu = (s1.user + s1.system) - (s0.user + s0.system)
            rows.append({"case": name, "workers": n, "workers_per_process": per_process, "memory_limit": memory,
                         "block": blocks, "seconds": round(wall, 2),
                         "tasks": tasks, "tasks_per_worker": {"min": counts[0], "median": counts[len(counts) // 2],
                                                              "max": counts[-1], "idle_workers": counts.count(0)},
                         "scheduler_cpu_s": round(sched_cpu, 2),
                         "scheduler_cpu_ms_per_task": round(1e3 * sched_cpu / max(1, tasks), 2),
                         "scheduler_idle_cpu_ms_per_s": round(1e3 * idle_rate, 2),
                         "scheduler_cpu_ms_per_task_net": round(1e3 * max(0.0, sched_cpu - idle_rate * wall) / max(1, tasks), 2),
                         "client_cpu_ms_per_task": round(1e3 * cpu_here / max(1, tasks), 2),
                         "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
                         "cluster_start_s": round(started, 1)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    p.add_argument("--systems", type=int, default=30)
    p.add_argument("--tasks", type=int, default=20)
    p.add_argument("--instances", type=int, default=100)
    p.add_argument("--replicates", type=int, default=400)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="10 x 8 x 20, 80 replicates, 1 repeat")
    p.add_argument("--out", default=None, help="default: results/cluster_scale.json (cluster_scale_sim.json with "
                   "--simulate)")
    p.add_argument("--simulate", default=None, metavar="N,N",
                   help="worker counts of the simulation (e.g. 16,64): scheduler and workers in processes of their own")
    p.add_argument("--worker-memory", default="256MiB", help="memory limit of each simulated worker (default 256MiB)")
    p.add_argument("--convert-rows", type=int, default=0, metavar="N",
                   help="convert a long CSV of about N rows here and on 2 worker processes (printed, not written)")
    p.add_argument("--logs", default=None, metavar="DIR", help="with --simulate: the scheduler's and workers' logs")
    p.add_argument("--per-process", type=int, default=8,
                   help="simulated workers hosted by one process (default 8: 64 workers in 8 processes of ~300 MB)")
    args = p.parse_args(argv)
    if args.quick:
        args.systems, args.tasks, args.instances, args.replicates, args.repeats = 10, 8, 20, 80, 1
    if args.simulate:
        return _simulate_all(args)
    if args.convert_rows:
        with tempfile.TemporaryDirectory() as tmp:
            row = convert_case(args.convert_rows, Path(tmp))
        print(json.dumps(row))
        return 0
    args.out = args.out or str(HERE / "results" / "cluster_scale.json")
    from _machine import machine_info
    from distributed import Client, LocalCluster

    from engine.distributed import choose_block

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = write_input(Path(tmp), args.systems, args.tasks, args.instances)
        for n in [int(x) for x in args.workers.split(",")]:
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                              memory_limit="1GiB") as cluster, Client(cluster) as client:
                chosen = choose_block(args.replicates, n, 2**30, float(path.stat().st_size))
                for name, block, work in [
                    ("bootstrap", chosen, lambda b: bootstrap_case(client, path, args.replicates, b)),
                    ("bootstrap", 50, lambda b: bootstrap_case(client, path, args.replicates, b)),
                    ("sweep", chosen, lambda b: sweep_case(client, path, Path(tmp) / "s.zarr", args.replicates, b)),
                ]:
                    res = timed(cluster, lambda: work(block), args.repeats)
                    rows.append({"case": name, "workers": n, "block": block, "chosen": block == chosen, **res})
                    print(json.dumps(rows[-1]), flush=True)
    out = {"machine": machine_info(), "sizes": {k: getattr(args, k) for k in ("systems", "tasks", "instances",
                                                                             "replicates", "repeats")},
           "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


def convert_case(rows: int, folder: Path) -> dict[str, Any]:
    """Convert a shuffled long CSV of about ``rows`` rows here and on 2 worker processes (see the module's 4.)."""
    from distributed import Client, LocalCluster

    from engine.distributed.convert import convert_on_cluster
    from engine.io.convert import convert

    S, T = 50, 20
    K = max(1, rows // (S * T))
    rng = np.random.default_rng(0)
    order = rng.permutation(S * T * K)
    s_idx, rest = np.divmod(order, T * K)
    t_idx, k_idx = np.divmod(rest, K)
    vals = rng.normal(size=order.size)
    src = folder / "convert.csv"
    with src.open("w") as f:
        f.write("system,task,instance,score\n")
        for a in range(0, order.size, 100_000):
            b = min(order.size, a + 100_000)
            f.writelines(f"s{s},t{t},{k},{v:.5f}\n" for s, t, k, v in
                         zip(s_idx[a:b], t_idx[a:b], k_idx[a:b], vals[a:b]))
    t0 = time.perf_counter()
    convert(src, folder / "here.zarr")
    here = time.perf_counter() - t0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="2GiB") as cluster, Client(cluster) as client:
        client.run(_warm)
        t0 = time.perf_counter()
        info = convert_on_cluster(client, src, folder / "there.zarr")
        there = time.perf_counter() - t0

    def files(store: Path) -> dict[str, bytes]:
        return {q.relative_to(store).as_posix(): q.read_bytes() for q in sorted(store.rglob("*")) if q.is_file()}

    same = files(folder / "here.zarr") == files(folder / "there.zarr")
    return {"case": "convert", "rows": int(order.size), "csv_mb": round(src.stat().st_size / 2**20, 1),
            "seconds_here": round(here, 2), "seconds_2_workers": round(there, 2), "parts": info["parts"],
            "slabs": info["slabs"], "same_files": same, "load": round(os.getloadavg()[0], 2)}


def _simulate_all(args: argparse.Namespace) -> int:
    import signal

    from _machine import machine_info

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run stops its scheduler and workers too

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = write_input(Path(tmp), args.systems, args.tasks, args.instances)
        for n in [int(x) for x in args.simulate.split(",")]:
            rows += simulate(n, path, Path(tmp), args.replicates, args.worker_memory, args.per_process,
                             Path(args.logs) if args.logs else None)
    out = {"machine": machine_info(), "sizes": {k: getattr(args, k) for k in ("systems", "tasks", "instances",
                                                                             "replicates")}, "rows": rows}
    target = Path(args.out or HERE / "results" / "cluster_scale_sim.json")
    target.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
