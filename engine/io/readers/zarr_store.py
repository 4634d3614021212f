"""How the registry recognises a zarr store written by :func:`engine.to_zarr` (opened lazily, chunk by chunk, by
:func:`engine.io.store.open_store`); this module imports nothing of the store, so recognising a path stays cheap."""

from __future__ import annotations

from pathlib import Path

__all__ = ["is_zarr_store"]


def is_zarr_store(path: Path) -> bool:
    """Whether ``path`` is a folder holding a zarr group (``zarr.json``, or ``.zgroup`` of zarr format 2)."""
    return path.is_dir() and ((path / "zarr.json").exists() or (path / ".zgroup").exists())
