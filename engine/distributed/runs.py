"""Rankings and bootstraps of an input read by path: the task functions, and one-off runs of them on a cluster.

``votebench rank`` / ``bootstrap`` with ``--scheduler`` on a table send the
:class:`~engine.distributed.source.Source` to the workers (:func:`cluster_rank`,
:func:`cluster_bootstrap`); the sweep's kinds use the same task functions
(:func:`rank_source`, :func:`bootstrap_source`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..dims import REPLICATE, SYSTEM
from .cache import load_source
from .client import run_task, task_result
from .source import Source

__all__ = ["bootstrap_source", "cluster_bootstrap", "cluster_rank", "rank_scores", "rank_source"]


def rank_scores(scores: xr.DataArray, opts: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Full-data ``score``, ``rank`` and the ranking's attrs (rule label, resolved level, missing policy) of :func:`engine.rank`."""
    from ..core import rank

    ds = rank(scores, **opts).compute(scheduler="synchronous")
    return np.asarray(ds["score"].values), np.asarray(ds["rank"].values), dict(ds.attrs)


def rank_source(src: Source, opts: Mapping[str, Any],
                over: str | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any], list[str]]:
    """:func:`rank_scores` of the input ``src`` (read by this process) and its systems; ``over``: also check that a
    bootstrap over that axis can run with ``opts``."""
    scores, _ = load_source(src)
    if over is not None:
        from ..bootstrap import plan_for

        plan_for(scores, over, opts)
    score, rank, attrs = rank_scores(scores, opts)
    return score, rank, attrs, [str(s) for s in scores[SYSTEM].values]


def bootstrap_source(src: Source, opts: Mapping[str, Any], over: str, ids: np.ndarray, seed: int,
                     block: int | None = None) -> np.ndarray:
    """Replicate scores ``(len(ids), S)`` of :func:`engine.bootstrap` on the input ``src`` (read by this process)."""
    from ..bootstrap import bootstrap

    scores, _ = load_source(src)
    ds = bootstrap(scores, over=over, replicates=ids, seed=seed, block=block, **opts)
    return np.asarray(ds["replicate_score"].values, dtype=np.float64)


def cluster_rank(client: Any, source: Source, **options: Any) -> xr.Dataset:
    """:func:`engine.rank` of an input computed by one of ``client``'s workers, which reads it by path.

    Returns the computed ranking (``score``, ``rank`` per system; attrs ``rule``, ``level``, ``missing``).
    """
    score, rank, attrs, systems = task_result(client.submit(run_task, rank_source, source, options, pure=False).result())
    ds = xr.Dataset({"score": (SYSTEM, score), "rank": (SYSTEM, rank)}, coords={SYSTEM: np.array(systems, dtype=object)})
    ds.attrs = attrs
    return ds


def cluster_bootstrap(client: Any, source: Source, *, over: str, replicates: int, seed: int, block: int,
                      **options: Any) -> xr.Dataset:
    """:func:`engine.bootstrap` as tasks on ``client``'s workers: the point ranking and one task per ``block`` replicates.

    Every task opens the input by path (:func:`~engine.distributed.cache.load_source`); the replicate
    scores equal those of ``engine.bootstrap(scores, ..., block=block)``.
    Returns the computed Dataset ``score``, ``rank``, ``replicate_score``,
    ``replicate_rank``.
    """
    from ..kernels.ranking import min_rank

    point = client.submit(run_task, rank_source, source, options, over, pure=False)
    futures = [client.submit(run_task, bootstrap_source, source, options, over, np.arange(i, min(replicates, i + block)), seed,
                             block, pure=False) for i in range(0, replicates, block)]
    score, rank, attrs, systems = task_result(point.result())
    R = np.concatenate([task_result(f.result()) for f in futures], axis=0)
    ds = xr.Dataset({"score": (SYSTEM, score), "rank": (SYSTEM, rank), "replicate_score": ((REPLICATE, SYSTEM), R),
                     "replicate_rank": ((REPLICATE, SYSTEM), min_rank(R))},
                    coords={SYSTEM: np.array(systems, dtype=object), REPLICATE: np.arange(replicates)})
    ds.attrs = {"rule": attrs["rule"], "over": over, "replicates": replicates, "seed": seed}
    return ds
