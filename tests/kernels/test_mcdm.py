"""Tests of the MCDM kernels (engine/kernels/mcdm.py): PROMETHEE II, TOPSIS, VIKOR, criteria weights.

The references below are plain loops written from the definitions (xLLMBench, Gjorgjevikj et al.
2025, section 3.2 Eqs. 1-4 and section 4.3 Eqs. 5-7; Brans & Vincke 1985 for the six preference
functions; Hwang & Yoon 1981 for TOPSIS; Opricovic & Tzeng 2004 for VIKOR; Saaty 1980 for AHP).
They share no code with the kernel: the data-driven defaults are computed from the explicit list of
the S^2 pairwise differences, as xLLMBench's code does (``np.min``/``np.max``/``np.std`` of the
difference matrix).
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from conftest import require_module
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.kernels import mcdm
from engine.kernels.mcdm import (
    ahp_weights,
    entropy_weights,
    equal_weights,
    promethee2,
    promethee2_net,
    promethee2_rank,
    std_weights,
    topsis,
    vikor,
    vikor_score,
)
from engine.kernels.ranking import borda_points

KINDS = ("usual", "quasi", "vshape", "level", "linear_indifference", "gaussian")
ATOL = 1e-12

#: decimals whose differences hit the thresholds below up to floating-point rounding (0.3 - 0.1 != 0.2)
DECIMALS = (-0.5, -0.2, 0.0, 0.1, 0.2, 0.3, 0.4, 0.7, 1.0, 1.5)
THRESHOLDS = (-0.3, -0.1, 0.0, 0.1, 0.2, 0.3, 0.5, 1.2)


# ---------------------------------------------------------------------------------------------
# brute-force references (plain loops)
# ---------------------------------------------------------------------------------------------
def bf_pref(kind: str, d: float, q: float, p: float, s: float) -> float:
    """The six generalised criteria of Brans & Vincke (1985) at one difference ``d``."""
    if kind == "usual":
        return 1.0 if d > 0 else 0.0
    if kind == "quasi":
        return 1.0 if d > q else 0.0
    if kind == "vshape":
        if d <= 0:
            return 0.0
        return 1.0 if d > p else d / p
    if kind == "level":
        if d <= q:
            return 0.0
        return 0.5 if d <= p else 1.0
    if kind == "linear_indifference":
        if d <= q:
            return 0.0
        return (d - q) / (p - q) if d <= p else 1.0
    if kind == "gaussian":
        if d <= 0:
            return 0.0
        return 1.0 - math.exp(-d * d / (2.0 * s * s)) if s > 0 else 1.0
    raise AssertionError(kind)


def _given(v, c):
    """The user's threshold for criterion ``c`` (scalar or per criterion); None or NaN -> default."""
    if v is None:
        return None
    x = float(v) if np.ndim(v) == 0 else float(v[c])
    return None if math.isnan(x) else x


def bf_promethee2(X, *, weights=None, preference="usual", q=None, p=None, s=None, maximize=True):
    """PROMETHEE II of one (T, S) matrix by loops over criteria and ordered pairs."""
    X = [[float(v) for v in row] for row in np.asarray(X, dtype=float)]
    T, S = len(X), len(X[0])
    prefs = [preference] * T if isinstance(preference, str) else list(preference)
    maxi = [maximize] * T if isinstance(maximize, bool) else [bool(m) for m in maximize]
    w = [1.0] * T if weights is None else [float(v) for v in weights]
    w = [v / sum(w) for v in w]
    pi = [[0.0] * S for _ in range(S)]
    for c in range(T):
        g = [v if maxi[c] else -v for v in X[c]]
        diffs = [g[a] - g[b] for a in range(S) for b in range(S)]
        qc, pc, sc = _given(q, c), _given(p, c), _given(s, c)
        kind = prefs[c]
        if kind == "vshape":
            qc, pc = 0.0, (max(diffs) if pc is None else pc)
        elif kind == "linear_indifference":  # xLLMBench "linear": a, b = min, max of the differences
            qc = min(diffs) if qc is None else qc
            pc = max(diffs) if pc is None else pc
        elif kind == "gaussian":  # xLLMBench: sigma = std of the difference matrix
            sc = statistics.pstdev(diffs) if sc is None else sc
        for a in range(S):
            for b in range(S):
                pi[a][b] += w[c] * bf_pref(kind, g[a] - g[b], qc, pc, sc)
    if S < 2:
        return np.zeros(S), np.zeros(S), np.zeros(S)
    plus = np.array([sum(pi[a][b] for b in range(S)) / (S - 1) for a in range(S)])
    minus = np.array([sum(pi[b][a] for b in range(S)) / (S - 1) for a in range(S)])
    return plus, minus, plus - minus


