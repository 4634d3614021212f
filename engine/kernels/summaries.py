"""Mergeable per-block summaries of a results store: what the live dashboard needs, in O(new blocks) per update.

Every block :func:`engine.sweep.run_sweep` writes also gets a small summary
in the ``summary`` sub-group of its store group (packed into one or two
chunks per block by its kind's :class:`SummaryCodec`), written before the block's ``done`` flag (so a block flagged
done has its summary, unless an older votebench wrote the store: then the reader computes it from the
block's values with the codec's ``block``).  Summaries of different blocks add up
(:meth:`BootstrapSums.add`), and the statistics of the union of the blocks
follow from the sums alone:

bootstrap (one rule, ``b`` replicates ``R`` of shape ``(b, S)``)
    ``rank_count (S, S)``: replicates in which system ``s`` has competition rank
    ``r + 1``; ``wins (S, S)``: replicates with ``R[:, i] > R[:, j]``;
    ``both (S, S)``: replicates in which both are present (diagonal: ``s``
    present); ``vectors (4, S)``: the sum of the average ranks among the
    systems present in every replicate of the block (0 elsewhere), the sum of
    the standardized rank deviations ``z`` (Spearman), present in every /
    in some replicate; ``scalars (4,)``: replicates, the sum of the tie terms
    ``sum_g (t^3 - t)`` (Kendall's W), replicates with a defined ``z`` and the
    sum of ``|z|^2``.
subsets (one rule and subset size, ``b`` repeats of ``tau``)
    ``stats (3,)``: finite values, their sum and sum of squares.
synthetic ``manipulation`` / ``rescaling`` (one variant, ``b`` replicates)
    ``stats (phi, value, 5)``: finite errors, their sum and sum of squares,
    finite taus and their sum.

:func:`bootstrap_statistics` turns merged bootstrap sums into exactly the
numbers :func:`engine.summarize` computes from all the replicates at once --
``rank_low``/``rank_high`` (numpy's "lower" and "higher" percentiles, read off the rank
histogram), ``prob_above``, ``tied_with_leader`` and ``kendall_w`` bit for
bit -- except ``mean_spearman``, a sum over replicate pairs that the sums give
up to floating-point rounding (``|difference| < 1e-12``).  Spearman's mean
needs every replicate to rank the same systems; a candidate (system)
bootstrap does not, and the dashboard then averages over a fixed pool of
replicates instead (and says so).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import VotebenchError
from engine.kernels.checks import check_level
from engine.kernels.paircount import pair_counts

__all__ = [
    "SUMMARY_GROUP", "BootstrapSums", "MomentSums", "SummaryCodec", "SummaryReader", "bootstrap_block", "bootstrap_statistics",
    "curve_block", "kendall_w_from_sums", "percentiles_from_counts", "read_block_summaries", "stats_codec", "subsets_block",
    "w_sums", "write_block_summary",
]

#: the sub-group of a store group that holds its per-block summaries
SUMMARY_GROUP = "summary"


# ------------------------------------------------------------------------------------ one block
def w_sums(R: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, float]:
    """Kendall's W sums of replicates ``R`` on the systems ``mask``: average-rank sums ``(S,)`` and tie-term sum.

    The ranks are the average ranks among the systems of ``mask`` (0 for the
    others); the tie term is ``sum over replicates of sum_g (t_g^3 - t_g)``
    over the groups of tied systems of ``mask``, as :func:`engine.kernels.metrics.kendall_w`.
    Both are whole or half-whole numbers, so sums over blocks are exact.
    """
    from engine.kernels.metrics import average_ranks
    from engine.kernels.ranking import tie_groups

    R = np.asarray(R, dtype=np.float64)
    S = R.shape[1]
    rank_sum = np.zeros(S)
    if not mask.any() or R.shape[0] == 0:
        return rank_sum, 0.0
    X = R[:, mask]
    rank_sum[mask] = average_ranks(X).sum(axis=0)
    first, last = tie_groups(np.sort(X, axis=-1))
    t = (last - first + 1).astype(np.float64)
    return rank_sum, float(np.sum(t * t - 1.0))


def _z_rows(R: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, int, float]:
    """Spearman's standardized rank deviations of rows that all rank the systems ``mask``: sum ``(S,)``, count, sum of squares."""
    from engine.kernels.metrics import average_ranks

    S = R.shape[1]
    n = int(mask.sum())
    if n < 2 or R.shape[0] == 0:
        return np.zeros(S), 0, 0.0
    d = np.where(mask, average_ranks(np.where(mask, R, np.nan)) - (n + 1) / 2.0, 0.0)
    ss = np.einsum("ij,ij->i", d, d)
    ok = ss > 0
    z = d[ok] / np.sqrt(ss[ok])[:, None]
    return z.sum(axis=0), int(ok.sum()), float(np.einsum("ij,ij->", z, z))


