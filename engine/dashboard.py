"""Live dashboard of a sweep results store: one read-only web page fed by server-sent events.

``votebench serve STORE`` (and ``votebench sweep CONFIG --dashboard``) start a
small tornado app (tornado ships with ``distributed``) with three routes, all
``GET`` (any other method gets ``405``):

``/``
    one self-contained HTML page (inline CSS, JavaScript and SVG; no network
    access beyond this server) that fetches a snapshot, then follows the stream.
``/api/snapshot``
    the current state of the store as JSON (:func:`snapshot`).
``/api/stream``
    server-sent events: the snapshot when the client connects, then a new one
    whenever the store changes (the server polls the ``done`` flags every
    ``poll`` seconds while someone listens), and a comment line as heartbeat.

The server only reads the store (zarr, read-only) and never evaluates or
unpickles anything it receives; it binds ``127.0.0.1`` by default and then
also refuses requests whose ``Host`` header is not a loopback name (DNS
rebinding).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import math
import socket
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .dims import REPLICATE, RULE, SYSTEM
from .errors import VotebenchError

__all__ = ["snapshot", "store_fingerprint", "make_app", "serve", "start_in_background", "dask_dashboard_link", "register"]

log = logging.getLogger("engine")

#: the replicates used for the mean pairwise Spearman correlation (Pavao's stability) are capped: it costs O(B^2 S)
STABILITY_REPLICATES = 400
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


# ------------------------------------------------------------------------------------ snapshot
def _num(x: Any) -> float | None:
    """A JSON-safe float: ``None`` for NaN or infinite values."""
    v = float(x)
    return v if math.isfinite(v) else None


def _values(da: xr.DataArray) -> np.ndarray:
    """The values of a (dask-backed) store variable, read here and now: never on a distributed client set as default."""
    return np.asarray(da.compute(scheduler="synchronous").values)


def _done_replicates(done_row: np.ndarray, block: int, n: int) -> np.ndarray:
    """Replicate indices of the blocks flagged done, ascending."""
    ids = [np.arange(bi * block, min(n, (bi + 1) * block)) for bi in np.flatnonzero(done_row)]
    return np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)


def _rule_summary(rule: str, systems: Sequence[str], point_score: np.ndarray | None, R: np.ndarray, *,
                  level: float) -> dict[str, Any]:
    """Ranking, rank intervals, leader/ties and stability of one rule from the replicates done so far.

    Mirrors :func:`engine.bootstrap.summarize` (competition ranks per
    replicate, percentile intervals, ``tied_with_leader`` on ``prob_above``,
    Kendall's W over the systems present in every replicate) except that the
    mean Spearman correlation uses at most :data:`STABILITY_REPLICATES`
    replicates (the first done) and Kendall's mean tau is left out: both cost
    ``O(B^2)``.
    """
    from . import metrics
    from .kernels.ranking import min_rank

    B, S = R.shape
    ranks = min_rank(R) if B else np.zeros((0, S))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a system never drawn (bootstrap over systems): NaN
        mean_rank = np.nanmean(ranks, axis=0) if B else np.full(S, np.nan)
    if point_score is not None:
        score, source = np.asarray(point_score, dtype=np.float64), "full data"
    else:  # no full-data ranking stored: order by mean replicate rank
        score, source = -mean_rank, "mean replicate rank"
    rank = min_rank(score)
    if B:
        low, high = metrics.rank_intervals(ranks, level=level)
        tied = metrics.tied_with_leader(score, metrics.prob_above(R), level=level)
        everywhere = ~np.isnan(R).any(axis=0)
        w = metrics.kendall_w(R[:, everywhere]) if everywhere.sum() >= 2 and B >= 2 else np.nan
        cap = R[:STABILITY_REPLICATES]
        rho = metrics.concordance(cap, method="spearman") if B >= 2 else np.nan
    else:
        low = high = np.full(S, np.nan)
        tied = np.zeros(S, dtype=bool)
        w = rho = np.nan
    leader = ~np.isnan(score) & (rank == 1)
    rows = []
    for i, name in enumerate(systems):
        rows.append({"system": str(name), "score": _num(score[i]), "rank": _num(rank[i]), "rank_low": _num(low[i]),
                     "rank_high": _num(high[i]), "mean_rank": _num(mean_rank[i]), "leader": bool(leader[i]),
                     "tied_with_leader": bool(tied[i] and not leader[i])})
    rows.sort(key=lambda d: (math.inf if d["rank"] is None else d["rank"], d["system"]))
    return {
        "rule": rule,
        "ranking_source": source,
        "replicates_done": int(B),
        "leader": [str(systems[i]) for i in np.flatnonzero(leader)],
        "tied": [str(systems[i]) for i in np.flatnonzero(tied & ~leader)] if B else [],
        "kendall_w": _num(w),
        "mean_spearman": _num(rho),
        "stability_replicates": int(min(B, STABILITY_REPLICATES)),
        "systems": rows,
    }


def _agreement(labels: Sequence[str], points: Sequence[np.ndarray], reps: Sequence[tuple[np.ndarray, np.ndarray]]
               ) -> dict[str, Any]:
    """Kendall tau-b between every pair of rules: on the full-data scores and averaged over the common replicates."""
    from .kernels.kemeny import kendall_tau_b

    k = len(labels)
    full = [[1.0 if i == j else None for j in range(k)] for i in range(k)]
    boot: list[list[float | None]] = [[None] * k for _ in range(k)]
    common: list[list[int]] = [[0] * k for _ in range(k)]
    for i in range(k):
        ids_i, R_i = reps[i]
        common[i][i] = int(ids_i.size)
        boot[i][i] = 1.0 if ids_i.size else None
        for j in range(i + 1, k):
            t = _num(kendall_tau_b(points[i], points[j]))
            full[i][j] = full[j][i] = t
            ids_j, R_j = reps[j]
            both, ai, bj = np.intersect1d(ids_i, ids_j, return_indices=True)
            common[i][j] = common[j][i] = int(both.size)
            if both.size:
                taus = np.asarray(kendall_tau_b(R_i[ai], R_j[bj]), dtype=np.float64)
                m = _num(np.nanmean(taus)) if np.isfinite(taus).any() else None
                boot[i][j] = boot[j][i] = m
    return {"rules": list(labels), "full_data": full, "replicates": boot, "common_replicates": common}


def _bootstrap_group(name: str, ds: xr.Dataset, *, level: float) -> dict[str, Any]:
    done = _values(ds["done"]).astype(bool)  # (rule, block); read before the data it flags
    n, block = int(ds.sizes[REPLICATE]), int(ds.attrs.get("block", 1))
    labels = [str(r) for r in ds[RULE].values]
    systems = [str(s) for s in ds[SYSTEM].values]
    S = len(systems)
    has_point = "score" in ds
    point = _values(ds["score"]).astype(np.float64) if has_point else None
    rules, reps, points = [], [], []
    for ri, label in enumerate(labels):
        ids = _done_replicates(done[ri], block, n)
        if ids.size:  # only the chunks of done blocks are read
            R = _values(ds["replicate_score"].isel({RULE: ri, REPLICATE: ids})).astype(np.float64)
        else:
            R = np.zeros((0, S))
        summary = _rule_summary(label, systems, None if point is None else point[ri], R, level=level)
        rules.append(summary)
        reps.append((ids, R))
        by_name = {row["system"]: row["score"] for row in summary["systems"]}
        points.append(np.array([np.nan if by_name[s] is None else by_name[s] for s in systems]))
    return {
        "name": name,
        "kind": "bootstrap",
        "over": str(ds.attrs.get("over", "")),
        "replicates": n,
        "block": block,
        "blocks_done": int(done.sum()),
        "blocks_total": int(done.size),
        "replicates_done": sum(r["replicates_done"] for r in rules),
        "replicates_total": n * len(labels),
        "n_systems": S,
        "rules": rules,
        "agreement": _agreement(labels, points, reps),
    }


def _subsets_group(name: str, ds: xr.Dataset) -> dict[str, Any]:
    done = _values(ds["done"]).astype(bool)  # (rule, subset_size, block)
    n, block = int(ds.sizes[REPLICATE]), int(ds.attrs.get("block", 1))
    tau = _values(ds["tau"]).astype(np.float64)  # blocks not flagged done are ignored below
    sizes = [int(s) for s in ds["subset_size"].values]
    rules = []
    for ri, label in enumerate(ds[RULE].values):
        mean, count = [], []
        for si in range(len(sizes)):
            ids = _done_replicates(done[ri, si], block, n)
            vals = tau[ri, si, ids]
            count.append(int(ids.size))
            mean.append(_num(np.nanmean(vals)) if np.isfinite(vals).any() else None)
        rules.append({"rule": str(label), "mean_tau": mean, "repeats_done": count})
    return {"name": name, "kind": "subsets", "sizes": sizes, "repeats": n, "blocks_done": int(done.sum()),
            "blocks_total": int(done.size), "rules": rules}


def _grid_group(name: str, ds: xr.Dataset) -> dict[str, Any]:
    done = _values(ds["done"]).astype(bool)  # (point,)
    rank = _values(ds["rank"]).astype(np.float64)
    systems = [str(s) for s in ds[SYSTEM].values]
    points = []
    for i, label in enumerate(ds["point"].values):
        leaders = [systems[j] for j in np.flatnonzero(rank[i] == 1)] if done[i] else []
        points.append({"point": str(label), "done": bool(done[i]), "leader": leaders})
    return {"name": name, "kind": "grid", "rule": str(ds.attrs.get("rule", "")), "blocks_done": int(done.sum()),
            "blocks_total": int(done.size), "points": points}


def _curve_group(name: str, ds: xr.Dataset) -> dict[str, Any]:
    """A synthetic ``manipulation`` / ``rescaling`` group: mean error per (variant, phi) and axis value over done replicates."""
    kind = str(ds.attrs.get("kind"))
    axis = "n_corrupted" if kind == "manipulation" else "factor"
    done = _values(ds["done"]).astype(bool)  # (rule, block)
    n, block = int(ds.sizes[REPLICATE]), int(ds.attrs.get("block", 1))
    error = _values(ds["error"]).astype(np.float64)  # (rule, phi, axis, replicate)
    phis = [float(v) for v in ds["phi"].values]
    rows = []
    for ri, label in enumerate(ds[RULE].values):
        ids = _done_replicates(done[ri], block, n)
        for pi, phi in enumerate(phis):
            vals = error[ri, pi][:, ids]
            mean = [_num(np.nanmean(v)) if np.isfinite(v).any() else None for v in vals]
            rows.append({"rule": str(label), "phi": phi, "mean_error": mean, "repeats_done": int(ids.size)})
    return {"name": name, "kind": kind, "axis": axis, "values": [_num(float(v)) for v in ds[axis].values], "repeats": n,
            "blocks_done": int(done.sum()), "blocks_total": int(done.size), "rows": rows}


def _progress(groups: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    boot = [g for g in groups if g["kind"] == "bootstrap"]
    rd, rt = sum(g["replicates_done"] for g in boot), sum(g["replicates_total"] for g in boot)
    bd, bt = sum(g["blocks_done"] for g in groups), sum(g["blocks_total"] for g in groups)
    return {"replicates_done": rd, "replicates_total": rt, "blocks_done": bd, "blocks_total": bt,
            "fraction": bd / bt if bt else 0.0}


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
        Coverage of the rank intervals (0.95: 2.5 and 97.5 percentiles).

    Returns
    -------
    dict
        ``status`` (``"waiting"``, ``"partial"`` or ``"complete"``), ``store``,
        ``engine_version``, ``seed``, ``dask_dashboard``, ``level``,
        ``progress`` (``replicates_done``/``replicates_total`` summed over
        every bootstrap group and rule, ``blocks_done``/``blocks_total`` over
        every group, ``fraction`` of blocks) and ``groups``, one per store
        group.  A bootstrap group has, per rule, the systems sorted by their
        current ranking -- the full-data ``score``/``rank`` the sweep stores
        (``ranking_source="full data"``; a store without it is ranked by mean
        replicate rank and says so) -- with ``rank_low``/``rank_high``
        (percentiles of the competition ranks of the replicates done so far),
        ``mean_rank``, ``leader``/``tied_with_leader`` flags (as
        :func:`engine.bootstrap.summarize`), ``kendall_w`` and
        ``mean_spearman`` (over at most :data:`STABILITY_REPLICATES`
        replicates); and ``agreement``: Kendall tau-b between the rules'
        full-data rankings and its mean over the replicates both rules have
        done (the same resample for both).  Subsets groups give the mean tau
        per rule and subset size so far, grid groups the leader per done
        point, synthetic ``manipulation``/``rescaling`` groups the mean error
        per (variant, phi) and axis value (``n_corrupted`` or ``factor``);
        groups of other kinds are left out.  Non-finite numbers are ``None``.
    """
    from .sweep import open_results

    if not 0 < level < 1:
        raise VotebenchError(f"interval level must be in (0, 1), got {level}")
    path = Path(store)
    out: dict[str, Any] = {"store": str(path), "dask_dashboard": dask_dashboard, "level": level,
                           "engine_version": None, "seed": None}
    if not path.exists():
        return {**out, "status": "waiting", "message": "no results store yet", "progress": _progress([]), "groups": []}
    try:
        opened = open_results(path)
    except VotebenchError:
        raise
    except Exception:  # noqa: BLE001 - zarr raises several kinds for a folder it cannot read as a group
        raise VotebenchError(f"{path}: not a votebench results store") from None
    groups = []
    for name, ds in opened.items():
        out["engine_version"] = ds.attrs.get("engine_version")
        out["seed"] = ds.attrs.get("seed")
        kind = ds.attrs.get("kind")
        if kind == "bootstrap":
            groups.append(_bootstrap_group(name, ds, level=level))
        elif kind == "subsets":
            groups.append(_subsets_group(name, ds))
        elif kind == "grid":
            groups.append(_grid_group(name, ds))
        elif kind in ("manipulation", "rescaling"):
            groups.append(_curve_group(name, ds))
    prog = _progress(groups)
    status = "complete" if groups and prog["blocks_done"] == prog["blocks_total"] else "partial"
    return {**out, "status": status, "progress": prog, "groups": groups}


def store_fingerprint(store: str | Path) -> str:
    """A digest of a store's provenance and ``done`` flags: it changes whenever a block is written.

    Cheap (reads only the flags); ``"absent"`` when the store does not exist,
    ``"unreadable: ..."`` while it cannot be read (being created).
    """
    import zarr

    from .sweep import _leaf_groups

    path = Path(store)
    if not path.exists():
        return "absent"
    try:
        root = zarr.open_group(str(path), mode="r")
        h = hashlib.sha256(str(root.attrs.get("config", "")).encode())
        for g in sorted(_leaf_groups(root)):
            h.update(g.encode())
            h.update(np.asarray(root[g]["done"][...], dtype=bool).tobytes())
        return h.hexdigest()
    except Exception as exc:  # noqa: BLE001 - a store half-created by a sweep: try again at the next poll
        return f"unreadable: {type(exc).__name__}"


# ------------------------------------------------------------------------------------ server
class _Watcher:
    """Holds the latest snapshot (as JSON text) of one store and wakes the streams when it changes."""

    def __init__(self, store: Path, *, dask_dashboard: str | None, poll: float, level: float) -> None:
        from tornado.locks import Condition

        self.store, self.dask_dashboard, self.poll, self.level = store, dask_dashboard, poll, level
        self.fingerprint: str | None = None
        self.text = ""
        self.version = 0
        self.listeners = 0
        self.closed = False
        self.changed = Condition()
        self._lock: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None

    def _compute(self) -> tuple[str, str]:
        fp = store_fingerprint(self.store)  # before the snapshot: a block written in between triggers another refresh
        try:
            snap = snapshot(self.store, dask_dashboard=self.dask_dashboard, level=self.level)
        except Exception as exc:  # noqa: BLE001 - store being created or replaced: show it and retry at the next poll
            snap = {"store": str(self.store), "status": "waiting", "message": str(exc).splitlines()[0] if str(exc) else
                    type(exc).__name__, "dask_dashboard": self.dask_dashboard, "progress": _progress([]), "groups": []}
        return fp, json.dumps(snap, allow_nan=False, separators=(",", ":"))

    async def refresh(self) -> tuple[int, str]:
        """Re-read the store when its flags changed; the current (version, JSON text)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        loop = asyncio.get_running_loop()
        async with self._lock:
            fp = await loop.run_in_executor(None, store_fingerprint, self.store)
            if fp != self.fingerprint or not self.text:
                fp, text = await loop.run_in_executor(None, self._compute)
                self.fingerprint = fp
                if text != self.text:
                    self.text = text
                    self.version += 1
                    self.changed.notify_all()
        return self.version, self.text

    def ensure_polling(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        while not self.closed:
            if self.listeners:
                try:
                    await self.refresh()
                except Exception:  # noqa: BLE001 - keep serving; the next poll retries
                    log.debug("dashboard: refresh failed", exc_info=True)
            await asyncio.sleep(self.poll)

    def close(self) -> None:
        self.closed = True
        self.changed.notify_all()
        if self._task is not None:
            self._task.cancel()


def _handlers() -> dict[str, type]:
    """The request handler classes (tornado imported lazily: only the server needs it)."""
    from tornado.iostream import StreamClosedError
    from tornado.web import HTTPError, RequestHandler

    class Base(RequestHandler):
        SUPPORTED_METHODS = ("GET",)  # read-only: anything else is 405

        def set_default_headers(self) -> None:
            self.set_header("Cache-Control", "no-store")
            self.set_header("X-Content-Type-Options", "nosniff")
            self.set_header("Referrer-Policy", "no-referrer")

        def prepare(self) -> None:
            allowed = self.settings.get("allowed_hosts")
            if allowed and self.request.host_name.lower() not in allowed:
                raise HTTPError(403)

        def write_error(self, status_code: int, **kwargs: Any) -> None:
            if status_code == 405:
                self.set_header("Allow", "GET")
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(f"{status_code} {self._reason}\n")

        @property
        def watcher(self) -> _Watcher:
            return self.settings["watcher"]

    class Page(Base):
        def get(self) -> None:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; "
                            "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; "
                            "form-action 'none'")
            self.finish(_PAGE)

    class Snapshot(Base):
        async def get(self) -> None:
            _, text = await self.watcher.refresh()
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.finish(text)

    class Stream(Base):
        gone = False

        def on_connection_close(self) -> None:
            self.gone = True
            self.watcher.changed.notify_all()

        async def get(self) -> None:
            w = self.watcher
            self.set_header("Content-Type", "text/event-stream; charset=utf-8")
            self.set_header("X-Accel-Buffering", "no")
            heartbeat = float(self.settings["heartbeat"])
            w.listeners += 1
            w.ensure_polling()
            try:
                version, text = await w.refresh()
                self.write(f"retry: 2000\nid: {version}\ndata: {text}\n\n")
                await self.flush()
                loop = asyncio.get_running_loop()
                while not (w.closed or self.gone):
                    deadline = loop.time() + heartbeat
                    while w.version == version and not (w.closed or self.gone) and loop.time() < deadline:
                        await w.changed.wait(timeout=deadline)
                    if w.closed or self.gone:
                        break
                    if w.version != version:
                        version, text = w.version, w.text
                        self.write(f"id: {version}\ndata: {text}\n\n")
                    else:
                        self.write(": heartbeat\n\n")
                    await self.flush()
            except StreamClosedError:
                pass
            finally:
                w.listeners -= 1
            if not self.gone:
                self.finish()

    return {"page": Page, "snapshot": Snapshot, "stream": Stream}


def make_app(store: str | Path, *, dask_dashboard: str | None = None, poll: float = 1.0, heartbeat: float = 15.0,
             level: float = 0.95, allowed_hosts: Sequence[str] | None = None) -> Any:
    """The dashboard's tornado ``Application`` for ``store`` (see the module docstring for the routes).

    Parameters
    ----------
    store : str or path
        Results store (it may not exist yet: the page waits for it).
    dask_dashboard : str, optional
        Link shown on the page.
    poll : float
        Seconds between two reads of the ``done`` flags while a stream is open.
    heartbeat : float
        Seconds without change after which a stream sends a comment line.
    level : float
        Coverage of the rank intervals.
    allowed_hosts : sequence of str, optional
        Host names accepted in the ``Host`` header (others get 403); ``None``
        accepts any.
    """
    from tornado.web import Application

    if poll <= 0 or heartbeat <= 0:
        raise VotebenchError(f"poll and heartbeat must be positive, got {poll} and {heartbeat}")
    h = _handlers()
    watcher = _Watcher(Path(store), dask_dashboard=dask_dashboard, poll=poll, level=level)
    return Application(
        [(r"/", h["page"]), (r"/api/snapshot", h["snapshot"]), (r"/api/stream", h["stream"])],
        watcher=watcher,
        heartbeat=heartbeat,
        allowed_hosts={a.lower() for a in allowed_hosts} if allowed_hosts else None,
        log_function=lambda handler: log.debug("dashboard: %s %s %s", handler.get_status(), handler.request.method,
                                               handler.request.uri),
    )


def _url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else "[::1]" if host == "::" else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


async def _run(store: str | Path, *, host: str, port: int, dask_dashboard: str | None, poll: float, heartbeat: float,
               level: float, ready: Callable[[str], None], stop: asyncio.Event) -> None:
    from tornado.httpserver import HTTPServer
    from tornado.netutil import bind_sockets

    loopback = host in _LOOPBACK or host.startswith("127.")
    app = make_app(store, dask_dashboard=dask_dashboard, poll=poll, heartbeat=heartbeat, level=level,
                   allowed_hosts=sorted(_LOOPBACK | {host}) if loopback else None)
    try:
        sockets = bind_sockets(port, address=host, family=socket.AF_UNSPEC)
    except (OSError, socket.gaierror) as exc:
        raise VotebenchError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    server = HTTPServer(app)
    server.add_sockets(sockets)
    watcher: _Watcher = app.settings["watcher"]
    try:
        ready(_url(host, sockets[0].getsockname()[1]))
        await stop.wait()
    finally:
        server.stop()
        watcher.close()
        await asyncio.sleep(0.05)  # let the streams see the close and end their responses
        await server.close_all_connections()


def serve(store: str | Path, *, host: str = "127.0.0.1", port: int = 8050, dask_dashboard: str | None = None,
          poll: float = 1.0, heartbeat: float = 15.0, level: float = 0.95,
          on_ready: Callable[[str], None] | None = None) -> None:
    """Serve the dashboard of ``store`` until interrupted (blocking).

    Parameters
    ----------
    store : str or path
        Results store.
    host, port : str, int
        Address to bind (``127.0.0.1`` by default); port 0 picks a free port.
    dask_dashboard : str, optional
        Link to the dask dashboard shown on the page.
    poll, heartbeat, level
        As :func:`make_app`.
    on_ready : callable, optional
        Called with the page's URL once the server listens.
    """

    async def main() -> None:
        await _run(store, host=host, port=port, dask_dashboard=dask_dashboard, poll=poll, heartbeat=heartbeat,
                   level=level, ready=on_ready or (lambda url: None), stop=asyncio.Event())

    asyncio.run(main())


def start_in_background(store: str | Path, *, host: str = "127.0.0.1", port: int = 8050, dask_dashboard: str | None = None,
                        poll: float = 1.0, heartbeat: float = 15.0, level: float = 0.95,
                        timeout: float = 30.0) -> tuple[str, Callable[[], None]]:
    """Serve the dashboard of ``store`` from a daemon thread (for ``votebench sweep --dashboard``).

    Parameters are as :func:`serve`; ``timeout`` bounds the wait for the
    server to listen.

    Returns
    -------
    url : str
        The page's address.
    stop : callable
        Stops the server and joins its thread (idempotent).
    """
    started = threading.Event()
    state: dict[str, Any] = {}

    def ready(url: str) -> None:
        state["url"] = url
        started.set()

    async def main() -> None:
        stop_event = asyncio.Event()
        state["loop"], state["stop"] = asyncio.get_running_loop(), stop_event
        await _run(store, host=host, port=port, dask_dashboard=dask_dashboard, poll=poll, heartbeat=heartbeat,
                   level=level, ready=ready, stop=stop_event)

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

    def stop() -> None:
        loop, ev = state.get("loop"), state.get("stop")
        if loop is not None and thread.is_alive():
            try:
                loop.call_soon_threadsafe(ev.set)
            except RuntimeError:  # loop already closed
                pass
        thread.join(timeout=10)

    return state["url"], stop


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
def register(sub: argparse._SubParsersAction) -> None:
    """Add ``votebench serve STORE [--host] [--port] [--dask-dashboard URL]``."""
    p = sub.add_parser(
        "serve",
        help="live dashboard of a sweep results store (read-only web page)",
        description="Serve a self-contained page showing a results store as it fills: progress, rank intervals, "
        "leader and tied systems, stability per rule and agreement between rules. Read-only; binds 127.0.0.1 "
        "unless told otherwise.",
    )
    p.add_argument("store", metavar="STORE", help="results store written by `votebench sweep`")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8050, help="port (default: 8050; 0 = any free port)")
    p.add_argument("--dask-dashboard", default=None, metavar="URL", help="link to a dask dashboard to show on the page")
    p.set_defaults(func=_cmd_serve)


def _check_port(port: int) -> None:
    """``--port`` of ``votebench serve`` and ``votebench sweep --dashboard``: the socket layer would wrap 99999 to 34463."""
    if not 0 <= port <= 65535:
        raise VotebenchError(f"--port must be in 0..65535, got {port}")


def _cmd_serve(args: argparse.Namespace) -> int:
    import sys

    _check_port(args.port)
    path = Path(args.store)
    if not path.exists():
        raise VotebenchError(f"{args.store}: no such results store")
    snapshot(path)  # fail now, with one line, on a folder that is not a results store

    def ready(url: str) -> None:
        print(f"votebench dashboard of {path} at {url} (Ctrl-C to stop)", flush=True)

    try:
        serve(path, host=args.host, port=args.port, dask_dashboard=args.dask_dashboard, on_ready=ready)
    except KeyboardInterrupt:
        print("votebench: dashboard stopped", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------ page
_PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>votebench · live</title>
<style>
:root { --fg:#1f2430; --muted:#667085; --line:#e4e7ec; --bg:#f6f7f9; --card:#fff; --accent:#2563eb;
        --lead:#d97706; --tied:#f59e0b; --other:#64748b; --ok:#16a34a; --warn:#b45309; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color:var(--fg);
       background:var(--bg); }
header { background:var(--card); border-bottom:1px solid var(--line); padding:14px 24px; position:sticky; top:0; z-index:2; }
h1 { font-size:18px; margin:0 12px 0 0; display:inline-block; }
h2 { font-size:16px; margin:0 0 2px; }
h3 { font-size:14px; margin:0 0 4px; }
.sub { color:var(--muted); font-size:12.5px; }
.row { display:flex; align-items:center; gap:14px; flex-wrap:wrap; }
.pill { display:inline-block; border-radius:999px; padding:1px 10px; font-size:12px; font-weight:600; border:1px solid; }
.pill.partial { color:var(--accent); border-color:var(--accent); }
.pill.complete { color:var(--ok); border-color:var(--ok); }
.pill.waiting { color:var(--warn); border-color:var(--warn); }
.conn::before { content:""; display:inline-block; width:8px; height:8px; border-radius:50%; margin-right:6px;
                background:var(--muted); vertical-align:middle; }
.conn.live::before { background:var(--ok); }
.conn.down::before { background:#dc2626; }
.bar { position:relative; height:10px; background:var(--line); border-radius:6px; overflow:hidden; min-width:160px; flex:1; }
.bar > div { position:absolute; left:0; top:0; bottom:0; background:var(--accent); transition:width .4s ease; }
.bar.small { height:6px; max-width:220px; }
main { padding:18px 24px 40px; display:flex; flex-direction:column; gap:18px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 16px; }
.rules { display:flex; flex-wrap:wrap; gap:14px; margin-top:12px; }
.rule { border:1px solid var(--line); border-radius:8px; padding:10px 12px; flex:1 1 420px; min-width:0; max-width:620px; }
.stats { display:flex; gap:16px; flex-wrap:wrap; margin:2px 0 6px; font-size:12.5px; }
.stats b { font-variant-numeric: tabular-nums; }
.lead { color:var(--lead); font-weight:600; }
.note { color:var(--warn); font-size:12px; }
svg text { font-size:11.5px; fill:var(--fg); }
svg .axis text { fill:var(--muted); font-size:10.5px; }
table.m { border-collapse:collapse; font-size:12px; font-variant-numeric: tabular-nums; }
table.m th, table.m td { padding:4px 8px; border:1px solid var(--line); text-align:center; }
table.m th { background:var(--bg); font-weight:600; }
.mats { display:flex; gap:24px; flex-wrap:wrap; margin-top:8px; }
.legend { display:flex; gap:14px; font-size:12px; color:var(--muted); margin-top:6px; }
.legend i { display:inline-block; width:10px; height:10px; border-radius:50%; margin-right:4px; vertical-align:middle; }
a { color:var(--accent); }
.empty { color:var(--muted); padding:30px; text-align:center; }
</style>
</head>
<body>
<header>
  <div class="row">
    <h1>votebench · live</h1>
    <span id="status" class="pill waiting">connecting</span>
    <span id="conn" class="conn sub">connecting</span>
    <span id="dask" class="sub"></span>
    <span id="updated" class="sub" style="margin-left:auto"></span>
  </div>
  <div class="row" style="margin-top:8px">
    <div class="bar" id="bar"><div id="bar-fill" style="width:0%"></div></div>
    <span id="progress-text" class="sub">–</span>
  </div>
  <div id="store" class="sub" style="margin-top:4px"></div>
</header>
<main id="groups"><div class="empty">Loading the results store…</div></main>
<script>
"use strict";
const SVGNS = "http://www.w3.org/2000/svg";
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) { if (v !== null && v !== undefined) e.setAttribute(k, v); }
  for (const k of kids) { if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k)); }
  return e;
}
function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmt(x, d) { return x === null || x === undefined ? "–" : Number(x).toFixed(d === undefined ? 2 : d); }
function fmtRank(x) {
  if (x === null) return "–";
  const r = Math.round(x * 10) / 10;
  return Number.isInteger(r) ? String(r) : r.toFixed(1);
}
function pct(a, b) { return b ? (100 * a / b) : 0; }
function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

function tauColor(t) {
  if (t === null) return "#f2f4f7";
  const a = Math.min(1, Math.abs(t));
  const [r, g, b] = t >= 0 ? [37, 99, 235] : [220, 38, 38];
  return `rgba(${r},${g},${b},${(0.12 + 0.6 * a).toFixed(3)})`;
}

function intervalChart(rule, nSys) {
  const rows = rule.systems;
  const labelW = 170, plotW = 260, right = 92, rowH = 17, top = 24;
  const W = labelW + plotW + right, H = top + rows.length * rowH + 6;
  const x = r => labelW + (nSys <= 1 ? plotW / 2 : (r - 1) / (nSys - 1) * plotW);
  const s = sv("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", style: `width:100%;max-width:${W}px;height:auto;display:block`});
  s.append(sv("title", {}, `${rule.rule}: rank intervals`));
  const axis = sv("g", {class: "axis"});
  const step = nSys <= 12 ? 1 : nSys <= 30 ? 5 : 10;
  const ticks = [1];
  for (let t = step; t <= nSys; t += step) if (t !== 1) ticks.push(t);
  if (ticks[ticks.length - 1] !== nSys) {
    if (nSys - ticks[ticks.length - 1] < 0.6 * step && ticks.length > 1) ticks.pop();
    ticks.push(nSys);
  }
  for (const t of ticks) {
    axis.append(sv("line", {x1: x(t), x2: x(t), y1: top - 4, y2: H - 4, stroke: "#eef0f3"}));
    axis.append(sv("text", {x: x(t), y: top - 8, "text-anchor": "middle"}, String(t)));
  }
  axis.append(sv("text", {x: labelW - 8, y: top - 8, "text-anchor": "end"}, "rank →"));
  axis.append(sv("text", {x: W - right + 12, y: top - 8}, "interval"));
  s.append(axis);
  rows.forEach((d, i) => {
    const y = top + i * rowH + rowH / 2;
    const color = d.leader ? "var(--lead)" : d.tied_with_leader ? "var(--tied)" : "var(--other)";
    const g = sv("g", {class: "sys" + (d.leader ? " is-leader" : "") + (d.tied_with_leader ? " is-tied" : "")});
    if (i % 2 === 0) g.append(sv("rect", {x: 0, y: y - rowH / 2, width: W, height: rowH, fill: "#fafbfc"}));
    const label = sv("text", {x: labelW - 8, y: y + 4, "text-anchor": "end", class: "lbl", "data-max": labelW - 12,
                              "font-weight": d.leader ? 700 : 400}, d.system);
    g.append(label);
    if (d.rank_low !== null) {
      g.append(sv("line", {x1: x(d.rank_low), x2: x(d.rank_high), y1: y, y2: y, stroke: color,
                           "stroke-width": 5, "stroke-linecap": "round", opacity: 0.45}));
    }
    if (d.rank !== null) g.append(sv("circle", {cx: x(d.rank), cy: y, r: 4, fill: color}));
    const iv = d.rank_low === null ? "" : `[${fmtRank(d.rank_low)}, ${fmtRank(d.rank_high)}]`;
    g.append(sv("text", {x: W - right + 12, y: y + 4, fill: "var(--muted)"}, iv));
    g.append(sv("title", {}, `${d.system}\nrank ${fmtRank(d.rank)} (${rule.ranking_source})` +
      (d.rank_low === null ? "" : `\ninterval ${iv}\nmean replicate rank ${fmt(d.mean_rank)}`) +
      (d.leader ? "\nleader" : d.tied_with_leader ? "\nstatistically tied with the leader" : "")));
    s.append(g);
  });
  return s;
}

function matrix(agr, key, title, note) {
  const t = el("table", {class: "m"});
  const head = el("tr", {}, el("th", {}, ""));
  agr.rules.forEach(r => head.append(el("th", {}, r)));
  t.append(head);
  agr.rules.forEach((r, i) => {
    const tr = el("tr", {}, el("th", {}, r));
    agr[key][i].forEach((v, j) => {
      const td = el("td", {style: `background:${i === j ? "#f2f4f7" : tauColor(v)}`}, i === j ? "·" : fmt(v));
      if (key === "replicates") td.title = `${agr.common_replicates[i][j]} common replicates`;
      tr.append(td);
    });
    t.append(tr);
  });
  return el("div", {}, el("h3", {}, title), t, el("div", {class: "sub"}, note));
}

function ruleCard(g, r) {
  const div = el("div", {class: "rule", "data-rule": r.rule});
  div.append(el("h3", {}, r.rule));
  const stats = el("div", {class: "stats"},
    el("span", {}, "replicates ", el("b", {}, `${r.replicates_done} / ${g.replicates}`)),
    el("span", {title: "Kendall's W of the replicate rankings (1 = every replicate agrees)"},
       "Kendall W ", el("b", {}, fmt(r.kendall_w))),
    el("span", {title: `mean Spearman correlation between pairs of replicates (over ${r.stability_replicates})`},
       "mean Spearman ", el("b", {}, fmt(r.mean_spearman))));
  div.append(stats);
  const lead = el("div", {class: "sub"}, "leader: ", el("span", {class: "lead"}, r.leader.join(", ") || "–"));
  if (r.replicates_done) {
    lead.append(r.tied.length ? `; tied with it: ${r.tied.join(", ")}` : "; no system tied with it");
  } else {
    lead.append("; waiting for replicates");
  }
  div.append(lead);
  if (r.ranking_source !== "full data") {
    div.append(el("div", {class: "note"}, `ranked by ${r.ranking_source} (no full-data ranking in the store)`));
  }
  div.append(intervalChart(r, g.n_systems));
  return div;
}

function bootstrapCard(g, level) {
  const c = el("section", {class: "card", "data-group": g.name});
  c.append(el("div", {class: "row"}, el("h2", {}, g.name),
    el("span", {class: "sub"}, `bootstrap over ${g.over} · ${g.replicates} replicates per rule · ${g.n_systems} systems`),
    el("div", {class: "bar small"}, el("div", {style: `width:${pct(g.blocks_done, g.blocks_total).toFixed(1)}%`})),
    el("span", {class: "sub"}, `${g.replicates_done} / ${g.replicates_total} replicates`)));
  c.append(el("div", {class: "legend"},
    el("span", {}, el("i", {style: "background:var(--lead)"}), "leader"),
    el("span", {}, el("i", {style: "background:var(--tied)"}), `tied with the leader (${Math.round(level * 100)}% bootstrap)`),
    el("span", {}, el("i", {style: "background:var(--other)"}), "other"),
    el("span", {}, `dot = current rank, bar = ${(50 * (1 - level)).toFixed(1)}–${(50 * (1 + level)).toFixed(1)} ` +
       "percentile of replicate ranks")));
  const rules = el("div", {class: "rules"});
  g.rules.forEach(r => rules.append(ruleCard(g, r)));
  c.append(rules);
  if (g.agreement.rules.length >= 2) {
    c.append(el("h3", {style: "margin-top:14px"}, "Agreement between rules (Kendall τ-b)"));
    c.append(el("div", {class: "mats"},
      matrix(g.agreement, "full_data", "full-data rankings", "τ between the rules' rankings of the full data"),
      matrix(g.agreement, "replicates", "per replicate (mean)", "mean τ over the replicates both rules have done")));
  }
  return c;
}

function subsetsCard(g) {
  const c = el("section", {class: "card", "data-group": g.name});
  c.append(el("div", {class: "row"}, el("h2", {}, g.name), el("span", {class: "sub"}, `task subsets · ${g.repeats} repeats per size`),
    el("div", {class: "bar small"}, el("div", {style: `width:${pct(g.blocks_done, g.blocks_total).toFixed(1)}%`})),
    el("span", {class: "sub"}, `${g.blocks_done} / ${g.blocks_total} blocks`)));
  const t = el("table", {class: "m", style: "margin-top:8px"});
  const head = el("tr", {}, el("th", {}, "rule \\ tasks"));
  g.sizes.forEach(s => head.append(el("th", {}, s)));
  t.append(head);
  g.rules.forEach(r => {
    const tr = el("tr", {}, el("th", {}, r.rule));
    r.mean_tau.forEach((v, i) => {
      const td = el("td", {style: `background:${tauColor(v)}`}, fmt(v));
      td.title = `${r.repeats_done[i]} repeats`;
      tr.append(td);
    });
    t.append(tr);
  });
  c.append(el("div", {class: "sub", style: "margin-top:6px"},
               "mean Kendall τ between the ranking on a random task subset and the full ranking"), t);
  return c;
}

function curveCard(g) {
  const c = el("section", {class: "card", "data-group": g.name});
  const what = g.kind === "manipulation" ? "corrupted tasks" : "rescaling factor";
  c.append(el("div", {class: "row"}, el("h2", {}, g.name),
    el("span", {class: "sub"}, `synthetic ${g.kind} (Colombo et al. 2022) · ${g.repeats} replicates`),
    el("div", {class: "bar small"}, el("div", {style: `width:${pct(g.blocks_done, g.blocks_total).toFixed(1)}%`})),
    el("span", {class: "sub"}, `${g.blocks_done} / ${g.blocks_total} blocks`)));
  const t = el("table", {class: "m", style: "margin-top:8px"});
  const head = el("tr", {}, el("th", {}, `rule · φ \\ ${what}`));
  g.values.forEach(v => head.append(el("th", {}, v)));
  t.append(head);
  g.rows.forEach(r => {
    const tr = el("tr", {}, el("th", {}, `${r.rule} · ${r.phi}`));
    r.mean_error.forEach(v => {
      const td = el("td", {style: `background:${tauColor(v === null ? null : 1 - 2 * v)}`}, fmt(v));
      td.title = `${r.repeats_done} replicates`;
      tr.append(td);
    });
    t.append(tr);
  });
  c.append(el("div", {class: "sub", style: "margin-top:6px"},
               "mean normalized Kendall distance between the aggregated ranking and the ground truth"), t);
  return c;
}

function gridCard(g) {
  const c = el("section", {class: "card", "data-group": g.name});
  c.append(el("div", {class: "row"}, el("h2", {}, g.name), el("span", {class: "sub"}, `parameter grid of ${g.rule}`),
    el("div", {class: "bar small"}, el("div", {style: `width:${pct(g.blocks_done, g.blocks_total).toFixed(1)}%`})),
    el("span", {class: "sub"}, `${g.blocks_done} / ${g.blocks_total} points`)));
  const t = el("table", {class: "m", style: "margin-top:8px"}, el("tr", {}, el("th", {}, "point"), el("th", {}, "leader")));
  g.points.forEach(p => t.append(el("tr", {}, el("td", {}, p.point), el("td", {}, p.done ? p.leader.join(", ") : "…"))));
  c.append(t);
  return c;
}

let lastText = null;
function render(s) {
  const p = s.progress;
  const status = document.getElementById("status");
  status.className = "pill " + s.status;
  status.textContent = s.status === "partial" ? "in progress" : s.status;
  document.getElementById("bar-fill").style.width = (100 * p.fraction).toFixed(1) + "%";
  const parts = [];
  if (p.replicates_total) parts.push(`${p.replicates_done} / ${p.replicates_total} replicates`);
  parts.push(`${p.blocks_done} / ${p.blocks_total} blocks`);
  parts.push(`${(100 * p.fraction).toFixed(0)}%`);
  document.getElementById("progress-text").textContent = parts.join(" · ");
  const dask = document.getElementById("dask");
  dask.replaceChildren();
  if (s.dask_dashboard && /^https?:\/\//.test(s.dask_dashboard)) {
    dask.append(el("a", {href: s.dask_dashboard, target: "_blank", rel: "noopener noreferrer"}, "dask dashboard ↗"));
  } else {
    dask.textContent = "dask dashboard: not available";
  }
  document.getElementById("store").textContent = `store ${s.store}` + (s.engine_version ? ` · engine ${s.engine_version}` : "") +
    (s.seed !== null && s.seed !== undefined ? ` · seed ${s.seed}` : "") + (s.message ? ` · ${s.message}` : "");
  document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  const main = document.getElementById("groups");
  const cards = s.groups.map(g => g.kind === "bootstrap" ? bootstrapCard(g, s.level)
                                : g.kind === "subsets" ? subsetsCard(g) : g.kind === "grid" ? gridCard(g)
                                : g.kind === "manipulation" || g.kind === "rescaling" ? curveCard(g) : null).filter(c => c);
  if (!cards.length) cards.push(el("div", {class: "empty"}, s.message || "No groups in the store yet."));
  main.replaceChildren(...cards);
  fitLabels(main);
}
function fitLabels(root) {  // shorten system names to their column, with an ellipsis (the full name is in the tooltip)
  for (const t of root.querySelectorAll("text.lbl")) {
    const max = Number(t.getAttribute("data-max"));
    const full = t.textContent;
    let w = t.getComputedTextLength();
    if (w <= max) continue;
    let n = Math.max(1, Math.floor(full.length * max / w));
    t.textContent = clip(full, n);
    while (n > 1 && t.getComputedTextLength() > max) { n -= 1; t.textContent = clip(full, n); }
  }
}
function accept(text) {
  if (text === lastText) return;
  lastText = text;
  render(JSON.parse(text));
}
function setConn(state, text) {
  const c = document.getElementById("conn");
  c.className = "conn sub " + state;
  c.textContent = text;
}
async function start() {
  try {
    const r = await fetch("api/snapshot", {cache: "no-store"});
    if (r.ok) accept(await r.text());
  } catch (e) { setConn("down", "cannot reach the server"); }
  const es = new EventSource("api/stream");
  es.onopen = () => setConn("live", "live");
  es.onmessage = ev => accept(ev.data);
  es.onerror = () => setConn("down", "reconnecting…");
}
start();
</script>
</body>
</html>
"""
