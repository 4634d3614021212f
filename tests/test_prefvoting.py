"""Independent cross-check of votebench's majority rules against pref_voting (Holliday & Pacuit, MIT licence).

votebench ranks *systems* (candidates) by *tasks* (voters): a task ranks the systems by its scores
(higher is better; equal scores tie; a missing score leaves the system out of that task's ranking),
and a task of whole-number weight ``k`` counts as ``k`` voters with that ranking (pref_voting's
``rcounts``).  Every test below builds one random profile, hands it to ``engine.rank`` as a score
table and to pref_voting as a ``Profile`` (strict, complete rankings) or ``ProfileWithTies``, and
compares the results.  votebench's winner set is the systems with ``rank == 1``.

Conventions, and where they differ (each difference is tested on a worked example, not skipped):

* **Winner sets.**  pref_voting returns the set of (tied) winners; so does ``rank == 1``.
* **Missing scores.**  votebench ignores a pair in a task where either score is missing; that is
  pref_voting's default *strict preference* of a ``ProfileWithTies`` (a ranked candidate is *not*
  preferred to an unranked one; ``use_extended_strict_preference`` would change that).
* **Copeland.**  Both score ``wins - losses`` of the majority relation (margin > 0), so the scores
  themselves agree.
* **Condorcet.**  votebench scores 1 for the Condorcet winner and 0 otherwise, so without a
  Condorcet winner every system has rank 1: the same set as pref_voting's ``condorcet`` method,
  which then returns all candidates (``Profile.condorcet_winner()`` returns ``None``).
* **Minimax.**  votebench follows Vote'n'Rank: a system's worst defeat is measured by the *winning
  votes* (support) of the system that beats it, ``s(B, m)``; pref_voting's ``minimax`` measures it
  by the *margin*.  The two agree on strict, complete profiles (the support is then
  ``(voters + margin) / 2``), and differ when tasks tie systems or miss scores: there votebench
  equals pref_voting's ``minimax_support`` / ``minimax_scores(score_method="winning")``.
* **Baldwin.**  pref_voting's Baldwin takes strict (linear) profiles only; both remove every system
  with the lowest Borda score in each round.  On strict profiles the winners and the elimination
  rounds must agree.  votebench extends Baldwin to ties with half points (Borda points averaged
  over the positions a tie group occupies), which equals Baldwin on the profile in which every
  task is replaced by all the strict rankings that break its ties, with equal shares of its weight:
  that is how tie profiles are checked against pref_voting's Baldwin.
* **Kemeny-Young.**  pref_voting's winners are the candidates on top of *some* optimal order.
  votebench ties two systems when one optimal order puts ``i`` before ``j`` and another ``j``
  before ``i`` (and by transitivity), scoring each tied group by its mean position.  So the top
  group contains every pref_voting winner, and can be larger: it also holds a system that is never
  first but swaps with one that is.  The tests therefore compare the whole group structure with the
  one derived from *all* optimal orders (found by enumeration over pref_voting's margins, and for
  strict profiles also by ``kemeny_young_rankings``, which uses Kendall distances).  A pair tied in
  a task costs half its weight either way in votebench, which leaves the optimal orders those that
  maximise the sum of margins (pref_voting's "marginal" algorithm).

pref_voting is imported on first use (a module fixture), not at collection: it loads numba and
ortools (about 1 s), and its Baldwin compiles numba functions on its first call (about 3 s).  A
missing pref_voting fails these tests: the ``test`` extra installs it, and CI must not skip them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import require_module
from hypothesis import event, given, settings
from hypothesis import strategies as st

import engine
from engine.kernels.kemeny import kemeny_consensus

#: divisors of the task weights: votebench gets ``counts / L``, pref_voting the whole counts (scale-free rules)
DIVISORS = (1, 2, 3, 6)


class _PrefVoting(SimpleNamespace):
    def __repr__(self) -> str:  # short, in hypothesis's report of a failing example
        return "pref_voting"


@pytest.fixture(scope="module")
def pv():
    """The pref_voting functions used below (imported once per module; a missing package fails the test)."""
    profiles = require_module("pref_voting.profiles")
    ties = require_module("pref_voting.profiles_with_ties")
    c1 = require_module("pref_voting.c1_methods")
    margin = require_module("pref_voting.margin_based_methods")
    iterative = require_module("pref_voting.iterative_methods")
    other = require_module("pref_voting.other_methods")
    return _PrefVoting(
        Profile=profiles.Profile,
        ProfileWithTies=ties.ProfileWithTies,
        copeland=c1.copeland,
        condorcet=c1.condorcet,
        minimax=margin.minimax,
        minimax_support=margin.minimax_support,
        minimax_scores=margin.minimax_scores,
        baldwin=iterative.baldwin,
        baldwin_with_explanation=iterative.baldwin_with_explanation,
        kemeny_young=other.kemeny_young,
        kemeny_young_rankings=other.kemeny_young_rankings,
    )


# ---------------------------------------------------------------------------------------------
# one profile, two representations
# ---------------------------------------------------------------------------------------------
@dataclass
class Election:
    """A profile: ``X[t, s]`` oriented scores of task ``t`` (higher is better, ``NaN`` = missing),
    ``counts[t]`` its number of voters, ``divisor`` the scale of votebench's weights, ``hib`` the
    direction each task is stored in (a lower-is-better task holds ``-X[t]``)."""

    X: np.ndarray
    counts: list[int]
    divisor: int
    hib: list[bool]

    @property
    def n_systems(self) -> int:
        return self.X.shape[1]

    @property
    def strict(self) -> bool:
        """Every task ranks every system, without ties."""
        return not np.isnan(self.X).any() and all(len(set(row)) == len(row) for row in self.X.tolist())

    def rank(self, rule: str):
        """``engine.rank`` of the score table: (scores, winner set)."""
        raw = np.where(np.array(self.hib)[:, None], self.X, -self.X)
        scores = engine.scores_from_array(raw.T, higher_is_better=self.hib)
        weights = [c / self.divisor for c in self.counts]
        ds = engine.rank(scores, rule=rule, weights=weights)
        return ds["score"].values, set(np.flatnonzero(ds["rank"].values == 1).tolist())

    def weak_orders(self) -> list[dict[int, int]]:
        """Each task as pref_voting's ranking map ``{system: rank}`` (1 = best, equal ranks tie, missing left out)."""
        out = []
        for row in self.X.tolist():
            levels = sorted({v for v in row if not math.isnan(v)}, reverse=True)
            out.append({s: levels.index(v) + 1 for s, v in enumerate(row) if not math.isnan(v)})
        return out

    def with_ties(self, pv):
        return pv.ProfileWithTies(self.weak_orders(), rcounts=list(self.counts), candidates=list(range(self.n_systems)))

    def linear(self, pv):
        """pref_voting ``Profile`` of a strict, complete profile (rankings best first)."""
        assert self.strict
        rankings = [[int(s) for s in np.argsort(-row, kind="stable")] for row in self.X]
        return pv.Profile(rankings, rcounts=list(self.counts))

    def tie_breaking_expansion(self, pv):
        """Every task replaced by all the strict rankings that break its ties, sharing its weight equally
        (the common denominator of the shares is cleared, so the counts stay whole numbers)."""
        assert not np.isnan(self.X).any()
        per_task = []
        for row in self.X.tolist():
            levels = sorted(set(row), reverse=True)
            groups = [[s for s, v in enumerate(row) if v == lv] for lv in levels]
            per_task.append([[s for part in p for s in part] for p in itertools.product(*map(itertools.permutations, groups))])
        lcm = math.lcm(*(len(ext) for ext in per_task))
        rankings, counts = [], []
        for ext, c in zip(per_task, self.counts):
            for order in ext:
                rankings.append(list(order))
                counts.append(c * lcm // len(ext))
        return pv.Profile(rankings, rcounts=counts)


@st.composite
def elections(draw, *, strict=False, missing=False, min_s=2, max_s=6, max_t=7, levels=3) -> Election:
    """Random profiles: strict rankings (``strict``), or scores from ``levels`` values (many ties), with
    holes when ``missing``; whole-number counts 1-4 and a weight divisor; random task directions."""
    n_s = draw(st.integers(min_s, max_s))
    n_t = draw(st.integers(1, max_t))
    if strict:
        perms = [draw(st.permutations(range(n_s))) for _ in range(n_t)]
        X = np.array([[n_s - list(p).index(s) for s in range(n_s)] for p in perms], dtype=np.float64)
    else:
        cells = st.lists(st.integers(0, levels - 1), min_size=n_s * n_t, max_size=n_s * n_t)
        X = np.array(draw(cells), dtype=np.float64).reshape(n_t, n_s)
        if missing:
            holes = np.array(draw(st.lists(st.booleans(), min_size=X.size, max_size=X.size))).reshape(X.shape)
            holes &= np.array(draw(st.lists(st.booleans(), min_size=X.size, max_size=X.size))).reshape(X.shape)
            X[holes] = np.nan
            for t in range(n_t):  # a task with no score at all is bad input
                if np.isnan(X[t]).all():
                    X[t, draw(st.integers(0, n_s - 1))] = 0.0
            for s in range(n_s):  # a system with no score at all is not ranked by votebench
                if np.isnan(X[:, s]).all():
                    X[draw(st.integers(0, n_t - 1)), s] = 1.0
    counts = draw(st.lists(st.integers(1, 4), min_size=n_t, max_size=n_t))
    divisor = draw(st.sampled_from(DIVISORS))
    hib = draw(st.lists(st.booleans(), min_size=n_t, max_size=n_t))
    return Election(X, counts, divisor, hib)


any_elections = st.one_of(elections(strict=True), elections(), elections(missing=True))


def as_vector(scores: dict, n: int) -> np.ndarray:
    return np.array([float(scores[c]) for c in range(n)])


# ---------------------------------------------------------------------------------------------
# Copeland, Condorcet, Minimax
# ---------------------------------------------------------------------------------------------
@settings(max_examples=120)
@given(e=any_elections)
def test_copeland_matches_pref_voting(pv, e):
    score, winners = e.rank("copeland")
    P = e.with_ties(pv)
    np.testing.assert_array_equal(score, as_vector(P.copeland_scores(), e.n_systems))
    assert winners == set(pv.copeland(P))


@settings(max_examples=120)
@given(e=any_elections)
def test_condorcet_winner_matches_pref_voting(pv, e):
    score, winners = e.rank("condorcet")
    P = e.with_ties(pv)
    cw = P.condorcet_winner()
    event("Condorcet winner" if cw is not None else "no Condorcet winner")
    assert set(np.flatnonzero(score == 1).tolist()) == (set() if cw is None else {cw})
    # without a Condorcet winner every system scores 0 and shares rank 1: pref_voting's condorcet method
    # returns all candidates then
    assert winners == set(pv.condorcet(P))


@settings(max_examples=120)
@given(e=any_elections)
def test_minimax_matches_pref_voting_winning_votes(pv, e):
    """votebench's Minimax is the winning-votes variant (Vote'n'Rank's s(B, m)) on every profile."""
    score, winners = e.rank("minimax")
    P = e.with_ties(pv)
    expected = as_vector(pv.minimax_scores(P, score_method="winning"), e.n_systems) / e.divisor
    np.testing.assert_array_equal(score, expected)
    assert winners == set(pv.minimax_support(P))
    event("strict" if e.strict else "margins elect others" if winners != set(pv.minimax(P)) else "margins agree")
    if e.strict:  # winning votes and margins elect the same systems on linear profiles
        assert winners == set(pv.minimax(e.linear(pv)))


def test_minimax_differs_from_margins_with_ties(pv):
    """A worked example where the two measures of a defeat elect different systems.

    Five tasks rank a, b, c (scores, higher is better): c > a = b twice, b > c > a once, a > b > c twice.
    a beats b 2:1 (two tasks tie them), b beats c 3:2, c beats a 3:2: a cycle with margins 1, 1, 1, so
    margin-based Minimax ties all three.  Winning votes: a's worst defeat has 3 votes (c), b's has 2 (a),
    c's has 3 (b), so b alone wins in votebench and in pref_voting's minimax_support.
    """
    X = np.array([[0, 0, 1], [0, 0, 1], [0, 2, 1], [2, 1, 0], [2, 1, 0]], dtype=np.float64)
    e = Election(X, [1] * 5, 1, [True] * 5)
    score, winners = e.rank("minimax")
    P = e.with_ties(pv)
    np.testing.assert_array_equal(score, [-3.0, -2.0, -3.0])
    assert winners == {1} == set(pv.minimax_support(P))
    assert set(pv.minimax(P)) == {0, 1, 2}


# ---------------------------------------------------------------------------------------------
# Baldwin
# ---------------------------------------------------------------------------------------------
def baldwin_rounds(pv, P, n: int) -> tuple[set[int], np.ndarray]:
    """pref_voting's Baldwin winners and each candidate's elimination round (winners: ``n``, votebench's scale)."""
    winners, explanation = pv.baldwin_with_explanation(P)
    rounds = np.full(n, float(n))
    for k, (eliminated, _borda) in enumerate(explanation):
        for c in eliminated:
            if c not in winners:  # the last entry lists the tied winners when all remaining systems tie
                rounds[int(c)] = k
    return set(winners), rounds


@settings(max_examples=100)
@given(e=elections(strict=True, max_s=7))
def test_baldwin_matches_pref_voting_on_strict_profiles(pv, e):
    score, winners = e.rank("baldwin")
    P = e.linear(pv)
    event(f"{len(winners)} winner(s)")
    assert winners == set(pv.baldwin(P))
    expected_winners, rounds = baldwin_rounds(pv, P, e.n_systems)
    assert winners == expected_winners
    np.testing.assert_array_equal(score, rounds)


@settings(max_examples=60)
@given(e=elections(max_s=5, max_t=4))
def test_baldwin_with_ties_is_baldwin_of_the_tie_breaking_expansion(pv, e):
    """votebench's half points for tied systems = pref_voting's Baldwin with each task split over its tie-breakings."""
    score, winners = e.rank("baldwin")
    event("ties" if not e.strict else "strict")
    expected_winners, rounds = baldwin_rounds(pv, e.tie_breaking_expansion(pv), e.n_systems)
    assert winners == expected_winners
    np.testing.assert_array_equal(score, rounds)


# ---------------------------------------------------------------------------------------------
# Kemeny-Young
# ---------------------------------------------------------------------------------------------
def optimal_orders(P, n: int) -> list[tuple[int, ...]]:
    """Every order maximising the sum of pref_voting's margins of the pairs it orders (plain enumeration)."""
    M = [[P.margin(i, j) for j in range(n)] for i in range(n)]
    value = {o: sum(M[o[a]][o[b]] for a in range(n) for b in range(a + 1, n)) for o in itertools.permutations(range(n))}
    best = max(value.values())
    return [o for o, v in value.items() if v == best]


def block_scores(orders: list[tuple[int, ...]], n: int) -> np.ndarray:
    """votebench's documented Kemeny scores from all optimal orders: systems ordered both ways by two optimal
    orders are tied (transitively); a group scores ``n - 1 -`` its mean position."""
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    pos = [{s: p for p, s in enumerate(o)} for o in orders]
    for i, j in itertools.combinations(range(n), 2):
        if len({p[i] < p[j] for p in pos}) == 2:
            parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for s in range(n):
        groups.setdefault(find(s), []).append(s)
    out = np.empty(n)
    for members in groups.values():
        places = sorted(pos[0][s] for s in members)
        assert places == list(range(places[0], places[0] + len(places))), "tied group not contiguous"
        out[members] = n - 1 - sum(places) / len(places)
    return out


def check_kemeny(pv, P, score: np.ndarray, winners: set[int], n: int) -> None:
    orders = optimal_orders(P, n)
    tops = set(pv.kemeny_young(P))
    event(f"{len(orders) > 1 and 'several' or 'one'} optimal order(s); top group {'>' if winners > tops else '='} winners")
    assert tops == {o[0] for o in orders}  # the enumeration above agrees with pref_voting's own
    np.testing.assert_allclose(score, block_scores(orders, n), rtol=0, atol=1e-12)
    # votebench's top group holds every Kemeny-Young winner; it is exactly them when the winner is unique
    assert tops <= winners
    if len(tops) == 1:
        assert winners == tops


@settings(max_examples=80)
@given(e=st.one_of(elections(strict=True), elections()))
def test_kemeny_matches_pref_voting(pv, e):
    score, winners = e.rank("kemeny")
    P = e.with_ties(pv)
    check_kemeny(pv, P, score, winners, e.n_systems)
    if e.strict:  # Kendall-distance optimum (pref_voting's own enumeration) = margin optimum
        orders, _ = pv.kemeny_young_rankings(e.linear(pv))
        assert sorted(map(tuple, orders)) == sorted(optimal_orders(P, e.n_systems))


@settings(max_examples=40)
@given(e=elections(missing=True, max_s=5), method=st.sampled_from(["dp", "milp"]))
def test_kemeny_kernel_with_missing_scores_matches_pref_voting(pv, e, method):
    """Missing pairs cost nothing in votebench's Kemeny cost: pref_voting's truncated rankings (strict preference)."""
    weights = np.array(e.counts, dtype=np.float64) / e.divisor
    score = kemeny_consensus(e.X, weights=weights, method=method)
    winners = set(np.flatnonzero(score == score.max()).tolist())
    check_kemeny(pv, e.with_ties(pv), score, winners, e.n_systems)


def test_kemeny_top_group_can_exceed_the_kemeny_young_winners(pv):
    """The documented difference, on a worked example: a system that no optimal order puts first shares the top group.

    Tasks (best first, with counts): a > b > c (1), c > a > b (1).  Margins: a beats b by 2, a and c tie,
    b and c tie.  Optimal orders (sum of margins 2): a b c, a c b, c a b.  pref_voting's Kemeny-Young
    winners are a and c; c swaps with a and with b, so votebench ties all three (mean position 1).
    """
    X = np.array([[3, 2, 1], [2, 1, 3]], dtype=np.float64)
    e = Election(X, [1, 1], 1, [True, True])
    score, winners = e.rank("kemeny")
    P = e.with_ties(pv)
    assert sorted(optimal_orders(P, 3)) == [(0, 1, 2), (0, 2, 1), (2, 0, 1)]
    assert set(pv.kemeny_young(P)) == {0, 2}
    assert winners == {0, 1, 2}
    np.testing.assert_array_equal(score, [1.0, 1.0, 1.0])
