"""engine.kernels.ranking: Borda points, competition ranks and tie groups vs brute force."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from conftest import bf_borda_points, bf_min_rank
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from engine.kernels import ranking
from engine.kernels.ranking import borda_points, count_present, min_rank, tie_groups

# few distinct values (ties), NaN (missing), signed zeros and infinities (they are ordinary numbers here)
KERNEL_VALUES = st.sampled_from([np.nan, -np.inf, -2.0, -0.0, 0.0, 0.5, 3.0, np.inf])


def batched(min_dims=1, max_dims=3, max_side=6):
    return arrays(
        np.float64,
        array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side),
        elements=KERNEL_VALUES,
    )


# ---------------------------------------------------------------------------------------------
# borda_points
# ---------------------------------------------------------------------------------------------
@given(batched())
@settings(max_examples=80, deadline=None)
def test_borda_points_matches_brute_force(x):
    got = borda_points(x)
    assert got.shape == x.shape and got.dtype == np.float64
    np.testing.assert_array_equal(got, bf_borda_points(x))


@given(batched(max_side=5), st.integers(1, 7))
@settings(max_examples=80, deadline=None)
def test_borda_points_block_boundaries(x, block):
    """Tiny cache blocks force the blocked loop over judges to split anywhere."""
    with mock.patch.object(ranking, "_BLOCK", block):
        got = borda_points(x)
    np.testing.assert_array_equal(got, bf_borda_points(x))


def test_borda_points_many_judges_two_blocks():
    """More judges than one default block holds (vectorized pairwise reference)."""
    rng = np.random.default_rng(1)
    n = 3
    rows = (ranking._BLOCK // n) + 1234
    x = rng.integers(0, 3, size=(rows, n)).astype(float)
    x[rng.random(x.shape) < 0.1] = np.nan
    # reference by definition, over all ordered pairs (i, j) of systems
    xi, xj = x[:, :, None], x[:, None, :]
    present = ~np.isnan(xj) & ~np.eye(n, dtype=bool)
    ref = ((xj < xi) & present).sum(-1) + 0.5 * ((xj == xi) & present).sum(-1)
    ref = np.where(np.isnan(x), np.nan, ref)
    np.testing.assert_array_equal(borda_points(x), ref)


@given(batched(max_dims=2))
@settings(max_examples=80, deadline=None)
def test_borda_points_float32_dtype_same_points(x):
    got = borda_points(x, dtype=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.astype(np.float64), bf_borda_points(x))


@given(batched(), st.randoms(use_true_random=False))
@settings(max_examples=80, deadline=None)
def test_borda_points_permutation_equivariant(x, rnd):
    perm = list(range(x.shape[-1]))
    rnd.shuffle(perm)
    np.testing.assert_array_equal(borda_points(x[..., perm]), borda_points(x)[..., perm])


@given(batched())
@settings(max_examples=80, deadline=None)
def test_borda_points_sum_and_nan_pattern(x):
    pts = borda_points(x)
    np.testing.assert_array_equal(np.isnan(pts), np.isnan(x))
    n = count_present(x)
    np.testing.assert_array_equal(np.nansum(pts, axis=-1), n * (n - 1) / 2)
    assert ((pts[~np.isnan(pts)] * 2) % 1 == 0).all()  # multiples of one half


def test_borda_points_small_examples_by_hand():
    # strictly beaten + half of ties, NaN out
    np.testing.assert_array_equal(borda_points(np.array([3.0, 1.0, 3.0, np.nan])), [1.5, 0.0, 1.5, np.nan])
    np.testing.assert_array_equal(borda_points(np.array([[2.0, 2.0, 2.0]])), [[1.0, 1.0, 1.0]])
    np.testing.assert_array_equal(borda_points(np.array([np.nan, np.nan])), [np.nan, np.nan])
    np.testing.assert_array_equal(borda_points(np.array([-0.0, 0.0])), [0.5, 0.5])
    np.testing.assert_array_equal(borda_points(np.array([5.0])), [0.0])
    assert borda_points(np.empty((3, 0))).shape == (3, 0)
    assert borda_points(np.empty((0, 4))).shape == (0, 4)


def test_borda_points_accepts_lists_and_ints():
    np.testing.assert_array_equal(borda_points([[1, 2, 2]]), [[0.0, 1.5, 1.5]])


# ---------------------------------------------------------------------------------------------
# min_rank
# ---------------------------------------------------------------------------------------------
@given(batched())
@settings(max_examples=80, deadline=None)
def test_min_rank_matches_brute_force(x):
    got = min_rank(x)
    assert got.shape == x.shape and got.dtype == np.float64
    np.testing.assert_array_equal(got, bf_min_rank(x))


@given(batched(), st.randoms(use_true_random=False))
@settings(max_examples=80, deadline=None)
def test_min_rank_permutation_equivariant(x, rnd):
    perm = list(range(x.shape[-1]))
    rnd.shuffle(perm)
    np.testing.assert_array_equal(min_rank(x[..., perm]), min_rank(x)[..., perm])


def test_min_rank_competition_ranks_by_hand():
    np.testing.assert_array_equal(min_rank(np.array([3.0, 1.0, 3.0, np.nan, 5.0])), [2, 4, 2, np.nan, 1])
    np.testing.assert_array_equal(min_rank(np.array([1.0, 1.0, 1.0])), [1, 1, 1])
    assert min_rank(np.empty(0)).shape == (0,)


def test_min_rank_does_not_modify_input():
    x = np.array([[2.0, np.nan, 1.0]])
    before = x.copy()
    min_rank(x)
    borda_points(x)
    np.testing.assert_array_equal(x, before)


# ---------------------------------------------------------------------------------------------
# tie_groups, count_present
# ---------------------------------------------------------------------------------------------
def bf_tie_groups(s):
    n = len(s)
    first, last = np.empty(n, int), np.empty(n, int)
    for p in range(n):
        q = p
        while q > 0 and s[q - 1] == s[p]:
            q -= 1
        first[p] = q
        q = p
        while q < n - 1 and s[q + 1] == s[p]:
            q += 1
        last[p] = q
    return first, last


@given(batched(max_dims=2, max_side=8))
@settings(max_examples=80, deadline=None)
def test_tie_groups_matches_brute_force(x):
    s = np.sort(x, axis=-1)  # NaN sort last
    first, last = tie_groups(s)
    for idx in np.ndindex(*s.shape[:-1]):
        f, l = bf_tie_groups(s[idx])
        np.testing.assert_array_equal(first[idx], f)
        np.testing.assert_array_equal(last[idx], l)


@given(batched())
@settings(max_examples=80, deadline=None)
def test_count_present(x):
    ref = np.zeros(x.shape[:-1], dtype=int)
    for idx in np.ndindex(*x.shape[:-1]):
        ref[idx] = sum(1 for v in x[idx] if not np.isnan(v))
    np.testing.assert_array_equal(count_present(x), ref)


@pytest.mark.parametrize("name", ranking.__all__)
def test_public_kernels_have_docstrings(name):
    assert getattr(ranking, name).__doc__
