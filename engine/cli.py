"""The ``votebench`` command line.

Every user-facing failure (bad input, unknown option) ends with exit code 2
and one line on stderr naming the problem; output files are written
atomically, so a failed run leaves nothing half-written.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import xarray as xr

from .core import MISSING_POLICIES
from .dims import BOOTSTRAP_AXES
from .errors import VotebenchError
from .readers import parse_task_option, reader_names
from .rules import LEVELS, RULES, rule_names

__all__ = ["main", "build_parser", "json_safe", "json_text"]

FORMATS = ("table", "json", "csv")
_SCHEDULER_HELP = ("address of a running dask scheduler, e.g. tcp://10.0.0.5:8786 (default: DASK_SCHEDULER_ADDRESS, "
                   "else an in-process scheduler); the workers read INPUT by its path or URL")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add_input_options(r: argparse.ArgumentParser) -> None:
    """How INPUT is read: evaluation outputs (lm-evaluation-harness, HELM, JSONL) and their metric."""
    r.add_argument("--input-format", default=None, choices=reader_names(),
                   help="the reader of INPUT (default: guessed from its suffix or folder content)")
    r.add_argument("--metric", default=None, metavar="NAME|TASK=NAME,...",
                   help="lm-eval / HELM per-instance metric, for every task or per task (default: lm-eval the first "
                   "metric listed, HELM exact_match)")
    r.add_argument("--filter", dest="eval_filter", default=None, metavar="NAME|TASK=NAME,...",
                   help="lm-eval filter (default: none, else the first)")
    r.add_argument("--split", default=None, metavar="NAME|TASK=NAME,...", help="HELM split (default: test, else valid)")


def _loader_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"format": getattr(args, "input_format", None), "metric": parse_task_option(getattr(args, "metric", None)),
            "filter": parse_task_option(getattr(args, "eval_filter", None)),
            "split": parse_task_option(getattr(args, "split", None))}


def _add_rank_options(r: argparse.ArgumentParser) -> None:
    """The aggregation options shared by ``rank``, ``bootstrap``."""
    r.add_argument("--rule", default="borda", choices=rule_names(), help="aggregation rule (default: borda)")
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
    r.add_argument("--within", default=None, choices=rule_names(), metavar="RULE",
                   help="two-step: rule within each task (over instances, --level two) or within each group (--groups)")
    r.add_argument("--across", default=None, choices=rule_names(), metavar="RULE",
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
    r.add_argument("--meta", default=None, metavar="FILE",
                   help="sidecar JSON with task directions and groups (default: <name>.meta.json beside INPUT)")
    r.add_argument("--lower-is-better", default=None, metavar="TASKS",
                   help="comma-separated tasks where lower scores are better (overrides the sidecar)")
    _add_input_options(r)


class _VersionAction(argparse.Action):
    """``--version``: prints the installed version (looked up only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from . import __version__

        sys.stdout.write(f"votebench {__version__}\n")
        parser.exit()


_EPILOG = """getting started (each command has --help):
  votebench rank data/vnr_glue.csv --missing listwise        rank with Borda, the default rule
  votebench rules                                            every rule (then --rule copeland, ...)
  votebench bootstrap data/vnr_glue.csv --missing listwise   how sure: rank intervals, systems tied with the leader
  votebench bootstrap data/colombo_tac08.csv.gz --over instances --store results/tac08.zarr
  votebench serve results/tac08.zarr                         live dashboard of a results store
  votebench report data/vnr_glue.csv --missing listwise --out report/
  votebench sweep experiments/sweeps/glue_robustness.toml    rules x perturbations into a resumable store
  votebench convert big.csv.gz big.zarr                      a large long CSV into a zarr store (bounded memory)
  votebench experiment --list                                the papers' tables and figures, reproduced

input: CSV (wide: system + one column per task; long: system,task,instance,score), Parquet, a zarr store,
lm-evaluation-harness or HELM output folders, JSONL; a <name>.meta.json sidecar gives task directions and groups.
every command takes --config FILE (defaults < file < flags); --scheduler ADDRESS or DASK_SCHEDULER_ADDRESS
runs on a dask cluster (default: in-process)."""


#: sub-commands defined in this module; ``report``, ``serve`` and ``experiment`` live with their (larger) modules
OWN_COMMANDS = ("rank", "condorcet", "bootstrap", "sweep", "rules")


def build_parser(*, only_own: bool = False) -> argparse.ArgumentParser:
    """The ``votebench`` argument parser.

    Parameters
    ----------
    only_own : bool
        Leave out the sub-commands that live in other modules (``report``, ``serve``,
        ``experiment``), so that running one of :data:`OWN_COMMANDS` does not import them.

    Returns
    -------
    argparse.ArgumentParser
        The parser; its sub-parsers are reachable through ``_subparsers``.
    """
    p = _Parser(
        prog="votebench",
        description="Rank ML systems from benchmark scores with social-choice rules, and measure how sure the ranking is.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    r = sub.add_parser(
        "rank",
        help="rank the systems of a score table or store",
        description="Aggregate scores (CSV wide or long, .csv.gz, Parquet, zarr store) into a ranking. With several "
        "inputs (e.g. data/colombo_*.csv*) each is ranked with the same options and printed under a '## INPUT' header; "
        "--format json then prints a list of rankings, each with an \"input\" key, and csv adds an input column.",
    )
    r.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="score file or zarr store (a <name>.meta.json sidecar is read when present); several inputs are "
                   "ranked one after the other in this process, one ranking per input")
    _add_rank_options(r)
    r.add_argument("--scheduler", default=None, metavar="ADDRESS", help=_SCHEDULER_HELP)
    r.add_argument("--format", default="table", choices=FORMATS, help="output format (default: table)")
    r.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")
    r.set_defaults(func=_cmd_rank)

    c = sub.add_parser(
        "condorcet",
        help="Condorcet winner, and for every system whether some task weights make it the Condorcet winner "
        "(default: strict; --weak: the paper's eq. 2)",
        description="Vote'n'Rank section 3.2: a system is prospective when a non-negative task-weight vector w makes it "
        "the Condorcet winner; solved as one linear program per system. By default the Condorcet winner is the strict "
        "one: it beats every other system by a strict weighted majority (G w > 0, eq. 3). --weak uses the paper's "
        "definition, eq. (2): G w >= 0 (it may tie), as the authors' code does and as the votenrank2023 experiment "
        "uses it (it reproduces the paper's counts, e.g. 10 of 22 prospective systems on SuperGLUE with "
        "--missing listwise). The Condorcet winner under equal weights is always the strict one.",
    )
    c.add_argument("input", metavar="INPUT", help="score file or zarr store")
    c.add_argument("--missing", default="error", choices=MISSING_POLICIES,
                   help="pairs with a missing score are ignored (error = keep them out of the comparison); "
                   "listwise / drop-judges remove systems / tasks with gaps first")
    c.add_argument("--weak", action="store_true",
                   help="the paper's definition (Vote'n'Rank eq. 2, G w >= 0: beat or tie every other system), as in the "
                   "authors' code and the votenrank2023 experiment; default: the strict Condorcet winner (G w > 0)")
    c.add_argument("--meta", default=None, metavar="FILE",
                   help="sidecar JSON with task directions and groups (default: <name>.meta.json beside INPUT)")
    c.add_argument("--lower-is-better", default=None, metavar="TASKS",
                   help="comma-separated tasks where lower scores are better (overrides the sidecar)")
    _add_input_options(c)
    c.add_argument("--format", default="table", choices=("table", "json"), help="output format (default: table)")
    c.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")
    c.set_defaults(func=_cmd_condorcet)

    bt = sub.add_parser(
        "bootstrap",
        help="rank with bootstrap rank intervals and stability",
        description="Resample tasks (judges), systems (candidates) or the instances of every task with replacement, "
        "re-rank every replicate, and report the full-data ranking with the 2.5-97.5%% percentiles of the replicate "
        "ranks (a candidate bootstrap: the ranks its sure pairwise orders allow) and the stability of the ranking "
        "(Pavao et al. 2021).",
    )
    bt.add_argument("inputs", nargs="+", metavar="INPUT",
                    help="score file or zarr store; several inputs are bootstrapped one after the other with the same "
                    "options and seed, one result per input (json: a list, each with an \"input\" key)")
    _add_rank_options(bt)
    bt.add_argument("--over", default="tasks", choices=BOOTSTRAP_AXES, help="axis to resample (default: tasks)")
    bt.add_argument("--replicates", type=int, default=200, metavar="B", help="number of replicates (default: 200)")
    bt.add_argument("--seed", type=int, default=0, metavar="S", help="seed (default: 0); same seed, same replicates")
    bt.add_argument("--interval", type=float, default=0.95, metavar="LEVEL",
                    help="rank interval level (default: 0.95, i.e. 2.5%% and 97.5%% percentiles; over systems: the share "
                    "of replicates that makes a pairwise order sure) and level of the ties with the leader")
    bt.add_argument("--block", type=int, default=50, metavar="N", help="replicates per task and store chunk (default: 50)")
    bt.add_argument("--store", default=None, metavar="PATH",
                    help="also write the replicates to a results store (zarr, same format as `votebench sweep`); "
                    "a re-run with the same inputs and options resumes it")
    bt.add_argument("--overwrite", action="store_true", help="with --store: start from an empty store")
    bt.add_argument("--scheduler", default=None, metavar="ADDRESS", help=_SCHEDULER_HELP)
    bt.add_argument("--format", default="table", choices=FORMATS, help="output format (default: table)")
    bt.add_argument("--output", "-o", default=None, metavar="FILE", help="write to FILE instead of stdout")
    bt.set_defaults(func=_cmd_bootstrap)

    sw = sub.add_parser(
        "sweep",
        help="run a sweep file (rules x perturbations) into a resumable results store",
        description="Compile a TOML/YAML sweep (inputs, rules with options, bootstraps, task subsets, parameter grids, "
        "seed, store) into dask tasks; blocks are written to the zarr store as they finish and a re-run computes only "
        "what is missing.",
    )
    sw.add_argument("config", metavar="CONFIG", help="sweep file (.toml, .yaml)")
    sw.add_argument("--store", default=None, metavar="PATH", help="results store (overrides the file's store)")
    sw.add_argument("--scheduler", default=None, metavar="ADDRESS", help=_SCHEDULER_HELP)
    sw.add_argument("--overwrite", action="store_true", help="start from an empty store")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.add_argument("--dashboard", action="store_true",
                    help="serve a live dashboard of the results store while the sweep runs, and afterwards until Ctrl-C "
                    "(see `votebench serve`)")
    sw.add_argument("--exit-when-done", action="store_true",
                    help="with --dashboard: stop serving and exit once the page has the finished store (for scripts)")
    sw.add_argument("--lower-is-better", default=None, metavar="TASKS",
                    help="comma-separated tasks where lower scores are better, for every input that does not give its own "
                    "lower_is_better (recorded in the store's config)")
    from .dashboard import add_server_options

    add_server_options(sw)
    sw.set_defaults(func=_cmd_sweep)

    cv = sub.add_parser(
        "convert",
        help="write a score file to a zarr store; a long CSV is streamed with bounded memory (for large inputs)",
        description="Write INPUT to the zarr store STORE (the format `engine.to_zarr` writes, opened by every command). "
        "A long CSV (system,task,instance,score; .csv or .csv.gz) is streamed block by block, so 1e8 rows need well "
        "under 2 GB of memory; other inputs are read in memory first. The sidecar (<name>.meta.json beside INPUT, or "
        "--meta) goes into the store.",
    )
    cv.add_argument("input", metavar="INPUT", help="score file (long CSV streamed; any other input read in memory)")
    cv.add_argument("store", metavar="STORE", help="zarr store to write (a folder)")
    cv.add_argument("--meta", default=None, metavar="FILE",
                    help="sidecar JSON with task directions and groups (default: <name>.meta.json beside INPUT)")
    cv.add_argument("--overwrite", action="store_true", help="replace an existing zarr store")
    cv.set_defaults(func=_cmd_convert)

    ls = sub.add_parser("rules", help="list the registered aggregation rules")
    ls.set_defaults(func=_cmd_rules)
    if not only_own:  # sub-commands that live with their modules
        from .dashboard import register as register_serve
        from .experiment import register as register_experiment
        from .report import register as register_report

        register_report(sub)
        register_serve(sub)
        register_experiment(sub)
    for name, sp in sub.choices.items():
        sp.add_argument("--config", dest="config_file", default=None, metavar="FILE",
                        help=f"TOML or JSON file of `{name}` options by their long names (e.g. missing = \"listwise\"; "
                        "rank/bootstrap also take an [options] table of rule options); defaults < file < flags")
    return p


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------
def _fmt_score(v: float) -> str:
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{v:.1f}"
    return f"{v:.6g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.4e}"


