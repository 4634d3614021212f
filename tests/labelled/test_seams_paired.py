"""The paired permutation test past 1,023 instances, and its cost (issues 23 and 24).

``2.0**k`` overflows a float from ``k = 1024``: the choice between enumerating every sign pattern and drawing
``resamples`` random ones must hold for any number of instances.  References independent of the engine: Python's
integers (``2**k <= R``), brute-force enumeration of the sign patterns with ``itertools``, and
``scipy.stats.permutation_test`` (``permutation_type="samples"``: the paired test) for the Monte Carlo path, within
the sampling error of both estimates.  The command, the report's "Paired tests" section and the dashboard's letter
groups run on inputs with more than 1,024 instances; absurd sizes are refused before any work.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import one_line_error, run_cli
from scipy import stats

from engine.kernels import paired as PT
from engine.labelled.canonical import scores_from_array

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------- exact or Monte Carlo
@pytest.mark.parametrize("R", [1, 2, 3, 4095, 4096, 4097, 10_000, 2**40, 2**1100 + 1])
def test_sign_patterns_compares_powers_of_two_as_integers(R):
    for k in [0, 1, 11, 12, 13, 40, 41, 1023, 1024, 1025, 1100, 1101, 5000]:
        exact, patterns = PT.sign_patterns(k, R)
        assert exact == (2**k <= R)  # Python integers: no overflow
        assert patterns == (2**k if exact else R)


@pytest.mark.parametrize("k", [1023, 1024, 1025, 5000])
def test_many_instances_take_the_monte_carlo_path_without_overflow(k):
    rng = np.random.default_rng(k)
    Y = np.stack([rng.normal(size=(1, k)) + 0.05, rng.normal(size=(1, k))])
    res = PT.paired_permutation(Y, resamples=199, seed=3)
    assert not res.exact_task.any() and not res.exact_overall.any()
    d = Y[0, 0] - Y[1, 0]
    assert res.overall[0] == pytest.approx(d.mean()) and res.n.tolist() == [[k]]
    # Monte Carlo p-values are (1 + count) / (1 + R) for a whole count
    for p in (res.p_task[0, 0], res.p_overall[0]):
        assert 1 / 200 <= p <= 1.0 and (p * 200) == pytest.approx(round(p * 200), abs=1e-9)
    # one task: the overall test is the task's test
    assert res.p_overall[0] == res.p_task[0, 0]


def test_several_tasks_past_1024_instances_in_all():
    """5 tasks x 1,000 instances: 5,000 in all (overall Monte Carlo), each task too many to enumerate as well."""
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(3, 5, 1000))
    Y[0] += 0.2
    res = PT.paired_permutation(Y, resamples=99)
    assert not res.exact_task.any() and not res.exact_overall.any()
    assert np.all((res.p_overall >= 0.01) & (res.p_overall <= 1.0))
    assert res.p_overall[0] == pytest.approx(0.01) and res.p_overall[1] == pytest.approx(0.01)  # 0 vs 1, 0 vs 2


def _brute_force(Y, i, j, cols):
    """Exact p-values of pair (i, j) by enumerating every sign pattern with itertools: per task and overall."""
    T = Y.shape[1]
    d = [Y[i, t, cols[t]] - Y[j, t, cols[t]] for t in range(T)]
    d = [v[~np.isnan(v)] for v in d]
    used = [t for t in range(T) if d[t].size]

    def p_of(stat, groups):
        obs = abs(stat([g for g in groups]))
        sizes = [g.size for g in groups]
        hits = total = 0
        for signs in itertools.product((1.0, -1.0), repeat=sum(sizes)):
            parts, pos = [], 0
            for g in groups:
                parts.append(np.array(signs[pos:pos + g.size]) * g)
                pos += g.size
            hits += abs(stat(parts)) >= obs * (1 - 1e-12)
            total += 1
        return hits / total

    task = [p_of(lambda gs: gs[0].mean(), [d[t]]) if d[t].size else math.nan for t in range(T)]
    overall = p_of(lambda gs: np.mean([g.mean() for g in gs]), [d[t] for t in used])
    return task, overall


@pytest.mark.parametrize("seed", range(3))
def test_exact_path_equals_brute_force_enumeration(seed):
    """Whole-number scores (many ties with the observed statistic), a ragged task and a missing score."""
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 4, size=(3, 3, 4)).astype(float)
    Y[:, 2, 3] = np.nan  # task 2 has 3 instances
    Y[1, 0, 0] = np.nan  # system 1 misses one score of task 0
    res = PT.paired_permutation(Y, resamples=2**11)  # 11 instances: every pattern, per task and overall
    assert res.exact_task.all() and res.exact_overall.all()
    cols = [np.arange(4), np.arange(4), np.arange(3)]
    for p, (i, j) in enumerate(res.pairs.tolist()):
        task, overall = _brute_force(Y, i, j, cols)
        np.testing.assert_allclose(res.p_task[p], task, rtol=1e-12)
        assert res.p_overall[p] == pytest.approx(overall, rel=1e-12)


def test_exact_choice_follows_the_cost_not_a_threshold():
    """12 instances: 4,096 patterns.  4,096 resamples: enumerated; 4,095: Monte Carlo."""
    rng = np.random.default_rng(5)
    Y = rng.normal(size=(2, 1, 12))
    assert PT.paired_permutation(Y, resamples=4096).exact_overall.all()
    mc = PT.paired_permutation(Y, resamples=4095)
    assert not mc.exact_overall.any() and not mc.exact_task.any()


@pytest.mark.parametrize("k, shift", [(1100, 0.06), (1500, 0.0), (40, 0.3)])
def test_monte_carlo_path_agrees_with_scipy_permutation_test(k, shift):
    """Two Monte Carlo estimates of the same p-value, R = 4,000 patterns each: within 4 standard errors of their
    difference (plus the 1/(R+1) offset of the engine's estimate)."""
    rng = np.random.default_rng(k)
    x = np.round(rng.normal(size=k) + shift, 2)
    y = np.round(rng.normal(size=k), 2)
    R = 4000
    res = PT.paired_permutation(np.stack([x, y])[:, None, :], resamples=R, seed=1)
    ref = stats.permutation_test((x, y), lambda a, b, axis: np.mean(a - b, axis=axis), permutation_type="samples",
                                 n_resamples=R, vectorized=True, random_state=np.random.default_rng(2)).pvalue
    p = res.p_overall[0]
    se = math.sqrt(2 * max(ref, 1 / R) * (1 - min(ref, 1 - 1 / R)) / R)
    assert abs(p - ref) <= 4 * se + 2 / (R + 1), (p, ref)
    assert res.p_task[0, 0] == p


def test_monte_carlo_counts_equal_a_loop_over_the_same_sign_patterns():
    """The block-wise matrix products count the same patterns as a plain loop over :func:`sign_bits` (ragged tasks).

    A pattern flips the signs of the absolute differences (``sum_k s_k |d_k|``: under the null the same law as
    ``sum_k s_k d_k``, since ``s_k sign(d_k)`` is a fair sign too)."""
    rng = np.random.default_rng(9)
    Y = np.round(rng.normal(size=(3, 2, 30)), 1)
    Y[:, 1, 25:] = np.nan
    Y[0, 0, 3] = np.nan
    R = 300
    res = PT.paired_permutation(Y, resamples=R, seed=4)
    present = ~np.isnan(Y).all(axis=0)
    bits = PT.sign_bits(4, range(R), present)
    for p, (i, j) in enumerate(res.pairs.tolist()):
        d = np.nan_to_num(Y[i] - Y[j])
        n = (~np.isnan(Y[i] - Y[j])).sum(axis=-1)
        obs_t = d.sum(axis=-1)
        d = np.abs(d)
        obs = np.mean(obs_t / n)
        hits_t, hits = np.zeros(2), 0
        for r in range(R):
            s = 1.0 - 2.0 * bits[r]
            u = (s * d).sum(axis=-1)
            hits_t += np.abs(u) >= np.abs(obs_t) * (1 - 1e-12)
            hits += abs(np.mean(u / n)) >= abs(obs) * (1 - 1e-12)
        np.testing.assert_allclose(res.p_task[p], (1 + hits_t) / (1 + R), rtol=1e-12)
        assert res.p_overall[p] == pytest.approx((1 + hits) / (1 + R), rel=1e-12)


# --------------------------------------------------------------------------------------------- the command and its users
def test_compare_on_a_shipped_colombo_set_past_1024_instances(capsys):
    """Colombo dialog (PC): 4 systems, 19 tasks x 60 instances = 1,140; every task has all 60, so the overall
    statistic (mean of the task means) is the mean of all paired differences: scipy's paired test of that mean."""
    import engine

    path = ROOT / "data" / "colombo_dialog_pc.csv.gz"
    code, out, err = run_cli(capsys, "compare", path, "--resamples", "2000", "--format", "json")
    assert code == 0, err
    res = json.loads(out)
    assert "Traceback" not in err and len(res["pairs"]) == 6
    from engine.labelled.core import orient

    x = orient(engine.open_scores(path)).compute().transpose("system", "task", "instance")
    names = [str(s) for s in x["system"].values]
    Y = x.values
    assert not np.isnan(Y).any() and Y.shape[1] * Y.shape[2] > 1024
    pair = res["pairs"][0]
    a, b = Y[names.index(pair["a"])].ravel(), Y[names.index(pair["b"])].ravel()
    assert pair["diff"] == pytest.approx(np.mean(a - b))
    ref = stats.permutation_test((a, b), lambda u, v, axis: np.mean(u - v, axis=axis), permutation_type="samples",
                                 n_resamples=2000, vectorized=True, random_state=np.random.default_rng(0)).pvalue
    se = math.sqrt(2 * max(ref, 1e-3) * (1 - min(ref, 0.999)) / 2000)
    assert abs(pair["p"] - ref) <= 4 * se + 2 / 2001, (pair["p"], ref)


def _many_instances(K=700, T=2):
    """4 systems, 2 tasks x 700 instances (1,400 in all): a ladder of offsets."""
    rng = np.random.default_rng(11)
    Y = np.round(rng.normal(size=(4, T, K)) + np.array([0.0, 0.02, 0.3, 0.6])[:, None, None], 3)
    return scores_from_array(Y, systems=[f"s{i}" for i in range(4)], tasks=[f"t{t}" for t in range(T)]), Y


def test_report_paired_section_past_1024_instances(tmp_path):
    import csv

    from engine.app.report import build_report

    scores, Y = _many_instances()
    out = build_report(scores, tmp_path / "r", rules=["mean"], replicates=0, repeats=0, formats=("png",),
                       paired_top_k=4, paired_resamples=500)
    sec = out.read_text(encoding="utf-8")
    assert "<h2>Paired tests</h2>" in sec and "No paired tests" not in sec
    with (tmp_path / "r" / "tables" / "paired_tests.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    for r in rows:
        assert 1 / 501 - 1e-12 <= float(r["p"]) <= 1.0
        if {r["system"], r["opponent"]} == {"s0", "s3"}:  # 0.6 apart on 1,400 instances: p at its floor
            assert float(r["p"]) == pytest.approx(1 / 501)


def test_dashboard_letters_past_1024_instances(tmp_path):
    from engine.app.dashboard import LiveStore
    from engine.sweep import parse_config, run_sweep

    _, Y = _many_instances()
    lines = ["system,task,instance,score"] + [f"s{s},t{t},{k},{float(Y[s, t, k])!r}" for s in range(4)
                                              for t in range(Y.shape[1]) for k in range(Y.shape[2])]
    path = tmp_path / "inst.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = parse_config({"seed": 1, "store": str(tmp_path / "s.zarr"), "input": {"path": str(path), "name": "inst"},
                        "rules": [{"name": "mean"}],
                        "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 2, "block": 2}]})
    run_sweep(cfg, progress=False)
    live = LiveStore(Path(cfg.store))
    live.update(strict=True)
    got = live.letter_groups("inst")
    assert "error" not in got, got.get("error")
    assert got["level"] == "instance" and got["systems"][0] == "s3" and len(got["letters"]) == 4
    assert not (set(got["letters"][0]) & set(got["letters"][-1]))  # s3 and s0: 0.6 apart, different


# --------------------------------------------------------------------------------------------- the size a user sets
def _tasks_csv(path, n_tasks, n_inst=1, systems=2):
    rng = np.random.default_rng(0)
    rows = ["system,task,instance,score"] + [f"s{s},t{t},{k},{rng.normal():.3f}" for s in range(systems)
                                             for t in range(n_tasks) for k in range(n_inst)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_absurd_resamples_are_refused_in_one_line_with_the_estimate(tmp_path, capsys):
    """40 tasks of one score: the overall test draws R patterns of 40 signs (one pair).  10^11 patterns are about
    4e12 operations by the count written out here: refused before any work, naming the size and the estimate."""
    from engine.labelled import paired_tests

    path = _tasks_csv(tmp_path / "t.csv", 40)
    R = 10**11
    code, out, err = run_cli(capsys, "compare", path, "--resamples", str(R))
    one_line_error(code, out, err, str(R), "operations", "fewer resamples")
    expected = R * 1 * 40 + R * 40  # overall Monte Carlo (pairs x tasks per pattern) + the draws; tasks: 2 patterns each
    assert f"{expected + 40 * 2 * 1:.2g} operations" in err and expected > paired_tests.MAX_OPERATIONS
    code, out, err = run_cli(capsys, "compare", path, "--resamples", "2000", "--format", "json")
    assert code == 0, err


def test_absurd_bootstrap_replicates_go_through_the_engine_memory_check(tmp_path, capsys, monkeypatch):
    """The bootstrap keeps R replicate means per pair and task: the engine's one memory check (the one of
    ``votebench bootstrap --replicates``) refuses it, here against a pretended 1 MB of available memory."""
    import psutil

    path = _tasks_csv(tmp_path / "t.csv", 2, n_inst=5)
    real = psutil.virtual_memory()

    class Small:
        available = 1_000_000
        total = real.total

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Small())
    code, out, err = run_cli(capsys, "compare", path, "--resamples", "100000")
    one_line_error(code, out, err, "resamples 100000", "bootstrap replicates", "of memory", "fewer resamples")
    # 24 bytes per replicate, pair and task + 1 (the overall): 100,000 x 1 x 3 x 24 = 7.2 MB > 1 MB
    assert "7.2 MB" in err or "6.87 MiB" in err


def test_exact_patterns_cost_nothing_whatever_the_resamples_asked(tmp_path, capsys):
    """4 tasks of one score: 16 sign patterns are enumerated, so a huge R costs nothing and is accepted."""
    path = _tasks_csv(tmp_path / "t.csv", 4)
    code, out, err = run_cli(capsys, "compare", path, "--resamples", str(10**15), "--format", "json")
    assert code == 0, err
    pair = json.loads(out)["pairs"][0]
    assert pair["p"] is not None


@pytest.mark.parametrize("test", ["permutation", "bootstrap", "mcnemar"])
def test_pairs_in_blocks_give_the_answer_of_all_pairs_at_once(test, monkeypatch):
    """7 systems (21 pairs) in blocks of 2 pairs: every array equal to the one-block run (the draws do not depend on
    the pairs asked for), and each block holds 2 x tasks x instances cells."""
    rng = np.random.default_rng(3)
    Y = (rng.random((7, 3, 40)) < np.linspace(0.4, 0.7, 7)[:, None, None]).astype(float)
    Y[2, 1, 5:9] = np.nan
    Y[:, 2, 30:] = np.nan
    whole = PT.compare_systems(Y, test=test, resamples=300, seed=2)
    seen = []
    real = PT.paired_permutation, PT.paired_bootstrap, PT.mcnemar_exact

    def spy(fn):
        def inner(*a, **k):
            seen.append(len(k["pairs"]))
            return fn(*a, **k)
        return inner

    for name, fn in zip(("paired_permutation", "paired_bootstrap", "mcnemar_exact"), real):
        monkeypatch.setattr(PT, name, spy(fn))
    monkeypatch.setattr(PT, "PAIR_BLOCK_CELLS", 2 * 3 * 40)
    blocked = PT.compare_systems(Y, test=test, resamples=300, seed=2)
    assert seen == [2] * 10 + [1]
    for field in ("pairs", "diff", "overall", "n", "p_task", "p_overall", "low_task", "high_task", "low", "high",
                  "exact_task", "exact_overall"):
        a, b = getattr(whole.test, field), getattr(blocked.test, field)
        assert (a is None) == (b is None), field
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=field)
    assert whole.letters == blocked.letters
