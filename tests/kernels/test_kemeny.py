"""Tests of engine.kernels.kemeny against brute-force references (plain loops / all permutations)."""

from __future__ import annotations

import csv
import itertools
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from engine.kernels.kemeny import (
    consensus_dispersion,
    kemeny_across,
    kemeny_consensus,
    kemeny_order,
    pairwise_dispersion,
    pairwise_preferences,
)
from engine.kernels.paircount import kendall_distance, kendall_tau_b
from engine.kernels.ranking import borda_points

DATA = Path(__file__).resolve().parents[2] / "data"
VALUES = [0.0, 1.0, 2.0, 3.0, 0.5, -1.0]

# --------------------------------------------------------------------------- strategies


@st.composite
def profiles(draw, max_t=5, max_s=7, min_s=1, nan=True, values=VALUES):
    T = draw(st.integers(1, max_t))
    S = draw(st.integers(min_s, max_s))
    pool = values + ([np.nan] if nan else [])
    X = np.array(draw(st.lists(st.sampled_from(pool), min_size=T * S, max_size=T * S))).reshape(T, S)
    return X


def weight_vectors(T):
    return st.one_of(
        st.none(),
        st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=T, max_size=T).map(np.array),
        st.lists(st.floats(0.0, 3.0, allow_nan=False), min_size=T, max_size=T).map(np.array),
    )


@st.composite
def weighted_profiles(draw, **kw):
    X = draw(profiles(**kw))
    return X, draw(weight_vectors(X.shape[0]))


# --------------------------------------------------------------------------- references


def ref_pref(X, w=None):
    T, S = X.shape
    w = np.ones(T) if w is None else w
    P = np.zeros((S, S))
    for t in range(T):
        for i in range(S):
            for j in range(S):
                if i == j or np.isnan(X[t, i]) or np.isnan(X[t, j]):
                    continue
                if X[t, i] > X[t, j]:
                    P[i, j] += w[t]
                elif X[t, i] == X[t, j]:
                    P[i, j] += 0.5 * w[t]
    return P


def ref_kendall(a, b, p=0.5):
    d = 0.0
    for i, j in itertools.combinations(range(len(a)), 2):
        if np.isnan(a[i]) or np.isnan(a[j]) or np.isnan(b[i]) or np.isnan(b[j]):
            continue
        sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        if sa * sb < 0:
            d += 1
        elif (sa == 0) != (sb == 0):
            d += p
    return d


def ref_kemeny(X, w=None):
    """All optimal orders by exhaustive search.  Returns the 'blocks' scores (tied groups =
    connected components of the relation 'ordered both ways by some optimal orders',
    n-1-mean position of the group), the 'mean' scores (n-1-mean position over all optimal
    orders), the optimal cost and the optimal orders."""
    S = X.shape[1]
    P = ref_pref(X, w)
    present = [i for i in range(S) if not np.isnan(X[:, i]).all()]
    n = len(present)
    scores = np.full(S, np.nan)
    mean_scores = np.full(S, np.nan)
    if n == 0:
        return scores, mean_scores, 0.0, [()]
    perms = np.array(list(itertools.permutations(present)))
    a, b = np.triu_indices(n, 1)
    costs = P[perms[:, b], perms[:, a]].sum(axis=1)
    cmin = costs.min()
    opt = perms[costs <= cmin + 1e-9 * P.sum()]
    pos = np.empty((opt.shape[0], S), dtype=int)
    for k, perm in enumerate(opt):
        for p_, s in enumerate(perm):
            pos[k, s] = p_
    parent = {s: s for s in present}

    def find(s):
        while parent[s] != s:
            s = parent[s]
        return s

    for i, j in itertools.combinations(present, 2):
        if (pos[:, i] < pos[:, j]).any() and (pos[:, j] < pos[:, i]).any():
            parent[find(i)] = find(j)
    comps = {}
    for s in present:
        comps.setdefault(find(s), []).append(s)
    for comp in comps.values():
        for k in range(opt.shape[0]):  # groups are contiguous in every optimal order
            ps = sorted(pos[k, comp])
            assert ps == list(range(ps[0], ps[0] + len(ps)))
        scores[comp] = n - 1 - np.mean(pos[0, comp])
    mean_scores[present] = n - 1 - pos[:, present].mean(axis=0)
    return scores, mean_scores, cmin, [tuple(o) for o in opt]


