"""Keep xarray from importing dask for in-memory data.

xarray (2024.10 to at least 2026.9) imports ``dask`` and ``dask.array`` the
first time it builds a ``DataArray`` when dask is installed, only to test
``isinstance(data, dask.array.Array)``.  That costs about 0.4 s, which is most
of the start-up of a small ``votebench rank``.  No object can be a dask array
or a dask collection before dask has been imported, so the two checks can
answer "no" without importing it, and ask dask as usual once anything else
(a zarr store opened lazily, ``engine.bootstrap``, the user) has imported it.

:func:`defer_dask_import` installs those two deferred checks; it touches two
internals of xarray (the duck-array module cache and
``xarray.namedarray.utils.is_dask_collection``) and does nothing when they
are not where it expects them, so a future xarray costs start-up time, never
correctness.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["defer_dask_import"]

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
