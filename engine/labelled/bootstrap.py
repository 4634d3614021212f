"""Bootstrap a ranking over tasks (judges), systems (candidates) or instances.

:func:`bootstrap` returns the full-data ranking (the point estimate, never a
bootstrap median) with ``replicate_score`` / ``replicate_rank`` of shape
``(replicate, system)``; :func:`summarize` turns them into rank intervals,
``P(i above j)``, the systems tied with the leader and the stability of the
ranking (Pavao et al. 2021, section 2.3).

Replicate ``b`` resamples with ``SeedSequence(seed, spawn_key=(axis, b))``
(:mod:`engine.kernels.resample`), so results are identical for any block size, any
chunking of the data and any number of workers, and one replicate can be
recomputed alone (:func:`resampled_scores`).

How a block of replicates is evaluated (no per-replicate pass over the data
for the rules that have a product form):

``over="tasks"``
    The task-level matrix ``X`` (T, S) is computed once.  Rules registered with
    ``resample="weights"`` take the resample counts as a ``(B, T)`` stack of
    task weights (pairwise rules compare once and take matrix products, Borda
    weights per-task points); ``"index"`` rules get the batch of resampled
    matrices ``(B, T, S)``; ``"loop"`` rules one call per replicate.
``over="systems"``
    Separable rules (a system's score depends on its own scores only: mean,
    median, ...) gather the full-data scores of the drawn systems; task-level
    Borda and Average Rank (whole-number weights) are the full-data pairwise
    matrix (wins + ties / 2) times the candidate counts; pairwise rules gather
    the drawn rows and columns of the full-data pairwise sums;
    other rules get a batched kernel call on the resampled columns
    ``X[:, idx]`` (a drawn system's copies tie with each other).  At levels ``one``/``two`` the within-task
    Borda points among the drawn systems are rows of the per-task pairwise
    matrix (wins + ties / 2 over the task's instances, one pass over the data)
    times the candidate counts.
``over="instances"``
    For rules with a decomposable within-task statistic the per-judge values
    ``J`` (T, K, S) meet the instance resample counts ``C`` (B, T, K) in one
    product per task, ``sums = C @ J``, summed over instance chunks (float32,
    exact, for Borda points); whole tasks go in one chunk when they fit, so
    each (replicate, task) draw is made once.  Other rules (Copeland, Bradley-Terry, ... within tasks) get the
    resampled tensors of a block of replicates ``(B, T, K, S)`` (:func:`drawn_instances`: the very tensors of
    :func:`resampled_scores`) in one batched kernel call, then the across-task step on ``(B, T, S)``.

Everything else (e.g. random_judge's per-position draws within tasks over instances, plurality points
among resampled systems, two-step group aggregation) falls back to evaluating
each replicate on its resampled tensor, one dask task per block.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

import dask.array as da
import numpy as np
import xarray as xr

from engine.dims import BOOTSTRAP_AXES, INSTANCE, OPPONENT, REPLICATE, RULE, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.kernels import metrics
from engine.kernels.checks import check_level
from engine.kernels.exact import DIGITS, anchor, digits, digits_to_float, snap_ties
from engine.kernels.ranking import min_rank
from engine.kernels.resample import counts_from_indices, instance_counts, replicate_ids, resample_indices
from engine.kernels.social import pairwise_counts, task_pair_sums
from engine.labelled.core import (
    PER_TASK_OPTIONS,
    Finish,
    Plan,
    aggregate_plan,
    call_kernel,
    canonical_order,
    exact_instance_sums,
    finalize,
    is_dask,
    prepare,
    ranking,
    within_step,
)
from engine.progress import stage
from engine.rules import get_rule, get_within

__all__ = [
    "OVER", "STRATEGIES", "Request", "Strategy", "bootstrap", "plan_for", "summarize",
    "pavao_criteria", "pavao_stability", "resampled_scores", "replicate_scores_reference",
    "stability",
]

#: axes a bootstrap can resample
OVER = BOOTSTRAP_AXES
_MIN_ROWS = 8  # replicate blocks are padded to this many rows in matrix products
_CELLS = 1 << 22  # target number of float64 cells of a replicate block's largest temporary
_TASK_BYTES = 1 << 27  # instance bootstrap: judge values of whole tasks up to this size go in one chunk


def draw_systems(present: np.ndarray, *, seed: int, replicates: Any) -> np.ndarray:
    """Candidate resamples ``(B, n)``: ``n`` draws with replacement among the ``n`` systems that have a score.

    A system without any score (e.g. removed by the listwise policy) is not a
    candidate; the draw depends only on the seed, the replicate and ``n``.
    """
    pos = np.flatnonzero(np.asarray(present, dtype=bool))
    if pos.size == 0:
        raise VotebenchError("no system has a score to resample")
    return pos[resample_indices(pos.size, seed=seed, replicates=replicates, stream="systems")]


def _check_over(over: str) -> None:
    if over not in OVER:
        raise VotebenchError(f"unknown resampling axis {over!r}; choose one of {', '.join(OVER)}")


def _block_size(n: int, cells_per_replicate: int, block: int | None) -> int:
    if block is not None:
        if block < 1:
            raise VotebenchError(f"block size must be >= 1, got {block}")
        return int(block)
    return int(max(1, min(max(n, 1), _CELLS // max(1, cells_per_replicate))))


# ------------------------------------------------------------------------------------ reference
def resampled_scores(scores: xr.DataArray, *, over: str, replicate: int, seed: int) -> xr.DataArray:
    """The score tensor of one bootstrap replicate (eager numpy), labels made unique.

    Resampled tasks are named ``"<task>#<position>"`` and resampled systems
    ``"<system>#<position>"``; resampled instances of a task fill its first
    positions (the rest is padding).  Draws index the canonical (label) order of
    systems, tasks and instances (:func:`engine.labelled.core.canonical_order`), so a
    replicate does not depend on the order of the input.  This is the definition
    the fast paths of :func:`bootstrap` are tested against.
    """
    _check_over(over)
    x = canonical_order(scores)[0].transpose(SYSTEM, TASK, INSTANCE)
    vals = np.asarray(x.values, dtype=np.float64)
    if over == "tasks":
        idx = resample_indices(x.sizes[TASK], seed=seed, replicates=[replicate], stream="tasks")[0]
        out = x.isel({TASK: idx})
        labels = [f"{t}#{i}" for i, t in enumerate(out[TASK].values)]
        return out.copy(data=vals[:, idx]).assign_coords({TASK: np.array(labels, dtype=object)})
    if over == "systems":
        idx = draw_systems(np.asarray(~np.isnan(vals).all(axis=(1, 2))), seed=seed, replicates=[replicate])[0]
        out = x.isel({SYSTEM: idx})
        labels = [f"{s}#{i}" for i, s in enumerate(out[SYSTEM].values)]
        return out.copy(data=vals[idx]).assign_coords({SYSTEM: np.array(labels, dtype=object)})
    present = np.asarray(~np.isnan(vals).all(axis=0))  # (T, K) judges that exist
    counts = instance_counts(present, seed=seed, replicates=[replicate], dtype=np.int64)[0]
    new = np.full_like(vals, np.nan)
    for t in range(vals.shape[1]):
        pos = np.repeat(np.arange(vals.shape[2]), counts[t])
        new[:, t, : pos.size] = vals[:, t, pos]
    return x.copy(data=new)


def _reference_one(plan: Plan, over: str, b: int, seed: int, present: np.ndarray | None = None) -> np.ndarray:
    """Scores of replicate ``b`` by aggregating its resampled tensor (the brute-force definition).

    ``present``: which systems have a score (computed from ``plan.x`` when not given).
    """
    r = resampled_scores(plan.x, over=over, replicate=b, seed=seed)
    kw: dict[str, Any] = dict(rule=plan.within.name, level=plan.level, missing=plan.missing, options=plan.options)
    if plan.across.name != plan.within.name:
        kw.update(within=plan.within.name, across=plan.across.name)
    groups, weights = plan.groups, plan.weights
    if over == "tasks":
        idx = resample_indices(len(plan.tasks), seed=seed, replicates=[b], stream="tasks")[0]
        kw["options"] = {k: (tuple(v[i] for i in idx) if k in PER_TASK_OPTIONS and isinstance(v, tuple) else v)
                         for k, v in plan.options.items()}
        groups = None if groups is None else [groups[i] for i in idx]
        weights = None if weights is None else np.asarray(weights)[idx]
    if groups is not None:
        kw["groups"] = dict(zip([str(t) for t in r[TASK].values], groups))
    if weights is not None:
        kw["weights"] = weights
    s = np.asarray(aggregate_plan(prepare(r, validate=False, canonical=False, **kw)).values, dtype=np.float64)
    if over != "systems":
        return s
    if present is None:
        present = _present_systems(plan)
    idx = draw_systems(present, seed=seed, replicates=[b])[0]
    out = np.full(len(plan.systems), np.nan)
    out[idx] = s
    return out


def _present_systems(plan: Plan) -> np.ndarray:
    return np.asarray(~np.isnan(np.asarray(plan.x.transpose(SYSTEM, TASK, INSTANCE).values, dtype=np.float64)).all(axis=(1, 2)))


def replicate_scores_reference(
    scores: xr.DataArray, *, over: str, replicates: int | Sequence[int], seed: int, **options: Any
) -> np.ndarray:
    """``(B, S)`` replicate scores, one :func:`engine.aggregate` call per replicate (slow; for tests).

    ``options`` are those of :func:`engine.aggregate`; a system absent from a
    candidate resample gets ``NaN``.
    """
    plan = prepare(scores.compute(), **options)
    R = _reference_block(replicate_ids(replicates), plan, over, seed)
    return R if plan.restore is None else R[:, plan.restore]


# ------------------------------------------------------------------------------------ numpy blocks
def _row(weights: Any, i: int) -> Any:
    return weights if weights is None or np.ndim(weights) == 1 else weights[i]


def _across(Xb: np.ndarray, judged: np.ndarray, miss: np.ndarray, fin: Finish, weights: Any) -> np.ndarray:
    """The across-task step on a batch of task-level matrices ``(B, T, S)`` (or one matrix with a weight stack)."""
    if "loop" in (fin.across.resample, fin.within.resample):
        return np.stack([finalize(Xb[i], judged, miss, replace(fin, weights=_row(weights, i))) for i in range(Xb.shape[0])])
    return np.asarray(finalize(Xb, judged, miss, replace(fin, weights=weights)), dtype=np.float64)


def _tasks_block(ids: np.ndarray, X: np.ndarray, judged: np.ndarray, miss: np.ndarray, *, seed: int,
                 fin: Finish, pooled: Any = None) -> np.ndarray:
    """Replicate scores ``(B, S)`` of a task bootstrap from the task-level matrix ``X`` (T, S)."""
    ids = np.asarray(ids).reshape(-1)
    T = X.shape[-2]
    idx = resample_indices(T, seed=seed, replicates=ids, stream="tasks")
    has = np.asarray(judged).reshape(-1) > 0
    if fin.weights is not None:
        has &= np.asarray(fin.weights) > 0
    if not has.all():  # tasks left without judges by the policy (or of zero weight): a replicate may draw only those
        drawn = counts_from_indices(idx, T)[:, has].sum(axis=1) > 0
        if not drawn.all():
            raise VotebenchError(f"replicate {int(ids[np.argmin(drawn)])}: no task has complete scores under "
                                 f"missing-score policy {fin.policy!r}")
    w = fin.weights
    if pooled is not None:  # level one: X holds per-task sums, `pooled` = (stat, counts)
        stat, counts = pooled
        return np.asarray(stat.pool(X[idx], counts[idx]), dtype=np.float64)
    rule = fin.across
    if rule.resample == "weights" and fin.groups is None:
        mult = counts_from_indices(idx, T).astype(np.float64)
        return _across(X, judged, miss, fin, mult if w is None else mult * w)
    wb = None if w is None else w[idx]
    if fin.groups is not None:
        g = np.asarray(fin.groups, dtype=object)
        return np.stack([
            finalize(X[idx[i]], judged, miss, replace(fin, weights=None if wb is None else wb[i], groups=list(g[idx[i]])))
            for i in range(idx.shape[0])
        ])
    return _across(X[idx], judged, miss, fin, wb)


def _scatter_systems(res: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    out = np.full((idx.shape[0], n), np.nan)
    np.put_along_axis(out, idx, res, axis=-1)  # copies of a system share its score
    return out


def _systems_block(ids: np.ndarray, X: np.ndarray, judged: np.ndarray, miss: np.ndarray, *, seed: int,
                   fin: Finish, pooled: Any = None) -> np.ndarray:
    """Replicate scores of a candidate bootstrap from a task-level matrix (statistic independent of the others)."""
    ids = np.asarray(ids).reshape(-1)
    S = X.shape[-1]
    if pooled is not None:
        stat, counts = pooled
        idx = draw_systems(np.asarray(counts).sum(axis=0) > 0, seed=seed, replicates=ids)
        res = np.asarray(stat.pool(np.moveaxis(X[:, idx], 1, 0), np.moveaxis(counts[:, idx], 1, 0)), dtype=np.float64)
    else:
        idx = draw_systems(~np.isnan(X).all(axis=0), seed=seed, replicates=ids)
        res = _across(np.moveaxis(X[:, idx], 1, 0), judged, miss, fin, fin.weights)
    return _scatter_systems(res, idx, S)


def _gather_block(ids: np.ndarray, X: np.ndarray, judged: np.ndarray, miss: np.ndarray, *, seed: int,
                  fin: Finish) -> np.ndarray:
    """Candidate bootstrap of a separable rule: the full-data scores of the drawn systems."""
    idx = draw_systems(~np.isnan(X).all(axis=0), seed=seed, replicates=np.asarray(ids).reshape(-1))
    full = _across(X[None], judged, miss, fin, fin.weights)[0]
    return _scatter_systems(full[idx], idx, X.shape[-1])


def _full_pair_sums(X: np.ndarray, *, kinds: Sequence[str], weights: np.ndarray | None) -> np.ndarray:
    """Full-data pairwise sums over tasks, stacked ``(len(kinds), S, S)``."""
    T = X.shape[0]
    w = np.ones((1, T)) if weights is None else np.asarray(weights, dtype=np.float64)[None, :]
    full = task_pair_sums(np.asarray(X, dtype=np.float64), w, kinds)
    return np.stack([full[k][0] for k in kinds])


def _pair_gather_block(ids: np.ndarray, P: np.ndarray, *, seed: int, rule: Any) -> np.ndarray:
    """Candidate bootstrap of a pairwise rule: drawn rows and columns of the full-data pairwise sums ``P``."""
    ids = np.asarray(ids).reshape(-1)
    S = P.shape[-1]
    idx = draw_systems(np.diagonal(P[list(rule.sums).index("pairs")]) > 0, seed=seed, replicates=ids)
    sums: dict[str, Any] = {k: P[i][idx[:, :, None], idx[:, None, :]] for i, k in enumerate(rule.sums)}
    try:
        res = np.asarray(rule.from_sums(sums), dtype=np.float64)
    except ValueError as exc:
        raise VotebenchError(f"rule {rule.name!r}: {exc}") from None
    return _scatter_systems(res, idx, S)


def _linear_candidates_block(ids: np.ndarray, P: np.ndarray, *, seed: int, rule: Any) -> np.ndarray:
    """Candidate bootstrap of a rule linear in the candidate counts (``rule.from_candidates``: task-level Borda,
    Average Rank) from the full-data ``wins`` and ``pairs`` sums ``P``: one ``(B, S) x (S, S)`` product per block."""
    ids = np.asarray(ids).reshape(-1)
    wins, pairs = P[0], P[1]
    S = P.shape[-1]
    idx = draw_systems(np.diagonal(pairs) > 0, seed=seed, replicates=ids)
    counts = counts_from_indices(idx, S).astype(np.float64)
    res = np.asarray(rule.from_candidates(wins, pairs, counts), dtype=np.float64)
    return _scatter_systems(np.take_along_axis(res, idx, axis=-1), idx, S)


def _borda_pairs_block(ids: np.ndarray, M: np.ndarray, present: np.ndarray, judged: np.ndarray, miss: np.ndarray, *,
                       seed: int, fin: Finish, pooled: bool, stat: Any) -> np.ndarray:
    """Candidate bootstrap of a pairwise within-task statistic (Borda) from per-task pair sums ``M`` (T, S, S).

    ``M[t, i, j]`` = wins + ties / 2 of ``i`` against ``j`` over the instances of
    task ``t`` (diagonal: half the instances where ``i`` is present, the value
    of a pair of copies), so the points of a drawn column are its row of ``M``
    times the candidate counts minus the copy itself.
    """
    ids = np.asarray(ids).reshape(-1)
    S = M.shape[-1]
    idx = draw_systems(np.asarray(present).sum(axis=0) > 0, seed=seed, replicates=ids)
    counts = counts_from_indices(idx, S).astype(np.float64)  # (B, S)
    full = np.einsum("tij,bj->bti", M, counts)  # (B, T, S): points of one copy of i among the drawn set
    diag = np.diagonal(M, axis1=-2, axis2=-1)  # (T, S)
    pts = np.take_along_axis(full, idx[:, None, :], axis=-1) - diag[:, idx].transpose(1, 0, 2)
    cnt = present[:, idx].transpose(1, 0, 2)
    if pooled:
        res = np.asarray(stat.pool(pts, cnt), dtype=np.float64)
    else:
        res = _across(np.asarray(stat.task(pts, cnt), dtype=np.float64), judged, miss, fin, fin.weights)
    return _scatter_systems(res, idx, S)


def _instance_partial(ids: np.ndarray, tpos: np.ndarray, kpos: np.ndarray, J0: np.ndarray, ok: np.ndarray,
                      present: np.ndarray, mx: Any = None, *, seed: int, grid: int | None = None) -> np.ndarray:
    """Resampled sums and counts of judge values over one (task, instance) chunk: ``(B, Tc, 1, S, V)``.

    ``J0`` holds the judge values with ``NaN`` replaced by 0, ``ok`` where they
    exist (float), ``present`` the whole rows of the chunk's tasks (for the
    draws).  Task by task, the resample counts ``(B, Kc)`` of the chunk's
    instances multiply the judge values ``(Kc, S)``.  When the values are
    multiples of ``1 / grid`` and every sum stays below 2**24 after scaling, the
    product runs in float32 on integers and ``V = 2`` (sum, count).  Otherwise
    the values are cut into the fixed digits of :func:`engine.kernels.exact.digits`
    below the anchor of ``mx`` (the largest ``|value|`` of the whole tensor) and
    the counts meet the digits in float64 products of integers: ``V = DIGITS + 1``
    (digit sums, count).  Both are exact, so results are the same for any chunking
    and block size.
    """
    ids = np.asarray(ids).reshape(-1)
    tpos = np.asarray(tpos).reshape(-1)
    kpos = np.asarray(kpos).reshape(-1)
    B, (Tc, Kc, S) = ids.size, J0.shape
    start, stop = int(kpos[0]), int(kpos[-1]) + 1
    # a task's sum over its drawn instances is at most (#instances) x max |value|
    exact = grid is not None and max(1.0, float(np.abs(J0).max(initial=0.0)) * grid) * present.shape[-1] < 2.0**24
    dtype = np.float32 if exact else np.float64
    nv = 2 if grid is not None else DIGITS + 1
    top = anchor(np.asarray(mx if mx is not None else np.abs(J0).max(initial=0.0)))
    # digit products stay integers below 2**53 while at most 2**21 instances are drawn per task
    int_products = grid is None and present.shape[-1] >= 2**21
    c = np.zeros((max(B, _MIN_ROWS), Kc), dtype=dtype)
    out = np.empty((B, Tc, 1, S, nv))
    complete = ok.min(initial=1.0) == 1.0
    for t in range(Tc):
        c[:B] = instance_counts(present[t : t + 1], seed=seed, replicates=ids, tasks=tpos[t : t + 1], start=start, stop=stop,
                                dtype=dtype)[:, 0]
        if exact and grid is not None:
            out[:, t, 0, :, 0] = (c @ (J0[t] * grid).astype(np.float32))[:B]
            out[:, t, 0, :, 0] /= grid
        elif grid is not None:
            out[:, t, 0, :, 0] = (c @ J0[t])[:B]
        else:
            D = digits(J0[t], top).reshape(Kc, S * DIGITS)
            prod = (c.astype(np.int64) @ D.astype(np.int64)) if int_products else (c @ D)
            out[:, t, 0, :, :DIGITS] = prod[:B].reshape(B, S, DIGITS)
        if complete:  # the counts are the drawn instances
            out[:, t, 0, :, nv - 1] = c[:B].sum(axis=-1, dtype=np.float64)[:, None]
        else:
            out[:, t, 0, :, nv - 1] = (c @ ok[t].astype(dtype))[:B]
    return out


def _instance_finish(total: np.ndarray, judged: np.ndarray, miss: np.ndarray, mx: Any = None, *, stat: Any,
                     fin: Finish, pooled: bool) -> np.ndarray:
    """Replicate scores from the summed partials of :func:`_instance_partial` ``(B, T, S, V)``."""
    if total.shape[-1] == 2:
        sums, cnts = total[..., 0], total[..., 1]
    else:  # exact digit sums of real judge values
        sums, cnts = digits_to_float(total[..., :DIGITS], anchor(np.asarray(mx))), total[..., DIGITS]
    if pooled:
        return np.asarray(stat.pool(sums, cnts), dtype=np.float64)
    X = np.asarray(stat.task(sums, cnts), dtype=np.float64)
    if stat.grid is None:
        X = snap_ties(X)  # as the within step of the full data (engine.labelled.core)
    return _across(X, judged, miss, fin, fin.weights)


def _reference_block(ids: np.ndarray, plan: Plan, over: str, seed: int) -> np.ndarray:
    present = _present_systems(plan) if over == "systems" else None
    return np.stack([_reference_one(plan, over, int(b), seed, present) for b in np.asarray(ids).reshape(-1)])


def drawn_instances(X: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The resampled tensors ``(B, T, K, S)`` of :func:`resampled_scores` for a block of replicates at once: each
    task's drawn instances (``counts`` (B, T, K), how often each is drawn) in its first positions, in instance
    order, ``NaN`` after them; ``X`` is the canonical ``(T, K, S)`` tensor."""
    B, (T, K, S) = counts.shape[0], X.shape
    flat = counts.reshape(-1, K)  # (B * T, K)
    n = flat.sum(axis=1)
    inst = np.repeat(np.tile(np.arange(K), flat.shape[0]), flat.reshape(-1))  # drawn instances, by (b, t)
    cell = np.repeat(np.arange(flat.shape[0]), n)
    slot = np.arange(inst.size) - np.repeat(np.cumsum(n) - n, n)  # position within its (b, t)
    out = np.full((flat.shape[0], K, S), np.nan)
    out[cell, slot] = X[cell % T, inst]
    return out.reshape(B, T, K, S)


