"""Session 10, area "pages": the watch page's layout and three report leftovers of the session-9 reviews.

Each test measures the page in headless Chromium (DOM geometry, computed styles) or reads the report's files, and checks
it against something the page code does not compute: the rows of the snapshot or of the input, the report's own CSV
tables, plain loops.
- W4a the rank-interval header over its values; W4b no column wider than its content; W4c a skip link to the
  leaderboard (hidden while there is none);
- W5 on a phone the bump chart's right-hand labels name their systems; W6 "show all" at 1440 px fits the box;
- R1 every figure of the report shows the leaderboard's top k, as its Note says; R2 the caption of the interval
  panels points at what the page has; R3 one focus ring on the page's disclosures, links and inputs.
"""

from __future__ import annotations

import csv
import html
import json
import re
import urllib.request
from pathlib import Path

import pytest
from conftest import axe_path
from test_watch_page_s9 import drop, get_json, wait_for, watch_page

from engine.app.dashboard import start_in_background
from engine.sweep import parse_config, run_sweep

REPO = Path(__file__).resolve().parents[2]
GLUE = REPO / "data" / "vnr_glue.csv"

# the extent of an element's content (its text and children), not of its box
CONTENT_BOX = """(e) => { const r = document.createRange(); r.selectNodeContents(e); const b = r.getBoundingClientRect();
  return {left: b.left, right: b.right, width: b.width}; }"""


def axe_violations(pg) -> list[str]:
    axe = axe_path()
    if axe is None:
        pytest.skip("axe-core is not installed")
    pg.add_script_tag(path=str(axe))
    return pg.evaluate("async () => (await axe.run(document)).violations.map(v => v.id + ' ' + v.impact)")


# ------------------------------------------------------------------------------------ the watch page
@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """``votebench watch --rule mean --over tasks --dashboard`` on four models (one with a long name)."""
    tmp = tmp_path_factory.mktemp("watch_s10")
    root, store = tmp / "runs", tmp / "lb.zarr"
    root.mkdir()
    with watch_page(tmp, root, store, "--over", "tasks", "--replicates", "40") as url:
        drop(root, [("org/a", 0.5, 0), ("org/b", 0.45, 1), ("org/c-very-long-model-name-instruct-v2", 0.4, 2),
                    ("org/d", 0.35, 3)])
        wait_for(lambda: get_json(url + "api/snapshot").get("n_systems") == 4)
        yield url


def open_watch(browser, url, width):
    ctx = browser.new_context(viewport={"width": width, "height": 900 if width > 600 else 844}, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto(url)
    pg.wait_for_function("[...document.querySelectorAll('table.lb tbody tr.sys td.n')].length === 4 && "
                         "[...document.querySelectorAll('table.lb tbody tr.sys td.n')].every(td => td.dataset.lo)")
    return ctx, pg


@pytest.mark.parametrize("width", [1440, 390])
def test_the_rank_interval_header_starts_where_its_values_start(watched, browser, width):
    """W4a: the header was right-aligned about 100 px right of its left-aligned values."""
    ctx, pg = open_watch(browser, watched, width)
    head = pg.locator("table.lb th[data-key='0:iv']")
    head_left = head.evaluate(CONTENT_BOX)["left"]
    for td in pg.locator("table.lb tbody tr.sys td.iv").all():  # the first thing shown: the bar, or the numbers on a phone
        first = td.evaluate("td => { const b = [...td.children].find(c => c.offsetWidth > 0); "
                            "return b ? b.getBoundingClientRect().left : null; }")
        left = first if first is not None else td.evaluate(CONTENT_BOX)["left"]
        assert abs(left - head_left) <= 6, (width, left, head_left)
    assert axe_violations(pg) == [], width
    ctx.close()


def test_no_column_of_the_watch_leaderboard_is_wider_than_its_content(watched, browser):
    """W4b: a full-width table of one rule's few columns spread them apart (an empty band of some 300 px)."""
    ctx, pg = open_watch(browser, watched, 1440)
    slack = pg.evaluate("""() => {
      const t = document.querySelector('table.lb'), rows = [t.tHead.rows[1], ...t.tBodies[0].rows];
      const widest = [], box = [];
      rows.forEach(r => [...r.cells].forEach((c, j) => {
        if (!c.offsetWidth) return;
        const rg = document.createRange(); rg.selectNodeContents(c);
        const s = getComputedStyle(c);
        const need = rg.getBoundingClientRect().width + parseFloat(s.paddingLeft) + parseFloat(s.paddingRight);
        widest[j] = Math.max(widest[j] || 0, need); box[j] = c.getBoundingClientRect().width;
      }));
      return box.map((w, j) => w - widest[j]);
    }""")
    # (a few px over the content: a badge's margin, the sort arrow drawn by CSS; the band was some 300 px)
    assert len(slack) >= 6 and max(slack) <= 16, slack
    ctx.close()


def test_a_skip_link_to_the_leaderboard_comes_first(watched, browser):
    """W4c: the first Tab landed on the search box; the dashboard's skip links are the model."""
    ctx, pg = open_watch(browser, watched, 1440)
    pg.keyboard.press("Tab")
    focused = pg.evaluate("(() => { const a = document.activeElement, b = a.getBoundingClientRect(); "
                          "return [a.tagName, a.getAttribute('href'), b.left >= 0 && b.top >= 0 && b.right <= innerWidth]; })()")
    assert focused == ["A", "#board", True]
    pg.keyboard.press("Enter")
    pg.wait_for_function("location.hash === '#board'")
    top = pg.evaluate("document.getElementById('board').getBoundingClientRect().top")
    assert 0 <= top < 200, top  # the leaderboard's card at the top of the window (below the sticky header)
    ctx.close()


def test_before_any_ranking_the_skip_link_to_the_leaderboard_is_hidden(tmp_path, browser):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    root.mkdir()
    with watch_page(tmp_path, root, store) as url:
        ctx = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
        pg = ctx.new_page()
        pg.goto(url)
        pg.wait_for_function("document.body.dataset.version !== undefined")
        assert pg.locator("#board").count() == 0
        pg.wait_for_function("document.querySelector('nav.skip a[href=\"#board\"]').hidden")
        pg.keyboard.press("Tab")
        assert pg.evaluate("document.activeElement.getAttribute('href')") == "#changes-card"
        assert axe_violations(pg) == []
        ctx.close()


# ------------------------------------------------------------------------------------ the sweep dashboard
RULES = ["mean", "borda", "copeland", "minimax"]


@pytest.fixture(scope="module")
def glue_served(tmp_path_factory):
    """The GLUE leaderboard (100 systems, 3 dropped by listwise, long names) under four rules, served."""
    folder = tmp_path_factory.mktemp("glue_s10")
    cfg = parse_config({"seed": 0, "store": str(folder / "g.zarr"),
                        "input": {"path": str(GLUE), "name": "glue", "missing": "listwise"},
                        "rules": [{"name": r} for r in RULES],
                        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 20, "block": 10}]})
    run_sweep(cfg, progress=False)
    url, stop = start_in_background(cfg.store, port=0, poll=0.1, heartbeat=2.0)
    yield url
    stop()


