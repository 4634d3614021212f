"""Finding the evaluation outputs in a watched folder, and telling when each is complete.

A *unit* is what one reader call reads and what the watch ingests or refuses as a whole:

* an lm-evaluation-harness model folder (a folder holding ``samples_*.jsonl`` files): complete once its
  ``results_*.json`` exists (the harness writes it last);
* a HELM folder (a folder directly under the watched one holding ``per_instance_stats.json`` at any depth):
  complete once none of its files changed for the settling time;
* any other file (JSONL, CSV, Parquet, ...): complete once unchanged for the settling time.

Names starting with ``.`` (temporary files of writers, ours included) and sidecars (``*.meta.json``) are no units.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FileStat", "Unit", "file_sha256", "find_units"]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class FileStat:
    """Size and modification time (ns) of one file: what tells a file changed without reading it."""

    size: int
    mtime_ns: int


@dataclass
class Unit:
    """One evaluation output of the watched folder.

    Attributes
    ----------
    key : str
        Its path relative to the watched folder (POSIX), the ledger's key.
    path : pathlib.Path
        The folder or file a reader opens.
    kind : str
        ``"lm-eval"``, ``"helm"`` or ``"file"``.
    files : dict
        Path relative to the watched folder -> :class:`FileStat`, for every file of the unit.
    complete : bool
        Whether it may be read now.
    waiting : str
        Why not, when not complete.
    """

    key: str
    path: Path
    kind: str
    files: dict[str, FileStat] = field(default_factory=dict)
    complete: bool = False
    waiting: str = ""


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _is_samples(name: str) -> bool:
    low = name.lower()
    return low.startswith("samples_") and low.endswith((".jsonl", ".jsonl.gz"))


def _stats(root: Path, paths: list[Path]) -> dict[str, FileStat]:
    out = {}
    for p in sorted(paths):
        try:
            st = p.stat()
        except OSError:  # removed meanwhile: the next poll sees the folder as it is then
            continue
        out[p.relative_to(root).as_posix()] = FileStat(st.st_size, st.st_mtime_ns)
    return out


def _files_under(folder: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        out.extend(Path(dirpath) / f for f in filenames if not _hidden(f))
    return out


def _settled(unit: Unit, settle: float, now_ns: int) -> None:
    newest = max((s.mtime_ns for s in unit.files.values()), default=now_ns)
    age = (now_ns - newest) / 1e9
    unit.complete = bool(unit.files) and age >= settle
    unit.waiting = "" if unit.complete else f"changed {age:.1f} s ago (settling time {settle:g} s)"


def _lm_eval_unit(root: Path, folder: Path, names: list[str]) -> Unit:
    unit = Unit(folder.relative_to(root).as_posix() or ".", folder, "lm-eval",
                _stats(root, [folder / n for n in names if not _hidden(n)]))
    unit.complete = any(n.startswith("results_") and n.endswith(".json") for n in names)
    unit.waiting = "" if unit.complete else "no results_*.json yet"
    return unit


def find_units(root: str | os.PathLike[str], *, settle: float, now_ns: int | None = None,
               skip: frozenset[Path] = frozenset()) -> list[Unit]:
    """The units under ``root``, in path order, each with its files' stats and whether it is complete.

    Parameters
    ----------
    root : path-like
        The watched folder.
    settle : float
        Seconds a HELM folder or a file must stay unchanged before it counts as complete.
    now_ns : int, optional
        The time to compare modification times with (default: now).
    skip : set of pathlib.Path
        Resolved paths that are no units and are not looked into (the watch's own store and snapshot file).
        Zarr stores (folders with ``zarr.json``) are not looked into either.
    """
    import time

    root = Path(root)
    now_ns = time.time_ns() if now_ns is None else now_ns
    units: list[Unit] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d) and (here / d).resolve() not in skip
                             and not (here / d / "zarr.json").is_file())
        if any(_is_samples(n) for n in filenames):
            units.append(_lm_eval_unit(root, here, sorted(filenames)))
            dirnames[:] = []
            continue
        if here == root:
            for d in list(dirnames):
                if any((here / d).rglob("per_instance_stats.json")):
                    unit = Unit(d, here / d, "helm", _stats(root, _files_under(here / d)))
                    _settled(unit, settle, now_ns)
                    units.append(unit)
                    dirnames.remove(d)
        for name in sorted(filenames):
            if _hidden(name) or name.lower().endswith(".meta.json") or (here / name).resolve() in skip:
                continue
            unit = Unit((here / name).relative_to(root).as_posix(), here / name, "file", _stats(root, [here / name]))
            _settled(unit, settle, now_ns)
            units.append(unit)
    return sorted(units, key=lambda u: u.key)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes (hex), read in 1 MiB pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()
