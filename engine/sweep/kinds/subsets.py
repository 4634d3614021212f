"""Perturbation kind ``subsets``: Colombo's task subsets, Kendall tau between the ranking on a random subset and on all tasks.

Store group ``<input>/<name>``: ``tau`` (rule, subset_size, replicate) and
``done`` (rule, subset_size, block); attrs ``repeats``, ``block``, ``seed``.
One block is one rule, one subset size and ``block`` repeats of
:func:`engine.labelled.robustness.task_subset_curve`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import REPLICATE, RULE
from engine.errors import VotebenchError
from engine.kernels.summaries import MomentSums, SummaryReader, stats_codec, subsets_block
from engine.limits import shown
from engine.sweep.kinds import TASK_BYTES, Block, Kind, PlanContext, SpecCheck, replicate_blocks

# isort: split
from engine.sweep.kinds import GroupState, block_ids, json_numbers, labels  # the kind's live state

__all__ = ["SUBSETS", "SubsetsState", "subset_block"]


def validate(spec: dict[str, Any], check: SpecCheck) -> dict[str, Any]:
    spec.setdefault("repeats", 100)
    spec.setdefault("block", 50)
    spec.setdefault("name", "subsets")
    check.positive(spec, "repeats", "block")
    spec["block"] = min(spec["block"], spec["repeats"])  # one store chunk never larger than the repeats
    check.blocks(spec["repeats"], spec["block"], "repeats")
    sizes = spec.get("sizes", [])
    if "sizes" in spec and (not isinstance(sizes, list) or not sizes
                            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes)):
        raise check.fail(f"sizes must be a list of positive integers (not empty), got {shown(sizes)}")
    return spec


def subset_block(src: Any, opts: Mapping[str, Any], size: int, ids: np.ndarray, seed: int) -> np.ndarray:
    """Taus ``(len(ids),)`` of the subsets ``ids`` of ``size`` tasks of the input ``src`` (read by this process)."""
    from engine.distributed import load_source
    from engine.labelled.robustness import task_subset_curve

    scores, _ = load_source(src)
    kw = {k: v for k, v in opts.items() if k in ("level", "missing", "options")}
    ds = task_subset_curve(scores, rules=[opts["rule"]], sizes=[size], repeats=ids, seed=seed, **kw)
    return np.asarray(ds["tau"].values, dtype=np.float64).reshape(-1)


def plan(ctx: PlanContext) -> tuple[xr.Dataset, list[Block]]:
    pert, labels_ = ctx.spec, ctx.labels
    T = ctx.n_tasks
    sizes = [s for s in pert.get("sizes", list(range(1, T + 1))) if s <= T]
    if not sizes:
        raise VotebenchError(f"{ctx.group}: every subset size exceeds the {T} tasks of the input")
    n, b = pert["repeats"], pert["block"]
    ids = replicate_blocks(n, b)
    skeleton = xr.Dataset(
        {
            "tau": ((RULE, "subset_size", REPLICATE), np.full((len(labels_), len(sizes), n), np.nan)),
            "done": ((RULE, "subset_size", "block"), np.zeros((len(labels_), len(sizes), len(ids)), dtype=bool)),
        },
        coords={RULE: np.array(labels_, dtype=object), "subset_size": np.asarray(sizes), REPLICATE: np.arange(n)},
        attrs={"kind": "subsets", "repeats": n, "block": b, "seed": ctx.seed},
    )
    blocks = [ctx.block("tau", (ri, si, slice(r[0], r[-1] + 1)), (ri, si, bi), ctx.source, ctx.options(rule), size, r, ctx.seed)
              for ri, rule in enumerate(ctx.rules) for si, size in enumerate(sizes) for bi, r in enumerate(ids)]
    return skeleton, blocks


def memory(spec: Mapping[str, Any], n_rules: int, n_systems: int) -> tuple[float, str, str]:
    n, n_sizes = spec["repeats"], len(spec.get("sizes", [1]))
    need = n_rules * n_sizes * (8.0 * n + TASK_BYTES * -(-n // spec["block"]))
    return need, f"{n} repeats x {n_sizes} subset size(s) x {n_rules} rule(s)", "use fewer repeats"


def chunks(ds: xr.Dataset) -> dict[str, tuple[int, ...]]:
    return {"tau": (1, 1, int(ds.attrs["block"]))}


#: per block: finite taus, their sum and sum of squares
SUMMARY = stats_codec(subsets_block, lambda grp: (3,))


class SubsetsState(GroupState):
    """Mean and std of tau per rule and subset size over the repeats done."""

    def __init__(self, name: str, grp: Any, **_: Any) -> None:
        super().__init__(name, grp)
        self.labels = labels(grp["rule"])
        self.sizes = [int(v) for v in np.asarray(grp["subset_size"][...]).ravel()]
        self.h_tau = grp["tau"]
        self.reader = SummaryReader(grp, SUMMARY)
        self.n = int(self.h_tau.shape[-1])
        self.block = int(grp.attrs.get("block", 1))
        self.moments = MomentSums.zeros((len(self.labels), len(self.sizes)))

    def poll(self) -> bool:
        new = self.new_blocks()
        for (ri, si, bi), summ in zip(new, self.reader.read(new)):
            if summ is None:
                summ = subsets_block(self.h_tau[ri, si, block_ids(bi, self.block, self.n)])
            pad = [np.zeros(self.moments.count.shape) for _ in range(3)]
            for k in range(3):
                pad[k][ri, si] = float(summ["stats"][k])
            self.moments.add(*pad)
            self.done[ri, si, bi] = True
        return bool(new)

    def to_json(self) -> dict[str, Any]:
        mean, std = self.moments.mean(), self.moments.std()
        rules = [{"rule": lb, "mean_tau": json_numbers(mean[i]), "std_tau": json_numbers(std[i]),
                  "repeats_done": [int(v) for v in self.moments.count[i]]} for i, lb in enumerate(self.labels)]
        return {"name": self.name, "input": self.input, "kind": "subsets", "sizes": self.sizes,
                "repeats": self.n, **self.progress(), "rules": rules}


SUBSETS = Kind("subsets", frozenset({"sizes", "repeats", "block"}), validate, plan, run_block=subset_block, memory=memory,
               chunks=chunks, summary=SUMMARY, dashboard=SubsetsState, stream="subsets")
