"""Live dashboard of a sweep results store: a read-only web page that follows the store as blocks finish.

``votebench serve STORE`` (and ``votebench sweep CONFIG --dashboard``) start a
small tornado app with these routes, all ``GET`` (any other method gets ``405``):

``/``, ``/dashboard.js``, ``/dashboard.css``
    the page, shipped as package data (``engine/app/web/``); no network access
    beyond this server.
``/api/snapshot``
    the current state of the store as JSON (:func:`snapshot`), gzip-compressed
    when the client accepts it, with an ``ETag``.
``/api/stream``
    server-sent events: a small event (``version``, ``status``, ``progress``)
    when the client connects and whenever the store changes, and a comment
    line as heartbeat; the page then fetches ``/api/snapshot``.
``/api/scores?input=NAME&system=NAME``
    the per-task scores of one system (read from the sweep's input when it is
    found with the checksum the store recorded).
``/api/letters?input=NAME[&group=GROUP&rule=RULE]``
    the compact letter display of the input's best systems by the rule the
    page's leaderboard is sorted by (by mean without ``rule``;
    :meth:`LiveStore.letter_groups`): computed once per input and rule when
    the page asks for it, from the same input, and refused when its tests
    would cost more than :data:`LETTER_WORK`.
``/api/counts?input=NAME``
    per system, the tasks (judges) with a score and the scored task-instance
    cells behind its rank (:meth:`LiveStore.counts`).

A bootstrap group's rules carry, besides the kind's numbers, what the page
needs to read them (:func:`annotate_bootstrap`): the unit of the score, a flag
for a degenerate ranking (:func:`degenerate_ranking`), Rank(UB) and, once the
group is complete, the score intervals.  ``timing`` gives the elapsed time
and the time left at the rate seen so far.

The state is incremental (:class:`LiveStore`): the server watches the
store's ``done`` flags (a directory listing, no data read) and merges only
the blocks it has not seen, from the mergeable per-block summaries the sweep
writes (:mod:`engine.kernels.summaries`); an update costs O(new blocks), not
O(store).  The state of a store group, and its JSON, is its perturbation
kind's (the ``dashboard`` hook of :mod:`engine.sweep.kinds`); a group of a
kind this process has not registered is not shown.  The snapshot is built once per change and served to every client.

Security: the store is opened read-only and nothing received is evaluated.
The server binds ``127.0.0.1`` by default and then refuses requests whose
``Host`` header is not a loopback name (DNS rebinding).  Any other address
needs a token (given, or generated and printed in the page's URL), checked on
every request (``?token=``, a cookie the page sets, or ``Authorization:
Bearer``).  Open connections, open streams, header and body times and sizes
are capped; an idle stream costs no CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hmac
import json
import logging
import math
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.app.units import RULE_UNITS, rule_unit  # noqa: F401 - re-exported: the dashboard's names
from engine.errors import VotebenchError
from engine.kernels.checks import check_level
from engine.labelled.comparison import degenerate_ranking

__all__ = ["LiveStore", "snapshot", "make_app", "serve", "start_in_background", "BackgroundDashboard",
           "dask_dashboard_link", "add_server_options", "check_port", "token_option", "is_loopback",
           "STABILITY_REPLICATES", "Limits", "LETTER_TOP_K", "LETTER_RESAMPLES", "LETTER_WORK"]

log = logging.getLogger("engine")

#: replicates of a candidate (system) bootstrap pooled for the mean Spearman correlation (the first that finish):
#: its replicates rank different systems, so the mergeable sums do not apply and the mean costs O(pool^2 S)
STABILITY_REPLICATES = 200
#: seconds per update spent on the agreement between rules (the rest waits for the next updates: the rankings come first)
AGREE_SECONDS = 0.05
#: the letter groups of an input (:func:`engine.labelled.paired_tests.letter_groups`): systems compared (the best by mean), sign
#: patterns per pair of the permutation tests, and the most work (pairs x patterns x task-instance cells) done on demand
LETTER_TOP_K = 15
LETTER_RESAMPLES = 4000
LETTER_WORK = 2e9
#: most replicate scores (rules x replicates x systems) read for the score intervals of a finished bootstrap group
SCORE_VALUES = 20_000_000
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_WEB = "web"
_STATIC = {"dashboard.js": "application/javascript; charset=utf-8", "dashboard.css": "text/css; charset=utf-8"}
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


@dataclass(frozen=True)
class Limits:
    """Resource limits of the server.

    Attributes
    ----------
    max_connections : int
        Open TCP connections; more are closed at once.
    max_streams : int
        Open ``/api/stream`` responses; more get ``503`` (the page retries).
    header_timeout : float
        Seconds a connection may take to send a request's headers (also the
        keep-alive idle time); then it is closed.
    body_timeout : float
        Seconds a request body may take.
    max_header_size, max_body_size : int
        Bytes.
    """

    max_connections: int = 128
    max_streams: int = 32
    header_timeout: float = 10.0
    body_timeout: float = 10.0
    max_header_size: int = 16 * 1024
    max_body_size: int = 64 * 1024


# ------------------------------------------------------------------------------------ helpers

def shown_path(path: str | os.PathLike[str]) -> str:
    """A path as the page shows it: relative to the working directory when under it, else ``…/<name>``.

    The page never shows an absolute path (served on another host, it would tell the machine's layout).
    """
    p = Path(path)
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return f"…/{p.name}"


def _signature(path: Path) -> tuple[Any, tuple[Any, ...], dict[str, frozenset[tuple[int, ...]]]]:
    """What changes when a store is replaced, gains a group or an array, or a ``done`` flag: directory listings only.

    Returns the root metadata file's identity; the listing of the store's
    folders, without the chunk folders (``c/``) of arrays and the ``summary``
    groups, each with its modification time and number of entries; and, per
    store group, the chunk indices of its ``done`` flags that exist as files.
    A flag is one chunk and zarr writes no chunk for a flag left ``False``, so
    these are the blocks done (the reader checks their values).  A chunk
    being written (a ``.partial`` file renamed into place) is not counted.
    """
    layout: list[Any] = []
    flags: dict[str, set[tuple[int, ...]]] = {}
    try:
        st = (path / "zarr.json").stat()
        root = (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        root = None
    for dirpath, dirnames, filenames in os.walk(path):
        parts = Path(dirpath).relative_to(path).parts
        if "done" in parts[:-1] and parts[parts.index("done") + 1 :][:1] == ("c",):
            at = parts.index("done")
            key = flags.setdefault("/".join(parts[:at]), set())
            for f in filenames:
                if not f.endswith(".partial"):
                    try:
                        key.add(tuple(int(v) for v in (*parts[at + 2 :], f)))
                    except ValueError:  # not a chunk of the default key encoding: the reader reads every flag
                        key.add((-1,))
            continue
        dirnames[:] = sorted(d for d in dirnames if d != "summary" and (d != "c" or parts[-1:] == ("done",)))
        try:
            mtime = os.stat(dirpath).st_mtime_ns
        except OSError:
            mtime = None
        layout.append((dirpath, mtime, len(dirnames), sum(1 for f in filenames if not f.endswith(".partial"))))
    return root, tuple(layout), {k: frozenset(v) for k, v in flags.items()}


def _root_identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = (path / "zarr.json").stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def annotate_bootstrap(g: dict[str, Any], score_iv: Mapping[str, Any], level: float) -> None:
    """Add to a bootstrap group's JSON, per rule: ``unit``, ``degenerate`` and ``score_low``/``score_high`` (or
    ``score_interval_note`` saying why not).

    The group's ``rank_ub`` (Rank(UB)) comes with it from the bootstrap kind: the paired
    :func:`engine.kernels.metrics.rank_upper_bound`, the same while running and once finished."""
    from engine.sweep.kinds import json_numbers

    for ri, r in enumerate(g["rules"]):
        r["unit"] = rule_unit(str(r["rule"]))
        r["degenerate"] = degenerate_ranking(r["rank"])
        if "low" in score_iv:
            r["score_low"] = json_numbers(np.asarray(score_iv["low"][ri], dtype=np.float64))
            r["score_high"] = json_numbers(np.asarray(score_iv["high"][ri], dtype=np.float64))
        else:
            r["score_interval_note"] = str(score_iv.get("why", "no score intervals"))
    g["level"] = level


def _leaf_groups(root: Any) -> list[str]:
    import warnings

    from engine.sweep.results import leaf_groups

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr warns about a chunk or metadata file being written (``.partial``)
        return sorted(leaf_groups(root))


#: seconds of finished blocks the ETA takes its rate from (the most recent ones)
ETA_WINDOW = 20.0


def block_cost(g: Mapping[str, Any]) -> float:
    """The cost of one block of group ``g`` in rankings computed (the unit the ETA weighs finished blocks by): a
    bootstrap block ranks its replicates under one rule, a subsets block its repeats per size and rule, a synthetic
    block its replicates per value and row; any other block counts as one ranking.

    >>> block_cost({"replicates_total": 600, "blocks_total": 30})
    20.0
    >>> block_cost({"repeats": 40, "sizes": [2, 4, 8], "rules": ["a", "b", "c"], "blocks_total": 36})
    10.0
    """
    total = g.get("blocks_total") or 0
    if not total:
        return 0.0
    if "replicates_total" in g:
        work = float(g["replicates_total"])
    elif "repeats" in g and "sizes" in g:
        work = float(g["repeats"]) * len(g["sizes"]) * len(g.get("rules") or [1])
    elif "repeats" in g and "values" in g:
        work = float(g["repeats"]) * len(g["values"]) * len(g.get("rows") or [1])
    else:
        return 1.0
    return max(work / total, 1.0)


def _progress(groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    counted = [g for g in groups if "replicates_total" in g]  # groups that count replicates (bootstrap)
    rd, rt = sum(g["replicates_done"] for g in counted), sum(g["replicates_total"] for g in counted)
    bd, bt = sum(g["blocks_done"] for g in groups), sum(g["blocks_total"] for g in groups)
    return {"replicates_done": rd, "replicates_total": rt, "blocks_done": bd, "blocks_total": bt,
            "fraction": bd / bt if bt else 0.0}


def work_done(groups: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """The cost (:func:`block_cost`) of the blocks done and of all the blocks of ``groups``."""
    return (sum(block_cost(g) * g["blocks_done"] for g in groups), sum(block_cost(g) * g["blocks_total"] for g in groups))


# ------------------------------------------------------------------------------------ the live state
class LiveStore:
    """The state of a results store, brought up to date incrementally.

    :meth:`update` looks at the store's directory listing (cheap) and, when
    it changed, reads the ``done`` flags of the groups not yet complete and
    merges the summaries of the blocks it has not seen
    (:mod:`engine.kernels.summaries`); :meth:`snapshot` builds the JSON-ready state.
    A store that is replaced (a flag goes back to not done, or the sweep
    config differs) is read again from the start.

    Parameters
    ----------
    store : str or path
        The results store (it need not exist yet).
    level : float
        Coverage of the rank intervals and level of the ties with the leader.
    dask_dashboard : str, optional
        Link shown on the page.
    pool : int
        Replicates pooled for the mean Spearman correlation of a candidate
        bootstrap (:data:`STABILITY_REPLICATES`).
    agree_budget : float, optional
        Seconds per update spent on the agreement between rules (the rest
        waits for the next updates); ``None``: all of it at once.
    """

    def __init__(self, store: str | os.PathLike[str], *, level: float = 0.95, dask_dashboard: str | None = None,
                 pool: int = STABILITY_REPLICATES, agree_budget: float | None = AGREE_SECONDS, replaces: bool = False,
                 run: bool = False) -> None:
        check_level(level)
        self.path = Path(store)
        self.level, self.dask_dashboard, self.pool, self.agree_budget = level, dask_dashboard, pool, agree_budget
        # ``sweep --overwrite``: the store there now is the previous run's, replaced by this run: never shown
        self.stale_root = _root_identity(self.path) if replaces else None
        self.run = run  # served by the run that writes the store (its elapsed time is the run's)
        self.started = time.time()
        self._seen: tuple[float, int, float] | None = None  # (time, blocks done, their cost) when the store was first seen
        self._seen_done: dict[str, int] = {}  # blocks done per group when the group was first seen
        # (time, blocks done, their cost) at each change of the count, from the last one before the ETA's window
        self._marks: list[tuple[float, int, float]] = []
        self._extras: dict[tuple[str, int, int], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._letter_lock = threading.Lock()
        self._scores: dict[str, Any] = {}
        self._letters: dict[str, dict[str, Any]] = {}
        self._reset()

    def _reset(self) -> None:
        self.signature: tuple[Any, ...] | None = None
        self.root: Any = None
        self.names: list[str] = []
        self.config: str | None = None
        self.attrs: dict[str, Any] = {}
        self.groups: dict[str, Any] = {}
        self.message: str | None = None
        self._scores = {}
        self._letters = {}
        self._seen = None
        self._seen_done = {}
        self._marks = []
        self._extras = {}

    def update(self, *, strict: bool = False, force: bool = False) -> bool:
        """Merge what the store gained since the last call; ``True`` when the snapshot changes.

        Parameters
        ----------
        strict : bool
            Raise :class:`VotebenchError` for a folder that is not a results
            store (else it shows as ``waiting`` with a message, as a store
            being created does).
        force : bool
            Read the flags even if the directory listing did not change.
        """
        from engine.sweep.kinds import StoreChanged

        with self._lock:
            try:
                return self._update(strict=strict, force=force)
            except StoreChanged:
                self._reset()
                return self._update(strict=strict, force=True)

    def _update(self, *, strict: bool, force: bool) -> bool:
        import zarr

        from engine.sweep.kinds import StoreChanged, get_kind

        path = self.path
        if not path.exists():
            was = (self.signature, self.message)
            self._reset()
            self.message = "no results store yet"
            return was != (None, self.message)
        sig = _signature(path)
        if self.stale_root is not None:
            if sig[0] is not None and sig[0] == self.stale_root:  # still the previous run's store (--overwrite)
                return self._waiting("--overwrite: the previous results store is being replaced by this run; "
                                     "waiting for its new store")
            self.stale_root = None
        if sig == self.signature and not force and not self.busy:
            return False
        old = self.signature
        if self.root is None or old is None or sig[:2] != old[:2]:  # replaced, or new groups or arrays: look again
            try:
                root = zarr.open_group(str(path), mode="r")
                attrs = dict(root.attrs)
            except Exception:  # noqa: BLE001 - zarr raises several kinds for a folder it cannot read as a group
                if strict:
                    raise VotebenchError(f"{path}: not a votebench results store") from None
                return self._waiting("the results store is being created")
            if "engine_version" not in attrs:
                if strict:
                    raise VotebenchError(f"{path}: not a votebench results store")
                return self._waiting("the results store is being created")
            if self.config is not None and (attrs.get("config") != self.config or (old and sig[0] != old[0])):
                self._reset()
            config = attrs.get("config")
            self.root, self.config, self.attrs = root, config if isinstance(config, str) else None, attrs
            self.names = _leaf_groups(root)
        changed = self.message is not None
        self.message = None
        pending = False
        from engine.sweep import damaged_store, storage_failure
        for name in self.names:
            try:
                state = self.groups.get(name)
                if state is None:
                    grp = self.root[name]
                    kind = get_kind(str(grp.attrs.get("kind", "")))
                    if kind is None or kind.dashboard is None:  # a kind this process does not know, or one not shown
                        continue
                    state = kind.dashboard(name, grp, level=self.level, pool=self.pool, agree_budget=self.agree_budget)
                    self.groups[name] = state
                    changed = True
                if not state.done.all() or getattr(state, "busy", False):
                    state.files = sig[2].get(name, frozenset())
                    changed |= state.poll()
            except StoreChanged:
                raise
            except (KeyError, ValueError, OSError) as exc:  # a group whose arrays are still being written
                log.debug("dashboard: group %s not readable yet (%s)", name, exc)
                pending = True
            except Exception as exc:
                if not storage_failure(exc):
                    raise
                if strict:  # `votebench serve` checks the store before serving it: one line
                    raise damaged_store(path, exc) from None
                self.groups.pop(name, None)  # while serving: the page says which group cannot be read
                self.message = f"group {name}: {damaged_store(path, exc)}"
                changed = True
        # a group not readable yet: look again at the next poll even if the listing stays the same
        self.signature = None if pending else sig
        return changed

    @property
    def busy(self) -> bool:
        """Whether :meth:`update` has work left even without new blocks (agreement between rules)."""
        return any(getattr(g, "busy", False) for g in self.groups.values())

    def _waiting(self, message: str) -> bool:
        changed = self.message != message or bool(self.groups)
        self._reset()
        self.message = message
        return changed

    def snapshot(self) -> dict[str, Any]:
        """The JSON-ready state (see :func:`snapshot`)."""
        with self._lock:
            groups = []
            for name in sorted(self.groups):
                g = self.groups[name].to_json()
                if g.get("kind") == "bootstrap":
                    annotate_bootstrap(g, self._score_intervals(name), self.level)
                groups.append(g)
            prog = _progress(groups)
            if not groups:
                status = "waiting"
            else:
                status = "complete" if prog["blocks_done"] == prog["blocks_total"] else "partial"
            untimed = self._untimed(groups)  # every snapshot: each group's blocks done when first seen
            timing = self._timing(prog, status, work_done(groups))
            timing["eta_untimed"] = untimed if timing["eta_seconds"] is not None else []
        out = {"status": status, "store": shown_path(self.path), "engine_version": self.attrs.get("engine_version"),
               "seed": self.attrs.get("seed"), "dask_dashboard": self.dask_dashboard, "level": self.level,
               "progress": prog, "groups": groups, "input": self._input_settings(), "timing": timing}
        if self.message:
            out["message"] = self.message
        return out

    def _untimed(self, groups: Sequence[Mapping[str, Any]]) -> list[str]:
        """The kinds of the groups with blocks left none of which has finished since first seen: the estimate prices
        their blocks by :func:`block_cost` alone, not by a measured rate, so the page calls it rough."""
        out: set[str] = set()
        for g in groups:
            first = self._seen_done.setdefault(str(g["name"]), int(g["blocks_done"]))
            if g["blocks_done"] < g["blocks_total"] and g["blocks_done"] == first:
                out.add(str(g.get("kind", "other")))
        return sorted(out)

    def _timing(self, prog: Mapping[str, Any], status: str, work: tuple[float, float]) -> dict[str, Any]:
        """Elapsed time and, while blocks are being added, an estimate of the time left: the cost of the blocks left
        (:func:`block_cost`: rankings computed) at the measured rate of the blocks finished since the store was first
        seen, the time to the last finished block (not to now: blocks in flight are not done work)."""
        now = time.time()
        done, total = prog["blocks_done"], prog["blocks_total"]
        cost, cost_total = work
        if self._seen is None and total:
            self._seen = (now, done, cost)
        if total and (not self._marks or done != self._marks[-1][1]):
            self._marks.append((now, done, cost))
            # the rate of the last ETA_WINDOW seconds of finished blocks (a run speeds up once its workers are warm:
            # the average since the start priced the rest at the slow first blocks' rate, 3-7 times too long): the
            # first mark kept is the last one at or before the window's start, older ones never serve again
            while len(self._marks) > 1 and self._marks[1][0] <= now - ETA_WINDOW:
                self._marks.pop(0)
        since, done0, _ = self._seen if self._seen is not None else (now, done, cost)
        eta = None
        if self._marks:
            (base_t, _, base_cost), (last, _, _) = self._marks[0], self._marks[-1]
            if status == "partial" and cost > base_cost and last > base_t:
                eta = (cost_total - cost) * (last - base_t) / (cost - base_cost) - (now - last)
        return {"started": self.started if self.run else since, "run": self.run, "now": now,
                "eta_seconds": eta, "blocks_since": done - done0}

    def _input_settings(self) -> dict[str, Any]:
        """The aggregation level and missing-score policy of the sweep's inputs (from the stored config)."""
        try:
            cfg = json.loads(self.attrs.get("config") or "{}")
        except ValueError:
            return {}
        try:  # the inputs as the sweep named them (an input without ``name`` is named after its file)
            from engine.sweep import parse_config

            inputs = [dict(i) for i in parse_config(cfg, stored=True).inputs]
        except (VotebenchError, ValueError, TypeError):
            inputs = cfg.get("inputs") or ([cfg["input"]] if isinstance(cfg.get("input"), dict) else [])
        # not given: engine.rank's defaults (missing="error"; level=None: the rule's own level)
        return {str(i.get("name")): {"level": i.get("level"), "missing": i.get("missing") or "error",
                                     "defaults": [k for k in ("level", "missing") if not i.get(k)]}
                for i in inputs if isinstance(i, dict)}

    def _score_intervals(self, name: str) -> dict[str, Any]:
        """Percentile intervals of each rule's replicate scores over the replicates done so far, as the rank intervals
        are (read again only when more blocks are done; a rule with no block done yet has none)."""
        state = self.groups[name]
        h = getattr(state, "h_scores", None)
        if h is None:
            return {"why": "none: this group stores no replicate scores"}
        if getattr(state, "over", None) == "systems":
            return {"why": "none: the replicates of a bootstrap over systems score different sets of systems"}
        done = np.asarray(state.done, dtype=bool)
        key = (name, id(state), int(done.sum()))
        got = self._extras.get(key)
        if got is not None:
            return got
        if h.size > SCORE_VALUES:
            got = {"why": f"not read here ({h.size:,} replicate scores; at most {SCORE_VALUES:,})"}
        else:
            import warnings

            q = 50 * (1 - self.level), 50 * (1 + self.level)
            R, S = done.shape[0], int(h.shape[-1])
            lo, hi = np.full((R, S), np.nan), np.full((R, S), np.nan)
            for ri in range(R):
                reps = state.done_scores(ri)
                if not reps.shape[0]:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # a system absent from every replicate
                    lo[ri], hi[ri] = np.nanpercentile(reps, q, axis=0)
            got = {"low": lo, "high": hi}
        self._extras = {k: v for k, v in self._extras.items() if k[:2] != key[:2]}  # an older count's intervals
        self._extras[key] = got
        return got

    # -------------------------------------------------------------- per-task scores on demand
    def task_scores(self, input_name: str, system: str) -> dict[str, Any]:
        """The per-task scores of ``system`` on the sweep input ``input_name`` (mean over instances, as given).

        The input is found as the report finds it (:func:`engine.report.find_input`,
        checked against the checksum the store recorded) and read once.
        """
        entry = self._input_entry(input_name)
        if "missing" in entry:
            raise LookupError(entry["missing"])
        if "error" in entry:
            raise VotebenchError(entry["error"])
        try:
            s = entry["systems"].index(system)
        except ValueError:
            raise LookupError(f"input {input_name!r} has no system {system!r}") from None
        from engine.sweep.kinds import json_number

        rows = []
        for t, task in enumerate(entry["tasks"]):
            rows.append({"task": task, "score": json_number(entry["mean"][s, t]), "higher_is_better": bool(entry["hib"][t]),
                         "direction_assumed": task in entry["assumed"],
                         "rank": None if not math.isfinite(entry["rank"][s, t]) else int(entry["rank"][s, t]),
                         "ranked": int(entry["ranked"][t])})
        return {"input": input_name, "system": system, "source": entry["source"], "tasks": rows,
                "note": ("mean over the task's instances, as in the input; " if entry["n_instances"] > 1 else "")
                        + "rank among the systems with a score on the task"
                        + ("; 'assumed': no sidecar or lower_is_better gave the task's direction" if entry["assumed"] else "")}

    def counts(self, input_name: str) -> dict[str, Any]:
        """Per system of the input: the tasks (judges) with a score and the scored task-instance cells behind its rank."""
        entry = self._input_entry(input_name)
        if "missing" in entry:
            raise LookupError(entry["missing"])
        if "error" in entry:
            raise VotebenchError(entry["error"])
        from engine.app.report import SCALE_RULES, scale_warning

        try:  # the rules of the sweep that average raw scores over tasks (the report's warning, the same words)
            rules = [str(r["name"]) for r in json.loads(self.attrs.get("config") or "{}").get("rules", [])]
        except (ValueError, TypeError, KeyError, AttributeError):
            rules = []
        used = sorted({r for r in rules if r in SCALE_RULES})
        warn = scale_warning(entry["mean"].T, entry["tasks"], used) if used else None
        return {"input": input_name, "systems": entry["systems"], "n_tasks": len(entry["tasks"]),
                "n_instances": entry["n_instances"], "scale_warning": warn, "scale_rules": used,
                "tasks": [int(v) for v in np.isfinite(entry["mean"]).sum(axis=1)],
                "cells": [int(v) for v in entry["cells"]]}

    def _input_entry(self, input_name: str) -> dict[str, Any]:
        entry = self._scores.get(input_name)
        if entry is None:
            entry = self._read_input(input_name)
            self._scores[input_name] = entry
        return entry

    # -------------------------------------------------------------- letter groups on demand
    def letter_groups(self, input_name: str, group: str = "", rule: str = "") -> dict[str, Any]:
        """The compact letter display of the :data:`LETTER_TOP_K` best systems of the sweep input ``input_name``.

        :func:`engine.labelled.paired_tests.letter_groups` on the input as :meth:`task_scores` finds it, with
        ``alpha = 1 - level`` and :data:`LETTER_RESAMPLES` sign patterns per pair; computed once per input (one
        at a time) and kept.  An input whose permutation tests would take more than :data:`LETTER_WORK`
        (pairs x patterns x task-instance cells) gets an ``error`` that says so instead.
        """
        candidates, by = self._best_by_rule(group, rule)
        key = f"{input_name}\0{group}\0{by}"
        with self._letter_lock:
            got = self._letters.get(key)
            if got is None:
                got = self._letters[key] = self._compute_letters(input_name, candidates)
                if candidates is not None and "systems" in got:
                    got["by_rule"] = by
                    got["rule_rank"] = [candidates.index(x) + 1 for x in got["systems"]]
        if "missing" in got:
            raise LookupError(got["missing"])
        return got

    def _best_by_rule(self, group: str, rule: str) -> tuple[list[str] | None, str]:
        """The :data:`LETTER_TOP_K` best systems of ``group`` by ``rule``'s full-data rank, best first (``None``: by mean)."""
        with self._lock:
            state = self.groups.get(group)
            if state is None or not rule:
                return None, "mean"
            g = state.to_json()
        r = next((x for x in g.get("rules", []) if x.get("rule") == rule), None)
        if r is None:
            return None, "mean"
        order = sorted((v, g["systems"][i]) for i, v in enumerate(r["rank"]) if v is not None)
        return [name for _, name in order[:LETTER_TOP_K]], rule

    def _compute_letters(self, input_name: str, candidates: list[str] | None = None) -> dict[str, Any]:
        from engine.distributed import open_source
        from engine.labelled.core import apply_missing_policy
        from engine.labelled.paired_tests import letter_groups

        entry = self._input_entry(input_name)
        if "missing" in entry or "error" in entry:
            return {k: entry[k] for k in ("missing", "error") if k in entry}
        try:
            scores = open_source(entry["src"])
            if entry.get("policy") == "listwise":  # the systems the leaderboard ranks: listwise drops systems
                kept = apply_missing_policy(scores, "listwise").notnull().any(("task", "instance")).compute()
                scores = scores.sel(system=np.asarray(kept.values, dtype=bool))
                if candidates is not None:
                    names = {str(x) for x in scores["system"].values}
                    candidates = [c for c in candidates if c in names]
            S, T, K = (int(scores.sizes[d]) for d in ("system", "task", "instance"))
            k = min(S, LETTER_TOP_K)
            work = k * (k - 1) / 2 * LETTER_RESAMPLES * T * K if K > 1 else 0.0
            if work > LETTER_WORK:
                return {"error": f"letter groups not computed here: the permutation tests of {k} systems on {T} x {K} "
                                 f"task-instance cells would take {work:.2g} operations (the dashboard does at most "
                                 f"{LETTER_WORK:.2g}); run votebench report or votebench compare on the input"}
            res = letter_groups(scores.compute(scheduler="synchronous"), systems=candidates, top_k=LETTER_TOP_K,
                                alpha=round(1.0 - self.level, 12),
                                resamples=LETTER_RESAMPLES, seed=0)
        except VotebenchError as exc:
            return {"error": f"no letter groups: {exc}"}
        return {**res, "input": input_name, "source": entry["source"]}

    def _read_input(self, input_name: str) -> dict[str, Any]:
        from engine.app.report import find_input
        from engine.distributed import loader_keys, make_source, open_source
        from engine.kernels.ranking import min_rank
        from engine.sweep.config import parse_config

        try:
            cfg = parse_config(json.loads(self.attrs["config"]), where=str(self.path), stored=True)
            checksums = json.loads(self.attrs.get("inputs", "{}"))
            known = json.loads(self.attrs.get("input_paths", "{}"))
        except (KeyError, ValueError, TypeError, VotebenchError):
            return {"error": "the store holds no readable sweep config"}
        spec = next((i for i in cfg.inputs if i["name"] == input_name), None)
        if spec is None:
            return {"missing": f"the sweep has no input {input_name!r}"}
        found, why = find_input(spec, self.path, checksums, known=known.get(input_name))
        if found is None:
            return {"error": f"per-task scores not available: {why}"}
        try:
            src = make_source(found, meta=spec.get("meta"), lower_is_better=spec.get("lower_is_better") or (),
                              loader={k: spec.get(k) for k in loader_keys()})
            scores = open_source(src)
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: missing scores
                mean = scores.mean("instance", skipna=True).transpose("system", "task").compute(scheduler="synchronous")
                cells = scores.notnull().sum(("task", "instance")).compute(scheduler="synchronous")
        except VotebenchError as exc:
            return {"error": f"per-task scores not available: {exc}"}
        from engine.labelled.canonical import defaulted_directions

        M = np.asarray(mean.values, dtype=np.float64)
        hib = np.asarray(scores["higher_is_better"].values, dtype=bool)
        assumed = set(defaulted_directions(found, [str(t) for t in mean["task"].values], meta=src.meta,
                                           lower_is_better=src.lower_is_better))
        oriented = np.where(hib[None, :], M, -M)
        rank = min_rank(oriented.T).T
        return {"systems": [str(s) for s in mean["system"].values], "tasks": [str(t) for t in mean["task"].values],
                "mean": M, "hib": hib, "rank": rank, "ranked": np.isfinite(M).sum(axis=0), "source": shown_path(found),
                "assumed": assumed, "src": src, "cells": np.asarray(cells.values, dtype=np.int64),
                "policy": spec.get("missing"),
                "n_instances": int(scores.sizes["instance"])}


