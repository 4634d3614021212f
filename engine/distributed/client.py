"""The dask client: connecting to a scheduler, the embedded in-process cluster, and how engine tasks run on it.

Engine tasks run through :func:`run_task`: dask collections computed inside a
task run single-threaded in it (:func:`single_threaded`), and a
:class:`~engine.errors.VotebenchError` raised in the task comes back as a value
(:class:`TaskFailed`) that :func:`task_result` raises again on the client -- a
one-line message, never a worker traceback.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from engine.errors import VotebenchError

__all__ = ["MATCHED_PACKAGES", "LocalPool", "TaskFailed", "check_address", "check_handshake", "check_versions", "connect",
           "embedded_client",
           "run_task", "single_threaded", "task_result", "version_mismatches"]

#: packages whose versions must be the same on the client, the scheduler and every worker: the ones that serialise
#: tasks and results (a mismatch fails late, inside a worker, or silently) and the ones that compute them (numpy's
#: sorting and reductions, votebench itself), so that a cluster run gives the same bits as a local one.
#: Python is compared by major.minor.
MATCHED_PACKAGES = ("python", "dask", "distributed", "cloudpickle", "msgpack", "numpy", "votebench")


def connect(scheduler: str | None) -> Any | None:
    """A client of the scheduler at ``scheduler`` (else ``DASK_SCHEDULER_ADDRESS``); ``None`` when neither is set.

    Raises
    ------
    VotebenchError
        When no scheduler answers within ``distributed.comm.timeouts.connect``.
    """
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if not address:
        return None  # decided before importing distributed (a local command need not load it)
    import dask
    from distributed import Client

    check_address(address)
    timeout = dask.config.get("distributed.comm.timeouts.connect")
    check_handshake(address, timeout)
    try:  # the connection timeout is dask's own setting (distributed.comm.timeouts.connect, 30 s by default)
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else repr(exc)
        raise VotebenchError(f"cannot connect to dask scheduler {address!r} ({why})") from None
    try:
        check_versions(client, address)
    except BaseException:
        client.close()
        raise
    return client


def version_mismatches(versions: dict[str, Any], packages: tuple[str, ...] = MATCHED_PACKAGES) -> list[str]:
    """What differs between the client and the scheduler or a worker in ``versions`` (``Client.get_versions()``'s form).

    Returns one phrase per package that differs, e.g. ``"dask 2026.8.0 here, 2026.3.0 on worker tcp://10.0.0.5:4001"``,
    in the order of ``packages``; empty when everything matches.

    Examples
    --------
    >>> here = {"packages": {"dask": "2026.8.0", "python": "3.11.7.final.0"}}
    >>> there = {"packages": {"dask": "2026.3.0", "python": "3.11.9.final.0"}}
    >>> version_mismatches({"client": here, "scheduler": here, "workers": {"tcp://w:1": there}})
    ['dask 2026.8.0 here, 2026.3.0 on worker tcp://w:1']
    """

    def norm(name: str, value: Any) -> str:
        text = "not installed" if value is None else str(value)
        return ".".join(text.split(".")[:2]) if name == "python" and value is not None else text

    mine = versions.get("client", {}).get("packages", {})
    others = [("the scheduler", versions.get("scheduler") or {})]
    others += [(f"worker {addr}", info or {}) for addr, info in sorted((versions.get("workers") or {}).items())]
    out = []
    for name in packages:
        here = norm(name, mine.get(name))
        for where, info in others:
            there = norm(name, (info.get("packages") or {}).get(name))
            if there != here:
                out.append(f"{name} {here} here, {there} on {where}")
                break  # one phrase per package keeps the message one line
    return out


def check_versions(client: Any, address: str) -> None:
    """Refuse a cluster whose scheduler or workers run other versions of :data:`MATCHED_PACKAGES` than this client.

    Workers that join later are not checked here (the scheduler's own check warns about them).

    Raises
    ------
    VotebenchError
        One line naming the first differing packages and where; the fix is one environment for all
        (``cluster/constraints.txt``).
    """
    wanted = [p for p in MATCHED_PACKAGES if p not in ("python", "dask", "distributed", "cloudpickle", "msgpack", "numpy")]
    differ = version_mismatches(client.get_versions(packages=wanted))
    if differ:
        shown = "; ".join(differ[:3]) + (f"; and {len(differ) - 3} more" if len(differ) > 3 else "")
        raise VotebenchError(f"dask cluster {address!r} runs other versions than this client ({shown}): install the same "
                             "versions everywhere, e.g. with cluster/constraints.txt")


def check_handshake(address: str, timeout: Any) -> None:
    """Connect to ``address`` and exchange dask's handshake within ``timeout``, else one line.

    ``distributed.Client`` waits without limit for the handshake of a port that accepts connections but is not a
    dask scheduler (an HTTP server, another service), or reads its bytes as a frame length and fails allocating
    exabytes; this probe bounds the whole exchange and names the problem.
    """
    import asyncio

    from dask.utils import parse_timedelta
    from distributed.comm import connect as comm_connect

    seconds = float(parse_timedelta(timeout, default="seconds") or 30.0)
    _refused(address, seconds)
    outcome: dict[str, BaseException | None] = {}

    async def probe() -> None:
        comm = await asyncio.wait_for(comm_connect(address, timeout=seconds), seconds)
        await comm.close()

    def run() -> None:  # in a thread of its own: works whether or not the caller runs an event loop
        try:
            asyncio.run(probe())
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - reported below as one line
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="votebench-scheduler-probe", daemon=True)
    thread.start()
    thread.join(seconds + 5.0)
    if "error" in outcome and outcome["error"] is None:
        return
    exc = outcome.get("error")
    if exc is None or isinstance(exc, asyncio.TimeoutError | TimeoutError):
        why = f"no dask handshake within {seconds:g} s: is this the scheduler's port (8786 by default)?"
    elif isinstance(exc, MemoryError | ValueError | TypeError | KeyError) or "deserializ" in str(exc).lower():
        why = "it answered, but not as a dask scheduler: is this the scheduler's port (8786 by default)?"
    else:
        why = (str(exc).splitlines() or [repr(exc)])[0] or type(exc).__name__
    raise VotebenchError(f"cannot connect to dask scheduler {address!r} ({why})")


def _refused(address: str, seconds: float) -> None:
    """A plain TCP address where nothing listens: one line at once (dask would retry until its timeout)."""
    import socket

    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    scheme, loc = parse_address(address)
    if scheme != "tcp":
        return
    host, port = parse_host_port(loc)
    try:
        socket.create_connection((host, port), timeout=seconds).close()
    except ConnectionRefusedError:
        raise VotebenchError(f"cannot connect to dask scheduler {address!r} (connection refused: nothing listens on "
                             f"{host}:{port}; start the scheduler, or check the address)") from None
    except OSError:
        pass  # unreachable or slow: the handshake below gives up after the timeout and says so


def check_address(address: str) -> None:
    """Refuse, at once, a scheduler address that cannot work: no port, an unknown scheme, a host name that does not resolve.

    (A ``distributed.Client`` given such an address fails only after its
    connection timeout and then leaves a half-made client behind.)

    Raises
    ------
    VotebenchError
        Naming the address and what is wrong with it.
    """
    import socket

    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import get_backend

    def bad(why: str) -> VotebenchError:
        return VotebenchError(f"cannot connect to dask scheduler {address!r} ({why}); give an address like tcp://HOST:8786")

    try:
        scheme, loc = parse_address(address)
        get_backend(scheme)
    except (ValueError, TypeError, ImportError) as exc:
        raise bad(str(exc).splitlines()[0] if str(exc) else "malformed address") from None
    if scheme in ("tcp", "tls", "ws", "wss"):
        try:
            host, port = parse_host_port(loc)
        except ValueError as exc:
            raise bad(str(exc)) from None
        try:
            socket.getaddrinfo(host, port)
        except (socket.gaierror, UnicodeError) as exc:
            raise bad(f"host {host!r} not found: {exc.strerror if isinstance(exc, OSError) else exc}") from None


class LocalPool:
    """The lightest scheduler of a local run: this process's threads, no cluster (what a sweep uses without a
    scheduler or a dashboard).  It takes the engine's tasks as a dask client does (``submit``, ``close``)."""

    def __init__(self, workers: int | None = None) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1, thread_name_prefix="votebench")

    def submit(self, fn: Any, *args: Any, pure: bool = False, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` in a thread; a :class:`concurrent.futures.Future`."""
        return self.pool.submit(fn, *args, **kwargs)

    def as_completed(self, futures: Any) -> Any:
        """The futures as they finish."""
        from concurrent.futures import as_completed

        return as_completed(futures)

    def close(self) -> None:
        """Stop: the blocks not started are dropped, the running ones finish."""
        self.pool.shutdown(wait=False, cancel_futures=True)


def embedded_client() -> Any:
    """An in-process local cluster (threads), the default when no scheduler is given; the caller closes it."""
    from distributed import Client

    return Client(processes=False, dashboard_address=":0", set_as_default=False)  # any free port: no clash


class _Synchronous:
    """Reference count of the tasks of this process inside :func:`single_threaded`, and the setting they replaced."""

    lock = threading.Lock()
    users = 0
    saved: Any = None


@contextmanager
def single_threaded() -> Iterator[None]:
    """Dask collections computed inside engine tasks run single-threaded in the task, never through the cluster.

    Without this, a ``.compute()`` inside a task on a worker (opening a store
    reads its coordinates; a large input stays lazy) would go through the
    worker's client to the scheduler and could deadlock a worker whose
    threads all wait.  Reference-counted, so concurrent tasks in one process
    restore the previous setting only when the last one finishes.
    """
    import dask

    state = _Synchronous
    with state.lock:
        if state.users == 0:
            state.saved = dask.config.set(scheduler="synchronous")
        state.users += 1
    try:
        yield
    finally:
        with state.lock:
            state.users -= 1
            if state.users == 0:
                state.saved.__exit__(None, None, None)
                state.saved = None


@dataclass(frozen=True)
class TaskFailed:
    """What :func:`run_task` returns for a task that raised a :class:`VotebenchError`: its message."""

    message: str


def run_task(fn: Callable[..., Any], *args: Any) -> Any:
    """Run an engine task (single-threaded dask inside); a :class:`VotebenchError` comes back as a :class:`TaskFailed`."""
    try:
        with single_threaded():
            return fn(*args)
    except VotebenchError as exc:
        return TaskFailed(str(exc))


def task_result(value: Any, prefix: str = "") -> Any:
    """The value of a task run by :func:`run_task`, or its :class:`VotebenchError` raised again (message after ``prefix``)."""
    if isinstance(value, TaskFailed):  # a user-facing error inside the task: one line, no worker traceback
        raise VotebenchError(prefix + value.message)
    return value
