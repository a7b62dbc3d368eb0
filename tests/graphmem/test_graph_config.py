"""<graph home>/config.json: read with the file's problems warned about, never a failed start."""

from __future__ import annotations

import json
from pathlib import Path

from structlog.testing import capture_logs

from actors.graph_tunables import Tunables
from graphmem.graph_config import MAX_CONFIG_BYTES, load_tunables


def _home_with(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "config.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return tmp_path


def test_a_missing_config_file_means_the_defaults_without_a_warning(tmp_path: Path) -> None:
    loaded = load_tunables(tmp_path / "not-created-yet")
    assert loaded.tunables == Tunables()
    assert loaded.warnings == ()


def test_the_file_is_deep_merged_over_the_defaults(tmp_path: Path) -> None:
    home = _home_with(
        tmp_path, json.dumps({"weights": {"boost_on_confirm": 0.2}, "decay": {"stale_days": 60}})
    )
    loaded = load_tunables(home)
    assert loaded.tunables.weights.boost_on_confirm == 0.2
    assert loaded.tunables.weights.boost_on_mention == 0.05
    assert loaded.tunables.decay.stale_days == 60
    assert loaded.warnings == ()


def test_each_bad_key_is_logged_naming_the_file_and_the_key(tmp_path: Path) -> None:
    home = _home_with(
        tmp_path, json.dumps({"weights": {"boost_on_confirm": 3, "inferred": "low"}, "x": 1})
    )
    with capture_logs() as logs:
        loaded = load_tunables(home)

    assert loaded.tunables.weights.boost_on_confirm == 1.0
    assert loaded.tunables.weights.inferred == 0.3
    assert len(loaded.warnings) == 3
    assert all(w.startswith(f"{home / 'config.json'}: ") for w in loaded.warnings)
    assert [entry["warning"] for entry in logs] == list(loaded.warnings)
    assert {entry["log_level"] for entry in logs} == {"warning"}


def test_a_file_that_is_not_json_keeps_every_default_and_says_where_it_broke(
    tmp_path: Path,
) -> None:
    loaded = load_tunables(_home_with(tmp_path, '{"weights": {"inferred": 0.2,}}'))
    assert loaded.tunables == Tunables()
    (warning,) = loaded.warnings
    assert "is not valid JSON (line 1" in warning and "every tunable keeps its default" in warning


def test_nan_and_infinity_are_not_json(tmp_path: Path) -> None:
    loaded = load_tunables(_home_with(tmp_path, '{"weights": {"inferred": NaN}}'))
    assert loaded.tunables == Tunables()
    assert len(loaded.warnings) == 1


def test_a_file_that_is_not_utf8_or_too_deep_or_too_large_keeps_the_defaults(
    tmp_path: Path,
) -> None:
    for content in (b"\xff\xfe{}", "[" * 100 + "]" * 100, " " * (MAX_CONFIG_BYTES + 1)):
        loaded = load_tunables(_home_with(tmp_path, content))
        assert loaded.tunables == Tunables()
        assert len(loaded.warnings) == 1, loaded.warnings


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    loaded = load_tunables(_home_with(tmp_path, b'\xef\xbb\xbf{"query": {"default_limit": 7}}'))
    assert loaded.tunables.query.default_limit == 7
    assert loaded.warnings == ()


def test_a_config_path_that_cannot_be_read_keeps_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "config.json").mkdir()
    loaded = load_tunables(tmp_path)
    assert loaded.tunables == Tunables()
    (warning,) = loaded.warnings
    assert "cannot be read" in warning
