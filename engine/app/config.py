"""``--config FILE``: a TOML table or JSON object of a sub-command's options (defaults < file < flags).

:func:`config_defaults` checks every value as its flag would be checked (choices, types), so a
file cannot smuggle in what the command line refuses.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.errors import VotebenchError

__all__ = ["CONFIG_ALIASES", "config_defaults", "read_config", "typed_config_value"]


def read_config(path: str) -> dict[str, Any]:
    """A ``--config`` file: a TOML table or a JSON object."""
    import tomllib

    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise VotebenchError(f"{path}: cannot read config ({exc.strerror or exc})") from None
    try:
        cfg = json.loads(raw) if p.suffix.lower() == ".json" else tomllib.loads(raw.decode("utf-8"))
    except ValueError as exc:  # bad JSON/TOML/UTF-8 (all ValueErrors), an integer of over 4,300 digits
        raise VotebenchError(f"{path}: malformed config ({exc})") from None
    if not isinstance(cfg, dict):
        raise VotebenchError(f"{path}: config must be a table/object")
    return cfg


#: config keys whose option has another destination name
CONFIG_ALIASES = {"filter": "eval_filter"}


def config_defaults(sp: argparse.ArgumentParser, cfg: dict[str, Any], path: str) -> dict[str, Any]:
    """Parser defaults from a ``--config`` file: keys are the long option names of the sub-command.

    Values are checked as the flags would be (choices, types), so a file
    cannot smuggle in what the command line refuses.
    """
    actions = {a.dest: a for a in sp._actions if a.option_strings and a.dest not in ("help", "config_file")}
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key == "options" and "param" in actions:
            if not isinstance(value, dict):
                raise VotebenchError(f"{path}: 'options' must be a table of rule options")
            out["config_options"] = dict(value)
            continue
        dest = CONFIG_ALIASES.get(key, key.replace("-", "_"))
        act = actions.get(dest)
        if act is None:
            names = {v: k for k, v in CONFIG_ALIASES.items()}
            known = sorted({names.get(d, d) for d in actions} | ({"options"} if "param" in actions else set()))
            raise VotebenchError(f"{path}: unknown config key {key!r}; known: {', '.join(known)}")
        if isinstance(act, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            if not isinstance(value, bool):
                raise VotebenchError(f"{path}: {key} must be true or false")
        elif isinstance(act, argparse._AppendAction):
            value = [str(v) for v in (value if isinstance(value, list) else [value])]
        elif isinstance(value, dict) and dest == "weights":
            pass  # {task: weight}, as a JSON weights file would give
        elif isinstance(value, (list, dict)):
            raise VotebenchError(f"{path}: {key} takes a single value")
        else:
            value = typed_config_value(act, key, value, path)
        if act.choices is not None and value not in act.choices:
            raise VotebenchError(f"{path}: {key} = {value!r}; choose one of {', '.join(map(str, act.choices))}")
        out[dest] = value
    return out


def typed_config_value(act: argparse.Action, key: str, value: Any, path: str) -> Any:
    """A ``--config`` value converted as its flag's type, without silent changes (2.7 is not the integer 2, true not 1)."""
    kind: Callable[[Any], Any] = act.type if callable(act.type) else str
    bad = VotebenchError(f"{path}: {key} = {value!r} is not a valid value"
                         + (" (an integer)" if kind is int else " (a number)" if kind is float else " (a string)"))
    if isinstance(value, bool):
        raise bad
    if kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise bad from None
        raise bad  # 2.7 is not 2; a date, a table ... are no integers
    if kind is float:
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise bad from None
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise bad
        return float(value)
    if kind is str and not isinstance(value, str):
        raise bad
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise bad from None
