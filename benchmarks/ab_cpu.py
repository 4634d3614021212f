"""CPU-time A/B of a few cases between two checkouts (a check of what a --quick asv run flags on a loaded machine).

Run once per checkout, alternating, e.g.::

    for i in 1 2; do PYTHONPATH=BASE python benchmarks/ab_cpu.py base; PYTHONPATH=. python benchmarks/ab_cpu.py head; done

Process CPU time (best of several calls after a warm-up) is far less sensitive to other processes on the machine
than wall time.  Results of this round: benchmarks/results/asv.md.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _machine import best_of  # the script's own folder is on sys.path

import engine

VNR = ["plurality", "borda", "dowdall", "threshold", "baldwin", "condorcet", "copeland", "minimax"]


def best(f, n: int = 7) -> float:
    """The least process CPU time of ``n`` calls of ``f`` after one warm-up call."""
    return best_of(f, n, warm=True, clock=time.process_time)


def main() -> None:
    rng = np.random.default_rng(3)
    big = engine.scores_from_array(rng.integers(0, 7, size=(1000, 50)).astype(float))
    small = rng.integers(0, 7, size=(20, 100)).astype(float)
    wide = rng.integers(0, 7, size=(50, 1000)).astype(float)
    copeland = engine.get_rule("copeland").kernel
    median = engine.get_rule("median").kernel
    cases = {
        "rank_rules 8 Vote'n'Rank rules 1000x50 (s)": lambda: best(lambda: engine.rank_rules(big, VNR), 3),
        "copeland kernel 100x20 (ms)": lambda: 1e3 * best(lambda: copeland(small)),
        "median kernel 1000x50 (ms)": lambda: 1e3 * best(lambda: median(wide)),
        "rank copeland 1000x50 (s)": lambda: best(lambda: engine.rank(big, rule="copeland"), 3),
    }
    label = sys.argv[1] if len(sys.argv) > 1 else "this"
    print(label, "; ".join(f"{name}: {run():.4g}" for name, run in cases.items()))


if __name__ == "__main__":
    main()