def snapshot(store: str | Path, *, dask_dashboard: str | None = None, level: float = 0.95) -> dict[str, Any]:
    """The current state of a sweep results store, as JSON-ready data.

    Parameters
    ----------
    store : str or path
        A results store written by :func:`engine.sweep.run_sweep` (possibly
        still being written).  A store that does not exist yet gives
        ``status="waiting"``.
    dask_dashboard : str, optional
        Link to the dask dashboard of the sweep's scheduler, passed through.
    level : float
        Coverage of the rank intervals (0.95: 2.5 and 97.5 percentiles) and
        level of the ties with the leader.

    Returns
    -------
    dict
        ``status`` (``"waiting"``, ``"partial"`` or ``"complete"``), ``store``,
        ``engine_version``, ``seed``, ``dask_dashboard``, ``level``,
        ``progress`` (``replicates_done``/``replicates_total`` over every
        bootstrap group and rule, ``blocks_done``/``blocks_total`` over every
        group, ``fraction`` of blocks) and ``groups``, one per store group.

        A ``bootstrap`` group lists its ``systems`` once and, per rule,
        arrays in that order: the full-data ``score`` and ``rank`` the sweep
        stored (``ranking_source="full data"``; a store without them is ranked
        by mean replicate rank and says so), ``rank_low``/``rank_high`` (the
        percentiles of the replicate ranks done so far), ``mean_rank``,
        ``pair_low``/``pair_high`` (:func:`engine.kernels.metrics.pairwise_rank_bounds`),
        the indices of the ``leader`` and of the systems ``tied`` with it,
        ``kendall_w``, ``mean_spearman`` (over ``spearman_replicates``, said in
        ``spearman_over``) and ``order_stability``
        (:func:`engine.kernels.metrics.order_stability`).  ``interval`` names the
        interval the page shows: ``"percentile"``, or ``"pairwise"`` for a
        candidate (system) bootstrap, whose replicate ranks are biased.
        ``agreement`` gives Kendall tau-b between the rules' full-data rankings
        and its mean over the replicates both rules have done (the first
        ten of every block; ``common_replicates`` counts them).  On a finished
        store ``rank_low``, ``rank_high``, the ties and ``kendall_w`` equal
        :func:`engine.summarize`'s exactly and ``mean_spearman`` up to
        rounding (:mod:`engine.kernels.summaries`).

        Subsets groups give the mean (and std) tau per rule and subset size,
        grid groups the leader per done point, synthetic
        ``manipulation``/``rescaling`` groups the mean error per (variant,
        phi) and axis value.  Non-finite numbers are ``None``.
    """
    live = LiveStore(store, level=level, dask_dashboard=dask_dashboard, agree_budget=None)
    live.update(strict=True)
    return live.snapshot()


