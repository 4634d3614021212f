"""Pairwise battles (engine.kernels.battles) against choix, scipy, pandas and plain loops written from the definitions.

References here share no code with the engine: battle counts are counted record by record, Bradley-Terry strengths
come from choix (ILSR on the compressed win matrix, ties as half wins) and from scipy's minimiser of an independently
written likelihood (Davidson's ties), Elo from a loop over the battles, HELM's mean win rate from a transcription of
its value-to-wins loop, MTEB's Borda count from the pandas expressions of its leaderboard.
"""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import DATA, require_module

import engine
from engine.errors import VotebenchError
from engine.io.readers.battles import read_battles
from engine.kernels import battles as B
from engine.kernels.battles import A_WINS, B_WINS, TIE


def _random_battles(rng, S, n, *, tie=0.2, spread=1.0):
    theta = spread * rng.standard_normal(S)
    a = rng.integers(0, S, n)
    b = rng.integers(0, S - 1, n)
    b = np.where(b >= a, b + 1, b)
    p = 1.0 / (1.0 + np.exp(theta[b] - theta[a]))
    o = np.where(rng.random(n) < tie, TIE, np.where(rng.random(n) < p, A_WINS, B_WINS))
    return a, b, o


def _loop_counts(a, b, o, S, w=None):
    W = np.zeros((S, S))
    T = np.zeros((S, S))
    for k in range(len(a)):
        x = 1.0 if w is None else w[k]
        if o[k] == A_WINS:
            W[a[k], b[k]] += x
        elif o[k] == B_WINS:
            W[b[k], a[k]] += x
        else:
            T[a[k], b[k]] += x
            T[b[k], a[k]] += x
    return W, T


# ----------------------------------------------------------------------------------------------- counts
def test_battle_counts_equal_a_loop_over_the_records():
    rng = np.random.default_rng(0)
    a, b, o = _random_battles(rng, 7, 500)
    c = B.battle_counts(a, b, o, n_models=8)
    W, T = _loop_counts(a, b, o, 8)
    assert np.array_equal(c.wins, W) and np.array_equal(c.ties, T)
    assert np.array_equal(c.battles_wins, W) and c.n_battles == 500 and not c.present[7]
    w = rng.choice([0.5, 1.0, 1 / 3, 2.0], size=500)
    cw = B.battle_counts(a, b, o, n_models=8, weights=w)
    Ww, Tw = _loop_counts(a, b, o, 8, w)
    np.testing.assert_allclose(cw.wins, Ww, rtol=1e-13)
    np.testing.assert_allclose(cw.ties, Tw, rtol=1e-13)
    perm = rng.permutation(500)  # simple-fraction weights are summed exactly: the record order does not show
    cp = B.battle_counts(a[perm], b[perm], o[perm], n_models=8, weights=w[perm])
    assert np.array_equal(cp.wins, cw.wins) and np.array_equal(cp.ties, cw.ties)


@pytest.mark.parametrize(("a", "b", "o", "match"), [
    ([0, 1], [0, 2], [0, 0], "against itself"),
    ([0, 1], [1, 2], [0, 3], "outcomes must be"),
    ([0, -1], [1, 2], [0, 0], "codes must lie"),
    ([0, 1], [1], [0, 0], "differ in length"),
])
def test_battle_counts_refuse_bad_records(a, b, o, match):
    with pytest.raises(ValueError, match=match):
        B.battle_counts(a, b, o)


