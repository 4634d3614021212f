"""Mutation-testing guards for the reliability fixes (benchmarks/results/mutation.md, "Fourth pass").

Each test kills mutants that survived the suite in the fourth mutation pass over:

- the tie rule per score (engine.kernels.exact.tie_tolerance, snap_ties; Rule.magnitude; call_kernel dropping the
  tasks without any score), tame and its ``below=`` mode, the overflow-safe means, the median and the relative
  difference near the float64 limit;
- the Davidson ridge rule on the strict-win graph (battles._fit_rows, btlarge._strongly_connected_judges,
  btlarge.fit_statistics) and the symmetrised tie sums of bradley_terry_across;
- the input checks: sidecar keys and groups, weights files, Parquet cells named as written, loopback hosts, the
  bootstrap memory check;
- the results stores (lost chunks, zarr's partial writes, damaged chunks) and the dask scheduler handshake.

References never come from the code under test: loops over the definition, numpy.median on values that do not
overflow, fractions.Fraction arithmetic, scipy's strong components and minimiser, files and sockets made here,
and hand-worked messages.
"""

from __future__ import annotations

import io
import threading
import time
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import dead_pid, tcp_port

from engine.errors import VotebenchError
from engine.kernels.baselines import median_across, relative_difference_across


# --------------------------------------------------------------------------- weights files
def _read_weights(spec):
    from engine.app.options import read_weights

    return read_weights(spec)


def test_weights_groups_and_mappings_pass_through(tmp_path):
    assert _read_weights(None) is None
    assert _read_weights("groups") == "groups"
    assert _read_weights({"a": 2, "b": 0.5}) == {"a": 2.0, "b": 0.5}
    with pytest.raises(VotebenchError) as info:
        _read_weights({"a": -1})
    assert str(info.value) == "weights: weight of task 'a' must be a finite non-negative number, got -1"


def test_weights_csv_with_and_without_a_header(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("a,2\n\nb,0.5\n")  # no header: the first line is a task; a blank line is skipped
    assert _read_weights(plain) == {"a": 2.0, "b": 0.5}
    for header in ("task,weight", "name,W", "t, w "):
        f = tmp_path / "h.csv"
        f.write_text(f"{header}\na,3\n")
        assert _read_weights(f) == {"a": 3.0}, header
    bad = tmp_path / "bad.csv"
    bad.write_text("a,1\nb,2,3\n")
    with pytest.raises(VotebenchError) as info:
        _read_weights(bad)
    assert str(info.value) == f"{bad}: line 2: expected 'task,weight'"
    for text, why in (("a\nb,1\n", "line 1: expected 'task,weight'"),  # a first line of one cell: no header either
                      ("a,heavy\n", "line 1: weight 'heavy' is not a number"),
                      ("task,weight\na,1\nb,-1\n", "weight of task 'b' must be a finite non-negative number, got -1.0")):
        bad.write_text(text)
        with pytest.raises(VotebenchError) as info:
            _read_weights(bad)
        assert str(info.value) == f"{bad}: {why}", text


def test_weights_file_messages(tmp_path):
    missing = tmp_path / "absent.json"
    with pytest.raises(VotebenchError) as info:
        _read_weights(missing)
    assert str(info.value) == f"{missing}: weights file not found (give a JSON/CSV file or 'groups')"
    folder = tmp_path / "w.json"
    folder.mkdir()
    with pytest.raises(VotebenchError) as info:
        _read_weights(folder)
    assert str(info.value) == f"{folder}: cannot read weights file (Is a directory)"
    latin = tmp_path / "latin.csv"
    latin.write_bytes("caf\xe9,1\n".encode("latin-1"))
    with pytest.raises(VotebenchError) as info:
        _read_weights(latin)
    assert str(info.value).startswith(f"{latin}: cannot read weights file ('utf-8' codec can't decode byte 0xe9")
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": ')
    with pytest.raises(VotebenchError) as info:
        _read_weights(broken)
    assert str(info.value).startswith(f"{broken}: malformed JSON weights (Expecting value: line 1")
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(VotebenchError) as info:
        _read_weights(listed)
    assert str(info.value) == f"{listed}: JSON weights must be an object {{task: weight}}"
    negative = tmp_path / "neg.json"
    negative.write_text('{"a": 1, "b": -2}')
    with pytest.raises(VotebenchError) as info:
        _read_weights(negative)
    assert str(info.value) == f"{negative}: weight of task 'b' must be a finite non-negative number, got -2"


def test_weights_file_is_read_as_utf8_whatever_the_locale(tmp_path, monkeypatch):
    """A machine whose locale encoding is Latin-1: a UTF-8 task name must still be read as written."""
    f = tmp_path / "w.csv"
    f.write_text("café,2\n", encoding="utf-8")
    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: real(encoding) if encoding else "latin-1")
    assert _read_weights(f) == {"café": 2.0}


# --------------------------------------------------------------------------- small input checks
def test_loopback_means_a_loopback_ip_literal():
    from engine.app.dashboard import is_loopback

    assert is_loopback("[0:0:0:0:0:0:0:1]") and is_loopback("[::1]") and is_loopback("127.0.0.2")
    # not IP literals (an "X" is no part of an address): a token is required
    assert not any(is_loopback(h) for h in ("X::1", "127.0.0.1X", "X127.0.0.1", " ::1"))


def test_a_text_cell_is_named_quoted(tmp_path):
    import engine

    f = tmp_path / "t.csv"
    f.write_text("system,a\nx,1.5\ny,abc\n")
    with pytest.raises(VotebenchError) as info:
        engine.open_scores(f)
    assert "line 3: task 'a' value 'abc' is not a number" in str(info.value), str(info.value)


