"""The published ranking of a watch and what changed since the previous one, as text a person reads.

Rows are ``votebench rank --format json``'s (``system``, ``score``, ``rank``: ranked systems sorted by rank,
then name), plus ``rank_low`` / ``rank_high`` (and ``tied_with_leader``) when a bootstrap ran.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["board_group", "change_records", "changes", "interval_text", "ranking_rows"]


def _float_or_none(v: float) -> float | None:
    return None if math.isnan(v) else float(v)


def ranking_rows(ds: xr.Dataset, boot: Any | None = None) -> list[dict[str, Any]]:
    """Rows of a computed ranking ``ds`` (``score``, ``rank`` per system), with the intervals of ``boot``
    (:func:`engine.labelled.comparison.bootstrap_intervals`) when given."""
    systems = [str(s) for s in ds["system"].values]
    score = np.asarray(ds["score"].values, dtype=float)
    rank = np.nan_to_num(np.asarray(ds["rank"].values, dtype=float))
    rows = [{"system": s, "score": float(sc), "rank": int(rk)} for s, sc, rk in zip(systems, score, rank) if not math.isnan(sc)]
    rows.sort(key=lambda d: (d["rank"], d["system"]))
    if boot is not None:
        at = {s: i for i, s in enumerate(boot.systems)}
        for r in rows:
            i = at.get(r["system"])
            if i is None:
                continue
            r["rank_low"] = _float_or_none(float(boot.low[i]))  # as `votebench bootstrap` gives them
            r["rank_high"] = _float_or_none(float(boot.high[i]))
            r["tied_with_leader"] = bool(boot.tied[i])
    return rows


def interval_text(low: Any, high: Any) -> str:
    """``" [3-6]"`` (a space first; bounds to 3 significant digits, whole ranks unless the rank convention averages ties), or ``""``
    without an interval."""
    if low is None or high is None:
        return ""
    a, b = f"{float(low):.3g}", f"{float(high):.3g}"
    return f" [{a}]" if a == b else f" [{a}-{b}]"


def _moves(previous: Mapping[str, Sequence[Any]], rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per system ranked before and now whose rank changed: what moved it.

    ``passed`` / ``fell_behind``: systems ranked before and now that were not strictly above it and now are (it fell
    behind them), or the other way round (it passed them; ``drew_level``: those of them it now ties);
    ``new_above``: systems not ranked before now strictly above it; ``left_above``: systems strictly above it before
    that are no longer ranked.
    """
    now = {str(r["system"]): int(r["rank"]) for r in rows}
    before = {str(s): int(v[0]) for s, v in previous.items()}
    both = [s for s in now if s in before]
    out = {}
    for s in both:
        if now[s] == before[s]:
            continue
        others = [o for o in both if o != s]
        out[s] = {"passed": sorted(o for o in others if before[o] < before[s] and not now[o] < now[s]),
                  "drew_level": sorted(o for o in others if before[o] < before[s] and now[o] == now[s]),
                  "fell_behind": sorted(o for o in others if now[o] < now[s] and not before[o] < before[s]),
                  "new_above": sum(1 for o in now if o not in before and now[o] < now[s]),
                  "left_above": sum(1 for o in before if o not in now and before[o] < before[s])}
    return out


