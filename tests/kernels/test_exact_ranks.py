"""Rankings equal the rankings of the exact rational scores (issue: scores equal in exact arithmetic tie).

Every rule that is defined with rational operations only is recomputed here from its definition in
exact arithmetic (``fractions.Fraction``: a float input is the binary rational it holds; simple
weights such as 1/3 are the fractions they stand for), with plain loops that share no code with
``engine``.  ``engine.rank`` must give exactly the competition ranks of those exact scores, on inputs
built to contain many exact ties, including ties between different sums of different terms
(1/4 + 3/4 = 1/3 + 2/3), weights such as 1/3 and 1/|group|, and missing scores for the pairwise rules.
Irrational rules (geometric mean, TOPSIS, VIKOR, Gaussian PROMETHEE) and Kemeny and the random judge
are covered by tests/rules/test_invariance.py and tests/kernels/test_prefvoting.py instead.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine

VALUES = (0.125, 0.25, 1 / 3, 0.5, 2 / 3, 0.75, 1.0)
WEIGHTS = {"whole": (F(1), F(2), F(3)), "fraction": (F(1, 3), F(1, 2), F(2, 3), F(1, 4), F(1))}


def fr(x: float):
    return None if math.isnan(x) else F(float(x))


# ------------------------------------------------------------------------------------------ definitions
def _present(col):
    return [i for i, v in enumerate(col) if v is not None]


def borda_pts(col, alive=None):
    """#present (alive) systems strictly beaten + 1/2 #others tied, per system of one task (None if absent)."""
    idx = [i for i in _present(col) if alive is None or i in alive]
    out = [None] * len(col)
    for i in idx:
        out[i] = sum(F(1) for j in idx if col[j] < col[i]) + F(1, 2) * sum(1 for j in idx if j != i and col[j] == col[i])
    return out


def positional(col, c):
    """Points of positions (c[0] = best) shared equally by tied systems."""
    idx = sorted(_present(col), key=lambda i: -col[i])
    out = [None] * len(col)
    pos = 0
    while pos < len(idx):
        group = [i for i in idx if col[i] == col[idx[pos]]]
        share = sum(c[pos : pos + len(group)], F(0)) / len(group)
        for i in group:
            out[i] = share
        pos += len(group)
    return out


def wins(X, w):
    T, S = len(X), len(X[0])
    W = [[F(0)] * S for _ in range(S)]
    D = [[F(0)] * S for _ in range(S)]
    for t in range(T):
        for i in range(S):
            for j in range(S):
                if X[t][i] is not None and X[t][j] is not None:
                    D[i][j] += w[t]
                    if X[t][i] > X[t][j]:
                        W[i][j] += w[t]
    return W, D


def present_systems(X):
    return [i for i in range(len(X[0])) if any(X[t][i] is not None for t in range(len(X)))]