def test_bootstrap_memory_budget(monkeypatch):
    """The documented budget: 3 float64 per replicate and system, and 8 float64 per pair of replicates (the
    correlations of the stability summary); refused when it exceeds the available memory, in one message."""
    import psutil

    from engine.sweep import check_bootstrap_memory

    B, S = 1000, 7
    need = 3 * 8 * B * S + 8 * 8 * B * B

    class Mem:
        def __init__(self, available):
            self.available = available

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Mem(need))
    check_bootstrap_memory(B, S)  # exactly fits
    monkeypatch.setattr(psutil, "virtual_memory", lambda: Mem(need - 1))
    for kwargs, who in (({}, "7 systems"), ({"at_least": True}, "at least 7 systems"), ({"at_least": False}, "7 systems")):
        with pytest.raises(VotebenchError) as info:
            check_bootstrap_memory(B, S, **kwargs)
        msg = str(info.value)
        assert msg.startswith(f"--replicates 1000: the replicate scores and ranks of {who} and the correlations of every "
                              "pair of replicates (stability) need about "), msg
        assert msg.endswith("available; use fewer replicates"), msg
    # the other shapes of the same budget: many systems, few replicates (and the other way round)
    for b, s in ((10, 10**6), (3000, 2)):
        monkeypatch.setattr(psutil, "virtual_memory", lambda b=b, s=s: Mem(24 * b * s + 64 * b * b))
        check_bootstrap_memory(b, s)
        monkeypatch.setattr(psutil, "virtual_memory", lambda b=b, s=s: Mem(24 * b * s + 64 * b * b - 1))
        with pytest.raises(VotebenchError):
            check_bootstrap_memory(b, s)


# --------------------------------------------------------------------------- damaged stores
def _raiser(filename: str, exc: type = ValueError, text: str = "bad chunk"):
    """A function whose code lives in ``filename`` (as if it were a module of that library) and raises ``exc``."""
    ns: dict = {}
    exec(compile(f"def boom():\n    raise {exc.__name__}({text!r})\n", filename, "exec"), {exc.__name__: exc}, ns)
    return ns["boom"]


def _caught(fn):
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        return exc
    raise AssertionError("did not raise")


def test_storage_failure_looks_at_every_frame_and_every_link_of_the_chain():
    from engine.sweep import storage_failure

    for where, want in (("env/site-packages/zarr/core/array.py", True),
                        ("env/site-packages/numcodecs/zstd.py", True),
                        ("env\\Lib\\site-packages\\zarr\\codecs\\blosc.py", True),  # Windows separators
                        ("u/zarr_tools/read.py", False), ("u/project/zarr.py", False)):
        exc = _caught(_raiser(where))  # the first frame is this test's, the zarr frame the second
        assert storage_failure(exc) is want, where

    inner = _raiser("env/site-packages/zarr/storage.py")

    def explicit():  # raise ... from, outside an except block: __cause__ only
        exc = _caught(inner)
        raise RuntimeError("wrapped") from exc

    def implicit():  # raised while handling: __context__ only
        try:
            inner()
        except ValueError:
            raise RuntimeError("while handling")  # noqa: B904 - the implicit chain is the point

    e1 = _caught(explicit)
    assert e1.__cause__ is not None and e1.__context__ is None and storage_failure(e1)
    e2 = _caught(implicit)
    assert e2.__cause__ is None and e2.__context__ is not None and storage_failure(e2)

    # a cycle of contexts without any storage frame: answered (False), not looped forever
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a
    out = []
    t = threading.Thread(target=lambda: out.append(storage_failure(a)), daemon=True)
    t.start()
    t.join(10)
    assert out == [False]


def test_damaged_store_message():
    from engine.sweep import damaged_store

    err = damaged_store("/data/s.zarr", ValueError("  bad chunk header\nsecond line"))
    assert isinstance(err, VotebenchError)
    assert str(err) == ("/data/s.zarr: corrupted or unreadable chunk in this results store (ValueError: bad chunk header); "
                        "delete the store, or run its sweep or bootstrap again with --overwrite")
    assert "(KeyError: );" in str(damaged_store("s", KeyError()))