def _instance_batch_block(ids: np.ndarray, X: np.ndarray, judged: np.ndarray, miss: np.ndarray, *, seed: int,
                          fin: Finish, options: Mapping[str, Any], pooled: bool) -> np.ndarray:
    """Replicate scores ``(B, S)`` of an instance bootstrap: the replicates' resampled tensors (the reference's,
    :func:`drawn_instances`) through the within rule in one batched kernel call, then the across-task step."""
    ids = np.asarray(ids).reshape(-1)
    T, K, S = X.shape
    counts = instance_counts(~np.isnan(X).all(axis=-1), seed=seed, replicates=ids, dtype=np.int64)
    Xb = drawn_instances(X, counts)
    if pooled:  # level one: every judge of every task under the one rule
        return np.asarray(finalize(call_kernel(fin.within, Xb.reshape(ids.size, T * K, S), None, options),
                                   judged, miss, fin), dtype=np.float64)
    return _across(call_kernel(fin.within, Xb, None, options), judged, miss, fin, fin.weights)


# ------------------------------------------------------------------------------------ graph
def _meta() -> np.ndarray:
    return np.empty((0, 0), dtype=np.float64)


def _block_task(fn: Any, kwargs: dict[str, Any], values: list[np.ndarray], ids: np.ndarray) -> np.ndarray:
    """``fn(ids, *values, **kwargs)``: one block of replicates as a task of a cluster (:func:`_map_blocks`)."""
    return fn(ids, *values, **kwargs)


