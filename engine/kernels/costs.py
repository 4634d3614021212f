"""A cost model that picks the computation path where there are alternatives (pure functions, no I/O).

A *problem* (e.g. ``"bradley_terry"``) has several *paths* that give the same answer (to a solver's
tolerance) at different costs.  Each path declares its cost as a function of the :class:`Sizes` of the
job -- estimated seconds and peak bytes -- and :func:`choose` runs the cheapest one whose memory fits
the budget (if none fits, the one needing least memory).  There is no fixed size threshold: where the
paths cross depends on all the sizes (systems, judges, instances, fits) and on the memory at hand.

A new path is one :func:`register_path` call with its cost function.  The time constants are rough
per-operation seconds measured on a 2-core machine (benchmarks/results/end_to_end.md); only their
ratios matter for the choice.

Examples
--------
>>> choose("bradley_terry", Sizes(systems=300, judges=80, fits=200))
'dense'
>>> choose("bradley_terry", Sizes(systems=10_000, judges=50, fits=1), memory=4 << 30)
'statistics'
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Cost", "Sizes", "choose", "costs", "forced", "memory_budget", "register_path"]


@dataclass(frozen=True)
class Sizes:
    """The sizes a path's cost depends on: systems ``S``, judges ``T`` (tasks, or (task, instance) pairs),
    instances per task, and independent fits (e.g. bootstrap replicates) done in one call."""

    systems: int
    judges: int = 1
    instances: int = 1
    fits: int = 1


@dataclass(frozen=True)
class Cost:
    """Estimated wall time (seconds) and peak extra memory (bytes) of one path on one job."""

    seconds: float
    bytes: float


_PATHS: dict[str, dict[str, Callable[[Sizes], Cost]]] = {}
_FORCED: dict[str, str] = {}


def register_path(problem: str, name: str, cost: Callable[[Sizes], Cost]) -> None:
    """Declare path ``name`` of ``problem`` with its cost function (a later call with the same names replaces it)."""
    _PATHS.setdefault(problem, {})[name] = cost


def costs(problem: str, sizes: Sizes) -> dict[str, Cost]:
    """The declared cost of every path of ``problem`` on ``sizes``."""
    if problem not in _PATHS:
        raise KeyError(f"no paths registered for {problem!r}")
    return {name: f(sizes) for name, f in _PATHS[problem].items()}


def memory_budget() -> int:
    """Bytes a path may use: half the physical memory (``VOTEBENCH_MEMORY`` in bytes overrides)."""
    env = os.environ.get("VOTEBENCH_MEMORY")
    if env:
        try:
            return max(1, int(float(env)))
        except ValueError:
            pass
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover - platforms without sysconf
        return 4 << 30


def choose(problem: str, sizes: Sizes, *, memory: float | None = None) -> str:
    """The path of ``problem`` that runs fastest within ``memory`` bytes (default :func:`memory_budget`);
    if none fits, the one needing the least memory.  Ties go to the path registered first."""
    if problem in _FORCED:
        return _FORCED[problem]
    table = costs(problem, sizes)
    budget = memory_budget() if memory is None else memory
    fits = [n for n, c in table.items() if c.bytes <= budget]
    if fits:
        return min(fits, key=lambda n: table[n].seconds)
    return min(table, key=lambda n: table[n].bytes)


@contextlib.contextmanager
def forced(problem: str, path: str) -> Iterator[None]:
    """Run ``problem`` on ``path`` whatever the costs, inside the ``with`` block (tests, benchmarks)."""
    if path not in _PATHS.get(problem, {}):
        raise KeyError(f"{problem!r} has no path {path!r}")
    before = _FORCED.get(problem)
    _FORCED[problem] = path
    try:
        yield
    finally:
        if before is None:
            _FORCED.pop(problem, None)
        else:
            _FORCED[problem] = before


# ------------------------------------------------------------------------------------------------ Bradley-Terry
#: seconds per unit, fitted to single fits of both paths on a busy 2-core machine (S = 300 to 2,000 systems,
#: T = 20 to 80 judges; benchmarks/results/end_to_end.md); only their ratios matter for the choice
_DENSE_CELL = 1.0e-6     # per cell of (S, S) per fit: count matrices, Newton's element-wise passes
_DENSE_CUBE = 3.0e-9     # per S^3 per fit: the dense solves of Newton's steps
_COUNT_CELL = 5.0e-9     # per judge and cell: counting the battles of a judge
_STAT_CELL = 5.0e-6      # per cell per fit: Newton-CG's passes over the pair matrix and matrix-vector products
_STAT_JUDGE_CELL = 3.0e-9  # per judge and cell per fit: rebuilding the pair matrix from the judges in each pass
_STAT_JUDGE = 6.0e-3     # per judge per fit: ties and the connectivity graph of the judge's order
_DENSE_ROW_CELLS = 1 << 22  # cells of (rows x S x S) the dense path holds per batch (engine.kernels.battles)


def _bt_dense(z: Sizes) -> Cost:
    """Count matrices (S, S) per fit, then batched Newton with a dense solve per step."""
    S, T, R = float(z.systems), float(z.judges), float(z.fits)
    cells = S * S
    per_fit = T * cells * _COUNT_CELL + cells * _DENSE_CELL + S ** 3 * _DENSE_CUBE
    rows = max(1.0, min(R, _DENSE_ROW_CELLS / cells))  # fits of one batch
    return Cost(seconds=R * per_fit, bytes=12.0 * 8.0 * cells * rows)


def _bt_statistics(z: Sizes) -> Cost:
    """Judge statistics (points, who scores what), then Newton-CG over a float32 curvature matrix, the pair
    matrix rebuilt from the judges block by block in every pass."""
    S, T, R = float(z.systems), float(z.judges), float(z.fits)
    cells = S * S
    per_fit = T * _STAT_JUDGE + cells * _STAT_CELL + T * cells * _STAT_JUDGE_CELL
    block = 6.0 * 8.0 * min(cells, float(1 << 21))  # float64 work blocks of the pair matrix
    return Cost(seconds=R * per_fit, bytes=4.0 * cells + block + 16.0 * T * S)


register_path("bradley_terry", "dense", _bt_dense)
register_path("bradley_terry", "statistics", _bt_statistics)


# ------------------------------------------------------------------------------------------------ Baldwin
#: seconds, measured at 5-300 systems and 1-1,000 fits on a loaded 2-core machine (only the ratios matter)
_ROUND_CALLS = 2.0e-5  # per elimination round of all fits: the numpy calls of one round
_ROUND_FIT = 2.0e-7    # per round and fit: the (fits, S) minimum, masks and scores of a round
_ROUND_CELL = 1.0e-9   # per cell of a batched Borda update
_ONE_FIT = 8.0e-6      # per fit of the compiled loop: the call
_ONE_CELL = 2.0e-9     # per cell of one fit's point matrix: its totals and the eliminated columns


def _baldwin_rounds(z: Sizes) -> Cost:
    """All fits at once, round by round: up to S rounds, each updating the (fits, S) Borda totals by a
    (fits, S, S) product."""
    S, R = float(z.systems), float(z.fits)
    return Cost(seconds=S * (_ROUND_CALLS + R * _ROUND_FIT + R * S * S * _ROUND_CELL), bytes=8.0 * R * S * (S + 4.0))


def _baldwin_each(z: Sizes) -> Cost:
    """One fit after the other in a compiled loop over the alive systems (engine.kernels.paircount)."""
    S, R = float(z.systems), float(z.fits)
    return Cost(seconds=R * (_ONE_FIT + S * S * _ONE_CELL), bytes=8.0 * S * 4.0)


register_path("baldwin", "rounds", _baldwin_rounds)
register_path("baldwin", "each", _baldwin_each)


# ------------------------------------------------------------------------------------------------ Kendall counts
_JIT_START = 1.0         # the compiled path's first call in a process: importing numba and loading its cache
_KNIGHT_PAIR = 2.0e-8    # per pair of rows and S log2 S: Knight's sort and Fenwick tree
_FLOP = 5.0e-10          # per multiply-add of a float32 matrix product (BLAS, 2 cores, busy; benchmarks/results/kendall_paths.md)
_PAIR_BUILD = 2.0e-7     # per row and system pair: the signs, ties and presence of the dense path (its temporaries)


def _kendall_compiled(z: Sizes) -> Cost:
    """Knight's O(S log S) counts for every pair of rows, compiled (engine.kernels.paircount.kendall_counts)."""
    S, B = float(z.systems), float(z.fits)
    pairs = B * (B + 1) / 2
    return Cost(seconds=_JIT_START + pairs * S * math.log2(max(S, 2.0)) * _KNIGHT_PAIR, bytes=8.0 * (5 * pairs + 4 * B * S))


def _kendall_dense(z: Sizes) -> Cost:
    """Three (B, P) x (P, B) products over the P = S (S - 1) / 2 system pairs (and one (B, S) x (S, B))."""
    S, B = float(z.systems), float(z.fits)
    P = S * (S - 1) / 2
    return Cost(seconds=B * P * _PAIR_BUILD + 3 * B * B * P * _FLOP, bytes=4.0 * (5 * B * P) + 8.0 * 8 * B * B)


register_path("kendall_all", "compiled", _kendall_compiled)
register_path("kendall_all", "dense", _kendall_dense)
