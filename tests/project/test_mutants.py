"""Tests that kill the surviving non-equivalent mutants of the mutation pass (issue 12, item 4).

``mutmut`` (benchmarks/results/mutation.md) changed one token at a time in engine/kernels, engine/labelled/bootstrap.py
and engine/kernels/metrics.py; every change listed there that the rest of the suite accepted and that can change a
result is caught here.  Each test checks documented behaviour against a reference that shares no code with
``engine``: exact sums of ``fractions.Fraction`` (a float is the binary rational it holds), plain loops
written from the definitions, or hand-worked numbers.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from engine.io.readers.battles import Battles
from engine.kernels import battles as B
from engine.kernels import paired as PT
from engine.kernels import social as V
from engine.kernels.battles import A_WINS, B_WINS, TIE
from engine.kernels.exact import (
    anchor,
    digit_sums,
    digits_to_float,
    exact_matmul,
    exact_sum,
    full_digit_sums,
    merge_digit_sums,
    ordered_sum,
    weighted_task_mean,
    weighted_task_sum,
)
from engine.kernels.pairblock import blocked_scores, chunk_counts
from engine.kernels.paircount import dense_ranks


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


def test_exact_matmul_decides_by_the_row_sums_of_k():
    """One row of 64 whole numbers in [2**20, 2**21): row sum near 2**26 (> 2**21), every column sum < 2**21.

    Digit products summed over the row reach 2**56, beyond float64's 53 bits (a float matrix product is
    16 units in the last place off for this seed): the integer path must be chosen from the row sums of
    ``K`` (the terms of one result), not from its column sums.
    """
    rng = np.random.default_rng(22)
    K = rng.integers(2**20, 2**21, size=(1, 64)).astype(float)
    G = rng.normal(size=(64, 3)) * 2.0**30
    got = exact_matmul(K, G)[0]
    for n in range(3):  # documented: within one unit in the last place of the exact total
        exact = sum((F(int(K[0, t])) * F(float(G[t, n])) for t in range(64)), F(0))
        assert abs(F(float(got[n])) - exact) <= F(math.ulp(float(exact)))


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


# ------------------------------------------------------------------------------------------ battles
def _elo_judges(X, w, k):
    """Elo over the judges of a (T, S) table, written from the definition: each judge plays all its pairs at once."""
    T, S = X.shape
    R = [1000.0] * S
    played = [False] * S
    for t in range(T):
        new = list(R)
        for i in range(S):
            for j in range(S):
                if i != j and not math.isnan(X[t, i]) and not math.isnan(X[t, j]):
                    s = 1.0 if X[t, i] > X[t, j] else 0.5 if X[t, i] == X[t, j] else 0.0
                    new[i] += k * w[t] * (s - 1 / (1 + 10 ** ((R[j] - R[i]) / 400)))
                    played[i] = played[i] or w[t] > 0
        R = new
    return [r if p else math.nan for r, p in zip(R, played)]


def test_elo_rule_on_stacks_of_tables_and_weight_rows_with_the_default_k():
    """(2, T, S) tables with (2, T) weight rows (one stack row each), FastChat's default k = 4.

    System 3 plays only on the weight-0 task and system 4 on no task: both have no rating (NaN).
    """
    X = np.array([[[3.0, 1.0, np.nan, 2.0, np.nan], [1.0, 1.0, 2.0, 0.0, np.nan], [0.0, 2.0, 1.0, np.nan, np.nan]],
                  [[1.0, 2.0, 3.0, np.nan, np.nan], [2.0, 2.0, np.nan, 5.0, np.nan], [0.0, np.nan, 1.0, np.nan, np.nan]]])
    w = np.array([[1.0, 2.0, 0.5], [1.0, 0.0, 3.0]])
    got = B.elo_across(X, weights=w)
    assert got.shape == (2, 5)
    for r in range(2):
        np.testing.assert_allclose(got[r], _elo_judges(X[r], w[r], 4.0), atol=1e-9, rtol=0)
    assert np.isnan(got[:, 4]).all() and np.isnan(got[1, 3])
    # one table, several weight rows: the table is broadcast against the rows
    both = B.elo_across(X[0], weights=w)
    for r in range(2):
        np.testing.assert_allclose(both[r], _elo_judges(X[0], w[r], 4.0), atol=1e-9, rtol=0, equal_nan=True)
    # a stack of tables with one weight row, or none: every table gets it
    for wr in (w[0], None):
        got = B.elo_across(X, weights=wr)
        for r in range(2):
            ref = _elo_judges(X[r], np.ones(3) if wr is None else wr, 4.0)
            np.testing.assert_allclose(got[r], ref, atol=1e-9, rtol=0, equal_nan=True)
    # a k below 1 is a valid step size
    np.testing.assert_allclose(B.elo_across(X[0], weights=w[0], k=0.5), _elo_judges(X[0], w[0], 0.5), atol=1e-9, rtol=0)


@pytest.mark.parametrize("k", [0.0, -1.0, math.inf, math.nan])
def test_elo_rule_refuses_a_step_that_is_not_positive(k):
    with pytest.raises(ValueError, match="^elo: k must be a positive number"):
        B.elo_across(np.ones((2, 3)), k=k)


def test_rules_over_judges_name_themselves_in_bad_input_errors():
    for f, name in ((B.elo_across, "elo"), (B.mean_win_rate_across, "mean_win_rate"), (B.judge_counts, "judge_counts"),
                    (B.battles_from_scores, "battles_from_scores")):
        with pytest.raises(ValueError, match=f"^{name}: X must have shape"):
            f(np.ones(3))
    for f in (B.judge_counts, B.battles_from_scores):
        with pytest.raises(ValueError, match="has no judge "):
            f(np.ones((0, 3)))
    with pytest.raises(ValueError, match="^battles_from_scores takes one .T, S. table"):
        B.battles_from_scores(np.ones((2, 2, 3)))


def _helm_rates(X, w):
    """HELM's mean win rate of one table as a plain loop with Fractions: per task (won + tied/2) / (n - 1), weighted mean."""
    T, S = X.shape
    out = []
    for s in range(S):
        num = den = F(0)
        for t in range(T):
            present = [j for j in range(S) if not math.isnan(X[t, j])]
            if math.isnan(X[t, s]) or len(present) < 2 or w[t] == 0:
                continue
            won = sum(F(1) if X[t, s] > X[t, j] else F(1, 2) if X[t, s] == X[t, j] else F(0) for j in present if j != s)
            wt = F(float(w[t])).limit_denominator(1000)  # the engine reads 1/3 as the simple fraction it stands for
            num += wt * won / (len(present) - 1)
            den += wt
        out.append(float(num / den) if den else math.nan)
    return out


