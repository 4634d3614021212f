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

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from .dims import INSTANCE, SYSTEM, TASK
from .errors import VotebenchError
from .io import validate_scores
from .kernels.ranking import min_rank
from .rules import LEVELS, Rule, Within, get_rule, get_within

__all__ = ["MISSING_POLICIES", "orient", "missing_report", "aggregate", "rank", "resolve_level"]

#: policies for missing scores of rules that need one
MISSING_POLICIES = ("error", "listwise", "drop-judges")


def _is_dask(da: xr.DataArray) -> bool:
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
    """
    if "higher_is_better" not in scores.coords:
        return scores
    hib = np.asarray(scores["higher_is_better"].values, dtype=bool)
    if hib.all():
        return scores
    sign = xr.DataArray(np.where(hib, 1, -1).astype(scores.dtype), dims=TASK)
    out = scores * sign
    out.attrs = dict(scores.attrs)
    out.name = scores.name
    return out.assign_coords(higher_is_better=(TASK, np.ones_like(hib)))


def _judge_present(x: xr.DataArray) -> xr.DataArray:
    """(task, instance): the judge has at least one score (is not padding)."""
    return x.notnull().any(SYSTEM)


def missing_report(scores: xr.DataArray) -> xr.DataArray:
    """Count missing scores per (system, task).

    A cell is missing when it is ``NaN`` in a judge that has at least one other
    score; a judge with no score at all is padding of a ragged tensor and does
    not count.

    Returns
    -------
    xarray.DataArray of int, dims (system, task)
    """
    return (scores.isnull() & _judge_present(scores)).sum(INSTANCE)


def _apply_missing_policy(x: xr.DataArray, policy: str) -> xr.DataArray:
    if policy == "error":
        return x
    if policy == "drop-judges":
        complete = x.notnull().all(SYSTEM)
        return x.where(complete)
    if policy == "listwise":
        has_missing = missing_report(x).sum(TASK) > 0
        return x.where(~has_missing)
    raise VotebenchError(f"unknown missing-score policy {policy!r}; choose one of {', '.join(MISSING_POLICIES)}")


def resolve_level(scores: xr.DataArray, level: str | None, rule: Rule) -> str:
    """The level to use: default ``two`` for instance-level data, ``task`` otherwise."""
    if level is None:
        level = "two" if scores.sizes[INSTANCE] > 1 and "two" in rule.levels else "task"
    if level not in LEVELS:
        raise VotebenchError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    if level not in rule.levels:
        raise VotebenchError(f"rule {rule.name!r} supports level(s) {', '.join(rule.levels)}, not {level!r}")
    return level


def _weights_vector(weights: Any, tasks: Sequence[str]) -> np.ndarray | None:
    if weights is None:
        return None
    if isinstance(weights, xr.DataArray):
        weights = dict(zip(weights[TASK].values.tolist(), weights.values.tolist()))
    if isinstance(weights, Mapping):
        unknown = sorted(set(map(str, weights)) - set(tasks))
        if unknown:
            raise VotebenchError(f"weights name unknown task(s): {', '.join(unknown[:5])}")
        w = np.array([float(weights.get(t, 0.0)) for t in tasks])
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(tasks),):
            raise VotebenchError(f"expected {len(tasks)} task weights, got {w.shape[0] if w.ndim else 'a scalar'}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise VotebenchError("task weights must be finite and non-negative")
    if w.sum() == 0:
        raise VotebenchError("task weights are all zero")
    return w


def _describe_missing(missing: np.ndarray, systems: Sequence[str], tasks: Sequence[str]) -> str:
    total = int(missing.sum())
    t_idx, s_idx = np.nonzero(missing)
    where = ", ".join(f"{systems[s]!r} on {tasks[t]!r}" for t, s in list(zip(t_idx, s_idx))[:3])
    more = "" if len(t_idx) <= 3 else f" and {len(t_idx) - 3} more system/task pairs"
    n_sys = len(set(s_idx.tolist()))
    return (
        f"{total} missing score{'s' if total != 1 else ''} in {n_sys} system{'s' if n_sys != 1 else ''} "
        f"({where}{more}); choose a missing-score policy: 'listwise' (drop those systems) "
        f"or 'drop-judges' (drop the judges with missing scores)"
    )


def _finalize(
    sums: np.ndarray,
    counts: np.ndarray,
    missing: np.ndarray,
    *,
    rule: Rule,
    stat: Within,
    level: str,
    policy: str,
    weights: np.ndarray | None,
    systems: Sequence[str],
    tasks: Sequence[str],
) -> np.ndarray:
    """(task, system) partial sums -> one score per system; raises on data-dependent problems."""
    if policy == "error" and rule.missing == "policy" and missing.any():
        raise VotebenchError(_describe_missing(missing, systems, tasks))
    judged = counts.sum(axis=-1) > 0
    if policy == "error" and not judged.all():
        bad = [tasks[i] for i in np.flatnonzero(~judged)]
        raise VotebenchError(f"task {bad[0]!r} has no scores" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    if not judged.any():
        raise VotebenchError(f"no task has complete scores under missing-score policy {policy!r}")
    if level == "one":
        score = stat.pool(sums, counts)
        if weights is not None:
            raise VotebenchError("task weights apply to levels 'task' and 'two', not 'one'")
    else:
        score = rule.kernel(stat.task(sums, counts), weights=weights)
    n_ranked = int(np.count_nonzero(~np.isnan(score)))
    if n_ranked < 2:
        raise VotebenchError(
            f"ranking needs at least two systems with scores, {n_ranked} left under missing-score policy {policy!r}"
        )
    return score


def aggregate(
    scores: xr.DataArray,
    *,
    rule: str = "borda",
    level: str | None = None,
    missing: str = "error",
    weights: Mapping[str, float] | Sequence[float] | xr.DataArray | None = None,
) -> xr.DataArray:
    """Aggregate a score tensor into one score per system (higher is better).

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor (numpy or dask backed), see :func:`engine.open_scores`.
    rule : str
        A registered rule (:func:`engine.rule_names`), default ``"borda"``.
    level : {"task", "one", "two"}, optional
        How instances enter (see :mod:`engine.rules`); default ``"two"`` for
        instance-level data, ``"task"`` for task-level data.
    missing : {"error", "listwise", "drop-judges"}
        What to do with missing scores: refuse (default), drop the systems that
        have any, or drop the judges (task x instance) that have any.
    weights : mapping or sequence, optional
        Per-task weights of the across-task step.

    Returns
    -------
    xarray.DataArray
        ``score`` with dim ``system``; ``NaN`` for systems dropped by the policy.
        Lazy (dask) when ``scores`` is.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 1.0]]),
    ...                              systems=["a", "b", "c"], tasks=["x", "y"])
    >>> engine.aggregate(s, rule="borda").values.tolist()
    [2.0, 3.0, 1.0]
    """
    validate_scores(scores)
    r = get_rule(rule)
    lvl = resolve_level(scores, level, r)
    if missing not in MISSING_POLICIES:
        raise VotebenchError(f"unknown missing-score policy {missing!r}; choose one of {', '.join(MISSING_POLICIES)}")
    stat = get_within("mean" if lvl == "task" else r.within)  # type: ignore[arg-type]
    systems = [str(s) for s in scores[SYSTEM].values]
    tasks = [str(t) for t in scores[TASK].values]
    w = _weights_vector(weights, tasks)

    x = orient(scores)
    miss = missing_report(x)
    x = _apply_missing_policy(x, missing)
    values = xr.apply_ufunc(
        stat.judge,
        x,
        input_core_dims=[[SYSTEM]],
        output_core_dims=[[SYSTEM]],
        dask="parallelized",
        output_dtypes=[np.float64],
    )
    sums = values.sum(INSTANCE, skipna=True)
    counts = values.notnull().sum(INSTANCE)
    parts = [sums, counts, miss]
    if _is_dask(values):
        parts = [p.chunk({TASK: -1, SYSTEM: -1}) for p in parts]
    score = xr.apply_ufunc(
        _finalize,
        *parts,
        input_core_dims=[[TASK, SYSTEM]] * 3,
        output_core_dims=[[SYSTEM]],
        dask="parallelized",
        output_dtypes=[np.float64],
        kwargs=dict(rule=r, stat=stat, level=lvl, policy=missing, weights=w, systems=systems, tasks=tasks),
    )
    score.name = "score"
    score.attrs = {"rule": r.name, "level": lvl, "missing": missing}
    return score


def rank(scores: xr.DataArray, **options: Any) -> xr.Dataset:
    """Aggregate and rank: a Dataset with ``score`` and ``rank`` per system.

    ``rank`` = 1 + number of systems with a strictly higher score (ties share
    the better rank); ``NaN`` for systems dropped by the missing-score policy.
    Options are those of :func:`aggregate`.
    """
    score = aggregate(scores, **options)
    ranks = xr.apply_ufunc(
        min_rank, score, input_core_dims=[[SYSTEM]], output_core_dims=[[SYSTEM]], dask="parallelized",
        output_dtypes=[np.float64],
    )
    ds = xr.Dataset({"score": score, "rank": ranks})
    ds.attrs = dict(score.attrs)
    return ds
