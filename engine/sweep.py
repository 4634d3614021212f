"""Sweeps: rules x perturbations declared in a file, run as dask tasks into a resumable zarr store.

A sweep file (TOML or YAML)::

    seed = 0
    store = "results/glue.zarr"

    [input]                       # or [[inputs]] with a `name` each
    path = "data/vnr_glue.csv"
    missing = "listwise"          # level, missing, weights, groups as in `votebench rank`

    [[rules]]
    name = "borda"
    [[rules]]
    name = "promethee2"
    label = "promethee-linear"     # a rule may appear several times with different options
    options = { preference = "linear_indifference" }

    [[perturbations]]
    kind = "bootstrap"             # resample an axis with replacement
    over = "tasks"                 # tasks | systems | instances
    replicates = 200
    block = 50                     # replicates per task (and per store chunk)

    [[perturbations]]
    kind = "subsets"               # Colombo's task subsets: tau(subset ranking, full ranking)
    sizes = [2, 4, 8]
    repeats = 100

    [[perturbations]]
    kind = "grid"                  # full-data ranking for every point of a parameter grid
    rule = "optimality_gap"
    params = { gamma = [0.8, 0.9, 0.95] }

The store holds one group per input and perturbation (``<input>/<name>``),
each an xarray Dataset with named dims (``rule``, ``replicate``,
``subset_size``, ``point``, ``system``) and a ``done`` flag per block.  Blocks
are written (zarr region writes) as they finish; re-running the same sweep on
the same store computes only the blocks not yet done, so an interrupted sweep
resumes without losing or duplicating replicates.  The root attributes record
the provenance: engine version, the sweep config, seed and the checksum of
every input.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .dims import REPLICATE, RULE, SYSTEM
from .errors import VotebenchError

__all__ = ["SweepConfig", "load_config", "parse_config", "plan_sweep", "run_sweep", "open_results", "Block"]

log = logging.getLogger("engine")

_INPUT_KEYS = {"name", "path", "meta", "level", "missing", "weights", "groups", "within", "across"}
_RULE_KEYS = {"name", "label", "options", "level", "within", "across"}
_KINDS = {
    "bootstrap": {"kind", "name", "over", "replicates", "block"},
    "subsets": {"kind", "name", "sizes", "repeats", "block"},
    "grid": {"kind", "name", "rule", "params"},
}


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep declaration (see the module docstring)."""

    inputs: list[dict[str, Any]]
    rules: list[dict[str, Any]]
    perturbations: list[dict[str, Any]]
    seed: int
    store: str
    raw: dict[str, Any] = field(default_factory=dict)
    base: Path = Path(".")


def _fail(where: str, msg: str) -> VotebenchError:
    return VotebenchError(f"{where}: {msg}")


