"""Issue #24: the cost model that picks a computation path, and the progress a command shows.

* Bradley-Terry has two paths, count matrices (``dense``) and the judges' sufficient statistics
  (``statistics``, engine/kernels/btlarge.py); :mod:`engine.kernels.costs` runs the cheaper one that fits in
  memory.  At the sizes where the choice flips both give the maximum that choix and a plain dense Newton
  written here give, and the chooser takes the path of least declared time (or memory when none fits).
* A command shows one progress bar on stderr when it is a terminal (a pseudo-terminal here), nothing but its
  result otherwise or with ``--no-progress``; commands that write say where, ``bootstrap --store`` whether it
  created or resumed the store.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import DATA, REPO, bf_pair_counts, require_module
from scipy.sparse.csgraph import connected_components

from engine.kernels import battles as B
from engine.kernels import costs

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# --------------------------------------------------------------------------------------------- references
def _plain_newton(C: np.ndarray) -> np.ndarray:
    """Maximum of ``sum_ij C_ij log sigma(s_i - s_j)`` (centred) by textbook Newton with a full Hessian."""
    S = C.shape[0]
    s = np.zeros(S)
    for _ in range(100):
        d = s[:, None] - s[None, :]
        p = 1.0 / (1.0 + np.exp(-d))
        N = C + C.T
        g = C.sum(axis=1) - (N * p).sum(axis=1)
        A = N * p * (1.0 - p)
        H = np.diag(A.sum(axis=1)) - A + np.ones((S, S)) / S  # + 1 1^T / S: the free shift
        step = np.linalg.solve(H, g)
        step *= min(1.0, 1.0 / np.abs(step).max(initial=1e-300))  # steps of at most 1 (far from the maximum)
        s = s + step
        if np.abs(step).max() < 1e-13:
            break
    return s - s.mean()


def _table(S: int, T: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=S)[None, :] + rng.normal(size=(T, S))
    X = np.round(X, 1)  # some ties within judges
    X[rng.random(X.shape) < 0.05] = np.nan
    return X


def _memory_boundary(T: int, fits: int) -> tuple[int, float]:
    """A memory budget under which the chooser flips from dense to statistics between S - 1 and S = 40."""
    S = 40
    dense_lo = costs.costs("bradley_terry", costs.Sizes(systems=S - 1, judges=T, fits=fits))["dense"].bytes
    dense_hi = costs.costs("bradley_terry", costs.Sizes(systems=S, judges=T, fits=fits))["dense"].bytes
    return S, (dense_lo + dense_hi) / 2.0


# --------------------------------------------------------------------------------------------- cost model
def test_the_chooser_takes_the_path_of_least_declared_time_among_those_that_fit():
    budgets = [1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e12]
    seen = set()
    for S in (3, 30, 100, 300, 800, 1500, 3000, 10_000, 30_000):
        for T in (1, 14, 80, 1000):
            for fits in (1, 200):
                z = costs.Sizes(systems=S, judges=T, fits=fits)
                table = costs.costs("bradley_terry", z)
                for m in budgets:
                    got = costs.choose("bradley_terry", z, memory=m)
                    ok = {n: c for n, c in table.items() if c.bytes <= m}
                    want = (min(ok, key=lambda n: ok[n].seconds) if ok
                            else min(table, key=lambda n: table[n].bytes))  # brute force over the declared costs
                    assert got == want
                    seen.add(got)
    assert seen == {"dense", "statistics"}


def test_costs_grow_with_the_sizes_and_the_paths_cross_on_their_own():
    """No fixed threshold: the dense path's S^3 solves overtake the statistics path at some S, and the
    crossing depends on the judges too; the issue's 292 x 76 bootstrap goes dense."""
    def flip(T: int) -> int:
        for S in range(50, 20_000, 10):
            if costs.choose("bradley_terry", costs.Sizes(systems=S, judges=T, fits=1), memory=1e15) == "statistics":
                return S
        return 0

    lo, hi = flip(10), flip(2000)
    assert 50 < lo < 20_000 and 50 < hi < 20_000 and lo != hi and lo != 256
    for name in ("dense", "statistics"):
        c = [costs.costs("bradley_terry", costs.Sizes(systems=S, judges=20, fits=1))[name] for S in (100, 1000, 5000)]
        assert c[0].seconds < c[1].seconds < c[2].seconds and c[0].bytes <= c[1].bytes <= c[2].bytes
    assert costs.choose("bradley_terry", costs.Sizes(systems=292, judges=76, fits=200)) == "dense"
    # 10,000 systems: the dense path's (S, S) float64 work arrays do not fit in 4 GB
    assert costs.choose("bradley_terry", costs.Sizes(systems=10_000, judges=50, fits=1), memory=4 << 30) == "statistics"