def test_show_all_at_1440_keeps_every_column_inside_the_box(glue_served, browser):
    """W6: with every row shown (the dropped systems' "dropped" cells too), the last column went past the box's edge."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    pg.goto(glue_served)
    pg.wait_for_selector("table.lb tbody tr.sys")
    pg.click("#show-all")
    pg.wait_for_function("document.querySelectorAll('table.lb tbody tr.sys').length === 100")
    geo = pg.evaluate("""() => { const w = document.querySelector('#board .lbwrap'), wr = w.getBoundingClientRect();
      const right = wr.left + w.clientLeft + w.clientWidth;
      const last = [...document.querySelectorAll('table.lb thead tr:nth-child(2) th')].pop().getBoundingClientRect();
      return {right, last: last.right, scroll: w.scrollWidth, client: w.clientWidth}; }""")
    assert geo["last"] <= geo["right"] + 0.5 and geo["scroll"] <= geo["client"], geo
    ctx.close()


def test_on_a_phone_the_bump_chart_names_the_systems_at_both_ends(glue_served, browser):
    """W5: at 390 px the right-hand labels were ranks only."""
    snap = json.loads(urllib.request.urlopen(glue_served + "api/snapshot", timeout=30).read())
    g = next(x for x in snap["groups"] if x["kind"] == "bootstrap")
    last = {s: v for s, v in zip(g["systems"], g["rules"][-1]["rank"])}
    shared = {v: sum(1 for x in last.values() if x == v) for v in last.values()}
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto(glue_served)
    pg.wait_for_selector("#bump svg g.sysline")
    lines = pg.evaluate("""() => { const w = document.querySelector('#bump .bumpwrap'), s = w.querySelector('svg');
      const sr = s.getBoundingClientRect();
      return {wrap: w.clientWidth, svg: sr.width, lines: [...s.querySelectorAll('g.sysline')].map(gr => {
        const t = [...gr.querySelectorAll(':scope > text')];
        return {name: gr.querySelector('title').textContent.split('\\n')[0], right: t[1].textContent,
                box: t.map(e => { const b = e.getBoundingClientRect(); return [b.left - sr.left, b.right - sr.left]; })}; })}; }""")
    assert len(lines["lines"]) == 12 and lines["svg"] <= lines["wrap"], lines["svg"]
    for ln in lines["lines"]:
        v = last[ln["name"]]
        rank, name = ln["right"].split(maxsplit=1)
        assert rank == f"{v}{'=' if shared[v] > 1 else ''}", ln
        # the name, or its first characters cut with an ellipsis: enough to tell whose line ends there
        assert name == ln["name"] or (name.endswith("…") and len(name) >= 8 and ln["name"].startswith(name[:-1])), ln
        assert all(0 <= a and b <= lines["svg"] for a, b in ln["box"]), ln
    assert axe_violations(pg) == []
    ctx.close()


# ------------------------------------------------------------------------------------ the report
REPORT_RULES = ["mean", "borda", "copeland", "minimax", "elo", "median", "dowdall", "promethee2", "vikor"]


@pytest.fixture(scope="module")
def glue_report(tmp_path_factory):
    from engine.app.report import build_report

    out = tmp_path_factory.mktemp("rep_s10") / "report"
    build_report(GLUE, out, rules=REPORT_RULES, missing="listwise", replicates=20, repeats=0, paired_top_k=0,
                 formats=("svg",))
    return out


def svg_systems(path: Path, names: set[str]) -> set[str]:
    """The systems a figure names: a text that is a name, or the start of exactly one name cut with an ellipsis."""
    got = set()
    for t in re.findall(r"<text[^>]*>([^<]+)</text>", path.read_text(encoding="utf-8")):
        t = html.unescape(t)
        starts = [n for n in names if t.endswith("…") and n.startswith(t[:-1])]
        got |= {t} & names or (set(starts) if len(starts) == 1 else set())
    return got


def test_every_figure_shows_the_leaderboards_top_k_as_the_note_says(glue_report):
    """R1: the rankings figure showed the union of every rule's best, the interval figures the primary's top 30."""
    with open(glue_report / "tables" / "leaderboard.csv", newline="") as f:
        board = list(csv.DictReader(f))
    rank = {r["system"]: float(r["rank"]) for r in board}
    by_rank = sorted(rank, key=rank.get)
    assert rank[by_rank[29]] < rank[by_rank[30]], "a tie across the cut: the top 30 would not be one set"
    top = set(by_rank[:30])
    names = set(rank)
    for fig in ("rankings", "rank_heatmap", "critical_difference", "promethee_flows", "win_matrix", "intervals",
                "intervals_rules"):
        shown = svg_systems(glue_report / "figures" / f"{fig}.svg", names)
        assert shown == top, (fig, sorted(shown - top), sorted(top - shown))
    page = (glue_report / "index.html").read_text(encoding="utf-8")
    note = next(n for n in re.findall(r"<li>([^<]*)</li>", page) if n.startswith("Figures show"))
    assert f"top 30 of {len(names)} systems" in note and "borda" in note and "union" not in note, note


def test_the_interval_panels_caption_points_at_what_the_page_has(glue_report, browser):
    """R2: the caption said "in the table of intervals above", a table the page does not show (only its download)."""
    page = (glue_report / "index.html").read_text(encoding="utf-8")
    cap = html.unescape(re.search(r'<figure id="fig-intervals_rules">.*?<figcaption>(.*?)<br>', page, re.S).group(1))
    left = re.search(r"Not drawn \((.*?)\): (.*?)(?: \(degenerate rules among them\))?\.$", cap)
    assert left is not None, cap
    with open(glue_report / "tables" / "intervals.csv", newline="") as f:
        in_download = {r["rule"] for r in csv.DictReader(f)}
    for rule in left.group(2).split(", "):
        assert rule.replace(" ⚠", "").split("=")[0] in in_download, rule
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    pg.goto((glue_report / "index.html").as_uri())
    captions = pg.eval_on_selector_all("table caption", "cs => cs.map(c => c.textContent)")
    shown_interval_table = any("Rank intervals" in c for c in captions)
    assert ("table" in left.group(1)) == shown_interval_table, (left.group(1), captions)
    # the download it names: a line above the figure, titled as the caption says, with the CSV read above
    line = pg.locator("p.export", has=pg.locator("a[href='tables/intervals.csv']"))
    assert line.count() == 1 and "download" in left.group(1)
    title = line.inner_text().split(";")[0]
    assert title in left.group(1), (title, left.group(1))
    above = line.evaluate("(p) => !!(p.compareDocumentPosition(document.getElementById('fig-intervals_rules')) & "
                          "Node.DOCUMENT_POSITION_FOLLOWING)")
    assert above
    ctx.close()


@pytest.mark.parametrize("width", [1440, 390])
def test_one_focus_ring_on_the_reports_disclosures_links_and_inputs(glue_report, browser, width):
    """R3: Settings, Contents and Notes (<summary>) had the browser's 1 px auto outline, the rest a 2 px blue ring."""
    ctx = browser.new_context(viewport={"width": width, "height": 900 if width > 600 else 844}, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto((glue_report / "index.html").as_uri())
    rings = {}
    for _ in range(80):  # the first stops of the keyboard's Tab order, up to a link and the search box
        pg.keyboard.press("Tab")
        tag, text, ring = pg.evaluate("(() => { const e = document.activeElement, s = getComputedStyle(e); "
                                      "return [e.tagName, e.textContent.trim().slice(0, 20), "
                                      "[s.outlineStyle, s.outlineWidth, s.outlineColor].join(' ')]; })()")
        rings.setdefault(tag, set()).add(ring)
        if {"SUMMARY", "A", "INPUT"} <= set(rings):
            break
    assert {"SUMMARY", "A", "INPUT"} <= set(rings), rings
    every = set().union(*rings.values())
    assert len(every) == 1, rings
    style, w, _ = next(iter(every)).split(" ", 2)
    assert style == "solid" and float(w.removesuffix("px")) >= 2
    assert axe_violations(pg) == [], width
    ctx.close()

