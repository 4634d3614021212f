"""The ``battles`` reader: pairwise battle records, compressed to per-pair counts in one bounded pass.

A battles file holds one record per comparison of two models, with the columns ``model_a``,
``model_b`` and ``winner`` (``model_a``, ``model_b`` or ``tie``; Arena's ``tie (bothbad)`` and
``draw`` are ties) and any other columns (``judge``, ``category``, ...), which are not read.  It is a
CSV (``.csv``, ``.tsv``, optionally ``.gz``), JSON Lines (``.jsonl``, ``.jsonl.gz``) or Parquet
(``.parquet``, ``.pq``) file; the registry recognises it by these three column names in its header.

It is an input of another *kind* than a score table (``Reader.kind == "battles"``): it has no score
tensor, and :func:`engine.open_scores` refuses it with a message naming the rules that apply.
:func:`open_battles` reads it in chunks of ``chunk_rows`` records (the string columns
dictionary-encoded by Arrow), so memory does not grow with the number of battles; the result holds
the counts :class:`~engine.kernels.battles.BattleCounts` only.  :func:`iter_battle_chunks` gives the
records themselves, chunk by chunk in file order (online Elo uses them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import VotebenchError
from engine.io.readers.common import BATTLE_COLUMNS, battle_file_format, file_header, is_battles_file
from engine.kernels.battles import WINNERS, BattleCounts, battle_counts, outcome_code

__all__ = ["BATTLE_COLUMNS", "BattleInput", "Battles", "iter_battle_chunks", "is_battles_file", "open_battles",
           "open_battles_reader", "read_battles"]

#: records read at once from Parquet (three int32 codes each, plus Arrow's buffers); text is read in blocks of 1 MiB
CHUNK_ROWS = 1 << 20


@dataclass(frozen=True)
class BattleInput:
    """A battles file compressed to per-pair counts (what :func:`open_battles` returns).

    Attributes
    ----------
    source : str
        The file read.
    models : tuple of str
        Model names in the engine's canonical (label) order; they index ``counts``.
    counts : engine.kernels.battles.BattleCounts
        ``wins[i, j]`` and ``ties[i, j]`` summed over all records.
    n_records : int
        Battle records read.

    Examples
    --------
    >>> import engine, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "battles.csv"
    >>> _ = path.write_text("model_a,model_b,winner\\nx,y,model_a\\nx,z,model_a\\ny,z,model_b\\nx,y,tie\\n")
    >>> battles = engine.open_battles(path)
    >>> battles.models, battles.n_records, battles.counts.wins.tolist()
    (('x', 'y', 'z'), 4, [[0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    """

    source: str
    models: tuple[str, ...]
    counts: BattleCounts
    n_records: int

    @property
    def name(self) -> str:
        """The file's name without its suffixes (``battles_tac08``)."""
        return Path(self.source).name.split(".")[0]


def iter_battle_chunks(path: str | os.PathLike[str], *, chunk_rows: int = CHUNK_ROWS
                       ) -> Iterator[tuple[list[str], np.ndarray, np.ndarray, np.ndarray]]:
    """The records of a battles file, chunk by chunk in file order, with model codes in order of first appearance.

    Parameters
    ----------
    path : path-like
    chunk_rows : int
        Records per chunk (about; Arrow's CSV blocks are cut by bytes).

    Yields
    ------
    models, a, b, outcome
        ``models``: every model name seen so far (the list grows; a code indexes it), ``a``/``b``: int32
        codes of ``model_a``/``model_b`` of the chunk's records, ``outcome``: int8
        (:data:`~engine.kernels.battles.A_WINS`, ``B_WINS``, ``TIE``).

    Raises
    ------
    VotebenchError
        A missing column, an empty model or winner, an unknown winner, a battle of a model against
        itself, or an unreadable file: one line naming the file and the problem (and the record for a
        bad value).
    """
    p = Path(path)
    fmt = battle_file_format(p)
    if fmt is None:
        raise VotebenchError(f"{p}: not a battles file (expected .csv, .tsv, .jsonl or .parquet, optionally .gz)")
    codes: dict[str, int] = {}
    models: list[str] = []
    seen = 0
    try:
        for cols in _arrow_batches(p, fmt, max(1, int(chunk_rows))):
            n = len(cols[0])
            out = []
            for name, col in zip(BATTLE_COLUMNS, cols):
                if col.null_count:
                    row = seen + int(np.flatnonzero(np.asarray(col.is_null()))[0]) + 1
                    raise VotebenchError(f"{p}: record {row}: empty {name}")
                values = [str(v) for v in col.dictionary.to_pylist()]
                idx = col.indices.to_numpy(zero_copy_only=False)
                if name == "winner":
                    lookup = np.empty(len(values), dtype=np.int8)
                    for i, v in enumerate(values):
                        try:
                            lookup[i] = outcome_code(v)
                        except ValueError:
                            row = seen + int(np.flatnonzero(idx == i)[0]) + 1
                            raise VotebenchError(f"{p}: record {row}: unknown winner {v[:60]!r} (expected "
                                                 f"{', '.join(WINNERS)})") from None
                else:
                    lookup = np.empty(len(values), dtype=np.int32)
                    for i, v in enumerate(values):
                        if not v.strip():
                            row = seen + int(np.flatnonzero(idx == i)[0]) + 1
                            raise VotebenchError(f"{p}: record {row}: empty {name}")
                        if v not in codes:
                            codes[v] = len(models)
                            models.append(v)
                        lookup[i] = codes[v]
                out.append(np.take(lookup, idx))
            a, b, o = out
            same = np.flatnonzero(a == b)
            if same.size:
                raise VotebenchError(f"{p}: record {seen + int(same[0]) + 1}: a battle of {models[a[same[0]]]!r} against "
                                     "itself (model_a == model_b)")
            seen += n
            yield models, a, b, o
    except VotebenchError:
        raise
    except (OSError, EOFError) as exc:
        raise VotebenchError(f"{p}: cannot read the battles file ({_one_line(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - Arrow's parse errors (ArrowInvalid, ...) become one line
        if type(exc).__module__.startswith("pyarrow"):
            raise VotebenchError(f"{p}: not a readable {fmt} battles file ({_one_line(exc)})") from None
        raise


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _arrow_batches(p: Path, fmt: str, chunk_rows: int) -> Iterator[list[Any]]:
    """The three battle columns, dictionary-encoded, one list of Arrow arrays per batch."""
    import pyarrow as pa

    dict_type = pa.dictionary(pa.int32(), pa.string())
    cols = list(BATTLE_COLUMNS)

    def encoded(batch: Any) -> list[Any]:
        out = []
        for c in cols:
            arr = batch.column(batch.schema.get_field_index(c))
            if not pa.types.is_dictionary(arr.type):
                if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
                    arr = arr.cast(pa.string())
                arr = arr.dictionary_encode()
            out.append(arr)
        return out

    have = file_header(p, fmt)
    missing = [c for c in cols if c not in have]
    if missing:
        raise VotebenchError(f"{p}: no column {missing[0]!r} in the battles file (columns: {', '.join(have[:8]) or 'none'})")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        f = pq.ParquetFile(p, read_dictionary=cols)
        for batch in f.iter_batches(batch_size=chunk_rows, columns=cols):
            yield encoded(batch)
        return
    if fmt == "csv":
        import pyarrow.csv as pcsv

        parse = pcsv.ParseOptions(delimiter="\t" if ".tsv" in p.name.lower() else ",")
        convert = pcsv.ConvertOptions(include_columns=cols, column_types={c: dict_type for c in cols},
                                      strings_can_be_null=True)
        # ~ 30 bytes per record of text; Arrow's parsing takes some 20x a block, so blocks stay at 1 MiB at most
        # (chunks of ~35,000 records; larger blocks are not faster)
        read = pcsv.ReadOptions(block_size=max(1 << 16, min(1 << 20, 32 * chunk_rows)))
        for batch in pcsv.open_csv(p, read_options=read, parse_options=parse, convert_options=convert):
            yield encoded(batch)
        return
    yield from _jsonl_batches(p, cols, chunk_rows, encoded)


def _jsonl_batches(p: Path, cols: list[str], chunk_rows: int, encoded: Any) -> Iterator[list[Any]]:
    import pyarrow as pa
    import pyarrow.json as pjson

    if hasattr(pjson, "open_json") and not p.name.lower().endswith(".gz"):
        read = pjson.ReadOptions(block_size=max(1 << 16, min(1 << 20, 64 * chunk_rows)))
        for batch in pjson.open_json(p, read_options=read):
            yield encoded(batch)
        return
    # an older pyarrow, or gzip: the lines themselves, chunk_rows at a time
    from engine.io.readers.common import json_lines

    rows: dict[str, list[Any]] = {c: [] for c in cols}
    for lineno, obj in json_lines(p):
        for c in cols:
            if c not in obj:
                raise VotebenchError(f"{p}: line {lineno}: no {c!r}")
            v = obj[c]
            rows[c].append(None if v is None else str(v))
        if len(rows[cols[0]]) >= chunk_rows:
            yield encoded(pa.record_batch([pa.array(rows[c], pa.string()) for c in cols], names=cols))
            rows = {c: [] for c in cols}
    if rows[cols[0]]:
        yield encoded(pa.record_batch([pa.array(rows[c], pa.string()) for c in cols], names=cols))


def open_battles(path: str | os.PathLike[str], *, chunk_rows: int = CHUNK_ROWS) -> BattleInput:
    """Read a battles file into per-pair counts, in one pass of bounded memory.

    Parameters
    ----------
    path : path-like
        CSV / TSV (optionally gzipped), JSON Lines (optionally gzipped) or Parquet with the columns
        ``model_a``, ``model_b``, ``winner``.
    chunk_rows : int
        Records per chunk; memory is O(chunk_rows + models^2) whatever the number of records.

    Returns
    -------
    BattleInput
        Models in canonical (label) order and their counts.

    Raises
    ------
    VotebenchError
        See :func:`iter_battle_chunks`; also a file with no record, or with a single model.

    Examples
    --------
    >>> import engine
    >>> b = engine.open_battles("data/battles_tac08.csv.gz")  # doctest: +SKIP
    >>> len(b.models), b.n_records  # doctest: +SKIP
    (62, 181536)
    """
    from engine.kernels.ranking import label_order

    p = Path(path)
    if not p.is_file():
        raise VotebenchError(f"{p}: no such file")
    rec_w: np.ndarray = np.zeros((0, 0), dtype=np.int64)
    rec_t: np.ndarray = np.zeros((0, 0), dtype=np.int64)
    models: list[str] = []
    n = 0
    for models, a, b, o in iter_battle_chunks(p, chunk_rows=chunk_rows):
        S = len(models)
        c = battle_counts(a, b, o, n_models=S)
        if rec_w.shape[0] < S:  # new models: grow the accumulators
            grown_w = np.zeros((S, S), dtype=np.int64)
            grown_t = np.zeros((S, S), dtype=np.int64)
            k = rec_w.shape[0]
            grown_w[:k, :k], grown_t[:k, :k] = rec_w, rec_t
            rec_w, rec_t = grown_w, grown_t
        rec_w += c.battles_wins
        rec_t += c.battles_ties
        n += int(a.size)
    if n == 0:
        raise VotebenchError(f"{p}: no battle records")
    if len(models) < 2:
        raise VotebenchError(f"{p}: battles of only {len(models)} model")
    order = label_order(models)
    rec_w = rec_w[np.ix_(order, order)]
    rec_t = rec_t[np.ix_(order, order)]
    counts = BattleCounts(wins=rec_w.astype(np.float64), ties=rec_t.astype(np.float64), battles_wins=rec_w,
                          battles_ties=rec_t)
    return BattleInput(source=str(p), models=tuple(models[i] for i in order), counts=counts, n_records=n)


def open_battles_reader(path: Path) -> Any:  # Any: the registry types openers of score tensors
    """The registry's opener: :func:`open_battles` with its defaults."""
    return open_battles(path)


# ------------------------------------------------- whole-file records (for Elo's file order and weights)
@dataclass(frozen=True)
class Battles:
    """Battle records with integer-coded models, as :func:`read_battles` returns them.

    Attributes
    ----------
    models : tuple of str
        Model names in the engine's canonical order (:func:`engine.kernels.ranking.label_order`); codes index it.
    a, b : ndarray of int32, shape (n,)
        Codes of ``model_a`` and ``model_b``.
    outcome : ndarray of int8, shape (n,)
        :data:`A_WINS`, :data:`B_WINS` or :data:`TIE`, in file order (:func:`elo` depends on it).
    weights : ndarray, shape (n,), or None
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    weights: np.ndarray | None = None

    def counts(self) -> BattleCounts:
        """The compressed counts (:func:`battle_counts`)."""
        return battle_counts(self.a, self.b, self.outcome, n_models=len(self.models), weights=self.weights)


def _records_format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in ("csv", "parquet", "jsonl"):
            raise ValueError(f"unknown battles format {fmt!r}; choose csv, parquet or jsonl")
        return fmt
    name = path.name.lower()
    for suffix in (".gz", ".bz2", ".zst"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    raise ValueError(f"cannot tell the format of {path.name!r}; give format='csv', 'parquet' or 'jsonl'")


def _dictionary_chunks(col, name: str):
    """(dictionary values, numpy indices) of every chunk of a string column, dictionary-encoded."""
    import pyarrow as pa

    if not pa.types.is_dictionary(col.type):
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            col = col.cast(pa.string())
        col = col.dictionary_encode()
    for chunk in col.chunks:
        if chunk.null_count:
            raise ValueError(f"column {name!r} has {chunk.null_count} empty value(s)")
        values = chunk.dictionary.to_pylist()
        yield values, chunk.indices.to_numpy(zero_copy_only=False)


def read_battles(path, *, model_a: str = "model_a", model_b: str = "model_b", winner: str = "winner",
                 weight: str | None = None, format: str | None = None) -> Battles:
    """Read battle records from CSV (optionally compressed), Parquet or JSON Lines into integer codes.

    Only the named columns are read; the model and winner columns are read dictionary-encoded (Arrow),
    so strings are never materialised per record: memory is about 9 bytes per battle.

    Parameters
    ----------
    path : str or path-like
    model_a, model_b, winner : str
        Column names (Arena's defaults).  ``winner`` holds ``model_a``, ``model_b`` or ``tie``
        (``tie (bothbad)`` and ``draw`` are ties; see :func:`outcome_code`).
    weight : str, optional
        A column of non-negative battle weights.
    format : {"csv", "parquet", "jsonl"}, optional
        Default: from the file name.

    Returns
    -------
    Battles
        Models in canonical (label) order; records in file order.

    Raises
    ------
    engine.errors.VotebenchError
        A missing or unreadable file, a missing column, an empty value, an unknown winner, a battle of a
        model against itself, or a bad weight; one line naming the problem.
    """
    from engine.errors import VotebenchError
    from engine.kernels.ranking import label_order

    p = Path(path)
    try:
        fmt = _records_format(p, format)
        if not p.is_file():
            raise ValueError(f"no such file: {p}")
        table = _read_table(p, fmt, [model_a, model_b, winner] + ([weight] if weight else []))
        models: dict[str, int] = {}
        pieces = {}
        for col in (model_a, model_b):
            pieces[col] = list(_dictionary_chunks(table.column(col), col))
            for values, _ in pieces[col]:
                for v in values:
                    models.setdefault(v, len(models))
        names = list(models)
        order = label_order(names) if names else np.zeros(0, dtype=np.intp)
        rank = np.empty(len(names), dtype=np.int32)
        rank[order] = np.arange(len(names), dtype=np.int32)
        canon = tuple(names[i] for i in order)
        n = table.num_rows
        codes = {}
        for col in (model_a, model_b):
            out = np.empty(n, dtype=np.int32)
            pos = 0
            for values, idx in pieces[col]:
                lookup = rank[np.array([models[v] for v in values], dtype=np.int64)] if values else rank[:0]
                np.take(lookup, idx, out=out[pos : pos + idx.size])
                pos += idx.size
            codes[col] = out
        outcome = np.empty(n, dtype=np.int8)
        pos = 0
        for values, idx in _dictionary_chunks(table.column(winner), winner):
            lookup = np.array([outcome_code(v) for v in values], dtype=np.int8)
            np.take(lookup, idx, out=outcome[pos : pos + idx.size])
            pos += idx.size
        w = None
        if weight:
            w = np.asarray(table.column(weight).to_numpy(), dtype=np.float64)
            if np.isnan(w).any():
                raise ValueError(f"column {weight!r} has empty or non-numeric values")
        del table, pieces
        same = int(np.count_nonzero(codes[model_a] == codes[model_b]))
        if same:
            raise ValueError(f"{same} battle(s) of a model against itself ({model_a} == {model_b})")
        if w is not None and (not np.isfinite(w).all() or (w < 0).any()):
            raise ValueError(f"column {weight!r} must hold finite non-negative weights")
    except (ValueError, KeyError, OSError) as exc:
        raise VotebenchError(f"battles {p.name}: {_one_line(exc)}") from None
    return Battles(models=canon, a=codes[model_a], b=codes[model_b], outcome=outcome, weights=w)


def _read_table(p: Path, fmt: str, columns: list[str]):
    import pyarrow as pa

    strings = {c: pa.dictionary(pa.int32(), pa.string()) for c in columns[:3]}
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            schema = pq.read_schema(p)
            _require_columns(schema.names, columns)
            return pq.read_table(p, columns=columns, read_dictionary=columns[:3])
        if fmt == "csv":
            import pyarrow.csv as pcsv

            parse = pcsv.ParseOptions(delimiter="\t" if ".tsv" in p.name.lower() else ",")
            header = pcsv.open_csv(p, parse_options=parse, convert_options=pcsv.ConvertOptions(
                column_types={c: pa.string() for c in columns}))
            _require_columns(header.schema.names, columns)
            convert = pcsv.ConvertOptions(include_columns=columns, column_types=strings, strings_can_be_null=True)
            return pcsv.read_csv(p, parse_options=parse, convert_options=convert)
        import pyarrow.json as pjson

        table = pjson.read_json(p)
        _require_columns(table.column_names, columns)
        return table.select(columns)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowKeyError) as exc:
        raise ValueError(f"not a readable {fmt} battles file ({_one_line(exc)})") from None


def _require_columns(have: Sequence[str], need: Sequence[str]) -> None:
    missing = [c for c in need if c not in have]
    if missing:
        raise ValueError(f"no column {missing[0]!r} (columns: {', '.join(list(have)[:8])})")
