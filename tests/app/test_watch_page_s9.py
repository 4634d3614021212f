"""The live page of ``votebench watch --dashboard`` (issue 26): the dashboard's own leaderboard over the watch's
snapshot, and a "What changed" list that tells moves caused by new entries from real ones.

Checked against independent computations: the change classification against plain loops over every pair of
systems (and the rank arithmetic it implies), the snapshot's score intervals and Rank(UB) against the bootstrap's
replicate scores recomputed with :func:`engine.bootstrap` and counted in loops, and the page (headless Chromium on a
real ``votebench watch --dashboard`` run over a temp folder of lm-eval outputs) against the snapshot: its rows, marks,
exported CSV, the live region, short times, the phone width and axe-core.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from conftest import axe_path, bf_min_rank

from engine.watch.snapshot import change_records

REPO = Path(__file__).resolve().parents[2]
TASKS = [f"t{k}" for k in range(6)]
N_DOCS = 30
STAMP = "2024-05-01T10-00-00"


# ------------------------------------------------------------------------------------ change classification
def brute_kinds(before: dict[str, int], now: dict[str, int]) -> dict[str, str]:
    """Per system ranked before and now whose rank changed: up / down / moved / shifted, from every pair's order."""
    out = {}
    common = [s for s in now if s in before]
    for i in common:
        if before[i] == now[i]:
            continue
        passed = fell = False
        for j in common:
            if j == i:
                continue
            ahead_before, ahead_now = before[j] < before[i], now[j] < now[i]
            passed |= ahead_before and not ahead_now
            fell |= ahead_now and not ahead_before
        out[i] = "moved" if passed and fell else "up" if passed else "down" if fell else "shifted"
    return out


def ranks(scores: dict[str, float]) -> dict[str, int]:
    names = list(scores)
    r = bf_min_rank(np.array([scores[n] for n in names]))
    return {n: int(v) for n, v in zip(names, r)}


def test_new_entries_above_shift_the_others_and_are_not_called_down():
    before = {"M1": [1, None, None], "M2": [2, None, None], "M3": [3, None, None]}
    rows = [{"system": s, "rank": k + 1} for k, s in enumerate(["N1", "N2", "N3", "M1", "M2", "M3"])]
    recs = {c["system"]: c for c in change_records(before, rows)}
    assert [recs[s]["kind"] for s in ("N1", "N2", "N3")] == ["new"] * 3
    for k, s in enumerate(["M1", "M2", "M3"]):
        assert recs[s]["kind"] == "shifted" and recs[s]["new_above"] == 3
        assert recs[s]["text"] == f"{s}: rank {k + 1} -> {k + 4} (3 new above)"
    # M2 overtakes M1 while a new system enters between them: M1 fell behind an old system (down), M2 passed it (up)
    rows = [{"system": s, "rank": k + 1} for k, s in enumerate(["M2", "N1", "M1", "M3"])]
    recs = {c["system"]: c for c in change_records(before, rows)}
    assert (recs["M1"]["kind"], recs["M2"]["kind"], recs["M3"]["kind"]) == ("down", "up", "shifted")
    assert recs["M1"]["fell_behind"] == ["M2"] and recs["M1"]["text"].endswith("(down)")


@pytest.mark.parametrize("seed", range(40))
def test_change_kinds_equal_a_pairwise_loop(seed):
    rng = np.random.default_rng(seed)
    names = [f"s{k}" for k in range(rng.integers(3, 9))]
    old = {n: float(rng.integers(0, 4)) for n in names if rng.random() < 0.8}  # ties on purpose
    new = {n: float(rng.integers(0, 4)) for n in names if rng.random() < 0.8}
    before, now = ranks(old), ranks(new)
    rows = sorted(({"system": s, "rank": r} for s, r in now.items()), key=lambda d: (d["rank"], d["system"]))
    recs = change_records({s: [r, None, None] for s, r in before.items()}, rows)
    got = {c["system"]: c for c in recs}
    want = brute_kinds(before, now)
    assert {s: c["kind"] for s, c in got.items() if s in before and s in now} == want
    assert {s for s, c in got.items() if c["kind"] == "new"} == set(now) - set(before)
    assert {s for s, c in got.items() if c["kind"] == "gone"} == set(before) - set(now)
    for s in want:  # a min rank is 1 + the systems strictly above: the move is what entered, left, passed, fell behind
        c = got[s]
        assert now[s] - before[s] == len(c["fell_behind"]) - len(c["passed"]) + c["new_above"] - c["left_above"]
        assert c["new_above"] == sum(1 for o in now if o not in before and now[o] < now[s])