# ------------------------------------------------------------------------------------ server
class _Hub:
    """Keeps one store's snapshot (JSON and gzip bytes) up to date and wakes the streams when it changes."""

    def __init__(self, live: LiveStore, *, poll: float) -> None:
        self.live, self.poll = live, poll
        self.version = 0
        self.body = b""
        self.gzipped = b""
        self.event = ""
        self.status = "waiting"
        self.streams = 0
        self.closed = False
        self.complete = threading.Event()
        self.force = False
        self.tag = secrets.token_hex(4)  # ETags of an earlier server never match
        self._changed: asyncio.Future[None] | None = None
        self._first: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="votebench-dashboard")

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._changed = loop.create_future()
        self._first = asyncio.Event()
        self._task = loop.create_task(self._run())

    async def ready(self) -> None:
        assert self._first is not None
        await self._first.wait()

    def _build(self, force: bool) -> tuple[bytes, bytes, str, str] | None:
        try:
            changed = self.live.update(force=force)
        except Exception as exc:  # noqa: BLE001 - keep serving; show why and retry at the next poll
            log.debug("dashboard: update failed", exc_info=True)
            why = f"cannot read the store yet ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
            changed = why != self.live.message
            self.live.message = why
        if not changed and self.version and not force:  # (forced: the page's link to the dask dashboard changed)
            return None
        snap = self.live.snapshot()
        snap["version"] = self.version + 1
        snap["generated"] = time.time()
        body = json.dumps(snap, allow_nan=False, separators=(",", ":")).encode()
        event = json.dumps({"version": snap["version"], "status": snap["status"], "progress": snap["progress"],
                            "generated": snap["generated"]}, separators=(",", ":"))
        return body, gzip.compress(body, compresslevel=6, mtime=0), event, snap["status"]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        warm = False
        while not self.closed:
            force, self.force = self.force, False
            began = loop.time()
            try:
                built = await loop.run_in_executor(self._executor, self._build, force)
            except RuntimeError:  # executor shut down while stopping
                return
            if built is not None:
                self.body, self.gzipped, self.event, self.status = built
                self.version += 1
                if self.status == "complete":
                    self.complete.set()
                else:
                    self.complete.clear()
                assert self._changed is not None and self._first is not None
                self._changed.set_result(None)
                self._changed = loop.create_future()
                self._first.set()
            if not warm:  # after the first snapshot: import what later updates need, not in the middle of a sweep
                warm = True
                await loop.run_in_executor(self._executor, _warm_up)
            period = self.poll if self.status != "complete" or self.live.busy else max(self.poll, 1.0)
            await asyncio.sleep(max(0.02, began + period - loop.time()))  # a steady cadence, however long an update took

    async def wait(self, version: int, timeout: float, gone: asyncio.Future[None]) -> None:
        """Until the snapshot is newer than ``version``, the client left, the hub closed or ``timeout`` passed."""
        if self.version != version or self.closed or gone.done():
            return
        assert self._changed is not None
        await asyncio.wait({self._changed, gone}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)

    def close(self) -> None:
        self.closed = True
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        if self._task is not None:
            self._task.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)


