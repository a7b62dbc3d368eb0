"""Settings come from the environment, with defaults, and bad values are refused clearly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eventstore.log import Durability
from graphmem.config import Settings, SettingsError, shipped_schemas_dir
from graphmem.limits import InputLimits


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


def test_tool_profiles_schema_folders_sets_and_hooks_are_read(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "GRAPHMEM_TOOLS": "Mesh, memory",
            "GRAPHMEM_SCHEMAS_DIR": str(tmp_path),
            "GRAPHMEM_SCHEMA_SETS": "rpg",
            "GRAPHMEM_WATCH_SCHEMAS": "off",
            "GRAPHMEM_HOOKS": "a.b:c, d:e",
        }
    )
    assert settings.tools == ("mesh", "memory")
    assert settings.schema_dirs == (tmp_path,)
    assert settings.schema_folders[1].name == "rpg"
    assert settings.schema_folders[-1] == tmp_path
    assert settings.watch_schemas is False
    assert settings.hooks == ("a.b:c", "d:e")


def test_the_default_schema_set_is_served_unless_turned_off(tmp_path: Path) -> None:
    shipped = shipped_schemas_dir()
    on = Settings.from_env({"GRAPHMEM_SCHEMAS_DIR": str(tmp_path)})
    off = Settings.from_env(
        {
            "GRAPHMEM_SCHEMAS_DIR": str(tmp_path),
            "GRAPHMEM_SCHEMA_SETS": "rpg",
            "GRAPHMEM_DEFAULT_SCHEMAS": "false",
        }
    )

    assert on.schema_folders == (shipped, tmp_path) and on.retired_schema_folders == ()
    assert off.schema_folders == (shipped / "rpg", tmp_path)
    assert off.retired_schema_folders == (shipped,)
    with pytest.raises(SettingsError, match="GRAPHMEM_DEFAULT_SCHEMAS"):
        Settings.from_env({"GRAPHMEM_DEFAULT_SCHEMAS": "sometimes"})


def test_the_default_profile_is_memory_and_schema() -> None:
    assert Settings.from_env({}).tools == ("memory", "schema")


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("GRAPHMEM_TOOLS", "memory,graphs", "memory, schema, mesh"),
        ("GRAPHMEM_SCHEMA_SETS", "dnd", "the sets are: rpg, rpg-seed"),
        ("GRAPHMEM_WATCH_SCHEMAS", "maybe", "1/true/yes/on"),
        ("GRAPHMEM_FAST_CALLS", "maybe", "1/true/yes/on"),
        ("GRAPHMEM_EARLY_HANDSHAKE", "maybe", "1/true/yes/on"),
        ("GRAPHMEM_LAZY_SDK", "maybe", "1/true/yes/on"),
    ],
)
def test_bad_profile_set_or_flag_values_are_refused(name: str, value: str, fragment: str) -> None:
    with pytest.raises(SettingsError, match=name) as problem:
        Settings.from_env({name: value})
    assert fragment in str(problem.value)


@pytest.mark.parametrize(
    ("raw", "enabled"), [("", True), ("1", True), ("0", False), ("off", False), ("No", False)]
)
def test_graphmem_fast_calls_turns_the_fast_path_off(raw: str, enabled: bool) -> None:
    assert Settings.from_env({"GRAPHMEM_FAST_CALLS": raw}).fast_calls is enabled


@pytest.mark.parametrize(("raw", "lazy"), [("", True), ("1", True), ("0", False), ("off", False)])
def test_graphmem_lazy_sdk_loads_the_sdk_at_start_when_off(raw: str, lazy: bool) -> None:
    assert Settings.from_env({"GRAPHMEM_LAZY_SDK": raw}).lazy_sdk is lazy


def test_reading_the_configuration_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys; import graphmem.config; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_http_service_settings_are_read_and_the_token_is_kept_out_of_repr(
    tmp_path: Path,
) -> None:
    settings = Settings.from_env(
        {
            "GRAPHMEM_HTTP_TOKEN": "a-secret-of-some-length",
            "GRAPHMEM_HTTP_TOKEN_FILE": str(tmp_path / "tokens"),
            "GRAPHMEM_HTTP_ALLOWED_HOSTS": "memory.example, 10.0.0.5:8765",
            "GRAPHMEM_HTTP_ALLOWED_ORIGINS": "https://app.example",
            "GRAPHMEM_HTTP_SESSION_IDLE_SECONDS": "90",
            "GRAPHMEM_HTTP_MAX_SESSIONS": "50",
            "GRAPHMEM_HTTP_MAX_SESSIONS_PER_CLIENT": "5",
            "GRAPHMEM_HTTP_HEADER_TIMEOUT_SECONDS": "2.5",
            "GRAPHMEM_HTTP_JSON_RESPONSE": "yes",
        }
    )
    http = settings.http
    assert http.json_response and not Settings.from_env({}).http.json_response
    assert http.token == "a-secret-of-some-length"
    assert http.token_file == tmp_path / "tokens"
    assert http.allowed_hosts == ("memory.example", "10.0.0.5:8765")
    assert http.allowed_origins == ("https://app.example",)
    assert (http.session_idle_seconds, http.header_timeout_seconds) == (90.0, 2.5)
    assert (http.max_sessions, http.max_sessions_per_client) == (50, 5)
    assert "a-secret-of-some-length" not in repr(settings)


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
def test_http_timeouts_must_be_a_positive_number_of_seconds(value: str) -> None:
    with pytest.raises(SettingsError, match="GRAPHMEM_HTTP_SESSION_IDLE_SECONDS"):
        Settings.from_env({"GRAPHMEM_HTTP_SESSION_IDLE_SECONDS": value})


def test_a_json_response_setting_that_is_not_a_flag_says_what_it_accepts() -> None:
    with pytest.raises(SettingsError, match=r"GRAPHMEM_HTTP_JSON_RESPONSE='sse'.*1/true"):
        Settings.from_env({"GRAPHMEM_HTTP_JSON_RESPONSE": "sse"})


def test_the_graph_family_settings_default_to_a_home_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env({"GRAPHMEM_DIR": str(tmp_path)})

    assert settings.graph_home == tmp_path / "graph-memory"
    assert settings.graph.transcripts_dir == Path.home() / ".claude" / "projects"
    assert settings.graph.embedder == "hash"
    assert settings.graph.clock_offset_days == 0.0
    assert settings.graph.wall_clock().offset_ms == 0


def test_the_graph_home_follows_a_data_dir_given_on_the_command_line(tmp_path: Path) -> None:
    settings = Settings.from_env({}).with_data_dir(tmp_path / "elsewhere")
    assert settings.graph_home == tmp_path / "elsewhere" / "graph-memory"


def test_every_graph_family_setting_is_read_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "GRAPHMEM_DIR": str(tmp_path / "data"),
            "GRAPHMEM_GRAPH_HOME": str(tmp_path / "home"),
            "GRAPHMEM_TRANSCRIPTS_DIR": str(tmp_path / "transcripts"),
            "GRAPHMEM_EMBEDDER": "Semantic",
            "GRAPHMEM_CLOCK_OFFSET_DAYS": "2.5",
        }
    )

    assert settings.graph_home == tmp_path / "home"
    assert settings.graph.transcripts_dir == tmp_path / "transcripts"
    assert settings.graph.embedder == "semantic"
    assert settings.graph.clock_offset_days == 2.5
    assert settings.graph.wall_clock().offset_ms == 2.5 * 24 * 3600 * 1000
    assert settings.hybrid_clock().now_ms() > 0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GRAPHMEM_EMBEDDER", "word2vec"),
        ("GRAPHMEM_CLOCK_OFFSET_DAYS", "soon"),
        ("GRAPHMEM_CLOCK_OFFSET_DAYS", "-1"),
        ("GRAPHMEM_CLOCK_OFFSET_DAYS", "nan"),
        ("GRAPHMEM_CLOCK_OFFSET_DAYS", "inf"),
        ("GRAPHMEM_CLOCK_OFFSET_DAYS", "36501"),
    ],
)
def test_a_bad_graph_family_setting_is_refused_naming_it(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: value})
