"""The inputs read by this process: an LRU cache of scores keyed by :class:`~engine.distributed.source.Source`.

Each worker process reads an input once however many tasks use it
(:func:`load_source`), and checks its checksums against the ones the client
planned on.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

import numpy as np
import xarray as xr

from engine.distributed.source import Source, input_checksum, open_source, sidecar_of
from engine.errors import VotebenchError

__all__ = ["IN_MEMORY_BYTES", "cached_sources", "clear_cache", "load_source"]

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
