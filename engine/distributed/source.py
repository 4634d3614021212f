"""The input a task reads: :class:`Source` (path or URL, loader options, checksums of the input and its sidecar).

Tasks carry a ``Source``, never the scores: the worker process running a task
opens the input itself, once (:func:`engine.distributed.cache.load_source`),
and checks that it reads the same bytes -- input and sidecar -- the client
planned on (:func:`input_checksum`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import xarray as xr

from engine.errors import VotebenchError
from engine.labelled.canonical import is_url

__all__ = ["LOADER_KEYS", "loader_keys", "Source", "input_checksum", "make_source", "open_input", "open_source", "sidecar_of"]

#: options of :func:`engine.open_scores` for evaluation outputs (lm-evaluation-harness, HELM, JSONL)
def loader_keys() -> tuple[str, ...]:
    """The loader options an input may carry: ``format`` plus every option a registered reader declares
    (:func:`engine.io.readers.loader_keys`; asked at use time, so readers registered later count)."""
    from engine.io.readers import loader_keys as registry_keys

    return tuple(registry_keys())


#: the loader options of the built-in readers (see :func:`loader_keys` for the current registry)
LOADER_KEYS = loader_keys()


@dataclass(frozen=True)
class Source:
    """Where a worker finds an input: a path or fsspec URL it can reach, the loader options and the checksum.

    Tasks carry a ``Source``, never the scores: every worker process opens
    the input itself (once, see :func:`load_source`) and checks that it reads
    the same bytes the sweep was planned on.
    """

    path: str
    meta: str | None = None
    lower_is_better: tuple[str, ...] = ()
    checksum: str | None = None
    loader: tuple[tuple[str, Any], ...] = ()  # open_scores options (format, metric, ...), hashable
    #: sha256 of the sidecar read with the input (``meta``, else ``<name>.meta.json`` beside it); None: no sidecar
    meta_checksum: str | None = None

    def loader_options(self) -> dict[str, Any]:
        """The :func:`engine.open_scores` keyword options of this source (a per-task mapping comes back as a dict)."""
        return {k: dict(v) if isinstance(v, tuple) else v for k, v in self.loader}


def make_source(
    path: str | os.PathLike[str],
    *,
    base: str | os.PathLike[str] = ".",
    meta: str | os.PathLike[str] | None = None,
    lower_is_better: Sequence[str] = (),
    loader: Mapping[str, Any] | None = None,
) -> Source:
    """A :class:`Source` for ``path``: a relative local path is looked up from the working directory, then ``base``.

    ``loader`` holds :func:`engine.open_scores` options for evaluation outputs
    (``format``, ``metric``, ``filter``, ``split``, ``perturbation``; ``None`` values are dropped).

    Local paths are made absolute (workers need not share the client's
    working directory, but they must see the same file system path).
    """

    def local(p: str | os.PathLike[str]) -> str:
        if is_url(p):
            return str(p)
        q = Path(p)
        if not q.is_absolute() and not q.exists():
            q = Path(base) / q
        return str(q.absolute())

    opts = {k: v for k, v in (loader or {}).items() if v is not None}
    known = loader_keys()
    unknown = sorted(set(opts) - set(known))
    if unknown:
        raise VotebenchError(f"unknown loader option(s) {', '.join(unknown)}; known: {', '.join(known)}")
    items = tuple(sorted((k, tuple(sorted(v.items())) if isinstance(v, Mapping) else v) for k, v in opts.items()))
    return Source(path=local(path), meta=None if meta is None else local(meta),
                  lower_is_better=tuple(str(t) for t in lower_is_better), loader=items)


def _digest(is_dir: bool, files: Callable[[], Iterator[tuple[str, Callable[[], bytes]]]],
            stream: Callable[[], Any]) -> str:
    """sha256 of a folder (``files``: relative name and a reader per file, in order) or of one file (``stream``)."""
    h = hashlib.sha256()
    if is_dir:
        for name, read in files():
            h.update(name.encode())
            h.update(read())
    else:
        with stream() as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def input_checksum(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, or of every file of a folder or zarr store (relative names and contents, sorted).

    ``path`` may be an fsspec URL; a folder then hashes like the same folder on a local disk.
    """
    if not is_url(path):
        p = Path(path)

        def local_files() -> Iterator[tuple[str, Callable[[], bytes]]]:
            for f in sorted(p.rglob("*")):
                if f.is_file():
                    yield str(f.relative_to(p)), f.read_bytes

        from engine.io.readers.common import input_bytes

        held = None if p.is_dir() else input_bytes(p)  # the bytes the reader parses: the file is read once
        if held is not None:
            return hashlib.sha256(held).hexdigest()
        return _digest(p.is_dir(), local_files, lambda: p.open("rb"))
    import fsspec

    fs, root = fsspec.core.url_to_fs(str(path))
    root = root.rstrip("/")

    def files() -> Iterator[tuple[str, Callable[[], bytes]]]:
        for r in sorted(Path(f[len(root) + 1 :]) for f in fs.find(root)):  # files only
            yield str(r), partial(fs.cat_file, f"{root}/{r.as_posix()}")

    return _digest(fs.isdir(root), files, lambda: fs.open(root, "rb"))


def sidecar_of(src: Source) -> str | None:
    """The sidecar read with ``src``: its ``meta``, else the ``<name>.meta.json`` beside a local input (None: none)."""
    if src.meta is not None:
        return src.meta
    if is_url(src.path):
        return None
    from engine.io.readers import default_sidecar

    sc = default_sidecar(src.path)
    return None if sc is None else str(sc)


def open_source(src: Source) -> xr.DataArray:
    """Open ``src`` (no cache, no checksum): :func:`engine.open_scores` for a local path, the zarr store for a URL."""
    from engine.io.readers import open_scores
    from engine.labelled.canonical import apply_sidecar, read_sidecar, with_lower_is_better

    if is_url(src.path):
        from engine.io.store import open_store

        scores = open_store(src.path)
        if src.meta is not None:
            scores = apply_sidecar(scores, read_sidecar(src.meta), src.path)
        scores.attrs["source_file"] = src.path
    else:
        scores = open_scores(src.path, meta=src.meta, **src.loader_options())
    return with_lower_is_better(scores, src.lower_is_better)


def open_input(path: str | os.PathLike[str], *, meta: str | os.PathLike[str] | None = None,
               lower_is_better: Sequence[str] = (), loader: Mapping[str, Any] | None = None) -> xr.DataArray:
    """The scores of an input read in this process, as a worker reads its :class:`Source`.

    A local path is opened as given (so that messages and ``source_file`` name it as the user wrote it);
    a URL (a zarr store) through :func:`make_source` and :func:`open_source`.  ``loader``: the
    :func:`engine.open_scores` options (``None`` values are dropped).
    """
    if is_url(path):
        return open_source(make_source(path, meta=meta, lower_is_better=lower_is_better, loader=loader))
    from engine.io.readers import open_scores
    from engine.labelled.canonical import with_lower_is_better

    opts = {k: v for k, v in (loader or {}).items() if v is not None}
    return with_lower_is_better(open_scores(path, meta=meta, **opts), lower_is_better)
