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

import errno
import json
import os
import re
import stat
import threading
from pathlib import Path

import pytest
import xarray as xr
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


# ------------------------------------------------------------------------------------------- 2. storage failures
SWEEP = """\
seed = 3
store = "{store}"

[input]
path = "{path}"

[[rules]]
name = "borda"

[[perturbations]]
kind = "bootstrap"
over = "tasks"
replicates = 40
block = 5
"""
N_BLOCKS = 8  # 40 replicates in blocks of 5


class DiskFault:
    """A disk that fills up (or turns read-only) while a store is written: from the ``after``-th opening for writing of
    a file under ``store`` whose path holds ``match``, every further write of a file under ``store`` fails with
    ``code``, as it would once a disk is full.  Files are opened through :meth:`pathlib.Path.open` (as zarr does)."""

    def __init__(self, monkeypatch, store: str, *, match: str = "", after: int = 0, code: int = errno.ENOSPC) -> None:
        self.store, self.match, self.after, self.code = store, match, after, code
        self.seen = 0
        self.failed = 0
        real = Path.open

        def fake_open(path: Path, mode: str = "r", *args, **kwargs):
            if any(c in mode for c in "wax+") and self.store in str(path):
                self.seen += self.match in str(path)
                if self.failed or self.seen > self.after:
                    self.failed += 1
                    raise OSError(self.code, os.strerror(self.code), str(path))
            return real(path, mode, *args, **kwargs)

        monkeypatch.setattr(Path, "open", fake_open)


@pytest.fixture
def sweep_input(tmp_path) -> Path:
    """Scores of 4 systems on 4 tasks with a sidecar (so that no note about directions joins the error line)."""
    p = tmp_path / "s.csv"
    p.write_text("system,t1,t2,t3,t4\na,1,2,3,4\nb,2,1,4,3\nc,3,3,1,1\nd,0,4,2,2\n", encoding="utf-8")
    (tmp_path / "s.meta.json").write_text(json.dumps({"higher_is_better": {f"t{i}": True for i in range(1, 5)}}))
    return p


def _same_stores(a: Path, b: Path) -> None:
    """Every group of the results stores ``a`` and ``b`` holds the same variables with the same values."""
    from conftest import load_all

    ga, gb = load_all(a), load_all(b)
    assert sorted(ga) == sorted(gb) and ga
    for g in ga:
        xr.testing.assert_equal(ga[g], gb[g])
        assert bool(ga[g]["done"].all())


def _blocks_computed(err: str) -> int:
    m = re.search(r"computed (\d+) of (\d+) blocks in this run", err)
    assert m and int(m.group(2)) == N_BLOCKS, err
    return int(m.group(1))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_sweep_on_a_full_or_read_only_disk_is_one_line_and_resumes(capsys, monkeypatch, tmp_path, sweep_input, code):
    reference = tmp_path / "reference.zarr"
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP.format(store=reference, path=sweep_input), encoding="utf-8")
    ok, out, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert ok == 0, err
    store = tmp_path / "store.zarr"
    with monkeypatch.context() as m:  # the disk fills up after 3 blocks are written
        fault = DiskFault(m, "store.zarr", match="/done/c/", after=3, code=code)
        one_line_error(*run_cli(capsys, "sweep", cfg, "--store", store, "--no-progress"), str(store),
                       os.strerror(code).lower(), "re-run to resume", prefix="votebench: error: cannot write results store")
        assert fault.failed >= 1
    assert not list(store.rglob("*.partial"))
    ok, out, err = run_cli(capsys, "sweep", cfg, "--store", store, "--no-progress")  # room again: the re-run resumes
    assert ok == 0, err
    assert _blocks_computed(err) == N_BLOCKS - 3
    _same_stores(store, reference)


