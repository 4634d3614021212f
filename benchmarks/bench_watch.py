"""``votebench watch``: time from a new model's output folder landing to the published snapshot showing it.

Each size starts from a store that already holds all models but the last ``--land`` (for the issue's size built
directly with the watch's ledger, as if earlier polls had ingested them: writing 5e6 JSONL lines first would take
longer than the benchmark), then lands the last models one at a time: an lm-eval ``--log_samples`` folder (one
``samples_<task>.jsonl`` per task, acc 0/1 per doc, then ``results_*.json``) written in a staging folder and moved
into the watched folder in one rename.  The watch polls every ``--interval`` seconds (in this process, as
``votebench watch`` does); the latency of a model is from its rename to the end of the poll whose snapshot ranks it,
so it includes up to one polling interval of waiting.  Each poll's phases come from the watcher: reading and merging
the new folder, writing the store (atomically: the whole tensor is rewritten, the system axis being the store's
contiguous one), ranking (``votebench rank STORE``'s function) and the bootstrap (``votebench bootstrap``'s).

Run from the repository root::

    python benchmarks/bench_watch.py --size small     # 20 models x 10 tasks x 200 instances, 200 replicates
    python benchmarks/bench_watch.py --size issue     # 100 models x 50 tasks x 1,000 instances (5e6 scores)
    python benchmarks/bench_watch.py --size small --cluster   # rank and bootstrap on a local 2-worker dask cluster

Writes ``benchmarks/results/watch_<size>[_cluster].json``; ``benchmarks/results/watch.md`` is written by hand from them.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _machine import machine_info  # the script's own folder is on sys.path

from engine.labelled.canonical import scores_from_array  # noqa: E402
from engine.watch import Watcher, WatchOptions  # noqa: E402
from engine.watch import ledger as ledgers  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = {"small": (20, 10, 200), "issue": (100, 50, 1000)}
STAMP = "2024-05-01T10-00-00"


def model_outcomes(m: int, T: int, K: int) -> np.ndarray:
    """(task, doc) acc of model ``m``: 0/1 draws with a per-model skill (seeded by ``m``)."""
    rng = np.random.default_rng(m)
    skill = 0.3 + 0.5 * ((m * 0.618) % 1.0)
    return (rng.random((T, K)) < skill).astype(float)


def write_folder(folder: Path, name: str, acc: np.ndarray) -> None:
    folder.mkdir(parents=True)
    T = acc.shape[0]
    for t in range(T):
        lines = [f'{{"doc_id": {i}, "filter": "none", "metrics": ["acc"], "acc": {v:.1f}}}' for i, v in enumerate(acc[t])]
        (folder / f"samples_task{t:02d}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    hib = {f"task{t:02d}": {"acc": True} for t in range(T)}
    (folder / f"results_{STAMP}.json").write_text(json.dumps({"model_name": name, "higher_is_better": hib}))


def prebuilt_store(store: Path, n: int, T: int, K: int) -> None:
    """A store holding models 0..n-1 with a ledger that lists them as ingested (units outside the watched folder)."""
    data = np.stack([model_outcomes(m, T, K) for m in range(n)], axis=-1)  # (task, instance, system)
    systems = [f"model{m:03d}" for m in range(n)]
    scores = scores_from_array(data, systems=systems, tasks=[f"task{t:02d}" for t in range(T)],
                               instances=list(range(K)), layout="system-last")
    ledger = ledgers.empty_ledger()
    ledger["units"] = {f"earlier/{s}": {"kind": "lm-eval", "systems": [s], "files": {}, "time": time.time()}
                       for s in systems}
    ledgers.save(store, scores, ledger)


def run(size: str, land: int, replicates: int, interval: float, over: str, client: object | None = None) -> dict:
    S, T, K = SIZES[size]
    work = Path(tempfile.mkdtemp(prefix="bench-watch-"))
    root, store, staging = work / "runs", work / "lb.zarr", work / "staging"
    root.mkdir()
    try:
        t0 = time.perf_counter()
        prebuilt_store(store, S - land, T, K)
        setup = time.perf_counter() - t0
        opts = WatchOptions(settle=1.0, rank={"rule": "borda", "level": "two", "missing": "error"},
                            over=over or None, replicates=replicates, seed=0)
        w = Watcher(root, store, opts, client=client)
        w.poll()  # the restart: publishes what the store holds
        rows = []
        for m in range(S - land, S):
            name = f"model{m:03d}"
            t_write = time.perf_counter()
            write_folder(staging / name, name, model_outcomes(m, T, K))
            written = time.perf_counter() - t_write
            t_land = time.perf_counter()
            shutil.move(str(staging / name), str(root / name))
            while True:
                began = time.perf_counter()
                w.poll()
                if w.snapshot and any(r["system"] == name for r in w.snapshot["ranking"]):
                    break
                time.sleep(max(0.0, interval - (time.perf_counter() - began)))
            seen = time.perf_counter()
            rows.append({"model": name, "latency_s": seen - t_land, "poll_s": seen - began, "write_files_s": written,
                         **w.last_timing, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            time.sleep(interval * 0.37)  # the next landing falls somewhere inside a polling interval
        w.close()
        return {"size": size, "systems": S, "tasks": T, "instances": K, "scores": S * T * K, "replicates": replicates,
                "over": over, "interval_s": interval, "cluster": client is not None, "setup_s": setup, "landings": rows,
                "store_mb": sum(p.stat().st_size for p in store.rglob("*") if p.is_file()) / 2**20}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--land", type=int, default=3, help="models landed one at a time (default 3)")
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--over", default="instances", help="bootstrap axis ('' for none)")
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--cluster", action="store_true", help="rank and bootstrap on a local 2-worker dask cluster")
    ap.add_argument("--out", default=None, help="JSON file (default: benchmarks/results/watch_<size>[_cluster].json)")
    a = ap.parse_args()
    client = None
    if a.cluster:
        from distributed import Client, LocalCluster

        client = Client(LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None))
    try:
        res = {"machine": machine_info(), **run(a.size, a.land, a.replicates, a.interval, a.over, client)}
    finally:
        if client is not None:
            client.close()
    out = Path(a.out) if a.out else RESULTS / f"watch_{a.size}{'_cluster' if a.cluster else ''}.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
