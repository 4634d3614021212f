"""A request's tensor is checked once (issue 25, item 3): reading, opening and planning it checks it one time, a
changed tensor is checked again, and what a check refuses is still refused, naming the file."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.errors import VotebenchError
from engine.labelled import canonical
from engine.labelled.core import task_scores


@pytest.fixture
def counted(monkeypatch):
    calls: list[str] = []
    real = canonical.validate_scores

    def counting(scores, *, source="scores"):
        calls.append(source)
        return real(scores, source=source)

    monkeypatch.setattr(canonical, "validate_scores", counting)
    monkeypatch.setattr(engine, "validate_scores", counting)  # the lazy public name may be resolved already
    return calls


def _table(path, rows):
    path.write_text("system,task,instance,score\n" + "".join(f"{s},{t},{i},{v}\n" for s, t, i, v in rows))
    return path


def _rows(bad=None):
    rows = [(s, t, i, float(3 * k + 2 * j + i)) for k, s in enumerate("abc") for j, t in enumerate(("t1", "t2"))
            for i in range(3)]
    if bad is not None:
        rows[4] = (*rows[4][:3], bad)
    return rows


def test_read_opened_and_planned_checks_the_tensor_once(tmp_path, counted):
    src = _table(tmp_path / "s.csv", _rows())
    scores = engine.open_scores(src)
    engine.rank(scores, rule="borda")
    engine.rank(scores, rule="mean", missing="listwise")
    task_scores(scores)
    assert counted == [str(src)]


def test_a_sidecar_tensor_is_checked_once_after_the_sidecar(tmp_path, counted):
    src = _table(tmp_path / "s.csv", _rows())
    (tmp_path / "s.meta.json").write_text('{"higher_is_better": {"t1": false}}')
    scores = engine.open_scores(src)
    assert scores["higher_is_better"].values.tolist() == [False, True]
    engine.rank(scores, rule="borda")
    assert counted == [str(src)]


def test_a_derived_tensor_is_a_new_one_and_is_checked(tmp_path, counted):
    scores = engine.open_scores(_table(tmp_path / "s.csv", _rows()))
    bad = scores.copy(deep=True)
    bad[0, 0, 0] = np.inf  # written into the copy: a new object
    with pytest.raises(VotebenchError, match="is not finite"):
        engine.rank(bad, rule="borda")
    assert len(counted) == 2


def test_new_data_under_the_same_tensor_is_checked_again(tmp_path, counted):
    scores = engine.open_scores(_table(tmp_path / "s.csv", _rows()))
    values = scores.values.copy()
    values[1, 1, 1] = -np.inf
    scores.data = values  # the same object, a new data array
    with pytest.raises(VotebenchError, match="is not finite"):
        engine.rank(scores, rule="borda")
    assert len(counted) == 2


@pytest.mark.parametrize(("body", "problem"), [
    ("a,t1,0,1\nb,t1,0,2\na,t2,0,\nb,t2,0,\n", "task 't2' has no scores"),
    ("a,t1,0,1\na,t2,0,2\n", "ranking needs at least two systems, found 1 (a)"),
])
def test_what_the_check_refuses_in_a_file_is_refused_once_naming_the_file(tmp_path, counted, body, problem):
    src = tmp_path / "bad.csv"
    src.write_text("system,task,instance,score\n" + body)
    with pytest.raises(VotebenchError) as err:
        engine.open_scores(src)
    assert str(err.value) == f"{src}: {problem}"
    assert counted == [str(src)]


def test_a_built_tensor_is_checked_unless_its_caller_checks_it():
    values = np.array([[1.0, np.inf], [0.5, 2.0]])
    with pytest.raises(VotebenchError, match="is not finite"):
        engine.scores_from_array(values)
    with canonical.validation_deferred():
        unchecked = engine.scores_from_array(values)  # the caller checks the finished tensor
    with pytest.raises(VotebenchError, match="is not finite"):
        canonical.ensure_valid(unchecked)
    with pytest.raises(VotebenchError, match="is not finite"):
        engine.scores_from_array(values)  # the deferral ended with its block


def test_the_public_check_always_checks(counted):
    scores = engine.scores_from_array(np.array([[1.0, 2.0], [0.5, 2.5]]))
    engine.validate_scores(scores)
    engine.validate_scores(scores)
    assert len(counted) == 3  # built (checked once), then every explicit call


def test_a_checked_tensor_that_is_gone_is_forgotten():
    import gc

    before = set(canonical._CHECKED.items)
    scores = engine.scores_from_array(np.array([[1.0, 2.0], [0.5, 2.5]]))
    key = id(scores)
    assert key in canonical._CHECKED.items
    del scores
    gc.collect()
    assert key not in canonical._CHECKED.items and set(canonical._CHECKED.items) <= before | {key}
