"""Comparing rankings: across rules, across bootstrap replicates and across task subsets.

What ``votebench bootstrap`` prints and ``votebench report`` draws, computed here
(the app layer only renders it):

* :func:`rank_changes` -- the rank change of every system under every rule
  against a baseline rule;
* :func:`rule_flags` -- the rules whose rankings mislead as rank changes (a
  random judge, a single-winner rule, a scale-bound rule on other scales);
* :func:`promethee_flows` -- PROMETHEE II positive, negative and net flows;
* :func:`bootstrap_intervals` -- the rank interval of every system and the
  stability of a bootstrap (percentiles of the replicate ranks, or for a
  candidate bootstrap the ranks its sure pairwise orders allow);
* :func:`tau_moments` -- mean, standard deviation and count of the taus of
  task-subset curves.

The significance tests (Friedman, Nemenyi, Wilcoxon-Holm) are in
:mod:`engine.kernels.significance`, the rank statistics they rest on in :mod:`engine.kernels.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import RULE, SYSTEM
from engine.errors import VotebenchError

__all__ = ["Intervals", "RuleFlag", "bootstrap_intervals", "degenerate_ranking", "promethee_flows", "rank_changes", "rule_flags",
           "tau_moments"]


def rank_changes(ranks: xr.DataArray, *, baseline: str = "mean") -> xr.DataArray:
    """Rank change of every system under every rule against the baseline rule.

    Parameters
    ----------
    ranks : xarray.DataArray, dims (system, rule)
        Ranks, 1 = best.
    baseline : str
        The ``rule`` label to compare with.

    Returns
    -------
    xarray.DataArray, dims (system, rule)
        ``rank under baseline - rank under the rule``: positive when the rule
        puts the system higher (better) than the baseline does; 0 in the
        baseline's own column.
    """
    labels = [str(r) for r in ranks[RULE].values]
    if baseline not in labels:
        raise VotebenchError(f"baseline rule {baseline!r} is not among the rules {', '.join(labels)}")
    out = ranks.sel({RULE: baseline}) - ranks
    out.name = "rank_change"
    return out


def promethee_flows(X: np.ndarray, *, weights: np.ndarray | None = None, **options: Any
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PROMETHEE II positive, negative and net flows of complete task-level scores.

    A thin wrapper of :func:`engine.kernels.mcdm.promethee2` (which returns all
    three flows; the rule registry keeps only the net flow), with its errors as
    :class:`VotebenchError`.

    Parameters
    ----------
    X : array_like, shape (T, S)
        Oriented scores (higher is better), complete.
    weights : array_like, shape (T,), optional
        Criterion weights (default equal).
    **options
        ``preference``, ``q``, ``p``, ``s`` of :func:`engine.kernels.mcdm.promethee2`.

    Returns
    -------
    phi_plus, phi_minus, phi : ndarray, shape (S,)
    """
    from engine.kernels.mcdm import promethee2

    try:
        return promethee2(np.asarray(X, dtype=np.float64), weights=weights, **options)
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# rules whose ranking is not an aggregate to compare
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuleFlag:
    """Why a rule's ranking is degenerate (``leave_out``: not drawn by default) or needs a remark."""

    label: str
    kind: str  # "random", "single-winner", "scale", "fallback"
    text: str
    leave_out: bool


def _single_winner(label: str, name: str, sc: np.ndarray, systems: Sequence[str]) -> RuleFlag | None:
    """A flag when at most two distinct ranks remain among three or more ranked systems."""
    from engine.kernels.ranking import min_rank

    ranked = np.isfinite(sc)
    n = int(ranked.sum())
    distinct = np.unique(min_rank(sc[ranked])).size if n else 0
    if n < 3 or distinct > 2:
        return None
    top = [systems[j] for j in np.flatnonzero(ranked & (sc == np.nanmax(sc))).tolist()]
    if distinct == 1:
        text = f"{label}: every system ties (no {'Condorcet ' if name == 'condorcet' else ''}winner)"
    else:
        text = f"{label}: a single-winner rule: winner {', '.join(top)}; the {n - len(top)} others tie behind"
    return RuleFlag(label, "single-winner", text, True)


