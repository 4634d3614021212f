"""Rank and Borda-point kernels (pure numpy, system axis last).

Every function here takes an array whose **last axis is the system axis** and
any number of leading batch axes (tasks, instances, replicates, ...).  Missing
scores are ``NaN``; a missing system takes no part in the comparisons of that
judge and gets ``NaN`` back.  Scores are *oriented*: higher is better.

Ties are handled by averaging: a system's Borda points on one judge are the
number of present systems it strictly beats plus one half of the number of
other present systems it ties with.  This equals its average ascending rank
minus one, so the points of ``n`` present systems always sum to
``n * (n - 1) / 2`` and never depend on the input order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["tie_groups", "borda_points", "min_rank", "count_present", "tied_count", "label_order", "label_positions", "rank_order",
           "natural_key"]


def tie_groups(sorted_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last position of the run of equal values around every cell.

    Parameters
    ----------
    sorted_x : ndarray, shape (..., S)
        Values sorted ascending along the last axis (``NaN`` last; every
        ``NaN`` forms a run of its own because ``NaN != NaN``).

    Returns
    -------
    first, last : ndarray of intp, shape (..., S)
        For the cell at sorted position ``p``, the first and last positions of
        the run of values equal to ``sorted_x[..., p]``.
    """
    s = np.asarray(sorted_x)
    n = s.shape[-1]
    pos = np.arange(n, dtype=np.intp)
    starts = np.empty(s.shape, dtype=bool)
    starts[..., :1] = True
    np.not_equal(s[..., 1:], s[..., :-1], out=starts[..., 1:])
    first = np.where(starts, pos, 0)
    np.maximum.accumulate(first, axis=-1, out=first)
    ends = np.empty(s.shape, dtype=bool)
    ends[..., -1:] = True
    ends[..., :-1] = starts[..., 1:]
    last = np.where(ends, pos, n - 1)[..., ::-1]
    last = np.minimum.accumulate(last, axis=-1)[..., ::-1]
    return first, last


_BLOCK = 1 << 18  # cells per block: keeps the work arrays in cache


def _points_sorted_rows(s: np.ndarray, dtype: type) -> np.ndarray:
    """Points of sorted rows ``s`` (R, S) that contain ties or NaN."""
    first, last = tie_groups(s)
    pts = (first + last).astype(dtype)
    pts *= 0.5
    pts[np.isnan(s)] = np.nan
    return pts


