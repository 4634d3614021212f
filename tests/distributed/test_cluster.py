"""Real distributed execution: a ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1.

The module fixture starts the scheduler and the workers as subprocesses, each
in its own process group, and kills the groups at the end whatever happens.
Against it: ``votebench sweep/rank/bootstrap --scheduler`` equal the embedded
(in-process) results exactly; a sweep survives the SIGKILL of a worker; a
``votebench sweep`` killed halfway resumes from its store and computes only
the missing blocks; the workers read the input by path (tasks are small, the
input lands in the workers' cache).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zarr
from conftest import DATA, SWEEP_HEAD, WHERE_LINES, load_all, only_direction_notes, parse_sweep_summary, run_cli, write_sweep

import engine
from engine.distributed import cached_sources, clear_cache, input_checksum, make_source
from engine.sweep import parse_config, plan_sweep, run_sweep

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups")

AUTOML = DATA / "esann_automl.csv"  # 17 systems x 30 tasks
TAC08 = DATA / "colombo_tac08.csv.gz"  # 62 systems x 15 tasks x 48 instances
#: a slow sweep: Copeland within tasks over resampled instances is evaluated replicate by replicate
#: (about 40 ms each), 24 blocks of 4 replicates
SLOW = {"kind": "bootstrap", "over": "instances", "replicates": 96, "block": 4}
SLOW_RULES = [{"name": "copeland", "level": "two"}]
SLOW_GROUP = "colombo_tac08/bootstrap-instances"
SLOW_BLOCKS = 24
#: the line the CLI prints (stderr) when it connects to a scheduler
DASHBOARD = re.compile(r"votebench: dask dashboard: http://127\.0\.0\.1:\d+/status")
START_TIMEOUT = 60


def _exe(name: str) -> str:
    exe = shutil.which(name, path=os.path.dirname(sys.executable)) or shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} executable not installed")
    return exe


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _reap(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        _kill_group(p, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(p)
            p.wait(timeout=10)


class LocalProcesses:
    """A scheduler and its workers as subprocesses (each its own process group)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.client = None

    def _spawn(self, *argv: str, log: str) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
        with open(self.tmp / log, "ab") as fh:
            p = subprocess.Popen([*argv], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                 cwd=self.tmp, start_new_session=True)
        self.procs.append(p)
        return p

    def start_scheduler(self) -> None:
        port = self.address.rsplit(":", 1)[1]
        self._spawn(_exe("dask"), "scheduler", "--host", "127.0.0.1", "--port", port, "--dashboard-address", "127.0.0.1:0",
                    log="scheduler.log")

    def start_worker(self) -> subprocess.Popen:
        i = self.started = getattr(self, "started", -1) + 1  # names must be unique on the scheduler
        w = self._spawn(_exe("dask"), "worker", self.address, "--nworkers", "1", "--nthreads", "1", "--host", "127.0.0.1",
                        "--no-dashboard", "--memory-limit", "2GiB", "--local-directory", str(self.tmp / f"w{i}"),
                        "--name", f"w{i}", log=f"worker{i}.log")
        w.name = f"w{i}"
        self.workers.append(w)
        return w

    def address_of(self, worker: subprocess.Popen) -> str:
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return next(addr for addr, w in info.items() if w["name"] == worker.name)

    def connect(self) -> None:
        from distributed import Client

        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self.client = Client(self.address, timeout="5s", set_as_default=False)
                break
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def wait_for_workers(self, n: int) -> None:
        self.client.wait_for_workers(n, timeout=START_TIMEOUT)
        # exactly n: a killed worker must have left the scheduler's table
        deadline = time.monotonic() + START_TIMEOUT
        while len(self.client.scheduler_info(n_workers=-1)["workers"]) != n:
            assert time.monotonic() < deadline, "the scheduler did not settle at the expected number of workers"
            time.sleep(0.1)

    def close(self) -> None:
        try:
            if self.client is not None:
                self.client.close(timeout=5)
        finally:
            _reap(self.procs)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalProcesses(tmp_path_factory.mktemp("cluster"))
    try:
        c.start_scheduler()
        c.start_worker()
        c.start_worker()
        c.connect()
        c.wait_for_workers(2)
        yield c
    finally:
        c.close()


def provenance(attrs):
    """The attributes of a results group, the store path left out of the recorded config (runs may use other stores)."""
    config = {k: v for k, v in json.loads(attrs["config"]).items() if k != "store"}
    return {**attrs, "config": config}


def assert_same_results(a, b):
    assert sorted(a) == sorted(b)
    for g in a:
        assert provenance(a[g].attrs) == provenance(b[g].attrs), g
        for v in a[g].variables:
            np.testing.assert_array_equal(b[g][v].values, a[g][v].values, err_msg=f"{g}/{v}")
        assert b[g]["done"].values.all(), g


