"""Benchmark agreement (engine.kernels.metrics.benchmark_agreement / benchmark_diversity) against scipy and brute force.

Kendall's tau-b is compared with ``scipy.stats.kendalltau``; its p-value with an enumeration of every permutation
(small rankings without ties: the exact null distribution); the diversity with Kendall's W computed by a loop
(``conftest.bf_kendall_w``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from conftest import bf_kendall_w
from scipy import stats

from engine.kernels.metrics import benchmark_agreement, benchmark_diversity


@pytest.mark.parametrize("seed", range(5))
def test_tau_over_the_common_systems_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    names = [f"s{i}" for i in range(15)]
    a = rng.integers(0, 6, 12).astype(float)  # ties
    b = rng.integers(0, 6, 10).astype(float)
    sa = list(rng.permutation(names)[:12])
    sb = list(rng.permutation(names)[:10])
    a[0] = np.nan  # not ranked by benchmark a
    r = benchmark_agreement(a, b, systems_a=sa, systems_b=sb)
    common = [s for s in sa[1:] if s in sb]
    x = [a[sa.index(s)] for s in common]
    y = [b[sb.index(s)] for s in common]
    ref = stats.kendalltau(x, y)
    assert r["n"] == len(common) and r["systems"] == common
    assert r["tau"] == pytest.approx(ref.statistic, rel=1e-12, abs=1e-15)
    assert r["pvalue"] == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_pvalue_is_the_exact_permutation_p_value_without_ties(seed):
    rng = np.random.default_rng(seed)
    n = 6
    a, b = rng.permutation(n).astype(float), rng.permutation(n).astype(float)
    r = benchmark_agreement(a, b)

    def tau(x, y):
        s = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(n) for j in range(i + 1, n))
        return s / (n * (n - 1) / 2)

    t = tau(a, b)
    null = [tau(a, b[list(p)]) for p in itertools.permutations(range(n))]
    assert r["tau"] == pytest.approx(t)
    assert r["pvalue"] == pytest.approx(np.mean(np.abs(null) >= abs(t) - 1e-12), rel=1e-12)


def test_degenerate_agreement_is_nan():
    r = benchmark_agreement([1.0, 2.0], [1.0, 3.0], systems_a=["a", "b"], systems_b=["b", "c"])
    assert r["n"] == 1 and math.isnan(r["tau"]) and math.isnan(r["pvalue"])
    assert math.isnan(benchmark_agreement([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])["tau"])  # a constant ranking
    with pytest.raises(ValueError, match="same systems"):
        benchmark_agreement([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="both benchmarks"):
        benchmark_agreement([1.0, 2.0], [1.0, 2.0], systems_a=["a", "b"])


@pytest.mark.parametrize("seed", range(5))
def test_diversity_is_one_minus_brute_force_w(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(6, 5)).astype(float)  # tasks x systems, with ties
    assert float(benchmark_diversity(X)) == pytest.approx(1.0 - bf_kendall_w(X.tolist()), abs=1e-12)
    X[2, 3] = np.nan  # listwise: system 3 is left out
    ref = 1.0 - bf_kendall_w(np.delete(X, 3, axis=1).tolist())
    assert float(benchmark_diversity(X)) == pytest.approx(ref, abs=1e-12)
    assert float(benchmark_diversity(np.tile(np.arange(5.0), (4, 1)))) == 0.0  # every task agrees
