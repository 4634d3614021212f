"""Why the automatic post-hoc test was chosen, as a field of its own (``PostHoc.why``): autorank's rule and the
spread it compared, never the test's name or its critical difference (the caption that shows it names them)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from engine.kernels.metrics import average_ranks
from engine.kernels.significance import compare, nemenyi_cd
from engine.labelled.paired_tests import letter_groups


def _spread(X):
    avg = average_ranks(X).mean(axis=0)
    return float(avg.max() - avg.min())


def test_each_automatic_choice_says_why_from_the_spread_and_the_cd():
    rng = np.random.default_rng(7)
    far = rng.normal(size=(20, 5)) * 0.1 + np.arange(5.0)  # 20 tasks, one order: the spread (4) beats the CD
    near = rng.normal(size=(4, 5))  # 4 tasks: the CD covers everything
    two = rng.normal(size=(6, 2))
    for X, test in ((far, "nemenyi"), (near, "wilcoxon-holm"), (two, "wilcoxon-holm")):
        ph = compare(X)
        cd, spread = nemenyi_cd(X.shape[1], X.shape[0]), _spread(X)
        assert ph.test == test
        if X.shape[1] == 2:
            assert ph.why == "autorank's choice for two populations not known to be normal" and ph.why in ph.reason
        elif cd < spread:
            assert ph.why == ("autorank's choice for more than two populations; the CD is below the spread of the "
                              f"average ranks ({spread:.3g})")
            assert "Friedman" in ph.reason and f"CD = {cd:.3g}" in ph.reason  # the method names these, not the why
        else:  # the method (Wilcoxon-Holm) does not name the CD: the why does
            assert f"CD = {cd:.3g} covers the whole spread of the average ranks ({spread:.3g})" in ph.why
        assert "post-hoc test (" not in ph.why and "Friedman" not in ph.why


@pytest.mark.parametrize("test", ["nemenyi", "wilcoxon-holm"])
def test_a_test_asked_for_says_so(test):
    assert compare(np.random.default_rng(1).normal(size=(8, 4)), test=test).why == "as asked"


def test_the_task_level_letters_carry_the_why():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 12)) * 0.2 + np.arange(4.0)[:, None]  # 4 systems, 12 tasks, 1 instance each
    x = xr.DataArray(X[:, :, None], dims=("system", "task", "instance"),
                     coords={"system": list("abcd"), "task": [f"t{i}" for i in range(12)], "instance": [0],
                             "higher_is_better": ("task", [True] * 12)}, name="scores")
    got = letter_groups(x)
    assert got["level"] == "task" and got["why"] == compare(X.T).why


@pytest.mark.parametrize(("p", "k"), [(1.0, 5), (1.5, 5), (0.0, 5), (-0.1, 5), (float("nan"), 5), (0.95, 1),
                                      (0.95, 2.5), (0.95, True), ("0.9", 3)])
def test_a_quantile_outside_its_domain_is_refused_in_one_line(p, k):
    from engine.errors import VotebenchError
    from engine.kernels.significance import studentized_range_quantile

    with pytest.raises(VotebenchError) as err:
        studentized_range_quantile(p, k)
    assert "\n" not in str(err.value)
