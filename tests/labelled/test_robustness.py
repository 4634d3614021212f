"""Tests of engine.labelled.robustness: every experiment against a per-replicate brute-force reference (plain loops,
engine.aggregate on xarray, scipy.stats) with the same seed, plus the figure-level properties of the papers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr
from conftest import continuous_case, tie_case
from scipy import stats

import engine
import engine.labelled.core
from engine.kernels.mcdm import promethee2_net
from engine.kernels.resample import replicate_generator, subset_indices
from engine.labelled.robustness import (
    COLOMBO_VARIANTS,
    aggregate_array,
    criteria_clusters,
    iia_experiment,
    manipulation_curve,
    normalized_kendall_distance,
    omitted_scores_stability,
    promethee_sensitivity,
    rescaling_curve,
    spearman,
    task_subset_curve,
)
from engine.labelled.synthetic import generate


# --------------------------------------------------------------------------- references
def bf_kendall_error(score, truth):
    """Normalised Kendall distance by loops over pairs (a pair tied in exactly one ranking costs 1/2)."""
    n = len(score)
    cost = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            a, b = np.sign(score[i] - score[j]), np.sign(truth[i] - truth[j])
            cost += 1.0 if a * b < 0 else (0.5 if (a == 0) != (b == 0) else 0.0)
    return cost / (n * (n - 1) / 2)


def scipy_spearman(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return np.nan
    return stats.spearmanr(a[ok], b[ok])[0]


def scipy_tau(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    ok = ~(np.isnan(a) | np.isnan(b))
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return np.nan
    return stats.kendalltau(a[ok], b[ok])[0]


def rule_level(spec):
    rule, _, level = spec.partition(":")
    return rule, level or None


def task_level_scores(seed, S=7, T=5, ties=False):
    case = tie_case(seed, shape=(S, T, 1), n_values=4) if ties else continuous_case(seed, shape=(S, T, 1))
    return case.scores()


# --------------------------------------------------------------------------- helpers
@pytest.mark.parametrize("seed", range(6))
def test_spearman_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, size=(5, 9)).astype(float)
    b = rng.normal(size=(5, 9))
    a[rng.random(a.shape) < 0.2] = np.nan
    b[rng.random(b.shape) < 0.1] = np.nan
    got = spearman(a, b)
    for i in range(5):
        np.testing.assert_allclose(got[i], scipy_spearman(a[i], b[i]), atol=1e-12, equal_nan=True)
    assert np.isnan(spearman(np.ones(4), np.arange(4.0)))


@pytest.mark.parametrize("seed", range(6))
def test_normalized_kendall_distance_matches_loops(seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 4, size=(4, 7)).astype(float)
    truth = np.arange(7.0)
    got = normalized_kendall_distance(s, truth)
    for i in range(4):
        assert got[i] == pytest.approx(bf_kendall_error(s[i], truth))
    cont = rng.normal(size=7)
    assert normalized_kendall_distance(cont, truth) == pytest.approx((1 - stats.kendalltau(cont, truth)[0]) / 2)


@pytest.mark.parametrize("rule", ["mean", "borda", "copeland", "kemeny", "plurality", "median", "minimax"])
@pytest.mark.parametrize("level", ["task", "one", "two"])
@pytest.mark.parametrize("ragged", [False, True])
def test_aggregate_array_matches_engine_aggregate(rule, level, ragged):
    cases = [tie_case(seed, shape=(5, 3, 4), n_values=3, ragged=ragged) for seed in range(3)]
    for c in cases:
        c.hib = [True] * 3
    stacked = np.stack([np.moveaxis(c.values, 0, -1) for c in cases])  # (B, T, K, S)
    got = aggregate_array(stacked, rule=rule, level=level)
    compared = 0
    for b, c in enumerate(cases):
        try:
            ref = engine.aggregate(c.scores(), rule=rule, level=level).values
        except engine.VotebenchError:  # e.g. the median refuses the padding judges of a ragged tensor pooled at level one
            continue
        np.testing.assert_allclose(got[b], ref, atol=1e-12, equal_nan=True)
        compared += 1
    assert compared or ragged


# --------------------------------------------------------------------------- Colombo 5.2-5.3: task subsets
def bf_task_subset(scores, spec, sizes, repeats, seed, missing="error"):
    rule, level = rule_level(spec)
    full = engine.aggregate(scores, rule=rule, level=level, missing=missing).values
    out = np.full((len(sizes), repeats), np.nan)
    for j, t in enumerate(sizes):
        for b in range(repeats):
            idx = subset_indices(scores.sizes["task"], t, seed=seed, replicates=[b])[0]
            sub = scores.isel(task=idx)
            try:
                s = engine.aggregate(sub, rule=rule, level=level, missing=missing).values
            except engine.VotebenchError:  # too few systems left: no ranking
                continue
            out[j, b] = scipy_tau(s, full)
    return out


@pytest.mark.parametrize("ties", [False, True])
def test_task_subset_curve_matches_reference_instance_level(ties):
    case = (tie_case(3, shape=(6, 5, 4), n_values=3) if ties else continuous_case(3, shape=(6, 5, 4)))
    scores = case.scores()
    rules = (*COLOMBO_VARIANTS, "copeland:two")
    ds = task_subset_curve(scores, rules=rules, sizes=[1, 2, 4, 5], repeats=6, seed=21)
    assert ds["tau"].dims == ("rule", "subset_size", "replicate")
    for spec in rules:
        ref = bf_task_subset(scores, spec, [1, 2, 4, 5], 6, 21)
        np.testing.assert_allclose(ds["tau"].sel(rule=spec).values, ref, atol=1e-12, equal_nan=True)
    # all the tasks: the full ranking itself
    assert np.allclose(ds["tau"].sel(subset_size=5).values, 1.0)
    tau = ds["tau"].values
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(ds["mean"].values, np.nanmean(tau, axis=-1), equal_nan=True)
        np.testing.assert_allclose(ds["std"].values, np.nanstd(tau, axis=-1, ddof=1), equal_nan=True)


def test_task_subset_curve_task_level_and_missing_policies():
    case = continuous_case(5, shape=(7, 6, 1))
    case.values[2, 1, 0] = np.nan
    scores = case.scores()
    with pytest.raises(engine.VotebenchError, match="missing"):
        task_subset_curve(scores, rules="borda", repeats=2, seed=0)
    # pairwise rules need no policy; listwise / drop-judges as in engine.aggregate
    for spec, missing in (("copeland", "error"), ("borda", "listwise"), ("mean", "drop-judges")):
        ds = task_subset_curve(scores, rules=spec, sizes=[2, 3, 6], repeats=4, seed=8, missing=missing)
        ref = bf_task_subset(scores, spec, [2, 3, 6], 4, 8, missing=missing)
        np.testing.assert_allclose(ds["tau"].sel(rule=spec).values, ref, atol=1e-12, equal_nan=True)
        full = engine.aggregate(scores, rule=spec, missing=missing).values
        np.testing.assert_allclose(ds["full_score"].sel(rule=spec).values, full, equal_nan=True)


def test_task_subset_curve_determinism_and_replicate_slices():
    scores = task_level_scores(1, S=8, T=6)
    a = task_subset_curve(scores, rules=("borda", "mean"), repeats=5, seed=4)
    xr.testing.assert_identical(a, task_subset_curve(scores, rules=("borda", "mean"), repeats=5, seed=4))
    alone = task_subset_curve(scores, rules=("borda", "mean"), repeats=[3], seed=4)
    np.testing.assert_array_equal(alone["tau"].values[..., 0], a["tau"].values[..., 3])
    np.testing.assert_array_equal(alone["subsets"].values[:, 0], a["subsets"].values[:, 3])
    other = task_subset_curve(scores, rules=("borda", "mean"), repeats=5, seed=5)
    assert not np.array_equal(other["subsets"].values, a["subsets"].values)


def test_task_subset_curve_borda_more_robust_than_mean_on_glue():
    """Colombo Fig. 5(a)/8: on GLUE the Borda ranking of t random tasks agrees more with the full one than the mean's."""
    glue = engine.open_scores(engine_data("colombo_glue.csv"))
    ds = task_subset_curve(glue, rules=("borda", "mean"), sizes=[3, 5, 7, 9, 11], repeats=40, seed=0)
    m = ds["mean"]
    assert (m.sel(rule="borda") > m.sel(rule="mean")).all()
    assert (m.diff("subset_size") > 0).all()  # more tasks, closer to the full ranking