# ------------------------------------------------------------------------------------ a real watch, with the page
def write_model(root: Path, name: str, skill: float, seed: int) -> Path:
    """An lm-eval ``--log_samples`` folder (samples first, results last) in a staging folder beside ``root``."""
    rng = np.random.default_rng(seed)
    d = root.parent / "staging" / name.replace("/", "__")
    d.mkdir(parents=True)
    for t in TASKS:
        lines = [json.dumps({"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": float(rng.random() < skill)})
                 for i in range(N_DOCS)]
        (d / f"samples_{t}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    (d / f"results_{STAMP}.json").write_text(json.dumps({"model_name": name,
                                                         "higher_is_better": {t: {"acc": True} for t in TASKS}}))
    return d


def drop(root: Path, models) -> None:
    """Write every model, then move them into ``root`` together (one publication sees them all)."""
    for d in [write_model(root, name, skill, seed) for name, skill, seed in models]:
        shutil.move(str(d), str(root / d.name))


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def wait_for(fn, timeout=90.0):
    end = time.monotonic() + timeout
    while not (got := fn()):
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.2)
    return got


@contextlib.contextmanager
def watch_page(cwd: Path, root: Path, store: Path, *options: str):
    """``votebench watch ROOT --store STORE --rule mean OPTIONS --dashboard`` in a child process: its page's URL; the
    watch stopped (Ctrl-C) on leaving."""
    proc = subprocess.Popen([sys.executable, "-m", "engine", "watch", str(root), "--store", str(store), *options,
                             "--rule", "mean", "--dashboard", "--port", "0", "--interval", "0.3", "--settle", "0.3",
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=cwd)
    try:
        line = proc.stdout.readline()
        assert "dashboard at http://" in line, line + proc.stderr.read()
        yield line.split(" at ")[1].strip()
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=30)


def snap_when(url: str, ok):
    """The page's snapshot when ``ok`` holds of it, else None (for :func:`wait_for`)."""
    got = get_json(url + "api/snapshot")
    return got if ok(got) else None


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """``votebench watch --rule mean --over tasks --dashboard`` on a folder: 4 models, then 3 stronger ones (all entering
    above; a system's mean does not depend on the others, so the old systems keep their order)."""
    tmp = tmp_path_factory.mktemp("watch_page")
    root, store = tmp / "runs", tmp / "lb.zarr"
    root.mkdir()
    with watch_page(tmp, root, store, "--over", "tasks", "--replicates", "100") as url:
        drop(root, [("org/a", 0.5, 0), ("org/b", 0.45, 1), ("org/c", 0.4, 2), ("org/d", 0.35, 3)])
        wait_for(lambda: get_json(url + "api/snapshot").get("n_systems") == 4)
        drop(root, [("new/x", 0.85, 10), ("new/y", 0.75, 11), ("new/z", 0.65, 12)])
        snap = wait_for(lambda: snap_when(url, lambda g: g.get("n_systems") == 7))
        yield url, store, snap, root