def borda_points(x: np.ndarray, *, dtype: type = np.float64) -> np.ndarray:
    """Borda points of every system on every judge (ties share the points).

    Parameters
    ----------
    x : array_like, shape (..., S)
        Oriented scores (higher is better), one row per judge; ``NaN`` = missing.
    dtype : numpy dtype, optional
        Floating dtype of the result (points are multiples of 0.5, exact in
        float32 up to 2**23 systems).

    Returns
    -------
    ndarray, shape (..., S)
        ``#{j present: x_j < x_i} + 0.5 * #{j != i present: x_j == x_i}``;
        ``NaN`` where ``x`` is ``NaN``.

    Notes
    -----
    One ``argsort`` per judge; rows without ties or missing values take the
    sorted position directly, only rows with ties or ``NaN`` pay for the tie
    groups.  Work proceeds in cache-sized blocks of judges.

    Examples
    --------
    >>> borda_points(np.array([3.0, 1.0, 3.0, np.nan]))
    array([1.5, 0. , 1.5, nan])
    """
    x = np.asarray(x)
    shape = x.shape
    n = shape[-1]
    out: np.ndarray = np.empty(shape, dtype=dtype)
    if x.size == 0:
        return out
    x2 = x.reshape(-1, n)
    o2 = out.reshape(-1, n)
    rows = x2.shape[0]
    step = max(1, _BLOCK // n)
    base: np.ndarray = np.arange(n, dtype=dtype)
    for r0 in range(0, rows, step):
        xb = x2[r0 : r0 + step]
        nb = xb.shape[0]
        flat = np.argsort(xb, axis=-1)
        flat += (np.arange(nb, dtype=flat.dtype) * n)[:, None]
        flat = flat.ravel()
        s = xb.ravel()[flat].reshape(nb, n)
        pts: np.ndarray = np.empty((nb, n), dtype=dtype)
        pts[:] = base
        special = np.isnan(s[:, -1])
        if n > 1:
            special |= ~(s[:, 1:] != s[:, :-1]).all(axis=1)
        if special.any():
            pts[special] = _points_sorted_rows(s[special], dtype)
        o2[r0 : r0 + nb].ravel()[flat] = pts.ravel()
    return out


def min_rank(score: np.ndarray) -> np.ndarray:
    """Competition ranks ("1224"): 1 + number of systems with a strictly higher score.

    Parameters
    ----------
    score : array_like, shape (..., S)
        Aggregate scores, higher is better; ``NaN`` = not ranked.

    Returns
    -------
    ndarray of float, shape (..., S)
        Ranks starting at 1, equal for tied systems; ``NaN`` where ``score`` is ``NaN``.

    Examples
    --------
    >>> min_rank(np.array([3.0, 1.0, 3.0, np.nan, 5.0]))
    array([ 2.,  4.,  2., nan,  1.])
    """
    score = np.asarray(score, dtype=np.float64)
    if score.shape[-1] == 0:
        return score.copy()
    order = np.argsort(-score, axis=-1)
    s = np.take_along_axis(-score, order, axis=-1)
    first, _ = tie_groups(s)
    r = (first + 1).astype(np.float64)
    r[np.isnan(s)] = np.nan
    out = np.empty(score.shape, dtype=np.float64)
    np.put_along_axis(out, order, r, axis=-1)
    return out


def count_present(x: np.ndarray) -> np.ndarray:
    """Number of non-missing systems of every judge, shape ``x.shape[:-1]``."""
    return np.count_nonzero(~np.isnan(x), axis=-1)


def tied_count(score: np.ndarray) -> np.ndarray:
    """Number of systems that share their score with at least one other system.

    This is Vote'n'Rank's *discriminative power* (section 3.1: "the number of
    tied alternatives, i.e. alternatives with the same score"); lower means a
    more discriminative rule.  ``NaN`` scores are ignored.

    Parameters
    ----------
    score : array_like, shape (..., S)

    Returns
    -------
    ndarray of int, shape (...)

    Examples
    --------
    >>> int(tied_count(np.array([2.75, 2.75, 2.5, 2.4])))
    2
    """
    score = np.asarray(score, dtype=np.float64)
    s = np.sort(score, axis=-1)
    eq = s[..., 1:] == s[..., :-1]
    tied = np.zeros(s.shape, dtype=bool)
    tied[..., 1:] |= eq
    tied[..., :-1] |= eq
    return tied.sum(axis=-1)


def natural_key(label: Any) -> tuple[Any, ...]:
    """The sort key of a label in natural order: digit runs compare as numbers (``t2`` before ``t10``), then the text.

    Examples
    --------
    >>> sorted(["t10", "t2", "b"], key=natural_key)
    ['b', 't2', 't10']
    """
    text = str(label)
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)
    return (parts, text)


def label_order(labels: Sequence[Any] | np.ndarray) -> np.ndarray:
    """The canonical order of a dimension: indices that sort its labels.

    Numbers sort by value; other labels in natural order (``t2`` before ``t10``), ties of the
    natural key broken by the text itself, so the order depends on the set of labels only.

    Examples
    --------
    >>> label_order(["t10", "t2", "b"]).tolist()
    [2, 1, 0]
    >>> label_order(np.array([3, 1, 2])).tolist()
    [1, 2, 0]
    """
    arr = np.asarray(labels)
    if arr.dtype.kind in "iuf" and arr.ndim == 1:
        return np.argsort(arr, kind="stable")
    return np.asarray(_text_order(tuple(arr.tolist())), dtype=np.intp)


def label_positions(labels: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Each label's position in the canonical order (:func:`label_order`, inverted): the key that lists tied systems
    the same way in every table, figure and print.

    >>> label_positions(["M13", "M2", "b"]).tolist()
    [1, 0, 2]
    """
    order = label_order(labels)
    pos = np.empty(order.size, dtype=np.intp)
    pos[order] = np.arange(order.size)
    return pos


def rank_order(rank: np.ndarray, labels: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Indices best first by ``rank`` (1 = best; a rank that is not finite, an unranked system, last), tied ranks in
    the canonical label order (:func:`label_positions`): the order of every leaderboard, table and figure.

    >>> rank_order(np.array([2.0, 1.0, np.nan, 2.0]), ["M13", "b", "a", "M2"]).tolist()
    [1, 3, 0, 2]
    """
    r = np.asarray(rank, dtype=np.float64)
    return np.lexsort((label_positions(labels), np.where(np.isfinite(r), r, np.inf)))


@functools.lru_cache(maxsize=64)
def _text_order(labels: tuple[Any, ...]) -> tuple[int, ...]:
    keys = [natural_key(v) for v in labels]
    return tuple(sorted(range(len(keys)), key=keys.__getitem__))
