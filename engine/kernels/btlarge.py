"""Bradley-Terry fits of score tensors with many systems, from sufficient statistics (pure numpy + scipy).

The Bradley-Terry likelihood of the battles of a score tensor depends on the pairwise win counts only
through each system's total (its *points*: battles won plus half the ties) and the number of battles of
every pair, ``N[i, j] = sum_t w_t [i and j both scored by judge t]``:

``sum_ij C_ij log sigma(s_i - s_j) = sum_i s_i (b_i - n_i / 2) - 1/2 sum_ij N_ij log(2 cosh((s_i - s_j) / 2))``

with ``C = wins + ties / 2``, ``b_i = sum_j C_ij`` and ``n_i = sum_j N_ij`` (because ``C_ij + C_ji = N_ij``
and ``log sigma(d) = d / 2 - log(2 cosh(d / 2))``).  Davidson's model needs, besides ``N``, each
system's wins minus losses and the total of the ties.  ``N`` comes from which systems each judge
scores, one block of rows at a time, so nothing of size ``S x S`` is held except the float32 curvature
matrix of one Newton step (400 MB at 10,000 systems, against several float64 ``(S, S)`` count and
work matrices for :func:`engine.kernels.battles.fit_bradley_terry`).

The fit is Newton's method with each step solved by preconditioned conjugate gradients: the gradient and
the log-likelihood are computed in float64, row block by row block; the curvature matrix is kept in
float32 (it only shapes the step; the iteration stops where the float64 gradient says).  The maximum it
reaches is the one :func:`~engine.kernels.battles.fit_bradley_terry` reaches from the full count
matrices (same ridge rule, same centring, same stopping rule), so both agree to the tolerance of the fit.

Whether the maximum likelihood estimate exists (the "i beat or tied j" graph is strongly connected) is
decided on a sparse graph with the same reachability: each judge links every system to the next one
below it in its order, and tied neighbours both ways.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.kernels.ranking import borda_points

__all__ = ["JudgeStatistics", "judge_statistics", "fit_statistics"]

#: cells (rows x S) of one block of the pair matrix in float64 work arrays (16 MB each)
_BLOCK_CELLS = 1 << 21
#: relative residual at which the conjugate gradients of one Newton step stop (the float32 curvature
#: matrix holds about seven digits; the next step's float64 gradient corrects the rest)
_CG_RTOL = 1e-7
_CG_MAX = 2000


@dataclass(frozen=True)
class JudgeStatistics:
    """What a Bradley-Terry fit needs from the judges of one score table (T judges, S systems).

    Attributes
    ----------
    points : ndarray (S,)
        ``sum_t w_t (#beaten + #tied / 2)``: the row sums of ``wins + ties / 2``.
    margin : ndarray (S,)
        ``sum_t w_t (#beaten - #lost) / 2``: half the row sums of ``wins - wins^T`` (Davidson).
    ties : float
        ``sum_t w_t sum_i #tied_i``: the sum of the tie matrix (each tied pair counted both ways).
    present : ndarray (T, S) of bool
        Which judge scores which system (judges of weight 0 are dropped).
    weight : ndarray (T,)
        The judges' weights.
    connected : bool
        Whether the graph "``i`` beat or tied ``j`` in some judge" over the systems with a battle is
        strongly connected (ties as half wins: the MLE exists without a ridge).
    connected_wins : bool
        The same for "``i`` beat ``j``" (Davidson's model: ties alone let a strength gap and ``nu`` grow
        without bound, so its MLE needs strict wins across every cut).
    """

    points: np.ndarray
    margin: np.ndarray
    ties: float
    present: np.ndarray
    weight: np.ndarray
    connected: bool
    connected_wins: bool = True

    @property
    def battles(self) -> np.ndarray:
        """``n_i = sum_j N_ij``: every system's number of battles (weighted)."""
        p = self.present
        n = p.sum(axis=1).astype(np.float64)
        return (self.weight * np.maximum(n - 1.0, 0.0)) @ p


def judge_statistics(X: np.ndarray, weight: np.ndarray) -> JudgeStatistics:
    """The sufficient statistics of the battles of the judges (rows) of ``X`` (T, S) with weights (T,).

    Examples
    --------
    >>> st = judge_statistics(np.array([[3.0, 2.0, 1.0], [1.0, 1.0, 2.0]]), np.ones(2))
    >>> st.points.tolist(), st.margin.tolist(), st.ties, st.connected
    ([2.5, 1.5, 2.0], [0.5, -0.5, 0.0], 2.0, True)
    """
    X = np.asarray(X, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    use = w > 0
    X, w = X[use], w[use]
    pres = ~np.isnan(X)
    n = pres.sum(axis=1, keepdims=True).astype(np.float64)
    pts = np.nan_to_num(borda_points(X))  # beaten + tied / 2 among the scores of the judge
    tied = np.where(pres, _tied_others(X), 0.0)
    beaten = pts - tied / 2.0
    lost = np.where(pres, n - 1.0 - beaten - tied, 0.0)
    points = w @ pts
    margin = w @ ((beaten - lost) / 2.0)
    ties = float(w @ tied.sum(axis=1))
    return JudgeStatistics(points=points, margin=margin, ties=ties, present=pres, weight=w,
                           connected=_strongly_connected_judges(X, pres),
                           connected_wins=_strongly_connected_judges(X, pres, strict=True))


def _tied_others(X: np.ndarray) -> np.ndarray:
    """``#{j != i present: x_j == x_i}`` per judge and system (``NaN`` rows give 0)."""
    out = np.zeros(X.shape)
    for t in range(X.shape[0]):
        x = X[t]
        ok = ~np.isnan(x)
        if ok.sum() < 2:
            continue
        _, inv, cnt = np.unique(x[ok], return_inverse=True, return_counts=True)
        out[t, ok] = cnt[inv] - 1
    return out


def _strongly_connected_judges(X: np.ndarray, pres: np.ndarray, *, strict: bool = False) -> bool:
    """Strong connectivity of "``i`` beat or tied ``j`` in some judge" (``strict``: "``i`` beat ``j``") over the
    systems with a battle, on a sparse graph with the same reachability.

    Each judge links every system to the next one below it in its order, and back between tied neighbours.
    With ``strict`` the systems of one score value link to a helper node, which links to every system of the
    next lower value (no link between equal scores).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    S = X.shape[1]
    active = (pres.sum(axis=1) >= 2)[:, None] & pres
    keep = active.any(axis=0)
    if keep.sum() <= 1:
        return True
    src, dst = [], []
    n_nodes = S
    for t in range(X.shape[0]):
        idx = np.flatnonzero(active[t])
        if idx.size < 2:
            continue
        order = idx[np.argsort(-X[t, idx], kind="stable")]
        vals = X[t, order]
        if not strict:
            a, b = order[:-1], order[1:]
            src += [a, b[vals[1:] == vals[:-1]]]
            dst += [b, a[vals[1:] == vals[:-1]]]
            continue
        cut = np.flatnonzero(vals[1:] != vals[:-1]) + 1  # starts of the lower score values
        bounds = np.concatenate([[0], cut, [order.size]])
        for g in range(cut.size):  # values g (higher) and g + 1: one helper node between them
            hub = n_nodes
            n_nodes += 1
            upper, lower = order[bounds[g]:bounds[g + 1]], order[bounds[g + 1]:bounds[g + 2]]
            src += [upper, np.full(lower.size, hub)]
            dst += [np.full(upper.size, hub), lower]
    if not src:
        return False
    r, c = np.concatenate(src), np.concatenate(dst)
    g = coo_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(n_nodes, n_nodes)).tocsr()
    _, labels = connected_components(g, directed=True, connection="strong")
    return bool(np.unique(labels[np.flatnonzero(keep)]).size == 1)


def _upper_blocks(Pw: np.ndarray, Pf: np.ndarray):
    """Blocks of rows ``i0:i1`` of the pair matrix ``N`` from column ``i0`` on: ``(i0, i1, N[i0:i1, i0:])``.

    ``N[i, j] = sum_t w_t [both scored by judge t]``, zero on the diagonal.  The block's first
    ``i1 - i0`` columns are the square on the diagonal (both ``(i, j)`` and ``(j, i)``); the columns from
    ``i1`` on are the upper triangle, whose mirror image the callers add by symmetry.
    """
    S = Pf.shape[1]
    step = max(1, _BLOCK_CELLS // max(1, S))
    for i0 in range(0, S, step):
        i1 = min(S, i0 + step)
        Nb = Pw[:, i0:i1].T @ Pf[:, i0:]
        Nb[np.arange(i1 - i0), np.arange(i1 - i0)] = 0.0
        yield i0, i1, Nb


def _mirror_sum(M: np.ndarray, b: int) -> float:
    """``sum_ij`` of a symmetric quantity from a block of :func:`_upper_blocks` (the upper part counts twice)."""
    return float(M[:, :b].sum()) + 2.0 * float(M[:, b:].sum())


def _symv(A: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``A v`` for the symmetric float32 ``A`` of which only the upper triangle is filled (BLAS ``ssymv``)."""
    from scipy.linalg.blas import ssymv

    # A.T is A's memory in Fortran order, where A's upper triangle is the lower one: no copy
    return ssymv(1.0, A.T, v.astype(np.float32), lower=1).astype(np.float64)


def _pcg(matvec, rhs: np.ndarray, precond: np.ndarray) -> np.ndarray:
    """Preconditioned conjugate gradients for a symmetric positive definite operator (Jacobi ``precond``)."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = r / precond
    p = z.copy()
    rz = float(r @ z)
    stop = _CG_RTOL * float(np.linalg.norm(rhs))
    for _ in range(_CG_MAX):
        if float(np.linalg.norm(r)) <= stop:
            break
        q = matvec(p)
        alpha = rz / float(p @ q)
        x += alpha * p
        r -= alpha * q
        z = r / precond
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x


def _log2cosh(h: np.ndarray) -> np.ndarray:
    """``log(2 cosh(h))``, stable for any ``h``."""
    a = np.abs(h)
    return a + np.log1p(np.exp(-2.0 * a))


def _damp(step: np.ndarray, loglik, x: np.ndarray) -> np.ndarray:
    """Halve a long step (> 0.25) while the log-likelihood would decrease (at most 60 times)."""
    if np.abs(step).max(initial=0.0) <= 0.25:
        return step
    base = loglik(x)
    t = 1.0
    for _ in range(60):
        if loglik(x + t * step) >= base - 1e-12 * abs(base):
            break
        t *= 0.5
    return t * step


def fit_statistics(st: JudgeStatistics, *, tie_model: str = "half", ridge: float | None = None,
                   ridge_scale: float = 1e-6, tol: float = 1e-10, max_iter: int = 200) -> tuple[np.ndarray, float, float, int]:
    """Bradley-Terry strengths from :class:`JudgeStatistics`: ``(strength (S,), tie_param, ridge, iterations)``.

    The model, ridge rule, centring and stopping rule are those of
    :func:`engine.kernels.battles.fit_bradley_terry` (``ridge_scale`` is its ``RIDGE``); systems without a
    battle get ``NaN``.
    """
    S = st.points.size
    theta = np.full(S, np.nan)
    nu = np.nan if tie_model == "half" else 0.0
    n_all = st.battles
    keep = np.flatnonzero(n_all > 0)
    if keep.size < 2:
        return theta, nu, 0.0, 0
    P = st.present[:, keep]
    Pf = P.astype(np.float64)
    Pw = Pf * st.weight[:, None]
    n = n_all[keep]
    total = float(n.sum())
    s = keep.size
    davidson = tie_model == "davidson" and st.ties > 0
    if tie_model == "davidson" and st.ties >= total:  # every battle a tie: equal strengths, nu = inf
        theta[keep] = 0.0
        return theta, np.inf, 0.0 if ridge is None else float(ridge), 0
    exists = st.connected_wins if davidson else st.connected
    lam = float(ridge) if ridge is not None else (0.0 if exists else ridge_scale * total / s)
    shift = total / (4.0 * s * s)
    if davidson:
        th, nu, its = _newton_davidson(st.margin[keep], st.ties, Pw, Pf, n, lam, shift, tol, max_iter)
    else:
        th, its = _newton_half(st.points[keep] - n / 2.0, Pw, Pf, lam, shift, tol, max_iter)
        nu = np.nan if tie_model == "half" else 0.0
    theta[keep] = th - th.mean()
    return theta, nu, lam, its


def _newton_half(base: np.ndarray, Pw: np.ndarray, Pf: np.ndarray, lam: float, shift: float, tol: float,
                 max_iter: int) -> tuple[np.ndarray, int]:
    """Newton-CG on ``sum_i s_i base_i - 1/2 sum_ij N_ij log 2cosh((s_i - s_j)/2) - lam/2 |s|^2``.

    Every pair is evaluated once (the upper triangle; ``tanh`` is odd, the curvature symmetric).
    """
    s = base.size
    th = np.zeros(s)
    A = np.zeros((s, s), dtype=np.float32)  # upper triangle: N sigma(d) sigma(-d)

    def loglik(x: np.ndarray) -> float:
        acc = float(x @ base) - 0.5 * lam * float(x @ x)
        for i0, i1, Nb in _upper_blocks(Pw, Pf):
            acc -= 0.5 * _mirror_sum(Nb * _log2cosh((x[i0:i1, None] - x[None, i0:]) / 2.0), i1 - i0)
        return acc

    for it in range(1, max_iter + 1):
        g = base - lam * th
        diag = np.full(s, lam)
        for i0, i1, Nb in _upper_blocks(Pw, Pf):
            b = i1 - i0
            h = np.tanh((th[i0:i1, None] - th[None, i0:]) / 2.0)
            M = Nb * h
            g[i0:i1] -= 0.5 * M.sum(axis=1)
            g[i1:] += 0.5 * M[:, b:].sum(axis=0)  # h is odd: N_ji h_ji = -N_ij h_ij
            Ab = Nb * (1.0 - h * h) / 4.0
            diag[i0:i1] += Ab.sum(axis=1)
            diag[i1:] += Ab[:, b:].sum(axis=0)
            A[i0:i1, i0:] = Ab

        def matvec(v: np.ndarray, d: np.ndarray = diag) -> np.ndarray:
            return d * v - _symv(A, v) + shift * v.sum()

        step = _pcg(matvec, g, diag + shift)
        step = _damp(step, loglik, th)
        th = th + step
        if np.abs(step).max() <= tol * max(1.0, float(np.abs(th).max())):
            return th, it
    raise ValueError(f"bradley_terry: Newton's method did not converge in {max_iter} steps")


def _davidson_block(x: np.ndarray, gam: float, i0: int, i1: int):
    """``log Z`` and the probabilities ``pa, pb, pt`` of rows ``i0:i1`` against the systems from ``i0`` on."""
    d = x[i0:i1, None] - x[None, i0:]
    m = np.maximum(np.abs(d) / 2.0, gam)
    ea, eb, et = np.exp(d / 2.0 - m), np.exp(-d / 2.0 - m), np.exp(gam - m)
    z = ea + eb + et
    return np.log(z) + m, ea / z, eb / z, et / z


def _newton_davidson(margin: np.ndarray, ties: float, Pw: np.ndarray, Pf: np.ndarray, n: np.ndarray, lam: float,
                     shift: float, tol: float, max_iter: int) -> tuple[np.ndarray, float, int]:
    """Newton-CG on Davidson's log-likelihood in (strengths, log nu), every pair evaluated once."""
    s = margin.size
    share = ties / float(n.sum())  # tied share of the battles: moment estimate of nu at equal strengths
    x = np.zeros(s + 1)
    x[s] = np.log(2.0 * share / (1.0 - share))
    ties_half = 0.5 * ties
    A = np.zeros((s, s), dtype=np.float32)

    def loglik(z: np.ndarray) -> float:
        th, gam = z[:s], float(z[s])
        acc = float(th @ margin) + ties_half * gam - 0.5 * lam * float(th @ th)
        for i0, i1, Nb in _upper_blocks(Pw, Pf):
            logz = _davidson_block(th, gam, i0, i1)[0]
            acc -= 0.5 * _mirror_sum(Nb * logz, i1 - i0)
        return acc

    for it in range(1, max_iter + 1):
        th, gam = x[:s], float(x[s])
        grad = np.empty(s + 1)
        grad[:s] = margin - lam * th
        grad[s] = ties_half
        diag = np.full(s, lam)
        cross = np.zeros(s)
        corner = 0.0
        for i0, i1, Nb in _upper_blocks(Pw, Pf):
            b = i1 - i0
            _, pa, pb, pt = _davidson_block(th, gam, i0, i1)
            diff = pa - pb  # odd in d; pt and the curvature are even
            M = Nb * diff
            grad[i0:i1] -= 0.5 * M.sum(axis=1)
            grad[i1:s] += 0.5 * M[:, b:].sum(axis=0)
            grad[s] -= 0.5 * _mirror_sum(Nb * pt, b)
            Ab = Nb * (0.25 * (pa + pb) - 0.25 * diff * diff)
            diag[i0:i1] += Ab.sum(axis=1)
            diag[i1:] += Ab[:, b:].sum(axis=0)
            A[i0:i1, i0:] = Ab
            C = -0.5 * M * pt  # N f_dg, odd
            cross[i0:i1] += C.sum(axis=1)
            cross[i1:] -= C[:, b:].sum(axis=0)
            corner += 0.5 * _mirror_sum(Nb * pt * (1.0 - pt), b)

        def matvec(v: np.ndarray, d: np.ndarray = diag, c: np.ndarray = cross, k: float = corner) -> np.ndarray:
            out = np.empty(s + 1)
            vt, vg = v[:s], v[s]
            out[:s] = d * vt - _symv(A, vt) + shift * vt.sum() + c * vg
            out[s] = float(c @ vt) + k * vg
            return out

        step = _pcg(matvec, grad, np.concatenate([diag + shift, [corner]]))
        step = _damp(step, loglik, x)
        x = x + step
        if np.abs(step).max() <= tol * max(1.0, float(np.abs(x).max())):
            return x[:s], float(np.exp(x[s])), it
    raise ValueError(f"bradley_terry (davidson): Newton's method did not converge in {max_iter} steps")
