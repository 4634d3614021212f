"""The report's polish of session 9 (issue 26, the review at 8.0/10): the phone leaderboard, the phone rankings figure,
wording, and the letter groups' exports.

Checked against things the report does not compute: the exported CSV read with the csv module (names, intervals,
ranks), the geometry Chromium lays the page out with (the table box, the line boxes of a name, the computed style of
the merged cells), matplotlib's text artists against the ranks handed to the figure, the average ranks of
scipy.stats.rankdata and Nemenyi's critical difference from scipy's studentized range, a loop over the pairwise
majorities for minimax, counts of the missing scores written into the input.  The browser tests skip without Chromium
or playwright.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import engine
from engine.app import plots
from engine.app.report import build_report, rank_range
from engine.app.units import rule_unit

DATA = Path(__file__).resolve().parents[2] / "data"
PHONE = {"width": 390, "height": 844}
DESK = {"width": 1440, "height": 900}


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def page_text(index: Path) -> str:
    """The page's text with every tag replaced by a space (as a screen-reader's or a crawler's text joins elements)."""
    body = index.read_text(encoding="utf-8").split("<body>", 1)[1].split("<script>", 1)[0]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def section(index: Path, title: str) -> str:
    page = index.read_text(encoding="utf-8")
    part = page[page.index(f"<h2>{title}</h2>"):]
    return part[: part.index("</section>")]


def _long_scores():
    """12 systems with long names (the GLUE board's 'Funnel-Transformer (Ensemble B10-10-10H1024)'), scores in the
    thousands (four-digit Borda-like values), 8 tasks."""
    rng = np.random.default_rng(3)
    names = [f"Transformer variant {i:02d} (ensemble of many large checkpoints)" for i in range(12)]
    X = np.round(rng.normal(size=(12, 8)) * 300 + np.linspace(1500, 900, 12)[:, None], 1)
    return engine.scores_from_array(X, systems=names)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    out = tmp_path_factory.mktemp("s9board") / "r"
    build_report(_long_scores(), out, rules=["mean", "borda", "copeland", "minimax"], replicates=60, repeats=0,
                 paired_top_k=0, formats=("png",), primary="mean")
    return out


# ---------------------------------------------------------------------------------------------
# 1. the phone leaderboard: no number cut at the box's edge, names on one line with their full text kept
# ---------------------------------------------------------------------------------------------
_GEOMETRY = """(id) => {
  const box = document.getElementById(id || "t-leaderboard"), t = box.querySelector("table");
  const names = Array.from(t.tBodies[0].rows).map(r => {
    const td = r.cells[0], range = document.createRange();
    range.selectNodeContents(td);
    const tops = new Set(Array.from(range.getClientRects()).map(x => Math.round(x.top)));  // one per line box
    return {text: td.textContent, title: td.getAttribute("title"), lines: tops.size};
  });
  const cellsRight = Math.max(...Array.from(t.querySelectorAll("td, th")).filter(c => c.offsetParent !== null)
    .map(c => c.getBoundingClientRect().right));
  const score = t.tBodies[0].rows[0].cells[4], ci = t.tBodies[0].rows[0].cells[5];
  return {boxRight: box.getBoundingClientRect().right, clientWidth: box.clientWidth, scrollWidth: box.scrollWidth,
          cellsRight, names, page: document.documentElement.scrollWidth,
          ciShown: ci ? getComputedStyle(ci).display : null, under: ci ? getComputedStyle(score, "::after").content : null};
}"""


def test_phone_board_fits_its_box_and_keeps_whole_names(browser, board):
    rows = read_csv(board / "tables" / "leaderboard.csv")
    pg = browser.new_page(viewport=PHONE)
    pg.goto((board / "index.html").as_uri())
    g = pg.evaluate(_GEOMETRY)
    pg.close()
    assert g["page"] <= PHONE["width"]
    # nothing lies beyond the table's box: no score, interval or header cut at its right edge
    assert g["scrollWidth"] <= g["clientWidth"], g
    assert g["cellsRight"] <= g["boxRight"] + 0.5, g
    # a long name is one line (cut with an ellipsis), its whole text still in the cell and in its title
    assert [n["text"] for n in g["names"]] == [r["system"] for r in rows]
    assert all(n["lines"] == 1 and n["title"] == n["text"] for n in g["names"]), g["names"][:3]
    # the score's interval is printed under it, its own column hidden
    assert g["ciShown"] == "none"
    top = rows[0]
    lo, hi = float(top["score_low"]), float(top["score_high"])
    shown = re.findall(r"-?\d+(?:\.\d+)?", g["under"].replace(",", ""))
    assert len(shown) == 2
    for v, want in zip(shown, (lo, hi)):  # the bounds rounded to the decimals printed
        assert abs(float(v) - want) <= 0.5 * 10.0 ** -len((v.split(".") + [""])[1]) + 1e-9, (v, want)