def load_config(path: str | os.PathLike[str], *, store: str | None = None) -> SweepConfig:
    """Read a TOML (``.toml``) or YAML (``.yaml``/``.yml``) sweep file.

    A relative input path is looked up from the working directory first, then
    from the sweep file's folder; a relative store path is relative to the
    working directory.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VotebenchError(f"{path}: cannot read sweep file ({getattr(exc, 'strerror', None) or exc})") from None
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise VotebenchError(f"{path}: malformed YAML ({str(exc).splitlines()[0]})") from None
    else:
        import tomllib

        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise VotebenchError(f"{path}: malformed TOML ({exc})") from None
    if not isinstance(raw, dict):
        raise VotebenchError(f"{path}: a sweep file must be a table/mapping")
    if store is not None:
        raw = {**raw, "store": store}
    return parse_config(raw, where=str(path), base=p.parent)


def parse_config(raw: Mapping[str, Any], *, where: str = "sweep", base: str | os.PathLike[str] = ".") -> SweepConfig:
    """Validate a sweep declaration given as a mapping."""
    from .bootstrap import OVER
    from .rules import get_rule

    raw = dict(raw)
    unknown = sorted(set(raw) - {"seed", "store", "input", "inputs", "rules", "perturbations"})
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)}; known: input(s), rules, perturbations, seed, store")
    if "input" in raw and "inputs" in raw:
        raise _fail(where, "give either 'input' or 'inputs', not both")
    inputs = raw.get("inputs", [raw["input"]] if "input" in raw else None)
    if isinstance(inputs, (str, dict)):
        inputs = [inputs]
    if not inputs:
        raise _fail(where, "no input: add [input] path = ...")
    ins = []
    for i, item in enumerate(inputs):
        spec = {"path": item} if isinstance(item, str) else dict(item)
        bad = sorted(set(spec) - _INPUT_KEYS)
        if bad or "path" not in spec:
            raise _fail(where, f"input {i + 1}: " + (f"unknown key(s) {', '.join(bad)}" if bad else "missing 'path'"))
        spec.setdefault("name", Path(str(spec["path"])).name.split(".")[0])
        ins.append(spec)
    names = [s["name"] for s in ins]
    if len(set(names)) != len(names):
        raise _fail(where, f"input names must be unique, got {names}")
    rules = raw.get("rules") or [{"name": "borda"}]
    rs = []
    for i, item in enumerate(rules):
        spec = {"name": item} if isinstance(item, str) else dict(item)
        bad = sorted(set(spec) - _RULE_KEYS)
        if bad or "name" not in spec:
            raise _fail(where, f"rule {i + 1}: " + (f"unknown key(s) {', '.join(bad)}" if bad else "missing 'name'"))
        get_rule(spec["name"])
        spec.setdefault("label", spec["name"])
        spec.setdefault("options", {})
        rs.append(spec)
    labels = [r["label"] for r in rs]
    if len(set(labels)) != len(labels):
        raise _fail(where, f"rule labels must be unique (add label = ...), got {labels}")
    perts = []
    for i, item in enumerate(raw.get("perturbations") or []):
        spec = dict(item)
        kind = spec.get("kind")
        if kind not in _KINDS:
            raise _fail(where, f"perturbation {i + 1}: unknown kind {kind!r}; choose one of {', '.join(_KINDS)}")
        bad = sorted(set(spec) - _KINDS[kind])
        if bad:
            raise _fail(where, f"perturbation {i + 1} ({kind}): unknown key(s) {', '.join(bad)}")
        if kind == "bootstrap":
            spec.setdefault("over", "tasks")
            if spec["over"] not in OVER:
                raise _fail(where, f"perturbation {i + 1}: unknown axis {spec['over']!r}; choose one of {', '.join(OVER)}")
            spec.setdefault("replicates", 200)
            spec.setdefault("block", 50)
            spec.setdefault("name", f"bootstrap-{spec['over']}")
            _positive(where, i, spec, "replicates", "block")
        elif kind == "subsets":
            spec.setdefault("repeats", 100)
            spec.setdefault("block", 50)
            spec.setdefault("name", "subsets")
            _positive(where, i, spec, "repeats", "block")
            if "sizes" in spec and (not isinstance(spec["sizes"], list) or not all(isinstance(v, int) and v > 0
                                                                                    for v in spec["sizes"])):
                raise _fail(where, f"perturbation {i + 1}: sizes must be a list of positive integers")
        else:
            if "rule" not in spec or "params" not in spec or not isinstance(spec["params"], dict) or not spec["params"]:
                raise _fail(where, f"perturbation {i + 1} (grid): needs rule = ... and params = {{name = [values]}}")
            get_rule(spec["rule"])
            for k, v in spec["params"].items():
                if not isinstance(v, list) or not v:
                    raise _fail(where, f"perturbation {i + 1} (grid): params.{k} must be a non-empty list")
            spec.setdefault("name", f"grid-{spec['rule']}")
        perts.append(spec)
    if not perts:
        raise _fail(where, "no perturbations: add [[perturbations]] kind = \"bootstrap\" ...")
    pnames = [p["name"] for p in perts]
    if len(set(pnames)) != len(pnames):
        raise _fail(where, f"perturbation names must be unique (add name = ...), got {pnames}")
    seed = raw.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise _fail(where, f"seed must be a non-negative integer, got {seed!r}")
    if "store" not in raw:
        raise _fail(where, "no output store: add store = \"results/NAME.zarr\" (or pass --store)")
    return SweepConfig(inputs=ins, rules=rs, perturbations=perts, seed=seed, store=str(raw["store"]), raw=raw,
                       base=Path(base))


def _positive(where: str, i: int, spec: Mapping[str, Any], *keys: str) -> None:
    for k in keys:
        v = spec[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise _fail(where, f"perturbation {i + 1}: {k} must be a positive integer, got {v!r}")


# ------------------------------------------------------------------------------------ plan
@dataclass(frozen=True)
class Block:
    """One unit of work: a function computing values for a region of one store variable."""

    group: str
    var: str
    region: tuple[Any, ...]
    done_index: tuple[int, ...]
    compute: Callable[[], np.ndarray]


def _checksum(path: Path) -> str:
    h = hashlib.sha256()
    if path.is_dir():
        for f in sorted(path.rglob("*")):
            if f.is_file():
                h.update(str(f.relative_to(path)).encode())
                h.update(f.read_bytes())
    else:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _resolve(cfg: SweepConfig, p: str) -> Path:
    path = Path(p)
    return path if path.is_absolute() or path.exists() else cfg.base / path


def _agg_options(inp: Mapping[str, Any], rule: Mapping[str, Any]) -> dict[str, Any]:
    opts = {k: inp[k] for k in ("level", "missing", "weights", "groups", "within", "across") if k in inp}
    opts.update({k: rule[k] for k in ("level", "within", "across") if k in rule})
    opts["rule"] = rule["name"]
    opts["options"] = dict(rule.get("options", {}))
    return opts


def plan_sweep(cfg: SweepConfig) -> tuple[dict[str, xr.Dataset], list[Block], dict[str, Any]]:
    """Skeleton datasets per store group, the blocks to compute, and the provenance attributes.

    Full-data rankings (``score``/``rank``) are computed here, eagerly: they are
    small and also validate every rule on every input before any block runs.
    """
    from . import __version__
    from .bootstrap import bootstrap
    from .core import rank
    from .io import open_scores

    skeletons: dict[str, xr.Dataset] = {}
    blocks: list[Block] = []
    checksums = {}
    for inp in cfg.inputs:
        path = _resolve(cfg, str(inp["path"]))
        scores = open_scores(path, meta=_resolve(cfg, inp["meta"]) if inp.get("meta") else None)
        checksums[inp["name"]] = _checksum(path)
        if not isinstance(scores.data, np.ndarray):
            scores = scores.compute()
        systems = np.array([str(s) for s in scores[SYSTEM].values], dtype=object)
        S = systems.size
        labels = [r["label"] for r in cfg.rules]
        points = {}
        for r in cfg.rules:
            points[r["label"]] = rank(scores, **_agg_options(inp, r)).compute()
        for pert in cfg.perturbations:
            group = f"{inp['name']}/{pert['name']}"
            if pert["kind"] == "grid":
                rule = next((r for r in cfg.rules if r["name"] == pert["rule"]), {"name": pert["rule"], "label": pert["rule"]})
                keys = sorted(pert["params"])
                grid = [dict(zip(keys, vals)) for vals in itertools.product(*(pert["params"][k] for k in keys))]
                pt_labels = np.array([json.dumps(g, sort_keys=True) for g in grid], dtype=object)
                skeletons[group] = xr.Dataset(
                    {"score": (("point", SYSTEM), np.full((len(grid), S), np.nan)),
                     "rank": (("point", SYSTEM), np.full((len(grid), S), np.nan)),
                     "done": (("point",), np.zeros(len(grid), dtype=bool))},
                    coords={"point": pt_labels, SYSTEM: systems},
                    attrs={"kind": "grid", "rule": pert["rule"], "params": json.dumps(pert["params"])},
                )
                for i, g in enumerate(grid):
                    opts = _agg_options(inp, {**rule, "options": {**rule.get("options", {}), **g}})
                    blocks.append(Block(group, "grid", (i,), (i,), _grid_fn(scores, opts)))
                continue
            if pert["kind"] == "bootstrap":
                n, b = pert["replicates"], pert["block"]
                nb = -(-n // b)
                skeletons[group] = xr.Dataset(
                    {
                        "replicate_score": ((RULE, REPLICATE, SYSTEM), np.full((len(labels), n, S), np.nan)),
                        "score": ((RULE, SYSTEM), np.stack([points[lb]["score"].values for lb in labels])),
                        "rank": ((RULE, SYSTEM), np.stack([points[lb]["rank"].values for lb in labels])),
                        "done": ((RULE, "block"), np.zeros((len(labels), nb), dtype=bool)),
                    },
                    coords={RULE: np.array(labels, dtype=object), REPLICATE: np.arange(n), SYSTEM: systems},
                    attrs={"kind": "bootstrap", "over": pert["over"], "replicates": n, "block": b, "seed": cfg.seed},
                )
                from .bootstrap import _plan_for

                for ri, r in enumerate(cfg.rules):
                    opts = _agg_options(inp, r)
                    _plan_for(scores, pert["over"], opts)  # fail before any store is written
                    for bi in range(nb):
                        ids = np.arange(bi * b, min(n, (bi + 1) * b))
                        fn = _boot_fn(bootstrap, scores, opts, pert["over"], ids, cfg.seed)
                        blocks.append(Block(group, "replicate_score", (ri, slice(ids[0], ids[-1] + 1)), (ri, bi), fn))
                continue
            # subsets
            from .robustness import task_subset_curve

            T = scores.sizes["task"]
            sizes = [s for s in pert.get("sizes", list(range(1, T + 1))) if s <= T]
            if not sizes:
                raise VotebenchError(f"{group}: every subset size exceeds the {T} tasks of the input")
            n, b = pert["repeats"], pert["block"]
            nb = -(-n // b)
            skeletons[group] = xr.Dataset(
                {
                    "tau": ((RULE, "subset_size", REPLICATE), np.full((len(labels), len(sizes), n), np.nan)),
                    "done": ((RULE, "subset_size", "block"), np.zeros((len(labels), len(sizes), nb), dtype=bool)),
                },
                coords={RULE: np.array(labels, dtype=object), "subset_size": np.asarray(sizes), REPLICATE: np.arange(n)},
                attrs={"kind": "subsets", "repeats": n, "block": b, "seed": cfg.seed},
            )
            for ri, r in enumerate(cfg.rules):
                opts = _agg_options(inp, r)
                for si, size in enumerate(sizes):
                    for bi in range(nb):
                        ids = np.arange(bi * b, min(n, (bi + 1) * b))
                        fn = _subset_fn(task_subset_curve, scores, opts, size, ids, cfg.seed)
                        blocks.append(Block(group, "tau", (ri, si, slice(ids[0], ids[-1] + 1)), (ri, si, bi), fn))
    attrs = {
        "engine_version": __version__,
        "config": json.dumps(cfg.raw, sort_keys=True, default=str),
        "seed": cfg.seed,
        "inputs": json.dumps(checksums, sort_keys=True),
    }
    return skeletons, blocks, attrs


def _boot_fn(bootstrap: Any, scores: xr.DataArray, opts: Mapping[str, Any], over: str, ids: np.ndarray,
             seed: int) -> Callable[[], np.ndarray]:
    def fn() -> np.ndarray:
        ds = bootstrap(scores, over=over, replicates=ids, seed=seed, **opts)
        return np.asarray(ds["replicate_score"].values, dtype=np.float64)

    return fn


def _subset_fn(curve: Any, scores: xr.DataArray, opts: Mapping[str, Any], size: int, ids: np.ndarray,
               seed: int) -> Callable[[], np.ndarray]:
    def fn() -> np.ndarray:
        kw = {k: v for k, v in opts.items() if k in ("level", "missing", "options")}
        rule = opts["rule"]
        ds = curve(scores, rules=[rule], sizes=[size], repeats=ids, seed=seed, **kw)
        return np.asarray(ds["tau"].values, dtype=np.float64).reshape(-1)

    return fn


def _grid_fn(scores: xr.DataArray, opts: Mapping[str, Any]) -> Callable[[], np.ndarray]:
    def fn() -> np.ndarray:
        from .core import rank

        ds = rank(scores, **opts).compute()
        return np.stack([ds["score"].values, ds["rank"].values])

    return fn


# ------------------------------------------------------------------------------------ store
def _open_root(path: Path, attrs: Mapping[str, Any], skeletons: Mapping[str, xr.Dataset], overwrite: bool) -> Any:
    import zarr

    if path.exists() and not path.is_dir():
        raise VotebenchError(f"{path}: exists and is not a votebench results store (a file); choose another store path")
    if path.exists() and overwrite:
        import shutil

        meta = path / "zarr.json"
        try:
            ours = meta.is_file() and "engine_version" in json.loads(meta.read_text()).get("attributes", {})
        except (OSError, ValueError):
            ours = False
        if not ours and any(path.iterdir()):
            raise VotebenchError(f"{path}: not a votebench results store; --overwrite only replaces results stores")
        shutil.rmtree(path)
    if path.exists():
        try:
            root = zarr.open_group(str(path), mode="r+")
        except Exception:  # noqa: BLE001 - any reason it is not a store we wrote
            raise VotebenchError(f"{path}: exists and is not a votebench results store; choose another --store") from None
        old = dict(root.attrs)
        for key in ("config", "inputs", "seed"):
            if old.get(key) != attrs[key]:
                raise VotebenchError(
                    f"{path}: the store was written by a different sweep ({key} differs); use a new store or --overwrite"
                )
        missing = [g for g in skeletons if g not in root]
        if not missing:
            return root
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        root = zarr.open_group(str(path), mode="w")
        root.attrs.update(dict(attrs))
        missing = list(skeletons)
    for g in missing:
        ds = skeletons[g]
        encoding: dict[str, Any] = {"done": {"chunks": (1,) * ds["done"].ndim}}  # one flag per file: atomic enough
        if "replicate_score" in ds:
            b = int(ds.attrs["block"])
            encoding["replicate_score"] = {"chunks": (1, b, ds.sizes[SYSTEM])}
        if "tau" in ds:
            encoding["tau"] = {"chunks": (1, 1, int(ds.attrs["block"]))}
        ds.to_zarr(str(path), group=g, mode="w", encoding=encoding, consolidated=False, zarr_format=3)
    return zarr.open_group(str(path), mode="r+")


def _pending(root: Any, blocks: Sequence[Block]) -> list[Block]:
    done_cache: dict[str, np.ndarray] = {}
    out = []
    for blk in blocks:
        if blk.group not in done_cache:
            done_cache[blk.group] = np.asarray(root[blk.group]["done"][...])
        if not done_cache[blk.group][blk.done_index]:
            out.append(blk)
    return out


def _write(root: Any, blk: Block, values: np.ndarray) -> None:
    grp = root[blk.group]
    if blk.var == "grid":
        grp["score"][blk.region[0], :] = values[0]
        grp["rank"][blk.region[0], :] = values[1]
    else:
        grp[blk.var][blk.region] = values
    done = grp["done"]
    done[blk.done_index] = True


def connect(scheduler: str | None) -> Any | None:
    """A client of the scheduler at ``scheduler`` (else ``DASK_SCHEDULER_ADDRESS``); ``None`` when neither is set."""
    from distributed import Client

    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if not address:
        return None
    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise VotebenchError(f"cannot connect to dask scheduler {address!r} ({exc})") from None


def _client(scheduler: str | None) -> Any:
    """The given scheduler's client, else an in-process local cluster."""
    from distributed import Client

    return connect(scheduler) or Client(processes=False, dashboard_address=None)


