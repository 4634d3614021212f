"""Defaults that must not mislead (issue 15, item 6): said directions, --lower-is-better everywhere, what a policy left
out, --overwrite for `bootstrap --store`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import DATA, one_line_error, run_cli

from engine.sweep import open_results

TABLE = "system,acc,loss,time\na,0.9,0.3,5\nb,0.8,0.1,9\nc,0.7,0.2,1\nd,0.6,0.4,3\n"


def notes(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("votebench: note: ")]


@pytest.mark.parametrize("command", [["rank"], ["bootstrap", "--replicates", "5"], ["condorcet"]])
def test_a_note_says_which_directions_defaulted(capsys, write, command):
    path = write("t.csv", TABLE)
    code, _, err = run_cli(capsys, command[0], path, *command[1:])
    assert code == 0
    assert notes(err) == ["votebench: note: no direction given for all 3 tasks (no sidecar entry, no --lower-is-better): "
                          "higher is better assumed for acc, loss, time"]
    code, _, err = run_cli(capsys, command[0], path, *command[1:], "--lower-is-better", "loss,time")
    assert code == 0 and notes(err) == ["votebench: note: no direction given for 1 of 3 tasks (no sidecar entry, no "
                                        "--lower-is-better): higher is better assumed for acc"]
    write("t.meta.json", json.dumps({"higher_is_better": {"acc": True, "loss": False, "time": False}}))
    code, _, err = run_cli(capsys, command[0], path, *command[1:])
    assert code == 0 and notes(err) == []


def test_no_note_for_shipped_data_with_a_sidecar(capsys):
    code, _, err = run_cli(capsys, "rank", DATA / "vnr_glue.csv", "--missing", "listwise")
    assert code == 0 and not any("direction" in n for n in notes(err))


def test_a_failing_command_stays_one_line(capsys, write, tmp_path):
    path = write("t.csv", TABLE)
    code, out, err = run_cli(capsys, "rank", path, "--output", tmp_path / "missing" / "x.json")
    one_line_error(code, out, err, "does not exist", prefix="votebench")  # the direction note is not printed


def test_condorcet_reads_directions(capsys, write):
    path = write("t.csv", TABLE)
    _, out, _ = run_cli(capsys, "condorcet", path, "--format", "json")
    assert json.loads(out)["condorcet_winner"] == "a"  # a wins acc, and the higher loss and time count as better
    _, out, _ = run_cli(capsys, "condorcet", path, "--format", "json", "--lower-is-better", "loss,time")
    # now: a beats b on acc only (b has lower loss), b beats a on loss and time -> b over a; by hand below
    X = np.array([[0.9, 0.8, 0.7, 0.6], [-0.3, -0.1, -0.2, -0.4], [-5, -9, -1, -3]])
    wins = [[sum(X[t, i] > X[t, j] for t in range(3)) for j in range(4)] for i in range(4)]
    winner = [i for i in range(4) if all(wins[i][j] > wins[j][i] for j in range(4) if j != i)]
    assert json.loads(out)["condorcet_winner"] == ("abcd"[winner[0]] if winner else None)
    write("other.json", json.dumps({"higher_is_better": {"acc": True, "loss": False, "time": False}}))
    _, out2, err = run_cli(capsys, "condorcet", path, "--format", "json", "--meta", path.with_name("other.json"))
    assert json.loads(out2)["condorcet_winner"] == json.loads(out)["condorcet_winner"] and notes(err) == []


def test_bootstrap_says_what_the_missing_score_policy_left_out(capsys):
    superglue = DATA / "vnr_superglue.csv"
    code, out, err = run_cli(capsys, "bootstrap", superglue, "--missing", "listwise", "--replicates", "4", "--format", "json")
    rank_err = run_cli(capsys, "rank", superglue, "--missing", "listwise")[2]
    assert code == 0
    left = [n for n in notes(err) if "left out" in n]
    assert left == [n for n in notes(rank_err) if "left out" in n] and len(left) == 1  # as `rank` says it
    dropped = [s for s in left[0].split(": ", 2)[2].split(", ")]
    ranked = {r["system"] for r in json.loads(out)["ranking"]}
    assert not ranked & set(dropped)
    code, _, err = run_cli(capsys, "bootstrap", superglue, "--missing", "drop-judges", "--replicates", "4")
    assert code == 0
    (judges,) = [n for n in notes(err) if "drop-judges" in n]
    import engine

    X = engine.open_scores(superglue)
    gaps = [str(t) for t in X["task"].values if X.sel(task=t).isnull().any()]
    assert judges.endswith(f"left out {len(gaps)} task(s) with a missing score: " + ", ".join(gaps[:5])
                           + (" ..." if len(gaps) > 5 else ""))


def test_bootstrap_store_overwrite_and_lower_is_better(capsys, write, tmp_path):
    path = write("t.csv", TABLE)
    store = tmp_path / "b.zarr"
    base = ["bootstrap", path, "--replicates", "4", "--block", "2", "--format", "json", "--store", store]
    code, first, err = run_cli(capsys, *base, "--lower-is-better", "loss,time")
    assert code == 0, err
    cfg = json.loads(open_results(store, "t/bootstrap-tasks").attrs["config"])
    assert cfg["input"]["lower_is_better"] == ["loss", "time"]  # recorded: part of the store's provenance
    plain = run_cli(capsys, "bootstrap", path, "--replicates", "4", "--block", "2", "--format", "json",
                    "--lower-is-better", "loss,time")[1]
    assert json.loads(first)["ranking"] == json.loads(plain)["ranking"]
    code, out, err = run_cli(capsys, *base)  # another bootstrap on the same store: the hint names a real flag
    one_line_error(code, out, err, "--overwrite", prefix="votebench")
    code, out, err = run_cli(capsys, *base, "--overwrite")
    assert code == 0, err
    assert "lower_is_better" not in json.loads(open_results(store, "t/bootstrap-tasks").attrs["config"])["input"]
    one_line_error(*run_cli(capsys, "bootstrap", path, "--overwrite"), "--overwrite needs --store", prefix="votebench")


def test_sweep_lower_is_better_key_and_flag(capsys, write, tmp_path):
    path = write("t.csv", TABLE)
    cfg = write("s.toml", f'seed = 0\nstore = "{tmp_path / "s.zarr"}"\n[input]\npath = "{path}"\nlower_is_better = ["loss"]\n'
                          '[[rules]]\nname = "mean"\n[[perturbations]]\nkind = "bootstrap"\nreplicates = 2\nblock = 2\n')
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0, err
    assert notes(err)[:1] == ["votebench: note: input t: no direction given for 2 of 3 tasks (no sidecar entry, no "
                              "--lower-is-better): higher is better assumed for acc, time"]
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress", "--overwrite", "--lower-is-better", "time")
    assert code == 0, err
    stored = json.loads(open_results(tmp_path / "s.zarr", "t/bootstrap-tasks").attrs["config"])
    assert stored["input"]["lower_is_better"] == ["loss"]  # the input's own list wins over the flag
    bad = write("bad.toml", f'seed = 0\nstore = "{tmp_path / "b.zarr"}"\n[input]\npath = "{path}"\nlower_is_better = 3\n'
                            '[[perturbations]]\nkind = "bootstrap"\n')
    one_line_error(*run_cli(capsys, "sweep", bad), "lower_is_better must be a list of task names", prefix="votebench")
