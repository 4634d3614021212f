"""Mutation-testing guards for the scale work (benchmarks/results/mutation.md, "Third pass: the scale work").

Each test kills mutants that survived the suite in the third mutation pass over:

- Bradley-Terry from the judges' sufficient statistics (engine.kernels.btlarge and the dispatch in
  engine.kernels.battles.bradley_terry_across): statistics of judges with two tied scores, judges of weight
  0, systems with one battle, all-tie tables, the ridge, the reported iterations and error messages, the
  line search and the log-likelihood it compares, batches of profiles and weights in any unit;
- the overflow-safe mean (engine.kernels.aggregate.overflow_safe_sum through mean_across and mean_pool);
- the tie-free win counts (engine.kernels.paircount and engine.kernels.pairblock): float32 dense ranks, the
  half-comparison loop and its fold, int32 counts of streamed instance chunks.

References never come from the code under test: brute-force comparisons over judges and pairs, the
score equations of the Bradley-Terry and Davidson (1970) likelihoods written here, closed forms for two
systems, fractions.Fraction sums and hand-worked values.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize
import scipy.special
import scipy.stats
from scipy.sparse.csgraph import connected_components

from engine.kernels import battles as B
from engine.kernels import btlarge as L
from engine.kernels.aggregate import mean_across, mean_pool

RIDGE = 1e-6  # the documented ridge rule: lambda = 1e-6 * sum_ij N_ij / S when the MLE does not exist


# --------------------------------------------------------------------------- brute-force references
def _counts(X, w):
    """``wins[i, j]`` and ``ties[i, j]`` summed over the judges (rows) of ``X`` with weights ``w``."""
    X = np.asarray(X, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    a, b = X[:, :, None], X[:, None, :]
    off = ~np.eye(X.shape[1], dtype=bool)
    wins = np.einsum("t,tij->ij", w, ((a > b) & off).astype(float))  # comparisons with NaN are False
    ties = np.einsum("t,tij->ij", w, ((a == b) & off).astype(float))
    return wins, ties


def _strongly_connected(E):
    return E.shape[0] <= 1 or connected_components(E.astype(int), directed=True, connection="strong")[0] == 1


def _ridge(wins, ties):
    """The documented ridge of a fit: 0 when "beat or tied" is strongly connected, else 1e-6 * sum N / S."""
    N = wins + wins.T + ties
    keep = N.sum(axis=1) > 0
    E = ((wins > 0) | (ties > 0))[np.ix_(keep, keep)]
    return 0.0 if _strongly_connected(E) else RIDGE * N.sum() / keep.sum()


def _half_gradient(s, wins, ties, lam):
    """Gradient of ``sum_ij (W + T/2)_ij log sigma(s_i - s_j) - lam/2 |s|^2`` over the systems with a battle."""
    N = wins + wins.T + ties
    keep = N.sum(axis=1) > 0
    sk = s[keep]
    C = (wins + ties / 2)[np.ix_(keep, keep)]
    Nk = N[np.ix_(keep, keep)]
    return C.sum(axis=1) - (Nk * scipy.special.expit(sk[:, None] - sk[None, :])).sum(axis=1) - lam * sk


def _davidson_parts(s, wins, ties):
    N = wins + wins.T + ties
    keep = N.sum(axis=1) > 0
    sk = s[keep]
    d = sk[:, None] - sk[None, :]
    return (wins[np.ix_(keep, keep)], ties[np.ix_(keep, keep)], N[np.ix_(keep, keep)], np.exp(d / 2), np.exp(-d / 2),
            sk)


def _davidson_nu(s, wins, ties):
    """Davidson's tie parameter that maximises the likelihood for the given strengths (1-D, monotone)."""
    _, Tk, Nk, ea, eb, _ = _davidson_parts(s, wins, ties)

    def f(log_nu):
        nu = np.exp(log_nu)
        return 0.5 * (Tk.sum() - (Nk * nu / (ea + eb + nu)).sum())

    return float(np.exp(scipy.optimize.brentq(f, -40.0, 40.0, xtol=1e-14)))