def engine_data(name):
    from conftest import DATA

    return DATA / name


# --------------------------------------------------------------------------- Colombo 4.2: manipulation
def test_manipulation_curve_matches_reference():
    N, T, K = 5, 4, 3
    phis, ks = (0.2, 1.0), (0, 1, 3, 4)
    ds = manipulation_curve(n_systems=N, n_tasks=T, n_instances=K, phis=phis, n_corrupted=ks, repeats=3, seed=6)
    assert ds["error"].dims == ("rule", "phi", "n_corrupted", "replicate")
    assert ds["paper_name"].values.tolist() == ["sigma_mean", "sigma_l", "sigma_2l"]
    for spec in COLOMBO_VARIANTS:
        rule, level = rule_level(spec)
        for (j, phi), (m, k), r in itertools.product(enumerate(phis), enumerate(ks), range(3)):
            g = generate(N, T, K, phi=phi, seed=6, replicate=r, n_corrupted=k)
            score = engine.aggregate(g["scores"], rule=rule, level=level).values
            got = ds["error"].sel(rule=spec).values[j, m, r]
            assert got == pytest.approx(bf_kendall_error(score, g["truth"].values), abs=1e-12)
            assert ds["tau"].sel(rule=spec).values[j, m, r] == pytest.approx(scipy_tau(score, g["truth"].values))