def bf_topsis(X, weights=None, maximize=True):
    X = np.asarray(X, dtype=float)
    T, S = X.shape
    maxi = [maximize] * T if isinstance(maximize, bool) else list(maximize)
    w = [1.0] * T if weights is None else list(weights)
    w = [v / sum(w) for v in w]
    V = [[0.0] * S for _ in range(T)]
    for c in range(T):
        lo, hi = min(X[c]), max(X[c])
        for a in range(S):
            if hi == lo:
                r = 1.0
            elif maxi[c]:
                r = (X[c][a] - lo) / (hi - lo)
            else:
                r = (hi - X[c][a]) / (hi - lo)
            V[c][a] = w[c] * r
    out = []
    for a in range(S):
        dp = math.sqrt(sum((V[c][a] - max(V[c])) ** 2 for c in range(T)))
        dm = math.sqrt(sum((V[c][a] - min(V[c])) ** 2 for c in range(T)))
        out.append(0.5 if dp + dm == 0 else dm / (dp + dm))
    return np.array(out)


def bf_vikor(X, weights=None, v=0.5, maximize=True):
    X = np.asarray(X, dtype=float)
    T, S = X.shape
    maxi = [maximize] * T if isinstance(maximize, bool) else list(maximize)
    w = [1.0] * T if weights is None else list(weights)
    w = [x / sum(w) for x in w]
    Sv, Rv = [], []
    for a in range(S):
        terms = []
        for c in range(T):
            best = max(X[c]) if maxi[c] else min(X[c])
            worst = min(X[c]) if maxi[c] else max(X[c])
            terms.append(0.0 if best == worst else w[c] * ((best - X[c][a]) / (best - worst)))
        Sv.append(sum(terms))
        Rv.append(max(terms))

    def ratio(vals, a):
        lo, hi = min(vals), max(vals)
        return 0.0 if hi == lo else (vals[a] - lo) / (hi - lo)

    Q = [v * ratio(Sv, a) + (1 - v) * ratio(Rv, a) for a in range(S)]
    return np.array(Sv), np.array(Rv), np.array(Q)


def assert_flows(got, want, atol=ATOL):
    for g, e, name in zip(got, want, ("phi+", "phi-", "phi")):
        np.testing.assert_allclose(g, e, rtol=0, atol=atol, err_msg=name)


# ---------------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------------
@st.composite
def matrices(draw, *, max_t=4, max_s=8, min_s=1, batch=False):
    T = draw(st.integers(1, max_t))
    S = draw(st.integers(min_s, max_s))
    shape = ((draw(st.integers(1, 3)),) if batch else ()) + (T, S)
    if draw(st.booleans()):
        X = draw(arrays(np.float64, shape, elements=st.sampled_from(DECIMALS)))
    else:
        # score-like magnitudes (no 1e-290: the reference's 2 s^2 would underflow)
        finite = st.floats(-50, 50, allow_nan=False, allow_subnormal=False).filter(lambda v: v == 0 or abs(v) > 1e-6)
        X = draw(arrays(np.float64, shape, elements=finite))
    return X


@st.composite
def promethee_cases(draw, *, kinds=KINDS, batch=False, max_s=8):
    X = draw(matrices(batch=batch, max_s=max_s))
    T = X.shape[-2]
    prefs = [draw(st.sampled_from(kinds)) for _ in range(T)]
    q, p, s = [], [], []
    for kind in prefs:
        a, b = sorted(draw(st.sampled_from(THRESHOLDS)) for _ in range(2))
        default = kind in ("vshape", "linear_indifference", "gaussian") and draw(st.booleans())
        if kind == "vshape":
            a, b = 0.0, abs(b)
        q.append(math.nan if default else a)
        p.append(math.nan if default else b)
        s.append(math.nan if default else draw(st.sampled_from((0.0, 0.05, 0.3, 1.0, 7.5))))
    weights = draw(st.none() | st.lists(st.floats(0.01, 5.0), min_size=T, max_size=T))
    maximize = draw(st.booleans() | st.lists(st.booleans(), min_size=T, max_size=T))
    return X, dict(preference=prefs, q=q, p=p, s=s, weights=weights, maximize=maximize)


# ---------------------------------------------------------------------------------------------
# PROMETHEE II against brute force
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40)
@given(data=st.data())
def test_promethee2_each_function_vs_brute_force(kind, data):
    X, kw = data.draw(promethee_cases(kinds=(kind,)))
    block = data.draw(st.sampled_from([None, 1, 3, 50]))
    assert_flows(promethee2(X, block=block, **kw), bf_promethee2(X, **kw))


@settings(max_examples=60)
@given(case=promethee_cases())
def test_promethee2_mixed_functions_and_directions_vs_brute_force(case):
    X, kw = case
    assert_flows(promethee2(X, **kw), bf_promethee2(X, **kw))


