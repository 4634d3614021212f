"""The one pair-count kernel: ``wins[..., i, j] = sum_k w_k [x_ki > x_kj]`` over the rows ``k`` (judges, tasks,
bootstrap replicates) where both scores are present.

Every pairwise rule, the battles' counts, the bootstrap's ``prob_above`` and the dashboard's mergeable summaries
count pair wins; they all do it here.  :func:`pair_counts` is the front: scores ``(..., K, S)`` (``NaN`` = absent,
any leading batch axes), optional whole-number row weights (bootstrap multiplicities), and a ``method``:

``"dense"``
    numpy: each row's scores become small-integer ranks (:func:`comparison_ranks`), a block of rows is compared
    at once (``K_block x S x S`` booleans) and reduced in uint8 counters; vectorised over the batch, so the
    fastest for many small profiles.
``"rows"``
    numpy in blocks of rows of the ``(S, S)`` result: ``O(rows x S)`` temporaries whatever ``S``.
``"compiled"``
    numba (:func:`win_counts`, :func:`greater_counts`): small blocks of int16 counters in cache, wide vector
    compares; about ten times plain numpy's per comparison, but numba's start costs about a second per process.
``"auto"`` (default)
    the cheapest by the cost model (:mod:`engine.kernels.costs`, problem ``"pair_counts"``), which counts numba's
    start only while numba is not loaded, and never picks ``"compiled"`` without numba.

Counts are whole numbers (int64), so every method gives the same integers, in any order of the rows and any
blocking (``tests/kernels/test_paircount_s9.py`` checks each against a double loop).  The row-block primitives
on precomputed ranks (:func:`greater_counts`, :func:`win_counts`) serve the callers that rank once and count
many blocks (:mod:`engine.kernels.pairblock`); :func:`stack_counts` counts one profile under a stack of weight
vectors (bootstrap multiplicities) as matrix products, the comparisons made once for every vector.

Beside the counts: Kendall's tau-b and distance from whole-number concordance counts (:func:`kendall_counts`, Knight's
``O(S log S)`` per pair of rankings; the pair convention is the one of :mod:`engine.kernels.kemeny`'s notes: unordered
pairs, a missing score leaves the pair out), and Baldwin's elimination rounds, compiled like :func:`win_counts`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from math import prod
from typing import Any

import numpy as np

from engine.kernels.costs import Sizes, choose

__all__ = ["baldwin_rounds", "both_counts", "comparison_ranks", "compiled", "compiled_available", "dense_ranks",
           "greater_counts", "kendall_counts", "kendall_counts_all", "kendall_distance", "kendall_tau_b", "METHODS",
           "pair_counts", "pair_method", "stack_counts", "tau_b_from_counts", "WIN_BLOCK_CELLS", "win_counts"]


#: the named methods of :func:`pair_counts` (``"auto"`` chooses among them)
METHODS = ("dense", "rows", "compiled")
#: booleans of one comparison block of the dense method (1 MB: it stays in a second-level cache)
WIN_BLOCK_CELLS = 1 << 20
_U8_ROWS = 255  # rows a uint8 counter holds before it joins the int64 total


@functools.cache
def compiled_available() -> bool:
    """Whether numba is installed (the ``"compiled"`` method and the float32 path of :func:`dense_ranks` need it)."""
    return importlib.util.find_spec("numba") is not None


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``numba.njit(nogil=True, cache=True)(fn)``, compiled (or loaded from numba's cache) at the first call:
    importing numba takes about a second, which a command that never counts pairs does not pay."""
    jitted: list[Any] = []

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        if not jitted:
            from numba import njit

            jitted.append(njit(nogil=True, cache=True)(fn))
        return jitted[0](*args)

    return call


_ROWS = 16  # rows per block: 16 x S int16 counters stay in the first-level cache up to a few thousand systems
_FLUSH = 32767  # judges per int16 counter before it joins the int64 total


def dense_ranks(x: np.ndarray) -> np.ndarray:
    """Dense ranks of every row of ``x`` (K, S): equal values share a rank, ``NaN`` gets -1.

    ``ranks[k, i] > ranks[k, j]`` exactly when ``x[k, i] > x[k, j]`` for two present scores (so
    ``-0.0`` and ``0.0`` share a rank); present scores take ranks ``0 .. d - 1`` for ``d`` distinct
    values.  int16 below 32,767 systems (compact comparisons), int32 beyond.

    Examples
    --------
    >>> dense_ranks(np.array([[0.5, np.nan, -1.0, 0.5]], dtype=np.float32))
    array([[ 1, -1,  0,  1]], dtype=int16)
    """
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)  # float32 stays: converting to float64 keeps every order
    K, S = x.shape
    dt = np.int16 if S < 32767 else np.int32
    out = np.empty((K, S), dtype=dt)
    if x.dtype == np.float32 and x.size and S < 2**31:
        # a float32's order as an int32 and its column in one int64 key: numpy sorts int64 in wide vector
        # instructions, about twice as fast as an argsort of the floats
        bits = np.ascontiguousarray(x + np.float32(0.0)).view(np.int32)  # + 0.0 turns -0.0 into 0.0
        keys = np.empty((K, S), dtype=np.int64)
        _order_keys(bits, np.isnan(x), keys)
        keys.sort(axis=1)
        _ranks_from_keys(keys, out)
        return out
    order = np.argsort(x, axis=1)  # NaN last; equal values share a rank, so no stable sort is needed
    srt = np.take_along_axis(x, order, axis=1)
    rk = np.zeros((K, S), dtype=dt)
    np.cumsum(srt[:, 1:] > srt[:, :-1], axis=1, dtype=dt, out=rk[:, 1:])
    rk[np.isnan(srt)] = -1
    np.put_along_axis(out, order, rk, axis=1)
    return out