def bootstrap_block(R: np.ndarray) -> dict[str, np.ndarray]:
    """The summary of one block of bootstrap replicates (see the module docstring).

    Parameters
    ----------
    R : array_like, shape (b, S)
        Replicate scores, higher is better; ``NaN`` = system absent.

    Returns
    -------
    dict
        ``rank_count``, ``wins``, ``both`` (int64, ``(S, S)``), ``vectors``
        (float64, ``(4, S)``) and ``scalars`` (float64, ``(4,)``).
    """
    from engine.kernels.ranking import min_rank

    R = np.asarray(R, dtype=np.float64)
    if R.ndim != 2:
        raise VotebenchError(f"a bootstrap block must be (replicates, systems), got shape {R.shape}")
    b, S = R.shape
    present = ~np.isnan(R)
    ranks = min_rank(R)
    ok = present.ravel()
    cell = (np.arange(S)[None, :] * S + np.nan_to_num(ranks, nan=1.0).astype(np.int64) - 1).ravel()[ok]
    rank_count = np.bincount(cell, minlength=S * S).reshape(S, S)
    wins = pair_counts(R)  # the one pair-count kernel: int64, NaN counts for neither
    p = present.astype(np.int64)
    both = p.T @ p
    every, some = present.all(axis=0), present.any(axis=0)
    rank_sum, tie_sum = w_sums(R, every)
    uniform = bool((every == some).all())
    z_sum, z_n, z_sq = _z_rows(R, every) if uniform else (np.zeros(S), 0, 0.0)
    return {"rank_count": rank_count, "wins": wins, "both": both,
            "vectors": np.stack([rank_sum, z_sum, every.astype(np.float64), some.astype(np.float64)]),
            "scalars": np.array([b, tie_sum, z_n, z_sq], dtype=np.float64)}


def subsets_block(tau: np.ndarray) -> dict[str, np.ndarray]:
    """Summary of one block of task-subset repeats: ``stats = [finite count, sum, sum of squares]`` of ``tau``."""
    t = np.asarray(tau, dtype=np.float64).ravel()
    f = t[np.isfinite(t)]
    return {"stats": np.array([f.size, f.sum(), (f * f).sum()], dtype=np.float64)}


def curve_block(values: np.ndarray) -> dict[str, np.ndarray]:
    """Summary of one block of a synthetic curve: ``values`` is ``(2, phi, value, b)`` (error, tau).

    ``stats (phi, value, 5)``: finite errors, their sum and sum of squares,
    finite taus, their sum.
    """
    v = np.asarray(values, dtype=np.float64)
    err, tau = v[0], v[1]
    fe, ft = np.isfinite(err), np.isfinite(tau)
    e0, t0 = np.where(fe, err, 0.0), np.where(ft, tau, 0.0)
    return {"stats": np.stack([fe.sum(-1), e0.sum(-1), (e0 * e0).sum(-1), ft.sum(-1), t0.sum(-1)], axis=-1).astype(np.float64)}


