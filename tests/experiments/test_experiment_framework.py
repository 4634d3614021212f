"""The experiment framework (engine/app/experiment.py): discovery, loading, running, the CLI sub-command, helpers."""

from __future__ import annotations

import argparse
import json
import math
import textwrap
from pathlib import Path

import dask
import numpy as np
import pytest

import engine.app.experiment as ex
from engine.errors import VotebenchError

FAKE_RUN = '''
import json
from pathlib import Path

TITLE = "A fake experiment for the tests"
DESCRIPTION = "Writes its arguments."
CALLS = []

def run(out, *, smoke=False, scheduler=None):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"smoke": smoke, "scheduler": scheduler}))
    (out / "README.md").write_text("# fake\\n")
    CALLS.append((str(out), smoke, scheduler))
    return {"tables": ["T1"], "value": 3}
'''


def _make(root: Path, name: str, text: str, *, config: str | None = None) -> Path:
    folder = root / "experiments" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.py").write_text(textwrap.dedent(text))
    if config is not None:
        (folder / "config.toml").write_text(textwrap.dedent(config))
    return folder


@pytest.fixture
def fake_root(tmp_path, monkeypatch):
    _make(tmp_path, "fake", FAKE_RUN)
    _make(tmp_path, "zeta-2", FAKE_RUN.replace("A fake experiment", "Another fake"))
    (tmp_path / "experiments" / "no_runner").mkdir()  # a folder without run.py is not an experiment
    (tmp_path / "experiments" / "sweeps").mkdir()
    (tmp_path / "experiments" / "README.md").write_text("index\n")
    monkeypatch.setattr(ex, "ROOT", tmp_path)
    return tmp_path


def _parser() -> argparse.ArgumentParser:
    from engine.app.cli import build_parser
    from engine.app.commands import experiment

    return build_parser((experiment,))


# ------------------------------------------------------------------------------------------- discovery
def test_real_repository_lists_the_papers_experiments():
    names = ex.experiment_names()
    assert {"pavao2021", "votenrank2023"} <= set(names)
    assert "sweeps" not in names  # the example sweep files are not an experiment
    for name in ("pavao2021", "votenrank2023"):
        mod = ex.load_experiment(name)
        assert isinstance(mod.TITLE, str) and "\n" not in mod.TITLE.strip()
        assert isinstance(mod.DESCRIPTION, str) and mod.DESCRIPTION.strip()
        assert callable(mod.run)


def test_list_only_folders_with_run_py(fake_root):
    assert ex.experiment_names() == ["fake", "zeta-2"]
    mods = ex.list_experiments()
    assert list(mods) == ["fake", "zeta-2"]
    assert mods["zeta-2"].TITLE == "Another fake for the tests"


def test_unknown_name_lists_the_known_ones(fake_root):
    with pytest.raises(VotebenchError) as err:
        ex.load_experiment("nope")
    msg = str(err.value)
    assert "'nope'" in msg and "fake, zeta-2" in msg and "\n" not in msg
    with pytest.raises(VotebenchError, match="unknown experiment"):
        ex.run_experiment("no_runner")


def test_missing_experiments_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(ex, "ROOT", tmp_path / "elsewhere")
    with pytest.raises(VotebenchError, match="no experiments folder at .*elsewhere"):
        ex.experiment_names()
    with pytest.raises(VotebenchError, match="no experiments folder"):
        ex.run_experiment("fake")


def test_broken_experiments_are_one_line_errors(fake_root):
    _make(fake_root, "syntax", "TITLE = 'x'\ndef run(:\n")
    _make(fake_root, "incomplete", "TITLE = 'x'\n")
    _make(fake_root, "raising", "raise RuntimeError('boom at import')\n")
    with pytest.raises(VotebenchError, match="'syntax' cannot be loaded .*SyntaxError"):
        ex.load_experiment("syntax")
    with pytest.raises(VotebenchError, match="does not define DESCRIPTION, run"):
        ex.load_experiment("incomplete")
    with pytest.raises(VotebenchError, match="RuntimeError: boom at import"):
        ex.load_experiment("raising")


