"""Robustness experiments of the papers: task subsets, manipulation, rescaling, IIA, omitted scores, MCDM sensitivity.

Every experiment evaluates the registry's rule kernels on stacked numpy arrays
(replicates on a leading batch axis) and returns an ``xarray.Dataset`` with
named dims.  Randomness comes from the :mod:`engine.kernels.resample` streams, one per
experiment (``subsets``, ``corrupt``/``synthetic``, ``iia``, ``omit``), so one
replicate recomputed alone (``replicates=[b]`` style) equals its slice of a
larger run.

Rules are named as in the registry; ``"rule:level"`` picks the level for
instance-level data (``"mean:task"`` = sigma_mean, ``"borda:one"`` = sigma_l,
``"borda:two"`` = sigma_2l of Colombo et al. 2022, section 3.3).  The levels
are those of :func:`engine.aggregate` and give the same scores (the tests check
it); the numpy path here exists so that many replicates go through one kernel
call.

Papers
------
* Colombo et al. (2022), "What are the best systems?": task subsets (section
  5.2-5.3, Fig. 5/8/9), manipulation by corrupted tasks (section 4.2, Fig. 3)
  and rescaling (section 4.3, Fig. 7) on the synthetic benchmarks of
  :mod:`engine.labelled.synthetic`.
* Rofin et al. (2023), Vote'n'Rank: independence of irrelevant alternatives
  (section 3.1, Table 2) and robustness to omitted scores (section 3.3, Fig. 2).
* Gjorgjevikj et al. (2025), xLLMBench: sensitivity of PROMETHEE II to the
  preference-function parameters and weights (section 4.3, Appendix B) and
  the Pearson-correlation clustering of criteria (section 4.2, scenario S4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import INSTANCE, REPLICATE, RULE, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.kernels import mcdm as M
from engine.kernels.metrics import spearman
from engine.kernels.paircount import kendall_distance, kendall_tau_b
from engine.kernels.ranking import min_rank
from engine.kernels.resample import replicate_generator, replicate_ids, subset_indices
from engine.labelled.canonical import scores_from_array
from engine.labelled.core import Plan, call_kernel, instance_sums, prepare, task_scores, task_values
from engine.labelled.synthetic import corrupted_noise, first_tasks_mask, ground_truth, gumbel_noise
from engine.rules import LEVELS, Rule, get_rule, get_within

__all__ = [
    "COLOMBO_VARIANTS",
    "PAPER_NAMES",
    "parse_variant",
    "aggregate_array",
    "spearman",
    "normalized_kendall_distance",
    "task_subset_curve",
    "manipulation_curve",
    "rescaling_curve",
    "iia_experiment",
    "omitted_scores_stability",
    "promethee_sensitivity",
    "criteria_clusters",
]

#: sigma_mean, sigma_l and sigma_2l of Colombo et al. (2022), section 3.3
COLOMBO_VARIANTS = ("mean:task", "borda:one", "borda:two")
PAPER_NAMES = {"mean:task": "sigma_mean", "borda:one": "sigma_l", "borda:two": "sigma_2l"}


# ---------------------------------------------------------------------------------------------
# small numpy helpers
# ---------------------------------------------------------------------------------------------
def normalized_kendall_distance(score: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Kendall distance between two score vectors divided by the number of pairs (Colombo, section 4.2).

    A pair ordered oppositely costs 1, a pair tied in exactly one ranking 1/2
    (:func:`engine.kernels.paircount.kendall_distance`); 0 = same ranking,
    1 = reversed.  Without ties it equals ``(1 - tau) / 2``.
    """
    score = np.asarray(score, dtype=np.float64)
    n = np.count_nonzero(~(np.isnan(score) | np.isnan(np.asarray(truth, dtype=np.float64))), axis=-1)
    pairs = n * (n - 1) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, kendall_distance(score, truth) / np.where(pairs > 0, pairs, 1.0), np.nan)


