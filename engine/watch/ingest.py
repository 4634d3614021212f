"""Reading one unit with the registered readers, and merging it into the store's score tensor.

A unit is read by the reader :func:`engine.io.readers.guess_reader` picks (inside
:func:`engine.io.readers.common.one_system_parts`: one model's folder is a valid part), with the reader
options given that it takes.  Its tensor joins the store's only when it fits: its systems are new to
the store (or its own, when re-ingested), it has the store's task set, every task's direction is known
and agrees with the store's, and (under ``missing="error"``) every instance a system was scored on is
scored for all.  Otherwise :class:`~engine.errors.VotebenchError` names the problem in one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import CANONICAL, INSTANCE, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.io.readers import check_options, get_reader, guess_reader
from engine.io.readers.common import short_list
from engine.labelled.canonical import apply_sidecar, one_system_parts, read_sidecar, sidecar_path
from engine.watch.scan import Unit

__all__ = ["check_fits", "merge", "read_unit", "without_systems"]


def _directions_given(path: Path, tasks: list[str], meta: Mapping[str, Any] | None, lower: Sequence[str]) -> dict[str, bool]:
    """task -> higher is better, for the tasks a sidecar (``meta``, else ``<name>.meta.json`` beside ``path``) or
    ``lower`` names."""
    given: dict[str, bool] = {}
    side = meta
    if side is None and sidecar_path(path).is_file():
        side = read_sidecar(sidecar_path(path))
    hib = (side or {}).get("higher_is_better", {})
    if isinstance(hib, Mapping):
        given.update({t: bool(hib[t]) for t in tasks if t in hib})
    given.update({t: False for t in lower if t in tasks})
    return given


def read_unit(unit: Unit, *, loader: Mapping[str, Any], meta: Mapping[str, Any] | None = None,
              lower_is_better: Sequence[str] = (), known: Mapping[str, bool] | None = None) -> xr.DataArray:
    """The score tensor of ``unit`` (in memory), its directions from the reader, the sidecar or ``lower_is_better``.

    Parameters
    ----------
    unit : Unit
        A complete unit.
    loader : mapping
        Reader options (``format``, ``metric``, ``filter``, ...; ``None`` = not given); an option the unit's
        reader does not take is not passed to it (a watched folder may mix formats).
    meta : mapping, optional
        A sidecar's content (``--meta``): its ``higher_is_better`` entries for the unit's tasks apply.
    lower_is_better : sequence of str
        Tasks where lower is better (``--lower-is-better``).
    known : mapping, optional
        task -> higher is better of the tasks already in the store: a task a reader of bare scores (CSV,
        JSONL, Parquet) brings is known when the store has it.

    Raises
    ------
    VotebenchError
        When the reader refuses the unit, it is another kind of input than scores (battles), or a task's
        direction is unknown (a bare-scores task that neither the sidecar, ``--lower-is-better`` nor the store names).
    """
    fmt = loader.get("format")
    with one_system_parts():
        reader = get_reader(fmt) if fmt is not None and unit.kind == "file" else guess_reader(unit.path)
        if reader.kind != "scores":
            raise VotebenchError(f"{unit.key}: {reader.description or reader.name}, not scores; watch merges score outputs")
        opts = {k: v for k, v in loader.items() if k in reader.options and v is not None}
        scores = reader.open(unit.path, **check_options(reader, opts, str(unit.path)))
    if not isinstance(scores, xr.DataArray):
        raise VotebenchError(f"{unit.key}: reader {reader.name!r} returned {type(scores).__name__}, not scores")
    scores = scores.transpose(*CANONICAL).load()
    tasks = [str(t) for t in scores[TASK].values]
    given = _directions_given(unit.path, tasks, meta, lower_is_better)
    if not reader.keeps_own_directions:
        unknown = [t for t in tasks if t not in given and t not in (known or {})]
        if unknown:
            raise VotebenchError(f"{unit.key}: unknown direction of task(s) {short_list(unknown)}; name them in the "
                                 "--meta sidecar (higher_is_better) or --lower-is-better")
        given = {t: given.get(t, (known or {}).get(t, True)) for t in tasks}
    if given:
        scores = apply_sidecar(scores, {"higher_is_better": given}, unit.key, keep_unnamed=True)
    return scores


def without_systems(scores: xr.DataArray | None, systems: Sequence[str]) -> xr.DataArray | None:
    """``scores`` without ``systems`` (those of a unit being re-ingested); ``None`` when none is left."""
    if scores is None:
        return None
    drop = set(systems)
    keep = [s for s in scores[SYSTEM].values if str(s) not in drop]
    return scores.sel({SYSTEM: keep}) if keep else None


def check_fits(current: xr.DataArray | None, new: xr.DataArray, *, key: str, owner: Mapping[str, str]) -> None:
    """Refuse ``new`` (a unit's tensor) when it cannot join ``current`` (the store's, without the unit's own systems).

    ``owner``: system -> key of the unit that brought it (the systems of the store and of this batch).
    """
    for s in map(str, new[SYSTEM].values):
        if s in owner and owner[s] != key:
            raise VotebenchError(f"{key}: duplicate model name {s!r} (already ingested from {owner[s]}); rename one of them")
    if current is None:
        return
    have, got = [str(t) for t in current[TASK].values], [str(t) for t in new[TASK].values]
    if set(have) != set(got):
        lacks, extra = sorted(set(have) - set(got)), sorted(set(got) - set(have))
        parts = ([f"lacks {short_list(lacks)}"] if lacks else []) + ([f"has extra {short_list(extra)}"] if extra else [])
        raise VotebenchError(f"{key}: different task set ({'; '.join(parts)}); the store's tasks: {short_list(have)}")
    hib_have = dict(zip(have, current["higher_is_better"].values.tolist()))
    for t, h in zip(got, new["higher_is_better"].values.tolist()):
        if bool(h) != bool(hib_have[t]):
            said = "higher" if hib_have[t] else "lower"
            raise VotebenchError(f"{key}: task {t!r} is {'higher' if h else 'lower'}-is-better here but {said}-is-better "
                                 "in the store; fix the direction (--meta / --lower-is-better)")


def _label_kind(values: np.ndarray) -> str:
    return "int" if values.dtype.kind in "iu" else "str"


def merge(current: xr.DataArray | None, new: xr.DataArray, *, key: str, missing: str = "error") -> xr.DataArray:
    """``current`` with the systems of ``new`` appended (instances: the union).

    Under ``missing="error"`` a (task, instance) scored for some systems only is refused (one line naming the task):
    the ranking would refuse it.
    """
    if current is None:
        return new
    a, b = current, new.sel({TASK: current[TASK].values})
    if _label_kind(a[INSTANCE].values) != _label_kind(b[INSTANCE].values):
        a = a.assign_coords({INSTANCE: [str(v) for v in a[INSTANCE].values]})
        b = b.assign_coords({INSTANCE: [str(v) for v in b[INSTANCE].values]})
    b = b.assign_coords(higher_is_better=a["higher_is_better"], group=a["group"])
    a, b = xr.align(a, b, join="outer", exclude=[SYSTEM])
    merged = xr.concat([a, b], dim=SYSTEM, coords="minimal", compat="override", join="override")
    merged.attrs = dict(current.attrs)
    if missing == "error":
        values = merged.transpose(*CANONICAL).values
        nan = np.isnan(values)
        partial = nan.any(axis=0) & ~nan.all(axis=0)  # (task, instance) scored for some systems only
        if partial.any():
            t = int(np.argmax(partial.any(axis=1)))
            task = str(merged[TASK].values[t])
            raise VotebenchError(f"{key}: different instances on task {task!r} ({int(partial[t].sum())} scored for "
                                 "some systems only); re-run the model on the same instances (or watch with --missing "
                                 "listwise / drop-judges)")
    return merged


def store_path_ok(path: str | os.PathLike[str]) -> Path:
    """The store's path, refused (one line) when it exists and is no zarr store."""
    p = Path(path)
    if p.exists() and not (p / "zarr.json").is_file():
        raise VotebenchError(f"{p}: exists and is not a zarr store; give a new path or a store `votebench watch` wrote")
    return p
