"""Settings: read once from the environment (and command-line overrides) at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

from eventstore.log import Durability
from graphmem.tools.base import InputLimits


class SettingsError(ValueError):
    """A setting has a value graphmem cannot use; the message says which and what is allowed."""


@dataclass(frozen=True)
class Settings:
    """Everything configurable, with the defaults a fresh install runs on."""

    data_dir: Path
    node_id: str | None = None
    durability: Durability = Durability.EVERYSEC
    log_level: str = "INFO"
    limits: InputLimits = field(default_factory=InputLimits)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        data_dir = env.get("GRAPHMEM_DIR") or platformdirs.user_data_dir("graphmem")
        durability_name = env.get("GRAPHMEM_DURABILITY") or Durability.EVERYSEC.value
        try:
            durability = Durability(durability_name.lower())
        except ValueError:
            allowed = ", ".join(d.value for d in Durability)
            raise SettingsError(
                f"GRAPHMEM_DURABILITY={durability_name!r} is not a durability mode; "
                f"use one of: {allowed}"
            ) from None
        defaults = InputLimits()
        limits = InputLimits(
            max_items=_positive(env, "GRAPHMEM_MAX_ITEMS", defaults.max_items),
            max_name_chars=_positive(env, "GRAPHMEM_MAX_NAME_CHARS", defaults.max_name_chars),
            max_content_chars=_positive(
                env, "GRAPHMEM_MAX_OBSERVATION_CHARS", defaults.max_content_chars
            ),
            max_query_chars=_positive(env, "GRAPHMEM_MAX_QUERY_CHARS", defaults.max_query_chars),
        )
        return cls(
            limits=limits,
            data_dir=Path(data_dir).expanduser(),
            node_id=env.get("GRAPHMEM_NODE_ID") or None,
            durability=durability,
            log_level=(env.get("GRAPHMEM_LOG_LEVEL") or "INFO").upper(),
        )

    def with_data_dir(self, data_dir: str | Path) -> Settings:
        return replace(self, data_dir=Path(data_dir).expanduser())


def _positive(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise SettingsError(f"{name}={raw!r} must be a positive whole number (default {default})")
    return value
