"""Independent cross-check of votebench's majority rules against pref_voting (Holliday & Pacuit, MIT licence).

votebench ranks *systems* (candidates) by *tasks* (voters): a task ranks the systems by its scores
(higher is better; equal scores tie; a missing score leaves the system out of that task's ranking),
and a task of whole-number weight ``k`` counts as ``k`` voters with that ranking (pref_voting's
``rcounts``).  The profiles and pref_voting's answers on them (as a ``Profile`` of strict, complete
rankings or a ``ProfileWithTies``) are stored in ``tests/fixtures/prefvoting_cases.json.gz``; every
test below hands each stored profile to ``engine.rank_rules`` as a score table and compares the result with
the stored answers.  votebench's winner set is the systems with ``rank == 1``.

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

pref_voting is not imported here: it pins numba (and numpy) below the versions a plain install gets,
so it is not in the ``test`` extra.  ``tests/fixtures/make_prefvoting_fixtures.py`` draws the profiles
(seeded: 981 profiles, strict, tie-heavy, with missing scores, Condorcet cycles, odd and even numbers of
voters, edge cases and the two worked examples below) and computes pref_voting's answers in an
environment of its own (how: its docstring).  ``PREF_VOTING_VERSION`` records the version that made them;
the first test checks that the stored profiles are the script's and that the answers come from it.
"""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

import engine
from engine.kernels.kemeny import kemeny_consensus

#: the pref_voting release whose answers are stored (tests/fixtures/make_prefvoting_fixtures.py prints it)
PREF_VOTING_VERSION = "1.18.2"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STORED = FIXTURES / "prefvoting_cases.json.gz"


