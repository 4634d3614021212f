"""``votebench convert`` (engine.io.convert): a long CSV streamed into a zarr store equals reading the CSV directly.

The converter's blocks, slabs and chunks are made tiny here, so that small files
cross every boundary (several parse blocks, slabs and store chunks); the reference
is ``engine.open_scores`` on the same file (the in-memory table reader, which shares
no code with the streaming path) and, for the rankings, the rules on that tensor.
"""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest
from conftest import DATA, one_line_error, run_cli

import engine
import engine.io.convert
from engine.io.convert import convert

TAC08 = DATA / "colombo_tac08.csv.gz"  # long: 62 systems x 15 tasks x 48 instances, with a sidecar


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Parse 4 kB of CSV at a time and fill at most 5,000 cells per slab."""
    monkeypatch.setattr(engine.io.convert, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(engine.io.convert, "SLAB_CELLS", 5000)


def long_csv(rng, S, T, K, *, holes=0.0, ragged=False, string_instances=False, shuffle=True):
    """A long CSV text (rows in random order), its cells as {(s, t, i): score-text}."""
    rows = []
    for s in range(S):
        for t in range(T):
            for k in range(K - (t % 3 if ragged else 0)):
                v = rng.choice(["", "nan", "NA", "-"]) if rng.random() < holes else f"{rng.normal():.4f}"
                inst = f"q{k}" if string_instances else str(k)
                rows.append(f"sys{s},task{t},{inst},{v}")
    if shuffle:
        rng.shuffle(rows)
    return "system,task,instance,score\n" + "\n".join(rows) + "\n"


def assert_same_tensor(a, b):
    for d in ("system", "task", "instance"):
        assert a[d].values.tolist() == b[d].values.tolist(), d
    for c in ("higher_is_better", "group", "n_instances"):
        assert a[c].values.tolist() == b[c].values.tolist(), c
    np.testing.assert_array_equal(a.values, np.asarray(b.values))


@pytest.mark.parametrize("case", ["plain", "holes-ragged", "string-instances"])
def test_store_equals_the_csv_read_in_memory(tmp_path, tiny_blocks, case):
    rng = np.random.default_rng(len(case))
    kw = {"holes": 0.1, "ragged": True} if case == "holes-ragged" else {"string_instances": case == "string-instances"}
    src = tmp_path / "bench.csv"
    src.write_text(long_csv(rng, 7, 5, 30, **kw), encoding="utf-8")
    (tmp_path / "bench.meta.json").write_text(json.dumps({
        "name": "bench", "paper": "P", "higher_is_better": {"task1": False, "task4": False},
        "task_groups": {"benchmark_categories": {"g1": ["task0", "task1"], "g2": ["task2", "task3", "task4"]}}}))
    info = convert(src, tmp_path / "s.zarr", chunks={"task": 2, "instance": 7})
    assert info["streamed"] and info["rows"] == src.read_text().count("\n") - 1
    direct = engine.open_scores(src)
    stored = engine.open_scores(tmp_path / "s.zarr")
    assert stored.chunks is not None and stored.data.chunksize[1:] == (2, 7)  # (system, task, instance) chunks
    assert_same_tensor(direct, stored)
    hib = dict(zip(stored["task"].values.tolist(), stored["higher_is_better"].values.tolist()))
    assert hib == {"task0": True, "task1": False, "task2": True, "task3": True, "task4": False}  # the sidecar is in the store
    assert stored.attrs["name"] == "bench" and stored.attrs["paper"] == "P"
    assert json.loads(stored.attrs["task_groups"]) == json.loads(direct.attrs["task_groups"])
    assert info["missing"] == int(np.isnan(direct.values).sum() - np.isnan(direct.values).all(axis=0).sum() * direct.sizes["system"])
    for rule, level in [("borda", "two"), ("mean", "task"), ("copeland", "task"), ("borda", "one")]:
        want = engine.rank(direct, rule=rule, level=level, missing="drop-judges")
        got = engine.rank(engine.open_scores(tmp_path / "s.zarr"), rule=rule, level=level, missing="drop-judges").compute()
        np.testing.assert_allclose(got["score"].values, want["score"].values, rtol=1e-12, equal_nan=True)
        np.testing.assert_array_equal(got["rank"].values, want["rank"].values)


def test_gzip_and_no_instance_column(tmp_path, tiny_blocks):
    rng = np.random.default_rng(3)
    text = "system,task,score\n" + "".join(f"s{s},t{t},{rng.normal():.3f}\n" for s in range(9) for t in range(6))
    src = tmp_path / "tasks.csv.gz"
    with gzip.open(src, "wt", encoding="utf-8") as fh:
        fh.write(text)
    convert(src, tmp_path / "t.zarr")
    assert_same_tensor(engine.open_scores(src), engine.open_scores(tmp_path / "t.zarr"))


def test_shipped_instance_level_data(tmp_path):
    """colombo_tac08 (44,640 rows) with its sidecar: the default path, default chunks and blocks."""
    convert(TAC08, tmp_path / "tac.zarr")
    direct, stored = engine.open_scores(TAC08), engine.open_scores(tmp_path / "tac.zarr")
    assert_same_tensor(direct, stored)
    assert stored.attrs["name"] == direct.attrs["name"] == "colombo_tac08"


def test_other_inputs_are_read_in_memory(tmp_path):
    src = DATA / "esann_automl.csv"  # wide
    info = convert(src, tmp_path / "w.zarr")
    assert not info["streamed"]
    assert_same_tensor(engine.open_scores(src), engine.open_scores(tmp_path / "w.zarr"))


BAD = [
    ("dup", "system,task,instance,score\na,t,1,0.5\nb,t,1,0.2\na,t,2,0.1\na,t,1,0.3\n"),
    ("empty-name", "system,task,instance,score\na,t,1,0.5\n,t,1,0.2\n"),
    ("nan-name", "system,task,instance,score\na,t,1,0.5\nb,nan,1,0.2\n"),
    ("not-a-number", "system,task,instance,score\na,t,1,0.5\nb,t,1,abc\n"),
    ("infinite", "system,task,instance,score\na,t,1,0.5\nb,t,1,-inf\n"),
    ("one-system", "system,task,instance,score\na,t,1,0.5\na,t,2,0.2\n"),
    ("task-without-scores", "system,task,instance,score\na,t,1,0.5\nb,t,1,0.2\na,u,1,\nb,u,1,-\n"),
    ("no-rows", "system,task,instance,score\n"),
]


@pytest.mark.parametrize("name, text", BAD, ids=[b[0] for b in BAD])
def test_bad_input_gives_the_table_readers_message(tmp_path, capsys, tiny_blocks, name, text):
    src = tmp_path / "bad.csv"
    src.write_text(text, encoding="utf-8")
    with pytest.raises(engine.VotebenchError) as direct:
        engine.open_scores(src)
    code, out, err = run_cli(capsys, "convert", src, tmp_path / "bad.zarr")
    one_line_error(code, out, err)
    # the same words; the converter always names the file (the table reader says "scores:" for some checks)
    where, _, what = str(direct.value).partition(": ")
    assert where in (str(src), "scores") and err == f"votebench: error: {src}: {what}\n", (err, direct.value)
    assert sorted(os.listdir(tmp_path)) == ["bad.csv"]  # no store, no temporary folder


def test_cli_messages_overwrite_and_refusals(tmp_path, capsys):
    src = tmp_path / "x.csv"
    src.write_text("system,task,instance,score\na,t,1,0.5\nb,t,1,0.2\na,t,2,0.1\nb,t,2,0.3\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "convert", src, tmp_path / "x.zarr")
    assert code == 0 and out == "" and "2 systems x 1 tasks x 2 instances" in err and "streamed 4 rows" in err, err
    one_line_error(*run_cli(capsys, "convert", src, tmp_path / "x.zarr"), "already exists", "--overwrite")
    src.write_text("system,task,instance,score\na,t,1,0.9\nb,t,1,0.2\na,t,2,0.1\nb,t,2,0.3\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "convert", src, tmp_path / "x.zarr", "--overwrite")
    assert code == 0, err
    assert float(engine.open_scores(tmp_path / "x.zarr").sel(system="a", instance=1).values[0]) == 0.9
    keep = tmp_path / "folder"
    keep.mkdir()
    (keep / "precious.txt").write_text("x")
    one_line_error(*run_cli(capsys, "convert", src, keep, "--overwrite"), "not a zarr store")
    assert (keep / "precious.txt").exists()
    one_line_error(*run_cli(capsys, "convert", tmp_path / "nope.csv", tmp_path / "n.zarr"), "no such file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "x.csv", "x.zarr"]
