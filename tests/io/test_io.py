"""engine.io.readers: loaders (wide/long CSV, .csv.gz, Parquet), sidecars, validation, shipped data."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pandas as pd
import pytest
from conftest import BAD_INPUTS, COLOMBO_T1_RANKS, COLOMBO_T1_VALUES, DATA, MALFORMED_SIDECARS

import engine
from engine.labelled.canonical import sidecar_path

WIDE = 'system,"acc, macro",f1\n"Team A, v2",0.5,0.25\n"He said ""hi""",0.75,\nplain,-1e-3,2\n'


def test_wide_csv_quoted_names_with_commas_and_quotes(write):
    s = engine.open_scores(write("wide.csv", WIDE))
    assert s.dims == ("system", "task", "instance") and s.name == "scores" and s.dtype == np.float64
    assert list(s["system"].values) == ["Team A, v2", 'He said "hi"', "plain"]
    assert list(s["task"].values) == ["acc, macro", "f1"]
    assert list(s["instance"].values) == [0]
    expected = np.array([[0.5, 0.25], [0.75, np.nan], [-1e-3, 2.0]])
    np.testing.assert_array_equal(s.values[:, :, 0], expected)
    assert s["higher_is_better"].values.tolist() == [True, True]  # no sidecar: all higher is better
    assert list(s["group"].values) == ["acc, macro", "f1"]  # ungrouped: the task's own name
    assert s.attrs["name"] == "wide"
    assert int(engine.missing_report(s).sum()) == 1


@pytest.mark.parametrize("token", ["", "NA", "nan", "NaN", "-", "null", "None", "n/a", " "])
def test_wide_csv_missing_tokens(write, token):
    s = engine.open_scores(write("w.csv", f"system,t1,t2\na,1,{token}\nb, 2 ,3\n"))
    np.testing.assert_array_equal(s.values[:, :, 0], [[1.0, np.nan], [2.0, 3.0]])


def _long_rows(rng, systems, tasks, n_inst):
    rows = []
    for t, k_max in zip(tasks, n_inst):
        for k in range(k_max):
            for sname in systems:
                rows.append((sname, t, k, float(rng.integers(0, 4)) + rng.choice([0.0, 0.5])))
    return rows


def test_long_csv_rows_land_in_the_right_cells(write):
    rng = np.random.default_rng(0)
    systems, tasks = ["m1", "m 2", "m,3"], ["BLEU", "H:pyr"]
    rows = _long_rows(rng, systems, tasks, [4, 4])
    order = rng.permutation(len(rows))
    df = pd.DataFrame([rows[i] for i in order], columns=["system", "task", "instance", "score"])
    s = engine.open_scores(write("long.csv", df.to_csv(index=False)))
    assert sorted(s["system"].values) == sorted(systems) and sorted(s["task"].values) == sorted(tasks)
    assert s["instance"].dtype.kind == "i" and sorted(s["instance"].values) == [0, 1, 2, 3]
    for sname, t, k, v in rows:
        assert s.sel(system=sname, task=t, instance=k).item() == v
    assert s["n_instances"].values.tolist() == [4, 4]


def test_long_csv_string_instances_and_column_case(write):
    text = "System,Task,Instance,Score\na,x,doc-1,1\nb,x,doc-1,2\na,x,doc-2,3\nb,x,doc-2,0\n"
    s = engine.open_scores(write("l.csv", text))
    assert list(s["instance"].values) == ["doc-1", "doc-2"]
    assert s.sel(system="a", instance="doc-2").item() == 3.0


def test_long_csv_without_instance_column_is_task_level(write):
    s = engine.open_scores(write("l.csv", "system,task,score\na,x,1\nb,x,2\na,y,5\nb,y,\n"))
    assert s.sizes == {"system": 2, "task": 2, "instance": 1}
    np.testing.assert_array_equal(s.values[:, :, 0], [[1, 5], [2, np.nan]])


