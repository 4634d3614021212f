"""The report's leaderboard (issue 26): the primary rule's rank and score with their bootstrap intervals, Rank(UB),
the judges behind each row, ``--primary``, the search box and the CSV/JSON export of every table.

Checked against independent computations: Rank(UB) by a loop over the score intervals the table shows, the score
intervals by ``numpy.percentile`` of the replicate scores column by column, the order against ``engine.rank`` of the
primary rule, the judge counts by counting the scores of each system, the exported CSV and JSON against the rows of the
HTML table.  In headless Chromium: axe-core (no serious or critical violation), no sideways page scroll at phone
width, the search box by keyboard.  The browser tests skip without Chromium or playwright; the axe test also without
``axe.min.js`` (``npm install axe-core``; ``$AXE_CORE_JS`` or ``node_modules/axe-core/axe.min.js`` under the current
folder or ``$TMPDIR``).
"""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import axe_path, one_line_error, run_cli

import engine
from engine.app.report import build_report, score_decimals

RULES = ["borda", "copeland", "plurality"]
B = 40


def _scores():
    """14 systems x 6 tasks x 3 instances with a few holes (the judges behind each row differ) and ties."""
    rng = np.random.default_rng(11)
    names = [f"system <{i:02d}> | long name" for i in range(14)]
    X = np.round(rng.normal(size=(14, 6, 3)) + np.linspace(1.5, 0, 14)[:, None, None], 1)
    X[3, 2, 1] = np.nan
    X[7, 0, :] = np.nan
    X[9, 4, 2] = np.nan
    return engine.scores_from_array(X, systems=names)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("board") / "report"
    scores = _scores()
    index = build_report(scores, out, rules=RULES, level="two", missing="drop-judges", replicates=B, repeats=0,
                         paired_top_k=0, formats=("png",), primary="copeland", over="instances")
    return index, scores


def board_rows(index: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((index.parent / "tables" / "leaderboard.csv").open(encoding="utf-8")))


