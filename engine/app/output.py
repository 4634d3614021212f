"""What the sub-commands print: rankings as table, JSON or CSV, strict JSON, and the notes on stderr.

A note (``votebench: note: ...``) says what a default assumed or what a policy left out; notes are
printed when the command succeeds (a failure stays one line), see :func:`note`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["NoteHandler", "clear_notes", "csv_cell", "direction_note", "fmt_score", "json_float", "json_safe", "json_text", "note",
           "pending_notes", "pending_where", "policy_note", "ranking_object", "ranking_records", "render_ranking", "render_rankings",
           "shared_rank_marks", "store_line", "write_output"]


def fmt_score(v: float) -> str:
    """A score in a table: integers with one decimal, others with 6 significant digits."""
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{v:.1f}"
    return f"{v:.6g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.4e}"


def json_float(v: float | None) -> float | None:
    """``v`` for JSON: ``None`` for a missing or NaN value."""
    return None if v is None or math.isnan(v) else float(v)


def ranking_records(systems: Sequence[str], score: np.ndarray, rank: np.ndarray) -> list[dict[str, Any]]:
    """Ranked systems (those with a score) sorted by rank, then name."""
    rows = [
        {"system": str(s), "score": float(sc), "rank": int(rk)}
        for s, sc, rk in zip(systems, score, rank)
        if not math.isnan(sc)
    ]
    rows.sort(key=lambda d: (d["rank"], d["system"]))
    return rows


def ranking_object(rows: list[dict[str, Any]], header: dict[str, Any]) -> dict[str, Any]:
    """The JSON object of one ranking: ``header`` (rule, level), ``n_systems`` and the ranked ``rows``."""
    return {**header, "n_systems": len(rows), "ranking": rows}


def render_rankings(results: list[tuple[str, list[dict[str, Any]], dict[str, Any]]], *, fmt: str) -> str:
    """Render the rankings of several inputs, each ``(input, rows, header)``.

    ``table``: one table per input under a ``## INPUT`` line; ``json``: a list of
    the one-input objects, each with an ``input`` key first; ``csv``: one table
    with an ``input`` column first.
    """
    if fmt == "json":
        objs = [{"input": name, **ranking_object(rows, header)} for name, rows, header in results]
        return json_text(objs)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["input", "rank", "system", "score"])
        for name, rows, _ in results:
            for d in rows:
                w.writerow([name, d["rank"], d["system"], repr(d["score"])])
        return buf.getvalue()
    return "\n".join(f"## {name}\n" + render_ranking(rows, fmt=fmt, header=header) for name, rows, header in results)


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced: NaN by ``None`` (JSON null), +-inf by the strings ``"inf"``/``"-inf"``.

    Strict JSON has no NaN or Infinity; this keeps ``--format json`` parseable by any reader.
    """
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """Strict JSON text (indented, UTF-8 kept) of ``value`` after :func:`json_safe`."""
    return json.dumps(json_safe(value), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def shared_rank_marks(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every row's rank followed by ``=`` when another row shares it, else by a space."""
    counts: dict[int, int] = {}
    for d in rows:
        counts[d["rank"]] = counts.get(d["rank"], 0) + 1
    return [str(d["rank"]) + ("=" if counts[d["rank"]] > 1 else " ") for d in rows]


def render_ranking(rows: list[dict[str, Any]], *, fmt: str, header: dict[str, Any]) -> str:
    """Render ranked rows as ``table``, ``json`` or ``csv`` text."""
    if fmt == "json":
        return json_text(ranking_object(rows, header))
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "system", "score"])
        for d in rows:
            w.writerow([d["rank"], d["system"], repr(d["score"])])
        return buf.getvalue()
    scores = [fmt_score(d["score"]) for d in rows]
    ranks = shared_rank_marks(rows)
    wr = max(4, *(len(str(d["rank"])) for d in rows))
    ws = max(6, *(len(d["system"]) for d in rows))
    wsc = max(5, *(len(s) for s in scores))
    title = ", ".join(f"{k} {v}" for k, v in header.items())
    lines = [f"# {title}; {len(rows)} systems", f"{'rank':>{wr}}  {'system':<{ws}}  {'score':>{wsc}}"]
    lines.append(f"{'-' * wr}  {'-' * ws}  {'-' * wsc}")
    lines += [f"{r:>{wr + 1}} {d['system']:<{ws}}  {sc:>{wsc}}" for d, r, sc in zip(rows, ranks, scores)]
    n_tied = sum(r.endswith("=") for r in ranks)
    if n_tied:
        lines.append(f"# '=' marks ties: {n_tied} tied systems (discriminative power)")
    return "\n".join(lines) + "\n"


