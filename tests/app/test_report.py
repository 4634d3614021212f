"""Tests of :mod:`engine.app.report` and :mod:`engine.app.plots`: statistics against brute force and published tables, the report.

* Friedman statistic: plain-loop ranks and tie counts, and scipy's ``friedmanchisquare``;
* Nemenyi ``q_alpha``: Demsar (2006), Table 5(a); the critical difference of Demsar's worked example;
* PROMETHEE II flows: a plain loop over criteria and pairs; the net flow is the engine's ``promethee2_net``;
* rank changes: a hand-worked example through the whole report;
* reports: shipped data (files, PNG headers and sizes, every system in the HTML), top-k for 35 systems,
  errors without half-written output, and a small sweep results store (intervals, subset curves, grid).
"""

from __future__ import annotations

import csv
import html
import math
import shutil
import struct

import numpy as np
import pytest
import xarray as xr
from conftest import DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import engine
import engine.kernels.metrics
import engine.kernels.ranking
from engine.app import plots
from engine.app.cli import build_parser
from engine.app.commands import report
from engine.app.report import build_report, format_change, select_systems
from engine.errors import VotebenchError
from engine.kernels.mcdm import promethee2_net
from engine.kernels.significance import friedman_test, nemenyi_cd, nemenyi_q
from engine.labelled.comparison import promethee_flows, rank_changes

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURES = ("rankings", "rank_heatmap", "critical_difference", "promethee_flows", "win_matrix", "intervals", "subset_curves")


def png_size(path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk; asserts the PNG signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


# ---------------------------------------------------------------------------------------------
# Friedman
# ---------------------------------------------------------------------------------------------
def bf_friedman(X):
    """Friedman chi-square with tie correction by loops: average ranks per row, tie groups counted by hand."""
    n, k = len(X), len(X[0])
    rank_sum = [0.0] * k
    tie_term = 0.0
    for row in X:
        for j in range(k):
            better = sum(1 for v in row if v > row[j])
            equal = sum(1 for v in row if v == row[j])  # includes j itself
            rank_sum[j] += better + (equal + 1) / 2.0
        seen = []
        for v in row:
            if v not in seen:
                seen.append(v)
                t = sum(1 for w in row if w == v)
                tie_term += t**3 - t
    avg = [r / n for r in rank_sum]
    c = 1.0 - tie_term / (n * k * (k * k - 1))
    chi2 = 12.0 * n / (k * (k + 1)) * sum((a - (k + 1) / 2.0) ** 2 for a in avg) / c
    denom = n * (k - 1) - chi2  # 0 when every dataset ranks the systems the same way
    ff = math.inf if denom <= 1e-9 * n * (k - 1) else (n - 1) * chi2 / denom
    return chi2, ff, avg


def test_friedman_hand_worked():
    # ranks per row: (1, 2, 3), (1, 3, 2), (1, 2, 3): averages 1, 7/3, 8/3; chi2 = 3 * (1 + 1/9 + 4/9) = 14/3
    r = friedman_test(np.array([[3.0, 2.0, 1.0], [3.0, 1.0, 2.0], [3.0, 2.0, 1.0]]))
    assert r.statistic == pytest.approx(14 / 3)
    assert r.iman_davenport == pytest.approx(2 * (14 / 3) / (6 - 14 / 3))  # = 7
    assert r.avg_ranks == pytest.approx([1.0, 7 / 3, 8 / 3])
    assert (r.n_datasets, r.n_systems) == (3, 3)


@settings(max_examples=60)
@given(arrays(np.float64, st.tuples(st.integers(2, 7), st.integers(3, 6)), elements=st.sampled_from([0.0, 1.0, 2.0, 3.5])))
def test_friedman_against_loops_and_scipy(X):
    from scipy.stats import friedmanchisquare

    tied_everywhere = all(len(set(row)) == 1 for row in X)
    r = friedman_test(X)
    if tied_everywhere:
        assert math.isnan(r.statistic)
        return
    chi2, ff, avg = bf_friedman(X.tolist())
    assert r.statistic == pytest.approx(chi2, rel=1e-10, abs=1e-12)
    assert r.avg_ranks == pytest.approx(avg)
    ref = friedmanchisquare(*X.T)
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-9, abs=1e-12)
    assert r.pvalue == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12)
    if math.isinf(ff):
        assert math.isinf(r.iman_davenport) and r.iman_davenport_pvalue == 0.0
    else:
        assert r.iman_davenport == pytest.approx(ff, rel=1e-9)


