"""Zarr storage of score tensors (zarr format 3).

A store holds one variable ``scores`` laid out as ``(task, instance, system)``
(system last, never chunked) plus the label and direction coordinates, so that
every chunk read from disk is directly a block of contiguous judge rows for
the kernels.  Writes go to a temporary folder that is renamed into place, so a
failed write leaves nothing behind.

:func:`open_store` reads the scores chunk by chunk as they are computed and
checks every chunk: a corrupted chunk (e.g. a zstd error) or an infinite score
raises :class:`~engine.errors.VotebenchError` naming the store, as the CSV
reader does for a table.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import CANONICAL, INSTANCE, LAYOUT, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.io.files import make_temp_dir, publish_dir
from engine.labelled.canonical import ensure_valid

__all__ = ["CheckedChunks", "default_chunks", "open_store", "store_dataset", "to_zarr"]

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

    Examples
    --------
    >>> import engine, numpy as np, pathlib, tempfile
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 8.5]]), systems=["a", "b", "c"])
    >>> path = engine.to_zarr(s, pathlib.Path(tempfile.mkdtemp()) / "s.zarr")
    >>> lazy = engine.rank(engine.open_scores(path), rule="borda")  # dask-backed: nothing computed yet
    >>> lazy.compute()["rank"].values.tolist()
    [2.0, 3.0, 1.0]
    """
    ds = store_dataset(scores, chunks=chunks)
    path = Path(path)
    if path.exists() and not overwrite:
        raise VotebenchError(f"{path}: already exists (pass overwrite=True to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(path)
    try:
        ds.to_zarr(tmp, mode="w", zarr_format=3, consolidated=False)
        publish_dir(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def store_dataset(scores: xr.DataArray, *, chunks: Mapping[str, int] | None = None) -> xr.Dataset:
    """The Dataset :func:`to_zarr` writes for ``scores``: ``scores`` laid out ``(task, instance, system)`` in its chunks.

    Parameters
    ----------
    scores : xarray.DataArray
        The canonical score tensor (numpy or dask backed; validated here).
    chunks : mapping, optional
        As for :func:`to_zarr`.

    Returns
    -------
    xarray.Dataset
        Dask-chunked as the store will be, with JSON-clean attributes (``to_zarr(..., compute=False)``
        writes its skeleton).
    """
    ensure_valid(scores)
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
    da = scores.transpose(*LAYOUT).chunk({TASK: sizes[TASK], INSTANCE: sizes[INSTANCE], SYSTEM: -1})
    ds = da.to_dataset(name="scores")
    # the label, direction and group coordinates are small: in memory, so that a skeleton write (compute=False) has them
    ds = ds.assign_coords({n: ds[n].compute() for n in ds.coords if n not in ds.dims})
    ds["scores"].attrs = {}  # provenance lives in the (JSON-cleaned) store attrs only
    for name in ds.variables:
        ds[name].encoding = {}
    for name in (SYSTEM, TASK, "group", INSTANCE):
        if name in ds.coords and ds[name].dtype.kind in "OU":
            # variable-length UTF-8 strings (zarr v3 'string' data type)
            ds.coords[name] = (ds[name].dims, np.array([str(v) for v in ds[name].values], dtype=object))
    ds.attrs = _json_attrs(scores.attrs)
    ds.attrs["votebench_layout"] = list(LAYOUT)
    return ds


class CheckedChunks:
    """The ``scores`` array of a store, read chunk by chunk with every chunk checked (for :func:`dask.array.from_array`).

    A chunk that zarr cannot read (corrupted or truncated file, codec error)
    and a chunk holding ``+inf``/``-inf`` raise :class:`VotebenchError` naming
    the store (and, for an infinite score, its system and task).  Picklable:
    a worker reopens the array by path.

    Parameters
    ----------
    path : str
        The store (local path or fsspec URL).
    shape, dtype
        Of the on-disk ``scores`` array.
    dims : sequence of str
        Its dims, in the on-disk order (``(task, instance, system)`` for :func:`to_zarr`).
    tasks, systems : sequence of str
        Labels, for the messages.
    """

    def __init__(self, path: str, shape: tuple[int, ...], dtype: Any, dims: tuple[str, ...], tasks: list[str],
                 systems: list[str]) -> None:
        self.path = path
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self.dims = tuple(dims)
        self.tasks = tasks
        self.systems = systems
        self._array: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_array": None}

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        return ("votebench-store", self.path, self.shape, str(self.dtype))

    def _open(self) -> Any:
        if self._array is None:
            import zarr

            self._array = zarr.open_group(self.path, mode="r", zarr_format=3)["scores"]
        return self._array

    def __getitem__(self, key: Any) -> np.ndarray:
        try:
            block = np.asarray(self._open()[key])
        except (VotebenchError, MemoryError):
            raise
        except Exception as exc:  # zarr and its codecs raise a zoo of types for a damaged chunk
            why = (str(exc).strip().splitlines() or [""])[0]
            raise VotebenchError(f"{self.path}: corrupted or unreadable chunk of 'scores' ({type(exc).__name__}: {why}); "
                                 "rewrite the store") from None
        bad = np.isinf(block)
        if bad.any():
            pos = [int(i[0]) for i in np.nonzero(bad)]
            starts = [(k.start or 0) if isinstance(k, slice) else 0 for k in (key if isinstance(key, tuple) else (key,))]
            starts += [0] * (self.ndim - len(starts))
            t, s = (pos[self.dims.index(d)] + starts[self.dims.index(d)] for d in (TASK, SYSTEM))
            raise VotebenchError(f"{self.path}: score of system {self.systems[s]!r} on task {self.tasks[t]!r} is not finite "
                                 f"({block[tuple(pos)]})")
        return block


def open_store(path: str | os.PathLike[str]) -> xr.DataArray:
    """Open a store written by :func:`to_zarr` lazily (dask-backed) in canonical dim order.

    The labels and directions are read now; the scores are read chunk by chunk
    when computed, each chunk checked (:class:`CheckedChunks`).
    """
    import dask.array as dsa

    try:
        ds = xr.open_zarr(path, zarr_format=3, consolidated=False, chunks={})
        if "scores" not in ds:
            raise VotebenchError(f"{path}: zarr store has no 'scores' array")
        da = ds["scores"]
        # label, direction and group coordinates are small: read them now, so that no
        # later step has to compute anything to learn them
        small = {n: (da[n].dims, np.asarray(da[n].values)) for n in da.coords}
    except VotebenchError:
        raise
    except Exception as exc:  # zarr raises a zoo of types for a broken store
        why = (str(exc).strip().splitlines() or [""])[0]
        raise VotebenchError(f"{path}: not a readable zarr store ({type(exc).__name__}: {why})") from None
    if set(da.dims) != set(CANONICAL):
        raise VotebenchError(f"{path}: 'scores' must have dims {CANONICAL}, got {da.dims}")
    labels = {d: [str(v) for v in small[d][1]] if d in small else [str(i) for i in range(da.sizes[d])] for d in (TASK, SYSTEM)}
    chunks = da.encoding.get("chunks") or da.shape
    reader = CheckedChunks(str(path), da.shape, da.dtype, da.dims, labels[TASK], labels[SYSTEM])
    data = dsa.from_array(reader, chunks=tuple(chunks), meta=np.empty((0,) * da.ndim, dtype=da.dtype), asarray=False)
    da = xr.DataArray(data, dims=da.dims, coords=small, name="scores")
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
    ensure_valid(da, source=str(path))
    return da
