"""The live dashboard in a real headless browser (Debian's chromium driven by playwright), end to end.

A sweep runs on the embedded dask scheduler in a background thread while the
page is open at 1366 x 768: the page must follow it without reloading
(progress rising, then "complete"), and its leaderboard (top-k, show all,
search, sort, per-task scores), overview and bump chart must work.
Screenshots go to the test's tmp dir (``mid.png``, ``complete.png``,
``complete_full.png``, ``tasks.png``).

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``) and the
``playwright`` Python package (``pip install playwright``; its own browser
downloads are never used).  Skipped, saying which is missing, without them.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import CHROMIUM, CHROMIUM_ARGS

from engine.app.dashboard import start_in_background
from engine.sweep import parse_config, run_sweep

ARGS = CHROMIUM_ARGS  # test_dashboard_letters imports CHROMIUM and ARGS from here
N_SYS, N_TASKS = 30, 8
RULES = ("borda", "copeland", "mean")

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install -y chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install playwright)")


def write_input(folder: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(11)
    X = np.round(rng.uniform(0, 1, size=(N_SYS, N_TASKS)) + np.linspace(0.6, 0, N_SYS)[:, None], 2)
    lines = ["system," + ",".join(f"task{j}" for j in range(N_TASKS))]
    lines += [f"sys-{i:02d}," + ",".join(f"{v:.2f}" for v in row) for i, row in enumerate(X)]
    path = folder / "thirty.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, X


def new_page(browser):
    pg = browser.new_page(viewport={"width": 1366, "height": 768})
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.errors = errors
    return pg


def test_the_page_follows_a_running_sweep(browser, tmp_path):
    csv, X = write_input(tmp_path)
    cfg = parse_config({
        "seed": 4, "store": str(tmp_path / "live.zarr"), "input": {"path": str(csv), "name": "thirty"},
        "rules": [{"name": r} for r in RULES],
        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 48, "block": 6},
                          {"kind": "bootstrap", "over": "systems", "replicates": 20, "block": 10},
                          {"kind": "subsets", "sizes": [2, 4], "repeats": 4, "block": 2}]})
    total = 3 * 8 + 3 * 2 + 3 * 2 * 2
    url, stop = start_in_background(cfg.store, port=0, poll=0.1, heartbeat=2.0)
    gate = threading.Event()
    failure: list[BaseException] = []

    def slow(blk):  # hold the sweep after its 6th block until the page has seen it, then let it run (slowly)
        if slow.n == 6:
            gate.wait(60)
        slow.n += 1
        time.sleep(0.05)

    slow.n = 0

    def sweep():
        try:
            run_sweep(cfg, progress=False, on_block=slow)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failure.append(exc)

    page = new_page(browser)
    try:
        worker = threading.Thread(target=sweep, daemon=True)
        worker.start()
        page.goto(url)
        progress = page.locator("#progress-text")
        sync_api.expect(progress).to_contain_text(f"7 / {total} blocks", timeout=60_000)
        assert page.inner_text("#status") == "in progress"
        sync_api.expect(page.locator("#conn")).to_have_text("live", timeout=10_000)
        marker = page.evaluate("() => { window.__same_page = 42; return window.__same_page; }")  # evaluate is CSP-exempt
        page.screenshot(path=str(tmp_path / "mid.png"))
        gate.set()
        seen = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and page.inner_text("#status") != "complete":
            seen.add(page.inner_text("#progress-text"))
            time.sleep(0.05)
        worker.join(timeout=60)
        assert not failure, failure
        sync_api.expect(page.locator("#status")).to_have_text("complete", timeout=30_000)
        assert len(seen) >= 3  # the progress rose in steps on the same page
        assert page.evaluate("() => window.__same_page") == marker  # updated in place, not reloaded
        text = page.inner_text("#progress-text")  # replicates per rule x rules, then the rule-replicates done
        assert "48 replicates × 3 rules" in text and "20 replicates × 3 rules" in text
        assert f"{3 * 48 + 3 * 20} / {3 * 48 + 3 * 20} rule-replicates done" in text
        page.screenshot(path=str(tmp_path / "complete.png"))
        page.screenshot(path=str(tmp_path / "complete_full.png"), full_page=True)

        # overview: one row per rule, the leader of every cell named
        rows = page.locator("#overview table.ov tr")
        assert rows.count() == 1 + len(RULES)
        assert page.locator("#overview .chip.lead").count() >= 3 * len(RULES)
        lead_bg = page.eval_on_selector(".chip.lead", "e => getComputedStyle(e).backgroundColor")
        tied_bg = page.eval_on_selector(".chip.tied", "e => getComputedStyle(e).backgroundColor")
        assert lead_bg != tied_bg

        # leaderboard: the task bootstrap by default, top 20 first, then all; best first by borda's rank
        board = page.locator("#board")
        assert "bootstrap over tasks" in board.inner_text()
        body = page.locator("#board table.lb tbody tr.sys")
        assert body.count() == 20
        names = body.locator("td.name").all_inner_texts()
        assert names[0] == "sys-00" or names[0].startswith("sys-0")
        page.click("#show-all")
        assert body.count() == N_SYS
        page.click("#show-all")
        assert body.count() == 20
        page.fill("#search", "sys-2")
        assert sorted(body.locator("td.name").all_inner_texts()) == [f"sys-2{k}" for k in range(10)]
        page.fill("#search", "")
        page.click("#board th:has-text('system')")  # sort by name
        assert body.locator("td.name").all_inner_texts() == [f"sys-{i:02d}" for i in range(20)]
        page.click("#board th:has-text('system')")  # and back to front
        assert body.locator("td.name").first.inner_text() == f"sys-{N_SYS - 1:02d}"

        # per-task scores of a system, on demand
        page.click("#board th:has-text('system')")  # ascending again
        page.click("#board tr.sys[data-system='sys-05']")
        tasks = page.locator("#board table.tasks tr")
        sync_api.expect(tasks).to_have_count(1 + N_TASKS, timeout=20_000)
        first = tasks.nth(1).locator("td").all_inner_texts()
        assert first[0] == "task0" and float(first[1]) == pytest.approx(X[5, 0])
        page.locator("#board tr.detail").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "tasks.png"))

        # bump chart: the top 12 of borda, one line each, across the three rules
        assert page.locator("#bump svg g.sysline").count() == 12
        assert page.locator("#bump svg .axis text").all_text_contents()[:3] == list(RULES)

        # legible at 1366 x 768: nothing wider than the window
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 1366
        assert page.evaluate("() => { const w = document.querySelector('#board .tablewrap'); return w.scrollWidth <= w.clientWidth; }")
        assert page.errors == []
    finally:
        gate.set()
        page.close()
        stop()


def test_a_late_page_catches_up_explains_a_candidate_interval_and_reconnects(browser, tmp_path):
    csv, _ = write_input(tmp_path)
    cfg = parse_config({"seed": 1, "store": str(tmp_path / "done.zarr"), "input": {"path": str(csv), "name": "thirty"},
                        "rules": [{"name": "borda"}],
                        "perturbations": [{"kind": "bootstrap", "over": "systems", "replicates": 20, "block": 10}]})
    run_sweep(cfg, progress=False)
    url, stop = start_in_background(cfg.store, port=0, poll=0.1, heartbeat=2.0)
    page = new_page(browser)
    try:
        page.goto(url)
        sync_api.expect(page.locator("#status")).to_have_text("complete", timeout=30_000)
        text = page.inner_text("#board")
        assert "rank range" in text and "biased toward 1" in text
        assert page.locator("#bump").is_hidden()  # one rule: no rank changes to draw
        assert page.errors == []
        # the server goes away and comes back on the same port: the page says so, then reconnects by itself
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        stop()
        sync_api.expect(page.locator("#conn")).not_to_have_text("live", timeout=20_000)
        url, stop = start_in_background(cfg.store, port=port, poll=0.1, heartbeat=2.0)
        sync_api.expect(page.locator("#conn")).to_have_text("live", timeout=30_000)
        assert page.inner_text("#status") == "complete"
    finally:
        page.close()
        stop()


def test_the_page_works_with_a_token(browser, tmp_path):
    """Beyond loopback a token is required: the printed URL carries it once, a cookie then serves the page's requests."""
    csv, _ = write_input(tmp_path)
    cfg = parse_config({"seed": 1, "store": str(tmp_path / "t.zarr"), "input": {"path": str(csv), "name": "thirty"},
                        "rules": [{"name": "borda"}, {"name": "mean"}],
                        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 6, "block": 3}]})
    run_sweep(cfg, progress=False)
    url, stop = start_in_background(cfg.store, port=0, poll=0.1, heartbeat=2.0, token="a-token-for-the-browser-test")
    page = new_page(browser)
    try:
        page.goto(url)
        assert "token" not in page.url  # dropped from the address bar
        sync_api.expect(page.locator("#status")).to_have_text("complete", timeout=30_000)
        sync_api.expect(page.locator("#conn")).to_have_text("live", timeout=10_000)
        assert page.locator("#board table.lb tbody tr.sys").count() == 20
        assert page.errors == []
    finally:
        page.close()
        stop()


