"""The engine's layers, read from its import graph (imports inside functions included).

ARCHITECTURE.md draws the layers; this test holds the code to the drawing:

* every ``engine`` module belongs to exactly one layer, named by where it sits in the tree; the package itself
  (``engine/__init__.py``, the public API) sits above the labelled and I/O layers it re-exports;
* a module imports only modules of its own layer or of the layers below it;
* the kernel layer imports nothing of ``engine`` outside :mod:`engine.kernels` but the error type, and no
  library that reads or writes files or labels arrays;
* the import graph has no cycle (a package's ``__init__`` counts as one more module).

The graph is built with :mod:`ast` from the source text, independently of the engine's own code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"

#: layer name -> its rank; a module may import modules of a rank <= its own
LAYERS = {"base": 0, "kernels": 1, "rules": 2, "labelled": 3, "io": 4, "api": 5, "distributed": 6, "sweep": 7, "watch": 7,
          "app": 8, "top": 9}
BASE = {"engine.errors", "engine.dims", "engine.limits", "engine.progress"}
#: libraries the kernel layer must not import: file and network I/O, labelled arrays, schedulers, rendering
KERNEL_FORBIDDEN = {"pyarrow", "zarr", "fsspec", "pandas", "xarray", "dask", "distributed", "tornado", "matplotlib",
                    "pathlib", "urllib", "json", "csv", "gzip", "io", "shutil", "tqdm", "psutil", "yaml", "tomllib"}
MAX_TOP_MODULES = 8


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def engine_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ENGINE.rglob("*.py"))}


def layer_of(mod: str) -> str:
    if mod in BASE:
        return "base"
    if mod == "engine":  # the public API: re-exports of the labelled and I/O layers, for the layers above them
        return "api"
    if mod == "engine.__main__":
        return "top"
    if mod == "engine.rules":
        return "rules"
    part = mod.split(".")[1]
    if part not in LAYERS:
        raise AssertionError(f"{mod} belongs to no layer: put it in one of the layer packages (ARCHITECTURE.md)")
    return part


def imports_of(mod: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(engine modules imported, top-level outside libraries imported) by one module, anywhere in its body."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    inside: set[str] = set()
    outside: set[str] = set()

    def add(target: str) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target:
            inside.add(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "engine":
                    add(a.name)
                else:
                    outside.add(a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module or ""
            if src.split(".")[0] != "engine":
                outside.add(src.split(".")[0])
                continue
            for a in node.names:
                full = f"{src}.{a.name}"
                add(full if full in modules else src)
    inside.discard(mod)
    return inside, outside


@pytest.fixture(scope="module")
def graph() -> dict[str, tuple[set[str], set[str]]]:
    modules = engine_modules()
    return {m: imports_of(m, p, modules) for m, p in modules.items()}


def test_every_module_has_a_layer_and_the_top_is_small(graph):
    for mod in graph:
        layer_of(mod)
    top = sorted(p.name for p in ENGINE.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} modules directly under engine/: {top}"


def test_layers_import_only_downwards(graph):
    bad = []
    for mod, (inside, _) in sorted(graph.items()):
        here = LAYERS[layer_of(mod)]
        for dep in sorted(inside):
            if LAYERS[layer_of(dep)] > here:
                bad.append(f"{mod} ({layer_of(mod)}) imports {dep} ({layer_of(dep)})")
    assert not bad, "imports that run up the layers:\n" + "\n".join(bad)


def test_kernels_are_pure(graph):
    bad = []
    for mod, (inside, outside) in sorted(graph.items()):
        if layer_of(mod) != "kernels":
            continue
        for dep in sorted(inside):
            if layer_of(dep) != "kernels" and dep != "engine.errors":
                bad.append(f"{mod} imports {dep}")
        for lib in sorted(outside & KERNEL_FORBIDDEN):
            bad.append(f"{mod} imports {lib}")
    assert not bad, "the kernel layer reaches outside itself:\n" + "\n".join(bad)


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of a directed graph as a list of nodes (first == last), or None; iterative three-colour search."""
    colour = dict.fromkeys(edges, 0)
    for start in sorted(edges):
        if colour[start]:
            continue
        stack = [(start, iter(sorted(edges[start])))]
        colour[start] = 1
        path = [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour.get(nxt, 2) == 1:
                return path[path.index(nxt):] + [nxt]
            elif colour.get(nxt) == 0:
                colour[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(edges[nxt]))))
    return None


def test_find_cycle_finds_cycles_and_only_them():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}) is None


def test_no_import_cycle(graph):
    edges = {m: set(inside) for m, (inside, _) in graph.items()}
    # a package's __init__ that re-exports its submodules is not a cycle with a submodule importing a sibling
    # through the package: the graph keeps both edges, so such a pair is reported like any other cycle
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


#: test folders that are not engine packages: the experiments' reproductions and the project's own rules
OTHER_TEST_FOLDERS = {"experiments", "project"}
#: the engine's packages with a test folder: its subpackages, plus the rule registry (engine/rules.py)
TESTED = {p.name for p in ENGINE.iterdir() if (p / "__init__.py").is_file()} | {"rules"}


def test_the_tests_mirror_the_packages():
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert sorted(tests.glob("test_*.py")) == []  # every test module sits in the folder of what it tests
    assert folders - OTHER_TEST_FOLDERS == TESTED
