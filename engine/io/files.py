"""Writing outputs safely: atomic files and folders, stray temporary files, and a writer lock.

Everything votebench writes (``--output`` files, reports, zarr stores,
results stores) is first built under a temporary name in the target's folder
and then renamed into place, so a killed or failed run leaves either the old
target or the new one, never half of one.  Temporary names are
``.<target name>.tmp-<pid>-<random>``: a later run removes the ones whose
process is gone (:func:`remove_strays`), and only those.  Files and folders
get the usual permissions (``0o666`` / ``0o777`` less the umask), not the
private ``0o600`` of :func:`tempfile.mkstemp`.

:class:`WriterLock` keeps two processes from writing one results store at the
same time; the kernel releases it when its holder dies, so a lock left by a
killed process never blocks the next run.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from engine.errors import VotebenchError

__all__ = ["STORAGE_ERRNOS", "WriterLock", "atomic_write_text", "make_temp_dir", "publish_dir", "remove_strays",
           "storage_errors", "storage_oserror", "temp_name"]

#: what a full disk, a read-only file system or missing permissions raise: said in one line by :func:`storage_errors`
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM})

def temp_name(target: str | os.PathLike[str]) -> Path:
    """A fresh temporary path beside ``target``: ``.<name>.tmp-<pid>-<8 hex digits>``."""
    t = Path(target)
    return t.with_name(f".{t.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except OSError:
        return True
    return True


def remove_strays(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files and folders a killed write of ``target`` left beside it.

    Only names votebench makes are touched: ``.<name>.tmp-<pid>-<hex>`` whose
    process no longer runs (on this machine).  (The ``.<name>.XXXXXXXX`` names of
    ``tempfile.mkstemp`` that early versions used are left alone: a user's own
    ``.<name>.original`` or ``.<name>.20241231`` looks the same.)

    Returns
    -------
    list of pathlib.Path
        What was removed.
    """
    t = Path(target)
    folder = t.parent  # Path("r.json").parent is Path(".")
    ours = re.compile(rf"^\.{re.escape(t.name)}\.tmp-(\d+)-[0-9a-f]{{8}}$")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = ours.match(entry.name)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        p = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
        except OSError:
            pass  # not ours to fight over: another process may be removing it too
    return removed