def load_cases() -> tuple[dict, list[dict]]:
    """The fixture's header (versions, seed) and its profiles, each with pref_voting's answers under ``pv``."""
    with gzip.open(STORED, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


META, CASES = load_cases()
BY_ID = {c["id"]: c for c in CASES}


# ---------------------------------------------------------------------------------------------
# one stored profile, as votebench sees it
# ---------------------------------------------------------------------------------------------
@dataclass
class Election:
    """A profile: ``X[t, s]`` oriented scores of task ``t`` (higher is better, ``NaN`` = missing),
    ``counts[t]`` its number of voters, ``divisor`` the scale of votebench's weights, ``hib`` the
    direction each task is stored in (a lower-is-better task holds ``-X[t]``); ``pv`` pref_voting's answers."""

    X: np.ndarray
    counts: list[int]
    divisor: int
    hib: list[bool]
    pv: dict

    @classmethod
    def of(cls, case: dict) -> Election:
        X = np.array([[np.nan if v is None else v for v in row] for row in case["X"]], dtype=np.float64)
        return cls(X, list(case["counts"]), case["divisor"], [bool(h) for h in case["hib"]], case["pv"])

    @property
    def n_systems(self) -> int:
        return self.X.shape[1]

    @property
    def missing(self) -> bool:
        return bool(np.isnan(self.X).any())

    @property
    def strict(self) -> bool:
        """Every task ranks every system, without ties."""
        return not self.missing and all(len(set(row)) == len(row) for row in self.X.tolist())

    @cached_property
    def table(self):
        """The score table as stored (built once per profile: it costs as much as a ranking)."""
        raw = np.where(np.array(self.hib)[:, None], self.X, -self.X)
        return engine.scores_from_array(raw.T, higher_is_better=self.hib)

    @cached_property
    def rankings(self):
        """The rules checked here in one ``engine.rank_rules`` request (one preparation per profile; each row is
        bitwise ``engine.rank`` of that rule alone: tests/rules/test_invariance.py checks it for every registered rule).
        With missing scores only the rules that take them without a policy (the pairwise ones) share the request."""
        weights = [c / self.divisor for c in self.counts]
        rules = [r for r in CHECKED_RULES if not self.missing or engine.get_rule(r).missing == "pairwise"]
        return engine.rank_rules(self.table, rules, weights=weights)

    def rank(self, rule: str):
        """The ranking of ``rule``: (scores, winner set)."""
        if rule in self.rankings["rule"].values:
            ds = self.rankings.sel(rule=rule)
        else:
            ds = engine.rank(self.table, rule=rule, weights=[c / self.divisor for c in self.counts])
        return ds["score"].values, set(np.flatnonzero(ds["rank"].values == 1).tolist())


#: the rules compared with pref_voting
CHECKED_RULES = ("copeland", "condorcet", "minimax", "baldwin", "kemeny")

ELECTIONS = {c["id"]: Election.of(c) for c in CASES}


def check_each(label: str, check: Callable[[Election], None], keep: Callable[[Election], bool] = lambda e: True,
               at_least: int = 1) -> None:
    """Run ``check`` on every stored profile ``keep`` selects; report every profile that fails (by id)."""
    chosen = {cid: e for cid, e in ELECTIONS.items() if keep(e)}
    assert len(chosen) >= at_least, f"{label}: {len(chosen)} stored profiles, expected at least {at_least}"
    failures = []
    for cid, e in chosen.items():
        try:
            check(e)
        except AssertionError as exc:
            failures.append(f"{cid}: {' '.join(str(exc).split())[:300]}")
    assert not failures, f"{label}: {len(failures)} of {len(chosen)} profiles disagree with pref_voting:\n" + "\n".join(
        failures[:8])


# ---------------------------------------------------------------------------------------------
# the fixtures themselves
# ---------------------------------------------------------------------------------------------
def generator():
    """tests/fixtures/make_prefvoting_fixtures.py as a module (it imports pref_voting only to compute answers)."""
    spec = importlib.util.spec_from_file_location("make_prefvoting_fixtures", FIXTURES / "make_prefvoting_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_stored_profiles_are_the_scripts_and_pref_voting_answered_them():
    """Not stale: the answers come from the recorded pref_voting release, the inputs are what the script draws now."""
    assert META["pref_voting"] == PREF_VOTING_VERSION, (
        f"the fixtures were made by pref_voting {META['pref_voting']}, this file records {PREF_VOTING_VERSION}")
    gen = generator()
    assert META["seed"] == gen.SEED and META["n_cases"] == len(CASES)
    assert [{k: v for k, v in c.items() if k != "pv"} for c in CASES] == gen.make_cases(), (
        "the stored profiles differ from make_prefvoting_fixtures.make_cases(): regenerate the fixtures")
    assert all("pv" in c for c in CASES)


def test_the_stored_profiles_cover_ties_cycles_parity_and_sizes():
    """The classes the random profiles are meant to cover, counted on the profiles themselves (not on their labels)."""
    es = list(ELECTIONS.values())
    total = [sum(e.counts) for e in es]
    assert sum(e.strict for e in es) >= 300
    assert sum(not e.strict and not e.missing for e in es) >= 400  # complete, with ties
    assert sum(e.missing for e in es) >= 120
    assert sum(e.pv["condorcet_winner"] is None for e in es) >= 300  # cycles and majority ties
    assert sum(e.strict and e.pv["condorcet_winner"] is None for e in es) >= 100  # cycles of strict rankings
    assert sum(e.pv["condorcet_winner"] is not None for e in es) >= 300
    assert sum(len(e.pv["copeland"]) > 1 for e in es) >= 200
    assert sum(t % 2 == 0 for t in total) >= 400 and sum(t % 2 == 1 for t in total) >= 400  # even and odd voters
    assert sum(0 in itertools.chain.from_iterable(e.pv["margins"][i][:i] for i in range(e.n_systems)) for e in es) >= 400
    assert {e.n_systems for e in es} == set(range(2, 8))
    assert {e.divisor for e in es} == {1, 2, 3, 6} and any(not all(e.hib) for e in es)


def as_vector(values: list) -> np.ndarray:
    return np.array(values, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# Copeland, Condorcet, Minimax
# ---------------------------------------------------------------------------------------------
def test_copeland_matches_pref_voting():
    def check(e):
        score, winners = e.rank("copeland")
        np.testing.assert_array_equal(score, as_vector(e.pv["copeland_scores"]))
        assert winners == set(e.pv["copeland"])

    check_each("copeland", check, at_least=900)


def test_condorcet_winner_matches_pref_voting():
    def check(e):
        score, winners = e.rank("condorcet")
        cw = e.pv["condorcet_winner"]
        assert set(np.flatnonzero(score == 1).tolist()) == (set() if cw is None else {cw})
        # without a Condorcet winner every system scores 0 and shares rank 1: pref_voting's condorcet method
        # returns all candidates then
        assert winners == set(e.pv["condorcet"])

    check_each("condorcet", check, at_least=900)


def test_minimax_matches_pref_voting_winning_votes():
    """votebench's Minimax is the winning-votes variant (Vote'n'Rank's s(B, m)) on every profile."""

    def check(e):
        score, winners = e.rank("minimax")
        np.testing.assert_array_equal(score, as_vector(e.pv["minimax_winning"]) / e.divisor)
        assert winners == set(e.pv["minimax_support"])
        if e.strict:  # winning votes and margins elect the same systems on linear profiles
            assert winners == set(e.pv["minimax_linear"])

    check_each("minimax", check, at_least=900)
    # the two measures of a defeat do elect different systems on some stored profiles with ties
    assert sum(set(e.pv["minimax_support"]) != set(e.pv["minimax"]) for e in ELECTIONS.values()) >= 20


def test_minimax_differs_from_margins_with_ties():
    """A worked example where the two measures of a defeat elect different systems.

    Five tasks rank a, b, c (scores, higher is better): c > a = b twice, b > c > a once, a > b > c twice.
    a beats b 2:1 (two tasks tie them), b beats c 3:2, c beats a 3:2: a cycle with margins 1, 1, 1, so
    margin-based Minimax ties all three.  Winning votes: a's worst defeat has 3 votes (c), b's has 2 (a),
    c's has 3 (b), so b alone wins in votebench and in pref_voting's minimax_support.
    """
    e = ELECTIONS["worked-minimax"]
    np.testing.assert_array_equal(e.X, [[0, 0, 1], [0, 0, 1], [0, 2, 1], [2, 1, 0], [2, 1, 0]])
    assert e.counts == [1] * 5 and e.divisor == 1
    score, winners = e.rank("minimax")
    np.testing.assert_array_equal(score, [-3.0, -2.0, -3.0])
    assert e.pv["margins"] == [[0, 1, -1], [-1, 0, 1], [1, -1, 0]]
    assert winners == {1} == set(e.pv["minimax_support"])
    assert set(e.pv["minimax"]) == {0, 1, 2}


# ---------------------------------------------------------------------------------------------
# Baldwin
# ---------------------------------------------------------------------------------------------
def baldwin_rounds(explained: dict, n: int) -> tuple[set[int], np.ndarray]:
    """pref_voting's Baldwin winners and each candidate's elimination round (winners: ``n``, votebench's scale)."""
    winners = set(explained["winners"])
    rounds = np.full(n, float(n))
    for k, eliminated in enumerate(explained["eliminated"]):
        for c in eliminated:
            if c not in winners:  # the last entry lists the tied winners when all remaining systems tie
                rounds[c] = k
    return winners, rounds


def test_baldwin_matches_pref_voting_on_strict_profiles():
    def check(e):
        score, winners = e.rank("baldwin")
        assert winners == set(e.pv["baldwin"])
        expected_winners, rounds = baldwin_rounds(e.pv["baldwin_explained"], e.n_systems)
        assert winners == expected_winners
        np.testing.assert_array_equal(score, rounds)

    check_each("baldwin (strict)", check, keep=lambda e: e.strict, at_least=300)


def test_baldwin_with_ties_is_baldwin_of_the_tie_breaking_expansion():
    """votebench's half points for tied systems = pref_voting's Baldwin with each task split over its tie-breakings."""

    def check(e):
        score, winners = e.rank("baldwin")
        expected_winners, rounds = baldwin_rounds(e.pv["baldwin_expansion"], e.n_systems)
        assert winners == expected_winners
        np.testing.assert_array_equal(score, rounds)

    check_each("baldwin (ties)", check, keep=lambda e: "baldwin_expansion" in e.pv and not e.strict, at_least=300)


# ---------------------------------------------------------------------------------------------
# Kemeny-Young
# ---------------------------------------------------------------------------------------------
def optimal_orders(M: list[list[int]], n: int) -> list[tuple[int, ...]]:
    """Every order maximising the sum of pref_voting's margins ``M`` of the pairs it orders (plain enumeration)."""
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


def check_kemeny(e: Election, score: np.ndarray, winners: set[int]) -> None:
    n = e.n_systems
    orders = optimal_orders(e.pv["margins"], n)
    tops = set(e.pv["kemeny_young"])
    assert tops == {o[0] for o in orders}  # the enumeration above agrees with pref_voting's own
    np.testing.assert_allclose(score, block_scores(orders, n), rtol=0, atol=1e-12)
    # votebench's top group holds every Kemeny-Young winner; it is exactly them when the winner is unique
    assert tops <= winners
    if len(tops) == 1:
        assert winners == tops
    if e.strict:  # Kendall-distance optimum (pref_voting's own enumeration) = margin optimum
        assert sorted(map(list, orders)) == e.pv["kemeny_young_rankings"]


def test_kemeny_matches_pref_voting():
    def check(e):
        check_kemeny(e, *e.rank("kemeny"))

    check_each("kemeny", check, keep=lambda e: "kemeny_young" in e.pv and not e.missing, at_least=800)
    assert sum(len(optimal_orders(e.pv["margins"], e.n_systems)) > 1 for e in ELECTIONS.values()
               if "kemeny_young" in e.pv) >= 300  # several optimal orders: the tied groups are exercised


def test_kemeny_kernel_with_missing_scores_matches_pref_voting():
    """Missing pairs cost nothing in votebench's Kemeny cost: pref_voting's truncated rankings (strict preference)."""

    def check(e):
        weights = np.array(e.counts, dtype=np.float64) / e.divisor
        for method in ("dp", "milp"):
            score = kemeny_consensus(e.X, weights=weights, method=method)
            check_kemeny(e, score, set(np.flatnonzero(score == score.max()).tolist()))

    check_each("kemeny (missing)", check, keep=lambda e: e.missing and e.n_systems <= 5, at_least=100)


def test_kemeny_top_group_can_exceed_the_kemeny_young_winners():
    """The documented difference, on a worked example: a system that no optimal order puts first shares the top group.

    Tasks (best first, with counts): a > b > c (1), c > a > b (1).  Margins: a beats b by 2, a and c tie,
    b and c tie.  Optimal orders (sum of margins 2): a b c, a c b, c a b.  pref_voting's Kemeny-Young
    winners are a and c; c swaps with a and with b, so votebench ties all three (mean position 1).
    """
    e = ELECTIONS["worked-kemeny"]
    np.testing.assert_array_equal(e.X, [[3, 2, 1], [2, 1, 3]])
    assert e.counts == [1, 1] and e.divisor == 1
    score, winners = e.rank("kemeny")
    assert sorted(optimal_orders(e.pv["margins"], 3)) == [(0, 1, 2), (0, 2, 1), (2, 0, 1)]
    assert set(e.pv["kemeny_young"]) == {0, 2}
    assert winners == {0, 1, 2}
    np.testing.assert_array_equal(score, [1.0, 1.0, 1.0])
