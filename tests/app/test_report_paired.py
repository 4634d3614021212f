"""The "Paired tests" section of ``votebench report``: letter groups against independent pairwise decisions.

The references do not use the engine's tests: the paired permutation test is ``scipy.stats.permutation_test``
(exact, on the flattened paired differences), the task-level tests are ``scipy.stats.wilcoxon(method="exact")``
and Nemenyi's critical difference from Demsar's (2006) formula and table; Holm's correction is written out here.
The letters are then checked against those decisions: two systems share a letter exactly when the decisions do not
separate them (Piepho's display can always express that), and they equal :func:`engine.compact_letters`.
"""

from __future__ import annotations

import csv
import itertools
import math

import numpy as np
import pytest
from scipy import stats

import engine
from engine.app.cli import main
from engine.app.report import build_report
from engine.labelled.canonical import scores_from_array
from engine.labelled.paired_tests import standardised


def holm(p):
    """Holm's step-down adjustment, by its definition."""
    p = np.asarray(p, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p[i])
        adj[i] = min(1.0, running)
    return adj


def read_csv(path):
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def letters_of(report):
    rows = read_csv(report / "tables" / "paired_letters.csv")
    # the column beside the letters is the quantity the test compares: mean z-score, the CD's average rank, or raw mean
    col = next(c for c in ("mean_z", "average_rank", "mean_raw") if c in rows[0])
    return [r["system"] for r in rows], {r["system"]: r["letters"] for r in rows}, {r["system"]: float(r[col]) for r in rows}


def assert_letters_match(names, letters, different):
    """Sharing a letter <=> not different, for every pair; every letter names at least one system."""
    assert set(letters) == set(names)
    for a, b in itertools.combinations(names, 2):
        share = bool(set(letters[a]) & set(letters[b]))
        assert share == (not different[frozenset((a, b))]), (a, b, letters[a], letters[b])
    assert all(letters[n] for n in names)


def _instance_scores():
    """6 systems, 2 tasks (the second lower-is-better), 6 instances: a ladder of offsets, so some pairs differ."""
    rng = np.random.default_rng(7)
    offsets = np.array([0.0, 0.35, 0.7, 1.4, 1.75, -3.0])
    Y = rng.normal(size=(6, 2, 6)) * 0.4 + offsets[:, None, None]
    Y[:, 1] = -Y[:, 1]  # lower is better on t1: the same ladder, negated
    return scores_from_array(Y, systems=[f"s{i}" for i in range(6)], tasks=["t0", "t1"],
                             higher_is_better={"t0": True, "t1": False}), Y


def test_instance_level_letters_follow_independent_permutation_tests(tmp_path):
    scores, Y = _instance_scores()
    alpha = 0.05
    out = build_report(scores, tmp_path / "r", rules=["mean"], replicates=0, repeats=0, formats=("png",),
                       alpha=alpha, paired_top_k=5, paired_resamples=5000)  # 2^12 = 4096 sign patterns: exact
    page = out.read_text(encoding="utf-8")
    sec = page[page.index("<h2>Paired tests</h2>"):]
    assert "paired permutation (sign-flip) test" in sec and "Holm" in sec and "alpha = 0.05" in sec
    assert "the 5 best of 6 systems by mean score" in sec
    # independent: oriented scores as z-scores within each task (over all 6 systems and the instances), the exact
    # sign-flip test of the mean difference, Holm over the 10 pairs
    Z = Y.copy()
    Z[:, 1] = -Z[:, 1]
    for t in range(Z.shape[1]):
        Z[:, t] = (Z[:, t] - Z[:, t].mean()) / Z[:, t].std()
    mean = Z.mean(axis=(1, 2))
    top = [f"s{i}" for i in sorted(range(6), key=lambda i: -mean[i])[:5]]
    assert "s5" not in top
    names, letters, shown_mean = letters_of(tmp_path / "r")
    assert names == top  # best mean first
    for n in names:
        assert shown_mean[n] == pytest.approx(mean[int(n[1:])], rel=1e-12)
    pairs = list(itertools.combinations(top, 2))
    p = []
    for a, b in pairs:
        x, y = Z[int(a[1:])].ravel(), Z[int(b[1:])].ravel()
        p.append(stats.permutation_test((x, y), lambda u, v: np.mean(u - v), permutation_type="samples",
                                        n_resamples=np.inf).pvalue)
    adj = holm(p)
    different = {frozenset(pr): bool(q <= alpha) for pr, q in zip(pairs, adj)}
    assert 0 < sum(different.values()) < len(pairs)  # a case with both kinds of pairs
    assert_letters_match(names, letters, different)
    assert letters == engine.compact_letters(standardised(scores), systems=top, resamples=5000)
    # the pairs table holds the same p-values, adjusted
    rows = {frozenset((r["system"], r["opponent"])): r for r in read_csv(tmp_path / "r" / "tables" / "paired_tests.csv")}
    assert set(rows) == set(different)
    for pr, raw, q in zip(pairs, p, adj):
        assert float(rows[frozenset(pr)]["p"]) == pytest.approx(raw, rel=1e-9)
        assert float(rows[frozenset(pr)]["p (Holm)"]) == pytest.approx(q, rel=1e-9)
        assert (rows[frozenset(pr)]["different"] == "True") == different[frozenset(pr)]