def test_a_new_path_is_one_register_call_and_forced_paths_are_restored():
    calls = []

    def free(z: costs.Sizes) -> costs.Cost:
        calls.append(z)
        return costs.Cost(seconds=0.0, bytes=0.0)

    costs.register_path("test-problem", "slow", lambda z: costs.Cost(seconds=1.0 * z.systems, bytes=0.0))
    assert costs.choose("test-problem", costs.Sizes(systems=5)) == "slow"
    costs.register_path("test-problem", "free", free)
    assert costs.choose("test-problem", costs.Sizes(systems=5)) == "free" and calls
    with costs.forced("test-problem", "slow"):
        assert costs.choose("test-problem", costs.Sizes(systems=5)) == "slow"
    assert costs.choose("test-problem", costs.Sizes(systems=5)) == "free"
    with pytest.raises(KeyError):
        costs.choose("no-such-problem", costs.Sizes(systems=5))


@pytest.mark.parametrize("seed", [0, 1])
def test_both_paths_at_the_boundary_give_the_maximum_of_choix_and_of_a_plain_newton(monkeypatch, seed):
    choix = require_module("choix")
    T = 7
    S, budget = _memory_boundary(T, 1)
    monkeypatch.setenv("VOTEBENCH_MEMORY", str(int(budget)))
    for n in (S - 1, S):
        X = _table(n, T, seed)
        W, Ti = bf_pair_counts(X, np.ones(T))
        plain = _plain_newton(W + 0.5 * Ti)
        ref = choix.ilsr_pairwise_dense(W + 0.5 * Ti, tol=1e-13, max_iter=100_000)
        np.testing.assert_allclose(plain, ref - ref.mean(), atol=1e-6)
        auto = B.bradley_terry_across(X)
        np.testing.assert_allclose(auto, plain, atol=1e-8, rtol=0)
        for path in ("dense", "statistics"):
            with costs.forced("bradley_terry", path):
                np.testing.assert_allclose(B.bradley_terry_across(X), plain, atol=1e-8, rtol=0)
    assert costs.choose("bradley_terry", costs.Sizes(systems=S - 1, judges=T)) == "dense"
    assert costs.choose("bradley_terry", costs.Sizes(systems=S, judges=T)) == "statistics"


def test_bootstrap_rows_at_the_boundary_agree_on_both_paths_with_a_plain_newton(monkeypatch):
    """Rows of task weights (a task bootstrap): each row is the fit of the weighted counts."""
    T, fits = 12, 5
    S, budget = _memory_boundary(T, fits)
    rng = np.random.default_rng(7)
    w = rng.multinomial(T, np.ones(T) / T, size=fits).astype(float)
    w[1] = w[0]  # a repeated resample
    monkeypatch.setenv("VOTEBENCH_MEMORY", str(int(budget)))
    for n in (S - 1, S):
        X = _table(n, T, 3)
        want = []
        for r in range(fits):
            W, Ti = bf_pair_counts(X, w[r])
            assert connected_components((W + Ti) > 0, directed=True, connection="strong")[0] == 1  # the MLE exists
            want.append(_plain_newton(W + 0.5 * Ti))
        for path in ("dense", "statistics"):
            with costs.forced("bradley_terry", path):
                got = B.bradley_terry_across(X, weights=w)
            np.testing.assert_allclose(got, np.array(want), atol=1e-8, rtol=0)


