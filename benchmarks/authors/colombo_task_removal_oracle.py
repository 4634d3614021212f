"""Fig. 5 / 8 of Colombo et al. (2022) as the authors' own code computes it (oracle for experiments/colombo2022).

Not part of the package and not run by the tests. Run in the separate old-numpy environment of ``colombo_oracle.py``::

    "$OLDNP"/bin/python benchmarks/authors/colombo_task_removal_oracle.py --authors PATH/RankingNLPSystems \\
        --out experiments/colombo2022/authors_task_removal_outputs.json

It repeats cells 17, 18 and 20 of ``reproducing_paper_results/Task Level Information Experiement.ipynb`` (task
removal, "Robutness experiement when removing metrics") with ``utils.py`` of commit 58c8d00 (``mean_aggregation`` =
``mean_aggregation_task_level``) on the authors' ``data/{xtrem,glue,superglue}.data``: for 1000 random column orders
(``random.seed(42)``, as cell 20 calls it), the rankings of the first ``i`` columns by the mean and by the Borda count,
and ``scipy.stats.kendalltau`` of each against the same procedure on all columns. The figure plots the mean (and a
band) of that tau per number of columns; the script writes the mean and the standard deviation per number of columns.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from colombo_oracle import _utils  # noqa: E402  (same folder, a script)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--authors", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=1000, help="random column orders (cell 20: 1000)")
    ap.add_argument("--datasets", nargs="*", default=["superglue", "xtrem", "glue"])
    args = ap.parse_args()
    import numpy as np
    import pandas as pd
    import scipy.stats as stats

    warnings.simplefilter("ignore", FutureWarning)  # pandas 1.5: iteritems of the authors' utils.py
    root = Path(args.authors)
    u = _utils(root, "58c8d00")
    out: dict = {"numpy": np.__version__, "pandas": pd.__version__, "utils_commit": "58c8d00", "seed": 42,
                 "samples": args.samples,
                 "source": "Task Level Information Experiement.ipynb, cells 17 (generate_metric_experiments_benchmark), "
                           "18 (compute_results_experiments_benchmark), 20 (seed 42)", "datasets": {}}
    for ds in args.datasets:
        t0 = time.perf_counter()
        path = root / "data" / f"{ds}.data"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = pd.read_csv(path, index_col=False)
            considered = pd.read_csv(path, index_col=False, usecols=[i for i in range(df.shape[1]) if i != 1])
        considered = considered.set_index(["Model"])
        columns = list(considered.columns)
        # cell 17
        random.seed(42)
        runs: dict = {"mean": {i: [] for i in range(1, len(columns) + 1)},
                      "ranking": {i: [] for i in range(1, len(columns) + 1)}}
        for _ in range(args.samples):
            random.shuffle(columns)
            for i in range(1, len(columns) + 1):
                sub = considered[columns[:i]]
                runs["mean"][i].append(u.mean_aggregation_task_level(sub)[0])
                runs["ranking"][i].append(u.ranking_aggregation(sub))
        # cell 18
        ref = {"mean": u.mean_aggregation_task_level(considered)[0], "ranking": u.ranking_aggregation(considered)}
        block: dict = {"n_tasks": len(columns), "n_systems": int(considered.shape[0]), "sizes": [], "mean": {},
                       "std": {}}
        block["sizes"] = list(range(1, len(columns) + 1))
        for k in ("mean", "ranking"):
            taus = [[float(stats.kendalltau(r, ref[k])[0]) for r in runs[k][i]] for i in block["sizes"]]
            block["mean"][k] = [float(np.nanmean(t)) for t in taus]
            block["std"][k] = [float(np.nanstd(t)) for t in taus]
        block["seconds"] = time.perf_counter() - t0
        out["datasets"][ds] = block
        print(ds, f"{block['seconds']:.0f} s", file=sys.stderr, flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
