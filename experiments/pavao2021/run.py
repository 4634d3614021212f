"""Pavao, Vaccaro, Guyon (ESANN 2021): empirical criteria of ranking functions and Kendall's W.

Loaded by file path by :mod:`engine.app.experiment` (``votebench experiment pavao2021``).
Parameters are in ``config.toml`` next to this file; the authors' published
numbers that are not in the paper text are in ``published.json``.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import dask
import numpy as np

import engine
import engine.labelled.core
from engine.app.experiment import dask_compute, load_config, markdown_table, write_json
from engine.kernels import metrics
from engine.labelled.bootstrap import pavao_criteria, pavao_stability

__all__ = ["TITLE", "DESCRIPTION", "run"]

TITLE = "Pavao et al. 2021 (ESANN): empirical criteria of six ranking functions and Kendall's W on the ESANN matrices"
DESCRIPTION = """\
Table 2 (centre): winner average rank, Condorcet rate and generalization (10,000 bootstrap trials drawing judges and
candidates), judge and candidate stability (100 bootstraps x 10 repeats) of Mean, Median, Average Rank, Success Rate,
Relative Difference and Copeland on the five shipped ESANN matrices (OpenML is not shipped), compared with the
authors' published per-dataset stability results; Table 1: Kendall's W of every matrix."""

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "data"
CRITERIA = ("winner_average_rank", "condorcet_rate", "generalization", "judge_stability", "candidate_stability")
CRITERION_LABELS = {
    "winner_average_rank": "Average rank of winner",
    "condorcet_rate": "Condorcet rate",
    "generalization": "Generalization",
    "judge_stability": "Judge stability",
    "candidate_stability": "Candidate stability",
}


# ----------------------------------------------------------------------------------------- inputs
def _load(entry: dict[str, Any], orientation: str) -> Any:
    scores = engine.open_scores(DATA / entry["file"])
    if orientation == "paper":
        scores = scores.assign_coords(higher_is_better=("task", np.ones(scores.sizes["task"], dtype=bool)))
    elif orientation != "sidecar":
        raise engine.VotebenchError(f"pavao2021: orientation must be 'paper' or 'sidecar', got {orientation!r}")
    return scores


def _task_matrix(scores: Any) -> np.ndarray:
    return np.asarray(engine.labelled.core.task_scores(scores).values, dtype=np.float64)  # (T, S), oriented


def _shifted(scores: Any) -> tuple[Any, float]:
    """Oriented scores shifted so that the minimum is 0 (only when some value is negative); the shift applied."""
    oriented = engine.orient(scores)
    low = float(np.nanmin(oriented.values))
    if low >= 0:
        return oriented, 0.0
    return oriented - low, -low


# ----------------------------------------------------------------------------------------- tasks
def _criteria(scores: Any, rules: list[str], trials: int, seed: int, method: str) -> dict[str, dict[str, float]]:
    ds = pavao_criteria(scores, rules=rules, trials=trials, seed=seed, method=method)
    return {r: {c: float(ds[c].sel(rule=r)) for c in ("winner_average_rank", "condorcet_rate", "generalization")}
            for r in rules}


def _stability(scores: Any, rule: str, over: str, size: int, repeats: int, seed: int, method: str) -> list[float]:
    """Pavao's stability of ``repeats`` independent bootstraps of ``size`` replicates each (disjoint replicate ids)."""
    ds = pavao_stability(scores, rule=rule, trials=repeats, replicates=size, seed=seed, method=method, axes=(over,))
    name = "judge_stability" if over == "tasks" else "candidate_stability"
    return [float(v) for v in ds[name].values]


# ----------------------------------------------------------------------------------------- authors' variant
# The authors' results (May 2021) were computed with ranky 0.2.1, whose pairwise functions (``condorcet`` with
# ``wins=relative_difference``) ranked every judge's column first: the Relative Difference they report is
# (u - v)/(u + v) applied to per-judge RANKS (1 = best, average ranks for ties), not to the scores.  ranky stopped
# doing so in January 2022.  The functions below recompute that variant (plain numpy, independent of the engine) so
# that the published numbers can be checked; the engine's `relative_difference` stays the paper's formula.
def ranky2021_rd_scores(M: np.ndarray) -> np.ndarray:
    """Relative Difference on per-judge ranks as ranky 0.2.1 computed it: ``M`` (..., T, S) higher is better ->
    (..., S), candidate i scoring sum_j mean_t (r_tj - r_ti)/(r_ti + r_tj) with r_t the ranks of judge t (1 = best)."""
    from scipy.stats import rankdata

    R = rankdata(-np.asarray(M, dtype=np.float64), axis=-1)
    A, B = R[..., :, :, None], R[..., :, None, :]
    return ((B - A) / (A + B)).mean(axis=-3).sum(axis=-1)


