"""Tests of engine.kernels.metrics against plain-loop references, scipy, hand-worked examples and Pavao et al. Table 1."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import DATA, bf_average_ranks, bf_kendall_w, bf_tau_b
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import engine.kernels.metrics as M
from engine.kernels.paircount import kendall_tau_b

# ---------------------------------------------------------------------------------------------
# brute-force references (plain loops, no engine code)
# ---------------------------------------------------------------------------------------------


def present(v) -> bool:
    return not math.isnan(v)


def bf_pearson(u, v) -> float:
    n = len(u)
    if n < 2:
        return math.nan
    mu, mv = sum(u) / n, sum(v) / n
    num = sum((a - mu) * (b - mv) for a, b in zip(u, v))
    du = sum((a - mu) ** 2 for a in u)
    dv = sum((b - mv) ** 2 for b in v)
    if du == 0 or dv == 0:
        return math.nan
    return num / math.sqrt(du * dv)


def bf_common(a, b) -> tuple[list[float], list[float]]:
    idx = [s for s in range(len(a)) if present(a[s]) and present(b[s])]
    return [float(a[s]) for s in idx], [float(b[s]) for s in idx]


def bf_spearman(a, b) -> float:
    ca, cb = bf_common(a, b)
    return bf_pearson(bf_average_ranks(ca), bf_average_ranks(cb))


def bf_kendall(a, b) -> float:
    return bf_tau_b(*bf_common(a, b))


BF_CORR = {"spearman": bf_spearman, "kendall": bf_kendall}


def bf_pairwise(x, method) -> np.ndarray:
    B = len(x)
    out = np.full((B, B), np.nan)
    for i in range(B):
        for j in range(B):
            out[i, j] = BF_CORR[method](x[i], x[j])
    return out


def bf_concordance(x, method) -> float:
    vals = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            c = BF_CORR[method](x[i], x[j])
            if present(c):
                vals.append(c)
    return sum(vals) / len(vals) if vals else math.nan


def bf_rank_intervals(ranks, level):
    B, S = len(ranks), len(ranks[0])
    lo, hi = np.full(S, np.nan), np.full(S, np.nan)
    for s in range(S):
        vals = [ranks[b][s] for b in range(B) if present(ranks[b][s])]
        if vals:  # the observed ranks at either side of the percentile positions (no interpolation)
            v = sorted(vals)
            lo[s] = v[math.floor((len(v) - 1) * (1 - level) / 2)]
            hi[s] = v[math.ceil((len(v) - 1) * (1 + level) / 2)]
    return lo, hi


def bf_prob_above(x) -> np.ndarray:
    B, S = len(x), len(x[0])
    P = np.full((S, S), np.nan)
    for i in range(S):
        for j in range(S):
            both = above = 0
            for b in range(B):
                if present(x[b][i]) and present(x[b][j]):
                    both += 1
                    above += x[b][i] > x[b][j]
            if both:
                P[i, j] = above / both
    return P


def bf_tied_with_leader(point, prob, level) -> np.ndarray:
    S = len(point)
    ranked = [s for s in range(S) if present(point[s])]
    top = max(point[s] for s in ranked)
    leaders = [s for s in ranked if point[s] == top]
    out = np.zeros(S, dtype=bool)
    for j in ranked:
        if j in leaders:
            out[j] = True
        for lead in leaders:
            p = prob[lead][j]
            if not present(p) or p < level:
                out[j] = True
    return out


def bf_winner_average_rank(X, score) -> float:
    S = len(score)
    alive = [s for s in range(S) if present(score[s])]
    m = len(alive)
    if m < 2:
        return math.nan
    top = max(score[s] for s in alive)
    winners = [s for s in alive if score[s] == top]
    vals = []
    for w in winners:
        rs = []
        for row in X:
            sub = [row[s] if s in alive else math.nan for s in range(S)]
            r = bf_average_ranks(sub)[w]
            if present(r):
                rs.append(r)
        if rs:
            vals.append(sum(rs) / len(rs))
    if not vals:
        return math.nan
    avg = sum(vals) / len(vals)
    return 1 - (avg - 1) / (m - 1)


def bf_condorcet(X) -> int:
    S = len(X[0])
    alive = [s for s in range(S) if any(present(row[s]) for row in X)]
    if len(alive) < 2:
        return -1
    for c in alive:
        ok = True
        for d in alive:
            if d == c:
                continue
            both = [row for row in X if present(row[c]) and present(row[d])]
            wins = sum(1 for row in both if row[c] > row[d])
            losses = sum(1 for row in both if row[c] < row[d])
            if not wins > losses:  # majority relation: tied judges count for neither
                ok = False
        if ok:
            return c
    return -1


def bf_topk(score, ref, k, least) -> float:
    def sel(v):
        vals = [(-x if least else x) for x in v]
        chosen = set()
        for s, xs in enumerate(vals):
            if present(xs) and 1 + sum(1 for y in vals if present(y) and y > xs) <= k:
                chosen.add(s)
        return chosen

    if all(not present(v) for v in score) or all(not present(v) for v in ref):
        return math.nan
    return float(sel(score) == sel(ref))


# ---------------------------------------------------------------------------------------------
# random inputs with ties and holes
# ---------------------------------------------------------------------------------------------


def tied(rng, shape, *, values: int = 4, holes: float = 0.0) -> np.ndarray:
    x = rng.integers(0, values, size=shape).astype(np.float64)
    if holes:
        x[rng.random(shape) < holes] = np.nan
    return x


def assert_nan_close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-10, atol=1e-12, equal_nan=True, **kw)


small_rows = arrays(
    np.float64, st.tuples(st.integers(2, 6), st.integers(2, 7)), elements=st.sampled_from([0.0, 1.0, 2.0, 3.0, np.nan])
)


# ---------------------------------------------------------------------------------------------
# average_ranks, spearman
# ---------------------------------------------------------------------------------------------


def test_average_ranks_hand():
    assert_nan_close(M.average_ranks(np.array([3.0, 1.0, 3.0, np.nan, 5.0])), [2.5, 4.0, 2.5, np.nan, 1.0])
    assert_nan_close(M.average_ranks(np.array([[1.0, 1.0, 1.0], [np.nan] * 3])), [[2.0, 2.0, 2.0], [np.nan] * 3])


@pytest.mark.parametrize("seed", range(4))
def test_average_ranks_vs_loops_and_scipy(seed):
    rng = np.random.default_rng(seed)
    x = tied(rng, (3, 4, 7), holes=0.25)
    got = M.average_ranks(x)
    for idx in np.ndindex(3, 4):
        assert_nan_close(got[idx], bf_average_ranks(x[idx]))
        row = x[idx]
        ok = ~np.isnan(row)
        assert_nan_close(got[idx][ok], scipy.stats.rankdata(-row[ok]))


@pytest.mark.parametrize("seed", range(6))
def test_spearman_vs_loops_and_scipy(seed):
    rng = np.random.default_rng(seed)
    a = tied(rng, (5, 8), holes=0.3)
    b = tied(rng, (5, 8), holes=0.3)
    got = M.spearman(a, b)
    assert got.shape == (5,)
    for r in range(5):
        assert_nan_close(got[r], bf_spearman(a[r], b[r]))
        ca, cb = bf_common(a[r], b[r])
        if present(got[r]):
            assert got[r] == pytest.approx(scipy.stats.spearmanr(ca, cb).statistic, abs=1e-12)


def test_spearman_broadcast_and_undefined():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([[4.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0], [np.nan, np.nan, np.nan, 5.0]])
    assert_nan_close(M.spearman(a, b), [-1.0, np.nan, np.nan])
    assert isinstance(M.spearman(a, a), np.float64)
    # restricted to the common systems and re-ranked there
    assert M.spearman(np.array([1.0, 2.0, 3.0, np.nan]), np.array([1.0, 3.0, 2.0, 4.0])) == pytest.approx(0.5)


@settings(max_examples=60)
@given(small_rows)
def test_spearman_symmetric_and_self(x):
    a, b = x[0], x[1]
    assert_nan_close(M.spearman(a, b), M.spearman(b, a))
    ok = ~np.isnan(a)
    s = M.spearman(a, a)
    if ok.sum() >= 2 and np.unique(a[ok]).size > 1:
        assert s == pytest.approx(1.0)
    else:
        assert np.isnan(s)


# ---------------------------------------------------------------------------------------------
# pairwise correlations and concordance
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["spearman", "kendall"])
@pytest.mark.parametrize("holes", [0.0, 0.3])
@pytest.mark.parametrize("seed", range(3))
def test_pairwise_and_concordance_vs_loops(method, holes, seed):
    rng = np.random.default_rng(seed)
    x = tied(rng, (7, 6), values=3, holes=holes)
    x[0] = 1.0  # a constant replicate: its correlations are undefined and skipped
    R = M.pairwise_correlations(x, method=method)
    assert_nan_close(R, bf_pairwise(x, method))
    assert_nan_close(M.concordance(x, method=method), bf_concordance(x, method))


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_pairwise_blocking_invariant(method, monkeypatch):
    """Tiny work blocks (several row blocks, several pair chunks) give the same matrix."""
    rng = np.random.default_rng(11)
    x = tied(rng, (9, 8), values=4, holes=0.3)
    full = M.pairwise_correlations(x, method=method)
    monkeypatch.setattr(M, "_CAP", 70)
    assert_nan_close(M.pairwise_correlations(x, method=method), full)
    assert_nan_close(full, bf_pairwise(x, method))


def test_pairwise_vs_scipy_and_kemeny():
    rng = np.random.default_rng(5)
    x = tied(rng, (6, 9), values=5, holes=0.2)
    K = M.pairwise_correlations(x, method="kendall")
    Sp = M.pairwise_correlations(x, method="spearman")
    for i, j in itertools.combinations(range(6), 2):
        ca, cb = bf_common(x[i], x[j])
        assert K[i, j] == pytest.approx(scipy.stats.kendalltau(ca, cb).statistic, abs=1e-12)
        assert K[i, j] == pytest.approx(float(kendall_tau_b(x[i], x[j])), abs=1e-12)
        assert Sp[i, j] == pytest.approx(scipy.stats.spearmanr(ca, cb).statistic, abs=1e-12)


def test_concordance_same_mask_path_vs_loops():
    """Every replicate misses the same systems: the rank-matrix path (no re-ranking needed)."""
    rng = np.random.default_rng(2)
    x = tied(rng, (6, 7), values=4)
    x[:, [1, 4]] = np.nan
    assert_nan_close(M.pairwise_correlations(x), bf_pairwise(x, "spearman"))


def test_concordance_hand_and_batch():
    x = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    assert M.concordance(x) == pytest.approx(-1 / 3)
    assert M.concordance(x, method="kendall") == pytest.approx(-1 / 3)
    assert np.isnan(M.concordance(np.ones((3, 4))))
    batch = np.stack([x, x[::-1, ::-1] * 2])
    assert_nan_close(M.concordance(batch), [M.concordance(x), M.concordance(batch[1])])
    with pytest.raises(ValueError, match="method"):
        M.concordance(x, method="pearson")


@settings(max_examples=40)
@given(arrays(np.float64, st.integers(2, 8), elements=st.sampled_from([0.0, 1.0, 2.0, 5.0, np.nan])), st.integers(2, 6))
def test_concordance_identical_rankings_is_one(row, B):
    x = np.tile(row, (B, 1))
    ok = ~np.isnan(row)
    for method in ("spearman", "kendall"):
        c = M.concordance(x, method=method)
        if ok.sum() >= 2 and np.unique(row[ok]).size > 1:
            assert c == pytest.approx(1.0)
        else:
            assert np.isnan(c)


@settings(max_examples=40)
@given(small_rows, st.randoms(use_true_random=False))
def test_concordance_permutation_invariant(x, rnd):
    perm = list(range(x.shape[1]))
    rnd.shuffle(perm)
    rows = list(range(x.shape[0]))
    rnd.shuffle(rows)
    for method in ("spearman", "kendall"):
        assert_nan_close(M.concordance(x[:, perm], method=method), M.concordance(x, method=method))
        assert_nan_close(M.concordance(x[rows], method=method), M.concordance(x, method=method))


# ---------------------------------------------------------------------------------------------
# Kendall's W
# ---------------------------------------------------------------------------------------------


def test_kendall_w_hand():
    # ranks: J1 1 2 3 4 | J2 1 3 2 4 | J3 1.5 1.5 3.5 3.5 ; rank sums 3.5 6.5 8.5 11.5, mean 7.5 -> S = 34
    # ties: J3 has two pairs -> sum T = 12; W = 12 * 34 / (9 * 60 - 3 * 12) = 17/21
    X = np.array([[4.0, 3.0, 2.0, 1.0], [4.0, 2.0, 3.0, 1.0], [3.0, 3.0, 1.0, 1.0]])
    assert M.kendall_w(X) == pytest.approx(17 / 21)
    assert M.kendall_w(X, ties=False) == pytest.approx(12 * 34 / 540)
    assert isinstance(M.kendall_w(X), np.float64)


@pytest.mark.parametrize("seed", range(5))
def test_kendall_w_vs_loops(seed):
    rng = np.random.default_rng(seed)
    X = tied(rng, (4, 5, 6), values=3)
    got = M.kendall_w(X)
    got_nt = M.kendall_w(X, ties=False)
    for b in range(4):
        assert_nan_close(got[b], bf_kendall_w(X[b].tolist()))
        assert_nan_close(got_nt[b], bf_kendall_w(X[b].tolist(), ties=False))


def test_kendall_w_missing_policies():
    rng = np.random.default_rng(3)
    X = tied(rng, (6, 5), values=4)
    X[1, 2] = np.nan
    X[4, 0] = np.nan
    with pytest.raises(ValueError, match="2 missing"):
        M.kendall_w(X)
    keep = ~np.isnan(X).any(axis=1)
    assert_nan_close(M.kendall_w(X, missing="drop-judges"), bf_kendall_w(X[keep].tolist()))
    cols = ~np.isnan(X).any(axis=0)
    assert_nan_close(M.kendall_w(X, missing="listwise"), bf_kendall_w(X[:, cols].tolist()))
    assert np.isnan(M.kendall_w(np.ones((3, 4))))  # every judge constant


@settings(max_examples=60)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(2, 6)), elements=st.sampled_from([0.0, 1.0, 2.0, 3.0])),
    st.randoms(use_true_random=False),
)
def test_kendall_w_properties(X, rnd):
    w = M.kendall_w(X)
    if np.isnan(w):
        assert all(np.unique(r).size == 1 for r in X)
        return
    assert -1e-12 <= w <= 1 + 1e-12
    assert_nan_close(w, bf_kendall_w(X.tolist()))
    perm = list(range(X.shape[1]))
    rnd.shuffle(perm)
    assert_nan_close(M.kendall_w(X[:, perm]), w)
    assert_nan_close(M.kendall_w(-X), w)  # reversing every judge
    row = X[0]
    if np.unique(row).size > 1:
        assert M.kendall_w(np.tile(row, (X.shape[0], 1))) == pytest.approx(1.0)


#: Pavao et al. (2021), Table 1, column W (datasets are the judges)
PAVAO_W = {"autodl_auc": 0.38, "autodl_alc": 0.60, "automl": 0.27, "artificial": 0.00, "statlog": 0.27}


@pytest.mark.parametrize("name", sorted(PAVAO_W))
def test_kendall_w_pavao_table1(name):
    df = pd.read_csv(DATA / f"esann_{name}.csv", index_col="system")  # rows: algorithms (candidates)
    meta = json.loads((DATA / f"esann_{name}.meta.json").read_text())
    sign = np.array([1.0 if meta["higher_is_better"][t] else -1.0 for t in df.columns])
    X = df.to_numpy(dtype=float).T * sign[:, None]  # (judges, candidates), oriented
    assert round(float(M.kendall_w(X)), 2) == pytest.approx(PAVAO_W[name], abs=1e-9)


# ---------------------------------------------------------------------------------------------
# rank intervals, prob_above, tied_with_leader
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.95, 0.5, 0.8])
@pytest.mark.parametrize("seed", range(3))
def test_rank_intervals_vs_loops(level, seed):
    rng = np.random.default_rng(seed)
    x = tied(rng, (13, 6), values=5, holes=0.3)
    x[:, 3] = np.nan  # never present
    ranks = M.average_ranks(x)
    lo, hi = M.rank_intervals(ranks, level=level)
    blo, bhi = bf_rank_intervals(ranks, level)
    assert_nan_close(lo, blo)
    assert_nan_close(hi, bhi)
    assert np.isnan(lo[3]) and np.isnan(hi[3])
    with pytest.raises(ValueError, match="level"):
        M.rank_intervals(ranks, level=1.5)


def test_rank_intervals_default_percentiles():
    ranks = np.arange(1.0, 42.0)[:, None] * np.ones((1, 2))
    lo, hi = M.rank_intervals(ranks)
    assert_nan_close(lo, [2.0, 2.0])  # 2.5th percentile of 1..41: position 0.025 * 40 = 1 exactly -> rank 2
    assert_nan_close(hi, [40.0, 40.0])
    lo, hi = M.rank_intervals(np.arange(1.0, 22.0)[:, None] * np.ones((1, 2)))
    assert_nan_close(lo, [1.0, 1.0])  # position 0.025 * 20 = 0.5: the lower rank, 1 (not the interpolated 1.5)
    assert_nan_close(hi, [21.0, 21.0])  # position 19.5: the higher rank, 21 (not 20.5)


@pytest.mark.parametrize("seed", range(4))
def test_prob_above_vs_loops(seed):
    rng = np.random.default_rng(seed)
    x = tied(rng, (10, 6), values=3, holes=0.3)
    x[:, 5] = np.nan
    P = M.prob_above(x)
    B = bf_prob_above(x)
    np.fill_diagonal(B, 0.0)
    B[5, 5] = np.nan
    assert_nan_close(P, B)
    both = ~np.isnan(P) & ~np.isnan(P.T)
    assert (P[both] + P.T[both] <= 1 + 1e-12).all()


def test_prob_above_hand():
    P = M.prob_above(np.array([[2.0, 1.0], [1.0, 1.0], [3.0, np.nan]]))
    assert_nan_close(P, [[0.0, 0.5], [0.0, 0.0]])


def test_tied_with_leader_hand():
    P = np.array([[0.0, 0.9, 0.99], [0.1, 0.0, 0.6], [0.0, 0.3, 0.0]])
    assert M.tied_with_leader(np.array([3.0, 2.0, 1.0]), P).tolist() == [True, True, False]
    assert M.tied_with_leader(np.array([3.0, 2.0, 1.0]), P, level=0.85).tolist() == [True, False, False]
    # two leaders: tied with either one suffices; system 2 separated from 0 but not from 1
    assert M.tied_with_leader(np.array([3.0, 3.0, 1.0]), P).tolist() == [True, True, True]
    assert M.tied_with_leader(np.array([3.0, np.nan, 1.0]), P).tolist() == [True, False, False]


@pytest.mark.parametrize("seed", range(6))
def test_tied_with_leader_vs_loops(seed):
    rng = np.random.default_rng(seed)
    x = tied(rng, (20, 6), values=3, holes=0.2)
    x[:, 4] = np.nan
    point = rng.integers(0, 3, size=6).astype(float)
    point[1] = np.nan
    P = M.prob_above(x)
    for level in (0.5, 0.8, 0.95):
        got = M.tied_with_leader(point, P, level=level)
        assert got.tolist() == bf_tied_with_leader(point, P, level).tolist()


# ---------------------------------------------------------------------------------------------
# Pavao criteria
# ---------------------------------------------------------------------------------------------


def test_winner_average_rank_hand():
    X = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0]])
    assert M.winner_average_rank(X, np.array([1.0, 0.0, 0.0])) == pytest.approx(0.5)  # ranks 1 and 3
    assert M.winner_average_rank(X, np.array([1.0, 1.0, 0.0])) == pytest.approx(0.625)  # mean of 0.5 and 0.75
    # system 2 absent: m = 2, system 0 ranks 1 then 2
    assert M.winner_average_rank(X, np.array([1.0, 0.0, np.nan])) == pytest.approx(0.5)


@pytest.mark.parametrize("seed", range(4))
def test_winner_average_rank_vs_loops(seed):
    rng = np.random.default_rng(seed)
    X = tied(rng, (5, 4, 6), values=3, holes=0.15)
    score = tied(rng, (5, 6), values=3, holes=0.2)
    got = M.winner_average_rank(X, score)
    for b in range(5):
        assert_nan_close(got[b], bf_winner_average_rank(X[b].tolist(), score[b].tolist()))


def test_condorcet_hand():
    # A>B>C, B>A>C, A>C>B : A beats B 2-1 and C 3-0
    X = np.array([[3.0, 2.0, 1.0], [2.0, 3.0, 1.0], [3.0, 1.0, 2.0]])
    assert int(M.condorcet_winner_index(X)) == 0
    cycle = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0], [2.0, 1.0, 3.0]])
    assert int(M.condorcet_winner_index(cycle)) == -1
    split = np.array([[2.0, 1.0], [1.0, 2.0]])  # 1-1: no strict majority
    assert int(M.condorcet_winner_index(split)) == -1
    ties = np.array([[2.0, 1.0], [1.0, 1.0], [1.0, 1.0]])  # 1 win, 0 losses, 2 ties: a majority win
    assert int(M.condorcet_winner_index(ties)) == 0
    batch = np.stack([X, cycle])
    assert M.condorcet_winner_index(batch).tolist() == [0, -1]
    assert M.condorcet_rate(batch, np.array([[5.0, 1.0, 0.0], [0.0, 0.0, 0.0]])) == 1.0
    assert M.condorcet_rate(batch, np.array([[5.0, 5.0, 0.0], [0.0, 0.0, 0.0]])) == 1.0  # tied at the top counts
    assert M.condorcet_rate(batch, np.array([[1.0, 5.0, 0.0], [0.0, 0.0, 0.0]])) == 0.0
    assert np.isnan(M.condorcet_rate(cycle, np.zeros(3)))


@pytest.mark.parametrize("seed", range(4))
def test_condorcet_vs_loops(seed):
    rng = np.random.default_rng(seed)
    X = tied(rng, (40, 5, 4), values=4, holes=0.15)
    X[0, :, 1:] = np.nan  # a single present system
    idx = M.condorcet_winner_index(X)
    ref = [bf_condorcet(X[b].tolist()) for b in range(40)]
    assert idx.tolist() == ref
    assert idx[0] == -1
    score = tied(rng, (40, 4), values=3)
    hits = [score[b, ref[b]] == score[b].max() for b in range(40) if ref[b] >= 0]
    assert sum(1 for r in ref if r >= 0) > 0
    assert M.condorcet_rate(X, score) == pytest.approx(sum(hits) / len(hits))


def test_generalization_hand():
    score = np.array([3.0, 2.0, 1.0])
    X_out = np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])  # the constant judge is skipped
    assert M.generalization(score, X_out) == pytest.approx(0.0)
    assert M.generalization(score, X_out, mask_out=np.array([True, False, True])) == pytest.approx(1.0)
    assert np.isnan(M.generalization(score, X_out, mask_out=np.array([False, False, True])))


@pytest.mark.parametrize("method", ["spearman", "kendall"])
@pytest.mark.parametrize("seed", range(3))
def test_generalization_vs_loops(method, seed):
    rng = np.random.default_rng(seed)
    score = tied(rng, (4, 7), values=4, holes=0.2)
    X_out = tied(rng, (4, 5, 7), values=3, holes=0.2)
    mask = rng.random((4, 5)) < 0.7
    got = M.generalization(score, X_out, method=method, mask_out=mask)
    for b in range(4):
        vals = [BF_CORR[method](score[b], X_out[b, t]) for t in range(5) if mask[b, t]]
        vals = [v for v in vals if present(v)]
        assert_nan_close(got[b], sum(vals) / len(vals) if vals else math.nan)


# ---------------------------------------------------------------------------------------------
# top-k agreement
# ---------------------------------------------------------------------------------------------


def test_topk_hand():
    s = np.array([3.0, 2.0, 2.0, 1.0])
    assert M.topk_agreement(s, np.array([3.0, 2.0, 1.0, 0.0]), 2) == 0.0  # {0, 1, 2} vs {0, 1}
    assert M.topk_agreement(s, np.array([3.0, 2.0, 2.5, 0.0]), 2) == 0.0
    assert M.topk_agreement(s, np.array([9.0, 2.0, 2.0, 0.0]), 2) == 1.0
    assert M.topk_agreement(s, np.array([9.0, 2.0, 3.0, 0.0]), 3) == 1.0
    assert M.topk_agreement(s, np.array([5.0, 2.0, 3.0, 0.0]), 1, least=True) == 1.0
    assert M.topk_agreement(s, np.array([0.0, 2.0, 3.0, 9.0]), 1, least=True) == 0.0
    assert np.isnan(M.topk_agreement(s, np.full(4, np.nan), 1))
    with pytest.raises(ValueError, match="k"):
        M.topk_agreement(s, s, 0)


@pytest.mark.parametrize("seed", range(4))
def test_topk_vs_loops(seed):
    rng = np.random.default_rng(seed)
    a = tied(rng, (30, 5), values=3, holes=0.1)
    b = tied(rng, (30, 5), values=3, holes=0.1)
    b[::2] = a[::2] + rng.integers(0, 2, size=(15, 5))  # half the pairs close: both outcomes occur
    seen = set()
    for k in (1, 2, 3):
        for least in (False, True):
            got = M.topk_agreement(a, b, k, least=least)
            ref = [bf_topk(a[r], b[r], k, least) for r in range(30)]
            assert_nan_close(got, ref)
            seen |= set(got[~np.isnan(got)].tolist())
    assert seen == {0.0, 1.0}


# ---------------------------------------------------------------------------------------------
# permuting the systems consistently leaves every metric invariant
# ---------------------------------------------------------------------------------------------


@settings(max_examples=40)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 6), st.integers(2, 6)), elements=st.sampled_from([0.0, 1.0, 2.0, np.nan])),
    st.randoms(use_true_random=False),
)
def test_system_permutation_invariance(x, rnd):
    S = x.shape[1]
    perm = np.array(rnd.sample(range(S), S))
    inv = np.argsort(perm)
    xp = x[:, perm]
    point = np.nan_to_num(x[0], nan=-1.0)
    assert_nan_close(M.average_ranks(xp), M.average_ranks(x)[:, perm])
    assert_nan_close(M.prob_above(xp), M.prob_above(x)[np.ix_(perm, perm)])
    lo, hi = M.rank_intervals(M.average_ranks(x))
    lop, hip = M.rank_intervals(M.average_ranks(xp))
    assert_nan_close(lop, lo[perm])
    assert_nan_close(hip, hi[perm])
    P = M.prob_above(x)
    assert M.tied_with_leader(point[perm], P[np.ix_(perm, perm)]).tolist() == M.tied_with_leader(point, P)[perm].tolist()
    assert_nan_close(M.winner_average_rank(xp, point[perm]), M.winner_average_rank(x, point))
    c, cp = int(M.condorcet_winner_index(x)), int(M.condorcet_winner_index(xp))
    assert cp == (-1 if c < 0 else int(inv[c]))
    assert_nan_close(M.condorcet_rate(xp, point[perm]), M.condorcet_rate(x, point))
    assert_nan_close(M.generalization(point[perm], xp), M.generalization(point, x))
    for k in (1, 2):
        assert_nan_close(M.topk_agreement(xp[0], xp[-1], k), M.topk_agreement(x[0], x[-1], k))


@pytest.mark.parametrize("method", ["spearman", "kendall"])
@pytest.mark.parametrize("seed", range(4))
def test_rows_restricting_one_vector_vs_loops(method, seed):
    """Candidate resamples of a separable rule: every row is the same score vector with holes (ties included)."""
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 4, size=9).astype(float)
    v[1] = v[0]
    x = np.tile(v, (8, 1))
    x[rng.random(x.shape) < 0.45] = np.nan
    x[0, :] = np.nan
    x[0, :2] = v[:2]  # a row whose systems all tie: undefined against everything
    assert M._agreeing_rows_matrix(x) is not None
    assert_nan_close(M.pairwise_correlations(x, method=method), bf_pairwise(x, method))
    assert_nan_close(M.concordance(x, method=method), bf_concordance(x, method))
    y = x.copy()
    y[3, np.flatnonzero(~np.isnan(y[3]))[0]] += 0.5  # one disagreement: the general path
    assert M._agreeing_rows_matrix(y) is None
    assert_nan_close(M.pairwise_correlations(y, method=method), bf_pairwise(y, method))


# ---------------------------------------------------------------------------------------------
# top-k overlap (kind="overlap"): Vote'n'Rank / Colombo agreement
# ---------------------------------------------------------------------------------------------


def bf_topk_overlap(score, ref, k, least) -> float:
    """Share of common systems among the k best (worst) ranked ones, ties taken in system order."""
    def sel(v):
        ranked = [s for s in range(len(v)) if present(v[s])]
        # sorted() is stable: tied systems keep their index order
        ranked = sorted(ranked, key=lambda s: v[s] if least else -v[s])
        return set(ranked[:k])

    if all(not present(v) for v in score) or all(not present(v) for v in ref):
        return math.nan
    return len(sel(score) & sel(ref)) / k


@pytest.mark.parametrize("seed", range(4))
def test_topk_overlap_vs_loops(seed):
    rng = np.random.default_rng(seed)
    a = tied(rng, (40, 6), values=3, holes=0.15)
    b = tied(rng, (40, 6), values=3, holes=0.15)
    b[::2] = a[::2] + rng.integers(0, 2, size=(20, 6))
    a[5] = np.nan  # a ranking of nothing
    seen = set()
    for k in (1, 2, 3, 4, 7):
        for least in (False, True):
            got = M.topk_agreement(a, b, k, least=least, kind="overlap")
            ref = [bf_topk_overlap(a[r], b[r], k, least) for r in range(40)]
            assert_nan_close(got, ref)
            assert np.isnan(got[5])
            seen |= set(got[~np.isnan(got)].tolist())
    assert {0.0, 1.0} < seen  # partial overlaps occur as well


def test_topk_overlap_hand():
    a = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    b = np.array([5.0, 3.0, 4.0, 1.0, 2.0])
    got = [float(M.topk_agreement(a, b, k, kind="overlap")) for k in (1, 2, 3)]
    assert got == [1.0, 0.5, 1.0]
    assert float(M.topk_agreement(a, b, 1, least=True, kind="overlap")) == 0.0
    assert float(M.topk_agreement(a, b, 2, least=True, kind="overlap")) == 1.0
    # ties across the k-th place: system order decides ({0, 1} vs {0, 2}); "identical" compares {0, 1, 2} with {0, 2}
    s, r = np.array([3.0, 2.0, 2.0, 1.0]), np.array([3.0, 1.0, 2.0, 0.0])
    assert float(M.topk_agreement(s, r, 2, kind="overlap")) == 0.5
    assert float(M.topk_agreement(s, r, 2)) == 0.0
    # leading axes broadcast, default kind unchanged
    assert M.topk_agreement(np.stack([a, b]), b, 2, kind="overlap").tolist() == [0.5, 1.0]
    with pytest.raises(ValueError, match="kind"):
        M.topk_agreement(a, b, 1, kind="share")


def test_masked_spearman_in_small_cache_steps(monkeypatch):
    """Several cache-sized steps per block give the same matrix (and the loops' values)."""
    rng = np.random.default_rng(21)
    x = tied(rng, (9, 8), values=4, holes=0.3)
    full = M.pairwise_correlations(x)
    monkeypatch.setattr(M, "_CACHE", 20)
    assert_nan_close(M.pairwise_correlations(x), full)
    assert_nan_close(full, bf_pairwise(x, "spearman"))


def test_agreeing_rows_with_many_tie_classes_take_the_general_path():
    rng = np.random.default_rng(3)
    v = np.repeat(np.arange(70.0), 2)  # 70 tie classes of two systems
    x = np.tile(v, (5, 1))
    x[rng.random(x.shape) < 0.3] = np.nan
    assert M._agreeing_rows_matrix(x) is None
    assert_nan_close(M.pairwise_correlations(x), bf_pairwise(x, "spearman"))
