"""Paired significance tests (engine.kernels.paired) against scipy.stats and plain loops.

scipy gives the references where it has the test: ``permutation_test`` (exact, paired samples) for the sign-flip
test of the mean difference, ``wilcoxon(method="exact")`` for the signed-rank statistic, ``binomtest`` for McNemar's
exact test, ``false_discovery_control`` for Benjamini-Hochberg.  The paired bootstrap is checked against a loop over
the same resampled instances, Holm against its definition, and the letter display against the properties it must have.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from engine.kernels import paired as PT
from engine.kernels.resample import instance_counts


def _scores(seed, S=4, T=3, K=6, nan=0.1):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(S, T, K)) + np.linspace(0, 0.9, S)[:, None, None]
    Y[rng.random(Y.shape) < nan] = np.nan
    return Y


def _ok(x, y):
    m = ~(np.isnan(x) | np.isnan(y))
    return x[m], y[m]


@pytest.mark.parametrize("seed", range(3))
def test_exact_permutation_test_equals_scipy(seed):
    Y = _scores(seed, T=2, K=5)
    res = PT.paired_permutation(Y, resamples=2**10)  # 2 tasks x 5 instances: every sign pattern, per task and overall
    assert res.exact_task.all() == (res.n > 0).all() and res.exact_overall.all()
    for p, (i, j) in enumerate(res.pairs):
        for t in range(2):
            x, y = _ok(Y[i, t], Y[j, t])
            if x.size == 0:
                assert np.isnan(res.p_task[p, t])
                continue
            ref = stats.permutation_test((x, y), lambda a, b: np.mean(a - b), permutation_type="samples",
                                         n_resamples=np.inf).pvalue
            assert res.p_task[p, t] == pytest.approx(ref, rel=1e-12)
            assert res.diff[p, t] == pytest.approx(np.mean(x - y))
        # overall: mean over tasks of the task means, signs flipped jointly over both tasks
        xs = [_ok(Y[i, t], Y[j, t]) for t in range(2)]
        d = [x - y for x, y in xs if x.size]
        obs = np.mean([v.mean() for v in d])
        null = []
        for signs in itertools.product([1, -1], repeat=sum(v.size for v in d)):
            pos, acc = 0, []
            for v in d:
                acc.append(np.mean(np.array(signs[pos:pos + v.size]) * v))
                pos += v.size
            null.append(np.mean(acc))
        null = np.abs(np.array(null))
        assert res.overall[p] == pytest.approx(obs)
        assert res.p_overall[p] == pytest.approx(np.mean(null >= abs(obs) * (1 - 1e-12)), rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_signed_rank_statistic_gives_scipy_wilcoxon_exact(seed):
    Y = _scores(seed, T=2, K=9, nan=0.0)
    res = PT.paired_permutation(Y, resamples=2**9, statistic="wilcoxon")
    for p, (i, j) in enumerate(res.pairs):
        for t in range(2):
            ref = stats.wilcoxon(Y[i, t], Y[j, t], method="exact").pvalue
            assert res.p_task[p, t] == pytest.approx(ref, rel=1e-12)


def test_monte_carlo_p_values_are_reproducible_and_close_to_exact():
    Y = _scores(7, S=3, T=1, K=12, nan=0.0)
    exact = PT.paired_permutation(Y, resamples=2**12)
    mc = PT.paired_permutation(Y, resamples=2000, seed=5)
    assert exact.exact_task.all() and not mc.exact_task.any()
    again = PT.paired_permutation(Y, resamples=2000, seed=5)
    assert np.array_equal(mc.p_task, again.p_task)
    se = np.sqrt(exact.p_task * (1 - exact.p_task) / 2000)
    assert (np.abs(mc.p_task - exact.p_task) <= 4 * se + 2 / 2001).all()
    assert (mc.p_task >= 1 / 2001).all()  # a Monte Carlo p-value is never 0


def test_mcnemar_equals_binomtest():
    rng = np.random.default_rng(3)
    Y = (rng.random((4, 3, 40)) < np.array([0.5, 0.6, 0.7, 0.65])[:, None, None]).astype(float)
    Y[1, 2, :5] = np.nan
    res = PT.mcnemar_exact(Y, baseline=0)
    assert res.pairs.tolist() == [[1, 0], [2, 0], [3, 0]]
    for p, (i, j) in enumerate(res.pairs):
        bs, cs = 0, 0
        for t in range(3):
            x, y = _ok(Y[i, t], Y[j, t])
            b, c = int(np.sum((x == 1) & (y == 0))), int(np.sum((x == 0) & (y == 1)))
            bs, cs = bs + b, cs + c
            ref = stats.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
            assert res.p_task[p, t] == pytest.approx(ref, rel=1e-12)
            assert res.diff[p, t] == pytest.approx(x.mean() - y.mean())
        assert res.p_overall[p] == pytest.approx(stats.binomtest(bs, bs + cs, 0.5).pvalue, rel=1e-12)
    with pytest.raises(ValueError, match="0/1 scores"):
        PT.mcnemar_exact(Y + 0.5)


def test_paired_bootstrap_equals_a_loop_over_the_same_instances():
    Y = _scores(2, S=3, T=2, K=5)
    Y[:, 1, 4] = np.nan  # a ragged task: its last instance is padding and is never drawn
    B = 30
    res = PT.paired_bootstrap(Y, replicates=B, seed=4, level=0.9)
    present = ~np.isnan(Y).all(axis=0)
    C = instance_counts(present, seed=4, replicates=B)
    assert (C[:, 1, 4] == 0).all()
    for p, (i, j) in enumerate(res.pairs):
        reps = []
        for b in range(B):
            task_means = []
            for t in range(2):
                vals = []
                for k in range(5):
                    if not (np.isnan(Y[i, t, k]) or np.isnan(Y[j, t, k])):
                        vals += [Y[i, t, k] - Y[j, t, k]] * int(C[b, t, k])
                if vals:
                    task_means.append(sum(vals) / len(vals))
            reps.append(sum(task_means) / len(task_means))
        reps = np.array(reps)
        assert res.low[p] == pytest.approx(np.percentile(reps, 5)) and res.high[p] == pytest.approx(np.percentile(reps, 95))
        far = min(np.sum(reps <= 0), np.sum(reps >= 0))
        assert res.p_overall[p] == pytest.approx(min(1.0, 2 * (far + 1) / (B + 1)))


def test_corrections():
    rng = np.random.default_rng(0)
    p = rng.random(12) ** 3
    p[3] = np.nan
    ok = ~np.isnan(p)
    np.testing.assert_allclose(PT.benjamini_hochberg(p)[ok], stats.false_discovery_control(p[ok], method="bh"))
    # Holm from its definition: reject in increasing order while p_(k) <= alpha / (m - k + 1)
    m = int(ok.sum())
    adj = PT.adjust(p, "holm")
    for alpha in (0.01, 0.05, 0.2):
        order = np.argsort(p[ok])
        reject = np.zeros(m, dtype=bool)
        for k, idx in enumerate(order):
            if p[ok][idx] <= alpha / (m - k):
                reject[idx] = True
            else:
                break
        assert np.array_equal(adj[ok] <= alpha, reject)
    assert np.isnan(adj[3]) and np.array_equal(PT.adjust(p, "none"), p, equal_nan=True)


def _check_letters(D, letters):
    S = D.shape[0]
    for i in range(S):
        for j in range(i + 1, S):
            share = bool(set(letters[i]) & set(letters[j]))
            assert share != D[i, j], (i, j, letters)
    cols = {c: {s for s in range(S) if c in letters[s]} for c in set("".join(letters))}
    for a, b in itertools.permutations(cols, 2):
        assert not cols[a] <= cols[b], (a, b, letters)  # no redundant letter


@settings(max_examples=60)
@given(st.integers(2, 7), st.data())
def test_letter_display_separates_exactly_the_significant_pairs(S, data):
    bits = data.draw(st.lists(st.booleans(), min_size=S * (S - 1) // 2, max_size=S * (S - 1) // 2))
    D = np.zeros((S, S), dtype=bool)
    D[np.triu_indices(S, 1)] = bits
    D |= D.T
    _check_letters(D, PT.letter_display(D))


def test_letter_display_names_letters_from_the_best_system():
    D = np.zeros((4, 4), dtype=bool)
    D[0, 3] = D[3, 0] = True
    assert PT.letter_display(D, order=[3, 2, 1, 0]) == ["b", "ab", "ab", "a"]


def test_compare_systems_groups_and_baseline():
    rng = np.random.default_rng(1)
    Y = np.empty((4, 3, 40))
    Y[0] = rng.normal(size=(3, 40)) * 0.3
    Y[2] = rng.normal(size=(3, 40)) * 0.3 + 1.0
    Y[1], Y[3] = Y[0, :, ::-1], Y[2, :, ::-1]  # the same scores on other instances: mean difference 0 on every task
    cmp = PT.compare_systems(Y, test="permutation", resamples=500, seed=0)
    assert set(cmp.order.tolist()[:2]) == {2, 3}
    assert cmp.letters == ["b", "b", "a", "a"]
    _check_letters(cmp.different, cmp.letters)
    np.testing.assert_allclose(cmp.adjusted, PT.adjust(cmp.test.p_overall, "holm"))
    base = PT.compare_systems(Y, test="bootstrap", baseline=0, resamples=200, correction="bh")
    assert base.letters is None and base.test.pairs[:, 1].tolist() == [0, 0, 0]
    assert base.different[2, 0] and not base.different[1, 0]
    with pytest.raises(ValueError, match="baseline"):
        PT.compare_systems(Y, baseline=7)
    with pytest.raises(ValueError, match="unknown test"):
        PT.compare_systems(Y, test="t-test")
    assert math.isnan(PT.paired_permutation(np.full((2, 1, 3), np.nan)).p_overall[0])
