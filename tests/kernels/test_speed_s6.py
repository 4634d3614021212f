"""Session 6 speed work (issue 24): each faster path gives the numbers of the path it replaced.

References share no code with the engine: the Elo of a score tensor as it was computed before (a fresh ``np.where``
per row block, copied here) and a plain loop over the battles; the Friedman p-values of ``scipy.stats``' chi-square
and F distributions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.kernels import battles as B


def _elo_where(X, weights=None, k=4.0, block_cells=1 << 22):
    """The Elo of a score tensor as written before session 6 (one fresh array per operation and row block)."""
    X = np.asarray(X, dtype=np.float64)
    *batch, T, S = X.shape
    w = np.ones(T) if weights is None else np.asarray(weights, dtype=np.float64)
    w = np.broadcast_to(w, (*batch, T))
    R = np.full((*batch, S), 1000.0)
    played = np.zeros((*batch, S), dtype=bool)
    lb = math.log(10.0) / 400.0
    step = max(1, block_cells // max(1, S * int(np.prod(batch, dtype=np.int64))))
    for t in range(T):
        x = X[..., t, :]
        ok = ~np.isnan(x)
        delta = np.empty((*batch, S))
        any_pair = np.zeros((*batch, S), dtype=bool)
        for i0 in range(0, S, step):
            i1 = min(S, i0 + step)
            xi, oki = x[..., i0:i1, None], ok[..., i0:i1, None]
            pair = oki & ok[..., None, :]
            pair[..., np.arange(i1 - i0), np.arange(i0, i1)] = False
            res = np.where(xi > x[..., None, :], 1.0, np.where(xi < x[..., None, :], 0.0, 0.5))
            with np.errstate(over="ignore"):
                expected = 1.0 / (1.0 + np.exp((R[..., None, :] - R[..., i0:i1, None]) * lb))
            delta[..., i0:i1] = np.where(pair, res - expected, 0.0).sum(axis=-1)
            any_pair[..., i0:i1] = pair.any(axis=-1)
        R = R + float(k) * w[..., t, None] * delta
        played |= any_pair & (w[..., t, None] > 0)
    return np.where(played, R, np.nan)


def _elo_loop(X, w, k):
    """Elo from a loop over every battle of every judge, from the ratings before the judge."""
    T, S = X.shape
    R = [1000.0] * S
    seen = [False] * S
    for t in range(T):
        new = list(R)
        for i in range(S):
            for j in range(S):
                if i != j and not math.isnan(X[t, i]) and not math.isnan(X[t, j]):
                    s = 1.0 if X[t, i] > X[t, j] else 0.5 if X[t, i] == X[t, j] else 0.0
                    new[i] += k * w[t] * (s - 1.0 / (1.0 + 10.0 ** ((R[j] - R[i]) / 400.0)))
                    seen[i] = seen[i] or w[t] > 0
        R = new
    return np.where(seen, R, np.nan)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cells", [1 << 22, 7, 64])
def test_elo_across_same_bits_as_the_where_path(monkeypatch, seed, cells):
    """Reused work arrays give the ratings of fresh ``np.where`` arrays bit for bit: ties, missing scores,
    zero weights, batch axes, one shared table, row blocks of any size (including a last, shorter block)."""
    rng = np.random.default_rng(seed)
    S, T, Bn = int(rng.integers(2, 30)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
    X = rng.integers(0, 4, size=(Bn, T, S)).astype(float)
    X[rng.random(X.shape) < 0.2] = np.nan
    w = rng.integers(0, 3, size=(Bn, T)).astype(float)
    monkeypatch.setattr(B, "ELO_BLOCK_CELLS", cells)
    np.testing.assert_array_equal(B.elo_across(X, weights=w, k=16), _elo_where(X, w, 16, cells))
    np.testing.assert_array_equal(B.elo_across(X[0], weights=w, k=16), _elo_where(np.broadcast_to(X[0], X.shape), w, 16,
                                                                                     cells))
    np.testing.assert_array_equal(B.elo_across(X[0]), _elo_where(X[0], None, 4.0, cells))


def test_elo_across_large_gaps_same_bits():
    """Ratings far apart (exp overflows to inf, expected score 0) keep the old path's bits."""
    X = np.array([[3.0, 1.0, 2.0], [1.0, 3.0, 2.0], [3.0, 2.0, 1.0]])
    w = np.array([1e10, 3e10, 1.0])
    np.testing.assert_array_equal(B.elo_across(X, weights=w), _elo_where(X, w))


def test_elo_across_equals_a_loop_over_battles():
    rng = np.random.default_rng(11)
    X = np.round(rng.random((5, 12)), 1)
    X[rng.random(X.shape) < 0.15] = np.nan
    w = np.array([1.0, 0.0, 2.0, 0.5, 1.0])
    np.testing.assert_allclose(B.elo_across(X, weights=w, k=16), _elo_loop(X, w, 16), atol=1e-9, rtol=0)


