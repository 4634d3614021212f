"""Live dashboard (engine.dashboard): snapshot against brute-force references, and the HTTP server end to end.

One small sweep (6 systems x 8 tasks; a bootstrap of 2 rules in 4 blocks each,
task subsets and a parameter grid: 14 blocks) is written in steps by a module
fixture: frozen copies of the store with 0 and 5 blocks done are checked
against plain-loop references, and a live copy is served on a free loopback
port while more blocks are written (every ``run_sweep`` that computes starts
an in-process dask client, about a second).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import zarr
from conftest import REPO, bf_average_ranks, bf_kendall_w, bf_min_rank, bf_tau_b

import engine
from engine.dashboard import dask_dashboard_link, register, snapshot, start_in_background, store_fingerprint
from engine.errors import VotebenchError
from engine.io import open_scores
from engine.sweep import parse_config, run_sweep

SEED = 5
RULES = ("borda", "copeland")
REPLICATES, BLOCK = 8, 2
SYSTEMS = ["sys-alpha", "sys-bravo", "sys-charlie", "sys-delta", "sys-echo", "sys-foxtrot"]
GROUP = "toy/bootstrap-tasks"
N_BLOCKS = 2 * 4 + 2 * 2 * 1 + 2  # bootstrap (2 rules x 4) + subsets (2 rules x 2 sizes x 1) + grid (2 points)


def write_input(folder: Path, *, seed: int = 7) -> Path:
    """A wide CSV of 6 systems x 8 tasks with scores on a 0.05 grid (some ties)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(0, 1, size=(len(SYSTEMS), 8)) * 20) / 20
    X[0] += 0.15  # a clear-ish leader
    lines = ["system," + ",".join(f"t{j}" for j in range(8))]
    lines += [s + "," + ",".join(f"{v:.2f}" for v in row) for s, row in zip(SYSTEMS, X)]
    path = folder / "toy.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def make_config(folder: Path, store: Path):
    """The sweep of this module, writing to ``store``."""
    return parse_config({
        "seed": SEED,
        "store": str(store),
        "input": {"path": str(write_input(folder)), "name": "toy"},
        "rules": [{"name": r} for r in RULES],
        "perturbations": [
            {"kind": "bootstrap", "over": "tasks", "replicates": REPLICATES, "block": BLOCK},
            {"kind": "subsets", "sizes": [2, 4], "repeats": 2, "block": 2},
            {"kind": "grid", "rule": "optimality_gap", "params": {"gamma": [0.8, 0.9]}},
        ],
    })


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """(config, live store, frozen copy with 0 blocks, frozen copy with 5 blocks: borda 4, copeland 1)."""
    folder = tmp_path_factory.mktemp("dashboard")
    live = folder / "live.zarr"
    cfg = make_config(folder, live)
    run_sweep(cfg, progress=False, max_blocks=0)  # skeleton only, no dask client
    empty = folder / "empty.zarr"
    shutil.copytree(live, empty)
    run_sweep(cfg, progress=False, max_blocks=5)
    partial = folder / "partial.zarr"
    shutil.copytree(live, partial)
    return cfg, live, empty, partial


@pytest.fixture(scope="module")
def server(sweep):
    url, stop = start_in_background(sweep[1], port=0, poll=0.1, heartbeat=0.5)
    yield url
    stop()