# ---------------------------------------------------------------------------------------------
# worked example of the dashboard-panel extension point (ARCHITECTURE.md)
# ---------------------------------------------------------------------------------------------
#: the panel a new kind needs: a function from its group's state (GroupState.to_json) to a card ...
LEAVE_ONE_OUT_CARD = """
  function leaveOneOutCard(g) {
    const c = el("section", {class: "card", "data-group": g.name});
    c.append(head(g, "leave one task out", `${g.blocks_done} / ${g.blocks_total} blocks`));
    const t = el("table", {class: "m loo"}, el("tr", {}, el("th", {}, "rule \\\\ left out"), ...g.left_out.map(x => el("th", {}, x))));
    g.rules.forEach(r => t.append(el("tr", {}, el("th", {}, r.rule), ...r.leaders.map(l => el("td", {}, l ? l.join(", ") : "…")))));
    c.append(t);
    return c;
  }
"""
#: ... and the one line that shows it: an entry in CARDS
LEAVE_ONE_OUT_ENTRY = "    leave_one_out: leaveOneOutCard,\n"


def with_panel(js: str) -> str:
    """engine/app/web/dashboard.js with the worked example's card function and its CARDS entry added."""
    at = js.index("  const CARDS = {\n")
    assert js.count("  const CARDS = {\n") == 1
    js = js[:at] + LEAVE_ONE_OUT_CARD + js[at:]
    entry = js.index("  const CARDS = {\n") + len("  const CARDS = {\n")
    return js[:entry] + LEAVE_ONE_OUT_ENTRY + js[entry:]


