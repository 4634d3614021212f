"""Tests of :mod:`engine.bootstrap`: fast paths against the brute-force definition, reproducibility, laziness, summaries.

The definition of a replicate is :func:`engine.labelled.bootstrap.replicate_scores_reference`: one
:func:`engine.aggregate` call on the resampled tensor of :func:`engine.labelled.bootstrap.resampled_scores`.
Every evaluation path of :func:`engine.labelled.bootstrap.bootstrap` (task weights, batched kernels and
pooling, pairwise matrix gather, pairwise matrix x candidate counts, instance counts x judge values,
per-replicate kernel and fallback) is compared with it on small random tensors with ties (integer
scores), missing cells and padding; ``ds.attrs["method"]`` is checked so that each fast path is
really the one exercised.  """

from __future__ import annotations

import math
import zlib

import dask
import dask.array as dsa
import numpy as np
import pytest
import xarray as xr
from conftest import CountStarts as _CountStarts
from conftest import bf_min_rank
from conftest import forbid_compute as _forbid_compute
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.errors import VotebenchError
from engine.kernels import metrics
from engine.kernels.resample import instance_counts, resample_indices
from engine.labelled.bootstrap import OVER, bootstrap, replicate_scores_reference, resampled_scores, stability, summarize

LEVELS = ("task", "two", "one")
#: rules whose kernels need positive / non-negative / 0-1 scores, hence higher-is-better everywhere
POSITIVE = {"geometric_mean"}
NON_NEGATIVE = {"relative_difference"}
UNIT = {"optimality_gap"}
#: rules whose arithmetic is not exact on integer scores (fractions like 1/3, square roots, logs): a tie of the
#: definition may come out as a near-tie of either sign, so only the order of clearly separated scores is compared
INEXACT = {"dowdall", "plurality", "optimality_gap", "promethee2", "topsis", "vikor", "geometric_mean",
           "relative_difference"}


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _values(rng: np.random.Generator, S: int, T: int, K: int, *, missing: str, n_nan: int = 2,
            pad: bool = True, kind: str = "int") -> np.ndarray:
    """Integer scores 0..3 (many ties) of shape (S, T, K) with a few missing cells and a padding judge.

    Under ``drop-judges`` the NaN cells avoid instance 0, so every task keeps a complete judge
    (a task whose judges are all dropped is the subject of separate tests); under ``listwise`` they
    fall on one system, so at least S - 1 systems stay ranked.
    """
    X = rng.integers(0, 4, size=(S, T, K)).astype(np.float64)
    if kind == "positive":
        X += 1.0
    elif kind == "unit":
        X /= 3.0
    if pad and K >= 3:  # ragged task: its last judge is padding (all systems NaN), not missing
        X[:, rng.integers(T), K - 1] = np.nan
    if missing == "listwise":
        s = rng.integers(S)
        for _ in range(n_nan):
            X[s, rng.integers(T), rng.integers(K)] = np.nan
    elif missing == "drop-judges" and K > 1:
        for _ in range(n_nan):
            X[rng.integers(S), rng.integers(T), rng.integers(1, K)] = np.nan
    return X


def _kind(rule: str) -> str:
    return "positive" if rule in POSITIVE else "unit" if rule in UNIT else "int"


def _scores(X: np.ndarray, rng: np.random.Generator, rule: str, **kw) -> xr.DataArray:
    T = X.shape[1]
    fixed = rule in POSITIVE | NON_NEGATIVE | UNIT
    hib = [True] * T if fixed else [bool(b) for b in rng.integers(0, 2, size=T)]
    return engine.scores_from_array(X, higher_is_better=hib, **kw)


def _options(rule: str, S: int) -> dict | None:
    return {"vector": list(range(S - 1, -1, -1))} if rule == "scoring" else None


def _outcome(fn):
    """``(True, value)`` or ``(False, VotebenchError)``; any other exception propagates."""
    try:
        return True, fn()
    except VotebenchError as exc:
        return False, exc


def _assert_same(ds: xr.Dataset, ref: np.ndarray, *, exact: bool = True) -> None:
    """Replicate scores equal to the reference up to summation order; ranks: its competition ranks.

    ``exact=False``: the ranks only have to agree on pairs whose reference scores differ by more than rounding.
    """
    got = np.asarray(ds["replicate_score"].values)
    assert got.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)
    ranks = ds["replicate_rank"].values
    if exact:
        np.testing.assert_array_equal(ranks, bf_min_rank(ref))
        return
    np.testing.assert_array_equal(ranks, bf_min_rank(got))
    with np.errstate(invalid="ignore"):
        d_ref = ref[:, :, None] - ref[:, None, :]
        d_got = got[:, :, None] - got[:, None, :]
    clear = np.abs(d_ref) > 1e-9 * (1.0 + np.abs(ref)[:, :, None])
    np.testing.assert_array_equal(np.sign(d_got)[clear], np.sign(d_ref)[clear])


