"""votebench: which ML systems are best, and how sure are we?

Public API (data first, keyword-only options):

* :func:`open_scores`, :func:`scores_from_array`, :func:`to_zarr`: the score tensor;
  :func:`register_reader` adds an input format (:data:`READERS`, :mod:`engine.readers`);
* :func:`aggregate`, :func:`rank`: aggregation rules (:data:`RULES`); :func:`aggregate_rules`,
  :func:`rank_rules`: several rules in one request (shared preparation and pairwise win matrix);
* :func:`orient`, :func:`missing_report`: orientation and missing scores;
* :func:`bootstrap`, :func:`summarize`: bootstrap rankings over tasks, systems or
  instances, rank intervals and stability (:mod:`engine.metrics` for the metrics,
  :mod:`engine.robustness` and :mod:`engine.synthetic` for the papers' experiments).

The names are imported on first use (module ``__getattr__``, PEP 562), so that
``import engine`` and a small ``votebench rank`` do not load dask, distributed,
matplotlib or tornado.
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import VotebenchError

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from .agreement import agreement
    from .battles import bootstrap_battles, rank_battles
    from .bootstrap import bootstrap, summarize
    from .canonical import scores_from_array, validate_scores
    from .core import aggregate, aggregate_rules, missing_report, orient, rank, rank_rules, tied_groups
    from .paired_tests import compact_letters, compare_scores, letter_groups
    from .readers import READERS, BattleInput, Reader, get_reader, open_battles, open_scores, reader_names, register_reader
    from .rules import LEVELS, RULES, Rule, get_rule, register_rule, rule_names
    from .store import to_zarr

#: public name -> the submodule that defines it (imported on first access)
_LAZY = {
    "bootstrap": "bootstrap",
    "summarize": "bootstrap",
    "aggregate": "core",
    "aggregate_rules": "core",
    "rank_rules": "core",
    "missing_report": "core",
    "orient": "core",
    "rank": "core",
    "tied_groups": "core",
    "open_scores": "readers",
    "READERS": "readers",
    "Reader": "readers",
    "get_reader": "readers",
    "reader_names": "readers",
    "register_reader": "readers",
    "scores_from_array": "canonical",
    "validate_scores": "canonical",
    "LEVELS": "rules",
    "RULES": "rules",
    "Rule": "rules",
    "get_rule": "rules",
    "register_rule": "rules",
    "rule_names": "rules",
    "to_zarr": "store",
    "open_battles": "readers",
    "BattleInput": "readers",
    "rank_battles": "battles",
    "bootstrap_battles": "battles",
    "compare_scores": "paired_tests",
    "compact_letters": "paired_tests",
    "letter_groups": "paired_tests",
    "agreement": "agreement",
}


def __getattr__(name: str) -> Any:
    """Import a public name (or a submodule such as ``engine.metrics``) on first access.

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


class _Package(ModuleType):
    """The ``engine`` package: ``engine.bootstrap`` stays the function when the submodule is imported later.

    Importing a submodule binds it as an attribute of its package; for a public
    name that equals its submodule's name (``bootstrap``) that would replace the
    function by the module, so the function is bound instead, as the eager
    ``from .bootstrap import bootstrap`` did.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _LAZY.get(name) == name and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
