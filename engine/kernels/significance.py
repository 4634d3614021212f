"""Significance of the differences between systems over tasks: Friedman, Nemenyi, pairwise Wilcoxon with Holm.

The report's critical-difference diagram rests on these pure functions
(Demsar 2006; Benavoli, Corani and Mangili 2016):

* :func:`friedman_test` -- are the systems' average ranks over the tasks
  different at all (chi-square with the tie correction, and Iman-Davenport's F);
* :func:`nemenyi_cd` -- Nemenyi's critical difference of average ranks;
* :func:`wilcoxon_holm` -- Wilcoxon's signed-rank test on every pair of
  systems (scipy), p-values adjusted with Holm's step-down procedure
  (:func:`holm`);
* :func:`cliques` -- the maximal runs of systems, in average-rank order, with
  no significant difference inside (the thick bars of the diagram);
* :func:`compare` -- chooses the post-hoc test as autorank (Herbold 2020)
  does for rank data, and says which it used and why.

The choice (:func:`compare`, ``test="auto"``): two systems are compared with
Wilcoxon's signed-rank test, as autorank does for two populations that are
not known to be normal.  More than two: the Friedman test, then Nemenyi's
post-hoc test (autorank's choice) -- unless its critical difference is at
least the spread of the average ranks of the systems a diagram shows, so
that it cannot separate any of them (on 97 systems over 14 tasks
``CD = 45.6``, more than the spread of the best 30); then the pairwise Wilcoxon
signed-rank tests with Holm's correction, which do not depend on the other
systems' ranks (Benavoli et al. 2016).  With few tasks even these may be
unable to reach ``alpha``: :attr:`PostHoc.note` says so, giving the smallest
p-value a Wilcoxon test on ``N`` tasks can produce.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import VotebenchError
from engine.kernels.checks import check_alpha

__all__ = ["FriedmanResult", "PostHoc", "TESTS", "check_alpha", "cliques", "compare", "friedman_test", "holm",
           "nemenyi_cd", "nemenyi_q", "studentized_range_quantile", "wilcoxon_holm", "wilcoxon_pvalues"]

#: post-hoc tests :func:`compare` knows
TESTS = ("auto", "nemenyi", "wilcoxon-holm")


@dataclass(frozen=True)
class FriedmanResult:
    """Friedman test of ``k`` systems over ``N`` datasets (tasks).

    Attributes
    ----------
    statistic : float
        Friedman's chi-square with the correction for ties
        ``chi2_F = 12 N / (k (k + 1)) sum_j (R_j - (k + 1) / 2)^2 / C``,
        ``C = 1 - sum (t^3 - t) / (N k (k^2 - 1))`` over the groups of ``t``
        tied systems in every dataset (``NaN`` when every dataset ties all systems).
    pvalue : float
        Upper tail of chi-square with ``k - 1`` degrees of freedom.
    iman_davenport : float
        ``F_F = (N - 1) chi2_F / (N (k - 1) - chi2_F)`` (Demsar 2006, eq. 2).
    iman_davenport_pvalue : float
        Upper tail of F with ``k - 1`` and ``(k - 1)(N - 1)`` degrees of freedom.
    n_datasets, n_systems : int
    avg_ranks : ndarray, shape (k,)
        Average rank of every system (1 = best, ties get the mean of their positions).
    """

    statistic: float
    pvalue: float
    iman_davenport: float
    iman_davenport_pvalue: float
    n_datasets: int
    n_systems: int
    avg_ranks: np.ndarray


def _complete(X: np.ndarray, what: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 2:
        raise VotebenchError(f"{what} needs at least 2 datasets and 2 systems, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise VotebenchError(f"{what} needs complete, finite scores")
    return X


def friedman_test(X: np.ndarray) -> FriedmanResult:
    """Friedman test with tie correction on complete scores.

    Parameters
    ----------
    X : array_like, shape (N, k)
        Scores of ``k`` systems (columns) on ``N`` datasets (rows), higher is
        better, no ``NaN``.

    Returns
    -------
    FriedmanResult

    Raises
    ------
    VotebenchError
        Fewer than 2 datasets or 2 systems, or missing scores.

    Examples
    --------
    >>> r = friedman_test(np.array([[3.0, 2.0, 1.0], [3.0, 1.0, 2.0], [3.0, 2.0, 1.0]]))
    >>> round(r.statistic, 4), r.avg_ranks.tolist()
    (4.6667, [1.0, 2.3333333333333335, 2.6666666666666665])
    """
    from scipy.special import chdtrc, fdtrc  # scipy.stats' chi2.sf / f.sf, the same bits, without importing scipy.stats

    from engine.kernels.metrics import average_ranks

    X = _complete(X, "the Friedman test")
    n, k = X.shape
    ranks = average_ranks(X)
    avg = ranks.mean(axis=0)
    ties = 0.0
    for row in X:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts**3 - counts).sum())
    c = 1.0 - ties / (n * k * (k * k - 1))
    if c <= 1e-12:
        chi2 = math.nan
    else:
        chi2 = 12.0 * n / (k * (k + 1)) * float(((avg - (k + 1) / 2.0) ** 2).sum()) / c
    p = float(chdtrc(k - 1, chi2)) if math.isfinite(chi2) else math.nan
    denom = n * (k - 1) - chi2
    if not math.isfinite(chi2):
        ff, pf = math.nan, math.nan
    elif denom <= 1e-9 * n * (k - 1):  # every dataset ranks the systems alike
        ff, pf = math.inf, 0.0
    else:
        ff = (n - 1) * chi2 / denom
        pf = float(fdtrc(k - 1, (k - 1) * (n - 1), ff))
    return FriedmanResult(float(chi2), p, float(ff), pf, n, k, avg)


#: the grid of the studentized-range integral: step 1/64 on [-12, 12].  The trapezoid rule is spectrally accurate
#: on this smooth, fast-decaying integrand: the quantiles equal scipy's to about 1e-14 (tests/kernels/test_speed_s6.py)
_RANGE_STEP = 1.0 / 64
_RANGE_HALF_WIDTH = 12.0


@functools.lru_cache(maxsize=4096)
def studentized_range_quantile(p: float, k: int) -> float:
    """The ``p`` quantile of the studentized range of ``k`` standard normal means, infinite degrees of freedom.

    The range ``R`` of ``k`` independent standard normals has ``P(R <= q) = k int phi(z) (Phi(z) - Phi(z - q))^(k-1)
    dz``; the integral is a trapezoid sum on a fixed grid and the quantile a safeguarded Newton iteration on it (its
    derivative is the same kind of sum).  This is ``scipy.stats.studentized_range.ppf(p, k, inf)`` without
    importing ``scipy.stats`` (about a second of a report's start), for any ``k``.

    Examples
    --------
    >>> round(studentized_range_quantile(0.95, 2), 4)  # 1.96 sqrt(2)
    2.7718
    """
    from scipy.special import ndtr  # the normal CDF, as scipy.stats.norm.cdf computes it

    if not (isinstance(p, (int, float, np.floating)) and 0.0 < p < 1.0):
        raise VotebenchError(f"a quantile's probability must lie strictly between 0 and 1, got {p!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise VotebenchError(f"the studentized range needs at least 2 means (a whole number), got {k!r}")
    z = np.arange(-_RANGE_HALF_WIDTH, _RANGE_HALF_WIDTH + _RANGE_STEP / 2, _RANGE_STEP)
    density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    below = ndtr(z)

    def cdf_and_pdf(q: float) -> tuple[float, float]:
        inner = below - ndtr(z - q)
        lower = inner ** (k - 2)
        cdf = k * _RANGE_STEP * float(np.sum(density * lower * inner))
        pdf = k * (k - 1) * _RANGE_STEP * float(np.sum(density * np.exp(-0.5 * (z - q) ** 2) * lower)) / math.sqrt(2.0 * math.pi)
        return cdf, pdf

    lo, hi, q = 0.0, 2.0 * _RANGE_HALF_WIDTH, 3.0 + math.log(k)
    for _ in range(200):
        cdf, pdf = cdf_and_pdf(q)
        if cdf > p:
            hi = q
        else:
            lo = q
        nxt = q - (cdf - p) / pdf if pdf > 0 else 0.5 * (lo + hi)
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)  # Newton left the bracket: bisect
        if abs(nxt - q) <= 4.0 * np.finfo(float).eps * q:
            return nxt
        q = nxt
    return q  # 200 steps: Newton converged long before, or the bracket halved to its last bits


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """Critical value ``q_alpha`` of the Nemenyi test for ``k`` systems (Demsar 2006, Table 5a).

    ``q_alpha`` is the ``1 - alpha`` quantile of the studentized range of ``k``
    means with infinite degrees of freedom (:func:`studentized_range_quantile`), divided by ``sqrt(2)``.

    Examples
    --------
    >>> round(nemenyi_q(5, 0.05), 3)
    2.728
    """
    a = check_alpha(alpha)
    if int(k) != k or k < 2:
        raise VotebenchError(f"the Nemenyi test needs at least 2 systems, got {k}")
    return studentized_range_quantile(1.0 - a, int(k)) / math.sqrt(2.0)


def nemenyi_cd(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference ``CD = q_alpha sqrt(k (k + 1) / (6 N))`` of average ranks.

    Parameters
    ----------
    k : int
        Number of systems compared.
    n : int
        Number of datasets (tasks) the average ranks are taken over.
    alpha : float
        Significance level.

    Examples
    --------
    >>> round(nemenyi_cd(4, 14, 0.05), 3)
    1.254
    """
    if int(n) != n or n < 1:
        raise VotebenchError(f"the Nemenyi critical difference needs at least 1 dataset, got {n}")
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n))


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control).

    The ``i``-th smallest of ``m`` p-values is multiplied by ``m - i + 1``
    (``i`` from 1), then made non-decreasing in that order and capped at 1;
    a hypothesis is rejected at level ``alpha`` when its adjusted p-value is
    at most ``alpha``.  ``NaN`` entries are left out of the family and stay ``NaN``.

    Examples
    --------
    >>> holm(np.array([0.01, 0.04, 0.03])).round(4).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    family = ~np.isnan(p)
    values = p[family]  # the family, in C order
    by_size = np.argsort(values, kind="stable")
    stepped = np.empty(values.size)
    stepped[by_size] = np.minimum(np.maximum.accumulate(values[by_size] * (values.size - np.arange(values.size))), 1.0)
    out = np.full(p.shape, np.nan)
    out[family] = stepped
    return out


