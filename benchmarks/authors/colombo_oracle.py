"""Run the Colombo et al. (2022) authors' own code (PierreColombo/RankingNLPSystems) as an oracle for
experiments/colombo2022.

Not part of the package and not run by the tests: it needs a checkout of the authors' repository and a separate
environment with numpy < 1.25 (whose quicksort put tied values in another order than numpy >= 1.25) and pandas < 2::

    python3.11 -m venv "$OLDNP"   # any folder outside the repository
    "$OLDNP"/bin/pip install 'numpy==1.24.4' 'pandas==1.5.3' 'scipy==1.10.1'
    "$OLDNP"/bin/python benchmarks/authors/colombo_oracle.py --authors PATH/RankingNLPSystems \\
        --out experiments/colombo2022/authors_code_outputs.json

It repeats, on the authors' data files (``data/{xtrem,glue,superglue}.data``) with their ``utils.py`` of commit
58c8d00 (the one with ``distorsion_measure``; ``mean_aggregation`` is its ``mean_aggregation_task_level``), the
cells of ``reproducing_paper_results/Task Level Information Experiement.ipynb`` behind Tables 2, 6 and 7:

* Table 2 (cell 28, ``analyse_agreements_benchmark``): the mean order is computed without the leaderboard's
  ``Score`` column, but the rows are then re-read from the full file, so the Borda count, the mean and their tau are
  computed WITH the ``Score`` column as one more task; written both ways (``with_score`` / ``without_score``);
* Table 6 (cells 6-13): Borda counts of the rows ordered by the mean, without ``Score`` (and, to check that reading,
  with it: ``borda_count_by_row_with_score``);
* Table 7 (cell 7): ``distorsion_measure`` of the Borda and mean rankings against the per-task rankings.

Rows are identified by their position in the file (the shipped ``data/colombo_*.csv`` keep that order).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def _utils(root: Path, commit: str):
    src = subprocess.run(["git", "-C", str(root), "show", f"{commit}:utils.py"], check=True, capture_output=True,
                         text=True).stdout
    path = Path(tempfile.mkdtemp()) / "colombo_utils_58c8d00.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("colombo_utils_58c8d00", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _table2(u, df, considered, stats) -> dict:
    """Cell 28 with ``df`` re-read for the rankings (``considered`` gives the mean order)."""
    mean_ranking, _ = u.mean_aggregation_task_level(considered)
    mean_reindex = u.reverse_ranking(mean_ranking)[::-1]
    df_new = df.reindex(mean_reindex, copy=False)
    df_new.reset_index(inplace=True)
    del df_new["index"]
    a = u.reverse_ranking(u.mean_aggregation_task_level(df_new)[0])[::-1]
    b = u.reverse_ranking(u.ranking_aggregation(df_new))[::-1]
    out = {"tau": float(stats.kendalltau(a, b)[0]), "first": {}, "last": {}}
    for k in (1, 3, 5, 10):
        out["first"][str(k)] = u.interection_length(a[:k], b[:k]) / k
        out["last"][str(k)] = u.interection_length(a[-k:], b[-k:]) / k
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--authors", required=True, help="checkout of PierreColombo/RankingNLPSystems")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="58c8d00", help="commit of utils.py (default: the one with distorsion_measure)")
    args = ap.parse_args()
    root = Path(args.authors)
    import numpy as np
    import pandas as pd
    import scipy.stats as stats

    u = _utils(root, args.commit)
    out: dict = {"numpy": np.__version__, "pandas": pd.__version__, "utils_commit": args.commit,
                 "source": "PierreColombo/RankingNLPSystems, reproducing_paper_results/Task Level Information "
                           "Experiement.ipynb, cells 6-13 (Table 6), 7 (Table 7), 28 (Table 2)"}
    for ds, key in (("xtrem", "xtreme"), ("glue", "glue"), ("superglue", "superglue")):
        path = root / "data" / f"{ds}.data"
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = pd.read_csv(path, index_col=False)
            considered = pd.read_csv(path, index_col=False, usecols=[i for i in range(df.shape[1]) if i != 1])
        block = {"rows": len(df), "names": [str(n) for n in considered["Model"]],
                 "table2_with_score": _table2(u, df, considered, stats),
                 "table2_without_score": _table2(u, considered, considered, stats)}
        # Table 6: the rows ordered by the mean (cells 10-13), Borda count without Score
        mean_ranking, means = u.mean_aggregation_task_level(considered)
        order = u.reverse_ranking(mean_ranking)[::-1]
        df_new = considered.reindex(order, copy=False)
        _, count = u.ranking_aggregation(df_new, True)
        block["borda_count_by_row"] = {str(int(r)): float(c) for r, c in zip(order, count)}
        # the same with the leaderboard's Score column as one more task (as cell 28 re-reads the file)
        df_score = df.reindex(order, copy=False)
        _, count_s = u.ranking_aggregation(df_score, True)
        block["borda_count_by_row_with_score"] = {str(int(r)): float(c) for r, c in zip(order, count_s)}
        block["mean_position_by_row"] = {str(int(r)): i for i, r in enumerate(order)}
        # Table 7 (cell 7): distortion of the Borda and mean rankings, file order
        rankings = [c.argsort().argsort().values.tolist() for name, c in considered.items() if name != "Model"]
        block["dispersion"] = {
            "borda": float(u.distorsion_measure(u.ranking_aggregation(considered).tolist(), rankings)),
            "mean": float(u.distorsion_measure(u.mean_aggregation_task_level(considered)[0].tolist(), rankings))}
        out[key] = block
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (numpy {np.__version__}, pandas {pd.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
