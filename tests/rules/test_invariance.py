"""Order- and chunking-invariance of every registered rule (issue: exact, order-free results).

Driven by the registry: every rule in ``engine.RULES`` is exercised with the option sets of its record
(``Rule.examples``, by default its own defaults), so a new rule is covered by its registration alone.

For random tensors with many exact ties (values from a few fractions, so that equal means arise
from different terms), with and without weights (whole numbers and simple fractions) and missing
scores, at every level, the test ranks the data, then the same data with systems, tasks and
instances permuted (labels travel with their values) and again as dask arrays with two different
chunkings, and requires the *same bits*: identical ranks and identical scores per system label, or
the same error.  Bootstraps over tasks, systems and instances must give identical replicate ranks
(and scores) for the permuted data, for chunked data and for another replicate block size.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
import engine.labelled.core
from engine.errors import VotebenchError

#: values with many exact ties and with equal sums of different terms (1/3 + 2/3 = 1/4 + 3/4 ...)
VALUES = (0.125, 0.25, 1 / 3, 0.5, 2 / 3, 0.75, 1.0)

#: per rule: the option sets it is exercised with (one test id each), from the registry (``Rule.examples``)
RULE_CASES: dict[str, list[dict]] = {name: [dict(o) for o in rule.examples] for name, rule in engine.RULES.items()}

CASES = [(name, opts) for name in sorted(RULE_CASES) for opts in RULE_CASES[name]]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in opts.items() if k != 'vector') or 'default'}" for name, opts in CASES]


@pytest.mark.parametrize(("name", "opts"), [(n, o) for n in sorted(RULE_CASES) for o in RULE_CASES[n]],
                         ids=lambda v: v if isinstance(v, str) else ("-".join(map(str, v)) or "default"))
def test_every_example_is_an_option_set_its_rule_takes(name, opts):
    """The registry's examples are real requests: each ranks a small table (an unknown or invalid option raises)."""
    X = np.array([[0.9, 0.5, 0.75], [0.25, 1.0, 0.5], [0.5, 0.125, 1.0], [0.75, 0.75, 0.25]])  # (system, task)
    ds = engine.rank(engine.scores_from_array(X[:, :, None], systems=list("abcd"), tasks=["t0", "t1", "t2"]),
                     rule=name, options=opts)
    assert np.isfinite(ds["score"].values).all() and sorted(ds["rank"].values.tolist())[0] == 1


@st.composite
def requests(draw, rule: str, *, bootstrap: bool = False):
    """A random tensor with labels plus the keyword arguments of one aggregation request."""
    r = engine.get_rule(rule)
    S = draw(st.integers(3, 6))
    T = draw(st.integers(2, 5))
    K = draw(st.sampled_from([1, 3]))
    idx = draw(st.lists(st.integers(0, len(VALUES) - 1), min_size=S * T * K, max_size=S * T * K))
    X = np.asarray(VALUES)[idx].reshape(S, T, K)
    missing = "error"
    if draw(st.booleans()):  # holes
        holes = np.asarray(draw(st.lists(st.booleans(), min_size=S * T * K, max_size=S * T * K))).reshape(S, T, K)
        holes &= np.asarray(draw(st.lists(st.booleans(), min_size=S * T * K, max_size=S * T * K))).reshape(S, T, K)
        X[holes] = np.nan
        X[0, :, 0] = np.where(np.isnan(X[0, :, 0]), VALUES[2], X[0, :, 0])  # every task keeps a score
        if r.missing == "policy" or draw(st.booleans()):
            missing = draw(st.sampled_from(["listwise", "drop-judges"]))
    level = "task" if K == 1 else draw(st.sampled_from(["task", "one", "two"]))
    weights = None
    kind = draw(st.sampled_from(["none", "whole", "fraction"]))
    if level != "one" and kind != "none":
        pool = [1.0, 2.0, 3.0] if kind == "whole" else [1 / 3, 0.5, 2 / 3, 1.0, 0.25]
        weights = {f"task{t}": draw(st.sampled_from(pool)) for t in range(T)}
    systems = [f"sys{i}" for i in range(S)]
    tasks = [f"task{t}" for t in range(T)]
    perm = (draw(st.permutations(range(S))), draw(st.permutations(range(T))), draw(st.permutations(range(K))))
    kw = dict(rule=rule, level=level, missing=missing, weights=weights)
    return X, systems, tasks, perm, kw