def _warm_up() -> None:
    import scipy.stats  # noqa: F401 - the agreement between rules (a second or two to import)

    from engine.kernels import metrics, summaries  # noqa: F401


def _read_web(name: str) -> bytes:
    from importlib.resources import files

    return files(__package__).joinpath(_WEB, name).read_bytes()


def _handlers() -> dict[str, type]:
    """The request handler classes (tornado imported lazily: only the server needs it)."""
    base = _base_handler()
    return {**_page_handlers(base), **_live_handlers(base), **_input_handlers(base)}


def _base_handler() -> type:
    """The handler every route derives from: GET only, safe headers, the host and token checks, one-line errors."""
    from tornado.web import HTTPError, RequestHandler

    class Base(RequestHandler):
        SUPPORTED_METHODS = ("GET",)  # read-only: anything else is 405

        def set_default_headers(self) -> None:
            self.set_header("Cache-Control", "no-store")
            self.set_header("X-Content-Type-Options", "nosniff")
            self.set_header("Referrer-Policy", "no-referrer")
            self.set_header("X-Frame-Options", "DENY")

        def prepare(self) -> None:
            allowed = self.settings.get("allowed_hosts")
            if allowed and self.request.host_name.lower() not in allowed:
                raise HTTPError(403)
            token = self.settings.get("token")
            if not token:
                return
            given = self.get_query_argument("token", None)
            auth = self.request.headers.get("Authorization", "")
            if given is None and auth.lower().startswith("bearer "):
                given = auth[7:].strip()
            if given is None:
                given = self.get_cookie(self.settings["cookie"])
            if not given or not hmac.compare_digest(given.encode(), token.encode()):
                raise HTTPError(401)
            if self.get_query_argument("token", None) is not None:  # remember it for the page's own requests
                self.set_cookie(self.settings["cookie"], token, httponly=True, samesite="Strict", path="/")

        def write_error(self, status_code: int, **kwargs: Any) -> None:
            if status_code == 405:
                self.set_header("Allow", "GET")
            if status_code == 503:
                self.set_header("Retry-After", "5")
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            why = {401: "a token is required: open the URL `votebench serve` printed (with ?token=...)"}.get(status_code, "")
            self.finish(f"{status_code} {self._reason}" + (f": {why}" if why else "") + "\n")

        @property
        def hub(self) -> _Hub:
            return self.settings["hub"]

    return Base


