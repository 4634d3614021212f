"""The votebench command line: output contract, formats, atomic --output, bad input -> exit 2."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    BAD_INPUTS,
    COLOMBO_T1_VALUES,
    DATA,
    MALFORMED_SIDECARS,
    bf_aggregate,
    bf_min_rank,
    one_line_error,
    only_direction_notes,
    run_cli,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
import engine.app.cli
import engine.io.files
from engine.app.cli import main

# ties on purpose: Borda totals d=6, a=3, b=3, c=0 (a and b share rank 2, c is 4th)
TIES = "system,t1,t2\nb,1,2\na,2,1\nc,0,0\nd,3,3\n"


cli = run_cli


def assert_one_line_error(code, out, err, *fragments):
    one_line_error(code, out, err, *fragments, marker="error")


def expected_ranking(values, hib, *, rule, level, systems, missing="error"):
    """Reference JSON ranking from the brute-force aggregate."""
    score = bf_aggregate(values, hib, rule=rule, level=level, missing=missing)
    rank = bf_min_rank(score)
    rows = [(int(r), s, float(v)) for s, v, r in zip(systems, score, rank) if not np.isnan(v)]
    return sorted(rows, key=lambda r: (r[0], r[1]))


def check_json_contract(text, *, rule, level, expected=None, exact=True):
    obj = json.loads(text)
    assert list(obj) == ["rule", "level", "n_systems", "ranking"]
    assert obj["rule"] == rule and obj["level"] == level
    ranking = obj["ranking"]
    assert obj["n_systems"] == len(ranking)
    for row in ranking:
        assert list(row) == ["system", "score", "rank"]
        assert isinstance(row["system"], str) and isinstance(row["score"], float) and type(row["rank"]) is int
    # sorted by rank, then name; rank = 1 + number of systems with a strictly higher score
    assert [(r["rank"], r["system"]) for r in ranking] == sorted((r["rank"], r["system"]) for r in ranking)
    scores = [r["score"] for r in ranking]
    assert [r["rank"] for r in ranking] == [1 + sum(o > s for o in scores) for s in scores]
    if expected is not None:
        assert [(r["rank"], r["system"]) for r in ranking] == [(e[0], e[1]) for e in expected]
        if exact:
            assert scores == [e[2] for e in expected]
        else:
            np.testing.assert_allclose(scores, [e[2] for e in expected], rtol=1e-12)
    return obj


# ---------------------------------------------------------------------------------------------
# output contract
# ---------------------------------------------------------------------------------------------
def test_json_contract_with_ties(capsys, write):
    path = write("ties.csv", TIES)
    code, out, err = cli(capsys, "rank", path, "--rule", "borda", "--format", "json")
    assert code == 0 and only_direction_notes(err)
    values = np.array([[1, 2], [2, 1], [0, 0], [3, 3]], dtype=float)[:, :, None]
    exp = expected_ranking(values, [True, True], rule="borda", level="task", systems=["b", "a", "c", "d"])
    obj = check_json_contract(out, rule="borda", level="task", expected=exp)
    # the hand-worked numbers: d first; a and b tied (listed by name) share rank 2; c is 4th, not 3rd
    assert [(r["system"], r["score"], r["rank"]) for r in obj["ranking"]] == [
        ("d", 6.0, 1),
        ("a", 3.0, 2),
        ("b", 3.0, 2),
        ("c", 0.0, 4),
    ]
    assert out.endswith("\n")


@given(
    data=st.data(),
    rule=st.sampled_from(["borda", "mean"]),
    level=st.sampled_from(["task", "one", "two"]),
)
@settings(max_examples=20, deadline=None)
def test_json_contract_random_tables(data, rule, level):
    labels = st.sampled_from(["a", "b", "B", "x,y", 'q"t', "sys 1", "zz", "é"])
    names = data.draw(st.lists(labels, min_size=2, max_size=5, unique=True))
    n_tasks = data.draw(st.integers(1, 3))
    n_inst = data.draw(st.integers(1, 3))
    n = len(names) * n_tasks * n_inst
    values = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n, max_size=n)))
    values = values.reshape(len(names), n_tasks, n_inst)
    hib = data.draw(st.lists(st.booleans(), min_size=n_tasks, max_size=n_tasks))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["system", "task", "instance", "score"])
    for i, s in enumerate(names):
        for t in range(n_tasks):
            for k in range(n_inst):
                w.writerow([s, f"t{t}", k, values[i, t, k]])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scores.csv"
        path.write_text(buf.getvalue(), encoding="utf-8")
        meta = {"higher_is_better": {f"t{t}": h for t, h in enumerate(hib)}}
        (Path(d) / "scores.meta.json").write_text(json.dumps(meta))
        out, err = io.StringIO(), io.StringIO()
        with _redirect(out, err):
            code = main(["rank", str(path), "--rule", rule, "--level", level, "--format", "json"])
    assert code == 0, err.getvalue()
    exp = expected_ranking(values, hib, rule=rule, level=level, systems=names)
    if rule == "borda":
        check_json_contract(out.getvalue(), rule=rule, level=level, expected=exp)
    else:  # means: scores up to summation order; ranks checked against the output's own scores
        obj = check_json_contract(out.getvalue(), rule=rule, level=level)
        got = {r["system"]: r["score"] for r in obj["ranking"]}
        np.testing.assert_allclose([got[e[1]] for e in exp], [e[2] for e in exp], rtol=1e-12, atol=1e-12)


class _redirect:
    """Redirect sys.stdout / sys.stderr (capsys is function-scoped, hypothesis runs many examples)."""

    def __init__(self, out, err):
        self.out, self.err = out, err

    def __enter__(self):
        self.saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = self.out, self.err

    def __exit__(self, *exc):
        sys.stdout, sys.stderr = self.saved


def _json_rows(capsys, path, *extra):
    code, out, err = cli(capsys, "rank", path, "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)["ranking"]


def test_csv_format(capsys, write):
    path = write("ties.csv", TIES)
    rows = _json_rows(capsys, path)
    code, out, err = cli(capsys, "rank", path, "--format", "csv")
    assert code == 0 and only_direction_notes(err)
    table = list(csv.reader(io.StringIO(out)))
    assert table[0] == ["rank", "system", "score"]
    assert [(int(r), s, float(v)) for r, s, v in table[1:]] == [(d["rank"], d["system"], d["score"]) for d in rows]


def test_csv_format_quotes_awkward_names(capsys, write):
    path = write("w.csv", 'system,t\n"x, y",1\n"say ""hi""",2\n')
    code, out, _ = cli(capsys, "rank", path, "--format", "csv", "--rule", "mean")
    assert code == 0
    table = list(csv.reader(io.StringIO(out)))
    assert [r[1] for r in table[1:]] == ['say "hi"', "x, y"]