def aligned_spearman_pairs(V: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Spearman correlation of every pair of rows of ``V`` (q, S) over the candidates present in both (``present``,
    (q, S) bool; average ranks for ties), NaN where fewer than two are common or one side is constant."""
    q = V.shape[0]
    i, j = np.triu_indices(q, 1)
    mask = present[i] & present[j]
    out = np.full(i.size, np.nan)
    ranks = []
    for X in (V[i], V[j]):
        less = X[:, None, :] < X[:, :, None]
        equal = X[:, None, :] == X[:, :, None]
        ranks.append(((less + 0.5 * equal) * mask[:, None, :]).sum(axis=-1) + 0.5)
    n = mask.sum(axis=1)
    a, b = (np.where(mask, r - (r * mask).sum(axis=1, keepdims=True) / np.maximum(n, 1)[:, None], 0.0) for r in ranks)
    den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    ok = (n >= 2) & (den > 0)
    out[ok] = (a * b).sum(axis=1)[ok] / den[ok]
    return out


def authors_rd_stability(X: np.ndarray, over: str, size: int, repeats: int, seed: int) -> list[float]:
    """Judge (``over="tasks"``) or candidate stability of the authors' Relative Difference on ``X`` (T, S): per repeat,
    ``size`` bootstraps and the mean Spearman over their pairs (candidates common to both, as the authors' ``align``)."""
    T, S = X.shape
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2021, 0 if over == "tasks" else 1]))
    out = []
    for _ in range(repeats):
        V = np.full((size, S), np.nan)
        present = np.zeros((size, S), dtype=bool)
        for b in range(size):
            if over == "tasks":
                V[b] = ranky2021_rd_scores(X[rng.integers(0, T, T)])
                present[b] = True
            else:
                idx = rng.integers(0, S, S)
                score = ranky2021_rd_scores(X[:, idx])
                first = np.unique(idx, return_index=True)
                V[b, first[0]] = score[first[1]]
                present[b, first[0]] = True
        out.append(float(np.nanmean(aligned_spearman_pairs(V, present))))
    return out


def condorcet_winner_positions(M: np.ndarray) -> np.ndarray:
    """(B, T, S) -> (B,): position of the candidate beating every other position on a strict majority of judges, -1 if
    none (a candidate drawn twice cannot beat its copy)."""
    W = (M[:, :, :, None] > M[:, :, None, :]).sum(axis=1)  # W[b, i, j]: judges preferring i to j
    beats = W > np.swapaxes(W, 1, 2)
    S = M.shape[2]
    wins = beats.sum(axis=2)
    has = wins == S - 1
    return np.where(has.any(axis=1), has.argmax(axis=1), -1)


def authors_rd_condorcet_rate(X: np.ndarray, trials: int, seed: int, chunk: int = 200,
                              draw_judges: bool = False) -> float:
    """Condorcet rate of the authors' Relative Difference: share of bootstrap trials with a Condorcet winner in which
    the top-scoring candidate (first position, as ``idxmax``) is it.  As in the authors' notebook, a trial draws only
    the candidates (its judge resample is overwritten); ``draw_judges`` draws both, as the paper's text says."""
    T, S = X.shape
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2021, 2]))
    hits = found = 0
    done = 0
    while done < trials:
        n = min(chunk, trials - done)
        J = rng.integers(0, T, (n, T)) if draw_judges else np.broadcast_to(np.arange(T), (n, T))
        C = rng.integers(0, S, (n, S))
        M = X[J[:, :, None], C[:, None, :]]
        cw = condorcet_winner_positions(M)
        top = ranky2021_rd_scores(M).argmax(axis=1)
        has = cw >= 0
        rows = np.flatnonzero(has)
        found += int(has.sum())
        hits += int((C[rows, cw[rows]] == C[rows, top[rows]]).sum())
        done += n
    return hits / found if found else float("nan")


# ----------------------------------------------------------------------------------------- helpers
def _mean_sd(values: list[float]) -> tuple[float, float]:
    a = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if a.size == 0:
        return float("nan"), float("nan")
    return float(a.mean()), float(a.std(ddof=0))


def _fmt(v: Any, nd: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{nd}f}"


