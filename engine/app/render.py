"""Saving figures, and other self-contained work, inline or in worker processes while the report goes on.

Drawing a figure with a few hundred labels into PNG and SVG takes seconds of pure-Python matplotlib,
which holds the interpreter; the numbers of the next section do not depend on it.  Inside
:func:`figure_writer`, :func:`save_figure` hands a figure whose drawing the cost model says is worth
it to one spawned worker process (the figure pickled, drawn and written there, in the order given), and
the block ends only when every file is written -- an error in the worker is raised there, so the report's
folder is never published half-drawn.  Small figures, or a machine with one core, save inline.  Either
way the files are the same bytes: the same figure, the same settings (:data:`SAVE_RC`), the same
format order.  :func:`run_aside` does the same for a whole computation (the report's task-subset curves):
a pure function of picklable arguments, started early in a worker and collected where it is needed.
"""

from __future__ import annotations

import contextlib
import contextvars
import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from engine.kernels.costs import Cost, Sizes, choose, register_path
from engine.progress import stage

__all__ = ["CORES_ENV", "SAVE_RC", "Deferred", "draw_and_save", "draw_figure", "figure_writer", "run_aside", "save_figure"]

#: matplotlib settings of every saved file: text as text in SVG, fixed SVG ids, TrueType in PDF
SAVE_RC = {"svg.fonttype": "none", "svg.hashsalt": "votebench", "pdf.fonttype": 42}

_TEXT_SECONDS = 1.0e-3  # per text artist and format: layout and drawing (cProfile of a 300 x 80 report)
_FIGURE_SECONDS = 1.0  # per figure and format besides its texts (a 73-text figure: 2.5 s for PNG + SVG)
_PICKLE_SECONDS = 0.05  # per figure: pickling here, unpickling there
_START_SECONDS = 2.0  # starting the worker: a Python process importing matplotlib


def _inline(z: Sizes) -> Cost:
    """``systems`` = text artists of the figure, ``judges`` = formats: drawn here, on the report's path."""
    return Cost(seconds=z.judges * (_FIGURE_SECONDS + z.systems * _TEXT_SECONDS), bytes=0.0)


def _process(z: Sizes) -> Cost:
    """Drawn by the worker while the report computes: this process pays the pickling (and the start, once:
    ``fits`` = 1 when the worker is not running yet)."""
    return Cost(seconds=_PICKLE_SECONDS + z.fits * _START_SECONDS, bytes=0.0)


register_path("figure_save", "inline", _inline)
register_path("figure_save", "process", _process)

_EVAL_SECONDS = 4.2e-6  # per system and rule evaluation of a subset curve (300 x 80 table, 31,500 evaluations)


def _curves_inline(z: Sizes) -> Cost:
    """``fits`` rule evaluations on ``systems`` systems, here, on the report's path."""
    return Cost(seconds=z.fits * z.systems * _EVAL_SECONDS, bytes=0.0)


def _curves_process(z: Sizes) -> Cost:
    """The same in a worker, beside the other sections: this process pays the start of a worker."""
    return Cost(seconds=_START_SECONDS, bytes=0.0)


register_path("subset_curves", "inline", _curves_inline)
register_path("subset_curves", "process", _curves_process)


def _save(fig: Any, targets: Sequence[tuple[str, str]], rc: dict[str, Any]) -> None:
    """Write ``fig`` to every ``(path, format)`` in order under the settings ``rc``; laid out once, by the first
    format's draw."""
    import matplotlib

    with matplotlib.rc_context(rc):  # type: ignore[arg-type]  # keys checked by matplotlib at run time
        for target, ext in targets:
            fig.savefig(target, format=ext, dpi=110 if ext == "png" else None,
                        metadata={"Date": None} if ext in ("svg", "pdf") else None)
            if fig.get_layout_engine() is not None:
                fig.set_layout_engine("none")


def _save_pickled(data: bytes, targets: Sequence[tuple[str, str]], rc: dict[str, Any]) -> None:
    """The worker's side of :func:`save_figure`."""
    _save(pickle.loads(data), targets, rc)


def draw_and_save(draw: Callable[..., Any], targets: Sequence[tuple[str, str]], narrow: Sequence[tuple[str, str]],
                  fits_px: int, dpi: float, rc: dict[str, Any]) -> bool:
    """Build ``draw(narrow=False)`` and write it to ``targets``; when ``narrow`` is given and the figure is wider than
    ``fits_px`` pixels at ``dpi``, build ``draw(narrow=True)`` (the layout of a phone) and write it to ``narrow``.
    Returns whether the phone layout was written.  A pure function of picklable arguments: run here or in a worker."""
    wide = draw(narrow=False)
    made = bool(narrow) and round(wide.get_figwidth() * dpi) > fits_px
    _save(wide, targets, rc)
    wide.clear()
    if made:
        small = draw(narrow=True)
        _save(small, narrow, rc)
        small.clear()
    return made


def _draw_text(draw: Callable[..., Any], targets: Sequence[tuple[str, str]], narrow: Sequence[tuple[str, str]],
               fits_px: int, dpi: float, rc: dict[str, Any], shown: str) -> str:
    """:func:`draw_and_save`, then ``shown`` if the phone layout was written, else ``""``."""
    return shown if draw_and_save(draw, targets, narrow, fits_px, dpi, rc) else ""


def _warm() -> None:
    """Import what drawing a report's figures needs (a worker's start, done while the report reads its input)."""
    import matplotlib.figure  # noqa: F401
    import xarray  # noqa: F401  # the figures' data

    import engine.app.plots  # noqa: F401