def _davidson_gradient(s, nu, wins, ties, lam):
    """Strength part of the gradient of Davidson's log-likelihood:
    ``P(i beats j) = p_i / (p_i + p_j + nu sqrt(p_i p_j))``, ``P(tie) = nu sqrt(p_i p_j) / (...)``."""
    Wk, Tk, Nk, ea, eb, sk = _davidson_parts(s, wins, ties)
    D = ea + eb + nu
    return (Wk + Tk / 2).sum(axis=1) - (Nk * (ea + nu / 2) / D).sum(axis=1) - lam * sk


def _davidson_loglik(s, nu, wins, ties, lam):
    """Davidson's log-likelihood (each tied pair once) minus the ridge, from the model's probabilities."""
    d = s[:, None] - s[None, :]
    D = np.exp(d / 2) + np.exp(-d / 2) + nu
    return float((wins * (d / 2 - np.log(D))).sum() + 0.5 * (ties * (np.log(nu) - np.log(D))).sum()
                 - 0.5 * lam * s @ s)


def _half_loglik(s, wins, ties, lam):
    d = s[:, None] - s[None, :]
    return float(((wins + ties / 2) * np.log(scipy.special.expit(d))).sum() - 0.5 * lam * s @ s)


def _scale(N):
    return max(1.0, float(N.sum()))


def _assert_half_mle(s, wins, ties, lam, *, rtol=1e-7):
    N = wins + wins.T + ties
    keep = N.sum(axis=1) > 0
    assert np.isnan(s[~keep]).all() and np.isfinite(s[keep]).all()
    assert abs(s[keep].mean()) < 1e-9  # centred over the systems with a battle
    np.testing.assert_allclose(_half_gradient(s, wins, ties, lam), 0.0, atol=rtol * _scale(N))


def _assert_davidson_mle(s, wins, ties, lam, *, rtol=1e-7):
    N = wins + wins.T + ties
    keep = N.sum(axis=1) > 0
    assert np.isfinite(s[keep]).all() and abs(s[keep].mean()) < 1e-9
    nu = _davidson_nu(s, wins, ties)
    np.testing.assert_allclose(_davidson_gradient(s, nu, wins, ties, lam), 0.0, atol=rtol * _scale(N))
    return nu


def _beat_graph_connected(wins):
    """Davidson's MLE needs every partition to be crossed by strict wins both ways (not only ties)."""
    keep = (wins + wins.T).sum(axis=1) > 0
    return _strongly_connected((wins > 0)[np.ix_(keep, keep)])


def _two_systems(wins, losses, ties=0, tie_weight=1.0):
    """Judges of two systems: ``wins`` with the first ahead, ``losses`` behind, ``ties`` tied (weight each)."""
    X = np.array([[1.0, 0.0]] * wins + [[0.0, 1.0]] * losses + [[0.5, 0.5]] * ties)
    w = np.array([1.0] * (wins + losses) + [tie_weight] * ties)
    return X, w


# --------------------------------------------------------------------------- sufficient statistics
def test_a_judge_with_exactly_two_tied_scores_counts_its_tie():
    X = np.array([[1.0, 1.0, np.nan], [3.0, 2.0, 1.0], [np.nan, 4.0, 4.0]])
    w = np.array([2.0, 1.0, 0.5])
    wins, ties = _counts(X, w)
    st = L.judge_statistics(X, w)
    assert st.ties == ties.sum() == 2 * 2.0 + 2 * 0.5
    np.testing.assert_array_equal(st.points, (wins + ties / 2).sum(axis=1))
    np.testing.assert_array_equal(st.margin, (wins - wins.T).sum(axis=1) / 2)
    np.testing.assert_array_equal(st.battles, (wins + wins.T + ties).sum(axis=1))


