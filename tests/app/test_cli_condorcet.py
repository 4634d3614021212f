"""``votebench condorcet``: the help and the output say which Condorcet winner is meant (strict by default, the
paper's weak eq. 2 with --weak); the counts are the paper's (Vote'n'Rank section 3.2, SuperGLUE: 10 of 22
prospective with the weak relation)."""

from __future__ import annotations

import json

from conftest import DATA, run_cli

SGLUE = DATA / "vnr_superglue.csv"


def test_help_names_the_default_and_the_papers_definition(capsys):
    code, out, _ = run_cli(capsys, "condorcet", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "By default the Condorcet winner is the strict one" in text and "G w > 0" in text
    assert "--weak uses the paper's definition, eq. (2): G w >= 0" in text and "votenrank2023" in text
    code, out, _ = run_cli(capsys, "--help")
    assert "(default: strict; --weak: the paper's eq. 2)" in " ".join(out.split())


def test_output_says_which_definition_and_weak_gives_the_papers_count(capsys):
    code, out, _ = run_cli(capsys, "condorcet", SGLUE, "--missing", "listwise")
    assert code == 0
    lines = out.splitlines()
    assert lines[2].startswith("# definition: strict: beats every other system by a strict weighted majority, G w > 0")
    assert "(the default; --weak gives the paper's eq. 2)" in lines[2]
    code, out, _ = run_cli(capsys, "condorcet", SGLUE, "--missing", "listwise", "--weak")
    lines = out.splitlines()
    assert lines[1] == "# prospective systems (some task weights make them the weak Condorcet winner): 10 of 22"
    assert lines[2].startswith("# definition: weak: beats or ties every other system, G w >= 0 (--weak; Vote'n'Rank eq. 2")
    code, out, _ = run_cli(capsys, "condorcet", SGLUE, "--missing", "listwise", "--weak", "--format", "json")
    res = json.loads(out)
    assert res["definition"] == "weak" and sum(r["prospective"] for r in res["systems"]) == 10
    code, out, _ = run_cli(capsys, "condorcet", SGLUE, "--missing", "listwise", "--format", "json")
    res = json.loads(out)
    assert res["definition"] == "strict"
    # strict is the stronger requirement: every strictly prospective system is weakly prospective
    weak = {r["system"] for r in json.loads(run_cli(capsys, "condorcet", SGLUE, "--missing", "listwise", "--weak",
                                                    "--format", "json")[1])["systems"] if r["prospective"]}
    assert {r["system"] for r in res["systems"] if r["prospective"]} <= weak
