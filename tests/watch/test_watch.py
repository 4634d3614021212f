"""``votebench watch`` (issue 29): evaluation outputs landing in a folder are ingested once each into a zarr store,
ranked as ``votebench rank`` ranks the same files, and published (``--once``, ``--snapshot``, ``--dashboard``).

The rankings are checked against ``votebench rank`` run on the whole folder (the reader reads every model folder at
once, so none of the watch's merging is involved) and against ``votebench rank STORE``; the checksums against
:mod:`hashlib`; "parsed nothing twice" by counting the calls of the registered reader.  The end-to-end test drops
model folders into the folder while ``votebench watch --dashboard`` runs in a subprocess and reads ``/api/snapshot``
and the page in headless Chromium (driven over the DevTools protocol with tornado's websocket client; skipped
without ``/usr/bin/chromium``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from conftest import CHROMIUM, run_cli

from engine.io.readers import READERS

TASKS = ("arc", "hella", "mmlu")
N_DOCS = 40
STAMP = "2024-05-01T10-00-00"
REPO = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------ outputs as the harness writes them
def write_model(root: Path, name: str, skill: float, *, seed: int, tasks=TASKS, results: bool = True,
                folder: str | None = None) -> Path:
    """An lm-eval ``--log_samples`` model folder: one samples file per task (acc 0/1 per doc), then the results file."""
    rng = np.random.default_rng(seed)
    d = root / (folder or name.replace("/", "__"))
    d.mkdir(parents=True, exist_ok=True)
    for t in tasks:
        lines = [json.dumps({"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": float(rng.random() < skill)})
                 for i in range(N_DOCS)]
        (d / f"samples_{t}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    if results:
        write_results(d, name, tasks)
    return d


def write_results(d: Path, name: str, tasks=TASKS) -> None:
    (d / f"results_{STAMP}.json").write_text(json.dumps({"model_name": name,
                                                         "higher_is_better": {t: {"acc": True} for t in tasks}}))


def cli_json(capsys, *argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    return json.loads(out), err


def rank_of(capsys, path, *opts):
    """``votebench rank PATH --format json``: system -> (score, rank)."""
    got, _ = cli_json(capsys, "rank", path, "--format", "json", *opts)
    return {r["system"]: (r["score"], r["rank"]) for r in got["ranking"]}


def published(snap):
    return {r["system"]: (r["score"], r["rank"]) for r in snap["ranking"]}


def same(got, want) -> bool:
    """Two rankings (system -> (score, rank)): the same systems and ranks, the scores equal to rounding."""
    return set(got) == set(want) and all(got[k][1] == want[k][1] and np.isclose(got[k][0], want[k][0], rtol=1e-12,
                                                                                   atol=1e-12) for k in got)


def watch_once(capsys, root, store, *opts):
    code, out, err = run_cli(capsys, "watch", root, "--store", store, "--once", "--level", "two", *opts)
    assert code == 0, err
    return json.loads(out), err


@pytest.fixture
def counting(monkeypatch):
    """Count the folders/files the lm-eval and JSONL readers open (the registry's records, wrapped)."""
    calls: list[str] = []
    for name in ("lm-eval", "jsonl"):
        reader = READERS[name]

        def opened(path, *a, _open=reader.open, **kw):
            calls.append(Path(path).name)
            return _open(path, *a, **kw)

        monkeypatch.setitem(READERS, name, dataclasses.replace(reader, open=opened))
    return calls


# ------------------------------------------------------------------------------------ ingestion and ranking
def test_each_ingestion_publishes_the_ranking_votebench_rank_gives_on_the_same_files(tmp_path, capsys):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    root.mkdir()
    skills = [0.35, 0.8, 0.55, 0.6, 0.2]
    for n, skill in enumerate(skills):
        write_model(root, f"org/m{n}", skill, seed=n)
        snap, err = watch_once(capsys, root, store)
        if n == 0:  # one system: nothing to rank yet, and no store written
            assert snap["ranking"] == [] and not store.exists() and "second system" in err
            continue
        expected = rank_of(capsys, root, "--level", "two")  # the reader over the whole folder at once
        assert same(published(snap), expected)
        assert same(published(snap), rank_of(capsys, store, "--level", "two"))
        assert snap["sizes"] == {"system": n + 1, "task": len(TASKS), "instance": N_DOCS}
        assert f"new: org/m{n}" in " ".join(snap["changes"])
        newest = next(r for r in snap["ranking"] if r["system"] == f"org/m{n}")
        assert f"new: org/m{n} enters at rank {newest['rank']}" in snap["changes"]


def test_provenance_records_every_file_with_its_sha256(tmp_path, capsys):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    for n in range(3):
        write_model(root, f"m{n}", 0.3 + 0.2 * n, seed=n)
    snap, _ = watch_once(capsys, root, store)
    for n in range(3):
        prov = snap["provenance"][f"m{n}"]
        on_disk = sorted(p for p in (root / f"m{n}").iterdir())
        assert [f["path"] for f in prov["files"]] == [f"m{n}/{p.name}" for p in on_disk]
        assert [f["sha256"] for f in prov["files"]] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in on_disk]
        assert abs(prov["ingested"] - time.time()) < 120


