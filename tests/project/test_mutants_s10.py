"""Tests that kill the mutants of session 10's change which the suite let live (benchmarks/results/mutation.md,
"Session 10 (lead's change)"): the check-once registry of ``engine.labelled.canonical`` (``ensure_valid``,
``validation_deferred``) and ``engine.kernels.significance.studentized_range_quantile``.

Each expectation comes from outside the code under test: a plain count of live objects, the finite-value rule
written out with numpy, the closed form of the range of two normals, scipy's own quantile.
"""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.errors import VotebenchError
from engine.labelled import canonical

REPO = Path(__file__).resolve().parents[2]


def _bad_values() -> np.ndarray:
    values = np.array([[1.0, 2.0], [0.5, 2.5], [3.0, 1.0]])
    values[1, 0] = np.inf
    assert not np.isfinite(values).all()  # what the check must refuse, by numpy's rule
    return values


def test_a_refused_tensor_is_refused_every_time():
    """A tensor the check refuses is never remembered as checked: asked twice, refused twice (and by rank)."""
    with canonical.validation_deferred():
        bad = engine.scores_from_array(_bad_values())
    for _ in range(2):
        with pytest.raises(VotebenchError, match="is not finite"):
            canonical.ensure_valid(bad)
    with pytest.raises(VotebenchError, match="is not finite"):
        engine.rank(bad, rule="borda")


def test_task_scores_refuses_an_unchecked_tensor():
    """task_scores checks a tensor nobody checked (built with the check deferred) before averaging it."""
    from engine.labelled.core import task_scores

    with canonical.validation_deferred():
        bad = engine.scores_from_array(_bad_values())
    with pytest.raises(VotebenchError, match="is not finite"):
        task_scores(bad)


def test_a_reader_that_fails_ends_the_deferral(tmp_path):
    """The deferral of open_scores ends even when its reader raises: a tensor built afterwards is checked."""
    src = tmp_path / "broken.csv"
    src.write_text("system,task,instance,score\na,t1,0,1\nb,t1,0,not-a-number\n")
    with pytest.raises(VotebenchError):
        engine.open_scores(src)
    with pytest.raises(VotebenchError, match="is not finite"):
        engine.scores_from_array(_bad_values())


def test_checked_tensors_are_forgotten_when_they_die():
    """The registry holds no entry for a tensor that no longer exists (no growth over a long-lived process)."""
    gc.collect()
    before = len(canonical._CHECKED.items)
    for i in range(100):
        engine.scores_from_array(np.array([[1.0, 2.0 + i], [0.5, 2.5]]))  # checked, then dropped at once
    gc.collect()
    assert len(canonical._CHECKED.items) <= before + 1  # nothing of the 100 is alive (one may be the loop's last)


_COLLECT_IN_LOCK = """
import gc, os, threading, weakref
import numpy as np
import engine
from engine.labelled import canonical

def trial(middle):
    t = engine.scores_from_array(np.array([[1.0, 2.0], [2.0, 1.0]]))  # checked: its data has a weak reference
    gc.collect()
    gc.disable()
    g = engine.scores_from_array(np.array([[3.0, 2.0], [2.0, 1.0]]))  # checked: in the registry
    g.attrs["self"] = g  # a reference cycle: only the collector frees it
    gc.collect(0)  # g, still reachable, moves to the middle generation
    del g  # garbage there: the collection of that generation runs the registry's weakref callback
    gc.set_threshold(1, middle)
    gc.enable()
    canonical._CHECKED.add(t)  # collections at every other allocation, some inside the registry's lock
    gc.set_threshold(700, 10)

for middle in range(1, 9):
    worker = threading.Thread(target=trial, args=(middle,), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():
        print(f"deadlock at middle threshold {middle}", flush=True)
        os._exit(1)
print("ok", flush=True)
os._exit(0)
"""


def test_a_collection_inside_the_registry_does_not_deadlock():
    """A checked tensor freed by the cyclic collector while the registry's lock is held (the collector may run at
    any allocation) must not block its own thread: the weakref callback takes the same lock (core's plan cache
    uses a re-entrant lock for the same reason).  Collections are forced at every other allocation, for each
    timing of the middle generation's collection in turn; a subprocess, so a deadlock cannot hang the suite."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_COLLECT_IN_LOCK)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr[-2000:]


def test_labels_renamed_in_place_are_checked_again():
    scores = engine.scores_from_array(np.array([[1.0, 2.0], [0.5, 2.5], [3.0, 1.0]]), systems=["a", "b", "c"])
    scores.coords["system"] = ["a", "a", "c"]  # the same object and data, new labels
    labels = scores["system"].values.tolist()
    assert len(set(labels)) < len(labels)  # duplicated, by a plain count
    with pytest.raises(VotebenchError, match="duplicate system label"):
        engine.rank(scores, rule="borda")


def test_a_one_system_part_is_checked_again_outside_the_block(tmp_path):
    with canonical.one_system_parts():
        one = engine.scores_from_array(np.array([[1.0, 2.0]]))
    with pytest.raises(VotebenchError, match="at least two systems"):
        engine.to_zarr(one, tmp_path / "one.zarr")
    assert not (tmp_path / "one.zarr").exists()


@pytest.mark.parametrize("alpha", [1e-3, 1e-4, 1e-5, 1e-6])
def test_studentized_range_of_two_in_the_far_tail(alpha):
    """k = 2: the range is sqrt(2) |N(0, 1)|, so the 1 - alpha quantile is -sqrt(2) ndtri(alpha / 2) (scipy's
    inverse normal of the small tail, exact to the last bits); the quadrature's grid must reach the tail."""
    from scipy.special import ndtri

    from engine.kernels.significance import studentized_range_quantile

    want = -math.sqrt(2.0) * float(ndtri(alpha / 2.0))
    assert studentized_range_quantile(1.0 - alpha, 2) == pytest.approx(want, rel=5e-12)


@pytest.mark.parametrize(("p", "k"), [(0.01, 2), (0.01, 3), (0.2, 2), (0.5, 3), (0.1, 30), (0.3, 600), (0.999, 1000), (0.95, 3000)])
def test_studentized_range_low_quantiles_and_many_means(p, k):
    """Low quantiles (a small range, Newton started far above it) and k beyond the report's tests, against scipy."""
    from scipy.stats import studentized_range

    from engine.kernels.significance import studentized_range_quantile

    want = float(studentized_range.ppf(p, k, np.inf))
    assert studentized_range_quantile(p, k) == pytest.approx(want, rel=1e-11)
