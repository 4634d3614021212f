"""Pairwise rules in blocks of the system-pair matrix and streamed over instance chunks (engine.kernels.pairblock).

The blocked and streamed paths exist for memory (issue 13, "Memory and scale"; figures in
benchmarks/results/memory.md); here they must give the same bits as the rules' own kernels (the
unblocked path) and as brute-force loops, for every block size and chunking.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

import engine
from engine.kernels.pairblock import BLOCKED_RULES, ROWS_ENV, block_rows, blocked_scores, use_blocks
from engine.kernels.paircount import dense_ranks
from engine.rules import get_rule


def _profile(rng: np.random.Generator, T: int, S: int, missing: float = 0.0) -> np.ndarray:
    X = rng.integers(0, 4, size=(T, S)).astype(float)  # few values: many ties
    X[X == 1] = 0.37  # and a real value: relative differences that are not simple fractions
    if missing:
        X[rng.random((T, S)) < missing] = np.nan
    return X


def _copeland_loops(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Copeland u = |beaten| - |beating| by weighted majority, from plain loops over pairs and tasks."""
    T, S = X.shape
    present = ~np.isnan(X).all(axis=0)
    u = np.full(S, np.nan)
    for i in range(S):
        if not present[i]:
            continue
        u[i] = 0
        for j in range(S):
            if j == i or not present[j]:
                continue
            a = sum(w[t] for t in range(T) if X[t, i] > X[t, j])
            b = sum(w[t] for t in range(T) if X[t, j] > X[t, i])
            u[i] += int(a > b) - int(a < b)
    return u


@pytest.mark.parametrize("rule", BLOCKED_RULES)
@pytest.mark.parametrize("rows", [1, 2, 3, 7, 64])
def test_blocks_equal_the_kernel_bit_for_bit(rule, rows):
    rng = np.random.default_rng(rows)
    kernel = get_rule(rule).kernel
    for trial in range(6):
        T, S = int(rng.integers(1, 6)), int(rng.integers(2, 11))
        X = _profile(rng, T, S, missing=0.25 if trial % 2 else 0.0)
        w1 = rng.integers(0, 3, size=T).astype(float)
        w1[0] += 1  # positive sum
        stack = rng.multinomial(T, np.ones(T) / T, size=9).astype(float)  # bootstrap multiplicities, repeats included
        for Xc, w in ((X, None), (X, w1), (X, stack), (np.stack([X, X[::-1]]), None)):
            try:
                ref = kernel(Xc, weights=w)
            except ValueError:  # e.g. a bootstrap draw of tasks with no pair for a rule that needs one
                continue
            got = blocked_scores(rule, Xc, w, rows=rows)
            np.testing.assert_array_equal(got, ref, err_msg=f"{rule} rows={rows} shape={Xc.shape} w={w}")


def test_blocked_copeland_matches_plain_loops():
    rng = np.random.default_rng(5)
    X = _profile(rng, 5, 9, missing=0.2)
    w = np.array([1.0, 2.0, 0.0, 1.0, 3.0])
    for rows in (1, 4, 9):
        np.testing.assert_array_equal(blocked_scores("copeland", X, w, rows=rows), _copeland_loops(X, w))
        np.testing.assert_array_equal(blocked_scores("copeland", X, None, rows=rows), _copeland_loops(X, np.ones(5)))


def test_dense_ranks_match_scipy():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 5, size=(6, 12)).astype(float)
    x[rng.random(x.shape) < 0.2] = np.nan
    r = dense_ranks(x)
    for k in range(x.shape[0]):
        ok = ~np.isnan(x[k])
        expected = scipy.stats.rankdata(x[k, ok], method="dense") - 1
        np.testing.assert_array_equal(r[k, ok], expected)
        assert (r[k, ~ok] == -1).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_ranks_of_awkward_floats_match_scipy(dtype):
    """Signed zeros share a rank; infinities, subnormals and negatives keep their order; NaN is -1; both float widths."""
    rng = np.random.default_rng(21)
    pool = np.array([-np.inf, -3.5, -1.0, -1e-40, -0.0, 0.0, 1e-45, 1e-40, 0.5, 2.0, 3.4e38, np.inf, np.nan], dtype=dtype)
    x = pool[rng.integers(0, pool.size, size=(40, 9))]
    x[0] = np.nan  # a judge with no score
    r = dense_ranks(x)
    assert r.dtype == np.int16
    for k in range(x.shape[0]):
        ok = ~np.isnan(x[k])
        if ok.any():
            np.testing.assert_array_equal(r[k, ok], scipy.stats.rankdata(x[k, ok].astype(np.float64), method="dense") - 1)
        assert (r[k, ~ok] == -1).all()


