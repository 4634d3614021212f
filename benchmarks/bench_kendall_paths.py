"""Benchmark: the two paths of the Kendall counts of every pair of replicate rankings (issue 24, item 1), around the
size where the cost model switches: ``kendall_counts_all`` compiled (Knight, numba) or dense (matrix products), and
the path the model chooses; each timed warm (numba's first call in a process is timed once, separately).

Run: ``python benchmarks/bench_kendall_paths.py``; writes ``benchmarks/results/kendall_paths.md``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from _machine import best_of, machine_info  # the script's own folder is on sys.path

from engine.kernels.costs import Sizes, choose, costs, forced
from engine.kernels.paircount import dense_ranks, kendall_counts_all

OUT = Path(__file__).resolve().parent / "results" / "kendall_paths.md"


def main() -> None:
    m = machine_info()
    rng = np.random.default_rng(0)
    first = dense_ranks(rng.permuted(np.tile(np.arange(58.0), (200, 1)), axis=1))
    with forced("kendall_all", "compiled"):
        t = time.perf_counter()
        kendall_counts_all(first)
        jit = time.perf_counter() - t
    rows = []
    for B, sizes in ((200, (58, 150, 300, 450, 552, 700)), (40, (300, 800, 1352, 1600))):
        for S in sizes:
            ranks = dense_ranks(rng.integers(0, S // 3 + 1, size=(B, S)).astype(float))
            got = {}
            for path in ("compiled", "dense"):
                with forced("kendall_all", path):
                    got[path] = best_of(lambda r=ranks: kendall_counts_all(r))
            model = costs("kendall_all", Sizes(systems=S, fits=B))
            rows.append((B, S, got["compiled"], got["dense"], model["compiled"].seconds, model["dense"].seconds,
                         choose("kendall_all", Sizes(systems=S, fits=B))))
    lines = ["# Kendall counts of every pair of rows: compiled or dense (issue 24)", "",
             f"`python benchmarks/bench_kendall_paths.py` ({m['date_utc']}, load average at start "
             f"{tuple(round(v, 2) for v in m['loadavg_start'])}, at end {tuple(round(v, 2) for v in os.getloadavg())}); "
             "best of 3 warm runs per path.", "",
             f"The compiled path's first call in a process (importing numba, loading its cache) took **{jit:.2f} s** here; "
             "the cost model counts it as 1 s (`_JIT_START`), since a command pays it once.", "",
             "| rows B | systems S | compiled s (warm) | dense s | model: compiled s (cold) | model: dense s | chosen |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for B, S, c, d, mc, md, ch in rows:
        lines.append(f"| {B} | {S} | {c:.3f} | {d:.3f} | {mc:.2f} | {md:.2f} | {ch} |")
    lines += ["", "Both paths give the same whole numbers (tests/kernels/test_kendall_paths.py, against a loop over pairs "
              "of systems, and the same taus on both sides of the switch).", ""]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