def _page_handlers(Base: Any) -> dict[str, type]:
    """The page, its static files and the snapshot (JSON, gzip when accepted, ETag)."""
    from tornado.web import HTTPError

    class Page(Base):
        def get(self) -> None:
            if self.settings.get("token") and self.get_query_argument("token", None) is not None:
                self.redirect("/")  # the cookie is set: drop the token from the address bar
                return
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Content-Security-Policy", _CSP)
            self.finish(self.settings["web"]["index.html"])

    class Static(Base):
        def get(self, name: str) -> None:
            if name not in _STATIC:
                raise HTTPError(404)
            self.set_header("Content-Type", _STATIC[name])
            self.finish(self.settings["web"][name])

    class Snapshot(Base):
        def compute_etag(self) -> str | None:
            return None

        async def get(self) -> None:
            hub = self.hub
            await hub.ready()
            etag = f'"{hub.tag}-{hub.version}"'
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.set_header("Vary", "Accept-Encoding")
            self.set_header("ETag", etag)
            if etag in self.request.headers.get("If-None-Match", ""):
                self.set_status(304)
                self.finish()
                return
            if "gzip" in self.request.headers.get("Accept-Encoding", ""):
                self.set_header("Content-Encoding", "gzip")
                self.finish(hub.gzipped)
            else:
                self.finish(hub.body)

    return {"page": Page, "static": Static, "snapshot": Snapshot}