def ranking_records(systems: Sequence[str], score: np.ndarray, rank: np.ndarray) -> list[dict[str, Any]]:
    """Ranked systems (those with a score) sorted by rank, then name."""
    rows = [
        {"system": str(s), "score": float(sc), "rank": int(rk)}
        for s, sc, rk in zip(systems, score, rank)
        if not math.isnan(sc)
    ]
    rows.sort(key=lambda d: (d["rank"], d["system"]))
    return rows


def ranking_object(rows: list[dict[str, Any]], header: dict[str, Any]) -> dict[str, Any]:
    """The JSON object of one ranking: ``header`` (rule, level), ``n_systems`` and the ranked ``rows``."""
    return {**header, "n_systems": len(rows), "ranking": rows}


def render_rankings(results: list[tuple[str, list[dict[str, Any]], dict[str, Any]]], *, fmt: str) -> str:
    """Render the rankings of several inputs, each ``(input, rows, header)``.

    ``table``: one table per input under a ``## INPUT`` line; ``json``: a list of
    the one-input objects, each with an ``input`` key first; ``csv``: one table
    with an ``input`` column first.
    """
    if fmt == "json":
        objs = [{"input": name, **ranking_object(rows, header)} for name, rows, header in results]
        return json_text(objs)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["input", "rank", "system", "score"])
        for name, rows, _ in results:
            for d in rows:
                w.writerow([name, d["rank"], d["system"], repr(d["score"])])
        return buf.getvalue()
    return "\n".join(f"## {name}\n" + render_ranking(rows, fmt=fmt, header=header) for name, rows, header in results)


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced: NaN by ``None`` (JSON null), +-inf by the strings ``"inf"``/``"-inf"``.

    Strict JSON has no NaN or Infinity; this keeps ``--format json`` parseable by any reader.
    """
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """Strict JSON text (indented, UTF-8 kept) of ``value`` after :func:`json_safe`."""
    return json.dumps(json_safe(value), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_ranking(rows: list[dict[str, Any]], *, fmt: str, header: dict[str, Any]) -> str:
    """Render ranked rows as ``table``, ``json`` or ``csv`` text."""
    if fmt == "json":
        return json_text(ranking_object(rows, header))
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "system", "score"])
        for d in rows:
            w.writerow([d["rank"], d["system"], repr(d["score"])])
        return buf.getvalue()
    scores = [_fmt_score(d["score"]) for d in rows]
    wr = max(4, *(len(str(d["rank"])) for d in rows))
    ws = max(6, *(len(d["system"]) for d in rows))
    wsc = max(5, *(len(s) for s in scores))
    title = ", ".join(f"{k} {v}" for k, v in header.items())
    lines = [f"# {title}; {len(rows)} systems", f"{'rank':>{wr}}  {'system':<{ws}}  {'score':>{wsc}}"]
    lines.append(f"{'-' * wr}  {'-' * ws}  {'-' * wsc}")
    counts: dict[int, int] = {}
    for d in rows:
        counts[d["rank"]] = counts.get(d["rank"], 0) + 1
    lines += [
        f"{(str(d['rank']) + ('=' if counts[d['rank']] > 1 else ' ')):>{wr + 1}} {d['system']:<{ws}}  {sc:>{wsc}}"
        for d, sc in zip(rows, scores)
    ]
    n_tied = sum(c for c in counts.values() if c > 1)
    if n_tied:
        lines.append(f"# '=' marks ties: {n_tied} tied systems (discriminative power)")
    return "\n".join(lines) + "\n"


def write_output(text: str, output: str | None) -> None:
    """Print ``text`` or write it atomically to ``output`` (usual permissions; strays of killed writes removed)."""
    if output is None:
        sys.stdout.write(text)
        return
    from .files import atomic_write_text

    atomic_write_text(output, text)


# --------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------
def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _read_config(path: str) -> dict[str, Any]:
    """A ``--config`` file: a TOML table or a JSON object."""
    import tomllib

    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise VotebenchError(f"{path}: cannot read config ({exc.strerror or exc})") from None
    try:
        cfg = json.loads(raw) if p.suffix.lower() == ".json" else tomllib.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise VotebenchError(f"{path}: malformed config ({exc})") from None
    if not isinstance(cfg, dict):
        raise VotebenchError(f"{path}: config must be a table/object")
    return cfg


#: config keys whose option has another destination name
_CONFIG_ALIASES = {"filter": "eval_filter"}


def _config_defaults(sp: argparse.ArgumentParser, cfg: dict[str, Any], path: str) -> dict[str, Any]:
    """Parser defaults from a ``--config`` file: keys are the long option names of the sub-command.

    Values are checked as the flags would be (choices, types), so a file
    cannot smuggle in what the command line refuses.
    """
    actions = {a.dest: a for a in sp._actions if a.option_strings and a.dest not in ("help", "config_file")}
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key == "options" and "param" in actions:
            if not isinstance(value, dict):
                raise VotebenchError(f"{path}: 'options' must be a table of rule options")
            out["config_options"] = dict(value)
            continue
        dest = _CONFIG_ALIASES.get(key, key.replace("-", "_"))
        act = actions.get(dest)
        if act is None:
            names = {v: k for k, v in _CONFIG_ALIASES.items()}
            known = sorted({names.get(d, d) for d in actions} | ({"options"} if "param" in actions else set()))
            raise VotebenchError(f"{path}: unknown config key {key!r}; known: {', '.join(known)}")
        if isinstance(act, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            if not isinstance(value, bool):
                raise VotebenchError(f"{path}: {key} must be true or false")
        elif isinstance(act, argparse._AppendAction):
            value = [str(v) for v in (value if isinstance(value, list) else [value])]
        elif isinstance(value, dict) and dest == "weights":
            pass  # {task: weight}, as a JSON weights file would give
        elif isinstance(value, (list, dict)):
            raise VotebenchError(f"{path}: {key} takes a single value")
        else:
            value = _typed_config_value(act, key, value, path)
        if act.choices is not None and value not in act.choices:
            raise VotebenchError(f"{path}: {key} = {value!r}; choose one of {', '.join(map(str, act.choices))}")
        out[dest] = value
    return out


def _typed_config_value(act: argparse.Action, key: str, value: Any, path: str) -> Any:
    """A ``--config`` value converted as its flag's type, without silent changes (2.7 is not the integer 2, true not 1)."""
    kind = act.type or str
    bad = VotebenchError(f"{path}: {key} = {value!r} is not a valid value"
                         + (" (an integer)" if kind is int else " (a number)" if kind is float else " (a string)"))
    if isinstance(value, bool):
        raise bad
    if kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise bad from None
        raise bad  # 2.7 is not 2; a date, a table ... are no integers
    if kind is float:
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise bad from None
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise bad
        return float(value)
    if kind is str and not isinstance(value, str):
        raise bad
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise bad from None


