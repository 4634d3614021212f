"""``votebench compare``: paired significance between the systems of one input (:func:`engine.compare_scores`)."""

from __future__ import annotations

import argparse
from typing import Any

from engine.app.options import add_scheduler_option, cluster

NAME = "compare"
HELP = "paired tests between systems (permutation, bootstrap, McNemar), corrected, with letter groups"
DESCRIPTION = ("For every pair of systems (or every system against --baseline), on the instance-level scores: the "
               "paired permutation test and the paired bootstrap of the mean difference, per task and overall (the mean "
               "over tasks of the per-task mean differences), McNemar's exact test when every score is 0 or 1; p-values "
               "corrected over the pairs (Holm or Benjamini-Hochberg); the compact letter display (systems sharing a "
               "letter are not significantly different); and a task-level comparison as autorank does it (Friedman, "
               "then Nemenyi or pairwise Wilcoxon-Holm, chosen automatically and said).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT, the test and correction, the systems, the output."""
    from engine.io.readers import reader_choices

    parser.add_argument("input", metavar="INPUT", help="score file or store, best instance-level (a <name>.meta.json "
                        "sidecar is read when present)")
    parser.add_argument("--baseline", default=None, metavar="SYSTEM",
                        help="compare every system against this one only (default: every pair; no letters then)")
    parser.add_argument("--systems", default=None, metavar="A,B,...", help="compare only these systems (comma-separated)")
    parser.add_argument("--test", default="permutation", choices=("permutation", "bootstrap", "mcnemar"),
                        help="the test behind p, the correction and the letters (default: permutation)")
    parser.add_argument("--correction", default="holm", choices=("holm", "bh", "none"),
                        help="multiple-comparison correction over the pairs (default: holm)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    parser.add_argument("--resamples", type=int, default=10_000, metavar="R",
                        help="sign patterns of the permutation test (every pattern, exact, when there are at most R) "
                        "and bootstrap replicates (default: 10000); refused up front when the estimated work or "
                        "memory is out of reach")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default: 0)")
    parser.add_argument("--meta", default=None, metavar="FILE", help="sidecar JSON (default: <name>.meta.json beside INPUT)")
    parser.add_argument("--input-format", default=None, choices=reader_choices(), metavar="FORMAT",
                        help="the reader of INPUT (default: guessed; see `votebench rank --help`)")
    add_scheduler_option(parser, "the paired tests, as blocks of pairs (about 4 per worker thread; the data is sent to "
                         "the workers once); INPUT is read and the task-level comparison made here")
    parser.add_argument("--format", default="table", choices=("table", "json"), help="output format (default: table)")
    parser.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Read INPUT, run :func:`engine.compare_scores`, print the result."""
    from engine import compare_scores, open_scores
    from engine.app.output import json_text, note, write_output
    from engine.labelled.canonical import directions_note

    with cluster(args):
        scores = open_scores(args.input, meta=args.meta, format=args.input_format)
        systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
        res = compare_scores(scores, baseline=args.baseline, test=args.test, correction=args.correction,
                             alpha=args.alpha, resamples=args.resamples, seed=args.seed, systems=systems)
    text = directions_note(args.input, res["tasks"], meta=args.meta)
    if text:
        note(text)
    for t in res["notes"]:
        note(t)
    write_output(json_text(res) if args.format == "json" else render(res), args.output)
    return 0


def _p(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def render(res: dict[str, Any]) -> str:
    """The table text: the systems with their letters, the pairs (overall), the task-level comparison."""
    lines = [f"# paired {res['test']} test of the mean difference ({res['method']})",
             f"# overall = {res['overall']}; p adjusted by {res['correction']} over {len(res['pairs'])} pair(s); "
             f"alpha {res['alpha']:g}"]
    names = list(res["mean"])
    w = max(6, *(len(n) for n in names))
    if res["letters"] is not None:
        lines.append("# systems sharing a letter are not significantly different")
        lines.append(f"{'system':<{w}}  {'mean':>10}  group")
    else:
        lines.append(f"{'system':<{w}}  {'mean':>10}")
    for n in names:
        m = res["mean"][n]
        cell = "n/a" if m is None else f"{m:.6g}"
        lines.append(f"{n:<{w}}  {cell:>10}" + (f"  {res['letters'][n]}" if res["letters"] is not None else ""))
    lines.append("")
    has_boot = any("bootstrap" in p for p in res["pairs"])
    has_mcn = any("mcnemar" in p for p in res["pairs"])
    head = f"{'a':<{w}}  {'b':<{w}}  {'diff':>10}  {'p':>8}  {'p adj':>8}"
    head += f"  {'bootstrap 95%':>21}" if has_boot else ""
    head += f"  {'McNemar adj':>11}" if has_mcn else ""
    lines.append(head + "  different")
    for p in res["pairs"]:
        diff = "n/a" if p["diff"] is None else f"{p['diff']:+.4g}"
        row = f"{p['a']:<{w}}  {p['b']:<{w}}  {diff:>10}  {_p(p['p']):>8}  {_p(p['p_adjusted']):>8}"
        if has_boot:
            b = p["bootstrap"]
            iv = "n/a" if b["low"] is None else f"[{b['low']:+.3g}, {b['high']:+.3g}]"
            row += f"  {iv:>21}"
        if has_mcn:
            row += f"  {_p(p['mcnemar']['p_adjusted']):>11}"
        lines.append(row + ("  yes" if p["different"] else "  no"))
    lines.append("# per-task tests: --format json (\"tasks\" of every pair)")
    tl = res.get("task_level")
    if tl:
        lines.append("")
        if tl["test"] is None:
            lines.append(f"# task level: {tl['reason']}")
        else:
            fr = tl.get("friedman")
            lines.append(f"# task level ({tl['n_tasks']} tasks): {tl['reason']}")
            if fr:
                lines.append(f"# Friedman chi2 = {_p(fr['statistic'])}, p = {_p(fr['pvalue'])}")
            groups = "; ".join("{" + ", ".join(g) + "}" for g in tl["groups"]) or "none"
            lines.append(f"# groups no {tl['test']} test separates: {groups}")
            if tl.get("note"):
                lines.append(f"# note: {tl['note']}")
    return "\n".join(lines) + "\n"
