"""Perturbation kinds of a sweep, one module each, registered in :data:`KINDS`.

=================  ==========================================  =====================================
kind               what a block computes                       module
=================  ==========================================  =====================================
``bootstrap``      replicate scores of one rule                :mod:`engine.sweep.kinds.bootstrap`
``subsets``        taus of random task subsets of one size     :mod:`engine.sweep.kinds.subsets`
``grid``           the ranking at one point of an option grid  :mod:`engine.sweep.kinds.grid`
``manipulation``   Colombo's synthetic curves (no input)       :mod:`engine.sweep.kinds.synthetic`
``rescaling``      (same module)                               :mod:`engine.sweep.kinds.synthetic`
=================  ==========================================  =====================================

A kind is one record of hooks (:class:`Kind`: its keys and validation, plan, block task, store writing and chunks,
memory estimate, dashboard summary and state); the sweep, the results store, the live dashboard and the report look a
store group's kind up in :data:`KINDS` and call its hooks (none of them tests a kind's name).  A new kind is one module
defining a :class:`Kind` and one line::

    register_kind(MY_KIND)

(a built-in kind is one line in the table at the end of this module, which imports its module when the kind is first
looked up; ``tests/sweep/test_sweep_kinds.py`` is a worked example).

A kind's :attr:`Kind.dashboard` hook returns a :class:`GroupState`, the live state of one results-store group:
:class:`engine.app.dashboard.LiveStore` sets its :attr:`~GroupState.files` (the chunk files of its ``done`` flags,
from a directory listing), calls :meth:`~GroupState.poll` while blocks remain and puts :meth:`~GroupState.to_json`
in the page's snapshot (JSON-safe numbers: :func:`json_number`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib import import_module
from typing import Any

import numpy as np
import xarray as xr

from engine.errors import VotebenchError
from engine.kernels.summaries import SummaryCodec
from engine.limits import MOST, check_size, shown

__all__ = ["aggregate_options", "Block", "block_ids", "get_kind", "GroupState", "is_number", "json_ints",
           "json_number", "json_numbers", "Kind", "KINDS", "KindTable", "labels", "load_kind_plugins", "MOST_BLOCKS",
           "PlanContext", "register_kind", "replicate_blocks", "SpecCheck", "StoreChanged", "TASK_BYTES"]


#: the most blocks of one perturbation: each is one task of the cluster, planned up front (a million tasks are
#: already minutes of scheduling)
MOST_BLOCKS = 1_000_000

#: memory of one planned block (its :class:`Block` and dask task objects), roughly, for :attr:`Kind.memory`
TASK_BYTES = 1024.0


@dataclass(frozen=True)
class Block:
    """One unit of work: a small picklable function computing values for a region of one store variable.

    ``compute`` holds the input's :class:`~engine.distributed.Source` (path, options, checksum),
    never the scores: the worker that runs it opens the input itself.
    """

    group: str
    var: str
    region: tuple[Any, ...]
    done_index: tuple[int, ...]
    compute: Callable[[], np.ndarray]


@dataclass(frozen=True)
class SpecCheck:
    """Where a ``[[perturbations]]`` entry is (file, position, kind), for one-line errors naming it.

    ``fail("msg")`` gives ``"<file>: perturbation <i>: msg"``, ``fail("msg", kind=True)``
    ``"<file>: perturbation <i> (<kind>): msg"``.
    """

    where: str
    index: int
    kind: str

    def fail(self, message: str, *, kind: bool = False) -> VotebenchError:
        at = f"perturbation {self.index}" + (f" ({self.kind})" if kind else "")
        return VotebenchError(f"{self.where}: {at}: {message}")

    def positive(self, spec: Mapping[str, Any], *keys: str) -> None:
        """Every ``spec[key]`` a positive integer (not a bool) within :data:`engine.limits.MOST` (:func:`engine.limits.check_size`)."""
        for k in keys:
            v = spec[k]
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise self.fail(f"{k} must be a positive integer, got {shown(v)}")
            self.size(k, v)

    def blocks(self, n: int, block: int, what: str = "replicates") -> None:
        """The number of blocks ``ceil(n / block)`` within :data:`MOST_BLOCKS` (each is one task of the cluster)."""
        self.size(f"{what} / block (the number of blocks)", -(-n // block), most=MOST_BLOCKS,
                  fix=f"use a larger block or fewer {what}")

    def size(self, key: str, value: Any, nbytes: float = 0.0, what: str = "", fix: str = "", most: int = MOST) -> None:
        """:func:`engine.limits.check_size` of ``value``, its message naming this entry and ``key``."""
        try:
            check_size(key, value, nbytes=nbytes, what=what, fix=fix, most=most)
        except VotebenchError as exc:
            raise self.fail(str(exc)) from None


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool); an integer beyond float64 is not one."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def aggregate_options(inp: Mapping[str, Any], rule: Mapping[str, Any]) -> dict[str, Any]:
    """The :func:`engine.rank` options of a sweep rule on a sweep input (the rule's level/within/across win)."""
    opts = {k: inp[k] for k in ("level", "missing", "weights", "groups", "within", "across") if k in inp}
    opts.update({k: rule[k] for k in ("level", "within", "across") if k in rule})
    opts["rule"] = rule["name"]
    opts["options"] = dict(rule.get("options", {}))
    return opts


@dataclass
class PlanContext:
    """What a kind's :attr:`Kind.plan` hook gets for one store group.

    Attributes
    ----------
    group : str
        The store group (``<input>/<name>``, or ``synthetic/<name>`` for a kind without input).
    spec : mapping
        The perturbation, as :attr:`Kind.validate` returned it.
    rules : list of mapping
        The sweep's rules (``name``, ``label``, ``options``, ...).
    seed : int
        The sweep's seed.
    input : mapping or None
        The sweep input (None for a kind without input).
    source : engine.distributed.Source or None
        Where the workers read the input (checksum filled in).
    systems : numpy.ndarray or None
        The input's systems (object array).
    tasks : list of str or None
        The input's tasks.
    points : dict
        Full-data ``(score, rank)`` of every rule label on the input.
    """

    group: str
    spec: Mapping[str, Any]
    rules: Sequence[Mapping[str, Any]]
    seed: int
    run_block: Callable[..., np.ndarray]
    input: Mapping[str, Any] | None = None
    source: Any = None
    systems: np.ndarray | None = None
    tasks: Sequence[str] | None = None
    points: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        """The rule labels (the ``rule`` coordinate of a group that has one)."""
        return [str(r["label"]) for r in self.rules]

    @property
    def n_systems(self) -> int:
        """The input's number of systems (0 without input)."""
        return 0 if self.systems is None else int(self.systems.size)

    @property
    def n_tasks(self) -> int:
        """The input's number of tasks (0 without input)."""
        return len(self.tasks or ())

    def options(self, rule: Mapping[str, Any]) -> dict[str, Any]:
        """:func:`aggregate_options` of ``rule`` on this group's input."""
        return aggregate_options(self.input or {}, rule)

    def block(self, var: str, region: tuple[Any, ...], done_index: tuple[int, ...], *args: Any) -> Block:
        """A :class:`Block` of this group whose task is ``kind.run_block(*args)``."""
        return Block(self.group, var, region, done_index, partial(self.run_block, *args))


def replicate_blocks(n: int, block: int) -> list[np.ndarray]:
    """Replicate indices ``0 .. n-1`` cut into consecutive blocks of ``block`` (the last may be shorter)."""
    return [np.arange(i, min(n, i + block)) for i in range(0, n, block)]


@dataclass(frozen=True)
class Kind:
    """A perturbation kind of a sweep: its configuration, planning, block task, store layout and presentation.

    Attributes
    ----------
    name : str
        The ``kind`` of a ``[[perturbations]]`` entry and the ``kind`` attribute of its store groups.
    keys : frozenset of str
        The keys an entry may have besides ``kind`` and ``name``.
    validate : callable
        ``validate(spec, check) -> spec``: fill in defaults (including ``name``) and check the values;
        errors through ``check.fail(...)`` (:class:`SpecCheck`).
    plan : callable
        ``plan(ctx) -> (skeleton, blocks)``: the store group's Dataset (``done`` flags, NaN results,
        ``kind`` among its attrs) and its blocks (``ctx.block(...)``, see :class:`PlanContext`).
    run_block : callable
        The function a block runs on a worker (picklable arguments only: a
        :class:`~engine.distributed.Source`, options, replicate indices, the seed); returns the block's values.
    needs_input : bool
        False for a kind that reads no input: it gets one group ``synthetic/<name>`` per sweep.
    check : callable, optional
        ``check(scores, spec, options)``, run on the input for every rule before any block is planned.
    memory : callable, optional
        ``memory(spec, n_rules, n_systems) -> (bytes, what, fix)``: the in-memory size of the group's
        variables, refused (before anything is read or allocated) when it cannot fit.
    chunks : callable, optional
        ``chunks(skeleton) -> {variable: chunk shape}``: one block per chunk (``done`` gets one flag per chunk).
    write : callable, optional
        ``write(grp, block, values)``: store a finished block (default ``grp[block.var][block.region] = values``).
    summary : engine.kernels.summaries.SummaryCodec, optional
        The block's mergeable summary for the live dashboard (None: no summary).
    dashboard : callable, optional
        ``dashboard(name, grp, level=, pool=, agree_budget=)``: the live state of a store group, an
        :class:`engine.sweep.kinds.GroupState` whose ``to_json()`` is the group in the page's snapshot.
    stream : str, optional
        The random stream of the kind's own draws (:func:`engine.kernels.resample.replicate_generator`'s
        ``stream``): a built-in one (``"tasks"``, ``"subsets"``, ...) or the kind's own name, which needs no
        registration (:func:`engine.kernels.resample.stream_id`); ``None``: the kind draws nothing itself.
    """

    name: str
    keys: frozenset[str]
    validate: Callable[[dict[str, Any], SpecCheck], dict[str, Any]]
    plan: Callable[[PlanContext], tuple[xr.Dataset, list[Block]]]
    run_block: Callable[..., np.ndarray]
    needs_input: bool = True
    check: Callable[[xr.DataArray, Mapping[str, Any], Mapping[str, Any]], None] | None = None
    memory: Callable[[Mapping[str, Any], int, int], tuple[float, str, str]] | None = None
    chunks: Callable[[xr.Dataset], dict[str, tuple[int, ...]]] | None = None
    write: Callable[[Any, Block, np.ndarray], None] | None = None
    summary: SummaryCodec | None = None
    dashboard: Callable[..., Any] | None = None
    stream: str | None = None


class KindTable(MutableMapping[str, Kind]):
    """The registered kinds by name, in registration order; a built-in kind is named by its module and record
    (:meth:`add_builtin`) and imported when first looked up, so that a sweep imports only the kinds it runs."""

    def __init__(self) -> None:
        self._records: dict[str, Kind | tuple[str, str]] = {}

    def add_builtin(self, name: str, module: str, record: str) -> None:
        """Register the kind ``record`` of ``module`` under ``name``, imported on first use."""
        self._records.setdefault(name, (module, record))

    def __getitem__(self, name: str) -> Kind:
        entry = self._records[name]
        if isinstance(entry, tuple):
            entry = getattr(import_module(entry[0]), entry[1])
            if not isinstance(entry, Kind) or entry.name != name:
                raise TypeError(f"built-in kind {name!r} names {entry!r}")
            self._records[name] = entry
        return entry

    def __setitem__(self, name: str, kind: Kind) -> None:
        self._records[name] = kind

    def __delitem__(self, name: str) -> None:
        del self._records[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, name: object) -> bool:
        return name in self._records

    def loaded(self, name: str) -> Kind | None:
        """The kind ``name`` if it is imported already (no import), else None."""
        entry = self._records.get(name)
        return entry if isinstance(entry, Kind) else None


#: the registered perturbation kinds, by name, in registration order
KINDS = KindTable()


def register_kind(kind: Kind, *, replace: bool = False) -> Kind:
    """Add ``kind`` to :data:`KINDS` (``replace``: overwrite a kind of the same name); returns it.

    Raises
    ------
    VotebenchError
        A kind of that name is registered already (and not ``replace``).
    """
    if kind.name in KINDS and not replace and KINDS[kind.name] is not kind:
        raise VotebenchError(f"a perturbation kind {kind.name!r} is registered already")
    KINDS[kind.name] = kind
    return kind


def get_kind(name: str) -> Kind | None:
    """The registered kind ``name``, or None (e.g. a store group written with a kind this process does not know).

    A name not registered yet is looked for, once, among the ``votebench.kinds`` entry points of installed packages.
    """
    if name not in KINDS:
        load_kind_plugins()
    return KINDS.get(name)


def load_kind_plugins() -> None:
    """Register the kinds of the ``votebench.kinds`` entry points (once; a name already taken is skipped with a note)."""
    from engine.rules import register_plugins

    register_plugins("votebench.kinds", Kind, KINDS, register_kind, "kind")


def json_number(x: Any) -> float | None:
    """A JSON-safe float: ``None`` for NaN or infinite values."""
    v = float(x)
    return v if math.isfinite(v) else None


def json_numbers(a: np.ndarray) -> list[float | None]:
    """:func:`json_number` of every value of ``a`` (flattened)."""
    return [json_number(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def json_ints(a: np.ndarray) -> list[int | None]:
    """Every value of ``a`` (flattened) as an int, ``None`` for NaN or infinite values."""
    return [None if not math.isfinite(v) else int(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def labels(arr: Any) -> list[str]:
    """The values of a stored (coordinate) array as strings."""
    return [str(v) for v in np.asarray(arr[...]).ravel()]


def block_ids(bi: int, block: int, n: int) -> slice:
    """The replicates of block ``bi`` (``block`` per block, ``n`` in all)."""
    return slice(bi * block, min(n, (bi + 1) * block))


class StoreChanged(Exception):
    """A flag went from done to not done: the store was replaced (``--overwrite``); start over."""


class GroupState:
    """Merged state of one store group, brought up to date block by block.

    Subclasses set :attr:`h_done` (the group's ``done`` array) in their
    ``__init__`` (calling ``super().__init__(name, grp)``), merge the blocks
    :meth:`new_blocks` returns in :meth:`poll` and say what the page gets in
    :meth:`to_json`.

    Attributes
    ----------
    name : str
        The store group.
    done : numpy.ndarray of bool
        The blocks merged so far (shape of the ``done`` flags).
    files : frozenset of tuple, optional
        Chunk indices of the ``done`` flags that exist as files (set by the
        store's reader before each :meth:`poll`); None: read every flag.
    """

    busy = False  # work left that needs no new block

    def __init__(self, name: str, grp: Any) -> None:
        self.name = name
        self.h_done = grp["done"]
        self.done = np.zeros(tuple(int(v) for v in self.h_done.shape), dtype=bool)
        self.files: frozenset[tuple[int, ...]] | None = None

    @property
    def input(self) -> str:
        """The input of the group (the first part of its name)."""
        return self.name.split("/", 1)[0]

    def progress(self) -> dict[str, int]:
        """``blocks_done`` and ``blocks_total`` of the group."""
        return {"blocks_done": int(self.done.sum()), "blocks_total": int(self.done.size)}

    def new_blocks(self) -> list[tuple[int, ...]]:
        """Blocks flagged done since the last look (raises :class:`StoreChanged` when a flag went back).

        With the chunk files of the flags listed (:attr:`files`), only
        the new ones are read; otherwise every flag.
        """
        if self.done.all():
            return []
        files = self.files
        if files is None or (-1,) in files or any(len(ix) != self.done.ndim for ix in files):
            done = np.asarray(self.h_done[...], dtype=bool)
        else:
            if any(ix not in files for ix in map(tuple, np.argwhere(self.done))):
                raise StoreChanged
            cand = [ix for ix in files if not self.done[ix]]
            done = self.done.copy()
            if cand:
                got = np.asarray(self.h_done.get_coordinate_selection(tuple(np.array(c) for c in zip(*cand))), dtype=bool)
                for ix, v in zip(cand, got):
                    done[ix] = v
        if (self.done & ~done).any():
            raise StoreChanged
        return [tuple(int(v) for v in ix) for ix in np.argwhere(done & ~self.done)]

    def poll(self) -> bool:
        """Merge the blocks done since the last call; True when the group's JSON changes."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        """The group in the dashboard's snapshot (``name``, ``input``, ``kind``, ``blocks_done``, ``blocks_total``, ...)."""
        raise NotImplementedError


# the built-in kinds, imported when first looked up (a sweep imports the kinds it runs)
for _name, _module, _record in (("bootstrap", "bootstrap", "BOOTSTRAP"), ("subsets", "subsets", "SUBSETS"),
                                ("grid", "grid", "GRID"), ("manipulation", "synthetic", "MANIPULATION"),
                                ("rescaling", "synthetic", "RESCALING")):
    KINDS.add_builtin(_name, f"engine.sweep.kinds.{_module}", _record)