def test_a_restarted_watch_parses_nothing_twice_and_reingests_a_changed_file_with_a_note(tmp_path, capsys, counting):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    for n in range(3):
        write_model(root, f"m{n}", 0.3 + 0.2 * n, seed=n)
    first, _ = watch_once(capsys, root, store)
    assert sorted(counting) == ["m0", "m1", "m2"]
    counting.clear()
    again, err = watch_once(capsys, root, store)  # a restart: the ledger in the store says everything is in
    assert counting == [] and "ingested" not in err
    assert published(again) == published(first) and again["changes"] == []
    # one model re-run: its samples change after ingestion -> that model alone is read again, with a note
    write_model(root, "m0", 0.95, seed=99)
    snap, err = watch_once(capsys, root, store)
    assert counting == ["m0"]
    assert "re-ingested m0" in err and "changed after ingestion" in err
    assert same(published(snap), rank_of(capsys, root, "--level", "two"))
    assert snap["sizes"]["system"] == 3  # replaced, not appended
    # touching a file without changing it (same bytes, new mtime) reads nothing
    counting.clear()
    p = next((root / "m1").glob("samples_*"))
    os.utime(p, ns=(time.time_ns(), time.time_ns()))
    _, err = watch_once(capsys, root, store)
    assert counting == [] and "ingested" not in err


def test_half_written_outputs_wait(tmp_path, capsys):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    for n in range(2):
        write_model(root, f"m{n}", 0.4 + 0.2 * n, seed=n)
    write_model(root, "late", 0.9, seed=7, results=False)  # samples written, results_*.json not yet
    fresh = root / "extra.jsonl"  # a file still being written (just modified)
    fresh.write_text(json.dumps({"system": "x", "task": "arc", "instance": 0, "score": 1.0}) + "\n")
    snap, _ = watch_once(capsys, root, store, "--settle", "60")
    assert sorted(published(snap)) == ["m0", "m1"]
    why = {w["unit"]: w["why"] for w in snap["waiting"]}
    assert "results_" in why["late"] and "settling time 60" in why["extra.jsonl"]
    write_results(root / "late", "late")
    snap, _ = watch_once(capsys, root, store, "--settle", "60")
    assert sorted(published(snap)) == ["late", "m0", "m1"]