def ref_margins(X, w=None):
    P = ref_pref(X, w)
    return P - P.T


# --------------------------------------------------------------------------- pairwise and Kendall


@settings(max_examples=60, deadline=None)
@given(weighted_profiles(max_t=4, max_s=6))
def test_pairwise_preferences_vs_loop(Xw):
    X, w = Xw
    np.testing.assert_allclose(pairwise_preferences(X, weights=w), ref_pref(X, w), atol=1e-12)


def test_pairwise_preferences_batch():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, (2, 3, 4, 5)).astype(float)
    X[rng.random(X.shape) < 0.2] = np.nan
    w = rng.random((2, 3, 4))
    P = pairwise_preferences(X, weights=w)
    for idx in np.ndindex(2, 3):
        np.testing.assert_allclose(P[idx], ref_pref(X[idx], w[idx]), atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(profiles(max_t=2, max_s=7), st.sampled_from([0.0, 0.5, 1.0]))
def test_kendall_distance_vs_loop(X, p):
    if X.shape[0] < 2:
        X = np.vstack([X, X[::-1, ::-1]])
    a, b = X[0], X[1]
    assert kendall_distance(a, b, tie_penalty=p) == pytest.approx(ref_kendall(a, b, p))
    assert kendall_distance(b, a, tie_penalty=p) == pytest.approx(ref_kendall(a, b, p))


def test_kendall_distance_broadcast():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, (2, 1, 6)).astype(float)
    b = rng.integers(0, 3, (3, 6)).astype(float)
    a[0, 0, 2] = np.nan
    d = kendall_distance(a, b)
    assert d.shape == (2, 3)
    for i, j in np.ndindex(2, 3):
        assert d[i, j] == pytest.approx(ref_kendall(a[i, 0], b[j]))


@settings(max_examples=40, deadline=None)
@given(profiles(max_t=3, max_s=7, min_s=3, nan=False))
def test_kendall_triangle_inequality(X):
    """K^(1/2) is a metric on weak orders (Fagin et al.), so the triangle inequality holds."""
    if X.shape[0] < 3:
        X = np.vstack([X, X[::-1], np.roll(X, 1, axis=1)])[:3]
    a, b, c = X[:3]
    assert kendall_distance(a, c) <= kendall_distance(a, b) + kendall_distance(b, c) + 1e-12


@settings(max_examples=60, deadline=None)
@given(profiles(max_t=2, max_s=7, min_s=1))
def test_kendall_tau_b_vs_scipy(X):
    if X.shape[0] < 2:
        X = np.vstack([X, X[:, ::-1]])
    a, b = X[0], X[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = kendalltau(a, b, variant="b", nan_policy="omit").statistic
    got = kendall_tau_b(a, b)
    np.testing.assert_allclose(got, float(ref), atol=1e-12, equal_nan=True)


def test_kendall_tau_b_batch_vs_scipy():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, (5, 8)).astype(float)
    b = rng.normal(size=(5, 8))
    got = kendall_tau_b(a, b)
    for r in range(5):
        assert got[r] == pytest.approx(kendalltau(a[r], b[r]).statistic)


# --------------------------------------------------------------------------- Kemeny vs brute force


def _check_against_bruteforce(X, w, method):
    ref_scores, ref_mean, cmin, opt = ref_kemeny(X, w)
    got = kemeny_consensus(X, weights=w, method=method)
    np.testing.assert_array_equal(got, ref_scores)
    if method == "dp":
        np.testing.assert_allclose(kemeny_consensus(X, weights=w, ties="mean"), ref_mean, rtol=0, atol=1e-12)
    r = kemeny_order(X, weights=w, method=method)
    assert r.exact
    np.testing.assert_array_equal(r.scores, ref_scores)
    assert r.cost == pytest.approx(cmin, abs=1e-9 * max(1.0, cmin))
    assert tuple(r.order) in opt  # one of the optimal orders
    assert np.all(np.diff(got[r.order]) <= 0)  # scores consistent with the order


