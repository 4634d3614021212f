"""``votebench bootstrap``: JSON contract, values against engine.bootstrap / numpy / plain loops, --store, formats, errors."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import (
    DATA,
    TIE_VALUES,
    bf_average_ranks,
    bf_borda_across,
    bf_kendall_w,
    bf_min_rank,
    bf_tau_b,
    one_line_error,
    only_direction_notes,
    run_cli,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.app.cli import main
from engine.kernels import metrics
from engine.kernels.resample import resample_indices
from engine.sweep import open_results

AUTOML = DATA / "esann_automl.csv"  # 17 systems x 30 tasks, complete
SUPERGLUE = DATA / "vnr_superglue.csv"  # 24 systems x 14 tasks, 12 missing scores
TAC08 = DATA / "colombo_tac08.csv.gz"  # 62 systems x 15 tasks x 48 instances

TOP_KEYS = {"rule", "over", "replicates", "seed", "interval", "ranking", "stability", "rank_ub_definition"}
ROW_KEYS = {"system", "score", "rank", "rank_low", "rank_high", "rank_ub"}


cli = run_cli


def assert_one_line_error(code, out, err, *fragments):
    one_line_error(code, out, err, *fragments, prefix="votebench", marker="error: ")


def as_float(v):
    return math.nan if v is None else v


# ---------------------------------------------------------------------------------------------
# JSON contract and values against the engine
# ---------------------------------------------------------------------------------------------
CASES = {
    "automl-tasks-borda": (AUTOML, "tasks", {"rule": "borda"}),
    "automl-systems-mean": (AUTOML, "systems", {"rule": "mean"}),
    "superglue-tasks-copeland-listwise": (SUPERGLUE, "tasks", {"rule": "copeland", "missing": "listwise"}),
    "superglue-systems-borda-dropjudges": (SUPERGLUE, "systems", {"rule": "borda", "missing": "drop-judges"}),
    "tac08-instances-borda-one": (TAC08, "instances", {"rule": "borda", "level": "one"}),
}


def flags(opts):
    return [x for k, v in opts.items() for x in (f"--{k}", v)]


@pytest.mark.parametrize("case", list(CASES))
def test_json_matches_engine(capsys, case):
    path, over, opts = CASES[case]
    B, seed = 20, 7
    code, out, err = cli(capsys, "bootstrap", path, "--over", over, "--replicates", B, "--seed", seed, *flags(opts),
                         "--format", "json")
    assert code == 0, err
    obj = json.loads(out)
    assert set(obj) == TOP_KEYS
    assert (obj["rule"], obj["over"], obj["replicates"], obj["seed"]) == (opts["rule"], over, B, seed)
    assert set(obj["stability"]) == {"kendall_w", "mean_spearman", "mean_kendall", "order_stability"}
    assert obj["interval"]["kind"] == ("pairwise" if over == "systems" else "percentile")
    assert obj["interval"]["level"] == 0.95 and obj["interval"]["description"]
    rows = obj["ranking"]
    for row in rows:
        assert ROW_KEYS <= set(row), row
        assert isinstance(row["system"], str) and isinstance(row["score"], float) and type(row["rank"]) is int
        assert type(row["tied_with_leader"]) is bool
        assert row["rank_low"] <= row["rank_high"]  # rank itself may fall outside: it is the full-data ranking

    # score and rank: exactly those of `votebench rank` with the same options, same order
    code, ranked, err = cli(capsys, "rank", path, *flags(opts), "--format", "json")
    assert code == 0
    assert [(r["system"], r["score"], r["rank"]) for r in rows] == [
        (r["system"], r["score"], r["rank"]) for r in json.loads(ranked)["ranking"]
    ]

    # intervals and stability from engine.bootstrap's replicate scores, recomputed with numpy / the metrics
    scores = engine.open_scores(path)
    ds = engine.bootstrap(scores, over=over, replicates=B, seed=seed, **opts)
    R = ds["replicate_score"].values
    ranks = bf_min_rank(R)
    systems = [str(s) for s in scores["system"].values]
    by_name = {r["system"]: r for r in rows}
    assert set(by_name) == {s for s, v in zip(systems, ds["score"].values) if not np.isnan(v)}
    point = ds["score"].values
    ranked = [j for j, v in enumerate(point) if not np.isnan(v)]
    def sure(a, b):  # a scores above b in at least 95% of the replicates holding both, by plain loops
        both = [row for row in R if not np.isnan(row[a]) and not np.isnan(row[b])]
        return bool(both) and sum(row[a] > row[b] for row in both) / len(both) >= 0.95

    for j, name in enumerate(systems):
        if name not in by_name:
            continue
        # Rank(UB), paired, on every bootstrap axis: 1 + the systems surely above
        assert by_name[name]["rank_ub"] == 1 + sum(sure(i, j) for i in ranked if i != j), name
        if over == "systems":  # a candidate bootstrap: the ranks its sure pairwise orders allow, by plain loops
            low = 1 + sum(sure(i, j) for i in ranked if i != j)
            high = len(ranked) - sum(sure(j, i) for i in ranked if i != j)
            assert (by_name[name]["rank_low"], by_name[name]["rank_high"]) == (low, high), name
            assert low <= by_name[name]["rank"] <= high  # unlike percentiles of the biased replicate ranks
            continue
        present = ranks[~np.isnan(ranks[:, j]), j]
        v = sorted(present)  # the replicate ranks at either side of the 2.5 / 97.5 percentile positions
        low, high = v[math.floor(0.025 * (len(v) - 1))], v[math.ceil(0.975 * (len(v) - 1))]
        assert by_name[name]["rank_low"] == low, name
        assert by_name[name]["rank_high"] == high, name
    kept = [P for P in [metrics.prob_above(R)]][0]
    pairs = [kept[a, b] for a in ranked for b in ranked if point[a] > point[b] and not np.isnan(kept[a, b])]
    assert obj["stability"]["order_stability"] == pytest.approx(sum(pairs) / len(pairs))
    stab = obj["stability"]
    assert as_float(stab["mean_spearman"]) == pytest.approx(float(metrics.concordance(R, method="spearman")), rel=0,
                                                            abs=0, nan_ok=True)
    assert as_float(stab["mean_kendall"]) == pytest.approx(float(metrics.concordance(R, method="kendall")), rel=0,
                                                           abs=0, nan_ok=True)
    everywhere = ~np.isnan(R).any(axis=0)
    w = float(metrics.kendall_w(R[:, everywhere])) if everywhere.sum() >= 2 else math.nan
    assert as_float(stab["kendall_w"]) == pytest.approx(w, rel=0, abs=0, nan_ok=True)
    tied = metrics.tied_with_leader(ds["score"].values, metrics.prob_above(R), level=0.95)
    assert {r["system"] for r in rows if r["tied_with_leader"]} == {s for s, t in zip(systems, tied) if t}
    if over == "systems":  # 20 replicates of 17+ drawn systems: no system is in every one, W is undefined -> null
        assert not everywhere.all()


def test_interval_level_and_output_file(capsys, tmp_path):
    out_file = tmp_path / "b.json"
    args = ["bootstrap", AUTOML, "--replicates", 15, "--seed", 2, "--interval", 0.5, "--format", "json"]
    code, out, err = cli(capsys, *args, "--output", out_file)
    assert code == 0 and out == "" and only_direction_notes(err)
    code, printed, _ = cli(capsys, *args)
    assert out_file.read_text(encoding="utf-8") == printed
    obj = json.loads(printed)
    ranks = bf_min_rank(engine.bootstrap(engine.open_scores(AUTOML), replicates=15, seed=2)["replicate_score"].values)
    systems = list(engine.open_scores(AUTOML)["system"].values)
    for row in obj["ranking"]:
        col = ranks[:, systems.index(row["system"])]
        v = sorted(col)
        assert [row["rank_low"], row["rank_high"]] == [v[math.floor(0.25 * (len(v) - 1))], v[math.ceil(0.75 * (len(v) - 1))]]


def test_same_seed_same_output(capsys):
    args = ["bootstrap", SUPERGLUE, "--missing", "listwise", "--replicates", 12, "--format", "json"]
    first = cli(capsys, *args, "--seed", 11)
    second = cli(capsys, *args, "--seed", 11)
    other = cli(capsys, *args, "--seed", 12)
    assert first[0] == second[0] == other[0] == 0
    assert first[1] == second[1]
    assert json.loads(first[1])["stability"] != json.loads(other[1])["stability"]


# ---------------------------------------------------------------------------------------------
# brute force on small random tables
# ---------------------------------------------------------------------------------------------
def bf_percentile(values, q):
    """A rank interval's bound: the sorted value at floor (q < 50) or ceil (q > 50) of q/100 (n - 1), not interpolated."""
    v = sorted(values)
    pos = q / 100 * (len(v) - 1)
    return v[math.floor(pos) if q < 50 else math.ceil(pos)]