def test_mean_win_rate_on_stacks_of_tables_and_weight_rows():
    rng = np.random.default_rng(31)
    X = rng.integers(0, 3, size=(3, 4, 5)).astype(float)
    X[rng.random(X.shape) < 0.25] = np.nan
    w = np.array([[1.0, 0.5, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1 / 3, 1.0, 2.0]])
    got = B.mean_win_rate_across(X, weights=w)
    assert got.shape == (3, 5)
    for r in range(3):
        np.testing.assert_array_equal(got[r], _helm_rates(X[r], w[r]))
    got = B.mean_win_rate_across(X[0], weights=w)
    for r in range(3):
        np.testing.assert_array_equal(got[r], _helm_rates(X[0], w[r]))
    for wr in (w[2], None):  # one weight row, or none, for the whole stack
        got = B.mean_win_rate_across(X, weights=wr)
        for r in range(3):
            np.testing.assert_array_equal(got[r], _helm_rates(X[r], np.ones(4) if wr is None else wr))


def test_judge_counts_with_half_weights_and_ties():
    """Weights in halves (integer units of 1/2): wins and ties are divided back, both, into the weights' units."""
    X = np.array([[1.0, 1.0, 0.0], [2.0, 1.0, 2.0], [0.0, 0.0, np.nan]])
    w = [F(1, 2), F(3, 2), F(1)]
    W = [[F(0)] * 3 for _ in range(3)]
    Tt = [[F(0)] * 3 for _ in range(3)]
    for t in range(3):
        for i in range(3):
            for j in range(3):
                if i != j and not (math.isnan(X[t, i]) or math.isnan(X[t, j])):
                    W[i][j] += w[t] * (X[t, i] > X[t, j])
                    Tt[i][j] += w[t] * (X[t, i] == X[t, j])
    got_w, got_t = B.judge_counts(X, np.array([float(x) for x in w]))
    assert got_w.tolist() == [[float(x) for x in row] for row in W]
    assert got_t.tolist() == [[float(x) for x in row] for row in Tt]


def test_battles_from_scores_gives_integer_judge_codes():
    X = np.array([[1.0, np.nan, 0.0], [2.0, 2.0, 3.0]])
    a, b, o, judge = B.battles_from_scores(X)
    assert a.tolist() == [0, 0, 0, 1] and b.tolist() == [2, 1, 2, 2]
    assert o.tolist() == [A_WINS, TIE, B_WINS, B_WINS] and judge.tolist() == [0, 1, 1, 1]
    assert judge.dtype == np.int32


