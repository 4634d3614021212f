"""``python -m engine.cli``: the command line, which lives in :mod:`engine.app.cli` (kept for old scripts)."""

from __future__ import annotations

import sys

from .app.cli import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