def test_ragged_long_csv_is_padded_and_padding_is_not_missing(write):
    rng = np.random.default_rng(1)
    rows = _long_rows(rng, ["a", "b", "c"], ["big", "small"], [5, 2])
    rows.append(("a", "small", 1, np.nan))  # one truly missing score
    rows = [r for r in rows if not (r[0] == "a" and r[1] == "small" and r[2] == 1 and not np.isnan(r[3]))]
    df = pd.DataFrame(rows, columns=["system", "task", "instance", "score"])
    s = engine.open_scores(write("ragged.csv", df.to_csv(index=False)))
    assert s.sizes == {"system": 3, "task": 2, "instance": 5}
    assert s["n_instances"].values.tolist() == [5, 2]
    assert np.isnan(s.sel(task="small").values[:, 2:]).all()  # padding
    rep = engine.missing_report(s)
    assert int(rep.sum()) == 1 and int(rep.sel(system="a", task="small")) == 1
    # padding needs no policy; the one missing score does
    with pytest.raises(engine.VotebenchError, match="1 missing score"):
        engine.aggregate(s, rule="borda", level="two")
    assert engine.aggregate(s, rule="borda", level="two", missing="drop-judges").notnull().all()


def test_long_csv_absent_row_is_missing_not_padding(write):
    text = "system,task,instance,score\na,x,0,1\nb,x,0,2\nc,x,0,3\na,x,1,1\nb,x,1,2\n"
    s = engine.open_scores(write("l.csv", text))
    assert int(engine.missing_report(s).sel(system="c").sum()) == 1


def test_gzip_csv_equals_plain_csv(write):
    rng = np.random.default_rng(2)
    df = pd.DataFrame(_long_rows(rng, ["a", "b"], ["x", "y"], [3, 2]), columns=["system", "task", "instance", "score"])
    text = df.to_csv(index=False)
    plain = engine.open_scores(write("d.csv", text))
    gz = engine.open_scores(write("d.csv.gz", gzip.compress(text.encode())))
    np.testing.assert_array_equal(gz.values, plain.values)
    for c in ("system", "task", "instance", "higher_is_better", "group", "n_instances"):
        assert gz[c].values.tolist() == plain[c].values.tolist()
    wide = engine.open_scores(write("w.csv.gz", gzip.compress(WIDE.encode())))
    np.testing.assert_array_equal(wide.values, engine.open_scores(write("w.csv", WIDE)).values)


def test_parquet_long_and_wide(tmp_path, write):
    rng = np.random.default_rng(3)
    rows = _long_rows(rng, ["a", "b", "c"], ["x", "y"], [3, 3])
    df = pd.DataFrame(rows, columns=["system", "task", "instance", "score"])
    df.loc[4, "score"] = np.nan
    csv_version = engine.open_scores(write("l.csv", df.to_csv(index=False)))
    df.to_parquet(tmp_path / "l.parquet", index=False)
    pq = engine.open_scores(tmp_path / "l.parquet")
    np.testing.assert_array_equal(pq.values, csv_version.values)
    assert pq["instance"].values.tolist() == csv_version["instance"].values.tolist()

    wide = pd.DataFrame({"system": ["Team A, v2", "b", "c"], "t1": [0.5, np.nan, 1.0], "t 2": [1, 2, 3]})
    wide.to_parquet(tmp_path / "w.parquet", index=False)
    w = engine.open_scores(tmp_path / "w.parquet")
    assert list(w["system"].values) == ["Team A, v2", "b", "c"] and list(w["task"].values) == ["t1", "t 2"]
    np.testing.assert_array_equal(w.values[:, :, 0], [[0.5, 1], [np.nan, 2], [1.0, 3]])


def test_parquet_with_sidecar(tmp_path, write):
    df = pd.DataFrame({"system": ["a", "b"], "err": [0.1, 0.2], "acc": [0.9, 0.8]})
    df.to_parquet(tmp_path / "p.parquet", index=False)
    write("p.meta.json", json.dumps({"higher_is_better": {"err": False, "acc": True}}))
    s = engine.open_scores(tmp_path / "p.parquet")
    assert s["higher_is_better"].values.tolist() == [False, True]


def test_sidecar_directions_groups_and_provenance(write):
    path = write("bench.csv", "system,t1,t2,t3\na,1,2,3\nb,3,2,1\nc,2,2,2\n")
    meta = {
        "name": "my bench",
        "paper": "Someone 2024",
        "higher_is_better": {"t1": True, "t2": False},
        "task_groups": {
            "other": {"g0": ["t1", "t2", "t3"]},
            "benchmark_categories": {"first": ["t1"], "rest": ["t2", "t3"]},
        },
        "source": {"repo": "x/y"},
    }
    write("bench.meta.json", json.dumps(meta))
    s = engine.open_scores(path)
    assert s["higher_is_better"].values.tolist() == [True, False, True]  # t3 unlisted: default True
    assert list(s["group"].values) == ["first", "rest", "rest"]  # benchmark_categories preferred
    assert s.attrs["name"] == "my bench" and s.attrs["paper"] == "Someone 2024"
    assert json.loads(s.attrs["source"]) == {"repo": "x/y"}
    assert s.attrs["source_file"] == str(path)
    # meta=False ignores the sidecar; a mapping or an explicit path replaces it
    plain = engine.open_scores(path, meta=False)
    assert plain["higher_is_better"].values.all() and list(plain["group"].values) == ["t1", "t2", "t3"]
    m = engine.open_scores(path, meta={"higher_is_better": {"t3": False}, "task_groups": {"g": {"G": ["t3"]}}})
    assert m["higher_is_better"].values.tolist() == [True, True, False]
    assert list(m["group"].values) == ["t1", "t2", "G"]
    other = write("elsewhere.json", json.dumps({"higher_is_better": {"t1": False}}))
    assert engine.open_scores(path, meta=other)["higher_is_better"].values.tolist() == [False, True, True]


