"""experiments/colombo2022: the smoke-size run writes its outputs and reproduces the numbers the smoke size allows.

One smoke run (module fixture) is checked against the paper (Colombo et al. 2022: Fig. 3 thresholds, Fig. 7,
Table 2, Table 6 XTREME counts, Table 7 Random column) and against plain-loop recomputations of its own numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bf_tau_b

from engine.app.experiment import load_experiment

STATUSES = {"matches", "differs", "not reproducible"}


@pytest.fixture(scope="module")
def mod():
    return load_experiment("colombo2022")


@pytest.fixture(scope="module")
def smoke(smoke_run):
    return smoke_run("colombo2022")


def bf_borda(X):
    """Borda points summed over tasks (X: tasks x systems): #beaten + 0.5 #tied, by loops."""
    T, S = len(X), len(X[0])
    tot = [0.0] * S
    for t in range(T):
        for i in range(S):
            for j in range(S):
                if i != j:
                    tot[i] += 1.0 if X[t][i] > X[t][j] else 0.5 if X[t][i] == X[t][j] else 0.0
    return np.array(tot)


def test_interface_and_outputs(mod, smoke):
    out, summary, results = smoke
    assert isinstance(mod.TITLE, str) and "\n" not in mod.TITLE
    assert isinstance(mod.DESCRIPTION, str) and mod.DESCRIPTION
    assert summary["smoke"] is True and summary["seconds"] > 0
    assert set(summary["counts"]) == STATUSES
    for name in ("results.json", "README.md"):
        assert (out / name).stat().st_size > 0
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert figs == summary["figures"]
    for f in ("fig3_manipulation.png", "fig7_rescaling.png", "fig5_fig8_task_subsets.png", "fig6_instance_tau.png",
              "fig9_instance_subsets.png"):
        assert f in figs and (out / "figures" / f).stat().st_size > 1000
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "smoke" in readme and "Every reproduced number" in readme
    assert results["smoke"] is True
    for row in results["comparisons"]:
        assert row["status"] in STATUSES
        assert row["status"] == "matches" or row["why"], row  # every difference is explained
    assert sum(summary["counts"].values()) == len(results["comparisons"])


def test_config_smoke_overrides_sizes(mod):
    full, small = mod.load_config(smoke=False), mod.load_config(smoke=True)
    assert "smoke" not in full and "smoke" not in small
    assert small["synthetic"]["repeats"] < full["synthetic"]["repeats"]
    assert small["synthetic"]["n_systems"] == full["synthetic"]["n_systems"] == 20  # N = T = K = 20 even in smoke
    assert small["task_level"]["datasets"] == full["task_level"]["datasets"]


def test_manipulation_fig3(smoke):
    """sigma_mean's error grows with corruption; the 0.75 thresholds are the paper's (2, 3, 5 / 5, 7, 10 / 10, 11, 11)."""
    _, _, r = smoke
    man = r["synthetic"]["manipulation"]
    err = np.array(man["mean_error"], dtype=float)  # (rule, phi, n_corrupted)
    assert np.all((err >= 0) & (err <= 1))
    mean = err[man["rules"].index("mean:task")]
    assert np.all(np.diff(mean, axis=-1) >= -0.05)
    assert np.all(mean[:, 0] < 0.1) and np.all(mean[:, -1] > 0.95)
    for rule, paper in man["paper_first_above_threshold"].items():
        got = man["first_above_threshold"][rule]
        assert all(abs(g - p) <= 1 for g, p in zip(got, paper)), (rule, got, paper)
    first = man["first_above_threshold"]
    assert all(a <= b <= c for a, b, c in zip(first["mean:task"], first["borda:one"], first["borda:two"]))


def test_rescaling_fig7(smoke):
    """Borda's errors do not move with the factor; sigma_mean's grows (> 0.9 from x = 2 at phi 0.05, x = 7 at phi 0.3)."""
    _, _, r = smoke
    res = r["synthetic"]["rescaling"]
    err = np.array(res["mean_error"], dtype=float)  # (rule, phi, factor)
    assert res["borda_errors_constant"] is True
    for rule in ("borda:one", "borda:two"):
        e = err[res["rules"].index(rule)]
        assert np.allclose(e, e[:, :1])
    mean = err[res["rules"].index("mean:task")]
    assert np.all(np.diff(mean, axis=-1) >= -0.02)
    assert res["smallest_factor_mean_error_above_0.9"] == {"0.05": 2.0, "0.3": 7.0}