def test_table_format(capsys, write):
    path = write("ties.csv", TIES)
    rows = _json_rows(capsys, path)
    code, out, err = cli(capsys, "rank", path)  # table is the default
    assert code == 0 and only_direction_notes(err)
    lines = out.splitlines()
    assert "borda" in lines[0] and "task" in lines[0]
    dash = next(i for i, line in enumerate(lines) if set(line.replace(" ", "")) == {"-"})
    body = [line for line in lines[dash + 1 :] if not line.startswith("#")]
    assert len(body) == len(rows)
    for line, row in zip(body, rows):
        tokens = line.split()
        assert tokens[0].rstrip("=") == str(row["rank"])
        assert row["system"] in line
        assert float(tokens[-1]) == pytest.approx(row["score"], rel=1e-5)


def test_default_level_two_for_instance_level_input_and_zarr_store(capsys, write, tmp_path):
    lines = ["system,task,instance,score"]
    rng = np.random.default_rng(0)
    for t in ("x", "y"):
        for k in range(4):
            for s in ("a", "b", "c"):
                lines.append(f"{s},{t},{k},{rng.integers(0, 3)}")
    path = write("inst.csv", "\n".join(lines) + "\n")
    code, out, _ = cli(capsys, "rank", path, "--format", "json")
    assert code == 0
    from_csv = json.loads(out)
    assert from_csv["level"] == "two"
    engine.to_zarr(engine.open_scores(path), tmp_path / "inst.zarr", chunks={"task": 1, "instance": 3})
    code, out, _ = cli(capsys, "rank", tmp_path / "inst.zarr", "--format", "json")
    assert code == 0 and json.loads(out) == from_csv
    for level in ("task", "one"):
        code, out, _ = cli(capsys, "rank", path, "--format", "json", "--level", level)
        assert code == 0 and json.loads(out)["level"] == level


