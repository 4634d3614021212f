"""Agreement of two benchmarks and the diversity of each (BenchBench; ``votebench agreement A B``).

Perlitz et al. (2024, *Do These LLM Benchmarks Agree? Fixing Benchmark Evaluation with BenchBench*,
arXiv:2407.13696) compare two benchmarks by the rankings they give to the systems both evaluate.  Here
each benchmark is ranked with a rule of the engine (:func:`engine.rank`), the two aggregate scores are
compared by Kendall's tau-b over the common systems (:func:`engine.kernels.metrics.benchmark_agreement`, with its
p-value), and each benchmark's diversity is ``1 - W`` across its tasks
(:func:`engine.kernels.metrics.benchmark_diversity`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from engine.errors import VotebenchError

__all__ = ["agreement"]

#: fewer common systems than this: the agreement is flagged as not meaningful
MIN_COMMON = 3


def _ranked(scores: xr.DataArray, rule: str, missing: str, options: Mapping[str, Any] | None) -> tuple[list[str], np.ndarray]:
    from engine.labelled.core import rank

    ds = rank(scores, rule=rule, missing=missing, options=dict(options or {}))
    return [str(s) for s in ds["system"].values], np.asarray(ds["score"].values, dtype=np.float64)


def _diversity(scores: xr.DataArray) -> dict[str, Any]:
    from engine.kernels.metrics import benchmark_diversity
    from engine.labelled.core import task_scores

    X = np.asarray(task_scores(scores, missing="listwise").values, dtype=np.float64)
    n_sys = int((~np.isnan(X).any(axis=0)).sum()) if X.size else 0
    if X.shape[0] < 2 or n_sys < 2:
        return {"value": None, "n_tasks": int(X.shape[0]), "n_systems": n_sys,
                "note": "1 - W needs at least 2 tasks and 2 systems scored on every task"}
    return {"value": float(benchmark_diversity(X)), "n_tasks": int(X.shape[0]), "n_systems": n_sys}


def agreement(scores_a: xr.DataArray, scores_b: xr.DataArray, *, rule: str = "borda", missing: str = "listwise",
              options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Kendall's tau between two benchmarks' rankings of their common systems, and each benchmark's diversity.

    Parameters
    ----------
    scores_a, scores_b : xarray.DataArray
        The two benchmarks' score tensors; systems are matched by name.
    rule : str
        The rule ranking each benchmark (default Borda, the engine's default).
    missing : str
        Missing-score policy of the ranking (default ``listwise``: a system with a missing score is not
        ranked by that benchmark, so not compared).
    options : mapping, optional
        Options of ``rule``.

    Returns
    -------
    dict
        ``tau`` (tau-b), ``pvalue`` (two-sided, of ``tau = 0``), ``n`` and ``systems`` (the common systems
        compared, in benchmark A's order), ``too_few`` (fewer than :data:`MIN_COMMON` common systems: tau says
        little, and is ``None`` below 2), ``only_a`` / ``only_b`` (systems ranked by one benchmark only),
        ``rule``, ``missing`` and ``diversity``: ``{"a": ..., "b": ...}``, each ``1 - W`` across the benchmark's tasks
        (0: every task ranks the systems alike) with its numbers of tasks and systems.

    Examples
    --------
    >>> import engine
    >>> s = engine.open_scores("data/colombo_tac08.csv.gz")  # doctest: +SKIP
    >>> r = agreement(s.sel(task=["H:pyr", "H:resp"]), s.drop_sel(task=["H:pyr", "H:resp"]))  # doctest: +SKIP
    """
    from engine.kernels.metrics import benchmark_agreement

    sys_a, score_a = _ranked(scores_a, rule, missing, options)
    sys_b, score_b = _ranked(scores_b, rule, missing, options)
    ranked_a = {s for s, v in zip(sys_a, score_a) if not np.isnan(v)}
    ranked_b = {s for s, v in zip(sys_b, score_b) if not np.isnan(v)}
    try:
        res = benchmark_agreement(score_a, score_b, systems_a=sys_a, systems_b=sys_b)
    except ValueError as exc:
        raise VotebenchError(str(exc)) from None
    n = int(res["n"])
    tau, p = float(res["tau"]), float(res["pvalue"])
    out: dict[str, Any] = {
        "tau": None if np.isnan(tau) else tau, "pvalue": None if np.isnan(p) else p, "n": n,
        "systems": [str(s) for s in res["systems"]], "too_few": n < MIN_COMMON,
        "only_a": sorted(ranked_a - ranked_b), "only_b": sorted(ranked_b - ranked_a),
        "rule": rule, "missing": missing,
        "diversity": {"a": _diversity(scores_a), "b": _diversity(scores_b)},
    }
    if n < MIN_COMMON:
        out["note"] = (f"only {n} common system(s): Kendall's tau over fewer than {MIN_COMMON} systems says little"
                       + (" (none is computed below 2)" if n < 2 else ""))
    return out
