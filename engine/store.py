"""Zarr storage of score tensors (zarr format 3).

A store holds one variable ``scores`` laid out as ``(task, instance, system)``
(system last, never chunked) plus the label and direction coordinates, so that
every chunk read from disk is directly a block of contiguous judge rows for
the kernels.  Writes go to a temporary folder that is renamed into place, so a
failed write leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .dims import CANONICAL, INSTANCE, LAYOUT, SYSTEM, TASK
from .errors import VotebenchError
from .io import validate_scores

__all__ = ["to_zarr", "open_store", "default_chunks"]

_TARGET_CELLS = 1 << 22  # about 32 MB of float64 per chunk


def default_chunks(scores: xr.DataArray) -> dict[str, int]:
    """Chunks of about 4M cells: whole systems, one task, as many instances as fit."""
    n_s = scores.sizes[SYSTEM]
    n_k = scores.sizes[INSTANCE]
    per_task = n_s * n_k
    if per_task >= _TARGET_CELLS:
        return {TASK: 1, INSTANCE: max(1, _TARGET_CELLS // n_s)}
    return {TASK: max(1, _TARGET_CELLS // per_task), INSTANCE: n_k}


def _json_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in attrs.items():
        try:
            json.dumps(v)
        except TypeError:
            v = str(v)
        out[str(k)] = v
    return out


def to_zarr(
    scores: xr.DataArray,
    path: str | os.PathLike[str],
    *,
    chunks: Mapping[str, int] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a score tensor to a chunked zarr (v3) store.

    Parameters
    ----------
    scores : xarray.DataArray
        The canonical score tensor (numpy or dask backed).
    path : path-like
        Folder of the store.
    chunks : mapping, optional
        Chunk sizes for ``task`` and ``instance``; ``system`` is never chunked
        (a ``system`` entry is rejected).  Default: :func:`default_chunks`.
    overwrite : bool
        Replace an existing store.

    Returns
    -------
    pathlib.Path
        The store's path.
    """
    validate_scores(scores)
    path = Path(path)
    chunks = dict(default_chunks(scores) if chunks is None else chunks)
    if SYSTEM in chunks and chunks[SYSTEM] not in (-1, scores.sizes[SYSTEM]):
        raise VotebenchError("the system dimension is never chunked; remove 'system' from chunks")
    chunks.pop(SYSTEM, None)
    unknown = set(chunks) - {TASK, INSTANCE}
    if unknown:
        raise VotebenchError(f"unknown chunk dimension(s) {sorted(unknown)}; use task and instance")
    full = {TASK: scores.sizes[TASK], INSTANCE: scores.sizes[INSTANCE]}
    sizes = {d: (full[d] if chunks.get(d, -1) in (-1, None) else min(int(chunks[d]), full[d])) for d in full}
    if any(v < 1 for v in sizes.values()):
        raise VotebenchError(f"chunk sizes must be positive, got {chunks}")
    if path.exists() and not overwrite:
        raise VotebenchError(f"{path}: already exists (pass overwrite=True to replace it)")
    da = scores.transpose(*LAYOUT).chunk({TASK: sizes[TASK], INSTANCE: sizes[INSTANCE], SYSTEM: -1})
    ds = da.to_dataset(name="scores")
    ds["scores"].attrs = {}  # provenance lives in the (JSON-cleaned) store attrs only
    for name in ds.variables:
        ds[name].encoding = {}
    for name in (SYSTEM, TASK, "group", INSTANCE):
        if name in ds.coords and ds[name].dtype.kind in "OU":
            # variable-length UTF-8 strings (zarr v3 'string' data type)
            ds.coords[name] = (ds[name].dims, np.array([str(v) for v in ds[name].values], dtype=object))
    ds.attrs = _json_attrs(scores.attrs)
    ds.attrs["votebench_layout"] = list(LAYOUT)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        ds.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def open_store(path: str | os.PathLike[str]) -> xr.DataArray:
    """Open a store written by :func:`to_zarr` lazily (dask-backed) in canonical dim order."""
    try:
        ds = xr.open_zarr(path, zarr_format=3, consolidated=False, chunks={})
    except Exception as exc:  # zarr raises a zoo of types for a broken store
        raise VotebenchError(f"{path}: not a readable zarr store ({type(exc).__name__}: {exc})") from None
    if "scores" not in ds:
        raise VotebenchError(f"{path}: zarr store has no 'scores' array")
    da = ds["scores"]
    # label, direction and group coordinates are small: read them now, so that no
    # later step has to compute anything to learn them
    small = {n: (da[n].dims, np.asarray(da[n].values)) for n in da.coords if n not in da.dims}
    da = da.assign_coords(small)
    if set(da.dims) != set(CANONICAL):
        raise VotebenchError(f"{path}: 'scores' must have dims {CANONICAL}, got {da.dims}")
    for name in (SYSTEM, TASK, "group"):
        if name in da.coords:
            da = da.assign_coords({name: (da[name].dims, da[name].values.astype(object))})
    if "higher_is_better" not in da.coords:
        da = da.assign_coords(higher_is_better=(TASK, np.ones(da.sizes[TASK], dtype=bool)))
    if "group" not in da.coords:
        da = da.assign_coords(group=(TASK, da[TASK].values.astype(object)))
    da = da.transpose(*CANONICAL)
    da.attrs = dict(ds.attrs)
    da.attrs.pop("votebench_layout", None)
    validate_scores(da, source=str(path))
    return da