def test_desktop_board_keeps_its_interval_columns(browser, board):
    pg = browser.new_page(viewport=DESK)
    pg.goto((board / "index.html").as_uri())
    g = pg.evaluate(_GEOMETRY)
    pg.close()
    assert g["ciShown"] != "none" and g["under"] in ("none", "normal")
    assert g["scrollWidth"] <= g["clientWidth"]


def test_board_exports_keep_their_columns(board):
    """The merge is the page's layout only: the CSV keeps separate bounds, as the page's wide table shows them."""
    rows = read_csv(board / "tables" / "leaderboard.csv")
    assert list(rows[0]) == ["system", "rank", "rank_low", "rank_high", "rank_ub", "score", "score_low", "score_high",
                             "tied_with_leader", "judges"]
    doc = json.loads((board / "tables" / "leaderboard.json").read_text(encoding="utf-8"))
    assert doc["columns"] == list(rows[0])


def test_rank_interval_sort_breaks_ties_by_rank(browser, board):
    """Sorted by the rank interval after another sort (by name): equal lower bounds in the order of the rank, both
    ways, whatever order the rows had before."""
    rows = read_csv(board / "tables" / "leaderboard.csv")
    rank = {r["system"]: (float(r["rank"]), i) for i, r in enumerate(rows)}
    low = {r["system"]: float(r["rank_low"]) for r in rows}
    assert len(set(low.values())) < len(low)  # some lower bounds tie
    pg = browser.new_page(viewport=DESK)
    pg.goto((board / "index.html").as_uri())
    heads = pg.locator("#t-leaderboard thead th button")
    heads.nth(0).click()  # by name, Z to A after a second click: ties now in the reverse of the name order
    heads.nth(0).click()
    names = "Array.from(document.querySelectorAll('#t-leaderboard tbody tr')).map(r => r.cells[0].textContent)"
    heads.nth(2).click()
    up = pg.evaluate(names)
    heads.nth(2).click()
    down = pg.evaluate(names)
    pg.close()
    assert up == sorted(low, key=lambda s: (low[s], rank[s]))
    assert down == sorted(low, key=lambda s: (-low[s], rank[s]))


def test_a_one_rank_interval_prints_one_rank(tmp_path):
    """A degenerate primary rule (minimax ties most systems): a system tied in every replicate has the interval
    [r, r], printed as 'r', never 'r – r'."""
    assert rank_range(5.0, 5.0) == "5" and rank_range(3.0, 7.0) == "3 – 7"
    X = np.zeros((8, 6))
    X[0] += 1.0  # one winner on every task, the others all tied: minimax ranks 1, then seven systems at 2
    out = tmp_path / "r"
    build_report(engine.scores_from_array(X, systems=[f"m{i}" for i in range(8)]), out, rules=["minimax"],
                 replicates=30, repeats=0, paired_top_k=0, formats=("png",), primary="minimax")
    rows = read_csv(out / "tables" / "leaderboard.csv")
    page = out / "index.html"
    cells = _board_cells(page)
    point = [(r, c) for r, c in zip(rows, cells) if r["rank_low"] and r["rank_low"] == r["rank_high"]]
    assert point, rows
    for r, c in point:
        assert c[2] == f"{int(float(r['rank_low']))}"
    assert not re.search(r"\b(\d+) – \1\b", page.read_text(encoding="utf-8"))


