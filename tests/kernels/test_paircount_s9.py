"""The one pair-count kernel (engine.kernels.paircount, issue 25 item 4): every method against a double loop.

``wins[..., i, j] = sum_k w_k [x_ki > x_kj]`` over the rows where both scores are present, checked against plain
Python loops over rows and pairs (no numpy comparison of the code under test) on random scores with absent
values, ties, -0.0 / 0.0, infinities, batch axes, row weights and the edge cases S = 1 / 2 and no rows; then the
callers that now count through it against the same loops.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kernels.paircount import METHODS, pair_counts, pair_method

ALL = (*METHODS, "auto")


def loop_counts(x, w=None, S=None) -> np.ndarray:
    """Double loop over the pairs, summed over the rows of one profile ``x`` (K, S) (``w``: row weights; ``S``
    given when there are no rows)."""
    K = len(x)
    S = len(x[0]) if S is None else S
    out = np.zeros((S, S), dtype=np.int64)
    for k in range(K):
        wk = 1 if w is None else int(w[k])
        for i in range(S):
            for j in range(S):
                a, b = float(x[k][i]), float(x[k][j])
                if not (math.isnan(a) or math.isnan(b)) and a > b:
                    out[i, j] += wk
    return out


def loop_batch(X, W=None) -> np.ndarray:
    """:func:`loop_counts` for every element of the leading batch axes (``W`` broadcast over them)."""
    X = np.asarray(X)
    *batch, K, S = X.shape
    out = np.zeros((*batch, S, S), dtype=np.int64)
    Wb = None if W is None else np.broadcast_to(np.asarray(W), (*batch, K))
    for idx in np.ndindex(*batch):
        out[idx] = loop_counts(X[idx].tolist(), None if Wb is None else Wb[idx].tolist(), S)
    return out


VALUES = st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.37, -1.5, np.inf, -np.inf, np.nan])


@st.composite
def profiles(draw):
    """Scores (batch..., K, S) from few values (ties), absent ones, and optional whole-number row weights."""
    batch = draw(st.sampled_from([(), (1,), (3,), (2, 2)]))
    K = draw(st.integers(0, 7))
    S = draw(st.integers(1, 6))
    n = math.prod(batch) * K * S
    X = np.array(draw(st.lists(VALUES, min_size=n, max_size=n)), dtype=np.float64).reshape(*batch, K, S)
    W = None
    if draw(st.booleans()):
        wshape = draw(st.sampled_from([(K,), (*batch, K)]))
        m = math.prod(wshape)
        W = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=np.float64).reshape(wshape)
    return X, W


@settings(max_examples=300)
@given(profiles(), st.sampled_from(ALL), st.sampled_from([None, 1, 2]), st.sampled_from([1, 8, 1 << 20]))
def test_every_method_equals_the_double_loop(case, method, rows, cells):
    X, W = case
    got = pair_counts(X, method=method, weights=W, rows=rows, cells=cells)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, loop_batch(X, W))


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("S", [1, 2])
def test_one_and_two_systems(method, S):
    x = np.array([[1.0, 1.0], [2.0, np.nan], [3.0, 0.0], [np.nan, np.nan]])[:, :S]
    np.testing.assert_array_equal(pair_counts(x, method=method), loop_counts(x.tolist()))
    np.testing.assert_array_equal(pair_counts(x, method=method, weights=[3, 0, 2, 5]), loop_counts(x.tolist(), [3, 0, 2, 5]))
    if S == 2:
        assert pair_counts(x, method=method).tolist() == [[0, 1], [0, 0]]  # rows 1 (a tie) and 3 (3 > 0) have both


@pytest.mark.parametrize("method", ALL)
def test_larger_random_profiles_with_batches_float32_and_many_rows(method):
    """Beyond the uint8 counters (300 rows > 255) and the int16 ranks' row blocks, float32 input included."""
    rng = np.random.default_rng(7)
    X = rng.integers(0, 5, size=(2, 300, 23)).astype(np.float64)
    X[rng.random(X.shape) < 0.15] = np.nan
    W = rng.integers(0, 3, size=300).astype(np.float64)
    expected = loop_batch(X)
    np.testing.assert_array_equal(pair_counts(X, method=method), expected)
    np.testing.assert_array_equal(pair_counts(X.astype(np.float32), method=method, rows=5), expected)
    np.testing.assert_array_equal(pair_counts(X, method=method, weights=W), loop_batch(X, W))


def test_weights_past_the_narrow_counters():
    """Row weights whose total exceeds int16 and int32 accumulators: the counts stay exact."""
    x = np.array([[2.0, 1.0, np.nan], [1.0, 2.0, 0.0], [3.0, 3.0, 1.0]])
    w = np.array([40_000.0, 3_000_000_000.0, 7.0])
    expected = loop_counts(x.tolist(), w.tolist())
    assert expected[1, 0] == 3_000_000_000
    for method in ALL:
        np.testing.assert_array_equal(pair_counts(x, method=method, weights=w), expected)


