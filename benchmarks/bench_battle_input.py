"""Battle files as an input: the chunked reader (``engine.open_battles``) and ``votebench`` on them, time and memory.

Data: ``--battles`` battles (default 10 million) among ``--models`` models (default 200), generated as in
``bench_battles.py`` (its ``write_battles``: known strengths, Davidson's ties, seeded) and written as Parquet;
the same records are also written as CSV (plain text, Arena's column names) for the CSV path.

Each measurement runs in its own process (peak memory = that process's high-water mark, ``wait4`` rusage):

* ``open_battles`` (chunked: ``--chunk-rows`` records at a time into pair counts) on the Parquet and on the CSV
  file, against ``engine.io.readers.battles.read_battles`` + ``counts()`` (the whole file's codes at once) on the
  Parquet file; their counts must be equal.
* ``votebench bootstrap FILE --rule bradley_terry --over battles --replicates 100 --format json`` (the whole
  command: start-up, reading, fit, 100 replicates, JSON) on the Parquet file, and ``votebench rank FILE --rule
  bradley_terry``.

``--quick`` (200,000 battles among 50 models) writes no result file unless ``--out`` is given.  Results:
``benchmarks/results/battle_input.md`` and ``battle_input.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _machine import run_child  # the script's own folder is on sys.path

HERE = Path(__file__).resolve().parent
GIB = 2.0**30


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB


def run_open(path: str, chunk_rows: int, out: str) -> dict[str, Any]:
    from engine.io.readers import open_battles

    t0 = time.perf_counter()
    b = open_battles(path, chunk_rows=chunk_rows)
    t = time.perf_counter() - t0
    np.save(out, b.counts.battles_wins)
    return {"seconds": t, "n_battles": b.n_records, "n_models": len(b.models), "peak_rss_gib": _peak_gib()}


def run_whole(path: str, chunk_rows: int, out: str) -> dict[str, Any]:
    from engine.io.readers.battles import read_battles

    t0 = time.perf_counter()
    c = read_battles(path).counts()
    t = time.perf_counter() - t0
    np.save(out, c.battles_wins)
    return {"seconds": t, "peak_rss_gib": _peak_gib()}


_RUNS = {"open": run_open, "whole": run_whole}


def measured(argv: list[str]) -> dict[str, Any]:
    """Run ``argv`` in a fresh process: its wall time, plus its JSON line if any (times and peak RSS it measured)."""
    out, wall = run_child(argv, str(argv[:4]))
    res: dict[str, Any] = {"wall_s": wall}
    text = out.strip()
    if text.startswith("{") and text.count("\n") == 0:
        res.update(json.loads(text))
    return res


def measured_cli(args: list[str]) -> dict[str, Any]:
    """``votebench ARGS`` in a fresh process: wall time and peak RSS measured around it by a tiny wrapper."""
    code = ("import resource, subprocess, sys, time, json; t0 = time.perf_counter(); "
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
            "t = time.perf_counter() - t0; r = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(json.dumps({'seconds': t, 'peak_rss_gib': r.ru_maxrss * 1024 / 2**30, 'code': p.returncode, "
            "'err': p.stderr.decode()[-500:]}))")
    res = measured([sys.executable, "-c", code, sys.executable, "-m", "engine.app.cli", *args])
    if res["code"] != 0:
        raise RuntimeError(f"votebench {' '.join(args)} failed: {res['err']}")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--battles", type=int, default=None)
    ap.add_argument("--models", type=int, default=None)
    ap.add_argument("--chunk-rows", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--run", nargs=4, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.run:
        name, path, chunk, out = a.run
        print(json.dumps(_RUNS[name](path, int(chunk), out)))
        return 0
    sys.path.insert(0, str(HERE))
    from bench_battles import write_battles

    n = a.battles or (200_000 if a.quick else 10_000_000)
    S = a.models or (50 if a.quick else 200)
    with tempfile.TemporaryDirectory() as tmp:
        pq_path = Path(tmp) / "battles.parquet"
        info = write_battles(pq_path, models=S, battles=n, seed=a.seed)
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq

        csv_path = Path(tmp) / "battles.csv"
        with pcsv.CSVWriter(str(csv_path), pq.read_schema(pq_path).remove_metadata()) as w:
            for batch in pq.ParquetFile(pq_path).iter_batches(batch_size=1 << 20):
                w.write_batch(batch)
        me = [sys.executable, str(Path(__file__).resolve()), "--run"]
        r: dict[str, Any] = {"n_battles": n, "n_models": S, "seed": a.seed, "chunk_rows": a.chunk_rows,
                             "parquet_mib": info["file_mib"], "csv_mib": csv_path.stat().st_size / 2**20}
        r["open_parquet"] = measured([*me, "open", str(pq_path), str(a.chunk_rows), f"{tmp}/o1.npy"])
        r["open_csv"] = measured([*me, "open", str(csv_path), str(a.chunk_rows), f"{tmp}/o2.npy"])
        r["whole_parquet"] = measured([*me, "whole", str(pq_path), str(a.chunk_rows), f"{tmp}/w.npy"])
        same = np.array_equal(np.load(f"{tmp}/o1.npy"), np.load(f"{tmp}/w.npy")) and \
            np.array_equal(np.load(f"{tmp}/o2.npy"), np.load(f"{tmp}/w.npy"))
        r["counts_equal"] = bool(same)
        r["cli_bootstrap"] = measured_cli(["bootstrap", str(pq_path), "--rule", "bradley_terry", "--over", "battles",
                                           "--replicates", "100", "--format", "json"])
        r["cli_rank"] = measured_cli(["rank", str(pq_path), "--rule", "bradley_terry"])
    r["machine"] = {"nproc": os.cpu_count(), "python": platform.python_version(),
                    "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "loadavg_start": os.getloadavg()}
    text = render(r)
    print(text)
    if a.quick and a.out is None:
        return 0
    out = Path(a.out) if a.out else HERE / "results"
    out.mkdir(parents=True, exist_ok=True)
    stem = "battle_input_quick" if a.quick else "battle_input"
    (out / f"{stem}.json").write_text(json.dumps(r, indent=2) + "\n")
    (out / f"{stem}.md").write_text(text)
    return 0


def render(r: dict[str, Any]) -> str:
    o1, o2, w = r["open_parquet"], r["open_csv"], r["whole_parquet"]
    cb, cr = r["cli_bootstrap"], r["cli_rank"]
    m = r["machine"]
    return "\n".join([
        "# Battle files as an input: chunked reading into pair counts, and votebench on them",
        "",
        f"Generated by `benchmarks/bench_battle_input.py`. {m['nproc']} usable cores (shared), {m['date_utc']} UTC, "
        f"load average at the start {', '.join(f'{x:.1f}' for x in m['loadavg_start'])}.",
        f"Data: {r['n_battles']:,} battles among {r['n_models']} models (Parquet {r['parquet_mib']:.0f} MiB, "
        f"CSV {r['csv_mib']:.0f} MiB); chunks of {r['chunk_rows']:,} records. Each row runs in its own process.",
        "",
        "| what | time (s) | peak RSS (GiB) |",
        "|---|---:|---:|",
        f"| `engine.open_battles` (chunked), Parquet | {o1['seconds']:.2f} | {o1['peak_rss_gib']:.2f} |",
        f"| `engine.open_battles` (chunked), CSV | {o2['seconds']:.2f} | {o2['peak_rss_gib']:.2f} |",
        f"| `read_battles(...).counts()` (whole file at once), Parquet | {w['seconds']:.2f} | {w['peak_rss_gib']:.2f} |",
        f"| `votebench bootstrap FILE --rule bradley_terry --over battles --replicates 100 --format json` (whole command) "
        f"| {cb['seconds']:.2f} | {cb['peak_rss_gib']:.2f} |",
        f"| `votebench rank FILE --rule bradley_terry` (whole command) | {cr['seconds']:.2f} | {cr['peak_rss_gib']:.2f} |",
        "",
        f"Counts of the three readings equal: {r['counts_equal']}.",
        "",
    ])


if __name__ == "__main__":
    sys.exit(main())
