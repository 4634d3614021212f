"""The page of ``votebench watch --dashboard``: the dashboard server of :mod:`engine.app.dashboard` showing a watch.

:class:`WatchLive` stands where the dashboard keeps its :class:`~engine.app.dashboard.LiveStore`: the server asks it
for the snapshot a :class:`~engine.watch.Watcher` last published (``/api/snapshot``; ``/api/stream`` tells the page
when it changes, so the page updates without a reload).  :func:`watch_web` gives the page's own files.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

__all__ = ["WatchLive", "watch_html", "watch_web"]


class WatchLive:
    """The live view of a watch for the dashboard's hub (``update``, ``snapshot``, ``message``, ``busy``).

    Parameters
    ----------
    watcher : engine.watch.Watcher
        The watch whose ``snapshot`` and ``version`` are shown (read from the server's thread: the watcher replaces
        its snapshot as a whole, never edits it in place).
    """

    def __init__(self, watcher: Any) -> None:
        self.watcher = watcher
        self.seen = -1
        self.message: str | None = None
        self.busy = False
        self.dask_dashboard: str | None = None

    def update(self, *, strict: bool = False, force: bool = False) -> bool:
        """Whether the watch published since the last call."""
        version = self.watcher.version
        changed = version != self.seen
        self.seen = version
        return changed

    def snapshot(self) -> dict[str, Any]:
        """A copy of the last snapshot (the hub adds its ``version``), or a waiting one before the first."""
        snap = self.watcher.snapshot
        if snap is None:
            return {"kind": "watch", "status": "waiting", "progress": {}, "ranking": [], "changes": [],
                    "dir": str(self.watcher.root), "store": str(self.watcher.store), "waiting": list(self.watcher.waiting),
                    "rejected": [], "log": [], "provenance": {}}
        return {**snap, "watch_version": self.watcher.version}


def watch_web() -> dict[str, bytes]:
    """The page's files under the names the dashboard serves: ``index.html``, ``dashboard.js``, ``dashboard.css``
    (the dashboard's style sheet, then the watch's additions)."""
    web = files("engine.app").joinpath("web")
    return {"index.html": watch_html(web.joinpath("index.html").read_text(encoding="utf-8"),
                                     web.joinpath("watch_body.html").read_text(encoding="utf-8")).encode("utf-8"),
            "dashboard.js": web.joinpath("watch.js").read_bytes(),
            "dashboard.css": web.joinpath("dashboard.css").read_bytes() + b"\n" + web.joinpath("watch.css").read_bytes()}


def watch_html(dashboard_page: str, body: str) -> str:
    """The watch page: the dashboard page's head (its style sheet and script names, which :func:`watch_web` serves as the
    watch's) titled "votebench · watch", then the watch's own ``body`` (``<body>`` to the end).

    >>> watch_html("<html><head><title>votebench · live</title></head><body>x</body></html>", "<body>y</body></html>")
    '<html><head><title>votebench · watch</title></head><body>y</body></html>'
    """
    head = dashboard_page[: dashboard_page.index("<body>")]
    return head.replace("<title>votebench · live</title>", "<title>votebench · watch</title>") + body