def test_win_counts_of_judges_with_and_without_ties_match_loops():
    """The whole win matrix (half the comparisons for tie-free judges) equals plain loops over judges and pairs."""
    from engine.kernels.paircount import win_counts

    rng = np.random.default_rng(5)
    for case in range(60):
        K, S = int(rng.integers(0, 9)), int(rng.integers(1, 23))
        x = rng.random((K, S)).astype(np.float32)  # tie-free judges
        some = rng.random(K) < 0.5
        x[some] = rng.integers(0, 3, size=(int(some.sum()), S))  # judges with ties
        if case % 2:
            x[rng.random(x.shape) < 0.25] = np.nan
        got = win_counts(dense_ranks(x), ~np.isnan(x))
        assert got.dtype == np.int64 and got.shape == (S, S)
        np.testing.assert_array_equal(got, _loop_counts(x, 0, S, False))


def test_block_rows_bounds_and_environment(monkeypatch):
    assert block_rows(10_000) == 512
    assert block_rows(10_000, batch=200) == (1 << 24) // (200 * 10_000)  # one block of sums stays within 128 MB
    assert block_rows(5, rows=64) == 5
    monkeypatch.setenv(ROWS_ENV, "3")
    assert block_rows(100) == 3
    assert use_blocks("copeland", np.zeros((2, 4)))  # forced: even tiny inputs take the blocked path
    assert not use_blocks("borda", np.zeros((2, 4)))
    assert not use_blocks("copeland", np.zeros((2, 4)), weights=np.array([0.5, 1.0]))  # fractions: kernel path
    monkeypatch.setenv(ROWS_ENV, "zero")
    with pytest.raises(engine.VotebenchError, match=ROWS_ENV):
        engine.aggregate(engine.scores_from_array(np.eye(3)), rule="copeland")


def _instance_scores(seed: int, S: int = 7, T: int = 4, K: int = 9, missing: float = 0.1):
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 5, size=(S, T, K)).astype(float)
    if missing:
        v[rng.random(v.shape) < missing] = np.nan
        v[0, 1, :] = np.nan  # a system with no score on one task
    return engine.scores_from_array(v)


@pytest.mark.parametrize("rule", BLOCKED_RULES)  # integer counts streamed, or (relative_difference) chunks of whole tasks
@pytest.mark.parametrize("level", ["two", "one"])
def test_streamed_within_step_is_chunk_invariant_and_equals_in_memory(rule, level):
    s = _instance_scores(1)
    kw: dict = {"missing": "drop-judges"} if get_rule(rule).missing == "policy" else {}  # Baldwin needs a policy
    kw.update(rule=rule, level=level)
    if rule == "relative_difference" and level == "two":  # its task-level values are signed: the mean across
        kw.update(within=rule, across="mean", missing="drop-judges")
    ref = engine.aggregate(s, **kw).values  # numpy-backed: the kernel on whole tasks
    for chunks in ({"task": 1, "instance": 1}, {"task": 3, "instance": 4}, {"task": -1, "instance": -1}):
        got = engine.aggregate(s.chunk(chunks), **kw).values
        np.testing.assert_array_equal(got, ref, err_msg=f"{kw} {chunks}")


def test_streamed_copeland_within_tasks_matches_loops():
    s = _instance_scores(3, missing=0.0)
    v = s.transpose("task", "instance", "system").values
    X = np.stack([_copeland_loops(v[t], np.ones(v.shape[1])) for t in range(v.shape[0])])
    expected = _copeland_loops(X, np.ones(X.shape[0]))  # Copeland across tasks of per-task Copeland
    got = engine.aggregate(s.chunk({"task": 1, "instance": 2}), rule="copeland", level="two").values
    np.testing.assert_array_equal(got, expected)


def test_median_streams_over_task_chunks():
    s = _instance_scores(4, missing=0.0)
    v = s.transpose("task", "instance", "system").values
    expected = np.median(np.median(v, axis=1), axis=0)  # numpy's median: per task over instances, then over tasks
    for chunks in ({"task": 1, "instance": 2}, {"task": 2, "instance": -1}):
        np.testing.assert_allclose(engine.aggregate(s.chunk(chunks), rule="median", level="two").values, expected,
                                   rtol=0, atol=1e-12)
    ref = engine.aggregate(s, rule="median", level="two").values
    np.testing.assert_array_equal(engine.aggregate(s.chunk({"task": 1, "instance": 3}), rule="median", level="two").values,
                                  ref)


@pytest.mark.parametrize("rule", ["copeland", "minimax", "baldwin", "success_rate"])
def test_forced_blocks_through_aggregate_and_bootstrap(rule, monkeypatch):
    rng = np.random.default_rng(7)
    X = rng.integers(0, 6, size=(12, 3)).astype(float)
    s = engine.scores_from_array(X)
    agg = engine.aggregate(s, rule=rule).values
    boot = engine.bootstrap(s, rule=rule, replicates=30, seed=1)["replicate_score"].values
    several = engine.aggregate_rules(s, [rule, "borda"]).values
    monkeypatch.setenv(ROWS_ENV, "2")
    np.testing.assert_array_equal(engine.aggregate(s, rule=rule).values, agg)
    np.testing.assert_array_equal(engine.bootstrap(s, rule=rule, replicates=30, seed=1)["replicate_score"].values, boot)
    np.testing.assert_array_equal(engine.aggregate_rules(s, [rule, "borda"]).values, several)