def _tensor(X, systems, tasks, perm=None):
    K = X.shape[2]
    instances = list(range(K))
    if perm is not None:
        ps, pt, pk = (list(p) for p in perm)
        X = X[ps][:, pt][:, :, pk]
        systems = [systems[i] for i in ps]
        tasks = [tasks[i] for i in pt]
        instances = [instances[i] for i in pk]
    return engine.scores_from_array(X, systems=systems, tasks=tasks, instances=instances)


def _outcome(fn):
    try:
        return "ok", fn()
    except VotebenchError:
        return "error", None


def _by_label(da):
    order = np.argsort([str(s) for s in da["system"].values])
    return np.asarray(da.values)[..., order]


def _same(a, b, what):
    assert a[0] == b[0], f"{what}: one run failed and the other did not"
    if a[0] == "error":
        return
    for var in ("score", "rank"):
        x, y = _by_label(a[1][var]), _by_label(b[1][var])
        assert np.array_equal(x, y, equal_nan=True), f"{what}: {var} differs\n{x}\n{y}"


@pytest.mark.parametrize(("rule", "opts"), CASES, ids=IDS)
@settings(max_examples=10)
@given(data=st.data())
def test_rank_is_independent_of_order_and_chunking(rule, opts, data):
    X, systems, tasks, perm, kw = data.draw(requests(rule))
    kw = {**kw, "options": opts}
    base = _outcome(lambda: engine.rank(_tensor(X, systems, tasks), **kw))
    permuted = _outcome(lambda: engine.rank(_tensor(X, systems, tasks, perm), **kw))
    _same(base, permuted, "permuted systems, tasks and instances")
    s = _tensor(X, systems, tasks, perm)
    chunks = data.draw(st.sampled_from([{"task": 1, "instance": 1}, {"task": 2, "instance": 2}, {"task": 1, "instance": 3}]))
    lazy = _outcome(lambda: engine.rank(s.chunk(chunks), **kw).compute())
    _same(base, lazy, f"dask chunks {chunks}")


def _replicates(ds):
    return _by_label(ds["replicate_rank"]), _by_label(ds["replicate_score"])


@pytest.mark.parametrize(("rule", "opts"), CASES, ids=IDS)
@settings(max_examples=4)
@given(data=st.data())
def test_bootstrap_replicates_are_independent_of_order_chunking_and_blocks(rule, opts, data):
    X, systems, tasks, perm, kw = data.draw(requests(rule))
    over = data.draw(st.sampled_from(["tasks", "systems"] + (["instances"] if X.shape[2] > 1 else [])))
    kw = {**kw, "options": opts, "over": over, "replicates": 4, "seed": 11}
    base = _outcome(lambda: _replicates(engine.bootstrap(_tensor(X, systems, tasks), **kw)))
    variants = {
        "permuted": lambda: _replicates(engine.bootstrap(_tensor(X, systems, tasks, perm), **kw)),
        "block 1": lambda: _replicates(engine.bootstrap(_tensor(X, systems, tasks), block=1, **kw)),
        "dask chunks": lambda: _replicates(
            engine.bootstrap(_tensor(X, systems, tasks, perm).chunk({"task": 1, "instance": 2}), block=3, **kw).compute()
        ),
    }
    for what, fn in variants.items():
        other = _outcome(fn)
        assert base[0] == other[0], f"{what}: one run failed and the other did not"
        if base[0] == "ok":
            for a, b, name in zip(base[1], other[1], ("replicate_rank", "replicate_score")):
                assert np.array_equal(a, b, equal_nan=True), f"{what}: {name} differs\n{a}\n{b}"


@settings(max_examples=8)
@given(data=st.data())
def test_several_rules_in_one_request_equal_each_rule_alone(data):
    """``engine.rank_rules`` (shared preparation, task matrix and pairwise win matrix) gives every rule's own bits."""
    X, systems, tasks, perm, kw = data.draw(requests("borda"))
    kw.pop("rule")
    names = [name for name, opts in CASES if not opts or name == "scoring"]
    opts = {"vector": RULE_CASES["scoring"][0]["vector"], "seed": 3}
    s = _tensor(X, systems, tasks, perm)
    many = _outcome(lambda: engine.rank_rules(s, names, options=opts, **kw))
    for i, name in enumerate(names):
        kernel_options = engine.labelled.core.kernel_options
        one = _outcome(lambda n=name: engine.rank(s, rule=n, options={k: v for k, v in opts.items()
                                                                         if k in (kernel_options(engine.get_rule(n)) or opts)},
                                                  **kw))
        if many[0] == "error":  # one rule failing fails the request; the others alone may still work
            continue
        assert one[0] == "ok", name
        for var in ("score", "rank"):
            assert np.array_equal(many[1][var].values[i], one[1][var].values, equal_nan=True), (name, var)