def _task_scores(k=5, n=12, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(k, n)) + np.linspace(2.0, 0.0, k)[:, None]  # system s0 best on average
    return scores_from_array(X, systems=[f"s{i}" for i in range(k)], tasks=[f"t{t}" for t in range(n)]), X


def test_task_level_letters_follow_independent_wilcoxon_holm(tmp_path):
    scores, X = _task_scores()
    out = build_report(scores, tmp_path / "r", rules=["mean"], replicates=0, repeats=0, formats=("png",),
                       test="wilcoxon-holm")
    sec = out.read_text(encoding="utf-8").split("<h2>Paired tests</h2>")[1]
    assert "Wilcoxon signed-rank tests" in sec and "Holm" in sec and "all 5 systems" in sec
    names, letters, _ = letters_of(tmp_path / "r")
    pairs = list(itertools.combinations(names, 2))
    p = [stats.wilcoxon(X[int(a[1:])], X[int(b[1:])], method="exact").pvalue for a, b in pairs]
    different = {frozenset(pr): bool(q <= 0.05) for pr, q in zip(pairs, holm(p))}
    assert 0 < sum(different.values()) < len(pairs)
    assert_letters_match(names, letters, different)


def test_task_level_letters_follow_nemenyi_critical_difference(tmp_path):
    scores, X = _task_scores(k=5, n=40, seed=5)
    build_report(scores, tmp_path / "r", rules=["mean"], replicates=0, repeats=0, formats=("png",), test="nemenyi")
    names, letters, _ = letters_of(tmp_path / "r")
    ranks = np.array([stats.rankdata(-X[:, t]) for t in range(X.shape[1])])  # rank 1 = best, per task
    avg = {f"s{i}": ranks[:, i].mean() for i in range(5)}
    cd = 2.728 * math.sqrt(5 * 6 / (6 * 40))  # Demsar (2006), Table 5(a): q_0.05 for k = 5
    different = {frozenset((a, b)): bool(abs(avg[a] - avg[b]) >= cd) for a, b in itertools.combinations(names, 2)}
    assert 0 < sum(different.values()) < len(different)
    assert_letters_match(names, letters, different)


def test_paired_section_options(tmp_path, capsys):
    scores, _ = _instance_scores()
    out = build_report(scores, tmp_path / "r", rules=["mean"], replicates=0, repeats=0, formats=("png",), paired_top_k=0)
    assert "Paired tests" not in out.read_text(encoding="utf-8")
    assert not (tmp_path / "r" / "tables" / "paired_letters.csv").exists()
    src = tmp_path / "s.csv"
    src.write_text("system,task,score\na,t,1\nb,t,2\n", encoding="utf-8")
    for flag, value in (("--paired-top-k", "1"), ("--paired-resamples", "0")):
        assert main(["report", str(src), "-o", str(tmp_path / "bad"), flag, value]) == 2
        err = capsys.readouterr().err
        assert err.startswith("votebench: ") and flag[2:].replace("-", "_") in err
        assert not (tmp_path / "bad").exists()


def test_letter_groups_errors():
    scores, _ = _instance_scores()
    for kwargs, words in (({"top_k": 1}, "top_k"), ({"test": "tukey"}, "post-hoc test"), ({"alpha": 1.5}, "alpha"),
                          ({"resamples": 0}, "resamples"), ({"systems": ["s0", "nobody"]}, "unknown system")):
        with pytest.raises(engine.VotebenchError, match=words):
            engine.letter_groups(scores, **kwargs)
    one = scores.copy()
    one[1:] = np.nan  # only s0 has scores
    with pytest.raises(engine.VotebenchError, match="at least two systems"):
        engine.letter_groups(one)
