"""Robustness metrics computed from replicate rankings (pure numpy, system axis last).

The bootstrap layer (:mod:`engine.bootstrap`) resamples tasks, instances or
systems, aggregates every replicate into a score vector and hands the stacked
vectors ``(B, S)`` (``NaN`` = system absent from that replicate) to the
functions below.  They implement

* rank conversions and rank correlations restricted to the systems two
  rankings share (:func:`average_ranks`, :func:`spearman`);
* Pavao et al. (ESANN 2021) section 2.3: the *stability* of a ranking method
  (:func:`concordance`, :func:`pairwise_correlations`), the normalised *average
  rank of the winner* (:func:`winner_average_rank`), the *Condorcet rate*
  (:func:`condorcet_winner_index`, :func:`condorcet_rate`) and the
  *generalization* to out-of-bag judges (:func:`generalization`); Kendall's
  coefficient of concordance ``W`` of their Table 1 (:func:`kendall_w`);
* bootstrap summaries of a leaderboard: rank intervals (:func:`rank_intervals`),
  the probability that one system scores above another (:func:`prob_above`)
  and the systems statistically tied with the leader (:func:`tied_with_leader`);
* Vote'n'Rank / Colombo-style top-k and last-k agreement (:func:`topk_agreement`).

Conventions
-----------
* Scores are oriented: higher is better.  Ranks: 1 = best.
* ``NaN`` marks an absent system; it never takes part in a comparison.
* Functions that take one ranking per replicate accept any number of leading
  batch axes unless stated otherwise; single values come back as ``numpy.float64``.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np

from engine.kernels.checks import check_level
from engine.kernels.pairblock import blocks_prob_above, prob_above_blocked
from engine.kernels.paircount import dense_ranks, kendall_counts_all, kendall_tau_b, tau_b_from_counts
from engine.kernels.ranking import borda_points, min_rank, tie_groups
from engine.kernels.social import pairwise_counts

__all__ = [
    "average_ranks",
    "spearman",
    "pairwise_correlations",
    "concordance",
    "kendall_w",
    "rank_intervals",
    "prob_above",
    "tied_with_leader",
    "winner_average_rank",
    "condorcet_winner_index",
    "condorcet_rate",
    "generalization",
    "topk_agreement",
    "pairwise_rank_bounds",
    "rank_upper_bound",
    "order_stability",
    "interval_description",
]

Method = Literal["spearman", "kendall"]

_CAP = 1 << 24  # elements of one float32 work block (64 MB); integer sums below 2**24 stay exact in float32
_CACHE = 1 << 17  # elements of the small integer temporaries of one step (about 0.5 MB: they stay in cache)


# --------------------------------------------------------------------------- helpers


def _as_float(x, name: str, min_ndim: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {x.shape}")
    return x


def _check_method(method: str) -> Literal["spearman", "kendall"]:
    if method == "spearman":
        return "spearman"
    if method == "kendall":
        return "kendall"
    raise ValueError(f"method must be 'spearman' or 'kendall', got {method!r}")


def _scalar(x: np.ndarray):
    """0-d arrays become ``numpy.float64``; other arrays pass through."""
    x = np.asarray(x)
    return x[()] if x.ndim == 0 else x


# --------------------------------------------------------------------------- ranks and correlations


def average_ranks(score: np.ndarray) -> np.ndarray:
    """Descending ranks with ties averaged (rank 1 = highest score).

    Parameters
    ----------
    score : array_like, shape (..., S)
        Scores, higher is better; ``NaN`` = absent system.

    Returns
    -------
    ndarray of float64, shape (..., S)
        ``1 + #{present t: x_t > x_s} + 0.5 * #{present t != s: x_t == x_s}``, i.e.
        the mean of the positions the tied systems occupy; ``NaN`` where
        ``score`` is ``NaN``.  The ranks of ``n`` present systems sum to
        ``n (n + 1) / 2``.

    Examples
    --------
    >>> average_ranks(np.array([3.0, 1.0, 3.0, np.nan, 5.0]))
    array([2.5, 4. , 2.5, nan, 1. ])
    """
    score = _as_float(score, "score", 1)
    n = np.count_nonzero(~np.isnan(score), axis=-1)
    # Borda points = #beaten + 0.5 #tied = ascending average rank - 1
    return n[..., None] - borda_points(score)


def spearman(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rho of two score vectors over the systems present in both.

    Parameters
    ----------
    a, b : array_like, shape (..., S)
        Score vectors; leading axes broadcast.  ``NaN`` = absent.

    Returns
    -------
    ndarray of float64, shape (...)
        The common systems (non-``NaN`` in both) are re-ranked with
        :func:`average_ranks` and the Pearson correlation of the two rank
        vectors is returned (ties handled as in ``scipy.stats.spearmanr``).
        ``NaN`` when fewer than two systems are common or either ranking is
        constant on them.

    Examples
    --------
    >>> float(spearman(np.array([1.0, 2.0, 3.0, np.nan]), np.array([1.0, 3.0, 2.0, 4.0])))
    0.5
    """
    a = _as_float(a, "a", 1)
    b = _as_float(b, "b", 1)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a = np.broadcast_to(a, shape)
    b = np.broadcast_to(b, shape)
    common = ~(np.isnan(a) | np.isnan(b))
    n = np.count_nonzero(common, axis=-1)
    mid = ((n + 1) / 2.0)[..., None]
    # deviations from the mean rank (n + 1) / 2: exact multiples of 1/2
    da = np.where(common, average_ranks(np.where(common, a, np.nan)) - mid, 0.0)
    db = np.where(common, average_ranks(np.where(common, b, np.nan)) - mid, 0.0)
    num = np.sum(da * db, axis=-1)
    den = np.sum(da * da, axis=-1) * np.sum(db * db, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, num / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)
    return _scalar(np.clip(rho, -1.0, 1.0))