# ------------------------------------------------------------------------------------ store
# A kind's summary is packed into at most two arrays with one chunk per block, so that a reader needs few reads per
# block; the packing carries a marker that is never 0 for a written block (chunks never written read as 0).
@dataclass(frozen=True)
class SummaryCodec:
    """How one perturbation kind's block summaries are computed and stored (:attr:`engine.sweep.Kind.summary`).

    Attributes
    ----------
    block : callable
        ``block(values) -> summary``: the summary of what one block wrote (a dict of arrays).
    layout : callable
        ``layout(grp) -> {name: (shape, dtype)}``: the packed arrays of one block, for a store group.
    pack : callable
        ``pack(summary) -> {name: array}`` in that layout, with a marker that is never 0.
    unpack : callable
        ``unpack(packed, shape) -> summary``, ``None`` for a block without a summary (marker 0).
    shape : callable
        ``shape(grp)``: what ``unpack`` needs to know of the group (read once per group).
    """

    block: Callable[[np.ndarray], dict[str, np.ndarray]]
    layout: Callable[[Any], dict[str, tuple[tuple[int, ...], str]]]
    pack: Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]
    unpack: Callable[[Mapping[str, np.ndarray], Any], dict[str, np.ndarray] | None]
    shape: Callable[[Any], Any] = lambda grp: None


def stats_codec(block: Callable[[np.ndarray], dict[str, np.ndarray]], shape: Callable[[Any], tuple[int, ...]]
                ) -> SummaryCodec:
    """A codec for summaries made of one float array ``stats`` of shape ``shape(grp)`` (packed after a marker 1.0)."""

    def layout(grp: Any) -> dict[str, tuple[tuple[int, ...], str]]:
        return {"stats": ((1 + math.prod(shape(grp)),), "float64")}

    def pack(summary: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"stats": np.concatenate([[1.0], np.asarray(summary["stats"], dtype=np.float64).ravel()])}

    def unpack(packed: Mapping[str, np.ndarray], stats_shape: tuple[int, ...]) -> dict[str, np.ndarray] | None:
        stats = np.asarray(packed["stats"], dtype=np.float64)
        return {"stats": stats[1:].reshape(stats_shape)} if stats[0] == 1.0 else None

    return SummaryCodec(block=block, layout=layout, pack=pack, unpack=unpack, shape=shape)


def write_block_summary(grp: Any, done_index: tuple[int, ...], values: np.ndarray, codec: SummaryCodec) -> None:
    """Write the summary of one finished block into ``grp/summary`` (creating its arrays on first use).

    Parameters
    ----------
    grp : zarr.Group
        A store group opened for writing.
    done_index : tuple of int
        The block's index in the group's ``done`` array.
    values : ndarray
        What the block wrote: replicate scores ``(b, S)`` (bootstrap), taus
        ``(b,)`` (subsets), ``(2, phi, value, b)`` (synthetic).
    codec : SummaryCodec
        The summary of the group's kind.

    Call it before the block's ``done`` flag is set: a reader that sees the
    flag then finds the summary.
    """
    layout = codec.layout(grp)
    lead = tuple(int(n) for n in grp["done"].shape)
    sub = grp.require_group(SUMMARY_GROUP)
    packed = codec.pack(codec.block(values))
    for name, (shape, dtype) in layout.items():
        arr = sub.require_array(name, shape=lead + shape, dtype=dtype, chunks=(1,) * len(lead) + shape, fill_value=0)
        arr[done_index] = np.asarray(packed[name]).astype(dtype)