def _map_blocks(fn: Any, ids: np.ndarray, block: int, lazy: bool, S: int, *args: Any, **kwargs: Any) -> Any:
    """Apply ``fn(ids_block, *args, **kwargs) -> (B, S)`` to every block of replicates.

    Eager: a numpy array.  Lazy: a dask array (replicate, system), one task per
    block of replicates, each receiving the (small) arguments whole.
    """
    values = [a.data if isinstance(a, xr.DataArray) else a for a in args]
    if not lazy:
        from engine.limits import spread

        step, mapper = spread(ids.size, 0.0)  # on a command's cluster (--scheduler): the blocks are its tasks
        if mapper is not None and step is not None:
            step = min(block, step)
            with stage("replicates", total=ids.size) as advance:
                parts = mapper(partial(_block_task, fn, kwargs), [np.asarray(v) for v in values],
                               [ids[i : i + step] for i in range(0, ids.size, step)])
                advance(ids.size)
            return np.concatenate(parts, axis=0) if parts else np.empty((0, S))
        parts = []
        with stage("replicates", total=ids.size) as advance:
            for i in range(0, ids.size, block):
                parts.append(fn(ids[i : i + block], *[np.asarray(v) for v in values], **kwargs))
                advance(min(block, ids.size - i))
        return np.concatenate(parts, axis=0) if parts else np.empty((0, S))
    pool = iter("abcdefghijklmnopqstuvwxy")
    pairs: list[Any] = [da.from_array(ids, chunks=block), "r"]
    for v in values:
        arr = v.rechunk(-1) if isinstance(v, da.Array) else da.from_array(np.asarray(v), chunks=-1)
        pairs += [arr, "".join(next(pool) for _ in range(arr.ndim))]
    return da.blockwise(fn, "rz", *pairs, new_axes={"z": S}, concatenate=True, dtype=np.float64, meta=_meta(), **kwargs)


