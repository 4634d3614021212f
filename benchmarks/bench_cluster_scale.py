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

Usage::

    python benchmarks/bench_cluster_scale.py            # about 2-4 minutes on 2 cores
    python benchmarks/bench_cluster_scale.py --quick    # small sizes (well under a minute)

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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    p.add_argument("--systems", type=int, default=30)
    p.add_argument("--tasks", type=int, default=20)
    p.add_argument("--instances", type=int, default=100)
    p.add_argument("--replicates", type=int, default=400)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="10 x 8 x 20, 80 replicates, 1 repeat")
    p.add_argument("--out", default=str(HERE / "results" / "cluster_scale.json"))
    args = p.parse_args(argv)
    if args.quick:
        args.systems, args.tasks, args.instances, args.replicates, args.repeats = 10, 8, 20, 80, 1
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


if __name__ == "__main__":
    sys.exit(main())
