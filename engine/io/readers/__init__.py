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

from engine.io.readers.battles import BATTLES, BattleInput, is_battles_file, iter_battle_chunks, open_battles
from engine.io.readers.common import parse_task_option
from engine.io.readers.helm import HELM
from engine.io.readers.jsonl import JSONL
from engine.io.readers.lm_eval import LM_EVAL
from engine.io.readers.opening import default_sidecar, open_scores
from engine.io.readers.registry import (
    READERS,
    Reader,
    by_suffix,
    check_options,
    get_reader,
    guess_reader,
    loader_keys,
    reader_choices,
    reader_names,
    reader_options,
    register_reader,
)
from engine.io.readers.tables import CSV, LONG, PARQUET, WIDE
from engine.io.readers.zarr_store import ZARR

__all__ = ["READERS", "BattleInput", "Reader", "is_battles_file", "iter_battle_chunks", "open_battles",
           "by_suffix", "check_options", "default_sidecar", "get_reader", "guess_reader", "loader_keys",
           "open_scores", "parse_task_option", "reader_choices", "reader_names", "reader_options", "register_reader"]

# the built-in readers, in the order open_scores tries them (a new one: its module here, and one line)
register_reader(ZARR)
register_reader(LM_EVAL)
register_reader(HELM)
register_reader(BATTLES)
register_reader(JSONL)
register_reader(PARQUET)
register_reader(CSV)
register_reader(WIDE)
register_reader(LONG)
