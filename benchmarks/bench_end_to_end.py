"""Benchmark: every sub-command as a whole process (spawn to exit) at real sizes, before and after (issue 24).

Inputs: the 97 x 14 GLUE table (``data/vnr_glue.csv``, ``--missing listwise``), a 300 x 80 synthetic table
(written here, seed 0), TAC 2008 (``data/colombo_tac08.csv.gz``) and its 200-replicate bootstrap store
(``bootstrap --level two --over instances --replicates 200 --store``), MLQE (``data/colombo_mlqe.csv.gz``).
Each command runs ``--runs`` times (median wall time, peak resident memory of the process from ``wait4``);
a command over ``--timeout`` seconds is stopped and recorded as such, and not repeated.  A crash is
recorded with its last stderr line.

With ``--before CHECKOUT`` the same commands run with the engine of that checkout (``PYTHONPATH``), e.g.
the main branch before this work.  With ``--peer-python PYTHON`` (a venv with ``autorank`` installed), the
nearest peer of ``report``'s statistics is timed too: ``autorank()`` + ``create_report`` on the same
table (Friedman / Nemenyi and the CD summary; no bootstrap, no figures).

Writes ``benchmarks/results/end_to_end.md`` and ``end_to_end.json``.

Usage::

    python benchmarks/bench_end_to_end.py --runs 3 --before ../main --peer-python /tmp/ar/bin/python
    python benchmarks/bench_end_to_end.py --only report --runs 1      # one sub-command
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _machine import machine_info  # the script's own folder is on sys.path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
GLUE = "data/vnr_glue.csv"
TAC = "data/colombo_tac08.csv.gz"
MLQE = "data/colombo_mlqe.csv.gz"

_PEER = """
import sys, time, pandas as pd
from autorank import autorank, create_report
import contextlib, io
t = time.perf_counter()
df = pd.read_csv(sys.argv[1], index_col=0).dropna().T
res = autorank(df, alpha=0.05, verbose=False, force_mode="nonparametric")
with contextlib.redirect_stdout(io.StringIO()):
    create_report(res)
