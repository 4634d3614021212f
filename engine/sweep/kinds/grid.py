"""Perturbation kind ``grid``: the full-data ranking of one rule at every point of a grid of its options.

Store group ``<input>/<name>``: ``score`` and ``rank`` (point, system),
``done`` (point); the ``point`` labels are the options as JSON; attrs
``rule``, ``params``.  One block is one point.
"""

from __future__ import annotations

import html
import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from ...dims import SYSTEM
from ...magnitudes import check_option_values, shown
from ..live import GroupState, labels
from .base import TASK_BYTES, Block, Kind, PlanContext, SpecCheck

__all__ = ["GRID", "MOST_POINTS", "GridState", "grid_block"]

#: the most points of one grid: each is a full ranking planned up front as one task of the cluster (at a few ms of
#: scheduling each, 100,000 points are minutes of overhead before any ranking runs)
MOST_POINTS = 100_000
#: memory of one planned grid point: its block (:data:`TASK_BYTES`), its JSON label and its options, roughly
_POINT_BYTES = TASK_BYTES + 512.0


def validate(spec: dict[str, Any], check: SpecCheck) -> dict[str, Any]:
    from ...rules import get_rule

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
    from ...distributed import load_source, rank_scores

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


def _point_labels(ds: xr.Dataset, done: np.ndarray) -> list[str]:
    out = []
    for p in np.asarray(ds["point"].values)[done]:
        try:
            out.append(", ".join(f"{k}={v}" for k, v in json.loads(str(p)).items()))
        except ValueError:
            out.append(str(p))
    return out


def report(section: Any, gname: str, ds: xr.Dataset) -> tuple[str, str]:
    """A heat map and a table of the ranks at every done grid point (the top systems in the figure)."""
    from ...app import plots
    from ...app.report import select_systems

    ds = ds.compute()
    done = np.asarray(ds["done"].values, dtype=bool)
    R = np.asarray(ds["rank"].values, dtype=np.float64)[done]  # (point, system)
    points = _point_labels(ds, done)
    systems = [str(s) for s in ds[SYSTEM].values]
    present = np.isfinite(R).any(axis=0)
    if R.shape[0] == 0 or present.sum() < 2:
        return (f"Parameter grid: {gname}", "<p>No finished grid points.</p>")
    R = R[:, present]
    systems = [s for s, p in zip(systems, present) if p]
    idx = select_systems(R, section.top_k)
    suffix = f" (top {len(idx)} of {len(systems)} systems)" if len(idx) < len(systems) else ""
    da = xr.DataArray(R[:, idx].T, dims=(SYSTEM, "point"), coords={SYSTEM: [systems[i] for i in idx], "point": points})
    fig = plots.rank_heatmap_figure(da, title=f"{ds.attrs.get('rule', '')}: ranks across parameter points{suffix}")
    rows = [[systems[i]] + [float(v) for v in R[:, i]] for i in range(len(systems))]
    tab = section.table(f"{gname}_ranks", ["system"] + points, rows, [[r[0]] + [f"{v:g}" for v in r[1:]] for r in rows],
                        caption="Ranks per grid point:", show=False)
    cap = (f"Ranks of {html.escape(str(ds.attrs.get('rule', '')))} at every parameter point of {html.escape(gname)}, "
           f"systems clustered on their ranks{html.escape(suffix)}.")
    return (f"Parameter grid: {gname}", section.figure(f"{gname}_rank_heatmap", fig, cap) + "\n" + tab)


#: no summary: the dashboard reads a finished point's ranks (one row)
GRID = Kind("grid", frozenset({"rule", "params"}), validate, plan, run_block=grid_block, memory=memory, write=write,
            dashboard=GridState, report=report)
