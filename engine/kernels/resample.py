"""Reproducible resampling draws: bootstrap counts and subsets (pure numpy).

Every replicate's draw comes from its own generator,
``numpy.random.SeedSequence(seed, spawn_key=(stream, replicate, *key))``, so a
replicate depends on the seed, the resampled axis (``stream``) and its own
index only: results are bit-identical for any chunking of the replicates, any
number of workers and any scheduling order, and one replicate can be recomputed
alone (``replicates=[b]``).

Streams keep the axes independent: the task draw of replicate 3 is unrelated to
its system draw or to the instance draw of the same replicate.

Examples
--------
>>> resample_counts(4, seed=0, replicates=2).sum(axis=1).tolist()
[4, 4]
>>> bool((resample_counts(4, seed=0, replicates=[1]) == resample_counts(4, seed=0, replicates=2)[1:]).all())
True
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

__all__ = [
    "STREAMS",
    "replicate_ids",
    "replicate_generator",
    "resample_indices",
    "resample_counts",
    "subset_indices",
    "subset_masks",
    "instance_counts",
    "counts_from_indices",
    "stream_id",
]

#: one independent random stream per resampled axis or experiment
STREAMS = {
    "tasks": 1,
    "systems": 2,
    "instances": 3,
    "subsets": 4,
    "corrupt": 5,
    "omit": 6,
    "synthetic": 7,
    "iia": 8,
    "trial": 9,
    "battles": 10,
    "signs": 11,
}


def replicate_ids(replicates: int | Sequence[int] | np.ndarray) -> np.ndarray:
    """Replicate indices: ``range(replicates)`` for an int, else the given indices (int64, 1-d)."""
    if isinstance(replicates, (int, np.integer)):
        if replicates < 0:
            raise ValueError(f"replicates must be >= 0, got {replicates}")
        return np.arange(int(replicates), dtype=np.int64)
    ids = np.asarray(replicates, dtype=np.int64).reshape(-1)
    if (ids < 0).any():
        raise ValueError("replicate indices must be >= 0")
    return ids


def stream_id(stream: str) -> int:
    """The spawn-key entry of a random stream: its number in :data:`STREAMS`, else one derived from its name.

    A stream that is not in the table (a perturbation kind of a plugin names its own, ``Kind.stream``) gets
    ``2**32 + crc32(name)``: the same in every process and on every worker without any registration, and never
    one of the table's numbers, so its draws are independent of the built-in streams'.

    Examples
    --------
    >>> stream_id("tasks"), stream_id("leave_one_out") == stream_id("leave_one_out") > 2**32
    (1, True)
    """
    if not isinstance(stream, str) or not stream:
        raise ValueError(f"a random stream is a non-empty name, got {stream!r}")
    known = STREAMS.get(stream)
    return known if known is not None else (1 << 32) + zlib.crc32(stream.encode("utf-8"))


def replicate_generator(seed: int, replicate: int, *, stream: str, key: Sequence[int] = ()) -> np.random.Generator:
    """The generator of one replicate of one stream (``key`` adds more levels, e.g. a task index)."""
    if seed is None or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    ss = np.random.SeedSequence(int(seed), spawn_key=(stream_id(stream), int(replicate), *map(int, key)))
    return np.random.default_rng(ss)


def resample_indices(
    n: int, *, seed: int, replicates: int | Sequence[int] | np.ndarray, stream: str = "tasks", size: int | None = None
) -> np.ndarray:
    """Bootstrap draws with replacement: ``(B, size)`` sorted indices into ``range(n)``.

    ``size`` defaults to ``n`` (the classical bootstrap).
    """
    if n < 1:
        raise ValueError("cannot resample an empty axis")
    size = n if size is None else int(size)
    ids = replicate_ids(replicates)
    out = np.empty((ids.size, size), dtype=np.int64)
    for i, b in enumerate(ids):
        out[i] = np.sort(replicate_generator(seed, b, stream=stream).integers(0, n, size=size))
    return out


def counts_from_indices(indices: np.ndarray, n: int) -> np.ndarray:
    """Multiplicities ``(..., n)`` of resample indices ``(..., size)``."""
    indices = np.asarray(indices, dtype=np.int64)
    flat = indices.reshape(-1, indices.shape[-1])
    offs = (np.arange(flat.shape[0]) * n)[:, None]
    counts = np.bincount((flat + offs).ravel(), minlength=flat.shape[0] * n).reshape(flat.shape[0], n)
    return counts.reshape(*indices.shape[:-1], n)


def resample_counts(
    n: int, *, seed: int, replicates: int | Sequence[int] | np.ndarray, stream: str = "tasks"
) -> np.ndarray:
    """Bootstrap multiplicities ``(B, n)`` (each row sums to ``n``), consistent with :func:`resample_indices`."""
    return counts_from_indices(resample_indices(n, seed=seed, replicates=replicates, stream=stream), n)


def subset_indices(
    n: int, size: int, *, seed: int, replicates: int | Sequence[int] | np.ndarray, stream: str = "subsets"
) -> np.ndarray:
    """Subsamples without replacement: ``(B, size)`` sorted indices into ``range(n)``.

    The draw of replicate ``b`` also depends on ``size``, so curves over subset
    sizes use independent subsets for each size.
    """
    if not 1 <= size <= n:
        raise ValueError(f"subset size must be between 1 and {n}, got {size}")
    ids = replicate_ids(replicates)
    out = np.empty((ids.size, size), dtype=np.int64)
    for i, b in enumerate(ids):
        rng = replicate_generator(seed, b, stream=stream, key=(size,))
        out[i] = np.sort(rng.choice(n, size=size, replace=False))
    return out


def subset_masks(
    n: int, size: int, *, seed: int, replicates: int | Sequence[int] | np.ndarray, stream: str = "subsets"
) -> np.ndarray:
    """:func:`subset_indices` as a boolean membership mask ``(B, n)``."""
    idx = subset_indices(n, size, seed=seed, replicates=replicates, stream=stream)
    mask = np.zeros((idx.shape[0], n), dtype=bool)
    np.put_along_axis(mask, idx, True, axis=1)
    return mask


def instance_counts(
    present: np.ndarray,
    *,
    seed: int,
    replicates: int | Sequence[int] | np.ndarray,
    tasks: Sequence[int] | np.ndarray | None = None,
    start: int = 0,
    stop: int | None = None,
    dtype: type = np.float64,
) -> np.ndarray:
    """Bootstrap multiplicities of the instances of every task: ``(B, len(tasks), stop - start)``.

    Task ``t`` resamples its real instances, the positions where ``present[t]``
    is True (padding of a ragged tensor always gets count 0), with replacement,
    as many as it has.  Its draw in replicate ``b`` comes from
    ``SeedSequence(seed, spawn_key=(instances, b, t))``: the same whatever block
    of tasks, instances or replicates is asked for, so a chunk ``[start, stop)``
    of the instance axis is a slice of the full draw.

    Parameters
    ----------
    present : bool array, shape (T', K)
        Which (task, instance) judges exist, one row per task drawn.
    tasks : array of int, optional
        Global indices of the tasks of the rows of ``present`` (default
        ``0 .. T'-1``); they key the random streams.
    start, stop : int
        Instance range to return (default the whole axis).

    Examples
    --------
    >>> c = instance_counts(np.array([[True, True, False]]), seed=1, replicates=3)
    >>> c.shape, c.sum(axis=-1).ravel().tolist(), bool((c[..., 2] == 0).all())
    ((3, 1, 3), [2.0, 2.0, 2.0], True)
    """
    present = np.asarray(present, dtype=bool)
    width = present.shape[-1]
    tasks = np.arange(present.shape[0]) if tasks is None else np.asarray(tasks, dtype=np.int64)
    if tasks.size != present.shape[0]:
        raise ValueError(f"got {tasks.size} task indices for {present.shape[0]} rows of present")
    stop = width if stop is None else stop
    ids = replicate_ids(replicates)
    out = np.zeros((ids.size, tasks.size, stop - start), dtype=dtype)
    positions = [np.flatnonzero(row) for row in present]
    for i, b in enumerate(ids):
        for j, t in enumerate(tasks):
            pos = positions[j]
            if pos.size == 0:
                continue
            rng = replicate_generator(seed, b, stream="instances", key=(int(t),))
            drawn = rng.integers(0, pos.size, size=pos.size)
            counts = np.bincount(drawn if pos.size == width else pos[drawn], minlength=width)  # every position: pos[i] = i
            out[i, j] = counts[start:stop]
    return out
