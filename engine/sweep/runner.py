"""Planning a sweep (the store groups and their blocks, from the kinds) and running its blocks on a dask cluster.

:func:`bootstrap_input` (what ``votebench bootstrap`` calls) runs one bootstrap of one input wherever it is best run:
here, on a cluster, or into a results store as a one-perturbation sweep of this module.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.distributed import (
    LocalPool,
    Source,
    cluster_bootstrap,
    compute,
    connect,
    is_store,
    load_source,
    loader_keys,
    make_source,
    open_input,
    rank_scores,
    run_task,
    task_result,
)
from engine.errors import ClusterLost, VotebenchError
from engine.labelled.canonical import is_url
from engine.limits import check_memory
from engine.sweep.config import SYNTHETIC_GROUP, SweepConfig, parse_config
from engine.sweep.kinds import Block, Kind, PlanContext, aggregate_options, get_kind
from engine.sweep.results import open_for_writing, open_results, pending_blocks, readable_results, resolve_store, write_block

__all__ = ["bootstrap_input", "check_bootstrap_memory", "check_memory", "input_source", "interleave", "plan_sweep",
           "run_sweep"]


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


#: the aggregation options a sweep input carries (the rule and its options are the sweep's rule)
_INPUT_OPTIONS = ("level", "missing", "weights", "groups", "within", "across")


def check_bootstrap_memory(replicates: int, n_systems: int, *, at_least: bool = False) -> None:
    """Refuse, before allocating, a bootstrap whose replicate scores and ranks cannot fit in memory.

    ``at_least``: ``n_systems`` is a lower bound (the input is not read yet).
    """
    # replicate scores, replicate ranks and one rank array of the summary: 3 float64 per replicate and system; the
    # stability summary correlates every pair of replicates: about 7 (B, B) float64 work arrays at its peak
    # (measured: 1.17 GB for 4,000 replicates of 17 systems, 128 MB per (B, B) array)
    check_memory(24.0 * replicates * n_systems + 64.0 * replicates * replicates,
                 f"--replicates {replicates}: the replicate scores and ranks of {'at least ' if at_least else ''}"
                 f"{n_systems} systems and the correlations of every pair of replicates (stability)", "use fewer replicates")


def bootstrap_input(path: str | os.PathLike[str], *, over: str = "tasks", replicates: int = 200, seed: int = 0,
                    block: int = 50, store: str | os.PathLike[str] | None = None, overwrite: bool = False,
                    client: Any | None = None, progress: bool = False, meta: str | os.PathLike[str] | None = None,
                    lower_is_better: Sequence[str] = (), loader: Mapping[str, Any] | None = None,
                    on_store: Callable[[Path, bool, int, int], None] | None = None,
                    **options: Any) -> tuple[xr.Dataset, xr.DataArray | None]:
    """:func:`engine.bootstrap` of the input at ``path``: here, on ``client``'s cluster, or into a results ``store``.

    Parameters
    ----------
    path : str or path
        A score file or store (anything :func:`engine.open_scores` reads), or a store's URL.
    over, replicates, seed, block
        As :func:`engine.bootstrap` (``block``: replicates per task and store chunk).
    store : str or path, optional
        Also write the replicates to this results store (the format of ``votebench sweep``); a run with
        the same input and options resumes it.  The workers read the input by path.
    overwrite : bool
        With ``store``: start from an empty store.
    client : distributed.Client, optional
        Run on this cluster (with ``store``: the sweep's blocks; a table: one task per ``block``
        replicates; a store: its chunks).  ``None``: in this process (a sweep uses the embedded cluster).
    progress : bool
        With ``store``: a progress bar on stderr.
    meta, lower_is_better, loader
        How the input is read (sidecar, tasks where lower is better, :func:`engine.open_scores` options).
    on_store : callable, optional
        With ``store``: told whether the store was created or resumed (``on_open`` of :func:`engine.sweep.run_sweep`).
    **options
        The aggregation options of :func:`engine.rank` (``rule``, ``level``, ``missing``, ``weights``,
        ``groups``, ``within``, ``across``, ``options``).

    Returns
    -------
    bootstrap : xarray.Dataset
        Computed ``score``, ``rank``, ``replicate_score``, ``replicate_rank``; attrs ``rule`` (the rule label),
        ``over``, ``replicates``, ``seed``.
    scores : xarray.DataArray or None
        The scores when this process read them (for the notes on what was assumed or left out), else ``None``.
    """
    if store is not None:  # the workers read the input by path; this process only writes the finished blocks
        return _into_store(path, store, over=over, replicates=replicates, seed=seed, block=block, overwrite=overwrite,
                           client=client, progress=progress, options=options, meta=meta, lower_is_better=lower_is_better,
                           loader=loader, on_store=on_store)
    if client is not None and not is_store(path):  # a table: the workers read it by path
        src = make_source(path, meta=meta, lower_is_better=lower_is_better, loader=loader)
        return cluster_bootstrap(client, src, over=over, replicates=replicates, seed=seed, block=block, **options), None
    from engine.labelled.bootstrap import bootstrap

    scores = open_input(path, meta=meta, lower_is_better=lower_is_better, loader=loader)
    check_bootstrap_memory(replicates, int(scores.sizes["system"]))
    ds = bootstrap(scores, over=over, replicates=replicates, seed=seed, block=block, **options)
    return compute(ds, client), scores


def _input_spec(path: str | os.PathLike[str], meta: str | os.PathLike[str] | None, lower_is_better: Sequence[str],
                loader: Mapping[str, Any] | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """The sweep input of a one-off bootstrap: everything that changes the replicates (the store's provenance)."""
    where = str(path) if is_url(path) else str(Path(path).resolve())
    inp: dict[str, Any] = {"path": where, "name": Path(path).name.split(".")[0]}
    if meta:
        inp["meta"] = str(meta) if is_url(meta) else str(Path(meta).resolve())
    inp.update({k: options[k] for k in _INPUT_OPTIONS if options.get(k) not in (None, False)})
    inp.update({k: v for k, v in (loader or {}).items() if v is not None})
    if lower_is_better:
        inp["lower_is_better"] = list(lower_is_better)
    return inp


def _into_store(path: str | os.PathLike[str], store: str | os.PathLike[str], *, over: str, replicates: int, seed: int,
                block: int, overwrite: bool, client: Any | None, progress: bool, options: Mapping[str, Any],
                meta: str | os.PathLike[str] | None, lower_is_better: Sequence[str],
                loader: Mapping[str, Any] | None, on_store: Callable[[Path, bool, int, int], None] | None = None
                ) -> tuple[xr.Dataset, xr.DataArray | None]:
    """Run the bootstrap as a one-perturbation sweep into ``store``; the Dataset of its group and the scores read here."""
    from engine.kernels.ranking import min_rank
    from engine.labelled.core import rule_label

    inp = _input_spec(path, meta, lower_is_better, loader, options)
    raw = {"input": inp, "rules": [{"name": options.get("rule", "borda"), "options": dict(options.get("options") or {})}],
           "seed": seed, "store": str(Path(store).resolve()),
           "perturbations": [{"kind": "bootstrap", "over": over, "replicates": replicates, "block": block}]}
    cfg = parse_config(raw, where="bootstrap")
    written = run_sweep(cfg, client=client, progress=progress, overwrite=overwrite, on_open=on_store)
    with readable_results(written):
        stored = open_results(written, f"{inp['name']}/bootstrap-{over}").isel(rule=0).compute()
    rep = stored["replicate_score"]
    ds = xr.Dataset({"score": stored["score"], "rank": stored["rank"], "replicate_score": rep,
                     "replicate_rank": (rep.dims, min_rank(rep.values))})
    label = rule_label(options.get("rule", "borda"), within=options.get("within"), across=options.get("across"))
    ds.attrs = {"rule": label, "over": over, "replicates": replicates, "seed": seed}
    if is_url(path):  # read by the workers only
        return ds, None
    if client is not None:  # the workers inspected it: read here for the notes
        return ds, open_input(path, meta=meta, lower_is_better=lower_is_better, loader=loader)
    scores = load_source(input_source(cfg, cfg.inputs[0]))[0].copy(deep=False)  # as inspected: not read again
    scores.attrs["source_file"] = str(path)  # named as the user wrote it, in the notes
    return ds, scores