def test_sidecar_direction_changes_the_ranking(write):
    path = write("d.csv", "system,err\na,0.1\nb,0.3\nc,0.2\n")
    up = engine.rank(engine.open_scores(path, meta=False), rule="borda")["rank"].values.tolist()
    write("d.meta.json", json.dumps({"higher_is_better": {"err": False}}))
    down = engine.rank(engine.open_scores(path), rule="borda")["rank"].values.tolist()
    assert up == [3, 1, 2] and down == [1, 3, 2]


def test_colombo_table1_through_csv_and_sidecar(write):
    """Colombo et al. 2022, Table 1 (lower is better): mean A > B > C, Borda C > B > A."""
    tasks = [f"Task{i}" for i in range(1, 7)]
    lines = ["system," + ",".join(tasks)] + [f"{s}," + ",".join(map(str, COLOMBO_T1_VALUES[s])) for s in "ABC"]
    path = write("colombo_t1.csv", "\n".join(lines) + "\n")
    write("colombo_t1.meta.json", json.dumps({"higher_is_better": {t: False for t in tasks}}))
    s = engine.open_scores(path)
    assert not s["higher_is_better"].values.any()
    mean = engine.rank(s, rule="mean")
    borda = engine.rank(s, rule="borda")
    order = lambda ds: [str(x) for x in ds["system"].values[np.argsort(ds["rank"].values, kind="stable")]]  # noqa: E731
    assert order(mean) == ["A", "B", "C"] and mean["rank"].values.tolist() == [1, 2, 3]
    assert order(borda) == ["C", "B", "A"] and borda["rank"].values.tolist() == [3, 2, 1]
    assert borda["score"].values.tolist() == [sum(3 - r for r in COLOMBO_T1_RANKS[x]) for x in "ABC"]


def test_bom_is_not_part_of_the_first_column_name(write):
    text = "system,task,instance,score\na,x,0,1\nb,x,0,2\n"
    s = engine.open_scores(write("bom.csv", b"\xef\xbb\xbf" + text.encode()))
    assert s.sizes == {"system": 2, "task": 1, "instance": 1}


# ---------------------------------------------------------------------------------------------
# bad input: VotebenchError naming the problem (one line)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,content,pattern", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_raises_votebench_error(write, name, content, pattern):
    path = write(name, content)
    with pytest.raises(engine.VotebenchError) as info:
        engine.open_scores(path)
    msg = str(info.value)
    assert "\n" not in msg and re.search(pattern, msg), msg


def test_missing_path_and_plain_directory(tmp_path):
    with pytest.raises(engine.VotebenchError, match="no such file or directory"):
        engine.open_scores(tmp_path / "nope.csv")
    (tmp_path / "folder").mkdir()
    expected = r"unknown kind of directory; expected a zarr store .*; or name the reader \(format= / --input-format: zarr, "
    with pytest.raises(engine.VotebenchError, match=expected):
        engine.open_scores(tmp_path / "folder")




@pytest.mark.parametrize("tag,content,pattern", MALFORMED_SIDECARS, ids=[m[0] for m in MALFORMED_SIDECARS])
def test_malformed_sidecar(write, tag, content, pattern):
    path = write(f"{tag}.csv", "system,t1\na,1\nb,2\n")
    write(f"{tag}.meta.json", content)
    with pytest.raises(engine.VotebenchError) as info:
        engine.open_scores(path)
    assert re.search(pattern, str(info.value)) and "\n" not in str(info.value), str(info.value)
    assert engine.open_scores(path, meta=False).sizes["system"] == 2  # the data itself is fine


