"""engine.io.store: zarr round trip, chunking rules, overwrite protection, atomic writes."""

from __future__ import annotations

import dask.array as dsa
import numpy as np
import pytest
import xarray as xr
from conftest import continuous_case, tie_case

import engine
from engine.io.store import default_chunks, open_store

LABELS = dict(
    systems=["Team A, v2", 'He said "hi"', "ç-model", "m4", "m5"],
    tasks=["acc, macro", "H:pyr", "t 3"],
    instances=[10, 11, 12, 13, 14, 15],
)


def _scores(**extra):
    case = continuous_case(7, shape=(5, 3, 6), ragged=True)
    return engine.scores_from_array(
        case.values,
        higher_is_better=[True, False, True],
        groups=["g1", "g1", "g2"],
        attrs={"name": "bench", "paper": "X 2024", "nested": {"a": [1, 2]}, "count": 3},
        **LABELS,
        **extra,
    )


def _leftovers(folder, name):
    return [p.name for p in folder.iterdir() if p.name.startswith(f".{name}")]


def test_round_trip_labels_directions_groups_attrs(tmp_path):
    s = _scores()
    out = engine.to_zarr(s, tmp_path / "s.zarr", chunks={"task": 2, "instance": 4})
    assert out == tmp_path / "s.zarr" and out.is_dir()
    z = engine.open_scores(out)
    assert isinstance(z.data, dsa.Array)
    assert z.dims == ("system", "task", "instance") and z.name == "scores" and z.dtype == s.dtype
    np.testing.assert_array_equal(z.values, s.values)
    assert z["system"].values.tolist() == LABELS["systems"]
    assert z["task"].values.tolist() == LABELS["tasks"]
    assert z["instance"].values.tolist() == LABELS["instances"]
    assert z["higher_is_better"].values.tolist() == [True, False, True]
    assert z["group"].values.tolist() == ["g1", "g1", "g2"]
    assert z["n_instances"].values.tolist() == s["n_instances"].values.tolist()
    for key in ("name", "paper", "nested", "count"):
        assert z.attrs[key] == s.attrs[key]
    # the small coordinates are loaded (numpy), so nothing has to compute to read them
    for c in ("higher_is_better", "group", "n_instances"):
        assert isinstance(z[c].data, np.ndarray), c
    # chunks as requested; the system axis is one chunk
    assert z.chunks[0] == (5,)
    assert z.chunks[1] == (2, 1) and z.chunks[2] == (4, 2)


def test_round_trip_float32_and_missing_cells(tmp_path):
    case = tie_case(8, shape=(4, 2, 5), holes=0.2)
    s = case.scores().astype(np.float32)
    s.attrs = {}
    engine.to_zarr(s, tmp_path / "f.zarr")
    z = engine.open_scores(tmp_path / "f.zarr")
    assert z.dtype == np.float32
    np.testing.assert_array_equal(z.values, s.values)
    xr.testing.assert_equal(engine.missing_report(z), engine.missing_report(s))


def test_round_trip_of_dask_backed_input(tmp_path):
    s = _scores()
    engine.to_zarr(s.chunk({"task": 1}), tmp_path / "a.zarr", chunks={"instance": 3})
    engine.to_zarr(engine.open_scores(tmp_path / "a.zarr"), tmp_path / "b.zarr", chunks={"task": 3, "instance": 6})
    b = engine.open_scores(tmp_path / "b.zarr")
    np.testing.assert_array_equal(b.values, s.values)
    assert b.chunks[1] == (3,) and b.chunks[2] == (6,)


def test_non_json_attrs_are_stored_as_text(tmp_path):
    s = _scores()
    s.attrs["obj"] = object()
    s.attrs["arr"] = np.arange(3)
    engine.to_zarr(s, tmp_path / "s.zarr")
    z = engine.open_scores(tmp_path / "s.zarr")
    assert isinstance(z.attrs["obj"], str) and isinstance(z.attrs["arr"], str)
    assert z.attrs["name"] == "bench"


@pytest.mark.parametrize("chunks", [{"system": 2}, {"system": 1, "task": 1}])
def test_refuses_to_chunk_the_system_axis(tmp_path, chunks):
    with pytest.raises(engine.VotebenchError, match="system dimension is never chunked"):
        engine.to_zarr(_scores(), tmp_path / "s.zarr", chunks=chunks)
    assert not (tmp_path / "s.zarr").exists() and not _leftovers(tmp_path, "s.zarr")


@pytest.mark.parametrize("chunks", [{"system": -1, "task": 1}, {"system": 5}])
def test_whole_system_axis_chunk_is_accepted(tmp_path, chunks):
    engine.to_zarr(_scores(), tmp_path / "s.zarr", chunks=chunks)
    assert engine.open_scores(tmp_path / "s.zarr").chunks[0] == (5,)


