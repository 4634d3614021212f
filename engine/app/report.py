"""Ranking reports (``votebench report``): an HTML page with figures and tables.

:func:`build_report` takes a score file (or score tensor), ranks it with
several rules, or opens a sweep results store (:func:`engine.sweep.open_results`),
and writes into ``out_dir``::

    index.html            one self-contained page (inline CSS) with the tables, images referenced relatively
    figures/NAME.png|svg  one file per figure and format
    tables/NAME.csv|md|tex

Content, for a score input:

* the rankings of every requested rule side by side with the rank change of
  every system against the ``mean`` baseline (table and figure);
* a heatmap of the ranks across rules with a dendrogram of the systems
  (Euclidean distance, average linkage on the rank vectors; xLLMBench Fig. 2);
* a critical-difference diagram: Friedman test over the tasks and Nemenyi's
  critical difference (Demsar 2006);
* PROMETHEE II positive and negative flows (usual preference function, equal
  weights);
* the pairwise win matrix;
* bootstrap rank intervals per rule (:func:`engine.bootstrap`);
* task-subset robustness curves (Colombo et al. 2022, Fig. 5;
  :func:`engine.labelled.robustness.task_subset_curve`);
* paired tests of the ``paired_top_k`` best systems by mean, with their compact letter
  display (systems sharing a letter are not significantly different): on instance-level
  input the paired permutation test of the mean difference (:func:`engine.compare_scores`,
  ``paired_resamples`` sign patterns per pair, Holm's correction); on task-level input
  Friedman, then Nemenyi or Wilcoxon-Holm on those systems (:func:`engine.kernels.significance.compare`).

For a results store the rankings come from the store's rules (recomputed on the
input when the input file is found with the checksum the store recorded,
otherwise read from the store's bootstrap groups), the intervals from the
stored replicates, the subset curves from the ``subsets`` groups and a rank
heatmap per ``grid`` group (one column per parameter point).

Figures show at most ``top_k`` systems and say so in their titles; tables
always hold every system.  The report is written into a temporary folder that
is renamed into place, so an error leaves nothing half-written; an existing
``out_dir`` is replaced only when it is empty or an earlier report.

The statistics come from the engine (:mod:`engine.kernels.significance`: Friedman, Nemenyi,
Wilcoxon-Holm; :mod:`engine.labelled.comparison`: rank changes, PROMETHEE flows, rule flags,
bootstrap intervals); this module only lays them out.  The figures show the
leaderboard's best ``--top-k`` systems; :func:`select_systems` chooses those of a
parameter grid's heat map (a grid has no leaderboard).
"""

from __future__ import annotations

import csv
import html
import json
import math
import os
import re
import shutil
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from engine.app.render import draw_figure, figure_writer, run_aside, save_figure
from engine.dims import RULE, SYSTEM, TASK
from engine.errors import VotebenchError
from engine.kernels.checks import check_alpha
from engine.kernels.costs import Sizes
from engine.kernels.ranking import label_positions, rank_order
from engine.kernels.significance import friedman_test, nemenyi_q
from engine.labelled.comparison import RuleFlag, degenerate_ranking, promethee_flows, rank_changes, rule_flags
from engine.progress import stage

if TYPE_CHECKING:  # pragma: no cover

    from matplotlib.figure import Figure

__all__ = [
    "FORMATS",
    "format_change",
    "select_systems",
    "find_input",
    "ReportSpec",
    "build_report",
]

#: figure formats :func:`build_report` can write
FORMATS = ("png", "svg", "pdf")
_MARKER = ".votebench-report"
#: figures with a phone layout show it on screens up to this width (CSS px; the page's own phone layout starts there)
NARROW_PX = 700
#: a figure at most this wide (px) needs no phone layout: in a 370 px column its 6.5 pt (9.9 px) text stays >= 9 px
PHONE_FITS_PX = 405
#: up to this screen width a table prints an interval under its value (:attr:`_Table.under`), its own column hidden
PHONE_MERGE_PX = 420
_BASELINE = "mean"
_UP, _DOWN = "\u2191", "\u2193"


def format_change(rank: float, delta: float, *, fmt: str = "text", baseline: bool = False, shared: bool = False) -> str:
    """A rank with its change against the baseline, e.g. ``"3 ↑2"``, ``"5 ↓1"``, ``"4 ±0"``, ``"2= ↑1"``.

    The words of the dashboard: ``=`` after a rank means a rank shared with another system; no change is ``±0``.

    Parameters
    ----------
    rank, delta : float
        The rank and ``baseline rank - rank`` (positive: better than the baseline).
    fmt : {"text", "tex"}
        Unicode arrows, or LaTeX ``$\\uparrow$`` / ``$\\downarrow$``.
    baseline : bool
        The baseline's own column: the rank alone.
    shared : bool
        Another system has the same rank (``"="`` after the rank).

    Examples
    --------
    >>> format_change(3.0, 2.0), format_change(5.0, -1.0), format_change(4.0, 0.0), format_change(2.0, 0.0, baseline=True)
    ('3 ↑2', '5 ↓1', '4 ±0', '2')
    >>> format_change(2.0, 1.0, shared=True)
    '2= ↑1'
    """
    if rank is None or not math.isfinite(rank):
        return "-"
    r = f"{rank:g}" + ("=" if shared else "")
    if baseline or delta is None or not math.isfinite(delta):
        return r
    d = int(round(delta))
    if d == 0:
        return f"{r} $\\pm$0" if fmt == "tex" else f"{r} \u00b10"
    if fmt == "tex":
        return f"{r} $\\{'uparrow' if d > 0 else 'downarrow'}${abs(d)}"
    return f"{r} {_UP if d > 0 else _DOWN}{abs(d)}"


def select_systems(ranks: np.ndarray, k: int, *, reference: int = 0, labels: Sequence[str] | None = None) -> np.ndarray:
    """The systems a figure shows when there are more than ``k``.

    The union of every rule's top ``m`` systems, with ``m`` the largest value
    for which the union holds at most ``k`` systems (xLLMBench, Fig. 2), filled
    up to ``k`` with the best remaining systems by mean rank over the rules.

    Parameters
    ----------
    ranks : ndarray, shape (R, S)
        Ranks of ``S`` systems under ``R`` rules (1 = best; ``NaN`` = unranked).
    k : int
        Most systems to show.
    reference : int
        Row whose ranking orders the result (ties: in the canonical order of ``labels``, the engine's one order of
        labels, :func:`engine.kernels.ranking.label_order`, so that a tie reads the same in every table and figure;
        without labels, then the mean rank, then the index).
    labels : sequence of str, optional
        The systems' labels.

    Returns
    -------
    ndarray of int
        Column indices, best first by the reference ranking.
    """
    R = np.atleast_2d(np.asarray(ranks, dtype=np.float64))
    n_s = R.shape[1]
    worst = np.where(np.isfinite(R), R, n_s + 1.0)
    mean = worst.mean(axis=0)
    order = np.lexsort((np.arange(n_s), mean, worst[reference])) if labels is None else rank_order(R[reference], labels)
    if n_s <= k:
        return order
    chosen = np.zeros(n_s, dtype=bool)
    for m in range(1, n_s + 1):
        union = np.asarray((worst <= m).any(axis=0), dtype=bool)
        if union.sum() > k:
            break
        chosen = union
    rest = [i for i in np.lexsort((np.arange(n_s), worst[reference], mean)) if not chosen[i]]
    for i in rest[: k - int(chosen.sum())]:
        chosen[i] = True
    return np.asarray([i for i in order if chosen[i]], dtype=np.intp)


# ---------------------------------------------------------------------------------------------
# output folder
# ---------------------------------------------------------------------------------------------
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(name)).strip("-") or "x"


#: what a Markdown table cell must not carry as it is: HTML (``<`` ``>`` ``&`` as entities, so that a name such as
#: ``<img src=x onerror=...>`` stays text), the cell border ``|`` and inline markup (backslash escapes, CommonMark)
_MD = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_",
       "[": "\\[", "]": "\\]", "~": "\\~"}


def _md_cell(v: object) -> str:
    """``v`` as the text of a Markdown (GFM) table cell: shown verbatim wherever the table is rendered."""
    return "".join(_MD.get(c, c) for c in " ".join(str(v).splitlines()))


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
        "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


#: every table is written in these formats (and linked from the page)
_TABLE_FORMATS = ("csv", "json", "md", "tex")


