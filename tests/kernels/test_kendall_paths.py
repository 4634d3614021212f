"""The two paths of the Kendall counts of every pair of rows (``kendall_counts_all``: compiled Knight counts, or dense
matrix products over the system pairs) give the same whole numbers as a plain loop over pairs of systems, on both
sides of the size where the cost model switches path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.kernels.costs import Sizes, choose, forced
from engine.kernels.metrics import concordance
from engine.kernels.paircount import dense_ranks, kendall_counts_all


def loop_counts(x: np.ndarray, i: int, j: int) -> list[int]:
    """n, ties in row i, ties in row j, ties in both, discordant pairs: over the systems both rows score."""
    common = [s for s in range(x.shape[1]) if not np.isnan(x[i, s]) and not np.isnan(x[j, s])]
    n1 = n2 = n3 = d = 0
    for a_ in range(len(common)):
        for b_ in range(a_ + 1, len(common)):
            a, b = common[a_], common[b_]
            di, dj = np.sign(x[i, a] - x[i, b]), np.sign(x[j, a] - x[j, b])
            n1 += di == 0
            n2 += dj == 0
            n3 += di == 0 and dj == 0
            d += di * dj < 0
    return [len(common), int(n1), int(n2), int(n3), int(d)]


@given(st.integers(1, 9), st.integers(0, 9), st.integers(0, 2**32 - 1))
def test_both_paths_give_the_loop_counts(B, S, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(B, S)).astype(float)  # many ties
    x[rng.random((B, S)) < 0.2] = np.nan
    ranks = dense_ranks(x)
    want = np.array([[loop_counts(x, i, j) for j in range(B)] for i in range(B)]).transpose(2, 0, 1)
    for path in ("compiled", "dense"):
        with forced("kendall_all", path):
            np.testing.assert_array_equal(kendall_counts_all(ranks), want)


def boundary(B: int) -> int:
    """The smallest number of systems at which the cost model leaves the dense path for ``B`` rows."""
    S = 2
    while choose("kendall_all", Sizes(systems=S, fits=B)) == "dense":
        S += 50
    return S


@pytest.mark.parametrize("B", [40, 200])
def test_the_same_taus_on_both_sides_of_the_switch(B):
    S = boundary(B)
    assert choose("kendall_all", Sizes(systems=S - 50, fits=B)) == "dense"
    assert choose("kendall_all", Sizes(systems=S, fits=B)) == "compiled"
    rng = np.random.default_rng(B)
    for n in (S - 50, S):
        x = rng.integers(0, n // 3 + 1, size=(B, n)).astype(float)
        chosen = concordance(x, method="kendall")
        with forced("kendall_all", "compiled" if choose("kendall_all", Sizes(systems=n, fits=B)) == "dense" else "dense"):
            other = concordance(x, method="kendall")
        assert chosen == other  # same bits
