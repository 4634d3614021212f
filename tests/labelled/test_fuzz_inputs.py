"""Property-based fuzzing of what a user writes: every input ends in exit 0 with a right answer, or exit 2 and one line.

Random structures and values for CLI flags and ``--param``, ``--config`` files (TOML/JSON), sweep files (YAML/TOML),
sidecars (``.meta.json``), weights files (JSON/CSV) and each reader's input (CSV wide/long, lm-eval, HELM, JSONL,
battles).  The CLI runs in this process (:func:`engine.app.cli.main`); a traceback (any exception escaping ``main``),
an exit code other than 0/2, or an error that is not one line fails.  Where exit is 0 on a well-formed score table,
the ranking is checked against a brute-force Borda count.  Deterministic under ``CI=true`` (the ``ci`` profile).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from conftest import bf_borda_across
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

#: examples per input kind (the whole file stays about a minute on a loaded 2-core machine); FUZZ_EXAMPLES=500 for a
#: longer hunt (with HYPOTHESIS_PROFILE=dev, new random examples each run)
N = int(os.environ.get("FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def cli(*argv: Any) -> tuple[int, str, str]:
    """``main(argv)`` in this process: (exit code, stdout, stderr); an exception escaping main propagates (a traceback)."""
    from engine.app.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse: usage errors exit 2 with one line
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def check_outcome(code: int, out: str, err: str) -> None:
    """Exit 0, or exit 2 with exactly one stderr line and no traceback."""
    assert "Traceback" not in err, err
    assert code in (0, 2), (code, err)
    if code == 2:
        lines = [ln for ln in err.splitlines() if not ln.startswith("votebench: note:")]
        assert len(lines) == 1, err
        assert "error" in lines[0], err


# ------------------------------------------------------------------------------------------ values a user writes
BIG = st.integers(min_value=10**300, max_value=10**420) | st.integers(max_value=-(10**300), min_value=-(10**420))
NUMBER = (st.integers(-5, 5) | st.floats(allow_nan=True, allow_infinity=True) | BIG | st.booleans()
          | st.sampled_from([1e308, -1e308, 5e-324, 0.0, -0.0]))
TEXT = st.text(alphabet=st.sampled_from("ab01 ,.-_/\\\"'\n\t=[]{}:é\x00"), max_size=8)
SCALAR = NUMBER | TEXT | st.none()
JSONISH = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                       max_leaves=8)


def json_text(value: Any) -> str:
    """JSON of ``value``, NaN/Infinity spelled as Python's json writes them; integers too long to print as many 9s."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except ValueError:
        return "9" * 5000


def cell(v: Any) -> str:
    """A CSV cell of a random value (text as it is)."""
    return v if isinstance(v, str) else json_text(v)


@contextlib.contextmanager
def folder():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


WIDE_OK = "system,t1,t2,t3\na,1,2,3\nb,2,1,3.5\nc,3,3,1\nd,0.5,4,2\n"

# ------------------------------------------------------------------------------------------ CLI flags and --param
FLAG_VALUES = st.one_of(st.sampled_from(["borda", "copeland", "scoring", "mean", "median", "promethee2", "elo", "x", "",
                                         "listwise", "task", "two", "one", "json", "csv", "groups", "-1", "0",
                                         "1e400", "nan", "99999999999999999999"]), TEXT)
FLAGS = st.sampled_from(["--rule", "--level", "--missing", "--within", "--across", "--format", "--weights",
                         "--lower-is-better", "--param", "--preference", "--groups", "--meta"])
PARAM_KEYS = st.sampled_from(["vector", "q", "p", "s", "gamma", "k", "v", "seed", "preference", "tie_model", "scale", "zz"])


@FUZZ
@given(flags=st.lists(st.tuples(FLAGS, FLAG_VALUES), max_size=4),
       params=st.lists(st.tuples(PARAM_KEYS, JSONISH), max_size=3),
       rule=st.sampled_from(["borda", "scoring", "promethee2", "optimality_gap", "elo", "vikor", "median"]))
def test_cli_flags_and_params(flags, params, rule):
    with folder() as d:
        p = d / "w.csv"
        p.write_text(WIDE_OK, encoding="utf-8")
        argv: list[Any] = ["rank", p, "--rule", rule]
        for flag, value in flags:
            argv += [flag] if flag == "--groups" else [flag, value]
        for key, value in params:
            argv += ["--param", f"{key}={json_text(value)}"]
        check_outcome(*cli(*argv))


# ------------------------------------------------------------------------------------------ --config files
CONFIG_KEYS = st.sampled_from(["rule", "level", "missing", "weights", "options", "format", "replicates", "seed", "block",
                               "interval", "over", "lower-is-better", "param", "groups", "nonsense"])


