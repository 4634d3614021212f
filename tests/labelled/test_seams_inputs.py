"""Classes of bad input that ended in a traceback or a silent wrong answer (issue #23), one regression test each.

Each case either computes the right answer (checked against a plain reference: brute-force Borda, the ranking of
the equivalent small numbers) or is refused with exit code 2 and one line naming the problem.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import bf_borda_across, one_line_error, run_cli

BIG = int("9" * 400)  # a JSON integer far beyond float64 (about 1e400)

#: four systems, three tasks, no ties on any task
WIDE = "system,t1,t2,t3\na,1,2,3\nb,2,1,3.5\nc,3,3,1\nd,0.5,4,2\n"
X = np.array([[1, 2, 3], [2, 1, 3.5], [3, 3, 1], [0.5, 4, 2]], dtype=float)  # (system, task)


def ranking(out: str) -> dict[str, tuple[int, float]]:
    """``votebench rank --format json`` output as {system: (rank, score)}."""
    return {d["system"]: (d["rank"], d["score"]) for d in json.loads(out)["ranking"]}


def ranks_of(scores: dict[str, float]) -> dict[str, int]:
    """1 + number of strictly higher scores (the project's tie rule), by brute force."""
    return {s: 1 + sum(v > x for v in scores.values()) for s, x in scores.items()}


@pytest.fixture
def wide(tmp_path) -> Path:
    p = tmp_path / "w.csv"
    p.write_text(WIDE, encoding="utf-8")
    return p


# ------------------------------------------------------------------------------------ 1. numbers beyond float64
def test_equal_weights_of_1e308_are_equal_weights(capsys, wide, tmp_path):
    ref = ranks_of(dict(zip("abcd", bf_borda_across(X.T))))  # equal weights: plain Borda
    for rule in ("borda", "copeland", "mean", "kemeny", "average_rank"):
        for value in (1e308, 1.7e308, 2**1000, BIG):
            w = tmp_path / "w.json"
            v = json.dumps(value)
            w.write_text(f'{{"t1": {v}, "t2": {v}, "t3": {v}}}', encoding="utf-8")
            code, out, err = run_cli(capsys, "rank", wide, "--rule", rule, "--weights", w, "--format", "json")
            assert code == 0, (rule, value, err)
            code1, out1, _ = run_cli(capsys, "rank", wide, "--rule", rule, "--format", "json")
            got, ref1 = ranking(out), ranking(out1)
            assert {s: r for s, (r, _) in got.items()} == {s: r for s, (r, _) in ref1.items()}, (rule, value)
            if rule == "mean":  # a weighted mean: the same numbers (to the rounding of a weighted sum)
                assert [got[s][1] for s in "abcd"] == pytest.approx([ref1[s][1] for s in "abcd"], rel=4e-16)
            elif rule == "borda" and value > 2**53:  # a weighted sum: in the units the note names
                k = int(err.split("units of 2**")[1].split()[0].rstrip(";,"))
                unit = float(Fraction(value) / 2**k)  # one weight, in the units of the note
                assert [got[s][1] for s in "abcd"] == pytest.approx([ref1[s][1] * unit for s in "abcd"], rel=1e-12), rule
            if rule == "borda":
                assert {s: r for s, (r, _) in ranking(out).items()} == ref


def test_huge_unequal_weights_rank_as_their_ratios(capsys, wide, tmp_path):
    # (2, 1, 1) x 10**400 ranks as (2, 1, 1): Borda points weighted by hand
    w = tmp_path / "w.json"
    w.write_text(f'{{"t1": {2 * BIG}, "t2": {BIG}, "t3": {BIG}}}', encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", wide, "--weights", w, "--format", "json")
    assert code == 0, err
    ref = ranks_of(dict(zip("abcd", bf_borda_across(X.T, weights=np.array([2.0, 1.0, 1.0])))))
    assert {s: r for s, (r, _) in ranking(out).items()} == ref


def test_weights_whose_ratio_is_beyond_float64_are_refused(capsys, wide, tmp_path):
    w = tmp_path / "w.json"
    w.write_text(f'{{"t1": {BIG}, "t2": 1, "t3": 1}}', encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", wide, "--weights", w)
    one_line_error(code, out, err, "2**1074")


@pytest.mark.parametrize("where", ["csv", "toml", "sweep"])
def test_a_400_digit_weight_in_a_weights_file_or_config_is_no_traceback(capsys, wide, tmp_path, where):
    if where == "csv":
        w = tmp_path / "w.csv"
        w.write_text(f"task,weight\nt1,{BIG}\nt2,{BIG}\nt3,{BIG}\n", encoding="utf-8")
        code, out, err = run_cli(capsys, "rank", wide, "--weights", w, "--format", "json")
    elif where == "toml":
        cfg = tmp_path / "c.toml"
        cfg.write_text(f"[weights]\nt1 = {BIG}\nt2 = {BIG}\nt3 = {BIG}\n", encoding="utf-8")
        code, out, err = run_cli(capsys, "rank", wide, "--config", cfg, "--format", "json")
    else:
        from engine.sweep.config import load_config

        cfg = tmp_path / "s.yaml"
        cfg.write_text(f"store: s.zarr\ninput: {{path: {wide}, weights: {{t1: {BIG}, t2: 1}}}}\n"
                       "perturbations: [{kind: bootstrap}]\n", encoding="utf-8")
        with pytest.raises(ValueError, match="2..1074"):
            load_config(cfg)
        return
    if where == "csv":  # a CSV weight is text: float('9' * 400) is inf, refused as not finite
        one_line_error(code, out, err, "finite")
    else:
        assert code == 0, err
        assert "weighted sums are in units of 2**" in err
        _, ref, _ = run_cli(capsys, "rank", wide, "--format", "json")
        assert {s: r for s, (r, _) in ranking(out).items()} == {s: r for s, (r, _) in ranking(ref).items()}


def test_json_scores_beyond_float64_are_refused_in_one_line(capsys, tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(f'{{"system": "a", "task": "t", "score": 1}}\n{{"system": "b", "task": "t", "score": {BIG}}}\n',
                 encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", p)
    one_line_error(code, out, err, "line 2", "beyond the range of a 64-bit float", "400 digits")
    p.write_text('{"system": "a", "task": "t", "score": 1}\n{"system": "b", "task": "t", "score": %s}\n' % ("9" * 5000),
                 encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", p)
    one_line_error(code, out, err, "line 2", "not valid JSON")


def _lm_eval(root: Path, value: str, *, directions=(True, True)) -> Path:
    for i, (model, hib) in enumerate(zip(("m1", "m2"), directions)):
        d = root / model
        d.mkdir(parents=True)
        acc = value if i == 1 else "1"
        lines = [f'{{"doc_id": {k}, "filter": "none", "metrics": ["acc"], "acc": {acc if k == 0 else 0}}}' for k in range(2)]
        (d / "samples_arc_2024-05-01T10-00-00.000.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (d / "results_2024-05-01T10-00-00.000.json").write_text(json.dumps(
            {"model_name": model, "results": {"arc": {}}, "higher_is_better": {"arc": {"acc": hib}}}), encoding="utf-8")
    return root


def test_lm_eval_score_beyond_float64_is_refused(capsys, tmp_path):
    root = _lm_eval(tmp_path / "out", str(BIG))
    code, out, err = run_cli(capsys, "rank", root)
    one_line_error(code, out, err, "line 1", "'acc'", "beyond the range of a 64-bit float")


def test_lm_eval_results_that_disagree_on_a_direction_are_refused_naming_both(capsys, tmp_path):
    root = _lm_eval(tmp_path / "out", "0.5", directions=(True, False))
    code, out, err = run_cli(capsys, "rank", root)
    one_line_error(code, out, err, "'arc'", "'acc'", str(root / "m1"), str(root / "m2"), "disagree")
    agree = _lm_eval(tmp_path / "ok", "0.5", directions=(False, False))
    code, out, err = run_cli(capsys, "rank", agree, "--format", "json")
    assert code == 0, err  # lower is better: m2 (0.5 on doc 0) beats m1 (1.0)
    assert {s: r for s, (r, _) in ranking(out).items()} == {"m2": 1, "m1": 2}


def test_helm_stat_beyond_float64_is_refused(capsys, tmp_path):
    suite = tmp_path / "benchmark_output" / "runs" / "v1"
    for model, mean in (("a_m1", "1"), ("a_m2", str(BIG))):
        d = suite / f"boolq:model={model}"
        d.mkdir(parents=True)
        stats = [{"instance_id": "id1", "stats": [{"name": {"name": "exact_match", "split": "test"}, "count": 1, "sum": 1,
                                                   "mean": 0}]},
                 {"instance_id": "id2", "stats": [{"name": {"name": "exact_match", "split": "test"}, "count": 1,
                                                   "sum": 1, "mean": "MEAN"}]}]
        (d / "per_instance_stats.json").write_text(json.dumps(stats).replace('"MEAN"', mean), encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", tmp_path / "benchmark_output")
    one_line_error(code, out, err, "entry 1", "beyond the range of a 64-bit float")


def test_scoring_vector_is_scale_free(capsys, wide):
    code, small, _ = run_cli(capsys, "rank", wide, "--rule", "scoring", "--param", "vector=[1,1,0,0]", "--format", "json")
    assert code == 0
    for vec in ("[1e308,1e308,0,0]", "[1.7976931348623157e308,1.7976931348623157e308,0,0]", f"[{2**1000},{2**1000},0,0]"):
        code, out, err = run_cli(capsys, "rank", wide, "--rule", "scoring", "--param", f"vector={vec}", "--format", "json")
        assert code == 0, err
        got, ref = ranking(out), ranking(small)
        assert {s: r for s, (r, _) in got.items()} == {s: r for s, (r, _) in ref.items()}
        assert all(np.isfinite(v) for _, v in got.values())
    # the top-2 count by hand: a system scores one point per task where it is among the two best
    top2 = {s: int(sum(sorted(X[:, t])[-2] <= X[i, t] for t in range(3))) for i, s in enumerate("abcd")}
    assert {s: v for s, (_, v) in ranking(small).items()} == top2


@pytest.mark.parametrize("param", ["vector=[1,NaN,0,0]", "vector=[Infinity,1,0,0]", f"vector=[{BIG},1,0,0]",
                                   "gamma=NaN", "vector=[1,\"x\",0,0]"])
def test_non_finite_or_huge_option_values_are_refused(capsys, wide, param):
    rule = "optimality_gap" if param.startswith("gamma") else "scoring"
    code, out, err = run_cli(capsys, "rank", wide, "--rule", rule, "--param", param)
    one_line_error(code, out, err, param.partition("=")[0])


# ------------------------------------------------------------------------------------ 2. sweep files
SWEEP = "store: {store}\ninput: {path}\nperturbations: [{{kind: bootstrap, replicates: 4}}]\n"


@pytest.mark.parametrize("change, fragment", [
    ({"rules": "[null]"}, "rule 1 must be a name or a table"),
    ({"perturbations": "[bootstrap]"}, "perturbation 1 must be a table"),
    ({"input": "null"}, "input 1 must be a path or a table"),
    ({"rules": "[{name: borda, options: [1, 2]}]"}, "options must be a table"),
    ({"input": "{path: 3}"}, "path must be a non-empty string"),
    ({"input": "5"}, "input 1 must be a path or a table"),
    ({"rules": "borda"}, "rules must be a list"),
    ({"store": "5"}, "store must be a path"),
    ({"perturbations": "[{kind: bootstrap, name: ../x}]"}, "name '../x' must be a plain name"),
    ({"perturbations": "[{kind: bootstrap, name: a/b}]"}, "name 'a/b' must be a plain name"),
    ({"input": "{path: PATH, name: ..}"}, "name '..' must be a plain name"),
    ({"perturbations": "[{kind: grid, rule: 5, params: {a: [1]}}]"}, "rule must be a rule name"),
])
def test_sweep_file_type_errors_are_one_line(capsys, tmp_path, wide, change, fragment):
    fields = {"store": str(tmp_path / "s.zarr"), "input": str(wide), "perturbations": "[{kind: bootstrap, replicates: 4}]"}
    fields.update({k: v.replace("PATH", str(wide)) for k, v in change.items()})
    cfg = tmp_path / "s.yaml"
    cfg.write_text("".join(f"{k}: {v}\n" for k, v in fields.items()), encoding="utf-8")
    code, out, err = run_cli(capsys, "sweep", cfg)
    one_line_error(code, out, err, fragment, str(cfg))
    assert not (tmp_path / "s.zarr").exists()  # nothing half-written


@pytest.mark.parametrize("text, fragment", [
    ("seed: 1\nseed: 2\n", "line 5: key 'seed' is given twice"),
    ("rules:\n  - {name: borda, name: copeland}\n", "key 'name' is given twice"),
    ("1: x\n", "key 1 is not a string"),
])
def test_yaml_keys_given_twice_or_not_strings_are_refused(capsys, tmp_path, wide, text, fragment):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(SWEEP.format(store=tmp_path / "s.zarr", path=wide) + text, encoding="utf-8")
    code, out, err = run_cli(capsys, "sweep", cfg)
    one_line_error(code, out, err, fragment)


def test_toml_key_given_twice_is_refused_too(capsys, tmp_path, wide):
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'seed = 1\nseed = 2\nstore = "{tmp_path / "s.zarr"}"\n[input]\npath = "{wide}"\n', encoding="utf-8")
    code, out, err = run_cli(capsys, "sweep", cfg)
    one_line_error(code, out, err, "malformed TOML")


def test_an_input_name_from_a_file_name_is_made_plain(tmp_path):
    from engine.sweep.config import parse_config

    cfg = parse_config({"store": "s.zarr", "input": "data/my scores (v2).csv", "perturbations": [{"kind": "bootstrap"}]})
    assert cfg.inputs[0]["name"] == "my_scores__v2_"


# ------------------------------------------------------------------------------------ 3. sizes
@pytest.mark.parametrize("pert, fragment", [
    ({"kind": "grid", "rule": "promethee2", "params": {"q": list(range(1000)), "p": list(range(1000))}},
     "number of grid points"),
    ({"kind": "bootstrap", "block": 10**9}, "block 1000000000"),
    ({"kind": "bootstrap", "replicates": 10**12}, "replicates 1000000000000"),
    ({"kind": "bootstrap", "replicates": 10**7, "block": 1}, "the number of blocks"),
    ({"kind": "subsets", "repeats": 10**9}, "repeats 1000000000"),
    ({"kind": "manipulation", "n_instances": 10**9}, "n_instances 1000000000"),
    ({"kind": "manipulation", "n_instances": 10**7, "n_systems": 1000, "block": 10}, "n_systems x n_tasks x n_instances"),
])
def test_every_size_of_a_sweep_passes_one_up_front_check(pert, fragment):
    from engine.errors import VotebenchError
    from engine.sweep.config import parse_config

    with pytest.raises(VotebenchError, match="perturbation 1") as info:
        parse_config({"store": "s.zarr", "input": "w.csv", "perturbations": [pert]})
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_a_block_larger_than_the_replicates_is_one_block(capsys, tmp_path, wide):
    from engine.sweep.config import parse_config

    cfg = parse_config({"store": "s.zarr", "input": "w.csv", "perturbations": [{"kind": "bootstrap", "replicates": 8,
                                                                                "block": 10**6}]})
    assert cfg.perturbations[0]["block"] == 8
    code, out, err = run_cli(capsys, "bootstrap", wide, "--block", 10**9, "--replicates", 20)
    one_line_error(code, out, err, "--block 1000000000")


def test_check_size_is_the_one_size_check():
    from engine.errors import VotebenchError
    from engine.limits import MOST, available_memory, check_size

    assert check_size("n", 5, nbytes=1e3) == 5
    for bad, text in ((0, "at least 1"), (2.0, "must be an integer"), (True, "must be an integer"), (MOST + 1, "more than")):
        with pytest.raises(VotebenchError, match=text):
            check_size("n", bad)
    with pytest.raises(VotebenchError, match="more than the .* available"):
        check_size("n", 10, nbytes=2.0 * available_memory())


# ------------------------------------------------------------------------------------ 4. battle winners
@pytest.mark.parametrize("winner", ["a", "b", "B", "tie?", "tiebreak", "Model_A", "draw!"])
def test_undocumented_winner_spellings_are_refused_naming_value_and_row(capsys, tmp_path, winner):
    p = tmp_path / "b.csv"
    p.write_text(f"model_a,model_b,winner\nx,y,model_a\ny,x,{winner}\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", p, "--rule", "win_rate")
    one_line_error(code, out, err, "record 2", repr(winner))


def test_documented_winner_spellings_count_as_documented(capsys, tmp_path):
    p = tmp_path / "b.csv"
    rows = ["x,y,model_a", "x,y,model_b", "y,x,model_a", "x,y,tie", "x,y,tie (bothbad)", "y,x,draw"]
    p.write_text("model_a,model_b,winner\n" + "\n".join(rows) + "\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", p, "--rule", "win_rate", "--format", "json")
    assert code == 0, err
    # x wins row 1 and loses rows 2, 3; rows 4-6 are ties (half a win each): x (1 + 1.5) / 6, y (2 + 1.5) / 6
    got = {s: v for s, (_, v) in ranking(out).items()}
    assert got == pytest.approx({"x": 2.5 / 6, "y": 3.5 / 6})
