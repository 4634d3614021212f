"""Live dashboard (engine.app.dashboard): snapshot against brute-force references, and the HTTP server end to end.

The snapshot is checked against plain loops and against engine.summarize on the finished store; the server for
its routes, gzip, stream events, the token, and the caps on streams and connections (300 half-open sockets).

One small sweep (6 systems x 8 tasks; a bootstrap of 2 rules in 4 blocks each,
task subsets and a parameter grid: 14 blocks) is written in steps by a module
fixture: frozen copies of the store with 0 and 5 blocks done are checked
against plain-loop references, and a live copy is served on a free loopback
port while more blocks are written (every ``run_sweep`` that computes starts
an in-process dask client, about a second).
"""

from __future__ import annotations

import argparse
import contextlib
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
import xarray as xr
import zarr
from conftest import REPO, bf_average_ranks, bf_kendall_w, bf_min_rank, bf_tau_b

import engine
import engine.kernels.metrics
from engine.app.cli import build_parser
from engine.app.commands import serve
from engine.app.dashboard import Limits, LiveStore, dask_dashboard_link, snapshot, start_in_background
from engine.errors import VotebenchError
from engine.io.readers import open_scores
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


@pytest.fixture(scope="module", autouse=True)
def plan_order():
    """The blocks run in plan order, not interleaved (engine.sweep.runner.interleave): the partial stores of these
    tests (which blocks the first k are) were written for it; the store's values do not depend on the order
    (tests/sweep/test_sweep_order.py)."""
    import engine.sweep.runner as runner

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "interleave", list)
        yield


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
    """A rank interval's bound, by hand: the sorted value at floor (q < 50) or ceil (q > 50) of q/100 (n - 1)."""
    v = sorted(values)
    pos = q / 100 * (len(v) - 1)
    return v[math.floor(pos) if q < 50 else math.ceil(pos)]


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


def bf_rank_ub(R: list, level: float) -> list[float]:
    """Rank(UB), paired, by plain loops: 1 + the systems above system i in at least ``level`` of the replicates."""
    n = len(R[0])
    return [1.0 + sum(1 for j in range(n) if j != i and sum(row[j] > row[i] for row in R) / len(R) >= level)
            for i in range(n)]


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


def by_system(group: dict, rule_entry: dict) -> dict:
    """Per system the rule's numbers (the snapshot holds one array per quantity, in the group's system order)."""
    keys = ("score", "rank", "rank_low", "rank_high", "mean_rank", "pair_low", "pair_high")
    return {name: {**{k: rule_entry[k][i] for k in keys}, "leader": i in rule_entry["leader"],
                   "tied_with_leader": i in rule_entry["tied"]} for i, name in enumerate(group["systems"])}


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
    assert group["systems"] == SYSTEMS and group["interval"] == "percentile"
    refs = []
    for ri, rule in enumerate(RULES):
        ref = reference(cfg, partial, ri)
        refs.append(ref)
        entry = group["rules"][ri]
        assert entry["rule"] == rule and entry["ranking_source"] == "full data"
        assert entry["replicates_done"] == len(ref["ids"]) == (8 if ri == 0 else 2)
        rows = by_system(group, entry)
        assert [rows[s]["rank"] for s in SYSTEMS] == pytest.approx(ref["rank"])
        assert [rows[s]["score"] for s in SYSTEMS] == pytest.approx(ref["score"])
        assert [rows[s]["rank_low"] for s in SYSTEMS] == pytest.approx(ref["low"])
        assert [rows[s]["rank_high"] for s in SYSTEMS] == pytest.approx(ref["high"])
        leaders = [s for s, r in zip(SYSTEMS, ref["rank"]) if r == 1]
        assert [SYSTEMS[i] for i in entry["leader"]] == leaders
        assert [SYSTEMS[i] for i in entry["tied"]] == [s for s, t in zip(SYSTEMS, ref["tied"]) if t and s not in leaders]
        assert entry["kendall_w"] == pytest.approx(ref["w"])
        assert entry["mean_spearman"] == pytest.approx(ref["rho"])
        kept = [row[a] > row[b] for row in ref["R"] for a in range(6) for b in range(6) if ref["score"][a] > ref["score"][b]]
        assert entry["order_stability"] == pytest.approx(sum(kept) / len(kept))
        # Rank(UB) while running: the same paired definition as once finished, over the replicates done
        assert entry["rank_ub"] == bf_rank_ub(ref["R"], 0.95)
        # score intervals while running too: the percentiles of the replicates done, as the rank intervals
        for s in range(len(SYSTEMS)):
            col = [row[s] for row in ref["R"]]
            assert entry["score_low"][s] == pytest.approx(float(np.percentile(col, 2.5)))
            assert entry["score_high"][s] == pytest.approx(float(np.percentile(col, 97.5)))
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
        assert entry["rank_ub"] == [None] * len(SYSTEMS)
        assert entry["mean_spearman"] is None and len(entry["leader"]) >= 1
        assert all(v is None for v in entry["rank_low"] + entry["rank_high"]) and None not in entry["rank"]
    assert group["agreement"]["replicates"][0][1] is None and group["agreement"]["common_replicates"][0][1] == 0
    subsets = next(g for g in snap["groups"] if g["kind"] == "subsets")
    assert all(v is None for r in subsets["rules"] for v in r["mean_tau"])
    grid = next(g for g in snap["groups"] if g["kind"] == "grid")
    assert [p["done"] for p in grid["points"]] == [False, False]


