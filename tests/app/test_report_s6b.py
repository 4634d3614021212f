"""The report's leaderboard-facing fixes of the s6 visual review (issue 26, review D2-D5, D11-D14, D19).

Checked against independent computations: Borda points by a loop over the tasks, the rank intervals of two systems
drawn from the same distribution (an instance bootstrap cannot separate them: both intervals span ranks 1-2), the
letters' order against the primary rule's ranks read from the leaderboard, the scale ratio of the tasks by numpy,
and the degenerate rule's cells against the baseline's ranks (no arrow where the ranks differ).
"""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.app.report import FEW_JUDGES, KEMENY_EXACT_MAX, build_report, rank_range


def rows_of(index: Path, name: str) -> list[dict[str, str]]:
    with (index.parent / "tables" / f"{name}.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def table_cells(page: str, table_id: str) -> tuple[list[str], list[list[tuple[str, str]]]]:
    """Header texts (long labels) and body cells (class, text) of one table of the page."""
    part = page[page.index(f'id="{table_id}"'):]
    part = part[:part.index("</table>")]
    head = [html.unescape(re.sub(r'<abbr class="short".*?</abbr>|<[^>]+>', "", h))
            for h in re.findall(r'<button type="button" class="sort">(.*?)</button>', part)]
    body = part[part.index("<tbody>"):]
    rows = [[(c or "", html.unescape(t)) for c, t in re.findall(r'<td(?: class="([^"]*)")?[^>]*>([^<]*)</td>', r)]
            for r in re.findall(r"<tr>(.*?)</tr>", body)]
    return head, rows


def _twins(n_inst: int = 60):
    """4 systems x 2 tasks x ``n_inst`` instances: s0 and s1 drawn from one distribution, s2 and s3 far below."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(4, 2, n_inst))
    X[2] -= 3.0
    X[3] -= 6.0
    return engine.scores_from_array(X, systems=["s0", "s1", "s2", "s3"])


@pytest.fixture(scope="module")
def twins_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("twins") / "r"
    return build_report(_twins(), out, rules=["borda", "mean"], replicates=200, repeats=0, paired_top_k=0,
                        formats=("png",))


def test_instance_input_is_bootstrapped_over_instances_by_default(twins_report):
    """Two systems from one distribution: resampling the 60 instances of each task swaps them often, so both rank
    intervals cover ranks 1 and 2 (the old default, 2 tasks resampled, printed 1-1 for everyone)."""
    page = twins_report.read_text(encoding="utf-8")
    assert "instances (the default for this input): the instances within each of the 2 tasks (60 per task)" \
        in html.unescape(page)
    board = {r["system"]: r for r in rows_of(twins_report, "leaderboard")}
    for s in ("s0", "s1"):
        assert float(board[s]["rank_low"]) == 1.0 and float(board[s]["rank_high"]) >= 2.0
    # the far-away systems keep their places in every replicate
    assert (float(board["s3"]["rank_low"]), float(board["s3"]["rank_high"])) == (4.0, 4.0)
    # every printed bound is a whole rank
    _, cells = table_cells(page, "t-leaderboard")
    for row in cells:
        assert re.fullmatch(r"[\d,]+( – [\d,]+)?", row[2][1]), row[2][1]  # one rank: a point interval
    assert f"fewer than {FEW_JUDGES}" not in page  # 60 instances per task: no warning


def test_few_judges_are_warned_about(tmp_path):
    """Resampling the 2 tasks explicitly: the page says only 2 judges were resampled, in the leaderboard."""
    index = build_report(_twins(8), tmp_path / "r", rules=["borda"], replicates=30, repeats=0, paired_top_k=0,
                         formats=("png",), over="tasks")
    page = html.unescape(index.read_text(encoding="utf-8"))
    board = page[page.index("<h2") : page.index('id="t-leaderboard"')]
    assert "The bootstrap resamples only 2 judges" in board and f"fewer than {FEW_JUDGES}" in board
    assert "(the default for this input)" not in page  # --over was given


def borda_points(X: np.ndarray) -> np.ndarray:
    """Per task: the systems a system beats, a tie counting 1/2; summed over the tasks (X: systems x tasks)."""
    S, T = X.shape
    pts = np.zeros(S)
    for t in range(T):
        for i in range(S):
            for j in range(S):
                if i != j:
                    pts[i] += 1.0 if X[i, t] > X[j, t] else 0.5 if X[i, t] == X[j, t] else 0.0
    return pts


def test_default_primary_is_borda_and_said(tmp_path):
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(9, 6)), 1)
    names = [f"m{i}" for i in range(9)]
    index = build_report(engine.scores_from_array(X, systems=names), tmp_path / "r", replicates=0, repeats=0,
                         paired_top_k=0, formats=("png",))
    page = index.read_text(encoding="utf-8")
    assert "Leaderboard by borda" in page and "<b>borda</b> (the default: borda, the sum of the per-task Borda points" \
        in page
    pts = dict(zip(names, borda_points(X)))
    board = rows_of(index, "leaderboard")
    assert [float(r["score"]) for r in board] == pytest.approx(sorted(pts.values(), reverse=True))
    for r in board:
        assert float(r["score"]) == pytest.approx(pts[r["system"]])
        # competition rank: 1 + the systems with strictly more points
        assert int(r["rank"]) == 1 + sum(v > pts[r["system"]] + 1e-9 for v in pts.values())
    # the leader's name carries the dashboard's star (drawn by CSS after the name, the cell text stays the name)
    _, cells = table_cells(page, "t-leaderboard")
    assert [c[0][0] == "lead" for c in cells] == [int(r["rank"]) == 1 for r in board]
    assert [c[0][1] for c in cells] == [r["system"] for r in board]
    # the CD section says its average ranks are not the average_rank rule's
    assert "not the average_rank rule" in page


def test_kemeny_fallback_is_named_in_tables_and_figures(tmp_path):
    rng = np.random.default_rng(5)
    n = KEMENY_EXACT_MAX + 2
    X = rng.normal(size=(n, 5))
    index = build_report(engine.scores_from_array(X, systems=[f"s{i:02d}" for i in range(n)]), tmp_path / "r",
                         rules=["borda", "kemeny"], replicates=20, repeats=0, paired_top_k=0, formats=("svg",))
    page = html.unescape(index.read_text(encoding="utf-8"))
    label = f"kemeny (Borda fallback: > {KEMENY_EXACT_MAX} systems)"
    head, _ = table_cells(page, "t-rankings")
    assert "kemeny\u2020" in head and label not in head  # the header a dagger, the legend the words
    assert f"\u2020 Borda fallback: above {KEMENY_EXACT_MAX} systems" in page
    _, stab = table_cells(page, "t-stability")
    assert label in [r[0][1] for r in stab]
    for fig in ("rankings", "rank_heatmap", "intervals_rules"):  # kemeny is not the primary rule: drawn with the others
        svg = (index.parent / "figures" / f"{fig}.svg").read_text(encoding="utf-8")
        assert f"kemeny=Borda (&gt;{KEMENY_EXACT_MAX})" in svg or "kemeny=Borda" in svg, fig
    # the exports keep the rule's label
    assert {r["rule"] for r in rows_of(index, "stability")} == {"mean", "borda", "kemeny"}
    # at most 12 systems it is the exact Kemeny ranking: no fallback label
    small = build_report(engine.scores_from_array(X[:KEMENY_EXACT_MAX], systems=[f"s{i:02d}" for i in range(12)]),
                         tmp_path / "s", rules=["kemeny"], replicates=0, repeats=0, paired_top_k=0, formats=("png",))
    assert "Borda fallback" not in small.read_text(encoding="utf-8")


def test_degenerate_rule_prints_no_rank_moves_and_is_flagged(tmp_path):
    """Plurality over 3 tasks and 10 systems: at most 3 winners, the rest tie; its cells show the rank alone even
    where it differs from the mean baseline's rank, in HTML, CSV and TeX; its stability row carries the warning."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(10, 3))
    index = build_report(engine.scores_from_array(X, systems=[f"s{i}" for i in range(10)]), tmp_path / "r",
                         rules=["borda", "plurality"], replicates=20, repeats=0, paired_top_k=0, formats=("png",))
    page = html.unescape(index.read_text(encoding="utf-8"))
    head, cells = table_cells(page, "t-rankings")
    j = next(k for k, h in enumerate(head) if h.startswith("plurality"))
    b = head.index("mean (baseline)")
    assert "\u26a0" in head[j]
    moved = 0
    for row in cells:
        rank, base = row[j][1], row[b][1]
        assert re.fullmatch(r"\d+=?", rank), rank  # no arrow, no ±0
        moved += rank.rstrip("=") != base.rstrip("=")
    assert moved > 0  # the ranks do differ from the baseline's: the arrows were left out, not absent by chance
    assert all(r["plurality_change"] == "" for r in rows_of(index, "rankings"))
    tex = (index.parent / "tables" / "rankings.tex").read_text(encoding="utf-8")
    col = [line.split(" & ")[j] for line in tex.splitlines() if line.count(" & ") == len(head) - 1][1:]
    assert col and not any("uparrow" in c or "downarrow" in c or "pm" in c for c in col)
    _, stab = table_cells(page, "t-stability")
    assert any(r[0][1] == "plurality \u26a0" for r in stab)
    assert "degenerate rule: its many ties repeat in every replicate" in page


def test_letters_are_listed_by_the_primary_rule_and_name_their_test(tmp_path):
    rng = np.random.default_rng(12)
    X = rng.normal(size=(6, 3, 20)) + np.linspace(0.6, 0, 6)[:, None, None]
    X[5, 0] += 3.0  # best mean thanks to one task, not best by Borda
    names = [f"m{i}" for i in range(6)]
    index = build_report(engine.scores_from_array(X, systems=names), tmp_path / "r", rules=["borda"], replicates=0,
                         repeats=0, formats=("png",), paired_resamples=400)
    rank = {r["system"]: int(r["rank"]) for r in rows_of(index, "leaderboard")}
    listed = [r["system"] for r in rows_of(index, "paired_letters")]
    assert [rank[s] for s in listed] == sorted(rank[s] for s in listed)
    page = html.unescape(index.read_text(encoding="utf-8"))
    assert "Letter groups, listed by the borda ranking (letters from paired permutation tests on z-scores, Holm-adjusted)" in page


def test_a_mean_over_tasks_of_different_scales_is_warned_about(tmp_path):
    rng = np.random.default_rng(1)
    X = np.stack([rng.uniform(10, 25, size=8), rng.uniform(0.2, 0.4, size=8), rng.uniform(0.3, 0.5, size=8)], axis=1)
    index = build_report(engine.scores_from_array(X, systems=[f"s{i}" for i in range(8)],
                                                  tasks=["bleu", "rouge", "meteor"]),
                         tmp_path / "r", rules=["borda"], replicates=0, repeats=0, paired_top_k=0, formats=("png",))
    page = html.unescape(index.read_text(encoding="utf-8"))
    ratio = np.abs(X).max(axis=0).max() / np.abs(X).max(axis=0).min()
    assert ratio > 10
    assert f"Mean averages raw scores of tasks whose scales differ {ratio:.0f}-fold" in page
    assert "(the mean baseline colours every rank change)" in page
    same = build_report(engine.scores_from_array(X[:, 1:], systems=[f"s{i}" for i in range(8)]), tmp_path / "s",
                        rules=["borda"], replicates=0, repeats=0, paired_top_k=0, formats=("png",))
    assert "raw scores of tasks whose scales differ" not in same.read_text(encoding="utf-8")


def test_rank_range_prints_whole_ranks():
    assert rank_range(1.0, 5.0) == "1 – 5"
    assert rank_range(998.0, 1200.0) == "998 – 1,200"
    assert rank_range(float("nan"), 3.0) == "–"