def test_colombo_table1_through_cli_with_sidecar(capsys, write):
    tasks = [f"Task{i}" for i in range(1, 7)]
    lines = ["system," + ",".join(tasks)] + [f"{s}," + ",".join(map(str, COLOMBO_T1_VALUES[s])) for s in "ABC"]
    path = write("t1.csv", "\n".join(lines) + "\n")
    write("t1.meta.json", json.dumps({"higher_is_better": {t: False for t in tasks}}))
    assert [r["system"] for r in _json_rows(capsys, path, "--rule", "mean")] == ["A", "B", "C"]
    assert [r["system"] for r in _json_rows(capsys, path, "--rule", "borda")] == ["C", "B", "A"]


def test_missing_policies_on_shipped_data(capsys):
    path = DATA / "vnr_value.csv"
    code, out, err = cli(capsys, "rank", path, "--format", "json")
    assert_one_line_error(code, out, err)
    assert "5 missing scores" in err and "listwise" in err
    s = engine.open_scores(path)
    for policy in ("listwise", "drop-judges"):
        code, out, err = cli(capsys, "rank", path, "--format", "json", "--missing", policy)
        assert code == 0
        obj = json.loads(out)
        ds = engine.rank(s, rule="borda", missing=policy)
        ranked = {
            str(k): (float(v), int(r))
            for k, v, r in zip(ds["system"].values, ds["score"].values, ds["rank"].values)
            if not np.isnan(v)
        }
        assert {r["system"]: (r["score"], r["rank"]) for r in obj["ranking"]} == ranked
    listwise = json.loads(cli(capsys, "rank", path, "--format", "json", "--missing", "listwise")[1])
    assert "Human" not in {r["system"] for r in listwise["ranking"]}


# ---------------------------------------------------------------------------------------------
# --output: atomic
# ---------------------------------------------------------------------------------------------
def _dir_listing(folder):
    return sorted(p.name for p in Path(folder).iterdir())


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_output_file_has_exactly_the_stdout_text(capsys, write, tmp_path, fmt):
    path = write("ties.csv", TIES)
    code, stdout_text, _ = cli(capsys, "rank", path, "--format", fmt)
    assert code == 0
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, out, err = cli(capsys, "rank", path, "--format", fmt, "--output", out_dir / "r.txt")
    assert code == 0 and out == "" and only_direction_notes(err)
    assert f"votebench: wrote {out_dir / 'r.txt'}\n" in err  # says where
    assert (out_dir / "r.txt").read_text(encoding="utf-8") == stdout_text
    assert _dir_listing(out_dir) == ["r.txt"]  # no temporary files left


def test_output_replaces_existing_file(capsys, write, tmp_path):
    path = write("ties.csv", TIES)
    target = tmp_path / "r.json"
    target.write_text("old")
    assert cli(capsys, "rank", path, "--format", "json", "-o", target)[0] == 0
    json.loads(target.read_text())


def test_output_not_written_on_bad_input(capsys, write, tmp_path):
    bad = write("bad.csv", "system,t1\na,1\nb,oops\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert_one_line_error(*cli(capsys, "rank", bad, "--output", out_dir / "r.json"))
    assert _dir_listing(out_dir) == []
    (out_dir / "r.json").write_text("precious")
    assert_one_line_error(*cli(capsys, "rank", bad, "--output", out_dir / "r.json"))
    assert (out_dir / "r.json").read_text() == "precious" and _dir_listing(out_dir) == ["r.json"]


def test_output_failure_while_writing_leaves_nothing(capsys, write, tmp_path, monkeypatch):
    path = write("ties.csv", TIES)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "r.json").write_text("precious")

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine.io.files.os, "replace", failing_replace)
    code, out, err = cli(capsys, "rank", path, "--format", "json", "--output", out_dir / "r.json")
    assert_one_line_error(code, out, err)
    assert "No space left on device" in err
    assert (out_dir / "r.json").read_text() == "precious"
    assert _dir_listing(out_dir) == ["r.json"]


def test_output_to_a_directory_or_missing_folder(capsys, write, tmp_path):
    path = write("ties.csv", TIES)
    (tmp_path / "adir").mkdir()
    assert_one_line_error(*cli(capsys, "rank", path, "--output", tmp_path / "adir"))
    assert _dir_listing(tmp_path / "adir") == []
    assert_one_line_error(*cli(capsys, "rank", path, "--output", tmp_path / "nope" / "r.json"))
    assert not (tmp_path / "nope").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# ---------------------------------------------------------------------------------------------
