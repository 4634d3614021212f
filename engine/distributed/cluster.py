"""Work of one command spread over a dask cluster: the current client, block sizes from the cluster, blocks as tasks.

- :func:`on_cluster` / :func:`current_client` -- the client a command connected to (``--scheduler`` or
  ``DASK_SCHEDULER_ADDRESS``), current inside the command's run, and its cluster the runner of the engine's
  blocks (:func:`engine.limits.spread`: bootstrap replicates, the pairs of :func:`engine.compare_scores`), so a
  command does not thread a client through every call;
- :func:`choose_block` -- the block size rule (a pure function of the cluster's worker threads and memory);
  :func:`cluster_shape` reads those from the scheduler, :func:`cluster_block` does both;
- :func:`map_blocks` -- ``fn(shared, block)`` for every block as tasks on the cluster (``shared`` sent once),
  the results in order; a lost scheduler or worker pool is :class:`~engine.errors.ClusterLost` (exit 75).

The numbers never depend on the block size (every replicate, sign pattern and pair is drawn from its own seed),
so the cluster only changes how the work is cut, never the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import ClusterLost
from engine.limits import running_blocks

__all__ = ["TASKS_PER_THREAD", "MEMORY_SHARE", "ClusterRunner", "ClusterShape", "choose_block", "cluster_block",
           "cluster_shape", "current_client", "score_bytes", "lost_cluster", "map_blocks", "on_cluster"]

#: tasks per worker thread the block rule aims at: a few per thread keep every thread busy while the slowest
#: tasks finish (the tail) and let a restarted worker's share be spread, without the scheduler's cost per task
#: (about 2 ms of its CPU) mattering next to tasks of votebench's own overhead (25-60 ms at least)
TASKS_PER_THREAD = 4
#: share of a worker thread's memory one block may take (its arrays plus the copies made while scoring)
MEMORY_SHARE = 0.25

_CLIENT: ContextVar[Any | None] = ContextVar("votebench_dask_client", default=None)


@contextmanager
def on_cluster(client: Any | None) -> Iterator[Any | None]:
    """Make ``client`` the one :func:`current_client` returns inside the block, and its cluster the runner of the
    engine's blocks (:func:`engine.limits.running_blocks`); ``None``: stay in this process."""
    token = _CLIENT.set(client)
    try:
        with running_blocks(None if client is None else ClusterRunner(client)):
            yield client
    finally:
        _CLIENT.reset(token)


def current_client() -> Any | None:
    """The client of :func:`on_cluster`, else ``None`` (work runs in this process)."""
    return _CLIENT.get()


class ClusterRunner:
    """The engine's blocks as tasks of ``client``'s cluster (an :class:`engine.limits.BlockRunner`)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def block(self, items: int, bytes_per_item: float) -> int:
        """:func:`cluster_block` for the cluster as it is now."""
        return cluster_block(self.client, items, bytes_per_item)[0]

    def map(self, fn: Callable[[Any, Any], Any], shared: Any, blocks: list[Any]) -> list[Any]:
        """:func:`map_blocks` on the cluster."""
        return map_blocks(self.client, fn, shared, blocks)


@dataclass(frozen=True)
class ClusterShape:
    """What a cluster offers a command: its workers, their threads in all, and the memory of one thread (bytes).

    ``memory_per_thread`` is the smallest over the workers (``memory_limit / nthreads``); ``None`` when no worker
    sets a limit.
    """

    workers: int
    threads: int
    memory_per_thread: float | None


def cluster_shape(client: Any) -> ClusterShape:
    """The :class:`ClusterShape` of ``client``'s cluster, from the scheduler's view of its workers."""
    workers = (client.scheduler_info() or {}).get("workers", {}) or {}
    threads = sum(int(w.get("nthreads", 1) or 1) for w in workers.values())
    limits = [float(w["memory_limit"]) / max(1, int(w.get("nthreads", 1) or 1))
              for w in workers.values() if w.get("memory_limit")]
    return ClusterShape(workers=len(workers), threads=threads, memory_per_thread=min(limits) if limits else None)


def choose_block(items: int, threads: int, memory_per_thread: float | None, bytes_per_item: float, *,
                 tasks_per_thread: int = TASKS_PER_THREAD, memory_share: float = MEMORY_SHARE) -> int:
    """The block size (items per task) for ``items`` items on a cluster of ``threads`` worker threads.

    The rule: the smallest block that makes at most ``tasks_per_thread`` tasks per thread, i.e.
    ``ceil(items / (tasks_per_thread * threads))`` items per block, but never more than a block whose
    ``bytes_per_item`` arrays fit in ``memory_share`` of one thread's memory (``memory_per_thread``; no bound when
    ``None``); at least 1 and at most ``items``.  So a small
    cluster gets few large blocks (little overhead), a large one enough blocks to keep every thread busy, and a
    worker with little memory smaller blocks.

    Examples
    --------
    >>> choose_block(2000, 2, None, 1e3)       # 2 threads: 8 tasks of 250
    250
    >>> choose_block(2000, 100, None, 1e3)     # 100 threads: 400 tasks of 5
    5
    >>> choose_block(2000, 2, 4e6, 1e4)        # 1 MB per block at most: 100 replicates of 10 kB
    100
    """
    if items < 1:
        return 1
    want = math.ceil(items / max(1, tasks_per_thread * max(1, threads)))
    if memory_per_thread is not None and bytes_per_item > 0:
        want = min(want, int(memory_share * memory_per_thread // bytes_per_item))
    return max(1, min(items, want))


def cluster_block(client: Any, items: int, bytes_per_item: float) -> tuple[int, ClusterShape]:
    """:func:`choose_block` for ``client``'s cluster as it is now, and the :class:`ClusterShape` it was chosen for."""
    shape = cluster_shape(client)
    return choose_block(items, shape.threads, shape.memory_per_thread, bytes_per_item), shape


