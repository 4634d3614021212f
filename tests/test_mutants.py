"""Tests that kill the surviving non-equivalent mutants of the mutation pass (issue 12, item 4).

``mutmut`` (benchmarks/results/mutation.md) changed one token at a time in engine/kernels, engine/bootstrap.py
and engine/metrics.py; every change listed there that the rest of the suite accepted and that can change a
result is caught here.  Each test checks documented behaviour against a reference that shares no code with
``engine``: exact sums of ``fractions.Fraction`` (a float is the binary rational it holds), plain loops
written from the definitions, or hand-worked numbers.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from engine.kernels.exact import (
    anchor,
    digit_sums,
    digits_to_float,
    exact_matmul,
    exact_sum,
    ordered_sum,
    weighted_task_mean,
    weighted_task_sum,
)


def fsum_exact(terms) -> float:
    """The float nearest to the exact sum of ``terms`` (floats or Fractions)."""
    return float(sum((F(t) for t in terms), F(0)))


# ------------------------------------------------------------------------------------------ exact sums
def test_exact_sum_of_tiny_values_is_correctly_rounded():
    """Values near 1e-20: the digits start at their own anchor, not at 1 (93 bits lost there)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 9)) * 1e-20
    got = exact_sum(x, axis=-1)
    for row, g in zip(x, got):
        assert g == fsum_exact(row.tolist())


def test_exact_sum_of_nothing_is_zero():
    assert float(exact_sum(np.array([]))) == 0.0
    assert float(exact_sum(np.full(3, np.nan))) == 0.0


def _truncated_total(values, top, n):
    """Exact sum of the values, each cut toward zero at 2**(31 (top - n)) (what n digits below 2**(31 top) hold)."""
    unit = F(2) ** (31 * (top - n))
    return sum((math.trunc(F(float(v)) / unit) * unit for v in values), F(0))


def _digits_value(D, top):
    return sum((F(int(d)) * F(2) ** (31 * (top - 1 - k)) for k, d in enumerate(D)), F(0))


@pytest.mark.parametrize("n", [2, 4])
def test_digit_sums_along_the_first_axis_with_any_number_of_digits(n):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(7, 3)) * 1e3
    top = anchor(np.abs(x).max())
    D = digit_sums(x, 0, top, n=n)
    assert D.shape == (3, n) and D.dtype == np.int64  # documented: int64, reduced shape + (n,)
    for s in range(3):
        assert _digits_value(D[s], top) == _truncated_total(x[:, s], top, n)


def test_digits_to_float_is_one_function_of_the_exact_total_beyond_2_53():
    """Digit sums of more than 2**22 values exceed 2**53; the float depends on the exact total only.

    Each pair below holds one exact total split differently between the digits (a unit of a digit is
    2**31 units of the next one); the results must be equal, and within one unit in the last place of
    the total.
    """
    pairs = [([2**53 + 1, 1, 0, 0], [2**53, 2**31 + 1, 0, 0]),
             ([-(2**55) - 3, 2**40 + 7, 5, 0], [-(2**55) - 4, 2**40 + 2**31 + 7, 5, 0])]
    for a, b in pairs:
        D = np.array([a, b], dtype=np.int64)
        total = _digits_value(a, 1)
        assert total == _digits_value(b, 1)
        got = digits_to_float(D, 1)
        assert got[0] == got[1]
        assert abs(F(float(got[0])) - total) <= F(math.ulp(float(total)))


def _matmul_reference(K, G):
    return np.array([[fsum_exact(F(int(K[b, t])) * F(float(G[t, n])) for t in range(G.shape[0]))
                      for n in range(G.shape[1])] for b in range(K.shape[0])])


def test_exact_matmul_of_tiny_values_is_correctly_rounded():
    rng = np.random.default_rng(4)
    G = rng.normal(size=(5, 3)) * 1e-20
    K = rng.integers(0, 4, size=(2, 5)).astype(float)
    np.testing.assert_array_equal(exact_matmul(K, G), _matmul_reference(K, G))


