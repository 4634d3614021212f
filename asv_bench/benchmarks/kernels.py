"""Kernels: every rule family at three sizes, pair counts, Bradley-Terry, paired tests, exact sums.

The rule kernels run on oriented task-level scores ``(T, S)`` through the registry
(``engine.get_rule(name).kernel``), without labels or validation.
"""

from __future__ import annotations

import importlib

import numpy as np

from .common import skip_unless, table

#: one rule per family: positional, pairwise (majority), iterative, baseline, MCDM, battle-based
FAMILIES = ["borda", "plurality", "copeland", "minimax", "baldwin", "mean", "median", "average_rank", "promethee2",
            "topsis", "vikor", "elo", "bradley_terry"]
SIZES = ["20x10", "100x20", "1000x50"]


def _size(size: str) -> tuple[int, int]:
    s, t = size.split("x")
    return int(s), int(t)


class RuleKernels:
    """One call of a rule's kernel on a (T, S) table with frequent ties."""

    params = (FAMILIES, SIZES)
    param_names = ["rule", "systems x tasks"]
    timeout = 120

    def setup(self, rule, size):
        import engine

        skip_unless(rule in engine.rule_names())
        n_systems, n_tasks = _size(size)
        # Bradley-Terry and Elo on 1000 systems are measured by the battle benchmarks; keep the suite short
        skip_unless(not (rule in ("bradley_terry", "elo") and n_systems > 100))
        self.kernel = engine.get_rule(rule).kernel
        self.X = table(n_systems, n_tasks, ties=True)
        self.kernel(self.X)  # warm-up: compiled loops, caches

    def time_kernel(self, rule, size):
        self.kernel(self.X)


class PairCounts:
    """The integer pair win counts behind every pairwise rule (the compiled loop where there is one)."""

    params = [[100, 1000]]
    param_names = ["systems"]

    def setup(self, n_systems):
        module = None
        for name in ("engine.kernels.paircount", "engine.kernels.pairs", "engine.kernels.pairwins"):
            try:
                module = importlib.import_module(name)
                break
            except ImportError:
                continue
        skip_unless(module is not None and hasattr(module, "win_counts") and hasattr(module, "dense_ranks"))
        self.module = module
        X = table(n_systems, 50, ties=True)
        self.ranks = module.dense_ranks(X)
        self.present = self.ranks >= 0
        module.win_counts(self.ranks, self.present)

    def time_win_counts(self, n_systems):
        self.module.win_counts(self.ranks, self.present)


class PairedTests:
    """Paired permutation and bootstrap tests between systems on instance-level scores."""

    params = [["permutation", "bootstrap"], [200, 5000]]
    param_names = ["test", "instances"]
    timeout = 120

    def setup(self, test, n_instances):
        import engine

        rng = np.random.default_rng(1)
        values = rng.integers(0, 2, size=(4, 1, n_instances)).astype(float)
        self.scores = engine.scores_from_array(values)
        self.test = test
        try:
            engine.compare_scores(self.scores, test=test, resamples=200)
        except Exception as exc:  # older commits crash on some sizes (the 2**k overflow of issue 23)
            raise NotImplementedError from exc

    def time_compare_scores(self, test, n_instances):
        import engine

        engine.compare_scores(self.scores, test=self.test, resamples=2000)


class ExactSums:
    """Exactly rounded sums over instances (the digits behind every mean)."""

    params = [[10_000, 1_000_000]]
    param_names = ["values"]

    def setup(self, n):
        try:
            from engine.kernels.exact import exact_sum
        except ImportError as exc:
            raise NotImplementedError from exc
        self.exact_sum = exact_sum
        self.x = np.random.default_rng(2).normal(size=(4, n))
        exact_sum(self.x[:, :10])

    def time_exact_sum(self, n):
        self.exact_sum(self.x)
