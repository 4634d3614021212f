"""Multi-criteria decision making (MCDM) kernels: PROMETHEE II, TOPSIS, VIKOR, criteria weights.

These are the methods of xLLMBench (Gjorgjevikj et al. 2025, "User-defined trade-offs in LLM
benchmarking", Knowledge-Based Systems): PROMETHEE II with per-criterion generalised preference
functions (section 3.2, Eqs. 1-4; section 4.3, Eqs. 5-7), the objective weighting methods of
section 4.4 (Eq. 8), AHP weights (Appendix D) and the TOPSIS / VIKOR comparison of Appendix C.

Layout and orientation follow the votebench kernel conventions: ``X`` has shape ``(..., T, S)``
with the T criteria (tasks) on the second-to-last axis and the S alternatives (systems) on the
last axis; any leading axes are batch axes (e.g. bootstrap replicates).  Scores are taken as
*higher is better* unless ``maximize`` says otherwise for a criterion (a minimised criterion is
negated, which is exact in floating point and equals xLLMBench's Eq. 1).  The MCDM methods need a
complete matrix: ``NaN`` (or an infinite score) raises ``ValueError``.

PROMETHEE II conventions (checked against xLLMBench section 3.2 and Brans & Vincke 1985):

* ``d_c(a, b) = x_c(a) - x_c(b)`` on the oriented criterion ``c``; ``P_c`` is its preference function;
* ``pi(a, b) = sum_c w_c P_c(d_c(a, b))`` with the weights normalised to sum 1.  xLLMBench's Eq. 2
  has an extra factor ``1/n`` (n = number of criteria; its code takes ``np.average`` over criteria),
  which only rescales every flow by the same constant; we use the standard PROMETHEE index, so
  ``0 <= pi <= 1``;
* ``phi+(a) = 1/(S-1) sum_{x in A} pi(a, x)``, ``phi-(a) = 1/(S-1) sum_{x in A} pi(x, a)``,
  ``phi(a) = phi+(a) - phi-(a)`` (Eqs. 3-4).  The sums run over *all* of A, the alternative itself
  included, exactly as Eq. 3 is written; ``pi(a, a) = 0`` for every standard function, and the
  self-comparison only matters when a threshold ``q`` is negative (xLLMBench's default "linear"
  function, see below), where it adds the same constant to ``phi+`` and ``phi-`` and leaves the net
  flow unchanged.  (xLLMBench's code divides by ``n_criteria - 1`` instead of ``S - 1``, again a
  common scale factor; we use Eq. 3.)

The six generalised preference functions (Brans & Vincke 1985, Management Science 31(6):647-656;
xLLMBench section 3.2 lists the same six; ``d`` is the difference on the oriented criterion; the
parameter names are the usual PROMETHEE ones: ``q`` indifference threshold, ``p`` preference
threshold, ``s`` Gaussian spread; xLLMBench calls the linear thresholds ``a = q`` and ``b = p`` and
the Gaussian spread ``sigma = s``):

========================  ===========================================================  ============
name (aliases)            ``P(d)``                                                     parameters
========================  ===========================================================  ============
``usual`` (type I)        0 if d <= 0, 1 if d > 0  (xLLMBench Eq. 5)                    --
``quasi`` (``ushape``,    0 if d <= q, 1 if d > q                                      q
``u-shape``; type II)
``vshape`` (``linear``,   0 if d <= 0, d/p if 0 < d <= p, 1 if d > p                   p >= 0
``v-shape``; type III)
``level`` (type IV)       0 if d <= q, 1/2 if q < d <= p, 1 if d > p                   q <= p
``linear_indifference``   0 if d <= q, (d-q)/(p-q) if q < d <= p, 1 if d > p            q <= p
(``vshape_2``,            (xLLMBench Eq. 6 with a = q, b = p)
``v-shape-indiff``;
type V)
``gaussian`` (type VI)    0 if d <= 0, 1 - exp(-d^2 / (2 s^2)) if d > 0 (Eq. 7)        s >= 0
========================  ===========================================================  ============

Degenerate parameters are allowed and mean the limit: ``p == 0`` (V-shape), ``p == q`` (linear with
indifference) and ``s == 0`` (Gaussian) give the step ``d > q`` (``q = 0`` for V-shape and Gaussian).

Defaults (xLLMBench section 4.3 and its reference code): a parameter left as ``None`` -- or set to
``NaN`` for one criterion of a per-criterion array -- is computed, per criterion and per batch
element, from that criterion's full S x S matrix of pairwise differences ``D`` (diagonal included):

* ``linear_indifference``: ``q = min(D) = -(max x - min x)`` and ``p = max(D) = max x - min x``;
  this *is* xLLMBench's "linear" function (Eq. 6 with a, b = min and max of the pairwise
  differences), which therefore also prefers an alternative that is *worse* by less than the range
  (``P(0) = 1/2``).  Its net flow equals ``S/(S-1) sum_c w_c (x_c(a) - mean_c) / range_c`` -- the
  ranking of the weighted mean of min-max normalised scores;
* ``vshape`` (= ``linear``): ``p = max(D)`` (the ``b`` of xLLMBench; the V-shape has ``q = 0``).
  Since ``P(d) - P(-d) = d / range`` for both functions on ``|d| <= range``, its net flow is
  identical to xLLMBench's linear one; only ``phi+`` and ``phi-`` differ;
* ``gaussian``: ``s = std(D) = sqrt(2) * std(x)`` (population standard deviation of the S^2
  differences, whose mean is 0; xLLMBench uses ``np.std`` of the difference matrix.  Its Appendix B
  says "standard deviation of the values under each criterion", which differs by ``sqrt(2)``; we
  follow section 4.3 and the code);
* ``quasi`` and ``level`` have no default in xLLMBench: their thresholds must be given.

Algorithms.  The straightforward method materialises the T x S x S preference tensor (xLLMBench
needs 2.3 GB for the Open LLM Leaderboard).  Here no pairwise tensor is built except for the
Gaussian function:

* step functions (usual, quasi, level, degenerate V-shape/linear/Gaussian): the flow sums are
  counts ``#{b: d(a, b) > t}`` read off each criterion's sorted values (O(S log S)); for ``t != 0`` a
  merge-count against the shifted values is corrected at the boundary so that it equals the count
  of the floating-point differences ``fl(x_a - x_b) > t`` that a pairwise implementation evaluates;
* piecewise-linear functions (V-shape, linear with indifference): counts of the saturated part plus
  sorted prefix sums over the linear part, O(S log S);
* Gaussian: the flow sums are counts minus sums of ``E = exp(-d^2 / 2 s^2)`` over the *distinct*
  values of each criterion (multiplicities as weights) and over the lower triangle only (``P(d) > 0``
  needs ``d > 0``; ``phi-`` is the column sum of the same block).  Pairs closer than ``8.65 s`` are
  evaluated exactly in pairwise blocks of at most ``block`` values (further apart ``E < 6e-17`` and
  the preference is 1).  For criteria with many distinct values (>= 1024) only pairs inside the same
  cell of a grid of width ``0.2 sqrt(2) s`` are pairwise; the other pairs come from an exact
  factorisation of the kernel in which only ``exp(2 xi eta)`` (``xi``, ``eta`` the offsets from the
  cell centres, ``|2 xi eta| <= 0.02``) is replaced by 8 Taylor terms -- a one-dimensional fast Gauss
  transform with error < 1e-17 per pair, O(U) work per criterion instead of O(U^2).

All paths agree with the O(T S^2) broadcast definition (:func:`_promethee2_reference`) to ~1e-12
(the tests check 1e-12; differences are typically a few 1e-15).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.kernels.aggregate import as_profile, task_weights
from engine.kernels.exact import ordered_sum, tame, weighted_task_mean
from engine.kernels.ranking import min_rank, tie_groups

__all__ = [
    "PREFERENCE_FUNCTIONS",
    "SAATY_RANDOM_INDEX",
    "promethee2",
    "promethee2_net",
    "promethee2_rank",
    "PrometheeSetup",
    "promethee_setup",
    "topsis",
    "vikor",
    "vikor_score",
    "equal_weights",
    "entropy_weights",
    "std_weights",
    "ahp_weights",
]

# preference-function codes (PROMETHEE types I..VI)
_USUAL, _QUASI, _VSHAPE, _LEVEL, _LINEAR, _GAUSSIAN = range(6)

#: Canonical names of the six generalised preference functions, in Brans & Vincke's order (types I-VI).
PREFERENCE_FUNCTIONS = ("usual", "quasi", "vshape", "level", "linear_indifference", "gaussian")

_ALIASES = {
    "usual": _USUAL,
    "type1": _USUAL,
    "quasi": _QUASI,
    "ushape": _QUASI,
    "u_shape": _QUASI,
    "type2": _QUASI,
    "vshape": _VSHAPE,
    "v_shape": _VSHAPE,
    "linear": _VSHAPE,
    "type3": _VSHAPE,
    "level": _LEVEL,
    "type4": _LEVEL,
    "linear_indifference": _LINEAR,
    "vshape_2": _LINEAR,
    "vshape2": _LINEAR,
    "v_shape_indiff": _LINEAR,
    "vshape_indiff": _LINEAR,
    "vshape_indifference": _LINEAR,
    "type5": _LINEAR,
    "gaussian": _GAUSSIAN,
    "gauss": _GAUSSIAN,
    "type6": _GAUSSIAN,
}

#: Saaty's random consistency index RI(n) for n = 1..15 (Saaty 1980, *The Analytic Hierarchy Process*:
#: n <= 10: 0, 0, .58, .90, 1.12, 1.24, 1.32, 1.41, 1.45, 1.49; n = 11..15 as usually tabulated after
#: Saaty: 1.51, 1.48, 1.56, 1.57, 1.59).  Pass ``random_index`` to :func:`ahp_weights` for another table.
SAATY_RANDOM_INDEX = {
    1: 0.0,
    2: 0.0,
    3: 0.58,
    4: 0.90,
    5: 1.12,
    6: 1.24,
    7: 1.32,
    8: 1.41,
    9: 1.45,
    10: 1.49,
    11: 1.51,
    12: 1.48,
    13: 1.56,
    14: 1.57,
    15: 1.59,
}

#: default bound on the number of float64 pairwise values the Gaussian path holds at once (512 kB, cache-sized)
_GAUSS_BLOCK = 1 << 16
#: exp(-x) < 2**-54 for x > 37.43: beyond this the Gaussian preference is 1 to within 6e-17
_GAUSS_CUT = 37.5
#: far-field expansion of the Gaussian: cell width (in units of sqrt(2) s), Taylor terms, cells reached
_FGT_H = 0.2
_FGT_P = next(
    m for m in range(1, 40) if np.exp(_FGT_H**2) * (_FGT_H**2 / 2) ** m / np.prod(np.arange(1.0, m + 1)) < 1e-17
)
_FGT_D = int(np.ceil(np.sqrt(_GAUSS_CUT) / _FGT_H)) + 1
#: rows with at least this many distinct values may use the far-field expansion
_FGT_MIN = 1024
#: use the expansion whenever allowed, ignoring the cost estimate (tests)
_FGT_FORCE = False
#: largest |scaled value| (from the row's middle value, in units of sqrt(2) s) for the expansion:
#: the offsets inside a cell then carry absolute rounding errors below ~1e-13
_FGT_ZMAX = 256.0
#: values per chunk of independent (batch, criterion) rows: bounds the sort/merge work arrays
_ROW_CHUNK = 1 << 18


# ---------------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------------
def _matrix(X: np.ndarray, name: str) -> np.ndarray:
    """``X`` as float64 ``(..., T, S)``; complete and finite."""
    X = as_profile(X, name, what="criteria")
    n_nan = int(np.isnan(X).sum())
    if n_nan:
        raise ValueError(
            f"{name} needs a complete score matrix but X contains {n_nan} NaN value(s); "
            "apply a missing-score policy (e.g. listwise deletion) first"
        )
    return X


def _weights(weights: np.ndarray | None, X: np.ndarray, name: str) -> np.ndarray:
    """Non-negative weights normalised to sum 1 over the criteria, broadcast to ``X.shape[:-1]``."""
    return task_weights(weights, X.shape[-2], rule=name, batch=X.shape[:-1], normalise=True)


def _signs(maximize: bool | Sequence[bool] | np.ndarray, T: int, name: str) -> np.ndarray:
    """+1 for a maximised criterion, -1 for a minimised one, shape (T,)."""
    m = np.asarray(maximize)
    if m.dtype != bool:
        if m.dtype.kind in "iu" and np.isin(m, (0, 1)).all():
            m = m.astype(bool)
        else:
            raise ValueError(f"{name}: maximize must be a bool or a sequence of {T} bools, got {maximize!r}")
    if m.ndim == 0:
        m = np.full(T, bool(m))
    if m.shape != (T,):
        raise ValueError(f"{name}: maximize must be a bool or a sequence of {T} bools, got shape {m.shape}")
    return np.where(m, 1.0, -1.0)


def _orient(X: np.ndarray, maximize, name: str) -> np.ndarray:
    sign = _signs(maximize, X.shape[-2], name)
    return X if (sign > 0).all() else X * sign[:, None]


def _kinds(preference: str | Sequence[str], T: int) -> np.ndarray:
    """Preference-function codes per criterion, shape (T,)."""
    names = [preference] * T if isinstance(preference, str) else list(preference)
    if len(names) != T:
        raise ValueError(f"promethee2: expected one preference function per criterion ({T}), got {len(names)}")
    codes = []
    for n in names:
        key = str(n).strip().lower().replace("-", "_").replace(" ", "_")
        if key not in _ALIASES:
            raise ValueError(
                f"promethee2: unknown preference function {n!r}; choose from {', '.join(PREFERENCE_FUNCTIONS)} "
                "(aliases: ushape, linear = vshape, vshape_2)"
            )
        codes.append(_ALIASES[key])
    return np.array(codes, dtype=np.intp)


def _param(value, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A threshold given as None, a scalar or per criterion ((T,) or (..., T)), as a float array of ``shape``."""
    if value is None:
        return np.full(shape, np.nan)
    v = np.asarray(value, dtype=np.float64)
    if v.ndim > 0 and v.shape[-1] != shape[-1]:
        raise ValueError(f"promethee2: {name} must be a scalar or have one value per criterion, got shape {v.shape}")
    if np.isinf(v).any():
        raise ValueError(f"promethee2: {name} must be finite")
    try:
        return np.broadcast_to(v, shape).copy()
    except ValueError:
        raise ValueError(f"promethee2: {name} of shape {v.shape} does not broadcast to {shape}") from None


