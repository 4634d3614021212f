"""The kind registry names the built-in kinds lazily: a local ``bootstrap --store`` imports only the kinds and the
parts of the distributed layer it runs, and every kind still resolves by name, in registration order."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO

from engine.errors import VotebenchError
from engine.sweep.kinds import KINDS, Kind, KindTable, get_kind, register_kind


def test_bootstrap_store_imports_one_kind_and_no_cluster_code(tmp_path):
    code = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from engine.app.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc = main(["bootstrap", "data/esann_automl.csv", "--replicates", "20", "--store", {str(tmp_path / "s.zarr")!r},
                       "--no-progress"])
        print(json.dumps({{"rc": rc, "mods": sorted(m for m in sys.modules if m.startswith("engine."))}}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["rc"] == 0
    mods = set(out["mods"])
    assert "engine.sweep.kinds.bootstrap" in mods  # the kind it ran
    for unused in ("engine.sweep.kinds.grid", "engine.sweep.kinds.subsets", "engine.sweep.kinds.synthetic",
                   "engine.distributed.cluster", "engine.app.config", "engine.kernels.kemeny"):
        assert unused not in mods, unused
    assert (tmp_path / "s.zarr").is_dir()


def test_builtin_kinds_resolve_by_name_in_registration_order():
    names = list(KINDS)
    assert names[:5] == ["bootstrap", "subsets", "grid", "manipulation", "rescaling"]
    for name in names[:5]:
        kind = KINDS[name]
        assert isinstance(kind, Kind) and kind.name == name and get_kind(name) is kind
    assert len(KINDS) == len(names) and "bootstrap" in KINDS and "no-such-kind" not in KINDS


def test_table_imports_on_first_lookup_and_checks_the_record():
    table = KindTable()
    table.add_builtin("bootstrap", "engine.sweep.kinds.bootstrap", "BOOTSTRAP")
    assert table.loaded("bootstrap") is None  # named, not imported
    assert "bootstrap" in table and len(table) == 1  # and registered all the same
    kind = table["bootstrap"]
    assert table.loaded("bootstrap") is kind and kind.name == "bootstrap"
    table.add_builtin("grid", "engine.sweep.kinds.bootstrap", "BOOTSTRAP")  # a record under another name
    with pytest.raises(TypeError, match="grid"):
        table["grid"]
    del table["grid"]
    fresh = KindTable()
    fresh.add_builtin("bootstrap", "engine.sweep.kinds.bootstrap", "BOOTSTRAP")
    fresh["bootstrap"] = table["bootstrap"]  # the record it names, registered again before any lookup
    assert fresh.loaded("bootstrap") is kind
    assert list(table) == ["bootstrap"]
    with pytest.raises(KeyError):
        table["grid"]


def test_registering_over_a_lazy_builtin_is_refused_unless_replace():
    builtin = KINDS["subsets"]
    other = Kind(name="subsets", keys=builtin.keys, validate=builtin.validate, plan=builtin.plan,
                 run_block=builtin.run_block)
    with pytest.raises(VotebenchError, match="registered already"):
        register_kind(other)
    assert register_kind(builtin) is builtin  # the same record again is no conflict
    try:
        assert register_kind(other, replace=True) is other and get_kind("subsets") is other
    finally:
        register_kind(builtin, replace=True)


def test_naming_a_builtin_again_keeps_the_record_registered_under_that_name():
    table = KindTable()
    mine = KINDS["grid"]
    table["grid"] = mine
    table.add_builtin("grid", "engine.sweep.kinds.bootstrap", "BOOTSTRAP")  # e.g. the table of built-ins run again
    assert table["grid"] is mine
