"""The report's statistics and consistency (issue 26, session 8 review): scale-free paired tests, one Nemenyi test per
page, the CD test chosen from all systems, the store report's Settings and scale check, one display order of ties.

Checked against things the report does not compute: z-scores and their mean differences by loops over the tasks of
the CSV read with the csv module, the average ranks of scipy.stats.rankdata and Nemenyi's critical difference from
scipy's studentized range, the maximum absolute score of every task, and a natural sort of the labels written out.
"""

from __future__ import annotations

import csv
import gzip
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from engine.app.cli import main
from engine.app.report import build_report

DATA = Path(__file__).resolve().parents[2] / "data"


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def natural(label: str) -> tuple:
    """Digit runs as numbers (M2 before M13), then the text: the documented canonical label order, written out."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", label) if p), label


# ---------------------------------------------------------------------------------------------
# Defect 1: the paired tests compare z-scores within each task
# ---------------------------------------------------------------------------------------------
def tac_long() -> dict[tuple[str, str], list[float]]:
    """(system, task) -> the instance scores of TAC 2008, read with the csv module (every task higher-is-better)."""
    cells: dict[tuple[str, str], dict[str, float]] = {}
    with gzip.open(DATA / "colombo_tac08.csv.gz", "rt", encoding="utf-8", newline="") as fh:
        for r in csv.DictReader(fh):
            cells.setdefault((r["system"], r["task"]), {})[r["instance"]] = float(r["score"])
    return {k: [v[i] for i in sorted(v)] for k, v in cells.items()}


def test_tac_letters_compare_z_scores_and_separate_m13_from_m42():
    import engine
    from engine.labelled.paired_tests import letter_groups

    cells = tac_long()
    tasks = sorted({t for _, t in cells})
    systems = sorted({s for s, _ in cells})
    # the 15 best by Borda points, as the report compares them (the systems are an input here, not a result)
    top = ["M60", "M61", "M58", "M59", "M13", "M37", "M43", "M6", "M49", "M45", "M2", "M14", "M44", "M12", "M42"]
    g = letter_groups(engine.open_scores(DATA / "colombo_tac08.csv.gz"), systems=top, top_k=15, resamples=4000)
    # independent: per task, z = (score - task mean) / task std, both over all 62 systems and the instances
    z = {}
    for t in tasks:
        allv = np.array([v for s in systems for v in cells[(s, t)]])
        mu, sd = allv.mean(), allv.std()
        for s in systems:
            z[(s, t)] = (np.array(cells[(s, t)]) - mu) / sd
    mean_z = {s: sum(z[(s, t)].mean() for t in tasks) / len(tasks) for s in top}
    assert g["mean"] == pytest.approx([mean_z[s] for s in g["systems"]], rel=1e-9, abs=1e-12)
    for p in g["pairs"]:
        diff = sum((z[(p["a"], t)] - z[(p["b"], t)]).mean() for t in tasks) / len(tasks)
        assert p["diff"] == pytest.approx(diff, rel=1e-9, abs=1e-12)
    pair = next(p for p in g["pairs"] if {p["a"], p["b"]} == {"M13", "M42"})
    assert pair["different"]  # M13 beats M42 on 14 of 15 tasks; its raw-score test (BLEU-dominated) did not see it
    wins = sum(np.mean(cells[("M13", t)]) > np.mean(cells[("M42", t)]) for t in tasks)
    assert wins >= 14
    letters = dict(zip(g["systems"], g["letters"]))
    assert not set(letters["M13"]) & set(letters["M42"])


def test_the_paired_section_says_z_scores_and_warns_of_mixed_scales(tmp_path):
    """Instance-level scores on two scales (one task in points, one in [0, 1]): the section names what it compares, the
    letters' column is the mean z-score, and the scale check of the mean baseline fires here too."""
    import engine

    rng = np.random.default_rng(3)
    Y = rng.normal(size=(5, 2, 8)) * 0.1 + np.linspace(1.0, 0.0, 5)[:, None, None]
    Y[:, 0] = 50 + 30 * Y[:, 0]  # points
    scores = engine.scores_from_array(Y, systems=[f"s{i}" for i in range(5)], tasks=["pts", "unit"])
    build_report(scores, tmp_path / "r", rules=["mean", "borda"], replicates=0, repeats=0, formats=("svg",),
                 paired_resamples=500)
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    sec = page[page.index("<h2>Paired tests</h2>"):]
    sec = sec[: sec.index("</section>")]
    M = Y.mean(axis=2)  # the check reads the per-task means (task scale: the largest absolute one)
    ratio = np.abs(M[:, 0]).max() / np.abs(M[:, 1]).max()
    assert f"differ {ratio:.0f}-fold" in sec and "z-scores within each task" in sec
    head = next(iter(csv.reader((tmp_path / "r" / "tables" / "paired_letters.csv").open(encoding="utf-8"))))
    assert "mean_z" in head and "mean" not in head