def test_judges_of_weight_zero_take_no_part_in_the_beat_or_tied_graph():
    X = np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]])  # the second judge would close the cycle
    w = np.array([1.0, 0.0])
    wins, ties = _counts(X, w)
    st = L.judge_statistics(X, w)
    assert st.present.shape == (1, 3)  # the weight-0 judge is dropped
    assert st.connected is False
    s, nu, lam, _ = L.fit_statistics(st)
    assert lam == pytest.approx(_ridge(wins, ties), rel=1e-12) and lam > 0
    _assert_half_mle(s, wins, ties, lam)


# --------------------------------------------------------------------------- closed forms and edge cases
def test_two_systems_fit_the_log_odds_and_report_no_tie_parameter():
    X, w = _two_systems(7, 2)
    st = L.judge_statistics(X, w)
    s, nu, lam, its = L.fit_statistics(st)  # the default model is "half"
    assert s[0] - s[1] == pytest.approx(np.log(7 / 2), abs=1e-9) and s.sum() == pytest.approx(0, abs=1e-12)
    assert np.isnan(nu) and lam == 0.0 and its >= 1
    s2, nu2, lam2, _ = L.fit_statistics(st, tie_model="davidson")  # no tie: Davidson is Bradley-Terry with nu = 0
    np.testing.assert_allclose(s2, s, atol=1e-12)
    assert nu2 == 0.0 and lam2 == 0.0


@pytest.mark.parametrize("ties, tie_weight", [(2, 1.0), (1, 0.5)])  # a tie total of 2, and of exactly 1
def test_two_systems_davidson_closed_form(ties, tie_weight):
    """Two systems: P(win), P(loss), P(tie) are the observed shares, so ``d = log(pw / pl)``, ``nu = pt / sqrt(pw pl)``."""
    X, w = _two_systems(6, 2, ties, tie_weight)
    n = 8 + ties * tie_weight
    pw, pl, pt = 6 / n, 2 / n, ties * tie_weight / n
    s, nu, lam, _ = L.fit_statistics(L.judge_statistics(X, w), tie_model="davidson")
    assert s[0] - s[1] == pytest.approx(np.log(pw / pl), abs=1e-9)
    assert nu == pytest.approx(pt / np.sqrt(pw * pl), rel=1e-9) and lam == 0.0
    s_half, nu_half, _, _ = L.fit_statistics(L.judge_statistics(X, w), tie_model="half")
    assert s_half[0] - s_half[1] == pytest.approx(np.log((6 + pt * n / 2) / (2 + pt * n / 2)), abs=1e-9)
    assert np.isnan(nu_half)


def test_a_system_with_a_single_battle_is_fitted():
    """C ties A once (its only battle), A beats B twice and loses once: s_C = s_A and s_A - s_B = log 2."""
    X = np.array([[2.0, 1.0, np.nan], [2.0, 1.0, np.nan], [1.0, 2.0, np.nan], [1.0, np.nan, 1.0]])
    st = L.judge_statistics(X, np.ones(4))
    assert st.battles[2] == 1.0
    s, _, lam, _ = L.fit_statistics(st)
    assert lam == 0.0
    np.testing.assert_allclose(s, np.array([1, 0, 1]) * np.log(2) - 2 * np.log(2) / 3, atol=1e-9)


def test_every_battle_a_tie():
    X = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, np.nan]])
    st = L.judge_statistics(X, np.ones(2))
    s, nu, lam, its = L.fit_statistics(st, tie_model="davidson")  # nu = inf: the MLE of the tie parameter
    assert s.tolist() == [0.0, 0.0, 0.0] and nu == np.inf and lam == 0.0 and its == 0
    s, nu, lam, _ = L.fit_statistics(st, tie_model="half")  # half a win each: equal strengths, no tie parameter
    assert s.tolist() == [0.0, 0.0, 0.0] and np.isnan(nu) and lam == 0.0


