"""Issue 23, output and storage seams: where outputs go, what a failing disk says, what output text can carry.

- ``--output FILE`` writes into a FIFO or a device (a stream) instead of replacing it by a regular file, and follows a
  symbolic link to the file it names (replaced atomically; the link stays a link);
- a full disk or a read-only store while ``sweep``, ``bootstrap --store``, ``convert`` or the writer lock writes is
  one line and exit 2, and a re-run after the fault resumes to the result of an undisturbed run;
- system and task names are escaped in the report's Markdown (and HTML) tables;
- ``votebench experiment --list`` reads titles without executing ``run.py``;
- the dashboard's token cookie is named for its port.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli

WIDE = "system,t1,t2,t3\nalpha,0.9,0.2,0.5\nbeta,0.4,0.8,0.6\ngamma,0.1,0.3,0.7\n"


@pytest.fixture
def scores(tmp_path) -> Path:
    p = tmp_path / "scores.csv"
    p.write_text(WIDE, encoding="utf-8")
    return p


def _regular_output(capsys, scores: Path, tmp_path: Path) -> bytes:
    """What ``votebench rank`` writes to a new regular file: the bytes a special file or a link target must get."""
    ref = tmp_path / "reference.txt"
    code, out, err = run_cli(capsys, "rank", scores, "--output", ref)
    assert code == 0, err
    data = ref.read_bytes()
    assert b"alpha" in data and b"gamma" in data
    return data


# ------------------------------------------------------------------------------------------- 1. --output targets
def test_output_into_a_fifo_streams_into_it(capsys, scores, tmp_path):
    """A FIFO stays a FIFO and its reader gets the bytes (before the fix it was replaced by a regular file)."""
    expected = _regular_output(capsys, scores, tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:  # blocks until the writer opens the FIFO
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code, out, err = run_cli(capsys, "rank", scores, "--output", fifo)
    reader.join(20)
    assert code == 0, err
    assert not reader.is_alive()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [expected]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "reference.txt", "scores.csv"]  # no temporary left


def test_output_into_a_character_device_keeps_the_device(capsys, scores, tmp_path):
    """A null device made in tmp_path (major 1, minor 3, as /dev/null on Linux) is written into, not replaced."""
    dev = tmp_path / "null"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        with open(dev, "wb") as fh:
            fh.write(b"probe")
    except (OSError, AttributeError) as exc:  # not root, or no device nodes here
        pytest.skip(f"cannot make or open a device node here ({exc})")
    before = os.lstat(dev)
    code, out, err = run_cli(capsys, "rank", scores, "--output", dev)
    assert code == 0, err
    after = os.lstat(dev)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == os.makedev(1, 3) and after.st_ino == before.st_ino
    assert dev.read_bytes() == b""  # still the null device
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "scores.csv"]


def test_output_through_a_symlink_replaces_its_target_and_keeps_the_link(capsys, scores, tmp_path):
    expected = _regular_output(capsys, scores, tmp_path)
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "ranking.txt"
    target.write_text("old contents\n")
    link = tmp_path / "latest.txt"
    link.symlink_to(Path("real") / "ranking.txt")  # a relative link, as `ln -s` makes them
    code, out, err = run_cli(capsys, "rank", scores, "--output", link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "ranking.txt")
    assert target.read_bytes() == expected
    assert sorted(p.name for p in real_dir.iterdir()) == ["ranking.txt"]  # written beside the target, renamed onto it
    # a dangling link: the file it names is created, the link stays
    target.unlink()
    code, out, err = run_cli(capsys, "rank", scores, "--output", link)
    assert code == 0, err
    assert link.is_symlink() and target.read_bytes() == expected


def test_output_through_a_symlink_loop_is_one_line(capsys, scores, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    code, out, err = run_cli(capsys, "rank", scores, "--output", a)
    one_line_error(code, out, err, str(a), "symbolic links", prefix="votebench: error:")
    assert a.is_symlink() and b.is_symlink()


def test_output_replaces_a_regular_file_atomically(capsys, scores, tmp_path, monkeypatch):
    """A regular file is still replaced by a rename (a new inode), and a failed write leaves the old one."""
    expected = _regular_output(capsys, scores, tmp_path)
    out_file = tmp_path / "out.txt"
    out_file.write_text("old contents\n")
    ino = out_file.stat().st_ino
    code, out, err = run_cli(capsys, "rank", scores, "--output", out_file)
    assert code == 0, err
    assert out_file.read_bytes() == expected and not out_file.is_symlink()
    assert out_file.stat().st_ino != ino  # renamed into place, not rewritten in place
    out_file.write_text("old contents\n")

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    code, out, err = run_cli(capsys, "rank", scores, "--output", out_file)
    one_line_error(code, out, err, str(out_file), "No space left on device", prefix="votebench: error:")
    assert out_file.read_text() == "old contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "reference.txt", "scores.csv"]
