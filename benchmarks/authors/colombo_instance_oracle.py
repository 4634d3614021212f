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
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from colombo_oracle import _utils  # noqa: E402  (same folder, a script)

COMPARISONS = {"mean2direct": ("mean", "direct"), "direct22l": ("direct", "two"), "mean22l": ("mean", "two")}
DATASETS = ["DIALOG_pc.csv", "DIALOG_tc.csv", "FLICKR.csv", "MLQE.csv", "REAL_SUM.csv", "SUM_EVAL.csv", "TAC_08.csv",
            "TAC_09.csv", "TAC_11.csv"]


def _fig9(u, stats, np, root: Path, ds: str, df, ref: dict) -> dict | None:
    """Cell 8's compute_distances on the authors' saved subset rankings of ``ds`` (None when none is shipped)."""
    folder = root / "synthetic_metrics_scores"
    for n in (50, 4):
        path = folder / f"synthetic_metric_scores_{ds}_{n}.json"
        if path.is_file() and path.stat().st_size:
            break
    else:
        return None
    saved = json.loads(path.read_text(encoding="utf-8"))
    n_cols = df.shape[1]
    out: dict = {"file": path.name, "draws": n, "n_columns": n_cols, "mean": {}, "std": {}, "sizes": [],
                 "all_columns_equal_reference": {}}
    for k, by_size in saved.items():
        sizes = sorted(by_size, key=int)
        out["sizes"] = [int(s) for s in sizes]
        taus = [[float(stats.kendalltau(r, ref[k])[0]) for r in by_size[s]] for s in sizes]
        out["mean"][k] = [float(np.nanmean(t)) for t in taus]
        out["std"][k] = [float(np.nanstd(t)) for t in taus]
        full = by_size[str(n_cols)] if str(n_cols) in by_size else []
        out["all_columns_equal_reference"][k] = all(list(r) == list(ref[k]) for r in full) if full else None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--authors", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--datasets", nargs="*", default=DATASETS)
    args = ap.parse_args()
    import numpy as np
    import pandas as pd
    import scipy.stats as stats

    warnings.simplefilter("ignore", FutureWarning)  # pandas 1.5 on the authors' utils.py

    u = _utils(Path(args.authors), "58c8d00")
    out: dict = {"numpy": np.__version__, "pandas": pd.__version__, "utils_commit": "58c8d00", "datasets": {}}
    for ds in args.datasets:
        t0 = time.perf_counter()
        df = pd.read_csv(Path(args.authors) / "final_df" / ds).set_index(["System", "Utterance"])
        ranks = {"mean": u.mean_aggregation_instance_level(df)[0], "direct": u.direct_aggregation(df),
                 "2steps": u.two_levels_aggregation(df)}
        mean, direct, two = (u.reverse_ranking(ranks[k]) for k in ("mean", "direct", "2steps"))
        out["datasets"][ds] = {"mean2direct": float(stats.kendalltau(mean, direct)[0]),
                               "direct22l": float(stats.kendalltau(direct, two)[0]),
                               "mean22l": float(stats.kendalltau(mean, two)[0]),
                               "n_ranked": len(mean),
                               # best last in these orders (the notebook's a[-k:]): the top 3 of each procedure
                               "top3": {"mean": [int(v) for v in mean[-3:][::-1]],
                                        "direct": [int(v) for v in direct[-3:][::-1]],
                                        "two": [int(v) for v in two[-3:][::-1]]},
                               "seconds": time.perf_counter() - t0}
        orders = {"mean": mean, "direct": direct, "two": two}
        block = out["datasets"][ds]
        block["orders"] = {k: [int(v) for v in o] for k, o in orders.items()}
        block["agreement"] = {}
        for name, (ka, kb) in COMPARISONS.items():
            a, b = orders[ka], orders[kb]
            block["agreement"][name] = [{"i": i, "agreement": u.interection_length(a[-i:], b[-i:]) / i,
                                         "rows_kept": len([j for j in a[-i:] if j in b[-i:]]) > 1} for i in range(1, 20)]
        block["fig9"] = _fig9(u, stats, np, Path(args.authors), ds, df, ranks)
        block["seconds"] = time.perf_counter() - t0
        print(ds, {k: v for k, v in block.items() if k not in ("orders", "agreement", "fig9")}, file=sys.stderr,
              flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