@settings(max_examples=100, deadline=None)
@given(weighted_profiles(max_t=5, max_s=7))
def test_kemeny_dp_vs_bruteforce(Xw):
    _check_against_bruteforce(*Xw, method="dp")


@settings(max_examples=25, deadline=None)
@given(weighted_profiles(max_t=4, max_s=6))
def test_kemeny_milp_vs_bruteforce(Xw):
    _check_against_bruteforce(*Xw, method="milp")


def test_kemeny_dp_equals_milp_larger():
    rng = np.random.default_rng(4)
    for _ in range(3):
        X = rng.integers(0, 4, (6, 10)).astype(float)
        X[rng.random(X.shape) < 0.1] = np.nan
        w = rng.integers(1, 4, 6).astype(float)
        np.testing.assert_array_equal(
            kemeny_consensus(X, weights=w, method="dp"), kemeny_consensus(X, weights=w, method="milp")
        )


def test_kemeny_all_tied_and_degenerate():
    X = np.ones((3, 4))
    np.testing.assert_array_equal(kemeny_consensus(X), np.full(4, 1.5))
    np.testing.assert_array_equal(kemeny_consensus(np.array([[np.nan, 2.0]])), [np.nan, 0.0])
    np.testing.assert_array_equal(kemeny_consensus(np.full((2, 3), np.nan)), np.full(3, np.nan))
    assert kemeny_consensus(np.zeros((2, 0))).shape == (0,)


# --------------------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(weighted_profiles(max_t=6, max_s=9))
def test_kemeny_condorcet_consistent(Xw):
    X, w = Xw
    s = kemeny_consensus(X, weights=w)
    M = ref_margins(X, w)
    present = ~np.isnan(X).all(axis=0)
    tol = 1e-9 * (1 + (np.ones(X.shape[0]) if w is None else w).sum())
    for c in np.flatnonzero(present):
        others = present.copy()
        others[c] = False
        if others.any() and np.all(M[c, others] > tol):  # Condorcet winner
            assert np.all(s[c] > s[others])
        if others.any() and np.all(M[c, others] < -tol):  # Condorcet loser
            assert np.all(s[c] < s[others])


@settings(max_examples=60, deadline=None)
@given(profiles(max_t=5, max_s=8, nan=False), st.data())
def test_kemeny_pareto(X, data):
    """Unanimity: if i >= j on every task and > on one, every Kemeny order ranks i above j."""
    T, S = X.shape
    if S < 2:
        return
    i, j = data.draw(st.permutations(range(S)))[:2]
    gap = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=T, max_size=T)))
    gap[data.draw(st.integers(0, T - 1))] = 1.0
    X = X.copy()
    X[:, j] = X[:, i] - gap
    w = data.draw(st.one_of(st.none(), st.lists(st.floats(0.1, 3.0), min_size=T, max_size=T).map(np.array)))
    s = kemeny_consensus(X, weights=w)
    assert s[i] >= s[j]  # 'blocks' may tie them (a third system floating between them)
    s = kemeny_consensus(X, weights=w, ties="mean")
    assert s[i] > s[j]


@settings(max_examples=50, deadline=None)
@given(weighted_profiles(max_t=5, max_s=8), st.data())
def test_kemeny_permutation_equivariance(Xw, data):
    X, w = Xw
    T, S = X.shape
    ps = np.array(data.draw(st.permutations(range(S))))
    pt = np.array(data.draw(st.permutations(range(T))))
    s = kemeny_consensus(X, weights=w)
    s2 = kemeny_consensus(X[pt][:, ps], weights=None if w is None else w[pt])
    np.testing.assert_array_equal(s2, s[ps])