def csv_cell(text: str) -> str:
    """``text`` as one CSV field (quoted when needed)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([text])
    return buf.getvalue()


def write_output(text: str, output: str | None) -> None:
    """Print ``text`` or write it atomically to ``output`` (usual permissions; strays of killed writes removed)."""
    if output is None:
        sys.stdout.write(text)
        return
    from engine.io.files import atomic_write_text

    atomic_write_text(output, text)
    print(f"votebench: wrote {output}", file=sys.stderr)


def store_line(path: Any, resumed: bool, done: int, total: int) -> None:
    """``votebench: created results store PATH`` or ``resumed ... (k of n blocks already done)`` on stderr.

    Printed when the command succeeds, before its notes (a failure stays one line); the progress bar shows the
    blocks meanwhile.
    """
    if resumed:
        _WHERE.append(f"votebench: resumed results store {path} ({done} of {total} blocks already done)")
    else:
        _WHERE.append(f"votebench: created results store {path} ({total} blocks)")


# --------------------------------------------------------------------------------------------
# notes
# --------------------------------------------------------------------------------------------
_NOTES: list[str] = []
_WHERE: list[str] = []  # where the command wrote (a results store), printed on success before the notes


def note(text: str, *, now: bool = False) -> None:
    """``votebench: note: TEXT`` on stderr (what a default assumed, what a policy left out).

    Printed when the command succeeds (a failure stays one line), or at once with ``now``.
    """
    if now:
        print(f"votebench: note: {text}", file=sys.stderr, flush=True)
    else:
        _NOTES.append(text)


class NoteHandler(logging.Handler):
    """Warnings of the engine (logger ``"engine"``) become notes of the command (:func:`note`)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        note(record.getMessage())


def clear_notes() -> None:
    """Forget the notes of an earlier command (:func:`engine.app.cli.main` calls it before a command runs)."""
    _NOTES.clear()
    _WHERE.clear()


def pending_notes() -> list[str]:
    """The notes of the command that ran, in order."""
    return list(_NOTES)


def pending_where() -> list[str]:
    """The lines saying where the command that ran wrote (:func:`store_line`), in order."""
    return list(_WHERE)


def direction_note(args: argparse.Namespace, scores: Any | None, *, prefix: str = "") -> None:
    """Say which tasks were assumed higher-is-better because no sidecar and no --lower-is-better named them.

    (Not said when a worker read the input: this process does not know its tasks.)
    """
    from engine.app.options import lower_list
    from engine.labelled.canonical import directions_note

    if scores is None:
        return
    text = directions_note(args.input, [str(t) for t in scores["task"].values], meta=getattr(args, "meta", None),
                           lower_is_better=lower_list(getattr(args, "lower_is_better", None)))
    if text:
        note(prefix + text)


def policy_note(missing: str, systems_out: Sequence[str], scores: Any | None = None, shown: int = 5, *,
                prefix: str = "") -> None:
    """What the missing-score policy left out: systems (listwise, or any rule that could not rank them) and judges."""
    if systems_out:
        note(f"{prefix}missing-score policy {missing!r} left out {len(systems_out)} system(s): " + ", ".join(systems_out[:shown])
             + (" ..." if len(systems_out) > shown else ""))
    if missing == "drop-judges" and scores is not None:
        from engine.labelled.canonical import left_out_judges

        judges = left_out_judges(scores)
        if judges:
            one = scores.sizes["instance"] == 1
            parts = [t if one else f"{t} ({d} of {j})" for t, d, j in judges]
            what = "task(s) with a missing score" if one else "judge(s) (task x instance) with a missing score"
            note(f"{prefix}missing-score policy 'drop-judges' left out {sum(d for _, d, _ in judges)} {what}: "
                 + ", ".join(parts[:shown]) + (" ..." if len(parts) > shown else ""))
