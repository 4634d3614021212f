"""Generic tests over the rule registry: every registered rule is usable from the API and CLI.

A rule registered without an expectation on the worked example below fails
``test_every_rule_has_a_worked_example``: adding a rule means adding its
expected winner here, derived by hand from the rule's definition.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import engine
from engine.app.cli import main

# Vote'n'Rank Appendix A.1, Table 6: per-task ranks of m_A..m_D; score = 5 - rank
RANKS = {"A": [1, 1, 4, 4, 4], "B": [2, 4, 1, 2, 2], "C": [3, 2, 3, 1, 3], "D": [4, 3, 2, 3, 1]}
SYSTEMS = list(RANKS)
TOY = np.array([[5.0 - r for r in RANKS[m]] for m in SYSTEMS])  # (system, task)

# Hand-derived winners (set of systems sharing the top score) and the options used.
EXPECTED: dict[str, tuple[set[str], dict]] = {
    # Vote'n'Rank Appendix A.1, as printed
    "plurality": ({"A"}, {}),
    "borda": ({"B"}, {}),
    "dowdall": ({"A", "B"}, {}),
    "threshold": ({"C"}, {}),
    "baldwin": ({"B"}, {}),
    "condorcet": ({"B"}, {}),
    "copeland": ({"B"}, {}),
    "minimax": ({"B"}, {}),
    "scoring": ({"B"}, {"vector": [3, 2, 1, 0]}),  # the Borda vector
    # derived by hand from the definitions on the scores 5 - rank
    "mean": ({"B"}, {}),  # A 2.2, B 2.8, C 2.6, D 2.4
    "geometric_mean": ({"B"}, {}),  # 16^.2, 108^.2, 96^.2, 48^.2
    "median": ({"B"}, {}),  # 1, 3, 2, 2
    "optimality_gap": ({"B"}, {"gamma": 3.5}),  # gaps 1.5, 0.8, 1.0, 1.2
    "average_rank": ({"B"}, {}),  # Borda-equivalent without ties
    "success_rate": ({"B"}, {}),  # Borda-equivalent without ties
    "pavao_copeland": ({"B"}, {}),  # B is the Condorcet winner
    "kemeny": ({"B"}, {}),  # Condorcet consistent
    "promethee2": ({"B"}, {}),  # usual function: net flow affine in Borda points
    "topsis": ({"B"}, {}),  # closeness A .449, B .569, C .526, D .477
    "vikor": ({"C"}, {}),  # Q (v=.5): A 1, B .5, C .167, D .833
}


def _relative_difference_winner() -> set[str]:
    """Pavao's relative difference from its formula: mean over opponents of mean over tasks of (u-v)/(u+v)."""
    n = len(SYSTEMS)
    f = [
        np.mean([np.mean((TOY[i] - TOY[j]) / (TOY[i] + TOY[j])) for j in range(n) if j != i]) for i in range(n)
    ]
    return {SYSTEMS[int(np.argmax(f))]}


EXPECTED["relative_difference"] = (_relative_difference_winner(), {})

# battles: every pair meets on all 5 tasks (no ties); wins A 6, B 9, C 8, D 7 of 15.  With equal numbers of
# battles per pair, Bradley-Terry (with or without Davidson's ties) orders as the wins; win rate, HELM's mean win
# rate and MTEB's Borda count (complete data) are the wins divided by 15, by 3 x 5 and the Borda count.
EXPECTED["bradley_terry"] = ({"B"}, {})
EXPECTED["win_rate"] = ({"B"}, {})
EXPECTED["mean_win_rate"] = ({"B"}, {})
EXPECTED["mteb_borda"] = ({"B"}, {})


def _elo_winner() -> set[str]:
    """Elo from its definition: tasks in order, every pair of a task updated from the ratings before it, K = 4."""
    R = {m: 1000.0 for m in SYSTEMS}
    for t in range(TOY.shape[1]):
        new = dict(R)
        for i, mi in enumerate(SYSTEMS):
            for j, mj in enumerate(SYSTEMS):
                if i != j:
                    s = 1.0 if TOY[i, t] > TOY[j, t] else 0.5 if TOY[i, t] == TOY[j, t] else 0.0
                    new[mi] += 4.0 * (s - 1.0 / (1.0 + 10.0 ** ((R[mj] - R[mi]) / 400.0)))
        R = new
    best = max(R.values())
    return {m for m, v in R.items() if v == best}


EXPECTED["elo"] = (_elo_winner(), {})


def _task_winners() -> set[str]:
    return {SYSTEMS[int(np.argmax(TOY[:, t]))] for t in range(TOY.shape[1])}


def _winners(score: np.ndarray) -> set[str]:
    return {SYSTEMS[i] for i in np.flatnonzero(score == np.nanmax(score))}


def test_every_rule_has_a_worked_example():
    missing = sorted(set(engine.rule_names()) - set(EXPECTED) - {"random_judge"})
    assert not missing, f"registered rules without a worked-example expectation: {missing}"


@pytest.mark.parametrize("name", engine.rule_names())
def test_rule_on_worked_example(name):
    scores = engine.scores_from_array(TOY, systems=SYSTEMS)
    if name == "random_judge":
        for seed in range(5):
            got = _winners(engine.aggregate(scores, rule=name, options={"seed": seed}).values)
            assert len(got) == 1 and got <= _task_winners()
        return
    expected, options = EXPECTED[name]
    assert _winners(engine.aggregate(scores, rule=name, options=options).values) == expected