def test_battles_counts_keep_models_without_battles_and_the_weights():
    bt = Battles(models=("x", "y", "z"), a=np.array([0, 1, 0], dtype=np.int32), b=np.array([1, 0, 1], dtype=np.int32),
                   outcome=np.array([A_WINS, A_WINS, TIE], dtype=np.int8), weights=np.array([2.0, 0.5, 1.0]))
    c = bt.counts()
    assert c.wins.tolist() == [[0.0, 2.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert c.ties.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


def _elo_loop(a, b, o, S, k=4.0, w=None):
    R = [1000.0] * S
    for n, (x, y, r) in enumerate(zip(a, b, o)):
        e = 1 / (1 + 10 ** ((R[y] - R[x]) / 400))
        d = k * (1.0 if w is None else w[n]) * ({A_WINS: 1.0, B_WINS: 0.0, TIE: 0.5}[r] - e)
        R[x], R[y] = R[x] + d, R[y] - d
    return R


def test_online_elo_with_battle_weights_and_models_without_battles():
    a, b, o, w = [0, 1, 0, 2], [1, 2, 2, 0], [A_WINS, TIE, B_WINS, A_WINS], [2.0, 0.5, 1.0, 3.0]
    got = B.elo(np.array(a), np.array(b), np.array(o), weights=np.array(w), n_models=5)
    np.testing.assert_allclose(got, _elo_loop(a, b, o, 5, w=w), atol=1e-9, rtol=0)
    assert got[3] == got[4] == 1000.0
    assert B.elo(np.array([], dtype=int), np.array([], dtype=int), np.array([], dtype=int)).tolist() == []
    np.testing.assert_allclose(B.elo(np.array([1]), np.array([0]), np.array([B_WINS])), _elo_loop([1], [0], [B_WINS], 2),
                               atol=1e-9, rtol=0)


@pytest.mark.parametrize(("args", "kw", "match"), [
    (([0, 1], [1, 2], [0, 0]), {"n_models": 2}, r"^model codes must lie in 0\.\.1$"),
    (([0, -1], [1, 0], [0, 0]), {}, r"^model codes must lie in 0\.\.1$"),
    (([0], [1], [3]), {}, r"^outcomes must be 0 \(model_a wins\), 1 \(model_b wins\) or 2 \(tie\)$"),
    (([0], [1], [-1]), {}, "^outcomes must be 0"),
    (([0], [1], [0]), {"k": 0.0}, r"^elo needs k > 0, scale > 0 and base > 1$"),
    (([0], [1], [0]), {"k": math.inf}, "^elo needs k > 0"),
    (([0], [1], [0]), {"scale": 0.0}, "^elo needs k > 0"),
    (([0], [1], [0]), {"scale": math.nan}, "^elo needs k > 0"),
    (([0], [1], [0]), {"base": 1.0}, "^elo needs k > 0"),
    (([0], [1], [0]), {"base": math.inf}, "^elo needs k > 0"),
    (([0], [1], [0]), {"weights": [1.0, 2.0]}, r"^expected 1 battle weights, got shape \(2,\)$"),
    (([[0]], [1], [0]), {}, r"^model_a codes must be one-dimensional"),
    (([0], [1.0], [0]), {}, r"^model_b codes must hold integer codes"),
    (([0], [1], [0.0]), {}, r"^outcomes must hold integer codes"),
])
def test_online_elo_refuses_bad_records_naming_the_problem(args, kw, match):
    with pytest.raises(ValueError, match=match):
        B.elo(*(np.array(x) for x in args), **kw)


def test_online_elo_accepts_small_positive_steps_and_scales():
    """k = 0.5, scale = 0.5 and base = 1.5 are valid (only k, scale <= 0 and base <= 1 are refused)."""
    a, b, o = np.array([0, 1]), np.array([1, 0]), np.array([A_WINS, TIE])
    R = [1000.0, 1000.0]
    for x, y, s in ((0, 1, 1.0), (1, 0, 0.5)):
        e = 1 / (1 + 1.5 ** ((R[y] - R[x]) / 0.5))
        R[x], R[y] = R[x] + 0.5 * (s - e), R[y] - 0.5 * (s - e)
    np.testing.assert_allclose(B.elo(a, b, o, k=0.5, scale=0.5, base=1.5), R, atol=1e-12, rtol=0)


# ------------------------------------------------------------------------------------------ count rules
@pytest.mark.parametrize(("weights", "match"), [
    ([1.0, -1.0, 1.0], "task weights must be finite and non-negative"),
    ([1.0, np.nan, 1.0], "task weights must be finite and non-negative"),
    ([1.0, 1.0], r"expected 3 task weights on the last axis"),
])
def test_threshold_rule_refuses_bad_task_weights(weights, match):
    X = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [2.0, 1.0, 3.0]])
    with pytest.raises(ValueError, match=match):
        V.threshold_across(X, weights=np.array(weights))


def _threshold_fractions(X, w=None):
    """Threshold rule from its definition, in Fractions: share of each bottom position, lexicographic comparison.

    In each task the present systems fill positions 0, 1, ... from the bottom; a tie group filling positions
    f..l gives each member 1/(l - f + 1) of each of those positions.  A system's key is its (weighted) share
    of position 0, then 1, ... up to S - 2; fewer is better; the score is the number of systems it beats.
    """
    T, S = X.shape
    w = [F(1)] * T if w is None else [F(float(x)) for x in w]
    H = [[F(0)] * S for _ in range(S)]
    for t in range(T):
        present = sorted((X[t, m], m) for m in range(S) if not math.isnan(X[t, m]))
        vals = [v for v, _ in present]
        for v, m in present:
            f, l = vals.index(v), len(vals) - 1 - vals[::-1].index(v)
            for q in range(f, l + 1):
                H[m][q] += w[t] / (l - f + 1)
    keys = [tuple(-H[m][q] for q in range(max(S - 1, 1))) for m in range(S)]
    return [float(sum(keys[m] > keys[j] for j in range(S))) for m in range(S)]


@pytest.mark.parametrize("X", [
    [[1, 0, 2, 2, 2, 0, 2, 1, 0], [2, 0, 1, 0, 0, 1, 1, 1, 0], [0, 0, 2, 0, 2, 0, 0, 1, 1], [1, 1, 1, 2, 2, 0, 0, 0, 0]],
    [[1, 0, 0, 1, 2, 1, 0, 2], [2, 2, 0, 2, 0, 2, 1, 2], [1, 2, 1, 2, 1, 1, 1, 1], [1, 2, 2, 0, 0, 1, 1, 0]],
    [[1, 1, 1, 1, 0, 1, 0, 0], [1, 1, 2, 1, 0, 0, 0, 1], [0, 2, 0, 2, 0, 1, 2, 0], [2, 0, 2, 1, 2, 2, 0, 0]],
])
def test_threshold_rule_keeps_exact_ties_of_shared_bottom_positions(X):
    """Ties of 2, 3, 4 and 5 systems share positions in thirds, quarters, fifths: equal shares must tie exactly.

    (Summed as floats, 1/3 + 1/5 - 1/3 is not 1/5, and such residues split systems whose shares are equal.)
    """
    X = np.array(X, dtype=float)
    assert V.threshold_across(X).tolist() == _threshold_fractions(X)


