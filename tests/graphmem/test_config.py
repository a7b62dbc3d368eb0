"""Settings come from the environment, with defaults, and bad values are refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventstore.log import Durability
from graphmem.config import Settings, SettingsError
from graphmem.tools.base import InputLimits


def test_defaults_need_no_environment() -> None:
    settings = Settings.from_env({})
    assert settings.durability is Durability.EVERYSEC
    assert settings.limits == InputLimits()
    assert settings.data_dir.name == "graphmem"
    assert settings.node_id is None


def test_every_setting_is_read_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "GRAPHMEM_DIR": str(tmp_path),
            "GRAPHMEM_DURABILITY": "STRICT",
            "GRAPHMEM_NODE_ID": "node-7",
            "GRAPHMEM_LOG_LEVEL": "debug",
            "GRAPHMEM_MAX_ITEMS": "50",
            "GRAPHMEM_MAX_NAME_CHARS": "64",
            "GRAPHMEM_MAX_OBSERVATION_CHARS": "1_000",
            "GRAPHMEM_MAX_QUERY_CHARS": "16",
        }
    )
    assert settings.data_dir == tmp_path
    assert settings.durability is Durability.STRICT
    assert settings.node_id == "node-7"
    assert settings.log_level == "DEBUG"
    assert settings.limits == InputLimits(50, 64, 1000, 16)


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("GRAPHMEM_DURABILITY", "sometimes", "use one of: strict, everysec"),
        ("GRAPHMEM_MAX_ITEMS", "0", "positive whole number"),
        ("GRAPHMEM_MAX_NAME_CHARS", "many", "positive whole number"),
    ],
)
def test_a_bad_value_says_which_setting_and_what_is_allowed(
    name: str, value: str, fragment: str
) -> None:
    with pytest.raises(SettingsError, match=name) as problem:
        Settings.from_env({name: value})
    assert fragment in str(problem.value)