def plan_for(scores: xr.DataArray, over: str, kw: Mapping[str, Any]) -> Plan:
    """The prepared request of a bootstrap over ``over`` (options ``kw`` as :func:`bootstrap`), validated for that axis."""
    plan = prepare(scores, **kw)
    if over == "instances" and scores.sizes[INSTANCE] < 2:
        raise VotebenchError("an instance bootstrap needs instance-level scores; these have one instance per task")
    opts_per_task = [k for k, v in plan.options.items() if k in PER_TASK_OPTIONS and isinstance(v, tuple)]
    if over == "tasks" and opts_per_task and plan.across.resample != "weights":
        raise VotebenchError(
            f"per-task option(s) {', '.join(opts_per_task)} cannot follow resampled tasks for rule {plan.across.name!r}"
        )
    return plan


@dataclass
class Request:
    """One bootstrap request as the evaluation strategies see it (see :data:`STRATEGIES`)."""

    plan: Plan
    over: str
    ids: np.ndarray
    seed: int
    block: int | None

    def __post_init__(self) -> None:
        self.lazy = is_dask(self.plan.x)
        self.S, self.T, self.K = len(self.plan.systems), len(self.plan.tasks), self.plan.x.sizes[INSTANCE]
        self.fin = self.plan.finish()
        name = "mean" if self.plan.level == "task" else self.plan.within.within
        self.stat = get_within(name) if name is not None else None
        self.judged, self.miss = self.plan.judged.transpose(TASK), self.plan.miss.transpose(TASK, SYSTEM)

    def blocks(self, cells: int) -> int:
        """Replicates per block for ``cells`` float64 values per replicate."""
        return _block_size(self.ids.size, cells, self.block)

    def map(self, fn: Any, cells: int, *args: Any, **kwargs: Any) -> Any:
        """``fn(ids_block, *args, **kwargs)`` over blocks of replicates (numpy, or dask when the data is)."""
        return _map_blocks(fn, self.ids, self.blocks(cells), self.lazy, self.S, *args, seed=self.seed, **kwargs)

    def task_inputs(self) -> tuple[xr.DataArray, Any]:
        """Task-level matrix (or per-task sums and counts at level one) of a decomposable statistic."""
        plan = self.plan
        if not plan.pooled:
            return within_step(plan.x, plan.within, plan.level, plan.options).transpose(TASK, SYSTEM), None
        assert self.stat is not None  # level one pools a decomposable statistic
        values = xr.apply_ufunc(self.stat.judge, plan.x, input_core_dims=[[SYSTEM]], output_core_dims=[[SYSTEM]],
                                dask="parallelized", output_dtypes=[np.float64])
        sums = exact_instance_sums(values) if self.stat.grid is None else values.sum(INSTANCE, skipna=True)
        return sums.transpose(TASK, SYSTEM), values.notnull().sum(INSTANCE).transpose(TASK, SYSTEM)

    def pair_sums(self, kinds: Sequence[str]) -> Any:
        """Full-data pairwise sums over tasks of the task-level matrix, ``(len(kinds), S, S)``."""
        X, _ = self.task_inputs()
        pk: dict[str, Any] = dict(kinds=tuple(kinds), weights=self.plan.weights)
        if self.lazy:
            return X.data.rechunk(-1).map_blocks(_full_pair_sums, new_axis=0, chunks=((len(kinds),), (self.S,), (self.S,)),
                                                 dtype=np.float64, meta=np.empty((0, 0, 0)), **pk)
        return _full_pair_sums(np.asarray(X.values), **pk)

    @property
    def candidate_pairs(self) -> bool:
        """A candidate resample of a task-level matrix that does not depend on who competes (separable
        within statistic), with every task of positive weight: pairwise sums over tasks apply."""
        w = self.plan.weights
        return (self.over == "systems" and self.stat is not None and self.stat.separable and not self.plan.pooled
                and self.plan.groups is None and (w is None or bool((w > 0).all())))