def _live_handlers(Base: Any) -> dict[str, type]:
    """The event stream of snapshot versions."""
    from tornado.iostream import StreamClosedError
    from tornado.web import HTTPError

    class Stream(Base):
        def initialize(self) -> None:
            self.gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_connection_close(self) -> None:
            if not self.gone.done():
                self.gone.set_result(None)

        async def get(self) -> None:
            hub = self.hub
            if hub.streams >= int(self.settings["max_streams"]):
                raise HTTPError(503)
            hub.streams += 1
            try:
                self.set_header("Content-Type", "text/event-stream; charset=utf-8")
                self.set_header("X-Accel-Buffering", "no")
                heartbeat = float(self.settings["heartbeat"])
                await hub.ready()
                version = hub.version
                self.write(f"retry: 2000\nid: {version}\ndata: {hub.event}\n\n")
                await self.flush()
                while not (hub.closed or self.gone.done()):
                    await hub.wait(version, heartbeat, self.gone)
                    if hub.closed or self.gone.done():
                        break
                    if hub.version != version:
                        version = hub.version
                        self.write(f"id: {version}\ndata: {hub.event}\n\n")
                    else:
                        self.write(": heartbeat\n\n")
                    await self.flush()
            except StreamClosedError:
                pass
            finally:
                hub.streams -= 1
            if not self.gone.done():
                self.finish()

    return {"stream": Stream}


