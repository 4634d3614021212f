"""Sweeps (engine.sweep): config validation, results against the engine's own functions, resumable zarr stores, CLI.

Every ``run_sweep`` that has blocks to compute starts an in-process dask
``Client`` (about a second), so the expensive runs are module fixtures shared
by several tests; ``max_blocks=0`` creates a store (skeletons and provenance)
without starting one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
import yaml
from conftest import DATA, SWEEP_HEAD, bf_aggregate, load_all, one_line_error, parse_sweep_summary, run_cli, write_sweep

import engine
from engine.errors import VotebenchError
from engine.kernels.resample import resample_indices
from engine.labelled.bootstrap import replicate_scores_reference
from engine.labelled.robustness import task_subset_curve
from engine.sweep import load_config, open_results, parse_config, plan_sweep, run_sweep

AUTOML = DATA / "esann_automl.csv"  # 17 systems x 30 tasks, complete, higher is better
TAC08 = DATA / "colombo_tac08.csv.gz"  # 62 systems x 15 tasks x 48 instances
PROM = {"preference": "linear_indifference", "q": 0.01, "p": 0.2}

TOML_SWEEP = SWEEP_HEAD + """
[[perturbations]]
kind = "bootstrap"
over = "tasks"
replicates = 7
block = 3

[[perturbations]]
kind = "bootstrap"
over = "systems"
replicates = 5
block = 2

[[perturbations]]
kind = "subsets"
sizes = [2, 5]
repeats = 5
block = 2

[[perturbations]]
kind = "grid"
rule = "promethee2"
params = {{ q = [0.0, 0.05], p = [0.1, 0.3] }}

[[perturbations]]
kind = "grid"
name = "gap"
rule = "optimality_gap"
params = {{ gamma = [0.8, 0.9] }}
"""
#: blocks of TOML_SWEEP: 2 rules x 3 blocks (tasks) + 2 x 3 (systems) + 2 rules x 2 sizes x 3 (subsets) + 4 + 2 grid points
TOML_BLOCKS = 6 + 6 + 12 + 4 + 2

YAML_SWEEP = """\
seed: 5
store: {store}
inputs:
  - path: {path}
  - {{path: {path}, name: tac08_task, level: task}}
rules:
  - borda
  - {{name: borda, label: borda-one, level: one}}
  - mean
perturbations:
  - {{kind: bootstrap, over: instances, replicates: 4, block: 2}}
  - {{kind: subsets, sizes: [2, 7], repeats: 3, block: 2}}
  - {{kind: grid, rule: optimality_gap, params: {{gamma: [0.3, 0.5]}}}}