def test_judge_battles_of_a_score_tensor_equal_loops():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(6, 5)).astype(float)
    X[rng.random(X.shape) < 0.2] = np.nan
    W = np.zeros((5, 5))
    T = np.zeros((5, 5))
    w = np.array([1.0, 0.5, 2.0, 1 / 3, 1.0, 0.0])
    Ww = np.zeros((5, 5))
    for t in range(6):
        for i in range(5):
            for j in range(5):
                if i == j or math.isnan(X[t, i]) or math.isnan(X[t, j]):
                    continue
                W[i, j] += X[t, i] > X[t, j]
                T[i, j] += X[t, i] == X[t, j]
                Ww[i, j] += w[t] * (X[t, i] > X[t, j])
    got_w, got_t = B.judge_counts(X)
    assert np.array_equal(got_w, W) and np.array_equal(got_t, T)
    np.testing.assert_allclose(B.judge_counts(X, w)[0], Ww, rtol=1e-13)
    a, b, o, judge = B.battles_from_scores(X)
    c = B.battle_counts(a, b, o, n_models=5)
    assert np.array_equal(c.wins, W) and np.array_equal(c.ties, T)
    assert len(a) == sum(int(np.sum(~np.isnan(X[t]))) * (int(np.sum(~np.isnan(X[t]))) - 1) // 2 for t in range(6))
    cs = B.counts_from_scores(X)
    assert np.array_equal(cs.wins, W) and np.array_equal(cs.battles_ties, T)


# ----------------------------------------------------------------------------------------------- Bradley-Terry
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bradley_terry_equals_choix_with_ties_as_half_wins(seed):
    choix = require_module("choix")
    rng = np.random.default_rng(seed)
    S = int(rng.integers(5, 25))
    c = B.battle_counts(*_random_battles(rng, S, 3000), n_models=S)
    fit = B.fit_bradley_terry(c.wins, c.ties)
    assert float(fit.ridge) == 0.0  # dense random battles: the win graph is strongly connected
    ref = choix.ilsr_pairwise_dense(c.wins + 0.5 * c.ties, tol=1e-12, max_iter=10_000)
    ref = ref - ref.mean()
    np.testing.assert_allclose(fit.strength, ref, atol=1e-6, rtol=0)
    elo = B.bradley_terry(c.wins, c.ties, scale="elo")
    np.testing.assert_allclose(elo, 1000 + 400 * ref / math.log(10), atol=1e-5, rtol=0)
    P = B.win_probabilities(fit.strength)
    np.testing.assert_allclose(P[0, 1], 1 / (1 + math.exp(ref[1] - ref[0])), atol=1e-7)


def test_bradley_terry_on_records_equals_choix_opt_pairwise():
    """choix's own optimiser on the raw comparisons (no ties): the same maximum."""
    choix = require_module("choix")
    rng = np.random.default_rng(5)
    a, b, o = _random_battles(rng, 6, 400, tie=0.0)
    data = [(int(x), int(y)) if r == A_WINS else (int(y), int(x)) for x, y, r in zip(a, b, o)]
    ref = choix.opt_pairwise(6, data, alpha=0.0, method="BFGS", tol=1e-12)
    ref = ref - ref.mean()
    got = B.bradley_terry(B.battle_counts(a, b, o).wins)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)


def _davidson_nll(x, W, T):
    """Davidson's negative log-likelihood written pair by pair (independent of the engine's vectorised one)."""
    S = W.shape[0]
    th, nu = x[:-1], math.exp(x[-1])
    total = 0.0
    for i in range(S):
        for j in range(i + 1, S):
            pi, pj = math.exp(th[i]), math.exp(th[j])
            z = pi + pj + nu * math.sqrt(pi * pj)
            total += W[i, j] * math.log(pi / z) + W[j, i] * math.log(pj / z) + T[i, j] * math.log(nu * math.sqrt(pi * pj) / z)
    return -total


