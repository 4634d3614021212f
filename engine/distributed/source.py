"""The input a task reads: :class:`Source` (path or URL, loader options, checksums of the input and its sidecar).

Tasks carry a ``Source``, never the scores: the worker process running a task
opens the input itself, once (:func:`engine.distributed.source.load_source`),
and checks that it reads the same bytes -- input and sidecar -- the client
planned on (:func:`input_checksum`).

Each process reads an input once however many tasks use it: :func:`load_source` keeps the inputs read by this process
in a small LRU cache keyed by :class:`Source`, and checks their checksums against the ones the client planned on.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.errors import VotebenchError
from engine.labelled.canonical import is_url

__all__ = ["cached_sources", "clear_cache", "IN_MEMORY_BYTES", "input_checksum", "load_source", "LOADER_KEYS",
           "loader_keys", "make_source", "open_input", "open_source", "sidecar_of", "Source"]


#: options of :func:`engine.open_scores` for evaluation outputs (lm-evaluation-harness, HELM, JSONL)
def loader_keys() -> tuple[str, ...]:
    """The loader options an input may carry: ``format`` plus every option a registered reader declares
    (:func:`engine.io.readers.loader_keys`; asked at use time, so readers registered later count)."""
    from engine.io.readers import loader_keys as registry_keys

    return tuple(registry_keys())


#: the loader options of the built-in readers (see :func:`loader_keys` for the current registry)
LOADER_KEYS = loader_keys()


@dataclass(frozen=True)
class Source:
    """Where a worker finds an input: a path or fsspec URL it can reach, the loader options and the checksum.

    Tasks carry a ``Source``, never the scores: every worker process opens
    the input itself (once, see :func:`load_source`) and checks that it reads
    the same bytes the sweep was planned on.
    """

    path: str
    meta: str | None = None
    lower_is_better: tuple[str, ...] = ()
    checksum: str | None = None
    loader: tuple[tuple[str, Any], ...] = ()  # open_scores options (format, metric, ...), hashable
    #: sha256 of the sidecar read with the input (``meta``, else ``<name>.meta.json`` beside it); None: no sidecar
    meta_checksum: str | None = None

    def loader_options(self) -> dict[str, Any]:
        """The :func:`engine.open_scores` keyword options of this source (a per-task mapping comes back as a dict)."""
        return {k: dict(v) if isinstance(v, tuple) else v for k, v in self.loader}


def make_source(
    path: str | os.PathLike[str],
    *,
    base: str | os.PathLike[str] = ".",
    meta: str | os.PathLike[str] | None = None,
    lower_is_better: Sequence[str] = (),
    loader: Mapping[str, Any] | None = None,
) -> Source:
    """A :class:`Source` for ``path``: a relative local path is looked up from the working directory, then ``base``.

    ``loader`` holds :func:`engine.open_scores` options for evaluation outputs
    (``format``, ``metric``, ``filter``, ``split``, ``perturbation``; ``None`` values are dropped).

    Local paths are made absolute (workers need not share the client's
    working directory, but they must see the same file system path).
    """

    def local(p: str | os.PathLike[str]) -> str:
        if is_url(p):
            return str(p)
        q = Path(p)
        if not q.is_absolute() and not q.exists():
            q = Path(base) / q
        return str(q.absolute())

    opts = {k: v for k, v in (loader or {}).items() if v is not None}
    known = loader_keys()
    unknown = sorted(set(opts) - set(known))
    if unknown:
        raise VotebenchError(f"unknown loader option(s) {', '.join(unknown)}; known: {', '.join(known)}")
    items = tuple(sorted((k, tuple(sorted(v.items())) if isinstance(v, Mapping) else v) for k, v in opts.items()))
    return Source(path=local(path), meta=None if meta is None else local(meta),
                  lower_is_better=tuple(str(t) for t in lower_is_better), loader=items)


def _digest(is_dir: bool, files: Callable[[], Iterator[tuple[str, Callable[[], bytes]]]],
            stream: Callable[[], Any]) -> str:
    """sha256 of a folder (``files``: relative name and a reader per file, in order) or of one file (``stream``)."""
    h = hashlib.sha256()
    if is_dir:
        for name, read in files():
            h.update(name.encode())
            h.update(read())
    else:
        with stream() as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def input_checksum(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, or of every file of a folder or zarr store (relative names and contents, sorted).

    ``path`` may be an fsspec URL; a folder then hashes like the same folder on a local disk.
    """
    if not is_url(path):
        p = Path(path)

        def local_files() -> Iterator[tuple[str, Callable[[], bytes]]]:
            for f in sorted(p.rglob("*")):
                if f.is_file():
                    yield str(f.relative_to(p)), f.read_bytes

        from engine.io.readers.common import input_bytes

        held = None if p.is_dir() else input_bytes(p)  # the bytes the reader parses: the file is read once
        if held is not None:
            return hashlib.sha256(held).hexdigest()
        return _digest(p.is_dir(), local_files, lambda: p.open("rb"))
    import fsspec

    fs, root = fsspec.core.url_to_fs(str(path))
    root = root.rstrip("/")

    def files() -> Iterator[tuple[str, Callable[[], bytes]]]:
        for r in sorted(Path(f[len(root) + 1 :]) for f in fs.find(root)):  # files only
            yield str(r), partial(fs.cat_file, f"{root}/{r.as_posix()}")

    return _digest(fs.isdir(root), files, lambda: fs.open(root, "rb"))