@pytest.mark.parametrize("tie_model", ["half", "davidson"])
def test_fewer_than_two_systems_with_a_battle(tie_model):
    X = np.array([[1.0, np.nan], [np.nan, 2.0]])  # no judge scores both
    s, nu, lam, its = L.fit_statistics(L.judge_statistics(X, np.ones(2)), tie_model=tie_model)
    ref = B.fit_bradley_terry(np.zeros((2, 2)), tie_model=tie_model)  # the documented convention of the count fit
    assert np.isnan(s).all() and lam == 0.0 and its == 0
    assert np.array_equal(np.asarray(nu), np.asarray(ref.tie_param), equal_nan=True)
    assert np.isnan(nu) == (tie_model == "half")


def test_a_cyclic_profile_gives_equal_strengths_at_once():
    """Each system beats each other as often as it loses: the gradient at 0 is exactly 0 (one zero step)."""
    X = np.array([[1.0, 2.0, 3.0], [2.0, 3.0, 1.0], [3.0, 1.0, 2.0]])
    s, _, lam, its = L.fit_statistics(L.judge_statistics(X, np.ones(3)))
    assert s.tolist() == [0.0, 0.0, 0.0] and lam == 0.0 and its == 1


# --------------------------------------------------------------------------- ridge, iterations, messages
def test_ridge_rule_and_a_forced_ridge():
    X = np.array([[3.0, 2.0, 1.0], [3.0, 1.0, 2.0], [3.0, 2.0, np.nan]])  # the first system never loses
    wins, ties = _counts(X, np.ones(3))
    st = L.judge_statistics(X, np.ones(3))
    s, _, lam, _ = L.fit_statistics(st)  # default ridge_scale: the engine's RIDGE = 1e-6
    assert lam == pytest.approx(RIDGE * (wins + wins.T + ties).sum() / 3, rel=1e-12)
    _assert_half_mle(s, wins, ties, lam)
    X2 = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0], [2.0, 1.0, 3.0], [3.0, 1.0, 2.0]])
    wins2, ties2 = _counts(X2, np.ones(4))
    s2, _, lam2, _ = L.fit_statistics(L.judge_statistics(X2, np.ones(4)), ridge=0.3)
    assert lam2 == 0.3
    _assert_half_mle(s2, wins2, ties2, 0.3)


@pytest.mark.parametrize("tie_model", ["half", "davidson"])
def test_iterations_are_the_newton_steps_and_max_iter_is_exact(tie_model, monkeypatch):
    X, w = _two_systems(6, 2, 2)
    st = L.judge_statistics(X, w)
    calls = []
    pcg = L._pcg
    monkeypatch.setattr(L, "_pcg", lambda *a: calls.append(1) or pcg(*a))  # one linear solve per Newton step
    _, _, _, its = L.fit_statistics(st, tie_model=tie_model)
    assert its == len(calls) >= 2
    assert L.fit_statistics(st, tie_model=tie_model, max_iter=its)[3] == its
    with pytest.raises(ValueError, match=rf"Newton's method did not converge in {its - 1} steps"):
        L.fit_statistics(st, tie_model=tie_model, max_iter=its - 1)
    with pytest.raises(ValueError, match=r"^bradley_terry.*: Newton's method did not converge in 200 steps$"):
        L.fit_statistics(st, tie_model=tie_model, tol=-1.0)  # never converges: the default cap of 200 steps


def test_bradley_terry_across_error_messages():
    X = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"^unknown tie_model 'x'; choose 'half' or 'davidson'$"):
        B.bradley_terry_across(X, tie_model="x")
    with pytest.raises(ValueError, match=r"^unknown scale 'x'; choose 'logit' or 'elo'$"):
        B.bradley_terry_across(X, scale="x")
    with pytest.raises(ValueError, match=r"^bradley_terry: X must have shape \(\.\.\., T, S\), got shape \(3,\)$"):
        B.bradley_terry_across(np.zeros(3))