def _read_weights(spec: Any) -> Any:
    if spec is None or spec == "groups":
        return spec
    from .sweep import check_weights

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
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise VotebenchError(f"{spec}: malformed JSON weights ({exc})") from None
        if not isinstance(data, dict):
            raise VotebenchError(f"{spec}: JSON weights must be an object {{task: weight}}")
        return check_weights(data, str(spec))
    out: dict[str, float] = {}
    for i, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or (i == 1 and row[-1].strip().lower() in ("weight", "w")):
            continue
        if len(row) != 2:
            raise VotebenchError(f"{spec}: line {i}: expected 'task,weight'")
        try:
            out[row[0].strip()] = float(row[1])
        except ValueError:
            raise VotebenchError(f"{spec}: line {i}: weight {row[1]!r} is not a number") from None
    return check_weights(out, str(spec))


def rank_options(args: argparse.Namespace) -> dict[str, Any]:
    """Options of :func:`engine.rank` (defaults < ``--config`` file < flags, resolved by :func:`main`)."""
    opts: dict[str, Any] = {key: getattr(args, key, None) for key in ("rule", "level", "missing", "within", "across")}
    opts["groups"] = True if getattr(args, "groups", False) else None
    opts["weights"] = _read_weights(getattr(args, "weights", None))
    options = dict(getattr(args, "config_options", None) or {})
    for item in getattr(args, "param", []) or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise VotebenchError(f"--param {item!r}: expected KEY=VALUE")
        options[key.strip()] = _parse_value(value)
    if getattr(args, "preference", None):
        options["preference"] = args.preference
    opts["options"] = options
    from .rules import get_rule

    for key in ("rule", "within", "across"):
        if opts[key] is not None:
            get_rule(opts[key])
    return opts