def test_threshold_rule_with_weights_that_are_not_simple_fractions():
    X = np.array([[1.0, 0.0, 2.0, 2.0], [2.0, 0.0, 1.0, np.nan], [0.0, 0.0, 2.0, 1.0]])
    w = np.array([1 / math.pi, math.e, math.sqrt(2)])
    assert V.threshold_across(X, weights=w).tolist() == _threshold_fractions(X, w)


def test_threshold_rule_of_a_profile_without_scores():
    assert np.isnan(V.threshold_across(np.full((2, 3), np.nan))).all()


def test_mean_win_rate_ignores_weight_zero_tasks_for_its_common_denominator():
    """Tasks of weight 0 with 14..32 systems would push lcm(n_t - 1) past 2**30 (the float fallback).

    They carry no weight, so the exact path must still be taken: the rates equal the Fraction means exactly.
    """
    rng = np.random.default_rng(0)
    S, rows, w = 34, [], []
    for n, weight in [(30, 0), (32, 0), (24, 0), (20, 0), (18, 0), (14, 0)] + [(4, 1), (6, 1), (8, 1)] * 2:
        x = np.full(S, np.nan)
        idx = rng.choice(S, n, replace=False)
        x[idx] = rng.integers(0, 5 if weight == 0 else 3, n)
        rows.append(x)
        w.append(float(weight if weight == 0 else rng.integers(1, 4)))
    X, w = np.array(rows), np.array(w)
    np.testing.assert_array_equal(B.mean_win_rate_across(X, weights=w), _helm_rates(X, w))


def test_mean_win_rate_of_a_stack_whose_first_row_weighs_nothing():
    X = np.array([[3.0, 1.0, 3.0], [1.0, 2.0, np.nan]])
    w = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    got = B.mean_win_rate_across(X, weights=w)
    assert np.isnan(got[0]).all()
    for r in (1, 2):
        np.testing.assert_array_equal(got[r], _helm_rates(X, w[r]))


def test_pairwise_counts_of_one_table_under_many_weight_rows():
    """One (T, S) table and a (R, T) stack of weight rows (bootstrap multiplicities): one count matrix per row."""
    X = np.array([[2.0, 1.0, 1.0, np.nan], [0.0, 3.0, 1.0, 1.0], [1.0, 1.0, np.nan, 0.0], [2.0, 0.0, 2.0, 1.0]])
    w = np.array([[1.0, 2.0, 0.5, 1 / 3], [0.0, 1.0, 1.0, 1.0], [3.0, 0.0, 0.0, 2.0]])
    wins, ties = V.pairwise_counts(X, weights=w)
    assert wins.shape == ties.shape == (3, 4, 4)
    for r in range(3):
        wf = [F(float(x)).limit_denominator(1000) for x in w[r]]  # 1/3 read as the simple fraction it stands for
        W = [[F(0)] * 4 for _ in range(4)]
        Tt = [[F(0)] * 4 for _ in range(4)]
        for t in range(4):
            for i in range(4):
                for j in range(4):
                    if i != j and not (math.isnan(X[t, i]) or math.isnan(X[t, j])):
                        W[i][j] += wf[t] * (X[t, i] > X[t, j])
                        Tt[i][j] += wf[t] * (X[t, i] == X[t, j])
        assert wins[r].tolist() == [[float(x) for x in row] for row in W]
        assert ties[r].tolist() == [[float(x) for x in row] for row in Tt]


# ------------------------------------------------------------------------------------------ paired tests
def test_paired_tests_name_bad_systems_pairs_and_corrections():
    with pytest.raises(ValueError, match="^paired tests need at least two systems, got 1$"):
        PT.system_pairs(1)
    with pytest.raises(ValueError, match=r"^baseline index 3 is not a system index \(0\.\.2\)$"):
        PT.system_pairs(3, baseline=3)
    with pytest.raises(ValueError, match=r"^unknown correction 'bonferroni'; choose holm, bh, none$"):
        PT.adjust(np.array([0.1, 0.2]), "bonferroni")
    Y = np.zeros((2, 1, 4))
    with pytest.raises(ValueError, match=r"^unknown correction 'x'; choose holm, bh, none$"):
        PT.compare_systems(Y, correction="x")


