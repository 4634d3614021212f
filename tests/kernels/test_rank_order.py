"""The one leaderboard order (engine.kernels.ranking.rank_order) against a plain sort: by rank, every rank that is not
finite last, ties in the canonical label order; shuffling the systems changes no one's place."""

from __future__ import annotations

import math

import numpy as np

from engine.kernels.ranking import label_order, rank_order


def test_rank_order_is_a_plain_sort_and_shuffling_changes_no_place():
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        rank = rng.integers(1, 5, size=n).astype(float)
        rank[rng.random(n) < 0.2] = np.nan
        rank[rng.random(n) < 0.1] = np.inf
        labels = [f"M{int(v)}" for v in rng.choice(60, size=n, replace=False)]
        canon = {labels[i]: p for p, i in enumerate(label_order(labels))}
        want = sorted(range(n), key=lambda i: (rank[i] if math.isfinite(rank[i]) else math.inf, canon[labels[i]]))
        assert rank_order(rank, labels).tolist() == want
        perm = rng.permutation(n)
        assert [labels[perm[i]] for i in rank_order(rank[perm], [labels[j] for j in perm])] == [labels[i] for i in want]