def bf_spearman(x, y):
    rx, ry = bf_average_ranks(x), bf_average_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return math.nan if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def bf_stability(R, corr):
    vals = []
    for i in range(len(R)):
        for j in range(i + 1, len(R)):
            common = [s for s in range(len(R[i])) if not math.isnan(R[i][s]) and not math.isnan(R[j][s])]
            if len(common) < 2:
                continue
            c = corr([R[i][s] for s in common], [R[j][s] for s in common])
            if not math.isnan(c):
                vals.append(c)
    return sum(vals) / len(vals) if vals else math.nan


def bf_kendall_w_common(R):
    """Kendall's W over the systems present in every replicate (NaN with fewer than 2 systems or replicates)."""
    cols = [s for s in range(len(R[0])) if all(not math.isnan(row[s]) for row in R)]
    if len(cols) < 2 or len(R) < 2:
        return math.nan
    return bf_kendall_w([[row[s] for s in cols] for row in R])


def bf_replicates(X, over, B, seed):
    """(B, S) Borda replicate scores of a (T, S) matrix, by resampling with the engine's index streams."""
    T, S = X.shape
    out = []
    for b in range(B):
        if over == "tasks":
            idx = resample_indices(T, seed=seed, replicates=[b], stream="tasks")[0]
            out.append(list(bf_borda_across(X[idx])))
        else:
            idx = resample_indices(S, seed=seed, replicates=[b], stream="systems")[0]
            copies = bf_borda_across(X[:, idx])
            row = [math.nan] * S
            for k, s in enumerate(idx):
                row[s] = copies[k]
            out.append(row)
    return out


