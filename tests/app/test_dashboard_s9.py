"""The dashboard page, session 9: letter groups under the input's missing-score policy, a phone's name column, the
live region, and the drill-down's per-task digits (checked in headless Chromium against the input and plain loops)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from engine.app.dashboard import LiveStore, start_in_background
from engine.sweep import parse_config, run_sweep

NAMES = ["Alpha Large Model", "Beta-Base Ensemble", "Gamma Transformer XL", "Delta", "Epsilon Small v2",
         "Zeta Hyper Network", "Eta", "Theta Mixture Of Experts", "Iota Distilled", "Kappa Tiny"]
TASKS = 6
DROPPED = "Eta"  # one missing score: the listwise policy drops it


def write_input(folder: Path) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(21)
    X = rng.uniform(0, 1, size=(len(NAMES), TASKS)) * np.array([1, 100, 1, 10, 1, 1000])[None, :] + 0.123456
    lines = ["system," + ",".join(f"task{j}" for j in range(TASKS))]
    for i, row in enumerate(X):
        cells = ["" if (NAMES[i] == DROPPED and j == 2) else f"{v:.6f}" for j, v in enumerate(row)]
        lines.append(f"{NAMES[i]}," + ",".join(cells))
    path = folder / "named.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, X


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("s9")
    path, X = write_input(folder)
    cfg = parse_config({
        "seed": 1, "store": str(folder / "s.zarr"), "input": {"path": str(path), "name": "named", "missing": "listwise"},
        "rules": [{"name": "mean"}, {"name": "borda"}, {"name": "copeland"}, {"name": "minimax"}],
        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 20, "block": 10}]})
    run_sweep(cfg, progress=False)
    return cfg, X


@pytest.fixture(scope="module")
def served(store):
    url, stop = start_in_background(store[0].store, port=0, poll=0.1, heartbeat=2.0)
    yield url
    stop()


def open_page(browser, url, width, height):
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.goto(url)
    pg.wait_for_selector("table.lb tbody tr.sys")
    return pg


def test_letters_compare_the_systems_the_listwise_leaderboard_ranks(store):
    cfg, _ = store
    live = LiveStore(cfg.store, agree_budget=None)
    live.update(strict=True)
    g = live.snapshot()["groups"][0]
    got = live.letter_groups("named", g["name"], "borda")
    assert DROPPED not in got["systems"]
    assert sorted(got["systems"]) == sorted(n for n in NAMES if n != DROPPED)
    assert got["n_tasks"] == TASKS  # no task is lost to the dropped system's hole


def test_phone_names_break_between_words_and_leave_the_judges_to_the_drill_down(browser, served):
    pg = open_page(browser, served, 390, 844)
    try:
        # every word of every name lies on one line (no "StructBER / T"): a Range over the word has one line box
        split = pg.evaluate("""() => [...document.querySelectorAll('table.lb button.rowbtn')].flatMap(b => {
            const t = b.firstChild, out = [];
            for (const m of t.textContent.matchAll(/\\S+/g)) {
              const r = document.createRange(); r.setStart(t, m.index); r.setEnd(t, m.index + m[0].length);
              const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
              if (tops.size > 1) out.push(m[0]);
            }
            return out; })""")
        assert split == []
        assert pg.locator("table.lb td.n").first.is_hidden()
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        # the overview's name chips wrap in their cells: its table fits its box too
        assert pg.evaluate("() => [...document.querySelectorAll('#top table')].every(t => "
                           "t.scrollWidth <= t.parentElement.clientWidth)")
        # one rule's columns fit the phone whole: the score interval sits under the score, no number is cut
        width, box = pg.evaluate("() => { const t = document.querySelector('table.lb'); "
                                 "return [t.scrollWidth, t.parentElement.clientWidth]; }")
        assert width <= box
        for tr in pg.locator("table.lb tbody tr.sys").all()[:5]:
            siv = tr.locator("td.siv").first
            assert siv.is_hidden() and tr.locator(".ci2").first.inner_text() == siv.get_attribute("data-x")
    finally:
        pg.close()
    pg = open_page(browser, served, 1440, 900)
    try:
        assert pg.locator("table.lb td.n").first.is_visible()
        assert pg.locator("table.lb td.siv").first.is_visible() and pg.locator("table.lb .ci2").first.is_hidden()
    finally:
        pg.close()


def test_live_region_says_the_search_count_once_and_not_the_first_state(browser, served):
    pg = open_page(browser, served, 1440, 900)
    try:
        box = pg.locator("#announce")
        assert box.get_attribute("role") == "status" and box.inner_text() == ""  # the first state is on the page
        for q in ("a", "ta", "zzz"):
            pg.fill("#search", q)
            n = sum(q in name.lower() for name in NAMES)
            pg.wait_for_function("q => document.getElementById('announce').textContent.endsWith(`\"${q}\"`)", arg=q)
            assert re.match(rf"{n} systems? match(es)? \"{q}\"$", box.text_content()), box.text_content()
    finally:
        pg.close()


def test_drill_down_prints_four_significant_digits_per_task(browser, served, store):
    _, X = store
    pg = open_page(browser, served, 1440, 900)
    try:
        name = NAMES[0]
        pg.locator(f"tr.sys[data-system='{name}'] button.rowbtn").click()
        pg.wait_for_selector("table.tasks td.num")
        cells = pg.locator("table.tasks").first.locator("tr").all()[1:]
        assert len(cells) == TASKS
        for j, tr in enumerate(cells):
            txt = tr.locator("td").nth(1).inner_text()
            v = float(f"{X[0, j]:.6f}")
            assert float(txt) == float(f"{v:.4g}"), (txt, v)
            assert len(re.sub(r"[^0-9]", "", txt).lstrip("0")) <= 4
    finally:
        pg.close()


def test_four_rules_fit_a_desktop_without_sideways_scrolling(browser, served):
    pg = open_page(browser, served, 1440, 900)
    try:
        heads = pg.locator("table.lb thead tr").first.locator("th").all_inner_texts()
        assert len(heads) == 4
        width, box = pg.evaluate("() => { const t = document.querySelector('table.lb'); "
                                 "return [t.scrollWidth, t.parentElement.clientWidth]; }")
        assert width <= box
        assert pg.locator("table.lb .ivbar").count() == 0 or not pg.locator("table.lb .ivbar").first.is_visible()
    finally:
        pg.close()


def test_skip_links_reach_each_section_from_the_first_tab(browser, served):
    pg = open_page(browser, served, 1440, 900)
    try:
        pg.keyboard.press("Tab")
        first = pg.evaluate("() => [document.activeElement.textContent, document.activeElement.getBoundingClientRect().left]")
        assert first[0] == "skip to the leaderboard" and first[1] >= 0  # shown while focused
        pg.keyboard.press("Enter")
        pg.keyboard.press("Tab")  # the next stop is inside the leaderboard, not the header or the overview
        assert pg.evaluate("() => Boolean(document.activeElement.closest('#board'))")
        for target in ("bump", "agreement"):
            assert pg.locator(f"nav.skip a[href='#{target}']").count() == 1 and pg.locator(f"#{target}").count() == 1
    finally:
        pg.close()


def test_the_sort_direction_said_is_the_order_of_the_values_shown(browser, served):
    """Review D1: a score column sorted best first (largest first) said 'ascending' and drew ▲."""
    import json

    pg = open_page(browser, served, 1440, 900)
    try:
        g = json.loads(pg.evaluate("async () => JSON.stringify(await (await fetch('api/snapshot')).json())"))["groups"][0]
        for key in ("0:score", "0:rank", "1:score"):
            ri, what = key.split(":")
            of = dict(zip(g["systems"], g["rules"][int(ri)][what]))
            for _ in range(2):
                pg.locator(f"th[data-key='{key}'] button").click()
                # one look at the page (it redraws on every update): the header's words, its arrow, the rows' order
                said, arrow, shown = pg.evaluate("""k => { const th = document.querySelector(`th[data-key='${k}']`);
                    return [th.getAttribute('aria-sort'), getComputedStyle(th, '::after').content,
                            [...document.querySelectorAll('table.lb tbody tr.sys')].map(r => r.dataset.system)]; }""", key)
                vals = [of[n] for n in shown if of[n] is not None]
                want = "descending" if vals == sorted(vals, reverse=True) and vals != sorted(vals) else "ascending"
                assert said == want, (key, said, vals)
                assert ("▼" in arrow) == (said == "descending"), (key, arrow)
    finally:
        pg.close()


def test_eta_takes_the_rate_of_the_recent_blocks(store, monkeypatch):
    """Review D2: a run that speeds up once warm (1 block per 5 s, then 5 per s) was priced at its average rate."""
    import engine.app.dashboard as dash

    clock = [1000.0]
    monkeypatch.setattr(dash.time, "time", lambda: clock[0])
    live = LiveStore(store[0].store, agree_budget=None)
    total = 400
    events = [(5.0 * k, k) for k in range(5)]  # slow: a block every 5 s up to t = 20
    events += [(20.0 + 0.2 * k, 4 + k) for k in range(1, 151)]  # then 5 blocks a second up to t = 50
    for t, done in events:
        clock[0] = 1000.0 + t
        timing = live._timing({"blocks_done": done, "blocks_total": total}, "partial", (float(done), float(total)))
    # by hand: the last block at t = 50 (154 done); 20 s earlier, t = 30, 54 done: 100 blocks in 20 s
    assert timing["eta_seconds"] == pytest.approx((total - 154) / (100 / 20.0))
    # the average since the start would say (400 - 154) / (154 / 50) = 80 s, not 49 s


@pytest.mark.parametrize("seed", range(6))
def test_eta_equals_a_loop_over_the_finishes_with_idle_polls(store, monkeypatch, seed):
    """The ETA against a plain loop: finishes at irregular, speeding-up times with polls that see no new block between
    them; the rate is that of the finishes since the last one at or before 20 s before the latest finish."""
    import engine.app.dashboard as dash

    rng = np.random.default_rng(seed)
    clock = [0.0]
    monkeypatch.setattr(dash.time, "time", lambda: clock[0])
    live = LiveStore(store[0].store, agree_budget=None)
    total, done, t = 300, 0, 0.0
    finishes = []  # (time, blocks done) at each change of the count
    for _ in range(60):
        t += float(rng.uniform(0.05, 3.0))
        if rng.random() < 0.7:  # a poll that sees new blocks, else an idle poll
            done += int(rng.integers(1, 4))
        clock[0] = t
        timing = live._timing({"blocks_done": done, "blocks_total": total}, "partial", (float(done), float(total)))
        if not finishes or finishes[-1][1] != done:
            finishes.append((t, done))
        last_t, last_done = finishes[-1]
        base_t, base_done = finishes[0]
        for ft, fd in finishes:
            if ft <= last_t - 20.0:
                base_t, base_done = ft, fd
        want = None
        if last_done > base_done and last_t > base_t:
            want = (total - done) * (last_t - base_t) / (done - base_done) - (t - last_t)
        assert (timing["eta_seconds"] is None) == (want is None)
        if want is not None:
            assert timing["eta_seconds"] == pytest.approx(want, rel=1e-12)


def test_rough_estimate_names_the_kinds_with_blocks_left_and_none_finished(store):
    """_untimed against a loop over synthetic groups: first sight, then later counts."""
    live = LiveStore(store[0].store, agree_budget=None)
    first = [{"name": "b", "kind": "bootstrap", "blocks_done": 2, "blocks_total": 10},
             {"name": "s", "kind": "subsets", "blocks_done": 0, "blocks_total": 4},
             {"name": "g", "kind": "grid", "blocks_done": 3, "blocks_total": 3}]
    assert live._untimed(first) == ["bootstrap", "subsets"]  # nothing finished since first sight yet; grid is complete
    seen = {g["name"]: g["blocks_done"] for g in first}
    for later in ([5, 0, 3], [2, 4, 3], [2, 1, 3], [10, 0, 3]):
        groups = [{**g, "blocks_done": d} for g, d in zip(first, later)]
        want = sorted({g["kind"] for g in groups if g["blocks_done"] < g["blocks_total"]
                       and g["blocks_done"] == seen[g["name"]]})
        assert live._untimed(groups) == want


def test_a_rule_with_one_replicate_done_has_that_replicate_as_its_score_interval(tmp_path):
    import zarr

    path, _ = write_input(tmp_path)
    cfg = parse_config({
        "seed": 3, "store": str(tmp_path / "one.zarr"), "input": {"path": str(path), "name": "named", "missing": "listwise"},
        "rules": [{"name": "mean"}, {"name": "borda"}],
        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 4, "block": 1}]})
    run_sweep(cfg, progress=False, max_blocks=1)
    live = LiveStore(cfg.store, agree_budget=None)
    live.update(strict=True)
    g = live.snapshot()["groups"][0]
    grp = zarr.open_group(str(cfg.store), mode="r")[g["name"]]
    done = np.asarray(grp["done"][...], dtype=bool)
    reps = np.asarray(grp["replicate_score"][...], dtype=float)
    for ri, r in enumerate(g["rules"]):
        if done[ri].sum() == 1:
            b = int(np.flatnonzero(done[ri])[0])  # block size 1: the block's index is its replicate's
            want = [None if np.isnan(v) else float(v) for v in reps[ri, b]]
            assert r["score_low"] == want and r["score_high"] == want
        else:
            assert not done[ri].any() and all(v is None for v in r["score_low"])
    assert done.sum() == 1


def test_a_finish_exactly_at_the_windows_start_is_its_base(store, monkeypatch):
    """Finishes at 0, 10, 30 s: at 30 s the finish of 10 s lies exactly 20 s back and is the base (8 blocks in 20 s),
    not the one of 0 s (9 blocks in 30 s)."""
    import engine.app.dashboard as dash

    clock = [0.0]
    monkeypatch.setattr(dash.time, "time", lambda: clock[0])
    live = LiveStore(store[0].store, agree_budget=None)
    for t, done in ((0.0, 1), (10.0, 2), (30.0, 10)):
        clock[0] = t
        timing = live._timing({"blocks_done": done, "blocks_total": 50}, "partial", (float(done), 50.0))
    assert timing["eta_seconds"] == (50 - 10) * 20.0 / 8
