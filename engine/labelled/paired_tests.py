"""Paired significance between the systems of a score tensor, and the groups it leaves (``votebench compare``).

The engine layer over :mod:`engine.kernels.paired` and :mod:`engine.kernels.significance`: for every pair of
systems (or every system against a baseline) it runs, on the instance-level scores,

* the paired permutation (sign-flip) test of the mean difference, per task and overall;
* the paired bootstrap of the mean difference (percentile interval and p-value);
* McNemar's exact test when every score is 0 or 1;

corrects the p-values over the pairs (Holm or Benjamini-Hochberg), draws the compact letter display of
the systems no test separates (:func:`compact_letters`; :func:`letter_groups` for the best systems by mean, as
the report and the dashboard show them), and compares the systems at the task level as
autorank does (:func:`engine.kernels.significance.compare`: Friedman, then Nemenyi when its critical difference
can separate the systems, pairwise Wilcoxon-Holm otherwise; the choice and its reason are returned).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import xarray as xr

from engine.errors import VotebenchError
from engine.kernels import paired as PT
from engine.kernels.checks import check_alpha

__all__ = ["MAX_OPERATIONS", "check_size", "compact_letters", "compare_scores", "letter_groups", "standardised"]

_TESTS = ("permutation", "bootstrap", "mcnemar")


def _oriented(scores: xr.DataArray, systems: list[str] | None) -> xr.DataArray:
    from engine.labelled.core import orient

    if systems is not None:
        known = [str(s) for s in scores["system"].values]
        unknown = [s for s in systems if s not in known]
        if unknown:
            raise VotebenchError(f"unknown system(s): {', '.join(unknown[:5])} (systems: {', '.join(known[:8])}"
                                 f"{', ...' if len(known) > 8 else ''})")
        if len(set(systems)) < 2:
            raise VotebenchError("compare needs at least two systems")
        scores = scores.sel(system=list(dict.fromkeys(systems)))
    return orient(scores).compute()


#: what the letters of instance-level input compare (:func:`letter_groups`), in words
STANDARDISED = ("mean over tasks of the per-task mean differences of standardised scores (every score minus its task's "
                "mean, divided by its task's standard deviation over all systems and instances, so that every task "
                "weighs the same whatever its scale); signs flipped within tasks")


def standardised(scores: xr.DataArray) -> xr.DataArray:
    """Every task's scores as z-scores: minus the task's mean, divided by its standard deviation (over all systems and
    instances, missing scores skipped; a task whose scores are all equal is only centred).

    A paired difference of z-scores is free of the task's scale: BLEU in points and ROUGE in [0, 1] weigh the same in
    a mean over tasks.  Orientation is kept (a positive scale; :func:`engine.labelled.core.orient` still applies).

    >>> import engine, numpy as np
    >>> one = np.array([[1.0, 3.0], [10.0, 30.0]])  # (task, instance): the second task on a 10-fold scale
    >>> y = engine.scores_from_array(np.stack([one, one]), systems=["a", "b"])
    >>> standardised(y).sel(system="a").values.tolist()
    [[-1.0, 1.0], [-1.0, 1.0]]
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a task without any score: NaN mean and spread
        mu = scores.mean(("system", "instance"), skipna=True)
        sd = scores.std(("system", "instance"), skipna=True)
    sd = sd.where(sd > 0, 1.0)
    return ((scores - mu) / sd).transpose(*scores.dims).assign_attrs(scores.attrs)


def _num(v: float) -> float | None:
    v = float(v)
    return None if math.isnan(v) else v


def _comparison(Y: np.ndarray, test: str, baseline: int | None, correction: str, alpha: float, resamples: int,
                seed: int) -> PT.Comparison:
    from engine.limits import spread

    S, T, K = Y.shape
    n_pairs = S - 1 if baseline is not None else S * (S - 1) // 2
    # on a command's cluster the pairs go out in blocks (a block's arrays: a few pair x task x instance floats)
    step, mapper = spread(n_pairs, 32.0 * T * K)
    try:
        return PT.compare_systems(Y, test=test, baseline=baseline, correction=correction, alpha=alpha,
                                  resamples=resamples, seed=seed, pairs_per_block=step, map_blocks=mapper)
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None