class SummaryReader:
    """Reads the stored summaries of one store group, keeping its array handles (zarr reads metadata on every lookup).

    Parameters
    ----------
    grp : zarr.Group
        The store group.
    codec : SummaryCodec
        The summary of the group's kind.
    """

    def __init__(self, grp: Any, codec: SummaryCodec) -> None:
        self.grp, self.codec = grp, codec
        self.kind = str(grp.attrs.get("kind", ""))
        self.layout = codec.layout(grp)
        self.shape = codec.shape(grp)
        self.arrays: dict[str, Any] | None = None

    def _open(self) -> dict[str, Any] | None:
        if self.arrays is None and self.layout:
            try:
                sub = self.grp[SUMMARY_GROUP]
                self.arrays = {name: sub[name] for name in self.layout}
            except KeyError:  # no block written yet, or a store of an older votebench
                return None
        return self.arrays

    def read(self, indices: list[tuple[int, ...]]) -> list[dict[str, np.ndarray] | None]:
        """The summaries of the blocks ``indices`` (``None`` for a block without one).

        A few blocks are read with one orthogonal selection over the indices
        they span (zarr fetches the chunks concurrently); many, with one such
        read per leading index (one rule's blocks).
        """
        out: list[dict[str, np.ndarray] | None] = [None] * len(indices)
        arrays = self._open() if indices else None
        if arrays is None:
            return out
        axes = [sorted({idx[d] for idx in indices}) for d in range(len(indices[0]))]
        if math.prod(len(a) for a in axes) <= 4 * len(indices):  # one read of the few blocks around them
            got = {name: np.asarray(arr.get_orthogonal_selection(tuple(axes))) for name, arr in arrays.items()}
            pos = [{v: i for i, v in enumerate(a)} for a in axes]
            for k, idx in enumerate(indices):
                at = tuple(p[v] for p, v in zip(pos, idx))
                out[k] = self.codec.unpack({name: v[at] for name, v in got.items()}, self.shape)
            return out
        by_lead: dict[tuple[int, ...], list[int]] = {}
        for k, idx in enumerate(indices):
            by_lead.setdefault(tuple(idx[:-1]), []).append(k)
        for lead, ks in by_lead.items():
            last = [indices[k][-1] for k in ks]
            got = {name: np.asarray(arr.get_orthogonal_selection((*lead, last))) for name, arr in arrays.items()}
            for j, k in enumerate(ks):
                out[k] = self.codec.unpack({name: v[j] for name, v in got.items()}, self.shape)
        return out


def read_block_summaries(grp: Any, indices: list[tuple[int, ...]], codec: SummaryCodec) -> list[dict[str, np.ndarray] | None]:
    """The stored summaries of the blocks ``indices`` of a store group; ``None`` for a block without one."""
    return SummaryReader(grp, codec).read(indices)


