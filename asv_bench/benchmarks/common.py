"""Shared inputs of the asv benchmarks: seeded random score tables and the shipped data folder."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

#: the repository checkout asv benchmarks (asv runs from a copy of the benchmark folder: use the env var it sets)
REPO = Path(os.environ.get("VOTEBENCH_REPO", Path(__file__).resolve().parents[2]))
DATA = REPO / "data"


def table(n_systems: int, n_tasks: int, *, seed: int = 0, ties: bool = False) -> np.ndarray:
    """Task-level scores ``(T, S)``; with ``ties`` the scores take 7 distinct values (frequent ties)."""
    rng = np.random.default_rng(seed)
    if ties:
        return rng.integers(0, 7, size=(n_tasks, n_systems)).astype(float)
    return rng.normal(size=(n_tasks, n_systems))


def tensor(n_systems: int, n_tasks: int, n_instances: int, *, seed: int = 0):
    """An in-memory score tensor (system, task, instance) built through the public API."""
    import engine

    rng = np.random.default_rng(seed)
    x = rng.integers(0, 11, size=(n_systems, n_tasks, n_instances)).astype(float) / 10
    return engine.scores_from_array(x)


def skip_unless(condition: bool) -> None:
    """asv's way of skipping a case: NotImplementedError in setup."""
    if not condition:
        raise NotImplementedError
