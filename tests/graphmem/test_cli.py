"""The command line's one convention: every command registered with a `run` function, one
error type printed as one line, one "position or time" parser, one count parser, and plain
log lines for a person at a terminal."""

from __future__ import annotations

import argparse
import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import structlog

from actors.time_travel import AsOfError, parse_as_of
from eventstore.events import EntityCreated
from eventstore.hlc import HybridLogicalClock
from eventstore.log import DamagedLogError, StorageError, StorageKind
from eventstore.memory_log import InMemoryEventLog
from graphmem.cli import CliError, build_parser, main, run_command, serve
from graphmem.cli.arguments import Point, parse_point, positive, resolve_point
from graphmem.config import Settings
from graphmem.faults import explain
from graphmem.logs import configure_logging

# Each command with the fewest arguments it takes.
COMMANDS = {
    "serve": [],
    "import": ["memory.jsonl"],
    "export": [],
    "log": [],
    "history": ["Alice"],
    "stats": [],
    "diff": ["0", "1"],
    "rebuild": [],
    "check": [],
    "replication": ["status"],
    "hub": [],
    "compact": [],
    "backup": ["DEST"],
    "restore": ["SRC"],
    "doctor": [],
}


# --- dispatch ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_registered_with_its_run_function(command: str) -> None:
    args = build_parser().parse_args([command, *COMMANDS[command]])

    assert args.command == command
    assert callable(args.run)


def test_the_commands_registered_are_exactly_the_known_ones() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]

    assert sorted(commands.choices) == sorted(COMMANDS)


def test_a_bare_graphmem_serves_on_stdio() -> None:
    args = build_parser().parse_args([])

    assert (args.command, args.run) == ("serve", serve.serve)


def ran(run: object, command: str = "stats") -> argparse.Namespace:
    return argparse.Namespace(command=command, run=run)


def test_a_cli_error_is_one_line_naming_the_command_with_its_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(args: argparse.Namespace, settings: Settings) -> int:
        raise CliError("cannot do that; do this instead", code=2)

    assert run_command(ran(refuse, "diff"), Settings(data_dir=tmp_path)) == 2

    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "graphmem diff: cannot do that; do this instead\n")


@pytest.mark.parametrize(
    "fault",
    [
        DamagedLogError(7, "not an envelope", "/data"),
        StorageError(StorageKind.READ_ONLY, "/data", "Permission denied"),
        StorageError(StorageKind.DISK_FULL, "/data", "No space left on device"),
    ],
    ids=["damaged", "read-only", "disk-full"],
)
def test_a_fault_of_the_log_or_the_disk_is_worded_as_one_line_with_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: DamagedLogError | StorageError
) -> None:
    def fail(args: argparse.Namespace, settings: Settings) -> int:
        raise fault

    assert run_command(ran(fail, "export"), Settings(data_dir=tmp_path)) == 1

    assert capsys.readouterr().err == f"graphmem export: {explain(fault)}\n"


def test_a_command_returns_its_own_exit_code(tmp_path: Path) -> None:
    assert run_command(ran(lambda args, settings: 3), Settings(data_dir=tmp_path)) == 3


def test_a_bad_setting_stops_every_command_with_exit_code_2_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GRAPHMEM_DURABILITY", "sometimes")

    assert main(["stats"]) == 2

    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("graphmem: GRAPHMEM_DURABILITY='sometimes' is not a durability mode")


# --- position or time ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("0", 0),
        ("120", 120),
        (" 7 ", 7),
        ("2025-06-01", datetime(2025, 6, 1, tzinfo=UTC)),
        ("2025-06-01T12:30:00Z", datetime(2025, 6, 1, 12, 30, tzinfo=UTC)),
        ("2025-06-01T12:30:00", datetime(2025, 6, 1, 12, 30, tzinfo=UTC)),
        ("2025-06-01T12:30:00+02:00", datetime(2025, 6, 1, 10, 30, tzinfo=UTC)),
    ],
)
def test_a_point_is_a_log_position_or_a_utc_time(text: str, at: int | datetime) -> None:
    point = parse_point(text)

    assert point == Point(text, at)
    assert point.position == (at if isinstance(at, int) else None)


