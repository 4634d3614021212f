"""``votebench convert``: a long score table streamed into a zarr store with bounded memory.

Reading a long CSV (``system, task, [instance,] score``) into memory costs a
few hundred bytes per row (pandas strings, the factorized labels, the padded
tensor), so 1e8 rows do not fit.  :func:`convert` never holds more than a block
of rows:

1. the CSV (``.csv`` or ``.csv.gz``) is parsed by pyarrow's streaming reader in
   blocks; labels get integer codes in order of first appearance (as the table
   reader gives them) and every row goes to a temporary binary file as
   ``(task, instance, system, score)`` (20 bytes);
2. once the sizes are known, the rows are sorted into one file per *slab*: a
   run of whole store chunks of at most :data:`SLAB_CELLS` cells;
3. each slab is filled in memory, checked (duplicate entries, tasks without
   scores) and written to its chunks of the store.

The store is built under a temporary name and renamed into place when
complete; it is the store :func:`engine.to_zarr` writes for the same scores
(same labels, order, directions, groups, attributes and default chunks), and
the sidecar (``<name>.meta.json`` beside the input, or ``meta``) is carried
into it.  Every other input (wide CSV, Parquet, JSONL, evaluation outputs) is
read in memory by :func:`engine.open_scores` and written by
:func:`engine.to_zarr`.

Bad input gives the one-line errors of the table reader (line numbers count
the header as line 1 and skip blank lines, as there).  A quoted value holding a
line break is not supported here (the streaming parser splits lines first).
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import INSTANCE, LAYOUT, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.io.files import make_temp_dir, publish_dir
from engine.io.readers import default_sidecar, open_scores
from engine.io.readers.common import reading_text
from engine.io.readers.tables import MISSING_TOKENS, instance_labels, is_long_header
from engine.io.store import default_chunks, store_dataset, to_zarr
from engine.labelled.canonical import apply_sidecar, read_sidecar, sidecar_path

__all__ = ["BLOCK_BYTES", "SLAB_CELLS", "SLAB_ROW", "RowError", "check_filled", "check_target", "convert", "duplicate_message",
           "publish_counts", "remove_work", "slab_totals", "start_store",
           "fill_rows", "in_memory", "long_header", "parse_range", "read_rows", "skeleton", "slabs_of", "sort_rows"]

#: bytes of CSV text parsed per block
BLOCK_BYTES = 1 << 24
#: cells (float64, plus a bool each) of the store filled in memory at a time
SLAB_CELLS = 1 << 24
#: rows read from a temporary file at a time
_READ_ROWS = 1 << 21
_ROW = np.dtype([("t", "<i4"), ("k", "<i4"), ("s", "<i4"), ("v", "<f8")])
_SLAB_ROW = np.dtype([("t", "<i4"), ("k", "<i4"), ("s", "<i4"), ("v", "<f8"), ("row", "<i8")])
#: a row sorted into its slab: codes, score and the row's position in the input (0-based, blank lines skipped)
SLAB_ROW = _SLAB_ROW


class RowError(VotebenchError):
    """Bad input on one data row: ``line`` counts as the message does (for a part of the input: from its start)."""

    def __init__(self, source: Path, line: int, detail: str) -> None:
        super().__init__(f"{source}: line {line}: {detail}")
        self.source, self.line, self.detail = source, line, detail


def convert(
    source: str | os.PathLike[str],
    store: str | os.PathLike[str],
    *,
    meta: str | os.PathLike[str] | Mapping[str, Any] | bool | None = None,
    overwrite: bool = False,
    chunks: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Write the scores of ``source`` to the zarr store ``store``, streaming a long CSV.

    Parameters
    ----------
    source : path-like
        A long CSV (``.csv``/``.csv.gz``, columns ``system, task, [instance,] score``), streamed;
        any other input of :func:`engine.open_scores` is read in memory.
    store : path-like
        The store to write (a folder).
    meta : path, mapping or bool, optional
        The sidecar, as for :func:`engine.open_scores` (default: ``<name>.meta.json`` beside ``source``).
    overwrite : bool
        Replace an existing store (only a zarr store is replaced).
    chunks : mapping, optional
        Chunk sizes for ``task`` and ``instance``, as for :func:`engine.to_zarr` (default: :func:`engine.io.store.default_chunks`).

    Returns
    -------
    dict
        ``store`` (path), ``streamed`` (bool), ``rows``, ``systems``, ``tasks``, ``instances``,
        ``missing`` (missing scores inside judged cells) and ``chunks`` (task, instance).

    Raises
    ------
    VotebenchError
        For bad input (as the table reader), or a target that exists (without ``overwrite``) or is not a zarr store.
    """
    src, target = Path(source), Path(store)
    check_target(src, target, overwrite)
    header = long_header(src)
    if header is None:  # not a long CSV: read in memory, then write
        return in_memory(src, target, meta=meta, overwrite=overwrite, chunks=chunks)
    return _stream(src, target, header, meta, chunks)