def _expected_method(rule: str, over: str, level: str, *, weights=None) -> str:
    """The evaluation path the module docstring promises for a rule (no groups)."""
    r = engine.get_rule(rule)
    stat = "mean" if level == "task" else r.within
    positive = weights is None or isinstance(weights, str) or min(weights) > 0
    if over == "tasks":
        if level == "one":
            return "batched pooling" if stat is not None else "per-replicate evaluation"
        if level == "two" and r.within is None and r.resample == "loop":
            return "per-replicate evaluation"
        return {"weights": "task weights", "index": "batched kernel", "loop": "per-replicate kernel"}[r.resample]
    if over == "systems":
        if stat == "mean" and level != "one" and r.from_sums is not None and positive:
            return "pairwise matrix gather"
        if stat == "mean" and level != "one" and r.separable:
            return "full-data scores gathered"
        whole = weights is None or (not isinstance(weights, str) and all(float(v).is_integer() for v in weights))
        if stat == "mean" and level != "one" and rule in ("borda", "average_rank") and positive and whole:
            return "pairwise matrix x candidate counts"
        if stat == "mean":
            return "batched pooling" if level == "one" else "batched kernel"
        if stat == "borda":
            return "pairwise matrix x candidate counts"
        return "per-replicate evaluation"
    if stat is not None:
        return "instance counts x judge values"
    # a rule drawing random numbers per batch position (random_judge) is evaluated one replicate at a time
    return "per-replicate evaluation" if r.resample == "loop" else "resampled instances in one batched kernel call"


def _check_against_reference(s: xr.DataArray, *, over: str, replicates, seed: int, **kw) -> tuple[bool, xr.Dataset | None]:
    """bootstrap == reference when both work; a VotebenchError of one must be one of the other.

    Returns whether the comparison ran, and the (computed) bootstrap or the error.
    """
    ok_b, ds = _outcome(lambda: bootstrap(s, over=over, replicates=replicates, seed=seed, **kw).compute())
    ok_r, ref = _outcome(lambda: replicate_scores_reference(s, over=over, replicates=replicates, seed=seed, **kw))
    assert ok_b == ok_r, (f"bootstrap {'ran' if ok_b else 'raised: ' + str(ds)}, "
                          f"reference {'ran' if ok_r else 'raised: ' + str(ref)}")
    if not ok_b:
        return False, ds
    rules = {kw.get("rule") or "borda", kw.get("within") or "", kw.get("across") or ""}
    _assert_same(ds, ref, exact=not (rules & INEXACT))
    return True, ds


def _seed(*parts) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


# ------------------------------------------------------------------------------------------------
# 1. fast paths == brute force, every registered rule x axis x level
# ------------------------------------------------------------------------------------------------
#: rules whose kernels need complete data: at levels one/two they see the NaN rows of dropped judges and of
#: padding (as on the full data), so they get complete tensors there
COMPLETE = {"average_rank", "geometric_mean", "median", "optimality_gap", "promethee2", "topsis", "vikor"}


def _clean(rule: str, level: str) -> bool:
    """Complete data without padding: complete-data kernels, and random_judge at level one (it may draw padding)."""
    return level != "task" and (rule in COMPLETE or rule == "random_judge")


def _may_fail(rule: str, level: str) -> bool:
    """Requests that legitimately raise (the full-data ranking and the brute-force definition raise too)."""
    return rule == "relative_difference" and level == "two"  # the within-task relative difference is negative


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("rule", engine.rule_names())
def test_every_rule_axis_level_matches_brute_force(rule, over, level):
    rng = np.random.default_rng(_seed(rule, over, level))
    S, T = int(rng.integers(4, 8)), int(rng.integers(3, 6))
    K = int(rng.integers(2, 7)) if (over == "instances" or level != "task") else int(rng.integers(1, 7))
    missing = ("listwise", "drop-judges")[_seed(rule, level) % 2]
    clean = _clean(rule, level)
    s = _scores(_values(rng, S, T, K, missing="none" if clean else missing, pad=not clean, kind=_kind(rule)), rng, rule)
    kw = dict(rule=rule, level=level, missing=missing, options=_options(rule, S))
    method = _expected_method(rule, over, level)
    B = 2  # two replicates: a batch, with independent rows
    ran, ds = _check_against_reference(s, over=over, replicates=B, seed=int(rng.integers(1000)), **kw)
    if not ran:
        assert _may_fail(rule, level), f"{rule} over {over} at level {level} raised on valid data: {ds}"
        with pytest.raises(VotebenchError):
            engine.rank(s, **kw).compute()
        return
    assert ds.attrs["method"] == method
    assert ds.attrs["over"] == over and ds.attrs["level"] == level and ds.attrs["replicates"] == B


@pytest.mark.parametrize(
    "rule, over, level, method",
    [
        ("borda", "tasks", "two", "task weights"),
        ("borda", "tasks", "one", "batched pooling"),
        ("borda", "instances", "two", "instance counts x judge values"),
        ("borda", "instances", "one", "instance counts x judge values"),
        ("borda", "systems", "two", "pairwise matrix x candidate counts"),
        ("borda", "systems", "one", "pairwise matrix x candidate counts"),
        ("mean", "systems", "two", "full-data scores gathered"),
        ("median", "systems", "task", "full-data scores gathered"),
        ("topsis", "systems", "task", "batched kernel"),
        ("borda", "systems", "task", "pairwise matrix x candidate counts"),
        ("average_rank", "systems", "task", "pairwise matrix x candidate counts"),
        ("mean", "systems", "one", "batched pooling"),
        ("copeland", "tasks", "task", "task weights"),
        ("copeland", "systems", "task", "pairwise matrix gather"),
        ("success_rate", "systems", "two", "per-replicate evaluation"),
        ("copeland", "instances", "task", "instance counts x judge values"),
        ("copeland", "instances", "two", "resampled instances in one batched kernel call"),
        ("bradley_terry", "instances", "one", "resampled instances in one batched kernel call"),
        ("random_judge", "instances", "two", "per-replicate evaluation"),
        ("topsis", "tasks", "task", "batched kernel"),
        ("random_judge", "tasks", "task", "per-replicate kernel"),
        ("plurality", "instances", "two", "instance counts x judge values"),
    ],
)
def test_documented_fast_paths_are_taken(rule, over, level, method):
    rng = np.random.default_rng(_seed("path", rule, over, level))
    s = _scores(_values(rng, 5, 4, 5, missing="none"), rng, rule)
    ran, ds = _check_against_reference(s, over=over, replicates=6, seed=3, rule=rule, level=level)
    assert ran
    assert ds.attrs["method"] == method


