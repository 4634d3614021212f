"""Bradley-Terry from the judges' sufficient statistics (engine.kernels.btlarge), the path of many systems.

References share no code with the module: the statistics and the "beat or tied" graph come from plain
loops over judges and pairs; the fits are compared with choix (ties as half wins), with scipy's
minimiser of a Davidson likelihood written here from the 1970 paper, and with the count-matrix fit
(engine.kernels.battles.fit_bradley_terry, itself checked against choix and scipy in test_battles.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from conftest import bf_pair_counts, require_module
from scipy.sparse.csgraph import connected_components

from engine.kernels import battles as B
from engine.kernels import btlarge as L
from engine.kernels import costs


def _random_table(rng, T, S, *, levels, holes):
    X = rng.integers(0, levels, size=(T, S)).astype(float)
    X[rng.random(X.shape) < holes] = np.nan
    return X


def test_statistics_equal_row_sums_of_the_counts():
    rng = np.random.default_rng(0)
    for case in range(30):
        T, S = int(rng.integers(1, 6)), int(rng.integers(1, 12))
        X = _random_table(rng, T, S, levels=int(rng.integers(1, 5)), holes=0.3 * (case % 2))
        w = rng.choice([0.0, 1.0, 2.0, 0.5], size=T)
        W, Ti = bf_pair_counts(X, w)
        st = L.judge_statistics(X, w)
        np.testing.assert_array_equal(st.points, (W + Ti / 2).sum(axis=1))
        np.testing.assert_array_equal(st.margin, (W - W.T).sum(axis=1) / 2)
        assert st.ties == Ti.sum()
        np.testing.assert_array_equal(st.battles, (W + W.T + Ti).sum(axis=1))


def test_strong_connectivity_equals_the_full_beat_or_tied_graph():
    rng = np.random.default_rng(1)
    seen = set()
    for case in range(200):
        T, S = int(rng.integers(1, 4)), int(rng.integers(2, 9))
        X = _random_table(rng, T, S, levels=int(rng.integers(1, 6)), holes=0.4 * (case % 3 != 0))
        W, Ti = bf_pair_counts(X, np.ones(T))
        N = W + W.T + Ti
        keep = N.sum(axis=1) > 0
        E = ((W > 0) | (Ti > 0))[np.ix_(keep, keep)]
        want = keep.sum() <= 1 or connected_components(E.astype(int), directed=True, connection="strong")[0] == 1
        assert L.judge_statistics(X, np.ones(T)).connected == want, X
        seen.add(bool(want))
    assert seen == {True, False}  # both outcomes were exercised


@pytest.mark.parametrize("tie_model", ["half", "davidson"])
@pytest.mark.parametrize("block", [64, 1 << 21])  # tiny blocks: the mirrored upper triangle is summed across blocks
def test_fit_from_statistics_equals_the_fit_from_count_matrices(tie_model, block, monkeypatch):
    monkeypatch.setattr(L, "_BLOCK_CELLS", block)
    rng = np.random.default_rng(2)
    ridged = 0
    for case in range(40):
        T, S = int(rng.integers(1, 6)), int(rng.integers(2, 30))
        X = _random_table(rng, T, S, levels=int(rng.integers(2, 12)), holes=0.3 * (case % 2))
        w = rng.choice([1.0, 2.0, 3.0], size=T) if case % 3 else np.ones(T)
        W, Ti = bf_pair_counts(X, w)
        if not (W + Ti).any():
            continue
        ref = B.fit_bradley_terry(W, Ti, tie_model=tie_model)
        got, nu, lam, _ = L.fit_statistics(L.judge_statistics(X, w), tie_model=tie_model, ridge_scale=B.RIDGE)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref.strength))
        np.testing.assert_allclose(got, ref.strength, atol=1e-9, rtol=0)
        assert (lam > 0) == (float(ref.ridge) > 0)  # (the count-matrix fit states its ridge in gcd-reduced counts)
        if tie_model == "davidson":
            assert (np.isnan(nu) and np.isnan(float(ref.tie_param))) or nu == pytest.approx(float(ref.tie_param), rel=1e-8)
        ridged += lam > 0
    assert ridged > 0  # some tables had an unbeaten system or groups that never met


def test_many_systems_equal_choix_with_ties_as_half_wins():
    choix = require_module("choix")
    rng = np.random.default_rng(3)
    X = rng.integers(0, 40, size=(6, 300)).astype(float)  # ties within judges
    X[rng.random(X.shape) < 0.1] = np.nan
    W, Ti = bf_pair_counts(X, np.ones(6))
    assert L.judge_statistics(X, np.ones(6)).connected
    ref = choix.ilsr_pairwise_dense(W + 0.5 * Ti, tol=1e-13, max_iter=100_000)
    with costs.forced("bradley_terry", "statistics"):  # the path under test
        np.testing.assert_allclose(B.bradley_terry_across(X), ref - ref.mean(), atol=1e-6, rtol=0)


def test_davidson_from_statistics_equals_scipy_on_the_paper_likelihood():
    """Davidson (1970): P(i wins) = p_i / (p_i + p_j + nu sqrt(p_i p_j)), P(tie) = nu sqrt(p_i p_j) / (...)."""
    rng = np.random.default_rng(4)
    X = rng.integers(0, 4, size=(12, 7)).astype(float)
    W, Ti = bf_pair_counts(X, np.ones(12))
    S = X.shape[1]

    def negll(z):
        s, nu = z[:S], np.exp(z[S])
        val = 0.0
        for i in range(S):
            for j in range(S):
                if i == j:
                    continue
                den = np.exp(s[i]) + np.exp(s[j]) + nu * np.exp((s[i] + s[j]) / 2)
                val += W[i, j] * (s[i] - np.log(den)) + 0.5 * Ti[i, j] * (np.log(nu) + (s[i] + s[j]) / 2 - np.log(den))
        return -val + 1e3 * s.sum() ** 2

    res = scipy.optimize.minimize(negll, np.zeros(S + 1), method="BFGS", options={"gtol": 1e-10})
    got, nu, _, _ = L.fit_statistics(L.judge_statistics(X, np.ones(12)), tie_model="davidson")
    np.testing.assert_allclose(got, res.x[:S] - res.x[:S].mean(), atol=1e-5)
    assert nu == pytest.approx(np.exp(res.x[S]), rel=1e-5)


@pytest.mark.parametrize("path", ["statistics", "dense"])
def test_many_systems_fit_every_distinct_weight_row_once_and_ignore_the_unit(path):
    rng = np.random.default_rng(5)
    X = rng.integers(0, 30, size=(4, 260)).astype(float)
    rows = np.array([[1.0, 0, 2, 1], [2, 0, 4, 2], [1 / 3, 0, 2 / 3, 1 / 3], [0, 1, 1, 2]])
    with costs.forced("bradley_terry", path):
        got = B.bradley_terry_across(X, weights=rows)
        alone = B.bradley_terry_across(X, weights=rows[3])
        stack = B.bradley_terry_across(np.stack([X, X[:, ::-1]]))  # a batch of tables: each its own fit
    # one maximum, whatever the unit (the statistics path fits it once: bit for bit)
    np.testing.assert_allclose(got[1], got[0], atol=0 if path == "statistics" else 1e-9)
    np.testing.assert_allclose(got[2], got[0], atol=0 if path == "statistics" else 1e-9)
    np.testing.assert_allclose(got[3], alone, atol=1e-12)
    assert not np.allclose(got[0], got[3])
    np.testing.assert_allclose(stack[1][::-1], stack[0], atol=1e-12)


def test_many_systems_leave_out_a_system_without_battles_and_scale_to_elo():
    rng = np.random.default_rng(6)
    X = rng.random((3, 270)).round(2)
    X[:, 5] = np.nan
    with costs.forced("bradley_terry", "statistics"):
        s = B.bradley_terry_across(X)
        elo = B.bradley_terry_across(X, scale="elo")
    assert np.isnan(s[5]) and np.isfinite(np.delete(s, 5)).all()
    assert abs(np.nanmean(s)) < 1e-12
    np.testing.assert_allclose(elo, 1000 + 400 * s / np.log(10), atol=1e-9)


def test_davidson_takes_the_ridge_when_strict_wins_do_not_cross_every_cut(monkeypatch):
    """One tie, then one win: under Davidson the gap and nu grow without bound (no MLE) although "beat or tied" is
    strongly connected; the ridge is taken on the strict-win graph, and both paths give the same finite fit."""
    rng = np.random.default_rng(11)
    seen = set()
    for case in range(150):
        T, S = int(rng.integers(1, 4)), int(rng.integers(2, 6))
        X = rng.integers(0, 3, size=(T, S)).astype(float)
        if case == 0:
            X = np.array([[1.0, 1.0], [1.0, 2.0]])
        T = X.shape[0]
        W, Ti = bf_pair_counts(X, np.ones(T))
        N = W + W.T + Ti
        keep = N.sum(axis=1) > 0
        if keep.sum() < 2 or not Ti.any() or not W.any():
            continue
        strict = connected_components((W[np.ix_(keep, keep)] > 0).astype(int), directed=True, connection="strong")[0] == 1
        st = L.judge_statistics(X, np.ones(T))
        assert st.connected_wins == strict
        got, nu, lam, _ = L.fit_statistics(st, tie_model="davidson", ridge_scale=B.RIDGE)
        ref = B.fit_bradley_terry(W, Ti, tie_model="davidson")
        assert (lam > 0) == (float(ref.ridge) > 0) == (not strict)
        assert np.isfinite(got[keep]).all() and np.abs(got[keep]).max() < 100 and 0 < nu < 1e6  # was +-130, nu 1e56
        np.testing.assert_allclose(got, ref.strength, atol=1e-8)
        seen.add(strict)
    assert seen == {True, False}


def test_few_systems_take_real_valued_weights():
    """Weights that are not simple fractions: the two halves of a tie sum may differ in the last bit; the
    count-matrix fit used to refuse them ("tie counts must be symmetric"). Both paths agree."""
    X = np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 1.0], [1.0, 2.0, 2.0], [3.0, 3.0, 0.0]])
    w = np.array([1.0, 2**0.5, np.pi, np.e])
    for tie_model in ("half", "davidson"):
        with costs.forced("bradley_terry", "dense"):
            small = B.bradley_terry_across(X, weights=w, tie_model=tie_model)
        with costs.forced("bradley_terry", "statistics"):
            lean = B.bradley_terry_across(X, weights=w, tie_model=tie_model)
        np.testing.assert_allclose(small, lean, atol=1e-9)
        assert np.isfinite(small).all()
