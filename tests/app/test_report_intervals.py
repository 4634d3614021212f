"""The report's bootstrap-interval figures: the primary rule alone and large, then at most six other rules.

Checked on the figure objects (matplotlib's own axes, ticks and limits) and on the report's page and files: the
rows follow the leaderboard's rule, every panel labels its rank axis and spans only the ranks it draws, degenerate
rules and rules beyond six are named as not drawn.
"""

from __future__ import annotations

import html
import re

import numpy as np

import engine
from engine.app import plots
from engine.app.report import INTERVAL_PANELS, build_report


def test_every_panel_labels_its_own_rank_axis():
    rng = np.random.default_rng(2)
    n = 9
    rank = np.array([np.arange(1.0, n + 1), rng.permutation(n) + 1.0, np.arange(1.0, n + 1)])
    low, high = np.maximum(rank - 2, 1), np.minimum(rank + 2, n)
    high[2] = np.minimum(rank[2] + 30, 40)  # one rule's intervals reach far: only its panel widens
    fig = plots.rank_interval_figure(rank, low, high, [f"s{i}" for i in range(n)], ["a", "b", "c"])
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert [ax.get_title() for ax in axes] == ["a", "b", "c"]
    fig.canvas.draw()
    for k, ax in enumerate(axes):
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        assert len(labels) >= 2, k  # a scale on every panel, not only the bottom row
        top = max(np.nanmax(high[k]), np.nanmax(rank[k]))
        assert ax.get_xlim() == (0.5, top + 0.5)


def test_the_primary_rule_is_drawn_alone_and_at_most_six_others_beside(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 6)) + np.linspace(1.5, 0, 12)[:, None]
    rules = ["copeland", "borda", "minimax", "baldwin", "dowdall", "plurality", "average_rank", "median", "win_rate",
             "success_rate"]
    index = build_report(engine.scores_from_array(X, systems=[f"s{i:02d}" for i in range(12)]), tmp_path / "r",
                         rules=rules, primary="copeland", replicates=10, repeats=0, paired_top_k=0, formats=("svg",))
    page = html.unescape(index.read_text(encoding="utf-8"))
    figures = index.parent / "figures"
    assert (figures / "intervals.svg").is_file() and (figures / "intervals_rules.svg").is_file()
    caps = re.findall(r"<figcaption>(.*?)</figcaption>", page, flags=re.S)
    main = next(c for c in caps if "the leaderboard's rule" in c)
    assert main.startswith("copeland")
    rest = next(c for c in caps if c.startswith("The same 12 systems"))
    drawn = rest.split(" under ")[1].split(":")[0].split(", ")
    assert len(drawn) == INTERVAL_PANELS and "copeland" not in drawn
    not_drawn = rest.split("Not drawn (their intervals are in the download above, Rank intervals of every rule): ")[1]
    not_drawn = not_drawn.rstrip(".").split(", ")
    # every other rule is either drawn or named as not drawn; the mean baseline is one of the rules
    others = {r for r in [*rules, "mean"] if r != "copeland"}
    named = {re.sub(r" ?\u26a0.*| \(degenerate.*", "", x) for x in drawn + not_drawn}
    assert named == others, (named ^ others)
    assert all("\u26a0" not in d for d in drawn)  # degenerate rules are never among the panels
    # the rows of the main figure follow copeland's ranks: its svg names the systems best first
    svg = (figures / "intervals.svg").read_text(encoding="utf-8")
    order = re.findall(r"<text[^>]*>(s\d\d)</text>", svg)  # the report's figures keep text as text
    ranks = engine.rank(engine.scores_from_array(X, systems=[f"s{i:02d}" for i in range(12)]), rule="copeland")
    best = sorted(ranks["system"].values.tolist(), key=lambda s: (float(ranks["rank"].sel(system=s)), s))
    assert order == best