def test_snapshot_group_numbers_equal_a_recomputed_bootstrap(watched):
    import engine

    _, store, snap, _ = watched
    assert sum(c["kind"] == "new" for c in snap["change_list"]) == 3, "the three entries published at once"
    g = snap["groups"][0]
    r = g["rules"][0]
    assert g["kind"] == "bootstrap" and snap["level"] == 0.95 and r["unit"] == "mean score over tasks"
    assert {s["system"]: s["rank"] for s in snap["ranking"]} == dict(zip(g["systems"], r["rank"]))
    boot = engine.bootstrap(engine.open_scores(store), rule=snap["rule"], level=snap["aggregation_level"], over="tasks",
                            replicates=100, seed=0)
    R = np.asarray(boot["replicate_score"].transpose("replicate", "system").sel(system=g["systems"]).values, dtype=float)
    B, S = R.shape
    lo, hi = np.percentile(R, [2.5, 97.5], axis=0)
    assert np.allclose(r["score_low"], lo) and np.allclose(r["score_high"], hi)
    for i in range(S):  # Rank(UB): 1 + the systems above it in at least 95% of the replicates, counted in a loop
        above = sum(1 for j in range(S) if j != i and sum(R[b, j] > R[b, i] for b in range(B)) / B >= 0.95)
        assert r["rank_ub"][i] == 1 + above, g["systems"][i]


def test_the_page_draws_the_dashboard_leaderboard_and_what_changed(watched, browser, tmp_path):
    url, _, snap, root = watched
    g, r = snap["groups"][0], snap["groups"][0]["rules"][0]
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto(url)
    pg.wait_for_function("document.querySelectorAll('table.lb tbody tr.sys').length === 7 && document.body.dataset.version")
    rows = pg.eval_on_selector_all("table.lb tbody tr.sys", "rs => rs.map(tr => [tr.dataset.system, "
                                   "Number(tr.querySelector('td[data-n]').dataset.n), tr.querySelector('td[data-n]').textContent])")
    rank = dict(zip(g["systems"], r["rank"]))
    assert sorted((s, n) for s, n, _ in rows) == sorted(rank.items())
    for s, n, text in rows:  # the leader's star, '=' on a shared rank
        shared = sum(v == n for v in rank.values()) > 1
        assert text.startswith(f"{n}{'=' if shared else ''}") and ("★" in text) == (n == 1), (s, text)
    assert "mean = mean score over tasks" in pg.inner_text(".settings")
    # the exported CSV is the snapshot's numbers (once the judges · cells column, asked of the server, is in)
    pg.wait_for_function("[...document.querySelectorAll('table.lb tbody tr.sys td.n')].every(td => td.dataset.lo)")
    with pg.expect_download() as dl:
        pg.click("#board-export button[data-export=csv]")
    got = list(csv.DictReader(io.StringIO(Path(dl.value.path()).read_text())))
    at = {s: i for i, s in enumerate(g["systems"])}
    assert len(got) == 7
    for row in got:
        i = at[row["system"]]
        assert float(row["mean score"]) == pytest.approx(r["score"][i])
        assert float(row["mean score 95% CI low"]) == pytest.approx(r["score_low"][i])
        assert float(row["mean rank 95% CI low"]) == r["rank_low"][i] and float(row["mean rank 95% CI high"]) == r["rank_high"][i]
        assert int(row["mean Rank(UB)"]) == r["rank_ub"][i]
        assert row["judges"] == str(len(TASKS)) and row["cells"] == str(len(TASKS) * N_DOCS)
    # sortable headers: a button in the header cell, aria-sort on the sorted one
    pg.click("th[data-key='0:score'] button")
    assert pg.get_attribute("th[data-key='0:score']", "aria-sort") == "descending"  # best first: the largest score first
    # What changed: the three entries, and the four old systems pushed down by them in one "shifted" line, none "down"
    assert pg.get_attribute("#changes", "aria-live") == "polite"
    kinds = pg.eval_on_selector_all("#changes li", "ls => ls.map(li => li.dataset.kind)")
    assert sorted(kinds) == ["new", "new", "new", "shifted"]
    line = pg.inner_text("#changes li[data-kind=shifted]")
    assert all(f"org/{c}" in line for c in "abcd")
    assert "moved only by 3 new above; their order among the others unchanged" in line
    # short times, the full date on hover
    times = pg.eval_on_selector_all("#log time", "ts => ts.map(t => t.textContent)")
    assert times and all(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in times)
    assert pg.inner_text("#provenance tbody tr:first-child td:nth-child(3)").count(":") == 2
    # a phone: nothing scrolls the page sideways; axe-core finds no serious or critical violation at either width
    for width in (1440, 390):
        pg.set_viewport_size({"width": width, "height": 844})
        pg.wait_for_timeout(300)
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        axe = axe_path()
        if axe is not None:
            pg.add_script_tag(path=str(axe))
            bad = pg.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
                              ".filter(v => ['serious', 'critical'].includes(v.impact)).map(v => v.id)")
            assert bad == [], (width, bad)
    ctx.close()


