"""Perturbation kinds ``manipulation`` and ``rescaling``: Colombo et al. (2022) sections 4.2 and 4.3 on synthetic benchmarks.

They read no input: each is stored once, in group ``synthetic/<name>``, as
:func:`engine.labelled.robustness.manipulation_curve` / :func:`~engine.labelled.robustness.rescaling_curve`
compute it with the sweep's ``seed``: ``error`` and ``tau`` (rule, phi,
n_corrupted | factor, replicate), coords ``level`` and ``paper_name`` per rule
(variant), ``done`` (rule, block).  One block is one variant and ``block``
replicates.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import REPLICATE, RULE
from engine.kernels.summaries import MomentSums, SummaryReader, curve_block, stats_codec
from engine.sweep.kinds import TASK_BYTES, Block, Kind, PlanContext, SpecCheck, is_number, replicate_blocks

# isort: split
from engine.sweep.kinds import GroupState, block_ids, json_number, json_numbers, labels  # the kind's live state

__all__ = ["MANIPULATION", "RESCALING", "CurveState", "synthetic_block"]

#: defaults: those of engine.labelled.robustness.manipulation_curve / rescaling_curve (paper: N = T = K = 20)
DEFAULTS: dict[str, dict[str, Any]] = {
    "manipulation": {"phis": [0.05, 0.1, 0.3], "n_systems": 20, "n_tasks": 20, "n_instances": 20, "repeats": 20, "block": 10,
                     "corrupt_location": 1.0, "scale": 1.0},
    "rescaling": {"phis": [0.05, 0.3], "factors": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "n_systems": 20, "n_tasks": 20,
                  "n_instances": 20, "repeats": 20, "block": 10, "reversed_task": True, "corrupt_location": 1.0, "scale": 1.0},
}
_COMMON = {"variants", "options", "phis", "n_systems", "n_tasks", "n_instances", "repeats", "block", "corrupt_location", "scale"}
#: the axis of the curve of each kind, and the keys of the curve function that are not the common ones
AXIS = {"manipulation": ("n_corrupted", ["n_corrupted"]), "rescaling": ("factor", ["factors", "reversed_task"])}
_EXPERIMENT = {"manipulation": "robustness to manipulation (Colombo et al. 2022, section 4.2)",
               "rescaling": "robustness to scaling (Colombo et al. 2022, section 4.3)"}


def _check_common(spec: dict[str, Any], check: SpecCheck) -> None:
    from engine.errors import VotebenchError
    from engine.labelled.robustness import parse_variant

    check.positive(spec, "n_systems", "n_tasks", "n_instances", "repeats", "block")
    if spec["n_systems"] < 2:
        raise check.fail(f"n_systems must be at least 2, got {spec['n_systems']}", kind=True)
    check.blocks(spec["repeats"], spec["block"], "repeats")
    cells = spec["n_systems"] * spec["n_tasks"] * spec["n_instances"]  # each replicate draws a tensor of these scores
    check.size("n_systems x n_tasks x n_instances", cells, nbytes=32.0 * cells * min(spec["block"], spec["repeats"]),
               what="the synthetic score tensors of one block", fix="use fewer systems, tasks or instances, or a smaller block")
    variants = spec["variants"]
    if not isinstance(variants, list) or not variants or not all(isinstance(v, str) for v in variants):
        raise check.fail(f"variants must be a non-empty list of \"rule:level\" strings, got {variants!r}", kind=True)
    for v in variants:
        try:
            parse_variant(v, "two")
        except VotebenchError as exc:
            raise check.fail(f"variants: {exc}", kind=True) from None
    if len(set(variants)) != len(variants):
        raise check.fail(f"variants must be unique, got {variants}", kind=True)
    if not isinstance(spec["options"], Mapping):
        raise check.fail(f"options must be a table of rule-kernel options, got {spec['options']!r}", kind=True)
    phis = spec["phis"]
    if not isinstance(phis, list) or not phis or not all(is_number(v) and v >= 0 for v in phis) or len(set(phis)) < len(phis):
        raise check.fail(f"phis must be a non-empty list of distinct finite numbers >= 0, got {phis!r}", kind=True)
    for key in ("corrupt_location", "scale"):
        if not is_number(spec[key]) or (key == "scale" and spec[key] <= 0):
            raise check.fail(f"{key} must be a finite number{' > 0' if key == 'scale' else ''}, got {spec[key]!r}", kind=True)


def _validator(kind: str) -> Callable[[dict[str, Any], SpecCheck], dict[str, Any]]:
    """Defaults and checks of a ``manipulation`` or ``rescaling`` perturbation (errors name the key)."""

    def validate(spec: dict[str, Any], check: SpecCheck) -> dict[str, Any]:
        from engine.labelled.robustness import COLOMBO_VARIANTS

        spec = {**{k: list(v) if isinstance(v, list) else v for k, v in DEFAULTS[kind].items()}, **spec}
        spec.setdefault("name", kind)
        spec.setdefault("variants", list(COLOMBO_VARIANTS))
        spec.setdefault("options", {})
        _check_common(spec, check)
        T = spec["n_tasks"]
        if kind == "manipulation":
            ks = spec.setdefault("n_corrupted", list(range(T + 1)))
            if (not isinstance(ks, list) or not ks or len(set(ks)) < len(ks)
                    or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= T for k in ks)):
                raise check.fail(f"n_corrupted must be a non-empty list of distinct integers between 0 and n_tasks = {T}, "
                                 f"got {ks!r}", kind=True)
            return spec
        fs = spec["factors"]
        if not isinstance(fs, list) or not fs or not all(is_number(f) and f > 0 for f in fs) or len(set(fs)) < len(fs):
            raise check.fail(f"factors must be a non-empty list of distinct finite numbers > 0, got {fs!r}", kind=True)
        if not isinstance(spec["reversed_task"], bool):
            raise check.fail(f"reversed_task must be true or false, got {spec['reversed_task']!r}", kind=True)
        return spec

    return validate


def curve_params(pert: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``manipulation_curve`` / ``rescaling_curve`` for a synthetic perturbation (not rules, repeats, seed)."""
    keys = ["phis", "n_systems", "n_tasks", "n_instances", "corrupt_location", "scale", "options", *AXIS[pert["kind"]][1]]
    return {k: pert[k] for k in keys}