_CASE = st.tuples(st.integers(4, 7), st.integers(3, 5), st.integers(1, 6), st.integers(0, 2**32 - 1))


@settings(max_examples=30, deadline=None)
@given(
    case=_CASE,
    rule=st.sampled_from(["borda", "mean", "copeland"]),
    over=st.sampled_from(OVER),
    level=st.sampled_from(LEVELS),
    missing=st.sampled_from(["listwise", "drop-judges"]),
    seed=st.integers(0, 10**6),
)
def test_property_borda_mean_copeland_match_brute_force(case, rule, over, level, missing, seed):
    S, T, K, data_seed = case
    if over == "instances":
        K = max(K, 2)
    rng = np.random.default_rng(data_seed)
    s = _scores(_values(rng, S, T, K, missing=missing, n_nan=int(rng.integers(0, 4))), rng, rule)
    kw = dict(rule=rule, level=level, missing=missing)
    ran, ds = _check_against_reference(s, over=over, replicates=3, seed=seed, **kw)
    assert ran, "valid data must not fail"
    assert ds.attrs["method"] == _expected_method(rule, over, ds.attrs["level"])


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("rule, weights", [("borda", [1.0, 2.0, 0.5, 1.0]), ("borda", [1.0, 2.0, 3.0, 1.0]),
                                           ("average_rank", [2.0, 1.0, 1.0, 3.0]), ("mean", [3.0, 1.0, 1.0, 0.0]),
                                           ("copeland", [1.0, 1.0, 2.0, 1.0]), ("copeland", [1.0, 0.0, 2.0, 1.0]),
                                           ("kemeny", [2.0, 1.0, 0.0, 1.0]),
                                           ("topsis", [0.5, 1.0, 1.0, 2.0]), ("borda", "groups")])
def test_task_weights_match_brute_force(rule, weights, over):
    rng = np.random.default_rng(_seed("weights", rule, over))
    missing = "listwise"
    X = _values(rng, 5, 4, 3, missing=missing, pad=rule not in COMPLETE)
    s = _scores(X, rng, rule, groups=["a", "a", "b", "c"])
    for level in ("task", "two"):
        ran, ds = _check_against_reference(s, over=over, replicates=3, seed=11, rule=rule, level=level,
                                           missing=missing, weights=weights)
        assert ran
        assert ds.attrs["method"] == _expected_method(rule, over, level, weights=weights)


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("rule, within, across", [("borda", None, None), ("mean", None, None),
                                                  ("copeland", None, None), (None, "borda", "copeland"),
                                                  (None, "mean", "kemeny")])
def test_groups_two_step_matches_brute_force(rule, within, across, over):
    rng = np.random.default_rng(_seed("groups", rule, within, across, over))
    X = _values(rng, 6, 5, 3, missing="drop-judges")
    s = _scores(X, rng, "borda", groups=["g1", "g1", "g2", "g2", "g3"])
    kw = dict(rule=rule or "borda", within=within, across=across, missing="drop-judges", groups=True)
    for level, weights in (("task", None), ("two", [1.0, 2.0, 1.0, 1.0, 0.5])):
        ran, _ = _check_against_reference(s, over=over, replicates=3, seed=5, level=level, weights=weights, **kw)
        assert ran


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("within, across", [("borda", "copeland"), ("mean", "borda"), ("copeland", "mean"),
                                            ("borda", "topsis")])
def test_within_across_two_step_matches_brute_force(within, across, over):
    rng = np.random.default_rng(_seed("two-step", within, across, over))
    missing = "listwise"
    s = _scores(_values(rng, 5, 4, 4, missing=missing, pad=across not in COMPLETE), rng, "borda")
    ran, ds = _check_against_reference(s, over=over, replicates=5, seed=2, within=within, across=across, level="two",
                                       missing=missing)
    assert ran
    assert ds.attrs["rule"] == f"{within}>{across}"


def test_per_task_options_follow_the_resampled_tasks():
    """A weights rule with one option per task: replicate b = the rule on the drawn tasks with their own options."""
    rng = np.random.default_rng(1)
    s = engine.scores_from_array(rng.integers(0, 4, size=(5, 4)).astype(float))
    prefs = ["usual", "linear_indifference", "usual", "vshape"]
    opts = {"preference": prefs, "p": 2.0, "q": 0.5}
    ds = bootstrap(s, rule="promethee2", over="tasks", replicates=4, seed=0, options=opts)
    assert ds.attrs["method"] == "task weights"
    for b in range(4):
        idx = resample_indices(4, seed=0, replicates=[b], stream="tasks")[0]
        r = resampled_scores(s, over="tasks", replicate=b, seed=0)
        ref = engine.aggregate(r, rule="promethee2", options={**opts, "preference": [prefs[i] for i in idx]})
        np.testing.assert_allclose(ds["replicate_score"].values[b], ref.values, rtol=1e-12, atol=1e-12)