def _spearman_matrix_same_mask(x: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Spearman matrix of rows that all have the same present systems."""
    n = int(present.sum())
    d = np.where(present, average_ranks(x) - (n + 1) / 2.0, 0.0)
    num = d @ d.T
    ss = np.einsum("ij,ij->i", d, d)
    den = ss[:, None] * ss[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


def _agreeing_rows_matrix(x: np.ndarray) -> np.ndarray | None:
    """Correlation matrix of rows that are restrictions of one score vector, or ``None`` if they are not.

    When every system has the same score in every row that has it (a
    candidate resample of a rule whose scores do not depend on the competing
    systems, e.g. the mean), two rows rank their common systems identically:
    Spearman's rho and Kendall's tau-b are 1, or undefined when the common
    systems all tie (fewer than two of them, or all in one tie class).
    """
    present = ~np.isnan(x)
    cols = present.any(axis=0)
    xc = np.where(present, x, 0.0)[:, cols]
    pc = present[:, cols]
    hi = np.where(pc, xc, -np.inf).max(axis=0)
    lo = np.where(pc, xc, np.inf).min(axis=0)
    if not np.array_equal(hi, lo):
        return None
    _, cls, size = np.unique(hi, return_inverse=True, return_counts=True)
    tied = np.flatnonzero(size > 1)
    if tied.size > 64:
        return None  # many tie classes: the general path is as fast
    m = pc.astype(np.float64)
    n = m @ m.T
    defined = n >= 2
    for k in tied:
        mk = m[:, cls == k]
        defined &= (mk @ mk.T) != n  # not every common system in this tie class
    return np.where(defined, 1.0, np.nan)


def _restricted_rank_deviations(first: np.ndarray, last: np.ndarray, sorted_masks: np.ndarray, mine: np.ndarray,
                                masks: np.ndarray, common: np.ndarray) -> np.ndarray:
    """Twice the average-rank deviations of rows restricted to the systems of other rows: ``(I, S, J)`` integers.

    For rows ``i`` sorted ascending (``NaN`` last), ``first``/``last`` (I, S) are
    the sorted positions where the tie run of every system starts and ends
    (system order), ``sorted_masks`` (I, S, J) tells whether the system at
    sorted position ``p`` of row ``i`` is present in row ``j``, ``mine`` (I, S)
    and ``masks`` (J, S) are the present systems of the rows and ``common`` (I, J)
    their numbers of shared systems.  With ``C`` = cumulative counts of shared
    systems along row ``i``'s sorted order, the ascending average rank of ``s``
    among the shared systems is ``C[first - 1] + (C[last] - C[first - 1] + 1) / 2``;
    twice its deviation from the mean rank ``(n + 1) / 2`` is the integer
    ``C[first - 1] + C[last] - n`` (0 for a system not shared).
    """
    n_i, S, n_j = sorted_masks.shape
    dtype = np.int16 if 2 * S < 2**15 else np.int32  # narrow integers: faster sums, deviations up to 2 S
    csz = np.zeros((n_i, S + 1, n_j), dtype=dtype)
    np.cumsum(sorted_masks, axis=1, dtype=dtype, out=csz[:, 1:])
    rows = np.arange(n_i)[:, None]
    dev = csz[rows, first]
    dev += csz[rows, last + 1]
    dev -= common[:, None, :].astype(dtype)
    dev *= mine[:, :, None] & masks.T[None]
    return dev


def _spearman_matrix_masked(x: np.ndarray) -> np.ndarray:
    """Spearman matrix of rows with different present systems (re-ranked on every common set).

    Every row is sorted once; the average rank of a system among the systems a
    row shares with another row is a count of the shared systems before its tie
    run plus half of those within it, from a cumulative sum along the sorted
    row (see ``_restricted_rank_deviations``).  rho is a ratio of sums of
    products of these deviations (integers, exact): ``O(B^2 S)`` work, in
    cache-sized blocks of rows.
    """
    B, S = x.shape
    order = np.argsort(x, axis=-1, kind="stable")
    first_sorted, last_sorted = tie_groups(np.take_along_axis(x, order, axis=-1))
    first = np.empty_like(first_sorted)
    last = np.empty_like(last_sorted)
    np.put_along_axis(first, order, first_sorted, axis=-1)  # system order
    np.put_along_axis(last, order, last_sorted, axis=-1)
    present = ~np.isnan(x)
    mt = np.ascontiguousarray(present.T)  # (S, B)
    common = (present.astype(np.float32) @ present.T.astype(np.float32)).astype(np.int32)  # (B, B), counts <= S

    def devs(rows: slice, cols: slice, out: np.ndarray) -> None:
        step = max(1, _CACHE // max(1, S * (cols.stop - cols.start)))
        for r0 in range(rows.start, rows.stop, step):
            r = slice(r0, min(rows.stop, r0 + step))
            out[r0 - rows.start : r.stop - rows.start] = _restricted_rank_deviations(
                first[r], last[r], mt[:, cols][order[r]], present[r], present[cols], common[r, cols])

    out = np.full((B, B), np.nan)
    bs = max(1, min(B, _CAP // max(1, B * S)))  # float64 blocks of at most _CAP elements
    d_ij = np.empty((min(bs, B), S, B))
    d_ji = np.empty((B, S, min(bs, B))) if bs < B else None
    for i0 in range(0, B, bs):
        rows = slice(i0, min(B, i0 + bs))
        n = rows.stop - rows.start
        devs(rows, slice(0, B), d_ij[:n])  # (I, S, B): this block's rows restricted to every row
        if d_ji is None:  # one block: every row restricted to this block's rows is the same array, transposed
            back = d_ij.transpose(2, 1, 0)
            var = np.einsum("isj,isj->ij", d_ij, d_ij)
            den = var * var.T
        else:
            devs(slice(0, B), rows, d_ji[:, :, :n])  # (B, S, I): every row restricted to this block's rows
            back = d_ji[:, :, :n].transpose(2, 1, 0)
            den = np.einsum("isj,isj->ij", d_ij[:n], d_ij[:n]) * np.einsum("isj,isj->ij", back, back)
        num = np.einsum("isj,isj->ij", d_ij[:n], back)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[rows] = np.where(den > 0, num / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)
    return out


def _kendall_matrix(x: np.ndarray) -> np.ndarray:
    """Kendall tau-b matrix of rows ``x`` (B, S), each pair restricted to its common systems: the whole-number
    counts of every pair of rows (:func:`engine.kernels.paircount.kendall_counts_all`: compiled, ``O(S log S)`` a
    pair, or dense matrix products, as the cost model chooses), the diagonal included."""
    B, S = x.shape
    uniq, inv = np.unique(x, axis=0, return_inverse=True)
    if uniq.shape[0] < B:  # repeated rows (bootstrap draws of few tasks): each distinct row once, same values
        inv = np.asarray(inv).reshape(-1)
        return _kendall_matrix(uniq)[np.ix_(inv, inv)]
    n, n1, n2, n3, d = kendall_counts_all(dense_ranks(x))  # the same whole numbers whichever path the costs choose
    iu, ju = np.triu_indices(B)
    tau = np.empty((B, B))
    tau[iu, ju] = tau_b_from_counts(n[iu, ju], n1[iu, ju], n2[iu, ju], n3[iu, ju], d[iu, ju])
    tau[ju, iu] = tau[iu, ju]
    return np.clip(tau, -1.0, 1.0)


def pairwise_correlations(scores: np.ndarray, *, method: Method = "spearman") -> np.ndarray:
    """Rank correlation of every pair of replicate rankings.

    Parameters
    ----------
    scores : array_like, shape (..., B, S)
        One score vector per replicate (higher is better); ``NaN`` = system
        absent from that replicate.
    method : {"spearman", "kendall"}
        Spearman's rho (:func:`spearman`) or Kendall's tau-b
        (:func:`engine.kernels.paircount.kendall_tau_b`).

    Returns
    -------
    ndarray of float64, shape (..., B, B)
        ``R[i, j]`` = correlation of replicates ``i`` and ``j`` restricted to the
        systems present in both; ``NaN`` when undefined (fewer than two common
        systems, or a ranking constant on them).  Symmetric; the diagonal is 1
        for rows with at least two distinct present scores.

    Notes
    -----
    No loop over the ``B (B - 1) / 2`` pairs.  Rows that all restrict one
    score vector (a candidate resample of a separable rule) correlate 1 where
    defined, without re-ranking.  Spearman without missing systems is the
    correlation matrix of the average-rank rows.  With missing systems every
    pair is re-ranked on its common systems from one sort per row and
    cumulative counts of the shared systems (see ``_spearman_matrix_masked``),
    ``O(B^2 S)`` work in integers.  Kendall's tau-b counts the concordant, discordant
    and tied pairs of each pair of rows in whole numbers (Knight's ``O(S log S)``
    per pair, ``O(B^2 S log S)`` in all).  Integer sums stay exact; work
    arrays are bounded (about 64 MB) by blocking.
    """
    method = _check_method(method)
    scores = _as_float(scores, "scores", 2)
    *batch, B, S = scores.shape
    out = np.empty((*batch, B, B))
    for idx in np.ndindex(*batch):
        x = scores[idx]
        present = ~np.isnan(x)
        same_mask = bool((present == present[:1]).all())
        agree = None if same_mask else _agreeing_rows_matrix(x)
        if agree is not None:
            out[idx] = agree
        elif method == "kendall":
            out[idx] = _kendall_matrix(x)
        elif same_mask:
            out[idx] = _spearman_matrix_same_mask(x, present[0] if B else present.any(axis=0))
        else:
            out[idx] = _spearman_matrix_masked(x)
    return out


def concordance(scores: np.ndarray, *, method: Method = "spearman"):
    """Stability of a ranking method: mean correlation over all pairs of replicates.

    Pavao et al. (2021), section 2.3: ``stability(f) = 1 / (q (q - 1)) sum_{i != j}
    sigma(X_i, X_j)`` over ``q`` rankings of perturbed inputs, ``sigma`` restricted
    to the candidates the two rankings share.

    Parameters
    ----------
    scores : array_like, shape (..., B, S)
        One score vector per replicate; ``NaN`` = system absent.
    method : {"spearman", "kendall"}

    Returns
    -------
    numpy.float64 or ndarray, shape (...)
        Mean of the ``B (B - 1) / 2`` pairwise correlations of
        :func:`pairwise_correlations`; pairs whose correlation is undefined
        (``NaN``) are skipped; ``NaN`` when no pair is defined.

    Examples
    --------
    >>> x = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    >>> float(concordance(x))  # pairs: 1, -1, -1
    -0.3333333333333333
    """
    R = pairwise_correlations(scores, method=method)
    B = R.shape[-1]
    iu, ju = np.triu_indices(B, 1)
    vals = R[..., iu, ju]
    ok = ~np.isnan(vals)
    cnt = ok.sum(axis=-1)
    tot = np.where(ok, vals, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _scalar(np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan))


# --------------------------------------------------------------------------- Kendall's W


def kendall_w(
    X: np.ndarray,
    *,
    ties: bool = True,
    missing: Literal["error", "drop-judges", "listwise"] = "error",
):
    """Kendall's coefficient of concordance ``W`` of ``J`` judges ranking ``S`` candidates.

    Parameters
    ----------
    X : array_like, shape (..., J, S)
        Scores of every judge (row) for every candidate (column), higher is
        better (reversing every judge at once leaves ``W`` unchanged).
    ties : bool, optional
        Apply the tie correction (default) -- see Notes.
    missing : {"error", "drop-judges", "listwise"}
        What to do with ``NaN`` scores: raise ``ValueError`` (default), drop
        the judges with a ``NaN``, or drop the candidates with a ``NaN``
        (per batch element).

    Returns
    -------
    numpy.float64 or ndarray, shape (...)
        ``W = 12 S_dev / (J^2 (n^3 - n) - J sum_j T_j)`` with ``R_s`` the sum over
        judges of candidate ``s``'s average rank, ``S_dev = sum_s (R_s - J (n + 1)/2)^2``,
        ``n`` the number of candidates and ``T_j = sum_g (t_g^3 - t_g)`` over the
        groups of tied candidates of judge ``j`` (0 when ``ties=False``).
        ``W`` is in [0, 1]: 1 when all judges agree, 0 when the rank sums are
        all equal.  ``NaN`` when the denominator is 0 (fewer than two
        candidates, no judge, or every judge constant).

    Notes
    -----
    Pavao et al. (2021), Table 1 reports W = 0.38, 0.60, 0.27, 0.00, 0.27 for
    AutoDL-AUC, AutoDL-ALC, AutoML, Artificial and Statlog (datasets as
    judges); the tie-corrected value reproduces all five on the shipped
    matrices (without correction AutoDL-AUC would give 0.36).

    Examples
    --------
    >>> float(kendall_w(np.array([[3.0, 2.0, 1.0], [3.0, 2.0, 1.0]])))
    1.0
    >>> float(kendall_w(np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])))
    0.0
    """
    X = _as_float(X, "X", 2)
    if missing not in ("error", "drop-judges", "listwise"):
        raise ValueError(f"missing must be 'error', 'drop-judges' or 'listwise', got {missing!r}")
    nan = np.isnan(X)
    judge_ok = np.ones(X.shape[:-1], dtype=bool)
    if nan.any():
        if missing == "error":
            raise ValueError(f"kendall_w: {int(nan.sum())} missing score(s); use missing='drop-judges' or 'listwise'")
        if missing == "drop-judges":
            judge_ok = ~nan.any(axis=-1)
            X = np.where(judge_ok[..., None], X, 0.0)
        else:
            X = np.where(nan.any(axis=-2, keepdims=True), np.nan, X)
    cand = ~np.isnan(X).any(axis=-2)  # (..., S)
    n = cand.sum(axis=-1).astype(np.float64)
    J = judge_ok.sum(axis=-1).astype(np.float64)
    R = np.where(judge_ok[..., None] & cand[..., None, :], average_ranks(X), 0.0)
    Rs = R.sum(axis=-2)
    dev = np.where(cand, Rs - (J * (n + 1) / 2.0)[..., None], 0.0)
    s_dev = np.sum(dev * dev, axis=-1)
    if ties:
        tcorr = np.where(judge_ok, _tie_term(X), 0.0).sum(axis=-1)
    else:
        tcorr = np.zeros_like(s_dev)
    den = J * J * (n**3 - n) - J * tcorr
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(den > 0, 12.0 * s_dev / np.where(den > 0, den, 1.0), np.nan)
    return _scalar(np.clip(w, 0.0, 1.0))


def _tie_term(X: np.ndarray) -> np.ndarray:
    """``sum_g (t_g^3 - t_g)`` over the groups of equal present values of every row, shape ``X.shape[:-1]``."""
    if X.shape[-1] == 0:
        return np.zeros(X.shape[:-1])
    first, last = tie_groups(np.sort(X, axis=-1))  # NaN cells form runs of length 1
    t = (last - first + 1).astype(np.float64)
    # every member of a run of length t contributes t^2 - 1: t (t^2 - 1) = t^3 - t per group
    return np.sum(t * t - 1.0, axis=-1)


# --------------------------------------------------------------------------- bootstrap summaries


def rank_intervals(ranks: np.ndarray, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of every system's replicate ranks, its bounds replicate ranks (no interpolation).

    Parameters
    ----------
    ranks : array_like, shape (..., B, S)
        Rank of every system in every replicate (any rank convention);
        ``NaN`` = system absent from that replicate.
    level : float, optional
        Coverage in (0, 1); the bounds are the ``50 (1 - level)`` percentile
        by numpy's ``"lower"`` method and the ``50 (1 + level)`` percentile by
        its ``"higher"`` method (2.5 and 97.5 for 0.95): the observed ranks on
        either side of the linear percentiles, so integer ranks give integer
        bounds and the interval contains the interpolated one.

    Returns
    -------
    low, high : ndarray, shape (..., S)
        Percentiles over the replicates where the system is present; ``NaN``
        for a system never present.

    Examples
    --------
    >>> lo, hi = rank_intervals(np.array([[1.0, 2.0], [2.0, 1.0], [1.0, np.nan]]), level=0.5)
    >>> lo, hi
    (array([1., 1.]), array([2., 2.]))
    """
    ranks = _as_float(ranks, "ranks", 2)
    level = check_level(level)
    q = [50.0 * (1.0 - level), 50.0 * (1.0 + level)]
    if ranks.shape[-2] == 0:
        nan = np.full(ranks.shape[:-2] + ranks.shape[-1:], np.nan)
        return nan, nan.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns -> NaN
        lo = np.nanpercentile(ranks, q[0], axis=-2, method="lower")
        hi = np.nanpercentile(ranks, q[1], axis=-2, method="higher")
    return lo, hi


