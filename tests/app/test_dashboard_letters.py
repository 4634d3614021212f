"""The dashboard's letter groups (``/api/letters``): the paired tests of a sweep input's best systems, on demand.

The letters are checked against independent decisions (``scipy.stats.permutation_test``, exact, and Holm's correction
written out in tests/app/test_report_paired.py): two systems share a letter exactly when the tests do not separate them.
The page is driven in headless Chromium: the button, the table it fetches, no script error.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from test_report_paired import assert_letters_match, holm

from engine.app import dashboard
from engine.app.dashboard import LiveStore, start_in_background
from engine.sweep import parse_config, run_sweep

SYSTEMS = [f"sys-{c}" for c in "abcdef"]


def scores() -> np.ndarray:
    """6 systems x 2 tasks x 5 instances (2^10 sign patterns: the dashboard's permutation tests are exact)."""
    rng = np.random.default_rng(4)
    return rng.normal(size=(6, 2, 5)) * 0.3 + np.array([0.0, 0.3, 0.6, 1.3, 1.6, 1.9])[:, None, None]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("letters")
    Y = scores()
    lines = ["system,task,instance,score"] + [f"{SYSTEMS[s]},t{t},{k},{float(Y[s, t, k])!r}" for s in range(6) for t in range(2)
                                              for k in range(5)]
    path = folder / "inst.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = parse_config({"seed": 1, "store": str(folder / "s.zarr"), "input": {"path": str(path), "name": "inst"},
                        "rules": [{"name": "mean"}],
                        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 4, "block": 4}]})
    run_sweep(cfg, progress=False)
    return Path(cfg.store)


def zscores() -> np.ndarray:
    """The scores standardised within each task (over all systems and instances): what the letters compare."""
    Y = scores()
    return (Y - Y.mean(axis=(0, 2), keepdims=True)) / Y.std(axis=(0, 2), keepdims=True)


def independent_decisions(alpha: float) -> dict:
    Y = zscores()
    pairs = list(itertools.combinations(range(6), 2))
    p = [stats.permutation_test((Y[i].ravel(), Y[j].ravel()), lambda u, v: np.mean(u - v), permutation_type="samples",
                                n_resamples=np.inf).pvalue for i, j in pairs]
    return {frozenset((SYSTEMS[i], SYSTEMS[j])): bool(q <= alpha) for (i, j), q in zip(pairs, holm(p))}


def test_letter_groups_follow_independent_permutation_tests(store):
    live = LiveStore(store)
    live.update(strict=True)
    got = live.letter_groups("inst")
    assert got["level"] == "instance" and got["test"] == "permutation" and got["correction"] == "holm"
    assert got["alpha"] == pytest.approx(0.05) and got["candidates"] == 6 and got["input"] == "inst"
    mean = zscores().mean(axis=(1, 2))
    assert got["systems"] == [SYSTEMS[i] for i in np.argsort(-mean, kind="stable")]
    assert got["mean"] == pytest.approx(sorted(mean, reverse=True))
    different = independent_decisions(0.05)
    assert 0 < sum(different.values()) < len(different)
    assert_letters_match(got["systems"], dict(zip(got["systems"], got["letters"])), different)
    assert live.letter_groups("inst") is got  # computed once
    with pytest.raises(LookupError):
        live.letter_groups("other")


def test_heavy_inputs_are_refused_with_a_reason(store, monkeypatch):
    monkeypatch.setattr(dashboard, "LETTER_WORK", 10.0)
    live = LiveStore(store)
    live.update(strict=True)
    got = live.letter_groups("inst")
    assert set(got) == {"error"} and "votebench report" in got["error"] and "operations" in got["error"]


def test_the_page_shows_the_letters_on_demand(store):
    from test_dashboard_browser import ARGS, CHROMIUM, sync_api  # skips this test without chromium or playwright

    url, stop = start_in_background(store, port=0, poll=0.1, heartbeat=2.0)
    try:
        with sync_api.sync_playwright() as p:
            b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            page = b.new_page(viewport={"width": 1366, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            sync_api.expect(page.locator("#status")).to_have_text("complete", timeout=30_000)
            page.click("#letters-button")
            sync_api.expect(page.locator("#letters table")).to_be_visible(timeout=30_000)
            rows = page.locator("#letters table tr").all_inner_texts()[1:]
            snap = json.loads(page.evaluate("fetch('api/snapshot').then(r => r.text())"))
            g = next(x for x in snap["groups"] if x["kind"] == "bootstrap")  # the board's group, sorted by its first rule
            served = json.loads(page.evaluate(f"fetch('api/letters?input=inst&group={g['name']}&rule={g['rules'][0]['rule']}')"
                                              ".then(r => r.text())"))
            order = sorted(range(len(served["systems"])), key=lambda k: served["rule_rank"][k])  # listed by the rule's rank
            assert [r.split("\t")[0] for r in rows] == [served["systems"][k] for k in order]
            shown = [r.split("\t")[3].replace(" ", "") for r in rows]
            assert shown == [served["letters"][k] for k in order]
            text = page.inner_text("#letters")
            assert "paired permutation test" in text and "Holm" in text and "alpha = 0.05" in text
            assert errors == []
            b.close()
    finally:
        stop()