def test_davidson_ties_equal_scipy_minimiser():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    S = 5
    theta = rng.standard_normal(S)
    W = np.zeros((S, S))
    T = np.zeros((S, S))
    nu = 0.7
    for i in range(S):
        for j in range(i + 1, S):
            d = theta[i] - theta[j]
            z = math.exp(d / 2) + math.exp(-d / 2) + nu
            n = 60
            W[i, j], W[j, i], t = rng.multinomial(n, [math.exp(d / 2) / z, math.exp(-d / 2) / z, nu / z])
            T[i, j] = T[j, i] = t
    fit = B.fit_bradley_terry(W, T, tie_model="davidson")
    res = minimize(_davidson_nll, np.zeros(S + 1), args=(W, T), method="BFGS", options={"gtol": 1e-10})
    ref = res.x[:-1] - res.x[:-1].mean()
    np.testing.assert_allclose(fit.strength, ref, atol=1e-5, rtol=0)
    assert float(fit.tie_param) == pytest.approx(math.exp(res.x[-1]), rel=1e-5)
    P = B.win_probabilities(fit.strength, tie_param=float(fit.tie_param))
    d = fit.strength[0] - fit.strength[1]
    assert P[0, 1] == pytest.approx(math.exp(d / 2) / (math.exp(d / 2) + math.exp(-d / 2) + float(fit.tie_param)))
    # no tie at all: Davidson's nu is 0 and the fit is the plain Bradley-Terry fit
    plain = B.fit_bradley_terry(W, None, tie_model="davidson")
    assert float(plain.tie_param) == 0.0
    np.testing.assert_allclose(plain.strength, B.bradley_terry(W), atol=1e-12)


def test_ridge_only_when_the_win_graph_is_not_strongly_connected():
    W = np.array([[0, 3, 2, 4], [1, 0, 2, 1], [2, 1, 0, 3], [1, 2, 1, 0]], dtype=float)
    assert float(B.fit_bradley_terry(W).ridge) == 0.0
    unbeaten = W.copy()
    unbeaten[1:, 0] = 0.0  # system 0 never loses: no finite MLE
    fit = B.fit_bradley_terry(unbeaten)
    n_bar = (unbeaten + unbeaten.T).sum() / 4
    assert float(fit.ridge) == pytest.approx(B.RIDGE * n_bar)
    s = fit.strength
    assert np.isfinite(s).all() and s[0] == s.max() and s[0] - np.sort(s)[-2] > 8  # far ahead, but finite
    # the others keep the order of the fit without system 0 (the ridge is tiny)
    rest = B.bradley_terry(W[1:, 1:])
    assert np.array_equal(np.argsort(s[1:]), np.argsort(rest))
    np.testing.assert_allclose(s[1:] - s[1:].mean(), rest, atol=1e-3)
    # two groups that never met: a ridge, and each group centred on its own
    two = np.zeros((4, 4))
    two[0, 1], two[1, 0], two[2, 3], two[3, 2] = 2, 1, 1, 3
    f2 = B.fit_bradley_terry(two)
    assert float(f2.ridge) > 0 and f2.strength[0] > f2.strength[1] and f2.strength[3] > f2.strength[2]
    # a tie counts both ways: a model that never lost but tied once is connected
    tied = unbeaten.copy()
    T = np.zeros((4, 4))
    T[0, 1] = T[1, 0] = 1
    assert float(B.fit_bradley_terry(tied, T).ridge) == 0.0


def test_fits_do_not_depend_on_the_batch_the_scale_or_the_model_order():
    rng = np.random.default_rng(8)
    c = B.battle_counts(*_random_battles(rng, 12, 2000), n_models=12)
    one = B.fit_bradley_terry(c.wins, c.ties).strength
    stack = B.fit_bradley_terry(np.stack([c.wins * 3, c.wins, c.wins[::-1, ::-1]]),
                                np.stack([c.ties * 3, c.ties, c.ties[::-1, ::-1]])).strength
    assert np.array_equal(stack[1], one)  # a fit's bits do not depend on the other fits of its batch
    assert np.array_equal(stack[0], one)  # whole-number counts are divided by their gcd first
    np.testing.assert_allclose(stack[2][::-1], one, atol=1e-12)
    # models without a battle are left out of the fit and get NaN
    W = np.zeros((14, 14))
    W[:12, :12] = c.wins
    T = np.zeros((14, 14))
    T[:12, :12] = c.ties
    f = B.fit_bradley_terry(W, T).strength
    assert np.isnan(f[12:]).all() and np.array_equal(f[:12], one)


