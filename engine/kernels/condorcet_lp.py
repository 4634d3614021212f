"""Condorcet winner and the search for *prospective* systems (Vote'n'Rank, section 3.2).

Rofin et al. (2023), *Vote'n'Rank*, eq. (1): on task ``k``, ``R(m, m', k)`` is
``+1`` if both systems have a score and ``m`` is strictly better, ``-1`` if
both have a score and ``m`` is strictly worse, and ``0`` otherwise (tie or a
missing score).  With task weights ``w``, ``m`` beats ``m'`` in the weighted
majority relation when ``sum_k w_k R(m, m', k) > 0`` (eq. 3); the Condorcet
winner beats every other system.  A system is *prospective* when some weight
vector makes it the Condorcet winner (section 3.2).

Conventions
-----------
* Scores are oriented (higher is better), shape ``(..., T, S)``, ``NaN`` =
  missing; pairs with a missing score are ignored (eq. 1).
* A system with no score on any task is not part of the contest: it is never
  the winner nor prospective, and it is not an opponent of the others
  (otherwise its zero margins would forbid any winner).
* Strictness: this module uses the strict relation of eq. (3) -- the winner's
  weighted margin must be positive against every opponent.  Eq. (2) of the
  paper writes the weak inequality ``>= 0``, under which a system that ties
  everybody on one task would be "prospective" by putting all the weight on
  that task; :func:`prospective_systems` offers it as ``strict=False``.
* Floating-point margins within ``1e-12`` times the total weight of zero count
  as ties (so that e.g. weights ``0.1 + 0.2`` versus ``0.3`` tie).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.kernels.aggregate import task_weights
from engine.kernels.kemeny import pairwise_preferences

__all__ = ["majority_margins", "condorcet_winner", "max_condorcet_margin", "prospective_systems"]

_MARGIN_RTOL = 1e-12


def majority_margins(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Weighted majority margins ``M[..., i, j] = sum_k w_k R(i, j, k)`` (Vote'n'Rank eq. 1-3).

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented task-level scores; ``NaN`` = missing.
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative task weights (default: all ones).

    Returns
    -------
    ndarray of float64, shape (..., S, S)
        Antisymmetric: weight of the tasks where ``i`` is strictly better than
        ``j`` minus the weight of those where it is strictly worse (ties and
        missing pairs count 0).

    Examples
    --------
    >>> majority_margins(np.array([[2.0, 1.0], [3.0, 1.0], [1.0, 1.0], [0.0, 3.0]]))
    array([[ 0.,  1.],
           [-1.,  0.]])
    """
    X = np.asarray(X, dtype=np.float64)
    w = task_weights(weights, X.shape[-2])
    P = pairwise_preferences(X, weights=w)
    return P - np.swapaxes(P, -1, -2)