@settings(max_examples=25)
@given(case=promethee_cases(batch=True), per_batch_weights=st.booleans())
def test_promethee2_batch_axes(case, per_batch_weights):
    """A leading batch axis is a loop over independent matrices (defaults per batch element)."""
    X, kw = case
    B, T, _ = X.shape
    if per_batch_weights:
        kw["weights"] = np.arange(1.0, B * T + 1).reshape(B, T)
    got = promethee2(X, **kw)
    for b in range(B):
        kb = dict(kw)
        if per_batch_weights:
            kb["weights"] = kw["weights"][b]
        assert_flows([g[b] for g in got], bf_promethee2(X[b], **kb))


@settings(max_examples=30)
@given(case=promethee_cases(kinds=("gaussian",), max_s=30), block=st.sampled_from([1, 7, 10_000]))
def test_promethee2_gaussian_far_field_expansion_vs_brute_force(case, block):
    """The fast-Gauss-transform far field, forced on small inputs, agrees with the definition."""
    X, kw = case
    saved = mcdm._FGT_MIN, mcdm._FGT_FORCE
    mcdm._FGT_MIN, mcdm._FGT_FORCE = 1, True
    try:
        got = promethee2(X, block=block, **kw)
    finally:
        mcdm._FGT_MIN, mcdm._FGT_FORCE = saved
    assert_flows(got, bf_promethee2(X, **kw))


@pytest.mark.parametrize("forced", [False, True])
def test_promethee2_gaussian_large_matches_reference(forced, monkeypatch):
    """Real-size rows (many distinct values, heavy tail, ties) against the O(T S^2) reference."""
    rng = np.random.default_rng(7)
    S = 1300
    X = np.stack(
        [
            rng.normal(50, 10, S),
            rng.lognormal(1.0, 1.2, S),  # heavy tail (parameter counts, CO2)
            np.round(rng.uniform(0, 30, S), 1),  # ties
        ]
    )
    if forced:
        monkeypatch.setattr(mcdm, "_FGT_MIN", 1)
        monkeypatch.setattr(mcdm, "_FGT_FORCE", True)
    kw = dict(preference="gaussian", maximize=[True, False, True])
    assert_flows(promethee2(X, **kw), mcdm._promethee2_reference(X, **kw))
    kw = dict(preference="gaussian", s=[3.0, 0.5, 0.01])
    assert_flows(promethee2(X, **kw), mcdm._promethee2_reference(X, **kw))


@settings(max_examples=40)
@given(case=promethee_cases(max_s=12))
def test_fast_paths_equal_module_reference(case):
    X, kw = case
    assert_flows(promethee2(X, **kw), mcdm._promethee2_reference(X, **kw))


def test_step_functions_count_floating_point_differences():
    """0.3 - 0.1 = 0.19999999999999998 < 0.2: the counts follow the computed differences."""
    X = np.array([[0.1, 0.3, 0.5, 0.1]])
    for kind, kw in (("quasi", {"q": 0.2}), ("level", {"q": 0.2, "p": 0.4})):
        assert_flows(promethee2(X, preference=kind, **kw), bf_promethee2(X, preference=kind, **kw), atol=0)
    plus, minus, _ = promethee2(X, preference="quasi", q=0.2)
    # 0.3 - 0.1 is not > 0.2, 0.5 - 0.1 = 0.4 is; so only system 2 is preferred, to the two 0.1's
    np.testing.assert_array_equal(plus * 3, [0, 0, 2, 0])
    np.testing.assert_array_equal(minus * 3, [1, 0, 0, 1])


# ---------------------------------------------------------------------------------------------
# published and hand-worked examples
# ---------------------------------------------------------------------------------------------
def test_zhao_peng_li_2013_usual_example():
    """Zhao, Peng & Li (2013), Procedia Computer Science 17:181-188 (pymcdm's PROMETHEE test case):
    alternatives (4,3,2), (3,2,4), (5,1,3), weights 0.5/0.3/0.2, usual criterion ->
    net flows 0.1, -0.3, 0.2 (and pymcdm's PROMETHEE I flows 0.55/0.35/0.6, 0.45/0.65/0.4)."""
    A = np.array([[4, 3, 2], [3, 2, 4], [5, 1, 3]], dtype=float)  # alternatives x criteria
    plus, minus, net = promethee2(A.T, weights=[0.5, 0.3, 0.2])
    np.testing.assert_allclose(net, [0.1, -0.3, 0.2], atol=1e-15)
    np.testing.assert_allclose(plus, [0.55, 0.35, 0.6], atol=1e-15)
    np.testing.assert_allclose(minus, [0.45, 0.65, 0.4], atol=1e-15)
    np.testing.assert_array_equal(promethee2_rank(A.T, weights=[0.5, 0.3, 0.2]), [2, 3, 1])


