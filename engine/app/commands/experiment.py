"""``votebench experiment``: reproduce a paper's tables and figures (:func:`engine.app.experiment.run_experiment`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from engine.errors import VotebenchError

NAME = "experiment"
HELP = "reproduce a paper's tables and figures (experiments/<name>/run.py)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """NAME, ``--list``, ``--smoke``, ``--out``, ``--scheduler``, ``--root``."""
    p = parser
    p.add_argument("name", nargs="?", default=None, metavar="NAME", help="experiment to run (see --list)")
    p.add_argument("--list", action="store_true",
                   help="list the experiments and exit (their titles are read, no run.py is executed)")
    p.add_argument("--smoke", action="store_true", help="reduced size (a few seconds; what CI runs)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder (default: results/experiments/NAME in the repository)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="address of a running dask scheduler (default: DASK_SCHEDULER_ADDRESS, else everything runs in "
                   "this process); on the cluster: the dask tasks an experiment builds (pavao2021 and votenrank2023 "
                   "build theirs from their grid of settings) and the blocks of the engine's bootstraps and paired "
                   "tests inside any experiment; the rest of an experiment (reading data, tables, figures) runs here. "
                   "The results are the same either way")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="project folder holding experiments/ and data/ (default: found through the installed package, "
                   "or $VOTEBENCH_ROOT)")


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def run(args: argparse.Namespace) -> int:
    """List the experiments, or run one and say where its results are."""
    from engine.app import experiment as ex

    if args.root is not None:  # an explicit project folder (experiments/ and data/ inside)
        ex.use_root(args.root)
    if args.list:
        if args.name is not None:
            raise VotebenchError("give either an experiment name or --list, not both")
        names = ex.experiment_names()
        if not names:
            print(f"no experiments in {ex.experiments_dir()}")
            return 0
        width = max(len(n) for n in names)
        for name in names:
            try:
                title = _one_line(ex.experiment_title(name))  # read from the source: listing runs no code of DIR
            except VotebenchError as exc:
                title = f"(cannot be loaded: {exc})"
            print(f"{name:<{width}}  {title}")
        return 0
    if args.name is None:
        raise VotebenchError("give an experiment name (votebench experiment --list shows them)")
    scheduler = args.scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None  # connected to by the experiment
    result = ex.run_experiment(args.name, out=args.out, smoke=args.smoke, scheduler=scheduler)
    size = "smoke size" if args.smoke else "full size"
    print(f"experiment {args.name} ({size}) finished in {result['seconds']:.1f} s")
    print(f"results: {result['out']} (README.md, results.json, figures/)")
    return 0


#: the description and epilog of ``votebench experiment --help``
DESCRIPTION = ("Run one of the paper reproductions in experiments/: it writes results.json, a README.md that puts "
               "the paper's numbers beside ours, and figures/ into the output folder.")
EPILOG = "Examples: votebench experiment --list; votebench experiment pavao2021 --smoke"