# ----------------------------------------------------------------------------------------------- Elo, win rates
def test_online_elo_equals_a_loop_and_depends_on_the_order():
    rng = np.random.default_rng(4)
    a, b, o = _random_battles(rng, 5, 300)
    R = {m: 1000.0 for m in range(5)}
    for x, y, r in zip(a.tolist(), b.tolist(), o.tolist()):
        e = 1 / (1 + 10 ** ((R[y] - R[x]) / 400))
        s = {A_WINS: 1.0, B_WINS: 0.0, TIE: 0.5}[r]
        R[x], R[y] = R[x] + 4 * (s - e), R[y] - 4 * (s - e)
    got = B.elo(a, b, o, n_models=5)
    np.testing.assert_allclose(got, [R[m] for m in range(5)], rtol=0, atol=1e-9)
    assert not np.allclose(B.elo(a[::-1], b[::-1], o[::-1], n_models=5), got, atol=1e-6)


def test_elo_rule_plays_each_task_at_once_in_task_order():
    X = np.array([[3.0, 1.0, np.nan, 2.0], [1.0, 1.0, 2.0, 0.0], [0.0, 2.0, 1.0, np.nan]])
    w = np.array([1.0, 2.0, 0.5])
    R = [1000.0] * 4
    for t in range(3):
        new = list(R)
        for i in range(4):
            for j in range(4):
                if i != j and not math.isnan(X[t, i]) and not math.isnan(X[t, j]):
                    s = 1.0 if X[t, i] > X[t, j] else 0.5 if X[t, i] == X[t, j] else 0.0
                    new[i] += 16 * w[t] * (s - 1 / (1 + 10 ** ((R[j] - R[i]) / 400)))
        R = new
    np.testing.assert_allclose(B.elo_across(X, weights=w, k=16), R, atol=1e-9, rtol=0)


def test_win_rate_equals_a_loop():
    rng = np.random.default_rng(6)
    X = rng.integers(0, 3, size=(5, 4)).astype(float)
    X[0, 1] = np.nan
    w = np.array([1.0, 2.0, 0.5, 1.0, 1 / 3])
    num = np.zeros(4)
    den = np.zeros(4)
    for t in range(5):
        for i in range(4):
            for j in range(4):
                if i != j and not (math.isnan(X[t, i]) or math.isnan(X[t, j])):
                    num[i] += w[t] * (1.0 if X[t, i] > X[t, j] else 0.5 if X[t, i] == X[t, j] else 0.0)
                    den[i] += w[t]
    np.testing.assert_allclose(B.win_rate_across(X, weights=w), num / den, rtol=1e-13)


def _helm_mean_win_rate(X, weights=None):
    """HELM compute_aggregate_row_win_rates, transcribed: value -> wins over sorted values, per column; then the mean."""
    T, S = X.shape
    rates = [[] for _ in range(S)]
    for t in range(T):
        counts = {}
        for s in range(S):
            if not math.isnan(X[t, s]):
                counts[X[t, s]] = counts.get(X[t, s], 0) + 1
        wins, acc = {}, 0
        for value, c in sorted(counts.items()):  # higher is better: ascending values
            wins[value] = acc + (c - 1) / 2
            acc += c
        if acc < 2:
            continue
        for s in range(S):
            if not math.isnan(X[t, s]):
                rates[s].append((wins[X[t, s]] / (acc - 1), 1.0 if weights is None else weights[t]))
    return np.array([sum(r * w for r, w in v) / sum(w for _, w in v) if v else math.nan for v in rates])


@pytest.mark.parametrize("seed", range(4))
def test_mean_win_rate_equals_helm(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(7, 6)).astype(float)
    X[rng.random(X.shape) < 0.25] = np.nan
    X[0, 1:] = np.nan  # a task with a single system is dropped
    np.testing.assert_allclose(B.mean_win_rate_across(X), _helm_mean_win_rate(X), rtol=1e-14, equal_nan=True)
    w = rng.choice([0.5, 1.0, 2.0, 1 / 3], size=7)
    np.testing.assert_allclose(B.mean_win_rate_across(X, weights=w), _helm_mean_win_rate(X, w), rtol=1e-13, equal_nan=True)