def test_friedman_perfect_agreement():
    # every task ranks the systems the same way: chi2 = N (k - 1), Iman-Davenport F is infinite
    r = friedman_test(np.array([[3.0, 2.0, 1.0]] * 4))
    assert r.statistic == pytest.approx(4 * 2)
    assert math.isinf(r.iman_davenport) and r.iman_davenport_pvalue == 0.0


def test_friedman_bad_input():
    with pytest.raises(VotebenchError, match="at least 2 datasets"):
        friedman_test(np.ones((1, 4)))
    with pytest.raises(VotebenchError, match="complete"):
        friedman_test(np.array([[1.0, np.nan], [2.0, 1.0]]))


# ---------------------------------------------------------------------------------------------
# Nemenyi
# ---------------------------------------------------------------------------------------------
#: Demsar (2006), JMLR 7:1-30, Table 5(a): critical values q_alpha of the two-tailed Nemenyi test, k = 2..10
DEMSAR_Q = {
    0.05: [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164],
    0.10: [1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920],
}


@pytest.mark.parametrize("alpha", sorted(DEMSAR_Q))
def test_nemenyi_q_matches_demsar_table(alpha):
    for k, q in zip(range(2, 11), DEMSAR_Q[alpha]):
        assert nemenyi_q(k, alpha) == pytest.approx(q, abs=1e-3), (k, alpha)  # the table has 3 decimals


def test_nemenyi_cd_demsar_example():
    # Demsar section 3.2.4: four algorithms on 14 data sets, CD = 2.569 sqrt(4 * 5 / (6 * 14)) = 1.25
    assert nemenyi_cd(4, 14, 0.05) == pytest.approx(1.25, abs=5e-3)
    for k, n, a in [(3, 5, 0.05), (7, 30, 0.1), (20, 9, 0.01)]:
        assert nemenyi_cd(k, n, a) == pytest.approx(nemenyi_q(k, a) * math.sqrt(k * (k + 1) / (6 * n)))
    # more systems need a larger difference; more data sets a smaller one
    assert nemenyi_cd(6, 10) > nemenyi_cd(5, 10) and nemenyi_cd(5, 20) < nemenyi_cd(5, 10)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, "x", True, float("nan")])
def test_bad_alpha(alpha):
    with pytest.raises(VotebenchError, match="alpha"):
        nemenyi_q(5, alpha)


# ---------------------------------------------------------------------------------------------
# PROMETHEE II flows
# ---------------------------------------------------------------------------------------------
def bf_flows(X, w, pref):
    """phi+, phi- by loops: pi(a, b) = sum_c w_c P(x_c(a) - x_c(b)) / sum w; flows over the S - 1 others."""
    T, S = len(X), len(X[0])
    wsum = sum(w)
    plus, minus = [0.0] * S, [0.0] * S
    for a in range(S):
        for b in range(S):
            if a == b:
                continue
            pab = sum(w[c] * pref(X[c][a] - X[c][b]) for c in range(T)) / wsum
            plus[a] += pab / (S - 1)
            minus[b] += pab / (S - 1)
    return np.array(plus), np.array(minus)


@pytest.mark.parametrize("seed", range(6))
def test_promethee_flows_against_loops(seed):
    rng = np.random.default_rng(seed)
    T, S = int(rng.integers(1, 5)), int(rng.integers(2, 7))
    X = rng.integers(0, 4, size=(T, S)).astype(float)
    w = rng.uniform(0.1, 2.0, size=T)
    usual = lambda d: 1.0 if d > 0 else 0.0  # noqa: E731
    plus, minus, net = promethee_flows(X, weights=w)
    bp, bm = bf_flows(X.tolist(), w.tolist(), usual)
    np.testing.assert_allclose(plus, bp, atol=1e-12)
    np.testing.assert_allclose(minus, bm, atol=1e-12)
    np.testing.assert_allclose(net, plus - minus, atol=1e-15)
    np.testing.assert_allclose(net, promethee2_net(X, weights=w), atol=1e-12)
    # linear preference with indifference threshold q and preference threshold p
    q, p = 0.5, 2.0
    lin = lambda d: 0.0 if d <= q else 1.0 if d > p else (d - q) / (p - q)  # noqa: E731
    plus, minus, net = promethee_flows(X, weights=w, preference="linear_indifference", q=q, p=p)
    bp, bm = bf_flows(X.tolist(), w.tolist(), lin)
    np.testing.assert_allclose(plus, bp, atol=1e-12)
    np.testing.assert_allclose(minus, bm, atol=1e-12)
    np.testing.assert_allclose(net, promethee2_net(X, weights=w, preference="linear_indifference", q=q, p=p), atol=1e-12)