def test_a_row_opens_its_per_task_scores_and_the_letter_groups_are_computed(watched, browser):
    url, _, snap, root = watched
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    pg.goto(url)
    pg.wait_for_function("document.querySelectorAll('table.lb tbody tr.sys').length === 7")
    pg.click("tr.sys[data-system='new/x'] button.rowbtn")
    pg.wait_for_selector("tr.detail table.tasks td")
    shown = pg.eval_on_selector_all("tr.detail table.tasks tr",
                                    "rs => rs.slice(1).map(r => [r.cells[0].textContent, r.cells[1].textContent])")
    want = {}
    for f in sorted((root / "new__x").glob("samples_*.jsonl")):  # the mean accuracy of each task, from the files
        want[f.name.split("_")[1]] = np.mean([json.loads(x)["acc"] for x in f.read_text().splitlines()])
    assert {t: float(v) for t, v in shown} == pytest.approx(want, abs=1e-4)
    pg.click("#letters-button")
    pg.wait_for_selector("#letters table", timeout=60_000)
    names = pg.eval_on_selector_all("#letters table tr", "rs => rs.slice(1).map(r => r.cells[0].textContent)")
    assert sorted(names) == sorted(snap["groups"][0]["systems"])
    ctx.close()


def test_provenance_is_no_column_of_the_leaderboard(watched, browser):
    url, _, snap, root = watched
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    pg = ctx.new_page()
    pg.goto(url)
    pg.wait_for_function("document.querySelectorAll('table.lb tbody tr.sys').length === 7")
    heads = pg.eval_on_selector_all("table.lb thead th", "hs => hs.map(h => h.textContent)")
    assert not any("provenance" in h for h in heads)
    names = pg.eval_on_selector_all("#provenance tbody th[scope=row]", "hs => hs.map(h => h.textContent)")
    assert sorted(names) == sorted(snap["provenance"])
    ctx.close()




def test_board_group_keeps_a_system_the_bootstrap_did_not_rank():
    """A system of the ranking that the bootstrap has no interval for gets none (not another system's)."""
    import xarray as xr

    import engine
    from engine.labelled.comparison import bootstrap_intervals
    from engine.watch.snapshot import board_group

    X = np.array([[0.9, 0.8, 0.7, 0.95], [0.5, 0.6, 0.4, 0.55], [0.2, 0.1, 0.3, 0.25]])
    scores = engine.scores_from_array(X, systems=["a", "b", "c"])
    boot_ds = engine.bootstrap(scores, rule="mean", over="tasks", replicates=50, seed=1)
    boot = bootstrap_intervals(boot_ds, level=0.9)
    ds = xr.Dataset({"score": ("system", [0.84, 0.51, 0.2, 0.1]), "rank": ("system", [1.0, 2.0, 3.0, 4.0])},
                    coords={"system": ["a", "b", "c", "late"]}, attrs={"rule": "mean"})
    r = board_group(ds, boot, boot_ds["replicate_score"], level=0.9, over="tasks")["rules"][0]
    assert r["rank_low"][3] is None and r["rank_ub"][3] is None and r["score_low"][3] is None
    R = np.asarray(boot_ds["replicate_score"].transpose("replicate", "system").values, dtype=float)
    for i in range(3):  # 1 + the systems above it in at least 90% (the level) of the 50 replicates, counted in a loop
        assert r["rank_ub"][i] == 1 + sum(1 for j in range(3) if j != i and np.mean(R[:, j] > R[:, i]) >= 0.9)
    assert r["rank_low"][:3] == boot.low.tolist() and r["leader"] == [0]


