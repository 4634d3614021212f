"""Benchmark: how far one request wanders -- the engine modules a command imports, how often it opens its input,
plans (``prepare``) and validates the tensor.

Runs one ``votebench`` command in a fresh process of a checkout (``PYTHONPATH`` = that checkout), with

* Python's audit hook counting every ``open`` of the input file (``builtins.open``, ``io.open``, ``os.open``,
  ``gzip.open``; readers that open files in C, such as pyarrow's CSV reader, are not seen: the count is a lower bound);
* the planning step (``prepare``) and the tensor check (``validate_scores``) wrapped to count their calls, and
  the plans made (``Plan`` objects built: a request planned once is one plan however many steps ask for it), found
  in ``engine.labelled`` (this layout) or directly under ``engine`` (the layout before it);
* ``sys.modules`` read at exit: the ``engine`` modules the command imported.

Run: ``python benchmarks/bench_request_trace.py [--checkout LABEL=DIR ...]``; writes
``benchmarks/results/request_trace.json`` and prints the Markdown table of ``benchmarks/results/request_trace.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
INPUT = "data/colombo_tac08.csv.gz"
COMMAND = ["bootstrap", INPUT, "--level", "two", "--over", "instances", "--replicates", "200", "--store", "{store}",
           "--no-progress"]

TRACER = r'''
import atexit, importlib, json, sys
target = sys.argv[1]
opens = []
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)) and str(args[0]).endswith(target):
        opens.append(str(args[0]))
sys.addaudithook(hook)
counts = {"prepare": 0, "plans": 0, "validate_scores": 0}
import os
def here(m):  # a module of the checkout run (not one an editable install of another checkout would supply)
    return os.path.exists(m.replace(".", "/") + ".py")
def wrap(modnames, name):
    for m in modnames:
        if not here(m):
            continue
        try:
            mod = importlib.import_module(m)
        except ImportError:
            continue
        if hasattr(mod, name):
            f = getattr(mod, name)
            def counted(*a, __f=f, __n=name, **k):
                counts[__n] += 1
                return __f(*a, **k)
            setattr(mod, name, counted)
            return
wrap(["engine.labelled.canonical", "engine.canonical"], "validate_scores")
wrap(["engine.labelled.core", "engine.core"], "prepare")
for m in ["engine.labelled.core", "engine.core"]:
    if not here(m):
        continue
    try:
        Plan = importlib.import_module(m).Plan
    except ImportError:
        continue
    init = Plan.__init__
    def made(self, *a, __init=init, **k):
        counts["plans"] += 1
        __init(self, *a, **k)
    Plan.__init__ = made
    break
def report():
    mods = sorted(m for m in sys.modules if m == "engine" or m.startswith("engine."))
    sys.stderr.write("TRACE " + json.dumps({"modules": len(mods), "module_names": mods, "opens": len(opens), **counts}) + "\n")
atexit.register(report)
from engine.app.cli import main
sys.exit(main(sys.argv[2:]))
'''


def trace(checkout: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "tac08.zarr")
        args = [a.replace("{store}", store) for a in COMMAND]
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        res = subprocess.run([sys.executable, "-c", TRACER, Path(INPUT).name, *args], cwd=checkout, env=env,
                             capture_output=True, text=True, check=False)
    line = next((ln for ln in res.stderr.splitlines() if ln.startswith("TRACE ")), None)
    if res.returncode != 0 or line is None:
        raise SystemExit(f"{checkout}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return json.loads(line[6:])


def timed(checkout: Path) -> tuple[float, float]:
    """Wall seconds and the children's peak RSS (MiB, the largest so far) of one untraced run of the command."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [a.replace("{store}", str(Path(tmp) / "tac08.zarr")) for a in COMMAND]
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "engine", *args], cwd=checkout, env=env, capture_output=True, check=True)
        wall = time.perf_counter() - t0
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", action="append", default=[], metavar="LABEL=DIR",
                    help="another checkout to trace beside this one (e.g. before=../old)")
    ap.add_argument("--rounds", type=int, default=3, help="untraced timed runs per checkout, interleaved (default 3)")
    a = ap.parse_args()
    runs = {"this checkout": REPO, **{c.split("=", 1)[0]: Path(c.split("=", 1)[1]) for c in a.checkout}}
    out = {label: trace(path) for label, path in runs.items()}
    walls: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(a.rounds):
        for label, path in runs.items():
            walls[label].append(timed(path)[0])
    for label in runs:
        out[label]["wall_s"] = walls[label]
    out["load_average"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "request_trace.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"`votebench {' '.join(COMMAND)}`\n")
    print("| checkout | engine modules imported | opens of the input (Python-level) | `prepare` calls | plans made | "
          "`validate_scores` calls | wall s (median of the untraced runs) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label in runs:
        r = out[label]
        print(f"| {label} | {r['modules']} | {r['opens']} | {r['prepare']} | {r['plans']} | {r['validate_scores']} | "
              f"{statistics.median(r['wall_s']):.2f} |")
    print(f"\nload average during the runs: {', '.join(f'{v:.1f}' for v in out['load_average'])}")


if __name__ == "__main__":
    main()
