"""The ``--block`` of a command run on a cluster: given, recorded in the store it resumes, or chosen from the cluster.

Used by ``votebench bootstrap``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: ``--block`` when neither given nor chosen from a cluster (in this process)
DEFAULT_BLOCK = 50

__all__ = ["DEFAULT_BLOCK", "replicate_block", "stored_block"]


def stored_block(store: str | os.PathLike[str] | None, kind: str = "bootstrap") -> int | None:
    """The block of the ``kind`` perturbation a results ``store`` was written with (``None``: no such store)."""
    if store is None:
        return None
    meta = Path(store) / "zarr.json"
    try:
        config = json.loads(json.loads(meta.read_text(encoding="utf-8"))["attributes"]["config"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for pert in config.get("perturbations", []) if isinstance(config, dict) else []:
        if isinstance(pert, dict) and pert.get("kind") == kind and isinstance(pert.get("block"), int):
            return int(pert["block"])
    return None


def replicate_block(args: Any, client: Any | None, prefix: str = "") -> tuple[int, str | None]:
    """``args.block`` when given; else the block of the store a run resumes; else, with a ``client``, the block
    :func:`engine.distributed.choose_block` picks for its cluster; else :data:`DEFAULT_BLOCK`.

    Returns the block and, when it was chosen from the cluster, the line that says so (for stderr, once the run
    has worked: an input refused by the workers then gets its one line alone).
    """
    if args.block is not None:
        return int(args.block), None
    if args.store and not args.overwrite:
        kept = stored_block(args.store)
        if kept is not None:
            return kept, None
    if client is None:
        return DEFAULT_BLOCK, None
    from engine.distributed.cluster import MEMORY_SHARE, TASKS_PER_THREAD, cluster_block, score_bytes

    per = score_bytes(args.input)  # one replicate holds at least the input's scores
    block, shape = cluster_block(client, args.replicates, per or 0.0)
    tasks = -(-args.replicates // block)
    memory = ("no worker memory limit" if shape.memory_per_thread is None else
              f"{_size(shape.memory_per_thread)} per thread, a block at most {MEMORY_SHARE:.0%} of it"
              + (f" at {_size(per)} per replicate" if per else " (replicate size unknown)"))
    return block, (f"votebench: {prefix}--block not given: {block} replicates per task, {tasks} tasks for {shape.threads} "
                   f"worker thread(s) on {shape.workers} worker(s) (aiming at {TASKS_PER_THREAD} per thread; {memory})")


def _size(nbytes: float) -> str:
    """``nbytes`` in B, kB, MB, GB or TB (powers of 1024), three significant figures."""
    for unit in ("B", "kB", "MB", "GB"):
        if nbytes < 1024:
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} TB"
