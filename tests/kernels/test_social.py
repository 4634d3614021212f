"""Vote'n'Rank rules against brute-force references, the paper's worked example and axioms."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.kernels import social as V
from engine.kernels.aggregate import borda_across

# ----------------------------------------------------------------------------------------------
# brute-force references (plain loops, definitions of Vote'n'Rank section 2.2 and eq. 1-3)
# ----------------------------------------------------------------------------------------------


def positions_from_top(col):
    """For each present system: (first, last) 0-based positions from the top it shares with its ties."""
    out = {}
    present = [i for i, v in enumerate(col) if not math.isnan(v)]
    for i in present:
        above = sum(1 for j in present if col[j] > col[i])
        tied = sum(1 for j in present if col[j] == col[i])
        out[i] = (above, above + tied - 1)
    return out, len(present)


def ref_scoring(X, vector_fn, w=None):
    T, S = X.shape
    w = np.ones(T) if w is None else w
    tot = np.zeros(S)
    seen = np.zeros(S, bool)
    for t in range(T):
        pos, n = positions_from_top(X[t])
        if n == 0:
            continue
        c = vector_fn(n)
        for i, (a, b) in pos.items():
            tot[i] += w[t] * np.mean(c[a : b + 1])
            seen[i] = True
    return np.where(seen, tot, np.nan)


def R(X, a, b, t):
    x, y = X[t, a], X[t, b]
    if math.isnan(x) or math.isnan(y):
        return 0
    return 1 if x > y else (-1 if x < y else 0)


def ref_margin(X, w=None):
    T, S = X.shape
    w = np.ones(T) if w is None else w
    return np.array([[sum(w[t] * R(X, a, b, t) for t in range(T)) for b in range(S)] for a in range(S)])


def ref_wins(X, a, b, w):
    return sum(w[t] for t in range(X.shape[0]) if R(X, a, b, t) == 1)


def ref_copeland(X, w=None):
    M = ref_margin(X, w)
    S = X.shape[1]
    return np.array([sum(M[a, b] > 0 for b in range(S)) - sum(M[a, b] < 0 for b in range(S)) for a in range(S)], float)


def ref_minimax(X, w=None):
    T, S = X.shape
    w = np.ones(T) if w is None else w
    M = ref_margin(X, w)
    out = []
    for m in range(S):
        s = [ref_wins(X, b, m, w) if M[b, m] > 0 else 0.0 for b in range(S) if b != m]
        out.append(-max(s) if s else 0.0)
    return np.array(out, float)


def ref_condorcet(X, w=None):
    """1 for the system beating every other present system by majority (absent systems are no candidates)."""
    M = ref_margin(X, w)
    S = X.shape[1]
    cand = [b for b in range(S) if not np.isnan(X[:, b]).all()]
    return np.array([float(a in cand and all(M[a, b] > 0 for b in cand if b != a)) for a in range(S)])


def ref_borda_among(X, alive, w):
    """Borda points restricted to the systems in ``alive`` (ties 0.5), summed over tasks."""
    T = X.shape[0]
    out = {}
    for i in alive:
        out[i] = sum(
            w[t] * (sum(X[t, j] < X[t, i] for j in alive) + 0.5 * sum(X[t, j] == X[t, i] for j in alive if j != i))
            for t in range(T)
        )
    return out


def ref_baldwin(X, w=None):
    T, S = X.shape
    w = np.ones(T) if w is None else w
    alive = list(range(S))
    score = np.zeros(S)
    rnd = 0
    while len(alive) > 1:
        b = {i: round(v, 9) for i, v in ref_borda_among(X, alive, w).items()}
        lo, hi = min(b.values()), max(b.values())
        if lo == hi:
            break
        out = [i for i in alive if b[i] == lo]
        for i in out:
            score[i] = rnd
        alive = [i for i in alive if i not in out]
        rnd += 1
    for i in alive:
        score[i] = S
    return score


def ref_threshold(X, w=None):
    T, S = X.shape
    keys = []
    for k in range(1, S):
        keys.append(ref_scoring(X, lambda n, k=k: np.r_[np.ones(max(n - k, 0)), np.zeros(min(k, n))], w))
    K = np.stack(keys, axis=1) if keys else np.zeros((S, 0))
    tup = [tuple(np.round(K[i], 9)) for i in range(S)]  # equal fractions summed in other orders are equal
    return np.array([sum(tup[i] > tup[j] for j in range(S)) for i in range(S)], float)


def _rank_order_ranks(ranks):
    """Scores from per-task rank lists (Vote'n'Rank Table 6): position 1 gets the highest score."""
    n = len(ranks)
    X = np.zeros((len(ranks[0]), n))
    for r, row in enumerate(ranks):
        for t, m in enumerate(row):
            X[t, "ABCD".index(m)] = n - r
    return X


# Vote'n'Rank Appendix A.1, Table 6 (rows: rank 1..4, columns: tasks 1..5)
TABLE6 = _rank_order_ranks([list("AABCD"), list("BCDBB"), list("CDCDC"), list("DBAAA")])

profiles = st.integers(2, 5).flatmap(
    lambda s: st.integers(1, 5).flatmap(
        lambda t: arrays(np.float64, (t, s), elements=st.sampled_from([0.0, 1.0, 2.0, 3.0, np.nan]))
    )
)
strict_profiles = st.integers(2, 5).flatmap(
    lambda s: st.integers(1, 6).flatmap(lambda t: st.lists(st.permutations(list(range(s))), min_size=t, max_size=t))
).map(lambda rows: np.array(rows, dtype=float))


def _weights_for(X, data):
    return np.array(
        data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 1 / 3]), min_size=X.shape[0], max_size=X.shape[0]))
    )


# ----------------------------------------------------------------------------------------------
# worked example
# ----------------------------------------------------------------------------------------------
def test_table6_worked_example():
    X = TABLE6
    np.testing.assert_allclose(V.plurality_across(X), [2, 1, 1, 1])
    np.testing.assert_allclose(borda_across(X), [6, 9, 8, 7])
    np.testing.assert_allclose(V.dowdall_across(X), [2.75, 2.75, 2.5, 1.75 + 2 / 3])
    # Threshold: (1,1,1,0) gives A=2, B=4, C=5, D=4: C wins, then B before D by (1,1,0,0)
    assert np.argmax(V.threshold_across(X)) == 2
    np.testing.assert_allclose(ref_scoring(X, lambda n: np.r_[np.ones(n - 1), 0.0]), [2, 4, 5, 4])
    # Baldwin: A out (6), then D (B 6, C 5, D 4), then C (B 3, C 2): B wins
    b = V.baldwin_across(X)
    assert list(np.argsort(-b)) == [1, 2, 3, 0]
    np.testing.assert_allclose(V.condorcet_across(X), [0, 1, 0, 0])
    np.testing.assert_allclose(V.copeland_across(X), [-3, 3, 1, -1])
    np.testing.assert_allclose(V.minimax_across(X), [-3, 0, -3, -3])


# ----------------------------------------------------------------------------------------------
# brute force on random profiles with ties, NaN and weights
# ----------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(profiles, st.data())
def test_majority_rules_match_brute_force(X, data):
    w = _weights_for(X, data) if data.draw(st.booleans()) else None
    np.testing.assert_allclose(V.copeland_across(X, weights=w), np.where(np.isnan(X).all(0), np.nan, ref_copeland(X, w)))
    np.testing.assert_allclose(V.minimax_across(X, weights=w), np.where(np.isnan(X).all(0), np.nan, ref_minimax(X, w)))
    np.testing.assert_allclose(V.condorcet_across(X, weights=w), np.where(np.isnan(X).all(0), np.nan, ref_condorcet(X, w)))


@settings(max_examples=150, deadline=None)
@given(profiles, st.data())
def test_pairwise_counts_match_brute_force(X, data):
    w = _weights_for(X, data) if data.draw(st.booleans()) else None
    wins, ties = V.pairwise_counts(X, weights=w)
    ww = np.ones(X.shape[0]) if w is None else w
    S = X.shape[1]
    for a, b in itertools.product(range(S), range(S)):
        assert wins[a, b] == pytest.approx(ref_wins(X, a, b, ww))
        expect_tie = 0.0 if a == b else sum(ww[t] for t in range(X.shape[0]) if X[t, a] == X[t, b])
        assert ties[a, b] == pytest.approx(expect_tie)


@settings(max_examples=100, deadline=None)
@given(profiles, st.data())
def test_task_pair_sums_match_fraction_loops_on_both_paths(X, data):
    """``task_pair_sums`` counts task by task for one or two weight rows and by matrix product for more:
    both must equal exact Fraction sums of the definition, for whole-number and simple-fraction weights."""
    from fractions import Fraction

    n_rows = data.draw(st.sampled_from([1, 2, 3, 5]))
    W = np.stack([_weights_for(X, data) for _ in range(n_rows)])
    sums = V.task_pair_sums(X, W, ("wins", "pairs"))
    T, S = X.shape
    for b, a, c in itertools.product(range(n_rows), range(S), range(S)):
        both = [t for t in range(T) if not (np.isnan(X[t, a]) or np.isnan(X[t, c]))]
        wins = sum((Fraction(W[b, t]).limit_denominator(1000) for t in both if X[t, a] > X[t, c]), Fraction(0))
        pairs = sum((Fraction(W[b, t]).limit_denominator(1000) for t in both), Fraction(0))
        assert sums["wins"][b, a, c] == float(wins), (b, a, c)
        assert sums["pairs"][b, a, c] == float(pairs), (b, a, c)


@settings(max_examples=150, deadline=None)
@given(profiles, st.data())
def test_scoring_rules_match_brute_force(X, data):
    w = _weights_for(X, data) if data.draw(st.booleans()) else None
    np.testing.assert_allclose(V.plurality_across(X, weights=w), ref_scoring(X, lambda n: np.r_[1.0, np.zeros(n - 1)], w))
    np.testing.assert_allclose(V.dowdall_across(X, weights=w), ref_scoring(X, lambda n: 1.0 / np.arange(1, n + 1), w))
    np.testing.assert_allclose(borda_across(X, weights=w), ref_scoring(X, lambda n: np.arange(n - 1, -1, -1.0), w))
    vec = np.array([10.0, 6, 3, 1, 0])
    np.testing.assert_allclose(V.scoring_vector_across(X, weights=w, vector=vec), ref_scoring(X, lambda n: vec[:n], w))


@settings(max_examples=120, deadline=None)
@given(profiles.filter(lambda X: not np.isnan(X).any()), st.data())
def test_iterative_rules_match_brute_force(X, data):
    w = _weights_for(X, data) if data.draw(st.booleans()) else None
    np.testing.assert_allclose(V.baldwin_across(X, weights=w), ref_baldwin(X, w))
    np.testing.assert_allclose(V.threshold_across(X, weights=w), ref_threshold(X, w))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(2, 5)),
              elements=st.sampled_from([0.0, 1.0, 2.0, 3.0])))
def test_batch_axes_equal_one_at_a_time(B):
    batch = list(B)
    for f in (V.plurality_across, V.dowdall_across, V.threshold_across, V.baldwin_across, V.condorcet_across,
              V.copeland_across, V.minimax_across):
        np.testing.assert_allclose(f(B), np.stack([f(b) for b in batch]))


# ----------------------------------------------------------------------------------------------
# axioms claimed by the papers
# ----------------------------------------------------------------------------------------------
ALL = {
    "plurality": V.plurality_across,
    "dowdall": V.dowdall_across,
    "borda": borda_across,
    "threshold": V.threshold_across,
    "baldwin": V.baldwin_across,
    "copeland": V.copeland_across,
    "minimax": V.minimax_across,
    "condorcet": V.condorcet_across,
}


@settings(max_examples=100, deadline=None)
@given(strict_profiles, st.data())
def test_permutation_equivariance(X, data):
    ps = data.draw(st.permutations(list(range(X.shape[1]))))
    pt = data.draw(st.permutations(list(range(X.shape[0]))))
    for name, f in ALL.items():
        np.testing.assert_allclose(f(X[np.ix_(pt, ps)]), f(X)[ps], err_msg=name)


@settings(max_examples=100, deadline=None)
@given(strict_profiles, st.data())
def test_rank_rules_invariant_to_monotone_transform_of_a_task(X, data):
    t = data.draw(st.integers(0, X.shape[0] - 1))
    Y = X.copy()
    Y[t] = np.exp(3 * Y[t]) - 7.0
    for name, f in ALL.items():
        np.testing.assert_allclose(f(Y), f(X), err_msg=name)


@settings(max_examples=150, deadline=None)
@given(strict_profiles)
def test_condorcet_consistency(X):
    cw = ref_condorcet(X)
    if cw.sum() != 1:
        return
    winner = int(np.argmax(cw))
    for name in ("copeland", "minimax", "baldwin", "condorcet"):
        s = ALL[name](X)
        assert s[winner] == s.max() and (s == s.max()).sum() == 1, name


@settings(max_examples=150, deadline=None)
@given(strict_profiles)
def test_condorcet_loser_never_wins(X):
    M = ref_margin(X)
    S = X.shape[1]
    losers = [a for a in range(S) if all(M[a, b] < 0 for b in range(S) if b != a)]
    if not losers or S < 3:
        return
    for name in ("borda", "copeland", "baldwin"):
        s = ALL[name](X)
        assert s[losers[0]] < s.max(), name


@settings(max_examples=150, deadline=None)
@given(strict_profiles, st.data())
def test_unanimity(X, data):
    best = data.draw(st.integers(0, X.shape[1] - 1))
    Y = X.copy()
    Y[:, best] = X.max() + 1
    for name, f in ALL.items():
        s = f(Y)
        assert s[best] == s.max() and (s == s.max()).sum() == 1, name


def test_scoring_vector_validation():
    with pytest.raises(ValueError, match="non-increasing"):
        V.scoring_vector_across(TABLE6, vector=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="at least 4"):
        V.scoring_vector_across(TABLE6, vector=[3, 2])