def _input_handlers(Base: Any) -> dict[str, type]:
    """What the page asks of the sweep's input on demand: a system's per-task scores, the counts behind each system,
    the letter groups.  Each is one method of the hub's live input, called with the named query arguments."""

    def handler(method: str, *args: str) -> type:
        class Ask(Base):
            async def get(self) -> None:
                values = [self.get_query_argument("input", "")] + [self.get_query_argument(a, "") for a in args]
                await self.hub.ready()  # the store's config is read by the first update: not before it
                loop = asyncio.get_running_loop()
                try:
                    data = await loop.run_in_executor(None, getattr(self.hub.live, method), *values)
                except LookupError as exc:  # no such input, system or rule
                    self.set_status(404)
                    data = {"error": str(exc.args[0])}
                except VotebenchError as exc:  # the input is not at hand: an answer, not a failed request
                    data = {"error": str(exc)}
                self.set_header("Content-Type", "application/json; charset=utf-8")
                self.finish(json.dumps(data, allow_nan=False))

        Ask.__name__ = Ask.__qualname__ = method.title().replace("_", "")
        return Ask

    return {"scores": handler("task_scores", "system"), "letters": handler("letter_groups", "group", "rule"),
            "counts": handler("counts")}


def make_app(store: str | Path, *, dask_dashboard: str | None = None, poll: float = 0.25, heartbeat: float = 15.0,
             level: float = 0.95, allowed_hosts: Sequence[str] | None = None, token: str | None = None,
             limits: Limits | None = None, cookie: str = "votebench_token", run: Mapping[str, bool] | None = None,
             live: Any | None = None, web: Mapping[str, bytes] | None = None) -> Any:
    """The dashboard's tornado ``Application`` for ``store`` (see the module docstring for the routes).

    Parameters
    ----------
    store : str or path
        Results store (it may not exist yet: the page waits for it).
    dask_dashboard : str, optional
        Link shown on the page.
    poll : float
        Seconds between two looks at the store's directory listing.
    heartbeat : float
        Seconds without change after which a stream sends a comment line.
    level : float
        Coverage of the rank intervals.
    allowed_hosts : sequence of str, optional
        Host names accepted in the ``Host`` header (others get 403); ``None``
        accepts any.
    token : str, optional
        Required on every request (``?token=``, the cookie ``cookie``, or
        ``Authorization: Bearer``); ``None``: no token.
    limits : Limits, optional
        ``max_streams`` is used here (the others by the HTTP server).
    cookie : str
        Name of the cookie that carries the token.
    run : mapping, optional
        ``{"run": True}`` when served by the run that writes the store (its elapsed time), ``{"replaces": True}``
        when that run replaces the store there (``--overwrite``: the previous store is never shown).
    live, web : optional
        Another view served the same way (``votebench watch``, :mod:`engine.app.watch_page`): ``live`` replaces the
        :class:`LiveStore` (``update(force)``, ``snapshot()``, ``message``, ``busy``), ``web`` the page's files by name.

    The app's ``settings["hub"]`` must be started (``hub.start()``) on the
    event loop that serves it; :func:`serve` and :func:`start_in_background` do.
    """
    from tornado.web import Application

    if poll <= 0 or heartbeat <= 0:
        raise VotebenchError(f"poll and heartbeat must be positive, got {poll} and {heartbeat}")
    limits = limits or Limits()
    h = _handlers()
    hub = _Hub(live or LiveStore(store, level=level, dask_dashboard=dask_dashboard, **(run or {})), poll=poll)
    web = {**{name: _read_web(name) for name in ("index.html", *_STATIC)}, **(web or {})}
    return Application(
        [(r"/", h["page"]), (r"/(dashboard\.(?:js|css))", h["static"]), (r"/api/snapshot", h["snapshot"]),
         (r"/api/stream", h["stream"]), (r"/api/scores", h["scores"]), (r"/api/letters", h["letters"]),
         (r"/api/counts", h["counts"])],
        hub=hub, web=web, heartbeat=heartbeat, token=token, cookie=cookie, max_streams=limits.max_streams,
        allowed_hosts={a.lower() for a in allowed_hosts} if allowed_hosts else None,
        log_function=lambda handler: log.debug("dashboard: %s %s %s", handler.get_status(), handler.request.method,
                                               handler.request.path),
    )


def _capped_server(app: Any, limits: Limits) -> Any:
    """A tornado ``HTTPServer`` with a cap on open connections and the header/body limits of ``limits``."""
    from tornado.httpserver import HTTPServer

    class Capped(HTTPServer):
        open_connections = 0

        def handle_stream(self, stream: Any, address: tuple[Any, ...]) -> None:
            if self.open_connections >= limits.max_connections:
                stream.close()
                return
            self.open_connections += 1
            super().handle_stream(stream, address)

        def on_close(self, server_conn: Any) -> None:
            self.open_connections -= 1
            super().on_close(server_conn)

    return Capped(app, idle_connection_timeout=limits.header_timeout, body_timeout=limits.body_timeout,
                  max_header_size=limits.max_header_size, max_body_size=limits.max_body_size)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only: ``localhost`` or a loopback IP literal (not a host name
    that merely starts with ``127.``, which may resolve anywhere)."""
    import ipaddress

    if host in _LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _url(host: str, port: int, token: str | None = None) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else "[::1]" if host == "::" else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def _check_token(token: str | None) -> str | None:
    if token is None:
        return None
    if len(token) < 16 or not token.isprintable() or any(c.isspace() for c in token):
        raise VotebenchError("--token must be at least 16 printable characters without spaces")
    return token


async def _run(store: str | Path, *, host: str, port: int, dask_dashboard: str | None, poll: float, heartbeat: float,
               level: float, ready: Callable[[str, _Hub], None], stop: asyncio.Event, token: str | None,
               limits: Limits, run: Mapping[str, bool] | None = None, view: Mapping[str, Any] | None = None) -> None:
    from tornado.netutil import bind_sockets

    loopback = is_loopback(host)
    token = _check_token(token)
    if not loopback and token is None:
        token = secrets.token_urlsafe(24)
    try:
        sockets = bind_sockets(port, address=host, family=socket.AF_UNSPEC)
    except (OSError, socket.gaierror) as exc:
        raise VotebenchError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    bound = sockets[0].getsockname()[1]
    app = make_app(store, dask_dashboard=dask_dashboard, poll=poll, heartbeat=heartbeat, level=level,
                   allowed_hosts=sorted(_LOOPBACK | {host}) if loopback else None, token=token, limits=limits,
                   cookie=f"votebench_token_{bound}", run=run, **(view or {}))
    server = _capped_server(app, limits)
    server.add_sockets(sockets)
    hub: _Hub = app.settings["hub"]
    hub.start()
    try:
        ready(_url(host, bound, token), hub)
        await stop.wait()
    finally:
        server.stop()
        hub.close()
        await asyncio.sleep(0.05)  # let the streams see the close and end their responses
        await server.close_all_connections()


def serve(store: str | Path, *, host: str = "127.0.0.1", port: int = 8050, dask_dashboard: str | None = None,
          poll: float = 0.25, heartbeat: float = 15.0, level: float = 0.95, token: str | None = None,
          limits: Limits | None = None, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve the dashboard of ``store`` until interrupted (blocking).

    Parameters
    ----------
    store : str or path
        Results store.
    host, port : str, int
        Address to bind (``127.0.0.1`` by default); port 0 picks a free port.
        Binding beyond loopback requires a token: ``token``, else one is
        generated (it is part of the URL passed to ``on_ready``).
    dask_dashboard : str, optional
        Link to the dask dashboard shown on the page.
    poll, heartbeat, level
        As :func:`make_app`.
    token : str, optional
        Required on every request (also on loopback when given); at least 16 characters.
    limits : Limits, optional
        Connection, stream, time and size limits.
    on_ready : callable, optional
        Called with the page's URL once the server listens.
    """

    async def main() -> None:
        await _run(store, host=host, port=port, dask_dashboard=dask_dashboard, poll=poll, heartbeat=heartbeat,
                   level=level, ready=lambda url, hub: (on_ready or (lambda u: None))(url), stop=asyncio.Event(),
                   token=token, limits=limits or Limits())

    asyncio.run(main())


