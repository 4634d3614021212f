"""Every heavy command on a dask cluster: the same answers as in this process, its blocks run as the cluster's tasks,
bad addresses refused in one line, and the block size chosen from the cluster (issue #30).

One in-process cluster of 2 single-thread workers serves the whole module; each command runs once here and once
with ``--scheduler`` and the outputs must be equal byte for byte.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from conftest import one_line_error, run_cli

from engine.distributed.cluster import MEMORY_SHARE, TASKS_PER_THREAD, choose_block, cluster_shape

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                      memory_limit="1GiB") as c:
        yield c


@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory):
    """6 systems x 5 tasks x 12 instances, system s better by 0.15 s on average (ties none, no gaps)."""
    path = tmp_path_factory.mktemp("cluster") / "scores.csv"
    rng = np.random.default_rng(30)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "task", "instance", "score"])
        for s in range(6):
            for t in range(5):
                for i in range(12):
                    w.writerow([f"sys{s}", f"t{t}", i, round(float(rng.normal(0.15 * s, 1.0)), 5)])
    (path.parent / "scores.meta.json").write_text(json.dumps({"higher_is_better": {f"t{t}": True for t in range(5)}}))
    return path


def _tasks_run(cluster) -> int:
    """Tasks of the engine's task wrapper (``run_task``) that finished on the cluster so far (a prefix's
    ``state_counts`` counts the transitions into each state: one into ``memory`` per finished task)."""
    prefix = cluster.scheduler.task_prefixes.get("run_task")
    return 0 if prefix is None else int(prefix.state_counts.get("memory", 0))


def _both(capsys, cluster, *argv):
    """The command run here and on ``cluster``: both outputs, and how many engine tasks the cluster ran."""
    here = run_cli(capsys, *argv)
    before = _tasks_run(cluster)
    there = run_cli(capsys, *argv, "--scheduler", cluster.scheduler_address)
    assert here[0] == 0 and there[0] == 0, (here[2], there[2])
    return here, there, _tasks_run(cluster) - before


# -------------------------------------------------------------------------------------------- the block rule
def _brute_block(items, threads, memory, per, tasks_per_thread=TASKS_PER_THREAD, share=MEMORY_SHARE):
    """The documented rule by search over every block size: the smallest block that makes at most tasks_per_thread
    tasks per thread, else (when that does not fit in share x memory) the largest that fits; 1 when none does."""
    target = min(b for b in range(1, items + 1) if math.ceil(items / b) <= tasks_per_thread * threads)
    fits = [b for b in range(1, target + 1) if memory is None or b * per <= share * memory]
    return max(fits, default=1)


@pytest.mark.parametrize("items", [1, 2, 7, 50, 200, 2000])
@pytest.mark.parametrize("threads", [1, 2, 3, 16, 100])
@pytest.mark.parametrize("memory, per", [(None, 1e3), (4e9, 1e3), (4e6, 1e5), (1e6, 1e7)])
def test_block_rule_equals_a_search_over_every_block(items, threads, memory, per):
    got = choose_block(items, threads, memory, per)
    assert got == _brute_block(items, threads, memory, per)
    assert 1 <= got <= items
    if got > 1 and memory is not None:
        assert got * per <= MEMORY_SHARE * memory


def test_the_cluster_shape_is_what_the_cluster_was_started_with(cluster):
    from distributed import Client

    with Client(cluster.scheduler_address, set_as_default=False) as client:
        shape = cluster_shape(client)
    assert (shape.workers, shape.threads) == (2, 2)
    assert shape.memory_per_thread == pytest.approx(2**30)


# -------------------------------------------------------------------------------------------- same answers
def test_bootstrap_chooses_its_block_from_the_cluster_and_gives_the_same_replicates(capsys, cluster, scores_csv):
    argv = ("bootstrap", scores_csv, "--replicates", "60", "--format", "json", "--no-progress")
    here, there, tasks = _both(capsys, cluster, *argv)
    assert here[1] == there[1]
    want = choose_block(60, 2, 2**30, float(scores_csv.stat().st_size))  # 60 / (4 x 2 threads) -> 8
    assert want == 8
    assert f"--block not given: {want} replicates per task, {math.ceil(60 / want)} tasks for 2 worker thread(s)" \
        in there[2]
    assert tasks >= math.ceil(60 / want)  # one task per block (and the full-data ranking)
    assert "--block not given" not in here[2]  # in this process: the default, said nowhere


def test_a_given_block_is_kept_on_the_cluster(capsys, cluster, scores_csv):
    code, out, err = run_cli(capsys, "bootstrap", scores_csv, "--replicates", "20", "--block", "7", "--format", "json",
                             "--scheduler", cluster.scheduler_address)
    assert code == 0 and "--block not given" not in err


@pytest.mark.parametrize("test", ["permutation", "bootstrap"])
def test_compare_tests_its_pairs_in_blocks_on_the_cluster_with_the_same_results(capsys, cluster, scores_csv, test):
    here, there, tasks = _both(capsys, cluster, "compare", scores_csv, "--test", test, "--resamples", "400",
                               "--format", "json")
    assert here[1] == there[1]
    # 15 pairs on 2 threads: blocks of ceil(15 / 8) = 2 pairs -> 8 tasks per test run (the main test and the interval)
    assert tasks >= 8
    assert len(json.loads(there[1])["pairs"]) == 15


def test_condorcet_solves_its_lps_on_the_cluster_with_the_same_answers(capsys, cluster, scores_csv):
    for extra in ((), ("--weak",)):
        here, there, tasks = _both(capsys, cluster, "condorcet", scores_csv, "--format", "json", *extra)
        assert here[1] == there[1]
        assert tasks >= 6  # 6 systems on 2 threads: one LP per task
    from engine.kernels.condorcet_lp import max_condorcet_margin

    # and the answers are the LPs': a system is prospective iff its best strict margin is positive
    res = json.loads(run_cli(capsys, "condorcet", scores_csv, "--format", "json")[1])
    sums = np.zeros((5, 6))  # the task means, read from the file here: (task, system)
    with scores_csv.open() as f:
        for row in csv.DictReader(f):
            sums[int(row["task"][1:]), int(row["system"][3:])] += float(row["score"]) / 12
    assert [r["system"] for r in res["systems"]] == [f"sys{m}" for m in range(6)]
    assert [r["prospective"] for r in res["systems"]] == [max_condorcet_margin(sums, m)[0] > 1e-6 for m in range(6)]


def test_agreement_of_two_stores_on_the_cluster_equals_here(capsys, cluster, scores_csv, tmp_path):
    import engine

    s = engine.open_scores(scores_csv)
    a, b = tmp_path / "a.zarr", tmp_path / "b.zarr"
    engine.to_zarr(s.sel(task=["t0", "t1", "t2"]), a)
    engine.to_zarr(s.sel(task=["t3", "t4"]), b)
    here, there, _ = _both(capsys, cluster, "agreement", a, b, "--format", "json")
    assert here[1] == there[1]
    assert json.loads(there[1])["n"] == 6


def test_report_on_the_cluster_writes_the_same_tables(capsys, cluster, scores_csv, tmp_path):
    common = ("report", scores_csv, "--rule", "borda", "--rule", "copeland", "--replicates", "40", "--repeats", "0",
              "--paired-top-k", "4", "--paired-resamples", "200", "--format", "svg")
    code, _, err = run_cli(capsys, *common, "--out", tmp_path / "here")
    assert code == 0, err
    before = _tasks_run(cluster)
    code, _, err = run_cli(capsys, *common, "--out", tmp_path / "there", "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert _tasks_run(cluster) - before >= 2 * 2  # the bootstrap of each rule in at least 2 blocks
    tables = sorted(p.name for p in (tmp_path / "here" / "tables").iterdir())
    assert tables and any(t.startswith("intervals") for t in tables)
    for name in tables:
        assert (tmp_path / "here" / "tables" / name).read_bytes() == (tmp_path / "there" / "tables" / name).read_bytes()


# -------------------------------------------------------------------------------------------- refusals and notes
@pytest.mark.parametrize("command", ["report", "compare", "agreement", "condorcet"])
@pytest.mark.parametrize("address, fragment", [("tcp://127.0.0.1:1", "connection refused"),
                                               ("tcp://no-such-host.invalid:8786", "not found")])
def test_a_bad_scheduler_address_is_one_line_and_exit_2(capsys, scores_csv, tmp_path, command, address, fragment):
    argv = {"report": ("report", scores_csv, "--out", tmp_path / "r"), "compare": ("compare", scores_csv),
            "agreement": ("agreement", scores_csv, scores_csv), "condorcet": ("condorcet", scores_csv)}[command]
    code, out, err = run_cli(capsys, *argv, "--scheduler", address)
    one_line_error(code, out, err, "cannot connect to dask scheduler", fragment)
    assert not (tmp_path / "r").exists()


def _block_sum(shared, block):
    from engine.errors import VotebenchError

    if block == [13]:
        raise VotebenchError("block 13 is refused")
    return [float(shared[i]) for i in block]


def test_map_blocks_returns_the_blocks_in_order_and_a_task_error_as_one_message(cluster):
    from distributed import Client

    from engine.distributed.cluster import map_blocks
    from engine.errors import VotebenchError

    shared = np.arange(20.0) ** 2
    blocks = [[i, i + 1] for i in range(0, 12, 2)][::-1]  # out of order on purpose
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        assert map_blocks(client, _block_sum, shared, blocks) == [_block_sum(shared, b) for b in blocks]
        with pytest.raises(VotebenchError, match="^block 13 is refused$"):
            map_blocks(client, _block_sum, shared, [[1], [13]])


def test_a_store_made_on_the_cluster_is_resumed_with_its_block_anywhere(capsys, cluster, scores_csv, tmp_path):
    store = tmp_path / "boot.zarr"
    argv = ("bootstrap", scores_csv, "--replicates", "40", "--format", "json", "--store", store, "--no-progress")
    code, first, err = run_cli(capsys, *argv, "--scheduler", cluster.scheduler_address)
    assert code == 0 and "--block not given: 5 replicates per task" in err, err  # 40 / (4 x 2 threads)
    config = json.loads(json.loads((store / "zarr.json").read_text())["attributes"]["config"])
    assert config["perturbations"][0]["block"] == 5
    code, again, err = run_cli(capsys, *argv)  # in this process, no --block: the store's 5, not the default 50
    assert code == 0, err
    assert "resumed results store" in err and again == first