@FUZZ
@given(cfg=st.dictionaries(CONFIG_KEYS, JSONISH, max_size=4), command=st.sampled_from(["rank", "bootstrap"]),
       as_toml=st.booleans())
def test_config_files(cfg, command, as_toml):
    with folder() as d:
        p = d / "w.csv"
        p.write_text(WIDE_OK, encoding="utf-8")
        if as_toml:
            c = d / "c.toml"
            c.write_text("\n".join(f'"{k}" = {toml_value(v)}' for k, v in cfg.items()) + "\n", encoding="utf-8")
        else:
            c = d / "c.json"
            c.write_text(json_text(cfg), encoding="utf-8")
        extra = ["--replicates", "4"] if command == "bootstrap" and "replicates" not in cfg else []
        check_outcome(*cli(command, p, "--config", c, *extra))


def toml_value(v: Any) -> str:
    """A TOML value of ``v`` (None has no TOML spelling: an empty string; NaN/inf as TOML spells them)."""
    if v is None:
        return '""'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v) if abs(v) < 10**4000 else "9" * 5000
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


# ------------------------------------------------------------------------------------------ sweep files
SWEEP_KEYS = st.sampled_from(["seed", "store", "input", "inputs", "rules", "perturbations", "other"])
PERT = st.fixed_dictionaries({"kind": st.sampled_from(["bootstrap", "subsets", "grid", "manipulation", "rescaling", "x"])},
                             optional={"name": JSONISH, "replicates": NUMBER, "block": NUMBER, "repeats": NUMBER,
                                       "over": JSONISH, "rule": JSONISH, "params": JSONISH, "sizes": JSONISH,
                                       "n_instances": NUMBER, "factors": JSONISH, "phis": JSONISH, "variants": JSONISH})


@FUZZ
@given(raw=st.dictionaries(SWEEP_KEYS, JSONISH, max_size=4), perts=st.lists(PERT, max_size=2), yaml_text=st.booleans())
def test_sweep_files(raw, perts, yaml_text):
    """A sweep file is read and planned up to the first block (load_config, check_sizes): a config or one line."""
    from engine.errors import VotebenchError
    from engine.sweep.config import load_config
    from engine.sweep.runner import check_sizes

    with folder() as d:
        (d / "w.csv").write_text(WIDE_OK, encoding="utf-8")
        raw = {"store": str(d / "s.zarr"), "input": str(d / "w.csv"), **raw}
        if perts:
            raw["perturbations"] = perts
        p = d / ("s.yaml" if yaml_text else "s.toml")
        p.write_text(json_text(raw) if yaml_text else "\n".join(f'"{k}" = {toml_value(v)}' for k, v in raw.items()),
                     encoding="utf-8")  # JSON is YAML
        try:
            cfg = load_config(p)
            check_sizes(cfg, 4)
        except VotebenchError as exc:  # the CLI prints it on one line (engine.app.cli.one_line)
            assert str(exc).strip(), "an empty message"


# ------------------------------------------------------------------------------------------ sidecars, weights files
@FUZZ
@given(meta=st.dictionaries(st.sampled_from(["higher_is_better", "task_groups", "groups", "x"]),
                            JSONISH | st.dictionaries(st.sampled_from(["t1", "t2", "zz"]), JSONISH, max_size=3),
                            max_size=3),
       weights=st.dictionaries(st.sampled_from(["t1", "t2", "t3", "zz", ""]), NUMBER | TEXT, max_size=4),
       csv_weights=st.booleans(), rule=st.sampled_from(["borda", "mean", "median", "copeland", "elo"]))
def test_sidecars_and_weights_files(meta, weights, csv_weights, rule):
    with folder() as d:
        p = d / "w.csv"
        p.write_text(WIDE_OK, encoding="utf-8")
        (d / "w.meta.json").write_text(json_text(meta), encoding="utf-8")
        if csv_weights:
            w = d / "weights.csv"
            w.write_text("".join(f"{k},{cell(v)}\n" for k, v in weights.items()), encoding="utf-8")
        else:
            w = d / "weights.json"
            w.write_text(json_text(weights), encoding="utf-8")
        check_outcome(*cli("rank", p, "--rule", rule, "--weights", w))


# ------------------------------------------------------------------------------------------ readers
@FUZZ
@given(cells=st.lists(st.lists(NUMBER | TEXT | st.just(""), min_size=3, max_size=3), min_size=1, max_size=5),
       names=st.lists(TEXT, min_size=0, max_size=5), long=st.booleans())
