"""Start-up: a command loads only what it uses.

Each check runs a fresh Python process (this test process has dask and the rest
loaded already) and reads its ``sys.modules``.  The speed itself is measured by
``benchmarks/bench_startup.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
from conftest import DATA, REPO, bf_borda_across

#: modules a small in-memory ``votebench rank`` must not import
HEAVY = ("dask", "distributed", "matplotlib", "tornado", "zarr")


def _run(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (cwd: the repository); it prints one JSON object as its last line."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_small_rank_imports_no_dask_distributed_matplotlib_tornado():
    out = _run(f"""
        import contextlib, io, json, sys
        from engine.app.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = main(["rank", "data/esann_automl.csv", "--format", "json"])
        heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
        print(json.dumps({{"code": code, "ranking": json.loads(buf.getvalue()), "heavy": heavy}}))
    """)
    assert out["code"] == 0
    assert out["heavy"] == []
    # the ranking printed is task-level Borda (checked against the brute-force reference, from the CSV itself)
    lines = (DATA / "esann_automl.csv").read_text(encoding="utf-8").splitlines()
    systems = [ln.split(",")[0] for ln in lines[1:]]
    X = [[float(v) for v in ln.split(",")[1:]] for ln in lines[1:]]
    ref = bf_borda_across(np.asarray(X).T)
    got = {d["system"]: d["score"] for d in out["ranking"]["ranking"]}
    assert got == {s: float(v) for s, v in zip(systems, ref)}


def test_several_inputs_and_table_output_import_no_heavy_module():
    out = _run(f"""
        import contextlib, io, json, sys
        from engine.app.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["rank", "data/vnr_value.csv", "data/esann_statlog.csv", "--missing", "listwise"])
        print(json.dumps({{"code": code, "heavy": sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))}}))
    """)
    assert out == {"code": 0, "heavy": []}


def test_import_engine_is_lazy_and_the_public_api_resolves():
    out = _run(f"""
        import json, sys, types
        import engine
        before = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r} + ("xarray",)))
        names = ["open_scores", "scores_from_array", "to_zarr", "aggregate", "rank", "bootstrap", "summarize",
                 "RULES", "register_rule", "rule_names", "get_rule", "missing_report", "orient", "tied_groups",
                 "validate_scores", "LEVELS", "Rule", "VotebenchError"]
        kinds = {{n: type(getattr(engine, n)).__name__ for n in names}}
        import engine.labelled.bootstrap             # importing the submodule leaves the function in place
        from engine.labelled.bootstrap import pavao_criteria  # noqa: F401
        from engine.kernels import metrics
        print(json.dumps({{"before": before, "kinds": kinds, "bootstrap": type(engine.bootstrap).__name__,
                          "metrics": isinstance(metrics, types.ModuleType), "version": engine.__version__,
                          "all": sorted(engine.__all__), "dir_has_all": set(engine.__all__) <= set(dir(engine))}}))
    """)
    assert out["before"] == []  # `import engine` alone loads neither xarray nor any heavy module
    assert out["kinds"]["bootstrap"] == "function" and out["bootstrap"] == "function"
    assert out["kinds"]["RULES"] == "dict" and out["kinds"]["LEVELS"] == "tuple"
    assert all(k in ("function", "type", "dict", "tuple", "ABCMeta") for k in out["kinds"].values()), out["kinds"]
    assert out["metrics"] is True and out["dir_has_all"] is True
    assert out["version"] and out["version"][0].isdigit()


def test_unknown_attribute_of_engine_is_an_attribute_error():
    out = _run("""
        import json, engine
        try:
            engine.no_such_name
            r = "no error"
        except AttributeError as exc:
            r = str(exc)
        print(json.dumps({"r": r, "hasattr": hasattr(engine, "no_such_name")}))
    """)
    assert out == {"r": "module 'engine' has no attribute 'no_such_name'", "hasattr": False}


def test_dask_arrays_are_still_recognised_after_the_deferred_check():
    """xarray answers "not dask" while dask is not imported, and recognises dask arrays once it is."""
    out = _run("""
        import json, sys
        import numpy as np
        import engine.io.readers  # installs engine.labelled.canonical.defer_dask_import
        import xarray as xr
        from engine.labelled.canonical import defer_dask_import
        a = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("x", "y"))
        no_dask_yet = "dask" not in sys.modules
        import dask.array as da
        lazy = xr.DataArray(da.ones((4, 6), chunks=(2, 3)), dims=("x", "y"))
        out = {"installed": defer_dask_import(), "no_dask_yet": no_dask_yet, "numpy_is_numpy": type(a.data).__name__,
               "lazy_type": type(lazy.data).__module__.split(".")[0], "chunks": [list(c) for c in lazy.chunks],
               "sum": float((lazy * 2).sum().compute()), "chunked_after": (lazy + 1).chunks is not None,
               "dask_dataset": xr.Dataset({"v": lazy}).chunks == {"x": (2, 2), "y": (3, 3)}}
        print(json.dumps(out))
    """)
    assert out == {"installed": True, "no_dask_yet": True, "numpy_is_numpy": "ndarray", "lazy_type": "dask",
                   "chunks": [[2, 2], [3, 3]], "sum": 48.0, "chunked_after": True, "dask_dataset": True}


def test_zarr_store_ranked_lazily_in_a_fresh_process(tmp_path):
    """A store opened after the deferred check is still dask-backed (nothing computed before .compute())."""
    out = _run(f"""
        import json
        import engine
        s = engine.open_scores("data/colombo_tac08.csv.gz")
        eager = engine.rank(s, rule="borda", level="two")
        engine.to_zarr(s, {str(tmp_path / "t.zarr")!r}, chunks={{"task": 1, "instance": 16}})
        lazy = engine.rank(engine.open_scores({str(tmp_path / "t.zarr")!r}), rule="borda", level="two")
        is_lazy = type(lazy["score"].data).__module__.split(".")[0]
        same = bool((lazy.compute()["score"] == eager["score"]).all())
        print(json.dumps({{"lazy": is_lazy, "same": same}}))
    """)
    assert out == {"lazy": "dask", "same": True}
