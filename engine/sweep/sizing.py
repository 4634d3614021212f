"""The ``block`` of a sweep's perturbations when the sweep file omits it: kept from the store a run resumes, else
sized from the cluster (:func:`engine.distributed.choose_block`, as ``votebench bootstrap`` does), else the kind's
default.

A perturbation cut into blocks (``block`` among its keys: bootstrap, subsets, manipulation, rescaling) runs
``variants x ceil(n / block)`` tasks, where ``n`` is its replicates (or repeats) and ``variants`` the blocks that
share one cut (inputs x rules x subset sizes for a kind that reads an input, the variants of a synthetic kind).
The block chosen is the smallest that makes at most :data:`engine.distributed.cluster.TASKS_PER_THREAD` tasks
per worker thread for that perturbation, and fits in a share of one thread's memory at the bytes one replicate
reads (the input's scores; a synthetic kind's tensors).  The chosen block is written into the sweep's declaration,
so the store records it and a re-run (with or without a cluster) resumes with the same one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from engine.distributed.cluster import TASKS_PER_THREAD, ClusterShape, choose_block, score_bytes
from engine.sweep.config import SweepConfig, parse_config
from engine.sweep.kinds import get_kind
from engine.sweep.results import resolve_store
from engine.sweep.runner import input_source

__all__ = ["sized_blocks", "stored_perturbations"]


def stored_perturbations(cfg: SweepConfig) -> list[Any] | None:
    """The perturbations of the sweep declaration recorded in ``cfg``'s store (``None``: no results store there)."""
    meta = resolve_store(cfg.store) / "zarr.json"
    try:
        config = json.loads(json.loads(meta.read_text(encoding="utf-8"))["attributes"]["config"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    perts = config.get("perturbations") if isinstance(config, dict) else None
    return perts if isinstance(perts, list) else []


def sized_blocks(cfg: SweepConfig, shape: ClusterShape | None, *, overwrite: bool = False
                 ) -> tuple[SweepConfig, list[str]]:
    """``cfg`` with a ``block`` for every perturbation whose declaration omits it, and a line per block chosen.

    A store the run resumes (it exists and ``overwrite`` is false) gives its perturbation's recorded block (or none,
    for a store written before blocks were chosen: the kind's default, as then).  Otherwise, on a cluster of
    ``shape``, the block is chosen as the module says; without a cluster (``shape`` None) the kind's default stays.
    """
    raw_perts = list(cfg.raw.get("perturbations") or [])
    omitted = [i for i, p in enumerate(raw_perts) if isinstance(p, Mapping) and "block" not in p
               and (kind := get_kind(str(p.get("kind")))) is not None and "block" in kind.keys]
    if not omitted:
        return cfg, []
    stored = None if overwrite else stored_perturbations(cfg)
    notes, blocks = [], {}
    for i in omitted:
        if stored is not None:  # resumed: the store's block, whatever the cluster
            old = stored[i] if i < len(stored) and isinstance(stored[i], Mapping) else {}
            if isinstance(old.get("block"), int) and old.get("kind") == raw_perts[i].get("kind"):
                blocks[i] = int(old["block"])
            continue
        if shape is None:
            continue
        spec = cfg.perturbations[i]
        n, variants, per = _cut(cfg, spec)
        slots = max(1, (TASKS_PER_THREAD * max(1, shape.threads)) // variants)  # tasks this perturbation may make
        blocks[i] = choose_block(n, slots, shape.memory_per_thread, per, tasks_per_thread=1)
        tasks = variants * math.ceil(n / blocks[i])
        notes.append(f"perturbation {spec['name']!r}: block not given: {blocks[i]} per task, {tasks} tasks for "
                     f"{shape.threads} worker thread(s) on {shape.workers} worker(s) (aiming at {TASKS_PER_THREAD} "
                     "per thread)")
    if not blocks:
        return cfg, []
    raw = dict(cfg.raw)
    raw["perturbations"] = [{**p, "block": blocks[i]} if i in blocks else p for i, p in enumerate(raw_perts)]
    return parse_config(raw, where="sweep", base=cfg.base), notes


def _cut(cfg: SweepConfig, spec: Mapping[str, Any]) -> tuple[int, int, float]:
    """What a perturbation's block cuts: its replicates (or repeats), the blocks that share one cut, and the bytes one
    replicate reads."""
    n = int(spec["replicates"] if "replicates" in spec else spec["repeats"])
    kind = get_kind(spec["kind"])
    if kind is not None and kind.needs_input:
        variants = len(cfg.inputs) * len(cfg.rules) * len(spec.get("sizes") or [1])
        sizes = [score_bytes(input_source(cfg, inp).path) for inp in cfg.inputs]
        return n, variants, max([s for s in sizes if s is not None], default=0.0)
    cells = int(spec.get("n_systems", 1)) * int(spec.get("n_tasks", 1)) * int(spec.get("n_instances", 1))
    return n, len(spec.get("variants") or [1]), 32.0 * cells  # a synthetic replicate draws float64 tensors of these