def test_paired_bootstrap_of_constant_differences_with_explicit_pairs():
    """Differences that are constant within each task: every replicate mean is that constant.

    Task 0: system 0 is 1 above system 1 and 2 above system 2 on every instance; task 1: 1 below and 3 below.
    Three explicit pairs come back in the order given, with intervals that collapse to the task's difference.
    """
    base = np.array([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 1.0, 7.0, 2.0, 0.0]])
    Y = np.stack([base, base - np.array([[1.0], [-1.0]]), base - np.array([[2.0], [-3.0]])])
    res = PT.paired_bootstrap(Y, pairs=[(0, 1), (1, 2), (0, 2)], replicates=50, seed=3)
    expected = np.array([[1.0, -1.0], [1.0, -2.0], [2.0, -3.0]])  # d[p, t] = Y[i, t] - Y[j, t]
    assert res.pairs.tolist() == [[0, 1], [1, 2], [0, 2]]
    np.testing.assert_allclose(res.low_task, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.high_task, expected, rtol=0, atol=1e-12)
    assert res.exact_task.dtype == bool and res.exact_overall.dtype == bool and not res.exact_overall.any()


def test_paired_permutation_with_one_instance_per_task_is_exact_and_says_nothing_about_resamples():
    """Differences 1, 2, 4 on three tasks with one instance each: 8 sign patterns, |+-1 +-2 +-4| >= 7 for 2 of them.

    The overall p-value is the exact 2/8 (each task has a single shared instance, which is enough), and the
    comparison adds no note about too few resamples: the 8 patterns were enumerated.
    """
    Y = np.array([[[1.0], [2.0], [4.0]], [[0.0], [0.0], [0.0]]])
    res = PT.paired_permutation(Y, resamples=8)
    assert res.exact_overall.all() and res.p_overall.tolist() == [0.25]
    assert res.p_task.tolist() == [[1.0, 1.0, 1.0]]  # one instance: both signs give the same |statistic|
    assert PT.compare_systems(Y, test="permutation", resamples=8).note == ""


def test_paired_permutation_monte_carlo_floor_is_one_over_resamples_plus_one():
    """20 equal positive differences: only the all-equal sign patterns (2 of 2**20) reach |t|, 99 random flips miss them.

    The Monte Carlo p-value is then (1 + 0) / (1 + 99).  With 19 resamples and three pairs the floor, 1/(R + 1) for
    the permutation test and 2/(R + 1) for the bootstrap, stays above alpha after Holm: the note names it.
    """
    Y = np.stack([np.ones((1, 20)), np.zeros((1, 20))])
    res = PT.paired_permutation(Y, resamples=99, seed=1)
    assert not res.exact_task.any() and res.p_task.tolist() == [[1 / 100]]
    Y3 = np.stack([np.full((1, 20), 2.0), np.ones((1, 20)), np.zeros((1, 20))])
    assert "with 19 resamples no p-value is below 0.05," in PT.compare_systems(Y3, test="permutation", resamples=19).note
    assert "with 19 resamples no p-value is below 0.1," in PT.compare_systems(Y3, test="bootstrap", resamples=19).note


def test_paired_wilcoxon_drops_zero_differences_from_the_ranks():
    """Differences 3, -1, 0, 2, 5: ranks of |d| among the non-zero ones 3, 1, 2, 4; observed sum 3 - 1 + 2 + 4 = 8.

    Exact p-value by enumerating the 2**5 sign patterns (the zero entry adds nothing whatever its sign).
    """
    import itertools

    d = [3.0, -1.0, 0.0, 2.0, 5.0]
    ranks = {3.0: 3, 1.0: 1, 2.0: 2, 5.0: 4}
    a = [ranks[abs(x)] if x else 0 for x in d]
    obs = sum(math.copysign(r, x) for r, x in zip(a, d) if x)
    hits = sum(abs(sum(s * r for s, r in zip(signs, a))) >= abs(obs) for signs in itertools.product((1, -1), repeat=5))
    Y = np.stack([np.array([d]), np.zeros((1, 5))])
    res = PT.paired_permutation(Y, statistic="wilcoxon", resamples=64)
    assert res.exact_task.all() and res.p_task.tolist() == [[hits / 32]] and res.p_overall.tolist() == [hits / 32]


def test_paired_bootstrap_does_not_depend_on_its_replicate_blocks(monkeypatch):
    """Replicate b always draws from its own stream: blocks of 3 replicates give the result of one block of all."""
    rng = np.random.default_rng(5)
    Y = rng.integers(0, 2, size=(3, 2, 6)).astype(float)
    whole = PT.paired_bootstrap(Y, replicates=40, seed=2)
    monkeypatch.setattr(PT, "_BLOCK", 3 * 3 * 2 * 6)  # 3 pairs x 2 tasks x 6 instances per replicate: 3 per block
    blocked = PT.paired_bootstrap(Y, replicates=40, seed=2)
    for field in ("low_task", "high_task", "low", "high", "p_task", "p_overall"):
        np.testing.assert_array_equal(getattr(blocked, field), getattr(whole, field))


def test_weighted_task_mean_mixes_exact_and_task_order_rows():
    """Two weight rows: simple fractions (the exact mean) and reals (the task-order fallback), with ``extra = 3``."""
    v = np.array([[1.0, 0.5, 2.5], [0.0, 1.5, 1.0], [2.0, 0.5, 0.0]])
    w = np.array([[1 / 3, 1 / 3, 2 / 3], [1 / math.pi, math.e, math.sqrt(2)]])
    got = weighted_task_mean(v, w, extra=3.0)
    wf = [F(1, 3), F(1, 3), F(2, 3)]
    exact = [float(sum((wf[t] * F(float(v[t, s])) for t in range(3)), F(0)) / (sum(wf) * 3)) for s in range(3)]
    assert got[0].tolist() == exact
    assert got[1].tolist() == _task_order_mean(v, w[1], 3.0)


