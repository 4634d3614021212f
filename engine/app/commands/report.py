"""``votebench report``: an HTML report with figures and tables (:func:`engine.app.report.build_report`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from engine.app.options import add_scheduler_option, cluster, lower_list

NAME = "report"
HELP = "write an HTML report with figures and tables (rankings, CD diagram, flows, intervals, subset curves)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT_OR_STORE, ``--out``, the rules and statistics of the report, the input options."""
    from engine.dims import BOOTSTRAP_AXES
    from engine.kernels.significance import TESTS
    from engine.labelled.core import MISSING_POLICIES
    from engine.rules import LEVELS

    p = parser
    p.add_argument("input", metavar="INPUT_OR_STORE", help="score file / score store, or a results store of `votebench sweep`")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="report folder (replaced if it holds an earlier report)")
    p.add_argument("--rule", action="append", default=None, metavar="RULE",
                   help="rule to compare, repeatable (default: every rule that can rank the input; for a store: "
                   "its rule labels); the mean baseline is always included")
    p.add_argument("--primary", default=None, metavar="RULE",
                   help="rule the leaderboard (the report's main table) is ranked by (for a results store: a rule "
                   "label of it; default: the first rule asked for that is neither the mean baseline nor degenerate)")
    p.add_argument("--level", default=None, choices=LEVELS, help="aggregation level (score input)")
    p.add_argument("--missing", default=None, choices=MISSING_POLICIES,
                   help="missing-score policy (score input; default error)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of Friedman/Nemenyi; intervals cover 1 - alpha (default 0.05)")
    p.add_argument("--top-k", type=int, default=30, metavar="K", help="figures show at most K systems (default 30)")
    p.add_argument("--replicates", type=int, default=200, metavar="B",
                   help="bootstrap replicates per rule, 0 = none (score input; default 200)")
    p.add_argument("--repeats", type=int, default=100, metavar="R",
                   help="random task subsets per size for the subset curves, 0 = none (score input; default 100)")
    p.add_argument("--over", default=None, choices=BOOTSTRAP_AXES,
                   help="bootstrap axis (default: instances for instance-level input, else tasks)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default 0)")
    p.add_argument("--format", default="png,svg", metavar="FMT[,FMT]", help="figure formats: png, svg, pdf (default png,svg)")
    p.add_argument("--meta", default=None, metavar="FILE", help="sidecar JSON with task directions (default: beside INPUT)")
    p.add_argument("--lower-is-better", default=None, metavar="TASKS",
                   help="comma-separated tasks where lower scores are better (score input; overrides the sidecar)")
    p.add_argument("--test", default="auto", choices=TESTS,
                   help="post-hoc test of the critical-difference diagram (default auto: Nemenyi, or pairwise Wilcoxon "
                   "signed-rank with Holm's correction when Nemenyi cannot separate any pair; the report says which)")
    p.add_argument("--paired-top-k", type=int, default=15, metavar="K",
                   help="the Paired tests section compares the K best systems by mean (all pairs of them), with letter "
                   "groups; 0 = no section (default 15)")
    add_scheduler_option(p, "the bootstrap replicates of every rule and the pairs of the Paired tests section, as "
                         "blocks (about 4 per worker thread; the scores are sent once); INPUT is read and ranked, the "
                         "subset curves and figures made here")
    p.add_argument("--paired-resamples", type=int, default=4000, metavar="R",
                   help="sign patterns per pair of the section's permutation tests (default 4000; compare: 10000)")


def run(args: argparse.Namespace) -> int:
    """Build the report; print the path of its index.html."""
    formats = [f for f in args.format.split(",") if f.strip()]
    with cluster(args):
        index = _build(args, formats)
    sys.stdout.write(f"{index}\n")
    print(f"votebench: wrote report to {index.parent}", file=sys.stderr)
    return 0


def _build(args: argparse.Namespace, formats: list[str]) -> Any:
    from engine.app.report import ReportSpec, build_report

    spec = ReportSpec(rules=args.rule, level=args.level, missing=args.missing, alpha=args.alpha, top_k=args.top_k,
                      replicates=args.replicates, repeats=args.repeats, over=args.over, seed=args.seed, formats=formats,
                      meta=args.meta, test=args.test, paired_top_k=args.paired_top_k,
                      paired_resamples=args.paired_resamples, lower_is_better=lower_list(args.lower_is_better),
                      primary=args.primary)
    return build_report(args.input, args.out, spec)


#: the description of ``votebench report --help``
DESCRIPTION = ("Rank a score file with several rules (or read a sweep results store) and write OUT/index.html, "
               "OUT/figures/*.png|svg and OUT/tables/*.csv|json|md|tex: a leaderboard by the primary rule (score and rank with "
               "their bootstrap intervals, Rank(UB), the judges behind each row), rankings side by side with changes against the mean "
               "baseline, a rank heatmap with a dendrogram, a critical-difference diagram (Friedman + Nemenyi), "
               "PROMETHEE II flows, the pairwise win matrix, bootstrap rank intervals and task-subset curves.")
