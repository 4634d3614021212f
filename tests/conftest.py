"""Shared fixtures, hypothesis strategies and brute-force references for the votebench tests.

The references below are deliberately naive: explicit Python loops over systems,
system pairs, tasks and instances, written from the definitions in the issue and in
Colombo et al. (2022, sections 2-3) / Rofin et al. (2023, section 2.2), sharing no code
with ``engine``.  The tests compare ``engine`` against them on small random tensors.
"""

from __future__ import annotations

import ast
import gzip
import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from dask.callbacks import Callback
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import engine

# every test sets its own max_examples; the profiles only keep the runs quiet and reproducible.
# "ci" (the default, wherever the suite runs) draws the same examples on every run, so no run fails by chance;
# HYPOTHESIS_PROFILE=dev opts in to new random examples on each run, to look for new failures.
_COMMON = dict(
    deadline=None,
    database=None,  # do not write .hypothesis/ into the repository
    print_blob=True,  # a failing example can be replayed with @reproduce_failure
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("ci", derandomize=True, **_COMMON)
settings.register_profile("dev", **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")
# reports draw and compute in this process: the suite's workers already use every core (tests/app/test_report_render.py
# checks the worker path, with the same files)
os.environ.setdefault("VOTEBENCH_CORES", "1")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
# The tests mirror the engine's packages (tests/kernels, tests/labelled, tests/io, ...); a few share helpers across
# folders (``from test_invariance import RULE_CASES``), so every test folder is importable by module name, as the
# folder of the module itself is (pytest's default "prepend" import mode).  Test module names are unique.
for _folder in sorted(p for p in Path(__file__).resolve().parent.iterdir() if p.is_dir() and p.name not in
                      ("fixtures", "paper_excerpts", "__pycache__")):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))
#: verbatim excerpts of the papers (the worked examples whose numbers the tests use), shipped with the tests
PAPERS = REPO / "tests" / "paper_excerpts"

RULES = ("mean", "borda")
LEVELS = ("task", "one", "two")
POLICIES = ("error", "listwise", "drop-judges")

#: few distinct values, so that ties are frequent
TIE_VALUES = (-1.5, 0.0, 0.25, 1.0, 2.0)


# ---------------------------------------------------------------------------------------------
# brute-force references (plain loops)
# ---------------------------------------------------------------------------------------------
def bf_borda_row(row) -> np.ndarray:
    """Borda points of one judge: #present systems strictly beaten + 0.5 * #other present tied."""
    row = [float(v) for v in row]
    out = np.full(len(row), np.nan)
    for i, xi in enumerate(row):
        if math.isnan(xi):
            continue
        pts = 0.0
        for j, xj in enumerate(row):
            if j == i or math.isnan(xj):
                continue
            if xj < xi:
                pts += 1.0
            elif xj == xi:
                pts += 0.5
        out[i] = pts
    return out


def bf_borda_points(x) -> np.ndarray:
    """``bf_borda_row`` applied to every row of an array (system axis last)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    for idx in np.ndindex(*x.shape[:-1]):
        out[idx] = bf_borda_row(x[idx])
    return out


def bf_min_rank_row(score) -> np.ndarray:
    """1 + number of systems with a strictly higher score; NaN stays NaN."""
    score = [float(v) for v in score]
    out = np.full(len(score), np.nan)
    for i, si in enumerate(score):
        if math.isnan(si):
            continue
        out[i] = 1 + sum(1 for sj in score if not math.isnan(sj) and sj > si)
    return out


def bf_average_ranks(row) -> list[float]:
    """Descending average ranks: 1 + #strictly higher + 0.5 #other tied, among present values; NaN stays NaN."""
    row = [float(v) for v in row]
    ok = [not math.isnan(v) for v in row]
    return [1.0 + sum(1 for j, y in enumerate(row) if ok[j] and y > x)
            + 0.5 * sum(1 for j, y in enumerate(row) if ok[j] and j != i and y == x) if ok[i] else math.nan
            for i, x in enumerate(row)]


def bf_tau_b(a, b) -> float:
    """Kendall's tau-b of two complete vectors by a loop over pairs; NaN when either ranking is constant."""
    n = len(a)
    conc = disc = ta = tb = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            ta += da == 0
            tb += db == 0
            conc += da * db > 0
            disc += da * db < 0
    n0 = n * (n - 1) / 2
    den = (n0 - ta) * (n0 - tb)
    return (conc - disc) / math.sqrt(den) if den > 0 else math.nan


