"""The shape of the code (ARCHITECTURE.md): layers, private names, function length, lint and types.

These run in CI with the rest of the suite: `ruff check` and `mypy` on ``engine/``, and three structural
rules checked on the source tree itself.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENGINE = REPO / "engine"
MAX_LINES = 80


def _modules() -> list[Path]:
    return sorted(ENGINE.rglob("*.py"))


def _engine_module_names(tree: ast.AST, path: Path) -> set[str]:
    """Local names bound to engine modules (``from .kernels import mcdm as M``, ``import engine.labelled.core``) in one file."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            pkg = path.parent
            for _ in range(node.level - 1):
                pkg = pkg.parent
            if node.module:
                pkg = pkg.joinpath(*node.module.split("."))
            out |= {a.asname or a.name for a in node.names
                    if (pkg / f"{a.name}.py").exists() or (pkg / a.name / "__init__.py").exists()}
        elif isinstance(node, ast.Import):
            out |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("engine")}
    return out


def test_no_private_name_is_imported_across_modules():
    bad = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        modules = _engine_module_names(tree, path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__" and (
                    node.level or (node.module or "").startswith("engine")):
                bad += [f"{path.relative_to(REPO)}:{node.lineno} imports {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in modules):
                bad.append(f"{path.relative_to(REPO)}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


def test_no_function_is_longer_than_80_lines():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {n} lines")
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def test_no_absolute_path_of_a_machine():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=False).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    # the home folders of common machines and a Windows drive, built here so that this guard names no path itself
    marks = tuple(f"/{d}/" for d in ("work", "home", "root", "Users")) + ("C:" + "\\" * 2,)
    found = []
    for name in files:
        path = REPO / name
        if name == "tests/project/test_architecture.py" or name == "tests/project/test_self_contained.py" or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary (figures, gzip data)
        found += [f"{name}: {m}" for m in marks if m in text]
    assert not found, "absolute paths in the repository:\n" + "\n".join(found)


@pytest.mark.parametrize("tool", ["ruff", "mypy"])
def test_lint_and_types(tool):
    if shutil.which(tool) is None and subprocess.run([sys.executable, "-m", tool, "--version"],
                                                     capture_output=True, check=False).returncode != 0:
        pytest.fail(f"{tool} is not installed; it is part of the test extra (pip install -e '.[test]')")
    cmd = [sys.executable, "-m", tool] + (["check", "engine", "tests"] if tool == "ruff" else ["engine"])
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    assert res.returncode == 0, f"{' '.join(cmd[2:])}:\n{res.stdout[-4000:]}{res.stderr[-2000:]}"