def sweep_raw(store, *, path=TAC08, rules=None, perturbations=None, seed=7):
    return {"seed": seed, "store": str(store), "input": {"path": str(path)}, "rules": rules or SLOW_RULES,
            "perturbations": perturbations or [SLOW]}


@pytest.fixture(scope="module")
def slow_reference(tmp_path_factory):
    """The slow sweep, uninterrupted, on the embedded (in-process) scheduler."""
    store = tmp_path_factory.mktemp("ref") / "ref.zarr"
    run_sweep(parse_config(sweep_raw(store)), progress=False)
    return load_all(store)


def done_count(store, group=SLOW_GROUP) -> int:
    try:
        return int(np.asarray(zarr.open_group(str(store), mode="r")[group]["done"][...]).sum())
    except Exception:  # noqa: BLE001 - the store is not created yet
        return 0


# ---------------------------------------------------------------------------------------------
# same results as the embedded scheduler
# ---------------------------------------------------------------------------------------------
MIXED_SWEEP = SWEEP_HEAD + """
[[perturbations]]
kind = "bootstrap"
over = "tasks"
replicates = 9
block = 2
[[perturbations]]
kind = "subsets"
sizes = [3, 6]
repeats = 4
block = 2
[[perturbations]]
kind = "grid"
rule = "optimality_gap"
params = {{ gamma = [0.8, 0.9] }}
"""


def summary(out):
    """The ``votebench sweep`` lines after the store line as (group, sizes, blocks done, blocks)."""
    return [parse_sweep_summary(line) for line in out.splitlines()[1:]]


def test_cli_sweep_on_the_cluster_equals_embedded(cluster, tmp_path, capsys):
    cfg = write_sweep(tmp_path, "s.toml", MIXED_SWEEP, store=tmp_path / "embedded.zarr", path=AUTOML)
    code, out_embedded, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0, err
    assert "dashboard" not in err and "computed 20 of 20 blocks" in err
    code, out, err = run_cli(capsys, "sweep", cfg, "--no-progress", "--store", tmp_path / "cluster.zarr",
                             "--scheduler", cluster.address)
    assert code == 0, err
    assert DASHBOARD.fullmatch(err.splitlines()[0]), err
    assert summary(out) == summary(out_embedded)
    assert_same_results(load_all(tmp_path / "embedded.zarr"), load_all(tmp_path / "cluster.zarr"))


def test_scheduler_from_the_environment(cluster, tmp_path, capsys, monkeypatch):
    cfg = write_sweep(tmp_path, "s.toml", MIXED_SWEEP, store=tmp_path / "env.zarr", path=AUTOML)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.address)
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0 and DASHBOARD.fullmatch(err.splitlines()[0]), err  # the embedded scheduler prints no link


@pytest.fixture(scope="module")
def tac_store(tmp_path_factory):
    """TAC08 as a chunked zarr store: the lazy path (the workers read the chunks)."""
    path = tmp_path_factory.mktemp("store") / "tac08.zarr"
    engine.to_zarr(engine.open_scores(TAC08), path, chunks={"task": 4, "instance": 16})
    return path


@pytest.mark.parametrize("source", ["csv", "zarr"])
@pytest.mark.parametrize(
    "argv",
    [
        ["rank", "--format", "json"],
        ["rank", "--rule", "copeland", "--level", "one", "--format", "csv"],
        ["rank", "--rule", "mean", "--lower-is-better", "t0,t3", "--format", "json"],
        ["bootstrap", "--replicates", "7", "--block", "3", "--seed", "4", "--format", "json"],
        ["bootstrap", "--over", "instances", "--replicates", "6", "--block", "4", "--format", "json"],
        ["bootstrap", "--over", "systems", "--rule", "copeland", "--level", "two", "--replicates", "5", "--block", "2"],
    ],
    ids=["rank", "rank-copeland-one", "rank-lower", "boot-tasks", "boot-instances", "boot-systems"],
)
def test_rank_and_bootstrap_with_scheduler_equal_embedded(cluster, tac_store, capsys, source, argv):
    data = str(TAC08 if source == "csv" else tac_store)
    if "--lower-is-better" in argv:
        tasks = [str(t) for t in engine.open_scores(TAC08)["task"].values]
        argv = [a if a != "t0,t3" else f"{tasks[0]},{tasks[3]}" for a in argv]
    code, embedded, err = run_cli(capsys, argv[0], data, *argv[1:])
    assert code == 0 and only_direction_notes(err), err
    code, distributed, err = run_cli(capsys, argv[0], data, *argv[1:], "--scheduler", cluster.address)
    assert code == 0, err
    assert err.count("\n") == 1 and DASHBOARD.fullmatch(err.strip()), err
    assert distributed == embedded


