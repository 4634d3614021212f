"""Pure numpy kernels (compiled with numba: the pair counts of ``paircount``): no xarray, no dask, no I/O; the system axis is last."""

from engine.kernels.aggregate import borda_across, mean_across
from engine.kernels.ranking import borda_points, count_present, min_rank, tie_groups

__all__ = ["borda_points", "count_present", "min_rank", "tie_groups", "borda_across", "mean_across"]
