"""Figures of a ranking report: one function per figure, each returning a matplotlib ``Figure``.

The functions take plain numpy / xarray results (ranks, flows, win counts,
rank intervals, subset curves), draw them and return the figure; they never
write files (:mod:`engine.report` saves them) and never touch pyplot's global
state: figures are created with :class:`matplotlib.figure.Figure` on an Agg
canvas, so they are safe in scripts, servers and threads.

Sizes follow the number of systems (about a quarter inch per row), long
system names are shortened to :data:`LABEL_CHARS` characters, and dense
labels are rotated, so a figure with 30 systems stays readable.  The callers
select the systems to show (``top-k``) and say so in the title.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from engine.dims import SYSTEM

__all__ = [
    "LABEL_CHARS",
    "short_label",
    "rank_change_figure",
    "rank_heatmap_figure",
    "promethee_flows_figure",
    "win_matrix_figure",
    "critical_difference_figure",
    "rank_interval_figure",
    "subset_curve_figure",
]

#: longest system / rule label drawn (longer names end in an ellipsis)
LABEL_CHARS = 34
#: the pairwise win matrix prints its counts in the cells up to this many systems (past it a cell's number would
#: fall below 6.5 pt, unreadable in the page's image; the counts are in the win-count table)
WIN_NUMBERS = 20
_ROW = 0.26  # inches per system row
_NARROW_ROW = 0.17  # the same on a phone (its names are 6.5 pt)
_RANKED_COL_IN = 0.3  # a phone's colour-only rank-change figure: the width of a column that prints its ranks ("100=")
_FONT = 8.0
#: PNG resolution of the page's images (render.py): 1 inch = this many CSS pixels where an image is shown 1:1
DPI = 110
#: widest figure (inches) the page shows 1:1 at its 1200-pixel column: wider ones would shrink their text
WIDE_IN = 1200 / DPI
#: the phone layout of a figure (``narrow=True``): fits the 370-pixel column of a 390-pixel screen
NARROW_IN = 368 / DPI
#: smallest text of any figure (points): 6.5 pt = 9.9 CSS px at 1:1
MIN_FONT = 6.5
#: longest system label of a phone layout
NARROW_CHARS = 16
#: a phone's win matrix shows at most this many systems (more would make rows thinner than their names)
NARROW_SYSTEMS = 20
_UP, _DOWN = "\u2191", "\u2193"


def short_label(name: object, width: int = LABEL_CHARS) -> str:
    """``name`` as a string of at most ``width`` characters (an ellipsis marks a cut).

    Examples
    --------
    >>> short_label("a" * 40, 10)
    'aaaaaaaaa…'
    """
    s = str(name)
    return s if len(s) <= width else s[: width - 1] + "\u2026"


def _figure(width: float, height: float, *, constrained: bool = True) -> Figure:
    fig = Figure(figsize=(max(width, 3.0), max(height, 2.0)), layout="constrained" if constrained else None)
    FigureCanvasAgg(fig)
    return fig


def _text_color(rgba: Sequence[float] | np.ndarray) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _labels(names: Iterable[object], width: int = LABEL_CHARS) -> list[str]:
    """Names of at most ``width`` characters; when cutting the end makes two alike (a shared prefix), the middle is
    cut instead, so that each keeps its distinguishing end (``model-w…name-07``)."""
    full = [str(n) for n in names]
    out = [short_label(n, width) for n in full]
    if len(set(out)) < len(set(full)):
        tail = (width - 1) // 2
        out = [n if len(n) <= width else n[: width - 1 - tail] + "\u2026" + n[-tail:] for n in full]
    return out


def _wrap(title: str, width: float, font: float = 10.0) -> str:
    """``title`` broken into lines that fit ``width`` inches at ``font`` points."""
    import textwrap

    return "\n".join(textwrap.wrap(title, max(12, int((width - 0.25) / (0.6 * font / 72))))) or title


def _label_width(names: Sequence[str], font: float = _FONT) -> float:
    """Approximate width in inches of the longest label at ``font`` points."""
    return 0.55 * font / 72 * max((len(n) for n in names), default=1)


def _title_width(title: str, font: float = 10.0) -> float:
    """Figure width (inches) that fits a title line at ``font`` points."""
    return 0.56 * font / 72 * len(title) + 0.5


# ---------------------------------------------------------------------------------------------
# rankings side by side
# ---------------------------------------------------------------------------------------------
def rank_change_figure(ranks: xr.DataArray, *, baseline: str, title: str = "", neutral: Sequence[str] = (),
                       shared: np.ndarray | None = None, narrow: bool = False, primary: str | None = None) -> Figure:
    """Rankings of several rules side by side, coloured by the change against a baseline rule.

    Parameters
    ----------
    ranks : xarray.DataArray, dims (system, rule)
        Rank of every shown system under every rule (1 = best), rows in the order to draw (top row first).
    baseline : str
        The ``rule`` label the changes are measured against.
    title : str
    shared : ndarray of bool, shape (systems, rules), optional
        Ranks shared with another system (of the full ranking, which may hold systems not drawn): ``=`` after them,
        as in the tables.
    neutral : sequence of str
        Rules whose changes are not drawn (degenerate rankings: their ties are not rank moves); their
        cells show the rank alone, uncoloured, and their label ends in a warning sign.
    narrow : bool
        The layout of a phone (:data:`NARROW_IN` wide): with more than three rules the cells are colour only, but for
        the columns of the baseline and of ``primary``, drawn wider, which print their ranks.
    primary : str, optional
        The ``rule`` label of the report's primary rule (a phone's figure prints its ranks).

    Returns
    -------
    matplotlib.figure.Figure
        A heatmap: one column per rule, each cell the system's rank and its change ``baseline rank - rule rank``
        (up arrow: better than under the baseline; with more than 12 rules, or on a phone with more than 3, the
        colour alone shows it), teal for improvements and brown for drops.
    """
    ranks = ranks.transpose(SYSTEM, ...)
    col_dim = ranks.dims[1]
    systems = _labels(ranks[SYSTEM].values, NARROW_CHARS if narrow else LABEL_CHARS)
    rules = [str(r) for r in ranks[col_dim].values]
    R = np.asarray(ranks.values, dtype=np.float64)
    base = R[:, rules.index(baseline)]
    delta = base[:, None] - R
    delta[:, [j for j, r in enumerate(rules) if r in set(neutral)]] = 0.0
    n, m = R.shape
    # colour saturates at the 90th percentile of the changes, so that small changes stay visible
    finite = np.abs(delta[np.isfinite(delta) & (delta != 0)])
    lim = max(3.0, float(np.quantile(finite, 0.9))) if finite.size else 3.0
    title = title or f"Rankings by rule, change against {baseline}"
    font = MIN_FONT if m > 8 or narrow else 7.5
    label_w = _label_width(systems, font if narrow else _FONT)
    # the cells' text: rank and arrow (few rules), the rank alone (many), none (a phone with more than 3 rules)
    text = "arrow" if m <= (3 if narrow else 12) else "rank" if not narrow else ""
    cell = {"arrow": 0.62, "rank": 0.34, "": 0.3}[text]
    if narrow:
        cell = min(cell, max(0.1, (NARROW_IN - label_w - 0.2) / m))
        fig = _figure(NARROW_IN, _NARROW_ROW * n + 1.9 + 0.07 * max(len(r) for r in rules))
        title = _wrap(title, NARROW_IN, 8.5)
    else:
        fig = _figure(min(max(label_w + cell * m + 1.6, _title_width(title)), WIDE_IN), _ROW * n + 1.9)
    ax = fig.add_subplot()
    # brown-to-teal: a diverging map that colour-blind readers also tell apart (ColorBrewer BrBG)
    norm, bj = TwoSlopeNorm(0.0, -lim, lim), rules.index(baseline)
    if text:
        edges = np.arange(m + 1) - 0.5  # the columns' edges (uniform, as imshow draws them)
        im = ax.imshow(np.clip(delta, -lim, lim), cmap="BrBG", norm=norm, aspect="auto", interpolation="nearest")
        _rank_change_cells(ax, im, R, delta, lim, shared, bj, font, arrows=text == "arrow")
    else:
        ranked = sorted({bj} | ({rules.index(primary)} if primary in rules else set()))
        edges, im = _phone_ranked_cells(ax, R, delta, lim, norm, shared, bj, font, ranked, NARROW_IN - label_w - 0.2)
    ax.set_xticks((edges[:-1] + edges[1:]) / 2, [short_label(r, 18) + (" (baseline)" if r == baseline else "")
                                                 + (" (primary)" if r == primary and r != baseline else "")
                             + (" \u26a0" if r in set(neutral) else "") for r in rules],
                  rotation=90 if narrow else 40, ha="center" if narrow else "left", rotation_mode="anchor" if not narrow
                  else "default", fontsize=MIN_FONT if narrow else _FONT)
    ax.set_yticks(range(n), systems, fontsize=font if narrow else _FONT)
    _cell_grid(ax, edges, n)
    cb = fig.colorbar(im, ax=ax, shrink=min(1.0, 4.0 / max(1.0, _ROW * n)) if not narrow else 0.9, pad=0.01,
                      aspect=30, extend="both", location="bottom" if narrow else "right")
    cb.set_label(f"rank change vs {baseline} ({_UP} better)", fontsize=MIN_FONT if narrow else _FONT)
    cb.ax.tick_params(labelsize=MIN_FONT if narrow else _FONT)
    if narrow:
        fig.suptitle(title, fontsize=8.5)
    else:
        ax.set_title(title, fontsize=10)
    return fig


def _phone_ranked_cells(ax: Any, R: np.ndarray, delta: np.ndarray, lim: float, norm: Any, shared: np.ndarray | None,
                        base: int, font: float, ranked: Sequence[int], width: float) -> tuple[np.ndarray, Any]:
    """A phone's colour-only cells of :func:`rank_change_figure` in ``width`` inches: the ``ranked`` columns (the
    baseline's, the primary rule's) drawn wider and printing their ranks; the columns' edges and the mesh."""
    n, m = R.shape
    other = max(0.06, (width - _RANKED_COL_IN * len(ranked)) / max(1, m - len(ranked)))
    widths = np.full(m, other)
    widths[list(ranked)] = max(_RANKED_COL_IN, other)
    edges = np.concatenate([[0.0], np.cumsum(widths * m / widths.sum())]) - 0.5
    im = ax.pcolormesh(edges, np.arange(n + 1) - 0.5, np.clip(delta, -lim, lim), cmap="BrBG", norm=norm)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_ylim(n - 0.5, -0.5)
    _rank_change_cells(ax, im, R, delta, lim, shared, base, font, arrows=False, columns=ranked,
                       x=(edges[:-1] + edges[1:]) / 2)
    return edges, im