class _Writer:
    """The figures of one :func:`figure_writer` block: a worker started on the first figure worth it."""

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel
        self.pool: ProcessPoolExecutor | None = None
        self.jobs: list[Future[Any]] = []
        self.deferred: dict[str, Future[Any]] = {}

    def workers(self) -> ProcessPoolExecutor:
        """Two spawned workers (started once): figures in order, and a computation beside them."""
        if self.pool is None:
            self.pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
        return self.pool

    def save(self, fig: Any, targets: Sequence[tuple[str, str]]) -> None:
        from matplotlib.text import Text

        path = "inline"
        if self.parallel:
            texts = len(fig.findobj(Text))
            path = choose("figure_save", Sizes(systems=texts, judges=len(targets), fits=int(self.pool is None)))
        if path == "inline":
            _save(fig, targets, dict(SAVE_RC))
            return
        self.jobs.append(self.workers().submit(_save_pickled, pickle.dumps(fig), list(targets), dict(SAVE_RC)))

    def defer(self, fn: Callable[..., Any], *args: Any) -> str:
        """Run ``fn(*args)`` in the worker (the figures' order); a token standing for its result in the page's text
        until :meth:`resolve` (after the block)."""
        token = f"\x00deferred-{len(self.deferred)}\x00"
        job = self.workers().submit(fn, *args)
        self.jobs.append(job)
        self.deferred[token] = job
        return token

    def resolve(self, value: Any) -> Any:
        """``value`` (strings in tuples and lists) with every token replaced by its job's result (a string)."""
        if isinstance(value, str):
            for token, job in self.deferred.items():
                if token in value:
                    value = value.replace(token, str(job.result()))
            return value
        if isinstance(value, (tuple, list)):
            return type(value)(self.resolve(v) for v in value)
        return value

    def wait(self) -> None:
        if self.jobs:
            with stage(f"writing {len(self.jobs)} figures"):
                for job in self.jobs:
                    job.result()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


_CURRENT: contextvars.ContextVar[_Writer | None] = contextvars.ContextVar("figure_writer", default=None)


#: environment variable: the cores a report may use (1: everything in this process)
CORES_ENV = "VOTEBENCH_CORES"


def _cores() -> int:
    """The cores this process may run on, or :data:`CORES_ENV` when set to a whole number."""
    given = os.environ.get(CORES_ENV, "").strip()
    if given.isdigit():
        return max(1, int(given))
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return os.cpu_count() or 1


def _spawnable() -> bool:
    """Whether a spawned worker can start: it re-imports the main script, which a script read from standard input
    (``python - < script``) does not have as a file; an interactive session or ``python -m``/``-c`` is fine."""
    import sys

    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)


@contextlib.contextmanager
def figure_writer(*, parallel: bool | None = None) -> Iterator[Deferred]:
    """Figures saved inside the block may be drawn by a second process (default: when this process may run
    on two cores or more); on leaving, every file is written, or the worker's error is raised.  The block gets
    the :class:`Deferred` results of :func:`draw_figure`, to fill into the page after the block."""
    writer = _Writer(_cores() > 1 and _spawnable() if parallel is None else parallel)
    token = _CURRENT.set(writer)
    try:
        if writer.parallel:  # the worker starts now, beside the reading of the input, not at the first figure
            writer.workers().submit(_warm)
        yield Deferred(writer)
        writer.wait()
    finally:
        _CURRENT.reset(token)
        writer.close()


class Deferred:
    """The results of the figures drawn by the worker of one :func:`figure_writer` block, known once it ends."""

    def __init__(self, writer: _Writer) -> None:
        self._writer = writer

    def fill(self, value: Any) -> Any:
        """``value`` (strings, in tuples and lists) with each stand-in of :func:`draw_figure` replaced by its text;
        call after the block."""
        return self._writer.resolve(value)


def draw_figure(draw: Callable[..., Any], targets: Sequence[tuple[str | Path, str]],
                narrow: Sequence[tuple[str | Path, str]], *, fits_px: int, dpi: float, shown: str) -> str:
    """:func:`draw_and_save`, then ``shown`` if the phone layout was written (else ``""``): here, or, in a parallel
    :func:`figure_writer` block, by the worker (which builds the figure too, off this process's path): then a
    stand-in for that text, filled in by :meth:`Deferred.fill` after the block."""
    writer = _CURRENT.get()
    pairs = [(str(p), e) for p, e in targets]
    small = [(str(p), e) for p, e in narrow]
    if writer is None or not writer.parallel:
        return _draw_text(draw, pairs, small, fits_px, dpi, dict(SAVE_RC), shown)
    return writer.defer(_draw_text, draw, pairs, small, fits_px, dpi, dict(SAVE_RC), shown)


def save_figure(fig: Any, targets: Sequence[tuple[str | Path, str]]) -> None:
    """Save ``fig`` to every ``(path, format)``: inline, or by the worker of the enclosing
    :func:`figure_writer` when the cost model prefers it (the files exist once that block ends)."""
    writer = _CURRENT.get()
    pairs = [(str(p), e) for p, e in targets]
    if writer is None:
        _save(fig, pairs, dict(SAVE_RC))
    else:
        writer.save(fig, pairs)


def run_aside(problem: str, shape: Sizes, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Callable[[], Any]:
    """Start ``fn(*args, **kwargs)`` in a worker of the enclosing :func:`figure_writer` when the cost model
    prefers it for ``problem`` at ``shape`` (else run it now); returns the function that gives its result
    (or raises its error).  ``fn`` must be importable by name and its arguments picklable."""
    writer = _CURRENT.get()
    if writer is None or not writer.parallel or choose(problem, shape) == "inline":
        try:
            value = fn(*args, **kwargs)
        except Exception as exc:  # raised where the result is asked for, as from a worker
            error = exc

            def fail() -> Any:
                raise error

            return fail
        return lambda: value
    return writer.workers().submit(fn, *args, **kwargs).result