def test_sidecar_path_names():
    assert sidecar_path("d/x.csv").name == "x.meta.json"
    assert sidecar_path("d/x.csv.gz").name == "x.meta.json"
    assert sidecar_path("d/x.CSV.GZ").name == "x.meta.json"
    assert sidecar_path("d/x.parquet").name == "x.meta.json"
    assert sidecar_path("d/x.zarr").name == "x.meta.json"


# ---------------------------------------------------------------------------------------------
# scores_from_array and validate_scores
# ---------------------------------------------------------------------------------------------
def test_scores_from_array_layouts_agree():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3, 2, 4))
    a = engine.scores_from_array(X)
    b = engine.scores_from_array(np.ascontiguousarray(np.moveaxis(X, 0, -1)), layout="system-last")
    np.testing.assert_array_equal(a.values, X)
    np.testing.assert_array_equal(b.values, X)
    assert a.dims == b.dims == ("system", "task", "instance")
    assert list(a["system"].values) == ["s0", "s1", "s2"] and list(a["task"].values) == ["t0", "t1"]
    two_d = engine.scores_from_array(X[:, :, 0])
    assert two_d.sizes == {"system": 3, "task": 2, "instance": 1}
    ints = engine.scores_from_array(np.array([[1, 2], [3, 4]]))
    assert ints.dtype == np.float64
    assert engine.scores_from_array(X.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        (dict(values=np.zeros((3, 2)), systems=["a", "b"]), r"2 systems labels for 3 systems"),
        (dict(values=np.zeros((3, 2)), tasks=["x", "x"]), r"duplicate task label 'x'"),
        (dict(values=np.zeros((3, 2)), systems=["a", "b", "a"]), r"duplicate system label 'a'"),
        (dict(values=np.array([["a", "b"], ["c", "d"]])), r"real numbers"),
        (dict(values=np.zeros((2, 2), dtype=complex)), r"real numbers"),
        (dict(values=np.zeros((1, 2))), r"at least two systems"),
        (dict(values=np.zeros(5)), r"shape"),
        (dict(values=np.array([[1.0, np.inf], [2.0, 3.0]])), r"not finite"),
        (dict(values=np.array([[1.0, np.nan], [2.0, np.nan]])), r"task 't1' has no scores"),
        (dict(values=np.zeros((2, 2)), layout="sideways"), r"unknown layout"),
    ],
)
def test_scores_from_array_rejects(kwargs, pattern):
    with pytest.raises(engine.VotebenchError, match=pattern):
        engine.scores_from_array(**kwargs)


def test_scores_from_array_directions_and_groups():
    s = engine.scores_from_array(
        np.zeros((2, 3)) + np.arange(2)[:, None],
        tasks=["a", "b", "c"],
        higher_is_better={"b": False},
        groups={"a": "G", "c": "G"},
        attrs={"name": "n"},
    )
    assert s["higher_is_better"].values.tolist() == [True, False, True]
    assert list(s["group"].values) == ["G", "b", "G"]
    assert s.attrs == {"name": "n"}


# ---------------------------------------------------------------------------------------------
# the shipped data
# ---------------------------------------------------------------------------------------------
#: score tables (battle records, level "battles" in their sidecar, are not score tables: tests/io/test_battles.py reads them)
SHIPPED = sorted(p for p in DATA.glob("*.csv*")
                 if json.loads(sidecar_path(p).read_text(encoding="utf-8")).get("level") != "battles")


def test_shipped_data_present():
    assert len(SHIPPED) >= 13  # data/README.md lists 13 tables
    assert all(sidecar_path(p).exists() for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_data_loads_with_sidecar_sizes(path):
    meta = json.loads(sidecar_path(path).read_text(encoding="utf-8"))
    s = engine.open_scores(path)
    assert s.sizes["system"] == meta["n_systems"]
    assert s.sizes["task"] == meta["n_tasks"]
    if "n_instances" in meta:
        assert s.sizes["instance"] == meta["n_instances"]
    else:
        assert s.sizes["instance"] == 1
    assert int(engine.missing_report(s).sum()) == meta["n_missing"]
    assert int(s.notnull().sum()) == meta["n_scores"]
    for key, dim in (("systems", "system"), ("tasks", "task")):
        if isinstance(meta.get(key), list):
            assert [str(x) for x in s[dim].values] == meta[key]
    hib = meta["higher_is_better"]
    assert {str(t): bool(h) for t, h in zip(s["task"].values, s["higher_is_better"].values)} == hib
    assert s.attrs["name"] == meta["name"]