def check_target(src: Path, target: Path, overwrite: bool) -> None:
    """Refuse a missing input, an existing target (without ``overwrite``, or not a zarr store) and a target that is the input."""
    if not src.exists():
        raise VotebenchError(f"{src}: no such file or directory")
    if target.exists():
        if not overwrite:
            raise VotebenchError(f"{target}: already exists (pass --overwrite to replace it)")
        if not target.is_dir() or (any(target.iterdir()) and not (target / "zarr.json").is_file()):
            raise VotebenchError(f"{target}: exists and is not a zarr store; --overwrite only replaces zarr stores")
    if src.resolve() == target.resolve():
        raise VotebenchError(f"{target}: the store cannot replace its own input")


def in_memory(src: Path, target: Path, *, meta: Any, overwrite: bool, chunks: Mapping[str, int] | None) -> dict[str, Any]:
    """An input that is not a long CSV: read in memory by :func:`engine.open_scores`, written by :func:`engine.to_zarr`."""
    scores = open_scores(src, meta=meta)
    to_zarr(scores, target, overwrite=overwrite, chunks=chunks)
    return {"store": target, "streamed": False, "rows": None, "systems": scores.sizes[SYSTEM],
            "tasks": scores.sizes[TASK], "instances": scores.sizes[INSTANCE], "missing": None,
            "chunks": _chunks_of(target)}


def _chunks_of(store: Path) -> tuple[int, int]:
    import zarr

    arr = zarr.open_array(str(store), path="scores", mode="r", zarr_format=3)
    return int(arr.chunks[0]), int(arr.chunks[1])


def long_header(path: Path) -> list[str] | None:
    """The header of a long CSV, else None (not a CSV, or a wide one)."""
    name = path.name.lower()
    if path.is_dir() or not name.endswith((".csv", ".csv.gz")):
        return None
    with reading_text(path):
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            first = fh.readline()
    if "\x00" in first:
        raise VotebenchError(f"{path}: not a text CSV file (contains NUL bytes)")
    try:
        header = next(csv.reader(io.StringIO(first)), [])
    except csv.Error as exc:
        raise VotebenchError(f"{path}: malformed CSV header ({exc})") from None
    if not header:
        raise VotebenchError(f"{path}: empty file")
    return [h.strip() for h in header] if is_long_header(header) else None


