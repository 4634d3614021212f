"""Perturbation kind ``bootstrap``: resample an axis (tasks, systems or instances) with replacement.

Store group ``<input>/<name>``: ``replicate_score`` (rule, replicate, system),
the full-data ``score`` and ``rank`` (rule, system), ``done`` (rule, block);
attrs ``over``, ``replicates``, ``block``, ``seed``.  One block is one rule and
``block`` replicates, computed by :func:`engine.bootstrap` on a worker
(:func:`engine.distributed.bootstrap_source`), equal to the same replicates of
the direct call whatever the block size.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from engine.dims import REPLICATE, RULE, SYSTEM
from engine.distributed import bootstrap_source
from engine.kernels.summaries import SummaryCodec, bootstrap_block
from engine.sweep.kinds import TASK_BYTES, Block, Kind, PlanContext, SpecCheck, replicate_blocks

# isort: split
from engine.sweep.kinds import GroupState, block_ids, json_ints, json_number, json_numbers, labels  # the kind's live state

__all__ = ["BOOTSTRAP", "BootstrapState", "SUMMARY"]


def validate(spec: dict[str, Any], check: SpecCheck) -> dict[str, Any]:
    from engine.labelled.bootstrap import OVER

    spec.setdefault("over", "tasks")
    if spec["over"] not in OVER:
        raise check.fail(f"unknown axis {spec['over']!r}; choose one of {', '.join(OVER)}")
    spec.setdefault("replicates", 200)
    spec.setdefault("block", 50)
    spec.setdefault("name", f"bootstrap-{spec['over']}")
    check.positive(spec, "replicates", "block")
    spec["block"] = min(spec["block"], spec["replicates"])  # one store chunk never larger than the replicates
    check.blocks(spec["replicates"], spec["block"])
    return spec


def check_input(scores: xr.DataArray, spec: Mapping[str, Any], opts: Mapping[str, Any]) -> None:
    """Fail before any store is written when the bootstrap cannot run on this input with these options."""
    from engine.labelled.bootstrap import plan_for

    plan_for(scores, spec["over"], opts)


def plan(ctx: PlanContext) -> tuple[xr.Dataset, list[Block]]:
    pert, labels_ = ctx.spec, ctx.labels
    n, b = pert["replicates"], pert["block"]
    ids = replicate_blocks(n, b)
    S = ctx.n_systems
    skeleton = xr.Dataset(
        {
            "replicate_score": ((RULE, REPLICATE, SYSTEM), np.full((len(labels_), n, S), np.nan)),
            "score": ((RULE, SYSTEM), np.stack([ctx.points[lb][0] for lb in labels_])),
            "rank": ((RULE, SYSTEM), np.stack([ctx.points[lb][1] for lb in labels_])),
            "done": ((RULE, "block"), np.zeros((len(labels_), len(ids)), dtype=bool)),
        },
        coords={RULE: np.array(labels_, dtype=object), REPLICATE: np.arange(n), SYSTEM: ctx.systems},
        attrs={"kind": "bootstrap", "over": pert["over"], "replicates": n, "block": b, "seed": ctx.seed},
    )
    blocks = [ctx.block("replicate_score", (ri, slice(r[0], r[-1] + 1)), (ri, bi), ctx.source, ctx.options(rule), pert["over"],
                        r, ctx.seed)
              for ri, rule in enumerate(ctx.rules) for bi, r in enumerate(ids)]
    return skeleton, blocks


def memory(spec: Mapping[str, Any], n_rules: int, n_systems: int) -> tuple[float, str, str]:
    n = spec["replicates"]
    need = n_rules * (8.0 * n * n_systems + TASK_BYTES * -(-n // spec["block"]))
    return need, f"{n} replicates x {n_systems} systems x {n_rules} rule(s)", "use fewer replicates"


def chunks(ds: xr.Dataset) -> dict[str, tuple[int, ...]]:
    return {"replicate_score": (1, int(ds.attrs["block"]), ds.sizes[SYSTEM])}


# ------------------------------------------------------------------------------------ summary (engine.kernels.summaries)
def _layout(grp: Any) -> dict[str, tuple[tuple[int, ...], str]]:
    S = int(grp["replicate_score"].shape[-1])
    return {"counts": ((3, S, S), "int32"), "sums": ((4 * S + 4,), "float64")}


def _pack(summary: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    # marker: the number of replicates (>= 1), sums[-4]
    return {"counts": np.stack([summary["rank_count"], summary["wins"], summary["both"]]),
            "sums": np.concatenate([np.asarray(summary["vectors"]).ravel(), summary["scalars"]])}


def _unpack(packed: Mapping[str, np.ndarray], _shape: Any) -> dict[str, np.ndarray] | None:
    sums = np.asarray(packed["sums"], dtype=np.float64)
    if not sums[-4] >= 1:
        return None
    S = (sums.size - 4) // 4
    counts = np.asarray(packed["counts"], dtype=np.int64)
    return {"rank_count": counts[0], "wins": counts[1], "both": counts[2], "vectors": sums[:-4].reshape(4, S),
            "scalars": sums[-4:]}


#: per block: rank histogram, wins, co-presence (int32) and the W / Spearman sums (see :mod:`engine.kernels.summaries`)
SUMMARY = SummaryCodec(block=bootstrap_block, layout=_layout, pack=_pack, unpack=_unpack)


# ------------------------------------------------------------------------------------ live state (dashboard)
def _tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall tau-b of two score vectors on the systems both have (scipy's O(S log S) algorithm); NaN if undefined."""
    import warnings

    from scipy.stats import kendalltau

    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.sum() < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant vector: NaN, with a warning
        return float(kendalltau(x[ok], y[ok]).statistic)


