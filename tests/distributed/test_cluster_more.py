"""Issue #30, the rest: convert in parallel parts on a cluster, sweep blocks sized from the cluster, and the commands
that take --scheduler checked on a real multi-process cluster (worker processes of their own, so every task, its
arguments and its result cross a process boundary by pickling, as on a cluster of machines).

One module-scoped LocalCluster of 2 worker processes (1 thread each) serves every test.  The references are
independent of the code under test: the in-process convert's store (and the CSV text read by plain loops for line
numbers), a search over every block size for the sweep rule, and each command run in this process.
"""

from __future__ import annotations

import csv
import json
import math
import os
import textwrap

import numpy as np
import pytest
from conftest import one_line_error, run_cli

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit="1GiB") as c:
        yield c


@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory):
    """6 systems x 5 tasks x 12 instances, system s better by 0.15 s on average, with a sidecar."""
    path = tmp_path_factory.mktemp("more") / "scores.csv"
    rng = np.random.default_rng(31)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "task", "instance", "score"])
        for s in range(6):
            for t in range(5):
                for i in range(12):
                    w.writerow([f"sys{s}", f"t{t}", i, round(float(rng.normal(0.15 * s, 1.0)), 5)])
    (path.parent / "scores.meta.json").write_text(json.dumps({"higher_is_better": {f"t{t}": t != 3 for t in range(5)}}))
    return path


def _tasks_run(cluster, prefix="run_task") -> int:
    """Tasks of ``prefix`` that finished on the cluster so far (transitions into ``memory``)."""
    p = cluster.scheduler.task_prefixes.get(prefix)
    return 0 if p is None else int(p.state_counts.get("memory", 0))


def _both(capsys, cluster, *argv):
    here = run_cli(capsys, *argv)
    before = _tasks_run(cluster)
    there = run_cli(capsys, *argv, "--scheduler", cluster.scheduler_address)
    assert here[0] == 0 and there[0] == 0, (here[2], there[2])
    return here, there, _tasks_run(cluster) - before


# -------------------------------------------------------------------------------------------- convert
def _long_csv(path, rng, S=7, T=5, K=300, *, blank_every=0):
    """A shuffled long CSV with missing scores and ragged tasks (task t has K - 17 t instances)."""
    rows = [f"sys{s},task{t},q{k},{'NA' if rng.random() < 0.05 else f'{rng.normal():.5f}'}"
            for s in range(S) for t in range(T) for k in range(K - 17 * t)]
    rng.shuffle(rows)
    if blank_every:
        rows = [r if i % blank_every else r + "\n" for i, r in enumerate(rows)]  # blank lines the readers skip
    path.write_text("system,task,instance,score\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _files(store):
    return {p.relative_to(store).as_posix(): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()}


def _assert_same_store(a, b):
    import xarray as xr

    da = xr.open_zarr(a, zarr_format=3, consolidated=False)
    db = xr.open_zarr(b, zarr_format=3, consolidated=False)
    assert da.identical(db)
    fa, fb = _files(a), _files(b)
    assert sorted(fa) == sorted(fb) and len(fa) > 2
    for name in fa:
        assert fa[name] == fb[name], name


def test_convert_on_the_cluster_writes_the_store_of_this_process(cluster, tmp_path, monkeypatch):
    from distributed import Client

    import engine.io.convert
    from engine.distributed.convert import convert_on_cluster
    from engine.io.convert import convert

    src = _long_csv(tmp_path / "in.csv", np.random.default_rng(1), blank_every=97)
    monkeypatch.setattr(engine.io.convert, "SLAB_CELLS", 7 * 100)  # slabs of 1 chunk of 100 instances
    chunks = {"task": 1, "instance": 100}
    convert(src, tmp_path / "here.zarr", chunks=chunks)
    before = _tasks_run(cluster)
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        info = convert_on_cluster(client, src, tmp_path / "there.zarr", chunks=chunks, part_bytes=40000)
    parts = math.ceil((src.stat().st_size - len("system,task,instance,score\n")) / 40000)
    slabs = 5 * math.ceil(300 / 100)  # every task spans the 300 instances of the store: 3 chunks, one slab each
    assert (info["where"], info["parts"], info["slabs"]) == ("cluster", parts, slabs)
    assert parts >= 5 and slabs == 15
    assert _tasks_run(cluster) - before == 2 * parts + slabs  # parse and sort each part, fill each slab
    _assert_same_store(tmp_path / "here.zarr", tmp_path / "there.zarr")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here.zarr", "in.csv", "there.zarr"]  # no temporary left


def test_convert_command_on_the_cluster_equals_this_process(capsys, cluster, tmp_path, monkeypatch):
    _long_csv(tmp_path / "in.csv", np.random.default_rng(2))
    (tmp_path / "in.meta.json").write_text(json.dumps({"higher_is_better": {"task1": False}}))
    monkeypatch.chdir(tmp_path)  # relative paths: the workers' working folder is another one
    code, _, err = run_cli(capsys, "convert", "in.csv", "here.zarr")
    assert code == 0, err
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)  # the address from the environment
    code, _, err = run_cli(capsys, "convert", "in.csv", "there.zarr")
    assert code == 0, err
    assert "parsed in" in err and "on the cluster" in err and "not used" not in err
    _assert_same_store(tmp_path / "here.zarr", tmp_path / "there.zarr")