def _json_value(v: Any) -> Any:
    """A CSV cell as a JSON value: numbers as numbers (``null`` for NaN/inf), flags as booleans, the rest as text."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    return None if v is None or v == "" else str(v)


def _tex_escape(v: object) -> str:
    return "".join(_TEX.get(c, c) for c in str(v))


@dataclass
class _Table:
    """One table in three renderings: numeric CSV rows, display rows (text) and LaTeX display rows."""

    header: list[str]
    csv_rows: list[list[Any]]
    text_rows: list[list[str]]
    tex_rows: list[list[str]] | None = None  # already-escaped LaTeX cells (default: escaped text rows)
    csv_header: list[str] | None = None
    classes: list[list[str]] | None = None  # CSS classes of the HTML cells
    short: list[str] | None = None  # header labels on a phone (an <abbr> with the full label as its title)
    titles: list[str] | None = None  # the header cells' tooltips ("": none)
    best: list[str] | None = None  # per column, the end the first click on its header puts first (best_directions)
    # per column, the column whose text a narrow phone (PHONE_MERGE_PX) prints under this one's in small type, that
    # column then hidden (-1: none; the score and its interval in one cell, so that no number is cut at the box's edge)
    under: list[int] | None = None


@dataclass
class _Out:
    """Writes figures and tables into the temporary report folder."""

    root: Path
    formats: tuple[str, ...]
    prefix: str = ""

    def figure(self, name: str, fig: Figure, caption: str) -> str:
        """Save ``fig`` in every format; the HTML ``<figure>`` for it (a figure of a sweep kind's section)."""
        stem = _safe(self.prefix + name)
        (self.root / "figures").mkdir(exist_ok=True)
        with stage(f"figure {stem}"):
            save_figure(fig, [(self.root / "figures" / f"{stem}.{ext}", ext) for ext in self.formats])
        fig.clear()
        return self._figure_html(name, stem, caption, "")

    def drawn(self, name: str, draw: Callable[..., Figure], caption: str) -> str:
        """The HTML ``<figure>`` of ``draw(narrow=False)`` saved in every format, with ``draw(narrow=True)``, the layout
        of a phone, as PNG when PNG is written and the wide figure is wider than :data:`PHONE_FITS_PX` (shrunk into a
        phone's column, its smallest text would fall below 9 px), shown on a screen up to :data:`NARROW_PX` wide.

        ``draw`` must be picklable (a module function of plain data): the figure is built and saved by the report's
        worker process when there is one (:func:`engine.app.render.draw_figure`), and whether it has a phone layout
        is filled into the page when the report's figures are done."""
        from engine.app.plots import DPI

        stem = _safe(self.prefix + name)
        (self.root / "figures").mkdir(exist_ok=True)
        phone = "png" in self.formats
        source = f'<source media="(max-width: {NARROW_PX}px)" srcset="figures/{stem}.narrow.png">'
        with stage(f"figure {stem}"):
            chosen = draw_figure(draw, [(self.root / "figures" / f"{stem}.{ext}", ext) for ext in self.formats],
                                 [(self.root / "figures" / f"{stem}.narrow.png", "png")] if phone else [],
                                 fits_px=PHONE_FITS_PX, dpi=DPI, shown=source)
        return self._figure_html(name, stem, caption, chosen if phone else None)

    def _figure_html(self, name: str, stem: str, caption: str, source: str | None) -> str:
        """The ``<figure>``: the PNG (else SVG) image, in a ``<picture>`` with ``source`` (a phone's image, ``""``, or a
        stand-in for either) unless None, the caption and the download links."""
        shown = next((e for e in ("png", "svg") if e in self.formats), None)
        links = export_links(name.replace("_", " ") + " figure", [(f"figures/{stem}.{e}", e) for e in self.formats])
        alt = html.escape(html.unescape(re.sub(r"<[^>]+>", "", caption)))  # the caption is HTML: its text, escaped once
        img = f'<img src="figures/{stem}.{shown}" alt="{alt}">' if shown else ""
        if img and source is not None:
            img = f"<picture>{source}{img}</picture>"
        return f'<figure id="fig-{stem}">{img}<figcaption>{caption}<br><span class="export">{links}</span></figcaption></figure>'

    def table(self, name: str, t: _Table, *, caption: str = "", show: bool = True, search: bool = False,
              css: str = "") -> str:
        """Write ``tables/NAME.csv|json|md|tex``; the HTML table (``show``; with a search box over its first column:
        ``search``; ``css``: more CSS classes of the table) or links."""
        stem = _safe(self.prefix + name)
        d = self.root / "tables"
        d.mkdir(exist_ok=True)
        with (d / f"{stem}.csv").open("w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(t.csv_header or t.header)
            w.writerows([["" if (isinstance(v, float) and not math.isfinite(v)) else v for v in row] for row in t.csv_rows])
        md = ["| " + " | ".join(_md_cell(h) for h in t.header) + " |",
              "|" + "|".join("---" if i == 0 else "---:" for i in range(len(t.header))) + "|"]
        md += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.text_rows]
        (d / f"{stem}.md").write_text("\n".join(md) + "\n", encoding="utf-8")
        tex_rows = t.tex_rows or [[_tex_escape(c) for c in row] for row in t.text_rows]
        tex = ["% votebench table; needs no extra LaTeX package",
               "\\begin{tabular}{l" + "r" * (len(t.header) - 1) + "}", "\\hline",
               " & ".join(_tex_escape(h) for h in t.header) + " \\\\", "\\hline"]
        tex += [" & ".join(row) + " \\\\" for row in tex_rows]
        tex += ["\\hline", "\\end{tabular}"]
        (d / f"{stem}.tex").write_text("\n".join(tex) + "\n", encoding="utf-8")
        cols = t.csv_header or t.header
        records = [{c: _json_value(v) for c, v in zip(cols, row)} for row in t.csv_rows]
        (d / f"{stem}.json").write_text(json.dumps({"columns": cols, "rows": records}, ensure_ascii=False,
                                                   allow_nan=False) + "\n", encoding="utf-8")
        what = caption.rstrip(": ") or name
        links = export_links(what, [(f"tables/{stem}.{e}", e) for e in _TABLE_FORMATS])
        if not show:
            return f'<p class="export">{html.escape(what)}. {links}</p>'
        return self._html_table(stem, t, caption, links, search=search, css=css)

    @staticmethod
    def _html_table(stem: str, t: _Table, caption: str, links: str, *, search: bool, css: str) -> str:
        """The sortable HTML table, its export links and (``search``) a search box over its first column."""
        def label(h: str, short: str | None) -> str:
            if not short or short == h:
                return html.escape(h)
            return (f'<span class="long">{html.escape(h)}</span>'
                    f'<abbr class="short" title="{html.escape(h)}">{html.escape(short)}</abbr>')

        n = len(t.header)
        names = search or "names" in css.split()  # a table of system names: one line each on a phone
        shorts: list[str | None] = list(t.short) if t.short else [None] * n
        tips = [f' title="{html.escape(x)}"' if x else "" for x in (t.titles or [""] * n)]
        best = t.best or best_directions(t.header)
        under = t.under or [-1] * n
        hidden = {u for u in under if u >= 0}  # the columns a narrow phone prints under another one
        col = ["merged" if c in hidden else "" for c in range(n)]
        # a merged header: the hidden column's name under this one's, less their common first word ("95% CI")
        head_ci = ["" if u < 0 else ' data-ci="{}"'.format(html.escape(
            t.header[u].split(" ", 1)[1] if t.header[u].split(" ")[0] == t.header[c].split(" ")[0] and " " in t.header[u]
            else t.header[u])) for c, u in enumerate(under)]
        th_cls = [f' class="{k}"' if k else "" for k in col]
        head = "".join(f'<th scope="col"{k} aria-sort="none" data-best="{b}"{tip}{ci}><button type="button" class="sort">'
                       f'{label(h, s)}</button></th>' for k, h, s, tip, b, ci in zip(th_cls, t.header, shorts, tips, best,
                                                                                    head_ci))
        body = []
        for i, row in enumerate(t.text_rows):
            cls = t.classes[i] if t.classes else [""] * n
            cells = []
            for c, (v, k) in enumerate(zip(row, cls)):
                k = f"{k} {col[c]}".strip()
                attr = (f' class="{k}"' if k else "") + (f' data-ci="{html.escape(row[under[c]])}"' if under[c] >= 0 else "")
                # a name cut short on a phone (an ellipsis) keeps its whole text: in the cell and in its title
                attr += f' title="{html.escape(v)}"' if c == 0 and names else ""
                cells.append(f"<td{attr}>{html.escape(v)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
        # the scroll region is named by the table's caption (aria-labelledby), not a second copy of the name
        wrap = f'<div class="table" id="t-{stem}" tabindex="0" role="region" aria-labelledby="c-{stem}">'
        if caption:
            cap = f'<caption id="c-{stem}">{html.escape(caption)}</caption>'
        else:
            wrap = f'<div class="table" id="t-{stem}" tabindex="0" role="region" aria-label="{html.escape(stem)}">'
        box = ""
        if search:
            box = (f'<div class="search"><label for="q-{stem}">Search systems</label> <input type="search" id="q-{stem}" '
                   f'data-table="t-{stem}" autocomplete="off" placeholder="name contains…"> '
                   '<span class="count" role="status" aria-live="polite"></span></div>')
        css = " ".join(x for x in ("sortable", "names" if search and "names" not in css.split() else "", css) if x)
        return (f'{box}<p class="export">{links}</p>{wrap}<table class="{css}">{cap}'
                f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


#: the names of the download formats of tables and figures
FORMAT_NAMES = {"csv": "CSV", "json": "JSON", "md": "Markdown", "tex": "LaTeX", "png": "PNG", "svg": "SVG", "pdf": "PDF"}


def export_links(what: str, files: Sequence[tuple[str, str]]) -> str:
    """``Download: CSV · JSON · ...`` links to ``files`` (``(href, format)``), each link's accessible name saying what
    it downloads."""
    items = " \u00b7 ".join(f'<a href="{html.escape(href)}" download aria-label="{html.escape(what)} as '
                            f'{FORMAT_NAMES.get(ext, ext.upper())}">{FORMAT_NAMES.get(ext, ext.upper())}</a>'
                            for href, ext in files)
    return f'<span class="dl">Download:</span> {items}'


def best_directions(header: Sequence[str]) -> list[str]:
    """Which end of each column is best, for the first click on its header: ``""`` (the first column, text:
    A to Z), ``"low"`` (ranks, rank intervals, p-values: smallest first), else ``"high"`` (largest first)."""
    out = []
    for i, h in enumerate(header):
        words = h.lower()
        if i == 0:
            out.append("")
        elif "rank" in words or words in ("ub", "p", "p-value", "p (holm)") or words.startswith("p "):
            out.append("low")
        else:
            out.append("high")
    return out


def _check_out(out: Path) -> None:
    if not out.parent.exists():
        raise VotebenchError(f"{out}: folder {str(out.parent)!r} does not exist")
    if out.exists():
        if not out.is_dir():
            raise VotebenchError(f"{out}: exists and is not a folder; choose a new folder for the report")
        if any(out.iterdir()) and not (out / _MARKER).exists():
            raise VotebenchError(f"{out}: folder is not empty and holds no votebench report; choose a new or empty folder")


def _publish(tmp: Path, out: Path) -> None:
    """Move the finished report into place (replacing an earlier report)."""
    _check_out(out)
    if out.exists():
        old = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(out, old)
        try:
            os.replace(tmp, out)
        except BaseException:
            os.replace(old, out)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


# ---------------------------------------------------------------------------------------------
# report content
# ---------------------------------------------------------------------------------------------
@dataclass
class _Rankings:
    """Full-data rankings of one input: one row per rule label, the baseline first."""

    labels: list[str]
    baseline: str
    systems: list[str]  # ranked systems (score under the baseline)
    score: np.ndarray  # (R, S)
    rank: np.ndarray  # (R, S)
    dropped: list[str] = field(default_factory=list)

    def ranks(self) -> xr.DataArray:
        return xr.DataArray(self.rank.T, dims=(SYSTEM, RULE), coords={SYSTEM: self.systems, RULE: self.labels})


@dataclass
class _Settings:
    alpha: float
    top_k: int
    replicates: int
    repeats: int
    over: str  # AUTO_OVER: instances for instance-level score input, else tasks (resolved by :func:`resolve_over`)
    seed: int
    test: str = "auto"
    paired_top_k: int = 15
    paired_resamples: int = 4000
    primary: str | None = None  # --primary: the rule the leaderboard is ranked by (None: the default choice)
    over_given: bool = True  # --over given (else chosen by :func:`resolve_over`)
    primary_used: list[str] = field(default_factory=list)  # the primary rule of each input, as chosen (for the page)
    resampled: tuple[str, int] | None = None  # score input: what the bootstrap resamples, in words, and how many
    display: dict[str, str] = field(default_factory=dict)  # rule label -> its name in tables (see :func:`display_names`)
    display_short: dict[str, str] = field(default_factory=dict)  # rule label -> its name in figures
    scale_warning: str | None = None  # a mean over tasks of very different score ranges (:func:`scale_warning`)


def over_words(st: _Settings, *, warn: bool = True) -> str:
    """What the bootstrap resampled, for the page: the axis, how it was chosen, the judges and a warning when few."""
    how = "" if st.over_given else " (the default for this input)"
    if st.resampled is None:
        return f"{st.over}{how}"
    words, n = st.resampled
    few = (f" \u26a0 only {n} resampled: the intervals are unreliable with fewer than {FEW_JUDGES}"
           if warn and st.over != "systems" and n < FEW_JUDGES else "")
    return f"{st.over}{how}: {words}{few}"


# ---------------------------------------------------------------------------------------------
# rules whose ranking is not an aggregate to compare
# ---------------------------------------------------------------------------------------------
def _apply_flags(rk: _Rankings, flags: Sequence[RuleFlag], *, explicit: bool, notes: list[str],
                 primary: str | None = None) -> tuple[_Rankings, list[str]]:
    """The rankings without the rules left out (unless asked for by name, or ``primary``: the --primary rule), the
    notes, and the labels left out."""
    gone = [f for f in flags if f.leave_out and not explicit and f.label not in (rk.baseline, primary)]
    for f in flags:
        if f.kind == "fallback":
            notes.append(f"{f.text}.")
    if explicit:
        for f in flags:
            if f.leave_out:
                notes.append(f"Flagged: {f.text}.")
    if gone:
        notes.append("Left out of the rank tables and figures (name them with --rule to see them anyway): "
                     + "; ".join(f.text for f in gone) + ".")
    keep = [i for i, lb in enumerate(rk.labels) if lb not in {f.label for f in gone}]
    if len(keep) == len(rk.labels):
        return rk, [f.label for f in gone]
    from engine.kernels.ranking import min_rank

    S = rk.score[keep]
    return _Rankings([rk.labels[i] for i in keep], rk.baseline, rk.systems, S, min_rank(S), rk.dropped), [f.label for f in gone]


def _flag_section(flags: Sequence[RuleFlag], degen: Mapping[str, str]) -> tuple[str, str] | None:
    """Every rule left out or degenerate: the flagged ones and those whose ranking ties most systems
    (``degen``: label -> why, :func:`_degenerate`)."""
    rows = [f for f in flags if f.kind != "fallback"]
    named = {f.label for f in rows}
    more = [(lb, why) for lb, why in degen.items() if lb not in named]
    if not rows and not more:
        return None
    items = "".join(f"<li>{html.escape(f.text)}</li>" for f in rows)
    items += "".join(f"<li>{html.escape(lb)}: degenerate ranking, {html.escape(why)}</li>" for lb, why in more)
    return ("Single-winner and degenerate rules", "<p>These rules' rankings are not compared as rank changes: a "
            "single-winner rule ranks only its winner, a random judge is one task drawn at random, the optimality "
            "gap needs scores on a 0-1 scale, and a degenerate ranking (more than half of the systems tied, or a "
            "single winner with the others tied) cannot separate the systems, so its ties are not drawn as rank changes "
            f"(\u26a0 in the tables and figures).</p><ul>{items}</ul>")


#: rules that add raw scores across tasks: tasks of very different score ranges weigh unequally in them
SCALE_RULES = ("mean", "geometric_mean")
#: the largest ratio of two tasks' score ranges before the page warns that a mean mixes scales
SCALE_RATIO = 10.0


def scale_warning(X: np.ndarray, tasks: Sequence[str], labels: Sequence[str]) -> str | None:
    """A warning when rules of :data:`SCALE_RULES` average tasks whose score scales (largest absolute score of a task)
    differ by more than :data:`SCALE_RATIO` times (BLEU in points beside ROUGE in [0, 1]), naming the largest and
    smallest; else None.

    >>> scale_warning(np.array([[16.0, 10.0], [0.3, 0.25]]), ["bleu", "rouge"], ["mean"])[:40]
    'mean averages raw scores of tasks whose '
    >>> scale_warning(np.array([[90.0, 10.0], [30.0, 25.0]]), ["a", "b"], ["mean"]) is None
    True
    """
    used = [lb for lb in labels if lb.split("(")[0] in SCALE_RULES]
    mixed = scale_spread(X, tasks) if used else None
    if mixed is None:
        return None
    return (f"{' and '.join(used)} {'averages' if len(used) == 1 else 'average'} raw scores of tasks whose scales "
            f"differ {mixed}, so the large-scale tasks decide {'it' if len(used) == 1 else 'them'}; normalise the "
            "tasks or read the rank-based rules")


def scale_spread(X: np.ndarray, tasks: Sequence[str]) -> str | None:
    """How much the scales of the tasks (rows of ``X``; a task's scale: its largest absolute score) differ, in words,
    when by more than :data:`SCALE_RATIO` times; else None.

    >>> scale_spread(np.array([[16.0, 10.0], [0.3, 0.25]]), ["bleu", "rouge"])
    '53-fold (largest absolute score: bleu 16, rouge 0.3)'
    """
    if X.shape[0] < 2:
        return None
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a task without a score
        spread = np.nanmax(np.abs(X), axis=1)
    ok = np.isfinite(spread) & (spread > 0)
    if ok.sum() < 2:
        return None
    hi, lo = int(np.argmax(np.where(ok, spread, -np.inf))), int(np.argmin(np.where(ok, spread, np.inf)))
    ratio = float(spread[hi] / spread[lo])
    if ratio <= SCALE_RATIO:
        return None
    return f"{ratio:.0f}-fold (largest absolute score: {tasks[hi]} {spread[hi]:.4g}, {tasks[lo]} {spread[lo]:.4g})"


def _shown(rk: _Rankings, st: _Settings) -> tuple[np.ndarray, str]:
    """Indices of the systems the figures show and the title suffix: the leaderboard's first --top-k (by the primary
    rule, ties in the label order, as the leaderboard lists them), the same systems as the bootstrap interval figure's."""
    label, order = _board_order(rk, st)
    idx = order[: st.top_k]
    n = len(rk.systems)
    return idx, (f" (top {len(idx)} of {n} systems by {label})" if len(idx) < n else "")


#: the Kemeny rule solves exactly up to this many systems and ranks by Borda's count beyond
#: (:func:`engine.kernels.kemeny.kemeny_ranking`'s ``exact_max``)
KEMENY_EXACT_MAX = 12


def display_names(labels: Sequence[str], n_systems: int, degen: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """How tables and figures name each rule: the Kemeny rule above :data:`KEMENY_EXACT_MAX` systems says that it is
    Borda's count, a degenerate rule carries a warning sign.

    >>> display_names(["kemeny", "minimax", "borda"], 20, {"minimax": "one winner"})[0]
    {'kemeny': 'kemeny (Borda fallback: > 12 systems)', 'minimax': 'minimax ⚠', 'borda': 'borda'}
    """
    long, short = {}, {}
    for lb in labels:
        fallback = lb.split("(")[0] == "kemeny" and n_systems > KEMENY_EXACT_MAX
        long[lb] = lb + (f" (Borda fallback: > {KEMENY_EXACT_MAX} systems)" if fallback else "")
        short[lb] = (f"{lb}=Borda (>{KEMENY_EXACT_MAX})" if fallback else lb)
        if lb in degen:
            long[lb] += " \u26a0"
            short[lb] += " \u26a0"
    return long, short


def _degenerate(rk: _Rankings) -> dict[str, str]:
    """The rules (not the baseline) whose ranking is degenerate, as the dashboard says it
    (:func:`engine.labelled.comparison.degenerate_ranking`: more than half the systems tied, or a single winner)."""

    out = {}
    for lb, row in zip(rk.labels, rk.rank):
        d = degenerate_ranking(row.tolist())
        if d is not None and lb != rk.baseline:
            out[lb] = str(d["why"])
    return out


#: --over not given: resample instances on instance-level input (the judges the default two-level ranking uses),
#: tasks otherwise
AUTO_OVER = "auto"
#: fewer resampled judges than this get a warning on the page: the intervals of a bootstrap over so few are unreliable
FEW_JUDGES = 10


def resolve_over(over: str, scores: xr.DataArray) -> str:
    """The bootstrap axis of a report on ``scores``: ``over``, or for :data:`AUTO_OVER` instances when the input has
    several instances per task, else tasks."""
    if over != AUTO_OVER:
        return over
    return "instances" if scores.sizes["instance"] > 1 else "tasks"


def resampled_judges(scores: xr.DataArray, over: str) -> tuple[str, int]:
    """What a bootstrap over ``over`` resamples, in words, and how many units it draws from (for instances: the
    fewest instances of a task, as each task's instances are drawn within it)."""
    if over == "tasks":
        n = int(scores.sizes[TASK])
        return f"the {n} tasks (judges), each with its instances", n
    if over == "systems":
        n = int(scores.sizes[SYSTEM])
        return f"the {n} systems (candidates)", n
    X = _numpy(scores.transpose(SYSTEM, TASK, "instance"))
    have = np.isfinite(np.asarray(X.values, dtype=np.float64)).any(axis=0)  # (task, instance)
    per = have.sum(axis=1)
    per = per[per > 0]
    n = int(per.min()) if per.size else 0
    many = f"{n}" if per.size and per.min() == per.max() else f"{n} to {int(per.max())}"
    return f"the instances within each of the {per.size} tasks ({many} per task)", n


#: how the page says which rule is the primary one when --primary is not given
PRIMARY_DEFAULT = ("borda, the sum of the per-task Borda points as in Colombo et al. 2022; else the first rule asked "
                   "for that is neither the baseline nor degenerate")
#: the rule of the leaderboard when --primary is not given and it ranks this input
DEFAULT_PRIMARY_RULE = "borda"


def _primary(rk: _Rankings, degen: Mapping[str, str], primary: str | None = None) -> int:
    """Row of the report's primary rule: ``primary`` (--primary), else :data:`DEFAULT_PRIMARY_RULE` when ranked and not
    degenerate, else the first rule asked for that is neither the baseline nor degenerate (the baseline when none)."""
    if primary is not None:
        if primary not in rk.labels:
            raise VotebenchError(f"primary rule {primary!r} is not among the rules of this report "
                                 f"({', '.join(rk.labels)}): it cannot rank this input or was not asked for")
        return rk.labels.index(primary)
    if DEFAULT_PRIMARY_RULE in rk.labels and DEFAULT_PRIMARY_RULE not in degen:
        return rk.labels.index(DEFAULT_PRIMARY_RULE)
    return next((j for j, lb in enumerate(rk.labels) if lb != rk.baseline and lb not in degen), 0)


def score_decimals(values: Sequence[float], *, least_digits: int = 3, most: int = 10) -> int:
    """Decimals that show ``values`` with at least ``least_digits`` significant digits of the largest, exactly when up
    to two more decimals make them exact (half Borda points stay visible), and keep apart every two values that
    differ (distinct scores never print alike); at most ``most``.

    Examples
    --------
    >>> score_decimals([1300.5, 1300.0, 12.0]), score_decimals([0.8512, 0.8519]), score_decimals([81.25, 80.0])
    (1, 4, 2)
    >>> score_decimals([900.0, 894.5, 889.5]), score_decimals([85.23456, 84.1])
    (1, 1)
    """
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return 0
    big = float(np.abs(v).max())
    k = max(0, least_digits - 1 - int(math.floor(math.log10(big)))) if big > 0 else 0
    # values with few decimals (half Borda points, counts) are shown exactly when two more decimals suffice
    exact = next((j for j in range(min(k + 3, most + 1))
                  if np.all(np.abs(np.round(v, j) - v) <= 1e-9 * np.maximum(1.0, np.abs(v)))), None)
    k = max(k, exact) if exact is not None else k
    distinct = np.unique(v).size
    while k < most and len({f"{x:.{k}f}" for x in v.tolist()}) < distinct:
        k += 1
    return min(k, most)


def _judge_counts(scores: xr.DataArray, systems: Sequence[str], missing: str) -> tuple[np.ndarray, np.ndarray]:
    """Per ranked system: the tasks and the (task, instance) judges with a score behind its row (under
    ``drop-judges``: those where every ranked system has a score, the judges the rules use)."""
    X = _numpy(scores.sel({SYSTEM: list(systems)}).transpose(SYSTEM, TASK, "instance"))
    have = np.isfinite(np.asarray(X.values, dtype=np.float64))
    if missing == "drop-judges":
        have = np.broadcast_to(have.all(axis=0), have.shape)
    return have.any(axis=2).sum(axis=1), have.sum(axis=(1, 2))


@dataclass
class _Board:
    """What the leaderboard shows besides the rankings: the primary rule's bootstrap, the judges behind each row (None:
    no scores) and the words of the aggregation level and missing-score policy."""

    boot: _Boot | None
    counts: tuple[np.ndarray, np.ndarray] | None
    instances: bool
    level: str
    missing: str


def _board_intervals(rk: _Rankings, p: int, boot: _Boot | None) -> tuple[np.ndarray, ...]:
    """Rank interval, score interval and Rank(UB) of every ranked system (NaN without a bootstrap).

    Rank(UB) is :func:`engine.kernels.metrics.rank_upper_bound` (paired: 1 + the systems scoring above this one in at
    least ``1 - alpha`` of the replicates), as the dashboard and ``votebench bootstrap`` give it; the score interval is
    NaN for a bootstrap over systems, whose replicates score different sets of systems."""
    nan = np.full(len(rk.systems), np.nan)
    if boot is None:
        return nan, nan, nan, nan, nan
    r_lo = np.array([boot.by[s][1] if s in boot.by else np.nan for s in rk.systems])
    r_hi = np.array([boot.by[s][2] if s in boot.by else np.nan for s in rk.systems])
    ub = np.array([boot.rank_ub.get(s, np.nan) for s in rk.systems])  # rank_ub holds the systems of boot.by
    if boot.score_low is None or boot.score_high is None:
        return r_lo, r_hi, nan, nan, ub
    s_lo = np.array([boot.score_low.get(s, np.nan) for s in rk.systems])
    s_hi = np.array([boot.score_high.get(s, np.nan) for s in rk.systems])
    return r_lo, r_hi, s_lo, s_hi, ub


#: the leaderboard's mark of a system the leader does not beat in the bootstrap (the dashboard's "tied with the leader")
TIED_MARK = "\u2248"
#: the leaderboard's mark of the leader(s), rank 1 by the primary rule (the dashboard's)
LEADER_MARK = "\u2605"


def rank_range(lo: float, hi: float) -> str:
    """A rank interval as the page prints it: whole ranks as integers (percentile bounds are observed ranks), any other
    bound with one decimal, never by significant digits (``1 – 5``, ``7 – 13``, ``1 – 1,200``).

    An interval of one rank (a system tied in every replicate, as by a degenerate rule) is that rank, not ``5 – 5``.

    >>> rank_range(1.0, 5.0), rank_range(998.0, 1200.0), rank_range(2.0, float("nan")), rank_range(5.0, 5.0)
    ('1 – 5', '998 – 1,200', '–', '5')
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "–"

    def one(v: float) -> str:
        return f"{v:,.0f}" if v == round(v) else f"{v:,.1f}"

    return one(lo) if lo == hi else f"{one(lo)} – {one(hi)}"


def _whole(v: float) -> float | int:
    """A rank for the exports: an int when it is a whole number (ranks and their intervals usually are), else as is."""
    return int(v) if math.isfinite(v) and v == int(v) else v


def _board_table(rk: _Rankings, p: int, order: np.ndarray, board: _Board, st: _Settings) -> _Table:
    """The leaderboard's rows: system, rank, rank interval, Rank(UB), score, score interval, judges."""
    from engine.app.units import rule_unit

    label, boot = rk.labels[p], board.boot
    r_lo, r_hi, s_lo, s_hi, ub = _board_intervals(rk, p, boot)
    pct = f"{100 * (1 - st.alpha):g}%"
    reps = f"B = {boot.replicates}" if boot else "no bootstrap"
    score, rank = rk.score[p], rk.rank[p]
    k = score_decimals(score.tolist())  # the bounds with the scores' decimals: they need not print apart
    vals, cnt = np.unique(rank[np.isfinite(rank)], return_counts=True)
    shared = set(vals[cnt > 1].tolist())
    unit = rule_unit(label).split(" (")[0]
    # the live dashboard's column names; the rule, unit and replicates in the column's title
    header = ["system", "rank", f"rank {pct} CI", "Rank(UB)", "score", f"score {pct} CI", "judges"]
    titles = ["", f"rank by {label}", f"{reps}", "", f"{unit}, higher is better", "", "tasks with a score"]
    short = ["system", "rank", "rank CI", "UB", "score", "score CI", "judges"]  # a phone's header: one short line
    # the exports use the page's words: judges = tasks with a score, cells = task x instance scores
    csv_header = ["system", "rank", "rank_low", "rank_high", "rank_ub", "score", "score_low", "score_high",
                  "tied_with_leader", "judges"]
    if board.instances:
        header.append("cells")
        titles.append("task × instance scores")
        short.append("cells")
        csv_header.append("cells")

    def num(v: float, spec: str) -> str:
        return f"{v:{spec}}" if math.isfinite(v) else "–"

    def rng(a: float, b: float, spec: str) -> str:
        return f"{a:{spec}} – {b:{spec}}" if math.isfinite(a) and math.isfinite(b) else "–"

    csv_rows: list[list[Any]] = []
    text_rows: list[list[str]] = []
    classes: list[list[str]] = []
    for i in order:
        c = [int(board.counts[0][i]), int(board.counts[1][i])] if board.counts is not None else [math.nan, math.nan]
        r = float(rank[i])
        tied = boot is not None and bool(boot.by.get(rk.systems[i], (0.0, 0.0, 0.0, False))[3])
        csv_rows.append([rk.systems[i], _whole(r), _whole(float(r_lo[i])), _whole(float(r_hi[i])),
                         _whole(float(ub[i])), float(score[i]), float(s_lo[i]), float(s_hi[i]), int(tied), *c[: 1 + board.instances]])
        # the marks drawn by the page's CSS after the name (the cell's text stays the name: search, sort, exports)
        classes.append(["lead" if r == 1 else "tied" if tied else ""] + [""] * (len(header) - 1))
        text_rows.append([rk.systems[i], f"{r:g}" + ("=" if r in shared else ""),
                          rank_range(float(r_lo[i]), float(r_hi[i])),
                          num(ub[i], "g"), num(float(score[i]), f".{k}f"), rng(s_lo[i], s_hi[i], f".{k}f"),
                          *[("–" if isinstance(v, float) else str(v)) for v in c[: 1 + board.instances]]])
    under = [-1, 2, -1, -1, 5] + [-1] * (len(header) - 5)  # a narrow phone: each interval under its value
    return _Table(header, csv_rows, text_rows, csv_header=csv_header, classes=classes, short=short, titles=titles,
                  under=under)


def _board_order(rk: _Rankings, st: _Settings) -> tuple[str, np.ndarray]:
    """The primary rule's label and the leaderboard's order: by its rank, ties in the canonical label order
    (:func:`rank_order`; the same in the score report, the store report and ``votebench bootstrap``)."""
    p = _primary(rk, _degenerate(rk), st.primary)
    return rk.labels[p], rank_order(rk.rank[p], rk.systems)


def _leaderboard_section(out: _Out, rk: _Rankings, st: _Settings, board: _Board) -> tuple[str, str]:
    """The main table: every system by the primary rule, its rank and score with their bootstrap intervals, Rank(UB)
    and the judges behind its row."""
    from engine.app.units import rule_unit

    degen = _degenerate(rk)
    label, order = _board_order(rk, st)
    p, boot, n_s = rk.labels.index(label), board.boot, len(rk.systems)
    st.primary_used.append(label)
    pct = f"{100 * (1 - st.alpha):g}%"
    how = "chosen with --primary" if st.primary else f"the default: {PRIMARY_DEFAULT}"
    reps = f"{pct} bootstrap intervals over {boot.replicates} replicates resampling " \
        f"{over_words(st, warn=False) if st.resampled else boot.over}" if boot else \
        "no bootstrap (--replicates 0): no intervals and no Rank(UB)"
    body = [f"<p>{n_s} systems ranked by <b>{html.escape(label)}</b> ({html.escape(how)}); {html.escape(reps)}. "
            f"Aggregation level: {html.escape(board.level.split(':')[0])}; missing scores: {html.escape(board.missing)} "
            "(both explained under Settings).</p>"]
    if boot is not None and st.resampled and st.over != "systems" and st.resampled[1] < FEW_JUDGES:
        body.append(f'<p class="warn">\u26a0 The bootstrap resamples only {st.resampled[1]} judges '
                    f'({html.escape(st.resampled[0])}): with fewer than {FEW_JUDGES} its intervals are unreliable '
                    "(too narrow or too wide); read them with care.</p>")
    if label in degen:
        body.append(f'<p class="warn">\u26a0 The {html.escape(label)} ranking is degenerate ({html.escape(degen[label])}): '
                    "its ties do not separate these systems.</p>")
    iv = (f"the best rank the bootstrap lets this system claim: 1 + the systems that score above it in at least {pct} "
          "of the replicates (LMArena's rank upper bound, made paired: score intervals of one system at a time all "
          "overlap when the bootstrap moves every score together; the dashboard and votebench bootstrap give the "
          "same)") if boot else "no bootstrap"
    lead = f"{LEADER_MARK}: the leader (rank 1)"
    if boot:
        lead += (f"; {TIED_MARK}: tied with the leader (the leader does not score above it in at least "
                 f"{pct} of the bootstrap replicates; the dashboard's \u2248). A system without {TIED_MARK} "
                 "has Rank(UB) of 2 or more")
    cols = [("system", f"the system (search: type part of a name; Esc clears); {lead}"),
            ("rank", f"rank by {label}; rank 1 = best; competition ranks: tied systems share the better rank, "
                     "marked '='"),
            (f"rank {pct} CI", f"bootstrap {_interval_words(st)}" if boot else "none"),
            ("Rank(UB)", iv),
            ("score", f"{rule_unit(label)}; higher is better"),
            (f"score {pct} CI", f"bootstrap interval = the {50 * st.alpha:g}-{100 - 50 * st.alpha:g}% percentiles of "
                                "the replicate scores"
             if boot is not None and boot.score_low is not None else "none"),
            ("judges" + (", cells" if board.instances else ""),
             "the judges (tasks) with a score behind the row" + (", and its scored task \u00d7 instance cells"
                                                                 if board.instances else "")
             + f" (missing scores: {board.missing})")]
    legend = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in cols)
    table = _board_table(rk, p, order, board, st)
    body.append(out.table("leaderboard", table, caption=f"Leaderboard by {label}", search=True, css="board"))
    body.append(f'<details class="cols" open><summary>Columns</summary><dl>{legend}</dl></details>')
    return ("Leaderboard", "\n".join(body))


def _ranking_sections(out: _Out, rk: _Rankings, st: _Settings, notes: list[str]) -> list[tuple[str, str]]:
    from engine.app import plots

    sections = []
    R = rk.rank  # (rules, systems)
    n_r, n_s = R.shape
    degen = _degenerate(rk)
    p = _primary(rk, degen, st.primary)
    order = _board_order(rk, st)[1]  # the leaderboard's order: its rule's ranks, ties in the label order
    ranks = rk.ranks()
    delta = rank_changes(ranks, baseline=rk.baseline).values  # (S, R)
    shared = [np.isin(row, [v for v, c in zip(*np.unique(row[np.isfinite(row)], return_counts=True)) if c > 1])
              for row in R]
    fallback = f" (Borda fallback: > {KEMENY_EXACT_MAX} systems)"  # too wide for a header: a dagger, said in the legend
    header = ["system"] + [(st.display.get(lb) or lb + (" \u26a0" if lb in degen else "")).replace(fallback, "\u2020")
                           + (" (baseline)" if lb == rk.baseline else "") + (" (primary)" if j == p and j else "")
                           for j, lb in enumerate(rk.labels)]
    dagger = any("\u2020" in h for h in header)
    csv_header = ["system"] + [c for lb in rk.labels for c in ((lb,) if lb == rk.baseline else (lb, f"{lb}_change"))]
    csv_rows, text_rows, tex_rows, classes = [], [], [], []
    for i in order:
        crow: list[Any] = [rk.systems[i]]
        trow, xrow, cls = [rk.systems[i]], [_tex_escape(rk.systems[i])], [""]
        for j, lb in enumerate(rk.labels):
            base = lb == rk.baseline
            r, d = float(R[j, i]), float(delta[i, j])
            if lb in degen:  # its ties are no rank changes: the rank alone, no move in any format
                d = math.nan
            crow += [int(r) if math.isfinite(r) else ""] + ([] if base else [int(d) if math.isfinite(d) else ""])
            trow.append(format_change(r, d, baseline=base, shared=bool(shared[j][i])))
            xrow.append(format_change(r, d, fmt="tex", baseline=base, shared=bool(shared[j][i])))
            cls.append("" if base or lb in degen or not math.isfinite(d) or d == 0 else ("up" if d > 0 else "down"))
        csv_rows.append(crow)
        text_rows.append(trow)
        tex_rows.append(xrow)
        classes.append(cls)
    table = _Table(header, csv_rows, text_rows, tex_rows, csv_header, classes,
                   best=[""] + ["low"] * (len(header) - 1))  # every column a rank: the first click puts rank 1 first
    body = [f"<p>{n_s} ranked systems, rank 1 = best (competition ranks: tied systems share the better rank), "
            f"listed by the {html.escape(rk.labels[p])} ranking (the primary rule); sort by any column header.</p>",
            f'<p class="legend"><span>\'=\' shared rank</span> <span>{_UP}n / {_DOWN}n: n places higher / lower than '
            f'the {html.escape(rk.baseline)} baseline, \u00b10 the same place</span> <span>\u26a0 degenerate ranking '
            "(its ties are not rank changes: the rank alone, no arrow, not coloured)</span>"
            + (f" <span>\u2020 Borda fallback: above {KEMENY_EXACT_MAX} systems the Kemeny rule ranks by Borda's count"
               "</span>" if dagger else "") + "</p>"]
    if st.scale_warning:
        body.append(f'<p class="warn">\u26a0 {html.escape(st.scale_warning[0].upper() + st.scale_warning[1:])}'
                    + (f" (the {html.escape(rk.baseline)} baseline colours every rank change)"
                       if rk.baseline.split("(")[0] in SCALE_RULES else "") + ".</p>")
    body.append(out.table("rankings", table, caption="Rankings by rule", search=True))
    score_rows = [[rk.systems[i]] + [float(rk.score[j, i]) for j in range(n_r)] for i in order]
    body.append(out.table("scores", _Table(["system"] + rk.labels, score_rows,
                                           [[r[0]] + [f"{v:.6g}" for v in r[1:]] for r in score_rows]),
                          caption="Aggregate scores by rule (higher is better):", show=False))
    idx, suffix = _shown(rk, st)
    if suffix:
        notes.append(f"Figures show the leaderboard's top {len(idx)} of {n_s} systems: the best by "
                     f"{_board_order(rk, st)[0]}, the leaderboard's rule, in its order (--top-k {st.top_k}; each "
                     "title names the rule); the tables list all of them.")
    sub = ranks.isel({SYSTEM: idx})
    # the figures' rule names (Kemeny's Borda fallback said; the warning sign of a degenerate rule: the figure's own)
    plain = {lb: st.display_short.get(lb, lb).replace(" \u26a0", "") for lb in rk.labels}
    draw = partial(plots.rank_change_figure, sub.assign_coords({RULE: [plain[lb] for lb in rk.labels]}),
                   baseline=plain[rk.baseline], neutral=[plain[lb] for lb in degen],
                   title=f"Rankings by rule, change against {rk.baseline}{suffix}", shared=np.stack(shared, axis=1)[idx],
                   primary=plain[rk.labels[p]])
    phone = _phone_ranks_words(rk.labels[p], rk.baseline) if n_r > 3 else ""
    body.append(out.drawn("rankings", draw, f"Rank of every system under every rule ('=' shared rank{phone}); colour and "
                                            f"arrow: change against the {html.escape(rk.baseline)} baseline; \u26a0 "
                                            f"degenerate rule, not coloured{html.escape(suffix)}."))
    sections.append(("Rankings", "\n".join(body)))
    if n_r >= 1 and len(idx) >= 2:
        draw = partial(plots.rank_heatmap_figure,
                       sub.assign_coords({RULE: [st.display_short.get(lb, lb) for lb in rk.labels]}),
                       title=f"Ranks across rules{suffix}")
        sections.append(("Ranks across rules", out.drawn(
            "rank_heatmap", draw, "Ranks under every rule ('=' shared rank, where the cells are numbered); "
            "the dendrogram clusters the systems on their rank vectors "
            f"(Euclidean distance, average linkage){html.escape(suffix)}.")))
    return sections


def _phone_ranks_words(primary: str, baseline: str) -> str:
    """What the phone's rankings figure prints with more than 3 rules (:func:`engine.app.plots.rank_change_figure`)."""
    printed = (f"the {html.escape(primary)} and {html.escape(baseline)} columns" if primary != baseline else
               f"the {html.escape(baseline)} column")
    return f"; on a phone with more than 3 rules, ranks printed in {printed} only, the others colour alone"


@dataclass
class _TaskTest:
    """The task-level scores behind a page's score sections and the one post-hoc test of its critical-difference
    section, so that the paired section's letters on task-level input come from the same test (None: no CD section)."""

    X: np.ndarray  # oriented task-level scores (T, S ranked systems)
    tasks: Sequence[str]
    ph: Any = None  # engine.kernels.significance.PostHoc of every ranked system on the complete tasks
    n_complete: int = 0


def _score_sections(out: _Out, rk: _Rankings, tt: _TaskTest, st: _Settings, notes: list[str],
                    instance_level: bool) -> list[tuple[str, str]]:
    """Friedman/Nemenyi CD, PROMETHEE flows, win matrix from oriented task-level scores ``tt.X`` (T, S ranked systems);
    the CD section's post-hoc test is kept in ``tt.ph``."""
    X = tt.X
    shown = _shown(rk, st)
    what = "per-task means over instances" if instance_level else "task scores"
    complete = np.isfinite(X).all(axis=1)
    Xc = X[complete]
    if (~complete).any():
        notes.append(f"{count_words(int((~complete).sum()), 'task')} with missing scores are left out of the Friedman test and "
                     "PROMETHEE flows (they need complete data).")
    sections = []
    if Xc.shape[0] >= 2 and Xc.shape[1] >= 2:
        sec, tt.ph = _cd_section(out, rk, Xc, shown, st, notes, what)
        tt.n_complete = int(Xc.shape[0])
        sections.append(sec)
        sections.append(_flows_section(out, rk, Xc, shown))
    else:
        notes.append("Too few complete tasks or systems for the Friedman test and PROMETHEE flows.")
    sections.append(_wins_section(out, rk, X, shown))
    return sections


def count_words(n: int, noun: str) -> str:
    """``n`` and its noun, plural unless one (``1 task``, ``3 tasks``): no "task(s)" on the page.

    >>> count_words(1, "task"), count_words(3, "complete task"), count_words(0, "judge")
    ('1 task', '3 complete tasks', '0 judges')
    """
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def p_text(p: float) -> str:
    """A p-value as text: 3 significant digits, and ``"< 1e-300"`` for one that underflowed to 0 (not a p of 0).

    Examples
    --------
    >>> p_text(0.01234), p_text(0.0), p_text(float("nan"))
    ('0.0123', '< 1e-300', 'n/a')
    """
    if not math.isfinite(p):
        return "n/a"
    return "< 1e-300" if p < 1e-300 else f"{p:.3g}"


def _p_is(p: float) -> str:
    t = p_text(p)
    return t if t.startswith("<") else f"= {t}"


def _cd_section(out: _Out, rk: _Rankings, Xc: np.ndarray, shown: tuple[np.ndarray, str], st: _Settings, notes: list[str],
                what: str) -> tuple[tuple[str, str], Any]:
    """The critical-difference section: Friedman test, the post-hoc test's cliques, average ranks (complete tasks
    ``Xc``), and the post-hoc test.  The test is chosen from all k systems (the spread of all their average ranks),
    never from the --top-k shown, so that every report of the same scores makes the same choice."""
    from engine.app import plots
    from engine.kernels.significance import cliques, compare

    idx, suffix = shown
    names = np.asarray(rk.systems, dtype=object)
    ph = compare(Xc, alpha=st.alpha, test=st.test)
    fr = ph.friedman if ph.friedman is not None else friedman_test(Xc)
    sig = fr.pvalue < st.alpha
    wilcoxon = ph.test == "wilcoxon-holm"
    test_name = "pairwise Wilcoxon signed-rank tests, Holm-corrected" if wilcoxon else "Nemenyi"
    stats_rows = [["post-hoc test", test_name], ["why", ph.reason],
                  ["Friedman chi-square (tie-corrected)", f"{fr.statistic:.4g}"],
                  ["p-value (chi-square, df = k - 1)", p_text(fr.pvalue)],
                  ["Iman-Davenport F", f"{fr.iman_davenport:.4g}"],
                  ["p-value (F)", p_text(fr.iman_davenport_pvalue)],
                  ["systems k / tasks N", f"{fr.n_systems} / {fr.n_datasets}"],
                  [f"Nemenyi q (alpha = {st.alpha:g})", f"{nemenyi_q(fr.n_systems, st.alpha):.4g}"],
                  ["Nemenyi critical difference CD", f"{ph.cd:.4g}"],
                  ["pairs separated", f"{int(np.triu(ph.different, 1).sum())} of {fr.n_systems * (fr.n_systems - 1) // 2}"]]
    how = ("Thick bars join systems, adjacent in average rank, among which no pairwise Wilcoxon signed-rank test "
           f"rejects equal performance at a family-wise alpha = {st.alpha:g} after Holm's correction" if wilcoxon else
           "Thick bars join systems whose average ranks differ by less than Nemenyi's critical difference "
           "CD = q_alpha sqrt(k(k+1)/(6N)) (Demsar 2006)")
    body = [f"<p>Average ranks of the systems over the {fr.n_datasets} tasks ({what}; ties get the mean of their "
            f"positions). Friedman test: chi-square = {fr.statistic:.4g}, p {_p_is(fr.pvalue)} "
            f"({'reject' if sig else 'cannot reject'} equal average ranks at alpha = {st.alpha:g}). "
            f"Post-hoc test: <b>{html.escape(test_name)}</b> chosen automatically \u2014 {html.escape(ph.reason)}. "
            f"{how}.</p>",
            "<p class=\"legend\">These are autorank's average ranks: each system's rank within every task on the "
            "per-task means, averaged over the tasks. The leaderboard's average_rank rule ranks at the input's "
            "aggregation level (two-level on instance input: within every task over its instances), so its order "
            "can differ.</p>"]
    if ph.note:
        body.append(f"<p><b>Note:</b> {html.escape(ph.note)}.</p>")
        notes.append(f"Critical difference: {ph.note}.")
    body.append(out.table("friedman", _Table(["statistic", "value"], stats_rows, stats_rows,
                                             classes=[["wrap", "wrap"] for _ in stats_rows]), caption="Friedman test"))
    avg_rows: list[list[Any]] = [[rk.systems[i], float(fr.avg_ranks[i])] for i in rank_order(fr.avg_ranks, rk.systems)]
    body.append(out.table("average_ranks", _Table(["system", "average rank"], avg_rows,
                                                  [[r[0], f"{r[1]:.3f}"] for r in avg_rows]),
                          caption="Average ranks over tasks (per-task means, autorank's; not the average_rank rule):",
                          show=False))
    if wilcoxon and ph.pvalues is not None and ph.adjusted is not None:
        pv, adj = ph.pvalues, ph.adjusted
        prow: list[list[Any]] = [[rk.systems[i], rk.systems[j], float(pv[i, j]), float(adj[i, j]),
                 bool(ph.different[i, j])] for i in range(len(rk.systems)) for j in range(i + 1, len(rk.systems))]
        body.append(out.table("wilcoxon_holm", _Table(["system", "opponent", "p", "p (Holm)", "different"], prow,
                                                      [[a, b, f"{p:.3g}", f"{q:.3g}", "yes" if d else ""]
                                                       for a, b, p, q, d in prow]),
                              caption="Pairwise Wilcoxon signed-rank tests:", show=False))
    sub_avg = ph.avg_ranks[idx]
    groups = [tuple(int(idx[v]) for v in g) for g in cliques(sub_avg, ph.different[np.ix_(idx, idx)])]
    local = {int(v): k for k, v in enumerate(idx)}
    draw = partial(
        plots.critical_difference_figure, sub_avg, names[idx].tolist(), cd=None if wilcoxon else ph.cd,
        cliques=[tuple(local[v] for v in g) for g in groups],
        title=(f"Critical difference ({'Wilcoxon-Holm' if wilcoxon else 'Nemenyi'}, alpha = {st.alpha:g}, "
               f"k = {fr.n_systems}, N = {fr.n_datasets}){suffix}"))
    body.append(out.drawn("critical_difference", draw, f"Critical-difference diagram ({html.escape(test_name)}); "
                                                       f"average ranks, 1 = best{html.escape(suffix)}."))
    return (f"Critical difference (Friedman and {'Wilcoxon-Holm' if wilcoxon else 'Nemenyi'})", "\n".join(body)), ph


def _flows_section(out: _Out, rk: _Rankings, Xc: np.ndarray, shown: tuple[np.ndarray, str]) -> tuple[str, str]:
    """PROMETHEE II positive, negative and net flows of the complete tasks ``Xc``."""
    from engine.app import plots

    idx, suffix = shown
    names = np.asarray(rk.systems, dtype=object)
    plus, minus, net = promethee_flows(Xc)
    lab = label_positions(rk.systems)
    rows: list[list[Any]] = [[rk.systems[i], float(plus[i]), float(minus[i]), float(net[i])]
                             for i in sorted(range(len(rk.systems)), key=lambda i: (-float(net[i]), lab[i]))]
    body = ["<p>PROMETHEE II with the usual preference function and equal task weights: the positive flow "
            "phi+ is how much a system outranks the others, the negative flow phi- how much it is outranked; "
            "the net flow phi = phi+ - phi- is the PROMETHEE II ranking (xLLMBench, section 3.2).</p>"]
    body.append(out.table("promethee_flows", _Table(["system", "phi+", "phi-", "phi"], rows,
                                                    [[r[0]] + [f"{v:.4f}" for v in r[1:]] for r in rows]),
                          caption="PROMETHEE II flows:", show=False))
    draw = partial(plots.promethee_flows_figure, plus[idx], minus[idx], names[idx].tolist(),
                   title=f"PROMETHEE II flows (usual preference){suffix}")
    body.append(out.drawn("promethee_flows", draw, f"PROMETHEE II positive and negative flows{html.escape(suffix)}."))
    return ("PROMETHEE II flows", "\n".join(body))


def _wins_section(out: _Out, rk: _Rankings, X: np.ndarray, shown: tuple[np.ndarray, str]) -> tuple[str, str]:
    """The pairwise win matrix (row beats column on that many tasks)."""
    from engine.app import plots
    from engine.kernels.social import pairwise_counts

    idx, suffix = shown
    names = np.asarray(rk.systems, dtype=object)
    wins, ties = pairwise_counts(X)
    sub = np.ix_(idx, idx)
    numbers = len(idx) <= plots.WIN_NUMBERS
    draw = partial(plots.win_matrix_figure, wins[sub], ties[sub], names[idx].tolist(), title=f"Pairwise wins{suffix}",
                   annotate=numbers)
    rows: list[list[Any]] = [[rk.systems[i]] + [float(wins[i, j]) for j in range(len(rk.systems))]
                             for i in range(len(rk.systems))]
    body = [out.table("win_matrix", _Table(["system"] + list(rk.systems), rows,
                                           [[r[0]] + [f"{v:g}" for v in r[1:]] for r in rows]),
                      caption="Win counts (row beats column on that many tasks):", show=False)]
    what_numbers = ("numbers in the cells: tasks the row system wins" if numbers else
                    "the counts are in the win-count table (too many cells to print them)")
    body.append(out.drawn("win_matrix", draw, f"Colour: share of the tasks (where both have a score) on which the row "
                                              f"system beats the column system; {what_numbers}{html.escape(suffix)}."))
    return ("Pairwise wins", "\n".join(body))


# ---------------------------------------------------------------------------------------------
# paired tests: the compact letter display of the best systems by mean
# ---------------------------------------------------------------------------------------------
def _aligned_letters(letters: Sequence[str]) -> list[str]:
    """Letters in columns (``"a  "``, ``" b "``), one column per letter, so that shared letters line up.

    Past 26 letters :func:`engine.kernels.paired.letter_display` names them ``aa``, ``ab``, ...; such cells are
    left as they are.
    """
    if any("z" in s or len(set(s)) != len(s) for s in letters):
        return list(letters)
    chars = sorted({c for s in letters for c in s})
    return ["".join(c if c in s else " " for c in chars).rstrip() for s in letters]


def _paired_section(out: _Out, scores: xr.DataArray, rk: _Rankings, st: _Settings, notes: list[str],
                    tt: _TaskTest | None = None) -> tuple[str, str] | None:
    """The "Paired tests" section: the ``paired_top_k`` best systems by the primary rule, their letters and the
    pairwise tests.  Instance-level input: paired permutation tests on z-scores within each task
    (:func:`engine.labelled.paired_tests.letter_groups`), scale-free.  Task-level input: the post-hoc test of the CD
    section (``tt.ph``, chosen from all k systems); with Nemenyi the letters are its full-k critical difference
    restricted to these systems (:func:`_cd_letters`), so that the page has one test and one CD."""
    from engine.labelled.paired_tests import letter_groups

    if st.paired_top_k == 0:
        return None
    label, order = _board_order(rk, st)
    ph = tt.ph if tt is not None else None
    if rk.dropped:  # the systems the missing-score policy kept, as in the CD section (listwise drops systems)
        dropped = set(rk.dropped)
        scores = scores.sel(system=[s for s in scores["system"].values.tolist() if str(s) not in dropped])
    try:
        g = letter_groups(scores, systems=[rk.systems[i] for i in order[: st.paired_top_k]], top_k=st.paired_top_k,
                          alpha=st.alpha, resamples=st.paired_resamples, seed=st.seed,
                          test=st.test if ph is None else ph.test)
    except VotebenchError as exc:
        notes.append(f"No paired tests: {exc}.")
        return None
    if g["level"] == "task" and ph is not None and ph.test == "nemenyi" and tt is not None:
        g = _cd_letters(g, ph, rk.systems, tt.n_complete)
    k, n, P = len(g["systems"]), len(rk.systems), len(g["pairs"])
    by = "mean score" if label == _BASELINE else f"the primary rule, {label}"
    cap = (f"the {k} best of {n} systems by {by} (ties in the label order; "
           f"--paired-top-k {st.paired_top_k}; all pairs of the {n} systems would be {n * (n - 1) // 2} tests, and "
           "the correction over so many would leave little power)" if k < n else f"all {k} systems")
    n_diff = sum(p["different"] for p in g["pairs"])
    body = [f"<p>Compared: {html.escape(cap)}. {_paired_words(g, st, P)}; <b>alpha = {st.alpha:g}.</b> {n_diff} of "
            f"{P} pairs differ significantly. Systems sharing a letter are not significantly different; two systems "
            "with no letter in common are.</p>"]
    mixed = scale_spread(tt.X, tt.tasks) if tt is not None else None
    if mixed:
        body.append(f'<p class="warn">\u26a0 {html.escape(_paired_scale_words(g, mixed))}</p>')
    fr = g["friedman"]
    on = f"all {g['k_all']} systems, as in the CD section" if g.get("k_all") else "these systems"
    if fr and (fr.get("statistic") is None or fr.get("pvalue") is None):
        body.append(f"<p>Friedman test on {on}: not defined (they tie on every task, so no ranking of them "
                    "varies).</p>")
    elif fr:
        body.append(f"<p>Friedman test on {on}: chi-square = {fr['statistic']:.4g}, p = {fr['pvalue']:.3g}.</p>")
    body += [f"<p><b>Note:</b> {html.escape(t)}.</p>" for t in g["notes"]]
    full = rk.rank[rk.labels.index(label)]
    rank = dict(zip(rk.systems, full.tolist()))
    vals, cnt = np.unique(full[np.isfinite(full)], return_counts=True)
    shared = set(vals[cnt > 1].tolist())  # shared in the full ranking, as the leaderboard marks them
    test = ("paired permutation tests on z-scores, Holm-adjusted" if g["level"] == "instance" else
            f"Nemenyi's test, CD = {g['cd']:.3g}" + (" as in the diagram" if g.get("k_all") else "")
            if g["test"] == "nemenyi" else "Wilcoxon signed-rank tests, Holm-adjusted")
    measure = _letters_measure(g)
    body.append(_letters_table(out, g["systems"], measure[2], g["letters"], [rank[x] for x in g["systems"]], label,
                               f"Letter groups, listed by the {label} ranking (letters from {test})", shared,
                               (*measure[:2], g["measure"])))
    body.append(_pairs_table(out, g))
    return ("Paired tests", "\n".join(body))


def _paired_words(g: Mapping[str, Any], st: _Settings, P: int) -> str:
    """What the paired section's test is, as HTML."""
    if g["level"] == "instance":
        return (f"Test: the <b>paired permutation (sign-flip) test</b> between two systems on the same instances, on "
                f"<b>z-scores within each task;</b> in full: {html.escape(g['method'])} (--paired-resamples; "
                f"<code>votebench compare</code> uses 10000 by default). The difference of a pair is the "
                f"{html.escape(g['overall'])}. p-values <b>adjusted by Holm's method</b> over the {P} pairs")
    if g.get("k_all"):
        return (f"One score per task: the <b>Nemenyi test of the critical-difference section</b> (over all "
                f"{g['k_all']} systems and the {count_words(g['n_tasks'], 'complete task')}; chosen there, --test "
                f"{html.escape(st.test)}), restricted to these systems: {html.escape(g['method'])}; it holds the "
                "family-wise error over all pairs")
    return (f"One score per task: the systems are compared on their task scores as autorank does, over the "
            f"{count_words(g['n_tasks'], 'task')} where all of them have a score. Test: {html.escape(g['method'])} "
            + ("(it holds the family-wise error over all pairs)" if g["test"] == "nemenyi" else
               f"({P} pairs; the CD section corrects over all pairs of its systems, so it can separate fewer)")
            + f". Chosen (--test {html.escape(st.test)}): {html.escape(g['reason'])}")


def _paired_scale_words(g: Mapping[str, Any], mixed: str) -> str:
    """The scale check of the paired section (the one of the mean baseline's warning), for its test."""
    if g["level"] == "instance":
        return (f"The tasks' scales differ {mixed}: the tests compare z-scores within each task, so every task weighs "
                "the same; on raw scores the largest-scale task would decide them.")
    if g["test"] == "nemenyi":
        return (f"The tasks' scales differ {mixed}: Nemenyi's test compares ranks within each task, so the scales do "
                "not weigh; the mean column is not used by the test.")
    return (f"The tasks' scales differ {mixed}: the Wilcoxon signed-rank test ranks the raw differences across tasks, "
            "so the large-scale tasks weigh more in it; the mean column averages raw scores.")


def _letters_measure(g: Mapping[str, Any]) -> tuple[str, str, list[float | None]]:
    """The column the letters table shows beside the letters: its header, its export name and its values (the quantity
    the test compares: mean z-score, or the CD's average rank; else the raw mean)."""
    if g["level"] == "instance":
        return "mean z-score", "mean_z", list(g["mean"])
    if g.get("k_all"):
        return "average rank", "average_rank", list(g["avg_rank"])
    return "mean (raw)", "mean_raw", list(g["mean"])


def _cd_letters(g: dict[str, Any], ph: Any, systems: Sequence[str], n_tasks: int) -> dict[str, Any]:
    """``g`` (:func:`engine.labelled.paired_tests.letter_groups`, task level) with the letters, pairs, average ranks and
    Friedman test of the CD section's Nemenyi test over all ``systems`` (``ph``), restricted to ``g``'s systems."""
    from engine.kernels.paired import letter_display

    pos = {s: i for i, s in enumerate(systems)}
    sel = np.asarray([pos[s] for s in g["systems"]], dtype=np.intp)
    avg = np.asarray(ph.avg_ranks, dtype=np.float64)[sel]
    D = np.asarray(ph.different, dtype=bool)[np.ix_(sel, sel)]
    names = list(g["systems"])
    pairs = [{"a": names[i], "b": names[j], "diff": float(avg[j] - avg[i]), "p": None, "p_adjusted": None,
              "different": bool(D[i, j])} for i in range(len(names)) for j in range(i + 1, len(names))]
    fr = ph.friedman
    return {**g, "letters": letter_display(D, np.lexsort((np.arange(len(sel)), avg))), "pairs": pairs,
            "avg_rank": avg.tolist(), "cd": float(ph.cd), "n_tasks": int(n_tasks), "k_all": len(systems),
            "test": "nemenyi", "correction": None, "reason": ph.reason,
            "method": (f"two systems differ when their average ranks (over all {len(systems)} systems) differ by at "
                       f"least the critical difference CD = {ph.cd:.3g}, the CD of the diagram"),
            "measure": f"average rank among all {len(systems)} systems over the {n_tasks} complete tasks (the CD "
                       "diagram's; 1 = best)",
            "friedman": None if fr is None else {"statistic": float(fr.statistic), "pvalue": float(fr.pvalue)},
            "notes": [ph.note] if ph.note else []}


#: the letters table's measure columns as a phone's header says them (one short line)
_LETTERS_SHORT = {"mean z-score": "mean z", "average rank": "avg rank", "mean (raw)": "mean"}


def _letters_table(out: _Out, names: Sequence[str], mean: Sequence[float | None], letters: Sequence[str],
                   rank: Sequence[float], label: str, caption: str, shared: set[float] | frozenset[float] = frozenset(),
                   measure: tuple[str, str, str] = ("mean", "mean", "")) -> str:
    """The compact letter display: system, its rank by the primary rule ``label`` ('=' after a rank in ``shared``, as
    in the leaderboard), the quantity the test compares (``measure``: header, export name and what it is, the column's
    title; ``mean``: its values), its letters."""
    aligned = _aligned_letters(letters)
    rows: list[list[Any]] = [[k + 1, n, r, m if m is not None else math.nan, lt] for k, (n, m, lt, r) in
                             enumerate(zip(names, mean, letters, rank))]
    # listed by the primary rule's rank (ties: in the label order), as the leaderboard; the letters stay the test's
    by_rank = rank_order(np.array([r[2] for r in rows], dtype=np.float64), names)
    rows, aligned = [rows[k] for k in by_rank], [aligned[k] for k in by_rank]
    d = score_decimals([r[3] for r in rows])
    text = [[r[1], f"{r[2]:g}" + ("=" if r[2] in shared else ""), "n/a" if not math.isfinite(r[3]) else f"{r[3]:.{d}f}", a]
            for r, a in zip(rows, aligned)]
    tex = [[_tex_escape(c) for c in t[:3]] + [_tex_escape(r[4])] for t, r in zip(text, rows)]
    # the exports hold the page's columns: the rank by the table's rule (whole ranks as integers), as the leaderboard's
    exported = [[r[1], _whole(float(r[2])), r[3], r[4]] for r in rows]
    return out.table("paired_letters", _Table(["system", f"rank by {label}", measure[0], "letters"], exported, text, tex,
                                              ["system", f"rank_by_{label}", measure[1], "letters"],
                                              [["", "", "", "cld"] for _ in rows],
                                              titles=["", f"rank by {label}; '=': a rank shared with another system",
                                                      measure[2], ""],
                                              short=["system", "rank", _LETTERS_SHORT.get(measure[0], measure[0]),
                                                     "letters"]),
                     caption=caption, css="names")


def _pairs_table(out: _Out, g: Mapping[str, Any]) -> str:
    """The pairwise decisions behind the letters (CSV, Markdown, LaTeX links)."""
    inst = g["level"] == "instance"
    rows: list[list[Any]] = [[p["a"], p["b"], _nan(p["diff"]), _nan(p["p"]), _nan(p["p_adjusted"]), bool(p["different"])]
                             for p in g["pairs"]]

    def num(v: float, spec: str) -> str:
        return "n/a" if math.isnan(v) else format(v, spec)

    text = [[a, b, num(d, "+.4g"), num(p, ".3g"), num(q, ".3g"), "yes" if s else ""] for a, b, d, p, q, s in rows]
    name = "paired permutation tests; per task: votebench compare --format json" if inst else \
        ("Nemenyi's test; no p-values, the critical difference decides" if g["test"] == "nemenyi" else
         "Wilcoxon signed-rank tests, Holm-adjusted")
    head = ["system", "opponent", "mean difference (z-scores)" if inst else "average rank difference", "p", "p (Holm)",
            "different"]
    return out.table("paired_tests", _Table(head, rows, text), caption=f"The {len(rows)} pairs behind the letters ({name}):",
                     show=False)


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _interval_summary(boot: xr.Dataset, label: str, st: _Settings) -> tuple[dict[str, tuple[float, float, float, bool]],
                                                                            list[list[Any]], list[Any], dict[str, float]]:
    """One rule's bootstrap: per system (rank, low, high, tied with the leader), table rows, the stability row and
    Rank(UB) per system.

    The intervals are :func:`engine.labelled.comparison.bootstrap_intervals` (a candidate (system) bootstrap:
    the ranks its sure pairwise orders allow; the others: percentiles of the replicate ranks).
    """
    from engine.labelled.comparison import bootstrap_intervals

    iv = bootstrap_intervals(boot, level=1.0 - st.alpha, over="systems" if st.over == "systems" else None)
    by = {s: (float(r), float(a), float(b), bool(t)) for s, r, a, b, t in zip(iv.systems, iv.rank, iv.low, iv.high, iv.tied)
          if math.isfinite(r)}
    unordered = [[label, s, *v] for s, v in by.items()]
    rows = [unordered[i] for i in rank_order(np.array([r[2] for r in unordered], dtype=np.float64), list(by))]
    stab = [label] + [iv.stability[k] for k in ("kendall_w", "mean_spearman", "mean_kendall", "order_stability")]
    return by, rows, stab, {s: float(u) for s, u in zip(iv.systems, iv.rank_ub) if s in by}


#: rules besides the primary one that the second bootstrap-interval figure draws, at most (the table has them all)
INTERVAL_PANELS = 6


def _interval_figure(out: _Out, name: str, per_rule: Sequence[tuple[str, Mapping[str, tuple[float, float, float, bool]]]],
                     st: _Settings, what: str, B: int) -> str:
    """The primary rule's intervals as one full-width figure (its top systems, best first; ties in the label order),
    then at most :data:`INTERVAL_PANELS` other non-degenerate rules as small panels over the same systems and order."""
    labels = [lb for lb, _ in per_rule]
    primary = next((lb for lb in reversed(st.primary_used) if lb in labels), labels[0])
    by_rule = dict(per_rule)
    every = list(by_rule[primary])  # the systems it ranks; its best --top-k in the leaderboard's order (ties: labels)
    names = [every[i] for i in rank_order(np.array([by_rule[primary][sname][0] for sname in every]), every)][: st.top_k]
    n = len(every)
    suffix = f" (top {len(names)} of {n} systems by {st.display_short.get(primary, primary)})" if len(names) < n else ""
    level = 1.0 - st.alpha
    pairwise = "systems" in what
    kind = "rank ranges from sure pairwise orders" if pairwise else "rank intervals"
    shown = ("the ranks the sure pairwise orders allow (" + _interval_words(replace(st, over="systems")) + ")") if pairwise \
        else f"the {50 * (1 - level):g}-{50 * (1 + level):g}% percentiles of the ranks"
    legend = (f"orange: not separated from the leader (the leader does not score above it in at least {100 * level:g}% "
              "of the replicates)")

    def drawing(rules: list[str]) -> Any:
        arr = np.full((4, len(rules), len(names)), np.nan)
        for i, lb in enumerate(rules):
            for j, sname in enumerate(names):
                if sname in by_rule[lb]:
                    arr[:, i, j] = by_rule[lb][sname]
        return partial(plots.rank_interval_figure, arr[0], arr[1], arr[2], names,
                       [st.display_short.get(lb, lb) for lb in rules], tied=arr[3] == 1.0, level=level,
                       title=f"{100 * level:g}% bootstrap {kind} ({what}, B = {B}){suffix}" if rules == [primary] else
                       f"The same systems under {len(rules)} other rule{'s' if len(rules) > 1 else ''} ({what}, B = {B})")

    from engine.app import plots

    degen = "\u26a0" in st.display_short.get(primary, "")
    parts = [out.drawn(name, drawing([primary]),
                       f"{html.escape(st.display_short.get(primary, primary))} (the leaderboard's rule): full-data rank "
                       f"(dot) and {html.escape(shown)} over {B} bootstrap replicates ({html.escape(what)}); {legend}"
                       f"{html.escape(suffix)}." + (" \u26a0 degenerate rule: its ties, not the data, keep systems "
                                                     "together." if degen else ""))]
    others = [lb for lb in labels if lb != primary]
    flagged = [lb for lb in others if "\u26a0" in st.display_short.get(lb, "")]
    drawn = [lb for lb in others if lb not in flagged][:INTERVAL_PANELS]
    if drawn:
        left = [lb for lb in others if lb not in drawn]
        rules_drawn = ", ".join(st.display_short.get(lb, lb) for lb in drawn)
        cap = (f"The same {len(names)} systems, in the leaderboard's order, under {rules_drawn}: each panel with its own "
               f"rank axis; {legend}.")
        if left:
            cap += (f" Not drawn (their intervals are in the download above, Rank intervals of every rule): "
                    f"{', '.join(st.display_short.get(lb, lb) for lb in left)}"
                    + (" (degenerate rules among them)" if flagged else "") + ".")
        parts.append(out.drawn(f"{name}_rules", drawing(drawn), html.escape(cap)))
    return "".join(parts)


def _interval_table(out: _Out, name: str, rows: list[list[Any]], st: _Settings) -> str:
    return out.table(name, _Table(["rule", "system", "rank", "rank_low", "rank_high", "tied_with_leader"], rows,
                                  [[r[0], r[1], f"{r[2]:g}", f"{r[3]:g}", f"{r[4]:g}", "yes" if r[5] else ""] for r in rows]),
                     caption=f"Rank intervals of every rule; {_interval_words(st)}:", show=False)


def _subset_body(out: _Out, name: str, ds: xr.Dataset, title: str, caption: str,
                 display: Mapping[str, str] | None = None, strong: Sequence[str | None] = ()) -> str:
    """The subset-curve figure (rules named by ``display`` when given, :func:`display_names`; the rules ``strong``, by
    default the primary rule and the mean baseline, in colour with their bands, the others thin grey) and its table."""
    from engine.app import plots

    tau = np.asarray(ds["tau"].values, dtype=np.float64)  # (rule, size, replicate)
    n = np.isfinite(tau).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, np.nansum(tau, axis=-1) / np.maximum(n, 1), np.nan)
        dev = np.where(np.isfinite(tau), tau - mean[..., None], 0.0)
        std = np.where(n > 1, np.sqrt((dev**2).sum(axis=-1) / np.maximum(n - 1, 1)), np.nan)
    rules = [str(r) for r in ds[RULE].values]
    sizes = np.asarray(ds["subset_size"].values)
    asked = [r for r in strong if r is not None] or [DEFAULT_PRIMARY_RULE, _BASELINE]
    bold = [r for r in dict.fromkeys(asked) if r in rules] if len(rules) > 2 else rules
    if len(rules) > len(bold):
        caption += (f" In colour with their bands: {', '.join((display or {}).get(r, r) for r in bold)}; thin grey: the "
                    f"{len(rules) - len(bold)} other rules (their numbers are in the table).")
    draw = partial(plots.subset_curve_figure, sizes, mean, std, [(display or {}).get(r, r) for r in rules], title=title,
                   strong=[rules.index(r) for r in bold])
    rows: list[list[Any]] = [[rules[i], int(sizes[j]), float(mean[i, j]), float(std[i, j]), int(n[i, j])]
            for i in range(len(rules)) for j in range(sizes.size)]
    tab = out.table(name, _Table(["rule", "subset_size", "tau_mean", "tau_std", "n"], rows,
                                 [[r[0], str(r[1]), f"{r[2]:.4f}", f"{r[3]:.4f}", str(r[4])] for r in rows]),
                    caption="Subset curves:", show=False)
    return out.drawn(name, draw, caption) + "\n" + tab


def _subset_sizes(T: int) -> list[int]:
    if T <= 20:
        return list(range(1, T + 1))
    return sorted({int(v) for v in np.linspace(1, T, 15).round()})


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def _is_results_store(path: Path) -> bool:
    """A folder holding a sweep results store (root attributes with the sweep provenance)."""
    meta = path / "zarr.json"
    if not (path.is_dir() and meta.is_file()):
        return False
    try:
        attrs = json.loads(meta.read_text(encoding="utf-8")).get("attributes", {})
    except (OSError, ValueError):
        return False
    return isinstance(attrs, dict) and "engine_version" in attrs and "config" in attrs


def _numpy(scores: xr.DataArray) -> xr.DataArray:
    if isinstance(scores.data, np.ndarray):
        return scores
    import dask
    import dask.threaded

    with dask.config.set(scheduler=dask.threaded.get):  # the threads scheduler; by name, dask would import distributed
        return scores.compute()


def _rank_all(scores: xr.DataArray, specs: Sequence[tuple[str, dict[str, Any]]], *, explicit: bool,
              notes: list[str], baseline: tuple[str, dict[str, Any]] | None) -> _Rankings:
    """Rank with every (label, aggregate options) spec; the baseline first, its errors always raised."""
    from engine.labelled.core import rank

    labels, scores_out = [], []
    todo = ([baseline] if baseline is not None else []) + [s for s in specs if baseline is None or s[0] != baseline[0]]
    skipped = []
    for i, (label, opts) in enumerate(todo):
        try:
            with stage(f"ranking {label} ({i + 1}/{len(todo)} rules)"):
                ds = _numpy_ds(rank(scores, **opts))
        except VotebenchError as exc:
            if explicit or (baseline is not None and i == 0):
                raise
            skipped.append(f"{label} ({exc})")
            continue
        labels.append(label)
        scores_out.append(np.asarray(ds["score"].values, dtype=np.float64))
    if skipped:
        notes.append(f"Rules left out (not applicable to this input): {'; '.join(skipped)}.")
    if not labels:
        raise VotebenchError("no rule could rank this input")
    S = np.stack(scores_out)
    systems_all = [str(s) for s in scores[SYSTEM].values]
    present = np.isfinite(S[0])
    from engine.kernels.ranking import min_rank

    S = S[:, present]
    dropped = [s for s, p in zip(systems_all, present) if not p]
    return _Rankings(labels, labels[0], [s for s, p in zip(systems_all, present) if p], S, min_rank(S), dropped)


def _numpy_ds(ds: xr.Dataset) -> xr.Dataset:
    if all(isinstance(v.data, np.ndarray) for v in ds.data_vars.values()):
        return ds
    import dask
    import dask.threaded

    with dask.config.set(scheduler=dask.threaded.get):  # the threads scheduler; by name, dask would import distributed
        return ds.compute()


def _task_matrix(scores: xr.DataArray, missing: str, systems: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Oriented per-task means (T, S) of the ranked systems."""
    from engine.labelled.core import task_scores

    X = task_scores(scores, missing=missing)
    X = _numpy(X.sel({SYSTEM: list(systems)}).transpose(TASK, SYSTEM))
    M = np.asarray(X.values, dtype=np.float64)
    keep = np.asarray(~np.isnan(M).all(axis=1), dtype=bool)
    return M[keep], [str(t) for t, k in zip(X[TASK].values, keep) if k]


def _file_sections(scores: xr.DataArray, out: _Out, *, rules: Sequence[str] | None, level: str | None, missing: str,
                   st: _Settings, notes: list[str]) -> list[tuple[str, str]]:
    from engine.labelled.robustness import task_subset_curve
    from engine.rules import get_rule, rule_names

    explicit = rules is not None
    names = list(dict.fromkeys(rules)) if rules is not None else rule_names()
    for r in names:
        get_rule(r)
    base = {"level": level, "missing": missing}
    rk = _rank_all(scores, [(r, {**base, "rule": r}) for r in names], explicit=explicit, notes=notes,
                   baseline=(_BASELINE, {**base, "rule": _BASELINE}))
    if rk.dropped:
        notes.append(f"Missing-score policy {missing!r} left out {count_words(len(rk.dropped), 'system')}: "
                     f"{', '.join(rk.dropped)}.")
    _judges_note(scores, missing, notes)
    X, tasks = _task_matrix(scores, missing, rk.systems)
    flags = rule_flags(rk.labels, {lb: lb for lb in rk.labels}, rk.score, X, rk.systems)
    rk, _ = _apply_flags(rk, flags, explicit=explicit, notes=notes, primary=st.primary)
    st.display, st.display_short = display_names(rk.labels, len(rk.systems), _degenerate(rk))
    st.scale_warning = scale_warning(X, tasks, rk.labels)
    if st.scale_warning:
        notes.append("\u26a0 " + st.scale_warning[0].upper() + st.scale_warning[1:] + ".")
    T = X.shape[0]
    curve = None
    if st.repeats >= 1 and T >= 2:  # the subset curves, in a worker beside the next sections when worth it
        sizes = _subset_sizes(T)
        with stage("task subsets"):
            curve = run_aside("subset_curves", Sizes(systems=len(rk.systems), judges=T,
                                                     fits=len(rk.labels) * len(sizes) * st.repeats),
                              task_subset_curve, scores, rules=rk.labels, sizes=sizes, repeats=st.repeats,
                              seed=st.seed, level=level, missing=missing)
    boots = _bootstraps(scores, rk, st, level, missing) if st.replicates >= 2 else {}
    p = _primary(rk, _degenerate(rk), st.primary)
    board = _Board(boots.get(rk.labels[p]), _judge_counts(scores, rk.systems, missing), scores.sizes["instance"] > 1,
                   level_words(scores, level), missing)
    sections = [_leaderboard_section(out, rk, st, board)] + _ranking_sections(out, rk, st, notes)
    flag_sec = _flag_section(flags, _degenerate(rk))
    if flag_sec:
        sections.append(flag_sec)
    tt = _TaskTest(X, tasks)
    with stage("scores: critical differences, flows, wins"):
        sections += _score_sections(out, rk, tt, st, notes, instance_level=scores.sizes["instance"] > 1)
    with stage("paired tests"):
        paired = _paired_section(out, scores, rk, st, notes, tt)
    if paired:
        sections.append(paired)
    if boots:
        sections.append(_bootstrap_section(out, boots, st))
    if curve is not None:
        try:
            with stage("task subsets (collecting)"):
                ds = curve()
        except VotebenchError as exc:
            notes.append(f"No task-subset curves: {exc}.")
        else:
            body = _subset_body(out, "subset_curves", ds,
                                f"Task-subset robustness ({st.repeats} random subsets per size)",
                                f"Kendall tau-b between the ranking on a random subset of tasks and the ranking on all "
                                f"{T} tasks, mean and +-1 std (clipped to tau's range [-1, 1]) over {st.repeats} subsets "
                                "per size (Colombo et al. 2022, Fig. 5).", st.display_short,
                                strong=[st.primary_used[-1] if st.primary_used else st.primary, rk.baseline])
            sections.append(("Task-subset robustness", body))
    return sections


@dataclass
class _Boot:
    """One rule's bootstrap as the report shows it: per system (rank, low, high, tied with the leader), the interval
    table's rows, the stability row, the percentile interval of the replicate scores (None: not comparable across
    replicates, a bootstrap over systems), the replicates behind it and Rank(UB) per system."""

    by: dict[str, tuple[float, float, float, bool]]
    rows: list[list[Any]]
    stab: list[Any]
    score_low: dict[str, float] | None
    score_high: dict[str, float] | None
    replicates: int
    over: str
    rank_ub: dict[str, float]


def _boot_summary(boot: xr.Dataset, label: str, st: _Settings) -> _Boot:
    """:func:`_interval_summary` and the ``1 - alpha`` percentile interval of the replicate scores (not for a
    bootstrap over systems, whose replicates score different sets of systems)."""
    import warnings

    by, rows, stab, ub = _interval_summary(boot, label, st)
    rep = np.asarray(boot["replicate_score"].values, dtype=np.float64)
    lo = hi = None
    if st.over != "systems":
        q = [50.0 * st.alpha, 100.0 - 50.0 * st.alpha]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a system absent from every replicate
            a, b = np.nanpercentile(rep, q, axis=0)
        names = [str(s) for s in boot[SYSTEM].values]
        lo, hi = dict(zip(names, a.tolist())), dict(zip(names, b.tolist()))
    return _Boot(by, rows, stab, lo, hi, int(rep.shape[0]), st.over, ub)


def _bootstraps(scores: xr.DataArray, rk: _Rankings, st: _Settings, level: str | None, missing: str) -> dict[str, _Boot]:
    """Every rule's bootstrap (:func:`engine.bootstrap`), summarised."""
    from engine.labelled.bootstrap import bootstrap

    boots = {}
    for i, label in enumerate(rk.labels):
        with stage(f"bootstrap {label} ({i + 1}/{len(rk.labels)} rules)"):
            boot = bootstrap(scores, rule=label, over=st.over, replicates=st.replicates, seed=st.seed, level=level,
                             missing=missing)
            boots[label] = _boot_summary(_numpy_ds(boot), label, st)
    return boots


def _bootstrap_section(out: _Out, boots: Mapping[str, _Boot], st: _Settings) -> tuple[str, str]:
    """Bootstrap rank intervals of every rule: the stability table, the intervals table and figure."""
    per_rule = [(label, b.by) for label, b in boots.items()]
    rows = [r for b in boots.values() for r in b.rows]
    stab = [b.stab for b in boots.values()]
    intro = f"<p>Bootstrap over {html.escape(over_words(st))}: {st.replicates} replicates, seed {st.seed}; " + \
        html.escape(_interval_words(st)) + ".</p>"
    fig_html = _interval_figure(out, "intervals", per_rule, st, f"resampling {st.over}", st.replicates)
    return ("Bootstrap rank intervals and stability", intro + _stability_table(out, "stability", stab, st.display)
            + _interval_table(out, "intervals", rows, st) + fig_html)


def _judges_note(scores: xr.DataArray, missing: str, notes: list[str]) -> None:
    """The judges (tasks, or task x instance) a ``drop-judges`` policy left out, as a note."""
    if missing != "drop-judges":
        return
    from engine.labelled.canonical import left_out_judges

    judges = left_out_judges(scores)
    if judges:
        one = scores.sizes["instance"] == 1
        parts = [t if one else f"{t} ({d} of {j} instances)" for t, d, j in judges]
        notes.append(f"Missing-score policy 'drop-judges' left out "
                     f"{count_words(sum(d for _, d, _ in judges), 'task' if one else 'judge')} with a missing score: "
                     f"{', '.join(parts)}.")


def _interval_words(st: _Settings) -> str:
    from engine.kernels.metrics import interval_description

    kind = "pairwise" if st.over == "systems" else "percentile"
    return ("rank range = " if kind == "pairwise" else "interval = ") + interval_description(kind, 1.0 - st.alpha)


def _stability_table(out: _Out, name: str, rows: list[list[Any]], display: Mapping[str, str] | None = None) -> str:
    """The stability rows (the exports keep the rule labels; the page names them by ``display``, :func:`display_names`)."""
    def f(v: float) -> str:
        return "n/a" if not math.isfinite(v) else f"{v:.3f}"

    shown = [str((display or {}).get(r[0], r[0])) for r in rows]
    return out.table(name, _Table(["rule", "Kendall W", "mean Spearman", "mean Kendall tau-b", "pair orders kept"], rows,
                                  [[lb, f(r[1]), f(r[2]), f(r[3]), "n/a" if not math.isfinite(r[4]) else
                                    f"{100 * r[4]:.1f}%"] for lb, r in zip(shown, rows)]),
                     caption="Stability of the replicate rankings (Kendall W over the systems present in every "
                             "replicate; mean rank correlations over replicate pairs; pair orders kept: share of the "
                             "replicates holding two systems that keep their full-data order, averaged over pairs)"
                             + ("; \u26a0 degenerate rule: its many ties repeat in every replicate, so it looks stable "
                                "without separating the systems" if any("\u26a0" in lb for lb in shown) else ""))


def find_input(spec: Mapping[str, Any], store: Path, checksums: Mapping[str, str], *,
               known: str | None = None) -> tuple[Path | None, str]:
    """A sweep input's file, if it is found with the checksum the store recorded; else ``None`` and why.

    Parameters
    ----------
    spec : mapping
        The input of the sweep config (``path``, ``name``).
    store : path
        The results store; a relative input path is looked up from the
        working directory, then from the store's folder and its parent.
    checksums : mapping
        ``name -> sha256`` as the store's ``inputs`` attribute records them.
    known : str, optional
        Where the sweep read the input (the store's ``input_paths``), tried first.
    """
    from engine.distributed import input_checksum

    raw = Path(str(spec["path"]))
    candidates = [raw] if raw.is_absolute() else [Path.cwd() / raw, store.parent / raw, store.parent.parent / raw]
    if known and "://" not in known:
        candidates.insert(0, Path(known))
    for c in candidates:
        if c.exists():
            want = checksums.get(spec["name"])
            if want is not None and input_checksum(c) != want:
                return None, f"input {str(c)!r} differs from the one the sweep ran on (checksum)"
            return c, ""
    return None, f"input {str(raw)!r} not found"


@dataclass
class StoreSection:
    """What a perturbation kind's report hook (:attr:`engine.sweep.Kind.report`) gets for a store group.

    Attributes
    ----------
    out : object
        Where figures and tables go (use :meth:`figure` and :meth:`table`).
    settings : object
        The report's settings (``alpha``, ``top_k``, ``over``, ...).
    labels : list of str
        The rule labels reported (``--rules``, default every rule of the store).
    notes : list of str
        The notes of the group's input (a hook may append).
    """

    out: _Out
    settings: _Settings
    labels: list[str]
    notes: list[str]

    @property
    def top_k(self) -> int:
        """Figures show at most this many systems."""
        return self.settings.top_k

    def figure(self, name: str, fig: Figure, caption: str) -> str:
        """Save ``fig`` as ``figures/NAME.<format>`` in every format; the HTML ``<figure>`` for it."""
        return self.out.figure(name, fig, caption)

    def table(self, name: str, header: list[str], csv_rows: list[list[Any]], text_rows: list[list[str]], *,
              caption: str = "", csv_header: list[str] | None = None, show: bool = True) -> str:
        """Write ``tables/NAME.csv|md|tex`` (numbers in the CSV, ``text_rows`` in the others); the HTML table or links."""
        return self.out.table(name, _Table(header, csv_rows, text_rows, csv_header=csv_header), caption=caption, show=show)


def subset_curves(section: StoreSection, name: str, ds: xr.Dataset, title: str, caption: str) -> str:
    """The figure and the table (links) of task-subset curves: ``ds["tau"]`` (rule, subset_size, replicate)."""
    return _subset_body(section.out, name, ds, title, caption)


def _store_config(path: Path, groups: Mapping[str, xr.Dataset]) -> tuple[Any, dict[str, str], dict[str, str]]:
    """The sweep config of a results store, its input checksums and where its inputs were read."""
    from engine.sweep import parse_config

    root_attrs = next(iter(groups.values())).attrs if groups else {}
    try:
        cfg = parse_config(json.loads(root_attrs["config"]), where=str(path), stored=True)
        return cfg, json.loads(root_attrs.get("inputs", "{}")), json.loads(root_attrs.get("input_paths", "{}"))
    except (KeyError, ValueError, TypeError):
        raise VotebenchError(f"{path}: results store without a readable sweep config") from None


def _store_sections(path: Path, out_root: Path, formats: tuple[str, ...], *, rules: Sequence[str] | None,
                    st: _Settings, notes_by_input: dict[str, list[str]], notes: list[str],
                    settings: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """The sections of a results store: per input its rankings and its groups, then the groups without input; the
    Settings rows of every input (:func:`_store_settings`) are appended to ``settings``."""
    from engine.sweep import get_kind, open_results

    groups = open_results(path)
    cfg, checksums, known_paths = _store_config(path, groups)
    all_labels = [r["label"] for r in cfg.rules]
    if rules is not None:
        unknown = [r for r in rules if r not in all_labels]
        if unknown:
            raise VotebenchError(f"{path}: rule(s) {', '.join(unknown)} not in the store; its rules: {', '.join(all_labels)}")
    if st.primary is not None and st.primary not in all_labels:
        raise VotebenchError(f"{path}: primary rule {st.primary!r} not in the store; its rules: {', '.join(all_labels)}")
    specs = [r for r in cfg.rules if rules is None or r["label"] in rules]
    sections: list[tuple[str, str]] = []
    multi = len(cfg.inputs) > 1
    for inp in cfg.inputs:
        name = inp["name"]
        mine_notes: list[str] = []
        notes_by_input[name] = mine_notes
        out = _Out(out_root, formats, prefix=f"{name}_" if multi else "")
        mine = {g.split("/", 1)[1]: ds for g, ds in groups.items() if g.split("/", 1)[0] == name}
        with stage(f"reading input {name}"):
            scores = _store_input(inp, path, checksums, known_paths.get(name), mine_notes)
        if settings is not None:
            settings += [((f"{name}: " if multi else "") + k, v) for k, v in _store_settings(inp, mine, scores)]
        with stage("rankings"):
            rk = _store_rankings(inp, scores, specs, mine, mine_notes)
        labels = [r["label"] for r in specs]
        body: list[tuple[str, str]] = []
        if rk is not None:
            rk, gone, body = _store_ranking_sections(out, inp, rk, scores, specs, st, mine_notes, explicit=rules is not None,
                                                     groups=mine)
            labels = [lb for lb in labels if lb not in gone]
        for gname, ds in sorted(mine.items()):
            with stage(f"group {gname}"):
                body += _group_sections(get_kind(str(ds.attrs.get("kind"))), StoreSection(out, st, labels, mine_notes),
                                        gname, ds)
        head = f"Input {name}: " if multi else ""
        sections += [(head + t, b) for t, b in body]
    inputs = set(notes_by_input)
    for gname, ds in sorted(groups.items()):  # the groups of the kinds that read no input (synthetic/<name>)
        if gname.split("/", 1)[0] not in inputs:
            sections += _group_sections(get_kind(str(ds.attrs.get("kind"))), StoreSection(_Out(out_root, formats), st, [], notes),
                                        gname, ds)
    return sections


def _store_settings(inp: Mapping[str, Any], groups: Mapping[str, xr.Dataset],
                    scores: xr.DataArray | None) -> list[tuple[str, str]]:
    """The Settings rows of an input of a results store, from the store's attributes (its sweep config and its groups'
    attrs): size, aggregation level, missing-score policy and every bootstrap group's replicates, axis and seed."""
    from engine.sweep import aggregate_options

    opts = aggregate_options(inp, {"name": _BASELINE})
    level, miss = opts.get("level"), str(opts.get("missing") or "error")
    rows: list[tuple[str, str]] = []
    if scores is not None:
        rows.append(("systems x tasks x instances", " x ".join(str(scores.sizes[d]) for d in (SYSTEM, TASK, "instance"))))
        rows.append(("aggregation level", level_words(scores, level)))
    else:
        n = next((ds.sizes[SYSTEM] for ds in groups.values() if SYSTEM in ds.sizes), None)
        rows.append(("systems", f"{n} (the scores were not found: tasks and instances unknown)" if n else "unknown"))
        rows.append(("aggregation level", str(level or "the rules' own")))
    rows.append(("missing scores", miss))
    for gname, ds in sorted(groups.items()):
        if str(ds.attrs.get("kind")) == "bootstrap":
            rows.append((f"bootstrap ({gname})", f"{ds.sizes.get('replicate', ds.attrs.get('replicates'))} replicates "
                                                 f"over {ds.attrs.get('over', '?')}, seed {ds.attrs.get('seed', '?')}"))
    return rows


def _group_sections(kind: Any, section: StoreSection, gname: str, ds: xr.Dataset) -> list[tuple[str, str]]:
    """A store group's section by its kind's entry in :data:`SECTIONS` (none, with a note, for a kind without one)."""
    render = None if kind is None else section_of(kind.name)
    if render is None:
        what = "not known to this votebench" if kind is None else "without a report section"
        section.notes.append(f"{gname}: perturbation kind {ds.attrs.get('kind')!r} {what}; left out.")
        return []
    return [render(section, gname, ds)]


def _store_input(inp: Mapping[str, Any], store: Path, checksums: Mapping[str, str], known: str | None,
                 notes: list[str]) -> xr.DataArray | None:
    """The scores of a sweep input as the sweep read them (loader options and --lower-is-better), or None with a note."""
    from engine.distributed import loader_keys, make_source, open_source

    file, why = find_input(inp, store, checksums, known=known)
    if file is not None:
        try:
            return _numpy(open_source(make_source(file, meta=_find_meta(inp, store), loader={k: inp.get(k) for k in loader_keys()},
                                                  lower_is_better=inp.get("lower_is_better", ()))))
        except VotebenchError as exc:
            why = str(exc)
    notes.append(f"Scores not available ({why}): rankings come from the store; the critical-difference diagram, "
                 "PROMETHEE flows and win matrix need the scores and are left out.")
    return None


def _store_rankings(inp: Mapping[str, Any], scores: xr.DataArray | None, specs: Sequence[Mapping[str, Any]],
                    mine: Mapping[str, xr.Dataset], notes: list[str]) -> _Rankings | None:
    """The full-data rankings: from the scores, else from a group that stored them per rule (``score`` (rule, system))."""
    from engine.sweep import aggregate_options

    labels = [r["label"] for r in specs]
    mean_spec = next((r for r in specs if r["name"] == _BASELINE and not r.get("options")), None)
    if scores is not None:
        baseline = (mean_spec["label"], aggregate_options(inp, mean_spec)) if mean_spec else (
            _BASELINE, aggregate_options(inp, {"name": _BASELINE}))
        return _rank_all(scores, [(r["label"], aggregate_options(inp, r)) for r in specs], explicit=True, notes=notes,
                         baseline=baseline)
    stored = next((ds for ds in mine.values() if "score" in ds and tuple(ds["score"].dims) == (RULE, SYSTEM)), None)
    if stored is None:
        return None
    from engine.kernels.ranking import min_rank

    sel = stored.sel({RULE: labels})
    S = np.asarray(sel["score"].values, dtype=np.float64)
    base_label = mean_spec["label"] if mean_spec else labels[0]
    if not mean_spec:
        notes.append(f"No {_BASELINE!r} rule in the store and no scores: rank changes are against {base_label!r}.")
    order = [labels.index(base_label)] + [i for i, lb in enumerate(labels) if lb != base_label]
    S = S[order]
    systems = [str(s) for s in sel[SYSTEM].values]
    present = np.isfinite(S[0])
    return _Rankings([labels[i] for i in order], base_label, [s for s, p in zip(systems, present) if p],
                     S[:, present], min_rank(S[:, present]), [s for s, p in zip(systems, present) if not p])


def _store_ranking_sections(out: _Out, inp: Mapping[str, Any], rk: _Rankings, scores: xr.DataArray | None,
                            specs: Sequence[Mapping[str, Any]], st: _Settings, notes: list[str], *, explicit: bool,
                            groups: Mapping[str, xr.Dataset]) -> tuple[_Rankings, list[str], list[tuple[str, str]]]:
    """The ranking sections of an input of the store (and the score sections when its scores were found)."""
    from engine.sweep import aggregate_options

    miss = aggregate_options(inp, {"name": _BASELINE}).get("missing", "error")
    X = tasks = None
    if scores is not None:
        X, tasks = _task_matrix(scores, miss, rk.systems)
        _judges_note(scores, miss, notes)
    names = {r["label"]: r["name"] for r in specs} | {rk.baseline: _BASELINE}
    flags = rule_flags(rk.labels, names, rk.score, X, rk.systems, {r["label"]: r.get("options", {}) for r in specs})
    rk, gone = _apply_flags(rk, flags, explicit=explicit, notes=notes, primary=st.primary)
    # the score report's check of a mean over tasks of different scales, on the store's source scores
    st.scale_warning = scale_warning(X, tasks, rk.labels) if X is not None and tasks is not None else None
    if st.scale_warning:
        notes.append("\u26a0 " + st.scale_warning[0].upper() + st.scale_warning[1:] + ".")
    board, here = _store_board(rk, groups, st, inp, scores, notes)
    body = [_leaderboard_section(out, rk, here, board)] + _ranking_sections(out, rk, st, notes)  # here shares primary_used
    flag_sec = _flag_section(flags, _degenerate(rk))
    if flag_sec:
        body.append(flag_sec)
    if scores is not None and X is not None and tasks is not None:
        tt = _TaskTest(X, tasks)
        body += _score_sections(out, rk, tt, st, notes, instance_level=scores.sizes["instance"] > 1)
        paired = _paired_section(out, scores, rk, st, notes, tt)
        if paired:
            body.append(paired)
    return rk, gone, body


def _find_meta(inp: Mapping[str, Any], store: Path) -> Path | None:
    if not inp.get("meta"):
        return None
    raw = Path(str(inp["meta"]))
    for c in ([raw] if raw.is_absolute() else [Path.cwd() / raw, store.parent / raw, store.parent.parent / raw]):
        if c.exists():
            return c
    return None


def _stored_boot(ds: xr.Dataset, label: str, st: _Settings, gname: str, notes: list[str]) -> _Boot | None:
    """One rule's summary of a computed stored bootstrap group (its finished blocks only; None, with a note, when none)."""
    from engine.kernels.ranking import min_rank

    n_rep = ds.sizes["replicate"]
    b = int(ds.attrs.get("block", n_rep))
    one = ds.sel({RULE: label})
    done = np.asarray(one["done"].values, dtype=bool)
    keep = done[np.arange(n_rep) // b]
    if not keep.any():
        notes.append(f"{gname}: no finished replicates for rule {label!r}.")
        return None
    if not keep.all():
        notes.append(f"{gname}: rule {label!r} has {int(keep.sum())} of {keep.size} replicates finished.")
    rep = np.asarray(one["replicate_score"].values, dtype=np.float64)[keep]
    boot = xr.Dataset({"score": one["score"], "rank": one["rank"],
                       "replicate_score": (("replicate", SYSTEM), rep),
                       "replicate_rank": (("replicate", SYSTEM), min_rank(rep))})
    return _boot_summary(boot, label, st)


def bootstrap_store_section(section: StoreSection, gname: str, ds: xr.Dataset) -> tuple[str, str]:
    """Rank intervals and stability of a stored bootstrap group (its done replicates, the rules of ``section``)."""
    st, notes = section.settings, section.notes
    ds = _numpy_ds(ds)
    here = replace(st, over=str(ds.attrs.get("over", st.over)))
    per_rule, rows, counts, stab = [], [], [], []
    for label in section.labels:
        got = _stored_boot(ds, label, here, gname, notes)
        if got is None:
            continue
        per_rule.append((label, got.by))
        rows += got.rows
        stab.append(got.stab)
        counts.append(got.replicates)
    intro = (f"<p>Stored group {html.escape(gname)} (a bootstrap over {html.escape(here.over)}, seed "
             f"{html.escape(str(ds.attrs.get('seed', '?')))}); {html.escape(_interval_words(here))}.</p>")
    title = f"Bootstrap rank intervals and stability: {gname}"
    if not per_rule:
        return (title, intro)
    out = section.out
    fig_html = _interval_figure(out, f"{gname}_intervals", per_rule, here, f"resampling {here.over}", max(counts))
    return (title, intro + _stability_table(out, f"{gname}_stability", stab)
            + _interval_table(out, f"{gname}_intervals", rows, here) + fig_html)


def _store_board(rk: _Rankings, groups: Mapping[str, xr.Dataset], st: _Settings, inp: Mapping[str, Any],
                 scores: xr.DataArray | None, notes: list[str]) -> tuple[_Board, _Settings]:
    """The leaderboard's extras for an input of a results store: the first bootstrap group holding the primary rule
    (and the settings with its resampling axis), the judges behind each row when the scores were found."""
    from engine.sweep import aggregate_options

    label = rk.labels[_primary(rk, _degenerate(rk), st.primary)]
    opts = aggregate_options(inp, {"name": _BASELINE})
    miss, level = str(opts.get("missing") or "error"), opts.get("level")
    boot, here = None, st
    for gname, ds in sorted(groups.items()):
        if str(ds.attrs.get("kind")) == "bootstrap" and label in [str(r) for r in ds[RULE].values]:
            here = replace(st, over=str(ds.attrs.get("over", st.over)))
            boot = _stored_boot(_numpy_ds(ds.sel({RULE: [label]})), label, here, gname, [])
            break
    if scores is None:
        return _Board(boot, None, False, str(level or "the rules' own"), miss), here
    counts = _judge_counts(scores, rk.systems, miss)
    return _Board(boot, counts, scores.sizes["instance"] > 1, level_words(scores, level), miss), here


# ---------------------------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;
color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.82em;margin:.6em 0}th,td{padding:.15em .55em;border-bottom:1px solid #eee;
text-align:right;white-space:nowrap}th:first-child,td:first-child{text-align:left}thead th{position:sticky;top:0;
background:#f6f6f6}caption{text-align:left;font-weight:600;padding:.3em 0}.table{max-height:32em;overflow:auto;
border:1px solid #eee}td.up{color:#1a7f37}td.down{color:#c0392b}figure{margin:1em 0}figure img{max-width:100%;
height:auto;border:1px solid #eee;box-sizing:border-box}figcaption{font-size:.85em;color:#444}
.export{font-size:.95em;color:#333;margin:.3em 0}.export a{display:inline-block;padding:.1em .15em;color:#0b57d0}
.export .dl{font-weight:600}
.grid{display:flex;flex-wrap:wrap;gap:1em}.grid figure{flex:1 1 520px}.notes li{font-size:.9em}dl{display:grid;
grid-template-columns:max-content auto;gap:.1em 1em;font-size:.9em}dt{font-weight:600}
td.cld{font-family:ui-monospace,"DejaVu Sans Mono",monospace;white-space:pre;text-align:left;letter-spacing:.08em}
td.wrap{white-space:normal;text-align:left;min-width:8em;max-width:40em}dd{margin:0;overflow-wrap:anywhere;min-width:0}
dl{grid-template-columns:minmax(0,max-content) minmax(0,1fr)}.table{max-width:100%}figure{overflow-x:auto}
button.sort{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer;color:inherit;text-align:inherit}
button.sort:focus-visible{outline:2px solid #0b57d0;outline-offset:2px}
th[aria-sort=ascending] button.sort::after{content:" \\25B2" / ""}
th[aria-sort=descending] button.sort::after{content:" \\25BC" / ""}.legend span{margin-right:1.2em;font-size:.9em}
.table td:first-child{position:sticky;left:0;background:#fff;z-index:1;white-space:normal;max-width:18em;
overflow-wrap:break-word}.table thead th:first-child{position:sticky;
left:0;z-index:3}table.board th:first-child,table.board td:first-child{position:sticky;left:0;background:#fff;z-index:1;
white-space:normal;min-width:8em;max-width:16em;overflow-wrap:anywhere}table.board thead th{white-space:normal;
vertical-align:bottom;max-width:11em;z-index:2}table.board td:first-child{overflow-wrap:break-word}
table.board thead th:first-child{background:#f6f6f6;z-index:3}abbr.short{display:none;text-decoration:none}
table.board tbody tr:hover td{background:#f3f7ff}
table.board td.lead::after{content:" \\2605" / "leader";color:#8a5a00}
table.board td.tied::after{content:" \\2248" / "tied with the leader";color:#8a5a00}.board-wrap{max-height:70vh}
.search{display:flex;flex-wrap:wrap;align-items:center;gap:.4em .8em;margin:.6em 0}.search label{font-weight:600}
.search input{font:inherit;padding:.25em .5em;border:1px solid #767676;border-radius:4px;min-width:12em}
.search input:focus-visible,a:focus-visible,.table:focus-visible,summary:focus-visible{outline:2px solid #0b57d0;outline-offset:2px}
.count{font-size:.9em;color:#444}.warn{background:#fff4e5;border-left:4px solid #b35900;padding:.3em .6em}
nav ul{display:flex;flex-wrap:wrap;gap:.2em 1.2em;list-style:none;padding:0;margin:.6em 0}
details.notes,details.fold{margin:.4em 0}details summary{cursor:pointer;font-weight:600}
.table{background:linear-gradient(to left,#fff 30%,rgba(255,255,255,0)) right center/3em 100% no-repeat local,
radial-gradient(farthest-side at 100% 50%,rgba(0,0,0,.3),rgba(0,0,0,0)) right center/1.1em 100% no-repeat scroll #fff}
@media (max-width:700px){body{margin:1em auto;padding:0 .6em}
th .long{display:none}th abbr.short{display:inline}table.board thead th{white-space:nowrap}
td,th{padding:.15em .35em}h1{font-size:1.3em}.table td:first-child{max-width:10em;min-width:8em}
table.board td:first-child,table.board th:first-child{min-width:6em;
max-width:9em}dl{font-size:.8em;gap:.1em .6em}
table.names td:first-child{min-width:0;max-width:8.5em;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
table.board td.lead,table.board td.tied{padding-right:1.5em}
table.board td.lead::after,table.board td.tied::after{position:absolute;right:.3em}}
""" + f"""@media (max-width:{PHONE_MERGE_PX}px){{table .merged{{display:none}}
table [data-ci]::after{{content:attr(data-ci);display:block;font-size:.8em;font-weight:400;color:#444}}}}
"""

#: sorts a table by the header clicked (numbers by their leading number, else text): the first click puts the column's
#: best first (its data-best: "low" ranks and p-values ascending, "high" scores descending, text A to Z), again: the
#: other way
_JS = """
document.querySelectorAll("table.sortable").forEach(function (t) {
  var ths = t.tHead.rows[0].cells;
  Array.prototype.forEach.call(ths, function (th, c) {
    th.querySelector("button").addEventListener("click", function () {
      var now = th.getAttribute("aria-sort"), best = th.getAttribute("data-best");
      var dir = now === "ascending" ? -1 : now === "descending" ? 1 : best === "high" ? -1 : 1;
      Array.prototype.forEach.call(ths, function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.forEach(function (r, i) { if (!r.hasAttribute("data-i")) r.setAttribute("data-i", i); });
      function key(r) { var s = r.cells[c].textContent.trim(), v = parseFloat(s); return isNaN(v) ? s : v; }
      function cmp(a, b) {
        var x = key(a), y = key(b);
        if (typeof x === "number" && typeof y === "number") return dir * (x - y);
        if (typeof x === "number") return -1;
        if (typeof y === "number") return 1;
        return dir * x.localeCompare(y);
      }
      // ties (a rank interval's equal lower bounds) in the table's first order, the rank's, both ways
      rows.sort(function (a, b) { return cmp(a, b) || a.getAttribute("data-i") - b.getAttribute("data-i"); });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
if (window.matchMedia("(max-width: 700px)").matches) {  // a phone: the leaderboard on the first screen
  document.querySelectorAll("details.fold").forEach(function (d) { d.open = false; });
}
document.querySelectorAll("input[type=search][data-table]").forEach(function (q) {
  var t = document.getElementById(q.getAttribute("data-table")).querySelector("table");
  var count = q.parentNode.querySelector(".count");
  function apply() {
    var s = q.value.trim().toLowerCase(), rows = t.tBodies[0].rows, n = 0;
    Array.prototype.forEach.call(rows, function (r) {
      var hit = !s || r.cells[0].textContent.toLowerCase().indexOf(s) >= 0;
      r.hidden = !hit;
      if (hit) n++;
    });
    count.textContent = s ? n + " of " + rows.length + " systems shown" : "";
  }
  q.addEventListener("input", apply);
  q.addEventListener("keydown", function (e) { if (e.key === "Escape") { q.value = ""; apply(); } });
});
"""


def _page(title: str, info: Sequence[tuple[str, str]], notes: Sequence[str], sections: Sequence[tuple[str, str]]) -> str:
    from engine import __version__

    toc = "".join(f'<li><a href="#s{i}">{html.escape(t)}</a></li>' for i, (t, _) in enumerate(sections))
    dl = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in info)
    note_html = (f'<details class="notes"{" open" if len(notes) <= 2 else ""}><summary>Notes ({len(notes)})</summary>'
                 '<ul class="notes">' + "".join(f"<li>{html.escape(n)}</li>" for n in notes)
                 + "</ul></details>") if notes else ""
    body = "\n".join(f'<section id="s{i}"><h2>{html.escape(t)}</h2>\n{b}\n</section>' for i, (t, b) in enumerate(sections))
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="generator" content="votebench {html.escape(__version__)}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{html.escape(title)}</title>\n'
            f"<style>{_CSS}</style>\n</head>\n<body>\n<main>\n<h1>{html.escape(title)}</h1>\n"
            f'<details class="fold" open><summary>Settings</summary><dl>{dl}</dl></details>\n'
            f'<details class="fold" open><summary>Contents</summary><nav aria-label="sections"><ul>{toc}</ul></nav>'
            f"</details>\n{note_html}\n{body}\n</main>\n<script>{_JS}</script>\n</body>\n</html>\n")


def _check_int(name: str, v: Any, lo: int) -> int:
    """A count of the report (:func:`engine.limits.check_size`: an integer >= ``lo``, within the sizes any run can do)."""
    from engine.limits import check_size

    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise VotebenchError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v) if v == 0 else check_size(name, int(v), least=lo)


def _check_request(spec: ReportSpec) -> tuple[_Settings, tuple[str, ...], list[str] | None]:
    """The checked settings, figure formats and rules of a report (a :class:`VotebenchError` before anything is read)."""
    rules, level, missing, alpha, top_k, replicates = (spec.rules, spec.level, spec.missing, spec.alpha, spec.top_k,
                                                       spec.replicates)
    repeats, over, seed, formats, test = spec.repeats, spec.over, spec.seed, spec.formats, spec.test
    paired_top_k, paired_resamples = spec.paired_top_k, spec.paired_resamples
    from engine.kernels.significance import TESTS
    from engine.labelled.bootstrap import OVER
    from engine.labelled.core import MISSING_POLICIES
    from engine.rules import LEVELS
    from engine.sweep import check_memory

    try:
        import matplotlib  # noqa: F401
    except ImportError:  # pragma: no cover - optional dependency
        raise VotebenchError("votebench report needs matplotlib: pip install 'votebench[report]'") from None
    a = check_alpha(alpha)
    k = _check_int("top_k", top_k, 2)
    B = _check_int("replicates", replicates, 0)
    if B == 1:
        raise VotebenchError("replicates must be 0 (no bootstrap) or at least 2, got 1")
    # per rule: replicate scores and ranks of at least two systems, before anything is read
    check_memory(32.0 * B, f"replicates = {B}: the replicate scores and ranks of at least 2 systems",
                 "use fewer replicates")
    n_rep = _check_int("repeats", repeats, 0)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise VotebenchError(f"seed must be an integer >= 0, got {seed!r}")
    s = int(seed)
    if over is not None and over not in OVER:
        raise VotebenchError(f"unknown resampling axis {over!r}; choose one of {', '.join(OVER)}")
    if level is not None and level not in LEVELS:
        raise VotebenchError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    if missing is not None and missing not in MISSING_POLICIES:
        raise VotebenchError(f"unknown missing-score policy {missing!r}; choose one of {', '.join(MISSING_POLICIES)}")
    fmts = tuple(dict.fromkeys(str(f).strip().lower() for f in ([formats] if isinstance(formats, str) else formats)))
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        raise VotebenchError(f"unknown figure format(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(FORMATS)}")
    if rules is not None:
        rules = [str(r) for r in ([rules] if isinstance(rules, str) else rules)]
        if not rules:
            raise VotebenchError("rules is empty; give at least one rule or leave it out for all")
    if test not in TESTS:
        raise VotebenchError(f"unknown post-hoc test {test!r}; choose one of {', '.join(TESTS)}")
    pk = _check_int("paired_top_k", paired_top_k, 0)
    if pk == 1:
        raise VotebenchError("paired_top_k must be 0 (no paired tests) or at least 2, got 1")
    pr = _check_int("paired_resamples", paired_resamples, 1)
    return _Settings(alpha=a, top_k=k, replicates=B, repeats=n_rep, over=over or AUTO_OVER, over_given=over is not None,
                     seed=s, test=test, paired_top_k=pk,
                     paired_resamples=pr), fmts, rules


#: what a report page holds: title, the (key, value) lines under it, its notes and its (title, HTML) sections
_Page = tuple[str, list[tuple[str, str]], list[str], list[tuple[str, str]]]


def _store_report(store: Path, tmp: Path, fmts: tuple[str, ...], *, rules: Sequence[str] | None, st: _Settings,
                  options_given: bool) -> _Page:
    """The page of a results store (its inputs' own level, missing policy and directions)."""
    notes: list[str] = []
    by_input: dict[str, list[str]] = {}
    from engine.sweep import readable_results

    with readable_results(store):  # a damaged chunk: one line, not a traceback from the codecs
        settings: list[tuple[str, str]] = []
        sections = _store_sections(store, tmp, fmts, rules=rules, st=st, notes_by_input=by_input, notes=notes,
                                   settings=settings)
    for name, ns in by_input.items():
        notes += [f"{name}: {n}" if len(by_input) > 1 else n for n in ns]
    if options_given:
        notes.append("level, missing and lower-is-better are those of the sweep's inputs; the options given are not "
                     "used for a results store.")
    info = [("results store", shown_path(store)), ("inputs", ", ".join(by_input)), *settings,
            ("primary rule", _primary_words(st)), ("alpha", f"{st.alpha:g}"), ("top-k", str(st.top_k))]
    return f"votebench report: {store.name}", info, notes, sections


def _file_report(source: str | os.PathLike[str] | xr.DataArray, tmp: Path, fmts: tuple[str, ...], *,
                 rules: Sequence[str] | None, st: _Settings, level: str | None, missing: str | None,
                 meta: str | os.PathLike[str] | None, lower: list[str]) -> _Page:
    """The page of a score file or score tensor, ranked here with every rule."""
    from engine.io.readers import open_scores
    from engine.labelled.canonical import directions_note, with_lower_is_better
    notes: list[str] = []
    scores = source if isinstance(source, xr.DataArray) else open_scores(source, meta=meta)
    scores = _numpy(with_lower_is_better(scores, lower))
    if not isinstance(source, xr.DataArray):
        text = directions_note(source, [str(t) for t in scores[TASK].values], meta=meta, lower_is_better=lower)
        if text:
            notes.append(text[0].upper() + text[1:] + ".")
    pol = missing or "error"
    over = resolve_over(st.over, scores)
    st.over, st.resampled = over, resampled_judges(scores, over)
    sections = _file_sections(scores, _Out(tmp, fmts), rules=rules, level=level, missing=pol, st=st, notes=notes)
    name = str(scores.attrs.get("name") or (Path(source).name if not isinstance(source, xr.DataArray) else "scores"))
    level_text = level_words(scores, level)
    B, n_rep = st.replicates, st.repeats
    given = name if isinstance(source, xr.DataArray) else shown_path(source)
    info = [("input", given),
            ("systems x tasks x instances", " x ".join(str(scores.sizes[d]) for d in ("system", "task", "instance"))),
            ("primary rule", _primary_words(st)), ("aggregation level", level_text), ("missing scores", pol),
            ("alpha", f"{st.alpha:g}"), ("top-k", str(st.top_k)),
            ("bootstrap", f"{B} replicates over {over_words(st)}, seed {st.seed}" if B else "none"),
            ("task subsets", f"{n_rep} per size, seed {st.seed}" if n_rep else "none")]
    return f"votebench report: {name}", info, notes, sections


def _primary_words(st: _Settings) -> str:
    """The primary rule(s) of the page and how they were chosen."""
    used = ", ".join(dict.fromkeys(st.primary_used)) or "none"
    return f"{used} (chosen with --primary)" if st.primary else f"{used} (the default; see the leaderboard)"


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as the page shows it: as given when relative; an absolute path relative to the working folder when
    inside it, else its base name (the page never names a folder of the machine it was made on)."""
    p = Path(path)
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return p.name


def level_words(scores: xr.DataArray, level: str | None) -> str:
    """The aggregation level of a report on ``scores``, in words (``level`` None: the default, said so)."""
    from engine.labelled.core import resolve_level

    text = {"task": "task: each rule ranks the per-task scores (mean over a task's instances)",
            "one": "one: each rule pools every (task, instance) judge",
            "two": "two: each rule within every task over its instances, then across the tasks"}[resolve_level(scores, level)]
    if level is None:
        text += " (the default for " + ("instance-level" if scores.sizes["instance"] > 1 else "task-level") + " input)"
    return text


def _check_primary(primary: str | None, rules: Sequence[str] | None, store: bool) -> str | None:
    """``primary`` checked against the rules asked for, or the registry (a :class:`VotebenchError` naming them); a
    results store's rule labels are checked when it is opened."""
    if primary is None:
        return None
    if not isinstance(primary, str) or not primary:
        raise VotebenchError(f"primary must be a rule name, got {primary!r}")
    if rules is not None and primary not in rules and primary != _BASELINE:
        raise VotebenchError(f"primary rule {primary!r} is not among the rules asked for ({', '.join(rules)}); "
                             "add it with --rule or choose one of them")
    if rules is None and not store:
        from engine.rules import get_rule

        try:
            get_rule(primary)
        except VotebenchError as exc:
            raise VotebenchError(f"primary rule: {exc}") from None
    return primary


def _results_store(source: str | os.PathLike[str] | xr.DataArray) -> Path | None:
    """``source`` when it is a results store; a :class:`VotebenchError` when a path does not exist."""
    if isinstance(source, xr.DataArray):
        return None
    p = Path(source)
    if not p.exists():
        raise VotebenchError(f"{p}: no such file or directory")
    return p if _is_results_store(p) else None


def _report_page(source: str | os.PathLike[str] | xr.DataArray, store: Path | None, tmp: Path, fmts: tuple[str, ...], *,
                 rules: Sequence[str] | None, st: _Settings, level: str | None, missing: str | None,
                 meta: str | os.PathLike[str] | None, lower: list[str]) -> _Page:
    """The page of a results store (``store``) or of a score input; its figures may be drawn by a second process
    while the sections compute (:func:`engine.app.render.figure_writer`), and are all written on return."""
    with figure_writer() as drawn:
        if store is not None:
            page = _store_report(store, tmp, fmts, rules=rules, st=st,
                                 options_given=level is not None or missing is not None or bool(lower))
        else:
            page = _file_report(source, tmp, fmts, rules=rules, st=st, level=level, missing=missing, meta=meta,
                                lower=lower)
    return drawn.fill(page)  # whether each figure has a phone layout, known now that the figures are drawn


@dataclass(frozen=True)
class ReportSpec:
    """What a report computes and shows: the options of :func:`build_report` (and of ``votebench report``), checked
    when the report starts, before anything is read.

    Attributes
    ----------
    rules : sequence of str, optional
        Rules to compare (default: every registered rule that can rank the input; rules that cannot,
        e.g. ``geometric_mean`` on negative scores, are listed in the report's notes).  The ``mean``
        baseline is always added.  For a results store: rule labels of the store (default all).
    level, missing : str, optional
        Aggregation level and missing-score policy (score input; as :func:`engine.aggregate`, default
        ``missing="error"``).  A results store uses its sweep's own.
    alpha : float
        Significance level of the Friedman and post-hoc tests; the bootstrap rank intervals cover ``1 - alpha``.
    top_k : int
        Figures show at most this many systems (tables show all of them).
    replicates, repeats : int
        Bootstrap replicates per rule and random task subsets per size (score input); 0 leaves them out.
    over : {"tasks", "systems", "instances"}
        Axis the bootstrap resamples (score input).
    seed : int
        Seed of the bootstrap and the task subsets.
    formats : sequence of {"png", "svg", "pdf"}
        Figure formats.
    meta : path, optional
        Sidecar with task directions for a score file (default: beside it).
    lower_is_better : sequence of str
        Tasks where lower scores are better (score input; overrides the sidecar).  The report notes
        the tasks whose direction nothing gave.
    test : {"auto", "nemenyi", "wilcoxon-holm"}
        Post-hoc test of the CD diagram (:func:`engine.kernels.significance.compare`; ``auto`` chooses, says why).
    paired_top_k, paired_resamples : int
        The "Paired tests": the ``paired_top_k`` best systems by ``primary`` (0: none); sign patterns per pair.
    primary : str, optional
        Rule (store: rule label) of the leaderboard; default :data:`PRIMARY_DEFAULT`; kept even if flagged.
    """

    rules: Sequence[str] | None = None
    level: str | None = None
    missing: str | None = None
    alpha: float = 0.05
    top_k: int = 30
    replicates: int = 200
    repeats: int = 100
    over: str | None = None
    seed: int = 0
    formats: Sequence[str] = ("png", "svg")
    meta: str | os.PathLike[str] | None = None
    lower_is_better: Sequence[str] = ()
    test: str = "auto"
    paired_top_k: int = 15
    paired_resamples: int = 4000
    primary: str | None = None


def build_report(source: str | os.PathLike[str] | xr.DataArray, out_dir: str | os.PathLike[str],
                 spec: ReportSpec | None = None, **options: Any) -> Path:
    """Write an HTML ranking report with figures and tables.

    Parameters
    ----------
    source : path or xarray.DataArray
        A score file or score store (anything :func:`engine.open_scores` reads), a score tensor, or a
        sweep results store (a folder whose root attributes hold the sweep provenance).
    out_dir : path
        Report folder; its parent must exist.  An existing folder is replaced only when it is empty or
        holds an earlier report.
    spec : ReportSpec, optional
        What the report computes and shows (default: :class:`ReportSpec`'s defaults).
    **options
        Fields of :class:`ReportSpec` that replace those of ``spec`` (``build_report(src, out, rules=["borda"])``);
        an unknown one is a ``TypeError``.

    Returns
    -------
    pathlib.Path
        ``out_dir/index.html``.

    Raises
    ------
    VotebenchError
        Unknown rule, bad option, unreadable input, an existing non-report ``out_dir`` (nothing written).
    """
    from engine import __version__
    from engine.io.files import make_temp_dir

    spec = replace(spec if spec is not None else ReportSpec(), **options)
    st, fmts, rules = _check_request(spec)
    lower = [str(t) for t in ([spec.lower_is_better] if isinstance(spec.lower_is_better, str) else spec.lower_is_better)]
    _check_out(out := Path(out_dir))
    st.primary = _check_primary(spec.primary, rules, (store := _results_store(source)) is not None)
    tmp = make_temp_dir(out)  # usual permissions; strays of killed runs removed
    try:
        page = _report_page(source, store, tmp, fmts, rules=rules, st=st, level=spec.level, missing=spec.missing,
                            meta=spec.meta, lower=lower)
        (tmp / "index.html").write_text(_page(*page), encoding="utf-8")
        (tmp / _MARKER).write_text(json.dumps({"engine_version": __version__}) + "\n", encoding="utf-8")
        _publish(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise VotebenchError(f"{out}: cannot write the report ({exc.strerror or exc})") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / "index.html"

# ------------------------------------------------------------------ the section of each kind of sweep group
# A sweep kind (engine.sweep.kinds) computes and stores; how its group reads in the report is rendering, so the
# section of each kind is registered here, in the app layer (a group of a kind without one is left out, with a note).

#: ``section(report_section, group_name, ds) -> (title, html)``
Section = Callable[[Any, str, xr.Dataset], tuple[str, str]]


def bootstrap_section(section: Any, gname: str, ds: xr.Dataset) -> tuple[str, str]:
    """Rank intervals and stability of the stored replicates (the rules of the report, done blocks only)."""
    return bootstrap_store_section(section, gname, ds)

def grid_section(section: Any, gname: str, ds: xr.Dataset) -> tuple[str, str]:
    """A heat map and a table of the ranks at every done grid point (the top systems in the figure)."""
    from engine.app import plots
    from engine.sweep.kinds.grid import point_labels

    ds = _numpy_ds(ds)
    done = np.asarray(ds["done"].values, dtype=bool)
    R = np.asarray(ds["rank"].values, dtype=np.float64)[done]  # (point, system)
    points = point_labels(ds, done)
    systems = [str(s) for s in ds[SYSTEM].values]
    present = np.isfinite(R).any(axis=0)
    if R.shape[0] == 0 or present.sum() < 2:
        return (f"Parameter grid: {gname}", "<p>No finished grid points.</p>")
    R = R[:, present]
    systems = [s for s, p in zip(systems, present) if p]
    idx = select_systems(R, section.top_k)
    suffix = (f" ({len(idx)} of {len(systems)} systems: the union of every point's best)"
              if len(idx) < len(systems) else "")
    da = xr.DataArray(R[:, idx].T, dims=(SYSTEM, "point"), coords={SYSTEM: [systems[i] for i in idx], "point": points})
    draw = partial(plots.rank_heatmap_figure, da, title=f"{ds.attrs.get('rule', '')}: ranks across parameter points{suffix}")
    rows = [[systems[i]] + [float(v) for v in R[:, i]] for i in range(len(systems))]
    tab = section.table(f"{gname}_ranks", ["system"] + points, rows, [[r[0]] + [f"{v:g}" for v in r[1:]] for r in rows],
                        caption="Ranks per grid point:", show=False)
    cap = (f"Ranks of {html.escape(str(ds.attrs.get('rule', '')))} at every parameter point of {html.escape(gname)}, "
           f"systems clustered on their ranks{html.escape(suffix)}.")
    return (f"Parameter grid: {gname}", section.out.drawn(f"{gname}_rank_heatmap", draw, cap) + "\n" + tab)

def subsets_section(section: Any, gname: str, ds: xr.Dataset) -> tuple[str, str]:
    """The subset curves of the report's rules (mean and std tau per subset size)."""
    sub = _numpy_ds(ds.sel({RULE: section.labels}))
    title = f"Task-subset robustness ({gname}, {int(ds.attrs.get('repeats', ds.sizes['replicate']))} subsets per size)"
    return (f"Task-subset robustness: {gname}", subset_curves(
        section, f"{gname}_subset_curves", sub, title,
        "Kendall tau-b between the ranking on random task subsets and on all tasks, mean and +-1 std "
        "over the subsets the store holds (Colombo et al. 2022, Fig. 5)."))

def synthetic_section(section: Any, gname: str, ds: xr.Dataset) -> tuple[str, str]:
    """Mean error of a synthetic ``manipulation``/``rescaling`` group over its done replicates, as a table."""
    from engine.sweep.kinds.synthetic import AXIS, error_stats

    ds = _numpy_ds(ds)
    kind = str(ds.attrs["kind"])
    axis = AXIS[kind][0]
    title = f"Synthetic {kind}: {gname}"
    n, b = ds.sizes["replicate"], int(ds.attrs.get("block", ds.sizes["replicate"]))
    keep = np.asarray(ds["done"].values, dtype=bool)[:, np.arange(n) // b]  # (rule, replicate)
    if not keep.any():
        return title, "<p>No finished replicates.</p>"
    mean, std, tau_mean, cnt = error_stats(ds, keep)
    rules, phis, values = [str(r) for r in ds[RULE].values], [float(v) for v in ds["phi"].values], list(ds[axis].values)
    csv_rows = [[rules[i], phis[j], values[m].item(), float(mean[i, j, m]), float(std[i, j, m]), float(tau_mean[i, j, m]),
                 int(cnt[i, j, m])] for i in range(len(rules)) for j in range(len(phis)) for m in range(len(values))]
    text = [[rules[i], f"{phis[j]:g}"] + [f"{v:.3f}" if np.isfinite(v) else "" for v in mean[i, j]]
            for i in range(len(rules)) for j in range(len(phis))]
    tab = section.table(f"{gname}_error", ["rule", "phi"] + [f"{v:g}" for v in values], csv_rows, text,
                        csv_header=["rule", "phi", axis, "error_mean", "error_std", "tau_mean", "n"],
                        caption=f"Mean error by {axis}:")
    what = "corrupted tasks (section 4.2)" if kind == "manipulation" else "the rescaling factor of one task (section 4.3)"
    cap = (f"<p>Mean normalized Kendall distance between the aggregated ranking and the ground truth of "
           f"{html.escape(str(ds.attrs.get('n_systems', '')))} synthetic systems, over the {int(keep.sum(axis=1).max())} "
           f"finished replicates, per rule variant and signal strength phi (rows) and {html.escape(what)} (columns), "
           f"Colombo et al. 2022. The CSV adds its standard deviation and the mean Kendall tau-b.</p>")
    return title, cap + tab


#: kind name -> its report section
SECTIONS: dict[str, Section] = {"bootstrap": bootstrap_section, "grid": grid_section, "subsets": subsets_section,
                                "manipulation": synthetic_section, "rescaling": synthetic_section}


def register_section(kind: str, section: Section) -> None:
    """Give the sweep kind ``kind`` its section of the report (replacing none already there).

    Raises
    ------
    ValueError
        When ``kind`` already has a section.
    """
    if kind in SECTIONS:
        raise ValueError(f"kind {kind!r} already has a report section")
    SECTIONS[kind] = section


def section_of(kind: str) -> Section | None:
    """The report section of the sweep kind ``kind``, or None."""
    return SECTIONS.get(kind)
