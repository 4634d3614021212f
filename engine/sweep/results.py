"""The results store of a sweep: created atomically, verified and resumed, written block by block, opened for reading.

One zarr v3 group per input and perturbation (``<input>/<name>``, or
``synthetic/<name>`` for a kind without input), each the skeleton Dataset its
kind planned, with one ``done`` flag per block; the root attributes hold the
provenance (:data:`PROVENANCE`).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, overload

import numpy as np
import xarray as xr

from engine.errors import VotebenchError
from engine.sweep.kinds import Block, Kind, get_kind

__all__ = ["PROVENANCE", "damaged_store", "leaf_groups", "open_for_writing", "open_results", "pending_blocks",
           "readable_results", "resolve_store", "storage_failure", "write_block"]

log = logging.getLogger("engine")

#: root attributes a resumed store must share with the sweep: everything that changes a result
PROVENANCE = ("config", "inputs", "sidecars", "seed")


def resolve_store(store: str | os.PathLike[str]) -> Path:
    """The store path of a sweep, absolute (relative to the working directory)."""
    p = Path(store)
    return p if p.is_absolute() else Path.cwd() / p


def _is_results_store(path: Path) -> bool:
    meta = path / "zarr.json"
    try:
        return meta.is_file() and "engine_version" in json.loads(meta.read_text()).get("attributes", {})
    except (OSError, ValueError, AttributeError):
        return False


def open_for_writing(path: Path, attrs: Mapping[str, Any], skeletons: Mapping[str, xr.Dataset], overwrite: bool) -> Any:
    """The store to write, created or checked (the caller holds the store's :class:`~engine.io.files.WriterLock`).

    A new store is built under a temporary name beside ``path`` and renamed into
    place when complete, so a run killed while creating it leaves no store (its
    temporary folder is removed by the next run).  An existing store is resumed
    only when its provenance equals the sweep's and every group has the
    variables, shapes, coordinates and attributes the sweep would create.
    """
    from engine.io.files import remove_strays

    if path.exists() and not path.is_dir():
        raise VotebenchError(f"{path}: exists and is not a votebench results store (a file); choose another store path")
    remove_strays(path)
    if path.exists() and overwrite and not _is_results_store(path) and any(path.iterdir()):
        raise VotebenchError(f"{path}: not a votebench results store; --overwrite only replaces results stores")
    if path.exists() and not overwrite:
        _remove_partial_writes(path)
        return _resume(path, attrs, skeletons)
    return _create(path, attrs, skeletons)


#: zarr's local store writes a file as ``<name>.<32 hex digits>.partial`` and renames it into place
_PARTIAL = re.compile(r"\.[0-9a-f]{32}\.partial$")


def _remove_partial_writes(path: Path) -> None:
    """Remove the temporary files of chunk writes that a killed writer left in the store (the caller holds its lock)."""
    for p in path.rglob("*.partial"):
        if _PARTIAL.search(p.name) and p.is_file():
            try:
                p.unlink()
            except OSError:
                pass


def storage_failure(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while zarr or its codecs read or decoded stored data (a damaged chunk)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        tb = e.__traceback__
        while tb is not None:
            name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
            if "/zarr/" in name or "numcodecs" in name:
                return True
            tb = tb.tb_next
        e = e.__cause__ or e.__context__
    return False


def damaged_store(path: str | os.PathLike[str], exc: BaseException) -> VotebenchError:
    """The one-line error for a results store whose stored data cannot be read."""
    why = (str(exc).strip().splitlines() or [""])[0]
    return VotebenchError(f"{path}: corrupted or unreadable chunk in this results store ({type(exc).__name__}: {why}); "
                          "delete the store, or run its sweep or bootstrap again with --overwrite")


@contextmanager
def readable_results(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn an error of zarr or its codecs while reading ``path`` (a damaged chunk) into a one-line error."""
    try:
        yield
    except VotebenchError:
        raise
    except Exception as exc:
        if not storage_failure(exc):
            raise
        raise damaged_store(path, exc) from None


def _resume(path: Path, attrs: Mapping[str, Any], skeletons: Mapping[str, xr.Dataset]) -> Any:
    import zarr

    try:
        root = zarr.open_group(str(path), mode="r+", zarr_format=3)
        old = dict(root.attrs)
    except Exception:  # noqa: BLE001 - any reason it is not a store we wrote
        raise VotebenchError(f"{path}: exists and is not a votebench results store; choose another --store") from None
    if "engine_version" not in old:
        raise VotebenchError(f"{path}: exists and is not a votebench results store; choose another --store")
    for key in PROVENANCE:
        if old.get(key) != attrs[key]:
            raise VotebenchError(
                f"{path}: the store was written by a different sweep ({key} differs); use a new store or --overwrite"
            )
    for g, ds in skeletons.items():
        _verify_group(path, g, ds)
    return root


def _create(path: Path, attrs: Mapping[str, Any], skeletons: Mapping[str, xr.Dataset]) -> Any:
    import zarr

    from engine.io.files import make_temp_dir, publish_dir

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(path)
    try:
        root = zarr.open_group(str(tmp), mode="w", zarr_format=3)
        root.attrs.update(dict(attrs))
        for g, ds in skeletons.items():
            ds.to_zarr(str(tmp), group=g, mode="w", encoding=_encoding(ds), consolidated=False, zarr_format=3)
        publish_dir(tmp, path)  # with --overwrite, the old store is swapped out only now
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return zarr.open_group(str(path), mode="r+", zarr_format=3)


def _encoding(ds: xr.Dataset) -> dict[str, Any]:
    """Chunks of a group's variables: one ``done`` flag and one block of results per chunk (each written by one block)."""
    encoding: dict[str, Any] = {"done": {"chunks": (1,) * ds["done"].ndim}}  # one flag per file: atomic enough
    kind = get_kind(str(ds.attrs.get("kind", "")))
    if kind is not None and kind.chunks is not None:
        encoding.update({var: {"chunks": c} for var, c in kind.chunks(ds).items()})
    return encoding


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "OUS" or b.dtype.kind in "OUS":
        return [str(v) for v in a.ravel()] == [str(v) for v in b.ravel()]
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    except TypeError:
        return bool(np.array_equal(a, b))


def _same_attr(stored: Any, planned: Any) -> bool:
    """Equal attribute values; JSON text compares by content (key order is not provenance)."""
    if stored == planned:
        return True
    if isinstance(stored, str) and isinstance(planned, str):
        try:
            return bool(json.loads(stored) == json.loads(planned))
        except ValueError:
            return False
    return False


def _verify_group(path: Path, group: str, skeleton: xr.Dataset) -> None:
    """Check that a stored group can take the sweep's blocks: the variables, dims, shapes, coordinates and attributes
    of ``skeleton``, and readable ``done`` flags; else a one-line :class:`VotebenchError`."""

    def fail(problem: str) -> VotebenchError:
        return VotebenchError(f"{path}: cannot resume this results store: group {group!r} {problem}; "
                              "delete it or run again with --overwrite")

    try:
        ds = xr.open_zarr(str(path), group=group, consolidated=False, zarr_format=3)
    except Exception as exc:  # noqa: BLE001 - missing or damaged group
        raise fail(f"is missing or unreadable ({type(exc).__name__})") from None
    for name, var in skeleton.variables.items():
        if name not in ds.variables:
            raise fail(f"has no {name!r}")
        got = ds.variables[name]
        if tuple(got.dims) != tuple(var.dims) or got.shape != var.shape:
            raise fail(f"has {name!r} with dims {dict(zip(got.dims, got.shape))} instead of {dict(zip(var.dims, var.shape))}")
    try:
        for name in skeleton.coords:
            if not _same_values(np.asarray(skeleton[name].values), np.asarray(ds[name].values)):
                raise fail(f"has other {name!r} labels")
        np.asarray(ds["done"].values)
    except VotebenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged chunk
        raise fail(f"has unreadable coordinates or done flags ({type(exc).__name__})") from None
    for key, value in skeleton.attrs.items():
        if not _same_attr(ds.attrs.get(key), value):
            raise fail(f"has attribute {key} = {ds.attrs.get(key)!r} instead of {value!r}")


def pending_blocks(root: Any, blocks: Sequence[Block]) -> list[Block]:
    """The blocks whose ``done`` flag is not set in the store ``root``, and the finished ones whose data is gone.

    A block's values are stored chunk by chunk (:func:`write_block` writes every chunk, even one equal to the fill
    value), so a block flagged done whose chunk files are missing (a store copied in part, a file deleted) has lost
    its results: it is computed again, not served as the fill value.
    """
    done_cache: dict[str, np.ndarray] = {}
    arrays_cache: dict[str, dict[str, Any]] = {}  # each group's arrays, read once (not once per block)
    folder = getattr(root.store, "root", None)  # stores on a local disk; others are not checked for files
    out = []
    lost = 0
    for blk in blocks:
        if blk.group not in done_cache:
            try:
                done_cache[blk.group] = np.asarray(root[blk.group]["done"][...])
            except Exception as exc:  # noqa: BLE001 - a damaged chunk
                raise VotebenchError(f"{root.store}: cannot resume this results store: the done flags of group "
                                     f"{blk.group!r} cannot be read ({type(exc).__name__}); delete it or run again with "
                                     "--overwrite") from None
        if not done_cache[blk.group][blk.done_index]:
            out.append(blk)
        elif folder is not None:
            if blk.group not in arrays_cache:
                arrays_cache[blk.group] = dict(root[blk.group].arrays())
            if not _chunks_present(Path(folder) / blk.group, arrays_cache[blk.group], blk):
                out.append(blk)
                lost += 1
    if lost:
        log.warning("results store %s: %d finished block(s) had lost their data and are computed again", folder, lost)
    return out


def _chunks_present(group_dir: Path, arrays: Mapping[str, Any], blk: Block) -> bool:
    """Whether every chunk file of ``blk``'s region of its variable (among the group's ``arrays``) exists."""
    # the block's variable, or (kinds with their own writer, whose block names no array) every data variable
    names = [blk.var] if blk.var in arrays else [n for n, a in arrays.items()
                                                   if n != "done" and tuple(a.metadata.dimension_names or ()) != (n,)]
    for name in names:
        arr = arrays[name]
        ranges = []
        for axis, (size, chunk) in enumerate(zip(arr.shape, arr.chunks)):
            sel = blk.region[axis] if axis < len(blk.region) else slice(None)
            if isinstance(sel, slice):
                start, stop, _ = sel.indices(size)
            else:
                start, stop = int(sel), int(sel) + 1
            ranges.append(range(start // chunk, (stop - 1) // chunk + 1) if stop > start else range(0))
        base = group_dir / name
        if not all((base / arr.metadata.encode_chunk_key(c)).exists() for c in itertools.product(*ranges)):
            return False
    return True


def write_block(root: Any, blk: Block, values: np.ndarray, kind: Kind) -> None:
    """Store a finished block of a group of ``kind``: its values, its summary for the live dashboard, then its flag.

    Every chunk is written, also one that equals the fill value (zarr skips those by default), so that a missing
    chunk file always means lost data (:func:`pending_blocks`).
    """
    import zarr

    with zarr.config.set({"array.write_empty_chunks": True}):
        grp = root[blk.group]
        if kind.write is not None:
            kind.write(grp, blk, values)
        else:
            grp[blk.var][blk.region] = values
        if kind.summary is not None:  # the live dashboard's mergeable summary of the block, before its done flag
            from engine.kernels.summaries import write_block_summary

            write_block_summary(grp, blk.done_index, values, kind.summary)
        done = grp["done"]
        done[blk.done_index] = True


@overload
def open_results(store: str | os.PathLike[str], group: str) -> xr.Dataset: ...


@overload
def open_results(store: str | os.PathLike[str], group: None = None) -> dict[str, xr.Dataset]: ...


def open_results(store: str | os.PathLike[str], group: str | None = None) -> xr.Dataset | dict[str, xr.Dataset]:
    """Open a results store: one Dataset (``group`` given) or all of them by group name.

    Groups are ``<input>/<perturbation>`` and, for the synthetic kinds, ``synthetic/<perturbation>``
    (see :mod:`engine.sweep` for their variables and dims).
    """
    import zarr

    path = Path(store)
    if not path.exists():
        raise VotebenchError(f"{store}: no such results store")
    try:
        root = zarr.open_group(str(path), mode="r", zarr_format=3)
        groups = sorted(leaf_groups(root))
    except Exception as exc:  # noqa: BLE001 - zarr raises many types for a broken store
        raise VotebenchError(f"{store}: not a votebench results store (unreadable: {type(exc).__name__})") from None
    if "engine_version" not in root.attrs:
        raise VotebenchError(f"{store}: not a votebench results store (no provenance attributes)")
    if group is not None:
        if group not in groups:
            raise VotebenchError(f"{store}: no group {group!r}; groups: {', '.join(groups)}")
        return _open_group(path, group, dict(root.attrs))
    return {g: _open_group(path, g, dict(root.attrs)) for g in groups}


def _open_group(path: Path, group: str, attrs: Mapping[str, Any]) -> xr.Dataset:
    ds = xr.open_zarr(str(path), group=group, consolidated=False)
    ds.attrs = {**attrs, **ds.attrs}
    return ds


def leaf_groups(root: Any, prefix: str = "") -> Iterator[str]:
    """The store groups below ``root`` (those with ``done`` flags; their ``summary`` sub-groups are not visited)."""
    for name, grp in root.groups():
        full = f"{prefix}{name}"
        if "done" in grp:
            yield full
        else:
            yield from leaf_groups(grp, full + "/")