def test_reference_resamples_per_task_options():
    rng = np.random.default_rng(1)
    s = engine.scores_from_array(rng.integers(0, 4, size=(5, 4)).astype(float))
    opts = {"preference": ["usual", "linear_indifference", "usual", "vshape"], "p": 2.0, "q": 0.5}
    ds = bootstrap(s, rule="promethee2", over="tasks", replicates=4, seed=0, options=opts)
    ref = replicate_scores_reference(s, rule="promethee2", over="tasks", replicates=4, seed=0, options=opts)
    np.testing.assert_allclose(ds["replicate_score"].values, ref, rtol=1e-12, atol=1e-12)


def test_scoring_vector_with_as_many_systems_as_tasks():
    """An option list as long as the task axis (one entry per system here) is not a per-task option."""
    rng = np.random.default_rng(4)
    s = engine.scores_from_array(rng.integers(0, 4, size=(4, 4)).astype(float))
    opts = {"vector": [3.0, 2.0, 1.0, 0.0]}
    ran, ds = _check_against_reference(s, over="tasks", replicates=4, seed=0, rule="scoring", options=opts)
    assert ran and ds.attrs["method"] == "batched kernel"


def test_per_task_options_of_an_index_rule_are_fine_over_systems():
    rng = np.random.default_rng(2)
    s = engine.scores_from_array(rng.integers(0, 4, size=(5, 4)).astype(float))
    ran, ds = _check_against_reference(s, over="systems", replicates=4, seed=0, rule="topsis",
                                       options={"maximize": [True, False, True, True]})
    assert ran and ds.attrs["method"] == "batched kernel"


def test_system_copies_share_a_score_and_undrawn_systems_are_nan():
    rng = np.random.default_rng(3)
    s = engine.scores_from_array(rng.integers(0, 4, size=(6, 4, 3)).astype(float))
    ds = bootstrap(s, rule="borda", over="systems", replicates=8, seed=4)
    idx = resample_indices(6, seed=4, replicates=8, stream="systems")
    for b in range(8):
        drawn = np.isin(np.arange(6), idx[b])
        np.testing.assert_array_equal(~np.isnan(ds["replicate_score"].values[b]), drawn)
        np.testing.assert_array_equal(~np.isnan(ds["replicate_rank"].values[b]), drawn)


# ------------------------------------------------------------------------------------------------
# tasks left without judges by drop-judges
# ------------------------------------------------------------------------------------------------
def _judgeless_task_scores() -> xr.DataArray:
    """t1 misses s0 on every instance: under drop-judges it keeps no judge (the full-data ranking works)."""
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(4, 3, 2)).astype(float)
    X[0, 1, :] = np.nan
    return engine.scores_from_array(X)


@pytest.mark.parametrize("over", ["systems", "instances"])
def test_fallback_with_a_task_left_without_judges(over):
    s = _judgeless_task_scores()
    engine.rank(s, rule="copeland", level="two", missing="drop-judges").compute()  # works
    ds = bootstrap(s, rule="copeland", over=over, level="two", replicates=3, seed=0, missing="drop-judges")
    assert ds.attrs["method"] == ("per-replicate evaluation" if over == "systems"
                                  else "resampled instances in one batched kernel call")
    assert np.isfinite(ds["replicate_score"].values).any()
    ref = replicate_scores_reference(s, rule="copeland", over=over, level="two", replicates=3, seed=0,
                                     missing="drop-judges")
    _assert_same(ds, ref)


def test_reference_with_a_task_left_without_judges():
    s = _judgeless_task_scores()
    ds = bootstrap(s, rule="borda", over="tasks", level="two", replicates=3, seed=0, missing="drop-judges")
    ref = replicate_scores_reference(s, rule="borda", over="tasks", level="two", replicates=3, seed=0,
                                     missing="drop-judges")
    _assert_same(ds, ref)


@pytest.mark.parametrize("rule, level", [("mean", "task"), ("borda", "task"), ("copeland", "two"), ("borda", "one")])
def test_replicate_drawing_only_judgeless_tasks_raises_like_aggregate(rule, level):
    X = np.array([[1, np.nan, 2], [2, 1, np.nan], [0, 2, 1], [3, 0, 0]], float)  # t1, t2 lose their judges
    s = engine.scores_from_array(np.repeat(X[..., None], 2, axis=-1))
    idx = resample_indices(3, seed=0, replicates=60, stream="tasks")
    b = next(b for b in range(60) if 0 not in idx[b])  # only t1 / t2 drawn
    # the definition on the raw resampled tensor: no judge left
    with pytest.raises(VotebenchError, match="no task has complete scores"):
        engine.aggregate(resampled_scores(s, over="tasks", replicate=b, seed=0), rule=rule, level=level,
                         missing="drop-judges").compute()
    with pytest.raises(VotebenchError):
        bootstrap(s, rule=rule, over="tasks", level=level, replicates=[b], seed=0, missing="drop-judges").compute()


def _system_draws(X: np.ndarray, *, seed: int, replicates: int) -> np.ndarray:
    """Candidate draws: n draws with replacement among the n systems that have some score (brute force)."""
    pos = np.flatnonzero(~np.isnan(X).all(axis=(1, 2)))
    return pos[resample_indices(pos.size, seed=seed, replicates=replicates, stream="systems")]


