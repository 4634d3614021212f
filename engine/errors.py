"""The one user-facing error class of votebench."""

from __future__ import annotations

__all__ = ["ClusterLost", "VotebenchError"]


class VotebenchError(ValueError):
    """Bad input or options: the message names the problem and how to fix it.

    The CLI prints the message as one line on stderr and exits with :attr:`exit_code` (2).
    """

    exit_code = 2


class ClusterLost(VotebenchError):
    """The dask scheduler, or every worker able to run a task, was lost during a run.

    What was written stays (finished blocks of a results store); running the same command again resumes.
    The CLI exits with code 75 (``EX_TEMPFAIL`` of sysexits.h: a temporary failure, try again).
    """

    exit_code = 75
