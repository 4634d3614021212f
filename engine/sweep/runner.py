"""Planning a sweep (the store groups and their blocks, from the kinds) and running its blocks on a dask cluster."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.budget import check_memory
from engine.distributed import (
    LocalPool,
    Source,
    connect,
    load_source,
    loader_keys,
    make_source,
    rank_scores,
    run_task,
    task_result,
)
from engine.errors import ClusterLost, VotebenchError
from engine.sweep.config import SYNTHETIC_GROUP, SweepConfig
from engine.sweep.kinds import Block, Kind, PlanContext, aggregate_options, get_kind
from engine.sweep.results import open_for_writing, pending_blocks, resolve_store, write_block

__all__ = ["check_memory", "input_source", "interleave", "plan_sweep", "run_sweep"]

log = logging.getLogger("engine")


def _kind(name: str) -> Kind:
    kind = get_kind(name)
    if kind is None:  # a config parsed while the kind was registered
        raise VotebenchError(f"perturbation kind {name!r} is not registered in this process")
    return kind


# ------------------------------------------------------------------------------------ inputs
def inspect_input(src: Source, rules: Sequence[tuple[str, Mapping[str, Any]]],
                  checks: Sequence[tuple[Callable[..., None], Mapping[str, Any], Mapping[str, Any]]]) -> dict[str, Any]:
    """Open an input, fill in its checksum, rank it by every rule and run every kind's check on it (a task)."""
    scores, src = load_source(src)
    points = {label: rank_scores(scores, opts)[:2] for label, opts in rules}
    for check, pert, opts in checks:
        check(scores, pert, opts)  # fail before any store is written
    return {"source": src, "systems": [str(s) for s in scores["system"].values], "tasks": [str(t) for t in scores["task"].values],
            "points": points}


def input_source(cfg: SweepConfig, inp: Mapping[str, Any]) -> Source:
    """What a task reads for the input ``inp`` of ``cfg`` (the key of the scores a process has read, :func:`load_source`)."""
    return make_source(inp["path"], base=cfg.base, meta=inp.get("meta"), loader={k: inp.get(k) for k in loader_keys()},
                       lower_is_better=inp.get("lower_is_better", ()))


def _inspect_all(cfg: SweepConfig, client: Any | None) -> list[dict[str, Any]]:
    """Inspect every input: on the cluster's workers when a client is given, else in this process."""
    calls = []
    for inp in cfg.inputs:
        src = input_source(cfg, inp)
        rules = [(r["label"], aggregate_options(inp, r)) for r in cfg.rules]
        kinds = [(_kind(p["kind"]), p) for p in cfg.perturbations]
        checks = [(kind.check, p, aggregate_options(inp, r)) for kind, p in kinds if kind.needs_input and kind.check is not None
                  for r in cfg.rules]
        calls.append((src, rules, checks))
    if client is None:
        return [task_result(run_task(inspect_input, *c)) for c in calls]
    futures = [client.submit(run_task, inspect_input, *c, pure=False) for c in calls]
    return [task_result(f.result()) for f in futures]


# ------------------------------------------------------------------------------------ plan
def _planned(kind: Kind, ctx: PlanContext) -> tuple[xr.Dataset, list[Block]]:
    skeleton, blocks = kind.plan(ctx)
    if skeleton.attrs.get("kind") != kind.name:  # the store, the dashboard and the report find the kind by this attribute
        skeleton.attrs = {"kind": kind.name, **skeleton.attrs}
    return skeleton, blocks


