"""Tests written for the mutants of session 6's changes that the existing tests let survive
(benchmarks/results/mutation.md, "Session 6").

Each test checks behaviour against something independent of the code under test: loops over pairs of systems,
the documented lists of levels and policies, zlib/pickle in a fresh interpreter, files written by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.kernels.pairblock import blocked_scores


def loop_majority(X: np.ndarray) -> tuple[list[float], list[float], list[float]]:
    """Copeland, Condorcet and minimax scores by loops over pairs of systems (NaN = missing, absent = no score)."""
    T, S = X.shape
    present = [bool((~np.isnan(X[:, s])).any()) for s in range(S)]

    def wins(a: int, b: int) -> int:
        return sum(1 for t in range(T) if not np.isnan(X[t, a]) and not np.isnan(X[t, b]) and X[t, a] > X[t, b])

    cop, con, mm = [], [], []
    n = sum(present)
    for m in range(S):
        if not present[m]:
            cop.append(np.nan), con.append(np.nan), mm.append(np.nan)
            continue
        others = [j for j in range(S) if present[j] and j != m]
        beats = sum(1 for j in others if wins(m, j) > wins(j, m))
        beaten = sum(1 for j in others if wins(m, j) < wins(j, m))
        cop.append(float(beats - beaten))
        con.append(1.0 if beats == n - 1 else 0.0)
        mm.append(-float(max([wins(j, m) for j in others if wins(j, m) > wins(m, j)], default=0)))
    return cop, con, mm


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_blocked_majority_rules_with_absent_systems_in_any_block(seed, rows):
    # pb.cop-rows / pb.con-rows: a later block must read its own rows' presence, not the first block's
    rng = np.random.default_rng(seed)
    S, T = 7, 6
    X = rng.integers(0, 4, size=(T, S)).astype(np.float64)
    X[rng.random((T, S)) < 0.15] = np.nan
    absent = rng.choice(S, size=2, replace=False)
    X[:, absent] = np.nan
    X[0, [s for s in range(S) if s not in absent]] = rng.random(S - 2)  # every other system has a score
    cop, con, mm = loop_majority(X)
    np.testing.assert_array_equal(blocked_scores("copeland", X, rows=rows), cop)
    np.testing.assert_array_equal(blocked_scores("condorcet", X, rows=rows), con)
    np.testing.assert_array_equal(blocked_scores("minimax", X, rows=rows), mm)


# --- labelled.core: check_policy, resolve_level (pol.in, lvl.in, pol.first) ---------------------------------------

#: the documented values (README / engine.aggregate's docstring), written out here, not read from engine.dims
DOCUMENTED_POLICIES = ("error", "listwise", "drop-judges")
DOCUMENTED_LEVELS = ("task", "one", "two")


def _table():
    import engine

    return engine.scores_from_array(np.arange(12.0).reshape(3, 4) % 5, systems=["a", "b", "c"],
                                    tasks=["t1", "t2", "t3", "t4"])


@pytest.mark.parametrize("bad", ["err", "e", "list", "drop", "judges", "", "Error"])
def test_a_part_of_a_policy_name_is_not_a_policy(bad):
    import engine
    from engine.errors import VotebenchError
    from engine.labelled.core import check_policy

    with pytest.raises(VotebenchError, match="missing-score policy"):
        check_policy(bad)
    with pytest.raises(VotebenchError, match="missing-score policy"):
        engine.aggregate(_table(), rule="mean", missing=bad)


@pytest.mark.parametrize("bad", ["tw", "t", "on", "", "Task", "ask"])
def test_a_part_of_a_level_name_is_not_a_level(bad):
    import engine
    from engine.errors import VotebenchError
    from engine.labelled.core import resolve_level

    with pytest.raises(VotebenchError, match="unknown level"):
        resolve_level(_table(), bad)
    with pytest.raises(VotebenchError, match="unknown level"):
        engine.aggregate(_table(), rule="mean", level=bad)


def test_policy_and_level_checks_return_the_value_given():
    from engine.labelled.core import check_policy, resolve_level

    assert [check_policy(p) for p in DOCUMENTED_POLICIES] == list(DOCUMENTED_POLICIES)
    assert [resolve_level(_table(), v) for v in DOCUMENTED_LEVELS] == list(DOCUMENTED_LEVELS)


# --- io.readers: only_for, input_kind, the battles sniffing ----------------------------------------------------------


def test_only_for_suffixes_are_case_insensitive_both_ways(tmp_path):
    from engine.io.readers import only_for

    upper, lower = tmp_path / "A.JSONL", tmp_path / "b.jsonl"
    upper.write_text("{}\n"), lower.write_text("{}\n")
    given_upper = only_for(".JSONL", guess=lambda p: True)
    assert given_upper(upper) and given_upper(lower)


def test_only_for_without_folders_never_takes_a_folder(tmp_path):
    from engine.io.readers import only_for

    asked = []
    folder = tmp_path / "x.jsonl"
    folder.mkdir()
    guess = only_for(".jsonl", guess=lambda p: asked.append(p) or True)
    assert guess(folder) is False and asked == []


def test_input_kind_by_the_format_named_and_by_the_file(tmp_path):
    from engine.io.readers import input_kind

    battles = tmp_path / "b.csv"
    battles.write_text("model_a,model_b,winner\nx,y,model_a\n")
    scores = tmp_path / "s.csv"
    scores.write_text("system,t\nx,1\ny,2\n")
    odd = tmp_path / "notes.xyz"  # exists, no reader recognises it
    odd.write_text("hello\n")
    assert input_kind(battles) == "battles" and input_kind(scores) == "scores"
    assert input_kind(odd) == "scores" and input_kind(tmp_path / "missing.csv") == "scores"
    assert input_kind(scores, format="battles") == "battles" and input_kind(battles, format="csv") == "scores"


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("b.tsv", "model_a\tmodel_b\twinner\nx\ty\tmodel_a\n", True),
    ("b.TSV", "model_a\tmodel_b\twinner\nx\ty\tmodel_a\n", True),
    ("b.csv", '"model_a","model_b","winner"\nx,y,model_a\n', True),
    ("b.csv", " model_a , model_b , winner \nx,y,model_a\n", True),
    ("b.csv", "model_a,model_b,winner\r\nx,y,model_a\r\n", True),
    ("b.csv", "model_a,model_b\nx,y\n", False),
    ("b.csv", "model_a,model_b,winner_tie\nx,y,1\n", False),
    ("b.jsonl", '\n  \n{"model_a": "x", "model_b": "y", "winner": "model_a"}\n', True),
    ("b.jsonl", '["model_a", "model_b", "winner"]\n', False),
    ("b.jsonl", "not json\n", False),
    ("b.JSONL", '{"model_a": "x", "model_b": "y", "winner": "tie", "judge": "j"}\n', True),
    ("b.json", '{"model_a": "x", "model_b": "y", "winner": "model_a"}\n', False),
    ("b.txt", "model_a,model_b,winner\nx,y,model_a\n", False),
])
def test_is_battles_file_reads_the_header_as_the_file_says(tmp_path, name, text, expected):
    from engine.io.readers import is_battles_file

    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert is_battles_file(path) is expected


def test_is_battles_file_on_unreadable_files_is_false_not_an_error(tmp_path):
    from engine.io.readers import is_battles_file

    bad_gz = tmp_path / "b.csv.gz"
    bad_gz.write_bytes(b"\x1f\x8b not really gzip")
    latin = tmp_path / "c.jsonl"
    latin.write_bytes(b'{"model_a": "\xe9"}\n')
    folder = tmp_path / "d.csv"
    folder.mkdir()
    bad_parquet = tmp_path / "e.parquet"
    bad_parquet.write_text("model_a,model_b,winner\n")
    assert [is_battles_file(p) for p in (bad_gz, latin, folder, bad_parquet)] == [False] * 4


def test_parquet_battles_are_recognised_by_schema(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.io.readers import guess_reader, is_battles_file

    for name in ("b.parquet", "c.PQ"):
        pq.write_table(pa.table({"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"]}), tmp_path / name)
        assert is_battles_file(tmp_path / name) and guess_reader(tmp_path / name).name == "battles"
    pq.write_table(pa.table({"system": ["x"], "t": [1.0]}), tmp_path / "s.parquet")
    assert not is_battles_file(tmp_path / "s.parquet") and guess_reader(tmp_path / "s.parquet").name == "parquet"


# --- rules.LazyFunction ------------------------------------------------------------------------------------------------


def test_lazy_function_passes_keyword_arguments_and_reports_the_signature():
    import inspect

    from engine.kernels import social
    from engine.rules import LazyFunction

    rng = np.random.default_rng(0)
    X, w = rng.random((5, 4)), np.array([1.0, 2.0, 0.0, 1.0, 3.0])
    ref = LazyFunction("engine.kernels.social", "copeland_across")
    np.testing.assert_array_equal(ref(X, weights=w), social.copeland_across(X, weights=w))
    assert not np.array_equal(ref(X, weights=w), ref(X))  # the weights reached the kernel
    assert inspect.signature(ref) == inspect.signature(social.copeland_across)
    assert "weights" in inspect.signature(ref).parameters


def test_a_pickled_lazy_function_names_its_function_and_imports_nothing_when_unpickled():
    import pickle
    import subprocess
    import sys
    import textwrap

    from conftest import REPO

    from engine.rules import LazyFunction

    ref = LazyFunction("engine.kernels.mcdm", "promethee_setup")
    ref.resolve()  # resolved here; a worker still gets the name only
    back = pickle.loads(pickle.dumps(ref))
    assert (back.module, back.name) == ("engine.kernels.mcdm", "promethee_setup")
    code = f"""
        import pickle, sys
        ref = pickle.loads({pickle.dumps(ref)!r})
        print("engine.kernels.mcdm" in sys.modules, ref.name, ref.resolve().__name__, "engine.kernels.mcdm" in sys.modules)
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["False", "promethee_setup", "promethee_setup", "True"], out.stderr


