"""The order of a sweep's blocks (engine.sweep.runner.interleave): every rule's blocks fill in together, and the
store's content does not depend on the order the blocks run in."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from conftest import DATA, load_all

import engine.sweep.runner as runner
from engine.sweep import parse_config, plan_sweep, run_sweep

AUTOML = DATA / "esann_automl.csv"


def raw_config(store):
    return {"seed": 3, "store": str(store), "input": {"path": str(AUTOML)}, "rules": ["borda", "copeland", "mean"],
            "perturbations": [{"kind": "bootstrap", "over": "tasks", "replicates": 8, "block": 2},
                              {"kind": "subsets", "sizes": [3, 9], "repeats": 4, "block": 2}]}


def test_every_rule_fills_in_together(tmp_path):
    _, blocks, _ = plan_sweep(parse_config(raw_config(tmp_path / "s.zarr")))
    boot = [b for b in blocks if "bootstrap" in b.group]
    rules = {b.done_index[0] for b in boot}
    per_rule = Counter(b.done_index[0] for b in boot)
    assert len(rules) == 3 and len(set(per_rule.values())) == 1
    # at every prefix of the plan, the rules' counts of started bootstrap blocks differ by at most one
    seen: Counter = Counter()
    for b in boot:
        seen[b.done_index[0]] += 1
        counts = [seen[r] for r in rules]
        assert max(counts) - min(counts) <= 1
    # and the groups share the plan: halfway through it, each group has about half its blocks planned
    half = blocks[: len(blocks) // 2]
    for group, n in Counter(b.group for b in blocks).items():
        assert abs(sum(b.group == group for b in half) - n / 2) <= max(2, n * 0.1)
    # nothing lost or repeated
    assert len({(b.group, b.var, b.done_index) for b in blocks}) == len(blocks)


def rule_after_rule(blocks):
    return sorted(blocks, key=lambda b: (b.group, b.done_index))


@pytest.mark.parametrize("order", [rule_after_rule, lambda bs: list(reversed(bs))], ids=["rule-after-rule", "reversed"])
def test_store_content_does_not_depend_on_the_order(tmp_path, monkeypatch, order):
    a = run_sweep(parse_config(raw_config(tmp_path / "a.zarr")), progress=False)
    monkeypatch.setattr(runner, "interleave", order)
    b = run_sweep(parse_config(raw_config(tmp_path / "b.zarr")), progress=False)
    ga, gb = load_all(a), load_all(b)
    assert ga.keys() == gb.keys()
    for g in ga:
        for v in ga[g].data_vars:
            np.testing.assert_array_equal(ga[g][v].values, gb[g][v].values, err_msg=f"{g}/{v}")
