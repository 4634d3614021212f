"""``votebench serve``: the live dashboard of a results store (:func:`engine.app.dashboard.serve`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.errors import VotebenchError

NAME = "serve"
HELP = "live dashboard of a sweep results store (read-only web page)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """STORE, ``--host``, ``--port``, ``--token``, ``--dask-dashboard``."""
    from engine.app.dashboard import add_server_options

    parser.add_argument("store", metavar="STORE", help="results store written by `votebench sweep`")
    add_server_options(parser)
    parser.add_argument("--dask-dashboard", default=None, metavar="URL", help="link to a dask dashboard to show on the page")


def run(args: argparse.Namespace) -> int:
    """Check the options and the store (one line on failure), then serve until Ctrl-C."""
    from engine.app.dashboard import check_port, is_loopback, serve, snapshot, token_option

    check_port(args.port)
    token = token_option(args)
    path = Path(args.store)
    if not path.exists():
        raise VotebenchError(f"{args.store}: no such results store")
    snapshot(path)  # fail now, with one line, on a folder that is not a results store

    def ready(url: str) -> None:
        print(f"votebench dashboard of {path} at {url} (Ctrl-C to stop)", flush=True)
        if not is_loopback(args.host):
            print("votebench: note: the dashboard is reachable beyond this machine over plain HTTP; the token in the "
                  "URL is required on every request", file=sys.stderr, flush=True)

    try:
        serve(path, host=args.host, port=args.port, dask_dashboard=args.dask_dashboard, token=token, on_ready=ready)
    except KeyboardInterrupt:
        print("votebench: dashboard stopped", file=sys.stderr)
    return 0


#: the description of ``votebench serve --help``
DESCRIPTION = ("Serve a page showing a results store as it fills: progress, a leaderboard with rank intervals "
               "per rule, the leader and the systems tied with it per rule and perturbation, rank changes across rules, "
               "stability and agreement between rules. Read-only; binds 127.0.0.1 unless told otherwise (then a token is "
               "required).")
