"""The distributed layer: what a task reads, how it runs on a dask cluster, and one-off cluster runs.

- :mod:`engine.distributed.source` -- the input a task reads (:class:`Source`:
  path or URL, loader options, checksums of the input and its sidecar);
- :mod:`engine.distributed.cache` -- the per-process LRU cache of inputs
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
only when a client is made.
"""

from engine.distributed.cache import IN_MEMORY_BYTES, cached_sources, clear_cache, load_source
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
    LOADER_KEYS,
    Source,
    input_checksum,
    loader_keys,
    make_source,
    open_input,
    open_source,
    sidecar_of,
)

__all__ = [
    "ClusterRunner", "ClusterShape", "choose_block", "cluster_block", "cluster_shape", "current_client", "lost_cluster",
    "map_blocks", "on_cluster",
    "IN_MEMORY_BYTES", "LOADER_KEYS", "LocalPool", "Source", "loader_keys", "TaskFailed", "bootstrap_source", "cached_sources",
    "check_address", "clear_cache", "cluster_bootstrap", "cluster_rank", "compute", "connect", "embedded_client",
    "input_checksum", "is_store", "load_source", "make_source", "open_input", "open_source", "rank_input", "rank_scores",
    "rank_source", "run_task", "sidecar_of", "single_threaded", "task_result",
]
