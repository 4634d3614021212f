"""Paired significance tests between systems on instance-level scores (pure numpy).

Two systems scored on the same instances are compared through their paired differences
``d_tk = Y_itk - Y_jtk`` (task ``t``, instance ``k``; an instance counts for a pair when both systems have a
score on it).  For every pair of systems (or every system against a chosen baseline) and for every task and
overall, this module gives

* :func:`paired_bootstrap` -- the mean difference with a percentile interval and a two-sided p-value from
  bootstrap replicates of the instances (the engine's instance bootstrap: replicate ``b`` of task ``t`` is
  :func:`engine.kernels.resample.instance_counts`, so all pairs see the same resampled instances);
* :func:`paired_permutation` -- the paired permutation (sign-flip) test of the mean difference (or of
  Wilcoxon's signed-rank statistic): exact enumeration when the number of sign patterns is at most
  ``resamples``, Monte Carlo otherwise;
* :func:`mcnemar_exact` -- McNemar's exact test for 0/1 scores (a binomial test on the discordant pairs);

and the tools to read many tests at once: Holm's and Benjamini-Hochberg's corrections (:func:`adjust`) and
the groups of systems that are not significantly different, as a compact letter display
(:func:`letter_display`, Piepho's insert-absorb algorithm), put together by :func:`compare_systems`.

Conventions
-----------
* ``Y`` has shape ``(S, T, K)`` (system, task, instance), the engine's tensor order; scores are oriented
  (higher is better); ``NaN`` = missing (or padding of a ragged task).
* "Overall" is the mean over tasks of the per-task mean differences (every task weighs the same, as the
  engine's task level), over the tasks where the pair shares an instance; the resampling is stratified by
  task (instances are resampled, or their signs flipped, within their task).
* A pair ``(i, j)`` tests ``mean(Y_i - Y_j) = 0``; positive differences favour ``i``.

References
----------
* Efron, Tibshirani. An Introduction to the Bootstrap (1993), ch. 13 and 16; Koehn, Statistical significance
  tests for machine translation evaluation, EMNLP 2004 (paired bootstrap).
* Fisher (1935) / Pitman (1937): the paired permutation test; Dror et al., The hitchhiker's guide to testing
  statistical significance in NLP, ACL 2018.
* McNemar, Psychometrika 12 (1947); the exact (binomial) version, e.g. Fagerland, Lydersen, Laake, BMC Med.
  Res. Methodol. 13 (2013).
* Holm, Scand. J. Statist. 6 (1979); Benjamini, Hochberg, JRSS B 57 (1995).
* Piepho, An algorithm for a letter-based representation of all-pairwise comparisons, J. Comput. Graph.
  Stat. 13 (2004).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from engine.kernels.checks import check_alpha, check_level
from engine.kernels.significance import holm

__all__ = [
    "PairedTest",
    "Comparison",
    "CORRECTIONS",
    "TESTS",
    "system_pairs",
    "paired_differences",
    "paired_bootstrap",
    "paired_permutation",
    "sign_patterns",
    "sign_bits",
    "paired_cost",
    "mcnemar_exact",
    "benjamini_hochberg",
    "holm",
    "adjust",
    "letter_display",
    "compare_systems",
    "PAIR_BLOCK_CELLS",
]

#: tests :func:`compare_systems` runs
TESTS = ("permutation", "bootstrap", "mcnemar")
#: multiple-comparison corrections of :func:`adjust`
CORRECTIONS = ("holm", "bh", "none")
_BLOCK = 1 << 24  # floats of one work array


@dataclass(frozen=True)
class PairedTest:
    """Paired tests of ``P`` pairs of systems on ``T`` tasks.

    Attributes
    ----------
    test : str
        ``"bootstrap"``, ``"permutation"`` or ``"mcnemar"``.
    pairs : ndarray of int, shape (P, 2)
        System indices ``(i, j)``; differences are ``i - j``.
    diff : ndarray, shape (P, T)
        Mean difference per task over the instances both systems scored (``NaN``: none).
    overall : ndarray, shape (P,)
        Mean over tasks of ``diff`` (the tasks the pair shares).
    n : ndarray of int, shape (P, T)
        Instances both systems scored, per task.
    p_task : ndarray, shape (P, T)
        Two-sided p-value of every (pair, task) test (``NaN`` where the pair shares no instance).
    p_overall : ndarray, shape (P,)
        Two-sided p-value of the overall test.
    low_task, high_task : ndarray (P, T) or None
        Bootstrap percentile interval of ``diff`` (bootstrap only).
    low, high : ndarray (P,) or None
        Bootstrap percentile interval of ``overall`` (bootstrap only).
    resamples : int
        Bootstrap replicates or Monte Carlo sign patterns (0: McNemar).
    seed : int or None
    exact_task : ndarray of bool (P, T)
        Permutation: the task's p-value enumerates every sign pattern (else Monte Carlo).  McNemar: True.
    exact_overall : ndarray of bool (P,)
    method : str
        One line saying what was computed (for reports).
    """

    test: str
    pairs: np.ndarray
    diff: np.ndarray
    overall: np.ndarray
    n: np.ndarray
    p_task: np.ndarray
    p_overall: np.ndarray
    low_task: np.ndarray | None
    high_task: np.ndarray | None
    low: np.ndarray | None
    high: np.ndarray | None
    resamples: int
    seed: int | None
    exact_task: np.ndarray
    exact_overall: np.ndarray
    method: str


# --------------------------------------------------------------------------------------------- pairs and differences
def system_pairs(n_systems: int, baseline: int | None = None) -> np.ndarray:
    """Every pair ``(i, j)``, ``i < j`` (``S (S - 1) / 2`` rows), or every system against ``baseline`` (``(i, baseline)``).

    Examples
    --------
    >>> system_pairs(3).tolist(), system_pairs(3, baseline=1).tolist()
    ([[0, 1], [0, 2], [1, 2]], [[0, 1], [2, 1]])
    """
    S = int(n_systems)
    if S < 2:
        raise ValueError(f"paired tests need at least two systems, got {S}")
    if baseline is None:
        i, j = np.triu_indices(S, 1)
        return np.stack([i, j], axis=1).astype(np.int64)
    b = int(baseline)
    if not 0 <= b < S:
        raise ValueError(f"baseline index {baseline} is not a system index (0..{S - 1})")
    others = np.array([i for i in range(S) if i != b], dtype=np.int64)
    return np.stack([others, np.full(others.size, b)], axis=1)


def _as_scores(Y) -> np.ndarray:
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 3:
        raise ValueError(f"scores must have shape (system, task, instance), got {Y.shape}")
    if np.isinf(Y).any():
        raise ValueError("scores contain infinite values")
    return Y


def _pairs(Y: np.ndarray, pairs, baseline) -> np.ndarray:
    if pairs is not None and baseline is not None:
        raise ValueError("give pairs or a baseline, not both")
    if pairs is None:
        return system_pairs(Y.shape[0], baseline)
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if (p < 0).any() or (p >= Y.shape[0]).any() or (p[:, 0] == p[:, 1]).any():
        raise ValueError("pairs must hold two different system indices")
    return p


def paired_differences(Y, pairs) -> np.ndarray:
    """``d[p, t, k] = Y[i, t, k] - Y[j, t, k]`` for every pair ``(i, j)`` (``NaN`` unless both are scored)."""
    Y = _as_scores(Y)
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return Y[p[:, 0]] - Y[p[:, 1]]


def _positive(value: Any, name: str) -> int:
    """``value`` as an int of at least 1, else a ValueError naming ``name``."""
    if int(value) < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def _paired_setup(Y: Any, pairs: Any, baseline: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                       tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """Scores, pairs, paired differences (P, T, K), their task means (diff, n, overall) and the judges that exist (T, K)."""
    Y = _as_scores(Y)
    pr = _pairs(Y, pairs, baseline)
    d = paired_differences(Y, pr)
    return Y, pr, d, _task_means(d), ~np.isnan(Y).all(axis=0)


def _task_means(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (pair, task): mean difference, number of shared instances; overall mean over the shared tasks."""
    ok = ~np.isnan(d)
    n = ok.sum(axis=-1)
    s = np.where(ok, d, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    return diff, n, _mean_over_tasks(diff)


def _mean_over_tasks(diff: np.ndarray) -> np.ndarray:
    ok = ~np.isnan(diff)
    cnt = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(ok, diff, 0.0).sum(axis=-1) / np.maximum(cnt, 1), np.nan)