@pytest.mark.parametrize("rule, level", [("borda", "task"), ("borda", "two"), ("borda", "one"), ("mean", "two"),
                                         ("mean", "one"), ("copeland", "task"), ("kemeny", "two"), ("plurality", "two"),
                                         ("topsis", "task"), ("baldwin", "task"), ("average_rank", "task")])
def test_listwise_system_bootstrap_never_draws_dropped_systems(rule, level):
    rng = np.random.default_rng(12)
    X = rng.integers(0, 4, size=(6, 4, 2)).astype(float)
    X[0, 2, 1] = np.nan  # listwise drops s0
    s = engine.scores_from_array(X)
    ran, ds = _check_against_reference(s, over="systems", replicates=6, seed=3, rule=rule, level=level,
                                       missing="listwise")
    assert ran and ds.attrs["method"] == _expected_method(rule, "systems", level)
    Xl = np.where(np.isnan(X).any(axis=(1, 2))[:, None, None], np.nan, X)
    draws = _system_draws(Xl, seed=3, replicates=6)
    assert (draws > 0).all()
    for b in range(6):
        np.testing.assert_array_equal(~np.isnan(ds["replicate_score"].values[b]), np.isin(np.arange(6), draws[b]))


# ------------------------------------------------------------------------------------------------
# 2. chunk, block and worker invariance
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tensor() -> xr.DataArray:
    rng = np.random.default_rng(42)
    X = _values(rng, 5, 4, 6, missing="drop-judges", n_nan=4)
    return engine.scores_from_array(X, higher_is_better=[True, False, True, True])


_PATHS = [  # (rule, over, level): every evaluation path
    ("borda", "tasks", "two"), ("mean", "tasks", "one"), ("topsis", "tasks", "task"), ("borda", "systems", "two"),
    ("mean", "systems", "one"), ("copeland", "systems", "task"), ("borda", "instances", "two"),
    ("mean", "instances", "one"), ("copeland", "instances", "two"),
]
_CHUNKINGS = [({"task": 1, "instance": 2}, None), ({"task": 2, "instance": 4}, 1), ({"task": 3, "instance": 5}, 3)]


@pytest.mark.parametrize("i", range(len(_PATHS)))
def test_same_replicates_for_any_chunking_and_block(tensor, i):
    """Exact equality: integer scores make every sum exact whatever its order."""
    rule, over, level = _PATHS[i]
    kw = dict(rule=rule, over=over, level=level, missing="drop-judges", replicates=7, seed=9)
    ref = bootstrap(tensor, **kw)
    want = ref["replicate_score"].values
    assert isinstance(want, np.ndarray)
    for chunks, block in (_CHUNKINGS[i % 3], _CHUNKINGS[(i + 1) % 3]):
        got = bootstrap(tensor.chunk(chunks), block=block, **kw)
        assert got.attrs["method"] == ref.attrs["method"]
        got = got.compute()
        np.testing.assert_array_equal(got["replicate_score"].values, want, err_msg=f"{chunks} block={block}")
        np.testing.assert_array_equal(got["replicate_rank"].values, ref["replicate_rank"].values)
        np.testing.assert_array_equal(got["score"].values, ref["score"].values)
    for block in (1, 2, 5):
        np.testing.assert_array_equal(bootstrap(tensor, block=block, **kw)["replicate_score"].values, want)


def test_same_replicates_on_one_thread_and_two_workers(tensor):
    from distributed import Client, LocalCluster

    lazy = tensor.chunk({"task": 2, "instance": 3})
    cases = [("borda", "instances", "two"), ("borda", "systems", "one"), ("copeland", "instances", "two")]
    with dask.config.set(scheduler="threads", num_workers=1):
        one = [bootstrap(lazy, rule=r, over=o, level=lv, missing="drop-judges", replicates=12, seed=1, block=2)
               .compute() for r, o, lv in cases]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        for (r, o, lv), want in zip(cases, one):
            ds = bootstrap(lazy, rule=r, over=o, level=lv, missing="drop-judges", replicates=12, seed=1, block=2)
            got = client.compute(ds).result()
            np.testing.assert_array_equal(got["replicate_score"].values, want["replicate_score"].values)
            np.testing.assert_array_equal(got["score"].values, want["score"].values)


# ------------------------------------------------------------------------------------------------
# 3. replicates are reproducible one by one; seeds and axes give independent draws
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule, over, level", _PATHS)
def test_one_replicate_recomputed_alone_equals_its_row(tensor, rule, over, level):
    kw = dict(rule=rule, over=over, level=level, missing="drop-judges", seed=13)
    full = bootstrap(tensor, replicates=10, **kw)
    alone = bootstrap(tensor, replicates=[7], **kw)
    np.testing.assert_array_equal(alone["replicate_score"].values[0], full["replicate_score"].values[7])
    assert alone["replicate"].values.tolist() == [7]
    some = bootstrap(tensor, replicates=[9, 2, 7], **kw)
    np.testing.assert_array_equal(some["replicate_score"].values, full["replicate_score"].values[[9, 2, 7]])
    np.testing.assert_array_equal(some["replicate_rank"].values, full["replicate_rank"].values[[9, 2, 7]])


