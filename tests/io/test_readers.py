"""The reader registry (engine/io/readers/): what open_scores, the CLI and sweep inputs derive from it, and a worked example.

The worked example is a reader for a made-up ``.scores.txt`` format, defined here and
registered with one line (:func:`scores_txt_reader`); it is then opened through
``engine.open_scores`` and ``votebench rank``.
"""

from __future__ import annotations

import gzip
import inspect
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import bf_borda_across, one_line_error, run_cli
from test_loaders import GENERIC, error_of, write_helm, write_jsonl, write_lm_eval

import engine
from engine.io.readers import (
    READERS,
    Reader,
    by_suffix,
    get_reader,
    guess_reader,
    loader_keys,
    reader_names,
    reader_options,
    register_reader,
)

# --------------------------------------------------------------------------------------------
# the worked example: a reader for a made-up ".scores.txt" format
# --------------------------------------------------------------------------------------------
#: a ``.scores.txt`` file: a ``tasks:`` line, then one line per system, its scores separated by blanks
SCORES_TXT = """\
tasks: mmlu gsm8k arc
sys-a  61 32 55
sys-b  58 41 52
sys-c  70 29 60
sys-d  58 35 -
"""
#: the same scores, read by hand: systems x tasks, '-' missing
HAND = np.array([[61, 32, 55], [58, 41, 52], [70, 29, 60], [58, 35, np.nan]], dtype=float)


