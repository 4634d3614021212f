"""Benchmark: the pair-win counts ``sum_k [x_ki > x_kj]`` (issue 25, item 4: one pair-count kernel).

Times, warm (numba's first call is made before timing), best of 3, for ``B = 200`` rows (judges or bootstrap
replicates) and ``S = 100`` / ``1000`` systems, scores with ties and 5 % missing:

- plain numpy: ``np.count_nonzero(x[:, :, None] > x[:, None, :], axis=0)`` in blocks of 16M cells;
- the public callers that count pairs (``win_counts_over_tasks``, ``win_counts`` of dense ranks, ``pairwise_counts``
  with whole-number weights, ``prob_above``, ``bootstrap_block``, ``prob_above_blocked`` of repeated replicates);
- once :mod:`engine.kernels.paircount` exists, each method of ``pair_counts``.

Run: ``python benchmarks/bench_paircount.py LABEL`` (e.g. ``before`` with ``PYTHONPATH`` on a checkout of the parent
commit, ``after`` on this one), alternating the two several times on a busy machine: each label keeps every case's best
time over its invocations in ``benchmarks/results/paircount.json``, and all labels are written side by side to
``benchmarks/results/paircount.md``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _machine import best_of, machine_info  # the script's own folder is on sys.path

from engine.kernels.metrics import prob_above
from engine.kernels.pairblock import prob_above_blocked
from engine.kernels.paircount import dense_ranks, win_counts
from engine.kernels.social import pairwise_counts, win_counts_over_tasks
from engine.kernels.summaries import bootstrap_block

RESULTS = Path(__file__).resolve().parent / "results"
B = 200
NOTES = """## Reading (session 9, issue 25 item 4)

`before` is the parent commit of the kernel (c8246d6, six counters in social, pairwins, pairblock, summaries),
`after` the one pair-count kernel (engine/kernels/paircount.py); three invocations each, alternating. The machine's
load average stood between 7 and 11 on 2 cores during these runs (other engineers' test suites): the same code
timed 2 to 7 times apart between invocations (plain numpy at S = 100: 0.008 vs 0.0035 s; prob_above_blocked at
S = 100 alone, six alternating processes: 0.012 to 0.087 s for either tree), so differences below a factor of
about 1.5 are not resolved here.

- Beyond the noise: `pairwise_counts` with whole-number weights at S = 1000 (the weighted path of every pairwise
  rule) 3.26 -> 0.44 s (the compiled weighted loop instead of a float64 multiply-add per task);
  `bootstrap_block` (the dashboard's summary of a block of replicates) 2.76 -> 1.16 s (its own broadcast
  `count_nonzero` replaced by the kernel).
- Within the noise: every other caller (win_counts_over_tasks, win_counts, prob_above, prob_above_blocked).
- Methods at S = 1000: compiled 0.11 s, rows 0.08 s (one measurement: 0.52 s in a later, busier one), dense 0.52 s
  (its one-row-at-a-time regime past S = 724; the cost model knows it), plain numpy 1.6 to 2.4 s. With weights the
  compiled loop is the only fast one (0.16 s vs 2.6 to 3.6 s).
- `auto` picks by the cost model: numba's start (about 1 s) counts while numba is not loaded, so a one-off
  count on a small table stays in numpy and never imports numba.
"""


def plain_numpy(x: np.ndarray) -> np.ndarray:
    S = x.shape[1]
    wins = np.zeros((S, S), dtype=np.int64)
    step = max(1, (1 << 24) // (S * S))
    for i in range(0, x.shape[0], step):
        b = x[i : i + step]
        wins += np.count_nonzero(b[:, :, None] > b[:, None, :], axis=0)
    return wins


def cases(S: int) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(S)
    x = rng.integers(0, max(2, S // 3), size=(B, S)).astype(np.float64)
    x[rng.random((B, S)) < 0.05] = np.nan
    pres = ~np.isnan(x)
    mult = rng.integers(0, 4, size=B).astype(np.float64)
    rep = x[rng.integers(0, 20, size=B)]  # 20 distinct replicates, repeated
    out: dict[str, Callable[[], Any]] = {
        "plain numpy (count_nonzero of broadcast >)": lambda: plain_numpy(x),
        "social.win_counts_over_tasks": lambda: win_counts_over_tasks(x),
        "pairwins.win_counts(dense_ranks)": lambda: win_counts(dense_ranks(x), pres),
        "social.pairwise_counts(weights=0..3)": lambda: pairwise_counts(x, weights=mult),
        "metrics.prob_above": lambda: prob_above(x),
        "summaries.bootstrap_block": lambda: bootstrap_block(x),
        "pairblock.prob_above_blocked(20 distinct rows)": lambda: prob_above_blocked(rep),
    }
    try:
        from engine.kernels.paircount import METHODS, pair_counts
    except ImportError:
        return out
    for m in METHODS:
        out[f"paircount.pair_counts(method={m!r})"] = lambda m=m: pair_counts(x, method=m)
        out[f"paircount.pair_counts(method={m!r}, weights=0..3)"] = lambda m=m: pair_counts(x, method=m, weights=mult)
    return out


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    store = RESULTS / "paircount.json"
    data = json.loads(store.read_text()) if store.exists() else {}
    if label == "--render":
        print(render(data))
        return
    m = machine_info()
    times = {f"{S}": {name: best_of(f, warm=True) for name, f in cases(S).items()} for S in (100, 1000)}
    old = data.get(label, {"times": {}, "runs": 0})
    for S, row in times.items():  # a label run again keeps each case's best (runs alternate between trees: A/B/A/B)
        for name, t in row.items():
            row[name] = min(t, old["times"].get(S, {}).get(name, t))
    data[label] = {"date_utc": m["date_utc"], "loadavg": [round(v, 2) for v in os.getloadavg()], "times": times,
                   "runs": old.get("runs", 0) + 1}
    store.write_text(json.dumps(data, indent=1) + "\n")
    print(render(data))


def render(data: dict[str, Any]) -> str:
    """Write ``paircount.md`` from the stored times of every label (``--render``: without timing anything)."""
    labels = list(data)
    lines = ["# Pair-win counts: one kernel, its methods and its callers (issue 25, item 4)", "",
             f"`python benchmarks/bench_paircount.py LABEL`; B = {B} rows (judges or replicates), ties and 5 % missing "
             "scores; seconds, best of 3 warm runs (numba compiled before timing). The machine is shared (2 cores, "
             "other engineers' jobs): how far the noise goes is said under Reading.", ""]
    for lb in labels:
        lines.append(f"- `{lb}`: best of {data[lb].get('runs', 1)} invocations, the last {data[lb]['date_utc']}, "
                     f"load average at its end {tuple(data[lb]['loadavg'])}")
    for S in ("100", "1000"):
        names: list[str] = []
        for lb in labels:
            names += [n for n in data[lb]["times"].get(S, {}) if n not in names]
        lines += ["", f"## S = {S}", "", "| what | " + " | ".join(f"{lb} s" for lb in labels) + " |",
                  "|---|" + "---:|" * len(labels)]
        for n in names:
            cells = [data[lb]["times"].get(S, {}).get(n) for lb in labels]
            lines.append(f"| {n} | " + " | ".join("" if c is None else f"{c:.4f}" for c in cells) + " |")
    text = "\n".join(lines + ["", NOTES]) + "\n"
    (RESULTS / "paircount.md").write_text(text)
    return text


if __name__ == "__main__":
    main()
