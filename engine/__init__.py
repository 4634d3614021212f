"""votebench: which ML systems are best, and how sure are we?

Public API (data first, keyword-only options):

* :func:`open_scores`, :func:`scores_from_array`, :func:`to_zarr`: the score tensor;
  :func:`register_reader` adds an input format (:data:`READERS`, :mod:`engine.io.readers`);
* :func:`aggregate`, :func:`rank`: aggregation rules (:data:`RULES`); :func:`aggregate_rules`,
  :func:`rank_rules`: several rules in one request (shared preparation and pairwise win matrix);
* :func:`orient`, :func:`missing_report`: orientation and missing scores;
* :func:`bootstrap`, :func:`summarize`: bootstrap rankings over tasks, systems or
  instances, rank intervals and stability (:mod:`engine.kernels.metrics` for the metrics,
  :mod:`engine.labelled.robustness` and :mod:`engine.labelled.synthetic` for the papers' experiments).

The names are imported on first use (module ``__getattr__``, PEP 562), so that
``import engine`` and a small ``votebench rank`` do not load dask, distributed,
matplotlib or tornado.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from engine.errors import VotebenchError

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from engine.io.battles import bootstrap_battles, rank_battles
    from engine.io.readers import READERS, BattleInput, Reader, get_reader, open_battles, open_scores, reader_names, register_reader
    from engine.io.store import to_zarr
    from engine.labelled.agreement import agreement
    from engine.labelled.bootstrap import bootstrap, summarize
    from engine.labelled.canonical import scores_from_array, validate_scores
    from engine.labelled.core import aggregate, aggregate_rules, missing_report, orient, rank, rank_rules, tied_groups
    from engine.labelled.paired_tests import compact_letters, compare_scores, letter_groups
    from engine.rules import LEVELS, RULES, Rule, get_rule, register_rule, rule_names

#: public name -> the submodule that defines it (imported on first access)
_LAZY = {
    "bootstrap": "labelled.bootstrap",
    "summarize": "labelled.bootstrap",
    "aggregate": "labelled.core",
    "aggregate_rules": "labelled.core",
    "rank_rules": "labelled.core",
    "missing_report": "labelled.core",
    "orient": "labelled.core",
    "rank": "labelled.core",
    "tied_groups": "labelled.core",
    "open_scores": "io.readers",
    "READERS": "io.readers",
    "Reader": "io.readers",
    "get_reader": "io.readers",
    "reader_names": "io.readers",
    "register_reader": "io.readers",
    "scores_from_array": "labelled.canonical",
    "validate_scores": "labelled.canonical",
    "LEVELS": "rules",
    "RULES": "rules",
    "Rule": "rules",
    "get_rule": "rules",
    "register_rule": "rules",
    "rule_names": "rules",
    "to_zarr": "io.store",
    "open_battles": "io.readers",
    "BattleInput": "io.readers",
    "rank_battles": "io.battles",
    "bootstrap_battles": "io.battles",
    "compare_scores": "labelled.paired_tests",
    "compact_letters": "labelled.paired_tests",
    "letter_groups": "labelled.paired_tests",
    "agreement": "labelled.agreement",
}


def __getattr__(name: str) -> Any:
    """Import a public name (or a submodule such as ``engine.kernels.metrics``) on first access.

    Parameters
    ----------
    name : str
        The attribute asked for.

    Returns
    -------
    Any
        The public function, class or constant, or the submodule.

    Raises
    ------
    AttributeError
        When ``name`` is neither a public name nor a submodule of ``engine``.
    """
    if name == "__version__":  # importlib.metadata takes ~20 ms to import: only when asked
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("votebench")
        except PackageNotFoundError:  # pragma: no cover - source tree without install
            value = "0.0.0+unknown"
        globals()[name] = value
        return value
    where = _LAZY.get(name)
    if where is not None:
        value = getattr(import_module(f".{where}", __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    try:
        return import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))




__all__ = [
    "BattleInput",
    "LEVELS",
    "READERS",
    "RULES",
    "Reader",
    "Rule",
    "VotebenchError",
    "aggregate",
    "aggregate_rules",
    "agreement",
    "bootstrap",
    "bootstrap_battles",
    "compact_letters",
    "compare_scores",
    "get_reader",
    "get_rule",
    "letter_groups",
    "missing_report",
    "open_battles",
    "open_scores",
    "orient",
    "rank",
    "rank_battles",
    "rank_rules",
    "reader_names",
    "register_reader",
    "register_rule",
    "rule_names",
    "scores_from_array",
    "summarize",
    "to_zarr",
    "tied_groups",
    "validate_scores",
]
