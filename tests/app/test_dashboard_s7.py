"""The dashboard and the watch page, session 7 (issue 26 review): score digits from the intervals, a rule switcher on a
phone, the mixed-scales flag, a cost-weighted ETA, ranks exported as a number and a 'tied' column, the bump chart's
ties (no overlapping labels, a table under it), the watch page's 'new' entrants; and last session's untested
changes: the degenerate flag in the overview, the dropped-systems note, paging, exports.

Every expected value is computed here from the input file or the snapshot by plain loops. The browser tests need
``/usr/bin/chromium`` and the ``playwright`` package, the axe-core test ``axe.min.js`` (``$AXE_CORE_JS``, or
``node_modules/axe-core/axe.min.js`` under the current folder or ``$TMPDIR``); each is skipped, saying which is
missing, without them.
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
from conftest import CHROMIUM, axe_path

from engine.app.dashboard import LiveStore, block_cost, start_in_background, work_done
from engine.sweep import parse_config, run_sweep

N_SYS, N_TASKS = 26, 5
RULES = ("borda", "pavao_copeland", "mean", "plurality")  # a long name: the agreement matrix is wider than a phone
BIG = "points"  # the task on a 0-100 scale (the others on 0-1)
DROPPED = "sys-25"  # the system with a missing score (missing = listwise drops it)


# ------------------------------------------------------------------------------------ the input, and plain loops on it
def write_input(folder: Path, *, mixed: bool = True) -> Path:
    rng = np.random.default_rng(7)
    tasks = [f"t{j}" for j in range(N_TASKS - 1)] + [BIG]
    X = np.round(rng.uniform(0, 1, size=(N_SYS, N_TASKS)) + np.linspace(0.5, 0, N_SYS)[:, None], 3) / 1.5
    if mixed:
        X[:, -1] *= 100
    lines = ["system," + ",".join(tasks)]
    for i, row in enumerate(X):
        cells = [f"{v:.4f}" for v in row]
        if f"sys-{i:02d}" == DROPPED:
            cells[1] = ""
        lines.append(f"sys-{i:02d}," + ",".join(cells))
    path = folder / ("mixed.csv" if mixed else "same.csv")
    path.write_text("\n".join(lines) + "\n")
    return path


def read_table(path: Path) -> tuple[list[str], list[str], list[list[float]]]:
    rows = list(csv.reader(path.open()))
    tasks = rows[0][1:]
    return [r[0] for r in rows[1:]], tasks, [[float(v) if v else math.nan for v in r[1:]] for r in rows[1:]]


def scale_ratio(path: Path) -> float:
    """max over tasks / min over tasks of the largest absolute score of a task, by plain loops."""
    _, tasks, X = read_table(path)
    big = [max(abs(row[j]) for row in X if not math.isnan(row[j])) for j in range(len(tasks))]
    return max(big) / min(big)


def ties(rank: list) -> list[int]:
    """For each system, how many systems share its rank (0 for an unranked one), by plain loops."""
    return [0 if v is None else sum(1 for w in rank if w == v) for v in rank]


def decimals_for(r: dict) -> int | None:
    """The decimals the issue asks for: enough to tell systems of different ranks apart (0 for whole scores, else at
    least 1 for half points), the same running or finished, by plain loops."""
    vals = [(v, k) for v, k in zip(r["score"], r["rank"]) if v is not None]
    if not vals:
        return None
    d = 0 if all(float(v).is_integer() for v, _ in vals) else 1
    while d < 6 and any(f"{a:.{d}f}" == f"{b:.{d}f}" and ra != rb for a, ra in vals for b, rb in vals):
        d += 1
    return d


def config(folder: Path, store: Path, *, mixed: bool = True, extra: list | None = None):
    return parse_config({
        "seed": 5, "store": str(store),
        "input": {"path": str(write_input(folder, mixed=mixed)), "name": "mixed" if mixed else "same", "missing": "listwise"},
        "rules": [{"name": r} for r in RULES],
        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 40, "block": 10}, *(extra or [])]})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("s7")
    cfg = config(folder, folder / "s.zarr")
    run_sweep(cfg, progress=False)
    return cfg


# ------------------------------------------------------------------------------------ no browser
def test_eta_weighs_finished_blocks_by_their_cost(tmp_path):
    # bootstrap blocks of 10 replicates (one rule each) beside subset blocks of 5 repeats (one size and rule each)
    cfg = config(tmp_path, tmp_path / "eta.zarr", extra=[{"kind": "subsets", "sizes": [2, 3], "repeats": 20, "block": 5}])
    live = LiveStore(cfg.store, agree_budget=None, run=True)
    run_sweep(cfg, progress=False, max_blocks=2)
    live.update()
    seen_a = time.time()
    snap = live.snapshot()
    seen_b = time.time()
    per_block = {"bootstrap": 10.0, "subsets": 5.0}  # from the config: replicates / repeats per block
    total = len(RULES) * 40 + len(RULES) * 2 * 20
    groups = snap["groups"]
    assert work_done(groups)[1] == total
    for g in groups:
        assert block_cost(g) == per_block[g["kind"]]
    done0 = sum(per_block[g["kind"]] * g["blocks_done"] for g in groups)
    run_sweep(cfg, progress=False, max_blocks=5)
    live.update()
    snap = live.snapshot()
    done = sum(per_block[g["kind"]] * g["blocks_done"] for g in snap["groups"])
    t = snap["timing"]
    assert snap["status"] == "partial" and done > done0
    rate = [(done - done0) / (t["now"] - s) for s in (seen_a, seen_b)]  # cost per second, either side of first sight
    assert (total - done) / rate[1] - 1e-6 <= t["eta_seconds"] <= (total - done) / rate[0] + 1e-6
    assert t["blocks_since"] == snap["progress"]["blocks_done"] - sum(g["blocks_done"] for g in groups)
    # rough while a kind with blocks left has had none finish since first seen (its blocks priced by cost alone)
    first = {g["name"]: g["blocks_done"] for g in groups}
    want = sorted({g["kind"] for g in snap["groups"] if g["blocks_done"] < g["blocks_total"]
                   and g["blocks_done"] == first[g["name"]]})
    assert t["eta_untimed"] == want


def test_counts_carry_the_reports_mixed_scales_warning(store, tmp_path):
    live = LiveStore(store.store, agree_budget=None)
    live.update(strict=True)
    got = live.counts("mixed")
    ratio = scale_ratio(Path(store.inputs[0]["path"]))
    assert ratio > 10 and got["scale_rules"] == ["mean"]
    assert f"differ {ratio:.0f}-fold" in got["scale_warning"] and BIG in got["scale_warning"]
    cfg = config(tmp_path, tmp_path / "same.zarr", mixed=False)
    run_sweep(cfg, progress=False)
    same = LiveStore(cfg.store, agree_budget=None)
    same.update(strict=True)
    assert scale_ratio(Path(cfg.inputs[0]["path"])) <= 10
    assert same.counts("same")["scale_warning"] is None


# ------------------------------------------------------------------------------------ the page in Chromium
pytestmark_browser = pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install -y chromium)")




@pytest.fixture(scope="module")
def served(store):
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install playwright)")
    url, stop = start_in_background(store.store, port=0, poll=0.1, heartbeat=2.0)
    yield url
    stop()


def open_page(browser, url, width=1440, height=900):
    pg = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(url)
    pg.wait_for_selector("table.lb tbody tr.sys")
    pg.wait_for_function("() => !document.querySelector('table.lb td.n') || "
                         "!document.querySelector('table.lb td.n').textContent.includes('…')")
    pg.errors = errors
    return pg


def snapshot_of(pg) -> dict:
    return json.loads(pg.evaluate("async () => JSON.stringify(await (await fetch('api/snapshot')).json())"))


@pytestmark_browser
def test_score_digits_flags_dropped_note_and_paging(browser, served, store):
    pg = open_page(browser, served)
    try:
        g = snapshot_of(pg)["groups"][0]
        # 1. each score column: the decimals of its narrowest interval, the same in every row, the value rounded
        for ri, r in enumerate(g["rules"]):
            col = pg.locator(f"th[data-key='{ri}:score']").evaluate("th => th.cellIndex")
            want = decimals_for(r)
            seen = set()
            for tr in pg.locator("table.lb tbody tr.sys").all():
                i = g["systems"].index(tr.get_attribute("data-system"))
                txt = tr.locator("td").nth(col).inner_text()
                if r["score"][i] is None:
                    continue
                d = len(txt.split(".")[1]) if "." in txt else 0
                seen.add(d)
                assert float(txt) == pytest.approx(r["score"][i], abs=0.5 * 10 ** -d + 1e-12), (r["rule"], txt)
            assert len(seen) == 1, (r["rule"], seen)
            if want is not None:
                assert seen.pop() <= want, r["rule"]
        wrap = pg.locator(".lbwrap")
        assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth + 1"), "the leaderboard overflows 1440 px"
        # 3. the mean over tasks on mixed scales is flagged as the report flags it, and only the mean
        ratio = scale_ratio(Path(store.inputs[0]["path"]))
        assert f"differ {ratio:.0f}-fold" in pg.inner_text("#scale-warning")
        heads = pg.locator("table.lb thead th.group").all_inner_texts()
        assert [("mixed scales" in h) for h in heads] == [r == "mean" for r in RULES]
        rows = pg.locator("#overview table.ov tbody tr").all_inner_texts()
        assert [("mixed scales" in t) for t in rows] == [r == "mean" for r in RULES]
        # last session: the degenerate rule (plurality: most systems score 0) is flagged in the overview too
        plur = g["rules"][RULES.index("plurality")]
        n = [v for v in plur["rank"] if v is not None]
        assert max(n.count(v) for v in n) * 2 > len(n)
        assert [("degenerate" in t) for t in rows] == [r == "plurality" for r in RULES]
        # the dropped system: said in the heading, 'dropped' in its rank cells
        names, _, X = read_table(Path(store.inputs[0]["path"]))
        dropped = [s for s, row in zip(names, X) if any(math.isnan(v) for v in row)]
        assert dropped == [DROPPED]
        assert f"({N_SYS - 1} ranked, 1 dropped for missing scores)" in pg.inner_text("#board .row .sub")
        # paging: the top 20, then all; a search shows the names that match, by a plain loop
        assert pg.locator("table.lb tbody tr.sys").count() == 20
        pg.click("#show-all")
        assert pg.locator("table.lb tbody tr.sys").count() == N_SYS
        row = pg.locator(f"table.lb tbody tr.sys[data-system='{DROPPED}']")
        assert row.locator("td.dropped").count() == len(RULES)
        pg.fill("#search", "-1")
        want_names = sorted(s for s in names if "-1" in s)
        assert sorted(pg.locator("table.lb tbody tr.sys").evaluate_all("rs => rs.map(r => r.dataset.system)")) == want_names
        assert pg.errors == []
    finally:
        pg.close()


@pytestmark_browser
def test_exports_give_the_rank_as_a_number_and_a_tied_column(browser, served):
    pg = open_page(browser, served)
    try:
        g = snapshot_of(pg)["groups"][0]
        pg.click("#show-all")
        with pg.expect_download() as dl:
            pg.click("#board-export button[data-export='csv']")
        rows = list(csv.DictReader(io.StringIO(Path(dl.value.path()).read_text())))
        with pg.expect_download() as dl:
            pg.click("#board-export button[data-export='json']")
        data = json.loads(Path(dl.value.path()).read_text())
        assert [d["system"] for d in data] == [r["system"] for r in rows] and len(rows) == N_SYS
        for r in g["rules"]:
            share = ties(r["rank"])
            for row, d in zip(rows, data):
                i = g["systems"].index(row["system"])
                if r["rank"][i] is None:
                    assert row[f"{r['rule']} rank"] == "" and d[f"{r['rule']} rank"] is None
                    continue
                assert float(row[f"{r['rule']} rank"]) == r["rank"][i] == d[f"{r['rule']} rank"]
                assert row[f"{r['rule']} rank tied"] == ("true" if share[i] > 1 else "false")
                assert d[f"{r['rule']} rank tied"] is (share[i] > 1)
                assert d[f"{r['rule']} score"] == pytest.approx(r["score"][i], rel=1e-12)  # full precision
                assert d[f"{r['rule']} score 95% CI low"] == pytest.approx(r["score_low"][i], rel=1e-12)
        assert any(d[f"{r['rule']} rank tied"] for d in data for r in g["rules"])  # the data has ties
    finally:
        pg.close()


@pytestmark_browser
def test_bump_chart_ties_do_not_overlap_and_its_table_is_reachable(browser, served):
    pg = open_page(browser, served)
    try:
        g = snapshot_of(pg)["groups"][0]
        boxes = pg.evaluate("""() => [...document.querySelectorAll('svg.bump text')].map(t => {
                                 const b = t.getBBox(); return [t.textContent, b.x, b.y, b.width, b.height]; })""")
        for a in range(len(boxes)):
            for b in range(a + 1, len(boxes)):
                _, x1, y1, w1, h1 = boxes[a]
                _, x2, y2, w2, h2 = boxes[b]
                overlap = min(x1 + w1, x2 + w2) - max(x1, x2) > 0.5 and min(y1 + h1, y2 + h2) - max(y1, y2) > 0.5
                assert not overlap, (boxes[a], boxes[b])
        # the number in a tie's circle: how many systems of all share that rank under that rule
        marks = pg.evaluate("() => [...document.querySelectorAll('svg.bump g.tie title')].map(t => t.textContent)")
        numbers = pg.evaluate("() => [...document.querySelectorAll('svg.bump g.tie text')].map(t => t.textContent)")
        assert marks and len(marks) == len(numbers)
        for title, num in zip(marks, numbers):
            rule, rest = title.split(": ")
            k, rank = int(rest.split(" ")[0]), float(rest.rsplit(" ", 1)[1])
            r = next(x for x in g["rules"] if x["rule"] == rule)
            assert k == int(num) == sum(1 for v in r["rank"] if v == rank)
        # the table under the chart: opened from the keyboard, every system drawn with its ranks under every rule
        pg.focus("#bump-table summary")
        pg.keyboard.press("Enter")
        assert pg.locator("#bump-table").evaluate("d => d.open")
        cells = pg.locator("#bump-table table tbody tr").evaluate_all(
            "rs => rs.map(r => [r.cells[0].textContent, ...[...r.cells].slice(1).map(c => [c.dataset.n, c.dataset.tied])])")
        base = g["rules"][0]  # sorted by the first rule: the top 12 of borda
        order = sorted((i for i in range(len(g["systems"])) if base["rank"][i] is not None),
                       key=lambda i: (base["rank"][i], g["systems"][i]))[:12]
        assert [c[0] for c in cells] == [g["systems"][i] for i in order]
        for c, i in zip(cells, order):
            for (n, tied), r in zip(c[1:], g["rules"]):
                assert float(n) == r["rank"][i] and tied == str(ties(r["rank"])[i] > 1).lower()
    finally:
        pg.close()


@pytestmark_browser
def test_phone_rule_switcher_is_keyboard_operable(browser, served):
    pg = open_page(browser, served, 390, 844)
    try:
        g = snapshot_of(pg)["groups"][0]
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        buttons = pg.locator(".ruleswitch button")
        assert buttons.all_inner_texts() == [r + (" ⚠" if r == "plurality" else "") for r in RULES]
        assert pg.locator("table.lb thead th.group").count() == 1  # one rule's columns at a time
        for ri in (2, 1):
            buttons.nth(ri).focus()
            pg.keyboard.press("Enter" if ri == 2 else "Space")
            pg.wait_for_function(f"() => document.querySelectorAll('.ruleswitch button')[{ri}]"
                                 ".getAttribute('aria-pressed') === 'true'")
            assert pg.evaluate("document.activeElement.dataset.rule") == RULES[ri]  # focus stays on the switch
            assert pg.locator("table.lb thead th.group").all_inner_texts()[0].startswith(RULES[ri])
            r = g["rules"][ri]
            shown = pg.locator("table.lb tbody tr.sys").evaluate_all("rs => rs.map(r => r.dataset.system)")
            want = sorted((s for s in g["systems"]), key=lambda s: (r["rank"][g["systems"].index(s)] or 1e9, s))[:20]
            assert shown == want
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        # the 4-rule agreement matrices are wider than the phone: they scroll in their own focusable box, not the page
        boxes = pg.locator("#agreement .mwrap")
        assert boxes.count() == 2
        for i in range(2):
            assert boxes.nth(i).evaluate("b => b.scrollWidth > b.clientWidth && b.tabIndex === 0"), i
    finally:
        pg.close()


@pytestmark_browser
@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_axe_core_finds_nothing_serious(browser, served, width, height):
    axe = axe_path()
    if axe is None:
        pytest.skip("no axe-core (npm install axe-core, or set AXE_CORE_JS)")
    ctx = browser.new_context(bypass_csp=True, viewport={"width": width, "height": height})
    pg = ctx.new_page()
    try:
        pg.goto(served)
        pg.wait_for_selector("table.lb tbody tr.sys")
        pg.wait_for_selector("#scale-warning")
        pg.click("#bump-table summary")
        pg.add_script_tag(content=axe.read_text())
        found = pg.evaluate("axe.run(document).then(r => r.violations.map(v => [v.id, v.impact, v.nodes.length, "
                            "v.nodes.map(n => n.target.join(' '))]))")
        assert [v for v in found if v[1] in ("serious", "critical")] == []
    finally:
        ctx.close()


# ------------------------------------------------------------------------------------ the watch page
class FakeWatcher:
    """What the watch page's server reads of a watch: its published snapshot and version, its options."""

    def __init__(self, snapshot: dict) -> None:
        from engine.watch import WatchOptions

        self.snapshot, self.version, self.root, self.store, self.waiting = snapshot, 1, "runs", "lb.zarr", []
        self.options, self.scores = WatchOptions(), None


