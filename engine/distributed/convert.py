"""``votebench convert --scheduler``: a long CSV converted by the workers of a dask cluster, in parts.

The store is the one :func:`engine.io.convert.convert` writes in this process for the same input (the same labels
and order, attributes, chunks and chunk bytes); only the work is spread:

1. **parse** (one task per part): the CSV after its header is cut into parts of whole lines (byte ranges, each
   about the size :func:`engine.distributed.cluster.choose_block` picks for the cluster); each worker parses its
   part, checks every row (the table reader's rules) and writes the rows to a binary file with the part's own label
   codes; it returns its labels in order of first appearance and its row count;
2. here: the labels of the parts merged in part order (so in order of first appearance in the file, as in this
   process), the store's skeleton (labels, sidecar, attributes; no scores) written to the temporary store;
3. **sort** (one task per part): the part's codes mapped to the store's, its rows sorted by *slab* (a run of whole
   store chunks, :func:`engine.io.convert.slabs_of`), each with its position in the input;
4. **fill** (one task per slab: runs of whole store chunks, about 4 per worker thread, at most
   :data:`engine.io.convert.SLAB_CELLS` cells): the slab's rows of every part, in input order, filled in, checked
   (duplicate entries) and written by the worker as a region of the temporary store: no two tasks write one chunk;
5. here: the per-task counts, the check that every task has scores, then the temporary store renamed into place.

Every temporary file and the temporary store live beside the target (``.<name>.tmp-<pid>-<hex>``): the input and
the target's folder must be reachable under the same path from every worker (a shared file system), as for every
command that gives workers an input by path.  Bad input is one line naming the input and its line (counted as the
table reader counts: the header is line 1, blank lines skipped), and nothing is left: every task has ended before
the temporary folders are removed.  A lost scheduler or worker pool is :class:`~engine.errors.ClusterLost` (nothing
was written: run the command again).

A ``.csv.gz`` cannot be cut into byte ranges and any other input is read in memory: both are converted in this
process (``where`` of the result says why).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from engine.distributed.cluster import TASKS_PER_THREAD, choose_block, cluster_shape, lost_cluster
from engine.errors import ClusterLost, VotebenchError
from engine.io import convert as streamed
from engine.io.convert import (
    SLAB_ROW,
    RowError,
    check_target,
    convert,
    fill_rows,
    long_header,
    parse_range,
    publish_counts,
    read_rows,
    remove_work,
    slab_totals,
    slabs_of,
    sort_rows,
    start_store,
)
from engine.io.files import make_temp_dir

__all__ = ["PARSE_MEMORY", "PART_UNIT", "convert_on_cluster", "fill_slab", "line_spans", "parse_part", "sort_part"]

#: the unit of the part-size rule: parts are a whole number of these bytes of CSV (then moved to a line's end)
PART_UNIT = 1 << 16
#: bytes of a worker's memory per byte of CSV it parses (string columns, the codes, the rows sorted), roughly
PARSE_MEMORY = 8.0


def convert_on_cluster(client: Any, source: str | os.PathLike[str], store: str | os.PathLike[str], *,
                       meta: str | os.PathLike[str] | Mapping[str, Any] | bool | None = None, overwrite: bool = False,
                       chunks: Mapping[str, int] | None = None, part_bytes: int | None = None) -> dict[str, Any]:
    """:func:`engine.io.convert.convert` of ``source`` to ``store``, its parts parsed and its slabs written by the
    workers of ``client``'s cluster.

    Parameters
    ----------
    client : distributed.Client
        The cluster (its workers read ``source`` and write beside ``store`` by path).
    source, store, meta, overwrite, chunks
        As :func:`engine.io.convert.convert`.
    part_bytes : int, optional
        Bytes of CSV per part (default: :func:`engine.distributed.cluster.choose_block` of the input's
        :data:`PART_UNIT` units for the cluster's threads and memory, :data:`PARSE_MEMORY` bytes per byte).

    Returns
    -------
    dict
        The result of :func:`engine.io.convert.convert`, plus ``parts`` and ``slabs`` (the tasks of each step; 0 when
        converted here) and ``where`` (``"cluster"``, or why it ran in this process).
    """
    src, target = Path(source), Path(store)
    check_target(src, target, overwrite)
    header = long_header(src)
    if header is None or src.name.lower().endswith(".gz"):
        info = convert(src, target, meta=meta, overwrite=overwrite, chunks=chunks)
        why = "a .csv.gz cannot be cut into parts" if header is not None else "not a long CSV: read in memory"
        return {**info, "parts": 0, "slabs": 0, "where": f"this process ({why})"}
    start, size = _data_start(src), src.stat().st_size
    shape = cluster_shape(client)
    if part_bytes is None:
        units = max(1, math.ceil((size - start) / PART_UNIT))
        part_bytes = PART_UNIT * choose_block(units, shape.threads, shape.memory_per_thread, PARSE_MEMORY * PART_UNIT)
    spans = line_spans(src, start, size, part_bytes)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = make_temp_dir(target.absolute())  # the workers need absolute paths (their working folder may differ)
    build = None
    try:
        n_rows, labels, row0, codes = _parse(client, src, header, spans, work)
        build, (S, T, K), (tc, ic), tasks = start_store(src, labels, meta, chunks, target)
        # slabs of whole chunks: about TASKS_PER_THREAD per worker thread, never more cells than in this process
        most = min(streamed.SLAB_CELLS, math.ceil(T * K * S / (TASKS_PER_THREAD * max(1, shape.threads))))
        slabs = slabs_of(T, K, S, tc, ic, most)
        bounds = _run(client, sort_part, [(work / f"part{i}.bin", work / f"sorted{i}.bin", slabs, K, row0[i], codes[i])
                                          for i in range(len(spans))])
        filled = _run(client, fill_slab, [(build, slab, [(work / f"sorted{i}.bin", int(b[j]), int(b[j + 1]))
                                                         for i, b in enumerate(bounds) if b[j + 1] > b[j]], S)
                                          for j, slab in enumerate(slabs)])
        n_inst, n_missing = slab_totals(src, header, tasks, slabs, filled)
        publish_counts(build, target, n_inst, T, K)
        build = None
    finally:
        remove_work(work, build)
    return {"store": target, "streamed": True, "rows": n_rows, "systems": S, "tasks": T, "instances": K,
            "missing": n_missing, "chunks": (int(tc), int(ic)), "parts": len(spans), "slabs": len(slabs),
            "where": "cluster"}


def _data_start(src: Path) -> int:
    """The byte offset of the first data line (after the header's line break; the file's size without one)."""
    with open(src, "rb") as fh:
        offset = 0
        while True:
            block = fh.read(1 << 16)
            if not block:
                return offset
            nl = block.find(b"\n")
            if nl >= 0:
                return offset + nl + 1
            offset += len(block)


def line_spans(src: Path, start: int, size: int, part_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges ``[a, b)`` of whole lines covering ``src[start:size]``, each about ``part_bytes`` long (a range ends
    just after a line break, or at the end of the file)."""
    cuts = [start]
    with open(src, "rb") as fh:
        at = start + max(1, part_bytes)
        while at < size:
            fh.seek(at - 1)  # the byte before the cut: a line break there makes the cut a line's start
            while True:
                block = fh.read(1 << 16)
                if not block:
                    at = size
                    break
                nl = block.find(b"\n")
                if nl >= 0:
                    at = fh.tell() - len(block) + nl + 1
                    break
            if at < size:
                cuts.append(at)
            at += max(1, part_bytes)
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def parse_part(src: Path, header: list[str], rows_file: Path, span: tuple[int, int]) -> Any:
    """Task: parse the part ``span`` of ``src`` to ``rows_file`` (its own codes); ``(rows, labels)``, or for a bad
    row ``("row", index of the row in the part, what is wrong)`` (its line is known once the rows before are), or
    ``("error", message)`` for a part that cannot be parsed at all."""
    try:
        return parse_range(src, header, rows_file, span)
    except RowError as exc:
        return ("row", exc.line, exc.detail)
    except VotebenchError as exc:
        row = _short_row(src, span, len(header)) if "malformed CSV" in str(exc) else None
        if row is not None:  # pyarrow's "Row #N" counts from the part's start: the line is said instead
            detail = re.sub(r"Row #\d+: ", "", str(exc).split(": ", 1)[1])
            return ("row", row, detail)
        return ("error", str(exc))


def _short_row(src: Path, span: tuple[int, int], n_fields: int) -> int | None:
    """The index (blank lines skipped) of the first row of the part ``span`` of ``src`` whose number of fields is not
    ``n_fields``; ``None`` when every row has it."""
    with open(src, "rb") as fh:
        fh.seek(span[0])
        text = fh.read(span[1] - span[0]).decode("utf-8", errors="replace")
    n = 0
    for fields in csv.reader(io.StringIO(text)):
        if not fields:  # a blank line: skipped by the parser, not counted
            continue
        if len(fields) != n_fields:
            return n
        n += 1
    return None


def sort_part(rows_file: Path, out_file: Path, slabs: list[tuple[int, int, int, int]], K: int, row0: int,
              codes: Mapping[str, np.ndarray]) -> np.ndarray:
    """Task: :func:`engine.io.convert.sort_rows` of one part; where each slab's rows start in ``out_file``."""
    return sort_rows(rows_file, out_file, slabs, K, row0, codes)


def fill_slab(build: Path, slab: tuple[int, int, int, int], pieces: Sequence[tuple[Path, int, int]], S: int) -> Any:
    """Task: fill one slab of the store ``build`` from its rows in every part (``(file, first, stop)`` records, in
    input order) and write it as a region (:func:`engine.io.convert.fill_rows`)."""
    import zarr

    arr = zarr.open_array(str(build), path="scores", mode="r+", zarr_format=3)
    return fill_rows(arr, slab, chain.from_iterable(read_rows(f, SLAB_ROW, a, b) for f, a, b in pieces), S)


def _parse(client: Any, src: Path, header: list[str], spans: list[tuple[int, int]], work: Path
           ) -> tuple[int, dict[str, list[str]], list[int], list[dict[str, np.ndarray]]]:
    """Step 1 on the workers, then the labels merged here: the rows, the labels (first appearance in the file), the
    position of each part's first row, and each part's codes mapped to the merged labels."""
    where = src.absolute()  # read by the workers; named as the user wrote it in messages
    parsed = _run(client, parse_part, [(where, header, work / f"part{i}.bin", span) for i, span in enumerate(spans)])
    row0, before = [], 0
    for value in parsed:  # the first bad part, in file order, names the problem
        if value[0] == "row":
            raise VotebenchError(f"{src}: line {before + value[1] + 2}: {value[2]}")
        if value[0] == "error":
            raise VotebenchError(value[1].replace(str(where), str(src), 1))
        row0.append(before)
        before += int(value[0])
    if before == 0:
        raise VotebenchError(f"{src}: no score rows")
    merged: dict[str, dict[str, int]] = {name: {} for name in parsed[0][1]}
    codes = []
    for _, labels in parsed:
        part = {}
        for name, values in labels.items():
            index = merged[name]
            part[{"system": "s", "task": "t", "instance": "k"}[name]] = np.fromiter(
                (index.setdefault(v, len(index)) for v in values), dtype=np.int32, count=len(values))
        codes.append(part)
    return before, {name: list(index) for name, index in merged.items()}, row0, codes


def _run(client: Any, fn: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[Any]:
    """``[fn(*args) for args in calls]`` as tasks of ``client``'s cluster, the results in order, every task ended
    (the temporary files are removed afterwards).  A task's :class:`VotebenchError` is raised here (the first in
    order); a lost scheduler or worker pool is :class:`ClusterLost`."""
    from distributed import wait

    from engine.distributed.client import run_task, task_result

    futures = [client.submit(run_task, fn, *args, pure=False) for args in calls]
    values: list[Any] = []
    try:
        for fut in futures:
            values.append(fut.result())
    except BaseException as exc:  # noqa: BLE001 - a lost cluster shows as cancelled futures (a BaseException)
        why = lost_cluster(client, exc, fix="workers with more memory")
        if why is None:
            wait(futures)  # a failure of ours: the other tasks end before the temporary files go
            raise
        raise ClusterLost(f"{why} after {len(values)} of {len(futures)} tasks of convert; nothing was written: run the "
                          "same command again") from None
    finally:
        client.cancel(futures)
    return [task_result(v) for v in values]
