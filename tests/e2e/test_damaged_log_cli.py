"""Every command that reads a damaged log says where it is damaged and what to do, in one
line, and exits non-zero: no hang, no traceback. `graphmem check` reports it in full."""

from __future__ import annotations

import json
from pathlib import Path

import mcp.types as types
import pytest

from tests.damage import (
    KINDS,
    Kind,
    append_damaged,
    damage_checkpoint,
    damage_event,
    write_people,
)
from tests.e2e.cli_support import fault_line, graphmem
from tests.e2e.support import call, legacy_session

pytestmark = pytest.mark.slow

EVENTS = 40  # 20 people, two events each
NO_CHECKPOINTS = {"GRAPHMEM_CHECKPOINT_EVERY": "0"}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert write_people(data, EVENTS // 2) == EVENTS
    return data


def _names_the_damage(line: str, position: int) -> None:
    assert f"damaged at position {position}" in line, line
    assert "graphmem check" in line and "backup" in line, line
    if position > 1:
        assert f"graphmem export --as-of {position - 1}" in line, line


# One command per kind of damage, so that every kind meets a reader.
COMMANDS: list[tuple[tuple[str, ...], Kind]] = [
    (("export",), "junk"),
    (("export", "--as-of", "35"), "truncated"),
    (("rebuild",), "wrong_shape"),
    (("log",), "wrong_type"),
    (("history", "person3"), "empty"),
    (("stats",), "junk"),
    (("diff", "0", "30"), "truncated"),
]


@pytest.mark.parametrize(("args", "kind"), COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_a_command_reading_a_damaged_log_says_where_in_one_line(
    data_dir: Path, args: tuple[str, ...], kind: Kind
) -> None:
    damage_event(data_dir, 17, kind)

    done = graphmem(data_dir, *args, env=NO_CHECKPOINTS)

    _names_the_damage(fault_line(done), 17)


# Each kind once, at the start, the middle or the end of the log (bounded: a process each).
REFOLD_CASES = list(zip(KINDS, [1, 21, EVENTS, 1, EVENTS, 21], strict=True))


@pytest.mark.parametrize(("kind", "position"), REFOLD_CASES)
def test_a_refold_of_a_damaged_log_refuses_at_once_whatever_the_damage(
    data_dir: Path, kind: Kind, position: int
) -> None:
    damage_event(data_dir, position, kind)

    done = graphmem(data_dir, "export", env=NO_CHECKPOINTS)

    _names_the_damage(fault_line(done), position)
    assert done.stdout == ""


def test_serve_refuses_to_start_on_a_damaged_log(data_dir: Path) -> None:
    damage_event(data_dir, 9, "truncated")
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }

    done = graphmem(
        data_dir, "serve", stdin=(json.dumps(initialize) + "\n").encode(), env=NO_CHECKPOINTS
    )

    _names_the_damage(fault_line(done), 9)


def test_check_reports_each_damaged_event_and_what_to_do(data_dir: Path) -> None:
    damage_event(data_dir, 12, "junk")
    damage_event(data_dir, 30, "other_position")

    done = graphmem(data_dir, "check")

    line = fault_line(done)
    assert "2 event(s), the first at position 12" in line, line
    assert "graphmem export --as-of 11" in line and "backup" in line, line
    assert done.stdout.splitlines() == [
        "event at position 12: it does not decode (MessagePack data is malformed: invalid "
        "opcode '\\xc1' (byte 0))",
        "event at position 30: it holds the envelope of position 1030",
    ]


def test_check_of_a_sound_data_dir_prints_one_line_and_exits_0(data_dir: Path) -> None:
    done = graphmem(data_dir, "export")  # saves checkpoints when it stops
    assert done.returncode == 0, done.stderr

    done = graphmem(data_dir, "check")

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    (line,) = done.stdout.splitlines()
    assert f"is sound: {EVENTS} events (positions 1-{EVENTS}) from 1 node(s)" in line
    assert "checkpoints, all verified" in line


def test_check_reports_a_checkpoint_whose_checksum_fails(data_dir: Path) -> None:
    assert graphmem(data_dir, "export").returncode == 0  # checkpoints at the end
    damage_checkpoint(data_dir, "graph", EVENTS)

    done = graphmem(data_dir, "check")

    line = fault_line(done)
    assert "checkpoint(s)" in line and "graphmem rebuild" in line, line
    assert done.stdout.splitlines() == [
        f"checkpoint graph at position {EVENTS}: checksum mismatch: the record is corrupt"
    ]
    # The damaged checkpoint is skipped: the graph still loads.
    assert graphmem(data_dir, "export").returncode == 0


def test_check_of_a_dir_without_a_log_says_so(tmp_path: Path) -> None:
    line = fault_line(graphmem(tmp_path / "nothing", "check"))
    assert "no graphmem log" in line


@pytest.mark.anyio
async def test_a_server_that_meets_damage_answers_tool_calls_with_it(data_dir: Path) -> None:
    async with legacy_session(data_dir, errlog=None) as session:
        first = await call(session, "read_graph", {})
        assert not first.is_error
        # Another process appends a record that is damaged on disk (after the schema
        # events the server wrote at start).
        position = append_damaged(data_dir, "junk")

        for tool in ("read_graph", "create_entities"):
            arguments = (
                {"entities": [{"name": "Ann", "entityType": "person", "observations": []}]}
                if tool == "create_entities"
                else {}
            )
            result = await call(session, tool, arguments)
            assert result.is_error, result
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            _names_the_damage(text.text, position)
