"""Worked examples of the extension points named in ARCHITECTURE.md: a rule and a bootstrap strategy.

Each example adds its piece with the one line ARCHITECTURE.md gives, checks it against a plain loop,
and removes it again (fixtures), so the other test modules see only the built-in registries.
(Readers: tests/test_readers.py; perturbation kinds: tests/test_sweep_kinds.py; experiments:
tests/test_experiment_framework.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_cli

import engine
from engine.bootstrap import STRATEGIES, Strategy
from engine.rules import RULES, Rule, register_rule


def tasks_won(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Toy rule kernel: the (weighted) number of tasks on which a system has the strictly best score."""
    X = np.asarray(X, dtype=np.float64)
    w = np.ones(X.shape[-2]) if weights is None else np.asarray(weights, dtype=np.float64)
    top = np.nanmax(X, axis=-1, keepdims=True)
    only = (X == top) & ((X == top).sum(axis=-1, keepdims=True) == 1)
    return np.einsum("...t,...ts->...s", w, only.astype(np.float64))


@pytest.fixture
def tasks_won_rule():
    rule = register_rule(Rule("tasks_won", tasks_won, "tasks on which the system is the only best", resample="weights"))
    yield rule
    del RULES["tasks_won"]


def test_a_new_rule_is_one_register_rule_line(tasks_won_rule, tmp_path, capsys):
    X = np.array([[3.0, 1.0, 2.0], [1.0, 5.0, 5.0], [0.0, 4.0, 1.0], [2.0, 2.0, 9.0]])  # systems x tasks
    r = engine.rank(engine.scores_from_array(X, systems=["a", "b", "c", "d"]), rule="tasks_won")
    want = [sum(1 for t in range(3) if X[s, t] > max(X[o, t] for o in range(4) if o != s)) for s in range(4)]
    assert r["score"].values.tolist() == want
    # the registry drives the command line and the invariance tests
    path = tmp_path / "t.csv"
    path.write_text("system,t0,t1,t2\n" + "".join(f"{n},{','.join(map(str, row))}\n" for n, row in zip("abcd", X)))
    code, out, err = run_cli(capsys, "rank", path, "--rule", "tasks_won", "--format", "csv")
    assert code == 0, err
    from test_invariance import RULE_CASES

    assert "tasks_won" in set(engine.RULES) - set(RULE_CASES)  # test_every_rule_has_a_case would now fail


@pytest.fixture
def counting_strategy():
    """A strategy for task bootstraps of ``tasks_won`` that counts its calls and evaluates each replicate directly."""
    calls = []

    def run(r):
        calls.append(r.ids.size)
        X = np.asarray(r.task_inputs()[0].values)
        from engine.resample import resample_indices

        idx = resample_indices(X.shape[0], seed=r.seed, replicates=r.ids, stream="tasks")
        return np.stack([tasks_won(X[i]) for i in idx]), "tasks_won loop"

    entry = Strategy("tasks: toy per-replicate loop", lambda r: r.over == "tasks" and r.plan.across.name == "tasks_won", run)
    STRATEGIES.insert(0, entry)  # the one line: an entry in the ordered table
    yield calls, entry
    STRATEGIES.remove(entry)


def test_a_new_bootstrap_strategy_is_one_table_entry(tasks_won_rule, counting_strategy):
    rng = np.random.default_rng(2)
    s = engine.scores_from_array(rng.integers(0, 4, size=(5, 6)).astype(float))
    calls, entry = counting_strategy
    ds = engine.bootstrap(s, rule="tasks_won", over="tasks", replicates=12, seed=3)
    assert ds.attrs["method"] == "tasks_won loop" and calls == [12]
    # the same replicates as the built-in strategies give
    STRATEGIES.remove(entry)
    try:
        ref = engine.bootstrap(s, rule="tasks_won", over="tasks", replicates=12, seed=3)
    finally:
        STRATEGIES.insert(0, entry)
    assert ref.attrs["method"] == "task weights"
    np.testing.assert_array_equal(ds["replicate_score"].values, ref["replicate_score"].values)