def test_prob_above_in_blocks_matches_loops(monkeypatch):
    from engine.kernels.metrics import prob_above

    rng = np.random.default_rng(11)
    R = rng.integers(0, 4, size=(9, 6)).astype(float)
    R[rng.random(R.shape) < 0.15] = np.nan
    R = np.vstack([R, R[:4]])  # repeated replicates take the multiplicity path
    B, S = R.shape
    expected = np.full((S, S), np.nan)
    for i in range(S):
        for j in range(S):
            both = [b for b in range(B) if not np.isnan(R[b, i]) and not np.isnan(R[b, j])]
            if both:
                expected[i, j] = sum(R[b, i] > R[b, j] for b in both) / len(both)
    dense = prob_above(R)
    monkeypatch.setenv(ROWS_ENV, "2")
    np.testing.assert_array_equal(prob_above(R), dense)  # blocked: the same bits
    np.testing.assert_allclose(prob_above(R), expected, rtol=0, atol=1e-15)


def test_kendall_matrix_of_repeated_replicates_matches_scipy():
    from engine.kernels.metrics import pairwise_correlations

    rng = np.random.default_rng(12)
    rows = rng.integers(0, 5, size=(3, 40)).astype(float)
    R = rows[rng.integers(0, 3, size=12)]  # a bootstrap over two tasks: few distinct replicate rankings
    tau = pairwise_correlations(R, method="kendall")
    for i in range(R.shape[0]):
        for j in range(R.shape[0]):
            assert tau[i, j] == pytest.approx(scipy.stats.kendalltau(R[i], R[j]).statistic, abs=1e-12)


def _loop_counts(x: np.ndarray, i0: int, i1: int, less: bool) -> np.ndarray:
    """Plain loops over judges and pairs: how often row i's score beats (or loses to) column j's, both present."""
    K, S = x.shape
    out = np.zeros((i1 - i0, S), dtype=np.int64)
    for k in range(K):
        for i in range(i0, i1):
            for j in range(S):
                a, b = x[k, i], x[k, j]
                if not (np.isnan(a) or np.isnan(b)) and ((a < b) if less else (a > b)):
                    out[i - i0, j] += 1
    return out


@pytest.mark.parametrize("less", [False, True])
@pytest.mark.parametrize("S", [1, 5, 37])
def test_compiled_win_counts_match_loops(less, S):
    from engine.kernels.paircount import greater_counts

    rng = np.random.default_rng(S + 100 * less)
    x = rng.integers(0, 4, size=(23, S)).astype(float)  # many ties
    x[rng.random(x.shape) < 0.2] = np.nan
    pres = ~np.isnan(x)
    rk = dense_ranks(x)
    for i0, i1 in [(0, S), (S // 3, S), (0, max(1, S // 2)), (S - 1, S)]:
        got = greater_counts(rk, pres, i0, i1, less=less)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, _loop_counts(x, i0, i1, less))
    # int32 ranks (beyond 32,766 systems) give the same counts
    np.testing.assert_array_equal(greater_counts(rk.astype(np.int32), pres, 0, S, less=less), _loop_counts(x, 0, S, less))


def test_compiled_win_counts_past_the_int16_counter():
    """More judges than an int16 counter holds (32,767): the counts flush into int64 without wrapping."""
    from engine.kernels.paircount import greater_counts

    K = 70_001
    x = np.tile(np.array([[3.0, 1.0, 2.0]]), (K, 1))
    x[-3:] = [[1.0, 3.0, 2.0]] * 3
    x[5, 2] = np.nan
    got = greater_counts(dense_ranks(x), ~np.isnan(x), 0, 3)
    np.testing.assert_array_equal(got, [[0, K - 3, K - 4], [3, 0, 3], [3, K - 4, 0]])
    np.testing.assert_array_equal(greater_counts(dense_ranks(x), ~np.isnan(x), 0, 3, less=True), got.T)
    from engine.kernels.paircount import win_counts

    # the half-comparison loop of tie-free judges flushes its int16 counters the same way
    np.testing.assert_array_equal(win_counts(dense_ranks(x), ~np.isnan(x)), got)
    y = x.astype(np.float32)
    y[7] = [2.0, 2.0, 1.0]  # one tied judge among 70,000 tie-free ones
    expected = got.copy()  # judge 7 no longer has 0 > 1 nor 2 > 1, but now 1 > 2
    expected[0, 1] -= 1
    expected[2, 1] -= 1
    expected[1, 2] += 1
    np.testing.assert_array_equal(win_counts(dense_ranks(y), ~np.isnan(y)), expected)