def test_mean_win_rate_ties_are_exact():
    """Win rates equal as fractions are equal bits: s1 has (0 + 1 + 1/2) / 3 and s3 (1 + 0) / 2; s0 (1/3 + 0 + 1) / 3."""
    X = np.array([[1.0, 0.0, 2.0, 3.0], [0.0, 2.0, 1.0, np.nan], [2.0, 1.0, np.nan, 0.0]])
    got = B.mean_win_rate_across(X)
    np.testing.assert_allclose(got, _helm_mean_win_rate(X), rtol=1e-15)
    assert got[1] == got[3] == 0.5 and got[0] == 4 / 9 and got[2] == 7 / 12


def _mteb_borda(X):
    """MTEB's leaderboard: per task pandas rank(average, descending), n - rank, summed with NaN skipped."""
    table = pd.DataFrame(X.T)  # rows = models, columns = tasks
    table = table[table.notna().any(axis=1)]
    counts = table.apply(lambda col: len(col) - col.rank(method="average", ascending=False), axis="index")
    return counts.sum(axis=1).reindex(range(X.shape[1])).to_numpy()


@pytest.mark.parametrize("seed", range(4))
def test_mteb_borda_equals_mteb_pandas_expressions(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(5, 7)).astype(float)
    X[rng.random(X.shape) < 0.3] = np.nan
    X[:, 6] = np.nan  # a system without any score is not on the leaderboard
    got = B.mteb_borda_across(X)
    ref = _mteb_borda(X)
    assert np.isnan(got[6])
    np.testing.assert_array_equal(got[:6], ref[:6])


def test_complete_data_rules_agree_with_borda():
    rng = np.random.default_rng(2)
    X = rng.integers(0, 5, size=(6, 8)).astype(float)
    borda = engine.get_rule("borda").kernel(X)
    np.testing.assert_array_equal(B.mteb_borda_across(X), borda)
    np.testing.assert_allclose(B.mean_win_rate_across(X), borda / (6 * 7), rtol=1e-15)
    np.testing.assert_allclose(B.win_rate_across(X), borda / (6 * 7), rtol=1e-15)


# ----------------------------------------------------------------------------------------------- the rules in the engine
def test_rules_rank_a_score_tensor_like_the_battle_functions():
    rng = np.random.default_rng(9)
    X = rng.integers(0, 5, size=(5, 4, 3)).astype(float)  # (system, task, instance)
    s = engine.scores_from_array(X)
    judges = X.reshape(5, 12).T  # every (task, instance) judge
    one = engine.aggregate(s, rule="bradley_terry", level="one").values
    c = B.counts_from_scores(judges)
    np.testing.assert_allclose(one, B.bradley_terry(c.wins, c.ties), atol=1e-12)
    task = engine.aggregate(s, rule="win_rate", level="task").values
    np.testing.assert_allclose(task, B.win_rate_across(X.mean(axis=2).T), rtol=1e-14)
    elo = engine.aggregate(s, rule="bradley_terry", level="task", options={"scale": "elo"}).values
    np.testing.assert_allclose(elo, B.bradley_terry_across(X.mean(axis=2).T, scale="elo"), atol=1e-9)
    with pytest.raises(VotebenchError, match="tie_model"):
        engine.aggregate(s, rule="bradley_terry", options={"tie_model": "thurstone"})


# ----------------------------------------------------------------------------------------------- bootstrap
def test_bootstrap_replicates_depend_on_seed_and_index_only():
    rng = np.random.default_rng(11)
    c = B.battle_counts(*_random_battles(rng, 6, 800), n_models=6)
    W, T = B.resample_battle_counts(c, seed=3, replicates=5)
    W1, T1 = B.resample_battle_counts(c, seed=3, replicates=[3])
    assert np.array_equal(W1[0], W[3]) and np.array_equal(T1[0], T[3])
    assert all(W[r].sum() + T[r].sum() / 2 == 800 for r in range(5))  # every replicate draws n battles
    assert not np.array_equal(W[0], W[1])
    a = B.bootstrap_battles(c, replicates=7, seed=2, block=1)
    b = B.bootstrap_battles(c, replicates=7, seed=2, block=32)
    assert np.array_equal(a.replicate_score, b.replicate_score) and np.array_equal(a.rank_ub, b.rank_ub)


