"""Issue #13 regression tests: nothing stale, nothing lost, nothing hangs, every bad input named.

* results stores: the provenance covers the sidecar, the weights, the loader options and
  the direction flags; a store killed while being created (real subprocesses, several kill
  times) is absent or complete and the next run ends with the uninterrupted results; a
  store a resume cannot rely on is refused in one line; a second writer stops;
* written files: usual permissions, strays of killed writes removed;
* bad input: one line and exit 2, or the correct result (checked against exact rational
  arithmetic for TOPSIS, VIKOR and PROMETHEE II on scores near 1e308).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import DATA, dead_pid, load_all, one_line_error, read_strict_json, run_cli, tcp_port

import engine
from engine.distributed import clear_cache, load_source, make_source
from engine.errors import VotebenchError
from engine.io.files import WriterLock, make_temp_dir
from engine.kernels.mcdm import promethee2, topsis, vikor
from engine.sweep import load_config, open_results, parse_config, run_sweep

AUTOML = DATA / "esann_automl.csv"  # 17 systems x 30 tasks, with a sidecar
GLUE = DATA / "vnr_glue.csv"  # 100 systems x 14 tasks (97 complete), with a sidecar

SWEEP = """\
seed = 2
store = "{store}"
[input]
path = "{path}"
[[rules]]
name = "borda"
[[rules]]
name = "mean"
[[perturbations]]
kind = "bootstrap"
over = "tasks"
replicates = 24
block = 3
[[perturbations]]
kind = "subsets"
sizes = [2, 5]
repeats = 6
block = 3
"""
SWEEP_BLOCKS = 2 * 8 + 2 * 2 * 2


def votebench() -> str:
    return str(Path(sys.executable).with_name("votebench"))


def copy_input(tmp_path: Path, src: Path = GLUE, name: str = "bench") -> Path:
    """``src`` and its sidecar copied to ``tmp_path/<name>.csv`` and ``<name>.meta.json``."""
    data = tmp_path / f"{name}.csv"
    shutil.copy(src, data)
    shutil.copy(src.with_name(src.name.replace(".csv", ".meta.json")), tmp_path / f"{name}.meta.json")
    return data


def leftovers(folder: Path) -> list[str]:
    """Temporary folders/files and lock files votebench may leave beside its outputs."""
    return sorted(n for n in os.listdir(folder) if ".tmp-" in n or n.endswith(".lock"))


# ---------------------------------------------------------------------------------------------
# provenance: every input that changes a result
# ---------------------------------------------------------------------------------------------
def test_changed_sidecar_is_not_served_from_the_store(tmp_path, capsys):
    """The issue's case: flipping a task's direction in the sidecar must not return the old replicates."""
    data = copy_input(tmp_path)
    store = tmp_path / "s1.zarr"
    args = ["bootstrap", data, "--missing", "listwise", "--replicates", 6, "--block", 3, "--format", "json"]
    code, first, err = run_cli(capsys, *args, "--store", store)
    assert code == 0, err
    meta_path = tmp_path / "bench.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["higher_is_better"]["CoLA"] = False
    meta_path.write_text(json.dumps(meta))
    one_line_error(*run_cli(capsys, *args, "--store", store), "sidecars differs", "--overwrite", str(store))
    code, fresh, err = run_cli(capsys, *args)  # no store: the data as they are now
    assert code == 0, err
    code, again, err = run_cli(capsys, *args, "--store", store, "--overwrite")
    assert code == 0, err
    assert json.loads(again) == json.loads(fresh) != json.loads(first)


@pytest.mark.parametrize("change", ["lower-is-better", "weights-file", "input-format", "rule-option"])
def test_every_result_changing_option_is_in_the_provenance(tmp_path, capsys, change):
    data = copy_input(tmp_path, AUTOML)
    store = tmp_path / "s.zarr"
    weights = tmp_path / "w.json"
    weights.write_text(json.dumps({f"ds_{i:02d}": 1.0 + i % 3 for i in range(30)}))
    base = ["bootstrap", data, "--replicates", 4, "--block", 2, "--format", "json", "--store", store]
    first, second = {
        "lower-is-better": ([], ["--lower-is-better", "ds_01"]),
        "weights-file": (["--weights", weights], ["--weights", weights]),
        "input-format": ([], ["--input-format", "wide"]),
        "rule-option": (["--rule", "optimality_gap", "--param", "gamma=0.9"], ["--rule", "optimality_gap", "--param", "gamma=0.8"]),
    }[change]
    code, out, err = run_cli(capsys, *base, *first)
    assert code == 0, err
    if change == "weights-file":
        weights.write_text(json.dumps({f"ds_{i:02d}": 1.0 + (i == 1) for i in range(30)}))
    one_line_error(*run_cli(capsys, *base, *second), "config differs", "--overwrite")


def test_lower_is_better_with_a_store_equals_the_in_memory_bootstrap(tmp_path, capsys):
    args = ["bootstrap", AUTOML, "--replicates", 4, "--block", 2, "--format", "json", "--lower-is-better", "ds_01,ds_02"]
    code, stored, err = run_cli(capsys, *args, "--store", tmp_path / "s.zarr")
    assert code == 0, err
    code, plain, err = run_cli(capsys, *args)
    assert code == 0, err
    code, without, err = run_cli(capsys, *args[:-2])
    assert stored == plain and json.loads(plain)["ranking"] != json.loads(without)["ranking"]
    cfg = json.loads(open_results(tmp_path / "s.zarr", "esann_automl/bootstrap-tasks").attrs["config"])
    assert cfg["input"]["lower_is_better"] == ["ds_01", "ds_02"]


def test_a_worker_that_reads_another_sidecar_refuses(tmp_path):
    data = copy_input(tmp_path, AUTOML)
    clear_cache()
    _, planned = load_source(make_source(data))
    assert planned.meta_checksum is not None
    meta = tmp_path / "bench.meta.json"
    meta.write_text(meta.read_text().replace('"ds_01": true', '"ds_01": false'))
    clear_cache()
    with pytest.raises(VotebenchError, match="its sidecar .* differs from the one the sweep was planned on"):
        load_source(planned)
    meta.unlink()
    clear_cache()
    with pytest.raises(VotebenchError, match="now absent"):
        load_source(planned)


# ---------------------------------------------------------------------------------------------
# store creation killed at any moment; resume checks; one writer
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep_reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("reference")
    cfg = parse_config({**_raw(d / "ref.zarr")})
    return load_all(run_sweep(cfg, progress=False))


def _raw(store: Path) -> dict:
    import tomllib

    return tomllib.loads(SWEEP.format(store=store, path=AUTOML))


def _same_results(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for g in a:
        assert a[g]["done"].values.all() and b[g]["done"].values.all()
        for v in ("replicate_score", "score", "rank", "tau"):
            if v in a[g]:
                np.testing.assert_array_equal(a[g][v].values, b[g][v].values)
        for c in a[g].coords:
            assert a[g][c].values.tolist() == b[g][c].values.tolist(), c


def _kill_when(proc: subprocess.Popen, folder: Path, moment: str, delay: float) -> str:
    """SIGKILL ``proc`` ``delay`` s after ``moment`` (temp: the store is being built; store: it exists; block: a block is
    done); returns what the folder showed just before the kill."""
    store = folder / "s.zarr"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        names = os.listdir(folder)
        if moment == "temp" and any(n.startswith(".s.zarr.tmp-") for n in names):
            break
        if moment == "store" and "s.zarr" in names:
            break
        if moment == "block" and store.exists() and any(p.is_file() and not p.name.endswith(".partial")
                                                        for p in (store / "esann_automl" / "subsets" / "done" / "c").rglob("*")):
            break  # a done flag is written (zarr writes a chunk to a .partial file, then renames it)
        time.sleep(0.002)
    time.sleep(delay)
    seen = "store" if store.exists() else "building" if any(".tmp-" in n for n in os.listdir(folder)) else "nothing"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return seen


def test_sweep_killed_while_creating_its_store_resumes_to_the_same_results(tmp_path, sweep_reference):
    """Real `votebench sweep` processes killed at several moments: afterwards the store is absent or complete, and
    the next run ends with exactly the uninterrupted results (no KeyError, no lost coordinate)."""
    killed_while_building = 0
    for i, (moment, delay) in enumerate([("temp", 0.0), ("temp", 0.02), ("temp", 0.08), ("store", 0.0), ("block", 0.0)]):
        folder = tmp_path / f"trial{i}"
        folder.mkdir()
        cfg = folder / "sweep.toml"
        cfg.write_text(SWEEP.format(store=folder / "s.zarr", path=AUTOML), encoding="utf-8")
        proc = subprocess.Popen([votebench(), "sweep", str(cfg), "--no-progress"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            seen = _kill_when(proc, folder, moment, delay)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        store = folder / "s.zarr"
        if seen == "building":
            killed_while_building += 1
            assert not store.exists()  # a store is never half there
        if store.exists():  # complete: every group with its coordinates and done flags
            groups = open_results(store)
            assert sorted(groups) == sorted(sweep_reference)
            assert groups["esann_automl/bootstrap-tasks"]["system"].values.tolist() == \
                sweep_reference["esann_automl/bootstrap-tasks"]["system"].values.tolist()
        computed = []
        run_sweep(load_config(cfg), progress=False, on_block=computed.append)
        assert moment != "block" or len(computed) < SWEEP_BLOCKS  # the blocks done before the kill are kept
        _same_results(sweep_reference, load_all(store))
        assert leftovers(folder) == [], leftovers(folder)  # the dead run's temporary folder and lock file are gone
    assert killed_while_building >= 1


@pytest.mark.parametrize("damage, fragment", [
    ("no-done", "has no 'done'"),
    ("no-system", "has no 'system'"),
    ("other-systems", "has other 'system' labels"),
    ("corrupt-done", "unreadable coordinates or done flags"),
])
def test_a_store_that_cannot_be_resumed_says_so_in_one_line(tmp_path, capsys, damage, fragment):
    """What an interrupted creation used to leave (a group without 'done', lost labels) and damaged flags."""
    store = tmp_path / "s.zarr"
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP.format(store=store, path=AUTOML), encoding="utf-8")
    run_sweep(load_config(cfg), progress=False, max_blocks=0)
    group = store / "esann_automl" / "bootstrap-tasks"
    if damage == "no-done":
        shutil.rmtree(group / "done")
    elif damage == "no-system":
        shutil.rmtree(group / "system")
    elif damage == "other-systems":
        import zarr

        arr = zarr.open_array(str(group / "system"), mode="r+")
        arr[0] = "someone else"
    else:
        chunk = group / "done" / "c" / "0" / "1"  # a flag still unset (no file: the fill value) now holds garbage
        chunk.parent.mkdir(parents=True, exist_ok=True)
        chunk.write_bytes(b"\x00garbage")
    code, out, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    one_line_error(code, out, err, "cannot resume this results store", "bootstrap-tasks", fragment, "--overwrite")
    code, out, err = run_cli(capsys, "sweep", cfg, "--no-progress", "--overwrite")
    assert code == 0, err


def test_finished_blocks_whose_chunks_were_lost_are_computed_again(tmp_path, capsys):
    """A block flagged done whose chunk file is gone (a store copied in part) is recomputed, not served as NaN."""
    store = tmp_path / "s.zarr"
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP.format(store=store, path=AUTOML), encoding="utf-8")
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0, err
    group = store / "esann_automl" / "bootstrap-tasks"
    want = open_results(store, "esann_automl/bootstrap-tasks")["replicate_score"].values.copy()
    assert np.isfinite(want).all()
    lost = sorted((group / "replicate_score").rglob("c/*/*/*"))
    lost[1].unlink()
    partial = group / f"zarr.{'0123456789abcdef' * 2}.partial"  # the temporary file of a killed chunk write
    partial.write_text("{")
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0, err
    assert "computed 1 of" in err and "lost their data" in err
    np.testing.assert_array_equal(open_results(store, "esann_automl/bootstrap-tasks")["replicate_score"].values, want)
    assert not partial.exists()


def test_a_grid_point_whose_chunks_were_lost_is_computed_again(tmp_path, capsys):
    """Kinds that write several variables per block (grid: score and rank) are checked too."""
    store = tmp_path / "g.zarr"
    cfg = tmp_path / "grid.toml"
    cfg.write_text(f'seed = 1\nstore = "{store}"\n[input]\npath = "{AUTOML}"\n[[rules]]\nname = "optimality_gap"\n'
                   '[[perturbations]]\nkind = "grid"\nrule = "optimality_gap"\nparams = {gamma = [0.5, 0.8, 0.9]}\n',
                   encoding="utf-8")
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0, err
    name = "esann_automl/grid-optimality_gap"
    want = open_results(store, name)["rank"].values.copy()
    (store / name / "rank" / "c" / "0" / "0").unlink()  # the ranks of every point (one chunk)
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0, err
    assert "computed 3 of 3 blocks" in err
    np.testing.assert_array_equal(open_results(store, name)["rank"].values, want)


def test_a_corrupted_results_chunk_is_one_line_for_every_reader(tmp_path, capsys):
    """Garbage in a chunk of a results store: bootstrap --store, sweep, report and serve each say so in one line."""
    data = copy_input(tmp_path, AUTOML, "automl")
    store = tmp_path / "b.zarr"
    argv = ["bootstrap", data, "--store", store, "--replicates", 8, "--block", 4]
    code, _, err = run_cli(capsys, *argv)
    assert code == 0, err
    chunk = next((store / "automl" / "bootstrap-tasks" / "replicate_score").rglob("c/*/*/*"))
    chunk.write_bytes(os.urandom(40))
    for args in (argv, ["report", store, "--out", tmp_path / "rep"], ["serve", store, "--port", 0]):
        one_line_error(*run_cli(capsys, *args), str(store), "corrupted or unreadable chunk in this results store",
                       "--overwrite")
    assert not (tmp_path / "rep").exists()
    code, _, err = run_cli(capsys, *argv, "--overwrite")
    assert code == 0, err


def test_only_errors_of_the_storage_layer_count_as_a_damaged_store(tmp_path):
    from engine.sweep import readable_results, storage_failure

    with pytest.raises(ZeroDivisionError):  # a bug elsewhere is not reported as a damaged store
        with readable_results(tmp_path):
            _ = 1 / 0
    import zarr

    arr = zarr.create_array(store=str(tmp_path / "a.zarr"), shape=(4,), chunks=(2,), dtype="f8")
    arr[:] = 1.0
    (tmp_path / "a.zarr" / "c" / "1").write_bytes(b"\x00not zstd")
    with pytest.raises(Exception) as info:
        zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[:]
    assert storage_failure(info.value)
    with pytest.raises(VotebenchError, match="corrupted or unreadable chunk"):
        with readable_results(tmp_path):
            zarr.open_array(str(tmp_path / "a.zarr"), mode="r")[:]


def test_a_second_writer_stops_with_a_clear_message(tmp_path, capsys):
    store = tmp_path / "s.zarr"
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP.format(store=store, path=AUTOML), encoding="utf-8")
    with WriterLock(store, "results store"):
        code, out, err = run_cli(capsys, "sweep", cfg, "--no-progress")
        one_line_error(code, out, err, f"process {os.getpid()} is writing this results store", "wait")
        assert not store.exists()
    assert leftovers(tmp_path) == []
    run_sweep(load_config(cfg), progress=False, max_blocks=0)
    assert store.exists() and leftovers(tmp_path) == []


def test_two_concurrent_sweeps_never_both_compute(tmp_path):
    store = tmp_path / "s.zarr"
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP.format(store=store, path=AUTOML), encoding="utf-8")
    argv = [votebench(), "sweep", str(cfg), "--no-progress"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=180), p.communicate()[1]) for p in procs]
    computed = 0
    for code, err in results:
        if code == 0:
            line = next(x for x in err.splitlines() if x.startswith("votebench: computed "))
            computed += int(line.split()[2])  # "votebench: computed N of M blocks in this run"
        else:
            assert code == 2 and err.count("\n") == 1 and "is writing this results store" in err, err
    assert computed == SWEEP_BLOCKS  # every block once: none twice, none lost
    assert any(code == 0 for code, _ in results)


def test_the_lock_of_a_killed_writer_is_taken_over(tmp_path):
    store = tmp_path / "s.zarr"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom engine.io.files import WriterLock\n"
                               f"WriterLock({str(store)!r}).acquire()\nprint('locked', flush=True)\ntime.sleep(120)\n"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(VotebenchError, match=f"process {holder.pid} is writing"):
            WriterLock(store).acquire()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert leftovers(tmp_path) == [".s.zarr.lock"]  # the dead holder's file stays ...
    cfg = parse_config(_raw(store))
    run_sweep(cfg, progress=False, max_blocks=0)  # ... but locks nothing
    assert store.exists() and leftovers(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# written files: permissions, strays
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mask", [0o022, 0o007])
def test_written_files_and_folders_follow_the_umask(tmp_path, capsys, mask):
    old = os.umask(mask)
    try:
        code, _, err = run_cli(capsys, "rank", AUTOML, "--output", tmp_path / "r.txt")
        assert code == 0, err
        engine.to_zarr(engine.open_scores(AUTOML), tmp_path / "s.zarr")
        run_sweep(parse_config(_raw(tmp_path / "res.zarr")), progress=False, max_blocks=0)
        folder = make_temp_dir(tmp_path / "report")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.txt").stat().st_mode) == 0o666 & ~mask
    for d in (tmp_path / "s.zarr", tmp_path / "res.zarr", folder):
        assert stat.S_IMODE(d.stat().st_mode) == 0o777 & ~mask, d


def test_strays_of_killed_output_writes_are_removed(tmp_path, capsys):
    dead = dead_pid()
    strays = [f".r.json.tmp-{dead}-0123abcd", f".r.json.tmp-{dead}-89abcdef"]  # temp names of dead writers
    kept = [f".r.json.tmp-{os.getpid()}-89abcdef",  # a live writer's
            ".r.json.notes", f".other.json.tmp-{dead}-0123abcd", "r.json.bak",  # not temporary files of r.json
            ".r.json.original", ".r.json.20241231", ".r.json.k3j4_5l6"]  # a user's files that look like mkstemp names
    for n in strays + kept:
        (tmp_path / n).write_text("partial")
    code, _, err = run_cli(capsys, "rank", AUTOML, "--format", "json", "--output", tmp_path / "r.json")
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["r.json"])


# ---------------------------------------------------------------------------------------------
# bad input: one line and exit 2
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def small_store(tmp_path):
    scores = engine.scores_from_array(np.arange(24, dtype=float).reshape(4, 2, 3), systems=list("abcd"), tasks=["t0", "t1"])
    return engine.to_zarr(scores, tmp_path / "small.zarr", chunks={"task": 1, "instance": 3})


def test_corrupted_store_chunk_is_one_line(small_store, capsys):
    chunk = small_store / "scores" / "c" / "1" / "0" / "0"  # task t1
    assert chunk.is_file()
    chunk.write_bytes(os.urandom(64))
    for argv in (["rank", small_store], ["bootstrap", small_store, "--over", "instances", "--replicates", 4]):
        one_line_error(*run_cli(capsys, *argv), str(small_store), "corrupted or unreadable chunk of 'scores'")


def test_infinite_score_in_a_store_is_refused_like_in_a_csv(small_store, capsys):
    import zarr

    arr = zarr.open_group(str(small_store), mode="r+")["scores"]  # (task, instance, system)
    arr[1, 2, 3] = np.inf
    one_line_error(*run_cli(capsys, "rank", small_store), "score of system 'd' on task 't1' is not finite (inf)")


def test_absurd_replicates_are_refused_before_reading_or_allocating(tmp_path, capsys):
    code, out, err = run_cli(capsys, "bootstrap", tmp_path / "absent.csv", "--replicates", 100_000_000_000_000)
    one_line_error(code, out, err, "--replicates 100000000000000", "is more than the 100,000,000")  # engine.limits.MOST
    code, out, err = run_cli(capsys, "bootstrap", tmp_path / "absent.csv", "--replicates", 100_000_000)
    one_line_error(code, out, err, "--replicates 100000000", "PiB of memory", "use fewer replicates")
    raw = _raw(tmp_path / "s.zarr")
    raw["input"]["path"] = str(tmp_path / "absent.csv")
    raw["perturbations"][0]["replicates"] = 100_000_000_000_000
    with pytest.raises(VotebenchError, match=r"replicates 100000000000000 is more than the 100,000,000"):
        run_sweep(parse_config(raw), progress=False)
    assert os.listdir(tmp_path) == []


def test_replicates_whose_pairwise_stability_cannot_fit_are_refused_before_reading(tmp_path, capsys):
    """The stability summary correlates every pair of replicates: (B, B) arrays, not only (B, S)."""
    import psutil

    # replicate scores of a few systems would fit; their B x B correlations (8 bytes each) would not
    B = int(math.sqrt(psutil.virtual_memory().available / 8.0)) + 1
    code, out, err = run_cli(capsys, "bootstrap", tmp_path / "absent.csv", "--replicates", B)
    one_line_error(code, out, err, f"--replicates {B}", "correlations of every pair of replicates", "use fewer replicates")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name, content, fragment", [
    ("w.csv", "task,weight\nds_01,1\nds_02,2\nds_01,3\n", "line 4: task 'ds_01' is given twice (first on line 2)"),
    ("w.json", '{"ds_01": 1, "ds_02": 2, "ds_01": 3}', "task 'ds_01' is given twice"),
])
def test_a_weights_file_naming_a_task_twice_is_refused(tmp_path, capsys, name, content, fragment):
    w = tmp_path / name
    w.write_text(content)
    one_line_error(*run_cli(capsys, "rank", AUTOML, "--weights", w), fragment)


@pytest.mark.parametrize("content", ['{"ds_01": "heavy"}', '{"ds_01": true}', '{"ds_01": -1}', "task,weight\nds_01,inf\n"])
def test_weights_that_are_not_numbers_are_one_line(tmp_path, capsys, content):
    w = tmp_path / ("w.csv" if content.startswith("task") else "w.json")
    w.write_text(content)
    one_line_error(*run_cli(capsys, "rank", AUTOML, "--weights", w), "weight of task 'ds_01' must be a finite non-negative number")


def test_weights_table_of_a_sweep_with_a_string_is_refused():
    raw = _raw(Path("s.zarr"))
    raw["input"]["weights"] = {"ds_01": "2"}
    with pytest.raises(VotebenchError, match="input 1: weights: weight of task 'ds_01' must be a finite"):
        parse_config(raw)


@pytest.mark.parametrize("address", ["notanaddress", "tcp://nosuchhost.invalid:8786", "foo://x:1"])
def test_bad_scheduler_address_is_one_line_and_does_not_hang(address):
    proc = subprocess.run([votebench(), "rank", str(AUTOML), "--scheduler", address], capture_output=True, text=True,
                          timeout=45)  # it used to hang 60 s, then print a Client.__del__ traceback
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "cannot connect to dask scheduler" in proc.stderr, proc.stderr


def _listener(kind: str):
    """A local port that accepts connections but is not a dask scheduler: silent, or an HTTP server."""
    import http.server
    import threading

    if kind == "http":
        srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv.server_address[1], srv.shutdown
    return tcp_port()  # silent: accepts, never answers


@pytest.mark.parametrize("kind", ["silent", "http", "closed"])
def test_a_port_that_is_not_a_dask_scheduler_is_one_line_within_the_timeout(kind):
    """A port that accepts but never answers dask's handshake used to hang without limit (or allocate exabytes)."""
    import socket

    if kind == "closed":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]  # free again once closed: nothing listens there
        stop = None
    else:
        port, stop = _listener(kind)
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "4s"}
    t0 = time.monotonic()
    try:
        proc = subprocess.run([votebench(), "rank", str(AUTOML), "--scheduler", f"tcp://127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60, env=env)
    finally:
        if stop is not None:
            stop()
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.count("\n") == 1 and "cannot connect to dask scheduler" in proc.stderr, proc.stderr
    assert ("connection refused" if kind == "closed" else "scheduler's port") in proc.stderr
    assert time.monotonic() - t0 < 30  # the 4 s timeout, not dask's unbounded wait


@pytest.mark.parametrize("text, fragment", [
    ("replicates = 2.7\n", "replicates = 2.7 is not a valid value (an integer)"),
    ("replicates = true\n", "replicates = True is not a valid value (an integer)"),
    ("interval = false\n", "interval = False is not a valid value (a number)"),
    ("rule = 3\n", "rule = 3 is not a valid value (a string)"),
])
def test_config_values_keep_their_type(tmp_path, capsys, text, fragment):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    one_line_error(*run_cli(capsys, "bootstrap", AUTOML, "--config", cfg), fragment)


def test_config_integer_given_as_text_is_read(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text('replicates = "5"\nformat = "json"\n')
    code, out, err = run_cli(capsys, "bootstrap", AUTOML, "--config", cfg)
    assert code == 0 and json.loads(out)["replicates"] == 5, err


@pytest.mark.parametrize("shape", ["long", "wide"])
def test_null_system_name_in_parquet_is_refused(tmp_path, capsys, shape):
    if shape == "long":
        df = pd.DataFrame({"system": ["a", None, "b", "a"], "task": ["t", "t", "t", "u"], "score": [1.0, 2.0, 3.0, 4.0]})
    else:
        df = pd.DataFrame({"system": ["a", "b", None], "t": [1.0, 2.0, 3.0]})
    df.to_parquet(tmp_path / "x.parquet")
    row = 2 if shape == "long" else 3
    one_line_error(*run_cli(capsys, "rank", tmp_path / "x.parquet"), f"row {row}: null system name")


def test_an_infinite_parquet_score_is_named_as_written(tmp_path, capsys):
    df = pd.DataFrame({"system": ["a", "b", "c"], "t": [1.0, np.inf, 3.0]})
    df.to_parquet(tmp_path / "x.parquet")
    code, out, err = run_cli(capsys, "rank", tmp_path / "x.parquet")
    one_line_error(code, out, err, "task 't' value inf is not a finite number")
    assert "np.float64" not in err


def test_only_loopback_addresses_serve_without_a_token():
    from engine.app.dashboard import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.10", "localhost", "::1", "[::1]"))
    # a host name that merely starts like a loopback address may resolve anywhere: a token is required
    assert not any(is_loopback(h) for h in ("127.x.example", "127.0.0.1.example.org", "0.0.0.0", "::", "10.1.2.3"))


@pytest.mark.parametrize("meta, fragment", [
    ({"higher_is_better": {"ds_01": False, "task_99": True}}, "'higher_is_better' names 1 task(s) the input does not have: 'task_99'"),
    ({"task_groups": "benchmark_categories"}, "'task_groups' must map grouping names to objects"),
    ({"task_groups": {"cats": ["ds_01"]}}, "grouping 'cats' is list"),
    ({"task_groups": {"cats": {"g": "ds_01"}}}, "group 'g' of grouping 'cats' is not a list of task names"),
    ({"task_groups": {"cats": {"g": ["ds_01", "nope"]}}}, "grouping 'cats' names 1 task(s) the input does not have: 'nope'"),
    ({"higher-is-better": {"ds_01": False}}, "unknown sidecar key 'higher-is-better': did you mean 'higher_is_better'?"),
    ({"task_group": {"cats": {"g": ["ds_01"]}}}, "unknown sidecar key 'task_group': did you mean 'task_groups'?"),
    ({"lower_is_better": ["ds_01"]}, "gives directions as 'higher_is_better': {task: false}"),
    ({"task_groups": {"cats": {"a": ["ds_01", "ds_02"], "b": ["ds_02"]}}},
     "task 'ds_02' is in groups 'a' and 'b' of grouping 'cats'"),
])
def test_sidecar_naming_unknown_tasks_or_malformed_groups_is_refused(tmp_path, capsys, meta, fragment):
    data = tmp_path / "x.csv"
    shutil.copy(AUTOML, data)
    (tmp_path / "x.meta.json").write_text(json.dumps(meta))
    one_line_error(*run_cli(capsys, "rank", data), fragment)


# ---------------------------------------------------------------------------------------------
# numbers near the float64 limit: exact references (fractions) instead of overflow
# ---------------------------------------------------------------------------------------------
def _huge(seed: int, T: int = 4, S: int = 6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=(T, S)) * 1.7e308


def _frac(X: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(float(v)) for v in row] for row in X]


def exact_topsis(X: np.ndarray) -> list[float]:
    """TOPSIS with min-max normalisation and equal weights, in exact rational arithmetic (sqrt at the end)."""
    F, T, S = _frac(X), X.shape[0], X.shape[1]
    V = []
    for row in F:
        lo, hi = min(row), max(row)
        V.append([Fraction(1, T) * ((x - lo) / (hi - lo) if hi > lo else 1) for x in row])
    out = []
    for s in range(S):
        dp = sum((V[t][s] - max(V[t])) ** 2 for t in range(T))
        dm = sum((V[t][s] - min(V[t])) ** 2 for t in range(T))
        a, b = math.sqrt(float(dp)), math.sqrt(float(dm))
        out.append(b / (a + b) if a + b > 0 else 0.5)
    return out


def exact_vikor_q(X: np.ndarray, v: Fraction = Fraction(1, 2)) -> list[Fraction]:
    F, T, S = _frac(X), X.shape[0], X.shape[1]
    terms = []
    for row in F:
        best, worst = max(row), min(row)
        terms.append([Fraction(1, T) * (best - x) / (best - worst) if best > worst else Fraction(0) for x in row])
    Sv = [sum(terms[t][s] for t in range(T)) for s in range(S)]
    Rv = [max(terms[t][s] for t in range(T)) for s in range(S)]

    def ratio(a):
        lo, hi = min(a), max(a)
        return [(x - lo) / (hi - lo) if hi > lo else Fraction(0) for x in a]

    return [v * a + (1 - v) * b for a, b in zip(ratio(Sv), ratio(Rv))]


def exact_promethee_linear(X: np.ndarray) -> list[Fraction]:
    """Net flows with the V-shape ('linear') preference, p = the criterion's range (the default), equal weights."""
    F, T, S = _frac(X), X.shape[0], X.shape[1]
    net = [Fraction(0)] * S
    for row in F:
        p = max(row) - min(row)
        for a in range(S):
            for b in range(S):
                d = row[a] - row[b]
                pref = Fraction(0) if d <= 0 else (Fraction(1) if d > p else d / p)
                net[a] += pref / T / (S - 1)
                net[b] -= pref / T / (S - 1)
    return net


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_topsis_vikor_promethee_near_the_float_limit_against_exact_arithmetic(seed):
    X = _huge(seed)
    got = topsis(X)
    np.testing.assert_allclose(got, exact_topsis(X), rtol=1e-12)
    assert np.ptp(got) > 0.05  # not the old "everything ties at 0.5"
    np.testing.assert_allclose(vikor(X)[2], [float(q) for q in exact_vikor_q(X)], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(promethee2(X, preference="linear")[2], [float(f) for f in exact_promethee_linear(X)],
                               rtol=1e-12, atol=1e-15)
    # the same data scaled down exactly (by 2**-1000) rank alike: the methods are scale-invariant per criterion
    small = np.ldexp(X, -1000)
    for f in (topsis, lambda a: vikor(a)[2], lambda a: promethee2(a, preference="gaussian")[2]):
        np.testing.assert_allclose(f(X), f(small), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", [0, 1])
def test_median_and_relative_difference_near_the_float_limit_against_exact_arithmetic(seed, monkeypatch):
    """The mean of the two middle scores and u + v used to overflow to inf (false ties, wrong orders)."""
    from engine.kernels.baselines import median_across, relative_difference_across

    X = _huge(seed)  # 4 tasks: the median is the mean of two middle values
    F = _frac(X)
    want = []
    for s in range(X.shape[1]):
        col = sorted(F[t][s] for t in range(X.shape[0]))
        want.append(float((col[1] + col[2]) / 2))
    np.testing.assert_array_equal(median_across(X), want)  # exactly the rounded rational median
    P = np.abs(X)  # relative difference needs non-negative scores
    G, T, S = _frac(P), P.shape[0], P.shape[1]
    ref = [float(sum(sum((G[t][i] - G[t][j]) / (G[t][i] + G[t][j]) for t in range(T)) for j in range(S) if j != i)
                 / (T * (S - 1))) for i in range(S)]
    np.testing.assert_allclose(relative_difference_across(P), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(relative_difference_across(np.ldexp(P, -1000)), ref, rtol=1e-12, atol=1e-15)
    # the blocked path (many systems, engine.kernels.pairblock) and the shared pair sums of rank_rules agree
    s = engine.scores_from_array(P.T, systems=[f"s{i}" for i in range(S)], tasks=[f"t{t}" for t in range(T)])
    both = engine.rank_rules(s, ["relative_difference", "borda"])
    np.testing.assert_allclose(both["score"].sel(rule="relative_difference").values, ref, rtol=1e-12, atol=1e-15)
    monkeypatch.setenv("VOTEBENCH_PAIR_ROWS", "2")  # blocks of two rows of the pair matrix
    np.testing.assert_allclose(engine.aggregate(s, rule="relative_difference").values, ref, rtol=1e-12, atol=1e-15)


def test_huge_scores_through_the_cli(tmp_path, capsys):
    X = _huge(5, T=3, S=5)
    csv = tmp_path / "huge.csv"
    csv.write_text("system," + ",".join(f"t{t}" for t in range(3)) + "\n"
                   + "".join(f"s{s}," + ",".join(repr(float(X[t, s])) for t in range(3)) + "\n" for s in range(5)))
    for rule, ref in [("topsis", exact_topsis(X)), ("vikor", [-float(q) for q in exact_vikor_q(X)]),
                      ("promethee2", [float(f) for f in exact_promethee_linear(X)])]:
        extra = ["--preference", "linear"] if rule == "promethee2" else []
        code, out, err = run_cli(capsys, "rank", csv, "--rule", rule, *extra, "--format", "json")
        assert code == 0, err  # promethee2 used to say "missing scores"
        got = {r["system"]: r["score"] for r in json.loads(out)["ranking"]}
        np.testing.assert_allclose([got[f"s{s}"] for s in range(5)], ref, rtol=1e-12, atol=1e-15)


def test_json_output_never_holds_infinity_or_nan(tmp_path, capsys):
    csv = tmp_path / "over.csv"
    csv.write_text("system,a,b\nx,1.5e308,1.5e308\ny,1,2\nz,-1.5e308,-1.5e308\n")  # x's sum overflows, not its mean
    out_file = tmp_path / "r.json"
    code, _, err = run_cli(capsys, "rank", csv, "--rule", "mean", "--format", "json", "--output", out_file)
    assert code == 0, err
    rows = {r["system"]: r["score"] for r in read_strict_json(out_file)["ranking"]}
    assert rows["x"] == 1.5e308 and rows["z"] == -1.5e308 and rows["y"] == 1.5
    code, _, err = run_cli(capsys, "bootstrap", csv, "--rule", "mean", "--replicates", 3, "--format", "json",
                           "--output", out_file)
    assert code == 0, err
    res = read_strict_json(out_file)
    assert {r["system"]: r["score"] for r in res["ranking"]}["x"] == 1.5e308


def test_means_near_the_float_limit_equal_the_rounded_rational_mean():
    """Cancelling huge terms leave a small remainder that keeps its bits; huge weights average like small ones."""
    from engine.kernels.aggregate import mean_across

    a = 3 * 2.0**1021
    col = [a, a, a, -a, -a, -a, 1.0, 0.0, 0.0, 0.0]
    want = float(sum(Fraction(v) for v in col) / len(col))
    assert mean_across(np.array(col)[:, None]).tolist() == [want]  # 0.1, not 0.10000000000000009
    X = np.array([[1.0, 3.0], [2.0, 5.0]])
    huge = mean_across(X, weights=np.array([0.5e308, 1.5e308]))  # their total is beyond float64
    np.testing.assert_allclose(huge, mean_across(X, weights=np.array([1.0, 3.0])), rtol=1e-15)


def test_json_text_turns_non_finite_floats_into_strict_json():
    """Whatever a result holds (an interval bound, a p-value of a degenerate case), --format json stays strict JSON."""
    from engine.app.output import json_text

    text = json_text({"a": [float("inf"), np.float64(-np.inf), float("nan"), np.float32(1.5)], "b": (1, "x")})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}")) == {
        "a": ["inf", "-inf", None, 1.5], "b": [1, "x"]}


@pytest.mark.parametrize("level", ["two", "one", "task"])
def test_instance_sums_beyond_the_float64_range_are_named_not_reported_as_inf(tmp_path, capsys, level):
    """Two instances near 1e308 sum beyond float64: the mean over instances cannot be formed; one line, exit 2."""
    from conftest import one_line_error

    csv = tmp_path / "long.csv"
    rows = ["system,task,instance,score"]
    rows += [f"x,a,{k},1.5e308" for k in (1, 2)] + [f"y,a,{k},{k}" for k in (1, 2)]
    rows += [f"{s},b,{k},1" for s in "xy" for k in (1, 2)]
    csv.write_text("\n".join(rows) + "\n")
    one_line_error(*run_cli(capsys, "rank", csv, "--rule", "mean", "--level", level), "float64 range", "rescale")
    # a level-one pool of task sums that overflows only when the tasks are added is summed again, scaled
    from engine.kernels.aggregate import mean_pool

    sums = np.array([[1.5e308, 3.0], [1.5e308, 1.0]])
    np.testing.assert_array_equal(mean_pool(sums, np.full((2, 2), 2)), [0.75e308, 1.0])
