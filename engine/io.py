"""Reading score tables into the canonical score tensor.

The canonical in-memory form is an ``xarray.DataArray`` named ``scores`` with
dims ``(system, task, instance)`` (see :mod:`engine.dims`), float64 (float32 is
kept when a store holds it), ``NaN`` = missing score, and coordinates

* ``system``, ``task``, ``instance``: labels (task-level data has one instance, ``0``);
* ``higher_is_better`` (task, bool): the direction of each task's metric;
* ``group`` (task, str): the task's group (the task's own name when ungrouped);
* ``n_instances`` (task, int): instances the task really has.

Ragged tasks (different instance counts) are padded with ``NaN``.  A judge,
that is a (task, instance) pair, with no score at all is padding and takes no
part in any aggregation; a ``NaN`` inside a judge that has other scores is a
truly *missing* score, which the aggregation rules either refuse or handle by
an explicit policy.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .dims import CANONICAL, INSTANCE, LAYOUT, SYSTEM, TASK
from .errors import VotebenchError
from .xrcompat import defer_dask_import

defer_dask_import()  # an in-memory table never needs dask: do not let xarray import it (see engine.xrcompat)

__all__ = ["MISSING_TOKENS", "apply_sidecar", "check_sidecar", "default_sidecar", "defaulted_directions", "directions_note",
           "instance_labels", "is_long_header", "is_url", "left_out_judges", "open_scores", "read_sidecar", "reading_text",
           "scores_from_array", "sidecar_path", "validate_scores"]

_LONG_COLUMNS = ("system", "task", "instance", "score")
_MISSING_TOKENS = frozenset({"", "nan", "na", "n/a", "null", "none", "-"})
#: score cells read as missing (after stripping, case-insensitive)
MISSING_TOKENS = _MISSING_TOKENS
_SUFFIXES = (".csv.gz", ".csv", ".parquet", ".pq", ".zarr", ".jsonl", ".json")


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
    """
    arr = np.asarray(values)
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise VotebenchError(f"scores must be real numbers, got dtype {arr.dtype}")
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    if layout == "system-first":
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if arr.ndim != 3:
            raise VotebenchError(f"scores must have shape (systems, tasks[, instances]), got {arr.shape}")
        buf = np.ascontiguousarray(np.moveaxis(arr, 0, -1))
    elif layout == "system-last":
        if arr.ndim != 3:
            raise VotebenchError(f"system-last scores must have shape (tasks, instances, systems), got {arr.shape}")
        buf = arr
    else:
        raise VotebenchError(f"unknown layout {layout!r}; use 'system-first' or 'system-last'")
    n_t, n_k, n_s = buf.shape
    systems = [f"s{i}" for i in range(n_s)] if systems is None else list(systems)
    tasks = [f"t{i}" for i in range(n_t)] if tasks is None else list(tasks)
    instances = list(range(n_k)) if instances is None else list(instances)
    for what, labels, n in (("systems", systems, n_s), ("tasks", tasks, n_t), ("instances", instances, n_k)):
        if len(labels) != n:
            raise VotebenchError(f"got {len(labels)} {what} labels for {n} {what}")
    tasks = [str(t) for t in tasks]
    if isinstance(higher_is_better, Mapping):
        hib = [bool(higher_is_better.get(t, True)) for t in tasks]
    elif higher_is_better is None or isinstance(higher_is_better, (bool, np.bool_)):
        hib = [True if higher_is_better is None else bool(higher_is_better)] * n_t
    else:
        hib = [bool(h) for h in higher_is_better]
    if isinstance(groups, Mapping):
        grp = [str(groups.get(t, t)) for t in tasks]
    elif groups is None:
        grp = list(tasks)
    else:
        grp = [str(g) for g in groups]
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
    validate_scores(da)
    return da


def _first_duplicate(labels: Sequence[Any]) -> Any | None:
    seen: set[Any] = set()
    for v in labels:
        if v in seen:
            return v
        seen.add(v)
    return None