# --------------------------------------------------------------------------- the line search
def test_damp_halves_long_steps_while_the_likelihood_decreases():
    def quad(c, scale=1.0, offset=0.0):
        return lambda x: offset - scale * float(((x - c) ** 2).sum())

    x0 = np.zeros(2)
    # short steps (up to 0.25) are taken as they are, even downhill
    np.testing.assert_array_equal(L._damp(np.array([0.2, 0.0]), quad(-1.0), x0), [0.2, 0.0])
    np.testing.assert_array_equal(L._damp(np.array([0.25, 0.0]), quad(-1.0), x0), [0.25, 0.0])
    # a step of 1 towards 0.1: 1, 1/2, 1/4 go downhill, 1/8 does not
    np.testing.assert_array_equal(L._damp(np.array([1.0, 0.0]), quad(np.array([0.1, 0.0])), x0), [0.125, 0.0])
    np.testing.assert_array_equal(L._damp(np.array([10.0, 0.0]), quad(np.array([15.0, 0.0])), x0), [10.0, 0.0])
    # a flat likelihood takes the full step; a never-accepted one ends after 60 halvings
    np.testing.assert_array_equal(L._damp(np.array([1.0, 0.0]), lambda x: 0.0, x0), [1.0, 0.0])
    np.testing.assert_array_equal(L._damp(np.array([1.0, 0.0]), lambda x: -1.0, x0), [1.0, 0.0])
    np.testing.assert_array_equal(L._damp(np.array([1.0, 0.0]), lambda x: -float(np.abs(x).sum()), x0),
                                  [2.0**-60, 0.0])
    # the tolerance is relative to the likelihood: 1e-12 of 1e6 accepts a loss of 1e-7
    np.testing.assert_array_equal(L._damp(np.array([1.0, 0.0]), lambda x: -1e6 - 1e-7 * float(x[0] != 0), x0),
                                  [1.0, 0.0])
    # ... and not a loss of 100 on a likelihood of -100: halved until 100 * 4**-k <= 1e-10 (k = 20)
    np.testing.assert_array_equal(L._damp(np.array([1.0, 0.0]), quad(0.0, 100.0, -100.0), x0), [2.0**-20, 0.0])


@pytest.mark.parametrize("tie_model", ["half", "davidson"])
@pytest.mark.parametrize("ridged", [False, True])
def test_line_search_compares_the_model_log_likelihood(tie_model, ridged, monkeypatch):
    """The log-likelihood handed to the line search is the model's, pair by pair, across row blocks."""
    monkeypatch.setattr(L, "_BLOCK_CELLS", 40)  # blocks of a few rows: the mirrored upper triangle across blocks
    rng = np.random.default_rng(11)
    X = rng.integers(0, 4, size=(9, 13)).astype(float)
    if ridged:
        X[:, 0] = 9.0  # never loses: the ridge is used
    wins, ties = _counts(X, np.ones(9))
    seen = []
    damp = L._damp

    def spy(step, loglik, x):
        seen.append((loglik, x.copy()))
        return damp(step, loglik, x)

    monkeypatch.setattr(L, "_damp", spy)
    _, _, lam, _ = L.fit_statistics(L.judge_statistics(X, np.ones(9)), tie_model=tie_model)
    assert (lam > 0) == ridged and seen
    loglik, x = seen[-1]
    for z in (x, x + rng.normal(size=x.size), rng.normal(size=x.size) * 3):
        if tie_model == "half":
            want = _half_loglik(z, wins, ties, lam)
        else:
            want = _davidson_loglik(z[:-1], np.exp(z[-1]), wins, ties, lam)
        assert loglik(z) == pytest.approx(want, rel=1e-10, abs=1e-9)


# --------------------------------------------------------------------------- bradley_terry_across
def _many_systems(seed, T=8, S=260, levels=30):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(T, S)).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X