def html_rows(index: Path, table_id: str = "t-leaderboard") -> tuple[list[str], list[list[str]]]:
    """The header and body cells of a table of the page, as text."""
    page = index.read_text(encoding="utf-8")
    part = page[page.index(f'id="{table_id}"'):]
    part = part[:part.index("</table>")]
    # a header with a phone label: <span class="long">full</span><abbr class="short" title="full">short</abbr>
    head = [html.unescape(re.sub(r'<abbr class="short".*?</abbr>|<[^>]+>', "", h))
            for h in re.findall(r'<button type="button" class="sort">(.*?)</button>', part)]
    body = part[part.index("<tbody>"):]
    rows = [[html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", r)] for r in re.findall(r"<tr>(.*?)</tr>", body)]
    return head, rows


def num(v: str) -> float:
    return float(v) if v != "" else float("nan")


def replicate_scores(scores) -> tuple[np.ndarray, list[str]]:
    """The report fixture's bootstrap (copeland over instances, same seed), recomputed: replicate scores and names."""
    boot = engine.bootstrap(scores, rule="copeland", over="instances", replicates=B, seed=0, level="two",
                            missing="drop-judges")
    return np.asarray(boot["replicate_score"].values, dtype=float), [str(s) for s in boot["system"].values]


def paired_rank_ub(rep: np.ndarray, i: int, level: float = 0.95) -> int:
    """1 + the systems scoring above system ``i`` in at least ``level`` of the replicates holding both (plain loops)."""
    n = 0
    for j in range(rep.shape[1]):
        both = [(a, b) for a, b in zip(rep[:, j], rep[:, i]) if np.isfinite(a) and np.isfinite(b)]
        n += j != i and bool(both) and sum(a > b for a, b in both) / len(both) >= level
    return 1 + n


def test_rank_ub_is_the_paired_bound_over_the_replicates(report):
    index, scores = report
    rep, names = replicate_scores(scores)
    rows = board_rows(index)
    lo = [num(r["score_low"]) for r in rows]
    hi = [num(r["score_high"]) for r in rows]
    assert all(np.isfinite(lo)) and all(np.isfinite(hi))
    for i, r in enumerate(rows):
        assert num(r["rank_ub"]) == paired_rank_ub(rep, names.index(r["system"]))
        # never below Arena's marginal bound over the score intervals shown (disjoint 95% intervals leave at most
        # 5% of the replicates out of order)
        assert num(r["rank_ub"]) >= 1 + sum(1 for j in range(len(rows)) if lo[j] > hi[i])
        if num(r["rank"]) > 1 and r["tied_with_leader"] == "False":  # the leader is surely above it: one sure order
            assert num(r["rank_ub"]) >= 2
    # some rows are separated from rank 1
    assert any(num(r["rank_ub"]) > 1 for r in rows)


def test_score_interval_is_the_percentiles_of_the_replicate_scores(report):
    """Recomputed from the bootstrap's replicate scores, column by column with numpy.percentile."""
    index, scores = report
    rep, names = replicate_scores(scores)
    for r in board_rows(index):
        col = rep[:, names.index(r["system"])]
        col = col[np.isfinite(col)]
        assert num(r["score_low"]) == pytest.approx(np.percentile(col, 2.5), abs=1e-12)
        assert num(r["score_high"]) == pytest.approx(np.percentile(col, 97.5), abs=1e-12)


def test_primary_rule_orders_the_board_as_engine_rank(report):
    index, scores = report
    ds = engine.rank(scores, rule="copeland", level="two", missing="drop-judges")
    want = {str(s): float(v) for s, v in zip(ds["system"].values, ds["rank"].values) if np.isfinite(v)}
    score = {str(s): float(v) for s, v in zip(ds["system"].values, ds["score"].values) if np.isfinite(v)}
    rows = board_rows(index)
    assert {r["system"] for r in rows} == set(want)
    got = [num(r["rank"]) for r in rows]
    assert got == sorted(got)
    for r in rows:
        assert num(r["rank"]) == want[r["system"]]
        assert num(r["score"]) == pytest.approx(score[r["system"]], abs=1e-12)
    page = index.read_text(encoding="utf-8")
    assert "copeland (chosen with --primary)" in page
    head, _ = html_rows(index)
    assert head[1] == "rank" and 'title="rank by copeland"' in page  # the dashboard's column name; the rule in its title


def test_judges_behind_each_row_are_counted(report):
    """drop-judges: the judges (task, instance) where every ranked system has a score, counted here with a loop."""
    index, scores = report
    X = np.asarray(scores.transpose("system", "task", "instance").values, dtype=float)
    common = sum(1 for t in range(X.shape[1]) for k in range(X.shape[2]) if np.isfinite(X[:, t, k]).all())
    tasks = sum(1 for t in range(X.shape[1]) if any(np.isfinite(X[:, t, k]).all() for k in range(X.shape[2])))
    for r in board_rows(index):
        assert int(r["cells"]) == common
        assert int(r["judges"]) == tasks


def test_judges_per_system_without_a_policy_that_drops_them(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(5, 4, 3))
    scores = engine.scores_from_array(X, systems=[f"s{i}" for i in range(5)])
    index = build_report(scores, tmp_path / "r", rules=["borda"], replicates=0, repeats=0, paired_top_k=0,
                         formats=("png",))
    for r in board_rows(index):
        assert int(r["cells"]) == 12 and int(r["judges"]) == 4
        assert r["rank_low"] == r["rank_ub"] == r["score_low"] == ""  # no bootstrap: no interval, said so
    assert "no bootstrap (--replicates 0)" in index.read_text(encoding="utf-8")


def test_exported_csv_and_json_equal_the_rows_of_the_table(report):
    index, _ = report
    head, shown = html_rows(index)
    rows = board_rows(index)
    assert len(shown) == len(rows) and len(head) == len(shown[0])
    for cells, r in zip(shown, rows):
        assert cells[0] == r["system"]
        assert float(cells[1].rstrip("=")) == num(r["rank"])
        assert cells[3] == f"{num(r['rank_ub']):g}"
        lo, hi = (float(v) for v in cells[5].split(" \u2013 "))
        k = len(cells[4].split(".")[1]) if "." in cells[4] else 0
        assert (float(cells[4]), lo, hi) == tuple(round(num(r[c]), k) for c in ("score", "score_low", "score_high"))
        assert cells[6] == r["judges"] and cells[7] == r["cells"]
        for c in ("rank", "rank_low", "rank_high", "rank_ub"):  # whole ranks are written as whole numbers
            assert r[c] == "" or "." not in r[c] or float(r[c]) != int(float(r[c])), (c, r[c])
    data = json.loads((index.parent / "tables" / "leaderboard.json").read_text(encoding="utf-8"))
    assert data["columns"] == list(rows[0])
    assert [h for h in head if h in ("judges", "cells")] == [c for c in data["columns"] if c in ("judges", "cells")]
    assert any(isinstance(rec["rank"], int) and not isinstance(rec["rank"], bool) for rec in data["rows"])
    for rec, r in zip(data["rows"], rows):
        assert rec["system"] == r["system"]
        assert all((rec[c] is None and r[c] == "") or rec[c] == pytest.approx(num(r[c])) for c in r if c != "system")
    # every table of the page: its CSV and JSON are written and linked
    page = index.read_text(encoding="utf-8")
    for name in ("leaderboard", "rankings", "intervals", "stability"):
        for ext in ("csv", "json"):
            assert (index.parent / "tables" / f"{name}.{ext}").is_file()
            assert f'href="tables/{name}.{ext}"' in page


def test_shared_ranks_and_distinct_scores_print_apart():
    """Half points stay visible; two different scores never print alike (a brute-force check over random sets)."""
    assert score_decimals([12.5, 12.0, 3.0]) == 1
    rng0 = np.random.default_rng(1)
    for _ in range(100):  # Borda points (halves) of any size print exactly: no half point rounded away
        v = rng0.integers(0, 4000, size=10) / 2.0
        k = score_decimals(v.tolist())
        assert all(float(f"{x:.{k}f}") == x for x in v.tolist()), (v, k)
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = np.round(rng.normal(size=8) * 10.0 ** rng.integers(-3, 4), rng.integers(0, 7))
        k = score_decimals(v.tolist())
        text = {}
        for x in v.tolist():
            text.setdefault(f"{x:.{k}f}", set()).add(x)
        assert all(len(xs) == 1 for xs in text.values()), (v, k)


def test_degenerate_primary_is_flagged(tmp_path):
    """plurality on 3 tasks and 9 systems: at most 3 winners, so 6 or more share the last rank."""
    rng = np.random.default_rng(4)
    scores = engine.scores_from_array(rng.normal(size=(9, 3)), systems=[f"m{i}" for i in range(9)])
    index = build_report(scores, tmp_path / "r", rules=["borda", "plurality"], replicates=0, repeats=0,
                         paired_top_k=0, formats=("png",), primary="plurality")
    ranks = [num(r["rank"]) for r in board_rows(index)]
    assert 2 * max(ranks.count(v) for v in set(ranks)) > len(ranks)  # degenerate, counted here
    page = index.read_text(encoding="utf-8")
    assert '<p class="warn">\u26a0 The plurality ranking is degenerate' in page


def test_default_primary_is_said_and_skips_degenerate_rules(tmp_path):
    rng = np.random.default_rng(4)
    scores = engine.scores_from_array(rng.normal(size=(9, 3)), systems=[f"m{i}" for i in range(9)])
    index = build_report(scores, tmp_path / "r", rules=["plurality", "copeland"], replicates=0, repeats=0,
                         paired_top_k=0, formats=("png",))
    page = index.read_text(encoding="utf-8")
    # said once, in the leaderboard's sentence; the settings point there (the s7 review: not twice on the page)
    assert "<b>copeland</b> (the default: borda, the sum of the per-task Borda points as in Colombo et al. 2022; " \
        "else the first rule asked for that is neither the baseline nor degenerate)" in page
    assert "<dd>copeland (the default; see the leaderboard)</dd>" in page


@pytest.mark.parametrize("argv,fragment", [
    (["--primary", "nope"], "unknown rule 'nope'"),
    (["--rule", "borda", "--primary", "copeland"], "not among the rules asked for"),
])
def test_cli_rejects_an_unknown_primary_rule_in_one_line(tmp_path, capsys, argv, fragment):
    f = tmp_path / "s.csv"
    f.write_text("system,a,b\nx,1,2\ny,2,1\nz,3,3\n", encoding="utf-8")
    out = tmp_path / "rep"
    code, o, e = run_cli(capsys, "report", f, "--out", out, "--replicates", "0", "--repeats", "0", *argv)
    one_line_error(code, o, e, fragment, "primary")
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name not in ("s.csv",)]


# ------------------------------------------------------------------------------------ in Chromium


@pytest.mark.parametrize("width,height", [(390, 844), (1440, 900)])
def test_axe_finds_no_serious_violation_and_no_sideways_scroll(browser, report, width, height):
    index, _ = report
    pg = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(index.as_uri())
    assert pg.evaluate("document.documentElement.scrollWidth") <= width
    axe = axe_path()
    if axe is None:
        pg.close()
        pytest.skip("axe-core not found (npm install axe-core; or set AXE_CORE_JS to axe.min.js)")
    pg.add_script_tag(content=axe.read_text())
    res = pg.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
                      ".map(v => ({id: v.id, impact: v.impact, n: v.nodes.length, "
                      "html: v.nodes.slice(0, 2).map(n => n.html)}))")
    bad = [v for v in res if v["impact"] in ("serious", "critical")]
    assert not bad, bad
    assert not errors
    pg.close()


