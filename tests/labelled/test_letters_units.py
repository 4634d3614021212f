"""Letter groups compare systems in task SD units: a task's scale cannot decide them.

Checked against a loop (the standardisation of ``tests/app/test_report_paired.py``), by the property that multiplying a
task's scores by a positive constant (BLEU in points instead of fractions) changes no p-value and no letter, and on TAC
2008, where BLEU's 0-100 scale used to decide the test: M13 beats M42 on 14 of its 15 metrics and is now separated.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.labelled.canonical import scores_from_array
from engine.labelled.paired_tests import standardised

DATA = Path(__file__).resolve().parents[2] / "data"


def task_units(Y):
    """Scores Y (system, task, instance) minus their task's mean, over its standard deviation (over the systems and
    instances of the task, NaN left out; 1 when the task's scores are all equal), by loops."""
    out = np.full(Y.shape, np.nan)
    for t in range(Y.shape[1]):
        vals = [float(v) for v in Y[:, t, :].ravel() if not math.isnan(v)]
        m = sum(vals) / len(vals)
        sd = math.sqrt(sum((v - m) ** 2 for v in vals) / len(vals)) or 1.0
        for s in range(Y.shape[0]):
            for k in range(Y.shape[2]):
                out[s, t, k] = (Y[s, t, k] - m) / sd
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), holes=st.booleans())
def test_standardised_equals_the_loop(seed, holes):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(4, 3, 5)) * rng.uniform(0.01, 100, size=(1, 3, 1))
    if holes:
        Y[rng.random(Y.shape) < 0.2] = np.nan
        Y[:, :, 0] = np.where(np.isnan(Y[:, :, 0]), 1.0, Y[:, :, 0])  # every task keeps a score
    z = standardised(scores_from_array(Y, systems=[f"s{i}" for i in range(4)]))
    assert np.allclose(z.transpose("system", "task", "instance").values, task_units(Y), rtol=1e-12, atol=1e-12,
                       equal_nan=True)


def test_a_constant_task_is_only_centred():
    Y = np.ones((3, 2, 4))
    Y[:, 1] = np.arange(12).reshape(3, 4)
    z = standardised(scores_from_array(Y, systems=["a", "b", "c"]))
    assert np.all(z.isel(task=0).values == 0.0)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 1000), factor=st.sampled_from([1e-3, 7.0, 100.0, 2.5e4]))
def test_rescaling_a_task_changes_no_p_value_and_no_letter(seed, factor):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(5, 3, 6)) * 0.5 + np.linspace(1.0, 0.0, 5)[:, None, None]
    names = [f"s{i}" for i in range(5)]
    a = engine.letter_groups(scores_from_array(Y, systems=names), resamples=500, seed=2)
    Y2 = Y.copy()
    Y2[:, 1] *= factor
    b = engine.letter_groups(scores_from_array(Y2, systems=names), resamples=500, seed=2)
    assert a["systems"] == b["systems"] and a["letters"] == b["letters"]
    assert [p["p"] for p in a["pairs"]] == pytest.approx([p["p"] for p in b["pairs"]], rel=1e-9, abs=1e-12)
    assert a["mean"] == pytest.approx(b["mean"], rel=1e-9, abs=1e-12)


def test_tac_bleu_no_longer_decides_m13_against_m42():
    scores = engine.open_scores(DATA / "colombo_tac08.csv.gz")
    g = engine.letter_groups(scores, systems=["M13", "M42", "M37", "M44"], top_k=4, resamples=2000)
    pair = next(p for p in g["pairs"] if {p["a"], p["b"]} == {"M13", "M42"})
    assert pair["different"]
    assert not set(g["letters"][g["systems"].index("M13")]) & set(g["letters"][g["systems"].index("M42")])
    assert "z-score" in g["measure"]
    # independent: M13 beats M42 on most metrics (per-task means over topics)
    x = engine.orient(scores.sel(system=["M13", "M42"])).mean("instance")
    wins = int((x.sel(system="M13") > x.sel(system="M42")).sum())
    assert wins >= 13


def test_report_letters_and_critical_difference_give_one_verdict(tmp_path):
    import csv

    from engine.app.report import build_report

    build_report(DATA / "esann_automl.csv", tmp_path / "r", rules=["borda"], replicates=0, repeats=0, formats=("svg",),
                 paired_top_k=15, test="nemenyi")
    tables = tmp_path / "r" / "tables"
    with (tables / "average_ranks.csv").open(encoding="utf-8") as fh:
        avg = {r["system"]: float(r["average rank"] if "average rank" in r else r["average_rank"]) for r in csv.DictReader(fh)}
    with (tables / "friedman.csv").open(encoding="utf-8") as fh:
        cd = next(float(r["value"]) for r in csv.DictReader(fh) if r["statistic"] == "Nemenyi critical difference CD")
    with (tables / "paired_tests.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 15 * 14 // 2
    for r in rows:
        a, b = r.get("system"), r.get("opponent")
        assert (r["different"] == "True") == (abs(avg[a] - avg[b]) >= cd - 5e-4), (a, b)


def test_listwise_letters_compare_the_systems_the_cd_section_compares(tmp_path):
    """vnr_glue with --missing listwise drops 3 systems: the letters' Friedman test is the CD section's (97 systems over
    14 tasks), not one over 100 systems and the 12 tasks they all have."""
    import csv
    import re

    from engine.app.report import build_report

    index = build_report(DATA / "vnr_glue.csv", tmp_path / "r", rules=["borda"], missing="listwise", replicates=0,
                         repeats=0, formats=("svg",), paired_top_k=15)
    with (tmp_path / "r" / "tables" / "friedman.csv").open(encoding="utf-8") as fh:
        stats = {r["statistic"]: r["value"] for r in csv.DictReader(fh)}
    page = index.read_text(encoding="utf-8")
    paired = page[page.index("<h2>Paired tests</h2>"):]
    chi = re.search(r"Friedman test on [^:]*: chi-square = ([0-9.]+)", paired)
    assert chi and chi.group(1) == stats["Friedman chi-square (tie-corrected)"]
    assert stats["systems k / tasks N"] == "97 / 14"
