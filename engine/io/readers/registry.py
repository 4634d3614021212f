"""The registry of input readers, in the style of xarray's backend entrypoints.

A reader is data: a :class:`Reader` record with its name, how it recognises a
path, the options it takes and its opener.  :func:`engine.open_scores`, the
CLI's ``--input-format`` choices and the option names a sweep input accepts
all read :data:`READERS`; adding a reader is one :func:`register_reader` call.

:func:`open_scores` is the one way in: it picks a reader from the registry, reads, applies the sidecar and validates.
:func:`is_zarr_store` recognises a zarr store written by :func:`engine.to_zarr` (opened lazily, chunk by chunk, by
:func:`engine.io.store.open_store`) without importing anything of the store.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xarray as xr

from engine.errors import VotebenchError
from engine.labelled.canonical import apply_sidecar, ensure_valid, read_sidecar, sidecar_path, validation_deferred
from engine.progress import stage

__all__ = ["by_suffix", "check_options", "default_sidecar", "get_reader", "guess_reader", "input_kind",
           "is_zarr_store", "KIND_HINTS", "load_reader_plugins", "loader_keys", "only_for", "open_scores", "Reader",
           "reader_choices", "reader_names", "reader_options", "READERS", "register_reader"]


if TYPE_CHECKING:  # pragma: no cover
    from engine.rules import Names


@dataclass(frozen=True)
class Reader:
    """An input reader.

    Attributes
    ----------
    name : str
        Registry key: the value of ``open_scores(format=...)`` and ``--input-format``.
    open : callable
        ``open(path, **options) -> xarray.DataArray``: the canonical score tensor of
        ``path`` (a :class:`pathlib.Path`), best built with :func:`engine.scores_from_array`;
        :func:`engine.open_scores` then applies the sidecar and validates it.  Bad input
        raises :class:`~engine.errors.VotebenchError` naming the problem.
    guess_can_open : callable, optional
        ``guess_can_open(path) -> bool``: whether the reader recognises ``path``
        (cheaply: by suffix or folder content).  It may raise ``VotebenchError`` for a
        path it recognises but cannot open as it is (one lm-eval samples file, a folder
        holding two kinds of outputs).  ``None``: the reader is used only when named
        with ``format=``.
    options : tuple of str
        The keyword options ``open`` takes (``metric``, ``filter``, ...);
        :func:`engine.open_scores` refuses any other.
    description : str
        What the reader recognises, for messages and ``--help`` (e.g. ``"a CSV table (.csv)"``).
    carries_metadata : bool
        The input holds its own name, directions and groups (a zarr store): no
        ``<name>.meta.json`` is looked for beside it (one given with ``meta=`` still
        applies) and its name is not taken from the file name.
    keeps_own_directions : bool
        Tasks a sidecar does not name keep the direction and group the reader gave
        (evaluation outputs know their metrics' directions); otherwise they become
        higher-is-better, each its own group.
    kind : str
        What ``open`` returns: ``"scores"`` (a score tensor; the default) or another input kind, such as
        ``"battles"`` (:class:`engine.io.readers.battles.BattleInput`), which :func:`engine.open_scores`
        refuses (naming the kind) and the commands of that kind read.

    Examples
    --------
    >>> import engine
    >>> reader = engine.get_reader("zarr")
    >>> reader.name, callable(reader.open)
    ('zarr', True)

    A new format is one record and one :func:`register_reader` line (``tests/io/test_readers.py`` adds a
    ``.scores.txt`` reader that way).
    """

    name: str
    open: Callable[..., xr.DataArray]
    guess_can_open: Callable[[Path], bool] | None = None
    options: tuple[str, ...] = ()
    description: str = ""
    carries_metadata: bool = False
    keeps_own_directions: bool = False
    kind: str = "scores"


#: name -> reader, in the order :func:`guess_reader` tries them
READERS: dict[str, Reader] = {}
#: keyword names of :func:`engine.open_scores` itself, which no reader option may take
RESERVED = ("path", "meta", "format")


def by_suffix(*suffixes: str) -> Callable[[Path], bool]:
    """A ``guess_can_open`` accepting files whose name ends with one of ``suffixes`` (case-insensitive).

    Parameters
    ----------
    *suffixes : str
        E.g. ``".csv"``, ``".csv.gz"``.

    Returns
    -------
    callable
        ``path -> bool``; ``False`` for a folder.
    """
    ends = tuple(s.lower() for s in suffixes)

    def guess(path: Path) -> bool:
        return path.name.lower().endswith(ends) and path.is_file()

    return guess


@dataclass(frozen=True)
class only_for:  # noqa: N801 - used like the function by_suffix
    """A ``guess_can_open`` that asks ``guess`` only about files with one of ``suffixes`` (case-insensitive) and,
    with ``folders=True``, about folders; any other path is not recognised without calling it, so a reader whose
    guess lives in its own module is imported only for the paths it may take (a CSV never imports the HELM reader).
    """

    suffixes: tuple[str, ...]
    folders: bool
    guess: Callable[[Path], bool]

    def __init__(self, *suffixes: str, folders: bool = False, guess: Callable[[Path], bool]) -> None:
        object.__setattr__(self, "suffixes", tuple(s.lower() for s in suffixes))
        object.__setattr__(self, "folders", folders)
        object.__setattr__(self, "guess", guess)

    def __call__(self, path: Path) -> bool:
        if path.is_dir():
            return self.folders and self.guess(path)
        return bool(self.suffixes) and path.name.lower().endswith(self.suffixes) and self.guess(path)


def register_reader(reader: Reader, *, before: str | None = None) -> Reader:
    """Add a reader to the registry and return it.

    Parameters
    ----------
    reader : Reader
        The record.
    before : str, optional
        The name of a registered reader that this one is tried before when
        :func:`engine.open_scores` guesses (default: after every registered reader).

    Returns
    -------
    Reader
        ``reader``.

    Raises
    ------
    ValueError
        If the name is taken or empty, ``open`` or ``guess_can_open`` is not callable,
        an option is not an identifier or is one of :data:`RESERVED`, or ``before``
        names no registered reader.

    Examples
    --------
    >>> import engine
    >>> engine.register_reader(engine.get_reader("csv"))
    Traceback (most recent call last):
    ...
    ValueError: reader 'csv' is already registered
    """
    if not isinstance(reader.name, str) or not reader.name.strip():
        raise ValueError(f"a reader needs a non-empty name, got {reader.name!r}")
    if reader.name in READERS:
        raise ValueError(f"reader {reader.name!r} is already registered")
    if not callable(reader.open) or (reader.guess_can_open is not None and not callable(reader.guess_can_open)):
        raise ValueError(f"reader {reader.name!r}: open and guess_can_open must be callables")
    bad = [o for o in reader.options if not (isinstance(o, str) and o.isidentifier()) or o in RESERVED]
    if bad:
        raise ValueError(f"reader {reader.name!r}: option {bad[0]!r} is not an identifier or is one of {', '.join(RESERVED)}")
    if before is not None and before not in READERS:
        raise ValueError(f"reader {reader.name!r}: before={before!r} names no registered reader ({', '.join(READERS)})")
    entries = list(READERS.items())
    at = len(entries) if before is None else list(READERS).index(before)
    entries.insert(at, (reader.name, reader))
    READERS.clear()  # the same dict, in the new order
    READERS.update(entries)
    return reader


def reader_names() -> list[str]:
    """Names of all registered readers, in the order :func:`guess_reader` tries them.

    Returns
    -------
    list of str
        The readers' names; the first whose ``guess_can_open`` accepts a path opens it.

    Examples
    --------
    >>> import engine
    >>> "csv" in engine.reader_names() and "lm-eval" in engine.reader_names()
    True
    """
    return list(READERS)


def reader_options() -> tuple[str, ...]:
    """The union of the readers' option names, in order of registration (``metric``, ``filter``, ...)."""
    return tuple(dict.fromkeys(o for r in READERS.values() for o in r.options))


def loader_keys() -> tuple[str, ...]:
    """The keyword options of :func:`engine.open_scores` besides ``meta``: ``format`` and :func:`reader_options`."""
    return ("format", *reader_options())


def get_reader(name: str) -> Reader:
    """Look a reader up by name; an unknown name raises a :class:`VotebenchError` listing the known ones.

    Parameters
    ----------
    name : str
        A registered reader's name (:func:`reader_names`).

    Returns
    -------
    Reader
        Its registry record.

    Examples
    --------
    >>> import engine
    >>> engine.get_reader("csv").name
    'csv'
    """
    if isinstance(name, str) and name not in READERS:
        load_reader_plugins()
    try:
        return READERS[name]
    except (KeyError, TypeError):
        raise VotebenchError(f"unknown format {name!r}; use one of {', '.join(READERS)}") from None


def load_reader_plugins() -> bool:
    """Register the readers of the ``votebench.readers`` entry points (once, after the built-in ones); whether any was."""
    from engine.rules import register_plugins

    return bool(register_plugins("votebench.readers", Reader, READERS, register_reader, "reader"))


def reader_choices() -> Names:
    """``--input-format`` choices: every registered reader, and the plugins' once a name is not built in."""
    from engine.rules import Names

    return Names(reader_names, load_reader_plugins)


def guess_reader(path: Path) -> Reader:
    """The first registered reader whose ``guess_can_open`` accepts ``path``.

    Raises
    ------
    VotebenchError
        When none does (the message lists what each reader recognises), or when a
        reader recognises the path but refuses it.
    """
    for _ in range(2):  # the registered readers; then, once, those of installed packages (plugins), tried after them
        for reader in READERS.values():
            if reader.guess_can_open is not None and reader.guess_can_open(path):
                return reader
        if not load_reader_plugins():
            break
    expected = "; ".join(r.description or r.name for r in READERS.values() if r.guess_can_open is not None)
    what = "unknown kind of directory" if path.is_dir() else "unknown file type"
    raise VotebenchError(f"{path}: {what}; expected {expected}; or name the reader (format= / --input-format: {', '.join(READERS)})")


def check_options(reader: Reader, options: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The options given (``None`` values dropped), each one that ``reader`` takes; else :class:`VotebenchError`.

    The message names the reader's own options and the readers that take the one refused.
    """
    given = {k: v for k, v in options.items() if v is not None}
    for key in given:
        if key in reader.options:
            continue
        takes = f"{reader.name} takes {', '.join(reader.options)}" if reader.options else f"{reader.name} takes no options"
        users = [r.name for r in READERS.values() if key in r.options]
        if not users:
            known = ", ".join(reader_options()) or "none"
            raise VotebenchError(f"{source}: unknown option {key!r} ({takes}; options of all readers: {known})")
        raise VotebenchError(f"{source}: option {key!r} applies to {' and '.join(users)} input only, not to {reader.name} "
                             f"input ({takes})")
    return given


def input_kind(path: str | os.PathLike[str], format: str | None = None) -> str:
    """The kind of input ``path`` is, by the reader registry: ``"battles"`` or ``"scores"``.

    A path no reader recognises, a URL or a missing file counts as ``"scores"`` (reading it then says
    what is wrong).
    """
    if format is not None:
        return get_reader(format).kind
    text = str(path)
    if "://" in text or not Path(text).exists():
        return "scores"
    try:
        return guess_reader(Path(text)).kind
    except VotebenchError:
        return "scores"


#: what to do instead with an input of another kind than scores (said when :func:`open_scores` refuses it)
KIND_HINTS = {"battles": "rank it with a rule on battles (bradley_terry, elo, win_rate): engine.rank_battles, "
              "`votebench rank FILE --rule bradley_terry`"}


def default_sidecar(path: str | os.PathLike[str]) -> Path | None:
    """The sidecar :func:`open_scores` reads for ``path`` when given none: ``<name>.meta.json`` beside it, if it exists.

    An input that carries its own metadata (a zarr store: a reader with
    ``carries_metadata``) has none.
    """
    p = Path(path)
    if any(r.carries_metadata and r.guess_can_open is not None and r.guess_can_open(p) for r in READERS.values()):
        return None
    sc = sidecar_path(p)
    return sc if sc.is_file() else None


def _sidecar(path: Path, meta: str | os.PathLike[str] | Mapping[str, Any] | bool | None,
             reader: Reader) -> Mapping[str, Any] | None:
    """The sidecar's content to apply (``None``: none)."""
    if meta is None or isinstance(meta, bool):
        sc = sidecar_path(path)
        return read_sidecar(sc) if meta is not False and not reader.carries_metadata and sc.is_file() else None
    return meta if isinstance(meta, Mapping) else read_sidecar(meta)


def open_scores(path: str | os.PathLike[str], *, meta: str | os.PathLike[str] | Mapping[str, Any] | bool | None = None,
                format: str | None = None, **options: Any) -> xr.DataArray:
    """Open a score table, store or folder of evaluation outputs as the canonical score tensor.

    Parameters
    ----------
    path : str or path-like
        Read by the reader named by ``format``, else by the first registered reader
        (:data:`engine.io.readers.READERS`, in this order) that recognises it:

        * ``zarr``: a store written by :func:`engine.to_zarr`, opened lazily
          (dask-backed, chunks as stored);
        * ``lm-eval``: a folder of lm-evaluation-harness per-sample outputs
          (``samples_<task>_<date>.jsonl`` in one folder per model; :func:`engine.io.readers.lm_eval.read_lm_eval`);
        * ``helm``: a folder of HELM runs (``per_instance_stats.json`` + ``run_spec.json``;
          :func:`engine.io.readers.helm.read_helm`);
        * ``jsonl``: generic JSONL (``.jsonl`` / ``.jsonl.gz``), one ``{"system", "task",
          "instance", "score"}`` object per line (:func:`engine.io.readers.jsonl.read_jsonl`);
        * ``parquet``: Parquet (``.parquet`` / ``.pq``), wide or long;
        * ``csv``: a wide CSV (``.csv`` / ``.csv.gz``; ``.tsv`` tab-separated): first
          column the system name, one column per task, empty cell = missing; or a long
          CSV: columns ``system, task, instance, score`` (``instance`` optional).

        ``wide`` and ``long`` are read only when named (a CSV or Parquet table of that shape).
    meta : path, mapping or bool, optional
        The sidecar with directions (``higher_is_better``) and ``task_groups``.
        Default (``None`` or ``True``): ``<name>.meta.json`` beside the file or folder, when it exists (a zarr
        store carries its own); ``False`` ignores any sidecar.  For lm-eval and HELM input, tasks the sidecar
        does not name keep the reader's direction and group.
    format : str, optional
        The name of a registered reader (:func:`engine.io.readers.reader_names`: ``"zarr"``,
        ``"lm-eval"``, ``"helm"``, ``"jsonl"``, ``"parquet"``, ``"csv"``, ``"wide"``,
        ``"long"``, ...), instead of the guess by suffix / folder content.
    **options
        The reader's options (``None`` = not given); another reader's option is refused.
        lm-eval: ``metric`` and ``filter``; HELM: ``metric``, ``split`` and
        ``perturbation``, each a name or a mapping task -> name (see the readers).

    Returns
    -------
    xarray.DataArray
        The ``scores`` tensor; in memory (numpy) for tables and outputs, dask-backed for stores.

    Raises
    ------
    VotebenchError
        For a missing, unreadable or malformed file, a non-numeric or duplicate score, fewer than two systems, a
        task with no scores, a path no reader recognises, a metric the outputs lack or an option it does not take.

    Examples
    --------
    >>> import engine, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> _ = path.write_text("system,accuracy,f1\\nmodel-a,0.81,0.77\\nmodel-b,0.79,0.80\\n")
    >>> dict(engine.open_scores(path).sizes)
    {'system': 2, 'task': 2, 'instance': 1}
    """
    p = Path(path)
    if not p.exists():
        raise VotebenchError(f"{p}: no such file or directory")
    reader = get_reader(format) if format is not None else guess_reader(p)
    if reader.kind != "scores":
        raise VotebenchError(f"{p}: {reader.description or reader.name}, not a score table"
                             + (f"; {KIND_HINTS[reader.kind]}" if reader.kind in KIND_HINTS else ""))
    with stage("reading"), validation_deferred():  # checked once, below, after the sidecar
        scores = reader.open(p, **check_options(reader, options, str(p)))
    if not isinstance(scores, xr.DataArray):
        raise VotebenchError(f"{p}: reader {reader.name!r} returned {type(scores).__name__}, not an xarray.DataArray")
    if not reader.carries_metadata:
        scores.attrs.setdefault("name", sidecar_path(p).name[: -len(".meta.json")])
    sidecar = _sidecar(p, meta, reader)
    if sidecar is not None:
        scores = apply_sidecar(scores, sidecar, str(p), keep_unnamed=reader.keeps_own_directions)
    scores.attrs["source_file"] = str(p)
    ensure_valid(scores, source=str(p))
    return scores


def is_zarr_store(path: Path) -> bool:
    """Whether ``path`` is a folder holding a zarr group (``zarr.json``, or ``.zgroup`` of zarr format 2)."""
    return path.is_dir() and ((path / "zarr.json").exists() or (path / ".zgroup").exists())
