"""Rank(UB), paired (engine.kernels.metrics.rank_upper_bound), against plain loops over replicate scores."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kernels.metrics import prob_above, rank_upper_bound


def loops(point, R, level):
    """1 + #{j ranked, j != i : x_j > x_i in at least ``level`` of the replicates holding both}, NaN if unranked."""
    S = len(point)
    out = []
    for i in range(S):
        if math.isnan(point[i]):
            out.append(math.nan)
            continue
        n = 0
        for j in range(S):
            if j == i or math.isnan(point[j]):
                continue
            both = [r for r in R if not math.isnan(r[i]) and not math.isnan(r[j])]
            n += bool(both) and sum(r[j] > r[i] for r in both) / len(both) >= level
        out.append(1.0 + n)
    return out


@settings(max_examples=150)
@given(st.integers(1, 7), st.integers(1, 12), st.integers(0, 2**32 - 1),
       st.sampled_from([0.6, 0.8, 0.9, 0.95, 0.99]))
def test_rank_ub_equals_plain_loops(S, B, seed, level):
    rng = np.random.default_rng(seed)
    R = rng.integers(0, 4, size=(B, S)).astype(float)  # few values: ties in replicates
    R[rng.random(size=R.shape) < 0.15] = np.nan  # absent systems (a bootstrap over systems)
    point = rng.integers(0, 4, size=S).astype(float)
    point[rng.random(size=S) < 0.15] = np.nan
    got = rank_upper_bound(point, prob_above(R), level=level)
    want = loops(point, R, level)
    assert np.array_equal(got, np.array(want), equal_nan=True)


def test_at_most_one_half_no_order_is_sure():
    R = np.array([[2.0, 1.0], [1.0, 2.0]])
    assert np.isnan(rank_upper_bound(np.array([1.0, 0.0]), prob_above(R), level=0.5)).all()
    assert rank_upper_bound(np.array([1.0, 0.0]), prob_above(R), level=0.51).tolist() == [1.0, 1.0]


def test_common_shift_does_not_hide_a_sure_order():
    """Scores that move together (a bootstrap over tasks): marginal intervals overlap, the paired bound separates."""
    rng = np.random.default_rng(0)
    shift = rng.normal(scale=10.0, size=(500, 1))
    R = shift + np.array([3.0, 2.0, 1.0]) + rng.normal(scale=0.1, size=(500, 3))
    lo, hi = np.percentile(R, [2.5, 97.5], axis=0)
    assert (lo[:, None] <= hi[None, :]).all()  # every marginal interval overlaps every other: Arena's bound says 1
    assert rank_upper_bound(np.array([3.0, 2.0, 1.0]), prob_above(R)).tolist() == [1.0, 2.0, 3.0]


def test_a_level_outside_0_1_is_refused_by_name():
    import pytest

    from engine.errors import VotebenchError

    P = prob_above(np.array([[2.0, 1.0], [1.0, 2.0]]))
    for bad in (0.0, -0.5, 1.0, 1.5, float("nan")):
        with pytest.raises(VotebenchError, match="level"):
            rank_upper_bound(np.array([1.0, 0.0]), P, level=bad)