def test_the_chosen_path_is_the_faster_one_on_a_300_system_table():
    """The issue's case: a few hundred systems fitted from count matrices take a fraction of the
    statistics path's time (measured here, best of 3)."""
    X = _table(300, 40, 11)
    assert costs.choose("bradley_terry", costs.Sizes(systems=300, judges=40)) == "dense"
    best = {}
    for path in ("dense", "statistics"):
        with costs.forced("bradley_terry", path):
            B.bradley_terry_across(X[:, :20])  # warm up (imports, compiled loops)
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                B.bradley_terry_across(X)
                times.append(time.perf_counter() - t0)
        best[path] = min(times)
    assert best["dense"] < best["statistics"]


# --------------------------------------------------------------------------------------------- progress
def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("COLUMNS", None)
    env.update(extra)
    return env


def _run_in_pty(argv: list[str], env: dict[str, str], cwd: str) -> tuple[int, str, str]:
    """Run ``python -m engine ARGV`` with stderr on a pseudo-terminal; (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "engine", *argv], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    proc.wait(timeout=60)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")


REPORT = ["report", str(DATA / "esann_statlog.csv"), "--rule", "borda", "--rule", "copeland",
          "--replicates", "30", "--repeats", "3", "--format", "svg",
          "--paired-top-k", "0"]


def test_a_terminal_gets_one_progress_bar_with_the_stage_and_a_pipe_gets_only_the_result(tmp_path):
    env = _env(VOTEBENCH_PROGRESS_DELAY="0")  # shown at once: the command need not last 2 s here
    code, out, term = _run_in_pty([*REPORT, "--out", str(tmp_path / "a")], env, str(tmp_path))
    assert code == 0, term
    assert out == f"{tmp_path / 'a' / 'index.html'}\n"
    frames = [f for f in term.replace("\n", "\r").split("\r") if f.strip()]
    bars = [f for f in frames if f.startswith("votebench: ") and "wrote" not in f]
    assert bars, term
    stages = " ".join(bars)
    assert "ranking" in stages and "bootstrap" in stages and "figure" in stages
    assert any("replicates" in f and "/30" in f for f in bars)  # the count of the bootstrap stage
    assert f"votebench: wrote report to {tmp_path / 'a'}" in term
    # the same command with stderr a pipe: its result and the one line of where it wrote, nothing else
    p = subprocess.run([sys.executable, "-m", "engine", *REPORT, "--out", str(tmp_path / "b")], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0
    assert p.stdout == f"{tmp_path / 'b' / 'index.html'}\n"
    assert p.stderr == f"votebench: wrote report to {tmp_path / 'b'}\n"


def test_no_progress_turns_the_bar_off_on_a_terminal(tmp_path):
    env = _env(VOTEBENCH_PROGRESS_DELAY="0")
    code, out, term = _run_in_pty(["rank", str(DATA / "esann_statlog.csv"), "--rule", "copeland", "--no-progress"], env,
                                  str(tmp_path))
    assert code == 0 and out.startswith("# rule copeland")
    assert term.strip() == ""
    p = subprocess.run([sys.executable, "-m", "engine", "rank", str(DATA / "esann_statlog.csv"),
                        "--rule", "copeland"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert p.returncode == 0 and p.stdout == out and p.stderr == ""


def test_output_file_says_where_it_was_written(tmp_path, capsys):
    from conftest import run_cli

    target = tmp_path / "r.csv"
    code, out, err = run_cli(capsys, "rank", str(DATA / "esann_statlog.csv"), "--format", "csv", "--output", str(target))
    assert code == 0 and out == "" and err == f"votebench: wrote {target}\n"
    assert target.read_text().startswith("rank,")


def test_bootstrap_store_says_whether_it_created_or_resumed_the_store(tmp_path):
    env = _env()
    store = tmp_path / "s.zarr"
    argv = [sys.executable, "-m", "engine", "bootstrap", str(DATA / "esann_statlog.csv"), "--replicates", "4", "--block", "2",
            "--store", str(store), "--format", "csv"]
    first = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert first.returncode == 0, first.stderr
    assert f"votebench: created results store {store} (2 blocks)\n" in first.stderr
    again = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"votebench: resumed results store {store} (2 of 2 blocks already done)\n" in again.stderr
    assert again.stdout == first.stdout  # the same replicates, read back
    fresh = subprocess.run([*argv, "--overwrite"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert f"votebench: created results store {store} (2 blocks)\n" in fresh.stderr