def wilcoxon_holm(X: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wilcoxon's signed-rank test on every pair of systems, with Holm's correction.

    Parameters
    ----------
    X : array_like, shape (N, k)
        Complete scores of ``k`` systems on ``N`` datasets (tasks).
    alpha : float
        Family-wise significance level.

    Returns
    -------
    pvalues : ndarray, shape (k, k)
        Two-sided p-values of ``scipy.stats.wilcoxon`` on the paired
        differences (zero differences dropped, scipy's default; a pair with
        no non-zero difference gets 1); symmetric, diagonal ``NaN``.
    adjusted : ndarray, shape (k, k)
        Holm-adjusted over the ``k (k - 1) / 2`` pairs.
    reject : ndarray of bool, shape (k, k)
        ``adjusted <= alpha``.
    """
    X = _complete(X, "the Wilcoxon signed-rank test")
    a = check_alpha(alpha)
    k = X.shape[1]
    P = np.full((k, k), np.nan)
    iu = np.triu_indices(k, 1)
    P[iu] = wilcoxon_pvalues(X[:, iu[0]] - X[:, iu[1]])
    P.T[iu] = P[iu]
    adj = np.full((k, k), np.nan)
    adj[iu] = holm(P[iu])
    adj.T[iu] = adj[iu]
    with np.errstate(invalid="ignore"):
        reject = adj <= a
    return P, adj, reject


#: pairs per batched ``scipy.stats.wilcoxon`` call (the permutation method enumerates 2^N sign patterns per pair)
_WILCOXON_BATCH = {"exact": 8192, "asymptotic": 8192, "permutation": 32}


def wilcoxon_pvalues(D: np.ndarray) -> np.ndarray:
    """Two-sided p-values of ``scipy.stats.wilcoxon`` on every column of the paired differences ``D``, batched.

    Each column gets the p-value of ``scipy.stats.wilcoxon(D[:, j])`` with its defaults (zero differences
    dropped, continuity correction, ``method="auto"``), and 1 when it holds no non-zero difference.  scipy's
    ``auto`` chooses per call: the normal approximation above 50 differences, else the exact distribution when
    the column has neither zeros nor ties, else (up to 13 differences) the exact permutation test, else the
    normal approximation.  A batched call would make that choice once for the whole batch, so the columns are
    sorted into the three methods first and each group is tested in batched calls with its method given.

    Parameters
    ----------
    D : array_like, shape (N, P)
        Complete paired differences (``x - y``) of ``P`` pairs on ``N`` datasets.

    Returns
    -------
    ndarray, shape (P,)

    Examples
    --------
    >>> from scipy.stats import wilcoxon
    >>> D = np.array([[0.5, 1.0], [1.5, -2.0], [-0.25, 3.0], [2.0, 0.0], [3.0, 1.0]])
    >>> bool(np.allclose(wilcoxon_pvalues(D), [wilcoxon(D[:, j]).pvalue for j in range(2)]))
    True
    """
    import warnings

    from scipy.stats import PermutationMethod, wilcoxon

    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    out = np.ones(D.shape[1])
    tested = np.flatnonzero((D != 0).any(axis=0))
    if n > 50:
        groups = {"asymptotic": tested}
    else:
        sub = D[:, tested]
        A = np.sort(np.abs(sub), axis=0)
        exact = ~((sub == 0).any(axis=0) | (A[1:] == A[:-1]).any(axis=0))
        groups = {"exact": tested[exact], ("permutation" if n <= 13 else "asymptotic"): tested[~exact]}
    for method, cols in groups.items():
        step = _WILCOXON_BATCH[method]
        for lo in range(0, cols.size, step):
            part = cols[lo:lo + step]
            how: Any = PermutationMethod() if method == "permutation" else method
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # few samples / ties: scipy warns about the normal approximation
                out[part] = np.asarray(wilcoxon(D[:, part], axis=0, method=how).pvalue, dtype=np.float64)
    return out


def cliques(avg_ranks: np.ndarray, different: np.ndarray) -> list[tuple[int, ...]]:
    """Maximal groups of at least two systems, contiguous in average-rank order, with no significant difference inside.

    Parameters
    ----------
    avg_ranks : array_like, shape (k,)
        Average ranks (1 = best).
    different : array_like of bool, shape (k, k)
        ``different[i, j]``: the test separates systems ``i`` and ``j``.

    Returns
    -------
    list of tuple of int
        System indices of every group, best first, groups ordered by their
        first member; no group is contained in another.

    Examples
    --------
    >>> D = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    >>> cliques(np.array([1.0, 2.0, 3.0]), D)
    [(0, 1), (1, 2)]
    """
    avg = np.asarray(avg_ranks, dtype=np.float64)
    D = np.asarray(different, dtype=bool)
    order = np.argsort(avg, kind="stable")
    n = order.size
    out: list[tuple[int, ...]] = []
    last = -1
    for i in range(n):
        j = i
        while j + 1 < n and not D[order[j + 1], order[i : j + 1]].any():
            j += 1
        if j > i and j > last:
            out.append(tuple(int(v) for v in order[i : j + 1]))
            last = j
    return out


@dataclass(frozen=True)
class PostHoc:
    """Which systems differ significantly, by the test :func:`compare` chose.

    The report draws it as a critical-difference diagram (its cliques: :func:`cliques`).

    Attributes
    ----------
    test : str
        ``"nemenyi"`` or ``"wilcoxon-holm"``.
    reason : str
        Why this test (one sentence, for the report).
    alpha : float
    friedman : FriedmanResult or None
        The omnibus test (more than two systems).
    avg_ranks : ndarray, shape (k,)
    cd : float or None
        Nemenyi's critical difference (also given with Wilcoxon-Holm, to say why).
    pvalues, adjusted : ndarray, shape (k, k), or None
        Wilcoxon p-values and their Holm adjustment.
    different : ndarray of bool, shape (k, k)
        Pairs the test separates.
    cliques : list of tuple of int
        :func:`cliques` of ``different``.
    note : str
        A caveat on the test's power, or ``""``.
    why : str
        Why this test, without its name or its critical difference (for a caption that names them already):
        autorank's rule and the spread it compared, or ``"as asked"``.
    """

    test: str
    reason: str
    alpha: float
    friedman: FriedmanResult | None
    avg_ranks: np.ndarray
    cd: float | None
    pvalues: np.ndarray | None
    adjusted: np.ndarray | None
    different: np.ndarray
    cliques: list[tuple[int, ...]] = field(default_factory=list)
    note: str = ""
    why: str = ""


def _min_wilcoxon_p(n: int) -> float:
    """The smallest two-sided p-value of an exact Wilcoxon signed-rank test on ``n`` non-zero differences: ``2 / 2^n``."""
    return 2.0 / 2.0**n


def compare(X: np.ndarray, *, alpha: float = 0.05, test: str = "auto", shown: np.ndarray | None = None) -> PostHoc:
    """Friedman, then a post-hoc test chosen as the module docstring says (or forced with ``test``).

    Parameters
    ----------
    X : array_like, shape (N, k)
        Complete scores of ``k >= 2`` systems on ``N >= 2`` datasets, higher is better.
    alpha : float
        Family-wise significance level.
    test : {"auto", "nemenyi", "wilcoxon-holm"}
    shown : array_like of int, optional
        The systems a diagram draws (e.g. the top 30 of 97): ``auto`` takes
        Nemenyi only when its critical difference is below the spread of
        *their* average ranks, so that the diagram can show a difference.
        Default: every system.  The tests always compare all ``k`` systems.

    Returns
    -------
    PostHoc
    """
    from engine.kernels.metrics import average_ranks

    if test not in TESTS:
        raise VotebenchError(f"unknown post-hoc test {test!r}; choose one of {', '.join(TESTS)}")
    a = check_alpha(alpha)
    X = _complete(X, "the comparison of systems")
    n, k = X.shape
    avg = average_ranks(X).mean(axis=0)
    fr = friedman_test(X) if k > 2 else None
    cd = nemenyi_cd(k, n, a)
    sel = avg if shown is None else avg[np.asarray(shown, dtype=np.intp)]
    spread = float(sel.max() - sel.min()) if sel.size else 0.0
    of = "" if shown is None or len(sel) == k else f" of the {len(sel)} systems shown"
    if test == "auto":  # why (for a caption that names the test and its CD) and the report's whole sentence
        choice = "autorank's choice for " + ("two populations not known to be normal" if k == 2 else
                                             "more than two populations")
        ranks_spread = f"spread of the average ranks{of} ({spread:.3g})"
        if k == 2:
            test, why = "wilcoxon-holm", choice
            reason = f"two systems: Wilcoxon's signed-rank test on the tasks ({choice})"
        elif cd < spread:
            test, why = "nemenyi", f"{choice}; the CD is below the {ranks_spread}"
            reason = (f"Friedman's test, then Nemenyi's post-hoc test ({choice}): its critical difference CD = {cd:.3g} "
                      f"is below the {ranks_spread}")
        else:
            covers = f"covers the whole {ranks_spread}, so it cannot separate any of them"
            test, why = "wilcoxon-holm", f"Nemenyi's critical difference CD = {cd:.3g} {covers}; Benavoli et al. 2016"
            reason = (f"Nemenyi's critical difference CD = {cd:.3g} for {k} systems over {n} tasks {covers}: pairwise "
                      "Wilcoxon signed-rank tests with Holm's correction instead (Benavoli et al. 2016)")
    else:
        why = "as asked"
        reason = f"{test} as asked"
    note = ""
    if test == "nemenyi":
        different = np.abs(avg[:, None] - avg[None, :]) >= cd
        np.fill_diagonal(different, False)
        P = adj = None
        if fr is not None and not fr.pvalue < a:
            note = (f"the Friedman test does not reject equal average ranks (p = {fr.pvalue:.3g}), so the post-hoc groups "
                    "are only indicative")
    else:
        P, adj, different = wilcoxon_holm(X, a)
        m = k * (k - 1) // 2
        floor = _min_wilcoxon_p(n)
        if floor > a / m:
            note = (f"with {n} tasks an exact Wilcoxon test cannot go below p = {floor:.2g}, above the {a:g}/{m} = "
                    f"{a / m:.2g} that Holm's correction asks of the first of the {m} pairs: so few tasks can hardly "
                    "separate any pair")
    return PostHoc(test, reason, a, fr, avg, cd, P, adj, different, cliques(avg, different), note, why)