def sidecar_of(src: Source) -> str | None:
    """The sidecar read with ``src``: its ``meta``, else the ``<name>.meta.json`` beside a local input (None: none)."""
    if src.meta is not None:
        return src.meta
    if is_url(src.path):
        return None
    from engine.io.readers import default_sidecar

    sc = default_sidecar(src.path)
    return None if sc is None else str(sc)


def open_source(src: Source) -> xr.DataArray:
    """Open ``src`` (no cache, no checksum): :func:`engine.open_scores` for a local path, the zarr store for a URL."""
    from engine.io.readers import open_scores
    from engine.labelled.canonical import apply_sidecar, read_sidecar, with_lower_is_better

    if is_url(src.path):
        from engine.io.store import open_store

        scores = open_store(src.path)
        if src.meta is not None:
            scores = apply_sidecar(scores, read_sidecar(src.meta), src.path)
        scores.attrs["source_file"] = src.path
    else:
        scores = open_scores(src.path, meta=src.meta, **src.loader_options())
    return with_lower_is_better(scores, src.lower_is_better)


def open_input(path: str | os.PathLike[str], *, meta: str | os.PathLike[str] | None = None,
               lower_is_better: Sequence[str] = (), loader: Mapping[str, Any] | None = None) -> xr.DataArray:
    """The scores of an input read in this process, as a worker reads its :class:`Source`.

    A local path is opened as given (so that messages and ``source_file`` name it as the user wrote it);
    a URL (a zarr store) through :func:`make_source` and :func:`open_source`.  ``loader``: the
    :func:`engine.open_scores` options (``None`` values are dropped).
    """
    if is_url(path):
        return open_source(make_source(path, meta=meta, lower_is_better=lower_is_better, loader=loader))
    from engine.io.readers import open_scores
    from engine.labelled.canonical import with_lower_is_better

    opts = {k: v for k, v in (loader or {}).items() if v is not None}
    return with_lower_is_better(open_scores(path, meta=meta, **opts), lower_is_better)


#: inputs whose in-memory size (at their stored dtype) is at most this are loaded into memory once per worker
#: process; larger zarr stores stay lazy and every task streams through their chunks
IN_MEMORY_BYTES = 1 << 30
_CACHE_ENTRIES = 4


class _Cache:
    """The inputs read by this process, most recently used last (a few entries; every access under one lock)."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self.items: OrderedDict[Source, xr.DataArray] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Source) -> xr.DataArray | None:
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        return None

    def put(self, key: Source, scores: xr.DataArray) -> None:
        self.items[key] = scores
        while len(self.items) > self.entries:
            self.items.popitem(last=False)


_CACHE = _Cache(_CACHE_ENTRIES)


def _verified(src: Source) -> Source:
    """``src`` with its checksums; refuse an input or sidecar that differs from the planned one."""
    actual = input_checksum(src.path)
    meta = sidecar_of(src)
    actual_meta = None if meta is None else input_checksum(meta)
    if src.checksum is not None and actual != src.checksum:
        raise VotebenchError(f"{src.path}: the input differs from the one the sweep was planned on (sha256 "
                             f"{actual[:12]}... instead of {src.checksum[:12]}...); every worker must read the same file")
    if src.checksum is not None and actual_meta != src.meta_checksum:
        raise VotebenchError(f"{src.path}: its sidecar ({meta or 'now absent'}) differs from the one the sweep was "
                             "planned on; every worker must read the same files")
    return replace(src, checksum=actual, meta_checksum=actual_meta)


def load_source(src: Source) -> tuple[xr.DataArray, Source]:
    """The scores of ``src``, read at most once per process, and the source with its checksum filled in.

    A module-level LRU cache keyed by the source (path, loader options,
    checksum) keeps the last few inputs, so each worker process reads an input
    once however many tasks use it.  A zarr store of at most
    :data:`IN_MEMORY_BYTES` is loaded into memory; a larger one stays lazy.

    Raises
    ------
    VotebenchError
        When the input cannot be read, or its checksum differs from ``src.checksum``
        (the file changed, or this worker sees another copy of it).
    """
    with _CACHE.lock:
        hit = _CACHE.get(src) if src.checksum is not None else None
        if hit is not None:
            return hit, src
        try:
            key = _verified(src)  # the checksum first: an input read before (by its bytes) is not parsed again
        except OSError:
            open_source(src)  # says what is wrong with the input in one line (a missing or unreadable file)
            raise
        hit = _CACHE.get(key)
        if hit is not None:
            return hit, key
        scores = open_source(key)
        if not isinstance(scores.data, np.ndarray) and scores.nbytes <= IN_MEMORY_BYTES:
            scores = scores.compute(scheduler="synchronous")
        _CACHE.put(key, scores)
        return scores, key


def cached_sources() -> list[Source]:
    """The inputs held by this process's cache (e.g. ``client.run(cached_sources)`` on a cluster's workers)."""
    with _CACHE.lock:
        return list(_CACHE.items)


def clear_cache() -> None:
    """Forget every input read by this process."""
    with _CACHE.lock:
        _CACHE.items.clear()
