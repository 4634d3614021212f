"""The registry of input readers, in the style of xarray's backend entrypoints.

A reader is data: a :class:`Reader` record with its name, how it recognises a
path, the options it takes and its opener.  :func:`engine.open_scores`, the
CLI's ``--input-format`` choices and the option names a sweep input accepts
all read :data:`READERS`; adding a reader is one :func:`register_reader` call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xarray as xr

from engine.errors import VotebenchError

if TYPE_CHECKING:  # pragma: no cover
    from engine.rules import Names

__all__ = ["READERS", "Reader", "by_suffix", "only_for", "check_options", "get_reader", "guess_reader", "input_kind",
           "load_reader_plugins", "loader_keys",
           "reader_choices", "reader_names", "reader_options", "register_reader"]


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