def bf_kendall_w(R, *, ties: bool = True) -> float:
    """Kendall's W of J judges (rows of complete scores) ranking n candidates, tie-corrected by default."""
    J, n = len(R), len(R[0])
    ranks = [bf_average_ranks(row) for row in R]
    dev = sum((sum(ranks[j][s] for j in range(J)) - J * (n + 1) / 2) ** 2 for s in range(n))
    T = sum(t**3 - t for row in R for t in (list(row).count(v) for v in set(row))) if ties else 0
    den = J * J * (n**3 - n) - J * T
    return 12 * dev / den if den > 0 else math.nan


def bf_min_rank(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    for idx in np.ndindex(*x.shape[:-1]):
        out[idx] = bf_min_rank_row(x[idx])
    return out


def bf_mean_across(X, weights=None) -> np.ndarray:
    """Weighted mean over tasks of (T, S) scores, ignoring NaN entries."""
    X = np.asarray(X, dtype=np.float64)
    T, S = X.shape
    w = np.ones(T) if weights is None else np.asarray(weights, dtype=np.float64)
    out = np.full(S, np.nan)
    for s in range(S):
        num = den = 0.0
        for t in range(T):
            if not math.isnan(X[t, s]):
                num += w[t] * X[t, s]
                den += w[t]
        if den > 0:
            out[s] = num / den
    return out


def bf_borda_across(X, weights=None) -> np.ndarray:
    """Weighted sum over tasks of per-task Borda points of (T, S) scores; NaN if absent everywhere."""
    X = np.asarray(X, dtype=np.float64)
    T, S = X.shape
    w = np.ones(T) if weights is None else np.asarray(weights, dtype=np.float64)
    out = np.full(S, np.nan)
    for t in range(T):
        pts = bf_borda_row(X[t])
        for s in range(S):
            if not math.isnan(pts[s]):
                out[s] = (0.0 if math.isnan(out[s]) else out[s]) + w[t] * pts[s]
    return out


@dataclass
class ExpectedError:
    """What the reference predicts instead of a result."""

    kind: str  # "missing", "no-task", "two-systems"
    n_missing: int = 0
    where: tuple[tuple[str, str], ...] = ()


def bf_missing_cells(X) -> np.ndarray:
    """(S, T, K) bool: NaN inside a judge that has at least one score (padding judges excluded)."""
    S, T, K = X.shape
    miss = np.zeros(X.shape, dtype=bool)
    for t in range(T):
        for k in range(K):
            if any(not math.isnan(X[s, t, k]) for s in range(S)):
                for s in range(S):
                    miss[s, t, k] = math.isnan(X[s, t, k])
    return miss


def bf_apply_policy(X, missing: str):
    """Apply a missing-score policy by its definition; returns the masked copy or an ExpectedError."""
    X = np.array(X, dtype=np.float64, copy=True)
    S, T, K = X.shape
    miss = bf_missing_cells(X)
    if missing == "error":
        if miss.any():
            where = tuple((f"s{s}", f"t{t}") for s in range(S) for t in range(T) if miss[s, t].any())
            return ExpectedError("missing", int(miss.sum()), where)
    elif missing == "listwise":
        for s in range(S):
            if miss[s].any():
                X[s] = np.nan
    elif missing == "drop-judges":
        for t in range(T):
            for k in range(K):
                if any(math.isnan(X[s, t, k]) for s in range(S)):
                    X[:, t, k] = np.nan
    else:  # pragma: no cover - test bug
        raise AssertionError(missing)
    return X


def bf_aggregate(X, higher_is_better, *, rule: str, level: str, missing: str = "error"):
    """Reference for ``engine.aggregate`` on system-first values (S, T, K).

    Returns an (S,) array of scores (NaN for systems dropped by the policy) or an
    :class:`ExpectedError` describing the error the engine must raise.
    """
    X = np.array(X, dtype=np.float64, copy=True)
    S, T, K = X.shape
    # orientation, once
    for t in range(T):
        if not higher_is_better[t]:
            for s in range(S):
                for k in range(K):
                    X[s, t, k] = -X[s, t, k]
    X = bf_apply_policy(X, missing)
    if isinstance(X, ExpectedError):
        return X
    if not any(not math.isnan(v) for v in X.ravel()):
        return ExpectedError("no-task")

    def judge_values(t, k):
        col = [X[s, t, k] for s in range(S)]
        if rule == "borda" and level in ("one", "two"):
            return bf_borda_row(col)
        return np.array(col)

    if level == "one":
        score = np.full(S, np.nan)
        for s in range(S):
            vals = []
            for t in range(T):
                for k in range(K):
                    v = judge_values(t, k)[s]
                    if not math.isnan(v):
                        vals.append(v)
            if vals:
                score[s] = sum(vals) / len(vals) if rule == "mean" else sum(vals)
    else:
        # task-level statistic: mean over instances (level task, or rule mean), Borda point totals (borda two)
        M = np.full((T, S), np.nan)
        for t in range(T):
            for s in range(S):
                vals = [judge_values(t, k)[s] for k in range(K)]
                vals = [v for v in vals if not math.isnan(v)]
                if vals:
                    M[t, s] = sum(vals) if (rule == "borda" and level == "two") else sum(vals) / len(vals)
        score = bf_mean_across(M) if rule == "mean" else bf_borda_across(M)
    if sum(1 for v in score if not math.isnan(v)) < 2:
        return ExpectedError("two-systems")
    return score


def check_expected_error(exc: BaseException, expected: ExpectedError) -> None:
    """The engine's error message names the problem the reference predicts."""
    msg = str(exc)
    assert isinstance(exc, engine.VotebenchError), repr(exc)
    assert "\n" not in msg
    if expected.kind == "missing":
        n = expected.n_missing
        assert f"{n} missing score{'s' if n != 1 else ''}" in msg, msg
        # it says where: at least one of the offending (system, task) pairs is named
        assert any(f"'{s}'" in msg and f"'{t}'" in msg for s, t in expected.where), msg
        assert "listwise" in msg and "drop-judges" in msg, msg
    elif expected.kind == "two-systems":
        assert "two systems" in msg, msg
    elif expected.kind == "no-task":
        assert "no task" in msg, msg
    else:  # pragma: no cover
        raise AssertionError(expected)


# ---------------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------------
@dataclass
class Case:
    """A random score tensor with its directions (system-first values)."""

    values: np.ndarray  # (S, T, K)
    hib: list[bool]

    def scores(self, **kw):
        return engine.scores_from_array(self.values, higher_is_better=self.hib, **kw)


@st.composite
def cases(
    draw,
    *,
    min_s: int = 2,
    max_s: int = 5,
    max_t: int = 3,
    min_k: int = 1,
    max_k: int = 4,
    missing: bool = True,
    ragged: bool = True,
    values=TIE_VALUES,
) -> Case:
    """Small tensors with many ties; optionally missing cells (NaN) and padding judges (all-NaN)."""
    S = draw(st.integers(min_s, max_s))
    T = draw(st.integers(1, max_t))
    K = draw(st.integers(min_k, max_k))
    X = draw(arrays(np.float64, (S, T, K), elements=st.sampled_from(values)))
    if missing and draw(st.booleans()):
        holes = draw(arrays(bool, (S, T, K), elements=st.sampled_from([False, False, False, True])))
        X[holes] = np.nan
    if ragged and K > 1 and draw(st.booleans()):
        pad = draw(arrays(bool, (T, K), elements=st.booleans()))
        X[:, pad] = np.nan
    # every task needs at least one score (a task with no scores is bad input, tested separately)
    for t in range(T):
        if np.isnan(X[:, t, :]).all():
            if missing:  # one score: the other systems are then missing on that judge
                X[draw(st.integers(0, S - 1)), t, 0] = draw(st.sampled_from(values))
            else:
                X[:, t, 0] = draw(arrays(np.float64, (S,), elements=st.sampled_from(values)))
    hib = draw(st.lists(st.booleans(), min_size=T, max_size=T))
    return Case(X, hib)


def continuous_case(seed: int, shape=(6, 4, 7), *, ragged: bool = False) -> Case:
    """Normal scores: no ties and no near-ties (for comparisons up to summation order)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=shape) * rng.uniform(0.5, 20.0, size=(1, shape[1], 1))
    if ragged:
        for t in range(shape[1]):
            X[:, t, shape[2] - t :] = np.nan
    return Case(X, [bool(b) for b in rng.integers(0, 2, size=shape[1])])


def tie_case(seed: int, shape=(6, 4, 7), *, n_values: int = 3, ragged: bool = False, holes: float = 0.0) -> Case:
    """Scores drawn from a few distinct values (many ties), optional padding and holes."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=shape).astype(np.float64)
    if ragged:
        for t in range(shape[1]):
            X[:, t, shape[2] - t :] = np.nan
    if holes:
        X[rng.random(shape) < holes] = np.nan
        X[0, :, 0] = 1.0  # keep every task non-empty
    return Case(X, [bool(b) for b in rng.integers(0, 2, size=shape[1])])


# ---------------------------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def write(tmp_path):
    """``write(name, text_or_bytes)`` -> path of a file in tmp_path."""

    def _write(name: str, content) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
        return p

    return _write


#: Colombo et al. (2022), Table 1: three systems, six tasks, LOWER is better; (rank) in brackets.
COLOMBO_T1_VALUES = {
    "A": [0.3, 5, 10, 0.02, 1.0, 0.4],
    "B": [0.1, 4, 13, 0.01, 2.2, 0.3],
    "C": [0.0, 3, 15, 0.03, 2.0, 0.2],
}
COLOMBO_T1_RANKS = {
    "A": [3, 3, 1, 2, 1, 3],
    "B": [2, 2, 2, 1, 3, 2],
    "C": [1, 1, 3, 3, 2, 1],
}
COLOMBO_T1_SUM = {"A": 16.72, "B": 19.61, "C": 20.23}

#: Rofin et al. (2023), Appendix A.1, Table 6: systems by rank position on tasks 1..5.
VNR_TABLE6 = [
    ["m_A", "m_A", "m_B", "m_C", "m_D"],  # rank 1
    ["m_B", "m_C", "m_D", "m_B", "m_B"],  # rank 2
    ["m_C", "m_D", "m_C", "m_D", "m_C"],  # rank 3
    ["m_D", "m_B", "m_A", "m_A", "m_A"],  # rank 4
]
VNR_BORDA = {"m_A": 6, "m_B": 9, "m_C": 8, "m_D": 7}


# ---------------------------------------------------------------------------------------------
# bad input files shared by the loader and CLI tests
# ---------------------------------------------------------------------------------------------
#: (file name, content, regex the one-line error message must match)
BAD_INPUTS = [
    # (file name, content, regex the message must match)
    ("empty.csv", b"", r"empty file"),
    ("blank.csv", b" \n\n  \n", r"empty file"),
    ("header_only.csv", b"system,t1,t2\n", r"no score rows"),
    ("header_only_long.csv", b"system,task,instance,score\n", r"no score rows"),
    ("only_system.csv", b"system\na\nb\n", r"system column and at least one task column"),
    ("garbage.csv", bytes(range(256)) * 8, r"not a UTF-8 text file"),
    ("nul.csv", b"system,t1\na,1\x00\nb,2\n", r"NUL"),
    ("latin1.csv", "system,t1\nJos\xe9,1\nb,2\n".encode("latin-1"), r"not a UTF-8 text file"),
    ("bad.csv.gz", b"this is not gzip", r"not a valid gzip file"),
    ("truncated.csv.gz", gzip.compress(b"system,t1\na,1\nb,2\n" * 20)[:30], r"not a valid gzip file"),
    ("garbage.csv.gz", gzip.compress(bytes(range(256)) * 4), r"not a UTF-8 text file"),
    ("unbalanced_quote.csv", b'system,t1\n"a,1\nb,2\n', r"malformed CSV"),
    ("long_row.csv", b"system,t1,t2\na,1,2\nb,1,2,3\n", r"malformed CSV"),
    ("short_row.csv", b"system,t1,t2\na,1,2\nb,1\nc,2,3\n", r"malformed CSV.*line 3"),
    # pandas would take the first column as the index and shift every name and score
    ("extra_field_rows.csv", b"system,t1\na,1,2\nb,2,3\n", r"malformed CSV.*line 2"),
    ("nonnumeric.csv", b"system,t1,t2\na,1,2\nb,x,3\n", r"line 3: .*'t1'.*'x' is not a number"),
    (
        "nonnumeric_long.csv",
        b"system,task,instance,score\na,t,0,1\nb,t,0,abc\n",
        r"line 3: score value 'abc' is not a number",
    ),
    ("comma_decimal.csv", b'system,t1\na,"0,5"\nb,1\n', r"'0,5' is not a number"),
    (
        "dup_rows.csv",
        b"system,task,instance,score\na,t,0,1\nb,t,0,2\na,t,0,3\n",
        r"line 4: duplicate entry .*'a'.*'t'.*'0'",
    ),
    ("dup_rows_noinst.csv", b"system,task,score\na,t,1\nb,t,2\na,t,3\n", r"duplicate entry .*'a'.*'t'"),
    ("one_system.csv", b"system,t1,t2\na,1,2\n", r"at least two systems, found 1 \(a\)"),
    ("one_system_long.csv", b"system,task,instance,score\na,t,0,1\na,t,1,2\n", r"at least two systems"),
    ("empty_task.csv", b"system,t1,t2\na,1,\nb,2,NA\n", r"task 't2' has no scores"),
    ("empty_task_long.csv", b"system,task,score\na,x,1\nb,x,2\na,y,\nb,y,nan\n", r"task 'y' has no scores"),
    ("dup_column.csv", b"system,t1,t1\na,1,2\nb,2,3\n", r"duplicate column 't1'"),
    ("dup_system.csv", b"system,t1,t2\na,1,2\nb,1,1\na,2,3\n", r"duplicate system 'a'"),
    ("inf.csv", b"system,t1,t2\na,1,inf\nb,2,3\n", r"line 2: .*'inf' is not a finite number"),
    ("neg_inf_long.csv", b"system,task,instance,score\na,t,0,1\nb,t,0,-Infinity\n", r"not a finite number"),
    ("overflow.csv", b"system,t1\na,1e400\nb,2\n", r"'1e400' is not a finite number"),
    ("empty_system.csv", b"system,t1\n,1\nb,2\n", r"line 2: empty system name"),
    ("empty_task_name.csv", b"system,task,score\na,,1\nb,x,2\n", r"line 2: empty task name"),
    ("unknown.xlsx", b"PK\x03\x04", r"unknown file type"),
    ("bad.parquet", b"PAR1 not really", r"not a readable Parquet file"),
]


#: (tag, sidecar content, regex the error message must match); the data file itself is fine
MALFORMED_SIDECARS = [
    ("not_json", "{not json", r"cannot read sidecar"),
    ("not_utf8", b"\xff\xfe\x00{", r"cannot read sidecar"),
    ("a_list", "[1, 2]", r"sidecar must hold a JSON object"),
    ("direction_not_bool", '{"higher_is_better": {"t1": "yes"}}', r"'higher_is_better' must map task names to true"),
    ("directions_a_list", '{"higher_is_better": [true]}', r"'higher_is_better' must map"),
    ("directions_unknown_tasks", '{"higher_is_better": {"zz": false}}', r"directions name none of the file's tasks"),
]


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------
def run_cli(capsys, *argv):
    """Run ``engine.app.cli.main(argv)``; returns (exit code, stdout, stderr).  argparse errors exit via SystemExit."""
    from engine.app.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


#: the lines a successful command prints on stderr to say where it wrote (``--output``, a report, a results store)
WHERE_LINES = ("votebench: wrote ", "votebench: created results store ", "votebench: resumed results store ")


def only_direction_notes(err: str) -> bool:
    """stderr holds nothing but the note that task directions defaulted to higher-is-better (a file without a sidecar)
    and the lines that say where the command wrote (:data:`WHERE_LINES`)."""
    return all(line.startswith(("votebench: note: no direction given for ", *WHERE_LINES)) for line in err.splitlines())


def one_line_error(code, out, err, *fragments, prefix: str = "", marker: str = "error"):
    """Exit code 2, nothing on stdout, one stderr line starting with ``prefix`` and holding ``marker`` and ``fragments``."""
    assert code == 2, (code, err)
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert err.startswith(prefix) and marker in err and "Traceback" not in err, repr(err)
    for f in fragments:
        assert f in err, (f, err)


# --------------------------------------------------------------------------------------------
# sweeps (tests/sweep/test_sweep.py, tests/distributed/test_cluster.py)
# --------------------------------------------------------------------------------------------
#: the head of a sweep file: seed 3, one input, Borda and PROMETHEE II (linear preference with indifference, label
#: ``prom-lin``); append ``[[perturbations]]`` tables and fill ``{store}`` and ``{path}`` with :func:`write_sweep`
SWEEP_HEAD = """\
seed = 3
store = "{store}"

[input]
path = "{path}"

[[rules]]
name = "borda"

[[rules]]
name = "promethee2"
label = "prom-lin"
options = {{ preference = "linear_indifference", q = 0.01, p = 0.2 }}
"""


def write_sweep(directory: Path, name: str, template: str, *, store, path) -> Path:
    """Write ``template`` with ``{store}`` and ``{path}`` filled in to ``directory / name``; returns the file."""
    p = Path(directory) / name
    p.write_text(template.format(store=store, path=path), encoding="utf-8")
    return p


def load_all(store) -> dict:
    """Every group of a results store, computed: ``{"<input>/<perturbation>": Dataset}``."""
    from engine.sweep import open_results

    return {g: ds.compute() for g, ds in open_results(store).items()}


def parse_sweep_summary(line: str) -> tuple[str, dict, int, int]:
    """A ``votebench sweep`` line ``'<group>: {sizes}; blocks done d/n'`` -> (group, sizes, d, n); sizes come in any order."""
    group, _, rest = line.partition(": ")
    sizes, _, done = rest.rpartition("; blocks done ")
    d, n = done.split("/")
    return group, ast.literal_eval(sizes), int(d), int(n)


# --------------------------------------------------------------------------------------------
# experiments (tests/test_experiment_<name>.py)
# --------------------------------------------------------------------------------------------
class SmokeRun(NamedTuple):
    """One smoke-size run of an experiment."""

    out: Path  # its output folder
    summary: dict[str, Any]  # what engine.app.experiment.run_experiment returned
    results: dict[str, Any]  # out/results.json


def read_strict_json(path: Path) -> Any:
    """A JSON file that must not hold the non-JSON constants NaN, Infinity or -Infinity."""

    def no_constant(token: str):
        raise AssertionError(f"{path.name} holds the non-JSON constant {token}")

    return json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=no_constant)


