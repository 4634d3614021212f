"""Differential test (issue #23): every path that can compute a job gives the same bits.

Driven by the registries: every rule of ``engine.RULES`` (with the options of its first case in
``tests/rules/test_invariance.py``, which fails for a rule without one), every level of ``engine.rules.LEVELS``,
every missing-score policy of ``engine.labelled.core.MISSING_POLICIES`` and every bootstrap axis of
``engine.labelled.bootstrap.OVER``.  On one small table with ties, missing scores, a padding judge and tasks whose
labels are not in natural order, the answer of

* ``engine.rank`` (in memory) is compared with ``engine.rank_rules`` (the rule alone and next to another
  rule, sharing the task matrix and the pairwise sums), with a dask-backed zarr store (``engine.to_zarr``,
  ``engine.open_scores``), with the pair-block path (``VOTEBENCH_PAIR_ROWS=2``) for the rules
  ``engine.kernels.pairblock.BLOCKED_RULES`` names, and, for rules whose kernel takes per-task options
  (``engine.labelled.core.PER_TASK_OPTIONS``), with those options given as a list, a tuple, an array and a mapping;
* ``engine.bootstrap`` at block sizes 1, 7 and the default is compared with itself and with the
  one-replicate definition (``engine.labelled.bootstrap.replicate_scores_reference``), and its point estimate with
  ``engine.rank``; every rule on every axis, each axis with every level and every policy (a Latin square
  of the (level, policy) pairs over the axes; ``VOTEBENCH_DIFFERENTIAL_FULL=1`` runs the full product).

Either every path gives the same numbers (``np.array_equal``, NaN where NaN) or every path refuses.
What ``tests/rules/test_invariance.py`` covers (permutations of the input, dask chunkings, bootstraps of
chunked data) is not repeated here.  A results store (``engine.sweep.bootstrap_input``) and a real
two-process ``distributed.LocalCluster`` are compared for one rule of each bootstrap evaluation kind
(``Rule.resample``), to keep this file within its time budget.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
from test_invariance import RULE_CASES

import engine
from engine.errors import VotebenchError
from engine.kernels.pairblock import BLOCKED_RULES, ROWS_ENV
from engine.kernels.ranking import min_rank
from engine.labelled.bootstrap import OVER, replicate_scores_reference
from engine.labelled.core import MISSING_POLICIES, PER_TASK_OPTIONS, kernel_options
from engine.rules import LEVELS

RULES = sorted(engine.RULES)
TASKS = ["t3", "t1", "t10", "t2"]  # canonical order t1, t2, t3, t10
SYSTEMS = ["m2", "m0", "m1", "m4", "m3"]
REPLICATES = 8  # blocks of 1, 7 (7 + 1) and the default (one block of 8)
SEED = 7
#: per-task values of the per-task options (in the order of TASKS; q <= p for every task)
PER_TASK = {"q": [0.0, 0.1, 0.25, 0.05], "p": [0.5, 0.4, 0.6, 0.3], "s": [0.2, 0.3, 0.1, 0.25],
            "maximize": [True, False, True, True], "preference": ["quasi", "level", "linear_indifference", "gaussian"]}


def _table() -> np.ndarray:
    """(S, T, K) scores on a few fractions (ties, equal means of different terms), with holes."""
    rng = np.random.default_rng(23)
    X = rng.choice([0.25, 1 / 3, 0.5, 2 / 3, 0.75], size=(5, 4, 3))
    X[1, 0, 2] = np.nan  # a missing score
    X[3, 2, :] = np.nan  # a system without any score on a task
    X[:, 3, 1] = np.nan  # a padding judge (no system scored it)
    X[0, 1, 0] = X[2, 1, 0]  # an exact tie
    return X


@functools.lru_cache(maxsize=1)
def scores():
    return engine.scores_from_array(_table(), systems=SYSTEMS, tasks=TASKS)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("differential") / "scores.zarr"
    engine.to_zarr(scores(), path)
    return engine.open_scores(path)


def options_of(rule: str) -> dict:
    return dict(RULE_CASES[rule][0])


def per_task_names(rule: str) -> list[str]:
    """The per-task options the rule's kernel takes (asked of the registry and the kernel's signature)."""
    names = kernel_options(engine.get_rule(rule))
    return [] if names is None else sorted(set(names) & PER_TASK_OPTIONS)


def outcome(fn):
    """("ok", scores by system label) or ("error", None)."""
    try:
        res = fn()
    except VotebenchError:
        return "error", None
    return "ok", res


def by_label(da) -> np.ndarray:
    order = np.argsort([str(s) for s in da["system"].values])
    return np.asarray(da.values, dtype=np.float64)[..., order]


def same(a, b, what: str) -> None:
    assert a[0] == b[0], f"{what}: {a[0]} where the reference path gives {b[0]}"
    if a[0] == "ok":
        assert a[1].shape == b[1].shape and np.array_equal(a[1], b[1], equal_nan=True), f"{what} differs:\n{a[1]}\n{b[1]}"


def requests():
    return [(lvl, m) for lvl in LEVELS for m in MISSING_POLICIES]


def rank_score(s, **kw) -> np.ndarray:
    return by_label(engine.rank(s, **kw)["score"])


# ------------------------------------------------------------------------------------------ rank
@pytest.fixture(scope="module")
def dask_answers(store):
    """Scores of the zarr store (dask-backed): one ``rank_rules`` request per (level, policy, options) for the
    rules that succeed in memory, each rule alone for those that refuse (they must refuse here too)."""
    import dask

    out = {}
    with dask.config.set(scheduler="synchronous"):
        for lvl, m in requests():
            ok: dict[str, tuple[dict, list[str]]] = {}
            for rule in RULES:
                opts = options_of(rule)
                mem = outcome(lambda r=rule, o=opts: rank_score(scores(), rule=r, level=lvl, missing=m, options=o))
                if mem[0] == "ok":
                    ok.setdefault(repr(sorted(opts.items())), (opts, []))[1].append(rule)
                else:
                    out[(rule, lvl, m)] = outcome(lambda r=rule, o=opts: by_label(
                        engine.rank(store, rule=r, level=lvl, missing=m, options=o)["score"].compute()))
            for opts, names in ok.values():
                res = outcome(lambda n=names, o=opts: engine.rank_rules(
                    store, n, level=lvl, missing=m, options=o)["score"].compute())
                for i, rule in enumerate(names):
                    out[(rule, lvl, m)] = (res[0], None if res[1] is None else by_label(res[1])[i])
    return out


@pytest.mark.parametrize("rule", RULES)
def test_rank_paths_agree(rule, dask_answers, monkeypatch):
    opts = options_of(rule)
    partner = "copeland" if rule != "copeland" else "borda"
    for lvl, m in requests():
        kw = dict(level=lvl, missing=m)
        base = outcome(lambda: rank_score(scores(), rule=rule, options=opts, **kw))
        where = f"{rule} level={lvl} missing={m}"
        same(outcome(lambda: by_label(engine.rank_rules(scores(), [rule], options=opts, **kw)["score"])[0]), base,
             f"{where}: rank_rules alone")
        pair = outcome(lambda: by_label(engine.rank_rules(scores(), [rule, partner], options=opts, **kw)["score"])[0])
        if pair[0] == "ok" or outcome(lambda: rank_score(scores(), rule=partner, **kw))[0] == "ok":
            same(pair, base, f"{where}: rank_rules next to {partner}")
        same(dask_answers[(rule, lvl, m)], base, f"{where}: dask-backed zarr store")
        if rule in BLOCKED_RULES:
            with monkeypatch.context() as mp:
                mp.setenv(ROWS_ENV, "2")
                same(outcome(lambda: rank_score(scores(), rule=rule, options=opts, **kw)), base,
                     f"{where}: pair blocks of 2 rows")


@pytest.mark.parametrize("rule", [r for r in RULES if per_task_names(r)])
def test_per_task_options_in_every_form_agree(rule, store):
    names = per_task_names(rule)
    given = {k: PER_TASK[k] for k in names}
    for lvl, m in requests():
        kw = dict(rule=rule, level=lvl, missing=m)
        base = outcome(lambda: rank_score(scores(), options=given, **kw))
        for form, conv in (("tuple", tuple), ("array", np.array), ("mapping", lambda v: dict(zip(TASKS, v)))):
            o = {k: conv(v) for k, v in given.items()}
            same(outcome(lambda o=o: rank_score(scores(), options=o, **kw)), base, f"{rule} {lvl} {m}: options as {form}")
            same(outcome(lambda o=o: by_label(engine.rank_rules(scores(), [rule], options=o, level=lvl, missing=m)["score"])[0]),
                 base, f"{rule} {lvl} {m}: rank_rules, options as {form}")
        for over in OVER:
            forms = [{k: conv(v) for k, v in given.items()} for conv in (list, np.array)]
            runs = [outcome(lambda o=o: by_label(engine.bootstrap(
                scores(), over=over, replicates=REPLICATES, seed=SEED, options=o, **kw)["replicate_score"]))
                for o in forms]
            same(runs[1], runs[0], f"{rule} {lvl} {m}: bootstrap over {over}, options as array")
    same(outcome(lambda: by_label(engine.rank(store, options={k: np.array(v) for k, v in given.items()},
                                              rule=rule)["score"].compute())),
         outcome(lambda: rank_score(scores(), options=given, rule=rule)), f"{rule}: zarr store, options as array")


# ------------------------------------------------------------------------------------------ bootstrap
#: every (level, policy) on every bootstrap axis (slow); by default each axis meets every level and every policy
FULL = os.environ.get("VOTEBENCH_DIFFERENTIAL_FULL") == "1"


def bootstrap_requests(over: str) -> list[tuple[str, str]]:
    """The (level, policy) pairs bootstrapped over ``over``: all of them with ``VOTEBENCH_DIFFERENTIAL_FULL=1``,
    otherwise a Latin square (pair (l, p) on axis (l + p) mod 3), so that the three axes together meet every pair."""
    if FULL:
        return requests()
    i = OVER.index(over)
    return [(lvl, m) for a, lvl in enumerate(LEVELS) for b, m in enumerate(MISSING_POLICIES)
            if (a + b) % len(OVER) == i % len(OVER)]


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("rule", RULES)
def test_bootstrap_paths_agree(rule, over):
    opts = options_of(rule)
    for lvl, m in bootstrap_requests(over):
        kw = dict(rule=rule, level=lvl, missing=m, options=opts, over=over, replicates=REPLICATES, seed=SEED)
        where = f"{rule} level={lvl} missing={m} over={over}"
        point = outcome(lambda: rank_score(scores(), rule=rule, level=lvl, missing=m, options=opts))
        runs = {}
        for block in (None, 1, 7):
            runs[block] = outcome(lambda b=block: engine.bootstrap(scores(), block=b, **kw))
        base = (runs[None][0], None if runs[None][1] is None else by_label(runs[None][1]["replicate_score"]))
        if base[0] == "ok":
            same(("ok", by_label(runs[None][1]["score"])), point, f"{where}: bootstrap point estimate vs rank")
        for block in (1, 7):
            r = runs[block]
            same((r[0], None if r[1] is None else by_label(r[1]["replicate_score"])), base, f"{where}: block {block}")
        if point[0] == "ok":  # the one-replicate definition (a refused request refuses before any replicate)
            ref = outcome(lambda: replicate_scores_reference(scores(), over=over, replicates=REPLICATES, seed=SEED,
                                                             rule=rule, level=lvl, missing=m, options=opts))
            order = np.argsort(SYSTEMS)
            ref = (ref[0], None if ref[1] is None else ref[1][:, order])
            if over == "tasks" and engine.get_rule(rule).resample == "weights" and ref[0] == base[0] == "ok":
                # KNOWN (issue 23, reported): the task-weights path sums a task drawn k times as k * x, the
                # one-replicate definition as x + ... + x in draw order; sums of reals in order (not exact)
                # round differently, a few ulps (mean, dowdall at level two, relative_difference).  Ranks agree.
                assert np.array_equal(min_rank(ref[1]), min_rank(base[1]), equal_nan=True), f"{where}: ranks"
                np.testing.assert_allclose(ref[1], base[1], rtol=8 * np.finfo(float).eps, atol=0,
                                           err_msg=f"{where}: one replicate at a time")
            else:
                same(ref, base, f"{where}: one replicate at a time")


# ------------------------------------------------------------------------------------------ stores and cluster
def one_rule_per_resample_kind() -> list[str]:
    """The first rule (by name) of each bootstrap evaluation kind of the registry (``Rule.resample``)."""
    kinds: dict[str, str] = {}
    for rule in RULES:
        kinds.setdefault(engine.get_rule(rule).resample, rule)
    return sorted(kinds.values())


@pytest.mark.parametrize("over", OVER)
def test_bootstrap_into_a_results_store_agrees(over, tmp_path, store):
    from engine.sweep.runner import bootstrap_input

    path = tmp_path / "scores.zarr"
    engine.to_zarr(scores(), path)
    for rule in one_rule_per_resample_kind():
        opts = options_of(rule)
        kw = dict(rule=rule, over=over, replicates=REPLICATES, seed=SEED, missing="listwise", options=opts)
        ds, _ = bootstrap_input(path, block=4, store=tmp_path / f"{rule}-{over}.zarr", **kw)
        mem = engine.bootstrap(scores(), **kw)
        for var in ("score", "replicate_score"):
            same(("ok", by_label(ds[var])), ("ok", by_label(mem[var])), f"{rule} over {over}: results store, {var}")


def test_two_worker_processes_agree(store):
    """One real ``LocalCluster`` of two worker processes: rank and bootstrap of the zarr store, one rule per kind."""
    distributed = pytest.importorskip("distributed")
    rules = one_rule_per_resample_kind()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        for rule in rules:
            opts = options_of(rule)
            kw = dict(rule=rule, level="two", missing="drop-judges", options=opts)
            got = client.compute(engine.rank(store, **kw)["score"]).result()
            same(("ok", by_label(got)), ("ok", rank_score(scores(), **kw)), f"{rule}: rank on two workers")
            ds = engine.bootstrap(store, over="tasks", replicates=REPLICATES, seed=SEED, block=2, **kw)
            rep = client.compute(ds["replicate_score"]).result()
            mem = engine.bootstrap(scores(), over="tasks", replicates=REPLICATES, seed=SEED, **kw)
            same(("ok", by_label(rep)), ("ok", by_label(mem["replicate_score"])), f"{rule}: bootstrap on two workers")
