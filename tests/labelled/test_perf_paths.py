"""The paths chosen for speed in the pairwise win counts give the same bits on both sides of each choice (issue 31).

:func:`engine.kernels.social.win_counts_over_tasks` compares a block of ``cells // (batch x S x S)``
tasks at once, or, when that is under two tasks, one task at a time into uint8 counters flushed every
255 tasks.  Every test compares with a brute-force loop over tasks and pairs written here.
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.kernels import social as V


def bf_wins(X: np.ndarray) -> np.ndarray:
    """``wins[..., i, j]``: tasks where both scores exist and system i's is larger (plain loops)."""
    X = np.asarray(X, dtype=np.float64)
    *batch, T, S = X.shape
    flat = X.reshape(int(np.prod(batch, dtype=np.int64)), T, S)
    out = np.zeros((flat.shape[0], S, S))
    for b in range(flat.shape[0]):
        for t in range(T):
            for i in range(S):
                for j in range(S):
                    out[b, i, j] += float(flat[b, t, i] > flat[b, t, j])  # NaN compares False
    return out.reshape(*batch, S, S)


def profile(seed: int, shape: tuple[int, ...], *, values: int = 4) -> np.ndarray:
    """Few distinct values (ties), signed zeros, infinities and missing scores."""
    rng = np.random.default_rng(seed)
    pool = np.array([-np.inf, -1.5, -0.0, 0.0, 2.0, np.inf, 7.25][:max(2, values)] + [np.nan])
    return rng.choice(pool, size=shape)


@pytest.mark.parametrize("shape", [(5, 6), (3, 7, 5), (2, 2, 9, 4), (40, 3)])
@pytest.mark.parametrize("seed", [0, 1])
def test_both_sides_of_the_block_choice_equal_brute_force(shape, seed):
    X = profile(seed, shape, values=7)
    *batch, T, S = shape
    cells = int(np.prod(batch, dtype=np.int64)) * S * S
    ref = bf_wins(X)
    one = V.win_counts_over_tasks(X, cells=2 * cells - 1)  # boundary: one task per block, added in place
    two = V.win_counts_over_tasks(X, cells=2 * cells)  # two tasks per block, reduced
    whole = V.win_counts_over_tasks(X, cells=1 << 30)
    for got in (one, two, whole):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, ref)
    assert one.tobytes() == two.tobytes() == whole.tobytes()


@pytest.mark.parametrize("cells", [1, 9 * 2, 1 << 30])
def test_counts_beyond_a_uint8_counter(cells):
    """600 tasks: the uint8 counters must join the total before they wrap (at 256)."""
    T = 600
    X = np.tile(np.array([3.0, 1.0, 2.0]), (T, 1))
    X[::7, 2] = np.nan  # 86 tasks without system 2
    X[::5, 0] = 0.5  # 120 tasks where system 0 is last
    got = V.win_counts_over_tasks(X, cells=cells)
    np.testing.assert_array_equal(got, bf_wins(X))
    assert got[0, 1] == T - 120  # system 0 beats system 1 except where it scores 0.5


def test_layout_of_the_input_changes_nothing():
    """A transposed (Fortran-ordered) task matrix, as the in-memory preparation hands over, counts the same."""
    X = profile(3, (12, 30), values=5)
    F = np.asfortranarray(X)
    assert not F.flags.c_contiguous
    np.testing.assert_array_equal(V.win_counts_over_tasks(F), bf_wins(X))
    for kernel in (V.copeland_across, V.minimax_across, V.condorcet_across):
        assert kernel(F).tobytes() == kernel(X).tobytes()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairwise_counts_ties_and_pairs(seed):
    X = profile(seed, (8, 6), values=3)
    wins, ties = V.pairwise_counts(X)
    np.testing.assert_array_equal(wins, bf_wins(X))
    both = ~np.isnan(X)
    for i in range(6):
        for j in range(6):
            expect = 0.0 if i == j else float(sum(both[t, i] and both[t, j] and X[t, i] == X[t, j] for t in range(8)))
            assert ties[i, j] == expect


def test_shared_sums_of_one_weight_row_take_the_same_counts():
    """``task_pair_sums`` with a row of ones (``rank_rules``' shared win matrix) and with whole-number weights."""
    X = profile(5, (9, 7), values=4)
    w = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1], dtype=np.float64)
    sums = V.task_pair_sums(X, np.stack([np.ones(9), w]), ("wins",))
    np.testing.assert_array_equal(sums["wins"][0], bf_wins(X))
    np.testing.assert_array_equal(sums["wins"][1], np.einsum("t,tij->ij", w, np.stack([bf_wins(x[None]) for x in X])))


def test_copeland_of_rank_and_rank_rules_against_brute_force():
    """A table past one block of tasks (300 systems: a task per block), through the public API."""
    rng = np.random.default_rng(7)
    S, T = 300, 6
    table = np.round(rng.normal(size=(S, T)), 1)
    wins = bf_wins(table.T)
    margin = wins - wins.T
    expect = (margin > 0).sum(axis=1) - (margin < 0).sum(axis=1)
    scores = engine.scores_from_array(table)
    labels = scores["system"].values
    one = engine.rank(scores, rule="copeland", level="task")["score"].sel(system=labels).values
    many = engine.rank_rules(scores, ["borda", "copeland"], level="task")["score"].sel(rule="copeland", system=labels).values
    np.testing.assert_array_equal(one, expect.astype(float))
    assert one.tobytes() == many.tobytes()
