"""Pairwise battles: compressed counts, Bradley-Terry, Elo, win rates and a bootstrap over battles (pure numpy).

A *battle* is one comparison of two models with outcome ``a`` wins, ``b`` wins or tie (Chatbot Arena /
LMArena records: ``model_a, model_b, winner``).  Everything here except :func:`elo` works on the
**compressed counts** of the battles (:class:`BattleCounts`): ``wins[i, j]``, the (weighted) number of
battles ``i`` won against ``j``, and the symmetric ``ties[i, j]``.  They are built in one pass over the
records (:func:`battle_counts`, one ``np.bincount``), so every later step (fits, bootstrap replicates)
costs O(S^2) per replicate, independent of the number of battles.

Score tensors enter the same way: every judge (a task, or a (task, instance) pair) yields the pairwise
outcomes of the systems it scores (:func:`judge_counts`, :func:`counts_from_scores`,
:func:`battles_from_scores`), so the rules registered for score tensors (``bradley_terry``, ``elo``,
``win_rate``, and the leaderboard aggregates ``mean_win_rate`` of HELM and ``mteb_borda`` of MTEB) follow
the engine's conventions: ``X`` of shape ``(..., T, S)``, system axis last, oriented (higher is better),
``NaN`` = missing (a pair with a missing score is no battle), optional task weights, one score per system,
higher is better.

Conventions
-----------
* Strengths are natural log-odds centred at 0 over the models that took part in a battle (``scale="logit"``,
  the default): ``P(i beats j) = 1 / (1 + exp(s_j - s_i))`` under ties-as-half-wins.  ``scale="elo"`` gives
  the Arena/Elo scale: ``1000 + 400 / ln(10) * s`` (base 10, scale 400, initial 1000; the mean is 1000).
* A model that took part in no battle gets ``NaN``.
* Integer counts stay integers: weights that are simple fractions are scaled to whole numbers, and
  Bradley-Terry fits divide the counts of a fit by their greatest common divisor first (the maximum
  likelihood estimate does not change when every count is multiplied by the same factor), so equal data
  gives bitwise the same fit whatever the weights' common denominator, block of replicates or batch.
* Random draws of the bootstrap come from ``SeedSequence(seed, spawn_key=(battles, b))``
  (:mod:`engine.kernels.resample`): replicate ``b`` depends on the seed and ``b`` only.

References
----------
* Bradley, Terry. Rank analysis of incomplete block designs I. Biometrika 39 (1952).
* Davidson. On extending the Bradley-Terry model to accommodate ties. JASA 65 (1970).
* Hunter. MM algorithms for generalized Bradley-Terry models. Annals of Statistics 32 (2004): the MLE is
  finite and unique iff the directed graph "i beat j at least once" is strongly connected (Ford 1957).
* Chiang et al. Chatbot Arena. ICML 2024; FastChat ``elo_analysis.py`` (online Elo with K = 4, scale 400,
  base 10, initial 1000; bootstrap confidence intervals; the rank upper bound ``1 + #{j: lo_j > hi_i}``).
* HELM (Liang et al., TMLR 2023): ``compute_aggregate_row_win_rates`` in
  ``src/helm/benchmark/presentation/summarize.py`` (stanford-crfm/helm).
* MTEB leaderboard: ``_borda_count`` / ``_get_borda_rank`` in ``mteb/leaderboard/table.py`` and
  ``_borda_rank_from_long`` in ``mteb/benchmarks/_create_table.py`` (embeddings-benchmark/mteb, commit
  ``0012c86c8a489b677d8548ffeddf2c028d00154c``), and the leaderboard's FAQ "Rank(Borda)".
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.kernels.aggregate import as_profile, task_weights
from engine.kernels.checks import check_level
from engine.kernels.exact import exact_weights, ordered_sum, snap_ties, weighted_task_sum
from engine.kernels.ranking import borda_points, min_rank
from engine.kernels.social import pairwise_counts

__all__ = [
    "A_WINS",
    "B_WINS",
    "TIE",
    "RIDGE",
    "ELO_INITIAL",
    "broadcast_profile",
    "ELO_SCALE",
    "ELO_BASE",
    "BattleCounts",
    "BTFit",
    "BattleBootstrap",
    "battle_counts",
    "judge_counts",
    "counts_from_scores",
    "battles_from_scores",
    "outcome_code",
    "WINNERS",
    "fit_bradley_terry",
    "bradley_terry",
    "to_elo_scale",
    "win_probabilities",
    "elo",
    "win_rate",
    "resample_battle_counts",
    "bootstrap_battles",
    "bradley_terry_across",
    "elo_across",
    "win_rate_across",
    "mean_win_rate_across",
    "mteb_borda_across",
]

#: outcome codes of a battle record
A_WINS, B_WINS, TIE = 0, 1, 2
#: relative ridge of a Bradley-Terry fit whose win graph is not strongly connected (see :func:`fit_bradley_terry`)
RIDGE = 1e-6
#: the Arena/Elo scale: rating = ELO_INITIAL + ELO_SCALE * log_ELO_BASE(odds)
ELO_INITIAL, ELO_SCALE, ELO_BASE = 1000.0, 400.0, 10.0

_TIE_MODELS = ("half", "davidson")
_SCALES = ("logit", "elo")
_CHUNK = 1 << 21  # battle records per bincount pass
_FIT_BLOCK = 1 << 22  # cells (rows x S x S) of one batched Newton step


# --------------------------------------------------------------------------------------------- counts
@dataclass(frozen=True)
class BattleCounts:
    """Compressed battles among ``S`` models.

    Attributes
    ----------
    wins : ndarray, shape (S, S)
        ``wins[i, j]``: (weighted) number of battles ``i`` won against ``j`` (whoever was ``model_a``).
    ties : ndarray, shape (S, S)
        ``ties[i, j] = ties[j, i]``: (weighted) number of tied battles between ``i`` and ``j``; zero diagonal.
    battles_wins, battles_ties : ndarray of int64, shape (S, S)
        The same as numbers of records (equal to ``wins``/``ties`` without weights); the bootstrap
        resamples records.
    """

    wins: np.ndarray
    ties: np.ndarray
    battles_wins: np.ndarray
    battles_ties: np.ndarray

    @property
    def n_models(self) -> int:
        """Number of models ``S`` (those without a battle included)."""
        return int(self.wins.shape[-1])

    @property
    def n_battles(self) -> int:
        """Number of battle records."""
        return int(self.battles_wins.sum() + np.triu(self.battles_ties).sum())

    @property
    def comparisons(self) -> np.ndarray:
        """``N[i, j] = wins[i, j] + wins[j, i] + ties[i, j]``: (weighted) battles between ``i`` and ``j``."""
        return self.wins + self.wins.T + self.ties

    @property
    def present(self) -> np.ndarray:
        """Models that took part in at least one battle."""
        return self.comparisons.sum(axis=-1) > 0


def _int_codes(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must hold integer codes, got dtype {a.dtype}")
    return a


def battle_counts(a, b, outcome, *, n_models: int | None = None, weights=None) -> BattleCounts:
    """Compress battle records into per-pair counts in one pass.

    Parameters
    ----------
    a, b : array_like of int, shape (n,)
        Integer codes (``0 .. S-1``) of ``model_a`` and ``model_b``.
    outcome : array_like of int, shape (n,)
        :data:`A_WINS` (0), :data:`B_WINS` (1) or :data:`TIE` (2).
    n_models : int, optional
        ``S`` (default: the largest code + 1).
    weights : array_like, shape (n,), optional
        Non-negative weight of every battle; simple fractions (halves, ``1/3``, ...) are summed exactly
        as integers (any record order), other weights in record order.

    Returns
    -------
    BattleCounts

    Raises ``ValueError`` for codes out of range, an unknown outcome, a self-battle or bad weights.

    Examples
    --------
    >>> c = battle_counts([0, 1, 0, 2], [1, 0, 2, 0], [A_WINS, A_WINS, TIE, B_WINS])
    >>> c.wins.tolist(), c.ties.tolist()
    ([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    """
    a = _int_codes(a, "model_a codes")
    b = _int_codes(b, "model_b codes")
    o = _int_codes(outcome, "outcomes")
    n = a.size
    if b.size != n or o.size != n:
        raise ValueError(f"model_a, model_b and outcome differ in length ({n}, {b.size}, {o.size})")
    hi_code = int(max(a.max(initial=-1), b.max(initial=-1)))
    S = hi_code + 1 if n_models is None else int(n_models)
    if n and (min(int(a.min()), int(b.min())) < 0 or hi_code >= S):
        raise ValueError(f"model codes must lie in 0..{S - 1}")
    if n and (int(o.min()) < 0 or int(o.max()) > TIE):
        raise ValueError("outcomes must be 0 (model_a wins), 1 (model_b wins) or 2 (tie)")
    w: np.ndarray | None = None
    L: int | None = 1
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n,):
            raise ValueError(f"expected {n} battle weights, got shape {w.shape}")
        if not np.isfinite(w).all() or (w < 0).any():
            raise ValueError("battle weights must be finite and non-negative")
        k, L = exact_weights(w, w.shape)
        if L is not None:
            w = k
    m = 3 * S * S
    dtype = np.int32 if m < 2**31 else np.int64
    records = np.zeros(m, dtype=np.int64)
    summed = np.zeros(m) if w is not None else None
    self_battles = 0
    for s0 in range(0, n, _CHUNK):  # one pass, in chunks that keep the temporaries small
        ac = a[s0 : s0 + _CHUNK].astype(dtype, copy=False)
        bc = b[s0 : s0 + _CHUNK].astype(dtype, copy=False)
        self_battles += int(np.count_nonzero(ac == bc))
        code = (o[s0 : s0 + _CHUNK].astype(dtype) * S + ac) * S + bc
        records += np.bincount(code, minlength=m)
        if w is not None and summed is not None:
            summed += np.bincount(code, weights=w[s0 : s0 + _CHUNK], minlength=m)
    if self_battles:
        raise ValueError(f"{self_battles} battle(s) of a model against itself (model_a == model_b)")

    def fold(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = c.reshape(3, S, S)
        return c[A_WINS] + c[B_WINS].T, c[TIE] + c[TIE].T

    bw, bt = fold(records)
    if summed is None:
        wins, ties = bw.astype(np.float64), bt.astype(np.float64)
    else:
        wins, ties = fold(summed)
        if L not in (None, 1):
            wins, ties = wins / L, ties / L
    return BattleCounts(wins=wins, ties=ties, battles_wins=bw, battles_ties=bt)


def _unit_counts(X: np.ndarray, weights) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Pairwise wins and ties over the judges (axis -2) of ``X`` in units of ``1 / L``.

    Simple-fraction weights ``w = k / L`` are replaced by the whole numbers ``k``, so the sums are exact
    integers (``L`` is returned); other weights give real sums and ``L = None``.
    """
    if weights is None:
        wins, ties = pairwise_counts(X)
        return wins, ties, 1
    w = task_weights(weights, X.shape[-2])
    k, L = exact_weights(w, w.shape)
    wins, ties = pairwise_counts(X, weights=k)
    return wins, ties, L


def judge_counts(X, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """Battles of a score tensor: every judge yields the pairwise outcomes of the systems it scores.

    Parameters
    ----------
    X : array_like, shape (..., T, S)
        Oriented scores (higher is better), one row per judge; ``NaN`` = missing (a pair with a missing
        score is no battle).
    weights : array_like, shape (T,) or (..., T), optional
        Weight of every judge's battles.

    Returns
    -------
    wins, ties : ndarray, shape (..., S, S)
        ``wins[i, j] = sum_t w_t [X_ti > X_tj]`` and ``ties[i, j] = sum_t w_t [X_ti == X_tj]`` (``i != j``).

    Examples
    --------
    >>> W, T = judge_counts(np.array([[2.0, 1.0, 1.0], [0.0, 3.0, np.nan]]))
    >>> W.tolist(), T.tolist()
    ([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    """
    X = as_profile(X, "judge_counts", what="judge")
    wins, ties, L = _unit_counts(X, weights)
    if L not in (None, 1):
        return wins / L, ties / L
    return wins, ties


def counts_from_scores(X, weights=None) -> BattleCounts:
    """:class:`BattleCounts` of one score table ``X`` (T, S): the battles of every judge (see :func:`judge_counts`).

    ``battles_wins``/``battles_ties`` count the battles (judges), ``wins``/``ties`` weigh them.
    """
    X = as_profile(X, "counts_from_scores", what="judge")
    if X.ndim != 2:
        raise ValueError(f"counts_from_scores takes one (T, S) table, got shape {X.shape}")
    bw, bt = pairwise_counts(X)
    wins, ties = (bw, bt) if weights is None else judge_counts(X, weights)
    return BattleCounts(wins=np.asarray(wins, dtype=np.float64), ties=np.asarray(ties, dtype=np.float64),
                        battles_wins=bw.astype(np.int64), battles_ties=bt.astype(np.int64))


def battles_from_scores(X) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Battle records of a score table: one record per judge and pair of systems it scores.

    Parameters
    ----------
    X : array_like, shape (T, S)
        Oriented scores, one row per judge; ``NaN`` = missing.

    Returns
    -------
    a, b, outcome, judge : ndarray, shape (n,)
        For every judge ``t`` (in row order) and every pair ``i < j`` (in column order) that it scores:
        ``a = i``, ``b = j``, the outcome (:data:`A_WINS` when ``X_ti > X_tj``, :data:`B_WINS` when lower,
        :data:`TIE` when equal) and ``judge = t``.  :func:`battle_counts` of them equals
        :func:`counts_from_scores` of ``X``.
    """
    X = as_profile(X, "battles_from_scores", what="judge")
    if X.ndim != 2:
        raise ValueError(f"battles_from_scores takes one (T, S) table, got shape {X.shape}")
    T, S = X.shape
    i, j = np.triu_indices(S, 1)
    xi, xj = X[:, i], X[:, j]
    ok = ~(np.isnan(xi) | np.isnan(xj))
    out = np.where(xi > xj, A_WINS, np.where(xi < xj, B_WINS, TIE)).astype(np.int8)
    judge = np.broadcast_to(np.arange(T)[:, None], ok.shape)
    a = np.broadcast_to(i, ok.shape)
    bb = np.broadcast_to(j, ok.shape)
    return a[ok].astype(np.int32), bb[ok].astype(np.int32), out[ok], judge[ok].astype(np.int32)


#: the documented ``winner`` values (surrounding blanks are ignored) and their outcome codes
WINNERS = {"model_a": A_WINS, "model_b": B_WINS, "tie": TIE, "tie (bothbad)": TIE, "draw": TIE}


def outcome_code(value: str) -> int:
    """The outcome code of a ``winner`` value: ``model_a`` -> 0, ``model_b`` -> 1, ``tie``, ``tie (bothbad)``, ``draw`` -> 2.

    Exactly the spellings of :data:`WINNERS` (Arena's ``tie (bothbad)`` is a tie); a guess at anything else
    (``a``, ``B``, ``tie?``) could turn a loss into a tie, so it raises ``ValueError``.

    Examples
    --------
    >>> [outcome_code(v) for v in ("model_a", "model_b", "tie (bothbad)")]
    [0, 1, 2]
    """
    code = WINNERS.get(str(value).strip())
    if code is None:
        raise ValueError(f"unknown winner {value!r} (expected {', '.join(WINNERS)})")
    return code



# --------------------------------------------------------------------------------------------- Bradley-Terry
@dataclass(frozen=True)
class BTFit:
    """A Bradley-Terry fit (see :func:`fit_bradley_terry`).

    Attributes
    ----------
    strength : ndarray, shape (..., S)
        Natural log-odds strengths centred at 0 over the models with a battle (``NaN`` for the others).
    tie_param : ndarray, shape (...)
        Davidson's ``nu`` (``NaN`` for ties as half wins; 0 when there is no tie, ``inf`` when every
        battle is a tie).
    ridge : ndarray, shape (...)
        The ridge ``lambda`` of the penalty ``lambda / 2 * sum s_i^2`` used (0: plain maximum likelihood).
    iterations : ndarray of int, shape (...)
        Newton steps taken.
    tie_model : str
    """

    strength: np.ndarray
    tie_param: np.ndarray
    ridge: np.ndarray
    iterations: np.ndarray
    tie_model: str


def _check_choice(value: str, choices: Sequence[str], what: str) -> str:
    if value not in choices:
        raise ValueError(f"unknown {what} {value!r}; choose {' or '.join(repr(c) for c in choices)}")
    return value


def fit_bradley_terry(wins, ties=None, *, tie_model: str = "half", ridge: float | None = None,
                      tol: float = 1e-10, max_iter: int = 200, start=None) -> BTFit:
    """Maximum-likelihood Bradley-Terry strengths from compressed counts, by Newton's method.

    Parameters
    ----------
    wins : array_like, shape (..., S, S)
        ``wins[i, j]``: (weighted) battles ``i`` won against ``j``; leading axes are independent fits.
    ties : array_like, shape (..., S, S), optional
        Symmetric tie counts (default none).
    tie_model : {"half", "davidson"}
        ``"half"`` (default): a tie counts as half a win for each side, the likelihood
        ``prod_(i,j) sigma(s_i - s_j)^(wins_ij + ties_ij / 2)`` (Arena's and choix's convention).
        ``"davidson"``: Davidson's (1970) model, ``P(i beats j) = p_i / (p_i + p_j + nu sqrt(p_i p_j))`` and
        ``P(tie) = nu sqrt(p_i p_j) / (...)`` with ``p = exp(s)``, ``nu`` fitted jointly.
    ridge : float, optional
        Force this ridge ``lambda >= 0``.  By default (``None``) the fit is plain maximum likelihood,
        unless the MLE does not exist: then ``lambda = RIDGE * n_bar`` with ``RIDGE = 1e-6`` and ``n_bar``
        the mean number of battles per model (see Notes).
    tol : float
        Convergence: the last Newton step moved no strength by more than ``tol * max(1, max |s|)``.
    max_iter : int
        Newton steps allowed; not converging raises ``ValueError``.
    start : array_like, shape (..., S), optional
        Initial log-odds strengths (default 0), e.g. the full-data fit for bootstrap replicates; the fit
        converges to the same maximum whatever the start (up to ``tol``).

    Returns
    -------
    BTFit

    Notes
    -----
    The log-likelihood is concave; each Newton step solves ``(L + lambda I + c 1 1^T / S) d = g`` with ``L``
    the Fisher information (a weighted Laplacian), ``g`` the gradient and ``c 1 1^T / S`` fixing the
    free shift (strengths are centred, and the step sums to 0); steps longer than 0.25 are halved until the
    likelihood does not decrease.

    *When the ridge is used.*  The MLE is finite iff the directed graph with an edge ``i -> j`` whenever
    ``i`` beat or tied ``j`` at least once is strongly connected (Ford 1957; Hunter 2004) -- e.g. a model
    that never lost, or two groups never compared, break it.  Only then (checked per fit, with
    ``scipy.sparse.csgraph``) the penalty ``lambda / 2 * sum s_i^2`` is added, with ``lambda`` one
    millionth of the mean number of battles per model (``1e-6 * sum_ij N_ij / S``), so it scales with the
    data: an unbeaten model gets a large finite strength (about ``ln(1e6)`` above the others) and the
    order of the others is kept.  :attr:`BTFit.ridge` says which fits used it.

    Examples
    --------
    >>> W = np.array([[0.0, 2.0], [1.0, 0.0]])
    >>> fit = fit_bradley_terry(W)
    >>> bool(np.isclose(fit.strength[0] - fit.strength[1], np.log(2.0)))
    True
    """
    _check_choice(tie_model, _TIE_MODELS, "tie model")
    W = np.asarray(wins, dtype=np.float64)
    if W.ndim < 2 or W.shape[-1] != W.shape[-2]:
        raise ValueError(f"wins must have shape (..., S, S), got {W.shape}")
    T = np.zeros_like(W) if ties is None else np.broadcast_to(np.asarray(ties, dtype=np.float64), W.shape)
    if not (np.isfinite(W).all() and np.isfinite(T).all()) or (W < 0).any() or (T < 0).any():
        raise ValueError("win and tie counts must be finite and non-negative")
    if not np.array_equal(T, np.swapaxes(T, -1, -2)):
        raise ValueError("tie counts must be symmetric")
    if ridge is not None and not (np.isfinite(ridge) and ridge >= 0):
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge!r}")
    batch, S = W.shape[:-2], W.shape[-1]
    idx = np.arange(S)
    W2 = W.reshape(-1, S, S)
    T2 = T.reshape(-1, S, S)
    if W2[:, idx, idx].any():  # a battle against oneself carries no information
        W2 = W2.copy()
        W2[:, idx, idx] = 0.0
    if T2[:, idx, idx].any():
        T2 = T2.copy()
        T2[:, idx, idx] = 0.0
    st = None if start is None else np.broadcast_to(np.asarray(start, dtype=np.float64), W.shape[:-1]).reshape(-1, S)
    theta, nu, lam, its = _fit_rows(W2, T2, tie_model=tie_model, ridge=ridge, tol=float(tol), max_iter=int(max_iter),
                                    start=st)
    return BTFit(strength=theta.reshape(*batch, S), tie_param=nu.reshape(batch), ridge=lam.reshape(batch),
                 iterations=its.reshape(batch), tie_model=tie_model)


def bradley_terry(wins, ties=None, *, tie_model: str = "half", scale: str = "logit", ridge: float | None = None) -> np.ndarray:
    """Bradley-Terry strengths ``(..., S)``: :func:`fit_bradley_terry` on the ``scale`` asked (see :func:`to_elo_scale`).

    Examples
    --------
    >>> W = np.array([[0.0, 3.0, 2.0], [1.0, 0.0, 2.0], [2.0, 2.0, 0.0]])
    >>> (bradley_terry(W).round(4) + 0.0).tolist()  # + 0.0: no signed zero
    [0.343, -0.343, 0.0]
    """
    _check_choice(scale, _SCALES, "scale")
    s = fit_bradley_terry(wins, ties, tie_model=tie_model, ridge=ridge).strength
    return to_elo_scale(s) if scale == "elo" else s


def to_elo_scale(strength) -> np.ndarray:
    """Natural log-odds strengths on the Arena/Elo scale: ``1000 + 400 * s / ln(10)``."""
    return ELO_INITIAL + ELO_SCALE / math.log(ELO_BASE) * np.asarray(strength, dtype=np.float64)


def win_probabilities(strength, *, tie_param: float | None = None) -> np.ndarray:
    """``P[i, j]``: the model's probability that ``i`` beats ``j`` in one battle (log-odds strengths).

    Ties as half wins: ``sigma(s_i - s_j)`` (``P + P^T = 1``).  With Davidson's ``tie_param`` ``nu``:
    ``exp(d/2) / (exp(d/2) + exp(-d/2) + nu)``, ``d = s_i - s_j`` (the rest is a tie).  Diagonal ``NaN``.
    """
    from scipy.special import expit

    s = np.asarray(strength, dtype=np.float64)
    d = s[..., :, None] - s[..., None, :]
    if tie_param is None or np.isnan(tie_param):
        P = expit(d)
    else:
        nu = float(tie_param)
        if np.isinf(nu):
            P = np.zeros_like(d)
        else:
            P = 1.0 / (1.0 + np.exp(-d) + nu * np.exp(-d / 2.0))
    idx = np.arange(s.shape[-1])
    P[..., idx, idx] = np.nan
    return P


def _strongly_connected(E: np.ndarray) -> bool:
    """Whether the directed graph of the boolean adjacency ``E`` (s, s) is strongly connected."""
    if E.shape[0] <= 1 or (E | np.eye(E.shape[0], dtype=bool)).all():  # every pair met both ways
        return True
    from scipy.sparse.csgraph import connected_components

    n, _ = connected_components(E.astype(np.int8), directed=True, connection="strong")
    return n == 1


def _row_gcd_normalise(W: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Divide every row's whole-number counts by their gcd (exactly), so any common unit gives the same input."""
    R = W.shape[0]
    flat = np.concatenate([W.reshape(R, -1), T.reshape(R, -1)], axis=1)
    whole = (flat == np.round(flat)).all(axis=1) & (flat.max(axis=1, initial=0.0) < 2.0**53)
    g = np.ones(R, dtype=np.int64)
    if whole.any():
        g[whole] = np.gcd.reduce(flat[whole].astype(np.int64), axis=1)
    g[g < 1] = 1
    if (g == 1).all():
        return W, T
    scale = g.astype(np.float64)[:, None, None]
    return W / scale, T / scale


def _fit_rows(W: np.ndarray, T: np.ndarray, *, tie_model: str, ridge: float | None, tol: float,
              max_iter: int, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Fit every row (R, S, S); models without a battle in a row are left out of that row's fit (``NaN``).

    Rows are grouped by which models took part, and each group is fitted on those models only, so a
    row's fit is the same whatever other rows share its batch.
    """
    R, S = W.shape[0], W.shape[-1]
    theta = np.full((R, S), np.nan)
    nu = np.full(R, np.nan if tie_model == "half" else 0.0)
    lam = np.zeros(R)
    its = np.zeros(R, dtype=np.int64)
    N = W + np.swapaxes(W, -1, -2) + T
    present = N.sum(axis=-1) > 0
    if R == 0:
        return theta, nu, lam, its
    patterns, inverse = np.unique(present, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    for p in range(patterns.shape[0]):
        rows = np.flatnonzero(inverse == p)
        keep = np.flatnonzero(patterns[p])
        if keep.size < 2:
            continue
        if rows.size == R and keep.size == S:  # every row, every model: no gather
            Wg, Tg = _row_gcd_normalise(W, T)
        else:
            sub = np.ix_(rows, keep, keep)
            Wg, Tg = _row_gcd_normalise(W[sub], T[sub])
        Ng = Wg + np.swapaxes(Wg, -1, -2) + Tg
        lam_g = np.zeros(rows.size)
        for r in range(rows.size):
            davidson = tie_model == "davidson" and Tg[r].any()
            if ridge is not None:
                lam_g[r] = ridge
            elif davidson and not Wg[r].any():  # every battle a tie: nu = inf, nothing to fit
                continue
            # ties as half wins: "beat or tied" must be strongly connected; Davidson's ties let a gap and nu
            # grow without bound, so its MLE needs strict wins across every cut
            elif not _strongly_connected(Wg[r] > 0 if davidson else (Wg[r] > 0) | (Tg[r] > 0)):
                lam_g[r] = RIDGE * Ng[r].sum() / keep.size
        st = None
        if start is not None and tie_model == "half":
            st = np.nan_to_num(start[np.ix_(rows, keep)])
            st = st - st.mean(axis=-1, keepdims=True)
        if tie_model == "half":
            th, it = _newton_half(Wg + 0.5 * Tg, lam_g, tol=tol, max_iter=max_iter, start=st)
            v = np.full(rows.size, np.nan)
        else:
            th, v, it = _newton_davidson(Wg, Tg, lam_g, tol=tol, max_iter=max_iter)
        theta[np.ix_(rows, keep)] = th
        nu[rows] = v
        lam[rows] = lam_g
        its[rows] = it
    return theta, nu, lam, its


def _blocks(n_rows: int, s: int):
    step = max(1, _FIT_BLOCK // max(1, s * s))
    for r0 in range(0, n_rows, step):
        yield slice(r0, min(n_rows, r0 + step))


def _log_sigmoid(d: np.ndarray) -> np.ndarray:
    """``log sigma(d) = min(d, 0) - log1p(exp(-|d|))``, stable for any ``d``; the same operations in one work array."""
    out = np.abs(d, out=np.empty(np.shape(d)))
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    return np.subtract(np.minimum(d, 0.0), out, out=out)


def _ll_half(C: np.ndarray, th: np.ndarray, lam: np.ndarray) -> np.ndarray:
    d = th[:, :, None] - th[:, None, :]
    return (C * _log_sigmoid(d)).sum(axis=-1).sum(axis=-1) - 0.5 * lam * (th * th).sum(axis=-1)


def _newton_half(C: np.ndarray, lam: np.ndarray, *, tol: float, max_iter: int,
                 start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method on ``sum C_ij log sigma(s_i - s_j) - lam/2 |s|^2`` for every row of ``C`` (B, s, s).

    ``sigma(d) = (1 + tanh(d / 2)) / 2`` (numpy's vectorised ``tanh`` is several times faster than ``exp`` here);
    the ``(rows, s, s)`` work arrays are reused from step to step.  ``start`` (B, s): initial strengths (default 0).
    """
    B, s, _ = C.shape
    theta = np.zeros((B, s))
    its = np.zeros(B, dtype=np.int64)
    idx = np.arange(s)
    for blk in _blocks(B, s):
        Cb = C[blk]
        Nb = Cb + np.swapaxes(Cb, -1, -2)
        base = Cb.sum(axis=-1) - 0.5 * Nb.sum(axis=-1)  # wins - N / 2 per model: the gradient at equal strengths
        lb = lam[blk]
        shift = (Nb.sum(axis=-1).sum(axis=-1) / (4.0 * s * s))[:, None, None]  # of the order of L's entries
        th = np.zeros((Cb.shape[0], s)) if start is None else np.array(start[blk], dtype=np.float64)
        active = np.arange(Cb.shape[0])
        H_buf = np.empty(Nb.shape)
        M_buf = np.empty(Nb.shape)
        for _ in range(max_iter):
            k = active.size
            if k == 0:
                break
            every = k == Cb.shape[0]
            t_a, l_a = th[active], lb[active]
            N_a = Nb if every else Nb[active]
            H, M = H_buf[:k], M_buf[:k]
            np.subtract(t_a[:, :, None], t_a[:, None, :], out=H)
            H *= 0.5
            np.tanh(H, out=H)  # h = tanh(d / 2): sigma(d) = (1 + h) / 2, sigma(d) sigma(-d) = (1 - h^2) / 4
            np.multiply(N_a, H, out=M)
            g = base[active] - 0.5 * M.sum(axis=-1) - l_a[:, None] * t_a
            np.multiply(M, H, out=M)
            np.subtract(N_a, M, out=M)
            M *= 0.25  # A = N sigma(d) sigma(-d)
            np.subtract(shift if every else shift[active], M, out=H)
            H[:, idx, idx] += M.sum(axis=-1) + l_a[:, None]
            step = np.linalg.solve(H, g[..., None])[..., 0]
            step = _damp(step, lambda x, a=active, c=Cb, lam_b=lb: _ll_half(c[a], x, lam_b[a]), t_a)
            new = t_a + step
            th[active] = new
            its[blk][active] += 1
            done = np.abs(step).max(axis=-1) <= tol * np.maximum(1.0, np.abs(new).max(axis=-1))
            active = active[~done]
        if active.size:
            raise ValueError(f"bradley_terry: Newton's method did not converge in {max_iter} steps")
        theta[blk] = th - th.mean(axis=-1, keepdims=True)
    return theta, its


def _damp(step: np.ndarray, loglik, x: np.ndarray) -> np.ndarray:
    """Halve the long steps (> 0.25) of the rows whose log-likelihood would decrease (at most 60 times).

    Shorter Newton steps of these concave likelihoods are taken as they are (the quadratic model is good there).
    """
    long = np.abs(step).max(axis=-1) > 0.25
    if not long.any():
        return step
    rows = np.flatnonzero(long)
    base = loglik(x)
    t = np.ones(step.shape[0])
    for _ in range(60):
        trial = loglik(x + t[:, None] * step)
        bad = rows[trial[rows] < base[rows] - 1e-12 * np.abs(base[rows])]
        if bad.size == 0:
            break
        t[bad] *= 0.5
        rows = bad
    return step * t[:, None]


def _davidson_terms(th: np.ndarray, gam: np.ndarray):
    """Per pair: ``d``, ``log Z`` with ``Z = e^(d/2) + e^(-d/2) + e^gamma``, and the probabilities ``pa, pb, pt``."""
    d = th[:, :, None] - th[:, None, :]
    g = gam[:, None, None]
    m = np.maximum(np.abs(d) / 2.0, g)
    ea, eb, et = np.exp(d / 2.0 - m), np.exp(-d / 2.0 - m), np.exp(g - m)
    z = ea + eb + et
    return d, np.log(z) + m, ea / z, eb / z, et / z


def _ll_davidson(W: np.ndarray, T: np.ndarray, th: np.ndarray, gam: np.ndarray, lam: np.ndarray) -> np.ndarray:
    d, logz, _, _, _ = _davidson_terms(th, gam)
    N = W + np.swapaxes(W, -1, -2) + T
    term = 0.5 * (W - np.swapaxes(W, -1, -2)) * d / 2.0 + 0.5 * T * gam[:, None, None] - 0.5 * N * logz
    idx = np.arange(th.shape[-1])
    term[:, idx, idx] = 0.0
    return term.sum(axis=-1).sum(axis=-1) - 0.5 * lam * (th * th).sum(axis=-1)


def _newton_davidson(W: np.ndarray, T: np.ndarray, lam: np.ndarray, *, tol: float,
                     max_iter: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Newton's method on Davidson's log-likelihood in (strengths, log nu) for every row (B, s, s)."""
    B, s, _ = W.shape
    theta = np.zeros((B, s))
    nu = np.zeros(B)
    its = np.zeros(B, dtype=np.int64)
    idx = np.arange(s)
    tie_total = T.sum(axis=-1).sum(axis=-1)
    dec_total = W.sum(axis=-1).sum(axis=-1)
    plain = tie_total == 0  # no tie: nu = 0, the plain Bradley-Terry fit
    if plain.any():
        rows = np.flatnonzero(plain)
        th, it = _newton_half(W[rows], lam[rows], tol=tol, max_iter=max_iter)
        theta[rows], its[rows] = th, it
    all_ties = (dec_total == 0) & ~plain  # every battle a tie: equal strengths, nu = inf
    nu[all_ties] = np.inf
    todo = np.flatnonzero(~plain & ~all_ties)
    for blk in _blocks(todo.size, s + 1):
        rows = todo[blk]
        Wb, Tb, lb = W[rows], T[rows], lam[rows]
        Nb = Wb + np.swapaxes(Wb, -1, -2) + Tb
        Nb[:, idx, idx] = 0.0
        n_pairs = 0.5 * Nb.sum(axis=-1).sum(axis=-1)
        share = 0.5 * Tb.sum(axis=-1).sum(axis=-1) / n_pairs
        th = np.zeros((rows.size, s))
        gam = np.log(2.0 * share / (1.0 - share))  # moment estimate at equal strengths
        margin = 0.5 * (Wb - np.swapaxes(Wb, -1, -2)).sum(axis=-1)
        ties_half = 0.5 * Tb.sum(axis=-1).sum(axis=-1)
        shift = (Nb.sum(axis=-1).sum(axis=-1) / (4.0 * s * s))[:, None, None]
        active = np.arange(rows.size)
        for _ in range(max_iter):
            if active.size == 0:
                break
            t_a, g_a, N_a, l_a = th[active], gam[active], Nb[active], lb[active]
            d, _, pa, pb, pt = _davidson_terms(t_a, g_a)
            diff = pa - pb
            grad_t = margin[active] - 0.5 * (N_a * diff).sum(axis=-1) - l_a[:, None] * t_a
            grad_g = ties_half[active] - 0.5 * (N_a * pt).sum(axis=-1).sum(axis=-1)
            f_dd = 0.25 * (pa + pb) - 0.25 * diff * diff
            f_dg = -0.5 * pt * diff
            f_gg = pt * (1.0 - pt)
            A = N_a * f_dd
            H = np.empty((active.size, s + 1, s + 1))
            H[:, :s, :s] = shift[active] - A
            H[:, idx, idx] += A.sum(axis=-1) + l_a[:, None]
            H[:, :s, s] = H[:, s, :s] = (N_a * f_dg).sum(axis=-1)
            H[:, s, s] = 0.5 * (N_a * f_gg).sum(axis=-1).sum(axis=-1)
            grad = np.concatenate([grad_t, grad_g[:, None]], axis=-1)
            step = np.linalg.solve(H, grad[..., None])[..., 0]
            x = np.concatenate([t_a, g_a[:, None]], axis=-1)
            step = _damp(step, lambda z, a=active, w=Wb, t=Tb, lam_b=lb: _ll_davidson(w[a], t[a], z[:, :s], z[:, s], lam_b[a]),
                         x)
            new = x + step
            th[active], gam[active] = new[:, :s], new[:, s]
            its[rows[active]] += 1
            done = np.abs(step).max(axis=-1) <= tol * np.maximum(1.0, np.abs(new).max(axis=-1))
            active = active[~done]
        if active.size:
            raise ValueError(f"bradley_terry (davidson): Newton's method did not converge in {max_iter} steps")
        theta[rows] = th - th.mean(axis=-1, keepdims=True)
        nu[rows] = np.exp(gam)
    return theta, nu, its


# --------------------------------------------------------------------------------------------- Elo, win rate
def elo(a, b, outcome, *, n_models: int | None = None, k: float = 4.0, initial: float | np.ndarray = ELO_INITIAL,
        scale: float = ELO_SCALE, base: float = ELO_BASE, weights=None) -> np.ndarray:
    """Online Elo ratings from battle records, **in the order given** (the result depends on it).

    For every battle, in record order: ``E_a = 1 / (1 + base^((R_b - R_a) / scale))``, ``R_a += k w (S_a - E_a)``
    and ``R_b -= k w (S_a - E_a)`` with ``S_a`` = 1, 0 or 0.5 (tie) and ``w`` the battle's weight (1 by
    default).  FastChat's ``compute_online_elo`` with its defaults (``k = 4``, scale 400, base 10, initial
    1000).  Reordering the battles changes the ratings: use :func:`bradley_terry` for an order-free
    estimate.  Models without a battle keep ``initial`` (a number, or one rating per model: the ratings
    of an earlier call, to continue over the next records).

    Returns
    -------
    ndarray, shape (S,)

    Examples
    --------
    >>> elo([0, 0], [1, 1], [A_WINS, TIE], k=32).round(3).tolist()
    [1014.53, 985.47]
    """
    a = _int_codes(a, "model_a codes")
    b = _int_codes(b, "model_b codes")
    o = _int_codes(outcome, "outcomes")
    if not (np.isfinite(k) and k > 0 and np.isfinite(scale) and scale > 0 and np.isfinite(base) and base > 1):
        raise ValueError("elo needs k > 0, scale > 0 and base > 1")
    S = int(max(a.max(initial=-1), b.max(initial=-1))) + 1 if n_models is None else int(n_models)
    if a.size and (min(int(a.min()), int(b.min())) < 0 or max(int(a.max()), int(b.max())) >= S):
        raise ValueError(f"model codes must lie in 0..{S - 1}")
    if a.size and (int(o.min()) < 0 or int(o.max()) > TIE):
        raise ValueError("outcomes must be 0 (model_a wins), 1 (model_b wins) or 2 (tie)")
    kw = np.full(a.size, float(k)) if weights is None else float(k) * np.asarray(weights, dtype=np.float64)
    if kw.shape != a.shape:
        raise ValueError(f"expected {a.size} battle weights, got shape {kw.shape}")
    score_a = np.array([1.0, 0.0, 0.5])[o]
    R = np.broadcast_to(np.asarray(initial, dtype=np.float64), (S,)).tolist()  # a rating per model: resume a run
    lb = math.log(float(base)) / float(scale)
    for ai, bi, sa, kk in zip(a.tolist(), b.tolist(), score_a.tolist(), kw.tolist()):
        ea = 1.0 / (1.0 + math.exp((R[bi] - R[ai]) * lb))
        delta = kk * (sa - ea)
        R[ai] += delta
        R[bi] -= delta
    return np.asarray(R)


def win_rate(wins, ties=None) -> np.ndarray:
    """Share of its battles a model won, ties counting half: ``(sum_j W_ij + T_ij / 2) / sum_j N_ij``.

    ``NaN`` for a model without a battle.  Leading axes of ``wins`` (..., S, S) are independent.

    Examples
    --------
    >>> win_rate(np.array([[0.0, 3.0], [1.0, 0.0]]), np.array([[0.0, 2.0], [2.0, 0.0]])).tolist()
    [0.6666666666666666, 0.3333333333333333]
    """
    W = np.asarray(wins, dtype=np.float64)
    T = np.zeros_like(W) if ties is None else np.asarray(ties, dtype=np.float64)
    num = 2.0 * W.sum(axis=-1) + T.sum(axis=-1)
    den = 2.0 * (W.sum(axis=-1) + W.sum(axis=-2) + T.sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


# --------------------------------------------------------------------------------------------- bootstrap
@dataclass(frozen=True)
class BattleBootstrap:
    """Bootstrap over battles (see :func:`bootstrap_battles`); plain numpy, models on the last axis.

    Attributes
    ----------
    rule, tie_model, scale : str
    replicates, seed : int
    level : float
        Coverage of the intervals (0.95: 2.5 and 97.5 percentiles).
    score : ndarray (S,)
        Full-data scores (after the tie rule), ``NaN`` for a model without a battle.
    rank : ndarray (S,)
        Full-data competition ranks: 1 + the models with a strictly higher score.
    replicate_score, replicate_rank : ndarray (B, S)
    score_low, score_high : ndarray (S,)
        Percentile interval of the replicate scores.
    rank_low, rank_high : ndarray (S,)
        Percentile interval of the replicate ranks (bounds are replicate ranks, not interpolated).
    rank_ub : ndarray (S,)
        Rank(UB), paired (:func:`engine.kernels.metrics.rank_upper_bound`): 1 + the number of models that score
        above this one in at least ``level`` of the replicates.
    prob_above : ndarray (S, S)
        Share of replicates in which ``i`` scores strictly above ``j``.
    win_prob : ndarray (S, S) or None
        Bradley-Terry only: the full-data fit's probability that ``i`` beats ``j`` in one battle.
    ridge : ndarray (B + 1,)
        Ridge of the full-data fit (first) and of every replicate (Bradley-Terry; zeros otherwise).
    """

    rule: str
    tie_model: str
    scale: str
    replicates: int
    seed: int
    level: float
    score: np.ndarray
    rank: np.ndarray
    replicate_score: np.ndarray
    replicate_rank: np.ndarray
    score_low: np.ndarray
    score_high: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    rank_ub: np.ndarray
    prob_above: np.ndarray
    win_prob: np.ndarray | None
    ridge: np.ndarray


def resample_battle_counts(counts: BattleCounts, *, seed: int, replicates) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial bootstrap of the battles: ``wins`` and ``ties`` of every replicate, shape (B, S, S).

    Resampling ``n`` battle records with replacement is a multinomial draw of ``n`` over the categories
    (``i`` beat ``j``, ``i`` tied ``j``) with probabilities ``records / n``, so a replicate costs O(S^2),
    not O(n).  Replicate ``b`` uses ``SeedSequence(seed, spawn_key=(battles, b))``.  With weights, the
    resampled records of a category carry its mean weight.
    """
    from engine.kernels.resample import replicate_generator, replicate_ids

    ids = replicate_ids(replicates)
    S = counts.n_models
    iu = np.triu_indices(S, 1)
    rec = np.concatenate([counts.battles_wins.ravel(), counts.battles_ties[iu]]).astype(np.int64)
    val = np.concatenate([counts.wins.ravel(), counts.ties[iu]])
    n = int(rec.sum())
    nz = np.flatnonzero(rec)
    if n == 0:
        raise ValueError("no battles to resample")
    p = rec[nz] / n
    mean_w = val[nz] / rec[nz]
    weighted = not np.array_equal(mean_w, np.ones_like(mean_w))
    W = np.zeros((ids.size, S, S))
    T = np.zeros((ids.size, S, S))
    for r, b in enumerate(ids):
        draw = replicate_generator(seed, int(b), stream="battles").multinomial(n, p)
        full = np.zeros(rec.size)
        full[nz] = draw * mean_w if weighted else draw
        W[r] = full[: S * S].reshape(S, S)
        T[r][iu] = full[S * S :]
        T[r] += T[r].T
    return W, T


def _scores_of(rule: str, W: np.ndarray, T: np.ndarray, tie_model: str, scale: str,
               start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scores (after the tie rule), Davidson's nu, ridges and log-odds strengths of stacked counts (R, S, S)."""
    if rule == "bradley_terry":
        fit = fit_bradley_terry(W, T, tie_model=tie_model, start=start)
        s = to_elo_scale(fit.strength) if scale == "elo" else fit.strength
        return snap_ties(s, 1.0), fit.tie_param, fit.ridge, fit.strength
    nan = np.full(W.shape[0], np.nan)
    return snap_ties(win_rate(W, T), 1.0), nan, np.zeros(W.shape[0]), nan


def bootstrap_battles(counts: BattleCounts, *, rule: str = "bradley_terry", replicates: int = 100, seed: int = 0,
                      tie_model: str = "half", scale: str = "logit", level: float = 0.95, block: int = 32) -> BattleBootstrap:
    """Bootstrap over battles: multinomial resampling of the pair counts, refits, rank intervals and bounds.

    Parameters
    ----------
    counts : BattleCounts
    rule : {"bradley_terry", "win_rate"}
        :func:`elo` depends on the order of the battles, which counts do not keep, so it has no bootstrap
        here.
    replicates, seed : int
        Replicate ``b`` depends on ``seed`` and ``b`` only (:func:`resample_battle_counts`).
    tie_model, scale : str
        As :func:`bradley_terry`.
    level : float
        Coverage of the percentile intervals.
    block : int
        Replicates fitted at once (memory ``~ 10 * block * S^2`` floats); results do not depend on it.

    Notes
    -----
    Bradley-Terry replicates start Newton's method from the full-data strengths (fewer steps; the maximum
    is the same to ``1e-10``).  A replicate in which some model has no battle fits the others only and gives
    that model ``NaN`` (left out of its percentiles).

    Returns
    -------
    BattleBootstrap
    """
    from engine.kernels.metrics import prob_above, rank_intervals, rank_upper_bound

    _check_choice(rule, ("bradley_terry", "win_rate"), "battle bootstrap rule")
    _check_choice(tie_model, _TIE_MODELS, "tie model")
    _check_choice(scale, _SCALES, "scale")
    check_level(level)
    B = int(replicates)
    if B < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    score, nu, ridge0, strength = _scores_of(rule, counts.wins[None], counts.ties[None], tie_model, scale)
    score = score[0]
    start = strength[0] if rule == "bradley_terry" else None  # replicates start from the full-data fit
    S = counts.n_models
    rep = np.empty((B, S))
    ridges = np.empty(B)
    for b0 in range(0, B, max(1, int(block))):
        ids = np.arange(b0, min(B, b0 + max(1, int(block))))
        W, T = resample_battle_counts(counts, seed=seed, replicates=ids)
        rep[ids], _, ridges[ids], _ = _scores_of(rule, W, T, tie_model, scale, start)
    rep_rank = min_rank(rep)
    q = [50.0 * (1.0 - level), 50.0 * (1.0 + level)]
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model without a battle: all-NaN column
        s_lo, s_hi = np.nanpercentile(rep, q, axis=0, method="linear")
    r_lo, r_hi = rank_intervals(rep_rank, level=level)
    prob = prob_above(rep)
    win_prob = None
    if rule == "bradley_terry":
        logit = score if scale == "logit" else (score - ELO_INITIAL) * math.log(ELO_BASE) / ELO_SCALE
        win_prob = win_probabilities(logit, tie_param=None if tie_model == "half" else float(nu[0]))
    return BattleBootstrap(rule=rule, tie_model=tie_model, scale=scale, replicates=B, seed=int(seed), level=float(level),
                           score=score, rank=min_rank(score), replicate_score=rep, replicate_rank=rep_rank,
                           score_low=s_lo, score_high=s_hi, rank_low=r_lo, rank_high=r_hi,
                           rank_ub=rank_upper_bound(score, prob, level=level), prob_above=prob, win_prob=win_prob,
                           ridge=np.concatenate([ridge0, ridges]))


# --------------------------------------------------------------------------------------------- rules on score tensors
def _batch_counts(X: np.ndarray, weights) -> tuple[np.ndarray, np.ndarray]:
    """Judge counts of ``X`` (..., T, S) in exact units, flattened to (R, S, S), and the batch shape."""
    W, T, _ = _unit_counts(X, weights)
    S = X.shape[-1]
    return W.reshape(-1, S, S), T.reshape(-1, S, S)


def bradley_terry_across(X: np.ndarray, *, weights: np.ndarray | None = None, tie_model: str = "half",
                         scale: str = "logit") -> np.ndarray:
    """Bradley-Terry strengths from the battles of every judge (task) of a score tensor.

    Every task is a judge whose scores yield one battle per pair of systems it scores (higher score wins,
    equal scores tie, a missing score is no battle); the counts over the tasks (weighted by the task
    weights: whole-number weights act as that many copies of the task) are fitted by
    :func:`fit_bradley_terry` (options ``tie_model`` and ``scale``).

    Returns
    -------
    ndarray, shape (..., S)
        Log-odds strengths centred at 0 over the systems with a battle (``scale="elo"``: the Arena scale,
        mean 1000); ``NaN`` for a system without a battle.

    Examples
    --------
    >>> X = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0], [3.0, 1.0, 2.0]])
    >>> (bradley_terry_across(X).round(4) + 0.0).tolist()  # wins 4, 3, 2 of 6 battles each
    [0.4682, 0.0, -0.4682]
    """
    _check_choice(tie_model, _TIE_MODELS, "tie_model")
    _check_choice(scale, _SCALES, "scale")
    X = as_profile(X, "bradley_terry")
    if _bt_path(X, weights) == "statistics":
        s = _bradley_terry_statistics(X, weights, tie_model)
    else:
        s = _bradley_terry_dense(X, weights, tie_model)
    return to_elo_scale(s) if scale == "elo" else s


def _bt_path(X: np.ndarray, weights) -> str:
    """The Bradley-Terry path the cost model (:mod:`engine.kernels.costs`) picks for this batch of fits:
    ``"dense"`` (count matrices, :func:`fit_bradley_terry`) or ``"statistics"`` (:mod:`engine.kernels.btlarge`:
    no (S, S) count matrices); both reach the same maximum (tests/kernels/test_btlarge.py, tests/labelled/test_speed_paths.py)."""
    from engine.kernels import costs

    # the choice is made per fit (systems and judges), never from the size of the batch, so that a fit takes the
    # same path, and gives the same bits, whatever batch (bootstrap block) it comes in; both paths fit rows one
    # bounded batch at a time, so the memory of one fit is what matters
    return costs.choose("bradley_terry", costs.Sizes(systems=X.shape[-1], judges=X.shape[-2], fits=1))


def _bradley_terry_dense(X: np.ndarray, weights, tie_model: str) -> np.ndarray:
    """:func:`bradley_terry_across` from count matrices, a bounded batch of fits at a time (each fit is the
    same whatever batch it is in: :func:`fit_bradley_terry` fits rows independently)."""
    *_, T, S = X.shape
    wb = None if weights is None else np.asarray(weights, dtype=np.float64)
    batch = np.broadcast_shapes(X.shape[:-2], () if wb is None else wb.shape[:-1])
    n = int(np.prod(batch, dtype=np.int64))
    step = max(1, _FIT_BLOCK // max(1, S * S))
    if n <= 1:
        return _dense_rows(X, weights, tie_model)
    Xf = np.broadcast_to(X, (*batch, T, S)).reshape(n, T, S) if X.ndim > 2 else X
    wf = None if wb is None or wb.ndim <= 1 else np.broadcast_to(wb, (*batch, T)).reshape(n, T)
    if X.ndim == 2 and wf is not None:  # one table, rows of weights (resamples): each distinct row is fitted once
        distinct, inverse = np.unique(wf, axis=0, return_inverse=True)
        if distinct.shape[0] < n:
            return _bradley_terry_dense(X, distinct, tie_model)[np.asarray(inverse).reshape(-1)].reshape(*batch, S)
    out = np.empty((n, S))
    for r0 in range(0, n, step):
        rows = slice(r0, min(n, r0 + step))
        # every fit starts at equal strengths: a replicate drawn with weights k gives the same bits as the table with
        # its tasks repeated k times, in any block (tests/rules/test_differential.py)
        out[rows] = _dense_rows(Xf[rows] if X.ndim > 2 else X, wb if wf is None else wf[rows], tie_model).reshape(-1, S)
    return out.reshape(*batch, S)


def _dense_rows(X: np.ndarray, weights, tie_model: str, start: np.ndarray | None = None) -> np.ndarray:
    W, T = _batch_counts(X, weights)
    T = 0.5 * (T + np.swapaxes(T, -1, -2))  # real weights: the two halves of a tie sum may differ in the last bit
    batch = np.broadcast_shapes(X.shape[:-2], () if weights is None else np.shape(weights)[:-1])
    fit = fit_bradley_terry(W, T, tie_model=tie_model, start=start)
    return fit.strength.reshape(*batch, X.shape[-1])


def _bradley_terry_statistics(X: np.ndarray, weights: np.ndarray | None, tie_model: str) -> np.ndarray:
    """:func:`bradley_terry_across` one fit at a time from :func:`btlarge.judge_statistics` (each distinct input once)."""
    from engine.kernels import btlarge

    Xb, wb = broadcast_profile(X, weights, "bradley_terry")
    *batch, T, S = Xb.shape
    Xf, wf = Xb.reshape(-1, T, S), wb.reshape(-1, T)
    out = np.empty((Xf.shape[0], S))
    done: dict[tuple[int, bytes], int] = {}
    for r in range(Xf.shape[0]):
        k = _whole_units(wf[r])
        key = (0 if X.ndim == 2 else r, k.tobytes())  # one profile: equal weight rows (resamples) fit once
        if key in done:
            out[r] = out[done[key]]
            continue
        stats = btlarge.judge_statistics(Xf[r], k)
        out[r] = btlarge.fit_statistics(stats, tie_model=tie_model, ridge_scale=RIDGE)[0]
        done[key] = r
    return out.reshape(*batch, S)


def _whole_units(w: np.ndarray) -> np.ndarray:
    """Weights as whole numbers divided by their greatest common divisor when they are simple fractions
    (so that any common unit gives the same fit), else unchanged."""
    k, L = exact_weights(w, w.shape)
    if L is None:
        return np.asarray(w, dtype=np.float64)
    g = int(np.gcd.reduce(k.astype(np.int64))) if k.size else 1
    return k / g if g > 1 else k


def broadcast_profile(X: np.ndarray, weights: np.ndarray | None, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """A profile ``X`` (..., T, S) and its task weights (..., T), both broadcast to their common batch shape."""
    X = as_profile(X, rule)
    T, S = X.shape[-2:]
    w = task_weights(weights, T)
    batch = np.broadcast_shapes(X.shape[:-2], w.shape[:-1])
    return np.broadcast_to(X, (*batch, T, S)), np.broadcast_to(w, (*batch, T))


#: cells of the (S, S) battle matrix of one judge that :func:`elo_across` holds at once (rows in blocks)
ELO_BLOCK_CELLS = 1 << 22


def elo_across(X: np.ndarray, *, weights: np.ndarray | None = None, k: float = 4.0) -> np.ndarray:
    """Online Elo over the judges (tasks) of a score tensor, one judge after the other in task order.

    The engine feeds the tasks in their canonical (label) order, so the result depends on the task
    labels, not on the input order; it *does* depend on that order (Elo is online).  Within a judge all
    its battles (every pair of systems it scores) are played at once from the ratings before the judge:
    ``R_i += k w_t sum_j (S_ij - E_ij)`` with ``E_ij = 1 / (1 + 10^((R_j - R_i) / 400))`` and ``S_ij``
    = 1, 0.5 or 0, so the order of the systems does not matter.  Initial rating 1000, ``k = 4``
    (FastChat's default) unless given; a task weight ``w_t`` scales its updates.  ``NaN`` for a system
    without a battle.

    Examples
    --------
    >>> elo_across(np.array([[2.0, 1.0], [2.0, 1.0]]), k=32).round(3).tolist()
    [1030.53, 969.47]
    """
    if not (np.isfinite(k) and k > 0):
        raise ValueError(f"elo: k must be a positive number, got {k!r}")
    Xb, wb = broadcast_profile(X, weights, "elo")
    *batch, T, S = Xb.shape
    R = np.full((*batch, S), ELO_INITIAL)
    played = np.zeros((*batch, S), dtype=bool)
    lb = math.log(ELO_BASE) / ELO_SCALE
    # rows of the (S, S) battle matrix in blocks (bounded memory for many systems); each row's sum over
    # its opponents is the same whatever the block, so the ratings do not depend on the block size
    step = max(1, ELO_BLOCK_CELLS // max(1, S * int(np.prod(batch, dtype=np.int64))))
    # one table for the whole batch (rows of weights, e.g. resamples): the outcomes of a judge are the same in every
    # row, so they are computed once and broadcast (the same values, summed in the same order)
    shared = np.ndim(X) == 2
    bufs: dict[int, tuple[np.ndarray, ...]] = {}
    for t in range(T):
        x = Xb[(0,) * len(batch)][t] if shared else Xb[..., t, :]
        ok = ~np.isnan(x)
        delta = np.empty((*batch, S))
        any_pair = np.zeros((*batch, S), dtype=bool)
        for i0 in range(0, S, step):
            i1 = min(S, i0 + step)
            if i1 - i0 not in bufs:
                bufs[i1 - i0] = _elo_buffers((*batch, i1 - i0, S), x[..., i0:i1, None].shape[:-1] + (S,))
            delta[..., i0:i1], any_pair[..., i0:i1] = _elo_block(x, ok, R, i0, i1, lb, bufs[i1 - i0])
        R = R + float(k) * wb[..., t, None] * delta
        played |= any_pair & (wb[..., t, None] > 0)
    return np.where(played, R, np.nan)


def _elo_buffers(shape: tuple[int, ...], outcome_shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Work arrays of one row block of :func:`elo_across`, reused from judge to judge (no fresh pages per block)."""
    return (np.empty(shape), np.empty(outcome_shape, dtype=bool), np.empty(outcome_shape, dtype=bool),
            np.empty(outcome_shape, dtype=np.int8), np.empty(outcome_shape))


def _elo_block(x: np.ndarray, ok: np.ndarray, R: np.ndarray, i0: int, i1: int, lb: float,
               bufs: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``i0:i1`` of one judge's Elo updates: ``sum_j (S_ij - E_ij)`` over the opponents each row battles, and
    whether it battles any.

    The same operations as ``np.where(pair, np.where(xi > xj, 1, np.where(xi < xj, 0, 0.5)) - 1 / (1 + exp((R_j -
    R_i) lb)), 0).sum(-1)``, value for value (so the same bits), in reused arrays: the outcome is ``0.5 (gt - lt)
    + 0.5``, exactly 1, 0 or 0.5; a cell without a battle is set to 0 before the same row sums."""
    e, gt, lt, sign, res = bufs
    xi, xj = x[..., i0:i1, None], x[..., None, :]
    pair = ok[..., i0:i1, None] & ok[..., None, :]
    pair[..., np.arange(i1 - i0), np.arange(i0, i1)] = False  # no battle with itself
    np.greater(xi, xj, out=gt)
    np.less(xi, xj, out=lt)
    np.subtract(gt.view(np.int8), lt.view(np.int8), out=sign)
    np.multiply(sign, 0.5, out=res)
    np.add(res, 0.5, out=res)
    np.subtract(R[..., None, :], R[..., i0:i1, None], out=e)
    np.multiply(e, lb, out=e)
    with np.errstate(over="ignore"):  # a gap of ratings beyond 700 / lb: exp is inf, the expected score 0
        np.exp(e, out=e)
    np.add(1.0, e, out=e)
    np.divide(1.0, e, out=e)
    np.subtract(res, e, out=e)
    np.copyto(e, 0.0, where=~pair)
    return e.sum(axis=-1), pair.any(axis=-1)


def win_rate_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """Share of its battles a system won over the judges (tasks) of a score tensor, ties counting half.

    ``(sum_t w_t (#beaten_t + #tied_t / 2)) / (sum_t w_t (#present_t - 1))`` over the tasks that score it:
    :func:`win_rate` of :func:`judge_counts`.  Counts are whole numbers (simple-fraction weights scaled),
    so the score is one division of exact integers.  ``NaN`` for a system without a battle.

    Examples
    --------
    >>> win_rate_across(np.array([[3.0, 1.0, 3.0], [1.0, 2.0, np.nan]])).tolist()
    [0.5, 0.3333333333333333, 0.75]
    """
    X = as_profile(X, "win_rate")
    W, T, _ = _unit_counts(X, weights)
    return win_rate(W, T)


def _lcm_limited(values, limit: int) -> int | None:
    out = 1
    for v in values:
        out = math.lcm(out, int(v))
        if out > limit:
            return None
    return out


def mean_win_rate_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """HELM's mean win rate: per task, the share of the other systems present that a system beats (ties half), averaged over tasks.

    Per task ``t`` with ``n_t >= 2`` systems present: ``v_ts = (worse + (ties - 1) / 2) / (n_t - 1)``,
    ``worse`` the present systems with a lower score and ``ties`` those with an equal score (itself
    included); tasks with fewer than 2 systems are dropped.  The score is the (weighted) mean of ``v_ts``
    over the tasks that score ``s``; ``NaN`` when there is none.  HELM ``compute_aggregate_row_win_rates``
    (aggregation ``"mean"``); task weights are an extension (HELM weighs tasks equally).

    The mean is exact: the ``v_ts`` of a ranking are put on the common denominator ``lcm(n_t - 1)`` (when it
    stays below 2^30) and summed as integers, so equal win rates are bitwise equal.

    Examples
    --------
    >>> mean_win_rate_across(np.array([[3.0, 1.0, 3.0], [1.0, 2.0, np.nan], [5.0, np.nan, np.nan]])).tolist()
    [0.375, 0.5, 0.75]
    """
    X = as_profile(X, "mean_win_rate")
    T, S = X.shape[-2:]
    w = task_weights(weights, T)
    batch = np.broadcast_shapes(X.shape[:-2], w.shape[:-1])
    P = borda_points(X)  # worse + (ties - 1) / 2: halves
    n = np.count_nonzero(~np.isnan(X), axis=-1)  # (..., T)
    P = np.broadcast_to(P, (*batch, T, S)).reshape(-1, T, S)
    n = np.broadcast_to(n, (*batch, T)).reshape(-1, T)
    wb = np.broadcast_to(w, (*batch, T)).reshape(-1, T)
    out = np.full(P.shape[:1] + (S,), np.nan)
    for r in range(P.shape[0]):
        valid = (n[r] >= 2) & (wb[r] > 0)
        use = valid[:, None] & ~np.isnan(P[r])  # (T, S)
        if not use.any():
            continue
        k, L = exact_weights(wb[r], (T,))
        D = _lcm_limited(sorted(set((n[r][valid] - 1).tolist())), 1 << 30) if L is not None else None
        if D is not None:
            mult = np.where(valid, D // np.maximum(n[r] - 1, 1), 0).astype(np.float64)
            num_terms = np.where(use, 2.0 * P[r] * mult[:, None] * k[:, None], 0.0)
            den_terms = np.where(use, 2.0 * D * k[:, None], 0.0)
            if num_terms.sum(axis=0).max() < 2.0**53 and den_terms.sum(axis=0).max() < 2.0**53:
                num, den = num_terms.sum(axis=0), den_terms.sum(axis=0)  # whole numbers: exact in any order
                out[r] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
                continue
        v = np.where(use, P[r] / np.maximum(n[r] - 1, 1)[:, None], 0.0)
        num = ordered_sum(wb[r][:, None] * v, axis=0)
        den = ordered_sum(np.where(use, wb[r][:, None], 0.0), axis=0)
        out[r] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return out.reshape(*batch, S)


def mteb_borda_across(X: np.ndarray, *, weights: np.ndarray | None = None) -> np.ndarray:
    """MTEB's Borda count: ``sum_t (N - r_ts)`` over the tasks that score ``s``.

    ``r_ts`` is the average rank (1 = best, ties share the mean position) of ``s`` among the systems
    present on task ``t``, and ``N`` the number of systems of the leaderboard (those with a score on some
    task of positive weight).  A missing score contributes 0.  Equivalently ``N - n_t`` plus the system's
    Borda points on ``t`` (systems beaten + half the others tied): with complete data it is the Borda
    count, and with missing scores a system present on a task also collects one point per system absent
    from it (an absent system counts as below every present one) while the absent system scores 0 there.
    Source: MTEB ``_borda_count``/``_get_borda_rank`` (``mteb/leaderboard/table.py``) and
    ``_borda_rank_from_long`` ("each model earns n_models - rank_in_task points per task it ran ...
    Missing tasks contribute 0", ``mteb/benchmarks/_create_table.py``), embeddings-benchmark/mteb commit
    ``0012c86c``; the leaderboard ranks models by this sum (``rank(method="min")``).  Task weights
    multiply the points (MTEB weighs tasks equally).

    Examples
    --------
    >>> mteb_borda_across(np.array([[3.0, 1.0, 2.0], [1.0, np.nan, 2.0]])).tolist()
    [3.0, 0.0, 3.0]
    """
    Xb, wb = broadcast_profile(X, weights, "mteb_borda")
    *batch, T, S = Xb.shape
    ok = ~np.isnan(Xb) & (wb[..., None] > 0)
    present = ok.any(axis=-2)
    N = present.sum(axis=-1)[..., None, None].astype(np.float64)
    n = np.count_nonzero(~np.isnan(Xb), axis=-1)[..., None].astype(np.float64)
    pts = np.where(ok, N - n + borda_points(Xb), np.nan)
    score = weighted_task_sum(pts, None if weights is None else wb)
    return np.where(present, score, np.nan)
