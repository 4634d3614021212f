"""Benchmark: small in-memory requests and several rules on the same data.

Two cases of the issue "Self-contained ... fast start-up" (item 3):

* the 8 Vote'n'Rank rules (plurality, borda, dowdall, threshold, baldwin, condorcet, copeland,
  minimax) on Vote'n'Rank's GLUE table (97 systems x 14 tasks, listwise): eight
  ``engine.aggregate`` calls, one ``engine.rank_rules`` call, and a plain numpy implementation
  of the same eight rules written here (ties by average ranks, no validation, no labels);
* the same 8 rules on a synthetic 1000 x 50 table: eight ``engine.aggregate`` calls against one
  ``engine.rank_rules`` call (which shares the pairwise win matrix between the majority rules).

Timings are the best of several repeats (the machine is shared). Targets: GLUE under 3x plain
numpy; 1000 x 50 at most 200 ms. Results go to ``benchmarks/results/small.md`` and ``small.json``.

Run: ``python benchmarks/bench_small.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _machine import machine_info  # the script's own folder is on sys.path

import engine
import engine.labelled.core

RULES = ["plurality", "borda", "dowdall", "threshold", "baldwin", "condorcet", "copeland", "minimax"]
DATA = Path(__file__).resolve().parents[1] / "data" / "vnr_glue.csv"


def best(fn, repeat: int, number: int = 1) -> float:
    fn()
    out = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        out = min(out, (time.perf_counter() - t) / number)
    return out


# ------------------------------------------------------------------------------ plain numpy reference
def _avg_ranks(X: np.ndarray) -> np.ndarray:
    """Ascending average ranks (0-based) of every row: Borda points with ties as halves."""
    order = X.argsort(axis=1)
    s = np.take_along_axis(X, order, axis=1)
    T, S = X.shape
    pos = np.broadcast_to(np.arange(S, dtype=float), (T, S)).copy()
    new = np.ones((T, S), bool)
    new[:, 1:] = s[:, 1:] != s[:, :-1]
    start = np.maximum.accumulate(np.where(new, np.arange(S), 0), axis=1)
    end = np.where(np.append(new[:, 1:], np.ones((T, 1), bool), axis=1), np.arange(S), S)[:, ::-1]
    end = np.minimum.accumulate(end, axis=1)[:, ::-1]
    pos[:] = (start + end) / 2.0
    out = np.empty_like(pos)
    np.put_along_axis(out, order, pos, axis=1)
    return out


def plain_numpy(X: np.ndarray) -> dict[str, np.ndarray]:
    """The 8 rules in straightforward numpy on a complete (tasks, systems) matrix (higher is better)."""
    T, S = X.shape
    pts = _avg_ranks(X)  # 0 .. S-1, higher better
    top = X == X.max(axis=1, keepdims=True)
    plurality = (top / top.sum(axis=1, keepdims=True)).sum(axis=0)
    borda = pts.sum(axis=0)
    dowdall = (1.0 / (S - pts)).sum(axis=0)  # position 1 = best (ties approximated by the average rank)
    last = (pts == pts.min(axis=1, keepdims=True)).sum(axis=0)
    threshold = -last.astype(float)  # first vector of the threshold rule only
    wins = (X[:, :, None] > X[:, None, :]).sum(axis=0)
    margin = wins - wins.T
    copeland = (margin > 0).sum(axis=1) - (margin < 0).sum(axis=1)
    condorcet = ((margin > 0).sum(axis=1) == S - 1).astype(float)
    minimax = -np.where(margin.T > 0, wins.T, 0).max(axis=1)
    P = wins + 0.5 * (T - wins - wins.T - T * np.eye(S))  # wins + half the ties, per pair
    alive = np.ones(S, bool)
    baldwin = np.zeros(S)
    for rnd in range(S):  # Baldwin: Borda among the alive systems = row sums of P over them
        if alive.sum() <= 1:
            break
        b = np.where(alive, P[:, alive].sum(axis=1), np.inf)
        out = alive & (b == b[alive].min())
        if out.sum() == alive.sum():
            break
        baldwin[out] = rnd
        alive &= ~out
    baldwin[alive] = S
    return {"plurality": plurality, "borda": borda, "dowdall": dowdall, "threshold": threshold, "baldwin": baldwin,
            "condorcet": condorcet, "copeland": copeland, "minimax": minimax}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats and a 300 x 20 synthetic table")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "small.md"))
    args = ap.parse_args()
    repeat = 3 if args.quick else 15
    glue = engine.open_scores(DATA)
    X = np.asarray(engine.labelled.core.task_scores(glue, missing="listwise").transpose("task", "system").values)
    X = X[:, ~np.isnan(X).any(axis=0)]
    res: dict[str, float] = {}
    res["glue_plain_numpy_ms"] = 1000 * best(lambda: plain_numpy(X), repeat, 10)
    res["glue_8_aggregate_ms"] = 1000 * best(lambda: [engine.aggregate(glue, rule=r, missing="listwise") for r in RULES],
                                             repeat, 3)
    res["glue_rank_rules_ms"] = 1000 * best(lambda: engine.rank_rules(glue, RULES, missing="listwise"), repeat, 3)
    S, T = (300, 20) if args.quick else (1000, 50)
    rng = np.random.default_rng(0)
    big = engine.scores_from_array(np.round(rng.normal(size=(S, T)), 2))  # rounded: ties occur
    res["big_8_aggregate_ms"] = 1000 * best(lambda: [engine.aggregate(big, rule=r) for r in RULES], max(2, repeat // 3))
    res["big_rank_rules_ms"] = 1000 * best(lambda: engine.rank_rules(big, RULES), max(2, repeat // 3))
    one = engine.rank_rules(big, RULES)
    same = all(np.array_equal(one["score"].sel(rule=r).values, engine.rank(big, rule=r)["score"].values) for r in RULES)
    info = machine_info(load_average=[round(v, 2) for v in __import__("os").getloadavg()])
    ratio = res["glue_rank_rules_ms"] / res["glue_plain_numpy_ms"]
    lines = [
        "# Small requests: 8 Vote'n'Rank rules",
        "",
        f"Generated by `python benchmarks/bench_small.py{' --quick' if args.quick else ''}` ({info['date_utc']}); "
        f"best of {repeat}; load average {info['load_average']} on {info['nproc']} cores.",
        "",
        "| case | ms |",
        "|---|---:|",
        f"| GLUE 97 x 14, plain numpy (the 8 rules written directly) | {res['glue_plain_numpy_ms']:.2f} |",
        f"| GLUE, eight `engine.aggregate` calls | {res['glue_8_aggregate_ms']:.2f} |",
        f"| GLUE, one `engine.rank_rules` call | {res['glue_rank_rules_ms']:.2f} |",
        f"| {S} x {T}, eight `engine.aggregate` calls | {res['big_8_aggregate_ms']:.1f} |",
        f"| {S} x {T}, one `engine.rank_rules` call (one shared win matrix) | {res['big_rank_rules_ms']:.1f} |",
        "",
        f"- GLUE: `rank_rules` / plain numpy = **{ratio:.2f}x** (target < 3x; the engine also validates, orients, "
        "applies the missing-score policy, handles ties exactly and labels the result).",
        f"- {S} x {T}: `rank_rules` {res['big_rank_rules_ms']:.0f} ms (target <= 200 ms at 1000 x 50).",
        f"- Every `rank_rules` row equals the rule's own `engine.rank` bit for bit: {same}.",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps({"machine": info, "results": res, "identical": same}, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
