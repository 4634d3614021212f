"""One bootstrap of one input, run wherever it is best run: here, on a cluster, or into a results store.

:func:`bootstrap_input` is what ``votebench bootstrap`` calls: it picks among

* ``store``: a one-perturbation sweep (:func:`engine.sweep.run_sweep`) writing the
  replicates to a resumable results store, its blocks run on the cluster's workers
  (or the embedded one), each reading the input by path;
* a ``client`` and a table: :func:`engine.distributed.cluster_bootstrap`, one task per
  ``block`` replicates, each worker reading the input by path;
* otherwise :func:`engine.bootstrap` here (a store is opened lazily and computed on the
  cluster or by local threads).

All three give the same replicates for the same seed and options.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import xarray as xr

from engine.distributed import cluster_bootstrap, compute, is_store, load_source, make_source, open_input
from engine.labelled.canonical import is_url
from engine.sweep.config import parse_config
from engine.sweep.results import open_results, readable_results
from engine.sweep.runner import check_memory, input_source, run_sweep

__all__ = ["bootstrap_input", "check_bootstrap_memory"]

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
