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


def test_subset_curves_draw_bands_only_for_the_strong_rules():
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import to_hex

    sizes = np.arange(1, 6)
    mean = np.linspace(0.2, 1.0, 5)[None, :] * np.linspace(0.5, 1.0, 7)[:, None]
    std = np.full_like(mean, 0.1)
    fig = plots.subset_curve_figure(sizes, mean, std, [f"rule{i}" for i in range(7)], strong=[3, 0])
    ax = fig.axes[0]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    grey = [ln for ln in ax.get_lines() if to_hex(ln.get_color()) == "#999999"]
    assert len(grey) == 5 and all(ln.get_linewidth() < 1.0 for ln in grey)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["5 other rules", "rule3", "rule0"]


def test_subset_caption_counts_the_grey_rules_of_its_table(tmp_path):
    import csv
    import re

    from engine.app.report import build_report

    X = np.random.default_rng(3).normal(size=(6, 4))
    src = tmp_path / "s.csv"
    src.write_text("system," + ",".join(f"t{j}" for j in range(4)) + "\n"
                   + "".join(f"sys{i}," + ",".join(f"{v:.4f}" for v in row) + "\n" for i, row in enumerate(X)),
                   encoding="utf-8")
    report = build_report(src, tmp_path / "r", rules=["copeland", "borda", "dowdall"], replicates=0, repeats=3,
                          paired_top_k=0, formats=("svg",))
    with open(report.parent / "tables" / "subset_curves.csv", encoding="utf-8") as f:
        rules = {row["rule"] for row in csv.DictReader(f)}
    m = re.search(r"thin grey: the (\d+) other rules", report.read_text(encoding="utf-8"))
    assert m and int(m.group(1)) == len(rules) - 2
