"""Dimension names used throughout votebench.

The canonical score tensor is an ``xarray.DataArray`` named ``scores`` with
dims ``(SYSTEM, TASK, INSTANCE)``.  Its memory layout keeps ``SYSTEM`` as the
fastest-varying axis (it is a transposed view of a ``(task, instance, system)``
buffer), so that kernels, which want the system axis last, get contiguous rows.
"""

from __future__ import annotations

__all__ = ["SYSTEM", "TASK", "INSTANCE", "JUDGE", "OPPONENT", "REPLICATE", "RULE", "CANONICAL", "LAYOUT"]

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
BOOTSTRAP_AXES = ("tasks", "systems", "instances")

CANONICAL = (SYSTEM, TASK, INSTANCE)
#: dimension order of the data in memory and on disk (system last)
LAYOUT = (TASK, INSTANCE, SYSTEM)
