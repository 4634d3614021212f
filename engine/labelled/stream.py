"""The within-task step of pairwise rules on chunked (dask) instance-level scores, streamed chunk by chunk.

Each chunk of instances becomes integer win counts (:func:`engine.kernels.pairblock.chunk_counts`); the counts
are summed over chunks (exact for any chunking) and finished into scores
(:func:`engine.kernels.pairblock.finish_counts`), so the whole tensor is never in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from engine.dims import INSTANCE, SYSTEM, TASK
from engine.kernels.pairblock import chunk_counts, finish_counts

__all__ = ["stream_within"]


def stream_within(x: Any, rule: Any, level: str, options: Mapping[str, Any] | None = None) -> Any:
    """The within-task step of a pairwise rule on chunked instance-level scores, streamed over chunks.

    Parameters
    ----------
    x : xarray.DataArray
        Dask-backed scores with dims (system, task, instance), the system axis in one chunk.
    rule : engine.rules.Rule
        A rule for which :func:`engine.kernels.pairblock.streams` holds.
    level : {"two", "one"}
        ``two``: task-level scores (task, system); ``one``: one score per system over every judge.
    options : mapping, optional
        Kernel options (the streamed rules take none).

    Returns
    -------
    xarray.DataArray
        Lazy; per-chunk memory ``O(S^2)`` integers, never the whole tensor.
    """
    xl = x.transpose(TASK, INSTANCE, SYSTEM)
    arr = xl.data
    S = arr.shape[-1]
    K = arr.shape[1]
    # a task's counts never exceed its number of instances: int32 while that fits, half the bytes to sum
    dt = np.int32 if K < np.iinfo(np.int32).max else np.int64
    part = da.blockwise(chunk_counts, "tkcij", arr, "tks", new_axes={"c": 2, "i": S, "j": S},
                        adjust_chunks={"k": 1}, concatenate=True, dtype=dt, meta=np.empty((0, 0, 0, 0, 0), dtype=dt),
                        count_dtype=dt)
    # (T, 2, S, S): integers, exact for any chunking; one instance chunk needs no sum
    counts = part[:, 0] if part.numblocks[1] == 1 else part.sum(axis=1, dtype=dt)
    if level == "one":
        total = counts.sum(axis=0, dtype=np.int64)  # every judge of every task: int64
        out = da.blockwise(finish_counts, "i", total, "cij", concatenate=True, dtype=np.float64, rule=rule,
                           meta=np.empty((0,), dtype=np.float64))
        return xr.DataArray(out, dims=(SYSTEM,), coords={SYSTEM: xl[SYSTEM].values})
    out = da.blockwise(finish_counts, "ti", counts, "tcij", concatenate=True, dtype=np.float64, rule=rule,
                       meta=np.empty((0, 0), dtype=np.float64))
    return xr.DataArray(out, dims=(TASK, SYSTEM), coords={TASK: xl[TASK].values, SYSTEM: xl[SYSTEM].values})
