"""Majority-relation rules in blocks of the system-pair matrix, and streamed over instance chunks.

The pairwise rules (Copeland, Condorcet, Minimax, Baldwin, Success Rate, Pavao's Copeland, the
battles' win rate) read
the win matrix ``wins[i, j] = sum_t w_t [X_ti > X_tj]`` and the pair-weight matrix
``pairs[i, j] = sum_t w_t [X_ti, X_tj both present]``.  Their kernels build both ``(S, S)``
matrices at once, in float64, for every batch element: 10,000 systems need 0.8 GB per matrix,
a stack of bootstrap weight vectors 0.8 GB per replicate.  Here the same counts are made for a
block of rows at a time (:func:`block_rows` rows; the rows of the transposed matrix by a second
comparison) and reduced to one value per row system before the next block, so memory is
``O(rows x S)`` whatever ``S``.  Every count is a whole number (unweighted, or whole-number task
weights such as bootstrap multiplicities), exact in any order, so the blocked scores equal the
kernels' bit for bit (tests/kernels/test_pairblock.py; Baldwin's tie tolerance is taken per profile, not
over a batch of profiles, which only matters for Borda totals above 5e11); other weights keep the
kernels' own path.  A stack of weight vectors for one profile (bootstrap multiplicities) is
evaluated once per distinct vector.

For chunked (dask) instance-level data, :func:`engine.labelled.stream.stream_within` computes the within-task step of
these rules at levels ``two`` and ``one`` as integer ``wins`` and ``pairs`` partial sums per
(task, instance) chunk, summed over the instance chunks (a tree reduction of integers: the same
result for any chunking and order) and turned into task-level scores one task chunk at a time.

The block size is :data:`DEFAULT_ROWS` rows, or the environment variable ``VOTEBENCH_PAIR_ROWS``
(tests force tiny blocks with it), or the ``rows`` argument.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from engine.kernels.exact import SUM_BITS, TIE_RTOL, anchor, digits, digits_to_float, ordered_sum, tame
from engine.kernels.paircount import dense_ranks, greater_counts, stack_counts, win_counts
from engine.kernels.social import baldwin_round, majority_beats, worst_defeat

__all__ = [
    "dense_batch",
    "DEFAULT_ROWS",
    "ROWS_ENV",
    "BLOCKED_RULES",
    "block_rows",
    "forced_rows",
    "use_blocks",
    "blocked_scores",
    "streams",
    "chunk_counts",
    "finish_counts",
    "blocks_prob_above",
    "prob_above_blocked",
]

#: rows of the system-pair matrix per block (the issue's "rows of 512 systems")
DEFAULT_ROWS = 512
#: environment variable overriding the rows per block (and forcing the blocked path, for tests)
ROWS_ENV = "VOTEBENCH_PAIR_ROWS"
#: cells of one comparison or product block (16M: 16 MB of booleans, 128 MB of float64)
_CELLS = 1 << 24
#: pair matrices up to this many cells (all batch elements) stay on the kernels' own path unless forced
_SMALL = 1 << 22


def forced_rows() -> int | None:
    """Rows per block set by ``VOTEBENCH_PAIR_ROWS`` (``None`` when unset).

    Raises
    ------
    ValueError
        When the variable is set to something other than a positive whole number.
    """
    raw = os.environ.get(ROWS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{ROWS_ENV} must be a positive whole number of rows, got {raw!r}")
    return int(raw)


def block_rows(n_systems: int, batch: int = 1, rows: int | None = None) -> int:
    """Rows of the pair matrix per block for ``n_systems`` systems and ``batch`` weight vectors.

    ``rows`` (or ``VOTEBENCH_PAIR_ROWS``, or :data:`DEFAULT_ROWS`), reduced so that one block of
    ``batch x rows x n_systems`` float64 sums stays within 128 MB; at least 1, at most ``n_systems``.
    """
    r = rows if rows is not None else (forced_rows() or DEFAULT_ROWS)
    r = min(int(r), max(1, _CELLS // max(1, batch * n_systems)))
    return max(1, min(r, n_systems))


#: the rules computed here, and how a block of rows becomes one value per row system
BLOCKED_RULES = ("baldwin", "condorcet", "copeland", "minimax", "pavao_copeland", "relative_difference", "success_rate",
                 "win_rate")


def _whole_weights(weights: Any, n_tasks: int) -> np.ndarray | None | Literal[False]:
    """Weights as a float64 stack ``(B, T)`` of whole numbers, ``None`` for no weights, ``False`` when unsupported."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 0 or w.shape[-1] != n_tasks or not np.isfinite(w).all() or (w < 0).any():
        return False  # the kernels raise the proper error
    if not np.array_equal(w, np.round(w)) or np.abs(w).max(initial=0.0) >= 2.0**40:
        return False
    w2 = w.reshape(-1, n_tasks)
    if not (w2.sum(axis=-1) > 0).all():
        return False
    return w2