# ---------------------------------------------------------------------------------------------
# Friedman and Nemenyi without importing scipy.stats
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(8))
def test_friedman_p_values_same_bits_as_scipy_stats(seed):
    """scipy.special's chdtrc / fdtrc give the p-values of scipy.stats' chi2.sf / f.sf bit for bit."""
    from scipy import stats

    from engine.kernels.significance import friedman_test

    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 60)), int(rng.integers(2, 80))
    X = np.round(rng.normal(size=(n, k)) + rng.normal(size=k) * rng.uniform(0, 2), 1)
    r = friedman_test(X)
    assert r.pvalue == float(stats.chi2.sf(r.statistic, k - 1))
    if math.isfinite(r.iman_davenport):
        assert r.iman_davenport_pvalue == float(stats.f.sf(r.iman_davenport, k - 1, (k - 1) * (n - 1)))


def test_friedman_p_values_over_many_points():
    from scipy import special, stats

    rng = np.random.default_rng(0)
    for _ in range(2000):
        k, n = int(rng.integers(2, 400)), int(rng.integers(2, 200))
        x, f = float(rng.exponential(2 * k)), float(rng.exponential(3))
        assert special.chdtrc(k - 1, x) == stats.chi2.sf(x, k - 1)
        assert special.fdtrc(k - 1, (k - 1) * (n - 1), f) == stats.f.sf(f, k - 1, (k - 1) * (n - 1))


def test_studentized_range_quantiles_are_scipys():
    """The quadrature's quantile is scipy's ``studentized_range.ppf(p, k, inf)`` to the last bits or so, for every
    k = 2..256 at the report's levels (0.05, 0.1) and for other levels and larger k."""
    from scipy.stats import studentized_range

    from engine.kernels.significance import studentized_range_quantile

    for alpha in (0.05, 0.1):
        got = [studentized_range_quantile(1.0 - alpha, k) for k in range(2, 257)]
        want = [studentized_range.ppf(1.0 - alpha, k, np.inf) for k in range(2, 257)]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    for alpha, k in [(0.01, 7), (0.001, 3), (0.2, 40), (0.05, 600), (0.5, 2)]:
        np.testing.assert_allclose(studentized_range_quantile(1.0 - alpha, k),
                                   studentized_range.ppf(1.0 - alpha, k, np.inf), rtol=1e-12, atol=0)


def test_studentized_range_quantile_of_two_is_the_normal_difference():
    """For k = 2 the range is |Z1 - Z2| = sqrt(2) |N(0, 1)|: its p quantile is sqrt(2) times the normal (1 + p) / 2
    quantile (the closed form, by bisection on math.erf, independent of the quadrature)."""
    from engine.kernels.significance import studentized_range_quantile

    for p in (0.5, 0.9, 0.95, 0.99, 0.999):
        lo, hi = 0.0, 10.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < (1 + p) / 2 else (lo, mid)
        assert studentized_range_quantile(p, 2) == pytest.approx(math.sqrt(2) * lo, rel=1e-13)


@pytest.mark.parametrize("k,alpha", [(2, 0.05), (5, 0.05), (58, 0.05), (256, 0.1), (257, 0.05), (7, 0.01)])
def test_nemenyi_q_is_scipys_quantile_over_sqrt2(k, alpha):
    """At the report's levels and others, q is scipy's quantile over sqrt 2;
    Demsar's Table 5a where it gives one (2.343 for k = 2 ... at alpha 0.05)."""
    from scipy.stats import studentized_range

    from engine.kernels.significance import nemenyi_q

    want = studentized_range.ppf(1.0 - alpha, k, np.inf) / math.sqrt(2.0)
    np.testing.assert_allclose(nemenyi_q(k, alpha), want, rtol=1e-13, atol=0)
    demsar = {(2, 0.05): 1.960, (5, 0.05): 2.728}
    if (k, alpha) in demsar:
        assert round(nemenyi_q(k, alpha), 3) == demsar[(k, alpha)]


def test_report_path_does_not_import_scipy_stats():
    """Friedman and Nemenyi (alpha 0.05, 58 systems) in a fresh process leave scipy.stats unimported."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\nfrom engine.kernels.significance import compare\n"
            "X = np.random.default_rng(0).normal(size=(30, 58))\ncompare(X, test='nemenyi')\n"
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_log_sigmoid_in_one_array_same_bits():
    """Bradley-Terry's log-likelihood term: in-place steps give the bits of the expression, for any sign and size."""
    rng = np.random.default_rng(3)
    d = np.concatenate([rng.normal(scale=s, size=(7, 5, 5)) for s in (1e-3, 1.0, 30.0, 800.0)])
    d[0, 0, :3] = [0.0, -0.0, 745.0]
    want = np.minimum(d, 0.0) - np.log1p(np.exp(-np.abs(d)))
    np.testing.assert_array_equal(B._log_sigmoid(d), want)
    ref = np.log(1.0 / (1.0 + np.exp(-d[1:2].clip(-30, 30))))  # the definition, where it does not underflow
    np.testing.assert_allclose(B._log_sigmoid(d[1:2].clip(-30, 30)), ref, rtol=1e-12, atol=1e-300)