def plan_sweep(cfg: SweepConfig, *, client: Any | None = None) -> tuple[dict[str, xr.Dataset], list[Block], dict[str, Any]]:
    """Skeleton datasets per store group, the blocks to compute, and the provenance attributes.

    Every input is first opened once (on a worker of ``client`` when given,
    else in this process): its checksum, systems and full-data rankings
    (``score``/``rank``, small) are computed there, which also validates every
    rule on every input (and runs every kind's check) before any block runs.
    The blocks refer to the inputs by path or URL (:class:`~engine.distributed.Source`).
    """
    from engine import __version__

    check_sizes(cfg, None)  # absurd sizes fail before any input is read
    skeletons: dict[str, xr.Dataset] = {}
    blocks: list[Block] = []
    checksums, sidecars, paths = {}, {}, {}
    for inp, info in zip(cfg.inputs, _inspect_all(cfg, client)):
        src: Source = info["source"]
        checksums[inp["name"]], sidecars[inp["name"]], paths[inp["name"]] = src.checksum, src.meta_checksum, src.path
        systems = np.array(info["systems"], dtype=object)
        check_sizes(cfg, systems.size)
        for pert in cfg.perturbations:
            kind = _kind(pert["kind"])
            if kind.needs_input:
                group = f"{inp['name']}/{pert['name']}"
                ctx = PlanContext(group, pert, cfg.rules, cfg.seed, kind.run_block, input=inp, source=src, systems=systems,
                                  tasks=info["tasks"], points=info["points"])
                skeletons[group], more = _planned(kind, ctx)
                blocks += more
    for pert in cfg.perturbations:
        kind = _kind(pert["kind"])
        if not kind.needs_input:
            group = f"{SYNTHETIC_GROUP}/{pert['name']}"
            skeletons[group], more = _planned(kind, PlanContext(group, pert, cfg.rules, cfg.seed, kind.run_block))
            blocks += more
    attrs = {
        "engine_version": __version__,
        "config": json.dumps(cfg.raw, sort_keys=True, default=str),
        "seed": cfg.seed,
        "inputs": json.dumps(checksums, sort_keys=True),
        "sidecars": json.dumps(sidecars, sort_keys=True),
        "input_paths": json.dumps(paths, sort_keys=True),  # where the inputs were read (report, dashboard)
    }
    return skeletons, interleave(blocks), attrs


def interleave(blocks: Sequence[Block]) -> list[Block]:
    """The blocks in an order where every stream fills in together (at the same fraction of its blocks).

    A stream is a group and the leading indices of ``done_index`` but the last (a rule, or a rule
    and a subset size): bootstrap blocks of every rule alternate, so the dashboard's views of all
    rules (and of all groups) fill in side by side instead of rule after rule. Within a stream the
    order is kept. Every block's values depend only on its own indices and seed, so the store's
    content does not depend on this order.
    """
    streams: dict[tuple[Any, ...], list[int]] = {}
    for i, b in enumerate(blocks):
        streams.setdefault((b.group, b.done_index[:-1]), []).append(i)
    position = [0.0] * len(blocks)
    for members in streams.values():
        for k, i in enumerate(members):
            position[i] = (k + 0.5) / len(members)
    return [blocks[i] for i in sorted(range(len(blocks)), key=lambda i: position[i])]


def check_sizes(cfg: SweepConfig, n_systems: int | None) -> None:
    """The in-memory size of every perturbation's store variables (``n_systems`` None: at least 2 systems)."""
    S = 2 if n_systems is None else n_systems
    for pert in cfg.perturbations:
        kind = _kind(pert["kind"])
        if kind.memory is not None:
            need, what, fix = kind.memory(pert, len(cfg.rules), S)
            check_memory(need, f"perturbation {pert['name']!r}: {what}", fix)