def test_bootstrap_store_on_a_full_disk_is_one_line_and_resumes(capsys, monkeypatch, tmp_path, sweep_input):
    args = ("bootstrap", sweep_input, "--replicates", 40, "--block", 5, "--format", "json")
    ok, expected, err = run_cli(capsys, *args, "--store", tmp_path / "reference.zarr")
    assert ok == 0, err
    store = tmp_path / "store.zarr"
    with monkeypatch.context() as m:
        fault = DiskFault(m, "store.zarr", match="/done/c/", after=2)
        one_line_error(*run_cli(capsys, *args, "--store", store), str(store), "no space left on device",
                       "re-run to resume", prefix="votebench: error: cannot write results store")
        assert fault.failed >= 1
    ok, out, err = run_cli(capsys, *args, "--store", store)
    assert ok == 0, err
    assert out == expected
    _same_stores(store, tmp_path / "reference.zarr")
    assert json.loads(out)["replicates"] == 40


def test_creating_a_store_on_a_read_only_disk_is_one_line(capsys, monkeypatch, tmp_path, sweep_input):
    """The very first write of the store fails: one line, and no store or temporary folder is left."""
    store = tmp_path / "store.zarr"
    with monkeypatch.context() as m:
        fault = DiskFault(m, "store.zarr", code=errno.EROFS)
        one_line_error(*run_cli(capsys, "bootstrap", sweep_input, "--replicates", 10, "--store", store), str(store),
                       "read-only file system", prefix="votebench: error: cannot write results store")
        assert fault.failed == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "s.meta.json"]


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_the_writer_lock_on_a_read_only_disk_is_one_line(capsys, monkeypatch, tmp_path, sweep_input, code):
    cfg = tmp_path / "sweep.toml"
    store = tmp_path / "store.zarr"
    cfg.write_text(SWEEP.format(store=store, path=sweep_input), encoding="utf-8")
    real_open = os.open

    def fake_open(path, flags, *args, **kwargs):
        if str(path).endswith(".store.zarr.lock"):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(os, "open", fake_open)
        one_line_error(*run_cli(capsys, "sweep", cfg, "--no-progress"), str(store), "cannot lock the results store",
                       os.strerror(code), prefix="votebench: error:")
    assert not store.exists()


def test_a_full_disk_while_writing_the_lock_is_one_line(capsys, monkeypatch, tmp_path, sweep_input):
    """The lock file is created but the pid cannot be written into it: one line, and the lock is not left taken."""
    cfg = tmp_path / "sweep.toml"
    store = tmp_path / "store.zarr"
    cfg.write_text(SWEEP.format(store=store, path=sweep_input), encoding="utf-8")
    real_open, real_write = os.open, os.write
    lock_fds: set[int] = set()

    def fake_open(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if str(path).endswith(".store.zarr.lock"):
            lock_fds.add(fd)
        return fd

    def fake_write(fd, data):
        if fd in lock_fds:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    with monkeypatch.context() as m:
        m.setattr(os, "open", fake_open)
        m.setattr(os, "write", fake_write)
        one_line_error(*run_cli(capsys, "sweep", cfg, "--no-progress"), str(store), "cannot lock the results store",
                       "No space left on device", prefix="votebench: error:")
        assert lock_fds
    from engine.io.files import WriterLock

    with WriterLock(store, "results store"):  # not held by the failed run
        pass


LONG = "system,task,instance,score\n" + "".join(
    f"{s},{t},{k},{(3 * i + 5 * j + 7 * k) % 11 / 10}\n"
    for i, s in enumerate("abcd") for j, t in enumerate(("t1", "t2", "t3")) for k in range(6))


def test_convert_on_a_full_disk_is_one_line_and_a_rerun_writes_the_store(capsys, monkeypatch, tmp_path):
    src = tmp_path / "long.csv"
    src.write_text(LONG, encoding="utf-8")
    (tmp_path / "long.meta.json").write_text(json.dumps({"higher_is_better": {"t1": True, "t2": True, "t3": True}}))
    ok, out, err = run_cli(capsys, "convert", src, tmp_path / "reference.zarr")
    assert ok == 0, err
    store = tmp_path / "store.zarr"
    with monkeypatch.context() as m:
        fault = DiskFault(m, "store.zarr", match="/scores/c/", after=0)
        one_line_error(*run_cli(capsys, "convert", src, store), str(store), "no space left on device",
                       prefix="votebench: error: cannot write zarr store")
        assert fault.failed >= 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.csv", "long.meta.json", "reference.zarr"]  # no half store
    ok, out, err = run_cli(capsys, "convert", src, store)
    assert ok == 0, err
    from engine.io.readers import open_scores

    got, ref = open_scores(store), open_scores(tmp_path / "reference.zarr")
    xr.testing.assert_equal(got, ref)
    rows = [line.split(",") for line in LONG.splitlines()[1:]]  # the scores against the CSV itself
    for s, t, k, v in rows:
        assert float(got.sel(system=s, task=t, instance=int(k)).values) == float(v)


def test_an_input_that_cannot_be_read_is_named_not_the_store(tmp_path):
    """A permission error on a file that is not the store's names that file (it is not a store write)."""
    from engine.errors import VotebenchError
    from engine.io.files import storage_errors

    store, other = tmp_path / "st.zarr", tmp_path / "input.csv"
    with pytest.raises(VotebenchError, match=r"^" + re.escape(f"{other}: permission denied") + "$"):
        with storage_errors(store, "results store", "re-run to resume"):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(other))
    inside = store / "g" / "done" / "c" / "0"
    for name in (inside, tmp_path / ".st.zarr.lock", tmp_path / ".st.zarr.tmp-1-0123abcd" / "zarr.json"):
        with pytest.raises(VotebenchError, match=r"^cannot write results store .*st\.zarr: permission denied; re-run"):
            with storage_errors(store, "results store", "re-run to resume"):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(name))
    with pytest.raises(OSError, match="Connection refused"):  # anything else passes unchanged
        with storage_errors(store, "results store", "re-run to resume"):
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")