@dataclass(frozen=True)
class Strategy:
    """One way of evaluating bootstrap replicates: used for the first request it ``applies`` to.

    ``run(request) -> (replicate scores (B, S), method)``; ``method`` is reported in the result's attrs.
    """

    name: str
    applies: Callable[[Request], bool]
    run: Callable[[Request], tuple[Any, str]]


def _position_draws(r: Request) -> bool:
    """Kernels drawing random numbers per batch position (random_judge) within tasks over instances."""
    p = r.plan
    return p.within.within is None and "loop" in (p.within.resample, p.across.resample) and p.level == "two"


def _run_tasks(r: Request) -> tuple[Any, str]:
    X, cnts = r.task_inputs()
    if cnts is None:
        method = {"weights": "task weights", "index": "batched kernel", "loop": "per-replicate kernel"}[r.plan.across.resample]
        return r.map(_tasks_block, r.T * r.S, X, r.judged, r.miss, fin=r.fin), method
    return r.map(lambda i, Xs, c, j, m, **kw: _tasks_block(i, Xs, j, m, pooled=(r.stat, c), **kw), r.T * r.S,
                 X, cnts, r.judged, r.miss, fin=r.fin), "batched pooling"


def _run_linear_candidates(r: Request) -> tuple[Any, str]:
    return r.map(_linear_candidates_block, r.S * 4, r.pair_sums(("wins", "pairs")), rule=r.plan.across), \
        "pairwise matrix x candidate counts"


def _run_pair_gather(r: Request) -> tuple[Any, str]:
    rule = r.plan.across
    return r.map(_pair_gather_block, r.S * r.S * 8, r.pair_sums(rule.sums), rule=rule), "pairwise matrix gather"


def _run_systems(r: Request) -> tuple[Any, str]:
    X, cnts = r.task_inputs()
    if cnts is None and r.plan.across.separable and r.plan.groups is None:
        return r.map(_gather_block, r.T * r.S, X, r.judged, r.miss, fin=r.fin), "full-data scores gathered"
    if cnts is None:
        return r.map(_systems_block, r.T * r.S, X, r.judged, r.miss, fin=r.fin), "batched kernel"
    return r.map(lambda i, Xs, c, j, m, **kw: _systems_block(i, Xs, j, m, pooled=(r.stat, c), **kw), r.T * r.S,
                 X, cnts, r.judged, r.miss, fin=r.fin), "batched pooling"


def _run_within_pairs(r: Request) -> tuple[Any, str]:
    M, present = _pair_sums(r.plan.x)
    return r.map(_borda_pairs_block, r.T * r.S, M, present, r.judged, r.miss, fin=r.fin, pooled=r.plan.pooled,
                 stat=r.stat), "pairwise matrix x candidate counts"


def _run_instances(r: Request) -> tuple[Any, str]:
    return _instance_scores(r.plan, r.stat, r.ids, r.seed, r.block, r.fin), "instance counts x judge values"


def _run_instance_batch(r: Request) -> tuple[Any, str]:
    X = r.plan.x.transpose(TASK, INSTANCE, SYSTEM)
    return r.map(_instance_batch_block, 2 * r.T * r.K * r.S, X, r.judged, r.miss, fin=r.fin, options=r.plan.options,
                 pooled=r.plan.pooled), "resampled instances in one batched kernel call"


def _run_fallback(r: Request) -> tuple[Any, str]:
    plan = r.plan
    b = r.block if r.block is not None else max(1, min(8, _block_size(r.ids.size, r.T * r.S * r.K, None)))
    template = plan.x.transpose(SYSTEM, TASK, INSTANCE)
    coords = {k: (v.dims, np.asarray(v.values)) for k, v in template.coords.items()
              if k not in template.dims and isinstance(v.data, np.ndarray)}

    def fallback(ids_b: np.ndarray, values: np.ndarray, j: np.ndarray, m: np.ndarray) -> np.ndarray:
        x = xr.DataArray(np.asarray(values), dims=template.dims,
                         coords={**{d: template[d].values for d in template.dims}, **coords}, name=template.name)
        local = Plan(**{**plan.__dict__, "x": x, "judged": xr.DataArray(j, dims=TASK),
                        "miss": xr.DataArray(m, dims=(TASK, SYSTEM))})
        return _reference_block(ids_b, local, r.over, r.seed)

    return _map_blocks(fallback, r.ids, b, r.lazy, r.S, template, r.judged, r.miss), "per-replicate evaluation"


