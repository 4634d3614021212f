"""Readers of real evaluation outputs (engine/io/readers/, engine.open_scores): lm-evaluation-harness
per-sample files, HELM per_instance_stats.json and a generic JSONL.

The fixtures are written by the tests, shaped like the files the two harnesses write
(lm-eval ``--log_samples``: ``<output>/<model_name_sanitized>/samples_<task>_<date>.jsonl``
and ``results_<date>.json``; HELM: ``runs/<suite>/<run name>/per_instance_stats.json`` and
``run_spec.json``).  Expected tensors are written out by hand from the fixture values.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import bf_aggregate, one_line_error, run_cli

import engine
from engine.io.readers import parse_task_option
from engine.io.readers.helm import read_helm
from engine.io.readers.jsonl import read_jsonl
from engine.io.readers.lm_eval import read_lm_eval

NAN = math.nan


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def as_dict(da) -> dict[tuple[str, str, str], float]:
    """Every non-NaN score as {(system, task, str(instance)): value}."""
    out = {}
    for s in da["system"].values:
        for t in da["task"].values:
            for i in da["instance"].values:
                v = float(da.sel(system=s, task=t, instance=i))
                if not math.isnan(v):
                    out[(str(s), str(t), str(i))] = v
    return out


def error_of(fn, *args, **kwargs) -> str:
    with pytest.raises(engine.VotebenchError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


def write_jsonl(path: Path, objs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# lm-evaluation-harness fixtures
# ---------------------------------------------------------------------------------------------
DATE = "2024-05-01T10-21-33.417391"
OLD = "2024-04-02T08-00-00.000001"


def mc_sample(doc_id: int, acc: float, acc_norm: float) -> dict:
    """An arc_easy (multiple choice, loglikelihood) sample line as lm-eval writes it."""
    lls = [["-9.25", "False"], ["-7.5", "False"], ["-8.0", "False"], ["-11.0", "False"]]
    return {
        "doc_id": doc_id,
        "doc": {"id": f"Mercury_{7000 + doc_id}", "question": f"Which of these is a mineral? ({doc_id})",
                "choices": {"text": ["ice", "wood", "milk", "glass"], "label": ["A", "B", "C", "D"]}, "answerKey": "A"},
        "target": 0,
        "arguments": {f"gen_args_{j}": {"arg_0": f"Question: q{doc_id}\nAnswer:", "arg_1": f" {c}"}
                      for j, c in enumerate(["ice", "wood", "milk", "glass"])},
        "resps": [[x] for x in lls],
        "filtered_resps": lls,
        "filter": "none",
        "metrics": ["acc", "acc_norm"],
        "doc_hash": "a" * 64,
        "prompt_hash": "b" * 64,
        "target_hash": "c" * 64,
        "acc": acc,
        "acc_norm": acc_norm,
    }


def gen_sample(doc_id: int, flt: str, em: float) -> dict:
    """A gsm8k (generate_until) sample line; one line per (doc, filter)."""
    return {
        "doc_id": doc_id,
        "doc": {"question": f"Janet has {doc_id} ducks ...", "answer": f"... #### {doc_id * 2}"},
        "target": f"... #### {doc_id * 2}",
        "arguments": {"gen_args_0": {"arg_0": "Question: ...\nAnswer:", "arg_1": {"until": ["Question:"], "do_sample": False}}},
        "resps": [[f"She has #### {doc_id * 2}"]],
        "filtered_resps": [str(doc_id * 2)],
        "filter": flt,
        "metrics": ["exact_match"],
        "doc_hash": "d" * 64,
        "prompt_hash": "e" * 64,
        "target_hash": "f" * 64,
        "exact_match": em,
    }


def ppl_sample(doc_id: int, ll: float, words: int, n_bytes: int) -> dict:
    """A wikitext (loglikelihood_rolling) sample line: perplexity metrics are (ll, weight) pairs."""
    return {
        "doc_id": doc_id, "doc": {"page": "..."}, "target": "", "arguments": {"gen_args_0": {"arg_0": "..."}},
        "resps": [[ll]], "filtered_resps": [ll], "filter": "none",
        "metrics": ["word_perplexity", "byte_perplexity", "bits_per_byte"],
        "word_perplexity": [ll, words], "byte_perplexity": [ll, n_bytes], "bits_per_byte": [ll, n_bytes],
    }


#: folder -> (model_name in results json or None, arc_easy (acc, acc_norm) per doc, gsm8k {filter: em per doc})
LM_MODELS = {
    "EleutherAI__pythia-160m": ("EleutherAI/pythia-160m", [(1, 1), (0, 1), (0, 0), (1, 1)],
                                {"strict-match": [0, 0, 1], "flexible-extract": [1, 0, 1]}),
    "EleutherAI__pythia-410m": ("EleutherAI/pythia-410m", [(1, 1), (1, 1), (0, 1), (1, 1)],
                                {"strict-match": [1, 0, 1], "flexible-extract": [1, 1, 1]}),
    "gpt2-local": (None, [(0, 0), (0, 1), (1, 1), (1, 1)],
                   {"strict-match": [0, 0, 0], "flexible-extract": [0, 1, 0]}),
}
LM_SYSTEMS = ["EleutherAI/pythia-160m", "EleutherAI/pythia-410m", "gpt2-local"]


def results_json(model_name: str | None, tasks=("arc_easy", "gsm8k"), **extra) -> dict:
    out = {
        "results": {t: {"alias": t} for t in tasks},
        "group_subtasks": {t: [] for t in tasks},
        "configs": {t: {"task": t} for t in tasks},
        "higher_is_better": {"arc_easy": {"acc": True, "acc_norm": True}, "gsm8k": {"exact_match": True}},
        "config": {"model": "hf", "model_args": f"pretrained={model_name},dtype=float32" if model_name else "", "batch_size": 1},
        "date": 1714558893.0,
    }
    if model_name:
        out.update(model_name=model_name, model_name_sanitized=model_name.replace("/", "__"))
    out.update(extra)
    return out


def write_lm_eval(root: Path, models=LM_MODELS, *, with_old: bool = True) -> Path:
    for folder, (name, arc, gsm) in models.items():
        d = root / folder
        write_jsonl(d / f"samples_arc_easy_{DATE}.jsonl", [mc_sample(i, a, n) for i, (a, n) in enumerate(arc)])
        lines = [gen_sample(i, flt, em) for flt, ems in gsm.items() for i, em in enumerate(ems)]
        write_jsonl(d / f"samples_gsm8k_{DATE}.jsonl", lines)
        if name is not None:
            (d / f"results_{DATE}.json").write_text(json.dumps(results_json(name)), encoding="utf-8")
        if with_old:  # an older run of the same task: ignored
            write_jsonl(d / f"samples_arc_easy_{OLD}.jsonl", [mc_sample(i, 0.0, 0.0) for i in range(6)])
    return root


def expected_lm(metric="acc", flt="strict-match") -> np.ndarray:
    X = np.full((3, 2, 4), NAN)
    for s, (_, arc, gsm) in enumerate(LM_MODELS.values()):
        X[s, 0, :] = [a if metric == "acc" else n for a, n in arc]
        X[s, 1, :3] = gsm[flt]
    return X


# ---------------------------------------------------------------------------------------------
# lm-evaluation-harness
# ---------------------------------------------------------------------------------------------
def test_lm_eval_folder_exact_values(tmp_path):
    root = write_lm_eval(tmp_path / "out")
    s = engine.open_scores(root)
    assert s.dims == ("system", "task", "instance")
    assert list(s["system"].values) == LM_SYSTEMS  # model_name from results json; folder name without one
    assert list(s["task"].values) == ["arc_easy", "gsm8k"]
    assert list(s["instance"].values) == [0, 1, 2, 3]
    # defaults: first listed metric (acc); gsm8k has no "none" filter -> its first filter (strict-match)
    np.testing.assert_array_equal(s.values, expected_lm())
    assert json.loads(s.attrs["metric"]) == {"arc_easy": "acc", "gsm8k": "exact_match"}
    assert json.loads(s.attrs["filter"]) == {"arc_easy": "none", "gsm8k": "strict-match"}
    assert s["higher_is_better"].values.tolist() == [True, True]
    assert s["n_instances"].values.tolist() == [4, 3]
    assert s.attrs["format"] == "lm-eval" and s.attrs["name"] == "out"
    # read_lm_eval directly gives the same tensor
    np.testing.assert_array_equal(read_lm_eval(root).values, s.values)


def test_lm_eval_metric_and_filter_options(tmp_path):
    root = write_lm_eval(tmp_path / "out")
    s = engine.open_scores(root, metric={"arc_easy": "acc_norm"}, filter={"gsm8k": "flexible-extract"})
    np.testing.assert_array_equal(s.values, expected_lm("acc_norm", "flexible-extract"))
    assert json.loads(s.attrs["filter"])["gsm8k"] == "flexible-extract"
    s = read_lm_eval(root, filter={"gsm8k": "flexible-extract"})
    np.testing.assert_array_equal(s.values, expected_lm("acc", "flexible-extract"))
    # a plain string metric applies to every task: gsm8k has no acc_norm
    msg = error_of(engine.open_scores, root, metric="acc_norm")
    assert "gsm8k" in msg and "no metric 'acc_norm'" in msg and "exact_match" in msg


def test_lm_eval_newest_file_wins(tmp_path):
    root = write_lm_eval(tmp_path / "out")
    # a newer arc_easy run for one model replaces the DATE one
    newer = "2024-06-01T00-00-00.000000"
    write_jsonl(root / "gpt2-local" / f"samples_arc_easy_{newer}.jsonl", [mc_sample(i, 1.0, 1.0) for i in range(4)])
    s = engine.open_scores(root)
    X = expected_lm()
    X[2, 0, :] = 1.0
    np.testing.assert_array_equal(s.values, X)


def test_lm_eval_ranking_matches_reference(tmp_path):
    root = write_lm_eval(tmp_path / "out")
    s = engine.open_scores(root)
    X = expected_lm()
    for rule, level in [("borda", "task"), ("mean", "task"), ("borda", "two"), ("mean", "one")]:
        got = engine.aggregate(s, rule=rule, level=level).values
        ref = bf_aggregate(X, [True, True], rule=rule, level=level)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12, err_msg=f"{rule}/{level}")
    # the same data as a hand-written long CSV gives the same tensor
    rows = [(sys, t, i, X[si, ti, i]) for si, sys in enumerate(LM_SYSTEMS) for ti, t in enumerate(["arc_easy", "gsm8k"])
            for i in range(4) if not math.isnan(X[si, ti, i])]
    csv_path = tmp_path / "same.csv"
    pd.DataFrame(rows, columns=["system", "task", "instance", "score"]).to_csv(csv_path, index=False)
    np.testing.assert_array_equal(engine.open_scores(csv_path).values, s.values)


@pytest.mark.parametrize("seed", range(4))
def test_lm_eval_random_round_trip(tmp_path, seed):
    """Random per-sample values (null = missing, some model x task files absent) come back exactly."""
    rng = np.random.default_rng(seed)
    S, T = int(rng.integers(2, 5)), int(rng.integers(1, 4))
    n_docs = rng.integers(1, 6, size=T)
    K = int(n_docs.max())
    X = np.full((S, T, K), NAN)
    present = rng.random((S, T)) < 0.8
    present[:, 0] = True  # every task keeps at least one model: task 0 for all, others for model 0
    present[0, :] = True
    for s in range(S):
        d = tmp_path / "out" / f"org__model-{s}"
        for t in range(T):
            if not present[s, t]:
                continue
            lines = []
            for k in rng.permutation(int(n_docs[t])):  # any line order
                v = float(rng.choice([0.0, 0.25, 1.0])) if rng.random() > 0.15 else None
                X[s, t, k] = NAN if v is None else v
                lines.append(mc_sample(int(k), v, 0.0))
            write_jsonl(d / f"samples_task{t}_{DATE}.jsonl", lines)
    for t in range(T):  # a task whose every value came out null would (rightly) be refused
        if np.isnan(X[:, t]).all():
            X[0, t, 0] = 1.0
            p = tmp_path / "out" / "org__model-0" / f"samples_task{t}_{DATE}.jsonl"
            lines = [json.loads(x) for x in p.read_text().splitlines()]
            for line in lines:
                if line["doc_id"] == 0:
                    line["acc"] = 1.0
            write_jsonl(p, lines)
    s = engine.open_scores(tmp_path / "out")
    assert list(s["system"].values) == [f"org__model-{i}" for i in range(S)]
    assert list(s["task"].values) == [f"task{t}" for t in range(T)]
    assert list(s["instance"].values) == list(range(K))
    np.testing.assert_array_equal(s.values, X)


def test_lm_eval_missing_task_and_colliding_names(tmp_path):
    models = dict(LM_MODELS)
    root = tmp_path / "runs"
    write_lm_eval(root / "fewshot0", {k: models[k] for k in list(models)[:2]}, with_old=False)
    # the same model evaluated again in another output folder: a different system, labelled by its path
    write_lm_eval(root / "fewshot5", {"EleutherAI__pythia-410m": models["EleutherAI__pythia-410m"]}, with_old=False)
    # a third model with only arc_easy: gsm8k is missing (NaN), not an error
    d = root / "fewshot0" / "other"
    write_jsonl(d / f"samples_arc_easy_{DATE}.jsonl", [mc_sample(i, 1.0, 1.0) for i in range(4)])
    other = {"config": {"model": "hf", "model_args": "pretrained=org/other,trust_remote_code=True"}}
    (d / f"results_{DATE}.json").write_text(json.dumps(other))
    s = engine.open_scores(root)
    assert list(s["system"].values) == [
        "EleutherAI/pythia-160m", "fewshot0/EleutherAI__pythia-410m", "org/other", "fewshot5/EleutherAI__pythia-410m",
    ]
    assert np.isnan(s.sel(system="org/other", task="gsm8k").values).all()
    assert s.sel(system="org/other", task="arc_easy").values.tolist() == [1.0] * 4
    np.testing.assert_array_equal(s.sel(system="fewshot5/EleutherAI__pythia-410m").values,
                                  s.sel(system="fewshot0/EleutherAI__pythia-410m").values)


def test_lm_eval_groups_directions_and_perplexity(tmp_path):
    root = tmp_path / "out"
    subjects = ["mmlu_anatomy", "mmlu_astronomy"]
    lls = {"m1": [(-100.0, 50, 200), (-30.0, 10, 40)], "m2": [(-80.0, 50, 200), (-40.0, 10, 40)]}
    for m, acc in (("m1", [1, 0]), ("m2", [0, 0])):
        d = root / m
        for subj in subjects:
            write_jsonl(d / f"samples_{subj}_{DATE}.jsonl", [mc_sample(i, a, a) for i, a in enumerate(acc)])
        write_jsonl(d / f"samples_wikitext_{DATE}.jsonl", [ppl_sample(i, *v) for i, v in enumerate(lls[m])])
        res = results_json(f"org/{m}", tasks=[*subjects, "wikitext"],
                           group_subtasks={"mmlu": ["mmlu_stem"], "mmlu_stem": subjects, "wikitext": []})
        (d / f"results_{DATE}.json").write_text(json.dumps(res))
    s = engine.open_scores(root)
    assert list(s["task"].values) == [*subjects, "wikitext"]
    assert list(s["group"].values) == ["mmlu", "mmlu", "wikitext"]  # outermost group
    assert s["higher_is_better"].values.tolist() == [True, True, False]  # word_perplexity: lower is better
    # word perplexity of a document = exp(-ll / words)
    np.testing.assert_allclose(s.sel(task="wikitext").values[:, :2],
                               [[math.exp(100 / 50), math.exp(30 / 10)], [math.exp(80 / 50), math.exp(40 / 10)]], rtol=1e-12)
    bpb = engine.open_scores(root, metric={"wikitext": "bits_per_byte"})
    np.testing.assert_allclose(bpb.sel(task="wikitext", system="org/m1").values[:2],
                               [100 / (200 * math.log(2)), 30 / (40 * math.log(2))], rtol=1e-12)
    assert bpb["higher_is_better"].values.tolist()[-1] is False
    # the results file's own higher_is_better wins over the built-in table
    for m in ("m1", "m2"):
        p = root / m / f"results_{DATE}.json"
        res = json.loads(p.read_text())
        res["higher_is_better"]["wikitext"] = {"word_perplexity": True}
        p.write_text(json.dumps(res))
    assert engine.open_scores(root)["higher_is_better"].values.tolist() == [True, True, True]


def test_lm_eval_sidecar_keeps_loader_directions(tmp_path):
    root = tmp_path / "out"
    for m, ll in (("m1", -10.0), ("m2", -20.0)):
        write_jsonl(root / m / f"samples_wikitext_{DATE}.jsonl", [ppl_sample(0, ll, 5, 20)])
        write_jsonl(root / m / f"samples_arc_easy_{DATE}.jsonl", [mc_sample(0, 1.0, 1.0)])
    sidecar = {"higher_is_better": {"arc_easy": False}, "task_groups": {"g": {"G": ["arc_easy"]}}}
    (tmp_path / "out.meta.json").write_text(json.dumps(sidecar))
    s = engine.open_scores(root)
    assert s["higher_is_better"].values.tolist() == [False, False]  # arc_easy from the sidecar, wikitext from the loader
    assert list(s["group"].values) == ["G", "wikitext"]
    plain = engine.open_scores(root, meta=False)
    assert plain["higher_is_better"].values.tolist() == [True, False]


def test_lm_eval_old_format_and_bools(tmp_path):
    """Older harness versions: no 'filter' / 'metrics' keys; some tasks log true/false."""
    root = tmp_path / "out"
    for m, vals in (("a", [True, False]), ("b", [True, True])):
        lines = [{"doc_id": i, "doc": {}, "target": "x", "arguments": [], "resps": [], "filtered_resps": [],
                  "exact_match": v, "acc": 0.5} for i, v in enumerate(vals)]
        write_jsonl(root / m / "samples_mytask_2023-11-01T00-00-00.000000.jsonl.gz", lines)
    s = engine.open_scores(root)
    np.testing.assert_array_equal(s.values[:, 0, :], [[0.5, 0.5], [0.5, 0.5]])  # 'acc' preferred without a list
    s = engine.open_scores(root, metric="exact_match")
    np.testing.assert_array_equal(s.values[:, 0, :], [[1.0, 0.0], [1.0, 1.0]])


def test_lm_eval_cli_rank(tmp_path, capsys):
    """`votebench rank <folder>` reads lm-eval outputs (default: Borda, level two for instance-level input)."""
    root = write_lm_eval(tmp_path / "out")
    code, out, err = run_cli(capsys, "rank", root, "--format", "csv")
    assert code == 0, err
    got = {row["system"]: float(row["score"]) for row in pd.read_csv(io.StringIO(out)).to_dict("records")}
    ref = bf_aggregate(expected_lm(), [True, True], rule="borda", level="two")
    assert got == dict(zip(LM_SYSTEMS, ref.tolist()))


def test_lm_eval_cli_metric_filter_and_format_options(tmp_path, capsys):
    """--metric / --filter per task and --input-format reach the loader (rank and bootstrap)."""
    root = write_lm_eval(tmp_path / "out")
    opts = ["--metric", "arc_easy=acc_norm", "--filter", "gsm8k=flexible-extract", "--input-format", "lm-eval"]
    code, out, err = run_cli(capsys, "rank", root, *opts, "--format", "csv")
    assert code == 0, err
    got = {row["system"]: float(row["score"]) for row in pd.read_csv(io.StringIO(out)).to_dict("records")}
    ref = bf_aggregate(expected_lm("acc_norm", "flexible-extract"), [True, True], rule="borda", level="two")
    assert got == dict(zip(LM_SYSTEMS, ref.tolist()))
    code, out, err = run_cli(capsys, "bootstrap", root, *opts, "--over", "instances", "--replicates", "4", "--format", "json")
    assert code == 0, err
    assert {r["system"]: r["score"] for r in json.loads(out)["ranking"]} == got
    one_line_error(*run_cli(capsys, "rank", root, "--input-format", "helm"), "per_instance_stats")


def test_sweep_input_takes_loader_options(tmp_path):
    """A sweep input's metric/filter/format go to the workers' loader (the Source), not through the client."""
    from engine.distributed import make_source, open_source

    root = write_lm_eval(tmp_path / "out")
    src = make_source(root, loader={"metric": {"arc_easy": "acc_norm"}, "filter": {"gsm8k": "flexible-extract"},
                                    "format": "lm-eval"})
    hash(src)  # the per-worker cache keys on it
    np.testing.assert_array_equal(open_source(src).values, expected_lm("acc_norm", "flexible-extract"))
    with pytest.raises(engine.VotebenchError, match="unknown loader option"):
        make_source(root, loader={"metrik": "acc"})


# ---------------------------------------------------------------------------------------------
# lm-eval errors
# ---------------------------------------------------------------------------------------------
def test_lm_eval_errors(tmp_path):
    root = write_lm_eval(tmp_path / "out", with_old=False)
    sample_file = root / "gpt2-local" / f"samples_gsm8k_{DATE}.jsonl"
    # a metric that is absent
    msg = error_of(engine.open_scores, root, metric={"gsm8k": "f1"})
    assert "samples_gsm8k_" in msg and "line 1: no metric 'f1'" in msg and "per-sample metrics: exact_match" in msg
    # a filter that is absent lists the filters
    msg = error_of(engine.open_scores, root, filter={"gsm8k": "none"})
    assert "filter 'none'" in msg and "strict-match, flexible-extract" in msg
    # mapping naming an unknown task
    assert "unknown task(s): nope" in error_of(engine.open_scores, root, metric={"nope": "acc"})
    # options that do not apply
    assert "option 'split' applies to helm input only, not to lm-eval input (lm-eval takes metric, filter)" in error_of(
        engine.open_scores, root, split="test")
    # one sample file alone: one model
    msg = error_of(engine.open_scores, sample_file)
    assert "one model's results" in msg
    assert "only 1 system" in error_of(engine.open_scores, sample_file, format="lm-eval")
    assert "only 1 system" in error_of(engine.open_scores, root / "gpt2-local")


@pytest.mark.parametrize(
    "line,pattern",
    [
        ("{not json", r"line 3: not valid JSON"),
        ("[1, 2]", r"line 3: expected a JSON object, got list"),
        (json.dumps({"filter": "none", "acc": 1.0}), r"line 3: missing key 'doc_id'"),
        (json.dumps({**mc_sample(0, 1.0, 1.0)}), r"line 3: duplicate doc_id 0 for filter 'none' \(first on line 1\)"),
        (json.dumps({**mc_sample(2, 1.0, 1.0), "acc": "yes"}), r"line 3: a metric that is not a per-sample number.*'acc'"),
        (json.dumps({**mc_sample(2, 1.0, 1.0), "acc": ["ref", "pred"]}), r"line 3: a metric that is not a per-sample number"),
    ],
)
def test_lm_eval_bad_lines(tmp_path, line, pattern):
    root = write_lm_eval(tmp_path / "out", with_old=False)
    path = root / "gpt2-local" / f"samples_arc_easy_{DATE}.jsonl"
    lines = path.read_text().splitlines()
    write_jsonl(path, [*lines[:2], line, *lines[3:]])
    msg = error_of(engine.open_scores, root)
    assert str(path) in msg and re.search(pattern, msg), msg


def test_lm_eval_corpus_metric_refused(tmp_path):
    root = tmp_path / "out"
    for m in ("a", "b"):
        line = {"doc_id": 0, "filter": "none", "metrics": ["bleu", "chrf"], "bleu": [["ref"], "pred"], "chrf": [["ref"], "pred"]}
        write_jsonl(root / m / f"samples_wmt16_{DATE}.jsonl", [line])
    msg = error_of(engine.open_scores, root)
    assert "no per-sample numeric metric" in msg and "bleu, chrf" in msg


# ---------------------------------------------------------------------------------------------
# HELM fixtures
# ---------------------------------------------------------------------------------------------
TYPOS = {"name": "typos", "robustness": True, "fairness": False, "computed_on": "perturbed", "prob": 0.1}


def stat(name: str, value: float, split: str = "test", perturbation: dict | None = None, count: int = 1) -> dict:
    n = {"name": name, "split": split}
    if perturbation:
        n["perturbation"] = perturbation
    if count == 0:
        return {"name": n, "count": 0, "sum": 0, "sum_squared": 0}
    return {"name": n, "count": count, "sum": value * count, "sum_squared": value * value * count, "min": value, "max": value,
            "mean": value, "variance": 0.0, "stddev": 0.0}


def instance(iid: str, em: float, *, qem: float | None = None, runtime: float = 0.5, split: str = "test", trial: int = 0,
             perturbation: dict | None = None) -> dict:
    stats = [
        stat("num_references", 1.0, split, perturbation),
        stat("exact_match", em, split, perturbation),
        stat("quasi_exact_match", em if qem is None else qem, split, perturbation),
        stat("inference_runtime", runtime, split, perturbation),
    ]
    out = {"instance_id": iid, "train_trial_index": trial, "stats": stats}
    if perturbation:
        out["perturbation"] = perturbation
    return out


def run_spec(name: str, model: str, groups: list[str]) -> dict:
    scenario = name.split(":")[0]
    return {
        "name": name,
        "scenario_spec": {"class_name": f"helm.benchmark.scenarios.{scenario}_scenario.Scenario", "args": {}},
        "adapter_spec": {"method": "multiple_choice_joint", "model_deployment": model, "model": model, "max_tokens": 1,
                         "num_train_trials": 1},
        "metric_specs": [{"class_name": "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric",
                          "args": {"names": ["exact_match"]}}],
        "groups": groups,
    }


def write_run(suite: Path, name: str, model: str | None, entries: list, groups=("mmlu",)) -> Path:
    d = suite / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "per_instance_stats.json").write_text(json.dumps(entries, indent=2))
    if model is not None:
        (d / "run_spec.json").write_text(json.dumps(run_spec(name, model, list(groups)), indent=2))
    return d


MMLU = "mmlu:subject=anatomy,method=multiple_choice_joint"


def write_helm(root: Path) -> Path:
    suite = root / "benchmark_output" / "runs" / "v1"
    # gpt2: mmlu with unperturbed + typos entries and a valid-split instance; boolq
    write_run(suite, f"{MMLU},model=openai_gpt2", "openai/gpt2", [
        instance("id10", 1.0, qem=1.0, runtime=0.2),
        instance("id3", 0.0, qem=1.0, runtime=0.4),
        instance("id7", 1.0, runtime=0.3),
        instance("id10", 0.0, perturbation=TYPOS),
        instance("id3", 0.0, perturbation=TYPOS),
        instance("id7", 0.0, perturbation=TYPOS),
        instance("id0", 1.0, split="valid"),
    ])
    # llama: two train trials, averaged; id7's exact_match has count 0 in trial 1 (missing there, so trial 0's 1.0 stands)
    llama = [instance("id10", 1.0, runtime=1.0), instance("id3", 1.0, runtime=1.5), instance("id7", 1.0, runtime=2.0),
             instance("id10", 0.0, trial=1, runtime=3.0), instance("id3", 1.0, trial=1, runtime=2.5),
             instance("id7", 0.0, trial=1, runtime=2.0), instance("id0", 0.0, split="valid"),
             *(instance(i, 1.0, perturbation=TYPOS) for i in ("id10", "id3", "id7"))]
    llama[5]["stats"][1] = stat("exact_match", 0.0, count=0)
    write_run(suite, f"{MMLU},model=meta_llama-7b", "meta/llama-7b", llama)
    # bloom: no run_spec.json (model from the folder name), mmlu only
    write_run(suite, f"{MMLU},model=together_bloom", None, [
        instance("id10", 0.0), instance("id3", 0.0), instance("id7", 1.0), instance("id0", 1.0, split="valid")])
    # boolq for two models
    write_run(suite, "boolq:model=openai_gpt2", "openai/gpt2", [instance("id1", 1.0), instance("id2", 0.0)], groups=["boolq"])
    write_run(suite, "boolq:model=meta_llama-7b", "meta/llama-7b", [instance("id1", 1.0), instance("id2", 1.0)], groups=["boolq"])
    return root / "benchmark_output"


HELM_EXPECTED = {
    ("meta/llama-7b", "boolq", "id1"): 1.0, ("meta/llama-7b", "boolq", "id2"): 1.0,
    ("meta/llama-7b", MMLU, "id3"): 1.0, ("meta/llama-7b", MMLU, "id7"): 1.0, ("meta/llama-7b", MMLU, "id10"): 0.5,
    ("openai/gpt2", "boolq", "id1"): 1.0, ("openai/gpt2", "boolq", "id2"): 0.0,
    ("openai/gpt2", MMLU, "id3"): 0.0, ("openai/gpt2", MMLU, "id7"): 1.0, ("openai/gpt2", MMLU, "id10"): 1.0,
    ("together_bloom", MMLU, "id3"): 0.0, ("together_bloom", MMLU, "id7"): 1.0, ("together_bloom", MMLU, "id10"): 0.0,
}


# ---------------------------------------------------------------------------------------------
# HELM
# ---------------------------------------------------------------------------------------------
def test_helm_exact_values(tmp_path):
    root = write_helm(tmp_path)
    s = engine.open_scores(root)
    assert list(s["system"].values) == ["meta/llama-7b", "openai/gpt2", "together_bloom"]
    assert list(s["task"].values) == ["boolq", MMLU]
    assert list(s["instance"].values) == ["id1", "id2", "id3", "id7", "id10"]  # natural order
    assert as_dict(s) == HELM_EXPECTED  # unperturbed, split test, trials averaged, bloom's boolq missing
    assert s.shape == (3, 2, 5) and int(np.isnan(s.values).sum()) == 30 - len(HELM_EXPECTED)
    assert list(s["group"].values) == ["boolq", "mmlu"]
    assert s["higher_is_better"].values.tolist() == [True, True]
    assert json.loads(s.attrs["metric"]) == {"boolq": "exact_match", MMLU: "exact_match"}
    assert json.loads(s.attrs["split"]) == {"boolq": "test", MMLU: "test"}
    # the suite folder and read_helm give the same
    assert as_dict(read_helm(root / "runs" / "v1")) == HELM_EXPECTED


def test_helm_options(tmp_path):
    root = write_helm(tmp_path)
    q = engine.open_scores(root, metric={MMLU: "quasi_exact_match"})
    assert q.sel(system="openai/gpt2", task=MMLU, instance="id3").item() == 1.0
    rt = engine.open_scores(root, metric="inference_runtime")
    assert rt["higher_is_better"].values.tolist() == [False, False]
    assert rt.sel(system="meta/llama-7b", task=MMLU).values.tolist()[2:] == [2.0, 2.0, 2.0]  # (1.5+2.5)/2, (2+2)/2, (1+3)/2
    valid = engine.open_scores(root, split={MMLU: "valid"}, metric={MMLU: "exact_match"}, format="helm")
    assert as_dict(valid.sel(task=[MMLU])) == {("meta/llama-7b", MMLU, "id0"): 0.0, ("openai/gpt2", MMLU, "id0"): 1.0,
                                              ("together_bloom", MMLU, "id0"): 1.0}
    typo = engine.open_scores(root / "runs" / "v1", perturbation="typos")  # the boolq runs have no typos: left out
    assert as_dict(typo) == {("meta/llama-7b", MMLU, f"id{i}"): 1.0 for i in (3, 7, 10)} | {
        ("openai/gpt2", MMLU, f"id{i}"): 0.0 for i in (3, 7, 10)}
    assert typo.attrs["perturbation"] == "typos" and list(typo["task"].values) == [MMLU]
    assert "no run has instances with perturbation 'dialect'" in error_of(engine.open_scores, root, perturbation="dialect")


def test_helm_valid_fallback_and_ranking(tmp_path):
    suite = tmp_path / "runs" / "s"
    vals = {"a/x": [1, 0, 1, 1], "b/y": [0, 0, 1, 0], "c/z": [1, 1, 1, 0]}
    for m, v in vals.items():
        write_run(suite, f"quac:model={m.replace('/', '_')}", m, [instance(f"id{i}", x, split="valid") for i, x in enumerate(v)],
                  groups=["quac"])
        write_run(suite, f"imdb:model={m.replace('/', '_')}", m, [instance(f"id{i}", 1 - x) for i, x in enumerate(v[:3])],
                  groups=["imdb"])
    s = engine.open_scores(suite)
    assert json.loads(s.attrs["split"]) == {"imdb": "test", "quac": "valid"}
    X = np.full((3, 2, 4), NAN)
    for si, v in enumerate(vals.values()):
        X[si, 0, :3] = [1 - x for x in v[:3]]
        X[si, 1, :] = v
    np.testing.assert_array_equal(s.values, X)
    for rule, level in [("borda", "task"), ("borda", "one"), ("mean", "two")]:
        np.testing.assert_allclose(engine.aggregate(s, rule=rule, level=level).values,
                                   bf_aggregate(X, [True, True], rule=rule, level=level), atol=1e-12)


def test_helm_errors(tmp_path):
    root = write_helm(tmp_path)
    suite = root / "runs" / "v1"
    msg = error_of(engine.open_scores, root, metric="f1_score")
    assert "no stat 'f1_score'" in msg and "exact_match" in msg and "quasi_exact_match" in msg
    msg = error_of(engine.open_scores, root, split="train")
    assert "boolq:model=" in msg and "stat 'exact_match' has no split 'train' (splits: test)" in msg
    msg = error_of(engine.open_scores, root, split={MMLU: "train"})
    assert "stat 'exact_match' has no split 'train' (splits: test, valid)" in msg
    assert "split names unknown task(s): nope" in error_of(engine.open_scores, root, split={"nope": "test"})
    assert "option 'filter' applies to lm-eval input only, not to helm input (helm takes metric, split, perturbation)" in (
        error_of(engine.open_scores, root, filter="none"))
    # the same model and task twice (two suites)
    write_run(root / "runs" / "v2", "boolq:model=openai_gpt2", "openai/gpt2", [instance("id1", 1.0)])
    msg = error_of(engine.open_scores, root)
    assert "both hold model 'openai/gpt2' on task 'boolq'" in msg
    # one run only
    assert "only 1 system" in error_of(engine.open_scores, suite / "boolq:model=openai_gpt2", format="helm")


@pytest.mark.parametrize(
    "content,pattern",
    [
        ({"stats": []}, r"not a HELM per-instance stats list \(top level is a dict\)"),
        ("[{\"instance_id\": \"id1\"", r"not a valid HELM per_instance_stats JSON file"),
        ([{"instance_id": "id1"}], r"entry 0 is not a HELM per-instance stats object"),
        ([{"instance_id": "id1", "stats": [{"count": 1, "mean": 1.0}]}], r"entry 0: a stat without a"),
        ([instance("id1", 1.0), instance("id1", 0.0)], r"entry 1: duplicate instance_id 'id1' for train trial 0"),
    ],
)
def test_helm_bad_files(tmp_path, content, pattern):
    suite = tmp_path / "runs" / "s"
    write_run(suite, "boolq:model=a_b", "a/b", [instance("id1", 1.0)])
    d = write_run(suite, "boolq:model=c_d", "c/d", [])
    (d / "per_instance_stats.json").write_text(content if isinstance(content, str) else json.dumps(content))
    msg = error_of(engine.open_scores, suite)
    assert str(d / "per_instance_stats.json") in msg and re.search(pattern, msg), msg


def test_helm_model_unknown(tmp_path):
    suite = tmp_path / "runs" / "s"
    write_run(suite, "boolq:model=a_b", "a/b", [instance("id1", 1.0)])
    write_run(suite, "boolq_run2", None, [instance("id1", 1.0)])
    assert "cannot tell the model" in error_of(engine.open_scores, suite)


# ---------------------------------------------------------------------------------------------
# generic JSONL
# ---------------------------------------------------------------------------------------------
GENERIC = [
    {"system": "a", "task": "t1", "instance": 0, "score": 0.5},
    {"system": "b", "task": "t1", "instance": 0, "score": 1},
    {"system": "a", "task": "t1", "instance": 1, "score": None},
    {"system": "b", "task": "t1", "instance": 1, "score": 2.5, "note": "ignored"},
    {"system": "a", "task": "t2", "instance": "0", "score": True},
    {"system": "b", "task": "t2", "instance": 0, "score": False},
]


@pytest.mark.parametrize("name", ["g.jsonl", "g.jsonl.gz"])
def test_generic_jsonl(tmp_path, name):
    path = write_jsonl(tmp_path / name, GENERIC)
    s = engine.open_scores(path)
    assert list(s["system"].values) == ["a", "b"] and list(s["task"].values) == ["t1", "t2"]
    assert list(s["instance"].values) == [0, 1]
    np.testing.assert_array_equal(s.values, [[[0.5, NAN], [1.0, NAN]], [[1.0, 2.5], [0.0, NAN]]])
    assert s.attrs["name"] == "g" and s.attrs["format"] == "jsonl"
    # the sidecar beside it is read (also for .jsonl.gz)
    (tmp_path / "g.meta.json").write_text(json.dumps({"higher_is_better": {"t2": False}}))
    assert engine.open_scores(path)["higher_is_better"].values.tolist() == [True, False]
    np.testing.assert_array_equal(read_jsonl(path).values, s.values)


def test_generic_jsonl_task_level_matches_csv(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 5, size=(4, 3)).astype(float)
    objs = [{"system": f"s{i}", "task": f"t{j}", "score": X[i, j]} for i in range(4) for j in range(3)]
    s = engine.open_scores(write_jsonl(tmp_path / "x.jsonl", objs))
    assert s.sizes == {"system": 4, "task": 3, "instance": 1}
    np.testing.assert_array_equal(s.values[:, :, 0], X)
    np.testing.assert_allclose(engine.aggregate(s, rule="borda").values,
                               bf_aggregate(X[:, :, None], [True] * 3, rule="borda", level="task"), atol=1e-12)


@pytest.mark.parametrize(
    "lines,pattern",
    [
        ([GENERIC[0], "{oops"], r"line 2: not valid JSON"),
        ([GENERIC[0], "", "3"], r"line 3: expected a JSON object, got int"),
        ([GENERIC[0], {"system": "b", "task": "t1", "instance": 0}], r"line 2: missing key 'score'"),
        ([GENERIC[0], {"system": "b", "task": "t1", "score": 1}], r"line 2: missing key 'instance' \(earlier lines have it\)"),
        ([{"system": "b", "task": "t1", "score": 1}, GENERIC[0]], r"line 2: key 'instance' appears"),
        ([GENERIC[0], {**GENERIC[1], "score": "high"}], r"line 2: score 'high' is not a number"),
        ([GENERIC[0], {**GENERIC[1], "score": [1]}], r"line 2: score \[1\] is not a number"),
        ([GENERIC[0], {**GENERIC[1], "system": ""}], r"line 2: system must be a non-empty string or integer"),
        ([GENERIC[0], {**GENERIC[1], "task": None}], r"line 2: task must be"),
        ([GENERIC[0], GENERIC[1], {**GENERIC[0], "score": 3}],
         r"line 3: duplicate entry for system 'a', task 't1', instance '0' \(first on line 1\)"),
        ([GENERIC[0], {**GENERIC[1], "instance": "0", "system": " a "}], r"line 2: duplicate entry"),
        ([GENERIC[0], GENERIC[2]], r"at least two systems"),
        ([], r"no score rows"),
        ([GENERIC[0], GENERIC[1], {**GENERIC[0], "task": "t9", "score": None}], r"task 't9' has no scores"),
        ([GENERIC[0], {**GENERIC[1], "score": 1e400}], r"line 2: score inf is not a finite number"),
        ([GENERIC[0], '{"system": "b", "task": "t1", "instance": 0, "score": -Infinity}'], r"line 2: score -inf is not a finite"),
    ],
)
def test_generic_jsonl_errors(tmp_path, lines, pattern):
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    msg = error_of(engine.open_scores, path)
    assert re.search(pattern, msg), msg
    assert str(path) in msg or "two systems" in msg


# ---------------------------------------------------------------------------------------------
# open_scores dispatch
# ---------------------------------------------------------------------------------------------
def test_open_scores_dispatch_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    msg = error_of(engine.open_scores, tmp_path / "empty")
    assert "unknown kind of directory" in msg and "zarr store" in msg and "samples_*.jsonl" in msg
    assert "per_instance_stats.json" in msg
    both = tmp_path / "both"
    write_lm_eval(both / "lm", with_old=False)
    write_helm(both / "helm")
    assert "choose with format=" in error_of(engine.open_scores, both)
    assert engine.open_scores(both, format="helm").attrs["format"] == "helm"
    assert engine.open_scores(both, format="lm-eval").attrs["format"] == "lm-eval"
    assert "unknown format 'xlsx'" in error_of(engine.open_scores, both, format="xlsx")
    assert "needs a file" in error_of(engine.open_scores, both, format="jsonl")
    csv = tmp_path / "w.csv"
    csv.write_text("system,t1\na,1\nb,2\n")
    msg = error_of(engine.open_scores, csv, metric="acc")
    assert "option 'metric' applies to lm-eval and helm input only, not to csv input (csv takes no options)" in msg
    assert "format 'long' needs the columns" in error_of(engine.open_scores, csv, format="long")
    assert engine.open_scores(csv, format="wide").sizes["system"] == 2
    long_csv = tmp_path / "l.csv"
    long_csv.write_text("system,task,score\na,x,1\nb,x,2\n")
    assert "are those of a long table" in error_of(engine.open_scores, long_csv, format="wide")
    assert engine.open_scores(long_csv, format="long").sizes["system"] == 2
    assert "needs a CSV or Parquet file" in error_of(engine.open_scores, write_jsonl(tmp_path / "g.jsonl", GENERIC), format="wide")
    # a .jsonl under another name can be forced
    other = write_jsonl(tmp_path / "g.ndjson", GENERIC)
    assert "unknown file type" in error_of(engine.open_scores, other)
    assert engine.open_scores(other, format="jsonl").sizes["system"] == 2


def test_cli_reports_loader_errors(tmp_path, capsys):
    path = write_jsonl(tmp_path / "bad.jsonl", [GENERIC[0], "{oops"])
    one_line_error(*run_cli(capsys, "rank", path), "line 2: not valid JSON")


def test_parse_task_option():
    assert parse_task_option(None) is None and parse_task_option("  ") is None
    assert parse_task_option(" acc ") == "acc"
    assert parse_task_option("arc_easy=acc_norm, gsm8k=exact_match") == {"arc_easy": "acc_norm", "gsm8k": "exact_match"}
    for bad in ("acc,gsm8k=exact_match", "=acc", "arc_easy="):
        assert "expected NAME or TASK=NAME" in error_of(parse_task_option, bad)