def prob_above(scores: np.ndarray) -> np.ndarray:
    """Share of replicates in which one system scores strictly above another.

    Parameters
    ----------
    scores : array_like, shape (..., B, S)
        One score vector per replicate; ``NaN`` = absent.

    Returns
    -------
    ndarray of float64, shape (..., S, S)
        ``P[i, j]`` = number of replicates with ``x_i > x_j`` divided by the number
        of replicates where both are present; ``NaN`` when they are never both
        present.  Ties count for neither, so ``P[i, j] + P[j, i] <= 1``.  The
        diagonal is 0 (``NaN`` for a system never present).

    Examples
    --------
    >>> prob_above(np.array([[2.0, 1.0], [1.0, 1.0], [3.0, np.nan]]))
    array([[0. , 0.5],
           [0. , 0. ]])
    """
    scores = _as_float(scores, "scores", 2)
    if blocks_prob_above(scores):  # many systems: rows of the result one block at a time, same bits
        return prob_above_blocked(scores)
    wins, ties = pairwise_counts(scores)
    both = wins + np.swapaxes(wins, -1, -2) + ties
    S = scores.shape[-1]
    idx = np.arange(S)
    both[..., idx, idx] = np.count_nonzero(~np.isnan(scores), axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(both > 0, wins / np.where(both > 0, both, 1.0), np.nan)


def tied_with_leader(point_score: np.ndarray, prob: np.ndarray, *, level: float = 0.95) -> np.ndarray:
    """Systems that the bootstrap cannot separate from the leader.

    Parameters
    ----------
    point_score : array_like, shape (..., S)
        Full-data aggregate scores (higher is better); ``NaN`` = not ranked.
    prob : array_like, shape (..., S, S)
        :func:`prob_above` of the replicate scores.
    level : float, optional
        Confidence level in (0, 1].

    Returns
    -------
    ndarray of bool, shape (..., S)
        The leaders are the systems with the maximal point score (several when
        tied); they are ``True``.  Another ranked system ``j`` is ``True``
        ("statistically tied with the leader") when, for at least one leader
        ``l``, ``P(l above j) = prob[l, j] < level`` -- the leader did not beat
        it in at least a share ``level`` of the replicates where both were
        present -- or when ``prob[l, j]`` is ``NaN`` (never compared, so not
        separated).  Systems with a ``NaN`` point score are ``False``.

    Examples
    --------
    >>> P = np.array([[0.0, 0.9, 0.99], [0.1, 0.0, 0.6], [0.0, 0.3, 0.0]])
    >>> tied_with_leader(np.array([3.0, 2.0, 1.0]), P)
    array([ True,  True, False])
    """
    point_score = _as_float(point_score, "point_score", 1)
    prob = _as_float(prob, "prob", 2)
    level = check_level(level, include_one=True)
    S = point_score.shape[-1]
    if prob.shape[-2:] != (S, S):
        raise ValueError(f"prob must have shape (..., {S}, {S}), got {prob.shape}")
    ranked = ~np.isnan(point_score)
    top = np.max(np.where(ranked, point_score, -np.inf), axis=-1, keepdims=True)
    leader = ranked & (point_score == top)
    not_separated = ~(prob >= level)  # NaN counts as not separated
    tied = (leader[..., :, None] & not_separated).any(axis=-2)
    return ranked & (tied | leader)


# --------------------------------------------------------------------------- Pavao et al. criteria


def winner_average_rank(X: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Normalised average rank of the winner over the judges (Pavao et al. 2021, section 2.3).

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented judge (task) scores, higher is better.
    score : array_like, shape (..., S)
        Aggregate scores of a ranking function on ``X``; ``NaN`` = system absent
        (its column of ``X`` is ignored).

    Returns
    -------
    ndarray of float64, shape (...)
        ``1 - (avg_rank - 1) / (m - 1)`` with ``m`` the number of systems with a
        score and ``avg_rank`` the mean over judges of the winner's
        :func:`average_ranks` among those systems (a judge where the winner has
        no value is skipped; a judge's missing systems are not ranked).  The
        winner is the system with the maximal score; when several tie at the
        maximum the value is averaged over them.  1 = the winner is first on
        every judge, 0 = last on every judge.  ``NaN`` when ``m < 2``.
    """
    X = _as_float(X, "X", 2)
    score = _as_float(score, "score", 1)
    present = ~np.isnan(score)
    m = present.sum(axis=-1).astype(np.float64)
    R = average_ranks(np.where(present[..., None, :], X, np.nan))
    cnt = np.count_nonzero(~np.isnan(R), axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = np.where(cnt > 0, np.nansum(R, axis=-2) / np.maximum(cnt, 1), np.nan)  # (..., S)
    top = np.max(np.where(present, score, -np.inf), axis=-1, keepdims=True)
    win = present & (score == top) & ~np.isnan(avg)
    nw = win.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        wavg = np.where(nw > 0, np.where(win, avg, 0.0).sum(axis=-1) / np.maximum(nw, 1), np.nan)
        out = np.where(m >= 2, 1.0 - (wavg - 1.0) / (m - 1.0), np.nan)
    return _scalar(out)


def condorcet_winner_index(X: np.ndarray) -> np.ndarray:
    """Index of the strict Condorcet winner of the judges, ``-1`` if there is none.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented judge scores; ``NaN`` = missing.

    Returns
    -------
    ndarray of intp, shape (...)
        The system ``c`` that beats every other present system ``d`` (a system
        with at least one score) by majority: more judges rank ``c`` above ``d``
        than ``d`` above ``c`` (tied judges count for neither; Vote'n'Rank
        eq. 3, the relation of the registered ``condorcet`` rule).  A pair never
        compared blocks both systems.  At most one system qualifies.  ``-1``
        when none does or fewer than two systems are present.
    """
    X = _as_float(X, "X", 2)
    wins, _ = pairwise_counts(X)
    present = ~np.isnan(X).all(axis=-2)  # (..., S)
    S = X.shape[-1]
    beats = wins > np.swapaxes(wins, -1, -2)
    ok = beats | ~present[..., None, :]
    ok[..., np.arange(S), np.arange(S)] = True
    winner = present & ok.all(axis=-1) & (present.sum(axis=-1, keepdims=True) >= 2)
    return np.where(winner.any(axis=-1), np.argmax(winner, axis=-1), -1)


def condorcet_rate(X: np.ndarray, score: np.ndarray):
    """Share of profiles with a Condorcet winner in which the rule ranks it first.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        A batch of oriented judge-score matrices (e.g. bootstrap trials).
    score : array_like, shape (..., S)
        The rule's aggregate scores for every matrix.

    Returns
    -------
    numpy.float64
        Among the batch elements that have a strict Condorcet winner
        (:func:`condorcet_winner_index`), the share where that winner has the
        maximal score (alone or tied at the top); ``NaN`` when no element has a
        Condorcet winner.  Pavao et al. (2021), section 2.3.
    """
    X = _as_float(X, "X", 2)
    score = _as_float(score, "score", 1)
    idx = np.asarray(condorcet_winner_index(X))
    has = idx >= 0
    if not has.any():
        return np.float64(np.nan)
    top = np.nanmax(np.where(np.isnan(score), -np.inf, score), axis=-1)
    cw_score = np.take_along_axis(score, np.maximum(idx, 0)[..., None], axis=-1)[..., 0]
    first = cw_score == top  # False when the winner has no score
    return np.float64(np.count_nonzero(first & has) / np.count_nonzero(has))


def generalization(
    score: np.ndarray,
    X_out: np.ndarray,
    *,
    method: Method = "spearman",
    mask_out: np.ndarray | None = None,
) -> np.ndarray:
    """Mean rank correlation of a ranking with held-out judges (Pavao et al. 2021, section 2.3).

    Parameters
    ----------
    score : array_like, shape (..., S)
        Aggregate scores computed on the training judges; ``NaN`` = absent.
    X_out : array_like, shape (..., T_out, S)
        Oriented scores of the validation (out-of-bag) judges.
    method : {"spearman", "kendall"}
    mask_out : array_like of bool, shape (..., T_out), optional
        ``True`` for the judges to use (e.g. the out-of-bag judges of each
        bootstrap trial when ``X_out`` holds every judge); default all.

    Returns
    -------
    ndarray of float64, shape (...)
        ``1/m sum_j sigma(score, X_out[j])`` over the ``m`` selected judges whose
        correlation is defined; each correlation is restricted to the systems
        present in both.  ``NaN`` when no judge qualifies.
    """
    method = _check_method(method)
    score = _as_float(score, "score", 1)
    X_out = _as_float(X_out, "X_out", 2)
    a = score[..., None, :]
    corr = np.asarray(spearman(a, X_out) if method == "spearman" else kendall_tau_b(a, X_out), dtype=np.float64)
    if mask_out is not None:
        mask = np.asarray(mask_out, dtype=bool)
        corr = np.where(mask, corr, np.nan)
    ok = ~np.isnan(corr)
    cnt = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _scalar(np.where(cnt > 0, np.where(ok, corr, 0.0).sum(axis=-1) / np.maximum(cnt, 1), np.nan))


# --------------------------------------------------------------------------- Vote'n'Rank agreement


def topk_agreement(score: np.ndarray, reference: np.ndarray, k: int, *, least: bool = False,
                   kind: Literal["identical", "overlap"] = "identical") -> np.ndarray:
    """Agreement of two rankings on their top-k (or last-k) systems.

    Parameters
    ----------
    score, reference : array_like, shape (..., S)
        Scores, higher is better; ``NaN`` = not ranked.  Leading axes broadcast.
    k : int
        Size of the selection (``k >= 1``).
    least : bool, optional
        Compare the last ``k`` systems instead of the first ``k``.
    kind : {"identical", "overlap"}, optional
        ``"identical"`` (default): 1.0 when the two selections are the same set,
        else 0.0.  The selection is ``{s : min_rank(s) <= k}`` (competition
        ranks, :func:`engine.kernels.ranking.min_rank`; for ``least``, ranks of
        the negated scores), so systems tied across the k-th place are all
        included and a selection may hold more than ``k`` systems.
        ``"overlap"``: the share ``|A & B| / k`` of systems the two selections
        have in common (Vote'n'Rank's and Colombo et al.'s top-k / last-k
        agreement).  Each selection holds the ``k`` ranked systems with the
        highest scores (for ``least``: the lowest), systems tied across the
        k-th place taken in system order (lower index first), so it holds
        ``k`` systems (all ranked ones when fewer than ``k`` are ranked).

    Returns
    -------
    ndarray of float64, shape (...)
        The agreement in [0, 1]; ``NaN`` when either ranking ranks no system.

    Examples
    --------
    >>> float(topk_agreement(np.array([3.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0]), 1))
    1.0
    >>> float(topk_agreement(np.array([3.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0]), 2))
    0.0
    >>> float(topk_agreement(np.array([3.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0]), 2, kind="overlap"))
    0.5
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if kind not in ("identical", "overlap"):
        raise ValueError(f"kind must be 'identical' or 'overlap', got {kind!r}")
    a = _as_float(score, "score", 1)
    b = _as_float(reference, "reference", 1)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a = np.broadcast_to(a, shape)
    b = np.broadcast_to(b, shape)
    if least:
        a, b = -a, -b
    empty = np.isnan(a).all(axis=-1) | np.isnan(b).all(axis=-1)
    if kind == "overlap":
        def first_k(x: np.ndarray) -> np.ndarray:  # the k highest ranked values, ties in index order
            order = np.argsort(np.where(np.isnan(x), np.inf, -x), axis=-1, kind="stable")
            position = np.empty_like(order)
            np.put_along_axis(position, order, np.arange(x.shape[-1]), axis=-1)
            return (position < k) & ~np.isnan(x)

        common = (first_k(a) & first_k(b)).sum(axis=-1)
        return _scalar(np.where(empty, np.nan, common / int(k)))
    sa = min_rank(a) <= k
    sb = min_rank(b) <= k
    same = (sa == sb).all(axis=-1)
    return _scalar(np.where(empty, np.nan, same.astype(np.float64)))



# --------------------------------------------------------------------------- pairwise orders (any bootstrap axis)


def pairwise_rank_bounds(point_score: np.ndarray, prob: np.ndarray, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Ranks a system can take given the pairwise orders a bootstrap is sure about.

    The statistic of a candidate (system) bootstrap: a replicate ranks the
    systems it drew among themselves, so percentiles of replicate ranks are
    biased toward 1 (a system at rank 20 of 97 ranks about 13th among the 63
    distinct systems a replicate draws).  ``P(i above j | both drawn)``
    (:func:`prob_above`) has no such bias.

    Parameters
    ----------
    point_score : array_like, shape (S,)
        Full-data scores (higher is better); ``NaN`` = not ranked.
    prob : array_like, shape (S, S)
        :func:`prob_above` of the replicates: share of the replicates holding
        both ``i`` and ``j`` in which ``i`` scores above ``j``.
    level : float
        In (0.5, 1): an order counts as sure when it holds in at least this
        share of the replicates (then at most one of ``i > j``, ``j > i`` is sure).

    Returns
    -------
    low, high : ndarray of float64, shape (S,)
        Whole numbers: ``low = 1 + #{j : P(j above i) >= level}`` (systems surely
        above it) and ``high = n - #{j : P(i above j) >= level}`` (``n`` ranked
        systems, minus those surely below it), over the ranked systems ``j != i``;
        ``NaN`` for an unranked system.  ``low <= high``.  Pairs never drawn
        together (``NaN``) are not sure.

    Examples
    --------
    >>> P = np.array([[0.0, 0.99, 1.0], [0.01, 0.0, 0.6], [0.0, 0.4, 0.0]])
    >>> pairwise_rank_bounds(np.array([3.0, 2.0, 1.0]), P)
    (array([1., 2., 2.]), array([1., 3., 3.]))
    """
    point = _as_float(point_score, "point_score", 1)
    prob = _as_float(prob, "prob", 2)
    S = point.shape[-1]
    if point.ndim != 1 or prob.shape != (S, S):
        raise ValueError(f"point_score must be (S,) and prob (S, S), got {point.shape} and {prob.shape}")
    level = check_level(level, above=0.5)
    ranked = ~np.isnan(point)
    pair = ranked[:, None] & ranked[None, :] & ~np.eye(S, dtype=bool)
    sure = pair & (prob >= level)  # NaN compares False
    n = float(ranked.sum())
    low = np.where(ranked, 1.0 + sure.sum(axis=0), np.nan)
    high = np.where(ranked, n - sure.sum(axis=1), np.nan)
    return low, high


def rank_upper_bound(point_score: np.ndarray, prob: np.ndarray, *, level: float = 0.95) -> np.ndarray:
    """Rank(UB): the best rank a system can claim, ``1 + #{j : P(j above i) >= level}``.

    LMArena's rank upper bound counts the systems whose score interval lies entirely above a system's.
    Marginal score intervals suit a bootstrap over battles, whose relative scores move independently,
    but not a bootstrap over tasks, instances, judges or systems: resampling tasks moves every system's
    score together, so the marginal intervals all overlap and every top system would get Rank(UB) 1
    beside a rank interval of 14-16.  This is the paired version, the same for every bootstrap axis
    and for a finished or running bootstrap (from :func:`prob_above`, which mergeable sums give
    exactly): ``j`` counts when it scores above ``i`` in at least ``level`` of the replicates holding
    both, the same "sure order" as :func:`pairwise_rank_bounds` (whose ``low`` it is) and
    :func:`tied_with_leader` (a system the leader is surely above has Rank(UB) of at least 2).

    Parameters
    ----------
    point_score : array_like, shape (S,)
        Full-data scores; ``NaN`` = not ranked (its bound is ``NaN``, and it is above no one).
    prob : array_like, shape (S, S)
        :func:`prob_above` of the replicates.
    level : float
        In (0, 1).  At most one half cannot make an order sure (both ``i > j`` and ``j > i`` could
        be), so the bound is then ``NaN`` for every system.

    Returns
    -------
    ndarray of float64, shape (S,)
        Whole numbers from 1; ``NaN`` for an unranked system.

    Examples
    --------
    >>> P = np.array([[0.0, 0.99, 1.0], [0.01, 0.0, 0.6], [0.0, 0.4, 0.0]])
    >>> rank_upper_bound(np.array([3.0, 2.0, 1.0]), P)
    array([1., 2., 2.])
    """
    level = check_level(level)
    point = _as_float(point_score, "point_score", 1)
    if level <= 0.5:
        return np.full(point.shape, np.nan)
    return pairwise_rank_bounds(point, prob, level=level)[0]


def order_stability(point_score: np.ndarray, prob: np.ndarray) -> float:
    """Mean share of replicates that keep the full-data order of a pair of systems.

    Parameters
    ----------
    point_score : array_like, shape (S,)
        Full-data scores (higher is better); ``NaN`` = not ranked.
    prob : array_like, shape (S, S)
        :func:`prob_above` of the replicates.

    Returns
    -------
    float
        Mean of ``P(i above j)`` over the pairs of ranked systems with
        ``point_score[i] > point_score[j]`` that some replicate holds together
        (a tie in a replicate does not keep the order); 1 when every replicate
        keeps every order.  ``NaN`` without such a pair.

    Examples
    --------
    >>> round(order_stability(np.array([3.0, 2.0, 1.0]), np.array([[0.0, 0.9, 1.0], [0.1, 0.0, 0.5], [0.0, 0.5, 0.0]])), 6)
    0.8
    """
    point = _as_float(point_score, "point_score", 1)
    prob = _as_float(prob, "prob", 2)
    S = point.shape[-1]
    if point.ndim != 1 or prob.shape != (S, S):
        raise ValueError(f"point_score must be (S,) and prob (S, S), got {point.shape} and {prob.shape}")
    with np.errstate(invalid="ignore"):
        above = point[:, None] > point[None, :]
    vals = prob[above & ~np.isnan(prob)]
    return float(vals.mean()) if vals.size else float("nan")


def interval_description(kind: str, level: float) -> str:
    """What a bootstrap rank interval is, in one sentence, for tables and reports.

    Parameters
    ----------
    kind : {"percentile", "pairwise"}
        :func:`rank_intervals` of the replicate ranks, or :func:`pairwise_rank_bounds`.
    level : float
        The coverage, or the share of replicates that makes an order sure.

    Returns
    -------
    str
    """
    pct = f"{100 * level:g}%"
    if kind == "pairwise":
        return (f"ranks allowed by the pairwise orders the bootstrap is sure of (in >= {pct} of the replicates that draw "
                "both systems): from 1 + the systems surely above to N - the systems surely below; a candidate "
                "bootstrap ranks only the systems each replicate draws, so percentiles of its ranks are biased toward 1")
    return (f"{50 * (1 - level):g}-{50 * (1 + level):g}% percentiles of the replicate ranks, each bound a replicate rank "
            "(not interpolated: the rank at or below the lower percentile, at or above the upper one)")


# --------------------------------------------------------------------------- benchmark agreement (BenchBench)


def benchmark_agreement(score_a, score_b, *, systems_a=None, systems_b=None) -> dict:
    """Agreement of two benchmarks: Kendall's tau-b between their rankings of the systems they share.

    Benchmark agreement testing (Perlitz et al. 2024, *Do These LLM Benchmarks Agree? Fixing Benchmark
    Evaluation with BenchBench*, arXiv:2407.13696) compares the rankings two benchmarks give to the systems
    both evaluate.

    Parameters
    ----------
    score_a, score_b : array_like, shape (S_a,) and (S_b,)
        Each benchmark's aggregate score per system (higher is better; only the order matters).
        ``NaN`` = not ranked.
    systems_a, systems_b : sequence of labels, optional
        System names of ``score_a`` and ``score_b``; the systems both rank (by name) are compared.  Without
        names the two vectors must describe the same systems in the same order.

    Returns
    -------
    dict
        ``tau`` (tau-b, :func:`engine.kernels.paircount.kendall_tau_b`; ties in either ranking handled), ``pvalue``
        (two-sided, of ``H0: tau = 0``, from ``scipy.stats.kendalltau``: exact for fewer than 50 systems
        without ties, the normal approximation with the tie-corrected variance otherwise), ``n`` (systems
        compared) and ``systems`` (their names in the order of ``systems_a``, or indices).  ``tau`` and ``pvalue``
        are ``NaN`` with fewer than two common systems or a constant ranking.

    Examples
    --------
    >>> r = benchmark_agreement([3.0, 2.0, 1.0, 0.0], [0.9, 0.8, 0.5, 0.7], systems_a=list("abcd"),
    ...                         systems_b=list("abcd"))
    >>> round(r["tau"], 4), r["n"]
    (0.6667, 4)
    """
    from scipy.stats import kendalltau

    a = np.asarray(score_a, dtype=np.float64).ravel()
    b = np.asarray(score_b, dtype=np.float64).ravel()
    if (systems_a is None) != (systems_b is None):
        raise ValueError("give the system names of both benchmarks, or of neither")
    if systems_a is None:
        if a.shape != b.shape:
            raise ValueError(f"without system names the scores must describe the same systems, got {a.size} and {b.size}")
        names: list[Any] = list(range(a.size))
        x, y = a, b
    else:
        la, lb = [str(s) for s in systems_a], [str(s) for s in systems_b]
        if len(la) != a.size or len(lb) != b.size:
            raise ValueError("each benchmark needs one system name per score")
        if len(set(la)) != len(la) or len(set(lb)) != len(lb):
            raise ValueError("system names must be unique within a benchmark")
        pos_b = {s: i for i, s in enumerate(lb)}
        names = [s for s in la if s in pos_b]  # in the order of benchmark a
        pos_a = {s: i for i, s in enumerate(la)}
        x = np.array([a[pos_a[s]] for s in names])
        y = np.array([b[pos_b[s]] for s in names])
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    names = [s for s, k in zip(names, keep) if k]
    n = int(x.size)
    tau = float(kendall_tau_b(x, y)) if n >= 2 else float("nan")
    p = float("nan")
    if n >= 2 and not np.isnan(tau):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            p = float(kendalltau(x, y).pvalue)
    return {"tau": tau, "pvalue": p, "n": n, "systems": names}


def benchmark_diversity(X, *, missing: Literal["error", "drop-judges", "listwise"] = "listwise"):
    """Diversity of one benchmark's tasks: ``1 - W``, Kendall's coefficient of concordance of its tasks.

    ``0`` when every task ranks the systems alike, up to ``1`` when their rankings cancel out
    (:func:`kendall_w` with the tie correction, tasks as judges).

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Task-level scores (a row per task, higher is better).
    missing : {"error", "drop-judges", "listwise"}
        Missing scores: drop the systems that have any (default), the tasks that have any, or refuse.

    Examples
    --------
    >>> float(benchmark_diversity(np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])))
    1.0
    """
    return _scalar(1.0 - np.asarray(kendall_w(X, missing=missing)))


__all__ += ["benchmark_agreement", "benchmark_diversity"]
