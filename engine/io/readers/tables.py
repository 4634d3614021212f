"""Readers of score tables: CSV / TSV (optionally gzipped) and Parquet, each wide or long.

* **wide**: first column the system name, one column per task; an empty cell is missing;
* **long**: columns ``system, task, [instance,] score`` (any order and case), one row per score.

The shape is read from the header (:func:`is_long_header`).  The readers ``wide``
and ``long`` are used only when named (``format="wide"``): they check that the
table has that shape before reading it.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from engine.errors import VotebenchError
from engine.io.readers.common import open_text, reading_text, short_list
from engine.labelled.canonical import first_duplicate, scores_from_array

__all__ = ["CSV_SUFFIXES", "MISSING_TOKENS", "PARQUET_SUFFIXES", "instance_labels",
           "is_long_header", "read_csv", "read_long", "read_parquet", "read_wide"]

_LONG_COLUMNS = ("system", "task", "instance", "score")
#: score cells read as missing (after stripping, case-insensitive)
MISSING_TOKENS = frozenset({"", "nan", "na", "n/a", "null", "none", "-"})
#: suffixes of the text tables (``.tsv``: tab-separated; ``.txt``: comma-separated)
CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")


def _delimiter(path: Path) -> str:
    return "\t" if path.name.lower().endswith((".tsv", ".tsv.gz")) else ","


def _read_text(path: Path) -> str:
    with reading_text(path), open_text(path, newline="") as fh:
        return fh.read()


def _to_float(col: pd.Series, *, source: str, column: str, line_offset: int = 2) -> np.ndarray:
    """Parse a column of score strings; empty / 'nan' / '-' are missing, anything else must be a finite number."""
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
        vals = col.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = col.astype(str).str.strip()
        missing = text.str.lower().isin(MISSING_TOKENS) | col.isna()
        vals = pd.to_numeric(text.where(~missing, None), errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(vals) & ~missing.to_numpy()
        if bad.any():
            i = int(np.argmax(bad))
            raise VotebenchError(
                f"{source}: line {i + line_offset}: {column} value {_shown(col.iloc[i])} is not a number"
            )
    inf = np.isinf(vals)
    if inf.any():
        i = int(np.argmax(inf))
        raise VotebenchError(f"{source}: line {i + line_offset}: {column} value {_shown(col.iloc[i])} is not a finite number")
    return vals


def _shown(value: object) -> str:
    """A cell as the user wrote it: text quoted, numbers plain (``inf``, not ``np.float64(inf)``)."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def _instance_codes(labels: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(labels, sort=False)
    u = pd.Index(uniques)
    try:
        as_int = pd.to_numeric(u.astype(str), errors="raise", downcast=None)
        if pd.api.types.is_integer_dtype(as_int) and len(set(as_int.tolist())) == len(u):
            return codes, np.asarray(as_int, dtype=np.int64)
    except (ValueError, TypeError):
        pass
    return codes, np.asarray([str(v) for v in u], dtype=object)


def instance_labels(labels: Sequence[str]) -> np.ndarray:
    """Instance coordinate of distinct labels (in order), as the table readers make it: integers when every label is one."""
    return _instance_codes(pd.Series(list(labels), dtype=object))[1]


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
    i_codes, instances = _instance_codes(inst_col)
    if "instance" not in cols:
        instances = np.array([0])
    buf = np.full((len(tasks), len(instances), len(systems)), np.nan)
    buf[t_codes, i_codes, s_codes] = score
    return scores_from_array(
        buf, systems=list(systems), tasks=list(tasks), instances=list(instances), layout="system-last"
    )


def _from_wide_frame(df: pd.DataFrame, header: Sequence[str], *, source: str) -> xr.DataArray:
    header = [str(h).strip() for h in header]
    dup = first_duplicate(header)
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
    d = first_duplicate(systems.tolist())
    if d is not None:
        raise VotebenchError(f"{source}: duplicate system {d!r}")
    cols = [_to_float(df.iloc[:, j], source=source, column=f"task {header[j]!r}") for j in range(1, len(header))]
    values = np.stack(cols, axis=1)
    return scores_from_array(values, systems=systems.tolist(), tasks=header[1:])


def is_long_header(header: Sequence[str]) -> bool:
    """Whether a table header is the long form ``system, task, [instance,] score`` (any order and case)."""
    names = {str(h).strip().lower() for h in header}
    return {"system", "task", "score"} <= names and names <= set(_LONG_COLUMNS)


