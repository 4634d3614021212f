"""The labelled layer: rank, rank_rules and bootstrap per axis, on numpy and on a zarr store."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .common import tensor

VNR_RULES = ["plurality", "borda", "dowdall", "threshold", "baldwin", "condorcet", "copeland", "minimax"]


def _task_table(n_systems: int, n_tasks: int):
    import engine

    x = np.random.default_rng(3).integers(0, 7, size=(n_systems, n_tasks)).astype(float)
    return engine.scores_from_array(x)


class RankInMemory:
    """``engine.rank`` of one rule on a task-level table in memory."""

    params = [["borda", "copeland", "mean", "promethee2"], ["97x14", "1000x50"]]
    param_names = ["rule", "systems x tasks"]

    def setup(self, rule, size):
        import engine

        s, t = (int(v) for v in size.split("x"))
        self.scores = _task_table(s, t)
        engine.rank(self.scores, rule=rule)

    def time_rank(self, rule, size):
        import engine

        engine.rank(self.scores, rule=rule)



class RankRules:
    """``engine.rank_rules`` of the eight Vote'n'Rank rules in one request (issue 31's case)."""

    params = [["97x14", "1000x50"]]
    param_names = ["systems x tasks"]

    def setup(self, size):
        import engine

        s, t = (int(v) for v in size.split("x"))
        self.scores = _task_table(s, t)
        engine.rank_rules(self.scores, VNR_RULES)

    def time_rank_rules_vnr8(self, size):
        import engine

        engine.rank_rules(self.scores, VNR_RULES)


class RankInstanceLevel:
    """Two-level and one-level rules on an instance-level tensor in memory and from a zarr store."""

    params = [["borda", "copeland", "mean"], ["two", "one"], ["numpy", "zarr"]]
    param_names = ["rule", "level", "backend"]
    timeout = 180

    def setup(self, rule, level, backend):
        import engine

        self.scores = tensor(60, 15, 200)
        self.tmp = None
        if backend == "zarr":
            self.tmp = tempfile.TemporaryDirectory()
            path = Path(self.tmp.name) / "scores.zarr"
            engine.to_zarr(self.scores, path, chunks={"task": 1, "instance": 50})
            self.scores = engine.open_scores(str(path))
        self.run(rule, level)

    def teardown(self, rule, level, backend):
        if self.tmp is not None:
            self.tmp.cleanup()

    def run(self, rule, level):
        import engine

        result = engine.rank(self.scores, rule=rule, level=level)
        if hasattr(result, "compute"):
            result.compute()

    def time_rank(self, rule, level, backend):
        self.run(rule, level)


class Bootstrap:
    """``engine.bootstrap`` of 100 replicates over tasks, systems and instances."""

    params = [["borda", "copeland"], ["tasks", "systems", "instances"]]
    param_names = ["rule", "over"]
    timeout = 180

    def setup(self, rule, over):
        import engine

        self.scores = tensor(40, 12, 100)
        self.level = "two"
        engine.bootstrap(self.scores, rule=rule, over=over, replicates=5, level=self.level)

    def time_bootstrap(self, rule, over):
        import engine

        engine.bootstrap(self.scores, rule=rule, over=over, replicates=100, level=self.level)