def read_scores_txt(path: Path, *, unit: str = "points") -> xr.DataArray:
    """Opener of the example reader: ``unit="percent"`` divides every score by 100."""
    lines = [ln.split() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not lines or lines[0][0] != "tasks:":
        raise engine.VotebenchError(f"{path}: a .scores.txt file starts with a 'tasks:' line")
    if unit not in ("points", "percent"):
        raise engine.VotebenchError(f"{path}: unit must be 'points' or 'percent', got {unit!r}")
    values = np.array([[np.nan if v == "-" else float(v) for v in ln[1:]] for ln in lines[1:]])
    return engine.scores_from_array(values / (100.0 if unit == "percent" else 1.0), systems=[ln[0] for ln in lines[1:]],
                                     tasks=lines[0][1:])


@pytest.fixture
def scores_txt_reader():
    """The example reader, registered for the test and removed afterwards."""
    reader = register_reader(Reader("scores-txt", read_scores_txt, by_suffix(".scores.txt"), options=("unit",),
                                    description="made-up score lists (.scores.txt)"), before="csv")
    yield reader
    READERS.pop(reader.name)


def test_custom_reader_through_open_scores(tmp_path, scores_txt_reader):
    path = tmp_path / "demo.scores.txt"
    path.write_text(SCORES_TXT, encoding="utf-8")
    s = engine.open_scores(path)
    assert s.dims == ("system", "task", "instance")
    np.testing.assert_array_equal(s.values[:, :, 0], HAND)
    assert list(s["system"].values) == ["sys-a", "sys-b", "sys-c", "sys-d"]
    assert s.attrs["source_file"] == str(path)
    # its option, and the check of options against the reader's own
    np.testing.assert_allclose(engine.open_scores(path, unit="percent").values[:, :, 0], HAND / 100)
    msg = error_of(engine.open_scores, path, metric="acc")
    assert "option 'metric' applies to lm-eval and helm input only, not to scores-txt input (scores-txt takes unit)" in msg
    csv = tmp_path / "w.csv"
    csv.write_text("system,t\na,1\nb,2\n")
    msg = error_of(engine.open_scores, csv, unit="percent")
    assert "option 'unit' applies to scores-txt input only, not to csv input (csv takes no options)" in msg
    # a sidecar beside it applies as for any input
    (tmp_path / "demo.scores.txt.meta.json").write_text(json.dumps({"higher_is_better": {"gsm8k": False}}))
    assert engine.open_scores(path)["higher_is_better"].values.tolist() == [True, False, True]
    # named explicitly, any file name
    other = tmp_path / "demo.dat"
    other.write_text(SCORES_TXT, encoding="utf-8")
    np.testing.assert_array_equal(engine.open_scores(other, format="scores-txt").values[:, :, 0], HAND)


def test_without_the_custom_reader_the_csv_reader_takes_txt(tmp_path):
    """``before="csv"`` matters: the CSV reader also recognises ``.txt`` and would refuse the file."""
    path = tmp_path / "demo.scores.txt"
    path.write_text(SCORES_TXT, encoding="utf-8")
    assert guess_reader(path).name == "csv"
    assert "a wide table needs a system column and at least one task column" in error_of(engine.open_scores, path)


def test_custom_reader_through_votebench_rank(tmp_path, capsys, scores_txt_reader):
    path = tmp_path / "demo.scores.txt"
    path.write_text(SCORES_TXT, encoding="utf-8")
    code, out, err = run_cli(capsys, "rank", path, "--missing", "listwise", "--format", "json")
    assert code == 0, err
    got = {d["system"]: d["score"] for d in json.loads(out)["ranking"]}
    complete = HAND[:3]  # listwise drops sys-d (a missing score)
    assert got == dict(zip(["sys-a", "sys-b", "sys-c"], bf_borda_across(complete.T).tolist()))
    # the reader is a choice of --input-format, and its name forces it on any file name
    code, usage, _ = run_cli(capsys, "rank", "--help")
    assert code == 0 and "scores-txt" in usage
    other = tmp_path / "demo.dat"
    other.write_text(SCORES_TXT, encoding="utf-8")
    code, out2, err = run_cli(capsys, "rank", other, "--input-format", "scores-txt", "--missing", "listwise", "--format", "json")
    assert code == 0, err
    assert json.loads(out2)["ranking"] == json.loads(out)["ranking"]
    one_line_error(*run_cli(capsys, "rank", other, "--missing", "listwise"), "unknown file type", "made-up score lists")


# --------------------------------------------------------------------------------------------
# the registry itself
# --------------------------------------------------------------------------------------------
def test_declared_options_are_the_openers_keyword_parameters():
    for reader in READERS.values():
        params = inspect.signature(reader.open).parameters
        keywords = {n for n, p in params.items() if p.kind == inspect.Parameter.KEYWORD_ONLY}
        assert set(reader.options) == keywords, reader.name


def test_option_union_and_loader_keys_match_the_sweep_and_the_cli(capsys):
    from engine.app.cli import build_parser
    from engine.distributed import LOADER_KEYS

    assert reader_options() == ("metric", "filter", "split", "perturbation")
    assert set(loader_keys()) == set(LOADER_KEYS)
    parser = build_parser()
    for name in reader_names():  # every reader is a choice of --input-format ...
        assert parser.parse_args(["rank", "x.csv", "--input-format", name]).input_format == name
    with pytest.raises(SystemExit):  # ... and nothing else is
        parser.parse_args(["rank", "x.csv", "--input-format", "xlsx"])
    assert "invalid choice: 'xlsx'" in capsys.readouterr().err


def test_register_reader_refuses_bad_records():
    def opener(path):
        return None

    with pytest.raises(ValueError, match="already registered"):
        register_reader(Reader("csv", opener))
    with pytest.raises(ValueError, match="option 'meta'"):
        register_reader(Reader("x", opener, options=("meta",)))
    with pytest.raises(ValueError, match="option 'not an id'"):
        register_reader(Reader("x", opener, options=("not an id",)))
    with pytest.raises(ValueError, match="before='nope'"):
        register_reader(Reader("x", opener), before="nope")
    with pytest.raises(ValueError, match="non-empty name"):
        register_reader(Reader(" ", opener))
    with pytest.raises(ValueError, match="callables"):
        register_reader(Reader("x", "not callable"))  # type: ignore[arg-type]
    assert "x" not in READERS
    assert "unknown format 'x'; use one of zarr, lm-eval, helm" in error_of(get_reader, "x")


def test_a_reader_returning_something_else_is_refused(tmp_path):
    register_reader(Reader("broken", lambda path: [[1.0]], by_suffix(".broken")), before="zarr")
    try:
        path = tmp_path / "a.broken"
        path.write_text("x")
        assert "reader 'broken' returned list, not an xarray.DataArray" in error_of(engine.open_scores, path)
    finally:
        READERS.pop("broken")


def test_unknown_option_names_every_readers_options(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("system,t1\na,1\nb,2\n")
    msg = error_of(engine.open_scores, path, metrik="acc")
    assert "unknown option 'metrik' (csv takes no options; options of all readers: metric, filter, split, perturbation)" in msg
    assert engine.open_scores(path, metric=None).sizes["system"] == 2  # None = not given


def _inputs(tmp_path: Path) -> dict[str, Path]:
    """One input per built-in reader that guesses (name -> path)."""
    wide = pd.DataFrame({"system": ["a", "b"], "t1": [1.0, 2.0]})
    wide.to_csv(tmp_path / "w.csv", index=False)
    wide.to_parquet(tmp_path / "w.parquet")
    engine.to_zarr(engine.open_scores(tmp_path / "w.csv"), tmp_path / "w.zarr")
    return {"zarr": tmp_path / "w.zarr", "lm-eval": write_lm_eval(tmp_path / "lm", with_old=False),
            "helm": write_helm(tmp_path / "helm"), "jsonl": write_jsonl(tmp_path / "g.jsonl", GENERIC),
            "parquet": tmp_path / "w.parquet", "csv": tmp_path / "w.csv"}


def test_each_builtin_reader_recognises_its_input_and_only_it(tmp_path):
    inputs = _inputs(tmp_path)
    for name, path in inputs.items():
        assert guess_reader(path).name == name
        accepted = [r.name for r in READERS.values() if r.guess_can_open is not None and r.guess_can_open(path)]
        assert accepted == [name], (name, accepted)
        assert engine.open_scores(path, format=name).sizes["system"] >= 2
    assert [r.name for r in READERS.values() if r.guess_can_open is None] == ["wide", "long"]


def test_tsv_is_read_tab_separated(tmp_path):
    """A .tsv table gives the scores of the same table written as CSV (and gzipped)."""
    rows = [("system", "t 1", "t2"), ("a", "1.5", "2"), ("b", "0.5", "")]
    (tmp_path / "x.csv").write_text("\n".join(",".join(r) for r in rows) + "\n")
    (tmp_path / "x.tsv").write_text("\n".join("\t".join(r) for r in rows) + "\n")
    with gzip.open(tmp_path / "y.tsv.gz", "wt") as fh:
        fh.write("\n".join("\t".join(r) for r in rows) + "\n")
    ref = engine.open_scores(tmp_path / "x.csv")
    for name in ("x.tsv", "y.tsv.gz"):
        got = engine.open_scores(tmp_path / name)
        np.testing.assert_array_equal(got.values, np.array([[[1.5], [2.0]], [[0.5], [np.nan]]]))
        np.testing.assert_array_equal(got.values, ref.values)
        assert list(got["task"].values) == ["t 1", "t2"]
    long = tmp_path / "l.tsv"
    long.write_text("system\ttask\tscore\na\tx\t1\nb\tx\t2\n")
    assert engine.open_scores(long, format="long").values.ravel().tolist() == [1.0, 2.0]
    assert "are those of a long table" in error_of(engine.open_scores, long, format="wide")


def test_default_sidecar_of_a_store_is_none(tmp_path):
    inputs = _inputs(tmp_path)
    (tmp_path / "w.meta.json").write_text(json.dumps({"higher_is_better": {"t1": False}}))
    assert engine.io.readers.default_sidecar(inputs["csv"]) == tmp_path / "w.meta.json"
    assert engine.io.readers.default_sidecar(inputs["zarr"]) is None
    assert engine.open_scores(inputs["zarr"])["higher_is_better"].values.tolist() == [True]
    assert engine.open_scores(inputs["csv"])["higher_is_better"].values.tolist() == [False]
