"""The canonical score tensor: construction, validation, sidecars and direction notes.

The canonical in-memory form is an ``xarray.DataArray`` named ``scores`` with
dims ``(system, task, instance)`` (see :mod:`engine.dims`), float64 (float32 is
kept when a store holds it), ``NaN`` = missing score, and coordinates

* ``system``, ``task``, ``instance``: labels (task-level data has one instance, ``0``);
* ``higher_is_better`` (task, bool): the direction of each task's metric;
* ``group`` (task, str): the task's group (the task's own name when ungrouped, ``"<task> (ungrouped)"`` when
  a group bears that name: equal labels are one group, see :func:`task_group_labels`);
* ``n_instances`` (task, int): instances the task really has.

Ragged tasks (different instance counts) are padded with ``NaN``.  A judge,
that is a (task, instance) pair, with no score at all is padding and takes no
part in any aggregation; a ``NaN`` inside a judge that has other scores is a
truly *missing* score, which the aggregation rules either refuse or handle by
an explicit policy.

This module knows no file format: the readers of :mod:`engine.io.readers` build
the tensor with :func:`scores_from_array`, and :func:`engine.open_scores`
applies a ``<name>.meta.json`` sidecar with :func:`apply_sidecar`.

Building a DataArray of in-memory data never imports dask here: xarray (2024.10 to at least 2026.9) imports
``dask`` and ``dask.array`` the first time it builds one when dask is installed, only to test ``isinstance(data,
dask.array.Array)``, which costs about 0.4 s of a small ``votebench rank``.  :func:`defer_dask_import` (called when
this module is imported) installs two deferred checks that answer "no" until dask has been imported elsewhere (a zarr
store opened lazily, ``engine.bootstrap``, the user), and ask dask as usual from then on; it touches two internals of
xarray (the duck-array module cache and ``xarray.namedarray.utils.is_dask_collection``) and does nothing when they
are not where it expects them, so a future xarray costs start-up time, never correctness.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import sys
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import CANONICAL, INSTANCE, LAYOUT, SYSTEM, TASK
from engine.errors import VotebenchError

__all__ = ["apply_sidecar", "check_sidecar", "defaulted_directions", "defer_dask_import", "directions_note", "ensure_valid",
           "first_duplicate", "is_url", "least_systems", "left_out_judges", "one_system_parts", "read_sidecar",
           "scores_from_array", "sidecar_path", "task_group_labels", "validate_scores", "validation_deferred", "with_lower_is_better"]


#: data-file suffixes that ``<name>.meta.json`` replaces (others are kept: ``x.tsv`` -> ``x.tsv.meta.json``)
_SUFFIXES = (".csv.gz", ".csv", ".parquet", ".pq", ".zarr", ".jsonl.gz", ".jsonl", ".json")


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an fsspec URL (``s3://...``, ``file://...``, ``memory://...``) rather than a local path.

    Parameters
    ----------
    path : str or os.PathLike
        A path or URL.

    Returns
    -------
    bool
        ``True`` when ``path`` contains ``://``.
    """
    return "://" in str(path)


# --------------------------------------------------------------------------------------------
# construction and validation
# --------------------------------------------------------------------------------------------
def _system_last(arr: np.ndarray, layout: str) -> np.ndarray:
    """``values`` as the ``(task, instance, system)`` buffer of the tensor (no copy for ``system-last``)."""
    if layout == "system-first":
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if arr.ndim != 3:
            raise VotebenchError(f"scores must have shape (systems, tasks[, instances]), got {arr.shape}")
        return np.ascontiguousarray(np.moveaxis(arr, 0, -1))
    if layout == "system-last":
        if arr.ndim != 3:
            raise VotebenchError(f"system-last scores must have shape (tasks, instances, systems), got {arr.shape}")
        return arr
    raise VotebenchError(f"unknown layout {layout!r}; use 'system-first' or 'system-last'")


def _per_task(value: Mapping[str, Any] | Sequence[Any] | Any, tasks: list[str], default: Any, cast: Any) -> list[Any]:
    """A per-task coordinate from a mapping (``default(task)`` for tasks it lacks), a sequence, or one value for all."""
    if isinstance(value, Mapping):
        return [cast(value[t]) if t in value else default(t) for t in tasks]
    if value is None or isinstance(value, (bool, np.bool_)):
        return [default(t) if value is None else cast(value) for t in tasks]
    return [cast(v) for v in value]