def test_kemeny_batch_matches_loop():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 3, (2, 3, 4, 6)).astype(float)
    X[rng.random(X.shape) < 0.15] = np.nan
    X[0, 1, :, 2] = np.nan  # a system absent from one batch element only
    w = rng.random((2, 3, 4))
    got = kemeny_consensus(X, weights=w)
    got_shared = kemeny_consensus(X, weights=w[0, 0])
    for idx in np.ndindex(2, 3):
        np.testing.assert_array_equal(got[idx], ref_kemeny(X[idx], w[idx])[0])
        np.testing.assert_array_equal(
            kemeny_consensus(X[idx], weights=w[idx], ties="mean"), kemeny_consensus(X, weights=w, ties="mean")[idx]
        )
        np.testing.assert_array_equal(got_shared[idx], ref_kemeny(X[idx], w[0, 0])[0])
    np.testing.assert_array_equal(kemeny_across(X, weights=w), got)


def test_borda_fallback():
    rng = np.random.default_rng(6)
    X = rng.integers(0, 4, (5, 7)).astype(float)
    X[0, 3] = np.nan
    w = rng.random(5)
    expected = borda_points((np.nan_to_num(borda_points(X)) * w[:, None]).sum(axis=0))
    np.testing.assert_array_equal(kemeny_consensus(X, weights=w, exact_max=6), expected)
    r = kemeny_order(X, weights=w, exact_max=6)
    assert not r.exact and np.all(np.diff(expected[r.order]) <= 0)
    assert kemeny_order(X, weights=w).exact


def test_invalid_arguments():
    X = np.zeros((2, 3))
    with pytest.raises(ValueError):
        kemeny_consensus(X, weights=np.array([1.0, -1.0]))
    with pytest.raises(ValueError):
        kemeny_consensus(X, weights=np.ones(3))
    with pytest.raises(ValueError):
        kemeny_consensus(X, method="nope")
    with pytest.raises(ValueError):
        kemeny_order(np.zeros((2, 2, 3)))
    with pytest.raises(ValueError):
        kemeny_consensus(X, method="milp", ties="mean")


# --------------------------------------------------------------------------- worked examples


def test_colombo_table1():
    """Colombo et al. (2022) Table 1 (lower is better): 'Our method ... outputs C > B > A'."""
    X = np.array(
        [[0.3, 0.1, 0.0], [5, 4, 3], [10, 13, 15], [0.02, 0.01, 0.03], [1.0, 2.2, 2.0], [0.4, 0.3, 0.2]]
    )
    s = kemeny_consensus(-X)
    assert s[2] > s[1] > s[0]
    assert list(kemeny_order(-X).order) == [2, 1, 0]


def test_votenrank_table6_condorcet_winner_first():
    """Vote'n'Rank Table 6: m_B is the Condorcet winner, so Kemeny ranks it first."""
    ranks = np.array([[1, 2, 3, 4], [1, 4, 2, 3], [4, 1, 3, 2], [4, 2, 1, 3], [4, 2, 3, 1]])
    s = kemeny_consensus(5.0 - ranks)
    assert np.argmax(s) == 1 and np.sum(s == s.max()) == 1


# --------------------------------------------------------------------------- dispersion (Colombo App. C)


@settings(max_examples=60, deadline=None)
@given(weighted_profiles(max_t=4, max_s=6), st.data(), st.sampled_from([0.0, 0.5, 1.0]))
def test_consensus_dispersion_vs_loop(Xw, data, p):
    X, w = Xw
    T, S = X.shape
    c = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, np.nan]), min_size=S, max_size=S)))
    ww = np.ones(T) if w is None else w
    ref = sum(ww[t] * ref_kendall(X[t], c, p) for t in range(T))
    got = consensus_dispersion(X, c, weights=w, tie_penalty=p)
    assert got == pytest.approx(ref, abs=1e-9)
    got_avg = consensus_dispersion(X, c, weights=w, tie_penalty=p, average=True)
    if ww.sum() > 0:
        assert got_avg == pytest.approx(ref / ww.sum(), abs=1e-9)
    else:
        assert np.isnan(got_avg)


