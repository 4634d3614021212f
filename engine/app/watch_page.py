"""The page of ``votebench watch --dashboard``: the dashboard server of :mod:`engine.app.dashboard` showing a watch.

:class:`WatchLive` stands where the dashboard keeps its :class:`~engine.app.dashboard.LiveStore`: the server asks it
for the snapshot a :class:`~engine.watch.Watcher` last published (``/api/snapshot``; ``/api/stream`` tells the page
when it changes, so the page updates without a reload).  :func:`watch_web` gives the page's own files.
"""

from __future__ import annotations

import math
import warnings
from importlib.resources import files
from typing import Any

import numpy as np

from engine.app.dashboard import LETTER_RESAMPLES, LETTER_TOP_K, LETTER_WORK
from engine.app.units import rule_unit
from engine.errors import VotebenchError

__all__ = ["WatchLive", "watch_html", "watch_web"]


#: the name of the watch's one input and group in the dashboard's snapshot (``/api/counts?input=watch``)
INPUT = "watch"


class WatchLive:
    """The live view of a watch for the dashboard's hub (``update``, ``snapshot``, ``message``, ``busy``, and the
    on-demand ``counts``, ``task_scores``, ``letter_groups`` of the page's leaderboard).

    Parameters
    ----------
    watcher : engine.watch.Watcher
        The watch whose ``snapshot``, ``version`` and ``scores`` are shown (read from the server's thread: the watcher
        replaces them as a whole, never edits them in place).
    """

    def __init__(self, watcher: Any) -> None:
        self.watcher = watcher
        self.seen = -1
        self.message: str | None = None
        self.busy = False
        self.dask_dashboard: str | None = None
        self._letters: dict[tuple[int, str], dict[str, Any]] = {}

    def update(self, *, strict: bool = False, force: bool = False) -> bool:
        """Whether the watch published since the last call."""
        version = self.watcher.version
        changed = version != self.seen
        self.seen = version
        return changed

    def snapshot(self) -> dict[str, Any]:
        """The last snapshot (the hub adds its ``version``), or a waiting one before the first, in the dashboard's
        shape as well: ``groups`` holds the ranking as a bootstrap group (:func:`engine.watch.snapshot.board_group`,
        with each rule's unit), ``level`` is the coverage of the intervals (the aggregation level is
        ``aggregation_level``), ``input`` the aggregation settings, ``progress`` one block (a watch has no end)."""
        w = self.watcher
        coverage = float(w.options.interval)
        snap = w.snapshot
        if snap is None:
            return {"kind": "watch", "status": "waiting", "progress": {"fraction": 0.0, "blocks_done": 0, "blocks_total": 0},
                    "ranking": [], "changes": [], "change_list": [], "groups": [], "level": coverage,
                    "dir": str(w.root), "store": str(w.store), "waiting": list(w.waiting), **w.outcomes(),
                    "provenance": {}, "message": "waiting for the outputs of two systems"}
        board = snap.get("board")
        groups = []
        if board is not None:
            groups = [{**board, "rules": [{**r, "unit": rule_unit(str(r["rule"]))} for r in board["rules"]]}]
        out = {k: v for k, v in snap.items() if k != "board"}
        out.update({"watch_version": w.version, "aggregation_level": snap.get("level"), "level": coverage,
                    "groups": groups, "status": "watching" if groups else "waiting",
                    "progress": {**snap.get("progress", {}), "fraction": 1.0, "blocks_done": 1, "blocks_total": 1},
                    "input": {INPUT: {"level": snap.get("level"), "missing": snap.get("missing") or "error",
                                      "defaults": [] if w.options.rank.get("missing") else ["missing"]}}})
        return out

    # ------------------------------------------------------------------ what the leaderboard asks on demand
    def _scores(self, input_name: str) -> Any:
        if input_name != INPUT:
            raise LookupError(f"the watch has no input {input_name!r} (its one input is {INPUT!r})")
        scores = self.watcher.scores
        if scores is None:
            raise VotebenchError("no scores ingested yet")
        return scores.transpose("system", "task", "instance")

    def counts(self, input_name: str) -> dict[str, Any]:
        """Per system of the store: the tasks (judges) with a score and the scored task-instance cells behind its rank."""
        from engine.app.report import SCALE_RULES, scale_warning

        scores = self._scores(input_name)
        X = np.asarray(scores.values, dtype=np.float64)
        ok = np.isfinite(X)
        tasks = [str(t) for t in scores["task"].values]
        rule = str((self.watcher.snapshot or {}).get("rule") or "")
        used = [rule] if rule in SCALE_RULES else []
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a task without any score of a system
            mean = np.nanmean(X, axis=2)
        return {"input": input_name, "systems": [str(s) for s in scores["system"].values], "n_tasks": len(tasks),
                "n_instances": int(X.shape[2]), "scale_warning": scale_warning(mean.T, tasks, used) if used else None,
                "scale_rules": used, "tasks": [int(v) for v in ok.any(axis=2).sum(axis=1)],
                "cells": [int(v) for v in ok.sum(axis=(1, 2))]}

    def task_scores(self, input_name: str, system: str) -> dict[str, Any]:
        """The per-task scores of ``system`` in the store (mean over instances) and its rank on each task."""
        from engine.kernels.ranking import min_rank

        scores = self._scores(input_name)
        systems = [str(s) for s in scores["system"].values]
        if system not in systems:
            raise LookupError(f"the watch has no system {system!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            M = np.nanmean(np.asarray(scores.values, dtype=np.float64), axis=2)
        hib = np.asarray(scores["higher_is_better"].values, dtype=bool)
        rank = min_rank(np.where(hib[None, :], M, -M).T).T
        s = systems.index(system)
        rows = [{"task": str(t), "score": None if not math.isfinite(M[s, k]) else float(M[s, k]),
                 "higher_is_better": bool(hib[k]), "direction_assumed": False,
                 "rank": None if not math.isfinite(rank[s, k]) else int(rank[s, k]), "ranked": int(np.isfinite(M[:, k]).sum())}
                for k, t in enumerate(scores["task"].values)]
        return {"input": input_name, "system": system, "source": "the watch's store", "tasks": rows,
                "note": "mean over the task's instances; rank among the systems with a score on the task"}

    def letter_groups(self, input_name: str, group: str = "", rule: str = "") -> dict[str, Any]:
        """The letter groups of the best systems by the watch's rule (:func:`engine.labelled.paired_tests.letter_groups`,
        as the dashboard computes them), once per published version."""
        from engine.labelled.paired_tests import letter_groups

        scores = self._scores(input_name)
        board = (self.watcher.snapshot or {}).get("board") or {}
        key = (self.watcher.version, rule)
        if key in self._letters:
            return self._letters[key]
        r = next((x for x in board.get("rules", []) if x.get("rule") == rule), None)
        candidates = None if r is None else [board["systems"][i] for _, i in sorted(
            (v, i) for i, v in enumerate(r["rank"]) if v is not None)][:LETTER_TOP_K]
        S, T, K = (int(scores.sizes[d]) for d in ("system", "task", "instance"))
        k = min(S, LETTER_TOP_K)
        work = k * (k - 1) / 2 * LETTER_RESAMPLES * T * K if K > 1 else 0.0
        if work > LETTER_WORK:
            return {"error": f"letter groups not computed here: the permutation tests of {k} systems on {T} x {K} "
                             f"task-instance cells would take {work:.2g} operations; run votebench report on the store"}
        try:
            got = letter_groups(scores, systems=candidates, top_k=LETTER_TOP_K,
                                alpha=round(1.0 - float(self.watcher.options.interval), 12), resamples=LETTER_RESAMPLES, seed=0)
        except VotebenchError as exc:
            return {"error": f"no letter groups: {exc}"}
        got = {**got, "input": input_name, "source": "the watch's store"}
        if candidates is not None and "systems" in got:
            got["by_rule"] = rule
            got["rule_rank"] = [candidates.index(x) + 1 for x in got["systems"]]
        self._letters = {key: got}
        return got


def watch_web() -> dict[str, bytes]:
    """The page's files under the names the dashboard serves: ``index.html``, ``dashboard.js`` (the dashboard's script,
    which draws the leaderboard, then the watch's, which draws the watch's own cards around it), ``dashboard.css``
    (the dashboard's style sheet, then the watch's additions)."""
    web = files("engine.app").joinpath("web")
    return {"index.html": watch_html(web.joinpath("index.html").read_text(encoding="utf-8"),
                                     web.joinpath("watch_body.html").read_text(encoding="utf-8")).encode("utf-8"),
            "dashboard.js": web.joinpath("dashboard.js").read_bytes() + b"\n" + web.joinpath("watch.js").read_bytes(),
            "dashboard.css": web.joinpath("dashboard.css").read_bytes() + b"\n" + web.joinpath("watch.css").read_bytes()}


def watch_html(dashboard_page: str, body: str) -> str:
    """The watch page: the dashboard page's head (its style sheet and script names, which :func:`watch_web` serves as the
    watch's) titled "votebench · watch", then the watch's own ``body`` (``<body>`` to the end).

    >>> watch_html("<html><head><title>votebench · live</title></head><body>x</body></html>", "<body>y</body></html>")
    '<html><head><title>votebench · watch</title></head><body>y</body></html>'
    """
    head = dashboard_page[: dashboard_page.index("<body>")]
    return head.replace("<title>votebench · live</title>", "<title>votebench · watch</title>") + body
