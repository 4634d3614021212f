"""experiments/xllmbench2025: the smoke-size run writes its outputs, implements the paper's scenarios and reproduces
what the smoke size allows (49 HELM LLMs after listwise deletion, the F1 cluster, the S5 unbiased LLMs, AHP weights).

The PROMETHEE II net flows of S1-S3 are recomputed here with plain loops from the paper's definitions (Eqs. 2-7:
usual; linear with a, b = min, max of the pairwise differences; Gaussian with sigma = std of the differences).
"""

from __future__ import annotations

import csv
import gzip
import math

import numpy as np
import pytest
from conftest import DATA

from engine.app.experiment import load_experiment

STATUSES = {"matches", "differs", "not reproducible"}


@pytest.fixture(scope="module")
def mod():
    return load_experiment("xllmbench2025")


@pytest.fixture(scope="module")
def smoke(smoke_run):
    return smoke_run("xllmbench2025")


def bf_net_flow(X, weights, pref):
    """PROMETHEE II net flows by loops (X: criteria x systems, all maximised; pref one of usual/linear/gaussian)."""
    T, S = len(X), len(X[0])
    params = []
    for c in range(T):
        diffs = [X[c][a] - X[c][b] for a in range(S) for b in range(S)]
        mu = sum(diffs) / len(diffs)
        params.append((min(diffs), max(diffs), math.sqrt(sum((d - mu) ** 2 for d in diffs) / len(diffs))))

    def P(c, d):
        q, p, s = params[c]
        if pref == "usual":
            return 1.0 if d > 0 else 0.0
        if pref == "linear":
            return 0.0 if d <= q else 1.0 if d > p else (d - q) / (p - q)
        return 0.0 if d <= 0 else 1.0 - math.exp(-d * d / (2 * s * s))

    wsum = sum(weights)
    net = []
    for a in range(S):
        plus = sum(weights[c] / wsum * P(c, X[c][a] - X[c][b]) for b in range(S) for c in range(T))
        minus = sum(weights[c] / wsum * P(c, X[c][b] - X[c][a]) for b in range(S) for c in range(T))
        net.append((plus - minus) / (S - 1))
    return np.array(net)


def test_interface_and_outputs(mod, smoke):
    out, summary, results = smoke
    assert isinstance(mod.TITLE, str) and "\n" not in mod.TITLE and mod.DESCRIPTION
    assert summary["smoke"] is True and summary["seconds"] > 0
    for name in ("results.json", "README.md"):
        assert (out / name).stat().st_size > 0
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert figs == summary["figures"]
    for f in ("fig2_openllm_ranks.png", "fig3_openllm_flows.png", "fig7_openllm_spearman.png", "figB_C_D_openllm.png",
              "fig8_helm_pearson.png", "fig9_11_helm_NQA_ranks.png"):
        assert f in figs
    assert "smoke" in (out / "README.md").read_text(encoding="utf-8")
    for row in results["comparisons"]:
        assert row["status"] in STATUSES
        assert row["status"] == "matches" or row["why"], row
    assert sum(summary["counts"].values()) == len(results["comparisons"])


def test_scenario_definitions_follow_the_paper(mod):
    sc = {s.name: s for s in mod.open_llm_scenarios()}
    assert list(sc) == ["S1", "S2", "S3", "S4", "S5.1", "S5.2", "S5.3", "S6", "S7"]
    for s in sc.values():
        assert math.isclose(sum(s.weights), 1.0) and len(s.weights) == len(s.criteria) == len(s.preference)
    assert sc["S4"].preference == ("linear_indifference",) * 3 + ("gaussian",) * 3
    assert sc["S4"].criteria[3:] == ("GPQA", "MUSR", "MMLU_PRO")
    assert np.allclose(sc["S5.2"].weights, [0.1333333, 0.1333333, 0.1333333, 0.2, 0.2, 0.2], atol=1e-6)
    assert sc["S6"].criteria[-1] == "params_B" and sc["S6"].maximize[-1] is False and sc["S6"].preference[-1] == "gaussian"
    assert sc["S7"].criteria[-1] == "CO2_cost_kg" and sc["S7"].maximize[-1] is False
    helm = {s.name: s for s in mod.helm_scenarios("NarrativeQA")}
    assert len(helm) == 3 + 9 + 3
    assert helm["S1"].maximize == (True, False, False, False, True, True, False)
    assert helm["S4.2.2"].criteria[0] == "NarrativeQA - F1 (Fairness)" and len(helm["S4.2.2"].criteria) == 5
    assert helm["S5.3"].preference == ("linear_indifference", "gaussian", "gaussian", "gaussian", "linear_indifference")


