"""``votebench condorcet``: the Condorcet winner and the prospective systems (Vote'n'Rank section 3.2)."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from engine.app.options import (
    add_direction_options,
    add_input_options,
    add_output_options,
    add_scheduler_option,
    cluster,
    load_scores,
)
from engine.app.output import direction_note, json_text, policy_note, write_output
from engine.labelled.core import MISSING_POLICIES

NAME = "condorcet"
HELP = ("Condorcet winner, and for every system whether some task weights make it the Condorcet winner "
        "(default: strict; --weak: the paper's eq. 2)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT, ``--missing``, ``--weak``, the input options, ``--format`` (table, json), ``--output``."""
    parser.add_argument("input", metavar="INPUT", help="score file or zarr store")
    parser.add_argument("--missing", default="error", choices=MISSING_POLICIES,
                        help="pairs with a missing score are ignored (error = keep them out of the comparison); "
                        "listwise / drop-judges remove systems / tasks with gaps first")
    parser.add_argument("--weak", action="store_true",
                        help="the paper's definition (Vote'n'Rank eq. 2, G w >= 0: beat or tie every other system), as in "
                        "the authors' code and the votenrank2023 experiment; default: the strict Condorcet winner (G w > 0)")
    add_scheduler_option(parser, "the linear programs, one per system, in blocks of systems (about 4 per worker "
                         "thread), and the chunks of a score store; INPUT's task means are made here")
    add_direction_options(parser)
    add_input_options(parser)
    add_output_options(parser, ("table", "json"))


def run(args: argparse.Namespace) -> int:
    """Solve one linear program per system (:func:`engine.kernels.condorcet_lp.prospective_systems`) and print."""
    from engine.distributed import compute
    from engine.kernels.condorcet_lp import condorcet_winner
    from engine.labelled.core import task_scores

    with cluster(args):
        scores = load_scores(args)
        direction_note(args, scores)
        X = compute(task_scores(scores, missing=args.missing).to_dataset(name="score"))["score"]
        M = np.asarray(X.values, dtype=float)
        found = _prospective(M, strict=not args.weak)
    systems = [str(s) for s in X["system"].values]
    tasks = [str(t) for t in X["task"].values]
    keep = ~np.isnan(M).all(axis=0)
    policy_note(args.missing, [s for s, k in zip(systems, keep) if not k], scores)
    winner = int(condorcet_winner(M))
    rows: list[dict[str, Any]] = []
    for i, (name, (ok, w)) in enumerate(zip(systems, found)):
        if keep[i]:
            rows.append({"system": name, "prospective": bool(ok),
                         "weights": None if w is None else {t: float(v) for t, v in zip(tasks, w)}})
    definition = "weak" if args.weak else "strict"
    result = {"condorcet_winner": systems[winner] if winner >= 0 else None, "definition": definition, "systems": rows}
    write_output(json_text(result) if args.format == "json" else _table(result, rows, weak=args.weak), args.output)
    return 0


def _prospective(M: np.ndarray, *, strict: bool) -> list[tuple[bool, np.ndarray | None]]:
    """:func:`~engine.kernels.condorcet_lp.prospective_systems` of the (T, S) matrix ``M``: here, or on the command's
    cluster in blocks of systems (:func:`engine.limits.spread`; every LP is the same wherever it is solved)."""
    from functools import partial

    from engine.kernels.condorcet_lp import prospective_systems
    from engine.limits import spread

    S = M.shape[1]
    step, mapper = spread(S, 8.0 * M.size * 4)  # an LP's arrays: a few copies of the (opponents x tasks) matrix
    if mapper is None or step is None:
        return prospective_systems(M, strict=strict)
    blocks = [list(range(i, min(S, i + step))) for i in range(0, S, step)]
    return [row for part in mapper(partial(lp_block, strict=strict), M, blocks) for row in part]


def lp_block(M: np.ndarray, systems: list[int], *, strict: bool) -> list[tuple[bool, np.ndarray | None]]:
    """The LPs of the ``systems`` of ``M`` (a task of :func:`_prospective`)."""
    from engine.kernels.condorcet_lp import prospective_systems

    return prospective_systems(M, strict=strict, systems=systems)


def _table(result: dict[str, Any], rows: list[dict[str, Any]], *, weak: bool) -> str:
    """The text table: the winner, how many systems are prospective, and the weights that make each one win."""
    n_p = sum(r["prospective"] for r in rows)
    how = ("weak: beats or ties every other system, G w >= 0 (--weak; Vote'n'Rank eq. 2, the paper's definition)"
           if weak else "strict: beats every other system by a strict weighted majority, G w > 0 (the default; "
           "--weak gives the paper's eq. 2)")
    lines = [
        f"# Condorcet winner (equal weights, strict majority): {result['condorcet_winner'] or 'none'}",
        f"# prospective systems (some task weights make them the {result['definition']} Condorcet winner): "
        f"{n_p} of {len(rows)}",
        f"# definition: {how}",
    ]
    width = max(len(r["system"]) for r in rows)
    for r in rows:
        if r["weights"] is None:
            lines.append(f"{r['system']:<{width}}  no")
        else:
            top = sorted(r["weights"].items(), key=lambda kv: -kv[1])
            shown = ", ".join(f"{t}={v:.3g}" for t, v in top if v > 1e-9)
            lines.append(f"{r['system']:<{width}}  yes  {shown}")
    return "\n".join(lines) + "\n"


#: the description of ``votebench condorcet --help``
DESCRIPTION = (
    "Vote'n'Rank section 3.2: a system is prospective when a non-negative task-weight vector w makes it "
    "the Condorcet winner; solved as one linear program per system. By default the Condorcet winner is the strict "
    "one: it beats every other system by a strict weighted majority (G w > 0, eq. 3). --weak uses the paper's "
    "definition, eq. (2): G w >= 0 (it may tie), as the authors' code does and as the votenrank2023 experiment "
    "uses it (it reproduces the paper's counts, e.g. 10 of 22 prospective systems on SuperGLUE with "
    "--missing listwise). The Condorcet winner under equal weights is always the strict one.")