# --------------------------------------------------------------------------------------------- bootstrap
def paired_bootstrap(Y, *, pairs=None, baseline: int | None = None, replicates: int = 1000, seed: int = 0,
                     level: float = 0.95) -> PairedTest:
    """Paired bootstrap of the mean difference, per task and overall.

    Replicate ``b`` resamples the instances of every task with replacement (as many as the task has),
    from ``SeedSequence(seed, spawn_key=(instances, b, t))`` -- the draws of the engine's instance bootstrap
    (:func:`engine.kernels.resample.instance_counts`), shared by all pairs.  A pair's replicate mean of task ``t``
    is the mean of its differences over the drawn instances it shares (with their multiplicities), and the
    replicate's overall value the mean over tasks of these.

    Returns
    -------
    PairedTest
        ``low``/``high``: the ``50 (1 - level)`` and ``50 (1 + level)`` percentiles of the replicates.
        ``p``: the percentile-bootstrap p-value, twice the share of replicates on the far side of 0 (about the
        smallest ``1 - level`` at which the percentile interval excludes 0), counted as
        ``min(1, 2 (min(#{<= 0}, #{>= 0}) + 1) / (B + 1))`` so that it is never 0 (at least ``2 / (B + 1)``).
    """
    from engine.kernels.resample import instance_counts

    check_level(level)
    B = _positive(replicates, "replicates")
    Y, pr, d, (diff, n, overall), present = _paired_setup(Y, pairs, baseline)
    P, T, K = d.shape
    ok = ~np.isnan(d)
    # per task, the (K, 2P) columns of the differences (0 where missing) and of the shared instances: the
    # replicate's sums and counts are one matrix product of its whole-number counts (BLAS)
    W = [np.ascontiguousarray(np.concatenate([np.where(ok[:, t], d[:, t], 0.0), ok[:, t]]).T) for t in range(T)]
    rep_task = np.empty((B, P, T))
    step = max(1, (_BLOCK // 8) // max(1, P * T, T * K))  # counts of 2^21 cells a block (16 MB)
    for b0 in range(0, B, step):
        ids = np.arange(b0, min(B, b0 + step))
        C = instance_counts(present, seed=seed, replicates=ids)  # (b, T, K)
        for t in range(T):
            sums = C[:, t] @ W[t]  # (b, 2P)
            num, den = sums[:, :P], sums[:, P:]
            with np.errstate(invalid="ignore", divide="ignore"):
                rep_task[ids, :, t] = np.where(den > 0, num / np.maximum(den, 1.0), np.nan)
    rep_all = _mean_over_tasks(rep_task)
    q = [50.0 * (1.0 - level), 50.0 * (1.0 + level)]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pairs without a shared instance
        lo_t, hi_t = np.nanpercentile(rep_task, q, axis=0)
        lo, hi = np.nanpercentile(rep_all, q, axis=0)
    p_task = _boot_p(rep_task)
    p_all = _boot_p(rep_all)
    p_task = np.where(n > 0, p_task, np.nan)
    return PairedTest(test="bootstrap", pairs=pr, diff=diff, overall=overall, n=n, p_task=p_task, p_overall=p_all,
                      low_task=lo_t, high_task=hi_t, low=lo, high=hi, resamples=B, seed=int(seed),
                      exact_task=np.zeros((P, T), dtype=bool), exact_overall=np.zeros(P, dtype=bool),
                      method=f"paired bootstrap of the instances within each task, {B} replicates, seed {seed}; "
                             f"{100 * level:g}% percentile intervals")


def _boot_p(rep: np.ndarray) -> np.ndarray:
    ok = ~np.isnan(rep)
    m = ok.sum(axis=0)
    le = ((rep <= 0) & ok).sum(axis=0)
    ge = ((rep >= 0) & ok).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(m > 0, np.minimum(1.0, 2.0 * (np.minimum(le, ge) + 1.0) / (m + 1.0)), np.nan)


# --------------------------------------------------------------------------------------------- permutation
def _signed_ranks(d: np.ndarray) -> np.ndarray:
    """``sign(d) * rank(|d|)`` over the non-zero, non-missing entries of the last axis (average ranks); 0 elsewhere."""
    from scipy.stats import rankdata

    a = np.abs(d)
    use = ~np.isnan(d) & (d != 0)
    r = rankdata(np.where(use, a, np.inf), axis=-1, method="average")  # the unused entries rank last
    return np.where(use, np.sign(d) * r, 0.0)


def sign_patterns(instances: int, resamples: int) -> tuple[bool, int]:
    """The sign-flip test of ``instances`` paired differences with ``resamples`` allowed: ``(exact, patterns)``.

    The cost of the test is the number of sign patterns it evaluates: ``2^k`` to enumerate all of them
    (exact), ``R`` random ones (Monte Carlo).  The exact test is run when it costs no more, ``2^k <= R``;
    ``patterns`` is then ``2^k``, else ``R``.  The comparison is in integers (``2^k <= R`` exactly when
    ``k < R.bit_length()``): no float ``2.0**k``, which overflows from ``k = 1024``.

    Examples
    --------
    >>> sign_patterns(12, 4096), sign_patterns(13, 4096), sign_patterns(5000, 10_000)
    ((True, 4096), (False, 4096), (False, 10000))
    """
    k = int(instances)
    if k < 0:
        raise ValueError(f"instances must be >= 0, got {instances}")
    R = _positive(resamples, "resamples")
    return (True, 1 << k) if k < R.bit_length() else (False, R)


def paired_cost(instances: Sequence[int], n_pairs: int, resamples: int, *, test: str = "permutation",
                statistic: str = "mean") -> tuple[float, float]:
    """Estimated work and memory of one paired test: ``(operations, bytes)``.

    ``instances``: the instances of every task; an operation is one multiply-add or one random draw of a cell.
    Permutation: per task and overall the patterns of :func:`sign_patterns` (``2^k`` enumerated or ``R`` drawn)
    times the instances and pairs (overall Monte Carlo of the mean: ``R`` pairs x tasks, from the per-task sums);
    bootstrap: ``R`` replicates of every instance (a draw, then a multiply-add for the sum and the count of every
    pair); McNemar: one pass.  Memory: the bootstrap keeps ``R`` replicate means of every pair and task (and the
    copies its percentiles take); the other tests work in blocks.
    """
    ks = [int(k) for k in instances if int(k) > 0]
    P, R, T, total = int(n_pairs), int(resamples), len(ks), float(sum(ks))
    if test == "mcnemar" or not ks:
        return P * total, 0.0
    if test == "bootstrap":
        return float(R) * total * (2 * P + 1), 24.0 * R * P * (T + 1)
    ops, drawn = 0.0, False
    for k in ks:
        exact, m = sign_patterns(k, R)
        ops += float(m) * k * P
        drawn = drawn or not exact
    exact, m = sign_patterns(int(total), R)
    if not exact:
        ops += float(R) * P * (T if statistic == "mean" else total)
    return ops + (float(R) * total if drawn or not exact else 0.0), 0.0


@dataclass(frozen=True)
class _Flips:
    """A sign-flip statistic of ``P`` pairs, in the units of its terms (before any scaling).

    Per task the statistic of a sign pattern ``s`` is ``u_t = sum_k s_k w_task[p, t, k]`` (``w >= 0``; the observed
    value ``obs_task``, signs of the data); overall it is ``sum_t scale[p, t] u'_t`` with ``u'_t`` the same sum of
    ``w_over``.  Mean difference: ``w = |d|``, ``scale = 1 / (n_t * tasks)``; Wilcoxon: ranks, ``scale = 1``.  Sums of
    whole or half numbers (0/1 scores, ranks) are exact in any order, so ties with the observed value stay ties.
    """

    w_task: np.ndarray  # (P, T, K)
    obs_task: np.ndarray  # (P, T)
    w_over: np.ndarray  # (P, T, K)
    obs_over: np.ndarray  # (P, T)
    scale: np.ndarray  # (P, T)

    def overall(self, u_over: np.ndarray) -> np.ndarray:
        """The overall statistic from the per-task sums ``u_over`` (..., P, T), the same way for data and patterns."""
        return (u_over * self.scale).sum(axis=-1)


def _flips(d: np.ndarray, n: np.ndarray, statistic: str) -> _Flips:
    """The sign-flip statistic of the paired differences ``d`` (P, T, K) with ``n`` (P, T) shared instances."""
    P, T, K = d.shape
    if statistic == "mean":
        a_task = np.nan_to_num(d)
        a_over = a_task
        n_tasks = (n > 0).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(n > 0, 1.0 / (np.maximum(n, 1) * np.maximum(n_tasks, 1)[:, None]), 0.0)
    else:
        a_task = _signed_ranks(d)
        a_over = _signed_ranks(d.reshape(P, T * K)).reshape(P, T, K)
        scale = np.ones((P, T))
    w_task = np.abs(a_task)
    return _Flips(w_task=w_task, obs_task=a_task.sum(axis=-1), w_over=w_task if a_over is a_task else np.abs(a_over),
                  obs_over=a_over.sum(axis=-1), scale=scale)


def _threshold(obs: np.ndarray) -> np.ndarray:
    """``|t|`` lowered by ``100 eps |t|``, so that statistics equal to it up to rounding count (as scipy's
    ``permutation_test`` does)."""
    return np.abs(obs) * (1.0 - 100.0 * np.finfo(np.float64).eps)


def _pattern_blocks(k: int, width: int):
    """Every sign pattern of ``k`` entries, in blocks ``(m, k)`` of +-1 (pattern ``i`` flips the set bits of ``i``)."""
    total = 1 << k
    step = max(1, _BLOCK // max(1, k, width))
    shifts = np.arange(k, dtype=np.int64)
    for m0 in range(0, total, step):
        m = np.arange(m0, min(total, m0 + step), dtype=np.int64)
        yield 1.0 - 2.0 * ((m[:, None] >> shifts[None, :]) & 1)


def _exact_task_p(w: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """Exact ``P(|sum_k s_k w_pk| >= |obs_p|)`` over all ``2^k`` sign patterns of ``w`` (P, k), in bounded blocks."""
    P, k = w.shape
    thr = _threshold(obs)
    count = np.zeros(P, dtype=np.int64)
    for signs in _pattern_blocks(k, P):
        count += (np.abs(signs @ w.T) >= thr).sum(axis=0)
    return count / float(1 << k)


def _exact_overall_p(f: _Flips, cols: list[np.ndarray]) -> np.ndarray:
    """Exact overall p-values: every sign pattern of all tasks' instances jointly (``2^k``, ``k`` their number)."""
    P, T, _ = f.w_over.shape
    ws = [f.w_over[:, t, c] for t, c in enumerate(cols)]
    edges = np.cumsum([0] + [c.size for c in cols])
    thr = _threshold(f.overall(f.obs_over))
    count = np.zeros(P, dtype=np.int64)
    for signs in _pattern_blocks(int(edges[-1]), P * T):
        u = np.stack([signs[:, edges[t]:edges[t + 1]] @ ws[t].T for t in range(T)], axis=-1)  # (m, P, T)
        count += (np.abs(f.overall(u)) >= thr).sum(axis=0)
    return count / float(1 << int(edges[-1]))


def paired_permutation(Y, *, pairs=None, baseline: int | None = None, resamples: int = 10_000, seed: int = 0,
                       statistic: str = "mean") -> PairedTest:
    """Paired permutation (sign-flip) test of the mean difference, per task and overall.

    Under the null hypothesis the two systems are exchangeable on every instance, so each paired difference
    keeps or flips its sign with probability 1/2.  Per task the statistic is the mean difference (or, with
    ``statistic="wilcoxon"``, Wilcoxon's signed-rank sum ``sum_k sign(d_k) rank|d_k|`` over the non-zero
    differences: the exact test is then ``scipy.stats.wilcoxon(method="exact")``); overall it is the mean
    over tasks of the task means (Wilcoxon: the signed-rank sum over all shared instances pooled), with the
    signs flipped jointly.  The p-value is ``P(|T*| >= |t|)``.  Which way it is computed is a cost
    (:func:`sign_patterns`): enumerating the ``2^K`` sign patterns of the ``K`` instances (exact) when that is no
    more than ``resamples`` patterns; otherwise ``resamples`` random sign patterns,
    ``(1 + #{|T*| >= |t|}) / (1 + resamples)``.  Pattern ``r`` comes from ``SeedSequence(seed,
    spawn_key=(signs, r))`` (one pattern of every task's instances, shared by all pairs, so the p-values of a
    pair do not depend on the other pairs asked for).

    Returns
    -------
    PairedTest
        ``exact_task``/``exact_overall`` say which p-values are exact.
    """
    if statistic not in ("mean", "wilcoxon"):
        raise ValueError(f"unknown statistic {statistic!r}; choose 'mean' or 'wilcoxon'")
    R = _positive(resamples, "resamples")
    Y, pr, d, (diff, n, overall), present = _paired_setup(Y, pairs, baseline)
    P, T, K = d.shape
    cols = [np.flatnonzero(present[t]) for t in range(T)]
    f = _flips(d, n, statistic)
    p_task = np.full((P, T), np.nan)
    exact_task = np.array([bool(c.size) and sign_patterns(c.size, R)[0] for c in cols], dtype=bool)
    for t in map(int, np.flatnonzero(exact_task)):
        p_task[:, t] = _exact_task_p(f.w_task[:, t, cols[t]], f.obs_task[:, t])
    k_all = int(sum(c.size for c in cols))
    exact_all = bool(k_all) and sign_patterns(k_all, R)[0]
    p_all = _exact_overall_p(f, cols) if exact_all else np.full(P, np.nan)
    mc_tasks = [t for t in range(T) if not exact_task[t] and cols[t].size]
    if mc_tasks or not exact_all:
        count_t, count_all = _sign_flip_counts(present, f, R, seed, with_all=not exact_all)
        for t in mc_tasks:
            p_task[:, t] = (1.0 + count_t[:, t]) / (1.0 + R)
        if not exact_all:
            p_all = (1.0 + count_all) / (1.0 + R)
    p_task = np.where(n > 0, p_task, np.nan)
    p_all = np.where((n > 0).any(axis=-1), p_all, np.nan)
    what = "mean difference" if statistic == "mean" else "Wilcoxon signed-rank sum"
    return PairedTest(test="permutation", pairs=pr, diff=diff, overall=overall, n=n, p_task=p_task, p_overall=p_all,
                      low_task=None, high_task=None, low=None, high=None, resamples=R, seed=int(seed),
                      exact_task=exact_task[None, :] & (n > 0), exact_overall=np.full(P, exact_all),
                      method=f"paired permutation test (sign flips within each task) of the {what}: exact when "
                             f"2^instances <= {R}, else {R} random sign patterns (seed {seed})")


def sign_bits(seed: int, replicates: range, present: np.ndarray) -> np.ndarray:
    """Random sign patterns ``(r, T, K)`` of 0/1 (1: flip) for ``replicates`` (stream ``signs``, one generator each).

    Pattern ``r`` is the first ``T K`` bits of ``ceil(T K / 8)`` random bytes of ``SeedSequence(seed,
    spawn_key=(signs, r))``, task by task; entries outside ``present`` are 0.
    """
    from engine.kernels.resample import replicate_generator

    T, K = present.shape
    nbytes = (T * K + 7) // 8
    raw = np.stack([replicate_generator(seed, r, stream="signs").integers(0, 256, size=nbytes, dtype=np.uint8)
                    for r in replicates]) if len(replicates) else np.zeros((0, nbytes), dtype=np.uint8)
    bits = np.unpackbits(raw, axis=1, count=T * K).reshape(-1, T, K)
    bits &= present[None].astype(np.uint8)
    return bits


def _sign_flip_counts(present: np.ndarray, f: _Flips, R: int, seed: int, *,
                      with_all: bool) -> tuple[np.ndarray, np.ndarray]:
    """Random sign patterns ``r = 0 .. R-1`` (:func:`sign_bits`): how often ``|T*| >= |t|`` per (pair, task) and overall.

    A pattern's sum is ``sum_k w_k - 2 sum_(flipped k) w_k``, one matrix product of the 0/1 patterns per task (BLAS).
    """
    T, K = present.shape
    P = f.w_task.shape[0]
    count_t = np.zeros((P, T), dtype=np.int64)
    count_all = np.zeros(P, dtype=np.int64)
    thr_t = _threshold(f.obs_task)
    thr_all = _threshold(f.overall(f.obs_over))
    same = f.w_over is f.w_task
    W = [np.ascontiguousarray((f.w_task[:, t] if same else np.concatenate([f.w_task[:, t], f.w_over[:, t]])).T)
         for t in range(T)]  # (K, P) or (K, 2P)
    A = [w.sum(axis=0) for w in W]
    step = max(1, _BLOCK // max(1, T * K, P * T))
    for r0 in range(0, R, step):
        bits = sign_bits(seed, range(r0, min(R, r0 + step)), present)
        u = np.empty((bits.shape[0], W[0].shape[1], T))
        for t in range(T):
            u[:, :, t] = A[t] - 2.0 * (bits[:, t].astype(np.float64) @ W[t])
        count_t += (np.abs(u[:, :P]) >= thr_t[None]).sum(axis=0)
        if with_all:
            count_all += (np.abs(f.overall(u[:, P:] if not same else u)) >= thr_all[None]).sum(axis=0)
    return count_t, count_all


# --------------------------------------------------------------------------------------------- McNemar
def mcnemar_exact(Y, *, pairs=None, baseline: int | None = None) -> PairedTest:
    """McNemar's exact test for 0/1 scores, per task and overall (all tasks' instances pooled).

    With ``b`` the shared instances ``i`` got right and ``j`` wrong and ``c`` the reverse, the two-sided
    p-value is the exact binomial test of ``b`` successes in ``b + c`` trials at 1/2:
    ``min(1, 2 P(Bin(b + c, 1/2) <= min(b, c)))`` (1 when ``b + c = 0``).  ``diff`` is the difference of the
    accuracies on the shared instances.

    Raises
    ------
    ValueError
        A score other than 0, 1 or missing.
    """
    from scipy.stats import binom

    Y = _as_scores(Y)
    vals = Y[~np.isnan(Y)]
    if not np.isin(vals, (0.0, 1.0)).all():
        raise ValueError("McNemar's test needs 0/1 scores (correct / wrong)")
    pr = _pairs(Y, pairs, baseline)
    d = paired_differences(Y, pr)
    diff, n, overall = _task_means(d)
    b = (d == 1.0).sum(axis=-1)
    c = (d == -1.0).sum(axis=-1)

    def p_of(b, c):
        m = b + c
        return np.where(m > 0, np.minimum(1.0, 2.0 * binom.cdf(np.minimum(b, c), np.maximum(m, 1), 0.5)), 1.0)

    p_task = np.where(n > 0, p_of(b, c), np.nan)
    B, C = b.sum(axis=-1), c.sum(axis=-1)
    p_all = np.where((n > 0).any(axis=-1), p_of(B, C), np.nan)
    P, T = n.shape
    return PairedTest(test="mcnemar", pairs=pr, diff=diff, overall=overall, n=n, p_task=p_task, p_overall=p_all,
                      low_task=None, high_task=None, low=None, high=None, resamples=0, seed=None,
                      exact_task=n > 0, exact_overall=np.ones(P, dtype=bool),
                      method="McNemar's exact test (binomial test on the discordant instances) per task and on all "
                             "instances pooled")


# --------------------------------------------------------------------------------------------- corrections
def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate): ``min_(k >= i) m p_(k) / k``, capped at 1.

    ``NaN`` entries are left out of the family and stay ``NaN``.

    Examples
    --------
    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, np.nan])).round(4).tolist()
    [0.03, 0.04, 0.04, nan]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    flat = p.ravel()
    ok = np.flatnonzero(~np.isnan(flat))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(flat[ok], kind="stable")]
    adj = flat[order] * m / np.arange(1, m + 1)
    adj = np.minimum.accumulate(adj[::-1])[::-1]
    res = out.ravel()
    res[order] = np.minimum(adj, 1.0)
    return res.reshape(p.shape)


