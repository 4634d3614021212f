"""``votebench convert``: write a score file to a zarr store (:func:`engine.io.convert.convert`)."""

from __future__ import annotations

import argparse
import sys

NAME = "convert"
HELP = "write a score file to a zarr store; a long CSV is streamed with bounded memory (for large inputs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT, STORE, ``--meta``, ``--overwrite``."""
    parser.add_argument("input", metavar="INPUT", help="score file (long CSV streamed; any other input read in memory)")
    parser.add_argument("store", metavar="STORE", help="zarr store to write (a folder)")
    parser.add_argument("--meta", default=None, metavar="FILE",
                        help="sidecar JSON with task directions and groups (default: <name>.meta.json beside INPUT)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing zarr store")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="not used: convert runs in this process (a CSV is streamed in order, block by block, and "
                        "each block written as it is read; any other input is read in memory here); given, or "
                        "DASK_SCHEDULER_ADDRESS, a note says so. Convert once, then give the store to the commands "
                        "that run on a cluster")


def run(args: argparse.Namespace) -> int:
    """Convert, then say on stderr what was written and how."""
    import os

    from engine.io.convert import convert
    from engine.io.files import storage_errors

    address = args.scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        print(f"votebench: note: convert runs in this process; the dask scheduler {address} is not used",
              file=sys.stderr)

    with storage_errors(args.store, "zarr store", "nothing was written (re-run when there is room)"):
        info = convert(args.input, args.store, meta=args.meta, overwrite=args.overwrite)
    how = f"streamed {info['rows']} rows" if info["streamed"] else "read in memory"
    missing = "" if info["missing"] is None else f", {info['missing']} missing score(s)"
    print(f"votebench: wrote {info['store']}: {info['systems']} systems x {info['tasks']} tasks x {info['instances']} "
          f"instances{missing} ({how}; chunks of {info['chunks'][0]} task(s) x {info['chunks'][1]} instance(s) x all "
          "systems)", file=sys.stderr)
    return 0


#: the description of ``votebench convert --help``
DESCRIPTION = ("Write INPUT to the zarr store STORE (the format `engine.to_zarr` writes, opened by every command). "
               "A long CSV (system,task,instance,score; .csv or .csv.gz) is streamed block by block, so 1e8 rows need well "
               "under 2 GB of memory; other inputs are read in memory first. The sidecar (<name>.meta.json beside INPUT, "
               "or --meta) goes into the store.")
