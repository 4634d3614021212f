"""``votebench bootstrap``: rank intervals and stability (:func:`engine.sweep.bootstrap_input`, :mod:`engine.labelled.comparison`).

The ``--block`` of a run on a cluster is the one given, else the one recorded in the store it resumes, else one chosen
from the cluster's threads and memory (:func:`replicate_block`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from engine.app.options import add_inputs, add_output_options, each_input, loader_options, lower_list, per_input, rank_options
from engine.app.output import (
    csv_cell,
    direction_note,
    fmt_score,
    json_float,
    json_text,
    policy_note,
    shared_rank_marks,
    store_line,
    write_output,
)
from engine.dims import BOOTSTRAP_AXES
from engine.errors import VotebenchError
from engine.kernels.checks import check_level

NAME = "bootstrap"
HELP = "rank with bootstrap rank intervals and stability"


def _check(args: argparse.Namespace) -> None:
    """Refuse bad numbers, and absurd replicate counts before the input is read."""
    from engine.limits import check_size
    from engine.sweep import check_bootstrap_memory

    check_size("--replicates", args.replicates, least=2)
    if args.seed < 0:
        raise VotebenchError(f"--seed must be a non-negative integer, got {args.seed}")
    # one block's replicates are drawn and scored at once: its resampled tensors (at least 2 systems x 1 task)
    if args.block is not None:
        check_size("--block", args.block, nbytes=64.0 * min(args.block, args.replicates),
                   what="the replicates of one block at once", fix="use a smaller --block")
    check_level(args.interval, above=0.5 if args.over == "systems" else 0.0, name="--interval")
    check_bootstrap_memory(args.replicates, 2, at_least=True)


def run(args: argparse.Namespace) -> int:
    """Bootstrap every input (all before anything is printed), then print one result per input."""
    _check(args)
    opts = rank_options(args)
    if args.overwrite and not args.store:
        raise VotebenchError("--overwrite needs --store")
    n = len(per_input(args))
    if n > 1 and args.store:
        raise VotebenchError(f"--store takes one input, got {n}; write several inputs to one store with "
                             "`votebench sweep` (one [[inputs]] entry each)")
    results = each_input(args, lambda one, client, prefix: _bootstrap_one(one, opts, client, prefix=prefix))
    write_output(_render_all([(one.input, res) for one, res in results], fmt=args.format, level=args.interval,
                             several=n > 1), args.output)
    return 0


def _render_all(results: list[tuple[str, dict[str, Any]]], *, fmt: str, level: float, several: bool) -> str:
    if not several:
        return render_bootstrap(results[0][1], fmt=fmt, level=level)
    if fmt == "json":
        return json_text([{"input": path, **res} for path, res in results])
    if fmt == "csv":
        parts = [render_bootstrap(res, fmt="csv", level=level).splitlines() for _, res in results]
        lines = ["input," + parts[0][0]] + [f"{csv_cell(path)},{line}" for (path, _), p in zip(results, parts) for line in p[1:]]
        return "\n".join(lines) + "\n"
    return "\n".join(f"## {path}\n" + render_bootstrap(res, fmt="table", level=level) for path, res in results)


def _bootstrap_one(args: argparse.Namespace, opts: dict[str, Any], client: Any | None, prefix: str = "") -> dict[str, Any]:
    """The bootstrap result object (``rule``, ``over``, ``replicates``, ``seed``, ``interval``, ``ranking``, ``stability``)
    of ``args.input``; its notes (directions assumed, what a policy left out) start with ``prefix``."""
    from engine.io.files import storage_errors
    from engine.io.readers import input_kind
    from engine.sweep import bootstrap_input

    battles = input_kind(args.input, getattr(args, "input_format", None)) == "battles"
    if battles or args.over == "battles":  # another input kind: engine.io.battles
        from engine.io.battles import battle_request, bootstrap_battles

        if not battles or args.over != "battles" or args.store or client is not None:
            raise VotebenchError("--over battles resamples the records of a battles file (columns model_a, model_b, "
                                 "winner), in this process (no --store, no --scheduler); a battles file is resampled "
                                 "only --over battles")
        ds = bootstrap_battles(args.input, replicates=args.replicates, seed=args.seed, level=args.interval,
                               **battle_request(opts, args.input))
        return _result(args, ds, None, opts, prefix)

    block, chosen = replicate_block(args, client, prefix)
    with storage_errors(args.store, "results store", "re-run to resume") if args.store else nullcontext():
        ds, scores = bootstrap_input(args.input, over=args.over, replicates=args.replicates, seed=args.seed,
                                     block=block, store=args.store, overwrite=args.overwrite, client=client,
                                     progress=not getattr(args, "no_progress", False) and sys.stderr.isatty(),
                                     meta=args.meta, lower_is_better=lower_list(args.lower_is_better),
                                     loader=loader_options(args), on_store=store_line, **opts)
    if chosen:
        print(chosen, file=sys.stderr, flush=True)
    return _result(args, ds, scores, opts, prefix)


def _result(args: argparse.Namespace, ds: Any, scores: Any | None, opts: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The result object of a computed bootstrap ``ds`` (intervals and stability from :mod:`engine.labelled.comparison`)."""
    from engine.labelled.comparison import bootstrap_intervals

    iv = bootstrap_intervals(ds, level=args.interval, over=args.over)
    direction_note(args, scores, prefix=prefix)
    policy_note(opts["missing"], [s for s, v in zip(iv.systems, iv.score) if math.isnan(v)], scores, prefix=prefix)
    rows = [{"system": iv.systems[i], "score": float(iv.score[i]), "rank": int(iv.rank[i]),
             "rank_low": json_float(float(iv.low[i])), "rank_high": json_float(float(iv.high[i])),
             "tied_with_leader": bool(iv.tied[i]), "rank_ub": json_float(float(iv.rank_ub[i])), **_battle_row(ds, i)}
            for i in iv.ranked()]
    stab = {k: json_float(iv.stability[k]) for k in ("kendall_w", "mean_spearman", "mean_kendall", "order_stability")}
    return {"rule": ds.attrs["rule"], "over": args.over, "replicates": args.replicates, "seed": args.seed,
            "interval": {"kind": iv.kind, "level": args.interval, "description": iv.description},
            "ranking": rows, "stability": stab, "rank_ub_definition": RANK_UB_DEFINITION.format(pct=f"{100 * args.interval:g}%"),
            **_battle_extras(ds, iv.systems)}


