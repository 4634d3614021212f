"""Paper reproductions: discover, load and run the experiments of ``experiments/<name>/run.py``.

Every sub-folder of ``experiments/`` (at the repository root) that holds a
``run.py`` is an experiment named after the folder.  ``run.py`` is loaded by its
file path (the folder is not a package) and must define

``TITLE`` : str
    One line.
``DESCRIPTION`` : str
    A few lines: what is reproduced.
``run(out, *, smoke=False, scheduler=None) -> dict``
    Writes ``out/results.json``, ``out/README.md`` and ``out/figures/*.png`` and
    returns a small summary.  ``smoke=True`` is the reduced size used in CI;
    ``scheduler`` is the address of a dask scheduler the experiment may use.

:func:`run_experiment` times the run and adds ``seconds`` and ``out`` to the
summary; ``votebench experiment NAME|--list [--smoke] [--out DIR] [--scheduler ADDR]
[--root DIR]`` (:mod:`engine.app.commands.experiment`) calls them; :func:`use_root` sets the
project folder it was given.  :func:`load_config`,
:func:`write_json`, :func:`markdown_table`, :func:`format_value`,
:class:`ComparisonLog`, :func:`scheduler_context` and :func:`dask_compute` are
small helpers the ``run.py`` files may use (config with a ``[smoke]`` override
table, JSON without NaN, Markdown tables and cells, the paper-vs-ours rows of a
README, dask work on a given scheduler).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.errors import VotebenchError

__all__ = ["ROOT", "find_root", "data_path",
           "experiments_dir", "experiment_names", "experiment_title", "load_experiment", "list_experiments", "run_experiment",
           "default_out", "use_root", "load_config", "json_safe", "write_json", "markdown_table", "format_value",
           "ComparisonLog", "STATUSES", "scheduler_context", "dask_compute"]

def find_root() -> Path:
    """The project folder holding ``experiments/`` and ``data/``, located through the package.

    In order: the ``VOTEBENCH_ROOT`` environment variable; the source folder an editable install of
    votebench points to (its ``direct_url.json``, PEP 610); the folder above the imported ``engine``
    package when it holds ``experiments/`` (a checkout on ``sys.path``).  :data:`ROOT` holds the answer;
    ``votebench experiment --root DIR`` or ``run_experiment(..., root=DIR)`` give another one explicitly.
    """
    import json
    import os
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlparse

    env = os.environ.get("VOTEBENCH_ROOT")
    if env:
        return Path(env).resolve()
    package_parent = Path(__file__).resolve().parents[2]  # engine/app/experiment.py: the folder above engine/
    if (package_parent / "experiments").is_dir():
        return package_parent
    try:
        info = json.loads(distribution("votebench").read_text("direct_url.json") or "{}")
    except (PackageNotFoundError, ValueError):
        info = {}
    url = urlparse(str(info.get("url", "")))
    if url.scheme == "file" and (Path(unquote(url.path)) / "experiments").is_dir():
        return Path(unquote(url.path))
    return package_parent


#: the project root (:func:`find_root`): experiments live in ``ROOT / "experiments"``, results go to ``ROOT / "results"``
ROOT = find_root()
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")
_REQUIRED = ("TITLE", "DESCRIPTION", "run")


def experiments_dir() -> Path:
    """The ``experiments/`` folder of the repository (:data:`ROOT`); a :class:`VotebenchError` if it is missing."""
    path = Path(ROOT) / "experiments"
    if not path.is_dir():
        raise VotebenchError(f"no experiments folder at {path}; the experiments ship with a source checkout of votebench")
    return path


def data_path(name: str | Path) -> Path:
    """A dataset shipped in the repository's ``data/`` folder (the experiments read nothing else).

    Parameters
    ----------
    name : str or pathlib.Path
        File name inside ``data/`` (e.g. ``"colombo_tac08.csv.gz"``).

    Returns
    -------
    pathlib.Path
        ``ROOT / "data" / name``.

    Raises
    ------
    VotebenchError
        When the file is missing (a broken checkout), naming it.
    """
    path = Path(ROOT) / "data" / name
    if not path.is_file():
        raise VotebenchError(f"{path}: dataset missing from the repository's data/ folder (see data/README.md)")
    return path


def experiment_names() -> list[str]:
    """Names of the experiments (sub-folders of ``experiments/`` with a ``run.py``), sorted, without importing them."""
    return sorted(p.name for p in experiments_dir().iterdir()
                  if p.is_dir() and _NAME.match(p.name) and (p / "run.py").is_file())


def load_experiment(name: str) -> ModuleType:
    """Import ``experiments/<name>/run.py`` by its file path and check that it defines the interface.

    Raises
    ------
    VotebenchError
        Unknown name (the message lists the known experiments), a ``run.py``
        that fails to import, or one that lacks ``TITLE``, ``DESCRIPTION`` or ``run``.
    """
    names = experiment_names()
    if name not in names:
        known = ", ".join(names) if names else "none"
        raise VotebenchError(f"unknown experiment {name!r}; known experiments: {known}")
    path = experiments_dir() / name / "run.py"
    module_name = f"votebench_experiment_{name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has a loader
        raise VotebenchError(f"cannot load experiment {name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses, pickling (dask) look the module up by name
    try:
        spec.loader.exec_module(module)
    except VotebenchError:
        sys.modules.pop(module_name, None)
        raise
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise VotebenchError(f"experiment {name!r} cannot be loaded ({path}): {type(exc).__name__}: {exc}") from exc
    try:  # dask workers cannot import the module by name: ship its functions by value
        import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    except (ImportError, AttributeError, ValueError):  # pragma: no cover - old cloudpickle
        pass
    missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
    if missing or not callable(module.run):
        what = ", ".join(missing) if missing else "a callable run"
        raise VotebenchError(f"experiment {name!r} ({path}) does not define {what}")
    return module


def experiment_title(name: str) -> str:
    """The ``TITLE`` of ``experiments/<name>/run.py``, read from its source without running any of it.

    ``votebench experiment --list`` lists a folder it may not trust (``--root DIR``): the file is parsed
    (:mod:`ast`), never imported, so ``TITLE`` must be a string literal (``DESCRIPTION`` and ``run`` are
    checked to be defined at the top level).

    Raises
    ------
    VotebenchError
        Unknown name, a ``run.py`` that does not parse, or one without a literal ``TITLE``, a ``DESCRIPTION`` or
        a ``run``.
    """
    import ast

    names = experiment_names()
    if name not in names:
        known = ", ".join(names) if names else "none"
        raise VotebenchError(f"unknown experiment {name!r}; known experiments: {known}")
    path = experiments_dir() / name / "run.py"
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError) as exc:
        raise VotebenchError(f"experiment {name!r} cannot be loaded ({path}): {type(exc).__name__}: {exc}") from None
    defined: dict[str, ast.AST | None] = {}  # top-level name -> the value last assigned (None: a def, an import)
    for node in tree.body:
        if isinstance(node, ast.Assign):
            defined.update({t.id: node.value for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            defined[node.target.id] = node.value
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined[node.name] = None
        elif isinstance(node, ast.Import | ast.ImportFrom):
            defined.update({(a.asname or a.name).split(".")[0]: None for a in node.names})
    missing = [attr for attr in _REQUIRED if attr not in defined]
    if missing:
        raise VotebenchError(f"experiment {name!r} ({path}) does not define {', '.join(missing)}")
    try:
        title = ast.literal_eval(defined["TITLE"]) if defined["TITLE"] is not None else None
    except ValueError:
        title = None
    if not isinstance(title, str):
        raise VotebenchError(f"experiment {name!r} ({path}): TITLE is not a string literal (listed without running run.py)")
    return title


def list_experiments() -> dict[str, ModuleType]:
    """Every experiment, loaded: ``{name: module}`` (see :func:`load_experiment`)."""
    return {name: load_experiment(name) for name in experiment_names()}


def default_out(name: str) -> Path:
    """Default output folder of an experiment: ``<ROOT>/results/experiments/<name>``."""
    return Path(ROOT) / "results" / "experiments" / name


def run_experiment(name: str, *, out: str | Path | None = None, smoke: bool = False,
                   scheduler: str | None = None) -> dict[str, Any]:
    """Run one experiment and time it.

    Parameters
    ----------
    name : str
        Experiment name (folder under ``experiments/``).
    out : str or path, optional
        Output folder (default :func:`default_out`); created by the experiment.
    smoke : bool
        Reduced size (CI); same code path.
    scheduler : str, optional
        Address of a dask scheduler, passed to the experiment.

    Returns
    -------
    dict
        The experiment's summary plus ``name``, ``smoke``, ``out`` (the folder,
        as a string) and ``seconds`` (wall time of the whole run).
    """
    module = load_experiment(name)
    folder = Path(out) if out is not None else default_out(name)
    folder = folder.expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise VotebenchError(f"output path {folder} exists and is not a folder")
    start = time.perf_counter()
    summary = module.run(folder, smoke=bool(smoke), scheduler=scheduler)
    seconds = time.perf_counter() - start
    if not isinstance(summary, dict):
        raise VotebenchError(f"experiment {name!r}: run() returned {type(summary).__name__}, expected a dict")
    return {**summary, "name": name, "smoke": bool(smoke), "out": str(folder), "seconds": seconds}


# --------------------------------------------------------------------------------------------- helpers for run.py
def load_config(folder: str | Path, *, smoke: bool = False) -> dict[str, Any]:
    """Read ``<folder>/config.toml``; with ``smoke`` its ``[smoke]`` table overrides the top-level keys.

    A mapping under ``[smoke]`` updates the mapping of the same name key by key
    (one level deep); anything else replaces the value.  The ``smoke`` table
    itself is removed from the result.
    """
    import tomllib

    path = Path(folder) / "config.toml"
    try:
        with path.open("rb") as fh:
            cfg = tomllib.load(fh)
    except FileNotFoundError:
        raise VotebenchError(f"experiment config {path} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise VotebenchError(f"experiment config {path}: {exc}") from None
    over = cfg.pop("smoke", {})
    if smoke:
        for key, value in over.items():
            if isinstance(value, dict) and isinstance(cfg.get(key), dict):
                cfg[key] = {**cfg[key], **value}
            else:
                cfg[key] = value
    return cfg


def json_safe(obj: Any) -> Any:
    """``obj`` with numpy scalars/arrays turned into Python values and non-finite floats into ``None``."""
    import math

    import numpy as np

    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer, int)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``json_safe(data)`` as indented UTF-8 JSON (no NaN) and return the path."""
    import json

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_safe(data), indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    return path


