"""Every public name of ``engine`` (its ``__all__``) has a numpydoc docstring with the sections a reader looks for.

Functions: ``Parameters`` (when they take any), ``Returns`` and ``Examples``; classes: ``Parameters`` or
``Attributes`` and ``Examples``.  The examples themselves run as doctests (``--doctest-modules`` in
pyproject.toml), so a wrong example fails the suite.
"""

from __future__ import annotations

import inspect

import pytest

import engine

PUBLIC = sorted(n for n in engine.__all__ if inspect.isfunction(getattr(engine, n)) or inspect.isclass(getattr(engine, n)))


def sections(doc: str) -> set[str]:
    """The numpydoc section titles of ``doc``: a line followed by a line of dashes of the same length."""
    lines = [line.strip() for line in doc.splitlines()]
    return {a for a, b in zip(lines, lines[1:]) if a and set(b) == {"-"} and len(b) == len(a)}


def test_sections_reads_numpydoc_headings():
    doc = "Summary.\n\nParameters\n----------\nx : int\n\nReturns\n-------\nint\n\nNotes\n---\n"
    assert sections(doc) == {"Parameters", "Returns"}  # "Notes" with a short underline is no heading


def test_the_public_api_is_listed():
    assert {"rank", "bootstrap", "open_scores", "Rule", "register_rule"} <= set(PUBLIC)


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_has_a_numpydoc_docstring(name):
    obj = getattr(engine, name)
    doc = inspect.getdoc(obj) or ""
    found = sections(doc)
    if inspect.isclass(obj):
        need = [{"Parameters", "Attributes"}, {"Examples"}]
        if issubclass(obj, Exception):
            need = []  # an error type: its summary says when it is raised
    else:
        params = [p for p in inspect.signature(obj).parameters.values() if p.name != "self"]
        need = ([{"Parameters"}] if params else []) + [{"Returns"}, {"Examples"}]
    missing = [" or ".join(sorted(alternatives)) for alternatives in need if not alternatives & found]
    assert not missing, f"engine.{name}: the docstring lacks {', '.join(missing)}"
    if {"Examples"} & found:
        assert ">>> " in doc.split("Examples", 1)[1], f"engine.{name}: an Examples section without an example"