def ref_scores(rule, X, w, opts):
    T, S = len(X), len(X[0])
    sysp = present_systems(X)
    n = len(sysp)
    if rule == "mean":
        return [sum(w[t] * X[t][i] for t in range(T)) / sum(w) for i in range(S)]
    if rule == "borda":
        return [sum(w[t] * borda_pts(X[t])[i] for t in range(T)) for i in range(S)]
    if rule in ("plurality", "dowdall", "scoring"):
        if rule == "plurality":
            c = [F(1)] + [F(0)] * (S - 1)
        elif rule == "dowdall":
            c = [F(1, k) for k in range(1, S + 1)]
        else:
            c = [F(v) for v in opts["vector"]]
        out = [F(0)] * S
        for t in range(T):
            p = positional(X[t], c[: len(_present(X[t]))])
            for i in range(S):
                out[i] += w[t] * p[i]
        return out
    if rule == "average_rank":
        return [-sum(w[t] * (S - borda_pts(X[t])[i]) for t in range(T)) / sum(w) for i in range(S)]
    if rule == "median":
        out = []
        for i in range(S):
            vals = sorted(v for t in range(T) for v in [X[t][i]] * int(w[t]))
            m = len(vals)
            out.append((vals[(m - 1) // 2] + vals[m // 2]) / 2)
        return out
    if rule == "optimality_gap":
        g = F(float(opts.get("gamma", 0.95)))
        return [-sum(w[t] * max(g - X[t][i], F(0)) for t in range(T)) / sum(w) for i in range(S)]
    W, D = wins(X, w)
    if rule == "copeland":
        return [sum((W[i][j] > W[j][i]) - (W[i][j] < W[j][i]) for j in sysp if j != i) if i in sysp else None
                for i in range(S)]
    if rule == "minimax":
        return [-max([W[b][m] if W[b][m] > W[m][b] else F(0) for b in sysp if b != m], default=F(0)) if m in sysp else None
                for m in range(S)]
    if rule == "condorcet":
        return [F(int(all(W[i][j] > W[j][i] for j in sysp if j != i))) if i in sysp else None for i in range(S)]
    if rule == "success_rate":
        return [sum((W[i][j] / D[i][j] if D[i][j] > 0 else F(0)) for j in sysp if j != i) / max(n - 1, 1)
                if i in sysp else None for i in range(S)]
    if rule == "pavao_copeland":
        return [sum((F(1) if W[i][j] > W[j][i] else F(1, 2) if W[i][j] == W[j][i] else F(0)) for j in sysp if j != i)
                / max(n - 1, 1) if i in sysp else None for i in range(S)]
    if rule == "relative_difference":
        out = []
        for i in range(S):
            if i not in sysp:
                out.append(None)
                continue
            total = F(0)
            for j in sysp:
                if j == i or D[i][j] == 0:
                    continue
                num = F(0)
                for t in range(T):
                    a, b = X[t][i], X[t][j]
                    if a is not None and b is not None and a + b > 0:
                        num += w[t] * (a - b) / (a + b)
                total += num / D[i][j]
            out.append(total / max(n - 1, 1))
        return out
    if rule == "baldwin":
        alive = set(range(S))
        score = [None] * S
        rnd = 0
        while len(alive) > 1:
            b = {i: sum(w[t] * borda_pts(X[t], alive)[i] for t in range(T)) for i in alive}
            lo = min(b.values())
            if lo == max(b.values()):
                break
            for i in [i for i in alive if b[i] == lo]:
                score[i] = F(rnd)
                alive.discard(i)
            rnd += 1
        for i in alive:
            score[i] = F(S)
        return score
    if rule == "threshold":
        H = []
        for m in range(S):
            h = [F(0)] * S
            for t in range(T):
                col = X[t]
                order = sorted(range(S), key=lambda i: col[i])  # ascending: bottom first
                ties = [i for i in range(S) if col[i] == col[m]]
                first = min(order.index(i) for i in ties)
                for q in range(first, first + len(ties)):
                    h[q] += w[t] / len(ties)
            H.append(tuple(h[: max(S - 1, 1)]))
        return [F(sum(1 for o in range(S) if H[m] < H[o])) for m in range(S)]  # systems beaten (fewer bottoms)
    if rule == "promethee2":
        pref = opts.get("preference", "usual")
        q = None if opts.get("q") is None else F(float(opts["q"]))
        p = None if opts.get("p") is None else F(float(opts["p"]))

        def P(d, rng):
            if pref == "usual":
                return F(int(d > 0))
            if pref == "quasi":
                return F(int(d > q))
            if pref == "level":
                return F(1) if d > p else F(1, 2) if d > q else F(0)
            if pref == "linear":  # V-shape, p = range by default
                pp = rng if p is None else p
                return F(int(d > 0)) if pp == 0 else (F(0) if d <= 0 else min(d / pp, F(1)))
            if pref == "linear_indifference":
                qq, pp = (-rng if q is None else q), (rng if p is None else p)
                return F(int(d > qq)) if pp == qq else (F(0) if d <= qq else F(1) if d > pp else (d - qq) / (pp - qq))
            raise AssertionError(pref)

        out = [F(0)] * S
        for t in range(T):
            rng = max(X[t]) - min(X[t])
            for a in range(S):
                for b in range(S):
                    out[a] += w[t] * (P(X[t][a] - X[t][b], rng) - P(X[t][b] - X[t][a], rng))
        return [v / (sum(w) * (S - 1)) for v in out]
    raise AssertionError(rule)


def snap_exact(scores, floor=F(0)):
    """The documented tie rule on exact values: within 1e-12 of the magnitude (chained), the class maximum."""
    vals = sorted({s for s in scores if s is not None})
    tol = F(1, 10**12) * max([abs(v) for v in vals] + [floor])
    classes: list[list] = []
    for v in vals:
        if classes and v - classes[-1][-1] <= tol:
            classes[-1].append(v)
        else:
            classes.append([v])
    top = {v: c[-1] for c in classes for v in c}
    return [None if s is None else top[s] for s in scores]


def competition_ranks(scores):
    """1 + the number of strictly higher scores, after the documented tie rule.

    The tie rule (README, data model): scores within 1e-12 of the ranking's magnitude tie, chained
    through sorted neighbours.  Inputs such as 1/3 are floats, so (1/3 + 2/3) / 2 differs from 1/2 by
    5.5e-17 in exact arithmetic of the inputs: those tie (the magnitude is taken as at least 1 here,
    the scale of the unit rules); real differences in these tests are >= 1e-3.
    """
    snapped = snap_exact(scores, floor=F(1))
    return [None if s is None else 1 + sum(1 for o in snapped if o is not None and o > s) for s in snapped]


#: count-based rules: their scores are whole-number sums divided once (exact up to the final rounding)
COUNTS = {"borda", "plurality", "copeland", "minimax", "condorcet", "average_rank", "pavao_copeland", "success_rate",
          "baldwin", "threshold", "promethee2"}
NOT_COUNTS = {("promethee2", "linear"), ("promethee2", "linear_indifference")}

#: (rule, options, missing allowed) of the rational rules
RATIONAL = [
    ("mean", {}, False), ("borda", {}, False), ("plurality", {}, False), ("dowdall", {}, False),
    ("scoring", {"vector": [5, 3, 2, 2, 1, 0, 0]}, False), ("threshold", {}, False), ("baldwin", {}, False),
    ("average_rank", {}, False), ("median", {}, False), ("optimality_gap", {}, False),
    ("optimality_gap", {"gamma": 0.7}, False),
    ("copeland", {}, True), ("minimax", {}, True), ("condorcet", {}, True), ("success_rate", {}, True),
    ("pavao_copeland", {}, True), ("relative_difference", {}, True),
    ("promethee2", {}, False), ("promethee2", {"preference": "quasi", "q": 0.1}, False),
    ("promethee2", {"preference": "level", "q": 0.1, "p": 0.4}, False),
    ("promethee2", {"preference": "linear"}, False), ("promethee2", {"preference": "linear_indifference"}, False),
]


@pytest.mark.parametrize(("rule", "opts", "holes"), RATIONAL,
                         ids=[f"{r}-{o.get('preference', o.get('gamma', ''))}" for r, o, _ in RATIONAL])
@settings(max_examples=25)
@given(data=st.data())
def test_ranks_equal_exact_rational_ranks(rule, opts, holes, data):
    S = data.draw(st.integers(3, 7))
    T = data.draw(st.integers(1, 6))
    X = np.asarray(data.draw(st.lists(st.sampled_from(VALUES), min_size=T * S, max_size=T * S))).reshape(T, S)
    if holes and data.draw(st.booleans()):
        mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=T * S, max_size=T * S))).reshape(T, S)
        mask[:, 0] = False  # every task keeps a score
        X[mask & (np.arange(S) % 2 == 1)] = np.nan
    kind = data.draw(st.sampled_from(["none", "whole", "fraction"] if rule != "median" else ["none", "whole"]))
    w = [F(1)] * T if kind == "none" else [data.draw(st.sampled_from(WEIGHTS[kind])) for _ in range(T)]
    if rule == "scoring" and S > len(opts["vector"]):
        opts = {"vector": opts["vector"] + [0] * (S - len(opts["vector"]))}
    Xf = [[fr(X[t, i]) for i in range(S)] for t in range(T)]
    exact = ref_scores(rule, Xf, w, opts)
    want = competition_ranks(exact)
    s = engine.scores_from_array(X.T, systems=[f"s{i}" for i in range(S)])
    kw = {} if kind == "none" else {"weights": [float(v) for v in w]}
    res = engine.rank(s, rule=rule, options=opts, **kw)
    got = res["rank"].values
    assert [None if math.isnan(g) else int(g) for g in got] == want
    if rule in COUNTS and (rule, opts.get("preference", "usual")) not in NOT_COUNTS and not (
            rule == "success_rate" and (kind == "fraction" or np.isnan(X).any())):
        # count-based: whole-number sums and one division, so the score is the exact value correctly rounded
        assert res["score"].values.tolist() == [None if v is None else float(v) for v in exact] or all(
            (math.isnan(g) if v is None else g == float(v)) for g, v in zip(res["score"].values.tolist(), exact))


