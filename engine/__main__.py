"""``python -m engine``: the ``votebench`` command line (:func:`engine.app.cli.main`)."""

from __future__ import annotations

import sys

from engine.app.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