@settings(max_examples=60, deadline=None)
@given(weighted_profiles(max_t=4, max_s=6), st.sampled_from([0.0, 0.5, 1.0]))
def test_pairwise_dispersion_vs_loop(Xw, p):
    X, w = Xw
    T = X.shape[0]
    ww = np.ones(T) if w is None else w
    ref = sum(ww[a] * ww[b] * ref_kendall(X[a], X[b], p) for a in range(T) for b in range(T))
    assert pairwise_dispersion(X, weights=w, tie_penalty=p) == pytest.approx(ref, abs=1e-9)
    den = ww.sum() ** 2 - (ww**2).sum()
    avg = pairwise_dispersion(X, weights=w, tie_penalty=p, average=True)
    if den > 1e-12:
        assert avg == pytest.approx(ref / den, rel=1e-9, abs=1e-9)


def test_dispersion_batch():
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, (3, 4, 5)).astype(float)
    c = rng.normal(size=(3, 5))
    cd = consensus_dispersion(X, c)
    pd_ = pairwise_dispersion(X)
    for b in range(3):
        assert cd[b] == pytest.approx(sum(ref_kendall(X[b, t], c[b]) for t in range(4)))
        assert pd_[b] == pytest.approx(sum(ref_kendall(X[b, s], X[b, t]) for s in range(4) for t in range(4)))


@settings(max_examples=60, deadline=None)
@given(weighted_profiles(max_t=5, max_s=6), st.data())
def test_kemeny_minimises_dispersion(Xw, data):
    """The Kemeny cost is eq. (1) of Colombo App. C at the consensus and no strict order does better."""
    X, w = Xw
    r = kemeny_order(X, weights=w)
    S = X.shape[1]
    pos_score = np.full(S, np.nan)
    pos_score[r.order] = -np.arange(r.order.size, dtype=float)
    assert consensus_dispersion(X, pos_score, weights=w) == pytest.approx(r.cost, abs=1e-9)
    other = np.array(data.draw(st.permutations(range(S))), dtype=float)
    other[np.isnan(pos_score)] = np.nan
    assert r.cost <= consensus_dispersion(X, other, weights=w) + 1e-9


@settings(max_examples=60, deadline=None)
@given(profiles(max_t=6, max_s=7, nan=False))
def test_colombo_remark2_bounds(X):
    """Colombo App. C, Remark 2: the Kemeny consensus's mean distance lies between 1/2 and 1
    times the mean pairwise distance of the rankings (empirical version with 1/T^2 over
    ordered task pairs; the upper bound needs strict per-task rankings)."""
    T = X.shape[0]
    r = kemeny_order(X)
    s = np.empty(X.shape[1])
    s[r.order] = -np.arange(r.order.size)  # a Kemeny consensus permutation
    to_consensus = consensus_dispersion(X, s, average=True)
    spread = pairwise_dispersion(X) / T**2
    assert to_consensus >= 0.5 * spread - 1e-9  # triangle inequality of K^(1/2)
    strict = all(len(set(row)) == len(row) for row in X.tolist())
    if strict:
        assert to_consensus <= spread + 1e-9


def test_mean_over_all_orders_is_quarter_pairs():
    """E over uniform random orders of d(sigma, sigma_t) is n(n-1)/4 (ties included, penalty 1/2)."""
    X = np.array([[3.0, 1.0, 2.0, 2.0, 0.0], [0.0, 1.0, 1.0, 1.0, 4.0]])
    perms = np.array(list(itertools.permutations(range(5))), dtype=float)
    vals = consensus_dispersion(X, perms, average=True)
    assert vals.mean() == pytest.approx(5 * 4 / 4)


def _read_wide(name):
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return np.array([[float(v) if v else np.nan for v in r[1:]] for r in rows[1:]]).T  # (T, S)


@pytest.mark.parametrize(("name", "published"), [("colombo_superglue.csv", 137.3), ("colombo_glue.csv", 2746.0)])
def test_colombo_table7_random_column(name, published):
    """Colombo Table 7, 'Random' column: mean over tasks of the Kendall distance between a
    random permutation and the task rankings (SGLUE 137.3, GLUE 2746).  Pins the scale of
    the dispersion (unordered pairs, per-task mean)."""
    X = _read_wide(name)
    rng = np.random.default_rng(0)
    S = X.shape[1]
    perms = np.array([rng.permutation(S) for _ in range(100)], dtype=float)
    val = consensus_dispersion(X, perms, average=True).mean()
    assert val == pytest.approx(published, rel=0.03)