def test_bootstrap_store_with_scheduler_equals_embedded(cluster, tmp_path, capsys):
    args = ["bootstrap", TAC08, "--over", "instances", "--rule", "copeland", "--level", "two", "--replicates", "6",
            "--block", "2", "--format", "json"]
    code, embedded, err = run_cli(capsys, *args, "--store", tmp_path / "e.zarr")
    assert code == 0, err
    code, distributed, err = run_cli(capsys, *args, "--store", tmp_path / "c.zarr", "--scheduler", cluster.address)
    assert code == 0, err
    assert distributed == embedded
    assert_same_results(load_all(tmp_path / "e.zarr"), load_all(tmp_path / "c.zarr"))


def test_user_errors_on_the_cluster_are_one_line(cluster, capsys):
    code, out, err = run_cli(capsys, "bootstrap", AUTOML, "--over", "instances", "--scheduler", cluster.address)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2 and lines[1].startswith("votebench: error: ") and "instance-level scores" in lines[1], err
    code, out, err = run_cli(capsys, "rank", DATA / "nosuch.csv", "--scheduler", cluster.address)
    assert code == 2 and "nosuch.csv" in err.splitlines()[-1]


def test_unreachable_scheduler_is_one_line(capsys):
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, out, err = run_cli(capsys, "rank", AUTOML, "--scheduler", f"tcp://127.0.0.1:{_free_port()}")
    assert code == 2 and out == "" and err.count("\n") == 1 and "cannot connect to dask scheduler" in err, err


# ---------------------------------------------------------------------------------------------
# the workers read the data by path
# ---------------------------------------------------------------------------------------------
def test_tasks_carry_the_path_not_the_scores(tmp_path):
    cfg = parse_config(sweep_raw(tmp_path / "x.zarr"))
    _, blocks, attrs = plan_sweep(cfg)
    data_bytes = engine.open_scores(TAC08).nbytes
    sizes = [len(pickle.dumps(b.compute)) for b in blocks]
    assert len(blocks) == SLOW_BLOCKS and max(sizes) < 4096 < data_bytes // 50, (max(sizes), data_bytes)
    src = blocks[0].compute.args[0]
    assert src.path == str(TAC08.absolute()) and src.checksum == json.loads(attrs["inputs"])["colombo_tac08"]


def test_workers_open_the_input_themselves(cluster, tmp_path):
    cluster.client.run(clear_cache)
    clear_cache()
    store = tmp_path / "s.zarr"
    run_sweep(parse_config(sweep_raw(store, perturbations=[{**SLOW, "replicates": 16, "block": 2}])), client=cluster.client,
              progress=False)
    assert cached_sources() == []  # the client never opened the input
    per_worker = cluster.client.run(cached_sources)
    assert len(per_worker) == 2
    want = make_source(TAC08)
    got = {s for sources in per_worker.values() for s in sources}
    # the sidecar read with the input is checked like the input itself
    assert got == {type(want)(path=want.path, checksum=input_checksum(TAC08),
                              meta_checksum=input_checksum(DATA / "colombo_tac08.meta.json"))}


def test_fsspec_url_input(cluster, tmp_path, tac_store):
    """A zarr store given as a file:// URL: the workers open it through fsspec; same results as its local path."""
    rules = [{"name": "borda"}]
    pert = [{"kind": "bootstrap", "over": "instances", "replicates": 6, "block": 3}]
    run_sweep(parse_config(sweep_raw(tmp_path / "path.zarr", path=tac_store, rules=rules, perturbations=pert)),
              progress=False)
    url = tac_store.absolute().as_uri()
    assert url.startswith("file://")
    run_sweep(parse_config(sweep_raw(tmp_path / "url.zarr", path=url, rules=rules, perturbations=pert)), client=cluster.client,
              progress=False)
    a, b = load_all(tmp_path / "path.zarr"), load_all(tmp_path / "url.zarr")
    assert json.loads(a["tac08/bootstrap-instances"].attrs["inputs"]) == json.loads(b["tac08/bootstrap-instances"].attrs["inputs"])
    for v in ("replicate_score", "score", "rank"):
        np.testing.assert_array_equal(a["tac08/bootstrap-instances"][v].values, b["tac08/bootstrap-instances"][v].values)


def test_a_worker_that_reads_other_bytes_refuses(tmp_path):
    data = tmp_path / "scores.csv"
    shutil.copy(AUTOML, data)
    src = make_source(data)
    good = type(src)(path=src.path, checksum=input_checksum(data))
    data.write_text(data.read_text().replace("alg_00,0.467", "alg_00,0.468"), encoding="utf-8")
    clear_cache()
    with pytest.raises(engine.VotebenchError, match="differs from the one the sweep was planned on"):
        engine.distributed.load_source(good)


