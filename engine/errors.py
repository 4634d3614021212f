"""The one user-facing error class of votebench."""

from __future__ import annotations

__all__ = ["VotebenchError"]


class VotebenchError(ValueError):
    """Bad input or options: the message names the problem and how to fix it.

    The CLI prints the message as one line on stderr and exits with code 2.
    """
