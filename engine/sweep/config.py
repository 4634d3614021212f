"""A sweep file (TOML or YAML) read and validated into a :class:`SweepConfig`; see :mod:`engine.sweep` for its keys."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.distributed import loader_keys
from engine.errors import VotebenchError
from engine.limits import check_option_values, scaled_weights, shown
from engine.sweep.kinds import KINDS, SpecCheck, get_kind

__all__ = ["SYNTHETIC_GROUP", "SYNTHETIC_KINDS", "SweepConfig", "check_name", "check_weights", "direction_notes", "load_config",
           "load_yaml", "parse_config"]

_TOP_KEYS = ("seed", "store", "input", "inputs", "rules", "perturbations")
_INPUT_KEYS = {"name", "path", "meta", "level", "missing", "weights", "groups", "within", "across", "lower_is_better"}
_RULE_KEYS = {"name", "label", "options", "level", "within", "across"}
#: the built-in perturbations on Colombo's synthetic benchmarks (kinds that read no input)
SYNTHETIC_KINDS = ("manipulation", "rescaling")
#: the root group holding the perturbations of the kinds that read no input: ``synthetic/<name>``
SYNTHETIC_GROUP = "synthetic"


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep declaration (see :mod:`engine.sweep`)."""

    inputs: list[dict[str, Any]]
    rules: list[dict[str, Any]]
    perturbations: list[dict[str, Any]]
    seed: int
    store: str
    raw: dict[str, Any] = field(default_factory=dict)
    base: Path = Path(".")


def _fail(where: str, msg: str) -> VotebenchError:
    return VotebenchError(f"{where}: {msg}")


