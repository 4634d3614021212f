"""Perturbation kind ``grid``: the full-data ranking of one rule at every point of a grid of its options.

Store group ``<input>/<name>``: ``score`` and ``rank`` (point, system),
``done`` (point); the ``point`` labels are the options as JSON; attrs
``rule``, ``params``.  One block is one point.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import SYSTEM
from engine.limits import check_option_values, shown
from engine.sweep.kinds import TASK_BYTES, Block, GroupState, Kind, PlanContext, SpecCheck, labels

__all__ = ["GRID", "MOST_POINTS", "GridState", "grid_block"]

#: the most points of one grid: each is a full ranking planned up front as one task of the cluster (at a few ms of
#: scheduling each, 100,000 points are minutes of overhead before any ranking runs)
MOST_POINTS = 100_000
#: memory of one planned grid point: its block (:data:`TASK_BYTES`), its JSON label and its options, roughly
_POINT_BYTES = TASK_BYTES + 512.0


def validate(spec: dict[str, Any], check: SpecCheck) -> dict[str, Any]:
    from engine.rules import get_rule

    if "rule" not in spec or "params" not in spec or not isinstance(spec["params"], dict) or not spec["params"]:
        raise check.fail("needs rule = ... and params = {name = [values]}", kind=True)
    if not isinstance(spec["rule"], str):
        raise check.fail(f"rule must be a rule name, got {shown(spec['rule'])}", kind=True)
    get_rule(spec["rule"])
    points = 1
    for k, v in spec["params"].items():
        if not isinstance(v, list) or not v:
            raise check.fail(f"params.{k} must be a non-empty list", kind=True)
        check_option_values({k: v}, f"{check.where}: perturbation {check.index}: params")
        points *= len(v)
    # one block (a full ranking) per point: the points' labels, blocks and results are planned in memory
    check.size("the number of grid points (the product of the params' list lengths)", points, nbytes=points * _POINT_BYTES,
               what="the planned blocks and labels of every point", fix="give fewer values per parameter", most=MOST_POINTS)
    spec.setdefault("name", f"grid-{spec['rule']}")
    return spec


def memory(spec: Mapping[str, Any], n_rules: int, n_systems: int) -> tuple[float, str, str]:
    points = math.prod(len(v) for v in spec["params"].values())
    need = points * (_POINT_BYTES + 16.0 * n_systems)
    return need, f"{points} grid points x {n_systems} systems", "give fewer values per parameter"


def grid_block(src: Any, opts: Mapping[str, Any]) -> np.ndarray:
    """Full-data ``score`` and ``rank`` ``(2, S)`` of the input ``src`` (read by this process) with ``opts``."""
    from engine.distributed import load_source, rank_scores

    scores, _ = load_source(src)
    score, rank, _ = rank_scores(scores, opts)
    return np.stack([score, rank])


def plan(ctx: PlanContext) -> tuple[xr.Dataset, list[Block]]:
    pert = ctx.spec
    rule = next((r for r in ctx.rules if r["name"] == pert["rule"]), {"name": pert["rule"], "label": pert["rule"]})
    keys = sorted(pert["params"])
    grid = [dict(zip(keys, vals)) for vals in itertools.product(*(pert["params"][k] for k in keys))]
    S = ctx.n_systems
    skeleton = xr.Dataset(
        {"score": (("point", SYSTEM), np.full((len(grid), S), np.nan)),
         "rank": (("point", SYSTEM), np.full((len(grid), S), np.nan)),
         "done": (("point",), np.zeros(len(grid), dtype=bool))},
        coords={"point": np.array([json.dumps(g, sort_keys=True) for g in grid], dtype=object), SYSTEM: ctx.systems},
        attrs={"kind": "grid", "rule": pert["rule"], "params": json.dumps(pert["params"])},
    )
    blocks = [ctx.block("grid", (i,), (i,), ctx.source, ctx.options({**rule, "options": {**rule.get("options", {}), **g}}))
              for i, g in enumerate(grid)]
    return skeleton, blocks


def write(grp: Any, blk: Block, values: np.ndarray) -> None:
    grp["score"][blk.region[0], :] = values[0]
    grp["rank"][blk.region[0], :] = values[1]


class GridState(GroupState):
    """The leader at every grid point done."""

    def __init__(self, name: str, grp: Any, **_: Any) -> None:
        super().__init__(name, grp)
        self.rule = str(grp.attrs.get("rule", ""))
        self.systems = labels(grp["system"])
        self.points = labels(grp["point"])
        self.h_rank = grp["rank"]
        self.leaders: list[list[str]] = [[] for _ in self.points]

    def poll(self) -> bool:
        new = [ix[0] for ix in self.new_blocks()]
        for i in new:
            rank = np.asarray(self.h_rank[int(i)], dtype=np.float64)
            self.leaders[i] = [self.systems[j] for j in np.flatnonzero(rank == 1)]
            self.done[i] = True
        return bool(new)

    def to_json(self) -> dict[str, Any]:
        points = [{"point": p, "done": bool(d), "leader": lead} for p, d, lead in zip(self.points, self.done, self.leaders)]
        return {"name": self.name, "input": self.input, "kind": "grid", "rule": self.rule, **self.progress(), "points": points}


def point_labels(ds: xr.Dataset, done: np.ndarray) -> list[str]:
    out = []
    for p in np.asarray(ds["point"].values)[done]:
        try:
            out.append(", ".join(f"{k}={v}" for k, v in json.loads(str(p)).items()))
        except ValueError:
            out.append(str(p))
    return out


#: no summary: the dashboard reads a finished point's ranks (one row)
GRID = Kind("grid", frozenset({"rule", "params"}), validate, plan, run_block=grid_block, memory=memory, write=write,
            dashboard=GridState)
