"""Within-task statistics and across-task rule kernels (pure numpy).

Conventions: the system axis is last; an across-task kernel takes a matrix of
task-level scores of shape ``(..., T, S)`` (oriented, higher is better, ``NaN``
= the system has no score on that task) and returns one aggregate score per
system, shape ``(..., S)``, higher is better.  A task whose scores are all
``NaN`` is absent and contributes nothing.
"""

from __future__ import annotations

import numpy as np

from engine.kernels.exact import SUM_BITS, ordered_sum, tame, weighted_task_sum
from engine.kernels.ranking import borda_points

__all__ = [
    "identity_values",
    "mean_task",
    "mean_pool",
    "overflow_safe_sum",
    "sum_task",
    "sum_pool",
    "mean_across",
    "borda_across",
    "borda_from_candidates",
    "task_weights",
    "as_profile",
]


def identity_values(x: np.ndarray) -> np.ndarray:
    """Judge values of the mean statistic: the scores themselves (as float64)."""
    return np.asarray(x, dtype=np.float64)


def mean_task(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per-task mean over instances from partial sums and counts, ``(..., T, S)``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.where(counts > 0, counts, 1), np.nan)


def mean_pool(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean over all judges of all tasks (one-level mean), ``(..., S)``; tasks added in their canonical order.

    A total beyond the float64 range (scores near 1e308) is summed again scaled by a power of two, so the
    mean, which is within the range of the scores, comes out right.
    """
    sums = np.asarray(sums, dtype=np.float64)
    num, e = overflow_safe_sum(sums, np.ones(sums.shape[-2]))
    out = mean_task(num, counts.sum(axis=-2))
    return out if e is None else np.ldexp(out, e)


def overflow_safe_sum(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``sum_t w_t X_t`` over axis -2 in task order (``NaN`` terms are 0), and ``None``; or, when some system's sum
    overflows float64, the sums with those systems' terms scaled by ``2**-e`` and the exponents ``e`` (0 elsewhere).

    Scaling by a power of two is exact, so ``ldexp(sum / d, e)`` is the quotient the float64 sum would give without
    overflow; the other systems keep their bits.

    Examples
    --------
    >>> num, e = overflow_safe_sum(np.array([[1.5e308, 1.0], [1.5e308, 2.0]]), np.ones(2))
    >>> np.ldexp(num / 2, e).tolist()
    [1.5e+308, 1.5]
    """
    X0 = np.where(np.isnan(X), 0.0, X)
    wt = np.asarray(w, dtype=np.float64)[..., :, None]
    with np.errstate(over="ignore", invalid="ignore"):
        num = ordered_sum(X0 * wt, axis=-2)
    bad = ~np.isfinite(num)
    if not bad.any():
        return num, None
    # the systems that overflowed: their scores scaled by the smallest power of two that keeps every partial sum
    # below 2**1023 (|x| < 2**ex, |w| < 2**ew, T < 2**bits: a partial sum is below 2**(ex + ew + bits)), so that a
    # remainder left by cancelling terms keeps its bits; summed again in the same order
    ex = np.frexp(np.abs(np.where(bad[..., None, :], X0, 0.0)).max(axis=-2))[1]
    ew = np.frexp(np.abs(wt).max(axis=-2))[1]
    e = np.where(bad, np.maximum(ex + ew + int(X0.shape[-2]).bit_length() - 1023, 0), 0)
    again = ordered_sum(np.ldexp(X0, -e[..., None, :]) * wt, axis=-2)
    return np.where(bad, again, num), e


def sum_task(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per-task totals (e.g. Borda points summed over instances), ``NaN`` where absent."""
    return np.where(counts > 0, sums, np.nan)


def sum_pool(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Totals over all judges of all tasks (one-level Borda), ``NaN`` for absent systems."""
    return np.where(counts.sum(axis=-2) > 0, ordered_sum(np.where(counts > 0, sums, 0.0), axis=-2), np.nan)


def as_profile(X: np.ndarray, rule: str, *, what: str = "task") -> np.ndarray:
    """``X`` as float64 of shape ``(..., T, S)`` with at least one task and no infinite score.

    Raises ``ValueError`` naming ``rule`` otherwise (``NaN`` is allowed here).
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"{rule}: X must have shape (..., T, S), got shape {X.shape}")
    if X.shape[-2] == 0:
        raise ValueError(f"{rule}: X has no {what} (T = 0)")
    if np.isinf(X).any():
        raise ValueError(f"{rule}: X contains infinite scores")
    return X


def task_weights(
    weights: np.ndarray | None,
    n_tasks: int,
    *,
    rule: str | None = None,
    batch: tuple[int, ...] | None = None,
    positive_sum: bool = False,
    normalise: bool = False,
) -> np.ndarray:
    """The one check of per-task weights used by every kernel: shape ``(..., T)``, finite, non-negative.

    Parameters
    ----------
    weights : array_like, shape (T,) or (..., T), optional
        ``None`` gives ones (``1 / T`` each with ``normalise``).
    n_tasks : int
        ``T``, the length the last axis must have.
    rule : str, optional
        Prefix of the error messages (the rule or method name).
    batch : tuple of int, optional
        Broadcast the weights to ``batch + (T,)`` (the profile's leading axes and
        task axis; weights may carry more leading axes, e.g. a stack of bootstrap
        multiplicities for one profile).
    positive_sum : bool
        Require a positive sum in every batch element.
    normalise : bool
        Return the weights divided by their sum (implies ``positive_sum``).

    Raises
    ------
    ValueError
        Naming the rule and what is wrong.
    """
    at = f"{rule}: " if rule else ""
    if weights is None:
        w = np.full(n_tasks, 1.0 / n_tasks) if normalise else np.ones(n_tasks)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim == 0 or w.shape[-1] != n_tasks:
            raise ValueError(f"{at}expected {n_tasks} task weights on the last axis (shape (T,) or (..., T)), "
                             f"got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"{at}task weights must be finite and non-negative")
        if (positive_sum or normalise) and not (w.sum(axis=-1) > 0).all():
            raise ValueError(f"{at}task weights must have a positive sum")
        if normalise:
            w = w / w.sum(axis=-1, keepdims=True)
    if batch is not None:
        try:
            w = np.broadcast_to(w, np.broadcast_shapes(tuple(batch), w.shape))
        except ValueError:
            raise ValueError(f"{at}weights of shape {w.shape} do not broadcast to {tuple(batch)}") from None
    return w


def mean_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Weighted arithmetic mean over tasks (sigma_mean), ignoring ``NaN`` entries.

    Parameters
    ----------
    X : ndarray, shape (..., T, S)
        Oriented task-level scores.
    weights : ndarray, shape (..., T), optional
        Non-negative task weights (default: all ones).

    Returns
    -------
    ndarray, shape (..., S)
        ``sum_t w_t X_t / sum_t w_t`` over the tasks where the system has a score.
    """
    X = np.asarray(X, dtype=np.float64)
    # weights near the float64 limit (their total would overflow): the same weights times a power of two
    w = tame(task_weights(weights, X.shape[-2]), below=SUM_BITS)[0]
    present = ~np.isnan(X)
    # one term after the other in the canonical task order (engine.kernels.exact): the same bits for any
    # batch of weight vectors (bootstrap multiplicities), so equal columns stay equal; a sum beyond the
    # float64 range is taken again on scaled terms (the mean itself is within the range of the scores)
    num, e = overflow_safe_sum(X, w)
    den = ordered_sum(present * w[..., :, None], axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out if e is None else np.ldexp(out, e)


def borda_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Weighted Borda count over tasks: sum of per-task Borda points (ties = 0.5).

    Parameters
    ----------
    X : ndarray, shape (..., T, S)
        Oriented task-level scores; a ``NaN`` system takes no part in that task.
    weights : ndarray, shape (..., T), optional
        Task weights multiplying each task's points (default: all ones).

    Returns
    -------
    ndarray, shape (..., S)
        Total (weighted) points; ``NaN`` for a system absent from every task.

    Examples
    --------
    Colombo et al. (2022), Table 1 (lower is better, so the scores are
    negated): the mean ranks A > B > C, Borda C > B > A.

    >>> X = np.array([[0.3, 0.1, 0.0], [5, 4, 3], [10, 13, 15],
    ...               [0.02, 0.01, 0.03], [1.0, 2.2, 2.0], [0.4, 0.3, 0.2]])
    >>> borda_across(-X)
    array([5., 6., 7.])
    """
    pts = borda_points(X)
    task_weights(weights, pts.shape[-2])  # validates
    # halves times simple-fraction weights: summed in integers (engine.kernels.exact)
    total = weighted_task_sum(pts, weights, denominator=2)
    return np.where((~np.isnan(pts)).any(axis=-2), total, np.nan)


def borda_from_candidates(wins: np.ndarray, pairs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Task-level Borda points of every system among resampled candidates, from full-data pairwise sums.

    With ``G[s, j] = wins[s, j] + ties[s, j] / 2`` (over the tasks where both are
    present; ``G[s, s]`` = half the weight ``W_s`` of the tasks where ``s`` is
    present), a copy of ``s`` among candidates drawn ``counts`` times has Borda
    points ``(G counts)_s - W_s / 2`` (the copy does not meet itself).

    Parameters
    ----------
    wins, pairs : ndarray, shape (S, S)
        ``wins[i, j]`` = weight of the tasks where ``i`` beats ``j``; ``pairs[i, j]`` = weight of the
        tasks where both are present (diagonal: where ``i`` is).
    counts : ndarray, shape (B, S)
        Candidate multiplicities of every replicate.

    Returns
    -------
    ndarray, shape (B, S)
        Points of one copy of every system (also of systems not drawn; the caller keeps the drawn ones).
    """
    W = np.diagonal(pairs)
    return counts @ (0.5 * (pairs + wins - wins.T)).T - 0.5 * W
