"""Readers for real evaluation outputs: lm-evaluation-harness, HELM and a generic JSONL.

Each reader returns the canonical score tensor of :mod:`engine.io` (dims
``(system, task, instance)``, ``NaN`` = missing, coordinates ``higher_is_better``
and ``group``), built with :func:`engine.io.scores_from_array`.
:func:`engine.open_scores` calls them for ``.jsonl`` files and for directories
that are not zarr stores; they can also be called directly.

Formats
-------
* **lm-evaluation-harness** (``lm_eval --log_samples --output_path OUT``):
  ``OUT/<model_name_sanitized>/samples_<task>_<date>.jsonl``, one JSON object per
  evaluated document (``doc_id``, ``filter``, ``metrics`` and one key per metric),
  beside ``results_<date>.json``.  System = model folder, task = ``<task>``,
  instance = ``doc_id``.  See :func:`read_lm_eval`.
* **HELM** (``helm-run``): ``benchmark_output/runs/<suite>/<run name>/per_instance_stats.json``
  (a list of ``{instance_id, train_trial_index, [perturbation], stats: [{name: {name, split,
  [sub_split], [perturbation]}, count, sum, mean, ...}]}``) beside ``run_spec.json``.
  System = ``adapter_spec.model``, task = the run name without its ``model=`` part,
  instance = ``instance_id``.  See :func:`read_helm`.
* **generic JSONL**: one object per line with keys ``system``, ``task``,
  ``instance`` (optional) and ``score``.  See :func:`read_jsonl`.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .errors import VotebenchError
from .io import _reading_text, scores_from_array

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

#: the values of ``open_scores(format=...)``
FORMATS = ("wide", "long", "lm-eval", "helm", "jsonl")

#: lm-eval metrics for which lower is better (all others: higher); a task's own
#: ``results_<date>.json`` ``higher_is_better`` entry takes precedence
LM_EVAL_LOWER_IS_BETTER = frozenset(
    {"perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte", "brier_score", "ter"}
)

#: HELM metric names for which lower is better (all others: higher); names starting
#: with ``bias_metric:`` are lower-is-better too
HELM_LOWER_IS_BETTER = frozenset(
    {
        "inference_runtime",
        "inference_denoised_runtime",
        "inference_idealized_runtime",
        "batch_request_runtime",
        "training_co2_cost",
        "training_energy_cost",
        "perplexity",
        "bits_per_byte",
        "ece_1_bin",
        "ece_10_bin",
        "toxic_frac",
        "expected_max_toxicity",
        "max_toxicity_probability",
    }
)

#: HELM metrics tried in this order when no ``metric`` is given
HELM_DEFAULT_METRICS = (
    "exact_match",
    "quasi_exact_match",
    "prefix_exact_match",
    "quasi_prefix_exact_match",
    "f1_score",
    "rouge_l",
    "rouge_2",
    "bleu_4",
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


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------
def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for every non-blank line of a (gzipped) JSONL file."""
    opener: Any = gzip.open if path.name.lower().endswith(".gz") else open
    with _reading_text(path), opener(path, "rt", encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise VotebenchError(f"{path}: line {lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise VotebenchError(f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def _read_json(path: Path, what: str) -> Any:
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise VotebenchError(f"{path}: not a valid {what} JSON file ({exc})") from None
    except OSError as exc:
        raise VotebenchError(f"{path}: cannot read file ({exc.strerror or exc})") from None


def _label(value: Any) -> str | None:
    """A system/task/instance label from JSON: a non-empty string or an integer."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value).strip()
    return text or None


def _per_task_option(option: Any, task: str) -> Any:
    return option.get(task) if isinstance(option, Mapping) else option


def _check_mapping_tasks(option: Any, tasks: list[str], name: str, source: Path) -> None:
    if isinstance(option, Mapping):
        unknown = sorted(set(map(str, option)) - set(tasks))
        if unknown:
            raise VotebenchError(f"{source}: {name} names unknown task(s): {', '.join(unknown[:5])} (tasks: {_short(tasks)})")


def _short(items: list[str], n: int = 8) -> str:
    items = list(items)
    return ", ".join(items[:n]) + (f", ... ({len(items)} in all)" if len(items) > n else "") if items else "none"


def _natural_key(label: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(label)))


def _assemble(
    rows: list[tuple[str, str, str, float]],
    *,
    source: Path,
    systems: list[str],
    tasks: list[str],
    sort_instances: bool = True,
    higher_is_better: Mapping[str, bool] | None = None,
    groups: Mapping[str, str] | None = None,
    attrs: Mapping[str, Any] | None = None,
) -> xr.DataArray:
    """Unique long rows (system, task, instance label, score) -> canonical tensor.

    Systems and tasks keep the given order; instances are the union of the labels,
    in natural order (``2`` before ``10``, ``id2`` before ``id10``) or, with
    ``sort_instances=False``, in order of first appearance; integer labels become ints.
    """
    if not rows:
        raise VotebenchError(f"{source}: no score rows")
    labels = list(dict.fromkeys(r[2] for r in rows))
    if sort_instances:
        labels.sort(key=_natural_key)
    s_pos = {s: n for n, s in enumerate(systems)}
    t_pos = {t: n for n, t in enumerate(tasks)}
    i_pos = {k: n for n, k in enumerate(labels)}
    buf = np.full((len(tasks), len(labels), len(systems)), np.nan)
    for system, task, inst, value in rows:
        if math.isinf(value):
            raise VotebenchError(f"{source}: score of system {system!r} on task {task!r}, instance {inst!r} is not finite ({value})")
        buf[t_pos[task], i_pos[inst], s_pos[system]] = value
    empty = np.isnan(buf).all(axis=(1, 2))
    if empty.any():
        raise VotebenchError(f"{source}: task {tasks[int(np.argmax(empty))]!r} has no scores (all missing)")
    instances: list[Any] = labels
    if all(re.fullmatch(r"-?\d+", k) for k in labels) and len({int(k) for k in labels}) == len(labels):
        instances = [int(k) for k in labels]
    return scores_from_array(
        buf, systems=systems, tasks=tasks, instances=instances, higher_is_better=dict(higher_is_better or {}),
        groups=dict(groups or {}), attrs=attrs, layout="system-last",
    )


def _need_two(systems: list[str], source: Path, what: str, hint: str) -> None:
    if len(systems) < 2:
        raise VotebenchError(f"{source}: {what} of only {len(systems)} system ({_short(systems)}); {hint}")


# --------------------------------------------------------------------------------------------
# generic JSONL
# --------------------------------------------------------------------------------------------
def _json_number(value: Any) -> float | None:
    """A score from JSON: number, true/false (1/0) or null (missing); None if not a number."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        return float(value)
    return None


def read_jsonl(path: str | Path) -> xr.DataArray:
    """Read a generic JSONL score file: one ``{"system", "task", "instance", "score"}`` object per line.

    Parameters
    ----------
    path : str or path-like
        ``.jsonl`` or ``.jsonl.gz``.  ``instance`` is optional (task-level scores),
        but then no line may have it.  ``score`` is a JSON number, ``true``/``false``
        (1/0) or ``null`` (missing).  Other keys are ignored.  Blank lines are skipped.

    Returns
    -------
    xarray.DataArray
        The canonical ``scores`` tensor; systems, tasks and instances in order of
        first appearance, every task higher-is-better (use a sidecar for directions).

    Raises
    ------
    VotebenchError
        A line that is not a JSON object (with its line number), a missing key, an
        empty name, a non-numeric score, a duplicate (system, task, instance), fewer
        than two systems.
    """
    p = Path(path)
    rows: list[tuple[str, str, str, float]] = []
    first_line: dict[tuple[str, str, str], int] = {}
    has_instance: bool | None = None
    for lineno, obj in _json_lines(p):
        if has_instance is None:
            has_instance = "instance" in obj
        keys = ("system", "task", "instance", "score") if has_instance else ("system", "task", "score")
        missing = [k for k in keys if k not in obj]
        if missing:
            extra = " (earlier lines have it)" if missing == ["instance"] else ""
            raise VotebenchError(f"{p}: line {lineno}: missing key {missing[0]!r}{extra}; keys are system, task, [instance,] score")
        if not has_instance and "instance" in obj:
            raise VotebenchError(f"{p}: line {lineno}: key 'instance' appears, but the first line has none")
        names = []
        for k in keys[:-1]:
            lab = _label(obj[k])
            if lab is None:
                raise VotebenchError(f"{p}: line {lineno}: {k} must be a non-empty string or integer, got {obj[k]!r}")
            names.append(lab)
        score = _json_number(obj["score"])
        if score is None:
            raise VotebenchError(f"{p}: line {lineno}: score {obj['score']!r} is not a number")
        if math.isinf(score):
            raise VotebenchError(f"{p}: line {lineno}: score {obj['score']!r} is not a finite number")
        key = (names[0], names[1], names[2] if has_instance else "0")
        if key in first_line:
            inst = f", instance {key[2]!r}" if has_instance else ""
            raise VotebenchError(
                f"{p}: line {lineno}: duplicate entry for system {key[0]!r}, task {key[1]!r}{inst} (first on line {first_line[key]})"
            )
        first_line[key] = lineno
        rows.append((key[0], key[1], key[2], score))
    if not rows:
        raise VotebenchError(f"{p}: no score rows")
    systems = list(dict.fromkeys(r[0] for r in rows))
    tasks = list(dict.fromkeys(r[1] for r in rows))
    _need_two(systems, p, "scores", "ranking needs at least two systems")
    da = _assemble(rows, source=p, systems=systems, tasks=tasks, sort_instances=False)
    da.attrs["format"] = "jsonl"
    return da


# --------------------------------------------------------------------------------------------
# lm-evaluation-harness
# --------------------------------------------------------------------------------------------
def _lm_eval_number(key: str, value: Any) -> float | _NotANumber:
    """One per-sample metric value as a number (see :func:`read_lm_eval` for the conversions)."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        v = float(value)
        return math.exp(-v) if key == "perplexity" else v
    if (
        key in ("word_perplexity", "byte_perplexity", "bits_per_byte")
        and isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)
    ):
        ll, weight = float(value[0]), float(value[1])
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
    for lineno, obj in _json_lines(path):
        if "doc_id" not in obj:
            raise VotebenchError(f"{path}: line {lineno}: missing key 'doc_id' (not an lm-evaluation-harness sample line)")
        doc = obj["doc_id"]
        if _label(doc) is None:
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
        values = {k: _lm_eval_number(k, obj[k]) for k in names if k in obj}
        if flt not in tf.filters:
            tf.filters[flt] = []
            tf.listed[flt] = listed
        tf.filters[flt].append((lineno, doc, values))
    if not tf.filters:
        raise VotebenchError(f"{path}: no samples")
    return tf


def _results_info(folder: Path, date: str | None) -> dict[str, Any]:
    """The ``results_<date>.json`` matching a samples file (else the newest one); {} when none."""
    exact = folder / f"results_{date}.json" if date else None
    if exact is not None and exact.is_file():
        chosen = exact
    else:
        found = sorted(folder.glob("results_*.json"))
        if not found:
            return {}
        chosen = found[-1]
    data = _read_json(chosen, "lm-evaluation-harness results")
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
    files = [root] if root.is_file() else sorted(f for f in root.rglob("samples_*") if f.is_file() and _SAMPLES_RE.match(f.name))
    if not files:
        raise VotebenchError(f"{root}: no lm-evaluation-harness samples_<task>_<date>.jsonl files found")

    # newest file per (folder, task)
    newest: dict[tuple[Path, str], tuple[str, Path]] = {}
    for f in files:
        m = _SAMPLES_RE.match(f.name)
        task, date = (m["task"], m["date"] or "") if m else (f.stem, "")
        key = (f.parent, task)
        if key not in newest or (date, str(f)) > (newest[key][0], str(newest[key][1])):
            newest[key] = (date, f)
    folders = sorted({k[0] for k in newest})
    results = {d: _results_info(d, max(v[0] for k, v in newest.items() if k[0] == d) or None) for d in folders}

    def rel(d: Path) -> str:
        r = d.relative_to(root).as_posix() if d != root and root.is_dir() else d.name
        return r or d.name

    names = {d: _model_name(results[d]) or d.name for d in folders}
    counts = Counter(names.values())
    system_of = {d: (rel(d) if counts[names[d]] > 1 else names[d]) for d in folders}
    systems = [system_of[d] for d in folders]
    _need_two(systems, root, "lm-evaluation-harness samples", "point at the folder that holds several model folders")

    tasks = sorted({k[1] for k in newest})
    _check_mapping_tasks(metric, tasks, "metric", root)
    _check_mapping_tasks(filter, tasks, "filter", root)
    top_groups = {d: _top_groups(results[d]) for d in folders}

    rows: list[tuple[str, str, str, float]] = []
    chosen_metric: dict[str, str] = {}
    chosen_filter: dict[str, str] = {}
    hib: dict[str, bool] = {}
    groups: dict[str, str] = {}
    for task in tasks:
        parsed = [(d, _parse_samples(newest[(d, task)][1])) for d in folders if (d, task) in newest]
        ref = parsed[0][1]
        flt = _per_task_option(filter, task)
        if flt is None:
            flt = "none" if "none" in ref.filters else next(iter(ref.filters))
        met = _per_task_option(metric, task)
        for _, tf in parsed:
            if flt not in tf.filters:
                have = _short(list(tf.filters))
                raise VotebenchError(f"{tf.path}: no samples with filter {flt!r} (filters: {have}); choose one with filter=")
        if met is None:
            met = _default_lm_metric(ref, flt)
        for d, tf in parsed:
            for lineno, doc, values in tf.filters[flt]:
                v = values.get(met, _ABSENT)
                if v is _ABSENT or isinstance(v, _NotANumber):
                    numeric = [k for k, x in values.items() if not isinstance(x, _NotANumber)]
                    what = "no metric" if v is _ABSENT else "a metric that is not a per-sample number (corpus-level?):"
                    raise VotebenchError(f"{tf.path}: line {lineno}: {what} {met!r}; per-sample metrics: {_short(numeric)}")
                rows.append((system_of[d], task, str(doc), float(v)))
        chosen_metric[task], chosen_filter[task] = met, flt
        hib[task] = met not in LM_EVAL_LOWER_IS_BETTER
        for d, _ in parsed:
            declared = results[d].get("higher_is_better")
            entry = declared.get(task) if isinstance(declared, dict) else None
            if isinstance(entry, dict) and isinstance(entry.get(met), bool):
                hib[task] = entry[met]
                break
        groups.update(next(({task: top_groups[d][task]} for d, _ in parsed if task in top_groups[d]), {}))
    attrs = {"format": "lm-eval", "metric": json.dumps(chosen_metric, sort_keys=True),
             "filter": json.dumps(chosen_filter, sort_keys=True)}
    return _assemble(rows, source=root, systems=systems, tasks=tasks, higher_is_better=hib, groups=groups, attrs=attrs)


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
    have = _short(list(values))
    raise VotebenchError(f"{tf.path}: line {lineno}: no per-sample numeric metric (metrics: {have}); choose one with metric=")


# --------------------------------------------------------------------------------------------
# HELM
# --------------------------------------------------------------------------------------------
def _helm_task(name: str) -> str:
    """Run name without its ``model=`` / ``model_deployment=`` arguments."""
    scenario, sep, args = name.partition(":")
    if not sep:
        return name
    kept = [a for a in args.split(",") if a and not a.startswith(("model=", "model_deployment="))]
    return scenario + (":" + ",".join(kept) if kept else "")


def _helm_model_from_name(name: str) -> str | None:
    m = re.search(r"(?:^|[:,])model=([^,]+)", name)
    return m.group(1) if m else None


def _stat_value(stat: Mapping[str, Any]) -> float:
    mean = stat.get("mean")
    if isinstance(mean, (int, float)) and not isinstance(mean, bool):
        return float(mean)
    count, total = stat.get("count"), stat.get("sum")
    if isinstance(count, (int, float)) and isinstance(total, (int, float)) and count > 0:
        return float(total) / float(count)
    return math.nan


def _pert_name(pert: Any) -> str | None:
    if pert is None:
        return None
    if isinstance(pert, dict):
        return str(pert.get("name"))
    return str(pert)


@dataclass
class _HelmRun:
    folder: Path
    system: str
    task: str
    group: str
    # metric -> split (None = no split recorded) -> instance id -> values over train trials
    stats: dict[str, dict[str | None, dict[str, list[float]]]] = field(default_factory=dict)


def _read_helm_run(stats_file: Path, perturbation: str | None) -> _HelmRun:
    folder = stats_file.parent
    spec_file = folder / "run_spec.json"
    spec = _read_json(spec_file, "HELM run_spec") if spec_file.is_file() else {}
    if not isinstance(spec, dict):
        raise VotebenchError(f"{spec_file}: a HELM run_spec.json must hold a JSON object")
    name = spec.get("name") if isinstance(spec.get("name"), str) else folder.name
    adapter = spec.get("adapter_spec") if isinstance(spec.get("adapter_spec"), dict) else {}
    model = adapter.get("model") if isinstance(adapter.get("model"), str) else None
    model = model or _helm_model_from_name(name) or _helm_model_from_name(folder.name)
    if not model:
        raise VotebenchError(f"{folder}: cannot tell the model (no run_spec.json adapter_spec.model and no 'model=' in the run name)")
    task = _helm_task(name)
    spec_groups = spec.get("groups")
    group = str(spec_groups[0]) if isinstance(spec_groups, list) and spec_groups else task.partition(":")[0]
    run = _HelmRun(folder, model, task, group)

    data = _read_json(stats_file, "HELM per_instance_stats")
    if not isinstance(data, list):
        raise VotebenchError(f"{stats_file}: not a HELM per-instance stats list (top level is a {type(data).__name__})")
    trials: set[tuple[str, Any]] = set()
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or "instance_id" not in entry or not isinstance(entry.get("stats"), list):
            raise VotebenchError(
                f"{stats_file}: entry {i} is not a HELM per-instance stats object (needs 'instance_id' and a 'stats' list)"
            )
        if _pert_name(entry.get("perturbation")) != perturbation:
            continue
        inst = _label(entry["instance_id"])
        if inst is None:
            raise VotebenchError(f"{stats_file}: entry {i}: instance_id must be a string or integer, got {entry['instance_id']!r}")
        trial = entry.get("train_trial_index", 0)
        if isinstance(trial, bool) or not isinstance(trial, int):
            raise VotebenchError(f"{stats_file}: entry {i}: train_trial_index must be an integer, got {trial!r}")
        if (inst, trial) in trials:
            raise VotebenchError(f"{stats_file}: entry {i}: duplicate instance_id {inst!r} for train trial {trial!r}")
        trials.add((inst, trial))
        per_entry: set[tuple[str, str | None]] = set()
        for stat in entry["stats"]:
            sname = stat.get("name") if isinstance(stat, dict) else None
            if not isinstance(sname, dict) or not isinstance(sname.get("name"), str):
                raise VotebenchError(f"{stats_file}: entry {i}: a stat without a {{'name': {{'name': ...}}}} object")
            if _pert_name(sname.get("perturbation")) != perturbation:
                continue
            split = sname.get("split") if isinstance(sname.get("split"), str) else None
            key = (sname["name"], split)
            if key in per_entry:  # the same stat twice in one entry (two metric classes emit it): keep the first
                continue
            per_entry.add(key)
            run.stats.setdefault(sname["name"], {}).setdefault(split, {}).setdefault(inst, []).append(_stat_value(stat))
    return run


def read_helm(
    path: str | Path,
    *,
    metric: str | Mapping[str, str] | None = None,
    split: str | Mapping[str, str] | None = None,
    perturbation: str | None = None,
) -> xr.DataArray:
    """Read HELM per-instance results (``per_instance_stats.json`` of several runs).

    Parameters
    ----------
    path : str or path-like
        A folder searched recursively for ``per_instance_stats.json`` (typically
        ``benchmark_output/runs/<suite>``); each file's folder is one run.  System =
        ``adapter_spec.model`` of the ``run_spec.json`` beside it (else the ``model=``
        part of the run name); task = the run name (``run_spec.json`` ``name``, else the
        folder name) without its ``model=`` / ``model_deployment=`` arguments, e.g.
        ``mmlu:subject=anatomy,method=multiple_choice_joint``; group = the run spec's
        first ``groups`` entry, else the scenario name.
    metric : str or mapping task -> str, optional
        The stat (``name.name``) that scores each task.  Default: the first of
        :data:`HELM_DEFAULT_METRICS` that the task has.
    split : str or mapping task -> str, optional
        The stats' ``split``.  Default (and for tasks missing from a mapping):
        ``"test"``, falling back to ``"valid"``, then to stats with no split, per task.
    perturbation : str, optional
        Read the instances and stats of this perturbation (``perturbation.name``,
        e.g. ``"typos"``) instead of the unperturbed ones; runs without it are left
        out.  Default: perturbed instances and stats are ignored.

    Returns
    -------
    xarray.DataArray
        The canonical ``scores`` tensor: instance = ``instance_id``; a stat's value is
        its ``mean`` (else ``sum / count``; ``count == 0`` is missing), averaged over
        ``train_trial_index``.  ``higher_is_better`` is False for the metrics in
        :data:`HELM_LOWER_IS_BETTER` and ``bias_metric:*``, else True.  Attributes
        ``metric`` and ``split`` (JSON task -> name) record the choices.

    Raises
    ------
    VotebenchError
        No ``per_instance_stats.json``, a file that is not a list of per-instance
        stats, a run whose model is unknown, two runs of one model on one task, a
        metric or split a run lacks (the message lists the available ones), fewer
        than two models.
    """
    root = Path(path)
    if not root.exists():
        raise VotebenchError(f"{root}: no such file or directory")
    files = [root] if root.is_file() else sorted(root.rglob("per_instance_stats.json"))
    if not files:
        raise VotebenchError(f"{root}: no HELM per_instance_stats.json files found")
    runs = [_read_helm_run(f, perturbation) for f in files]
    if perturbation is not None:  # runs without data augmentation have no instances of it
        runs = [r for r in runs if r.stats]
        if not runs:
            raise VotebenchError(f"{root}: no run has instances with perturbation {perturbation!r}")
    seen: dict[tuple[str, str], Path] = {}
    for run in runs:
        key = (run.system, run.task)
        if key in seen:
            raise VotebenchError(
                f"{root}: runs {seen[key]} and {run.folder} both hold model {run.system!r} on task {run.task!r}; point at one suite"
            )
        seen[key] = run.folder
    systems = sorted({r.system for r in runs})
    _need_two(systems, root, "HELM runs", "point at the suite folder that holds runs of several models")
    tasks = sorted({r.task for r in runs})
    _check_mapping_tasks(metric, tasks, "metric", root)
    _check_mapping_tasks(split, tasks, "split", root)

    rows: list[tuple[str, str, str, float]] = []
    chosen_metric: dict[str, str] = {}
    chosen_split: dict[str, str | None] = {}
    hib: dict[str, bool] = {}
    groups: dict[str, str] = {}
    for task in tasks:
        task_runs = [r for r in runs if r.task == task]
        available = sorted({m for r in task_runs for m in r.stats})
        met = _per_task_option(metric, task)
        if met is None:
            met = next((m for m in HELM_DEFAULT_METRICS if m in available), None)
            if met is None:
                raise VotebenchError(
                    f"{task_runs[0].folder}: none of the default metrics {', '.join(HELM_DEFAULT_METRICS[:3])}, ...; "
                    f"choose one with metric= (available: {_short(available, 12)})"
                )
        for r in task_runs:
            if met not in r.stats:
                raise VotebenchError(f"{r.folder}: no stat {met!r} (available: {_short(sorted(r.stats), 12)})")
        splits = {s for r in task_runs for s in r.stats[met]}
        spl: str | None = _per_task_option(split, task)
        asked = spl is not None
        if not asked:
            spl = next((s for s in ("test", "valid") if s in splits), None)
        for r in task_runs:
            if spl not in r.stats[met]:
                have = ", ".join(sorted(str(s) for s in r.stats[met]))
                wanted = repr(spl) if asked or spl is not None else "'test' or 'valid'"
                raise VotebenchError(f"{r.folder}: stat {met!r} has no split {wanted} (splits: {have}); choose one with split=")
            for inst, values in r.stats[met][spl].items():
                finite = [v for v in values if not math.isnan(v)]
                rows.append((r.system, task, inst, sum(finite) / len(finite) if finite else math.nan))
        chosen_metric[task], chosen_split[task] = met, spl
        hib[task] = not (met in HELM_LOWER_IS_BETTER or met.startswith("bias_metric:"))
        groups[task] = task_runs[0].group
    attrs = {"format": "helm", "metric": json.dumps(chosen_metric, sort_keys=True), "split": json.dumps(chosen_split, sort_keys=True)}
    if perturbation is not None:
        attrs["perturbation"] = perturbation
    return _assemble(rows, source=root, systems=systems, tasks=tasks, higher_is_better=hib, groups=groups, attrs=attrs)


# --------------------------------------------------------------------------------------------
# detection
# --------------------------------------------------------------------------------------------
def parse_task_option(text: str | None) -> str | dict[str, str] | None:
    """Parse a command-line value of ``--metric`` / ``--filter`` / ``--split``.

    ``"acc"`` -> ``"acc"`` (every task); ``"arc_easy=acc_norm,gsm8k=exact_match"`` ->
    ``{"arc_easy": "acc_norm", "gsm8k": "exact_match"}`` (other tasks: the default).
    ``None`` or blank -> None.
    """
    if text is None or not text.strip():
        return None
    if "=" not in text:
        return text.strip()
    out: dict[str, str] = {}
    for item in text.split(","):
        task, sep, value = item.partition("=")
        if not sep or not task.strip() or not value.strip():
            raise VotebenchError(f"{text!r}: expected NAME or TASK=NAME[,TASK=NAME...]")
        out[task.strip()] = value.strip()
    return out


def _check_table_shape(path: Path, shape: str, kind: str) -> None:
    """``open_scores(format="wide"|"long")``: the CSV / Parquet header must have that shape."""
    if kind not in ("csv", "parquet"):
        raise VotebenchError(f"{path}: format {shape!r} needs a CSV or Parquet file, got {kind} input")
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            header = [str(c) for c in pq.read_schema(path).names]
        else:
            opener: Any = gzip.open if path.name.lower().endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
                header = next(csv.reader([fh.readline()]), [])
    except Exception:  # unreadable: the table reader reports the problem in its own words
        return
    names = {h.strip().lower() for h in header}
    is_long = {"system", "task", "score"} <= names and names <= {"system", "task", "instance", "score"}
    if shape == "long" and not is_long:
        raise VotebenchError(f"{path}: format 'long' needs the columns system, task, [instance,] score; found {_short(header)}")
    if shape == "wide" and is_long:
        raise VotebenchError(f"{path}: format 'wide' given, but the columns {_short(header)} are those of a long table")


def detect_directory_format(path: str | Path) -> str | None:
    """``"lm-eval"`` or ``"helm"`` for a folder holding such outputs, else None.

    Raises
    ------
    VotebenchError
        When the folder holds both kinds (pass ``format=`` to choose).
    """
    root = Path(path)
    lm = any(f.is_file() and _SAMPLES_RE.match(f.name) for f in root.rglob("samples_*"))
    helm = any(root.rglob("per_instance_stats.json"))
    if lm and helm:
        raise VotebenchError(f"{root}: holds both lm-evaluation-harness samples and HELM per_instance_stats.json; choose with format=")
    return "lm-eval" if lm else "helm" if helm else None


def _looks_like_lm_eval_samples(path: str | Path) -> bool:
    """True for an lm-eval ``samples_*.jsonl`` file (by name, or a first line with ``doc_id`` and ``filtered_resps``)."""
    p = Path(path)
    if _SAMPLES_RE.match(p.name):
        return True
    try:
        for _, obj in _json_lines(p):
            return "doc_id" in obj and ("filtered_resps" in obj or "resps" in obj) and "score" not in obj
    except VotebenchError:
        return False
    return False
