"""Bootstraps against plain loops that draw with numpy's Generator, one replicate at a time.

The draws are re-implemented here from the documented scheme (``engine.kernels.resample``): replicate ``b``
of the axis stream ``k`` (tasks 1, systems 2, instances 3) uses
``numpy.random.default_rng(SeedSequence(seed, spawn_key=(k, b[, task])))``; tasks and systems draw
``n`` sorted indices with ``integers(0, n)``, instances draw ``n`` of a task's ``n`` real instances.
The rule on each resampled profile is the brute-force reference of ``conftest``, not the engine's own
reference path.  Also: the leader's tied set at the exact confidence boundary, and
``--lower-is-better`` on the command line.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr
from conftest import bf_borda_across, bf_borda_points, bf_mean_across, run_cli

import engine
import engine.kernels.ranking
from engine.labelled.bootstrap import summarize


def draws(seed, stream, b, n, *key):
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream, b, *key)))
    return rng.integers(0, n, size=n)


def table(seed, S=6, T=5, K=4, values=6):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, values, size=(S, T, K)) / values  # many ties
    labels = dict(systems=[f"s{i}" for i in range(S)], tasks=[f"t{j}" for j in range(T)])  # already canonical
    return X, labels


RULES = {"borda": bf_borda_across, "mean": bf_mean_across}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_task_bootstrap_equals_a_plain_loop(rule):
    X, labels = table(1, K=1)
    Xt = X[:, :, 0].T  # (T, S)
    B, seed = 12, 4
    ds = engine.bootstrap(engine.scores_from_array(X, **labels), rule=rule, over="tasks", replicates=B, seed=seed)
    want = np.stack([RULES[rule](Xt[np.sort(draws(seed, 1, b, Xt.shape[0]))]) for b in range(B)])
    np.testing.assert_allclose(ds["replicate_score"].values, want, rtol=1e-12, atol=1e-12)
    assert len({tuple(r) for r in want}) > 1  # the replicates differ


@pytest.mark.parametrize("rule", sorted(RULES))
def test_system_bootstrap_equals_a_plain_loop(rule):
    X, labels = table(2, K=1)
    Xt = X[:, :, 0].T
    S = Xt.shape[1]
    B, seed = 12, 9
    ds = engine.bootstrap(engine.scores_from_array(X, **labels), rule=rule, over="systems", replicates=B, seed=seed)
    want = np.full((B, S), np.nan)
    for b in range(B):
        idx = np.sort(draws(seed, 2, b, S))
        s = RULES[rule](Xt[:, idx])  # the drawn candidates compete (copies of a system tie with each other)
        want[b, idx] = s
    np.testing.assert_allclose(ds["replicate_score"].values, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize("level", ["task", "two", "one"])
def test_instance_bootstrap_equals_a_plain_loop(rule, level):
    """Every replicate draws its own instances per task (a bootstrap reusing one draw fails here)."""
    X, labels = table(3, K=7)
    X[:, 2, 5:] = np.nan  # a ragged task: two padding judges
    S, T, K = X.shape
    B, seed = 10, 5
    ds = engine.bootstrap(engine.scores_from_array(X, **labels), rule=rule, over="instances", replicates=B, seed=seed,
                          level=level)
    want = np.empty((B, S))
    for b in range(B):
        per_task = []
        for t in range(T):
            pos = np.flatnonzero(~np.isnan(X[:, t, :]).all(axis=0))
            per_task.append(X[:, t, pos[draws(seed, 3, b, pos.size, t)]])  # (S, n_t) drawn judges
        if level == "task" or (rule == "mean" and level == "two"):
            # values are sixths: means from whole-number sums, so equal means are equal floats
            task_level = np.stack([np.round(v * 6).sum(axis=1) / (6 * v.shape[1]) for v in per_task])  # (T, S)
            want[b] = RULES[rule](task_level)
        elif rule == "mean":  # one: all judges pooled
            want[b] = np.concatenate(per_task, axis=1).mean(axis=1)
        else:
            sums = np.stack([bf_borda_points(v.T).sum(axis=0) for v in per_task])  # Borda points per task
            want[b] = sums.sum(axis=0) if level == "one" else bf_borda_across(sums)
    np.testing.assert_allclose(ds["replicate_score"].values, want, rtol=1e-12, atol=1e-12)
    assert len({tuple(np.round(r, 9)) for r in want}) > 1
    # and the interval of some system has positive width
    summ = summarize(ds)
    assert (summ["rank_high"].values > summ["rank_low"].values).any()


def _boot(rows):
    R = np.asarray(rows, dtype=float)
    ranks = engine.kernels.ranking.min_rank(R)
    return xr.Dataset(
        {"score": ("system", R.mean(axis=0) + [1.0, 0.0, -1.0]), "rank": ("system", [1.0, 2.0, 3.0]),
         "replicate_score": (("replicate", "system"), R), "replicate_rank": (("replicate", "system"), ranks)},
        coords={"system": ["a", "b", "c"], "replicate": np.arange(R.shape[0])},
    )


@pytest.mark.parametrize(("wins", "tied"), [(19, False), (18, True), (20, False)])
def test_tied_with_leader_at_the_exact_boundary(wins, tied):
    """P(leader above b) = 19/20 = 0.95 exactly separates b at level 0.95 (>=, not >); 18/20 does not."""
    rows = [[2.0, 1.0, 0.0]] * wins + [[1.0, 2.0, 0.0]] * (20 - wins)
    summ = summarize(_boot(rows), level=0.95)
    assert float(summ["prob_above"].sel(system="a", opponent="b")) == wins / 20
    assert bool(summ["tied_with_leader"].sel(system="b")) is tied
    assert bool(summ["tied_with_leader"].sel(system="a")) is True
    assert bool(summ["tied_with_leader"].sel(system="c")) is False


@pytest.mark.parametrize("command", ["rank", "bootstrap"])
def test_lower_is_better_reaches_the_ranking(command, capsys, tmp_path):
    """--lower-is-better negates the named task: the ranking equals the brute force on the oriented table."""
    X = np.array([[0.9, 10.0], [0.8, 1.0], [0.7, 5.0], [0.6, 2.0]])  # systems x tasks; task 'loss' lower is better
    path = tmp_path / "t.csv"
    path.write_text("system,acc,loss\n" + "".join(f"m{i},{a},{b}\n" for i, (a, b) in enumerate(X)))
    extra = ["--replicates", "20"] if command == "bootstrap" else []
    outs = {}
    for flag in ([], ["--lower-is-better", "loss"]):
        code, out, err = run_cli(capsys, command, path, "--rule", "borda", "--format", "json", *flag, *extra)
        assert code == 0, err
        outs[bool(flag)] = {d["system"]: d["score"] for d in json.loads(out)["ranking"]}
    oriented = np.stack([X[:, 0], -X[:, 1]])  # (T, S)
    want = bf_borda_across(oriented)
    assert [outs[True][f"m{i}"] for i in range(4)] == want.tolist()
    assert outs[True] != outs[False]