def dense_batch(X: np.ndarray) -> int:
    """Batch elements whose dense pair matrices fit the cell budget together (``X`` (..., T, S)), or 0 when a
    single element's do not or a row block is forced: then :func:`blocked_scores` is the path.  A batch
    that is large only in its elements is run densely in slices of this many elements (each element is
    computed alone either way, so the slices do not show)."""
    S = np.asarray(X).shape[-1]
    if forced_rows() is not None or S * S > _SMALL:
        return 0
    return max(1, _SMALL // max(1, S * S))


def use_blocks(rule_name: str, X: np.ndarray, weights: Any = None, rows: int | None = None) -> bool:
    """Whether :func:`blocked_scores` handles this call (and should, for memory).

    A supported rule, whole-number weights, and pair matrices larger than 4M cells over the batch,
    or a block size forced by ``rows`` / ``VOTEBENCH_PAIR_ROWS``.
    """
    if rule_name not in BLOCKED_RULES:
        return False
    X = np.asarray(X)
    if X.ndim < 2 or X.shape[-1] < 2 or X.shape[-2] < 1:
        return False
    w = _whole_weights(weights, X.shape[-2])
    if w is False:
        return False
    if rule_name == "relative_difference" and bool((X < 0).any()):
        return False  # the kernel names the negative scores
    bx = int(np.prod(X.shape[:-2], dtype=np.int64))
    bw = 1 if w is None else int(np.asarray(w).shape[0])
    if bx > 1 and bw > 1 and (np.asarray(weights).ndim < 2 or np.asarray(weights).shape[:-1] != X.shape[:-2]):
        return False
    if rows is not None or forced_rows() is not None:
        return True
    return max(bx, bw) * X.shape[-1] ** 2 > _SMALL


# ------------------------------------------------------------------------------------------ counts
def _counts(x: np.ndarray, pres: np.ndarray, W: np.ndarray | None, i0: int, i1: int, full: bool,
            ranks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``wins``, ``wins`` transposed and ``pairs`` of rows ``i0:i1`` for one profile ``x`` (T, S).

    Returns float64 arrays ``(B, r, S)`` (``B = 1`` without weights): ``wins[b, i, j]``,
    ``winsT[b, i, j] = wins[b, j, i]`` and ``pairs[b, i, j]`` for ``i`` in the block.
    """
    pf = pres.astype(np.float64)
    if W is None:
        rk = dense_ranks(x) if ranks is None else ranks
        if full:  # every row: the whole matrix, half the comparisons for judges without ties
            wins = win_counts(rk, pres).astype(np.float64)[None]
            return wins, np.swapaxes(wins, -1, -2).copy(), (pf.T @ pf)[None]
        wins = greater_counts(rk, pres, i0, i1).astype(np.float64)[None]
        winsT = np.swapaxes(wins, -1, -2).copy() if full else greater_counts(rk, pres, i0, i1, less=True).astype(np.float64)[None]
        pairs = (pf[:, i0:i1].T @ pf)[None]  # 0/1 products: exact
        return wins, winsT, pairs
    wins = stack_counts(x, W, i0, i1, cells=_CELLS)  # one comparison per block of tasks for every weight vector
    winsT = np.swapaxes(wins, -1, -2).copy() if full else stack_counts(x, W, i0, i1, less=True, cells=_CELLS)
    pairs = np.einsum("bt,ti,tj->bij", W, pf[:, i0:i1], pf, optimize=True)
    return wins, winsT, pairs


def _pts_columns(x: np.ndarray, pres: np.ndarray, W: np.ndarray | None, cols: np.ndarray) -> np.ndarray:
    """``wins[:, cols] + ties[:, cols] / 2`` for one profile: ``(B, S, len(cols))`` (zero where ``i == j``), from the
    pair-count kernel's counts of the rows ``cols`` (``ties = pairs - wins - wins^T``; halves of whole numbers: exact)."""
    Wk = np.ones((1, x.shape[0])) if W is None else W
    beaten = np.swapaxes(stack_counts(x, Wk, index=cols, less=True), -1, -2)  # wins[i, c]
    beat = np.swapaxes(stack_counts(x, Wk, index=cols), -1, -2)  # wins[c, i]
    pf = pres.astype(np.float64)
    pairs = np.einsum("bt,ti,tj->bij", Wk, pf, pf[:, cols], optimize=True)
    pts = beaten + 0.5 * (pairs - beaten - beat)
    pts[:, cols, np.arange(cols.size)] = 0.0
    return pts


# ------------------------------------------------------------------------------------------ per-rule reducers
def _offdiag(i0: int, i1: int, S: int) -> np.ndarray:
    """``(r, S)`` mask of the off-diagonal cells of rows ``i0:i1``."""
    m = np.ones((i1 - i0, S), dtype=bool)
    m[np.arange(i1 - i0), np.arange(i0, i1)] = False
    return m


def _copeland(wins: np.ndarray, winsT: np.ndarray, pairs: np.ndarray, present: np.ndarray, i0: int, i1: int,
              state: dict[str, Any]) -> None:
    beats, beaten = majority_beats(wins, winsT, present[:, i0:i1], present)
    state["out"][:, i0:i1] = beats - beaten


def _condorcet(wins: np.ndarray, winsT: np.ndarray, pairs: np.ndarray, present: np.ndarray, i0: int, i1: int,
               state: dict[str, Any]) -> None:
    state["out"][:, i0:i1] = majority_beats(wins, winsT, present[:, i0:i1], present)[0]


def _minimax(wins: np.ndarray, winsT: np.ndarray, pairs: np.ndarray, present: np.ndarray, i0: int, i1: int,
             state: dict[str, Any]) -> None:
    state["out"][:, i0:i1] = worst_defeat(wins, winsT, present)


def _pavao(wins: np.ndarray, winsT: np.ndarray, pairs: np.ndarray, present: np.ndarray, i0: int, i1: int,
           state: dict[str, Any]) -> None:
    margin = wins - winsT
    tol = TIE_RTOL * pairs
    pair_w = np.where(margin > tol, 1.0, np.where(margin < -tol, 0.0, 0.5))
    mask = present[:, i0:i1, None] & present[:, None, :] & _offdiag(i0, i1, wins.shape[-1])
    state["out"][:, i0:i1] = ordered_sum(np.where(mask, pair_w, 0.0), axis=-1)


def _success(wins: np.ndarray, winsT: np.ndarray, pairs: np.ndarray, present: np.ndarray, i0: int, i1: int,
             state: dict[str, Any]) -> None:
    mask = present[:, i0:i1, None] & present[:, None, :] & _offdiag(i0, i1, wins.shape[-1])
    state["lo"] = np.minimum(state["lo"], np.where(mask, pairs, np.inf).min(axis=(-2, -1), initial=np.inf))
    state["hi"] = np.maximum(state["hi"], np.where(mask, pairs, -np.inf).max(axis=(-2, -1), initial=-np.inf))
    pair_w = np.where(pairs > 0, wins / np.where(pairs > 0, pairs, 1.0), 0.0)
    state["out"][:, i0:i1] = ordered_sum(np.where(mask, pair_w, 0.0), axis=-1)
    state["whole"][:, i0:i1] = ordered_sum(np.where(mask, wins, 0.0), axis=-1)


def _baldwin(wins: np.ndarray, winsT: np.ndarray, pairs: np.ndarray, present: np.ndarray, i0: int, i1: int,
             state: dict[str, Any]) -> None:
    ties = pairs - wins - winsT
    ties[:, np.arange(i1 - i0), np.arange(i0, i1)] = 0.0
    pts = wins + 0.5 * np.maximum(ties, 0.0)
    state["abs"][:, i0:i1] = np.abs(pts).sum(axis=-1)
    state["out"][:, i0:i1] = np.einsum("bij,bj->bi", pts, present.astype(np.float64))


def _win_rate(wins: np.ndarray, winsT: np.ndarray, pairs: np.ndarray, present: np.ndarray, i0: int, i1: int,
              state: dict[str, Any]) -> None:
    ties = pairs - wins - winsT
    ties[:, np.arange(i1 - i0), np.arange(i0, i1)] = 0.0
    ties = np.maximum(ties, 0.0)
    w_row, w_col, t_row = wins.sum(axis=-1), winsT.sum(axis=-1), ties.sum(axis=-1)  # whole numbers: exact
    state["out"][:, i0:i1] = 2.0 * w_row + t_row
    state["whole"][:, i0:i1] = 2.0 * (w_row + w_col + t_row)


_REDUCERS: dict[str, Callable[..., None]] = {
    "copeland": _copeland, "condorcet": _condorcet, "minimax": _minimax, "pavao_copeland": _pavao,
    "success_rate": _success, "baldwin": _baldwin, "win_rate": _win_rate,
}


def _finish(rule: str, state: dict[str, Any], present: np.ndarray, x: np.ndarray, pres: np.ndarray,
            W: np.ndarray | None) -> np.ndarray:
    """One score per system from the per-row values of every block (the kernels' final steps)."""
    out = state["out"]
    if rule == "copeland":
        return np.where(present, out.astype(np.float64), np.nan)
    if rule == "condorcet":
        n_present = present.sum(axis=-1, keepdims=True)
        return np.where(present, (present & (out == n_present - 1)).astype(np.float64), np.nan)
    if rule == "minimax":
        return np.where(present, 0.0 - out + 0.0, np.nan)
    if rule == "pavao_copeland":
        n = present.sum(axis=-1)[..., None]
        return np.where(present, out / np.maximum(n - 1, 1), np.nan)
    if rule == "success_rate":
        n = present.sum(axis=-1)
        res = np.where(present, out / np.maximum(n - 1, 1)[..., None], np.nan)
        lo, hi = state["lo"], state["hi"]
        same = (lo == hi) & (lo > 0)
        if same.any():  # complete data: one exact sum of wins divided once (as the kernel)
            scale = (np.where(same, lo, 1.0) * np.maximum(n - 1, 1))[..., None]
            res = np.where(same[..., None] & present, state["whole"] / scale, res)
        return res
    if rule == "baldwin":
        return _baldwin_rounds(state, present, x, pres, W)
    if rule == "win_rate":  # battles won, ties half, over battles played (engine.kernels.battles.win_rate)
        num, den = out, state["whole"]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    raise AssertionError(rule)  # pragma: no cover


def _baldwin_rounds(state: dict[str, Any], present: np.ndarray, x: np.ndarray, pres: np.ndarray,
                    W: np.ndarray | None) -> np.ndarray:
    """Baldwin's elimination from the initial Borda totals, eliminated columns recomputed from the data.

    Borda totals among the alive systems are sums of halves (whole-number weights): exact in any
    grouping, so the rounds are those of :func:`engine.kernels.social.baldwin_from_counts`.
    """
    borda = state["out"].copy()
    tol = TIE_RTOL * max(1.0, float(state["abs"].max(initial=0.0)))
    alive = present.copy()
    score = np.where(alive, 0.0, np.nan)
    n_s = borda.shape[-1]
    for rnd in range(n_s):
        step = baldwin_round(borda, alive, score, tol, rnd)
        if step is None:
            break
        out, score, alive = step
        cols = np.flatnonzero(out.any(axis=0))
        for c0 in range(0, cols.size, max(1, _CELLS // max(1, x.shape[0] * n_s))):
            cc = cols[c0 : c0 + max(1, _CELLS // max(1, x.shape[0] * n_s))]
            pc = _pts_columns(x, pres, W, cc)  # (B, S, c)
            borda -= np.einsum("bic,bc->bi", pc, out[:, cc].astype(np.float64))
    return np.where(alive, present.sum(axis=-1, keepdims=True).astype(np.float64), score)


def _one_profile(rule: str, x: np.ndarray, W: np.ndarray | None, rows: int | None, stack: bool = False) -> np.ndarray:
    """Scores ``(B, S)`` of one profile ``x`` (T, S) under ``B`` weight vectors (one without weights)."""
    if rule == "relative_difference":
        return _reldiff_profile(tame(np.asarray(x, dtype=np.float64), below=SUM_BITS)[0], W, rows, stack)  # scale-free
    T, S = x.shape
    pres = ~np.isnan(x)
    B = 1 if W is None else W.shape[0]
    if rule in ("pavao_copeland", "success_rate"):  # present on some task of positive weight
        present = (pres.sum(axis=0) > 0)[None] if W is None else (W @ pres.astype(np.float64)) > 0
    else:
        present = np.broadcast_to(pres.any(axis=0), (B, S))
    r = block_rows(S, B, rows)
    state: dict[str, Any] = {"out": np.zeros((B, S)), "abs": np.zeros((B, S)), "whole": np.zeros((B, S)),
                             "lo": np.full(B, np.inf), "hi": np.full(B, -np.inf)}
    reduce = _REDUCERS[rule]
    xs = np.where(pres, x, np.nan)
    ranks = dense_ranks(xs) if W is None else None
    for i0 in range(0, S, r):
        i1 = min(S, i0 + r)
        wins, winsT, pairs = _counts(xs, pres, W, i0, i1, (i0 == 0 and i1 == S), ranks)
        reduce(wins, winsT, pairs, present, i0, i1, state)
    return _finish(rule, state, present, xs, pres, W)


def _reldiff_terms(xs: np.ndarray, xall: np.ndarray) -> np.ndarray:
    """``(a - b) / (a + b)`` (0 where ``a + b`` is not positive or a score is missing) for rows ``xs`` (t, r)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ssum = xs[:, :, None] + xall[:, None, :]
        return np.where(ssum > 0, (xs[:, :, None] - xall[:, None, :]) / np.where(ssum > 0, ssum, 1.0), 0.0)


def _reldiff_profile(x: np.ndarray, W: np.ndarray | None, rows: int | None, stack: bool) -> np.ndarray:
    """Relative Difference (B, S) of one profile in row blocks, with the kernel's own summation.

    ``stack`` (a stack of weight vectors for one profile): per block of tasks, exactly summed products
    with one digit anchor for the block's whole (S, S) term matrix, blocks added in task order;
    otherwise one task after the other (:func:`engine.kernels.baselines.relative_difference_across`).
    """
    from engine.kernels.baselines import relative_difference_terms  # only this baseline's blocks need it

    T, S = x.shape
    pres = ~np.isnan(x)
    pf = pres.astype(np.float64)
    Wk = np.ones((1, T)) if W is None else W
    B = Wk.shape[0]
    present = (Wk @ pf) > 0
    r = block_rows(S, B, rows)
    step = max(1, (1 << 22) // (S * S))  # the tasks per block of engine.kernels.social.task_pair_sums
    tops = []
    if stack:  # the digit anchor of every block of tasks, over its whole term matrix
        for t0 in range(0, T, step):
            m = 0.0
            for i0 in range(0, S, r):
                m = max(m, float(np.abs(_reldiff_terms(x[t0 : t0 + step, i0 : i0 + r], x[t0 : t0 + step])).max(initial=0.0)))
            tops.append(anchor(m))
    out = np.zeros((B, S))
    for i0 in range(0, S, r):
        i1 = min(S, i0 + r)
        num = np.zeros((B, i1 - i0, S))
        if stack:
            for bi, t0 in enumerate(range(0, T, step)):
                g = _reldiff_terms(x[t0 : t0 + step, i0:i1], x[t0 : t0 + step]).reshape(-1, (i1 - i0) * S)
                D = digits(g, tops[bi]).reshape(g.shape[0], -1)
                K = Wk[:, t0 : t0 + step]
                tot = K @ D if float(np.abs(K).sum(axis=-1).max(initial=0.0)) < 2.0**21 else \
                    K.astype(np.int64) @ D.astype(np.int64)
                num += (digits_to_float(tot.reshape(B, (i1 - i0) * S, -1), tops[bi]) / 1.0).reshape(B, i1 - i0, S)
        else:
            diff = np.empty((i1 - i0, S))
            ssum = np.empty((i1 - i0, S))
            for b in range(B):
                for t in range(T):
                    wt = Wk[b, t]
                    if wt == 0.0:
                        continue
                    num[b] += relative_difference_terms(x[t, i0:i1], x[t], wt, diff, ssum)
        den = np.einsum("bt,ti,tj->bij", Wk, pf[:, i0:i1], pf, optimize=True)
        pair_w = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
        mask = present[:, i0:i1, None] & present[:, None, :] & _offdiag(i0, i1, S)
        out[:, i0:i1] = ordered_sum(np.where(mask, pair_w, 0.0), axis=-1)
    n = present.sum(axis=-1)[..., None]
    return np.where(present, out / np.maximum(n - 1, 1), np.nan)


def blocked_scores(rule: str, X: np.ndarray, weights: Any = None, *, rows: int | None = None) -> np.ndarray:
    """The scores of a pairwise rule computed in blocks of rows of the system-pair matrix.

    Parameters
    ----------
    rule : str
        One of :data:`BLOCKED_RULES`.
    X : ndarray, shape (..., T, S)
        Oriented scores, ``NaN`` = missing.
    weights : ndarray, shape (T,) or (..., T), optional
        Whole-number task weights (e.g. bootstrap multiplicities for one profile).
    rows : int, optional
        Rows per block (default :func:`block_rows`).

    Returns
    -------
    ndarray, shape (..., S)
        The scores of the rule's kernel (unsnapped), bit for bit.

    Raises
    ------
    ValueError
        For an unsupported rule or weights (check :func:`use_blocks` first).
    """
    if rule not in BLOCKED_RULES:
        raise ValueError(f"rule {rule!r} has no blocked pair-matrix form")
    X = np.asarray(X, dtype=np.float64)
    *batch, T, S = X.shape
    w = _whole_weights(weights, T)
    if w is False:
        raise ValueError("blocked pair matrices take whole-number, non-negative task weights with a positive sum")
    Xb = X.reshape(-1, T, S)
    if w is None or (Xb.shape[0] > 1 and np.asarray(weights).ndim >= 2):
        # no weights, one weight vector per profile (same batch shape), or one vector for every profile
        rowsw = None if w is None else (w if w.shape[0] == Xb.shape[0] else np.broadcast_to(w, (Xb.shape[0], T)))
        parts = [_one_profile(rule, Xb[b], None if rowsw is None else rowsw[b : b + 1], rows)[0] for b in range(Xb.shape[0])]
        return np.stack(parts).reshape(*batch, S)
    wn = np.asarray(weights, dtype=np.float64)
    if Xb.shape[0] > 1:  # one weight vector (T,) for every profile
        parts = [_one_profile(rule, Xb[b], w, rows)[0] for b in range(Xb.shape[0])]
        return np.stack(parts).reshape(*batch, S)
    # one profile, a stack of weight vectors: each distinct vector once (bootstrap draws repeat)
    uniq, inverse = np.unique(w, axis=0, return_inverse=True)
    res = _one_profile(rule, Xb[0], uniq, rows, stack=wn.ndim >= 2)[np.asarray(inverse).reshape(-1)]
    return res.reshape(*wn.shape[:-1], S)


def blocks_prob_above(scores: np.ndarray) -> bool:
    """Whether :func:`prob_above_blocked` should compute ``engine.kernels.metrics.prob_above`` of these replicate scores:
    one stack (B, S) of more than 2,048 systems, or any stack when ``VOTEBENCH_PAIR_ROWS`` is set."""
    a = np.asarray(scores)
    if a.ndim != 2 or a.shape[-1] < 2:
        return False
    return forced_rows() is not None or a.shape[-1] ** 2 > _SMALL


def prob_above_blocked(scores: np.ndarray, *, rows: int | None = None) -> np.ndarray:
    """``engine.kernels.metrics.prob_above`` of replicate scores (B, S), one block of rows of the (S, S) result at a time.

    ``P[i, j]`` = replicates with ``x_i > x_j`` over replicates where both are present (``NaN`` when
    never both; diagonal 0): whole-number counts, so the same bits as the dense computation, with no
    (S, S) temporaries beside the result.
    """
    x = np.asarray(scores, dtype=np.float64)
    B, S = x.shape
    uniq, inv = np.unique(x, axis=0, return_inverse=True)
    mult = np.bincount(np.asarray(inv).reshape(-1), minlength=uniq.shape[0])  # replicates per distinct score row
    repeated = uniq.shape[0] < B
    if repeated:  # few distinct replicates (a task bootstrap of few tasks): each once, counted with its multiplicity
        x = uniq
    pres = ~np.isnan(x)
    pf = pres.astype(np.float64)
    pw = pf * mult[:, None] if repeated else pf
    ranks = dense_ranks(x)
    out = np.empty((S, S))
    r = block_rows(S, 1, rows)
    for i0 in range(0, S, r):
        i1 = min(S, i0 + r)
        wins = greater_counts(ranks, pres, i0, i1, weights=mult if repeated else None).astype(np.float64)
        both = pw[:, i0:i1].T @ pf  # whole numbers: exact; the diagonal counts the replicates with the system
        with np.errstate(invalid="ignore", divide="ignore"):
            out[i0:i1] = np.where(both > 0, wins / np.where(both > 0, both, 1.0), np.nan)
    return out


# ------------------------------------------------------------------------------------------ streaming
def streams(rule: Any) -> bool:
    """Whether a rule's within-task step over instances streams as integer ``wins`` / ``pairs`` sums."""
    if rule.within is not None:
        return False
    return (rule.from_sums is not None and set(rule.sums) <= {"wins", "pairs"}) or rule.name == "win_rate"
    # relative_difference sums real terms (not counts): its level two keeps the whole-task kernel


def chunk_counts(block: np.ndarray, *, count_dtype: Any = np.int64) -> np.ndarray:
    """Integer ``wins`` and ``pairs`` of one chunk (Tc, Kc, S) over its instances: (Tc, 1, 2, S, S) of ``count_dtype``.

    ``count_dtype`` (int64 by default) must hold the number of instances of a task (int32 halves the memory
    traffic of the sums over chunks while a task has fewer than 2**31 instances).
    """
    a = np.asarray(block)
    Tc, Kc, S = a.shape
    out = np.zeros((Tc, 1, 2, S, S), dtype=count_dtype)
    for t in range(Tc):
        x = a[t]
        pres = ~np.isnan(x)
        if pres.all():
            out[t, 0, 1] = Kc
        else:
            pf = pres.astype(np.float64)
            out[t, 0, 1] = (pf.T @ pf).astype(np.int64)  # 0/1 products: exact
        out[t, 0, 0] = win_counts(dense_ranks(x), pres)
    return out


def finish_counts(counts: np.ndarray, *, rule: Any) -> np.ndarray:
    """Task-level scores (Tc, S) (or pooled (S,)) from summed integer counts (..., 2, S, S)."""
    c = np.asarray(counts)
    wins, pairs = c[..., 0, :, :].astype(np.float64), c[..., 1, :, :].astype(np.float64)
    if rule.from_sums is not None:
        score = rule.from_sums({"wins": wins, "pairs": pairs})
    else:  # the reducers of the blocked path on the whole matrix
        S = wins.shape[-1]
        w3, p3 = wins.reshape(-1, S, S), pairs.reshape(-1, S, S)
        present = np.diagonal(p3, axis1=-2, axis2=-1) > 0
        state: dict[str, Any] = {"out": np.zeros((w3.shape[0], S)), "whole": np.zeros((w3.shape[0], S))}
        _REDUCERS[rule.name](w3, np.swapaxes(w3, -1, -2), p3, present, 0, S, state)
        score = _finish(rule.name, state, present, np.empty((0, S)), present, None).reshape(wins.shape[:-1])
    return rule.snap(np.asarray(score, dtype=np.float64))