def run_sweep(
    cfg: SweepConfig,
    *,
    scheduler: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    max_blocks: int | None = None,
    on_block: Callable[[Block], None] | None = None,
) -> Path:
    """Run a sweep: compute every block not yet done and write it to the store as it finishes.

    Parameters
    ----------
    cfg : SweepConfig
    scheduler : str, optional
        Address of a dask scheduler (default: ``DASK_SCHEDULER_ADDRESS``, else
        an in-process local cluster).
    overwrite : bool
        Start from an empty store.
    progress : bool
        Show a progress bar of completed blocks (stderr).
    max_blocks : int, optional
        Stop after writing this many blocks (for tests of resumption).
    on_block : callable, optional
        Called after each block is written.

    Returns
    -------
    pathlib.Path
        The store.
    """
    from distributed import as_completed

    skeletons, blocks, attrs = plan_sweep(cfg)
    path = _resolve_store(cfg)
    root = _open_root(path, attrs, skeletons, overwrite)
    todo = _pending(root, blocks)
    if max_blocks is not None:
        todo = todo[:max_blocks]
    log.info("sweep: %d of %d blocks to compute", len(todo), len(blocks))
    if not todo:
        return path
    client = _client(scheduler)
    bar = _progress(len(blocks), len(blocks) - len(_pending(root, blocks)), enabled=progress)
    try:
        futures = {client.submit(_run_block, b.compute, pure=False): b for b in todo}
        for fut in as_completed(futures):
            blk = futures[fut]
            value = fut.result()
            if isinstance(value, str):  # a user-facing error inside the block: one line, no worker traceback
                raise VotebenchError(f"{blk.group}: {value}")
            _write(root, blk, value)
            bar.update(1)
            if on_block is not None:
                on_block(blk)
    finally:
        bar.close()
        client.close()
    return path


