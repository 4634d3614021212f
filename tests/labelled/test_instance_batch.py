"""The instance bootstrap of rules without a decomposable within statistic: a block of replicates' resampled
tensors built at once (``drawn_instances``) and ranked in one batched kernel call.  Checked against the
one-replicate definition (``resampled_scores``) and the per-replicate reference, for every rule it serves, with
ragged instances and missing scores, whatever the block size."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.kernels.resample import instance_counts
from engine.labelled.bootstrap import bootstrap, drawn_instances, replicate_scores_reference, resampled_scores
from engine.labelled.canonical import scores_from_array
from engine.rules import RULES


def ragged_scores(seed: int, *, holes: bool):
    """5 systems x 3 tasks of 4-6 instances with tied scores, in a label order that is not canonical."""
    rng = np.random.default_rng(seed)
    V = rng.integers(0, 4, size=(5, 3, 6)).astype(float)  # ties on purpose
    V[:, 0, 4:] = np.nan  # task x has 4 instances, the others 6 / 5
    V[:, 2, 5] = np.nan
    if holes:
        V[1, 1, 2] = np.nan  # one missing score (pairwise rules ignore the pair)
    return scores_from_array(V, systems=list("edcba"), tasks=["z", "x", "y"])


def batched_rules() -> list[str]:
    """Rules the batched path serves: no within statistic, no per-position random draws."""
    return [n for n, r in RULES.items() if r.within is None and r.resample != "loop"]


@pytest.mark.parametrize("seed", range(4))
def test_drawn_instances_are_the_reference_tensors(seed):
    s = ragged_scores(seed, holes=True)
    x = engine.orient(s)
    ids = np.arange(9)
    ref = [np.asarray(resampled_scores(x, over="instances", replicate=int(b), seed=seed)
                      .transpose("task", "instance", "system").values) for b in ids]
    from engine.labelled.core import canonical_order

    X = np.asarray(canonical_order(x)[0].transpose("task", "instance", "system").values, dtype=np.float64)
    counts = instance_counts(~np.isnan(X).all(axis=-1), seed=seed, replicates=ids, dtype=np.int64)
    got = drawn_instances(X, counts)
    for b in ids:
        np.testing.assert_array_equal(got[b], ref[b])


@pytest.mark.parametrize("rule", batched_rules())
@pytest.mark.parametrize("level", ["two", "one"])
def test_batched_instances_match_the_reference_for_any_block(rule, level):
    pairwise = RULES[rule].missing != "policy"
    s = ragged_scores(11, holes=pairwise)
    kw = dict(rule=rule, over="instances", level=level, replicates=7, seed=5,
              missing="error" if pairwise else "drop-judges")
    try:
        ref = replicate_scores_reference(s, **kw)
    except engine.VotebenchError as exc:  # the reference refuses: so must the batched path
        with pytest.raises(engine.VotebenchError, match=str(exc).split(":")[0][:20]):
            bootstrap(s, **kw)
        return
    whole = bootstrap(s, **kw)
    assert whole.attrs["method"] == "resampled instances in one batched kernel call"
    got = np.asarray(whole["replicate_score"].values)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)
    for block in (1, 3):  # blocks of replicates do not show
        np.testing.assert_array_equal(np.asarray(bootstrap(s, block=block, **kw)["replicate_score"].values), got)


@pytest.mark.parametrize("within, across, method", [
    ("copeland", "random_judge", "resampled instances in one batched kernel call"),  # per-position draws across: looped
    ("bradley_terry", "mean", "resampled instances in one batched kernel call"),
    ("random_judge", "copeland", "per-replicate evaluation"),  # per-position draws within tasks: one replicate at a time
])
def test_other_rules_within_and_across_tasks(within, across, method):
    s = ragged_scores(3, holes=False)
    kw = dict(rule=within, within=within, across=across, over="instances", level="two", replicates=6, seed=1)
    ds = bootstrap(s, **kw)
    assert ds.attrs["method"] == method
    np.testing.assert_allclose(ds["replicate_score"].values, replicate_scores_reference(s, **kw), rtol=1e-10, atol=1e-10)