@pytest.mark.parametrize("over", OVER)
def test_different_seeds_give_different_replicates(tensor, over):
    a = bootstrap(tensor, rule="borda", over=over, replicates=10, seed=0, missing="drop-judges")
    b = bootstrap(tensor, rule="borda", over=over, replicates=10, seed=1, missing="drop-judges")
    ra, rb = a["replicate_score"].values, b["replicate_score"].values
    assert not np.array_equal(ra, rb, equal_nan=True)
    np.testing.assert_array_equal(a["score"].values, b["score"].values)  # the point estimate does not depend on it
    assert sum(np.array_equal(x, y, equal_nan=True) for x, y in zip(ra, rb)) <= 2


def test_axes_use_independent_streams():
    """With as many tasks as systems, the task and system draws of a replicate are unrelated."""
    n, B = 6, 30
    s = engine.scores_from_array(np.arange(n * n * 3, dtype=float).reshape(n, n, 3))
    task_draws, system_draws = [], []
    for b in range(B):
        rt = resampled_scores(s, over="tasks", replicate=b, seed=5)
        rs = resampled_scores(s, over="systems", replicate=b, seed=5)
        task_draws.append([int(str(t).split("#")[0][1:]) for t in rt["task"].values])
        system_draws.append([int(str(x).split("#")[0][1:]) for x in rs["system"].values])
    same = sum(a == b for a, b in zip(task_draws, system_draws))
    assert same <= 1
    np.testing.assert_array_equal(task_draws, resample_indices(n, seed=5, replicates=B, stream="tasks"))
    np.testing.assert_array_equal(system_draws, resample_indices(n, seed=5, replicates=B, stream="systems"))
    # instance draws: counts of the instances stream, not a reuse of the task draw
    counts = instance_counts(np.ones((n, 3), bool), seed=5, replicates=B)
    for b in range(B):
        r = resampled_scores(s, over="instances", replicate=b, seed=5)
        for t in range(n):
            got = np.sort(r.values[0, t])
            want = np.repeat(s.values[0, t], counts[b, t].astype(int))
            np.testing.assert_array_equal(got, want)
    # and bootstrap's replicates follow these draws: the task bootstrap of replicate b is the rule on rt
    ds = bootstrap(s, rule="borda", over="tasks", replicates=[3], seed=5)
    np.testing.assert_array_equal(ds["replicate_score"].values[0],
                                  engine.aggregate(resampled_scores(s, over="tasks", replicate=3, seed=5)).values)


# ------------------------------------------------------------------------------------------------
# 4. laziness
# ------------------------------------------------------------------------------------------------
def test_bootstrap_on_dask_scores_computes_nothing_until_asked(tensor):
    lazy = tensor.chunk({"task": 1, "instance": 2})
    built = {}
    counter = _CountStarts()
    with dask.config.set(scheduler=_forbid_compute), counter:
        for rule, over, level in _PATHS:
            ds = bootstrap(lazy, rule=rule, over=over, level=level, missing="drop-judges", replicates=6, seed=2)
            for name in ("score", "rank", "replicate_score", "replicate_rank"):
                assert isinstance(ds[name].data, dsa.Array), (rule, over, level, name)
            built[rule, over, level] = ds
    assert counter.n == 0
    for (rule, over, level), ds in built.items():
        want = bootstrap(tensor, rule=rule, over=over, level=level, missing="drop-judges", replicates=6, seed=2)
        got = ds.compute()
        np.testing.assert_array_equal(got["replicate_score"].values, want["replicate_score"].values)
        np.testing.assert_array_equal(got["rank"].values, want["rank"].values)


def test_numpy_scores_give_numpy_results(tensor):
    ds = bootstrap(tensor, rule="borda", over="instances", replicates=3, seed=0, missing="drop-judges")
    assert all(isinstance(ds[v].data, np.ndarray) for v in ("score", "rank", "replicate_score", "replicate_rank"))


# ------------------------------------------------------------------------------------------------
# 5. the point estimate is the full-data ranking
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("rule", ["borda", "mean", "copeland"])
def test_point_estimate_is_the_full_data_ranking(rule, over):
    X = np.array([[4, 5, 7, 9, 0], [1, 8, 9, 2, 3], [8, 4, 2, 8, 2], [4, 6, 5, 0, 0]], float)
    if over == "instances":
        X = np.stack([X, X[:, ::-1], X + 1], axis=-1)
    s = engine.scores_from_array(X)
    ds = bootstrap(s, rule=rule, over=over, replicates=40, seed=3)
    full = engine.rank(s, rule=rule)
    np.testing.assert_array_equal(ds["score"].values, full["score"].values)
    np.testing.assert_array_equal(ds["rank"].values, full["rank"].values)
    np.testing.assert_array_equal(ds["rank"].values, bf_min_rank(full["score"].values))
    if over == "tasks":  # here the bootstrap median rank differs, so the test tells them apart
        med = np.nanmedian(ds["replicate_rank"].values, axis=0)
        assert not np.array_equal(med, ds["rank"].values)