def _instance_tensor(data):
    S = data.draw(st.integers(3, 6))
    T = data.draw(st.integers(1, 4))
    K = data.draw(st.integers(2, 5))
    X = np.asarray(data.draw(st.lists(st.sampled_from(VALUES), min_size=S * T * K, max_size=S * T * K))).reshape(S, T, K)
    if data.draw(st.booleans()):  # ragged: later instances of some tasks are padding
        for t in range(T):
            X[:, t, data.draw(st.integers(1, K)) :] = np.nan
    return X


@pytest.mark.parametrize("rule", ["mean", "borda"])
@pytest.mark.parametrize("level", ["task", "one", "two"])
@settings(max_examples=25)
@given(data=st.data())
def test_instance_level_ranks_equal_exact_rational_ranks(rule, level, data):
    """Per-task means over instances (summed exactly), pooled judges and two-level Borda vs exact fractions."""
    X = _instance_tensor(data)
    S, T, K = X.shape
    per = [[[fr(X[s, t, k]) for k in range(K) if not math.isnan(X[s, t, k])] for s in range(S)] for t in range(T)]
    if level == "task":  # per-task means (computed values: the tie rule applies), then the rule across tasks
        task = [snap_exact([sum(v, F(0)) / len(v) for v in per[t]]) for t in range(T)]
        want = competition_ranks(ref_scores(rule, task, [F(1)] * T, {}))
    elif rule == "mean" and level == "two":
        task = [[sum(v, F(0)) / len(v) for v in per[t]] for t in range(T)]
        want = competition_ranks(ref_scores("mean", task, [F(1)] * T, {}))
    elif rule == "mean":  # one: every judge pooled
        want = competition_ranks([sum((sum(per[t][s], F(0)) for t in range(T)), F(0)) / sum(len(per[t][s]) for t in range(T))
                                  for s in range(S)])
    else:  # Borda points of every judge (task, instance), summed within tasks (two) or over all judges (one)
        tot = [[F(0)] * S for _ in range(T)]
        for t in range(T):
            for k in range(K):
                col = [fr(X[s, t, k]) for s in range(S)]
                if all(v is None for v in col):
                    continue
                pts = borda_pts(col)
                for s in range(S):
                    tot[t][s] += pts[s]
        if level == "one":
            want = competition_ranks([sum(tot[t][s] for t in range(T)) for s in range(S)])
        else:
            want = competition_ranks(ref_scores("borda", tot, [F(1)] * T, {}))
    s = engine.scores_from_array(X)
    got = engine.rank(s, rule=rule, level=level)["rank"].values
    assert [int(g) for g in got] == want