def validate_scores(scores: xr.DataArray, *, source: str = "scores") -> None:
    """Check the canonical form; raise :class:`VotebenchError` naming the problem.

    Checks dims, numeric dtype, unique labels, at least two systems and, for
    in-memory data, that every task has at least one score.
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
        dup = _first_duplicate(scores[dim].values.tolist())
        if dup is not None:
            raise VotebenchError(f"{source}: duplicate {dim} label {dup!r}")
    n_sys = scores.sizes[SYSTEM]
    if n_sys < 2:
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


# --------------------------------------------------------------------------------------------
# sidecar
# --------------------------------------------------------------------------------------------
def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """``<dir>/<name>.meta.json`` for a data file ``<dir>/<name>.<ext>``."""
    p = Path(path)
    name = p.name
    for suf in _SUFFIXES:
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
            break
    return p.with_name(name + ".meta.json")


def _sidecar_base(path: Path) -> Path:
    return path.with_name(path.name[: -len(".gz")]) if path.name.lower().endswith(".jsonl.gz") else path


def default_sidecar(path: str | os.PathLike[str]) -> Path | None:
    """The sidecar :func:`open_scores` reads for ``path`` when given none: ``<name>.meta.json`` beside it, if it exists.

    A zarr store carries its directions and groups inside, so it has none.
    """
    p = Path(path)
    if _is_zarr(p):
        return None
    sc = sidecar_path(_sidecar_base(p))
    return sc if sc.is_file() else None


def read_sidecar(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``.meta.json`` sidecar; a malformed one raises :class:`VotebenchError`.

    ``higher_is_better`` must map task names to true/false and ``task_groups``
    must map grouping names to ``{group: [task, ...]}`` objects.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VotebenchError(f"{path}: cannot read sidecar: {exc}") from None
    if not isinstance(meta, dict):
        raise VotebenchError(f"{path}: sidecar must hold a JSON object")
    check_sidecar(meta, str(path))
    return meta


def check_sidecar(meta: Mapping[str, Any], source: str = "sidecar") -> None:
    """Check the shape of a sidecar's ``higher_is_better`` and ``task_groups`` (:class:`VotebenchError` naming the problem)."""
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
        for g, members in grouping.items():
            if not isinstance(members, list) or not all(isinstance(t, str) for t in members):
                raise VotebenchError(f"{source}: {shape}; group {g!r} of grouping {key!r} is not a list of task names")


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


def _apply_meta(da: xr.DataArray, meta: Mapping[str, Any], source: str) -> xr.DataArray:
    check_sidecar(meta, f"{source}: sidecar")
    tasks = [str(t) for t in da[TASK].values]
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
    hib = np.array([bool(hib_map.get(t, True)) for t in tasks])
    groups = _groups_from_meta(meta, tasks)
    da = da.assign_coords(
        higher_is_better=(TASK, hib),
        group=(TASK, np.array([groups.get(t, t) for t in tasks], dtype=object)),
    )
    keep = {k: meta[k] for k in ("name", "level", "paper", "license") if isinstance(meta.get(k), str)}
    if isinstance(meta.get("source"), dict):
        keep["source"] = json.dumps(meta["source"], sort_keys=True)
    if isinstance(meta.get("task_groups"), dict):
        keep["task_groups"] = json.dumps(meta["task_groups"], sort_keys=True)
    da.attrs.update(keep)
    return da


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _reading_text(path: Path) -> Iterator[None]:
    """Turn the errors of reading a (gzipped) UTF-8 text file into one-line :class:`VotebenchError` naming ``path``."""
    try:
        yield
    except UnicodeDecodeError:
        raise VotebenchError(f"{path}: not a UTF-8 text file") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise VotebenchError(f"{path}: not a valid gzip file ({exc})") from None
    except OSError as exc:
        raise VotebenchError(f"{path}: cannot read file ({exc.strerror or exc})") from None