def _run_block(fn: Callable[[], np.ndarray]) -> np.ndarray | str:
    """Run a block; a :class:`VotebenchError` comes back as its message instead of a worker failure."""
    try:
        return fn()
    except VotebenchError as exc:
        return str(exc)


def _resolve_store(cfg: SweepConfig) -> Path:
    p = Path(cfg.store)
    return p if p.is_absolute() else Path.cwd() / p


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, done: int, *, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="block", desc="sweep", leave=False)


def open_results(store: str | os.PathLike[str], group: str | None = None) -> xr.Dataset | dict[str, xr.Dataset]:
    """Open a results store: one Dataset (``group`` given) or all of them by group name."""
    import zarr

    path = Path(store)
    if not path.exists():
        raise VotebenchError(f"{store}: no such results store")
    root = zarr.open_group(str(path), mode="r")
    groups = sorted(_leaf_groups(root))
    if group is not None:
        if group not in groups:
            raise VotebenchError(f"{store}: no group {group!r}; groups: {', '.join(groups)}")
        return _open_group(path, group, dict(root.attrs))
    return {g: _open_group(path, g, dict(root.attrs)) for g in groups}


def _open_group(path: Path, group: str, attrs: Mapping[str, Any]) -> xr.Dataset:
    ds = xr.open_zarr(str(path), group=group, consolidated=False)
    ds.attrs = {**attrs, **ds.attrs}
    return ds


def _leaf_groups(root: Any, prefix: str = "") -> Iterator[str]:
    for name, grp in root.groups():
        full = f"{prefix}{name}"
        if "done" in grp:
            yield full
        else:
            yield from _leaf_groups(grp, full + "/")
