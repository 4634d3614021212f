"""``votebench rank``: rank the systems of one or more inputs (:func:`engine.distributed.rank_input`)."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from engine.app.options import add_inputs, add_output_options, each_input, loader_options, lower_list, rank_options
from engine.app.output import direction_note, note, policy_note, ranking_records, render_ranking, render_rankings, write_output

NAME = "rank"
HELP = "rank the systems of a score table or store"


def run(args: argparse.Namespace) -> int:
    """Rank every input (all before anything is printed: an error leaves no partial output), then print."""
    from engine.distributed import rank_input
    from engine.io.readers import input_kind

    opts = rank_options(args)

    def one_input(one: argparse.Namespace, client: Any | None, prefix: str) -> tuple[Any, Any]:
        if input_kind(one.input, getattr(one, "input_format", None)) == "battles":  # another input kind: engine.io.battles
            from engine.io.battles import battle_request, rank_battles

            return rank_battles(one.input, **battle_request(opts, one.input)), None
        return rank_input(one.input, client=client, meta=one.meta, lower_is_better=lower_list(one.lower_is_better),
                          loader=loader_options(one), **opts)

    results = each_input(args, one_input)
    several = len(results) > 1
    rendered = []
    for one, (ds, scores) in results:
        systems = [str(s) for s in ds["system"].values]
        score = np.asarray(ds["score"].values, dtype=float)
        prefix = f"{one.input}: " if several else ""
        direction_note(one, scores, prefix=prefix)
        policy_note(opts["missing"], [s for s, v in zip(systems, score) if math.isnan(v)], scores, prefix=prefix)
        for text in ds.attrs.get("notes", ()):
            note(prefix + text)
        rows = ranking_records(systems, score, np.nan_to_num(ds["rank"].values))
        rendered.append((one.input, rows, {"rule": ds.attrs["rule"], "level": ds.attrs["level"],
                                           **ds.attrs.get("header", {})}))
    if several:
        text = render_rankings(rendered, fmt=args.format)
    else:
        _, rows, header = rendered[0]
        text = render_ranking(rows, fmt=args.format, header=header)
    write_output(text, args.output)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT..., the aggregation options, ``--scheduler``, ``--format``, ``--output``."""
    add_inputs(parser, "score file or zarr store (a <name>.meta.json sidecar is read when present); several inputs are "
               "ranked one after the other in this process, one ranking per input")
    add_output_options(parser)


#: the description of ``votebench rank --help``
DESCRIPTION = ("Aggregate scores (CSV wide or long, .csv.gz, Parquet, zarr store) into a ranking. With several "
               "inputs (e.g. data/colombo_*.csv*) each is ranked with the same options and printed under a '## INPUT' "
               "header; --format json then prints a list of rankings, each with an \"input\" key, and csv adds an input "
               "column.")
