"""The perturbation-kind registry (engine.sweep.kinds), and a worked example of adding a kind.

``leave_one_out`` below is a complete perturbation kind defined in this test
module: the full-data ranking of every rule with one task left out, one block
per (rule, task).  It is added with one line, ``register_kind(LEAVE_ONE_OUT)``
(in a fixture here, so that the other test modules see only the built-in
kinds), then run through a sweep, shown by the dashboard snapshot and written
into the report, and checked against plain loops over the input's scores.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from conftest import bf_borda_across

from engine.app.dashboard import LiveStore, snapshot
from engine.app.report import SECTIONS, register_section
from engine.distributed import embedded_client, load_source, rank_scores
from engine.errors import VotebenchError
from engine.sweep import KINDS, Kind, PlanContext, SpecCheck, open_results, parse_config, plan_sweep, register_kind, run_sweep
from engine.sweep.kinds import GroupState, labels

SYSTEMS = ["ant", "bee", "cat", "dog", "eel"]
TASKS = ["t0", "t1", "t2", "t3"]


# ---------------------------------------------------------------------------------------------
# the example kind: everything a new kind needs, in one place
# ---------------------------------------------------------------------------------------------
def validate(spec: dict[str, Any], check: SpecCheck) -> dict[str, Any]:
    spec.setdefault("name", "leave-one-out")
    return spec


def leave_one_out_block(src, opts, task: str) -> np.ndarray:
    """Run on a worker: the full-data scores ``(S,)`` of one rule on the input without ``task``."""
    scores, _ = load_source(src)
    score, _, _ = rank_scores(scores.drop_sel(task=[task]), opts)
    return score


def plan(ctx: PlanContext) -> tuple[xr.Dataset, list]:
    R, T, S = len(ctx.rules), ctx.n_tasks, ctx.systems.size
    skeleton = xr.Dataset(
        {"score": (("rule", "left_out", "system"), np.full((R, T, S), np.nan)),
         "full_rank": (("rule", "system"), np.stack([ctx.points[lb][1] for lb in ctx.labels])),
         "done": (("rule", "left_out"), np.zeros((R, T), dtype=bool))},
        coords={"rule": np.array(ctx.labels, dtype=object), "left_out": np.array(ctx.tasks, dtype=object),
                "system": ctx.systems},
    )
    blocks = [ctx.block("score", (ri, ti, slice(None)), (ri, ti), ctx.source, ctx.options(rule), task)
              for ri, rule in enumerate(ctx.rules) for ti, task in enumerate(ctx.tasks)]
    return skeleton, blocks


class LeaveOneOutState(GroupState):
    """Per rule and left-out task: the leaders, and whether they are the full-data leaders."""

    def __init__(self, name: str, grp: Any, **_: Any) -> None:
        super().__init__(name, grp)
        self.rules, self.tasks, self.systems = labels(grp["rule"]), labels(grp["left_out"]), labels(grp["system"])
        self.full = [set(np.flatnonzero(np.asarray(r) == 1)) for r in np.asarray(grp["full_rank"][...])]
        self.h_score = grp["score"]
        self.leaders: dict[tuple[int, int], list[int]] = {}

    def poll(self) -> bool:
        new = self.new_blocks()
        for ri, ti in new:
            s = np.asarray(self.h_score[ri, ti], dtype=np.float64)
            self.leaders[(ri, ti)] = [int(j) for j in np.flatnonzero(s == np.nanmax(s))]
            self.done[ri, ti] = True
        return bool(new)

    def to_json(self) -> dict[str, Any]:
        rules = []
        for ri, rule in enumerate(self.rules):
            got = [self.leaders.get((ri, ti)) for ti in range(len(self.tasks))]
            kept = [set(g) == self.full[ri] for g in got if g is not None]
            rules.append({"rule": rule, "leaders": [None if g is None else [self.systems[j] for j in g] for g in got],
                          "same_leader": sum(kept) / len(kept) if kept else None})
        return {"name": self.name, "input": self.input, "kind": "leave_one_out", **self.progress(), "left_out": self.tasks,
                "rules": rules}


def report(section, gname: str, ds: xr.Dataset) -> tuple[str, str]:
    ds = ds.compute()
    systems, S = ds["system"].values, ds["score"].values
    rows = [[str(r), str(t), ", ".join(str(systems[k]) for k in np.flatnonzero(S[i, j] == np.nanmax(S[i, j])))]
            for i, r in enumerate(ds["rule"].values) for j, t in enumerate(ds["left_out"].values) if ds["done"].values[i, j]]
    return f"Leave one task out: {gname}", section.table(f"{gname}_leaders", ["rule", "left out", "leader"], rows, rows,
                                                         caption="Leader without each task:")


LEAVE_ONE_OUT = Kind("leave_one_out", frozenset(), validate, plan, run_block=leave_one_out_block, dashboard=LeaveOneOutState)


@pytest.fixture
def leave_one_out():
    register_kind(LEAVE_ONE_OUT)  # the one line that adds the kind ...
    register_section(LEAVE_ONE_OUT.name, report)  # ... and the one that gives it a section of the report
    yield LEAVE_ONE_OUT
    del KINDS[LEAVE_ONE_OUT.name]
    del SECTIONS[LEAVE_ONE_OUT.name]


# ---------------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------------
def scores_matrix() -> np.ndarray:
    """(S, T) scores: 'dog' leads on all tasks under mean and Borda, 'bee' without t1 or t3, and Borda ties
    'ant' with 'dog' without t0 (ties within t1 and t2)."""
    return np.array([[0.1, 0.2, 0.8, 0.6],
                     [1.0, 0.15, 0.75, 0.55],
                     [0.7, 0.1, 0.4, 0.5],
                     [0.4, 0.6, 0.7, 1.0],
                     [0.3, 0.6, 0.7, 0.3]])


def write_input(folder: Path, X: np.ndarray) -> Path:
    path = folder / "tiny.csv"
    lines = ["system," + ",".join(TASKS)] + [s + "," + ",".join(f"{v:.2f}" for v in row) for s, row in zip(SYSTEMS, X)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def loop_scores(X: np.ndarray, rule: str, left_out: int) -> np.ndarray:
    """Task-level mean or Borda of the systems without task ``left_out``, by plain loops."""
    keep = [t for t in range(X.shape[1]) if t != left_out]
    if rule == "mean":
        return np.array([sum(X[s, t] for t in keep) / len(keep) for s in range(X.shape[0])])
    return bf_borda_across(X[:, keep].T)


def leaders(score: np.ndarray) -> list[str]:
    best = max(score)
    return [SYSTEMS[s] for s in range(len(score)) if score[s] == best]


@pytest.fixture(scope="module")
def client():
    c = embedded_client()
    yield c
    c.close()


def config(folder: Path, X: np.ndarray, **extra: Any):
    return parse_config({"store": str(folder / "loo.zarr"), "input": {"path": str(write_input(folder, X)), "name": "tiny"},
                         "rules": [{"name": "mean"}, {"name": "borda"}],
                         "perturbations": [{"kind": "leave_one_out", **extra}, {"kind": "bootstrap", "replicates": 4,
                                                                               "block": 2}]})


# ---------------------------------------------------------------------------------------------
# the worked example, end to end
# ---------------------------------------------------------------------------------------------
def test_a_kind_added_with_one_line_runs_through_sweep_dashboard_and_report(leave_one_out, tmp_path, client):
    from engine.app.report import build_report

    X = scores_matrix()
    cfg = config(tmp_path, X)
    seen = []
    run_sweep(cfg, client=client, progress=False, on_block=seen.append)
    assert sum(b.group == "tiny/leave-one-out" for b in seen) == 2 * len(TASKS)

    ds = open_results(cfg.store, "tiny/leave-one-out").compute()
    assert ds.attrs["kind"] == "leave_one_out"  # set by the sweep: the kind's plan did not name itself
    assert bool(ds["done"].all())
    for ri, rule in enumerate(("mean", "borda")):
        for ti in range(len(TASKS)):
            np.testing.assert_allclose(ds["score"].values[ri, ti], loop_scores(X, rule, ti), rtol=1e-12)

    snap = snapshot(cfg.store)
    assert snap["status"] == "complete"
    assert snap["progress"]["blocks_total"] == 2 * len(TASKS) + 2 * 2  # and the bootstrap's 2 rules x 2 blocks
    group = next(g for g in snap["groups"] if g["kind"] == "leave_one_out")
    assert group["name"] == "tiny/leave-one-out" and group["input"] == "tiny" and group["left_out"] == TASKS
    assert group["blocks_done"] == group["blocks_total"] == 2 * len(TASKS)
    for ri, rule in enumerate(("mean", "borda")):
        want = [leaders(loop_scores(X, rule, ti)) for ti in range(len(TASKS))]
        full = leaders(loop_scores(X, rule, -1))
        assert group["rules"][ri]["leaders"] == want
        assert group["rules"][ri]["same_leader"] == sum(w == full for w in want) / len(TASKS)
    assert group["rules"][0]["leaders"] == [["dog"], ["bee"], ["dog"], ["bee"]]  # the data is what it is meant to be
    assert group["rules"][1]["leaders"][0] == ["ant", "dog"]

    index = build_report(cfg.store, tmp_path / "report", formats=("svg",))
    assert "Leave one task out: leave-one-out" in index.read_text(encoding="utf-8")
    with (tmp_path / "report" / "tables" / "leave-one-out_leaders.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))[1:]
    assert rows == [[rule, TASKS[ti], ", ".join(leaders(loop_scores(X, rule, ti)))]
                    for rule in ("mean", "borda") for ti in range(len(TASKS))]


def test_a_store_of_an_unregistered_kind_is_skipped_by_the_dashboard_and_noted_by_the_report(tmp_path, client):
    from engine.app.report import build_report

    X = scores_matrix()
    register_kind(LEAVE_ONE_OUT)
    try:
        cfg = config(tmp_path, X)
        run_sweep(cfg, client=client, progress=False)
    finally:
        del KINDS[LEAVE_ONE_OUT.name]
    snap = snapshot(cfg.store)  # as another process would see it, without the kind's module
    assert [g["kind"] for g in snap["groups"]] == ["bootstrap"]
    live = LiveStore(cfg.store)
    live.update()
    scores = live.task_scores("tiny", "bee")  # the stored config is still read
    assert [row["score"] for row in scores["tasks"]] == [float(v) for v in X[1]]
    index = build_report(cfg.store, tmp_path / "report", formats=("svg",))
    assert "leave-one-out: perturbation kind &#x27;leave_one_out&#x27; not known to this votebench; left out." in \
        index.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------
def test_the_built_in_kinds_in_order():
    assert list(KINDS)[:5] == ["bootstrap", "subsets", "grid", "manipulation", "rescaling"]
    assert [k.needs_input for k in KINDS.values()][:5] == [True, True, True, False, False]


def test_a_second_kind_of_the_same_name_is_refused(leave_one_out):
    other = Kind("leave_one_out", frozenset(), validate, plan, run_block=leave_one_out_block)
    with pytest.raises(VotebenchError, match="'leave_one_out' is registered already"):
        register_kind(other)
    register_kind(LEAVE_ONE_OUT)  # the same record again: a no-op
    assert KINDS["leave_one_out"] is LEAVE_ONE_OUT
    assert register_kind(other, replace=True) is other and KINDS["leave_one_out"] is other


def test_the_keys_of_a_registered_kind_are_checked(leave_one_out, tmp_path):
    with pytest.raises(VotebenchError, match=r"perturbation 1 \(leave_one_out\): unknown key\(s\) replicates"):
        config(tmp_path, scores_matrix(), replicates=3)
    skeletons, blocks, _ = plan_sweep(config(tmp_path, scores_matrix(), name="loo"))
    assert list(skeletons["tiny/loo"]["left_out"].values) == TASKS
    # the blocks are interleaved (tests/sweep/test_sweep_order.py): their set is checked here
    assert sorted(b.done_index for b in blocks if b.group == "tiny/loo") == [(r, t) for r in range(2) for t in range(len(TASKS))]
