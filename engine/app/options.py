"""Options shared by several sub-commands: how INPUT is read, the aggregation options, the cluster.

Each ``add_*`` function adds a group of flags to a sub-command's parser; the matching functions
turn the parsed flags into the keyword arguments of the engine function the command calls.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from engine.errors import VotebenchError
from engine.io.readers import parse_task_option, reader_choices, reader_names
from engine.labelled.core import MISSING_POLICIES
from engine.rules import LEVELS, rule_choices

__all__ = ["FORMATS", "SCHEDULER_HELP", "add_direction_options", "add_scheduler_option", "cluster",
           "add_input_options", "add_inputs", "add_output_options",
           "add_progress_option", "add_rank_options", "progress_shown", "connect", "each_input",
           "load_scores", "loader_options", "lower_list", "naming", "parse_value", "per_input", "rank_options",
           "read_weights"]

T = TypeVar("T")

#: output formats of ``rank`` and ``bootstrap``
FORMATS = ("table", "json", "csv")
SCHEDULER_HELP = ("address of a running dask scheduler, e.g. tcp://10.0.0.5:8786 (default: DASK_SCHEDULER_ADDRESS, "
                  "else an in-process scheduler); the workers read INPUT by its path or URL")


def add_scheduler_option(r: argparse.ArgumentParser, runs: str) -> None:
    """``--scheduler ADDRESS``; ``runs`` says what of the command runs on the cluster (the rest runs here)."""
    r.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running dask scheduler, e.g. tcp://10.0.0.5:8786 (default: DASK_SCHEDULER_ADDRESS, "
                   f"else everything runs in this process); on the cluster: {runs}. The results are the same either way")


@contextlib.contextmanager
def cluster(args: argparse.Namespace) -> Iterator[Any | None]:
    """The client of ``--scheduler`` / ``DASK_SCHEDULER_ADDRESS`` (``None``: none given), current for the engine
    inside the block (:func:`engine.distributed.on_cluster`) and closed afterwards."""
    client = connect(getattr(args, "scheduler", None))
    if client is None:
        yield None
        return
    import dask

    from engine.distributed.cluster import on_cluster

    try:  # blocks of the engine (on_cluster) and dask collections (a store's chunks) computed on the cluster
        with on_cluster(client), dask.config.set(scheduler=client):
            yield client
    finally:
        client.close()


def add_input_options(r: argparse.ArgumentParser) -> None:
    """How INPUT is read: evaluation outputs (lm-evaluation-harness, HELM, JSONL) and their metric."""
    r.add_argument("--input-format", default=None, choices=reader_choices(), metavar="FORMAT",
                   help=f"the reader of INPUT: {', '.join(reader_names())} or an installed plugin's (default: guessed from "
                   "its suffix or folder content)")
    r.add_argument("--metric", default=None, metavar="NAME|TASK=NAME,...",
                   help="lm-eval / HELM per-instance metric, for every task or per task (default: lm-eval the first "
                   "metric listed, HELM exact_match)")
    r.add_argument("--filter", dest="eval_filter", default=None, metavar="NAME|TASK=NAME,...",
                   help="lm-eval filter (default: none, else the first)")
    r.add_argument("--split", default=None, metavar="NAME|TASK=NAME,...", help="HELM split (default: test, else valid)")


def loader_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`engine.open_scores` options of :func:`add_input_options` (``None``: not given)."""
    return {"format": getattr(args, "input_format", None), "metric": parse_task_option(getattr(args, "metric", None)),
            "filter": parse_task_option(getattr(args, "eval_filter", None)),
            "split": parse_task_option(getattr(args, "split", None))}


