"""Battle files as an input kind (engine/io/readers/battles.py, engine/io/battles.py) and `votebench rank/bootstrap` on them.

References are independent of the engine: counts and Elo ratings from plain loops over csv/json records written
here, Bradley-Terry against the rule on the score tensor the shipped battles were derived from (the sidecar's
derivation) and against the logistic formula for P(i beats j), rank upper bounds recounted from the printed
intervals.
"""

from __future__ import annotations

import csv
import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import DATA, one_line_error, run_cli
from test_loaders import error_of

import engine
import engine.io.battles
from engine.io.readers import READERS, guess_reader, open_battles

SHIPPED = DATA / "battles_tac08.csv.gz"


def _records(n=400, S=6, seed=0):
    """Random battle records (model names, winner labels) with some ties, in a fixed order."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(S)
    rows = []
    for _ in range(n):
        a, b = rng.choice(S, 2, replace=False)
        u = rng.random()
        if u < 0.2:
            w = "tie"
        else:
            w = "model_a" if rng.random() < 1 / (1 + math.exp(theta[b] - theta[a])) else "model_b"
        rows.append({"model_a": f"m{a}", "model_b": f"m{b}", "winner": w, "judge": f"j{rng.integers(3)}"})
    return rows


def _write_csv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _loop_counts(rows):
    """wins[(i, j)] and ties[{i, j}] counted record by record."""
    wins, ties = {}, {}
    for r in rows:
        a, b = r["model_a"], r["model_b"]
        if r["winner"] == "model_a":
            wins[a, b] = wins.get((a, b), 0) + 1
        elif r["winner"] == "model_b":
            wins[b, a] = wins.get((b, a), 0) + 1
        else:
            key = frozenset((a, b))
            ties[key] = ties.get(key, 0) + 1
    return wins, ties


def _loop_elo(rows, k=4.0):
    R = {}
    for r in rows:
        a, b = r["model_a"], r["model_b"]
        ra, rb = R.setdefault(a, 1000.0), R.setdefault(b, 1000.0)
        ea = 1 / (1 + 10 ** ((rb - ra) / 400))
        sa = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[r["winner"]]
        R[a], R[b] = ra + k * (sa - ea), rb - k * (sa - ea)
    return R


@pytest.mark.parametrize("fmt", ["csv", "csv.gz", "jsonl", "parquet"])
def test_each_format_is_recognised_and_counted_like_a_loop(tmp_path, fmt):
    rows = _records()
    path = tmp_path / f"b.{fmt}"
    if fmt.startswith("csv"):
        text = pd.DataFrame(rows).to_csv(index=False)
        if fmt.endswith("gz"):
            with gzip.open(path, "wt") as fh:
                fh.write(text)
        else:
            path.write_text(text)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pd.DataFrame(rows).to_parquet(path)
    assert guess_reader(path).name == "battles" and READERS["battles"].kind == "battles"
    for chunk in (7, 1 << 20):  # chunks of a few records give the same counts
        b = open_battles(path, chunk_rows=chunk)
        wins, ties = _loop_counts(rows)
        names = list(b.models)
        assert b.n_records == len(rows) and names == sorted(names, key=lambda s: int(s[1:]))
        for i, x in enumerate(names):
            for j, y in enumerate(names):
                assert b.counts.wins[i, j] == wins.get((x, y), 0)
                if i != j:
                    assert b.counts.ties[i, j] == ties.get(frozenset((x, y)), 0)


def test_a_score_table_is_not_taken_for_battles(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("system,model_a,t2\na,1,2\nb,2,1\n")
    assert guess_reader(path).name == "csv"
    assert engine.io.battles.input_kind(path) == "scores"
    assert engine.io.battles.input_kind(SHIPPED) == "battles"


def test_open_scores_refuses_battles_naming_the_rules():
    msg = error_of(engine.open_scores, SHIPPED)
    assert "not a score table" in msg and "bradley_terry, elo, win_rate" in msg


@pytest.mark.parametrize("bad, fragments", [
    ("model_a,model_b,winner\nx,y,model_a\nx,y,both\n", ["record 2", "unknown winner 'both'"]),
    ("model_a,model_b,winner\nx,y,model_a\nx,x,tie\n", ["record 2", "'x' against itself"]),
    ("model_a,model_b,winner\nx,,tie\n", ["record 1", "empty model_b"]),
    ("model_a,model_b,winner\n", ["no battle records"]),
    ("model_a,model_b,winner\nx,y,tie\n\"x,y\n", ["not a readable csv battles file"]),
])
def test_bad_records_are_one_line_errors(tmp_path, capsys, bad, fragments):
    path = tmp_path / "bad.csv"
    path.write_text(bad)
    one_line_error(*run_cli(capsys, "rank", path, "--rule", "bradley_terry"), str(path), *fragments)


def test_a_rule_needing_scores_or_a_score_option_is_refused(capsys):
    one_line_error(*run_cli(capsys, "rank", SHIPPED, "--rule", "borda"), "rule 'borda' needs a score tensor",
                   "rules on battles: bradley_terry, elo, win_rate")
    one_line_error(*run_cli(capsys, "rank", SHIPPED, "--rule", "bradley_terry", "--level", "one"),
                   "level apply to score tensors, not to battles")
    one_line_error(*run_cli(capsys, "rank", SHIPPED, "--rule", "elo", "--param", "tie_model=half"),
                   "rule 'elo' on battles takes k, not 'tie_model'")
    one_line_error(*run_cli(capsys, "rank", SHIPPED, "--rule", "bradley_terry", "--param", "scale=arena"),
                   "scale must be 'logit' or 'elo'")


def _ranking(out):
    return {d["system"]: d["score"] for d in json.loads(out)["ranking"]}


def test_rank_bradley_terry_equals_the_rule_on_the_scores_it_was_derived_from(capsys):
    code, out, _ = run_cli(capsys, "rank", SHIPPED, "--rule", "bradley_terry", "--format", "json")
    assert code == 0
    obj = json.loads(out)
    assert obj["rule"] == "bradley_terry" and obj["level"] == "battles" and obj["tie_model"] == "half"
    assert obj["scale"] == "logit" and obj["n_systems"] == 62
    got = _ranking(out)
    scores = engine.open_scores(DATA / "colombo_tac08.csv.gz")
    ref = engine.rank(scores.sel(task=["H:pyr", "H:resp"]), rule="bradley_terry", level="one")
    for s, v in zip(ref["system"].values, ref["score"].values):
        assert got[str(s)] == pytest.approx(float(v), abs=1e-8)
    assert abs(sum(got.values())) < 1e-8  # centred log-odds
    code, out, _ = run_cli(capsys, "rank", SHIPPED, "--rule", "bradley_terry", "--param", "scale=elo", "--format", "json")
    elo_scale = _ranking(out)
    for s, v in got.items():  # 1000 + 400 log10(odds)
        assert elo_scale[s] == pytest.approx(1000 + 400 * v / math.log(10), abs=1e-6)


def test_rank_davidson_reports_its_tie_parameter(capsys):
    code, out, _ = run_cli(capsys, "rank", SHIPPED, "--rule", "bradley_terry", "--param", "tie_model=davidson",
                           "--format", "json")
    obj = json.loads(out)
    assert code == 0 and obj["tie_model"] == "davidson" and obj["tie_param"] > 0


def test_rank_elo_and_win_rate_equal_loops_and_say_elo_is_order_dependent(tmp_path, capsys):
    rows = _records(n=300, S=5, seed=3)
    path = _write_csv(tmp_path / "b.csv", rows)
    code, out, _ = run_cli(capsys, "rank", path, "--rule", "elo", "--param", "k=16", "--format", "json")
    assert code == 0
    obj = json.loads(out)
    assert obj["k"] == 16 and "order" in obj["order"] and "file order" in obj["order"]
    ref = _loop_elo(rows, k=16)
    assert _ranking(out) == pytest.approx(ref, abs=1e-9)
    models, streamed = engine.io.battles.battle_elo(path, k=16, chunk_rows=11)  # chunks carry the ratings over
    assert dict(zip(models, streamed)) == pytest.approx(ref, abs=1e-9)
    code, out, _ = run_cli(capsys, "rank", path, "--rule", "elo", "--format", "table")
    assert "order online, in file order" in out.splitlines()[0]
    code, out, _ = run_cli(capsys, "rank", path, "--rule", "win_rate", "--format", "json")
    wins, ties = _loop_counts(rows)
    for m, v in _ranking(out).items():
        won = sum(c for (a, _), c in wins.items() if a == m) + 0.5 * sum(c for k, c in ties.items() if m in k)
        n = sum(c for k, c in wins.items() if m in k) + sum(c for k, c in ties.items() if m in k)
        assert v == pytest.approx(won / n, abs=1e-12)


def test_an_unbeaten_model_gets_a_ridge_and_a_note(tmp_path, capsys):
    rows = [{"model_a": "a", "model_b": "b", "winner": "model_a"},
            {"model_a": "b", "model_b": "c", "winner": "model_a"},
            {"model_a": "c", "model_b": "b", "winner": "model_a"},
            {"model_a": "c", "model_b": "a", "winner": "model_b"}]  # "a" never lost
    path = _write_csv(tmp_path / "b.csv", rows)
    code, out, err = run_cli(capsys, "rank", path, "--rule", "bradley_terry")
    assert code == 0 and "maximum-likelihood fit does not exist" in err and "ridge" in err


def test_bootstrap_over_battles_prints_rank_ub_and_p_beats(capsys):
    code, out, err = run_cli(capsys, "bootstrap", SHIPPED, "--rule", "bradley_terry", "--over", "battles",
                             "--replicates", "30", "--format", "json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["over"] == "battles" and obj["replicates"] == 30 and obj["n_battles"] == 181536
    assert obj["options"] == {"tie_model": "half", "scale": "logit"} and "at least 95% of the replicates" in obj["rank_ub_definition"]
    rows = obj["ranking"]
    assert len(rows) == 62
    for r in rows:  # never below Arena's marginal bound, recounted from the printed score intervals
        above = sum(1 for o in rows if o["score_low"] > r["score_high"])
        assert r["rank_ub"] >= 1 + above
        assert r["score_low"] <= r["score"] <= r["score_high"] or r["score_low"] == pytest.approx(r["score"])
        assert r["rank_low"] <= r["rank"] + 1e-9 or r["rank_low"] <= r["rank_high"]
    score = {r["system"]: r["score"] for r in rows}
    P = obj["p_beats"]
    for a, b in [("M60", "M58"), ("M0", "M44"), ("M12", "M50")]:  # ties as half wins: the logistic of the difference
        assert P[a][b] == pytest.approx(1 / (1 + math.exp(score[b] - score[a])), abs=1e-9)
        assert P[a][b] + P[b][a] == pytest.approx(1.0)


def test_bootstrap_table_shows_the_rank_upper_bound(capsys):
    code, out, _ = run_cli(capsys, "bootstrap", SHIPPED, "--rule", "win_rate", "--over", "battles", "--replicates", "20")
    assert code == 0 and "# rank UB = 1 + the number of systems that score above this one in at least 95%" in out
    header = next(ln for ln in out.splitlines() if ln.lstrip().startswith("rank "))
    assert header.rstrip().endswith("rank UB")


def test_bootstrap_replicate_depends_only_on_seed_and_index(tmp_path):
    rows = _records(n=500, S=6, seed=5)
    path = _write_csv(tmp_path / "b.csv", rows)
    few = engine.bootstrap_battles(path, replicates=3, seed=7)
    more = engine.bootstrap_battles(path, replicates=9, seed=7)
    assert np.array_equal(few["replicate_score"].values, more["replicate_score"].values[:3])
    other = engine.bootstrap_battles(path, replicates=3, seed=8)
    assert not np.array_equal(few["replicate_score"].values, other["replicate_score"].values)
    # a replicate is a resample of the battles: its comparisons per pair add up to the number of records
    win_rate = engine.bootstrap_battles(path, rule="win_rate", replicates=4, seed=7)
    assert np.all((win_rate["replicate_score"].values >= 0) & (win_rate["replicate_score"].values <= 1))


def test_bootstrap_axes_and_kinds_must_match(capsys):
    one_line_error(*run_cli(capsys, "bootstrap", SHIPPED, "--rule", "bradley_terry", "--replicates", "5"),
                   "a battles file is resampled only --over battles")
    one_line_error(*run_cli(capsys, "bootstrap", DATA / "vnr_value.csv", "--rule", "bradley_terry", "--over", "battles",
                            "--replicates", "5"), "--over battles resamples the records of a battles file")
    one_line_error(*run_cli(capsys, "bootstrap", SHIPPED, "--rule", "elo", "--over", "battles", "--replicates", "5"),
                   "rule 'elo' has no bootstrap over battles")