def _whole_weights(r: Request) -> bool:
    # whole-number weights keep the pairwise sums and their products exact (ties between equal systems stay ties)
    w = r.plan.weights
    return w is None or bool(np.array_equal(w, np.round(w)))


#: The evaluation strategies of :func:`bootstrap`, tried in order; the first that applies runs.
#: A new rule declares attributes (``resample``, ``from_candidates``, ``from_sums``, ``separable``; a
#: within statistic's ``separable`` / ``pairwise``) and is picked up here; a new fast path is one entry.
STRATEGIES: list[Strategy] = [
    Strategy("tasks: whole-data task matrix, resampled as weights or batches",
             lambda r: r.over == "tasks" and (not r.plan.pooled or r.stat is not None) and not _position_draws(r),
             _run_tasks),
    Strategy("systems: pairwise sums x candidate counts",
             lambda r: r.candidate_pairs and _whole_weights(r) and r.plan.across.from_candidates is not None,
             _run_linear_candidates),
    Strategy("systems: drawn rows and columns of the pairwise sums",
             lambda r: r.candidate_pairs and r.plan.across.from_sums is not None, _run_pair_gather),
    Strategy("systems: separable within statistic",
             lambda r: r.over == "systems" and r.stat is not None and r.stat.separable, _run_systems),
    Strategy("systems: pairwise within statistic x candidate counts",
             lambda r: r.over == "systems" and r.stat is not None and r.stat.pairwise and r.plan.level in ("one", "two"),
             _run_within_pairs),
    Strategy("instances: instance counts x judge values",
             lambda r: r.over == "instances" and r.stat is not None, _run_instances),
    Strategy("instances: the resampled tensors in one batched kernel call",
             lambda r: r.over == "instances" and r.stat is None and r.plan.within.resample != "loop", _run_instance_batch),
    Strategy("anything: one evaluation per replicate", lambda r: True, _run_fallback),
]


def _replicate_scores(plan: Plan, over: str, ids: np.ndarray, seed: int, block: int | None) -> tuple[Any, str]:
    """Replicate scores (replicate, system) as a dask or numpy array, and the evaluation method used."""
    req = Request(plan, over, ids, seed, block)
    strategy = next(s for s in STRATEGIES if s.applies(req))
    return strategy.run(req)


def _pair_sums(x: xr.DataArray) -> tuple[Any, Any]:
    """Per-task ``wins + ties / 2`` over instances (T, S, S) with half-presence on the diagonal, and presence counts (T, S)."""

    def pairs(block: np.ndarray) -> np.ndarray:  # (Tc, Kc, S) -> (Tc, 1, S, S)
        block = np.asarray(block, dtype=np.float64)
        wins, ties = pairwise_counts(block)
        out = wins + 0.5 * ties
        n = (~np.isnan(block)).sum(axis=-2).astype(np.float64)
        idx = np.arange(block.shape[-1])
        out[..., idx, idx] = 0.5 * n
        return out[:, None]

    xl = x.transpose(TASK, INSTANCE, SYSTEM)
    present = xl.notnull().sum(INSTANCE).transpose(TASK, SYSTEM)
    if not is_dask(xl):
        return pairs(np.asarray(xl.values))[:, 0], np.asarray(present.values, dtype=np.float64)
    arr = xl.data
    part = da.blockwise(pairs, "tkso", arr, "tks", new_axes={"o": arr.shape[-1]}, adjust_chunks={"k": 1},
                        dtype=np.float64, meta=np.empty((0, 0, 0, 0)))
    return part.sum(axis=1), present.data.astype(np.float64)