#: what a smoke run does in its own process: record every file it opens (audit hook), run the experiment from the
#: copy of the repository it is started in, and report the engine it imported, the summary and the files opened
SMOKE_CHILD = """
import json, os, sys
name, out, report = sys.argv[1:4]
opened = set()
def _audit(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.add(os.path.abspath(os.fsdecode(args[0])))
sys.addaudithook(_audit)
import engine
from engine.app.experiment import ROOT, run_experiment
summary = run_experiment(name, out=out, smoke=True)
with open(report, "w", encoding="utf-8") as fh:
    json.dump({"engine": engine.__file__, "root": str(ROOT), "summary": summary, "opened": sorted(opened)}, fh, default=str)
"""


@pytest.fixture(scope="session")
def repo_copy(tmp_path_factory):
    """A copy of the repository (engine/, experiments/, data/) alone in a fresh folder: no data folder beside it."""
    import shutil

    root = tmp_path_factory.mktemp("alone") / "votebench"
    for name in ("engine", "experiments", "data"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def outside_repository(path: str, copy: Path, *also: Path) -> bool:
    """Whether ``path`` lies beside the repository (under its parent folder, where a project data folder could be) and is
    neither in the copy, in ``also`` (the run's output) nor part of the Python installation (a venv may live there)."""
    import site
    import sys

    p = Path(path)
    allowed = [copy, *also, Path(sys.prefix), Path(sys.base_prefix), *map(Path, site.getsitepackages())]
    return p.is_relative_to(REPO.parent) and not any(p.is_relative_to(a) for a in allowed)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, repo_copy):
    """``smoke_run(name)`` -> :class:`SmokeRun`: ``experiments/<name>`` at smoke size, run by
    ``engine.app.experiment.run_experiment`` in a fresh process from :func:`repo_copy` (a copy of the repository with
    nothing beside it).  Fails when the run opened a file outside the copy (beside the repository, e.g.
    a data folder next to the checkout) or reports an input as unavailable."""
    import os
    import subprocess
    import sys

    def _run(name: str) -> SmokeRun:
        out = tmp_path_factory.mktemp(name)
        report = out.parent / f"{out.name}-report.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo_copy), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        proc = subprocess.run([sys.executable, "-c", SMOKE_CHILD, name, str(out), str(report)], cwd=repo_copy, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rep = json.loads(report.read_text(encoding="utf-8"))
        assert Path(rep["engine"]).is_relative_to(repo_copy) and Path(rep["root"]) == repo_copy, rep["engine"]
        beside = [p for p in rep["opened"] if outside_repository(p, repo_copy, out, report)]
        assert not beside, f"{name} opened files outside its copy of the repository: {beside[:5]}"
        for page in (out / "README.md", out / "results.json"):
            text = page.read_text(encoding="utf-8").lower()
            assert "unavailable" not in text and "not available" not in text, f"{name}: {page.name} reports missing data"
        return SmokeRun(out, rep["summary"], read_strict_json(out / "results.json"))

    return _run


