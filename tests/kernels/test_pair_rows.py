"""The majority statistics shared by the whole-matrix Copeland/Condorcet/minimax kernels and their row blocks
(:func:`engine.kernels.social.majority_beats`, :func:`~engine.kernels.social.worst_defeat`), against plain loops over
pairs, for every block of rows."""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels.social import majority_beats, worst_defeat


def loops(wins: np.ndarray, present: np.ndarray) -> tuple[list[int], list[int], list[float]]:
    S = wins.shape[0]
    beats, beaten, worst = [], [], []
    for m in range(S):
        b = sum(1 for j in range(S) if present[m] and present[j] and wins[m, j] > wins[j, m])
        d = sum(1 for j in range(S) if present[m] and present[j] and wins[m, j] < wins[j, m])
        w = max([wins[j, m] for j in range(S) if present[j] and wins[j, m] > wins[m, j]], default=0.0)
        beats.append(b), beaten.append(d), worst.append(w)
    return beats, beaten, worst


@pytest.mark.parametrize("seed", range(12))
def test_rows_of_any_block_match_loops_over_pairs(seed):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(2, 9))
    wins = rng.integers(0, 4, size=(S, S)).astype(np.float64)
    np.fill_diagonal(wins, 0.0)
    present = rng.random(S) < 0.8
    beats, beaten, worst = loops(wins, present)
    i0 = int(rng.integers(0, S))
    i1 = int(rng.integers(i0 + 1, S + 1))
    b, d = majority_beats(wins[i0:i1], wins.T[i0:i1], present[i0:i1], present)
    assert b.tolist() == beats[i0:i1] and d.tolist() == beaten[i0:i1]
    assert worst_defeat(wins[i0:i1], wins.T[i0:i1], present).tolist() == worst[i0:i1]


def test_batches_are_independent():
    rng = np.random.default_rng(5)
    wins = rng.integers(0, 3, size=(4, 6, 6)).astype(np.float64)
    present = rng.random((4, 6)) < 0.9
    b, _ = majority_beats(wins, np.swapaxes(wins, -1, -2), present, present)
    for i in range(4):
        assert b[i].tolist() == loops(wins[i], present[i])[0]