def test_exact_matmul_with_large_whole_numbers_stays_exact():
    """Row sums of |K| near 2**31 times digits near 2**31 exceed float64's 53 bits: integer products then."""
    rng = np.random.default_rng(7)
    K = rng.integers(0, 2**31 // 7, size=(3, 7)).astype(float)
    G = rng.normal(size=(7, 4)) * 2.0**30
    np.testing.assert_array_equal(exact_matmul(K, G), _matmul_reference(K, G))


def test_exact_matmul_of_no_rows_or_no_terms():
    assert exact_matmul(np.zeros((0, 4)), np.ones((4, 3))).shape == (0, 3)
    assert exact_matmul(np.ones((2, 0)), np.ones((0, 3))).tolist() == [[0.0] * 3] * 2  # no terms: sums of 0


def test_ordered_sum_over_no_terms_is_zero_of_the_other_axes():
    assert ordered_sum(np.ones((0, 3)), axis=0).tolist() == [0.0, 0.0, 0.0]
    assert ordered_sum(np.ones((2, 0)), axis=-1).tolist() == [0.0, 0.0]


def test_ordered_sum_accumulates_in_float64():
    """float32 and boolean terms are added as float64 numbers (a float32 or boolean accumulator is not a sum)."""
    small = np.float32(2.0**-30)
    assert float(ordered_sum(np.array([1.0, small, small], dtype=np.float32))) == 1.0 + 2.0**-29
    assert ordered_sum(np.array([[True, False], [True, True]]), axis=0).tolist() == [2.0, 1.0]


# ------------------------------------------------------------------------------------------ task means
def test_weighted_task_mean_counts_missing_terms_as_zero():
    """Hand-worked: a NaN term adds 0 to the numerator, its weight stays in the denominator."""
    v = np.array([[np.nan, 2.0], [1.0, 1.0], [0.5, 0.0]])
    assert weighted_task_mean(v).tolist() == [0.5, 1.0]
    w = np.array([1.0, 2.0, 1.0])
    assert weighted_task_mean(v, w).tolist() == [2.5 / 4, 4.0 / 4]


def test_weighted_task_mean_of_sixths_is_the_exact_mean():
    """Values that are multiples of 1/denominator and weights 1/3, 1/2, 1/6: one exact division."""
    rng = np.random.default_rng(11)
    k = rng.integers(0, 13, size=(3, 8))
    w = (F(1, 3), F(1, 2), F(1, 6))
    got = weighted_task_mean(k / 6.0, np.array([float(x) for x in w]), denominator=6)
    ref = [float(sum((w[t] * F(int(k[t, s]), 6) for t in range(3)), F(0)) / sum(w)) for s in range(8)]
    assert got.tolist() == ref


def test_weighted_task_mean_with_many_weight_rows_stays_exact():
    """1500 rows of weights (replicates): the integer path is chosen per row, not for their total."""
    rng = np.random.default_rng(13)
    k = rng.integers(-(2**40), 2**40, size=(3, 4))
    w = np.full((1500, 3), 1 / 3)
    w[::2, 1] = 2 / 3
    got = weighted_task_mean(k / 2.0, w)
    for row_w, row in ((w[0], got[0]), (w[1], got[1])):
        wf = [F(1, 3) if x == 1 / 3 else F(2, 3) for x in row_w]
        ref = [float(sum((wf[t] * F(int(k[t, s]), 2) for t in range(3)), F(0)) / sum(wf)) for s in range(4)]
        assert row.tolist() == ref
    assert (got[::2] == got[0]).all() and (got[1::2] == got[1]).all()


def _task_order_mean(v, w, extra=1.0):
    """The documented fallback, as a plain loop: sum_t w_t v_t in task order / ((w_0 + w_1 + ...) * extra)."""
    T, S = v.shape
    den = 0.0
    for t in range(T):
        den += float(w[t])
    out = []
    for s in range(S):
        acc = 0.0
        for t in range(T):
            acc += float(w[t]) * float(v[t, s])
        out.append(acc / (den * extra))
    return out


def test_weighted_task_mean_outside_the_exact_range_sums_in_task_order():
    """Scores near 2**61 (integer products would round) and a fractional ``extra``: the task-order sum."""
    rng = np.random.default_rng(12)
    w = np.full(3, 1 / 3)
    v = rng.integers(-(2**61), 2**61, size=(3, 8)).astype(float)
    assert weighted_task_mean(v, w).tolist() == _task_order_mean(v, w)
    v = np.array([[1.0, 4.0, 4.0], [0.0, 0.5, 0.5], [0.5, 2.5, 1.5], [2.0, 1.0, 4.0]])
    w = np.array([1.0, 1 / 6, 1 / 3, 1 / 3])
    assert weighted_task_mean(v, w, extra=1 / 3).tolist() == _task_order_mean(v, w, 1 / 3)


def test_weighted_task_mean_near_the_limit_of_exact_integers():
    """Weight sum x denominator x ``extra`` near 2**54: the result is the exact mean or the task-order sum.

    The contract allows exactly these two results (the integer path while every integer is exact, the
    task-order fallback beyond); a division by a rounded integer denominator gives neither.
    """
    rng = np.random.default_rng(183)
    k = rng.integers(2**27, 2**28, size=3) | 1
    wf = [F(int(x), 3) for x in k]
    w = np.array([float(x) for x in wf])
    kv = rng.integers(0, 13, size=(3, 8))
    extra = float(rng.integers(2**21, 2**22) | 1)
    got = weighted_task_mean(kv / 6.0, w, denominator=6, extra=extra).tolist()
    exact = [float(sum((wf[t] * F(int(kv[t, s]), 6) for t in range(3)), F(0)) / (sum(wf) * F(extra))) for s in range(8)]
    fallback = _task_order_mean(kv / 6.0, w, extra)
    assert all(g in (e, f) for g, e, f in zip(got, exact, fallback)), (got, exact, fallback)


def _task_order_sum(v, w):
    T, S = v.shape
    out = []
    for s in range(S):
        acc = 0.0
        for t in range(T):
            acc += float(w[t]) * float(v[t, s])
        out.append(acc)
    return out


def test_weighted_task_sum_with_many_weight_rows_stays_exact():
    rng = np.random.default_rng(14)
    k = rng.integers(-(2**40), 2**40, size=(3, 4))
    w = np.full((1500, 3), 1 / 3)
    w[::2, 1] = 2 / 3
    got = weighted_task_sum(k / 2.0, w)
    for row_w, row in ((w[0], got[0]), (w[1], got[1])):
        wf = [F(1, 3) if x == 1 / 3 else F(2, 3) for x in row_w]
        assert row.tolist() == [fsum_exact(wf[t] * F(int(k[t, s]), 2) for t in range(3)) for s in range(4)]


def test_weighted_task_sum_outside_the_exact_range():
    """Scores near 2**61 with weights 1/3: the exact sum or the task-order sum, not a rounded integer sum."""
    rng = np.random.default_rng(15)
    w = np.array([1 / 3, 2 / 3, 1 / 3])
    wf = [F(1, 3), F(2, 3), F(1, 3)]
    v = rng.integers(-(2**61), 2**61, size=(3, 8)).astype(float)
    got = weighted_task_sum(v, w).tolist()
    exact = [fsum_exact(wf[t] * F(float(v[t, s])) for t in range(3)) for s in range(8)]
    fallback = _task_order_sum(v, w)
    assert all(g in (e, f) for g, e, f in zip(got, exact, fallback)), (got, exact, fallback)
