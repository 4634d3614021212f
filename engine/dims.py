"""Dimension names used throughout votebench.

The canonical score tensor is an ``xarray.DataArray`` named ``scores`` with
dims ``(SYSTEM, TASK, INSTANCE)``.  Its memory layout keeps ``SYSTEM`` as the
fastest-varying axis (it is a transposed view of a ``(task, instance, system)``
buffer), so that kernels, which want the system axis last, get contiguous rows.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["SYSTEM", "TASK", "INSTANCE", "JUDGE", "OPPONENT", "REPLICATE", "RULE", "CANONICAL", "LAYOUT", "Level",
           "MissingPolicy", "Over", "LEVELS", "MISSING_POLICIES", "BOOTSTRAP_AXES"]

#: the aggregation levels of instance-level data (``engine.rules``): per task mean, two-level, one-level
Level = Literal["task", "one", "two"]
#: the missing-score policies (``engine.labelled.core.apply_missing_policy``)
MissingPolicy = Literal["error", "listwise", "drop-judges"]
#: the axes a bootstrap resamples
Over = Literal["tasks", "systems", "instances"]
LEVELS: tuple[Level, ...] = get_args(Level)
MISSING_POLICIES: tuple[MissingPolicy, ...] = get_args(MissingPolicy)

SYSTEM = "system"
TASK = "task"
INSTANCE = "instance"
JUDGE = "judge"
OPPONENT = "opponent"
REPLICATE = "replicate"
RULE = "rule"

#: dimension order users see
#: axes a bootstrap can resample (``engine.labelled.bootstrap.OVER``, kept here so that the command line can offer them
#: without importing dask)
BOOTSTRAP_AXES: tuple[Over, ...] = get_args(Over)

CANONICAL = (SYSTEM, TASK, INSTANCE)
#: dimension order of the data in memory and on disk (system last)
LAYOUT = (TASK, INSTANCE, SYSTEM)
