"""The dashboard page in a real headless browser (Debian's chromium driven by playwright).

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``) and the
``playwright`` Python package (``pip install playwright``; its own browser
downloads are never used).  Skipped, saying which is missing, without them.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest
from test_dashboard import N_BLOCKS, SYSTEMS, make_config

from engine.dashboard import start_in_background
from engine.sweep import run_sweep

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

if not CHROMIUM.exists():
    pytest.skip("no /usr/bin/chromium (apt-get install -y chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install playwright)")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A store with 2 of its blocks written, served on a free loopback port: (config, url)."""
    folder = tmp_path_factory.mktemp("dashboard_browser")
    cfg = make_config(folder, folder / "live.zarr")
    run_sweep(cfg, progress=False, max_blocks=2)
    url, stop = start_in_background(cfg.store, port=0, poll=0.1, heartbeat=2.0)
    yield cfg, url
    stop()


@pytest.fixture(scope="module")
def page():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        pg.errors = errors
        yield pg
        browser.close()


def test_page_renders_and_follows_the_store(live, page, tmp_path):
    cfg, url = live
    page.goto(url)
    progress = page.locator("#progress-text")
    # (the page's CSP forbids eval, so no string predicates: playwright's expect polls the DOM)
    sync_api.expect(progress).to_contain_text(f"2 / {N_BLOCKS} blocks", timeout=30_000)
    for rule in ("borda", "copeland"):  # every system of the ranking is drawn, one row per system
        labels = page.eval_on_selector_all(f".rule[data-rule='{rule}'] g.sys > text:first-of-type",
                                           "els => els.map(e => e.textContent)")
        assert sorted(labels) == sorted(SYSTEMS), (rule, labels)
        assert page.locator(f".rule[data-rule='{rule}'] svg").is_visible()
    assert page.inner_text("#status") == "in progress"
    assert page.locator(".rule").count() == 2
    assert page.locator(".rule[data-rule='borda'] g.is-leader").count() >= 1
    assert page.inner_text("#conn") == "live"
    assert page.inner_text("#progress-text").startswith("4 / 16 replicates")
    marker = page.evaluate("() => { window.__same_page = 42; return window.__same_page; }")  # playwright's evaluate is CSP-exempt

    run_sweep(cfg, progress=False)  # the rest of the sweep, while the page is open
    sync_api.expect(progress).to_contain_text(f"{N_BLOCKS} / {N_BLOCKS} blocks", timeout=30_000)
    assert page.evaluate("() => window.__same_page") == marker  # updated in place, not reloaded
    assert page.inner_text("#progress-text").startswith("16 / 16 replicates")
    assert page.inner_text("#status") == "complete"
    assert page.locator("table.m").count() >= 3  # two agreement matrices and the subsets table
    shot = os.environ.get("VOTEBENCH_DASHBOARD_SCREENSHOT")
    if shot:
        page.screenshot(path=shot, full_page=True)
    assert page.errors == []


def test_late_page_catches_up(live, page):
    with urllib.request.urlopen(live[1] + "api/snapshot", timeout=20) as r:
        done = json.loads(r.read())["progress"]["blocks_done"]
    page.goto(live[1])
    sync_api.expect(page.locator("#progress-text")).to_contain_text(f"{done} / {N_BLOCKS} blocks", timeout=30_000)
    assert page.locator(".rule").count() == 2