class BackgroundDashboard:
    """A dashboard served from a daemon thread (:func:`start_in_background`).

    Attributes
    ----------
    url : str
        The page's address (with ``?token=`` when a token is required).
    """

    def __init__(self, url: str, thread: threading.Thread, state: dict[str, Any]) -> None:
        self.url, self._thread, self._state = url, thread, state

    def __iter__(self) -> Any:  # ``url, stop = start_in_background(...)``
        return iter((self.url, self.stop))

    def _call(self, fn: Callable[[], None]) -> None:
        loop = self._state.get("loop")
        if loop is not None and self._thread.is_alive():
            try:
                loop.call_soon_threadsafe(fn)
            except RuntimeError:  # loop already closed
                pass

    def wait_complete(self, timeout: float) -> bool:
        """Wait until the page has been sent a snapshot of the finished store; ``False`` after ``timeout`` seconds."""
        return self._state["hub"].complete.wait(timeout)

    @property
    def busy(self) -> bool:
        """Whether the server still has work on blocks it has seen (the agreement between rules catching up)."""
        return self._state["hub"].live.busy

    def set_dask_dashboard(self, link: str | None) -> None:
        """Change (or remove) the dask dashboard link the page shows."""
        hub: _Hub = self._state["hub"]
        hub.live.dask_dashboard = link
        hub.force = True

    @property
    def alive(self) -> bool:
        """Whether the server's thread still runs."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop the server and join its thread (idempotent)."""
        ev = self._state.get("stop")
        if ev is not None:
            self._call(ev.set)
        self._thread.join(timeout=10)


def start_in_background(store: str | Path, *, host: str = "127.0.0.1", port: int = 8050, dask_dashboard: str | None = None,
                        poll: float = 0.25, heartbeat: float = 15.0, level: float = 0.95, token: str | None = None,
                        limits: Limits | None = None, timeout: float = 30.0,
                        replaces: bool = False, run: bool = False, live: Any | None = None,
                        web: Mapping[str, bytes] | None = None) -> BackgroundDashboard:
    """Serve the dashboard of ``store`` from a daemon thread (for ``votebench sweep --dashboard``).

    Parameters are as :func:`serve`; ``timeout`` bounds the wait for the
    server to listen.  ``run``: served by the run that writes the store (the
    page times the run from the server's start); ``replaces``: that run
    replaces the store there (``--overwrite``), whose previous content the
    page never shows; ``live`` and ``web``: another view (:func:`make_app`).

    Returns
    -------
    BackgroundDashboard
        ``.url``, ``.stop()`` (idempotent), ``.wait_complete(timeout)``;
        unpacks as ``url, stop``.
    """
    started = threading.Event()
    state: dict[str, Any] = {}

    def ready(url: str, hub: _Hub) -> None:
        state["url"], state["hub"] = url, hub
        started.set()

    async def main() -> None:
        stop_event = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop_event
        await _run(store, host=host, port=port, dask_dashboard=dask_dashboard, poll=poll, heartbeat=heartbeat,
                   level=level, ready=ready, stop=stop_event, token=token, limits=limits or Limits(),
                   run={"run": run, "replaces": replaces}, view={"live": live, "web": web})

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
            state["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=target, name="votebench-dashboard", daemon=True)
    thread.start()
    if not started.wait(timeout):
        raise VotebenchError(f"dashboard: the server did not start within {timeout:g} s")
    if "error" in state:
        err = state["error"]
        raise err if isinstance(err, VotebenchError) else VotebenchError(f"dashboard: {err}")
    return BackgroundDashboard(state["url"], thread, state)


def dask_dashboard_link(client: Any) -> str | None:
    """The dask dashboard address of a ``distributed.Client``, or ``None`` (no client, or a scheduler without dashboard)."""
    if client is None:
        return None
    try:
        link = client.dashboard_link
    except Exception:  # noqa: BLE001 - distributed raises KeyError and others when the scheduler has no dashboard
        return None
    return str(link) if link else None


# ------------------------------------------------------------------------------------ CLI
def add_server_options(p: argparse.ArgumentParser, *, prefix: str = "") -> None:
    """``--host``, ``--port`` and ``--token`` of ``votebench serve`` (and ``sweep --dashboard``)."""
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default: 127.0.0.1); any other address requires a token")
    p.add_argument("--port", type=int, default=8050, help="port (default: 8050; 0 = any free port)")
    p.add_argument("--token", default=None, metavar="TOKEN",
                   help="require this token on every request (at least 16 characters; default: none on loopback, "
                   "a generated one, printed in the URL, on any other address; also VOTEBENCH_TOKEN)")


def check_port(port: int) -> None:
    """``--port`` of ``votebench serve`` and ``votebench sweep --dashboard``: the socket layer would wrap 99999 to 34463."""
    if not 0 <= port <= 65535:
        raise VotebenchError(f"--port must be in 0..65535, got {port}")


def token_option(args: argparse.Namespace) -> str | None:
    """``--token``, else ``VOTEBENCH_TOKEN``, checked (a token on a command line shows in the process list)."""
    return _check_token(getattr(args, "token", None) or os.environ.get("VOTEBENCH_TOKEN") or None)