# ------------------------------------------------------------------------------------------- 3. names in report tables
NASTY_SYSTEMS = ["<img src=x onerror=alert(1)>", "a|b", "c\\|d", "**bold**", "[x](javascript:alert(1))", "e&lt;f",
                 "`code`", "~~gone~~"]
NASTY_TASKS = ["<b>t1</b>", "t|2", "_t3_"]
_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # CommonMark: the ASCII punctuation a backslash escapes


def gfm_cells(line: str) -> list[str]:
    """The raw cells of a GFM table row: split at the pipes that no backslash escapes (a backslash escapes the next
    character, so ``\\\\|`` is an escaped backslash and then a border)."""
    assert line.startswith("|") and line.endswith("|"), line
    cells, cur, i = [], "", 1
    while i < len(line) - 1:
        c = line[i]
        if c == "\\" and i + 1 < len(line) - 1:
            cur += line[i:i + 2]
            i += 2
            continue
        if c == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    cells.append(cur)
    return [c.strip() for c in cells]


def shown_text(cell: str) -> str:
    """What a CommonMark renderer shows for ``cell`` when it holds no markup: backslash escapes and the three
    entities resolved; a raw ``<``, ``>`` or an unescaped markup character in it fails (it would be live)."""
    out, i = "", 0
    while i < len(cell):
        c = cell[i]
        if c == "\\" and i + 1 < len(cell) and cell[i + 1] in _PUNCT:
            out += cell[i + 1]
            i += 2
            continue
        if c == "&":
            m = re.match(r"&(amp|lt|gt);", cell[i:])
            assert m, f"a bare & in {cell!r}"
            out += {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)]
            i += len(m.group(0))
            continue
        assert c not in "<>|*_[]`~\\", f"unescaped {c!r} in {cell!r}"
        out += c
        i += 1
    return out


