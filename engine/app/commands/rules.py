"""``votebench rules``: list the registered aggregation rules (:data:`engine.RULES`)."""

from __future__ import annotations

import argparse

NAME = "rules"
HELP = "list the registered aggregation rules"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments of its own."""


def run(args: argparse.Namespace) -> int:
    """One line per rule (those of installed plugins too): name, one-pass or in-memory, how it treats missing scores, summary."""
    from engine.rules import RULES, load_rule_plugins, rule_names

    load_rule_plugins()
    width = max(len(n) for n in RULES)
    for name in rule_names():
        r = RULES[name]
        kind = "one-pass" if r.one_pass else "in-memory"
        print(f"{name:<{width}}  {kind:<9}  {'pairwise' if r.missing == 'pairwise' else 'policy':<8}  {r.summary}")
    return 0
