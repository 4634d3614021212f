"""Helpers shared by the readers: reading text and JSON with one-line errors, option values, assembling long rows.

Everything here is a building block for a reader's opener; none of it knows a
particular file format.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import os
import re
import stat
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.errors import VotebenchError
from engine.kernels.ranking import natural_key
from engine.labelled.canonical import least_systems, scores_from_array

__all__ = ["BATTLE_COLUMNS", "BYTES_HELD", "assemble", "battle_file_format", "file_header", "is_battles_file",
           "check_mapping_tasks", "input_bytes", "json_lines", "label", "need_two", "open_text",
           "parse_task_option", "per_task_option", "read_json", "reading_text", "short_list"]

#: the files of at most this many bytes in all are held in memory once read (:func:`input_bytes`)
BYTES_HELD = 1 << 28


class _Held:
    """The bytes of the files read last, keyed by (path, device, inode, size, modification time); a few, bounded in bytes."""

    def __init__(self) -> None:
        self.items: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> bytes | None:
        with self.lock:
            data = self.items.get(key)
            if data is not None:
                self.items.move_to_end(key)
            return data

    def put(self, key: tuple[Any, ...], data: bytes) -> None:
        with self.lock:
            self.items[key] = data
            while sum(map(len, self.items.values())) > BYTES_HELD or len(self.items) > 4:
                self.items.popitem(last=False)


_HELD = _Held()


def input_bytes(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes of a local file, read from disk once however many steps look at them (format guess, parse, checksum).

    A file is read again only when its size, modification time or inode changed; ``None`` for anything but a
    regular file of at most :data:`BYTES_HELD` bytes (a folder, a pipe, a larger file: the caller reads it itself).

    Raises
    ------
    OSError
        When the file cannot be read.
    """
    p = Path(path)
    st = p.stat()
    if not stat.S_ISREG(st.st_mode) or st.st_size > BYTES_HELD:
        return None
    key = (str(p.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    data = _HELD.get(key)
    if data is None:
        data = p.read_bytes()
        if len(data) == st.st_size:  # not changed while being read; otherwise used once, not kept
            _HELD.put(key, data)
    return data


def open_text(path: str | os.PathLike[str], *, newline: str | None = None) -> io.TextIOBase:
    """A (gzipped, by the ``.gz`` suffix) UTF-8 text file opened for reading, from the bytes of :func:`input_bytes`."""
    p = Path(path)
    gz = p.name.lower().endswith(".gz")
    data = input_bytes(p)
    if data is None:
        if gz:
            return gzip.open(p, "rt", encoding="utf-8-sig", newline=newline)
        return open(p, encoding="utf-8-sig", newline=newline)  # noqa: SIM115 - the caller closes it
    raw: Any = io.BytesIO(data)
    if gz:
        raw = gzip.GzipFile(fileobj=raw)
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline=newline)


@contextlib.contextmanager
def reading_text(path: str | os.PathLike[str]) -> Iterator[None]:
    """Context manager turning the errors of reading a (gzipped) UTF-8 text file into one-line :class:`VotebenchError`.

    Parameters
    ----------
    path : path-like
        The file read inside the block (named in the message).
    """
    try:
        yield
    except UnicodeDecodeError:
        raise VotebenchError(f"{path}: not a UTF-8 text file") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise VotebenchError(f"{path}: not a valid gzip file ({exc})") from None
    except OSError as exc:
        raise VotebenchError(f"{path}: cannot read file ({exc.strerror or exc})") from None


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for every non-blank line of a (gzipped) JSONL file.

    Raises
    ------
    VotebenchError
        For a line that is not JSON or not a JSON object (with its line number), or an unreadable file.
    """
    with reading_text(path), open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield lineno, _json_object(line, f"{path}: line {lineno}")


def _json_object(line: str, where: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise VotebenchError(f"{where}: not valid JSON ({exc.msg})") from None
    except ValueError as exc:  # an integer of over 4,300 digits
        raise VotebenchError(f"{where}: not valid JSON ({exc})") from None
    if isinstance(obj, dict):
        return obj
    raise VotebenchError(f"{where}: expected a JSON object, got {type(obj).__name__}")


def read_json(path: Path, what: str) -> Any:
    """The content of a JSON file; an unreadable or invalid one raises :class:`VotebenchError` saying it is not a ``what`` file."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except ValueError as exc:  # bad JSON, bad UTF-8, an integer of over 4,300 digits
        raise VotebenchError(f"{path}: not a valid {what} JSON file ({exc})") from None
    except OSError as exc:
        raise VotebenchError(f"{path}: cannot read file ({exc.strerror or exc})") from None


def label(value: Any) -> str | None:
    """A system/task/instance label from JSON: a non-empty string or an integer (as text); else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value).strip()
    return text or None


def per_task_option(option: Any, task: str) -> Any:
    """The value of an option for ``task``: its entry in a mapping (``None`` when absent), else the option itself."""
    return option.get(task) if isinstance(option, Mapping) else option


def check_mapping_tasks(option: Any, tasks: list[str], name: str, source: Path) -> None:
    """A mapping option (task -> value) names only tasks of the input; else :class:`VotebenchError`."""
    if isinstance(option, Mapping):
        unknown = sorted(set(map(str, option)) - set(tasks))
        if unknown:
            raise VotebenchError(f"{source}: {name} names unknown task(s): {', '.join(unknown[:5])} (tasks: {short_list(tasks)})")


def short_list(items: list[str], n: int = 8) -> str:
    """The first ``n`` items joined by commas, with the count when there are more; ``"none"`` for no item."""
    items = list(items)
    return ", ".join(items[:n]) + (f", ... ({len(items)} in all)" if len(items) > n else "") if items else "none"


def need_two(systems: list[str], source: Path, what: str, hint: str) -> None:
    """At least two systems (one inside :func:`engine.canonical.one_system_parts`); else :class:`VotebenchError` saying
    what was found and ``hint``."""
    if len(systems) < least_systems():
        raise VotebenchError(f"{source}: {what} of only {len(systems)} system ({short_list(systems)}); {hint}")


def assemble(
    rows: list[tuple[str, str, str, float]],
    *,
    source: Path,
    systems: list[str],
    tasks: list[str],
    sort_instances: bool = True,
    higher_is_better: Mapping[str, bool] | None = None,
    groups: Mapping[str, str] | None = None,
    attrs: Mapping[str, Any] | None = None,
) -> xr.DataArray:
    """Unique long rows (system, task, instance label, score) -> canonical tensor.

    Systems and tasks keep the given order; instances are the union of the labels,
    in natural order (``2`` before ``10``, ``id2`` before ``id10``) or, with
    ``sort_instances=False``, in order of first appearance; integer labels become ints.
    """
    if not rows:
        raise VotebenchError(f"{source}: no score rows")
    labels = list(dict.fromkeys(r[2] for r in rows))
    if sort_instances:
        labels.sort(key=natural_key)
    s_pos = {s: n for n, s in enumerate(systems)}
    t_pos = {t: n for n, t in enumerate(tasks)}
    i_pos = {k: n for n, k in enumerate(labels)}
    buf = np.full((len(tasks), len(labels), len(systems)), np.nan)
    for system, task, inst, value in rows:
        if math.isinf(value):
            raise VotebenchError(f"{source}: score of system {system!r} on task {task!r}, instance {inst!r} is not finite ({value})")
        buf[t_pos[task], i_pos[inst], s_pos[system]] = value
    empty = np.isnan(buf).all(axis=(1, 2))
    if empty.any():
        raise VotebenchError(f"{source}: task {tasks[int(np.argmax(empty))]!r} has no scores (all missing)")
    instances: list[Any] = labels
    if all(re.fullmatch(r"-?\d+", k) for k in labels) and len({int(k) for k in labels}) == len(labels):
        instances = [int(k) for k in labels]
    return scores_from_array(
        buf, systems=systems, tasks=tasks, instances=instances, higher_is_better=dict(higher_is_better or {}),
        groups=dict(groups or {}), attrs=attrs, layout="system-last",
    )


def parse_task_option(text: str | None) -> str | dict[str, str] | None:
    """Parse a command-line value of ``--metric`` / ``--filter`` / ``--split``.

    ``"acc"`` -> ``"acc"`` (every task); ``"arc_easy=acc_norm,gsm8k=exact_match"`` ->
    ``{"arc_easy": "acc_norm", "gsm8k": "exact_match"}`` (other tasks: the default).
    ``None`` or blank -> None.
    """
    if text is None or not text.strip():
        return None
    if "=" not in text:
        return text.strip()
    out: dict[str, str] = {}
    for item in text.split(","):
        task, sep, value = item.partition("=")
        if not sep or not task.strip() or not value.strip():
            raise VotebenchError(f"{text!r}: expected NAME or TASK=NAME[,TASK=NAME...]")
        out[task.strip()] = value.strip()
    return out


# ------------------------------------------------- recognising a battles file (cheaply: by its header)
#: the columns every battle record has
BATTLE_COLUMNS = ("model_a", "model_b", "winner")
_CSV = (".csv", ".csv.gz", ".tsv", ".tsv.gz")
_JSONL = (".jsonl", ".jsonl.gz")
_PARQUET = (".parquet", ".pq")


def battle_file_format(path: Path) -> str | None:
    """``"csv"``, ``"jsonl"`` or ``"parquet"``: the kind of table a battles file of this name would be; else ``None``."""
    name = path.name.lower()
    if name.endswith(_CSV):
        return "csv"
    if name.endswith(_JSONL):
        return "jsonl"
    if name.endswith(_PARQUET):
        return "parquet"
    return None


def file_header(path: Path, fmt: str) -> list[str]:
    """The column names of the file (its first line / first object / schema); ``[]`` when unreadable."""
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        with open_text(path) as fh:
            if fmt == "csv":
                line = fh.readline()
                return [c.strip().strip('"') for c in line.rstrip("\r\n").split("\t" if ".tsv" in path.name.lower() else ",")]
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    return list(obj) if isinstance(obj, dict) else []
    except Exception:  # noqa: BLE001 - a file that cannot be sniffed is not recognised as battles (its reader says why)
        return []
    return []


def is_battles_file(path: Path) -> bool:
    """Whether ``path`` is a CSV, JSON Lines or Parquet file whose columns include ``model_a``, ``model_b`` and ``winner``.

    Reads only the header (the first line, the first JSON object, the Parquet schema).
    """
    p = Path(path)
    fmt = battle_file_format(p)
    return fmt is not None and p.is_file() and set(BATTLE_COLUMNS) <= set(file_header(p, fmt))