def _mean_std(a: np.ndarray, axis: int = -1, ddof: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (default ddof 1) over ``axis``, ignoring ``NaN``; ``NaN`` where undefined."""
    present = ~np.isnan(a)
    n = present.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(present, a, 0.0).sum(axis=axis) / n
        dev = np.where(present, a - np.expand_dims(mean, axis), 0.0)
        var = (dev * dev).sum(axis=axis) / (n - ddof)
    ok = n > ddof
    return np.where(n > 0, mean, np.nan), np.where(ok, np.sqrt(np.where(ok, var, 0.0)), np.nan)


def _replicates(repeats: int | Sequence[int] | np.ndarray) -> np.ndarray:
    """Replicate indices: ``range(repeats)`` for an int, else the given indices (one replicate recomputed alone
    equals its slice of a larger run)."""
    try:
        ids = replicate_ids(repeats)
    except (TypeError, ValueError) as exc:
        raise VotebenchError(f"repeats must be a positive number or replicate indices >= 0: {exc}") from None
    if ids.size == 0:
        raise VotebenchError("repeats must be >= 1")
    return ids


# ---------------------------------------------------------------------------------------------
# rules on stacked numpy arrays
# ---------------------------------------------------------------------------------------------
def _run(rule: Rule, X: np.ndarray, options: Mapping[str, Any], weights: np.ndarray | None = None) -> np.ndarray:
    """``rule`` on ``(..., T, S)`` through :func:`engine.labelled.core.call_kernel` (options it does not take left out, the tie
    rule applied).  If the batched call fails on tasks or systems absent from some batch elements (all ``NaN``),
    each element is evaluated alone on what it has (absent systems get ``NaN``)."""
    X = np.asarray(X, dtype=np.float64)
    try:
        return call_kernel(rule, X, weights, options)
    except VotebenchError:
        if X.ndim < 3 or not np.isnan(X).any():
            raise
    out = np.full(X.shape[:-2] + X.shape[-1:], np.nan)
    flat, res = X.reshape(-1, *X.shape[-2:]), out.reshape(-1, X.shape[-1])
    for i, m in enumerate(flat):
        sys_ok = ~np.isnan(m).all(axis=0)
        task_ok = ~np.isnan(m).all(axis=1)
        if sys_ok.any() and task_ok.any():
            res[i, sys_ok] = call_kernel(rule, m[np.ix_(task_ok, sys_ok)], None if weights is None else weights[task_ok],
                                         options)
    return out


def parse_variant(spec: str, default_level: str | None) -> tuple[str, Rule, str]:
    name, _, lvl = str(spec).partition(":")
    rule = get_rule(name)
    lvl = lvl or default_level or "task"
    if lvl not in LEVELS:
        raise VotebenchError(f"unknown level {lvl!r} in {spec!r}; choose one of {', '.join(LEVELS)}")
    return str(spec), rule, lvl


@dataclass(frozen=True)
class _Prepared:
    """Per-task pieces of one (rule, level) on instance-level data, ready for task selection.

    ``kind``: ``"across"`` -- ``parts = (Y,)``, task-level scores ``(..., T, S)``
    for the rule's across-task kernel; ``"pool"`` -- ``parts = (sums, counts)``
    of the within statistic per task (level ``one``); ``"judges"`` -- ``parts =
    (x,)`` the instance-level scores ``(..., T, K, S)`` (level ``one`` of a rule
    without a decomposable within statistic).
    """

    rule: Rule
    level: str
    kind: str
    parts: tuple[np.ndarray, ...]
    options: Mapping[str, Any]

    @property
    def task_axis(self) -> int:
        return -3 if self.kind == "judges" else -2

    def take(self, idx: np.ndarray) -> tuple[np.ndarray, ...]:
        """Parts restricted to task indices ``idx`` (``(B, t)``; parts with or without the batch axis)."""
        out = []
        for part in self.parts:
            ax = part.ndim + self.task_axis
            if part.ndim - (2 if self.kind != "judges" else 3) == 0:
                out.append(np.take(part, idx, axis=ax))
            else:
                shape = idx.shape + (1,) * (-self.task_axis - 1)
                out.append(np.take_along_axis(part, idx.reshape(shape), axis=ax))
        return tuple(out)

    def where(self, mask: np.ndarray, other: _Prepared) -> tuple[np.ndarray, ...]:
        """Parts of ``other`` on the tasks where ``mask`` (``(B, T)``) is True, own parts elsewhere."""
        m = mask.reshape(mask.shape + (1,) * (-self.task_axis - 1))
        return tuple(np.where(m, o, s) for s, o in zip(self.parts, other.parts))

    def finish(self, parts: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
        """One score per system, ``(..., S)``."""
        parts = self.parts if parts is None else parts
        if self.kind == "across":
            return _run(self.rule, parts[0], self.options)
        if self.kind == "pool":  # only rules with a within statistic are pooled
            return self.rule.snap(get_within(str(self.rule.within)).pool(*parts))
        x = parts[0]
        return _run(self.rule, x.reshape(*x.shape[:-3], -1, x.shape[-1]), self.options)


def _prepare(x: np.ndarray, rule: Rule, level: str, options: Mapping[str, Any] | None = None) -> _Prepared:
    """Per-task pieces of ``rule`` at ``level`` for oriented scores ``x`` ``(..., T, K, S)`` (``NaN`` = missing)."""
    options = dict(options or {})
    stat_name = "mean" if level == "task" else rule.within
    if stat_name is not None:  # the within step of engine.labelled.core on numpy arrays (exact instance sums, the tie rule)
        stat = get_within(stat_name)
        values = stat.judge(x)
        sums = instance_sums(values, exact=stat.grid is None)
        counts = (~np.isnan(values)).sum(axis=-2)
        if level == "one":
            return _Prepared(rule, level, "pool", (sums, counts), options)
        return _Prepared(rule, level, "across", (task_values(stat, sums, counts),), options)
    if level == "one":
        return _Prepared(rule, level, "judges", (x,), options)
    return _Prepared(rule, level, "across", (_run(rule, x, options),), options)


def aggregate_array(
    x: np.ndarray, *, rule: str = "borda", level: str | None = None, options: Mapping[str, Any] | None = None
) -> np.ndarray:
    """Aggregate oriented numpy scores with leading batch axes: ``(..., T, K, S) -> (..., S)``.

    The batched counterpart of :func:`engine.aggregate` (no weights, groups or
    missing-score policy: ``NaN`` cells are handled as the kernels do).
    ``level`` defaults to ``two`` when ``K > 1`` and ``task`` otherwise.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 3:
        raise VotebenchError(f"x must have shape (..., tasks, instances, systems), got {x.shape}")
    lvl = level or ("two" if x.shape[-2] > 1 else "task")
    _, r, lvl = parse_variant(f"{rule}:{lvl}", None)
    return _prepare(x, r, lvl, options).finish()


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def _tensor(scores: Any) -> xr.DataArray:
    """A score tensor as given, or oriented numpy scores ``(T, S)`` / ``(T, K, S)`` wrapped as one (labels s0.., t0..)."""
    if isinstance(scores, xr.DataArray):
        return scores
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim == 2:
        x = x[:, None, :]
    if x.ndim != 3:
        raise VotebenchError(f"scores must be a score tensor or an array (tasks, [instances,] systems), got shape {x.shape}")
    return scores_from_array(x, layout="system-last")


def _planned(scores: Any, rule: Rule, level: str, missing: str, options: Mapping[str, Any] | None,
             weights: Any = None, *, check: bool = True) -> tuple[Plan, np.ndarray]:
    """The request planned by :func:`engine.labelled.core.prepare` (validation, orientation, missing-score policy, weights,
    options, canonical order) and its oriented, policy-applied scores ``(T, K, S)``; refuses missing scores as
    :func:`engine.aggregate` does when the rule needs a policy and none is chosen."""
    plan = prepare(_tensor(scores), rule=rule.name, level=level, missing=missing, weights=weights, options=options)
    if check:
        plan.check_complete()
    return plan, np.asarray(plan.x.transpose(TASK, INSTANCE, SYSTEM).values, dtype=np.float64)


def _task_level(scores: Any, missing: str = "error", rules: Sequence[Rule] = (), weights: Any = None, *,
                check: bool = True, canonical: bool = True) -> tuple[Plan, np.ndarray]:
    """Oriented task-level scores ``(T, S)`` (the per-task means of :func:`engine.labelled.core.task_scores`: the
    leaderboard) planned as a one-instance tensor, so that the missing-score policy acts on (task, system) cells."""
    da = _tensor(scores)
    means = task_scores(da).transpose(SYSTEM, TASK)
    lb = scores_from_array(np.asarray(means.values, dtype=np.float64), systems=[str(v) for v in da[SYSTEM].values],
                           tasks=[str(v) for v in da[TASK].values])
    needs = [r for r in rules if r.missing == "policy"] or list(rules[:1]) or [get_rule("mean")]
    plan = prepare(lb, rule=needs[0].name, level="task", missing=missing, weights=weights, canonical=canonical)
    if check:
        plan.check_complete()
    return plan, np.asarray(plan.x.isel({INSTANCE: 0}).transpose(TASK, SYSTEM).values, dtype=np.float64)


def _rules_list(rules: str | Sequence[str]) -> list[str]:
    out = [rules] if isinstance(rules, str) else list(rules)
    if not out:
        raise VotebenchError("give at least one rule")
    if len(set(out)) != len(out):
        raise VotebenchError(f"duplicate rules in {out}")
    return out


# ---------------------------------------------------------------------------------------------
# Colombo et al. 2022, sections 5.2-5.3: rankings on random subsets of tasks
# ---------------------------------------------------------------------------------------------
def task_subset_curve(
    scores: Any,
    *,
    rules: str | Sequence[str] = ("borda", "mean"),
    sizes: Sequence[int] | None = None,
    repeats: int | Sequence[int] | np.ndarray = 100,
    seed: int = 0,
    level: str | None = None,
    missing: str = "error",
    options: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Kendall tau-b between the ranking on ``t`` random tasks and the ranking on all tasks (Colombo Fig. 5/8/9).

    "For a given number of tasks t <= T, we randomly sample t tasks, compute the
    rankings [...] on these t tasks, and finally compute the Kendall correlation
    between sigma*,t and the 'ground truth' sigma*" computed on all tasks,
    repeated 100 times (Colombo et al. 2022, section 5.2; section 5.3 does the
    same with sigma_mean, sigma_l and sigma_2l on instance-level data).

    Parameters
    ----------
    scores : xarray.DataArray or ndarray
        Score tensor, or oriented numpy scores ``(T, S)`` / ``(T, K, S)``.
    rules : str or sequence of str
        Rules, optionally ``"rule:level"`` (e.g. ``("mean:task", "borda:one", "borda:two")``).
    sizes : sequence of int, optional
        Subset sizes ``t`` (default ``1..T``).
    repeats : int or sequence of int
        Random subsets per size (replicates), or the indices of the replicates to compute.
    seed : int
        Seed of the ``subsets`` stream (:func:`engine.kernels.resample.subset_indices`:
        independent subsets per size, shared by all rules).
    level : {"task", "one", "two"}, optional
        Level of rules given without one (default ``two`` for instance-level data, else ``task``).
    missing : {"error", "listwise", "drop-judges"}
        Missing-score policy, as :func:`engine.aggregate` applies it: to all
        tasks for the reference ranking and to the drawn tasks for a subset
        (``listwise`` drops only the systems with a missing score on those
        tasks); pairwise rules never need one.
    options : mapping, optional
        Keyword options of the rule kernels.

    Returns
    -------
    xarray.Dataset
        ``tau`` (rule, subset_size, replicate); ``mean`` and ``std`` (ddof 1)
        over replicates (rule, subset_size), ``NaN`` taus (a constant ranking)
        left out; ``full_score`` (rule, system) the all-task scores; ``subsets``
        (subset_size, replicate, slot) the drawn task indices (-1 = unused slot).
    """
    da = _tensor(scores)
    T = da.sizes[TASK]
    ids = _replicates(repeats)
    default_level = level or ("two" if da.sizes[INSTANCE] > 1 else "task")
    variants = [parse_variant(v, default_level) for v in _rules_list(rules)]
    sizes = list(range(1, T + 1)) if sizes is None else [int(t) for t in sizes]
    bad = [t for t in sizes if not 1 <= t <= T]
    if bad:
        raise VotebenchError(f"subset sizes must be between 1 and the number of tasks ({T}), got {bad}")
    prepared = [_prepare(_planned(da, rule, lvl, missing, options)[1], rule, lvl, options) for _, rule, lvl in variants]
    plan, x = _planned(da, variants[0][1], variants[0][2], "error", options, check=False)  # before the policy
    full = np.stack([p.finish() for p in prepared])
    tau, slots = _subset_taus(x, np.asarray(plan.miss.values) > 0, prepared, full, sizes, ids, seed, missing, options)
    mean, std = _mean_std(tau)
    ds = xr.Dataset(
        {
            "tau": ((RULE, "subset_size", REPLICATE), tau),
            "mean": ((RULE, "subset_size"), mean),
            "std": ((RULE, "subset_size"), std),
            "full_score": ((RULE, SYSTEM), full),
            "subsets": (("subset_size", REPLICATE, "slot"), slots),
        },
        coords={RULE: [v[0] for v in variants], "subset_size": sizes, REPLICATE: ids, SYSTEM: plan.systems,
                "level": (RULE, [v[2] for v in variants])},
    )
    ds.attrs = {"experiment": "task subsets (Colombo et al. 2022, section 5.2-5.3)", "seed": int(seed),
                "stream": "subsets", "missing": missing, "n_tasks": T, "tasks": plan.tasks}
    return plan.restored(ds)


def _subset_taus(x: np.ndarray, miss_ts: np.ndarray, prepared: Sequence[_Prepared], full: np.ndarray, sizes: Sequence[int],
                 ids: np.ndarray, seed: int, missing: str, options: Mapping[str, Any] | None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Kendall tau-b of every subset ranking with the full ranking ``(rule, size, replicate)`` and the drawn task slots.

    ``listwise`` drops the systems with a missing score (``miss_ts``, (T, S)) *on the tasks drawn*: those
    subsets are prepared anew from the scores before the policy ``x``.
    """
    T = x.shape[0]
    per_subset = missing == "listwise" and bool(miss_ts.any())
    tau = np.full((len(prepared), len(sizes), ids.size), np.nan)
    slots = np.full((len(sizes), ids.size, max(sizes)), -1, dtype=np.int64)
    for j, t in enumerate(sizes):
        drawn = subset_indices(T, t, seed=seed, replicates=ids)
        slots[j, :, :t] = drawn
        # a subset drawn twice (sorted indices: the same rows) is ranked once, except by a rule whose draw
        # depends on the position in the batch (resample "loop": random_judge)
        uniq, inv = np.unique(drawn, axis=0, return_inverse=True)
        xs: dict[bool, np.ndarray] = {}
        shared: dict[tuple[bool, str], tuple[np.ndarray, ...]] = {}  # task values of a subset, shared by the rules
        for i, p in enumerate(prepared):
            loop = p.rule.resample == "loop"
            idx, back = (drawn, None) if loop else (uniq, np.asarray(inv).reshape(-1))
            if per_subset and p.rule.missing == "policy":
                if loop not in xs:
                    dropped = miss_ts[idx].any(axis=1)  # (U, S)
                    xs[loop] = np.where(dropped[:, None, None, :], np.nan, x[idx])  # (U, t, K, S)
                stat = "mean" if p.level == "task" else p.rule.within
                if stat is None or p.level == "one":
                    sub = _prepare(xs[loop], p.rule, p.level, options).finish()
                else:  # level task / two: the per-task values depend on the within statistic only
                    if (loop, stat) not in shared:
                        shared[(loop, stat)] = _prepare(xs[loop], p.rule, p.level, options).parts
                    sub = _Prepared(p.rule, p.level, "across", shared[(loop, stat)], p.options).finish()
            else:
                sub = p.finish(p.take(idx))
            tau_i = kendall_tau_b(sub, full[i])
            tau[i, j] = tau_i if back is None else tau_i[back]
    return tau, slots


# ---------------------------------------------------------------------------------------------
# Colombo et al. 2022, sections 4.2-4.3: synthetic manipulation and rescaling
# ---------------------------------------------------------------------------------------------
def _synthetic_setup(n_systems, n_tasks, n_instances, phis, repeats, seed, rules, corrupt_location, scale):
    ids = _replicates(repeats)
    phis = [float(v) for v in np.atleast_1d(np.asarray(phis, dtype=np.float64))]
    if any(not np.isfinite(v) or v < 0 for v in phis):
        raise VotebenchError(f"phi values must be finite and >= 0, got {phis}")
    if not (np.isfinite(scale) and scale > 0):
        raise VotebenchError(f"scale must be > 0, got {scale}")
    variants = [parse_variant(v, "two") for v in _rules_list(rules)]
    truth = ground_truth(n_systems)
    noise = gumbel_noise(n_systems, n_tasks, n_instances, seed=seed, replicates=ids) * float(scale)
    order, bad_noise = corrupted_noise(n_systems, n_tasks, n_instances, seed=seed, replicates=ids)
    bad = bad_noise * float(scale) - float(corrupt_location) * truth
    return ids, phis, variants, truth, noise, order, bad


def _curve_dataset(error, tau, variants, phis, axis_name, axis_values, ids, attrs) -> xr.Dataset:
    mean, std = _mean_std(error)
    labels = [v[0] for v in variants]
    dims = (RULE, "phi", axis_name, REPLICATE)
    ds = xr.Dataset(
        {"error": (dims, error), "tau": (dims, tau), "mean": (dims[:-1], mean), "std": (dims[:-1], std)},
        coords={RULE: labels, "phi": phis, axis_name: axis_values, REPLICATE: ids,
                "level": (RULE, [v[2] for v in variants]),
                "paper_name": (RULE, [PAPER_NAMES.get(v[0], v[0]) for v in variants])},
    )
    ds.attrs = attrs
    return ds


def manipulation_curve(
    *,
    rules: str | Sequence[str] = COLOMBO_VARIANTS,
    phis: Sequence[float] = (0.05, 0.1, 0.3),
    n_corrupted: Sequence[int] | None = None,
    n_systems: int = 20,
    n_tasks: int = 20,
    n_instances: int = 20,
    repeats: int | Sequence[int] | np.ndarray = 20,
    seed: int = 0,
    corrupt_location: float = 1.0,
    scale: float = 1.0,
    options: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Error of the aggregated ranking as more tasks are corrupted (Colombo et al. 2022, section 4.2, Fig. 3).

    Each replicate is a synthetic benchmark (:func:`engine.labelled.synthetic.generate_array`):
    clean scores ``phi * n + G``; a corrupted task's scores are i.i.d. Gumbel
    "centered at -n" (its ranking is the reverse of the truth).  The ``k``
    corrupted tasks are the first ``k`` of a random task permutation (stream
    ``corrupt``), so the sets are nested in ``k`` and every ``k`` and ``phi``
    reuses the replicate's random numbers.  "The error is computed relying on
    the normalized Kendall distance between the ground-truth ranking [1, ..., N]
    and the ranking of systems obtained relying on the corrupted scores."

    Parameters
    ----------
    rules : str or sequence of str
        ``"rule:level"`` variants (default sigma_mean, sigma_l, sigma_2l).
    phis : sequence of float
        Signal strengths ``phi`` (0 = no signal, larger = less noise).
    n_corrupted : sequence of int, optional
        Numbers of corrupted tasks (default ``0..T``).
    n_systems, n_tasks, n_instances : int
        ``N``, ``T``, ``K`` (paper: 20 each).
    repeats : int or sequence of int
        Synthetic benchmarks per point (replicates), or the indices of the replicates to compute.
    seed : int
        Seed of the ``synthetic`` and ``corrupt`` streams.
    corrupt_location : float
        Corrupted scores are centred at ``-corrupt_location * n`` (paper: 1).
    scale : float
        Gumbel scale (paper: 1).
    options : mapping, optional
        Keyword options of the rule kernels.

    Returns
    -------
    xarray.Dataset
        ``error`` (normalized Kendall distance to the truth; a tie costs 1/2)
        and ``tau`` (Kendall tau-b with the truth), dims (rule, phi,
        n_corrupted, replicate); ``mean`` and ``std`` of ``error`` over
        replicates.
    """
    ids, phis, variants, truth, noise, order, bad = _synthetic_setup(
        n_systems, n_tasks, n_instances, phis, repeats, seed, rules, corrupt_location, scale)
    ks = list(range(int(n_tasks) + 1)) if n_corrupted is None else [int(k) for k in n_corrupted]
    if any(not 0 <= k <= int(n_tasks) for k in ks):
        raise VotebenchError(f"numbers of corrupted tasks must be between 0 and {n_tasks}, got {ks}")
    masks = [first_tasks_mask(order, k) for k in ks]
    shape = (len(variants), len(phis), len(ks), ids.size)
    error, tau = np.full(shape, np.nan), np.full(shape, np.nan)
    for i, (_, rule, lvl) in enumerate(variants):
        prep_bad = _prepare(bad, rule, lvl, options)
        for j, phi in enumerate(phis):
            prep = _prepare(noise + phi * truth, rule, lvl, options)
            for m, mask in enumerate(masks):
                score = prep.finish(prep.where(mask, prep_bad))
                error[i, j, m] = normalized_kendall_distance(score, truth)
                tau[i, j, m] = kendall_tau_b(score, truth)
    attrs = {"experiment": "robustness to manipulation (Colombo et al. 2022, section 4.2)", "seed": int(seed),
             "n_systems": int(n_systems), "n_tasks": int(n_tasks), "n_instances": int(n_instances),
             "corrupt_location": float(corrupt_location), "scale": float(scale)}
    return _curve_dataset(error, tau, variants, phis, "n_corrupted", ks, ids, attrs)


def rescaling_curve(
    *,
    rules: str | Sequence[str] = COLOMBO_VARIANTS,
    phis: Sequence[float] = (0.05, 0.3),
    factors: Sequence[float] = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
    n_systems: int = 20,
    n_tasks: int = 20,
    n_instances: int = 20,
    repeats: int | Sequence[int] | np.ndarray = 20,
    seed: int = 0,
    reversed_task: bool = True,
    corrupt_location: float = 1.0,
    scale: float = 1.0,
    options: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Error of the aggregated ranking when one task is rescaled by a factor ``x`` (Colombo et al. 2022, section 4.3, Fig. 7).

    "We corrupt the scores of a given task by re-scaling them by a factor of
    x > 0": the rescaled task is a corrupted task of section 4.2 (Gumbel centred
    at ``-n``, reversed ranking) whose scores are multiplied by ``x``; the other
    ``T - 1`` tasks are clean.  This is the reading under which the paper's
    numbers hold (see :mod:`engine.labelled.synthetic`); ``reversed_task=False``
    rescales a clean task instead.  Rankings induced by every (task, instance)
    are unchanged by ``x``, so the Borda variants have the same error for every
    factor, while the mean's error grows towards 1.

    Parameters are those of :func:`manipulation_curve`, plus ``factors`` (the
    ``x`` values, > 0) and ``reversed_task``.  The rescaled task is the first
    task of the replicate's ``corrupt`` permutation.

    Returns
    -------
    xarray.Dataset
        ``error``, ``tau`` (rule, phi, factor, replicate); ``mean`` and ``std`` of ``error``.
    """
    ids, phis, variants, truth, noise, order, bad = _synthetic_setup(
        n_systems, n_tasks, n_instances, phis, repeats, seed, rules, corrupt_location, scale)
    factors = [float(f) for f in factors]
    if any(not np.isfinite(f) or f <= 0 for f in factors):
        raise VotebenchError(f"rescaling factors must be > 0, got {factors}")
    mask = first_tasks_mask(order, 1)[:, :, None, None]
    shape = (len(variants), len(phis), len(factors), ids.size)
    error, tau = np.full(shape, np.nan), np.full(shape, np.nan)
    for j, phi in enumerate(phis):
        clean = noise + phi * truth
        task = bad if reversed_task else clean
        for m, f in enumerate(factors):
            x = np.where(mask, task * f, clean)
            for i, (_, rule, lvl) in enumerate(variants):
                score = _prepare(x, rule, lvl, options).finish()
                error[i, j, m] = normalized_kendall_distance(score, truth)
                tau[i, j, m] = kendall_tau_b(score, truth)
    attrs = {"experiment": "robustness to scaling (Colombo et al. 2022, section 4.3)", "seed": int(seed),
             "n_systems": int(n_systems), "n_tasks": int(n_tasks), "n_instances": int(n_instances),
             "reversed_task": int(bool(reversed_task)), "corrupt_location": float(corrupt_location), "scale": float(scale)}
    return _curve_dataset(error, tau, variants, phis, "factor", factors, ids, attrs)


# ---------------------------------------------------------------------------------------------
# Vote'n'Rank (Rofin et al. 2023), section 3.1 / Table 2: independence of irrelevant alternatives
# ---------------------------------------------------------------------------------------------
def iia_experiment(
    scores: Any,
    *,
    rules: str | Sequence[str] = "borda",
    n_random: int | None = None,
    repeats: int | Sequence[int] | np.ndarray = 50,
    seed: int = 0,
    scope: str = "all",
    weights: Sequence[float] | Mapping[str, float] | None = None,
    missing: str = "error",
    options: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """How often adding a system changes the relative order of systems already ranked (Vote'n'Rank IIA, Table 2).

    "First, we initialise a leaderboard with two random systems m_A and m_B.
    Second, we add a new random system m_C to the leaderboard and check if the
    rankings of m_A and m_B have changed.  We repeat the procedure by adding up
    to |M| systems and counting how often the new system affects the ranking.
    The experiment is run 50 times" (Rofin et al. 2023, section 3.1).

    The added systems are the leaderboard's own systems in a random order: per
    replicate one permutation of the systems (stream ``iia``); its first two are
    m_A and m_B, the next ``n_random`` are added one at a time, and after each
    addition the rule ranks the current leaderboard (task-level scores).  An
    addition *changes the ranking* when the relation (above, tied, below) of a
    pair of systems that were already on the leaderboard differs from the one
    before the addition:

    * ``scope="all"`` (default): any such pair.  This is what the published
      numbers count (Table 2: the authors' ``compute_iia`` compares the whole
      previous ranking with the new ranking without the new system);
    * ``scope="pair"``: only m_A and m_B, as the text describes.

    ``n_changes`` per run is the paper's IIA value (Table 2 reports its mean and
    ``numpy.std``, ddof 0, over 50 runs).  The authors' loop stops one system
    short (it adds ``|M| - 3`` systems); pass ``n_random=|M| - 3`` to mimic it.

    Parameters: ``scores`` a score tensor (instance-level data is reduced to the task means) or
    oriented numpy scores ``(T, S)``; ``rules`` registered rules (all see the same random orders);
    ``n_random`` systems added per run (default all, ``|M| - 2``); ``repeats`` runs (paper: 50) or
    their indices; ``seed`` of the ``iia`` stream; ``weights`` task weights (Vote'n'Rank weights its
    tasks); ``missing`` the policy for missing task-level scores (systems it drops do not enter the
    draws); ``options`` kernel options.

    Returns
    -------
    xarray.Dataset
        ``changed`` (rule, replicate, addition); ``n_changes`` (rule,
        replicate); ``share`` = n_changes / n_random; ``mean`` and ``std``
        (ddof 0) of ``n_changes`` over runs and ``share_mean`` (rule);
        ``relation`` (rule, replicate, step): sign(score_A - score_B) with
        ``2 + step`` systems ranked; the drawn systems ``system_a``, ``system_b``
        (replicate) and ``added`` (replicate, addition).
    """
    ids = _replicates(repeats)
    if scope not in ("all", "pair"):
        raise VotebenchError(f"unknown scope {scope!r}; choose 'all' or 'pair'")
    names = _rules_list(rules)
    rule_objs = [get_rule(n) for n in names]
    plan, Xp = _task_level(scores, missing, rule_objs, weights)
    systems = plan.systems
    pool = np.flatnonzero(~np.isnan(Xp).all(axis=0))
    if pool.size < 3:
        raise VotebenchError(f"the IIA experiment needs at least 3 systems with scores, got {pool.size}")
    n_random = pool.size - 2 if n_random is None else int(n_random)
    if not 1 <= n_random <= pool.size - 2:
        raise VotebenchError(f"n_random must be between 1 and {pool.size - 2} (systems available - 2), got {n_random}")
    perms = np.stack([pool[replicate_generator(seed, int(b), stream="iia").permutation(pool.size)] for b in ids])
    perms = perms[:, : 2 + n_random]
    relation, changed = _iia_changes(rule_objs, Xp, perms, dict(options or {}), plan.weights, scope)
    ds = _iia_dataset(names, ids, changed, relation, perms, systems, n_random)
    ds.attrs = {"experiment": "independence of irrelevant alternatives (Rofin et al. 2023, section 3.1)",
                "seed": int(seed), "stream": "iia", "scope": scope, "n_random": n_random, "missing": missing}
    return ds


def _iia_dataset(names: Sequence[str], ids: np.ndarray, changed: np.ndarray, relation: np.ndarray, perms: np.ndarray,
                 systems: Sequence[str], n_random: int) -> xr.Dataset:
    n_changes = changed.sum(axis=-1).astype(np.float64)
    mean, std = _mean_std(n_changes, ddof=0)
    share = n_changes / n_random
    return xr.Dataset(
        {
            "changed": ((RULE, REPLICATE, "addition"), changed),
            "n_changes": ((RULE, REPLICATE), n_changes),
            "share": ((RULE, REPLICATE), share),
            "mean": (RULE, mean),
            "std": (RULE, std),
            "share_mean": (RULE, _mean_std(share)[0]),
            "relation": ((RULE, REPLICATE, "step"), relation),
            "system_a": (REPLICATE, np.array([systems[k] for k in perms[:, 0]], dtype=object)),
            "system_b": (REPLICATE, np.array([systems[k] for k in perms[:, 1]], dtype=object)),
            "added": ((REPLICATE, "addition"), np.array([[systems[k] for k in row[2:]] for row in perms], dtype=object)),
        },
        coords={RULE: list(names), REPLICATE: ids, "step": np.arange(n_random + 1), "addition": np.arange(1, n_random + 1)},
    )


def _iia_changes(rules: Sequence[Rule], Xp: np.ndarray, perms: np.ndarray, opts: Mapping[str, Any],
                 w: np.ndarray | None, scope: str) -> tuple[np.ndarray, np.ndarray]:
    """``relation`` (rule, replicate, step) of the first two systems and ``changed`` (rule, replicate, addition)."""
    B, n_random = perms.shape[0], perms.shape[1] - 2
    relation = np.zeros((len(rules), B, n_random + 1), dtype=np.int8)
    changed = np.zeros((len(rules), B, n_random), dtype=bool)
    for i, r in enumerate(rules):
        prev = None
        for j in range(n_random + 1):
            Xb = np.moveaxis(Xp[:, perms[:, : 2 + j]], 1, 0)  # (B, T, 2 + j)
            sc = _run(r, Xb, opts, w)
            relation[i, :, j] = np.sign(sc[:, 0] - sc[:, 1]).astype(np.int8)
            if prev is not None:
                if scope == "pair":
                    changed[i, :, j - 1] = relation[i, :, j] != relation[i, :, j - 1]
                else:
                    old = np.sign(prev[:, :, None] - prev[:, None, :])
                    new = np.sign(sc[:, :-1, None] - sc[:, None, :-1])
                    changed[i, :, j - 1] = (old != new).any(axis=(1, 2))
            prev = sc
    return relation, changed


# ---------------------------------------------------------------------------------------------
# Vote'n'Rank section 3.3 / Fig. 2: robustness to omitted scores
# ---------------------------------------------------------------------------------------------
_IMPUTE = ("median", "listwise", "drop-judges", "none")


def _impute(X: np.ndarray, how: str) -> np.ndarray:
    """Missing task-level scores ``(..., T, S)`` handled for rules that need a policy."""
    miss = np.isnan(X)
    if how == "none" or not miss.any():
        return X
    if how == "median":
        # the median of the task over the systems that have a score; a task with no score left is a
        # constant (it then favours no system)
        all_missing = miss.all(axis=-1, keepdims=True)
        safe = np.where(all_missing, 0.0, X)
        with np.errstate(invalid="ignore"):
            med = np.nanmedian(safe, axis=-1, keepdims=True)
        return np.where(miss, med, X)
    if how == "listwise":
        return np.where(miss.any(axis=-2, keepdims=True), np.nan, X)
    return np.where(miss.any(axis=-1, keepdims=True), np.nan, X)


def _omission_amounts(fractions: Sequence[float] | None, counts: Sequence[int] | None,
                      n_present: int) -> tuple[list[int], list[float]]:
    """Numbers of scores to omit and their shares of the ``n_present`` present scores."""
    if fractions is not None and counts is not None:
        raise VotebenchError("give fractions or counts of omitted scores, not both")
    if counts is None:
        fr = [0.05, 0.1, 0.15, 0.2] if fractions is None else [float(f) for f in fractions]
        if any(not 0 <= f <= 1 for f in fr):
            raise VotebenchError(f"fractions must be between 0 and 1, got {fr}")
        return [int(round(f * n_present)) for f in fr], fr
    ns = [int(c) for c in counts]
    if any(not 0 <= c <= n_present for c in ns):
        raise VotebenchError(f"counts must be between 0 and the {n_present} present scores, got {ns}")
    return ns, [c / n_present for c in ns]


def _omission_scores(rules: Sequence[Rule], X: np.ndarray, present: np.ndarray, ns: Sequence[int], ids: np.ndarray,
                     seed: int, impute: str, top: int | None, w: np.ndarray | None, opts: Mapping[str, Any]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reference scores (rule, system) and the Spearman and Kendall agreement (rule, n_omitted, replicate)."""
    T, S = X.shape
    B = ids.size

    def evaluate(r: Rule, Xs: np.ndarray) -> np.ndarray:
        return _run(r, Xs if r.missing == "pairwise" else _impute(Xs, impute), opts, w)

    ref = np.stack([evaluate(r, X) for r in rules])  # (R, S)
    perms = np.stack([present[replicate_generator(seed, int(b), stream="omit").permutation(present.size)] for b in ids])
    rho = np.full((len(rules), len(ns), B), np.nan)
    tau = np.full_like(rho, np.nan)
    for j, n in enumerate(ns):
        mask = np.zeros((B, T * S), dtype=bool)
        np.put_along_axis(mask, perms[:, :n], True, axis=1)
        Xo = np.where(mask.reshape(B, T, S), np.nan, X)
        for i, r in enumerate(rules):
            sc = evaluate(r, Xo)
            if top is not None:
                sc = np.where(min_rank(sc) <= int(top), sc, np.nan)
            rho[i, j], tau[i, j] = spearman(sc, ref[i]), kendall_tau_b(sc, ref[i])
    return ref, rho, tau


def omitted_scores_stability(
    scores: Any,
    *,
    rules: str | Sequence[str] = ("copeland", "minimax", "mean"),
    fractions: Sequence[float] | None = None,
    counts: Sequence[int] | None = None,
    repeats: int | Sequence[int] | np.ndarray = 100,
    seed: int = 0,
    impute: str = "median",
    top: int | None = None,
    weights: Sequence[float] | Mapping[str, float] | None = None,
    options: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Agreement of rankings on leaderboards with randomly omitted scores with the full ranking (Vote'n'Rank Fig. 2).

    "First, we compute the rankings using both methods on each benchmark without
    omitting scores and use them as references.  Next, we randomly replace N
    scores with empty values and find top-7 systems over the corrupted
    leaderboards.  We calculate the Spearman correlation between the final
    rankings and the references.  Note that we use the median values when
    omitting scores for sigma_am and sigma_og" (Rofin et al. 2023, section 3.3;
    Fig. 2 averages 100 runs over 0-20 % missing values).

    Scores are omitted from the task-level leaderboard (task means); ``N`` is a share of the present
    scores, rounded.  Pairwise rules (Copeland, Minimax, ...) get the holes as they are; the others
    get the task's median over the systems that still have a score (``impute="median"``, the paper's
    choice and the authors' ``table.fillna(table.median())``), or ``listwise`` / ``drop-judges`` (the
    engine policies), or ``none`` (holes go to the kernel).  Replicate ``b`` omits the first ``N``
    cells of one permutation of the present cells (stream ``omit``): nested in ``N``, shared by all
    rules.  ``top = k`` correlates only the top-``k`` systems of each corrupted ranking (ties at the
    boundary included), as the authors' code does for "top-7".

    Parameters: ``scores`` (score tensor or oriented numpy ``(T, S)``), ``rules``; ``fractions`` or
    ``counts``, the amounts to omit (shares of the present task-level scores or numbers; default
    fractions 0.05, 0.1, 0.15, 0.2); ``repeats`` runs per amount (paper: 100) or their indices;
    ``seed`` of the ``omit`` stream; ``impute`` (``median``, ``listwise``, ``drop-judges``, ``none``:
    holes for rules that need a policy, also those already in the data for the reference);
    ``top`` (paper: 7); ``weights``; ``options`` (kernel options).

    Returns an ``xarray.Dataset``: ``spearman`` and ``tau`` (Kendall tau-b) between the corrupted and
    the reference scores (rule, n_omitted, replicate); ``mean`` and ``std`` (ddof 1) of ``spearman``
    over runs (rule, n_omitted); ``reference`` (rule, system); coordinate ``fraction`` on ``n_omitted``.
    """
    plan, X = _task_level(scores, check=False, weights=weights)
    ids = _replicates(repeats)
    if impute not in _IMPUTE:
        raise VotebenchError(f"unknown impute {impute!r}; choose one of {', '.join(_IMPUTE)}")
    if top is not None and int(top) < 2:
        raise VotebenchError(f"top must be >= 2, got {top}")
    present = np.flatnonzero(~np.isnan(X).ravel())
    ns, fr = _omission_amounts(fractions, counts, present.size)
    names = _rules_list(rules)
    ref, rho, tau = _omission_scores([get_rule(n) for n in names], X, present, ns, ids, seed, impute, top, plan.weights,
                                     dict(options or {}))
    mean, std = _mean_std(rho)
    ds = xr.Dataset(
        {
            "spearman": ((RULE, "n_omitted", REPLICATE), rho),
            "tau": ((RULE, "n_omitted", REPLICATE), tau),
            "mean": ((RULE, "n_omitted"), mean),
            "std": ((RULE, "n_omitted"), std),
            "reference": ((RULE, SYSTEM), ref),
        },
        coords={RULE: names, "n_omitted": ns, "fraction": ("n_omitted", fr), REPLICATE: ids, SYSTEM: plan.systems},
    )
    ds.attrs = {"experiment": "robustness to omitted scores (Rofin et al. 2023, section 3.3)", "seed": int(seed),
                "stream": "omit", "impute": impute, "top": -1 if top is None else int(top)}
    return plan.restored(ds)


# ---------------------------------------------------------------------------------------------
# xLLMBench (Gjorgjevikj et al. 2025): PROMETHEE II sensitivity and criteria clustering
# ---------------------------------------------------------------------------------------------
def _criteria_matrix(X: Any, maximize: Any) -> tuple[np.ndarray, list[str], list[str], Any]:
    """Criteria x systems values: a score tensor is reduced to oriented task means (then all maximised)."""
    if isinstance(X, xr.DataArray):
        plan, Xn = _task_level(X, check=False, canonical=False)  # criteria in the caller's order (positional weights)
        return Xn, list(plan.systems), list(plan.tasks), True
    Xn = np.asarray(X, dtype=np.float64)
    if Xn.ndim != 2:
        raise VotebenchError(f"X must have shape (criteria, systems), got {Xn.shape}")
    return Xn, [f"s{i}" for i in range(Xn.shape[1])], [f"t{i}" for i in range(Xn.shape[0])], maximize


def promethee_sensitivity(
    X: Any,
    *,
    weights: Sequence[float] | np.ndarray | None = None,
    preference: str | Sequence[str] = "linear_indifference",
    q: float | Sequence[float] | None = None,
    p: float | Sequence[float] | None = None,
    s: float | Sequence[float] | None = None,
    maximize: bool | Sequence[bool] = True,
    deltas: Sequence[float] = (-0.2, -0.1, 0.1, 0.2),
    weight_deltas: Sequence[float] | None = None,
) -> xr.Dataset:
    """Sensitivity of the PROMETHEE II ranking to its parameters and weights (xLLMBench section 4.3, Appendix B).

    Scenarios, each one PROMETHEE II run (one batched :func:`engine.kernels.mcdm.promethee2_net` call):

    * ``baseline``: the given parameters, ``None`` resolved to the xLLMBench defaults;
    * ``q``, ``p``, ``s`` with each ``delta``: that parameter changed to
      ``value + delta * |value|`` on every criterion whose function uses it
      ("increased and decreased by 10% and 20%", section 4.3; for the Gaussian
      ``sigma_def + n sigma_def``, ``n in {-0.2, -0.1, 0.1, 0.2}``, Appendix B);
    * ``q+p`` with each positive ``delta``: Appendix B's linear scenario, "the
      indifference parameter a is increased by 10% and 20% of its initial
      value, while at the same time the preference parameter b is decreased by
      10% and 20%": ``q + delta |q|`` and ``p - delta |p|`` together (criteria
      whose function uses both);
    * ``weight`` with each ``weight_delta`` and criterion: that criterion's
      weight times ``1 + delta`` (weights renormalised by the kernel).

    A scenario with inconsistent thresholds (``q > p``, negative ``s`` or V-shape ``p``) is
    marked ``valid = False`` and has ``NaN`` results.

    Parameters
    ----------
    X : xarray.DataArray or array_like, shape (T, S)
        Score tensor (oriented task means are used) or a criteria x systems matrix.
    weights, preference, q, p, s, maximize
        As in :func:`engine.kernels.mcdm.promethee2` (``maximize`` is ignored for a score tensor).
    deltas, weight_deltas : sequence of float
        Relative changes of the parameters and of each weight (default ``deltas``; empty: none).

    Returns
    -------
    xarray.Dataset
        Dims ``scenario`` (coords ``parameter``, ``delta``, ``criterion`` -- the
        criterion of a weight scenario, ``""`` otherwise), ``system``, ``task``.
        ``net_flow`` and ``rank`` (min rank, 1 = best) per scenario and system;
        ``rank_change`` = rank - baseline rank, ``max_rank_change`` (largest
        absolute change); ``spearman`` and ``tau`` with the baseline net flows;
        ``spearman_matrix`` (scenario, other_scenario) between all scenarios (the
        heatmaps of Appendix B); ``q``, ``p``, ``s``, ``weight`` (scenario, task)
        the parameters used (``NaN``: unused by that criterion's function).
    """
    Xn, systems, tasks, maximize = _criteria_matrix(X, maximize)
    T = Xn.shape[0]
    w0 = np.ones(T) / T if weights is None else np.asarray(weights, dtype=np.float64)
    try:
        setup = M.promethee_setup(Xn, weights=w0, preference=preference, q=q, p=p, s=s, maximize=maximize)
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None
    rows = _sensitivity_scenarios(setup, w0, tasks, [float(d) for d in deltas],
                                  [float(d) for d in (deltas if weight_deltas is None else weight_deltas)])
    Q, P, Sg, W = (np.stack([r[k] for r in rows]) for k in (3, 4, 5, 6))
    valid = np.ones(len(rows), dtype=bool)
    valid &= ~(setup.uses_q & setup.uses_p & (Q > P)).any(axis=1)
    valid &= ~(setup.uses_s & (Sg < 0)).any(axis=1)
    valid &= ~(setup.vshape & (P < 0)).any(axis=1)
    valid &= (W >= 0).all(axis=1) & (W.sum(axis=1) > 0)
    Qr, Pr, Sr, Wr = (np.where(valid[:, None], A, A[:1]) for A in (Q, P, Sg, W))
    Xb = np.broadcast_to(setup.X, (len(rows),) + setup.X.shape)
    try:
        net = M.promethee2_net(Xb, weights=Wr, preference=preference, q=Qr, p=Pr, s=Sr, maximize=True)
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None
    net = np.where(valid[:, None], net, np.nan)
    ds = _sensitivity_dataset(rows, net, valid, Q, P, Sg, W, systems, tasks)
    ds.attrs = {"experiment": "PROMETHEE II sensitivity (xLLMBench section 4.3, Appendix B)",
                "preference": preference if isinstance(preference, str) else ",".join(map(str, preference))}
    return ds


def _sensitivity_dataset(rows: Sequence[tuple[Any, ...]], net: np.ndarray, valid: np.ndarray, Q: np.ndarray, P: np.ndarray,
                         Sg: np.ndarray, W: np.ndarray, systems: Sequence[str], tasks: Sequence[str]) -> xr.Dataset:
    rank = min_rank(net)
    rank_change = rank - rank[0]
    scen = np.arange(len(rows))
    coords = {
        "scenario": scen,
        "parameter": ("scenario", [r[0] for r in rows]),
        "delta": ("scenario", [r[1] for r in rows]),
        "criterion": ("scenario", [r[2] for r in rows]),
        "other_scenario": scen,
        SYSTEM: list(systems),
        TASK: list(tasks),
    }
    return xr.Dataset(
        {
            "net_flow": (("scenario", SYSTEM), net),
            "rank": (("scenario", SYSTEM), rank),
            "rank_change": (("scenario", SYSTEM), rank_change),
            "max_rank_change": ("scenario", np.abs(rank_change).max(axis=1)),  # NaN for invalid scenarios
            "spearman": ("scenario", spearman(net, net[0])),
            "tau": ("scenario", kendall_tau_b(net, net[0])),
            "spearman_matrix": (("scenario", "other_scenario"), spearman(net[:, None, :], net[None, :, :])),
            "valid": ("scenario", valid),
            "q": (("scenario", TASK), Q),
            "p": (("scenario", TASK), P),
            "s": (("scenario", TASK), Sg),
            "weight": (("scenario", TASK), W / W.sum(axis=1, keepdims=True)),
        },
        coords=coords,
    )


def _sensitivity_scenarios(setup: M.PrometheeSetup, w0: np.ndarray, tasks: Sequence[str], deltas: Sequence[float],
                           weight_deltas: Sequence[float]) -> list[tuple[str, float, str, Any, Any, Any, np.ndarray]]:
    """The scenarios of :func:`promethee_sensitivity`: (parameter, delta, criterion, q, p, s, weights) each."""
    q0, p0, s0 = setup.q, setup.p, setup.s
    rows: list[tuple[str, float, str, Any, Any, Any, np.ndarray]] = [("baseline", 0.0, "", q0, p0, s0, w0)]

    def moved(v: np.ndarray, use: np.ndarray, d: float) -> np.ndarray:
        return np.where(use, v + d * np.abs(v), v)

    for name, use, base in (("q", setup.uses_q, q0), ("p", setup.uses_p, p0), ("s", setup.uses_s, s0)):
        if (use & (np.nan_to_num(base) != 0)).any():
            for d in deltas:
                args = {"q": q0, "p": p0, "s": s0}
                args[name] = moved(base, use, d)
                rows.append((name, d, "", args["q"], args["p"], args["s"], w0))
    both = setup.uses_q & setup.uses_p
    if both.any():
        for d in (d for d in deltas if d > 0):
            rows.append(("q+p", d, "", moved(q0, both, d), moved(p0, both, -d), s0, w0))
    for t in range(len(tasks)):
        if w0[t] > 0:
            for d in weight_deltas:
                w = w0.copy()
                w[t] = w0[t] * (1 + d)
                rows.append(("weight", d, tasks[t], q0, p0, s0, w))
    return rows


def _cluster_labels(r: np.ndarray, threshold: float | None, n_clusters: int | None, method: str
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Hierarchical clusters (1, 2, ... in order of first appearance) of criteria with correlations ``r``, and the linkage."""
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    T = r.shape[0]
    if T == 1:
        return np.array([1]), np.zeros((0, 4))
    D = np.clip(1.0 - r, 0.0, 2.0)
    D = (D + D.T) / 2.0
    np.fill_diagonal(D, 0.0)
    try:
        Z = linkage(squareform(D, checks=False), method=method)
    except ValueError as exc:
        raise VotebenchError(f"criteria clustering: {exc}") from None
    if threshold is not None:
        raw = fcluster(Z, t=1.0 - float(threshold), criterion="distance")
    else:
        assert n_clusters is not None  # the caller gives exactly one of the two
        if not 1 <= int(n_clusters) <= T:
            raise VotebenchError(f"n_clusters must be between 1 and the number of criteria ({T}), got {n_clusters}")
        raw = fcluster(Z, t=int(n_clusters), criterion="maxclust")
    first: dict[int, int] = {}
    for c in raw:
        first.setdefault(int(c), len(first) + 1)
    return np.array([first[int(c)] for c in raw]), Z


def _pearson_matrix(X: np.ndarray) -> np.ndarray:
    """Pearson correlation between the rows of ``X`` (T, S) over the systems both rows have; ``NaN`` if undefined."""
    T = X.shape[0]
    present = ~np.isnan(X)
    R = np.full((T, T), np.nan)
    for i in range(T):
        both = present[i] & present  # (T, S)
        n = both.sum(axis=1)
        a = np.where(both, X[i], 0.0)
        b = np.where(both, X, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            ma = a.sum(axis=1) / n
            mb = b.sum(axis=1) / n
            da = np.where(both, a - ma[:, None], 0.0)
            db = np.where(both, b - mb[:, None], 0.0)
            den = np.sqrt((da * da).sum(axis=1) * (db * db).sum(axis=1))
            R[i] = np.where((n >= 2) & (den > 0), (da * db).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)
    return R


def criteria_clusters(
    X: Any,
    *,
    threshold: float | None = None,
    n_clusters: int | None = None,
    method: str = "average",
    absolute: bool = False,
) -> xr.Dataset:
    """Clusters of correlated criteria and one representative per cluster (xLLMBench section 4.2, scenario S4).

    "The Pearson correlation coefficient is used to calculate the correlation
    between the performance values of all criteria pairs, followed by
    clustering to identify correlated criteria", then one metric is selected
    from each cluster.  The paper names no linkage or cut; here: distance
    ``1 - r`` (``1 - |r|`` with ``absolute``), ``scipy`` hierarchical clustering
    with ``method`` (default average linkage, the linkage xLLMBench uses for its
    dendrograms), cut where the linkage correlation falls below ``threshold``
    (distance ``1 - threshold``) or into ``n_clusters`` clusters.

    The representative of a cluster is the criterion with the highest mean
    correlation with the other members (first in task order on ties; a
    singleton represents itself).  A correlation that is undefined (a constant
    criterion, fewer than two shared systems) counts as 0.

    Parameters: ``X`` a score tensor (oriented task means) or criteria x systems values ``(T, S)``;
    ``threshold`` (minimum linkage correlation inside a cluster) or ``n_clusters``; ``method`` of
    ``scipy.cluster.hierarchy.linkage``; ``absolute``: cluster on ``|r|``.

    Returns
    -------
    xarray.Dataset
        ``correlation`` (task, other_task); ``cluster`` (task) labels 1.. in
        order of first appearance; ``representative`` (task) bool;
        ``within_correlation`` (task) the mean correlation with the other
        members; ``linkage`` (merge, field) the scipy linkage matrix; attrs
        ``selected``: the representatives' names.
    """
    if (threshold is None) == (n_clusters is None):
        raise VotebenchError("give exactly one of threshold (a correlation level) or n_clusters")
    Xn, _, tasks, _ = _criteria_matrix(X, True)
    T = Xn.shape[0]
    R = _pearson_matrix(Xn)
    r = np.nan_to_num(np.abs(R) if absolute else R, nan=0.0)
    np.fill_diagonal(r, 1.0)
    labels, Z = _cluster_labels(r, threshold, n_clusters, method)
    within = np.full(T, np.nan)
    representative = np.zeros(T, dtype=bool)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        if members.size == 1:
            representative[members] = True
            continue
        sub = r[np.ix_(members, members)]
        within[members] = (sub.sum(axis=1) - 1.0) / (members.size - 1)
        representative[members[int(np.argmax(within[members]))]] = True
    ds = xr.Dataset(
        {
            "correlation": ((TASK, "other_task"), R),
            "cluster": (TASK, labels),
            "representative": (TASK, representative),
            "within_correlation": (TASK, within),
            "linkage": (("merge", "field"), Z),
        },
        coords={TASK: tasks, "other_task": tasks, "field": ["left", "right", "distance", "size"]},
    )
    ds.attrs = {"experiment": "criteria correlation clustering (xLLMBench section 4.2)", "method": method,
                "absolute": int(bool(absolute)), "selected": [tasks[i] for i in np.flatnonzero(representative)]}
    if threshold is not None:
        ds.attrs["threshold"] = float(threshold)
    elif n_clusters is not None:
        ds.attrs["n_clusters"] = int(n_clusters)
    return ds

