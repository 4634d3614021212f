"""Plugins: a package outside ``engine/`` adds a rule, a reader and a perturbation kind through entry points.

The package is installed for real, the way pip leaves it: a module and a ``*.dist-info`` folder with its
``entry_points.txt`` on ``sys.path``.  The commands run in fresh processes, so the registries see it only
through :mod:`importlib.metadata`; the answers are checked against plain loops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

PLUGIN = '''
import numpy as np
import xarray as xr

from engine.io.readers import Reader, by_suffix
from engine.labelled.canonical import scores_from_array
from engine.rules import Rule
from engine.sweep.kinds import KINDS


def median_score(X, *, weights=None):
    """The median of a system's task scores (weights ignored)."""
    return np.median(np.asarray(X, dtype=np.float64), axis=-2)


def read_vbscores(path):
    """Lines ``system task score``."""
    rows = [line.split() for line in open(path, encoding="utf-8") if line.strip()]
    systems = sorted({r[0] for r in rows})
    tasks = sorted({r[1] for r in rows})
    X = np.full((len(systems), len(tasks)), np.nan)
    for s, t, v in rows:
        X[systems.index(s), tasks.index(t)] = float(v)
    return scores_from_array(X, systems=systems, tasks=tasks)


RULE = Rule("median_score", median_score, "the median of the task scores", resample="index")
BAD_RULE = Rule("bad_rule", median_score, "a record the registry refuses", resample="indices")
READER = Reader("vbscores", read_vbscores, by_suffix(".vbscores"), description="system task score lines (.vbscores)")
NOT_A_RULE = 42
'''

ENTRY_POINTS = """
[votebench.rules]
median_score = demo_votebench_plugin:RULE
not_a_rule = demo_votebench_plugin:NOT_A_RULE
bad_rule = demo_votebench_plugin:BAD_RULE
missing = demo_votebench_plugin:NO_SUCH_NAME

[votebench.readers]
vbscores = demo_votebench_plugin:READER
"""

SCORES = {"a": [0.9, 0.1, 0.5], "b": [0.2, 0.8, 0.7], "c": [0.4, 0.6, 0.3], "d": [0.5, 0.5, 0.9]}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The demo plugin installed into a folder put on PYTHONPATH (the environment of the commands)."""
    site = tmp_path_factory.mktemp("site")
    (site / "demo_votebench_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = site / "demo_votebench_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-votebench-plugin\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    repo = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(site), str(repo), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def votebench(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)


def write_table(path: Path) -> Path:
    path.write_text("system,t1,t2,t3\n" + "".join(f"{s},{','.join(map(str, v))}\n" for s, v in SCORES.items()),
                    encoding="utf-8")
    return path


def test_the_rules_command_lists_a_plugin_rule_and_names_the_broken_entries(installed, tmp_path):
    res = votebench(installed, "rules", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert any(line.split()[0] == "median_score" for line in res.stdout.splitlines())
    notes = [line for line in res.stderr.splitlines() if "plugin" in line]
    assert any("not_a_rule" in line and "not a Rule record" in line for line in notes), res.stderr
    assert any("missing" in line and "could not be loaded" in line for line in notes), res.stderr
    assert any("bad_rule" in line and "refused" in line and "resample" in line for line in notes), res.stderr
    assert not any(line.split()[0] == "bad_rule" for line in res.stdout.splitlines())


def test_a_plugin_rule_ranks_as_a_plain_median(installed, tmp_path):
    res = votebench(installed, "rank", str(write_table(tmp_path / "t.csv")), "--rule", "median_score", "--format", "json",
                    cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    got = {r["system"]: r["score"] for r in json.loads(res.stdout)["ranking"]}
    assert got == pytest.approx({s: float(np.median(v)) for s, v in SCORES.items()})


def test_a_plugin_reader_opens_a_suffix_no_built_in_reader_takes(installed, tmp_path):
    path = tmp_path / "demo.vbscores"
    path.write_text("".join(f"{s} t{j + 1} {v}\n" for s, vs in SCORES.items() for j, v in enumerate(vs)), encoding="utf-8")
    from_plugin = votebench(installed, "rank", str(path), "--format", "json", cwd=tmp_path)
    from_csv = votebench(installed, "rank", str(write_table(tmp_path / "same.csv")), "--format", "json", cwd=tmp_path)
    assert from_plugin.returncode == 0 and from_csv.returncode == 0, from_plugin.stderr + from_csv.stderr
    assert json.loads(from_plugin.stdout)["ranking"] == json.loads(from_csv.stdout)["ranking"]
    named = votebench(installed, "rank", str(path), "--input-format", "vbscores", "--format", "json", cwd=tmp_path)
    assert named.returncode == 0 and json.loads(named.stdout)["ranking"] == json.loads(from_csv.stdout)["ranking"]


def test_an_unknown_rule_is_still_one_line_after_the_plugins_were_looked_at(installed, tmp_path):
    res = votebench(installed, "rank", str(write_table(tmp_path / "t.csv")), "--rule", "no_such_rule", cwd=tmp_path)
    assert res.returncode == 2
    err = [line for line in res.stderr.splitlines() if "error" in line]
    assert len(err) == 1 and "no_such_rule" in err[0] and "median_score" in err[0], res.stderr


def test_a_built_in_rule_does_not_scan_the_installed_packages(installed, tmp_path):
    """The plugins are looked for only when a name is not built in: `rank --rule borda` never scans the votebench groups
    (other libraries, such as xarray's backends, may scan their own)."""
    code = ("import sys, importlib.metadata as md\n"
            "calls = []\n"
            "real = md.entry_points\n"
            "md.entry_points = lambda *a, **k: calls.append(k.get('group')) or real(*a, **k)\n"
            "from engine.app.cli import main\n"
            "rc = main(sys.argv[1:])\n"
            "print('SCANS', sum(str(g).startswith('votebench.') for g in calls))\n"
            "sys.exit(rc)\n")
    args = ["rank", str(write_table(tmp_path / "t.csv")), "--rule", "borda"]
    res = subprocess.run([sys.executable, "-c", code, *args], env=installed, cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    assert "SCANS 0" in res.stdout
    res = subprocess.run([sys.executable, "-c", code, *args[:-1], "median_score"], env=installed, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0 and "SCANS 1" in res.stdout, res.stdout + res.stderr
