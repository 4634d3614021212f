"""The checks of the statistical options every kernel shares: a significance level and an interval level.

One function per option, so that the API, the command line, the report and the dashboard refuse a bad value
with the same one-line message.
"""

from __future__ import annotations

from engine.errors import VotebenchError

__all__ = ["check_alpha", "check_level"]


def check_alpha(alpha: float, *, name: str = "alpha") -> float:
    """``alpha`` as a float in (0, 1), else :class:`VotebenchError` naming the option ``name``.

    Examples
    --------
    >>> check_alpha(0.05)
    0.05
    """
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise VotebenchError(f"{name} must be a number between 0 and 1, got {alpha!r}") from None
    if not 0.0 < a < 1.0 or isinstance(alpha, bool):
        raise VotebenchError(f"{name} must be between 0 and 1 (exclusive), got {alpha!r}")
    return a


def check_level(level: float, *, include_one: bool = False, above: float = 0.0, name: str = "interval level") -> float:
    """An interval level as a float in (``above``, 1) (``include_one``: up to 1 included), else :class:`VotebenchError`
    naming the option ``name`` (``--interval``, ``--coverage``).

    Examples
    --------
    >>> check_level(0.95)
    0.95
    >>> check_level(1.0, include_one=True)
    1.0
    >>> check_level(0.5, above=0.5)
    Traceback (most recent call last):
    ...
    engine.errors.VotebenchError: interval level must be in (0.5, 1), got 0.5
    """
    try:
        v = float(level)
    except (TypeError, ValueError):
        raise VotebenchError(f"{name} must be a number between {above:g} and 1, got {level!r}") from None
    if isinstance(level, bool) or not (above < v < 1.0 or (include_one and v == 1.0)):
        raise VotebenchError(f"{name} must be in ({above:g}, {'1]' if include_one else '1)'}, got {level}")
    return v