def synthetic_block(kind: str, params: Mapping[str, Any], variant: str, ids: np.ndarray, seed: int) -> np.ndarray:
    """``error`` and ``tau`` ``(2, phi, n_corrupted | factor, replicate)`` of one variant for replicates ``ids``; no input."""
    from engine.labelled.robustness import manipulation_curve, rescaling_curve

    curves: dict[str, Callable[..., xr.Dataset]] = {"manipulation": manipulation_curve, "rescaling": rescaling_curve}
    curve = curves[kind]
    ds = curve(rules=[variant], repeats=ids, seed=seed, **params)
    return np.stack([np.asarray(ds["error"].values[0], dtype=np.float64), np.asarray(ds["tau"].values[0], dtype=np.float64)])


def _attrs(pert: Mapping[str, Any], params: Mapping[str, Any], seed: int) -> dict[str, Any]:
    kind = pert["kind"]
    attrs = {"kind": kind, "repeats": pert["repeats"], "block": pert["block"], "seed": seed,
             "variants": json.dumps(list(pert["variants"])), "experiment": _EXPERIMENT[kind],
             **{k: v for k, v in params.items() if k in ("n_systems", "n_tasks", "n_instances")},
             "corrupt_location": float(params["corrupt_location"]), "scale": float(params["scale"]),
             "options": json.dumps(params["options"], sort_keys=True, default=str)}
    if kind == "rescaling":
        attrs["reversed_task"] = int(bool(params["reversed_task"]))
    return attrs


def plan(ctx: PlanContext) -> tuple[xr.Dataset, list[Block]]:
    """Skeleton and blocks of a ``manipulation`` / ``rescaling`` perturbation: one block per variant and replicate block."""
    from engine.labelled.robustness import PAPER_NAMES, parse_variant

    pert = ctx.spec
    kind, variants = pert["kind"], list(pert["variants"])
    axis = AXIS[kind][0]
    values = [int(k) for k in pert["n_corrupted"]] if kind == "manipulation" else [float(f) for f in pert["factors"]]
    phis = [float(v) for v in pert["phis"]]
    n = pert["repeats"]
    ids = replicate_blocks(n, pert["block"])
    dims = (RULE, "phi", axis, REPLICATE)
    shape = (len(variants), len(phis), len(values), n)
    params = curve_params(pert)
    skeleton = xr.Dataset(
        {"error": (dims, np.full(shape, np.nan)), "tau": (dims, np.full(shape, np.nan)),
         "done": ((RULE, "block"), np.zeros((len(variants), len(ids)), dtype=bool))},
        coords={RULE: np.array(variants, dtype=object), "phi": phis, axis: values, REPLICATE: np.arange(n),
                "level": (RULE, np.array([parse_variant(v, "two")[2] for v in variants], dtype=object)),
                "paper_name": (RULE, np.array([PAPER_NAMES.get(v, v) for v in variants], dtype=object))},
        attrs=_attrs(pert, params, ctx.seed),
    )
    blocks = [ctx.block("curve", (ri, slice(None), slice(None), slice(r[0], r[-1] + 1)), (ri, bi), kind, params, variant, r,
                        ctx.seed)
              for ri, variant in enumerate(variants) for bi, r in enumerate(ids)]
    return skeleton, blocks