def test_weighted_task_sum_mixes_exact_and_task_order_rows():
    rng = np.random.default_rng(14)
    k = rng.integers(-(2**40), 2**40, size=(3, 4))
    w = np.array([[1 / 3, 2 / 3, 1 / 3], [1 / math.pi, math.e, math.sqrt(2)]])
    got = weighted_task_sum(k / 2.0, w)
    wf = [F(1, 3), F(2, 3), F(1, 3)]
    assert got[0].tolist() == [fsum_exact(wf[t] * F(int(k[t, s]), 2) for t in range(3)) for s in range(4)]
    assert got[1].tolist() == _task_order_sum(k / 2.0, w[1])


def test_task_pair_sums_under_real_and_simple_weight_rows():
    """Pairwise sums of one table under weight rows 1/3-multiples (exact) and reals (task order), against loops."""
    X = np.array([[2.0, 1.0, np.nan, 1.0], [0.0, 3.0, np.nan, 1.0], [1.0, 1.0, np.nan, 0.0]])
    W = np.array([[1 / 3, 2.0, 1.0], [1 / math.pi, math.e, math.sqrt(2)]])
    sums = V.task_pair_sums(X, W, ("wins", "pairs"))
    for b, wf in enumerate(([F(1, 3), F(2), F(1)], [F(float(x)) for x in W[1]])):
        for i in range(4):
            for j in range(4):
                ok = [t for t in range(3) if not (math.isnan(X[t, i]) or math.isnan(X[t, j]))]
                wins = [wf[t] * (X[t, i] > X[t, j]) for t in ok]
                pairs = [wf[t] for t in ok]
                if b == 0:  # exact
                    assert sums["wins"][b, i, j] == fsum_exact(wins) and sums["pairs"][b, i, j] == fsum_exact(pairs)
                else:  # real weights: added one task after the other
                    assert sums["wins"][b, i, j] == sum(float(x) for x in wins)
                    assert sums["pairs"][b, i, j] == sum(float(x) for x in pairs)
    # rules read from these sums: system 2 has no score, so no Copeland score either
    cop = V.copeland_from_sums({k: v[0] for k, v in sums.items()})
    assert np.isnan(cop[2]) and np.array_equal(cop[[0, 1, 3]], V.copeland_across(X, weights=np.array([1 / 3, 2.0, 1.0]))[[0, 1, 3]])


def test_task_pair_sums_of_relative_differences_under_fraction_weights():
    """``reldiff[i, j] = sum_t w_t (X_ti - X_tj) / (X_ti + X_tj)`` in true units (not in units of 1/L) for weights in thirds."""
    X = np.array([[2.0, 1.0, 4.0], [0.5, 3.0, 1.0], [1.0, 1.0, 2.0]])
    W = np.array([[1 / 3, 2 / 3, 1.0], [1.0, 1.0, 1.0]])
    got = V.task_pair_sums(X, W, ("wins", "reldiff"))["reldiff"]
    for b, wf in enumerate(([F(1, 3), F(2, 3), F(1)], [F(1)] * 3)):
        ref = [[float(sum((wf[t] * (F(X[t, i]) - F(X[t, j])) / (F(X[t, i]) + F(X[t, j])) for t in range(3)), F(0)))
                for j in range(3)] for i in range(3)]
        np.testing.assert_allclose(got[b], ref, rtol=1e-15, atol=1e-15)


def test_task_pair_sums_names_bad_input():
    with pytest.raises(ValueError, match=r"^task_pair_sums takes one \(T, S\) profile, got shape \(2, 2, 3\)$"):
        V.task_pair_sums(np.ones((2, 2, 3)), np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"^expected 2 task weights on the last axis, got shape \(1, 3\)$"):
        V.task_pair_sums(np.ones((2, 3)), np.ones((1, 3)))
    with pytest.raises(ValueError, match="^unknown pairwise sum 'losses'$"):
        V.task_pair_sums(np.ones((2, 3)), np.ones((1, 2)), ("losses",))


# ------------------------------------------------------------------------------------------ second pass (new code)
@pytest.mark.parametrize("k", range(40, 70))
def test_full_digit_sums_keep_the_lowest_bit_of_every_float64(k):
    """``2**k (1 + 2**-52)``: its lowest bit 2**(k - 52) must lie inside the digits (for k = 51 it is one bit
    below a 31-bit digit boundary), so the digits hold the exact total."""
    x = np.array([[2.0**k * (1 + 2**-52), -(2.0**k)]])
    D, top = full_digit_sums(x, axis=-1)
    assert D.dtype == np.int64 and D.shape[0] == 1
    assert _digits_value(D[0], top) == sum((F(float(v)) for v in x[0]), F(0))


def test_full_digit_sums_of_zeros_and_nan_keep_the_reduced_shape():
    D, top = full_digit_sums(np.array([[0.0, np.nan], [np.nan, -0.0], [0.0, 0.0]]))
    assert D.shape[0] == 3 and D.dtype == np.int64 and not D.any()
    assert float(digits_to_float(D, top)[1]) == 0.0


