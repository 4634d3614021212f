"""Benchmark: whole-process ``rank`` and ``bootstrap`` of this checkout against other checkouts (before/after a restructuring).

Every checkout's engine is run as ``python -m engine.app.cli`` from its own folder (``PYTHONPATH`` = that folder,
same Python and libraries), in interleaved rounds so that all of them see the same load on a shared machine:

* ``rank data/vnr_value.csv --missing listwise`` (start-up dominated: the CLI layer's own cost shows here);
* ``bootstrap data/vnr_glue.csv --missing listwise --replicates 200 --format json`` (the bootstrap path
  of the CLI: where it runs, the intervals, the output), whose JSON is also compared between checkouts.

Run: ``python benchmarks/bench_architecture.py --compare-with LABEL=CHECKOUT [...] [--rounds N]``.
Writes ``benchmarks/results/architecture.json`` and prints a Markdown table (the figures of
``benchmarks/results/architecture.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _machine import machine_info  # the script's own folder is on sys.path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
JOBS = {
    "rank": ["rank", str(REPO / "data" / "vnr_value.csv"), "--missing", "listwise"],
    "bootstrap": ["bootstrap", str(REPO / "data" / "vnr_glue.csv"), "--missing", "listwise", "--replicates", "200",
                  "--format", "json"],
}


def _run(args: list[str], root: Path) -> tuple[float, str]:
    """Wall time (spawn to exit) and stdout of ``python -m engine.app.cli ARGS`` with the engine of ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "engine.app.cli", *args], cwd=root, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"bench_architecture: {root}: {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return dt, proc.stdout


def _stats(values: list[float]) -> dict[str, Any]:
    q1, _, q3 = statistics.quantiles(values, n=4)
    return {"median": statistics.median(values), "q1": q1, "q3": q3, "min": min(values), "runs": values}


def bench(checkouts: dict[str, Path], rounds: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {"load_start": os.getloadavg()}
    for job, args in JOBS.items():
        stdout = {label: _run(args, root)[1] for label, root in checkouts.items()}  # warm-up round
        times: dict[str, list[float]] = {label: [] for label in checkouts}
        for _ in range(rounds[job]):
            for label, root in checkouts.items():
                times[label].append(_run(args, root)[0])
        first = next(iter(stdout.values()))
        out[job] = {"times": {label: _stats(v) for label, v in times.items()},
                    "same_output_as_this": {label: s == first for label, s in stdout.items()}}
    out["load_end"] = os.getloadavg()
    return out


def markdown(res: dict[str, Any]) -> str:
    lines = ["| job | checkout | median s | quartiles s | min s | output as this checkout |", "|---|---|---:|---:|---:|---|"]
    for job in JOBS:
        for label, st in res[job]["times"].items():
            same = "yes" if res[job]["same_output_as_this"][label] else "no"
            lines.append(f"| {job} | {label} | {st['median']:.3f} | {st['q1']:.3f}-{st['q3']:.3f} | {st['min']:.3f} | {same} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare-with", action="append", default=[], metavar="LABEL=CHECKOUT",
                    help="another checkout (a folder holding engine/), repeatable")
    ap.add_argument("--rounds", type=int, default=25, help="interleaved rounds of rank (bootstrap: half as many; default 25)")
    ap.add_argument("--out", type=Path, default=RESULTS / "architecture.json")
    args = ap.parse_args()
    checkouts = {"this checkout": REPO}
    for item in args.compare_with:
        label, sep, path = item.partition("=")
        if not sep:
            ap.error(f"--compare-with {item!r}: expected LABEL=CHECKOUT")
        checkouts[label] = Path(path).resolve()
    res = bench(checkouts, {"rank": args.rounds, "bootstrap": max(2, args.rounds // 2)})
    res["machine"] = machine_info()
    res["checkouts"] = list(checkouts)  # labels only: no machine path in the results
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    print(markdown(res))
    print(f"load average at start {res['load_start']}, at end {res['load_end']}")


if __name__ == "__main__":
    main()