"""


def synthetic(path: Path, systems: int = 300, tasks: int = 80, seed: int = 0) -> Path:
    """A wide CSV of ``systems`` x ``tasks`` scores: system quality + task noise, rounded to 0.01."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=systems)
    X = np.round(50 + 10 * (q[:, None] + rng.normal(size=(systems, tasks))), 2)
    lines = ["System," + ",".join(f"t{j:02d}" for j in range(tasks))]
    lines += [f"sys{i:03d}," + ",".join(map(str, X[i])) for i in range(systems)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_once(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict[str, Any]:
    """Wall time, peak RSS (MB) and the outcome of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            return {"seconds": time.perf_counter() - t0, "rss_mb": usage.ru_maxrss / 1024, "outcome": "timeout"}
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    last = (err.strip().splitlines() or [""])[-1][:160]
    return {"seconds": wall, "rss_mb": usage.ru_maxrss / 1024, "outcome": "ok" if code == 0 else f"exit {code}: {last}"}


def commands(work: Path, syn: Path) -> list[tuple[str, str, list[str]]]:
    """(sub-command, input label, votebench arguments); ``{out}`` is replaced by a fresh folder per run."""
    store = str(work / "tac08_200.zarr")
    return [
        ("rank", "glue", ["rank", GLUE, "--missing", "listwise"]),
        ("rank", "300x80", ["rank", str(syn), "--rule", "bradley_terry"]),
        ("rank", "tac08", ["rank", TAC, "--level", "two"]),
        ("rank", "mlqe", ["rank", MLQE]),
        ("rules", "-", ["rules"]),
        ("condorcet", "glue", ["condorcet", GLUE, "--missing", "listwise"]),
        ("condorcet", "300x80", ["condorcet", str(syn)]),
        ("bootstrap", "glue", ["bootstrap", GLUE, "--missing", "listwise"]),
        ("bootstrap", "300x80 bradley_terry", ["bootstrap", str(syn), "--rule", "bradley_terry"]),
        ("bootstrap", "tac08 --store (200 replicates)", ["bootstrap", TAC, "--level", "two", "--over", "instances",
                                                        "--replicates", "200", "--store", store, "--overwrite"]),
        ("bootstrap", "tac08 store resumed", ["bootstrap", TAC, "--level", "two", "--over", "instances",
                                              "--replicates", "200", "--store", store]),
        ("compare", "tac08", ["compare", TAC]),
        ("compare", "mlqe", ["compare", MLQE]),
        ("agreement", "vnr_glue vs colombo_glue", ["agreement", GLUE, "data/colombo_glue.csv"]),
        ("convert", "mlqe", ["convert", MLQE, "{out}/mlqe.zarr"]),
        ("report", "glue", ["report", GLUE, "--missing", "listwise", "--out", "{out}/r"]),
        ("report", "300x80", ["report", str(syn), "--out", "{out}/r"]),
        ("report", "tac08 store (200 replicates)", ["report", store, "--out", "{out}/r"]),
    ]


def bench(label: str, engine_root: Path, work: Path, syn: Path, runs: int, timeout: float,
          only: list[str]) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(engine_root)}
    rows = []
    for name, inp, args in commands(work, syn):
        if only and name not in only:
            continue
        got = []
        for r in range(runs):
            out = Path(tempfile.mkdtemp(dir=work))
            argv = [sys.executable, "-m", "engine", *[a.replace("{out}", str(out)) for a in args], "--no-progress"]
            if label.startswith("before"):
                argv.remove("--no-progress")  # not a flag there (stderr is a pipe: no bar anyway)
            one = run_once(argv, env, REPO, timeout)
            got.append(one)
            print(f"{label:>8} {name:<10} {inp:<32} run {r + 1}: {one['seconds']:7.1f} s {one['rss_mb']:7.0f} MB "
                  f"{one['outcome']}", flush=True)
            if one["outcome"] != "ok":
                break
        ok = [g for g in got if g["outcome"] == "ok"]
        rows.append({"command": name, "input": inp, "args": args, "runs": got,
                     "median_s": statistics.median(g["seconds"] for g in ok) if ok else None,
                     "peak_mb": max(g["rss_mb"] for g in got),
                     "outcome": "ok" if len(ok) == len(got) else got[-1]["outcome"]})
    return rows


def peer(python: str, work: Path, syn: Path, runs: int, timeout: float) -> list[dict[str, Any]]:
    """autorank() + create_report on the same tables (the statistics part of ``report``)."""
    script = work / "peer.py"
    script.write_text(_PEER, encoding="utf-8")
    rows = []
    for inp, path in (("glue", str(REPO / GLUE)), ("300x80", str(syn))):
        got = [run_once([python, str(script), path], dict(os.environ), REPO, timeout) for _ in range(runs)]
        ok = [g for g in got if g["outcome"] == "ok"]
        rows.append({"command": "autorank + create_report", "input": inp, "runs": got,
                     "median_s": statistics.median(g["seconds"] for g in ok) if ok else None,
                     "peak_mb": max(g["rss_mb"] for g in got), "outcome": "ok" if ok else got[-1]["outcome"]})
    return rows


def _cell(row: dict[str, Any] | None, timeout: float) -> tuple[str, str]:
    if row is None:
        return "-", "-"
    if row["outcome"] == "timeout":
        return f"> {timeout:.0f} (stopped)", f"{row['peak_mb']:.0f}+"
    if row["outcome"] != "ok":
        return f"crash ({row['outcome']})", f"{row['peak_mb']:.0f}"
    return f"{row['median_s']:.1f}", f"{row['peak_mb']:.0f}"


def render(res: dict[str, Any]) -> str:
    m, t = res["machine"], res["timeout"]
    before = {(r["command"], r["input"]): r for r in res.get("before", [])}
    lines = ["# Whole commands at real sizes (issue 24)", "",
             f"Generated by `python benchmarks/bench_end_to_end.py` ({m['date_utc']}); {m['nproc']} usable cores "
             f"({m['cpu_model']}), load average at start {tuple(round(v, 2) for v in m['loadavg_start'])}, at end "
             f"{tuple(round(v, 2) for v in res['loadavg_end'])}; Python {m['python']}, numpy {m['numpy']}. "
             f"Whole processes (`python -m engine ...`, spawn to exit), median of {res['runs']} runs, peak resident "
             f"memory of the process; a run over {t:.0f} s is stopped. Before: {res.get('before_label', '-')}; "
             f"after: {res['after_label']}. The machine is shared with other jobs, so read the ratios more than "
             "the seconds.", "",
             "| command | input | before s | before MB | after s | after MB |", "|---|---|---:|---:|---:|---:|"]
    for r in res["after"]:
        b = before.get((r["command"], r["input"]))
        bs, bm = _cell(b, t)
        a_s, am = _cell(r, t)
        lines.append(f"| {r['command']} | {r['input']} | {bs} | {bm} | {a_s} | {am} |")
    if res.get("peer"):
        lines += ["", "## Nearest peer: autorank", "",
                  "`autorank()` + `create_report` (Friedman / Nemenyi or the parametric tests it picks, its text "
                  "report; no bootstrap, no figures, no other rules) on the same tables: what `report`'s "
                  "critical-difference section computes.", "",
                  "| peer | input | s | MB |", "|---|---|---:|---:|"]
        for r in res["peer"]:
            s, mb = _cell(r, t)
            lines.append(f"| {r['command']} | {r['input']} | {s} | {mb} |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is stopped (default 300)")
    ap.add_argument("--before", type=Path, default=None, metavar="CHECKOUT", help="also time this checkout's engine")
    ap.add_argument("--before-runs", type=int, default=1, help="runs of the before checkout (default 1)")
    ap.add_argument("--before-label", default=None, help="name of the before checkout (default: its git commit)")
    ap.add_argument("--peer-python", default=None, metavar="PYTHON", help="a Python with autorank installed")
    ap.add_argument("--only", action="append", default=[], metavar="COMMAND", help="only this sub-command (repeatable)")
    ap.add_argument("--out", type=Path, default=RESULTS / "end_to_end.md")
    args = ap.parse_args()
    res: dict[str, Any] = {"machine": machine_info(), "runs": args.runs, "timeout": args.timeout}
    with tempfile.TemporaryDirectory(prefix="votebench-e2e-") as tmp:
        work = Path(tmp)
        syn = synthetic(work / "synthetic_300x80.csv")
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        res["after_label"] = f"this checkout ({head.stdout.strip() or 'unknown'})"
        if args.before is not None:
            b = subprocess.run(["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"], capture_output=True,
                               text=True)
            name = args.before_label or f"commit {b.stdout.strip() or 'unknown'}"
            res["before_label"] = f"{name}, {args.before_runs} run(s)"
            res["before"] = bench("before", args.before.resolve(), work, syn, args.before_runs, args.timeout, args.only)
        res["after"] = bench("after", REPO, work, syn, args.runs, args.timeout, args.only)
        if args.peer_python:
            res["peer"] = peer(args.peer_python, work, syn, args.runs, args.timeout)
    res["loadavg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(res), encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    print(render(res))


if __name__ == "__main__":
    main()
