"""``votebench agreement``: Kendall's tau between two benchmarks' rankings, and each one's diversity (:func:`engine.agreement`)."""

from __future__ import annotations

import argparse
from typing import Any

from engine.app.options import add_scheduler_option, cluster

NAME = "agreement"
HELP = "agreement of two benchmarks (Kendall tau over their common systems) and the diversity 1 - W of each"
DESCRIPTION = ("Rank each benchmark with --rule (default borda; a system with a missing score is not ranked: --missing "
               "listwise), then Kendall's tau-b between the two rankings over the systems both rank, with its two-sided "
               "p-value (BenchBench, Perlitz et al. 2024); and each benchmark's diversity 1 - W across its tasks "
               "(0: every task ranks the systems alike).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """A, B, the rule, the output."""
    from engine.labelled.core import MISSING_POLICIES
    from engine.rules import rule_choices

    parser.add_argument("a", metavar="A", help="first benchmark: score file or store")
    parser.add_argument("b", metavar="B", help="second benchmark: score file or store")
    parser.add_argument("--rule", default="borda", choices=rule_choices(), metavar="RULE",
                        help="rule ranking each benchmark (default: borda; `votebench rules` lists them)")
    parser.add_argument("--missing", default="listwise", choices=MISSING_POLICIES,
                        help="missing scores (default: listwise, the system is not ranked by that benchmark)")
    add_scheduler_option(parser, "the chunks of a score store (A or B) are read and reduced by the workers; a score "
                         "file is read and ranked here (one ranking and one tasks x systems matrix per benchmark: "
                         "nothing worth sending)")
    parser.add_argument("--format", default="table", choices=("table", "json"), help="output format (default: table)")
    parser.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Read A and B, run :func:`engine.agreement`, print the result."""
    from engine import agreement, open_scores
    from engine.app.output import json_text, note, write_output

    with cluster(args):
        a, b = open_scores(args.a), open_scores(args.b)
        res = {"a": args.a, "b": args.b, **agreement(a, b, rule=args.rule, missing=args.missing)}
    if res.get("note"):
        note(res["note"])
    write_output(json_text(res) if args.format == "json" else render(res), args.output)
    return 0


def _v(v: Any, f: str = ".3f") -> str:
    return "n/a" if v is None else format(v, f)


def render(res: dict[str, Any]) -> str:
    """The table text."""
    lines = [f"# agreement of {res['a']} and {res['b']} (rule {res['rule']}, missing {res['missing']})",
             f"Kendall tau-b  {_v(res['tau'])}  (p = {_v(res['pvalue'], '.3g')}, two-sided) over {res['n']} common systems"
             + ("  [too few common systems]" if res["too_few"] else "")]
    for side in ("a", "b"):
        only = res[f"only_{side}"]
        if only:
            lines.append(f"# ranked by {res[side]} only: {len(only)} ({', '.join(only[:5])}{' ...' if len(only) > 5 else ''})")
    for side in ("a", "b"):
        d = res["diversity"][side]
        lines.append(f"diversity 1 - W of {res[side]}: {_v(d['value'])} ({d['n_tasks']} tasks, {d['n_systems']} systems)"
                     + (f"  [{d['note']}]" if d.get("note") else ""))
    return "\n".join(lines) + "\n"
