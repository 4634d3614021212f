"""The watch's ledger: what the store holds, kept inside the store (its ``votebench_watch`` attribute).

The ledger records, per ingested unit, its systems, when it was ingested and every file with its size,
modification time and SHA-256; the units refused (with the reason, so an unchanged bad output is not
read again); a log of what happened (for the page); and the last published ranking (what the next
snapshot's changes are measured from).  It is written with the score tensor in one atomic store write
(:func:`save`), or alone by an atomic rewrite of the store's ``zarr.json`` when only the log changed
(:func:`save_ledger`): the store is never half-written and never disagrees with its ledger.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import xarray as xr

from engine.errors import VotebenchError
from engine.io.files import atomic_write_text
from engine.io.store import open_store, to_zarr

__all__ = ["KEY", "LOG_KEEP", "empty_ledger", "load", "log_entry", "save", "save_ledger"]

#: the store attribute holding the ledger (a JSON text)
KEY = "votebench_watch"
#: log entries kept
LOG_KEEP = 500


def empty_ledger() -> dict[str, Any]:
    """A ledger with nothing ingested."""
    return {"version": 1, "units": {}, "rejected": {}, "log": [], "published": {}}


def log_entry(ledger: dict[str, Any], level: str, text: str, when: float) -> dict[str, Any]:
    """Append ``{"time", "level", "text"}`` to the ledger's log (the last :data:`LOG_KEEP` are kept) and return it."""
    entry = {"time": when, "level": level, "text": text}
    ledger["log"] = [*ledger["log"], entry][-LOG_KEEP:]
    return entry


def load(store: str | os.PathLike[str]) -> tuple[xr.DataArray | None, dict[str, Any]]:
    """The store's score tensor (in memory) and ledger; ``(None, empty ledger)`` when the store does not exist yet.

    Raises
    ------
    VotebenchError
        When the store exists but has no watch ledger (it was not written by ``votebench watch``) or is unreadable.
    """
    p = Path(store)
    if not p.exists():
        return None, empty_ledger()
    scores = open_store(p).load()
    text = scores.attrs.pop(KEY, None)
    if not isinstance(text, str):
        raise VotebenchError(f"{p}: a zarr store that `votebench watch` did not write (no ledger); give a new --store path")
    try:
        ledger = json.loads(text)
    except ValueError as exc:
        raise VotebenchError(f"{p}: the watch ledger is not valid JSON ({exc}); give a new --store path") from None
    base = empty_ledger()
    if not isinstance(ledger, dict) or any(not isinstance(ledger.get(k, base[k]), type(base[k])) for k in base):
        raise VotebenchError(f"{p}: the watch ledger is malformed; give a new --store path")
    return scores, {**base, **ledger}


def save(store: str | os.PathLike[str], scores: xr.DataArray, ledger: dict[str, Any]) -> None:
    """Write ``scores`` with ``ledger`` as the store, atomically (a temporary folder renamed into place)."""
    out = scores.copy(deep=False)
    out.attrs = {**{k: v for k, v in scores.attrs.items() if k != KEY}, KEY: json.dumps(ledger, allow_nan=False)}
    to_zarr(out, store, overwrite=True)


def save_ledger(store: str | os.PathLike[str], ledger: dict[str, Any]) -> None:
    """Replace the ledger of an existing store (its ``zarr.json`` rewritten atomically; the scores are untouched)."""
    meta_path = Path(store) / "zarr.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise VotebenchError(f"{store}: cannot read the store's zarr.json ({exc})") from None
    meta.setdefault("attributes", {})[KEY] = json.dumps(ledger, allow_nan=False)
    atomic_write_text(meta_path, json.dumps(meta, indent=2))