def _benchmark_average(per_dataset: dict[str, dict[str, dict[str, float]]], datasets: list[dict[str, Any]],
                       rules: list[str], exclude: dict[str, list[str]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per criterion and rule: the plain mean over the matrices, as the authors' Table 2 centre (their notebook
    `visualization_esann.ipynb` averages the six matrices; AutoDL counts once only in the error bars), leaving out the
    matrices of ``exclude[criterion]`` (the authors leave Artificial out of the Condorcet rate); ``sem`` is the standard
    deviation over the matrices / sqrt(number of benchmarks)."""
    b = len({d["benchmark"] for d in datasets})
    out: dict[str, dict[str, dict[str, float]]] = {}
    for c in CRITERIA:
        out[c] = {}
        for r in rules:
            vals = [per_dataset[d["name"]][r][c] for d in datasets if d["name"] not in exclude.get(c, [])]
            a = np.asarray([v for v in vals if v is not None and not math.isnan(v)])
            out[c][r] = {"mean": float(a.mean()) if a.size else float("nan"),
                         "sem": float(a.std(ddof=0) / math.sqrt(b)) if a.size else float("nan"),
                         "matrices": int(a.size)}
    return out


def _variant_average(variant: dict[str, dict[str, float]], exclude: dict[str, list[str]]) -> dict[str, float]:
    """Plain mean over the matrices of the authors' Relative Difference values (same exclusions as the centre)."""
    crits = {c for v in variant.values() for c in v}
    return {c: float(np.nanmean([v[c] for n, v in variant.items() if n not in exclude.get(c, [])])) for c in crits}


def _claims(avg: dict[str, dict[str, dict[str, float]]], per_dataset: dict[str, Any], rules: list[str],
            variant: dict[str, float], published: dict[str, Any]) -> list[dict]:
    """The qualitative statements of the paper's section 3, checked on our numbers.

    Each claim holds or not on our numbers (``holds``); when it does not and it holds with the authors' Relative
    Difference (``variant``: per-judge ranks, as ranky computed it in May 2021), that is its verified cause."""
    m = {c: {r: avg[c][r]["mean"] for r in rules} for c in CRITERIA}
    names = list(per_dataset)
    pairwise = [r for r in ("average_rank", "success_rate", "relative_difference", "pavao_copeland") if r in rules]
    claims = []

    def add(text: str, holds: bool, detail: str, holds_variant: bool | None = None, detail_variant: str = "") -> None:
        claims.append({"claim": text, "holds": bool(holds), "detail": detail,
                       "holds_authors_variant": holds_variant, "detail_authors_variant": detail_variant})

    if {"mean", "median"} <= set(rules):
        ok = all(abs(per_dataset[n][r]["candidate_stability"] - 1.0) < 1e-9 for n in names for r in ("mean", "median"))
        add("Mean and Median are perfectly stable against candidate perturbations", ok,
            "candidate stability = 1 on every matrix" if ok else "candidate stability < 1 on some matrix")
    if {"mean", "median", "average_rank"} <= set(rules):
        crit = ("winner_average_rank", "condorcet_rate", "generalization", "judge_stability")
        worse = [c for c in crit if not (m[c]["average_rank"] > m[c]["mean"] and m[c]["average_rank"] > m[c]["median"])]
        add("Average Rank performs better than Mean and Median in every respect except candidate stability", not worse,
            "on the averages over the matrices" + ("" if not worse else f"; not on {', '.join(worse)}"))
    if "success_rate" in rules and pairwise:
        low = min(pairwise, key=lambda r: m["candidate_stability"][r])
        add("Success Rate gets a very bad candidate stability score (lowest of the comparison-based rules)",
            low == "success_rate", f"lowest: {low} ({m['candidate_stability'][low]:.3f})")
    if "pavao_copeland" in rules:
        ok = all(abs(per_dataset[n]["pavao_copeland"]["condorcet_rate"] - 1.0) < 1e-9 for n in names
                 if per_dataset[n]["pavao_copeland"]["condorcet_rate"] is not None)
        add("Copeland's method has a perfect Condorcet rate", ok, "Condorcet rate = 1 on every matrix" if ok else "< 1 somewhere")
        best = max(pairwise, key=lambda r: m["candidate_stability"][r])
        cs = dict(m["candidate_stability"], relative_difference=variant["candidate_stability"])
        best_v = max(pairwise, key=lambda r: cs[r])
        add("Copeland gets the best candidate stability (of the comparison-based rules)", best == "pavao_copeland",
            f"best: {best} ({m['candidate_stability'][best]:.3f})", best_v == "pavao_copeland",
            f"authors' Relative Difference {cs['relative_difference']:.3f} < Copeland {cs['pavao_copeland']:.3f}"
            if best_v == "pavao_copeland" else f"best: {best_v} ({cs[best_v]:.3f})")
    if "relative_difference" in rules:
        best = max(rules, key=lambda r: m["judge_stability"][r])
        js = dict(m["judge_stability"], relative_difference=variant["judge_stability"])
        best_v = max(rules, key=lambda r: js[r])
        add("Relative Difference is much better than all other ranking functions in judge stability",
            best == "relative_difference", f"best: {best} ({m['judge_stability'][best]:.3f})",
            best_v == "relative_difference", f"authors' Relative Difference {js['relative_difference']:.3f}")
        if "pavao_copeland" in rules:
            # "closely": no further from Copeland than in the paper's own Table 2 centre, plus 0.05
            pub = published["table2_centre"]
            crits = ("condorcet_rate", "candidate_stability")
            allowed = {c: pub[c]["pavao_copeland"] - pub[c]["relative_difference"] + 0.05 for c in crits}
            gaps = {c: m[c]["pavao_copeland"] - m[c]["relative_difference"] for c in crits}
            gaps_v = {c: m[c]["pavao_copeland"] - variant[c] for c in crits}
            add("Relative Difference closely approaches Copeland on Condorcet rate and candidate stability",
                all(gaps[c] <= allowed[c] for c in crits),
                "; ".join(f"{CRITERION_LABELS[c]}: Copeland - RD = {g:+.3f} (paper's {allowed[c] - 0.05:+.3f}, allowed "
                          f"{allowed[c]:+.3f})" for c, g in gaps.items()),
                all(gaps_v[c] <= allowed[c] for c in crits),
                "; ".join(f"{CRITERION_LABELS[c]}: Copeland - authors' RD = {g:+.3f}" for c, g in gaps_v.items()))
    return claims


# ----------------------------------------------------------------------------------------- figures
def _figures(out: Path, per_dataset: dict[str, Any], rules: list[str], labels: dict[str, str],
             published: dict[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    names = list(per_dataset)
    files = []
    fig, grid = plt.subplots(2, 3, figsize=(15, 8.5))
    axes = grid.ravel()
    width = 0.8 / len(rules)
    x = np.arange(len(names))
    for ax, c in zip(axes, CRITERIA):
        for i, r in enumerate(rules):
            vals = [np.nan if per_dataset[n][r][c] is None else per_dataset[n][r][c] for n in names]
            ax.bar(x + (i - (len(rules) - 1) / 2) * width, vals, width=width, label=labels[r])
        ax.set_title(CRITERION_LABELS[c])
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=40, ha="right")
        ax.grid(True, axis="y", alpha=0.4)
        ax.set_axisbelow(True)
    axes[0].set_ylabel("value (higher is better)")
    axes[3].set_ylabel("value (higher is better)")
    handles, names_ = axes[0].get_legend_handles_labels()
    axes[-1].axis("off")
    axes[-1].legend(handles, names_, loc="center", title="ranking function", fontsize=11)
    fig.suptitle("Pavao et al. (2021) empirical criteria per matrix (ours)")
    fig.tight_layout()
    fig.savefig(figdir / "criteria.png", dpi=110)
    plt.close(fig)
    files.append("figures/criteria.png")

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.8))
    markers = dict(zip(rules, "osD^vP"))
    for ax, c in zip(axes, ("judge_stability", "candidate_stability")):
        for r in rules:
            xs, ys = [], []
            for n in names:
                pub = published.get(c, {}).get(n, {}).get(r)
                if pub is not None and per_dataset[n][r][c] is not None:
                    xs.append(pub["mean"])
                    ys.append(per_dataset[n][r][c])
            ax.scatter(xs, ys, marker=markers.get(r, "o"), label=labels[r], alpha=0.8)
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("authors' published value (mean of 10 repeats)")
        ax.set_ylabel("ours")
        ax.set_title(CRITERION_LABELS[c] + " per matrix")
        ax.grid(True, alpha=0.4)
    axes[1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(figdir / "stability_vs_authors.png", dpi=110)
    plt.close(fig)
    files.append("figures/stability_vs_authors.png")
    return files


# ----------------------------------------------------------------------------------------- README
def _tolerance(ours: dict[str, Any], pub: dict[str, Any], repeats: int) -> float:
    return 0.02 + 3.0 * math.sqrt(ours["sd"] ** 2 / max(repeats, 1) + pub["std"] ** 2 / max(pub["n"], 1))


def _stability_status(c: str, n: str, r: str, ours: dict[str, Any], pub: dict[str, Any] | None, shifted: float,
                      repeats: int, variant: dict[str, Any] | None, rerun: dict[str, Any] | None) -> tuple[str, str]:
    """Status of one stability value against the authors' results file; for Relative Difference the cause of a
    difference is checked with the authors' variant (``variant``: per-judge ranks, recomputed in the run) and the
    authors' 2023 re-run of the paper's formula (``rerun``)."""
    if pub is None:
        return "not reproducible", "no published value for this matrix"
    diff = ours["mean"] - pub["mean"]
    tol = _tolerance(ours, pub, repeats)
    if abs(diff) <= tol:
        return "matches", f"|diff| {abs(diff):.3f} <= {tol:.3f} (0.02 + 3 standard errors of the repeat means)"
    if r != "relative_difference":
        return "differs", f"cause unknown: diff {diff:+.3f} > {tol:.3f}"
    shift = (f"; our matrix is shifted by +{shifted:.3g} (the engine's rule needs scores >= 0), so ours is not the raw "
             "formula either") if shifted > 0 else ""
    again = ""
    if rerun is not None:
        ok = abs(ours["mean"] - rerun["mean"]) <= _tolerance(ours, rerun, repeats)
        again = (f"; the authors' 2023 re-run with the corrected ranky gives {rerun['mean']:.3f}"
                 + (", as ours" if ok else ""))
    if variant is not None and abs(variant["mean"] - pub["mean"]) <= _tolerance(variant, pub, repeats):
        return "differs", (f"verified: the authors' value is Relative Difference on per-judge ranks (ranky 0.2.1 of May "
                           f"2021 ranked each judge's column before the pairwise function); that variant, recomputed in "
                           f"this run, gives {variant['mean']:.3f} (published {pub['mean']:.3f}); ours is the paper's "
                           f"formula on the scores{again}{shift}")
    return "differs", (f"cause unknown: diff {diff:+.3f} > {tol:.3f}; the authors' variant (per-judge ranks) gives "
                       f"{variant['mean']:.3f}" if variant else f"cause unknown: diff {diff:+.3f}") + again + shift


def _centre_rows(avg: dict[str, Any], published: dict[str, Any], rules: list[str], labels: dict[str, str],
                 exclude: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Table 2 centre: the published values (six matrices, OpenML among them) against the plain mean of the authors'
    per-matrix values over the six (checks the aggregation) and over the five shipped matrices, and ours."""
    rows = []
    for c in CRITERIA:
        per_matrix = published.get(c)
        for r in rules:
            pub = published["table2_centre"][c][r]
            ours = avg[c][r]["mean"]
            why = "the centre averages six matrices and OpenML is not shipped"
            if per_matrix:
                vals = {n: v[r]["mean"] for n, v in per_matrix.items() if n not in exclude.get(c, [])}
                six = float(np.mean(list(vals.values())))
                five = float(np.mean([v for n, v in vals.items() if n != "OpenML"]))
                nd = 1 if c == "condorcet_rate" else 3
                agg = "verified" if round(six, nd) == pub else "NOT reproduced"
                why += (f"; aggregation {agg}: the plain mean of the authors' per-matrix values over the "
                        f"{len(vals)} matrices{' (Artificial left out, as the authors)' if exclude.get(c) else ''} is "
                        f"{six:.3f}; over the shipped matrices only: authors {five:.3f}, ours {ours:.3f}")
            else:
                why += "; the authors' per-matrix values of this criterion are not in their repository"
            rows.append({"item": f"Table 2 centre, {CRITERION_LABELS[c]}, {labels[r]}", "paper": pub, "ours": ours,
                         "status": "not reproducible", "why": why})
    return rows


def _status_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Rows per class: matches, differs with a verified cause, differs with the cause unknown, not reproducible."""
    out = {"matches": 0, "differs (cause verified)": 0, "differs (cause unknown)": 0, "not reproducible": 0}
    for r in rows:
        if r["status"] == "differs":
            out["differs (cause unknown)" if "cause unknown" in r["why"] else "differs (cause verified)"] += 1
        else:
            out[r["status"]] += 1
    return out


def _readme(result: dict[str, Any], cfg: dict[str, Any], labels: dict[str, str], published: dict[str, Any]) -> str:
    rules = cfg["rules"]
    per = result["per_dataset"]
    names = list(per)
    counts = result["status_counts"]
    lines = [f"# {TITLE}", "",
             f"Run: {'smoke size' if result['smoke'] else 'full size'}, {result['seconds']:.1f} s; "
             f"{cfg['trials']} trials for the bootstrap criteria, {cfg['stability_bootstraps']} bootstraps x "
             f"{cfg['stability_repeats']} repeats for stability, seed {cfg['seed']}, correlation {cfg['correlation']}, "
             f"orientation `{cfg['orientation']}`.", "",
             "Data: the five ESANN matrices shipped in `data/` (OpenML, the sixth matrix of the paper, is not shipped). "
             "Published numbers: Table 1 of the paper; Table 2's centre, an image absent from the stored paper text, "
             "read from the paper's PDF in the authors' repository; per-matrix stability and Condorcet rates from the "
             "authors' results files (Didayolo/ranking-esann-2021), see `published.json`.", "",
             "Rows compared: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + ".", "",
             "## Table 1: Kendall's W (datasets as judges)", ""]
    rows = [[n, _fmt(w["paper"], 2), _fmt(w["ours"], 4), w["status"]] for n, w in result["kendall_w"].items()]
    lines += [markdown_table(["matrix", "paper", "ours", "status"], rows), "",
              "W uses average ranks with the tie correction (without it AutoDL-AUC gives 0.36).", "",
              "## Table 2 (centre): empirical criteria, plain mean over the matrices", "",
              "Published: the paper's image (six matrices, OpenML included; Condorcet rate without Artificial). Ours: "
              f"the plain mean over the {len(names)} shipped matrices, as the authors average (their notebook "
              "`visualization_esann.ipynb`; AutoDL-AUC and AutoDL-ALC count as one benchmark only in the error bars), "
              "Artificial left out of the Condorcet rate as they do. `+-`: standard deviation over the matrices / "
              f"sqrt({result['benchmarks']} benchmarks). Relative Difference (authors): the authors' variant (per-judge "
              "ranks), recomputed here.", ""]
    avg = result["benchmark_average"]
    pub = published["table2_centre"]
    rows = [[labels[r]] + [f"{_fmt(pub[c][r], 3)} / {_fmt(avg[c][r]['mean'])} +- {_fmt(avg[c][r]['sem'])}"
                           for c in CRITERIA] for r in rules]
    va = result["authors_variant_average"]
    rows.append([f"{labels['relative_difference']} (authors)"] + [_fmt(va.get(c)) if c in va else "-" for c in CRITERIA])
    lines += [markdown_table(["ranking function (paper / ours)"] + [CRITERION_LABELS[c] for c in CRITERIA], rows), "",
              "### The paper's statements (section 3), checked on our numbers", ""]
    rows = [[c["claim"], "holds" if c["holds"] else "does not hold", c["detail"],
             "-" if c["holds_authors_variant"] is None else ("holds" if c["holds_authors_variant"] else "does not hold"),
             c["detail_authors_variant"]] for c in result["claims"]]
    lines += [markdown_table(["statement", "ours", "detail", "with the authors' Relative Difference", "detail"], rows), ""]
    lines += ["## Every compared number", "", markdown_table(
        ["item", "published", "ours", "status", "why"],
        [[r["item"], _fmt(r["paper"]), _fmt(r["ours"]), r["status"], r["why"]] for r in result["rows"]]), ""]
    lines += ["## Per matrix (ours)", ""]
    for n in names:
        shift = per[n]["_shift_relative_difference"]
        lines += [f"### {n}", ""]
        rows = [[labels[r]] + [_fmt(per[n][r][c]) for c in CRITERIA] for r in rules]
        v = result["authors_variant"][n]
        rows.append([f"{labels['relative_difference']} (authors)"] + [_fmt(v.get(c)) if c in v else "-" for c in CRITERIA])
        lines += [markdown_table(["ranking function"] + [CRITERION_LABELS[c] for c in CRITERIA], rows), ""]
        if shift > 0:
            lines += [f"Relative Difference ran on the matrix shifted by +{shift:.4g} (it has negative scores).", ""]
    lines += ["## Notes on the protocol", "",
              "* Bootstrap criteria (engine `pavao_criteria`): every trial draws judges (tasks) and candidates (systems) "
              "with replacement, as the paper's section 3 says; generalization correlates the trial's ranking with each "
              "out-of-bag judge. The authors' notebook (`notebooks/ranking_esann.ipynb`) differs in details: its "
              "winner-average-rank and Condorcet-rate loops overwrite the judge resample with a candidate resample "
              "(only candidates are drawn), and its Condorcet-rate cell uses 30,000 trials.",
              "* Stability (engine `bootstrap` + `stability`): mean Spearman correlation over the q (q - 1) / 2 pairs of "
              "bootstrap rankings, restricted to the candidates common to both for candidate bootstraps (a candidate "
              "drawn twice ties with its copy); repeats use disjoint replicate ids, so they are independent.",
              "* Relative Difference, authors' variant: ranky 0.2.1 (May 2021), with which the published results were "
              "computed, ranked every judge's column (1 = best, average ranks) before applying the pairwise function, "
              "so the published Relative Difference is (u - v)/(u + v) on ranks; ranky stopped doing so in January "
              "2022, and the authors' 2023 re-run (their current results files) gives the paper's formula on the scores, "
              "as ours. The variant is recomputed here in plain numpy (`ranky2021_rd_scores`), the Condorcet rate with "
              "the authors' trial design (candidates drawn only). The engine's `relative_difference` stays the paper's "
              "formula.",
              "* Statlog holds normalized error rates (lower is better). With `orientation = \"paper\"` the raw values "
              "are ranked as higher-is-better, as the authors' notebook did; `orientation = \"sidecar\"` uses the "
              "sidecar direction.",
              "* The engine's Relative Difference needs scores >= 0: matrices with negative scores (AutoDL-ALC, "
              "Artificial; Statlog when oriented) are shifted by their minimum for this rule (not shift invariant).",
              "* Ties: Copeland and Success Rate count a tied judge for neither candidate; ranks are average ranks.", ""]
    if result.get("figures"):
        lines += ["## Figures", ""] + [f"![{f}]({f})" for f in result["figures"]] + [""]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- entry point
def _tasks(cfg: dict[str, Any], rules: list[str]) -> tuple[dict[str, Any], dict[str, float], list[Any], list[tuple]]:
    """The dask tasks of the run and their keys (matrix, kind, rule)."""
    seed, trials, method = int(cfg["seed"]), int(cfg["trials"]), str(cfg["correlation"])
    size, repeats = int(cfg["stability_bootstraps"]), int(cfg["stability_repeats"])
    use_shift = bool(cfg.get("shift_negative_for_relative_difference", True))
    loaded, shifts, tasks, keys = {}, {}, [], []
    for d in cfg["datasets"]:
        scores = _load(d, cfg["orientation"])
        loaded[d["name"]] = scores
        plain = [r for r in rules if r != "relative_difference"]
        rd_scores, shift = (_shifted(scores) if use_shift else (scores, 0.0))
        shifts[d["name"]] = shift
        if plain:
            tasks.append(dask.delayed(_criteria)(scores, plain, trials, seed, method))
            keys.append((d["name"], "criteria", None))
        if "relative_difference" in rules:
            tasks.append(dask.delayed(_criteria)(rd_scores, ["relative_difference"], trials, seed, method))
            keys.append((d["name"], "criteria", None))
            X = _task_matrix(_load(d, "paper"))  # the authors ranked every matrix as higher-is-better
            for over, crit in (("tasks", "judge_stability"), ("systems", "candidate_stability")):
                tasks.append(dask.delayed(authors_rd_stability)(X, over, size, repeats, seed))
                keys.append((d["name"], "authors_" + crit, None))
            tasks.append(dask.delayed(authors_rd_condorcet_rate)(X, trials, seed))
            keys.append((d["name"], "authors_condorcet_rate", None))
        for r in rules:
            s = rd_scores if r == "relative_difference" else scores
            for over, crit in (("tasks", "judge_stability"), ("systems", "candidate_stability")):
                tasks.append(dask.delayed(_stability)(s, r, over, size, repeats, seed, method))
                keys.append((d["name"], crit, r))
    return loaded, shifts, tasks, keys


def _variant_rows(variant_raw: dict[str, dict[str, Any]], published: dict[str, Any], repeats: int) -> list[dict]:
    rows = []
    for name, v in variant_raw.items():
        for c in ("judge_stability", "candidate_stability"):
            pub = published.get(c, {}).get(name, {}).get("relative_difference")
            mean, sd = _mean_sd(v[c])
            item = f"{CRITERION_LABELS[c]}, {name}, Relative Difference (authors' variant: per-judge ranks)"
            if pub is None:
                continue
            tol = _tolerance({"mean": mean, "sd": sd}, pub, repeats)
            ok = abs(mean - pub["mean"]) <= tol
            rows.append({"item": item, "paper": pub["mean"], "ours": mean, "status": "matches" if ok else "differs",
                         "why": f"|diff| {abs(mean - pub['mean']):.3f} <= {tol:.3f}" if ok else
                         f"cause unknown: diff {mean - pub['mean']:+.3f} > {tol:.3f}"})
        pub = published.get("condorcet_rate", {}).get(name, {}).get("relative_difference")
        if pub is not None and pub["n"] >= 100:
            cr = v["condorcet_rate"]
            tol = 0.02 + 3.0 * math.sqrt(max(pub["mean"] * (1 - pub["mean"]), 0.01) / pub["n"])
            ok = abs(cr - pub["mean"]) <= tol
            rows.append({"item": f"Condorcet rate, {name}, Relative Difference (authors' variant: per-judge ranks, "
                                 "candidates drawn only)", "paper": pub["mean"], "ours": cr,
                         "status": "matches" if ok else "differs",
                         "why": f"|diff| {abs(cr - pub['mean']):.3f} <= {tol:.3f}" if ok else
                         f"cause unknown: diff {cr - pub['mean']:+.3f} > {tol:.3f}"})
    return rows


def run(out: Path, *, smoke: bool = False, scheduler: str | None = None) -> dict[str, Any]:
    """Run the reproduction; write ``results.json``, ``README.md`` and ``figures/`` into ``out``."""
    start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = load_config(HERE, smoke=smoke)
    published = json.loads((HERE / "published.json").read_text(encoding="utf-8"))
    rules = list(cfg["rules"])
    labels = dict(zip(rules, cfg.get("labels", rules)))
    repeats = int(cfg["stability_repeats"])
    datasets = list(cfg["datasets"])
    exclude = {"condorcet_rate": list(cfg.get("condorcet_rate_exclude", []))}
    loaded, shifts, tasks, keys = _tasks(cfg, rules)
    values = dask_compute(tasks, scheduler=scheduler)

    per: dict[str, dict[str, Any]] = {d["name"]: {r: {} for r in rules} for d in datasets}
    stab_raw: dict[tuple[str, str, str], list[float]] = {}
    variant_raw: dict[str, dict[str, Any]] = {d["name"]: {} for d in datasets}
    for (name, kind, rule), value in zip(keys, values):
        if kind == "criteria":
            for r, crit in value.items():
                per[name][r].update(crit)
        elif kind.startswith("authors_"):
            variant_raw[name][kind[len("authors_"):]] = value
        else:
            per[name][rule][kind] = _mean_sd(value)[0]
            stab_raw[(name, kind, rule)] = value
    variant = {n: {c: (_mean_sd(v)[0] if isinstance(v, list) else v) for c, v in vr.items()}
               for n, vr in variant_raw.items()}
    for name in per:
        per[name]["_shift_relative_difference"] = shifts[name]

    rows: list[dict[str, Any]] = []
    kendall = {}
    for d in datasets:
        w = float(metrics.kendall_w(_task_matrix(loaded[d["name"]])))
        paper = published["kendall_w"].get(d["name"])
        status = "matches" if paper is not None and round(w, 2) == paper else "differs"
        kendall[d["name"]] = {"ours": w, "paper": paper, "status": status}
        rows.append({"item": f"Table 1, Kendall's W, {d['name']}", "paper": paper, "ours": w, "status": status,
                     "why": "" if status == "matches" else "cause unknown"})
    for name in sorted(set(published["kendall_w"]) - set(kendall)):
        rows.append({"item": f"Table 1, Kendall's W, {name}", "paper": published["kendall_w"][name], "ours": None,
                     "status": "not reproducible", "why": f"the {name} matrix is not shipped"})

    comparison = []
    for name in per:
        for c in ("judge_stability", "candidate_stability"):
            for r in rules:
                mean, sd = _mean_sd(stab_raw[(name, c, r)])
                pub = published.get(c, {}).get(name, {}).get(r)
                var = rerun = None
                if r == "relative_difference":
                    var = dict(zip(("mean", "sd"), _mean_sd(variant_raw[name][c])))
                    rerun = published.get("relative_difference_2023", {}).get(c, {}).get(name)
                status, why = _stability_status(c, name, r, {"mean": mean, "sd": sd}, pub, shifts[name], repeats,
                                                var, rerun)
                comparison.append({"matrix": name, "criterion": c, "rule": r, "ours": mean, "ours_sd": sd,
                                   "ours_repeats": stab_raw[(name, c, r)],
                                   "paper": None if pub is None else pub["mean"],
                                   "paper_sd": None if pub is None else pub["std"], "status": status, "why": why})
                rows.append({"item": f"{CRITERION_LABELS[c]}, {name}, {labels[r]}", "paper": comparison[-1]["paper"],
                             "ours": mean, "status": status, "why": why})
    rows += _variant_rows(variant_raw, published, repeats)

    per_clean = {n: {r: per[n][r] for r in rules} for n in per}
    avg = _benchmark_average(per_clean, datasets, rules, exclude)
    variant_avg = _variant_average(variant, exclude)
    rows += _centre_rows(avg, published, rules, labels, exclude)
    claims = _claims(avg, per_clean, rules, variant_avg, published)
    for cl in claims:
        if cl["holds"]:
            status, why = "matches", cl["detail"]
        elif cl["holds_authors_variant"]:
            status, why = "differs", (f"{cl['detail']}; verified cause: the claim rests on the authors' Relative "
                                      f"Difference (per-judge ranks), with which it holds here ({cl['detail_authors_variant']})")
        else:
            status, why = "differs", f"cause unknown: {cl['detail']}"
        rows.append({"item": f"Section 3: {cl['claim']}", "paper": "claimed", "ours": "holds" if cl["holds"] else
                     "does not hold", "status": status, "why": why})
    figures = _figures(out, per_clean, rules, labels, published)
    result = {
        "experiment": "pavao2021", "title": TITLE, "smoke": bool(smoke),
        "config": cfg, "per_dataset": per, "kendall_w": kendall, "benchmark_average": avg,
        "benchmarks": len({d["benchmark"] for d in datasets}), "claims": claims,
        "authors_variant": variant, "authors_variant_repeats": variant_raw, "authors_variant_average": variant_avg,
        "stability_comparison": comparison, "rows": rows, "status_counts": _status_counts(rows), "figures": figures,
    }
    result["seconds"] = time.perf_counter() - start
    (out / "README.md").write_text(_readme(result, cfg, labels, published), encoding="utf-8")
    result["seconds"] = time.perf_counter() - start
    write_json(out / "results.json", result)
    n_match = sum(i["status"] == "matches" for i in comparison)
    return {"seconds": result["seconds"], "tables": ["Table 1 (Kendall's W)", "Table 2 centre (empirical criteria)"],
            "kendall_w_matches": sum(v["status"] == "matches" for v in kendall.values()),
            "stability_matches": f"{n_match}/{len(comparison)}", "status_counts": result["status_counts"],
            "figures": figures}