def test_xllmbench_defaults_hand_worked():
    """One maximised criterion x = (0, 1, 3); differences D = x_a - x_b in {0, +-1, +-2, +-3}.

    linear (xLLMBench Eq. 6, a = min D = -3, b = max D = 3): P(d) = (d + 3) / 6 on (-3, 3], P(0) = 1/2;
    row sums of pi are 5/6, 8/6, 14/6 and column sums 13/6, 10/6, 4/6, divided by S - 1 = 2.
    V-shape with p = max D = 3: P(d) = d/3 for d > 0 -> phi+ = (0, 1/6, 5/6), phi- = (2/3, 1/3, 0).
    Gaussian: sigma^2 = mean of D^2 = 28/9 (mean of D is 0), G(d) = 1 - exp(-9 d^2 / 56).
    """
    X = np.array([[0.0, 1.0, 3.0]])
    plus, minus, net = promethee2(X, preference="linear_indifference")
    np.testing.assert_allclose(plus, [5 / 12, 8 / 12, 14 / 12], atol=1e-15)
    np.testing.assert_allclose(minus, [13 / 12, 10 / 12, 4 / 12], atol=1e-15)
    np.testing.assert_allclose(net, [-2 / 3, -1 / 6, 5 / 6], atol=1e-15)
    plus, minus, net = promethee2(X, preference="linear")  # alias of the V-shape
    np.testing.assert_allclose(plus, [0, 1 / 6, 5 / 6], atol=1e-15)
    np.testing.assert_allclose(minus, [2 / 3, 1 / 3, 0], atol=1e-15)
    np.testing.assert_allclose(net, [-2 / 3, -1 / 6, 5 / 6], atol=1e-15)

    def G(d):
        return 1 - math.exp(-9 * d * d / 56)

    plus, minus, _ = promethee2(X, preference="gaussian")
    np.testing.assert_allclose(plus, [0, G(1) / 2, (G(3) + G(2)) / 2], atol=1e-15)
    np.testing.assert_allclose(minus, [(G(1) + G(3)) / 2, G(2) / 2, 0], atol=1e-15)