def test_a_dashboard_panel_is_one_card_function_and_one_cards_entry(browser, tmp_path):
    """A kind the page has no view of shows its progress; with one card function and one CARDS line it gets its panel.

    The leave-one-task-out kind of tests/sweep/test_sweep_kinds.py runs through a sweep; the page is served as
    shipped, then with dashboard.js carrying the panel (served in its place, as the edited file would be),
    whose cells must be the leaders computed by plain loops.
    """
    from importlib.resources import files

    from test_sweep_kinds import LEAVE_ONE_OUT, TASKS, config, leaders, loop_scores, scores_matrix

    from engine.distributed import embedded_client
    from engine.sweep import KINDS, register_kind

    X = scores_matrix()
    register_kind(LEAVE_ONE_OUT)
    client = embedded_client()
    try:
        cfg = config(tmp_path, X)
        run_sweep(cfg, client=client, progress=False)
        url, stop = start_in_background(cfg.store, port=0, poll=0.1, heartbeat=2.0)
        page = new_page(browser)
        try:
            page.goto(url)
            sync_api.expect(page.locator("#status")).to_have_text("complete", timeout=30_000)
            card = page.locator('section[data-group="tiny/leave-one-out"]')
            sync_api.expect(card).to_contain_text("this page has no view of kind leave_one_out")
            js = files("engine.app").joinpath("web", "dashboard.js").read_text(encoding="utf-8")
            page.route("**/dashboard.js", lambda route: route.fulfill(status=200, body=with_panel(js),
                                                                     content_type="application/javascript; charset=utf-8"))
            page.reload()
            sync_api.expect(page.locator("#status")).to_have_text("complete", timeout=30_000)
            rows = page.locator("table.loo tr")
            sync_api.expect(rows).to_have_count(3)
            assert rows.nth(0).locator("th").all_inner_texts() == ["rule \\ left out", *TASKS]
            for i, rule in enumerate(("mean", "borda"), start=1):
                assert rows.nth(i).locator("th").inner_text() == rule
                assert rows.nth(i).locator("td").all_inner_texts() == [", ".join(leaders(loop_scores(X, rule, t)))
                                                                       for t in range(len(TASKS))]
            assert "no view of kind" not in card.inner_text()
            page.screenshot(path=str(tmp_path / "panel.png"), full_page=True)
            assert page.errors == []
        finally:
            page.close()
            stop()
    finally:
        client.close()
        del KINDS[LEAVE_ONE_OUT.name]