def test_promethee_flows_errors_are_votebench_errors():
    with pytest.raises(VotebenchError):
        promethee_flows(np.array([[1.0, np.nan], [2.0, 1.0]]))


# ---------------------------------------------------------------------------------------------
# rank changes and top-k selection
# ---------------------------------------------------------------------------------------------
#: hand-worked: mean ranks b 1, c 2, a 3, d 4; Borda points a 3+0+0, b 1+2+2, c 2+3+1, d 0+1+3 -> c 1, b 2, d 3, a 4
HAND = {"a": [10.0, 0.0, 0.0], "b": [4.0, 4.0, 4.0], "c": [5.0, 5.0, 1.0], "d": [0.0, 1.0, 6.0]}


def hand_scores():
    return engine.scores_from_array(np.array(list(HAND.values())), systems=list(HAND), tasks=["t1", "t2", "t3"])


def test_rank_changes_and_format():
    ranks = xr.DataArray([[3, 4], [1, 2], [2, 1], [4, 3]], dims=("system", "rule"),
                         coords={"system": list("abcd"), "rule": ["mean", "borda"]})
    d = rank_changes(ranks, baseline="mean")
    assert d.sel(rule="borda").values.tolist() == [-1, -1, 1, 1]
    assert d.sel(rule="mean").values.tolist() == [0, 0, 0, 0]
    assert [format_change(r, x) for r, x in zip([4, 2, 1, 3], [-1, -1, 1, 1])] == ["4 ↓1", "2 ↓1", "1 ↑1", "3 ↑1"]
    assert format_change(2, 0) == "2 \u00b10" and format_change(2, 0, baseline=True) == "2"
    assert format_change(2, 1, shared=True) == "2= \u21911"
    assert format_change(7, -3, fmt="tex") == "7 $\\downarrow$3"
    assert format_change(float("nan"), 0) == "-"
    with pytest.raises(VotebenchError, match="baseline"):
        rank_changes(ranks, baseline="copeland")


def test_rank_change_table_hand_worked(tmp_path):
    index = build_report(hand_scores(), tmp_path / "r", rules=["borda"], replicates=0, repeats=0, formats=("png",))
    rows = list(csv.reader((index.parent / "tables" / "rankings.csv").open(encoding="utf-8")))
    assert rows[0] == ["system", "mean", "borda", "borda_change"]
    # listed by the primary rule (the first asked for), not by the mean baseline (issue 26)
    assert rows[1:] == [["c", "2", "1", "1"], ["b", "1", "2", "-1"], ["d", "4", "3", "1"], ["a", "3", "4", "-1"]]
    md = (index.parent / "tables" / "rankings.md").read_text(encoding="utf-8").splitlines()
    assert md[0] == "| system | mean (baseline) | borda (primary) |"
    assert md[2:] == ["| c | 2 | 1 ↑1 |", "| b | 1 | 2 ↓1 |", "| d | 4 | 3 ↑1 |", "| a | 3 | 4 ↓1 |"]
    tex = (index.parent / "tables" / "rankings.tex").read_text(encoding="utf-8")
    assert "c & 2 & 1 $\\uparrow$1 \\\\" in tex and "\\begin{tabular}{lrr}" in tex
    page = index.read_text(encoding="utf-8")
    assert '<td class="up">1 ↑1</td>' in page and '<td class="down">2 ↓1</td>' in page
    assert "top " not in page  # 4 systems: no top-k selection


def bf_select(R, k):
    """Largest m whose union of top-m sets has <= k systems, then fill by mean rank (loops)."""
    n_r, n_s = len(R), len(R[0])
    if n_s <= k:
        return set(range(n_s))
    best = set()
    for m in range(1, n_s + 1):
        union = {s for s in range(n_s) for r in range(n_r) if R[r][s] <= m}
        if len(union) > k:
            break
        best = union
    mean = [sum(R[r][s] for r in range(n_r)) / n_r for s in range(n_s)]
    rest = sorted((s for s in range(n_s) if s not in best), key=lambda s: (mean[s], R[0][s], s))
    return best | set(rest[: k - len(best)])


@pytest.mark.parametrize("seed", range(8))
def test_select_systems_against_loops(seed):
    rng = np.random.default_rng(seed)
    n_r, n_s = int(rng.integers(1, 4)), int(rng.integers(3, 15))
    R = np.stack([engine.kernels.ranking.min_rank(rng.integers(0, 6, n_s).astype(float)) for _ in range(n_r)])
    k = int(rng.integers(2, n_s + 2))
    got = select_systems(R, k)
    assert set(got.tolist()) == bf_select(R.tolist(), k)
    assert len(got) == min(k, n_s)
    ref = R[0][got]
    assert (np.diff(ref) >= 0).all()  # best first by the reference rule