@pytest.mark.parametrize("part", [1, 7, 64, 1000, 10**6])
def test_parts_are_whole_lines_that_cover_the_file_once(tmp_path, part):
    from engine.distributed.convert import line_spans

    rng = np.random.default_rng(part)
    body = "".join(f"s{rng.integers(100)},t{rng.integers(9)},{'x' * int(rng.integers(0, 40))}\n" for _ in range(300))
    src = tmp_path / "f.csv"
    src.write_bytes(b"system,task,score\n" + body.encode() + b"s1,t1,no-final-newline")
    data, start = src.read_bytes(), len(b"system,task,score\n")
    spans = line_spans(src, start, len(data), part)
    assert "".join(data[a:b].decode() for a, b in spans) == data[start:].decode()  # every byte once, in order
    assert all(data[b - 1:b] == b"\n" for _, b in spans[:-1])  # each part ends a line ...
    longest = max(len(line) + 1 for line in data[start:].split(b"\n"))
    assert all(part <= b - a < part + longest for a, b in spans[:-1])  # ... at the first line end after `part` bytes
    if part == 1:
        assert len(spans) == data[start:].count(b"\n") + 1  # a part of 1 byte is one line
    if part >= len(data):
        assert spans == [(start, len(data))]


def _data_lines(path):
    """(line number as the readers count it: header 1, blank lines skipped; text) of every data line, by a plain loop."""
    out, n = [], 1
    for text in path.read_text(encoding="utf-8").splitlines()[1:]:
        if text.strip():
            n += 1
            out.append((n, text))
    return out


@pytest.mark.parametrize("problem", ["bad score", "duplicate", "short row"])
def test_a_bad_row_in_one_part_is_one_line_exit_2_and_no_store(capsys, cluster, tmp_path, problem):
    src = _long_csv(tmp_path / "in.csv", np.random.default_rng(3), blank_every=50)
    lines = _data_lines(src)
    at = int(len(lines) * 0.7)  # in a late part (the parts are about 64 kB; the file is over 200 kB)
    text = src.read_text(encoding="utf-8").splitlines(keepends=True)
    first_seen = None
    if problem == "bad score":
        target = lines[at][1]
        fixed = target.rsplit(",", 1)[0] + ",oops"
        want = f"line {lines[at][0]}: score value 'oops' is not a number"
    elif problem == "short row":
        target = lines[at][1]
        fixed = target.rsplit(",", 1)[0]  # 3 fields of 4
        want = f"line {lines[at][0]}: malformed CSV (CSV parse error: Expected 4 columns, got 3: {fixed})"
    else:
        target = lines[at][1]
        first_seen = lines[5][1]  # a copy of an early row, with another score: a duplicate entry late in the file
        fixed = first_seen.rsplit(",", 1)[0] + ",0.5"
        s, t, k = first_seen.split(",")[:3]
        want = f"line {lines[at][0]}: duplicate entry for system {s!r}, task {t!r}, instance {k!r}"
    i = text.index(target + "\n")
    text[i] = fixed + "\n"
    src.write_text("".join(text), encoding="utf-8")
    assert src.stat().st_size > 3 * 65536
    code, out, err = run_cli(capsys, "convert", src, tmp_path / "s.zarr", "--scheduler", cluster.scheduler_address)
    err = "".join(line + "\n" for line in err.splitlines() if not line.startswith("votebench: dask "))
    one_line_error(code, out, err, str(src), want, marker=want)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]  # no store, no temporary folder