def _read(path: Path) -> Any:
    """The mapping of a TOML (``.toml``) or YAML (``.yaml``/``.yml``) file; one-line errors naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VotebenchError(f"{path}: cannot read sweep file ({getattr(exc, 'strerror', None) or exc})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        return load_yaml(text, str(path))
    import tomllib

    try:
        return tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError (a key given twice too), or an integer of over 4,300 digits
        raise VotebenchError(f"{path}: malformed TOML ({exc})") from None


def load_yaml(text: str, where: str) -> Any:
    """YAML as TOML reads it: safe types only, every mapping key a string given once (else one line naming it).

    PyYAML keeps the last of a key given twice and takes ``1:``/``null:`` as keys; both are refused here.
    """
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            if isinstance(node, yaml.MappingNode):
                self.flatten_mapping(node)
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    key = self.construct_object(key_node, deep=True)
                    line = key_node.start_mark.line + 1
                    if not isinstance(key, str):
                        raise VotebenchError(f"{where}: line {line}: key {shown(key)} is not a string")
                    if key in seen:
                        raise VotebenchError(f"{where}: line {line}: key {key!r} is given twice")
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except VotebenchError:
        raise
    except yaml.YAMLError as exc:
        raise VotebenchError(f"{where}: malformed YAML ({str(exc).splitlines()[0]})") from None
    except (ValueError, RecursionError) as exc:  # an integer of over 4,300 digits, nesting too deep
        raise VotebenchError(f"{where}: malformed YAML ({str(exc).splitlines()[0][:120]})") from None


def load_config(path: str | os.PathLike[str], *, store: str | None = None, lower_is_better: Sequence[str] = ()) -> SweepConfig:
    """Read a TOML (``.toml``) or YAML (``.yaml``/``.yml``) sweep file.

    A relative input path is looked up from the working directory first, then
    from the sweep file's folder; a relative store path is relative to the
    working directory.  ``store`` replaces the file's store; ``lower_is_better``
    (``votebench sweep --lower-is-better``) is set on every input that does not
    give its own (it becomes part of the store's provenance, the config).
    """
    p = Path(path)
    raw = _read(p)
    if not isinstance(raw, dict):
        raise VotebenchError(f"{path}: a sweep file must be a table/mapping")
    if store is not None:
        raw = {**raw, "store": store}
    if lower_is_better:
        raw = _with_lower_is_better(raw, [str(t) for t in lower_is_better])
    return parse_config(raw, where=str(path), base=p.parent)


def _with_lower_is_better(raw: Mapping[str, Any], lower: list[str]) -> dict[str, Any]:
    """The declaration with ``lower_is_better`` set on every input that does not say it itself."""
    out = dict(raw)
    key = "inputs" if "inputs" in out else "input"
    items: Any = out.get(key)
    many = isinstance(items, list)
    specs: list[dict[str, Any]] = [{"path": it} if isinstance(it, str) else dict(it)
                                   for it in (items if many else [items] if items else [])]
    for spec in specs:
        spec.setdefault("lower_is_better", lower)
    if specs:
        out[key] = specs if many else specs[0]
    return out


def direction_notes(cfg: SweepConfig, limit: int = 50 << 20) -> list[str]:
    """The direction note (:func:`engine.labelled.canonical.directions_note`) of every local table input of a sweep.

    An input is read here only when it is a file under ``limit`` bytes; one that cannot be read is
    left to the sweep, which names the problem.
    """
    from engine.distributed import make_source
    from engine.io.readers import open_scores
    from engine.labelled.canonical import directions_note, is_url

    notes = []
    for inp in cfg.inputs:
        if is_url(inp["path"]):
            continue
        src = make_source(inp["path"], base=cfg.base, meta=inp.get("meta"))
        p = Path(src.path)
        if not p.is_file() or p.stat().st_size > limit:
            continue
        try:
            scores = open_scores(p, meta=src.meta, **{k: inp[k] for k in loader_keys() if inp.get(k)})
        except VotebenchError:
            continue
        text = directions_note(p, [str(t) for t in scores["task"].values], meta=src.meta,
                               lower_is_better=inp.get("lower_is_better", ()))
        if text:
            notes.append(f"input {inp['name']}: {text}")
    return notes


def _kind_of(item: Any) -> Any:
    """The registered kind of a perturbation entry, or None."""
    name = item.get("kind") if isinstance(item, Mapping) else None
    return get_kind(name) if isinstance(name, str) else None


def _without_input(item: Any) -> bool:
    kind = _kind_of(item)
    return kind is not None and not kind.needs_input


def parse_config(raw: Mapping[str, Any], *, where: str = "sweep", base: str | os.PathLike[str] = ".",
                 stored: bool = False) -> SweepConfig:
    """Validate a sweep declaration given as a mapping.

    ``stored``: the config of an existing results store read back (report,
    dashboard): perturbations of a kind this process has not registered are
    left out of :attr:`SweepConfig.perturbations` (their groups are in the
    store all the same) instead of refused.
    """
    raw = dict(raw)
    unknown = sorted(set(raw) - set(_TOP_KEYS))
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)}; known: input(s), rules, perturbations, seed, store")
    if "input" in raw and "inputs" in raw:
        raise _fail(where, "give either 'input' or 'inputs', not both")
    inputs = raw.get("inputs", [raw["input"]] if "input" in raw else None)
    if isinstance(inputs, (str, dict)):
        inputs = [inputs]
    perts = raw.get("perturbations") or []
    for key, value in (("inputs", inputs), ("rules", raw.get("rules")), ("perturbations", perts)):
        if value is not None and not isinstance(value, list):
            raise _fail(where, f"{key} must be a list of entries, got {shown(value)}")
    if stored:
        perts = [p for p in perts if _kind_of(p) is not None]
    if not inputs and not stored and not (perts and all(_without_input(p) for p in perts)):
        raise _fail(where, "no input: add [input] path = ...")
    ins = _inputs(where, inputs or [])
    if SYNTHETIC_GROUP in [s["name"] for s in ins] and any(_without_input(p) for p in perts):
        raise _fail(where, f"input name {SYNTHETIC_GROUP!r} is the store group of the synthetic perturbations; rename the input")
    rs = _labelled(where, "rule", raw.get("rules") or [{"name": "borda"}], _rule)
    labels = [r["label"] for r in rs]
    if len(set(labels)) != len(labels):
        raise _fail(where, f"rule labels must be unique (add label = ...), got {labels}")
    ps = [_perturbation(where, i, item) for i, item in enumerate(perts)]
    if not ps and not stored:
        raise _fail(where, "no perturbations: add [[perturbations]] kind = \"bootstrap\" ...")
    pnames = [p["name"] for p in ps]
    if len(set(pnames)) != len(pnames):
        raise _fail(where, f"perturbation names must be unique (add name = ...), got {pnames}")
    if not isinstance(raw.get("store", ""), str):
        raise _fail(where, f"store must be a path (a string), got {shown(raw['store'])}")
    seed = raw.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise _fail(where, f"seed must be a non-negative integer, got {seed!r}")
    if "store" not in raw:
        raise _fail(where, "no output store: add store = \"results/NAME.zarr\" (or pass --store)")
    return SweepConfig(inputs=ins, rules=rs, perturbations=ps, seed=seed, store=str(raw["store"]), raw=raw, base=Path(base))


def _labelled(where: str, what: str, items: list[Any], finish: Callable[[str, int, dict[str, Any]], dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """Entries given as a string (``{key: string}``) or a table, finished by ``finish(where, i, spec)``."""
    key = "path" if what == "input" else "name"
    for i, item in enumerate(items):
        if not isinstance(item, (str, Mapping)):
            raise _fail(where, f"{what} {i + 1} must be a {key} or a table, got {shown(item)}")
    return [finish(where, i, {key: item} if isinstance(item, str) else dict(item)) for i, item in enumerate(items)]


def _keys(where: str, at: str, spec: Mapping[str, Any], known: set[str], required: str,
          strings: Sequence[str] = ()) -> None:
    """Only ``known`` keys, ``required`` among them; the values of ``strings`` (when given) non-empty strings."""
    bad = sorted(set(map(str, spec)) - known)
    if bad or required not in spec:
        raise _fail(where, f"{at}: " + (f"unknown key(s) {', '.join(bad)}" if bad else f"missing '{required}'"))
    for key in strings:
        if key in spec and (not isinstance(spec[key], str) or not spec[key].strip()):
            raise _fail(where, f"{at}: {key} must be a non-empty string, got {shown(spec[key])}")


#: an input or perturbation name: a store group, so a plain name (no '/', no '..', no leading '.')
_NAME = re.compile(r"\w[\w.\-]*")


def check_name(where: str, at: str, name: Any) -> str:
    """``name`` if it can name a store group (letters, digits, ``_``, ``-``, ``.``; no ``..``), else one line."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name or len(name) > 200:
        raise _fail(where, f"{at}: name {shown(name)} must be a plain name (letters, digits, _ - .; no '/' or '..'), "
                           "as it names a group of the results store")
    return name


def _default_name(path: str) -> str:
    """The input name taken from its file name (``data/glue.csv`` -> ``glue``), made a plain name."""
    stem = Path(path).name.split(".")[0]
    return re.sub(r"[^\w.\-]", "_", stem) or "input"


def _inputs(where: str, inputs: list[Any]) -> list[dict[str, Any]]:
    ins = _labelled(where, "input", inputs, _input)
    names = [s["name"] for s in ins]
    if len(set(names)) != len(names):
        raise _fail(where, f"input names must be unique, got {names}")
    return ins


def _input(where: str, i: int, spec: dict[str, Any]) -> dict[str, Any]:
    _keys(where, f"input {i + 1}", spec, _INPUT_KEYS | set(loader_keys()), "path", ("path", "meta", "name"))
    spec.setdefault("name", _default_name(spec["path"]))
    check_name(where, f"input {i + 1}", spec["name"])
    lower = spec.get("lower_is_better")
    if isinstance(lower, str):  # "a,b" as on the command line
        spec["lower_is_better"] = [t.strip() for t in lower.split(",") if t.strip()]
    _check_input(where, i, spec)
    return spec


def _rule(where: str, i: int, spec: dict[str, Any]) -> dict[str, Any]:
    from engine.rules import get_rule

    _keys(where, f"rule {i + 1}", spec, _RULE_KEYS, "name", ("name", "label", "level", "within", "across"))
    get_rule(spec["name"])
    spec.setdefault("label", spec["name"])
    spec.setdefault("options", {})
    if not isinstance(spec["options"], Mapping) or not all(isinstance(k, str) for k in spec["options"]):
        raise _fail(where, f"rule {i + 1}: options must be a table {{option = value}}, got {shown(spec['options'])}")
    check_option_values(spec["options"], f"{where}: rule {i + 1}: option")
    return spec


def _perturbation(where: str, i: int, item: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise _fail(where, f"perturbation {i + 1} must be a table with a kind, got {shown(item)}")
    spec = dict(item)
    kind = _kind_of(spec)
    if kind is None:
        raise _fail(where, f"perturbation {i + 1}: unknown kind {spec.get('kind')!r}; choose one of {', '.join(KINDS)}")
    bad = sorted(set(spec) - {"kind", "name"} - kind.keys)
    if bad:
        raise _fail(where, f"perturbation {i + 1} ({kind.name}): unknown key(s) {', '.join(bad)}")
    if "name" in spec:
        check_name(where, f"perturbation {i + 1}", spec["name"])
    out = kind.validate(spec, SpecCheck(where, i + 1, kind.name))
    check_name(where, f"perturbation {i + 1}", out["name"])
    return out


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


def check_weights(weights: Mapping[Any, Any], where: str) -> dict[str, int | float]:
    """Task weights given as a mapping: every value a finite non-negative number (not a string, not a bool).

    Returns
    -------
    dict
        ``{task: weight}``, the numbers as given (an integer may exceed float64: the engine scales weights exactly,
        :func:`engine.limits.scaled_weights`).

    Raises
    ------
    VotebenchError
        Naming the first bad entry.
    """
    for task, v in weights.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not np.isfinite(v)) or v < 0:
            raise VotebenchError(f"{where}: weight of task {str(task)!r} must be a finite non-negative number, got {shown(v)}")
    # relative weights of any size (integers beyond float64 included): the engine scales them exactly by one power
    # of two (engine.limits.scaled_weights), refusing here weights it could not use
    scaled_weights(list(weights.values()), where, note=False)
    return {str(task): v for task, v in weights.items()}
