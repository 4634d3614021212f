"""The report's s7 visual review (issue 26): figures legible at 390 and 1440 px, sort order, export links, the same
rank vocabulary in every table, the primary rule said once, no absolute path in the page.

Checked against things the report does not compute: the font sizes written into the SVG files and the PNG sizes read
from their headers (CSS px of a text = points x 110 / 72 x the image's scale in the page), a headless browser's layout
(the image a phone gets, its rendered size, the page's scroll width, computed font sizes), axe-core, the rows sorted
by Python from the exported CSV, and the shared ranks counted by a loop over the exported ranks.
"""

from __future__ import annotations

import csv
import html
import io
import re
import struct
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import xarray as xr

from engine.app import plots

AXE = Path("/tmp/dash-axe/node_modules/axe-core/axe.min.js")
PNG_DPI = 110  # the page's PNG resolution (render.py): a point is 110 / 72 CSS px where an image is shown 1:1
MIN_PX = 9.0  # the review's floor for figure text in the page


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def svg_font_sizes(text: str) -> list[float]:
    """Every font size (points) of the text elements of a matplotlib SVG (svg.fonttype none: real <text> elements)."""
    return [float(v) for v in re.findall(r"font-size:\s*([0-9.]+)px", text)] + \
        [float(v) for v in re.findall(r"font:[^;\"]*?([0-9.]+)px", text)]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """12 systems with long names (ties under borda: scores on a few levels), 6 tasks; read from an absolute path."""
    from engine.app.report import build_report

    rng = np.random.default_rng(7)
    X = rng.integers(0, 4, size=(12, 6)).astype(float)
    X[:2] = X[0]  # two systems identical: a shared rank under every rule
    names = [f"a rather long system name number {i:02d}" for i in range(12)]
    d = tmp_path_factory.mktemp("s7")
    src = d / "ties.csv"
    src.write_text("system," + ",".join(f"t{j}" for j in range(6)) + "\n"
                   + "".join(f"{n}," + ",".join(f"{v:g}" for v in row) + "\n" for n, row in zip(names, X)),
                   encoding="utf-8")
    assert src.is_absolute()
    return build_report(src, d / "r", rules=["borda", "copeland"], replicates=25, repeats=3, paired_top_k=8,
                        formats=("png", "svg"))