def add_rank_options(r: argparse.ArgumentParser) -> None:
    """The aggregation options shared by ``rank``, ``bootstrap``."""
    r.add_argument("--rule", default="borda", choices=rule_choices(), metavar="RULE",
                   help="aggregation rule (default: borda; `votebench rules` lists them, with installed plugins' rules)")
    r.add_argument(
        "--level",
        default=None,
        choices=LEVELS,
        help="task: rule over per-task means; one: over all (task, instance) judges; two: within each task, then across "
        "tasks (default: two for instance-level input, task otherwise)",
    )
    r.add_argument(
        "--missing",
        default="error",
        choices=MISSING_POLICIES,
        help="missing scores: error (default), listwise (drop systems with any), drop-judges (drop judges with any)",
    )
    r.add_argument("--within", default=None, choices=rule_choices(), metavar="RULE",
                   help="two-step: rule within each task (over instances, --level two) or within each group (--groups)")
    r.add_argument("--across", default=None, choices=rule_choices(), metavar="RULE",
                   help="two-step: rule across tasks or groups (default: --rule)")
    r.add_argument("--groups", action="store_true",
                   help="two-step over the task groups of the sidecar: --within per group, then --across over groups")
    r.add_argument("--weights", default=None, metavar="FILE|groups",
                   help="task weights: a JSON object {task: weight}, a CSV task,weight file, or 'groups' (1/|group|)")
    r.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="rule option, repeatable; VALUE is read as JSON when it parses (e.g. gamma=0.9, vector=[3,2,1,0])")
    r.add_argument("--preference", default=None, metavar="NAME",
                   help="PROMETHEE II preference function for every criterion (usual, quasi, linear, level, "
                   "linear_indifference, gaussian); same as --param preference=NAME")
    add_direction_options(r)
    add_input_options(r)


def add_direction_options(r: argparse.ArgumentParser) -> None:
    """``--meta`` (the sidecar) and ``--lower-is-better``: which way each task's scores point."""
    r.add_argument("--meta", default=None, metavar="FILE",
                   help="sidecar JSON with task directions and groups (default: <name>.meta.json beside INPUT)")
    r.add_argument("--lower-is-better", default=None, metavar="TASKS",
                   help="comma-separated tasks where lower scores are better (overrides the sidecar)")


def add_inputs(r: argparse.ArgumentParser, what: str) -> None:
    """INPUT... (one or more), the aggregation options and ``--scheduler``; ``what`` ends the help of INPUT."""
    r.add_argument("inputs", nargs="+", metavar="INPUT", help=what)
    add_rank_options(r)
    r.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)


def each_input(args: argparse.Namespace, work: Callable[[argparse.Namespace, Any | None, str], T]
               ) -> list[tuple[argparse.Namespace, T]]:
    """``work(one, client, prefix)`` for every INPUT, in order, on one client of ``--scheduler`` (closed afterwards).

    Every input is done before anything is printed, so an error leaves no partial output; with several
    inputs an error names its input and ``prefix`` (``"INPUT: "``) starts each input's notes.
    """
    each = per_input(args)
    several = len(each) > 1
    client = connect(args.scheduler)
    results = []
    try:
        for one in each:
            with naming(one.input, several):
                results.append((one, work(one, client, f"{one.input}: " if several else "")))
    finally:
        if client is not None:
            client.close()
    return results


def add_progress_option(r: argparse.ArgumentParser) -> None:
    """``--no-progress``: every sub-command shows one progress bar on a terminal (stderr) unless told not to."""
    r.add_argument("--no-progress", action="store_true",
                   help="no progress bar (shown on stderr when it is a terminal and the command runs over 2 s)")


@contextlib.contextmanager
def progress_shown(args: argparse.Namespace) -> Iterator[None]:
    """The engine's stages as one bar on stderr while the command runs, when stderr is a terminal and
    ``--no-progress`` is not given (:mod:`engine.progress`)."""
    if getattr(args, "no_progress", False) or not sys.stderr.isatty():
        yield
        return
    from engine.progress import shown

    with shown(sys.stderr, label=getattr(args, "command", None)):
        yield


def add_output_options(r: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS) -> None:
    """``--format`` and ``--output``."""
    r.add_argument("--format", default="table", choices=formats, help="output format (default: table)")
    r.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")