def _cell_grid(ax: Any, edges: np.ndarray, n: int) -> None:
    """White lines between the cells of a heatmap (column ``edges``, ``n`` rows), its column labels on top."""
    ax.tick_params(length=0)
    ax.xaxis.set_ticks_position("top")
    ax.xaxis.set_label_position("top")
    ax.set_xticks(edges, minor=True)
    ax.set_yticks(np.arange(n + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    for side in ax.spines.values():
        side.set_visible(False)


def _rank_change_cells(ax: Any, im: Any, R: np.ndarray, delta: np.ndarray, lim: float, shared: np.ndarray | None,
                       base: int, font: float, *, arrows: bool, columns: Sequence[int] | None = None,
                       x: np.ndarray | None = None) -> None:
    """The cells' text of :func:`rank_change_figure`: the rank ('=' shared) and, with ``arrows``, its change; in the
    ``columns`` given (default all), centred on ``x`` (default the column numbers)."""
    n, m = R.shape
    xs = np.arange(m, dtype=np.float64) if x is None else x
    for i in range(n):
        for j in range(m) if columns is None else columns:
            if not np.isfinite(R[i, j]):
                ax.text(xs[j], i, "-", ha="center", va="center", fontsize=font, in_layout=False)
                continue
            d = int(round(delta[i, j])) if np.isfinite(delta[i, j]) else 0
            r = f"{R[i, j]:g}" + ("=" if shared is not None and shared[i, j] else "")
            txt = r if not arrows or j == base or d == 0 else f"{r} {_UP if d > 0 else _DOWN}{abs(d)}"
            shade = im.cmap(float(np.asarray(im.norm(np.asarray(np.clip(delta[i, j], -lim, lim))))))
            ax.text(xs[j], i, txt, ha="center", va="center", fontsize=font, color=_text_color(shade), in_layout=False)


def rank_heatmap_figure(ranks: xr.DataArray, *, title: str = "", colorbar_label: str = "rank (1 = best)",
                        method: str = "average", metric: str = "euclidean", narrow: bool = False) -> Figure:
    """Heatmap of ranks (systems x rules or scenarios) with a dendrogram of the systems.

    The systems are clustered on their rank vectors (``scipy.cluster.hierarchy``, Euclidean distance and average
    linkage as in xLLMBench, Fig. 2) and drawn in dendrogram order.

    Parameters
    ----------
    ranks : xarray.DataArray, dims (system, column)
        Ranks (1 = best); a missing rank is clustered as one worse than the worst.
    title, colorbar_label : str
    method, metric : str  (linkage method and distance of :func:`scipy.cluster.hierarchy.linkage`)
    narrow : bool
        The layout of a phone (:data:`NARROW_IN` wide; the ranks in the cells with at most 6 columns).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from scipy.cluster import hierarchy

    ranks = ranks.transpose(SYSTEM, ...)
    systems = _labels(ranks[SYSTEM].values, NARROW_CHARS if narrow else LABEL_CHARS)
    cols = [short_label(c, 22) for c in ranks[ranks.dims[1]].values]
    R = np.asarray(ranks.values, dtype=np.float64)
    n, m = R.shape
    filled = np.where(np.isfinite(R), R, (np.nanmax(R) if np.isfinite(R).any() else 0.0) + 1.0)
    title = title or "Ranks across rules, systems clustered on their ranks"
    label_w = _label_width(systems, MIN_FONT if narrow else _FONT)
    tree = 0.45 if narrow else 1.3
    if narrow:
        cell = min(0.45, max(0.1, (NARROW_IN - tree - label_w - 0.25) / m))
        title = _wrap(title, NARROW_IN, 8.5)
        fig = _figure(NARROW_IN, _NARROW_ROW * n + 1.9 + 0.07 * max(len(c) for c in cols))
    else:
        cell = min(0.45, max(0.3, (WIDE_IN - tree - label_w - 1.2) / m))
        fig = _figure(min(max(tree + cell * m + label_w + 1.2, _title_width(title)), WIDE_IN), _ROW * n + 1.9)
    gs = fig.add_gridspec(1, 2, width_ratios=[tree, max(0.5, cell * m)], wspace=0.0)
    ax_d = fig.add_subplot(gs[0])
    ax = fig.add_subplot(gs[1])
    if n >= 2:
        Z = hierarchy.linkage(filled, method=method, metric=metric)
        with warnings.catch_warnings():  # identical rank rows: every merge at height 0, a flat (but correct) tree
            warnings.filterwarnings("ignore", message="Attempting to set identical", category=UserWarning)
            dn = hierarchy.dendrogram(Z, orientation="left", no_labels=True, ax=ax_d, color_threshold=0,
                                      above_threshold_color="0.35")
        order = np.asarray(dn["leaves"])  # bottom to top, at y = 5, 15, 25, ...
    else:
        order = np.arange(n)
    # draw the dendrogram half with the better mean rank on top
    mean_rank = filled.mean(axis=1)[order]
    flip = n >= 2 and mean_rank[: n // 2].mean() < mean_rank[n - n // 2:].mean()
    ax_d.set_ylim((10 * n, 0) if flip else (0, 10 * n))
    ax_d.axis("off")
    M = R[order]
    im = ax.pcolormesh(np.arange(m + 1), np.arange(n + 1) * 10.0, M, cmap="viridis_r", shading="flat",
                       edgecolors="white", linewidth=0.5)
    ax.set_ylim((10 * n, 0) if flip else (0, 10 * n))
    ax.set_xlim(0, m)
    if n * m <= 1500 and (not narrow or m <= 6):
        font = MIN_FONT if n > 30 or m > 14 or narrow else 7.5
        shared = np.isfinite(M) & ((M[:, None, :] == M[None, :, :]).sum(axis=1) > 1)  # another system, same rank
        for i in range(n):
            for j in range(m):
                if np.isfinite(M[i, j]):
                    ax.text(j + 0.5, 10 * i + 5, f"{M[i, j]:g}{'=' if shared[i, j] else ''}", ha="center", va="center", fontsize=font,
                            color=_text_color(im.cmap(im.norm(M[i, j]))), in_layout=False)
    ax.yaxis.tick_right()
    font = MIN_FONT if narrow else _FONT
    ax.set_yticks(10 * np.arange(n) + 5, [systems[i] for i in order], fontsize=font)
    ax.set_xticks(np.arange(m) + 0.5, cols, rotation=90 if narrow else 40, ha="center" if narrow else "right",
                  rotation_mode="default" if narrow else "anchor", fontsize=font)
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    cb = fig.colorbar(im, ax=ax, location="bottom", shrink=0.9 if narrow else 0.6, pad=0.01, aspect=25 if narrow else 35)
    cb.set_label(colorbar_label, fontsize=font)
    cb.ax.tick_params(labelsize=font)
    fig.suptitle(title, fontsize=8.5 if narrow else 10)
    return fig


# ---------------------------------------------------------------------------------------------
# PROMETHEE II flows and pairwise wins
# ---------------------------------------------------------------------------------------------
def promethee_flows_figure(phi_plus: np.ndarray, phi_minus: np.ndarray, systems: Sequence[object], *,
                           title: str = "", narrow: bool = False) -> Figure:
    """PROMETHEE II positive and negative flows per system, best net flow on top.

    Parameters
    ----------
    phi_plus, phi_minus : ndarray, shape (S,)
        Positive flow (how much a system outranks the others) and negative flow
        (how much it is outranked); the net flow is their difference.
    systems : sequence of S names
    title : str
    narrow : bool
        The layout of a phone (:data:`NARROW_IN` wide).

    Returns
    -------
    matplotlib.figure.Figure
        Horizontal bars: ``phi+`` to the right, ``-phi-`` to the left, the net
        flow ``phi`` as a marker.
    """
    plus = np.asarray(phi_plus, dtype=np.float64)
    minus = np.asarray(phi_minus, dtype=np.float64)
    net = plus - minus
    order = np.argsort(-net, kind="stable")
    names = _labels([systems[i] for i in order], NARROW_CHARS if narrow else LABEL_CHARS)
    n = len(order)
    title = title or "PROMETHEE II flows"
    font = MIN_FONT if narrow else _FONT
    if narrow:
        title = _wrap(title, NARROW_IN, 8.5)
        fig = _figure(NARROW_IN, _NARROW_ROW * n + 2.0)
    else:
        fig = _figure(min(max(_label_width(names) + 5.0, _title_width(title)), WIDE_IN), _ROW * n + 1.6)
    ax = fig.add_subplot()
    y = np.arange(n)
    ax.barh(y, plus[order], color="#4c9a5a", height=0.7, label="positive flow \u03c6\u207a")
    ax.barh(y, -minus[order], color="#c8553d", height=0.7, label="negative flow \u2212\u03c6\u207b")
    ax.plot(net[order], y, "D", color="black", markersize=4, label="net flow \u03c6 = \u03c6\u207a \u2212 \u03c6\u207b")
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.set_yticks(y, names, fontsize=font)
    ax.invert_yaxis()
    lim = max(1e-9, float(np.nanmax(np.abs(np.concatenate([plus, minus])))) if n else 1.0)
    ax.set_xlim(-1.08 * lim, 1.08 * lim)
    ax.set_xlabel("outranking flow", fontsize=font)
    ax.tick_params(axis="x", labelsize=font)
    ax.grid(axis="x", color="0.9")
    ax.set_axisbelow(True)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=1 if narrow else 3,
               fontsize=MIN_FONT if narrow else 7.5, frameon=False)
    fig.suptitle(title, fontsize=8.5) if narrow else ax.set_title(title, fontsize=10)
    return fig


def win_matrix_figure(wins: np.ndarray, ties: np.ndarray, systems: Sequence[object], *, title: str = "",
                      annotate: bool | None = None, narrow: bool = False) -> Figure:
    """Pairwise win matrix: share of the common tasks on which the row system beats the column system.

    Parameters
    ----------
    wins, ties : ndarray, shape (S, S)
        ``wins[i, j]``: (weighted) tasks where ``i`` scores strictly above ``j``;
        ``ties[i, j]``: tasks where they are equal (as
        :func:`engine.kernels.social.pairwise_counts` returns them).
    systems : sequence of S names, in the order to draw
    title : str
    annotate : bool, optional
        Write the win counts in the cells (default: up to :data:`WIN_NUMBERS` systems; on a phone up to 8).
    narrow : bool
        The layout of a phone (:data:`NARROW_IN` wide): the first :data:`NARROW_SYSTEMS` systems, said in the title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    W = np.asarray(wins, dtype=np.float64)
    T = np.asarray(ties, dtype=np.float64)
    pairs = W + W.T + T
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(pairs > 0, W / pairs, np.nan)
    np.fill_diagonal(share, np.nan)
    title = title or "Pairwise wins"
    if narrow and len(systems) > NARROW_SYSTEMS:
        title = f"{title}; on this screen the first {NARROW_SYSTEMS}"
        systems, share, W = systems[:NARROW_SYSTEMS], share[:NARROW_SYSTEMS, :NARROW_SYSTEMS], W[:NARROW_SYSTEMS]
    names = _labels(systems, NARROW_CHARS if narrow else LABEL_CHARS)
    n = len(names)
    font = MIN_FONT if narrow else _FONT
    lw = _label_width(names, font)
    if narrow:
        side = min(_ROW * n, NARROW_IN - lw - 0.9)
        title = _wrap(title, NARROW_IN, 8.5)
        fig = _figure(NARROW_IN, lw + side + 1.9)
    else:  # tall enough for the rotated names and the colour bar's label, at most the page's width (nothing cut off)
        side = min(_ROW * n, WIDE_IN - lw - 2.0)
        fig = _figure(min(max(lw + side + 2.0, _title_width(title) + 0.8), WIDE_IN), max(lw + side + 1.6, 3.2))
    ax = fig.add_subplot()
    im = ax.imshow(share, cmap="RdBu", vmin=0.0, vmax=1.0, interpolation="nearest")
    numbers = n <= (8 if narrow else WIN_NUMBERS) if annotate is None else annotate and (not narrow or n <= 8)
    if numbers:
        for i in range(n):
            for j in range(n):
                if i != j and np.isfinite(share[i, j]):
                    ax.text(j, i, f"{W[i, j]:g}", ha="center", va="center", fontsize=6.5,
                            color=_text_color(im.cmap(im.norm(share[i, j]))), in_layout=False)
    ax.set_xticks(range(n), names, rotation=90, fontsize=font)
    ax.set_yticks(range(n), names, fontsize=font)
    ax.set_xlabel("opponent (column)", fontsize=font)
    ax.set_ylabel("system (row)", fontsize=font)
    ax.tick_params(length=0)
    cb = fig.colorbar(im, ax=ax, shrink=0.9 if narrow else min(1.0, 4.0 / max(1.0, side)), aspect=25 if narrow else 30,
                      pad=0.01, location="bottom" if narrow else "right")
    cb.set_label("share of tasks won" + (" " if narrow else "\n") + "by the row system", fontsize=font)
    cb.ax.tick_params(labelsize=font)
    fig.suptitle(title, fontsize=8.5) if narrow else ax.set_title(title, fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------
# critical-difference diagram
# ---------------------------------------------------------------------------------------------
def _cd_groups(avg: np.ndarray, cd: float) -> list[tuple[int, int]]:
    """Maximal runs ``(i, j)`` (positions in ascending average rank) whose ranks differ by less than ``cd``."""
    n = avg.size
    out: list[tuple[int, int]] = []
    last = -1
    for i in range(n):
        j = i
        while j + 1 < n and avg[j + 1] - avg[i] < cd:
            j += 1
        if j > i and j > last:
            out.append((i, j))
            last = j
    return out


def _draw_rank_axis(ax: Any, lo: float, hi: float, cd: float | None, per_inch: float = 0.0) -> None:
    """The rank axis of a critical-difference diagram at y = 0 (ticks, numbers at least 0.25 inch apart: ``per_inch``
    rank units per inch) and the CD bar above it."""
    ax.plot([lo, hi], [0, 0], color="black", linewidth=1.0)
    span = hi - lo
    tick_step = 1 if span <= 20 else 2 if span <= 40 else 5 if span <= 100 else 10
    while tick_step < 0.25 * per_inch and tick_step < span:  # numbers closer than 1/4 inch: fewer of them
        tick_step = {1: 2, 2: 5, 5: 10}.get(tick_step, tick_step * 2)
    last = -np.inf
    for t in np.arange(np.ceil(lo), np.floor(hi) + 1):
        # numbered: the ends and the multiples of the step, none closer than 0.6 steps to the one before
        major = t == lo or (t % tick_step == 0 or t == hi) and t - last >= 0.6 * tick_step
        if major or not per_inch or per_inch <= 25:  # unnumbered ticks when at least 1/25 inch apart
            ax.plot([t, t], [0, 0.08 if major else 0.04], color="black", linewidth=0.8)
        if major:
            last = t
            ax.text(t, 0.12, f"{t:g}", ha="center", va="bottom", fontsize=7.0)
    # CD bar from the left end of the axis
    if cd is not None and np.isfinite(cd):
        end = min(lo + cd, hi)
        ax.plot([lo, end], [0.55, 0.55], color="black", linewidth=1.2)
        ax.plot([lo, lo], [0.5, 0.6], color="black", linewidth=1.2)
        if lo + cd <= hi:
            ax.plot([end, end], [0.5, 0.6], color="black", linewidth=1.2)
            ax.text((lo + end) / 2, 0.63, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=8)
        else:  # wider than the axis shown: every system shown is in one group
            ax.plot([end], [0.55], marker=">", color="black", markersize=5)
            ax.text((lo + end) / 2, 0.63, f"CD = {cd:.2f} (wider than the rank range shown)", ha="center", va="bottom",
                    fontsize=8)


def critical_difference_figure(avg_ranks: np.ndarray, systems: Sequence[object], *, cd: float | None, title: str = "",
                               axis_range: tuple[float, float] | None = None,
                               cliques: Sequence[Sequence[int]] | None = None, narrow: bool = False) -> Figure:
    """Critical-difference diagram (Demsar 2006): average ranks with the groups a post-hoc test cannot separate.

    Parameters
    ----------
    avg_ranks : ndarray, shape (S,)
        Average rank of every system over the datasets (tasks), 1 = best.
    systems : sequence of S names
    cd : float or None
        Nemenyi critical difference, drawn as a bar above the axis; without ``cliques``, systems whose average ranks
        differ by less than ``cd`` are joined by a thick bar.  ``None``: no CD bar (another test).
    cliques : sequence of sequences of int, optional
        The groups to join (indices into ``avg_ranks``, e.g. :func:`engine.kernels.significance.cliques`), instead
        of those of ``cd``.
    title : str
    axis_range : (float, float), optional
        Range of the rank axis (default: the whole numbers around the ranks shown).
    narrow : bool
        The layout of a phone (:data:`NARROW_IN` wide: a shorter axis, names cut at :data:`NARROW_CHARS`).

    Returns
    -------
    matplotlib.figure.Figure
        The best half of the systems is labelled on the left, the other half on the right; the ``CD`` bar above.
    """
    avg = np.asarray(avg_ranks, dtype=np.float64)
    order = np.argsort(avg, kind="stable")
    a = avg[order]
    names = _labels([systems[i] for i in order], NARROW_CHARS - 4 if narrow else LABEL_CHARS)  # a phone: room for the axis
    n = a.size
    lo, hi = axis_range if axis_range is not None else (1.0, max(2.0, float(np.ceil(a.max()))))
    hi = hi if hi > lo else lo + 1.0
    if cliques is not None:
        pos = np.empty(n, dtype=np.intp)
        pos[order] = np.arange(n)
        groups = sorted((int(pos[list(g)].min()), int(pos[list(g)].max())) for g in cliques if len(g) >= 2)
    else:
        groups = _cd_groups(a, cd if cd is not None else 0.0)
    n_left = (n + 1) // 2
    rows = max(n_left, n - n_left)
    font = MIN_FONT if narrow else 8.0
    label_in = _label_width(names, font) + 0.35
    axis_in = 5.0 if hi - lo <= 15 else 7.0
    title = title or "Critical difference (Nemenyi)"
    if narrow:
        axis_in = NARROW_IN - 2 * label_in
        title = _wrap(title, NARROW_IN, 8.5)
    else:
        axis_in = min(axis_in, WIDE_IN - 2 * label_in)
    step_in = 0.2
    top_in, bar_in = (1.05 if cd is not None else 0.7) + 0.15 * title.count("\n"), 0.12 * len(groups) + 0.15
    height = top_in + bar_in + step_in * (rows + 1) + 0.2
    width = NARROW_IN if narrow else min(max(axis_in + 2 * label_in, _title_width(title, 9.5)), WIDE_IN)
    fig = _figure(width, height, constrained=False)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.axis("off")
    unit = (hi - lo) / axis_in  # rank units per inch
    ax.set_xlim(lo - label_in * unit, hi + label_in * unit)
    ax.set_ylim(-height + top_in, top_in)  # y in inches: axis line at 0, labels below, title above
    _draw_rank_axis(ax, lo, hi, cd, per_inch=(hi - lo) / axis_in)
    ax.text((lo + hi) / 2, top_in - 0.08, title, ha="center", va="top", fontsize=8.5 if narrow else 9.5)
    # groups of systems not significantly different
    for g, (i, j) in enumerate(groups):
        y = -0.12 - 0.12 * g
        ax.plot([a[i] - 0.02 * unit * 4, a[j] + 0.02 * unit * 4], [y, y], color="black", linewidth=2.6,
                solid_capstyle="round")
    y0 = -bar_in - step_in
    for k in range(n):
        left = k < n_left
        level = k if left else n - 1 - k
        y = y0 - step_in * level
        end = lo - 0.1 * unit if left else hi + 0.1 * unit
        ax.plot([a[k], a[k], end], [0, y, y], color="0.25", linewidth=0.7)
        ax.text(end - 0.05 * unit if left else end + 0.05 * unit, y, names[k],
                ha="right" if left else "left", va="center", fontsize=font)
        ax.text(end, y + 0.03, f"{a[k]:.2f}", ha="left" if left else "right", va="bottom", fontsize=MIN_FONT,
                color="0.3")
    return fig


# ---------------------------------------------------------------------------------------------
# bootstrap rank intervals and task-subset curves
# ---------------------------------------------------------------------------------------------
def rank_interval_figure(rank: np.ndarray, low: np.ndarray, high: np.ndarray, systems: Sequence[object],
                         rules: Sequence[object] | None = None, *, tied: np.ndarray | None = None, level: float = 0.95,
                         title: str = "", max_cols: int = 5, narrow: bool = False) -> Figure:
    """Full-data ranks with bootstrap rank intervals: one panel per rule, the systems in the given order, each panel
    with its own rank range (that of the systems drawn) and tick labels.

    Parameters
    ----------
    rank : ndarray, shape (R, S) or (S,)
        Full-data rank of every system under every rule (1 = best; ``NaN``:
        not ranked).
    low, high : ndarray, same shape
        Interval bounds (percentiles of the replicate ranks).
    systems : sequence of S names, in the order to draw (top row first)
    rules : sequence of R labels, optional
        Panel titles.
    tied : ndarray of bool, same shape, optional
        Systems statistically tied with the leader (highlighted).
    level : float
        Coverage of the intervals (for the legend).
    title : str
    max_cols : int
        Panels per row; the system names label the first panel of each row.
    narrow : bool
        The layout of a phone (:data:`NARROW_IN` wide, at most two panels per row).

    Returns
    -------
    matplotlib.figure.Figure
    """
    r = np.atleast_2d(np.asarray(rank, dtype=np.float64))
    lo = np.atleast_2d(np.asarray(low, dtype=np.float64))
    hi = np.atleast_2d(np.asarray(high, dtype=np.float64))
    tie = np.zeros(r.shape, dtype=bool) if tied is None else np.atleast_2d(np.asarray(tied, dtype=bool))
    n_r, n = r.shape
    labels = [str(x) for x in rules] if rules is not None else [""] * n_r
    names = _labels(systems, NARROW_CHARS if narrow else LABEL_CHARS)
    font = MIN_FONT if narrow else _FONT
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    fig, ncols, title = _interval_figure(n_r, n, names, title or "Bootstrap rank intervals", font, max_cols, narrow)
    axes = fig.subplots(-(-n_r // ncols), ncols, squeeze=False)
    y = np.arange(n)
    colors = {False: "#3b6ea5", True: "#d08c1f"}
    for k, ax in enumerate(axes.flat):
        if k >= n_r:
            ax.set_visible(False)
            continue
        for flag in (False, True):
            m = (tie[k] == flag) & np.isfinite(r[k])
            if m.any():
                ax.hlines(y[m], lo[k][m], hi[k][m], color=colors[flag], linewidth=2.2, alpha=0.75)
                ax.plot(r[k][m], y[m], "o", color=colors[flag], markersize=4, markeredgecolor="black",
                        markeredgewidth=0.5)
        ax.set_ylim(n - 0.5, -0.5)
        # each panel's own rank range (the systems drawn), every panel with its rank axis labelled
        top = float(np.concatenate([hi[k][np.isfinite(hi[k])], r[k][np.isfinite(r[k])], [1.0]]).max())
        ax.set_xlim(0.5, top + 0.5)
        # the row lines as one collection, the names only where a row of panels starts (ticks are costly to draw)
        ax.hlines(y, 0.5, top + 0.5, color="0.96", linewidth=0.8, zorder=0.5)
        ax.set_yticks(y, names, fontsize=font) if k % ncols == 0 else ax.set_yticks([])
        ax.tick_params(axis="y", length=0)
        ax.tick_params(axis="x", labelsize=font)
        ax.grid(axis="x", color="0.9")
        ax.set_axisbelow(True)
        if labels[k]:
            ax.set_title(short_label(labels[k], 18 if narrow else 24), fontsize=7.5 if narrow else 9)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5 if narrow else 6, integer=True, min_n_ticks=2))
        if k + ncols >= n_r:  # no panel below: name the rank axis
            ax.set_xlabel("rank (1 = best)", fontsize=font)
    handles = [Line2D([], [], color=colors[False], linewidth=2.2, marker="o", markeredgecolor="black",
                      label=f"full-data rank and {100 * level:g}% rank interval"),
               Line2D([], [], color=colors[True], linewidth=2.2, marker="o", markeredgecolor="black",
                      label="not separated from the leader")]
    fig.legend(handles=handles, loc="outside lower center", ncol=1 if narrow else 2, fontsize=MIN_FONT if narrow else 7.5,
               frameon=False)
    fig.suptitle(title, fontsize=8.5 if narrow else 10)
    return fig


def _interval_figure(n_r: int, n: int, names: Sequence[str], title: str, font: float, max_cols: int,
                     narrow: bool) -> tuple[Figure, int, str]:
    """The figure of :func:`rank_interval_figure` (``n_r`` panels of ``n`` rows): it, its columns and its title."""
    nrows = -(-n_r // max(1, min(max_cols, 3) if narrow else max_cols))
    ncols = -(-n_r // nrows)
    label_w = _label_width(names, font)
    if narrow:
        title = _wrap(title, NARROW_IN, 8.5)
        return _figure(NARROW_IN, nrows * (_NARROW_ROW * n + 0.75) + 1.4), ncols, title
    panel = min(4.2 if n_r == 1 else 2.0, (WIDE_IN - label_w - 0.6) / ncols)
    fig = _figure(min(max(label_w + panel * ncols + 0.6, _title_width(title)), WIDE_IN), nrows * (_ROW * n + 0.75) + 1.0)
    return fig, ncols, title


def subset_curve_figure(sizes: np.ndarray, mean: np.ndarray, std: np.ndarray, rules: Sequence[object], *,
                        title: str = "", ylabel: str = "Kendall $\\tau$ with the all-task ranking",
                        narrow: bool = False, strong: Sequence[int] | None = None) -> Figure:
    """Task-subset robustness (Colombo et al. 2022, Fig. 5): mean +- std of tau against the subset size.

    Parameters
    ----------
    sizes : ndarray, shape (N,)
        Subset sizes (number of tasks drawn).
    mean, std : ndarray, shape (R, N)
        Mean and standard deviation over the random subsets, per rule.
    rules : sequence of R labels
    title, ylabel : str
    narrow : bool
        The layout of a phone (:data:`NARROW_IN` wide, the legend below the plot).
    strong : sequence of int, optional
        Rows drawn in colour with their +-1 std band (e.g. the primary rule and the mean baseline); the others are
        thin grey lines without band, one legend entry for all. None: every row strong.

    Returns
    -------
    matplotlib.figure.Figure
        One line per rule, the strong ones with a shaded +-1 std band.
    """
    x = np.asarray(sizes, dtype=np.float64)
    M = np.atleast_2d(np.asarray(mean, dtype=np.float64))
    S = np.atleast_2d(np.asarray(std, dtype=np.float64))
    n_rules = M.shape[0]
    font = MIN_FONT if narrow else _FONT
    fig = _figure(NARROW_IN, 3.4 + 0.12 * -(-n_rules // 2)) if narrow else _figure(7.5 if n_rules > 6 else 6.5, 4.2)
    ax = fig.add_subplot()
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D"]
    bold = list(range(n_rules)) if strong is None else [i for i in strong if 0 <= i < n_rules]
    faint = [i for i in range(n_rules) if i not in bold]
    for k, i in enumerate(faint):  # under the strong ones, one legend entry for all
        ok = np.isfinite(M[i])
        ax.plot(x[ok], M[i, ok], "-", color="0.6", linewidth=0.8, zorder=1,
                label=f"{len(faint)} other rules" if k == 0 else "_nolegend_")
    for k, i in enumerate(bold):
        color = cmap(k % 10)
        ok = np.isfinite(M[i])
        ax.plot(x[ok], M[i, ok], styles[(k // 10) % 4], marker=markers[(k // 10) % 4], markersize=3, color=color,
                linewidth=2.0 if faint else 1.4, label=short_label(rules[i], 24), zorder=3)
        band = ok & np.isfinite(S[i])  # tau lies in [-1, 1]: so does its band
        ax.fill_between(x[band], np.clip(M[i] - S[i], -1.0, 1.0)[band], np.clip(M[i] + S[i], -1.0, 1.0)[band],
                        color=color, alpha=0.15 if faint else 0.10, linewidth=0, zorder=2)
    shown = bold + faint
    M, S = M[shown], np.where(np.isin(np.arange(n_rules), bold)[:, None], S, 0.0)[shown]
    n_rules = len(bold) + min(1, len(faint))  # legend entries
    low = np.nanmin(np.clip(M - np.nan_to_num(S), -1.0, 1.0)) if np.isfinite(M).any() else -1.0
    ax.set_ylim(max(-1.02, min(0.0, np.floor(low * 10) / 10) - 0.02), 1.02)
    ax.set_xlabel("number of tasks in the subset", fontsize=font)
    ax.set_ylabel(ylabel, fontsize=font)
    if x.size:
        most = 8 if narrow else 20
        ax.set_xticks(x if x.size <= most else np.unique(np.linspace(x.min(), x.max(), most // 2).round()))
    ax.tick_params(labelsize=font)
    ax.grid(color="0.9")
    ax.set_axisbelow(True)
    title = title or "Task-subset robustness (mean $\\pm$ std over random subsets)"
    if narrow:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=MIN_FONT, frameon=False)
        fig.suptitle(_wrap(title, NARROW_IN, 8.5), fontsize=8.5)
        return fig
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
              ncol=2 if n_rules > 14 else 1)
    ax.set_title(title, fontsize=10)
    return fig