@given(
    data=st.data(),
    over=st.sampled_from(["tasks", "systems"]),
    seed=st.integers(0, 10_000),
)
@settings(max_examples=15, deadline=None)
def test_borda_bootstrap_against_plain_loops(data, over, seed):
    S = data.draw(st.integers(2, 5), label="systems")
    T = data.draw(st.integers(1, 4), label="tasks")
    X = np.array(data.draw(st.lists(st.sampled_from(TIE_VALUES), min_size=T * S, max_size=T * S))).reshape(T, S)
    names = ["s0", "s1", "s2", "s3", "s4"][:S]
    B = 6
    with tempfile.TemporaryDirectory() as d:
        table = Path(d) / "t.csv"
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["system", *[f"t{t}" for t in range(T)]])
        for s in range(S):
            w.writerow([names[s], *[repr(float(X[t, s])) for t in range(T)]])
        table.write_text(buf.getvalue(), encoding="utf-8")
        out = Path(d) / "out.json"
        assert main(["bootstrap", str(table), "--over", over, "--replicates", str(B), "--seed", str(seed),
                     "--format", "json", "--output", str(out)]) == 0
        obj = json.loads(out.read_text(encoding="utf-8"))
    point = bf_borda_across(X)
    rank = bf_min_rank(point)
    R = bf_replicates(X, over, B, seed)
    ranks = bf_min_rank(np.array(R))
    rows = {r["system"]: r for r in obj["ranking"]}
    assert sorted(rows) == names
    leaders = [s for s in range(S) if point[s] == max(point)]
    for s, name in enumerate(names):
        row = rows[name]
        assert (row["score"], row["rank"]) == (point[s], rank[s])
        col = [ranks[b][s] for b in range(B) if not math.isnan(ranks[b][s])]
        if over == "systems":  # 1 + systems surely above, S - systems surely below (sure: >= 95% of the replicates with both)
            def sure(a, b):
                both = [r for r in R if not math.isnan(r[a]) and not math.isnan(r[b])]
                return bool(both) and sum(r[a] > r[b] for r in both) / len(both) >= 0.95
            assert row["rank_low"] == 1 + sum(sure(o, s) for o in range(S) if o != s)
            assert row["rank_high"] == S - sum(sure(s, o) for o in range(S) if o != s)
        elif col:
            assert row["rank_low"] == pytest.approx(bf_percentile(col, 2.5), abs=1e-12)
            assert row["rank_high"] == pytest.approx(bf_percentile(col, 97.5), abs=1e-12)
        else:
            assert row["rank_low"] is None and row["rank_high"] is None
        tied = s in leaders
        for lead in leaders:
            both = [b for b in range(B) if not math.isnan(R[b][lead]) and not math.isnan(R[b][s])]
            p = sum(R[b][lead] > R[b][s] for b in both) / len(both) if both else math.nan
            tied = tied or not p >= 0.95
        assert row["tied_with_leader"] == tied, name
    stab = obj["stability"]
    for key, want in (("mean_spearman", bf_stability(R, bf_spearman)), ("mean_kendall", bf_stability(R, bf_tau_b)),
                      ("kendall_w", bf_kendall_w_common(R))):
        if math.isnan(want):
            assert stab[key] is None, key
        else:
            assert stab[key] == pytest.approx(want, abs=1e-12), key


