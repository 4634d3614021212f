"""Report speed and look (issues 24 and 26): batched Wilcoxon tests against scipy one pair at a time, the
one-instance shortcut of the exact instance sums, and the report page in Chromium (sortable tables, no sideways
scroll at phone width)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.stats import wilcoxon

from engine.kernels.exact import digits_to_float, full_digit_sums
from engine.kernels.significance import holm, wilcoxon_holm, wilcoxon_pvalues
from engine.labelled.core import instance_sums


def scipy_one_by_one(D):
    """p-values of scipy.stats.wilcoxon called on each column alone (1 for a column of zeros)."""
    out = []
    for j in range(D.shape[1]):
        if not np.any(D[:, j] != 0):
            out.append(1.0)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(float(wilcoxon(D[:, j]).pvalue))
    return np.array(out)


@pytest.mark.parametrize("n", [3, 6, 13, 14, 30, 50, 51, 80])
@pytest.mark.parametrize("kind", ["continuous", "integers", "mixed"])
def test_batched_wilcoxon_equals_scipy_pair_by_pair(n, kind):
    """Every column's method (exact, permutation, normal approximation) is chosen as scipy's ``auto`` does alone."""
    rng = np.random.default_rng(n)
    # with ties or zeros up to 13 tasks scipy enumerates 2**n sign patterns per column (seconds each): fewer columns there
    cols = 40 if kind == "continuous" or n > 13 else 2 if n == 13 else 4
    if kind == "continuous":
        D = rng.normal(size=(n, cols))
    elif kind == "integers":  # zeros and ties nearly everywhere
        D = rng.integers(-3, 4, size=(n, cols)).astype(float)
    else:
        D = rng.normal(size=(n, cols))
        D[:, ::3] = np.round(D[:, ::3])
    D[:, 0] = 0.0
    np.testing.assert_allclose(wilcoxon_pvalues(D), scipy_one_by_one(D), rtol=1e-12, atol=0)


def test_wilcoxon_holm_matrix_against_a_loop():
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(10, 5)), 1)  # ties: scipy enumerates 2**10 sign patterns per pair
    X[:, 4] = X[:, 2]  # a pair with no difference
    P, adj, reject = wilcoxon_holm(X, 0.05)
    np.testing.assert_array_equal(P, P.T)
    for i in range(5):
        for j in range(i + 1, 5):
            assert P[i, j] == pytest.approx(scipy_one_by_one((X[:, i] - X[:, j])[:, None])[0], rel=1e-12)
    iu = np.triu_indices(5, 1)
    np.testing.assert_allclose(adj[iu], holm(P[iu]))
    assert P[2, 4] == 1.0 and not reject[2, 4]


def test_one_instance_sum_is_the_digit_sum():
    """The one-instance shortcut of instance_sums gives the bits the exact digit sums give (NaN = 0, no -0.0)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40, 15, 1, 25)) * 10.0 ** rng.uniform(-8, 8, size=(40, 15, 1, 25))
    a[a < -2] = np.nan
    a[0, 0, 0, 0] = -0.0
    d, top = full_digit_sums(a, -2)
    want = digits_to_float(d, top)
    got = instance_sums(a)
    assert np.array_equal(got, want)
    assert not np.signbit(got[got == 0]).any()


# ------------------------------------------------------------------------------------ the page in Chromium


@pytest.fixture(scope="module")
def report_page(tmp_path_factory):
    import engine
    from engine.app.report import build_report

    rng = np.random.default_rng(5)
    names = [f"a system with a rather long name {i:02d}" for i in range(25)]
    X = np.round(rng.normal(size=(25, 8)) + np.linspace(2, 0, 25)[:, None], 2)
    scores = engine.scores_from_array(X, systems=names)
    out = tmp_path_factory.mktemp("rep") / "report"
    return build_report(scores, out, rules=["borda", "copeland", "plurality"], replicates=0, repeats=0, paired_top_k=0,
                        formats=("png",))




@pytest.mark.parametrize("width,height", [(390, 844), (1440, 900)])
def test_report_page_fits_without_sideways_scroll(browser, report_page, width, height):
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.goto(report_page.as_uri())
    assert pg.evaluate("document.documentElement.scrollWidth") <= width
    pg.close()


def test_report_tables_sort_by_mouse_and_keyboard(browser, report_page):
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(report_page.as_uri())
    table = pg.locator("#t-rankings table")  # the rankings by rule (the leaderboard comes first)
    heads = table.locator("thead th")
    col = [i for i in range(heads.count()) if heads.nth(i).inner_text().startswith("copeland")][0]

    def column(c):
        return [r.strip() for r in table.locator(f"tbody tr td:nth-child({c + 1})").all_inner_texts()]

    def lead(v):  # the rank before '=' / arrows
        return float(v.split()[0].rstrip("="))

    heads.nth(col).locator("button").click()
    assert heads.nth(col).get_attribute("aria-sort") == "ascending"
    got = [lead(v) for v in column(col)]
    assert got == sorted(got)
    heads.nth(col).locator("button").click()
    assert heads.nth(col).get_attribute("aria-sort") == "descending"
    assert [lead(v) for v in column(col)] == sorted(got, reverse=True)
    heads.nth(0).locator("button").focus()  # by keyboard: the header is a button
    pg.keyboard.press("Enter")
    assert heads.nth(0).get_attribute("aria-sort") == "ascending"
    assert heads.nth(col).get_attribute("aria-sort") == "none"
    names = column(0)
    assert names == sorted(names, key=lambda s: s.lower()) or names == sorted(names)
    assert not errors
    pg.close()


def test_degenerate_rule_listed_and_not_coloured(report_page):
    """plurality on 8 tasks and 25 systems: at most 8 systems win a task, so at least 17 share the last rank
    (counted here from the rankings CSV): listed as degenerate, its column not coloured as rank changes."""
    import csv
    import re

    rows = list(csv.DictReader((report_page.parent / "tables" / "rankings.csv").open(encoding="utf-8")))
    ranks = [float(r["plurality"]) for r in rows]
    assert 2 * max(ranks.count(v) for v in set(ranks)) > len(ranks)
    assert all(r["plurality_change"] == "" for r in rows)  # a degenerate rule's ties are not rank moves: left blank
    page = report_page.read_text(encoding="utf-8")
    assert "plurality: degenerate ranking" in page
    table = page[page.index("Rankings by rule"):]
    table = table[:table.index("</table>")]
    heads = re.findall(r'<button type="button" class="sort">([^<]*)</button>', table)
    col = next(i for i, h in enumerate(heads) if h.startswith("plurality"))
    assert "\u26a0" in heads[col]
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        cells = re.findall(r"<td([^>]*)>", row)
        assert "up" not in cells[col] and "down" not in cells[col]


@pytest.mark.parametrize("n", [2, 3, 12])
def test_win_matrix_title_and_labels_inside_the_figure(n):
    """Every text of the win matrix (title, axis and colour-bar labels) lies inside the drawn figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from engine.app import plots

    W = np.triu(np.ones((n, n)), 1) * 3.0
    fig = plots.win_matrix_figure(W, np.zeros((n, n)), [f"system {i}" for i in range(n)], title="Pairwise wins")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert any(t.get_text() == "Pairwise wins" for t in texts)
    for t in texts:
        e = t.get_window_extent(renderer)
        assert e.x0 >= box.x0 - 1 and e.x1 <= box.x1 + 1 and e.y0 >= box.y0 - 1 and e.y1 <= box.y1 + 1, t.get_text()