def _flag(label: str, name: str, sc: np.ndarray, X: np.ndarray | None, systems: Sequence[str],
          options: Mapping[str, Any]) -> RuleFlag | None:
    if name == "random_judge":
        return RuleFlag(label, "random", f"{label}: the ranking of one task drawn at random (a lottery over the "
                                         "tasks, not an aggregate of them)", True)
    single = _single_winner(label, name, sc, systems)
    if single is not None:
        return single
    if name == "optimality_gap" and X is not None and np.isfinite(X).any():
        lo, hi = float(np.nanmin(X)), float(np.nanmax(X))
        if lo < 0.0 or hi > 1.0:
            gamma = options.get("gamma", 0.95)
            return RuleFlag(label, "scale", f"{label}: the scores are not on a 0-1 scale (they span {lo:.4g} to "
                                            f"{hi:.4g}), so the shortfall below gamma = {gamma:g} does not mean "
                                            "what the rule assumes", True)
    n = int(np.isfinite(sc).sum())
    if name == "kemeny" and n > 12:
        return RuleFlag(label, "fallback", f"{label}: {n} ranked systems, more than the 12 solved exactly: the "
                                           "ranking is Borda's count (the exact Kemeny optimum is not computed)", False)
    return None


def rule_flags(labels: Sequence[str], names: Mapping[str, str], score: np.ndarray, X: np.ndarray | None,
               systems: Sequence[str], options: Mapping[str, Mapping[str, Any]] | None = None) -> list[RuleFlag]:
    """The rules of a comparison whose rankings mislead as rank changes, and remarks on the others.

    Parameters
    ----------
    labels : sequence of str
        Rule labels (rows of ``score``).
    names : mapping
        ``label -> registered rule name``.
    score : ndarray, shape (R, S)
        Full-data scores of the ranked systems (higher is better).
    X : ndarray, shape (T, S), optional
        Oriented task-level scores of the same systems (for the scale check).
    systems : sequence of str
    options : mapping, optional
        ``label -> rule options`` (``gamma`` of ``optimality_gap``).

    Returns
    -------
    list of RuleFlag
        ``random``: ``random_judge`` (one task drawn at random: a lottery, not
        an aggregate); ``single-winner``: a rule that ranks only a winner (at
        most two distinct ranks among three or more systems, e.g.
        ``condorcet``), reported as its winner; ``scale``: ``optimality_gap``
        on scores outside [0, 1], where the gap below ``gamma`` is mostly 0 or
        meaningless; these three are left out of the rank tables and figures
        unless asked for.  ``fallback``: ``kemeny`` on more than 12 ranked
        systems, which is Borda's count (said, kept).
    """
    out = []
    for i, label in enumerate(labels):
        flag = _flag(label, names.get(label, label), np.asarray(score[i], dtype=np.float64), X, systems,
                     (options or {}).get(label, {}))
        if flag is not None:
            out.append(flag)
    return out


# ---------------------------------------------------------------------------------------------
# bootstrap: rank intervals and stability
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Intervals:
    """The rank intervals and stability of one rule's bootstrap (:func:`bootstrap_intervals`).

    Attributes
    ----------
    systems : list of str
    score, rank : ndarray, shape (S,)
        Full-data score and competition rank (``NaN``: not ranked).
    low, high : ndarray, shape (S,)
        The interval of every system's rank.
    tied : ndarray of bool, shape (S,)
        The leader(s) and the systems the leader does not beat in at least ``level`` of the replicates.
    kind : {"percentile", "pairwise"}
        Percentiles of the replicate ranks, or (candidate bootstrap) the ranks the sure pairwise orders allow.
    level : float
    stability : dict
        ``kendall_w``, ``mean_spearman``, ``mean_kendall`` and ``order_stability`` (``NaN``: undefined).
    rank_ub : ndarray, shape (S,)
        Rank(UB) (:func:`engine.kernels.metrics.rank_upper_bound`): 1 + the systems scoring above this one in at
        least ``level`` of the replicates holding both.
    """

    systems: list[str]
    score: np.ndarray
    rank: np.ndarray
    low: np.ndarray
    high: np.ndarray
    tied: np.ndarray
    kind: str
    level: float
    stability: dict[str, float]
    rank_ub: np.ndarray

    @property
    def description(self) -> str:
        """What the interval is, in one sentence (:func:`engine.kernels.metrics.interval_description`)."""
        from engine.kernels.metrics import interval_description

        return interval_description(self.kind, self.level)

    def ranked(self) -> list[int]:
        """Indices of the ranked systems (a full-data score, which may be infinite), best first, ties in the canonical
        label order (:func:`engine.kernels.ranking.label_order`: ``M2`` before ``M13``), as the report lists them."""
        from engine.kernels.ranking import rank_order

        return [int(i) for i in rank_order(self.rank, list(self.systems)) if not math.isnan(self.score[i])]


