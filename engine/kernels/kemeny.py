"""Kemeny consensus and ranking dispersion (pure numpy / scipy); the Kendall distance and tau-b they use are
those of :mod:`engine.kernels.paircount`, the pair-count module.

Colombo et al. (2022), *What are the best systems?*, section 3.1 defines the
Kemeny consensus of the per-task rankings ``sigma_1..sigma_T`` as a permutation
minimising ``sum_t d(sigma_t, sigma)`` with ``d`` the Kendall distance; section
3.2 approximates it by Borda's count; Appendix C measures the dispersion of the
rankings with the same distance (eq. 1: to a candidate consensus; eq. 3: between
all pairs of tasks).

Conventions (shared by every function of this module)
-----------------------------------------------------
* Scores are oriented (higher is better); the system axis is last; task-level
  score matrices have shape ``(..., T, S)``; ``NaN`` = missing score.
* **Pairs with a missing score are ignored** (Vote'n'Rank eq. 1-3): a task
  contributes to the comparison of systems ``i`` and ``j`` only when both have
  a score on it.  A system without any score is not ranked (``NaN`` out).
* **Kendall distance** ``d`` counts the *unordered* pairs ``{i, j}`` on which
  two rankings disagree (the "number of inversions" of Colombo, section 3.4;
  the double sum over ``1 <= i, j <= N`` of section 3.1 counts every pair twice,
  but the values of Colombo Table 7 -- about ``N(N-1)/4`` per task for random
  permutations -- are on the unordered scale).  A pair strictly ordered in
  opposite directions costs 1; a pair tied in exactly one of the two rankings
  costs ``tie_penalty`` (default 1/2: Fagin et al.'s ``K^(1/2)``, a metric on
  weak orders); a pair tied in both costs 0.  ``tie_penalty=0`` is the literal
  indicator ``1[(eta_i - eta_j)(tau_i - tau_j) < 0]`` of Colombo section 3.1.
* **Kemeny cost** of a strict order against tasks with ties uses the same
  convention: a pair tied on a task costs 1/2 of that task's weight whichever
  way the consensus orders it.  (This adds a constant to every order's cost, so
  the optimal orders are the same as with ``tie_penalty=0``.)
* **Several optimal orders.**  When the Kemeny optimum is not unique, returning
  one of them would depend on the input order of the systems.  The score
  vector is therefore built from *all* optimal orders: two systems are tied
  when some optimal order puts ``i`` before ``j`` and another puts ``j`` before
  ``i`` (and by transitivity of that relation).  The tied groups are contiguous
  in every optimal order, in the same group order, so the scores
  (``n - 1 - average position of the group``, ``n`` = number of ranked systems)
  are consistent with every optimal order; with a unique optimum they are
  exactly ``n - 1 - position``.  A group can contain two systems that every
  optimal order ranks the same way (a third system floating between them);
  ``ties="mean"`` instead gives each system its mean position over all
  optimal orders, which separates such pairs but is not always itself an
  optimal order.  Orders whose costs differ by less than ``1e-9`` times the
  total pair weight count as equally good.
"""

from __future__ import annotations

from math import prod
from typing import Literal, NamedTuple

import numpy as np

from engine.kernels.aggregate import task_weights
from engine.kernels.exact import weighted_task_sum
from engine.kernels.ranking import borda_points
from engine.kernels.social import pairwise_counts

__all__ = [
    "pairwise_preferences",
    "KemenyResult",
    "kemeny_order",
    "kemeny_consensus",
    "kemeny_across",
    "consensus_dispersion",
    "pairwise_dispersion",
]

_BLOCK = 1 << 22  # elements of a temporary (…, S, S) or (…, 2**n, n) work array
_COST_RTOL = 1e-9  # relative tolerance when comparing Kemeny costs
_DP_MAX = 14  # "auto" method: subset DP up to this many systems, MILP beyond


# --------------------------------------------------------------------------- helpers


