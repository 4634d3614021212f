"""Benchmark: the cost of the letter groups (``engine.letter_groups``) in the report and the dashboard.

* ``engine.letter_groups`` on the shipped Colombo TAC08 set (62 systems x 15 tasks x 48 instances; the 15 best by
  mean, 105 pairs) with the report's and dashboard's 4000 sign patterns per pair and ``votebench compare``'s 10000,
  and on Vote'n'Rank's GLUE table (97 x 14, task level: Friedman then Nemenyi or Wilcoxon-Holm);
* the whole ``votebench report`` of TAC08 (mean and Borda, no bootstrap, no subset curves, PNG only) with the
  section (``paired_top_k=15``) and without it (``paired_top_k=0``).

Timings are the best of several repeats (the machine is shared). Results go to
``benchmarks/results/report_paired.md`` and ``report_paired.json``.

Run: ``python benchmarks/bench_report_paired.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from _machine import machine_info  # the script's own folder is on sys.path

import engine
from engine.app.report import build_report

ROOT = Path(__file__).resolve().parents[1]
TAC08 = ROOT / "data" / "colombo_tac08.csv.gz"
GLUE = ROOT / "data" / "vnr_glue.csv"


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repeat, no result files")
    args = ap.parse_args()
    repeat = 1 if args.quick else 3
    tac = engine.open_scores(TAC08).compute()
    glue = engine.open_scores(GLUE).compute()
    rows = []
    for R in (4000, 10_000):
        g = engine.letter_groups(tac, resamples=R)
        rows.append({"case": f"letter_groups TAC08, 15 of 62 systems, {R} sign patterns", "seconds":
                     best(lambda R=R: engine.letter_groups(tac, resamples=R), repeat),
                     "pairs_different": sum(p["different"] for p in g["pairs"]), "pairs": len(g["pairs"])})
    g = engine.letter_groups(glue)
    rows.append({"case": f"letter_groups GLUE, 15 of {g['candidates']} systems, task level ({g['test']})",
                 "seconds": best(lambda: engine.letter_groups(glue), repeat),
                 "pairs_different": sum(p["different"] for p in g["pairs"]), "pairs": len(g["pairs"])})
    tmp = Path(tempfile.mkdtemp())
    try:
        for k in (15, 0):
            def run(k=k):
                build_report(tac, tmp / "r", rules=["mean", "borda"], replicates=0, repeats=0, formats=("png",),
                             paired_top_k=k)
            rows.append({"case": f"report TAC08 (mean, borda; no bootstrap, no subsets), paired_top_k={k}",
                         "seconds": best(run, repeat)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for r in rows:
        print(f"{r['seconds']:8.3f} s  {r['case']}")
    if args.quick:
        return
    out = ROOT / "benchmarks" / "results"
    info = machine_info()
    (out / "report_paired.json").write_text(json.dumps({"machine": info, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    md = ["# Letter groups in the report and the dashboard", "",
          f"Machine: {info['cpu_model']}, {info['nproc']} usable cores (shared with other jobs), {info['date_utc']}; "
          f"best of {repeat}.", "", "| case | seconds | pairs different |", "|---|---:|---:|"]
    md += [f"| {r['case']} | {r['seconds']:.3f} | "
           f"{str(r['pairs_different']) + ' of ' + str(r['pairs']) if 'pairs' in r else ''} |" for r in rows]
    (out / "report_paired.md").write_text("\n".join(md) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
