"""The dashboard's statistics and page (issue 26): degenerate rankings flagged, Rank(UB), score intervals, the letter
groups of the sorted rule, the run's own state under --overwrite, elapsed time and ETA; and, in headless Chromium,
keyboard operation, aria-sort, ties reachable without hover, CSV/JSON export of what is shown, the bump chart's ties,
phone width (no sideways page scroll, sticky header row and system column) and axe-core (no serious or critical
violation).

The browser tests need ``/usr/bin/chromium`` and the ``playwright`` package; the axe-core test also needs
``axe.min.js`` (``npm install axe-core``), found from ``$AXE_CORE_JS`` or ``node_modules/axe-core/axe.min.js`` under the
current folder or ``$TMPDIR``; each is skipped, saying which is missing, without them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import axe_path

from engine.app.dashboard import LiveStore, start_in_background
from engine.labelled.comparison import degenerate_ranking
from engine.sweep import parse_config, run_sweep

N_SYS, N_TASKS, N_TIED = 11, 5, 6
RULES = ("borda", "plurality", "mean")


# ------------------------------------------------------------------------------------ independent computations
def brute_ties(rank):
    """The largest number of systems sharing one rank, by plain loops."""
    vals = [v for v in rank if v is not None]
    best = 0
    for v in vals:
        best = max(best, sum(1 for w in vals if w == v))
    return best, len(vals)


def brute_rank_ub(reps, level=0.95):
    """Rank(UB), paired, by plain loops over the replicate scores (R, S): 1 + the systems scoring above system i in at
    least ``level`` of the replicates."""
    S = len(reps[0])
    return [1.0 + sum(1 for j in range(S) if j != i and sum(row[j] > row[i] for row in reps) / len(reps) >= level)
            for i in range(S)]


def percentile(values, q):
    """numpy's default ('linear') percentile by hand: sorted values, interpolated at q/100 * (n - 1)."""
    v = sorted(x for x in values if x == x)
    pos = q / 100 * (len(v) - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def test_degenerate_flag_matches_a_brute_force_tie_count():
    rng = np.random.default_rng(3)
    cases = [[1, 2, 2, 2], [1, 2, 3, 4], [1, 1, 3, 3], [1, 5, 5, 5, 5, 5, 5, 5, 5], [1, 1], [None, 1, 2, 2, 2]]
    for _ in range(300):
        n = int(rng.integers(1, 12))
        scores = rng.integers(0, int(rng.integers(1, 6)), size=n)
        cases.append([int(1 + (scores > s).sum()) for s in scores])  # competition ranks of tied scores
    for rank in cases:
        got = degenerate_ranking(rank)
        big, n = brute_ties(rank)
        assert (got is not None) == (n >= 3 and 2 * big > n), rank
        if got is not None:
            assert got["tied"] == big and got["of"] == n
            assert str(big) in got["why"]


# ------------------------------------------------------------------------------------ a store with a degenerate rule
def write_input(folder: Path) -> Path:
    """N_SYS systems on N_TASKS tasks; plurality (tasks won) leaves most systems at 0 wins: degenerate."""
    rng = np.random.default_rng(8)
    X = np.round(rng.uniform(0, 1, size=(N_SYS, N_TASKS)) + np.linspace(0.5, 0, N_SYS)[:, None], 3)
    X[0] = X.max(axis=0) + 0.1  # one system wins every task
    lines = ["system," + ",".join(f"task{j}" for j in range(N_TASKS))]
    lines += [f"model-{i:02d}," + ",".join(f"{v:.3f}" for v in row) for i, row in enumerate(X)]
    path = folder / "eleven.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def config(folder: Path, store: Path, replicates: int = 40):
    return parse_config({
        "seed": 2, "store": str(store), "input": {"path": str(write_input(folder)), "name": "eleven"},
        "rules": [{"name": r} for r in RULES],
        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": replicates, "block": 10}]})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    cfg = config(folder, folder / "s.zarr")
    run_sweep(cfg, progress=False)
    return cfg


def test_snapshot_flags_the_degenerate_rule_and_gives_score_intervals(store):
    import zarr

    live = LiveStore(store.store, agree_budget=None)
    live.update(strict=True)
    snap = live.snapshot()
    g = snap["groups"][0]
    grp = zarr.open_group(str(store.store), mode="r")[g["name"]]
    stored_rank = np.asarray(grp["rank"][...])
    reps = np.asarray(grp["replicate_score"][...], dtype=np.float64)
    for ri, r in enumerate(g["rules"]):
        big, n = brute_ties(list(stored_rank[ri]))
        assert (r["degenerate"] is not None) == (2 * big > n), r["rule"]
        for i in range(N_SYS):
            assert r["score_low"][i] == pytest.approx(percentile(reps[ri, :, i], 2.5))
            assert r["score_high"][i] == pytest.approx(percentile(reps[ri, :, i], 97.5))
        assert r["rank_ub"] == brute_rank_ub(reps[ri])
    assert any(v > 1 for r in g["rules"] for v in r["rank_ub"] if v is not None)  # the bound separates someone
    assert [r["degenerate"] is not None for r in g["rules"]] == [False, True, False]  # plurality: 10 systems win 0 tasks
    assert g["rules"][0]["unit"].startswith("Borda points")
    stored = json.loads(zarr.open_group(str(store.store), mode="r").attrs["config"])["input"]
    import inspect

    from engine.labelled.core import prepare

    default = inspect.signature(prepare).parameters["missing"].default
    assert snap["input"]["eleven"]["missing"] == stored.get("missing", default)
    assert snap["input"]["eleven"]["level"] == stored.get("level")


def test_agreement_cells_not_measured_yet_are_pending_not_missing(store):
    """The race behind a "–" cell: a server on a finished store measures tau between rules over several polls; a
    cell without a value before then is listed as pending (the page shows "computing"), and every cell is filled
    once the server is no longer busy."""
    live = LiveStore(store.store, agree_budget=1e-9)  # one pair per poll: the catching up is seen
    live.update(strict=True)
    polls = 0
    while True:
        agr = live.snapshot()["groups"][0]["agreement"]
        R = len(agr["rules"])
        pending = {tuple(p) for p in agr["pending"]}
        for i in range(R):
            for j in range(R):
                if i != j and agr["replicates"][i][j] is None:
                    assert (min(i, j), max(i, j)) in pending, (polls, i, j)
        if not live.busy:
            assert not pending and all(agr["replicates"][i][j] is not None for i in range(R) for j in range(R))
            break
        assert pending  # busy means tau work left, said on the page
        live.update()
        polls += 1
    assert polls >= 1


def test_letter_groups_are_of_the_rule_the_board_is_sorted_by(store):
    import zarr

    live = LiveStore(store.store, agree_budget=None)
    live.update(strict=True)
    g = live.snapshot()["groups"][0]
    grp = zarr.open_group(str(store.store), mode="r")[g["name"]]
    rank = np.asarray(grp["rank"][...])
    systems = [str(s) for s in grp["system"][...]]
    for ri, rule in enumerate(RULES):
        got = live.letter_groups("eleven", g["name"], rule)
        best = sorted(range(N_SYS), key=lambda i: (rank[ri, i], systems[i]))[:15]
        assert sorted(got["systems"]) == sorted(systems[i] for i in best)
        assert got["by_rule"] == rule
        for s, rr in zip(got["systems"], got["rule_rank"]):  # rule_rank: position in the rule's order
            assert [systems[i] for i in best].index(s) + 1 == rr


def test_overwrite_never_shows_the_previous_store_and_times_the_run(tmp_path):
    cfg = config(tmp_path, tmp_path / "o.zarr")
    run_sweep(cfg, progress=False)
    done = LiveStore(cfg.store, agree_budget=None)
    done.update()
    assert done.snapshot()["status"] == "complete"
    live = LiveStore(cfg.store, agree_budget=None, replaces=True, run=True)
    live.update()
    snap = live.snapshot()
    assert snap["status"] == "waiting" and "--overwrite" in snap["message"] and not snap["groups"]
    assert snap["timing"]["run"] is True
    run_sweep(cfg, progress=False, max_blocks=1, overwrite=True)
    live.update()
    seen_a = time.time()
    snap = live.snapshot()  # the new store first seen here: the rate of blocks is measured from now
    seen_b = time.time()
    assert snap["status"] == "partial" and snap["progress"]["blocks_done"] == 1
    t0 = time.time()
    run_sweep(cfg, progress=False, max_blocks=2)
    live.update()
    snap = live.snapshot()
    prog, timing = snap["progress"], snap["timing"]
    assert prog["blocks_done"] == 3 and timing["blocks_since"] == 2
    left = prog["blocks_total"] - 3  # blocks left, at the seconds per block seen since the store was first seen
    assert left * (timing["now"] - seen_b) / 2 <= timing["eta_seconds"] <= left * (timing["now"] - seen_a) / 2
    assert timing["now"] >= t0 and timing["started"] <= t0


# ------------------------------------------------------------------------------------ the page in Chromium






@pytest.fixture(scope="module")
def served(store):
    url, stop = start_in_background(store.store, port=0, poll=0.1, heartbeat=2.0)
    yield url
    stop()


def open_page(browser, url, width=1440, height=900, **kw):
    pg = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True, **kw)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.goto(url)
    pg.wait_for_selector("table.lb tbody tr.sys")
    pg.wait_for_function("() => !document.querySelector('table.lb td.n') || "
                         "!document.querySelector('table.lb td.n').textContent.includes('…')")
    # a server opened on a finished store sends the rankings first and the agreement between rules as it catches
    # up: the cells still being measured say so ("…", class pending) until the next updates fill them
    pg.wait_for_function("() => !document.querySelector('#agreement td.pending')")
    pg.errors = errors
    return pg


def test_page_flags_the_degenerate_rule_everywhere(browser, served, store):
    pg = open_page(browser, served)
    try:
        warn = pg.locator("#board .warn")
        assert warn.count() == 1 and "plurality is degenerate" in warn.inner_text()
        snap = json.loads(pg.evaluate("async () => JSON.stringify(await (await fetch('api/snapshot')).json())"))
        plur = snap["groups"][0]["rules"][1]
        big, n = brute_ties(plur["rank"])
        text = warn.inner_text()
        assert (f"{big} of {n} systems tied" in text) or (big == n - 1 and f"the other {big} systems all tied" in text)
        assert "⚠" in pg.locator("table.lb thead th.group").nth(1).inner_text()
        # agreement matrix: every off-diagonal cell of plurality's row and column is marked, no other
        for m in range(2):
            cells = pg.locator("#agreement table.m").nth(m).locator("tr")
            for i in range(1, 4):
                row = cells.nth(i).locator("td").all_inner_texts()
                for j, txt in enumerate(row, start=1):
                    assert txt.endswith("†") == (i != j and 2 in (i, j)), (m, i, j, txt)
        # bump chart: the systems tied under plurality share one point in its column
        ys = pg.evaluate("""() => [...document.querySelectorAll('svg.bump g.sysline')].map(g =>
                            [...g.querySelectorAll('circle')].map(c => Number(c.getAttribute('cy'))))""")
        ranks = {s: plur["rank"][i] for i, s in enumerate(snap["groups"][0]["systems"])}
        shown = pg.evaluate("() => [...document.querySelectorAll('svg.bump g.sysline title')].map(t => t.textContent.split('\\n')[0])")
        by_rank: dict[int, set[float]] = {}
        for s, y in zip(shown, ys):
            by_rank.setdefault(ranks[s], set()).add(y[1])
        assert all(len(v) == 1 for v in by_rank.values())  # one height per plurality rank: ties drawn as ties
        assert len({y for v in by_rank.values() for y in v}) == len(by_rank)
        assert not pg.errors, pg.errors
    finally:
        pg.close()


def test_statistics_per_row(browser, served, store):
    pg = open_page(browser, served)
    try:
        snap = json.loads(pg.evaluate("async () => JSON.stringify(await (await fetch('api/snapshot')).json())"))
        g = snap["groups"][0]
        heads = pg.locator("table.lb thead tr").nth(1).locator("th").all_inner_texts()
        assert heads[:2] == ["system", "judges · cells"]
        assert heads.count("Rank(UB)") == len(RULES) and heads.count("score 95% CI") == len(RULES)
        borda = g["rules"][0]
        for tr in pg.locator("table.lb tbody tr.sys").all():
            name = tr.get_attribute("data-system")
            i = g["systems"].index(name)
            cells = tr.locator("td").all_inner_texts()
            assert cells[1] == f"{N_TASKS} · {N_TASKS}"  # every task scored, one instance each
            assert cells[2] == f"{borda['score'][i]:.1f}" or float(cells[2]) == borda["score"][i]
            assert cells[6] == f"{borda['rank_ub'][i]:g}"
            if tr.locator("td").nth(4).inner_text().endswith("="):
                mates = [s for j, s in enumerate(g["systems"]) if j != i and borda["rank"][j] == borda["rank"][i]]
                assert all(m in tr.locator("td").nth(4).get_attribute("title") for m in mates)
        # a score column prints the fewest decimals (0 for whole scores, else at least 1: half points) at which
        # systems of different ranks print different texts, the same count in the whole column, running or finished
        for r in g["rules"]:
            col = 2 + 5 * g["rules"].index(r)
            vals = [(v, k) for v, k in zip(r["score"], r["rank"]) if v is not None]
            want = 0 if all(float(v).is_integer() for v, _ in vals) else 1
            while want < 6 and any(f"{a:.{want}f}" == f"{b:.{want}f}" and ra != rb for a, ra in vals for b, rb in vals):
                want += 1
            for tr in pg.locator("table.lb tbody tr.sys").all():
                i = g["systems"].index(tr.get_attribute("data-system"))
                txt = tr.locator("td").nth(col).inner_text()
                d = len(txt.split(".")[1]) if "." in txt else 0
                assert d == want, (r["rule"], txt)
                assert float(txt) == pytest.approx(r["score"][i], abs=0.5 * 10 ** -d + 1e-12)
        assert "3 rules" in pg.inner_text("#progress-text") and "40 replicates × 3 rules" in pg.inner_text("#progress-text")
        assert "missing scores" in pg.inner_text("#board .settings")
    finally:
        pg.close()


def test_keyboard_sort_and_drill_down(browser, served):
    pg = open_page(browser, served)
    try:
        pg.focus("th[data-key='2:rank'] button")
        pg.keyboard.press("Enter")
        pg.wait_for_selector("th[data-key='2:rank'][aria-sort='ascending']")
        assert pg.locator("th[aria-sort]").count() == 1
        assert pg.evaluate("() => document.activeElement.closest('th').dataset.key") == "2:rank"
        pg.keyboard.press(" ")
        pg.wait_for_selector("th[data-key='2:rank'][aria-sort='descending']")
        assert "by mean" in pg.inner_text("#letters-button")  # the letter groups follow the sorted rule
        first = pg.locator("table.lb tbody tr.sys").first
        name = first.get_attribute("data-system")
        first.locator("button.rowbtn").focus()
        pg.keyboard.press("Enter")
        detail = pg.locator("table.lb tr.detail")
        detail.wait_for()
        assert pg.locator("table.lb tr.sys button[aria-expanded='true']").count() == 1
        ties = detail.locator("ul.ties li").all_inner_texts()
        assert len(ties) == len(RULES) and ties[1].startswith("plurality: rank")
        # the systems tied beyond the fourth: in the page's text (a disclosure), not only in a hover title
        more = pg.locator("#overview details.more")
        if more.count():
            more.first.locator("summary").focus()
            pg.keyboard.press("Enter")
            assert more.first.evaluate("d => d.open")
        assert name
    finally:
        pg.close()


def test_export_is_what_is_shown(browser, served):
    pg = open_page(browser, served)
    try:
        # what is shown, an interval cell (data-lo / data-hi) as its two bounds (issue 26: machine-readable exports)
        shown = pg.evaluate("""() => [...document.querySelectorAll('table.lb tbody tr.sys')].map(tr =>
                               [...tr.children].flatMap(c => c.dataset.lo !== undefined ? [c.dataset.lo, c.dataset.hi] :
                                 c.dataset.tied !== undefined ? [c.dataset.n, c.dataset.tied] :
                                 [(c.dataset.x ?? c.textContent).replace(/\\s+/g, ' ').trim()]))""")
        with pg.expect_download() as dl:
            pg.click("#board-export button[data-export='csv']")
        rows = list(csv.reader(io.StringIO(Path(dl.value.path()).read_text())))
        assert rows[1:] == [[v.replace("–", "") for v in r] for r in shown]
        assert rows[0][0] == "system" and len(rows[0]) == len(shown[0])
        assert all("·" not in h for h in rows[0]) and any(h.endswith(" low") for h in rows[0])
        with pg.expect_download() as dl:
            pg.click("#board-export button[data-export='json']")
        data = json.loads(Path(dl.value.path()).read_text())

        def value(text):  # a number's text as the number, a dash or nothing as null, else the text
            if text in ("", "–"):
                return None
            if text in ("true", "false"):  # session 7: a rank's 'tied' column
                return text == "true"
            try:
                return float(text.replace(",", ""))
            except ValueError:
                return text

        assert [list(d.values()) for d in data] == [[value(v) for v in r] for r in shown]
        assert any(isinstance(v, (int, float)) for v in data[0].values())
    finally:
        pg.close()


def test_phone_width(browser, served, tmp_path):
    pg = open_page(browser, served, 390, 844)
    try:
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling of the page
        wrap = pg.locator(".lbwrap")
        box = wrap.bounding_box()
        pg.evaluate("() => { const w = document.querySelector('.lbwrap'); w.scrollLeft = 400; w.scrollTop = 120; }")
        time.sleep(0.2)
        name = pg.locator("table.lb tbody tr.sys td.name").nth(8).bounding_box()
        head = pg.locator("table.lb thead tr").nth(1).locator("th:visible").nth(2).bounding_box()
        assert abs(name["x"] - box["x"]) <= 2  # the system column stays at the left edge
        assert abs(head["y"] - (box["y"] + 26)) <= 3  # the header row stays at the top of the scrolled table
        sizes = pg.evaluate("""() => [...document.querySelectorAll('svg.bump text')].map(t =>
                               t.getBoundingClientRect().height)""")
        assert sizes and min(sizes) >= 10  # legible: drawn at its own size
        fit = pg.evaluate("() => [...document.querySelectorAll('.bumpwrap, #agreement .mats')]"
                          ".map(e => e.scrollWidth - e.clientWidth)")
        assert fit and max(fit) <= 1, fit  # and no sideways scrolling inside the figures either
        pg.screenshot(path=str(tmp_path / "phone.png"), full_page=True)
    finally:
        pg.close()


def test_bump_chart_draws_a_big_tie_as_a_tie(browser, served):
    """Plurality ties most systems at one rank: the segments into that point are grey (not rank moves in a
    system's colour) and a note under the chart says how many systems share the rank, counted by a plain loop."""
    pg = open_page(browser, served)
    try:
        snap = json.loads(pg.evaluate("async () => JSON.stringify(await (await fetch('api/snapshot')).json())"))
        g = snap["groups"][0]
        plur = g["rules"][1]
        big, _ = brute_ties(plur["rank"])
        at = next(v for v in plur["rank"] if sum(1 for w in plur["rank"] if w == v) == big)
        note = pg.locator("#bump .tienote").inner_text()
        assert f"plurality: {big} systems tied at rank {at}" in note
        # every drawn system at that plurality rank: both its segments touching the plurality column are grey
        names = pg.evaluate("() => [...document.querySelectorAll('svg.bump g.sysline title')].map(t => t.textContent.split('\\n')[0])")
        grey = pg.evaluate("() => [...document.querySelectorAll('svg.bump g.sysline')].map(g => "
                           "[...g.querySelectorAll('path.line')].map(p => p.classList.contains('tieseg')))")
        K = len(names)

        def in_big_tie(rule, i):  # at least 3 systems (and a quarter of those drawn) share its rank: plain loop
            v = rule["rank"][i]
            return v is not None and sum(1 for w in rule["rank"] if w == v) >= max(3, math.ceil(K / 4))

        assert any(in_big_tie(plur, g["systems"].index(n)) for n in names)
        for name, segs in zip(names, grey):
            i = g["systems"].index(name)
            want = [in_big_tie(g["rules"][r], i) or in_big_tie(g["rules"][r + 1], i) for r in range(len(g["rules"]) - 1)]
            assert segs == want, (name, segs, want)
    finally:
        pg.close()


def test_axe_finds_no_serious_violation(browser, served):
    axe = axe_path()
    if axe is None:
        pytest.skip("axe-core not found (npm install axe-core; or set AXE_CORE_JS to axe.min.js)")
    for w, h in ((1440, 900), (390, 844)):
        pg = open_page(browser, served, w, h, bypass_csp=True)  # axe is injected by the test (an inline script)
        try:
            pg.locator("table.lb tbody tr.sys button.rowbtn").first.click()
            pg.locator("table.lb tr.detail").wait_for()
            pg.add_script_tag(content=axe.read_text())
            res = pg.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
                              ".map(v => ({id: v.id, impact: v.impact, n: v.nodes.length, "
                              "html: v.nodes.slice(0, 2).map(n => n.html)}))")
            bad = [v for v in res if v["impact"] in ("serious", "critical")]
            assert not bad, (w, bad)
        finally:
            pg.close()



def test_the_sweeps_server_waits_for_the_store_it_replaces(tmp_path):
    """``sweep --overwrite --dashboard``: the server (started before the run replaces the store) shows no old state."""
    import urllib.request

    cfg = config(tmp_path, tmp_path / "b.zarr")
    run_sweep(cfg, progress=False)
    url, stop = start_in_background(cfg.store, port=0, poll=0.05, replaces=True, run=True)
    try:
        def snap():
            return json.loads(urllib.request.urlopen(url + "api/snapshot", timeout=10).read())

        first = snap()
        assert first["status"] == "waiting" and first["groups"] == [] and first["timing"]["run"] is True
        run_sweep(cfg, progress=False, max_blocks=2, overwrite=True)
        deadline = time.monotonic() + 20
        seen = []
        while (s := snap())["progress"]["blocks_done"] < 2 and time.monotonic() < deadline:
            seen.append(s["status"])
            time.sleep(0.05)
        assert "complete" not in seen  # the previous, finished store never shows
        assert s["status"] == "partial" and s["progress"]["blocks_done"] == 2
    finally:
        stop()
