"""The one up-front check of every size a user sets (replicates, block, grid points, repeats, resamples, subset sizes...).

:func:`check_size` refuses, before anything is read or allocated, a size that is not a positive integer, one beyond
:data:`MOST` (an absurd size: no run of it would finish on one machine), or one whose estimated memory exceeds the
memory this machine has available; each in one line naming the size.  :func:`check_memory` is the memory part alone
(a perturbation kind's store estimate).
"""

from __future__ import annotations

from typing import Any

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