# --------------------------------------------------------------------------- median and relative difference
def _weighted_median(values, mult):
    """The median of the multiset where ``values[t]`` appears ``mult[t]`` times (Python ints, no expansion)."""
    pairs = sorted((float(v), int(m)) for v, m in zip(values, mult) if m > 0)
    n = sum(m for _, m in pairs)

    def at(k):  # the k-th element (0-based) of the sorted multiset
        for v, m in pairs:
            if k < m:
                return v
            k -= m
        raise AssertionError(k)

    return (Fraction(at((n - 1) // 2)) + Fraction(at(n // 2))) / 2


@pytest.mark.parametrize("total", [2**15, 40_000, 2**31, 2**33])
def test_median_multiplicities_beyond_narrow_integers(total):
    """Multiplicities summing to 2**15 or 2**31 and beyond: the cumulative counts must not wrap."""
    X = np.array([[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
    w = [total // 2, total // 2 - 1, total - 2 * (total // 2) + 1]
    want = [float(_weighted_median(X[:, s], w)) for s in range(2)]
    assert want == [1.5, 4.5]
    np.testing.assert_array_equal(median_across(X, weights=np.array(w, dtype=float)), want)


def test_median_batches_of_profiles_and_weights():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 9, size=(2, 5, 3)).astype(float)  # two profiles
    W = rng.integers(0, 3, size=(4, 2, 5)).astype(float)  # four weight rows for each profile
    W[..., 0] = 1.0
    got = median_across(X, weights=W)
    assert got.shape == (4, 2, 3)
    for a in range(4):
        for b in range(2):
            for s in range(3):
                assert got[a, b, s] == float(_weighted_median(X[b, :, s], W[a, b])), (a, b, s)
    assert median_across(X[0], weights=np.zeros((0, 5))).shape == (0, 3)  # no weight rows: no medians


def test_median_messages_name_the_rule():
    def message(*args, **kwargs):
        with pytest.raises(ValueError) as info:
            median_across(*args, **kwargs)
        return str(info.value)

    nan = np.ones((2, 3, 4))  # two profiles of three tasks: a missing score, without weights
    nan[1, 2, 0] = np.nan
    assert message(nan) == ("median: X contains missing (NaN) scores; median needs complete data, so apply a "
                            "missing-value policy first")
    assert message(np.array([[1.0, np.nan], [1.0, 2.0]]), weights=np.array([1.0, 2.0])).startswith("median: X contains missing")
    assert message(np.array([[1.0, np.inf]])) == "median: X contains infinite scores"
    assert message(np.ones((2, 2)), weights=np.array([0.5, 1.0])) == (
        "median: task weights of the median must be whole numbers (multiplicities: a task of weight k counts k times)")
    assert message(np.ones((2, 2)), weights=np.array([-1.0, 1.0])).startswith("median:")


def test_median_of_tiny_scores_beside_a_huge_one_keeps_their_bits():
    """A system's largest score is huge but below 2**1000: nothing is scaled, the small middle values keep every bit."""
    X = np.array([[1e300, 7.0], [1e-20, 8.0], [3e-20, 9.0], [5e-20, 10.0]])
    np.testing.assert_array_equal(median_across(X), [np.median(X[:, 0]), 8.5])
    Y = np.array([[1.7e308], [1e-290], [3e-290], [5e-290]])  # scaled by 2**-24 only: the middle values stay normal
    np.testing.assert_array_equal(median_across(Y), [np.median(Y[:, 0])])


def _reldiff_reference(X):
    """Relative difference by its definition in exact arithmetic (every score present, equal weights)."""
    F = [[Fraction(float(v)) for v in row] for row in X]
    T, S = len(F), len(F[0])
    out = []
    for i in range(S):
        acc = Fraction(0)
        for j in range(S):
            if j != i:
                acc += sum(((F[t][i] - F[t][j]) / (F[t][i] + F[t][j]) if F[t][i] + F[t][j] > 0 else 0)
                           for t in range(T)) / T
        out.append(float(acc / (S - 1)))
    return out


def test_relative_difference_of_tiny_scores_in_a_task_with_a_huge_one():
    X = np.array([[1e300, 1e-300, 3e-300, 2e-300], [1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(relative_difference_across(X), _reldiff_reference(X), rtol=0, atol=1e-15)


def test_relative_difference_messages_name_the_rule():
    def message(*args, **kwargs):
        with pytest.raises(ValueError) as info:
            relative_difference_across(*args, **kwargs)
        return str(info.value)

    assert message(np.array([[1.0, -2.0]])) == (
        "relative_difference: relative difference (u - v) / (u + v) needs non-negative scores, but X has negative "
        "scores on tasks of positive weight (negated lower-is-better metrics must be mapped to non-negative "
        "higher-is-better scores first)")
    assert message(np.array([[1.0, np.inf]])) == "relative_difference: X contains infinite scores"
    assert message(np.ones((2, 2)), weights=np.array([-1.0, 1.0])).startswith("relative_difference:")


# --------------------------------------------------------------------------- the dask scheduler handshake
def _handshake_error(address, timeout):
    from engine.distributed.client import check_handshake

    t0 = time.monotonic()
    with pytest.raises(VotebenchError) as info:
        check_handshake(address, timeout)
    return str(info.value), time.monotonic() - t0


def test_handshake_with_a_real_scheduler_passes():
    from distributed import LocalCluster

    from engine.distributed.client import check_handshake

    for protocol, where in (("tcp://", {"host": "127.0.0.1"}), ("inproc://", {})):  # inproc: no refused-port probe
        with LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol=protocol, **where) as c:
            assert c.scheduler_address.startswith(protocol)
            t0 = time.monotonic()
            assert check_handshake(c.scheduler_address, "1s") is None
            assert check_handshake(c.scheduler_address, 1) is None
            assert time.monotonic() - t0 < 5


def test_handshake_refused_silent_and_garbage_ports():
    port, stop = tcp_port(listen=False)
    msg, took = _handshake_error(f"tcp://127.0.0.1:{port}", "30s")
    assert msg == (f"cannot connect to dask scheduler 'tcp://127.0.0.1:{port}' (connection refused: nothing listens on "
                   f"127.0.0.1:{port}; start the scheduler, or check the address)")
    assert took < 5  # at once, not after the 30 s timeout
    for timeout in ("1s", 1):  # a number is seconds
        port, stop = tcp_port()  # accepts, never answers
        try:
            msg, took = _handshake_error(f"tcp://127.0.0.1:{port}", timeout)
        finally:
            stop()
        assert msg == (f"cannot connect to dask scheduler 'tcp://127.0.0.1:{port}' (no dask handshake within 1 s: is this "
                       "the scheduler's port (8786 by default)?)")
        assert 0.9 < took < 5
    port, stop = tcp_port(b"\xff" * 64)  # answers with bytes that are no dask frames: a frame count of 2**64 - 1
    try:
        msg, took = _handshake_error(f"tcp://127.0.0.1:{port}", "20s")
    finally:
        stop()
    assert msg == (f"cannot connect to dask scheduler 'tcp://127.0.0.1:{port}' (it answered, but not as a dask scheduler: "
                   "is this the scheduler's port (8786 by default)?)")
    assert took < 10
    port, stop = tcp_port(b"\x00" * 64)  # zero frames, then a short read: any other error is named by its first line
    try:
        msg, took = _handshake_error(f"tcp://127.0.0.1:{port}", "20s")
    finally:
        stop()
    assert msg.startswith(f"cannot connect to dask scheduler 'tcp://127.0.0.1:{port}' (unpack_from requires a buffer of "
                          "at least 8 bytes"), msg
    assert msg.endswith(")") and "\n" not in msg and "scheduler's port" not in msg
    assert took < 10


def test_handshake_without_a_timeout_waits_dask_default_30s(monkeypatch):
    import socket

    seen = []

    def refuse(address, timeout=None):
        seen.append((address, timeout))
        raise ConnectionRefusedError

    monkeypatch.setattr(socket, "create_connection", refuse)
    msg, _ = _handshake_error("tcp://127.0.0.1:9", None)
    assert seen == [(("127.0.0.1", 9), 30.0)] and "connection refused" in msg


# --------------------------------------------------------------------------- Bradley-Terry: ridge rules, batches, starts
def _strict_connected(X):
    """Strong connectivity of "i beat j in some judge" over the systems with a battle (scipy), by loops."""
    from scipy.sparse.csgraph import connected_components

    T, S = X.shape
    E = np.zeros((S, S), dtype=int)
    battle = np.zeros(S, dtype=bool)
    for t in range(T):
        for i in range(S):
            for j in range(S):
                if i != j and not np.isnan(X[t, i]) and not np.isnan(X[t, j]):
                    battle[i] = True
                    E[i, j] |= X[t, i] > X[t, j]
    keep = np.flatnonzero(battle)
    return keep.size <= 1 or connected_components(E[np.ix_(keep, keep)], directed=True, connection="strong")[0] == 1


def test_strict_win_connectivity_of_tables_with_ties_only():
    from engine.kernels import btlarge as L

    rng = np.random.default_rng(5)
    seen = set()
    for case in range(60):
        T, S = int(rng.integers(1, 4)), int(rng.integers(2, 6))
        X = np.full((T, S), float(rng.integers(0, 3))) if case % 3 == 0 else rng.integers(0, 3, size=(T, S)).astype(float)
        X[rng.random(X.shape) < 0.2] = np.nan
        want = _strict_connected(X)
        assert L.judge_statistics(X, np.ones(T)).connected_wins == want, X
        seen.add(want)
    assert seen == {True, False}
    assert not L.judge_statistics(np.array([[1.0, 1.0, 1.0], [2.0, 2.0, np.nan]]), np.ones(2)).connected_wins


def test_davidson_all_ties_report_the_forced_ridge():
    from engine.kernels import btlarge as L

    st = L.judge_statistics(np.array([[1.0, 1.0, 1.0], [0.0, 0.0, np.nan]]), np.ones(2))
    theta, nu, lam, its = L.fit_statistics(st, tie_model="davidson", ridge=0.25)
    assert nu == np.inf and lam == 0.25 and its == 0 and theta.tolist() == [0.0, 0.0, 0.0]
    assert L.fit_statistics(st, tie_model="davidson")[2] == 0.0


def _half_gradient(W, T, s, lam):
    """Gradient of sum_ij (W + T/2)_ij log sigma(s_i - s_j) - lam/2 |s|^2, written out."""
    C = W + T / 2.0
    N = C + C.T
    P = 1.0 / (1.0 + np.exp(-(s[:, None] - s[None, :])))
    return C.sum(axis=1) - (N * P).sum(axis=1) - lam * s


def test_count_fit_with_a_forced_ridge_solves_the_penalised_equations():
    from engine.kernels.battles import fit_bradley_terry

    W = np.array([[0.0, 3.0, 1.0], [1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])
    T = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    fit = fit_bradley_terry(W, T, ridge=0.5)
    assert float(fit.ridge) == 0.5
    np.testing.assert_allclose(_half_gradient(W, T, fit.strength, 0.5), 0.0, atol=1e-9)
    assert abs(fit.strength.sum()) < 1e-12
    assert np.issubdtype(fit.iterations.dtype, np.integer)  # "ndarray of int"


def test_count_fit_rows_without_battles_do_not_stop_the_others():
    from engine.kernels.battles import fit_bradley_terry

    W = np.array([[[0.0, 0.0], [0.0, 0.0]], [[0.0, 2.0], [1.0, 0.0]]])  # no battle at all, then 2 wins to 1
    fit = fit_bradley_terry(W)
    assert np.isnan(fit.strength[0]).all()
    np.testing.assert_allclose(fit.strength[1], [np.log(2.0) / 2, -np.log(2.0) / 2], atol=1e-12)


def test_davidson_rows_of_one_group_each_get_their_ridge():
    """Two fits with the same systems: every battle a tie (nu = inf), then one tie and one win of the second system
    (no MLE under Davidson's model: the ridge 1e-6 * sum N / S = 1e-6 * 4 / 2)."""
    from engine.kernels.battles import fit_bradley_terry

    W = np.array([[[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]]])
    T = np.array([[[0.0, 1.0], [1.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]]])
    fit = fit_bradley_terry(W, T, tie_model="davidson")
    assert fit.ridge.tolist() == [0.0, 2e-6]
    assert fit.tie_param[0] == np.inf and 0 < fit.tie_param[1] < 1e6
    assert fit.strength[0].tolist() == [0.0, 0.0]
    assert np.isfinite(fit.strength[1]).all() and fit.strength[1, 1] > fit.strength[1, 0]


def test_a_system_with_a_single_battle_takes_part():
    """0 beats 1, 1 beats 0, 0 ties 2 (its only battle): every strength 0 under ties as half wins (hand-worked:
    sigma(s2 - s0) = 1/2 and 2 sigma(s0 - s1) + 1/2 = 3/2)."""
    from engine.kernels.battles import bradley_terry_across

    X = np.array([[2.0, 1.0, np.nan], [1.0, 2.0, np.nan], [1.0, np.nan, 1.0]])
    np.testing.assert_allclose(bradley_terry_across(X), [0.0, 0.0, 0.0], atol=1e-12)


def test_a_warm_start_at_the_maximum_takes_one_newton_step():
    """``start``: the fit begins there (the bootstrap's warm start); a start at the maximum, shifted by any constant
    (strengths are defined up to a shift) or with NaN for a system without battles, converges in one step."""
    from engine.kernels.battles import fit_bradley_terry

    W = np.array([[0.0, 5.0, 1.0, 0.0], [2.0, 0.0, 4.0, 0.0], [3.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    T = np.array([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 2.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    cold = fit_bradley_terry(W, T)
    assert int(cold.iterations) >= 3 and np.isnan(cold.strength[3])
    np.testing.assert_allclose(_half_gradient(W[:3, :3], T[:3, :3], cold.strength[:3], 0.0), 0.0, atol=1e-9)
    for start in (cold.strength, cold.strength + 5.0):
        warm = fit_bradley_terry(W, T, start=start)
        assert int(warm.iterations) <= 1
        np.testing.assert_allclose(warm.strength, cold.strength, atol=1e-9)
    # with a ridge the shift matters: the penalised maximum is centred, and so is the start it is given
    cold = fit_bradley_terry(W, T, ridge=0.5)
    warm = fit_bradley_terry(W, T, ridge=0.5, start=cold.strength + 5.0)
    assert int(cold.iterations) >= 3 and int(warm.iterations) <= 1
    np.testing.assert_allclose(warm.strength, cold.strength, atol=1e-9)


# --------------------------------------------------------------------------- results stores: lost chunks, partial writes
def _store_group(path):
    """A results group written by hand: flags ``done`` (point, rule), a fill-valued coordinate ``point`` (no chunk file)
    and data variables ``a`` and ``b`` (point, system), one chunk per point."""
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    g = root.create_group("g")
    g.create_array("done", shape=(2, 2), chunks=(1, 1), dtype=bool, dimension_names=("point", "rule"), fill_value=False)
    g.create_array("point", shape=(2,), chunks=(1,), dtype="f8", dimension_names=("point",), fill_value=0.0)
    for name in ("a", "b"):
        g.create_array(name, shape=(2, 3), chunks=(1, 3), dtype="f8", dimension_names=("point", "system"), fill_value=np.nan)
    return root, g


def _block(var, region, done_index):
    from engine.sweep.kinds import Block

    return Block(group="g", var=var, region=region, done_index=done_index, compute=lambda: None)


def _files(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())


def test_lost_chunks_are_those_of_the_block_only(tmp_path):
    from engine.sweep.results import pending_blocks

    root, g = _store_group(tmp_path / "s.zarr")
    g["a"][1] = [1.0, 2.0, 3.0]
    g["done"][1, 0] = True
    assert _files(tmp_path / "s.zarr" / "g" / "point") == ["zarr.json"]  # the coordinate: no chunk file
    own = _block("a", (slice(1, 2),), (1, 0))  # the block of variable a, point 1 (b's chunk is not its data)
    assert pending_blocks(root, [own]) == []
    # a kind with its own writer names no array: every data variable of the point, not the flags, not the coordinates
    grid = _block("grid", (slice(1, 2),), (1, 0))
    assert pending_blocks(root, [grid]) == [grid]  # b's chunk of point 1 is missing
    g["b"][1] = [4.0, 5.0, 6.0]
    assert pending_blocks(root, [grid]) == []
    assert pending_blocks(root, [_block("grid", (slice(0, 2),), (1, 0))])  # point 0 was never written
    # an empty region loses nothing; an integer selects one point
    assert pending_blocks(root, [_block("a", (slice(1, 1),), (1, 0))]) == []
    assert pending_blocks(root, [_block("a", (slice(0, 0),), (1, 0))]) == []
    g.create_array("c", shape=(4, 3), chunks=(2, 3), dtype="f8", fill_value=np.nan)  # chunks of two points, none written
    assert pending_blocks(root, [_block("c", (slice(1, 1),), (1, 0))]) == []
    assert pending_blocks(root, [_block("c", (slice(1, 2),), (1, 0))])
    assert pending_blocks(root, [_block("a", (1,), (1, 0))]) == []
    assert pending_blocks(root, [_block("a", (0,), (1, 0))])
    # a block whose flag is not set is pending whatever its files
    assert pending_blocks(root, [_block("a", (slice(1, 2),), (0, 1))])


def test_stores_off_the_local_disk_are_not_checked_for_files():
    import zarr

    from engine.sweep.results import pending_blocks

    root = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    g = root.create_group("g")
    g.create_array("done", shape=(1,), chunks=(1,), dtype=bool, fill_value=False)
    g.create_array("a", shape=(1, 2), chunks=(1, 2), dtype="f8", fill_value=np.nan)
    g["done"][0] = True  # its data was never written, but there are no files to look at
    assert pending_blocks(root, [_block("a", (slice(0, 1),), (0,))]) == []


def test_a_block_equal_to_the_fill_value_still_writes_its_chunk(tmp_path):
    from types import SimpleNamespace

    from engine.sweep.results import pending_blocks, write_block

    root, g = _store_group(tmp_path / "s.zarr")
    blk = _block("a", (slice(0, 1),), (0, 0))
    write_block(root, blk, np.full((1, 3), np.nan), SimpleNamespace(write=None, summary=None))
    assert "c/0/0" in _files(tmp_path / "s.zarr" / "g" / "a") and bool(g["done"][0, 0])
    assert pending_blocks(root, [blk]) == []


def test_only_zarr_partial_writes_are_removed(tmp_path):
    from engine.sweep.results import _remove_partial_writes

    (tmp_path / "g" / "a").mkdir(parents=True)
    zarr_tmp = tmp_path / "g" / "a" / f"zarr.json.{'0123456789abcdef' * 2}.partial"
    kept = [tmp_path / "notes.partial", tmp_path / "g" / f"c.{'0123456789abcdef' * 2}.partial.bak",
            tmp_path / "g" / f"c.{'0123456789ABCDEF' * 2}.partial"]
    for p in [zarr_tmp, *kept]:
        p.write_text("x")
    folder = tmp_path / "g" / f"d.{'fedcba9876543210' * 2}.partial"  # a folder of that name is not a write
    folder.mkdir()
    _remove_partial_writes(tmp_path)
    assert not zarr_tmp.exists() and all(p.exists() for p in kept) and folder.is_dir()


def test_lost_blocks_are_counted_in_one_warning_naming_the_store(tmp_path, caplog):
    from engine.sweep.results import pending_blocks

    path = tmp_path / "s.zarr"
    root, g = _store_group(path)
    g["a"][:] = np.arange(6.0).reshape(2, 3)
    g["done"][:, 0] = True
    blocks = [_block("a", (slice(p, p + 1),), (p, 0)) for p in (0, 1)]
    with caplog.at_level("WARNING", logger="engine"):
        assert pending_blocks(root, blocks) == []
    assert caplog.messages == []  # nothing lost, nothing said
    for p in (0, 1):
        (path / "g" / "a" / "c" / str(p) / "0").unlink()
    with caplog.at_level("WARNING", logger="engine"):
        assert pending_blocks(root, blocks) == blocks
    assert caplog.messages == [f"results store {path}: 2 finished block(s) had lost their data and are computed again"]


def test_unreadable_done_flags_stop_the_resume_in_one_line(tmp_path):
    from engine.sweep.results import pending_blocks

    path = tmp_path / "s.zarr"
    root, g = _store_group(path)
    g["done"][0, 0] = True
    (path / "g" / "done" / "c" / "0" / "0").write_bytes(b"not a zstd frame")
    with pytest.raises(VotebenchError) as info:
        pending_blocks(root, [_block("a", (slice(0, 1),), (0, 0))])
    kind = str(info.value).split("(")[1].split(")")[0]
    assert kind and kind != "NoneType"  # the error zarr raised, named
    assert str(info.value) == (f"{root.store}: cannot resume this results store: the done flags of group 'g' cannot be "
                               f"read ({kind}); delete it or run again with --overwrite")


# --------------------------------------------------------------------------- sidecar keys
@pytest.mark.parametrize("key", ["lower-is-better", "Lower is better", "lower_is_better"])
def test_lower_is_better_is_refused_however_it_is_spelt(key):
    from engine.labelled.canonical import check_sidecar

    with pytest.raises(VotebenchError) as info:
        check_sidecar({key: {"a": True}})
    assert str(info.value) == ("sidecar: a sidecar gives directions as 'higher_is_better': {task: false} for the tasks "
                               f"where lower is better, not as {key!r}")


def test_a_misspelt_key_after_the_known_ones_is_still_refused():
    from engine.labelled.canonical import check_sidecar

    check_sidecar({"higher_is_better": {"a": True}, "task_groups": {}, "source": "x"})  # known keys and an unrelated one
    with pytest.raises(VotebenchError) as info:
        check_sidecar({"higher_is_better": {"a": True}, "task_group": {}})
    assert str(info.value) == "sidecar: unknown sidecar key 'task_group': did you mean 'task_groups'?"


# --------------------------------------------------------------------------- the tie rule per score, every small case
def test_tie_rule_per_score_on_every_small_row_at_once():
    """Every row of three scores from a set with near ties, under every choice of per-score magnitudes, snapped as
    one batch: each row equals the definition by loops (a large magnitude of one score joins nothing else)."""
    import itertools

    from conftest import bf_tie_classes

    from engine.kernels.exact import TIE_RTOL, snap_ties

    values = [0.1, 0.1 + 5e-13, 1.0, np.nan]
    mags = [0.0, 1.0, 1e3]
    rows = list(itertools.product(values, repeat=3))
    cases = [(r, m) for r in rows for m in itertools.product(mags, repeat=3)]
    X = np.array([r for r, _ in cases])
    M = np.array([m for _, m in cases])
    got = snap_ties(X, M)
    for (r, m), g in zip(cases, got):
        x = np.array(r)
        tol = TIE_RTOL * np.maximum(np.where(np.isnan(x), 0.0, np.abs(x)), np.array(m))
        np.testing.assert_array_equal(g, bf_tie_classes(x, tol), err_msg=f"{r} {m}")
    # the same rows one by one (no batch effect)
    for i in range(0, len(cases), 97):
        np.testing.assert_array_equal(snap_ties(X[i], M[i]), got[i])


# --------------------------------------------------------------------------- call_kernel
@pytest.mark.filterwarnings("ignore:Alternatives with indices")  # pymcdm: on one criterion all but the best are dominated
def test_a_task_without_scores_is_dropped_from_every_replicate_of_a_batch():
    """Three replicates of two tasks (one without any score) and four systems: TOPSIS of each replicate equals TOPSIS
    of its scored task alone, by pymcdm."""
    from pymcdm.methods import TOPSIS

    from engine.labelled.core import call_kernel
    from engine.rules import get_rule

    rng = np.random.default_rng(5)
    scored = rng.uniform(0.1, 1.0, size=(3, 1, 4))
    X = np.concatenate([scored, np.full((3, 1, 4), np.nan)], axis=1)
    got = call_kernel(get_rule("topsis"), X, None, {})
    for b in range(3):
        want = TOPSIS()(scored[b].T, np.array([1.0]), np.array([1]))
        np.testing.assert_allclose(got[b], want, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:Alternatives with indices")
def test_a_dropped_task_takes_its_weight_along_and_an_absent_system_gets_nan():
    """Weighted TOPSIS over three tasks, the second without any score and a fourth system without any: the others'
    closeness equals pymcdm's TOPSIS on tasks one and three under their own weights; the absent system is NaN."""
    from pymcdm.methods import TOPSIS

    from engine.labelled.core import call_kernel
    from engine.rules import get_rule

    rng = np.random.default_rng(11)
    X = rng.uniform(0.1, 1.0, size=(3, 5))
    X[1] = np.nan
    X[:, 3] = np.nan
    w = np.array([0.2, 0.5, 0.3])
    got = call_kernel(get_rule("topsis"), X, w, {})
    keep = [0, 1, 2, 4]
    want = TOPSIS()(X[np.ix_([0, 2], keep)].T, w[[0, 2]] / w[[0, 2]].sum(), np.array([1, 1]))
    assert np.isnan(got[3])
    np.testing.assert_allclose(got[keep], want, rtol=1e-12)


def test_a_kernel_error_names_the_rule():
    from engine.labelled.core import call_kernel
    from engine.rules import get_rule

    with pytest.raises(VotebenchError) as info:
        call_kernel(get_rule("median"), np.array([[0.5, 0.2, 0.9]]), np.array([0.5]), {})
    assert str(info.value) == ("rule 'median': median: task weights of the median must be whole numbers (multiplicities: "
                               "a task of weight k counts k times)")


def test_tie_rule_boundaries():
    """A gap exactly equal to the tolerance joins (the rule says "at most"); integers come back as float64 scores."""
    from engine.kernels.exact import TIE_RTOL, snap_ties

    assert TIE_RTOL * 1.0 == 1e-12 and 1e-12 - 0.0 == 1e-12  # the gap and the tolerance below are one float64
    assert snap_ties(np.array([0.0, 1e-12]), 1.0).tolist() == [1e-12, 1e-12]
    assert snap_ties(np.array([0.0, 2e-12]), 1.0).tolist() == [0.0, 2e-12]
    out = snap_ties([3, 1, 3])
    assert out.dtype == np.float64 and out.tolist() == [3.0, 1.0, 3.0]
    assert snap_ties(np.float64(0.3)).tolist() == 0.3  # a single score: nothing to join


def test_tie_tolerance_of_missing_and_infinite_values_is_zero():
    from engine.kernels.exact import tie_tolerance

    assert tie_tolerance(np.array([np.nan, np.inf, -np.inf, 0.5])).tolist() == [0.0, 0.0, 0.0, 5e-13]
    # a magnitude that is not finite is no magnitude: the score's own size decides
    got = tie_tolerance(np.array([0.5, 0.5, 0.5]), np.array([np.inf, np.nan, 4.0]))
    assert got.tolist() == [5e-13, 5e-13, 4e-12]


# --------------------------------------------------------------------------- tame: powers of two, worked by hand
def test_tame_default_threshold_is_strictly_above_two_to_the_500():
    from engine.kernels.exact import TAME_ABOVE, tame

    assert TAME_ABOVE == 2.0**500
    X = np.array([[2.0**500, 1.0], [2.0**501, -3.0], [1.5e308, np.nan], [np.nan, np.nan]])
    Y, e = tame(X)
    assert e.tolist() == [0, 502, 1024, 0]  # 2**501 < 2**502; 1.5e308 < 2**1024; a missing score counts as 0
    assert Y[0].tolist() == [2.0**500, 1.0] and Y[1].tolist() == [0.5, -3.0 * 2.0**-502]
    assert Y[2, 0] == 1.5e308 * 2.0**-1024 and np.isnan(Y[2, 1]) and np.isnan(Y[3]).all()
    Y, e = tame(np.array([1.5e308]))  # one value along the axis
    assert e.tolist() == 1024 and Y.tolist() == [1.5e308 * 2.0**-1024]
    Y, e = tame([3, 1])  # nothing to do: the same values as float64, and no exponent
    assert e is None and Y.dtype == np.float64 and Y.tolist() == [3.0, 1.0]
    Y, e = tame(np.zeros((2, 0)))
    assert e is None and Y.shape == (2, 0)


def test_tame_below_scales_just_under_two_to_the_k():
    from engine.kernels.exact import tame

    Y, e = tame(np.array([[2048.0, 1.0], [1024.0, np.nan], [1023.0, 25.0], [25.0, 3.0]]), below=10)
    assert e.tolist() == [2, 1, 0, 0]  # 2048 < 2**12 -> 12 - 10; 1024 reaches 2**10 -> 11 - 10; 1023 and 25 stay
    assert Y[0].tolist() == [512.0, 0.25] and Y[1, 0] == 512.0 and Y[2:].tolist() == [[1023.0, 25.0], [25.0, 3.0]]
    Y, e = tame(np.array([0.25, np.nan]), below=0)  # a missing score counts as 0, not as 1
    assert e is None


# --------------------------------------------------------------------------- overflow-safe sums: products and remainders
def test_a_weighted_sum_that_overflows_through_its_weights_is_still_right():
    """Scores of 1e300 (below 2**1000) under weights of 1e10: every product overflows though no score is huge; the
    mean is 1e300, as by fractions."""
    from engine.kernels.aggregate import mean_across

    X = np.array([[1e300, 1.0, np.nan], [1e300, 2.0, 4.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mean_across(X, weights=np.array([1e10, 3e10]))
    want = [float((Fraction(1e300) * Fraction(1e10) + Fraction(1e300) * Fraction(3e10)) / Fraction(4e10)),
            float((Fraction(1.0) * Fraction(1e10) + Fraction(2.0) * Fraction(3e10)) / Fraction(4e10)), 4.0]
    assert got.tolist() == want
    got = mean_across(np.full((1000, 2), 1e306))  # a thousand tasks near the limit: the sum overflows, the mean does not
    np.testing.assert_allclose(got, 1e306, rtol=1000 * np.finfo(float).eps)  # 1,000 roundings of a sum in order


def test_a_small_remainder_of_cancelling_huge_terms_keeps_its_bits():
    from engine.kernels.aggregate import overflow_safe_sum

    col = np.array([[1e308], [1e308], [-1e308], [-1e308], [1e-300]])  # 2e308 overflows; the exact sum is 1e-300
    num, e = overflow_safe_sum(col, np.ones(5))
    assert np.ldexp(num, e).tolist() == [1e-300]
    num, e = overflow_safe_sum(np.hstack([col, np.ones((5, 1))]), np.ones(5))  # another column that does not overflow
    assert e.tolist() == [e[0], 0] and np.ldexp(num, e).tolist() == [1e-300, 5.0]


def test_sidecar_shapes_each_refused_in_one_named_line():
    from engine.labelled.canonical import check_sidecar

    check_sidecar({})  # nothing to check: every task higher-is-better, no groups
    check_sidecar({"task_groups": {"by": {"g": ["a", "a"], "h": ["b"]}}})  # a task listed twice in its own group
    shape = "'task_groups' must map grouping names to objects {group: [task, ...]}"
    cases = [
        ({"higher_is_beter": {}}, "unknown sidecar key 'higher_is_beter': did you mean 'higher_is_better'?"),
        ({"higher_is_better": {"a": "yes"}}, "'higher_is_better' must map task names to true/false"),
        ({"higher_is_better": ["a"]}, "'higher_is_better' must map task names to true/false"),
        ({"task_groups": "glue"}, f"{shape}, got str 'glue'"),
        ({"task_groups": {"by": ["a", "b"]}}, f"{shape}; grouping 'by' is list ['a', 'b']"),
        ({"task_groups": {"by": {"g": "a"}}}, f"{shape}; group 'g' of grouping 'by' is not a list of task names"),
        ({"task_groups": {"by": {"g": ["a", 3]}}}, f"{shape}; group 'g' of grouping 'by' is not a list of task names"),
        ({"task_groups": {"by": {"g": ["a"], "h": ["b", "a"]}}},
         "task 'a' is in groups 'g' and 'h' of grouping 'by'; a task belongs to one group of a grouping"),
    ]
    for meta, why in cases:
        with pytest.raises(VotebenchError) as info:
            check_sidecar(meta, "m.meta.json")
        assert str(info.value) == f"m.meta.json: {why}", meta


def test_digit_totals_whose_last_digit_borrows():
    """Raw digit sums of mixed signs: 1 * 2**0 - 1 * 2**-31 is positive, its negation negative (worked by hand)."""
    from engine.kernels.exact import digits_to_float

    assert digits_to_float(np.array([1, -1]), 1).tolist() == 1.0 - 2.0**-31
    assert digits_to_float(np.array([-1, 1]), 1).tolist() == -(1.0 - 2.0**-31)
    assert digits_to_float(np.array([[0, 3, -2**31]]), 1).tolist() == [2.0**-31 * 2.0]  # 3 * 2**-31 - 2**31 * 2**-62


# --------------------------------------------------------------------------- the magnitude each rule gives the tie rule
def test_a_mean_of_cancelling_scores_ties_within_its_terms_rounding():
    """Means ``0`` and about ``1e-7`` made of terms of size 1e6 differ by less than 1e-12 of those terms: one class.
    Scores of share-like rules (TOPSIS) tie within 1e-12 absolute; rank-like rules (Borda) within 1e-12 relative."""
    from engine.labelled.core import call_kernel
    from engine.rules import get_rule

    X = np.array([[1e6, 1e6, 1.0], [-1e6, -1e6 + 2e-7, 1.0]])
    got = call_kernel(get_rule("mean"), X, None, {})
    assert got[0] == got[1] == (1e6 + (-1e6 + 2e-7)) / 2 and got[2] == 1.0
    assert get_rule("median").snap(np.array([0.0, 1e-7, 1.0]), X).tolist() == [1e-7, 1e-7, 1.0]
    topsis = get_rule("topsis")
    assert topsis.magnitude(X) == 1.0
    assert topsis.snap(np.array([0.01, 0.01 + 5e-13, 0.5]), X).tolist() == [0.01 + 5e-13, 0.01 + 5e-13, 0.5]
    borda = get_rule("borda")
    assert borda.magnitude(X) is None
    assert borda.snap(np.array([0.01, 0.01 + 5e-13, 0.5]), X).tolist() == [0.01, 0.01 + 5e-13, 0.5]
    assert get_rule("mean").magnitude(X).tolist() == [1e6, 1e6, 1.0] and get_rule("mean").magnitude(X[0]) is None
    # a missing score is no term; scores below 1 keep their own size
    assert get_rule("mean").magnitude(np.array([[np.nan, 0.5, -0.25], [0.125, np.nan, 0.0625]])).tolist() == [0.125, 0.5,
                                                                                                            0.25]


def test_weights_far_apart_keep_the_small_one():
    """Weights 2**600 and 2**-500 are both float64 numbers: a system scored on the second task only has that score as
    its mean (the weights are scaled only if they could overflow a sum, never down to 0)."""
    from engine.kernels.aggregate import mean_across

    got = mean_across(np.array([[1.0, np.nan], [2.0, 3.0]]), weights=np.array([2.0**600, 2.0**-500]))
    assert got.tolist() == [1.0, 3.0]


def test_digit_totals_beyond_float64_are_inf_without_a_warning():
    from engine.kernels.exact import digits_to_float

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = digits_to_float(np.array([1, 0]), 40)  # 2**(31 * 39): beyond float64
    assert got.tolist() == float("inf")


def test_handshake_errors_of_other_kinds_are_named(monkeypatch):
    """The probe's failure is told apart by its kind: a message about deserialising means a port that answered
    something else; any other error is named by its first line, or by its repr or type when it has none."""
    import distributed.comm

    port, stop = tcp_port()  # accepts: the refused-port check passes, the (replaced) handshake decides
    address = f"tcp://127.0.0.1:{port}"
    answered = "it answered, but not as a dask scheduler: is this the scheduler's port (8786 by default)?"
    try:
        for exc, why in ((RuntimeError("Could not Deserialize the message"), answered),
                         (OSError("first line\nsecond line"), "first line"),
                         (RuntimeError(), "RuntimeError()"),
                         (RuntimeError("\n"), "RuntimeError")):
            async def fail(*args, exc=exc, **kwargs):
                raise exc

            monkeypatch.setattr(distributed.comm, "connect", fail)
            msg, _ = _handshake_error(address, "5s")
            assert msg == f"cannot connect to dask scheduler {address!r} ({why})", exc
    finally:
        stop()


def test_weights_that_blocks_cannot_take_go_to_the_plain_kernel(monkeypatch):
    """Pair blocks forced for every size: Copeland under weights that are not whole numbers is still computed (by the
    plain kernel, as without blocks); whole-number weights may go through blocks, with the same result."""
    from engine.kernels.pairblock import use_blocks
    from engine.labelled.core import call_kernel
    from engine.rules import get_rule

    rng = np.random.default_rng(2)
    X = rng.integers(0, 4, size=(3, 6)).astype(float)
    rule = get_rule("copeland")
    for w in (np.array([0.3, 0.45, 0.25]), np.array([1.0, 2.0, 1.0])):
        monkeypatch.delenv("VOTEBENCH_PAIR_ROWS", raising=False)
        plain = call_kernel(rule, X, w, {})
        monkeypatch.setenv("VOTEBENCH_PAIR_ROWS", "2")
        assert use_blocks("copeland", X, w) is bool(np.all(w == np.round(w)))
        np.testing.assert_array_equal(call_kernel(rule, X, w, {}), plain)


def test_a_mean_of_cancelling_scores_beside_an_absent_system_ties_the_same():
    from engine.labelled.core import call_kernel
    from engine.rules import get_rule

    X = np.array([[1e6, 1e6, 1.0, np.nan], [-1e6, -1e6 + 2e-7, 1.0, np.nan]])
    got = call_kernel(get_rule("mean"), X, None, {})
    assert got[0] == got[1] == (1e6 + (-1e6 + 2e-7)) / 2 and got[2] == 1.0 and np.isnan(got[3])


# --------------------------------------------------------------------------- strays of killed writes
def test_strays_that_are_folders_or_links_are_removed_and_listed(tmp_path, monkeypatch):
    from engine.io.files import remove_strays

    dead = dead_pid()
    kept_dir = tmp_path / "data"
    kept_dir.mkdir()
    (kept_dir / "keep.txt").write_text("x")
    folder = tmp_path / f".r.zarr.tmp-{dead}-0123abcd"  # a half-built store
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "c").write_text("partial")
    link = tmp_path / f".r.zarr.tmp-{dead}-89abcdef"  # a link to a folder of the user's: the link goes, not the folder
    link.symlink_to(kept_dir, target_is_directory=True)
    removed = remove_strays(tmp_path / "r.zarr")
    assert sorted(removed) == sorted([folder, link])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"] and (kept_dir / "keep.txt").read_text() == "x"
    monkeypatch.chdir(tmp_path)  # a bare name: the current folder
    (tmp_path / f".s.json.tmp-{dead}-0123abcd").write_text("partial")
    assert remove_strays("s.json") == [Path(f".s.json.tmp-{dead}-0123abcd")]


@pytest.mark.filterwarnings("ignore:Alternatives with indices")
def test_an_absent_system_in_a_batch_of_replicates():
    """Two replicates (batch axis first) in which system 2 has no score: each replicate equals pymcdm's TOPSIS of
    the other systems, and system 2 is NaN in both."""
    from pymcdm.methods import TOPSIS

    from engine.labelled.core import call_kernel
    from engine.rules import get_rule

    rng = np.random.default_rng(4)
    X = rng.uniform(0.1, 1.0, size=(2, 3, 4))
    X[:, :, 2] = np.nan
    got = call_kernel(get_rule("topsis"), X, None, {})
    assert got.shape == (2, 4) and np.isnan(got[:, 2]).all()
    for b in range(2):
        want = TOPSIS()(X[b][:, [0, 1, 3]].T, np.full(3, 1 / 3), np.ones(3, dtype=int))
        np.testing.assert_allclose(got[b, [0, 1, 3]], want, rtol=1e-12)


def test_elo_under_huge_weights_is_the_limit_without_warnings():
    """Task weights multiply Elo's step: under weights of 1e10 the rating gaps pass 1e10 and the expected score of
    the weaker side is exactly 0 (the limit of the logistic), with no overflow warning. Worked by hand for two
    systems and one task: the winner gains k * w * (1 - 1/2), the loser loses as much."""
    from engine.kernels.battles import elo_across

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = elo_across(np.array([[2.0, 1.0]]), weights=np.array([1e10]), k=4.0)
        assert got.tolist() == [1000.0 + 2e10, 1000.0 - 2e10]
        X = np.array([[1e300, 2e300, 3e299], [1e300, 1e299, 5e299], [1.0, 2.0, 3.0]])
        assert np.isfinite(elo_across(X, weights=np.array([1e10, 3e10, 1e10]))).all()
