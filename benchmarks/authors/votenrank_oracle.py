"""Run the Vote'n'Rank authors' own code (PragmaticsLab/vote_and_rank) as an oracle for experiments/votenrank2023.

Not part of the package and not run by the tests: it needs a checkout of the authors' repository and a separate
environment with the library versions of their time (numpy < 1.25, pandas < 2, scipy < 1.12), e.g.::

    python3.11 -m venv "$OLDNP"   # any folder outside the repository
    "$OLDNP"/bin/pip install 'numpy==1.24.4' 'pandas==1.5.3' 'scipy==1.10.1' 'scikit-learn==1.2.2' tqdm
    "$OLDNP"/bin/python benchmarks/authors/votenrank_oracle.py --authors PATH/vote_and_rank \\
        --out experiments/votenrank2023/authors_code_outputs.json

It repeats the cells of the authors' notebook ``case studies/CS1 - Reranking Leaderboards.ipynb`` that produce
Table 1 (orders of every rule, top-k / least-k agreement with the arithmetic mean, their ``kendall_tau``) on their
own leaderboard tables, and writes the outputs with the library versions used.  The reproduction reads that file to
check whether a published number is what the authors' code gives (and so whether a difference comes from their
code's conventions, e.g. the order pandas' unstable sort gives to tied systems).
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from operator import itemgetter
from pathlib import Path


def _stub_tracker() -> None:
    """``votenrank.utils`` imports experiment_impact_tracker (energy measurements, not needed here): stub it."""
    for name in ("experiment_impact_tracker", "experiment_impact_tracker.data_interface",
                 "experiment_impact_tracker.data_utils", "experiment_impact_tracker.utils"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["experiment_impact_tracker.data_interface"].DataInterface = object
    sys.modules["experiment_impact_tracker.data_utils"].load_initial_info = None
    sys.modules["experiment_impact_tracker.utils"].gather_additional_info = None


def _optimality_gap(table, np, gamma: float = 0.95) -> dict:
    """The notebook's cell 5, verbatim in behaviour: 1 - mean(min(score/100, gamma)) rounded to 3, sorted ascending."""
    res = {}
    for model, scores in table.dropna().iterrows():
        scores = [x / 100 for x in scores]
        res[model] = round(gamma - np.mean(np.minimum(scores, gamma)), 3)
    return dict(sorted(res.items(), key=itemgetter(1)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--authors", required=True, help="checkout of PragmaticsLab/vote_and_rank")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    root = Path(args.authors)
    _stub_tracker()
    sys.path.insert(0, str(root))
    import numpy as np
    import pandas as pd
    import scipy
    from votenrank import Leaderboard
    from votenrank.data_processing import preprocess_glue, preprocess_sglue
    from votenrank.utils import agreement_rate, kendall_tau

    out: dict = {"numpy": np.__version__, "pandas": pd.__version__, "scipy": scipy.__version__,
                 "source": "PragmaticsLab/vote_and_rank, case studies/CS1 - Reranking Leaderboards.ipynb, cells 3-28"}
    tables = root / "tables"
    for key, prep, file, head in (("glue", preprocess_glue, "leaderboards - GLUE.csv", 30),
                                  ("sglue", preprocess_sglue, "leaderboards - SuperGLUE.csv", None)):
        raw = pd.read_csv(tables / file)
        table, weights = prep(raw, head=head) if head else prep(raw)
        lb = Leaderboard(table.dropna(), weights=weights)
        rank, ties = lb.rank_all(return_tie_numbers=True)
        og = _optimality_gap(table, np)
        rank["OG"] = [f"{v}: {m}" for m, v in og.items()]
        block = {"tie_numbers": {k: int(v) for k, v in ties.items()},
                 "orders": {c: [s.split(":", 1)[1].strip() for s in rank[c]] for c in rank.columns},
                 "scores": {c: [s.split(":", 1)[0].strip() for s in rank[c]] for c in rank.columns},
                 "agreement": {}, "tau": {k: float(v) for k, v in kendall_tau(rank).items()}}
        for k in (1, 3, 5, 7):
            block["agreement"][f"top-{k}"] = {m: float(v) for m, v in agreement_rate(rank, k, top_k=True).items()}
        for k in (3, 7):
            block["agreement"][f"least-{k}"] = {m: float(v) for m, v in agreement_rate(rank, k, top_k=False).items()}
        out[key] = block
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (numpy {np.__version__}, pandas {pd.__version__})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