def test_bootstrap_summaries_equal_their_definitions():
    rng = np.random.default_rng(12)
    c = B.battle_counts(*_random_battles(rng, 8, 1500, spread=0.6), n_models=8)
    bb = B.bootstrap_battles(c, replicates=40, seed=1)
    full = B.fit_bradley_terry(c.wins, c.ties).strength
    np.testing.assert_allclose(bb.score, full, atol=1e-12)
    W, T = B.resample_battle_counts(c, seed=1, replicates=40)
    np.testing.assert_allclose(bb.replicate_score, B.fit_bradley_terry(W, T).strength, atol=1e-9)
    R = bb.replicate_score
    lo, hi = np.percentile(R, [2.5, 97.5], axis=0)
    np.testing.assert_allclose(bb.score_low, lo)
    np.testing.assert_allclose(bb.score_high, hi)
    for i in range(8):  # Rank(UB), paired: 1 + #models above this one in at least 95% of the replicates
        assert bb.rank_ub[i] == 1 + sum(np.mean(R[:, j] > R[:, i]) >= 0.95 for j in range(8) if j != i)
        # never below FastChat's marginal bound (1 + #models whose lower bound is above this one's upper bound):
        # disjoint 95% intervals leave at most 2.5% + 2.5% of the replicates out of order
        assert bb.rank_ub[i] >= 1 + sum(lo[j] > hi[i] for j in range(8) if j != i)
        ranks = [1 + sum(R[r, j] > R[r, i] for j in range(8)) for r in range(40)]
        assert bb.rank_low[i] == sorted(ranks)[math.floor(0.025 * 39)]  # an observed rank, not interpolated
        assert bb.rank_high[i] == sorted(ranks)[math.ceil(0.975 * 39)]
        for j in range(8):
            assert bb.prob_above[i, j] == pytest.approx(np.mean(R[:, i] > R[:, j]))
            if i != j:
                assert bb.win_prob[i, j] == pytest.approx(1 / (1 + math.exp(full[j] - full[i])))
    wr = B.bootstrap_battles(c, rule="win_rate", replicates=10, seed=1)
    np.testing.assert_allclose(wr.replicate_score, B.win_rate(W[:10], T[:10]), rtol=1e-14)
    with pytest.raises(ValueError, match="battle bootstrap rule"):
        B.bootstrap_battles(c, rule="elo")


# ----------------------------------------------------------------------------------------------- reading
def _write(tmp_path, fmt, a, b, o, names, extra=None):
    win = np.array(["model_a", "model_b", "tie"])[o]
    df = pd.DataFrame({"model_a": np.array(names)[a], "model_b": np.array(names)[b], "winner": win, **(extra or {})})
    if fmt == "parquet":
        p = tmp_path / "b.parquet"
        df.to_parquet(p)
    elif fmt == "jsonl":
        p = tmp_path / "b.jsonl"
        df.to_json(p, orient="records", lines=True)
    else:
        p = tmp_path / f"b.{fmt}"
        df.to_csv(p, index=False, compression="gzip" if fmt.endswith("gz") else None)
    return p


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "parquet", "jsonl"])
def test_read_battles_gives_the_counts_of_the_records(tmp_path, fmt):
    rng = np.random.default_rng(13)
    a, b, o = _random_battles(rng, 12, 300)
    names = [f"m{i}" for i in range(12)]
    path = _write(tmp_path, fmt, a, b, o, names, extra={"weight": rng.choice([0.5, 1.0], 300)})
    bt = read_battles(path, weight="weight" if fmt != "jsonl" else None)
    assert bt.models == tuple(sorted(names, key=lambda s: int(s[1:])))  # natural order: m2 before m10
    assert [bt.models[i] for i in bt.a] == [names[i] for i in a] and np.array_equal(bt.outcome, o)
    W, T = _loop_counts(a, b, o, 12)
    c = bt.counts() if fmt == "jsonl" else B.battle_counts(bt.a, bt.b, bt.outcome, n_models=12)
    order = [names.index(m) for m in bt.models]
    assert np.array_equal(c.wins, W[np.ix_(order, order)]) and np.array_equal(c.ties, T[np.ix_(order, order)])