def test_drawing_level_with_an_old_system_is_said_apart_from_passing_it():
    before = {"A": [1, None, None], "B": [2, None, None], "C": [3, None, None]}
    rows = [{"system": "N", "rank": 1}, {"system": "M", "rank": 1}, {"system": "A", "rank": 3}, {"system": "B", "rank": 3},
            {"system": "C", "rank": 5}]
    recs = {c["system"]: c for c in change_records(before, rows)}
    # B's rank number grew (2 -> 3: two entries above) while it caught up with A: up among the old systems
    assert recs["B"]["kind"] == "up" and recs["B"]["passed"] == ["A"] and recs["B"]["drew_level"] == ["A"]
    assert recs["B"]["new_above"] == 2 and (recs["B"]["from"], recs["B"]["to"]) == (2, 3)
    assert recs["A"]["kind"] == "shifted" and recs["C"]["kind"] == "shifted" and recs["C"]["new_above"] == 2


def test_rejections_reach_the_page_before_any_ranking_and_never_restamp_what_changed(tmp_path):
    """Review W1: before two systems were in, /api/snapshot said no bad output while stderr listed every rejection.
    Review W3: a later rejection restamped the last publication's time."""
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    root.mkdir()
    bad = ["broken_a.jsonl", "broken_b.json"]
    (root / bad[0]).write_text('{"doc_id": 0, "acc": \n')  # truncated JSON
    (root / bad[1]).write_text("not json at all")
    with watch_page(tmp_path, root, store) as url:
        snap = wait_for(lambda: snap_when(url, lambda g: len(g.get("rejected", [])) == 2))
        assert snap["status"] == "waiting" and sorted(Path(r["unit"]).name for r in snap["rejected"]) == sorted(bad)
        assert all(r["error"] for r in snap["rejected"]) and snap["log"]
        drop(root, [("org/a", 0.5, 0), ("org/b", 0.45, 1)])
        first = wait_for(lambda: snap_when(url, lambda g: g.get("n_systems") == 2))
        (root / "broken_c.json").write_text("{")
        later = wait_for(lambda: snap_when(url, lambda g: len(g.get("rejected", [])) == 3))
        assert later["published"] == first["published"] and later["change_list"] == first["change_list"]


def test_judges_of_a_system_that_arrives_while_the_page_is_open(tmp_path, browser):
    """Review W2: the counts were fetched once per input, so a late entry showed '–' and exported empty cells."""
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    root.mkdir()
    with watch_page(tmp_path, root, store) as url:
        drop(root, [("org/a", 0.5, 0), ("org/b", 0.45, 1)])
        wait_for(lambda: get_json(url + "api/snapshot").get("n_systems") == 2)
        ctx = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
        pg = ctx.new_page()
        pg.goto(url)
        pg.wait_for_function("[...document.querySelectorAll('table.lb tbody tr.sys td.n')].length === 2 && "
                             "[...document.querySelectorAll('table.lb tbody tr.sys td.n')].every(td => td.dataset.lo)")
        drop(root, [("late/c", 0.9, 2)])
        pg.wait_for_function("[...document.querySelectorAll('table.lb tbody tr.sys td.n')].length === 3 && "
                             "[...document.querySelectorAll('table.lb tbody tr.sys td.n')].every(td => td.dataset.lo)",
                             timeout=60000)
        late = pg.locator("tr.sys[data-system='late/c'] td.n")
        assert (late.get_attribute("data-lo"), late.get_attribute("data-hi")) == (str(len(TASKS)), str(len(TASKS) * N_DOCS))
        ctx.close()