# ---------------------------------------------------------------------------------------------
# reports on score files
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def glue_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("glue") / "report"
    index = build_report(DATA / "vnr_glue.csv", out, rules=["borda", "copeland", "promethee2"], missing="listwise",
                         replicates=20, repeats=4, seed=1)
    return index


def test_report_files(glue_report):
    root = glue_report.parent
    assert glue_report == root / "index.html"
    for name in FIGURES:
        w, h = png_size(root / "figures" / f"{name}.png")
        assert w > 300 and h > 200, (name, w, h)
        assert (root / "figures" / f"{name}.png").stat().st_size > 5000
        svg = (root / "figures" / f"{name}.svg").read_text(encoding="utf-8")
        assert svg.startswith("<?xml") and "<svg" in svg
    for name in ("rankings", "scores", "friedman", "average_ranks", "promethee_flows", "win_matrix", "intervals",
                 "subset_curves"):
        for ext in ("csv", "md", "tex"):
            assert (root / "tables" / f"{name}.{ext}").stat().st_size > 0
    assert (root / ".votebench-report").exists()
    assert not [p for p in root.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    # 30 systems: the figure grows with the rows shown
    _, h_rank = png_size(root / "figures" / "rankings.png")
    assert h_rank > 30 * 0.26 * 100


def test_report_html_lists_every_system(glue_report):
    page = glue_report.read_text(encoding="utf-8")
    systems = [str(s) for s in engine.open_scores(DATA / "vnr_glue.csv")["system"].values]
    assert len(systems) == 100
    missing = [s for s in systems if html.escape(s) not in page]
    assert not missing
    for name in FIGURES:
        assert f'src="figures/{name}.png"' in page
    assert "top 30 of 97 systems" in page  # 3 systems dropped by the listwise policy, 97 ranked
    assert "left out 3 systems" in page
    rows = list(csv.DictReader((glue_report.parent / "tables" / "rankings.csv").open(encoding="utf-8")))
    assert len(rows) == 97
    assert list(rows[0]) == ["system", "mean", "borda", "borda_change", "copeland", "copeland_change", "promethee2",
                             "promethee2_change"]
    # the table's ranks are the engine's
    s = engine.open_scores(DATA / "vnr_glue.csv")
    ref = engine.rank(s, rule="copeland", missing="listwise")
    want = {str(n): r for n, r in zip(ref["system"].values, ref["rank"].values) if np.isfinite(r)}
    assert {r["system"]: float(r["copeland"]) for r in rows} == want


def test_report_intervals_match_bootstrap(glue_report):
    rows = list(csv.DictReader((glue_report.parent / "tables" / "intervals.csv").open(encoding="utf-8")))
    s = engine.open_scores(DATA / "vnr_glue.csv")
    summ = engine.summarize(engine.bootstrap(s, rule="borda", missing="listwise", replicates=20, seed=1), level=0.95)
    want = {str(n): (lo, hi) for n, lo, hi in zip(summ["system"].values, summ["rank_low"].values, summ["rank_high"].values)
            if np.isfinite(lo)}
    got = {r["system"]: (float(r["rank_low"]), float(r["rank_high"])) for r in rows if r["rule"] == "borda"}
    assert got.keys() == want.keys() and len(got) == 97
    for name, (lo, hi) in got.items():
        assert (lo, hi) == pytest.approx(want[name]), name


def test_top_k_for_35_systems(tmp_path):
    rng = np.random.default_rng(3)
    names = [f"system number {i:02d}" for i in range(35)]
    s = engine.scores_from_array(rng.normal(size=(35, 6)), systems=names)
    index = build_report(s, tmp_path / "r", rules=["borda"], replicates=0, repeats=0, formats=("svg",))
    root = index.parent
    svg = (root / "figures" / "rankings.svg").read_text(encoding="utf-8")
    assert "top 30 of 35 systems" in svg  # text kept as text (svg.fonttype none)
    assert sum(1 for n in names if n in svg) == 30
    assert not (root / "figures" / "rankings.png").exists()
    assert 'src="figures/rankings.svg"' in index.read_text(encoding="utf-8")
    assert len(list(csv.reader((root / "tables" / "rankings.csv").open()))) == 36  # tables keep every system


def test_figures_sized_by_systems():
    for n in (5, 30):
        ranks = xr.DataArray(np.tile(np.arange(1.0, n + 1)[:, None], (1, 3)), dims=("system", "rule"),
                             coords={"system": [f"s{i}" for i in range(n)], "rule": ["mean", "a", "b"]})
        fig = plots.rank_change_figure(ranks, baseline="mean")
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.get_yticklabels()] == [f"s{i}" for i in range(n)]
        assert fig.get_size_inches()[1] >= 0.26 * n
    assert plots.short_label("x" * 60).endswith("…") and len(plots.short_label("x" * 60)) == plots.LABEL_CHARS


