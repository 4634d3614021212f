"""The documentation works as written: the README's commands, the Python examples of the README and the docs
site, the site's strict build, the generated CLI reference, the licence, citation and changelog files.

How the README's commands are checked (issue 27): every line of a ```bash block that starts with `votebench`
(or holds `&& votebench`, as the first set-up command does: only the part after `&&` runs; the `pip install` is
what made this test possible) is run in order, as a fresh clone would run them, with the working directory a
temporary folder that holds copies of `data/` and `experiments/sweeps/`, and must exit 0. A `cat > FILE <<'EOF'`
block is written to that folder first, as the shell would. Lines holding `<` are placeholders (`<YOUR_FILE>`)
and are skipped. Lines run in this process through `engine.app.cli.main` (one interpreter start instead of
twenty), shell globs expanded as the shell would; `votebench serve` runs as its own process with `--port 0`
appended (the README's port 8050 may be taken on a test machine), must print its URL and is then stopped.
Reduced sizes: a `report` line gets `--replicates 20 --repeats 5 --paired-resamples 200` appended (later flags
win), since the report's default bootstrap, subset curves and paired tests are its slow part (the report of the
set-up store still costs about 16 s of CPU); every other line runs exactly as
written (the README already uses small replicate counts).
"""

from __future__ import annotations

import doctest
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SETUP = ("pip install -e . && votebench bootstrap data/colombo_tac08.csv.gz --level two --over instances "
         "--replicates 200 --store results/tac08.zarr")
TEST_COMMAND = "pip install -e '.[test]' && pytest"
#: appended to `votebench report` lines (see the module docstring)
REPORT_REDUCED = ["--replicates", "20", "--repeats", "5", "--paired-resamples", "200"]


def _blocks(text: str, lang: str) -> list[str]:
    """The contents of the fenced code blocks of one language (indented fences too, as in list items)."""
    out = []
    for m in re.finditer(rf"^( *)```{lang}\n(.*?)^\1```", text, flags=re.S | re.M):
        indent = len(m.group(1))
        out.append("\n".join(line[indent:] for line in m.group(2).splitlines()))
    return out


def readme_steps(text: str) -> list[tuple[str, str | list[str]]]:
    """The README's bash blocks as steps: ("file", name, content) written files and ("run", line) commands."""
    steps: list = []
    for block in _blocks(text, "bash"):
        lines = iter(block.splitlines())
        for line in lines:
            heredoc = re.match(r"cat > (\S+) <<'EOF'$", line.strip())
            if heredoc:
                body = []
                for inner in lines:
                    if inner.strip() == "EOF":
                        break
                    body.append(inner)
                steps.append(("file", heredoc.group(1), "\n".join(body) + "\n"))
                continue
            command = line.split("  #")[0].strip()
            if "&& votebench " in command:
                command = command[command.index("&& votebench ") + 3:]
            if command.startswith("votebench ") or command == "votebench":
                steps.append(("run", command))
    return steps


def _argv(command: str, cwd: Path) -> list[str]:
    argv = []
    for word in shlex.split(command)[1:]:
        matches = sorted(glob.glob(word, root_dir=cwd)) if any(c in word for c in "*?[") else []
        argv += matches or [word]
    return argv


def _serve(argv: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "engine", *argv, "--port", "0"], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # "votebench dashboard of STORE at URL (Ctrl-C to stop)", or "" if it exited
        assert "http://127.0.0.1:" in line, (argv, line, proc.stderr.read() if proc.poll() is not None else "")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_readme_keeps_the_two_setup_commands_and_ci_runs_the_second():
    text = README.read_text(encoding="utf-8")
    setup = _blocks(text, "bash")
    assert any(block.splitlines() == [SETUP, TEST_COMMAND] for block in setup)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[ci.index("# --- the README's test command, verbatim ---") + 1] == TEST_COMMAND


def test_readme_is_short_and_its_local_links_exist():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (ROOT / target).exists(), target


def test_readme_commands_run_as_written(tmp_path, capsys, monkeypatch):
    from engine.app.cli import main

    steps = readme_steps(README.read_text(encoding="utf-8"))
    runs = [s[1] for s in steps if s[0] == "run"]
    assert len(runs) >= 20 and runs[0] == SETUP.split("&& ")[1]
    shutil.copytree(ROOT / "data", tmp_path / "data")
    shutil.copytree(ROOT / "experiments" / "sweeps", tmp_path / "experiments" / "sweeps")
    monkeypatch.chdir(tmp_path)
    failed, ran = [], 0
    for step in steps:
        if step[0] == "file":
            (tmp_path / step[1]).write_text(step[2], encoding="utf-8")
            continue
        command = step[1]
        if "<" in command:
            continue  # a placeholder such as <YOUR_FILE>
        argv = _argv(command, tmp_path)
        ran += 1
        if argv and argv[0] == "serve":
            _serve(argv, tmp_path)
            continue
        if argv and argv[0] == "report":
            argv += REPORT_REDUCED
        try:
            code = main(argv)
        except SystemExit as exc:  # --version and --help exit through argparse
            code = exc.code
        out, err = capsys.readouterr()
        if code != 0 or not (out + err).strip():  # convert reports on stderr; everything else prints a result
            failed.append(f"{command}: exit {code}: {err.strip()[-300:]}")
    assert ran >= 20
    assert not failed, "\n".join(failed)
    assert (tmp_path / "results" / "tac08.zarr").is_dir() and (tmp_path / "my_report" / "index.html").is_file()