class BootstrapState(GroupState):
    """Merged state of one bootstrap group: per rule the sums of the done blocks, agreement between rules."""

    kind = "bootstrap"
    #: replicates per block on which the rules' agreement is measured (tau-b costs O(S log S) per replicate and pair)
    AGREE_REPLICATES = 10
    #: (rule pair, block) items read per poll
    AGREE_BATCH = 12

    def __init__(self, name: str, grp: Any, *, level: float, pool: int, agree_budget: float | None = None) -> None:
        """``agree_budget``: seconds of tau computations per poll (None: no limit; the rest waits for the next polls)."""
        from engine.kernels.ranking import min_rank
        from engine.kernels.summaries import BootstrapSums, SummaryReader

        super().__init__(name, grp)
        self.level, self.pool_cap, self.agree_budget = level, pool, agree_budget
        self.labels = labels(grp["rule"])
        self.systems = labels(grp["system"])
        self.S, self.R = len(self.systems), len(self.labels)
        self.n = int(grp["replicate_score"].shape[1])
        self.block = int(grp.attrs.get("block", 1))
        self.over = str(grp.attrs.get("over", ""))
        self.h_scores = grp["replicate_score"]
        self.reader = SummaryReader(grp, SUMMARY)
        self.point: np.ndarray | None = None
        self.rank: np.ndarray | None = None
        if "score" in grp:
            self.point = np.asarray(grp["score"][...], dtype=np.float64)
            self.rank = np.asarray(grp["rank"][...], dtype=np.float64) if "rank" in grp else min_rank(self.point)
        self.sums = [BootstrapSums(self.S) for _ in range(self.R)]
        self.agree_sum = np.zeros((self.R, self.R))
        self.agree_n = np.zeros((self.R, self.R), dtype=np.int64)
        self.agree_todo: list[tuple[int, int, int]] = []
        self.agree_turn = False
        # a candidate bootstrap's replicates rank different systems: mean Spearman over a pool of the first finished
        self.pool: list[dict[int, np.ndarray]] = [{} for _ in range(self.R)]
        self.pool_rho: list[float | None] = [None] * self.R
        self.full_tau = self._full_tau()
        self.stats: list[dict[str, Any] | None] = [None] * self.R

    def _full_tau(self) -> list[list[float | None]]:
        from engine.kernels.paircount import kendall_tau_b

        tau: list[list[float | None]] = [[1.0 if i == j else None for j in range(self.R)] for i in range(self.R)]
        if self.point is not None:
            for i in range(self.R):
                for j in range(i + 1, self.R):
                    tau[i][j] = tau[j][i] = json_number(kendall_tau_b(self.point[i], self.point[j]))
        return tau

    def _read_raw(self, keys: set[tuple[int, int]], cache: dict[tuple[int, int], np.ndarray], rows: int | None = None) -> None:
        """Replicate scores of the blocks ``keys`` (their first ``rows``) into ``cache``: one orthogonal selection per rule."""
        by_rule: dict[int, list[int]] = {}
        for ri, bi in sorted(keys - set(cache)):
            by_rule.setdefault(ri, []).append(bi)
        for ri, blocks in by_rule.items():
            ranges = [block_ids(bi, self.block, self.n) for bi in blocks]
            if rows is not None:
                ranges = [slice(r.start, min(r.stop, r.start + rows)) for r in ranges]
            ids = np.concatenate([np.arange(r.start, r.stop) for r in ranges])
            got = np.asarray(self.h_scores.get_orthogonal_selection((ri, ids, slice(None))), dtype=np.float64)
            at = 0
            for bi, r in zip(blocks, ranges):
                cache[(ri, bi)] = got[at : at + r.stop - r.start]
                at += r.stop - r.start

    def done_scores(self, ri: int) -> np.ndarray:
        """Replicate scores (replicates, S) of rule ``ri``'s blocks done so far, in block order (one read)."""
        blocks = [int(bi) for bi in np.flatnonzero(self.done[ri])]
        got: dict[tuple[int, int], np.ndarray] = {}
        self._read_raw({(ri, bi) for bi in blocks}, got)
        return np.concatenate([got[(ri, bi)] for bi in blocks]) if blocks else np.zeros((0, self.S))

    def poll(self) -> bool:
        new = self.new_blocks()
        if not new and not self.agree_todo:
            return False
        summaries = self.reader.read(new)
        pooled = {ri: sum(v.shape[0] for v in self.pool[ri].values()) for ri in range(self.R)}
        need = {(ri, bi) for (ri, bi), summ in zip(new, summaries) if summ is None}
        pool_add: list[tuple[int, int]] = []
        for ri, bi in new:
            if pooled[ri] < self.pool_cap:
                pool_add.append((ri, bi))
                pooled[ri] += block_ids(bi, self.block, self.n).stop - bi * self.block
        raw: dict[tuple[int, int], np.ndarray] = {}
        self._read_raw(need | set(pool_add), raw)
        for (ri, bi), summ in zip(new, summaries):
            self.sums[ri].add(bi, summ if summ is not None else bootstrap_block(raw[(ri, bi)]))
            self.done[ri, bi] = True
            self.agree_todo += [(ri, rj, bi) for rj in range(self.R) if rj != ri and self.done[rj, bi]]
        for ri, bi in pool_add:
            have = sum(v.shape[0] for v in self.pool[ri].values())
            self.pool[ri][bi] = raw[(ri, bi)][: self.pool_cap - have]
            self.pool_rho[ri] = None
        # the rankings first: with new blocks, the agreement waits for the next poll (every other poll at most)
        agreed = self._agree(raw) if not new or self.agree_turn or self.agree_budget is None else False
        self.agree_turn = bool(new) and not self.agree_turn
        self._restrict({r for r, _ in new}, raw)
        return bool(new) or agreed

    def _restrict(self, rules: set[int], raw: dict[tuple[int, int], np.ndarray]) -> None:
        """Kendall's W sums of the rules that got new blocks, on the systems every replicate has so far."""
        for ri in rules:
            stale = self.sums[ri].stale
            if stale:
                self._read_raw({(ri, bi) for bi in stale}, raw)
            for bi in stale:
                self.sums[ri].restrict(bi, raw[(ri, bi)])
            self.stats[ri] = None

    @property
    def busy(self) -> bool:  # type: ignore[override]
        """Work left that needs no new block: tau between rules on blocks already merged."""
        return bool(self.agree_todo)

    def _agree(self, raw: dict[tuple[int, int], np.ndarray]) -> bool:
        """Kendall tau-b between two rules on the replicates of a block both have done (the first :attr:`AGREE_REPLICATES`).

        At most :attr:`agree_budget` seconds per poll (``None``: no limit): a
        server opened on a finished store shows its rankings first and the
        agreement as it catches up (the page says over how many replicates).
        """
        if not self.agree_todo:
            return False
        start = time.perf_counter()
        done = 0
        k = self.AGREE_REPLICATES
        todo = self.agree_todo if self.agree_budget is None else self.agree_todo[: self.AGREE_BATCH]
        few: dict[tuple[int, int], np.ndarray] = {key: v[:k] for key, v in raw.items()}
        self._read_raw({(r, bi) for ri, rj, bi in todo for r in (ri, rj)}, few, rows=k)
        for ri, rj, bi in todo:
            if self.agree_budget is not None and done and time.perf_counter() - start > self.agree_budget:
                break
            taus = np.array([_tau_b(x, y) for x, y in zip(few[(ri, bi)], few[(rj, bi)])])
            ok = np.isfinite(taus)
            for a, b in ((ri, rj), (rj, ri)):
                self.agree_sum[a, b] += taus[ok].sum()
                self.agree_n[a, b] += int(ok.sum())
            done += 1
        self.agree_todo = self.agree_todo[done:]
        return done > 0

    def _pool_rho(self, ri: int) -> float:
        """Mean Spearman over the pooled replicates (:func:`engine.kernels.metrics.concordance`, in replicate order)."""
        from engine.kernels import metrics

        rho = self.pool_rho[ri]
        if rho is None:
            rows = [self.pool[ri][k] for k in sorted(self.pool[ri])]
            P = np.concatenate(rows) if rows else np.zeros((0, self.S))
            rho = self.pool_rho[ri] = float(metrics.concordance(P, method="spearman")) if P.shape[0] >= 2 else math.nan
        return rho

    def _ranking(self, ri: int) -> tuple[np.ndarray, np.ndarray, str]:
        """Score, rank and where they come from: the stored full-data ranking, else the mean replicate rank."""
        from engine.kernels.ranking import min_rank
        from engine.kernels.summaries import bootstrap_statistics

        if self.point is not None and self.rank is not None:
            return self.point[ri], self.rank[ri], "full data"
        mean_rank = bootstrap_statistics(np.zeros(self.S), self.sums[ri], level=self.level)["mean_rank"]
        return -mean_rank, min_rank(-mean_rank), "mean replicate rank"

    def _spearman(self, ri: int, st: Mapping[str, Any]) -> tuple[float, int, str]:
        """Mean Spearman, over how many replicates and which: from the sums, else from the pool."""
        sums = self.sums[ri]
        B = sums.replicates
        if sums.uniform:
            return st["mean_spearman"], B, "all replicates (from per-block sums)"
        rho_n = sum(v.shape[0] for v in self.pool[ri].values())
        note = (f"the first {rho_n} finished replicates (replicates rank different systems: O(B^2) pairs)"
                if rho_n < B else "all replicates")
        return self._pool_rho(ri), rho_n, note

    def _rule(self, ri: int) -> dict[str, Any]:
        from engine.kernels import metrics
        from engine.kernels.summaries import bootstrap_statistics

        cached = self.stats[ri]
        if cached is not None:
            return cached
        B = self.sums[ri].replicates
        score, rank, source = self._ranking(ri)
        st = bootstrap_statistics(score, self.sums[ri], level=self.level)
        leader = np.isfinite(score) & (rank == 1)
        tied = st["tied_with_leader"] & ~leader if B else np.zeros(self.S, dtype=bool)
        rho, rho_n, rho_note = self._spearman(ri, st)
        out: dict[str, Any] = {
            "rule": self.labels[ri], "ranking_source": source, "replicates_done": B,
            "score": json_numbers(score), "rank": json_ints(rank),
            "rank_low": json_numbers(st["rank_low"]), "rank_high": json_numbers(st["rank_high"]),
            "mean_rank": json_numbers(st["mean_rank"]),
            "leader": [int(i) for i in np.flatnonzero(leader)], "tied": [int(i) for i in np.flatnonzero(tied)],
            "kendall_w": json_number(st["kendall_w"]),
            "mean_spearman": json_number(rho), "spearman_replicates": int(rho_n), "spearman_over": rho_note,
            "order_stability": None, "pair_low": [None] * self.S, "pair_high": [None] * self.S,
            "rank_ub": [None] * self.S,
        }
        if B:
            out["order_stability"] = json_number(metrics.order_stability(score, st["prob_above"]))
            # Rank(UB), paired: the same definition while running and once finished (prob_above is exact from sums)
            out["rank_ub"] = json_numbers(metrics.rank_upper_bound(score, st["prob_above"], level=self.level))
            if self.level > 0.5:
                lo, hi = metrics.pairwise_rank_bounds(score, st["prob_above"], level=self.level)
                out["pair_low"], out["pair_high"] = json_ints(lo), json_ints(hi)
        self.stats[ri] = out
        return out

    def _agreement(self) -> dict[str, Any]:
        boot: list[list[float | None]] = [[None] * self.R for _ in range(self.R)]
        for i in range(self.R):
            boot[i][i] = 1.0 if self.sums[i].replicates else None
            for j in range(self.R):
                if i != j and self.agree_n[i, j]:
                    boot[i][j] = json_number(self.agree_sum[i, j] / self.agree_n[i, j])
        common = [[int(self.agree_n[i, j]) if i != j else int(self.sums[i].replicates) for j in range(self.R)]
                  for i in range(self.R)]
        # pairs whose tau waits for the next polls (blocks merged, tau not measured yet): the page says "computing",
        # not "no value", for them
        pending = sorted({(min(i, j), max(i, j)) for i, j, _ in self.agree_todo})
        return {"rules": self.labels, "full_data": self.full_tau, "replicates": boot, "common_replicates": common,
                "pending": [[i, j] for i, j in pending]}

    def to_json(self) -> dict[str, Any]:
        rules = [self._rule(ri) for ri in range(self.R)]
        rd = sum(r["replicates_done"] for r in rules)
        return {
            "name": self.name, "input": self.input, "kind": "bootstrap", "over": self.over,
            "replicates": self.n, "block": self.block, **self.progress(),
            "replicates_done": rd, "replicates_total": self.n * self.R, "n_systems": self.S, "systems": self.systems,
            "interval": "pairwise" if self.over == "systems" else "percentile",  # candidate bootstrap: biased replicate ranks
            "rules": rules,
            "agreement": self._agreement(),
        }


BOOTSTRAP = Kind("bootstrap", frozenset({"over", "replicates", "block"}), validate, plan, run_block=bootstrap_source,
                 check=check_input, memory=memory, chunks=chunks, summary=SUMMARY, dashboard=BootstrapState)
