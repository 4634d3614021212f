"""One request, read once and planned once (issue: a request wandered, read its input six times and planned six times).

Counted from outside the code under test: Python's audit hook sees every ``open`` of the input, and
``Plan`` objects are counted as they are built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA

import engine
from engine.distributed.source import input_checksum
from engine.io.readers import common
from engine.labelled import core

REPO = Path(__file__).resolve().parents[2]


def write_table(path: Path, rows: dict[str, list[float]]) -> Path:
    path.write_text("system,t1,t2\n" + "".join(f"{s},{v[0]},{v[1]}\n" for s, v in rows.items()), encoding="utf-8")
    return path


def opens_of(path: Path, action) -> int:
    seen = []

    def hook(event, args):
        if event == "open" and args and str(args[0]) == str(path):
            seen.append(1)

    sys.addaudithook(hook)  # hooks cannot be removed: this one only counts the file of this test
    action()
    return len(seen)


def test_the_guess_the_parse_and_the_checksum_read_the_file_once(tmp_path):
    path = write_table(tmp_path / "once.csv", {"a": [1, 2], "b": [3, 4], "c": [5, 0]})

    def both():
        engine.open_scores(path)
        input_checksum(path)
        engine.open_scores(path)

    assert opens_of(path, both) == 1


def test_a_file_changed_after_it_was_read_is_read_again(tmp_path):
    path = write_table(tmp_path / "changed.csv", {"a": [1, 2], "b": [3, 4], "c": [5, 0]})
    first = engine.open_scores(path).sel(system="a").values.ravel().tolist()
    write_table(path, {"a": [7, 8], "b": [3, 4], "c": [5, 0]})  # same size, other bytes
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    second = engine.open_scores(path).sel(system="a").values.ravel().tolist()
    assert first == [1.0, 2.0] and second == [7.0, 8.0]


def test_a_file_larger_than_what_is_held_is_read_each_time(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "BYTES_HELD", 10)
    path = write_table(tmp_path / "large.csv", {"a": [1, 2], "b": [3, 4], "c": [5, 0]})
    assert common.input_bytes(path) is None
    n = opens_of(path, lambda: (engine.open_scores(path), engine.open_scores(path)))
    assert n >= 2
    assert engine.open_scores(path).sizes["system"] == 3


def test_a_request_is_planned_once_and_only_the_same_request_shares_a_plan():
    scores = engine.scores_from_array(np.array([[1.0, 2.0], [3.0, 1.0], [2.0, 2.0]]))
    p1 = core.prepare(scores, rule="borda")
    assert core.prepare(scores, rule="borda", level=None, missing="error") is p1  # defaults given or not: one request
    assert core.prepare(scores, rule="copeland") is not p1
    assert core.prepare(scores.copy(), rule="borda") is not p1  # another tensor, even equal
    assert core.prepare(scores, rule="borda", validate=False) is not p1  # derived tensors are never held


def test_a_dropped_tensor_takes_its_plans_with_it():
    import gc
    import weakref

    scores = engine.scores_from_array(np.array([[1.0, 2.0], [3.0, 1.0], [2.0, 2.0]]))
    plan = weakref.ref(core.prepare(scores, rule="borda"))
    del scores
    gc.collect()
    assert plan() is None  # the process does not keep the caller's tensor, nor its plan, alive


def test_bootstrap_into_a_store_opens_its_input_once_and_plans_once(tmp_path):
    """The issue's traced command: the input opened once (Python-level opens), one plan, whatever the blocks."""
    tracer = textwrap.dedent("""
        import json, sys
        target = sys.argv[1]
        opens = []
        sys.addaudithook(lambda e, a: opens.append(1) if e == "open" and a and str(a[0]).endswith(target) else None)
        from engine.labelled import core
        made = []
        init = core.Plan.__init__
        def counted(self, *a, **k):
            made.append(1)
            init(self, *a, **k)
        core.Plan.__init__ = counted
        from engine.app.cli import main
        rc = main(sys.argv[2:])
        print("TRACE", json.dumps({"opens": len(opens), "plans": len(made)}))
        sys.exit(rc)
    """)
    src = DATA / "colombo_tac08.csv.gz"
    res = subprocess.run([sys.executable, "-c", tracer, src.name, "bootstrap", str(src), "--level", "two", "--over",
                          "instances", "--replicates", "40", "--block", "10", "--store", str(tmp_path / "t.zarr"),
                          "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    trace = json.loads(next(line for line in res.stdout.splitlines() if line.startswith("TRACE"))[6:])
    assert trace == {"opens": 1, "plans": 1}


@pytest.mark.parametrize("block", [1, 3])
def test_the_threads_of_a_local_sweep_give_the_numbers_of_an_in_memory_bootstrap(tmp_path, block):
    """A sweep without a scheduler runs on this process's threads (LocalPool): the same replicates as engine.bootstrap."""
    path = write_table(tmp_path / "t.csv", {"a": [1, 2], "b": [3, 4], "c": [5, 0], "d": [2, 2]})
    from engine.sweep import bootstrap_input

    ds, _ = bootstrap_input(path, over="tasks", replicates=6, seed=3, block=block, store=tmp_path / f"s{block}.zarr",
                            overwrite=False, client=None, progress=False, meta=None, lower_is_better=(), loader=None)
    ref = engine.bootstrap(engine.open_scores(path), over="tasks", replicates=6, seed=3)
    np.testing.assert_array_equal(ds["replicate_score"].values, ref["replicate_score"].values)
