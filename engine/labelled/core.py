"""The labelled aggregation layer: kernels mapped over (possibly chunked) score tensors.

Nothing here calls ``.compute()``: for dask-backed scores every function returns
lazy results, and errors that depend on the data (missing scores under the
``"error"`` policy, a task with no scores) are raised when the result is
computed.  For numpy-backed scores the same code runs eagerly, with no dask
graph at all.

Pipeline of :func:`aggregate` (one pass over the data):

1. :func:`orient` negates lower-is-better tasks (once, never per rule);
2. the missing-score policy masks systems (``listwise``) or judges
   (``drop-judges``);
3. the within-task statistic of the level (``judge`` kernel mapped blockwise
   over the judges, system axis never chunked) is summed over instances: a dask
   tree reduction for chunked data;
4. a finalize step on the small ``(task, system)`` sums applies the rule's
   across-task kernel (or pools all judges for the ``one`` level).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import pickle
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypedDict, Unpack

import numpy as np
import xarray as xr

from engine.dims import INSTANCE, MISSING_POLICIES, RULE, SYSTEM, TASK, Level, MissingPolicy
from engine.errors import VotebenchError
from engine.kernels.exact import digits_to_float, full_digit_sums, merge_digit_sums, snap_ties
from engine.kernels.pairblock import BLOCKED_RULES, blocked_scores, dense_batch, streams, use_blocks
from engine.kernels.ranking import label_order, min_rank, tied_count
from engine.kernels.social import task_pair_sums
from engine.labelled.canonical import ensure_valid, task_group_labels
from engine.limits import check_option_values, scaled_weights, shown
from engine.rules import LEVELS, Rule, Within, get_rule, get_within

__all__ = [
    "Choices",
    "Finish", "MISSING_POLICIES", "PER_TASK_OPTIONS", "Plan", "prepare", "orient", "missing_report", "aggregate", "aggregate_plan",
    "rank", "ranking", "resolve_level", "tied_groups", "task_scores", "label_order", "canonical_order", "exact_instance_sums",
    "apply_missing_policy", "call_kernel", "check_policy", "check_options", "describe_missing", "finalize", "group_labels", "is_dask",
    "kernel_options", "per_task_options",
    "weights_vector", "within_step", "within_array", "instance_sums", "task_values", "values_from_sums",
    "aggregate_rules", "rank_rules", "rule_label",
]

#: policies for missing scores of rules that need one
#: rule options that hold one value per task (criterion): they follow the tasks when tasks are reordered or resampled
PER_TASK_OPTIONS = frozenset({"preference", "q", "p", "s", "maximize"})


def canonical_order(scores: xr.DataArray) -> tuple[xr.DataArray, dict[str, np.ndarray]]:
    """``scores`` with systems, tasks and instances in their canonical (label) order.

    Every computation of the engine runs in this order, so the same data gives bitwise the same
    result whatever the order of the input (see :mod:`engine.kernels.exact`).  Returns the
    reordered tensor and, per dimension, the permutation applied (``new = old[perm]``); a dimension
    already in order is not copied.
    """
    perms = label_perms(scores)
    index = {d: p for d, p in perms.items() if not np.array_equal(p, np.arange(p.size))}
    return (scores.isel(index) if index else scores), perms


def label_perms(scores: xr.DataArray) -> dict[str, np.ndarray]:
    """The canonical order (:func:`label_order`) of the system, task and instance labels of ``scores``."""
    return {dim: label_order(scores.indexes[dim]) if dim in scores.indexes else label_order(scores[dim].values)
            for dim in (SYSTEM, TASK, INSTANCE)}


def is_dask(da: xr.DataArray) -> bool:
    return not isinstance(da.data, np.ndarray)


def orient(scores: xr.DataArray) -> xr.DataArray:
    """Make every task higher-is-better by negating the lower-is-better ones.

    Parameters
    ----------
    scores : xarray.DataArray
        Score tensor with a ``higher_is_better`` coordinate on ``task``.

    Returns
    -------
    xarray.DataArray
        Same shape and dtype; ``higher_is_better`` all True.  Lazy for dask input.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0]]), systems=["a", "b"],
    ...                              higher_is_better=[True, False])
    >>> engine.orient(s).values.squeeze().tolist()
    [[1.0, -9.0], [2.0, -8.0]]
    """
    if "higher_is_better" not in scores.coords:
        return scores
    coord = scores["higher_is_better"]
    if isinstance(coord.data, np.ndarray):
        hib = np.asarray(coord.values, dtype=bool)
        if hib.all():
            return scores
        sign = xr.DataArray(np.where(hib, 1, -1).astype(scores.dtype), dims=TASK)
    else:  # a chunked coordinate: build the sign lazily instead of computing it
        sign = xr.where(coord.reset_coords(drop=True), 1, -1).astype(scores.dtype)
    out = scores * sign
    out.attrs = dict(scores.attrs)
    out.name = scores.name
    return out.assign_coords(higher_is_better=(TASK, np.ones(scores.sizes[TASK], dtype=bool)))


def _judge_present(x: xr.DataArray) -> xr.DataArray:
    """(task, instance): the judge has at least one score (is not padding)."""
    return x.notnull().any(SYSTEM)


def missing_report(scores: xr.DataArray) -> xr.DataArray:
    """Count missing scores per (system, task).

    A cell is missing when it is ``NaN`` in a judge that has at least one other
    score; a judge with no score at all is padding of a ragged tensor and does
    not count.

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor (system, task, instance).

    Returns
    -------
    xarray.DataArray of int, dims (system, task)
        The number of missing scores of each system in each task.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, np.nan], [2.0, 8.0], [3.0, 8.5]]), systems=["a", "b", "c"])
    >>> engine.missing_report(s).values.tolist()
    [[0, 1], [0, 0], [0, 0]]
    """
    return (scores.isnull() & _judge_present(scores)).sum(INSTANCE)


def apply_missing_policy(x: xr.DataArray, policy: str) -> xr.DataArray:
    if policy == "error":
        return x
    if policy == "drop-judges":
        complete = x.notnull().all(SYSTEM)
        return x.where(complete)
    if policy == "listwise":
        has_missing = missing_report(x).sum(TASK) > 0
        return x.where(~has_missing)
    check_policy(policy)  # raises: not a policy
    return x


def check_policy(policy: str) -> MissingPolicy:
    """``policy`` if it is a missing-score policy (typed as one); else :class:`VotebenchError` naming the policies."""
    for known in MISSING_POLICIES:
        if policy == known:
            return known
    raise VotebenchError(f"unknown missing-score policy {policy!r}; choose one of {', '.join(MISSING_POLICIES)}")


def resolve_level(scores: xr.DataArray, level: str | None, rule: Rule | None = None) -> Level:
    """The level to use: default ``two`` for instance-level data, ``task`` otherwise."""
    if level is None:
        return "two" if scores.sizes[INSTANCE] > 1 else "task"
    for known in LEVELS:  # the checked value, typed as one of the levels
        if level == known:
            return known
    raise VotebenchError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")


def group_labels(scores: xr.DataArray, groups: Any) -> list[str] | None:
    tasks = [str(t) for t in scores[TASK].values]
    if groups is None or groups is False:
        return None
    if groups is True:
        return [str(g) for g in scores["group"].values]
    if isinstance(groups, Mapping):
        unknown = sorted(set(map(str, groups)) - set(tasks))
        if unknown:
            raise VotebenchError(f"groups name unknown task(s): {', '.join(unknown[:5])}")
        return task_group_labels(tasks, {str(t): g for t, g in groups.items()})
    raise VotebenchError("groups must be True (use the 'group' coordinate) or a mapping task -> group")


def weights_vector(weights: Any, tasks: Sequence[str], groups: Sequence[str]) -> np.ndarray | None:
    if weights is None:
        return None
    if isinstance(weights, str):
        if weights != "groups":
            raise VotebenchError(f"unknown weights {weights!r}; give per-task weights or 'groups' (1/|group| per task)")
        size = {g: list(groups).count(g) for g in set(groups)}
        return np.array([1.0 / size[g] for g in groups])
    if isinstance(weights, xr.DataArray):
        weights = dict(zip(weights[TASK].values.tolist(), weights.values.tolist()))
    if isinstance(weights, Mapping):
        unknown = sorted(set(map(str, weights)) - set(tasks))
        if unknown:
            raise VotebenchError(f"weights name unknown task(s): {', '.join(unknown[:5])}")
        values = [weights.get(t, 0.0) for t in tasks]
    else:
        if np.ndim(weights) != 1 or len(weights) != len(tasks):
            raise VotebenchError(f"expected {len(tasks)} task weights, got {len(weights) if np.ndim(weights) == 1 else 'a scalar'}")
        values = list(np.asarray(weights, dtype=object).reshape(-1))
    # relative weights of any size: huge but equal weights are equal weights (scaled exactly by a power of two)
    w = scaled_weights(values, "task weights")
    if not (w > 0).any():
        raise VotebenchError("task weights are all zero")
    return w


def describe_missing(missing: np.ndarray, systems: Sequence[str], tasks: Sequence[str]) -> str:
    total = int(missing.sum())
    t_idx, s_idx = np.nonzero(missing)
    where = ", ".join(f"{systems[s]!r} on {tasks[t]!r}" for t, s in list(zip(t_idx.tolist(), s_idx.tolist()))[:3])
    more = "" if len(t_idx) <= 3 else f" and {len(t_idx) - 3} more system/task pairs"
    n_sys = len(set(s_idx.tolist()))
    return (
        f"{total} missing score{'s' if total != 1 else ''} in {n_sys} system{'s' if n_sys != 1 else ''} "
        f"({where}{more}); choose a missing-score policy: 'listwise' (drop those systems) "
        f"or 'drop-judges' (drop the judges with missing scores)"
    )


def per_task_options(options: Mapping[str, Any] | None, tasks: Sequence[str]) -> dict[str, Any]:
    """``options`` with every per-task value (:data:`PER_TASK_OPTIONS`) as a tuple in the order of ``tasks``.

    A per-task value may be a list, a tuple or a one-dimensional array with one entry per task (in the
    order of ``tasks``, the input's), or a mapping task name -> value naming every task; the tuple then
    follows the tasks through reordering and resampling (:func:`prepare`, :mod:`engine.bootstrap`).
    Scalars (one value for every task) and other values are passed on unchanged.
    """
    out = dict(options or {})
    for k, v in out.items():
        if k not in PER_TASK_OPTIONS:
            continue
        if isinstance(v, Mapping):
            names = set(map(str, v))
            unknown, lacking = sorted(names - set(tasks)), [t for t in tasks if t not in names]
            if unknown or lacking:
                what = f"names unknown task(s) {', '.join(unknown[:5])}" if unknown else \
                    f"has no value for task(s) {', '.join(lacking[:5])}"
                raise VotebenchError(f"per-task option {k!r} {what}")
            by_name = {str(t): x for t, x in v.items()}
            out[k] = tuple(by_name[t] for t in tasks)
        elif isinstance(v, np.ndarray) and v.ndim == 1 or isinstance(v, (list, tuple)):
            out[k] = tuple(np.asarray(v).tolist()) if isinstance(v, np.ndarray) else tuple(v)
    return out


@functools.lru_cache(maxsize=256)
def kernel_options(rule: Rule) -> frozenset[str] | None:
    """Keyword options a rule's kernel takes (None: any)."""
    params = inspect.signature(rule.kernel).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return frozenset({p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY} - {"weights"})


def check_options(rules: Sequence[Rule], options: Mapping[str, Any]) -> None:
    accepted: set[str] = set()
    for r in rules:
        names = kernel_options(r)
        if names is None:
            return
        accepted |= names
    unknown = sorted(set(options) - accepted)
    if unknown:
        known = ", ".join(sorted(accepted)) or "none"
        raise VotebenchError(
            f"unknown option(s) {', '.join(unknown)} for rule {' / '.join(dict.fromkeys(r.name for r in rules))}; "
            f"options it takes: {known}"
        )
    for r in rules:
        check_option_types(r, options)


def _of_type(value: Any, default: Any) -> bool:
    """``value`` has the type of a kernel option's ``default`` (a bool, a real number, a string; None: any)."""
    if default is None or default is inspect.Parameter.empty:
        return True
    if isinstance(default, bool):
        return isinstance(value, (bool, np.bool_))
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if isinstance(default, str):
        return isinstance(value, str)
    return True


def check_option_types(rule: Rule, options: Mapping[str, Any]) -> None:
    """Refuse an option whose value has not the type of the kernel's default (a table where a number goes ...).

    A per-task option (:data:`PER_TASK_OPTIONS`) may also be a list of such values, one per task.
    """
    params = inspect.signature(rule.kernel).parameters
    for name, value in options.items():
        if name not in params:
            continue
        default = params[name].default
        many = name in PER_TASK_OPTIONS and isinstance(value, (list, tuple, np.ndarray))
        if not all(_of_type(v, default) for v in (value if many else [value])):
            kind = ("true or false" if isinstance(default, bool) else "a number" if isinstance(default, (int, float))
                    else "a string")
            per_task = " (or a list of them, one per task)" if name in PER_TASK_OPTIONS else ""
            raise VotebenchError(f"rule {rule.name!r}: option {name!r} must be {kind}{per_task}, got {shown(value)}")


def call_kernel(rule: Rule, X: np.ndarray, weights: np.ndarray | None, options: Mapping[str, Any]) -> np.ndarray:
    """Run a rule kernel on ``X`` (..., T, S), each batch element on its own present tasks and systems.

    A system without any score in a batch element (e.g. dropped by the listwise policy, or absent from
    every task a bootstrap replicate drew) gets ``NaN`` there and never reaches the kernel; for rules that
    need complete data a task without any score (dropped by drop-judges) is absent too, with its weight
    and per-task options.  Batch elements with the same absent tasks and systems share one kernel call,
    so a batch gives every element the numbers it gets alone (block sizes do not show).
    """
    opts = _options_for(rule, options)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2:
        return _call_present(rule, X, weights, opts, None, np.isnan(X))
    nan = np.isnan(X)
    gone = nan.all(axis=-1) if rule.missing == "policy" else np.zeros(X.shape[:-1], dtype=bool)  # (..., T)
    absent = nan.all(axis=-2)  # (..., S)
    gone_rows, absent_rows = gone.reshape(-1, X.shape[-2]), absent.reshape(-1, X.shape[-1])
    if bool((gone_rows == gone_rows[0]).all()) and bool((absent_rows == absent_rows[0]).all()):
        return _call_present(rule, X, weights, opts, gone_rows[0], absent_rows[0])
    batch = X.shape[:-2]
    Xf = X.reshape((-1,) + X.shape[-2:])
    wf = None if weights is None or np.ndim(weights) < 2 else np.broadcast_to(weights, batch + X.shape[-2:-1]).reshape(
        -1, X.shape[-2])
    # a rule that ignores all-NaN systems (absent_neutral) groups the elements by their absent tasks only
    keys = gone.reshape(Xf.shape[0], -1) if rule.absent_neutral else \
        np.concatenate([gone.reshape(Xf.shape[0], -1), absent.reshape(Xf.shape[0], -1)], axis=1)
    patterns, which = np.unique(keys, axis=0, return_inverse=True)
    out = np.full(Xf.shape[:1] + X.shape[-1:], np.nan)
    T = X.shape[-2]
    own = absent.reshape(Xf.shape[0], -1)
    for k, key in enumerate(patterns):
        sel = np.flatnonzero(which.reshape(-1) == k)
        w = weights if wf is None else wf[sel]
        if rule.absent_neutral:
            out[sel] = _call_present(rule, Xf[sel], w, opts, key[:T], own[sel].all(axis=0), each_absent=own[sel])
        else:
            out[sel] = _call_present(rule, Xf[sel], w, opts, key[:T], key[T:])
    return out.reshape(batch + X.shape[-1:])


def _in_slices(rule: Rule, X: np.ndarray, weights: Any, per: int) -> np.ndarray:
    """``rule.kernel`` on ``per`` batch elements at a time: of ``X`` (..., T, S), or of a weight stack (B, T) on
    one profile (T, S); the scores of every element, in order."""
    T, S = X.shape[-2:]
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    if X.ndim == 2:  # one profile under a stack of weights
        assert w is not None and w.ndim == 2
        parts = [rule.kernel(X, weights=w[i:i + per]) for i in range(0, w.shape[0], per)]
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).reshape(w.shape[:-1] + (S,))
    batch = X.shape[:-2]
    Xf = X.reshape(-1, T, S)
    wf = w if w is None or w.ndim < 2 else np.broadcast_to(w, batch + (T,)).reshape(-1, T)
    parts = [rule.kernel(Xf[i:i + per], weights=wf if wf is None or wf.ndim < 2 else wf[i:i + per])
             for i in range(0, Xf.shape[0], per)]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).reshape(batch + (S,))


