"""The registries name their functions (rule kernels, reader openers and guesses) lazily: a command imports the rule
family and the reader it uses, nothing else; the lazy names behave as the functions they name.

Checked against the modules' own functions (imported directly), plain counters and fresh interpreters' ``sys.modules``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from engine.io.readers import READERS, guess_reader, only_for
from engine.rules import RULES, LazyFunction, get_rule

#: rule-family and reader modules that a Borda ranking of a CSV table has no use for
UNUSED_BY_BORDA_CSV = ("engine.kernels.mcdm", "engine.kernels.kemeny", "engine.kernels.battles",
                       "engine.io.readers.helm", "engine.io.readers.lm_eval", "engine.io.readers.jsonl",
                       "engine.io.readers.battles", "engine.io.battles", "engine.io.store")


def _modules_after(args: list[str]) -> dict:
    code = f"""
        import contextlib, io, json, sys
        from engine.app.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main({args!r})
        print(json.dumps({{"code": code, "modules": sorted(m for m in sys.modules if m.startswith("engine"))}}))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_borda_rank_of_a_csv_imports_no_other_rule_family_or_reader():
    out = _modules_after(["rank", "data/vnr_value.csv", "--missing", "listwise", "--rule", "borda"])
    assert out["code"] == 0
    assert "engine.io.readers.tables" in out["modules"]  # the reader it used
    assert sorted(set(UNUSED_BY_BORDA_CSV) & set(out["modules"])) == []


@pytest.mark.parametrize(("rule", "module"), [("promethee2", "engine.kernels.mcdm"), ("kemeny", "engine.kernels.kemeny"),
                                              ("bradley_terry", "engine.kernels.battles")])
def test_a_rule_imports_its_own_family_when_it_runs(rule, module):
    out = _modules_after(["rank", "data/vnr_value.csv", "--missing", "listwise", "--rule", rule])
    assert out["code"] == 0 and module in out["modules"]


@pytest.mark.parametrize("name", sorted(RULES))
def test_every_rule_kernel_is_the_function_it_names(name):
    rule = get_rule(name)
    for attr in ("kernel", "from_sums", "from_candidates"):
        f = getattr(rule, attr)
        if isinstance(f, LazyFunction):
            direct = getattr(importlib.import_module(f.module), f.name)
            assert f.resolve() is direct
            assert inspect.signature(f) == inspect.signature(direct)
            back = pickle.loads(pickle.dumps(f))  # the workers receive it by name
            assert (back.module, back.name) == (f.module, f.name) and back.resolve() is direct
    X = np.array([[0.9, 0.1, 0.5, 0.4], [0.2, 0.8, 0.5, 0.3], [0.6, 0.6, 0.1, 0.7]])
    if name not in ("random_judge", "geometric_mean", "scoring"):  # seeded draws; scores > 0; a vector needed
        kernel = rule.kernel.resolve() if isinstance(rule.kernel, LazyFunction) else rule.kernel
        np.testing.assert_array_equal(rule.kernel(X), kernel(X))


def test_a_missing_name_fails_when_called_not_when_registered():
    ref = LazyFunction("engine.kernels.social", "no_such_kernel")
    with pytest.raises(AttributeError):
        ref(np.zeros((2, 2)))


def test_only_for_asks_its_guess_about_the_paths_it_names_only(tmp_path):
    asked: list[Path] = []

    def guess(path: Path) -> bool:
        asked.append(path)
        return True

    folder, jsonl, csv = tmp_path / "d", tmp_path / "a.JSONL", tmp_path / "b.csv"
    folder.mkdir()
    jsonl.write_text("{}\n")
    csv.write_text("system,t\nx,1\n")
    files_only, with_folders = only_for(".jsonl", guess=guess), only_for(folders=True, guess=guess)
    assert [files_only(p) for p in (folder, jsonl, csv)] == [False, True, False]
    assert [with_folders(p) for p in (folder, jsonl, csv)] == [True, False, False]
    assert asked == [jsonl, folder]


def test_the_registry_still_guesses_every_built_in_kind(tmp_path):
    (tmp_path / "s.jsonl").write_text('{"system": "a", "task": "t", "score": 1}\n')
    (tmp_path / "b.csv").write_text("model_a,model_b,winner\nx,y,model_a\n")
    (tmp_path / "t.csv").write_text("system,t\nx,1\n")
    helm = tmp_path / "helm" / "run"
    helm.mkdir(parents=True)
    (helm / "per_instance_stats.json").write_text("[]")
    got = {p: guess_reader(tmp_path / p).name for p in ("s.jsonl", "b.csv", "t.csv", "helm")}
    assert got == {"s.jsonl": "jsonl", "b.csv": "battles", "t.csv": "csv", "helm": "helm"}
    assert list(READERS)[:4] == ["zarr", "lm-eval", "helm", "battles"]