def reading_text(path: str | os.PathLike[str]) -> contextlib.AbstractContextManager[None]:
    """Context manager turning the errors of reading a (gzipped) UTF-8 text file into one-line :class:`VotebenchError`."""
    return _reading_text(Path(path))


def _read_text(path: Path) -> str:
    with _reading_text(path):
        if path.name.lower().endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8-sig", newline="") as fh:
                return fh.read()
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return fh.read()


def _to_float(col: pd.Series, *, source: str, column: str, line_offset: int = 2) -> np.ndarray:
    """Parse a column of score strings; empty / 'nan' / '-' are missing, anything else must be a finite number."""
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
        vals = col.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = col.astype(str).str.strip()
        missing = text.str.lower().isin(_MISSING_TOKENS) | col.isna()
        vals = pd.to_numeric(text.where(~missing, None), errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(vals) & ~missing.to_numpy()
        if bad.any():
            i = int(np.argmax(bad))
            raise VotebenchError(
                f"{source}: line {i + line_offset}: {column} value {col.iloc[i]!r} is not a number"
            )
    inf = np.isinf(vals)
    if inf.any():
        i = int(np.argmax(inf))
        raise VotebenchError(f"{source}: line {i + line_offset}: {column} value {col.iloc[i]!r} is not a finite number")
    return vals


def _instance_labels(labels: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(labels, sort=False)
    u = pd.Index(uniques)
    try:
        as_int = pd.to_numeric(u.astype(str), errors="raise", downcast=None)
        if pd.api.types.is_integer_dtype(as_int) and len(set(as_int.tolist())) == len(u):
            return codes, np.asarray(as_int, dtype=np.int64)
    except (ValueError, TypeError):
        pass
    return codes, np.asarray([str(v) for v in u], dtype=object)


def _no_null_names(col: pd.Series, name: str, source: str) -> None:
    """A label column (system, task, instance) without null entries (Parquet nulls, NaN), else a one-line error."""
    null = col.isna().to_numpy()
    if null.any():
        i = int(np.argmax(null))
        raise VotebenchError(f"{source}: row {i + 1}: null {name} name")


def _from_long_frame(df: pd.DataFrame, *, source: str) -> xr.DataArray:
    cols = {str(c).strip().lower(): c for c in df.columns}
    missing_cols = [c for c in ("system", "task", "score") if c not in cols]
    if missing_cols:
        raise VotebenchError(f"{source}: long table needs columns system, task, [instance,] score; missing {', '.join(missing_cols)}")
    if len(df) == 0:
        raise VotebenchError(f"{source}: no score rows")
    for name in ("system", "task", "instance"):
        if name in cols:
            _no_null_names(df[cols[name]], name, source)
    sys_col = df[cols["system"]].astype(str).str.strip()
    task_col = df[cols["task"]].astype(str).str.strip()
    inst_col = df[cols["instance"]].astype(str).str.strip() if "instance" in cols else pd.Series(["0"] * len(df))
    for name, col in (("system", sys_col), ("task", task_col), ("instance", inst_col)):
        empty = (col == "") | (col.str.lower() == "nan")
        if empty.any():
            raise VotebenchError(f"{source}: line {int(np.argmax(empty.to_numpy())) + 2}: empty {name} name")
    score = _to_float(df[cols["score"]], source=source, column="score")
    key = pd.DataFrame({"s": sys_col, "t": task_col, "i": inst_col})
    dup = key.duplicated(keep="first").to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        raise VotebenchError(
            f"{source}: line {i + 2}: duplicate entry for system {sys_col.iloc[i]!r}, task {task_col.iloc[i]!r}, "
            f"instance {inst_col.iloc[i]!r}"
        )
    s_codes, systems = pd.factorize(sys_col, sort=False)
    t_codes, tasks = pd.factorize(task_col, sort=False)
    i_codes, instances = _instance_labels(inst_col)
    if "instance" not in cols:
        instances = np.array([0])
    buf = np.full((len(tasks), len(instances), len(systems)), np.nan)
    buf[t_codes, i_codes, s_codes] = score
    return scores_from_array(
        buf, systems=list(systems), tasks=list(tasks), instances=list(instances), layout="system-last"
    )


def _from_wide_frame(df: pd.DataFrame, header: Sequence[str], *, source: str) -> xr.DataArray:
    header = [str(h).strip() for h in header]
    dup = _first_duplicate(header)
    if dup is not None:
        raise VotebenchError(f"{source}: duplicate column {dup!r}")
    if len(header) < 2:
        raise VotebenchError(f"{source}: a wide table needs a system column and at least one task column")
    if len(df) == 0:
        raise VotebenchError(f"{source}: no score rows")
    _no_null_names(df.iloc[:, 0], "system", source)
    systems = df.iloc[:, 0].astype(str).str.strip()
    empty = (systems == "").to_numpy()
    if empty.any():
        raise VotebenchError(f"{source}: line {int(np.argmax(empty)) + 2}: empty system name")
    d = _first_duplicate(systems.tolist())
    if d is not None:
        raise VotebenchError(f"{source}: duplicate system {d!r}")
    cols = [_to_float(df.iloc[:, j], source=source, column=f"task {header[j]!r}") for j in range(1, len(header))]
    values = np.stack(cols, axis=1)
    return scores_from_array(values, systems=systems.tolist(), tasks=header[1:])


def _is_long(header: Sequence[str]) -> bool:
    names = {str(h).strip().lower() for h in header}
    return {"system", "task", "score"} <= names and names <= set(_LONG_COLUMNS)


def is_long_header(header: Sequence[str]) -> bool:
    """Whether a table header is the long form ``system, task, [instance,] score`` (any order and case)."""
    return _is_long(header)


def instance_labels(labels: Sequence[str]) -> np.ndarray:
    """Instance coordinate of distinct labels (in order), as the table readers make it: integers when every label is one."""
    return _instance_labels(pd.Series(list(labels), dtype=object))[1]


def apply_sidecar(scores: xr.DataArray, meta: Mapping[str, Any], source: str) -> xr.DataArray:
    """``scores`` with a sidecar's directions, task groups and provenance attributes (as :func:`open_scores` applies them).

    Raises
    ------
    VotebenchError
        When the sidecar is malformed or names tasks ``scores`` does not have.
    """
    return _apply_meta(scores, meta, source)


def _check_field_counts(text: str, n_fields: int, path: Path) -> None:
    """Every non-blank record has exactly as many fields as the header."""
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            if row and len(row) != n_fields:
                raise VotebenchError(
                    f"{path}: malformed CSV (line {reader.line_num} has {len(row)} field{'s' if len(row) != 1 else ''}, "
                    f"the header has {n_fields})"
                )
    except csv.Error as exc:
        raise VotebenchError(f"{path}: malformed CSV (line {reader.line_num}: {exc})") from None


def _read_csv(path: Path) -> xr.DataArray:
    text = _read_text(path)
    if not text.strip():
        raise VotebenchError(f"{path}: empty file")
    if "\x00" in text[:4096]:
        raise VotebenchError(f"{path}: not a text CSV file (contains NUL bytes)")
    try:
        header = next(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise VotebenchError(f"{path}: malformed CSV header ({exc})") from None
    _check_field_counts(text, len(header), path)
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False, skipinitialspace=False)
    except (pd.errors.ParserError, csv.Error, ValueError) as exc:
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise VotebenchError(f"{path}: malformed CSV ({msg})") from None
    if _is_long(header):
        return _from_long_frame(df, source=str(path))
    return _from_wide_frame(df, header, source=str(path))


def _read_parquet(path: Path) -> xr.DataArray:
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a bad file
        raise VotebenchError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    header = [str(c) for c in df.columns]
    if _is_long(header):
        return _from_long_frame(df, source=str(path))
    return _from_wide_frame(df, header, source=str(path))


def _is_zarr(path: Path) -> bool:
    return path.is_dir() and ((path / "zarr.json").exists() or (path / ".zgroup").exists())


def open_scores(
    path: str | os.PathLike[str],
    *,
    meta: str | os.PathLike[str] | Mapping[str, Any] | bool | None = None,
    format: str | None = None,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    split: str | Mapping[str, str] | None = None,
    perturbation: str | None = None,
) -> xr.DataArray:
    """Open a score table, store or folder of evaluation outputs as the canonical score tensor.

    Parameters
    ----------
    path : str or path-like
        One of

        * wide CSV (``.csv`` / ``.csv.gz``): first column the system name, one
          column per task; empty cell = missing;
        * long CSV: columns ``system, task, instance, score`` (``instance``
          optional); one row per score;
        * Parquet (``.parquet``) in either of the two shapes;
        * a zarr store written by :func:`engine.to_zarr`, opened lazily
          (dask-backed, chunks as stored);
        * generic JSONL (``.jsonl`` / ``.jsonl.gz``): one ``{"system", "task",
          "instance", "score"}`` object per line (:func:`engine.loaders.read_jsonl`);
        * a folder of lm-evaluation-harness per-sample outputs (``samples_<task>_<date>.jsonl``
          in one folder per model; :func:`engine.loaders.read_lm_eval`);
        * a folder of HELM runs (``per_instance_stats.json`` + ``run_spec.json``;
          :func:`engine.loaders.read_helm`).
    meta : path, mapping or bool, optional
        The sidecar with directions (``higher_is_better``) and ``task_groups``.
        Default: ``<name>.meta.json`` beside the file or folder, when it exists.
        ``False`` ignores any sidecar.  For lm-eval and HELM input, tasks the sidecar
        does not name keep the loader's direction and group.
    format : {"wide", "long", "lm-eval", "helm", "jsonl"}, optional
        Skip the detection by suffix / folder content.  ``"wide"`` and ``"long"``
        check that a CSV or Parquet file has that shape.
    metric : str or mapping task -> str, optional
        lm-eval and HELM only: the per-instance metric of each task (defaults: see
        the readers).
    filter : str or mapping task -> str, optional
        lm-eval only: the filter whose samples are read (default ``"none"``, else the
        task's first filter).
    split : str or mapping task -> str, optional
        HELM only: the split of the stats (default ``"test"``, else ``"valid"``).
    perturbation : str, optional
        HELM only: read this perturbation's instances (default: unperturbed only).

    Returns
    -------
    xarray.DataArray
        The ``scores`` tensor; in memory (numpy) for tables and outputs, dask-backed for stores.

    Raises
    ------
    VotebenchError
        For a missing, unreadable or malformed file, a non-numeric or duplicate
        score, fewer than two systems, a task with no scores, a folder with no
        known outputs, a metric the outputs lack or an option that does not
        apply to the input's format.
    """
    from . import loaders

    p = Path(path)
    if not p.exists():
        raise VotebenchError(f"{p}: no such file or directory")
    if format is not None and format not in loaders.FORMATS:
        raise VotebenchError(f"unknown format {format!r}; use one of {', '.join(loaders.FORMATS)}")
    name = p.name.lower()
    if p.is_dir():
        kind = "dir"
    elif name.endswith((".jsonl", ".jsonl.gz")):
        kind = "jsonl"
    elif name.endswith((".parquet", ".pq")):
        kind = "parquet"
    elif name.endswith((".csv", ".csv.gz", ".tsv", ".txt")):
        kind = "csv"
    else:
        kind = None
    if format in ("lm-eval", "helm"):
        kind = format
    elif format == "jsonl":
        if kind == "dir":
            raise VotebenchError(f"{p}: format 'jsonl' needs a file, not a directory")
        kind = "jsonl"
    elif format in ("wide", "long"):
        loaders._check_table_shape(p, format, kind or "unknown")
    elif kind == "dir":
        kind = "zarr" if _is_zarr(p) else loaders.detect_directory_format(p)
        if kind is None:
            raise VotebenchError(
                f"{p}: a directory that is not a zarr store and holds no lm-evaluation-harness samples_*.jsonl "
                "or HELM per_instance_stats.json"
            )
    elif kind == "jsonl" and loaders._looks_like_lm_eval_samples(p):
        raise VotebenchError(
            f"{p}: an lm-evaluation-harness samples file holds one model's results; "
            "open the folder that holds several model folders (or pass format='jsonl' for a generic score file)"
        )
    if kind is None:
        raise VotebenchError(
            f"{p}: unknown file type; expected .csv, .csv.gz, .parquet, .jsonl, a zarr store or a folder of lm-eval or HELM outputs"
        )
    users = {"metric": ("lm-eval", "helm"), "filter": ("lm-eval",), "split": ("helm",), "perturbation": ("helm",)}
    for key, value in {"metric": metric, "filter": filter, "split": split, "perturbation": perturbation}.items():
        if value is not None and kind not in users[key]:
            raise VotebenchError(f"{p}: option {key!r} applies to {' and '.join(users[key])} outputs only, not to {kind} input")

    if kind == "zarr":
        from .store import open_store

        da = open_store(p)
    elif kind == "lm-eval":
        da = loaders.read_lm_eval(p, metric=metric, filter=filter)
    elif kind == "helm":
        da = loaders.read_helm(p, metric=metric, split=split, perturbation=perturbation)
    elif kind == "jsonl":
        da = loaders.read_jsonl(p)
    elif kind == "parquet":
        da = _read_parquet(p)
    else:
        da = _read_csv(p)
    if kind != "zarr":
        da.attrs.setdefault("name", sidecar_path(_sidecar_base(p)).name[: -len(".meta.json")])
    if meta is None:
        sc = None if kind == "zarr" else default_sidecar(p)
        meta = False if sc is None else sc
    if meta is not False:
        meta_dict = meta if isinstance(meta, Mapping) else read_sidecar(meta)
        own_hib, own_group = da["higher_is_better"].values.copy(), da["group"].values.copy()
        da = _apply_meta(da, meta_dict, str(p))
        if kind in ("lm-eval", "helm"):  # tasks the sidecar leaves out keep the loader's direction and group
            tasks = [str(t) for t in da[TASK].values]
            named, meta_groups = meta_dict.get("higher_is_better", {}), _groups_from_meta(meta_dict, tasks)
            hib_named = np.array([t in named for t in tasks], dtype=bool)
            grouped = np.array([t in meta_groups for t in tasks], dtype=bool)
            da = da.assign_coords(
                higher_is_better=(TASK, np.where(hib_named, da["higher_is_better"].values, own_hib)),
                group=(TASK, np.where(grouped, da["group"].values, own_group).astype(object)),
            )
    da.attrs["source_file"] = str(p)
    return da


def defaulted_directions(path: str | os.PathLike[str], tasks: Sequence[str], *,
                         meta: str | os.PathLike[str] | Mapping[str, Any] | bool | None = None,
                         lower_is_better: Sequence[str] = ()) -> list[str]:
    """The tasks of a score file whose direction nothing gave, so that higher-is-better was assumed.

    Parameters
    ----------
    path : path
        The input as given to :func:`open_scores`.  A folder (zarr store,
        lm-evaluation-harness or HELM output) or a URL carries its own
        directions: nothing is reported for it.
    tasks : sequence of str
        The input's tasks.
    meta : path, mapping or bool, optional
        As :func:`open_scores`: the sidecar given, ``None`` for the default
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
    if "://" in str(path) or p.is_dir():
        return []
    if meta is None:
        base = p.with_name(p.name[: -len(".gz")]) if p.name.lower().endswith(".jsonl.gz") else p
        sc = sidecar_path(base)
        meta = sc if sc.exists() else False
    if meta is False:
        named: set[str] = set()
    else:
        named = set((meta if isinstance(meta, Mapping) else read_sidecar(meta)).get("higher_is_better", {}))
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
