"""Worked examples of the extension points named in ARCHITECTURE.md: a rule, a bootstrap strategy, a sub-command.

Each example adds its piece with the one line ARCHITECTURE.md gives, checks it against a plain loop,
and removes it again (fixtures), so the other test modules see only the built-in registries.
(Readers: tests/io/test_readers.py; perturbation kinds: tests/sweep/test_sweep_kinds.py; dashboard panels:
tests/app/test_dashboard_browser.py; experiments: tests/experiments/test_experiment_framework.py.)
"""

from __future__ import annotations

import argparse
import types

import numpy as np
import pytest
from conftest import run_cli

import engine
from engine.labelled.bootstrap import STRATEGIES, Strategy
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
    # the generic tests exercise it with the options of its record: its own defaults, no test list to edit
    assert engine.get_rule("tasks_won").examples == ({},)


@pytest.fixture
def counting_strategy():
    """A strategy for task bootstraps of ``tasks_won`` that counts its calls and evaluates each replicate directly."""
    calls = []

    def run(r):
        calls.append(r.ids.size)
        X = np.asarray(r.task_inputs()[0].values)
        from engine.kernels.resample import resample_indices

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


# ---------------------------------------------------------------------------------------------
# a sub-command: one module (NAME, HELP, add_arguments, run) and one entry in engine.app.cli.COMMANDS
# ---------------------------------------------------------------------------------------------
def leaders_command() -> types.ModuleType:
    """What ``engine/app/commands/leaders.py`` would hold: ``votebench leaders INPUT`` prints each task's best systems."""
    from engine.app.options import add_direction_options, load_scores
    from engine.app.output import write_output

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("input", metavar="INPUT", help="score file")
        add_direction_options(parser)
        parser.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")

    def run(args: argparse.Namespace) -> int:
        from engine.labelled.core import task_scores

        X = task_scores(load_scores(args))
        systems = [str(s) for s in X["system"].values]
        lines = []
        for task, row in zip(X["task"].values, np.asarray(X.values, dtype=float)):
            lines.append(f"{task}: " + ", ".join(s for s, v in zip(systems, row) if v == np.nanmax(row)))
        write_output("\n".join(lines) + "\n", args.output)
        return 0

    mod = types.ModuleType("leaders")
    mod.NAME, mod.HELP, mod.add_arguments, mod.run = "leaders", "the best systems of every task", add_arguments, run
    return mod


def test_a_new_sub_command_is_one_module_and_one_commands_entry(tmp_path, capsys):
    from engine.app.cli import COMMANDS, build_parser, command_module, main, subparsers

    leaders = leaders_command()
    commands = (*COMMANDS, leaders)  # the one line: the module appended to COMMANDS
    help_text = build_parser(commands).format_help()
    assert "leaders" in help_text and "the best systems of every task" in help_text
    assert list(subparsers(build_parser(commands))) == [command_module(m).NAME for m in COMMANDS] + ["leaders"]
    assert "leaders" not in subparsers(build_parser())  # the built-in parser does not have it

    rows = {"a": [0.9, 3.0, 0.2], "b": [0.9, 1.0, 0.7], "c": [0.5, 2.0, 0.1]}
    src = tmp_path / "three.csv"
    src.write_text("system,x,y,z\n" + "".join(f"{k},{','.join(map(str, v))}\n" for k, v in rows.items()))
    code = main(["leaders", str(src), "--lower-is-better", "y"], commands=commands)
    out, err = capsys.readouterr()
    assert code == 0
    want = []  # plain loop: the highest score, the lowest for the lower-is-better task y
    for t, task in enumerate("xyz"):
        vals = {k: (-v[t] if task == "y" else v[t]) for k, v in rows.items()}
        want.append(f"{task}: " + ", ".join(k for k, v in vals.items() if v == max(vals.values())))
    assert out.splitlines() == want == ["x: a, b", "y: b", "z: b"]
    # the conventions come with it: --config, one-line errors with exit code 2
    cfg = tmp_path / "leaders.toml"
    cfg.write_text(f'lower-is-better = "y"\noutput = "{(tmp_path / "out.txt").as_posix()}"\n')
    assert main(["leaders", str(src), "--config", str(cfg)], commands=commands) == 0
    assert (tmp_path / "out.txt").read_text().splitlines() == want
    assert capsys.readouterr().err.strip().splitlines() == [f"votebench: wrote {tmp_path / 'out.txt'}"]
    assert main(["leaders", str(src), "--lower-is-better", "nope"], commands=commands) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["votebench: error: --lower-is-better names unknown task(s): nope"]
