"""Robustness experiments of the papers: task subsets, manipulation, rescaling, IIA, omitted scores, MCDM sensitivity.

Every experiment evaluates the registry's rule kernels on stacked numpy arrays
(replicates on a leading batch axis) and returns an ``xarray.Dataset`` with
named dims.  Randomness comes from the :mod:`engine.resample` streams, one per
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
  :mod:`engine.synthetic`.
* Rofin et al. (2023), Vote'n'Rank: independence of irrelevant alternatives
  (section 3.1, Table 2) and robustness to omitted scores (section 3.3, Fig. 2).
* Gjorgjevikj et al. (2025), xLLMBench: sensitivity of PROMETHEE II to the
  preference-function parameters and weights (section 4.3, Appendix B) and
  the Pearson-correlation clustering of criteria (section 4.2, scenario S4).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from .core import orient
from .dims import INSTANCE, REPLICATE, RULE, SYSTEM, TASK
from .errors import VotebenchError
from .io import validate_scores
from .kernels import mcdm as M
from .kernels.kemeny import kendall_distance, kendall_tau_b
from .kernels.ranking import borda_points, min_rank
from .resample import replicate_generator, replicate_ids, subset_indices
from .rules import LEVELS, Rule, get_rule, get_within
from .synthetic import corrupted_noise, first_tasks_mask, ground_truth, gumbel_noise

__all__ = [
    "COLOMBO_VARIANTS",
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
_PAPER_NAMES = {"mean:task": "sigma_mean", "borda:one": "sigma_l", "borda:two": "sigma_2l"}


# ---------------------------------------------------------------------------------------------
# small numpy helpers
# ---------------------------------------------------------------------------------------------
def spearman(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's rank correlation, vectorised over leading axes; systems missing in either vector are left out.

    Ranks are average ranks (ties share the mean position), computed among the
    systems present in both vectors; the result is Pearson's correlation of
    those ranks (as ``scipy.stats.spearmanr``).  ``NaN`` when fewer than two
    systems remain or one ranking is constant.

    Parameters
    ----------
    a, b : array_like, shape (..., S)

    Returns
    -------
    ndarray, shape (...)

    Examples
    --------
    >>> float(spearman(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0])))
    0.8
    """
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    both = ~(np.isnan(a) | np.isnan(b))
    ra = borda_points(np.where(both, a, np.nan))  # average rank - 1 among the present systems
    rb = borda_points(np.where(both, b, np.nan))
    n = both.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = np.nansum(ra, axis=-1) / n
        mb = np.nansum(rb, axis=-1) / n
        da = np.where(both, ra - ma[..., None], 0.0)
        db = np.where(both, rb - mb[..., None], 0.0)
        num = (da * db).sum(axis=-1)
        den = np.sqrt((da * da).sum(axis=-1) * (db * db).sum(axis=-1))
        return np.where((n >= 2) & (den > 0), num / np.where(den > 0, den, 1.0), np.nan)