@pytest.mark.parametrize(
    "chunks,pattern",
    [({"judge": 2}, "unknown chunk dimension"), ({"task": 0}, "positive"), ({"instance": -3}, "positive")],
)
def test_rejects_bad_chunk_specs(tmp_path, chunks, pattern):
    with pytest.raises(engine.VotebenchError, match=pattern):
        engine.to_zarr(_scores(), tmp_path / "s.zarr", chunks=chunks)
    assert not (tmp_path / "s.zarr").exists()


def test_refuses_to_overwrite_unless_asked(tmp_path):
    first = _scores()
    engine.to_zarr(first, tmp_path / "s.zarr")
    second = first.copy(data=first.values + 1.0)
    with pytest.raises(engine.VotebenchError, match="already exists.*overwrite=True"):
        engine.to_zarr(second, tmp_path / "s.zarr")
    np.testing.assert_array_equal(engine.open_scores(tmp_path / "s.zarr").values, first.values)
    engine.to_zarr(second, tmp_path / "s.zarr", overwrite=True)
    np.testing.assert_array_equal(engine.open_scores(tmp_path / "s.zarr").values, second.values)
    assert not _leftovers(tmp_path, "s.zarr")


def test_refuses_to_overwrite_a_plain_file(tmp_path):
    (tmp_path / "s.zarr").write_text("precious")
    with pytest.raises(engine.VotebenchError, match="already exists"):
        engine.to_zarr(_scores(), tmp_path / "s.zarr")
    assert (tmp_path / "s.zarr").read_text() == "precious"


def _failing(scores):
    """Dask-backed copy whose blocks raise when computed (a write that fails midway)."""

    def boom(block):
        raise OSError("disk on fire")

    data = dsa.from_array(scores.values, chunks=(-1, 1, -1)).map_blocks(boom, dtype=scores.dtype)
    return scores.copy(data=data)


def test_failed_write_leaves_no_directory(tmp_path):
    s = _scores()
    with pytest.raises(OSError, match="disk on fire"):
        engine.to_zarr(_failing(s), tmp_path / "s.zarr", chunks={"task": 1})
    assert not (tmp_path / "s.zarr").exists()
    assert list(tmp_path.iterdir()) == []


def test_failed_overwrite_keeps_the_old_store(tmp_path):
    s = _scores()
    engine.to_zarr(s, tmp_path / "s.zarr")
    with pytest.raises(OSError, match="disk on fire"):
        engine.to_zarr(_failing(s), tmp_path / "s.zarr", overwrite=True)
    np.testing.assert_array_equal(engine.open_scores(tmp_path / "s.zarr").values, s.values)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]


def test_invalid_scores_are_refused_before_writing(tmp_path):
    bad = xr.DataArray(np.zeros((2, 2)), dims=("system", "task"))
    with pytest.raises(engine.VotebenchError, match="dims"):
        engine.to_zarr(bad, tmp_path / "s.zarr")
    assert list(tmp_path.iterdir()) == []


def test_writes_into_a_new_parent_folder(tmp_path):
    engine.to_zarr(_scores(), tmp_path / "a" / "b" / "s.zarr")
    assert engine.open_scores(tmp_path / "a" / "b" / "s.zarr").sizes["system"] == 5


def test_open_rejects_broken_stores(tmp_path):
    other = xr.Dataset({"values": (("x",), np.arange(3.0))})
    other.to_zarr(tmp_path / "other.zarr", zarr_format=3, consolidated=False)
    with pytest.raises(engine.VotebenchError, match="no 'scores' array"):
        engine.open_scores(tmp_path / "other.zarr")
    broken = tmp_path / "broken.zarr"
    broken.mkdir()
    (broken / "zarr.json").write_text("{ this is not json")
    with pytest.raises(engine.VotebenchError, match="not a readable zarr store"):
        open_store(broken)
    with pytest.raises(engine.VotebenchError, match="not a readable zarr store"):
        engine.open_scores(broken)


def test_default_chunks_keep_systems_whole_and_bounded():
    for shape in [(5, 3, 6), (62, 15, 48), (4, 2, 3_000_000)]:
        sizes = dict(zip(("system", "task", "instance"), shape))
        fake = xr.DataArray(dsa.zeros(shape, chunks=-1), dims=("system", "task", "instance"))
        ch = default_chunks(fake)
        assert set(ch) == {"task", "instance"}
        assert 1 <= ch["task"] and 1 <= ch["instance"] <= sizes["instance"]
        cells = sizes["system"] * min(ch["task"], sizes["task"]) * ch["instance"]
        assert cells <= max(1 << 22, sizes["system"])
