"""What a rule's aggregate score is (its unit), as the dashboard and the report say it."""

from __future__ import annotations

__all__ = ["RULE_UNITS", "rule_unit"]

#: what a rule's aggregate score is, shown beside it (a rule not listed: "<rule> score")
RULE_UNITS = {
    "borda": "Borda points (per task: systems it beats, a tie counting ½; summed over tasks)",
    "mteb_borda": "Borda points (MTEB's variant)", "dowdall": "Dowdall points (sum over tasks of 1 / rank)",
    "copeland": "Copeland score (pairwise majority wins minus losses)", "pavao_copeland": "Copeland score (Pavão's)",
    "mean": "mean score over tasks", "median": "median score over tasks", "geometric_mean": "geometric mean score",
    "average_rank": "average rank, negated so higher is better (-2.00 = average rank 2)",
    "minimax": "minimax score: minus the strength of its worst pairwise defeat (0 = never beaten)",
    "win_rate": "pairwise win rate", "mean_win_rate": "mean pairwise win rate", "success_rate": "success rate",
    "plurality": "tasks won", "elo": "Elo rating", "bradley_terry": "Bradley-Terry strength",
}


def rule_unit(label: str) -> str:
    """What the scores of the rule labelled ``label`` (``"borda"``, ``"borda(...)"``) are."""
    base = label.split("(")[0].split(":")[0].strip()
    return RULE_UNITS.get(base, f"{base} score")
