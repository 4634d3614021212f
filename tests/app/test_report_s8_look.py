"""Report figures and layout, session 8 (issue #26): what a figure draws against a count made here."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import xarray as xr

from engine.app import plots


def test_rank_heatmap_marks_shared_ranks_with_equals():
    rng = np.random.default_rng(3)
    ranks = rng.integers(1, 4, size=(7, 3)).astype(float)  # 7 systems, ranks 1..3: ties forced
    ranks[2, 1] = np.nan
    da = xr.DataArray(ranks, dims=("system", "rule"),
                      coords={"system": [f"s{i}" for i in range(7)], "rule": ["a", "b", "c"]})
    fig = plots.rank_heatmap_figure(da)
    texts = sorted(t.get_text() for ax in fig.axes for t in ax.texts)
    expected = []
    for i in range(7):
        for j in range(3):
            v = ranks[i, j]
            if np.isnan(v):
                continue
            others = sum(1 for k in range(7) if k != i and ranks[k, j] == v)
            expected.append(f"{int(v)}" + ("=" if others else ""))
    assert texts == sorted(expected)
    assert any(t.endswith("=") for t in texts)