def bootstrap_intervals(boot: xr.Dataset, *, level: float = 0.95, over: str | None = None) -> Intervals:
    """Rank intervals and stability of a bootstrap (:func:`engine.bootstrap`'s Dataset, computed or lazy).

    ``over`` (default: the Dataset's ``over`` attribute) ``"systems"``: a candidate bootstrap, whose
    replicates rank only the systems they draw, so that percentiles of its replicate ranks are biased
    toward 1; its intervals are :func:`engine.kernels.metrics.pairwise_rank_bounds` instead.  Otherwise the
    percentiles of :func:`engine.summarize`.
    """
    from engine.kernels import metrics
    from engine.labelled.bootstrap import summarize

    summ = summarize(boot, level=level)
    point = np.asarray(summ["score"].values, dtype=np.float64)
    prob = np.asarray(summ["prob_above"].values, dtype=np.float64)
    kind = "pairwise" if (over or boot.attrs.get("over")) == "systems" else "percentile"
    if kind == "pairwise":
        low, high = metrics.pairwise_rank_bounds(point, prob, level=level)
        rank_ub = low  # Rank(UB) is the low pairwise bound (metrics.rank_upper_bound): computed once
    else:
        low, high = (np.asarray(summ[v].values, dtype=np.float64) for v in ("rank_low", "rank_high"))
        rank_ub = metrics.rank_upper_bound(point, prob, level=level)
    stability = {k: float(summ[k]) for k in ("kendall_w", "mean_spearman", "mean_kendall")}
    stability["order_stability"] = float(metrics.order_stability(point, prob))
    return Intervals([str(s) for s in summ[SYSTEM].values], point, np.asarray(summ["rank"].values, dtype=np.float64),
                     np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64),
                     np.asarray(summ["tied_with_leader"].values, dtype=bool), kind, float(level), stability,
                     np.asarray(rank_ub, dtype=np.float64))


# ---------------------------------------------------------------------------------------------
# task subsets
# ---------------------------------------------------------------------------------------------
def tau_moments(tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard deviation (``ddof=1``) and count of the finite values along the last axis.

    ``NaN`` where there is no finite value (mean) or fewer than two (standard deviation).

    Examples
    --------
    >>> mean, std, n = tau_moments(np.array([[1.0, 0.0, np.nan], [np.nan, np.nan, np.nan]]))
    >>> mean.tolist(), np.round(std, 6).tolist(), n.tolist()
    ([0.5, nan], [0.707107, nan], [2, 0])
    """
    tau = np.asarray(tau, dtype=np.float64)
    n = np.isfinite(tau).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.nansum(tau, axis=-1) / np.maximum(n, 1), np.nan)
        dev = np.where(np.isfinite(tau), tau - mean[..., None], 0.0)
        std = np.where(n > 1, np.sqrt((dev**2).sum(axis=-1) / np.maximum(n - 1, 1)), np.nan)
    return mean, std, n


def degenerate_ranking(rank: Sequence[float | None]) -> dict[str, Any] | None:
    """Whether a ranking is degenerate: more than half of the ranked systems share one rank (which includes a
    single winner with everyone else tied, said apart); ``None`` when not (or fewer than 3 systems ranked)."""
    r = np.array([v for v in rank if v is not None and math.isfinite(v)], dtype=np.float64)
    n = r.size
    if n < 3:
        return None
    vals, counts = np.unique(r, return_counts=True)
    k = int(counts.argmax())
    big, at = int(counts[k]), float(vals[k])
    if 2 * big <= n:
        return None
    shown = int(at) if at.is_integer() else at
    if big == n - 1 and at != 1:
        why = f"one winner, and the other {big} systems all tied at rank {shown}"
    else:
        why = f"{big} of {n} systems tied at rank {shown}"
    return {"tied": big, "of": n, "rank": at, "why": why}
