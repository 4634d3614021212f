"""The one up-front check of every size a user sets (replicates, block, grid points, repeats, resamples, subset sizes...).

:func:`check_size` refuses, before anything is read or allocated, a size that is not a positive integer, one beyond
:data:`MOST` (an absurd size: no run of it would finish on one machine), or one whose estimated memory exceeds the
memory this machine has available; each in one line naming the size.  :func:`check_memory` is the memory part alone
(a perturbation kind's store estimate).

Also how the engine's blocks of work are cut and where they run: :func:`spread` answers from the block runner a
command set (:func:`running_blocks`; :func:`engine.distributed.on_cluster` sets one for a dask cluster), so that the
labelled layer's blocks (bootstrap replicates, pairs of the paired tests) go to a cluster without importing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from engine.errors import VotebenchError
from engine.magnitudes import shown

__all__ = ["MOST", "check_memory", "check_size"]

#: the largest count a user may set for any size: past a hundred million replicates, points or blocks no
#: run finishes on one machine (at ~10 us per unit of work it is 15 minutes of bookkeeping alone)
MOST = 100_000_000


def available_memory() -> int:
    """Bytes of memory available to this process now (psutil)."""
    import psutil

    return int(psutil.virtual_memory().available)


def check_memory(nbytes: float, what: str, fix: str) -> None:
    """Refuse (before allocating) work of ``nbytes`` that cannot fit in this machine's available memory.

    Raises
    ------
    VotebenchError
        ``"<what> need(s) about <size> of memory, more than the <size> available; <fix>"``.
    """
    from dask.utils import format_bytes

    available = available_memory()
    if nbytes > available:
        raise VotebenchError(f"{what} need about {format_bytes(int(min(nbytes, 2.0**62)))} of memory, more than the "
                             f"{format_bytes(available)} available; {fix}")


def check_size(name: str, value: Any, *, nbytes: float = 0.0, what: str = "", fix: str = "", least: int = 1,
               most: int = MOST) -> int:
    """Check a size a user set, up front: an integer in ``[least, most]`` whose estimated memory fits.

    Parameters
    ----------
    name : str
        How the user wrote it (``"--replicates"``, ``"perturbation 'b': block"``); every message starts with it.
    value : any
        The size as given (an int; a bool, a float or a string is refused).
    nbytes : float
        Estimated peak memory of the work this size asks for (0: not estimated).
    what : str
        What that memory holds (for the message).
    fix : str
        What to do instead (for the message).
    least, most : int
        The range of sensible values (``most``: default :data:`MOST`).

    Returns
    -------
    int
        ``value``.

    Raises
    ------
    VotebenchError
        One line naming the size: not an integer, out of range, or more memory than available.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise VotebenchError(f"{name} must be an integer, got {shown(value)}")
    if value < least:
        raise VotebenchError(f"{name} must be at least {least}, got {shown(value)}")
    if value > most:
        raise VotebenchError(f"{name} {shown(value)} is more than the {most:,} that any run of this machine can do"
                             + (f"; {fix}" if fix else ""))
    if nbytes > 0:
        check_memory(nbytes, f"{name} {value}" + (f": {what}" if what else ""), fix or f"give a smaller {name}")
    return value


class BlockRunner(Protocol):
    """Where a command's blocks of work run (e.g. :class:`engine.distributed.cluster.ClusterRunner`)."""

    def block(self, items: int, bytes_per_item: float) -> int:
        """Items per block for ``items`` items of ``bytes_per_item`` bytes each."""

    def map(self, fn: Callable[[Any, Any], Any], shared: Any, blocks: list[Any]) -> list[Any]:
        """``[fn(shared, b) for b in blocks]``, computed by the runner, in order."""


_RUNNER: ContextVar[BlockRunner | None] = ContextVar("votebench_block_runner", default=None)


@contextmanager
def running_blocks(runner: BlockRunner | None) -> Iterator[BlockRunner | None]:
    """Make ``runner`` the one :func:`spread` uses inside the block (``None``: blocks run here, one after the other)."""
    token = _RUNNER.set(runner)
    try:
        yield runner
    finally:
        _RUNNER.reset(token)


def spread(items: int, bytes_per_item: float) -> tuple[int | None, Callable[..., list[Any]] | None]:
    """How to cut ``items`` items for the current :func:`running_blocks` runner: its block size and its ``map``;
    ``(None, None)`` without one (the caller runs its blocks here)."""
    runner = _RUNNER.get()
    if runner is None:
        return None, None
    return runner.block(items, bytes_per_item), runner.map
