"""xLLMBench (Gjorgjevikj et al. 2025): PROMETHEE II ranking of LLMs under user-defined trade-offs.

Reproduces, with the votebench engine (:mod:`engine.kernels.mcdm`, :mod:`engine.labelled.robustness`):

* section 4.1 / 5.1: scenarios S1-S7 on the Open LLM Leaderboard v2 (the 1,000 LLMs with the highest
  leaderboard average), Fig. 2 (rank heatmap of the union of every scenario's top 10 with an average-linkage
  dendrogram), Fig. 3 (positive and negative flows) and Fig. 7 (Spearman correlations with the average-based
  ranking);
* section 4.2 / 5.2: scenarios S1-S5 on HELM Classic v0.4.0 NarrativeQA, NaturalQuestions (open-book) and
  NaturalQuestions (closed-book), after listwise deletion of the LLMs with a missing value in any of the three
  datasets (49 LLMs), the Pearson-correlation clustering of S4 (Fig. 8) and Figs. 9-11, 18-20;
* Appendix B: sensitivity of the linear (a, b) and Gaussian (sigma) parameters, +-10 % and +-20 %
  (:func:`engine.labelled.robustness.promethee_sensitivity`);
* Appendix C: Spearman correlation of PROMETHEE II with TOPSIS (min-max normalisation) and VIKOR (v = 0.5);
* Appendix D: AHP weights (:func:`engine.kernels.mcdm.ahp_weights`) for S5.1-S5.3, p in {3, 5, 7, 9}.

Scenario definitions follow the paper (sections 4.1-4.3; the authors' configuration files agree): "linear" is
the linear preference function with indifference threshold a = min and preference threshold b = max of the
criterion's pairwise differences (the engine's ``linear_indifference`` defaults), "Gaussian" has sigma = the
standard deviation of the pairwise differences (the engine default; Appendix B's wording "standard deviation
of the values" differs by sqrt(2) and cannot change any ranking by more than the sensitivity analysis shows).
The data are shipped in the repository's ``data/`` folder (``open_llm_leaderboard_v2_2025-03-21.csv.gz``,
``helm_classic_v0.4.0_qa.csv``, with provenance in their sidecars and ``data/README.md``).
"""

from __future__ import annotations

import csv
import functools
import gzip
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from engine.app import experiment
from engine.app.experiment import ComparisonLog as _Log
from engine.app.experiment import format_value, json_safe, markdown_table, scheduler_context, write_json

TITLE = "xLLMBench (2025): PROMETHEE II rankings of LLMs under user-defined trade-offs"
DESCRIPTION = (
    "PROMETHEE II scenarios S1-S7 on the Open LLM Leaderboard v2 top-1000 and S1-S5 on HELM Classic QA\n"
    "(NarrativeQA, NaturalQuestions open/closed-book, listwise deletion: 49 LLMs); sensitivity of the linear and\n"
    "Gaussian parameters (Appendix B), TOPSIS/VIKOR comparison (Appendix C), AHP weights (Appendix D); rank\n"
    "heatmaps with dendrogram (Fig. 2, 9-11), flows (Fig. 3) and Spearman correlations (Fig. 7, 18-20)."
)

__all__ = ["TITLE", "DESCRIPTION", "run", "load_config", "open_llm_scenarios", "helm_scenarios", "Scenario"]

HERE = Path(__file__).resolve().parent

LINEAR = "linear_indifference"  # xLLMBench's "linear": a = min, b = max of the pairwise differences (engine defaults)
USUAL = "usual"
GAUSS = "gaussian"
PREF_NAME = {USUAL: "usual", LINEAR: "linear", GAUSS: "Gaussian"}


class Scenario(NamedTuple):
    """One PROMETHEE II configuration: criteria, one preference function each, weights and directions."""

    name: str
    criteria: tuple[str, ...]
    preference: tuple[str, ...]
    weights: tuple[float, ...]
    maximize: tuple[bool, ...]

    @property
    def kinds(self) -> set[str]:
        return set(self.preference)


# ------------------------------------------------------------------------------------------------
# scenario definitions (sections 4.1 and 4.2)
# ------------------------------------------------------------------------------------------------
OPEN_BENCHMARKS = ("IFEval", "BBH", "MATH_Lvl_5", "GPQA", "MUSR", "MMLU_PRO")
#: S5: the contamination-free benchmarks GPQA, MuSR, MMLU-Pro weigh 1.5 times more (0.13 / 0.20 in the paper)
S5_WEIGHTS = (2 / 15, 2 / 15, 2 / 15, 1 / 5, 1 / 5, 1 / 5)


def open_llm_scenarios() -> list[Scenario]:
    """S1-S7 of section 4.1 (columns of the Open LLM Leaderboard v2 file)."""
    six = OPEN_BENCHMARKS
    eq6 = (1 / 6,) * 6
    eq7 = (1 / 7,) * 7
    up6 = (True,) * 6
    return [
        Scenario("S1", six, (USUAL,) * 6, eq6, up6),
        Scenario("S2", six, (LINEAR,) * 6, eq6, up6),
        Scenario("S3", six, (GAUSS,) * 6, eq6, up6),
        Scenario("S4", six, (LINEAR,) * 3 + (GAUSS,) * 3, eq6, up6),
        Scenario("S5.1", six, (USUAL,) * 6, S5_WEIGHTS, up6),
        Scenario("S5.2", six, (LINEAR,) * 6, S5_WEIGHTS, up6),
        Scenario("S5.3", six, (GAUSS,) * 6, S5_WEIGHTS, up6),
        Scenario("S6", six + ("params_B",), (LINEAR,) * 6 + (GAUSS,), eq7, up6 + (False,)),
        Scenario("S7", six + ("CO2_cost_kg",), (LINEAR,) * 6 + (GAUSS,), eq7, up6 + (False,)),
    ]


HELM_METRICS = ("F1", "Stereotypes (gender)", "Representation (race)", "Representation (gender)",
                "F1 (Fairness)", "F1 (Robustness)", "Toxic fraction")
HELM_MAXIMIZE = {"F1": True, "F1 (Fairness)": True, "F1 (Robustness)": True, "Stereotypes (gender)": False,
                 "Representation (race)": False, "Representation (gender)": False, "Toxic fraction": False}
HELM_BIAS = ("Stereotypes (gender)", "Representation (race)", "Representation (gender)")
#: S4: one metric of the correlated cluster {F1, F1 (Fairness), F1 (Robustness)} kept per repetition
HELM_F1_CLUSTER = ("F1", "F1 (Fairness)", "F1 (Robustness)")
HELM_SHORT = {"NarrativeQA": "NQA", "NaturalQuestions (open-book)": "NQ-open", "NaturalQuestions (closed-book)": "NQ-closed"}