def compact_letters(scores: xr.DataArray, *, test: str = "permutation", correction: str = "holm", alpha: float = 0.05,
                    resamples: int = 10_000, seed: int = 0, systems: list[str] | None = None) -> dict[str, str]:
    """The compact letter display of the systems: those sharing a letter are not significantly different.

    Parameters
    ----------
    scores : xarray.DataArray
        Score tensor (instance-level for the per-instance tests).
    test : {"permutation", "bootstrap", "mcnemar"}
        The paired test of the overall mean difference behind the letters.
    correction : {"holm", "bh", "none"}
    alpha : float
    resamples, seed : int
        Sign patterns / bootstrap replicates, and their seed.
    systems : list of str, optional
        Compare only these systems.

    Returns
    -------
    dict
        system -> letters (``"a"``, ``"ab"``, ...), best mean first.

    Examples
    --------
    >>> import engine, numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = engine.scores_from_array(np.stack([rng.normal(m, 1, (1, 60)) for m in (0.0, 1.0, 1.05)]), systems=["a", "b", "c"])
    >>> engine.compact_letters(y, resamples=2000)
    {'b': 'a', 'c': 'a', 'a': 'b'}
    """
    res = compare_scores(scores, test=test, correction=correction, alpha=alpha, resamples=resamples, seed=seed,
                         systems=systems, task_level=False, bootstrap=False)
    return dict(res["letters"])


def compare_scores(scores: xr.DataArray, *, baseline: str | None = None, test: str = "permutation",
                   correction: str = "holm", alpha: float = 0.05, resamples: int = 10_000, seed: int = 0,
                   systems: list[str] | None = None, task_level: bool = True, bootstrap: bool = True) -> dict[str, Any]:
    """Paired tests between systems, per task and overall, with corrections, letters and a task-level comparison.

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor; lower-is-better tasks are negated first (differences favour the better).
    baseline : str, optional
        Compare every system against this one only (no letters then); default every pair.
    test : {"permutation", "bootstrap", "mcnemar"}
        The test behind ``p``, the correction and the letters (default the paired permutation test of the
        mean difference; exact when the sign patterns are at most ``resamples``).
    correction : {"holm", "bh", "none"}
        Over the pairs (per task: over the pairs of that task).
    alpha : float
    resamples, seed : int
        Sign patterns of the permutation test and replicates of the bootstrap, and their seed.
    systems : list of str, optional
        Compare only these systems.
    task_level, bootstrap : bool
        Also compare the systems on their per-task means (Friedman, then Nemenyi or Wilcoxon-Holm); also give
        every pair's bootstrap interval of the overall mean difference.

    Returns
    -------
    dict
        JSON-ready: ``systems``, ``tasks``, the settings, ``method``, ``mean`` (system -> mean over tasks of its
        per-task mean), ``letters`` (system -> letters; ``None`` against a baseline), ``pairs`` (per pair: ``a``,
        ``b``, ``diff`` (mean of ``a - b``), ``p``, ``p_adjusted``, ``different``, ``bootstrap`` interval,
        ``mcnemar`` p-values for 0/1 scores, ``tasks``: the same per task), ``task_level`` (the test chosen and why,
        Friedman's p-value, average ranks, groups) and ``notes``.  Resamples out of reach for the input
        (:func:`check_size`): a :class:`VotebenchError` before any test.

    Examples
    --------
    >>> import engine, numpy as np
    >>> y = np.random.default_rng(0).normal([[[0.0]], [[1.0]], [[1.05]]], 1, (3, 1, 60))  # 3 systems, 60 instances
    >>> engine.compare_scores(engine.scores_from_array(y, systems=["a", "b", "c"]), resamples=2000)["letters"]
    {'b': 'a', 'c': 'a', 'a': 'b'}
    """
    _check_settings(test, correction, alpha, resamples)
    x = _oriented(scores, systems)
    names = [str(s) for s in x["system"].values]
    tasks = [str(t) for t in x["task"].values]
    Y = np.asarray(x.transpose("system", "task", "instance").values, dtype=np.float64)
    base = _baseline_index(baseline, names)
    binary, one_each = _checked_input(Y, len(names), base, test, int(resamples), bootstrap)
    notes: list[str] = []
    main = _comparison(Y, test, base, correction, alpha, resamples, seed)
    if main.note:
        notes.append(main.note)
    boot = _comparison(Y, "bootstrap", base, correction, alpha, resamples, seed).test \
        if bootstrap and test != "bootstrap" and not one_each else (main.test if test == "bootstrap" else None)
    mcn = (main if test == "mcnemar" else _comparison(Y, "mcnemar", base, correction, alpha, resamples, seed)) \
        if binary else None
    if one_each:
        notes.append("one score per task: every per-task test has a single instance, the overall test flips the signs of "
                     "the tasks' differences, and no bootstrap interval is given (resampling one instance per task does "
                     "not vary)")
    pairs = _pair_objects(main, boot, mcn, names, tasks, alpha)
    out: dict[str, Any] = {
        "systems": names, "tasks": tasks, "test": test, "correction": correction, "alpha": float(alpha),
        "resamples": int(resamples), "seed": int(seed), "baseline": baseline, "method": main.test.method,
        "overall": "mean over tasks of the per-task mean differences (every task weighs the same); resampling within tasks",
        "mean": {names[s]: _num(main.mean[s]) for s in main.order.tolist()},
        "letters": None if main.letters is None else {names[s]: main.letters[s] for s in main.order.tolist()},
        "pairs": pairs,
    }
    if mcn is None:
        notes.append("McNemar's exact test is given for 0/1 scores only; these are not all 0 or 1")
    if task_level:
        out["task_level"] = _task_level(x, names, alpha)
    out["notes"] = notes
    return out