def test_full_digit_sums_of_whole_numbers_and_float32():
    i = np.array([[3, -5, 2**40 + 1], [0, 0, 0]])
    D, top = full_digit_sums(i)
    assert [_digits_value(d, top) for d in D] == [F(3 - 5 + 2**40 + 1), F(0)]
    f = np.array([1 + 2.0**-23, 2.0**-10, np.nan], dtype=np.float32)  # float32 values, exact in 24 bits
    D, top = full_digit_sums(f)
    assert _digits_value(D, top) == F(1) + F(1, 2**23) + F(1, 2**10)


def test_merge_digit_sums_of_parts_with_other_anchors_is_the_exact_total():
    rng = np.random.default_rng(12)
    x = rng.normal(size=(2, 30)) * np.logspace(-30, 30, 30)
    parts = [full_digit_sums(x[:, a:b]) for a, b in ((0, 7), (7, 8), (8, 30))]
    for order in (parts, parts[::-1]):
        D, top = merge_digit_sums(order)
        for r in range(2):
            assert _digits_value(D[r], top) == sum((F(float(v)) for v in x[r]), F(0))


def _pair_wins_loops(X, w):
    S = X.shape[1]
    return [[sum(int(w[t]) for t in range(X.shape[0]) if X[t, i] > X[t, j]) for j in range(S)] for i in range(S)]


@pytest.mark.parametrize("w", [[2**15 - 1, 1], [40_000, 1], [2**31 - 1, 1], [2**31, 7], [2**40, 3]])
def test_pairwise_counts_with_whole_weights_beyond_16_and_32_bits(w):
    """Whole-number weights whose total needs int32 or int64 accumulators (2**15, 2**31 exactly included)."""
    X = np.array([[3.0, 1.0, 2.0, np.nan], [2.0, 0.0, 2.0, 1.0]])
    wins, ties = V.pairwise_counts(X, weights=np.array([w], dtype=float))  # a weight row: counted task by task
    assert wins[0].tolist() == [[float(v) for v in row] for row in _pair_wins_loops(X, w)]
    assert ties[0, 0, 2] == w[1] and ties[0, 2, 0] == w[1] and ties[0, 0, 3] == 0


def test_pairwise_counts_beyond_2_53_are_rounded_once_from_the_exact_total():
    """Sixteen tasks of weight 2**51 and three of weight 3: 2**55 + 9 counted in integers, then rounded once to
    2**55 + 8 (adding 3 to 2**55 in float64 three times would stay at 2**55)."""
    X = np.array([[1.0, 0.0]] * 19)
    w = np.array([[2.0**51] * 16 + [3.0] * 3])
    wins, _ = V.pairwise_counts(X, weights=w)
    assert wins[0, 0, 1] == float(F(2**55 + 9)) == 2.0**55 + 8


def test_task_pair_sums_unscaled_puts_relative_differences_in_units_of_one_over_l():
    X = np.array([[2.0, 1.0, 4.0], [0.5, 3.0, 1.0], [1.0, 1.0, 2.0]])
    wf = [F(1, 3), F(2, 3), F(1)]
    sums, L = V.task_pair_sums(X, np.array([1 / 3, 2 / 3, 1.0]), ("wins", "reldiff"), unscaled=True)
    assert L == 3
    for i in range(3):
        for j in range(3):
            rel = sum((wf[t] * (F(X[t, i]) - F(X[t, j])) / (F(X[t, i]) + F(X[t, j])) for t in range(3)), F(0))
            assert sums["reldiff"][i, j] == pytest.approx(float(3 * rel), rel=1e-15, abs=1e-15)
            assert sums["wins"][i, j] == 3 * sum((wf[t] for t in range(3) if X[t, i] > X[t, j]), F(0))


def test_baldwin_round_eliminates_every_score_within_the_tolerance_of_the_minimum():
    """Hand-worked: tol = 0.5 takes 0 and 0.5 out together; all alive scores tied (tol 0) is no round."""
    alive = np.array([[True, True, True, False]])
    score = np.zeros((1, 4))
    out, sc, left = V.baldwin_round(np.array([[0.0, 0.5, 1.0, -9.0]]), alive, score, 0.5, 3)
    assert out.tolist() == [[True, True, False, False]] and left.tolist() == [[False, False, True, False]]
    assert sc.tolist() == [[3.0, 3.0, 0.0, 0.0]]
    out, _, _ = V.baldwin_round(np.array([[0.0, 0.5, 1.0, -9.0]]), alive, score, 0.0, 3)
    assert out.tolist() == [[True, False, False, False]]
    assert V.baldwin_round(np.array([[2.0, 2.0, 2.0, 0.0]]), alive, score, 0.0, 0) is None


def _baldwin_loops(pts, present):
    """Baldwin's rounds from a (S, S) matrix of Borda points (wins + ties / 2), one elimination at a time."""
    S = len(present)
    alive = [i for i in range(S) if present[i]]
    score = [math.nan if not present[i] else 0.0 for i in range(S)]
    rnd = 0
    while len(alive) > 1:
        b = {i: sum(F(pts[i][j]) for j in alive) for i in alive}
        mn = min(b.values())
        if max(b.values()) == mn:
            break
        for i in [i for i in alive if b[i] == mn]:
            score[i] = float(rnd)
            alive.remove(i)
        rnd += 1
    for i in alive:
        score[i] = float(sum(present))
    return score