# ---------------------------------------------------------------------------------------------
# --store
# ---------------------------------------------------------------------------------------------
def test_store_holds_the_replicates(capsys, tmp_path):
    store = tmp_path / "res" / "boot.zarr"
    args = ["bootstrap", AUTOML, "--replicates", 6, "--seed", 4, "--block", 4, "--format", "json"]
    code, stored_out, err = cli(capsys, *args, "--store", store)
    assert code == 0, err
    code, plain_out, _ = cli(capsys, *args)
    assert stored_out == plain_out  # the ranking read back from the store is the one computed in memory
    ds = open_results(store, "esann_automl/bootstrap-tasks").compute()
    assert list(ds["rule"].values) == ["borda"] and ds["done"].values.all()
    ref = engine.bootstrap(engine.open_scores(AUTOML), replicates=6, seed=4)
    np.testing.assert_array_equal(ds["replicate_score"].values[0], ref["replicate_score"].values)
    np.testing.assert_array_equal(ds["score"].values[0], ref["score"].values)
    assert ds.attrs["seed"] == 4 and ds.attrs["over"] == "tasks" and ds.attrs["block"] == 4
    # the same command again reads the complete store; other options on the same store are refused
    assert cli(capsys, *args, "--store", store)[1] == stored_out
    code, out, err = cli(capsys, *args[:-2], "--replicates", 8, "--format", "json", "--store", store)
    assert_one_line_error(code, out, err, "config differs", "--overwrite")


def test_store_keeps_the_two_step_rule_label(capsys, tmp_path):
    args = ["bootstrap", AUTOML, "--within", "borda", "--across", "mean", "--replicates", 4, "--format", "json"]
    code, plain, _ = cli(capsys, *args)
    assert code == 0 and json.loads(plain)["rule"] == "borda>mean"
    code, stored, err = cli(capsys, *args, "--store", tmp_path / "s.zarr")
    assert code == 0, err
    assert stored == plain


# ---------------------------------------------------------------------------------------------
# formats
# ---------------------------------------------------------------------------------------------
def test_table_and_csv_render_the_json(capsys):
    args = ["bootstrap", SUPERGLUE, "--missing", "listwise", "--replicates", 10, "--seed", 3]
    obj = json.loads(cli(capsys, *args, "--format", "json")[1])
    rows = obj["ranking"]
    code, table, _ = cli(capsys, *args, "--format", "table")
    assert code == 0
    lines = table.splitlines()
    assert lines[0] == "# rule borda, bootstrap over tasks: 10 replicates, seed 3"
    assert lines[1] == f"# interval = {obj['interval']['description']}"
    assert "not interpolated" in lines[1]  # the bounds are replicate ranks
    assert all(float(r[k]).is_integer() for r in rows for k in ("rank_low", "rank_high"))
    assert lines[2] == f"# rank UB = {obj['rank_ub_definition']}" and "at least 95% of the replicates" in lines[2]
    assert lines[3].startswith("# * = statistically tied with the leader") and "'=' marks a shared rank" in lines[3]
    assert lines[4].split() == ["rank", "system", "score", "interval", "rank", "UB"]
    assert set(lines[5]) <= {"-", " "}
    body = lines[6:-1]
    assert len(body) == len(rows)
    shared = {r["rank"] for r in rows if sum(o["rank"] == r["rank"] for o in rows) > 1}
    for line, row in zip(body, rows):  # the same '=' tie marks as `votebench rank`
        mark = "=" if row["rank"] in shared else " "
        assert line.lstrip().startswith(f"{row['rank']}{mark} {'*' if row['tied_with_leader'] else ' '}"), line
        iv = f"{row['rank_low']:g}" if row["rank_low"] == row["rank_high"] else f"{row['rank_low']:g}-{row['rank_high']:g}"
        assert row["system"] in line and line.endswith(f"{iv}  {row['rank_ub']:>7g}")
    s = obj["stability"]
    assert lines[-1] == (f"# stability: Kendall W {s['kendall_w']:.3f}, mean Spearman {s['mean_spearman']:.3f}, "
                         f"mean Kendall tau-b {s['mean_kendall']:.3f}, pair orders kept {100 * s['order_stability']:.1f}%")
    rank_lines = cli(capsys, "rank", SUPERGLUE, "--missing", "listwise")[1].splitlines()[3:]
    assert [ln.split()[0] for ln in rank_lines] == [ln.split()[0] for ln in body]  # "3=" in both

    code, text, _ = cli(capsys, *args, "--format", "csv")
    assert code == 0
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == ["rank", "system", "score", "rank_low", "rank_high", "tied_with_leader", "rank_ub"]
    assert [[int(r[0]), r[1], float(r[2]), float(r[3]), float(r[4]), r[5] == "True", float(r[6])] for r in parsed[1:]] == [
        [r["rank"], r["system"], r["score"], r["rank_low"], r["rank_high"], r["tied_with_leader"], r["rank_ub"]]
        for r in rows
    ]