def task_group_labels(tasks: Sequence[str], named: Mapping[str, Any], own: Sequence[Any] | None = None) -> list[str]:
    """The ``group`` coordinate: ``named[task]`` for a grouped task, otherwise ``own`` (default: the task's name).

    Two tasks share a group exactly when their labels are equal, so an ungrouped task whose own label is its
    name never takes the label of a group of that name (``{"t2": ["t1"]}`` with ``t2`` ungrouped): its label is
    then ``"<task> (ungrouped)"`` (primes added until it is no group's or task's name).

    Examples
    --------
    >>> task_group_labels(["t1", "t2", "t3"], {"t1": "t2"})
    ['t2', 't2 (ungrouped)', 't3']
    """
    tasks = [str(t) for t in tasks]
    own_labels = tasks if own is None else [str(o) for o in own]
    taken = {str(named[t]) for t in tasks if t in named}
    out = []
    for t, o in zip(tasks, own_labels):
        if t in named:
            out.append(str(named[t]))
            continue
        label = o
        if o == t and t in taken:
            label = f"{t} (ungrouped)"
            while label in taken or label in tasks:
                label += "'"
        out.append(label)
    return out


def scores_from_array(
    values: Any,
    *,
    systems: Sequence[Any] | None = None,
    tasks: Sequence[Any] | None = None,
    instances: Sequence[Any] | None = None,
    higher_is_better: Mapping[str, bool] | Sequence[bool] | bool | None = None,
    groups: Mapping[str, str] | Sequence[str] | None = None,
    attrs: Mapping[str, Any] | None = None,
    layout: str = "system-first",
) -> xr.DataArray:
    """Build the canonical score tensor from an array.

    Parameters
    ----------
    values : array_like
        Scores of shape ``(S, T)`` (task level) or ``(S, T, K)`` with
        ``layout="system-first"``; or ``(T, K, S)`` with ``layout="system-last"``
        (used without a copy).  ``NaN`` = missing.
    systems, tasks, instances : sequence, optional
        Labels (default: ``s0, s1, ...``, ``t0, ...``, ``0, 1, ...``).
    higher_is_better : mapping, sequence or bool, optional
        Direction per task (default: all True).
    groups : mapping or sequence of str, optional
        Group of each task (default: the task's own name).
    attrs : mapping, optional
        Attributes (provenance) for the result.
    layout : {"system-first", "system-last"}
        Axis order of ``values``.

    Returns
    -------
    xarray.DataArray
        Named ``scores`` with dims ``(system, task, instance)``.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[0.81, 120.0], [0.79, 45.0]]), systems=["a", "b"],
    ...                              tasks=["accuracy", "latency"], higher_is_better=[True, False])
    >>> s.dims, s["higher_is_better"].values.tolist()
    (('system', 'task', 'instance'), [True, False])
    """
    arr = np.asarray(values)
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise VotebenchError(f"scores must be real numbers, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    buf = _system_last(arr, layout)
    n_t, n_k, n_s = buf.shape
    systems = [f"s{i}" for i in range(n_s)] if systems is None else list(systems)
    tasks = [f"t{i}" for i in range(n_t)] if tasks is None else list(tasks)
    instances = list(range(n_k)) if instances is None else list(instances)
    for what, labels, n in (("systems", systems, n_s), ("tasks", tasks, n_t), ("instances", instances, n_k)):
        if len(labels) != n:
            raise VotebenchError(f"got {len(labels)} {what} labels for {n} {what}")
    tasks = [str(t) for t in tasks]
    hib = _per_task(higher_is_better, tasks, lambda t: True, bool)
    grp = task_group_labels(tasks, groups) if isinstance(groups, Mapping) else _per_task(groups, tasks, lambda t: t, str)
    n_inst = np.count_nonzero(~np.isnan(buf).all(axis=-1), axis=-1) if n_k > 1 else np.ones(n_t, dtype=int)
    da = xr.DataArray(
        buf,
        dims=LAYOUT,
        coords={
            SYSTEM: np.array([str(s) for s in systems], dtype=object),
            TASK: np.array(tasks, dtype=object),
            INSTANCE: np.asarray(instances),
            "higher_is_better": (TASK, np.array(hib, dtype=bool)),
            "group": (TASK, np.array(grp, dtype=object)),
            "n_instances": (TASK, np.asarray(n_inst, dtype=np.int64)),
        },
        name="scores",
        attrs=dict(attrs or {}),
    ).transpose(*CANONICAL)
    if not _DEFERRED.get():
        ensure_valid(da)
    return da


def first_duplicate(labels: Sequence[Any]) -> Any | None:
    """The first label of ``labels`` that occurs earlier too, else ``None``."""
    seen: set[Any] = set()
    for v in labels:
        if v in seen:
            return v
        seen.add(v)
    return None


#: the fewest systems a score tensor may have (1 inside :func:`one_system_parts`)
_LEAST_SYSTEMS: contextvars.ContextVar[int] = contextvars.ContextVar("votebench_least_systems", default=2)


@contextlib.contextmanager
def one_system_parts() -> Iterator[None]:
    """Within the block, readers and :func:`validate_scores` accept the scores of a single system: a part that the
    caller merges with others (``votebench watch`` reads one model's folder at a time).  Ranking needs two."""
    token = _LEAST_SYSTEMS.set(1)
    try:
        yield
    finally:
        _LEAST_SYSTEMS.reset(token)


def least_systems() -> int:
    """The fewest systems a score tensor may have here: 2, or 1 inside :func:`one_system_parts`."""
    return _LEAST_SYSTEMS.get()


def validate_scores(scores: xr.DataArray, *, source: str = "scores") -> None:
    """Check the canonical form; raise :class:`VotebenchError` naming the problem.

    Checks dims, numeric dtype, unique labels, at least two systems and, for
    in-memory data, that every task has at least one score and every score is finite.

    Parameters
    ----------
    scores : xarray.DataArray
        The tensor to check.
    source : str
        Where it comes from (the start of every message).

    Returns
    -------
    None
        Nothing: a tensor that passes is canonical.

    Examples
    --------
    >>> import engine, numpy as np, xarray as xr
    >>> one = xr.DataArray(np.ones((1, 1, 1)), dims=("system", "task", "instance"),
    ...                    coords={"system": ["a"], "task": ["t"], "instance": [0]}, name="scores")
    >>> engine.validate_scores(one)
    Traceback (most recent call last):
    ...
    engine.errors.VotebenchError: scores: ranking needs at least two systems, found 1 (a)
    """
    if not isinstance(scores, xr.DataArray):
        raise VotebenchError(f"{source}: expected an xarray.DataArray, got {type(scores).__name__}")
    if set(scores.dims) != set(CANONICAL):
        raise VotebenchError(f"{source}: dims must be {CANONICAL}, got {scores.dims}")
    if not np.issubdtype(scores.dtype, np.floating):
        raise VotebenchError(f"{source}: scores must be floating point, got {scores.dtype}")
    for dim in CANONICAL:
        if dim not in scores.coords:
            raise VotebenchError(f"{source}: missing {dim!r} coordinate")
        dup = first_duplicate(scores[dim].values.tolist())
        if dup is not None:
            raise VotebenchError(f"{source}: duplicate {dim} label {dup!r}")
    n_sys = scores.sizes[SYSTEM]
    if n_sys < least_systems():
        names = ", ".join(map(str, scores[SYSTEM].values.tolist())) or "none"
        raise VotebenchError(f"{source}: ranking needs at least two systems, found {n_sys} ({names})")
    if scores.sizes[TASK] < 1:
        raise VotebenchError(f"{source}: no tasks")
    if isinstance(scores.data, np.ndarray):
        empty = np.isnan(scores.values).all(axis=(0, 2))
        if empty.any():
            bad = [str(t) for t in scores[TASK].values[empty]]
            raise VotebenchError(f"{source}: task {bad[0]!r} has no scores" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
        finite = np.isfinite(scores.values) | np.isnan(scores.values)
        if not finite.all():
            s, t, k = (int(i[0]) for i in np.nonzero(~finite))
            raise VotebenchError(
                f"{source}: score of system {scores[SYSTEM].values[s]!r} on task {scores[TASK].values[t]!r} "
                f"is not finite ({scores.values[s, t, k]})"
            )


#: a reader inside :func:`validation_deferred` leaves the check of the tensor it builds to its caller
_DEFERRED: contextvars.ContextVar[bool] = contextvars.ContextVar("votebench_validation_deferred", default=False)


class _Checked:
    """The tensors checked in this process: ``id`` -> (the tensor and its data, held weakly; its label coordinates).

    The label coordinates are held (they take no weak reference; an entry goes with its tensor), so labels renamed
    in place (``scores.coords["system"] = [...]``) make the tensor one to check again."""

    def __init__(self) -> None:
        self.items: dict[int, tuple[weakref.ref[xr.DataArray], weakref.ref[Any] | None, tuple[Any, ...]]] = {}

    @staticmethod
    def _labels(scores: xr.DataArray) -> tuple[Any, ...]:
        return tuple(scores.coords[d].variable if d in scores.coords else None for d in CANONICAL)

    def holds(self, scores: xr.DataArray) -> bool:
        hit = self.items.get(id(scores))  # one dict read (atomic): no lock, so a weakref callback never waits
        return (hit is not None and hit[0]() is scores and (hit[1] is None or hit[1]() is scores.data)
                and all(a is b for a, b in zip(hit[2], self._labels(scores), strict=True)))

    def add(self, scores: xr.DataArray) -> None:
        try:
            data_ref: weakref.ref[Any] | None = weakref.ref(scores.data)
        except TypeError:  # data that takes no weak reference: the tensor's identity alone
            data_ref = None
        key = id(scores)
        self.items[key] = (weakref.ref(scores, functools.partial(self.drop, key)), data_ref, self._labels(scores))

    def drop(self, key: int, ref: weakref.ref[xr.DataArray]) -> None:
        """A checked tensor is gone: forget it (unless its ``id`` already names a newer tensor)."""
        hit = self.items.get(key)
        if hit is not None and hit[0] is ref:
            self.items.pop(key, None)  # a new entry under this id is only checked again


_CHECKED = _Checked()


def ensure_valid(scores: xr.DataArray, *, source: str = "scores") -> None:
    """:func:`validate_scores` once per tensor: one already checked in this process (the same object holding the
    same data array and the same label coordinates) is not checked again, so a request read, opened and planned in
    several steps checks its tensor once.  A tensor changed by an xarray operation is a new object, and one given
    new data or new labels is checked again; values written into its data array in place are not (as a planned
    request is not planned again: :func:`engine.labelled.core.prepare`).  A tensor checked where one system is
    allowed (:func:`one_system_parts`) is not remembered as checked."""
    if isinstance(scores, xr.DataArray) and _CHECKED.holds(scores):
        return
    validate_scores(scores, source=source)
    if least_systems() >= 2:
        _CHECKED.add(scores)


@contextlib.contextmanager
def validation_deferred() -> Iterator[None]:
    """Within this block :func:`scores_from_array` does not check the tensor it builds: the caller checks the
    finished one (:func:`engine.io.readers.open_scores` after the sidecar)."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


# --------------------------------------------------------------------------------------------
# sidecar
# --------------------------------------------------------------------------------------------
def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """``<dir>/<name>.meta.json`` for a data file ``<dir>/<name>.<ext>`` (``.csv``, ``.csv.gz``, ``.jsonl.gz``, ...)."""
    p = Path(path)
    name = p.name
    for suf in _SUFFIXES:
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
            break
    return p.with_name(name + ".meta.json")


def read_sidecar(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``.meta.json`` sidecar; a malformed one raises :class:`VotebenchError`.

    ``higher_is_better`` must map task names to true/false and ``task_groups``
    must map grouping names to ``{group: [task, ...]}`` objects.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError) as exc:  # ValueError: bad JSON, bad UTF-8, an integer of over 4,300 digits
        raise VotebenchError(f"{path}: cannot read sidecar: {exc}") from None
    if not isinstance(meta, dict):
        raise VotebenchError(f"{path}: sidecar must hold a JSON object")
    check_sidecar(meta, str(path))
    return meta


def check_sidecar(meta: Mapping[str, Any], source: str = "sidecar") -> None:
    """Check the shape of a sidecar's ``higher_is_better`` and ``task_groups`` (:class:`VotebenchError` naming the problem).

    A key that looks like one of them but is spelt otherwise (``higher-is-better``, ``task_group``, or
    ``lower_is_better``) is refused too: it would be ignored, and every task would silently be higher-is-better.
    """
    import difflib

    for key in meta:
        norm = str(key).lower().replace("-", "_").replace(" ", "_")
        if key in ("higher_is_better", "task_groups"):
            continue
        if norm == "lower_is_better":
            raise VotebenchError(f"{source}: a sidecar gives directions as 'higher_is_better': {{task: false}} for the "
                                 f"tasks where lower is better, not as {key!r}")
        close = difflib.get_close_matches(norm, ["higher_is_better", "task_groups"], n=1, cutoff=0.8)
        if close and close[0] not in meta:
            raise VotebenchError(f"{source}: unknown sidecar key {key!r}: did you mean {close[0]!r}?")
    hib = meta.get("higher_is_better", {})
    if not isinstance(hib, dict) or not all(isinstance(v, bool) for v in hib.values()):
        raise VotebenchError(f"{source}: 'higher_is_better' must map task names to true/false")
    groups = meta.get("task_groups")
    if groups is None:
        return
    shape = "'task_groups' must map grouping names to objects {group: [task, ...]}"
    if not isinstance(groups, dict):
        raise VotebenchError(f"{source}: {shape}, got {type(groups).__name__} {_short(groups)}")
    for key, grouping in groups.items():
        if not isinstance(grouping, dict):
            raise VotebenchError(f"{source}: {shape}; grouping {key!r} is {type(grouping).__name__} {_short(grouping)}")
        seen: dict[str, str] = {}
        for g, members in grouping.items():
            if not isinstance(members, list) or not all(isinstance(t, str) for t in members):
                raise VotebenchError(f"{source}: {shape}; group {g!r} of grouping {key!r} is not a list of task names")
            for t in members:
                if t in seen and seen[t] != g:  # weights 1/|group| and two-step rules need one group per task
                    raise VotebenchError(f"{source}: task {t!r} is in groups {seen[t]!r} and {g!r} of grouping {key!r}; "
                                         "a task belongs to one group of a grouping")
                seen[t] = g


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _groups_from_meta(meta: Mapping[str, Any], tasks: Sequence[str]) -> dict[str, str]:
    groups = meta.get("task_groups") or {}
    if not isinstance(groups, dict) or not groups:
        return {}
    # prefer the benchmark's own categories; otherwise the first grouping
    key = "benchmark_categories" if "benchmark_categories" in groups else next(iter(groups))
    grouping = groups[key]
    if not isinstance(grouping, dict):
        return {}
    out: dict[str, str] = {}
    for g, members in grouping.items():
        for t in members if isinstance(members, list) else []:
            out.setdefault(str(t), str(g))
    return {t: out[t] for t in tasks if t in out}


def _unknown_tasks(names: Sequence[str], tasks: Sequence[str]) -> list[str]:
    known = set(tasks)
    return sorted({str(t) for t in names if str(t) not in known})


def _check_sidecar_tasks(meta: Mapping[str, Any], tasks: list[str], source: str) -> None:
    """Every task the sidecar names is one of ``tasks``."""
    hib_map = meta.get("higher_is_better", {})
    unknown = _unknown_tasks(list(hib_map), tasks)
    if unknown and len(unknown) == len(hib_map):
        raise VotebenchError(f"{source}: sidecar directions name none of the file's tasks (e.g. {unknown[0]!r})")
    if unknown:
        raise VotebenchError(f"{source}: sidecar 'higher_is_better' names {len(unknown)} task(s) the input does not have: "
                             f"{', '.join(map(repr, unknown[:5]))}" + (" ..." if len(unknown) > 5 else ""))
    for key, grouping in (meta.get("task_groups") or {}).items():
        unknown = _unknown_tasks([t for members in grouping.values() for t in members], tasks)
        if unknown:
            raise VotebenchError(f"{source}: sidecar 'task_groups' grouping {key!r} names {len(unknown)} task(s) the input "
                                 f"does not have: {', '.join(map(repr, unknown[:5]))}" + (" ..." if len(unknown) > 5 else ""))


def apply_sidecar(scores: xr.DataArray, meta: Mapping[str, Any], source: str, *,
                  keep_unnamed: bool = False) -> xr.DataArray:
    """``scores`` with a sidecar's directions, task groups and provenance attributes (as :func:`engine.open_scores` applies them).

    Parameters
    ----------
    scores : xarray.DataArray
        The canonical tensor.
    meta : mapping
        The sidecar's content (:func:`read_sidecar`).
    source : str
        The input's name, for the messages.
    keep_unnamed : bool
        Tasks the sidecar does not name keep the direction and group ``scores``
        has (for inputs that carry their own, e.g. lm-evaluation-harness and HELM
        outputs); by default they become higher-is-better, each its own group.

    Returns
    -------
    xarray.DataArray
        A new tensor (the data is shared).

    Raises
    ------
    VotebenchError
        When the sidecar is malformed or names tasks ``scores`` does not have.
    """
    check_sidecar(meta, f"{source}: sidecar")
    tasks = [str(t) for t in scores[TASK].values]
    _check_sidecar_tasks(meta, tasks, source)
    hib_map, groups = meta.get("higher_is_better", {}), _groups_from_meta(meta, tasks)
    own_hib = scores["higher_is_better"].values if keep_unnamed else np.ones(len(tasks), dtype=bool)
    own_group = scores["group"].values if keep_unnamed else tasks
    scores = scores.assign_coords(
        higher_is_better=(TASK, np.array([bool(hib_map.get(t, own)) for t, own in zip(tasks, own_hib)], dtype=bool)),
        group=(TASK, np.array(task_group_labels(tasks, groups, [str(g) for g in own_group]), dtype=object)),
    )
    keep = {k: meta[k] for k in ("name", "level", "paper", "license") if isinstance(meta.get(k), str)}
    if isinstance(meta.get("source"), dict):
        keep["source"] = json.dumps(meta["source"], sort_keys=True)
    if isinstance(meta.get("task_groups"), dict):
        keep["task_groups"] = json.dumps(meta["task_groups"], sort_keys=True)
    scores.attrs.update(keep)
    return scores


def with_lower_is_better(scores: xr.DataArray, lower_is_better: Sequence[str]) -> xr.DataArray:
    """``scores`` with the tasks ``lower_is_better`` made lower-is-better (``--lower-is-better``: it overrides the sidecar).

    Raises
    ------
    VotebenchError
        When a task named is not in ``scores``.
    """
    lower = [str(t) for t in lower_is_better]
    if not lower:
        return scores
    tasks = [str(t) for t in scores[TASK].values]
    unknown = [t for t in lower if t not in tasks]
    if unknown:
        raise VotebenchError(f"--lower-is-better names unknown task(s): {', '.join(unknown)}")
    hib = np.array([t not in lower for t in tasks]) & np.asarray(scores["higher_is_better"].values, dtype=bool)
    return scores.assign_coords(higher_is_better=(TASK, hib))


# --------------------------------------------------------------------------------------------
# what a user is told
# --------------------------------------------------------------------------------------------
def defaulted_directions(path: str | os.PathLike[str], tasks: Sequence[str], *,
                         meta: str | os.PathLike[str] | Mapping[str, Any] | bool | None = None,
                         lower_is_better: Sequence[str] = ()) -> list[str]:
    """The tasks of a score file whose direction nothing gave, so that higher-is-better was assumed.

    Parameters
    ----------
    path : path
        The input as given to :func:`engine.open_scores`.  A folder (zarr store,
        lm-evaluation-harness or HELM output) or a URL carries its own
        directions: nothing is reported for it.
    tasks : sequence of str
        The input's tasks.
    meta : path, mapping or bool, optional
        As :func:`engine.open_scores`: the sidecar given, ``None`` for the default
        ``<name>.meta.json`` beside the file, ``False`` for none.
    lower_is_better : sequence of str
        Tasks a flag declared lower-is-better.

    Returns
    -------
    list of str
        The tasks named neither by the sidecar's ``higher_is_better`` nor by
        ``lower_is_better``, in input order.
    """
    p = Path(path)
    if is_url(path) or p.is_dir():
        return []
    if meta is None or isinstance(meta, bool):
        sc = sidecar_path(p)
        given: Mapping[str, Any] = read_sidecar(sc) if meta is not False and sc.exists() else {}
    else:
        given = meta if isinstance(meta, Mapping) else read_sidecar(meta)
    named = set(given.get("higher_is_better", {}))
    named |= {str(t) for t in lower_is_better}
    return [str(t) for t in tasks if str(t) not in named]


def directions_note(path: str | os.PathLike[str], tasks: Sequence[str], *, meta: Any = None,
                    lower_is_better: Sequence[str] = (), shown: int = 6) -> str | None:
    """One line saying which tasks were assumed higher-is-better (:func:`defaulted_directions`), or ``None``."""
    left = defaulted_directions(path, tasks, meta=meta, lower_is_better=lower_is_better)
    if not left:
        return None
    names = ", ".join(left[:shown]) + (f", ... ({len(left) - shown} more)" if len(left) > shown else "")
    n = len(tasks)
    what = ("the only task" if n == 1 else f"all {n} tasks") if len(left) == n else f"{len(left)} of {n} tasks"
    return (f"no direction given for {what} (no sidecar entry, no --lower-is-better): higher is better assumed for "
            f"{names}")


def left_out_judges(scores: xr.DataArray) -> list[tuple[str, int, int]]:
    """Per task, the judges (instances) a ``drop-judges`` policy removes and the judges present: ``(task, dropped, present)``.

    Counted on in-memory scores only (a lazily read store would need a pass over its chunks): ``[]`` otherwise.
    """
    if not isinstance(scores.data, np.ndarray):
        return []
    x = np.asarray(scores.transpose("task", "instance", "system").values, dtype=np.float64)
    present = ~np.isnan(x)
    judged = present.any(axis=-1)
    dropped = judged & ~present.all(axis=-1)
    tasks = [str(t) for t in scores["task"].values]
    return [(t, int(d), int(j)) for t, d, j in zip(tasks, dropped.sum(axis=1), judged.sum(axis=1)) if d]


_installed = False


class _DeferredDaskModule:
    """Stands in for xarray's cached ``DuckArrayModule("dask")`` until ``dask.array`` is imported."""

    def __init__(self, pycompat: Any) -> None:
        self._pycompat = pycompat

    def _real(self) -> Any:
        real = self._pycompat.DuckArrayModule("dask")
        self._pycompat._cached_duck_array_modules["dask"] = real
        return real

    @property
    def type(self) -> tuple[type, ...]:
        if "dask.array" not in sys.modules:
            return ()  # nothing can be a dask array yet
        return self._real().type

    def __getattr__(self, name: str) -> Any:  # version, module, available: ask dask itself
        return getattr(self._real(), name)


def defer_dask_import() -> bool:
    """Let xarray test for dask arrays without importing dask until dask is imported elsewhere.

    Idempotent.  Data already wrapped in dask, or anything created after dask
    was imported, is recognised exactly as before.

    Returns
    -------
    bool
        Whether the deferred checks are in place (``False`` when this xarray
        keeps its internals elsewhere; then xarray imports dask as usual).
    """
    global _installed
    if _installed:
        return True
    if "dask" in sys.modules:
        return False  # nothing to save
    try:
        from xarray.namedarray import pycompat, utils
    except ImportError:  # pragma: no cover - another xarray layout
        return False
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    original = getattr(utils, "is_dask_collection", None)
    if not isinstance(cache, dict) or not callable(original) or not hasattr(pycompat, "DuckArrayModule"):
        return False  # pragma: no cover - another xarray layout
    if "dask" not in cache:
        cache["dask"] = _DeferredDaskModule(pycompat)

    def is_dask_collection(x: object) -> bool:
        if "dask" not in sys.modules:
            return False  # no dask graph can exist before dask is imported
        return bool(original(x))

    is_dask_collection.__doc__ = original.__doc__
    utils.is_dask_collection = is_dask_collection  # type: ignore[assignment]  # same call, a plain bool
    _installed = True
    return True


defer_dask_import()  # an in-memory table never needs dask: do not let xarray import it