def test_csv_wide_and_long(cells, names, long):
    with folder() as d:
        p = d / "s.csv"
        if long:
            rows = ["system,task,instance,score"] + [f"{cell(n)},t{j},{i},{cell(v)}" for i, (n, r) in
                                                     enumerate(zip(names or ["a", "b"], cells)) for j, v in enumerate(r)]
        else:
            rows = ["system,t1,t2,t3"] + [",".join([cell(n)] + [cell(v) for v in r]) for n, r in zip(names or ["a", "b"], cells)]
        p.write_text("\n".join(rows) + "\n", encoding="utf-8")
        check_outcome(*cli("rank", p))


@FUZZ
@given(values=st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-3, 3), min_size=3, max_size=3),
                       min_size=2, max_size=5))
def test_csv_wide_of_numbers_ranks_as_brute_force_borda(values):
    X = np.array(values, dtype=float)
    systems = [f"s{i}" for i in range(len(values))]
    with folder() as d:
        p = d / "s.csv"
        p.write_text("system,t1,t2,t3\n" + "".join(f"{s},{','.join(repr(float(v)) for v in r)}\n"
                                                   for s, r in zip(systems, values)), encoding="utf-8")
        code, out, err = cli("rank", p, "--format", "json")
        check_outcome(code, out, err)
        assert code == 0, err
        got = {r["system"]: r["score"] for r in json.loads(out)["ranking"]}
        assert got == dict(zip(systems, bf_borda_across(X.T)))


@FUZZ
@given(objs=st.lists(st.dictionaries(st.sampled_from(["system", "task", "instance", "score", "x"]), JSONISH, max_size=5),
                     min_size=1, max_size=5))
def test_jsonl(objs):
    with folder() as d:
        p = d / "s.jsonl"
        p.write_text("\n".join(json_text(o) for o in objs) + "\n", encoding="utf-8")
        check_outcome(*cli("rank", p))


@FUZZ
@given(samples=st.lists(st.dictionaries(st.sampled_from(["doc_id", "filter", "metrics", "acc", "perplexity",
                                                         "word_perplexity", "bleu"]), JSONISH, max_size=5),
                        min_size=1, max_size=3),
       results=st.dictionaries(st.sampled_from(["model_name", "higher_is_better", "results", "group_subtasks"]), JSONISH,
                               max_size=3))
def test_lm_eval(samples, results):
    with folder() as d:
        for model in ("m1", "m2"):
            m = d / "out" / model
            m.mkdir(parents=True)
            good = [{"doc_id": 0, "acc": 1}, {"doc_id": 1, "acc": 0}] if model == "m1" else samples
            (m / "samples_arc_2024-05-01T10-00-00.000.jsonl").write_text("\n".join(json_text(o) for o in good) + "\n",
                                                                         encoding="utf-8")
            (m / "results_2024-05-01T10-00-00.000.json").write_text(json_text(results), encoding="utf-8")
        check_outcome(*cli("rank", d / "out"))


@FUZZ
@given(entries=st.lists(st.dictionaries(st.sampled_from(["instance_id", "stats", "train_trial_index", "perturbation"]),
                                        JSONISH | st.lists(st.dictionaries(st.sampled_from(["name", "mean", "sum", "count"]),
                                                                           JSONISH | st.just({"name": "exact_match"}),
                                                                           max_size=4), max_size=2), max_size=4),
                        min_size=1, max_size=3),
       spec=JSONISH)
def test_helm(entries, spec):
    with folder() as d:
        suite = d / "benchmark_output" / "runs" / "v1"
        for model, data in (("a_m1", [{"instance_id": "i", "stats": [{"name": {"name": "exact_match"}, "mean": 1}]}]),
                            ("a_m2", entries)):
            r = suite / f"boolq:model={model}"
            r.mkdir(parents=True)
            (r / "per_instance_stats.json").write_text(json_text(data), encoding="utf-8")
            (r / "run_spec.json").write_text(json_text(spec), encoding="utf-8")
        check_outcome(*cli("rank", d / "benchmark_output"))


@FUZZ
@given(rows=st.lists(st.tuples(TEXT, TEXT, st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)", "draw", "a",
                                                               "B", "tie?", ""]) | TEXT), min_size=1, max_size=6),
       as_jsonl=st.booleans(), rule=st.sampled_from(["win_rate", "bradley_terry", "elo"]))
def test_battles(rows, as_jsonl, rule):
    with folder() as d:
        if as_jsonl:
            p = d / "b.jsonl"
            p.write_text("".join(json_text({"model_a": a, "model_b": b, "winner": w}) + "\n" for a, b, w in rows),
                         encoding="utf-8")
        else:
            p = d / "b.csv"
            p.write_text("model_a,model_b,winner\n" + "".join(f"{a},{b},{w}\n" for a, b, w in rows), encoding="utf-8")
        check_outcome(*cli("rank", p, "--rule", rule))