def test_gfm_helpers_see_live_markup():
    """The checkers fail on what the report wrote before the fix (only | escaped)."""
    old = "| " + " | ".join(s.replace("|", "\\|") for s in NASTY_SYSTEMS) + " |"
    with pytest.raises(AssertionError):
        [shown_text(c) for c in gfm_cells(old)]
    assert len(gfm_cells("| c\\\\|d |")) == 2  # an escaped backslash, then a border: the old cell of "c\|d" split
    assert shown_text("&lt;img&gt; a\\|b \\*") == "<img> a|b *"


def test_report_tables_escape_system_and_task_names(tmp_path):
    import html.parser

    import numpy as np

    import engine
    from engine.app.report import build_report

    rng = np.random.default_rng(5)
    scores = engine.scores_from_array(rng.random((len(NASTY_SYSTEMS), len(NASTY_TASKS))), systems=NASTY_SYSTEMS,
                                      tasks=NASTY_TASKS)
    index = build_report(scores, tmp_path / "r", rules=["borda"], replicates=0, repeats=0, formats=("png",))
    tables = sorted((index.parent / "tables").glob("*.md"))
    assert tables
    seen_systems: set[str] = set()
    for md in tables:
        lines = md.read_text(encoding="utf-8").splitlines()
        assert "<" not in md.read_text(encoding="utf-8") and ">" not in md.read_text(encoding="utf-8"), md.name
        n = len(gfm_cells(lines[0]))
        for line in [lines[0], *lines[2:]]:
            cells = gfm_cells(line)
            assert len(cells) == n, (md.name, line)  # no name adds a column
            shown = [shown_text(c) for c in cells]
            seen_systems |= set(shown) & set(NASTY_SYSTEMS)
    assert seen_systems == set(NASTY_SYSTEMS)  # every name shown verbatim (task names, where a table has them, too:
    # shown_text fails on any unescaped character, whatever the cell holds)

    class Tags(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[tuple[str, dict]] = []
            self.text: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, dict(attrs)))

        def handle_data(self, data):
            self.text.append(data)

    page = Tags()
    page.feed(index.read_text(encoding="utf-8"))
    assert not any(k.startswith("on") for _, attrs in page.tags for k in attrs)  # no event handler from a name
    assert all(attrs.get("src", "").startswith("figures/") for tag, attrs in page.tags if tag == "img")
    shown = set(page.text)
    assert set(NASTY_SYSTEMS) <= shown  # as text of the HTML tables


# ------------------------------------------------------------------------------------------- 4. experiment --list
def test_experiment_list_executes_nothing(capsys, monkeypatch, tmp_path):
    """`votebench experiment --list --root DIR` reads the titles of DIR's run.py files without running them."""
    import engine.app.experiment as ex

    marker = tmp_path / "executed"
    root = tmp_path / "project"
    trap = (f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
            "TITLE = ('A title ' \n         'in two pieces')\nDESCRIPTION: str = 'd'\n"
            "def run(out, *, smoke=False, scheduler=None):\n    return {{}}\n")
    broken = {"nosyntax": "TITLE = 'x'\ndef run(:\n", "notitle": "DESCRIPTION = 'd'\ndef run(out): pass\n",
              "computed": "TITLE = 'a'.upper()\nDESCRIPTION = 'd'\nfrom x import run\n"}
    for name, text in {"trap": trap, **broken}.items():
        (root / "experiments" / name).mkdir(parents=True)
        (root / "experiments" / name / "run.py").write_text(text.replace("{{}}", "{}"))
    monkeypatch.setattr(ex, "ROOT", ex.ROOT)  # --root changes it; restored after the test
    code, out, err = run_cli(capsys, "experiment", "--list", "--root", root)
    assert code == 0, err
    assert not marker.exists()  # nothing of DIR ran
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert lines["trap"] == "A title in two pieces"
    assert "cannot be loaded" in lines["nosyntax"] and "SyntaxError" in lines["nosyntax"]
    assert "does not define TITLE" in lines["notitle"]
    assert "not a string literal" in lines["computed"]
    assert sorted(lines) == ["computed", "nosyntax", "notitle", "trap"]
    # running it still executes it (that is what running is for)
    code, out, err = run_cli(capsys, "experiment", "trap", "--root", root, "--out", tmp_path / "o")
    assert code == 0, err
    assert marker.read_text() == "ran"