# --- social: minimax shows 0, not -0; finalize's policy checks ---------------------------------------------------------


def test_minimax_of_an_undefeated_system_is_plus_zero():
    from engine.kernels.social import minimax_from_wins

    wins = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])  # a beats b and c: no defeat
    present = np.ones(3, dtype=bool)
    score = minimax_from_wins(wins, present)
    assert score.tolist() == [0.0, -2.0, -3.0] and not np.signbit(score[0])  # printed "0", not "-0"


def test_missing_scores_refused_only_for_rules_that_need_a_policy():
    import engine
    from engine.errors import VotebenchError

    values = np.array([[3.0, 1.0, 2.0], [2.0, np.nan, 1.0], [1.0, 2.0, 3.0]])
    x = engine.scores_from_array(values, systems=["a", "b", "c"], tasks=["t1", "t2", "t3"])
    with pytest.raises(VotebenchError):
        engine.aggregate(x, rule="mean", missing="error")
    # Copeland ignores missing pairs (documented): compared with loops over the pairs both scored
    got = engine.aggregate(x, rule="copeland", missing="error")
    cop = loop_majority(values.T)[0]  # values: one row per system
    np.testing.assert_array_equal(got.values, cop)


def test_one_system_left_is_refused():
    import engine
    from engine.errors import VotebenchError

    values = np.array([[3.0, np.nan, np.nan], [2.0, 1.0, np.nan]])
    x = engine.scores_from_array(values.T, systems=["a", "b", "c"], tasks=["t1", "t2"])
    with pytest.raises(VotebenchError, match="at least two systems"):
        engine.aggregate(x, rule="mean", missing="listwise")


def test_drop_judges_ranks_on_the_tasks_left_when_a_task_loses_every_judge():
    import engine

    values = np.array([[3.0, 1.0, 2.0], [2.0, np.nan, 1.0], [1.0, 2.0, 4.0]])  # systems x tasks; t2 has a gap
    x = engine.scores_from_array(values, systems=["a", "b", "c"], tasks=["t1", "t2", "t3"])
    got = engine.aggregate(x, rule="mean", missing="drop-judges")
    kept = values[:, [0, 2]]  # t2's only judge has a missing score: the task drops out
    np.testing.assert_allclose(got.values, kept.mean(axis=1))