def test_xllmbench_linear_net_flow_is_weighted_range_normalised_mean():
    """With a, b = min, max of the differences, P(d) - P(-d) = d / range, so
    phi(a) = S/(S-1) sum_c w_c (x_c(a) - mean_c) / range_c (a constant criterion contributes 0)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 40)) * [[1], [10], [0.1], [3], [1]]
    X[3] = 2.5  # constant criterion
    w = rng.uniform(0.1, 1, 5)
    mx = [True, False, True, True, False]
    Xo = np.where(np.array(mx)[:, None], X, -X)
    rng_c = np.ptp(Xo, axis=1)
    centred = Xo - Xo.mean(axis=1, keepdims=True)
    contrib = np.divide(centred, rng_c[:, None], out=np.zeros_like(Xo), where=rng_c[:, None] > 0)
    expected = 40 / 39 * (w / w.sum()) @ contrib
    for kind in ("linear_indifference", "vshape"):
        np.testing.assert_allclose(promethee2_net(X, weights=w, preference=kind, maximize=mx), expected, atol=1e-13)


def test_usual_net_flow_is_affine_in_weighted_borda_points():
    """Usual criterion: sum_b [x_a > x_b] - [x_b > x_a] = 2 * Borda points - (S - 1) on each criterion."""
    rng = np.random.default_rng(4)
    X = rng.integers(0, 6, size=(2, 4, 25)).astype(float)
    w = rng.uniform(0.1, 1.0, size=(2, 4))
    wn = w / w.sum(axis=-1, keepdims=True)
    borda = np.einsum("bt,bts->bs", wn, borda_points(X))
    np.testing.assert_allclose(promethee2_net(X, weights=w), (2 * borda - 24) / 24, atol=1e-14)


# ---------------------------------------------------------------------------------------------
# pymcdm cross-check (same conventions: alternatives x criteria, types +-1, weights summing to 1); pymcdm is in the
# test extra, and a missing pymcdm fails these tests instead of skipping them
# ---------------------------------------------------------------------------------------------
PYMCDM_NAMES = {
    "usual": "usual",
    "quasi": "ushape",
    "vshape": "vshape",
    "level": "level",
    "linear_indifference": "vshape_2",
}


@pytest.mark.parametrize("kind", list(PYMCDM_NAMES))
def test_promethee2_matches_pymcdm(kind):
    require_module("pymcdm")
    from pymcdm.methods import PROMETHEE_II
    from pymcdm.methods.partial import PROMETHEE_I

    rng = np.random.default_rng(11)
    for trial in range(5):
        T, S = 4, 30
        X = np.round(rng.normal(size=(T, S)) * [[1], [5], [0.2], [2]], 1)
        types = rng.choice([-1, 1], size=T)
        w = rng.uniform(0.1, 1, T)
        w /= w.sum()
        q = rng.uniform(0.0, 0.5, T) * np.abs(X).max(axis=1)
        p = q + rng.uniform(0.1, 1.0, T) * np.abs(X).max(axis=1)
        qs = {"quasi": q, "level": q, "linear_indifference": q}.get(kind)
        ps = {"vshape": p, "level": p, "linear_indifference": p}.get(kind)
        if kind == "linear_indifference" and trial % 2:
            qs, ps = [np.min] * T, [np.max] * T  # xLLMBench's data-driven linear thresholds
        ours = promethee2(
            X,
            weights=w,
            preference=kind,
            q=None if qs is None or callable(qs[0]) else qs,
            p=None if ps is None or callable(ps[0]) else ps,
            maximize=types > 0,
        )
        args = dict(p=None if ps is None else list(ps), q=None if qs is None else list(qs))
        fp, fm = PROMETHEE_I(PYMCDM_NAMES[kind], **args)(X.T, w, types, validation=False)
        net = PROMETHEE_II(PYMCDM_NAMES[kind], **args)(X.T, w, types, validation=False)
        assert_flows(ours, (fp, fm, net), atol=1e-12)


def test_topsis_vikor_match_pymcdm():
    require_module("pymcdm")
    from pymcdm.methods import TOPSIS, VIKOR

    rng = np.random.default_rng(12)
    for _ in range(5):
        X = rng.normal(size=(5, 20)) * rng.uniform(0.1, 100, size=(5, 1))
        types = rng.choice([-1, 1], size=5)
        w = rng.uniform(0.1, 1, 5)
        w /= w.sum()
        pm_t = TOPSIS()(X.T, w, types, validation=False)
        pm_q = VIKOR()(X.T, w, types, validation=False)
        np.testing.assert_allclose(topsis(X, weights=w, maximize=types > 0), pm_t, atol=1e-12)
        np.testing.assert_allclose(vikor(X, weights=w, maximize=types > 0)[2], pm_q, atol=1e-12)


def test_weights_match_pymcdm():
    require_module("pymcdm")
    from pymcdm.weights import entropy_weights as pm_entropy
    from pymcdm.weights import standard_deviation_weights as pm_std
    from pymcdm.weights.subjective import AHP

    rng = np.random.default_rng(13)
    X = rng.uniform(0.1, 10, size=(6, 30))  # strictly positive: pymcdm's entropy convention agrees
    np.testing.assert_allclose(entropy_weights(X), pm_entropy(X.T), atol=1e-12)
    np.testing.assert_allclose(std_weights(X), pm_std(X.T), atol=1e-12)
    A = np.array([[1, 4, 3, 7], [1 / 4, 1, 1 / 3, 3], [1 / 3, 3, 1, 5], [1 / 7, 1 / 3, 1 / 5, 1]])
    ahp = AHP(matrix=A)
    w, cr = ahp_weights(A)
    np.testing.assert_allclose(w, ahp(), atol=1e-12)
    # the consistency index agrees; pymcdm divides by Tummala & Ling's RI(4) = 0.8921, we by Saaty's 0.90
    np.testing.assert_allclose(cr * 0.90, ahp.get_cr() * 0.8921, rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------------
@settings(max_examples=40)
@given(case=promethee_cases(max_s=10), data=st.data())
def test_promethee2_permutation_equivariance(case, data):
    X, kw = case
    T, S = X.shape
    ps = data.draw(st.permutations(range(S)))
    pt = data.draw(st.permutations(range(T)))
    got = promethee2(X, **kw)

    def perm(v):
        if v is None or isinstance(v, bool | str):
            return v
        return [v[i] for i in pt]

    kw2 = {k: perm(v) for k, v in kw.items()}
    got2 = promethee2(X[np.ix_(pt, ps)], **kw2)
    for g, g2 in zip(got, got2):
        np.testing.assert_allclose(g2, g[ps], rtol=0, atol=1e-13)


@settings(max_examples=40)
@given(X=matrices(max_s=10), data=st.data())
def test_usual_is_invariant_to_increasing_transforms(X, data):
    """The usual criterion only uses the order of the values on each criterion: replace the distinct
    values of one criterion by any strictly increasing sequence (built exactly, as integer steps)."""
    c = data.draw(st.integers(0, X.shape[0] - 1))
    values, inverse = np.unique(X[c], return_inverse=True)
    steps = data.draw(st.lists(st.integers(1, 10**6), min_size=values.size, max_size=values.size))
    new_values = np.cumsum(steps).astype(float) * data.draw(st.sampled_from([1.0, 1e-3, 1e9]))
    Y = X.copy()
    Y[c] = new_values[inverse]
    assert_flows(promethee2(Y), promethee2(X), atol=0)


@settings(max_examples=40)
@given(case=promethee_cases(max_s=10))
def test_flow_identities_and_minimise_equals_negate(case):
    X, kw = case
    plus, minus, net = promethee2(X, **kw)
    S = X.shape[-1]
    # net is computed from the flow differences directly (one exact division for count-based functions),
    # so it equals plus - minus up to the rounding of that subtraction
    np.testing.assert_allclose(net, plus - minus, rtol=0, atol=4e-16)
    if S >= 2:
        np.testing.assert_allclose(net.sum(), 0.0, atol=1e-12)  # sum over systems of the net flow
        assert np.all(plus >= -1e-15) and np.all(minus >= -1e-15)
    # minimising a criterion is maximising its negation
    T = X.shape[0]
    mx = kw["maximize"] if isinstance(kw["maximize"], list) else [kw["maximize"]] * T
    Xn = np.where(np.array(mx)[:, None], X, -X)
    kw2 = dict(kw, maximize=True)
    assert_flows(promethee2(Xn, **kw2), (plus, minus, net), atol=0)
    # weights only matter up to scale
    if kw["weights"] is not None:
        kw3 = dict(kw, weights=[3.0 * v for v in kw["weights"]])
        assert_flows(promethee2(X, **kw3), (plus, minus, net), atol=1e-14)


def test_identical_systems_get_identical_flows():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3, 12))
    X[:, 7] = X[:, 2]
    for kind in KINDS:
        kw = {"quasi": {"q": 0.1}, "level": {"q": 0.1, "p": 0.5}}.get(kind, {})
        for flow in promethee2(X, preference=kind, **kw):
            assert flow[7] == flow[2]


def test_translation_invariance_of_threshold_functions():
    """Differences, hence all six functions with fixed thresholds, ignore a shift of a criterion."""
    rng = np.random.default_rng(6)
    X = rng.integers(-20, 20, size=(6, 15)).astype(float)
    Y = X + np.arange(6)[:, None] * 64.0  # exact shifts
    kw = dict(preference=list(KINDS), q=[0, 2, 0, 1, 3, 0], p=[0, 0, 5, 4, 8, 0], s=[0, 0, 0, 0, 0, 2.5])
    assert_flows(promethee2(Y, **kw), promethee2(X, **kw), atol=1e-14)


def test_single_system_and_net_rank_wrappers():
    assert_flows(promethee2(np.array([[3.0], [1.0]])), (np.zeros(1), np.zeros(1), np.zeros(1)), atol=0)
    X = np.array([[1.0, 2.0, 2.0, 0.5]])
    np.testing.assert_array_equal(promethee2_net(X), promethee2(X)[2])
    np.testing.assert_array_equal(promethee2_rank(X), [3, 1, 1, 4])


def test_nan_in_parameter_array_means_default():
    X = np.array([[0.0, 1.0, 3.0], [2.0, 0.0, 1.0]])
    kw = dict(preference=["linear_indifference", "gaussian"])
    assert_flows(promethee2(X, q=[np.nan, 0.0], p=[np.nan, 0.0], s=[0.0, np.nan], **kw), promethee2(X, **kw), atol=0)
    assert_flows(promethee2(X, q=[-0.5, np.nan], **kw), bf_promethee2(X, q=[-0.5, np.nan], **kw))


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------
def test_promethee2_errors():
    X = np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="NaN"):
        promethee2(np.array([[1.0, np.nan, 2.0]]))
    with pytest.raises(ValueError, match="infinite"):
        promethee2(np.array([[1.0, np.inf, 2.0]]))
    with pytest.raises(ValueError, match="unknown preference"):
        promethee2(X, preference="triangle")
    with pytest.raises(ValueError, match="one preference function per criterion"):
        promethee2(X, preference=["usual"])
    with pytest.raises(ValueError, match="quasi.*needs"):
        promethee2(X, preference="quasi")
    with pytest.raises(ValueError, match="level.*needs"):
        promethee2(X, preference="level", q=0.1)
    with pytest.raises(ValueError, match="q <= p"):
        promethee2(X, preference="level", q=0.5, p=0.1)
    with pytest.raises(ValueError, match="q <= p"):
        promethee2(X, preference="vshape", p=-1.0)
    with pytest.raises(ValueError, match=">= 0"):
        promethee2(X, preference="gaussian", s=-1.0)
    with pytest.raises(ValueError, match="weights"):
        promethee2(X, weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="weights"):
        promethee2(X, weights=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="positive sum"):
        promethee2(X, weights=[0.0, 0.0])
    with pytest.raises(ValueError, match="maximize"):
        promethee2(X, maximize=["max", "min"])
    with pytest.raises(ValueError, match="maximize"):
        promethee2(X, maximize=[True])
    with pytest.raises(ValueError, match="shape"):
        promethee2(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="one value per criterion"):
        promethee2(X, preference="quasi", q=[0.1, 0.2, 0.3])
    for f in (topsis, vikor, vikor_score, std_weights, entropy_weights):
        with pytest.raises(ValueError, match="NaN"):
            f(np.array([[1.0, np.nan, 2.0]]))


# ---------------------------------------------------------------------------------------------
# TOPSIS and VIKOR
# ---------------------------------------------------------------------------------------------
@settings(max_examples=50)
@given(X=matrices(max_s=8, min_s=2), data=st.data())
def test_topsis_vikor_vs_brute_force(X, data):
    T = X.shape[0]
    w = data.draw(st.none() | st.lists(st.floats(0.01, 5.0), min_size=T, max_size=T))
    mx = data.draw(st.booleans() | st.lists(st.booleans(), min_size=T, max_size=T))
    v = data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    np.testing.assert_allclose(topsis(X, weights=w, maximize=mx), bf_topsis(X, w, mx), atol=1e-12)
    for got, want in zip(vikor(X, weights=w, v=v, maximize=mx), bf_vikor(X, w, v, mx)):
        np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(vikor_score(X, weights=w, v=v, maximize=mx), -bf_vikor(X, w, v, mx)[2], atol=1e-12)


def test_vikor_published_examples():
    """Opricovic & Tzeng (2004), EJOR 156:445-455: A2 is the compromise, Q = (1, 0, 1).
    Yang & Wu (2020), IEEE Access 8:21261-21271 (v = 0.5): Q = (0.5679, 0.7667, 1, 0.7493, 0)."""
    X = np.array([[1.0, 2.0, 5.0], [3000.0, 3750.0, 4500.0]])
    np.testing.assert_allclose(vikor(X, weights=[0.5, 0.5], maximize=[False, True])[2], [1, 0, 1], atol=1e-15)
    Y = np.array([[78, 56, 34, 6], [4, 45, 3, 97], [18, 2, 50, 63], [9, 14, 11, 92], [85, 9, 100, 29]], dtype=float)
    np.testing.assert_allclose(vikor(Y.T)[2], [0.5679, 0.7667, 1, 0.7493, 0], atol=5e-5)


def test_topsis_minmax_hand_worked():
    """Opricovic & Tzeng (2004) data with min-max normalisation: r = (1, .75, 0) (cost) and (0, .5, 1);
    v = r / 2; A2: D+ = sqrt(.125^2 + .25^2), D- = sqrt(.375^2 + .25^2) -> C = 0.6172; A1, A3: C = 1/2."""
    X = np.array([[1.0, 2.0, 5.0], [3000.0, 3750.0, 4500.0]])
    dp, dm = math.hypot(0.125, 0.25), math.hypot(0.375, 0.25)
    got = topsis(X, weights=[0.5, 0.5], maximize=[False, True])
    np.testing.assert_allclose(got, [0.5, dm / (dp + dm), 0.5], atol=1e-15)


def test_topsis_vikor_batch_and_degenerate():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3, 4, 9))
    w = rng.uniform(0.1, 1, size=(3, 4))
    t = topsis(X, weights=w)
    S_, R_, Q = vikor(X, weights=w)
    for b in range(3):
        np.testing.assert_allclose(t[b], bf_topsis(X[b], list(w[b])), atol=1e-12)
        np.testing.assert_allclose(Q[b], bf_vikor(X[b], list(w[b]))[2], atol=1e-12)
    same = np.ones((2, 5))
    np.testing.assert_array_equal(topsis(same), np.full(5, 0.5))
    np.testing.assert_array_equal(vikor(same)[2], np.zeros(5))
    with pytest.raises(ValueError, match="v must"):
        vikor(X, v=1.5)


# ---------------------------------------------------------------------------------------------
# criteria weights
# ---------------------------------------------------------------------------------------------
def test_equal_weights():
    np.testing.assert_array_equal(equal_weights(5), np.full(5, 0.2))
    with pytest.raises(ValueError):
        equal_weights(0)


@settings(max_examples=40)
@given(
    X=arrays(
        np.float64, st.tuples(st.integers(1, 4), st.integers(2, 7)), elements=st.sampled_from((0.0, 0.5, 1.0, 2.0, 7.0))
    )
)
def test_entropy_and_std_weights_vs_brute_force(X):
    T, S = X.shape
    std = [statistics.pstdev(list(X[c])) for c in range(T)]
    want = [v / sum(std) for v in std] if sum(std) > 0 else [1 / T] * T
    np.testing.assert_allclose(std_weights(X), want, atol=1e-12)
    if (X.sum(axis=1) <= 0).any():
        with pytest.raises(ValueError):
            entropy_weights(X)
        return
    d = []
    for c in range(T):
        tot = sum(X[c])
        e = -sum((x / tot) * math.log(x / tot) for x in X[c] if x > 0) / math.log(S)
        d.append(max(0.0, 1 - e))
    want = [v / sum(d) for v in d] if sum(d) > 0 else [1 / T] * T
    np.testing.assert_allclose(entropy_weights(X), want, atol=1e-12)


def test_weights_batch_shapes():
    rng = np.random.default_rng(9)
    X = rng.uniform(0.5, 2.0, size=(3, 4, 10))
    for f in (entropy_weights, std_weights):
        W = f(X)
        assert W.shape == (3, 4)
        np.testing.assert_allclose(W.sum(axis=-1), 1.0)
        for b in range(3):
            np.testing.assert_allclose(W[b], f(X[b]), atol=1e-15)
    with pytest.raises(ValueError, match="non-negative"):
        entropy_weights(-X)


def test_ahp_leader_example():
    """Wikipedia, "Analytic hierarchy process - leader example": criteria experience, education,
    charisma, age; published priorities .547, .127, .270, .056 (three decimals) and consistency ratio 0.044."""
    A = np.array([[1, 4, 3, 7], [1 / 4, 1, 1 / 3, 3], [1 / 3, 3, 1, 5], [1 / 7, 1 / 3, 1 / 5, 1]])
    w, cr = ahp_weights(A)
    np.testing.assert_allclose(w, [0.547, 0.127, 0.270, 0.056], atol=1e-3)
    assert abs(cr - 0.044) < 5e-4
    # lambda_max from the definition A w = lambda w
    lam = float(np.mean((A @ w) / w))
    assert abs(cr - (lam - 4) / 3 / 0.90) < 1e-9


@pytest.mark.parametrize("p", [3, 5, 7, 9])
def test_ahp_xllmbench_appendix_d(p):
    """xLLMBench Appendix D (and its weights.py): three criteria p times as important as three others.
    The matrix is consistent (a_ij = w_i / w_j), so the weights are (1,1,1,p,p,p)/(3+3p) and CR = 0."""
    base = np.array([1.0, 1.0, 1.0, p, p, p])
    A = base[:, None] / base[None, :]
    w, cr = ahp_weights(A)
    np.testing.assert_allclose(w, base / base.sum(), atol=1e-12)
    assert abs(cr) < 1e-12
    perm = [5, 0, 3, 1, 4, 2]
    w2, cr2 = ahp_weights(A[np.ix_(perm, perm)])
    np.testing.assert_allclose(w2, w[perm], atol=1e-12)


def test_ahp_validation():
    with pytest.raises(ValueError, match="reciprocal"):
        ahp_weights(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="positive"):
        ahp_weights(np.array([[1.0, -2.0], [-0.5, 1.0]]))
    with pytest.raises(ValueError, match="square"):
        ahp_weights(np.ones((2, 3)))
    with pytest.raises(ValueError, match="random_index"):
        ahp_weights(np.ones((16, 16)))
    w, cr = ahp_weights(np.ones((16, 16)), random_index=1.6)
    np.testing.assert_allclose(w, np.full(16, 1 / 16))
    assert cr == pytest.approx(0.0, abs=1e-12)
    w, cr = ahp_weights(np.array([[1.0, 3.0], [1 / 3, 1.0]]))
    np.testing.assert_allclose(w, [0.75, 0.25])
    assert cr == 0.0


@pytest.mark.parametrize("rule", ["topsis", "vikor", "promethee2"])
def test_drop_judges_leaves_the_dropped_tasks_out_of_the_decision_matrix(rule):
    """drop-judges removes the tasks with a missing score; the MCDM rules (complete data only) then rank the others
    exactly as on the table without those tasks (they used to stop: "X contains 200 NaN value(s)")."""
    from conftest import DATA

    import engine

    s = engine.open_scores(DATA / "vnr_glue.csv")
    full = s.values if s.ndim == 2 else s.values[..., 0]
    gone = [str(t) for t, col in zip(s["task"].values, np.isnan(full).any(axis=0)) if col]
    assert gone  # QNLI, STS-B_n1
    got = engine.rank(s, rule=rule, missing="drop-judges")
    kept = engine.rank(s.sel(task=[t for t in s["task"].values if str(t) not in gone]), rule=rule)
    np.testing.assert_array_equal(got["rank"].values, kept["rank"].values)
    np.testing.assert_allclose(got["score"].values, kept["score"].values, rtol=1e-12)