def test_manipulation_curve_replicate_slices_and_determinism():
    kw = dict(n_systems=6, n_tasks=5, n_instances=3, phis=(0.1, 0.5), repeats=4, seed=2)
    a = manipulation_curve(**kw)
    xr.testing.assert_identical(a, manipulation_curve(**kw))
    alone = manipulation_curve(**(kw | {"repeats": [2]}))
    np.testing.assert_array_equal(alone["error"].values[..., 0], a["error"].values[..., 2])


def test_manipulation_curve_reproduces_colombo_section_4_2():
    """Paper: sigma_mean's error exceeds .75 with 2, 3 and 5 of T = 20 tasks corrupted, sigma_l with 5, 7, 10 and
    sigma_2l with 10, 11, 11 (N = T = K = 20); these match phi = 0.05, 0.1, 0.3."""
    ds = manipulation_curve(phis=(0.05, 0.1, 0.3), repeats=10, seed=0)
    first = (ds["mean"] > 0.75).argmax("n_corrupted")
    paper = {"mean:task": [2, 3, 5], "borda:one": [5, 7, 10], "borda:two": [10, 11, 11]}
    for spec, ks in paper.items():
        got = first.sel(rule=spec).values
        assert np.all(np.abs(got - np.array(ks)) <= 1), (spec, got)
    # sigma_2l needs the most corrupted tasks, sigma_mean the fewest
    assert (first.sel(rule="mean:task") <= first.sel(rule="borda:one")).all()
    assert (first.sel(rule="borda:one") <= first.sel(rule="borda:two")).all()
    # no corruption: small error; every task corrupted: the reversed ranking
    assert (ds["mean"].sel(n_corrupted=0) < 0.1).all()
    assert (ds["mean"].sel(n_corrupted=20) > 0.95).all()


# --------------------------------------------------------------------------- Colombo 4.3: rescaling
def test_rescaling_curve_matches_reference():
    N, T, K = 5, 4, 3
    factors = (1.0, 3.0, 10.0)
    ds = rescaling_curve(n_systems=N, n_tasks=T, n_instances=K, phis=(0.1,), factors=factors, repeats=3, seed=1)
    for spec in COLOMBO_VARIANTS:
        rule, level = rule_level(spec)
        for (m, f), r in itertools.product(enumerate(factors), range(3)):
            g = generate(N, T, K, phi=0.1, seed=1, replicate=r, n_corrupted=1, rescale=f)
            score = engine.aggregate(g["scores"], rule=rule, level=level).values
            assert ds["error"].sel(rule=spec).values[0, m, r] == pytest.approx(bf_kendall_error(score, g["truth"].values))


def test_rescaling_mean_error_grows_borda_constant():
    """Colombo 4.3 / Fig. 7: sigma_mean's error grows with the factor (> 90 % at x = 2 for phi = 0.05, at x = 7
    for phi = 0.3); the ranking-based errors do not depend on the factor at all."""
    ds = rescaling_curve(phis=(0.05, 0.3), factors=(1, 2, 4, 7, 10), repeats=6, seed=0)
    for spec in ("borda:one", "borda:two"):
        e = ds["error"].sel(rule=spec).values
        np.testing.assert_array_equal(e, np.broadcast_to(e[:, :1, :], e.shape))  # same for every factor, per replicate
    mean = ds["mean"].sel(rule="mean:task")
    assert (mean.diff("factor") >= -0.02).all()
    assert float(mean.sel(phi=0.05, factor=10)) > float(mean.sel(phi=0.05, factor=1)) + 0.3
    assert float(mean.sel(phi=0.05, factor=2)) > 0.9
    assert float(mean.sel(phi=0.3, factor=7)) > 0.9
    assert float(mean.sel(phi=0.3, factor=1)) < 0.05


