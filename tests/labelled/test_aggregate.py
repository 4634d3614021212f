"""engine.aggregate / engine.rank (and the across-task kernels) vs brute-force references.

Covers: the rules mean and borda at levels task / one / two, the missing-score
policies, ragged tensors, hand-worked examples from the papers, the axioms Borda
must satisfy, and the dask path (same results for any chunking, nothing computed
until asked).
"""

from __future__ import annotations

import re

import dask
import dask.array as dsa
import numpy as np
import pytest
import xarray as xr
from conftest import (
    COLOMBO_T1_RANKS,
    COLOMBO_T1_SUM,
    COLOMBO_T1_VALUES,
    LEVELS,
    PAPERS,
    POLICIES,
    RULES,
    TIE_VALUES,
    VNR_BORDA,
    VNR_TABLE6,
    ExpectedError,
    bf_aggregate,
    bf_borda_across,
    bf_mean_across,
    bf_min_rank,
    cases,
    check_expected_error,
    continuous_case,
    tie_case,
)
from conftest import (
    CountStarts as _CountStarts,
)
from conftest import (
    forbid_compute as _forbid_compute,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import engine
from engine.kernels.aggregate import borda_across, mean_across


def run(scores, **opts):
    """engine.aggregate -> numpy values, or the VotebenchError it raised."""
    try:
        return engine.aggregate(scores, **opts).values
    except engine.VotebenchError as exc:
        return exc


def assert_same(got, expected, *, rule: str, exact: bool | None = None):
    """Compare an engine result with a reference result (array or ExpectedError)."""
    if isinstance(expected, ExpectedError):
        assert isinstance(got, BaseException), f"expected an error ({expected.kind}), got {got}"
        check_expected_error(got, expected)
        return
    if isinstance(expected, BaseException):  # the engine's own error on equivalent input
        assert isinstance(got, engine.VotebenchError), f"expected {expected!r}, got {got}"
        assert str(got) == str(expected)
        return
    assert not isinstance(got, BaseException), f"unexpected error: {got}"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    if exact if exact is not None else rule == "borda":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# across-task kernels (pure numpy)
# ---------------------------------------------------------------------------------------------
MATRIX = arrays(
    np.float64,
    st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5)),
    elements=st.sampled_from((np.nan,) + TIE_VALUES),
)
WEIGHTS = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])


@given(MATRIX, st.data())
@settings(max_examples=60, deadline=None)
def test_across_kernels_match_brute_force_with_batch_axis_and_weights(X, data):
    B, T, S = X.shape
    w = data.draw(arrays(np.float64, (B, T), elements=WEIGHTS))
    got_mean = mean_across(X, weights=w)
    got_borda = borda_across(X, weights=w)
    assert got_mean.shape == got_borda.shape == (B, S)
    for b in range(B):
        np.testing.assert_allclose(got_mean[b], bf_mean_across(X[b], w[b]), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got_borda[b], bf_borda_across(X[b], w[b]))
    # default weights are ones; a (T,) weight vector broadcasts over the batch
    for b in range(B):
        np.testing.assert_array_equal(borda_across(X)[b], bf_borda_across(X[b]))
        np.testing.assert_allclose(mean_across(X, weights=w[0])[b], bf_mean_across(X[b], w[0]), rtol=1e-12, atol=1e-12)


def test_across_kernels_reject_wrong_weight_shape():
    X = np.zeros((3, 4))
    for kernel in (mean_across, borda_across):
        with pytest.raises(ValueError, match="3 task weights"):
            kernel(X, weights=np.ones(4))


def test_borda_across_colombo_table1_docstring_numbers_from_ranks():
    """Colombo et al. 2022, Table 1, lower is better: Borda points per task = 3 - rank."""
    X = np.array([COLOMBO_T1_VALUES[s] for s in "ABC"], dtype=float).T  # (T, S)
    expected = [sum(3 - r for r in COLOMBO_T1_RANKS[s]) for s in "ABC"]
    np.testing.assert_array_equal(borda_across(-X), expected)