def score_bytes(path: str) -> float | None:
    """Bytes the scores of the input at ``path`` take at least: a store's score tensor (float64), else the file's size
    on disk (an over-estimate for text formats, so blocks sized from it err small); ``None`` for a URL or an
    unreadable path."""
    if "://" in str(path):  # a URL: its size is not looked up
        return None
    p = Path(path)
    if p.is_dir():
        try:
            import xarray as xr

            ds = xr.open_zarr(p, consolidated=False)
            return 8.0 * float(next(iter(ds.data_vars.values())).size)
        except Exception:  # noqa: BLE001 - not a store of scores: its files' size below
            return float(sum(f.stat().st_size for f in p.rglob("*") if f.is_file()))
    try:
        return float(p.stat().st_size)
    except OSError:
        return None


def map_blocks(client: Any, fn: Callable[[Any, Any], Any], shared: Any, blocks: Sequence[Any]) -> list[Any]:
    """``[fn(shared, b) for b in blocks]`` computed as one task per block on ``client``'s workers.

    ``shared`` (the data every block reads) is sent to the cluster once, not once per task.  A
    :class:`~engine.errors.VotebenchError` raised in a task is raised here with its message
    (:func:`~engine.distributed.client.run_task`); a lost scheduler or worker pool is :class:`ClusterLost`.
    """
    from engine.distributed.client import run_task, task_result

    data = client.scatter(shared, broadcast=False, hash=False)
    futures = [client.submit(run_task, fn, data, b, pure=False) for b in blocks]
    out: list[Any] = []
    try:
        for fut in futures:
            out.append(task_result(_result(client, fut, len(out), len(futures))))
    finally:
        client.cancel([*futures, data])
    return out


def _result(client: Any, future: Any, done: int, total: int) -> Any:
    """``future.result()``; a lost cluster is :class:`ClusterLost` (nothing was written: re-run the command)."""
    try:
        return future.result()
    except BaseException as exc:  # noqa: BLE001 - a lost cluster shows as cancelled futures (a BaseException)
        why = lost_cluster(client, exc, fix="a smaller --block, or workers with more memory")
        if why is None:
            raise
        raise ClusterLost(f"{why} after {done} of {total} tasks; nothing was written: run the same command again") \
            from None


def lost_cluster(client: Any, exc: BaseException, fix: str = "lower `block` in the sweep file") -> str | None:
    """What was lost when ``exc`` ended a task's wait, or ``None`` when ``exc`` is no loss of the cluster.

    ``fix``: what to try when every worker that ran a task died (out of memory, most likely).
    """
    from asyncio import CancelledError as AsyncCancelled
    from concurrent.futures import CancelledError

    from distributed import KilledWorker
    from distributed.comm import CommClosedError

    if isinstance(exc, KeyboardInterrupt):
        return None
    if isinstance(exc, KilledWorker):
        worker = getattr(getattr(exc, "last_worker", None), "address", "?")
        return f"every worker that ran a block died ({exc.allowed_failures + 1} workers, the last {worker}; out of memory? {fix})"
    status = str(getattr(client, "status", ""))
    if isinstance(exc, CancelledError | AsyncCancelled | CommClosedError | OSError | TimeoutError) and (
            status != "running" or "connection" in str(exc).lower()):
        address = getattr(getattr(client, "scheduler", None), "address", None) or "the scheduler"
        return f"lost the dask scheduler {address}"
    return None