# -------------------------------------------------------------------------------- Python examples (doctests)
def _pages_with_examples() -> list[Path]:
    pages = [README, *sorted(DOCS.rglob("*.md"))]
    return [p for p in pages if "```pycon" in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("page", _pages_with_examples(), ids=lambda p: str(p.relative_to(ROOT)))
def test_python_examples_of_the_docs_run(page, monkeypatch):
    """Every ```pycon block of a page, in order, as one doctest (names carry over between the page's blocks)."""
    monkeypatch.chdir(ROOT)  # the examples read data/ by relative paths, as from a clone
    text = "\n\n".join(_blocks(page.read_text(encoding="utf-8"), "pycon"))
    test = doctest.DocTestParser().get_doctest(text, {}, str(page.relative_to(ROOT)), str(page), 0)
    assert test.examples
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


# -------------------------------------------------------------------------------- the site
def test_docs_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-4000:]
    cli = (tmp_path / "site" / "cli" / "index.html").read_text(encoding="utf-8")
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "votebench bootstrap" in cli and "--replicates" in cli
    assert "engine.labelled.core.rank" in api and "Parameters" in api


def test_cli_reference_is_every_subcommands_help():
    """The generated page holds, for every sub-command, the options argparse knows (read from the parser's actions)."""
    pytest.importorskip("mkdocs")
    sys.path.insert(0, str(DOCS / "_hooks"))
    try:
        import generated_pages
    finally:
        sys.path.remove(str(DOCS / "_hooks"))
    from engine.app.cli import build_parser, subparsers

    page = generated_pages.cli_reference()
    sections = dict(re.findall(r"^## votebench (\w+)\n\n```text\n(.*?)^```", page, flags=re.S | re.M))
    subs = subparsers(build_parser())
    assert set(sections) == set(subs)
    for name, sub in subs.items():
        for action in sub._actions:
            for option in action.option_strings:
                assert option in sections[name], (name, option)


# -------------------------------------------------------------------------------- licence, citation, changelog
def test_version_is_the_package_version():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    res = subprocess.run([sys.executable, "-m", "engine", "--version"], capture_output=True, text=True, check=False,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert res.returncode == 0 and res.stdout == f"votebench {version}\n"


def test_license_is_the_complete_apache_2_text():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    sections = re.findall(r"^\s+(\d)\. (Definitions|Grant of Copyright License|Grant of Patent License|Redistribution|"
                          r"Submission of Contributions|Trademarks|Disclaimer of Warranty|Limitation of Liability|"
                          r"Accepting Warranty or Additional Liability)\.", text, flags=re.M)
    assert [int(n) for n, _ in sections] == list(range(1, 10))
    assert "APPENDIX: How to apply the Apache License to your work." in text
    license_field = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"]
    assert license_field == {"text": "Apache-2.0"}


def test_citation_cff_is_valid_and_cites_the_four_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert cff[key]
    assert cff["license"] == "Apache-2.0"
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert str(cff["version"]) == version
    titles = " ".join(ref["title"] for ref in cff["references"])
    for words in ("What are the best systems", "Vote'n'Rank", "Judging competitions and benchmarks",
                  "User-defined trade-offs in LLM benchmarking"):
        assert words in titles
    for ref in cff["references"]:
        assert ref["type"] in {"article", "conference-paper", "software"} and ref["authors"] and ref["year"]
    try:
        from cffconvert import Citation
    except ImportError:
        return
    Citation((ROOT / "CITATION.cff").read_text(encoding="utf-8")).validate()


def test_changelog_follows_keep_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog") and "keepachangelog.com" in text
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, flags=re.M)
    assert re.search(r"^## \[Unreleased\]$", text, flags=re.M)


def test_every_command_line_of_the_docs_parses():
    """The docs pages' `votebench` lines (not run here: some need a cluster or run until Ctrl-C) name only real
    sub-commands and options: each is parsed by the CLI's own parser."""
    from engine.app.cli import build_parser

    parser = build_parser()
    lines = [step[1] for page in sorted(DOCS.rglob("*.md")) for step in readme_steps(page.read_text(encoding="utf-8"))
             if step[0] == "run"]
    assert len(lines) >= 30
    bad = []
    for line in lines:
        argv = [w.strip("<>") for w in shlex.split(line)[1:]]
        try:
            parser.parse_args(argv)
        except SystemExit:
            bad.append(line)
    assert not bad, "\n".join(bad)