# ------------------------------------------------------------------------------------ merged sums
@dataclass
class BootstrapSums:
    """Merged bootstrap summaries of one rule (see :func:`bootstrap_block`).

    Kendall's W needs the rank sums of every block on the systems present in
    *every* replicate merged so far: when a block lacks a system the earlier
    blocks had, the blocks whose own set differs are listed in :attr:`stale`
    and :meth:`restrict` replaces their contribution (from their replicate
    scores).  Spearman's mean from sums needs every replicate to rank the same
    systems (:attr:`uniform`).
    """

    S: int
    replicates: int = 0
    rank_count: np.ndarray = field(init=False)
    wins: np.ndarray = field(init=False)
    both: np.ndarray = field(init=False)
    mask: np.ndarray | None = None
    uniform: bool = True
    z_sum: np.ndarray = field(init=False)
    z_n: int = 0
    z_sq: float = 0.0
    w_parts: dict[Any, tuple[np.ndarray, np.ndarray, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        S = self.S
        self.rank_count = np.zeros((S, S), dtype=np.int64)
        self.wins = np.zeros((S, S), dtype=np.int64)
        self.both = np.zeros((S, S), dtype=np.int64)
        self.z_sum = np.zeros(S)

    def add(self, key: Any, summary: Mapping[str, np.ndarray]) -> None:
        """Merge the summary of block ``key`` (each block once)."""
        if key in self.w_parts:
            raise VotebenchError(f"block {key!r} is merged twice")
        vec, sc = np.asarray(summary["vectors"], dtype=np.float64), np.asarray(summary["scalars"], dtype=np.float64)
        every, some = vec[2] > 0.5, vec[3] > 0.5
        self.replicates += int(sc[0])
        self.rank_count += np.asarray(summary["rank_count"], dtype=np.int64)
        self.wins += np.asarray(summary["wins"], dtype=np.int64)
        self.both += np.asarray(summary["both"], dtype=np.int64)
        if self.uniform:
            same = bool((every == some).all()) and (self.mask is None or bool((every == self.mask).all()))
            if same:
                self.z_sum += vec[1]
                self.z_n += int(sc[2])
                self.z_sq += float(sc[3])
            else:
                self.uniform = False
        self.mask = every.copy() if self.mask is None else self.mask & every
        self.w_parts[key] = (every, vec[0].copy(), float(sc[1]))

    @property
    def stale(self) -> list[Any]:
        """Blocks whose W sums are on a larger set of systems than :attr:`mask` (only when W is defined)."""
        if self.mask is None or self.mask.sum() < 2:
            return []
        return [k for k, (m, _, _) in self.w_parts.items() if not np.array_equal(m, self.mask)]

    def restrict(self, key: Any, R: np.ndarray) -> None:
        """Recompute block ``key``'s W sums on :attr:`mask` from its replicate scores ``R``."""
        assert self.mask is not None  # called for the keys of stale_keys() only
        rank_sum, tie = w_sums(R, self.mask)
        self.w_parts[key] = (self.mask.copy(), rank_sum, tie)

    def w_totals(self) -> tuple[np.ndarray, float] | None:
        """Rank sums and tie-term sum over every block, or ``None`` while some block is :attr:`stale`."""
        if self.stale:
            return None
        rank_sum = np.zeros(self.S)
        tie = 0.0
        for _, rs, t in self.w_parts.values():
            rank_sum += rs
            tie += t
        return rank_sum, tie


@dataclass
class MomentSums:
    """Merged count, sum and sum of squares of finite values (subset taus, synthetic errors), any shape."""

    count: np.ndarray
    total: np.ndarray
    squares: np.ndarray

    @classmethod
    def zeros(cls, shape: tuple[int, ...]) -> MomentSums:
        return cls(np.zeros(shape), np.zeros(shape), np.zeros(shape))

    def add(self, count: np.ndarray, total: np.ndarray, squares: np.ndarray) -> None:
        self.count = self.count + count
        self.total = self.total + total
        self.squares = self.squares + squares

    def mean(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.total / np.maximum(self.count, 1), np.nan)

    def std(self) -> np.ndarray:
        """Sample standard deviation (``NaN`` below two values)."""
        m = self.mean()
        with np.errstate(invalid="ignore", divide="ignore"):
            var = (self.squares - self.count * m * m) / np.maximum(self.count - 1, 1)
        return np.where(self.count > 1, np.sqrt(np.maximum(var, 0.0)), np.nan)


# ------------------------------------------------------------------------------------ statistics
def percentiles_from_counts(counts: np.ndarray, q: np.ndarray | Sequence[float], method: str = "linear") -> np.ndarray:
    """numpy's ``"linear"`` (or ``"lower"``, ``"higher"``) percentiles of ranks given as a histogram, bit for bit.

    Parameters
    ----------
    counts : array_like, shape (S, K)
        ``counts[s, r]``: how often system ``s`` took the value ``r + 1``.
    q : array_like, shape (Q,)
        Percentiles in [0, 100].

    Returns
    -------
    ndarray, shape (Q, S)
        What ``numpy.nanpercentile`` returns for the ``n_s = counts[s].sum()``
        values ``1 .. K`` repeated by their counts: the sorted values at
        positions ``floor(v)`` and ``floor(v) + 1`` with ``v = (n_s - 1) q / 100``,
        interpolated exactly as numpy does (``a + (b - a) g``, or
        ``b - (b - a) (1 - g)`` when ``g >= 0.5``); ``method="lower"``: the
        sorted value at ``floor(v)``, ``"higher"``: at ``ceil(v)``; ``NaN`` when ``n_s = 0``.
    """
    if method not in ("linear", "lower", "higher"):
        raise VotebenchError(f"percentile method must be 'linear', 'lower' or 'higher', not {method!r}")
    counts = np.asarray(counts, dtype=np.int64)
    quant = np.true_divide(np.asarray(q, dtype=np.float64), 100)
    cum = np.cumsum(counts, axis=1)  # (S, K)
    n = cum[:, -1] if counts.shape[1] else np.zeros(counts.shape[0], dtype=np.int64)
    out = np.full((quant.size, counts.shape[0]), np.nan)
    have = n > 0
    if not have.any():
        return out
    c, nn = cum[have], n[have]

    def value(pos: np.ndarray) -> np.ndarray:  # sorted value at 0-based position pos: smallest r with cum[r] > pos
        return (c > pos[:, None]).argmax(axis=1).astype(np.float64) + 1.0

    for i, qq in enumerate(quant):
        virtual = (nn - 1) * qq
        if method != "linear":
            pos = np.floor(virtual) if method == "lower" else np.minimum(np.ceil(virtual), nn - 1)
            out[i, have] = value(pos.astype(np.int64))
            continue
        prev = np.floor(virtual)
        above = virtual >= nn - 1
        prev_pos = np.where(above, nn - 1, prev).astype(np.int64)
        next_pos = np.where(above, nn - 1, prev + 1).astype(np.int64)
        gamma = virtual - np.where(above, -1.0, prev)  # numpy's gamma after its bound fix (irrelevant when a == b)
        a, b = value(prev_pos), value(next_pos)
        diff = b - a
        res = a + diff * gamma
        res = np.where(gamma >= 0.5, b - diff * (1 - gamma), res)
        out[i, have] = res
    return out


def kendall_w_from_sums(rank_sum: np.ndarray, judges: int, tie_sum: float) -> float:
    """Kendall's W from the average-rank sums of its ``n = len(rank_sum)`` candidates, as :func:`engine.kernels.metrics.kendall_w`.

    ``W = 12 S_dev / (J^2 (n^3 - n) - J T)`` with ``S_dev = sum_s (R_s - J (n + 1) / 2)^2``;
    the same floating-point operations in the same order as ``kendall_w``, so
    equal sums give the same number.  ``NaN`` when the denominator is 0.
    """
    Rs = np.asarray(rank_sum, dtype=np.float64)
    n = np.float64(Rs.size)
    J = np.float64(judges)
    dev = Rs - (J * (n + 1) / 2.0)
    s_dev = np.sum(dev * dev, axis=-1)
    den = J * J * (n**3 - n) - J * np.float64(tie_sum)
    if not den > 0:
        return math.nan
    return float(np.clip(12.0 * s_dev / den, 0.0, 1.0))


def bootstrap_statistics(point_score: np.ndarray, sums: BootstrapSums, *, level: float = 0.95) -> dict[str, Any]:
    """The statistics of :func:`engine.summarize` from merged bootstrap sums.

    Parameters
    ----------
    point_score : array_like, shape (S,)
        Full-data scores (higher is better; ``NaN`` = not ranked).
    sums : BootstrapSums
        The merged summaries of the replicates done.
    level : float
        Interval coverage and tie level, as :func:`engine.summarize`.

    Returns
    -------
    dict
        ``rank_low``, ``rank_high`` (S,), ``prob_above`` (S, S),
        ``tied_with_leader`` (S,), ``kendall_w`` (``NaN`` while a block's W sums
        wait for :meth:`BootstrapSums.restrict`), equal to ``summarize``'s;
        ``mean_spearman`` (``NaN`` unless :attr:`BootstrapSums.uniform`; equal
        up to rounding), ``mean_rank`` (S,) and ``replicates``.
    """
    from engine.kernels import metrics

    check_level(level)
    point = np.asarray(point_score, dtype=np.float64)
    S, B = sums.S, sums.replicates
    low = percentiles_from_counts(sums.rank_count, [50.0 * (1.0 - level)], method="lower")[0]
    high = percentiles_from_counts(sums.rank_count, [50.0 * (1.0 + level)], method="higher")[0]
    both = sums.both.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        prob = np.where(both > 0, sums.wins / np.where(both > 0, both, 1.0), np.nan)
        present = np.diag(sums.both).astype(np.float64)
        mean_rank = np.where(present > 0, (sums.rank_count @ np.arange(1.0, S + 1)) / np.maximum(present, 1), np.nan)
    tied = metrics.tied_with_leader(point, prob, level=level) if S else np.zeros(0, dtype=bool)
    w = math.nan
    if sums.mask is not None and sums.mask.sum() >= 2 and B >= 2:
        totals = sums.w_totals()
        if totals is not None:
            w = kendall_w_from_sums(totals[0][sums.mask], B, totals[1])
    rho = math.nan
    if sums.uniform and sums.z_n >= 2:
        sq = float(sums.z_sum @ sums.z_sum)
        rho = (sq - sums.z_sq) / (sums.z_n * (sums.z_n - 1))
    return {"rank_low": low, "rank_high": high, "prob_above": prob, "tied_with_leader": tied, "kendall_w": w,
            "mean_spearman": rho, "mean_rank": mean_rank, "replicates": B}