# ---------------------------------------------------------------------------------------------
# engine.aggregate vs the brute-force reference (all rules, levels, missing policies)
# ---------------------------------------------------------------------------------------------
CONFIGS = st.tuples(st.sampled_from(RULES), st.sampled_from(LEVELS), st.sampled_from(POLICIES))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("rule", RULES)
@given(case=cases(), missing=st.sampled_from(POLICIES))
@settings(max_examples=45, deadline=None)
def test_aggregate_matches_brute_force(rule, level, case, missing):
    expected = bf_aggregate(case.values, case.hib, rule=rule, level=level, missing=missing)
    got = run(case.scores(), rule=rule, level=level, missing=missing)
    assert_same(got, expected, rule=rule)


@given(case=cases(missing=False, min_k=2), rule=st.sampled_from(RULES), level=st.sampled_from(LEVELS))
@settings(max_examples=40, deadline=None)
def test_ragged_padding_is_not_missing(case, rule, level):
    """All-NaN judges (padding) need no policy, and the policies do not change the result."""
    scores = case.scores()
    assert int(engine.missing_report(scores).sum()) == 0
    base = run(scores, rule=rule, level=level)
    assert_same(base, bf_aggregate(case.values, case.hib, rule=rule, level=level), rule=rule)
    for missing in ("listwise", "drop-judges"):
        assert_same(run(scores, rule=rule, level=level, missing=missing), base, rule=rule)


@given(case=cases())
@settings(max_examples=40, deadline=None)
def test_missing_report_counts_nan_inside_judges_only(case):
    rep = engine.missing_report(case.scores())
    assert rep.dims == ("system", "task")
    S, T, K = case.values.shape
    for s in range(S):
        for t in range(T):
            n = 0
            for k in range(K):
                judged = any(not np.isnan(case.values[j, t, k]) for j in range(S))
                n += judged and np.isnan(case.values[s, t, k])
            assert int(rep.values[s, t]) == n


@given(case=cases(), rule=st.sampled_from(RULES), missing=st.sampled_from(["listwise", "drop-judges"]))
@settings(max_examples=40, deadline=None)
def test_rank_is_one_plus_strictly_better(case, rule, missing):
    try:
        ds = engine.rank(case.scores(), rule=rule, level="two", missing=missing)
    except engine.VotebenchError:
        return
    assert {"score", "rank"} <= set(ds.data_vars)
    np.testing.assert_array_equal(ds["rank"].values, bf_min_rank(ds["score"].values))
    assert ds.attrs["rule"] == rule and ds.attrs["level"] == "two" and ds.attrs["missing"] == missing
    if rule == "borda":
        ref = bf_aggregate(case.values, case.hib, rule=rule, level="two", missing=missing)
        np.testing.assert_array_equal(ds["rank"].values, bf_min_rank(ref))


@given(case=cases(max_k=1, missing=False), rule=st.sampled_from(RULES))
@settings(max_examples=25, deadline=None)
def test_levels_coincide_for_task_level_data(case, rule):
    scores = case.scores()
    res = [run(scores, rule=rule, level=lvl) for lvl in LEVELS]
    for r in res[1:]:
        assert_same(r, res[0], rule=rule)
    assert_same(run(scores, rule=rule), res[0], rule=rule)  # default level


@given(case=cases(missing=False, ragged=False), data=st.data())
@settings(max_examples=25, deadline=None)
def test_task_weights_match_brute_force(case, data):
    scores = case.scores()
    T = case.values.shape[1]
    w = data.draw(arrays(np.float64, (T,), elements=st.sampled_from([0.5, 1.0, 2.0, 3.0])))
    oriented = case.values * np.where(case.hib, 1.0, -1.0)[None, :, None]
    M = oriented.mean(axis=2).T  # per-task means (T, S)
    names = {f"t{t}": w[t] for t in range(T)}
    for rule, bf in (("mean", bf_mean_across), ("borda", bf_borda_across)):
        got = engine.aggregate(scores, rule=rule, level="task", weights=names).values
        np.testing.assert_allclose(got, bf(M, w), rtol=1e-12, atol=1e-12)
        got_seq = engine.aggregate(scores, rule=rule, level="task", weights=list(w)).values
        np.testing.assert_array_equal(got_seq, got)


