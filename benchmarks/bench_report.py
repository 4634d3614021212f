"""Time ``votebench report`` end to end (issue 24): a synthetic S x T table, data/vnr_glue.csv, a TAC 2008 store,
and (``taccsv``) the TAC 2008 instance-level CSV itself.

The synthetic table: seeded random scores, each task on its own scale and offset, a few missing cells
(the report ranks it with ``--missing listwise``).  Each case runs the whole command in a fresh process:
median wall time of ``--runs`` runs, the CPU time (user + sys of the child) and the peak RSS.
Results go to benchmarks/results/report.md with the ``uptime`` load of the machine.

    python benchmarks/bench_report.py --systems 300 --tasks 80 --runs 3
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def synthetic_table(path: Path, n_systems: int, n_tasks: int, *, seed: int = 0, missing: float = 0.02) -> Path:
    """A CSV of seeded scores: a system skill plus noise, task scales 0.1-100, ``missing`` of the cells empty."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(size=n_systems)
    scale = 10.0 ** rng.uniform(-1, 2, size=n_tasks)
    offset = rng.uniform(-50, 50, size=n_tasks)
    X = (skill[:, None] + rng.normal(scale=1.5, size=(n_systems, n_tasks))) * scale + offset
    X = np.round(X, 3)
    holes = rng.random(X.shape) < missing
    holes[: max(1, n_systems // 10)] = False  # the best-known systems complete
    lines = ["system," + ",".join(f"task{j:03d}" for j in range(n_tasks))]
    for i in range(n_systems):
        cells = ["" if holes[i, j] else repr(float(X[i, j])) for j in range(n_tasks)]
        lines.append(f"sys{i:04d}," + ",".join(cells))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_once(args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MB) of one ``python -m engine ARGS`` process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "engine", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024.0


def measure(name: str, args: list[str], runs: int) -> dict[str, float | str]:
    walls, cpus, rss = [], [], 0.0
    for _ in range(runs):
        w, c, r = run_once(args)
        walls.append(w)
        cpus.append(c)
        rss = max(rss, r)
    return {"case": name, "runs": runs, "wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
            "peak_rss_mb": rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=300)
    ap.add_argument("--tasks", type=int, default=80)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default="synthetic,glue,tac", help="comma-separated: synthetic, glue, tac, taccsv")
    ap.add_argument("--label", default="", help="a label for this set of rows (e.g. before / after)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "report.md"))
    a = ap.parse_args()
    cases = a.cases.split(",")
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        if "synthetic" in cases:
            table = synthetic_table(t / "synthetic.csv", a.systems, a.tasks)
            rows.append(measure(f"synthetic {a.systems} x {a.tasks}",
                                ["report", str(table), "--out", str(t / "rep_syn"), "--missing", "listwise"], a.runs))
        if "glue" in cases:
            glue = ["report", str(ROOT / "data" / "vnr_glue.csv"), "--out", str(t / "rep_glue"), "--missing", "listwise"]
            rows.append(measure("data/vnr_glue.csv (97 x 14)", glue, a.runs))
        if "taccsv" in cases:  # the instance-level CSV itself: its bootstrap resamples instances
            rows.append(measure("data/colombo_tac08.csv.gz (62 systems x 15 metrics x 48 topics)",
                                ["report", str(ROOT / "data" / "colombo_tac08.csv.gz"), "--out", str(t / "rep_taccsv")],
                                a.runs))
        if "tac" in cases:
            store = t / "tac.zarr"
            subprocess.run([sys.executable, "-m", "engine", "bootstrap", str(ROOT / "data" / "colombo_tac08.csv.gz"),
                            "--level", "two", "--over", "instances", "--replicates", "200", "--store", str(store)],
                           check=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rows.append(measure("TAC 2008 store (200 replicates)", ["report", str(store), "--out", str(t / "rep_tac")],
                                a.runs))
    out = Path(a.out)
    lines = [] if out.exists() else ["# `votebench report` end to end (issue 24)", "",
                                     "Fresh process per run; wall = median of the runs, CPU = user + sys of the child.",
                                     ""]
    lines += [f"## {a.label or 'run'} ({time.strftime('%Y-%m-%d %H:%M')})", "", f"load: `{load}`", "",
              "| case | runs | wall (s) | CPU (s) | peak RSS (MB) |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['case']} | {r['runs']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mb']:.0f} |" for r in rows]
    with out.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