_NAN_KEY = (1 << 31) - 1  # above the key of +inf (0x7F800000): NaN sorts last


@compiled
def _order_keys(bits: np.ndarray, nan: np.ndarray, keys: np.ndarray) -> None:  # pragma: no cover - compiled
    """``keys[k, j] = (o << 32) | j`` with ``o`` an int32 in the order of the float32 whose bits are ``bits[k, j]``."""
    K, S = bits.shape
    for k in range(K):
        for j in range(S):
            b = np.int64(bits[k, j])
            if nan[k, j]:
                o = np.int64(_NAN_KEY)
            elif b < 0:  # a negative float: the larger its magnitude bits, the smaller it is
                o = -1 - (b & 0x7FFFFFFF)
            else:
                o = b
            keys[k, j] = (o << 32) | j


@compiled
def _ranks_from_keys(keys: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Dense ranks from each row's sorted keys: the rank grows where the order part changes; NaN gets -1."""
    K, S = keys.shape
    for k in range(K):
        prev = np.int64(0)
        r = -1
        for p in range(S):
            key = keys[k, p]
            o = key >> 32
            j = key & 0xFFFFFFFF
            if o == _NAN_KEY:
                out[k, j] = -1
            else:
                if r < 0 or o != prev:
                    r += 1
                    prev = o
                out[k, j] = r


@compiled
def _greater_counts(ra: np.ndarray, rb: np.ndarray, out: np.ndarray, i0: int, upper: bool) -> None:  # pragma: no cover
    """``out[i, j] += sum_k [rb[k, j] < ra[k, i0 + i]]``; with ``upper`` (``i0 = 0``) for ``j > i`` only."""
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
                lo = i + 1 if upper else 0
                # slices from lo and an index from 0: numba then knows that no index is negative and vectorises
                # the loop (``range(lo, S)`` keeps a wrap-around check per element, about ten times slower)
                row = acc[i - b0, lo:]
                col = rbk[lo:]
                for j in range(S - lo):
                    row[j] += col[j] < x
            n += 1
            if n == _FLUSH or k == K - 1:
                for i in range(b0, b1):
                    lo = i + 1 if upper else 0
                    dst = out[i, lo:]
                    src = acc[i - b0, lo:]
                    for j in range(S - lo):
                        dst[j] += src[j]
                acc[:] = 0
                n = 0


@compiled
def _fold_upper(upper: np.ndarray, both: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """``out[i, j] += upper[i, j]`` and ``out[j, i] += both[i, j] - upper[i, j]`` for every ``j > i``."""
    S = upper.shape[0]
    for i in range(S):
        for j in range(i + 1, S):
            u = upper[i, j]
            out[i, j] += u
            out[j, i] += both[i, j] - u


def _signed_ranks(ranks: np.ndarray, present: np.ndarray, less: bool) -> tuple[np.ndarray, np.ndarray]:
    """Row and column ranks for the compiled loops: missing scores beat nothing and lose to nothing."""
    rk = np.asarray(ranks)
    dt = np.int16 if rk.dtype == np.int16 else np.int32
    info = np.iinfo(dt)
    signed = np.negative(rk, dtype=dt) if less else rk.astype(dt, copy=False)  # ranks are >= -1, so negation fits the type
    pres = np.asarray(present, dtype=bool)
    if pres.all():
        return signed, signed
    ra = np.where(pres, signed, info.min).astype(dt)  # a missing row score beats nothing
    rb = np.where(pres, signed, info.max).astype(dt)  # and nothing beats a missing column score
    return ra, rb


@compiled
def _weighted_greater(ra: np.ndarray, rb: np.ndarray, w: np.ndarray, out: np.ndarray, i0: int) -> None:  # pragma: no cover
    """``out[i, j] += sum_k w[k] [rb[k, j] < ra[k, i0 + i]]`` (int64 weights and counts)."""
    K, S = rb.shape
    for k in range(K):
        wk = w[k]
        if wk == 0:
            continue
        rbk = rb[k]
        for i in range(out.shape[0]):
            x = ra[k, i0 + i]
            row = out[i]
            for j in range(S):
                row[j] += wk * (rbk[j] < x)


def greater_counts(ranks: np.ndarray, present: np.ndarray, i0: int, i1: int, *, less: bool = False,
                   weights: np.ndarray | None = None) -> np.ndarray:
    """``sum_k w_k [r_ki > r_kj]`` (``less=True``: ``[r_ki < r_kj]``) for rows ``i0:i1``, both scores present.

    Parameters
    ----------
    ranks : ndarray (K, S) of int16 or int32
        Ranks of each judge's scores (higher is better; only their order matters).
    present : ndarray (K, S) of bool
        Which scores exist; a missing score takes part in no comparison.
    i0, i1 : int
        The block of rows.
    weights : ndarray (K,) of whole numbers, optional
        Each judge's multiplicity (default 1 each).

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
    ra, rb = _signed_ranks(rk, present, less)
    out = np.zeros((i1 - i0, rk.shape[1]), dtype=np.int64)
    if rk.shape[0] and i1 > i0:
        if weights is None:
            _greater_counts(np.ascontiguousarray(ra), np.ascontiguousarray(rb), out, i0, False)
        else:
            w = np.ascontiguousarray(weights, dtype=np.int64)
            _weighted_greater(np.ascontiguousarray(ra), np.ascontiguousarray(rb), w, out, i0)
    return out


def win_counts(ranks: np.ndarray, present: np.ndarray) -> np.ndarray:
    """The whole matrix ``wins[i, j] = sum_k [r_ki > r_kj]`` over judges where both scores are present.

    Same counts as ``greater_counts(ranks, present, 0, S)``, with half the comparisons for the judges
    whose present scores are all distinct: for them ``[r_ki > r_kj] + [r_kj > r_ki] = 1`` for every pair
    both present, so only ``j > i`` is compared and ``wins[j, i]`` is the number of such judges scoring
    both minus ``wins[i, j]``.  Judges with tied scores take the full loop.  Whole numbers throughout.

    Parameters
    ----------
    ranks : ndarray (K, S) of int16 or int32
        Dense ranks of each judge's scores (:func:`dense_ranks`: present scores
        ``0 .. d - 1`` with ``d`` distinct values, missing ``-1``).
    present : ndarray (K, S) of bool

    Returns
    -------
    ndarray (S, S) of int64

    Examples
    --------
    >>> r = np.array([[2, 0, 1], [0, 1, 1]], dtype=np.int16)  # the first judge has no tie
    >>> win_counts(r, np.ones((2, 3), dtype=bool))
    array([[0, 1, 1],
           [1, 0, 0],
           [1, 1, 0]])
    """
    rk = np.asarray(ranks)
    pres = np.asarray(present, dtype=bool)
    K, S = rk.shape
    # dense ranks of d distinct present values run 0 .. d - 1: no tie when d equals the number present
    distinct = rk.max(axis=1, initial=-1).astype(np.int64) + 1 == pres.sum(axis=1)
    out = np.zeros((S, S), dtype=np.int64)
    if K == 0 or S == 0:
        return out
    if not distinct.all():
        tied = ~distinct
        out += greater_counts(rk[tied], pres[tied], 0, S)
    if distinct.any():
        rd, pd = (rk, pres) if distinct.all() else (rk[distinct], pres[distinct])
        ra, rb = _signed_ranks(rd, pd, False)
        upper = np.zeros((S, S), dtype=np.int64)
        _greater_counts(np.ascontiguousarray(ra), np.ascontiguousarray(rb), upper, 0, True)  # j > i only
        if pd.all():
            both = np.broadcast_to(np.int64(rd.shape[0]), (S, S))
        else:
            pf = pd.astype(np.float64)
            both = np.rint(pf.T @ pf).astype(np.int64)  # 0/1 products: exact below 2**53 judges
        _fold_upper(upper, both, out)  # wins[j, i] = both - wins[i, j] for j > i
    return out


def comparison_ranks(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Small integers standing in for the scores ``X`` (..., S) in pairwise comparisons, as ``(row, col)``:
    ``row[..., i] > col[..., j]`` exactly when ``X[..., i] > X[..., j]`` with both present.

    Dense ranks of every row (:func:`dense_ranks`: equal scores share a rank, ``-0.0`` equals ``0.0``); a missing
    score is the lowest rank as a row (-1: it beats nothing) and the largest integer as a column (nothing beats
    it).  int16 below 32,767 systems, which numpy compares several times faster than float64.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.size == 0:
        empty = np.zeros(X.shape, dtype=np.int16)
        return empty, empty
    row = dense_ranks(X.reshape(-1, X.shape[-1])).reshape(X.shape)
    col = np.where(row < 0, np.iinfo(row.dtype).max, row).astype(row.dtype)
    return row, col


# ------------------------------------------------------------------------------------------ the methods
def _dense(row: np.ndarray, col: np.ndarray, cells: int) -> np.ndarray:
    """Unweighted counts (n, S, S) of rank rows (n, K, S): a block of ``cells // (n S S)`` rows (at most 255) is
    compared at once and reduced in uint8 counters; under two rows a block, each row is compared into one reused
    buffer and added in place to uint8 counters that join the total every 255 rows."""
    n_b, n_k, n_s = row.shape
    out = np.zeros((n_b, n_s, n_s), dtype=np.int64)
    per_block = min(_U8_ROWS, cells // max(1, n_b * n_s * n_s))
    if per_block >= 2:
        for k0 in range(0, n_k, per_block):
            cmp = row[:, k0 : k0 + per_block, :, None] > col[:, k0 : k0 + per_block, None, :]
            out += np.add.reduce(cmp, axis=1, dtype=np.uint8)
        return out
    g = np.empty((n_b, n_s, n_s), dtype=bool)
    acc = np.zeros((n_b, n_s, n_s), dtype=np.uint8)
    for k in range(n_k):
        np.greater(row[:, k, :, None], col[:, k, None, :], out=g)
        acc += g.view(np.uint8)
        if (k + 1) % _U8_ROWS == 0 or k == n_k - 1:
            out += acc
            acc[:] = 0
    return out


def _dense_weighted(row: np.ndarray, col: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted counts (n, S, S): one comparison per row (of every batch element at once), added into int64
    counters, or for one element into counters as narrow as its total weight allows."""
    n_b, n_k, n_s = row.shape
    out = np.zeros((n_b, n_s, n_s), dtype=np.int64)
    if n_b > 1:  # a batch: each row of every element at once, int64 counters
        gb = np.empty((n_b, n_s, n_s), dtype=bool)
        for k in range(n_k):
            np.greater(row[:, k, :, None], col[:, k, None, :], out=gb)
            out += gb * w[:, k, None, None]
        return out
    g = np.empty((n_s, n_s), dtype=bool)
    for b in range(n_b):
        acc = _narrow_counter(n_s, int(w[b].sum()))
        for k in range(n_k):
            if w[b, k]:
                np.greater(row[b, k, :, None], col[b, k, None, :], out=g)
                _add_weighted(acc, g, int(w[b, k]))
        out[b] = acc
    return out


def _narrow_counter(n_s: int, total: int) -> np.ndarray:
    """Zeroed (S, S) counters as narrow as a total weight of ``total`` allows (int16, int32 or int64)."""
    return np.zeros((n_s, n_s), dtype=np.int16 if total < 2**15 else np.int32 if total < 2**31 else np.int64)


def _add_weighted(acc: np.ndarray, g: np.ndarray, wk: int) -> None:
    """``acc += wk * g`` in place for booleans ``g`` and a whole weight ``wk`` (no temporary)."""
    if wk == 1:
        acc += g
    else:
        np.add(acc, wk, out=acc, where=g)


def both_counts(present: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """``pairs[i, j] = sum_k w_k [both present in row k]`` (diagonal: the weight of the rows with ``i``) for the
    presence ``present`` (K, S) and whole-number row weights (K,) (default ones): int64 (S, S), one (S, S) product
    per row added into counters as narrow as the total weight allows.

    Examples
    --------
    >>> both_counts(np.array([[True, True, False], [True, False, True]]), np.array([2, 3])).tolist()
    [[5, 2, 3], [2, 2, 0], [3, 0, 3]]
    """
    pres = np.asarray(present, dtype=bool)
    n_k, n_s = pres.shape
    w = np.ones(n_k, dtype=np.int64) if weights is None else np.asarray(weights).astype(np.int64)
    if pres.all():
        return np.full((n_s, n_s), int(w.sum()), dtype=np.int64)
    acc = _narrow_counter(n_s, int(w.sum()))
    g = np.empty((n_s, n_s), dtype=bool)
    for p, wk in zip(pres, w.tolist()):
        if wk:
            np.logical_and(p[:, None], p[None, :], out=g)
            _add_weighted(acc, g, wk)
    return acc.astype(np.int64)


def _rows(row: np.ndarray, col: np.ndarray, w: np.ndarray | None, cells: int, rows: int | None) -> np.ndarray:
    """Counts (n, S, S) one block of ``rows`` rows of the result at a time (default: as many as a comparison of
    ``cells`` booleans over 255 judges holds): temporaries of ``O(rows x S)`` booleans whatever ``S``."""
    n_b, n_k, n_s = row.shape
    out = np.zeros((n_b, n_s, n_s), dtype=np.int64)
    r = max(1, min(n_s, rows if rows is not None else cells // max(1, n_s * min(max(n_k, 1), _U8_ROWS))))
    for b in range(n_b):
        for i0 in range(0, n_s, r):
            i1 = min(n_s, i0 + r)
            kb = max(1, min(_U8_ROWS, cells // max(1, (i1 - i0) * n_s)))
            for k0 in range(0, n_k, kb):
                g = row[b, k0 : k0 + kb, i0:i1, None] > col[b, k0 : k0 + kb, None, :]
                if w is None:
                    out[b, i0:i1] += np.add.reduce(g, axis=0, dtype=np.uint8)
                else:
                    out[b, i0:i1] += np.tensordot(w[b, k0 : k0 + kb], g, axes=1)  # integer products: exact
    return out


def _compiled_counts(x: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """Counts (n, S, S) of score rows (n, K, S) by the compiled loops, one batch element after the other."""
    n_b, n_k, n_s = x.shape
    rk = dense_ranks(x.reshape(n_b * n_k, n_s)).reshape(n_b, n_k, n_s)
    out = np.empty((n_b, n_s, n_s), dtype=np.int64)
    for b in range(n_b):
        pres = rk[b] >= 0
        out[b] = win_counts(rk[b], pres) if w is None else greater_counts(rk[b], pres, 0, n_s, weights=w[b])
    return out


# ------------------------------------------------------------------------------------------ costs and the front
#: seconds per row and cell of the (S, S) result, measured at S = 30 to 1,000, 200 rows, on a busy 2-core machine
#: (benchmarks/results/paircount.md); only their ratios matter for the choice.  The dense method compares one row
#: at a time once a batch's (S, S) matrices pass half of :data:`WIN_BLOCK_CELLS` (S > 724 alone): several times
#: slower per cell (_DENSE_WIDE) than the blocks of rows of the other methods
_CELL = {"dense": 6.0e-10, "rows": 6.0e-10, "compiled": 2.5e-10}
_DENSE_WIDE = 2.5e-9
_CELL_WEIGHTED = {"dense": 1.0e-8, "rows": 1.3e-8, "compiled": 8.0e-10}
_CALL = {"dense": 2.0e-5, "rows": 5.0e-5, "compiled": 1.0e-5}  # per batch element (the batch loops of rows, compiled)
_NUMBA_START = 1.0  # the compiled method's first call in a process: importing numba and loading its cache


def _cost(method: str, weighted: bool) -> Callable[[Sizes], Any]:
    from engine.kernels.costs import Cost

    per_cell = (_CELL_WEIGHTED if weighted else _CELL)[method]

    def cost(z: Sizes) -> Cost:
        S, K, n = float(z.systems), float(z.judges), float(z.fits)
        cell = per_cell
        if method == "dense" and not weighted and n * S * S > WIN_BLOCK_CELLS // 2:
            cell = _DENSE_WIDE
        seconds = n * (K * S * S * cell + (_CALL[method] if method != "dense" else 0.0)) + _CALL["dense"]
        if method == "compiled":
            if not compiled_available():
                return Cost(seconds=float("inf"), bytes=float("inf"))
            if "numba" not in __import__("sys").modules:
                seconds += _NUMBA_START
        return Cost(seconds=seconds, bytes=8.0 * n * S * S + (2.0 * K * S if method == "compiled" else float(WIN_BLOCK_CELLS)))

    return cost


def _register() -> None:
    from engine.kernels.costs import register_path

    for weighted, problem in ((False, "pair_counts"), (True, "pair_counts_weighted")):
        for method in METHODS:
            register_path(problem, method, _cost(method, weighted))


_register()


def pair_method(shape: tuple[int, ...], *, weighted: bool = False) -> str:
    """The method ``"auto"`` runs for scores of ``shape`` (..., K, S): the cost model's cheapest (problem
    ``"pair_counts"``, or ``"pair_counts_weighted"`` with row weights)."""
    *batch, n_k, n_s = shape
    problem = "pair_counts_weighted" if weighted else "pair_counts"
    return choose(problem, Sizes(systems=n_s, judges=n_k, fits=prod(batch)))


def _row_weights(weights: Any, batch: tuple[int, ...], n_k: int) -> np.ndarray:
    """Row weights as int64 (n, K): whole, non-negative numbers whose sums stay below 2**62."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 0 or w.shape[-1] != n_k:
        raise ValueError(f"expected {n_k} row weights on the last axis, got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or not np.array_equal(w, np.round(w)):
        raise ValueError("pair counts take whole-number, non-negative row weights")
    if float(w.sum(axis=-1).max(initial=0.0)) >= 2.0**62:
        raise ValueError("pair-count row weights sum to 2**62 or more: the counts would overflow int64")
    try:
        wb = np.broadcast_to(w, (*batch, n_k))
    except ValueError:
        raise ValueError(f"row weights of shape {w.shape} do not fit scores with batch shape {batch}") from None
    return wb.reshape(prod(batch), n_k).astype(np.int64)


def pair_counts(X: np.ndarray, *, method: str = "auto", weights: Any = None, cells: int = WIN_BLOCK_CELLS,
                rows: int | None = None) -> np.ndarray:
    """Pair wins ``wins[..., i, j] = sum_k w_k [X_ki > X_kj]`` over the rows ``k`` where both scores are present.

    Parameters
    ----------
    X : array_like, shape (..., K, S)
        Scores, higher is better; ``NaN`` = absent (a pair with an absent score counts for neither).  Any leading
        batch axes.
    method : {"auto", "dense", "rows", "compiled"}
        How to count (the module notes); every method gives the same integers.
    weights : array_like, shape (K,) or (..., K), optional
        Whole-number, non-negative multiplicity of each row (bootstrap draws), broadcast over the batch.
    cells : int
        Booleans of one comparison block (``"dense"``, ``"rows"``); never changes a count.
    rows : int, optional
        Rows of the result per block of the ``"rows"`` method.

    Returns
    -------
    ndarray (..., S, S) of int64
        Zero diagonal.

    Examples
    --------
    >>> x = np.array([[2.0, 1.0, 1.0], [0.0, 3.0, np.nan]])
    >>> pair_counts(x).tolist()
    [[0, 1, 1], [1, 0, 0], [0, 0, 0]]
    >>> pair_counts(x, method="rows", weights=[2, 1]).tolist()
    [[0, 2, 2], [1, 0, 0], [0, 0, 0]]
    """
    x = np.asarray(X)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    if x.ndim < 2:
        raise ValueError(f"pair counts take scores (..., rows, systems), got shape {x.shape}")
    *batch, n_k, n_s = x.shape
    w = None if weights is None else _row_weights(weights, tuple(batch), n_k)
    m = pair_method(x.shape, weighted=w is not None) if method == "auto" else method
    if m not in METHODS:
        raise ValueError(f"unknown pair-count method {method!r}: one of auto, {', '.join(METHODS)}")
    if m == "compiled" and not compiled_available():
        raise ValueError("the compiled pair counts need numba, which is not installed: method 'dense' or 'rows'")
    xb = x.reshape(prod(batch), n_k, n_s)
    if m == "compiled":
        out = _compiled_counts(xb, w)
    else:
        row, col = comparison_ranks(xb)
        if m == "rows":
            out = _rows(row, col, w, cells, rows)
        else:
            out = _dense(row, col, cells) if w is None else _dense_weighted(row, col, w)
    return out.reshape(*batch, n_s, n_s)


def stack_counts(x: np.ndarray, weights: np.ndarray, i0: int = 0, i1: int | None = None, *, less: bool = False,
                 cells: int = 1 << 24, index: np.ndarray | None = None) -> np.ndarray:
    """Rows ``i0:i1`` (or the rows ``index``) of the pair wins of one profile ``x`` (K, S) under a stack of whole-number row weights
    ``weights`` (B, K): ``out[b, i, j] = sum_k w_bk [x_ki > x_kj]`` (``less``: ``[x_ki < x_kj]``), as float64 (B, r, S).

    Each block of ``cells // (r S)`` rows is compared once, then meets every weight vector in one matrix product:
    float32 while every sum of absolute weights stays below 2**24 (0/1 indicators times whole numbers: exact), float64 beyond
    (exact below 2**53).  The blocks follow ``cells``, so a caller keeps its own grouping of the sums.

    Examples
    --------
    >>> stack_counts(np.array([[2.0, 1.0], [0.0, 3.0]]), np.array([[1.0, 0.0], [2.0, 5.0]])).tolist()
    [[[0.0, 1.0], [0.0, 0.0]], [[0.0, 2.0], [5.0, 0.0]]]
    """
    x = np.asarray(x, dtype=np.float64)
    W = np.asarray(weights, dtype=np.float64)
    n_k, n_s = x.shape
    i1 = n_s if i1 is None else i1
    picked = None if index is None else np.asarray(index, dtype=np.intp)
    sel: slice | np.ndarray = slice(i0, i1) if picked is None else picked
    r = i1 - i0 if picked is None else picked.size
    out = np.zeros((W.shape[0], r, n_s))
    step = max(1, cells // max(1, r * n_s))
    f32 = float(np.abs(W).sum(axis=-1).max(initial=0.0)) < 2.0**24
    buf = np.empty((min(step, n_k), r, n_s), dtype=bool)
    op = np.less if less else np.greater
    for k0 in range(0, n_k, step):
        k1 = min(n_k, k0 + step)
        g = buf[: k1 - k0]
        op(x[k0:k1, sel, None], x[k0:k1, None, :], out=g)
        g2 = g.reshape(k1 - k0, r * n_s)
        wk = W[:, k0:k1]
        prod = wk.astype(np.float32) @ g2.astype(np.float32) if f32 else wk @ g2.astype(np.float64)
        out += prod.reshape(W.shape[0], r, n_s)
    return out


@compiled
def _kendall_counts(ra: np.ndarray, rb: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                    out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Knight's (1966) counts for the rank rows ``ra[ia[k]]`` and ``rb[ib[k]]`` (``-1`` = absent): ``out[k] =
    (n, n1, n2, n3, D)``: systems present in both, pairs tied in the first, in the second, in both, and
    discordant pairs.  Sort the common systems by (first, second), count the tie runs, then the strict
    inversions of the second ranks in that order with a Fenwick tree."""
    S = ra.shape[1]
    W = S + 1
    keys = np.empty(S, dtype=np.int64)
    seen = np.zeros(W, dtype=np.int64)
    tree = np.zeros(W + 1, dtype=np.int64)
    for k in range(ia.shape[0]):
        x = ra[ia[k]]
        y = rb[ib[k]]
        m = 0
        for s in range(S):
            if x[s] >= 0 and y[s] >= 0:
                keys[m] = np.int64(x[s]) * W + np.int64(y[s])
                m += 1
        srt = np.sort(keys[:m])
        n1 = np.int64(0)
        n3 = np.int64(0)
        run_a = np.int64(1)
        run_ab = np.int64(1)
        for p in range(1, m):
            if srt[p] // W == srt[p - 1] // W:
                run_a += 1
            else:
                n1 += run_a * (run_a - 1) // 2
                run_a = np.int64(1)
            if srt[p] == srt[p - 1]:
                run_ab += 1
            else:
                n3 += run_ab * (run_ab - 1) // 2
                run_ab = np.int64(1)
        if m > 0:
            n1 += run_a * (run_a - 1) // 2
            n3 += run_ab * (run_ab - 1) // 2
        n2 = np.int64(0)
        d = np.int64(0)
        for p in range(m):
            v = srt[p] % W
            c = np.int64(0)  # earlier systems whose second rank is <= v
            i = v + 1
            while i > 0:
                c += tree[i]
                i -= i & -i
            d += p - c
            i = v + 1
            while i <= W:
                tree[i] += 1
                i += i & -i
            n2 += seen[v]
            seen[v] += 1
        for p in range(m):
            v = srt[p] % W
            seen[v] = 0
            i = v + 1
            while i <= W:
                tree[i] = 0
                i += i & -i
        out[k, 0] = m
        out[k, 1] = n1
        out[k, 2] = n2
        out[k, 3] = n3
        out[k, 4] = d


def kendall_counts(ra: np.ndarray, rb: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Concordance counts of the rankings ``ra[ia[k]]`` and ``rb[ib[k]]`` for every ``k``.

    Parameters
    ----------
    ra, rb : ndarray (Na, S), (Nb, S) of int
        Dense ranks (:func:`dense_ranks`; ``-1`` = absent).  Only the order of each row matters.
    ia, ib : ndarray (N,) of int
        The rows paired.

    Returns
    -------
    ndarray (N, 5) of int64
        ``n`` systems present in both rows, then among them ``n1`` pairs tied in the first row, ``n2``
        tied in the second, ``n3`` tied in both, and ``D`` discordant pairs.  The concordant pairs are
        ``C = n (n - 1) / 2 - n1 - n2 + n3 - D``; whole numbers, so exact.  ``O(n log n)`` per pair
        (Knight 1966): a sort and a Fenwick tree, no ``S x S`` temporary.

    Examples
    --------
    >>> r = dense_ranks(np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [1.0, 1.0, np.nan]]))
    >>> kendall_counts(r, r, np.array([0, 0]), np.array([1, 2]))
    array([[3, 0, 0, 0, 1],
           [2, 0, 1, 0, 0]])
    """
    ra = np.ascontiguousarray(ra)
    rb = np.ascontiguousarray(rb, dtype=ra.dtype)
    ia = np.ascontiguousarray(ia, dtype=np.int64)
    ib = np.ascontiguousarray(ib, dtype=np.int64)
    if ra.shape[1] != rb.shape[1] or ia.shape != ib.shape:
        raise ValueError(f"rank rows of {ra.shape[1]} and {rb.shape[1]} systems, {ia.shape} and {ib.shape} pairs")
    out = np.zeros((ia.shape[0], 5), dtype=np.int64)
    if ia.size and ra.shape[1]:
        _kendall_counts(ra, rb, ia, ib, out)
    return out


def kendall_counts_all(ranks: np.ndarray) -> np.ndarray:
    """The counts of :func:`kendall_counts` for every pair of rows of ``ranks`` (B, S): an array (5, B, B).

    Two paths give the same whole numbers, chosen by the cost model (:mod:`engine.kernels.costs`, problem
    ``"kendall_all"``): ``"compiled"``, Knight's ``O(S log S)`` per pair of rows; ``"dense"``, four matrix products
    over the ``P = S (S - 1) / 2`` system pairs (each row's signs ``sign(r_a - r_b)``, its ties and the pairs it
    ranks: ``C - D`` is the product of two rows' signs, the tie counts products of tie and presence indicators;
    every entry is -1, 0 or 1 and every sum at most ``P``, so float32 products are exact below ``P = 2**24``,
    float64 ones beyond), with no compilation to pay for.

    Examples
    --------
    >>> r = dense_ranks(np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [1.0, 1.0, np.nan]]))
    >>> kendall_counts_all(r)[:, 0, 1:].T.tolist()  # row 0 against rows 1 and 2: n, n1, n2, n3, D
    [[3, 0, 0, 0, 1], [2, 0, 1, 0, 0]]
    """
    from engine.kernels.costs import Sizes, choose

    ranks = np.asarray(ranks)
    B, S = ranks.shape
    if choose("kendall_all", Sizes(systems=S, fits=B)) == "dense":
        return _kendall_counts_dense(ranks)
    iu, ju = np.triu_indices(B)
    c = kendall_counts(ranks, ranks, iu, ju)
    out = np.zeros((5, B, B), dtype=np.int64)
    out[:, iu, ju] = c.T
    out[:, ju, iu] = c.T[[0, 2, 1, 3, 4]]  # the pair seen from the other row: its own ties first
    return out


def _kendall_counts_dense(ranks: np.ndarray) -> np.ndarray:
    """:func:`kendall_counts_all` by matrix products over the system pairs (see there)."""
    B, S = ranks.shape
    present = ranks >= 0
    a, b = np.triu_indices(S, 1)
    pair = present[:, a] & present[:, b]  # (B, P): the row ranks both systems of the pair
    exact: type[np.floating[Any]] = np.float32 if a.size < 1 << 24 else np.float64  # sums of at most P ones: exact
    sign: np.ndarray = np.where(pair, np.sign(ranks[:, a] - ranks[:, b]), 0).astype(exact)
    tie: np.ndarray = (pair & (sign == 0)).astype(exact)
    pair_f: np.ndarray = pair.astype(exact)
    pres = present.astype(np.float64)
    n = np.rint(pres @ pres.T).astype(np.int64)
    n1 = np.rint(tie @ pair_f.T).astype(np.int64)  # pairs of the common systems tied in the first row
    n3 = np.rint(tie @ tie.T).astype(np.int64)
    cmd = np.rint(sign @ sign.T).astype(np.int64)  # C - D over the pairs both rows rank untied
    n0 = n * (n - 1) // 2
    d = (n0 - n1 - n1.T + n3 - cmd) // 2
    return np.stack([n, n1, n1.T, n3, d])


@compiled
def _baldwin_rounds(pts: np.ndarray, present: np.ndarray, tol: float, score: np.ndarray) -> None:  # pragma: no cover
    """See :func:`baldwin_rounds`; ``score`` (S,) is written."""
    S = pts.shape[0]
    alive = present.copy()
    borda = np.zeros(S)
    for i in range(S):
        score[i] = 0.0 if alive[i] else np.nan
        acc = 0.0
        for j in range(S):
            if alive[j]:
                acc += pts[i, j]
        borda[i] = acc
    gone = np.empty(S, dtype=np.int64)
    rnd = 0
    while True:
        n = 0
        lo = np.inf
        hi = -np.inf
        for i in range(S):
            if alive[i]:
                n += 1
                lo = min(lo, borda[i])
                hi = max(hi, borda[i])
        if n <= 1 or hi <= lo + tol:
            break
        m = 0
        for i in range(S):
            if alive[i] and borda[i] <= lo + tol:
                gone[m] = i
                m += 1
        for q in range(m):
            score[gone[q]] = float(rnd)
            alive[gone[q]] = False
        for i in range(S):
            acc = 0.0
            for q in range(m):
                acc += pts[i, gone[q]]
            borda[i] -= acc
        rnd += 1
    n_present = 0
    for i in range(S):
        n_present += present[i]
    for i in range(S):
        if alive[i]:
            score[i] = float(n_present)


def baldwin_rounds(pts: np.ndarray, present: np.ndarray, tol: float) -> np.ndarray:
    """Baldwin's elimination on one Borda point matrix ``pts`` (S, S) (``pts[i, j]`` = the points ``i`` takes
    from ``j``): each round every alive system whose Borda total among the alive is within ``tol`` of the
    least leaves; it stops when one system is left or all alive ones tie.  Returns the round in which each
    system left (``NaN`` for an absent one, the number present for the survivors).

    Examples
    --------
    >>> baldwin_rounds(np.array([[0.0, 1, 1], [0, 0, 1], [0, 0, 0]]), np.ones(3, dtype=bool), 0.0)
    array([3., 1., 0.])
    """
    score = np.empty(pts.shape[0])
    _baldwin_rounds(np.ascontiguousarray(pts, dtype=np.float64), np.ascontiguousarray(present, dtype=np.bool_),
                    float(tol), score)
    return score


def _concordance_counts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """``n, n1, n2, n3, D`` of :func:`kendall_counts` for the score vectors ``a`` and ``b``
    (``(..., S)``, broadcast), each of the broadcast batch shape; ``NaN`` = absent."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    shape = np.broadcast_shapes(a.shape, b.shape)
    if len(shape) == 0:
        raise ValueError("expected score vectors with a system axis")
    S = shape[-1]
    batch = shape[:-1]
    rows = []
    for v in (a, b):  # each vector's own rows ranked once, paired by index over the broadcast batch
        v = np.broadcast_to(v, v.shape[:-1] + (S,))  # a one-system axis broadcast to S
        own = v.shape[:-1]
        idx = np.broadcast_to(np.arange(prod(own), dtype=np.int64).reshape(own), batch).reshape(-1)
        rows.append((dense_ranks(v.reshape(prod(own), S)), idx))
    (ra, ia), (rb, ib) = rows
    c = kendall_counts(ra, rb.astype(ra.dtype), ia, ib)
    return tuple(c[:, q].reshape(batch) for q in range(5))


def kendall_distance(a: np.ndarray, b: np.ndarray, *, tie_penalty: float = 0.5) -> np.ndarray:
    """Kendall distance between two rankings given as score vectors.

    Parameters
    ----------
    a, b : array_like, shape (..., S)
        Scores or ranks inducing the two rankings (only the order matters; the
        direction must be the same in both).  Leading axes broadcast.
        ``NaN`` = not ranked: pairs involving it are ignored.
    tie_penalty : float, optional
        Cost of a pair tied in exactly one of the rankings (default 1/2).

    Returns
    -------
    ndarray of float64, shape (...)
        Number of unordered pairs ordered oppositely by ``a`` and ``b``, plus
        ``tie_penalty`` times the number of pairs tied in exactly one of them
        (Colombo et al. 2022, sections 3.1 and 3.4; see the module notes on the
        pair convention).

    Notes
    -----
    Counts each pair of rankings in ``O(S log S)`` from whole numbers
    (:func:`kendall_counts`), so the result is exact.

    Examples
    --------
    >>> kendall_distance(np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 3.0]))
    array(3.)
    >>> kendall_distance(np.array([1.0, 1.0, 0.0]), np.array([2.0, 1.0, 0.0]))
    array(0.5)
    """
    p = float(tie_penalty)
    n, n1, n2, n3, d = _concordance_counts(a, b)
    return np.asarray(d + p * ((n1 - n3) + (n2 - n3)), dtype=np.float64)


def kendall_tau_b(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b rank correlation, vectorised over leading axes.

    Parameters
    ----------
    a, b : array_like, shape (..., S)
        Two score vectors; leading axes broadcast.  Systems missing (``NaN``)
        in either vector are left out (as ``scipy.stats.kendalltau`` with
        ``nan_policy='omit'``).

    Returns
    -------
    ndarray of float64, shape (...)
        ``(C - D) / sqrt((n0 - n1) (n0 - n2))`` with ``C``/``D`` the concordant /
        discordant pairs, ``n0`` the number of pairs and ``n1``/``n2`` the pairs
        tied in ``a``/``b`` (Kendall 1945); ``NaN`` when the denominator is 0
        (fewer than two systems, or one vector constant).  Colombo et al.
        (2022), section 3.4, compare rankings with it.

    Examples
    --------
    >>> kendall_tau_b(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]))
    array(0.33333333)
    """
    n, n1, n2, n3, d = _concordance_counts(a, b)
    return tau_b_from_counts(n, n1, n2, n3, d)


def tau_b_from_counts(n: np.ndarray, n1: np.ndarray, n2: np.ndarray, n3: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Kendall's tau-b ``(C - D) / sqrt((n0 - n1) (n0 - n2))`` from the whole-number counts of
    :func:`kendall_counts` (``C - D = n0 - n1 - n2 + n3 - 2 D``, ``n0 = n (n - 1) / 2``);
    ``NaN`` where the denominator is 0."""
    n0 = n * (n - 1) // 2
    cmd = (n0 - n1 - n2 + n3 - 2 * d).astype(np.float64)
    den = (n0 - n1).astype(np.float64) * (n0 - n2).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, cmd / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)