# bad input: exit code 2, exactly one line on stderr, no traceback
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,content,pattern", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_exits_2_with_one_line(capsys, write, name, content, pattern):
    path = write(name, content)
    code, out, err = cli(capsys, "rank", path, "--format", "json", "--output", path.parent / "out.json")
    assert_one_line_error(code, out, err)
    assert not (path.parent / "out.json").exists()


@pytest.mark.parametrize("tag,content,pattern", MALFORMED_SIDECARS, ids=[m[0] for m in MALFORMED_SIDECARS])
def test_malformed_sidecar_exits_2(capsys, write, tag, content, pattern):
    path = write(f"{tag}.csv", "system,t1\na,1\nb,2\n")
    write(f"{tag}.meta.json", content)
    assert_one_line_error(*cli(capsys, "rank", path))


@pytest.mark.parametrize(
    "argv",
    [
        ["rank", "{data}", "--rule", "nope"],
        ["rank", "{data}", "--level", "three"],
        ["rank", "{data}", "--missing", "ignore"],
        ["rank", "{data}", "--format", "xml"],
        ["rank"],
        ["frobnicate"],
        [],
        ["rank", "{missing}"],
        ["rank", "{dir}"],
    ],
    ids=["rule", "level", "policy", "format", "no-input", "command", "nothing", "missing-file", "directory"],
)
def test_bad_usage_exits_2_with_one_line(capsys, write, tmp_path, argv):
    data = write("ties.csv", TIES)
    (tmp_path / "d").mkdir()
    subst = {"{data}": str(data), "{missing}": str(tmp_path / "nope.csv"), "{dir}": str(tmp_path / "d")}
    code, out, err = cli(capsys, *[subst.get(a, a) for a in argv])
    assert_one_line_error(code, out, err)


def test_missing_scores_under_error_policy_exit_2(capsys, write):
    path = write("m.csv", "system,t1,t2\na,1,\nb,2,3\nc,0,1\n")
    code, out, err = cli(capsys, "rank", path, "--rule", "mean")
    assert_one_line_error(code, out, err)
    assert "1 missing score" in err and "'a' on 't2'" in err


def test_missing_scores_in_zarr_store_fail_at_compute_time_with_exit_2(capsys, write, tmp_path):
    path = write("m.csv", "system,t1,t2\na,1,\nb,2,3\nc,0,1\n")
    engine.to_zarr(engine.open_scores(path), tmp_path / "m.zarr", chunks={"task": 1})
    code, out, err = cli(capsys, "rank", tmp_path / "m.zarr", "--format", "json", "-o", tmp_path / "r.json")
    assert_one_line_error(code, out, err)
    assert "1 missing score" in err
    assert not (tmp_path / "r.json").exists()


def test_rules_command_lists_mean_and_borda(capsys):
    code, out, _ = cli(capsys, "rules")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert "mean" in names and "borda" in names


# ---------------------------------------------------------------------------------------------
# the installed console script, in a real subprocess
# ---------------------------------------------------------------------------------------------
def _votebench():
    exe = shutil.which("votebench", path=os.path.dirname(sys.executable)) or shutil.which("votebench")
    if exe is None:
        pytest.skip("votebench console script not installed")
    return exe


def test_subprocess_console_script(capsys, write, tmp_path):
    exe = _votebench()
    path = write("ties.csv", TIES)
    ok = subprocess.run(
        [exe, "rank", str(path), "--format", "json", "--output", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=120,
    )
    assert ok.returncode == 0 and ok.stdout == "" and only_direction_notes(ok.stderr), ok.stderr
    code, in_process, _ = cli(capsys, "rank", path, "--format", "json")
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == in_process

    bad = write("dup.csv", "system,task,instance,score\na,t,0,1\nb,t,0,2\na,t,0,3\n")
    fail = subprocess.run([exe, "rank", str(bad), "--rule", "mean"], capture_output=True, text=True, timeout=120)
    assert fail.returncode == 2 and fail.stdout == ""
    assert fail.stderr.count("\n") == 1 and "Traceback" not in fail.stderr and "duplicate entry" in fail.stderr

    usage = subprocess.run([exe, "rank", str(path), "--level", "three"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1 and "Traceback" not in usage.stderr
