"""Check experiments/pavao2021's ``ranky2021_rd_scores`` against ranky 0.2.1 itself (the authors' library, May 2021).

Not part of the package and not run by the tests. Needs a checkout of Didayolo/ranky at commit 5ad30a4 (2021-05-10,
the last before the authors' results files of 2021-05-17; ranky kept ranking the matrix in its pairwise functions
until January 2022), a checkout of Didayolo/ranking-esann-2021 (its ``data/*.data``) and an environment with ranky's
dependencies of that time (numpy < 1.25, pandas < 2, scipy < 1.12 for ``binom_test``, scikit-learn, seaborn,
networkx, Levenshtein, tqdm, baycomp)::

    "$OLDNP"/bin/python benchmarks/authors/pavao_ranky_oracle.py --ranky PATH/ranky --esann PATH/ranking-esann-2021

Prints, per matrix, the largest difference between ranky's ``condorcet(m, wins=relative_difference)`` (the call of
the authors' notebook) and ``ranky2021_rd_scores`` (read from run.py by file path).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

RUN = Path(__file__).resolve().parents[2] / "experiments" / "pavao2021" / "run.py"


def _variant():
    """``ranky2021_rd_scores`` alone (run.py imports the engine, which this environment does not have)."""
    import numpy as np

    src = RUN.read_text(encoding="utf-8")
    code = src[src.index("def ranky2021_rd_scores"):src.index("def aligned_spearman_pairs")]
    ns: dict = {"np": np}
    exec(compile(code, str(RUN), "exec"), ns)  # noqa: S102 - our own function, read from our own file
    return ns["ranky2021_rd_scores"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranky", required=True, help="checkout of Didayolo/ranky at commit 5ad30a4")
    ap.add_argument("--esann", required=True, help="checkout of Didayolo/ranking-esann-2021")
    args = ap.parse_args()
    sys.path.insert(0, args.ranky)
    import numpy as np
    import pandas as pd
    import ranky as rk

    variant = _variant()
    worst = 0.0
    for name in ("AutoDL-AUC", "AutoDL-ALC", "AutoML", "Artificial", "OpenML", "Statlog"):
        m = pd.read_csv(Path(args.esann) / "data" / f"{name}.data", sep=" ", header=None).T  # as the notebook loads it
        theirs = np.asarray(rk.condorcet(m, wins=rk.relative_difference), dtype=float)
        diff = float(np.max(np.abs(theirs - variant(m.values.T))))
        worst = max(worst, diff)
        print(f"{name}: max |ranky 0.2.1 - ranky2021_rd_scores| = {diff:.2e}")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
