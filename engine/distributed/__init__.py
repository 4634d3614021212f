"""The distributed layer: what a task reads, how it runs on a dask cluster, and one-off cluster runs.

- :mod:`engine.distributed.source` -- the input a task reads (:class:`Source`:
  path or URL, loader options, checksums of the input and its sidecar) and the per-process LRU cache of inputs
  (:func:`load_source`: each worker reads an input once and checks it);
- :mod:`engine.distributed.client` -- connecting to a scheduler
  (:func:`connect`, :func:`check_address`), the embedded in-process cluster
  (:func:`embedded_client`), and the wrapper every engine task runs in
  (:func:`run_task`: single-threaded dask inside, a
  :class:`~engine.errors.VotebenchError` carried back as a value);
- :mod:`engine.distributed.cluster` -- one command's work spread over a cluster: the current client
  (:func:`on_cluster`), block sizes from the cluster's threads and memory (:func:`choose_block`), blocks as
  tasks (:func:`map_blocks`);
- :mod:`engine.distributed.convert` -- ``votebench convert --scheduler``: a long CSV parsed by the workers in
  parts of whole lines, the store's slabs written by them as regions (:func:`convert_on_cluster`);
- :mod:`engine.distributed.runs` -- rankings and bootstraps of an input read
  by path: the task functions, :func:`cluster_rank` /
  :func:`cluster_bootstrap` for ``votebench rank``/``bootstrap --scheduler``, and
  :func:`rank_input` (rank an input on a worker or here, whichever reads it).

Used by :mod:`engine.sweep` and by the CLI; ``distributed`` itself is imported
only when a client is made.  The names below are imported on first use (PEP 562), so that a local run
imports only the modules it calls (not the cluster and client code).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from engine.distributed.client import (
        LocalPool,
        TaskFailed,
        check_address,
        connect,
        embedded_client,
        run_task,
        single_threaded,
        task_result,
    )
    from engine.distributed.cluster import (
        ClusterRunner,
        ClusterShape,
        choose_block,
        cluster_block,
        cluster_shape,
        current_client,
        lost_cluster,
        map_blocks,
        on_cluster,
    )
    from engine.distributed.runs import (
        bootstrap_source,
        cluster_bootstrap,
        cluster_rank,
        compute,
        is_store,
        rank_input,
        rank_scores,
        rank_source,
    )
    from engine.distributed.source import (
        IN_MEMORY_BYTES,
        LOADER_KEYS,
        Source,
        cached_sources,
        clear_cache,
        input_checksum,
        load_source,
        loader_keys,
        make_source,
        open_input,
        open_source,
        sidecar_of,
    )

#: public name -> the submodule that defines it (imported on first access)
_LAZY = {
    "IN_MEMORY_BYTES": "source",
    "cached_sources": "source",
    "clear_cache": "source",
    "load_source": "source",
    "LocalPool": "client",
    "TaskFailed": "client",
    "check_address": "client",
    "connect": "client",
    "embedded_client": "client",
    "run_task": "client",
    "single_threaded": "client",
    "task_result": "client",
    "ClusterRunner": "cluster",
    "ClusterShape": "cluster",
    "choose_block": "cluster",
    "cluster_block": "cluster",
    "cluster_shape": "cluster",
    "current_client": "cluster",
    "lost_cluster": "cluster",
    "map_blocks": "cluster",
    "on_cluster": "cluster",
    "bootstrap_source": "runs",
    "cluster_bootstrap": "runs",
    "cluster_rank": "runs",
    "compute": "runs",
    "is_store": "runs",
    "rank_input": "runs",
    "rank_scores": "runs",
    "rank_source": "runs",
    "LOADER_KEYS": "source",
    "Source": "source",
    "input_checksum": "source",
    "loader_keys": "source",
    "make_source": "source",
    "open_input": "source",
    "open_source": "source",
    "sidecar_of": "source",
}


def __getattr__(name: str) -> Any:
    """Import a public name of the distributed layer from its submodule on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ClusterRunner", "ClusterShape", "choose_block", "cluster_block", "cluster_shape", "current_client", "lost_cluster",
    "map_blocks", "on_cluster",
    "IN_MEMORY_BYTES", "LOADER_KEYS", "LocalPool", "Source", "loader_keys", "TaskFailed", "bootstrap_source", "cached_sources",
    "check_address", "clear_cache", "cluster_bootstrap", "cluster_rank", "compute", "connect", "embedded_client",
    "input_checksum", "is_store", "load_source", "make_source", "open_input", "open_source", "rank_input", "rank_scores",
    "rank_source", "run_task", "sidecar_of", "single_threaded", "task_result",
]
