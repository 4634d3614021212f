"""The published ranking of a watch and what changed since the previous one, as text a person reads.

Rows are ``votebench rank --format json``'s (``system``, ``score``, ``rank``: ranked systems sorted by rank,
then name), plus ``rank_low`` / ``rank_high`` (and ``tied_with_leader``) when a bootstrap ran.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["changes", "interval_text", "ranking_rows"]


def _float_or_none(v: float) -> float | None:
    return None if math.isnan(v) else float(v)


def ranking_rows(ds: xr.Dataset, boot: Any | None = None) -> list[dict[str, Any]]:
    """Rows of a computed ranking ``ds`` (``score``, ``rank`` per system), with the intervals of ``boot``
    (:func:`engine.labelled.comparison.bootstrap_intervals`) when given."""
    systems = [str(s) for s in ds["system"].values]
    score = np.asarray(ds["score"].values, dtype=float)
    rank = np.nan_to_num(np.asarray(ds["rank"].values, dtype=float))
    rows = [{"system": s, "score": float(sc), "rank": int(rk)} for s, sc, rk in zip(systems, score, rank) if not math.isnan(sc)]
    rows.sort(key=lambda d: (d["rank"], d["system"]))
    if boot is not None:
        at = {s: i for i, s in enumerate(boot.systems)}
        for r in rows:
            i = at.get(r["system"])
            if i is None:
                continue
            r["rank_low"] = _float_or_none(float(boot.low[i]))  # as `votebench bootstrap` gives them
            r["rank_high"] = _float_or_none(float(boot.high[i]))
            r["tied_with_leader"] = bool(boot.tied[i])
    return rows


def interval_text(low: Any, high: Any) -> str:
    """``" [3-6]"`` (a space first; bounds to 3 significant digits, whole ranks unless the rank convention averages ties), or ``""``
    without an interval."""
    if low is None or high is None:
        return ""
    a, b = f"{float(low):.3g}", f"{float(high):.3g}"
    return f" [{a}]" if a == b else f" [{a}-{b}]"


def changes(previous: Mapping[str, Sequence[Any]], rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """What changed from ``previous`` (system -> ``[rank, low, high]``) to ``rows``, one sentence each.

    ``"new: X enters at rank 4 [3-6]"`` for a system not ranked before, ``"X: rank 2 -> 3 [2-4]"`` for a system whose
    rank moved, ``"X: no longer ranked"`` for one that left; systems that kept their rank are not mentioned.
    """
    out = []
    for r in rows:
        iv = interval_text(r.get("rank_low"), r.get("rank_high"))
        before = previous.get(r["system"])
        if before is None:
            out.append(f"new: {r['system']} enters at rank {r['rank']}{iv}")
        elif int(before[0]) != r["rank"]:
            way = "up" if r["rank"] < int(before[0]) else "down"
            out.append(f"{r['system']}: rank {int(before[0])} -> {r['rank']}{iv} ({way})")
    ranked = {r["system"] for r in rows}
    out += [f"{s}: no longer ranked" for s in previous if s not in ranked]
    return out