def adjust(pvalues, correction: str = "holm") -> np.ndarray:
    """Adjusted p-values: ``"holm"`` (family-wise error, :func:`engine.kernels.significance.holm`), ``"bh"``
    (Benjamini-Hochberg false discovery rate) or ``"none"``."""
    if correction == "holm":
        return holm(np.asarray(pvalues, dtype=np.float64))
    if correction == "bh":
        return benjamini_hochberg(pvalues)
    if correction == "none":
        return np.array(pvalues, dtype=np.float64)
    raise ValueError(f"unknown correction {correction!r}; choose {', '.join(CORRECTIONS)}")


# --------------------------------------------------------------------------------------------- letters
def _letters(i: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = alphabet[r] + out
    return out


def letter_display(different, order: Sequence[int] | np.ndarray | None = None) -> list[str]:
    """Compact letter display: systems that share a letter are not significantly different.

    Piepho's (2004) insert-absorb algorithm: start with one letter shared by all systems; for every
    significant pair, split every letter that holds both into one without the first and one without the
    second; drop letters whose systems all hold another letter too.  The result: two significantly
    different systems share no letter, two others share at least one, and no letter is redundant.
    Letters are named ``a, b, ...`` (``z``, ``aa``, ...) in the order of their best system in ``order``
    (default: index order).

    Parameters
    ----------
    different : array_like of bool, shape (S, S)
        Symmetric: ``different[i, j]`` when the test separates ``i`` and ``j``.
    order : sequence of int, optional
        Systems from best to worst.

    Returns
    -------
    list of str
        The letters of every system (by index).

    Examples
    --------
    >>> D = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    >>> letter_display(D)
    ['a', 'ab', 'b']
    """
    D = np.asarray(different, dtype=bool)
    S = D.shape[0]
    if D.shape != (S, S) or not np.array_equal(D, D.T):
        raise ValueError("different must be a symmetric (S, S) boolean matrix")
    pos = np.empty(S, dtype=np.int64)
    ordr = np.arange(S) if order is None else np.asarray(order, dtype=np.int64)
    if sorted(ordr.tolist()) != list(range(S)):
        raise ValueError("order must be a permutation of the system indices")
    pos[ordr] = np.arange(S)
    cols: list[frozenset[int]] = [frozenset(range(S))] if S else []
    for i, j in zip(*np.nonzero(np.triu(D, 1))):
        new: list[frozenset[int]] = []
        for col in cols:
            if i in col and j in col:
                new += [col - {int(j)}, col - {int(i)}]
            else:
                new.append(col)
        keep: list[frozenset[int]] = []
        for c in sorted(set(new), key=len, reverse=True):  # absorb: drop a letter inside another one
            if not any(c <= k for k in keep):
                keep.append(c)
        cols = keep
    cols.sort(key=lambda c: sorted(pos[list(c)].tolist()))
    out = [""] * S
    for n, col in enumerate(cols):
        for s in sorted(col):
            out[s] += _letters(n)
    return out


# --------------------------------------------------------------------------------------------- all together
#: pair x task x instance cells of one block of pairs (:func:`compare_systems` tests the pairs block by block)
PAIR_BLOCK_CELLS = 1 << 22


#: ``map_blocks(run, Y, blocks)``: ``[run(Y, b) for b in blocks]`` computed somewhere (e.g. as tasks on a dask
#: cluster, :func:`engine.distributed.map_blocks`), the results in order
BlockMap = Callable[[Callable[[np.ndarray, np.ndarray], "PairedTest"], np.ndarray, list[np.ndarray]], list["PairedTest"]]


def _by_pair_blocks(run, Y: np.ndarray, pairs: np.ndarray, *, step: int | None = None,
                    map_blocks: BlockMap | None = None) -> PairedTest:
    """``run(Y, pairs)`` on blocks of at most :data:`PAIR_BLOCK_CELLS` / (tasks x instances) pairs (and at most
    ``step``), the results joined; ``map_blocks`` computes the blocks (default: one after the other, here).

    The paired differences and the work arrays of a test take pairs x tasks x instances floats each; a block of
    pairs bounds them.  Every pair's result is the same in any block: the random draws (sign patterns, bootstrap
    counts) depend on the seed, the pattern or replicate and the instances every task has, not on the pairs; they
    are drawn again for every block, the price of the bound.
    """
    _, T, K = Y.shape
    most = max(1, PAIR_BLOCK_CELLS // max(1, T * K))
    step = most if step is None else max(1, min(int(step), most))
    if len(pairs) <= step and map_blocks is None:
        return run(Y, pairs)
    blocks = [pairs[i:i + step] for i in range(0, len(pairs), step)]
    parts = [run(Y, b) for b in blocks] if map_blocks is None else map_blocks(run, Y, blocks)

    def cat(name: str) -> Any:
        got = [getattr(p, name) for p in parts]
        return None if got[0] is None else np.concatenate(got, axis=0)

    return replace(parts[0], **{name: cat(name) for name in ("pairs", "diff", "overall", "n", "p_task", "p_overall",
                                                             "low_task", "high_task", "low", "high", "exact_task",
                                                             "exact_overall")})


def _block_of(test: Callable[..., PairedTest], Y: np.ndarray, pairs: np.ndarray, **options: Any) -> PairedTest:
    """``test(Y, pairs=pairs, **options)``: one block of pairs (a picklable task of :func:`_by_pair_blocks`)."""
    return test(Y, pairs=pairs, **options)


@dataclass(frozen=True)
class Comparison:
    """Paired tests of systems with a multiple-comparison correction and the groups they leave.

    Attributes
    ----------
    test : PairedTest
    correction : str
    alpha : float
    adjusted : ndarray (P,)
        Overall p-values adjusted over the ``P`` pairs.
    adjusted_task : ndarray (P, T)
        Per-task p-values adjusted over the pairs, task by task.
    mean : ndarray (S,)
        Every system's mean score (mean over tasks of its per-task mean).
    order : ndarray of int (S,)
        Systems by ``mean``, best first (ties by index).
    different : ndarray of bool (S, S)
        Pairs whose adjusted overall p-value is at most ``alpha``.
    letters : list of str or None
        :func:`letter_display` of ``different`` in ``order`` (all pairs tested only).
    note : str
        A caveat on the power of the tests as run, or ``""``: with ``R`` resamples a p-value is at least
        ``1 / (R + 1)`` (bootstrap ``2 / (R + 1)``), and when even ``P`` such p-values stay above ``alpha`` after the
        correction no pair can be found different, whatever the data.
    """

    test: PairedTest
    correction: str
    alpha: float
    adjusted: np.ndarray
    adjusted_task: np.ndarray
    mean: np.ndarray
    order: np.ndarray
    different: np.ndarray
    letters: list[str] | None
    note: str = ""


def compare_systems(Y, *, test: str = "permutation", baseline: int | None = None, correction: str = "holm",
                    alpha: float = 0.05, resamples: int = 10_000, seed: int = 0, level: float = 0.95,
                    statistic: str = "mean", pairs_per_block: int | None = None,
                    map_blocks: BlockMap | None = None) -> Comparison:
    """Run a paired test on every pair (or against ``baseline``), correct for multiplicity, group the systems.

    ``test``: ``"permutation"`` (default; ``resamples`` sign patterns, ``statistic``), ``"bootstrap"``
    (``resamples`` replicates, ``level``) or ``"mcnemar"`` (0/1 scores).  ``correction``: ``"holm"`` (default),
    ``"bh"`` or ``"none"``, over the pairs (and, per task, over the pairs of that task).  The pairs are tested in
    blocks (at most ``pairs_per_block``; :func:`_by_pair_blocks`) computed by ``map_blocks`` (default: here); the
    results do not depend on either.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; choose {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; choose {', '.join(CORRECTIONS)}")
    alpha = check_alpha(alpha)
    Y = _as_scores(Y)
    pr = _pairs(Y, None, baseline)
    if test == "permutation":
        run = partial(_block_of, paired_permutation, resamples=resamples, seed=seed, statistic=statistic)
    elif test == "bootstrap":
        run = partial(_block_of, paired_bootstrap, replicates=resamples, seed=seed, level=level)
    else:
        run = partial(_block_of, mcnemar_exact)
    res = _by_pair_blocks(run, Y, pr, step=pairs_per_block, map_blocks=map_blocks)
    adj = adjust(res.p_overall, correction)
    adj_t = np.stack([adjust(res.p_task[:, t], correction) for t in range(res.p_task.shape[1])], axis=1) \
        if res.p_task.shape[1] else res.p_task.copy()
    S = Y.shape[0]
    ok = ~np.isnan(Y)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a system without scores
        task_mean = np.where(ok, Y, 0.0).sum(axis=-1) / ok.sum(axis=-1)
        mean = np.nanmean(task_mean, axis=-1)
    order = np.array(sorted(range(S), key=lambda s: (np.isnan(mean[s]), -np.nan_to_num(mean[s]), s)), dtype=np.int64)
    different = np.zeros((S, S), dtype=bool)
    sig = adj <= alpha
    i, j = res.pairs[:, 0], res.pairs[:, 1]
    different[i, j] = sig
    different[j, i] = sig
    letters = letter_display(different, order) if baseline is None else None
    note = ""
    if test != "mcnemar":
        floor = (2.0 if test == "bootstrap" else 1.0) / (res.resamples + 1.0)
        m = int(np.count_nonzero(~np.isnan(res.p_overall)))
        exact = test == "permutation" and bool(res.exact_overall.all())
        if m and not exact and (adjust(np.full(m, floor), correction) > alpha).all():
            note = (f"with {res.resamples} resamples no p-value is below {floor:.2g}, and {m} such p-values stay above "
                    f"alpha = {alpha:g} after the {correction} correction: no pair can be found different; use more "
                    f"resamples (at least {int(np.ceil(m / alpha))} for {m} pairs) or fewer pairs (a baseline)")
    return Comparison(test=res, correction=correction, alpha=float(alpha), adjusted=adj, adjusted_task=adj_t, mean=mean,
                      order=order, different=different, letters=letters, note=note)