#: what ``rank_ub`` is, in the JSON object and the table's legend (:func:`engine.kernels.metrics.rank_upper_bound`)
RANK_UB_DEFINITION = ("1 + the number of systems that score above this one in at least {pct} of the replicates holding "
                      "both (LMArena's rank upper bound, paired)")


def _battle_row(ds: Any, i: int) -> dict[str, Any]:
    """A bootstrap over battles: the score interval of system ``i``."""
    if "rank_ub" not in ds:
        return {}
    return {k: json_float(float(ds[k].values[i])) for k in ("score_low", "score_high")}


def _battle_extras(ds: Any, systems: list[str]) -> dict[str, Any]:
    """A bootstrap over battles: what the rule assumed and P(i beats j) of the full-data model, for the JSON object."""
    if "rank_ub" not in ds:
        return {}
    out: dict[str, Any] = {"options": ds.attrs.get("header", {}), "n_battles": ds.attrs.get("n_battles")}
    if "win_prob" in ds:
        P = np.asarray(ds["win_prob"].values, dtype=float)
        out["p_beats"] = {a: {b: json_float(float(P[i, j])) for j, b in enumerate(systems) if i != j}
                          for i, a in enumerate(systems)}
    return out


def render_bootstrap(result: dict[str, Any], *, fmt: str, level: float) -> str:
    """One bootstrap result object as ``json``, ``csv`` or a ``table`` with its legend and stability line."""
    rows = result["ranking"]
    if fmt == "json":
        return json_text(result)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "system", "score", "rank_low", "rank_high", "tied_with_leader", "rank_ub"])
        for d in rows:
            w.writerow([d["rank"], d["system"], repr(d["score"]), d["rank_low"], d["rank_high"], d["tied_with_leader"],
                        "" if d["rank_ub"] is None else f"{d['rank_ub']:g}"])
        return buf.getvalue()
    ranks = shared_rank_marks(rows)
    scores = [fmt_score(d["score"]) for d in rows]
    ivs = ["n/a" if d["rank_low"] is None else f"{d['rank_low']:g}" if d["rank_low"] == d["rank_high"]
           else f"{d['rank_low']:g}-{d['rank_high']:g}" for d in rows]
    wr = max(5, *(len(r) for r in ranks))
    ws = max(6, *(len(d["system"]) for d in rows))
    wsc = max(5, *(len(x) for x in scores))
    name = "rank range" if result["interval"]["kind"] == "pairwise" else "interval"
    wi = max(len(name), *(len(x) for x in ivs))
    ub = [("" if d.get("rank_ub") is None else f"{d['rank_ub']:g}") for d in rows] if "rank_ub_definition" in result else None
    lines = [
        f"# rule {result['rule']}, bootstrap over {result['over']}: {result['replicates']} replicates, seed {result['seed']}",
        f"# {name} = {result['interval']['description']}",
        *([f"# rank UB = {result['rank_ub_definition']}"] if ub is not None else []),
        f"# * = statistically tied with the leader (the leader scores above it in fewer than {100 * level:g}% of the "
        "replicates); '=' marks a shared rank",
        f"{'rank':>{wr}}    {'system':<{ws}}  {'score':>{wsc}}  {name:>{wi}}" + ("  rank UB" if ub is not None else ""),
        f"{'-' * wr}    {'-' * ws}  {'-' * wsc}  {'-' * wi}" + ("  -------" if ub is not None else ""),
    ]
    for k, (d, r, sc, v) in enumerate(zip(rows, ranks, scores, ivs)):
        lines.append(f"{r:>{wr}} {'*' if d['tied_with_leader'] else ' '}  {d['system']:<{ws}}  {sc:>{wsc}}  {v:>{wi}}"
                     + (f"  {ub[k]:>7}" if ub is not None else ""))
    lines.append(_stability_line(result))
    if result["stability"]["kendall_w"] is None and result["over"] == "systems":
        lines.append("# (Kendall W needs systems present in every replicate: none is in a candidate bootstrap)")
    return "\n".join(lines) + "\n"