def test_convert_of_an_input_that_cannot_be_cut_runs_here_and_says_so(capsys, cluster, tmp_path):
    import gzip

    src = _long_csv(tmp_path / "in.csv", np.random.default_rng(4), S=3, T=2, K=10)
    gz = tmp_path / "in.csv.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    code, _, err = run_cli(capsys, "convert", gz, tmp_path / "there.zarr", "--scheduler", cluster.scheduler_address)
    assert code == 0 and "converted in this process (a .csv.gz cannot be cut into parts)" in err, err
    assert run_cli(capsys, "convert", gz, tmp_path / "here.zarr")[0] == 0
    _assert_same_store(tmp_path / "here.zarr", tmp_path / "there.zarr")


# -------------------------------------------------------------------------------------------- sweep blocks
SWEEP = """\
seed = 4
store = "{store}"

[input]
path = "{path}"

[[rules]]
name = "borda"
[[rules]]
name = "copeland"

[[perturbations]]
kind = "bootstrap"
replicates = 30

[[perturbations]]
kind = "subsets"
sizes = [2, 3]
repeats = 21

[[perturbations]]
kind = "bootstrap"
name = "given"
over = "systems"
replicates = 12
block = 5
"""


def _search_block(n, variants, threads, per_thread=4):
    """The smallest block whose variants x ceil(n / block) tasks are at most per_thread per worker thread (else n)."""
    fits = [b for b in range(1, n + 1) if variants * math.ceil(n / b) <= per_thread * threads]
    return min(fits, default=n)


def test_sweep_blocks_are_sized_from_the_cluster_and_kept_on_resume(capsys, cluster, scores_csv, tmp_path):
    store = tmp_path / "sweep.zarr"
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP.format(store=store, path=scores_csv), encoding="utf-8")
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress", "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    boot, subsets = _search_block(30, 2, threads=2), _search_block(21, 2 * 2, threads=2)  # 2 rules (x 2 sizes)
    assert (boot, subsets) == (8, 11)
    assert f"perturbation 'bootstrap-tasks': block not given: {boot} per task" in err
    assert f"perturbation 'subsets': block not given: {subsets} per task" in err
    assert "'given'" not in err
    stored = json.loads(json.loads((store / "zarr.json").read_text())["attributes"]["config"])
    assert [p.get("block") for p in stored["perturbations"]] == [boot, subsets, 5]
    from engine.sweep import open_results

    groups = open_results(store)
    assert groups["scores/bootstrap-tasks"]["done"].shape == (2, math.ceil(30 / boot))
    assert groups["scores/subsets"]["done"].shape == (2, 2, math.ceil(21 / subsets))
    # a re-run here (no cluster, the file still without block) resumes with the store's blocks: nothing to compute
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0, err
    assert "resumed results store" in err and "computed 0 of" in err and "block not given" not in err


def test_sweep_without_a_cluster_keeps_the_kind_default(capsys, scores_csv, tmp_path):
    store = tmp_path / "local.zarr"
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(SWEEP.format(store=store, path=scores_csv), encoding="utf-8")
    code, _, err = run_cli(capsys, "sweep", cfg, "--no-progress")
    assert code == 0 and "block not given" not in err, err
    stored = json.loads(json.loads((store / "zarr.json").read_text())["attributes"]["config"])
    assert [p.get("block") for p in stored["perturbations"]] == [None, None, 5]  # the declaration as written


# -------------------------------------------------------------------------------------------- same answers
def test_compare_on_worker_processes_equals_here(capsys, cluster, scores_csv):
    here, there, tasks = _both(capsys, cluster, "compare", scores_csv, "--test", "permutation", "--resamples", "300",
                               "--format", "json")
    assert here[1] == there[1] and tasks >= 8  # 15 pairs in blocks of 2 on 2 threads
    assert len(json.loads(there[1])["pairs"]) == 15