# ------------------------------------------------------------------------------------------- running
def test_experiment_functions_pickle_by_value(fake_root, tmp_path):
    """dask workers cannot import an experiment module by name, so its functions must travel by value."""
    import pickle
    import sys

    import cloudpickle

    mod = ex.load_experiment("fake")
    blob = cloudpickle.dumps(mod.run)
    del sys.modules[mod.__name__]  # as on a worker that never loaded the module
    try:
        run = pickle.loads(blob)
        assert run(tmp_path / "w", smoke=True) == {"tables": ["T1"], "value": 3}
    finally:
        sys.modules[mod.__name__] = mod


def test_run_passes_arguments_times_and_uses_the_default_folder(fake_root):
    res = ex.run_experiment("fake", smoke=True, scheduler="tcp://nowhere:1")
    out = fake_root / "results" / "experiments" / "fake"
    assert res["out"] == str(out.resolve())
    assert res["name"] == "fake" and res["smoke"] is True
    assert res["tables"] == ["T1"] and res["value"] == 3
    assert isinstance(res["seconds"], float) and res["seconds"] >= 0
    assert json.loads((out / "results.json").read_text()) == {"smoke": True, "scheduler": "tcp://nowhere:1"}
    mod = ex.load_experiment("fake")  # a fresh module: CALLS of the run above live in the previous module object
    assert mod.CALLS == []


def test_run_into_a_given_folder(fake_root, tmp_path):
    target = tmp_path / "custom" / "out"
    res = ex.run_experiment("zeta-2", out=target)
    assert Path(res["out"]) == target.resolve()
    assert json.loads((target / "results.json").read_text()) == {"smoke": False, "scheduler": None}