def _resolve_parameters(Xo: np.ndarray, kinds: np.ndarray, q, p, s) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Thresholds per (batch..., criterion) with the xLLMBench defaults filled in (see module docstring).

    Entries a criterion's function does not use are NaN.
    """
    shape = Xo.shape[:-1]
    q_in, p_in, s_in = _param(q, "q", shape), _param(p, "p", shape), _param(s, "s", shape)
    rng = Xo.max(axis=-1) - Xo.min(axis=-1)  # = max of the pairwise differences (exactly, rounding is monotone)
    kq = np.full(shape, np.nan)
    kp = np.full(shape, np.nan)
    ks = np.full(shape, np.nan)

    def pick(given, default, mask):
        out = given[..., mask]
        if default is not None:
            out = np.where(np.isnan(out), default[..., mask], out)
        return out

    for code, label in ((_QUASI, "quasi"), (_LEVEL, "level")):
        m = kinds == code
        if m.any():
            kq[..., m] = q_in[..., m]
            if code == _LEVEL:
                kp[..., m] = p_in[..., m]
            need = np.isnan(kq[..., m]) | (np.isnan(kp[..., m]) if code == _LEVEL else False)
            if np.any(need):
                crit = int(np.flatnonzero(m)[np.nonzero(need)[-1][0]])
                what = "threshold q" if code == _QUASI else "thresholds q and p"
                raise ValueError(
                    f"promethee2: preference function {label!r} (criterion {crit}) needs its {what}; "
                    "xLLMBench defines data-driven defaults only for linear and gaussian"
                )
    m = kinds == _VSHAPE
    if m.any():
        kq[..., m] = 0.0
        kp[..., m] = pick(p_in, rng, m)
    m = kinds == _LINEAR
    if m.any():
        kq[..., m] = pick(q_in, -rng, m)
        kp[..., m] = pick(p_in, rng, m)
    m = kinds == _GAUSSIAN
    if m.any():
        ks[..., m] = pick(s_in, np.sqrt(2.0 * Xo.var(axis=-1)), m)
        if (ks[..., m] < 0).any():
            raise ValueError("promethee2: the Gaussian parameter s must be >= 0")
    both = (kinds == _LEVEL) | (kinds == _LINEAR) | (kinds == _VSHAPE)
    if both.any() and (kp[..., both] < kq[..., both]).any():
        raise ValueError("promethee2: thresholds must satisfy q <= p (and p >= 0 for the V-shape)")
    return kq, kp, ks


# ---------------------------------------------------------------------------------------------
# fast flow sums on sorted rows
# ---------------------------------------------------------------------------------------------
def _merge_count(Y: np.ndarray, Z: np.ndarray, side: str) -> np.ndarray:
    """Row-wise ``searchsorted``: for sorted rows ``Y`` (R, S) and sorted rows ``Z`` (R, Q), the number of
    ``y < z`` (``side='left'``) or ``y <= z`` (``side='right'``) for every ``z``.

    One stable sort of the concatenated rows; both halves are sorted runs, so it is a linear merge.
    """
    R, S = Y.shape
    Q = Z.shape[1]
    if side == "left":  # on ties the query sorts first
        comb = np.concatenate([Z, Y], axis=1)
        is_data = np.argsort(comb, axis=1, kind="stable") >= Q
    else:  # on ties the data sort first
        comb = np.concatenate([Y, Z], axis=1)
        is_data = np.argsort(comb, axis=1, kind="stable") < S
    before = np.cumsum(is_data, axis=1)
    return before[~is_data].reshape(R, Q)


def _fix_prefix(Y, k, t, first, last):
    """Move ``k`` so that it is the number of ``b`` with ``fl(y_i - y_b) > t`` (a prefix of the sorted row)."""
    S = Y.shape[1]
    for _ in range(S + 1):
        kc = np.minimum(k, S - 1)
        up = (k < S) & ((Y - np.take_along_axis(Y, kc, axis=1)) > t)
        kd = np.maximum(k - 1, 0)
        down = (k > 0) & ~((Y - np.take_along_axis(Y, kd, axis=1)) > t)
        if not (up.any() or down.any()):
            break
        k_down = np.where(down, np.take_along_axis(first, kd, axis=1), k)
        k = np.where(up, np.take_along_axis(last, kc, axis=1) + 1, k_down)
    return k


def _fix_suffix(Y, j, t, first, last):
    """Move ``j`` so that positions ``>= j`` are exactly the ``b`` with ``fl(y_b - y_i) > t``."""
    S = Y.shape[1]
    for _ in range(S + 1):
        jd = np.maximum(j - 1, 0)
        down = (j > 0) & ((np.take_along_axis(Y, jd, axis=1) - Y) > t)
        jc = np.minimum(j, S - 1)
        up = (j < S) & ~((np.take_along_axis(Y, jc, axis=1) - Y) > t)
        if not (up.any() or down.any()):
            break
        j_up = np.where(up, np.take_along_axis(last, jc, axis=1) + 1, j)
        j = np.where(down, np.take_along_axis(first, jd, axis=1), j_up)
    return j


def _step_sums(Y, first, last, t):
    """``sum_b [d(i, b) > t]`` and ``sum_b [d(b, i) > t]`` for sorted rows ``Y`` (R, S), thresholds ``t`` (R,)."""
    S = Y.shape[1]
    plus = np.empty(Y.shape)
    minus = np.empty(Y.shape)
    zero = t == 0
    if zero.any():  # exact: fl(x - y) > 0 iff x > y
        plus[zero] = first[zero]
        minus[zero] = S - 1 - last[zero]
    nz = ~zero
    if nz.any():
        Yn, fn, ln = Y[nz], first[nz], last[nz]
        tt = t[nz][:, None]
        k = _fix_prefix(Yn, _merge_count(Yn, Yn - tt, "left"), tt, fn, ln)
        j = _fix_suffix(Yn, _merge_count(Yn, Yn + tt, "right"), tt, fn, ln)
        plus[nz] = k
        minus[nz] = S - j
    return plus, minus


def _linear_sums(Y, q, p):
    """Flow sums of ``P(d) = clip((d - q) / (p - q), 0, 1)`` (q < p) for sorted rows ``Y`` (R, S).

    Saturated part by counts, linear part by sorted prefix sums.  The boundaries need no exact
    treatment because ``P`` is continuous there.
    """
    R, S = Y.shape
    Yc = Y - Y[:, S // 2 : S // 2 + 1]  # centred: smaller prefix sums, less cancellation
    cs = np.zeros((R, S + 1))
    np.cumsum(Yc, axis=1, out=cs[:, 1:])
    qq, pp = q[:, None], p[:, None]
    den = pp - qq

    def seg_sum(lo, hi):
        return np.take_along_axis(cs, hi, axis=1) - np.take_along_axis(cs, lo, axis=1)

    # P(d(i, b)): b with y_b < y_i - p give 1; y_i - p <= y_b < y_i - q give (y_i - q - y_b) / (p - q)
    lo = _merge_count(Yc, Yc - pp, "left")
    hi = _merge_count(Yc, Yc - qq, "left")
    plus = lo + ((hi - lo) * (Yc - qq) - seg_sum(lo, hi)) / den
    # P(d(b, i)): b with y_b > y_i + p give 1; y_i + q < y_b <= y_i + p give (y_b - y_i - q) / (p - q)
    lo = _merge_count(Yc, Yc + qq, "right")
    hi = _merge_count(Yc, Yc + pp, "right")
    minus = (S - hi) + (seg_sum(lo, hi) - (hi - lo) * (Yc + qq)) / den
    return plus, minus


def _band_esums(vals, cnt, kfac, lo, block):
    """Exact near-field sums of ``E_ij = exp(-kfac (v_i - v_j)^2)`` over the band ``lo_i <= j < i``.

    ``vals`` (R, U) are sorted distinct values (padding: the row's last value with count 0),
    ``cnt`` their multiplicities, ``lo`` (R, U) the first column of each row's band.  Returns
    ``below[i] = sum_{lo_i <= j < i} cnt_j E_ij`` and ``above[j] = sum_{i: lo_i <= j < i} cnt_i E_ij``.
    Rectangular blocks of at most ``block`` pairwise values.
    """
    R, U = vals.shape
    below = np.zeros((R, U))
    above = np.zeros((R, U))
    negk = -kfac[:, None, None]
    pos = np.arange(U)
    lo_min = np.minimum.accumulate(lo.min(axis=0)[::-1])[::-1]  # min over rows and over i' >= i
    i0 = 0
    while i0 < U:
        # rows i0..i1-1 against columns j0..i1-1, at most `block` values: R n (n + a) <= block
        j0 = int(lo_min[i0])
        a = i0 - j0
        n = int((np.sqrt(a * a + 4.0 * block / R) - a) // 2)
        i1 = min(U, i0 + max(1, n))
        E = vals[:, i0:i1, None] - vals[:, None, j0:i1]
        np.multiply(E, E, out=E)
        np.multiply(E, negk, out=E)
        np.exp(E, out=E)
        jj = pos[None, None, j0:i1]
        E *= (jj >= lo[:, i0:i1, None]) & (jj < pos[None, i0:i1, None])
        below[:, i0:i1] += np.matmul(E, cnt[:, j0:i1, None])[..., 0]
        above[:, j0:i1] += np.matmul(cnt[:, None, i0:i1], E)[:, 0, :]
        i0 = i1
    return below, above


def _fgt_far(z, c, box, block):
    """Far-field Gaussian sums by a factorised, truncated expansion (a one-dimensional fast Gauss transform).

    ``z`` (U,) sorted distinct values scaled so that the kernel is ``exp(-(z_i - z_j)^2)``, ``c`` their
    counts, ``box`` the index of the grid cell of width ``h`` holding each value.  For ``x`` in cell
    ``X`` and ``y`` in cell ``Y = X + d`` (``d >= 1``), with offsets ``xi = x - centre_X`` and
    ``eta = y - centre_Y`` (``|xi|, |eta| <= h/2``)::

        exp(-(y - x)^2) = exp(-(h d)^2) * A_d(x) * B_d(y) * exp(2 xi eta),
        A_d(x) = exp(-xi^2 + 2 h d xi),  B_d(y) = exp(-eta^2 - 2 h d eta),

    which is exact; only ``exp(2 xi eta)`` is replaced by ``P`` Taylor terms, with
    ``|2 xi eta| <= h^2 / 2`` so the error per pair is below ``e^(h^2) (h^2/2)^P / P!``
    (< 1e-17 for h = 0.2, P = 8).  Cells more than ``D`` apart (distance > 6.12) have
    ``exp(-d^2) < 6e-17`` and are left out.  Returns ``below[i] = sum over cells 1..D below`` and
    ``above[i] = sum over cells 1..D above`` of ``c_j exp(-(z_i - z_j)^2)``; same-cell pairs are
    the near field (:func:`_band_esums`).  Cost O(U D P) instead of O(U^2).
    """
    U = z.size
    h, P, Dmax = _FGT_H, _FGT_P, _FGT_D
    xi = z - (z[0] + (box + 0.5) * h)
    x2 = xi * xi
    powers = np.arange(P)
    cmT = c[None, :] * xi[None, :] ** powers[:, None]  # c_x xi^m, (P, U)
    fact = np.cumprod(np.r_[1.0, np.arange(1.0, P)])
    taylor = (2.0 * xi)[:, None] ** powers / fact  # (2 xi)^m / m!, (U, P)
    starts = np.flatnonzero(np.r_[True, box[1:] != box[:-1]])
    occ = box[starts]
    n_occ = occ.size
    cell_of = np.repeat(np.arange(n_occ), np.diff(np.r_[starts, U]))
    below = np.zeros(U)
    above = np.zeros(U)
    nd = int(max(1, min(Dmax, block // max(1, U * P))))
    for d0 in range(1, Dmax + 1, nd):
        ds = np.arange(d0, min(Dmax, d0 + nd - 1) + 1)
        drow = np.arange(ds.size)[:, None]
        ed = np.exp(-((h * ds) ** 2))[:, None, None]
        shift = np.outer(2.0 * h * ds, xi)
        A = np.exp(-x2[None, :] + shift)  # A_d(x), (nd, U)
        B = np.exp(-x2[None, :] - shift)  # B_d(y)
        for sign, src, F, out in ((-1, A, B, below), (1, B, A, above)):
            # moments of every occupied cell: sum_x c_x src_d(x) xi^m, (nd, P, n_occ)
            W = np.add.reduceat(src[:, None, :] * cmT[None, :, :], starts, axis=2)
            # the partner cell (d below / above) of every occupied cell, (nd, n_occ, P)
            partner = occ[None, :] + sign * ds[:, None]
            k = np.minimum(np.searchsorted(occ, partner), n_occ - 1)
            V = W[drow, :, k] * (occ[k] == partner)[:, :, None] * ed
            S_m = np.einsum("dup,up->du", np.take(V, cell_of, axis=1), taylor)
            out += np.einsum("du,du->u", S_m, F)
    return below, above


def _gauss_distinct(vals, cnt, n_distinct, kfac, block):
    """Gaussian flow sums over sorted distinct values (R, U) with multiplicities ``cnt``.

    ``plus[i] = sum_{j<i} cnt_j G(v_i - v_j)`` and ``minus[j] = sum_{i>j} cnt_i G(v_i - v_j)`` with
    ``G(d) = 1 - exp(-kfac d^2)``, as counts minus sums of ``E = exp(-kfac d^2)``: exact pairwise
    blocks for pairs closer than the cutoff (``kfac d^2 <= 37.5``; beyond it ``E < 6e-17`` is
    dropped), except in rows with many distinct values, where only pairs in the same grid cell are
    pairwise and the rest come from :func:`_fgt_far`.
    """
    R, U = vals.shape
    ccum = np.zeros((R, U + 1))
    np.cumsum(cnt, axis=1, out=ccum[:, 1:])
    z = (vals - vals[:, U // 2 : U // 2 + 1]) * np.sqrt(kfac)[:, None]  # centred: small offsets
    zcut = np.sqrt(_GAUSS_CUT)
    lo = _merge_count(z, z - zcut, "left")  # first column within the cutoff
    far_below = np.zeros((R, U))
    far_above = np.zeros((R, U))
    cost_pair, cost_far = 12.0, 3.0  # rough ns per pairwise exponential / per expansion term
    for r in np.flatnonzero(n_distinct >= _FGT_MIN):
        u = int(n_distinct[r])
        zr = z[r, :u]
        span = (zr[-1] - zr[0]) / _FGT_H
        if not (span < 4.0 * u and max(-zr[0], zr[-1]) <= _FGT_ZMAX):  # sparse grid: the band is cheap anyway
            continue
        box = np.floor((zr - zr[0]) / _FGT_H).astype(np.intp)
        starts = np.flatnonzero(np.r_[True, box[1:] != box[:-1]])
        sizes = np.diff(np.r_[starts, u])
        near = float(np.sum(sizes * (sizes - 1.0))) / 2.0
        band = float(np.sum(np.arange(u) - lo[r, :u]))
        if not _FGT_FORCE and cost_pair * near + cost_far * 2.0 * u * _FGT_D * _FGT_P >= cost_pair * band:
            continue
        lo[r, :u] = np.repeat(starts, sizes)  # pairwise only inside the cell
        far_below[r, :u], far_above[r, :u] = _fgt_far(zr, cnt[r, :u], box, block)
    below, above = _band_esums(vals, cnt, kfac, lo, block)
    plus = ccum[:, :-1] - (below + far_below)
    minus = (ccum[:, -1:] - ccum[:, 1:]) - (above + far_above)
    return plus, minus


def _gauss_sums(Y, s, block):
    """Gaussian flow sums for sorted rows ``Y`` (R, S) with spreads ``s`` (R,) > 0."""
    R, S = Y.shape
    new = np.ones(Y.shape, dtype=bool)
    np.not_equal(Y[:, 1:], Y[:, :-1], out=new[:, 1:])
    uid = np.cumsum(new, axis=1) - 1  # index of each value among the row's distinct values
    U = uid[:, -1] + 1
    kfac = 1.0 / (2.0 * s * s)
    plus = np.empty(Y.shape)
    minus = np.empty(Y.shape)
    # rows in chunks of similar numbers of distinct values (little padding), few rows when U is large
    by_u = np.argsort(-U, kind="stable")
    start = 0
    while start < R:
        u0 = int(U[by_u[start]])
        max_rows = max(1, block // (u0 * u0))
        stop = start + 1
        while stop < R and stop - start < max_rows and U[by_u[stop]] * 4 >= u0 * 3:
            stop += 1
        rows = by_u[start:stop]
        start = stop
        Yr, ur, nr = Y[rows], uid[rows], len(rows)
        vals = np.repeat(Yr[:, -1:], u0, axis=1)
        r_idx, c_idx = np.nonzero(new[rows])
        vals[r_idx, ur[r_idx, c_idx]] = Yr[r_idx, c_idx]
        flat = (np.arange(nr)[:, None] * u0 + ur).ravel()
        cnt = np.bincount(flat, minlength=nr * u0).reshape(nr, u0).astype(np.float64)
        pu, mu = _gauss_distinct(vals, cnt, U[rows], kfac[rows], block)
        plus[rows] = np.take_along_axis(pu, ur, axis=1)
        minus[rows] = np.take_along_axis(mu, ur, axis=1)
    return plus, minus


def _criterion_sums(Xo, kinds, q, p, s, block):
    """Unnormalised per-criterion flow sums ``sum_b P_c(d(a, b))`` and ``sum_b P_c(d(b, a))``, (..., T, S).

    Every (batch, criterion) row is independent; rows are processed in chunks of about
    ``_ROW_CHUNK`` values so that the sort and merge work arrays stay small for large batches.
    """
    shape = Xo.shape
    S = shape[-1]
    X2 = Xo.reshape(-1, S)
    R = X2.shape[0]
    kind = np.broadcast_to(kinds, shape[:-1]).reshape(R)
    q, p, s = (np.asarray(v).reshape(R) for v in (q, p, s))
    out_p = np.empty((R, S))
    out_m = np.empty((R, S))
    step_rows = max(1, _ROW_CHUNK // S)
    for r0 in range(0, R, step_rows):
        rows = slice(r0, min(R, r0 + step_rows))
        out_p[rows], out_m[rows] = _row_sums(X2[rows], kind[rows], q[rows], p[rows], s[rows], block)
    return out_p.reshape(shape), out_m.reshape(shape)


def _row_sums(X2, kind, q, p, s, block):
    """Flow sums of independent rows ``X2`` (R, S), each with its own function code and parameters."""
    R, S = X2.shape
    order = np.argsort(X2, axis=1)
    Y = np.take_along_axis(X2, order, axis=1)
    first, last = tie_groups(Y)
    plus = np.zeros((R, S))
    minus = np.zeros((R, S))

    # step functions: usual, quasi, level (first step), degenerate V-shape / linear / Gaussian
    lin_deg = ((kind == _VSHAPE) | (kind == _LINEAR)) & (p == q)
    gauss_deg = (kind == _GAUSSIAN) & (s == 0)
    step = (kind == _USUAL) | (kind == _QUASI) | (kind == _LEVEL) | lin_deg | gauss_deg
    if step.any():
        t = np.where((kind[step] == _USUAL) | gauss_deg[step], 0.0, q[step])
        level = np.where(kind[step] == _LEVEL, 0.5, 1.0)[:, None]
        a, b = _step_sums(Y[step], first[step], last[step], t)
        plus[step] += level * a
        minus[step] += level * b
    lev = kind == _LEVEL  # second step of the level function
    if lev.any():
        a, b = _step_sums(Y[lev], first[lev], last[lev], p[lev])
        plus[lev] += 0.5 * a
        minus[lev] += 0.5 * b
    lin = ((kind == _VSHAPE) | (kind == _LINEAR)) & ~lin_deg
    if lin.any():
        a, b = _linear_sums(Y[lin], q[lin], p[lin])
        plus[lin] += a
        minus[lin] += b
    gau = (kind == _GAUSSIAN) & ~gauss_deg
    if gau.any():
        a, b = _gauss_sums(Y[gau], s[gau], block)
        plus[gau] += a
        minus[gau] += b

    out_p = np.empty((R, S))
    out_m = np.empty((R, S))
    np.put_along_axis(out_p, order, plus, axis=1)
    np.put_along_axis(out_m, order, minus, axis=1)
    return out_p, out_m


# ---------------------------------------------------------------------------------------------
# PROMETHEE II
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrometheeSetup:
    """Validated PROMETHEE II inputs: oriented criteria, normalised weights, preference codes and resolved thresholds.

    ``uses_q``, ``uses_p``, ``uses_s`` and ``vshape`` tell, per criterion, which thresholds its function
    takes (for callers that vary them, e.g. :func:`engine.labelled.robustness.promethee_sensitivity`).
    """

    X: np.ndarray
    weights: np.ndarray
    kinds: np.ndarray
    q: np.ndarray
    p: np.ndarray
    s: np.ndarray

    @property
    def uses_q(self) -> np.ndarray:
        return np.isin(self.kinds, [_QUASI, _LEVEL, _LINEAR])

    @property
    def uses_p(self) -> np.ndarray:
        return np.isin(self.kinds, [_VSHAPE, _LEVEL, _LINEAR])

    @property
    def uses_s(self) -> np.ndarray:
        return self.kinds == _GAUSSIAN

    @property
    def vshape(self) -> np.ndarray:
        return self.kinds == _VSHAPE


def promethee_setup(X: np.ndarray, *, weights: np.ndarray | None = None, preference: str | Sequence[str] = "usual",
                    q: Any = None, p: Any = None, s: Any = None, maximize: Any = True) -> PrometheeSetup:
    """Validate PROMETHEE II inputs as :func:`promethee2` does and resolve the xLLMBench default thresholds.

    Raises ``ValueError`` as :func:`promethee2`.
    """
    Xo, w, kinds, kq, kp, ks = _setup(X, weights, preference, q, p, s, maximize)
    return PrometheeSetup(Xo, w, kinds, kq, kp, ks)


def _setup(X, weights, preference, q, p, s, maximize):
    X = _matrix(X, "promethee2")
    w = _weights(weights, X, "promethee2")
    kinds = _kinds(preference, X.shape[-2])
    Xo = _orient(X, maximize, "promethee2")
    if Xo.shape[-1] == 0:
        return Xo, w, kinds, None, None, None
    Xo, e = tame(Xo)
    if e is not None:  # thresholds are in the units of the criterion: rescale them alike
        q, p, s = (None if v is None else np.ldexp(_param(v, n, e.shape), -e) for v, n in ((q, "q"), (p, "p"), (s, "s")))
    kq, kp, ks = _resolve_parameters(Xo, kinds, q, p, s)
    return Xo, w, kinds, kq, kp, ks


def promethee2(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    preference: str | Sequence[str] = "usual",
    q: float | Sequence[float] | np.ndarray | None = None,
    p: float | Sequence[float] | np.ndarray | None = None,
    s: float | Sequence[float] | np.ndarray | None = None,
    maximize: bool | Sequence[bool] | np.ndarray = True,
    block: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PROMETHEE II positive, negative and net outranking flows (xLLMBench section 3.2, Eqs. 1-4).

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Scores of S alternatives (systems, last axis) on T criteria; leading axes are batch axes.
        Must be complete (no ``NaN``) and finite.
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative criterion weights, normalised to sum 1 (default: equal, xLLMBench Eq. 8).
    preference : str or sequence of T str
        Generalised preference function, one for all criteria or one per criterion:
        ``usual``, ``quasi`` (``ushape``), ``vshape`` (``linear``), ``level``,
        ``linear_indifference`` (``vshape_2``; xLLMBench's "linear" with its defaults) or
        ``gaussian``; see the module docstring for the definitions.
    q, p, s : float or array_like (T,) or (..., T), optional
        Indifference threshold ``q``, preference threshold ``p`` and Gaussian spread ``s``, in the
        units of the (oriented) criterion.  ``None`` or a ``NaN`` entry takes the xLLMBench
        default of that criterion (module docstring); entries a criterion's function does not use
        are ignored.  Requirements: ``q <= p`` (level, linear with indifference), ``p >= 0``
        (V-shape), ``s >= 0``.
    maximize : bool or sequence of T bool
        Whether each criterion is maximised (default) or minimised (xLLMBench Eq. 1).
    block : int, optional
        Maximum number of pairwise float64 values held at once by the Gaussian path
        (default 2**16, i.e. 512 kB per work array: cache-sized).

    Returns
    -------
    phi_plus, phi_minus, phi_net : ndarray, shape (..., S)
        ``phi+ = 1/(S-1) sum_b pi(a, b)``, ``phi- = 1/(S-1) sum_b pi(b, a)``, ``phi = phi+ - phi-``
        (higher is better); all 0 for a single alternative.

    Raises
    ------
    ValueError
        ``NaN`` or infinite scores, bad weights, unknown preference function, missing or
        inconsistent thresholds.

    Notes
    -----
    Equal values on a criterion compare as ``d = 0``.  Systems with identical scores on every
    criterion receive identical flows.  Cost O(T S log S) for the step and linear functions; the
    Gaussian's pairwise work arrays never exceed ``block`` values (module docstring).

    Examples
    --------
    Zhao, Peng & Li (2013), Procedia Computer Science 17:181-188 (also the pymcdm test case):
    three alternatives, usual criterion, weights 0.5, 0.3, 0.2.

    >>> X = np.array([[4, 3, 5], [3, 2, 1], [2, 4, 3]])   # criteria x alternatives
    >>> plus, minus, net = promethee2(X, weights=[0.5, 0.3, 0.2])
    >>> np.round(plus, 2), np.round(minus, 2), np.round(net, 2)
    (array([0.55, 0.35, 0.6 ]), array([0.45, 0.65, 0.4 ]), array([ 0.1, -0.3,  0.2]))
    """
    Xo, w, kinds, kq, kp, ks = _setup(X, weights, preference, q, p, s, maximize)
    S = Xo.shape[-1]
    if S < 2:  # nothing to compare with
        z = np.zeros(Xo.shape[:-2] + (S,))
        return z, z.copy(), z.copy()
    blk = _GAUSS_BLOCK if block is None else int(block)
    if blk < 1:
        raise ValueError("promethee2: block must be a positive number of pairwise values")
    Fp, Fm = _criterion_sums(Xo, kinds, kq, kp, ks, blk)
    # counts (usual, quasi) and halves (level) with simple-fraction weights: whole-number numerators and
    # one division, so flows equal as rational numbers are bitwise equal; other functions: criteria in order
    raw = None if weights is None else np.broadcast_to(np.asarray(weights, dtype=np.float64), w.shape)
    phi_plus = weighted_task_mean(Fp, raw, extra=S - 1)
    phi_minus = weighted_task_mean(Fm, raw, extra=S - 1)
    return phi_plus, phi_minus, weighted_task_mean(Fp - Fm, raw, extra=S - 1)


def promethee2_net(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    preference: str | Sequence[str] = "usual",
    q: Any = None,
    p: Any = None,
    s: Any = None,
    maximize: Any = True,
    block: int | None = None,
) -> np.ndarray:
    """PROMETHEE II net flow ``phi = phi+ - phi-`` (higher is better), for the rule registry.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Complete scores (criteria x systems).
    weights : array_like, shape (T,) or (..., T), optional
        Criterion weights (normalised to sum 1).
    preference, q, p, s, maximize, block
        As in :func:`promethee2`.

    Returns
    -------
    ndarray, shape (..., S)
        The net outranking flow (xLLMBench Eq. 4), in [-1, 1].
    """
    return promethee2(X, weights=weights, preference=preference, q=q, p=p, s=s, maximize=maximize, block=block)[2]


def promethee2_rank(X: np.ndarray, *, weights: np.ndarray | None = None, **options) -> np.ndarray:
    """PROMETHEE II complete ranking: 1 + number of systems with a strictly larger net flow.

    Equal net flows share the best rank (systems with identical scores always tie; two different
    score vectors with mathematically equal flows may be split by rounding).

    Returns
    -------
    ndarray, shape (..., S)
        Ranks as float64 (1 = best).
    """
    return min_rank(promethee2_net(X, weights=weights, **options))


def _preference(kind: int, d: np.ndarray, q, p, s) -> np.ndarray:
    """The generalised preference function ``kind`` applied to differences ``d`` (definitions above)."""
    if kind == _USUAL:
        return (d > 0).astype(np.float64)
    if kind == _QUASI:
        return (d > q).astype(np.float64)
    if kind == _LEVEL:
        return np.where(d > p, 1.0, np.where(d > q, 0.5, 0.0))
    if kind in (_VSHAPE, _LINEAR):
        with np.errstate(divide="ignore", invalid="ignore"):
            lin = (d - q) / (p - q)
        return np.where(d > p, 1.0, np.where(d > q, lin, 0.0))
    if kind == _GAUSSIAN:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            g = 1.0 - np.exp(-(d * d) / (2.0 * s * s))
        return np.where(d > 0, np.where(s > 0, g, 1.0), 0.0)
    raise AssertionError(kind)  # pragma: no cover


def _promethee2_reference(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    preference: str | Sequence[str] = "usual",
    q=None,
    p=None,
    s=None,
    maximize=True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Straightforward O(T S^2) PROMETHEE II: the full (..., T, S, S) preference tensor.

    Same arguments, defaults and results as :func:`promethee2`; kept as the definition the fast
    paths are tested against and as the "plain numpy" baseline of the benchmark.
    """
    Xo, w, kinds, kq, kp, ks = _setup(X, weights, preference, q, p, s, maximize)
    S = Xo.shape[-1]
    if S < 2:
        z = np.zeros(Xo.shape[:-2] + (S,))
        return z, z.copy(), z.copy()
    D = Xo[..., :, :, None] - Xo[..., :, None, :]  # d_c(a, b), (..., T, S, S)
    pi = np.zeros(Xo.shape[:-2] + (S, S))
    for c, kind in enumerate(kinds):
        par = [v[..., c, None, None] for v in (kq, kp, ks)]
        pi += w[..., c, None, None] * _preference(int(kind), D[..., c, :, :], *par)
    phi_plus = pi.sum(axis=-1) / (S - 1)
    phi_minus = pi.sum(axis=-2) / (S - 1)
    return phi_plus, phi_minus, phi_plus - phi_minus


# ---------------------------------------------------------------------------------------------
# TOPSIS and VIKOR (xLLMBench Appendix C)
# ---------------------------------------------------------------------------------------------
def topsis(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    maximize: bool | Sequence[bool] | np.ndarray = True,
) -> np.ndarray:
    """TOPSIS relative closeness to the ideal solution, with min-max normalisation (xLLMBench Appendix C).

    Hwang & Yoon (1981): on the oriented criteria, ``r = (x - min) / (max - min)`` per criterion over
    the systems (a constant criterion gets ``r = 1``, as in pymcdm, and then contributes nothing),
    ``v = w r`` with weights normalised to sum 1, ideal ``v+ = max_a v``, anti-ideal ``v- = min_a v``,
    ``D+ = ||v - v+||_2``, ``D- = ||v - v-||_2`` over the criteria and closeness ``C = D- / (D+ + D-)``.
    xLLMBench runs pymcdm's TOPSIS with this normalisation.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Complete scores (criteria x systems).
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative criterion weights (default equal).
    maximize : bool or sequence of T bool
        Profit (True) or cost (False) criteria.

    Returns
    -------
    ndarray, shape (..., S)
        Closeness in [0, 1], higher is better; 0.5 for every system when all systems are
        identical on every weighted criterion (``D+ = D- = 0``).

    Examples
    --------
    The data of Opricovic & Tzeng (2004), EJOR 156:445-455 (criterion 1 a cost):

    >>> X = np.array([[1.0, 2.0, 5.0], [3000.0, 3750.0, 4500.0]])
    >>> np.round(topsis(X, weights=[0.5, 0.5], maximize=[False, True]), 3)
    array([0.5  , 0.617, 0.5  ])
    """
    X, _ = tame(_orient(_matrix(X, "topsis"), maximize, "topsis"))
    w = _weights(weights, X, "topsis")[..., None]
    lo = X.min(axis=-1, keepdims=True)
    span = X.max(axis=-1, keepdims=True) - lo
    const = span == 0
    r = np.where(const, 1.0, (X - lo) / np.where(const, 1.0, span))
    v = w * r
    d_plus = np.sqrt(ordered_sum((v - v.max(axis=-1, keepdims=True)) ** 2, axis=-2))
    d_minus = np.sqrt(ordered_sum((v - v.min(axis=-1, keepdims=True)) ** 2, axis=-2))
    tot = d_plus + d_minus
    return np.where(tot > 0, d_minus / np.where(tot > 0, tot, 1.0), 0.5)


def vikor(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    v: float = 0.5,
    maximize: bool | Sequence[bool] | np.ndarray = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """VIKOR group utility S, individual regret R and compromise index Q (xLLMBench Appendix C).

    Opricovic (1998) / Opricovic & Tzeng (2004): on the oriented criteria, best ``f* = max_a x``,
    worst ``f- = min_a x``; ``S_a = sum_c w_c (f*_c - x_ac) / (f*_c - f-_c)``, ``R_a = max_c`` of the
    same terms, and ``Q_a = v (S_a - S*) / (S- - S*) + (1 - v) (R_a - R*) / (R- - R*)`` with
    ``S* = min S``, ``S- = max S`` (same for R).  No further normalisation (as pymcdm's VIKOR used by
    xLLMBench with ``v = 0.5``).  A constant criterion contributes 0 (pymcdm raises instead), and a
    ratio with a zero denominator (all S, or all R, equal) is taken as 0.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Complete scores (criteria x systems).
    weights : array_like, shape (T,) or (..., T), optional
        Non-negative criterion weights, normalised to sum 1 (default equal).
    v : float
        Weight of the group-utility strategy, 0 <= v <= 1 (default 0.5).
    maximize : bool or sequence of T bool
        Profit (True) or cost (False) criteria.

    Returns
    -------
    S, R, Q : ndarray, shape (..., S)
        LOWER is better for all three (use :func:`vikor_score` for a higher-is-better score).

    Examples
    --------
    Opricovic & Tzeng (2004), EJOR 156:445-455: the compromise solution is the second alternative.

    >>> X = np.array([[1.0, 2.0, 5.0], [3000.0, 3750.0, 4500.0]])
    >>> Sv, Rv, Qv = vikor(X, weights=[0.5, 0.5], maximize=[False, True])
    >>> Sv, Rv, Qv
    (array([0.5  , 0.375, 0.5  ]), array([0.5 , 0.25, 0.5 ]), array([1., 0., 1.]))
    """
    if not (0.0 <= float(v) <= 1.0):
        raise ValueError(f"vikor: v must lie in [0, 1], got {v}")
    X, _ = tame(_orient(_matrix(X, "vikor"), maximize, "vikor"))
    w = _weights(weights, X, "vikor")[..., None]
    best = X.max(axis=-1, keepdims=True)
    span = best - X.min(axis=-1, keepdims=True)
    const = span == 0
    terms = w * np.where(const, 0.0, (best - X) / np.where(const, 1.0, span))
    S_ = ordered_sum(terms, axis=-2)
    R_ = terms.max(axis=-2)

    def ratio(a):
        lo = a.min(axis=-1, keepdims=True)
        den = a.max(axis=-1, keepdims=True) - lo
        return np.where(den > 0, (a - lo) / np.where(den > 0, den, 1.0), 0.0)

    Q = float(v) * ratio(S_) + (1.0 - float(v)) * ratio(R_)
    return S_, R_, Q


def vikor_score(
    X: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    v: float = 0.5,
    maximize: bool | Sequence[bool] | np.ndarray = True,
) -> np.ndarray:
    """``-Q`` of :func:`vikor` (higher is better), for the rule registry.

    Returns
    -------
    ndarray, shape (..., S)
        Minus the VIKOR compromise index, in [-1, 0].
    """
    return -vikor(X, weights=weights, v=v, maximize=maximize)[2]


# ---------------------------------------------------------------------------------------------
# criteria weights (xLLMBench section 4.4 and Appendix D)
# ---------------------------------------------------------------------------------------------
def equal_weights(T: int) -> np.ndarray:
    """Equal criterion weights ``w_j = 1/n`` (xLLMBench Eq. 8).

    >>> equal_weights(4)
    array([0.25, 0.25, 0.25, 0.25])
    """
    T = int(T)
    if T < 1:
        raise ValueError("equal_weights: need at least one criterion")
    return np.full(T, 1.0 / T)


def entropy_weights(X: np.ndarray) -> np.ndarray:
    """Entropy weights (xLLMBench section 4.4, method (2); Hwang & Yoon 1981; Zeleny 1982).

    ``p_cs = x_cs / sum_s x_cs``, ``E_c = -sum_s p_cs ln p_cs / ln S`` (with ``0 ln 0 = 0``),
    ``w_c = (1 - E_c) / sum_c (1 - E_c)``: criteria whose values are spread unevenly over the
    systems weigh more.  (pymcdm sets the entropy of a criterion with a zero entry to 0 instead; the
    two agree on strictly positive data.)

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Non-negative scores (criteria x systems), each criterion with a positive sum; S >= 2.

    Returns
    -------
    ndarray, shape (..., T)
        Weights summing to 1; equal weights if every criterion has maximal entropy (all uniform).
    """
    X = _matrix(X, "entropy_weights")
    S = X.shape[-1]
    if S < 2:
        raise ValueError("entropy_weights: need at least two systems")
    if (X < 0).any():
        raise ValueError("entropy_weights: scores must be non-negative")
    tot = X.sum(axis=-1, keepdims=True)
    if (tot <= 0).any():
        raise ValueError("entropy_weights: a criterion has only zero scores")
    P = X / tot
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0)
    E = -plogp.sum(axis=-1) / np.log(S)
    d = np.clip(1.0 - E, 0.0, None)
    return _normalise_or_equal(d)


def std_weights(X: np.ndarray) -> np.ndarray:
    """Standard-deviation weights (xLLMBench section 4.4, method (3)): ``w_c = sigma_c / sum sigma``.

    Criteria with little spread over the systems get small weights.  The ``ddof`` of the standard
    deviation cancels in the ratio.  Scores should be on comparable scales (e.g. normalised).

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Complete scores (criteria x systems).

    Returns
    -------
    ndarray, shape (..., T)
        Weights summing to 1; equal weights if every criterion is constant.
    """
    X = _matrix(X, "std_weights")
    return _normalise_or_equal(X.std(axis=-1))


def _normalise_or_equal(d: np.ndarray) -> np.ndarray:
    tot = d.sum(axis=-1, keepdims=True)
    eq = np.full(d.shape, 1.0 / d.shape[-1])
    return np.where(tot > 0, d / np.where(tot > 0, tot, 1.0), eq)


def ahp_weights(A: np.ndarray, *, random_index: float | None = None, rtol: float = 1e-6) -> tuple[np.ndarray, float]:
    """AHP weights from a pairwise-importance matrix, with Saaty's consistency ratio (xLLMBench Appendix D).

    ``A[i, j]`` states how much more important criterion i is than criterion j on Saaty's 1-9
    scale (``A[j, i] = 1 / A[i, j]``, ``A[i, i] = 1``).  The weights are the principal (Perron)
    eigenvector normalised to sum 1; ``CI = (lambda_max - n) / (n - 1)`` and ``CR = CI / RI(n)``
    with Saaty's random index (:data:`SAATY_RANDOM_INDEX`); CR <= 0.1 is the usual acceptance
    threshold.  (xLLMBench computes the same eigenvector weights with pymcdm, whose CR uses the
    random indices of Tummala & Ling 1998 instead of Saaty's.)

    Parameters
    ----------
    A : array_like, shape (n, n)
        Positive reciprocal matrix.
    random_index : float, optional
        RI to use instead of Saaty's table (needed for n > 15).
    rtol : float
        Relative tolerance of the reciprocity check ``A[i, j] * A[j, i] == 1``.

    Returns
    -------
    weights : ndarray, shape (n,)
        Priority vector, positive, summing to 1.
    consistency_ratio : float
        ``CI / RI``; 0 for n <= 2 (every such matrix is consistent).

    Examples
    --------
    A consistent matrix (xLLMBench's example: the last three criteria are 3 times as important):

    >>> A = np.array([[1, 1, 1/3], [1, 1, 1/3], [3, 3, 1]])
    >>> w, cr = ahp_weights(A)
    >>> np.round(w, 4), round(cr, 10) == 0
    (array([0.2, 0.2, 0.6]), True)
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"ahp_weights: A must be a square (n, n) matrix, got shape {A.shape}")
    n = A.shape[0]
    if not np.isfinite(A).all() or (A <= 0).any():
        raise ValueError("ahp_weights: A must have finite positive entries")
    if not np.allclose(A * A.T, 1.0, rtol=rtol, atol=0.0):
        raise ValueError("ahp_weights: A must be reciprocal (A[j, i] = 1 / A[i, j], ones on the diagonal)")
    eigval, eigvec = np.linalg.eig(A)
    k = int(np.argmax(eigval.real))
    lam = float(eigval[k].real)
    w = np.abs(eigvec[:, k].real)  # the Perron vector has one sign
    w = w / w.sum()
    if n <= 2:
        return w, 0.0
    if random_index is None:
        if n not in SAATY_RANDOM_INDEX:
            raise ValueError(f"ahp_weights: no Saaty random index for n = {n}; pass random_index")
        ri = SAATY_RANDOM_INDEX[n]
    else:
        ri = float(random_index)
        if ri <= 0:
            raise ValueError("ahp_weights: random_index must be positive")
    ci = (lam - n) / (n - 1)
    return w, float(max(ci, 0.0) / ri)
