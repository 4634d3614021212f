"""Pavao's bootstrap criteria (engine.labelled.bootstrap.pavao_criteria) against a per-trial brute force."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

import engine
from engine.kernels.resample import resample_indices
from engine.labelled.bootstrap import pavao_criteria
from engine.rules import RULES


def _brute(X: np.ndarray, rule: str, trials: int, seed: int) -> np.ndarray:
    T, S = X.shape
    out = []
    for b in range(trials):
        ti = resample_indices(T, seed=seed, replicates=[b], stream="tasks")[0]
        si = resample_indices(S, seed=seed, replicates=[b], stream="systems")[0]
        M = X[np.ix_(ti, si)]
        score = RULES[rule].kernel(M)
        winners = np.flatnonzero(score == score.max())
        ranks = np.stack([rankdata(-row) for row in M])  # average ranks per judge, 1 = best
        m = M.shape[1]
        war = np.mean([1 - (ranks[:, w].mean() - 1) / (m - 1) for w in winners])
        cw = -1
        for i in range(m):
            if all((M[:, i] > M[:, j]).sum() > (M[:, j] > M[:, i]).sum() for j in range(m) if j != i):
                cw = i
        first = np.nan if cw < 0 else float(score[cw] == score.max())
        oob = sorted(set(range(T)) - set(ti.tolist()))
        cors = []
        for t in oob:
            r = spearmanr(score, X[t, si]).statistic
            if not np.isnan(r):
                cors.append(r)
        gen = np.mean(cors) if cors else np.nan
        out.append([war, first, gen])
    return np.array(out)


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
@pytest.mark.parametrize("rule", ["mean", "median", "average_rank", "success_rate", "pavao_copeland", "borda"])
def test_trials_match_brute_force(rule: str) -> None:
    rng = np.random.default_rng(4)
    X = rng.integers(0, 5, size=(6, 5)).astype(float)  # (T, S) with ties
    scores = engine.scores_from_array(X.T)
    ds = pavao_criteria(scores, rules=[rule], trials=12, seed=9)
    got = ds["trial_values"].sel(rule=rule).values
    np.testing.assert_allclose(got, _brute(X, rule, 12, 9), rtol=1e-12, atol=1e-12, equal_nan=True)
    assert ds["winner_average_rank"].sel(rule=rule) == pytest.approx(np.nanmean(got[:, 0]))


def test_copeland_condorcet_rate_is_one() -> None:
    """Pavao et al.: Copeland's method ranks the Condorcet winner first whenever there is one."""
    scores = engine.open_scores(engine_data("esann_automl.csv"))
    ds = pavao_criteria(scores, rules=["pavao_copeland", "mean"], trials=200, seed=1)
    assert float(ds["condorcet_rate"].sel(rule="pavao_copeland")) == 1.0
    assert 0 <= float(ds["condorcet_rate"].sel(rule="mean")) <= 1
    assert ((ds["generalization"] >= -1) & (ds["generalization"] <= 1)).all()


def engine_data(name: str) -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2] / "data" / name)


def test_bad_trials() -> None:
    s = engine.scores_from_array(np.arange(6.0).reshape(3, 2))
    with pytest.raises(engine.VotebenchError, match="trials"):
        pavao_criteria(s, rules=["mean"], trials=0)
