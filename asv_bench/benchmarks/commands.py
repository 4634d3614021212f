"""Whole commands as a user runs them (a fresh process each): start-up, rank, bootstrap --store, report, compare."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import DATA, skip_unless


def votebench(*args: str, cwd: str | None = None) -> None:
    """Run ``votebench ARGS`` in a fresh interpreter; a failure is an error of the benchmark."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    subprocess.run([sys.executable, "-m", "engine", *args], check=True, cwd=cwd, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class StartUp:
    """The cost of starting a command: ``import engine`` and a tiny ``rank``, against ``import xarray``."""

    repeat = 7
    number = 1

    def time_import_xarray(self):
        subprocess.run([sys.executable, "-c", "import xarray"], check=True)

    def time_rank_small(self):
        votebench("rank", str(DATA / "vnr_value.csv"), "--rule", "copeland")


class Commands:
    """``rank``, ``bootstrap --store``, ``report`` and ``compare`` on shipped data."""

    repeat = 3
    number = 1
    timeout = 600

    def setup(self):
        skip_unless((DATA / "colombo_tac08.csv.gz").exists())
        self.tmp = tempfile.mkdtemp()

    def teardown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def time_rank_tac08_two_level(self):
        votebench("rank", str(DATA / "colombo_tac08.csv.gz"), "--level", "two")

    def time_bootstrap_store_tac08(self):
        store = str(Path(self.tmp) / "tac08.zarr")
        votebench("bootstrap", str(DATA / "colombo_tac08.csv.gz"), "--level", "two", "--over", "instances",
                  "--replicates", "200", "--store", store, "--overwrite")

    def time_report_glue(self):
        votebench("report", str(DATA / "vnr_glue.csv"), "--missing", "listwise", "--out", str(Path(self.tmp) / "glue-report"))

    def time_compare_glue(self):
        votebench("compare", str(DATA / "colombo_glue.csv"))