def _board_cells(index: Path, table: str = "t-leaderboard") -> list[list[str]]:
    page = index.read_text(encoding="utf-8")
    part = page[page.index(f'id="{table}"'):]
    part = part[part.index("<tbody>"): part.index("</table>")]
    return [[html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", r)] for r in re.findall(r"<tr>(.*?)</tr>", part)]


# ---------------------------------------------------------------------------------------------
# 2. the phone rankings figure prints the ranks of the primary and baseline columns
# ---------------------------------------------------------------------------------------------
def test_narrow_rankings_figure_prints_primary_and_baseline_ranks():
    scores = _long_scores()
    rules = ["mean", "borda", "copeland", "minimax", "dowdall", "median", "average_rank", "baldwin", "mean_win_rate"]
    ranks = xr.concat([engine.rank(scores, rule=r)["rank"] for r in rules], dim="rule").assign_coords(rule=rules)
    ranks = ranks.transpose("system", "rule")
    R = np.asarray(ranks.values, dtype=float)
    shared = np.array([[(R[:, j] == R[i, j]).sum() > 1 for j in range(len(rules))] for i in range(len(R))])
    fig = plots.rank_change_figure(ranks, baseline="mean", primary="borda", narrow=True, shared=shared)
    ax = fig.axes[0]
    centres = ax.get_xticks()
    assert len(centres) == len(rules)
    texts = [t for t in ax.texts if t.get_text()]
    by_col: dict[int, dict[int, str]] = {}
    for t in texts:
        x, y = t.get_position()
        j = int(np.argmin(np.abs(centres - x)))
        by_col.setdefault(j, {})[int(round(y))] = t.get_text()
    assert set(by_col) == {0, 1}  # the baseline and the primary rule; the others colour alone
    for j in (0, 1):
        col = R[:, j]
        want = {i: f"{col[i]:g}" + ("=" if (col == col[i]).sum() > 1 else "") for i in range(len(col))}
        assert by_col[j] == want
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[1].startswith("borda") and "(primary)" in labels[1] and "(baseline)" in labels[0]
    # the printed columns are wider than the colour-only ones
    edges = sorted(set(ax.get_xticks(minor=True).tolist()))
    widths = np.diff(edges)
    assert min(widths[:2]) > max(widths[2:])


def test_rankings_caption_says_what_a_phone_prints(board):
    fig = section(board / "index.html", "Rankings")
    cap = html.unescape(re.sub(r"<[^>]+>", "", fig[fig.index("<figcaption>"): fig.index("</figcaption>")]))
    assert "on a phone with more than 3 rules, ranks printed in the mean column only" in cap


# ---------------------------------------------------------------------------------------------
# 3. wording
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def automl(tmp_path_factory):
    out = tmp_path_factory.mktemp("s9automl") / "r"
    build_report(DATA / "esann_automl.csv", out, replicates=0, repeats=0, formats=("svg",))
    return out


def test_no_space_before_punctuation_and_no_nested_parentheses(automl):
    text = page_text(automl / "index.html")
    assert not re.search(r"\w \s*[,.;:](\s|$)", text), re.search(r".{40}\w \s*[,.;:](\s|$).{20}", text)
    board = section(automl / "index.html", "Leaderboard")
    intro = html.unescape(re.sub(r"<[^>]+>", "", re.search(r"<p>(.*?)</p>", board).group(1)))
    depth = deepest = 0
    for ch in intro:
        depth += (ch == "(") - (ch == ")")
        deepest = max(deepest, depth)
    assert deepest == 1 and depth == 0, intro


def test_automl_paired_section_says_the_cd_once(automl):
    """The paired section names the diagram's critical difference once (the review found the sentence twice)."""
    with (DATA / "esann_automl.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    X = np.array([[float(v) for v in r[1:]] for r in rows[1:]]).T  # (tasks, systems)
    N, k = X.shape
    q = stats.studentized_range.ppf(0.95, k, np.inf) / math.sqrt(2)
    cd = q * math.sqrt(k * (k + 1) / (6 * N))
    text = html.unescape(re.sub(r"<[^>]+>", "", section(automl / "index.html", "Paired tests")))
    intro = text[text.index("Compared:"): text.index("pairs differ significantly")]
    assert intro.count(f"CD = {cd:.3g}") == 1, intro
    assert intro.count("Friedman") <= 1 and f"{N} complete tasks" in intro


def test_counts_read_as_words_not_templates(tmp_path):
    """'1 task' / '2 systems', never 'task(s)': a drop-judges report with one task holding a missing score, and a
    listwise one dropping two systems."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(7, 5))
    X[2, 3] = np.nan
    names = [f"s{i}" for i in range(7)]
    a = build_report(engine.scores_from_array(X, systems=names), tmp_path / "a", rules=["borda"], replicates=0,
                     repeats=0, paired_top_k=0, formats=("svg",), missing="drop-judges")
    holes = int(np.isnan(X).any(axis=0).sum())
    assert f"left out {holes} task with a missing score" in page_text(a) and holes == 1
    Y = X.copy()
    Y[4, 0] = np.nan
    b = build_report(engine.scores_from_array(Y, systems=names), tmp_path / "b", rules=["borda"], replicates=0,
                     repeats=0, paired_top_k=0, formats=("svg",), missing="listwise")
    dropped = int(np.isnan(Y).any(axis=1).sum())
    assert f"left out {dropped} systems" in page_text(b) and dropped == 2
    for index in (a, b):
        assert "(s)" not in page_text(index)


def test_minimax_unit_says_what_its_score_is(tmp_path):
    """'minus the strength of its worst pairwise defeat (0 = never beaten)': a system no other beats scores 0, the
    others minus their worst defeat, counted here over the pairwise majorities (winning votes: tasks won)."""
    unit = rule_unit("minimax")
    assert "worst pairwise defeat" in unit and "0 = never beaten" in unit
    rng = np.random.default_rng(9)
    X = rng.normal(size=(6, 9))
    X[0] += 5.0  # beats every other system on every task
    names = [f"m{i}" for i in range(6)]
    out = tmp_path / "r"
    build_report(engine.scores_from_array(X, systems=names), out, rules=["minimax"], replicates=0, repeats=0,
                 paired_top_k=0, formats=("svg",), primary="minimax")
    score = {r["system"]: float(r["score"]) for r in read_csv(out / "tables" / "leaderboard.csv")}
    for i, a in enumerate(names):
        beaten_by = [int((X[j] > X[i]).sum()) for j in range(6)
                     if j != i and (X[j] > X[i]).sum() > (X[i] > X[j]).sum()]
        worst = max(beaten_by, default=0)
        assert score[a] == pytest.approx(-worst)
    assert score["m0"] == 0
    legend = html.unescape(section(out / "index.html", "Leaderboard"))
    assert "minus the strength of its worst pairwise defeat (0 = never beaten); higher is better" in legend


def test_phone_letters_table_fits_its_box(browser, automl):
    """The letter groups on a phone: the letters column inside the box (the review: cut at its edge), one-line names."""
    rows = read_csv(automl / "tables" / "paired_letters.csv")
    pg = browser.new_page(viewport=PHONE)
    pg.goto((automl / "index.html").as_uri())
    g = pg.evaluate(_GEOMETRY, "t-paired_letters")
    pg.close()
    assert g["scrollWidth"] <= g["clientWidth"] and g["cellsRight"] <= g["boxRight"] + 0.5, g
    assert [n["text"] for n in g["names"]] == [r["system"] for r in rows]
    assert all(n["lines"] == 1 and n["title"] == n["text"] for n in g["names"])


# ---------------------------------------------------------------------------------------------
# 4. the letter groups' exports hold what the page shows
# ---------------------------------------------------------------------------------------------
def test_paired_letters_export_the_page_columns_with_whole_ranks(automl):
    rows = read_csv(automl / "tables" / "paired_letters.csv")
    doc = json.loads((automl / "tables" / "paired_letters.json").read_text(encoding="utf-8"))
    page = (automl / "index.html").read_text(encoding="utf-8")
    part = page[page.index('id="t-paired_letters"'):]
    part = part[: part.index("</table>")]
    head = [html.unescape(re.sub(r'<abbr class="short".*?</abbr>|<[^>]+>', "", h))  # the full label, not a phone's
            for h in re.findall(r'<button type="button" class="sort">(.*?)</button>', part)]
    cells = _board_cells(automl / "index.html", "t-paired_letters")
    assert head[1] == "rank by borda"
    assert doc["columns"] == list(rows[0]) == ["system", "rank_by_borda", "average_rank", "letters"]
    with (DATA / "esann_automl.csv").open(encoding="utf-8", newline="") as fh:
        raw = list(csv.reader(fh))
    X = np.array([[float(v) for v in r[1:]] for r in raw[1:]])  # (systems, tasks)
    points = sum(stats.rankdata(X[:, t]) - 1 for t in range(X.shape[1]))  # Borda: systems beaten, a tie = 1/2
    borda = {r[0]: int(1 + (points > p).sum()) for r, p in zip(raw[1:], points)}
    for r, rec, c in zip(rows, doc["rows"], cells):
        assert r["system"] == rec["system"] == c[0]
        assert isinstance(rec["rank_by_borda"], int) and rec["rank_by_borda"] == borda[r["system"]]
        assert r["rank_by_borda"] == str(rec["rank_by_borda"]) == c[1].rstrip("=")
        assert r["letters"].replace(" ", "") == c[3].replace(" ", "")


def test_figure_alt_texts_are_the_captions_text_escaped_once(automl, board):
    """Review (session 9): alt texts read 'leaderboard&amp;#x27;s' and '(&amp;gt;12)' aloud: the HTML caption was escaped
    again. An alt text, unescaped once by the browser, is the caption's text with no entity left."""
    for root in (automl, board):
        page = (root / "index.html").read_text(encoding="utf-8")
        figs = re.findall(r'<img src="[^"]+" alt="([^"]*)">.*?<figcaption>(.*?)<br>', page, flags=re.S)
        assert figs
        for alt, caption in figs:
            said = html.unescape(alt)
            assert not re.search(r"&(#\w+|[a-z]+);", said), said[:120]
            assert said == html.unescape(re.sub(r"<[^>]+>", "", caption))