def test_snapshot_of_a_missing_or_foreign_store(tmp_path):
    snap = snapshot(tmp_path / "nothing.zarr")
    assert snap["status"] == "waiting" and snap["groups"] == [] and snap["progress"]["blocks_total"] == 0
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "a.txt").write_text("x")
    with pytest.raises(VotebenchError, match="not a votebench results store"):
        snapshot(tmp_path / "junk")
    with pytest.raises(VotebenchError, match="level"):
        snapshot(tmp_path / "nothing.zarr", level=1.5)


def test_updates_merge_only_new_blocks_and_a_replaced_store_starts_over(tmp_path):
    """The live state reads each block's summary once; --overwrite (flags back to not done) resets it."""
    import engine.kernels.summaries as summaries

    cfg = make_config(tmp_path, tmp_path / "s.zarr")
    run_sweep(cfg, progress=False, max_blocks=3)
    live = LiveStore(cfg.store, agree_budget=None)
    read: list[tuple] = []
    real = summaries.SummaryReader.read

    def counting(self, indices):
        read.extend((self.kind, *ix) for ix in indices)
        return real(self, indices)

    summaries.SummaryReader.read = counting
    try:
        assert live.update() is True
        first = len(read)
        assert first == 3
        assert live.update() is False and len(read) == first  # nothing new: not even a flag is read
        run_sweep(cfg, progress=False, max_blocks=2)
        assert live.update() is True and len(read) == first + 2
        assert live.snapshot()["progress"]["blocks_done"] == 5
        run_sweep(cfg, progress=False, max_blocks=1, overwrite=True)
        assert live.update() is True
        assert live.snapshot()["progress"]["blocks_done"] == 1
    finally:
        summaries.SummaryReader.read = real


def test_a_store_without_summaries_is_read_from_its_blocks(sweep, tmp_path):
    """Stores written before the summaries existed: the server computes them from the blocks, same numbers."""
    copy = tmp_path / "old.zarr"
    shutil.copytree(sweep[3], copy)
    for sub in list(copy.rglob("summary")):
        shutil.rmtree(sub)
    old, new = snapshot(copy), snapshot(sweep[3])
    assert old["groups"] == new["groups"]