# ---------------------------------------------------------------------------------------------
# Defect 2 and the minor one: one Nemenyi test per page, chosen from all k systems
# ---------------------------------------------------------------------------------------------
def automl() -> tuple[list[str], np.ndarray]:
    with (DATA / "esann_automl.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return [r[0] for r in rows[1:]], np.array([[float(v) for v in r[1:]] for r in rows[1:]]).T  # (tasks, systems)


@pytest.fixture(scope="module")
def automl_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("automl") / "r"
    build_report(DATA / "esann_automl.csv", out, replicates=0, repeats=0, formats=("svg",))
    return out


def test_automl_letters_use_the_full_k_critical_difference_of_the_diagram(automl_report):
    names, X = automl()
    N, k = X.shape
    avg = np.mean([stats.rankdata(-row) for row in X], axis=0)  # rank 1 = best, ties averaged
    q = stats.studentized_range.ppf(0.95, k, np.inf) / math.sqrt(2)
    cd = q * math.sqrt(k * (k + 1) / (6 * N))
    page = (automl_report / "index.html").read_text(encoding="utf-8")
    assert f"CD = {cd:.3g}" in page[page.index("<h2>Paired tests</h2>"):]
    rows = read_csv(automl_report / "tables" / "paired_letters.csv")
    assert len(rows) == 15 < k  # the letters show a subset, their CD is still the one of all k systems
    pos = {n: i for i, n in enumerate(names)}
    letters = {r["system"]: r["letters"] for r in rows}
    for r in rows:
        assert float(r["average_rank"]) == pytest.approx(avg[pos[r["system"]]], rel=1e-12)
    joined = 0
    for a, b in itertools.combinations(letters, 2):
        under_bar = abs(avg[pos[a]] - avg[pos[b]]) < cd  # joined by a thick bar of the diagram (a clique < CD)
        joined += under_bar
        assert bool(set(letters[a]) & set(letters[b])) == under_bar, (a, b, letters[a], letters[b])
    assert 0 < joined < 105
    # the review's pair: 8.97 - 4.55 = 4.42 is below the diagram's CD, so they share a letter
    assert set(letters["alg_00"]) & set(letters["alg_11"])


def test_the_cd_test_is_chosen_from_all_systems_not_the_shown_subset(tmp_path, automl_report):
    build_report(DATA / "esann_automl.csv", tmp_path / "r5", replicates=0, repeats=0, formats=("svg",), top_k=5,
                 paired_top_k=0)
    why = [{r["statistic"]: r["value"] for r in read_csv(p / "tables" / "friedman.csv")}["why"]
           for p in (automl_report, tmp_path / "r5")]
    names, X = automl()
    avg = np.mean([stats.rankdata(-row) for row in X], axis=0)
    assert why[0] == why[1] and f"({avg.max() - avg.min():.3g})" in why[0] and "shown" not in why[0]


# ---------------------------------------------------------------------------------------------
# Defects 6 and 7: the store report's Settings and scale check; one display order of ties
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    """A small instance-level CSV on two scales with tied systems, its bootstrap store and both reports."""
    root = tmp_path_factory.mktemp("mixed")
    rng = np.random.default_rng(5)
    systems = ["M13", "M2", "M37", "b10", "b9", "c"]
    lines = ["system,task,instance,score"]
    for t, scale in (("bleu", 100.0), ("rouge", 0.5)):
        for k in range(6):
            base = rng.uniform(0, 1)
            for i, s in enumerate(systems):
                v = base + [0.3, 0.3, 0.3, 0.1, 0.1, 0.0][i] + (0.0 if i in (0, 1, 2) else rng.normal() * 0.01 * (i == 5))
                lines.append(f"{s},{t},{k},{scale * v!r}")
    src = root / "mixed.csv"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = root / "S"
    assert main(["bootstrap", str(src), "--level", "two", "--over", "instances", "--replicates", "20", "--store",
                 str(store), "--output", str(root / "boot.txt")]) == 0
    assert main(["report", str(store), "-o", str(root / "rs")]) == 0
    assert main(["report", str(src), "--rule", "borda", "--rule", "mean", "--level", "two", "--replicates", "20",
                 "--repeats", "0", "-o", str(root / "rf")]) == 0
    return root, systems


def test_store_settings_come_from_the_store_and_its_scale_check_fires(mixed_store):
    root, systems = mixed_store
    page = (root / "rs" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", " ", page)
    settings = text[text.index("Settings"): text.index("Contents")]
    assert re.search(r"systems x tasks x instances\s+6 x 2 x 6", settings)
    assert re.search(r"aggregation level\s+two", settings) and re.search(r"missing scores\s+error", settings)
    assert re.search(r"20 replicates over instances, seed 0", settings)
    rows = [r.split(",") for r in (root / "mixed.csv").read_text().splitlines()[1:]]
    means = {(s, t): np.mean([float(r[3]) for r in rows if r[0] == s and r[1] == t]) for s in systems
             for t in ("bleu", "rouge")}  # the check reads per-task means; a task's scale: the largest absolute one
    top = {t: max(abs(means[(s, t)]) for s in systems) for t in ("bleu", "rouge")}
    assert top["bleu"] / top["rouge"] > 10  # past the check's threshold
    assert f"differ {top['bleu'] / top['rouge']:.0f}-fold" in page
    rf = (root / "rf" / "index.html").read_text(encoding="utf-8")
    assert f"differ {top['bleu'] / top['rouge']:.0f}-fold" in rf  # the score report's own warning, same words


def test_ties_are_listed_in_the_label_order_in_both_reports_and_the_bootstrap_print(mixed_store):
    root, systems = mixed_store
    boards = [read_csv(root / p / "tables" / "leaderboard.csv") for p in ("rf", "rs")]
    orders = [[r["system"] for r in b] for b in boards]
    assert orders[0] == orders[1]
    ranks = {r["system"]: int(r["rank"]) for r in boards[0]}
    assert orders[0] == sorted(ranks, key=lambda s: (ranks[s], natural(s)))
    assert ranks["M13"] == ranks["M2"] == ranks["M37"]  # a real tie, listed M2, M13, M37
    lines = (root / "boot.txt").read_text().splitlines()  # rows: rank (a '*' for a tie with the leader), system, ...
    printed = [w for ln in lines if not ln.startswith("#") for w in ln.split()[1:3] if w in ranks]
    assert printed == orders[0]
    for p in ("rf", "rs"):  # the letters table follows the same order
        letters = [r["system"] for r in read_csv(root / p / "tables" / "paired_letters.csv")]
        assert letters == [s for s in orders[0] if s in letters]