# ---------------------------------------------------------------------------------------------
# bad input: exit 2, one line, nothing written
# ---------------------------------------------------------------------------------------------
BAD = [
    (AUTOML, ["--replicates", "1"], "--replicates must be at least 2"),
    (AUTOML, ["--replicates", "0"], "--replicates must be at least 2"),
    (AUTOML, ["--replicates", "many"], "invalid int value"),
    (AUTOML, ["--seed", "-1"], "--seed must be a non-negative integer"),
    (AUTOML, ["--rule", "nosuch"], "invalid choice: 'nosuch'"),
    (AUTOML, ["--over", "rows"], "invalid choice: 'rows'"),
    (AUTOML, ["--level", "three"], "invalid choice: 'three'"),
    (AUTOML, ["--missing", "ignore"], "invalid choice: 'ignore'"),
    (AUTOML, ["--block", "0"], "--block must be at least 1"),
    (AUTOML, ["--interval", "1"], "--interval must be in (0, 1), got 1.0"),
    (AUTOML, ["--interval", "0.5", "--over", "systems"], "--interval must be in (0.5, 1), got 0.5"),
    (AUTOML, ["--over", "instances"], "instance-level scores"),
    (SUPERGLUE, [], "missing"),  # missing scores with the default policy 'error'
    (DATA / "nosuch.csv", [], "nosuch.csv"),
]


@pytest.mark.parametrize("path,extra,fragment", BAD, ids=[f"{Path(b[0]).stem}{' '.join(b[1])}" for b in BAD])
def test_bad_input_exits_2_and_writes_nothing(capsys, tmp_path, path, extra, fragment):
    out_file = tmp_path / "out.json"
    code, out, err = cli(capsys, "bootstrap", path, *extra, "--format", "json", "--output", out_file)
    assert_one_line_error(code, out, err, fragment)
    assert os.listdir(tmp_path) == []  # neither the output nor a temporary file


def test_listwise_systems_bootstrap_with_a_complete_matrix_rule(capsys):
    code, out, err = cli(capsys, "bootstrap", SUPERGLUE, "--missing", "listwise", "--over", "systems", "--rule", "topsis",
                         "--replicates", 5, "--format", "json")
    assert code == 0, err


def _console_script():
    exe = shutil.which("votebench", path=os.path.dirname(sys.executable)) or shutil.which("votebench")
    if exe is None:
        pytest.skip("votebench console script not installed")
    return exe


def test_store_with_an_invalid_bootstrap_is_one_line_and_leaves_nothing(tmp_path):
    run = subprocess.run(
        [_console_script(), "bootstrap", str(AUTOML), "--over", "instances", "--replicates", "4",
         "--store", str(tmp_path / "s.zarr"), "--output", str(tmp_path / "out.json")],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 2 and run.stdout == "" and "instance-level scores" in run.stderr
    assert run.stderr.count("\n") == 1, run.stderr
    assert os.listdir(tmp_path) == []
