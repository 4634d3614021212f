"""Issue 24: the fast paths of ``votebench report`` give the numbers of the slow generic path.

The reference ranks every task subset and every bootstrap replicate alone with :func:`engine.rank`
(plain loops over subsets / replicates) and correlates with :func:`scipy.stats.kendalltau`; the
report's tables (``subset_curves.csv``, ``intervals.csv``) must hold the same numbers.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy.stats import kendalltau

import engine
from engine.app.report import build_report
from engine.kernels.resample import subset_indices
from engine.labelled.robustness import task_subset_curve

RULES = ["borda", "copeland", "bradley_terry", "elo", "median", "win_rate"]


def table(n_systems: int = 9, n_tasks: int = 5, seed: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n_systems, n_tasks)).astype(float)  # small integers: many ties
    X *= 10.0 ** np.arange(n_tasks)  # a scale per task
    return engine.scores_from_array(X, systems=[f"s{i}" for i in range(n_systems)],
                                    tasks=[f"t{j}" for j in range(n_tasks)])


def reference_subset_taus(scores, rule: str, sizes, repeats: int, seed: int) -> np.ndarray:
    """tau (size, replicate): engine.rank on each drawn subset alone, scipy's tau-b with the full ranking."""
    full = np.asarray(engine.rank(scores, rule=rule)["score"].values, dtype=np.float64)
    T = scores.sizes["task"]
    out = np.full((len(sizes), repeats), np.nan)
    for j, t in enumerate(sizes):
        for b, idx in enumerate(subset_indices(T, t, seed=seed, replicates=repeats)):
            sub = np.asarray(engine.rank(scores.isel(task=list(idx)), rule=rule)["score"].values, dtype=np.float64)
            ok = np.isfinite(sub) & np.isfinite(full)
            out[j, b] = kendalltau(sub[ok], full[ok]).statistic
    return out


@pytest.mark.parametrize("rule", RULES)
def test_subset_curve_equals_one_subset_at_a_time(rule):
    """Subsets drawn twice are ranked once: the taus stay those of ranking every subset alone."""
    scores = table()
    sizes, repeats = [1, 2, 4, 5], 12  # size 1 and 5 repeat subsets (5 and 1 distinct)
    ds = task_subset_curve(scores, rules=[rule], sizes=sizes, repeats=repeats, seed=4)
    ref = reference_subset_taus(scores, rule, sizes, repeats, seed=4)
    np.testing.assert_allclose(np.asarray(ds["tau"].values)[0], ref, rtol=0, atol=1e-12)


def test_random_judge_subsets_keep_their_batch_draws():
    """random_judge draws one task per batch element: its subsets are not merged (the kernel on every drawn subset)."""
    from engine.kernels.baselines import random_judge_across

    scores = table()
    sizes, repeats = [1, 5], 12
    X = np.asarray(scores.values[:, :, 0], dtype=np.float64).T  # (T, S)
    ds = task_subset_curve(scores, rules=["random_judge"], sizes=sizes, repeats=repeats, seed=4)
    full = random_judge_across(X)
    for j, t in enumerate(sizes):
        sub = random_judge_across(X[subset_indices(X.shape[0], t, seed=4, replicates=repeats)])
        ref = [kendalltau(row, full).statistic for row in sub]
        np.testing.assert_allclose(np.asarray(ds["tau"].values)[0, j], ref, rtol=0, atol=1e-12)


def read(path):
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_report_subset_table_equals_the_generic_path(tmp_path):
    """The report's subset-curve table: mean, std (ddof 1) and count of the reference taus, per rule and size."""
    scores = table(n_systems=8, n_tasks=4)
    rules = ["borda", "bradley_terry"]
    build_report(scores, tmp_path / "rep", rules=rules, replicates=0, repeats=10, seed=2, formats=["png"],
                 paired_top_k=0)
    rows = read(tmp_path / "rep" / "tables" / "subset_curves.csv")
    got = {(r["rule"], int(r["subset_size"])): r for r in rows}
    for rule in ["mean", *rules]:
        ref = reference_subset_taus(scores, rule, [1, 2, 3, 4], 10, seed=2)
        for j, t in enumerate([1, 2, 3, 4]):
            v = ref[j][np.isfinite(ref[j])]
            r = got[(rule, t)]
            assert int(r["n"]) == v.size
            if v.size:
                assert float(r["tau_mean"]) == pytest.approx(v.mean(), abs=1e-12)
            if v.size > 1:
                assert float(r["tau_std"]) == pytest.approx(v.std(ddof=1), abs=1e-12)