# --------------------------------------------------------------------------- Vote'n'Rank: IIA
def bf_iia(scores, rule, repeats, seed, n_random, scope, weights=None):
    S = scores.sizes["system"]
    counts = []
    for b in range(repeats):
        perm = replicate_generator(seed, b, stream="iia").permutation(S)[: 2 + n_random]
        prev = None
        n = 0
        for j in range(n_random + 1):
            sub = scores.isel(system=perm[: 2 + j])
            s = engine.aggregate(sub, rule=rule, weights=weights).values
            if prev is not None:
                if scope == "pair":
                    pairs = [(0, 1)]
                else:
                    pairs = [(u, v) for u in range(len(prev)) for v in range(u + 1, len(prev))]
                n += any(np.sign(prev[u] - prev[v]) != np.sign(s[u] - s[v]) for u, v in pairs)
            prev = s
        counts.append(n)
    return np.array(counts, dtype=float)


@pytest.mark.parametrize("rule", ["borda", "copeland", "plurality", "mean", "minimax"])
@pytest.mark.parametrize("scope", ["all", "pair"])
def test_iia_matches_reference(rule, scope):
    scores = task_level_scores(2, S=7, T=5, ties=True)
    ds = iia_experiment(scores, rules=rule, repeats=6, seed=3, scope=scope)
    ref = bf_iia(scores, rule, 6, 3, 5, scope)
    np.testing.assert_array_equal(ds["n_changes"].sel(rule=rule).values, ref)
    assert float(ds["mean"].sel(rule=rule)) == pytest.approx(ref.mean())
    assert float(ds["std"].sel(rule=rule)) == pytest.approx(ref.std())  # numpy.std, as Table 2


def test_iia_weights_and_properties():
    scores = task_level_scores(4, S=9, T=6)
    w = [1.0, 0.5, 0.5, 2.0, 0.0, 1.0]
    ds = iia_experiment(scores, rules=("mean", "borda", "copeland"), repeats=8, seed=1, weights=w, n_random=4)
    np.testing.assert_array_equal(ds["n_changes"].sel(rule="borda").values,
                                  bf_iia(scores, "borda", 8, 1, 4, "all", weights=w))
    # the mean satisfies IIA: a system's score depends on its own scores only
    assert (ds["n_changes"].sel(rule="mean") == 0).all()
    assert float(ds["mean"].sel(rule="borda")) > 0
    # pair changes are a subset of "any pair" changes
    pair = iia_experiment(scores, rules=("borda", "copeland"), repeats=8, seed=1, weights=w, n_random=4, scope="pair")
    assert (pair["changed"] <= ds["changed"].sel(rule=["borda", "copeland"])).all()
    alone = iia_experiment(scores, rules="borda", repeats=[5], seed=1, weights=w, n_random=4)
    assert alone["n_changes"].values[0, 0] == ds["n_changes"].sel(rule="borda").values[5]
    assert alone["system_a"].values[0] == ds["system_a"].values[5]


def test_iia_vote_n_rank_glue_ordering():
    """Vote'n'Rank Table 2 (GLUE, first 30 rows, weighted): mean 0; Copeland/Minimax change the ranking less
    often than Plurality, Borda and Dowdall."""
    import json

    from conftest import DATA

    meta = json.loads((DATA / "vnr_glue.meta.json").read_text())
    glue = engine.open_scores(DATA / "vnr_glue.csv").isel(system=slice(0, 30)).dropna("system", how="any")
    ds = iia_experiment(glue, rules=("mean", "copeland", "minimax", "plurality", "dowdall", "borda"), repeats=20,
                        seed=0, weights=meta["weights_vote_and_rank"])
    m = ds["mean"].to_series()
    assert m["mean"] == 0
    assert max(m["copeland"], m["minimax"]) < min(m["plurality"], m["borda"], m["dowdall"])