def _checked_input(Y: np.ndarray, n_systems: int, base: int | None, test: str, resamples: int,
                   bootstrap: bool) -> tuple[bool, bool]:
    """Whether the scores are all 0/1 and whether every task has one instance; refuses a test the input cannot take
    and sizes out of reach (:func:`check_size`), before any test runs."""
    binary = bool(np.isin(Y[~np.isnan(Y)], (0.0, 1.0)).all())
    if test == "mcnemar" and not binary:
        raise VotebenchError("McNemar's test needs 0/1 scores; these are not all 0 or 1")
    n_inst = (~np.isnan(Y)).any(axis=0).sum(axis=-1)  # instances per task (scored by some system)
    one_each = bool((n_inst <= 1).all())
    if one_each and test == "bootstrap":
        raise VotebenchError("the paired bootstrap resamples the instances within every task, and this input has one "
                             "score per task: use the permutation test (it flips the signs of the tasks' differences)")
    check_size(n_inst.tolist(), n_systems - 1 if base is not None else n_systems * (n_systems - 1) // 2,
               resamples, [test] + (["bootstrap"] if bootstrap and test != "bootstrap" and not one_each else [])
               + (["mcnemar"] if binary and test != "mcnemar" else []))
    return binary, one_each


def _baseline_index(baseline: str | None, names: list[str]) -> int | None:
    if baseline is not None and baseline not in names:
        raise VotebenchError(f"unknown baseline {baseline!r} (systems: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})")
    return None if baseline is None else names.index(baseline)


def _check_settings(test: str, correction: str, alpha: float, resamples: int) -> None:
    """One-line errors for a test, correction, level or number of resamples that :func:`compare_scores` does not take."""
    if test not in _TESTS:
        raise VotebenchError(f"unknown test {test!r}; choose one of {', '.join(_TESTS)}")
    if correction not in PT.CORRECTIONS:
        raise VotebenchError(f"unknown correction {correction!r}; choose one of {', '.join(PT.CORRECTIONS)}")
    check_alpha(alpha)
    if int(resamples) < 1:
        raise VotebenchError(f"resamples must be at least 1, got {resamples}")


#: the most operations (multiply-adds and random draws of a cell, :func:`engine.kernels.paired.paired_cost`) one
#: comparison may take, and the rate they are told in: about 1e9 a second on the 2-core machine of
#: benchmarks/bench_compare.py, so about a quarter of an hour
MAX_OPERATIONS = 1e12
RATE = 1e9


