"""The report's options as one parameter object (``ReportSpec``): the API and ``votebench report`` share its
defaults, options given to ``build_report`` replace the spec's fields, an unknown option is refused before anything
is written, and the CLI hands its flags over unchanged."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import DATA

from engine.app import cli
from engine.app.commands import report as report_command
from engine.app.report import ReportSpec, build_report

#: ReportSpec field -> the `votebench report` flag's destination (argparse), where the names differ
FLAG = {"rules": "rule", "formats": "format"}


def test_cli_defaults_are_the_spec_defaults():
    parser = cli.subparsers(cli.build_parser())["report"]
    args = parser.parse_args(["in.csv", "--out", "out"])
    for f in dataclasses.fields(ReportSpec):
        flag = getattr(args, FLAG.get(f.name, f.name))
        if f.name == "formats":
            flag = tuple(x for x in flag.split(",") if x.strip())
        if f.name == "lower_is_better":
            flag = tuple(flag or ())
        assert flag == f.default, f.name


def test_cli_hands_every_flag_to_the_spec(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr("engine.app.report.build_report", lambda src, out, spec: seen.update(spec=spec) or out)
    parser = cli.subparsers(cli.build_parser())["report"]
    args = parser.parse_args(["in.csv", "--out", str(tmp_path / "r"), "--rule", "copeland", "--rule", "borda",
                              "--alpha", "0.1", "--top-k", "7", "--replicates", "30", "--repeats", "4", "--over", "tasks",
                              "--seed", "5", "--format", "svg", "--test", "nemenyi", "--paired-top-k", "3",
                              "--paired-resamples", "99", "--primary", "copeland", "--level", "two",
                              "--missing", "listwise"])
    report_command._build(args, ["svg"])
    spec = seen["spec"]
    assert (spec.rules, spec.alpha, spec.top_k, spec.replicates, spec.repeats, spec.over, spec.seed, tuple(spec.formats),
            spec.test, spec.paired_top_k, spec.paired_resamples, spec.primary, spec.level, spec.missing) == (
        ["copeland", "borda"], 0.1, 7, 30, 4, "tasks", 5, ("svg",), "nemenyi", 3, 99, "copeland", "two", "listwise")


def test_options_replace_the_spec_fields_and_an_unknown_one_is_refused(tmp_path):
    base = ReportSpec(rules=["borda"], replicates=0, repeats=0, formats=("svg",), paired_top_k=0)
    out = build_report(DATA / "esann_automl.csv", tmp_path / "a", base, rules=["copeland"])
    page = out.read_text(encoding="utf-8")
    assert "copeland" in page and not (tmp_path / "a" / "figures" / "rankings.png").exists()  # svg only, as the spec
    with pytest.raises(TypeError, match="replicatez"):
        build_report(DATA / "esann_automl.csv", tmp_path / "b", base, replicatez=3)
    assert not (tmp_path / "b").exists()
