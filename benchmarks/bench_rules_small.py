"""Benchmark: Copeland and the 8 Vote'n'Rank rules on one 1000-system x 50-task table (issue 31).

Cases, each measured in a fresh process (warm-up call, then ``--repeat`` timed calls; the figure is the
median of the timed calls over every round):

* ``copeland``: ``engine.rank(scores, rule="copeland", level="task")``;
* ``rank x 8``: the 8 rules (plurality, borda, dowdall, threshold, baldwin, condorcet, copeland,
  minimax) as eight ``engine.rank`` calls (each rule's own median is reported too);
* ``rank_rules``: one ``engine.rank_rules(scores, RULES, level="task")`` call (one shared win matrix);
* plain numpy floors: Copeland alone, and the 8 rules of ``bench_small.plain_numpy`` (no validation, no
  labels, ties by average ranks; not the engine's exact tie rule).

The table is ``np.round(normal(size=(1000, 50)), 2)`` with seed 0 (rounded: ties occur).  Other versions of
the engine are timed with ``--compare-with LABEL=CHECKOUT`` (``PYTHONPATH`` = that folder, e.g. a
``git worktree add /tmp/wt-old f137c6f``); the processes of the versions are interleaved round by round,
since the machine is shared, and the load average before and after is recorded.  Each process also
prints a digest of its scores, so the report says whether every version gives the same bits.

Run: ``python benchmarks/bench_rules_small.py [--compare-with old=/tmp/wt-old ...] [--rounds 3 --repeat 5]``
(about a minute per version) / ``--quick`` (300 x 20, one round, no result files).
Results: ``benchmarks/results/rules_small.md`` and ``rules_small.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RULES = ["plurality", "borda", "dowdall", "threshold", "baldwin", "condorcet", "copeland", "minimax"]
HERE = Path(__file__).resolve().parent
ENGINE_CASES = ("copeland", "rank x 8", "rank_rules")
NUMPY_CASES = ("numpy copeland", "numpy 8 rules")


def table(systems: int, tasks: int) -> np.ndarray:
    return np.round(np.random.default_rng(0).normal(size=(systems, tasks)), 2)


def numpy_copeland(X: np.ndarray) -> np.ndarray:
    """Copeland in plain numpy on a complete (tasks, systems) matrix: wins, margins, beaten minus beating."""
    wins = (X[:, :, None] > X[:, None, :]).sum(axis=0)
    margin = wins - wins.T
    return (margin > 0).sum(axis=1) - (margin < 0).sum(axis=1)


def timed(fn, repeat: int) -> list[float]:
    fn()  # warm-up: imports, caches
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def digest(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.float64).tobytes()).hexdigest()[:16]


def child(case: str, systems: int, tasks: int, repeat: int) -> dict:
    """One case in this (fresh) process: seconds per timed call, per rule for ``rank x 8``, and result digests."""
    S = table(systems, tasks)
    if case in NUMPY_CASES:
        X = np.ascontiguousarray(S.T)
        if case == "numpy copeland":
            return {"total": timed(lambda: numpy_copeland(X), repeat)}
        from bench_small import plain_numpy  # the script's own folder is on sys.path

        return {"total": timed(lambda: plain_numpy(X), repeat)}
    import engine

    scores = engine.scores_from_array(S)
    if case == "copeland":
        res = {"total": timed(lambda: engine.rank(scores, rule="copeland", level="task"), repeat)}
        res["digest"] = {"copeland": digest(engine.rank(scores, rule="copeland", level="task")["score"].values)}
        return res
    if case == "rank_rules":
        res = {"total": timed(lambda: engine.rank_rules(scores, RULES, level="task"), repeat)}
        one = engine.rank_rules(scores, RULES, level="task")
        res["digest"] = {r: digest(one["score"].sel(rule=r).values) for r in RULES}
        return res
    per: dict[str, list[float]] = {r: [] for r in RULES}
    for r in RULES:
        engine.rank(scores, rule=r, level="task")  # warm-up
    for _ in range(repeat):
        for r in RULES:
            t = time.perf_counter()
            engine.rank(scores, rule=r, level="task")
            per[r].append(time.perf_counter() - t)
    total = [sum(per[r][i] for r in RULES) for i in range(repeat)]
    dig = {r: digest(engine.rank(scores, rule=r, level="task")["score"].values) for r in RULES}
    return {"total": total, "per_rule": per, "digest": dig}


def run_case(root: Path | None, case: str, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = str(root)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", case, "--systems", str(args.systems),
           "--tasks", str(args.tasks), "--repeat", str(args.repeat)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(root or HERE.parent))
    if proc.returncode != 0:
        raise SystemExit(f"{case} ({root}): {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ms(values: list[float]) -> float:
    return 1000 * statistics.median(values)


def measure(versions: dict[str, Path], args: argparse.Namespace) -> dict:
    """Every (version, case) in its own process, versions interleaved round by round."""
    raw: dict[str, dict[str, dict]] = {v: {} for v in [*versions, "numpy"]}
    for _ in range(args.rounds):
        for case in NUMPY_CASES:
            got = run_case(None, case, args)
            raw["numpy"].setdefault(case, {"total": []})["total"] += got["total"]
        for case in ENGINE_CASES:
            for label, root in versions.items():
                got = run_case(root, case, args)
                slot = raw[label].setdefault(case, {"total": [], "per_rule": {}, "digest": got.get("digest")})
                slot["total"] += got["total"]
                for r, v in got.get("per_rule", {}).items():
                    slot["per_rule"].setdefault(r, []).extend(v)
    return raw


def commit(root: Path) -> str:
    """The checked-out commit of ``root`` (no machine path goes into the results)."""
    proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or "?"


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def report(raw: dict, versions: dict[str, Path], args: argparse.Namespace, before: str, after: str) -> list[str]:
    labels = list(versions)
    floor_c = ms(raw["numpy"]["numpy copeland"]["total"])
    floor_8 = ms(raw["numpy"]["numpy 8 rules"]["total"])
    n = args.rounds * args.repeat
    lines = [
        f"# Copeland and the 8 Vote'n'Rank rules on {args.systems} x {args.tasks} (issue 31)",
        "",
        f"Generated by `python benchmarks/bench_rules_small.py` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); "
        f"every case in its own process, a warm-up call, then the median of {n} timed calls "
        f"({args.rounds} rounds x {args.repeat}; versions interleaved). Milliseconds.",
        "",
        f"- load before: `{before}`",
        f"- load after: `{after}`",
        "",
        "| case | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]
    rows = [("`rank`, copeland", "copeland", None), ("8 x `rank` (sum)", "rank x 8", None),
            ("`rank_rules`, 8 rules", "rank_rules", None)]
    rows += [(f"&nbsp;&nbsp;`rank`, {r}", "rank x 8", r) for r in RULES]
    for title, case, rule in rows:
        cells = []
        for v in labels:
            d = raw[v][case]
            cells.append(f"{ms(d['per_rule'][rule] if rule else d['total']):.1f}")
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines += ["", f"Plain numpy floors: Copeland {floor_c:.1f} ms, the 8 rules {floor_8:.1f} ms.", ""]
    for v in labels:
        c, e8, rr = (ms(raw[v][k]["total"]) for k in ENGINE_CASES)
        lines.append(f"- {v}: copeland / numpy Copeland = {c / floor_c:.2f}x; 8 x `rank` / numpy 8 rules = "
                     f"{e8 / floor_8:.2f}x; `rank_rules` / numpy 8 rules = {rr / floor_8:.2f}x")
    ref = labels[0]
    same = {v: all(raw[v][k]["digest"] == raw[ref][k]["digest"] for k in ENGINE_CASES) for v in labels}
    lines += ["", "Same score bits as " + f"`{ref}` (every case and rule): "
              + ", ".join(f"{v} {'yes' if s else 'NO'}" for v, s in same.items()) + "."]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--compare-with", action="append", default=[], metavar="LABEL=CHECKOUT",
                    help="another checkout to time (its folder becomes PYTHONPATH)")
    ap.add_argument("--label", default="this checkout", help="the name of this checkout in the report")
    ap.add_argument("--systems", type=int, default=1000)
    ap.add_argument("--tasks", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="300 x 20, one round of 3: a smoke run, no result files")
    ap.add_argument("--out", default=str(HERE / "results" / "rules_small.md"))
    ap.add_argument("--child", choices=[*ENGINE_CASES, *NUMPY_CASES], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.systems, args.tasks, args.repeat)))
        return
    if args.quick:
        args.systems, args.tasks, args.rounds, args.repeat = 300, 20, 1, 3
    versions: dict[str, Path] = {}
    for item in args.compare_with:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            ap.error(f"--compare-with {item!r}: expected LABEL=CHECKOUT")
        versions[label] = Path(path).resolve()
    versions[args.label] = HERE.parent
    before = uptime()
    raw = measure(versions, args)
    after = uptime()
    lines = report(raw, versions, args, before, after)
    print("\n".join(lines))
    if not args.quick:
        out = Path(args.out)
        out.write_text("\n".join(lines) + "\n")
        info = {"systems": args.systems, "tasks": args.tasks, "rounds": args.rounds, "repeat": args.repeat,
                "uptime_before": before, "uptime_after": after, "versions": {k: commit(v) for k, v in versions.items()}}
        out.with_suffix(".json").write_text(json.dumps({"setup": info, "seconds": raw}, indent=1) + "\n")


if __name__ == "__main__":
    main()