@pytestmark_browser
def test_watch_page_says_new_for_a_new_entrant(browser, tmp_path):
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install playwright)")
    import xarray as xr

    from engine.app.watch_page import WatchLive, watch_web
    from engine.watch.snapshot import board_group, change_records

    before = {"a": [1, 1, 2], "b": [2, 1, 3], "c": [3, 2, 3]}
    rows = [{"system": "a", "rank": 1, "score": 9.0}, {"system": "new-model", "rank": 2, "score": 8.0},
            {"system": "c", "rank": 3, "score": 7.0}, {"system": "b", "rank": 4, "score": 6.0}]
    recs = change_records(before, rows)
    ds = xr.Dataset({"score": ("system", [r["score"] for r in rows]), "rank": ("system", [float(r["rank"]) for r in rows])},
                    coords={"system": [r["system"] for r in rows]}, attrs={"rule": "borda", "level": "task"})
    snap = {"kind": "watch", "status": "watching", "progress": {"units": 4}, "ranking": rows,
            "changes": [c["text"] for c in recs], "change_list": recs, "rule": "borda", "level": "task",
            "board": board_group(ds), "sizes": {"system": 4, "task": 2, "instance": 1}, "provenance": {}, "rejected": [],
            "waiting": [], "log": []}
    url, stop = start_in_background(tmp_path / "none.zarr", port=0, poll=0.1, heartbeat=2.0,
                                    live=WatchLive(FakeWatcher(snap)), web=watch_web())
    pg = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        pg.goto(url)
        pg.wait_for_selector("table.lb tbody tr.sys")
        pg.wait_for_selector("#changes li.change")
        got = pg.locator("#changes li").evaluate_all("ls => ls.map(l => [l.dataset.kind, l.querySelector('.tag').textContent])")
        # by hand: not ranked before -> new; b fell behind c (ranked before and now) -> down; c, a kept their rank
        assert got == [["new", "new"], ["down", "▼ down"]]
        shown = dict(pg.locator("table.lb tbody tr.sys").evaluate_all(
            "rs => rs.map(r => [r.dataset.system, Number(r.querySelector('td[data-n]').dataset.n)])"))
        assert shown == {r["system"]: r["rank"] for r in rows}
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        pg.close()
        stop()


@pytestmark_browser
def test_a_dropped_system_stays_last_when_a_sort_is_reversed(browser, served):
    """sys-25 has no rank (listwise drops it): last by rank ascending, and still last descending."""
    pg = open_page(browser, served)
    try:
        pg.wait_for_selector("table.lb tbody tr.sys")
        pg.click("#show-all")
        rows = pg.locator("table.lb tbody tr.sys")
        pg.wait_for_function(f"() => document.querySelectorAll('table.lb tbody tr.sys').length === {N_SYS}")
        assert rows.evaluate_all("rs => rs.map(r => r.dataset.system)")[-1] == DROPPED
        head = pg.locator("table.lb thead th.sortable", has_text="rank").first
        for _ in range(2):  # the first click may only select the column: press until it is descending
            head.locator("button").click()
            if head.get_attribute("aria-sort") == "descending":
                break
        assert head.get_attribute("aria-sort") == "descending"
        order = rows.evaluate_all("rs => rs.map(r => r.dataset.system)")
        assert order[-1] == DROPPED and order[0] != DROPPED
    finally:
        pg.close()