# --------------------------------------------------------------------------- Vote'n'Rank: omitted scores
def bf_omitted(scores, rule, n, repeats, seed, top=None):
    X = engine.labelled.core.task_scores(scores).values  # (T, S) oriented
    T, S = X.shape
    present = [c for c in range(T * S) if not np.isnan(X.ravel()[c])]
    r = engine.get_rule(rule)
    ref = None
    out = []
    for b in [None, *range(repeats)]:
        Xo = X.copy()
        if b is not None:
            perm = replicate_generator(seed, b, stream="omit").permutation(len(present))
            for c in perm[:n]:
                Xo[present[c] // S, present[c] % S] = np.nan
        if r.missing != "pairwise":  # median of the task over the systems with a score
            for t in range(T):
                vals = [v for v in Xo[t] if not np.isnan(v)]
                med = float(np.median(vals)) if vals else 0.0
                Xo[t] = [med if np.isnan(v) else v for v in Xo[t]]
        s = engine.aggregate(engine.scores_from_array(Xo.T), rule=rule).values
        if b is None:
            ref = s
            continue
        if top is not None:
            ranks = np.array([1 + sum(o > v for o in s) for v in s])
            s = np.where(ranks <= top, s, np.nan)
        out.append(scipy_spearman(s, ref))
    return np.array(out)


@pytest.mark.parametrize("top", [None, 4])
def test_omitted_scores_matches_reference(top):
    scores = task_level_scores(6, S=8, T=5, ties=True)
    rules = ("copeland", "minimax", "mean", "borda")
    ds = omitted_scores_stability(scores, rules=rules, counts=[0, 3, 9, 20], repeats=5, seed=12, top=top)
    assert ds["spearman"].dims == ("rule", "n_omitted", "replicate")
    for rule in rules:
        for j, n in enumerate([0, 3, 9, 20]):
            ref = bf_omitted(scores, rule, n, 5, 12, top=top)
            np.testing.assert_allclose(ds["spearman"].sel(rule=rule).values[j], ref, atol=1e-12, equal_nan=True)


def test_omitted_scores_basics():
    scores = task_level_scores(7, S=10, T=6)
    ds = omitted_scores_stability(scores, rules=("copeland", "mean"), fractions=[0.0, 0.1, 0.3], repeats=6, seed=0)
    np.testing.assert_allclose(ds["spearman"].sel(n_omitted=0).values, 1.0)
    assert ds["n_omitted"].values.tolist() == [0, 6, 18]
    np.testing.assert_allclose(ds["fraction"].values, [0.0, 0.1, 0.3])
    alone = omitted_scores_stability(scores, rules=("copeland", "mean"), fractions=[0.0, 0.1, 0.3], repeats=[4], seed=0)
    np.testing.assert_array_equal(alone["spearman"].values[..., 0], ds["spearman"].values[..., 4])
    for how in ("listwise", "drop-judges", "none"):
        d = omitted_scores_stability(scores, rules="borda", counts=[5], repeats=3, seed=0, impute=how)
        assert np.isfinite(d["spearman"].values).all()
    with pytest.raises(engine.VotebenchError, match="not both"):
        omitted_scores_stability(scores, fractions=[0.1], counts=[2])
    with pytest.raises(engine.VotebenchError, match="impute"):
        omitted_scores_stability(scores, impute="zero")


# --------------------------------------------------------------------------- xLLMBench: PROMETHEE II sensitivity
def test_promethee_sensitivity_scenarios_by_hand():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 9)) * np.array([[1.0], [10.0], [0.1]])
    ds = promethee_sensitivity(X, preference="linear_indifference", deltas=(-0.2, 0.1), weight_deltas=(0.5,))
    R = X.max(axis=1) - X.min(axis=1)
    base = promethee2_net(X, preference="linear_indifference")
    np.testing.assert_allclose(ds["net_flow"].values[0], base, atol=1e-12)

    def expect(param, delta, crit=""):
        sel = (ds["parameter"] == param) & (ds["delta"] == delta) & (ds["criterion"] == crit)
        (i,) = np.flatnonzero(sel.values)
        return i

    cases = {
        expect("q", -0.2): dict(q=-1.2 * R, p=R),
        expect("q", 0.1): dict(q=-0.9 * R, p=R),
        expect("p", -0.2): dict(q=-R, p=0.8 * R),
        expect("p", 0.1): dict(q=-R, p=1.1 * R),
        expect("q+p", 0.1): dict(q=-0.9 * R, p=0.9 * R),  # Appendix B: a up by 10 %, b down by 10 %
    }
    for t in range(3):
        w = np.ones(3) / 3
        w[t] *= 1.5
        cases[expect("weight", 0.5, f"t{t}")] = dict(q=-R, p=R, weights=w)
    assert len(ds["scenario"]) == 1 + len(cases)
    for i, kw in cases.items():
        net = promethee2_net(X, preference="linear_indifference", **kw)
        np.testing.assert_allclose(ds["net_flow"].values[i], net, atol=1e-12)
        assert float(ds["spearman"][i]) == pytest.approx(scipy_spearman(net, base))
        ranks = np.array([1 + (net > v).sum() for v in net])
        base_ranks = np.array([1 + (base > v).sum() for v in base])
        np.testing.assert_array_equal(ds["rank_change"].values[i], ranks - base_ranks)
        assert float(ds["max_rank_change"][i]) == np.abs(ranks - base_ranks).max()
    np.testing.assert_allclose(np.diag(ds["spearman_matrix"].values), 1.0)


