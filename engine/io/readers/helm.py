"""Reader of HELM per-instance results (``helm-run``).

``benchmark_output/runs/<suite>/<run name>/per_instance_stats.json`` (a list of
``{instance_id, train_trial_index, [perturbation], stats: [{name: {name, split,
[sub_split], [perturbation]}, count, sum, mean, ...}]}``) beside ``run_spec.json``.
System = ``adapter_spec.model``, task = the run name without its ``model=`` part,
instance = ``instance_id``.  See :func:`read_helm`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import xarray as xr

from engine.errors import VotebenchError
from engine.io.readers.common import assemble, check_mapping_tasks, label, need_two, per_task_option, read_json, short_list
from engine.limits import as_float

__all__ = ["guess_helm", "HELM_DEFAULT_METRICS", "HELM_LOWER_IS_BETTER", "has_helm_stats", "read_helm"]

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


def _stat_value(stat: Mapping[str, Any], where: str) -> float:
    """A stat's mean (or sum / count); an integer beyond float64 is refused in one line naming ``where``."""
    mean = stat.get("mean")
    if isinstance(mean, (int, float)) and not isinstance(mean, bool):
        return mean if isinstance(mean, float) else as_float(mean, where, "stat mean")
    count, total = stat.get("count"), stat.get("sum")
    if isinstance(count, (int, float)) and isinstance(total, (int, float)) and count > 0:
        if isinstance(count, int) and isinstance(total, int):  # exact, whatever their size
            return as_float(Fraction(total, count), where, "stat sum / count")
        return as_float(as_float(total, where, "stat sum") / as_float(count, where, "stat count"), where, "stat sum / count")
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
    spec = read_json(spec_file, "HELM run_spec") if spec_file.is_file() else {}
    if not isinstance(spec, dict):
        raise VotebenchError(f"{spec_file}: a HELM run_spec.json must hold a JSON object")
    name: str = spec["name"] if isinstance(spec.get("name"), str) else folder.name
    adapter: dict[str, Any] = spec["adapter_spec"] if isinstance(spec.get("adapter_spec"), dict) else {}
    model: str | None = adapter["model"] if isinstance(adapter.get("model"), str) else None
    model = model or _helm_model_from_name(name) or _helm_model_from_name(folder.name)
    if not model:
        raise VotebenchError(f"{folder}: cannot tell the model (no run_spec.json adapter_spec.model and no 'model=' in the run name)")
    task = _helm_task(name)
    spec_groups = spec.get("groups")
    group = str(spec_groups[0]) if isinstance(spec_groups, list) and spec_groups else task.partition(":")[0]
    run = _HelmRun(folder, model, task, group)

    data = read_json(stats_file, "HELM per_instance_stats")
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
        inst = label(entry["instance_id"])
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
            value = _stat_value(stat, f"{stats_file}: entry {i}")
            run.stats.setdefault(sname["name"], {}).setdefault(split, {}).setdefault(inst, []).append(value)
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
    runs = _load_runs(root, perturbation)
    systems = sorted({r.system for r in runs})
    need_two(systems, root, "HELM runs", "point at the suite folder that holds runs of several models")
    tasks = sorted({r.task for r in runs})
    check_mapping_tasks(metric, tasks, "metric", root)
    check_mapping_tasks(split, tasks, "split", root)
    rows: list[tuple[str, str, str, float]] = []
    chosen_metric: dict[str, str] = {}
    chosen_split: dict[str, str | None] = {}
    hib: dict[str, bool] = {}
    groups: dict[str, str] = {}
    for task in tasks:
        task_runs = [r for r in runs if r.task == task]
        met, spl = _task_rows(rows, task, task_runs, per_task_option(metric, task), per_task_option(split, task))
        chosen_metric[task], chosen_split[task] = met, spl
        hib[task] = not (met in HELM_LOWER_IS_BETTER or met.startswith("bias_metric:"))
        groups[task] = task_runs[0].group
    attrs = {"format": "helm", "metric": json.dumps(chosen_metric, sort_keys=True), "split": json.dumps(chosen_split, sort_keys=True)}
    if perturbation is not None:
        attrs["perturbation"] = perturbation
    return assemble(rows, source=root, systems=systems, tasks=tasks, higher_is_better=hib, groups=groups, attrs=attrs)


def _load_runs(root: Path, perturbation: str | None) -> list[_HelmRun]:
    """The runs under ``root`` (those with instances of ``perturbation`` when given), at most one per (model, task)."""
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
    return runs


def _task_rows(rows: list[tuple[str, str, str, float]], task: str, task_runs: list[_HelmRun], met: str | None,
               spl: str | None) -> tuple[str, str | None]:
    """Append the rows of ``task`` (every run's instances, train trials averaged) to ``rows``; return the metric and split."""
    available = sorted({m for r in task_runs for m in r.stats})
    if met is None:
        met = next((m for m in HELM_DEFAULT_METRICS if m in available), None)
        if met is None:
            raise VotebenchError(
                f"{task_runs[0].folder}: none of the default metrics {', '.join(HELM_DEFAULT_METRICS[:3])}, ...; "
                f"choose one with metric= (available: {short_list(available, 12)})"
            )
    for r in task_runs:
        if met not in r.stats:
            raise VotebenchError(f"{r.folder}: no stat {met!r} (available: {short_list(sorted(r.stats), 12)})")
    splits = {s for r in task_runs for s in r.stats[met]}
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
    return met, spl


def has_helm_stats(path: Path) -> bool:
    """Whether a folder holds a ``per_instance_stats.json`` (at any depth)."""
    return any(path.rglob("per_instance_stats.json"))


def guess_helm(path: Path) -> bool:
    """A folder holding HELM ``per_instance_stats.json`` (the registry's guess)."""
    return path.is_dir() and has_helm_stats(path)
