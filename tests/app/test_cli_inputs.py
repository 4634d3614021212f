"""Several inputs in one ``votebench rank`` / ``votebench bootstrap`` process.

Each input's ranking must be exactly what a one-input run prints (whose
numbers the other CLI tests check against brute-force references); here the
task-level Borda scores of one input are also checked against the reference.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
from conftest import DATA, bf_borda_across, one_line_error, run_cli

AUTOML = DATA / "esann_automl.csv"
STATLOG = DATA / "esann_statlog.csv"
VALUE = DATA / "vnr_value.csv"
PC = DATA / "colombo_dialog_pc.csv.gz"
TC = DATA / "colombo_dialog_tc.csv.gz"


def _wide(path):
    rows = list(csv.reader(path.open(encoding="utf-8")))
    return [r[0] for r in rows[1:]], np.array([[float(v) for v in r[1:]] for r in rows[1:]])


def test_rank_json_is_a_list_of_the_one_input_objects_with_an_input_key(capsys):
    singles = []
    for p in (AUTOML, STATLOG, PC):
        code, out, _ = run_cli(capsys, "rank", p, "--format", "json")
        assert code == 0
        singles.append(json.loads(out))
    code, out, err = run_cli(capsys, "rank", AUTOML, STATLOG, PC, "--format", "json")
    assert code == 0 and err == ""
    got = json.loads(out)
    assert isinstance(got, list) and [d["input"] for d in got] == [str(AUTOML), str(STATLOG), str(PC)]
    assert [list(d)[0] for d in got] == ["input"] * 3
    assert [{k: v for k, v in d.items() if k != "input"} for d in got] == singles
    assert got[2]["level"] == "two" and got[0]["level"] == "task"  # per-input default level
    # AutoML: task-level Borda points, from the file itself
    systems, X = _wide(AUTOML)
    ref = dict(zip(systems, bf_borda_across(X.T)))
    assert {d["system"]: d["score"] for d in got[0]["ranking"]} == ref


def test_rank_table_prints_one_ranking_per_input_under_a_header(capsys):
    blocks = []
    for p in (PC, TC):
        code, out, _ = run_cli(capsys, "rank", p, "--level", "two")
        assert code == 0
        blocks.append(out)
    code, out, _ = run_cli(capsys, "rank", PC, TC, "--level", "two")
    assert code == 0
    assert out == f"## {PC}\n{blocks[0]}\n## {TC}\n{blocks[1]}"


def test_rank_csv_has_an_input_column(capsys):
    code, out, _ = run_cli(capsys, "rank", AUTOML, STATLOG, "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["input", "rank", "system", "score"]
    for p in (AUTOML, STATLOG):
        code, one, _ = run_cli(capsys, "rank", p, "--format", "csv")
        mine = [r[1:] for r in rows[1:] if r[0] == str(p)]
        assert mine == list(csv.reader(io.StringIO(one)))[1:]
    assert len(rows) == 1 + 17 + 24


def test_notes_name_their_input(capsys):
    code, out, err = run_cli(capsys, "rank", VALUE, AUTOML, "--missing", "listwise")
    assert code == 0
    assert err == f"votebench: note: {VALUE}: missing-score policy 'listwise' left out 1 system(s): Human\n"


def test_an_error_names_its_input_and_nothing_is_printed(capsys, tmp_path):
    missing = tmp_path / "absent.csv"
    code, out, err = run_cli(capsys, "rank", AUTOML, missing)
    one_line_error(code, out, err, str(missing), prefix="votebench: error: ")
    # an engine error that does not name the file gets the input in front
    code, out, err = run_cli(capsys, "rank", AUTOML, VALUE, "--missing", "listwise", "--lower-is-better", "ds_01")
    one_line_error(code, out, err, prefix=f"votebench: error: {VALUE}: --lower-is-better names unknown task(s): ds_01")
    # nothing half-written: --output is not created when a later input fails
    target = tmp_path / "out.json"
    code, out, err = run_cli(capsys, "rank", AUTOML, missing, "--output", target)
    one_line_error(code, out, err, str(missing))
    assert not target.exists()


def test_output_file_holds_every_ranking(capsys, tmp_path):
    target = tmp_path / "all.json"
    code, out, _ = run_cli(capsys, "rank", AUTOML, STATLOG, "--format", "json", "--output", target)
    assert code == 0 and out == ""
    assert [d["input"] for d in json.loads(target.read_text(encoding="utf-8"))] == [str(AUTOML), str(STATLOG)]


def test_meta_takes_one_input(capsys):
    code, out, err = run_cli(capsys, "rank", AUTOML, STATLOG, "--meta", DATA / "esann_automl.meta.json")
    one_line_error(code, out, err, "--meta", "2 inputs")


def test_bootstrap_several_inputs(capsys, tmp_path):
    opts = ("--replicates", "12", "--seed", "3")
    singles = []
    for p in (AUTOML, STATLOG):
        code, out, _ = run_cli(capsys, "bootstrap", p, *opts, "--format", "json")
        assert code == 0
        singles.append(json.loads(out))
    code, out, _ = run_cli(capsys, "bootstrap", AUTOML, STATLOG, *opts, "--format", "json")
    assert code == 0
    got = json.loads(out)
    assert [d["input"] for d in got] == [str(AUTOML), str(STATLOG)]
    assert [{k: v for k, v in d.items() if k != "input"} for d in got] == singles
    code, out, _ = run_cli(capsys, "bootstrap", AUTOML, STATLOG, *opts)
    assert code == 0 and out.startswith(f"## {AUTOML}\n# rule borda, bootstrap over tasks") and f"\n## {STATLOG}\n" in out
    code, out, _ = run_cli(capsys, "bootstrap", AUTOML, STATLOG, *opts, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["input", "rank", "system", "score", "rank_low", "rank_high", "tied_with_leader", "rank_ub"]
    assert {r[0] for r in rows[1:]} == {str(AUTOML), str(STATLOG)} and len(rows) == 1 + 17 + 24
    code, out, err = run_cli(capsys, "bootstrap", AUTOML, STATLOG, *opts, "--store", tmp_path / "s.zarr")
    one_line_error(code, out, err, "--store takes one input")
    assert not (tmp_path / "s.zarr").exists()
