"""Fig. 6 of Colombo et al. (2022) as the authors' own code computes it (oracle for experiments/colombo2022).

Not part of the package and not run by the tests (slow: the authors' ``scores_by_utterances`` reads every row with
``DataFrame.loc``). Run in the separate old-numpy environment of ``colombo_oracle.py``::

    "$OLDNP"/bin/python benchmarks/authors/colombo_instance_oracle.py --authors PATH/RankingNLPSystems \\
        --out experiments/colombo2022/authors_instance_outputs.json

It repeats cell 28 (``analyse_agreements``) of ``reproducing_paper_results/Instance Level Information
Experiement.ipynb`` with ``utils.py`` of commit 58c8d00 (``mean_aggregation`` = ``mean_aggregation_instance_level``)
on the authors' ``final_df/*.csv``: the three orders (``reverse_ranking`` of the mean, direct and two-level Borda
rankings) and ``scipy.stats.kendalltau`` between those orders, which is the value cell 31 averages per dataset.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from colombo_oracle import _utils  # noqa: E402  (same folder, a script)

DATASETS = ["DIALOG_pc.csv", "DIALOG_tc.csv", "FLICKR.csv", "MLQE.csv", "REAL_SUM.csv", "SUM_EVAL.csv", "TAC_08.csv",
            "TAC_09.csv", "TAC_11.csv"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--authors", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--datasets", nargs="*", default=DATASETS)
    args = ap.parse_args()
    import numpy as np
    import pandas as pd
    import scipy.stats as stats

    u = _utils(Path(args.authors), "58c8d00")
    out: dict = {"numpy": np.__version__, "pandas": pd.__version__, "utils_commit": "58c8d00", "datasets": {}}
    for ds in args.datasets:
        t0 = time.perf_counter()
        df = pd.read_csv(Path(args.authors) / "final_df" / ds).set_index(["System", "Utterance"])
        mean = u.reverse_ranking(u.mean_aggregation_instance_level(df)[0])
        direct = u.reverse_ranking(u.direct_aggregation(df))
        two = u.reverse_ranking(u.two_levels_aggregation(df))
        out["datasets"][ds] = {"mean2direct": float(stats.kendalltau(mean, direct)[0]),
                               "direct22l": float(stats.kendalltau(direct, two)[0]),
                               "mean22l": float(stats.kendalltau(mean, two)[0]),
                               "n_ranked": len(mean),
                               # best last in these orders (the notebook's a[-k:]): the top 3 of each procedure
                               "top3": {"mean": [int(v) for v in mean[-3:][::-1]],
                                        "direct": [int(v) for v in direct[-3:][::-1]],
                                        "two": [int(v) for v in two[-3:][::-1]]},
                               "seconds": time.perf_counter() - t0}
        print(ds, out["datasets"][ds], file=sys.stderr, flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