def _duration(seconds: float) -> str:
    for unit, size in (("years", 3.15e7), ("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.2g} {unit}"
    return f"{seconds:.2g} s"


def check_size(instances: list[int], n_pairs: int, resamples: int, tests: list[str]) -> None:
    """Refuse, before any work, paired tests whose estimated time or memory is out of reach.

    ``instances``: per task; ``tests``: the tests to run.  Memory goes through the engine's one memory check
    (:func:`engine.limits.check_memory`); time through :data:`MAX_OPERATIONS`.  Either refusal is one
    :class:`VotebenchError` line naming the size and the estimate.
    """
    from engine.limits import check_memory

    costs = [PT.paired_cost(instances, n_pairs, resamples, test=t) for t in tests]
    ops, nbytes = sum(c[0] for c in costs), max(c[1] for c in costs)
    cells = f"{n_pairs} pair(s) of systems on {len(instances)} task(s) with {sum(instances):,} instances"
    check_memory(nbytes, f"resamples {resamples}: the bootstrap replicates of {cells}", "use fewer resamples")
    if ops > MAX_OPERATIONS:
        raise VotebenchError(f"resamples {resamples}: the paired tests ({', '.join(tests)}) of {cells} need about "
                             f"{ops:.2g} operations (about {_duration(ops / RATE)} at {RATE:.0e} a second), more than "
                             f"the {MAX_OPERATIONS:.0e} allowed (about {_duration(MAX_OPERATIONS / RATE)}); use fewer "
                             f"resamples, or fewer pairs (a baseline, fewer systems)")


def _pair_objects(main: Any, boot: Any, mcn: Any, names: list[str], tasks: list[str], alpha: float) -> list[dict[str, Any]]:
    """One JSON-ready object per compared pair: the overall and per-task test, its bootstrap interval, McNemar."""
    r = main.test
    pairs = []
    for p, (i, j) in enumerate(r.pairs.tolist()):
        obj: dict[str, Any] = {"a": names[i], "b": names[j], "diff": _num(r.overall[p]), "p": _num(r.p_overall[p]),
                               "p_adjusted": _num(main.adjusted[p]), "different": bool(main.adjusted[p] <= alpha)}
        if boot is not None and boot.low is not None and boot.high is not None:
            obj["bootstrap"] = {"low": _num(boot.low[p]), "high": _num(boot.high[p]), "p": _num(boot.p_overall[p])}
        if mcn is not None:
            obj["mcnemar"] = {"p": _num(mcn.test.p_overall[p]), "p_adjusted": _num(mcn.adjusted[p])}
        obj["tasks"] = {t: {"diff": _num(r.diff[p, k]), "n": int(r.n[p, k]), "p": _num(r.p_task[p, k]),
                            "p_adjusted": _num(main.adjusted_task[p, k])} for k, t in enumerate(tasks)}
        pairs.append(obj)
    return pairs


def _task_level(x: xr.DataArray, names: list[str], alpha: float) -> dict[str, Any]:
    """autorank-style comparison on the per-task means: the test chosen automatically, and why."""
    from engine.kernels.significance import compare
    from engine.labelled.core import task_scores

    X = np.asarray(task_scores(x, missing="listwise").values, dtype=np.float64)  # (task, system), oriented
    kept: np.ndarray = np.asarray(~np.isnan(X).any(axis=0))
    used = [n for n, k in zip(names, kept.tolist()) if k]
    if X.shape[0] < 2 or len(used) < 2:
        return {"test": None, "reason": f"the task-level comparison needs at least 2 tasks and 2 systems with a score on "
                f"every task (here {X.shape[0]} task(s), {len(used)} system(s))"}
    ph = compare(X[:, kept], alpha=alpha)
    out: dict[str, Any] = {"test": ph.test, "reason": ph.reason, "systems": used, "n_tasks": int(X.shape[0]),
                           "avg_rank": {n: float(v) for n, v in zip(used, ph.avg_ranks)},
                           "cd": _num(ph.cd) if ph.cd is not None else None,
                           "groups": [[used[i] for i in c] for c in ph.cliques], "note": ph.note}
    if ph.friedman is not None:
        out["friedman"] = {"statistic": _num(ph.friedman.statistic), "pvalue": _num(ph.friedman.pvalue)}
    if ph.adjusted is not None:
        k = len(used)
        out["wilcoxon_holm"] = [{"a": used[i], "b": used[j], "p_adjusted": _num(ph.adjusted[i, j]),
                                 "different": bool(ph.different[i, j])} for i in range(k) for j in range(i + 1, k)]
    if len(used) < len(names):
        out["left_out"] = [n for n, k in zip(names, kept.tolist()) if not k]
    return out


def letter_groups(scores: xr.DataArray, *, systems: list[str] | None = None, top_k: int = 15, alpha: float = 0.05,
                  resamples: int = 4000, seed: int = 0, test: str = "auto") -> dict[str, Any]:
    """The compact letter display of the ``top_k`` best systems by mean, with the pairwise decisions behind it.

    All pairs of many systems are many tests (97 systems: 4656), and a correction over so many leaves little
    power, so only the best ``top_k`` by mean score (mean over tasks of the per-task mean over instances,
    oriented) are compared.  Instance-level input (more than one instance per task): the paired permutation
    test of the mean difference of :func:`compare_scores`, Holm's correction over the pairs, on the
    :func:`standardised` scores (z-scores within each task, over all systems and instances): the statistic of a
    pair is the mean over tasks of the per-task mean differences in units of the task's standard deviation, so a
    task on a 0-100 scale does not decide it (signs are flipped within tasks, as before); ``mean`` and the order
    are those z-scores.  One score per task: the task-level comparison as autorank does it
    (:func:`engine.kernels.significance.compare`: Friedman, then Nemenyi or pairwise Wilcoxon-Holm, ``test``) on
    the tasks where all of them have a score; ``mean`` is then the raw mean over those tasks and ``avg_rank`` the
    average rank the test compares.

    Parameters
    ----------
    scores : xarray.DataArray
        Canonical score tensor.
    systems : list of str, optional
        The candidates (default every system).
    top_k : int
        Systems compared, at least 2.
    alpha : float
    resamples, seed : int
        Sign patterns per pair of the permutation test (instance level) and their seed.
    test : {"auto", "nemenyi", "wilcoxon-holm"}
        The task-level post-hoc test.

    Returns
    -------
    dict
        JSON-ready: ``level`` (``"instance"`` or ``"task"``), ``systems`` (compared, best mean first), ``mean``
        and ``letters`` (lists in that order), ``measure`` (what ``mean`` is, in words), ``avg_rank`` (task level:
        the average ranks of the test; else None), ``candidates`` (systems with a mean) and ``top_k``, ``test``
        (``"permutation"``, ``"nemenyi"`` or ``"wilcoxon-holm"``), ``method``, ``correction`` (``"holm"``, or
        ``None`` for Nemenyi), ``alpha``, ``resamples``, ``seed``, ``n_tasks``, ``reason`` (why this task-level
        test), ``why`` (the same without the test's name and CD, for a caption that names them), ``friedman``,
        ``cd``, ``pairs`` (``a``, ``b``, ``diff`` (instance level: mean difference ``a - b``;
        task level: average rank of ``b`` minus that of ``a``), ``p``, ``p_adjusted``, ``different``) and ``notes``.

    Examples
    --------
    >>> import engine, numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = engine.scores_from_array(np.stack([rng.normal(m, 1, (1, 60)) for m in (0.0, 1.0, 1.05)]), systems=["a", "b", "c"])
    >>> groups = engine.letter_groups(y, resamples=2000)
    >>> groups["systems"], groups["letters"]
    (['b', 'c', 'a'], ['a', 'a', 'b'])
    """
    from engine.kernels.significance import TESTS

    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 2:
        raise VotebenchError(f"top_k must be an integer >= 2, got {top_k!r}")
    if test not in TESTS:
        raise VotebenchError(f"unknown post-hoc test {test!r}; choose one of {', '.join(TESTS)}")
    _check_settings("permutation", "holm", alpha, resamples)
    if scores.sizes["instance"] > 1:  # the tests and the order on z-scores: tasks of every scale weigh the same
        scores = standardised(scores)
    x = _oriented(scores, systems)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # missing scores: all-NaN means
        M = np.asarray(x.mean("instance", skipna=True).transpose("system", "task").values, dtype=np.float64)
        mean = np.nanmean(M, axis=1) if M.shape[1] else np.full(M.shape[0], np.nan)
    names = [str(s) for s in x["system"].values]
    ok = [i for i in range(len(names)) if math.isfinite(float(mean[i]))]
    top = sorted(ok, key=lambda i: (-float(mean[i]), i))[: int(top_k)]
    if len(top) < 2:
        raise VotebenchError(f"the paired tests need at least two systems with a score ({len(top)} here)")
    chosen = [names[i] for i in top]
    if x.sizes["instance"] > 1:
        out = _instance_groups(scores, chosen, float(alpha), int(resamples), int(seed))
    else:
        out = _task_groups(M[top].T, chosen, float(alpha), test)
    out.update({"candidates": len(ok), "top_k": int(top_k), "alpha": float(alpha), "seed": int(seed)})
    return out


def _instance_groups(scores: xr.DataArray, names: list[str], alpha: float, resamples: int, seed: int) -> dict[str, Any]:
    """:func:`letter_groups` on instance-level scores: the paired permutation tests of :func:`compare_scores`, Holm."""
    res = compare_scores(scores, systems=names, test="permutation", correction="holm", alpha=alpha, resamples=resamples,
                         seed=seed, task_level=False, bootstrap=False)
    shown = list(res["mean"])
    letters = res["letters"] or {}
    return {"level": "instance", "systems": shown, "mean": [res["mean"][n] for n in shown],
            "letters": [letters[n] for n in shown], "test": "permutation", "method": res["method"],
            "overall": STANDARDISED, "measure": "the mean over tasks of the system's z-scores (within each task: "
                       "score minus the task's mean, over the task's standard deviation, both over all systems and instances)",
            "avg_rank": None, "correction": "holm", "resamples": resamples, "n_tasks": len(res["tasks"]),
            "reason": None, "why": None, "friedman": None, "cd": None,
            "pairs": [{k: p[k] for k in ("a", "b", "diff", "p", "p_adjusted", "different")} for p in res["pairs"]],
            "notes": [n for n in res["notes"] if "McNemar" not in n]}


def _task_groups(X: np.ndarray, names: list[str], alpha: float, test: str) -> dict[str, Any]:
    """:func:`letter_groups` on one score per task ``X`` (T, k): Friedman, then Nemenyi or Wilcoxon-Holm."""
    from engine.kernels.significance import compare

    complete = np.isfinite(X).all(axis=1)
    if int(complete.sum()) < 2:
        raise VotebenchError(f"the task-level comparison needs at least 2 tasks where all of the {len(names)} systems "
                             f"compared have a score (here {int(complete.sum())})")
    Xc = X[complete]
    ph = compare(Xc, alpha=alpha, test=test)
    letters = PT.letter_display(ph.different, np.arange(len(names)))
    k = len(names)
    pairs = []
    for i in range(k):
        for j in range(i + 1, k):
            pairs.append({"a": names[i], "b": names[j], "diff": float(ph.avg_ranks[j] - ph.avg_ranks[i]),
                          "p": None if ph.pvalues is None else _num(ph.pvalues[i, j]),
                          "p_adjusted": None if ph.adjusted is None else _num(ph.adjusted[i, j]),
                          "different": bool(ph.different[i, j])})
    method = ("Friedman, then Nemenyi's test: two systems differ when their average ranks differ by at least the critical "
              f"difference CD = {ph.cd:.3g}" if ph.test == "nemenyi" else
              "pairwise Wilcoxon signed-rank tests on the task scores, Holm-adjusted over the pairs")
    return {"level": "task", "systems": names, "mean": [_num(m) for m in Xc.mean(axis=0)], "letters": letters,
            "measure": f"mean score over these {int(Xc.shape[0])} tasks (raw)",
            "avg_rank": [float(v) for v in ph.avg_ranks],
            "test": ph.test, "method": method, "overall": None, "correction": None if ph.test == "nemenyi" else "holm",
            "resamples": None, "n_tasks": int(Xc.shape[0]), "reason": ph.reason, "why": ph.why,
            "friedman": None if ph.friedman is None else {"statistic": _num(ph.friedman.statistic),
                                                          "pvalue": _num(ph.friedman.pvalue)},
            "cd": _num(ph.cd) if ph.cd is not None else None, "pairs": pairs, "notes": [ph.note] if ph.note else []}
