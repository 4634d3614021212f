"""The across-task step (``engine.labelled.core.finalize``) on its less used roads, against loops written here:
two-step aggregation with different rules within and across groups, a group whose tasks all weigh 0, and the
pair sums a request shares between rules (session 6's surviving mutants, benchmarks/results/mutation.md)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import bf_borda_across

import engine
from engine.labelled.canonical import scores_from_array
from engine.labelled.core import finalize, prepare

GROUPS = ["g1", "g1", "g2", "g2", "g2", "g3", "g3"]


def copeland_loop(G: np.ndarray) -> np.ndarray:
    """Copeland over the rows of ``G`` (judges x systems): majority wins minus majority losses, by pairs."""
    S = G.shape[1]
    out = np.zeros(S)
    for i, j in itertools.permutations(range(S), 2):
        won = sum(1 for row in G if row[i] > row[j])
        lost = sum(1 for row in G if row[i] < row[j])
        out[i] += (won > lost) - (won < lost)
    return out


def weighted_group_means(X: np.ndarray, weights: np.ndarray, groups: list[str]) -> np.ndarray:
    """The weighted mean of each group's tasks (rows: groups whose weights are not all 0, in order of appearance)."""
    rows = []
    for g in dict.fromkeys(groups):
        sel = [k for k, h in enumerate(groups) if h == g]
        w = weights[sel]
        if w.sum() > 0:
            rows.append([sum(w[q] * X[s, sel[q]] for q in range(len(sel))) / w.sum() for s in range(X.shape[0])])
    return np.asarray(rows)


@pytest.mark.parametrize("seed", range(6))
def test_two_step_uses_the_within_rule_in_groups_and_the_across_rule_over_them(seed):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(5, len(GROUPS))), 1)  # systems x tasks
    sc = scores_from_array(X, systems=list("abcde"), tasks=[f"t{k}" for k in range(len(GROUPS))], groups=GROUPS)
    got = engine.aggregate(sc, within="mean", across="copeland", groups=True)
    want = copeland_loop(weighted_group_means(X, np.ones(len(GROUPS)), GROUPS))
    np.testing.assert_array_equal(got.values, want)
    # the other way round is another rule: Copeland inside each group, then the mean of those scores
    other = engine.aggregate(sc, within="copeland", across="mean", groups=True)
    per_group = [copeland_loop(X[:, [k for k, h in enumerate(GROUPS) if h == g]].T) for g in dict.fromkeys(GROUPS)]
    np.testing.assert_allclose(other.values, np.mean(per_group, axis=0), rtol=0, atol=1e-12)


def weighted_group_borda(X: np.ndarray, weights: np.ndarray, groups: list[str]) -> np.ndarray:
    """Each group's weighted Borda points (rows: groups whose weights are not all 0, in order of appearance)."""
    rows = []
    for g in dict.fromkeys(groups):
        sel = [k for k, h in enumerate(groups) if h == g]
        if weights[sel].sum() > 0:
            rows.append(bf_borda_across(X[:, sel].T, weights[sel]))
    return np.asarray(rows)


@pytest.mark.parametrize("across", ["copeland", "borda"])
@pytest.mark.parametrize("within", ["mean", "borda"])
@pytest.mark.parametrize("seed", range(3))
def test_a_group_whose_tasks_all_weigh_zero_is_left_out(seed, within, across):
    rng = np.random.default_rng(100 + seed)
    X = np.round(rng.normal(size=(4, len(GROUPS))), 1)
    w = rng.integers(1, 4, size=len(GROUPS)).astype(float)
    w[[k for k, g in enumerate(GROUPS) if g == "g2"]] = 0.0
    tasks = [f"t{k}" for k in range(len(GROUPS))]
    sc = scores_from_array(X, systems=list("abcd"), tasks=tasks, groups=GROUPS)
    got = engine.aggregate(sc, within=within, across=across, groups=True, weights=dict(zip(tasks, w.tolist())))
    rows = (weighted_group_means if within == "mean" else weighted_group_borda)(X, w, GROUPS)
    assert rows.shape[0] == 2  # g1 and g3
    np.testing.assert_array_equal(got.values, copeland_loop(rows) if across == "copeland" else bf_borda_across(rows))


@pytest.mark.parametrize("rule", ["copeland", "minimax", "pavao_copeland", "success_rate"])
def test_shared_pair_sums_are_what_the_rule_reads(rule):
    """A rule that reads pair sums ranks from the sums handed to it (the request's shared ones), not from the tensor:
    sums of another table give that table's ranking."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(4, 6))
    Y = X[::-1].copy()  # another table: the systems' scores reversed
    tasks = [f"t{k}" for k in range(6)]
    plan = prepare(scores_from_array(X, systems=list("abcd"), tasks=tasks), rule=rule)
    if plan.across.from_sums is None:
        pytest.skip(f"{rule} reads no pair sums")
    T = Y.T  # tasks x systems
    wins = np.array([[float(np.sum(T[:, i] > T[:, j])) for j in range(4)] for i in range(4)])
    pairs = np.full((4, 4), 6.0)
    Xt = np.asarray(plan.x.isel(instance=0).transpose("task", "system").values)  # task-level: one instance
    got = finalize(Xt, np.asarray(plan.judged.values), np.asarray(plan.miss.values), plan.finish(),
                   pair_sums={"wins": wins, "pairs": pairs})
    want = engine.aggregate(scores_from_array(Y, systems=list("abcd"), tasks=tasks), rule=rule).values
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