"""


def block_key(blk):
    return (blk.group, blk.var, blk.done_index)


cli = run_cli


def assert_one_line_error(code, out, err, *fragments):
    one_line_error(code, out, err, *fragments, prefix="votebench: error: ")


# ---------------------------------------------------------------------------------------------
# module fixtures: the expensive runs
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def automl():
    return engine.open_scores(AUTOML)


@pytest.fixture(scope="module")
def tac08():
    return engine.open_scores(TAC08)


@pytest.fixture(scope="module")
def toml_full(tmp_path_factory):
    """The TOML sweep run once, uninterrupted."""
    d = tmp_path_factory.mktemp("full")
    cfg = load_config(write_sweep(d, "sweep.toml", TOML_SWEEP, store=d / "full.zarr", path=AUTOML))
    seen = []
    path = run_sweep(cfg, progress=False, on_block=seen.append)
    return cfg, path, load_all(path), seen


@pytest.fixture(scope="module")
def toml_resumed(tmp_path_factory):
    """The TOML sweep in another directory: cut short by max_blocks, then by an exception, then resumed."""
    d = tmp_path_factory.mktemp("resumed")
    cfg = load_config(write_sweep(d, "sweep.toml", TOML_SWEEP, store=d / "resumed.zarr", path=AUTOML))
    first, second, third = [], [], []
    path = run_sweep(cfg, progress=False, max_blocks=5, on_block=first.append)
    after_first = load_all(path)

    class Stop(Exception):
        pass

    def stop_after_three(blk):
        second.append(blk)
        if len(second) == 3:
            raise Stop

    with pytest.raises(Stop):
        run_sweep(cfg, progress=False, on_block=stop_after_three)
    # a block interrupted between its data write and its `done` flag: garbage in the region, flag unset
    import zarr

    root = zarr.open_group(str(path), mode="r+")
    done = np.asarray(root["esann_automl/subsets/done"][...])
    pending = np.argwhere(~done)
    assert pending.size, "the interrupted sweep left no subsets block pending"
    r, s, b = pending[-1]
    block = int(root["esann_automl/subsets"].attrs["block"])
    root["esann_automl/subsets/tau"][r, s, b * block : (b + 1) * block] = 12345.0
    path2 = run_sweep(cfg, progress=False, on_block=third.append)
    assert path2 == path
    fourth = []
    run_sweep(cfg, progress=False, on_block=fourth.append)
    return cfg, path, load_all(path), after_first, (first, second, third, fourth), (int(r), int(s), int(b))


@pytest.fixture(scope="module")
def yaml_full(tmp_path_factory):
    d = tmp_path_factory.mktemp("yaml")
    cfg = load_config(write_sweep(d, "sweep.yaml", YAML_SWEEP, store=d / "tac.zarr", path=TAC08))
    path = run_sweep(cfg, progress=False)
    return cfg, path, load_all(path)


# ---------------------------------------------------------------------------------------------
# results equal the engine's own functions
# ---------------------------------------------------------------------------------------------
def test_toml_groups_and_layout(toml_full):
    cfg, _, res, seen = toml_full
    assert sorted(res) == ["esann_automl/bootstrap-systems", "esann_automl/bootstrap-tasks", "esann_automl/gap",
                           "esann_automl/grid-promethee2", "esann_automl/subsets"]
    assert len(seen) == TOML_BLOCKS and len({block_key(b) for b in seen}) == TOML_BLOCKS
    for name, ds in res.items():
        assert ds["done"].values.all(), name
    boot = res["esann_automl/bootstrap-tasks"]
    assert boot["replicate_score"].dims == ("rule", "replicate", "system")
    assert list(boot["rule"].values) == ["borda", "prom-lin"]
    assert list(boot["replicate"].values) == list(range(7))
    assert boot["done"].shape == (2, 3)  # ceil(7 / 3) blocks per rule
    assert (boot.attrs["kind"], boot.attrs["over"], boot.attrs["replicates"], boot.attrs["block"]) == ("bootstrap", "tasks", 7, 3)
    sub = res["esann_automl/subsets"]
    assert sub["tau"].dims == ("rule", "subset_size", "replicate") and list(sub["subset_size"].values) == [2, 5]
    assert not np.isnan(sub["tau"].values).any()


@pytest.mark.parametrize("over,n", [("tasks", 7), ("systems", 5)])
def test_toml_bootstrap_equals_engine_bootstrap(toml_full, automl, over, n):
    _, _, res, _ = toml_full
    ds = res[f"esann_automl/bootstrap-{over}"]
    assert list(ds["system"].values) == [str(s) for s in automl["system"].values]
    for i, (rule, options) in enumerate([("borda", {}), ("promethee2", PROM)]):
        ref = engine.bootstrap(automl, rule=rule, over=over, replicates=n, seed=3, options=options)
        np.testing.assert_array_equal(ds["replicate_score"].values[i], ref["replicate_score"].values)
        np.testing.assert_array_equal(ds["score"].values[i], ref["score"].values)
        np.testing.assert_array_equal(ds["rank"].values[i], ref["rank"].values)
    if over == "systems":  # a system never drawn has no score in that replicate
        assert np.isnan(ds["replicate_score"].values).any()


def test_toml_task_bootstrap_against_plain_loops(toml_full, automl):
    """Borda replicates from the drawn task indices, aggregated by the brute-force reference."""
    _, _, res, _ = toml_full
    got = res["esann_automl/bootstrap-tasks"]["replicate_score"].values[0]
    values = np.asarray(automl.transpose("system", "task", "instance").values)
    hib = [bool(v) for v in automl["higher_is_better"].values]
    for b in range(7):
        idx = resample_indices(values.shape[1], seed=3, replicates=[b], stream="tasks")[0]
        want = bf_aggregate(values[:, idx], [hib[t] for t in idx], rule="borda", level="task")
        np.testing.assert_allclose(got[b], want, rtol=0, atol=1e-9)


def test_toml_subsets_equal_task_subset_curve(toml_full, automl):
    _, _, res, _ = toml_full
    tau = res["esann_automl/subsets"]["tau"].values
    ref = task_subset_curve(automl, rules=["borda"], sizes=[2, 5], repeats=5, seed=3)
    np.testing.assert_array_equal(tau[0], ref["tau"].values[0])
    ref = task_subset_curve(automl, rules=["promethee2"], sizes=[2, 5], repeats=5, seed=3, options=PROM)
    np.testing.assert_array_equal(tau[1], ref["tau"].values[0])


def test_toml_grid_points_equal_rank(toml_full, automl):
    _, _, res, _ = toml_full
    grid = res["esann_automl/grid-promethee2"]
    # sorted parameter names, then the product of their values; the rule's own options are kept under the grid's
    points = [{"p": p, "q": q} for p in (0.1, 0.3) for q in (0.0, 0.05)]
    assert list(grid["point"].values) == [json.dumps(pt, sort_keys=True) for pt in points]
    for i, pt in enumerate(points):
        ref = engine.rank(automl, rule="promethee2", options={**PROM, **pt})
        np.testing.assert_array_equal(grid["score"].values[i], ref["score"].values)
        np.testing.assert_array_equal(grid["rank"].values[i], ref["rank"].values)
    usual = engine.rank(automl, rule="promethee2", options={"p": 0.1, "q": 0.0})["score"].values
    assert not np.array_equal(grid["score"].values[0], usual)  # the preference of rule 'prom-lin' was applied
    gap = res["esann_automl/gap"]
    assert gap.attrs["rule"] == "optimality_gap" and json.loads(gap.attrs["params"]) == {"gamma": [0.8, 0.9]}
    for i, gamma in enumerate((0.8, 0.9)):
        ref = engine.rank(automl, rule="optimality_gap", options={"gamma": gamma})
        np.testing.assert_array_equal(gap["score"].values[i], ref["score"].values)
        np.testing.assert_array_equal(gap["rank"].values[i], ref["rank"].values)


YAML_RULES = {"borda": ("borda", {}), "borda-one": ("borda", {"level": "one"}), "mean": ("mean", {})}


@pytest.mark.parametrize("name,input_level", [("colombo_tac08", {}), ("tac08_task", {"level": "task"})])
def test_yaml_instance_sweep_equals_engine(yaml_full, tac08, name, input_level):
    _, _, res = yaml_full
    assert sorted(res) == sorted(f"{n}/{p}" for n in ("colombo_tac08", "tac08_task")
                                 for p in ("bootstrap-instances", "subsets", "grid-optimality_gap"))
    boot, sub, grid = (res[f"{name}/{p}"] for p in ("bootstrap-instances", "subsets", "grid-optimality_gap"))
    assert list(boot["rule"].values) == list(YAML_RULES)
    for i, (rule, rule_level) in enumerate(YAML_RULES.values()):
        kw = {**input_level, **rule_level}  # a rule's level wins over the input's
        ref = engine.bootstrap(tac08, rule=rule, over="instances", replicates=4, seed=5, **kw)
        np.testing.assert_array_equal(boot["replicate_score"].values[i], ref["replicate_score"].values)
        np.testing.assert_array_equal(boot["score"].values[i], ref["score"].values)
        curve = task_subset_curve(tac08, rules=[rule], sizes=[2, 7], repeats=3, seed=5, **kw)
        np.testing.assert_array_equal(sub["tau"].values[i], curve["tau"].values[0])
    # level one differs from level two on these data, so the rule's level did reach the computation
    assert not np.array_equal(boot["replicate_score"].values[0], boot["replicate_score"].values[1])
    for i, gamma in enumerate((0.3, 0.5)):
        ref = engine.rank(tac08, rule="optimality_gap", options={"gamma": gamma}, **input_level)
        np.testing.assert_array_equal(grid["score"].values[i], ref["score"].values)


def test_instance_sweep_with_a_one_replicate_block(tmp_path, tac08):
    cfg = parse_config({"seed": 5, "store": str(tmp_path / "d.zarr"), "input": str(TAC08), "rules": ["dowdall"],
                        "perturbations": [{"kind": "bootstrap", "over": "instances", "replicates": 3, "block": 1}]})
    path = run_sweep(cfg, progress=False)
    got = open_results(path, "colombo_tac08/bootstrap-instances")["replicate_score"].values[0]
    want = replicate_scores_reference(tac08, rule="dowdall", over="instances", replicates=3, seed=5)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# resumability
# ---------------------------------------------------------------------------------------------
def test_interrupted_then_resumed_equals_uninterrupted(toml_full, toml_resumed):
    _, _, full, _ = toml_full
    _, _, resumed, _, _, _ = toml_resumed
    assert sorted(resumed) == sorted(full)
    for g in full:
        a, b = full[g], resumed[g]
        assert sorted(a.variables) == sorted(b.variables), g
        for v in a.variables:
            np.testing.assert_array_equal(b[v].values, a[v].values, err_msg=f"{g}/{v}")
            assert b[v].dims == a[v].dims
        assert b["done"].values.all(), g
        xr.testing.assert_identical(b.drop_attrs(), a.drop_attrs())


def test_resume_computes_only_the_missing_blocks(toml_resumed):
    cfg, _, _, after_first, (first, second, third, fourth), (r, s, b) = toml_resumed
    _, blocks, _ = plan_sweep(cfg)
    everything = {block_key(blk) for blk in blocks}
    assert len(everything) == len(blocks) == TOML_BLOCKS
    k1, k2, k3 = ({block_key(blk) for blk in run} for run in (first, second, third))
    assert len(first) == len(k1) == 5 and len(second) == len(k2) == 3 and len(third) == len(k3)
    assert k1 == {block_key(blk) for blk in blocks[:5]}  # max_blocks takes the first pending blocks of the plan
    assert not (k1 & k2) and not (k1 & k3) and not (k2 & k3)
    assert k1 | k2 | k3 == everything
    assert len(third) == TOML_BLOCKS - 8
    assert ("esann_automl/subsets", "tau", (r, s, b)) in k3  # the half-written block was recomputed
    assert fourth == []  # a complete store computes nothing
    n_done = sum(int(ds["done"].values.sum()) for ds in after_first.values())
    assert n_done == 5


def test_half_written_block_is_overwritten(toml_full, toml_resumed):
    _, _, full, _ = toml_full
    _, _, resumed, _, _, (r, s, _) = toml_resumed
    tau = resumed["esann_automl/subsets"]["tau"].values
    assert not (tau == 12345.0).any()
    np.testing.assert_array_equal(tau[r, s], full["esann_automl/subsets"]["tau"].values[r, s])


def test_same_sweep_as_yaml_reuses_the_store(toml_full, tmp_path):
    cfg, path, _, _ = toml_full
    y = tmp_path / "same.yaml"
    y.write_text(yaml.safe_dump(cfg.raw), encoding="utf-8")
    seen = []
    assert run_sweep(load_config(y), progress=False, on_block=seen.append) == path
    assert seen == []


# ---------------------------------------------------------------------------------------------
# provenance, config changes, --overwrite
# ---------------------------------------------------------------------------------------------
def small_raw(store, **changes):
    raw = {"seed": 1, "store": str(store), "input": {"path": str(AUTOML)}, "rules": ["borda"],
           "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 4, "block": 2}]}
    raw.update(changes)
    return raw


def test_provenance_attributes(toml_full):
    cfg, path, res, _ = toml_full
    import zarr

    attrs = dict(zarr.open_group(str(path), mode="r").attrs)
    assert attrs["engine_version"] == engine.__version__
    assert attrs["seed"] == 3
    assert json.loads(attrs["config"]) == json.loads(json.dumps(cfg.raw, default=str))
    assert json.loads(attrs["config"])["perturbations"][0] == {"kind": "bootstrap", "over": "tasks", "replicates": 7,
                                                               "block": 3}
    assert json.loads(attrs["inputs"]) == {"esann_automl": hashlib.sha256(AUTOML.read_bytes()).hexdigest()}
    for ds in res.values():  # every group carries the root provenance
        for key in ("engine_version", "config", "seed", "inputs"):
            assert ds.attrs[key] == attrs[key]


def test_store_created_without_blocks_and_reopened(tmp_path):
    store = tmp_path / "s.zarr"
    cfg = parse_config(small_raw(store))
    assert run_sweep(cfg, progress=False, max_blocks=0) == store
    ds = open_results(store, "esann_automl/bootstrap-tasks")
    assert not ds["done"].values.any() and np.isnan(ds["replicate_score"].values).all()
    assert ds.attrs["seed"] == 1
    with pytest.raises(VotebenchError, match="no group 'nope'"):
        open_results(store, "nope")
    with pytest.raises(VotebenchError, match="no such results store"):
        open_results(tmp_path / "absent.zarr")


@pytest.mark.parametrize(
    "changes",
    [
        {"seed": 2},
        {"rules": ["borda", "mean"]},
        {"perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 5, "block": 2}]},
    ],
    ids=["seed", "rules", "replicates"],
)
def test_store_of_another_config_is_refused(tmp_path, changes):
    store = tmp_path / "s.zarr"
    run_sweep(parse_config(small_raw(store)), progress=False, max_blocks=0)
    with pytest.raises(VotebenchError, match=r"different sweep \(config differs\).*--overwrite") as info:
        run_sweep(parse_config(small_raw(store, **changes)), progress=False, max_blocks=0)
    assert "\n" not in str(info.value) and str(store) in str(info.value)


def test_store_of_other_input_contents_is_refused(tmp_path):
    data = tmp_path / "scores.csv"
    shutil.copy(AUTOML, data)
    store = tmp_path / "s.zarr"
    raw = small_raw(store, input={"path": str(data)})
    run_sweep(parse_config(raw), progress=False, max_blocks=0)
    data.write_text(data.read_text().replace("alg_00,0.467", "alg_00,0.468"), encoding="utf-8")
    with pytest.raises(VotebenchError, match=r"\(inputs differs\)"):
        run_sweep(parse_config(raw), progress=False, max_blocks=0)


def test_overwrite_starts_fresh(tmp_path):
    store = tmp_path / "s.zarr"
    cfg = parse_config(small_raw(store))
    run_sweep(cfg, progress=False, max_blocks=1)
    assert int(open_results(store, "esann_automl/bootstrap-tasks")["done"].values.sum()) == 1
    run_sweep(cfg, progress=False, max_blocks=0, overwrite=True)
    ds = open_results(store, "esann_automl/bootstrap-tasks")
    assert not ds["done"].values.any() and np.isnan(ds["replicate_score"].values).all()
    other = parse_config(small_raw(store, seed=9, perturbations=[{"kind": "subsets", "sizes": [3], "repeats": 2}]))
    run_sweep(other, progress=False, max_blocks=0, overwrite=True)
    res = open_results(store)
    assert sorted(res) == ["esann_automl/subsets"]
    assert res["esann_automl/subsets"].attrs["seed"] == 9


@pytest.mark.parametrize("kind", ["directory", "empty-directory", "file"])
def test_existing_path_that_is_not_a_store_is_refused(tmp_path, kind):
    store = tmp_path / "thing"
    if kind == "file":
        store.write_text("x", encoding="utf-8")
    else:
        store.mkdir()
        if kind == "directory":
            (store / "keep.txt").write_text("x", encoding="utf-8")
    with pytest.raises(VotebenchError, match="is not a votebench results store"):
        run_sweep(parse_config(small_raw(store)), progress=False, max_blocks=0)
    assert kind != "directory" or (store / "keep.txt").exists()


def test_overwrite_does_not_delete_a_directory_that_is_not_a_store(tmp_path):
    store = tmp_path / "mydata"
    store.mkdir()
    (store / "precious.csv").write_text("a,b\n", encoding="utf-8")
    try:
        run_sweep(parse_config(small_raw(store)), progress=False, max_blocks=0, overwrite=True)
    except VotebenchError:
        pass
    assert (store / "precious.csv").exists()


def test_overwrite_of_a_file_is_a_votebench_error(tmp_path):
    store = tmp_path / "results.zarr"
    store.write_text("x", encoding="utf-8")
    with pytest.raises(VotebenchError):
        run_sweep(parse_config(small_raw(store)), progress=False, max_blocks=0, overwrite=True)


def test_relative_store_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    here = tmp_path / "project"
    here.mkdir()
    cfg_path = here / "sweep.toml"
    cfg_path.write_text(f'store = "out.zarr"\ninput = "{AUTOML}"\n[[perturbations]]\nkind = "bootstrap"\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = run_sweep(load_config(cfg_path), progress=False, max_blocks=0)
    assert path == elsewhere / "out.zarr"  # like any CLI output path: relative to the working directory


# ---------------------------------------------------------------------------------------------
# config errors
# ---------------------------------------------------------------------------------------------
GOOD = {"store": "x.zarr", "input": "data/esann_automl.csv", "perturbations": [{"kind": "bootstrap"}]}
BAD_CONFIGS = [
    ({"inptu": "x.csv"}, "unknown key(s) inptu"),
    ({"input": {"path": "x.csv", "sep": ";"}}, "input 1: unknown key(s) sep"),
    ({"input": {"level": "one"}}, "input 1: missing 'path'"),
    ({"input": None}, "no input"),
    ({"inputs": ["a.csv"]}, "either 'input' or 'inputs'"),
    ({"input": None, "inputs": [{"path": "a/x.csv"}, {"path": "b/x.csv"}]}, "input names must be unique"),
    ({"rules": [{"name": "borda", "weight": 2}]}, "rule 1: unknown key(s) weight"),
    ({"rules": [{"label": "b"}]}, "rule 1: missing 'name'"),
    ({"rules": ["bordaa"]}, "unknown rule 'bordaa'"),
    ({"rules": ["borda", "borda"]}, "rule labels must be unique"),
    ({"rules": [{"name": "mean", "label": "x"}, {"name": "borda", "label": "x"}]}, "rule labels must be unique"),
    ({"perturbations": [{"kind": "jackknife"}]}, "unknown kind 'jackknife'"),
    ({"perturbations": [{"over": "tasks"}]}, "unknown kind None"),
    ({"perturbations": [{"kind": "bootstrap", "sizes": [2]}]}, "perturbation 1 (bootstrap): unknown key(s) sizes"),
    ({"perturbations": [{"kind": "bootstrap", "over": "rows"}]}, "unknown axis 'rows'"),
    ({"perturbations": [{"kind": "bootstrap", "replicates": 0}]}, "replicates must be a positive integer"),
    ({"perturbations": [{"kind": "bootstrap", "replicates": -3}]}, "replicates must be a positive integer"),
    ({"perturbations": [{"kind": "bootstrap", "replicates": 2.5}]}, "replicates must be a positive integer"),
    ({"perturbations": [{"kind": "bootstrap", "replicates": True}]}, "replicates must be a positive integer"),
    ({"perturbations": [{"kind": "bootstrap", "block": 0}]}, "block must be a positive integer"),
    ({"perturbations": [{"kind": "subsets", "repeats": 0}]}, "repeats must be a positive integer"),
    ({"perturbations": [{"kind": "subsets", "sizes": [0, 2]}]}, "sizes must be a list of positive integers"),
    ({"perturbations": [{"kind": "subsets", "sizes": 3}]}, "sizes must be a list of positive integers"),
    ({"perturbations": [{"kind": "grid", "rule": "optimality_gap"}]}, "(grid): needs rule"),
    ({"perturbations": [{"kind": "grid", "rule": "optimality_gap", "params": {"gamma": []}}]}, "params.gamma must be"),
    ({"perturbations": [{"kind": "grid", "rule": "gapp", "params": {"gamma": [1]}}]}, "unknown rule 'gapp'"),
    ({"perturbations": [{"kind": "bootstrap"}, {"kind": "bootstrap", "replicates": 9}]}, "perturbation names must be unique"),
    ({"perturbations": []}, "no perturbations"),
    ({"seed": -1}, "seed must be a non-negative integer"),
    ({"seed": "1"}, "seed must be a non-negative integer"),
    ({"store": None}, "no output store"),
]


def bad_raw(changes):
    raw = {**GOOD, **changes}
    return {k: v for k, v in raw.items() if v is not None}


@pytest.mark.parametrize("changes,fragment", BAD_CONFIGS, ids=[f[1][:40] for f in BAD_CONFIGS])
def test_bad_config_is_a_votebench_error(changes, fragment):
    with pytest.raises(VotebenchError) as info:
        parse_config(bad_raw(changes), where="my.toml")
    msg = str(info.value)
    assert fragment in msg and "\n" not in msg, msg
    # the sweep file is named, except by the rule registry's own message (which lists the known rules)
    assert msg.startswith("my.toml: ") or msg.startswith("unknown rule"), msg


def test_good_config_defaults():
    cfg = parse_config(GOOD)
    assert cfg.seed == 0 and cfg.store == "x.zarr"
    assert cfg.inputs == [{"path": "data/esann_automl.csv", "name": "esann_automl"}]
    assert cfg.rules == [{"name": "borda", "label": "borda", "options": {}}]
    assert cfg.perturbations == [{"kind": "bootstrap", "over": "tasks", "replicates": 200, "block": 50,
                                  "name": "bootstrap-tasks"}]


def test_boolean_seed_is_refused():
    with pytest.raises(VotebenchError, match="seed"):
        parse_config({**GOOD, "seed": True})


@pytest.mark.parametrize("changes,fragment", BAD_CONFIGS[::3], ids=[f[1][:40] for f in BAD_CONFIGS[::3]])
def test_bad_config_via_cli(capsys, tmp_path, changes, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad_raw(changes)), encoding="utf-8")
    code, out, err = cli(capsys, "sweep", path, "--no-progress")
    assert_one_line_error(code, out, err, fragment, str(path))


@pytest.mark.parametrize(
    "name,text,fragment",
    [
        ("bad.toml", 'store = "x.zarr"\nseed = \n', "malformed TOML"),
        ("bad.toml", '[input\npath = "a.csv"\n', "malformed TOML"),
        ("bad.yaml", "store: x.zarr\ninput: [a.csv\n", "malformed YAML"),
        ("bad.yml", "store: x.zarr\n  input: : a\n", "malformed YAML"),
        ("list.yaml", "- a\n- b\n", "must be a table/mapping"),
        ("empty.yaml", "", "must be a table/mapping"),
        ("latin1.toml", b'store = "\xe9"\n', "cannot read sweep file"),
    ],
)
def test_malformed_sweep_files(capsys, tmp_path, name, text, fragment):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(VotebenchError, match=fragment):
        load_config(path)
    code, out, err = cli(capsys, "sweep", path)
    assert_one_line_error(code, out, err, fragment)


def test_missing_sweep_file_and_missing_store(capsys, tmp_path):
    code, out, err = cli(capsys, "sweep", tmp_path / "nope.toml")
    assert_one_line_error(code, out, err, "cannot read sweep file")
    path = tmp_path / "nostore.toml"
    path.write_text(f'input = "{AUTOML}"\n[[perturbations]]\nkind = "subsets"\n', encoding="utf-8")
    code, out, err = cli(capsys, "sweep", path)
    assert_one_line_error(code, out, err, "no output store", "--store")
    assert load_config(path, store=str(tmp_path / "given.zarr")).store == str(tmp_path / "given.zarr")


@pytest.mark.parametrize(
    "changes,fragment",
    [
        ({"input": "/nonexistent/scores.csv"}, "scores.csv"),
        ({"perturbations": [{"kind": "subsets", "sizes": [40, 50]}]}, "every subset size exceeds the 30 tasks"),
        ({"rules": [{"name": "promethee2", "options": {"preference": "zigzag"}}]}, "zigzag"),
    ],
    ids=["missing-input", "subset-sizes", "bad-rule-option"],
)
def test_plan_errors_come_before_the_store(tmp_path, changes, fragment):
    store = tmp_path / "s.zarr"
    cfg = parse_config(small_raw(store, **changes))
    with pytest.raises(VotebenchError, match=fragment):
        run_sweep(cfg, progress=False)
    assert not store.exists()


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
CLI_SWEEP = """\
seed = 2
store = "{store}"
input = "{path}"
[[perturbations]]
kind = "bootstrap"
replicates = 4
block = 2
"""


SIZES = {"rule": 1, "replicate": 4, "system": 17, "block": 2}


def test_cli_sweep_summary_and_store_override(capsys, tmp_path, automl):
    cfg_path = write_sweep(tmp_path, "s.toml", CLI_SWEEP, store=tmp_path / "file.zarr", path=AUTOML)
    code, out, err = cli(capsys, "sweep", cfg_path, "--no-progress")
    assert code == 0, err
    store = tmp_path / "file.zarr"
    lines = out.splitlines()
    assert lines[0] == f"# results store {store}"
    assert len(lines) == 2 and parse_sweep_summary(lines[1]) == ("esann_automl/bootstrap-tasks", SIZES, 2, 2)
    ds = open_results(store, "esann_automl/bootstrap-tasks")
    ref = engine.bootstrap(automl, replicates=4, seed=2)
    np.testing.assert_array_equal(ds["replicate_score"].values[0], ref["replicate_score"].values)

    other = tmp_path / "sub" / "other.zarr"
    code, out, err = cli(capsys, "sweep", cfg_path, "--store", other, "--no-progress")
    assert code == 0, err
    lines_other = out.splitlines()
    assert lines_other[0] == f"# results store {other}" and parse_sweep_summary(lines_other[1])[1:] == (SIZES, 2, 2)
    np.testing.assert_array_equal(open_results(other, "esann_automl/bootstrap-tasks")["replicate_score"].values,
                                  ds["replicate_score"].values)
    # the first store is untouched and a re-run of a complete store prints the same summary
    code, again, err = cli(capsys, "sweep", cfg_path, "--no-progress")
    assert code == 0 and parse_sweep_summary(again.splitlines()[1]) == parse_sweep_summary(lines[1])
    # the store of the file and an overriding --store of another sweep: refused, one line
    seed4 = write_sweep(tmp_path, "t.toml", CLI_SWEEP.replace("seed = 2", "seed = 4"), store=store, path=AUTOML)
    code, out, err = cli(capsys, "sweep", seed4)
    assert_one_line_error(code, out, err, "config differs")
    # --overwrite: the other sweep replaces the store
    code, out, err = cli(capsys, "sweep", seed4, "--overwrite", "--no-progress")
    assert code == 0, err
    assert parse_sweep_summary(out.splitlines()[1]) == ("esann_automl/bootstrap-tasks", SIZES, 2, 2)
    ds = open_results(store, "esann_automl/bootstrap-tasks")
    assert ds.attrs["seed"] == 4
    np.testing.assert_array_equal(ds["replicate_score"].values[0],
                                  engine.bootstrap(automl, replicates=4, seed=4)["replicate_score"].values)


def _console_script():
    exe = shutil.which("votebench", path=os.path.dirname(sys.executable)) or shutil.which("votebench")
    if exe is None:
        pytest.skip("votebench console script not installed")
    return exe


def test_cli_sweep_block_error_is_one_line(tmp_path):
    cfg_path = tmp_path / "inst.toml"
    cfg_path.write_text(f'store = "{tmp_path / "s.zarr"}"\ninput = "{AUTOML}"\n'
                        '[[perturbations]]\nkind = "bootstrap"\nover = "instances"\nreplicates = 2\n', encoding="utf-8")
    run = subprocess.run([_console_script(), "sweep", str(cfg_path), "--no-progress"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and run.stdout == ""
    assert "instance-level scores" in run.stderr
    assert run.stderr.count("\n") == 1, run.stderr


# ---------------------------------------------------------------------------------------------
# synthetic perturbations: Colombo et al. 2022 sections 4.2 (manipulation) and 4.3 (rescaling)
# ---------------------------------------------------------------------------------------------
SYNTH_SIZES = {"n_systems": 6, "n_tasks": 6, "n_instances": 6}
SYNTH_PHIS = [0.1, 0.5]
SYNTH_FACTORS = [1.0, 3.0]
SYNTH_REPEATS = 5
SYNTH_SEED = 4
#: 2 kinds x 3 variants (Colombo's default) x ceil(5 / 3) replicate blocks
SYNTH_BLOCKS = 12


def synth_raw(store, *, block=3):
    common = {**SYNTH_SIZES, "phis": SYNTH_PHIS, "repeats": SYNTH_REPEATS, "block": block}
    return {"seed": SYNTH_SEED, "store": str(store), "perturbations": [
        {"kind": "manipulation", **common},  # n_corrupted: the default 0..n_tasks
        {"kind": "rescaling", "factors": SYNTH_FACTORS, **common}]}


def synth_direct(kind, **kw):
    from engine.labelled.robustness import manipulation_curve, rescaling_curve

    if kind == "manipulation":
        return manipulation_curve(phis=SYNTH_PHIS, repeats=SYNTH_REPEATS, seed=SYNTH_SEED, **SYNTH_SIZES, **kw)
    return rescaling_curve(phis=SYNTH_PHIS, factors=SYNTH_FACTORS, repeats=SYNTH_REPEATS, seed=SYNTH_SEED, **SYNTH_SIZES, **kw)


@pytest.fixture(scope="module")
def synth_client():
    """One in-process dask client for the synthetic sweeps (run_sweep leaves a given client open)."""
    from engine.distributed import embedded_client

    client = embedded_client()
    yield client
    client.close()


@pytest.fixture(scope="module")
def synth_full(tmp_path_factory, synth_client):
    d = tmp_path_factory.mktemp("synth")
    cfg = parse_config(synth_raw(d / "synth.zarr"))
    seen = []
    path = run_sweep(cfg, client=synth_client, progress=False, on_block=seen.append)
    return cfg, path, load_all(path), seen


@pytest.fixture(scope="module")
def synth_resumed(tmp_path_factory, synth_client):
    """Four blocks, a half-written block (data without its flag), then the rest, then nothing."""
    import zarr

    d = tmp_path_factory.mktemp("synth_resumed")
    cfg = parse_config(synth_raw(d / "synth.zarr"))
    runs = [[], [], []]
    path = run_sweep(cfg, client=synth_client, progress=False, max_blocks=4, on_block=runs[0].append)
    after_first = load_all(path)
    grp = zarr.open_group(str(path), mode="r+")["synthetic/rescaling"]
    assert not np.asarray(grp["done"][...])[2, 1]
    grp["error"][2, :, :, 3:5] = 12345.0
    for run in runs[1:]:
        run_sweep(cfg, client=synth_client, progress=False, on_block=run.append)
    return cfg, load_all(path), after_first, runs


def test_synthetic_groups_and_layout(synth_full):
    from engine.distributed import Source
    from engine.labelled.robustness import COLOMBO_VARIANTS

    _, path, res, seen = synth_full
    assert sorted(res) == ["synthetic/manipulation", "synthetic/rescaling"]
    assert len(seen) == SYNTH_BLOCKS and len({block_key(b) for b in seen}) == SYNTH_BLOCKS
    for blk in seen:  # a worker gets parameters only: no input source, no scores
        assert not any(isinstance(a, (Source, xr.DataArray)) for a in blk.compute.args)
        assert not any(isinstance(v, (Source, xr.DataArray)) for v in blk.compute.args[1].values())
    for kind, axis, values in (("manipulation", "n_corrupted", list(range(7))), ("rescaling", "factor", SYNTH_FACTORS)):
        ds = res[f"synthetic/{kind}"]
        for var in ("error", "tau"):
            assert ds[var].dims == ("rule", "phi", axis, "replicate")
        assert ds["done"].dims == ("rule", "block") and ds["done"].shape == (3, 2) and ds["done"].values.all()
        assert list(ds["rule"].values) == list(COLOMBO_VARIANTS)
        assert list(ds["level"].values) == ["task", "one", "two"]
        assert list(ds["paper_name"].values) == ["sigma_mean", "sigma_l", "sigma_2l"]
        assert list(ds["phi"].values) == SYNTH_PHIS and list(ds[axis].values) == values
        assert list(ds["replicate"].values) == list(range(SYNTH_REPEATS))
        assert (ds.attrs["kind"], ds.attrs["repeats"], ds.attrs["block"], ds.attrs["seed"]) == (kind, 5, 3, SYNTH_SEED)
        assert (ds.attrs["n_systems"], ds.attrs["n_tasks"], ds.attrs["n_instances"]) == (6, 6, 6)
        assert json.loads(ds.attrs["inputs"]) == {} and ds.attrs["engine_version"] == engine.__version__
        assert json.loads(ds.attrs["config"]) == json.loads(json.dumps(synth_raw(path)))


@pytest.mark.parametrize("kind", ["manipulation", "rescaling"])
def test_synthetic_sweep_equals_direct_call(synth_full, kind):
    _, _, res, _ = synth_full
    ds, ref = res[f"synthetic/{kind}"], synth_direct(kind)
    np.testing.assert_array_equal(ds["error"].values, ref["error"].values)
    np.testing.assert_array_equal(ds["tau"].values, ref["tau"].values)
    assert np.isfinite(ds["error"].values).all()
    for coord in ("rule", "phi", "replicate", "level", "paper_name"):
        assert list(ds[coord].values) == list(ref[coord].values), coord
    # the points differ from each other: the parameters reached the computation
    assert len(np.unique(ds["error"].values)) > 5
    if kind == "rescaling":  # a rescaled reversed task moves the mean's error, not the Borda variants' (section 4.3)
        err = ds["error"].values
        assert not np.array_equal(err[0, :, 0], err[0, :, 1])
        np.testing.assert_array_equal(err[1:, :, 0], err[1:, :, 1])


def bf_normalized_kendall(score, truth):
    """Discordant pairs + 1/2 per tied pair of ``score``, over all pairs (truth has no ties)."""
    n, bad = len(truth), 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = (score[i] - score[j]) * (truth[i] - truth[j])
            bad += 1.0 if d < 0 else 0.5 if score[i] == score[j] else 0.0
    return bad / (n * (n - 1) / 2)


@pytest.mark.parametrize("kind", ["manipulation", "rescaling"])
def test_synthetic_sweep_against_plain_loops(synth_full, kind):
    """Replicates rebuilt with engine.labelled.synthetic.generate_array, aggregated by the brute-force reference."""
    from engine.labelled.synthetic import generate_array

    _, _, res, _ = synth_full
    ds = res[f"synthetic/{kind}"]
    variants = [("mean", "task"), ("borda", "one"), ("borda", "two")]
    # (replicate, phi index, n_corrupted or factor index, variant index)
    points = [(0, 0, 2, 1), (4, 1, 4, 2), (2, 1, 1, 0)] if kind == "manipulation" else [(1, 0, 1, 0), (3, 1, 0, 1), (4, 0, 1, 2)]
    for b, pi, ai, ri in points:
        if kind == "manipulation":
            kw = {"n_corrupted": int(ds["n_corrupted"].values[ai])}
        else:
            kw = {"n_corrupted": 1, "rescale": SYNTH_FACTORS[ai]}
        x, truth = generate_array(6, 6, 6, phi=SYNTH_PHIS[pi], seed=SYNTH_SEED, replicates=[b], **kw)
        X = np.transpose(x[0], (2, 0, 1))  # (system, task, instance)
        rule, level = variants[ri]
        score = bf_aggregate(X, [True] * 6, rule=rule, level=level)
        want = bf_normalized_kendall(score, truth)
        assert ds["error"].values[ri, pi, ai, b] == pytest.approx(want, abs=1e-12), (b, pi, ai, ri)


@pytest.mark.parametrize("block", [1, 5])
def test_synthetic_block_size_does_not_change_results(synth_full, synth_client, tmp_path, block):
    _, _, full, _ = synth_full
    seen = []
    path = run_sweep(parse_config(synth_raw(tmp_path / "b.zarr", block=block)), client=synth_client, progress=False,
                     on_block=seen.append)
    res = load_all(path)
    nb = -(-SYNTH_REPEATS // block)
    assert len(seen) == 2 * 3 * nb
    for g in full:
        assert res[g]["done"].shape == (3, nb) and res[g]["done"].values.all()
        for var in ("error", "tau"):
            np.testing.assert_array_equal(res[g][var].values, full[g][var].values, err_msg=f"{g}/{var}")


def test_synthetic_resume_computes_only_the_missing_blocks(synth_full, synth_resumed):
    _, _, full, _ = synth_full
    cfg, resumed, after_first, (first, second, third) = synth_resumed
    _, blocks, _ = plan_sweep(cfg)
    assert len(blocks) == SYNTH_BLOCKS
    k1, k2 = ({block_key(b) for b in run} for run in (first, second))
    assert k1 == {block_key(b) for b in blocks[:4]} and len(first) == 4
    assert not (k1 & k2) and k1 | k2 == {block_key(b) for b in blocks} and len(second) == SYNTH_BLOCKS - 4
    assert ("synthetic/rescaling", "curve", (2, 1)) in k2  # the half-written block was recomputed
    assert third == []
    assert sum(int(ds["done"].values.sum()) for ds in after_first.values()) == 4
    for g, ds in full.items():
        for var in ("error", "tau", "done"):
            np.testing.assert_array_equal(resumed[g][var].values, ds[var].values, err_msg=f"{g}/{var}")
    assert not (resumed["synthetic/rescaling"]["error"].values == 12345.0).any()


def test_synthetic_defaults_are_those_of_the_engine_functions():
    import inspect

    from engine.labelled.robustness import manipulation_curve, rescaling_curve

    cfg = parse_config({"store": "x.zarr", "perturbations": [{"kind": "manipulation"}, {"kind": "rescaling", "name": "r"}]})
    assert cfg.inputs == []  # no input needed
    man, res = cfg.perturbations
    assert man["name"] == "manipulation" and res["name"] == "r"
    for spec, fn in ((man, manipulation_curve), (res, rescaling_curve)):
        defaults = {k: p.default for k, p in inspect.signature(fn).parameters.items()}
        assert spec["variants"] == list(defaults["rules"])
        assert spec["repeats"] == defaults["repeats"]
        for key in ("phis", "n_systems", "n_tasks", "n_instances", "corrupt_location", "scale", "factors", "reversed_task"):
            if key in spec:
                want = defaults[key]
                assert spec[key] == (list(want) if isinstance(want, tuple) else want), key
    assert man["n_corrupted"] == list(range(21)) and "factors" not in man and "n_corrupted" not in res


def test_synthetic_mixed_with_an_input(tmp_path):
    from engine.distributed import Source

    raw = small_raw(tmp_path / "s.zarr", perturbations=[
        {"kind": "bootstrap", "replicates": 2, "block": 2},
        {"kind": "manipulation", **SYNTH_SIZES, "phis": [0.1], "n_corrupted": [0, 3], "repeats": 3, "block": 2,
         "variants": ["borda:two"], "name": "manip"}])
    skeletons, blocks, attrs = plan_sweep(parse_config(raw))
    assert sorted(skeletons) == ["esann_automl/bootstrap-tasks", "synthetic/manip"]
    syn = [b for b in blocks if b.group == "synthetic/manip"]
    assert len(syn) == 2 and all(not any(isinstance(a, Source) for a in b.compute.args) for b in syn)
    assert all(isinstance(b.compute.args[0], Source) for b in blocks if b.group != "synthetic/manip")
    assert skeletons["synthetic/manip"]["error"].shape == (1, 1, 2, 3)
    assert list(skeletons["synthetic/manip"]["level"].values) == ["two"]
    assert json.loads(attrs["inputs"]) == {"esann_automl": hashlib.sha256(AUTOML.read_bytes()).hexdigest()}


def test_example_sweep_file_and_docstring():
    import textwrap
    import tomllib

    import engine.sweep

    cfg = load_config(DATA.parent / "experiments" / "sweeps" / "colombo_manipulation.toml")
    skeletons, blocks, _ = plan_sweep(cfg)
    assert dict(skeletons["synthetic/manipulation"]["error"].sizes) == {"rule": 3, "phi": 3, "n_corrupted": 21, "replicate": 100}
    assert dict(skeletons["synthetic/rescaling"]["error"].sizes) == {"rule": 3, "phi": 2, "factor": 10, "replicate": 100}
    assert len(blocks) == 2 * 3 * 4
    text = engine.sweep.__doc__.split("A sweep file (TOML or YAML)::\n", 1)[1].split("\nThe store holds", 1)[0]
    raw = tomllib.loads(textwrap.dedent(text))
    kinds = [p["kind"] for p in parse_config(raw).perturbations]
    assert kinds == ["bootstrap", "subsets", "grid", "manipulation", "rescaling"]


GOOD_SYNTH = {"kind": "manipulation", **SYNTH_SIZES}
BAD_SYNTH = [
    ({"phis": []}, "phis must be"),
    ({"phis": [-0.1]}, "phis must be"),
    ({"phis": 0.1}, "phis must be"),
    ({"phis": [0.1, 0.1]}, "phis must be"),
    ({"n_corrupted": [7]}, "n_corrupted must be"),
    ({"n_corrupted": [1, 1]}, "n_corrupted must be"),
    ({"n_systems": 1}, "n_systems must be at least 2"),
    ({"n_tasks": 0}, "n_tasks must be a positive integer"),
    ({"n_instances": 2.0}, "n_instances must be a positive integer"),
    ({"repeats": 0}, "repeats must be a positive integer"),
    ({"block": True}, "block must be a positive integer"),
    ({"variants": ["borda:three"]}, "variants: unknown level 'three'"),
    ({"variants": ["bordaa"]}, "variants: unknown rule 'bordaa'"),
    ({"variants": "borda"}, "variants must be a non-empty list"),
    ({"variants": []}, "variants must be a non-empty list"),
    ({"variants": ["borda", "borda"]}, "variants must be unique"),
    ({"scale": 0}, "scale must be a finite number > 0"),
    ({"corrupt_location": "x"}, "corrupt_location must be a finite number"),
    ({"options": 3}, "options must be a table"),
    ({"factors": [2]}, "(manipulation): unknown key(s) factors"),
    ({"seed": 1}, "(manipulation): unknown key(s) seed"),
    ({"kind": "rescaling", "factors": [0, 1]}, "factors must be"),
    ({"kind": "rescaling", "factors": []}, "factors must be"),
    ({"kind": "rescaling", "reversed_task": "yes"}, "reversed_task must be true or false"),
    ({"kind": "rescaling", "n_corrupted": [1]}, "(rescaling): unknown key(s) n_corrupted"),
]


@pytest.mark.parametrize("changes,fragment", BAD_SYNTH, ids=[f"{sorted(c)[-1]}-{f[:30]}" for c, f in BAD_SYNTH])
def test_bad_synthetic_perturbation_is_a_one_line_error(changes, fragment):
    pert = {**GOOD_SYNTH, **changes}
    with pytest.raises(VotebenchError) as info:
        parse_config({"store": "x.zarr", "perturbations": [pert]}, where="my.toml")
    msg = str(info.value)
    assert fragment in msg and "\n" not in msg and msg.startswith("my.toml: perturbation 1"), msg


@pytest.mark.parametrize(
    "raw,fragment",
    [
        ({"perturbations": [GOOD_SYNTH, {"kind": "bootstrap"}]}, "no input"),
        ({"input": {"path": "a.csv", "name": "synthetic"}, "perturbations": [GOOD_SYNTH]}, "input name 'synthetic'"),
    ],
    ids=["bootstrap-without-input", "input-named-synthetic"],
)
def test_synthetic_config_errors(capsys, tmp_path, raw, fragment):
    with pytest.raises(VotebenchError, match=fragment):
        parse_config({"store": "x.zarr", **raw})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"store": str(tmp_path / "x.zarr"), **raw}), encoding="utf-8")
    code, out, err = cli(capsys, "sweep", path, "--no-progress")
    assert_one_line_error(code, out, err, fragment, str(path))


def test_synthetic_store_in_dashboard_and_report(synth_full, tmp_path):
    from engine.app.dashboard import snapshot
    from engine.app.report import build_report

    _, path, res, _ = synth_full
    snap = snapshot(path)
    assert snap["status"] == "complete" and snap["progress"]["blocks_done"] == snap["progress"]["blocks_total"] == SYNTH_BLOCKS
    by_name = {g["name"]: g for g in snap["groups"]}
    man = by_name["synthetic/manipulation"]
    assert man["kind"] == "manipulation" and man["axis"] == "n_corrupted" and man["values"] == list(range(7))
    err = res["synthetic/manipulation"]["error"].values
    row = next(r for r in man["rows"] if r["rule"] == "borda:one" and r["phi"] == 0.5)
    np.testing.assert_allclose(row["mean_error"], err[1, 1].mean(axis=-1), rtol=0, atol=1e-12)
    assert row["repeats_done"] == SYNTH_REPEATS and by_name["synthetic/rescaling"]["values"] == SYNTH_FACTORS
    index = build_report(path, tmp_path / "rep", formats=["svg"])
    page = index.read_text(encoding="utf-8")
    assert "Synthetic manipulation: synthetic/manipulation" in page and "Synthetic rescaling: synthetic/rescaling" in page
    import csv

    with (index.parent / "tables" / "synthetic-rescaling_error.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 * 2 * 2
    r = next(r for r in rows if r["rule"] == "mean:task" and float(r["phi"]) == 0.1 and float(r["factor"]) == 3.0)
    e = res["synthetic/rescaling"]["error"].values[0, 0, 1]
    assert float(r["error_mean"]) == pytest.approx(e.mean()) and float(r["error_std"]) == pytest.approx(e.std(ddof=1))
    assert int(r["n"]) == SYNTH_REPEATS
