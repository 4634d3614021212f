"""Integer pairwise win counts from dense ranks, compiled with numba (the hot loop of every pairwise rule).

``sum_k [r_ki > r_kj]`` over judges ``k`` for a block of rows ``i`` and every column ``j``, both scores
present. The loop keeps a small block of rows in int16 counters (flushed into int64 every 32,767
judges) and compares each judge's rank row against one rank at a time, which the compiler turns into
wide vector compares: about ten times plain numpy's ``np.greater`` + ``np.add`` per judge
(``benchmarks/results/memory.md``). Counts are whole numbers, so the result does not depend on the
order of the judges or on how they are split into chunks.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_ROWS = 16  # rows per block: 16 x S int16 counters stay in the first-level cache up to a few thousand systems
_FLUSH = 32767  # judges per int16 counter before it joins the int64 total


@njit(nogil=True, cache=True)
def _greater_counts(ra: np.ndarray, rb: np.ndarray, out: np.ndarray, i0: int) -> None:  # pragma: no cover - compiled
    K, S = rb.shape
    r = out.shape[0]
    acc = np.zeros((_ROWS, S), dtype=np.int16)
    for b0 in range(0, r, _ROWS):
        b1 = min(r, b0 + _ROWS)
        acc[:] = 0
        n = 0
        for k in range(K):
            rbk = rb[k]
            for i in range(b0, b1):
                x = ra[k, i0 + i]
                row = acc[i - b0]
                for j in range(S):
                    row[j] += rbk[j] < x
            n += 1
            if n == _FLUSH or k == K - 1:
                for i in range(b0, b1):
                    for j in range(S):
                        out[i, j] += acc[i - b0, j]
                acc[:] = 0
                n = 0


def greater_counts(ranks: np.ndarray, present: np.ndarray, i0: int, i1: int, *, less: bool = False) -> np.ndarray:
    """``sum_k [r_ki > r_kj]`` (``less=True``: ``[r_ki < r_kj]``) for rows ``i0:i1``, both scores present.

    Parameters
    ----------
    ranks : ndarray (K, S) of int16 or int32
        Ranks of each judge's scores (higher is better; only their order matters).
    present : ndarray (K, S) of bool
        Which scores exist; a missing score takes part in no comparison.
    i0, i1 : int
        The block of rows.

    Returns
    -------
    ndarray (i1 - i0, S) of int64

    Examples
    --------
    >>> r = np.array([[2, 0, 1], [0, 1, 1]], dtype=np.int16)
    >>> greater_counts(r, np.ones((2, 3), dtype=bool), 0, 3)
    array([[0, 1, 1],
           [1, 0, 0],
           [1, 1, 0]])
    """
    rk = np.asarray(ranks)
    dt = np.int16 if rk.dtype == np.int16 else np.int32
    info = np.iinfo(dt)
    signed = np.negative(rk, dtype=dt) if less else rk.astype(dt, copy=False)  # ranks are >= -1, so negation fits the type
    pres = np.asarray(present, dtype=bool)
    if pres.all():
        ra = rb = signed
    else:
        ra = np.where(pres, signed, info.min).astype(dt)  # a missing row score beats nothing
        rb = np.where(pres, signed, info.max).astype(dt)  # and nothing beats a missing column score
    out = np.zeros((i1 - i0, rk.shape[1]), dtype=np.int64)
    if rk.shape[0] and i1 > i0:
        _greater_counts(np.ascontiguousarray(ra), np.ascontiguousarray(rb), out, i0)
    return out
