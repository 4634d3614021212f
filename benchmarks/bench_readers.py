"""Benchmark: read time of ``engine.open_scores`` per input format, against another checkout.

The reference input is ``data/colombo_tac08.csv.gz`` (62 systems x 15 tasks x 48 instances, long CSV);
the same scores are also written as Parquet, generic JSONL and a zarr store (by this checkout, into a
temporary folder) and read from there.  Each round starts one fresh Python process per checkout (this
one and, with ``--compare-with CHECKOUT``, e.g. the version before the reader registry), in turn; a
process imports ``engine`` from its checkout (``PYTHONPATH``), opens every input once untimed (warm-up),
then ``--repeats`` times timed (a zarr store is computed into memory, so its chunks are read).  The
figures are medians over all rounds; the machine is shared, so compare medians, not single runs.

Writes ``benchmarks/results/readers.md`` and ``readers.json``.

Usage::

    python benchmarks/bench_readers.py --compare-with ../old-checkout      # 7 rounds x 5 repeats
    python benchmarks/bench_readers.py --quick                             # smoke run, printed only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _machine import machine_info  # noqa: E402 - benchmarks/ is on sys.path when run as a script

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SOURCE = "data/colombo_tac08.csv.gz"

_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import engine
import_s = time.perf_counter() - t0
inputs, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
out = {"import_s": import_s, "reads": {}}
for name, path in inputs.items():
    engine.open_scores(path).values  # warm-up: page cache, lazy imports
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        engine.open_scores(path).values
        times.append(time.perf_counter() - t)
    out["reads"][name] = times
print(json.dumps(out))
"""


def _write_inputs(folder: Path) -> dict[str, str]:
    """The reference CSV and the same scores as Parquet, JSONL and a zarr store (written with this checkout)."""
    import engine

    scores = engine.open_scores(REPO / SOURCE)
    df = scores.to_dataframe().reset_index()[["system", "task", "instance", "scores"]].rename(columns={"scores": "score"})
    df = df.dropna(subset=["score"])
    df.to_parquet(folder / "tac08.parquet", index=False)
    with open(folder / "tac08.jsonl", "w", encoding="utf-8") as fh:
        for row in df.itertuples(index=False):
            fh.write(json.dumps({"system": row.system, "task": row.task, "instance": int(row.instance),
                                 "score": float(row.score)}) + "\n")
    engine.to_zarr(scores, folder / "tac08.zarr")
    return {"csv.gz": str(REPO / SOURCE), "parquet": str(folder / "tac08.parquet"), "jsonl": str(folder / "tac08.jsonl"),
            "zarr": str(folder / "tac08.zarr")}


def _child(checkout: Path, inputs: dict[str, str], repeats: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(inputs), str(repeats)], cwd=checkout, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench_readers: reading in {checkout} failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _git_commit(folder: Path) -> str | None:
    if shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or None


def bench(rounds: int, repeats: int, compare_with: Path | None) -> dict[str, Any]:
    checkouts = {"this checkout": REPO} | ({} if compare_with is None else {"compared checkout": compare_with})
    with tempfile.TemporaryDirectory(prefix="bench-readers-") as tmp:
        inputs = _write_inputs(Path(tmp))
        samples: dict[str, dict[str, list[float]]] = {k: {"import engine": []} for k in checkouts}
        for _ in range(rounds):
            for label, folder in checkouts.items():
                got = _child(folder, inputs, repeats)
                samples[label]["import engine"].append(got["import_s"])
                for name, times in got["reads"].items():
                    samples[label].setdefault(name, []).extend(times)
    medians = {label: {k: statistics.median(v) for k, v in s.items()} for label, s in samples.items()}
    return {"inputs": list(inputs), "rounds": rounds, "repeats": repeats, "samples": samples, "medians": medians,
            "commits": {label: _git_commit(folder) for label, folder in checkouts.items()}}


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    labels = list(res["medians"])
    lines = [
        "# Read time of open_scores per input format",
        "",
        f"Generated by `python benchmarks/bench_readers.py` ({m['date_utc']}); {m['nproc']} usable cores "
        f"({m['cpu_model']}), load average at start {tuple(round(v, 2) for v in m['loadavg_start'])}, at end "
        f"{tuple(round(v, 2) for v in res['loadavg_end'])}; Python {m['python']}, numpy {m['numpy']}, xarray "
        f"{m['xarray']}. `{SOURCE}` (62 systems x 15 tasks x 48 instances) and the same scores as Parquet, JSONL "
        f"and a zarr store; {res['rounds']} interleaved rounds of one process per checkout, {res['repeats']} timed reads "
        "per input and process after one untimed read. Medians in milliseconds; the machine is shared.",
        "",
        "| input | " + " | ".join(f"{label} ({res['commits'][label] or '?'})" for label in labels)
        + (" | this / compared |" if len(labels) == 2 else " |"),
        "|---|" + "---:|" * (len(labels) + (1 if len(labels) == 2 else 0)),
    ]
    for key in ["import engine", *res["inputs"]]:
        vals = [res["medians"][label][key] for label in labels]
        row = f"| {'`import engine`' if key == 'import engine' else key} | " + " | ".join(f"{v * 1e3:.1f}" for v in vals)
        lines.append(row + (f" | {vals[0] / vals[1]:.2f} |" if len(vals) == 2 else " |"))
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    ap.add_argument("--repeats", type=int, default=5, help="timed reads per input and process (default 5)")
    ap.add_argument("--compare-with", type=Path, default=None, metavar="CHECKOUT",
                    help="another checkout of votebench, timed in the same rounds")
    ap.add_argument("--quick", action="store_true", help="2 rounds, 2 repeats (smoke run, printed only)")
    ap.add_argument("--out", type=Path, default=RESULTS / "readers.md")
    args = ap.parse_args()
    rounds, repeats = (2, 2) if args.quick else (args.rounds, args.repeats)
    compare = args.compare_with.resolve() if args.compare_with else None
    if compare is not None and not (compare / "engine" / "__init__.py").is_file():
        sys.exit(f"bench_readers: {args.compare_with} is not a votebench checkout (no engine/__init__.py)")
    res: dict[str, Any] = {"machine": machine_info()}
    res.update(bench(rounds, repeats, compare))
    res["loadavg_end"] = os.getloadavg()
    text = render(res)
    print(text)
    if args.quick:
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