def parse_value(text: str) -> Any:
    """A ``--param`` value: JSON when it parses, else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
    except ValueError:  # an integer of over 4,300 digits
        raise VotebenchError(f"--param value {text[:20]!r}...: a number of over 4,300 digits") from None


def read_weights(spec: Any) -> Any:
    """``--weights``: ``None``, ``"groups"``, a ``{task: weight}`` mapping (a config file) or a JSON/CSV file, checked."""
    if spec is None or spec == "groups":
        return spec
    from engine.sweep import check_weights

    if isinstance(spec, dict):
        return check_weights(spec, "weights")
    p = Path(str(spec))
    if not p.exists():
        raise VotebenchError(f"{spec}: weights file not found (give a JSON/CSV file or 'groups')")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VotebenchError(f"{spec}: cannot read weights file ({getattr(exc, 'strerror', None) or exc})") from None
    if p.suffix.lower() == ".json":

        def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in pairs]
            twice = next((k for k in keys if keys.count(k) > 1), None)
            if twice is not None:
                raise VotebenchError(f"{spec}: task {twice!r} is given twice")
            return dict(pairs)

        try:
            data = json.loads(text, object_pairs_hook=once)
        except ValueError as exc:  # malformed JSON, an integer of over 4,300 digits
            raise VotebenchError(f"{spec}: malformed JSON weights ({exc})") from None
        if not isinstance(data, dict):
            raise VotebenchError(f"{spec}: JSON weights must be an object {{task: weight}}")
        return check_weights(data, str(spec))
    out: dict[str, float] = {}
    line_of: dict[str, int] = {}
    for i, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or (i == 1 and row[-1].strip().lower() in ("weight", "w")):
            continue
        if len(row) != 2:
            raise VotebenchError(f"{spec}: line {i}: expected 'task,weight'")
        task = row[0].strip()
        if task in line_of:
            raise VotebenchError(f"{spec}: line {i}: task {task!r} is given twice (first on line {line_of[task]})")
        try:
            out[task] = float(row[1])
        except ValueError:
            raise VotebenchError(f"{spec}: line {i}: weight {row[1]!r} is not a number") from None
        line_of[task] = i
    return check_weights(out, str(spec))


def rank_options(args: argparse.Namespace) -> dict[str, Any]:
    """Options of :func:`engine.rank` (defaults < ``--config`` file < flags, resolved by :func:`engine.app.cli.main`)."""
    opts: dict[str, Any] = {key: getattr(args, key, None) for key in ("rule", "level", "missing", "within", "across")}
    opts["groups"] = True if getattr(args, "groups", False) else None
    opts["weights"] = read_weights(getattr(args, "weights", None))
    options = dict(getattr(args, "config_options", None) or {})
    for item in getattr(args, "param", []) or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise VotebenchError(f"--param {item!r}: expected KEY=VALUE")
        options[key.strip()] = parse_value(value)
    if getattr(args, "preference", None):
        options["preference"] = args.preference
    opts["options"] = options
    from engine.rules import get_rule

    for key in ("rule", "within", "across"):
        if opts[key] is not None:
            get_rule(opts[key])
    return opts


def lower_list(text: str | None) -> list[str]:
    """``--lower-is-better``: the comma-separated task names."""
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def load_scores(args: argparse.Namespace) -> Any:
    """The scores of ``args.input`` read here (:func:`engine.open_scores`, then ``--lower-is-better``)."""
    from engine.io.readers import open_scores
    from engine.labelled.canonical import with_lower_is_better

    opts = {k: v for k, v in loader_options(args).items() if v is not None}
    scores = open_scores(args.input, meta=args.meta, **opts)
    return with_lower_is_better(scores, lower_list(args.lower_is_better))


def per_input(args: argparse.Namespace) -> list[argparse.Namespace]:
    """One namespace per INPUT (``.input`` set), in the order given; ``--meta`` names one sidecar, so one input."""
    inputs = list(args.inputs)
    if len(inputs) > 1 and args.meta:
        raise VotebenchError(f"--meta gives the sidecar of one input, got {len(inputs)} inputs; "
                             "with several inputs each reads its own <name>.meta.json")
    return [argparse.Namespace(**{**vars(args), "input": path}) for path in inputs]


@contextlib.contextmanager
def naming(path: str, several: bool) -> Iterator[None]:
    """With several inputs, an error names the input it came from (unless its message does already)."""
    try:
        yield
    except VotebenchError as exc:
        if several and not str(exc).startswith(path):
            raise VotebenchError(f"{path}: {exc}") from None
        raise


def connect(scheduler: str | None) -> Any | None:
    """A client of ``--scheduler`` / ``DASK_SCHEDULER_ADDRESS`` (None: embedded); its dashboard link goes to stderr."""
    if not (scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")):
        return None  # in-process: distributed is not even imported
    from engine.distributed import connect as connect_client

    client = connect_client(scheduler)
    if client is not None:
        try:
            link = client.dashboard_link
        except Exception:  # noqa: BLE001 - a scheduler started without a dashboard has no link
            link = None
        where = f"dask dashboard: {link}" if link else f"dask scheduler {client.scheduler.address} (no dashboard)"
        print(f"votebench: {where}", file=sys.stderr)
    return client
