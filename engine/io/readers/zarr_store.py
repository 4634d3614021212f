"""Reader of zarr stores written by :func:`engine.to_zarr` (opened lazily, chunk by chunk: :func:`engine.io.store.open_store`)."""

from __future__ import annotations

from pathlib import Path

from engine.io.readers.registry import Reader
from engine.io.store import open_store

__all__ = ["ZARR", "is_zarr_store"]


def is_zarr_store(path: Path) -> bool:
    """Whether ``path`` is a folder holding a zarr group (``zarr.json``, or ``.zgroup`` of zarr format 2)."""
    return path.is_dir() and ((path / "zarr.json").exists() or (path / ".zgroup").exists())


ZARR = Reader("zarr", open_store, is_zarr_store, description="a zarr store (folder with zarr.json)",
              carries_metadata=True)