def _load_scores(args: argparse.Namespace) -> Any:
    from .io import open_scores

    opts = {k: v for k, v in _loader_options(args).items() if v is not None}
    scores = open_scores(args.input, meta=args.meta, **opts)
    if args.lower_is_better:
        lower = [t.strip() for t in args.lower_is_better.split(",") if t.strip()]
        tasks = [str(t) for t in scores["task"].values]
        unknown = [t for t in lower if t not in tasks]
        if unknown:
            raise VotebenchError(f"--lower-is-better names unknown task(s): {', '.join(unknown)}")
        hib = np.array([t not in lower for t in tasks]) & np.asarray(scores["higher_is_better"].values, dtype=bool)
        scores = scores.assign_coords(higher_is_better=("task", hib))
    return scores


def _per_input(args: argparse.Namespace) -> list[argparse.Namespace]:
    """One namespace per INPUT (``.input`` set), in the order given; ``--meta`` names one sidecar, so one input."""
    inputs = list(args.inputs)
    if len(inputs) > 1 and args.meta:
        raise VotebenchError(f"--meta gives the sidecar of one input, got {len(inputs)} inputs; "
                             "with several inputs each reads its own <name>.meta.json")
    return [argparse.Namespace(**{**vars(args), "input": path}) for path in inputs]


@contextlib.contextmanager
def _naming(path: str, several: bool) -> Iterator[None]:
    """With several inputs, an error names the input it came from (unless its message does already)."""
    try:
        yield
    except VotebenchError as exc:
        if several and not str(exc).startswith(path):
            raise VotebenchError(f"{path}: {exc}") from None
        raise