def test_search_box_filters_the_board_by_keyboard(browser, report):
    index, _ = report
    pg = browser.new_page(viewport={"width": 390, "height": 844})
    pg.goto(index.as_uri())
    box = pg.locator("#q-leaderboard")
    assert pg.locator('label[for="q-leaderboard"]').inner_text() == "Search systems"
    for _ in range(60):  # reach the box with Tab alone
        pg.keyboard.press("Tab")
        if pg.evaluate("document.activeElement.id") == "q-leaderboard":
            break
    assert pg.evaluate("document.activeElement.id") == "q-leaderboard"
    pg.keyboard.type("<1")
    rows = pg.locator("#t-leaderboard tbody tr")
    names = [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count()) if rows.nth(i).is_visible()]
    want = sorted(r["system"] for r in board_rows(index) if "<1" in r["system"])
    assert sorted(names) == want and 0 < len(want) < rows.count()
    assert pg.locator("#q-leaderboard ~ .count").inner_text() == f"{len(want)} of {rows.count()} systems shown"
    pg.keyboard.press("Escape")
    assert box.input_value() == ""
    assert all(rows.nth(i).is_visible() for i in range(rows.count()))
    pg.close()


def test_results_store_board_uses_the_stored_replicates(tmp_path, capsys):
    """A `bootstrap --store` results store: the board's score intervals are the percentiles of the stored replicate
    scores (read back here with zarr through engine.sweep), Rank(UB) Arena's bound over them."""
    from engine.sweep import open_results

    f = tmp_path / "s.csv"
    rng = np.random.default_rng(8)
    X = np.round(rng.normal(size=(7, 9)) + np.linspace(1, 0, 7)[:, None], 2)
    f.write_text("system," + ",".join(f"t{j}" for j in range(9)) + "\n"
                 + "".join(f"m{i}," + ",".join(str(v) for v in X[i]) + "\n" for i in range(7)), encoding="utf-8")
    store = tmp_path / "st.zarr"
    code, _, err = run_cli(capsys, "bootstrap", f, "--rule", "borda", "--replicates", "30", "--store", store)
    assert code == 0, err
    index = build_report(store, tmp_path / "rep", formats=("png",), primary="borda", paired_top_k=0)
    ds = next(iter(open_results(store).values())).sel(rule="borda").compute()
    rep = np.asarray(ds["replicate_score"].values, dtype=float)
    names = [str(s) for s in ds["system"].values]
    rows = board_rows(index)
    for r in rows:
        col = rep[:, names.index(r["system"])]
        assert num(r["score_low"]) == pytest.approx(np.percentile(col, 2.5))
        assert num(r["score_high"]) == pytest.approx(np.percentile(col, 97.5))
        assert num(r["rank_ub"]) == paired_rank_ub(rep, names.index(r["system"]))
        assert int(r["judges"]) == 9
    assert [num(r["rank"]) for r in rows] == sorted(num(r["rank"]) for r in rows)
    assert "borda (chosen with --primary)" in index.read_text(encoding="utf-8")
    with pytest.raises(engine.VotebenchError, match="primary rule 'copeland' not in the store"):
        build_report(store, tmp_path / "rep2", formats=("png",), primary="copeland")
    assert not (tmp_path / "rep2").exists()