def _as_scores(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2:
        raise ValueError(f"expected task-level scores of shape (..., T, S), got shape {X.shape}")
    return X


def _pair_counts(X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted strict-win and tie masses of every ordered pair of systems.

    ``W[..., i, j] = sum_t w_t [x_ti > x_tj]`` and ``E[..., i, j] = sum_t w_t
    [x_ti == x_tj]`` over the tasks where both are present; ``E`` has a zero
    diagonal.  The shared win-matrix kernel
    (:func:`engine.kernels.social.pairwise_counts`) after broadcasting the batch
    axes of ``X`` and ``w`` together.
    """
    T, S = X.shape[-2:]
    batch = np.broadcast_shapes(X.shape[:-2], w.shape[:-1])
    X = np.broadcast_to(X, batch + (T, S))
    w = np.broadcast_to(w, batch + (T,))
    return pairwise_counts(X, weights=None if np.all(w == 1.0) else w)


def _pair_signs(a: np.ndarray) -> np.ndarray:
    """``sign(a_i - a_j)`` for every ordered pair, ``NaN`` where either is missing."""
    with np.errstate(invalid="ignore"):
        return np.sign(a[..., :, None] - a[..., None, :])


# --------------------------------------------------------------------------- public: pairs


def pairwise_preferences(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Weighted number of tasks ranking system ``i`` above system ``j``.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented task-level scores (higher is better); ``NaN`` = missing.
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative task weights (default: every task counts 1).

    Returns
    -------
    ndarray, shape (..., S, S)
        ``P[..., i, j] = sum_t w_t ([x_ti > x_tj] + 0.5 [x_ti == x_tj])`` over the
        tasks where both ``i`` and ``j`` have a score (Vote'n'Rank eq. 1-3:
        pairs with a missing score are ignored).  A tie counts one half each
        way, so ``P[i, j] + P[j, i]`` is the weight of the tasks comparing the
        two; the diagonal is 0.  ``P - P.T`` is the weighted majority margin
        ``sum_t w_t R(i, j, t)`` of Vote'n'Rank eq. (2)-(3).

    Examples
    --------
    >>> pairwise_preferences(np.array([[2.0, 1.0, 1.0], [0.0, 3.0, np.nan]]))
    array([[0. , 1. , 1. ],
           [1. , 0. , 0.5],
           [0. , 0.5, 0. ]])
    """
    X = _as_scores(X)
    W, E = _pair_counts(X, task_weights(weights, X.shape[-2]))
    return W + 0.5 * E


# --------------------------------------------------------------------------- Kemeny solvers


def _block_scores(n: int, firm_sizes, order) -> np.ndarray:
    """Scores ``n-1-mean position`` of the blocks between consecutive firm prefix sizes."""
    scores = np.empty(n)
    ks = sorted(firm_sizes)
    for k1, k2 in zip(ks[:-1], ks[1:], strict=True):
        scores[np.asarray(order[k1:k2], dtype=np.intp)] = (n - 1) - (k1 + k2 - 1) / 2.0
    return scores


def _dp_tables(P: np.ndarray):
    """Subset dynamic programme over prefix sets (Held-Karp style), batch axis last.

    ``P`` has shape ``(B, n, n)``.  Returns ``f, g`` of shape ``(2**n, B)``:
    ``f[A]`` is the least cost of placing the set ``A`` (bit mask) first -- its
    internal pairs and every pair between ``A`` and the rest -- and ``g[R]``
    the least internal cost of the set ``R``; the cheapest order with prefix
    set ``A`` costs ``f[A] + g[complement of A]``.  Also returns
    ``Q[A, j] = sum_{k in A} P[k, j]`` ``(2**n, n, B)``, the column sums
    ``(n, B)``, the bit table ``(2**n, n)`` and the subsets of every size.
    """
    B, n, _ = P.shape
    N = 1 << n
    subsets = np.arange(N)
    pw = 1 << np.arange(n)
    bits = (subsets[:, None] & pw) != 0  # (N, n)
    pop = bits.sum(axis=1)
    Pt = np.ascontiguousarray(np.moveaxis(P, 0, -1))  # (n, n, B)
    Q = (bits.astype(np.float64) @ Pt.reshape(n, n * B)).reshape(N, n, B)
    colsum = Pt.sum(axis=0)  # (n, B)
    f = np.zeros((N, B))
    g = np.zeros((N, B))
    layers = [np.flatnonzero(pop == k) for k in range(n + 1)]
    for k in range(1, n + 1):
        A = layers[k]
        members = np.nonzero(bits[A])[1].reshape(A.size, k)  # (m, k) indices of the set bits
        prev = A[:, None] ^ pw[members]
        QA = Q[A[:, None], members]  # (m, k, B)
        f[A] = (f[prev] + (colsum[members] - QA)).min(axis=1)  # j last of A: pays P[r, j], r outside A
        g[A] = (g[prev] + QA).min(axis=1)  # j first of A: pays P[r, j], r inside A
    return f, g, Q, colsum, bits, layers


def _kemeny_dp(P: np.ndarray, ties: str = "blocks") -> tuple[np.ndarray, np.ndarray]:
    """Exact Kemeny scores and optimal costs of a batch of preference matrices ``(B, n, n)``.

    ``ties="blocks"``: ``n - 1 - mean position`` of the tied groups (prefix
    sizes ``k`` at which a single prefix set is optimal are the group
    boundaries).  ``ties="mean"``: ``n - 1 - mean position`` of every system
    over all optimal orders, counted exactly (integers in float64) by dynamic
    programming over the optimal edges ``A -> A + {j}`` of the subset lattice.
    """
    B, n, _ = P.shape
    N = 1 << n
    pw = 1 << np.arange(n)
    scores = np.empty((B, n))
    costs = np.empty(B)
    step = max(1, _BLOCK // (N * n))
    karange = np.arange(n + 1)
    for b0 in range(0, B, step):
        Pb = P[b0 : b0 + step]
        nb = Pb.shape[0]
        f, g, Q, colsum, bits, layers = _dp_tables(Pb)
        full = N - 1
        C = f[full]
        tol = _COST_RTOL * Pb.sum(axis=(-2, -1))
        costs[b0 : b0 + nb] = C
        if ties == "blocks":
            tight = f + g[full ^ np.arange(N)] <= C + tol  # (N, nb): prefix sets of optimal orders
            firm = np.zeros((nb, n + 1), dtype=bool)
            mem = np.zeros((nb, n + 1, n), dtype=bool)
            for k in range(n + 1):
                tk = tight[layers[k]]
                firm[:, k] = tk.sum(axis=0) == 1
                mem[:, k, :] = bits[layers[k][np.argmax(tk, axis=0)]]
            # group of system i: between the last firm prefix without i and the first firm prefix with i
            k2 = np.where(firm[:, :, None] & mem, karange[None, :, None], n + 1).min(axis=1)
            k1 = np.where(firm[:, :, None] & ~mem, karange[None, :, None], -1).max(axis=1)
            scores[b0 : b0 + nb] = (n - 1) - (k1 + k2 - 1) / 2.0
            continue

        def edges(Bset, k):
            """Optimal edges from the size-k sets ``Bset``: (non-members, next sets, ok mask)."""
            nonmem = np.nonzero(~bits[Bset])[1].reshape(Bset.size, n - k)
            nxt = Bset[:, None] | pw[nonmem]
            e = colsum[nonmem] - Q[nxt, nonmem]  # j placed right after Bset pays P[r, j], r after j
            ok = f[Bset][:, None, :] + e + g[full ^ nxt] <= C + tol
            return nonmem, nxt, ok

        cntp = np.zeros((N, nb))  # optimal orderings of each prefix set
        cntp[0] = 1.0
        for k in range(n):
            Bset = layers[k]
            _, nxt, ok = edges(Bset, k)
            np.add.at(cntp, nxt.ravel(), np.where(ok, cntp[Bset][:, None, :], 0.0).reshape(-1, nb))
        cnts = np.zeros((N, nb))  # optimal completions of each prefix set
        cnts[full] = 1.0
        sumpos = np.zeros((n, nb))
        for k in range(n - 1, -1, -1):
            Bset = layers[k]
            nonmem, nxt, ok = edges(Bset, k)
            via = np.where(ok, cntp[Bset][:, None, :] * cnts[nxt], 0.0)  # orders putting j at position k
            cnts[Bset] = np.where(ok, cnts[nxt], 0.0).sum(axis=1)
            np.add.at(sumpos, nonmem.ravel(), k * via.reshape(-1, nb))
        scores[b0 : b0 + nb] = ((n - 1) - sumpos / cnts[0]).T
    return scores, costs


def _dp_order(P: np.ndarray) -> np.ndarray:
    """One optimal order of a single preference matrix (lowest index first among ties)."""
    n = P.shape[0]
    f, g, Q, colsum, _, _ = _dp_tables(P[None])
    f, g, Q, colsum = f[:, 0], g[:, 0], Q[:, :, 0], colsum[:, 0]
    full = (1 << n) - 1
    tol = _COST_RTOL * P.sum()
    A = 0
    order = []
    for _ in range(n):
        cands = []
        for j in range(n):
            if A >> j & 1:
                continue
            A2 = A | (1 << j)
            cands.append((f[A] + colsum[j] - Q[A2, j] + g[full ^ A2], j))
        best = min(c for c, _ in cands)  # = f[A] + g[rest]: A lies on an optimal path
        j = next(j for c, j in cands if c <= best + tol)
        order.append(j)
        A |= 1 << j
    return np.asarray(order, dtype=np.intp)


def _order_cost(P: np.ndarray, order) -> float:
    """Kemeny cost ``sum_{i before j} P[j, i]`` of an order."""
    order = np.asarray(order, dtype=np.intp)
    Po = P[np.ix_(order, order)]
    return float(np.tril(Po, -1).sum())


def _kemeny_milp(P: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Exact Kemeny by integer programming (scipy.optimize.milp / HiGHS) for one matrix.

    Binary ``x_ij`` (``i < j``) = "``i`` before ``j``"; transitivity
    ``0 <= x_ij + x_jk - x_ik <= 1`` for every triple ``i < j < k``.  The tied
    groups (module notes) are found by re-solving with the extra constraint
    that the prefix set of each boundary of the optimal order is broken.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    n = P.shape[0]
    if n == 1:
        return np.zeros(1), np.zeros(1, dtype=np.intp), 0.0
    iu, ju = np.triu_indices(n, 1)
    m = iu.size
    idx = np.full((n, n), -1, dtype=np.intp)
    idx[iu, ju] = np.arange(m)
    c = P[ju, iu] - P[iu, ju]
    cmax = np.abs(c).max()
    c_scaled = c / cmax * 1e4 if cmax > 0 else c  # HiGHS's absolute MIP gap (1e-6) becomes negligible
    cons = []
    if n >= 3:
        i, j, k = np.array([t for t in _triples(n)]).T
        r = np.arange(i.size)
        A = coo_array(
            (np.repeat([1.0, 1.0, -1.0], i.size), (np.tile(r, 3), np.concatenate([idx[i, j], idx[j, k], idx[i, k]]))),
            shape=(i.size, m),
        ).tocsr()
        cons.append(LinearConstraint(A, 0, 1))
    tol = _COST_RTOL * P.sum()
    opts = {"mip_rel_gap": 0.0}

    def solve(extra):
        res = milp(c_scaled, integrality=np.ones(m), bounds=Bounds(0, 1), constraints=cons + extra, options=opts)
        if res.x is None:
            raise RuntimeError(f"Kemeny MILP failed: {res.message}")
        x = np.round(res.x)
        before = np.zeros((n, n))
        before[iu, ju] = x
        before[ju, iu] = 1 - x
        return np.argsort(-before.sum(axis=1), kind="stable")

    order = solve([])
    C = _order_cost(P, order)
    firm = {0, n}
    broken = set()
    for p in range(1, n):
        if p in broken:
            continue
        inA = np.zeros(n, dtype=bool)
        inA[order[:p]] = True
        a_idx, b_idx = np.nonzero(inA[:, None] & ~inA[None, :])
        row = np.zeros(m)
        fwd = a_idx < b_idx
        row[idx[a_idx[fwd], b_idx[fwd]]] = 1.0  # x_ab, a in A before b
        row[idx[b_idx[~fwd], a_idx[~fwd]]] = -1.0  # 1 - x_ba
        ub = p * (n - p) - 1 - np.count_nonzero(~fwd)
        alt = solve([LinearConstraint(row[None, :], -np.inf, ub)])
        if _order_cost(P, alt) <= C + tol:
            pos = np.empty(n, dtype=np.intp)
            pos[alt] = np.arange(n)
            for q in range(1, n):  # every boundary that the alternative optimum breaks
                if not np.all(pos[order[:q]] < q):
                    broken.add(q)
        else:
            firm.add(p)
    return _block_scores(n, firm, order), order, C


def _triples(n: int):
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(j + 1, n):
                yield i, j, k


# --------------------------------------------------------------------------- public: Kemeny


class KemenyResult(NamedTuple):
    """Result of :func:`kemeny_order` for one profile.

    Attributes
    ----------
    order : ndarray of intp
        System indices, best first (systems without any score are left out).
        When several orders are optimal this is one of them.
    scores : ndarray of float64, shape (S,)
        The consensus scores of :func:`kemeny_consensus` (``NaN`` = not ranked).
    cost : float
        ``sum_t w_t d(sigma_t, order)`` with the Kendall distance of the module
        notes (ties 1/2, missing pairs ignored).
    exact : bool
        True for the exact Kemeny optimum, False for the Borda approximation.
    """

    order: np.ndarray
    scores: np.ndarray
    cost: float
    exact: bool


def _check_method(method: str, ties: str) -> None:
    if method not in ("auto", "dp", "milp"):
        raise ValueError(f"method must be 'auto', 'dp' or 'milp', got {method!r}")
    if ties not in ("blocks", "mean"):
        raise ValueError(f"ties must be 'blocks' or 'mean', got {ties!r}")
    if ties == "mean" and method == "milp":
        raise ValueError("ties='mean' counts all optimal orders and needs method='dp' (or 'auto')")


def _use_dp(method: str, n: int, ties: str) -> bool:
    return method == "dp" or ties == "mean" or (method == "auto" and n <= _DP_MAX)


def _borda_scores(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Colombo section 3.2: rank the (weighted) Borda totals; ties share positions."""
    pts = borda_points(X)
    total = weighted_task_sum(pts, w, denominator=2)  # exact for simple-fraction weights
    total = np.where(np.isnan(X).all(axis=-2), np.nan, total)
    return borda_points(total)


def kemeny_consensus(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    exact_max: int = 12,
    method: Literal["auto", "dp", "milp"] = "auto",
    ties: Literal["blocks", "mean"] = "blocks",
) -> np.ndarray:
    """Kemeny consensus of the per-task rankings as a score vector (higher is better).

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented task-level scores; ``NaN`` = missing (pairs ignored).
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative task weights: task ``t`` counts ``w_t`` times in the sum
        of Kendall distances (default: all ones).
    exact_max : int, optional
        Largest number of ranked systems solved exactly (default 12); larger
        profiles use Borda's count (Colombo section 3.2), see Notes.
    method : {"auto", "dp", "milp"}, optional
        Exact solver: ``"dp"`` dynamic programming over the ``2**n`` prefix sets (batched, O(2**n n)),
        ``"milp"`` integer programme with transitivity constraints (``scipy.optimize.milp``),
        ``"auto"`` DP up to 14 systems and MILP beyond.
    ties : {"blocks", "mean"}, optional
        Scores when several orders are optimal.  ``"blocks"`` (default): the tied groups of the
        module notes share the mean of their positions (consistent with *every* optimal order, but
        a group may hold two systems all optimal orders rank the same way).  ``"mean"``: each
        system's mean position over *all* optimal orders (DP only; memory about ``2**n * n * 8``
        bytes); its ranking is not always an optimal order.  Both equal ``n - 1 - position`` when
        the optimum is unique.

    Returns
    -------
    ndarray of float64, shape (..., S)
        ``n - 1 - position`` in the Kemeny order, where ``n`` is the number of
        systems with at least one score (ties: see ``ties``); ``NaN`` for
        systems without any score.

    Notes
    -----
    Kemeny consensus (Colombo et al. 2022, section 3.1): an order minimising
    ``sum_t w_t d(sigma_t, sigma)`` with the Kendall distance ``d`` of the
    module notes (a pair tied on a task costs half its weight; pairs with a
    missing score cost nothing).  It is the order of the weighted majority
    tournament ``pairwise_preferences(X, weights)`` with the fewest reversed
    preferences, hence Condorcet-consistent.

    Beyond ``exact_max`` ranked systems the result is Borda's count (Colombo section 3.2), on the same
    scale; :func:`kemeny_order` tells which one was computed.

    Examples
    --------
    Colombo et al. (2022) Table 1 (lower is better, hence the minus sign):
    their method ranks C > B > A.

    >>> X = np.array([[0.3, 0.1, 0.0], [5, 4, 3], [10, 13, 15],
    ...               [0.02, 0.01, 0.03], [1.0, 2.2, 2.0], [0.4, 0.3, 0.2]])
    >>> kemeny_consensus(-X)
    array([0., 1., 2.])
    """
    _check_method(method, ties)
    X = _as_scores(X)
    T, S = X.shape[-2:]
    w = task_weights(weights, T)
    batch = np.broadcast_shapes(X.shape[:-2], w.shape[:-1])
    if S == 0 or prod(batch) == 0:
        return np.full(batch + (S,), np.nan)
    Xf = np.broadcast_to(X, batch + (T, S)).reshape(-1, T, S)
    wf = np.broadcast_to(w, batch + (T,)).reshape(-1, T)
    out = np.full((Xf.shape[0], S), np.nan)
    present = ~np.isnan(Xf).all(axis=-2)
    patterns, inverse = np.unique(present, axis=0, return_inverse=True)
    for p_idx, pat in enumerate(patterns):  # batch elements with the same present systems are solved together
        rows = np.flatnonzero(inverse.reshape(-1) == p_idx)
        if pat.any():
            block = out[rows]
            block[:, pat] = _consensus_of(Xf[rows][:, :, pat], wf[rows], exact_max, method, ties)
            out[rows] = block
    return out.reshape(batch + (S,))


def _consensus_of(sub: np.ndarray, ws: np.ndarray, exact_max: int, method: str, ties: str) -> np.ndarray:
    """Kemeny scores (or Borda's beyond ``exact_max`` systems) of profiles ``(B, T, n)`` with every system present."""
    n = sub.shape[-1]
    if n > exact_max:
        return _borda_scores(sub, ws)
    W, E = _pair_counts(sub, ws)
    P = W + 0.5 * E
    if _use_dp(method, n, ties):
        return _kemeny_dp(P, ties)[0]
    return np.stack([_kemeny_milp(Pb)[0] for Pb in P])


def kemeny_order(X: np.ndarray, *, weights: np.ndarray | None = None, ties: Literal["blocks", "mean"] = "blocks",
                 method: Literal["auto", "dp", "milp"] = "auto", exact_max: int = 12) -> KemenyResult:
    """An optimal Kemeny order of one profile, with its cost and the consensus scores.

    Parameters
    ----------
    X : array_like, shape (T, S)
        Oriented task-level scores of one profile; ``NaN`` = missing.
    weights : array_like, shape (T,), optional
        Non-negative task weights.
    exact_max, method, ties
        As in :func:`kemeny_consensus`.

    Returns
    -------
    KemenyResult
        ``(order, scores, cost, exact)``.  Among several optimal orders the DP
        solver returns the one that takes the lowest system index first at
        every step, the MILP solver the one HiGHS finds; with
        ``ties="blocks"`` both are consistent with ``scores``.  With the Borda approximation (``exact=False``) the
        order sorts the Borda scores (ties by index) and ``cost`` is its
        Kemeny cost.

    Examples
    --------
    >>> X = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0], [3.0, 1.0, 2.0]])
    >>> r = kemeny_order(X)
    >>> r.order, r.cost, r.exact
    (array([0, 1, 2]), 3.0, True)
    """
    _check_method(method, ties)
    X = _as_scores(X)
    if X.ndim != 2:
        raise ValueError(f"kemeny_order takes one profile of shape (T, S), got {X.shape}")
    T, S = X.shape
    w = task_weights(weights, T)
    if w.ndim != 1:
        raise ValueError("kemeny_order takes weights of shape (T,)")
    pat = ~np.isnan(X).all(axis=0)
    idx = np.flatnonzero(pat)
    n = idx.size
    scores = np.full(S, np.nan)
    if n == 0:
        return KemenyResult(np.zeros(0, dtype=np.intp), scores, 0.0, True)
    sub = X[:, pat]
    W, E = _pair_counts(sub, w)
    P = W + 0.5 * E
    if n > exact_max:
        s = _borda_scores(sub, w)
        local = np.argsort(-s, kind="stable")
        exact = False
    elif _use_dp(method, n, ties):
        s = _kemeny_dp(P[None], ties)[0][0]
        local = _dp_order(P)
        exact = True
    else:
        s, local, _ = _kemeny_milp(P)
        exact = True
    scores[pat] = s
    return KemenyResult(idx[local], scores, _order_cost(P, local), exact)


def kemeny_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Registry kernel: Kemeny consensus scores ``(..., T, S) -> (..., S)``, higher is better.

    Exact up to 12 ranked systems, Borda's count beyond (Colombo et al. 2022,
    sections 3.1-3.2); see :func:`kemeny_consensus` for ties, missing values
    and the score scale (``n - 1 - position``).

    Examples
    --------
    >>> kemeny_across(np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0]]))
    array([0. , 1.5, 1.5])
    """
    return kemeny_consensus(X, weights=weights)


# --------------------------------------------------------------------------- dispersion


def consensus_dispersion(
    X: np.ndarray,
    consensus: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    average: bool = False,
    tie_penalty: float = 0.5,
) -> np.ndarray:
    """Total Kendall distance of a candidate ranking to the per-task rankings.

    Colombo et al. (2022), Appendix C.1, eq. (1): ``sum_t d(sigma, sigma_t)``,
    the quantity the Kemeny consensus minimises.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented task-level scores (each task induces ``sigma_t``); ``NaN`` = missing.
    consensus : array_like, shape (..., S)
        Scores of the candidate ranking ``sigma`` (higher is better, ties
        allowed, ``NaN`` = not ranked); broadcasts against the batch of ``X``.
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative task weights: ``sum_t w_t d(sigma, sigma_t)``.
    average : bool, optional
        Divide by ``sum_t w_t`` (the per-task mean, the scale of Colombo
        Table 7 and an estimate of ``E[d(sigma, Sigma)]``, eq. 2).
    tie_penalty : float, optional
        Cost of a pair tied in exactly one of the two rankings (default 1/2).

    Returns
    -------
    ndarray of float64, shape (...)
        With ``tie_penalty=0.5`` and a strict consensus this is the Kemeny
        cost of that order.

    Examples
    --------
    >>> X = np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])
    >>> consensus_dispersion(X, np.array([3.0, 2.0, 1.0]))
    array(3.)
    """
    X = _as_scores(X)
    T = X.shape[-2]
    w = task_weights(weights, T)
    W, E = _pair_counts(X, w)
    c = np.asarray(consensus, dtype=np.float64)
    sc = _pair_signs(c)
    Wt = np.swapaxes(W, -1, -2)
    p = float(tie_penalty)
    strict = np.where(sc > 0, Wt + p * E, 0.0).sum(axis=(-2, -1))
    tied = np.where(sc == 0, W + Wt, 0.0).sum(axis=(-2, -1))
    d = strict + 0.5 * p * tied
    if average:
        tw = np.broadcast_to(w.sum(axis=-1), d.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(tw > 0, d / np.where(tw > 0, tw, 1.0), np.nan)
    return np.asarray(d, dtype=np.float64)


def pairwise_dispersion(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    average: bool = False,
    tie_penalty: float = 0.5,
) -> np.ndarray:
    """Sum of Kendall distances between all pairs of per-task rankings.

    Colombo et al. (2022), Appendix C.2, eq. (3): ``sum_{t1, t2 = 1..T}
    d(sigma_t1, sigma_t2)`` (ordered pairs, so each unordered pair of tasks
    counts twice; ``t1 = t2`` contributes 0), the ranking counterpart of the
    variance.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented task-level scores; ``NaN`` = missing (pairs ignored).
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative task weights: ``sum_{t1, t2} w_t1 w_t2 d(sigma_t1, sigma_t2)``.
    average : bool, optional
        Divide by ``sum_{t1 != t2} w_t1 w_t2`` (= ``T (T - 1)`` unweighted): the
        U-statistic estimate of ``E[d(Sigma, Sigma')]``; ``NaN`` with fewer
        than two weighted tasks.
    tie_penalty : float, optional
        Cost of a pair tied in exactly one of the two rankings (default 1/2).

    Returns
    -------
    ndarray of float64, shape (...)

    Notes
    -----
    Computed from pair counts in ``O(T S^2)`` instead of ``O(T^2 S^2)``: for a
    pair of systems with win masses ``W_ij``, ``W_ji`` and tie mass ``E_ij``,
    the ordered task pairs disagreeing on it weigh ``2 W_ij W_ji`` and those
    tied on exactly one side ``2 (W_ij + W_ji) E_ij``.

    Examples
    --------
    >>> pairwise_dispersion(np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]]))
    array(6.)
    """
    X = _as_scores(X)
    T = X.shape[-2]
    w = task_weights(weights, T)
    W, E = _pair_counts(X, w)
    Wt = np.swapaxes(W, -1, -2)
    d = (W * Wt + float(tie_penalty) * (W + Wt) * E).sum(axis=(-2, -1))
    if average:
        wb = np.broadcast_to(w, np.broadcast_shapes(w.shape, X.shape[:-1]))
        den = wb.sum(axis=-1) ** 2 - (wb**2).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(den > 0, d / np.where(den > 0, den, 1.0), np.nan)
    return np.asarray(d, dtype=np.float64)