def _call_present(rule: Rule, X: np.ndarray, weights: Any, opts: dict[str, Any], gone: np.ndarray | None,
                  absent: np.ndarray, each_absent: np.ndarray | None = None) -> np.ndarray:
    """The kernel on the tasks not ``gone`` and the systems not ``absent`` (the same for every batch element);
    ``each_absent`` (batch, S): systems absent from single elements, left to the kernel as ``NaN`` columns
    (a rule that declares them neutral) and given ``NaN`` scores before the tie rule."""
    if gone is not None and gone.any() and not gone.all():
        keep = ~gone
        X = X[..., keep, :]
        weights = None if weights is None else np.asarray(weights)[..., keep]
        opts = {k: (tuple(v[i] for i in np.flatnonzero(keep))
                    if k in PER_TASK_OPTIONS and isinstance(v, (list, tuple)) and len(v) == keep.size else v)
                for k, v in opts.items()}

    def run(Xk: np.ndarray) -> np.ndarray:
        if not opts and use_blocks(rule.name, Xk, weights):  # large pair matrices: in blocks of rows (engine.kernels.pairblock)
            per = dense_batch(Xk)
            if per == 0:
                return blocked_scores(rule.name, Xk, weights)
            return _in_slices(rule, Xk, weights, per)  # many small profiles: dense, a slice of them at a time
        return np.asarray(rule.kernel(Xk, weights=weights, **opts), dtype=np.float64)

    if absent.all():  # nobody to rank (a task every judge of which the policy dropped): no kernel call
        return np.full(X.shape[:-2] + X.shape[-1:] if X.ndim > 1 else X.shape, np.nan)
    try:
        if not absent.any() and each_absent is None:
            return rule.snap(run(X), X)
        Xp = X[..., ~absent]
        res = run(Xp)
        if each_absent is not None:
            res = np.where(each_absent[:, ~absent], np.nan, res)
        res = rule.snap(res, Xp)
        out = np.full(res.shape[:-1] + X.shape[-1:], np.nan)
        out[..., ~absent] = res
        return out
    except ValueError as exc:
        raise VotebenchError(f"rule {rule.name!r}: {exc}") from None
    except TypeError as exc:  # an option of a type the kernel cannot take (a table where a number goes)
        if not opts:
            raise
        raise VotebenchError(f"rule {rule.name!r}: an option has a type it cannot take ({exc}); "
                             f"options given: {', '.join(sorted(opts))}") from None


