"""The watch itself: one :meth:`Watcher.poll` scans the folder, ingests what is new, and publishes a snapshot.

Only complete units (:mod:`engine.watch.scan`) that are new or changed since they were ingested are
read; a unit whose files have the size and modification time the ledger recorded is not even hashed, so
a restarted watch parses nothing twice.  After an ingestion the ranking is recomputed from the store
with the function ``votebench rank`` uses (:func:`engine.distributed.rank_input`), and with ``over`` the
bootstrap with the one ``votebench bootstrap`` uses (:func:`engine.sweep.bootstrap_input`), so the
published ranking is ``votebench rank STORE``'s.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.dims import INSTANCE, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.io.files import WriterLock
from engine.watch import ledger as ledgers
from engine.watch.ingest import check_fits, merge, read_unit, store_path_ok, without_systems
from engine.watch.scan import FileStat, Unit, file_sha256, find_units
from engine.watch.snapshot import board_group, change_records, ranking_rows

__all__ = ["WatchOptions", "Watcher"]


@dataclass
class WatchOptions:
    """What the watch reads and computes.

    Attributes
    ----------
    settle : float
        Seconds a file (or a HELM folder) must stay unchanged before it is read.
    rank : dict
        The aggregation options of :func:`engine.rank` (``rule``, ``level``, ``missing``, ...).
    loader : dict
        Reader options (``format``, ``metric``, ``filter``, ``split``).
    meta : mapping, optional
        A sidecar's content (task directions).
    lower_is_better : list of str
        Tasks where lower is better.
    over : str, optional
        Bootstrap axis; ``None``: no bootstrap.
    replicates, seed, block : int
        Of the bootstrap.
    interval : float
        Coverage of the rank intervals.
    own_files : tuple of str
        Files the watch writes itself (``--snapshot``), never read as outputs.
    """

    settle: float = 5.0
    rank: dict[str, Any] = field(default_factory=dict)
    loader: dict[str, Any] = field(default_factory=dict)
    meta: Mapping[str, Any] | None = None
    lower_is_better: list[str] = field(default_factory=list)
    over: str | None = None
    replicates: int = 200
    seed: int = 0
    block: int = 50
    interval: float = 0.95
    own_files: tuple[str, ...] = ()


class Watcher:
    """Watches ``root`` into the zarr store ``store`` (created at the first ingestion of two systems).

    Parameters
    ----------
    root : path-like
        The watched folder.
    store : path-like
        The store: a new path, or one an earlier watch wrote (it resumes).
    options : WatchOptions
        What to read and compute.
    client : distributed.Client, optional
        Compute the ranking and the bootstrap on this cluster.
    say : callable, optional
        ``say(level, text)`` for each progress line (``"ingested"``, ``"note"``) and bad output (``"error"``).
    """

    def __init__(self, root: str | os.PathLike[str], store: str | os.PathLike[str], options: WatchOptions, *,
                 client: Any | None = None, say: Callable[[str, str], None] | None = None) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise VotebenchError(f"{root}: no such folder")
        self.store = store_path_ok(store)
        self.options, self.client = options, client
        self.say = say or (lambda level, text: None)
        self.lock = WriterLock(self.store, "watch store").acquire()
        try:
            self.scores, self.ledger = ledgers.load(self.store)
            self._same_reading()
        except BaseException:
            self.lock.release()
            raise
        self.hashes: dict[tuple[str, int, int], str] = {}
        self.waiting: list[dict[str, str]] = []
        self.snapshot: dict[str, Any] | None = None
        self.version = 0
        self.last_timing: dict[str, float] = {}
        self.header: dict[str, Any] = {}
        #: paths under the watched folder that are the watch's own (its store, its snapshot file): never units
        self.skip = frozenset([self.store.resolve(), *(Path(p).resolve() for p in options.own_files)])

    def _reading(self) -> dict[str, Any]:
        """How outputs are read (reader options, sidecar directions, ``--lower-is-better``), as JSON."""
        o = self.options
        return json.loads(json.dumps({"loader": {k: v for k, v in o.loader.items() if v is not None},
                                      "higher_is_better": dict((o.meta or {}).get("higher_is_better", {})),
                                      "lower_is_better": sorted(o.lower_is_better)}, sort_keys=True))

    def _same_reading(self) -> None:
        """A store is resumed only with the reading options it was built with: its scores would mix two readings."""
        now, then = self._reading(), self.ledger.get("reading")
        if self.ledger["units"] and then is not None and then != now:
            differ = sorted(k for k in now if now[k] != then.get(k))
            raise VotebenchError(f"{self.store}: built with other reading options ({', '.join(differ)}: {then}); give "
                                 "the same --input-format/--metric/--filter/--split/--meta/--lower-is-better, or a new "
                                 "--store")
        self.ledger["reading"] = now

    def close(self) -> None:
        """Release the store's writer lock."""
        self.lock.release()

    # ------------------------------------------------------------------ what is new
    def _sha(self, unit: Unit, rel: str, st: FileStat, recorded: Mapping[str, Any]) -> str:
        rec = recorded.get(rel)
        if isinstance(rec, dict) and rec.get("size") == st.size and rec.get("mtime_ns") == st.mtime_ns:
            return str(rec["sha256"])
        key = (rel, st.size, st.mtime_ns)
        if key not in self.hashes:
            self.hashes[key] = file_sha256(self.root / rel)
        return self.hashes[key]

    def _files(self, unit: Unit, recorded: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        return {rel: {"sha256": self._sha(unit, rel, st, recorded), "size": st.size, "mtime_ns": st.mtime_ns}
                for rel, st in unit.files.items()}

    @staticmethod
    def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
        return set(a) == set(b) and all(a[k]["sha256"] == b[k]["sha256"] for k in a)

    def _todo(self, units: Sequence[Unit]) -> list[tuple[Unit, dict[str, Any]]]:
        """The complete units that are new or changed, with their files' records; refreshes the waiting list."""
        todo, self.waiting = [], []
        for unit in units:
            if not unit.complete:
                self.waiting.append({"unit": unit.key, "why": unit.waiting})
                continue
            done = self.ledger["units"].get(unit.key)
            refused = self.ledger["rejected"].get(unit.key)
            files = self._files(unit, (done or refused or {}).get("files", {}))
            if done is not None and self._same(files, done["files"]):
                done["files"] = files  # same content: only the recorded stats may have changed
                continue
            if refused is not None and self._same(files, refused["files"]):
                continue
            todo.append((unit, files))
        return todo

    # ------------------------------------------------------------------ ingestion
    def _owner(self) -> dict[str, str]:
        return {s: key for key, rec in self.ledger["units"].items() for s in rec["systems"]}

    def _ingest_one(self, unit: Unit, files: dict[str, Any], now: float) -> bool:
        """Read, check and merge one unit; a bad one is recorded and said in one line.  Whether it was ingested."""
        before = self.ledger["units"].get(unit.key)
        try:
            current = without_systems(self.scores, before["systems"] if before else ())
            known = {} if current is None else dict(zip(map(str, current[TASK].values),
                                                        map(bool, current["higher_is_better"].values)))
            new = read_unit(unit, loader=self.options.loader, meta=self.options.meta,
                            lower_is_better=self.options.lower_is_better, known=known)
            owner = {s: k for s, k in self._owner().items() if k != unit.key}
            check_fits(current, new, key=unit.key, owner=owner)
            merged = merge(current, new, key=unit.key, missing=str(self.options.rank.get("missing") or "error"))
        except VotebenchError as exc:
            text = str(exc).replace(str(unit.path), unit.key)  # the unit's path relative to the watched folder
            text = text if text.startswith(unit.key) else f"{unit.key}: {text}"
            if before is not None:
                text += " (the version ingested before stays)"
            self.ledger["rejected"][unit.key] = {"files": files, "error": text, "time": now}
            ledgers.log_entry(self.ledger, "error", text, now)
            self.say("error", text)
            return False
        systems = [str(s) for s in new[SYSTEM].values]
        self.scores = merged
        self.ledger["rejected"].pop(unit.key, None)
        self.ledger["units"][unit.key] = {"kind": unit.kind, "systems": systems, "files": files, "time": now}
        what = f"{unit.key} ({unit.kind}, {len(files)} file{'s' if len(files) != 1 else ''}): {', '.join(systems)}"
        if before is not None:
            text = f"re-ingested {what}: its files changed after ingestion"
            ledgers.log_entry(self.ledger, "note", text, now)
        else:
            text = f"ingested {what}"
            ledgers.log_entry(self.ledger, "ingested", text, now)
        self.say("ingested", text)
        return True

    def poll(self) -> bool:
        """Scan once, ingest what is new, write the store and publish a snapshot when anything was ingested.

        Returns
        -------
        bool
            Whether a new snapshot was published.
        """
        began = time.perf_counter()
        waiting_before = self.waiting
        todo = self._todo(find_units(self.root, settle=self.options.settle, skip=self.skip))
        now = time.time()
        ingested = [unit.key for unit, files in todo if self._ingest_one(unit, files, now)]
        if ingested and self.scores is not None and self.scores.sizes[SYSTEM] >= 2:
            t0 = time.perf_counter()
            ledgers.save(self.store, self.scores, self.ledger)
            self.last_timing = {"ingest_s": t0 - began, "write_s": time.perf_counter() - t0}
            self._publish(ingested, now)
            return True
        if ingested:
            self.say("note", "waiting for a second system before the store is written and ranked")
        elif todo and self.store.exists():  # only refusals: the ledger (and the page's log) learn them
            ledgers.save_ledger(self.store, self.ledger)
        if self.snapshot is None and self.store.exists() and self.scores is not None:
            self._publish([], now)  # a restarted watch: show what the store holds
            return True
        if self.snapshot is not None and (todo or self.waiting != waiting_before):
            old = self.snapshot
            self.snapshot = self._build(old["ranking"], old["changes"], old["change_list"], published=old["published"])
            self.version += 1
            return True
        if todo or self.waiting != waiting_before:  # no ranking yet: the page's refusals, waiting outputs and log change
            self.version += 1
        return False

    # ------------------------------------------------------------------ publishing
    def _rank(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        from engine.distributed import rank_input

        opts = self.options
        t0 = time.perf_counter()
        ds, _ = rank_input(self.store, client=self.client, **opts.rank)
        self.last_timing["rank_s"] = time.perf_counter() - t0
        boot = None
        if opts.over:
            from engine.labelled.comparison import bootstrap_intervals
            from engine.sweep import bootstrap_input

            bds, _ = bootstrap_input(self.store, over=opts.over, replicates=opts.replicates, seed=opts.seed,
                                     block=opts.block, client=self.client, **opts.rank)
            boot = bootstrap_intervals(bds, level=opts.interval, over=opts.over)
            self.last_timing["bootstrap_s"] = time.perf_counter() - t0 - self.last_timing["rank_s"]
        board = board_group(ds, boot, None if boot is None else bds["replicate_score"], level=opts.interval,
                            over=opts.over, replicates=opts.replicates)
        return ranking_rows(ds, boot), {"rule": ds.attrs.get("rule"), "level": ds.attrs.get("level"), "board": board}

    def _publish(self, ingested: Sequence[str], now: float) -> None:
        rows, header = self._rank()
        records = change_records(self.ledger.get("published", {}), rows)
        said = [c["text"] for c in records]
        for text in said:
            ledgers.log_entry(self.ledger, "change", text, now)
            self.say("change", text)
        self.ledger["published"] = {r["system"]: [r["rank"], r.get("rank_low"), r.get("rank_high")] for r in rows}
        ledgers.save_ledger(self.store, self.ledger)
        self.header = header
        self.snapshot = self._build(rows, said, records)
        self.version += 1

    def outcomes(self) -> dict[str, list[Any]]:
        """The outputs rejected (unit, error, time) and the last 100 log lines: shown before any ranking too (a watch
        whose every file is rejected must say so, not "waiting")."""
        return {"rejected": [{"unit": k, "error": v["error"], "time": v["time"]}
                             for k, v in sorted(self.ledger["rejected"].items())],
                "log": self.ledger["log"][-100:]}

    def _provenance(self) -> dict[str, Any]:
        out = {}
        for key, rec in self.ledger["units"].items():
            for s in rec["systems"]:
                out[s] = {"unit": key, "kind": rec["kind"], "ingested": rec["time"],
                          "files": [{"path": rel, "sha256": f["sha256"], "size": f["size"]}
                                    for rel, f in sorted(rec["files"].items())]}
        return out

    def _build(self, rows: list[dict[str, Any]], said: Sequence[str], records: Sequence[Mapping[str, Any]] = (),
               published: float | None = None) -> dict[str, Any]:
        """The snapshot of ranking ``rows`` and its changes; ``published``: when that ranking was published (kept when
        only the refusals, the waiting outputs or the log change: What changed is not restamped)."""
        o = self.options
        sizes = {} if self.scores is None else {d: int(self.scores.sizes[d]) for d in (SYSTEM, TASK, INSTANCE)}
        header = self.header
        return {
            "kind": "watch", "status": "watching", "progress": {"units": len(self.ledger["units"])},
            "dir": str(self.root), "store": str(self.store),
            "published": time.time() if published is None else published,
            **header, "missing": o.rank.get("missing"), "over": o.over, "replicates": o.replicates if o.over else None,
            "seed": o.seed if o.over else None, "interval": o.interval if o.over else None,
            "n_systems": len(rows), "sizes": sizes, "ranking": rows, "changes": list(said),
            "change_list": [dict(c) for c in records],
            "provenance": self._provenance(), "waiting": list(self.waiting),
            **self.outcomes(), "timing": dict(self.last_timing),
        }