def atomic_write_text(target: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` through a temporary file renamed into place.

    Removes the strays of earlier killed writes of ``target`` first.  The file
    gets the usual permissions (``0o666`` less the umask).  A ``target`` that is
    a device, a FIFO or a socket is a stream: it is written directly, never
    replaced (``--output /dev/null`` stays the device), and so is a file reached
    through ``/dev/stdout`` or ``/proc/self/fd/N`` (appended to: it is the shell's
    ``> file``).  Any other symbolic link is followed: the file it points to is
    replaced atomically and the link stays.

    Raises
    ------
    VotebenchError
        When the folder does not exist or the file cannot be written (one line).
    """
    t = Path(target)
    try:
        mode = os.stat(t).st_mode  # follows symbolic links
    except FileNotFoundError:  # no file yet, or a dangling link (its target is created)
        mode = None
    except OSError as exc:  # e.g. a loop of symbolic links
        raise VotebenchError(f"{target}: cannot write output ({exc.strerror or exc})") from None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        _write_stream(target, text)
        return
    if mode is not None and stat.S_ISREG(mode) and _open_file_link(t):  # /dev/stdout of `> file` or `>> file`
        _write_stream(target, text, append=True)
        return
    if t.is_symlink():
        t = Path(os.path.realpath(t))  # the link's final target is replaced, the link itself stays
    if not t.parent.exists():
        raise VotebenchError(f"{target}: folder {str(t.parent)!r} does not exist")
    remove_strays(t)
    tmp = temp_name(t)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise VotebenchError(f"{target}: cannot write output ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, t)
    except OSError as exc:  # e.g. the target is a directory, disk full: one-line error, no traceback
        tmp.unlink(missing_ok=True)
        raise VotebenchError(f"{target}: cannot write output ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _open_file_link(path: Path) -> bool:
    """Whether ``path`` reaches its file through the kernel's links to open files (``/dev/stdout``, ``/dev/fd/N``,
    ``/proc/self/fd/N``): the file is another process's open output, to be written into, not replaced."""
    p = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit of links followed
        if not os.path.islink(p):
            return False
        if p.startswith(("/dev/", "/proc/")):  # a link of the kernel's: /dev/stdout, /dev/fd/1, /proc/self/fd/1
            return True
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def _write_stream(target: str | os.PathLike[str], text: str, *, append: bool = False) -> None:
    """Write ``text`` into the special file ``target`` (a device, a FIFO) as ``>`` would: opened, never created or replaced.

    A FIFO without a reader blocks until one opens it, as with the shell.  ``append``: at the end of the file
    (an open output reached through ``/dev/stdout``).
    """
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | (os.O_APPEND if append else 0))
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
    except OSError as exc:  # e.g. the reader of a FIFO went away (EPIPE), a socket
        raise VotebenchError(f"{target}: cannot write output ({exc.strerror or exc})") from None


def storage_oserror(exc: BaseException) -> OSError | None:
    """The :class:`OSError` of a full disk, a read-only file system or missing permissions (:data:`STORAGE_ERRNOS`)
    that ``exc`` is or was raised from (its causes and contexts), else ``None``."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in STORAGE_ERRNOS:
            return e
        e = e.__cause__ or e.__context__
    return None


def _belongs_to(name: str | os.PathLike[str], target: Path) -> bool:
    """Whether the file ``name`` is ``target``, inside it, or one of its temporary or lock files beside it."""
    p = Path(os.path.abspath(name))
    t = Path(os.path.abspath(target))
    return any(q == t or (q.parent == t.parent and q.name.startswith(f".{t.name}.")) for q in (p, *p.parents))


@contextmanager
def storage_errors(target: str | os.PathLike[str], what: str, then: str) -> Iterator[None]:
    """Turn a full disk, a read-only file system or missing permissions while writing ``target`` into one line.

    The :class:`VotebenchError` reads ``cannot write WHAT TARGET: <problem>; THEN`` (e.g. ``no space left on
    device``, ``read-only file system``); an error on a file that is not ``target``'s (an input) names that file.
    Any other error passes unchanged.

    Parameters
    ----------
    target : path-like
        The store being written.
    what : str
        How the message names it (``"results store"``).
    then : str
        What the user can do (``"re-run to resume"``).
    """
    try:
        yield
    except VotebenchError:
        raise
    except Exception as exc:
        err = storage_oserror(exc)
        if err is None:
            raise
        problem = os.strerror(err.errno).lower() if err.errno is not None else str(err)
        if isinstance(err.filename, str) and not _belongs_to(err.filename, Path(target)):
            raise VotebenchError(f"{err.filename}: {problem}") from None
        raise VotebenchError(f"cannot write {what} {target}: {problem}; {then}") from None


def make_temp_dir(target: str | os.PathLike[str]) -> Path:
    """Create an empty temporary folder beside ``target`` (usual permissions), after removing earlier strays."""
    t = Path(target)
    remove_strays(t)
    while True:
        tmp = temp_name(t)
        try:
            tmp.mkdir(mode=0o777)
            return tmp
        except FileExistsError:  # pragma: no cover - 32 random bits
            continue


def publish_dir(tmp: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Move the finished folder ``tmp`` to ``target``, replacing an existing ``target`` (moved aside, then removed).

    At every moment ``target`` is the old folder, absent, or the new one; a
    folder moved aside and not yet removed carries a temporary name that
    :func:`remove_strays` removes later.
    """
    t = Path(target)
    if t.exists():
        old = temp_name(t)
        os.replace(t, old)
        os.replace(tmp, t)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, t)


class WriterLock:
    """An exclusive lock on ``target`` (a path that may not exist yet), held in ``.<name>.lock`` beside it.

    Taken with ``flock``: the kernel releases it when the holding process
    ends, however it ends, so a lock file left by a killed process is taken
    over by the next run.  The lock file holds the holder's pid (for the
    message) and is removed on release.

    Parameters
    ----------
    target : path-like
        What the lock protects (a results store).
    what : str
        How the message names ``target``.
    """

    def __init__(self, target: str | os.PathLike[str], what: str = "store") -> None:
        self.target = Path(target)
        self.path = self.target.with_name(f".{self.target.name}.lock")
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> WriterLock:
        """Take the lock, or raise :class:`VotebenchError` naming the process that holds it."""
        import fcntl

        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as exc:
                raise VotebenchError(f"{self.target}: cannot lock the {self.what} ({exc.strerror or exc})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                try:
                    holder = os.read(fd, 64).decode("ascii", "replace").strip()
                finally:
                    os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise VotebenchError(f"{self.target}: cannot lock the {self.what} ({exc.strerror or exc})") from None
                who = f"process {holder}" if holder.isdigit() else "another process"
                raise VotebenchError(
                    f"{self.target}: {who} is writing this {self.what}; wait until it ends (a re-run then resumes) "
                    f"or use another {self.what}") from None
            try:  # the file we locked must still be the lock file (a releasing holder may have removed it meanwhile)
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as exc:  # a full disk: the lock is not taken
            os.close(fd)
            raise VotebenchError(f"{self.target}: cannot lock the {self.what} ({exc.strerror or exc})") from None
        self._fd = fd
        return self

    def release(self) -> None:
        """Remove the lock file and release the lock (no-op when not held)."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # closing releases the flock
            self._fd = None

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