def normalized_kendall_distance(score: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Kendall distance between two score vectors divided by the number of pairs (Colombo, section 4.2).

    A pair ordered oppositely costs 1, a pair tied in exactly one ranking 1/2
    (:func:`engine.kernels.kemeny.kendall_distance`); 0 = same ranking,
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


def _replicates(repeats: int | Sequence[int]) -> np.ndarray:
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
def _kernel_options(rule: Rule, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options a rule's kernel takes (all of them for a kernel with ``**options``)."""
    params = inspect.signature(rule.kernel).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return dict(options)
    names = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY} - {"weights"}
    return {k: v for k, v in options.items() if k in names}


def _run(rule: Rule, X: np.ndarray, options: Mapping[str, Any], weights: np.ndarray | None = None) -> np.ndarray:
    """``rule.kernel`` on ``(..., T, S)`` with task weights ``(T,)``; options the kernel does not take are
    left out.  If the batched call fails on absent systems or tasks (all ``NaN``), every batch element is
    evaluated alone on what is present (absent systems get ``NaN``)."""
    X = np.asarray(X, dtype=np.float64)
    options = _kernel_options(rule, options)
    try:
        return rule.snap(np.asarray(rule.kernel(X, weights=weights, **options), dtype=np.float64), X)
    except TypeError as exc:
        raise VotebenchError(f"rule {rule.name!r}: bad options {sorted(options)} ({exc})") from None
    except ValueError as exc:
        first = exc
    out = np.full(X.shape[:-2] + X.shape[-1:], np.nan)
    flat, res = X.reshape(-1, *X.shape[-2:]), out.reshape(-1, X.shape[-1])
    if not np.isnan(X).any():
        raise VotebenchError(f"rule {rule.name!r}: {first}") from None
    for i, m in enumerate(flat):
        sys_ok = ~np.isnan(m).all(axis=0)
        task_ok = ~np.isnan(m).all(axis=1)
        if sys_ok.sum() < 1 or task_ok.sum() < 1:
            continue
        try:
            w = None if weights is None else weights[task_ok]
            sub = m[np.ix_(task_ok, sys_ok)]
            res[i, sys_ok] = rule.snap(np.asarray(rule.kernel(sub, weights=w, **options), dtype=np.float64), sub)
        except ValueError as exc:
            raise VotebenchError(f"rule {rule.name!r}: {exc}") from None
    return out


def _parse_variant(spec: str, default_level: str | None) -> tuple[str, Rule, str]:
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
        if self.kind == "pool":
            return self.rule.snap(get_within(self.rule.within).pool(*parts))
        x = parts[0]
        return _run(self.rule, x.reshape(*x.shape[:-3], -1, x.shape[-1]), self.options)


def _prepare(x: np.ndarray, rule: Rule, level: str, options: Mapping[str, Any] | None = None) -> _Prepared:
    """Per-task pieces of ``rule`` at ``level`` for oriented scores ``x`` ``(..., T, K, S)`` (``NaN`` = missing)."""
    options = dict(options or {})
    stat_name = "mean" if level == "task" else rule.within
    if stat_name is not None:
        stat = get_within(stat_name)
        values = stat.judge(x)
        present = ~np.isnan(values)
        sums = np.where(present, values, 0.0).sum(axis=-2)
        counts = present.sum(axis=-2)
        if level == "one":
            return _Prepared(rule, level, "pool", (sums, counts), options)
        return _Prepared(rule, level, "across", (stat.task(sums, counts),), options)
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
    _, r, lvl = _parse_variant(f"{rule}:{lvl}", None)
    return _prepare(x, r, lvl, options).finish()


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def _as_tensor(scores: Any) -> tuple[np.ndarray, list[str], list[str]]:
    """Oriented ``(T, K, S)`` float64 numpy scores plus system and task labels.

    A score tensor (DataArray) is oriented with :func:`engine.orient`; a numpy
    array is taken as oriented, ``(T, S)`` (task level) or ``(T, K, S)``.
    """
    if isinstance(scores, xr.DataArray):
        validate_scores(scores)
        x = orient(scores).transpose(TASK, INSTANCE, SYSTEM)
        return (np.asarray(x.values, dtype=np.float64), [str(s) for s in scores[SYSTEM].values],
                [str(t) for t in scores[TASK].values])
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim == 2:
        x = x[:, None, :]
    if x.ndim != 3:
        raise VotebenchError(f"scores must be a score tensor or an array (tasks, [instances,] systems), got shape {x.shape}")
    if np.isinf(x).any():
        raise VotebenchError("scores contain infinite values")
    return x, [f"s{i}" for i in range(x.shape[-1])], [f"t{i}" for i in range(x.shape[0])]


def _missing_cells(x: np.ndarray) -> np.ndarray:
    """``NaN`` cells inside judges that have at least one score (padding judges excluded)."""
    judged = ~np.isnan(x).all(axis=-1, keepdims=True)
    return np.isnan(x) & judged


def _apply_policy(x: np.ndarray, missing: str, needs_policy: bool) -> np.ndarray:
    """The missing-score policies of :func:`engine.aggregate` on ``(T, K, S)`` numpy scores."""
    miss = _missing_cells(x)
    if missing == "error":
        if needs_policy and miss.any():
            n = int(miss.sum())
            raise VotebenchError(
                f"{n} missing score{'s' if n != 1 else ''}; choose a missing-score policy: 'listwise' (drop those systems) "
                "or 'drop-judges' (drop the judges with missing scores)"
            )
        return x
    x = x.copy()
    if missing == "listwise":
        x[..., miss.any(axis=(0, 1))] = np.nan
    elif missing == "drop-judges":
        x[miss.any(axis=-1)] = np.nan
    else:
        raise VotebenchError(f"unknown missing-score policy {missing!r}; choose one of error, listwise, drop-judges")
    return x


def _task_level(scores: Any) -> tuple[np.ndarray, list[str], list[str]]:
    """Oriented task-level scores ``(T, S)``: the mean over each task's instances (the leaderboard)."""
    x, systems, tasks = _as_tensor(scores)
    present = ~np.isnan(x)
    n = present.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        X = np.where(n > 0, np.where(present, x, 0.0).sum(axis=1) / np.where(n > 0, n, 1), np.nan)
    return X, systems, tasks


def _task_weight_vector(weights: Any, tasks: Sequence[str]) -> np.ndarray | None:
    """Task weights ``(T,)`` from a sequence or a mapping task -> weight (missing tasks weigh 0): the engine's rules."""
    from .core import _weights_vector

    return _weights_vector(weights, list(tasks), [])


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
    repeats: int = 100,
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
        Seed of the ``subsets`` stream (:func:`engine.resample.subset_indices`:
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
    x, systems, tasks = _as_tensor(scores)
    T = x.shape[0]
    ids = _replicates(repeats)
    B = ids.size
    default_level = level or ("two" if x.shape[1] > 1 else "task")
    variants = [_parse_variant(v, default_level) for v in _rules_list(rules)]
    sizes = list(range(1, T + 1)) if sizes is None else [int(t) for t in sizes]
    bad = [t for t in sizes if not 1 <= t <= T]
    if bad:
        raise VotebenchError(f"subset sizes must be between 1 and the number of tasks ({T}), got {bad}")
    prepared = []
    for _, rule, lvl in variants:
        xv = _apply_policy(x, missing, rule.missing == "policy")
        prepared.append(_prepare(xv, rule, lvl, options))
    full = np.stack([p.finish() for p in prepared])
    # listwise drops the systems with a missing score *on the tasks drawn*: those subsets are prepared anew
    miss_ts = _missing_cells(x).any(axis=1)  # (T, S)
    per_subset = missing == "listwise" and bool(miss_ts.any())
    tau = np.full((len(variants), len(sizes), B), np.nan)
    slots = np.full((len(sizes), B, max(sizes)), -1, dtype=np.int64)
    for j, t in enumerate(sizes):
        idx = subset_indices(T, t, seed=seed, replicates=ids)
        slots[j, :, :t] = idx
        if per_subset:
            dropped = miss_ts[idx].any(axis=1)  # (B, S)
            xs = np.where(dropped[:, None, None, :], np.nan, x[idx])  # (B, t, K, S)
        for i, p in enumerate(prepared):
            if per_subset and p.rule.missing == "policy":
                sub = _prepare(xs, p.rule, p.level, options).finish()
            else:
                sub = p.finish(p.take(idx))
            tau[i, j] = kendall_tau_b(sub, full[i])
    mean, std = _mean_std(tau)
    labels = [v[0] for v in variants]
    ds = xr.Dataset(
        {
            "tau": ((RULE, "subset_size", REPLICATE), tau),
            "mean": ((RULE, "subset_size"), mean),
            "std": ((RULE, "subset_size"), std),
            "full_score": ((RULE, SYSTEM), full),
            "subsets": (("subset_size", REPLICATE, "slot"), slots),
        },
        coords={RULE: labels, "subset_size": sizes, REPLICATE: ids, SYSTEM: systems,
                "level": (RULE, [v[2] for v in variants])},
    )
    ds.attrs = {"experiment": "task subsets (Colombo et al. 2022, section 5.2-5.3)", "seed": int(seed),
                "stream": "subsets", "missing": missing, "n_tasks": T, "tasks": tasks}
    return ds


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
    variants = [_parse_variant(v, "two") for v in _rules_list(rules)]
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
                "paper_name": (RULE, [_PAPER_NAMES.get(v[0], v[0]) for v in variants])},
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
    repeats: int = 20,
    seed: int = 0,
    corrupt_location: float = 1.0,
    scale: float = 1.0,
    options: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Error of the aggregated ranking as more tasks are corrupted (Colombo et al. 2022, section 4.2, Fig. 3).

    Each replicate is a synthetic benchmark (:func:`engine.synthetic.generate_array`):
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
    repeats: int = 20,
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
    numbers hold (see :mod:`engine.synthetic`); ``reversed_task=False``
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
    repeats: int = 50,
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

    Parameters
    ----------
    scores : xarray.DataArray or ndarray
        Score tensor (instance-level data is reduced to the task means), or
        oriented numpy scores ``(T, S)``.
    rules : str or sequence of str
        Registered rules; all rules see the same random orders.
    n_random : int, optional
        Systems added per run (default all: ``|M| - 2``).
    repeats : int or sequence of int
        Runs (paper: 50), or the indices of the runs to compute.
    seed : int
        Seed of the ``iia`` stream.
    scope : {"all", "pair"}
    weights : sequence or mapping, optional
        Task weights of the rule kernels (Vote'n'Rank weights its tasks).
    missing : {"error", "listwise", "drop-judges"}
        Policy for missing task-level scores (rules that need one); systems
        dropped by it do not enter the draws.
    options : mapping, optional
        Keyword options of the rule kernels.

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
    X, systems, tasks = _task_level(scores)
    ids = _replicates(repeats)
    if scope not in ("all", "pair"):
        raise VotebenchError(f"unknown scope {scope!r}; choose 'all' or 'pair'")
    names = _rules_list(rules)
    rule_objs = [get_rule(n) for n in names]
    w = _task_weight_vector(weights, tasks)
    opts = dict(options or {})
    needs = any(r.missing == "policy" for r in rule_objs)
    Xp = _apply_policy(X[:, None, :], missing, needs)[:, 0, :]
    pool = np.flatnonzero(~np.isnan(Xp).all(axis=0))
    if pool.size < 3:
        raise VotebenchError(f"the IIA experiment needs at least 3 systems with scores, got {pool.size}")
    n_random = pool.size - 2 if n_random is None else int(n_random)
    if not 1 <= n_random <= pool.size - 2:
        raise VotebenchError(f"n_random must be between 1 and {pool.size - 2} (systems available - 2), got {n_random}")
    perms = np.stack([pool[replicate_generator(seed, int(b), stream="iia").permutation(pool.size)] for b in ids])
    perms = perms[:, : 2 + n_random]
    relation = np.zeros((len(names), ids.size, n_random + 1), dtype=np.int8)
    changed = np.zeros((len(names), ids.size, n_random), dtype=bool)
    for i, r in enumerate(rule_objs):
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
    n_changes = changed.sum(axis=-1).astype(np.float64)
    mean, std = _mean_std(n_changes, ddof=0)
    share = n_changes / n_random
    ds = xr.Dataset(
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
        coords={RULE: names, REPLICATE: ids, "step": np.arange(n_random + 1), "addition": np.arange(1, n_random + 1)},
    )
    ds.attrs = {"experiment": "independence of irrelevant alternatives (Rofin et al. 2023, section 3.1)",
                "seed": int(seed), "stream": "iia", "scope": scope, "n_random": n_random, "missing": missing}
    return ds


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


def omitted_scores_stability(
    scores: Any,
    *,
    rules: str | Sequence[str] = ("copeland", "minimax", "mean"),
    fractions: Sequence[float] | None = None,
    counts: Sequence[int] | None = None,
    repeats: int = 100,
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

    Scores are omitted from the task-level leaderboard (instance-level data is
    reduced to task means); ``N`` is a share of the present scores, rounded.
    Rules whose kernels ignore missing pairs (``missing="pairwise"``: Copeland,
    Minimax, ...) get the holes as they are; the other rules get them filled
    with the median of the task over the systems that still have a score
    (``impute="median"``, the paper's choice; the authors' code does
    ``table.fillna(table.median())``), or the engine policies ``"listwise"``
    (systems with a hole are dropped and left out of the correlation) or
    ``"drop-judges"`` (tasks with a hole are dropped), or ``"none"`` (the holes
    go to the kernel, e.g. the mean over the tasks a system has).  The omitted
    cells of replicate ``b`` are the first ``N`` of one random permutation of the
    present cells (stream ``omit``): nested in ``N`` and shared by all rules.

    With ``top = k`` the correlation is restricted to the top-``k`` systems of
    each corrupted ranking (ties at the boundary included), as the authors'
    code does for "top-7" (it correlates the reference and the corrupted scores
    of the corrupted ranking's first 7 systems).

    Parameters
    ----------
    scores : xarray.DataArray or ndarray
        Score tensor, or oriented numpy scores ``(T, S)``.
    rules : str or sequence of str
    fractions, counts : sequence, optional
        Amounts to omit: shares of the present task-level scores or numbers of
        scores; give at most one (default fractions 0.05, 0.1, 0.15, 0.2).
    repeats : int or sequence of int
        Runs per amount (paper: 100), or the indices of the runs to compute.
    seed : int
        Seed of the ``omit`` stream.
    impute : {"median", "listwise", "drop-judges", "none"}
        Handling of holes for rules that need a policy (also applied to holes
        already in the data when computing the reference).
    top : int, optional
        Correlate only the corrupted ranking's top-``top`` systems (paper: 7).
    weights : sequence or mapping, optional
        Task weights of the rule kernels.
    options : mapping, optional
        Keyword options of the rule kernels.

    Returns
    -------
    xarray.Dataset
        ``spearman`` and ``tau`` (Kendall tau-b) between the corrupted and the
        reference scores, dims (rule, n_omitted, replicate); ``mean`` and ``std``
        (ddof 1) of ``spearman`` over runs (rule, n_omitted); ``reference``
        (rule, system); coordinate ``fraction`` on ``n_omitted``.
    """
    X, systems, tasks = _task_level(scores)
    T, S = X.shape
    ids = _replicates(repeats)
    B = ids.size
    if impute not in _IMPUTE:
        raise VotebenchError(f"unknown impute {impute!r}; choose one of {', '.join(_IMPUTE)}")
    if top is not None and int(top) < 2:
        raise VotebenchError(f"top must be >= 2, got {top}")
    present = np.flatnonzero(~np.isnan(X).ravel())
    if fractions is not None and counts is not None:
        raise VotebenchError("give fractions or counts of omitted scores, not both")
    if counts is None:
        fr = [0.05, 0.1, 0.15, 0.2] if fractions is None else [float(f) for f in fractions]
        if any(not 0 <= f <= 1 for f in fr):
            raise VotebenchError(f"fractions must be between 0 and 1, got {fr}")
        ns = [int(round(f * present.size)) for f in fr]
    else:
        ns = [int(c) for c in counts]
        if any(not 0 <= c <= present.size for c in ns):
            raise VotebenchError(f"counts must be between 0 and the {present.size} present scores, got {ns}")
        fr = [c / present.size for c in ns]
    names = _rules_list(rules)
    rule_objs = [get_rule(n) for n in names]
    w = _task_weight_vector(weights, tasks)
    opts = dict(options or {})

    def evaluate(r: Rule, Xs: np.ndarray) -> np.ndarray:
        return _run(r, Xs if r.missing == "pairwise" else _impute(Xs, impute), opts, w)

    ref = np.stack([evaluate(r, X) for r in rule_objs])  # (R, S)
    perms = np.stack([present[replicate_generator(seed, int(b), stream="omit").permutation(present.size)] for b in ids])
    rho = np.full((len(names), len(ns), B), np.nan)
    tau = np.full_like(rho, np.nan)
    for j, n in enumerate(ns):
        mask = np.zeros((B, T * S), dtype=bool)
        np.put_along_axis(mask, perms[:, :n], True, axis=1)
        Xo = np.where(mask.reshape(B, T, S), np.nan, X)
        for i, r in enumerate(rule_objs):
            sc = evaluate(r, Xo)
            if top is not None:
                sc = np.where(min_rank(sc) <= int(top), sc, np.nan)
            rho[i, j] = spearman(sc, ref[i])
            tau[i, j] = kendall_tau_b(sc, ref[i])
    mean, std = _mean_std(rho)
    ds = xr.Dataset(
        {
            "spearman": ((RULE, "n_omitted", REPLICATE), rho),
            "tau": ((RULE, "n_omitted", REPLICATE), tau),
            "mean": ((RULE, "n_omitted"), mean),
            "std": ((RULE, "n_omitted"), std),
            "reference": ((RULE, SYSTEM), ref),
        },
        coords={RULE: names, "n_omitted": ns, "fraction": ("n_omitted", fr), REPLICATE: ids, SYSTEM: systems},
    )
    ds.attrs = {"experiment": "robustness to omitted scores (Rofin et al. 2023, section 3.3)", "seed": int(seed),
                "stream": "omit", "impute": impute, "top": -1 if top is None else int(top)}
    return ds


# ---------------------------------------------------------------------------------------------
# xLLMBench (Gjorgjevikj et al. 2025): PROMETHEE II sensitivity and criteria clustering
# ---------------------------------------------------------------------------------------------
def _criteria_matrix(X: Any, maximize: Any) -> tuple[np.ndarray, list[str], list[str], Any]:
    """Criteria x systems values: a score tensor is reduced to oriented task means (then all maximised)."""
    if isinstance(X, xr.DataArray):
        Xn, systems, tasks = _task_level(X)
        return Xn, systems, tasks, True
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

    Scenarios, each one PROMETHEE II run (:func:`engine.kernels.mcdm.promethee2_net`,
    all of them in one batched call):

    * ``baseline``: the given parameters, ``None`` resolved to the xLLMBench
      data-driven defaults (linear: ``q = min``, ``p = max`` of the pairwise
      differences; Gaussian: ``s`` = their standard deviation);
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

    A scenario whose thresholds become inconsistent (``q > p``, negative ``s``
    or V-shape ``p``) is marked ``valid = False`` and has ``NaN`` results.

    Parameters
    ----------
    X : xarray.DataArray or array_like, shape (T, S)
        Score tensor (oriented task means are used) or a criteria x systems matrix.
    weights, preference, q, p, s, maximize
        As in :func:`engine.kernels.mcdm.promethee2` (``maximize`` is ignored for
        a score tensor, which is already oriented).
    deltas : sequence of float
        Relative changes of the parameters.
    weight_deltas : sequence of float, optional
        Relative changes of each weight (default ``deltas``; empty: no weight scenarios).

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
    try:
        kinds = M._kinds(preference, T)
        Xo = M._orient(M._matrix(Xn, "promethee2"), maximize, "promethee2")
        q0, p0, s0 = M._resolve_parameters(Xo, kinds, q, p, s)
        w0 = np.ones(T) / T if weights is None else np.asarray(weights, dtype=np.float64)
        M._weights(w0, Xo, "promethee2")
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None
    uses_q = np.isin(kinds, [M._QUASI, M._LEVEL, M._LINEAR])
    uses_p = np.isin(kinds, [M._VSHAPE, M._LEVEL, M._LINEAR])
    uses_s = kinds == M._GAUSSIAN
    deltas = [float(d) for d in deltas]
    weight_deltas = deltas if weight_deltas is None else [float(d) for d in weight_deltas]
    rows: list[tuple[str, float, str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = [
        ("baseline", 0.0, "", q0, p0, s0, w0)
    ]

    def moved(v: np.ndarray, use: np.ndarray, d: float) -> np.ndarray:
        return np.where(use, v + d * np.abs(v), v)

    for name, use, base in (("q", uses_q, q0), ("p", uses_p, p0), ("s", uses_s, s0)):
        if (use & (np.nan_to_num(base) != 0)).any():
            for d in deltas:
                args = {"q": q0, "p": p0, "s": s0}
                args[name] = moved(base, use, d)
                rows.append((name, d, "", args["q"], args["p"], args["s"], w0))
    both = uses_q & uses_p
    if both.any():
        for d in (d for d in deltas if d > 0):
            rows.append(("q+p", d, "", moved(q0, both, d), moved(p0, both, -d), s0, w0))
    for t in range(T):
        if w0[t] > 0:
            for d in weight_deltas:
                w = w0.copy()
                w[t] = w0[t] * (1 + d)
                rows.append(("weight", d, tasks[t], q0, p0, s0, w))
    Q = np.stack([r[3] for r in rows])
    P = np.stack([r[4] for r in rows])
    Sg = np.stack([r[5] for r in rows])
    W = np.stack([r[6] for r in rows])
    valid = np.ones(len(rows), dtype=bool)
    lin = uses_q & uses_p
    valid &= ~(lin & (Q > P)).any(axis=1)
    valid &= ~(uses_s & (Sg < 0)).any(axis=1)
    valid &= ~((kinds == M._VSHAPE) & (P < 0)).any(axis=1)
    valid &= (W >= 0).all(axis=1) & (W.sum(axis=1) > 0)
    Qr, Pr, Sr, Wr = (np.where(valid[:, None], A, A[:1]) for A in (Q, P, Sg, W))
    Xb = np.broadcast_to(Xo, (len(rows),) + Xo.shape)
    try:
        net = M.promethee2_net(Xb, weights=Wr, preference=preference, q=Qr, p=Pr, s=Sr, maximize=True)
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None
    net = np.where(valid[:, None], net, np.nan)
    rank = min_rank(net)
    rank_change = rank - rank[0]
    scen = np.arange(len(rows))
    coords = {
        "scenario": scen,
        "parameter": ("scenario", [r[0] for r in rows]),
        "delta": ("scenario", [r[1] for r in rows]),
        "criterion": ("scenario", [r[2] for r in rows]),
        "other_scenario": scen,
        SYSTEM: systems,
        TASK: tasks,
    }
    max_change = np.abs(rank_change).max(axis=1)  # NaN for invalid scenarios
    ds = xr.Dataset(
        {
            "net_flow": (("scenario", SYSTEM), net),
            "rank": (("scenario", SYSTEM), rank),
            "rank_change": (("scenario", SYSTEM), rank_change),
            "max_rank_change": ("scenario", max_change),
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
    ds.attrs = {"experiment": "PROMETHEE II sensitivity (xLLMBench section 4.3, Appendix B)",
                "preference": preference if isinstance(preference, str) else ",".join(map(str, preference))}
    return ds


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

    Parameters
    ----------
    X : xarray.DataArray or array_like, shape (T, S)
        Score tensor (oriented task means) or criteria x systems values.
    threshold : float, optional
        Minimum linkage correlation inside a cluster (give this or ``n_clusters``).
    n_clusters : int, optional
        Number of clusters.
    method : str
        ``scipy.cluster.hierarchy.linkage`` method.
    absolute : bool
        Cluster on ``|r|`` (negatively correlated criteria also group).

    Returns
    -------
    xarray.Dataset
        ``correlation`` (task, other_task); ``cluster`` (task) labels 1.. in
        order of first appearance; ``representative`` (task) bool;
        ``within_correlation`` (task) the mean correlation with the other
        members; ``linkage`` (merge, field) the scipy linkage matrix; attrs
        ``selected``: the representatives' names.
    """
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    if (threshold is None) == (n_clusters is None):
        raise VotebenchError("give exactly one of threshold (a correlation level) or n_clusters")
    Xn, _, tasks, _ = _criteria_matrix(X, True)
    T = Xn.shape[0]
    R = _pearson_matrix(Xn)
    r = np.nan_to_num(np.abs(R) if absolute else R, nan=0.0)
    np.fill_diagonal(r, 1.0)
    if T == 1:
        labels = np.array([1])
        Z = np.zeros((0, 4))
    else:
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
            if not 1 <= int(n_clusters) <= T:
                raise VotebenchError(f"n_clusters must be between 1 and the number of criteria ({T}), got {n_clusters}")
            raw = fcluster(Z, t=int(n_clusters), criterion="maxclust")
        first = {}
        for c in raw:
            first.setdefault(int(c), len(first) + 1)
        labels = np.array([first[int(c)] for c in raw])
    within = np.full(T, np.nan)
    representative = np.zeros(T, dtype=bool)
    for c in np.unique(labels):
        members = np.flatnonzero(labels == c)
        if members.size == 1:
            within[members] = np.nan
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
    else:
        ds.attrs["n_clusters"] = int(n_clusters)
    return ds