def test_experiment_titles_read_from_source_equal_the_imported_ones():
    """The paper reproductions of this repository: the title read with ast is the one the module defines."""
    import engine.app.experiment as ex

    names = ex.experiment_names()
    assert names
    for name in names:
        assert ex.experiment_title(name) == ex.load_experiment(name).TITLE


# ------------------------------------------------------------------------------------------- 5. dashboard cookie
def test_dashboard_cookie_is_named_for_its_port(tmp_path):
    """Two dashboards on one host (cookies ignore ports: a browser sends both cookies to both): each accepts only
    its own cookie, named for its port, HttpOnly, SameSite=Strict, Path=/."""
    import http.cookiejar
    import urllib.error
    import urllib.request

    from engine.app.dashboard import start_in_background

    tokens = ["first-token-0123456789abcdef", "second-token-0123456789abcdef"]
    boards = [start_in_background(tmp_path / f"missing{i}.zarr", port=0, poll=0.2, heartbeat=5.0, token=t)
              for i, t in enumerate(tokens)]
    try:
        jar = http.cookiejar.CookieJar()  # one browser
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        url0, url1 = boards[0].url, boards[1].url
        port0 = int(url0.split("?")[0].rstrip("/").rsplit(":", 1)[1])
        port1 = int(url1.split("?")[0].rstrip("/").rsplit(":", 1)[1])
        assert port0 != port1
        with browser.open(url0, timeout=10) as resp:  # the printed URL: sets the cookie, redirects to /
            assert resp.status == 200
        (cookie,) = list(jar)
        assert cookie.name == f"votebench_token_{port0}" and cookie.value == tokens[0] and cookie.path == "/"
        assert cookie.has_nonstandard_attr("HttpOnly") and cookie.get_nonstandard_attr("SameSite") == "Strict"
        base0, base1 = url0.split("?")[0], url1.split("?")[0]
        with browser.open(base0 + "api/snapshot", timeout=10) as resp:  # the first server: its own cookie serves
            assert resp.status == 200
        with pytest.raises(urllib.error.HTTPError) as info:  # the jar sends the same cookie to the other port
            browser.open(base1 + "api/snapshot", timeout=10)
        assert info.value.code == 401
        # the first server's cookie carrying the second server's token under the first port's name: refused too
        req = urllib.request.Request(base1 + "api/snapshot", headers={"Cookie": f"votebench_token_{port0}={tokens[1]}"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=10)
        assert info.value.code == 401
        req = urllib.request.Request(base1 + "api/snapshot", headers={"Cookie": f"votebench_token_{port1}={tokens[1]}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200
    finally:
        for b in boards:
            b.stop()


def test_output_through_a_link_to_an_open_file_appends_to_it(capsys, scores, tmp_path):
    """`--output /dev/stdout >> log`: the kernel's link to an open file is written into, not replaced by a new file
    (replacing it would drop what `>>` kept, and replace /dev/stdout itself when run as root)."""
    expected = _regular_output(capsys, scores, tmp_path)
    log = tmp_path / "log.txt"
    log.write_bytes(b"earlier lines\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)  # what the shell opens for `>> log.txt`
    try:
        fd_link = Path(f"/proc/self/fd/{fd}")
        if not fd_link.is_symlink():
            pytest.skip("no /proc/self/fd here")
        stdout = tmp_path / "stdout"
        stdout.symlink_to(fd_link)  # as /dev/stdout -> /proc/self/fd/1
        ino = log.stat().st_ino
        code, out, err = run_cli(capsys, "rank", scores, "--output", stdout)
        assert code == 0, err
        assert stdout.is_symlink() and os.readlink(stdout) == str(fd_link)
        assert log.stat().st_ino == ino and log.read_bytes() == b"earlier lines\n" + expected
    finally:
        os.close(fd)