@pytest.mark.parametrize("name", engine.rule_names())
def test_rule_unanimity_and_cli_contract(name, tmp_path, capsys):
    """A system best on every task wins alone under every rule, through the CLI json contract."""
    rng = np.random.default_rng(7)
    X = rng.uniform(1.0, 5.0, size=(5, 4))
    X[2] = X.max() + 1.0
    path = tmp_path / "toy.csv"
    lines = ["system," + ",".join(f"t{j}" for j in range(4))]
    lines += [f"s{i}," + ",".join(repr(float(v)) for v in X[i]) for i in range(5)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["rank", str(path), "--rule", name, "--format", "json"]
    if name == "scoring":
        args += ["--param", "vector=[4,3,2,1,0]"]
    if name == "optimality_gap":  # every score is above the default gamma 0.95: all gaps would be 0
        args += ["--param", "gamma=10"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["rule", "level", "n_systems", "ranking"]
    assert out["rule"] == name and out["n_systems"] == 5
    top = [r for r in out["ranking"] if r["rank"] == 1]
    assert [r["system"] for r in top] == ["s2"], out["ranking"]
    scores = [r["score"] for r in out["ranking"]]
    ranks = [r["rank"] for r in out["ranking"]]
    assert ranks == [1 + sum(t > s for t in scores) for s in scores]


@pytest.mark.parametrize("name", engine.rule_names())
@pytest.mark.parametrize("level", ["task", "one", "two"])
def test_rule_at_every_level_dask_equals_numpy(name, level):
    if level != "task" and name in ("relative_difference", "geometric_mean"):
        pytest.skip("within-task outputs can be negative, which the across step of this rule rejects")
    rng = np.random.default_rng(11)
    X = np.round(rng.uniform(1.0, 5.0, size=(4, 3, 6)), 1)
    s = engine.scores_from_array(X)
    opts = {"vector": [4, 3, 2, 1]} if name == "scoring" else {}
    eager = engine.aggregate(s, rule=name, level=level, options=opts)
    assert isinstance(eager.data, np.ndarray)
    lazy = engine.aggregate(s.chunk({"task": 1, "instance": 2}), rule=name, level=level, options=opts)
    assert not isinstance(lazy.data, np.ndarray)
    np.testing.assert_allclose(lazy.compute().values, eager.values, rtol=1e-12)


def test_listwise_keeps_dropped_systems_out_of_complete_data_kernels():
    X = np.array([[1.0, 2.0, 3.0], [2.0, np.nan, 1.0], [3.0, 3.0, 2.0], [0.5, 1.0, 1.5]])
    s = engine.scores_from_array(X)
    for name in ("promethee2", "median", "topsis", "kemeny"):
        got = engine.aggregate(s, rule=name, missing="listwise").values
        assert np.isnan(got[1]) and not np.isnan(np.delete(got, 1)).any()
        ref = engine.aggregate(engine.scores_from_array(np.delete(X, 1, axis=0)), rule=name).values
        np.testing.assert_allclose(np.delete(got, 1), ref)


def test_unknown_rule_lists_known_ones():
    s = engine.scores_from_array(TOY)
    with pytest.raises(engine.VotebenchError, match="known rules: .*borda"):
        engine.aggregate(s, rule="nope")


def test_unknown_option_is_a_clear_error():
    s = engine.scores_from_array(TOY)
    with pytest.raises(engine.VotebenchError, match="unknown option.*gama.*gamma"):
        engine.aggregate(s, rule="optimality_gap", options={"gama": 0.9})


def test_two_step_groups_and_group_weights():
    """Vote'n'Rank section 2.4: weights 1/|group| and two-step (within groups, then across)."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(5, 6))
    groups = {"t0": "g1", "t1": "g1", "t2": "g1", "t3": "g2", "t4": "g2", "t5": "g3"}
    s = engine.scores_from_array(X, groups=groups)
    w = engine.aggregate(s, rule="borda", weights="groups").values
    def points(v):  # Borda points per column: systems beaten + 0.5 x ties (column = task)
        return (v[:, None, :] > v[None, :, :]).sum(1) + 0.5 * ((v[:, None, :] == v[None, :, :]).sum(1) - 1)

    pts = points(X)
    size = {"g1": 3, "g2": 2, "g3": 1}
    np.testing.assert_allclose(w, sum(pts[:, j] / size[groups[f"t{j}"]] for j in range(6)))
    two = engine.aggregate(s, rule="borda", groups=True).values
    per_group = np.stack([pts[:, 0:3].sum(1), pts[:, 3:5].sum(1), pts[:, 5]], axis=1)
    ref = points(per_group).sum(1)
    np.testing.assert_allclose(two, ref)
    mixed = engine.aggregate(s, groups=True, within="mean", across="copeland").values
    means = np.stack([X[:, 0:3].mean(1), X[:, 3:5].mean(1), X[:, 5]], axis=1)
    wins = (means[:, None, :] > means[None, :, :]).sum(-1)
    u = ((wins > wins.T).sum(1) - (wins < wins.T).sum(1)).astype(float)
    np.testing.assert_allclose(mixed, u)