def _instance_scores(plan: Plan, stat: Any, ids: np.ndarray, seed: int, block: int | None, fin: Finish) -> Any:
    xl = plan.x.transpose(TASK, INSTANCE, SYSTEM)
    T, K, S = xl.shape
    present = xl.notnull().any(SYSTEM)  # (T, K)
    judged, miss = plan.judged.transpose(TASK), plan.miss.transpose(TASK, SYSTEM)
    finish = dict(stat=stat, fin=fin, pooled=plan.pooled)
    values = xr.apply_ufunc(stat.judge, xl, input_core_dims=[[SYSTEM]], output_core_dims=[[SYSTEM]],
                            dask="parallelized", output_dtypes=[np.float64])
    if not is_dask(xl):
        J = np.asarray(values.values, dtype=np.float64)
        ok = ~np.isnan(J)
        J0 = np.ascontiguousarray(np.where(ok, J, 0.0))  # BLAS needs C-contiguous stacks
        okf = np.ascontiguousarray(ok, dtype=np.float64)
        pres = np.asarray(present.values)
        mx = np.abs(J0).max(initial=0.0)
        b = _block_size(ids.size, K + T * S * (1 if stat.grid is not None else DIGITS), block)
        parts = []
        for i in range(0, ids.size, b):
            p = _instance_partial(ids[i : i + b], np.arange(T), np.arange(K), J0, okf, pres, mx, seed=seed,
                                  grid=stat.grid)[:, :, 0]
            parts.append(_instance_finish(p, np.asarray(judged.values), np.asarray(miss.values), mx, **finish))
        return np.concatenate(parts, axis=0) if parts else np.empty((0, S))
    J = values.data
    if K * S * 8 <= _TASK_BYTES:
        # whole tasks per chunk: each (replicate, task) draw is made once, not once per instance chunk
        J = J.rechunk({0: max(1, min(max(J.chunks[0]), _TASK_BYTES // (K * S * 8))), 1: -1})
    J0 = da.where(da.isnan(J), 0.0, J)
    okf = (~da.isnan(J)).astype(np.float64)
    mx = abs(J0).max()  # the anchor of the exact digit sums: one value for every chunk
    nv = 2 if stat.grid is not None else DIGITS + 1
    tchunks, kchunks = J.chunks[0], J.chunks[1]
    b = _block_size(ids.size, max(kchunks) + max(tchunks) * S * (nv - 1), block)
    rid = da.from_array(ids, chunks=b)
    tpos = da.arange(T, chunks=(tchunks,))
    kpos = da.arange(K, chunks=(kchunks,))
    pres = present.data.rechunk((tchunks, -1))
    part = da.blockwise(
        _instance_partial, "rtksv", rid, "r", tpos, "t", kpos, "k", J0, "tks", okf, "tks", pres, "tj", mx, "",
        new_axes={"v": nv}, adjust_chunks={"k": 1}, concatenate=True, dtype=np.float64,
        meta=np.empty((0, 0, 0, 0, 0)), seed=seed, grid=stat.grid,
    )
    total = part.sum(axis=2).rechunk({0: b, 1: -1, 2: -1, 3: -1})  # (R, T, S, V): sums of integers, exact
    jd = judged.data.rechunk(-1) if isinstance(judged.data, da.Array) else da.from_array(np.asarray(judged.values))
    md = miss.data.rechunk(-1) if isinstance(miss.data, da.Array) else da.from_array(np.asarray(miss.values))
    return da.blockwise(
        lambda tot, j, m, x: _instance_finish(tot, j, m, x, **finish),
        "rs", total, "rtsv", jd, "t", md, "ts", mx, "", concatenate=True, dtype=np.float64, meta=_meta(),
    )


# ------------------------------------------------------------------------------------ public
def bootstrap(
    scores: xr.DataArray,
    *,
    rule: str = "borda",
    over: str = "tasks",
    replicates: int | Sequence[int] | np.ndarray = 200,
    seed: int = 0,
    level: str | None = None,
    missing: str = "error",
    weights: Mapping[str, float] | Sequence[float] | str | None = None,
    within: str | None = None,
    across: str | None = None,
    groups: bool | Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
    block: int | None = None,
) -> xr.Dataset:
    """Bootstrap a ranking: the full-data ranking plus one ranking per replicate.

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor (numpy or dask backed).
    rule, level, missing, weights, within, across, groups, options
        As :func:`engine.aggregate`.  The missing-score policy is applied to
        the full data before resampling.
    over : {"tasks", "systems", "instances"}
        Axis resampled with replacement: judges (tasks, with their instances),
        candidates (systems; a system drawn several times ties with its copies,
        one never drawn gets ``NaN``) or the instances within every task.
    replicates : int or sequence of int
        Number of replicates (indices ``0 .. B-1``) or explicit replicate indices.
    seed : int
        Non-negative seed; replicate ``b`` depends only on ``seed``, ``over`` and ``b``.
    block : int, optional
        Replicates per block (dask task); default from the data size.  Results
        do not depend on it.

    Returns
    -------
    xarray.Dataset
        ``score``, ``rank`` (system): the full-data ranking; ``replicate_score``,
        ``replicate_rank`` (replicate, system): competition ranks within each
        replicate (``NaN`` for a system not drawn).  Lazy (dask) when ``scores``
        is; attrs record rule, over, replicates, seed, level, missing and the
        evaluation method.

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9, 3], [2, 8, 4], [3, 7, 5]]), systems=["a", "b", "c"])
    >>> ds = engine.bootstrap(s, rule="borda", over="tasks", replicates=50, seed=1)
    >>> ds["replicate_rank"].shape
    (50, 3)
    """
    _check_over(over)
    kw = dict(rule=rule, level=level, missing=missing, weights=weights, within=within, across=across, groups=groups,
              options=options)
    plan = plan_for(scores, over, kw)
    try:
        ids = replicate_ids(replicates)
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None
    if seed is None or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise VotebenchError(f"seed must be a non-negative integer, got {seed!r}")
    point = ranking(aggregate_plan(plan))  # the full-data ranking, from the same prepared request
    R, method = _replicate_scores(plan, over, ids, int(seed), block)
    # the tie rule on every replicate (a no-op on rows whose evaluation already applied it)
    R = da.map_blocks(plan.across.snap, R, dtype=np.float64) if isinstance(R, da.Array) else plan.across.snap(R)
    rep = plan.restored(xr.DataArray(R, dims=(REPLICATE, SYSTEM), coords={REPLICATE: ids, SYSTEM: plan.x[SYSTEM].values},
                                     name="replicate_score"))
    ranks = xr.apply_ufunc(min_rank, rep, input_core_dims=[[SYSTEM]], output_core_dims=[[SYSTEM]], dask="parallelized",
                           output_dtypes=[np.float64])
    ds = xr.Dataset({"score": point["score"], "rank": point["rank"], "replicate_score": rep, "replicate_rank": ranks})
    ds.attrs = {"rule": plan.rule_label, "over": over, "replicates": int(ids.size), "seed": int(seed),
                "level": plan.level, "missing": plan.missing, "method": method}
    return ds


def stability(ds: xr.Dataset, *, method: Literal["spearman", "kendall"] = "spearman") -> float:
    """Pavao's stability of a bootstrap: mean rank correlation over pairs of replicates (common systems only)."""
    R = np.asarray(ds["replicate_score"].values, dtype=np.float64)
    return float(metrics.concordance(R, method=method))


def summarize(ds: xr.Dataset, *, level: float = 0.95) -> xr.Dataset:
    """Rank intervals, pairwise superiority and stability of a computed or lazy bootstrap.

    Parameters
    ----------
    ds : xarray.Dataset
        The result of :func:`bootstrap` (replicate scores and ranks, the full-data ranking).
    level : float
        The coverage of the intervals and of the "surely above" relation, in (0, 1); default 0.95.

    Returns
    -------
    xarray.Dataset
        ``score``, ``rank`` (full data), ``rank_low``/``rank_high`` (system): the
        ``(1 - level) / 2`` and ``(1 + level) / 2`` percentiles of the replicate
        ranks; ``prob_above`` (system, opponent): share of replicates (where both
        appear) ranking the system strictly above the opponent; ``tied_with_leader``
        (system): the leader(s) and every system the leader does not beat in at
        least ``level`` of the replicates; scalars ``kendall_w`` (concordance of
        the replicate rankings over the systems present in all of them),
        ``mean_spearman`` and ``mean_kendall`` (Pavao's stability).

    Examples
    --------
    >>> import engine, numpy as np
    >>> s = engine.scores_from_array(np.array([[1.0, 9.0], [2.0, 8.0], [3.0, 8.5]]), systems=["a", "b", "c"])
    >>> sm = engine.summarize(engine.bootstrap(s, rule="borda", over="tasks", replicates=20, seed=0))
    >>> sm["rank_low"].values.tolist(), sm["rank_high"].values.tolist()
    ([1.0, 2.0, 1.0], [3.0, 3.0, 2.0])
    """
    check_level(level)
    ds = ds.compute()
    R = np.asarray(ds["replicate_score"].values, dtype=np.float64)
    ranks = np.asarray(ds["replicate_rank"].values, dtype=np.float64)
    low, high = metrics.rank_intervals(ranks, level=level)
    prob = metrics.prob_above(R)
    point = np.asarray(ds["score"].values, dtype=np.float64)
    tied = metrics.tied_with_leader(point, prob, level=level)
    everywhere = ~np.isnan(R).any(axis=0)
    w = metrics.kendall_w(R[:, everywhere]) if everywhere.sum() >= 2 and R.shape[0] >= 2 else np.nan
    systems = ds[SYSTEM].values
    out = xr.Dataset(
        {
            "score": ds["score"],
            "rank": ds["rank"],
            "rank_low": (SYSTEM, low),
            "rank_high": (SYSTEM, high),
            "prob_above": ((SYSTEM, OPPONENT), prob),
            "tied_with_leader": (SYSTEM, tied),
            "kendall_w": float(w),
            "mean_spearman": float(metrics.concordance(R, method="spearman")) if R.shape[0] >= 2 else np.nan,
            "mean_kendall": float(metrics.concordance(R, method="kendall")) if R.shape[0] >= 2 else np.nan,
        },
        coords={SYSTEM: systems, OPPONENT: systems},
    )
    out.attrs = {**ds.attrs, "interval_level": level}
    return out


# ------------------------------------------------------------------------------------ Pavao's criteria
def _trial_block(X: np.ndarray, ids: np.ndarray, *, rule: Any, options: Mapping[str, Any], seed: int,
                 method: Literal["spearman", "kendall"]) -> np.ndarray:
    """Winner's normalised average rank, Condorcet-first flag and generalization of a block of trials ``(B, 3)``."""
    T, S = X.shape
    tidx = resample_indices(T, seed=seed, replicates=ids, stream="tasks")
    sidx = resample_indices(S, seed=seed, replicates=ids, stream="systems")
    Xb = X[tidx[:, :, None], sidx[:, None, :]]  # (B, T, S): judges and candidates drawn with replacement
    if rule.resample == "loop":
        score = np.stack([call_kernel(rule, Xb[i], None, options) for i in range(Xb.shape[0])])
    else:
        score = call_kernel(rule, Xb, None, options)
    war = metrics.winner_average_rank(Xb, score)
    cw = metrics.condorcet_winner_index(Xb)
    has = cw >= 0
    top = np.nanmax(score, axis=-1)
    first = np.where(has, np.take_along_axis(score, np.maximum(cw, 0)[:, None], axis=-1)[:, 0] == top, False)
    oob = counts_from_indices(tidx, T) == 0  # (B, T) judges left out of the trial
    X_out = X[:, sidx].transpose(1, 0, 2)  # (B, T, S): every judge on the trial's candidates; mask keeps out-of-bag
    gen = metrics.generalization(score, X_out, method=method, mask_out=oob)
    return np.stack([war, np.where(has, first.astype(float), np.nan), np.asarray(gen, dtype=float)], axis=-1)


def pavao_stability(
    scores: xr.DataArray,
    *,
    rule: str,
    trials: int = 10,
    replicates: int = 100,
    seed: int = 0,
    method: Literal["spearman", "kendall"] = "spearman",
    axes: Sequence[str] = ("tasks", "systems"),
    **aggregate_options: Any,
) -> xr.Dataset:
    """Pavao et al. (2021) judge and candidate stability of a rule, over repeated trials.

    A trial is ``replicates`` bootstraps of the judge axis (``over="tasks"``) and
    as many of the candidate axis (``over="systems"``); its stability is the
    mean rank correlation over the pairs of its replicate rankings (candidate
    axis: over the systems both replicates drew), :func:`stability`.  Trial
    ``k`` uses replicates ``k * replicates ... (k + 1) * replicates - 1`` of
    ``seed``, so the trials are independent and every axis is one
    :func:`bootstrap` call of ``trials * replicates`` replicates whose
    concordances are computed as one batch.

    Parameters
    ----------
    scores : xarray.DataArray
        Score tensor.
    rule : str
        Registered rule.
    trials, replicates : int
        Number of trials and bootstraps per trial and axis (Pavao: 10 x 100).
    seed : int
        Seed of both axes.
    method : {"spearman", "kendall"}
        Rank correlation.
    axes : sequence of {"tasks", "systems"}
        Which stabilities to compute (default both).
    **aggregate_options
        ``level``, ``missing``, ``weights``, ``options``, ... as for :func:`bootstrap`.

    Returns
    -------
    xarray.Dataset
        ``judge_stability`` and ``candidate_stability`` (trial) and their means
        over trials (``*_mean``).
    """
    if not (isinstance(trials, (int, np.integer)) and isinstance(replicates, (int, np.integer))) or trials < 1 or replicates < 2:
        raise VotebenchError(f"stability needs whole numbers trials >= 1 and replicates >= 2, got {trials!r} and {replicates!r}")
    if method not in ("spearman", "kendall"):
        raise VotebenchError(f"unknown rank correlation {method!r}; choose spearman or kendall")
    names = {"tasks": "judge_stability", "systems": "candidate_stability"}
    if not axes or any(a not in names for a in axes):
        raise VotebenchError(f"stability axes must be among tasks, systems; got {list(axes)}")
    out = {}
    for over, name in ((a, names[a]) for a in axes):
        ds = bootstrap(scores, rule=rule, over=over, replicates=trials * replicates, seed=seed, **aggregate_options)
        R = np.asarray(ds["replicate_score"].values, dtype=np.float64)
        out[name] = ("trial", np.atleast_1d(metrics.concordance(R.reshape(trials, replicates, -1), method=method)))
    res = xr.Dataset(out, coords={"trial": np.arange(trials)},
                     attrs={"rule": rule, "replicates": replicates, "seed": seed, "method": method})
    for name in out:
        res[f"{name}_mean"] = res[name].mean("trial")
    return res


def pavao_criteria(
    scores: xr.DataArray,
    *,
    rules: Sequence[str],
    trials: int = 10_000,
    seed: int = 0,
    missing: str = "error",
    method: Literal["spearman", "kendall"] = "spearman",
    options: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Pavao et al. (2021) empirical criteria estimated by bootstrap trials, per rule.

    Every trial draws judges (tasks) and candidates (systems) with replacement
    (streams ``tasks`` and ``systems`` of :mod:`engine.kernels.resample`, trial = replicate)
    and ranks the candidates with the rule on the resampled task-level matrix.

    Returns
    -------
    xarray.Dataset
        Per ``rule``: ``winner_average_rank`` (``1 - (r - 1) / (m - 1)`` with ``r``
        the winner's average rank over the trial's judges), ``condorcet_rate``
        (share of trials with a Condorcet winner in which it is ranked first) and
        ``generalization`` (mean rank correlation between the trial's ranking and
        each out-of-bag judge), each the mean over trials, plus the per-trial
        values (rule, replicate).
    """
    from engine.labelled.core import task_scores

    if trials < 1:
        raise VotebenchError(f"trials must be >= 1, got {trials}")
    X = np.asarray(task_scores(scores, missing=missing).values, dtype=np.float64)  # (T, S)
    X = X[:, ~np.isnan(X).all(axis=0)]
    opts = dict(options or {})
    ids = np.arange(trials)
    b = _block_size(trials, X.size * 4, None)
    per = []
    for name in rules:
        rule = get_rule(name)
        per.append(np.concatenate([_trial_block(X, ids[i : i + b], rule=rule, options=opts, seed=seed, method=method)
                                   for i in range(0, trials, b)]))
    V = np.stack(per)  # (rule, trial, 3)
    with np.errstate(invalid="ignore"):
        means = np.nanmean(V, axis=1)
    coords = {RULE: np.array(list(rules), dtype=object), REPLICATE: ids}
    ds = xr.Dataset(
        {
            "winner_average_rank": (RULE, means[:, 0]),
            "condorcet_rate": (RULE, means[:, 1]),
            "generalization": (RULE, means[:, 2]),
            "trial_values": ((RULE, REPLICATE, "criterion"), V),
        },
        coords={**coords, "criterion": ["winner_average_rank", "condorcet_first", "generalization"]},
        attrs={"trials": trials, "seed": seed, "method": method},
    )
    return ds