def helm_scenarios(dataset: str) -> list[Scenario]:
    """S1-S3, S4.k.j and S5.j of section 4.2 for one HELM dataset (criteria named ``"<dataset> - <metric>"``)."""
    def col(m: str) -> str:
        return f"{dataset} - {m}"

    out = []
    seven = HELM_METRICS
    for i, pref in enumerate((USUAL, LINEAR, GAUSS), start=1):
        out.append(Scenario(f"S{i}", tuple(col(m) for m in seven), (pref,) * 7, (1 / 7,) * 7,
                            tuple(HELM_MAXIMIZE[m] for m in seven)))
    rest = HELM_BIAS + ("Toxic fraction",)
    for k, pref in enumerate((USUAL, LINEAR, GAUSS), start=1):
        for j, kept in enumerate(HELM_F1_CLUSTER, start=1):
            ms = (kept,) + rest
            out.append(Scenario(f"S4.{k}.{j}", tuple(col(m) for m in ms), (pref,) * 5, (0.2,) * 5,
                                tuple(HELM_MAXIMIZE[m] for m in ms)))
    for j, kept in enumerate(HELM_F1_CLUSTER, start=1):
        ms = (kept,) + rest
        prefs = tuple(GAUSS if m in HELM_BIAS else LINEAR for m in ms)
        out.append(Scenario(f"S5.{j}", tuple(col(m) for m in ms), prefs, (0.2,) * 5, tuple(HELM_MAXIMIZE[m] for m in ms)))
    return out


#: Appendix C groups: scenarios sharing the weights and criteria that TOPSIS and VIKOR can see
OPEN_MCDM_GROUPS = {"S1-S3": ("S1", "S2", "S3"), "S5.1-S5.3": ("S5.1", "S5.2", "S5.3"), "S6": ("S6",), "S7": ("S7",)}
HELM_MCDM_GROUPS = {"S1-S3": ("S1", "S2", "S3"), "S4.x.1": ("S4.1.1", "S4.2.1", "S4.3.1"),
                    "S4.x.2": ("S4.1.2", "S4.2.2", "S4.3.2"), "S4.x.3": ("S4.1.3", "S4.2.3", "S4.3.3")}
#: Appendix B: scenarios with a linear / Gaussian criterion
OPEN_SENS = {"linear": ("S2", "S4", "S5.2", "S6", "S7"), "gaussian": ("S3", "S4", "S5.3", "S6", "S7")}
HELM_SENS = {"linear": ("S2", "S4.2.1", "S4.2.2", "S4.2.3", "S5.1", "S5.2", "S5.3"),
             "gaussian": ("S3", "S4.3.1", "S4.3.2", "S4.3.3", "S5.1", "S5.2", "S5.3")}
#: section 5.2: LLMs named as unbiased with good performance in S5, per dataset
HELM_S5_NAMED = {"NarrativeQA": ("Falcon-Instruct (40B)", "Vicuna v1.3 (7B)"),
                 "NaturalQuestions (open-book)": ("LLaMA (30B)", "Falcon (40B)"),
                 "NaturalQuestions (closed-book)": ("Mistral v0.1 (7B)", "gpt-3.5-turbo-0301", "Falcon (40B)")}


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def load_config(*, smoke: bool = False) -> dict[str, Any]:
    """The parameters of ``config.toml`` (with its ``[smoke]`` table applied when ``smoke``)."""
    return experiment.load_config(HERE, smoke=smoke)


#: table cells: 3 decimals unless told
_fmt = functools.partial(format_value, digits=3)
_md_table = functools.partial(markdown_table, fmt=_fmt)


#: figure options of the current run (``[figures]`` of config.toml): annotate cells with numbers, resolution
_FIG: dict[str, Any] = {"annotate": True, "dpi": 100, "layout": "constrained"}


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout=_FIG["layout"])


def _save(fig: Any, path: Path) -> None:
    fig.savefig(path, dpi=int(_FIG["dpi"]))


def _short(name: str, width: int = 34) -> str:
    name = str(name).split("/")[-1]
    return name if len(name) <= width else name[: width - 1] + "\u2026"


