"""engine.kernels.significance: Friedman, Nemenyi, pairwise Wilcoxon with Holm, cliques and the automatic choice.

References: scipy.stats (friedmanchisquare, studentized_range), the exact Wilcoxon
signed-rank distribution by enumerating sign flips, Holm's procedure and the
cliques by plain loops, Demsar (2006) Table 5a.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import VotebenchError
from engine.kernels.significance import cliques, compare, friedman_test, holm, nemenyi_cd, nemenyi_q, wilcoxon_holm


@pytest.mark.parametrize("seed", range(8))
def test_friedman_matches_scipy(seed):
    from scipy.stats import friedmanchisquare

    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4 if seed % 2 else 50, size=(int(rng.integers(3, 12)), int(rng.integers(3, 7)))).astype(float)
    ours = friedman_test(X)
    ref = friedmanchisquare(*X.T)  # scipy corrects for ties too
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


def test_nemenyi_critical_values_of_demsar_table_5a():
    # q_0.05 for k = 2..10 (Demsar 2006, Table 5a)
    table = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    assert [nemenyi_q(k) for k in range(2, 11)] == pytest.approx(table, abs=1.5e-3)  # the table rounds
    assert nemenyi_cd(97, 14) == pytest.approx(45.63, abs=0.01)  # the GLUE case of issue 15


def exact_wilcoxon_p(d):
    """Two-sided exact p-value of Wilcoxon's signed-rank test by enumerating all sign flips (no ties, no zeros)."""
    a = np.abs(d)
    ranks = np.argsort(np.argsort(a)) + 1.0
    w_plus = ranks[d > 0].sum()
    n = len(d)
    total = n * (n + 1) / 2
    stats = [sum(r for r, s in zip(ranks, signs) if s) for signs in itertools.product([0, 1], repeat=n)]
    lo = min(w_plus, total - w_plus)
    return min(1.0, 2 * sum(1 for w in stats if w <= lo) / len(stats))


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1), st.integers(3, 9))
def test_wilcoxon_p_values_are_exact_and_holm_is_holms(seed, n):
    rng = np.random.default_rng(seed)
    k = 4
    X = rng.permutation(np.arange(n * k, dtype=float)).reshape(n, k) + rng.uniform(0, 0.5, size=(n, k))
    P, adj, rej = wilcoxon_holm(X, alpha=0.1)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    for i, j in pairs:
        assert P[i, j] == P[j, i] == pytest.approx(exact_wilcoxon_p(X[:, i] - X[:, j]), rel=1e-9)
    # Holm by hand: sort, multiply by (m - position), running maximum, cap at 1
    m = len(pairs)
    order = sorted(pairs, key=lambda p: P[p])
    running = 0.0
    for pos, p in enumerate(order):
        running = max(running, min(1.0, (m - pos) * P[p]))
        assert adj[p] == pytest.approx(running)
        assert rej[p] == (running <= 0.1)
    assert np.isnan(np.diag(P)).all()


def test_holm_leaves_nan_out_of_the_family():
    got = holm(np.array([0.01, np.nan, 0.04, 0.03]))
    assert np.isnan(got[1])
    assert got[[0, 2, 3]].tolist() == pytest.approx([0.03, 0.06, 0.06])


def test_identical_systems_are_not_separated():
    X = np.array([[1.0, 1.0, 3.0], [2.0, 2.0, 5.0], [0.5, 0.5, 9.0], [4.0, 4.0, 4.5], [3.0, 3.0, 7.0]])
    P, _, rej = wilcoxon_holm(X)
    assert P[0, 1] == 1.0 and not rej[0, 1]


@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1))
def test_cliques_brute_force(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 8))
    avg = rng.permutation(k).astype(float) + 1
    D = rng.random((k, k)) < 0.3
    D = D | D.T
    np.fill_diagonal(D, False)
    got = cliques(avg, D)
    order = list(np.argsort(avg, kind="stable"))
    runs = []
    for a in range(k):
        for b in range(a + 1, k):
            members = order[a : b + 1]
            if not any(D[x, y] for x in members for y in members):
                runs.append((a, b))
    maximal = [r for r in runs if not any(o != r and o[0] <= r[0] and r[1] <= o[1] for o in runs)]
    assert got == [tuple(int(v) for v in order[a : b + 1]) for a, b in sorted(maximal)]


def test_the_automatic_choice_and_what_it_says():
    rng = np.random.default_rng(0)
    # few systems, clear differences: Nemenyi separates them
    X = np.arange(5.0)[None, :] + rng.normal(0, 0.3, size=(30, 5))
    ph = compare(X)
    assert ph.test == "nemenyi" and "Nemenyi" in ph.reason and ph.cd < np.ptp(ph.avg_ranks)
    assert ph.different[4, 0] and not ph.different[0, 0]
    assert ph.cliques == cliques(ph.avg_ranks, ph.different)
    # many systems over few tasks: the CD covers the spread of the systems shown -> Wilcoxon-Holm, and it says so
    X = np.arange(40.0)[None, :] + rng.normal(0, 8, size=(6, 40))
    ph = compare(X, shown=np.arange(30, 40))
    assert ph.test == "wilcoxon-holm" and "covers the whole spread" in ph.reason and ph.pvalues is not None
    assert "cannot go below p = 0.031" in ph.note  # 2 / 2^6: with 6 tasks no pair can reach 0.05 / 780
    assert not ph.different.any() and ph.cliques == [tuple(int(i) for i in np.argsort(ph.avg_ranks, kind="stable"))]
    # two systems: Wilcoxon
    assert compare(X[:, :2]).test == "wilcoxon-holm" and compare(X[:, :2]).friedman is None
    assert compare(X, test="nemenyi").test == "nemenyi"
    with pytest.raises(VotebenchError, match="post-hoc"):
        compare(X, test="tukey")
    with pytest.raises(VotebenchError, match="complete"):
        compare(np.array([[1.0, np.nan], [2.0, 3.0]]))


def test_nemenyi_pairs_differ_by_at_least_the_cd():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 6)) + np.linspace(0, 2, 6)
    ph = compare(X, test="nemenyi")
    diff = np.abs(ph.avg_ranks[:, None] - ph.avg_ranks[None, :])
    assert (ph.different == ((diff >= ph.cd) & ~np.eye(6, dtype=bool))).all()
    assert math.isfinite(ph.friedman.statistic)
