"""Reader of lm-evaluation-harness per-sample outputs (``lm_eval --log_samples --output_path OUT``).

``OUT/<model_name_sanitized>/samples_<task>_<date>.jsonl``, one JSON object per
evaluated document (``doc_id``, ``filter``, ``metrics`` and one key per metric),
beside ``results_<date>.json``.  System = model folder, task = ``<task>``,
instance = ``doc_id``.  See :func:`read_lm_eval`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xarray as xr

from engine.errors import VotebenchError
from engine.io.readers.common import assemble, check_mapping_tasks, json_lines, label, need_two, per_task_option, read_json, short_list
from engine.io.readers.helm import has_helm_stats
from engine.limits import as_float

__all__ = ["LM_EVAL_LOWER_IS_BETTER", "detect_directory_format", "guess_lm_eval", "looks_like_lm_eval_samples",
           "read_lm_eval"]

#: lm-eval metrics for which lower is better (all others: higher); a task's own
#: ``results_<date>.json`` ``higher_is_better`` entry takes precedence
LM_EVAL_LOWER_IS_BETTER = frozenset(
    {"perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte", "brier_score", "ter"}
)

# keys of an lm-eval sample line that are not metrics
_LM_EVAL_BOOKKEEPING = frozenset(
    {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics", "doc_hash", "prompt_hash",
     "target_hash"}
)
_LN2 = math.log(2.0)
_SAMPLES_RE = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.:\-]+))?\.jsonl(?:\.gz)?$", re.IGNORECASE)
_MODEL_ARG_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


class _NotANumber:
    """Marker: the sample holds this metric, but not as a per-sample number."""


_NOT_A_NUMBER = _NotANumber()
_ABSENT = object()


def _lm_eval_number(key: str, value: Any, where: str) -> float | _NotANumber:
    """One per-sample metric value as a number (see :func:`read_lm_eval` for the conversions).

    An integer beyond float64 is refused in one line naming ``where`` and ``key``.
    """
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        v = value if isinstance(value, float) else as_float(value, where, f"metric {key!r} value")
        return math.exp(-v) if key == "perplexity" else v
    if (
        key in ("word_perplexity", "byte_perplexity", "bits_per_byte")
        and isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
    ):
        ll, weight = (x if isinstance(x, float) else as_float(x, where, f"metric {key!r} value") for x in value)
        if weight <= 0:
            return math.nan
        return -ll / (weight * _LN2) if key == "bits_per_byte" else math.exp(-ll / weight)
    return _NOT_A_NUMBER


@dataclass
class _TaskFile:
    """The parsed samples of one (model folder, task) file: per filter, the metric values of each doc."""

    path: Path
    filters: dict[str, list[tuple[int, Any, dict[str, float | _NotANumber]]]] = field(default_factory=dict)
    listed: dict[str, list[str] | None] = field(default_factory=dict)  # the first sample's "metrics" list per filter


def _parse_samples(path: Path) -> _TaskFile:
    tf = _TaskFile(path)
    seen: dict[tuple[str, Any], int] = {}
    for lineno, obj in json_lines(path):
        if "doc_id" not in obj:
            raise VotebenchError(f"{path}: line {lineno}: missing key 'doc_id' (not an lm-evaluation-harness sample line)")
        doc = obj["doc_id"]
        if label(doc) is None:
            raise VotebenchError(f"{path}: line {lineno}: doc_id must be an integer or string, got {doc!r}")
        flt = obj.get("filter", "none")
        flt = str(flt) if flt is not None else "none"
        key = (flt, doc)
        if key in seen:
            raise VotebenchError(f"{path}: line {lineno}: duplicate doc_id {doc!r} for filter {flt!r} (first on line {seen[key]})")
        seen[key] = lineno
        listed = obj.get("metrics")
        listed = [str(m) for m in listed] if isinstance(listed, list) else None
        names = listed if listed is not None else [k for k in obj if k not in _LM_EVAL_BOOKKEEPING]
        values = {k: _lm_eval_number(k, obj[k], f"{path}: line {lineno}") for k in names if k in obj}
        if flt not in tf.filters:
            tf.filters[flt] = []
            tf.listed[flt] = listed
        tf.filters[flt].append((lineno, doc, values))
    if not tf.filters:
        raise VotebenchError(f"{path}: no samples")
    return tf


def _results_file(folder: Path, date: str | None) -> Path | None:
    """The ``results_<date>.json`` matching a samples file (else the newest one); None when none."""
    exact = folder / f"results_{date}.json" if date else None
    if exact is not None and exact.is_file():
        return exact
    found = sorted(folder.glob("results_*.json"))
    return found[-1] if found else None


def _results_info(chosen: Path | None) -> dict[str, Any]:
    """The content of a results file (:func:`_results_file`); {} when none."""
    if chosen is None:
        return {}
    data = read_json(chosen, "lm-evaluation-harness results")
    if not isinstance(data, dict):
        raise VotebenchError(f"{chosen}: an lm-evaluation-harness results file must hold a JSON object")
    return data


def _model_name(results: Mapping[str, Any]) -> str | None:
    name = results.get("model_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    config = results.get("config")
    args = config.get("model_args") if isinstance(config, dict) else None
    if isinstance(args, dict):
        for key in _MODEL_ARG_KEYS:
            if isinstance(args.get(key), str) and args[key].strip():
                return args[key].strip()
    elif isinstance(args, str):
        parts = dict(a.split("=", 1) for a in args.split(",") if "=" in a)
        for key in _MODEL_ARG_KEYS:
            if parts.get(key, "").strip():
                return parts[key].strip()
    return None


def _top_groups(results: Mapping[str, Any]) -> dict[str, str]:
    """task -> outermost group, from ``group_subtasks`` ({group: [subtasks]})."""
    sub = results.get("group_subtasks")
    if not isinstance(sub, dict):
        return {}
    parent = {str(c): str(g) for g, children in sub.items() if isinstance(children, list) for c in children if str(c) != str(g)}
    out = {}
    for task in parent:
        top, hops = task, 0
        while top in parent and hops < 100:
            top, hops = parent[top], hops + 1
        out[task] = top
    return out


def read_lm_eval(
    path: str | Path,
    *,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
) -> xr.DataArray:
    """Read lm-evaluation-harness per-sample outputs (``--log_samples``).

    Parameters
    ----------
    path : str or path-like
        A folder searched recursively for ``samples_<task>_<date>.jsonl`` (or
        ``.jsonl.gz``) files.  Every folder holding such files is one system
        (the harness writes ``<output_path>/<model_name_sanitized>/``).  Its label is
        the model name from the matching ``results_<date>.json`` (``model_name``, else
        the ``pretrained=``/``model=``/... part of ``config.model_args``), else the
        folder name; folders whose model names collide are labelled by their path
        relative to ``path``.  When a folder holds several files for one task (several
        runs), the newest timestamp is kept.
    metric : str or mapping task -> str, optional
        The per-sample metric that scores each task.  Default (and for tasks missing
        from a mapping): the first metric of the sample's ``metrics`` list that is a
        per-sample number (for multiple-choice tasks ``acc``); for old files without
        that list, ``acc`` if present, else the first numeric key.
    filter : str or mapping task -> str, optional
        The filter (``filter`` key; e.g. ``"strict-match"`` for gsm8k) whose samples
        are read.  Default: ``"none"`` when the task has it, else its first filter.

    Returns
    -------
    xarray.DataArray
        The canonical ``scores`` tensor: instance = ``doc_id``; tasks missing for a
        model are ``NaN``.  ``higher_is_better`` comes from the results file's
        ``higher_is_better`` entry, else from :data:`LM_EVAL_LOWER_IS_BETTER` (else
        True); ``group`` is the outermost group of ``group_subtasks`` (e.g. ``mmlu``
        for ``mmlu_anatomy``), else the task.  Attributes ``metric`` and ``filter``
        (JSON task -> name) record the choices.

    Notes
    -----
    Values: ``true``/``false`` count 1/0, ``null`` is missing.  Perplexity-type
    metrics are turned into per-document values (lower is better): ``perplexity``
    (stored as a log-likelihood ``ll``) -> ``exp(-ll)``; ``word_perplexity`` and
    ``byte_perplexity`` (stored as ``[ll, words or bytes]``) -> ``exp(-ll / n)``;
    ``bits_per_byte`` -> ``-ll / (n ln 2)``.  Corpus-level metrics (``bleu``,
    ``chrf``, ``ter``: a reference/prediction pair per sample) are refused.

    Raises
    ------
    VotebenchError
        No samples files, a line that is not JSON, a missing ``doc_id``, a duplicate
        ``doc_id``, a filter or metric that a file lacks (the message lists the
        available ones), a non-numeric value, fewer than two models.
    """
    root = Path(path)
    if not root.exists():
        raise VotebenchError(f"{root}: no such file or directory")
    newest = _newest_samples(root)
    folders = sorted({k[0] for k in newest})
    files = {d: _results_file(d, max(v[0] for k, v in newest.items() if k[0] == d) or None) for d in folders}
    results = {d: _results_info(files[d]) for d in folders}
    system_of = _system_labels(root, folders, results)
    systems = [system_of[d] for d in folders]
    need_two(systems, root, "lm-evaluation-harness samples", "point at the folder that holds several model folders")
    tasks = sorted({k[1] for k in newest})
    check_mapping_tasks(metric, tasks, "metric", root)
    check_mapping_tasks(filter, tasks, "filter", root)
    top_groups = {d: _top_groups(results[d]) for d in folders}
    rows: list[tuple[str, str, str, float]] = []
    chosen_metric, chosen_filter, hib, groups = {}, {}, {}, {}
    for task in tasks:
        parsed = [(d, _parse_samples(newest[(d, task)][1])) for d in folders if (d, task) in newest]
        met, flt = _task_rows(rows, task, parsed, system_of, per_task_option(metric, task), per_task_option(filter, task))
        chosen_metric[task], chosen_filter[task] = met, flt
        hib[task] = _direction(task, met, [(files[d], results[d]) for d, _ in parsed])
        groups.update(next(({task: top_groups[d][task]} for d, _ in parsed if task in top_groups[d]), {}))
    attrs = {"format": "lm-eval", "metric": json.dumps(chosen_metric, sort_keys=True),
             "filter": json.dumps(chosen_filter, sort_keys=True)}
    return assemble(rows, source=root, systems=systems, tasks=tasks, higher_is_better=hib, groups=groups, attrs=attrs)


def _newest_samples(root: Path) -> dict[tuple[Path, str], tuple[str, Path]]:
    """(folder, task) -> (date, samples file) of the newest run of each task in each folder under ``root``."""
    files = [root] if root.is_file() else sorted(f for f in root.rglob("samples_*") if f.is_file() and _SAMPLES_RE.match(f.name))
    if not files:
        raise VotebenchError(f"{root}: no lm-evaluation-harness samples_<task>_<date>.jsonl files found")
    newest: dict[tuple[Path, str], tuple[str, Path]] = {}
    for f in files:
        m = _SAMPLES_RE.match(f.name)
        task, date = (m["task"], m["date"] or "") if m else (f.stem, "")
        key = (f.parent, task)
        if key not in newest or (date, str(f)) > (newest[key][0], str(newest[key][1])):
            newest[key] = (date, f)
    return newest


def _system_labels(root: Path, folders: list[Path], results: Mapping[Path, Mapping[str, Any]]) -> dict[Path, str]:
    """Folder -> system: the model name of its results file (else the folder name); its path under ``root`` on a collision."""

    def rel(d: Path) -> str:
        r = d.relative_to(root).as_posix() if d != root and root.is_dir() else d.name
        return r or d.name

    names = {d: _model_name(results[d]) or d.name for d in folders}
    counts = Counter(names.values())
    return {d: (rel(d) if counts[names[d]] > 1 else names[d]) for d in folders}


def _task_rows(rows: list[tuple[str, str, str, float]], task: str, parsed: list[tuple[Path, _TaskFile]],
               system_of: Mapping[Path, str], met: str | None, flt: str | None) -> tuple[str, str]:
    """Append the rows of ``task`` (every folder's samples) to ``rows``; return the metric and filter used."""
    ref = parsed[0][1]
    if flt is None:
        flt = "none" if "none" in ref.filters else next(iter(ref.filters))
    for _, tf in parsed:
        if flt not in tf.filters:
            have = short_list(list(tf.filters))
            raise VotebenchError(f"{tf.path}: no samples with filter {flt!r} (filters: {have}); choose one with filter=")
    if met is None:
        met = _default_lm_metric(ref, flt)
    for d, tf in parsed:
        for lineno, doc, values in tf.filters[flt]:
            v = values.get(met, _ABSENT)
            if not isinstance(v, float):  # absent, or not a per-sample number
                numeric = [k for k, x in values.items() if not isinstance(x, _NotANumber)]
                what = "no metric" if v is _ABSENT else "a metric that is not a per-sample number (corpus-level?):"
                raise VotebenchError(f"{tf.path}: line {lineno}: {what} {met!r}; per-sample metrics: {short_list(numeric)}")
            rows.append((system_of[d], task, str(doc), float(v)))
    return met, flt


def _direction(task: str, met: str, results: list[tuple[Path | None, Mapping[str, Any]]]) -> bool:
    """Higher is better for ``met`` on ``task``: what the results files say, else :data:`LM_EVAL_LOWER_IS_BETTER`.

    Raises
    ------
    VotebenchError
        Two results files that disagree (one line naming the task, the metric and both files).
    """
    said: tuple[Path | None, bool] | None = None
    for path, info in results:
        declared = info.get("higher_is_better")
        entry = declared.get(task) if isinstance(declared, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get(met), bool):
            if said is not None and said[1] != entry[met]:
                raise VotebenchError(
                    f"task {task!r}: the results files disagree on the direction of {met!r}: {said[0]} says higher_is_better "
                    f"{str(said[1]).lower()}, {path} says {str(entry[met]).lower()}; fix one of them")
            said = (path, entry[met])
    return said[1] if said is not None else met not in LM_EVAL_LOWER_IS_BETTER


def _default_lm_metric(tf: _TaskFile, flt: str) -> str:
    lineno, _, values = tf.filters[flt][0]
    numeric = [k for k, v in values.items() if not isinstance(v, _NotANumber)]
    listed = tf.listed.get(flt)
    if listed is not None:
        for k in listed:
            if k in numeric:
                return k
    elif "acc" in numeric:
        return "acc"
    elif numeric:
        return numeric[0]
    have = short_list(list(values))
    raise VotebenchError(f"{tf.path}: line {lineno}: no per-sample numeric metric (metrics: {have}); choose one with metric=")




# --------------------------------------------------------------------------------------------
# recognising the outputs
# --------------------------------------------------------------------------------------------
def detect_directory_format(path: str | Path) -> str | None:
    """``"lm-eval"`` or ``"helm"`` for a folder holding such outputs, else None.

    Raises
    ------
    VotebenchError
        When the folder holds both kinds (pass ``format=`` to choose).
    """
    root = Path(path)
    lm = any(f.is_file() and _SAMPLES_RE.match(f.name) for f in root.rglob("samples_*"))
    helm = has_helm_stats(root)
    if lm and helm:
        raise VotebenchError(f"{root}: holds both lm-evaluation-harness samples and HELM per_instance_stats.json; choose with format=")
    return "lm-eval" if lm else "helm" if helm else None


def looks_like_lm_eval_samples(path: str | Path) -> bool:
    """True for an lm-eval ``samples_*.jsonl`` file (by name, or a first line with ``doc_id`` and ``filtered_resps``)."""
    p = Path(path)
    if _SAMPLES_RE.match(p.name):
        return True
    try:
        for _, obj in json_lines(p):
            return "doc_id" in obj and ("filtered_resps" in obj or "resps" in obj) and "score" not in obj
    except VotebenchError:
        return False
    return False


def guess_lm_eval(path: Path) -> bool:
    """A folder holding ``samples_*.jsonl`` files.

    Raises
    ------
    VotebenchError
        For one samples file (one model's results: open the folder of model
        folders), or a folder that also holds HELM outputs.
    """
    if path.is_file():
        if path.name.lower().endswith((".jsonl", ".jsonl.gz")) and looks_like_lm_eval_samples(path):
            raise VotebenchError(
                f"{path}: an lm-evaluation-harness samples file holds one model's results; "
                "open the folder that holds several model folders (or pass format='jsonl' for a generic score file)"
            )
        return False
    return path.is_dir() and detect_directory_format(path) == "lm-eval"