def test_many_systems_davidson_solves_the_score_equations():
    X = _many_systems(1)
    wins, ties = _counts(X, np.ones(X.shape[0]))
    assert _beat_graph_connected(wins) and ties.sum() > 0  # Davidson's MLE exists
    s = B.bradley_terry_across(X, tie_model="davidson")
    nu = _assert_davidson_mle(s, wins, ties, _ridge(wins, ties))
    assert nu > 0
    # and it is not the half-win fit
    assert np.abs(_half_gradient(s, wins, ties, 0.0)).max() > 1e-3


def test_many_systems_with_weights_that_are_not_simple_fractions():
    X = _many_systems(2, T=4)
    w = np.array([1.0, np.sqrt(2.0), np.pi, 0.1])
    wins, ties = _counts(X, w)
    _assert_half_mle(B.bradley_terry_across(X, weights=w), wins, ties, _ridge(wins, ties))


def test_many_systems_with_an_unbeaten_system_use_the_ridge():
    X = _many_systems(3, T=4)
    X[:, 7] = 100.0
    wins, ties = _counts(X, np.ones(4))
    lam = _ridge(wins, ties)
    assert lam > 0
    _assert_half_mle(B.bradley_terry_across(X), wins, ties, lam)


def test_many_systems_weights_in_any_unit_give_the_same_bits():
    X = _many_systems(4, T=4)
    got = B.bradley_terry_across(X, weights=np.array([[1.0, 0, 2, 1], [3.0, 0, 6, 3], [5.0, 0, 10, 5]]))
    assert np.array_equal(got[0], got[1], equal_nan=True) and np.array_equal(got[0], got[2], equal_nan=True)
    wins, ties = _counts(X, [1.0, 0, 2, 1])
    _assert_half_mle(got[0], wins, ties, _ridge(wins, ties))


def test_many_systems_stack_fits_each_profile_as_alone():
    X = np.stack([_many_systems(5, T=3), _many_systems(6, T=3)])
    got = B.bradley_terry_across(X)
    for k in range(2):
        assert np.array_equal(got[k], B.bradley_terry_across(X[k]), equal_nan=True)  # bit for bit
        wins, ties = _counts(X[k], np.ones(3))
        _assert_half_mle(got[k], wins, ties, _ridge(wins, ties))


def _small(seed, T=8, S=6):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(T, S)).astype(float)
    X[rng.random(X.shape) < 0.15] = np.nan
    return X


@pytest.mark.parametrize("tie_model", ["half", "davidson"])
def test_few_systems_batches_and_weights_solve_the_score_equations(tie_model):
    X1, X2 = _small(7), _small(8)
    rows = np.array([[1.0, 2.0, 0.0, 1.0, 3.0, 1.0, 1.0, 2.0], [2.0, 1.0, 1.0, 0.0, 1.0, 3.0, 1.0, 1.0],
                     [1.0] * 8])
    cases = [
        (np.stack([X1, X2]), None, [(X1, np.ones(8)), (X2, np.ones(8))]),  # a stack of profiles
        (X1, rows, [(X1, r) for r in rows]),  # one profile, a stack of weight rows
        (np.stack([X1, X2]), rows[:2], [(X1, rows[0]), (X2, rows[1])]),  # one weight row per profile
        (X2, rows[0], [(X2, rows[0])]),  # one profile, one weight row
    ]
    for X, w, parts in cases:
        got = B.bradley_terry_across(X, weights=w, tie_model=tie_model)
        assert got.shape == ((6,) if X.ndim == 2 and (w is None or w.ndim == 1) else (len(parts), 6))
        got = got.reshape(len(parts), 6)
        for s, (Xk, wk) in zip(got, parts):
            wins, ties = _counts(Xk, wk)
            lam = _ridge(wins, ties)
            if tie_model == "half":
                _assert_half_mle(s, wins, ties, lam)
            else:
                assert _beat_graph_connected(wins) and ties.sum() > 0
                _assert_davidson_mle(s, wins, ties, lam)


