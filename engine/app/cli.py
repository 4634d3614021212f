"""The ``votebench`` command line: the parser, assembled from the sub-command modules, and :func:`main`.

Every user-facing failure (bad input, unknown option) ends with exit code 2
and one line on stderr naming the problem; output files are written
atomically, so a failed run leaves nothing half-written.

A sub-command is a module of :mod:`engine.app.commands` (``NAME``, ``HELP``,
``add_arguments(parser)``, ``run(args) -> int``) listed in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib import import_module
from types import ModuleType
from typing import Any, NoReturn

from engine.app import output
from engine.app.options import add_progress_option, progress_shown
from engine.errors import VotebenchError

__all__ = ["COMMANDS", "build_parser", "command_module", "main", "one_line", "subparsers"]

#: the sub-commands, in the order of ``votebench --help``: a module, or the name of one in :mod:`engine.app.commands`
#: (imported only when its command runs, or for ``--help``)
COMMANDS: tuple[ModuleType | str, ...] = ("rank", "condorcet", "bootstrap", "compare", "agreement", "sweep", "convert", "rules",
                                          "report", "serve", "experiment", "watch")


def command_module(command: ModuleType | str) -> ModuleType:
    """A sub-command's module: ``command`` itself, or the module of :mod:`engine.app.commands` it names."""
    return command if isinstance(command, ModuleType) else import_module(f"engine.app.commands.{command}")


def _needed(commands: Sequence[ModuleType | str], argv: Sequence[str]) -> list[ModuleType | str]:
    """The commands a parse of ``argv`` needs: the one it names (the others are not imported), else all (for ``--help``)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    named = [c for c in commands if (c.NAME if isinstance(c, ModuleType) else c) == first]
    return named or list(commands)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class _VersionAction(argparse.Action):
    """``--version``: prints the installed version (looked up only when asked)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from engine import __version__

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
  votebench compare data/colombo_tac08.csv.gz --systems M59,M26,M50   paired tests, letter groups
  votebench agreement data/vnr_glue.csv data/colombo_glue.csv         Kendall tau of two benchmarks

input: CSV (wide: system + one column per task; long: system,task,instance,score), Parquet, a zarr store,
lm-evaluation-harness or HELM output folders, JSONL; a <name>.meta.json sidecar gives task directions and groups.
battle files (model_a,model_b,winner records): rank/bootstrap with --rule bradley_terry|elo|win_rate (--over battles).
every command takes --config FILE (defaults < file < flags); --scheduler ADDRESS or DASK_SCHEDULER_ADDRESS
runs on a dask cluster (default: in-process)."""


def build_parser(commands: Sequence[ModuleType | str] = COMMANDS) -> argparse.ArgumentParser:
    """The ``votebench`` argument parser, one sub-parser per module of ``commands``.

    Parameters
    ----------
    commands : sequence of modules or names
        Sub-command modules (``NAME``, ``HELP``, ``add_arguments``, ``run``; optional
        ``DESCRIPTION``, ``EPILOG``), or names of modules of :mod:`engine.app.commands`, in the order of
        ``--help`` (default :data:`COMMANDS`).

    Returns
    -------
    argparse.ArgumentParser
        The parser; :func:`subparsers` gives its sub-parsers by name.  Each sub-parser also takes
        ``--config FILE`` and sets ``func`` to its module's ``run``.
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
    for module in map(command_module, commands):
        sp = sub.add_parser(module.NAME, help=module.HELP, description=getattr(module, "DESCRIPTION", None),
                            epilog=getattr(module, "EPILOG", None))
        module.add_arguments(sp)
        sp.set_defaults(func=module.run)
        add_progress_option(sp)
        sp.add_argument("--config", dest="config_file", default=None, metavar="FILE",
                        help=f"TOML or JSON file of `{module.NAME}` options by their long names (e.g. missing = \"listwise\"; "
                        "rank/bootstrap also take an [options] table of rule options); defaults < file < flags")
    return p


def quiet_connection_errors(record: logging.LogRecord) -> bool:
    """Logging filter: drop the dask client's tracebacks about a lost scheduler connection.

    When the scheduler goes away, ``distributed.client`` logs its failed reconnections with full tracebacks; the
    command says what happened itself, in one line (:class:`~engine.errors.ClusterLost`), so these records are noise.
    Other records pass.
    """
    if "reconnect" in str(record.msg).lower():  # "Failed to reconnect to scheduler after 30 s, closing client"
        return False
    exc = record.exc_info[1] if record.exc_info else None
    if exc is None:
        return True
    from asyncio import CancelledError as AsyncCancelled
    from concurrent.futures import CancelledError

    return not isinstance(exc, AsyncCancelled | CancelledError | OSError | TimeoutError | EOFError) and \
        type(exc).__name__ not in ("CommClosedError", "StreamClosedError")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-parsers of ``parser`` (:func:`build_parser`) by sub-command name."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def one_line(message: str) -> str:
    """``message`` on one line: a line break or other control character a user's name brought in is shown escaped."""
    return "".join(c if c.isprintable() or c == "\t" else repr(c)[1:-1] for c in message)


def main(argv: Sequence[str] | None = None, *, commands: Sequence[ModuleType | str] = COMMANDS) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or usage, 75 cluster lost: re-run to resume, 130 interrupted).

    ``commands``: the sub-commands (default :data:`COMMANDS`); only the one ``argv`` names is imported.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_needed(commands, argv))
    args = parser.parse_args(argv)
    engine_log = logging.getLogger("engine")
    to_notes = output.NoteHandler()  # the engine's warnings are printed as notes when the command succeeds
    engine_log.addHandler(to_notes)
    dask_client_log = logging.getLogger("distributed.client")
    dask_client_log.addFilter(quiet_connection_errors)
    try:
        if getattr(args, "config_file", None):
            # defaults < config file < flags: the file's values become the sub-command's defaults, then parse again
            from engine.app.config import config_defaults, read_config

            sp = subparsers(parser)[args.command]
            sp.set_defaults(**config_defaults(sp, read_config(args.config_file), args.config_file))
            args = parser.parse_args(argv)
        output.clear_notes()
        with progress_shown(args):
            code = int(args.func(args))
        for line in output.pending_where():
            print(line, file=sys.stderr)
        for text in output.pending_notes():
            print(f"votebench: note: {text}", file=sys.stderr)
        return code
    except VotebenchError as exc:
        print(f"votebench: error: {one_line(str(exc))}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))
    except KeyboardInterrupt:
        print("votebench: interrupted", file=sys.stderr)
        return 130
    finally:
        engine_log.removeHandler(to_notes)
        dask_client_log.removeFilter(quiet_connection_errors)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