# ---------------------------------------------------------------------------------------------
# failures
# ---------------------------------------------------------------------------------------------
def test_sweep_survives_the_loss_of_a_worker(cluster, tmp_path, slow_reference):
    store = tmp_path / "loss.zarr"
    victim = cluster.workers[0]
    victim_address = cluster.address_of(victim)
    seen, running = [], []

    def kill_after_three(blk):
        seen.append(blk)
        if len(seen) == 3:
            running.extend(cluster.client.processing([victim_address])[victim_address])
            _kill_group(victim)  # the worker and its nanny, as if its machine went down

    try:
        run_sweep(parse_config(sweep_raw(store)), client=cluster.client, progress=False, on_block=kill_after_three)
        assert victim.wait(timeout=10) is not None
        assert running, "the killed worker had no task to lose"
        assert len(seen) == SLOW_BLOCKS  # every block written once: none lost, none twice
        assert len({b.done_index for b in seen}) == SLOW_BLOCKS
        assert_same_results(slow_reference, load_all(store))
    finally:  # the other tests get two workers again
        cluster.workers.remove(victim)
        cluster.start_worker()
        cluster.wait_for_workers(2)


def test_killed_client_resumes_and_computes_only_the_missing_blocks(cluster, tmp_path, slow_reference):
    store = tmp_path / "resume.zarr"
    cfg = tmp_path / "slow.yaml"
    import yaml

    cfg.write_text(yaml.safe_dump(sweep_raw(store)), encoding="utf-8")
    argv = [_exe("votebench"), "sweep", str(cfg), "--scheduler", cluster.address, "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while done_count(store) < 4:
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the sweep wrote no block in time"
            time.sleep(0.02)
        _kill_group(first)
        assert first.wait(timeout=10) == -signal.SIGKILL
    finally:
        _kill_group(first)
        first.communicate()
    halfway = done_count(store)
    assert 4 <= halfway < SLOW_BLOCKS, halfway
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180)
    assert second.returncode == 0, second.stderr
    assert f"votebench: computed {SLOW_BLOCKS - halfway} of {SLOW_BLOCKS} blocks in this run" in second.stderr
    assert_same_results(slow_reference, load_all(store))


# ---------------------------------------------------------------------------------------------
# a lost scheduler: one line, exit code 75 ("re-run to resume"), and the re-run resumes exactly
# ---------------------------------------------------------------------------------------------
def test_lost_scheduler_is_one_line_and_a_rerun_resumes(tmp_path, slow_reference):
    own = LocalProcesses(tmp_path)
    store = tmp_path / "lost.zarr"
    cfg = tmp_path / "slow.yaml"
    import yaml

    cfg.write_text(yaml.safe_dump(sweep_raw(store)), encoding="utf-8")
    argv = [_exe("votebench"), "sweep", str(cfg), "--scheduler", own.address, "--no-progress"]
    env = {k: v for k, v in os.environ.items() if k != "DASK_SCHEDULER_ADDRESS"}
    try:
        own.start_scheduler()
        own.start_worker()
        own.connect()
        own.wait_for_workers(1)
        own.client.close(timeout=5)
        own.client = None
        first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                 start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while done_count(store) < 2:
                assert first.poll() is None, first.communicate()
                assert time.monotonic() < deadline, "the sweep wrote no block in time"
                time.sleep(0.02)
            _kill_group(own.procs[0])  # the scheduler
            out, err = first.communicate(timeout=60)
        finally:
            _kill_group(first)
        assert first.returncode == 75, err
        lines = [line for line in err.splitlines()
                 if line.strip() and not DASHBOARD.fullmatch(line) and not line.startswith(WHERE_LINES)]
        assert len(lines) == 1, err
        assert lines[0].startswith("votebench: error: lost the dask scheduler"), err
        assert "run the same command again to resume" in lines[0]
        assert "Traceback" not in err
        halfway = done_count(store)
        assert 2 <= halfway < SLOW_BLOCKS
        # a new scheduler at the same address and a worker: the same command finishes the sweep
        _reap(own.procs)
        own.procs.clear()
        own.start_scheduler()
        own.start_worker()
        own.connect()
        own.wait_for_workers(1)
        second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        assert second.returncode == 0, second.stderr
        assert f"votebench: computed {SLOW_BLOCKS - halfway} of {SLOW_BLOCKS} blocks in this run" in second.stderr
        assert_same_results(slow_reference, load_all(store))
    finally:
        own.close()