def test_default_rules_skip_inapplicable(tmp_path):
    index = build_report(hand_scores(), tmp_path / "r", replicates=0, repeats=0, formats=("png",))
    header = next(csv.reader((index.parent / "tables" / "rankings.csv").open()))
    ranked = {h for h in header[1:] if not h.endswith("_change")}
    applicable = set()
    for r in engine.rule_names():
        try:
            engine.rank(hand_scores(), rule=r)
        except VotebenchError:
            continue
        applicable.add(r)
    assert "scoring" not in applicable and "geometric_mean" not in applicable  # a vector needed; scores of 0
    degenerate = {"random_judge"}  # a task drawn at random, not an aggregate
    for r in applicable:  # single-winner rankings: at most two distinct ranks among the four systems
        if len(set(engine.rank(hand_scores(), rule=r)["rank"].values.tolist())) <= 2:
            degenerate.add(r)
    X = hand_scores().values
    if X.min() < 0 or X.max() > 1:  # the optimality gap needs scores on a 0-1 scale
        degenerate.add("optimality_gap")
    assert degenerate >= {"random_judge", "condorcet"}
    assert ranked == applicable - degenerate
    page = index.read_text(encoding="utf-8")
    assert "Rules left out" in page and "scoring" in page
    assert "Single-winner and degenerate rules" in page and all(r in page for r in degenerate)


def test_degenerate_rules_are_kept_when_asked_for_and_flagged(tmp_path):
    index = build_report(hand_scores(), tmp_path / "r", rules=["borda", "condorcet", "random_judge"], replicates=0,
                         repeats=0, formats=("png",))
    header = next(csv.reader((index.parent / "tables" / "rankings.csv").open()))
    assert {h for h in header[1:] if not h.endswith("_change")} == {"mean", "borda", "condorcet", "random_judge"}
    page = index.read_text(encoding="utf-8")
    assert "Flagged: condorcet: a single-winner rule: winner" in page and "Flagged: random_judge" in page


# ---------------------------------------------------------------------------------------------
# errors and atomic output
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rules": ["nope"]}, "unknown rule 'nope'"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.2}, "alpha"),
        ({"top_k": 1}, "top_k"),
        ({"replicates": 1}, "replicates"),
        ({"repeats": -1}, "repeats"),
        ({"formats": ("png", "gif")}, "gif"),
        ({"level": "three"}, "unknown level"),
        ({"missing": "ignore"}, "missing-score policy"),
        ({"over": "rows"}, "resampling axis"),
        ({"rules": []}, "rules is empty"),
    ],
)
def test_bad_options(tmp_path, kwargs, match):
    with pytest.raises(VotebenchError, match=match):
        build_report(hand_scores(), tmp_path / "r", **{"replicates": 0, "repeats": 0, **kwargs})
    assert list(tmp_path.iterdir()) == []


def test_failure_leaves_nothing(tmp_path):
    # vnr_glue has missing scores: the default policy 'error' refuses, after the work started
    with pytest.raises(VotebenchError, match="missing score"):
        build_report(DATA / "vnr_glue.csv", tmp_path / "r", replicates=0, repeats=0)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(VotebenchError, match="no such file"):
        build_report(tmp_path / "absent.csv", tmp_path / "r")
    with pytest.raises(VotebenchError, match="does not exist"):
        build_report(hand_scores(), tmp_path / "no" / "r")


def test_out_dir_replacement(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(VotebenchError, match="not empty"):
        build_report(hand_scores(), other, rules=["borda"], replicates=0, repeats=0, formats=("png",))
    assert [p.name for p in other.iterdir()] == ["keep.txt"]
    out = tmp_path / "r"
    build_report(hand_scores(), out, rules=["borda"], replicates=0, repeats=0, formats=("png",))
    (out / "figures" / "stale.png").write_bytes(b"old")
    build_report(hand_scores(), out, rules=["copeland"], replicates=0, repeats=0, formats=("png",))  # replaces the report
    assert not (out / "figures" / "stale.png").exists()
    assert "copeland" in (out / "tables" / "rankings.csv").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "r"]


def _parser():
    return build_parser((report,))