def _stability_line(result: dict[str, Any]) -> str:
    st = result["stability"]

    def fmt3(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"

    order = "n/a" if st["order_stability"] is None else f"{100 * st['order_stability']:.1f}%"
    return (f"# stability: Kendall W {fmt3(st['kendall_w'])}, mean Spearman {fmt3(st['mean_spearman'])}, "
            f"mean Kendall tau-b {fmt3(st['mean_kendall'])}, pair orders kept {order}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT..., the aggregation options, the resampling (``--over``, ``--replicates``, ...), ``--store``, output."""
    add_inputs(parser, "score file or zarr store; several inputs are bootstrapped one after the other with the same "
               "options and seed, one result per input (json: a list, each with an \"input\" key)")
    parser.add_argument("--over", default="tasks", choices=(*BOOTSTRAP_AXES, "battles"),
                        help="axis to resample (default: tasks); battles: the records of a battles file (multinomial "
                        "draws of its pair counts)")
    parser.add_argument("--replicates", type=int, default=200, metavar="B", help="number of replicates (default: 200)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default: 0); same seed, same replicates")
    parser.add_argument("--interval", type=float, default=0.95, metavar="LEVEL",
                        help="rank interval level (default: 0.95, i.e. 2.5%% and 97.5%% percentiles; over systems: the "
                        "share of replicates that makes a pairwise order sure) and level of the ties with the leader")
    parser.add_argument("--block", type=int, default=None, metavar="N",
                        help="replicates per task and store chunk (default: the block of the store a run resumes; with "
                        "--scheduler, chosen from the cluster: about 4 tasks per worker thread, a block at most a quarter "
                        "of a thread's memory, said on stderr; else 50); the numbers do not depend on it")
    parser.add_argument("--store", default=None, metavar="PATH",
                        help="also write the replicates to a results store (zarr, same format as `votebench sweep`); "
                        "a re-run with the same inputs and options resumes it")
    parser.add_argument("--overwrite", action="store_true", help="with --store: start from an empty store")
    add_output_options(parser)


#: the description of ``votebench bootstrap --help``
DESCRIPTION = ("Resample tasks (judges), systems (candidates) or the instances of every task with replacement, "
               "re-rank every replicate, and report the full-data ranking with the 2.5-97.5%% percentiles of the replicate "
               "ranks (a candidate bootstrap: the ranks its sure pairwise orders allow) and the stability of the ranking "
               "(Pavao et al. 2021).")


#: ``--block`` when neither given nor chosen from a cluster (in this process)
DEFAULT_BLOCK = 50


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