def test_net_flows_match_loop_reference(mod, smoke):
    """S1 (usual), S2 (linear, a/b = min/max difference) and S3 (Gaussian, sigma = std of the differences) on the
    smoke top-50, recomputed by loops from the leaderboard file."""
    _, _, r = smoke
    o = r["open_llm"]
    cfg = mod.load_config(smoke=True)
    with gzip.open(DATA / cfg["open_llm"]["file"], "rt", newline="", encoding="utf-8") as fh:
        rows = {row["model"]: row for row in csv.DictReader(fh)}
    X = [[float(rows[m][b]) for m in o["systems"]] for b in mod.OPEN_BENCHMARKS]
    avg = np.mean(np.array(X), axis=0)
    assert np.allclose(avg, o["average"])
    for name, pref in (("S1", "usual"), ("S2", "linear"), ("S3", "gaussian")):
        ref = bf_net_flow(X, [1.0] * 6, pref)
        assert np.allclose(o["net_flow"][name], ref, atol=1e-12), name
    ref = bf_net_flow(X, list(mod.S5_WEIGHTS), "usual")
    assert np.allclose(o["net_flow"]["S5.1"], ref, atol=1e-12)


def test_open_llm_smoke_values(smoke):
    _, _, r = smoke
    o = r["open_llm"]
    assert o["n_selected"] == 50 and o["n_llms_in_file"] == 4576
    avg = np.array(o["average"])
    assert np.all(np.diff(avg) <= 0)  # the top by leaderboard average, best first
    R = np.array(o["spearman"]["matrix"], dtype=float)
    assert np.allclose(np.diag(R), 1.0) and np.all(np.abs(R) <= 1 + 1e-12)
    for kind in ("linear", "gaussian"):
        for v in o["sensitivity"][kind].values():
            assert 0.9 < v["min_spearman"] <= 1 + 1e-12
    for g in o["mcdm"].values():
        S = np.array(g["spearman"], dtype=float)
        assert np.all(np.abs(S) <= 1 + 1e-12) and g["labels"][-3:] == ["TOPSIS", "VIKOR", "average"]


def test_ahp_weights_appendix_d(smoke):
    """AHP with p for the three contamination-free benchmarks gives 1/(3+3p) and p/(3+3p) (consistent matrix, CR 0);
    the correlation with the manual S5 weights decreases as p grows."""
    _, _, r = smoke
    o = r["open_llm"]
    for p, v in o["ahp"].items():
        p = int(p)
        assert np.allclose(v["weights"], [1 / (3 + 3 * p)] * 3 + [p / (3 + 3 * p)] * 3)
        assert v["consistency_ratio"] == pytest.approx(0.0, abs=1e-9)
    for v in o["ahp_spearman"].values():
        first_row = np.array(v["spearman"], dtype=float)[0, 1:]
        assert np.all(first_row <= 1 + 1e-12)


def test_helm_matches_paper(smoke):
    _, _, r = smoke
    h = r["helm"]
    assert h["n_selected"] == 49 and h["n_llms_in_file"] == 67  # listwise deletion over 3 datasets x 7 metrics
    multi = [sorted(g) for g in h["correlation"]["clusters"] if len(g) > 1]
    assert multi == [["F1", "F1 (Fairness)", "F1 (Robustness)"]]
    nqa = h["datasets"]["NarrativeQA"]
    named = nqa["s5_named_ranks"]
    assert named["Falcon-Instruct (40B)"]["S5.1"] <= 2 and named["Vicuna v1.3 (7B)"]["S5.1"] <= 2
    assert max(v for v in nqa["s4_max_rank_deviation_top"].values()) <= 3
    for kind, thr in (("linear", 0.98), ("gaussian", 0.95)):
        assert all(v["min_spearman"] > thr for v in nqa["sensitivity"][kind].values())
    for v in nqa["ranks"].values():
        ranks = np.array(v, dtype=float)
        assert np.nanmin(ranks) == 1 and np.nanmax(ranks) <= 49


def test_the_tables_come_from_the_repository(mod, smoke):
    """Both tables are read from data/ (shipped, with sidecars); nothing is reported unavailable."""
    out, _, r = smoke
    cfg = mod.load_config(smoke=True)
    for part in ("open_llm", "helm"):
        assert (DATA / cfg[part]["file"]).is_file() and "status" not in r[part]
    assert "unavailable" not in (out / "README.md").read_text(encoding="utf-8")
    assert r["open_llm"]["n_llms_in_file"] == 4576 and r["helm"]["n_llms_in_file"] == 67