# --------------------------------------------------------------------------------------------
# brute-force references (plain loops)
# --------------------------------------------------------------------------------------------
def bf_percentile(values, q: float) -> float:
    """numpy's 'linear' percentile, by hand."""
    v = sorted(values)
    pos = q / 100 * (len(v) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def bf_spearman(a, b) -> float:
    ra, rb = bf_average_ranks(a), bf_average_ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return num / den if den else math.nan


def bf_tied_with_leader(point, R, level: float) -> list[bool]:
    S = len(point)
    top = max(point)
    leaders = [i for i in range(S) if point[i] == top]
    out = []
    for j in range(S):
        tied = j in leaders
        for lead in leaders:
            if lead == j:
                continue
            above = sum(1 for row in R if row[lead] > row[j])
            if above / len(R) < level:
                tied = True
        out.append(tied)
    return out


def done_replicates(store: Path, rule_index: int) -> list[int]:
    """Replicates of the blocks flagged done, read with zarr directly."""
    done = zarr.open_group(str(store), mode="r")[GROUP]["done"][...]
    return [b for bi in range(done.shape[1]) if done[rule_index, bi] for b in range(bi * BLOCK, min(REPLICATES, (bi + 1) * BLOCK))]


def reference(cfg, store: Path, rule_index: int, level: float = 0.95) -> dict:
    """What the snapshot should say about one rule: recomputed with engine.bootstrap on the replicates flagged done."""
    scores = open_scores(cfg.inputs[0]["path"])
    rule = RULES[rule_index]
    ids = done_replicates(store, rule_index)
    point = engine.rank(scores, rule=rule)
    ref = {"ids": ids, "score": point["score"].values.tolist(), "rank": point["rank"].values.tolist()}
    if ids:
        R = engine.bootstrap(scores, rule=rule, over="tasks", replicates=ids, seed=SEED)["replicate_score"].values.tolist()
        ranks = bf_min_rank(np.array(R))
        ref["R"] = R
        ref["low"] = [bf_percentile(ranks[:, s], 50 * (1 - level)) for s in range(len(SYSTEMS))]
        ref["high"] = [bf_percentile(ranks[:, s], 50 * (1 + level)) for s in range(len(SYSTEMS))]
        ref["tied"] = bf_tied_with_leader(ref["score"], R, level)
        ref["w"] = bf_kendall_w(R) if len(R) >= 2 else None
        pairs = [bf_spearman(R[i], R[j]) for i in range(len(R)) for j in range(i + 1, len(R))]
        ref["rho"] = sum(pairs) / len(pairs) if pairs else None
    return ref


def by_system(rule_entry: dict) -> dict:
    return {d["system"]: d for d in rule_entry["systems"]}


# --------------------------------------------------------------------------------------------
# snapshot (pure)
# --------------------------------------------------------------------------------------------
def test_snapshot_matches_brute_force_on_a_partial_store(sweep):
    cfg, _, _, partial = sweep
    snap = snapshot(partial)
    json.dumps(snap, allow_nan=False)  # JSON-safe
    assert snap["status"] == "partial"
    assert snap["progress"] == {"replicates_done": 10, "replicates_total": 16, "blocks_done": 5, "blocks_total": N_BLOCKS,
                                "fraction": 5 / N_BLOCKS}
    (group,) = [g for g in snap["groups"] if g["kind"] == "bootstrap"]
    assert group["name"] == GROUP and group["blocks_done"] == 5 and group["blocks_total"] == 8
    refs = []
    for ri, rule in enumerate(RULES):
        ref = reference(cfg, partial, ri)
        refs.append(ref)
        entry = group["rules"][ri]
        assert entry["rule"] == rule and entry["ranking_source"] == "full data"
        assert entry["replicates_done"] == len(ref["ids"]) == (8 if ri == 0 else 2)
        rows = by_system(entry)
        ranks = [rows[s]["rank"] for s in SYSTEMS]
        assert ranks == pytest.approx(ref["rank"])
        assert [rows[s]["score"] for s in SYSTEMS] == pytest.approx(ref["score"])
        assert [d["rank"] for d in entry["systems"]] == sorted(ranks)  # listed best first
        assert [rows[s]["rank_low"] for s in SYSTEMS] == pytest.approx(ref["low"])
        assert [rows[s]["rank_high"] for s in SYSTEMS] == pytest.approx(ref["high"])
        leaders = [s for s, r in zip(SYSTEMS, ref["rank"]) if r == 1]
        assert entry["leader"] == leaders
        assert entry["tied"] == [s for s, t in zip(SYSTEMS, ref["tied"]) if t and s not in leaders]
        assert all(rows[s]["leader"] == (s in leaders) for s in SYSTEMS)
        assert all(rows[s]["tied_with_leader"] == (s in entry["tied"]) for s in SYSTEMS)
        assert entry["kendall_w"] == pytest.approx(ref["w"])
        assert entry["mean_spearman"] == pytest.approx(ref["rho"])
    agr = group["agreement"]
    assert agr["rules"] == list(RULES)
    assert agr["full_data"][0][1] == agr["full_data"][1][0] == pytest.approx(bf_tau_b(refs[0]["score"], refs[1]["score"]))
    common = sorted(set(refs[0]["ids"]) & set(refs[1]["ids"]))
    assert agr["common_replicates"][0][1] == len(common) == 2
    taus = [bf_tau_b(refs[0]["R"][refs[0]["ids"].index(b)], refs[1]["R"][refs[1]["ids"].index(b)]) for b in common]
    assert agr["replicates"][0][1] == pytest.approx(sum(taus) / len(taus))


def test_snapshot_before_any_block(sweep):
    snap = snapshot(sweep[2])
    assert snap["status"] == "partial"
    assert snap["progress"]["replicates_done"] == 0 and snap["progress"]["blocks_done"] == 0
    (group,) = [g for g in snap["groups"] if g["kind"] == "bootstrap"]
    for entry in group["rules"]:
        assert entry["replicates_done"] == 0 and entry["tied"] == [] and entry["kendall_w"] is None
        assert entry["mean_spearman"] is None and len(entry["leader"]) >= 1
        assert all(d["rank_low"] is None and d["rank_high"] is None and d["rank"] is not None for d in entry["systems"])
    assert group["agreement"]["replicates"][0][1] is None and group["agreement"]["common_replicates"][0][1] == 0
    subsets = next(g for g in snap["groups"] if g["kind"] == "subsets")
    assert all(v is None for r in subsets["rules"] for v in r["mean_tau"])
    grid = next(g for g in snap["groups"] if g["kind"] == "grid")
    assert [p["done"] for p in grid["points"]] == [False, False]


def test_snapshot_of_a_missing_or_foreign_store(tmp_path):
    snap = snapshot(tmp_path / "nothing.zarr")
    assert snap["status"] == "waiting" and snap["groups"] == [] and snap["progress"]["blocks_total"] == 0
    assert store_fingerprint(tmp_path / "nothing.zarr") == "absent"
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "a.txt").write_text("x")
    with pytest.raises(VotebenchError, match="not a votebench results store"):
        snapshot(tmp_path / "junk")
    with pytest.raises(VotebenchError, match="level"):
        snapshot(tmp_path / "nothing.zarr", level=1.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_without_a_full_data_ranking_orders_by_mean_replicate_rank(seed):
    from engine.dashboard import _rule_summary

    rng = np.random.default_rng(seed)
    R = rng.integers(0, 4, size=(7, 5)).astype(float)  # many ties
    out = _rule_summary("r", list("abcde"), None, R, level=0.9)
    ranks = bf_min_rank(R)
    mean = [sum(ranks[:, s]) / 7 for s in range(5)]
    rows = by_system(out)
    assert out["ranking_source"] == "mean replicate rank"
    assert [rows[s]["mean_rank"] for s in "abcde"] == pytest.approx(mean)
    assert [rows[s]["rank"] for s in "abcde"] == [1 + sum(1 for m in mean if m < mean[s] - 1e-12) for s in range(5)]
    assert [rows[s]["rank_low"] for s in "abcde"] == pytest.approx([bf_percentile(ranks[:, s], 5) for s in range(5)])
    assert [rows[s]["rank_high"] for s in "abcde"] == pytest.approx([bf_percentile(ranks[:, s], 95) for s in range(5)])


def test_fingerprint_follows_done_flags(sweep):
    assert store_fingerprint(sweep[2]) != store_fingerprint(sweep[3])
    assert store_fingerprint(sweep[3]) == store_fingerprint(sweep[3])


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------
def get(url: str, *, method: str = "GET", headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


class EventReader:
    """A minimal server-sent-events client over http.client (events as dicts; comments as {'comment': text})."""

    def __init__(self, url: str) -> None:
        host, port = url.split("//")[1].strip("/").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=20)
        self.conn.request("GET", "/api/stream")
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200
        assert self.resp.getheader("Content-Type").startswith("text/event-stream")

    def next(self) -> dict:
        fields: dict = {}
        while True:
            line = self.resp.readline().decode()
            assert line, "stream closed"
            line = line.rstrip("\n")
            if not line:
                if fields:
                    return fields
                continue
            if line.startswith(":"):
                fields.setdefault("comment", line[1:].strip())
                continue
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value

    def next_snapshot(self, until=lambda s: True, *, seconds: float = 30.0) -> dict:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ev = self.next()
            if "data" in ev:
                snap = json.loads(ev["data"])
                if until(snap):
                    return snap
        raise AssertionError("no matching snapshot on the stream")

    def close(self) -> None:
        self.conn.close()


def blocks_done(snap: dict) -> int:
    return snap["progress"]["blocks_done"]


def test_snapshot_and_stream_follow_the_store(sweep, server):
    cfg, live = sweep[0], sweep[1]
    code, headers, body = get(server + "api/snapshot")
    assert code == 200 and headers["Content-Type"].startswith("application/json")
    first = json.loads(body)
    assert blocks_done(first) == 5 and first["progress"]["replicates_done"] == 10
    stream = EventReader(server)
    try:
        assert blocks_done(stream.next_snapshot()) == 5  # a late client catches up at once
        run_sweep(cfg, progress=False, max_blocks=4)  # copeland's last 3 blocks + 1 subsets block
        snap = stream.next_snapshot(lambda s: blocks_done(s) == 9)
        assert snap["progress"]["replicates_done"] == 16 and snap["status"] == "partial"
        assert blocks_done(json.loads(get(server + "api/snapshot")[2])) == 9
        run_sweep(cfg, progress=False)
        snap = stream.next_snapshot(lambda s: blocks_done(s) == N_BLOCKS)
        assert snap["status"] == "complete" and snap["progress"]["fraction"] == 1.0
        # the store no longer changes: the stream keeps the connection alive with comments, no new snapshot
        ev = stream.next()
        assert ev == {"comment": "heartbeat"}
    finally:
        stream.close()
    assert json.loads(get(server + "api/snapshot")[2]) == snap
    # and the complete store still agrees with the references
    group = next(g for g in snap["groups"] if g["kind"] == "bootstrap")
    for ri in range(len(RULES)):
        ref = reference(cfg, live, ri)
        assert len(ref["ids"]) == REPLICATES
        rows = by_system(group["rules"][ri])
        assert [rows[s]["rank_high"] for s in SYSTEMS] == pytest.approx(ref["high"])


def test_page_is_self_contained(server):
    code, headers, body = get(server)
    assert code == 200 and headers["Content-Type"].startswith("text/html")
    page = body.decode()
    assert "EventSource" in page and "api/snapshot" in page and 'id="progress-text"' in page
    for external in ("<script src", "<link", "@import", "url("):
        assert external not in page
    assert "default-src 'none'" in headers["Content-Security-Policy"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
def test_only_get(server, method):
    for path in ("", "api/snapshot", "api/stream"):
        code, headers, _ = get(server + path, method=method)
        assert code == 405, (method, path)
        assert headers.get("Allow") == "GET"


def test_unknown_path_and_foreign_host(server):
    assert get(server + "api/nothing")[0] == 404
    assert get(server + "api/snapshot", headers={"Host": "attacker.example"})[0] == 403
    port = server.rstrip("/").rsplit(":", 1)[1]
    assert get(server + "api/snapshot", headers={"Host": f"localhost:{port}"})[0] == 200


def listening_addresses(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of the sockets listening on ``port``."""
    out = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(name):
            continue
        with open(name) as fh:
            next(fh)
            for line in fh:
                local, state = line.split()[1], line.split()[3]
                addr, p = local.rsplit(":", 1)
                if state == "0A" and int(p, 16) == port:
                    out.append(addr)
    return out


def test_binds_loopback_only(server):
    assert server.startswith("http://127.0.0.1:")
    port = int(server.rstrip("/").rsplit(":", 1)[1])
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp to read the listening address from")
    assert listening_addresses(port) == ["0100007F"]  # 127.0.0.1, little-endian hex


def test_port_in_use(sweep, server):
    port = int(server.rstrip("/").rsplit(":", 1)[1])
    with pytest.raises(VotebenchError, match=f"cannot listen on 127.0.0.1:{port}"):
        start_in_background(sweep[2], port=port)


def test_served_before_the_store_exists(tmp_path):
    """As `sweep --dashboard` does: the server starts first, the sweep then creates the store."""
    cfg = make_config(tmp_path, tmp_path / "later.zarr")
    url, stop = start_in_background(cfg.store, port=0, poll=0.1, heartbeat=5.0)
    try:
        snap = json.loads(get(url + "api/snapshot")[2])
        assert snap["status"] == "waiting" and snap["groups"] == []
        stream = EventReader(url)
        assert stream.next_snapshot()["status"] == "waiting"
        run_sweep(cfg, progress=False, max_blocks=0)  # creates the store, computes nothing
        # the skeletons are written group by group: the stream may show the store half-created first
        snap = stream.next_snapshot(lambda s: s["progress"]["blocks_total"] == N_BLOCKS)
        assert snap["status"] == "partial" and blocks_done(snap) == 0 and len(snap["groups"]) == 3
        stream.close()
    finally:
        stop()


def test_stop_closes_open_streams(sweep):
    url, stop = start_in_background(sweep[3], port=0, poll=0.1, heartbeat=5.0)
    stream = EventReader(url)
    assert blocks_done(stream.next_snapshot()) == 5
    stop()
    stop()  # idempotent
    assert stream.resp.readline() == b""  # the stream ended
    stream.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="votebench")
    register(p.add_subparsers(dest="command"))
    return p


def test_register_defaults_and_errors(tmp_path):
    args = parser().parse_args(["serve", "results.zarr"])
    assert (args.store, args.host, args.port, args.dask_dashboard) == ("results.zarr", "127.0.0.1", 8050, None)
    args = parser().parse_args(["serve", str(tmp_path / "none.zarr"), "--port", "0"])
    with pytest.raises(VotebenchError, match="no such results store"):
        args.func(args)
    (tmp_path / "junk").mkdir()
    args = parser().parse_args(["serve", str(tmp_path / "junk"), "--port", "0"])
    with pytest.raises(VotebenchError, match="not a votebench results store"):
        args.func(args)
    args = parser().parse_args(["serve", str(tmp_path / "junk"), "--port", "70000"])
    with pytest.raises(VotebenchError, match="--port"):
        args.func(args)


SERVE_SCRIPT = """
import argparse, sys
from engine.dashboard import register
p = argparse.ArgumentParser(prog="votebench")
register(p.add_subparsers(dest="command"))
args = p.parse_args(sys.argv[1:])
sys.exit(args.func(args))
"""


def test_serve_command_prints_the_url_and_stops_on_ctrl_c(sweep):
    proc = subprocess.Popen([sys.executable, "-c", SERVE_SCRIPT, "serve", str(sweep[3]), "--port", "0",
                             "--dask-dashboard", "http://127.0.0.1:8787/status"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"votebench dashboard of {sweep[3]} at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        snap = json.loads(get(url + "api/snapshot")[2])
        assert blocks_done(snap) == 5 and snap["dask_dashboard"] == "http://127.0.0.1:8787/status"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_dask_dashboard_link():
    class WithLink:
        dashboard_link = "http://127.0.0.1:8787/status"

    class NoDashboard:
        @property
        def dashboard_link(self):
            raise KeyError("dashboard")

    assert dask_dashboard_link(WithLink()) == "http://127.0.0.1:8787/status"
    assert dask_dashboard_link(NoDashboard()) is None
    assert dask_dashboard_link(None) is None


def test_sweep_dashboard_flag_serves_the_store_while_it_runs(tmp_path, capsys):
    """`votebench sweep CONFIG --dashboard --port 0`: the page is announced on stderr, the sweep completes, the
    server is stopped afterwards (its port no longer answers)."""
    from conftest import run_cli

    csv = write_input(tmp_path)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'seed = 1\nstore = "{tmp_path / "res.zarr"}"\n[input]\npath = "{csv}"\n[[rules]]\nname = "borda"\n'
                   '[[perturbations]]\nkind = "bootstrap"\nover = "tasks"\nreplicates = 6\nblock = 3\n')
    code, out, err = run_cli(capsys, "sweep", cfg, "--dashboard", "--port", "0", "--no-progress")
    assert code == 0, err
    line = next(ln for ln in err.splitlines() if "live dashboard at" in ln)
    url = line.split("live dashboard at ")[1].split()[0]
    assert url.startswith("http://127.0.0.1:")
    assert "blocks done 2/2" in out
    snap = snapshot(tmp_path / "res.zarr")
    assert json.dumps(snap)  # the finished store still reads
    with pytest.raises(OSError):
        get(url + "api/snapshot")


def test_sweep_dashboard_bad_port_is_refused_before_anything_is_written(tmp_path, capsys):
    from conftest import one_line_error, run_cli

    csv = write_input(tmp_path)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'seed = 1\nstore = "{tmp_path / "res.zarr"}"\n[input]\npath = "{csv}"\n[[rules]]\nname = "borda"\n'
                   '[[perturbations]]\nkind = "bootstrap"\nover = "tasks"\nreplicates = 4\nblock = 2\n')
    one_line_error(*run_cli(capsys, "sweep", cfg, "--dashboard", "--port", "70000", "--no-progress"), "--port")
    assert not (tmp_path / "res.zarr").exists()