# --------------------------------------------------------------------------- overflow-safe means
def _fraction_mean(col, w):
    num = sum(Fraction(float(x)) * Fraction(float(v)) for x, v in zip(col, w) if not np.isnan(x))
    den = sum(Fraction(float(v)) for x, v in zip(col, w) if not np.isnan(x))
    return float(num / den)


def test_mean_of_four_tasks_near_the_float64_limit():
    X = np.array([[1.5e308, 1.0], [1.5e308, 2.0], [1.5e308, 3.0], [1.5e308, np.nan]])  # the sum is 6e308
    np.testing.assert_array_equal(mean_across(X), [1.5e308, 2.0])
    np.testing.assert_array_equal(mean_pool(np.nan_to_num(X), (~np.isnan(X)).astype(int)), [1.5e308, 2.0])


def test_weighted_mean_beyond_the_float64_range_without_warnings():
    X = np.array([[1.5e308, 2.0, 1.5e308], [1e308, 3.0, -1.5e308]])
    w = np.array([1.0, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning reaches the user
        got = mean_across(X, weights=w)
        got2 = mean_across(X, weights=np.array([2.0, 2.0]))  # 2 * 1.5e308 overflows: inf, then inf - inf
    np.testing.assert_array_equal(got, [_fraction_mean(X[:, k], w) for k in range(3)])
    np.testing.assert_array_equal(got2, [_fraction_mean(X[:, k], [2.0, 2.0]) for k in range(3)])
    assert got[0] == 1.125e308 and got2[2] == 0.0


def test_each_system_is_scaled_by_its_own_largest_term():
    """A system whose terms cancel keeps the bits of a small remainder: its scale comes from its own largest term
    (3 * 2**1021), not from another system's 1.5e308, so (1 + 2**-48) / 8 stays exact."""
    a = 3.0 * 2.0**1021
    col = [a, a, a, -a, -a, -a, 1.0 + 2.0**-48, 0.0]
    X = np.array([col, [1.5e308] + [0.0] * 7]).T
    got = mean_across(X)
    np.testing.assert_array_equal(got, [_fraction_mean(X[:, k], np.ones(8)) for k in range(2)])
    assert got[0] == (1.0 + 2.0**-48) / 8


# --------------------------------------------------------------------------- streamed integer counts
def test_streamed_counts_of_a_task_with_more_instances_than_int16_holds():
    """40,000 instances in which the first system beats the second: a count past 32,767 must not wrap."""
    import engine

    K = 40_000
    v = np.zeros((2, 1, K))
    v[0] = 1.0
    v[1, 0, :3] = np.nan  # three instances without the second system
    s = engine.scores_from_array(v)
    for chunks in ({"instance": -1}, {"instance": K // 2}):  # one instance chunk (no sum) and two
        for level in ("two", "one"):
            got = engine.aggregate(s.chunk(chunks), rule="copeland", level=level).values
            assert got.ravel().tolist() == [1.0, -1.0], (chunks, level)


def test_streamed_level_one_totals_over_tasks_are_int64(monkeypatch):
    """Four tasks whose counts (2**30 each) fit int32 while their level-one total (2**32) does not.

    The instance counter is replaced by one that reports 2**30 wins of the first system over the second
    in every task (as many instances would); the pooled Copeland score must still see those wins."""
    import engine
    import engine.kernels.pairblock as P

    def counts(block, *, count_dtype=np.int64):
        Tc, _, S = block.shape
        out = np.zeros((Tc, 1, 2, S, S), dtype=count_dtype)
        out[:, 0, 0, 0, 1] = 2**30
        out[:, 0, 1] = 2**30
        return out

    monkeypatch.setattr(P, "chunk_counts", counts)
    v = np.zeros((2, 4, 3))
    v[0] = 1.0
    s = engine.scores_from_array(v).chunk({"task": 1, "instance": -1})
    assert engine.aggregate(s, rule="copeland", level="one").values.tolist() == [1.0, -1.0]
