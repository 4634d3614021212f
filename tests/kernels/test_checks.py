"""One check per statistical option (engine/kernels/checks.py): every entry point refuses a bad interval level or alpha
with the same one-line message, and takes a good one unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine
from engine.errors import VotebenchError
from engine.kernels import battles, metrics
from engine.kernels.checks import check_alpha, check_level

BAD_LEVELS = [0, 1, -0.5, 1.5, math.nan, True, "high", None]


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 1e-9, 1 - 1e-9])
def test_a_level_inside_the_open_interval_is_taken_as_a_float(level):
    assert check_level(level) == float(level) and type(check_level(level)) is float


@pytest.mark.parametrize("level", BAD_LEVELS)
def test_a_level_outside_is_one_line_naming_it(level):
    with pytest.raises(VotebenchError, match=r"^interval level must be") as exc:
        check_level(level)
    assert "\n" not in str(exc.value)


def test_one_is_taken_only_where_asked():
    assert check_level(1.0, include_one=True) == 1.0
    with pytest.raises(VotebenchError, match=r"\(0, 1\)"):
        check_level(1.0)
    with pytest.raises(VotebenchError, match=r"\(0, 1\]"):
        check_level(0.0, include_one=True)


@pytest.mark.parametrize("alpha", [0, 1, True, "x", None, -1])
def test_alpha_outside_is_one_line(alpha):
    with pytest.raises(VotebenchError, match="^alpha must be"):
        check_alpha(alpha)


@pytest.mark.parametrize("level", [0, 1.5, math.nan])
def test_every_entry_point_gives_the_same_message(level):
    """The bootstrap, the kernels' intervals and the battle bootstrap share the check: the same words whatever the path."""
    X = np.array([[0.9, 0.2, 0.5], [0.4, 0.8, 0.6], [0.1, 0.3, 0.9], [0.7, 0.7, 0.2]])
    scores = engine.scores_from_array(X)
    ranks = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 3.0, 4.0]])
    calls = [
        lambda: engine.summarize(engine.bootstrap(scores, replicates=5), level=level),
        lambda: metrics.rank_intervals(ranks, level=level),
        lambda: battles.bootstrap_battles(battles.battle_counts(np.array([0, 1]), np.array([1, 2]), np.array([0, 0]),
                                                                n_models=3), replicates=5, level=level),
    ]
    messages = set()
    for call in calls:
        with pytest.raises(VotebenchError) as exc:
            call()
        messages.add(str(exc.value))
    assert messages == {f"interval level must be in (0, 1), got {level}"}


def test_the_cli_and_the_pairwise_bounds_name_their_option_and_its_range(capsys):
    """The same check behind the CLI's --interval / --coverage and the pairwise rank bounds (level above 0.5)."""

    for level in (0.5, 0.2, 1.0):
        with pytest.raises(VotebenchError, match=rf"^interval level must be in \(0.5, 1\), got {level}$"):
            metrics.pairwise_rank_bounds(np.array([3.0, 2.0, 1.0]), np.full((3, 3), 0.5), level=level)
    assert check_level(0.51, above=0.5) == 0.51
    with pytest.raises(VotebenchError, match=r"^--coverage must be in \(0, 1\), got 1.5$"):
        check_level(1.5, name="--coverage")
    with pytest.raises(VotebenchError, match=r"^--alpha must be between 0 and 1 \(exclusive\), got 2$"):
        check_alpha(2, name="--alpha")
    with pytest.raises(VotebenchError, match="^alpha must be between 0 and 1"):
        engine.compare_scores(engine.scores_from_array(np.ones((2, 1, 3))), alpha=1.5)


def test_a_boolean_is_not_a_level_even_where_one_is_taken():
    with pytest.raises(VotebenchError, match=r"^interval level must be in \(0, 1\]"):
        check_level(True, include_one=True)  # True == 1.0 as a number, but no level
