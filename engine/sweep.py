"""Sweeps: rules x perturbations declared in a file, run as dask tasks into a resumable zarr store.

A sweep file (TOML or YAML)::

    seed = 0
    store = "results/glue.zarr"

    [input]                       # or [[inputs]] with a `name` each
    path = "data/vnr_glue.csv"
    missing = "listwise"          # level, missing, weights, groups as in `votebench rank`
                                  # (weights: "groups" or a table {task = weight}); also meta, lower_is_better = [tasks],
                                  # and the loader options format, metric, filter, split, perturbation

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

    [[perturbations]]
    kind = "manipulation"          # Colombo et al. 2022 section 4.2 on synthetic Gumbel benchmarks (no input)
    variants = ["mean:task", "borda:one", "borda:two"]   # the default: sigma_mean, sigma_l, sigma_2l
    phis = [0.05, 0.1, 0.3]
    n_corrupted = [0, 5, 10, 15, 20]                     # default 0..n_tasks
    n_systems = 20                 # also n_tasks, n_instances (20), corrupt_location, scale (1), options = {...}
    repeats = 20
    block = 10

    [[perturbations]]
    kind = "rescaling"             # section 4.3: one (reversed) task rescaled by each factor
    factors = [1, 2, 5, 10]
    reversed_task = true           # same keys as manipulation otherwise (no n_corrupted)

The store holds one group per input and perturbation (``<input>/<name>``),
each an xarray Dataset with named dims (``rule``, ``replicate``,
``subset_size``, ``point``, ``system``) and a ``done`` flag per block.

The synthetic kinds ``manipulation`` and ``rescaling`` read no input (a sweep
made only of them needs no ``[input]``): each is stored once, in group
``synthetic/<name>`` (so no input may be called ``synthetic``), as
:func:`engine.robustness.manipulation_curve` / :func:`~engine.robustness.rescaling_curve`
compute it with the sweep's ``seed``: ``error`` (normalized Kendall distance to
the ground truth) and ``tau`` with dims (``rule``, ``phi``, ``n_corrupted`` or
``factor``, ``replicate``), coords ``level`` and ``paper_name`` per rule, and
``done`` (``rule``, ``block``).  The ``rule`` dim holds the perturbation's own
``variants`` (``"rule:level"`` strings, default Colombo's sigma_mean, sigma_l,
sigma_2l), not the sweep's ``[[rules]]``: the paper's experiment compares
aggregation levels, which the sweep rules (and their input-dependent options)
do not describe; ``options`` (kernel options) applies to every variant.  One
block is one variant and ``block`` replicates, and equals the same replicates
of the direct call whatever the block size; the mean and std over replicates are
not stored (``ds.error.mean("replicate")``).  Blocks
are written (zarr region writes) as they finish; re-running the same sweep on
the same store computes only the blocks not yet done, so an interrupted sweep
resumes without losing or duplicating replicates.  The root attributes record
the provenance: engine version, the sweep config (which holds every option that
changes a result: rules and their options, loader options, directions, weights),
seed, the checksum of every input (``inputs``) and of the sidecar read with it
(``sidecars``); a store is resumed only when all of them are equal and every
group has the variables, shapes, coordinates and attributes the sweep would
create, else the run stops with one line.  A new store is built under a
temporary name beside it and renamed into place when complete, so a run killed
at any moment leaves no store or a resumable one; a writer holds a lock
(:class:`engine.files.WriterLock`), and a second process writing the same
store stops with a message naming the first.

On a cluster (``run_sweep(cfg, scheduler="tcp://...")`` or ``client=``) the
client never holds the scores: every task carries a :class:`Source` (the
input's path or fsspec URL, loader options, sha256) and the worker running it
opens the input itself, once per worker process (:func:`load_source`), checking
the checksum.  The client only writes the finished blocks, so a killed worker
costs its running blocks (dask reruns them elsewhere) and a killed client the
blocks not yet written (a re-run resumes).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .dims import REPLICATE, RULE, SYSTEM
from .errors import VotebenchError
from .io import is_url

__all__ = [
    "Block", "IN_MEMORY_BYTES", "SYNTHETIC_GROUP", "SYNTHETIC_KINDS", "Source", "SweepConfig", "cached_sources", "check_address",
    "check_memory", "check_weights", "clear_cache", "cluster_bootstrap", "cluster_rank", "connect", "input_checksum", "is_url",
    "load_config", "load_source", "make_source", "open_results", "open_source", "parse_config", "plan_sweep", "run_sweep",
    "sidecar_of",
]

log = logging.getLogger("engine")

#: options of :func:`engine.open_scores` for evaluation outputs (lm-evaluation-harness, HELM, JSONL)
LOADER_KEYS = ("format", "metric", "filter", "split", "perturbation")
_INPUT_KEYS = {"name", "path", "meta", "level", "missing", "weights", "groups", "within", "across", "lower_is_better",
               *LOADER_KEYS}
_RULE_KEYS = {"name", "label", "options", "level", "within", "across"}
_KINDS = {
    "bootstrap": {"kind", "name", "over", "replicates", "block"},
    "subsets": {"kind", "name", "sizes", "repeats", "block"},
    "grid": {"kind", "name", "rule", "params"},
    "manipulation": {"kind", "name", "variants", "options", "phis", "n_corrupted", "n_systems", "n_tasks", "n_instances",
                     "repeats", "block", "corrupt_location", "scale"},
    "rescaling": {"kind", "name", "variants", "options", "phis", "factors", "n_systems", "n_tasks", "n_instances", "repeats",
                  "block", "reversed_task", "corrupt_location", "scale"},
}
#: perturbations on Colombo's synthetic benchmarks: no input, one store group ``synthetic/<name>`` per perturbation
SYNTHETIC_KINDS = ("manipulation", "rescaling")
#: the root group holding the synthetic perturbations
SYNTHETIC_GROUP = "synthetic"
#: defaults of the synthetic kinds: those of engine.robustness.manipulation_curve / rescaling_curve (paper: N = T = K = 20)
_SYNTHETIC_DEFAULTS: dict[str, dict[str, Any]] = {
    "manipulation": {"phis": [0.05, 0.1, 0.3], "n_systems": 20, "n_tasks": 20, "n_instances": 20, "repeats": 20, "block": 10,
                     "corrupt_location": 1.0, "scale": 1.0},
    "rescaling": {"phis": [0.05, 0.3], "factors": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "n_systems": 20, "n_tasks": 20,
                  "n_instances": 20, "repeats": 20, "block": 10, "reversed_task": True, "corrupt_location": 1.0, "scale": 1.0},
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
    synthetic_only = bool(raw.get("perturbations")) and all(
        isinstance(p, Mapping) and p.get("kind") in SYNTHETIC_KINDS for p in raw["perturbations"])
    if not inputs and not synthetic_only:
        raise _fail(where, "no input: add [input] path = ...")
    inputs = inputs or []
    ins = []
    for i, item in enumerate(inputs):
        spec = {"path": item} if isinstance(item, str) else dict(item)
        bad = sorted(set(spec) - _INPUT_KEYS)
        if bad or "path" not in spec:
            raise _fail(where, f"input {i + 1}: " + (f"unknown key(s) {', '.join(bad)}" if bad else "missing 'path'"))
        spec.setdefault("name", Path(str(spec["path"])).name.split(".")[0])
        lower = spec.get("lower_is_better")
        if isinstance(lower, str):  # "a,b" as on the command line
            spec["lower_is_better"] = [t.strip() for t in lower.split(",") if t.strip()]
        _check_input(where, i, spec)
        ins.append(spec)
    names = [s["name"] for s in ins]
    if len(set(names)) != len(names):
        raise _fail(where, f"input names must be unique, got {names}")
    if SYNTHETIC_GROUP in names and any(isinstance(p, Mapping) and p.get("kind") in SYNTHETIC_KINDS
                                        for p in raw.get("perturbations") or []):
        raise _fail(where, f"input name {SYNTHETIC_GROUP!r} is the store group of the synthetic perturbations; rename the input")
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
        elif kind in SYNTHETIC_KINDS:
            spec = _synthetic_spec(where, i, spec)
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


def _check_input(where: str, i: int, spec: Mapping[str, Any]) -> None:
    """Types of an input's weights and lower_is_better (the values reach the engine only on the workers)."""
    at = f"input {i + 1}"
    w = spec.get("weights")
    if w is not None and w != "groups":
        if not isinstance(w, Mapping):
            raise _fail(where, f"{at}: weights must be 'groups' or a table {{task = weight}} of numbers, got {w!r}")
        check_weights(w, f"{where}: {at}: weights")
    low = spec.get("lower_is_better")
    if low is not None and (not isinstance(low, list) or not all(isinstance(t, str) for t in low)):
        raise _fail(where, f"{at}: lower_is_better must be a list of task names, got {low!r}")


