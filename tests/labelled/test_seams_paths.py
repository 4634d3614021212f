"""Issue #23, one job, one answer whatever the path: regressions of three seams, each against plain loops.

1. A task bootstrap of a rule that needs complete data, with the drop-judges policy, evaluated in blocks of
   replicates: a replicate drawing only some of the tasks the policy emptied used to fail in a block
   (the batch dropped only tasks empty in *every* replicate) and work alone (``--block 1``).
2. Per-task rule options given as a numpy array used to be applied in the canonical task order while a list
   was reordered with the tasks: a task took another task's threshold.
3. A task group named like an ungrouped task absorbed it (``{"t2": ["t1"]}`` with ``t2`` ungrouped): weights
   1/|group| and two-step groups treated {t1, t2} as one group.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA, bf_borda_across, run_cli

import engine
from engine.labelled.bootstrap import resampled_scores


# ------------------------------------------------------------------------------ 1. bootstrap blocks and drop-judges
def _drop_judges_table():
    """6 systems x 6 tasks, positive scores on a 0-1 scale; tasks t1 and t4 have a missing score (emptied by drop-judges)."""
    rng = np.random.default_rng(5)
    X = rng.choice([0.2, 0.4, 0.5, 0.8, 0.9, 1.0], size=(6, 6))
    X[2, 1] = np.nan
    X[4, 4] = np.nan
    return engine.scores_from_array(X, systems=[f"s{i}" for i in range(6)], tasks=[f"t{t}" for t in range(6)]), X


def _bf_geometric_mean(cols):
    return np.array([np.exp(sum(np.log(c[s]) for c in cols) / len(cols)) for s in range(len(cols[0]))])


def _bf_optimality_gap(cols, gamma=0.95):
    return np.array([-sum(max(gamma - c[s], 0.0) for c in cols) / len(cols) for s in range(len(cols[0]))])


@pytest.mark.parametrize("rule", ["geometric_mean", "optimality_gap", "topsis", "vikor"])
def test_task_bootstrap_with_drop_judges_is_the_same_for_every_block_size(rule):
    s, X = _drop_judges_table()
    B = 40
    kw = dict(rule=rule, over="tasks", replicates=B, seed=3, missing="drop-judges")
    runs = {b: engine.bootstrap(s, block=b, **kw)["replicate_score"].values for b in (None, 1, 7)}
    for b in (1, 7):
        assert np.array_equal(runs[None], runs[b], equal_nan=True), f"block {b} differs from the default block"
    complete = [t for t in range(6) if not np.isnan(X[:, t]).any()]
    some_partial = False
    for b in range(B):
        r = resampled_scores(s, over="tasks", replicate=b, seed=3)
        drawn = [int(str(t).split("#")[0][1:]) for t in r["task"].values]  # "t<k>#<position>"
        kept = [t for t in drawn if t in complete]  # drop-judges empties the tasks with a missing score
        some_partial |= 0 < len(kept) < len(drawn)
        cols = [X[:, t] for t in kept]
        if rule == "geometric_mean":
            expected = _bf_geometric_mean(cols)
        elif rule == "optimality_gap":
            expected = _bf_optimality_gap(cols)
        else:  # the rule alone on the replicate's complete tasks (its own kernel tests check it against the papers)
            table = engine.scores_from_array(np.stack(cols, axis=1), systems=[f"s{i}" for i in range(6)],
                                             tasks=[f"u{i}" for i in range(len(cols))])
            expected = engine.rank(table, rule=rule)["score"].values
        np.testing.assert_allclose(runs[None][b], expected, rtol=1e-12, atol=1e-15, err_msg=f"replicate {b}")
    assert some_partial, "the draws never mixed emptied and complete tasks: the test would not see the seam"


def test_cli_task_bootstrap_with_drop_judges_for_the_default_block(capsys):
    argv = ["bootstrap", DATA / "vnr_value.csv", "--rule", "geometric_mean", "--missing", "drop-judges",
            "--over", "tasks", "--replicates", "30"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    code1, out1, _ = run_cli(capsys, *argv, "--block", "1")
    assert code1 == 0 and out1 == out


# ------------------------------------------------------------------------------ 2. per-task options
TASKS = ["t3", "t1", "t10", "t2"]  # not in natural order: the canonical order is t1, t2, t3, t10
Q = [0.0, 0.3, 0.05, 0.6]  # one threshold per task, in the order of TASKS
MAXIMIZE = [True, False, True, True]


def _bf_promethee_quasi(X, q, maximize):
    """PROMETHEE II net flows, quasi criterion, equal weights: plain loops over tasks and pairs."""
    S, T = X.shape
    pi = np.zeros((S, S))
    for a in range(S):
        for b in range(S):
            for t in range(T):
                d = (X[a, t] - X[b, t]) * (1 if maximize[t] else -1)
                pi[a, b] += (d > q[t]) / T
    return np.array([sum(pi[a, b] - pi[b, a] for b in range(S) if b != a) / (S - 1) for a in range(S)])


def _promethee_table():
    rng = np.random.default_rng(2)
    X = np.round(rng.uniform(0, 1, size=(5, 4)), 1)
    return engine.scores_from_array(X, systems=[f"m{i}" for i in range(5)], tasks=TASKS), X


@pytest.mark.parametrize("form", ["list", "tuple", "array", "mapping"])
def test_per_task_options_follow_their_task_in_any_form(form):
    s, X = _promethee_table()
    conv = {"list": list, "tuple": tuple, "array": np.array, "mapping": lambda v: dict(zip(TASKS, v))}[form]
    opts = {"preference": "quasi", "q": conv(Q), "maximize": conv(MAXIMIZE)}
    expected = _bf_promethee_quasi(X, Q, MAXIMIZE)
    assert len(set(expected.round(12))) > 2  # the thresholds matter on this table
    np.testing.assert_allclose(engine.rank(s, rule="promethee2", options=opts)["score"].values, expected, atol=1e-12)
    many = engine.rank_rules(s, ["promethee2", "borda"], options=opts)
    np.testing.assert_allclose(many["score"].values[0], expected, atol=1e-12)
    ds = engine.bootstrap(s, rule="promethee2", over="systems", replicates=12, seed=4, options=opts)
    for b in range(12):
        r = resampled_scores(s, over="systems", replicate=b, seed=4)  # canonical task order t1, t2, t3, t10
        order = [TASKS.index(str(t)) for t in r["task"].values]
        cols = np.asarray(r.values[:, :, 0], dtype=float)
        flows = _bf_promethee_quasi(cols, [Q[i] for i in order], [MAXIMIZE[i] for i in order])
        drawn = [int(str(x).split("#")[0][1:]) for x in r["system"].values]
        for copy, sysi in enumerate(drawn):
            np.testing.assert_allclose(ds["replicate_score"].values[b, sysi], flows[copy], atol=1e-12)


def test_per_task_options_given_by_name_must_name_every_task():
    s, _ = _promethee_table()
    with pytest.raises(engine.VotebenchError, match="no value for task"):
        engine.rank(s, rule="promethee2", options={"preference": "quasi", "q": {"t3": 0.1}})
    with pytest.raises(engine.VotebenchError, match="unknown task"):
        engine.rank(s, rule="promethee2", options={"preference": "quasi", "q": dict(zip(TASKS + ["zz"], Q + [0.1]))})


# ------------------------------------------------------------------------------ 3. group named like a task
GROUP_X = np.array([[3.0, 3.0, 1.0], [2.0, 2.0, 2.0], [1.0, 1.0, 3.0]])  # systems a, b, c; tasks t1, t2, t3


def test_a_group_named_like_an_ungrouped_task_is_another_group(tmp_path, capsys):
    """Group "t2" = {t1}; t2 and t3 ungrouped: three groups of one task, weights 1/|group| = 1 each.

    Taking {t1, t2} as one group (weights 1/2, 1/2, 1) ties a, b and c at Borda 2; the three groups give 4, 3, 2.
    """
    csv = tmp_path / "g.csv"
    csv.write_text("system,t1,t2,t3\n" + "".join(f"{n},{','.join(map(str, r))}\n" for n, r in zip("abc", GROUP_X)))
    (tmp_path / "g.meta.json").write_text(json.dumps({"task_groups": {"g": {"t2": ["t1"]}},
                                                      "higher_is_better": {"t1": True, "t2": True, "t3": True}}))
    members = {"t2": ["t1"]}  # the sidecar's groups; every other task alone
    named = {t: g for g, ts in members.items() for t in ts}
    label = {t: ("group", named[t]) if t in named else ("task", t) for t in ("t1", "t2", "t3")}
    size = {lab: list(label.values()).count(lab) for lab in label.values()}
    w = np.array([1.0 / size[label[t]] for t in ("t1", "t2", "t3")])
    expected = bf_borda_across(GROUP_X.T, w)
    assert len(set(expected)) == 3
    s = engine.open_scores(csv)
    assert len(set(s["group"].values.tolist())) == 3
    np.testing.assert_array_equal(engine.rank(s, rule="borda", weights="groups")["score"].values, expected)
    code, out, err = run_cli(capsys, "rank", csv, "--rule", "borda", "--weights", "groups")
    assert code == 0, err
    got = {ln.split()[1]: float(ln.split()[2]) for ln in out.splitlines() if ln[:1] == " " and ln.split()[0].isdigit()}
    assert got == dict(zip("abc", expected.tolist()))
    # the same mapping given to the engine directly, and two-step aggregation within the groups
    arr = engine.scores_from_array(GROUP_X, systems=list("abc"), tasks=["t1", "t2", "t3"])
    np.testing.assert_array_equal(engine.rank(arr, rule="borda", groups={"t1": "t2"}, weights="groups")["score"].values,
                                  expected)
    two_step = engine.rank(arr, rule="borda", groups={"t1": "t2"})["score"].values  # three singleton groups
    np.testing.assert_array_equal(two_step, bf_borda_across(GROUP_X.T))


def test_a_group_that_names_its_own_task_keeps_it():
    """Group "t2" = {t1, t2}: one group of two tasks (weights 1/2, 1/2, 1), told apart from the case above."""
    s = engine.scores_from_array(GROUP_X, systems=list("abc"), tasks=["t1", "t2", "t3"], groups={"t1": "t2", "t2": "t2"})
    expected = bf_borda_across(GROUP_X.T, np.array([0.5, 0.5, 1.0]))
    np.testing.assert_array_equal(engine.rank(s, rule="borda", weights="groups")["score"].values, expected)