def figures_of(index: Path) -> list[str]:
    """The stems of the figures the page shows (its <img> elements)."""
    return re.findall(r'<img src="figures/([^"]+)\.png"', index.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------ figures, from their files
def test_every_wide_figure_is_shown_unscaled_with_text_of_at_least_9_px(report):
    stems = figures_of(report)
    assert len(stems) >= 6, stems
    for stem in stems:
        w, _ = png_size(report.parent / "figures" / f"{stem}.png")
        scale = min(1.0, 1200 / w)  # the page's column is 1200 px at 1440
        sizes = svg_font_sizes((report.parent / "figures" / f"{stem}.svg").read_text(encoding="utf-8"))
        assert sizes, stem
        assert min(sizes) * PNG_DPI / 72 * scale >= MIN_PX, (stem, min(sizes), w)


def test_every_figure_has_a_phone_png_that_fits_390_px(report):
    page = report.read_text(encoding="utf-8")
    for stem in figures_of(report):
        narrow = report.parent / "figures" / f"{stem}.narrow.png"
        if not narrow.exists():  # the wide figure itself is legible in a phone's 370 px column
            w, _ = png_size(report.parent / "figures" / f"{stem}.png")
            sizes = svg_font_sizes((report.parent / "figures" / f"{stem}.svg").read_text(encoding="utf-8"))
            assert min(sizes) * PNG_DPI / 72 * min(1.0, 370 / w) >= MIN_PX, stem
            continue
        assert png_size(narrow)[0] <= 370, stem  # the 390 px screen's column: shown 1:1, never shrunk
        assert f'<source media="(max-width: 700px)" srcset="figures/{stem}.narrow.png">' in page


def _narrow_figures():
    rng = np.random.default_rng(3)
    n, m = 30, 24
    names = [f"system with a long descriptive name {i}" for i in range(n)]
    rules = [f"rule_number_{j}" for j in range(m)]
    R = np.argsort(np.argsort(rng.normal(size=(n, m)), axis=0), axis=0) + 1.0
    ranks = xr.DataArray(R, dims=("system", "rule"), coords={"system": names, "rule": rules})
    W = rng.integers(0, 10, size=(n, n)).astype(float)
    lo, hi = np.maximum(R.T[:5] - 2, 1), R.T[:5] + 2
    return [
        ("rank_change", lambda nw: plots.rank_change_figure(ranks, baseline=rules[0], narrow=nw)),
        ("rank_heatmap", lambda nw: plots.rank_heatmap_figure(ranks, narrow=nw)),
        ("flows", lambda nw: plots.promethee_flows_figure(rng.uniform(size=n), rng.uniform(size=n), names, narrow=nw)),
        ("wins", lambda nw: plots.win_matrix_figure(W, np.zeros((n, n)), names, narrow=nw)),
        ("cd", lambda nw: plots.critical_difference_figure(np.sort(rng.uniform(1, n, size=n)), names, cd=3.0, narrow=nw)),
        ("intervals", lambda nw: plots.rank_interval_figure(R.T[:5], lo, hi, names, rules[:5], narrow=nw)),
        ("subsets", lambda nw: plots.subset_curve_figure(np.arange(1, 15), rng.uniform(size=(m, 14)),
                                                         rng.uniform(0, 0.1, size=(m, 14)), rules, narrow=nw)),
    ]


@pytest.mark.parametrize("kind", [k for k, _ in _narrow_figures()])
def test_30_systems_24_rules_fit_both_widths_with_legible_text(kind):
    """The widest case of a report (top-k 30, every rule): the saved SVG's size and its smallest text."""
    draw = dict(_narrow_figures())[kind]
    for narrow, max_px in ((False, 1200), (True, 370)):
        fig = draw(narrow)
        buf = io.StringIO()
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as <text> elements with their sizes
            fig.savefig(buf, format="svg")
        svg = buf.getvalue()
        width_pt = float(re.search(r'<svg[^>]*width="([0-9.]+)pt"', svg).group(1))
        px = width_pt / 72 * PNG_DPI
        assert px <= max_px + 1, (kind, narrow, px)
        assert min(svg_font_sizes(svg)) * PNG_DPI / 72 >= MIN_PX, (kind, narrow)
        # nothing drawn outside the figure (a cut-off axis label, title or legend): the tight box of what is drawn
        tight = fig.get_tightbbox(fig.canvas.get_renderer())
        w_in, h_in = fig.get_size_inches()
        assert tight.x0 >= -0.02 and tight.y0 >= -0.02 and tight.x1 <= w_in + 0.02 and tight.y1 <= h_in + 0.02, \
            (kind, narrow, tight, (w_in, h_in))


# ---------------------------------------------------------------------------------------------- the page's HTML
def test_no_absolute_path_in_the_page(report):
    page = report.read_text(encoding="utf-8")
    assert str(report.parent.parent) not in page
    settings = page[page.index("<dl>"):page.index("</dl>")]
    assert "<dt>input</dt><dd>ties.csv</dd>" in settings


def test_the_primary_rule_sentence_is_said_once(report):
    from engine.app.report import PRIMARY_DEFAULT

    page = html.unescape(report.read_text(encoding="utf-8"))
    assert page.count(PRIMARY_DEFAULT) == 1


def test_shared_ranks_carry_the_same_mark_in_every_table(report):
    """'=' after a rank exactly where another system has the same rank (counted from the exported CSV)."""
    page = report.read_text(encoding="utf-8")
    with (report.parent / "tables" / "leaderboard.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rank = {r["system"]: r["rank"] for r in rows}
    counts: dict[str, int] = {}
    for r in rank.values():
        counts[r] = counts.get(r, 0) + 1
    want = {s: r + ("=" if counts[r] > 1 else "") for s, r in rank.items()}
    assert any(v.endswith("=") for v in want.values())
    for table in ("t-leaderboard", "t-paired_letters"):
        part = page[page.index(f'id="{table}"'):]
        part = part[:part.index("</table>")]
        cells = [[html.unescape(c) for c in re.findall(r"<td[^>]*>([^<]*)</td>", tr)]
                 for tr in re.findall(r"<tr>(.*?)</tr>", part[part.index("<tbody>"):])]
        assert cells
        for c in cells:
            assert c[1] == want[c[0]], (table, c)


def test_export_links_name_their_table_and_format(report):
    page = report.read_text(encoding="utf-8")
    for fmt, name in (("csv", "CSV"), ("json", "JSON")):
        assert (f'<a href="tables/leaderboard.{fmt}" download aria-label="Leaderboard by borda as {name}">{name}</a>'
                in page)
    assert "[CSV" not in page


# ---------------------------------------------------------------------------------------------- in a browser
def test_sort_puts_the_best_first_and_names_are_not_doubled(browser, report):
    with (report.parent / "tables" / "leaderboard.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        pg.goto(report.as_uri())
        names = "() => [...document.querySelectorAll('#t-leaderboard tbody tr')].map(r => r.cells[0].textContent)"
        th = pg.locator("#t-leaderboard thead th")
        th.nth(4).locator("button").click()  # score: higher is better
        score = {r["system"]: float(r["score"]) for r in rows}
        got = pg.evaluate(names)
        assert sorted(got) == sorted(score) and [score[s] for s in got] == sorted(score.values(), reverse=True)
        assert th.nth(4).get_attribute("aria-sort") == "descending"
        th.nth(4).locator("button").click()
        assert th.nth(4).get_attribute("aria-sort") == "ascending"
        th.nth(1).locator("button").click()  # rank: 1 is best
        assert th.nth(1).get_attribute("aria-sort") == "ascending"
        got = pg.evaluate(names)
        assert [int(next(r["rank"] for r in rows if r["system"] == s)) for s in got] == \
            sorted(int(r["rank"]) for r in rows)
        # each header's button is named by its label once: no sort arrow, no second copy
        for label in ("rank", "score"):
            assert pg.get_by_role("button", name=label, exact=True).first.is_visible()
        snap = pg.locator("#t-leaderboard thead").aria_snapshot()
        assert "\u25b2" not in snap and "\u25bc" not in snap, snap
        region = pg.locator("#t-leaderboard")
        assert region.get_attribute("aria-label") is None and region.get_attribute("aria-labelledby")
    finally:
        pg.close()


@pytest.mark.parametrize("width,height", [(390, 844), (1440, 900)])
def test_figures_and_links_are_legible_and_the_page_fits(browser, report, width, height):
    pg = browser.new_page(viewport={"width": width, "height": height})
    try:
        pg.goto(report.as_uri())
        pg.wait_for_load_state("load")
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        imgs = pg.evaluate("""() => [...document.querySelectorAll('figure img')].map(i => ({src: i.currentSrc,
            nat: i.naturalWidth, shown: i.clientWidth}))""")
        assert len(imgs) >= 6
        narrow = sum(im["src"].endswith(".narrow.png") for im in imgs)
        assert narrow == (len(list(report.parent.glob("figures/*.narrow.png"))) if width == 390 else 0)
        for im in imgs:
            if im["src"].endswith(".narrow.png") or width == 1440:
                assert im["shown"] >= im["nat"] - 1, im  # shown 1:1 (never shrunk): the text keeps its >= 9 px
            else:
                assert im["shown"] >= 0.9 * im["nat"], im  # a wide figure that fits a phone: 9.9 px text to >= 9 px
        sizes = pg.evaluate("() => [...document.querySelectorAll('.export a')].map(a => "
                            "parseFloat(getComputedStyle(a).fontSize))")
        assert sizes and min(sizes) >= 12.5, sizes
    finally:
        pg.close()


@pytest.mark.skipif(not AXE.exists(), reason="axe-core is not installed at /tmp/dash-axe")
@pytest.mark.parametrize("width,height", [(390, 844), (1440, 900)])
def test_axe_core_finds_no_serious_violation(browser, report, width, height):
    ctx = browser.new_context(bypass_csp=True, viewport={"width": width, "height": height})
    try:
        pg = ctx.new_page()
        pg.goto(report.as_uri())
        pg.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        found = pg.evaluate("async () => (await axe.run()).violations.map(v => [v.id, v.impact, v.nodes.length])")
        assert not [v for v in found if v[1] in ("serious", "critical")], found
    finally:
        ctx.close()


def test_cut_names_stay_distinct_when_they_share_a_prefix():
    """Names alike in their first 16 characters keep their ends on a phone (checked on the drawn tick labels)."""
    names = [f"model-with-a-longish-name-{i:02d}" for i in range(12)]
    fig = plots.promethee_flows_figure(np.linspace(0, 1, 12), np.linspace(1, 0, 12), names, narrow=True)
    shown = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(set(shown)) == 12 and all(len(t) <= plots.NARROW_CHARS for t in shown), shown
    assert sorted(t[-2:] for t in shown) == sorted(n[-2:] for n in names)
