"""Rankings and bootstraps of an input read by path: the task functions, and one-off runs of them on a cluster.

``votebench rank`` / ``bootstrap`` with ``--scheduler`` on a table send the
:class:`~engine.distributed.source.Source` to the workers (:func:`cluster_rank`,
:func:`cluster_bootstrap`); the sweep's kinds use the same task functions
(:func:`rank_source`, :func:`bootstrap_source`).  :func:`rank_input` ranks an
input wherever it is best read: on a worker (a table, with a client), or here
(a store is opened lazily and its chunks computed on the cluster or by local threads).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import REPLICATE, SYSTEM
from engine.distributed.client import run_task, task_result
from engine.distributed.source import Source, load_source, make_source, open_input

__all__ = ["bootstrap_source", "cluster_bootstrap", "cluster_rank", "compute", "is_store", "rank_input", "rank_scores",
           "rank_source"]


def rank_scores(scores: xr.DataArray, opts: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Full-data ``score``, ``rank`` and the ranking's attrs (rule label, resolved level, missing policy) of :func:`engine.rank`."""
    from engine.labelled.core import rank

    ds = rank(scores, **opts).compute(scheduler="synchronous")
    return np.asarray(ds["score"].values), np.asarray(ds["rank"].values), dict(ds.attrs)


def rank_source(src: Source, opts: Mapping[str, Any],
                over: str | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any], list[str]]:
    """:func:`rank_scores` of the input ``src`` (read by this process) and its systems; ``over``: also check that a
    bootstrap over that axis can run with ``opts``."""
    scores, _ = load_source(src)
    if over is not None:
        from engine.labelled.bootstrap import plan_for

        plan_for(scores, over, opts)
    score, rank, attrs = rank_scores(scores, opts)
    return score, rank, attrs, [str(s) for s in scores[SYSTEM].values]


def bootstrap_source(src: Source, opts: Mapping[str, Any], over: str, ids: np.ndarray, seed: int,
                     block: int | None = None) -> np.ndarray:
    """Replicate scores ``(len(ids), S)`` of :func:`engine.bootstrap` on the input ``src`` (read by this process)."""
    from engine.labelled.bootstrap import bootstrap

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

    Every task opens the input by path (:func:`~engine.distributed.source.load_source`); the replicate
    scores equal those of ``engine.bootstrap(scores, ..., block=block)``.
    Returns the computed Dataset ``score``, ``rank``, ``replicate_score``,
    ``replicate_rank``.
    """
    from engine.kernels.ranking import min_rank

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


def is_store(path: str | os.PathLike[str]) -> bool:
    """A zarr store (a local folder or a URL): opened lazily, its chunks read by whoever computes."""
    from engine.labelled.canonical import is_url

    return is_url(path) or Path(path).is_dir()


def compute(ds: xr.Dataset, client: Any | None = None) -> xr.Dataset:
    """``ds`` computed: on ``client``'s cluster (default: the command's, :func:`~engine.distributed.cluster.on_cluster`;
    its workers read the store's chunks), else with local threads."""
    if all(isinstance(v.data, np.ndarray) for v in ds.data_vars.values()):
        return ds
    if client is None:
        from engine.distributed.cluster import current_client

        client = current_client()
    if client is not None:
        return ds.compute(scheduler=client)
    import dask

    with dask.config.set(scheduler="threads"):
        return ds.compute()


def rank_input(path: str | os.PathLike[str], *, client: Any | None = None, meta: str | os.PathLike[str] | None = None,
               lower_is_better: Sequence[str] = (), loader: Mapping[str, Any] | None = None,
               **options: Any) -> tuple[xr.Dataset, xr.DataArray | None]:
    """:func:`engine.rank` of the input at ``path``, computed where it is best read.

    With a ``client`` a table is read and ranked by one of its workers (:func:`cluster_rank`: only the
    ranking comes back); otherwise the input is opened here (:func:`~engine.distributed.source.open_input`;
    a store lazily, its chunks computed on the cluster or by local threads).

    Returns
    -------
    ranking : xarray.Dataset
        Computed ``score`` and ``rank`` per system (attrs ``rule``, ``level``, ``missing``).
    scores : xarray.DataArray or None
        The scores when this process read them (for the notes on what was assumed or left out), else ``None``.
    """
    if client is not None and not is_store(path):
        src = make_source(path, meta=meta, lower_is_better=lower_is_better, loader=loader)
        return cluster_rank(client, src, **options), None
    from engine.labelled.core import rank

    scores = open_input(path, meta=meta, lower_is_better=lower_is_better, loader=loader)
    return compute(rank(scores, **options), client), scores