def write(grp: Any, blk: Block, values: np.ndarray) -> None:
    grp["error"][blk.region] = values[0]
    grp["tau"][blk.region] = values[1]


def memory(spec: Mapping[str, Any], n_rules: int, n_systems: int) -> tuple[float, str, str]:
    n = spec["repeats"]
    axis = spec["n_corrupted"] if spec["kind"] == "manipulation" else spec["factors"]
    need = len(spec["variants"]) * (16.0 * len(spec["phis"]) * len(axis) * n + TASK_BYTES * -(-n // spec["block"]))
    return need, f"{n} repeats", "use fewer repeats"


def chunks(ds: xr.Dataset) -> dict[str, tuple[int, ...]]:
    """One chunk per (variant, replicate block)."""
    c = (1, *ds["error"].shape[1:3], int(ds.attrs["block"]))
    return {"error": c, "tau": c}


#: per block: finite errors, their sum and sum of squares, finite taus and their sum, per (phi, axis value)
SUMMARY = stats_codec(curve_block, lambda grp: (*(int(n) for n in grp["error"].shape[1:3]), 5))


class CurveState(GroupState):
    """A synthetic ``manipulation`` / ``rescaling`` group: mean error per (variant, phi) and axis value."""

    def __init__(self, name: str, grp: Any, **_: Any) -> None:
        super().__init__(name, grp)
        self.kind = str(grp.attrs.get("kind"))
        self.axis = AXIS[self.kind][0]
        self.labels = labels(grp["rule"])
        self.phis = [float(v) for v in np.asarray(grp["phi"][...]).ravel()]
        self.values = [float(v) for v in np.asarray(grp[self.axis][...]).ravel()]
        self.h_error, self.h_tau = grp["error"], grp["tau"]
        self.reader = SummaryReader(grp, SUMMARY)
        self.n = int(self.h_error.shape[-1])
        self.block = int(grp.attrs.get("block", 1))
        self.error = MomentSums.zeros((len(self.labels), len(self.phis), len(self.values)))
        self.repeats = np.zeros(len(self.labels), dtype=np.int64)

    def poll(self) -> bool:
        new = self.new_blocks()
        for (ri, bi), summ in zip(new, self.reader.read(new)):
            ids = block_ids(bi, self.block, self.n)
            if summ is None:
                summ = curve_block(np.stack([self.h_error[ri, :, :, ids], self.h_tau[ri, :, :, ids]]))
            st = np.asarray(summ["stats"], dtype=np.float64)
            pad = [np.zeros(self.error.count.shape) for _ in range(3)]
            for k in range(3):
                pad[k][ri] = st[..., k]
            self.error.add(*pad)
            self.repeats[ri] += ids.stop - ids.start
            self.done[ri, bi] = True
        return bool(new)

    def to_json(self) -> dict[str, Any]:
        mean = self.error.mean()
        rows = [{"rule": lb, "phi": phi, "mean_error": json_numbers(mean[ri, pi]), "repeats_done": int(self.repeats[ri])}
                for ri, lb in enumerate(self.labels) for pi, phi in enumerate(self.phis)]
        return {"name": self.name, "input": None, "kind": self.kind, "axis": self.axis,
                "values": [json_number(v) for v in self.values], "repeats": self.n, **self.progress(), "rows": rows}


def error_stats(ds: xr.Dataset, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean and std of the error, mean tau and count of finite errors over the finished replicates ``keep``."""
    mask = keep[:, None, None, :]
    err = np.where(mask, np.asarray(ds["error"].values, dtype=np.float64), np.nan)
    tau = np.where(mask, np.asarray(ds["tau"].values, dtype=np.float64), np.nan)
    cnt = np.isfinite(err).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(err, axis=-1) / cnt
        std = np.sqrt(np.nansum((err - mean[..., None]) ** 2, axis=-1) / (cnt - 1))
        tau_mean = np.nansum(tau, axis=-1) / np.isfinite(tau).sum(axis=-1)
    return mean, np.where(cnt > 1, std, np.nan), tau_mean, cnt


def _kind(name: str) -> Kind:
    return Kind(name, frozenset(_COMMON | set(AXIS[name][1])), _validator(name), plan, run_block=synthetic_block,
                needs_input=False, memory=memory, chunks=chunks, write=write, summary=SUMMARY, dashboard=CurveState)


MANIPULATION = _kind("manipulation")
RESCALING = _kind("rescaling")