def test_default_level_is_two_for_instance_data_and_task_otherwise():
    inst = tie_case(0, shape=(4, 2, 3)).scores()
    task = tie_case(0, shape=(4, 2, 1)).scores()
    assert engine.aggregate(inst).attrs["level"] == "two"
    assert engine.aggregate(task).attrs["level"] == "task"
    out = engine.aggregate(inst, rule="mean", level="one")
    assert out.name == "score" and out.dims == ("system",)
    assert out.attrs == {"rule": "mean", "level": "one", "missing": "error"}
    assert list(out["system"].values) == list(inst["system"].values)


def test_unknown_options_raise_votebench_error():
    s = tie_case(0, shape=(3, 2, 2)).scores()
    with pytest.raises(engine.VotebenchError, match=r"unknown rule 'nope'.*borda.*mean"):
        engine.aggregate(s, rule="nope")
    with pytest.raises(engine.VotebenchError, match=r"unknown level 'three'"):
        engine.aggregate(s, level="three")
    with pytest.raises(engine.VotebenchError, match=r"unknown missing-score policy 'ignore'"):
        engine.aggregate(s, missing="ignore")
    with pytest.raises(engine.VotebenchError, match="weights"):
        engine.aggregate(s, weights={"no-such-task": 1.0})
    with pytest.raises(engine.VotebenchError):
        engine.aggregate(s.values)  # not a DataArray


def test_missing_error_message_names_count_and_where():
    X = np.arange(24, dtype=float).reshape(4, 3, 2)
    X[1, 2, 0] = np.nan
    X[3, 2, 1] = np.nan
    X[3, 0, 0] = np.nan
    s = engine.scores_from_array(X, systems=["a", "b", "c", "d"], tasks=["x", "y", "z"])
    for rule in RULES:
        for level in LEVELS:
            with pytest.raises(engine.VotebenchError) as info:
                engine.aggregate(s, rule=rule, level=level)
            msg = str(info.value)
            assert msg.startswith("3 missing scores in 2 systems"), msg
            assert "'b' on 'z'" in msg and "'d' on 'x'" in msg and "'d' on 'z'" in msg, msg


# ---------------------------------------------------------------------------------------------
# hand-worked examples from the papers
# ---------------------------------------------------------------------------------------------
def test_paper_tables_transcribed_correctly():
    """The constants in conftest are the numbers printed in the papers."""
    colombo = PAPERS / "colombo_2022_table1.txt"
    vnr = PAPERS / "votenrank_2023_appendix_a1.txt"
    text = colombo.read_text(encoding="utf-8")
    for s in "ABC":
        line = re.search(rf"^{s} (0\.\d.*)$", text, flags=re.M).group(1)
        nums = re.findall(r"(-?[\d.]+) \((\d+)\)", line)
        assert [float(v) for v, _ in nums[:6]] == [float(v) for v in COLOMBO_T1_VALUES[s]]
        assert [int(r) for _, r in nums[:6]] == COLOMBO_T1_RANKS[s]
        assert float(nums[6][0]) == COLOMBO_T1_SUM[s]
    vtext = vnr.read_text(encoding="utf-8")
    start = vtext.index("A.1 Examples")
    for pos, row in enumerate(VNR_TABLE6, start=1):
        assert re.search(rf"^{pos}\t" + r"\t".join(row) + "$", vtext[start:], flags=re.M)
    assert "$m_A = 6$, $m_B = 9$, $m_C = 8$, and $m_D = 7$" in vtext


def test_colombo_table1_ranks_are_consistent_with_lower_is_better():
    for t in range(6):
        col = {s: COLOMBO_T1_VALUES[s][t] for s in "ABC"}
        for s in "ABC":
            assert COLOMBO_T1_RANKS[s][t] == 1 + sum(col[o] < col[s] for o in "ABC")


