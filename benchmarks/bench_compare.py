"""Benchmark: the whole ``votebench compare`` command on 4 systems x 3 tasks x 12,000 instances (issue 24: <= 20 s).

The table is a long CSV (``system,task,instance,score``; 144,000 rows, continuous scores rounded to 3 decimals, a
ladder of small offsets so some pairs differ and some do not), written to a temporary folder.  Each run is a fresh
process under ``/usr/bin/time -v``: wall time, CPU time (user + system) and peak RSS; the median of ``--runs`` runs
(default 3) is reported.  The peer is ``scipy.stats.permutation_test`` (``permutation_type="samples"``, the paired
test, vectorized in batches) on the same data and the same number of resamples, also a whole process: for every
pair the overall test (the mean of all paired differences, which is the engine's overall statistic here: every
task has all its instances) and one test per task.  ``votebench compare`` also runs the paired bootstrap (its
interval) and the task-level Friedman test; scipy runs the permutation tests only.

The machine is shared with other jobs: the load average at the start and end of every run is recorded, and CPU
time is the figure least disturbed by it.

Run: ``python benchmarks/bench_compare.py [--quick] [--runs N] [--resamples R]``; results go to
``benchmarks/results/compare.md`` and ``compare.json`` (not with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _machine import machine_info  # the script's own folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS, TASKS = 4, 3

SCIPY_PEER = r"""
import sys, numpy as np, pandas as pd
from scipy import stats
path, R = sys.argv[1], int(sys.argv[2])
df = pd.read_csv(path)
Y = df.pivot_table(index=["system", "task"], columns="instance", values="score").sort_index()
systems = sorted(df["system"].unique()); tasks = sorted(df["task"].unique())
A = Y.to_numpy().reshape(len(systems), len(tasks), -1)
stat = lambda x, y, axis: np.mean(x - y, axis=axis)
out = []
for i in range(len(systems)):
    for j in range(i + 1, len(systems)):
        kw = dict(permutation_type="samples", n_resamples=R, vectorized=True, batch=200,
                  random_state=np.random.default_rng(0))
        p = stats.permutation_test((A[i].ravel(), A[j].ravel()), stat, **kw).pvalue
        pt = [stats.permutation_test((A[i, t], A[j, t]), stat, **kw).pvalue for t in range(len(tasks))]
        out.append((systems[i], systems[j], p, pt))
print(out)
"""


def write_table(path: Path, K: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    offsets = np.array([0.0, 0.005, 0.03, 0.06])[:SYSTEMS]
    Y = np.round(rng.normal(size=(SYSTEMS, TASKS, K)) + offsets[:, None, None], 3)
    s, t, k = np.meshgrid(np.arange(SYSTEMS), np.arange(TASKS), np.arange(K), indexing="ij")
    with path.open("w", encoding="utf-8") as fh:
        fh.write("system,task,instance,score\n")
        for a, b, c, v in zip(s.ravel(), t.ravel(), k.ravel(), Y.ravel()):
            fh.write(f"sys{a},task{b},{c},{float(v)!r}\n")


def timed(argv: list[str], label: str) -> dict[str, float]:
    """One fresh process under /usr/bin/time -v: wall, user + system CPU seconds, peak RSS (MB), load averages."""
    load0 = os.getloadavg()[0]
    proc = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} failed ({proc.returncode}): {proc.stderr[-3000:]}")
    err = proc.stderr

    def field(name: str) -> str:
        m = re.search(rf"{re.escape(name)}: (.+)", err)
        assert m, (name, err[-2000:])
        return m.group(1).strip()

    parts = [float(x) for x in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
    wall = sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    return {"wall_s": wall, "cpu_s": float(field("User time (seconds)")) + float(field("System time (seconds)")),
            "peak_rss_mb": int(field("Maximum resident set size (kbytes)")) / 1024.0,
            "load_start": load0, "load_end": os.getloadavg()[0]}


def median_of(argv: list[str], label: str, runs: int) -> dict[str, object]:
    got = [timed(argv, label) for _ in range(runs)]
    print(f"  {label}: " + ", ".join(f"{g['wall_s']:.1f} s wall / {g['cpu_s']:.1f} s CPU / {g['peak_rss_mb']:.0f} MB"
                                     for g in got), flush=True)
    return {"runs": got, **{k: statistics.median(g[k] for g in got) for k in ("wall_s", "cpu_s", "peak_rss_mb")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,200 instances per task, one run, no result files")
    ap.add_argument("--runs", type=int, default=3, help="whole-process runs per case (default 3; the median is kept)")
    ap.add_argument("--resamples", type=int, default=10_000, help="sign patterns and bootstrap replicates (default "
                    "10000, compare's default)")
    ap.add_argument("--no-scipy", action="store_true", help="skip the scipy peer")
    ap.add_argument("--scipy-resamples", type=int, default=1000, help="resamples of the scipy peer (default 1000; its "
                    "times are also given scaled to --resamples, marked extrapolated)")
    ap.add_argument("--scipy-runs", type=int, default=1, help="whole-process runs of the scipy peer (default 1)")
    args = ap.parse_args()
    K = 1200 if args.quick else 12_000
    runs = 1 if args.quick else args.runs
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "scores.csv"
        write_table(table, K)
        cases = [(f"votebench compare (permutation + bootstrap + Friedman), R = {args.resamples}",
                  [sys.executable, "-m", "engine", "compare", str(table), "--resamples", str(args.resamples),
                   "--format", "json", "-o", str(Path(tmp) / "out.json")])]
        for label, argv in cases:
            rows.append({"case": label, **median_of(argv, label, runs)})
        if not args.no_scipy:
            Rs = min(args.resamples, args.scipy_resamples)
            label = f"scipy.stats.permutation_test, every pair: overall + per task, R = {Rs}"
            got = median_of([sys.executable, "-c", SCIPY_PEER, str(table), str(Rs)], label, 1 if args.quick else
                            args.scipy_runs)
            rows.append({"case": label, **got})
            if Rs < args.resamples:
                f = args.resamples / Rs
                rows.append({"case": f"the same scaled to R = {args.resamples} (extrapolated: x{f:g}, fixed costs too)",
                             "wall_s": got["wall_s"] * f, "cpu_s": got["cpu_s"] * f, "peak_rss_mb": got["peak_rss_mb"],
                             "runs": got["runs"], "extrapolated": True})
    for r in rows:
        print(f"{r['wall_s']:8.2f} s wall  {r['cpu_s']:8.2f} s CPU  {r['peak_rss_mb']:7.0f} MB  {r['case']}")
    if args.quick:
        return
    out = ROOT / "benchmarks" / "results"
    info = machine_info(instances_per_task=K, systems=SYSTEMS, tasks=TASKS, resamples=args.resamples)
    (out / "compare.json").write_text(json.dumps({"machine": info, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    md = ["# `votebench compare` on 4 systems x 3 tasks x 12,000 instances (issue 24 target: <= 20 s)", "",
          f"Machine: {info['cpu_model']}, {info['nproc']} usable cores shared with other jobs, {info['date_utc']}; "
          f"load average at the start {info['loadavg_start'][0]:.1f}. Median of {runs} whole-process runs "
          "(`/usr/bin/time -v`); CPU = user + system seconds (the figure least disturbed by the other jobs).", "",
          "| case | wall s | CPU s | peak RSS MB | load avg (first run) |", "|---|---:|---:|---:|---:|"]
    md += [f"| {r['case']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f} | "
           f"{r['runs'][0]['load_start']:.1f} |" for r in rows]
    (out / "compare.md").write_text("\n".join(md) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
