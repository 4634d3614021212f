"""Benchmark: start-up of the command line, and several inputs in one process.

1. **Start-up**: whole-process wall time of ``votebench rank`` on a small table (``data/vnr_value.csv``,
   7 systems x 11 tasks, the table of issue 16; ``--rule copeland`` by default, as in issue 24) against
   ``python -c "import xarray"``, in the same run,
   interleaved (each round runs every command once, in turn), median and minimum of ``--runs`` rounds.
   Target: the median of ``votebench rank`` within 1.3x that of ``import xarray``.  Also timed: ``import
   engine`` and, with ``--compare-with CHECKOUT``, the same ``rank`` with the engine of another checkout
   (e.g. the version before the start-up work), run as ``python -m engine.app.cli`` from that folder.  The
   modules a small ``rank`` imports are listed (it must not import dask, distributed, matplotlib, tornado,
   zarr).

   Bytecode: every command runs with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed from its
   environment), as on a user's machine, where the warm-up round writes the engine's ``.pyc`` files once (pip
   byte-compiles xarray's at install).  A machine that sets ``PYTHONDONTWRITEBYTECODE=1`` (this project's
   development sandbox does) compiles the engine's ~100 modules from source in every process while xarray's
   stay cached; that case is timed too, as its own row, and is not the user's start-up.
2. **Nine inputs**: ranking the nine instance-level datasets of Colombo et al. (2022), 276,276 scores
   (``data/colombo_*.csv.gz``, two-level Borda), with one ``votebench rank`` per file against one
   ``votebench rank`` with all nine inputs; median of ``--nine-runs`` repetitions.

Writes ``benchmarks/results/startup.md`` and ``startup.json``.

Usage::

    python benchmarks/bench_startup.py                       # 15 rounds, 3 repetitions of the nine-file job
    python benchmarks/bench_startup.py --quick               # smoke run (3 rounds, 1 repetition)
    python benchmarks/bench_startup.py --compare-with ../old-checkout
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _machine import machine_info  # the script's own folder is on sys.path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SMALL = "data/vnr_value.csv"
NINE = sorted(str(p.relative_to(REPO)) for p in (REPO / "data").glob("colombo_*.csv.gz"))
HEAVY = ("dask", "distributed", "matplotlib", "tornado", "zarr", "numba", "scipy")
TARGET = 1.3

_MODULES = """
import contextlib, io, json, sys
from engine.app.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(["rank", {small!r}, "--missing", "listwise", "--rule", {rule!r}])
top = sorted({{m.split(".")[0] for m in sys.modules}})
print(json.dumps({{"code": code, "n_modules": len(sys.modules), "top_level": top}}))
"""


def _votebench() -> list[str]:
    """The ``votebench`` console script of this Python (what a user runs), else ``python -m engine.app.cli``."""
    script = Path(sys.executable).with_name("votebench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "engine.app.cli"]


def _wall(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path = REPO) -> float:
    """Wall time of one process (from spawn to exit); a failing command stops the benchmark."""
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"bench_startup: {' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")
    return dt


def _stats(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def _git_commit(folder: Path) -> str | None:
    if shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or None


def bench_startup(runs: int, compare_with: Path | None, rule: str = "copeland") -> dict[str, Any]:
    vb = _votebench()
    opts = ["--missing", "listwise", "--rule", rule]
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # a user's machine: .pyc kept
    uncached = {**cached, "PYTHONDONTWRITEBYTECODE": "1"}
    commands: dict[str, tuple[list[str], dict[str, str] | None, Path]] = {
        "python -c 'import xarray'": ([sys.executable, "-c", "import xarray"], cached, REPO),
        f"votebench rank {SMALL} {' '.join(opts)}": ([*vb, "rank", SMALL, *opts], cached, REPO),
        "python -c 'import engine'": ([sys.executable, "-c", "import engine"], cached, REPO),
        f"votebench rank {SMALL} {' '.join(opts)} (PYTHONDONTWRITEBYTECODE=1: engine compiled from source every run)":
            ([*vb, "rank", SMALL, *opts], uncached, REPO),
    }
    if compare_with is not None:
        env = {**cached, "PYTHONPATH": str(compare_with)}
        small = str(REPO / SMALL)
        commands["python -m engine.app.cli rank (this checkout)"] = (
            [sys.executable, "-m", "engine.app.cli", "rank", small, *opts],
            {**cached, "PYTHONPATH": str(REPO)}, REPO)
        commands["python -m engine.app.cli rank (compared checkout)"] = (
            [sys.executable, "-m", "engine.app.cli", "rank", small, *opts], env, compare_with)
    for cmd, env, cwd in commands.values():  # warm the file cache once
        _wall(cmd, env=env, cwd=cwd)
    times: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, (cmd, env, cwd) in commands.items():
            times[name].append(_wall(cmd, env=env, cwd=cwd))
    out = {name: _stats(v) for name, v in times.items()}
    xr_key, rank_key, _, uncached_key = list(commands)[:4]
    ratio = out[rank_key]["median"] / out[xr_key]["median"]
    ratio_uncached = out[uncached_key]["median"] / out[xr_key]["median"]
    proc = subprocess.run([sys.executable, "-c", _MODULES.format(small=SMALL, rule=rule)], cwd=REPO, capture_output=True,
                          text=True)
    mods = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"commands": out, "ratio_median": ratio, "ratio_median_uncached": ratio_uncached, "target": TARGET,
            "environment_had_pythondontwritebytecode": "PYTHONDONTWRITEBYTECODE" in os.environ, "meets_target": ratio <= TARGET,
            "heavy_imported": sorted(set(mods["top_level"]) & set(HEAVY)), "n_modules": mods["n_modules"],
            "compared_commit": None if compare_with is None else _git_commit(compare_with)}


def bench_nine(reps: int) -> dict[str, Any]:
    vb = _votebench()
    one_per_file, all_in_one = [], []
    for _ in range(reps):
        one_per_file.append(sum(_wall([*vb, "rank", f, "--level", "two"]) for f in NINE))
        all_in_one.append(_wall([*vb, "rank", *NINE, "--level", "two"]))
    return {"files": NINE, "nine_processes": _stats(one_per_file), "one_process": _stats(all_in_one),
            "speedup_median": statistics.median(one_per_file) / statistics.median(all_in_one)}


def render(res: dict[str, Any]) -> str:
    s, n, m = res["startup"], res["nine"], res["machine"]
    lines = [
        "# Start-up and several inputs in one process",
        "",
        f"Generated by `python benchmarks/bench_startup.py` ({m['date_utc']}); {m['nproc']} usable cores "
        f"({m['cpu_model']}), load average at start {tuple(round(v, 2) for v in m['loadavg_start'])}, at end "
        f"{tuple(round(v, 2) for v in res['loadavg_end'])}; Python {m['python']}, numpy {m['numpy']}, xarray "
        f"{m['xarray']}, dask {m['dask']}. Whole-process wall times (spawn to exit), {res['runs']} interleaved rounds "
        "after one warm-up round; the machine is shared, so medians are the figures to read.",
        "",
        "## Start-up",
        "",
        "| command | median s | min s | max s |",
        "|---|---:|---:|---:|",
    ]
    for name, st in s["commands"].items():
        lines.append(f"| `{name}` | {st['median']:.3f} | {st['min']:.3f} | {st['max']:.3f} |")
    lines += [
        "",
        f"- `votebench rank` / `import xarray` (medians): **{s['ratio_median']:.2f}x** (target <= {s['target']}x: "
        f"{'met' if s['meets_target'] else 'NOT met'}), with the bytecode cache on, as on a user's machine.",
        f"- Without it (`PYTHONDONTWRITEBYTECODE=1`: every engine module compiled from source in every process, "
        f"xarray's still cached by pip): {s['ratio_median_uncached']:.2f}x. Earlier versions of this file measured "
        "only that case, because the development sandbox sets the variable.",
        f"- A small `rank` imports {s['n_modules']} modules; of {', '.join(HEAVY)} it imports: "
        f"{', '.join(s['heavy_imported']) or 'none'}.",
    ]
    if s.get("compared_commit") is not None or any("compared" in k for k in s["commands"]):
        lines.append(f"- Compared checkout: commit {s.get('compared_commit') or 'unknown'} (its engine run as "
                     "`python -m engine.app.cli` from its folder, same Python and libraries).")
    lines += [
        "",
        "## The 270k-score job: nine datasets",
        "",
        f"Two-level Borda on the nine instance-level datasets of Colombo et al. (2022) (`data/colombo_*.csv.gz`, "
        f"276,276 scores), {n['nine_processes']['runs'].__len__()} repetitions:",
        "",
        "| how | median s | min s |",
        "|---|---:|---:|",
        f"| nine `votebench rank FILE --level two` processes (sum) | {n['nine_processes']['median']:.2f} | "
        f"{n['nine_processes']['min']:.2f} |",
        f"| one `votebench rank data/colombo_*.csv.gz --level two` | {n['one_process']['median']:.2f} | "
        f"{n['one_process']['min']:.2f} |",
        "",
        f"One process is {n['speedup_median']:.1f}x faster (medians).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="interleaved start-up rounds (default 15)")
    ap.add_argument("--nine-runs", type=int, default=3, help="repetitions of the nine-file job (default 3)")
    ap.add_argument("--compare-with", type=Path, default=None, metavar="CHECKOUT",
                    help="another checkout of votebench whose `rank` start-up is timed too")
    ap.add_argument("--quick", action="store_true", help="3 rounds, 1 repetition (smoke run, not reference figures)")
    ap.add_argument("--out", type=Path, default=RESULTS / "startup.md")
    ap.add_argument("--rule", default="copeland", help="rule of the timed `rank` (default copeland, as in issue 24)")
    args = ap.parse_args()
    runs, reps = (3, 1) if args.quick else (args.runs, args.nine_runs)
    compare = args.compare_with.resolve() if args.compare_with else None
    if compare is not None and not (compare / "engine" / "cli.py").is_file():
        sys.exit(f"bench_startup: {args.compare_with} is not a votebench checkout (no engine/app/cli.py)")
    res: dict[str, Any] = {"machine": machine_info(), "runs": runs}
    res["startup"] = bench_startup(runs, compare, args.rule)
    res["nine"] = bench_nine(reps)
    res["loadavg_end"] = os.getloadavg()
    text = render(res)
    if args.quick:
        print(text)
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