class _Labels:
    """Integer codes of labels in order of first appearance (the table reader's order)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.codes: dict[str, int] = {}

    def encode(self, column: Any, first_line: int, source: Path) -> np.ndarray:
        import pyarrow.compute as pc

        enc = pc.dictionary_encode(pc.utf8_trim_whitespace(column))
        values = enc.dictionary.to_pylist()
        idx = enc.indices.to_numpy(zero_copy_only=False)
        bad = [i for i, v in enumerate(values) if v == "" or v.lower() == "nan"]
        if bad:
            row = int(np.flatnonzero(np.isin(idx, bad))[0])
            raise RowError(source, first_line + row, f"empty {self.what} name")
        lut = np.fromiter((self.codes.setdefault(v, len(self.codes)) for v in values), dtype=np.int64, count=len(values))
        return lut[idx]

    def labels(self) -> list[str]:
        return list(self.codes)


def _scores(column: Any, first_line: int, source: Path) -> np.ndarray:
    """Score strings to float64: the missing tokens are NaN, anything else must be a finite number (table reader rules)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.utf8_trim_whitespace(column)
    missing = pc.is_in(pc.utf8_lower(text), value_set=pa.array(sorted(MISSING_TOKENS)))
    try:
        vals = pc.cast(pc.if_else(missing, "nan", text), pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        miss = missing.to_numpy(zero_copy_only=False)
        for i, v in enumerate(text.to_pylist()):
            if miss[i]:
                continue
            try:
                float(v)
            except ValueError:
                raise RowError(source, first_line + i, f"score value {v!r} is not a number") from None
        raise VotebenchError(f"{source}: malformed score column") from None  # pragma: no cover - arrow and Python disagree
    inf = np.isinf(vals)
    if inf.any():
        i = int(np.argmax(inf))
        raise RowError(source, first_line + i, f"score value {column[i].as_py()!r} is not a finite number")
    return vals


def _batches(path: Path, header: list[str], data: Any = None) -> Iterator[Any]:
    """Blocks of the CSV ``path`` as string columns; ``data``: the bytes of a part of it (no header) read instead."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read = pacsv.ReadOptions(block_size=BLOCK_BYTES, skip_rows=1 if data is None else 0,
                             column_names=[f"c{i}" for i in range(len(header))])
    convert = pacsv.ConvertOptions(column_types={f"c{i}": pa.string() for i in range(len(header))},
                                   strings_can_be_null=False, quoted_strings_can_be_null=False)
    try:
        reader = pacsv.open_csv(str(path) if data is None else pa.BufferReader(data), read_options=read,
                                convert_options=convert)
        yield from reader
    except (pa.ArrowInvalid, OSError, EOFError) as exc:
        msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "utf8" in msg.lower() or "utf-8" in msg.lower():
            raise VotebenchError(f"{path}: not a UTF-8 text file") from None
        if isinstance(exc, OSError | EOFError) and not isinstance(exc, pa.ArrowInvalid):
            raise VotebenchError(f"{path}: cannot read file ({msg})") from None
        raise VotebenchError(f"{path}: malformed CSV ({msg})") from None


def slabs_of(T: int, K: int, S: int, tc: int, ic: int, cells: int | None = None) -> list[tuple[int, int, int, int]]:
    """Regions ``(t0, t1, k0, k1)`` made of whole chunks ``(tc, ic, S)``, each at most ``cells`` cells (default
    :data:`SLAB_CELLS`; at least one chunk)."""
    cells = SLAB_CELLS if cells is None else cells
    if ic < K:  # one task per chunk, instances split
        per = max(1, cells // (ic * S)) * ic
        return [(t, t + 1, k, min(K, k + per)) for t in range(T) for k in range(0, K, per)]
    per = max(1, cells // (tc * K * S)) * tc
    return [(t, min(T, t + per), 0, K) for t in range(0, T, per)]


def read_rows(path: Path, dtype: np.dtype, start: int = 0, stop: int | None = None) -> Iterator[np.ndarray]:
    """The records of ``dtype`` in the binary file ``path`` (from record ``start`` to ``stop``), a bounded number at a time."""
    with open(path, "rb") as fh:
        fh.seek(start * dtype.itemsize)
        left = None if stop is None else stop - start
        while left is None or left > 0:
            rows = np.fromfile(fh, dtype=dtype, count=_READ_ROWS if left is None else min(_READ_ROWS, left))
            if rows.size == 0:
                return
            if left is not None:
                left -= rows.size
            yield rows


def _stream(src: Path, target: Path, header: list[str], meta: Any, chunks: Mapping[str, int] | None) -> dict[str, Any]:
    import zarr

    target.parent.mkdir(parents=True, exist_ok=True)
    work = make_temp_dir(target)
    build = None
    try:
        # 1. parse: codes and scores of every row to one binary file
        rows_file = work / "rows.bin"
        n_rows, labels = parse_range(src, header, rows_file)
        if n_rows == 0:
            raise VotebenchError(f"{src}: no score rows")
        build, (S, T, K), (tc, ic), tasks = start_store(src, labels, meta, chunks, target)
        # 2. rows to one file per slab
        slabs = slabs_of(T, K, S, tc, ic)
        slab_files = _split_rows(rows_file, slabs, work, K)
        # 3. fill, check and write every slab
        scores = zarr.open_array(str(build), path="scores", mode="r+", zarr_format=3)
        n_inst, n_missing = _fill_slabs(scores, slabs, slab_files, S, src, header, tasks)
        publish_counts(build, target, n_inst, T, K)
        build = None
    finally:
        remove_work(work, build)
    return {"store": target, "streamed": True, "rows": n_rows, "systems": S, "tasks": T, "instances": K,
            "missing": n_missing, "chunks": (int(tc), int(ic))}


def start_store(src: Path, labels: dict[str, list[str]], meta: Any, chunks: Any, target: Path
                ) -> tuple[Path, tuple[int, int, int], tuple[int, int], list[str]]:
    """The store's skeleton (labels, directions and groups from the sidecar, attributes; no scores yet) written
    into a temporary folder beside ``target``: that folder, the sizes ``(S, T, K)``, the (task, instance) chunk
    and the task labels.  Refuses fewer than two systems."""
    systems, tasks = labels["system"], labels["task"]
    insts = instance_labels(labels["instance"]) if "instance" in labels else np.array([0])
    S, T, K = len(systems), len(tasks), len(insts)
    if S < 2:
        raise VotebenchError(f"{src}: ranking needs at least two systems, found {S} ({', '.join(systems)})")
    ds = skeleton(src, systems, tasks, insts, meta, chunks)
    tc, ic = ds["scores"].data.chunksize[:2]
    build = make_temp_dir(target.absolute())  # absolute: workers of a cluster may run in another folder
    ds.to_zarr(build, mode="w", zarr_format=3, consolidated=False, compute=False)
    return build, (S, T, K), (int(tc), int(ic)), tasks


def publish_counts(build: Path, target: Path, n_inst: np.ndarray, T: int, K: int) -> None:
    """Write the instances per task into the store built at ``build`` and rename it into place as ``target``."""
    import zarr

    counts = zarr.open_array(str(build), path="n_instances", mode="r+", zarr_format=3)
    counts[...] = n_inst if K > 1 else np.ones(T, np.int64)
    publish_dir(build, target)


def remove_work(work: Path, build: Path | None) -> None:
    """Remove the conversion's work folder and, unless it was published (``None``), the half-built store."""
    shutil.rmtree(work, ignore_errors=True)
    if build is not None:
        shutil.rmtree(build, ignore_errors=True)


def parse_range(src: Path, header: list[str], rows_file: Path, span: tuple[int, int] | None = None
                ) -> tuple[int, dict[str, list[str]]]:
    """Write ``(task, instance, system, score)`` of every row of ``src`` to ``rows_file``; the row count and the labels.

    The codes index the labels, which are in order of first appearance.  ``span``: only the bytes ``[start, stop)``
    of ``src`` (whole lines after the header; a part of a plain CSV), its rows counted from 0 in a :class:`RowError`
    (else from line 2, as the table reader counts).
    """
    cols = {h.lower(): i for i, h in enumerate(header)}
    labels: dict[str, _Labels] = {name: _Labels(name) for name in ("system", "task", "instance") if name in cols}
    data = None
    if span is not None:
        with open(src, "rb") as fh:
            fh.seek(span[0])
            data = fh.read(span[1] - span[0])
    n_rows = 0
    with open(rows_file, "wb") as out:
        for batch in _batches(src, header, data):
            n = batch.num_rows
            if n == 0:
                continue
            first = n_rows + (2 if span is None else 0)
            rec = np.empty(n, dtype=_ROW)
            rec["s"] = labels["system"].encode(batch.column(cols["system"]), first, src)
            rec["t"] = labels["task"].encode(batch.column(cols["task"]), first, src)
            rec["k"] = labels["instance"].encode(batch.column(cols["instance"]), first, src) if "instance" in cols else 0
            rec["v"] = _scores(batch.column(cols["score"]), first, src)
            rec.tofile(out)
            n_rows += n
    return n_rows, {name: lab.labels() for name, lab in labels.items()}


def skeleton(src: Path, systems: list[str], tasks: list[str], insts: np.ndarray, meta: Any,
             chunks: Mapping[str, int] | None) -> xr.Dataset:
    """The Dataset of the store (as :func:`engine.io.store.store_dataset`), its scores a never-computed placeholder."""
    import dask.array as dsa

    S, T, K = len(systems), len(tasks), len(insts)
    lazy = xr.DataArray(
        dsa.full((T, K, S), np.nan, chunks=-1, dtype=np.float64), dims=LAYOUT,  # never computed
        coords={SYSTEM: np.array(systems, dtype=object), TASK: np.array(tasks, dtype=object), INSTANCE: insts,
                "higher_is_better": (TASK, np.ones(T, dtype=bool)), "group": (TASK, np.array(tasks, dtype=object)),
                "n_instances": (TASK, np.zeros(T, dtype=np.int64))},
        name="scores", attrs={"name": sidecar_path(src).name[: -len(".meta.json")]})
    if meta is None:
        meta = default_sidecar(src) or False
    if meta is not False:
        lazy = apply_sidecar(lazy, meta if isinstance(meta, Mapping) else read_sidecar(meta), str(src))
    lazy.attrs["source_file"] = str(src)
    return store_dataset(lazy, chunks=default_chunks(lazy) if chunks is None else chunks)


def _split_rows(rows_file: Path, slabs: list[tuple[int, int, int, int]], work: Path, K: int) -> list[Path]:
    """Sort the rows of ``rows_file`` into one file per slab (each row with its position in the input); delete ``rows_file``."""
    slab_files = [work / f"slab{i}.bin" for i in range(len(slabs))]
    handles = [open(f, "wb") for f in slab_files]  # noqa: SIM115 - closed below
    try:
        row0 = 0
        for rows in read_rows(rows_file, _ROW):
            out, bounds = _by_slab(rows, slabs, K, row0)
            for i in np.flatnonzero(np.diff(bounds)):
                out[bounds[i]:bounds[i + 1]].tofile(handles[i])
            row0 += rows.size
    finally:
        for h in handles:
            h.close()
    rows_file.unlink()
    return slab_files


def _by_slab(rows: np.ndarray, slabs: list[tuple[int, int, int, int]], K: int, row0: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` as :data:`SLAB_ROW` records sorted by slab (stable), positions from ``row0``; where each slab starts."""
    t_per, k_per = slabs[0][1] - slabs[0][0], slabs[0][3] - slabs[0][2]
    if k_per < K:  # one task per slab, instances split
        sid = rows["t"].astype(np.int64) * len(range(0, K, k_per)) + rows["k"] // k_per
    else:
        sid = rows["t"] // t_per
    order = np.argsort(sid, kind="stable")
    out = np.empty(rows.size, dtype=_SLAB_ROW)
    for f in ("t", "k", "s", "v"):
        out[f] = rows[f][order]
    out["row"] = row0 + order
    return out, np.searchsorted(sid[order], np.arange(len(slabs) + 1))


def sort_rows(rows_file: Path, out_file: Path, slabs: list[tuple[int, int, int, int]], K: int, row0: int,
              codes: Mapping[str, np.ndarray]) -> np.ndarray:
    """One part of the input (its rows held in memory): its codes mapped to the store's (``codes``: ``{"s"|"t"|"k":
    array}``), the rows sorted by slab into ``out_file`` as :data:`SLAB_ROW` records (positions from ``row0``);
    ``rows_file`` deleted.  Returns where each slab's rows start in ``out_file`` (``len(slabs) + 1`` offsets)."""
    rows = np.fromfile(rows_file, dtype=_ROW)
    for f, lut in codes.items():
        rows[f] = lut[rows[f]]
    out, bounds = _by_slab(rows, slabs, K, row0)
    out.tofile(out_file)
    rows_file.unlink()
    return bounds


def fill_rows(arr: Any, slab: tuple[int, int, int, int], batches: Iterator[np.ndarray], S: int
              ) -> tuple[np.ndarray, np.ndarray, int, int | None]:
    """Fill one slab from its rows (:data:`SLAB_ROW` batches, in input order), check it and write it to ``arr``.

    Returns the judged instances and whether any per task of the slab (``t1 - t0`` each), the missing scores inside
    judged cells, and the first duplicate row (its position in the input; ``None`` without duplicates).
    """
    t0, t1, k0, k1 = slab
    block = np.full((t1 - t0, k1 - k0, S), np.nan)
    seen = np.zeros(block.shape, dtype=bool)
    flat_b, flat_s = block.reshape(-1), seen.reshape(-1)
    first_dup: int | None = None
    for rows in batches:
        flat = np.ravel_multi_index((rows["t"] - t0, rows["k"] - k0, rows["s"]), block.shape)
        order = np.argsort(flat, kind="stable")
        again = np.flatnonzero(flat[order][1:] == flat[order][:-1]) + 1
        dups = np.concatenate([rows["row"][order[again]], rows["row"][flat_s[flat]]])
        if dups.size:
            first_dup = int(dups.min()) if first_dup is None else min(first_dup, int(dups.min()))
        flat_s[flat] = True
        flat_b[flat] = rows["v"]
    judged = ~np.isnan(block).all(axis=-1)
    arr[t0:t1, k0:k1, :] = block
    return judged.sum(axis=1), judged.any(axis=1), int((np.isnan(block) & judged[..., None]).sum()), first_dup


def _fill_slabs(arr: Any, slabs: list[tuple[int, int, int, int]], slab_files: list[Path], S: int, src: Path,
                header: list[str], tasks: list[str]) -> tuple[np.ndarray, int]:
    """Fill every slab from its file, check it and write it to ``arr``; the instances of each task and the missing scores."""
    filled = []
    for slab, f in zip(slabs, slab_files):
        filled.append(fill_rows(arr, slab, read_rows(f, _SLAB_ROW), S))
        f.unlink()
    return slab_totals(src, header, tasks, slabs, filled)


def slab_totals(src: Path, header: list[str], tasks: list[str], slabs: list[tuple[int, int, int, int]],
                filled: list[Any]) -> tuple[np.ndarray, int]:
    """The judged instances per task and the missing scores, from every slab's ``fill_rows`` counts (in slab
    order); a duplicate or a task without scores refused (:func:`check_filled`)."""
    n_inst = np.zeros(len(tasks), dtype=np.int64)
    has = np.zeros(len(tasks), dtype=bool)
    n_missing, dups = 0, []
    for (t0, t1, _, _), (counted, any_judged, missing, dup) in zip(slabs, filled):
        n_inst[t0:t1] += counted
        has[t0:t1] |= any_judged
        n_missing += missing
        dups += [] if dup is None else [dup]
    check_filled(src, header, tasks, has, min(dups) if dups else None)
    return n_inst, n_missing


def check_filled(src: Path, header: list[str], tasks: list[str], has: np.ndarray, first_dup: int | None) -> None:
    """Refuse a duplicate entry (the first, by its position in the input) or a task without any score."""
    if first_dup is not None:
        raise VotebenchError(duplicate_message(src, header, first_dup))
    if not has.all():
        bad = [tasks[i] for i in np.flatnonzero(~has)]
        raise VotebenchError(f"{src}: task {bad[0]!r} has no scores" + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))


def duplicate_message(src: Path, header: list[str], row: int) -> str:
    """The table reader's message for the duplicate on data row ``row`` (0-based): re-read that one row's labels."""
    cols = {h.lower(): i for i, h in enumerate(header)}
    opener = gzip.open if src.name.lower().endswith(".gz") else open
    with reading_text(src), opener(src, "rt", encoding="utf-8-sig", newline="") as fh:
        lines = (ln for ln in itertools.islice(fh, 1, None) if ln.strip())
        text = next(itertools.islice(lines, row, None), "")
    fields = [v.strip() for v in next(csv.reader(io.StringIO(text)), [])]
    if len(fields) != len(header):  # pragma: no cover - the parser accepted the row
        return f"{src}: line {row + 2}: duplicate entry"
    inst = fields[cols["instance"]] if "instance" in cols else "0"
    return (f"{src}: line {row + 2}: duplicate entry for system {fields[cols['system']]!r}, task {fields[cols['task']]!r}, "
            f"instance {inst!r}")
