"""Letter groups compare systems in task SD units: a task's scale cannot decide them.

Checked against a loop (the standardisation of ``tests/app/test_report_paired.py``), by the property that multiplying a
task's scores by a positive constant (BLEU in points instead of fractions) changes no p-value and no letter, and on TAC
2008, where BLEU's 0-100 scale used to decide the test: M13 beats M42 on 14 of its 15 metrics and is now separated.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_report_paired import task_units

import engine
from engine.labelled.canonical import scores_from_array
from engine.labelled.paired_tests import standardised

DATA = Path(__file__).resolve().parents[2] / "data"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), holes=st.booleans())
def test_standardised_equals_the_loop(seed, holes):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(4, 3, 5)) * rng.uniform(0.01, 100, size=(1, 3, 1))
    if holes:
        Y[rng.random(Y.shape) < 0.2] = np.nan
        Y[:, :, 0] = np.where(np.isnan(Y[:, :, 0]), 1.0, Y[:, :, 0])  # every task keeps a score
    x = scores_from_array(Y, systems=[f"s{i}" for i in range(4)])
    z, ratio = standardised(x)
    want = task_units(Y)
    assert np.allclose(z.transpose("system", "task", "instance").values, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    sd = np.array([np.nanstd(Y[:, t]) for t in range(3)])
    assert ratio == pytest.approx(sd.max() / sd.min(), rel=1e-12)


def test_a_constant_task_is_left_at_zero():
    Y = np.ones((3, 2, 4))
    Y[:, 1] = np.arange(12).reshape(3, 4)
    z, ratio = standardised(scores_from_array(Y, systems=["a", "b", "c"]))
    assert np.all(z.sel(task=z["task"].values[0]).values == 0.0) and ratio is None


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
    assert any("fold" in n and "task SD units" in n for n in g["notes"])  # the scales are said to differ
    assert g["mean_label"] == "mean in task SD units"
    # independent: M13 beats M42 on most metrics (per-task means over topics)
    x = engine.orient(scores.sel(system=["M13", "M42"])).mean("instance")
    wins = int((x.sel(system="M13") > x.sel(system="M42")).sum())
    assert wins >= 13


def _nemenyi_decisions(X, names):
    """Average ranks over the complete tasks (scipy's rankdata, 1 = best) and Nemenyi's CD (Demsar 2006) with q from
    scipy's studentized range: two systems differ when their average ranks differ by at least CD."""
    from scipy import stats

    Xc = X[np.isfinite(X).all(axis=1)]
    n, k = Xc.shape
    avg = np.array([stats.rankdata(-row) for row in Xc]).mean(axis=0)
    cd = stats.studentized_range.ppf(0.95, k, np.inf) / np.sqrt(2) * np.sqrt(k * (k + 1) / (6 * n))
    return {frozenset((a, b)): bool(abs(avg[i] - avg[j]) >= cd) for i, a in enumerate(names) for j, b in enumerate(names)
            if i < j}, cd


def test_task_level_letters_of_a_shortlist_read_the_comparison_of_all_systems():
    """esann_automl, 17 systems: the letters of the best 15 come from Nemenyi over all 17 (one CD on a page)."""
    from test_report_paired import assert_letters_match

    scores = engine.open_scores(DATA / "esann_automl.csv")
    x = engine.orient(scores).isel(instance=0).transpose("task", "system")
    names = [str(s) for s in x["system"].values]
    different, cd = _nemenyi_decisions(np.asarray(x.values, dtype=float), names)
    g = engine.letter_groups(scores, top_k=15, test="nemenyi")
    assert g["compared"] == 17 and len(g["systems"]) == 15
    assert g["cd"] == pytest.approx(cd, rel=1e-3)
    shown = g["systems"]
    assert_letters_match(shown, dict(zip(shown, g["letters"])), {p: d for p, d in different.items() if p <= set(shown)})
    # and the shortlist alone would have had another critical difference: the reason for reading all 17
    _, cd15 = _nemenyi_decisions(np.asarray(x.sel(system=shown).values, dtype=float), shown)
    assert cd15 < cd - 0.3


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