def test_task_level_table2_matches_paper_and_loops(smoke):
    _, _, r = smoke
    tl = r["task_level"]
    paper = {"glue": ({1: 1, 3: 1, 5: 0.8, 10: 0.8}, {5: 0.8}), "superglue": ({1: 1, 3: 1, 5: 0.8, 10: 0.9},
                                                                              {3: 1, 5: 1, 10: 1})}
    for name, (top, last) in paper.items():
        t2 = tl[name]["correct columns"]["table2"]
        assert all(t2["top"][str(k)] == pytest.approx(v) for k, v in top.items())
        assert all(t2["last"][str(k)] == pytest.approx(v) for k, v in last.items())
    x = tl["xtreme"]["authors' columns"]["table2"]
    assert [x["top"][k] for k in ("1", "3", "5", "10")] == pytest.approx([1, 2 / 3, 0.8, 0.9])
    assert [x["last"][k] for k in ("3", "5", "10")] == pytest.approx([1, 0.8, 0.9])
    assert tl["glue"]["correct columns"]["table2"]["tau"] == pytest.approx(0.92, abs=0.01)
    for e in tl.values():
        for v in ("authors' columns", "correct columns"):
            if v not in e:
                continue
            t2 = e[v]["table2"]
            assert -1 <= t2["tau"] <= 1
            assert all(0 <= a <= 1 for a in list(t2["top"].values()) + list(t2["last"].values()))
            b, m = np.array(e[v]["borda_score"]), np.array(e[v]["mean_score"])
            assert t2["tau"] == pytest.approx(bf_tau_b(b, m), abs=1e-12)
            for k, a in t2["top"].items():  # share of common top-k systems, ties broken by system order
                ta = sorted(range(len(b)), key=lambda i: (-b[i], i))[: int(k)]
                tm = sorted(range(len(m)), key=lambda i: (-m[i], i))[: int(k)]
                assert a == pytest.approx(len(set(ta) & set(tm)) / int(k))


def test_borda_counts_are_plain_borda(mod, smoke):
    """Table 3/6 counts: the engine's Borda points equal a loop over task pairs (ties 0.5); XTREME (authors' columns)
    reproduces the published counts 55, 50, 44 of the first three systems."""
    _, _, r = smoke
    _, X, _ = mod._task_matrix("superglue")
    assert np.allclose(r["task_level"]["superglue"]["correct columns"]["borda_score"], bf_borda(X.tolist()))
    rows = r["task_level"]["xtreme"]["authors' columns"]["table6"]
    assert [row["borda_count"] for row in rows[:3]] == [55.0, 50.0, 44.0]
    assert [row["mean_rank"] for row in rows[:3]] == [0, 1, 3]


def test_table7_dispersion(smoke):
    """Random permutations: N(N-1)/4 up to Monte Carlo error; sigma* < sigma_mean < random."""
    _, _, r = smoke
    for e in r["task_level"].values():
        for v in ("authors' columns", "correct columns"):
            if v not in e:
                continue
            d = e[v]["table7"]
            assert abs(d["random"] - d["expected_random"]) <= 0.1 * d["expected_random"]
            if e[v]["kemeny"]["exact"]:  # Kemeny minimises the distance over strict orders
                assert d["kemeny"] <= d["borda_strict_order"] + 1e-9
            assert d["borda"] < d["mean"] < d["random"]
            assert d["borda_strict_ties"] <= d["borda"]


def test_task_subsets_fig5(smoke):
    _, _, r = smoke
    for e in r["task_level"].values():
        s = e["subsets"]
        tau = np.array(s["mean_tau"], dtype=float)
        assert np.all(np.abs(tau[np.isfinite(tau)]) <= 1 + 1e-12)
        assert np.allclose(tau[:, -1], 1.0)  # all tasks: the full ranking itself
        assert s["sizes"][-1] == e["n_tasks"]
    glue = np.array(r["task_level"]["glue"]["subsets"]["mean_tau"], dtype=float)
    assert np.mean(glue[0, 2:-1] - glue[1, 2:-1]) > 0  # sigma* more stable than sigma_mean on GLUE


#: the paper's nine instance-level datasets (Table 5): systems x tasks x instances
NINE = {"PC": (4, 19, 60), "TC": (5, 19, 60), "FLICKR": (8, 14, 108), "MLQE": (7, 10, 1000), "RSUM": (25, 15, 100),
        "SEVAL": (16, 17, 100), "TAC08": (62, 15, 48), "TAC09": (59, 15, 44), "TAC11": (54, 15, 44)}