def markdown_table(header: list[str], rows: list[list[Any]], *, fmt: Callable[[Any], str] = str) -> str:
    """A GitHub Markdown table (``|`` escaped, line breaks folded).

    Parameters
    ----------
    header : list
        Column titles (converted with ``str``).
    rows : list of lists
        Cells.
    fmt : callable, optional
        Converts a cell value to text (default ``str``; e.g. :func:`format_value`).
    """
    def clean(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(str(h)) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(clean(fmt(v)) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def format_value(value: Any, *, digits: int = 2) -> str:
    """A table cell: ``-`` for ``None`` and non-finite floats, ``yes``/``no`` for booleans, integers as they are,
    floats with ``digits`` decimals, anything else with ``str``."""
    import math

    import numpy as np

    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.{digits}f}" if math.isfinite(float(value)) else "-"
    return str(value)


#: the statuses of a paper-vs-ours comparison (experiments/README.md)
STATUSES = ("matches", "differs", "not reproducible")


class ComparisonLog:
    """The paper-vs-ours rows of an experiment's README: one per reproduced number or claim.

    Each row is a dict ``{"item", "paper", "ours", "status", "why"}`` with a
    status of :data:`STATUSES`.  ``size_note``, when set, marks the failing
    :meth:`check` calls "not reproducible" with that reason (claims that only
    hold at full size, checked on a smoke run).
    """

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.size_note = ""

    def add(self, item: str, paper: Any, ours: Any, status: str, why: str = "") -> None:
        """Add a row as given."""
        self.rows.append({"item": item, "paper": paper, "ours": ours, "status": status, "why": why})

    def compare(self, item: str, paper: float, ours: float | None, *, tol: float, why: str = "") -> None:
        """A number: "matches" when ``|ours - paper| <= tol``, else "differs" with ``why``."""
        import math

        ok = ours is not None and math.isfinite(float(ours)) and abs(float(ours) - float(paper)) <= tol
        self.add(item, paper, ours, "matches" if ok else "differs", "" if ok else why)

    def check(self, item: str, paper: Any, ours: Any, ok: bool, why: str = "") -> None:
        """A claim: "matches" when ``ok``; otherwise "not reproducible" (``size_note``) or "differs" (``why``)."""
        if ok:
            self.add(item, paper, ours, "matches")
        elif self.size_note:
            self.add(item, paper, ours, "not reproducible", self.size_note)
        else:
            self.add(item, paper, ours, "differs", why or "see the values")

    def counts(self) -> dict[str, int]:
        """Number of rows per status (every status of :data:`STATUSES`, in that order)."""
        return {s: sum(r["status"] == s for r in self.rows) for s in STATUSES}

    def markdown(self, *, fmt: Callable[[Any], str] = format_value) -> str:
        """Every row as a Markdown table (item, paper, ours, status, why); ``fmt`` formats the paper and ours cells."""
        return markdown_table(["item", "paper", "ours", "status", "why"],
                              [[r["item"], fmt(r["paper"]), fmt(r["ours"]), r["status"], r["why"]] for r in self.rows])


@contextlib.contextmanager
def scheduler_context(scheduler: str | None) -> Iterator[Any]:
    """Make the dask scheduler at ``scheduler`` the default inside the block (yields the client), or do nothing.

    Without an address the block runs locally and ``None`` is yielded; with one,
    :func:`engine.distributed.connect` opens a client, which is current inside the
    block and closed afterwards.
    """
    if not scheduler:
        yield None
        return
    from engine.distributed import connect

    client = connect(scheduler)
    if client is None:  # pragma: no cover - connect returns a client for a non-empty address
        raise VotebenchError(f"cannot connect to dask scheduler {scheduler!r}")
    from engine.distributed.cluster import on_cluster

    with client, client.as_current(), on_cluster(client):  # on_cluster: the engine's blocks go there too
        yield client


def dask_compute(tasks: list[Any], *, scheduler: str | None = None) -> list[Any]:
    """Compute ``dask.delayed`` tasks: on the scheduler at ``scheduler`` if given, else in-process (synchronously).

    The client (:func:`engine.distributed.connect`) is closed afterwards.
    """
    import dask

    if not tasks:
        return []
    if scheduler:
        with scheduler_context(scheduler):
            return list(dask.compute(*tasks))
    return list(dask.compute(*tasks, scheduler="sync"))


def use_root(root: str | os.PathLike[str]) -> Path:
    """Make ``root`` the project folder (``votebench experiment --root DIR``); it must hold ``experiments/``."""
    global ROOT
    path = Path(root).resolve()
    if not (path / "experiments").is_dir():
        raise VotebenchError(f"--root {root}: no experiments/ folder there")
    ROOT = path
    return path
