"""Exact and order-free arithmetic shared by every rule (pure numpy).

The same data must give the same ranking whatever the order of systems, tasks,
instances, chunks or workers.  Three tools make that true by construction:

* **Integers for counts.**  Count-based rules (Borda, plurality, Copeland, ...)
  sum whole numbers, or halves, which float64 represents exactly below 2**52 in
  any summation order.  Weights that are whole numbers or simple fractions
  (``1/|group|``, Vote'n'Rank's 0.5) are scaled to integers first
  (:func:`rational_weights`), so equal counts stay bitwise equal.
* **Exactly summed reals.**  Real-valued sums over instances (per-task means)
  are taken with :func:`digit_sums`: every value is cut into fixed base-2**31
  digits below one global anchor, the digits are summed as integers, and the
  exact total is rounded by one deterministic function (:func:`digits_to_float`).
  The result depends on the multiset of values only, not on their order or on
  how they are chunked.  Sums over the (small) task and opponent axes run in the
  one canonical order of the labels (see :func:`engine.labelled.core.prepare`), one term
  after the other (:func:`ordered_sum`), so they never depend on batch or block
  sizes either.
* **One tie rule** (:func:`snap_ties`): two aggregate scores ``a`` and ``b`` of
  one ranking tie when ``|a - b| <= TIE_RTOL * max(m_a, m_b)``, where ``m_a`` is
  the magnitude of ``a``: ``|a|``, or the largest term that made it when the rule
  says its terms can be larger (a mean of scores of mixed sign: the system's
  largest ``|score|``; shares and flows: 1).  The rounding of a score is relative
  to its own terms, so a huge score elsewhere in the ranking does not merge two
  ordinary ones.  Tied scores are replaced by the largest score of their class (classes are
  chains of neighbours in sorted order), so every later step (ranks, intervals,
  ``P(i above j)``, the leader's tied set, reports, the dashboard) sees exact
  equality.  ``TIE_RTOL = 1e-12`` is about 4,500 units in the last place: far
  above the rounding of an exactly summed rule, far below any difference a
  benchmark can measure.  Count-based scores are exact, and two different ones
  differ by at least ``1/L`` (``L`` the weight denominator), which the rule
  never merges while the numerators stay below 1e12.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

__all__ = [
    "TIE_RTOL",
    "TAME_ABOVE",
    "SUM_BITS",
    "tame",
    "DIGITS",
    "tie_tolerance",
    "snap_ties",
    "ordered_sum",
    "rational_weights",
    "exact_weights",
    "anchor",
    "digits",
    "digit_sums",
    "digits_to_float",
    "exact_sum",
    "weighted_task_sum",
    "exact_matmul",
    "full_digit_sums",
    "merge_digit_sums",
    "weighted_task_mean",
]

#: relative tolerance of the tie rule (see the module docstring)
TIE_RTOL = 1e-12
#: base-2**31 digits kept below the anchor of an exact sum (124 bits: anything smaller than 2**-124 of the
#: largest value is cut, identically for every order and chunking)
DIGITS = 4
_BITS = 31
_BASE = float(1 << _BITS)
_MASK = (1 << _BITS) - 1
#: largest denominator accepted as a "simple fraction" weight
_MAX_DENOMINATOR = 1 << 20


# ------------------------------------------------------------------------------------------ tie rule
def tie_tolerance(score: np.ndarray, magnitude: float | np.ndarray | None = None) -> np.ndarray:
    """The tie tolerance of every score: ``TIE_RTOL * max(|score|, magnitude)`` (shape of ``score``; 0 for ``NaN``).

    ``magnitude`` broadcasts against ``score`` (a scalar, or one value per system).

    Examples
    --------
    >>> tie_tolerance(np.array([0.5, -2.0, np.nan])).tolist()
    [5e-13, 2e-12, 0.0]
    """
    s = np.asarray(score, dtype=np.float64)
    m = np.where(np.isfinite(s), np.abs(s), 0.0)
    if magnitude is not None:
        mag = np.abs(np.asarray(magnitude, dtype=np.float64))
        m = np.maximum(m, np.where(np.isfinite(mag), mag, 0.0))
    return TIE_RTOL * m


def snap_ties(score: np.ndarray, magnitude: float | np.ndarray | None = None) -> np.ndarray:
    """Apply the tie rule: scores of a row within the tie tolerance of a neighbour become one value.

    Parameters
    ----------
    score : array_like, shape (..., S)
        Aggregate scores, one ranking per row (system axis last); ``NaN`` = not ranked.
    magnitude : float or array_like, broadcastable to ``score``, optional
        Magnitude of the terms of each score when it can exceed ``|score|`` (see the module docstring).

    Returns
    -------
    ndarray, shape (..., S)
        A copy where every class of scores chained by gaps ``<= TIE_RTOL * max(m_a, m_b)`` between neighbours
        in sorted order holds the class maximum (``m`` of exactly equal scores: the largest of them).
        Depends on the multiset of (score, magnitude) pairs of the row only (not on the system order).

    Examples
    --------
    >>> a = np.array([0.1 + 0.2, 0.5, 0.3, np.nan])   # 0.30000000000000004 and 0.3
    >>> snap_ties(a).tolist()
    [0.30000000000000004, 0.5, 0.30000000000000004, nan]
    >>> snap_ties(np.array([0.1, 0.1000001, 1e300])).tolist()  # a huge score elsewhere merges nothing
    [0.1, 0.1000001, 1e+300]
    """
    s = np.array(score, dtype=np.float64)
    if s.ndim == 0 or s.shape[-1] < 2 or s.size == 0:
        return s
    n = s.shape[-1]
    flat = s.reshape(-1, n)
    tol = np.broadcast_to(tie_tolerance(s, magnitude), s.shape).reshape(-1, n)
    order = np.argsort(flat, axis=-1, kind="stable")
    srt = np.take_along_axis(flat, order, axis=-1)
    gap = srt[:, 1:] - srt[:, :-1]  # NaN next to NaN
    if not ((gap > 0) & (gap <= np.take_along_axis(tol, order, axis=-1).max(axis=-1, keepdims=True))).any():
        return s  # no two distinct scores close enough for any tolerance of the row: every tie is already exact
    # the tolerance of exactly equal scores is their largest (so that the system order cannot matter)
    t = np.take_along_axis(tol, order, axis=-1)
    rows = np.arange(flat.shape[0])[:, None]
    run = np.cumsum(np.concatenate([np.ones((flat.shape[0], 1), dtype=bool), ~(gap == 0)], axis=-1), axis=-1) - 1
    run_tol = np.zeros(flat.shape)
    np.maximum.at(run_tol, (np.broadcast_to(rows, run.shape), run), t)
    t = run_tol[rows, run]
    join = gap <= np.maximum(t[:, 1:], t[:, :-1])
    # position of the last member of each chain: a chain ends where the next gap does not join
    pos = np.arange(n)
    ends = np.ones(srt.shape, dtype=bool)
    ends[:, :-1] = ~join
    last = np.where(ends, pos, n - 1)[:, ::-1]
    last = np.minimum.accumulate(last, axis=-1)[:, ::-1]
    rep = np.take_along_axis(srt, last, axis=-1)
    rep[np.isnan(srt)] = np.nan
    out = np.empty_like(flat)
    np.put_along_axis(out, order, rep, axis=-1)
    return out.reshape(s.shape)


# ------------------------------------------------------------------------------------------ huge magnitudes
#: values whose magnitude exceeds this are rescaled by :func:`tame` before sums, differences or squares
TAME_ABOVE = 2.0**500


#: ``tame(..., below=SUM_BITS)``: values kept below 2**1000, so sums of up to 2**23 of them cannot overflow and
#: values down to 2**-998 keep every bit
SUM_BITS = 1000


def tame(X: np.ndarray, axis: int = -1, *, below: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Rescale by a power of two every slice along ``axis`` whose values are too large for the arithmetic ahead.

    By default (for squares and differences) a slice whose largest ``|x|`` exceeds :data:`TAME_ABOVE` is
    multiplied by ``2**-e`` (``e`` the binary exponent of that largest value, which then lies in [0.5, 1)).
    With ``below=k`` (for sums, means, medians, ratios: see :data:`SUM_BITS`) only a slice whose largest
    ``|x|`` reaches ``2**k`` is scaled, by just enough to bring it below ``2**k``, so that its small values
    keep their bits.  Multiplying by a power of two is exact (for values that stay normal), so a
    scale-invariant result (a ratio, a min-max normalisation, an order) is that of exact arithmetic, and a
    scale-equivariant one (a median, a mean) is ``ldexp(result, e)``.  Other slices are left untouched, bit
    for bit.

    Returns
    -------
    X, exponent
        The rescaled values and ``e`` (the shape of ``X`` without ``axis``; 0 where unchanged), or ``X``
        itself and ``None`` when nothing needed rescaling.

    Examples
    --------
    >>> Y, e = tame(np.array([[1.5e308, 1e308], [1.0, 2.0]]))
    >>> e.tolist(), bool((np.ldexp(Y, e[:, None]) == [[1.5e308, 1e308], [1.0, 2.0]]).all())
    ([1024, 0], True)
    >>> tame(np.array([1.5e308, 0.1]), below=SUM_BITS)[1].tolist()  # 1.5e308 < 2**1024: scaled by 2**-24
    24
    """
    X = np.asarray(X, dtype=np.float64)
    if X.shape[axis] == 0:
        return X, None
    m = np.abs(np.where(np.isnan(X), 0.0, X)).max(axis=axis)  # NaN (a missing score) counts as 0
    big = m > TAME_ABOVE if below is None else m >= 2.0**below
    if not big.any():
        return X, None
    e = np.where(big, np.frexp(np.where(big, m, 1.0))[1], 0)  # m < 2**e
    if below is not None:
        e = np.where(big, e - below, 0)
    return np.ldexp(X, -np.expand_dims(e, axis)), e