@pytest.mark.parametrize("level", LEVELS)
def test_colombo_table1_through_api(level):
    """Mean ranks A > B > C, Borda C > B > A (lower is better in every task)."""
    X = np.array([COLOMBO_T1_VALUES[s] for s in "ABC"], dtype=float)
    s = engine.scores_from_array(X, systems=list("ABC"), higher_is_better=False)
    mean = engine.rank(s, rule="mean", level=level)
    assert mean["rank"].values.tolist() == [1, 2, 3]
    np.testing.assert_allclose(mean["score"].values, [-COLOMBO_T1_SUM[x] / 6 for x in "ABC"], rtol=1e-3)
    borda = engine.rank(s, rule="borda", level=level)
    assert borda["rank"].values.tolist() == [3, 2, 1]
    np.testing.assert_array_equal(borda["score"].values, [sum(3 - r for r in COLOMBO_T1_RANKS[x]) for x in "ABC"])


def _vnr_scores(values_by_task, *, hib=True):
    systems = ["m_A", "m_B", "m_C", "m_D"]
    X = np.empty((4, 5))
    for t in range(5):
        for pos, name in enumerate(v[t] for v in VNR_TABLE6):
            X[systems.index(name), t] = values_by_task[t][pos]
    return engine.scores_from_array(X, systems=systems, higher_is_better=hib)


@given(
    st.lists(
        st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=4, max_size=4, unique=True).map(
            lambda v: sorted(v, reverse=True)
        ),
        min_size=5,
        max_size=5,
    )
)
@settings(max_examples=25, deadline=None)
def test_votenrank_appendix_a1_borda(values):
    """Any scores consistent with Table 6's ranks give Borda 6, 9, 8, 7 for m_A..m_D."""
    ds = engine.rank(_vnr_scores(values), rule="borda")
    assert dict(zip(ds["system"].values, ds["score"].values.tolist())) == VNR_BORDA
    expected_rank = bf_min_rank([VNR_BORDA[s] for s in ds["system"].values])
    np.testing.assert_array_equal(ds["rank"].values, expected_rank)


def test_votenrank_appendix_a1_borda_from_rank_positions_lower_is_better():
    ranks = [[1, 2, 3, 4]] * 5  # the rank position itself as a lower-is-better score
    ds = engine.rank(_vnr_scores(ranks, hib=False), rule="borda")
    assert dict(zip(ds["system"].values, ds["score"].values.tolist())) == VNR_BORDA
    assert ds["rank"].sel(system="m_B").item() == 1  # the paper's winner


# ---------------------------------------------------------------------------------------------
# axioms
# ---------------------------------------------------------------------------------------------
INCREASING = [
    ("exp", np.exp),
    ("cubic", lambda x: x**3 + x),
    ("affine", lambda x: 7.0 * x - 3.0),
    ("arctan", np.arctan),
    ("shift", lambda x: x + 100.0),
]


@given(case=cases(), data=st.data())
@settings(max_examples=40, deadline=None)
def test_borda_invariant_to_increasing_transform_of_one_task(case, data):
    S, T, K = case.values.shape
    t = data.draw(st.integers(0, T - 1))
    name, f = data.draw(st.sampled_from(INCREASING))
    Y = case.values.copy()
    Y[:, t, :] = f(Y[:, t, :])
    before, after = case.scores(), engine.scores_from_array(Y, higher_is_better=case.hib)
    levels = LEVELS if K == 1 else ("one", "two")  # the task level averages instances first
    level, missing = data.draw(st.sampled_from(levels)), data.draw(st.sampled_from(POLICIES))
    assert_same(run(after, level=level, missing=missing), run(before, level=level, missing=missing), rule="borda")


