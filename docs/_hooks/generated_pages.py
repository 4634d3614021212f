"""mkdocs hook: pages generated at build time, never written by hand.

* ``cli.md``: the command-line reference, rendered from the parser the ``votebench`` command itself uses
  (``engine.app.cli.build_parser``): the top-level ``--help`` and every sub-command's ``--help``.
* ``experiments/**/README.md`` and ``data/README.md``: the repository's own pages on the reproductions and the
  shipped data, served under the same paths so that their relative links keep working.
"""

from __future__ import annotations

import os
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
#: repository pages served as they are (path in the repository = path in the site)
REPO_PAGES = ("data/README.md", "experiments/README.md", "experiments/colombo2022/README.md",
              "experiments/pavao2021/README.md", "experiments/votenrank2023/README.md",
              "experiments/xllmbench2025/README.md", "cluster/README.md")


def cli_reference() -> str:
    """The CLI reference page: ``votebench --help`` and ``votebench COMMAND --help`` for every sub-command."""
    os.environ["COLUMNS"] = "110"  # argparse wraps its help to the terminal width: a fixed width, the same page everywhere
    from engine.app.cli import build_parser, subparsers

    parser = build_parser()
    parts = ["# Command-line reference", "",
             "Generated at build time from the parser of the `votebench` command (`engine.app.cli.build_parser`): "
             "each section is exactly what `votebench COMMAND --help` prints. Every command also takes "
             "`--config FILE` (a TOML or JSON file of its long options; defaults < file < flags).", "",
             "## votebench", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in subparsers(parser).items():
        parts += [f"## votebench {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def on_files(files: Files, config) -> Files:  # noqa: ANN001 - mkdocs' hook signature
    files.append(File.generated(config, "cli.md", content=cli_reference()))
    for rel in REPO_PAGES:
        files.append(File.generated(config, rel, content=(ROOT / rel).read_text(encoding="utf-8")))
    return files
