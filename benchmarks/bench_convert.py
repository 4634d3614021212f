#!/usr/bin/env python
"""Streaming conversion of a long CSV to a zarr store (``votebench convert``, issue #13): peak memory and time.

What is measured (see ``benchmarks/README.md`` for how to run it):

1. **Data**: a synthetic long CSV ``system,task,instance,score`` of
   ``systems x tasks x instances`` rows (``s0000``, ``t000``, instance numbers,
   scores with 3 decimals: system ``s`` has quality ``s / S`` plus standard
   normal noise), written block by block with pyarrow in system-major order,
   plain (``.csv``) and, for the smaller size, gzipped (``.csv.gz``).  A
   ``<name>.meta.json`` sidecar marks every fifth task lower-is-better.
2. **convert**: ``votebench convert FILE STORE`` in a subprocess; wall time and
   the subprocess's peak RSS (``wait4`` rusage), rows per second, the sizes
   of the CSV and the store, and the temporary disk it used (the largest size
   of the folder beside the store, sampled every 0.2 s).
3. **Reference in memory** (smaller size only, a subprocess): ``engine.open_scores``
   on the same CSV (the whole table in pandas), its peak RSS per row; and the
   check that the store equals the in-memory tensor (labels, directions,
   values) and gives the same Borda ranking.

Usage::

    python benchmarks/bench_convert.py                        # 1e7 rows (csv, csv.gz, in-memory reference) + 1e8 rows (csv)
    python benchmarks/bench_convert.py --quick                # 1e6 rows only (a minute)
    python benchmarks/bench_convert.py --from-json benchmarks/results/convert.json   # re-render the report

Writes ``benchmarks/results/convert.md`` (``--out``) and ``convert.json`` beside it.  The data go to
``--data-dir`` (default a folder under the system temp dir, removed at the end unless ``--keep-data``);
the full run needs about 12 GB of temporary disk.
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
from _machine import machine_info  # the script's own folder is on sys.path

import engine  # noqa: F401 - installed (pip install -e .): no sys.path edits

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "convert.md"
GIB = 2.0**30


def write_csv(path: Path, S: int, T: int, K: int, *, seed: int = 0) -> int:
    """The synthetic long CSV (see the module docstring); returns its size in bytes."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    systems = pa.array([f"s{i:04d}" for i in range(S)])
    tasks = pa.array([f"t{i:03d}" for i in range(T)])
    per_system = T * K
    systems_per_block = max(1, (1 << 22) // per_system)
    opts = pacsv.WriteOptions(include_header=True)
    sink = pa.CompressedOutputStream(str(path), "gzip") if path.name.endswith(".gz") else pa.OSFile(str(path), "wb")
    with sink, pacsv.CSVWriter(sink, pa.schema([("system", pa.string()), ("task", pa.string()), ("instance", pa.int64()),
                                                 ("score", pa.float64())]), write_options=opts) as w:
        for s0 in range(0, S, systems_per_block):
            s1 = min(S, s0 + systems_per_block)
            n = (s1 - s0) * per_system
            s_idx = np.repeat(np.arange(s0, s1), per_system)
            t_idx = np.tile(np.repeat(np.arange(T), K), s1 - s0)
            k_idx = np.tile(np.arange(K), (s1 - s0) * T)
            score = np.round(s_idx / S + rng.standard_normal(n), 3)
            w.write_table(pa.table({"system": systems.take(pa.array(s_idx)), "task": tasks.take(pa.array(t_idx)),
                                    "instance": pa.array(k_idx), "score": pa.array(score)}))
    meta = {"name": path.name.split(".")[0], "higher_is_better": {f"t{i:03d}": i % 5 != 0 for i in range(T)}}
    path.with_name(path.name.split(".")[0] + ".meta.json").write_text(json.dumps(meta))
    return path.stat().st_size


def _dir_size(p: Path) -> int:
    total = 0
    for root, _, files in os.walk(p):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def run_measured(argv: list[str], watch: Path | None = None) -> dict[str, Any]:
    """Run ``argv``; wall time, peak RSS of the child (wait4) and the largest size of ``watch`` meanwhile."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak_disk = [0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            if watch is not None:
                peak_disk[0] = max(peak_disk[0], _dir_size(watch))
            stop.wait(0.2)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out = proc.stdout.read()  # type: ignore[union-attr]
    err = proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return {"wall_s": wall, "peak_rss_gib": usage.ru_maxrss * 1024 / GIB, "peak_temp_disk_gib": peak_disk[0] / GIB,
            "stdout": out.decode(), "stderr": err.decode()}


_REFERENCE = r"""
import json, sys, resource
import numpy as np
import engine
csv_path, store = sys.argv[1], sys.argv[2]
a = engine.open_scores(csv_path)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
b = engine.open_scores(store)
same = {
    "labels": bool(all((a[d].values == b[d].values).all() for d in ("system", "task", "instance"))),
    "directions": bool((a["higher_is_better"].values == b["higher_is_better"].values).all()),
    "values": bool(np.array_equal(a.values, np.asarray(b.values), equal_nan=True)),
}
ra = engine.rank(a, rule="borda", level="two")
rb = engine.rank(b, rule="borda", level="two").compute()
same["borda_two"] = bool(np.array_equal(ra["score"].values, rb["score"].values))
print(json.dumps({"peak_rss_bytes": rss, "same": same}))
"""


def bench(data: Path, S: int, T: int, K: int, *, gz: bool, reference: bool) -> dict[str, Any]:
    rows = S * T * K
    name = f"long_{rows:.0e}".replace("+", "")
    csv_path = data / (name + (".csv.gz" if gz else ".csv"))
    t0 = time.perf_counter()
    size = write_csv(csv_path, S, T, K)
    gen = time.perf_counter() - t0
    work = data / f"{csv_path.name}.out"
    work.mkdir()
    store = work / "scores.zarr"
    votebench = str(Path(sys.executable).with_name("votebench"))
    m = run_measured([votebench, "convert", str(csv_path), str(store)], watch=work)
    res: dict[str, Any] = {
        "rows": rows, "shape": [S, T, K], "file": csv_path.name, "gzip": gz, "csv_gib": size / GIB, "generate_s": gen,
        "convert_wall_s": m["wall_s"], "convert_peak_rss_gib": m["peak_rss_gib"], "rows_per_s": rows / m["wall_s"],
        "bytes_per_row_peak": m["peak_rss_gib"] * GIB / rows, "store_gib": _dir_size(store) / GIB,
        "temp_disk_peak_gib": m["peak_temp_disk_gib"],
        "message": m["stderr"].strip().splitlines()[-1].replace(str(data), "<data-dir>"),  # no machine path in the results
    }
    if reference:
        r = run_measured([sys.executable, "-c", _REFERENCE, str(csv_path), str(store)])
        info = json.loads(r["stdout"])
        res["in_memory_peak_rss_gib"] = info["peak_rss_bytes"] / GIB
        res["in_memory_bytes_per_row"] = info["peak_rss_bytes"] / rows
        res["store_equals_in_memory"] = info["same"]
    shutil.rmtree(work, ignore_errors=True)
    csv_path.unlink()
    print(json.dumps({k: v for k, v in res.items() if k != "message"}), flush=True)
    return res


def render(results: dict[str, Any]) -> str:
    lines = [
        "# `votebench convert`: a long CSV streamed into a zarr store",
        "",
        "Generated by `benchmarks/bench_convert.py` (see its docstring for the data and what is timed). "
        f"Machine: {results['machine']['cpu_model']}, {results['machine']['nproc']} usable cores, "
        f"{results['machine']['memory_gib']} GiB RAM; {results['machine']['date_utc']}; other processes share the cores.",
        "",
        "Peak RSS is the converting process's own high-water mark (`wait4` rusage); temporary disk is the largest size "
        "of the folder beside the store (the rows file, the slab files and the store being built).",
        "",
        "| rows | systems x tasks x instances | input | CSV (GiB) | convert wall (s) | rows/s | peak RSS (GiB) | bytes/row at peak "
        "| store (GiB) | temp disk peak (GiB) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["runs"]:
        lines.append(
            f"| {r['rows']:.0e} | {' x '.join(f'{v:,}' for v in r['shape'])} | {'csv.gz' if r['gzip'] else 'csv'} "
            f"| {r['csv_gib']:.2f} | {r['convert_wall_s']:.1f} | {r['rows_per_s'] / 1e6:.2f} M | {r['convert_peak_rss_gib']:.2f} "
            f"| {r['bytes_per_row_peak']:.1f} | {r['store_gib']:.2f} | {r['temp_disk_peak_gib']:.2f} |")
    refs = [r for r in results["runs"] if "in_memory_peak_rss_gib" in r]
    if refs:
        lines += ["", "Reading the same CSV in memory (`engine.open_scores`, the whole table in pandas) and comparing:", "",
                  "| rows | input | in-memory peak RSS (GiB) | bytes/row | store == in-memory tensor (labels, directions, values) "
                  "| same two-level Borda |",
                  "|---:|---|---:|---:|---|---|"]
        for r in refs:
            same = r["store_equals_in_memory"]
            lines.append(f"| {r['rows']:.0e} | {'csv.gz' if r['gzip'] else 'csv'} | {r['in_memory_peak_rss_gib']:.2f} "
                         f"| {r['in_memory_bytes_per_row']:.0f} | {same['labels'] and same['directions'] and same['values']} "
                         f"| {same['borda_two']} |")
    lines += ["", "Messages of the largest run:", "", "```", results["runs"][-1]["message"], "```", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1e6 rows only")
    ap.add_argument("--no-1e8", action="store_true", help="skip the 1e8-row run")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--keep-data", action="store_true")
    ap.add_argument("--from-json", type=Path, default=None)
    args = ap.parse_args()
    if args.from_json:
        results = json.loads(args.from_json.read_text())
        args.out.write_text(render(results))
        return
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="votebench-convert-"))
    data.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": machine_info(), "runs": []}
    try:
        if args.quick:
            results["runs"].append(bench(data, 100, 10, 1000, gz=False, reference=True))
        else:
            results["runs"].append(bench(data, 1000, 10, 1000, gz=False, reference=True))
            results["runs"].append(bench(data, 1000, 10, 1000, gz=True, reference=True))
            if not args.no_1e8:
                results["runs"].append(bench(data, 1000, 100, 1000, gz=False, reference=False))
    finally:
        if not args.keep_data and args.data_dir is None:
            shutil.rmtree(data, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str))
    args.out.write_text(render(results))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