@given(case=cases(min_k=2), data=st.data())
@settings(max_examples=40, deadline=None)
def test_borda_invariant_to_increasing_transforms_of_one_tasks_instances(case, data):
    """Each instance (judge) of one task gets its own strictly increasing transform."""
    S, T, K = case.values.shape
    t = data.draw(st.integers(0, T - 1))
    Y = case.values.copy()
    for k in range(K):
        _, f = data.draw(st.sampled_from(INCREASING))
        Y[:, t, k] = f(Y[:, t, k])
    before, after = case.scores(), engine.scores_from_array(Y, higher_is_better=case.hib)
    level, missing = data.draw(st.sampled_from(["one", "two"])), data.draw(st.sampled_from(POLICIES))
    assert_same(run(after, level=level, missing=missing), run(before, level=level, missing=missing), rule="borda")


@given(case=cases(), data=st.data())
@settings(max_examples=40, deadline=None)
def test_neutrality_permuting_tasks_and_instances(case, data):
    S, T, K = case.values.shape
    tp = data.draw(st.permutations(range(T)))
    kp = data.draw(st.permutations(range(K)))
    tasks = [f"t{i}" for i in range(T)]
    perm = engine.scores_from_array(
        case.values[:, tp][:, :, kp],
        tasks=[tasks[i] for i in tp],
        instances=kp,
        higher_is_better=[case.hib[i] for i in tp],
    )
    base = case.scores()
    rule, level, missing = data.draw(CONFIGS)
    got, ref = run(perm, rule=rule, level=level, missing=missing), run(base, rule=rule, level=level, missing=missing)
    if isinstance(ref, BaseException):
        assert isinstance(got, engine.VotebenchError)
        # same problem, same count (the order in which pairs are listed may differ)
        assert got.args[0].split(" (")[0] == ref.args[0].split(" (")[0]
    else:
        assert_same(got, ref, rule=rule)


@given(case=cases(), data=st.data())
@settings(max_examples=40, deadline=None)
def test_anonymity_permuting_systems_permutes_results(case, data):
    S = case.values.shape[0]
    sp = data.draw(st.permutations(range(S)))
    names = [f"s{i}" for i in range(S)]
    perm = engine.scores_from_array(case.values[sp], systems=[names[i] for i in sp], higher_is_better=case.hib)
    base = case.scores()
    rule, level, missing = data.draw(CONFIGS)
    ref = run(base, rule=rule, level=level, missing=missing)
    try:
        got = engine.rank(perm, rule=rule, level=level, missing=missing)
    except engine.VotebenchError:
        assert isinstance(ref, BaseException)
        return
    assert not isinstance(ref, BaseException)
    assert list(got["system"].values) == [names[i] for i in sp]
    assert_same(got["score"].values, ref[sp], rule=rule)
    if rule == "borda":  # exact scores, so exactly permuted ranks
        ref_rank = engine.rank(base, rule=rule, level=level, missing=missing)["rank"].values
        np.testing.assert_array_equal(got["rank"].values, ref_rank[sp])


@given(case=cases(), data=st.data())
@settings(max_examples=40, deadline=None)
def test_orientation_negate_task_and_flip_direction(case, data):
    T = case.values.shape[1]
    flip = data.draw(st.lists(st.booleans(), min_size=T, max_size=T))
    Y = case.values * np.where(flip, -1.0, 1.0)[None, :, None]
    hib = [h != f for h, f in zip(case.hib, flip)]
    flipped, base = engine.scores_from_array(Y, higher_is_better=hib), case.scores()
    rule, level, missing = data.draw(CONFIGS)
    # exactly the same oriented data, so exactly the same result
    assert_same(
        run(flipped, rule=rule, level=level, missing=missing),
        run(base, rule=rule, level=level, missing=missing),
        rule=rule,
        exact=True,
    )


def test_orient_is_applied_once_and_leaves_input_alone():
    case = tie_case(3, shape=(4, 3, 2))
    case.hib = [True, False, False]
    s = case.scores()
    before = s.copy(deep=True)
    o = engine.orient(s)
    assert o["higher_is_better"].values.all()
    np.testing.assert_array_equal(o.values, s.values * np.array([1, -1, -1])[None, :, None])
    xr.testing.assert_identical(engine.orient(o), o)  # idempotent: never negates twice
    xr.testing.assert_identical(s, before)
    for rule in RULES:  # aggregate orients exactly once: pre-oriented input gives the same result
        np.testing.assert_array_equal(engine.aggregate(o, rule=rule).values, engine.aggregate(s, rule=rule).values)


