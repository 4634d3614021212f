"""The live state of one results-store group: the base of the kinds' dashboard states, and JSON-safe numbers.

A kind's :attr:`~engine.sweep.kinds.Kind.dashboard` hook returns a
:class:`GroupState`; :class:`engine.app.dashboard.LiveStore` sets its
:attr:`~GroupState.files` (the chunk files of its ``done`` flags, from a
directory listing), calls :meth:`~GroupState.poll` while blocks remain and
puts :meth:`~GroupState.to_json` in the page's snapshot.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["GroupState", "StoreChanged", "block_ids", "json_ints", "json_number", "json_numbers", "labels"]


def json_number(x: Any) -> float | None:
    """A JSON-safe float: ``None`` for NaN or infinite values."""
    v = float(x)
    return v if math.isfinite(v) else None


def json_numbers(a: np.ndarray) -> list[float | None]:
    """:func:`json_number` of every value of ``a`` (flattened)."""
    return [json_number(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def json_ints(a: np.ndarray) -> list[int | None]:
    """Every value of ``a`` (flattened) as an int, ``None`` for NaN or infinite values."""
    return [None if not math.isfinite(v) else int(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def labels(arr: Any) -> list[str]:
    """The values of a stored (coordinate) array as strings."""
    return [str(v) for v in np.asarray(arr[...]).ravel()]


def block_ids(bi: int, block: int, n: int) -> slice:
    """The replicates of block ``bi`` (``block`` per block, ``n`` in all)."""
    return slice(bi * block, min(n, (bi + 1) * block))


class StoreChanged(Exception):
    """A flag went from done to not done: the store was replaced (``--overwrite``); start over."""


class GroupState:
    """Merged state of one store group, brought up to date block by block.

    Subclasses set :attr:`h_done` (the group's ``done`` array) in their
    ``__init__`` (calling ``super().__init__(name, grp)``), merge the blocks
    :meth:`new_blocks` returns in :meth:`poll` and say what the page gets in
    :meth:`to_json`.

    Attributes
    ----------
    name : str
        The store group.
    done : numpy.ndarray of bool
        The blocks merged so far (shape of the ``done`` flags).
    files : frozenset of tuple, optional
        Chunk indices of the ``done`` flags that exist as files (set by the
        store's reader before each :meth:`poll`); None: read every flag.
    """

    busy = False  # work left that needs no new block

    def __init__(self, name: str, grp: Any) -> None:
        self.name = name
        self.h_done = grp["done"]
        self.done = np.zeros(tuple(int(v) for v in self.h_done.shape), dtype=bool)
        self.files: frozenset[tuple[int, ...]] | None = None

    @property
    def input(self) -> str:
        """The input of the group (the first part of its name)."""
        return self.name.split("/", 1)[0]

    def progress(self) -> dict[str, int]:
        """``blocks_done`` and ``blocks_total`` of the group."""
        return {"blocks_done": int(self.done.sum()), "blocks_total": int(self.done.size)}

    def new_blocks(self) -> list[tuple[int, ...]]:
        """Blocks flagged done since the last look (raises :class:`StoreChanged` when a flag went back).

        With the chunk files of the flags listed (:attr:`files`), only
        the new ones are read; otherwise every flag.
        """
        if self.done.all():
            return []
        files = self.files
        if files is None or (-1,) in files or any(len(ix) != self.done.ndim for ix in files):
            done = np.asarray(self.h_done[...], dtype=bool)
        else:
            if any(ix not in files for ix in map(tuple, np.argwhere(self.done))):
                raise StoreChanged
            cand = [ix for ix in files if not self.done[ix]]
            done = self.done.copy()
            if cand:
                got = np.asarray(self.h_done.get_coordinate_selection(tuple(np.array(c) for c in zip(*cand))), dtype=bool)
                for ix, v in zip(cand, got):
                    done[ix] = v
        if (self.done & ~done).any():
            raise StoreChanged
        return [tuple(int(v) for v in ix) for ix in np.argwhere(done & ~self.done)]

    def poll(self) -> bool:
        """Merge the blocks done since the last call; True when the group's JSON changes."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        """The group in the dashboard's snapshot (``name``, ``input``, ``kind``, ``blocks_done``, ``blocks_total``, ...)."""
        raise NotImplementedError