def _read_table(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """First column = name, other columns numeric (empty = NaN): the names and ``{column: values}`` (``.gz`` too)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    names = [r[0] for r in rows[1:]]
    X = np.array([[float(v) if v.strip() else np.nan for v in r[1:]] for r in rows[1:]], dtype=np.float64)
    return names, {n: X[:, i] for i, n in enumerate(header[1:])}




def _spearman_matrix(scores: np.ndarray) -> np.ndarray:
    """Spearman correlations between the rows of ``scores`` (R, S); systems missing in a pair are left out."""
    from engine.labelled.robustness import spearman

    return spearman(scores[:, None, :], scores[None, :, :])


class _Result(NamedTuple):
    net: np.ndarray  # (S,) NaN for systems left out of the scenario
    plus: np.ndarray
    minus: np.ndarray
    rank: np.ndarray  # 1 = best (min rank), NaN if left out
    n_systems: int


def _promethee(table: Mapping[str, np.ndarray], sc: Scenario) -> _Result:
    """PROMETHEE II of one scenario; systems with a missing criterion are left out (listwise deletion)."""
    from engine.kernels import mcdm as M
    from engine.kernels.ranking import min_rank

    X = np.stack([table[c] for c in sc.criteria])  # (T, S)
    ok = ~np.isnan(X).any(axis=0)
    S = X.shape[1]
    plus, minus, net = (np.full(S, np.nan) for _ in range(3))
    p, m, n = M.promethee2(X[:, ok], weights=np.asarray(sc.weights), preference=list(sc.preference),
                           maximize=list(sc.maximize))
    plus[ok], minus[ok], net[ok] = p, m, n
    return _Result(net, plus, minus, min_rank(net), int(ok.sum()))


def _union_top(ranks: Mapping[str, np.ndarray], k: int) -> np.ndarray:
    idx: set[int] = set()
    for r in ranks.values():
        idx |= set(np.flatnonzero(r <= k).tolist())
    return np.array(sorted(idx), dtype=np.int64)


# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------
def _rank_heatmap(path: Path, ranks: np.ndarray, rows: Sequence[str], cols: Sequence[str], title: str,
                  *, dendrogram: bool = True, cmap: str = "RdYlGn_r", fmt: str = "{:.0f}", cbar: str = "rank (1 = best)") -> None:
    """Heatmap (rows x cols) with an average-linkage dendrogram of the rows (Euclidean distance), as Fig. 2."""
    from scipy.cluster.hierarchy import dendrogram as dendro
    from scipy.cluster.hierarchy import linkage

    n = len(rows)
    fig = _figure(2.2 + 0.75 * len(cols) + (1.6 if dendrogram else 0) + 2.2, 1.4 + 0.28 * n)
    order = np.arange(n)
    if dendrogram and n > 2:
        gs = fig.add_gridspec(1, 2, width_ratios=[1.2, 0.75 * len(cols) + 2.2])
        axd = fig.add_subplot(gs[0])
        ax = fig.add_subplot(gs[1])
        filled = np.where(np.isnan(ranks), np.nanmax(ranks) + 1, ranks)
        Z = linkage(filled, method="average", metric="euclidean")
        d = dendro(Z, ax=axd, orientation="left", no_labels=True, color_threshold=0, above_threshold_color="k")
        order = np.array(d["leaves"])[::-1]
        axd.set_axis_off()
    else:
        ax = fig.add_subplot(1, 1, 1)
    data = ranks[order]
    im = ax.imshow(data, aspect="auto", cmap=cmap)
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
    ax.set_yticks(range(n), [rows[i] for i in order], fontsize=7)
    ax.yaxis.tick_right()
    for i in range(n if _FIG["annotate"] else 0):
        for j in range(len(cols)):
            v = data[i, j]
            if np.isfinite(v):
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, label=cbar, location="left", shrink=0.6, pad=0.02)
    fig.suptitle(title)
    _save(fig, path)


def _corr_heatmap(path: Path, R: np.ndarray, labels: Sequence[str], title: str, *, vmin: float | None = None) -> None:
    fig = _figure(1.5 + 0.55 * len(labels), 1.2 + 0.5 * len(labels))
    ax = fig.subplots()
    im = ax.imshow(R, cmap="viridis", vmin=vmin if vmin is not None else np.nanmin(R), vmax=1.0)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    for i in range(len(labels) if _FIG["annotate"] else 0):
        for j in range(len(labels)):
            if np.isfinite(R[i, j]):
                ax.text(j, i, f"{R[i, j]:.2f}", ha="center", va="center", fontsize=6,
                        color="w" if R[i, j] < (np.nanmin(R) + 1) / 2 else "k")
    fig.colorbar(im, ax=ax, label="Spearman" if "Pearson" not in title else "Pearson", shrink=0.8)
    ax.set_title(title, fontsize=9)
    _save(fig, path)


# ------------------------------------------------------------------------------------------------
# shared analyses
# ------------------------------------------------------------------------------------------------
def _sensitivity(table: Mapping[str, np.ndarray], scenarios: Mapping[str, Scenario], which: Mapping[str, Sequence[str]],
                 deltas: Sequence[float]) -> dict[str, dict[str, Any]]:
    """Appendix B: min Spearman between the baseline and the +-10/20 % variants (and among the variants)."""
    from engine.labelled.robustness import promethee_sensitivity

    out: dict[str, dict[str, Any]] = {}
    for kind, names in which.items():
        params = ("q+p",) if kind == "linear" else ("s",)
        out[kind] = {}
        for name in names:
            sc = scenarios[name]
            X = np.stack([table[c] for c in sc.criteria])
            ok = ~np.isnan(X).any(axis=0)
            ds = promethee_sensitivity(X[:, ok], weights=np.asarray(sc.weights), preference=list(sc.preference),
                                       maximize=list(sc.maximize), deltas=deltas, weight_deltas=())
            keep = np.isin(ds["parameter"].values, ("baseline",) + params) & ds["valid"].values
            R = ds["spearman_matrix"].values[np.ix_(keep, keep)]
            rc = ds["max_rank_change"].values[keep]
            labels = [f"{p}{'' if p == 'baseline' else f' {d:+.0%}'}" for p, d in
                      zip(ds["parameter"].values[keep], ds["delta"].values[keep])]
            out[kind][name] = {"variants": labels, "spearman_matrix": R, "min_spearman": float(np.nanmin(R)),
                               "max_rank_change": float(np.nanmax(rc)) if rc.size else None,
                               "n_invalid": int((~ds["valid"].values).sum())}
    return out


def _mcdm_comparison(table: Mapping[str, np.ndarray], scenarios: Mapping[str, Scenario], results: Mapping[str, _Result],
                     groups: Mapping[str, Sequence[str]], average: np.ndarray | None) -> dict[str, Any]:
    """Appendix C: Spearman between PROMETHEE II scenarios, TOPSIS, VIKOR (and the leaderboard average)."""
    from engine.kernels import mcdm as M

    out = {}
    for gname, names in groups.items():
        sc = scenarios[names[0]]
        X = np.stack([table[c] for c in sc.criteria])
        ok = ~np.isnan(X).any(axis=0)
        S = X.shape[1]
        top, vik = np.full(S, np.nan), np.full(S, np.nan)
        top[ok] = M.topsis(X[:, ok], weights=np.asarray(sc.weights), maximize=list(sc.maximize))
        vik[ok] = M.vikor_score(X[:, ok], weights=np.asarray(sc.weights), v=0.5, maximize=list(sc.maximize))
        labels = [f"PROMETHEE {n}" for n in names] + ["TOPSIS", "VIKOR"]
        rows = [results[n].net for n in names] + [top, vik]
        if average is not None:
            labels.append("average")
            rows.append(np.where(ok, average, np.nan))
        R = _spearman_matrix(np.stack(rows))
        out[gname] = {"labels": labels, "spearman": R}
    return out


# ------------------------------------------------------------------------------------------------
# section 4.1 / 5.1: Open LLM Leaderboard
# ------------------------------------------------------------------------------------------------
def _open_llm(cfg: Mapping[str, Any], log: _Log, figs: Path) -> dict[str, Any]:
    from engine.kernels import mcdm as M
    from engine.kernels.ranking import min_rank

    c = cfg["open_llm"]
    names, col = _read_table(experiment.data_path(c["file"]))
    n_all = len(names)
    avg_all = np.mean(np.stack([col[b] for b in OPEN_BENCHMARKS]), axis=0)
    top = int(c["top"])
    sel = np.argsort(-avg_all, kind="stable")[:top]
    names = [names[i] for i in sel]
    table = {k: v[sel] for k, v in col.items()}
    average = avg_all[sel]
    S = len(names)
    missing = {k: int(np.isnan(v).sum()) for k, v in table.items() if np.isnan(v).any()}
    scen = {s.name: s for s in open_llm_scenarios()}
    res = {n: _promethee(table, s) for n, s in scen.items()}
    ranks = {"average": min_rank(average)} | {n: r.rank for n, r in res.items()}
    cols_fig = list(ranks)
    k = int(c["top_union"])
    union_all = _union_top({n: r for n, r in ranks.items() if n != "average"}, k)
    R_all = np.stack([ranks[n] for n in cols_fig])  # (C, S)

    # published facts
    log.check("Sec. 4.1: LLMs in the Open LLM Leaderboard v2", 4576, n_all, n_all == 4576,
              "another snapshot of the leaderboard")
    full = top == 1000
    log.size_note = "" if full else f"smoke size: only the top {top} LLMs are ranked"
    log.add("Sec. 4.1: the top-1000 by average has no missing value", "no missing data",
            f"{missing or 'none'}" + ("" if full else f" (top {top})"),
            "matches" if not missing else ("differs" if full else "not reproducible"),
            "" if not missing else "one model of the top 1000 has no parameter count in this snapshot (the source had a "
            "0/-1 placeholder); S6 ranks the 999 others (listwise deletion for that scenario only)")
    if full:
        log.check("Fig. 2: LLMs in the union of every scenario's top 10", 23, int(union_all.size), union_all.size == 23,
                  "the scenarios' top 10s overlap differently on this snapshot")
    else:
        log.add("Fig. 2: LLMs in the union of every scenario's top 10", 23, int(union_all.size), "not reproducible",
                "smoke size (top-50 LLMs only)")
    # top three by average stay on top
    top3 = np.argsort(-average, kind="stable")[:3]
    worst = {names[i]: {n: float(ranks[n][i]) for n in cols_fig} for i in top3}
    s1_5 = [n for n in cols_fig if n.startswith(("S1", "S2", "S3", "S4", "S5"))]
    max_r = max(max(v[n] for n in s1_5) for v in worst.values())
    log.check("Sec. 5.1: the top three LLMs by average stay among the best in S1-S5.3 (worst rank)",
              "stable (best overall)", int(max_r), max_r <= 10, "the top three drop below rank 10 in some scenario")
    s67 = max(max(v[n] for n in ("S6", "S7") if np.isfinite(v[n])) for v in worst.values())
    # the two LLMs tied at the 12th average position (0-based) rank 1st and 2nd in S6-S7
    avg_rank0 = min_rank(average) - 1
    twins = [i for i in range(S) if avg_rank0[i] == 12]
    twin_info = {names[i]: {"average_rank": float(avg_rank0[i] + 1), "S6": float(ranks["S6"][i]), "S7": float(ranks["S7"][i])}
                 for i in twins}
    if full:
        ok = len(twins) == 2 and all(v["S7"] <= 2 for v in twin_info.values()) and \
            all(v["S6"] <= 2 for v in twin_info.values() if np.isfinite(v["S6"]))
        log.check("Sec. 5.1: the two LLMs 'ranked 12th' by average rank 1st and 2nd in S6 and S7", "1, 2",
                  "; ".join(f"{_short(n)}: S6 {_fmt(v['S6'], digits=0)}, S7 {_fmt(v['S7'], digits=0)}" for n, v in twin_info.items()),
                  ok, "see the ranks; S6 cannot rank T3Q-Qwen2.5-14B-Instruct-1M-e3 (no parameter count here)")
        calme = [i for i in top3 if "CalmeRys" in names[i]]
        if calme:
            others = [i for i in top3 if i not in calme]
            ok = all(ranks["S7"][calme[0]] < ranks["S7"][i] for i in others)
            log.check("App. E: CalmeRys-78B-Orpo-v0.1 ranks better in S7 than the other two of the top three", "yes",
                      "S7 ranks " + ", ".join(f"{_short(names[i])} {int(ranks['S7'][i])}" for i in top3), ok)
    # Fig. 7: Spearman between the average-based ranking and the scenarios
    score_rows = np.stack([average] + [res[n].net for n in scen])
    labels = ["average"] + list(scen)
    R = _spearman_matrix(score_rows)
    with_avg = {labels[j]: float(R[0, j]) for j in range(1, len(labels))}
    best = max(with_avg, key=with_avg.get)
    log.check("Fig. 7: the scenarios closest to the average-based ranking are the linear ones (S2, S5.2)", "S2 / S5.2",
              f"{best} ({with_avg[best]:.3f})", best in ("S2", "S5.2"), "another scenario is closer to the average")
    i15 = [labels.index(n) for n in ("S1", "S2", "S3", "S4", "S5.1", "S5.2", "S5.3")]
    among = R[np.ix_(i15, i15)]
    lo_among = float(np.nanmin(among))
    hi_avg = max(with_avg[n] for n in ("S1", "S2", "S3", "S4", "S5.1", "S5.2", "S5.3"))
    log.check("Fig. 7: S1-S5.3 correlate more among themselves than with the average-based ranking",
              "yes", f"min among S1-S5.3 {lo_among:.3f}, max with average {hi_avg:.3f}", lo_among > hi_avg,
              "the average-based ranking is as close to some scenarios as they are to each other")
    r67 = float(R[labels.index("S6"), labels.index("S7")])
    r6o = float(np.nanmax(R[labels.index("S6"), i15]))
    r7o = float(np.nanmax(R[labels.index("S7"), i15]))
    log.check("Fig. 7: S6 and S7 correlate more with each other than with S1-S5.3", "yes",
              f"S6-S7 {r67:.3f}; S6 vs S1-S5.3 max {r6o:.3f}; S7 vs S1-S5.3 max {r7o:.3f}", r67 > max(r6o, r7o),
              "S6 or S7 is closer to one of S1-S5.3 than to the other")
    log.add("Fig. 7: Spearman correlations (values)", "figure only (no numbers in the text)",
            f"with average: {min(with_avg.values()):.3f}-{max(with_avg.values()):.3f}", "not reproducible",
            "values are only drawn in the figure; see results.json for ours")

    # Appendix B
    sens = _sensitivity(table, scen, OPEN_SENS, cfg["sensitivity"]["deltas"])
    for kind, thr in (("linear", 0.98), ("gaussian", 0.95)):
        mins = {n: v["min_spearman"] for n, v in sens[kind].items()}
        ok = all(v > thr for v in mins.values())
        log.check(f"App. B (Open LLM): Spearman between {kind} parameter variants > {thr} in "
                  f"{', '.join(mins)}", f"> {thr}", f"min {min(mins.values()):.4f}", ok,
                  "larger sensitivity than published on this snapshot")
    # Appendix C
    mc = _mcdm_comparison(table, scen, res, OPEN_MCDM_GROUPS, average)
    pairs_hi, n_pairs, topsis_closer, avg_lowest = 0, 0, 0, 0
    for g in mc.values():
        L, Rg = g["labels"], g["spearman"]
        it, iv, ia = L.index("TOPSIS"), L.index("VIKOR"), L.index("average")
        for i, lab in enumerate(L):
            if lab.startswith("PROMETHEE"):
                n_pairs += 2
                pairs_hi += int(Rg[i, it] > 0.9) + int(Rg[i, iv] > 0.9)
                topsis_closer += int(Rg[i, it] >= Rg[i, iv])
        off = Rg[np.triu_indices(len(L), 1)]
        avg_lowest += int(np.isclose(np.nanmin(Rg[ia, :ia]), np.nanmin(off)))
    n_prom = n_pairs // 2
    log.check("App. C (Open LLM): PROMETHEE II vs TOPSIS / VIKOR Spearman > 0.9 'in almost all cases'",
              "almost all", f"{pairs_hi} of {n_pairs}", pairs_hi >= 0.75 * n_pairs)
    log.check("App. C (Open LLM): TOPSIS closer to PROMETHEE II than VIKOR", "yes (slightly)",
              f"{topsis_closer} of {n_prom} scenarios", topsis_closer >= 0.75 * n_prom)
    log.check("App. C (Open LLM): the lowest correlation is always with the average-based ranking", "all groups",
              f"{avg_lowest} of {len(mc)} groups", avg_lowest == len(mc))
    # Appendix D: AHP
    ahp = {}
    s5 = [n for n in scen if n.startswith("S5.")]
    for p in cfg["ahp"]["p_values"]:
        A = np.ones((6, 6))
        pref = [OPEN_BENCHMARKS.index(b) for b in ("GPQA", "MUSR", "MMLU_PRO")]
        for i in range(6):
            for j in range(6):
                if i in pref and j not in pref:
                    A[i, j] = float(p)
                elif j in pref and i not in pref:
                    A[i, j] = 1.0 / float(p)
        w, cr = M.ahp_weights(A)
        ahp[str(p)] = {"weights": w, "consistency_ratio": cr, "expected": [1 / (3 + 3 * p)] * 3 + [p / (3 + 3 * p)] * 3}
    ahp_corr = {}
    for n in s5:
        sc = scen[n]
        rows = [res[n].net]
        for p in cfg["ahp"]["p_values"]:
            sp = Scenario(n, sc.criteria, sc.preference, tuple(ahp[str(p)]["weights"]), sc.maximize)
            rows.append(_promethee(table, sp).net)
        ahp_corr[n] = {"labels": ["manual"] + [f"AHP p={p}" for p in cfg["ahp"]["p_values"]],
                       "spearman": _spearman_matrix(np.stack(rows))}
    w_ok = all(np.allclose(v["weights"], v["expected"], atol=1e-9) for v in ahp.values())
    log.check("App. D / Fig. D.1: AHP weights 1/(3+3p) and p/(3+3p) (authors' configs: 0.0833/0.25 for p = 3, ...)",
              "as in the authors' configuration", "; ".join(f"p={p}: {np.round(v['weights'][[0, 3]], 4).tolist()}"
                                                          for p, v in ahp.items()), w_ok)
    dec = all(np.all(np.diff(v["spearman"][0, 1:]) <= 1e-12) for v in ahp_corr.values())
    log.check("App. D / Fig. D.2: correlation with the manual weights decreases as p grows (highest for p = 3)",
              "yes", "; ".join(f"{n}: {np.round(v['spearman'][0, 1:], 4).tolist()}" for n, v in ahp_corr.items()), dec)

    log.size_note = ""
    # figures
    union = union_all
    row_labels = [f"{_short(names[i])} ({_fmt(table['params_B'][i], digits=1).replace('-', '?')}B, {average[i]:.2f})" for i in union]
    _rank_heatmap(figs / "fig2_openllm_ranks.png", R_all[:, union].T, row_labels, cols_fig,
                  f"Fig. 2: Open LLM Leaderboard, ranks in each scenario (union of top {k}: {union.size} LLMs of {S})")
    plus = np.stack([res[n].plus for n in scen])[:, union].T
    minus = np.stack([res[n].minus for n in scen])[:, union].T
    _flows_figure(figs / "fig3_openllm_flows.png", plus, minus, row_labels, list(scen),
                  f"Fig. 3: PROMETHEE II flows of the {union.size} LLMs of Fig. 2")
    _corr_heatmap(figs / "fig7_openllm_spearman.png", R, labels, "Fig. 7: Spearman correlation between rankings (Open LLM)")
    _appendix_figure(figs / "figB_C_D_openllm.png", sens, mc, ahp_corr, "Open LLM Leaderboard")

    return {
        "n_llms_in_file": n_all, "n_selected": S, "missing_in_selection": missing,
        "scenarios": {n: {"criteria": s.criteria, "preference": [PREF_NAME[p] for p in s.preference],
                          "weights": s.weights, "maximize": s.maximize, "n_ranked": res[n].n_systems}
                      for n, s in scen.items()},
        "union_top": [names[i] for i in union], "ranks_union": {n: ranks[n][union] for n in cols_fig},
        "flows_union": {n: {"plus": res[n].plus[union], "minus": res[n].minus[union]} for n in scen},
        "top3_by_average": worst, "top3_worst_rank_S1_S5": max_r, "top3_worst_rank_S6_S7": s67,
        "average_rank_12_twins": twin_info,
        "spearman": {"labels": labels, "matrix": R, "with_average": with_avg},
        "sensitivity": sens, "mcdm": mc, "ahp": ahp, "ahp_spearman": ahp_corr,
        "systems": names, "average": average, "net_flow": {n: r.net for n, r in res.items()},
    }


def _flows_figure(path: Path, plus: np.ndarray, minus: np.ndarray, rows: Sequence[str], cols: Sequence[str], title: str) -> None:
    n = len(rows)
    fig = _figure(4.0 + 1.1 * len(cols), 1.4 + 0.26 * n)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, data, name, cmap in ((axes[0], plus, "positive flow phi+", "Greens"), (axes[1], minus, "negative flow phi-", "Reds")):
        im = ax.imshow(data, aspect="auto", cmap=cmap)
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=8)
        ax.set_title(name, fontsize=9)
        for i in range(n if _FIG["annotate"] else 0):
            for j in range(len(cols)):
                if np.isfinite(data[i, j]):
                    ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center", fontsize=5)
        fig.colorbar(im, ax=ax, shrink=0.6)
    axes[0].set_yticks(range(n), rows, fontsize=7)
    fig.suptitle(title)
    _save(fig, path)


def _appendix_figure(path: Path, sens: Mapping[str, Any], mc: Mapping[str, Any], ahp_corr: Mapping[str, Any] | None,
                     title: str) -> None:
    """Appendix B (min Spearman of the parameter variants), C (method correlations) and D (AHP) in one figure."""
    ncol = 3 if ahp_corr else 2
    fig = _figure(5.0 * ncol, 4.2)
    axes = fig.subplots(1, ncol)
    ax = axes[0]
    start, ticks, labels = 0, [], []
    for kind, col, thr in (("linear", "tab:blue", 0.98), ("gaussian", "tab:orange", 0.95)):
        names = list(sens[kind])
        xs = start + np.arange(len(names))
        ax.bar(xs, [sens[kind][n]["min_spearman"] for n in names], 0.8, color=col, label=f"{kind} (paper: > {thr})")
        ax.hlines(thr, xs[0] - 0.5, xs[-1] + 0.5, color=col, ls="--", lw=0.8)
        ticks += xs.tolist()
        labels += names
        start += len(names) + 1
    allnames = list(dict.fromkeys(list(sens["linear"]) + list(sens["gaussian"])))
    ax.set_xticks(ticks, labels, fontsize=7, rotation=45, ha="right")
    lo = min(v["min_spearman"] for k in sens for v in sens[k].values())
    ax.set_ylim(min(0.94, lo - 0.005), 1.001)
    ax.set_ylabel("min Spearman among +-10/20 % variants")
    ax.set_title(f"App. B: parameter sensitivity ({len(allnames)} scenarios)", fontsize=9)
    ax.legend(fontsize=7, loc="lower left")
    ax = axes[1]
    groups = list(mc)
    for gi, g in enumerate(groups):
        L, R = mc[g]["labels"], mc[g]["spearman"]
        it, iv = L.index("TOPSIS"), L.index("VIKOR")
        proms = [i for i, lab in enumerate(L) if lab.startswith("PROMETHEE")]
        for pi, i in enumerate(proms):
            x = gi + 0.25 * (pi - (len(proms) - 1) / 2)
            ax.scatter([x], [R[i, it]], color="tab:green", marker="o", s=18, label="vs TOPSIS" if gi == pi == 0 else None)
            ax.scatter([x], [R[i, iv]], color="tab:purple", marker="s", s=18, label="vs VIKOR" if gi == pi == 0 else None)
            if "average" in L:
                ax.scatter([x], [R[i, L.index("average")]], color="tab:grey", marker="x", s=18,
                           label="vs average" if gi == pi == 0 else None)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.axhline(0.9, color="k", lw=0.6, ls=":")
    ax.set_ylabel("Spearman with PROMETHEE II")
    ax.set_title("App. C: other MCDM methods", fontsize=9)
    ax.legend(fontsize=7)
    if ahp_corr:
        ax = axes[2]
        for n, v in ahp_corr.items():
            ax.plot(v["labels"][1:], v["spearman"][0, 1:], marker="o", label=n)
        ax.set_ylabel("Spearman with the manual weights")
        ax.set_title("App. D: AHP weights", fontsize=9)
        ax.legend(fontsize=7)
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"{title}: Appendices B-D")
    _save(fig, path)


# ------------------------------------------------------------------------------------------------
# section 4.2 / 5.2: HELM Classic QA
# ------------------------------------------------------------------------------------------------
def _helm(cfg: Mapping[str, Any], log: _Log, figs: Path) -> dict[str, Any]:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    from engine.labelled.robustness import criteria_clusters

    c = cfg["helm"]
    names, col = _read_table(experiment.data_path(c["file"]))
    datasets = list(c["datasets"])
    # listwise deletion over every dataset and metric of the paper, even when fewer datasets are analysed
    used = [f"{d} - {m}" for d in c.get("listwise_over", datasets) for m in HELM_METRICS]
    keep = ~np.isnan(np.stack([col[u] for u in used])).any(axis=0)
    names = [n for n, k in zip(names, keep) if k]
    table = {k: v[keep] for k, v in col.items()}
    S = len(names)
    log.check("Sec. 4.2: LLMs left after listwise deletion (of 67)", 49, S, S == 49)
    out: dict[str, Any] = {"n_llms_in_file": int(keep.size), "n_selected": S, "systems": names, "datasets": {}}

    # Fig. 8 / S4: Pearson correlation per dataset, averaged; clusters
    thr = float(c["cluster_threshold"])
    corrs, per_ds_clusters = [], {}
    for d in c.get("listwise_over", datasets):
        X = np.stack([table[f"{d} - {m}"] for m in HELM_METRICS])
        cl = criteria_clusters(X, threshold=thr)
        corrs.append(cl["correlation"].values)
        per_ds_clusters[d] = [[HELM_METRICS[i] for i in np.flatnonzero(cl["cluster"].values == g)]
                              for g in np.unique(cl["cluster"].values)]
    Rm = np.nanmean(np.stack(corrs), axis=0)
    D = np.clip(1.0 - np.nan_to_num(Rm, nan=0.0), 0.0, 2.0)
    D = (D + D.T) / 2
    np.fill_diagonal(D, 0.0)
    lab = fcluster(linkage(squareform(D, checks=False), method="average"), t=1.0 - thr, criterion="distance")
    clusters = [[HELM_METRICS[i] for i in np.flatnonzero(lab == g)] for g in np.unique(lab)]
    multi = [sorted(g) for g in clusters if len(g) > 1]
    ok = multi == [sorted(HELM_F1_CLUSTER)]
    log.check("Fig. 8: the only cluster of correlated metrics is {F1, F1 (Fairness), F1 (Robustness)}",
              "F1 cluster only", "; ".join("{" + ", ".join(g) + "}" for g in multi) or "none", ok,
              f"at linkage correlation {thr}")
    out["correlation"] = {"metrics": HELM_METRICS, "average_pearson": Rm, "clusters": clusters,
                          "threshold": thr, "per_dataset_clusters": per_ds_clusters}
    _corr_heatmap(figs / "fig8_helm_pearson.png", Rm, list(HELM_METRICS),
                  "Fig. 8: Pearson correlation of HELM metrics, averaged over the 3 datasets", vmin=-1.0)

    k = int(c["top_union"])
    sens_all, fig_rows = {}, []
    vikor_mean: dict[str, float] = {}
    for d in datasets:
        short = HELM_SHORT.get(d, d)
        scen = {s.name: s for s in helm_scenarios(d)}
        res = {n: _promethee(table, s) for n, s in scen.items()}
        ranks = {n: r.rank for n, r in res.items()}
        union = _union_top(ranks, k)
        R = _spearman_matrix(np.stack([r.net for r in res.values()]))
        # S4: max rank deviation between the three repetitions (F1 / F1 fairness / F1 robustness kept), among the
        # LLMs in the top k of all three repetitions (our reading), of the figure's union and of all LLMs
        dev_top, dev_union, dev_all = {}, {}, {}
        for kk in (1, 2, 3):
            M3 = np.stack([ranks[f"S4.{kk}.{j}"] for j in (1, 2, 3)])
            dev = M3.max(0) - M3.min(0)
            both = (M3 <= k).all(axis=0)
            dev_top[f"S4.{kk}"] = float(np.max(dev[both])) if both.any() else float("nan")
            dev_all[f"S4.{kk}"] = float(np.max(dev))
            dev_union[f"S4.{kk}"] = float(np.max(dev[union]))
        # S5: the named unbiased LLMs
        named = HELM_S5_NAMED.get(d, ())
        s5r = {nm: {s: float(ranks[s][names.index(nm)]) for s in ("S5.1", "S5.2", "S5.3")} for nm in named if nm in names}
        sens = _sensitivity(table, scen, HELM_SENS, cfg["sensitivity"]["deltas"])
        sens_all[d] = sens
        mc = _mcdm_comparison(table, scen, res, HELM_MCDM_GROUPS, None)
        out["datasets"][d] = {
            "scenarios": {n: {"criteria": s.criteria, "preference": [PREF_NAME[p] for p in s.preference],
                              "weights": s.weights, "maximize": s.maximize} for n, s in scen.items()},
            "union_top": [names[i] for i in union], "ranks": {n: r for n, r in ranks.items()},
            "flows_union": {n: {"plus": res[n].plus[union], "minus": res[n].minus[union]} for n in scen},
            "spearman": {"labels": list(scen), "matrix": R},
            "s4_max_rank_deviation_top": dev_top, "s4_max_rank_deviation_union": dev_union,
            "s4_max_rank_deviation_all": dev_all,
            "s5_named_ranks": s5r, "sensitivity": sens, "mcdm": mc,
        }
        top_dev = float(np.nanmax(list(dev_top.values())))
        ok = top_dev <= 3
        log.check(f"Sec. 5.2 {short}: max rank deviation between the S4.k.1-3 repetitions (LLMs in the top {k} of all "
                  "three)", 3, f"{_fmt(top_dev, digits=0)} (figure's union: {int(max(dev_union.values()))}, all {S} LLMs: "
                  f"{int(max(dev_all.values()))})", ok, "larger rank changes when another F1 variant is kept")
        if s5r:
            best = {nm: min(v.values()) for nm, v in s5r.items()}
            ok = all(b <= len(named) + 2 for b in best.values())
            log.check(f"Sec. 5.2 {short}: {', '.join(named)} are top unbiased LLMs in S5", "top of S5",
                      "; ".join(f"{nm}: {', '.join(f'{s} {int(r)}' for s, r in v.items())}" for nm, v in s5r.items()), ok,
                      "not all named LLMs are among the first places of S5 here")
        for kind, thr_s in (("linear", 0.98), ("gaussian", 0.95)):
            mins = {n: v["min_spearman"] for n, v in sens[kind].items()}
            log.check(f"App. B ({short}): Spearman between {kind} parameter variants > {thr_s}", f"> {thr_s}",
                      f"min {min(mins.values()):.4f} ({min(mins, key=mins.get)})", all(v > thr_s for v in mins.values()),
                      "more sensitive than published for some scenario")
        pt, pv, closer = [], [], 0
        for g in mc.values():
            L, Rg = g["labels"], g["spearman"]
            it, iv = L.index("TOPSIS"), L.index("VIKOR")
            for i, lab_ in enumerate(L):
                if lab_.startswith("PROMETHEE"):
                    pt.append(float(Rg[i, it]))
                    pv.append(float(Rg[i, iv]))
                    closer += int(Rg[i, it] >= Rg[i, iv])
        vikor_mean[d] = float(np.mean(pv))
        log.check(f"App. C ({short}): PROMETHEE II highly correlated with TOPSIS (we test > 0.9)", "high",
                  f"{min(pt):.3f}-{max(pt):.3f}", min(pt) > 0.9, "lower agreement on this dataset")
        log.check(f"App. C ({short}): VIKOR slightly less correlated with PROMETHEE II than TOPSIS", "yes",
                  f"VIKOR {min(pv):.3f}-{max(pv):.3f}; lower than TOPSIS in {closer} of {len(pt)}", closer == len(pt))
        idx_groups = [[list(scen).index(n) for n in ("S1", "S2", "S3")]] + \
            [[list(scen).index(f"S4.{kk}.{j}") for kk in (1, 2, 3)] for j in (1, 2, 3)]
        pf_min = min(float(np.nanmin(R[np.ix_(ix, ix)])) for ix in idx_groups)
        log.check(f"Figs. 18-20 ({short}): rankings robust to the preference function (S1-S3, S4.1-3.j; we test "
                  "Spearman > 0.9)", "high", f"min {pf_min:.3f}", pf_min > 0.9,
                  "the preference function changes the ranking noticeably")
        # figures
        row_labels = [names[i] for i in union]
        _rank_heatmap(figs / f"fig9_11_helm_{short}_ranks.png", np.stack([ranks[n] for n in scen])[:, union].T, row_labels,
                      list(scen), f"Figs. 9-11: HELM {d}, ranks (union of top {k}: {union.size} of {S} LLMs)")
        _corr_heatmap(figs / f"fig18_20_helm_{short}_spearman.png", R, list(scen), f"Figs. 18-20: HELM {d}, Spearman")
        _appendix_figure(figs / f"figB_C_helm_{short}.png", sens, mc, None, f"HELM {d}")
        fig_rows.append(d)
    if len(vikor_mean) > 1:
        low = min(vikor_mean, key=vikor_mean.get)
        log.check("App. C: VIKOR's difference is most pronounced on NaturalQuestions (open-book)", "NQ-open",
                  f"{HELM_SHORT.get(low, low)} (mean Spearman with PROMETHEE II: "
                  + ", ".join(f"{HELM_SHORT.get(a, a)} {v:.3f}" for a, v in vikor_mean.items()) + ")",
                  low == "NaturalQuestions (open-book)")
    return out


# ------------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------------
def _readme(results: Mapping[str, Any], log: _Log, cfg: Mapping[str, Any]) -> str:
    L = [f"# {TITLE}", "",
         f"Run: **{'smoke (reduced sizes)' if results['smoke'] else 'full size'}**, {results['seconds']:.1f} s on this "
         "machine; measured full-size run times: `experiments/README.md` (generated from the runs).", "",
         "Paper: Gjorgjevikj, Nikolikj, Korousic Seljak, Eftimov, *User-defined trade-offs in LLM benchmarking: "
         "balancing accuracy, scale, and sustainability*, Knowledge-Based Systems 330 (2025) 114405. The paper "
         "publishes most results as figures only; the numbers and claims stated in its text are checked below, and "
         "all our values are in results.json.", "",
         "Conventions: PROMETHEE II flows are the standard ones (weights summing to 1, divided by S - 1); the "
         "paper's code has an extra 1/n and divides by n_criteria - 1, which rescales every flow by one constant "
         "(rankings unchanged, flow values in Fig. 3 not comparable). Ranks are 1-based min ranks (1 = best). "
         "'linear' = linear preference with a = min and b = max of the pairwise differences; 'Gaussian' sigma = "
         "standard deviation of the pairwise differences.", ""]
    counts = log.counts()
    L += [f"Summary: {counts['matches']} match, {counts['differs']} differ, {counts['not reproducible']} not reproducible.", ""]
    o = results["open_llm"]
    L += ["## Open LLM Leaderboard v2 (sections 4.1, 5.1)", ""]
    L += [f"{o['n_selected']} LLMs with the highest leaderboard average (of {o['n_llms_in_file']}); missing values "
          f"in the selection: {o['missing_in_selection'] or 'none'}.", "",
          _md_table(["scenario", "criteria", "preference", "weights", "LLMs ranked"],
                    [[n, ", ".join(s["criteria"]), ", ".join(s["preference"]),
                      ", ".join(f"{w:.3f}" for w in s["weights"]), s["n_ranked"]] for n, s in o["scenarios"].items()]),
          "", "![Fig. 2](figures/fig2_openllm_ranks.png)", "", "![Fig. 3](figures/fig3_openllm_flows.png)", "",
          "Spearman correlation with the average-based ranking (Fig. 7):", "",
          _md_table(list(o["spearman"]["with_average"]), [list(o["spearman"]["with_average"].values())]), "",
          "![Fig. 7](figures/fig7_openllm_spearman.png)", "",
          "Appendix B (min Spearman among baseline and variants), C, D:", "",
          _md_table(["scenario", "linear a/b +10/20 %", "Gaussian sigma +-10/20 %"],
                    [[n, o["sensitivity"]["linear"].get(n, {}).get("min_spearman"),
                      o["sensitivity"]["gaussian"].get(n, {}).get("min_spearman")]
                     for n in dict.fromkeys(list(o["sensitivity"]["linear"]) + list(o["sensitivity"]["gaussian"]))]),
          "",
          _md_table(["group", "method pair", "Spearman"],
                    [[g, f"{v['labels'][i]} / {v['labels'][j]}", v["spearman"][i][j]]
                     for g, v in o["mcdm"].items() for i in range(len(v["labels"])) for j in range(i + 1, len(v["labels"]))
                     if v["labels"][i].startswith("PROMETHEE")]), "",
          _md_table(["p", "AHP weights (IFEval, BBH, MATH, GPQA, MUSR, MMLU-PRO)", "consistency ratio"],
                    [[p, ", ".join(f"{w:.4f}" for w in v["weights"]), v["consistency_ratio"]] for p, v in o["ahp"].items()]),
          "", "![App. B-D](figures/figB_C_D_openllm.png)", ""]
    h = results["helm"]
    L += ["## HELM Classic v0.4.0 question answering (sections 4.2, 5.2)", ""]
    L += [f"{h['n_selected']} LLMs complete on the 7 metrics of all three datasets (listwise deletion, of "
          f"{h['n_llms_in_file']}). Clusters of the averaged Pearson correlation (average linkage, cut at "
          f"{h['correlation']['threshold']}): " + "; ".join("{" + ", ".join(g) + "}" for g in h["correlation"]["clusters"]),
          "", "![Fig. 8](figures/fig8_helm_pearson.png)", ""]
    for d, e in h["datasets"].items():
        short = HELM_SHORT.get(d, d)
        L += [f"### {d}", "", f"Top {len(e['union_top'])} (union of every scenario's top 10); S5 ranks of the "
              f"named unbiased LLMs: " + "; ".join(f"{nm} {v}" for nm, v in e["s5_named_ranks"].items()), "",
              f"![ranks](figures/fig9_11_helm_{short}_ranks.png)", "",
              f"![spearman](figures/fig18_20_helm_{short}_spearman.png)", "",
              f"![appendix](figures/figB_C_helm_{short}.png)", ""]
    L += ["## Every reproduced number or claim", "", log.markdown(fmt=_fmt), ""]
    return "\n".join(L)


def run(out: Path, *, smoke: bool = False, scheduler: str | None = None) -> dict[str, Any]:
    """Run the xLLMBench reproduction and write ``results.json``, ``README.md`` and ``figures/`` into ``out``.

    Parameters
    ----------
    out : pathlib.Path
        Output directory (created).
    smoke : bool
        Reduced sizes (top-50 LLMs of the Open LLM Leaderboard), same code path.
    scheduler : str, optional
        Dask scheduler address; the run happens inside ``client.as_current()`` (all computations here are numpy).

    Returns
    -------
    dict
        ``{"seconds", "smoke", "counts", "tables", "figures"}``.
    """
    t0 = time.perf_counter()
    out = Path(out)
    figs = out / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    cfg = load_config(smoke=smoke)
    _FIG.update(cfg.get("figures", {}))
    log = _Log()
    with scheduler_context(scheduler):
        open_llm = _open_llm(cfg, log, figs)
        helm = _helm(cfg, log, figs)
    seconds = time.perf_counter() - t0
    results = json_safe({"experiment": "xllmbench2025", "title": TITLE, "smoke": bool(smoke), "seconds": seconds,
                         "config": cfg, "open_llm": open_llm, "helm": helm, "comparisons": log.rows})
    write_json(out / "results.json", results)
    (out / "README.md").write_text(_readme(results, log, cfg), encoding="utf-8")
    return {"seconds": seconds, "smoke": bool(smoke), "counts": log.counts(),
            "tables": ["S1-S7 (Open LLM)", "Fig. 2", "Fig. 3", "Fig. 7", "S1-S5 (HELM)", "Fig. 8", "Figs. 9-11",
                       "Figs. 18-20", "App. B", "App. C", "App. D"],
            "figures": sorted(p.name for p in figs.glob("*.png"))}