# ---------------------------------------------------------------------------------------------
# dask: same results for any chunking, nothing computed until asked
# ---------------------------------------------------------------------------------------------
CHUNKINGS = [
    {"task": 1},
    {"instance": 1},
    {"task": 1, "instance": 2},
    {"task": 2, "instance": 3},
    {"task": -1, "instance": 4},
]


def _dask_input(scores, chunks):
    """Dask-backed copy of ``scores`` chunked over task/instance (system never chunked)."""
    c = scores.chunk({"system": -1, **chunks})
    assert isinstance(c.data, dsa.Array)
    assert len(c.chunks[0]) == 1
    return c


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_dask_borda_levels_one_two_exact_for_any_chunking(chunks):
    case = tie_case(11, shape=(6, 4, 7), ragged=True, holes=0.04)
    s = case.scores()
    c = _dask_input(s, chunks)
    missing = "listwise" if len(chunks) == 1 else "drop-judges"
    for level in ("one", "two"):
        ref = engine.rank(s, rule="borda", level=level, missing=missing)
        got = engine.rank(c, rule="borda", level=level, missing=missing)
        assert isinstance(got["score"].data, dsa.Array)
        got = got.compute()
        np.testing.assert_array_equal(got["score"].values, ref["score"].values)
        np.testing.assert_array_equal(got["rank"].values, ref["rank"].values)
        expected = bf_aggregate(case.values, case.hib, rule="borda", level=level, missing=missing)
        np.testing.assert_array_equal(got["score"].values, expected)


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_dask_means_and_task_level_close_for_any_chunking(chunks):
    case = continuous_case(5, shape=(6, 4, 7), ragged=True)
    s = case.scores()
    c = _dask_input(s, chunks)
    for rule, level in [("mean", "task"), ("mean", "one"), ("borda", "task")]:
        ref = engine.rank(s, rule=rule, level=level)
        got = engine.rank(c, rule=rule, level=level).compute()
        np.testing.assert_allclose(got["score"].values, ref["score"].values, rtol=1e-12)
        np.testing.assert_array_equal(got["rank"].values, ref["rank"].values)  # no near-ties


@given(
    case=cases(min_k=2, max_k=5),
    tchunk=st.integers(1, 3),
    kchunk=st.integers(1, 5),
    level=st.sampled_from(["one", "two"]),
    missing=st.sampled_from(POLICIES),
)
@settings(max_examples=10, deadline=None)
def test_dask_borda_exact_random_chunks(case, tchunk, kchunk, level, missing):
    s = case.scores()
    c = _dask_input(s, {"task": tchunk, "instance": kchunk})
    ref = run(s, rule="borda", level=level, missing=missing)
    lazy = engine.aggregate(c, rule="borda", level=level, missing=missing)  # never raises eagerly
    try:
        got = lazy.values
    except engine.VotebenchError as exc:
        got = exc
    if isinstance(ref, BaseException):
        assert isinstance(got, engine.VotebenchError) and str(got) == str(ref)
    else:
        np.testing.assert_array_equal(got, ref)


ZARR_CONFIGS = {
    # tied data: Borda levels one/two exact, and the missing-score error at compute time
    "tie": [("borda", "one", "listwise"), ("borda", "two", "drop-judges"), ("borda", "two", "error")],
    # continuous data: means and the task level up to summation order
    "cont": [("mean", "task", "error"), ("mean", "one", "error"), ("borda", "task", "error")],
}