@pytest.mark.parametrize("over", ["tasks", "systems"])
def test_finished_store_equals_summarize(tmp_path, over):
    """Issue 15: the final numbers equal engine.summarize on the finished store (intervals, ties and W bit for bit;
    mean Spearman from the per-block sums up to rounding, or exactly from the pooled replicates of a candidate bootstrap)."""
    from engine.sweep import open_results

    cfg = parse_config({
        "seed": 2, "store": str(tmp_path / "s.zarr"), "input": {"path": str(write_input(tmp_path)), "name": "toy"},
        "rules": [{"name": "borda"}, {"name": "copeland"}, {"name": "mean"}],
        "perturbations": [{"kind": "bootstrap", "over": over, "replicates": 30, "block": 7}]})
    run_sweep(cfg, progress=False)
    snap = snapshot(cfg.store)
    assert snap["status"] == "complete"
    (group,) = snap["groups"]
    ds = open_results(cfg.store, f"toy/bootstrap-{over}").compute()

    def same(got, want):
        return got == [None if np.isnan(v) else float(v) for v in want]

    for ri, entry in enumerate(group["rules"]):
        one = ds.isel(rule=ri)
        R = one["replicate_score"].values
        ref = engine.summarize(xr.Dataset({"score": one["score"], "rank": one["rank"], "replicate_score": one["replicate_score"],
                                           "replicate_rank": (one["replicate_score"].dims, bf_min_rank(R))}))
        assert same(entry["rank_low"], ref["rank_low"].values) and same(entry["rank_high"], ref["rank_high"].values)
        assert entry["tied"] == np.flatnonzero(ref["tied_with_leader"].values & (ref["rank"].values != 1)).tolist()
        w = float(ref["kendall_w"])
        assert entry["kendall_w"] == (None if np.isnan(w) else w)
        rho = float(ref["mean_spearman"])
        if over == "systems":
            assert entry["mean_spearman"] == (None if np.isnan(rho) else rho)
            assert entry["spearman_replicates"] == 30 and group["interval"] == "pairwise"
            lo, hi = engine.kernels.metrics.pairwise_rank_bounds(ref["score"].values, ref["prob_above"].values)
            assert entry["pair_low"] == lo.astype(int).tolist() and entry["pair_high"] == hi.astype(int).tolist()
        else:
            assert entry["mean_spearman"] == pytest.approx(rho, abs=1e-12)
        stab = float(engine.kernels.metrics.order_stability(ref["score"].values, ref["prob_above"].values))
        assert entry["order_stability"] == pytest.approx(stab)


def test_without_a_full_data_ranking_orders_by_mean_replicate_rank(sweep, tmp_path):
    """A bootstrap group without the full-data score and rank (an older store): ranked by mean replicate rank, and said."""
    copy = tmp_path / "no_point.zarr"
    shutil.copytree(sweep[3], copy)
    for var in ("score", "rank"):
        shutil.rmtree(copy / GROUP / var)
    snap = snapshot(copy)
    group = next(g for g in snap["groups"] if g["kind"] == "bootstrap")
    entry = group["rules"][0]  # borda: 8 replicates done
    assert entry["ranking_source"] == "mean replicate rank"
    R = np.asarray(zarr.open_group(str(copy), mode="r")[GROUP]["replicate_score"][0])
    ranks = bf_min_rank(R)
    mean = [sum(ranks[:, s]) / len(R) for s in range(len(SYSTEMS))]
    assert entry["mean_rank"] == pytest.approx(mean)
    assert entry["rank"] == [1 + sum(1 for m in mean if m < mean[s] - 1e-12) for s in range(len(SYSTEMS))]
    assert entry["rank_low"] == pytest.approx([bf_percentile(ranks[:, s], 2.5) for s in range(len(SYSTEMS))])


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


