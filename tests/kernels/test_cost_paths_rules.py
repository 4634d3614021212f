"""Rules whose computation path is chosen by the cost model (engine.kernels.costs): every path gives the answer
of a plain loop, on both sides of the boundary the model draws."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from engine.kernels import costs
from engine.kernels.social import baldwin_across


def loop_baldwin(X: np.ndarray) -> np.ndarray:
    """Baldwin on one profile (T, S) by loops and Fractions: each round the alive systems with the least Borda
    score among the alive (a win 1, a tie 1/2, pairs with a missing score skipped) leave together."""
    T, S = X.shape
    present = [not np.isnan(X[:, s]).all() for s in range(S)]
    alive = {s for s in range(S) if present[s]}
    score = [np.nan if not present[s] else 0.0 for s in range(S)]
    rnd = 0
    while len(alive) > 1:
        borda = {}
        for i in alive:
            b = Fraction(0)
            for j in alive:
                if i == j:
                    continue
                for t in range(T):
                    if np.isnan(X[t, i]) or np.isnan(X[t, j]):
                        continue
                    b += 1 if X[t, i] > X[t, j] else Fraction(1, 2) if X[t, i] == X[t, j] else 0
            borda[i] = b
        low = min(borda.values())
        if max(borda.values()) == low:
            break
        for i in [i for i in alive if borda[i] == low]:
            score[i] = float(rnd)
            alive.discard(i)
        rnd += 1
    for i in alive:
        score[i] = float(sum(present))
    return np.array(score)


def profiles(seed: int, fits: int, T: int, S: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(fits, T, S)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[0, :, 0] = np.nan  # a system absent from one profile
    return X


@pytest.mark.parametrize("S,fits", [(6, 1), (6, 40), (12, 8)])
def test_both_baldwin_paths_equal_the_loop(S, fits):
    X = profiles(S * 100 + fits, fits, 5, S)
    expect = np.stack([loop_baldwin(x) for x in X])
    for path in ("rounds", "each"):
        with costs.forced("baldwin", path):
            got = baldwin_across(X)
        np.testing.assert_array_equal(got, expect)


def test_the_baldwin_paths_cross_where_the_model_says_and_agree_there():
    """Few systems and many fits: all fits round by round; many systems: one fit after the other (the batched
    update costs S^2 per fit and round).  At the sizes where the choice flips, both give the same bits."""
    assert costs.choose("baldwin", costs.Sizes(systems=5, fits=1000)) == "rounds"
    assert costs.choose("baldwin", costs.Sizes(systems=300, fits=200)) == "each"
    flips = [S for S in range(3, 200) if costs.choose("baldwin", costs.Sizes(systems=S, fits=64)) == "each"]
    assert flips, "no size where one fit after the other is chosen"
    S = flips[0]
    for s in (S - 1, S):
        X = profiles(s, 64, 4, s)
        with costs.forced("baldwin", "rounds"):
            a = baldwin_across(X)
        with costs.forced("baldwin", "each"):
            b = baldwin_across(X)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(baldwin_across(X), a)


# ------------------------------------------------------------------------------------- absent systems
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from engine.labelled.core import call_kernel  # noqa: E402
from engine.rules import RULES  # noqa: E402

NEUTRAL = sorted(name for name, r in RULES.items() if r.absent_neutral)


def test_some_rules_declare_absent_systems_neutral():
    assert {"borda", "plurality", "mean"} <= set(NEUTRAL)


@pytest.mark.parametrize("name", NEUTRAL)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tasks=st.integers(1, 6), systems=st.integers(2, 16), holes=st.booleans())
def test_an_all_nan_system_changes_nothing_for_the_others(name, seed, tasks, systems, holes):
    """The declaration, checked on the kernel: scores of the present systems with and without the absent
    columns, after the tie rule (brute force: the kernel on the smaller table)."""
    rule = RULES[name]
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(tasks, systems)), 1)
    if holes:
        X[rng.random(X.shape) < 0.15] = np.nan
    absent = rng.random(systems) < 0.4
    absent[0] = False
    Xa = X.copy()
    Xa[:, absent] = np.nan
    keep = ~absent
    try:
        alone = rule.snap(np.asarray(rule.kernel(X[:, keep]), dtype=float), X[:, keep])
    except ValueError:  # the kernel refuses this table (e.g. missing scores it needs filled): nothing to compare
        return
    within = rule.snap(np.asarray(rule.kernel(Xa), dtype=float)[keep], X[:, keep])
    np.testing.assert_array_equal(within, alone)


@pytest.mark.parametrize("name", NEUTRAL)
def test_a_batch_of_different_absent_systems_gives_each_element_its_own_answer(name):
    rng = np.random.default_rng(len(name))
    X = np.round(rng.normal(size=(12, 5, 9)), 1)
    for b in range(12):
        X[b][:, rng.random(9) < 0.3] = np.nan
    got = call_kernel(RULES[name], X, None, {})
    for b in range(12):
        np.testing.assert_array_equal(got[b], call_kernel(RULES[name], X[b], None, {}))


def test_absent_systems_get_nan_even_where_the_kernel_scores_them():
    """A neutral rule's kernel may give an absent system a number (here 0): the batch still reports NaN for it,
    as a call on the element alone does."""
    from engine.rules import Rule

    def total(X, weights=None):
        return np.nan_to_num(np.asarray(X, dtype=float)).sum(axis=-2)

    rule = Rule("total_for_test", total, "sum of the scores", absent_neutral=True)
    X = np.array([[[1.0, np.nan, 2.0]], [[np.nan, 3.0, 4.0]]])
    got = call_kernel(rule, X, None, {})
    np.testing.assert_array_equal(got, [[1.0, np.nan, 2.0], [np.nan, 3.0, 4.0]])
    for b in range(2):
        np.testing.assert_array_equal(got[b], call_kernel(rule, X[b], None, {}))


def test_the_compiled_baldwin_removes_every_total_within_the_tolerance_of_the_least_at_once():
    """Totals 0, 0.5 and 2 with a tolerance of 0.5: the first two leave together in round 0 (the tie rule's
    'within the tolerance' includes its bound), the last survives and scores the number ranked."""
    from engine.kernels.paircount import baldwin_rounds

    pts = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [1.0, 1.0, 0.0]])
    np.testing.assert_array_equal(baldwin_rounds(pts, np.ones(3, dtype=bool), 0.5), [0.0, 0.0, 3.0])
    np.testing.assert_array_equal(baldwin_rounds(pts, np.ones(3, dtype=bool), 0.25), [0.0, 1.0, 3.0])
    np.testing.assert_array_equal(baldwin_rounds(pts, np.array([True, False, True]), 0.25), [0.0, np.nan, 2.0])
