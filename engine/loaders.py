"""Readers of evaluation outputs (lm-evaluation-harness, HELM, generic JSONL): names kept from before :mod:`engine.readers`.

The readers themselves live in :mod:`engine.readers.lm_eval`,
:mod:`engine.readers.helm` and :mod:`engine.readers.jsonl`; new code imports
them from there (or opens any input with :func:`engine.open_scores`).
"""

from __future__ import annotations

from .readers import parse_task_option, reader_names
from .readers.helm import HELM_DEFAULT_METRICS, HELM_LOWER_IS_BETTER, read_helm
from .readers.jsonl import read_jsonl
from .readers.lm_eval import LM_EVAL_LOWER_IS_BETTER, detect_directory_format, read_lm_eval

__all__ = [
    "FORMATS",
    "HELM_DEFAULT_METRICS",
    "HELM_LOWER_IS_BETTER",
    "LM_EVAL_LOWER_IS_BETTER",
    "detect_directory_format",
    "parse_task_option",
    "read_helm",
    "read_jsonl",
    "read_lm_eval",
]

#: the built-in values of ``open_scores(format=...)`` (a snapshot: :func:`engine.readers.reader_names` also lists
#: readers registered later)
FORMATS = tuple(reader_names())
