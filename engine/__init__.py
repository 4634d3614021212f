"""votebench: which ML systems are best, and how sure are we?

Public API (data first, keyword-only options):

* :func:`open_scores`, :func:`scores_from_array`, :func:`to_zarr`: the score tensor;
* :func:`aggregate`, :func:`rank`: aggregation rules (:data:`RULES`);
* :func:`orient`, :func:`missing_report`: orientation and missing scores;
* :func:`bootstrap`, :func:`summarize`: bootstrap rankings over tasks, systems or
  instances, rank intervals and stability (:mod:`engine.metrics` for the metrics,
  :mod:`engine.robustness` and :mod:`engine.synthetic` for the papers' experiments).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .bootstrap import bootstrap, summarize
from .core import aggregate, missing_report, orient, rank, tied_groups
from .errors import VotebenchError
from .io import open_scores, scores_from_array, validate_scores
from .rules import LEVELS, RULES, Rule, get_rule, register_rule, rule_names
from .store import to_zarr

try:
    __version__ = version("votebench")
except PackageNotFoundError:  # pragma: no cover - source tree without install
    __version__ = "0.0.0+unknown"

__all__ = [
    "LEVELS",
    "RULES",
    "Rule",
    "VotebenchError",
    "aggregate",
    "bootstrap",
    "get_rule",
    "missing_report",
    "open_scores",
    "orient",
    "rank",
    "register_rule",
    "rule_names",
    "scores_from_array",
    "summarize",
    "to_zarr",
    "tied_groups",
    "validate_scores",
]