# ------------------------------------------------------------------------------------------------
# 6. summarize and stability
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("level", [0.95, 0.5])
def test_summarize_against_loops(tensor, over, level):
    ds = bootstrap(tensor, rule="borda", over=over, replicates=25, seed=8, missing="drop-judges")
    sm = summarize(ds, level=level)
    R = ds["replicate_score"].values
    ranks = ds["replicate_rank"].values
    B, S = R.shape
    for i in range(S):
        r = ranks[~np.isnan(ranks[:, i]), i]
        v = sorted(r)  # the replicate ranks at either side of the percentile positions, not interpolated
        lo, hi = v[math.floor((len(v) - 1) * (1 - level) / 2)], v[math.ceil((len(v) - 1) * (1 + level) / 2)]
        assert sm["rank_low"].values[i] == pytest.approx(lo)
        assert sm["rank_high"].values[i] == pytest.approx(hi)
        assert 1 <= sm["rank_low"].values[i] <= sm["rank_high"].values[i] <= S
    np.testing.assert_allclose(sm["rank_low"].values, np.nanpercentile(ranks, 50 * (1 - level), axis=0, method="lower"))
    np.testing.assert_allclose(sm["rank_high"].values, np.nanpercentile(ranks, 50 * (1 + level), axis=0, method="higher"))
    assert np.array_equal(sm["rank_low"].values, np.round(sm["rank_low"].values))  # integer ranks
    assert np.array_equal(sm["rank_high"].values, np.round(sm["rank_high"].values))
    P = np.full((S, S), np.nan)
    for i in range(S):
        for j in range(S):
            both = [b for b in range(B) if not np.isnan(R[b, i]) and not np.isnan(R[b, j])]
            if both:
                P[i, j] = sum(R[b, i] > R[b, j] for b in both) / len(both)
    np.testing.assert_allclose(sm["prob_above"].values, P, equal_nan=True)
    point = ds["score"].values
    leaders = point == np.nanmax(point)
    tied = sm["tied_with_leader"].values
    assert tied[leaders].all()
    for j in range(S):
        want = leaders[j] or any(not (P[lead, j] >= level) for lead in np.flatnonzero(leaders))
        assert tied[j] == want
    np.testing.assert_array_equal(sm["score"].values, ds["score"].values)
    np.testing.assert_array_equal(sm["rank"].values, ds["rank"].values)
    assert float(sm["mean_spearman"]) == pytest.approx(float(metrics.concordance(R, method="spearman")), nan_ok=True)
    assert float(sm["mean_kendall"]) == pytest.approx(float(metrics.concordance(R, method="kendall")), nan_ok=True)
    assert stability(ds) == pytest.approx(float(sm["mean_spearman"]), nan_ok=True)
    assert stability(ds, method="kendall") == pytest.approx(float(sm["mean_kendall"]), nan_ok=True)
    everywhere = ~np.isnan(R).any(axis=0)
    w = float(metrics.kendall_w(R[:, everywhere])) if everywhere.sum() >= 2 else np.nan
    assert float(sm["kendall_w"]) == pytest.approx(w, nan_ok=True)
    assert sm.attrs["interval_level"] == level and sm.attrs["over"] == over


def test_summarize_of_a_lazy_bootstrap_equals_the_eager_one(tensor):
    kw = dict(rule="borda", over="instances", replicates=10, seed=1, missing="drop-judges")
    eager = summarize(bootstrap(tensor, **kw))
    lazy = summarize(bootstrap(tensor.chunk({"task": 1}), **kw))
    xr.testing.assert_identical(eager, lazy)


@pytest.mark.parametrize("over", OVER)
def test_dominating_system_has_interval_one_and_no_tie(over):
    rng = np.random.default_rng(6)
    X = rng.integers(0, 5, size=(5, 4, 4)).astype(float)
    X[2] = 10.0  # s2 is best on every judge
    s = engine.scores_from_array(X)
    for rule in ("borda", "mean", "copeland"):
        sm = summarize(bootstrap(s, rule=rule, over=over, replicates=25, seed=0))
        assert sm["rank"].values[2] == 1
        assert (sm["rank_low"].values[2], sm["rank_high"].values[2]) == (1.0, 1.0)
        assert sm["tied_with_leader"].values.tolist() == [False, False, True, False, False]
        others = np.delete(sm["prob_above"].values[2], 2)
        np.testing.assert_array_equal(others, 1.0)
        np.testing.assert_array_equal(np.delete(sm["prob_above"].values[:, 2], 2), 0.0)
        if over != "systems":  # (a system bootstrap may leave s2 out, and then another system leads)
            assert (np.delete(sm["rank_low"].values, 2) >= 2).all()


def test_stability_is_one_when_every_replicate_agrees():
    X = np.tile(np.array([[4.0], [3.0], [2.0], [1.0]]), (1, 5))  # same order on every task
    ds = bootstrap(engine.scores_from_array(X), rule="borda", over="tasks", replicates=10, seed=0)
    sm = summarize(ds)
    assert float(sm["kendall_w"]) == 1.0 and float(sm["mean_spearman"]) == 1.0 and stability(ds, method="kendall") == 1.0
    np.testing.assert_array_equal(sm["rank_low"].values, [1, 2, 3, 4])
    np.testing.assert_array_equal(sm["rank_high"].values, [1, 2, 3, 4])


# ------------------------------------------------------------------------------------------------
# 7. errors
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small() -> xr.DataArray:
    return engine.scores_from_array(np.array([[1.0, 9, 3], [2, 8, 4], [3, 7, 5]]))


def test_unknown_axis_is_refused(small):
    with pytest.raises(VotebenchError, match=r"unknown resampling axis 'judges'.*tasks, systems, instances"):
        bootstrap(small, over="judges")
    with pytest.raises(VotebenchError, match="unknown resampling axis"):
        resampled_scores(small, over="rows", replicate=0, seed=0)


@pytest.mark.parametrize("seed", [-1, 1.5, None, "3"])
def test_bad_seed_is_refused(small, seed):
    with pytest.raises(VotebenchError, match="seed must be a non-negative integer"):
        bootstrap(small, seed=seed)