def test_dashboard_names_an_unnamed_sweep_input_as_the_sweep_does(tmp_path, capsys):
    """A sweep file whose [input] has no name: the dashboard finds its level and policy under the name the sweep gave
    the input (its file's name), not under "None" (it showed "each rule's own (not set)" for level = "two")."""
    from engine.app.dashboard import snapshot

    f = tmp_path / "bench.csv"
    f.write_text("system,a,b,c\nx,1,2,3\ny,2,1,1\nz,3,3,2\n", encoding="utf-8")
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'seed = 0\nstore = "{(tmp_path / "st.zarr").as_posix()}"\n[input]\npath = "{f.as_posix()}"\n'
                   'level = "task"\nmissing = "listwise"\n[[rules]]\nname = "borda"\n[[perturbations]]\n'
                   'kind = "bootstrap"\nover = "tasks"\nreplicates = 4\n', encoding="utf-8")
    code, _, err = run_cli(capsys, "sweep", cfg)
    assert code == 0, err
    snap = snapshot(tmp_path / "st.zarr")
    assert {g["input"] for g in snap["groups"]} == {"bench"}
    assert snap["input"]["bench"]["level"] == "task" and snap["input"]["bench"]["missing"] == "listwise"


def test_letter_groups_compare_the_best_systems_by_the_primary_rule(tmp_path):
    """The Paired tests section takes its systems from the leaderboard's rule, not from the mean: a system that is
    best by mean (one huge task score) but last by Borda is left out when Borda is primary."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 5)) + np.linspace(3, 0, 6)[:, None]
    X[5] = -5.0
    X[5, 0] = 500.0  # best mean, worst on 4 of 5 tasks
    scores = engine.scores_from_array(X, systems=[f"s{i}" for i in range(6)])
    index = build_report(scores, tmp_path / "r", rules=["borda"], replicates=0, repeats=0, formats=("png",),
                         paired_top_k=3, primary="borda")
    borda = engine.rank(scores, rule="borda")
    rank = {str(s): float(v) for s, v in zip(borda["system"].values, borda["rank"].values)}
    want = sorted(rank, key=lambda s: rank[s])[:3]
    rows = list(csv.DictReader((index.parent / "tables" / "paired_letters.csv").open(encoding="utf-8")))
    assert sorted(r["system"] for r in rows) == sorted(want) and "s5" not in want
    assert all(float(r["rank_by_borda"]) == rank[r["system"]] for r in rows)
    assert "the 3 best of 6 systems by the primary rule, borda" in index.read_text(encoding="utf-8")


def test_a_primary_rule_that_would_be_left_out_is_kept(tmp_path):
    """random_judge is left out of a report of every rule unless named; --primary names it."""
    rng = np.random.default_rng(6)
    scores = engine.scores_from_array(rng.normal(size=(6, 4)), systems=[f"m{i}" for i in range(6)])
    common = dict(replicates=0, repeats=0, paired_top_k=0, formats=("png",))
    plain = build_report(scores, tmp_path / "a", **common).read_text(encoding="utf-8")
    assert "Left out of the rank tables" in plain and "random_judge" in plain
    index = build_report(scores, tmp_path / "b", primary="random_judge", **common)
    head, _ = html_rows(index)
    assert head[1] == "rank" and 'title="rank by random_judge"' in index.read_text(encoding="utf-8")
    want = engine.rank(scores, rule="random_judge")
    rank = {str(s): float(v) for s, v in zip(want["system"].values, want["rank"].values)}
    assert all(num(r["rank"]) == rank[r["system"]] for r in board_rows(index))
