"""Kendall's tau-b and distance from whole-number counts (engine.kernels.paircount.kendall_counts), checked
against plain loops over the pairs of systems and against scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engine.kernels.metrics import pairwise_correlations
from engine.kernels.paircount import dense_ranks, kendall_counts, kendall_distance, kendall_tau_b


def loop_counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int, int, int]:
    """n, concordant, discordant, tied in a only, tied in b only, tied in both: a loop over the pairs."""
    keep = [s for s in range(a.size) if not (np.isnan(a[s]) or np.isnan(b[s]))]
    c = d = ta = tb = tab = 0
    for i, j in itertools.combinations(keep, 2):
        sa = int(a[i] > a[j]) - int(a[i] < a[j])
        sb = int(b[i] > b[j]) - int(b[i] < b[j])
        if sa == 0 and sb == 0:
            tab += 1
        elif sa == 0:
            ta += 1
        elif sb == 0:
            tb += 1
        elif sa == sb:
            c += 1
        else:
            d += 1
    return len(keep), c, d, ta, tb, tab


def loop_tau_b(a: np.ndarray, b: np.ndarray) -> float:
    n, c, d, ta, tb, tab = loop_counts(a, b)
    n0 = n * (n - 1) // 2
    den = (n0 - ta - tab) * (n0 - tb - tab)
    return (c - d) / np.sqrt(den) if den > 0 else np.nan


scores = arrays(np.float64, st.integers(0, 14), elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, 3.0, -7.0, np.inf,
                                                                             -np.inf, np.nan, 1e308]))


@given(scores, st.data())
def test_counts_equal_a_loop_over_pairs(a, data):
    b = data.draw(arrays(np.float64, a.shape, elements=st.sampled_from([0.0, 1.0, 2.0, np.nan, np.inf])))
    ra = dense_ranks(a[None, :]) if a.size else np.zeros((1, 0), dtype=np.int16)
    rb = dense_ranks(b[None, :]) if b.size else np.zeros((1, 0), dtype=np.int16)
    n, n1, n2, n3, disc = kendall_counts(ra, rb, np.array([0]), np.array([0]))[0]
    ln, c, d, ta, tb, tab = loop_counts(a, b)
    assert (n, n1, n2, n3, disc) == (ln, ta + tab, tb + tab, tab, d)
    assert ln * (ln - 1) // 2 - n1 - n2 + n3 - disc == c


@given(scores, st.data())
def test_tau_b_and_distance_equal_the_loop(a, data):
    b = data.draw(arrays(np.float64, a.shape, elements=st.sampled_from([0.0, 1.0, 2.0, np.nan, -np.inf])))
    expect = loop_tau_b(a, b)
    got = kendall_tau_b(a, b)
    assert got.shape == () and got.dtype == np.float64
    assert np.isnan(expect) and np.isnan(got) or got == pytest.approx(expect, rel=1e-15, abs=0)
    n, c, d, ta, tb, tab = loop_counts(a, b)
    assert kendall_distance(a, b) == d + 0.5 * (ta + tb)
    assert kendall_distance(a, b, tie_penalty=1.0) == d + ta + tb


def test_tau_b_equals_scipy_on_ties_and_gaps():
    rng = np.random.default_rng(7)
    for _ in range(200):
        S = int(rng.integers(2, 40))
        a = rng.integers(0, 5, size=S).astype(float)
        b = rng.integers(0, 5, size=S).astype(float)
        a[rng.random(S) < 0.15] = np.nan
        keep = ~(np.isnan(a) | np.isnan(b))
        ref = scipy.stats.kendalltau(a[keep], b[keep], variant="b").statistic if keep.sum() > 1 else np.nan
        got = float(kendall_tau_b(a, b))
        assert (np.isnan(ref) and np.isnan(got)) or got == pytest.approx(ref, abs=1e-12)


def test_broadcasting_pairs_every_row_with_its_own_reference():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 6, size=(4, 3, 25)).astype(float)
    b = rng.integers(0, 6, size=(3, 25)).astype(float)
    got = kendall_tau_b(a, b)
    assert got.shape == (4, 3)
    for i, j in np.ndindex(4, 3):
        assert got[i, j] == pytest.approx(loop_tau_b(a[i, j], b[j]), rel=1e-15)
    assert kendall_tau_b(b, a).shape == (4, 3)


def test_large_rankings_stay_exact():
    """3,000 systems: 4.5 million pairs per ranking, counted in integers (the loop would take minutes, so
    scipy, which counts with its own merge sort, is the reference)."""
    rng = np.random.default_rng(11)
    a = rng.integers(0, 400, size=3000).astype(float)
    b = a + rng.integers(-30, 30, size=3000)
    assert float(kendall_tau_b(a, b)) == pytest.approx(scipy.stats.kendalltau(a, b).statistic, abs=1e-13)


def test_replicate_matrix_equals_pairwise_loops():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(9, 12)).astype(float)
    x[rng.random(x.shape) < 0.2] = np.nan
    x[3] = x[1]  # a repeated row
    R = pairwise_correlations(x, method="kendall")
    for i, j in np.ndindex(9, 9):
        expect = loop_tau_b(x[i], x[j])
        assert (np.isnan(expect) and np.isnan(R[i, j])) or R[i, j] == pytest.approx(expect, rel=1e-15)
