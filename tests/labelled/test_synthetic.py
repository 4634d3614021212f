"""Tests of engine.labelled.synthetic: the generator of Colombo et al. (2022), section 4.1, against plain-loop references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import engine
from engine.kernels.resample import replicate_generator
from engine.labelled.synthetic import corrupted_tasks, generate, generate_array, ground_truth, gumbel_noise, system_labels


# --------------------------------------------------------------------------- reference
def bf_generate(N, T, K, *, phi, seed, replicate, n_corrupted=0, corrupt_location=1.0, rescale=1.0, scale=1.0):
    """Section 4.1-4.3 by loops: s[n,t,k] = phi * n + beta * G; corrupted tasks rescale * (-c n + beta * G')."""
    g = replicate_generator(seed, replicate, stream="synthetic").gumbel(size=(T, K, N))
    rng = replicate_generator(seed, replicate, stream="corrupt")
    perm = rng.permutation(T)
    g_bad = rng.gumbel(size=(T, K, N))
    bad_tasks = set(int(t) for t in perm[:n_corrupted])
    out = np.empty((N, T, K))
    for n in range(1, N + 1):
        for t in range(T):
            for k in range(K):
                if t in bad_tasks:
                    out[n - 1, t, k] = rescale * (-corrupt_location * n + scale * g_bad[t, k, n - 1])
                else:
                    out[n - 1, t, k] = phi * n + scale * g[t, k, n - 1]
    return out, bad_tasks


def bf_kendall_error(score, truth):
    """Normalised Kendall distance by loops over pairs (a pair tied in exactly one ranking costs 1/2)."""
    n = len(score)
    cost = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            a = np.sign(score[i] - score[j])
            b = np.sign(truth[i] - truth[j])
            if a * b < 0:
                cost += 1.0
            elif (a == 0) != (b == 0):
                cost += 0.5
    return cost / (n * (n - 1) / 2)


# --------------------------------------------------------------------------- the generator
@pytest.mark.parametrize(
    "kw",
    [
        dict(phi=0.3),
        dict(phi=0.0),
        dict(phi=1.0, n_corrupted=2),
        dict(phi=0.05, n_corrupted=1, rescale=7.0),
        dict(phi=0.5, n_corrupted=4, corrupt_location=2.5, scale=0.5),
    ],
)
@pytest.mark.parametrize("replicate", [0, 3])
def test_generate_matches_loop_reference(kw, replicate):
    N, T, K = 5, 4, 3
    ref, bad = bf_generate(N, T, K, seed=11, replicate=replicate, **kw)
    ds = generate(N, T, K, seed=11, replicate=replicate, **kw)
    np.testing.assert_allclose(ds["scores"].values, ref, rtol=0, atol=1e-12)
    assert set(np.flatnonzero(ds["corrupted"].values).tolist()) == bad
    arr, truth = generate_array(N, T, K, seed=11, replicates=[replicate], **kw)
    np.testing.assert_allclose(np.moveaxis(arr[0], -1, 0), ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(truth, np.arange(1, N + 1))


def test_generate_is_a_canonical_score_tensor():
    ds = generate(6, 3, 4, phi=0.2, seed=0)
    engine.validate_scores(ds["scores"])
    assert ds["scores"].dims == ("system", "task", "instance")
    assert ds["scores"].sizes == {"system": 6, "task": 3, "instance": 4}
    assert bool(ds["scores"]["higher_is_better"].all())
    assert ds["system"].values.tolist() == system_labels(6) == ["s1", "s2", "s3", "s4", "s5", "s6"]
    assert system_labels(12)[:2] == ["s01", "s02"]
    np.testing.assert_array_equal(ds["truth"].values, ground_truth(6))
    np.testing.assert_allclose(ds["location"].values, 0.2 * np.arange(1, 7))
    assert ds.attrs["phi"] == 0.2 and ds.attrs["n_corrupted"] == 0
    # it aggregates like any score tensor
    assert engine.aggregate(ds["scores"], rule="borda", level="two").sizes == {"system": 6}


def test_determinism_and_replicate_slices():
    a, _ = generate_array(5, 3, 2, phi=0.4, seed=7, replicates=6, n_corrupted=1)
    b, _ = generate_array(5, 3, 2, phi=0.4, seed=7, replicates=6, n_corrupted=1)
    np.testing.assert_array_equal(a, b)
    alone, _ = generate_array(5, 3, 2, phi=0.4, seed=7, replicates=[4], n_corrupted=1)
    np.testing.assert_array_equal(alone[0], a[4])
    ds = generate(5, 3, 2, phi=0.4, seed=7, replicate=4, n_corrupted=1)
    np.testing.assert_array_equal(ds["scores"].transpose("task", "instance", "system").values, a[4])
    xr.testing.assert_identical(ds, generate(5, 3, 2, phi=0.4, seed=7, replicate=4, n_corrupted=1))
    other, _ = generate_array(5, 3, 2, phi=0.4, seed=8, replicates=6, n_corrupted=1)
    assert not np.allclose(other, a)
    assert not np.allclose(a[0], a[1])


def test_common_random_numbers_across_phi():
    """Scores are phi * n + noise with the same noise for every phi."""
    a, truth = generate_array(4, 3, 5, phi=0.0, seed=2, replicates=3)
    b, _ = generate_array(4, 3, 5, phi=0.7, seed=2, replicates=3)
    np.testing.assert_allclose(b - a, np.broadcast_to(0.7 * truth, a.shape), atol=1e-12)


def test_corrupted_sets_are_nested():
    masks = [corrupted_tasks(6, k, seed=5, replicates=4) for k in range(7)]
    for k in range(7):
        assert (masks[k].sum(axis=1) == k).all()
        if k:
            assert (masks[k] >= masks[k - 1]).all()


def test_noise_is_standard_gumbel():
    g = gumbel_noise(10, 20, 20, seed=0, replicates=2).ravel()
    assert stats.kstest(g, stats.gumbel_r.cdf).pvalue > 1e-3
    assert abs(g.mean() - np.euler_gamma) < 0.03
    assert abs(g.var() - math.pi**2 / 6) < 0.1


def test_pairwise_win_probability_is_logistic():
    """G_{n+1} - G_n is logistic with mean phi: P(system n+1 beats n on a judge) = 1 / (1 + exp(-phi))."""
    phi = 0.4
    x, _ = generate_array(3, 50, 50, phi=phi, seed=1, replicates=4)
    wins = (x[..., 1:] > x[..., :-1]).mean()
    assert abs(wins - 1 / (1 + math.exp(-phi))) < 0.01


def test_corrupted_task_reverses_the_truth():
    """A corrupted task is centred at -n: with a large location step its per-task mean ranking is reversed."""
    ds = generate(6, 4, 10, phi=5.0, seed=3, n_corrupted=2, corrupt_location=5.0)
    means = ds["scores"].mean("instance").transpose("task", "system").values
    for t, bad in enumerate(ds["corrupted"].values):
        order = np.argsort(means[t])
        assert order.tolist() == (list(range(5, -1, -1)) if bad else list(range(6)))


def test_two_level_borda_recovers_the_truth_at_low_noise():
    """Large phi = low dispersion: sigma_2l recovers [1..N] with high probability; phi = 0 is pure noise."""
    errors = {}
    for phi in (0.0, 0.3, 1.0):
        errs = []
        for r in range(8):
            ds = generate(8, 5, 5, phi=phi, seed=9, replicate=r)
            score = engine.aggregate(ds["scores"], rule="borda", level="two").values
            errs.append(bf_kendall_error(score, ds["truth"].values))
        errors[phi] = np.array(errs)
    assert (errors[1.0] == 0).sum() >= 7  # the exact ground truth in (nearly) every replicate
    assert errors[0.0].mean() > 0.3  # about 1/2 for a random ranking
    assert errors[0.0].mean() > errors[0.3].mean() > errors[1.0].mean()


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(n_systems=1), "at least 2 systems"),
        (dict(n_tasks=0), "at least 1 task"),
        (dict(phi=-0.1), "phi"),
        (dict(phi=float("nan")), "phi"),
        (dict(rescale=0.0), "rescale"),
        (dict(scale=-1.0), "scale"),
        (dict(n_corrupted=5), "n_corrupted"),
    ],
)
def test_bad_parameters_raise(kw, match):
    args = dict(n_systems=4, n_tasks=4, n_instances=2, phi=0.1, seed=0) | kw
    with pytest.raises(engine.VotebenchError, match=match):
        generate(**args)