@pytest.mark.parametrize(("content", "kw", "match"), [
    ("model_a,model_b,winner\nx,y,model_a\n", {"winner": "result"}, "no column 'result'"),
    ("model_a,model_b,winner\nx,y,left\n", {}, "unknown winner 'left'"),
    ("model_a,model_b,winner\nx,,model_a\n", {}, "empty value"),
    ("model_a,model_b,winner\nx,x,tie\n", {}, "against itself"),
    ("model_a,model_b,winner,w\nx,y,tie,-1\n", {"weight": "w"}, "non-negative"),
])
def test_read_battles_refuses_bad_files_in_one_line(tmp_path, content, kw, match):
    p = tmp_path / "bad.csv"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(VotebenchError, match=match) as exc:
        read_battles(p, **kw)
    assert "\n" not in str(exc.value) and "bad.csv" in str(exc.value)
    with pytest.raises(VotebenchError, match="no such file"):
        read_battles(tmp_path / "missing.csv")


def test_arena_tie_labels_are_ties(tmp_path):
    p = tmp_path / "arena.csv"
    p.write_text("model_a,model_b,winner\nx,y,tie (bothbad)\nx,y,model_b\ny,x,tie\n", encoding="utf-8")
    c = read_battles(p).counts()
    assert c.ties[0, 1] == 2 and c.wins[1, 0] == 1


# ----------------------------------------------------------------------------------------------- the shipped battles file
def test_shipped_tac08_battles_are_derived_from_the_score_file():
    """Re-derive data/battles_tac08.csv.gz from data/colombo_tac08.csv.gz with the csv module (the sidecar's steps)."""
    import csv
    import io

    meta = json.loads((DATA / "battles_tac08.meta.json").read_text(encoding="utf-8"))
    text = gzip.decompress((DATA / "colombo_tac08.csv.gz").read_bytes()).decode("utf-8")
    score = {}
    for system, task, instance, value in list(csv.reader(io.StringIO(text)))[1:]:
        if task.startswith("H:"):
            score[(task, int(instance), system)] = float(value)
    systems = sorted({k[2] for k in score}, key=lambda s: int(s[1:]))
    want = [["model_a", "model_b", "winner", "task", "instance"]]
    for task in sorted({k[0] for k in score}):
        for inst in range(48):
            for i, si in enumerate(systems):
                for sj in systems[i + 1:]:
                    x, y = score[(task, inst, si)], score[(task, inst, sj)]
                    want.append([si, sj, "model_a" if x > y else "model_b" if x < y else "tie", task, str(inst)])
    got = list(csv.reader(io.StringIO(gzip.decompress((DATA / meta["file"]).read_bytes()).decode("utf-8"))))
    assert got == want
    bt = read_battles(DATA / meta["file"])
    assert len(bt.models) == meta["n_models"] == 62 and len(bt.a) == meta["n_battles"]


@pytest.mark.parametrize("cells", [1, 3, 7, 40])
def test_elo_across_in_row_blocks_equals_one_block(monkeypatch, cells):
    """Elo over a score tensor holds its (S, S) battle matrix in blocks of rows (bounded memory for many systems):
    any block size gives the same ratings bit for bit, with missing scores, weights and batch axes."""
    rng = np.random.default_rng(cells)
    X = np.round(rng.random((2, 6, 9)), 1)
    X[rng.random(X.shape) < 0.2] = np.nan
    w = rng.integers(0, 3, 6).astype(float)
    whole = B.elo_across(X, weights=w, k=16)
    monkeypatch.setattr(B, "ELO_BLOCK_CELLS", cells)
    np.testing.assert_array_equal(B.elo_across(X, weights=w, k=16), whole)