def test_condorcet_on_worker_processes_equals_here(capsys, cluster, scores_csv):
    here, there, tasks = _both(capsys, cluster, "condorcet", scores_csv, "--format", "json", "--weak")
    assert here[1] == there[1] and tasks >= 6


def test_agreement_of_stores_on_worker_processes_equals_here(capsys, cluster, scores_csv, tmp_path):
    import engine

    s = engine.open_scores(scores_csv)
    a, b = tmp_path / "a.zarr", tmp_path / "b.zarr"
    engine.to_zarr(s.sel(task=["t0", "t1", "t2"]), a, chunks={"task": 1})
    engine.to_zarr(s.sel(task=["t3", "t4"]), b, chunks={"task": 1})
    here, there, _ = _both(capsys, cluster, "agreement", a, b, "--format", "json")
    assert here[1] == there[1] and json.loads(there[1])["n"] == 6


def test_report_on_worker_processes_writes_the_same_tables(capsys, cluster, scores_csv, tmp_path):
    common = ("report", scores_csv, "--rule", "borda", "--replicates", "24", "--repeats", "0", "--paired-top-k", "3",
              "--paired-resamples", "100", "--format", "svg")
    code, _, err = run_cli(capsys, *common, "--out", tmp_path / "here")
    assert code == 0, err
    before = _tasks_run(cluster)
    code, _, err = run_cli(capsys, *common, "--out", tmp_path / "there", "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert _tasks_run(cluster) - before >= 2
    tables = sorted(p.name for p in (tmp_path / "here" / "tables").iterdir())
    assert tables == sorted(p.name for p in (tmp_path / "there" / "tables").iterdir()) and tables
    for name in tables:
        assert (tmp_path / "here" / "tables" / name).read_bytes() == (tmp_path / "there" / "tables" / name).read_bytes()


EXPERIMENT = '''\
TITLE = "toy bootstrap"
DESCRIPTION = "a bootstrap and a paired test on a synthetic tensor"


def run(out, *, smoke=False, scheduler=None):
    import json

    import numpy as np

    import engine
    from engine.app.experiment import scheduler_context

    rng = np.random.default_rng(5)
    scores = engine.scores_from_array(rng.normal(size=(8, 5)) + np.arange(8)[:, None], systems=[f"s{i}" for i in range(8)])
    with scheduler_context(scheduler):
        boot = engine.bootstrap(scores, replicates=40, seed=1)
    out.mkdir(parents=True, exist_ok=True)
    values = {"replicates": np.asarray(boot["replicate_score"].values).tolist(),
              "where": "cluster" if scheduler else "here"}
    (out / "results.json").write_text(json.dumps(values))
    return {"replicates": 40}
'''


def test_an_experiment_runs_its_engine_blocks_on_worker_processes(capsys, cluster, tmp_path, monkeypatch):
    from engine.app import experiment

    monkeypatch.setattr(experiment, "ROOT", experiment.ROOT)  # --root changes the process's project folder: restored
    root = tmp_path / "root"
    (root / "experiments" / "toy").mkdir(parents=True)
    (root / "experiments" / "toy" / "run.py").write_text(textwrap.dedent(EXPERIMENT), encoding="utf-8")
    argv = ("experiment", "toy", "--root", root)
    assert run_cli(capsys, *argv, "--out", tmp_path / "here")[0] == 0
    before = _tasks_run(cluster)
    code, _, err = run_cli(capsys, *argv, "--out", tmp_path / "there", "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert _tasks_run(cluster) - before >= 2  # the bootstrap's blocks of replicates
    here = json.loads((tmp_path / "here" / "results.json").read_text())
    there = json.loads((tmp_path / "there" / "results.json").read_text())
    assert (here["where"], there["where"]) == ("here", "cluster")
    assert here["replicates"] == there["replicates"] and len(here["replicates"]) == 40
    assert os.environ.get("DASK_SCHEDULER_ADDRESS") is None
