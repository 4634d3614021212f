"""``votebench sweep``: run a sweep file into a resumable results store (:func:`engine.sweep.run_sweep`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from engine.app.options import SCHEDULER_HELP, connect, lower_list
from engine.app.output import note, store_line
from engine.errors import VotebenchError

NAME = "sweep"
HELP = "run a sweep file (rules x perturbations) into a resumable results store"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """CONFIG, ``--store``, ``--scheduler``, ``--overwrite``, ``--no-progress``, the live dashboard's options."""
    from engine.app.dashboard import add_server_options

    parser.add_argument("config", metavar="CONFIG", help="sweep file (.toml, .yaml)")
    parser.add_argument("--store", default=None, metavar="PATH", help="results store (overrides the file's store)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)
    parser.add_argument("--overwrite", action="store_true", help="start from an empty store")
    parser.add_argument("--dashboard", action="store_true",
                        help="serve a live dashboard of the results store while the sweep runs, and afterwards until "
                        "Ctrl-C (see `votebench serve`)")
    parser.add_argument("--exit-when-done", action="store_true",
                        help="with --dashboard: stop serving and exit once the page has the finished store (for scripts)")
    parser.add_argument("--lower-is-better", default=None, metavar="TASKS",
                        help="comma-separated tasks where lower scores are better, for every input that does not give its "
                        "own lower_is_better (recorded in the store's config)")
    add_server_options(parser)


def run(args: argparse.Namespace) -> int:
    """Load the sweep, run it (with the live dashboard when asked), print what the store holds."""
    from engine.distributed import embedded_client
    from engine.io.files import storage_errors
    from engine.sweep import direction_notes, load_config, resolve_store, run_sweep

    token = None
    if args.dashboard:
        from engine.app.dashboard import check_port, token_option

        check_port(args.port)
        token = token_option(args)
    elif args.exit_when_done:
        raise VotebenchError("--exit-when-done needs --dashboard")
    cfg = load_config(args.config, store=args.store, lower_is_better=lower_list(args.lower_is_better))
    for text in direction_notes(cfg):
        note(text, now=True)
    computed: list[Any] = []
    client = connect(args.scheduler)
    cfg = _blocks(cfg, client, args.overwrite)
    embedded = args.dashboard and client is None
    if embedded:
        client = embedded_client()  # made here so that the page can link to its dask dashboard
    board = None
    try:
        if args.dashboard:
            board = _start_dashboard(args, resolve_store(cfg.store), client, token)
        with storage_errors(resolve_store(cfg.store), "results store", "re-run to resume"):  # a full disk: one line
            path = run_sweep(cfg, client=client, overwrite=args.overwrite, progress=not args.no_progress,
                             on_block=computed.append, on_open=store_line)
        if client is not None:
            client.close()
            client = None
            if board is not None and embedded:
                board.set_dask_dashboard(None)  # the in-process scheduler is gone: its link would be dead
        _print_store(path, len(computed))
        if board is not None:
            _serve_on(board, path, exit_when_done=args.exit_when_done)
    finally:
        if board is not None:
            board.stop()
        if client is not None:
            client.close()
    return 0


def _blocks(cfg: Any, client: Any | None, overwrite: bool) -> Any:
    """The sweep with a block for every perturbation that omits one: the resumed store's, else chosen for the
    cluster (said in a note), else the kind's default (:func:`engine.sweep.sizing.sized_blocks`)."""
    from engine.sweep.sizing import sized_blocks

    shape = None
    if client is not None:
        from engine.distributed.cluster import cluster_shape

        shape = cluster_shape(client)
    try:
        cfg, notes = sized_blocks(cfg, shape, overwrite=overwrite)
    except BaseException:
        if client is not None:
            client.close()
        raise
    for text in notes:
        note(text)
    return cfg


def _start_dashboard(args: argparse.Namespace, store: Any, client: Any | None, token: str | None) -> Any:
    from engine.app.dashboard import dask_dashboard_link, start_in_background

    board = start_in_background(store, host=args.host, port=args.port, token=token,
                                dask_dashboard=dask_dashboard_link(client), run=True,
                                replaces=args.overwrite)
    after = ("until the page has the finished store: --exit-when-done" if args.exit_when_done else
             "while the sweep runs and afterwards until Ctrl-C")
    print(f"votebench: live dashboard at {board.url} ({after})", file=sys.stderr, flush=True)
    return board


def _print_store(path: Any, computed: int) -> None:
    """The groups of the store and their finished blocks (stdout), and how many this run computed (stderr)."""
    from engine.sweep import open_results, readable_results

    lines = [f"# results store {path}"]
    total = 0
    with readable_results(path):
        for name, ds in open_results(path).items():
            done = ds["done"].values
            total += done.size
            lines.append(f"{name}: {dict(ds.sizes)}; blocks done {int(done.sum())}/{done.size}")
    print("\n".join(lines), flush=True)
    print(f"votebench: computed {computed} of {total} blocks in this run", file=sys.stderr, flush=True)


def _serve_on(board: Any, path: Any, *, exit_when_done: bool) -> None:
    """After the sweep: wait until the page has the finished store, then keep serving until Ctrl-C (unless told not to)."""
    if not board.wait_complete(30.0):
        print("votebench: note: the dashboard did not see the finished store within 30 s", file=sys.stderr)
    if exit_when_done:
        return
    try:  # a Ctrl-C right after the message (the reader may act on it at once) also stops cleanly
        print(f"votebench: sweep complete; the dashboard keeps serving {path} at {board.url} until Ctrl-C",
              file=sys.stderr, flush=True)
        # short waits: a SIGINT that the kernel hands to another thread of this process (dask's, the server's) still
        # raises KeyboardInterrupt here within a second, where one long sleep would not wake up
        while board.alive:
            time.sleep(1.0)
        print("votebench: note: the dashboard's server stopped by itself", file=sys.stderr)
    except KeyboardInterrupt:
        print("votebench: dashboard stopped", file=sys.stderr)


#: the description of ``votebench sweep --help``
DESCRIPTION = ("Compile a TOML/YAML sweep (inputs, rules with options, bootstraps, task subsets, parameter grids, "
               "seed, store) into dask tasks; blocks are written to the zarr store as they finish and a re-run computes "
               "only what is missing. A perturbation whose block is not given gets one sized from the cluster with "
               "--scheduler (about 4 tasks per worker thread; a note says so), else the kind's default; a resumed "
               "store keeps its own.")