# ------------------------------------------------------------------------------------ run
def run_sweep(
    cfg: SweepConfig,
    *,
    scheduler: str | None = None,
    client: Any | None = None,
    overwrite: bool = False,
    progress: bool = True,
    max_blocks: int | None = None,
    on_block: Callable[[Block], None] | None = None,
    on_open: Callable[[Path, bool, int, int], None] | None = None,
) -> Path:
    """Run a sweep: compute every block not yet done and write it to the store as it finishes.

    The inputs are opened by the workers from their paths or URLs (the
    client sends each task the :class:`~engine.distributed.Source`, never the scores) and results
    are written by this process as blocks finish, so a killed worker only
    costs its running blocks (the scheduler reruns them elsewhere) and a
    killed client only the blocks not yet written (a re-run resumes).

    Parameters
    ----------
    cfg : SweepConfig
    scheduler : str, optional
        Address of a dask scheduler (default: ``DASK_SCHEDULER_ADDRESS``, else
        an in-process local cluster).
    client : distributed.Client, optional
        An already connected client to use instead (left open).
    overwrite : bool
        Start from an empty store.
    progress : bool
        Show a progress bar of completed blocks (stderr).
    max_blocks : int, optional
        Stop after writing this many blocks (for tests of resumption).
    on_block : callable, optional
        Called after each block is written.
    on_open : callable, optional
        Called once the store is open for writing, before any block runs, as ``on_open(path, resumed,
        done, total)``: whether an existing store is resumed (else it was created, or emptied by
        ``overwrite``), and how many of its ``total`` blocks are already done.

    Returns
    -------
    pathlib.Path
        The store.
    """
    from engine.io.files import WriterLock

    own = client is None
    if own:
        client = connect(scheduler)
    try:
        skeletons, blocks, attrs = plan_sweep(cfg, client=client)
        path = resolve_store(cfg.store)
        with WriterLock(path, "results store"):  # a second writer stops here with a one-line message
            existed = path.exists() and not overwrite
            root = open_for_writing(path, attrs, skeletons, overwrite)
            todo = pending_blocks(root, blocks)
            already = len(blocks) - len(todo)
            if on_open is not None:
                on_open(path, existed, already, len(blocks))
            if max_blocks is not None:
                todo = todo[:max_blocks]
            log.info("sweep: %d of %d blocks to compute", len(todo), len(blocks))
            if not todo:
                return path
            if client is None:  # no scheduler, no dashboard: this process's threads (no in-process cluster to start)
                client = LocalPool()
            kinds = {g: _kind(ds.attrs["kind"]) for g, ds in skeletons.items()}
            _compute(client, root, todo, kinds, _progress(len(blocks), already, enabled=progress), on_block)
    finally:
        if own and client is not None:
            client.close()
    return path


def _compute(client: Any, root: Any, todo: Sequence[Block], kinds: Mapping[str, Kind], bar: Any,
             on_block: Callable[[Block], None] | None) -> None:
    """Submit the blocks ``todo`` and write each as it finishes (:func:`~engine.sweep.results.write_block`)."""
    try:
        futures = {client.submit(run_task, b.compute, pure=False): b for b in todo}
        written = [0]  # blocks written so far, for the message of a lost cluster
        for fut, raw in finished(client, futures, lambda: written[0]):
            blk = futures.pop(fut)
            value = task_result(raw, f"{blk.group}: ")
            write_block(root, blk, value, kinds[blk.group])
            written[0] += 1
            bar.update(1)
            if on_block is not None:
                on_block(blk)
    finally:
        bar.close()


def finished(client: Any, futures: Mapping[Any, Any], written: Callable[[], int]) -> Iterator[tuple[Any, Any]]:
    """``(future, result)`` as the tasks finish; a lost scheduler or worker pool ends the run with :class:`ClusterLost`.

    ``written()`` counts the blocks already written (for the message). Errors of the blocks themselves (a
    :class:`~engine.errors.VotebenchError` comes back as a value, see :func:`~engine.distributed.run_task`) and of the
    writes pass through unchanged.
    """
    total = len(futures)
    if isinstance(client, LocalPool):
        it = iter(client.as_completed(list(futures)))
    else:
        from distributed import as_completed

        it = as_completed(list(futures), loop=client.loop)
    while True:
        try:
            fut = next(it)
            value = fut.result()
        except StopIteration:
            return
        except BaseException as exc:  # noqa: BLE001 - a lost cluster shows as cancelled futures (a BaseException)
            why = None
            if not isinstance(client, LocalPool):
                from engine.distributed.cluster import lost_cluster

                why = lost_cluster(client, exc)
            if why is None:
                raise
            raise ClusterLost(f"{why} after {written()} of {total} blocks of this run were written; the store keeps them: "
                              "run the same command again to resume") from None
        yield fut, value


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, done: int, *, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from engine import progress

    if progress.active():  # the command line's one bar shows the blocks
        return _StageBar(total, done)
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="block", desc="sweep", leave=False)


class _StageBar:
    """The blocks of a sweep as a stage of :mod:`engine.progress` (``update``/``close`` like a tqdm bar)."""

    def __init__(self, total: int, done: int) -> None:
        from engine import progress

        self._ctx = progress.stage("blocks", total=total)
        self._advance = self._ctx.__enter__()
        self._advance(done)

    def update(self, n: int) -> None:
        self._advance(n)

    def close(self) -> None:
        self._ctx.__exit__(None, None, None)
