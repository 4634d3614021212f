"""The ``votebench`` command line.

Every user-facing failure (bad input, unknown option) ends with exit code 2
and one line on stderr naming the problem; output files are written
atomically, so a failed run leaves nothing half-written.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from .core import MISSING_POLICIES
from .errors import VotebenchError
from .rules import LEVELS, RULES, rule_names

__all__ = ["main", "build_parser"]

FORMATS = ("table", "json", "csv")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``votebench`` argument parser (sub-commands ``rank`` and ``rules``)."""
    from . import __version__

    p = _Parser(
        prog="votebench",
        description="Rank ML systems from benchmark scores with social-choice rules, and measure how sure the ranking is.",
        epilog="Example: votebench rank data/colombo_tac08.csv.gz --level two",
    )
    p.add_argument("--version", action="version", version=f"votebench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    r = sub.add_parser(
        "rank",
        help="rank the systems of a score table or store",
        description="Aggregate scores (CSV wide or long, .csv.gz, Parquet, zarr store) into a ranking.",
    )
    r.add_argument("input", metavar="INPUT", help="score file or zarr store (a <name>.meta.json sidecar is read when present)")
    r.add_argument("--rule", default="borda", choices=rule_names(), help="aggregation rule (default: borda)")
    r.add_argument(
        "--level",
        default=None,
        choices=LEVELS,
        help="task: rule over per-task means; one: over all (task, instance) judges; two: within each task, then across "
        "tasks (default: two for instance-level input, task otherwise)",
    )
    r.add_argument(
        "--missing",
        default="error",
        choices=MISSING_POLICIES,
        help="missing scores: error (default), listwise (drop systems with any), drop-judges (drop judges with any)",
    )
    r.add_argument("--format", default="table", choices=FORMATS, help="output format (default: table)")
    r.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")
    r.set_defaults(func=_cmd_rank)

    ls = sub.add_parser("rules", help="list the registered aggregation rules")
    ls.set_defaults(func=_cmd_rules)
    return p


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------
def _fmt_score(v: float) -> str:
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{v:.1f}"
    return f"{v:.6g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.4e}"


def ranking_records(systems: Sequence[str], score: np.ndarray, rank: np.ndarray) -> list[dict[str, Any]]:
    """Ranked systems (those with a score) sorted by rank, then name."""
    rows = [
        {"system": str(s), "score": float(sc), "rank": int(rk)}
        for s, sc, rk in zip(systems, score, rank)
        if not math.isnan(sc)
    ]
    rows.sort(key=lambda d: (d["rank"], d["system"]))
    return rows


def render_ranking(rows: list[dict[str, Any]], *, fmt: str, header: dict[str, Any]) -> str:
    """Render ranked rows as ``table``, ``json`` or ``csv`` text."""
    if fmt == "json":
        return json.dumps({**header, "n_systems": len(rows), "ranking": rows}, indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "system", "score"])
        for d in rows:
            w.writerow([d["rank"], d["system"], repr(d["score"])])
        return buf.getvalue()
    scores = [_fmt_score(d["score"]) for d in rows]
    wr = max(4, *(len(str(d["rank"])) for d in rows))
    ws = max(6, *(len(d["system"]) for d in rows))
    wsc = max(5, *(len(s) for s in scores))
    title = ", ".join(f"{k} {v}" for k, v in header.items())
    lines = [f"# {title}; {len(rows)} systems", f"{'rank':>{wr}}  {'system':<{ws}}  {'score':>{wsc}}"]
    lines.append(f"{'-' * wr}  {'-' * ws}  {'-' * wsc}")
    lines += [f"{d['rank']:>{wr}}  {d['system']:<{ws}}  {sc:>{wsc}}" for d, sc in zip(rows, scores)]
    return "\n".join(lines) + "\n"


def write_output(text: str, output: str | None) -> None:
    """Print ``text`` or write it atomically to ``output``."""
    if output is None:
        sys.stdout.write(text)
        return
    target = Path(output)
    if not target.parent.exists():
        raise VotebenchError(f"{output}: folder {str(target.parent)!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------
def _cmd_rank(args: argparse.Namespace) -> int:
    from .core import rank
    from .io import open_scores

    scores = open_scores(args.input)
    ds = rank(scores, rule=args.rule, level=args.level, missing=args.missing)
    if not isinstance(ds["score"].data, np.ndarray):
        import dask

        with dask.config.set(scheduler="threads"):
            ds = ds.compute()
    systems = [str(s) for s in ds["system"].values]
    score = np.asarray(ds["score"].values, dtype=float)
    dropped = [s for s, v in zip(systems, score) if math.isnan(v)]
    if dropped:
        print(
            f"votebench: note: missing-score policy {args.missing!r} left out {len(dropped)} system(s): "
            + ", ".join(dropped[:5])
            + (" ..." if len(dropped) > 5 else ""),
            file=sys.stderr,
        )
    rows = ranking_records(systems, score, np.nan_to_num(ds["rank"].values))
    header = {"rule": ds.attrs["rule"], "level": ds.attrs["level"]}
    write_output(render_ranking(rows, fmt=args.format, header=header), args.output)
    return 0


def _cmd_rules(args: argparse.Namespace) -> int:
    width = max(len(n) for n in RULES)
    for name in rule_names():
        r = RULES[name]
        print(f"{name:<{width}}  levels {','.join(r.levels):<12}  {r.summary}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except VotebenchError as exc:
        print(f"votebench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("votebench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
