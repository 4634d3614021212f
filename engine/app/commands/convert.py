"""``votebench convert``: write a score file to a zarr store (:func:`engine.io.convert.convert`)."""

from __future__ import annotations

import argparse
import sys

from engine.app.options import add_scheduler_option, cluster

NAME = "convert"
HELP = "write a score file to a zarr store; a long CSV is streamed with bounded memory (for large inputs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT, STORE, ``--meta``, ``--overwrite``, ``--scheduler``."""
    parser.add_argument("input", metavar="INPUT", help="score file (long CSV streamed; any other input read in memory)")
    parser.add_argument("store", metavar="STORE", help="zarr store to write (a folder)")
    parser.add_argument("--meta", default=None, metavar="FILE",
                        help="sidecar JSON with task directions and groups (default: <name>.meta.json beside INPUT)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing zarr store")
    add_scheduler_option(parser, "a long CSV is cut into parts of whole lines that the workers parse, and the "
                         "store's chunks are written by the workers as regions of the store (the input and the "
                         "store's folder must be reachable under the same path from every worker); a .csv.gz and "
                         "any other input are converted here. The store is the same either way")


def run(args: argparse.Namespace) -> int:
    """Convert, then say on stderr what was written and how."""
    from engine.io.convert import convert
    from engine.io.files import storage_errors

    with cluster(args) as client, \
            storage_errors(args.store, "zarr store", "nothing was written (re-run when there is room)"):
        if client is None:
            info = convert(args.input, args.store, meta=args.meta, overwrite=args.overwrite)
        else:
            from engine.distributed.convert import convert_on_cluster

            info = convert_on_cluster(client, args.input, args.store, meta=args.meta, overwrite=args.overwrite)
    how = f"streamed {info['rows']} rows" if info["streamed"] else "read in memory"
    if info.get("where") == "cluster":
        how = f"{info['rows']} rows parsed in {info['parts']} part(s) and written in {info['slabs']} slab(s) on the cluster"
    elif info.get("where"):
        how += f"; converted in {info['where']}"
    missing = "" if info["missing"] is None else f", {info['missing']} missing score(s)"
    print(f"votebench: wrote {info['store']}: {info['systems']} systems x {info['tasks']} tasks x {info['instances']} "
          f"instances{missing} ({how}; chunks of {info['chunks'][0]} task(s) x {info['chunks'][1]} instance(s) x all "
          "systems)", file=sys.stderr)
    return 0


#: the description of ``votebench convert --help``
DESCRIPTION = ("Write INPUT to the zarr store STORE (the format `engine.to_zarr` writes, opened by every command). "
               "A long CSV (system,task,instance,score; .csv or .csv.gz) is streamed block by block, so 1e8 rows need well "
               "under 2 GB of memory; other inputs are read in memory first. The sidecar (<name>.meta.json beside INPUT, "
               "or --meta) goes into the store. With --scheduler (or DASK_SCHEDULER_ADDRESS) the workers parse a plain "
               "long CSV in parts and write the store's chunks: the same store, byte for byte.")