def host_port(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    return host, int(port)


class EventReader:
    """A minimal server-sent-events client over http.client (events as dicts; comments as {'comment': text})."""

    def __init__(self, url: str, path: str = "/api/stream") -> None:
        host, port = host_port(url)
        self.conn = http.client.HTTPConnection(host, port, timeout=20)
        self.conn.request("GET", path)
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.status
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

    def next_event(self, until=lambda e: True, *, seconds: float = 30.0) -> dict:
        """The next data event (``version``, ``status``, ``progress``) that satisfies ``until``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ev = self.next()
            if "data" in ev:
                data = json.loads(ev["data"])
                assert set(data) == {"version", "status", "progress", "generated"}
                if until(data):
                    return data
        raise AssertionError("no matching event on the stream")

    def close(self) -> None:
        self.conn.close()


def blocks_done(snap: dict) -> int:
    return snap["progress"]["blocks_done"]


def fetch(url: str) -> dict:
    return json.loads(get(url + "api/snapshot")[2])


def test_snapshot_and_stream_follow_the_store(sweep, server):
    cfg, live = sweep[0], sweep[1]
    code, headers, body = get(server + "api/snapshot")
    assert code == 200 and headers["Content-Type"].startswith("application/json")
    first = json.loads(body)
    assert blocks_done(first) == 5 and first["progress"]["replicates_done"] == 10
    stream = EventReader(server)
    try:
        ev = stream.next_event()  # a late client catches up at once
        assert blocks_done(ev) == 5 and ev["version"] == first["version"]
        seen = [5]
        run_sweep(cfg, progress=False, max_blocks=4, on_block=lambda b: None)  # copeland's last 3 blocks + 1 subsets
        ev = stream.next_event(lambda e: (seen.append(blocks_done(e)), blocks_done(e) == 9)[1])
        assert ev["progress"]["replicates_done"] == 16 and ev["status"] == "partial"
        assert seen == sorted(seen)  # progress only rises
        snap = fetch(server)
        assert blocks_done(snap) == 9 and snap["version"] == ev["version"]
        run_sweep(cfg, progress=False)
        ev = stream.next_event(lambda e: blocks_done(e) == N_BLOCKS)
        assert ev["status"] == "complete" and ev["progress"]["fraction"] == 1.0
        # the store no longer changes: the stream keeps the connection alive with comments, no new event
        assert stream.next() == {"comment": "heartbeat"}
    finally:
        stream.close()
    snap = fetch(server)
    assert snap["status"] == "complete" and snap["version"] == ev["version"]
    group = next(g for g in snap["groups"] if g["kind"] == "bootstrap")
    for ri in range(len(RULES)):
        ref = reference(cfg, live, ri)
        assert len(ref["ids"]) == REPLICATES
        assert group["rules"][ri]["rank_high"] == pytest.approx(ref["high"])


def test_snapshot_is_gzipped_with_an_etag(server):
    import gzip

    code, headers, body = get(server + "api/snapshot", headers={"Accept-Encoding": "gzip"})
    assert code == 200 and headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in headers["Vary"]
    plain = get(server + "api/snapshot")[2]
    assert json.loads(gzip.decompress(body)) == json.loads(plain)
    code, _, body = get(server + "api/snapshot", headers={"If-None-Match": headers["Etag"]})
    assert code == 304 and body == b""


def test_per_task_scores_on_demand(sweep, server):
    csv = (Path(sweep[0].inputs[0]["path"])).read_text().splitlines()
    tasks = csv[0].split(",")[1:]
    row = next(r.split(",") for r in csv[1:] if r.startswith("sys-charlie,"))
    code, _, body = get(server + "api/scores?input=toy&system=sys-charlie")
    got = json.loads(body)
    assert code == 200 and got["system"] == "sys-charlie"
    assert [d["task"] for d in got["tasks"]] == tasks
    assert [d["score"] for d in got["tasks"]] == pytest.approx([float(v) for v in row[1:]])
    table = [[float(r.split(",")[1 + t]) for r in csv[1:]] for t in range(len(tasks))]
    for t, d in enumerate(got["tasks"]):  # rank among the systems on that task, higher is better
        assert d["rank"] == 1 + sum(1 for v in table[t] if v > float(row[1 + t])) and d["ranked"] == len(SYSTEMS)
        assert d["higher_is_better"] and d["direction_assumed"]  # the toy input has no sidecar
    assert get(server + "api/scores?input=toy&system=nobody")[0] == 404
    assert get(server + "api/scores?input=other&system=sys-charlie")[0] == 404


def test_page_and_its_files_are_served_without_outside_resources(server):
    code, headers, body = get(server)
    assert code == 200 and headers["Content-Type"].startswith("text/html")
    page = body.decode()
    assert '<script src="dashboard.js"' in page and 'href="dashboard.css"' in page
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    for name, kind in (("dashboard.js", "application/javascript"), ("dashboard.css", "text/css")):
        code, headers, body = get(server + name)
        assert code == 200 and headers["Content-Type"].startswith(kind)
        text = body.decode()
        for outside in ("http://", "https://", "@import", "fetch(\"http", "//cdn"):
            assert outside not in text.replace("http://www.w3.org/2000/svg", ""), (name, outside)
    assert get(server + "dashboard.py")[0] == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
def test_only_get(server, method):
    for path in ("", "api/snapshot", "api/stream", "api/scores", "dashboard.js"):
        code, headers, _ = get(server + path, method=method)
        assert code == 405, (method, path)
        assert headers.get("Allow") == "GET"


def test_unknown_path_and_foreign_host(server):
    assert get(server + "api/nothing")[0] == 404
    assert get(server + "api/snapshot", headers={"Host": "attacker.example"})[0] == 403
    port = server.rstrip("/").rsplit(":", 1)[1]
    assert get(server + "api/snapshot", headers={"Host": f"localhost:{port}"})[0] == 200


def test_an_idle_stream_waits_without_spinning(sweep, monkeypatch):
    """Issue 13: a deadline from asyncio's clock passed to tornado's Condition.wait (wall clock) returned at once, so
    every open stream spun a core.  Count the wake-ups of one idle stream: one per heartbeat, not thousands."""
    import engine.app.dashboard as dashboard

    wakes = []
    real = dashboard._Hub.wait

    async def counting(self, version, timeout, gone):
        wakes.append(timeout)
        await real(self, version, timeout, gone)

    monkeypatch.setattr(dashboard._Hub, "wait", counting)
    url, stop = start_in_background(sweep[3], port=0, poll=0.1, heartbeat=0.3)
    try:
        stream = EventReader(url)
        stream.next_event()
        beats = events = 0
        while beats < 3:  # (the server may still publish the agreement between rules as it catches up)
            ev = stream.next()
            beats += ev == {"comment": "heartbeat"}
            events += "data" in ev
        stream.close()
    finally:
        stop()
    assert 3 <= len(wakes) <= 3 + events + 1 and set(wakes) == {0.3}


def test_streams_are_capped(sweep):
    url, stop = start_in_background(sweep[3], port=0, poll=0.1, heartbeat=5.0, limits=Limits(max_streams=2))
    try:
        first, second = EventReader(url), EventReader(url)
        code, headers, body = get(url + "api/stream")
        assert code == 503 and headers["Retry-After"] == "5"
        assert get(url + "api/snapshot")[0] == 200  # the rest of the server still answers
        first.close()
        time.sleep(0.3)
        third = EventReader(url)  # a slot is free again
        assert blocks_done(third.next_event()) == 5
        second.close()
        third.close()
    finally:
        stop()


@contextlib.contextmanager
def _half_open_connections(sweep, n: int, limits: Limits):
    """Serve ``sweep`` under ``limits``; yield its URL and ``n`` connections that send half a request line and
    never finish it; close them all and stop the server afterwards."""
    import socket

    url, stop = start_in_background(sweep[3], port=0, poll=0.1, heartbeat=5.0, limits=limits)
    host, port = host_port(url)
    socks = []
    try:
        for _ in range(n):
            s = socket.create_connection((host, port), timeout=10)
            s.sendall(b"GET /api/snap")
            socks.append(s)
        yield url, socks
    finally:
        for s in socks:
            s.close()
        stop()


def _closed_by_server(socks: list, wait: float) -> int:
    """How many of ``socks`` the server closes within ``wait`` seconds each (the others are still held)."""
    closed = 0
    for s in socks:
        s.settimeout(wait)
        try:
            closed += s.recv(1) == b""
        except ConnectionResetError:
            closed += 1
        except TimeoutError:
            pass
    return closed


def test_half_open_connections_are_capped_and_timed_out(sweep):
    """Issue 13: 300 connections that never send a request are not held forever, and do not lock others out for long."""
    with _half_open_connections(sweep, 300, Limits(max_connections=50, header_timeout=0.5)) as (url, socks):
        # every one is closed by the server: at once beyond the cap, after the header timeout within it
        assert _closed_by_server(socks, 10) == 300
        assert get(url + "api/snapshot")[0] == 200


def test_connections_beyond_the_cap_are_closed_at_once(sweep):
    """With a long header timeout only the connection cap can close the extra half-open connections."""
    with _half_open_connections(sweep, 40, Limits(max_connections=10, header_timeout=60.0)) as (_, socks):
        time.sleep(1.0)
        closed = _closed_by_server(socks, 0.2)  # those within the cap are still held, waiting for their headers
        assert 28 <= closed <= 31, closed  # the 30 beyond the cap of 10, give or take the server's own bookkeeping


def test_a_token_is_checked_on_every_request(sweep):
    token = "t0k3n-for-the-tests-0123456789"
    url, stop = start_in_background(sweep[3], port=0, poll=0.1, heartbeat=5.0, token=token)
    try:
        assert url.endswith(f"/?token={token}")
        base = url.split("?")[0]
        for path in ("", "api/snapshot", "api/stream", "dashboard.js", "api/scores?input=toy&system=sys-alpha"):
            code, _, body = get(base + path)
            assert code == 401 and b"token" in body, path
            assert get(base + path, headers={"Cookie": "votebench_token_1=" + token})[0] == 401  # another port's cookie
        assert get(base + "api/snapshot?token=wrong-token-0123456789")[0] == 401
        assert get(base + "api/snapshot", headers={"Authorization": f"Bearer {token}"})[0] == 200
        # the page's address: sets the cookie and drops the token from the address bar
        req = urllib.request.Request(url)
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(req, timeout=10)
            raise AssertionError("expected a redirect")
        except urllib.error.HTTPError as exc:
            assert exc.code == 302 and exc.headers["Location"] == "/"
            cookie = exc.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        jar = cookie.split(";")[0]
        assert get(base + "api/snapshot", headers={"Cookie": jar})[0] == 200
        assert get(base, headers={"Cookie": jar})[0] == 200
    finally:
        stop()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_beyond_loopback_a_token_is_generated(sweep):
    url, stop = start_in_background(sweep[3], host="0.0.0.0", port=0, poll=0.1, heartbeat=5.0)
    try:
        assert "?token=" in url and len(url.split("?token=")[1]) >= 24
        base = url.split("?")[0]
        assert get(base + "api/snapshot")[0] == 401
        assert get(base + "api/snapshot?token=" + url.split("?token=")[1])[0] == 200
    finally:
        stop()
    with pytest.raises(VotebenchError, match="--token"):
        start_in_background(sweep[3], port=0, token="short")


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
        snap = fetch(url)
        assert snap["status"] == "waiting" and snap["groups"] == []
        stream = EventReader(url)
        assert stream.next_event()["status"] == "waiting"
        run_sweep(cfg, progress=False, max_blocks=0)  # creates the store, computes nothing
        # the skeletons are written group by group: the stream may show the store half-created first
        ev = stream.next_event(lambda e: e["progress"]["blocks_total"] == N_BLOCKS)
        assert ev["status"] == "partial" and blocks_done(ev) == 0
        assert len(fetch(url)["groups"]) == 3
        stream.close()
    finally:
        stop()


def test_stop_closes_open_streams(sweep):
    board = start_in_background(sweep[3], port=0, poll=0.1, heartbeat=5.0)
    url, stop = board
    stream = EventReader(url)
    assert blocks_done(stream.next_event()) == 5
    assert board.alive
    stop()
    assert not board.alive  # `votebench sweep --dashboard` stops waiting for Ctrl-C when the server is gone
    stop()  # idempotent
    assert stream.resp.readline() == b""  # the stream ended
    stream.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    return build_parser((serve,))


def test_register_defaults_and_errors(tmp_path):
    args = parser().parse_args(["serve", "results.zarr"])
    assert (args.store, args.host, args.port, args.dask_dashboard, args.token) == ("results.zarr", "127.0.0.1", 8050, None,
                                                                                    None)
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
import sys
from engine.app.cli import build_parser
from engine.app.commands import serve
args = build_parser((serve,)).parse_args(sys.argv[1:])
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


def test_sweep_dashboard_exit_when_done(tmp_path, capsys):
    """`votebench sweep CONFIG --dashboard --exit-when-done --port 0`: the page is announced on stderr, the sweep
    completes, the page is shown the finished store, then the server stops (its port no longer answers)."""
    from conftest import run_cli

    csv = write_input(tmp_path)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'seed = 1\nstore = "{tmp_path / "res.zarr"}"\n[input]\npath = "{csv}"\n[[rules]]\nname = "borda"\n'
                   '[[perturbations]]\nkind = "bootstrap"\nover = "tasks"\nreplicates = 6\nblock = 3\n')
    code, out, err = run_cli(capsys, "sweep", cfg, "--dashboard", "--exit-when-done", "--port", "0", "--no-progress")
    assert code == 0, err
    line = next(ln for ln in err.splitlines() if "live dashboard at" in ln)
    url = line.split("live dashboard at ")[1].split()[0]
    assert url.startswith("http://127.0.0.1:") and "until the page has the finished store: --exit-when-done" in line
    assert "blocks done 2/2" in out and "keeps serving" not in err
    assert json.dumps(snapshot(tmp_path / "res.zarr"))  # the finished store still reads
    with pytest.raises(OSError):
        get(url + "api/snapshot")
    code, out, err = run_cli(capsys, "sweep", cfg, "--exit-when-done", "--no-progress")
    assert code == 2 and "--exit-when-done needs --dashboard" in err


def test_sweep_dashboard_keeps_serving_until_ctrl_c(tmp_path):
    """Without --exit-when-done the finished store stays served (status complete) until Ctrl-C, which exits 0."""
    csv = write_input(tmp_path)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'seed = 1\nstore = "{tmp_path / "res.zarr"}"\n[input]\npath = "{csv}"\n[[rules]]\nname = "borda"\n'
                   '[[perturbations]]\nkind = "bootstrap"\nover = "tasks"\nreplicates = 6\nblock = 3\n')
    proc = subprocess.Popen([sys.executable, "-m", "engine", "sweep", str(cfg), "--dashboard", "--port", "0",
                             "--no-progress"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in proc.stderr:
            if "live dashboard at" in line:
                url = line.split("live dashboard at ")[1].split()[0]
            if "keeps serving" in line:
                break
        assert url is not None, "no dashboard line"
        assert "until Ctrl-C" in line
        snap = fetch(url)
        assert snap["status"] == "complete" and blocks_done(snap) == 2
        assert snap["dask_dashboard"] is None  # the sweep's scheduler is gone: no dead link
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "dashboard stopped" in err and "Traceback" not in err
    assert "blocks done 2/2" in out


def test_sweep_dashboard_bad_port_is_refused_before_anything_is_written(tmp_path, capsys):
    from conftest import one_line_error, run_cli

    csv = write_input(tmp_path)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'seed = 1\nstore = "{tmp_path / "res.zarr"}"\n[input]\npath = "{csv}"\n[[rules]]\nname = "borda"\n'
                   '[[perturbations]]\nkind = "bootstrap"\nover = "tasks"\nreplicates = 4\nblock = 2\n')
    one_line_error(*run_cli(capsys, "sweep", cfg, "--dashboard", "--port", "70000", "--no-progress"), "--port")
    assert not (tmp_path / "res.zarr").exists()


def test_a_damaged_chunk_is_named_on_the_page_while_serving_and_in_one_line_by_serve(sweep, tmp_path, capsys):
    """While serving, a group whose chunk cannot be decoded is dropped from the page with a message naming the
    store; `votebench serve` refuses such a store in one line before serving."""
    from conftest import one_line_error, run_cli

    store = tmp_path / "damaged.zarr"
    shutil.copytree(sweep[3], store)
    summaries = sorted(p for p in store.rglob("*") if p.is_file() and "/summary/" in p.as_posix() and "/c/" in p.as_posix())
    assert summaries
    for p in summaries:
        p.write_bytes(b"\x00 not zstd")
    live = LiveStore(store, agree_budget=None)
    live.update()
    snap = live.snapshot()
    assert "corrupted or unreadable chunk in this results store" in snap.get("message", "")
    assert json.dumps(snap)
    one_line_error(*run_cli(capsys, "serve", store, "--port", 0), "corrupted or unreadable chunk in this results store")