def test_cli_subcommand(tmp_path, capsys):
    src = tmp_path / "hand.csv"
    src.write_text("system,t1,t2,t3\n" + "".join(f"{k},{','.join(map(str, v))}\n" for k, v in HAND.items()))
    args = _parser().parse_args(["report", str(src), "--out", str(tmp_path / "r"), "--rule", "borda", "--rule", "kemeny",
                                 "--replicates", "0", "--repeats", "0", "--format", "png", "--alpha", "0.1",
                                 "--top-k", "3"])
    assert args.func(args) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "r" / "index.html")
    assert "top 3 of 4 systems" in (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    args = _parser().parse_args(["report", str(src), "--out", str(tmp_path / "r2"), "--alpha", "2"])
    with pytest.raises(VotebenchError, match="alpha"):
        args.func(args)


# ---------------------------------------------------------------------------------------------
# sweep results store
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from engine.sweep import parse_config, run_sweep

    d = tmp_path_factory.mktemp("sweep")
    rng = np.random.default_rng(0)
    src = d / "tiny.csv"
    rows = [f"s{i}," + ",".join(f"{v:.3f}" for v in rng.uniform(0.3, 1.0, 5)) for i in range(6)]
    src.write_text("system,t1,t2,t3,t4,t5\n" + "\n".join(rows) + "\n")
    cfg = parse_config({
        "input": {"path": str(src)}, "rules": ["mean", "borda"], "seed": 2, "store": str(d / "res.zarr"),
        "perturbations": [{"kind": "bootstrap", "replicates": 12, "block": 6},
                          {"kind": "subsets", "sizes": [1, 2, 3, 4], "repeats": 6, "block": 6},
                          {"kind": "grid", "rule": "optimality_gap", "params": {"gamma": [0.5, 0.9]}}],
    })
    return run_sweep(cfg, progress=False), src


def test_report_from_store(store, tmp_path):
    path, src = store
    index = build_report(path, tmp_path / "r", formats=("png",))
    root = index.parent
    for name in ("rankings", "rank_heatmap", "critical_difference", "bootstrap-tasks_intervals",
                 "subsets_subset_curves", "grid-optimality_gap_rank_heatmap"):
        w, h = png_size(root / "figures" / f"{name}.png")
        assert w > 300 and h > 200
    rows = list(csv.DictReader((root / "tables" / "subsets_subset_curves.csv").open()))
    ds = engine.sweep.open_results(path, "tiny/subsets").compute()
    for r in rows:
        tau = ds["tau"].sel(rule=r["rule"], subset_size=int(r["subset_size"])).values
        assert float(r["tau_mean"]) == pytest.approx(np.nanmean(tau))
        assert float(r["tau_std"]) == pytest.approx(np.nanstd(tau, ddof=1))
    page = index.read_text(encoding="utf-8")
    assert all(f"s{i}" in page for i in range(6))
    # without the input file: rankings from the stored bootstrap, no score figures
    moved = src.with_suffix(".bak")
    shutil.move(src, moved)
    try:
        index = build_report(path, tmp_path / "r2", formats=("png",), rules=["borda"])
    finally:
        shutil.move(moved, src)
    figs = {p.stem for p in (index.parent / "figures").iterdir()}
    assert "critical_difference" not in figs and {"rankings", "bootstrap-tasks_intervals"} <= figs
    assert "Scores not available" in index.read_text(encoding="utf-8")
    with pytest.raises(VotebenchError, match="not in the store"):
        build_report(path, tmp_path / "r3", rules=["copeland"])


def test_store_interval_figure_is_ordered_by_its_rule(store, tmp_path, monkeypatch):
    """The interval figure of a stored bootstrap draws the first rule's systems best first by that rule's full-data rank."""
    path, _ = store
    drawn = []
    real = plots.rank_interval_figure

    def spy(rank, low, high, systems, *a, **kw):
        drawn.append((np.atleast_2d(rank)[0].copy(), list(systems)))
        return real(rank, low, high, systems, *a, **kw)

    monkeypatch.setattr(plots, "rank_interval_figure", spy)
    build_report(path, tmp_path / "r", formats=("png",), rules=["borda"], top_k=4)
    rank, systems = drawn[-1]
    ds = engine.sweep.open_results(path, "tiny/bootstrap-tasks").sel(rule="borda").compute()
    full = dict(zip([str(s) for s in ds["system"].values], ds["rank"].values))
    assert len(systems) == 4
    assert [full[s] for s in systems] == sorted(full[s] for s in systems) == sorted(full.values())[:4]
    np.testing.assert_array_equal(rank, [full[s] for s in systems])


# ---------------------------------------------------------------------------------------------
# issue 15, item 5: what the report says
# ---------------------------------------------------------------------------------------------
def wide_csv(path, X, *, meta=None):
    names = [f"sys{i:02d}" for i in range(X.shape[1])]
    lines = ["system," + ",".join(f"t{t}" for t in range(X.shape[0]))]
    lines += [names[i] + "," + ",".join(repr(float(v)) for v in X[:, i]) for i in range(X.shape[1])]
    path.write_text("\n".join(lines) + "\n")
    if meta is not None:
        path.with_name(path.name.replace(".csv", ".meta.json")).write_text(meta)
    return path, names


def report_text(index) -> str:
    """The page's text, tags removed."""
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", index.read_text(encoding="utf-8")))


def test_many_systems_over_few_tasks_use_wilcoxon_holm_and_say_so(tmp_path):
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(1)
    # noise 2: the average ranks of all 40 systems spread less than Nemenyi's CD (the choice reads all k, not the 30 shown)
    X = np.round(np.linspace(1, 0, 40)[None, :] + rng.normal(0, 2.0, size=(8, 40)), 3)
    csv_path, names = wide_csv(tmp_path / "many.csv", X)
    index = build_report(csv_path, tmp_path / "r", rules=["borda"], replicates=0, repeats=0, formats=("png",))
    page = report_text(index)
    assert "Post-hoc test: pairwise Wilcoxon signed-rank tests, Holm-corrected" in page
    assert "covers the whole spread of the average ranks (" in page  # of all 40 systems, not the 30 shown
    assert "cannot go below p = 0.0078" in page  # 2 / 2^8 with 8 tasks
    rows = list(csv.DictReader((index.parent / "tables" / "wilcoxon_holm.csv").open()))
    assert len(rows) == 40 * 39 // 2
    r = rows[0]
    i, j = names.index(r["system"]), names.index(r["opponent"])
    assert float(r["p"]) == pytest.approx(wilcoxon(X[:, i], X[:, j]).pvalue)


def test_few_systems_over_many_tasks_use_nemenyi(tmp_path):
    rng = np.random.default_rng(2)
    X = np.linspace(1, 0, 5)[None, :] + rng.normal(0, 0.2, size=(40, 5))
    csv_path, _ = wide_csv(tmp_path / "few.csv", X)
    index = build_report(csv_path, tmp_path / "r", rules=["borda"], replicates=0, repeats=0, formats=("png",))
    page = report_text(index)
    assert "Post-hoc test: Nemenyi" in page and "Critical difference (Friedman and Nemenyi)" in page
    assert not (index.parent / "tables" / "wilcoxon_holm.csv").exists()


def test_states_level_directions_kemeny_fallback_and_stability(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, size=(5, 14))
    csv_path, names = wide_csv(tmp_path / "k.csv", X)
    index = build_report(csv_path, tmp_path / "r", rules=["borda", "kemeny"], replicates=20, repeats=0, formats=("png",))
    page = report_text(index)
    assert "aggregation level" in page and "task: each rule ranks the per-task scores" in page
    assert "the default for task-level input" in page
    assert "No direction given for all 5 tasks" in page  # no sidecar, no --lower-is-better
    assert "kemeny: 14 ranked systems, more than the 12 solved exactly: the ranking is Borda's count" in page
    stab = {r["rule"]: r for r in csv.DictReader((index.parent / "tables" / "stability.csv").open())}
    assert set(stab) == {"mean", "borda", "kemeny"}
    boot = engine.bootstrap(engine.open_scores(csv_path), rule="borda", replicates=20, seed=0)
    summ = engine.summarize(boot)
    assert float(stab["borda"]["Kendall W"]) == pytest.approx(float(summ["kendall_w"]))
    assert float(stab["borda"]["mean Spearman"]) == pytest.approx(float(summ["mean_spearman"]))
    # a sidecar naming every task, or --lower-is-better, removes the note; the flag flips the direction
    flipped = build_report(csv_path, tmp_path / "r2", rules=["mean"], replicates=0, repeats=0, formats=("png",),
                           lower_is_better=[f"t{t}" for t in range(5)])
    assert "No direction given" not in report_text(flipped)
    ranks = {r["system"]: int(r["mean"]) for r in csv.DictReader((flipped.parent / "tables" / "rankings.csv").open())}
    mean = X.mean(axis=0)
    assert ranks[names[int(np.argmin(mean))]] == 1  # lower is better now
    with pytest.raises(VotebenchError, match="unknown task"):
        build_report(csv_path, tmp_path / "r3", rules=["mean"], replicates=0, repeats=0, lower_is_better=["nope"])


def test_candidate_bootstrap_intervals_in_the_report_are_pairwise_bounds(tmp_path):
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(6, 9))
    csv_path, names = wide_csv(tmp_path / "c.csv", X)
    index = build_report(csv_path, tmp_path / "r", rules=["borda"], replicates=30, repeats=0, over="systems",
                         formats=("png",))
    page = report_text(index)
    assert "rank range = ranks allowed by the pairwise orders" in page and "biased toward 1" in page
    boot = engine.bootstrap(engine.open_scores(csv_path), rule="borda", over="systems", replicates=30, seed=0)
    summ = engine.summarize(boot)
    low, high = engine.kernels.metrics.pairwise_rank_bounds(summ["score"].values, summ["prob_above"].values)
    rows = {(r["rule"], r["system"]): r for r in csv.DictReader((index.parent / "tables" / "intervals.csv").open())}
    for i, s in enumerate(names):
        assert (float(rows[("borda", s)]["rank_low"]), float(rows[("borda", s)]["rank_high"])) == (low[i], high[i])


