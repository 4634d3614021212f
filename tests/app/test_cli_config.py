"""``--config FILE`` on every sub-command: defaults < file < flags, checked like the flags."""

from __future__ import annotations

import json

import pytest
from conftest import DATA, one_line_error, run_cli

GLUE = DATA / "vnr_glue.csv"


def ranking(out: str) -> list[tuple[str, float]]:
    return [(r["system"], r["score"]) for r in json.loads(out)["ranking"]]


def test_every_subcommand_takes_a_config_file():
    from engine.app.cli import build_parser
    from engine.app.cli import subparsers as _subparsers

    for name, sp in _subparsers(build_parser()).items():
        assert any("--config" in a.option_strings for a in sp._actions), name


def test_rank_file_sets_defaults_and_flags_win(tmp_path, capsys):
    cfg = tmp_path / "rank.toml"
    cfg.write_text('rule = "copeland"\nmissing = "listwise"\nformat = "json"\n')
    code, by_file, err = run_cli(capsys, "rank", GLUE, "--config", cfg)
    assert code == 0, err
    code, by_flags, err = run_cli(capsys, "rank", GLUE, "--rule", "copeland", "--missing", "listwise", "--format", "json")
    assert code == 0, err
    assert ranking(by_file) == ranking(by_flags)
    assert json.loads(by_file)["rule"] == "copeland"
    # a flag equal to the built-in default still beats the file
    code, out, err = run_cli(capsys, "rank", GLUE, "--config", cfg, "--rule", "borda")
    assert code == 0, err
    assert json.loads(out)["rule"] == "borda"


def test_rank_options_table_and_weights_mapping(tmp_path, capsys):
    cfg = tmp_path / "rank.json"
    cfg.write_text(json.dumps({"rule": "optimality_gap", "missing": "listwise", "format": "json",
                               "options": {"gamma": 0.9}}))
    code, out, err = run_cli(capsys, "rank", GLUE, "--config", cfg)
    assert code == 0, err
    code, ref, err = run_cli(capsys, "rank", GLUE, "--rule", "optimality_gap", "--missing", "listwise", "--format", "json",
                             "--param", "gamma=0.9")
    assert ranking(out) == ranking(ref)
    code, other, err = run_cli(capsys, "rank", GLUE, "--config", cfg, "--param", "gamma=0.5")  # flags win per option
    assert ranking(other) != ranking(out)


def test_bootstrap_file_typed_values(tmp_path, capsys):
    cfg = tmp_path / "boot.toml"
    cfg.write_text('replicates = 12\nseed = 3\nover = "systems"\nmissing = "listwise"\nformat = "json"\n')
    code, out, err = run_cli(capsys, "bootstrap", GLUE, "--config", cfg)
    assert code == 0, err
    res = json.loads(out)
    assert (res["replicates"], res["seed"], res["over"]) == (12, 3, "systems")


@pytest.mark.parametrize("text, fragments", [
    ('rulez = "borda"\n', ["unknown config key 'rulez'", "missing"]),
    ('missing = "sometimes"\n', ["missing = 'sometimes'", "listwise"]),
    ('replicates = "many"\n', ["replicates = 'many' is not a valid value"]),
    ('groups = "yes"\n', ["groups must be true or false"]),
    ("rule = [", ["malformed config"]),
])
def test_bad_config_is_a_one_line_error(tmp_path, capsys, text, fragments):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    cmd = "bootstrap" if "replicates" in text else "rank"
    one_line_error(*run_cli(capsys, cmd, GLUE, "--config", cfg), *fragments)


def test_missing_config_file(tmp_path, capsys):
    one_line_error(*run_cli(capsys, "rank", GLUE, "--config", tmp_path / "nope.toml"), "cannot read config")