@pytest.mark.parametrize("chunks", [{"task": 1, "instance": 2}, {"task": 2, "instance": 7}], ids=str)
def test_zarr_round_trip_gives_same_results(tmp_path, chunks):
    tie = tie_case(21, shape=(5, 3, 7), ragged=True, holes=0.05)
    cont = continuous_case(22, shape=(5, 3, 7), ragged=True)
    for name, case in (("tie", tie), ("cont", cont)):
        s = case.scores()
        engine.to_zarr(s, tmp_path / f"{name}.zarr", chunks=chunks)
        z = engine.open_scores(tmp_path / f"{name}.zarr")
        assert isinstance(z.data, dsa.Array)
        for rule, level, missing in ZARR_CONFIGS[name]:
            ref = run(s, rule=rule, level=level, missing=missing)
            try:
                got = engine.aggregate(z, rule=rule, level=level, missing=missing).values
            except engine.VotebenchError as exc:
                got = exc
            if isinstance(ref, BaseException):
                assert isinstance(got, engine.VotebenchError) and str(got) == str(ref)
            elif name == "tie":
                np.testing.assert_array_equal(got, ref)
            else:
                np.testing.assert_allclose(got, ref, rtol=1e-12)


def _check_lazy(scores, tag):
    """aggregate/rank on dask input build graphs only; computing them later gives the numpy result."""
    out = {}
    counter = _CountStarts()
    with dask.config.set(scheduler=_forbid_compute), counter:
        for i, (rule, level) in enumerate((r, lv) for r in RULES for lv in LEVELS):
            missing = POLICIES[i % 3]  # every rule, level and policy at least once
            a = engine.aggregate(scores, rule=rule, level=level, missing=missing)
            r = engine.rank(scores, rule=rule, level=level, missing=missing)
            assert isinstance(a.data, dsa.Array) and isinstance(r["rank"].data, dsa.Array), tag
            out[rule, level, missing] = (a, r)
    assert counter.n == 0, tag
    return out


def test_lazy_dask_data_nothing_computed_until_compute():
    case = tie_case(31, shape=(5, 3, 6), ragged=True, holes=0.05)
    s = case.scores()
    lazy_input = s.copy(data=dsa.from_array(s.values, chunks=(-1, 1, 2)))
    out = _check_lazy(lazy_input, "dask data")
    picked = [("borda", "two", "drop-judges"), ("borda", "one", "listwise"), ("mean", "task", "error")]
    for (rule, level, missing), (a, r) in ((k, out[k]) for k in picked):
        ref = run(s, rule=rule, level=level, missing=missing)
        if isinstance(ref, BaseException):
            with pytest.raises(engine.VotebenchError) as info:
                a.compute()
            assert str(info.value) == str(ref)
            with pytest.raises(engine.VotebenchError):
                r.compute()
        else:
            assert_same(a.compute().values, ref, rule=rule)
            np.testing.assert_array_equal(r.compute()["rank"].values, bf_min_rank(a.compute().values))


def test_lazy_zarr_store_nothing_computed_until_compute(tmp_path):
    s = tie_case(32, shape=(5, 3, 6), ragged=True).scores()
    engine.to_zarr(s, tmp_path / "s.zarr", chunks={"task": 1, "instance": 4})
    z = engine.open_scores(tmp_path / "s.zarr")
    out = _check_lazy(z, "zarr")
    a, r = out["borda", "two", "drop-judges"]
    ref = engine.rank(s, rule="borda", level="two", missing="drop-judges")
    np.testing.assert_array_equal(a.compute().values, ref["score"].values)
    np.testing.assert_array_equal(r.compute()["rank"].values, ref["rank"].values)


def test_lazy_after_dataarray_chunk_nothing_computed_until_compute():
    s = tie_case(33, shape=(5, 3, 6)).scores()
    _check_lazy(s.chunk({"task": 1, "instance": 2}), ".chunk()")


def test_dask_missing_error_surfaces_at_compute_time():
    X = tie_case(34, shape=(4, 3, 5)).values
    X[2, 1, 3] = np.nan
    s = engine.scores_from_array(X)
    for lazy_input in (s.chunk({"task": 1, "instance": 2}), s.copy(data=dsa.from_array(X, chunks=(-1, 2, 2)))):
        for rule, level in (("borda", "two"), ("mean", "task"), ("borda", "one")):
            a = engine.aggregate(lazy_input, rule=rule, level=level)  # no error yet
            with pytest.raises(engine.VotebenchError, match=r"^1 missing score in 1 system \('s2' on 't1'\)"):
                a.compute()
            with pytest.raises(engine.VotebenchError, match="missing score"):
                engine.rank(lazy_input, rule=rule, level=level).compute()


