"""The limits of what a user gives: every size checked up front, every number taken into float64 without overflow.

The one up-front check of every size a user sets (replicates, block, grid points, repeats, resamples, subset sizes...):

:func:`check_size` refuses, before anything is read or allocated, a size that is not a positive integer, one beyond
:data:`MOST` (an absurd size: no run of it would finish on one machine), or one whose estimated memory exceeds the
memory this machine has available; each in one line naming the size.  :func:`check_memory` is the memory part alone
(a perturbation kind's store estimate).

Also how the engine's blocks of work are cut and where they run: :func:`spread` answers from the block runner a
command set (:func:`running_blocks`; :func:`engine.distributed.on_cluster` sets one for a dask cluster), so that the
labelled layer's blocks (bootstrap replicates, pairs of the paired tests) go to a cluster without importing it.

Numbers a user writes are taken into float64 without overflow (JSON/TOML/YAML numbers of any size, option values):
a JSON, TOML or YAML integer has no size limit, a float64 stops near 1.8e308.  :func:`as_float` turns a number into a
finite float or refuses it in one line; :func:`scaled_weights` turns relative weights of any size (huge integers,
1e308 floats) into float64 weights exactly proportional to them (scaled by a power of two), so that huge but equal
weights are equal weights; :func:`check_option_values` refuses a rule option holding a non-finite or out-of-range
number.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from engine.errors import VotebenchError

__all__ = ["as_float", "check_memory", "check_option_values", "check_size", "MOST", "scaled_weights", "shown",
           "WEIGHT_BITS"]


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


#: the largest weight after :func:`scaled_weights` lies in [2**(WEIGHT_BITS-1), 2**WEIGHT_BITS) when any weight reaches
#: 2**WEIGHT_BITS: every float there is a whole number, and sums of millions of such weights times scores stay finite
WEIGHT_BITS = 53
#: whole-number weights are scaled only by powers of two they are multiples of, while the largest stays below this
_WHOLE_BITS = 960


def shown(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters; an integer too long to print whole is named by its number of digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        try:
            digits = len(str(abs(value)))
        except ValueError:  # beyond Python's 4,300-digit printing limit
            digits = int(value.bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}an integer of about {digits} digits"
    try:
        text = repr(value)
    except ValueError:  # a container of integers beyond Python's printing limit
        return f"a {type(value).__name__} holding an integer too long to print"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def as_float(value: Any, where: str, what: str = "number") -> float:
    """A JSON/TOML/YAML number (int, float, bool) as a finite float64.

    Raises
    ------
    VotebenchError
        ``"<where>: <what> <value> is beyond the range of a 64-bit float ..."`` for an integer of 309 digits
        or more (or a float that is infinite or NaN: ``"... is not a finite number"``).
    """
    try:
        f = float(value)
    except OverflowError:
        raise VotebenchError(f"{where}: {what} {shown(value)} is beyond the range of a 64-bit float "
                             "(about 1.8e308); give it in smaller units") from None
    if not math.isfinite(f):
        raise VotebenchError(f"{where}: {what} {shown(value)} is not a finite number")
    return f


def _exponent(v: int | float) -> int:
    """The binary exponent ``e`` with ``|v| < 2**e`` (``v`` non-zero, finite)."""
    if isinstance(v, int):
        return abs(v).bit_length()
    return math.frexp(v)[1]


def scaled_weights(values: Sequence[Any], where: str = "weights", *, note: bool = True) -> np.ndarray:
    """Non-negative relative weights of any size as float64, exactly proportional (scaled by one power of two).

    Weights are relative (a rule uses ratios of weights); when the largest reaches ``2**WEIGHT_BITS``
    (or is an integer beyond float64), every weight is multiplied by ``2**-k`` so that the largest lies
    in ``[2**(WEIGHT_BITS-1), 2**WEIGHT_BITS)`` (whole-number weights: by the largest power of two
    dividing all of them, when that keeps the largest below ``2**960``): exact for floats that stay normal, correctly rounded for
    integers of any size.  Smaller weights are left as they are, bit for bit.  ``note``: say so (a note of the
    ``engine`` logger, printed by the CLI), as weighted sums are then in units of ``2**k``.

    Raises
    ------
    VotebenchError
        A weight that is not a number, negative, NaN or infinite; a positive weight so much smaller than
        the largest that it would round to zero (a ratio beyond 2**1074).
    """
    nums: list[int | float] = []
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise VotebenchError(f"{where}: a weight must be a number, got {shown(v)}")
        v = int(v) if isinstance(v, (int, np.integer)) else float(v)
        if (isinstance(v, float) and not math.isfinite(v)) or v < 0:
            raise VotebenchError(f"{where}: weights must be finite and non-negative, got {shown(v)}")
        nums.append(v)
    positive = [v for v in nums if v > 0]
    top = max((_exponent(v) for v in positive), default=0)
    if top <= WEIGHT_BITS:
        return np.array([float(v) for v in nums], dtype=np.float64)
    k = top - WEIGHT_BITS
    whole = [int(v) for v in positive if isinstance(v, int) or v.is_integer()]
    if len(whole) == len(positive):  # whole-number weights stay whole (the median repeats tasks) while sums stay finite
        zeros = min((v & -v).bit_length() - 1 for v in whole)
        if top - min(k, zeros) <= _WHOLE_BITS:
            k = min(k, zeros)
    out = np.array([math.ldexp(v, -k) if isinstance(v, float) else float(Fraction(v, 1 << k)) for v in nums],
                   dtype=np.float64)
    if ((out == 0) & (np.array([v > 0 for v in nums]))).any():
        raise VotebenchError(f"{where}: a positive weight is more than 2**1074 times smaller than the largest "
                             "(it would count as zero); give it as 0 or use closer weights")
    if k > 0 and note:
        logging.getLogger("engine").warning(f"{where} scaled by 2**-{k} (the largest is about 2**{top}): rankings are those "
                                            f"of the given weights; weighted sums are in units of 2**{k}")
    return out


def check_option_values(options: Mapping[str, Any], where: str = "option") -> None:
    """Refuse a rule option holding NaN, an infinity or an integer beyond float64, at any depth of lists and tables."""

    def walk(key: str, v: Any) -> None:
        if isinstance(v, Mapping):
            for k, x in v.items():
                walk(f"{key}.{k}", x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(key, x)
        elif isinstance(v, float) and not math.isfinite(v):
            raise VotebenchError(f"{where} {key!r}: {v!r} is not a finite number")
        elif isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 1023:
            raise VotebenchError(f"{where} {key!r}: {shown(v)} is beyond the range of a 64-bit float (about 1.8e308)")

    for name, value in options.items():
        walk(str(name), value)
