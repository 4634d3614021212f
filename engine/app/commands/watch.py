"""``votebench watch``: a live leaderboard fed by evaluation outputs landing in a folder (:mod:`engine.watch`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from engine.app.options import SCHEDULER_HELP, add_rank_options, connect, loader_options, lower_list, rank_options
from engine.dims import BOOTSTRAP_AXES
from engine.errors import VotebenchError
from engine.kernels.checks import check_level

NAME = "watch"
HELP = "ingest evaluation outputs as they land in a folder, rank them live"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """DIR, ``--store``, the aggregation options, the bootstrap, the loop and the dashboard."""
    from engine.app.dashboard import add_server_options

    parser.add_argument("dir", metavar="DIR", help="folder of evaluation outputs: lm-eval --log_samples model folders, "
                        "HELM folders, JSONL / CSV / Parquet score files")
    parser.add_argument("--store", required=True, metavar="STORE",
                        help="zarr store of the merged scores and the ledger of ingested files (created, or resumed)")
    add_rank_options(parser)
    parser.add_argument("--over", default=None, choices=BOOTSTRAP_AXES,
                        help="also bootstrap over this axis after each ingestion (rank intervals); default: none")
    parser.add_argument("--replicates", type=int, default=200, metavar="B", help="bootstrap replicates (default: 200)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="bootstrap seed (default: 0)")
    parser.add_argument("--block", type=int, default=50, metavar="N", help="replicates per task (default: 50)")
    parser.add_argument("--coverage", type=float, default=0.95, metavar="LEVEL",
                        help="coverage of the rank intervals (default: 0.95)")
    parser.add_argument("--settle", type=float, default=5.0, metavar="SECONDS",
                        help="a file (not an lm-eval folder, complete with its results_*.json) is read once unchanged "
                        "for this long (default: 5)")
    parser.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                        help="seconds between two looks at DIR (default: 2)")
    parser.add_argument("--once", action="store_true",
                        help="ingest what is there, print the snapshot (JSON) on stdout and exit")
    parser.add_argument("--snapshot", default=None, metavar="FILE", help="also write each snapshot (JSON) to FILE")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)
    parser.add_argument("--dashboard", action="store_true", help="serve the live page of the leaderboard")
    add_server_options(parser)


def _options(args: argparse.Namespace) -> Any:
    from engine.labelled.canonical import read_sidecar
    from engine.watch import WatchOptions

    if args.settle < 0 or args.interval <= 0:
        raise VotebenchError(f"--settle must be >= 0 and --interval > 0, got {args.settle:g} and {args.interval:g}")
    if args.over is not None:
        from engine.limits import check_size

        check_size("--replicates", args.replicates, least=2)
        check_level(args.coverage, name="--coverage")
        if args.seed < 0 or args.block < 1:
            raise VotebenchError(f"--seed must be >= 0 and --block >= 1, got {args.seed} and {args.block}")
    return WatchOptions(settle=args.settle, rank=rank_options(args), loader=loader_options(args),
                        meta=read_sidecar(args.meta) if args.meta else None, lower_is_better=lower_list(args.lower_is_better),
                        over=args.over, replicates=args.replicates, seed=args.seed, block=args.block,
                        interval=args.coverage, own_files=(args.snapshot,) if args.snapshot else ())


def _say(level: str, text: str) -> None:
    from engine.app.cli import one_line

    tag = {"error": "bad output: ", "note": "note: "}.get(level, "")
    print(f"votebench: watch: {tag}{one_line(text)}", file=sys.stderr, flush=True)


def _published(watcher: Any, args: argparse.Namespace) -> None:
    if args.snapshot and watcher.snapshot is not None:
        from engine.io.files import atomic_write_text

        atomic_write_text(args.snapshot, json.dumps({**watcher.snapshot, "version": watcher.version}, indent=1))


def run(args: argparse.Namespace) -> int:
    """Watch DIR until Ctrl-C (or once, with ``--once``)."""
    from engine.app.dashboard import check_port, token_option
    from engine.watch import Watcher

    options = _options(args)
    if args.dashboard:
        check_port(args.port)
    token = token_option(args) if args.dashboard else None
    client = connect(args.scheduler)
    watcher = Watcher(args.dir, args.store, options, client=client, say=_say)
    page = None
    try:
        if args.dashboard and not args.once:
            page = _start_page(watcher, args, token)
        if args.once:
            watcher.poll()
            _published(watcher, args)
            snap = watcher.snapshot or {"kind": "watch", "status": "empty", "ranking": [], "waiting": watcher.waiting}
            print(json.dumps({**snap, "version": watcher.version}, indent=1, allow_nan=False))
            return 0
        print(f"votebench: watching {args.dir} into {args.store} every {args.interval:g} s (Ctrl-C to stop)",
              file=sys.stderr, flush=True)
        _loop(watcher, args)
    except KeyboardInterrupt:
        print("votebench: watch stopped", file=sys.stderr)
    finally:
        if page is not None:
            page.stop()
        watcher.close()
        if client is not None:
            client.close()
    return 0


def _loop(watcher: Any, args: argparse.Namespace) -> None:
    import signal

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)  # a service manager's stop: the same clean end as Ctrl-C
    while True:
        if watcher.poll():
            _published(watcher, args)
        time.sleep(args.interval)


def _start_page(watcher: Any, args: argparse.Namespace, token: str | None) -> Any:
    from engine.app.dashboard import is_loopback, start_in_background
    from engine.app.watch_page import WatchLive, watch_web

    page = start_in_background(args.store, host=args.host, port=args.port, token=token, live=WatchLive(watcher),
                               web=watch_web())
    print(f"votebench watch dashboard at {page.url}", flush=True)
    if not is_loopback(args.host):
        print("votebench: note: the dashboard is reachable beyond this machine over plain HTTP; the token in the "
              "URL is required on every request", file=sys.stderr, flush=True)
    return page


#: the description of ``votebench watch --help``
DESCRIPTION = ("Watch a folder of evaluation outputs: each complete new model output (an lm-eval folder once its "
               "results_*.json exists; other files once unchanged for --settle seconds) is read with the registered "
               "readers and merged into STORE, the ranking (the same as `votebench rank STORE`) and, with --over, the "
               "bootstrap are recomputed, and a snapshot of what changed is published (--snapshot FILE, --dashboard, "
               "--once). STORE records every ingested file with its checksum: a restarted watch reads nothing twice. "
               "A bad output is said in one line on stderr and skipped.")
