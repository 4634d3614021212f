"""``votebench watch``: a live leaderboard fed by evaluation outputs landing in a folder.

:mod:`engine.watch.scan` finds the outputs and tells when each is complete, :mod:`engine.watch.ingest`
reads one with the registered readers and merges it into the store's score tensor,
:mod:`engine.watch.ledger` keeps what was ingested (files, checksums, times) inside the store, and
:class:`engine.watch.watcher.Watcher` runs one poll: scan, ingest, rank, publish a snapshot.
"""

from __future__ import annotations

from engine.watch.watcher import Watcher, WatchOptions

__all__ = ["WatchOptions", "Watcher"]