@pytest.mark.parametrize("bad, message", [
    ([1.0, 0.5], "whole-number"), ([1.0, -1.0], "whole-number"), ([1.0, np.nan], "whole-number"),
    ([1.0, 2.0, 3.0], "expected 2 row weights"), ([2.0**62, 1.0], "2\\*\\*62"),
])
def test_bad_weights_are_named(bad, message):
    with pytest.raises(ValueError, match=message):
        pair_counts(np.zeros((2, 3)), weights=bad)


def test_unknown_method_and_missing_axis_are_named():
    with pytest.raises(ValueError, match="unknown pair-count method 'fast'"):
        pair_counts(np.zeros((2, 3)), method="fast")
    with pytest.raises(ValueError, match="rows, systems"):
        pair_counts(np.zeros(3))


def test_auto_takes_numpy_for_many_small_profiles_and_compiled_for_large_ones():
    """The cost model: a batch of tiny profiles stays vectorised; a large profile, numba loaded, runs compiled."""
    pair_counts(np.zeros((2, 3)), method="compiled")  # numba loaded in this process
    assert pair_method((10_000, 5, 4)) == "dense"
    assert pair_method((200, 1000)) == "compiled"
    assert pair_method((200, 1000), weighted=True) == "compiled"


# ------------------------------------------------------------------------------------------ the callers
def test_callers_count_through_the_kernel_as_the_loops_do():
    from engine.kernels.pairblock import prob_above_blocked
    from engine.kernels.social import pairwise_counts, win_counts_over_tasks
    from engine.kernels.summaries import bootstrap_block

    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(9, 7)).astype(np.float64)
    X[rng.random(X.shape) < 0.2] = np.nan
    expected = loop_counts(X.tolist())
    np.testing.assert_array_equal(win_counts_over_tasks(X, cells=50), expected)
    np.testing.assert_array_equal(pairwise_counts(X)[0], expected)
    np.testing.assert_array_equal(bootstrap_block(X)["wins"], expected)
    w = rng.integers(0, 3, size=9).astype(np.float64)
    np.testing.assert_array_equal(pairwise_counts(X, weights=w)[0], loop_counts(X.tolist(), w.tolist()))
    np.testing.assert_array_equal(pairwise_counts(X, weights=w / 3)[0], loop_counts(X.tolist(), w.tolist()) / 3)
    # prob_above of replicates that repeat (each distinct one counted once, with its multiplicity)
    R = X[[0, 1, 1, 2, 2, 2, 0, 3]]
    both = np.array([[sum(1 for r in R if not (np.isnan(r[i]) or np.isnan(r[j]))) for j in range(7)] for i in range(7)])
    wins = loop_counts(R.tolist())
    with np.errstate(invalid="ignore", divide="ignore"):
        expected_p = np.where(both > 0, wins / np.where(both > 0, both, 1), np.nan)
    np.testing.assert_array_equal(prob_above_blocked(R, rows=3), expected_p)


@settings(max_examples=150)
@given(profiles(), st.booleans(), st.sampled_from([1, 7, 1 << 24]), st.data())
def test_stack_counts_equal_the_double_loop_per_weight_vector(case, less, cells, data):
    from engine.kernels.paircount import stack_counts

    X, _ = case
    x = X[(0,) * (X.ndim - 2)]  # the first profile of the batch
    K, S = x.shape
    B = data.draw(st.integers(1, 3))
    W = np.array(data.draw(st.lists(st.integers(0, 5), min_size=B * K, max_size=B * K)), dtype=np.float64).reshape(B, K)
    i0 = data.draw(st.integers(0, S - 1))
    i1 = data.draw(st.integers(i0 + 1, S))
    index = np.array(data.draw(st.lists(st.integers(0, S - 1), max_size=4)), dtype=np.intp)  # any rows, repeats too
    got = stack_counts(x, W, i0, i1, less=less, cells=cells)
    picked = stack_counts(x, W, less=less, cells=cells, index=index)
    for b in range(B):
        full = loop_counts(x.tolist(), W[b].tolist(), S)
        np.testing.assert_array_equal(got[b], (full.T if less else full)[i0:i1])
        np.testing.assert_array_equal(picked[b], (full.T if less else full)[index])


def test_stack_counts_take_float64_products_past_float32():
    """Weight sums of 2**24 and more leave float32 (whose products would round) for float64: still exact."""
    from engine.kernels.paircount import stack_counts

    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    W = np.array([[2.0**24 + 1, 1.0, 2.0]])
    assert stack_counts(x, W).tolist() == [[[0.0, 2.0**24 + 3], [1.0, 0.0]]]


@settings(max_examples=100)
@given(profiles())
def test_both_counts_equal_the_double_loop(case):
    from engine.kernels.paircount import both_counts

    X, W = case
    x = X[(0,) * (X.ndim - 2)]
    K, S = x.shape
    w = None if W is None else np.broadcast_to(W, X.shape[:-1])[(0,) * (X.ndim - 2)]
    expected = np.zeros((S, S), dtype=np.int64)
    for k in range(K):
        for i in range(S):
            for j in range(S):
                if not (math.isnan(x[k, i]) or math.isnan(x[k, j])):
                    expected[i, j] += 1 if w is None else int(w[k])
    np.testing.assert_array_equal(both_counts(~np.isnan(x), w), expected)
