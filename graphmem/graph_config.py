"""Reading `<graph home>/config.json`: the graph family's tunables, deep-merged over the defaults.

The server must start whatever the file holds: a missing file means the defaults; a file that
cannot be read or is not JSON leaves every default in force; a bad key leaves only its own.
Each problem is a warning naming the file and the key (actors.graph_tunables decides them),
logged and handed back so a tool can show it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from actors.graph_tunables import Tunables, merge_tunables
from projections.bounded_json import JsonShapeError, decode

__all__ = ["CONFIG_FILE", "MAX_CONFIG_BYTES", "LoadedTunables", "load_tunables"]

log = structlog.get_logger(__name__)

CONFIG_FILE = "config.json"
# The whole file is a few dozen numbers; anything far larger is not a config file.
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class LoadedTunables:
    """The tunables in force and what was wrong with the file (empty when nothing was)."""

    tunables: Tunables = field(default_factory=Tunables)
    warnings: tuple[str, ...] = ()


def load_tunables(graph_home: Path) -> LoadedTunables:
    """The tunables of `<graph_home>/config.json` over the defaults; logs each warning."""
    path = graph_home / CONFIG_FILE
    document, problem = _read(path)
    if problem is not None:
        warnings = [f"{path}: {problem}; every tunable keeps its default"]
        tunables = Tunables()
    else:
        tunables, found = merge_tunables(document)
        warnings = [f"{path}: {warning}" for warning in found]
    for warning in warnings:
        log.warning("graph_config_warning", warning=warning)
    return LoadedTunables(tunables, tuple(warnings))


_MISSING = object()


def _read(path: Path) -> tuple[object, str | None]:
    """The decoded document and None, or why there is none to use (no file reads as `{}`)."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return {}, None
    except OSError as error:
        return _MISSING, f"cannot be read ({error.strerror or error})"
    if len(raw) > MAX_CONFIG_BYTES:
        return _MISSING, f"is larger than {MAX_CONFIG_BYTES:,} bytes"
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return _MISSING, f"is not UTF-8 text (byte {error.start})"
    try:
        return decode(text, constants=False), None
    except json.JSONDecodeError as error:
        return (
            _MISSING,
            f"is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg})",
        )
    except JsonShapeError as error:
        return _MISSING, f"is not usable JSON ({error})"