def test_run_refuses_a_file_as_output_and_a_non_dict_summary(fake_root, tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    with pytest.raises(VotebenchError, match="not a folder"):
        ex.run_experiment("fake", out=f)
    _make(fake_root, "bad_summary", "TITLE = 't'\nDESCRIPTION = 'd'\ndef run(out, *, smoke=False, scheduler=None):\n    return 42\n")
    with pytest.raises(VotebenchError, match="returned int, expected a dict"):
        ex.run_experiment("bad_summary", out=tmp_path / "o")


# ------------------------------------------------------------------------------------------- CLI
def test_cli_list(fake_root, capsys):
    _make(fake_root, "broken", "raise ValueError('nope')\n")
    args = _parser().parse_args(["experiment", "--list"])
    assert args.func(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("broken") and "cannot be loaded" in lines[0]
    assert lines[1].split()[0] == "fake" and lines[1].endswith("A fake experiment for the tests")
    assert lines[2].split()[0] == "zeta-2"


def test_cli_run_prints_where_and_how_long(fake_root, tmp_path, capsys):
    args = _parser().parse_args(["experiment", "fake", "--smoke", "--out", str(tmp_path / "o"), "--scheduler", "tcp://h:1"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "experiment fake (smoke size) finished in" in out and " s\n" in out
    assert str((tmp_path / "o").resolve()) in out
    assert json.loads((tmp_path / "o" / "results.json").read_text()) == {"smoke": True, "scheduler": "tcp://h:1"}


def test_cli_usage_errors(fake_root):
    p = _parser()
    for argv, pattern in ((["experiment"], "give an experiment name"),
                          (["experiment", "fake", "--list"], "either an experiment name or --list"),
                          (["experiment", "missing"], "unknown experiment 'missing'; known experiments: fake, zeta-2")):
        args = p.parse_args(argv)
        with pytest.raises(VotebenchError, match=pattern):
            args.func(args)


def test_cli_main_when_wired(fake_root, capsys):
    import engine.app.cli

    parser = engine.app.cli.build_parser()
    choices = next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "experiment" not in choices:
        pytest.skip("votebench experiment is not wired into engine.app.cli yet")
    assert engine.app.cli.main(["experiment", "missing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("votebench: error: unknown experiment 'missing'") and err.count("\n") == 1


# ------------------------------------------------------------------------------------------- helpers
def test_load_config_smoke_overrides(tmp_path):
    folder = _make(tmp_path, "c", FAKE_RUN, config="""
        trials = 100
        rules = ["a", "b"]
        [sizes]
        n = 5
        m = 6
        [smoke]
        trials = 3
        [smoke.sizes]
        n = 1
    """)
    full = ex.load_config(folder)
    small = ex.load_config(folder, smoke=True)
    assert full == {"trials": 100, "rules": ["a", "b"], "sizes": {"n": 5, "m": 6}}
    assert small == {"trials": 3, "rules": ["a", "b"], "sizes": {"n": 1, "m": 6}}
    with pytest.raises(VotebenchError, match="not found"):
        ex.load_config(tmp_path)
    (folder / "config.toml").write_text("x = [\n")
    with pytest.raises(VotebenchError, match="config.toml"):
        ex.load_config(folder)


def test_json_safe_and_write_json(tmp_path):
    data = {"a": np.float64("nan"), "b": [np.int64(3), np.inf, 1.5], "c": np.array([[1.0, np.nan]]), 4: np.bool_(True),
            "p": Path("/x/y"), "t": (np.float32(0.5),)}
    safe = ex.json_safe(data)
    assert safe == {"a": None, "b": [3, None, 1.5], "c": [[1.0, None]], "4": True, "p": "/x/y", "t": [0.5]}
    path = ex.write_json(tmp_path / "sub" / "r.json", data)

    def refuse(token):
        raise AssertionError(f"non-JSON constant {token}")

    assert json.loads(path.read_text(), parse_constant=refuse) == safe


def test_markdown_table_escapes_pipes():
    text = ex.markdown_table(["a", "b|c"], [[1, "x|y"], [math.pi, "line\nbreak"]])
    lines = text.splitlines()
    assert lines[0] == "| a | b\\|c |" and lines[1] == "|---|---|"
    assert lines[2] == "| 1 | x\\|y |" and lines[3].endswith("| line break |")
    assert len(lines) == 4


def test_dask_compute_local_is_in_process():
    calls = []

    def f(x):
        calls.append(x)
        return x * 2

    assert ex.dask_compute([dask.delayed(f)(i) for i in range(4)]) == [0, 2, 4, 6]
    assert sorted(calls) == [0, 1, 2, 3]  # ran here, so the side effect is visible
    assert ex.dask_compute([]) == []


def test_root_is_found_through_the_package_or_given(monkeypatch, tmp_path, capsys):
    """The project folder comes from $VOTEBENCH_ROOT, else the installed package; --root names another one."""
    from conftest import run_cli

    import engine.app.experiment as ex

    monkeypatch.setenv("VOTEBENCH_ROOT", str(tmp_path))
    assert ex.find_root() == tmp_path.resolve()
    monkeypatch.delenv("VOTEBENCH_ROOT")
    assert (ex.find_root() / "experiments" / "pavao2021" / "run.py").is_file()  # this checkout, from the package
    code, out, err = run_cli(capsys, "experiment", "--list", "--root", tmp_path)
    assert code == 2 and "no experiments/ folder" in err
    (tmp_path / "experiments" / "toy").mkdir(parents=True)
    (tmp_path / "experiments" / "toy" / "run.py").write_text(
        "TITLE = 'toy'\nDESCRIPTION = 'x'\ndef run(out, *, smoke=False, scheduler=None):\n    return {}\n")
    monkeypatch.setattr(ex, "ROOT", ex.ROOT)  # restored after the test
    code, out, err = run_cli(capsys, "experiment", "--list", "--root", tmp_path)
    assert code == 0 and out.split() == ["toy", "toy"]
