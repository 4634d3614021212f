"""Social-choice rules of Vote'n'Rank (Rofin et al., EACL 2023, section 2.2).

Conventions of :mod:`engine.kernels`: ``X`` has shape ``(..., T, S)`` (tasks are
voters, systems are alternatives on the last axis), scores are oriented
(higher is better), ``NaN`` = missing, and every kernel returns one score per
system, higher is better.

Ties are never broken by input order.  In positional (scoring) rules the tied
systems share the mean of the scoring-vector entries of the positions they
occupy (so Borda gives 0.5 per tie).  Majority-relation rules work from the
pairwise win matrix, computed once by :func:`pairwise_counts`; a pair where
either score is missing is ignored (Vote'n'Rank eq. 1-3), so those rules need
no missing-score policy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.kernels.aggregate import task_weights
from engine.kernels.costs import Sizes, choose
from engine.kernels.exact import SUM_BITS, TIE_RTOL, exact_matmul, exact_weights, rational_weights, tame, weighted_task_sum
from engine.kernels.paircount import WIN_BLOCK_CELLS, baldwin_rounds, both_counts, comparison_ranks, pair_counts, stack_counts
from engine.kernels.ranking import tie_groups

__all__ = [
    "pairwise_counts",
    "comparison_ranks",
    "win_counts_over_tasks",
    "task_pair_sums",
    "majority_margin",
    "scoring_points",
    "plurality_vector",
    "dowdall_vector",
    "plurality_across",
    "dowdall_across",
    "scoring_vector_across",
    "threshold_across",
    "baldwin_across",
    "condorcet_across",
    "copeland_across",
    "minimax_across",
    "condorcet_from_wins",
    "copeland_from_wins",
    "minimax_from_wins",
    "baldwin_round",
    "baldwin_from_counts",
    "baldwin_from_sums",
    "condorcet_from_sums",
    "copeland_from_sums",
    "minimax_from_sums",
]

_PAIR_BLOCK = 1 << 22  # cells of the (tasks x S x S) comparison processed at once
_FEW_ROWS = 2  # up to this many weight rows, pairwise sums are counted task by task (no matrix product)


def task_pair_sums(
    X: np.ndarray, weights: np.ndarray, kinds: Sequence[str] = ("wins", "pairs"), *, unscaled: bool = False
) -> Any:
    """Pairwise sums over the tasks of one profile under many weight vectors, as matrix products.

    For one profile ``X`` (T, S) and a stack of task weights ``W`` (..., T)
    (e.g. the multiplicities of bootstrap replicates), every requested sum is
    ``W @ G`` with ``G`` the per-task pairwise indicator (T, S*S), built once
    per block of tasks: the comparisons are made once, not once per weight vector.

    Parameters
    ----------
    X : ndarray, shape (T, S)
        Oriented scores; ``NaN`` = missing (a pair with a ``NaN`` contributes nothing).
    weights : ndarray, shape (..., T)
    kinds : sequence of {"wins", "pairs", "reldiff"}
        ``wins[i, j] = sum_t w_t [X_ti > X_tj]``; ``pairs[i, j] = sum_t w_t``
        over the tasks where both are present (diagonal: where ``i`` is);
        ``reldiff[i, j] = sum_t w_t (X_ti - X_tj) / (X_ti + X_tj)`` (0 when
        the sum is not positive).

    unscaled : bool
        Return ``(sums, L)``: ``wins`` and ``pairs`` as exact whole numbers in units of ``1 / L``
        (``L`` the common denominator of simple-fraction weights, 1 for other weights).

    Returns
    -------
    dict of ndarray, each of shape (..., S, S)
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"task_pair_sums takes one (T, S) profile, got shape {X.shape}")
    n_t, n_s = X.shape
    W = np.asarray(weights, dtype=np.float64)
    if W.ndim == 0 or W.shape[-1] != n_t:
        raise ValueError(f"expected {n_t} task weights on the last axis, got shape {W.shape}")
    W2 = W.reshape(-1, n_t)
    # simple-fraction weights (bootstrap multiplicities, 1/|group|) as whole numbers k / L: 0/1 indicators
    # times whole numbers are exact (float32 below 2**24, float64 below 2**53) in any order
    r = rational_weights(W2)
    K, L = (W2, 1) if r is None else r
    total = float(np.abs(K).sum(axis=-1).max(initial=0.0))
    present = ~np.isnan(X)
    if r is not None and W2.shape[0] <= _FEW_ROWS and total < 2**62 and set(kinds) <= {"wins", "pairs"}:
        out = {k: _pair_counts(X, present, K, k) for k in kinds}
        return _scaled_sums(out, W.shape[:-1], n_s, L, unscaled)
    out = {k: np.zeros((W2.shape[0], n_s * n_s)) for k in kinds}
    if r is not None and "wins" in kinds:  # whole-number weights: the pair-count kernel's stacked products
        out["wins"] = stack_counts(X, K, cells=_PAIR_BLOCK).reshape(W2.shape[0], n_s * n_s)
    step = max(1, _PAIR_BLOCK // max(1, n_s * n_s))
    Xr = tame(X, below=SUM_BITS)[0] if "reldiff" in kinds else X  # relative differences of a task near the float64 limit: scaled
    for t0 in range(0, n_t, step):
        xb = X[t0 : t0 + step]
        kb = K[:, t0 : t0 + step]
        for k in kinds:
            if k == "wins" and r is not None:
                continue  # counted above
            if k == "wins":
                g = xb[:, :, None] > xb[:, None, :]
            elif k == "pairs":
                pb = present[t0 : t0 + step]
                g = pb[:, :, None] & pb[:, None, :]
            elif k == "reldiff":
                xr = Xr[t0 : t0 + step]
                with np.errstate(invalid="ignore", divide="ignore"):
                    ssum = xr[:, :, None] + xr[:, None, :]
                    g = np.where(ssum > 0, (xr[:, :, None] - xr[:, None, :]) / np.where(ssum > 0, ssum, 1.0), 0.0)
            else:
                raise ValueError(f"unknown pairwise sum {k!r}")
            g2 = g.reshape(g.shape[0], n_s * n_s)
            if k == "reldiff" or r is None:  # real terms (or real weights): row by row, in true units
                out[k] += _exact_or_ordered(W2[:, t0 : t0 + step], g2)
            elif total < 2**24:
                out[k] += kb.astype(np.float32) @ g2.astype(np.float32)
            else:
                out[k] += kb @ g2.astype(np.float64)
    return _scaled_sums(out, W.shape[:-1], n_s, L, unscaled)


def _scaled_sums(out: dict[str, np.ndarray], lead: tuple[int, ...], n_s: int, L: int, unscaled: bool) -> Any:
    """The result of :func:`task_pair_sums` from flat sums (B, S*S): whole-number sums in units of ``1 / L``
    divided by ``L`` (or returned with ``L`` when ``unscaled``); the real-valued reldiff is in true units."""
    sums = {k: v.reshape(*lead, n_s, n_s) for k, v in out.items()}
    if L != 1:
        if unscaled:
            sums = {k: (v * L if k == "reldiff" else v) for k, v in sums.items()}
        else:
            sums = {k: (v if k == "reldiff" else v / L) for k, v in sums.items()}
    return (sums, L) if unscaled else sums


def _pair_counts(X: np.ndarray, present: np.ndarray, K: np.ndarray, kind: str) -> np.ndarray:
    """Whole-number pairwise sums (B, S*S) for a few weight rows ``K`` (B, T), one row after the other.

    Both from the one pair-count kernel, the weights as row multiplicities: ``wins``
    :func:`engine.kernels.paircount.pair_counts`, ``pairs`` :func:`engine.kernels.paircount.both_counts`.
    Exact, and for one or two weight rows several times faster than building the (T, S*S) indicator for a
    matrix product.
    """
    n_s = X.shape[1]
    out = np.zeros((K.shape[0], n_s * n_s))
    if kind == "wins":
        for b, kb in enumerate(K):
            out[b] = pair_counts(X, weights=None if (kb == 1).all() else kb).reshape(-1)
        return out
    for b, kb in enumerate(K):
        out[b] = both_counts(present, kb).reshape(-1)
    return out


def _exact_or_ordered(W: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``W @ G`` for weight rows ``W`` (B, t) and real per-task terms ``G`` (t, N), each row independent of the others.

    Rows of simple-fraction weights are scaled to whole numbers by their own denominator and meet
    ``G`` in exactly summed matrix products (:func:`engine.kernels.exact.exact_matmul`), so a row's
    result does not depend on which rows share its block; other rows add one task after the other.
    """
    out = np.empty((W.shape[0], G.shape[1]))
    scaled = [rational_weights(row) for row in W]
    exact = np.array([r is not None for r in scaled])
    if exact.any():
        K = np.stack([r[0] for r in scaled if r is not None])
        L = np.array([float(r[1]) for r in scaled if r is not None])
        out[exact] = exact_matmul(K, G) / L[:, None]
    for b in np.flatnonzero(~exact):
        acc = np.zeros(G.shape[1])
        for t in range(G.shape[0]):
            acc += W[b, t] * G[t]
        out[b] = acc
    return out


def win_counts_over_tasks(X: np.ndarray, *, cells: int = WIN_BLOCK_CELLS) -> np.ndarray:
    """Unweighted ``wins[..., i, j] = sum_t [X_ti > X_tj]`` over the tasks where both scores are present, as float64.

    The ``"dense"`` method of the one pair-count kernel (:func:`engine.kernels.paircount.pair_counts`: small-integer
    ranks compared in blocks of ``cells`` booleans, reduced in uint8 counters); every count is a whole number, so
    neither ``cells`` nor the order of the tasks changes a bit of the result.

    Returns
    -------
    ndarray (..., S, S) of float64
    """
    return pair_counts(X, method="dense", cells=cells).astype(np.float64)


def pairwise_counts(X: np.ndarray, *, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Weighted pairwise win and tie counts over tasks.

    Parameters
    ----------
    X : ndarray, shape (..., T, S)
        Oriented scores; a pair where either score is ``NaN`` is ignored.
    weights : ndarray, shape (T,) or (..., T), optional
        Task weights (default ones).

    Returns
    -------
    wins : ndarray, shape (..., S, S)
        ``wins[..., i, j] = sum_t w_t [X_ti > X_tj]``.
    ties : ndarray, shape (..., S, S)
        ``ties[..., i, j] = sum_t w_t [X_ti == X_tj]`` for ``i != j`` (zero diagonal).

    Notes
    -----
    O(T S^2): the wins of unweighted and of whole-number (or simple-fraction, scaled) weights are the one
    pair-count kernel's (:func:`engine.kernels.paircount.pair_counts`, its method chosen by the cost model);
    real weights that are not simple fractions are summed one task after the other.  Ties follow from the
    weight of the pairs present on both sides: ``ties = present_pairs - wins - wins^T``.
    """
    X = np.asarray(X, dtype=np.float64)
    *batch, n_t, n_s = X.shape
    if weights is not None and X.ndim == 2 and np.ndim(weights) > 1:
        # one profile, many weight vectors (bootstrap multiplicities): compare once, then matrix products
        sums, L = task_pair_sums(X, task_weights(weights, n_t), ("wins", "pairs"), unscaled=True)
        wins = sums["wins"]
        ties = sums["pairs"] - wins - np.swapaxes(wins, -1, -2)
        idx = np.arange(n_s)
        ties[..., idx, idx] = 0.0
        np.maximum(ties, 0.0, out=ties)
        return (wins / L, ties / L) if L != 1 else (wins, ties)
    present = ~np.isnan(X)
    if weights is None:
        wins = pair_counts(X).astype(np.float64)
        if present.all():
            pairs = np.full((*batch, n_s, n_s), float(n_t))
        else:
            pf = present.astype(np.float64)
            pairs = np.matmul(np.swapaxes(pf, -1, -2), pf)  # 0/1 products: whole numbers, exact in any order
    else:
        task_weights(weights, n_t)  # validates
        k, L = exact_weights(weights, (*batch, n_t))
        w = np.broadcast_to(k, (*batch, n_t))
        if L is not None and float(np.abs(w).sum(axis=-1).max(initial=0.0)) < 2.0**53:
            wins, pairs = _whole_counts(X, present, w)
        else:
            wins, pairs = _real_sums(X, present, w)
    ties = pairs - wins - np.swapaxes(wins, -1, -2)  # exact in units of 1 / L
    idx = np.arange(n_s)
    ties[..., idx, idx] = 0.0
    np.maximum(ties, 0.0, out=ties)  # rounding of weighted sums of weights that are not simple fractions
    if weights is not None and L not in (None, 1):
        return wins / L, ties / L
    return wins, ties


def _whole_counts(X: np.ndarray, present: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``wins`` and ``pairs`` (..., S, S) under whole-number task weights ``w`` (..., T) summing below 2**53: the
    pair-count kernel's integers, and presence products of whole numbers (exact in any order)."""
    wins = pair_counts(X, weights=w).astype(np.float64)
    pf = present.astype(np.float64)
    return wins, np.matmul(np.swapaxes(pf * w[..., :, None], -1, -2), pf)


def _real_sums(X: np.ndarray, present: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``wins`` and ``pairs`` (..., S, S) under real task weights ``w`` (..., T), summed one task after the other
    (weighted sums, not counts: their order is the canonical task order)."""
    *batch, n_t, n_s = X.shape
    wins = np.zeros((*batch, n_s, n_s))
    pairs = np.zeros((*batch, n_s, n_s))
    buf = np.empty((*batch, n_s, n_s), dtype=bool)
    for t in range(n_t):
        xt = X[..., t, :]
        wt = w[..., t, None, None]
        np.greater(xt[..., :, None], xt[..., None, :], out=buf)
        wins += wt * buf
        pt = present[..., t, :]
        np.logical_and(pt[..., :, None], pt[..., None, :], out=buf)
        pairs += wt * buf
    return wins, pairs


def majority_margin(wins: np.ndarray) -> np.ndarray:
    """``wins - wins^T``: positive where the row system beats the column system by weighted majority (eq. 3)."""
    return wins - np.swapaxes(wins, -1, -2)

#: a scoring vector whose largest entry reaches 2**_VECTOR_BITS is scaled below it (sums over positions, tasks and
#: weights of up to 2**53 stay finite)
_VECTOR_BITS = 900


# --------------------------------------------------------------------------------------------
# positional (scoring) rules
# --------------------------------------------------------------------------------------------
def scoring_points(X: np.ndarray, vector: Callable[[int], np.ndarray]) -> np.ndarray:
    """Points of every system on every task under a positional scoring vector.

    Parameters
    ----------
    X : ndarray, shape (..., T, S)
        Oriented scores; ``NaN`` systems take no position.
    vector : callable
        ``vector(n) -> c`` of length ``n``: points of positions 1..n (best first)
        when ``n`` systems are present on a task.

    Returns
    -------
    ndarray, shape (..., T, S)
        ``c[position]``; tied systems get the mean of ``c`` over the positions
        they share; ``NaN`` for missing systems.
    """
    X = np.asarray(X, dtype=np.float64)
    n_s = X.shape[-1]
    order = np.argsort(X, axis=-1)
    s = np.take_along_axis(X, order, axis=-1)
    first, last = tie_groups(s)
    present = ~np.isnan(s)
    n = present.sum(axis=-1, keepdims=True)
    # cumulative sums of the scoring vector for every number n of present systems that occurs:
    # C[n, k] = sum_{i<k} c_n[i]
    C = np.zeros((n_s + 1, n_s + 1))
    for m in np.unique(n[n > 0]).tolist():
        c = np.asarray(vector(m), dtype=np.float64)
        if c.shape != (m,):
            raise ValueError(f"scoring vector for {m} systems must have {m} entries, got shape {c.shape}")
        C[m, 1 : m + 1] = np.cumsum(c)
    # ascending positions first..last are descending positions n-1-last .. n-1-first
    hi = np.clip(n - first, 0, n_s)
    lo = np.clip(n - 1 - last, 0, n_s)
    nn = np.broadcast_to(n, s.shape)
    pts = (C[nn, hi] - C[nn, lo]) / (last - first + 1)
    pts = np.where(present, pts, np.nan)
    out = np.empty_like(pts)
    np.put_along_axis(out, order, pts, axis=-1)
    return out


def _weighted_task_sum(points: np.ndarray, weights: np.ndarray | None, *, exact: bool = True) -> np.ndarray:
    """Weighted sum of positional points over tasks; ``NaN`` for a system absent from every task.

    ``exact``: the points are simple fractions (plurality's 1/k for k systems tied first, whole-number
    scoring vectors), summed in integers when their common denominator is small
    (:func:`engine.kernels.exact.weighted_task_sum`); otherwise (Dowdall) in task order.
    """
    task_weights(weights, points.shape[-2])  # validates
    present = ~np.isnan(points)
    r = rational_weights(np.where(present, points, 0.0)) if exact else None
    total = weighted_task_sum(points, weights, denominator=None if r is None else r[1])
    return np.where(present.any(axis=-2), total, np.nan)


def plurality_vector(n: int) -> np.ndarray:
    """Plurality's scoring vector for ``n`` systems: (1, 0, ..., 0)."""
    c = np.zeros(n)
    c[0] = 1.0
    return c


def dowdall_vector(n: int) -> np.ndarray:
    """Dowdall's scoring vector for ``n`` systems: (1, 1/2, ..., 1/n)."""
    return 1.0 / np.arange(1, n + 1)


def plurality_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Plurality: number of (weighted) tasks on which the system is first, c = (1, 0, ..., 0).

    ``k`` systems tied for first share the point (1/k each).
    """
    return _weighted_task_sum(scoring_points(X, plurality_vector), weights)


def dowdall_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Dowdall: scoring vector c = (1, 1/2, ..., 1/|M|); tied systems share the mean of their positions' points."""
    return _weighted_task_sum(scoring_points(X, dowdall_vector), weights, exact=False)


def scoring_vector_across(
    X: np.ndarray, *, weights: np.ndarray | None = None, vector: Sequence[float] | None = None
) -> np.ndarray:
    """Generic positional rule with a user scoring vector ``c`` (best position first).

    With ``n`` present systems on a task, the first ``n`` entries of ``c`` are
    used (e.g. Eurovision's (12, 10, 8, 7, ..., 1)); ``c`` must be
    non-increasing and have at least as many entries as systems.
    """
    if vector is None:
        raise ValueError("rule 'scoring' needs a scoring vector (option 'vector')")
    try:
        c = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"scoring vector must be a list of numbers, got {str(vector)[:60]}") from None
    if c.ndim != 1 or c.size < np.shape(X)[-1]:
        raise ValueError(f"scoring vector needs at least {np.shape(X)[-1]} entries (one per system), got {c.size}")
    if not np.isfinite(c).all():
        raise ValueError("scoring vector entries must be finite numbers")
    if np.any(np.diff(c) > 0):
        raise ValueError("scoring vector must be non-increasing (best position first)")
    # scale-free: a vector so large that its sums over positions and tasks could overflow is scaled by a power of
    # two (exact), so (1e308, 1e308, 0, 0) ranks as (1, 1, 0, 0) does; its scores are then in units of 2**e points
    c, e = tame(c, below=_VECTOR_BITS)
    if e is not None:
        logging.getLogger("engine").warning(f"scoring vector scaled by 2**-{int(e)} (its sums would overflow): the ranking "
                                            f"is that of the given vector, the scores are in units of 2**{int(e)} points")
    return _weighted_task_sum(scoring_points(X, lambda n: c[:n]), weights)


# --------------------------------------------------------------------------------------------
# iterative scoring rules
# --------------------------------------------------------------------------------------------
def _bottom_position_histogram(X: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """H[..., m, q]: weighted number of tasks placing system m at position q counted from the bottom.

    Tied systems share the positions they occupy equally; missing systems take
    no position (positions are counted among the present systems).
    """
    X = np.asarray(X, dtype=np.float64)
    *batch, n_t, n_s = X.shape
    task_weights(weights, n_t)  # validates
    order = np.argsort(X, axis=-1)
    s = np.take_along_axis(X, order, axis=-1)
    first, last = tie_groups(s)
    present = ~np.isnan(s)
    size = last - first + 1
    k, L = exact_weights(weights, (*batch, n_t))
    w = np.broadcast_to(k, (*batch, n_t))
    # a share w / size: whole numbers after scaling by the lcm of the tie sizes (exact sums)
    lt = int(np.lcm.reduce(np.unique(size[present]))) if present.any() else 1
    if L is not None and lt * float(np.abs(w).sum(axis=-1).max(initial=0.0)) < 2.0**52:
        v = np.where(present, w[..., :, None] * (lt // size), 0.0)
    else:
        v = np.where(present, w[..., :, None] / size, 0.0)
    # difference array over bottom positions [first, last], scattered to the system in each slot
    sys_idx = order
    D = np.zeros((*batch, n_s, n_s + 1))
    flat_b = int(np.prod(batch)) if batch else 1
    Df = D.reshape(flat_b, n_s, n_s + 1)
    bi = np.broadcast_to(np.arange(flat_b).reshape(flat_b, 1, 1), (flat_b, n_t, n_s))
    si = sys_idx.reshape(flat_b, n_t, n_s)
    vv = v.reshape(flat_b, n_t, n_s)
    np.add.at(Df, (bi, si, first.reshape(flat_b, n_t, n_s)), vv)
    np.add.at(Df, (bi, si, last.reshape(flat_b, n_t, n_s) + 1), -vv)
    return np.cumsum(D, axis=-1)[..., :n_s]


def threshold_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Threshold rule (Aleskerov et al. 2010; Vote'n'Rank section 2.2.2).

    Applies c = (1, ..., 1, 0), i.e. counts the tasks where a system is not
    last; ties are broken with (1, ..., 1, 0, 0), ..., (1, 0, ..., 0) applied
    to the original profile.  Comparing those scores one vector after the other
    is the same as comparing, lexicographically, how often each system is last,
    then second to last, and so on (fewer is better).  The score returned is the
    number of systems a system beats in that lexicographic order, so systems
    equal under every vector tie.  Missing scores need a policy.  Leading batch
    axes are handled one element at a time (``np.lexsort`` is not batched).
    """
    X = np.asarray(X, dtype=np.float64)
    *batch, n_t, n_s = X.shape
    H = _bottom_position_histogram(X, weights)[..., : max(n_s - 1, 1)]
    if exact_weights(weights, (n_t,))[1] is None:
        # weights that are not simple fractions: placements are real sums; equal ones within the tie rule
        scale = float(np.max(np.abs(task_weights(weights, n_t)).sum(axis=-1))) or 1.0
        H = np.round(H / (scale * TIE_RTOL)) * (scale * TIE_RTOL)
    absent = np.isnan(X).all(axis=-2)
    flat = H.reshape(-1, n_s, H.shape[-1])
    out = np.empty((flat.shape[0], n_s))
    for b in range(flat.shape[0]):
        h = flat[b]
        # ascending lexicographic order of -h (fewer bottom placements = better), first key most significant
        keys = tuple(-h[:, q] for q in range(h.shape[1] - 1, -1, -1))
        order = np.lexsort(keys)
        hs = h[order]
        new = np.ones(n_s, dtype=bool)
        new[1:] = (hs[1:] != hs[:-1]).any(axis=1)
        start = np.maximum.accumulate(np.where(new, np.arange(n_s), 0))
        sc = np.empty(n_s)
        sc[order] = start
        out[b] = sc
    return np.where(absent, np.nan, out.reshape(*batch, n_s))


def baldwin_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Baldwin rule: iterative Borda elimination (Vote'n'Rank section 2.2.2).

    Each round recomputes Borda scores among the remaining systems (a row sum
    of the pairwise win matrix restricted to them) and eliminates every system
    with the minimum score; it stops when one system is left or all remaining
    systems tie.  The score is the round in which a system was eliminated
    (survivors get the last round + 1), so systems eliminated together tie.
    """
    wins, ties = pairwise_counts(X, weights=weights)
    return baldwin_from_counts(wins, ties, _present(X))


def baldwin_from_counts(wins: np.ndarray, ties: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Baldwin elimination rounds from the win and tie matrices (see :func:`baldwin_across`).

    The Borda score of ``i`` among the alive systems ``A`` is
    ``sum_{j in A} wins[i, j] + 0.5 ties[i, j]``, updated as systems leave.
    """
    pts = wins + 0.5 * ties
    # Borda totals are updated incrementally (exact for simple-fraction weights); scores within the
    # tie tolerance of the minimum count as tied (engine.kernels.exact)
    tol = TIE_RTOL * max(1.0, float(np.abs(pts).sum(axis=-1).max(initial=0.0)))
    if pts.ndim == 2:
        return baldwin_rounds(pts, np.asarray(present, dtype=bool), tol)
    S = pts.shape[-1]
    batch = pts.shape[:-2]
    fits = int(np.prod(batch))
    if choose("baldwin", Sizes(systems=S, fits=fits)) == "each":
        flat = pts.reshape(fits, S, S)
        pres = np.broadcast_to(np.asarray(present, dtype=bool), batch + (S,)).reshape(fits, S)
        rows = [baldwin_rounds(flat[b], pres[b], tol) for b in range(fits)]
        return np.stack(rows).reshape(batch + (S,)) if rows else np.zeros(batch + (S,))
    alive = np.broadcast_to(present, pts.shape[:-1]).copy()  # one row per batch element (weight stacks too)
    score = np.where(alive, 0.0, np.nan)
    n_s = pts.shape[-1]
    borda = np.einsum("...ij,...j->...i", pts, alive.astype(np.float64))
    for rnd in range(n_s):
        step = baldwin_round(borda, alive, score, tol, rnd)
        if step is None:
            break
        out, score, alive = step
        if out.ndim == 1:
            borda -= pts[:, out].sum(axis=-1)
        else:
            borda -= np.einsum("...ij,...j->...i", pts, out.astype(np.float64))
    return np.where(alive, present.sum(axis=-1, keepdims=True).astype(np.float64), score)  # survivors: the number ranked


def baldwin_round(borda: np.ndarray, alive: np.ndarray, score: np.ndarray, tol: float, rnd: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """One Baldwin round in every row: the alive systems whose Borda score is the row's lowest (within
    ``tol``) are eliminated, in rows with two or more alive systems whose scores are not all tied.

    Returns ``(out, score, alive)``: the eliminated systems, ``score`` with ``rnd`` written for them, and
    the systems still alive; ``None`` when no row has a round left.
    """
    b = np.where(alive, borda, np.inf)
    mn = b.min(axis=-1, keepdims=True)
    bmax = np.where(alive, borda, -np.inf).max(axis=-1, keepdims=True)
    active = (alive.sum(axis=-1, keepdims=True) > 1) & (bmax > mn + tol)
    if not active.any():
        return None
    out = np.asarray(alive & active & (b <= mn + tol))
    return out, np.where(out, float(rnd), score), alive & ~out


# --------------------------------------------------------------------------------------------
# majority-relation rules
# --------------------------------------------------------------------------------------------
def _present(X: np.ndarray) -> np.ndarray:
    return np.asarray(~np.isnan(np.asarray(X, dtype=np.float64)).all(axis=-2))


def _wins(X: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """The win matrix of :func:`pairwise_counts` alone (unweighted: without the tie counts the majority rules never read)."""
    if weights is None:
        return pair_counts(X).astype(np.float64)
    return pairwise_counts(X, weights=weights)[0]


def majority_beats(wins: np.ndarray, wins_t: np.ndarray, row_present: np.ndarray,
                   present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row system: the present systems it beats by majority, and those that beat it, ``(beats, beaten)``.

    ``wins`` (..., r, S) holds rows of the win matrix and ``wins_t`` the same rows of its transpose (a block of
    rows: :mod:`engine.kernels.pairblock`; all rows: the ``*_from_wins`` functions), ``row_present`` (..., r) and
    ``present`` (..., S) which systems are present.  Whole counts: the same whatever the block.
    """
    margin = wins - wins_t
    pair = row_present[..., :, None] & present[..., None, :]
    return ((margin > 0) & pair).sum(axis=-1), ((margin < 0) & pair).sum(axis=-1)


def worst_defeat(wins: np.ndarray, wins_t: np.ndarray, present: np.ndarray) -> np.ndarray:
    """For each row system m: max_B s(B, m), the largest weighted majority of a present B that beats it (0: none).

    ``wins``/``wins_t`` (..., r, S): rows of the win matrix and of its transpose, as in :func:`majority_beats`.
    """
    beaten = ((wins_t - wins) > 0) & present[..., None, :]
    return np.where(beaten, wins_t, 0.0).max(axis=-1)


def condorcet_from_wins(wins: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Condorcet scores from a win matrix: 1 for the Condorcet winner, 0 otherwise (see :func:`condorcet_across`)."""
    beats = majority_beats(wins, np.swapaxes(wins, -1, -2), present, present)[0]
    winner = present & (beats == present.sum(axis=-1, keepdims=True) - 1)
    return np.where(present, winner.astype(np.float64), np.nan)


def copeland_from_wins(wins: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Copeland scores u = |L| - |U| from a win matrix (see :func:`copeland_across`)."""
    beats, beaten = majority_beats(wins, np.swapaxes(wins, -1, -2), present, present)
    return np.where(present, (beats - beaten).astype(np.float64), np.nan)


def minimax_from_wins(wins: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Minimax scores -max_B s(B, m) from a win matrix (see :func:`minimax_across`)."""
    worst = worst_defeat(wins, np.swapaxes(wins, -1, -2), present)
    return np.where(present, 0.0 - worst + 0.0, np.nan)


def _present_from_pairs(pairs: np.ndarray) -> np.ndarray:
    return np.diagonal(pairs, axis1=-2, axis2=-1) > 0


def baldwin_from_sums(sums: dict[str, np.ndarray]) -> np.ndarray:
    """Baldwin rounds from summed ``wins`` and ``pairs`` matrices (ties = pairs - wins - wins^T off the diagonal)."""
    wins, pairs = sums["wins"], sums["pairs"]
    ties = pairs - wins - np.swapaxes(wins, -1, -2)
    idx = np.arange(wins.shape[-1])
    ties[..., idx, idx] = 0.0
    return baldwin_from_counts(wins, np.maximum(ties, 0.0), _present_from_pairs(pairs))


def condorcet_from_sums(sums: dict[str, np.ndarray]) -> np.ndarray:
    """Condorcet scores from summed ``wins`` and ``pairs`` matrices (diagonal of ``pairs``: presence)."""
    return condorcet_from_wins(sums["wins"], _present_from_pairs(sums["pairs"]))


def copeland_from_sums(sums: dict[str, np.ndarray]) -> np.ndarray:
    """Copeland scores from summed ``wins`` and ``pairs`` matrices."""
    return copeland_from_wins(sums["wins"], _present_from_pairs(sums["pairs"]))


def minimax_from_sums(sums: dict[str, np.ndarray]) -> np.ndarray:
    """Minimax scores from summed ``wins`` and ``pairs`` matrices."""
    return minimax_from_wins(sums["wins"], _present_from_pairs(sums["pairs"]))


def condorcet_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Condorcet rule: 1 for the Condorcet winner (beats every other system by weighted majority), else 0.

    When no Condorcet winner exists every system scores 0 (all tie: no winner).
    Pairs with a missing score are ignored.
    """
    return condorcet_from_wins(_wins(X, weights), _present(X))


def copeland_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Copeland rule: u(m) = |L(m)| - |U(m)|, systems beaten minus systems beating m by weighted majority.

    Pairs with a missing score are ignored.
    """
    return copeland_from_wins(_wins(X, weights), _present(X))


def minimax_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Minimax rule: rank(m) = -max_B s(B, m), s(B, m) = (weighted) tasks where B beats m if B mu m, else 0.

    Pairs with a missing score are ignored.
    """
    return minimax_from_wins(_wins(X, weights), _present(X))