def jsonl_scores(path: Path, systems, tasks=TASKS, seed=0, truncate=False):
    rng = np.random.default_rng(seed)
    rows = [json.dumps({"system": s, "task": t, "instance": i, "score": round(float(rng.random()), 6)})
            for s in systems for t in tasks for i in range(N_DOCS)]
    text = "\n".join(rows) + "\n"
    path.write_text(text[: len(text) // 2] if truncate else text)


def test_bad_outputs_get_one_line_each_never_stop_the_watch_and_never_touch_the_store(tmp_path, capsys, counting):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    for n in range(3):
        write_model(root, f"m{n}", 0.3 + 0.2 * n, seed=n)
    good, _ = watch_once(capsys, root, store)
    before = {p.relative_to(store): p.read_bytes() for p in store.rglob("*") if p.is_file() and p.name != "zarr.json"}
    write_model(root, "m9", 0.5, seed=9, tasks=("arc", "hella"))  # a different task set
    write_model(root, "m1", 0.9, seed=11, folder="copy_of_m1")  # a duplicate model name
    jsonl_scores(root / "cut.jsonl", ["j1", "j2"], truncate=True)  # a truncated JSONL file
    jsonl_scores(root / "nodir.jsonl", ["j3"], tasks=(*TASKS, "gsm"))  # bare scores: a new task, its direction unknown
    (root / "arena.csv").write_text("model_a,model_b,winner\nm0,m1,model_a\nm1,m2,model_b\n")  # battles, not scores
    snap, err = watch_once(capsys, root, store, "--settle", "0")
    bad = [line for line in err.splitlines() if "bad output" in line]
    assert len(bad) == 5, err
    said = " ".join(bad)
    assert "m9: different task set (lacks mmlu)" in said
    assert "copy_of_m1: duplicate model name 'm1' (already ingested from m1)" in said
    assert "cut.jsonl: line " in said and "not valid JSON" in said
    assert "nodir.jsonl: unknown direction of task(s) gsm" in said
    assert "arena.csv: " in said and "not scores" in said
    assert published(snap) == published(good)
    assert sorted(r["unit"] for r in snap["rejected"]) == ["arena.csv", "copy_of_m1", "cut.jsonl", "m9", "nodir.jsonl"]
    assert len([e for e in snap["log"] if e["level"] == "error"]) == 5
    after = {p.relative_to(store): p.read_bytes() for p in store.rglob("*") if p.is_file() and p.name != "zarr.json"}
    assert after == before  # only the ledger (in zarr.json) changed
    assert same(rank_of(capsys, store, "--level", "two"), published(good))
    # unchanged bad outputs are neither read nor said again
    counting.clear()
    snap, err = watch_once(capsys, root, store, "--settle", "0")
    assert "bad output" not in err and counting == [] and published(snap) == published(good)


def test_the_store_and_the_snapshot_inside_the_watched_folder_are_no_outputs(tmp_path, capsys):
    root = tmp_path / "runs"
    for n in range(2):
        write_model(root, f"m{n}", 0.3 + 0.4 * n, seed=n)
    for _ in range(2):  # the second time the store and the snapshot file exist, settled
        snap, err = watch_once(capsys, root, root / "lb.zarr", "--settle", "0", "--snapshot", root / "snap.json")
        assert "bad output" not in err and sorted(published(snap)) == ["m0", "m1"]
    assert json.loads((root / "snap.json").read_text())["ranking"] == snap["ranking"]


def test_bare_scores_take_their_directions_from_the_sidecar(tmp_path, capsys):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    root.mkdir()
    jsonl_scores(root / "a.jsonl", ["j1", "j2"], seed=1)
    jsonl_scores(root / "b.jsonl", ["j3"], seed=2)
    meta = tmp_path / "dirs.meta.json"
    meta.write_text(json.dumps({"higher_is_better": {"arc": True, "hella": False, "mmlu": True}}))
    snap, err = watch_once(capsys, root, store, "--settle", "0", "--meta", meta)
    assert "bad output" not in err and snap["sizes"]["system"] == 3
    both = tmp_path / "both.jsonl"  # the two files as one, ranked by `votebench rank` with the same sidecar
    both.write_text((root / "a.jsonl").read_text() + (root / "b.jsonl").read_text())
    assert same(published(snap), rank_of(capsys, both, "--level", "two", "--meta", meta))
    flipped = rank_of(capsys, both, "--level", "two")  # all higher-is-better: another ranking, so the sidecar counted
    assert not same(published(snap), flipped)


def write_helm_model(root: Path, model: str, seed: int) -> None:
    """One model's HELM runs (``<scenario>:model=<model>/per_instance_stats.json`` + ``run_spec.json``) in its folder."""
    rng = np.random.default_rng(seed)
    for scenario in ("boolq", "mmlu"):
        name = f"{scenario}:model={model.replace('/', '_')}"
        d = root / model.replace("/", "_") / name
        d.mkdir(parents=True)
        entries = [{"instance_id": f"id{i}", "train_trial_index": 0,
                    "stats": [{"name": {"name": "exact_match", "split": "test"}, "count": 1, "sum": v, "mean": v}]}
                   for i, v in enumerate(float(x) for x in rng.random(N_DOCS) < 0.3 + 0.2 * seed)]
        (d / "per_instance_stats.json").write_text(json.dumps(entries))
        (d / "run_spec.json").write_text(json.dumps({"name": name, "adapter_spec": {"model": model}, "groups": [scenario]}))


def test_helm_model_folders_are_units(tmp_path, capsys):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    for n in range(3):
        write_helm_model(root, f"org/h{n}", seed=n)
    snap, err = watch_once(capsys, root, store, "--settle", "0")
    assert "bad output" not in err and snap["sizes"] == {"system": 3, "task": 2, "instance": N_DOCS}
    assert same(published(snap), rank_of(capsys, root, "--level", "two"))  # the HELM reader over the whole folder
    assert {p["kind"] for p in snap["provenance"].values()} == {"helm"}


def test_bootstrap_intervals_are_those_of_votebench_bootstrap_on_the_store(tmp_path, capsys):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    for n in range(4):
        write_model(root, f"m{n}", 0.3 + 0.15 * n, seed=n)
    opts = ("--over", "instances", "--replicates", "30", "--seed", "5")
    snap, err = watch_once(capsys, root, store, *opts)
    boot, _ = cli_json(capsys, "bootstrap", store, "--level", "two", *opts, "--format", "json")
    want = {r["system"]: (r["rank_low"], r["rank_high"]) for r in boot["ranking"]}
    assert {r["system"]: (r["rank_low"], r["rank_high"]) for r in snap["ranking"]} == want
    for r in snap["ranking"]:
        low, high = want[r["system"]]
        assert f"new: {r['system']} enters at rank {r['rank']} [" in " ".join(snap["changes"])
        assert low <= high


def test_bad_options_and_store_are_one_line_errors(tmp_path, capsys):
    root = tmp_path / "runs"
    root.mkdir()
    code, out, err = run_cli(capsys, "watch", tmp_path / "nope", "--store", tmp_path / "s.zarr", "--once")
    assert code == 2 and err.count("\n") == 1 and "no such folder" in err
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("hi")
    code, out, err = run_cli(capsys, "watch", root, "--store", other, "--once")
    assert code == 2 and err.count("\n") == 1 and "not a zarr store" in err
    code, out, err = run_cli(capsys, "watch", root, "--store", tmp_path / "s.zarr", "--interval", "0")
    assert code == 2 and err.count("\n") == 1 and "--interval" in err
    for n in range(2):
        write_model(root, f"m{n}", 0.5, seed=n)
    watch_once(capsys, root, tmp_path / "s.zarr")
    code, out, err = run_cli(capsys, "watch", root, "--store", tmp_path / "s.zarr", "--once", "--metric", "acc_norm")
    assert code == 2 and err.count("\n") == 1 and "built with other reading options (loader" in err


# ------------------------------------------------------------------------------------ end to end, with the page


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def wait_for(fn, timeout=90.0, every=0.2):
    end = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(every)


class Chromium:
    """Headless Chromium driven over the DevTools protocol (tornado's websocket client): navigate, evaluate."""

    def __init__(self, tmp: Path) -> None:
        self.profile = tmp / "chromium-profile"
        self.proc = subprocess.Popen([str(CHROMIUM), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      "--disable-dev-shm-usage", "--disable-background-networking", "--disable-sync",
                                      f"--user-data-dir={self.profile}", "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self.profile / "DevToolsActivePort"
        wait_for(lambda: port_file.is_file() and port_file.read_text().count("\n") >= 1, timeout=30)
        port = port_file.read_text().splitlines()[0]
        pages = wait_for(lambda: [t for t in get_json(f"http://127.0.0.1:{port}/json/list") if t["type"] == "page"])
        self.ws_url = pages[0]["webSocketDebuggerUrl"]
        self.loop = asyncio.new_event_loop()
        self.ws = self.loop.run_until_complete(self._connect())
        self.n = 0

    async def _connect(self):
        from tornado.websocket import websocket_connect

        return await websocket_connect(self.ws_url)

    async def _call(self, method, params):
        self.n += 1
        await self.ws.write_message(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(await self.ws.read_message())
            if msg.get("id") == self.n:
                return msg.get("result", {})

    def call(self, method, **params):
        return self.loop.run_until_complete(self._call(method, params))

    def evaluate(self, expression):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return res.get("result", {}).get("value")

    def close(self):
        self.ws.close()
        self.loop.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


ROWS_JS = ("JSON.stringify([document.body.dataset.version || null, Array.from(document.querySelectorAll("
           "'table.lb tbody tr.sys')).map(tr => [tr.dataset.system, Number(tr.querySelector('td[data-n]').dataset.n)]), "
           "Array.from(document.querySelectorAll('#changes li')).map(li => li.textContent), "
           "Array.from(document.querySelectorAll('#rejected li')).map(li => li.textContent), "
           "Array.from(document.querySelectorAll('#provenance details')).length])")


def test_end_to_end_folders_dropped_while_watch_dashboard_runs(tmp_path, capsys):
    root, store = tmp_path / "runs", tmp_path / "lb.zarr"
    staging = tmp_path / "staging"
    root.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "engine", "watch", str(root), "--store", str(store), "--level", "two",
                             "--dashboard", "--port", "0", "--interval", "0.3", "--settle", "0.5", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    browser = None
    try:
        line = proc.stdout.readline()
        assert "dashboard at http://" in line, line + proc.stderr.read()
        url = line.split(" at ")[1].strip()
        if CHROMIUM.exists():
            browser = Chromium(tmp_path)
            browser.call("Page.navigate", url=url)
        skills = [0.3, 0.75, 0.5, 0.6]
        for n, skill in enumerate(skills):
            # the harness writes the samples, then the results file: a model folder moved in whole lands complete
            write_model(staging, f"org/m{n}", skill, seed=n)
            shutil.move(str(staging / f"org__m{n}"), str(root / f"org__m{n}"))
            if n == 0:
                continue
            snap = wait_for(lambda n=n: (s := get_json(url + "api/snapshot")).get("n_systems") == n + 1 and s)
            assert same(published(snap), rank_of(capsys, root, "--level", "two"))
            assert any(c.startswith(f"new: org/m{n} enters at rank ") for c in snap["changes"])
            if browser is not None:  # the page follows without a reload
                # the leaderboard is drawn by the dashboard's script; the cards (what changed, provenance) by the watch
                # script from its own fetch once the leaderboard has been redrawn: wait for the whole page
                want = sorted((r["system"], r["rank"]) for r in snap["ranking"])
                page = wait_for(lambda want=want, n=n: (p := json.loads(browser.evaluate(ROWS_JS)))
                                and sorted(map(tuple, p[1])) == want and p[4] == n + 1
                                and any(c.startswith(f"new: org/m{n} enters") for c in p[2]) and p)
                assert sorted(map(tuple, page[1])) == want
        # a half-written model (no results file yet) is not ingested; a bad one is reported on the page
        write_model(root, "org/late", 0.9, seed=20, results=False)
        write_model(root, "org/m1", 0.9, seed=21, folder="dup")
        snap = wait_for(lambda: (s := get_json(url + "api/snapshot")).get("rejected") and s)
        assert "duplicate model name 'org/m1'" in snap["rejected"][0]["error"]
        assert any(w["unit"] == "org__late" for w in snap["waiting"]) and snap["n_systems"] == 4
        if browser is not None:
            wait_for(lambda: any("duplicate model name" in t for t in json.loads(browser.evaluate(ROWS_JS))[3]))
        write_results(root / "org__late", "org/late")
        snap = wait_for(lambda: (s := get_json(url + "api/snapshot")).get("n_systems") == 5 and s)
        shutil.rmtree(root / "dup")  # (rank on the folder would read the duplicate too)
        assert same(published(snap), rank_of(capsys, root, "--level", "two"))
    finally:
        if browser is not None:
            browser.close()
        proc.send_signal(2)  # Ctrl-C
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, err
    assert "watch stopped" in err and "Traceback" not in err
    assert err.count("bad output") == 1
    if browser is None:
        pytest.skip("the page was not checked: no /usr/bin/chromium (apt-get install -y chromium)")
