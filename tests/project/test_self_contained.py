"""Everything the project needs is in the repository: nothing reads the shared folder beside the checkout (or anything
else outside it).

Every experiment's smoke run (``smoke_run`` in conftest, used by ``tests/experiments/test_experiment_NAME.py``) runs in a fresh
process from a copy of the repository with nothing beside it, records every file it opens and fails on a file
outside the copy or an input reported unavailable.  These tests check that guard itself and that it covers every
experiment.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

from conftest import REPO, SMOKE_CHILD, outside_repository

from engine.app.experiment import experiment_names


def test_every_experiment_is_smoke_run_from_the_copy():
    for name in experiment_names():
        test = REPO / "tests" / "experiments" / f"test_experiment_{name}.py"
        assert test.is_file(), f"no smoke test for experiment {name}"
        assert re.search(rf"smoke_run\(\"{name}\"\)", test.read_text(encoding="utf-8")), test.name


def test_no_source_looks_beside_the_repository():
    shared, work = "shared", "work"  # folder names beside the checkout, spelt apart so that this guard names no path
    pattern = re.compile(rf"\.\./{shared}|/{shared}/data|parents\[3\]|/{work}/")
    hits = []
    for folder in ("engine", "experiments", "tests", "benchmarks"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".toml", ".md", ".json", ".yaml", ".yml") and "results" not in path.parts:
                text = path.read_text(encoding="utf-8")
                hits += [f"{path.relative_to(REPO)}: {m.group(0)}" for m in pattern.finditer(text)
                         if path.name not in ("test_self_contained.py", "test_architecture.py")]  # the two guards
    assert hits == []


def test_the_guard_catches_a_read_beside_the_copy(tmp_path):
    """An experiment that reads a file of the real checkout (beside its copy) is reported by the smoke-run guard."""
    root = tmp_path / "alone" / "votebench"
    shutil.copytree(REPO / "engine", root / "engine", ignore=shutil.ignore_patterns("__pycache__"))
    peek = root / "experiments" / "peek"
    peek.mkdir(parents=True)
    outside = REPO / "pyproject.toml"  # a file of the real checkout, not of the copy
    (peek / "run.py").write_text(
        "TITLE = 't'\nDESCRIPTION = 'd'\n"
        "def run(out, *, smoke=False, scheduler=None):\n"
        f"    open({str(outside)!r}).read()\n"
        "    return {}\n", encoding="utf-8")
    out, report = tmp_path / "out", tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-c", SMOKE_CHILD, "peek", str(out), str(report)], cwd=root,
                          env={"PYTHONPATH": str(root), "PATH": ""}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = json.loads(report.read_text(encoding="utf-8"))
    assert rep["engine"].startswith(str(root))
    flagged = [p for p in rep["opened"] if outside_repository(p, root, out, report)]
    assert str(outside) in flagged
    assert not [p for p in flagged if p != str(outside)]  # the engine itself read nothing beside the copy