def test_promethee_sensitivity_gaussian_and_invalid():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 8))
    ds = promethee_sensitivity(X, preference="gaussian", weight_deltas=())
    s_def = np.sqrt(2) * X.std(axis=1)  # std of the pairwise differences
    assert ds["parameter"].values.tolist() == ["baseline", "s", "s", "s", "s"]
    for i, d in enumerate(ds["delta"].values):
        net = promethee2_net(X, preference="gaussian", s=s_def * (1 + d))
        np.testing.assert_allclose(ds["net_flow"].values[i], net, atol=1e-12)
    assert (ds["spearman"] > 0.9).all()
    # level function with q = p: q + 10 % > p is inconsistent, the scenario is marked invalid
    lv = promethee_sensitivity(X, preference="level", q=0.5, p=0.5, deltas=(0.1,), weight_deltas=())
    i = int(np.flatnonzero((lv["parameter"] == "q").values)[0])
    assert not bool(lv["valid"][i]) and np.isnan(lv["net_flow"].values[i]).all()
    assert bool(lv["valid"][0])
    with pytest.raises(engine.VotebenchError, match="NaN"):
        promethee_sensitivity(np.where(X > 1.5, np.nan, X))


def test_promethee_sensitivity_on_a_score_tensor_is_oriented():
    case = continuous_case(2, shape=(6, 3, 1))
    ds = promethee_sensitivity(case.scores(), preference="vshape", weight_deltas=())
    Xo = np.where(np.array(case.hib)[:, None], 1, -1) * case.values[:, :, 0].T
    np.testing.assert_allclose(ds["net_flow"].values[0], promethee2_net(Xo, preference="vshape"), atol=1e-12)
    assert ds["system"].values.tolist() == [f"s{i}" for i in range(6)]


# --------------------------------------------------------------------------- xLLMBench: criteria clusters
def test_criteria_clusters_recovers_groups_and_picks_by_mean_correlation():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(3, 40))
    groups = [0, 0, 1, 2, 1, 0, 2]
    X = np.stack([base[g] + 0.15 * rng.normal(size=40) for g in groups])
    ds = criteria_clusters(X, threshold=0.8)
    labels = ds["cluster"].values
    assert labels.tolist() == [1, 1, 2, 3, 2, 1, 3]
    np.testing.assert_allclose(ds["correlation"].values, np.corrcoef(X), atol=1e-12)
    R = np.corrcoef(X)
    for c in (1, 2, 3):
        members = [i for i in range(7) if labels[i] == c]
        means = {i: sum(R[i, j] for j in members if j != i) / (len(members) - 1) for i in members}
        best = max(members, key=lambda i: (means[i], -i))
        assert ds["representative"].values[members].tolist() == [i == best for i in members]
    assert ds.attrs["selected"] == [f"t{i}" for i in np.flatnonzero(ds["representative"].values)]
    xr.testing.assert_equal(criteria_clusters(X, n_clusters=3)["cluster"], ds["cluster"])
    assert criteria_clusters(X, threshold=0.9999)["cluster"].values.tolist() == list(range(1, 8))
    assert set(criteria_clusters(X, n_clusters=1)["cluster"].values.tolist()) == {1}


def test_criteria_clusters_constant_and_negative_criteria():
    rng = np.random.default_rng(4)
    a = rng.normal(size=20)
    X = np.stack([a, -a + 0.01 * rng.normal(size=20), np.ones(20), a + 0.01 * rng.normal(size=20)])
    ds = criteria_clusters(X, threshold=0.8)
    lab = ds["cluster"].values
    assert lab[0] == lab[3] and len({lab[0], lab[1], lab[2]}) == 3
    assert np.isnan(ds["correlation"].values[2, 0])
    ab = criteria_clusters(X, threshold=0.8, absolute=True)["cluster"].values
    assert ab[0] == ab[1] == ab[3] != ab[2]
    with pytest.raises(engine.VotebenchError, match="exactly one"):
        criteria_clusters(X)