def _lower_list(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


_NOTES: list[str] = []


def note(text: str, *, now: bool = False) -> None:
    """``votebench: note: TEXT`` on stderr (what a default assumed, what a policy left out).

    Printed when the command succeeds (a failure stays one line), or at once with ``now``.
    """
    if now:
        print(f"votebench: note: {text}", file=sys.stderr, flush=True)
    else:
        _NOTES.append(text)


def _direction_note(args: argparse.Namespace, scores: Any | None, *, prefix: str = "") -> None:
    """Say which tasks were assumed higher-is-better because no sidecar and no --lower-is-better named them.

    (Not said when a worker read the input: this process does not know its tasks.)
    """
    from .io import directions_note

    if scores is None:
        return
    text = directions_note(args.input, [str(t) for t in scores["task"].values], meta=getattr(args, "meta", None),
                           lower_is_better=_lower_list(getattr(args, "lower_is_better", None)))
    if text:
        note(prefix + text)


def _policy_note(missing: str, systems_out: Sequence[str], scores: Any | None = None, shown: int = 5, *,
                 prefix: str = "") -> None:
    """What the missing-score policy left out: systems (listwise, or any rule that could not rank them) and judges."""
    if systems_out:
        note(f"{prefix}missing-score policy {missing!r} left out {len(systems_out)} system(s): " + ", ".join(systems_out[:shown])
             + (" ..." if len(systems_out) > shown else ""))
    if missing == "drop-judges" and scores is not None:
        from .io import left_out_judges

        judges = left_out_judges(scores)
        if judges:
            one = scores.sizes["instance"] == 1
            parts = [t if one else f"{t} ({d} of {j})" for t, d, j in judges]
            what = "task(s) with a missing score" if one else "judge(s) (task x instance) with a missing score"
            note(f"{prefix}missing-score policy 'drop-judges' left out {sum(d for _, d, _ in judges)} {what}: "
                 + ", ".join(parts[:shown]) + (" ..." if len(parts) > shown else ""))


def _cmd_rank(args: argparse.Namespace) -> int:
    from .core import rank

    opts = rank_options(args)
    each = _per_input(args)
    several = len(each) > 1
    client = _connect(args.scheduler)
    results = []
    try:
        for one in each:  # every input is ranked before anything is printed: an error leaves no partial output
            with _naming(one.input, several):
                if client is not None and not _is_store(one.input):
                    # a table: one worker reads it by path and ranks it; only the ranking comes back
                    from .distributed import cluster_rank

                    ds = cluster_rank(client, _source(one), **opts)
                    scores = None
                else:
                    scores = _open_input(one)
                    ds = rank(scores, **opts)
                    ds = _compute(ds, client)
            results.append((one, ds, scores))
    finally:
        if client is not None:
            client.close()
    rendered = []
    for one, ds, scores in results:
        systems = [str(s) for s in ds["system"].values]
        score = np.asarray(ds["score"].values, dtype=float)
        prefix = f"{one.input}: " if several else ""
        _direction_note(one, scores, prefix=prefix)
        _policy_note(opts["missing"], [s for s, v in zip(systems, score) if math.isnan(v)], scores, prefix=prefix)
        rows = ranking_records(systems, score, np.nan_to_num(ds["rank"].values))
        rendered.append((one.input, rows, {"rule": ds.attrs["rule"], "level": ds.attrs["level"]}))
    if several:
        text = render_rankings(rendered, fmt=args.format)
    else:
        _, rows, header = rendered[0]
        text = render_ranking(rows, fmt=args.format, header=header)
    write_output(text, args.output)
    return 0


def _cmd_condorcet(args: argparse.Namespace) -> int:
    from .core import task_scores
    from .kernels.condorcet_lp import condorcet_winner, prospective_systems

    scores = _load_scores(args)
    _direction_note(args, scores)
    X = task_scores(scores, missing=args.missing if args.missing != "error" else "error")
    if not isinstance(X.data, np.ndarray):
        import dask

        with dask.config.set(scheduler="threads"):
            X = X.compute()
    systems = [str(s) for s in X["system"].values]
    tasks = [str(t) for t in X["task"].values]
    M = np.asarray(X.values, dtype=float)
    keep = ~np.isnan(M).all(axis=0)
    _policy_note(args.missing, [s for s, k in zip(systems, keep) if not k], scores)
    winner = int(condorcet_winner(M))
    found = prospective_systems(M, strict=not args.weak)
    rows = []
    for i, (name, (ok, w)) in enumerate(zip(systems, found)):
        if not keep[i]:
            continue
        weights = None if w is None else {t: float(v) for t, v in zip(tasks, w)}
        rows.append({"system": name, "prospective": bool(ok), "weights": weights})
    definition = "weak" if args.weak else "strict"
    result = {"condorcet_winner": systems[winner] if winner >= 0 else None, "definition": definition, "systems": rows}
    if args.format == "json":
        text = json_text(result)
    else:
        n_p = sum(r["prospective"] for r in rows)
        how = ("weak: beats or ties every other system, G w >= 0 (--weak; Vote'n'Rank eq. 2, the paper's definition)"
               if args.weak else "strict: beats every other system by a strict weighted majority, G w > 0 (the default; "
               "--weak gives the paper's eq. 2)")
        lines = [
            f"# Condorcet winner (equal weights, strict majority): {result['condorcet_winner'] or 'none'}",
            f"# prospective systems (some task weights make them the {definition} Condorcet winner): {n_p} of {len(rows)}",
            f"# definition: {how}",
        ]
        width = max(len(r["system"]) for r in rows)
        for r in rows:
            if r["weights"] is None:
                lines.append(f"{r['system']:<{width}}  no")
            else:
                top = sorted(r["weights"].items(), key=lambda kv: -kv[1])
                shown = ", ".join(f"{t}={v:.3g}" for t, v in top if v > 1e-9)
                lines.append(f"{r['system']:<{width}}  yes  {shown}")
        text = "\n".join(lines) + "\n"
    write_output(text, args.output)
    return 0


def _json_float(v: float) -> float | None:
    return None if v is None or math.isnan(v) else float(v)


def _cmd_bootstrap(args: argparse.Namespace) -> int:
    if args.replicates < 2:
        raise VotebenchError(f"--replicates must be at least 2, got {args.replicates}")
    if args.seed < 0:
        raise VotebenchError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.block < 1:
        raise VotebenchError(f"--block must be at least 1, got {args.block}")
    if not 0 < args.interval < 1:
        raise VotebenchError(f"--interval must be between 0 and 1, got {args.interval}")
    if args.over == "systems" and args.interval <= 0.5:
        raise VotebenchError(f"--interval must be above 0.5 for a bootstrap over systems, got {args.interval}")
    _check_replicates(args.replicates, 2, at_least=True)  # absurd counts fail before the input is read
    opts = rank_options(args)
    if args.overwrite and not args.store:
        raise VotebenchError("--overwrite needs --store")
    each = _per_input(args)
    several = len(each) > 1
    if several and args.store:
        raise VotebenchError(f"--store takes one input, got {len(each)}; write several inputs to one store with "
                             "`votebench sweep` (one [[inputs]] entry each)")
    client = _connect(args.scheduler)
    results = []
    try:
        for one in each:  # all inputs first, then the output: an error leaves no partial output
            with _naming(one.input, several):
                results.append((one.input, _bootstrap_one(one, opts, client, prefix=f"{one.input}: " if several else "")))
    finally:
        if client is not None:
            client.close()
    if not several:
        write_output(_render_bootstrap(results[0][1], fmt=args.format, level=args.interval), args.output)
    elif args.format == "json":
        write_output(json_text([{"input": path, **res} for path, res in results]),
                     args.output)
    elif args.format == "csv":
        parts = [_render_bootstrap(res, fmt="csv", level=args.interval).splitlines() for _, res in results]
        lines = ["input," + parts[0][0]] + [f"{_csv_cell(path)},{line}" for (path, _), p in zip(results, parts) for line in p[1:]]
        write_output("\n".join(lines) + "\n", args.output)
    else:
        write_output("\n".join(f"## {path}\n" + _render_bootstrap(res, fmt="table", level=args.interval)
                               for path, res in results), args.output)
    return 0


def _csv_cell(text: str) -> str:
    """``text`` as one CSV field (quoted when needed)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([text])
    return buf.getvalue()


def _bootstrap_one(args: argparse.Namespace, opts: dict[str, Any], client: Any | None, prefix: str = "") -> dict[str, Any]:
    """The bootstrap result object (``rule``, ``over``, ``replicates``, ``seed``, ``interval``, ``ranking``, ``stability``)
    of ``args.input``; its notes (directions assumed, what a policy left out) start with ``prefix``."""
    from . import metrics
    from .bootstrap import bootstrap, summarize

    scores = None
    if args.store:  # the workers read the input by path; this process only writes the finished blocks
        from .sweep import is_url, open_results, parse_config, run_sweep

        path = args.input if is_url(args.input) else str(Path(args.input).resolve())
        inp: dict[str, Any] = {"path": path, "name": Path(args.input).name.split(".")[0]}
        if args.meta:
            inp["meta"] = args.meta if is_url(args.meta) else str(Path(args.meta).resolve())
        for k in ("level", "missing", "weights", "groups", "within", "across"):
            if opts.get(k) not in (None, False):
                inp[k] = opts[k]
        # everything that changes the replicates is part of the store's provenance (its config)
        inp.update({k: v for k, v in _loader_options(args).items() if v is not None})
        lower = _lower_is_better(args)
        if lower:
            inp["lower_is_better"] = lower
        raw = {"input": inp, "rules": [{"name": opts["rule"], "options": opts["options"]}], "seed": args.seed,
               "store": str(Path(args.store).resolve()),
               "perturbations": [{"kind": "bootstrap", "over": args.over, "replicates": args.replicates,
                                  "block": args.block}]}
        cfg = parse_config(raw, where="bootstrap")
        store = run_sweep(cfg, client=client, progress=sys.stderr.isatty(), overwrite=args.overwrite)
        stored = open_results(store, f"{inp['name']}/bootstrap-{args.over}").isel(rule=0).compute()
        from .kernels.ranking import min_rank

        ds = xr.Dataset({"score": stored["score"], "rank": stored["rank"], "replicate_score": stored["replicate_score"],
                         "replicate_rank": (stored["replicate_score"].dims, min_rank(stored["replicate_score"].values))})
        ds.attrs = {"rule": _rule_label(opts), "over": args.over, "replicates": args.replicates, "seed": args.seed}
        if not is_url(args.input):
            scores = _load_scores(args)
    elif client is not None and not _is_store(args.input):
        # a table: the workers read it by path, one task per --block replicates
        from .distributed import cluster_bootstrap

        ds = cluster_bootstrap(client, _source(args), over=args.over, replicates=args.replicates, seed=args.seed,
                               block=args.block, **opts)
    else:
        scores = _open_input(args)
        _check_replicates(args.replicates, int(scores.sizes["system"]))
        ds = bootstrap(scores, over=args.over, replicates=args.replicates, seed=args.seed, block=args.block, **opts)
        ds = _compute(ds, client)
    summ = summarize(ds, level=args.interval)
    systems = [str(s) for s in summ["system"].values]
    point = np.asarray(summ["score"].values, dtype=float)
    _direction_note(args, scores, prefix=prefix)
    _policy_note(opts["missing"], [s for s, v in zip(systems, point) if math.isnan(v)], scores, prefix=prefix)
    prob = np.asarray(summ["prob_above"].values, dtype=float)
    if args.over == "systems":  # replicate ranks among the drawn candidates are biased toward 1: pairwise orders instead
        low, high = metrics.pairwise_rank_bounds(point, prob, level=args.interval)
    else:
        low, high = (np.asarray(summ[v].values, dtype=float) for v in ("rank_low", "rank_high"))
    rows = []
    for i, name in enumerate(systems):
        if math.isnan(point[i]):
            continue
        rows.append({"system": name, "score": float(point[i]), "rank": int(summ["rank"].values[i]),
                     "rank_low": _json_float(float(low[i])), "rank_high": _json_float(float(high[i])),
                     "tied_with_leader": bool(summ["tied_with_leader"].values[i])})
    rows.sort(key=lambda d: (d["rank"], d["system"]))
    stab = {"kendall_w": _json_float(float(summ["kendall_w"])), "mean_spearman": _json_float(float(summ["mean_spearman"])),
            "mean_kendall": _json_float(float(summ["mean_kendall"])),
            "order_stability": _json_float(float(metrics.order_stability(point, prob)))}
    kind = "pairwise" if args.over == "systems" else "percentile"
    return {"rule": ds.attrs["rule"], "over": args.over, "replicates": args.replicates, "seed": args.seed,
            "interval": {"kind": kind, "level": args.interval, "description": metrics.interval_description(kind, args.interval)},
            "ranking": rows, "stability": stab}


def _check_replicates(replicates: int, n_systems: int, *, at_least: bool = False) -> None:
    """Refuse, before allocating, a bootstrap whose replicate scores and ranks cannot fit in memory."""
    from .sweep import check_memory

    # replicate scores, replicate ranks and one rank array of the summary: 3 float64 per replicate and system
    check_memory(24.0 * replicates * n_systems, f"--replicates {replicates}: the replicate scores and ranks of "
                 f"{'at least ' if at_least else ''}{n_systems} systems", "use fewer replicates")


def _connect(scheduler: str | None) -> Any | None:
    """A client of ``--scheduler`` / ``DASK_SCHEDULER_ADDRESS`` (None: embedded); its dashboard link goes to stderr."""
    if not (scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")):
        return None  # in-process: distributed is not even imported
    from .distributed import connect

    client = connect(scheduler)
    if client is not None:
        try:
            link = client.dashboard_link
        except Exception:  # noqa: BLE001 - a scheduler started without a dashboard has no link
            link = None
        where = f"dask dashboard: {link}" if link else f"dask scheduler {client.scheduler.address} (no dashboard)"
        print(f"votebench: {where}", file=sys.stderr)
    return client


def _compute(ds: Any, client: Any | None) -> Any:
    """Compute a lazy result on ``client``'s cluster (the workers read the store's chunks), else with local threads."""
    if all(isinstance(v.data, np.ndarray) for v in ds.data_vars.values()):
        return ds
    if client is not None:
        return ds.compute(scheduler=client)
    import dask

    with dask.config.set(scheduler="threads"):
        return ds.compute()


def _is_store(path: str) -> bool:
    """A zarr store (local folder or URL): opened lazily, its chunks read by whoever computes."""
    from .io import is_url

    return is_url(path) or Path(path).is_dir()


def _lower_is_better(args: argparse.Namespace) -> list[str]:
    return [t.strip() for t in (getattr(args, "lower_is_better", None) or "").split(",") if t.strip()]


def _source(args: argparse.Namespace) -> Any:
    from .distributed import make_source

    return make_source(args.input, meta=args.meta, lower_is_better=_lower_is_better(args), loader=_loader_options(args))


def _open_input(args: argparse.Namespace) -> Any:
    """The scores of INPUT here: lazily for a store (also an fsspec URL), in memory for a table."""
    from .io import is_url

    if not is_url(args.input):
        return _load_scores(args)
    from .distributed import open_source

    return open_source(_source(args))


def _rule_label(opts: dict[str, Any]) -> str:
    """The label of a (two-step) rule request, as :attr:`engine.core.Plan.rule_label`, without the data."""
    from .rules import get_rule

    within = get_rule(opts["within"] or opts["rule"]).name
    across = get_rule(opts["across"] or opts["rule"]).name
    return across if within == across else f"{within}>{across}"


def _render_bootstrap(result: dict[str, Any], *, fmt: str, level: float) -> str:
    rows = result["ranking"]
    if fmt == "json":
        return json_text(result)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["rank", "system", "score", "rank_low", "rank_high", "tied_with_leader"])
        for d in rows:
            w.writerow([d["rank"], d["system"], repr(d["score"]), d["rank_low"], d["rank_high"], d["tied_with_leader"]])
        return buf.getvalue()

    def iv(d: dict[str, Any]) -> str:
        lo, hi = d["rank_low"], d["rank_high"]
        return "n/a" if lo is None else f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"

    counts: dict[int, int] = {}
    for d in rows:
        counts[d["rank"]] = counts.get(d["rank"], 0) + 1
    ranks = [str(d["rank"]) + ("=" if counts[d["rank"]] > 1 else " ") for d in rows]
    scores = [_fmt_score(d["score"]) for d in rows]
    ivs = [iv(d) for d in rows]
    wr = max(5, *(len(r) for r in ranks))
    ws = max(6, *(len(d["system"]) for d in rows))
    wsc = max(5, *(len(x) for x in scores))
    name = "rank range" if result["interval"]["kind"] == "pairwise" else "interval"
    wi = max(len(name), *(len(x) for x in ivs))
    st = result["stability"]
    fmt3 = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    lines = [
        f"# rule {result['rule']}, bootstrap over {result['over']}: {result['replicates']} replicates, seed {result['seed']}",
        f"# {name} = {result['interval']['description']}",
        f"# * = statistically tied with the leader (the leader scores above it in fewer than {100 * level:g}% of the "
        "replicates); '=' marks a shared rank",
        f"{'rank':>{wr}}    {'system':<{ws}}  {'score':>{wsc}}  {name:>{wi}}",
        f"{'-' * wr}    {'-' * ws}  {'-' * wsc}  {'-' * wi}",
    ]
    for d, r, sc, v in zip(rows, ranks, scores, ivs):
        mark = "*" if d["tied_with_leader"] else " "
        lines.append(f"{r:>{wr}} {mark}  {d['system']:<{ws}}  {sc:>{wsc}}  {v:>{wi}}")
    order = "n/a" if st["order_stability"] is None else f"{100 * st['order_stability']:.1f}%"
    lines.append(f"# stability: Kendall W {fmt3(st['kendall_w'])}, mean Spearman {fmt3(st['mean_spearman'])}, "
                 f"mean Kendall tau-b {fmt3(st['mean_kendall'])}, pair orders kept {order}")
    if st["kendall_w"] is None and result["over"] == "systems":
        lines.append("# (Kendall W needs systems present in every replicate: none is in a candidate bootstrap)")
    return "\n".join(lines) + "\n"


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .distributed import embedded_client
    from .sweep import load_config, open_results, resolve_store, run_sweep

    token = None
    if args.dashboard:
        from .dashboard import check_port, token_option

        check_port(args.port)
        token = token_option(args)
    elif args.exit_when_done:
        raise VotebenchError("--exit-when-done needs --dashboard")
    cfg = load_config(args.config, store=args.store)
    if args.lower_is_better:
        cfg = _with_lower_is_better(cfg, _lower_list(args.lower_is_better), where=args.config)
    _sweep_direction_notes(cfg)
    computed: list[Any] = []
    client = _connect(args.scheduler)
    embedded = args.dashboard and client is None
    if embedded:
        client = embedded_client()  # made here so that the page can link to its dask dashboard
    board = None
    try:
        if args.dashboard:
            from .dashboard import dask_dashboard_link, start_in_background

            board = start_in_background(resolve_store(cfg.store), host=args.host, port=args.port, token=token,
                                        dask_dashboard=dask_dashboard_link(client))
            after = ("until the page has the finished store: --exit-when-done" if args.exit_when_done else
                     "while the sweep runs and afterwards until Ctrl-C")
            print(f"votebench: live dashboard at {board.url} ({after})", file=sys.stderr, flush=True)
        path = run_sweep(cfg, client=client, overwrite=args.overwrite, progress=not args.no_progress,
                         on_block=computed.append)
        if client is not None:
            client.close()
            client = None
            if board is not None and embedded:
                board.set_dask_dashboard(None)  # the in-process scheduler is gone: its link would be dead
        groups = open_results(path)
        lines = [f"# results store {path}"]
        total = 0
        for name, ds in groups.items():
            done = ds["done"].values
            total += done.size
            lines.append(f"{name}: {dict(ds.sizes)}; blocks done {int(done.sum())}/{done.size}")
        print("\n".join(lines), flush=True)
        print(f"votebench: computed {len(computed)} of {total} blocks in this run", file=sys.stderr, flush=True)
        if board is not None:
            shown = board.wait_complete(30.0)
            if not shown:
                print("votebench: note: the dashboard did not see the finished store within 30 s", file=sys.stderr)
            if not args.exit_when_done:
                try:  # a Ctrl-C right after the message (the reader may act on it at once) also stops cleanly
                    print(f"votebench: sweep complete; the dashboard keeps serving {path} at {board.url} until Ctrl-C",
                          file=sys.stderr, flush=True)
                    while True:
                        time.sleep(3600)
                except KeyboardInterrupt:
                    print("votebench: dashboard stopped", file=sys.stderr)
    finally:
        if board is not None:
            board.stop()
        if client is not None:
            client.close()
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from .convert import convert

    info = convert(args.input, args.store, meta=args.meta, overwrite=args.overwrite)
    how = f"streamed {info['rows']} rows" if info["streamed"] else "read in memory"
    missing = "" if info["missing"] is None else f", {info['missing']} missing score(s)"
    print(f"votebench: wrote {info['store']}: {info['systems']} systems x {info['tasks']} tasks x {info['instances']} "
          f"instances{missing} ({how}; chunks of {info['chunks'][0]} task(s) x {info['chunks'][1]} instance(s) x all systems)",
          file=sys.stderr)
    return 0


def _with_lower_is_better(cfg: Any, lower: list[str], *, where: str) -> Any:
    """The sweep with ``--lower-is-better`` set on every input that does not say it itself (part of its provenance)."""
    from .sweep import parse_config

    raw = dict(cfg.raw)
    key = "inputs" if "inputs" in raw else "input"
    items = raw.get(key)
    many = isinstance(items, list)
    specs = [{"path": it} if isinstance(it, str) else dict(it) for it in (items if many else [items] if items else [])]
    for spec in specs:
        spec.setdefault("lower_is_better", lower)
    if specs:
        raw[key] = specs if many else specs[0]
    return parse_config(raw, where=where, base=cfg.base)


def _sweep_direction_notes(cfg: Any, limit: int = 50 << 20) -> None:
    """The direction note of every local table input of a sweep (read here only when under ``limit`` bytes)."""
    from .distributed import loader_keys, make_source
    from .io import directions_note, is_url, open_scores

    for inp in cfg.inputs:
        if is_url(inp["path"]):
            continue
        src = make_source(inp["path"], base=cfg.base, meta=inp.get("meta"))
        p = Path(src.path)
        if not p.is_file() or p.stat().st_size > limit:
            continue
        try:
            tasks = [str(t) for t in open_scores(p, meta=src.meta, **{k: inp[k] for k in loader_keys() if inp.get(k)})["task"].values]
        except VotebenchError:
            continue  # the sweep itself names the problem
        text = directions_note(p, tasks, meta=src.meta, lower_is_better=inp.get("lower_is_better", ()))
        if text:
            note(f"input {inp['name']}: {text}", now=True)


def _cmd_rules(args: argparse.Namespace) -> int:
    width = max(len(n) for n in RULES)
    for name in rule_names():
        r = RULES[name]
        kind = "one-pass" if r.one_pass else "in-memory"
        print(f"{name:<{width}}  {kind:<9}  {'pairwise' if r.missing == 'pairwise' else 'policy':<8}  {r.summary}")
    return 0


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # the first word that is not an option names the command: a command of this module needs no other module
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(only_own=command in OWN_COMMANDS)
    args = parser.parse_args(argv)
    try:
        if getattr(args, "config_file", None):
            # defaults < config file < flags: the file's values become the sub-command's defaults, then parse again
            sp = _subparsers(parser)[args.command]
            sp.set_defaults(**_config_defaults(sp, _read_config(args.config_file), args.config_file))
            args = parser.parse_args(argv)
        _NOTES.clear()
        code = int(args.func(args))
        for text in _NOTES:
            print(f"votebench: note: {text}", file=sys.stderr)
        return code
    except VotebenchError as exc:
        print(f"votebench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("votebench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
