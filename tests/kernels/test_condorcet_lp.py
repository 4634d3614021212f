"""Tests of engine.kernels.condorcet_lp against loops, grids and exact vertex enumeration."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kernels.condorcet_lp import condorcet_winner, majority_margins, max_condorcet_margin, prospective_systems

DATA = Path(__file__).resolve().parents[2] / "data"

# --------------------------------------------------------------------------- strategies


@st.composite
def profiles(draw, max_t=4, max_s=5, min_s=1, nan=True):
    T = draw(st.integers(1, max_t))
    S = draw(st.integers(min_s, max_s))
    pool = [0.0, 1.0, 2.0, 3.0] + ([np.nan] if nan else [])
    return np.array(draw(st.lists(st.sampled_from(pool), min_size=T * S, max_size=T * S))).reshape(T, S)


# --------------------------------------------------------------------------- references


def ref_R(X):
    """R[t, i, j] of Vote'n'Rank eq. (1) by loops."""
    T, S = X.shape
    R = np.zeros((T, S, S))
    for t in range(T):
        for i in range(S):
            for j in range(S):
                a, b = X[t, i], X[t, j]
                if np.isnan(a) or np.isnan(b):
                    continue
                R[t, i, j] = 1.0 if a > b else (-1.0 if a < b else 0.0)
    return R


def ref_winner(X, w):
    R = ref_R(X)
    S = X.shape[1]
    present = [i for i in range(S) if not np.isnan(X[:, i]).all()]
    for m in present:
        if all(sum(w[t] * R[t, m, j] for t in range(X.shape[0])) > 1e-12 for j in present if j != m):
            return m
    return -1


def opponents(X, m):
    return [j for j in range(X.shape[1]) if j != m and not np.isnan(X[:, j]).all()]


def ref_max_margin(X, m):
    """Exact optimum of max_{w in simplex} min_j (G w)_j by enumerating the LP vertices."""
    T = X.shape[0]
    R = ref_R(X)
    opp = opponents(X, m)
    if not opp:
        return np.inf
    G = np.array([[R[t, m, j] for t in range(T)] for j in opp])  # (J, T)
    # inequality rows a.z >= 0 on z = (w, t): G_j w - t >= 0 and w_k >= 0; equality sum w = 1
    rows = [np.append(G[j], -1.0) for j in range(len(opp))] + [np.eye(T + 1)[k] for k in range(T)]
    eq = np.append(np.ones(T), 0.0)
    best = -np.inf
    for combo in itertools.combinations(range(len(rows)), T):
        A = np.vstack([eq] + [rows[c] for c in combo])
        if abs(np.linalg.det(A)) < 1e-9:
            continue
        z = np.linalg.solve(A, np.append(1.0, np.zeros(T)))
        if all(r @ z >= -1e-9 for r in rows):
            best = max(best, z[-1])
    return best


def simplex_grid(T, k=12):
    pts = [c for c in itertools.product(range(k + 1), repeat=T) if sum(c) == k]
    return np.array(pts, dtype=float) / k


# --------------------------------------------------------------------------- margins and winner


@settings(max_examples=60, deadline=None)
@given(profiles(), st.data())
def test_majority_margins_vs_loop(X, data):
    T = X.shape[0]
    w = np.array(data.draw(st.lists(st.floats(0, 3), min_size=T, max_size=T)))
    np.testing.assert_allclose(majority_margins(X, weights=w), np.einsum("t,tij->ij", w, ref_R(X)), atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(profiles(max_t=5, max_s=6), st.data())
def test_condorcet_winner_vs_loop(X, data):
    T = X.shape[0]
    w = data.draw(
        st.one_of(st.just(np.ones(T)), st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=T, max_size=T))
    )
    w = np.asarray(w, dtype=float)
    assert condorcet_winner(X, weights=w) == ref_winner(X, w)


def test_condorcet_winner_batch():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (4, 3, 5, 4)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    w = rng.integers(0, 3, (4, 3, 5)).astype(float)
    got = condorcet_winner(X, weights=w)
    assert got.shape == (4, 3)
    for idx in np.ndindex(4, 3):
        assert got[idx] == ref_winner(X[idx], w[idx])


def test_condorcet_winner_float_ties():
    """0.1 + 0.2 versus 0.3 is a tie, not a win by rounding error."""
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert condorcet_winner(X, weights=np.array([0.1, 0.2, 0.3])) == -1
    assert condorcet_winner(X, weights=np.array([0.1, 0.2, 0.29])) == 0


def test_votenrank_table6():
    """Vote'n'Rank Appendix A.1, Table 6: m_B is the Condorcet winner."""
    ranks = np.array([[1, 2, 3, 4], [1, 4, 2, 3], [4, 1, 3, 2], [4, 2, 1, 3], [4, 2, 3, 1]])
    assert condorcet_winner(5.0 - ranks) == 1


def test_absent_system_is_ignored():
    X = np.array([[2.0, 1.0, np.nan], [2.0, 0.0, np.nan]])
    assert condorcet_winner(X) == 0
    res = prospective_systems(X)
    assert res[0][0] and not res[1][0] and res[2] == (False, None)


# --------------------------------------------------------------------------- LP vs exhaustive search


@settings(max_examples=60, deadline=None)
@given(profiles(max_t=4, max_s=5))
def test_max_margin_vs_vertex_enumeration(X):
    for m in range(X.shape[1]):
        margin, w = max_condorcet_margin(X, m)
        if np.isnan(X[:, m]).all():
            assert np.isnan(margin) and w is None
            continue
        ref = ref_max_margin(X, m)
        if np.isinf(ref):
            assert margin == np.inf
            continue
        assert margin == pytest.approx(ref, abs=1e-7)
        assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
        R = ref_R(X)
        assert min(w @ R[:, m, j] for j in opponents(X, m)) == pytest.approx(margin, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(profiles(max_t=4, max_s=5))
def test_prospective_vs_grid(X):
    """Every system some grid weight vector (step 1/12; contains every subset with equal
    weights for T <= 4) makes the Condorcet winner is found by the LP; every LP weight
    vector makes its system the winner when re-evaluated by loops."""
    T, S = X.shape
    res = prospective_systems(X)
    res_weak = prospective_systems(X, strict=False)
    R = ref_R(X)
    grid = simplex_grid(T)
    M = np.einsum("kt,tij->kij", grid, R)  # (K, S, S)
    present = ~np.isnan(X).all(axis=0)
    for m in range(S):
        if not present[m]:
            assert res[m] == (False, None) and res_weak[m] == (False, None)
            continue
        opp = opponents(X, m)
        grid_margin = M[:, m, opp].min(axis=1) if opp else np.full(len(grid), np.inf)
        if (grid_margin > 1e-12).any():
            assert res[m][0], f"grid finds a weight vector making {m} the winner"
        if (grid_margin >= -1e-12).any():
            assert res_weak[m][0]
        ok, w = res[m]
        if ok:
            assert all(w @ R[:, m, j] > 0 for j in opp)
            assert condorcet_winner(X, weights=w) == m
            # the LP margin is optimal: at least the best grid margin
            lp_margin = min((w @ R[:, m, j] for j in opp), default=np.inf)
            assert lp_margin >= grid_margin.max() - 1e-9
        else:
            assert w is None
            assert ref_max_margin(X, m) <= 1e-6
        ok_w, w_w = res_weak[m]
        if ok_w:
            assert all(w_w @ R[:, m, j] >= -1e-9 for j in opp)
        else:
            assert ref_max_margin(X, m) < 0


@settings(max_examples=60, deadline=None)
@given(profiles(max_t=5, max_s=6, min_s=2), st.data())
def test_pareto_dominated_never_prospective(X, data):
    T, S = X.shape
    a, b = data.draw(st.permutations(range(S)))[:2]
    gap = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=T, max_size=T)))
    X = X.copy()
    X[:, a] = X[:, b] - gap  # a never beats b (NaN wherever b is missing)
    if np.isnan(X[:, a]).all():
        return
    assert not prospective_systems(X)[a][0]


@settings(max_examples=40, deadline=None)
@given(profiles(max_t=4, max_s=5), st.data())
def test_prospective_permutation_equivariance(X, data):
    T, S = X.shape
    ps = np.array(data.draw(st.permutations(range(S))))
    pt = np.array(data.draw(st.permutations(range(T))))
    flags = np.array([p for p, _ in prospective_systems(X)])
    flags2 = np.array([p for p, _ in prospective_systems(X[pt][:, ps])])
    np.testing.assert_array_equal(flags2, flags[ps])


def test_single_system_and_errors():
    res = prospective_systems(np.array([[1.0], [2.0]]))
    assert res[0][0] and np.allclose(res[0][1], [0.5, 0.5])
    with pytest.raises(ValueError):
        prospective_systems(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        condorcet_winner(np.zeros((2, 2)), weights=np.array([1.0, -1.0]))
    with pytest.raises(IndexError):
        max_condorcet_margin(np.zeros((2, 2)), 5)


# --------------------------------------------------------------------------- Vote'n'Rank section 3.2


def _read_wide(name):
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    X = np.array([[float(v) if v else np.nan for v in r[1:]] for r in rows[1:]])
    return [r[0] for r in rows[1:]], rows[0][1:], X


@pytest.mark.parametrize(
    ("name", "n_pro", "n_non"), [("vnr_glue.csv", 9, 88), ("vnr_superglue.csv", 10, 12), ("vnr_value.csv", 3, 3)]
)
def test_votenrank_prospective_counts(name, n_pro, n_non):
    """Vote'n'Rank section 3.2: 9/88, 10/12 and 3/3 prospective/non-prospective systems on
    GLUE, SGLUE and VALUE.  The authors' code drops systems with a missing score and uses
    the weak inequality of eq. (2), i.e. ``strict=False`` here."""
    systems, _, X = _read_wide(name)
    keep = ~np.isnan(X).any(axis=1)
    res = prospective_systems(X[keep].T, strict=False)
    n = sum(p for p, _ in res)
    assert (n, len(res) - n) == (n_pro, n_non)
    names = [s for s, k in zip(systems, keep, strict=True) if k]
    flags = dict(zip(names, (p for p, _ in res), strict=True))
    if name == "vnr_superglue.csv":  # "T5 ... prospective ..., whilst ROBERTA is non-prospective"
        assert flags["T5 + UDG, Single Model (Google Brain)"] and not flags["RoBERTa"]
    strict = sum(p for p, _ in prospective_systems(X[keep].T))
    assert strict <= n


def test_votenrank_t5_example():
    """Vote'n'Rank section 3.2: with weight 0.5 on BoolQ accuracy and MultiRC exact match
    (0 elsewhere) T5 (+UDG) is never beaten -- the weak condition G w >= 0 of eq. (2)."""
    systems, tasks, X = _read_wide("vnr_superglue.csv")
    keep = ~np.isnan(X).any(axis=1)
    Xt = X[keep].T
    names = [s for s, k in zip(systems, keep, strict=True) if k]
    w = np.zeros(len(tasks))
    w[tasks.index("BoolQ")] = 0.5
    w[tasks.index("MultiRC_n2")] = 0.5
    m = names.index("T5 + UDG, Single Model (Google Brain)")
    M = majority_margins(Xt, weights=w)
    others = np.arange(len(names)) != m
    assert np.all(M[m, others] >= 0)
    assert not np.all(M[m, others] > 0)  # strict eq. (3) fails: the example needs eq. (2)