def test_dask_task_without_scores_surfaces_at_compute_time():
    X = tie_case(35, shape=(4, 3, 5)).values
    X[:, 2, :] = np.nan
    with pytest.raises(engine.VotebenchError, match="task 't2' has no scores"):
        engine.scores_from_array(X)  # in memory: refused up front
    good = engine.scores_from_array(np.nan_to_num(X))
    lazy = good.copy(data=dsa.from_array(X, chunks=(-1, 1, 5)))
    a = engine.aggregate(lazy, rule="borda", level="two")
    with pytest.raises(engine.VotebenchError, match="task 't2' has no scores"):
        a.compute()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.integers(1, 40))
def test_exact_instance_sums_are_the_exact_total_for_any_chunking_and_scale(seed, kchunk, span):
    """Instance sums of values spread over ``span`` decimal orders of magnitude: every chunking and order gives
    the same bits, equal to the exact (Fraction) total within one unit in the last place; each chunk is
    summed from its own digit anchor (no global maximum that would hold every chunk in memory)."""
    from fractions import Fraction

    from engine.labelled.core import exact_instance_sums, instance_sums

    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, 2, 17)) * 10.0 ** rng.integers(-span, span + 1, size=(3, 2, 17))
    a[rng.random(a.shape) < 0.15] = np.nan
    x = xr.DataArray(a, dims=("system", "task", "instance"))
    ref = exact_instance_sums(x).values
    perm = rng.permutation(17)
    assert np.array_equal(exact_instance_sums(x.chunk({"instance": kchunk})).values, ref)
    assert np.array_equal(exact_instance_sums(x.isel(instance=perm).chunk({"instance": kchunk})).values, ref)
    assert np.array_equal(instance_sums(np.moveaxis(a, -1, -2)), ref)
    for i, j in np.ndindex(3, 2):
        exact = sum((Fraction(float(v)) for v in a[i, j] if not np.isnan(v)), Fraction(0))
        assert abs(Fraction(float(ref[i, j])) - exact) <= Fraction(np.spacing(abs(float(exact)))), (i, j)


# --------------------------------------------------------------------------- means near the float64 limit, by fractions
_HUGE = [1.7e308, -1.7e308, 1e308, -1e308, 1e300, 3.0, -2.5, 1e-300, 0.0, np.nan]
_WEIGHTS = [1.0, 0.5, 3.0, 1e10, 2.0**600]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda t: st.tuples(
    st.lists(st.lists(st.sampled_from(_HUGE), min_size=3, max_size=3), min_size=t, max_size=t),
    st.lists(st.sampled_from(_WEIGHTS), min_size=t, max_size=t))))
def test_weighted_mean_near_the_float64_limit_is_the_exact_mean_within_summation_rounding(case):
    """Any scores up to 1.7e308 under any weights up to 2**600: each system's weighted mean is the exact mean
    (fractions) within the rounding of an ordered sum, ``T * eps * sum |w x| / sum w``; never inf or NaN."""
    from fractions import Fraction

    from engine.kernels.aggregate import mean_across

    X, w = np.array(case[0], dtype=float), np.array(case[1])
    got = mean_across(X, weights=w)
    eps = Fraction(np.finfo(float).eps)
    for s in range(X.shape[1]):
        terms = [(Fraction(x), Fraction(v)) for x, v in zip(X[:, s], w) if not np.isnan(x)]
        if not terms:
            assert np.isnan(got[s])
            continue
        den = sum(v for _, v in terms)
        exact = sum(x * v for x, v in terms) / den
        bound = (len(terms) + 1) * eps * sum(abs(x) * v for x, v in terms) / den
        assert np.isfinite(got[s]), (X[:, s], w)
        assert abs(Fraction(float(got[s])) - exact) <= bound + Fraction(2.0**-1074), (X[:, s], w, got[s], float(exact))
