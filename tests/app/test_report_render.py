"""Figures drawn by a second process (engine.app.render) are the same files as figures drawn inline, and a
failure there stops the report with nothing published."""

from __future__ import annotations

import filecmp
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure

from engine.app import render
from engine.app.report import build_report
from engine.kernels import costs


def _figure(n: int) -> Figure:
    fig = Figure(figsize=(4, 3), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(np.arange(n), np.arange(n) ** 0.5)
    ax.set_yticks(range(n), [f"system {i}" for i in range(n)])
    ax.set_title("a title")
    return fig


def _same_tree(a: Path, b: Path) -> None:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for f in files:
        assert filecmp.cmp(a / f, b / f, shallow=False), f


def test_a_figure_saved_by_the_worker_is_the_same_bytes_as_inline(tmp_path):
    for where, path in (("inline", "inline"), ("worker", "process")):
        (tmp_path / where).mkdir()
        with render.figure_writer(parallel=True), costs.forced("figure_save", path):
            render.save_figure(_figure(40), [(tmp_path / where / "f.png", "png"), (tmp_path / where / "f.svg", "svg")])
        assert (tmp_path / where / "f.svg").stat().st_size > 0  # written when the block ends
    _same_tree(tmp_path / "inline", tmp_path / "worker")


def test_the_cost_model_sends_only_label_heavy_figures_to_the_worker():
    many = costs.Sizes(systems=2000, judges=2, fits=1)  # 2,000 texts, 2 formats, worker not started
    few = costs.Sizes(systems=20, judges=2, fits=1)
    assert costs.choose("figure_save", many) == "process"
    assert costs.choose("figure_save", few) == "inline"
    assert costs.choose("figure_save", costs.Sizes(systems=20, judges=2, fits=0)) == "process"  # worker running


def test_an_error_in_the_worker_is_raised_when_the_block_ends(tmp_path):
    with pytest.raises(OSError):
        with render.figure_writer(parallel=True), costs.forced("figure_save", "process"):
            render.save_figure(_figure(5), [(tmp_path / "no-such-folder" / "f.png", "png")])


def test_a_report_with_its_figures_drawn_by_the_worker_equals_the_inline_one(tmp_path, monkeypatch):
    table = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    rows = ["system," + ",".join(f"t{j}" for j in range(6))]
    rows += [f"s{i}," + ",".join(f"{v:.3f}" for v in rng.normal(size=6)) for i in range(9)]
    table.write_text("\n".join(rows) + "\n")
    args = dict(rules=["borda", "mean", "copeland"], replicates=20, repeats=5)
    with costs.forced("figure_save", "inline"), costs.forced("subset_curves", "inline"):
        build_report(table, tmp_path / "inline", **args)
    monkeypatch.setattr(render, "_cores", lambda: 2)
    with costs.forced("figure_save", "process"), costs.forced("subset_curves", "process"):
        build_report(table, tmp_path / "worker", **args)
    _same_tree(tmp_path / "inline", tmp_path / "worker")


def test_a_failing_worker_leaves_no_report(tmp_path, monkeypatch):
    table = tmp_path / "t.csv"
    table.write_text("system,a,b\nx,1,2\ny,2,1\nz,0,0\n")
    monkeypatch.setattr(render, "_cores", lambda: 2)
    monkeypatch.setattr(render, "SAVE_RC", {"svg.fonttype": "no-such-type"})  # refused in the worker
    with costs.forced("figure_save", "process"), pytest.raises(ValueError, match="svg.fonttype"):
        build_report(table, tmp_path / "rep", rules=["borda"], replicates=5, repeats=2)
    assert not (tmp_path / "rep").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_work_run_aside_gives_its_result_or_its_error_where_it_is_asked_for():
    from engine.kernels.paircount import kendall_tau_b

    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 2.0, 4.0])
    shape = costs.Sizes(systems=4)
    for path in ("inline", "process"):
        with render.figure_writer(parallel=True), costs.forced("subset_curves", path):
            got = render.run_aside("subset_curves", shape, kendall_tau_b, a, b)
            bad = render.run_aside("subset_curves", shape, float, "not a number")
            assert float(got()) == pytest.approx(4 / 6)
            with pytest.raises(ValueError, match="not a number"):
                bad()


def test_the_cores_a_report_may_use_can_be_set(monkeypatch):
    monkeypatch.setenv(render.CORES_ENV, "1")
    assert render._cores() == 1
    monkeypatch.setenv(render.CORES_ENV, "3")
    assert render._cores() == 3
    monkeypatch.setenv(render.CORES_ENV, "many")
    assert render._cores() >= 1


def test_a_script_from_standard_input_draws_here(tmp_path):
    """A spawned worker re-imports the main script: one read from standard input has no file, so the figures are
    drawn in this process and the report is written (it used to fail with a broken process pool)."""
    import subprocess
    import sys

    script = ("from engine.app.report import build_report\n"
              f"build_report('data/esann_automl.csv', {str(tmp_path / 'r')!r}, rules=['borda'], replicates=0, "
              "repeats=0, paired_top_k=0, formats=('svg',))\n")
    env = {**__import__("os").environ, render.CORES_ENV: "2"}
    proc = subprocess.run([sys.executable, "-"], input=script, text=True, capture_output=True, cwd=Path(__file__).parents[2],
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "index.html").is_file()