def _long(path):
    """{system: {(task, instance): score}} from a long CSV by the csv module."""
    import csv
    import gzip

    out = {}
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        for s, t, i, v in list(csv.reader(fh))[1:]:
            out.setdefault(s, {})[(t, i)] = float(v)
    return out


def test_instance_level_runs_all_nine_datasets(smoke):
    _, _, r = smoke
    il = r["instance_level"]
    assert {k: (e["n_systems"], e["n_tasks"], e["n_instances"]) for k, e in il.items()} == NINE
    assert sum(e["n_scores"] for e in il.values()) == 276276  # the paper's "270k scores"
    for e in il.values():
        for v in list(e["tau"].values()) + list(e["tau_instances_as_systems"].values()):
            assert -1 <= v <= 1
        assert set(e["winners"]) == {"sigma_mean", "sigma_l", "sigma_2l"}
        sets = [set(w.split(" = ")) for w in e["winners"].values()]
        assert e["three_different_winners"] == all(not (sets[i] & sets[j]) for i in range(3) for j in range(i + 1, 3))
        for pair in e["agreement_top_k"].values():
            assert all(0.0 <= a <= 1.0 for a in pair.values())
    assert il["TAC08"]["tau"]["tau(sigma_l, sigma_2l)"] > 0.9  # sigma_l and sigma_2l nearly agree on TAC08
    rows = [row for row in r["comparisons"] if row["item"].startswith("Sec. 5.3: three different winners")]
    n = sum(e["three_different_winners"] for e in il.values())
    assert len(rows) == 1 and rows[0]["ours"].startswith(f"{n} of 9")


def test_instance_level_winners_and_tau_by_loops(smoke):
    """PersonaChat (4 systems): sigma_mean (mean of every score), sigma_l (Borda over all judges, ties 0.5) and their
    tau, recomputed from the CSV with plain loops."""
    from conftest import DATA

    _, _, r = smoke
    e = r["instance_level"]["PC"]
    scores = _long(DATA / "colombo_dialog_pc.csv.gz")
    systems = e["systems"]
    judges = sorted(next(iter(scores.values())))
    mean = [sum(scores[s].values()) / len(scores[s]) for s in systems]
    borda = [sum(sum(1.0 if scores[s][j] > scores[o][j] else 0.5 if scores[s][j] == scores[o][j] else 0.0
                     for o in systems if o != s) for j in judges) for s in systems]
    assert np.allclose(e["scores"]["sigma_mean"], mean) and np.allclose(e["scores"]["sigma_l"], borda)
    best = [systems[i] for i in range(len(systems)) if mean[i] == max(mean)]
    assert e["winners"]["sigma_mean"] == " = ".join(best)
    assert e["tau"]["tau(sigma_mean, sigma_l)"] == pytest.approx(bf_tau_b(mean, borda), abs=1e-12)


def test_table7_authors_measure_reproduces_xtreme(smoke):
    """The authors' distorsion_measure on their shifted XTREME columns gives the published 12.25 and 12.75."""
    _, _, r = smoke
    d = r["task_level"]["xtreme"]["authors' columns"]["authors_convention"]["dispersion"]
    assert d == {"borda": pytest.approx(12.25), "mean": pytest.approx(12.75)}
    rows = {row["item"]: row for row in r["comparisons"] if row["item"].startswith("Table 7 XTREME")}
    assert all("the published value" in row["why"] for k, row in rows.items() if "random" not in k and "lowest" not in k)


def test_every_difference_names_a_cause_or_says_unknown(smoke):
    for row in smoke.results["comparisons"]:
        if row["status"] == "differs":
            why = row["why"]
            assert why and "Monte Carlo noise" not in why and "transcription slip" not in why, row
            assert ("cause unknown" in why or "published value" in why or "within Monte Carlo error" in why
                    or "checked" in why), row


def test_a_missing_dataset_is_an_error_naming_it(mod, tmp_path, monkeypatch):
    import engine
    from engine.app import experiment

    monkeypatch.setattr(experiment, "ROOT", tmp_path)
    with pytest.raises(engine.VotebenchError, match=r"colombo_flickr\.csv\.gz: dataset missing from the repository's data/"):
        experiment.data_path("colombo_flickr.csv.gz")


def test_overlap_by_hand(mod):
    a = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    b = np.array([5.0, 3.0, 4.0, 1.0, 2.0])
    assert mod._overlap(a, b, 1) == 1.0
    assert mod._overlap(a, b, 2) == 0.5
    assert mod._overlap(a, b, 3) == 1.0
    assert mod._overlap(a, b, 1, least=True) == 0.0
    assert mod._overlap(a, b, 2, least=True) == 1.0
