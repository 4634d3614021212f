"""Kendall's tau-b and distance from whole-number concordance counts, and Baldwin's elimination, compiled with numba.

:func:`kendall_counts` gives the concordance counts behind Kendall's tau-b and distance in ``O(S log S)`` per pair
of rankings, and :func:`kendall_tau_b` / :func:`kendall_distance` the two statistics from them (the pair convention
is the one of :mod:`engine.kernels.kemeny`'s notes: unordered pairs, a missing score leaves the pair out).

The pair-win counts that used to live here (:func:`greater_counts`, :func:`win_counts`) and the dense ranks they
compare (:func:`dense_ranks`) belong to the one pair-count kernel, :mod:`engine.kernels.paircount`; the names stay
importable from here.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from engine.kernels.paircount import compiled, dense_ranks, greater_counts, win_counts

__all__ = ["baldwin_rounds", "dense_ranks", "greater_counts", "kendall_counts", "kendall_counts_all", "kendall_distance",
           "kendall_tau_b", "tau_b_from_counts", "win_counts"]


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
