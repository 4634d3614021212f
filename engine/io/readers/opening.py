"""``open_scores``: pick a reader from the registry, read, apply the sidecar, validate."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import xarray as xr

from engine.errors import VotebenchError
from engine.io.readers.registry import READERS, Reader, check_options, get_reader, guess_reader
from engine.labelled.canonical import apply_sidecar, read_sidecar, sidecar_path, validate_scores
from engine.progress import stage

__all__ = ["KIND_HINTS", "default_sidecar", "open_scores"]

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
    with stage("reading"):
        scores = reader.open(p, **check_options(reader, options, str(p)))
    if not isinstance(scores, xr.DataArray):
        raise VotebenchError(f"{p}: reader {reader.name!r} returned {type(scores).__name__}, not an xarray.DataArray")
    if not reader.carries_metadata:
        scores.attrs.setdefault("name", sidecar_path(p).name[: -len(".meta.json")])
    sidecar = _sidecar(p, meta, reader)
    if sidecar is not None:
        scores = apply_sidecar(scores, sidecar, str(p), keep_unnamed=reader.keeps_own_directions)
    scores.attrs["source_file"] = str(p)
    validate_scores(scores, source=str(p))
    return scores
