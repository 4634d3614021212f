"""Report speed and look (issues 24 and 26): batched Wilcoxon tests against scipy one pair at a time, the
one-instance shortcut of the exact instance sums, and the report page in Chromium (sortable tables, no sideways
scroll at phone width)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wilcoxon

from engine.core import instance_sums
from engine.kernels.exact import digits_to_float, full_digit_sums
from engine.significance import holm, wilcoxon_holm, wilcoxon_pvalues


def scipy_one_by_one(D):
    """p-values of scipy.stats.wilcoxon called on each column alone (1 for a column of zeros)."""
    out = []
    for j in range(D.shape[1]):
        if not np.any(D[:, j] != 0):
            out.append(1.0)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(float(wilcoxon(D[:, j]).pvalue))
    return np.array(out)


@pytest.mark.parametrize("n", [3, 6, 13, 14, 30, 50, 51, 80])
@pytest.mark.parametrize("kind", ["continuous", "integers", "mixed"])
def test_batched_wilcoxon_equals_scipy_pair_by_pair(n, kind):
    """Every column's method (exact, permutation, normal approximation) is chosen as scipy's ``auto`` does alone."""
    rng = np.random.default_rng(n)
    if kind == "continuous":
        D = rng.normal(size=(n, 40))
    elif kind == "integers":  # zeros and ties nearly everywhere
        D = rng.integers(-3, 4, size=(n, 40)).astype(float)
    else:
        D = rng.normal(size=(n, 40))
        D[:, ::3] = np.round(D[:, ::3])
    D[:, 0] = 0.0
    np.testing.assert_allclose(wilcoxon_pvalues(D), scipy_one_by_one(D), rtol=1e-12, atol=0)


def test_wilcoxon_holm_matrix_against_a_loop():
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(12, 9)), 1)
    X[:, 4] = X[:, 2]  # a pair with no difference
    P, adj, reject = wilcoxon_holm(X, 0.05)
    for i in range(9):
        for j in range(9):
            if i != j:
                assert P[i, j] == pytest.approx(scipy_one_by_one((X[:, i] - X[:, j])[:, None])[0], rel=1e-12)
    iu = np.triu_indices(9, 1)
    np.testing.assert_allclose(adj[iu], holm(P[iu]))
    assert P[2, 4] == 1.0 and not reject[2, 4]


def test_one_instance_sum_is_the_digit_sum():
    """The one-instance shortcut of instance_sums gives the bits the exact digit sums give (NaN = 0, no -0.0)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40, 15, 1, 25)) * 10.0 ** rng.uniform(-8, 8, size=(40, 15, 1, 25))
    a[a < -2] = np.nan
    a[0, 0, 0, 0] = -0.0
    d, top = full_digit_sums(a, -2)
    want = digits_to_float(d, top)
    got = instance_sums(a)
    assert np.array_equal(got, want)
    assert not np.signbit(got[got == 0]).any()
