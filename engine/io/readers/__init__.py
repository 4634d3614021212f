"""Input readers: a registry in the style of xarray's backends.

Each reader is a :class:`Reader` record: its name, how it recognises a path
(``guess_can_open``), the options it takes and its opener, which returns the
canonical score tensor of :mod:`engine.labelled.canonical`.  :func:`open_scores` picks
the reader named by ``format=``, else the first of :data:`READERS` that
recognises the path, in this order:

======== ======================================================= =======================================
name     recognises                                              options
======== ======================================================= =======================================
zarr     a folder with ``zarr.json`` (:func:`engine.to_zarr`)
lm-eval  a folder of lm-evaluation-harness ``samples_*.jsonl``   ``metric``, ``filter``
helm     a folder of HELM ``per_instance_stats.json``            ``metric``, ``split``, ``perturbation``
battles  a CSV / JSONL / Parquet file with columns ``model_a``,
         ``model_b``, ``winner`` (another input kind: no scores)
jsonl    ``.jsonl``, ``.jsonl.gz``
parquet  ``.parquet``, ``.pq``
csv      ``.csv``, ``.csv.gz``, ``.tsv``, ``.tsv.gz``, ``.txt``
wide     only when named: a CSV / Parquet table that must be wide
long     only when named: a CSV / Parquet table that must be long
======== ======================================================= =======================================

It then checks the options against the reader's, applies the sidecar and
validates the result.  The CLI's ``--input-format`` choices are
:func:`reader_names` and the options a sweep input may give are
:func:`loader_keys`.

Adding a reader is one line, e.g. for a made-up ``.scores.txt`` format read by
``read_scores_txt(path) -> xarray.DataArray``::

    register_reader(Reader("scores-txt", read_scores_txt, by_suffix(".scores.txt")), before="csv")

(``before="csv"``: tried before the CSV reader, which takes ``.txt`` files.)
"""

from __future__ import annotations

from typing import Any

from engine.io.readers.common import BATTLE_COLUMNS, is_battles_file, parse_task_option
from engine.io.readers.registry import (
    READERS,
    Reader,
    by_suffix,
    check_options,
    default_sidecar,
    get_reader,
    guess_reader,
    input_kind,
    is_zarr_store,
    loader_keys,
    only_for,
    open_scores,
    reader_choices,
    reader_names,
    reader_options,
    register_reader,
)
from engine.io.readers.tables import CSV_SUFFIXES, PARQUET_SUFFIXES
from engine.rules import LazyFunction

__all__ = ["READERS", "BattleInput", "Reader", "is_battles_file", "iter_battle_chunks", "open_battles",
           "by_suffix", "check_options", "default_sidecar", "get_reader", "guess_reader", "input_kind", "loader_keys", "only_for",
           "open_scores", "parse_task_option", "reader_choices", "reader_names", "reader_options", "register_reader"]

#: names re-exported from the battles reader, imported when first asked for (PEP 562)
_BATTLE_NAMES = ("BattleInput", "iter_battle_chunks", "open_battles")


def __getattr__(name: str) -> Any:
    if name in _BATTLE_NAMES:
        from engine.io.readers import battles

        return getattr(battles, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _ref(module: str, name: str) -> LazyFunction:
    """A reader's function, its module imported only when a path is opened (or recognised) by that reader."""
    return LazyFunction(f"engine.io.readers.{module}", name)


# the built-in readers, in the order open_scores tries them: one record each (openers imported when used)
register_reader(Reader("zarr", LazyFunction("engine.io.store", "open_store"), is_zarr_store,
                       description="a zarr store (folder with zarr.json)", carries_metadata=True))
register_reader(Reader("lm-eval", _ref("lm_eval", "read_lm_eval"),
                       only_for(".jsonl", ".jsonl.gz", folders=True, guess=_ref("lm_eval", "guess_lm_eval")),
                       options=("metric", "filter"), description="a folder of lm-evaluation-harness samples_*.jsonl",
                       keeps_own_directions=True))
register_reader(Reader("helm", _ref("helm", "read_helm"), only_for(folders=True, guess=_ref("helm", "guess_helm")),
                       options=("metric", "split", "perturbation"), description="a folder of HELM per_instance_stats.json",
                       keeps_own_directions=True))
register_reader(Reader("battles", _ref("battles", "open_battles_reader"), is_battles_file,
                       description=f"a battles file (columns {', '.join(BATTLE_COLUMNS)}; .csv, .tsv, .jsonl, .parquet)",
                       kind="battles"))
register_reader(Reader("jsonl", _ref("jsonl", "read_jsonl"), by_suffix(".jsonl", ".jsonl.gz"),
                       description="JSONL (.jsonl, .jsonl.gz)"))
register_reader(Reader("parquet", _ref("tables", "read_parquet"), by_suffix(*PARQUET_SUFFIXES),
                       description="Parquet (.parquet, .pq)"))
register_reader(Reader("csv", _ref("tables", "read_csv"), by_suffix(*CSV_SUFFIXES),
                       description="CSV (.csv, .csv.gz, .tsv, .tsv.gz, .txt)"))
register_reader(Reader("wide", _ref("tables", "read_wide"),
                       description="a wide CSV or Parquet table: system, then one column per task"))
register_reader(Reader("long", _ref("tables", "read_long"),
                       description="a long CSV or Parquet table: system, task, [instance,] score"))