@dataclasses.dataclass(frozen=True)
class Choices:
    """The rule part of one request, shared by its :class:`Plan` and its :class:`Finish`.

    Attributes
    ----------
    within, across : Rule
        The rule within groups of tasks (``groups``) and across tasks (or groups).
    weights : array or None
        Task weights ``(T,)``, or a stack ``(B, T)``.
    groups : sequence of str or None
        Each task's group (two-step aggregation), or ``None``.
    options : mapping
        The rule's options.
    systems, tasks : sequence of str
        Labels, in the canonical order.
    """

    within: Rule
    across: Rule
    weights: np.ndarray | None
    groups: Sequence[str] | None
    options: Mapping[str, Any]
    systems: Sequence[str]
    tasks: Sequence[str]

    def choices(self) -> dict[str, Any]:
        """The fields of :class:`Choices`, by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(Choices)}


@dataclasses.dataclass(frozen=True)
class Finish(Choices):
    """What the across-task step of one request needs besides the scores (:meth:`Plan.finish`; :func:`finalize`).

    Attributes (besides those of :class:`Choices`)
    ----------
    pooled : bool
        Level ``one``: the scores are already one per system (pooled over every judge).
    policy : str
        The missing-score policy, and ``needs_policy``: whether the rule needs one (missing scores are refused
        under ``"error"``).
    """

    pooled: bool
    policy: MissingPolicy
    needs_policy: bool


def finalize(
    X: np.ndarray,
    judged: np.ndarray,
    missing: np.ndarray,
    finish: Finish,
    pair_sums: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Task-level scores (task, system) -> one score per system; raises on data-dependent problems.

    ``pair_sums``: the ``wins`` and ``pairs`` sums over the tasks of ``X`` (shared by several rules of one
    request, see :func:`aggregate_rules`); a rule with ``from_sums`` then reads them instead of comparing again.
    """
    f = finish
    within, across, weights, groups, options, policy = f.within, f.across, f.weights, f.groups, f.options, f.policy
    systems, tasks = f.systems, f.tasks
    if policy == "error" and f.needs_policy and missing.any():
        raise VotebenchError(describe_missing(missing, systems, tasks))
    has_judges = judged > 0
    if policy == "error" and not has_judges.all():
        bad = [tasks[i] for i in np.flatnonzero(~has_judges).tolist()]
        raise VotebenchError(f"task {bad[0]!r} has no scores" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    if not has_judges.any():
        raise VotebenchError(f"no task has complete scores under missing-score policy {policy!r}")
    if f.pooled:
        score = across.snap(X)
    elif groups is None and pair_sums is not None and across.from_sums is not None:
        try:
            score = across.snap(np.asarray(across.from_sums(dict(pair_sums)), dtype=np.float64))
        except ValueError as exc:
            raise VotebenchError(f"rule {across.name!r}: {exc}") from None
    elif groups is None:
        score = call_kernel(across, X, weights, options)
    else:
        names = list(dict.fromkeys(groups))
        g_idx = np.asarray([names.index(g) for g in groups])
        per_group = []
        for gi in range(len(names)):
            sel = np.flatnonzero(g_idx == gi)
            w = None if weights is None else weights[..., sel]
            if w is not None and not (w.sum(axis=-1) > 0).all():
                continue
            per_group.append(call_kernel(within, X[..., sel, :], w, options))
        score = call_kernel(across, np.stack(per_group, axis=-2), None, options)
    n_ranked = int(np.count_nonzero(~np.isnan(score)))
    if n_ranked < 2:
        raise VotebenchError(
            f"ranking needs at least two systems with scores, {n_ranked} left under missing-score policy {policy!r}"
        )
    return score


def within_step(x: xr.DataArray, within: Rule, lvl: str, options: Mapping[str, Any]) -> xr.DataArray:
    """Task-level scores (task, system) from instance-level scores, lazily.

    ``task`` level: per-task mean.  ``two``: the within rule over the instances
    of each task, as a one-pass tree reduction when the rule has a decomposable
    within statistic, otherwise the rule's kernel on whole tasks (instances in
    one chunk).  ``one``: the within statistic pooled over all judges (returns
    dims (system,)).
    """
    name = "mean" if lvl == "task" else within.within
    if lvl == "task" and x.sizes[INSTANCE] == 1:
        # task-level data: the mean over one instance is the score itself
        return x.isel({INSTANCE: 0}, drop=True).astype(np.float64).transpose(..., TASK, SYSTEM)
    if name is not None:
        stat = get_within(name)
        values = xr.apply_ufunc(
            stat.judge,
            x,
            input_core_dims=[[SYSTEM]],
            output_core_dims=[[SYSTEM]],
            dask="parallelized",
            output_dtypes=[np.float64],
        )
        if stat.grid is None:
            # real judge values (means, Dowdall points): exactly summed, so no order or chunking shows
            sums = exact_instance_sums(values)
            counts = values.notnull().sum(INSTANCE)
        elif not is_dask(values) and not np.isnan(values.data).any():
            # complete in-memory data on a grid (Borda halves): a plain sum is exact, without skipna's copy
            sums = values.sum(INSTANCE, skipna=False)
            counts = xr.full_like(sums, values.sizes[INSTANCE], dtype=np.int64)
        else:
            sums = values.sum(INSTANCE, skipna=True)
            counts = values.notnull().sum(INSTANCE)
        fn = partial(values_from_sums, stat, pooled=lvl == "one")
        if is_dask(values):
            sums, counts = (p.chunk({TASK: -1, SYSTEM: -1}) for p in (sums, counts))
        return xr.apply_ufunc(
            fn,
            sums,
            counts,
            input_core_dims=[[TASK, SYSTEM]] * 2,
            output_core_dims=[[TASK, SYSTEM]] if lvl != "one" else [[SYSTEM]],
            dask="parallelized",
            output_dtypes=[np.float64],
        )
    if is_dask(x) and streams(within):
        # pairwise rules: integer wins / pairs per instance chunk, summed (engine.labelled.stream): bounded memory
        from engine.labelled.stream import stream_within

        return stream_within(x, within, lvl, options)
    if lvl == "one":
        judges = x.stack(judge=(TASK, INSTANCE)).transpose("judge", SYSTEM)
        if is_dask(judges):
            judges = judges.chunk({"judge": -1, SYSTEM: -1})
        return xr.apply_ufunc(
            lambda a: call_kernel(within, a, None, options),
            judges,
            input_core_dims=[["judge", SYSTEM]],
            output_core_dims=[[SYSTEM]],
            dask="parallelized",
            output_dtypes=[np.float64],
        )
    # whole tasks in one block: kernels that draw random numbers per batch element (random_judge)
    # then see the same batch index whatever the chunking; separable rules (median: a system's score
    # depends on its own scores only) and the blocked pairwise rules (absent systems take no part)
    # stream over chunks of whole tasks
    tasks = _task_chunk(x) if (within.separable or within.name in BLOCKED_RULES) and within.resample != "loop" else -1
    xi = x.chunk({TASK: tasks, INSTANCE: -1, SYSTEM: -1}) if is_dask(x) else x
    return xr.apply_ufunc(
        lambda a: call_kernel(within, a, None, options),
        xi,
        input_core_dims=[[INSTANCE, SYSTEM]],
        output_core_dims=[[SYSTEM]],
        dask="parallelized",
        output_dtypes=[np.float64],
    )


#: bytes of float64 scores per chunk of whole tasks when a kernel needs every instance of a task at once
_WHOLE_TASK_BYTES = 1 << 26


def _task_chunk(x: xr.DataArray) -> int:
    """Tasks per chunk of whole tasks (all instances, all systems) within about 64 MB of float64."""
    per_task = max(1, x.sizes[INSTANCE] * x.sizes[SYSTEM] * 8)
    return max(1, _WHOLE_TASK_BYTES // per_task)


def _sums_chunk(x: np.ndarray, axis: tuple[int, ...] = (-1,), keepdims: bool = True, **_: Any) -> dict[str, Any]:
    """Exact digit sums of one chunk over its instances (see :func:`exact_instance_sums`); dask's meta
    computation (an empty array) gets an empty array back."""
    if np.size(x) == 0:
        return np.empty((0,) * np.ndim(x))  # type: ignore[return-value]
    d, top = full_digit_sums(x, axis[0])
    return {"D": d, "top": top}


def _digit_parts(parts: Any) -> list[dict[str, Any]]:
    return [parts] if isinstance(parts, dict) else [q for p in parts for q in _digit_parts(p)]


def _sums_combine(parts: Any, axis: tuple[int, ...] = (-1,), keepdims: bool = True, **_: Any) -> dict[str, Any]:
    d, top = merge_digit_sums([(p["D"], p["top"]) for p in _digit_parts(parts)])
    return {"D": d, "top": top}


def _sums_aggregate(parts: Any, axis: tuple[int, ...] = (-1,), keepdims: bool = False, **_: Any) -> np.ndarray:
    m = _sums_combine(parts)
    out = digits_to_float(m["D"], m["top"])
    return np.expand_dims(out, axis[0]) if keepdims else out


def instance_sums(values: np.ndarray, *, exact: bool = True, axis: int = -2) -> np.ndarray:
    """Sums over the instance axis of numpy judge values (``NaN`` = 0), exactly (any order, any batch) when ``exact``.

    The digits hold every value exactly (see :func:`exact_instance_sums`).
    """
    a = np.asarray(values, dtype=np.float64)
    if not exact or a.shape[axis] == 1:  # one instance: its value is its exact sum (+ 0.0: no negative zero)
        return np.where(np.isnan(a), 0.0, a).sum(axis=axis) + 0.0
    d, top = full_digit_sums(a, axis)
    return digits_to_float(d, top)


def values_from_sums(stat: Within, sums: np.ndarray, counts: np.ndarray, *, pooled: bool) -> np.ndarray:
    """:func:`task_values` (or the pooled statistic at level one) of instance sums, refusing sums that overflowed.

    Scores are finite (readers and :func:`engine.kernels.aggregate.as_profile` refuse infinities), so an
    infinite sum is a total beyond the float64 range: said in one line instead of reported as a mean of ``inf``.
    """
    if np.isinf(sums).any():
        raise VotebenchError(f"the instance scores of a task sum beyond the float64 range (about 1.8e308), so their "
                             f"{stat.name} cannot be formed; rescale the scores (e.g. divide them by 1e10)")
    return np.asarray(stat.pool(sums, counts), dtype=np.float64) if pooled else task_values(stat, sums, counts)


def task_values(stat: Within, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Task-level values ``(..., T, S)`` of a within-task statistic from its instance sums and counts.

    Real-valued statistics (means) follow the tie rule within each task: values equal as rational numbers
    (e.g. means over different numbers of instances) become equal before a rule compares them.
    """
    out = np.asarray(stat.task(sums, counts), dtype=np.float64)
    return out if stat.grid is not None else snap_ties(out)


def exact_instance_sums(values: xr.DataArray) -> xr.DataArray:
    """Sums over ``instance`` that depend on the multiset of values only (``NaN`` = 0), lazily for dask.

    Every value is cut into base-2**31 digits that hold it exactly (:func:`engine.kernels.exact.full_digit_sums`,
    each chunk from the anchor of its own largest ``|value|``), the digits are summed as integers over
    the instance chunks (a dask tree reduction that aligns the chunks' digit positions) and the exact
    total is rounded once: the same bits for every order and every chunking of the instances.  No
    chunk waits for a global maximum, so the chunks stream through in bounded memory.
    """
    v = values.transpose(..., INSTANCE)
    dims = v.dims[:-1]
    coords = {k: c for k, c in v.coords.items() if INSTANCE not in c.dims}
    if not is_dask(v):
        return xr.DataArray(instance_sums(v.data, axis=-1), dims=dims, coords=coords)
    import dask.array as da

    arr = v.data if v.dtype.kind == "f" else v.data.astype(np.float64)  # float32 stays: fewer digits per value
    out = da.reduction(arr, _sums_chunk, _sums_aggregate, combine=_sums_combine, axis=-1, dtype=np.float64,
                       concatenate=False, meta=np.empty((0,) * (arr.ndim - 1), dtype=np.float64))
    return xr.DataArray(out, dims=dims, coords=coords)


def rule_label(rule: str = "borda", *, within: str | None = None, across: str | None = None) -> str:
    """The label of a rule request (:attr:`Plan.rule_label`, the ``rule`` attribute of a ranking): the rule's
    registered name, or ``"within>across"`` for a two-step request with two different rules."""
    w, a = get_rule(within or rule).name, get_rule(across or rule).name
    return a if w == a else f"{w}>{a}"


@dataclass(frozen=True)
class Plan(Choices):
    """A validated aggregation request and its lazily prepared inputs (see :func:`prepare`).

    ``x`` is the oriented score tensor after the missing-score policy, in the
    canonical order of its labels (:func:`canonical_order`), ``miss`` the
    missing-score counts (task, system) before the policy, ``judged`` the number
    of judges per task after it.  ``systems``, ``tasks``, ``weights``, ``groups``
    and per-task options follow the canonical order; ``restore`` maps results
    over systems back to the caller's order (``None``: the same order).
    """

    x: xr.DataArray
    miss: xr.DataArray
    judged: xr.DataArray
    level: Level
    missing: MissingPolicy
    restore: np.ndarray | None = None

    def check_complete(self) -> None:
        """Raise, as :func:`aggregate` would, when the rules need a missing-score policy and none was chosen (numpy data)."""
        if self.missing == "error" and self.needs_policy:
            miss = np.asarray(self.miss.values)
            if miss.any():
                raise VotebenchError(describe_missing(miss, self.systems, self.tasks))

    def restored(self, result: Any, dim: str = SYSTEM) -> Any:
        """``result`` (xarray, along ``dim``) in the caller's system order."""
        return result if self.restore is None else result.isel({dim: self.restore})

    @property
    def pooled(self) -> bool:
        """Level ``one``: the within statistic pools every judge (no across step)."""
        return self.level == "one"

    @property
    def needs_policy(self) -> bool:
        involved = [self.across] + ([self.within] if self.level != "task" or self.groups is not None else [])
        return any(r.missing == "policy" for r in involved)

    @property
    def rule_label(self) -> str:
        return rule_label(self.across.name, within=self.within.name)

    def finish(self) -> Finish:
        """What :func:`finalize` needs of this plan besides the scores."""
        return Finish(**self.choices(), pooled=self.pooled, policy=self.missing, needs_policy=self.needs_policy)


class _Plans:
    """The last few requests planned in this process: one score tensor (by identity) and its options -> its :class:`Plan`.

    A request that several steps plan alike (the inspection of a sweep's input, the check of a
    bootstrap, each block of replicates) is planned once: a plan is only read after it is made.
    Only top-level requests are held (``validate`` and ``canonical``), never derived tensors such as replicates.
    A tensor is held by a weak reference: once the caller drops it, its plans go too.
    """

    def __init__(self, entries: int = 4) -> None:
        self.entries = entries
        self.items: list[tuple[weakref.ref[xr.DataArray], bytes, Plan]] = []
        self.lock = threading.RLock()  # re-entrant: a collection inside get/put may run the callback (forget) here
        self.planning = threading.RLock()

    @staticmethod
    def key(kwargs: Mapping[str, Any]) -> bytes | None:
        try:
            return pickle.dumps(sorted(kwargs.items()), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an option that cannot be pickled (a lambda): plan it afresh
            return None

    def get(self, scores: xr.DataArray, key: bytes) -> Plan | None:
        with self.lock:
            return next((plan for s, k, plan in self.items if s() is scores and k == key), None)

    def put(self, scores: xr.DataArray, key: bytes, plan: Plan) -> None:
        with self.lock:
            ref = weakref.ref(scores, self.forget)
            self.items = [(ref, key, plan)] + self.items[: self.entries - 1]

    def forget(self, ref: weakref.ref[xr.DataArray]) -> None:
        """Drop the plans of a tensor that no longer exists (the weak reference's callback)."""
        with self.lock:
            self.items = [item for item in self.items if item[0] is not ref]


_PLANS = _Plans()


def _planned_once(make: Any) -> Any:
    signature = inspect.signature(make)

    @functools.wraps(make)
    def prepare(scores: xr.DataArray, **kwargs: Any) -> Plan:
        if not kwargs.get("validate", True) or not kwargs.get("canonical", True):
            return make(scores, **kwargs)
        bound = signature.bind(scores, **kwargs)
        bound.apply_defaults()  # a default given or left out is the same request
        key = _Plans.key({k: v for k, v in bound.arguments.items() if k != "scores"})
        if key is None:
            return make(scores, **kwargs)
        with _PLANS.planning:  # concurrent blocks of one request wait for its one plan
            plan = _PLANS.get(scores, key)
            if plan is None:
                plan = make(scores, **kwargs)
                _PLANS.put(scores, key, plan)
        return plan

    return prepare


@_planned_once
def prepare(
    scores: xr.DataArray,
    *,
    rule: str = "borda",
    level: Level | None = None,
    missing: MissingPolicy = "error",
    weights: Mapping[str, float] | Sequence[float] | xr.DataArray | str | None = None,
    within: str | None = None,
    across: str | None = None,
    groups: bool | Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
    validate: bool = True,
    canonical: bool = True,
    option_rules: Sequence[Rule] = (),
) -> Plan:
    """Validate an aggregation request (options as :func:`aggregate`) and prepare its inputs lazily.

    ``validate=False`` skips the checks of the tensor itself (:func:`engine.labelled.canonical.validate_scores`), for
    tensors derived from a validated one, such as bootstrap replicates of a policy-applied tensor,
    where a task may have lost every judge to the missing-score policy.  ``canonical=False`` keeps
    the tensor's own order (for tensors derived from an already canonical one).  ``option_rules``: further
    rules whose kernels may take ``options`` (several rules of one request, :func:`aggregate_rules`).
    """
    if validate:
        ensure_valid(scores)
    r_within = get_rule(within or rule)
    r_across = get_rule(across or rule)
    lvl = resolve_level(scores, level)
    missing = check_policy(missing)
    if lvl == "one" and (r_within.name != r_across.name or groups):
        raise VotebenchError("level 'one' pools every judge under one rule: it takes no within/across rules or groups")
    systems = [str(s) for s in scores[SYSTEM].values]
    tasks = [str(t) for t in scores[TASK].values]
    if is_dask(scores) and len(scores.chunksizes.get(SYSTEM, (0,))) > 1:
        raise VotebenchError("the system dimension must not be chunked; use scores.chunk({'system': -1})")
    glabels = group_labels(scores, groups)
    if isinstance(weights, str) and weights == "groups" and glabels is None:
        group_labels_for_weights = [str(g) for g in scores["group"].values]
    else:
        group_labels_for_weights = glabels or []
    w = weights_vector(weights, tasks, group_labels_for_weights)
    if lvl == "one" and w is not None:
        raise VotebenchError("task weights apply to levels 'task' and 'two', not 'one'")
    opts = per_task_options(options, tasks)
    check_options([r_within, r_across, *option_rules], opts)
    check_option_values(opts)
    restore = None
    perms = None
    if canonical:
        perms = label_perms(scores)
        if is_dask(scores):
            scores = canonical_order(scores)[0]
        tp = perms[TASK]
        if not np.array_equal(tp, np.arange(tp.size)):
            tasks = [tasks[i] for i in tp]
            w = None if w is None else w[tp]
            glabels = None if glabels is None else [glabels[i] for i in tp]
            opts = {k: (tuple(v[i] for i in tp) if k in PER_TASK_OPTIONS and isinstance(v, tuple) and len(v) == tp.size
                        else v) for k, v in opts.items()}
        sp = perms[SYSTEM]
        if not np.array_equal(sp, np.arange(sp.size)):
            systems = [systems[i] for i in sp]
            restore = np.argsort(sp)
    if is_dask(scores):
        x = orient(scores)
        miss = missing_report(x).transpose(TASK, SYSTEM)
        x = apply_missing_policy(x, missing)
        judged = _judge_present(x).sum(INSTANCE)
    else:  # in memory: the same steps on numpy arrays, without xarray's per-operation overhead
        x, miss, judged = _prepare_in_memory(scores, missing, perms)
    return Plan(x=x, miss=miss, judged=judged, within=r_within, across=r_across, level=lvl, missing=missing,
                weights=w, groups=glabels, options=opts, systems=systems, tasks=tasks, restore=restore)


def _prepare_in_memory(scores: xr.DataArray, missing: str, perms: Mapping[str, np.ndarray] | None
                       ) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """:func:`canonical_order` (``perms``), :func:`orient`, :func:`missing_report` and :func:`apply_missing_policy` of
    numpy-backed scores, in numpy (one DataArray built at the end)."""
    axes = [scores.dims.index(d) for d in (SYSTEM, TASK, INSTANCE)]
    v = np.asarray(scores.values, dtype=np.float64).transpose(axes)
    if perms is not None:
        v = v[np.ix_(perms[SYSTEM], perms[TASK], perms[INSTANCE])]
    else:
        v = v.copy()
    coords = {}
    for name, c in scores.coords.variables.items():  # Variables: no DataArray per coordinate
        # indexing a Variable keeps its data as it is (no new conversion of object labels)
        coords[name] = c.isel({d: perms[d] for d in c.dims}) if perms is not None else c.copy(deep=False)
    if "higher_is_better" in coords:
        hib = np.asarray(coords["higher_is_better"].values, dtype=bool)
        v[:, ~hib, :] *= -1.0
        coords["higher_is_better"] = xr.Variable((TASK,), np.ones(v.shape[1], dtype=bool))  # oriented
    nan = np.isnan(v)
    judge_present = ~nan.all(axis=0)  # (T, K): padding judges hold no score at all
    miss = (nan & judge_present).sum(axis=2).T  # (T, S)
    if missing == "listwise":
        v[miss.sum(axis=0) > 0] = np.nan
    elif missing == "drop-judges":
        v[:, nan.any(axis=0) & judge_present] = np.nan
    judged = (~np.isnan(v)).any(axis=0).sum(axis=1)
    x = xr.DataArray(v, dims=(SYSTEM, TASK, INSTANCE), coords=coords, name=scores.name, attrs=scores.attrs)
    return x, xr.DataArray(miss, dims=(TASK, SYSTEM)), xr.DataArray(judged, dims=(TASK,))


def within_array(plan: Plan) -> np.ndarray:
    """The within step of :func:`within_step` on numpy-backed plans: task-level ``(T, S)`` (pooled ``(S,)`` at level one)."""
    x = np.asarray(plan.x.transpose(TASK, INSTANCE, SYSTEM).values, dtype=np.float64)
    name = "mean" if plan.level == "task" else plan.within.within
    if plan.level == "task" and x.shape[1] == 1:
        return x[:, 0, :]
    if name is not None:
        stat = get_within(name)
        values = stat.judge(x)
        sums = instance_sums(values, exact=stat.grid is None)
        counts = (~np.isnan(values)).sum(axis=-2)
        return values_from_sums(stat, sums, counts, pooled=plan.level == "one")
    if plan.level == "one":
        return call_kernel(plan.within, x.reshape(-1, x.shape[-1]), None, plan.options)
    return call_kernel(plan.within, x, None, plan.options)


class Request(TypedDict, total=False):
    """The options of an aggregation request (:func:`aggregate`, :func:`prepare`), for type checkers."""

    rule: str
    level: str | None
    missing: str
    weights: Mapping[str, float] | Sequence[float] | xr.DataArray | str | None
    within: str | None
    across: str | None
    groups: bool | Mapping[str, str] | None
    options: Mapping[str, Any] | None


def aggregate(scores: xr.DataArray, **request: Unpack[Request]) -> xr.DataArray:
    """Aggregate a score tensor into one score per system (higher is better).

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor (numpy or dask backed), see :func:`engine.open_scores`.
    **request
        The keyword options below (:class:`Request`); an unknown one is a ``TypeError``.
    rule : str
        A registered rule (:func:`engine.rule_names`), default ``"borda"``.
    level : {"task", "one", "two"}, optional
        How instances enter (see :mod:`engine.rules`); default ``"two"`` for
        instance-level data, ``"task"`` for task-level data.
    missing : {"error", "listwise", "drop-judges"}
        What to do with missing scores for rules that need a policy: refuse
        (default), drop the systems that have any, or drop the judges
        (task x instance) that have any.  Pairwise rules ignore missing pairs.
    weights : mapping, sequence or "groups", optional
        Per-task weights of the across-task step (within groups when
        ``groups`` is set); ``"groups"`` gives each task 1/|its group|
        (Vote'n'Rank weighted aggregation).
    within, across : str, optional
        Two-step aggregation: the rule applied within each task over its
        instances (level ``two``) or within each task group (with ``groups``),
        and the rule applied across tasks or groups.  Both default to ``rule``.
    groups : bool or mapping, optional
        ``True`` aggregates within the task groups of the ``group`` coordinate
        first (Vote'n'Rank two-step aggregation), or give a mapping task -> group.
    options : mapping, optional
        Keyword options of the rule kernels (e.g. ``{"gamma": 0.9}``).  A per-task option
        (:data:`PER_TASK_OPTIONS`) may be a list, tuple or array in the input's task order, or a
        mapping task -> value (:func:`per_task_options`).

    Returns
    -------
    xarray.DataArray
        ``score`` with dim ``system``; ``NaN`` for systems dropped by the policy.
        Lazy (dask) when ``scores`` is.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 8.5]]),
    ...                              systems=["a", "b", "c"], tasks=["x", "y"])
    >>> engine.aggregate(s, rule="borda").values.tolist()
    [2.0, 1.0, 3.0]
    """
    return aggregate_plan(prepare(scores, **request))


def aggregate_plan(plan: Plan) -> xr.DataArray:
    """The ``score`` of a prepared request (:func:`prepare`); :func:`aggregate` is ``prepare`` + this."""
    attrs = {"rule": plan.rule_label, "level": plan.level, "missing": plan.missing}
    if not is_dask(plan.x):  # in memory: numpy all the way, one DataArray at the end
        score = finalize(within_array(plan), np.asarray(plan.judged.values), np.asarray(plan.miss.values),
                         plan.finish())
        out = xr.DataArray(score, dims=(SYSTEM,), coords={SYSTEM: plan.x[SYSTEM].values}, name="score", attrs=attrs)
        return plan.restored(out)
    X = within_step(plan.x, plan.within, plan.level, plan.options)
    judged, miss = plan.judged, plan.miss
    if is_dask(X):
        X = X.chunk({d: -1 for d in X.dims})
        miss = miss.chunk({TASK: -1, SYSTEM: -1})
        judged = judged.chunk({TASK: -1})
    score = xr.apply_ufunc(
        finalize,
        X,
        judged,
        miss,
        input_core_dims=[[SYSTEM] if plan.pooled else [TASK, SYSTEM], [TASK], [TASK, SYSTEM]],
        output_core_dims=[[SYSTEM]],
        dask="parallelized",
        output_dtypes=[np.float64],
        kwargs={"finish": plan.finish()},
    )
    score.name = "score"
    score.attrs = attrs
    return plan.restored(score)


#: the pairwise sums one request shares between its rules (whole numbers: the same bits as each rule's own)
_SHARED_SUMS = ("wins", "pairs")


def aggregate_rules(scores: xr.DataArray, rules: Sequence[str], **options: Any) -> xr.DataArray:
    """Several rules on the same data in one request: ``score`` with dims (rule, system).

    Options are those of :func:`aggregate` (``options`` may hold the kernel options of any of the rules).
    The data is prepared once (validation, orientation, missing-score policy, weights), the task-level
    scores are computed once per within-task statistic, and the majority-relation rules (Copeland,
    Minimax, Condorcet, Baldwin, success rate, Pavao's Copeland) read one shared pairwise win matrix.
    Every row equals :func:`aggregate` with that rule, bit for bit.

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor (numpy or dask backed), see :func:`engine.open_scores`.
    rules : sequence of str
        Distinct registered rules (:func:`engine.rule_names`).
    **options
        The options of :func:`aggregate`, shared by every rule.

    Returns
    -------
    xarray.DataArray
        ``score`` with dims (rule, system), higher is better; lazy for dask-backed scores.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 8.5]]), systems=["a", "b", "c"])
    >>> engine.aggregate_rules(s, ["borda", "copeland"]).values.tolist()
    [[2.0, 1.0, 3.0], [0.0, -1.0, 1.0]]
    """
    names = [rules] if isinstance(rules, str) else list(rules)
    if not names or len(set(names)) != len(names):
        raise VotebenchError(f"give one or more distinct rules, got {names}")
    opts = dict(options.pop("options", None) or {})
    objs = [get_rule(n) for n in names]
    base = prepare(scores, rule=names[0], options=opts, option_rules=objs, **options)
    plans = [dataclasses.replace(base, within=r, across=r, options=_options_for(r, base.options)) for r in objs]
    attrs = {"rule": ",".join(names), "level": base.level, "missing": base.missing}
    if is_dask(base.x) or base.groups is not None or base.pooled:
        out = xr.concat([aggregate_plan(p) for p in plans], dim=RULE, coords="minimal", compat="override")
        out = out.assign_coords({RULE: names})
        out.attrs = attrs
        return out
    cache: dict[Any, Any] = {}
    data = np.stack([_score_sharing(p, cache) for p in plans])
    out = xr.DataArray(data, dims=(RULE, SYSTEM), coords={RULE: names, SYSTEM: base.x[SYSTEM].values}, name="score",
                       attrs=attrs)
    return base.restored(out)


def _options_for(rule: Rule, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of ``options`` that ``rule``'s kernel takes (all of them for a kernel with ``**options``)."""
    names = kernel_options(rule)
    return dict(options) if names is None else {k: v for k, v in options.items() if k in names}


def _score_sharing(plan: Plan, cache: dict[Any, Any]) -> np.ndarray:
    """The scores of a numpy-backed plan (canonical system order), reusing the task-level matrix and the pairwise
    sums held in ``cache`` by the other rules of the request."""
    r = plan.across
    key = (plan.level, "mean" if plan.level == "task" else r.within or r.name)
    if key not in cache:
        cache[key] = within_array(plan)
    X = cache[key]
    sums = None
    if r.from_sums is not None and set(r.sums) <= set(_SHARED_SUMS) and (plan.weights is None or (plan.weights > 0).all()) \
            and not use_blocks(r.name, X, plan.weights):  # large matrices: the rule runs in blocks instead
        if ("sums",) + key not in cache:
            w = np.ones((1, X.shape[-2])) if plan.weights is None else plan.weights[None, :]
            cache[("sums",) + key] = {k: v[0] for k, v in task_pair_sums(X, w, _SHARED_SUMS).items()}
        sums = cache[("sums",) + key]
    return finalize(X, np.asarray(plan.judged.values), np.asarray(plan.miss.values), plan.finish(), pair_sums=sums)


def rank_rules(scores: xr.DataArray, rules: Sequence[str], **options: Any) -> xr.Dataset:
    """:func:`rank` for several rules in one request (see :func:`aggregate_rules`): dims (rule, system).

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor (numpy or dask backed), see :func:`engine.open_scores`.
    rules : sequence of str
        Registered rules (:func:`engine.rule_names`).
    **options
        The options of :func:`aggregate`, shared by every rule (``options`` may hold kernel options of any of them).

    Returns
    -------
    xarray.Dataset
        ``score`` and ``rank`` with dims (rule, system), ``discriminative_power`` (rule); each row is bitwise
        :func:`rank` of that rule alone.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 8.5]]), systems=["a", "b", "c"])
    >>> engine.rank_rules(s, ["borda", "copeland"])["rank"].values.tolist()
    [[2.0, 3.0, 1.0], [2.0, 3.0, 1.0]]
    """
    return ranking(aggregate_rules(scores, rules, **options))


def rank(scores: xr.DataArray, **options: Any) -> xr.Dataset:
    """Aggregate and rank: a Dataset with ``score`` and ``rank`` per system.

    ``rank`` = 1 + number of systems with a strictly higher score (ties share
    the better rank); ``NaN`` for systems dropped by the missing-score policy.
    ``discriminative_power`` is the number of systems tied with another
    (Vote'n'Rank); :func:`tied_groups` lists them.

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor (numpy or dask backed), see :func:`engine.open_scores`.
    **options
        The options of :func:`aggregate` (``rule``, ``level``, ``missing``, ``weights``, ...).

    Returns
    -------
    xarray.Dataset
        ``score``, ``rank`` (system) and ``discriminative_power``; lazy for dask-backed scores (call ``.compute()``).

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 8.5]]), systems=["a", "b", "c"])
    >>> r = engine.rank(s, rule="borda")
    >>> r["score"].values.tolist(), r["rank"].values.tolist()
    ([2.0, 1.0, 3.0], [2.0, 3.0, 1.0])
    """
    return ranking(aggregate(scores, **options))


def ranking(score: xr.DataArray) -> xr.Dataset:
    """``score``, ``rank`` and ``discriminative_power`` of an aggregate score (see :func:`rank`)."""
    if not is_dask(score):
        v = np.asarray(score.values, dtype=np.float64)
        ds = xr.Dataset({"score": score, "rank": (score.dims, min_rank(v), dict(score.attrs)),
                         "discriminative_power": (score.dims[:-1], tied_count(v), dict(score.attrs))})
        ds.attrs = dict(score.attrs)
        return ds
    ranks = xr.apply_ufunc(
        min_rank, score, input_core_dims=[[SYSTEM]], output_core_dims=[[SYSTEM]], dask="parallelized",
        output_dtypes=[np.float64],
    )
    dp = xr.apply_ufunc(tied_count, score, input_core_dims=[[SYSTEM]], dask="parallelized", output_dtypes=[np.int64])
    ds = xr.Dataset({"score": score, "rank": ranks, "discriminative_power": dp})
    ds.attrs = dict(score.attrs)
    return ds


def tied_groups(ranking: xr.Dataset) -> list[list[str]]:
    """Groups of two or more systems that share a score in a computed ranking, best group first.

    Parameters
    ----------
    ranking : xarray.Dataset
        A computed ranking (:func:`rank`) with ``score`` per system.

    Returns
    -------
    list of list of str
        Each group's system names, sorted; systems without a score (``NaN``) are left out.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[2.0, 2.0], [2.0, 2.0], [0.0, 1.0]]), systems=["a", "b", "c"])
    >>> engine.tied_groups(engine.rank(s, rule="borda"))
    [['a', 'b']]
    """
    score = np.asarray(ranking["score"].values, dtype=float)
    systems = [str(s) for s in ranking[SYSTEM].values]
    by_score: dict[float, list[str]] = {}
    for name, v in zip(systems, score):
        if not np.isnan(v):
            by_score.setdefault(float(v), []).append(name)
    return [sorted(g) for v, g in sorted(by_score.items(), key=lambda kv: -kv[0]) if len(g) > 1]


def task_scores(scores: xr.DataArray, *, missing: str = "error") -> xr.DataArray:
    """Oriented task-level scores (task, system): the per-task mean over instances.

    Missing cells stay ``NaN`` unless ``missing`` is ``listwise`` or
    ``drop-judges``; lazy for dask input.
    """
    ensure_valid(scores)
    missing = check_policy(missing)
    x = apply_missing_policy(orient(scores), missing)
    X = within_step(x, get_rule("mean"), "task", {})
    return X.transpose(TASK, SYSTEM).rename("task_scores")