# --------------------------------------------------------------------------------------------
# laziness probes
# --------------------------------------------------------------------------------------------
class CountStarts(Callback):
    """Counts graph executions by dask's local schedulers."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def _start(self, dsk):
        self.n += 1


def forbid_compute(*args, **kwargs):
    """A dask scheduler that fails: use it to prove nothing computes before ``.compute()``."""
    raise AssertionError("dask computed something before .compute() was called")


# --------------------------------------------------------------------------------------------
# independent cross-check libraries (the ``test`` extra)
# --------------------------------------------------------------------------------------------
def require_module(name: str):
    """Import a cross-check library of the ``test`` extra (pymcdm, pref_voting); a missing one fails the test.

    The cross-checks must run wherever the suite runs (CI installs the extra), so a missing library is
    an error with the fix in its message, never a silent skip.
    """
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        problem = f"cannot import {name} ({exc}): the cross-checks need the test extra: pip install -e '.[test]'"
    pytest.fail(problem, pytrace=False)


def bf_pair_counts(X, w):
    """wins[i, j] and ties[i, j] summed over the judges (rows) of ``X`` (T, S) with weights ``w``, by plain loops;
    a missing score (``NaN``) is no battle."""
    T, S = X.shape
    W = np.zeros((S, S))
    Ti = np.zeros((S, S))
    for t in range(T):
        for i in range(S):
            for j in range(S):
                a, b = X[t, i], X[t, j]
                if i == j or np.isnan(a) or np.isnan(b):
                    continue
                if a > b:
                    W[i, j] += w[t]
                elif a == b:
                    Ti[i, j] += w[t]
    return W, Ti


def bf_tie_classes(score, tol):
    """The tie rule from its definition, by plain loops: sorted neighbours join when their gap is at most the
    larger tolerance (exactly equal scores share the largest tolerance among them); chains take their maximum."""
    vals = [(float(v), float(t)) for v, t in zip(score, tol) if not np.isnan(v)]
    run_tol = {}
    for v, t in vals:
        run_tol[v] = max(run_tol.get(v, 0.0), t)
    distinct = sorted(run_tol)
    rep, chain = {}, [distinct[0]] if distinct else []
    for a, b in zip(distinct, distinct[1:]):
        if b - a <= max(run_tol[a], run_tol[b]):
            chain.append(b)
        else:
            rep.update({c: chain[-1] for c in chain})
            chain = [b]
    rep.update({c: chain[-1] for c in chain})
    return [rep[float(v)] if not np.isnan(v) else np.nan for v in score]


def tcp_port(payload: bytes = b"", *, listen: bool = True):
    """A local port and a function that stops it: nothing listens there (``listen=False``), or a server that accepts,
    sends ``payload`` and keeps the connection open (an empty payload: silent)."""
    import socket
    import threading

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    if not listen:
        sock.close()
        return port, lambda: None
    sock.listen(8)
    held: list = []

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            if payload:
                conn.sendall(payload)
            held.append(conn)

    threading.Thread(target=serve, daemon=True).start()

    def stop():
        sock.close()
        for c in held:
            c.close()

    return port, stop


def dead_pid() -> int:
    """The process id of a process that has ended (its writes are strays)."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ------------------------------------------------------------------------------------ a headless browser
#: Debian's Chromium (.ci/run installs it); the browser tests skip without it or without playwright
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module (playwright); the test is skipped without Chromium or playwright."""
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


def axe_path() -> Path | None:
    """axe-core's script for the browser tests: $AXE_CORE_JS (set by .ci/run), else an npm install nearby."""
    for p in [os.environ.get("AXE_CORE_JS"), Path.cwd() / "node_modules/axe-core/axe.min.js",
              Path(tempfile.gettempdir()) / "node_modules/axe-core/axe.min.js",
              *Path(tempfile.gettempdir()).glob("*/node_modules/axe-core/axe.min.js")]:
        if p and Path(p).is_file():
            return Path(p)
    return None