def test_drop_judges_says_which_judges_it_left_out(tmp_path):
    X = np.arange(12.0).reshape(3, 4)
    X[1, 2] = np.nan
    csv_path, _ = wide_csv(tmp_path / "d.csv", X)
    index = build_report(csv_path, tmp_path / "r", rules=["borda"], missing="drop-judges", replicates=0, repeats=0,
                         formats=("png",))
    assert "Missing-score policy 'drop-judges' left out 1 task with a missing score: t1" in report_text(index)


def test_win_matrix_caption_matches_the_figure(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.uniform(0, 1, size=(4, 35))
    csv_path, _ = wide_csv(tmp_path / "w.csv", X)
    small = report_text(build_report(csv_path, tmp_path / "a", rules=["borda"], replicates=0, repeats=0, top_k=10,
                                     formats=("png",)))
    assert "numbers in the cells: tasks the row system wins" in small
    big = report_text(build_report(csv_path, tmp_path / "b", rules=["borda"], replicates=0, repeats=0, top_k=35,
                                   formats=("png",)))
    assert "the counts are in the win-count table" in big and "numbers in the cells" not in big


def test_win_matrix_prints_the_counts_it_promises():
    wins = np.array([[0.0, 3.0, 1.0], [1.0, 0.0, 2.0], [2.0, 1.0, 0.0]])
    fig = plots.win_matrix_figure(wins, np.zeros((3, 3)), ["a", "b", "c"], annotate=True)
    texts = sorted(t.get_text() for t in fig.axes[0].texts)
    assert texts == sorted(f"{v:g}" for i, row in enumerate(wins) for j, v in enumerate(row) if i != j)


def test_subset_curves_stay_in_taus_range():
    sizes = np.array([1, 2, 3])
    mean = np.array([[0.9, 0.95, 1.0], [-0.8, 0.2, 0.9]])
    std = np.array([[0.5, 0.3, 0.0], [0.6, 0.4, 0.1]])
    fig = plots.subset_curve_figure(sizes, mean, std, ["a", "b"])
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert -1.05 <= lo and hi <= 1.05
    for poly in ax.collections:  # the +-1 std bands
        ys = np.concatenate([p.vertices[:, 1] for p in poly.get_paths()])
        assert ys.min() >= -1.0 - 1e-12 and ys.max() <= 1.0 + 1e-12


def test_cd_figure_draws_the_cliques_it_is_given():
    fig = plots.critical_difference_figure(np.array([1.0, 2.0, 3.0, 4.0]), list("abcd"), cd=None,
                                           cliques=[(0, 1), (2, 3)])
    thick = [ln for ln in fig.axes[0].lines if ln.get_linewidth() > 2]
    assert len(thick) == 2
    spans = sorted((min(ln.get_xdata()), max(ln.get_xdata())) for ln in thick)
    assert spans[0][0] < 1.0 and 2.0 < spans[0][1] < 2.5  # a and b
    assert 2.5 < spans[1][0] < 3.0 and spans[1][1] > 4.0  # c and d


def test_report_of_a_table_where_every_system_ties(tmp_path, capsys):
    """Every system equal on every task: the Friedman statistic is undefined; the page says so (it used to crash)."""
    from conftest import run_cli

    csv = tmp_path / "tied.csv"
    csv.write_text("system,a,b,c\nx,1,1,1\ny,1,1,1\nz,1,1,1\n")
    code, _, err = run_cli(capsys, "report", csv, "--out", tmp_path / "rep")
    assert code == 0, err
    assert "Traceback" not in err and "Warning" not in err
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "Friedman test on these systems: not defined" in page
