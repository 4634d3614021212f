"""Progress of long commands: the engine names the stage it is in, the command line shows it as one bar.

The engine marks its stages with :func:`stage` (``with stage("bootstrap borda", total=200) as advance:
... advance(k)``); this costs nothing while no display is active.  The command line activates a display
with :func:`shown` when stderr is a terminal: after ``delay`` seconds (a short command shows nothing) one
bar (tqdm) appears on that stream with the innermost stage, its count and the time elapsed, redrawn a few
times a second from a helper thread (so a long stage without counts still shows time passing), and is
erased when the command ends.

Examples
--------
>>> with stage("figures", total=3) as advance:
...     advance(1)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

__all__ = ["active", "message", "shown", "stage"]

_display: _Display | None = None


class _Display:
    """The stack of open stages and the one bar that shows the innermost."""

    def __init__(self, stream: IO[str], delay: float, interval: float, label: str | None) -> None:
        self.stream, self.delay, self.interval = stream, delay, interval
        self.stages: list[list[Any]] = [[label, None, 0]] if label else []  # [name, total, done]
        self.bar: Any = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.started = time.time()
        self.thread = threading.Thread(target=self._run, name="votebench-progress", daemon=True)

    def _run(self) -> None:
        if self.stop.wait(self.delay):
            return
        while True:
            with self.lock:
                self._draw()
            if self.stop.wait(self.interval):
                return

    def _draw(self) -> None:
        if not self.stages:
            return
        _, total, done = self.stages[-1]
        name = " > ".join(str(e[0]) for e in self.stages)
        fmt = "{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}]" if total else "{desc} [{elapsed}]"
        desc = f"votebench: {name}"
        size = shutil.get_terminal_size()  # a terminal of unknown size (0 x 0, which tqdm leaves blank): 80 x 24
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(file=self.stream, leave=False, ncols=size.columns, nrows=size.lines, mininterval=0.0,
                            total=total, desc=desc, bar_format=fmt, delay=1e-9)  # delay: no draw before start_t is set
            self.bar.start_t = self.started  # elapsed: since the command started
        self.bar.ncols, self.bar.nrows = size.columns, size.lines
        self.bar.bar_format = fmt
        self.bar.total = total
        self.bar.n = min(done, total) if total else done
        self.bar.set_description_str(desc, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        with self.lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None


def active() -> bool:
    """Whether a display is showing the stages (:func:`shown`)."""
    return _display is not None


@contextlib.contextmanager
def stage(name: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """Mark the work inside the ``with`` block as stage ``name`` (of ``total`` steps); yields ``advance(n=1)``.

    Stages nest: an inner stage is shown until it ends, then the outer one again.
    """
    d = _display
    if d is None:
        yield _ignore
        return
    entry: list[Any] = [str(name), int(total) if total else None, 0]
    with d.lock:
        d.stages.append(entry)

    def advance(n: int = 1) -> None:
        entry[2] += int(n)

    try:
        yield advance
    finally:
        with d.lock:
            if d.bar is not None and entry[1] and d.stages and d.stages[-1] is entry:
                d._draw()  # a counted stage shorter than the redraw interval is still shown once, finished
            d.stages[:] = [e for e in d.stages if e is not entry]


def message(text: str, stream: IO[str] | None = None) -> None:
    """Print the line ``text`` on ``stream`` (default stderr) without garbling a bar being shown there."""
    import sys

    out = sys.stderr if stream is None else stream
    d = _display
    if d is None or d.stream is not out:
        print(text, file=out, flush=True)
        return
    with d.lock:
        if d.bar is not None:
            d.bar.clear()
        print(text, file=out, flush=True)
        if d.bar is not None:
            d.bar.refresh()


def _ignore(n: int = 1) -> None:
    return None


@contextlib.contextmanager
def shown(stream: IO[str], *, delay: float | None = None, interval: float = 0.2, label: str | None = None) -> Iterator[None]:
    """Show the stages on ``stream`` as one bar, from ``delay`` seconds on, until the ``with`` block ends.

    ``label`` (e.g. the command's name) is the outermost stage: shown, with the time elapsed, between stages.

    ``delay`` defaults to 2 s (``VOTEBENCH_PROGRESS_DELAY`` in seconds overrides it, e.g. for tests).
    """
    global _display
    if delay is None:
        try:
            delay = float(os.environ.get("VOTEBENCH_PROGRESS_DELAY", "2"))
        except ValueError:
            delay = 2.0
    if _display is not None:  # already shown (a command run from a command)
        yield
        return
    d = _Display(stream, float(delay), float(interval), label)
    _display = d
    d.thread.start()
    try:
        yield
    finally:
        _display = None
        d.close()