def condorcet_winner(X: np.ndarray, *, weights: np.ndarray | None = None) -> int | np.ndarray:
    """Index of the (weighted) Condorcet winner, or -1 when there is none.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented task-level scores; ``NaN`` = missing (pairs ignored).
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative task weights (default: all ones, i.e. "more tasks than it
        loses").

    Returns
    -------
    int or ndarray of intp, shape (...)
        The system whose weighted margin (Vote'n'Rank eq. 3) is positive
        against every other system that has at least one score, ``-1`` if no
        system qualifies; an ``int`` for a single profile ``(T, S)``.

    Examples
    --------
    Vote'n'Rank Table 6 (ranks 1-4 turned into scores 4-1): m_B is the
    Condorcet winner.

    >>> ranks = np.array([[1, 2, 3, 4], [1, 4, 2, 3], [4, 1, 3, 2],
    ...                   [4, 2, 1, 3], [4, 2, 3, 1]])
    >>> condorcet_winner(5.0 - ranks)
    1
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"expected task-level scores of shape (..., T, S), got shape {X.shape}")
    w = task_weights(weights, X.shape[-2])
    M = majority_margins(X, weights=w)
    S = X.shape[-1]
    tol = _MARGIN_RTOL * np.asarray(w.sum(axis=-1))[..., None, None]
    present = ~np.isnan(X).all(axis=-2)  # (..., S)
    present = np.broadcast_to(present, M.shape[:-1])
    beats = (M > tol) | ~present[..., None, :] | np.eye(S, dtype=bool)
    is_cw = beats.all(axis=-1) & present
    out = np.where(is_cw.any(axis=-1), np.argmax(is_cw, axis=-1), -1).astype(np.intp)
    return int(out) if out.ndim == 0 else out


def _opponent_matrix(X: np.ndarray, m: int) -> np.ndarray:
    """``G[j, k] = R(m, j, k)`` for every opponent ``j`` with at least one score (Vote'n'Rank eq. 2)."""
    present = ~np.isnan(X).all(axis=0)
    opp = np.flatnonzero(present)
    opp = opp[opp != m]
    with np.errstate(invalid="ignore"):
        G = np.sign(X[:, m][None, :] - X[:, opp].T)  # (opponents, T)
    return np.nan_to_num(G, nan=0.0)


def max_condorcet_margin(X: np.ndarray, system: int) -> tuple[float, np.ndarray | None]:
    """Largest worst-case weighted margin a system can get, and a weight vector achieving it.

    Solves the linear programme (Vote'n'Rank section 3.2, with the margin
    made explicit)::

        maximise  t   over  w in R^T, t
        s.t.      sum_k R(m, m', k) w_k >= t   for every opponent m'
                  sum_k w_k = 1,  w >= 0

    with ``scipy.optimize.linprog`` (HiGHS).  ``m`` is the Condorcet winner
    for the weights ``w`` iff ``min_m' sum_k R(m, m', k) w_k > 0``.

    Parameters
    ----------
    X : array_like, shape (T, S)
        Oriented task-level scores of one profile; ``NaN`` = missing.
    system : int
        Index of the system ``m``.

    Returns
    -------
    margin : float
        ``min_m' sum_k R(m, m', k) w_k`` re-evaluated for the returned weights
        (in ``[-1, 1]``; ``inf`` when ``m`` has no opponent, ``nan`` when it
        has no score at all).
    weights : ndarray, shape (T,), or None
        The optimal weights (non-negative, summing to 1); ``None`` when ``m``
        has no score.

    Examples
    --------
    >>> X = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0]])
    >>> margin, w = max_condorcet_margin(X, 0)
    >>> float(margin), w.tolist()
    (1.0, [1.0, 0.0])
    """
    from scipy.optimize import linprog

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"expected one profile of shape (T, S), got {X.shape}")
    T, S = X.shape
    if not 0 <= system < S:
        raise IndexError(f"system {system} out of range for {S} systems")
    if np.isnan(X[:, system]).all():
        return float("nan"), None
    G = _opponent_matrix(X, system)
    if G.shape[0] == 0:
        return float("inf"), np.full(T, 1.0 / T)
    # variables z = (w_1..w_T, t); minimise -t
    c = np.zeros(T + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-G, np.ones((G.shape[0], 1))])
    b_ub = np.zeros(G.shape[0])
    A_eq = np.hstack([np.ones((1, T)), np.zeros((1, 1))])
    bounds = [(0.0, 1.0)] * T + [(-1.0, 1.0)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"Condorcet LP failed for system {system}: {res.message}")
    w = np.clip(res.x[:T], 0.0, None)
    w /= w.sum()
    return float((G @ w).min()), w


def prospective_systems(
    X: np.ndarray, *, tol: float = 1e-6, strict: bool = True, systems: Sequence[int] | None = None
) -> list[tuple[bool, np.ndarray | None]]:
    """For every system: can some task-weight vector make it the Condorcet winner?

    Vote'n'Rank (Rofin et al. 2023), section 3.2: a system ``m`` is
    *prospective* when the set of weights ``w >= 0`` making it the Condorcet
    winner is not empty.  One linear programme per system
    (:func:`max_condorcet_margin`).

    Parameters
    ----------
    X : array_like, shape (T, S)
        Oriented task-level scores of one profile; ``NaN`` = missing (pairs
        ignored, Vote'n'Rank eq. 1).
    tol : float, optional
        Margin threshold.  Weights are normalised to sum 1, so a margin is a
        weighted share of tasks in ``[-1, 1]``.  Strict mode: prospective iff
        the best worst-case margin exceeds ``tol`` (default ``1e-6``, well above
        the LP solver's feasibility tolerance ``1e-7``); a system that needs
        weights separating it from an opponent by less than ``tol`` is
        reported as not prospective.  Weak mode: iff the margin is
        ``>= -tol``.
    strict : bool, optional
        True (default): strict majority against every opponent (eq. 3).
        False: the weak inequality ``G_m w >= 0`` of eq. (2).
    systems : sequence of int, optional
        Solve for these systems only (column indices), in this order; default all.

    Returns
    -------
    list of (bool, ndarray or None), one per system (of ``systems``)
        ``(True, w)`` with a maximum-margin weight vector ``w`` (shape
        ``(T,)``, non-negative, sum 1) that has been re-checked on the
        weighted majority relation; ``(False, None)`` otherwise (including
        systems without any score).

    Raises
    ------
    RuntimeError
        If an LP fails or a weight vector found by the LP does not pass the
        re-check (a numerical failure, not expected for ``tol >= 1e-6``).

    Notes
    -----
    By LP duality the optimal margin equals ``min_p max_k (p^T G_m)_k`` over
    distributions ``p`` on the opponents, so ``m`` is not (strictly)
    prospective iff some mixture of opponents is at least as good as ``m`` on
    every task; in particular a system weakly Pareto-dominated by another
    (never strictly better on a common task) is never prospective.

    Examples
    --------
    >>> X = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0], [0.0, 1.0, 0.5]])
    >>> [p for p, _ in prospective_systems(X)]
    [True, True, False]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"expected one profile of shape (T, S), got {X.shape}")
    S = X.shape[1]
    out: list[tuple[bool, np.ndarray | None]] = []
    for m in range(S) if systems is None else [int(k) for k in systems]:
        margin, w = max_condorcet_margin(X, m)
        ok = bool(margin > tol) if strict else bool(margin >= -tol)
        if not ok or w is None:
            out.append((False, None))
            continue
        # re-check on the weighted majority relation itself
        if strict:
            verified = condorcet_winner(X, weights=w) == m
        else:
            M = majority_margins(X, weights=w)
            present = ~np.isnan(X).all(axis=0)
            present[m] = False
            verified = bool(np.all(M[m, present] >= -tol))
        if not verified:
            raise RuntimeError(f"LP weights for system {m} fail the weighted-majority re-check (margin {margin})")
        out.append((True, w))
    return out