# ------------------------------------------------------------------------------------------ ordered sums
def ordered_sum(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """Sum along ``axis`` one term after the other, in index order.

    Every output cell is ``((a_0 + a_1) + a_2) + ...`` whatever the shape, memory layout or batch
    size of ``a`` (numpy's own reductions switch between pairwise and sequential summation with the
    layout, so their last bit can depend on the batch size).

    Examples
    --------
    >>> float(ordered_sum(np.array([0.1, 0.2, 0.3])))
    0.6000000000000001
    """
    a = np.asarray(a)
    a = np.moveaxis(a, axis, 0)
    if a.shape[0] == 0:
        return np.zeros(a.shape[1:], dtype=np.result_type(a.dtype, np.float64))
    acc = np.array(a[0], dtype=np.result_type(a.dtype, np.float64))
    for i in range(1, a.shape[0]):
        acc += a[i]
    return acc


# ------------------------------------------------------------------------------------------ weights
def rational_weights(weights: np.ndarray, *, max_denominator: int = _MAX_DENOMINATOR) -> tuple[np.ndarray, int] | None:
    """Weights as whole numbers ``k`` and one denominator ``L`` (``w = k / L``), or ``None``.

    Whole numbers give ``L = 1``.  Otherwise every distinct weight must be, to a few units in the
    last place, a fraction with a denominator of at most ``max_denominator`` (``1/3``, ``0.5``,
    ``0.7``, multiplicities times ``1/|group|``), and ``L`` is their least common multiple.

    Returns
    -------
    (ndarray of float64 whole numbers, int) or None

    Examples
    --------
    >>> k, L = rational_weights(np.array([1 / 3, 2 / 3, 0.5]))
    >>> k.tolist(), L
    ([2.0, 4.0, 3.0], 6)
    >>> rational_weights(np.array([0.1234567891234, 1.0])) is None
    True
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.size == 0:
        return w.copy(), 1
    if not np.isfinite(w).all():
        return None
    for d in (1, 2):  # whole numbers and halves (Borda points) without the search below
        k = w * d
        if np.array_equal(k, np.round(k)):
            return (k, d) if np.abs(k).max() < 2.0**52 else None
    L = 1
    for v in np.unique(w):
        f = Fraction(float(v)).limit_denominator(max_denominator)
        if abs(float(f) - float(v)) > 8 * np.finfo(np.float64).eps * abs(float(v)):
            return None
        L = math.lcm(L, f.denominator)
        if L > max_denominator:
            return None
    k = np.round(w * L)
    if np.abs(w * L - k).max() > 1e-6 or np.abs(k).max() >= 2.0**52:
        return None
    return k, L


def exact_weights(weights: np.ndarray | None, shape: tuple[int, ...]) -> tuple[np.ndarray, int | None]:
    """Task weights for a count-based rule: ``(k, L)`` with whole-number ``k = w L``, or ``(w, None)``.

    ``weights=None`` gives ones of ``shape`` and ``L = 1``.  Weights that are not simple fractions
    come back unchanged with ``L = None`` (the rule then sums reals in its canonical order and the
    tie rule decides ties).
    """
    if weights is None:
        return np.ones(shape), 1
    w = np.asarray(weights, dtype=np.float64)
    r = rational_weights(w)
    if r is None:
        return w, None
    return r


# ------------------------------------------------------------------------------------------ exact sums
def anchor(max_abs: float | np.ndarray) -> int:
    """Digit position ``P`` with ``|x| < 2**(31 P)`` for every value up to ``max_abs`` (0 for no data).

    Examples
    --------
    >>> anchor(0.75), anchor(1.0), anchor(3e9)
    (0, 1, 2)
    """
    m = float(np.max(max_abs)) if np.size(max_abs) else 0.0
    if not np.isfinite(m) or m <= 0.0:
        return 0
    e = math.frexp(m)[1]  # m < 2**e
    return -((-e) // _BITS)  # ceil(e / 31)


def digits(x: np.ndarray, top: int, *, n: int = DIGITS) -> np.ndarray:
    """Fixed base-2**31 digits of ``x`` below the anchor ``top``: shape ``x.shape + (n,)``.

    ``x ~= sum_k D[..., k] * 2**(31 (top - 1 - k))`` with integer-valued ``|D| < 2**31`` of the
    sign of ``x``; the part of ``x`` below the last digit is cut (toward zero), identically for
    every value, so sums of digits are exact and independent of order.  ``NaN`` counts as 0.
    Every step (scaling by powers of two, truncation, subtraction of the truncated part) is exact
    in float64.
    """
    y = np.ldexp(np.where(np.isnan(x), 0.0, np.asarray(x, dtype=np.float64)), -_BITS * int(top))
    out = np.empty(np.shape(y) + (n,))
    for k in range(n):
        y = y * _BASE
        d = np.trunc(y)
        out[..., k] = d
        y = y - d
    return out


def digit_sums(x: np.ndarray, axis: int, top: int, *, n: int = DIGITS) -> np.ndarray:
    """Exact integer sums of the :func:`digits` of ``x`` along ``axis``: int64, ``reduced shape + (n,)``."""
    d = digits(x, top, n=n).astype(np.int64)
    ax = axis if axis >= 0 else axis - 1  # the digit axis is appended last
    return d.sum(axis=ax)


def digits_to_float(D: np.ndarray, top: int) -> np.ndarray:
    """The float64 of exact digit sums ``D`` (..., n) below anchor ``top`` (see :func:`digits`).

    The digits are first normalised (carries, sign and magnitude) into the unique base-2**31
    expansion of the exact total, then accumulated from the most significant digit down, so the
    result is one fixed function of the exact total (within one unit in the last place of it).
    """
    D = np.asarray(D)
    n = D.shape[-1]
    Di = np.rint(D).astype(np.int64) if D.dtype.kind == "f" else D.astype(np.int64)
    # two extra digits above the anchor hold the carries of up to 2**62 summed values
    full = np.zeros(D.shape[:-1] + (n + 2,), dtype=np.int64)
    full[..., 2:] = Di

    def normalise(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = np.empty_like(v)
        carry = np.zeros(v.shape[:-1], dtype=np.int64)
        for k in range(v.shape[-1] - 1, -1, -1):  # least significant first
            t = v[..., k] + carry
            out[..., k] = t & _MASK
            carry = t >> _BITS  # floor division: the digit left is in [0, 2**31)
        return out, carry

    mag, carry = normalise(full)
    neg = carry < 0
    if neg.any():
        mag_neg, _ = normalise(-full)
        mag = np.where(neg[..., None], mag_neg, mag)
    acc = np.zeros(D.shape[:-1])
    with np.errstate(over="ignore"):  # a total beyond the float64 range is inf; the callers say so
        for k in range(n + 2):  # most significant first
            acc = acc + np.ldexp(mag[..., k].astype(np.float64), _BITS * (int(top) + 1 - k))
    return np.where(neg, -acc, acc)


def full_digit_sums(x: np.ndarray, axis: int = -1) -> tuple[np.ndarray, int]:
    """Integer sums of the :func:`digits` of ``x`` along ``axis`` with no value cut, and their anchor.

    The digits run from the anchor of the largest ``|value|`` down to the lowest bit any value can
    hold (53 bits below its own binary exponent, 24 for float32 data), so every value is represented exactly (when the
    exponents of the values lie within about 1,000 of each other) and the sums are the exact totals.
    Partial sums of different parts of the data (other anchors and lengths) add up with
    :func:`merge_digit_sums`, so a sum built from parts in any grouping is the same exact total.

    Returns
    -------
    D : ndarray of int64, shape ``reduced shape + (n,)``
    top : int
        The anchor of ``D`` (see :func:`digits_to_float`).
    """
    a = np.asarray(x)
    bits = np.finfo(a.dtype).nmant + 1 if a.dtype.kind == "f" else 53  # significant bits of the values
    a = a.astype(np.float64, copy=False)
    v = np.abs(a[~np.isnan(a)])
    v = v[v > 0]
    shape = np.delete(np.shape(a), axis).tolist() if a.ndim else []
    if v.size == 0:
        return np.zeros((*shape, 1), dtype=np.int64), 0
    e = np.frexp(v)[1]  # |value| < 2**e, lowest bit >= 2**(e - bits)
    top = -((-int(e.max())) // _BITS)
    low = (int(e.min()) - bits) // _BITS
    return digit_sums(a, axis, top, n=top - low), top


def merge_digit_sums(parts: Sequence[tuple[np.ndarray, int]]) -> tuple[np.ndarray, int]:
    """The sum of several :func:`full_digit_sums` results (same leading shape), aligned on their digit positions.

    Whole-number digit sums add exactly, so the result does not depend on how the data was split
    or on the order of ``parts``.
    """
    top = max(t for _, t in parts)
    low = min(t - d.shape[-1] for d, t in parts)
    out = np.zeros(parts[0][0].shape[:-1] + (top - low,), dtype=np.int64)
    for d, t in parts:
        out[..., top - t : top - t + d.shape[-1]] += d
    return out, top


def exact_sum(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Sum of ``x`` along ``axis`` (``NaN`` = 0) that depends on the multiset of values only.

    Examples
    --------
    >>> a = np.array([0.1, 0.2, 0.3, -0.6])
    >>> float(a.sum()), float(a[::-1].sum()), float(exact_sum(a)), float(exact_sum(a[::-1]))
    (1.1102230246251565e-16, 2.7755575615628914e-17, 2.7755575615628914e-17, 2.7755575615628914e-17)
    """
    x = np.asarray(x, dtype=np.float64)
    top = anchor(np.nanmax(np.abs(x), initial=0.0))
    return digits_to_float(digit_sums(x, axis, top), top)


def weighted_task_sum(values: np.ndarray, weights: np.ndarray | None = None, *,
                      denominator: int | None = None) -> np.ndarray:
    """``sum_t w_t v_t`` over the task axis (-2) of ``values`` (..., T, S); ``NaN`` terms are skipped.

    When the values are whole multiples of ``1 / denominator`` (or, without ``denominator``, whole
    numbers or halves) and the weights are simple fractions (:func:`rational_weights`), the sum is
    taken in integers and divided once, so equal exact sums are bitwise equal; otherwise the terms
    are added in task order (:func:`ordered_sum`).

    Parameters
    ----------
    values : ndarray, shape (..., T, S)
    weights : ndarray, shape (T,) or (..., T), optional
    denominator : int, optional
        Every value is known to be a whole multiple of ``1 / denominator``.

    Returns
    -------
    ndarray, shape (..., S)

    Examples
    --------
    >>> v = np.array([[1.0, 0.5], [0.5, 1.0], [1.0, 1.0]])
    >>> weighted_task_sum(v, np.array([1 / 3, 1 / 3, 1 / 3])).tolist()
    [0.8333333333333334, 0.8333333333333334]
    """
    v = np.asarray(values, dtype=np.float64)
    v0 = np.where(np.isnan(v), 0.0, v)
    d = 2 if denominator is None else int(denominator)
    kv, k, L, ok = _exact_rows(v0, weights, d)
    w = np.ones(v.shape[:-1]) if weights is None else np.asarray(weights, dtype=np.float64)
    if ok.all():
        return _task_loop(kv, k) / (d * L)[..., None]
    if not ok.any():
        return _task_loop(v0, w)
    return np.where(ok[..., None], _task_loop(kv, k) / (d * L)[..., None], _task_loop(v0, w))


def _exact_rows(v0: np.ndarray, weights: np.ndarray | None, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per ranking (batch row): values times ``d``, whole-number weights ``k = w L``, ``L``, and whether the row's
    values are whole multiples of ``1 / d``, its weights simple fractions and its sums below 2**52.

    Decided row by row, so a row's result never depends on the rows that share its batch (block).
    """
    T = v0.shape[-2]
    kv = v0 * d
    grid = (kv == np.round(kv)).all(axis=(-2, -1))
    k: np.ndarray
    L: np.ndarray
    okw: np.ndarray
    if weights is None:
        k, L, okw = np.ones(T), np.ones(()), np.ones((), dtype=bool)
    else:
        w = np.asarray(weights, dtype=np.float64)
        w2 = w.reshape(-1, T)
        if np.array_equal(w2, np.round(w2)):
            k, L, okw = w, np.ones(w.shape[:-1]), np.abs(w).sum(axis=-1) < 2.0**52
        else:
            rows = [rational_weights(r) for r in w2]
            okw = np.array([r is not None for r in rows]).reshape(w.shape[:-1])
            k = np.stack([np.zeros(T) if r is None else r[0] for r in rows]).reshape(w.shape)
            L = np.array([1.0 if r is None else float(r[1]) for r in rows]).reshape(w.shape[:-1])
    bound = np.abs(kv).max(axis=(-2, -1), initial=0.0) * np.abs(k).sum(axis=-1)
    batch = np.broadcast_shapes(grid.shape, np.shape(okw), np.shape(bound))
    ok = np.broadcast_to(grid & okw & (bound < 2.0**52), batch)
    return kv, k, np.broadcast_to(L, batch), ok


def weighted_task_mean(values: np.ndarray, weights: np.ndarray | None = None, *, denominator: int | None = None,
                       extra: float = 1.0) -> np.ndarray:
    """``sum_t w_t v_t / (extra * sum_t w_t)`` over the task axis (-2); ``NaN`` terms count 0.

    As :func:`weighted_task_sum`: for values that are whole multiples of ``1 / denominator`` (default:
    halves) and simple-fraction weights, the numerator and the denominator are whole numbers and
    the mean is one division (``extra`` must then be a whole number), so equal means are bitwise
    equal; otherwise the terms are added in task order.

    Examples
    --------
    >>> weighted_task_mean(np.array([[1.0], [0.0], [0.0]]), np.array([0.1, 0.2, 0.7])).tolist()
    [0.1]
    """
    v = np.asarray(values, dtype=np.float64)
    v0 = np.where(np.isnan(v), 0.0, v)
    d = 2 if denominator is None else int(denominator)
    w = np.ones(v.shape[:-1]) if weights is None else np.asarray(weights, dtype=np.float64)
    kv, k, L, ok = _exact_rows(v0, weights, d)
    extra = float(extra)
    if extra != round(extra):
        ok = np.zeros_like(ok)
    else:
        ok = ok & (np.abs(k).sum(axis=-1) * d * abs(extra) < 2.0**52)
    if ok.all():
        return _task_loop(kv, k) / (k.sum(axis=-1) * d * extra)[..., None]
    approx = _task_loop(v0, w) / (ordered_sum(w, axis=-1) * extra)[..., None]
    if not ok.any():
        return approx
    with np.errstate(invalid="ignore", divide="ignore"):  # rows not taken (ok False) may divide 0 by 0
        exact = _task_loop(kv, k) / (k.sum(axis=-1) * d * extra)[..., None]
    return np.where(ok[..., None], exact, approx)


def _task_loop(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_t w[..., t] v[..., t, :]`` one task after the other (no (..., T, S) temporary)."""
    T = v.shape[-2]
    shape = np.broadcast_shapes(v.shape[:-2] + v.shape[-1:], w.shape[:-1] + (1,))
    acc = np.zeros(shape)
    for t in range(T):
        acc += w[..., t, None] * v[..., t, :]
    return acc


def exact_matmul(K: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``K @ G`` for whole-number ``K`` (B, T) and real ``G`` (T, N), exactly summed.

    ``G`` is cut into :func:`digits` below one anchor, the digits meet ``K`` in float64 matrix
    products (exact: integer-valued terms and sums below 2**53) and the exact totals are rounded by
    :func:`digits_to_float`: the result depends neither on the order of the T terms nor on how
    many rows are multiplied at once (BLAS blocking).

    Examples
    --------
    >>> G = np.array([[0.1, 1.0], [0.2, 2.0], [0.3, 3.0]])
    >>> K = np.array([[1.0, 1.0, 1.0], [0.0, 2.0, 0.0]])
    >>> exact_matmul(K, G).tolist()
    [[0.6, 6.0], [0.4, 4.0]]
    """
    K = np.asarray(K, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    T, N = G.shape
    top = anchor(np.abs(G).max(initial=0.0))
    D = digits(G, top).reshape(T, N * DIGITS)
    if float(np.abs(K).sum(axis=-1).max(initial=0.0)) < 2.0**21:
        S = K @ D
    else:  # integer products (not BLAS), exact up to 2**63
        S = K.astype(np.int64) @ D.astype(np.int64)
    return digits_to_float(S.reshape(K.shape[0], N, DIGITS), top)
