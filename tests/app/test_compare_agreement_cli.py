"""`votebench compare` (engine.labelled.paired_tests) and `votebench agreement` (engine.agreement) against scipy.stats and hand
computations on small cases, and the commands of the docs pages docs/guide/battles.md and docs/guide/paired-tests.md."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import one_line_error, run_cli
from scipy import stats

import engine

ROOT = Path(__file__).resolve().parents[2]


def _long_csv(path, Y, systems, tasks):
    """A long CSV of Y (system, task, instance)."""
    rows = [{"system": s, "task": t, "instance": k, "score": Y[i, j, k]}
            for i, s in enumerate(systems) for j, t in enumerate(tasks) for k in range(Y.shape[2])]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _compare(capsys, *argv):
    code, out, err = run_cli(capsys, "compare", *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out), err


def test_permutation_p_equals_scipy_permutation_test(tmp_path, capsys):
    rng = np.random.default_rng(0)
    Y = np.round(rng.normal(size=(2, 1, 10)), 3)
    Y[0] += 0.4
    path = _long_csv(tmp_path / "s.csv", Y, ["a", "b"], ["t"])
    res, _ = _compare(capsys, path, "--resamples", "5000")
    ref = stats.permutation_test((Y[0, 0], Y[1, 0]), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=np.inf, vectorized=True)
    pair = res["pairs"][0]
    assert (pair["a"], pair["b"]) == ("a", "b")
    assert pair["diff"] == pytest.approx(float(np.mean(Y[0, 0] - Y[1, 0])))
    assert pair["p"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert pair["tasks"]["t"]["p"] == pytest.approx(ref.pvalue, rel=1e-9) and pair["tasks"]["t"]["n"] == 10
    lo, hi = pair["bootstrap"]["low"], pair["bootstrap"]["high"]
    assert lo < pair["diff"] < hi
    assert "McNemar's exact test is given for 0/1 scores only" in " ".join(res["notes"])


def test_mcnemar_equals_the_binomial_test_on_discordant_pairs(tmp_path, capsys):
    rng = np.random.default_rng(1)
    Y = (rng.random((2, 1, 40)) < np.array([0.75, 0.45])[:, None, None]).astype(float)
    path = _long_csv(tmp_path / "s.csv", Y, ["a", "b"], ["t"])
    res, _ = _compare(capsys, path, "--test", "mcnemar")
    b = int(((Y[0, 0] == 1) & (Y[1, 0] == 0)).sum())
    c = int(((Y[0, 0] == 0) & (Y[1, 0] == 1)).sum())
    assert res["pairs"][0]["p"] == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-12)
    assert res["pairs"][0]["mcnemar"]["p"] == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-12)


def _holm(p):
    p = np.asarray(p)
    order = np.argsort(p)
    out = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def _bh(p):
    p = np.asarray(p)
    m = len(p)
    out = np.empty_like(p)
    for i in range(m):  # min over j with p_j >= p_i of m p_j / rank_j
        out[i] = min(1.0, min(m * p[j] / (np.sum(p <= p[j])) for j in range(m) if p[j] >= p[i]))
    return out


@pytest.mark.parametrize("correction, ref", [("holm", _holm), ("bh", _bh)])
def test_corrections_and_letters(tmp_path, capsys, correction, ref):
    rng = np.random.default_rng(2)
    base = rng.normal(size=(1, 2, 12))
    Y = np.concatenate([base + 3.0, base + rng.normal(scale=0.05, size=(1, 2, 12)),
                        base + rng.normal(scale=0.05, size=(1, 2, 12)), base + 0.08], axis=0)
    path = _long_csv(tmp_path / "s.csv", Y, ["top", "b", "c", "d"], ["t1", "t2"])
    res, _ = _compare(capsys, path, "--correction", correction, "--resamples", "2000")
    p = [q["p"] for q in res["pairs"]]
    assert [q["p_adjusted"] for q in res["pairs"]] == pytest.approx(list(ref(p)), rel=1e-12)
    letters = res["letters"]
    assert list(res["mean"])[0] == "top"
    # "top" differs from every other system: it shares no letter with them
    assert all(not set(letters["top"]) & set(letters[s]) for s in ("b", "c", "d"))
    for q in res["pairs"]:  # two systems share a letter exactly when their pair is not found different
        assert q["different"] == (not set(letters[q["a"]]) & set(letters[q["b"]]))


def test_task_level_choice_is_said_and_friedman_equals_scipy(tmp_path, capsys):
    rng = np.random.default_rng(3)
    Y = rng.normal(size=(4, 8, 5)) + np.array([0.0, 0.3, 0.6, 2.0])[:, None, None]
    path = _long_csv(tmp_path / "s.csv", Y, ["s1", "s2", "s3", "s4"], [f"t{i}" for i in range(8)])
    res, _ = _compare(capsys, path, "--resamples", "500")
    tl = res["task_level"]
    means = Y.mean(axis=2)  # (system, task)
    ref = stats.friedmanchisquare(*means)
    assert tl["friedman"]["statistic"] == pytest.approx(ref.statistic, rel=1e-10)
    assert tl["friedman"]["pvalue"] == pytest.approx(ref.pvalue, rel=1e-8)
    assert tl["test"] in ("nemenyi", "wilcoxon-holm") and len(tl["reason"]) > 20
    code, out, _ = run_cli(capsys, "compare", path, "--resamples", "500")
    assert code == 0 and f"# task level (8 tasks): {tl['reason']}" in out and "group" in out


def test_baseline_and_bad_requests(tmp_path, capsys):
    rng = np.random.default_rng(4)
    Y = rng.normal(size=(3, 2, 6))
    path = _long_csv(tmp_path / "s.csv", Y, ["a", "b", "c"], ["t1", "t2"])
    res, _ = _compare(capsys, path, "--baseline", "b", "--resamples", "100")
    assert [(q["a"], q["b"]) for q in res["pairs"]] == [("a", "b"), ("c", "b")] and res["letters"] is None
    one_line_error(*run_cli(capsys, "compare", path, "--baseline", "z"), "unknown baseline 'z'")
    one_line_error(*run_cli(capsys, "compare", path, "--test", "mcnemar"), "McNemar's test needs 0/1 scores")
    one_line_error(*run_cli(capsys, "compare", path, "--systems", "a,zz"), "unknown system(s): zz")


def test_one_score_per_task_gives_no_degenerate_bootstrap(tmp_path, capsys):
    rng = np.random.default_rng(6)
    Y = rng.normal(size=(3, 9, 1))
    path = _long_csv(tmp_path / "s.csv", Y, ["a", "b", "c"], [f"t{i}" for i in range(9)])
    res, err = _compare(capsys, path, "--resamples", "1000")
    assert all("bootstrap" not in q for q in res["pairs"]) and "no bootstrap interval is given" in err
    # the overall permutation test flips the signs of the 9 tasks' differences: 512 patterns, exact
    d = Y[0, :, 0] - Y[1, :, 0]
    signs = np.array(np.meshgrid(*[[1, -1]] * 9)).reshape(9, -1).T
    ref = np.mean(np.abs((signs * d).mean(axis=1)) >= abs(d.mean()) - 1e-12)
    assert res["pairs"][0]["p"] == pytest.approx(ref, rel=1e-12)
    one_line_error(*run_cli(capsys, "compare", path, "--test", "bootstrap"), "one score per task")


# ------------------------------------------------------------------------------------------------ agreement
def _wide(path, table):
    pd.DataFrame(table).rename_axis("system").reset_index().to_csv(path, index=False)
    return path


def test_agreement_equals_scipy_kendalltau_over_the_common_systems(tmp_path, capsys):
    rng = np.random.default_rng(5)
    a_t1 = rng.permutation(6).astype(float)
    sa = [f"s{i}" for i in range(6)]
    A = _wide(tmp_path / "a.csv", pd.DataFrame({"t1": a_t1, "t2": a_t1 * 2}, index=sa))  # tasks agree: 1 - W = 0
    b_t1 = rng.permutation(6).astype(float)
    sb = [f"s{i}" for i in range(1, 7)]
    B = _wide(tmp_path / "b.csv", pd.DataFrame({"t1": b_t1, "t2": -b_t1}, index=sb))  # tasks reverse: 1 - W = 1
    code, out, err = run_cli(capsys, "agreement", A, B, "--format", "json", "--rule", "mean")
    assert code == 0, err
    res = json.loads(out)
    common = [f"s{i}" for i in range(1, 6)]
    ref = stats.kendalltau([a_t1[sa.index(s)] * 1.5 for s in common], [0.0 * b_t1[sb.index(s)] for s in common])
    # B's mean over its two reversed tasks is 0 for every system: a constant ranking, no tau
    assert res["n"] == 5 and res["systems"] == common and res["tau"] is None and np.isnan(ref.statistic)
    code, out, err = run_cli(capsys, "agreement", A, B, "--format", "json", "--rule", "borda")
    res = json.loads(out)
    assert res["diversity"]["a"]["value"] == pytest.approx(0.0) and res["diversity"]["b"]["value"] == pytest.approx(1.0)
    C = _wide(tmp_path / "c.csv", pd.DataFrame({"t1": b_t1, "t2": b_t1 + 1}, index=sb))
    code, out, err = run_cli(capsys, "agreement", A, C, "--format", "json")
    res = json.loads(out)
    ref = stats.kendalltau([a_t1[sa.index(s)] for s in common], [b_t1[sb.index(s)] for s in common])
    assert res["tau"] == pytest.approx(ref.statistic) and res["pvalue"] == pytest.approx(ref.pvalue)
    assert res["only_a"] == ["s0"] and res["only_b"] == ["s6"] and res["too_few"] is False
    assert engine.agreement(engine.open_scores(A), engine.open_scores(C))["tau"] == pytest.approx(ref.statistic)


def test_agreement_flags_too_few_common_systems(tmp_path, capsys):
    A = _wide(tmp_path / "a.csv", pd.DataFrame({"t1": [1.0, 2.0, 3.0]}, index=["x", "y", "z"]))
    B = _wide(tmp_path / "b.csv", pd.DataFrame({"t1": [1.0, 2.0, 3.0]}, index=["x", "y", "w"]))
    code, out, err = run_cli(capsys, "agreement", A, B)
    assert code == 0 and "[too few common systems]" in out and "only 2 common system(s)" in err
    assert "1 - W needs at least 2 tasks" in out


# ------------------------------------------------------------------------------------------------ docs
def _section() -> str:
    """The examples of the battles and paired-tests pages of the docs (the README's former section)."""
    return "\n".join((ROOT / "docs" / "guide" / page).read_text(encoding="utf-8") for page in ("battles.md", "paired-tests.md"))


def test_readme_command_lines_run(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```sh\n(.*?)```", _section(), flags=re.S)
    lines = [ln.split("  #")[0].strip() for b in blocks for ln in b.splitlines() if ln.startswith("votebench ")]
    assert len(lines) >= 7
    for line in lines:
        argv = shlex.split(line)[1:]
        code, out, err = run_cli(capsys, *argv)
        assert code == 0 and out.strip(), (line, err)


def test_readme_python_examples_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```python\n(.*?)```", _section(), flags=re.S)
    assert len(blocks) >= 3
    env: dict = {}
    for code in blocks:
        exec(compile(code, "README.md", "exec"), env)  # noqa: S102 - the README's own examples
    assert os.path.isdir(ROOT / "data")