def _from_frame(df: pd.DataFrame, header: Sequence[str], source: str) -> xr.DataArray:
    if is_long_header(header):
        return _from_long_frame(df, source=source)
    return _from_wide_frame(df, header, source=source)


def _check_field_counts(text: str, n_fields: int, path: Path, delimiter: str) -> None:
    """Every non-blank record has exactly as many fields as the header."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        for row in reader:
            if row and len(row) != n_fields:
                raise VotebenchError(
                    f"{path}: malformed CSV (line {reader.line_num} has {len(row)} field{'s' if len(row) != 1 else ''}, "
                    f"the header has {n_fields})"
                )
    except csv.Error as exc:
        raise VotebenchError(f"{path}: malformed CSV (line {reader.line_num}: {exc})") from None


def read_csv(path: Path) -> xr.DataArray:
    """Read a wide or long CSV table (``.csv``, ``.csv.gz``; ``.tsv`` / ``.tsv.gz`` tab-separated).

    Parameters
    ----------
    path : pathlib.Path
        The file.

    Returns
    -------
    xarray.DataArray
        The canonical tensor, every task higher-is-better (the sidecar gives directions).

    Raises
    ------
    VotebenchError
        For an unreadable or malformed file, a non-numeric or duplicate score, a
        missing name, fewer than two systems or a task with no scores.
    """
    text = _read_text(path)
    if not text.strip():
        raise VotebenchError(f"{path}: empty file")
    if "\x00" in text[:4096]:
        raise VotebenchError(f"{path}: not a text CSV file (contains NUL bytes)")
    delimiter = _delimiter(path)
    try:
        header = next(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error as exc:
        raise VotebenchError(f"{path}: malformed CSV header ({exc})") from None
    _check_field_counts(text, len(header), path, delimiter)
    try:
        df = pd.read_csv(io.StringIO(text), sep=delimiter, dtype=str, keep_default_na=False, na_filter=False,
                         skipinitialspace=False)
    except (pd.errors.ParserError, csv.Error, ValueError) as exc:
        msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise VotebenchError(f"{path}: malformed CSV ({msg})") from None
    return _from_frame(df, header, str(path))


def read_parquet(path: Path) -> xr.DataArray:
    """Read a wide or long Parquet table (as :func:`read_csv`; numeric columns are used as they are)."""
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises many types for a bad file
        raise VotebenchError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    return _from_frame(df, [str(c) for c in df.columns], str(path))


def _peek_header(path: Path, parquet: bool) -> list[str] | None:
    """The column names of a table, without reading it; ``None`` when unreadable (the reader then says why)."""
    try:
        if parquet:
            import pyarrow.parquet as pq

            return [str(c) for c in pq.read_schema(path).names]
        opener: Any = gzip.open if path.name.lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            return next(csv.reader([fh.readline()], delimiter=_delimiter(path)), [])
    except Exception:  # unreadable: the table reader reports the problem in its own words
        return None


def _read_shaped(path: Path, shape: str) -> xr.DataArray:
    """A CSV or Parquet table that must be ``shape`` (``"wide"`` or ``"long"``)."""
    name = path.name.lower()
    parquet = name.endswith(PARQUET_SUFFIXES)
    if not parquet and not name.endswith(CSV_SUFFIXES):
        raise VotebenchError(f"{path}: format {shape!r} needs a CSV or Parquet file "
                             f"({', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)})")
    header = _peek_header(path, parquet)
    if header is not None and shape == "long" and not is_long_header(header):
        raise VotebenchError(f"{path}: format 'long' needs the columns system, task, [instance,] score; "
                             f"found {short_list(header)}")
    if header is not None and shape == "wide" and is_long_header(header):
        raise VotebenchError(f"{path}: format 'wide' given, but the columns {short_list(header)} are those of a long table")
    return read_parquet(path) if parquet else read_csv(path)


def read_wide(path: Path) -> xr.DataArray:
    """Read a CSV or Parquet table that must be wide (``format="wide"``)."""
    return _read_shaped(path, "wide")


def read_long(path: Path) -> xr.DataArray:
    """Read a CSV or Parquet table that must be long (``format="long"``)."""
    return _read_shaped(path, "long")