# ------------------------------------------------------------------------------------------ regressions of the issue
def test_promethee_usual_flows_equal_as_rationals_tie():
    """Issue: two models with equal (wins - losses) / (m (n - 1)) got ranks 22 and 23 from float rounding.

    29 systems x 14 criteria of accuracies with many exact ties; every pair of systems with equal exact net
    flows must share its rank, and the order must be that of the exact flows.
    """
    rng = np.random.default_rng(7)
    X = rng.integers(30, 45, size=(14, 29)) / 50.0
    Xf = [[F(float(v)) for v in row] for row in X]
    exact = ref_scores("promethee2", Xf, [F(1)] * 14, {})
    assert len(set(exact)) < 29  # the case has rational ties to get right
    s = engine.scores_from_array(X.T)
    got = engine.rank(s, rule="promethee2")["rank"].values.astype(int).tolist()
    assert got == competition_ranks(exact)


@pytest.mark.parametrize("rule", ["promethee2", "success_rate"])
def test_shuffled_rows_and_columns_rank_the_same(rule, tmp_path):
    """Issue: shuffling the rows and columns of the same CSV changed the ranks (292 x 76 and 29 x 14 tables)."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 20, size=(292, 76)) / 20.0
    systems = [f"m{i}" for i in range(292)]
    tasks = [f"b{j}" for j in range(76)]
    base = engine.rank(engine.scores_from_array(X, systems=systems, tasks=tasks), rule=rule)
    for seed in range(3):
        r = np.random.default_rng(seed)
        ps, pt = r.permutation(292), r.permutation(76)
        shuffled = engine.scores_from_array(X[ps][:, pt], systems=[systems[i] for i in ps], tasks=[tasks[j] for j in pt])
        other = engine.rank(shuffled, rule=rule)
        for var in ("rank", "score"):
            assert np.array_equal(base[var].sel(system=systems).values, other[var].sel(system=systems).values)


def test_means_equal_to_one_24th_tie():
    """Issue: two means equal to 1/24 came out as 0.04166666666666663 and ...685 and got ranks 2 and 1.

    Systems whose means are 1/24 through different terms (per-task means over different instances, and
    tasks of different means) must tie, at every level and under drop-judges.
    """
    X = np.array([
        [[1 / 8, 0.0, 0.0], [0.0, 0.0, 0.0]],     # per-task means 1/24 and 0: mean 1/48
        [[0.0, 0.0, 0.0], [0.0, 1 / 16, 1 / 16]],  # 0 and 1/24: mean 1/48
        [[1 / 24, 1 / 24, 1 / 24], [0.0, 0.0, 0.0]],
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    ])
    for level in ("task", "two", "one"):
        r = engine.rank(engine.scores_from_array(X), rule="mean", level=level)
        assert r["rank"].values.tolist() == [1.0, 1.0, 1.0, 4.0], level
        assert len(set(r["score"].values[:3].tolist())) == 1
    Y = X.copy()
    Y[3, 1, 2] = np.nan  # drop-judges removes instance 2 of task 1: the 1/16 + 1/16 pair becomes 1/16 over 2
    r = engine.rank(engine.scores_from_array(Y), rule="mean", missing="drop-judges")
    exact = [F(1, 48), (F(0) + F(1, 32)) / 2, F(1, 48), F(0)]
    assert r["rank"].values.astype(int).tolist() == competition_ranks(exact)


@settings(max_examples=200)
@given(st.lists(st.sampled_from([0.1, 0.1 + 2e-14, 0.1 + 5e-13, 1.0, 1.0 + 4e-13, 1.0 + 3e-12, 1e300, 1e300 * (1 + 1e-13),
                                 np.nan, -0.5, -0.5 - 1e-13]), min_size=2, max_size=9),
       st.lists(st.sampled_from([0.0, 1.0, 1e3]), min_size=9, max_size=9), st.randoms(use_true_random=False))
def test_tie_rule_equals_its_definition_per_score(values, mags, rnd):
    """Each score's tolerance is TIE_RTOL x max(|score|, its magnitude): a huge score elsewhere merges nothing;
    the result does not depend on the order of the systems."""
    from conftest import bf_tie_classes

    from engine.kernels.exact import TIE_RTOL, snap_ties

    x = np.array(values)
    m = np.array(mags[: x.size])
    tol = TIE_RTOL * np.maximum(np.where(np.isnan(x), 0.0, np.abs(x)), m)
    got = snap_ties(x, m)
    np.testing.assert_array_equal(got, bf_tie_classes(x, tol))
    perm = list(range(x.size))
    rnd.shuffle(perm)
    np.testing.assert_array_equal(snap_ties(x[perm], m[perm]), got[perm])


def test_a_huge_score_does_not_tie_ordinary_means(capsys, tmp_path):
    """One system near 1e308 used to make the tolerance of the whole ranking 1.7e296: 0.1 and 1.7 tied."""
    from conftest import run_cli

    csv = tmp_path / "t3.csv"
    csv.write_text("system,a,b,c\nx,0.1,0.1,0.1\ny,1.7,1.7,1.7\nz,1.7e308,1.7e308,1.7e308\n")
    code, out, err = run_cli(capsys, "rank", csv, "--rule", "mean", "--format", "csv")
    assert code == 0, err
    rows = [line.split(",") for line in out.strip().splitlines()[1:]]
    assert [(r[0], r[1]) for r in rows] == [("1", "z"), ("2", "y"), ("3", "x")]
    assert float(rows[1][2]) == pytest.approx(1.7) and float(rows[2][2]) == pytest.approx(0.1)
