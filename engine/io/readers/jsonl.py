"""Reader of a generic JSONL score file: one ``{"system", "task", "instance", "score"}`` object per line."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import xarray as xr

from engine.errors import VotebenchError
from engine.io.readers.common import assemble, json_lines, label, need_two
from engine.limits import as_float, shown

__all__ = ["read_jsonl"]


def _json_number(value: Any, where: str) -> float | None:
    """A score from JSON: number, true/false (1/0) or null (missing); None if not a number.

    An integer beyond float64 is refused in one line (:func:`engine.limits.as_float`).
    """
    if value is None:
        return math.nan
    if isinstance(value, float):
        return value
    if isinstance(value, (bool, int)):
        return as_float(value, where, "score")
    return None


def read_jsonl(path: str | Path) -> xr.DataArray:
    """Read a generic JSONL score file: one ``{"system", "task", "instance", "score"}`` object per line.

    Parameters
    ----------
    path : str or path-like
        ``.jsonl`` or ``.jsonl.gz``.  ``instance`` is optional (task-level scores),
        but then no line may have it.  ``score`` is a JSON number, ``true``/``false``
        (1/0) or ``null`` (missing).  Other keys are ignored.  Blank lines are skipped.

    Returns
    -------
    xarray.DataArray
        The canonical ``scores`` tensor; systems, tasks and instances in order of
        first appearance, every task higher-is-better (use a sidecar for directions).

    Raises
    ------
    VotebenchError
        A line that is not a JSON object (with its line number), a missing key, an
        empty name, a non-numeric score, a duplicate (system, task, instance), fewer
        than two systems.
    """
    p = Path(path)
    if p.is_dir():
        raise VotebenchError(f"{p}: format 'jsonl' needs a file, not a directory")
    rows: list[tuple[str, str, str, float]] = []
    first_line: dict[tuple[str, str, str], int] = {}
    has_instance: bool | None = None
    for lineno, obj in json_lines(p):
        if has_instance is None:
            has_instance = "instance" in obj
        keys = ("system", "task", "instance", "score") if has_instance else ("system", "task", "score")
        missing = [k for k in keys if k not in obj]
        if missing:
            extra = " (earlier lines have it)" if missing == ["instance"] else ""
            raise VotebenchError(f"{p}: line {lineno}: missing key {missing[0]!r}{extra}; keys are system, task, [instance,] score")
        if not has_instance and "instance" in obj:
            raise VotebenchError(f"{p}: line {lineno}: key 'instance' appears, but the first line has none")
        names = []
        for k in keys[:-1]:
            lab = label(obj[k])
            if lab is None:
                raise VotebenchError(f"{p}: line {lineno}: {k} must be a non-empty string or integer, got {obj[k]!r}")
            names.append(lab)
        score = _json_number(obj["score"], f"{p}: line {lineno}")
        if score is None:
            raise VotebenchError(f"{p}: line {lineno}: score {shown(obj['score'])} is not a number")
        if math.isinf(score):
            raise VotebenchError(f"{p}: line {lineno}: score {obj['score']!r} is not a finite number")
        key = (names[0], names[1], names[2] if has_instance else "0")
        if key in first_line:
            inst = f", instance {key[2]!r}" if has_instance else ""
            raise VotebenchError(
                f"{p}: line {lineno}: duplicate entry for system {key[0]!r}, task {key[1]!r}{inst} (first on line {first_line[key]})"
            )
        first_line[key] = lineno
        rows.append((key[0], key[1], key[2], score))
    if not rows:
        raise VotebenchError(f"{p}: no score rows")
    systems = list(dict.fromkeys(r[0] for r in rows))
    tasks = list(dict.fromkeys(r[1] for r in rows))
    need_two(systems, p, "scores", "ranking needs at least two systems")
    da = assemble(rows, source=p, systems=systems, tasks=tasks, sort_instances=False)
    da.attrs["format"] = "jsonl"
    return da