def test_baldwin_from_counts_over_two_batch_axes():
    """(2, 3, S, S) counts: every one of the six rankings eliminated on its own (a row of 3 alive next to rows
    of 1 or 4 alive systems)."""
    rng = np.random.default_rng(8)
    S = 4
    wins = rng.integers(0, 4, size=(2, 3, S, S)).astype(float)
    ties = np.zeros_like(wins)
    present = np.ones((2, 3, S), dtype=bool)
    present[0, 1, :3] = False  # one system alone
    present[1, 2, 0] = False
    for idx in np.ndindex(2, 3):
        np.fill_diagonal(wins[idx], 0.0)
        t = rng.integers(0, 2, size=(S, S)).astype(float)
        ties[idx] = np.triu(t, 1) + np.triu(t, 1).T
    got = V.baldwin_from_counts(wins, ties, present)
    for idx in np.ndindex(2, 3):
        p = present[idx]
        pts = np.where(p[:, None] & p[None, :], wins[idx] + 0.5 * ties[idx], 0.0)
        np.testing.assert_array_equal(got[idx], _baldwin_loops(pts, p.tolist()), err_msg=str(idx))


def _copeland_loops(X, w):
    T, S = X.shape
    u = np.full(S, np.nan)
    for i in range(S):
        if np.isnan(X[:, i]).all():
            continue
        u[i] = 0
        for j in range(S):
            if j != i and not np.isnan(X[:, j]).all():
                a = sum(w[t] for t in range(T) if X[t, i] > X[t, j])
                b = sum(w[t] for t in range(T) if X[t, j] > X[t, i])
                u[i] += int(a > b) - int(a < b)
    return u


@pytest.mark.parametrize("shape", [(2,), (2, 3), (3,)])
def test_blocked_copeland_of_stacked_profiles_with_shared_or_own_weights(shape):
    """A stack of profiles with one weight vector (T,), one row (1, T) for all, or one vector per profile."""
    rng = np.random.default_rng(len(shape) + shape[0])
    T, S = 3, 5
    X = rng.integers(0, 3, size=(*shape, T, S)).astype(float)
    own = rng.integers(0, 4, size=(*shape, T)).astype(float)
    own[..., 0] += 1
    for w in (np.array([3.0, 0.0, 1.0]), np.array([[1.0, 2.0, 5.0]]), own):
        for rows in (1, 2, 5):
            got = blocked_scores("copeland", X, w, rows=rows)
            assert got.shape == (*shape, S)
            for idx in np.ndindex(*shape):
                wi = w[idx] if w.shape[:-1] == shape else w.reshape(-1)
                np.testing.assert_array_equal(got[idx], _copeland_loops(X[idx], wi), err_msg=f"{idx} {w} {rows}")


def test_blocked_copeland_of_stacked_one_task_profiles_with_one_weight_row():
    X = np.array([[[1.0, 0.0, 2.0, np.nan]], [[0.0, 0.0, 1.0, 3.0]], [[2.0, 1.0, 0.0, 0.0]]])  # (3, 1, 4): T = 1
    got = blocked_scores("copeland", X, np.array([[2.0]]), rows=2)
    for b in range(3):
        np.testing.assert_array_equal(got[b], _copeland_loops(X[b], [2.0]))


def test_blocked_scores_name_the_rule_or_the_weights_they_refuse():
    with pytest.raises(ValueError, match="^rule 'borda' has no blocked pair-matrix form$"):
        blocked_scores("borda", np.ones((2, 3)))
    with pytest.raises(ValueError, match="^blocked pair matrices take whole-number, non-negative task weights with a positive sum$"):
        blocked_scores("copeland", np.ones((2, 3)), np.array([0.5, 1.0]))


def test_merge_digit_sums_stays_exact_beyond_2_53():
    """Digit sums of ~10**8 values reach 2**57 and more (31-bit digits): merged in int64, not rounded to float64."""
    a = (np.array([[2**60 + 1, 3]], dtype=np.int64), 2)
    b = (np.array([[2**60 + 1]], dtype=np.int64), 1)
    D, top = merge_digit_sums([a, b])
    assert top == 2 and D.dtype == np.int64
    assert D.tolist() == [[2**60 + 1, 2**60 + 4]]


def test_dense_ranks_of_more_systems_than_int16_holds():
    x = np.arange(40_000, dtype=np.float64)[::-1].reshape(1, -1).copy()
    x[0, 7] = np.nan
    r = dense_ranks(x)
    assert r[0, 0] == 39_998 and r[0, 7] == -1 and r[0, -1] == 0  # 39,999 distinct present values


def test_chunk_counts_match_loops_over_instances():
    """``wins[i, j]`` = instances with ``x_i > x_j``, ``pairs[i, j]`` = instances with both present: int64, (Tc, 1, 2, S, S)."""
    rng = np.random.default_rng(4)
    block = rng.integers(0, 3, size=(2, 5, 4)).astype(float)
    block[rng.random(block.shape) < 0.3] = np.nan
    got = chunk_counts(block)
    assert got.shape == (2, 1, 2, 4, 4) and got.dtype == np.int64
    for t in range(2):
        x = block[t]
        for i in range(4):
            for j in range(4):
                assert got[t, 0, 0, i, j] == sum(1 for k in range(5) if x[k, i] > x[k, j])
                assert got[t, 0, 1, i, j] == sum(1 for k in range(5) if not (np.isnan(x[k, i]) or np.isnan(x[k, j])))
