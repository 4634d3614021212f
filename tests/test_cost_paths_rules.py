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