def test_instance_bootstrap_needs_instance_level_data(small):
    with pytest.raises(VotebenchError, match="instance bootstrap needs instance-level scores"):
        bootstrap(small, over="instances")


@pytest.mark.parametrize("rule, options", [("topsis", {"maximize": [True, False, True]}),
                                           ("vikor", {"maximize": [True, True, False]})])
def test_per_task_options_of_an_index_rule_over_tasks_are_refused(small, rule, options):
    with pytest.raises(VotebenchError, match=rf"per-task option\(s\) maximize cannot follow resampled tasks.*{rule}"):
        bootstrap(small, rule=rule, over="tasks", options=options)


def test_bad_block_and_interval_level_are_refused(small):
    with pytest.raises(VotebenchError, match="block size must be >= 1"):
        bootstrap(small, block=0)
    ds = bootstrap(small, replicates=5)
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(VotebenchError, match="interval level must be in"):
            summarize(ds, level=level)


@pytest.mark.parametrize("replicates", [-1, [3, -2]])
def test_negative_replicates_are_refused(small, replicates):
    with pytest.raises(VotebenchError, match="replicate"):
        bootstrap(small, replicates=replicates)


def test_rule_errors_are_votebench_errors(small):
    with pytest.raises(VotebenchError, match="unknown rule"):
        bootstrap(small, rule="nope")
    with pytest.raises(VotebenchError, match="unknown level"):
        bootstrap(small, level="three")


@pytest.mark.parametrize("rule", ["mean", "average_rank", "copeland"])
def test_pavao_stability_matches_per_trial_brute_force(rule):
    """Trial k = replicates k*R .. (k+1)*R - 1 of one seed; stability = mean Spearman over pairs, common systems."""
    from scipy.stats import spearmanr

    from engine.labelled.bootstrap import pavao_stability

    rng = np.random.default_rng(42)
    s = engine.scores_from_array(rng.integers(0, 4, size=(7, 6)).astype(float))
    trials, R = 3, 5
    ds = pavao_stability(s, rule=rule, trials=trials, replicates=R, seed=9)
    for over, name in (("tasks", "judge_stability"), ("systems", "candidate_stability")):
        ref = replicate_scores_reference(s, over=over, replicates=trials * R, seed=9, rule=rule)
        for k in range(trials):
            rows = ref[k * R : (k + 1) * R]
            vals = []
            for i in range(R):
                for j in range(i + 1, R):
                    both = ~np.isnan(rows[i]) & ~np.isnan(rows[j])
                    a, b = rows[i][both], rows[j][both]
                    if both.sum() >= 2 and np.ptp(a) > 0 and np.ptp(b) > 0:
                        vals.append(spearmanr(a, b).statistic)
            expected = np.mean(vals) if vals else np.nan
            np.testing.assert_allclose(ds[name].values[k], expected, rtol=1e-12, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(ds[f"{name}_mean"].values, np.nanmean(ds[name].values), rtol=1e-12)


@pytest.mark.parametrize("over", ["tasks", "systems"])
@pytest.mark.parametrize("rule", ["borda", "average_rank", "mean", "median", "copeland"])
def test_identical_systems_tie_in_every_replicate_under_fractional_weights(rule, over):
    """Two systems with the same scores on every task tie in every replicate, for non-dyadic weights too,
    and the result does not depend on the block size (real-valued scores)."""
    rng = np.random.default_rng(_seed("twins", rule, over))
    X = rng.normal(size=(6, 5))
    X[4] = X[1]
    s = engine.scores_from_array(X)
    w = None if rule == "median" else [0.1, 0.7, 1 / 3, 0.3, 0.9]
    ds = bootstrap(s, rule=rule, over=over, replicates=24, seed=1, weights=w)
    R = ds["replicate_score"].values
    both = ~np.isnan(R[:, 1]) & ~np.isnan(R[:, 4])
    assert both.any()
    np.testing.assert_array_equal(R[both, 1], R[both, 4])
    np.testing.assert_array_equal(ds["replicate_rank"].values[both, 1], ds["replicate_rank"].values[both, 4])
    one = bootstrap(s, rule=rule, over=over, replicates=24, seed=1, weights=w, block=1)
    np.testing.assert_array_equal(one["replicate_score"].values, R)
    np.testing.assert_allclose(R, replicate_scores_reference(s, rule=rule, over=over, replicates=24, seed=1, weights=w),
                               rtol=1e-12, atol=1e-12)


def test_task_replicate_of_only_zero_weight_tasks_raises():
    X = np.array([[1.0, 2.0, 0.0], [2.0, 0.0, 1.0], [0.0, 1.0, 2.0]])
    s = engine.scores_from_array(X)
    idx = resample_indices(3, seed=0, replicates=200, stream="tasks")
    b = next(b for b in range(200) if set(idx[b]) == {2})  # draws only the zero-weight task
    with pytest.raises(VotebenchError, match=f"replicate {b}"):
        bootstrap(s, rule="borda", over="tasks", replicates=[b], seed=0, weights=[1.0, 1.0, 0.0])


def test_pavao_stability_rejects_bad_options_before_work():
    from engine.labelled.bootstrap import pavao_stability

    s = engine.scores_from_array(np.arange(12.0).reshape(4, 3))
    for kw in ({"method": "pearson"}, {"trials": 2.5}, {"replicates": 1}):
        with pytest.raises(VotebenchError):
            pavao_stability(s, rule="mean", **kw)