def check_weights(weights: Mapping[Any, Any], where: str) -> dict[str, float]:
    """Task weights given as a mapping: every value a finite non-negative number (not a string, not a bool).

    Returns
    -------
    dict
        ``{task: float(weight)}``.

    Raises
    ------
    VotebenchError
        Naming the first bad entry.
    """
    out = {}
    for task, v in weights.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
            raise VotebenchError(f"{where}: weight of task {str(task)!r} must be a finite non-negative number, got {v!r}")
        out[str(task)] = float(v)
    return out


def _positive(where: str, i: int, spec: Mapping[str, Any], *keys: str) -> None:
    for k in keys:
        v = spec[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise _fail(where, f"perturbation {i + 1}: {k} must be a positive integer, got {v!r}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and bool(np.isfinite(v))


def _synthetic_spec(where: str, i: int, spec: dict[str, Any]) -> dict[str, Any]:
    """Defaults and checks of a ``manipulation`` or ``rescaling`` perturbation (errors name the key)."""
    from .robustness import COLOMBO_VARIANTS, _parse_variant

    kind = spec["kind"]
    at = f"perturbation {i + 1} ({kind})"
    spec = {**{k: list(v) if isinstance(v, list) else v for k, v in _SYNTHETIC_DEFAULTS[kind].items()}, **spec}
    spec.setdefault("name", kind)
    spec.setdefault("variants", list(COLOMBO_VARIANTS))
    spec.setdefault("options", {})
    _positive(where, i, spec, "n_systems", "n_tasks", "n_instances", "repeats", "block")
    if spec["n_systems"] < 2:
        raise _fail(where, f"{at}: n_systems must be at least 2, got {spec['n_systems']}")
    variants = spec["variants"]
    if not isinstance(variants, list) or not variants or not all(isinstance(v, str) for v in variants):
        raise _fail(where, f"{at}: variants must be a non-empty list of \"rule:level\" strings, got {variants!r}")
    for v in variants:
        try:
            _parse_variant(v, "two")
        except VotebenchError as exc:
            raise _fail(where, f"{at}: variants: {exc}") from None
    if len(set(variants)) != len(variants):
        raise _fail(where, f"{at}: variants must be unique, got {variants}")
    if not isinstance(spec["options"], Mapping):
        raise _fail(where, f"{at}: options must be a table of rule-kernel options, got {spec['options']!r}")
    phis = spec["phis"]
    if not isinstance(phis, list) or not phis or not all(_is_number(v) and v >= 0 for v in phis) or len(set(phis)) < len(phis):
        raise _fail(where, f"{at}: phis must be a non-empty list of distinct finite numbers >= 0, got {phis!r}")
    for key in ("corrupt_location", "scale"):
        if not _is_number(spec[key]) or (key == "scale" and spec[key] <= 0):
            raise _fail(where, f"{at}: {key} must be a finite number{' > 0' if key == 'scale' else ''}, got {spec[key]!r}")
    T = spec["n_tasks"]
    if kind == "manipulation":
        ks = spec.setdefault("n_corrupted", list(range(T + 1)))
        if (not isinstance(ks, list) or not ks or len(set(ks)) < len(ks)
                or not all(isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= T for k in ks)):
            raise _fail(where, f"{at}: n_corrupted must be a non-empty list of distinct integers between 0 and n_tasks = {T}, "
                               f"got {ks!r}")
    else:
        fs = spec["factors"]
        if not isinstance(fs, list) or not fs or not all(_is_number(f) and f > 0 for f in fs) or len(set(fs)) < len(fs):
            raise _fail(where, f"{at}: factors must be a non-empty list of distinct finite numbers > 0, got {fs!r}")
        if not isinstance(spec["reversed_task"], bool):
            raise _fail(where, f"{at}: reversed_task must be true or false, got {spec['reversed_task']!r}")
    return spec


# ------------------------------------------------------------------------------------ inputs on the workers
@dataclass(frozen=True)
class Source:
    """Where a worker finds an input: a path or fsspec URL it can reach, the loader options and the checksum.

    Tasks carry a ``Source``, never the scores: every worker process opens
    the input itself (once, see :func:`load_source`) and checks that it reads
    the same bytes the sweep was planned on.
    """

    path: str
    meta: str | None = None
    lower_is_better: tuple[str, ...] = ()
    checksum: str | None = None
    loader: tuple[tuple[str, Any], ...] = ()  # open_scores options (format, metric, ...), hashable
    #: sha256 of the sidecar read with the input (``meta``, else ``<name>.meta.json`` beside it); None: no sidecar
    meta_checksum: str | None = None

    def loader_options(self) -> dict[str, Any]:
        """The :func:`engine.open_scores` keyword options of this source (a per-task mapping comes back as a dict)."""
        return {k: dict(v) if isinstance(v, tuple) else v for k, v in self.loader}


#: inputs whose in-memory size (at their stored dtype) is at most this are loaded into memory once per worker
#: process; larger zarr stores stay lazy and every task streams through their chunks
IN_MEMORY_BYTES = 1 << 30
_CACHE_ENTRIES = 4
_CACHE: OrderedDict[Source, xr.DataArray] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def make_source(
    path: str | os.PathLike[str],
    *,
    base: str | os.PathLike[str] = ".",
    meta: str | os.PathLike[str] | None = None,
    lower_is_better: Sequence[str] = (),
    loader: Mapping[str, Any] | None = None,
) -> Source:
    """A :class:`Source` for ``path``: a relative local path is looked up from the working directory, then ``base``.

    ``loader`` holds :func:`engine.open_scores` options for evaluation outputs
    (``format``, ``metric``, ``filter``, ``split``, ``perturbation``; ``None`` values are dropped).

    Local paths are made absolute (workers need not share the client's
    working directory, but they must see the same file system path).
    """

    def local(p: str | os.PathLike[str]) -> str:
        if is_url(p):
            return str(p)
        q = Path(p)
        if not q.is_absolute() and not q.exists():
            q = Path(base) / q
        return str(q.absolute())

    opts = {k: v for k, v in (loader or {}).items() if v is not None}
    unknown = sorted(set(opts) - set(LOADER_KEYS))
    if unknown:
        raise VotebenchError(f"unknown loader option(s) {', '.join(unknown)}; known: {', '.join(LOADER_KEYS)}")
    items = tuple(sorted((k, tuple(sorted(v.items())) if isinstance(v, Mapping) else v) for k, v in opts.items()))
    return Source(path=local(path), meta=None if meta is None else local(meta),
                  lower_is_better=tuple(str(t) for t in lower_is_better), loader=items)


def input_checksum(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, or of every file of a folder or zarr store (relative names and contents, sorted).

    ``path`` may be an fsspec URL; a folder then hashes like the same folder on a local disk.
    """
    if not is_url(path):
        return _checksum(Path(path))
    import fsspec

    fs, root = fsspec.core.url_to_fs(str(path))
    root = root.rstrip("/")
    h = hashlib.sha256()
    if fs.isdir(root):
        rel = sorted(Path(f[len(root) + 1 :]) for f in fs.find(root))  # files only
        for r in rel:
            h.update(str(r).encode())
            h.update(fs.cat_file(f"{root}/{r.as_posix()}"))
    else:
        with fs.open(root, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def sidecar_of(src: Source) -> str | None:
    """The sidecar read with ``src``: its ``meta``, else the ``<name>.meta.json`` beside a local input (None: none)."""
    if src.meta is not None:
        return src.meta
    if is_url(src.path):
        return None
    from .io import default_sidecar

    sc = default_sidecar(src.path)
    return None if sc is None else str(sc)


def open_source(src: Source) -> xr.DataArray:
    """Open ``src`` (no cache, no checksum): :func:`engine.open_scores` for a local path, the zarr store for a URL."""
    from .io import _apply_meta, open_scores, read_sidecar

    if is_url(src.path):
        from .store import open_store

        scores = open_store(src.path)
        if src.meta is not None:
            scores = _apply_meta(scores, read_sidecar(src.meta), src.path)
        scores.attrs["source_file"] = src.path
    else:
        scores = open_scores(src.path, meta=src.meta, **src.loader_options())
    if src.lower_is_better:
        tasks = [str(t) for t in scores["task"].values]
        unknown = [t for t in src.lower_is_better if t not in tasks]
        if unknown:
            raise VotebenchError(f"--lower-is-better names unknown task(s): {', '.join(unknown)}")
        hib = np.array([t not in src.lower_is_better for t in tasks]) & np.asarray(scores["higher_is_better"].values, dtype=bool)
        scores = scores.assign_coords(higher_is_better=("task", hib))
    return scores


def load_source(src: Source) -> tuple[xr.DataArray, Source]:
    """The scores of ``src``, read at most once per process, and the source with its checksum filled in.

    A module-level LRU cache keyed by the source (path, loader options,
    checksum) keeps the last few inputs, so each worker process reads an input
    once however many tasks use it.  A zarr store of at most
    :data:`IN_MEMORY_BYTES` is loaded into memory; a larger one stays lazy.

    Raises
    ------
    VotebenchError
        When the input cannot be read, or its checksum differs from ``src.checksum``
        (the file changed, or this worker sees another copy of it).
    """
    with _CACHE_LOCK:
        if src.checksum is not None and src in _CACHE:
            _CACHE.move_to_end(src)
            return _CACHE[src], src
        scores = open_source(src)
        actual = input_checksum(src.path)
        meta = sidecar_of(src)
        actual_meta = None if meta is None else input_checksum(meta)
        if src.checksum is not None and actual != src.checksum:
            raise VotebenchError(f"{src.path}: the input differs from the one the sweep was planned on (sha256 "
                                 f"{actual[:12]}... instead of {src.checksum[:12]}...); every worker must read the same file")
        if src.checksum is not None and actual_meta != src.meta_checksum:
            raise VotebenchError(f"{src.path}: its sidecar ({meta or 'now absent'}) differs from the one the sweep was "
                                 "planned on; every worker must read the same files")
        key = replace(src, checksum=actual, meta_checksum=actual_meta)
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key], key
        if not isinstance(scores.data, np.ndarray) and scores.nbytes <= IN_MEMORY_BYTES:
            scores = scores.compute(scheduler="synchronous")
        _CACHE[key] = scores
        while len(_CACHE) > _CACHE_ENTRIES:
            _CACHE.popitem(last=False)
        return scores, key


def cached_sources() -> list[Source]:
    """The inputs held by this process's cache (e.g. ``client.run(cached_sources)`` on a cluster's workers)."""
    with _CACHE_LOCK:
        return list(_CACHE)


def clear_cache() -> None:
    """Forget every input read by this process."""
    with _CACHE_LOCK:
        _CACHE.clear()


_SYNC_LOCK = threading.Lock()
_SYNC_USERS = 0
_SYNC_SAVED: Any = None


@contextmanager
def _synchronous() -> Iterator[None]:
    """Dask collections computed inside engine tasks run single-threaded in the task, never through the cluster.

    Without this, a ``.compute()`` inside a task on a worker (opening a store
    reads its coordinates; a large input stays lazy) would go through the
    worker's client to the scheduler and could deadlock a worker whose
    threads all wait.  Reference-counted, so concurrent tasks in one process
    restore the previous setting only when the last one finishes.
    """
    import dask

    global _SYNC_USERS, _SYNC_SAVED
    with _SYNC_LOCK:
        if _SYNC_USERS == 0:
            _SYNC_SAVED = dask.config.set(scheduler="synchronous")
        _SYNC_USERS += 1
    try:
        yield
    finally:
        with _SYNC_LOCK:
            _SYNC_USERS -= 1
            if _SYNC_USERS == 0:
                _SYNC_SAVED.__exit__(None, None, None)
                _SYNC_SAVED = None


# ------------------------------------------------------------------------------------ tasks (run on the workers)
def _point(scores: xr.DataArray, opts: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Full-data ``score``, ``rank`` and the ranking's attrs (rule label, resolved level, missing policy)."""
    from .core import rank

    ds = rank(scores, **opts).compute(scheduler="synchronous")
    return np.asarray(ds["score"].values), np.asarray(ds["rank"].values), dict(ds.attrs)


def _inspect_input(src: Source, rules: Sequence[tuple[str, Mapping[str, Any]]],
                   checks: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Open an input, fill in its checksum, rank it by every rule and validate every bootstrap on it."""
    from .bootstrap import _plan_for

    scores, src = load_source(src)
    points = {label: _point(scores, opts)[:2] for label, opts in rules}
    for over, opts in checks:
        _plan_for(scores, over, opts)  # fail before any store is written
    return {"source": src, "systems": [str(s) for s in scores[SYSTEM].values], "n_tasks": int(scores.sizes["task"]),
            "points": points}


def _boot_block(src: Source, opts: Mapping[str, Any], over: str, ids: np.ndarray, seed: int,
                block: int | None = None) -> np.ndarray:
    from .bootstrap import bootstrap

    scores, _ = load_source(src)
    ds = bootstrap(scores, over=over, replicates=ids, seed=seed, block=block, **opts)
    return np.asarray(ds["replicate_score"].values, dtype=np.float64)


def _subset_block(src: Source, opts: Mapping[str, Any], size: int, ids: np.ndarray, seed: int) -> np.ndarray:
    from .robustness import task_subset_curve

    scores, _ = load_source(src)
    kw = {k: v for k, v in opts.items() if k in ("level", "missing", "options")}
    ds = task_subset_curve(scores, rules=[opts["rule"]], sizes=[size], repeats=ids, seed=seed, **kw)
    return np.asarray(ds["tau"].values, dtype=np.float64).reshape(-1)


def _curve_params(pert: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``manipulation_curve`` / ``rescaling_curve`` for a synthetic perturbation (not rules, repeats, seed)."""
    keys = ["phis", "n_systems", "n_tasks", "n_instances", "corrupt_location", "scale", "options"]
    keys += ["n_corrupted"] if pert["kind"] == "manipulation" else ["factors", "reversed_task"]
    return {k: pert[k] for k in keys}


def _curve_block(kind: str, params: Mapping[str, Any], variant: str, ids: np.ndarray, seed: int) -> np.ndarray:
    """``error`` and ``tau`` ``(2, phi, n_corrupted | factor, replicate)`` of one variant for replicates ``ids``; no input."""
    from .robustness import manipulation_curve, rescaling_curve

    curve = manipulation_curve if kind == "manipulation" else rescaling_curve
    ds = curve(rules=[variant], repeats=ids, seed=seed, **params)
    return np.stack([np.asarray(ds["error"].values[0], dtype=np.float64), np.asarray(ds["tau"].values[0], dtype=np.float64)])


def _grid_block(src: Source, opts: Mapping[str, Any]) -> np.ndarray:
    scores, _ = load_source(src)
    score, rank, _ = _point(scores, opts)
    return np.stack([score, rank])


def _point_task(src: Source, opts: Mapping[str, Any],
                over: str | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any], list[str]]:
    scores, _ = load_source(src)
    if over is not None:
        from .bootstrap import _plan_for

        _plan_for(scores, over, opts)
    score, rank, attrs = _point(scores, opts)
    return score, rank, attrs, [str(s) for s in scores[SYSTEM].values]


def _run_block(fn: Callable[..., Any], *args: Any) -> Any:
    """Run an engine task (single-threaded dask inside); a :class:`VotebenchError` comes back as its message, not a failure."""
    try:
        with _synchronous():
            return fn(*args)
    except VotebenchError as exc:
        return _Failed(str(exc))


@dataclass(frozen=True)
class _Failed:
    message: str


def _result(value: Any, prefix: str = "") -> Any:
    if isinstance(value, _Failed):  # a user-facing error inside the task: one line, no worker traceback
        raise VotebenchError(prefix + value.message)
    return value


# ------------------------------------------------------------------------------------ plan
@dataclass(frozen=True)
class Block:
    """One unit of work: a small picklable function computing values for a region of one store variable.

    ``compute`` holds the input's :class:`Source` (path, options, checksum),
    never the scores: the worker that runs it opens the input itself.
    """

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


def _agg_options(inp: Mapping[str, Any], rule: Mapping[str, Any]) -> dict[str, Any]:
    opts = {k: inp[k] for k in ("level", "missing", "weights", "groups", "within", "across") if k in inp}
    opts.update({k: rule[k] for k in ("level", "within", "across") if k in rule})
    opts["rule"] = rule["name"]
    opts["options"] = dict(rule.get("options", {}))
    return opts


def _inspect_all(cfg: SweepConfig, client: Any | None) -> list[dict[str, Any]]:
    """Inspect every input: on the cluster's workers when a client is given, else in this process."""
    calls = []
    for inp in cfg.inputs:
        src = make_source(inp["path"], base=cfg.base, meta=inp.get("meta"), loader={k: inp.get(k) for k in LOADER_KEYS},
                          lower_is_better=inp.get("lower_is_better", ()))
        rules = [(r["label"], _agg_options(inp, r)) for r in cfg.rules]
        checks = [(p["over"], _agg_options(inp, r)) for p in cfg.perturbations if p["kind"] == "bootstrap" for r in cfg.rules]
        calls.append((src, rules, checks))
    if client is None:
        return [_result(_run_block(_inspect_input, *c)) for c in calls]
    futures = [client.submit(_run_block, _inspect_input, *c, pure=False) for c in calls]
    return [_result(f.result()) for f in futures]


def plan_sweep(cfg: SweepConfig, *, client: Any | None = None) -> tuple[dict[str, xr.Dataset], list[Block], dict[str, Any]]:
    """Skeleton datasets per store group, the blocks to compute, and the provenance attributes.

    Every input is first opened once (on a worker of ``client`` when given,
    else in this process): its checksum, systems and full-data rankings
    (``score``/``rank``, small) are computed there, which also validates every
    rule on every input before any block runs.  The blocks refer to the inputs
    by path or URL (:class:`Source`).
    """
    from . import __version__

    _check_sizes(cfg, None)  # absurd sizes fail before any input is read
    skeletons: dict[str, xr.Dataset] = {}
    blocks: list[Block] = []
    checksums, sidecars, paths = {}, {}, {}
    for inp, info in zip(cfg.inputs, _inspect_all(cfg, client)):
        src: Source = info["source"]
        checksums[inp["name"]] = src.checksum
        sidecars[inp["name"]] = src.meta_checksum
        paths[inp["name"]] = src.path
        systems = np.array(info["systems"], dtype=object)
        S = systems.size
        _check_sizes(cfg, S)
        labels = [r["label"] for r in cfg.rules]
        points = info["points"]
        for pert in cfg.perturbations:
            if pert["kind"] in SYNTHETIC_KINDS:
                continue
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
                    blocks.append(Block(group, "grid", (i,), (i,), partial(_grid_block, src, opts)))
                continue
            if pert["kind"] == "bootstrap":
                n, b = pert["replicates"], pert["block"]
                nb = -(-n // b)
                skeletons[group] = xr.Dataset(
                    {
                        "replicate_score": ((RULE, REPLICATE, SYSTEM), np.full((len(labels), n, S), np.nan)),
                        "score": ((RULE, SYSTEM), np.stack([points[lb][0] for lb in labels])),
                        "rank": ((RULE, SYSTEM), np.stack([points[lb][1] for lb in labels])),
                        "done": ((RULE, "block"), np.zeros((len(labels), nb), dtype=bool)),
                    },
                    coords={RULE: np.array(labels, dtype=object), REPLICATE: np.arange(n), SYSTEM: systems},
                    attrs={"kind": "bootstrap", "over": pert["over"], "replicates": n, "block": b, "seed": cfg.seed},
                )
                for ri, r in enumerate(cfg.rules):
                    opts = _agg_options(inp, r)
                    for bi in range(nb):
                        ids = np.arange(bi * b, min(n, (bi + 1) * b))
                        fn = partial(_boot_block, src, opts, pert["over"], ids, cfg.seed)
                        blocks.append(Block(group, "replicate_score", (ri, slice(ids[0], ids[-1] + 1)), (ri, bi), fn))
                continue
            # subsets
            T = info["n_tasks"]
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
                        fn = partial(_subset_block, src, opts, size, ids, cfg.seed)
                        blocks.append(Block(group, "tau", (ri, si, slice(ids[0], ids[-1] + 1)), (ri, si, bi), fn))
    for pert in cfg.perturbations:
        if pert["kind"] in SYNTHETIC_KINDS:
            group = f"{SYNTHETIC_GROUP}/{pert['name']}"
            skeletons[group], more = _synthetic_plan(group, pert, cfg.seed)
            blocks += more
    attrs = {
        "engine_version": __version__,
        "config": json.dumps(cfg.raw, sort_keys=True, default=str),
        "seed": cfg.seed,
        "inputs": json.dumps(checksums, sort_keys=True),
        "sidecars": json.dumps(sidecars, sort_keys=True),
        "input_paths": json.dumps(paths, sort_keys=True),  # where the inputs were read (report, dashboard)
    }
    return skeletons, blocks, attrs


def check_memory(nbytes: float, what: str, fix: str) -> None:
    """Refuse (before allocating) an array of ``nbytes`` that cannot fit in this machine's available memory.

    Raises
    ------
    VotebenchError
        ``"<what> need(s) about <size> of memory, more than the <size> available; <fix>"``.
    """
    import psutil
    from dask.utils import format_bytes

    available = psutil.virtual_memory().available
    if nbytes > available:
        raise VotebenchError(f"{what} need about {format_bytes(int(nbytes))} of memory, more than the "
                             f"{format_bytes(int(available))} available; {fix}")


def _check_sizes(cfg: SweepConfig, n_systems: int | None) -> None:
    """The in-memory size of every perturbation's store variables (``n_systems`` None: at least 2 systems)."""
    S = 2 if n_systems is None else n_systems
    n_rules = len(cfg.rules)
    task_bytes = 1024.0  # a planned block (its Block and task objects), roughly
    for pert in cfg.perturbations:
        kind = pert["kind"]
        name = f"perturbation {pert['name']!r}"
        if kind == "bootstrap":
            n = pert["replicates"]
            need = n_rules * (8.0 * n * S + task_bytes * -(-n // pert["block"]))
            check_memory(need, f"{name}: {n} replicates x {S} systems x {n_rules} rule(s)", "use fewer replicates")
        elif kind == "subsets":
            n, n_sizes = pert["repeats"], len(pert.get("sizes", [1]))
            need = n_rules * n_sizes * (8.0 * n + task_bytes * -(-n // pert["block"]))
            check_memory(need, f"{name}: {n} repeats x {n_sizes} subset size(s) x {n_rules} rule(s)", "use fewer repeats")
        elif kind in SYNTHETIC_KINDS:
            n = pert["repeats"]
            axis = pert["n_corrupted"] if kind == "manipulation" else pert["factors"]
            need = len(pert["variants"]) * (16.0 * len(pert["phis"]) * len(axis) * n + task_bytes * -(-n // pert["block"]))
            check_memory(need, f"{name}: {n} repeats", "use fewer repeats")


def _synthetic_plan(group: str, pert: Mapping[str, Any], seed: int) -> tuple[xr.Dataset, list[Block]]:
    """Skeleton and blocks of a ``manipulation`` / ``rescaling`` perturbation: one block per variant and replicate block."""
    from .robustness import _PAPER_NAMES, _parse_variant

    kind, variants = pert["kind"], list(pert["variants"])
    axis, values = ("n_corrupted", [int(k) for k in pert["n_corrupted"]]) if kind == "manipulation" else (
        "factor", [float(f) for f in pert["factors"]])
    phis = [float(v) for v in pert["phis"]]
    n, b = pert["repeats"], pert["block"]
    nb = -(-n // b)
    dims = (RULE, "phi", axis, REPLICATE)
    shape = (len(variants), len(phis), len(values), n)
    params = _curve_params(pert)
    attrs = {"kind": kind, "repeats": n, "block": b, "seed": seed, "variants": json.dumps(variants),
             "experiment": ("robustness to manipulation (Colombo et al. 2022, section 4.2)" if kind == "manipulation" else
                            "robustness to scaling (Colombo et al. 2022, section 4.3)"),
             **{k: v for k, v in params.items() if k in ("n_systems", "n_tasks", "n_instances")},
             "corrupt_location": float(params["corrupt_location"]), "scale": float(params["scale"]),
             "options": json.dumps(params["options"], sort_keys=True, default=str)}
    if kind == "rescaling":
        attrs["reversed_task"] = int(bool(params["reversed_task"]))
    ds = xr.Dataset(
        {"error": (dims, np.full(shape, np.nan)), "tau": (dims, np.full(shape, np.nan)),
         "done": ((RULE, "block"), np.zeros((len(variants), nb), dtype=bool))},
        coords={RULE: np.array(variants, dtype=object), "phi": phis, axis: values, REPLICATE: np.arange(n),
                "level": (RULE, np.array([_parse_variant(v, "two")[2] for v in variants], dtype=object)),
                "paper_name": (RULE, np.array([_PAPER_NAMES.get(v, v) for v in variants], dtype=object))},
        attrs=attrs,
    )
    blocks = []
    for ri, variant in enumerate(variants):
        for bi in range(nb):
            ids = np.arange(bi * b, min(n, (bi + 1) * b))
            fn = partial(_curve_block, kind, params, variant, ids, seed)
            blocks.append(Block(group, "curve", (ri, slice(None), slice(None), slice(ids[0], ids[-1] + 1)), (ri, bi), fn))
    return ds, blocks


# ------------------------------------------------------------------------------------ store
#: root attributes a resumed store must share with the sweep: everything that changes a result
_PROVENANCE = ("config", "inputs", "sidecars", "seed")


def _is_results_store(path: Path) -> bool:
    meta = path / "zarr.json"
    try:
        return meta.is_file() and "engine_version" in json.loads(meta.read_text()).get("attributes", {})
    except (OSError, ValueError, AttributeError):
        return False


def _open_root(path: Path, attrs: Mapping[str, Any], skeletons: Mapping[str, xr.Dataset], overwrite: bool) -> Any:
    """The store to write, created or checked (the caller holds the store's :class:`~engine.files.WriterLock`).

    A new store is built under a temporary name beside ``path`` and renamed into
    place when complete, so a run killed while creating it leaves no store (its
    temporary folder is removed by the next run).  An existing store is resumed
    only when its provenance equals the sweep's and every group has the
    variables, shapes, coordinates and attributes the sweep would create.
    """
    import zarr

    from .files import make_temp_dir, publish_dir, remove_strays

    if path.exists() and not path.is_dir():
        raise VotebenchError(f"{path}: exists and is not a votebench results store (a file); choose another store path")
    remove_strays(path)
    if path.exists() and overwrite and not _is_results_store(path) and any(path.iterdir()):
        raise VotebenchError(f"{path}: not a votebench results store; --overwrite only replaces results stores")
    if path.exists() and not overwrite:
        try:
            root = zarr.open_group(str(path), mode="r+", zarr_format=3)
            old = dict(root.attrs)
        except Exception:  # noqa: BLE001 - any reason it is not a store we wrote
            raise VotebenchError(f"{path}: exists and is not a votebench results store; choose another --store") from None
        if "engine_version" not in old:
            raise VotebenchError(f"{path}: exists and is not a votebench results store; choose another --store")
        for key in _PROVENANCE:
            if old.get(key) != attrs[key]:
                raise VotebenchError(
                    f"{path}: the store was written by a different sweep ({key} differs); use a new store or --overwrite"
                )
        for g, ds in skeletons.items():
            _verify_group(path, g, ds)
        return root
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_dir(path)
    try:
        root = zarr.open_group(str(tmp), mode="w", zarr_format=3)
        root.attrs.update(dict(attrs))
        for g, ds in skeletons.items():
            ds.to_zarr(str(tmp), group=g, mode="w", encoding=_encoding(ds), consolidated=False, zarr_format=3)
        publish_dir(tmp, path)  # with --overwrite, the old store is swapped out only now
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return zarr.open_group(str(path), mode="r+", zarr_format=3)


def _encoding(ds: xr.Dataset) -> dict[str, Any]:
    """Chunks of a group's variables: one ``done`` flag and one block of results per chunk (each written by one block)."""
    encoding: dict[str, Any] = {"done": {"chunks": (1,) * ds["done"].ndim}}  # one flag per file: atomic enough
    if "replicate_score" in ds:
        b = int(ds.attrs["block"])
        encoding["replicate_score"] = {"chunks": (1, b, ds.sizes[SYSTEM])}
    if ds.attrs.get("kind") in SYNTHETIC_KINDS:  # one chunk per (variant, replicate block)
        chunks = (1, *ds["error"].shape[1:3], int(ds.attrs["block"]))
        encoding["error"] = encoding["tau"] = {"chunks": chunks}
    elif "tau" in ds:
        encoding["tau"] = {"chunks": (1, 1, int(ds.attrs["block"]))}
    return encoding


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "OUS" or b.dtype.kind in "OUS":
        return [str(v) for v in a.ravel()] == [str(v) for v in b.ravel()]
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    except TypeError:
        return bool(np.array_equal(a, b))


def _same_attr(stored: Any, planned: Any) -> bool:
    """Equal attribute values; JSON text compares by content (key order is not provenance)."""
    if stored == planned:
        return True
    if isinstance(stored, str) and isinstance(planned, str):
        try:
            return bool(json.loads(stored) == json.loads(planned))
        except ValueError:
            return False
    return False


def _verify_group(path: Path, group: str, skeleton: xr.Dataset) -> None:
    """Check that a stored group can take the sweep's blocks: the variables, dims, shapes, coordinates and attributes
    of ``skeleton``, and readable ``done`` flags; else a one-line :class:`VotebenchError`."""

    def fail(problem: str) -> VotebenchError:
        return VotebenchError(f"{path}: cannot resume this results store: group {group!r} {problem}; "
                              "delete it or run again with --overwrite")

    try:
        ds = xr.open_zarr(str(path), group=group, consolidated=False, zarr_format=3)
    except Exception as exc:  # noqa: BLE001 - missing or damaged group
        raise fail(f"is missing or unreadable ({type(exc).__name__})") from None
    for name, var in skeleton.variables.items():
        if name not in ds.variables:
            raise fail(f"has no {name!r}")
        got = ds.variables[name]
        if tuple(got.dims) != tuple(var.dims) or got.shape != var.shape:
            raise fail(f"has {name!r} with dims {dict(zip(got.dims, got.shape))} instead of {dict(zip(var.dims, var.shape))}")
    try:
        for name in skeleton.coords:
            if not _same_values(np.asarray(skeleton[name].values), np.asarray(ds[name].values)):
                raise fail(f"has other {name!r} labels")
        np.asarray(ds["done"].values)
    except VotebenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged chunk
        raise fail(f"has unreadable coordinates or done flags ({type(exc).__name__})") from None
    for key, value in skeleton.attrs.items():
        if not _same_attr(ds.attrs.get(key), value):
            raise fail(f"has attribute {key} = {ds.attrs.get(key)!r} instead of {value!r}")


def _pending(root: Any, blocks: Sequence[Block]) -> list[Block]:
    done_cache: dict[str, np.ndarray] = {}
    out = []
    for blk in blocks:
        if blk.group not in done_cache:
            try:
                done_cache[blk.group] = np.asarray(root[blk.group]["done"][...])
            except Exception as exc:  # noqa: BLE001 - a damaged chunk
                raise VotebenchError(f"{root.store}: cannot resume this results store: the done flags of group "
                                     f"{blk.group!r} cannot be read ({type(exc).__name__}); delete it or run again with "
                                     "--overwrite") from None
        if not done_cache[blk.group][blk.done_index]:
            out.append(blk)
    return out


def _write(root: Any, blk: Block, values: np.ndarray) -> None:
    grp = root[blk.group]
    if blk.var == "grid":
        grp["score"][blk.region[0], :] = values[0]
        grp["rank"][blk.region[0], :] = values[1]
    elif blk.var == "curve":
        grp["error"][blk.region] = values[0]
        grp["tau"][blk.region] = values[1]
    else:
        grp[blk.var][blk.region] = values
    if blk.var != "grid":  # the live dashboard's mergeable summary of the block, before its done flag
        from .summaries import write_block_summary

        write_block_summary(grp, blk.done_index, values)
    done = grp["done"]
    done[blk.done_index] = True


def connect(scheduler: str | None) -> Any | None:
    """A client of the scheduler at ``scheduler`` (else ``DASK_SCHEDULER_ADDRESS``); ``None`` when neither is set.

    Raises
    ------
    VotebenchError
        When no scheduler answers within ``distributed.comm.timeouts.connect``.
    """
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if not address:
        return None  # decided before importing distributed (a local command need not load it)
    import dask
    from distributed import Client

    check_address(address)
    try:  # the connection timeout is dask's own setting (distributed.comm.timeouts.connect, 30 s by default)
        return Client(address, timeout=dask.config.get("distributed.comm.timeouts.connect"), set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else repr(exc)
        raise VotebenchError(f"cannot connect to dask scheduler {address!r} ({why})") from None


def check_address(address: str) -> None:
    """Refuse, at once, a scheduler address that cannot work: no port, an unknown scheme, a host name that does not resolve.

    (A ``distributed.Client`` given such an address fails only after its
    connection timeout and then leaves a half-made client behind.)

    Raises
    ------
    VotebenchError
        Naming the address and what is wrong with it.
    """
    import socket

    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import get_backend

    def bad(why: str) -> VotebenchError:
        return VotebenchError(f"cannot connect to dask scheduler {address!r} ({why}); give an address like tcp://HOST:8786")

    try:
        scheme, loc = parse_address(address)
        get_backend(scheme)
    except (ValueError, TypeError, ImportError) as exc:
        raise bad(str(exc).splitlines()[0] if str(exc) else "malformed address") from None
    if scheme in ("tcp", "tls", "ws", "wss"):
        try:
            host, port = parse_host_port(loc)
        except ValueError as exc:
            raise bad(str(exc)) from None
        try:
            socket.getaddrinfo(host, port)
        except (socket.gaierror, UnicodeError) as exc:
            raise bad(f"host {host!r} not found: {exc.strerror if isinstance(exc, OSError) else exc}") from None


def _embedded() -> Any:
    """An in-process local cluster (threads), the default when no scheduler is given."""
    from distributed import Client

    return Client(processes=False, dashboard_address=":0", set_as_default=False)  # any free port: no clash


def run_sweep(
    cfg: SweepConfig,
    *,
    scheduler: str | None = None,
    client: Any | None = None,
    overwrite: bool = False,
    progress: bool = True,
    max_blocks: int | None = None,
    on_block: Callable[[Block], None] | None = None,
) -> Path:
    """Run a sweep: compute every block not yet done and write it to the store as it finishes.

    The inputs are opened by the workers from their paths or URLs (the
    client sends each task the :class:`Source`, never the scores) and results
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

    Returns
    -------
    pathlib.Path
        The store.
    """
    from distributed import as_completed

    from .files import WriterLock

    own = client is None
    if own:
        client = connect(scheduler)
    try:
        skeletons, blocks, attrs = plan_sweep(cfg, client=client)
        path = _resolve_store(cfg)
        with WriterLock(path, "results store"):  # a second writer stops here with a one-line message
            root = _open_root(path, attrs, skeletons, overwrite)
            todo = _pending(root, blocks)
            already = len(blocks) - len(todo)
            if max_blocks is not None:
                todo = todo[:max_blocks]
            log.info("sweep: %d of %d blocks to compute", len(todo), len(blocks))
            if not todo:
                return path
            if client is None:
                client = _embedded()
            bar = _progress(len(blocks), already, enabled=progress)
            try:
                futures = {client.submit(_run_block, b.compute, pure=False): b for b in todo}
                for fut in as_completed(futures, loop=client.loop):
                    blk = futures.pop(fut)
                    value = _result(fut.result(), f"{blk.group}: ")
                    _write(root, blk, value)
                    bar.update(1)
                    if on_block is not None:
                        on_block(blk)
            finally:
                bar.close()
    finally:
        if own and client is not None:
            client.close()
    return path


def cluster_rank(client: Any, source: Source, **options: Any) -> xr.Dataset:
    """:func:`engine.rank` of an input computed by one of ``client``'s workers, which reads it by path.

    Returns the computed ranking (``score``, ``rank`` per system; attrs ``rule``, ``level``, ``missing``).
    """
    score, rank, attrs, systems = _result(client.submit(_run_block, _point_task, source, options, pure=False).result())
    ds = xr.Dataset({"score": (SYSTEM, score), "rank": (SYSTEM, rank)}, coords={SYSTEM: np.array(systems, dtype=object)})
    ds.attrs = attrs
    return ds


def cluster_bootstrap(client: Any, source: Source, *, over: str, replicates: int, seed: int, block: int,
                      **options: Any) -> xr.Dataset:
    """:func:`engine.bootstrap` as tasks on ``client``'s workers: the point ranking and one task per ``block`` replicates.

    Every task opens the input by path (:func:`load_source`); the replicate
    scores equal those of ``engine.bootstrap(scores, ..., block=block)``.
    Returns the computed Dataset ``score``, ``rank``, ``replicate_score``,
    ``replicate_rank``.
    """
    from .kernels.ranking import min_rank

    point = client.submit(_run_block, _point_task, source, options, over, pure=False)
    futures = [client.submit(_run_block, _boot_block, source, options, over, np.arange(i, min(replicates, i + block)), seed,
                             block, pure=False) for i in range(0, replicates, block)]
    score, rank, attrs, systems = _result(point.result())
    R = np.concatenate([_result(f.result()) for f in futures], axis=0)
    ds = xr.Dataset({"score": (SYSTEM, score), "rank": (SYSTEM, rank), "replicate_score": ((REPLICATE, SYSTEM), R),
                     "replicate_rank": ((REPLICATE, SYSTEM), min_rank(R))},
                    coords={SYSTEM: np.array(systems, dtype=object), REPLICATE: np.arange(replicates)})
    ds.attrs = {"rule": attrs["rule"], "over": over, "replicates": replicates, "seed": seed}
    return ds


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
    """Open a results store: one Dataset (``group`` given) or all of them by group name.

    Groups are ``<input>/<perturbation>`` and, for the synthetic kinds, ``synthetic/<perturbation>``
    (see the module docstring for their variables and dims).
    """
    import zarr

    path = Path(store)
    if not path.exists():
        raise VotebenchError(f"{store}: no such results store")
    try:
        root = zarr.open_group(str(path), mode="r", zarr_format=3)
        groups = sorted(_leaf_groups(root))
    except Exception as exc:  # noqa: BLE001 - zarr raises many types for a broken store
        raise VotebenchError(f"{store}: not a votebench results store (unreadable: {type(exc).__name__})") from None
    if "engine_version" not in root.attrs:
        raise VotebenchError(f"{store}: not a votebench results store (no provenance attributes)")
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