@pytest.mark.parametrize("text", ["yesterday", "-1", "1.5", "", "2025-13-01", "١٢"])
def test_what_is_neither_a_position_nor_a_time_is_refused_naming_both_forms(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse_point(text)

    message = str(refused.value)
    assert f"{text!r} is neither a log position" in message and "ISO-8601 time" in message


@pytest.mark.parametrize(
    "text", ["0", "42", "2025-06-01", "2025-06-01T12:30:00.250+05:30", "x", "-3", "١٢"]
)
def test_the_command_line_and_the_tools_read_a_point_alike(text: str) -> None:
    try:
        expected: int | datetime | None = parse_as_of(text)
    except AsOfError:
        expected = None
    try:
        got: int | datetime | None = parse_point(text).at
    except argparse.ArgumentTypeError:
        got = None

    assert got == expected


def test_a_point_resolves_to_a_position_in_the_log() -> None:
    # Event k is written at 2025-01-01T00:00:0k Z.
    clock_ms = [1_735_689_600_000]
    event_log = InMemoryEventLog(node_id="n1", clock=HybridLogicalClock(lambda: clock_ms[0]))
    for k in range(1, 4):
        clock_ms[0] = 1_735_689_600_000 + k * 1000
        event_log.append([EntityCreated(name=f"e{k}", entity_type="t")])

    assert resolve_point(event_log, parse_point("2")) == 2
    assert resolve_point(event_log, parse_point("2025-01-01T00:00:02.500Z")) == 2
    assert resolve_point(event_log, parse_point("2024-12-31")) == 0
    assert resolve_point(event_log, parse_point("2026-01-01")) == 3
    with pytest.raises(CliError, match=r"position 4 is past the log's end \(3\)"):
        resolve_point(event_log, parse_point("4"))


@pytest.mark.parametrize(("text", "count"), [("1", 1), ("1000", 1000)])
def test_a_count_is_a_positive_whole_number(text: str, count: int) -> None:
    assert positive(text) == count


@pytest.mark.parametrize("text", ["0", "-1", "x", "2.0", "³", ""])
def test_a_count_that_is_not_positive_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not a positive whole number"):
        positive(text)


# --- log lines for people ------------------------------------------------------------------------


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """configure_logging sets process-wide state: put it back after the test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    config = structlog.get_config()
    yield
    structlog.configure(**config)
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
def test_plain_log_lines_say_level_event_and_fields_and_leave_out_lower_levels() -> None:
    stream = io.StringIO()
    configure_logging("WARNING", stream, human=True)

    structlog.get_logger().info("graphmem_started", node_id="n1")
    structlog.get_logger().warning("checkpoint_unusable", checkpoint="graph", position=20)
    logging.getLogger("eventstore.checkpoints").warning("checkpoint_ignored: graph at 20")

    assert stream.getvalue().splitlines() == [
        "warning: checkpoint_unusable (checkpoint=graph, position=20)",
        "warning: checkpoint_ignored: graph at 20 (logger=eventstore.checkpoints)",
    ]


@pytest.mark.usefixtures("restored_logging")
def test_a_logged_exception_keeps_its_frames_but_not_what_their_locals_held() -> None:
    stream = io.StringIO()
    configure_logging("INFO", stream)

    def store(observation: str) -> None:
        raise ValueError("the write failed")

    try:
        store("my bank PIN is 4921")
    except ValueError:
        structlog.get_logger().exception("tool_failed")

    entry = json.loads(stream.getvalue())
    frames = entry["exception"][0]["frames"]
    assert entry["exception"][0]["exc_value"] == "the write failed"
    assert [frame["name"] for frame in frames][-1] == "store"
    assert "4921" not in stream.getvalue()