def change_records(previous: Mapping[str, Sequence[Any]], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What changed from ``previous`` (system -> ``[rank, low, high]``) to ``rows``: one record per system.

    ``kind`` is ``"new"`` (not ranked before), ``"up"`` (it passed a system ranked before and now), ``"down"`` (it fell
    behind one), ``"moved"`` (both), ``"shifted"`` (its rank changed only because systems entered above it or left:
    its order among the others is the same) or ``"gone"`` (no longer ranked); ``text`` says it in one sentence
    (``"new: X enters at rank 4 [3-6]"``, ``"X: rank 2 -> 3 [2-4] (down)"``, ``"X: rank 1 -> 4 [3-5] (3 new above)"``,
    ``"X: no longer ranked"``).  Systems that kept their rank are not mentioned.
    """
    out: list[dict[str, Any]] = []
    moves = _moves(previous, rows)
    for r in rows:
        system, rank = str(r["system"]), int(r["rank"])
        iv = interval_text(r.get("rank_low"), r.get("rank_high"))
        rec: dict[str, Any] = {"system": system, "to": rank, "low": r.get("rank_low"), "high": r.get("rank_high")}
        if system not in previous:
            out.append({**rec, "kind": "new", "from": None, "text": f"new: {system} enters at rank {rank}{iv}"})
            continue
        m = moves.get(system)
        if m is None:
            continue
        up, down = bool(m["passed"]), bool(m["fell_behind"])
        kind = "moved" if up and down else "up" if up else "down" if down else "shifted"
        why = [f"{m['new_above']} new above"] if m["new_above"] else []
        why += [f"{m['left_above']} gone from above"] if m["left_above"] else []
        said = {"up": "up", "down": "down", "moved": "passed " + ", ".join(m["passed"]) + "; fell behind " +
                ", ".join(m["fell_behind"]), "shifted": ", ".join(why)}[kind]
        before = int(previous[system][0])
        out.append({**rec, **m, "kind": kind, "from": before, "text": f"{system}: rank {before} -> {rank}{iv} ({said})"})
    ranked = {str(r["system"]) for r in rows}
    out += [{"system": s, "kind": "gone", "from": int(v[0]), "to": None, "low": None, "high": None,
             "text": f"{s}: no longer ranked"} for s, v in previous.items() if s not in ranked]
    return out


def changes(previous: Mapping[str, Sequence[Any]], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The sentences of :func:`change_records`, one per system whose place changed."""
    return [c["text"] for c in change_records(previous, rows)]


def _json(a: Any) -> list[float | None]:
    return [None if not math.isfinite(v) else float(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def _ints(a: Any) -> list[int | None]:
    return [None if not math.isfinite(v) else int(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def _boot_fields(score: np.ndarray, boot: Any, replicates: np.ndarray, level: float) -> dict[str, Any]:
    """A rule's bootstrap numbers in the dashboard's shape: rank and score intervals, ties with the leader, Rank(UB),
    stability."""

    S = score.size
    pairwise = boot.kind == "pairwise"
    leader = np.isfinite(score) & (np.nan_to_num(boot.rank, nan=0.0) == 1)
    out: dict[str, Any] = {
        "replicates_done": int(replicates.shape[0]), "rank_low": _json(boot.low), "rank_high": _json(boot.high),
        "pair_low": _json(boot.low) if pairwise else [None] * S, "pair_high": _json(boot.high) if pairwise else [None] * S,
        "tied": [int(i) for i in np.flatnonzero(np.asarray(boot.tied, dtype=bool) & ~leader)],
        "kendall_w": _json([boot.stability["kendall_w"]])[0], "mean_spearman": _json([boot.stability["mean_spearman"]])[0],
        "spearman_replicates": int(replicates.shape[0]), "spearman_over": "all replicates",
        "order_stability": _json([boot.stability["order_stability"]])[0],
    }
    # Rank(UB) as everywhere (engine.kernels.metrics.rank_upper_bound, in the intervals): no interval, no bound
    out["rank_ub"] = _json(np.where(np.isnan(np.asarray(boot.low, dtype=np.float64)), np.nan, boot.rank_ub))
    if pairwise:
        out["score_interval_note"] = "none: the replicates of a bootstrap over systems score different sets of systems"
    else:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a system with no score in any replicate
            lo, hi = np.nanpercentile(replicates, [50 * (1 - level), 50 * (1 + level)], axis=0)
        out["score_low"], out["score_high"] = _json(lo), _json(hi)
    return out


def board_group(ds: xr.Dataset, boot: Any | None = None, replicate_score: Any | None = None, *, level: float = 0.95,
                over: str | None = None, replicates: int = 0) -> dict[str, Any]:
    """The ranking ``ds`` (with the intervals ``boot`` of :func:`engine.labelled.comparison.bootstrap_intervals` and
    the bootstrap's ``replicate_score`` (replicate, system), when a bootstrap ran) as one group of the live dashboard's
    snapshot (the JSON of :class:`engine.sweep.kinds.bootstrap.BootstrapState`, one rule), so that the dashboard's
    leaderboard draws it: every system of the store (``None`` where a rule could not rank it), the leader, the systems
    tied with it, rank and score intervals and Rank(UB) = 1 + the systems scoring above it in at least ``level`` of
    the replicates (:func:`engine.kernels.metrics.rank_upper_bound`, as the dashboard and the report give it).
    """
    from engine.labelled.comparison import degenerate_ranking

    systems = [str(s) for s in ds["system"].values]
    S = len(systems)
    score = np.asarray(ds["score"].values, dtype=np.float64)
    rank = np.where(np.isnan(score), np.nan, np.asarray(ds["rank"].values, dtype=np.float64))
    leader = np.isfinite(score) & (rank == 1)
    rank_list = _ints(rank)
    rule: dict[str, Any] = {
        "rule": str(ds.attrs.get("rule", "score")), "ranking_source": "full data", "score": _json(score),
        "rank": rank_list, "leader": [int(i) for i in np.flatnonzero(leader)], "degenerate": degenerate_ranking(rank_list),
        "replicates_done": 0, "rank_low": [None] * S, "rank_high": [None] * S, "pair_low": [None] * S,
        "pair_high": [None] * S, "tied": [], "rank_ub": [None] * S, "kendall_w": None, "mean_spearman": None,
        "spearman_replicates": 0, "spearman_over": "", "order_stability": None,
        "score_interval_note": "none: no bootstrap (votebench watch --over AXIS gives intervals)",
    }
    if boot is not None and replicate_score is not None:
        at = {s: i for i, s in enumerate(boot.systems)}
        idx = np.array([at.get(s, -1) for s in systems])  # the intervals in the ranking's system order (-1: none)

        def take(a: Any, fill: Any) -> np.ndarray:
            a = np.asarray(a)
            return np.where(idx >= 0, a[np.maximum(idx, 0)], fill) if a.size else np.full(S, fill)

        R = np.asarray(replicate_score.transpose(..., "system").reindex(system=systems).values, dtype=np.float64)
        R = R.reshape(-1, S)
        ordered = replace(boot, systems=systems, score=take(boot.score, np.nan), rank=take(boot.rank, np.nan),
                          low=take(boot.low, np.nan), high=take(boot.high, np.nan), tied=take(boot.tied, False),
                          rank_ub=take(boot.rank_ub, np.nan))
        rule.pop("score_interval_note")
        rule.update(_boot_fields(score, ordered, R, level))
    B = int(rule["replicates_done"])
    return {"name": "watch", "input": "watch", "kind": "bootstrap", "over": over if B else None,
            "replicates": B, "block": B, "blocks_done": 1, "blocks_total": 1, "replicates_done": B,
            "replicates_total": B, "n_systems": S, "systems": systems,
            "interval": "pairwise" if over == "systems" else "percentile", "rules": [rule],
            "agreement": {"rules": [rule["rule"]], "full_data": [[1.0]], "replicates": [[1.0 if B else None]],
                          "common_replicates": [[B]], "pending": []}}
