"""Issue 26, session 6: what the report and the dashboard print and draw.

Rank intervals are whole ranks (the replicate ranks at either side of the percentile positions, never
interpolated), checked against a plain loop over the replicate ranks: the engine's summary, the dashboard's
merged block summaries and the report's interval table.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.kernels.summaries import BootstrapSums, bootstrap_block, bootstrap_statistics

DATA = Path(__file__).resolve().parents[2] / "data"


def loop_ranks(R: np.ndarray) -> list[list[float]]:
    """Competition ranks (1 + systems scoring strictly higher) per replicate, NaN for an absent system."""
    out = []
    for row in R.tolist():
        out.append([math.nan if math.isnan(x) else 1.0 + sum(1 for y in row if not math.isnan(y) and y > x)
                    for x in row])
    return out


def loop_interval(ranks: list[list[float]], s: int, level: float) -> tuple[float, float]:
    """The bounds by hand: sorted replicate ranks of system s at floor / ceil of the percentile positions."""
    v = sorted(r[s] for r in ranks if not math.isnan(r[s]))
    n = len(v)
    return v[math.floor((n - 1) * (1 - level) / 2)], v[math.ceil((n - 1) * (1 + level) / 2)]


@pytest.mark.parametrize("level", [0.95, 0.8, 0.5])
def test_rank_intervals_are_replicate_ranks_in_summarize_and_block_sums(level):
    scores = engine.open_scores(DATA / "vnr_glue.csv")
    boot = engine.bootstrap(scores, rule="borda", missing="listwise", replicates=43, seed=3)
    sm = engine.summarize(boot, level=level)
    R = np.asarray(boot["replicate_score"].values, dtype=np.float64)
    ranks = loop_ranks(R)
    sums = BootstrapSums(R.shape[1])
    sums.add(0, bootstrap_block(R[:17]))
    sums.add(1, bootstrap_block(R[17:]))
    live = bootstrap_statistics(np.asarray(sm["score"].values), sums, level=level)
    fractional_linear = 0
    for s in range(R.shape[1]):
        if all(math.isnan(r[s]) for r in ranks):
            continue
        lo, hi = loop_interval(ranks, s, level)
        assert (sm["rank_low"].values[s], sm["rank_high"].values[s]) == (lo, hi)
        assert (live["rank_low"][s], live["rank_high"][s]) == (lo, hi)
        assert float(lo).is_integer() and float(hi).is_integer()
        v = [r[s] for r in ranks if not math.isnan(r[s])]
        a, b = np.percentile(v, [50 * (1 - level), 50 * (1 + level)])  # the interpolated interval lies inside
        assert lo <= a <= b <= hi
        fractional_linear += not (float(a).is_integer() and float(b).is_integer())
    assert fractional_linear > 0  # the data would give fractional bounds under interpolation


def test_report_interval_table_prints_whole_ranks(tmp_path):
    from engine.app.report import build_report

    index = build_report(DATA / "vnr_glue.csv", tmp_path / "r", rules=["borda"], replicates=20, repeats=0, missing="listwise",
                         formats=("png",))
    rows = list(csv.DictReader((index.parent / "tables" / "intervals.csv").open(encoding="utf-8")))
    assert rows
    for r in rows:
        if r["rank_low"]:
            assert float(r["rank_low"]).is_integer() and float(r["rank_high"]).is_integer(), r


# ------------------------------------------------------------------------------------ the report's leaderboard on a phone
@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    from engine.app.report import build_report

    rng = np.random.default_rng(5)
    names = [f"a rather long system name {i:02d}" for i in range(12)]
    scores = engine.scores_from_array(rng.uniform(size=(12, 6)), systems=names)
    return build_report(scores, tmp_path_factory.mktemp("s6") / "r", rules=["borda", "copeland"], replicates=25,
                        repeats=0, paired_top_k=0, formats=("png",))


def test_board_header_is_short_on_a_phone_and_full_on_a_desktop(browser, small_report):
    for width, height in ((390, 844), (1440, 900)):
        pg = browser.new_page(viewport={"width": width, "height": height})
        try:
            pg.goto(small_report.as_uri())
            heads = pg.locator("#t-leaderboard thead th")
            shown = [t.strip() for t in heads.all_inner_texts()]
            titles = pg.evaluate("() => [...document.querySelectorAll('#t-leaderboard thead th')].map(th => "
                                 "(th.querySelector('abbr') || {}).title || th.textContent)")
            assert any("rank 95% CI" in t for t in titles) and any("score 95% CI" in t for t in titles)
            row = pg.locator("#t-leaderboard thead tr").first.bounding_box()
            if width == 390:
                # every label one short line, its full text in the <abbr title>; the header row one line high; the
                # interval columns hidden (each interval is printed under its value on a phone, session 9)
                seen = [t.strip() for t in pg.locator("#t-leaderboard thead th:visible").all_inner_texts()]
                assert seen[:3] == ["system", "rank", "UB"], seen
                assert row["height"] <= 40, row
                assert pg.evaluate("document.documentElement.scrollWidth") <= 390
            else:
                assert shown[2].startswith("rank 95% CI") and "UB" not in shown[3].replace("Rank(UB)", ""), shown
        finally:
            pg.close()
