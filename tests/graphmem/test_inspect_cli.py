"""`graphmem log`, `graphmem history NAME` and `graphmem stats` over a known LMDB log."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actors.commands import CreateEntities, EntityInput, EntityUpdate, UpdateEntities
from eventstore.events import (
    AnyEvent,
    Cause,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    RelationCreated,
    RelationDeleted,
    SchemaRegistered,
)
from eventstore.hlc import HybridLogicalClock
from eventstore.lmdb_log import LmdbEventLog
from graphmem.app import start_actors, stop_actors
from graphmem.cli import run_command
from graphmem.cli.log_commands import add_parsers as add_log_parsers
from graphmem.cli.stats import add_parsers as add_stats_parsers
from graphmem.config import Settings
from projections.entity_schema import canonical_json

# 2025-01-01T00:00:00Z; transaction k of the known log is written k seconds after it.
EPOCH_MS = 1_735_689_600_000
CLAUDE = "claude-code"


def at(second: int) -> str:
    return f"2025-01-01T00:00:{second:02d}.000Z"


class Clock:
    """A wall clock the test sets."""

    def __init__(self) -> None:
        self.ms = EPOCH_MS

    def __call__(self) -> int:
        return self.ms


PERSON_SCHEMA, PERSON_DIGEST = canonical_json(
    {"name": "add_person", "description": "A person", "properties": {}}
)

# (node, second, cause, events): the known log, one transaction per row.
KNOWN: list[tuple[str, int, Cause | None, list[AnyEvent]]] = [
    (
        "n1",
        1,
        Cause(tool="create_entities", client=CLAUDE),
        [
            EntityCreated(name="Alice", entity_type="person"),  # 1
            ObservationAdded(entity="Alice", content="likes tea"),  # 2
            EntityCreated(name="Bob", entity_type="person"),  # 3
        ],
    ),
    (
        "n1",
        2,
        Cause(tool="create_relations", client=CLAUDE),
        [RelationCreated(from_entity="Alice", to_entity="Bob", relation_type="knows")],  # 4
    ),
    (
        "n1",
        3,
        Cause(tool="add_observations", client="cursor"),
        [ObservationAdded(entity="Bob", content="plays chess")],  # 5
    ),
    (
        "n1",
        4,
        None,
        [SchemaRegistered(type_name="person", schema_json=PERSON_SCHEMA, digest=PERSON_DIGEST)],
    ),  # 6
    (
        "n1",
        5,
        Cause(tool="delete_entities", client=CLAUDE),
        [
            EntityDeleted(name="Alice"),  # 7
            RelationDeleted(from_entity="Alice", to_entity="Bob", relation_type="knows"),  # 8
        ],
    ),
    (
        "n1",
        6,
        Cause(tool="create_entities", client="cursor"),
        [EntityCreated(name="Carol", entity_type="person")],  # 9
    ),
    (
        "n2",
        7,
        Cause(tool="update_entities", client="laptop"),
        [EntityUpdated(name="Bob", entity_type="friend")],  # 10
    ),
]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data dir holding the known log: positions 1-10, written by nodes n1 and n2."""
    folder = tmp_path / "data"
    clocks = {"n1": Clock(), "n2": Clock()}
    logs = {
        node: LmdbEventLog.open(folder, node_id=node, clock=HybridLogicalClock(clocks[node]))
        for node in clocks
    }
    try:
        for node, second, cause, events in KNOWN:
            clocks[node].ms = EPOCH_MS + second * 1000
            logs[node].append(events, cause)
    finally:
        for log in logs.values():
            log.close()
    return folder


def cli(data_dir: Path, *argv: str) -> int:
    """The command as `graphmem --data-dir DIR ...` runs it (argparse included)."""
    parser = argparse.ArgumentParser(prog="graphmem")
    commands = parser.add_subparsers(dest="command")
    add_log_parsers(commands)
    add_stats_parsers(commands)
    return run_command(parser.parse_args(list(argv)), Settings(data_dir=data_dir))


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def records(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines(capsys)]


def positions(data_dir: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> list[int]:
    assert cli(data_dir, *argv, "--json") == 0
    return [r["position"] for r in records(capsys)]


# --- graphmem history ----------------------------------------------------------------------------


def test_history_lists_exactly_the_events_that_touched_an_entity_with_their_causes(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "history", "Alice", "--json") == 0

    found = records(capsys)
    assert [(r["position"], r["event"], r["cause"]["tool"]) for r in found] == [
        (1, "EntityCreated", "create_entities"),
        (2, "ObservationAdded", "create_entities"),
        (4, "RelationCreated", "create_relations"),
        (7, "EntityDeleted", "delete_entities"),
        (8, "RelationDeleted", "delete_entities"),
    ]
    assert found[1] == {
        "position": 2,
        "time": at(1),
        "hlc": found[1]["hlc"],
        "node": "n1",
        "seq": 2,
        "transaction": "n1:1",
        "cause": {"tool": "create_entities", "client": CLAUDE, "session": None},
        "event": "ObservationAdded",
        "fields": {"entityName": "Alice", "content": "likes tea"},
    }


def test_history_covers_events_from_every_node(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert positions(data_dir, capsys, "history", "Bob") == [3, 4, 5, 8, 10]


def test_history_can_leave_out_observations_and_relations(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert positions(data_dir, capsys, "history", "Alice", "--no-observations") == [1, 4, 7, 8]
    assert positions(data_dir, capsys, "history", "Alice", "--no-relations") == [1, 2, 7]


def test_history_with_a_limit_shows_the_last_events_with_their_causes(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "history", "Alice", "--limit", "2", "--json") == 0

    found = records(capsys)
    assert [(r["position"], r["cause"]["client"]) for r in found] == [(7, CLAUDE), (8, CLAUDE)]


def test_history_as_a_table_shows_time_node_transaction_cause_and_summary(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "history", "Alice") == 0

    header, *rows = lines(capsys)
    assert header.split() == ["POSITION", "TIME", "NODE", "TX", "CAUSE", "EVENT"]
    assert rows[1].split() == [
        "2",
        at(1),
        "n1",
        "1",
        f"create_entities/{CLAUDE}",
        "ObservationAdded",
        "Alice:",
        "'likes",
        "tea'",
    ]
    assert rows[2].split()[-4:] == ["Alice", "-[knows]->", "Bob", "weight=1"]
    assert len(rows) == 5


def test_history_of_a_name_no_event_touched_fails_with_a_message(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "history", "Nobody") == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no history for Nobody: no event ever touched it" in captured.err


def test_a_data_dir_without_a_log_is_reported_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing-here"

    assert cli(missing, "stats") == 1

    assert f"no graphmem log in {missing}" in capsys.readouterr().err
    assert not missing.exists()


# --- graphmem log --------------------------------------------------------------------------------


def test_log_without_filters_streams_every_event_in_log_order(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert positions(data_dir, capsys, "log") == list(range(1, 11))


def test_log_filters_by_entity_type_and_origin(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert positions(data_dir, capsys, "log", "--entity", "Bob") == [3, 4, 5, 8, 10]
    assert positions(data_dir, capsys, "log", "--type", "EntityCreated") == [1, 3, 9]
    assert positions(
        data_dir, capsys, "log", "--type", "EntityCreated", "--type", "EntityDeleted"
    ) == [1, 3, 7, 9]
    assert positions(data_dir, capsys, "log", "--type", "EntityCreated", "EntityDeleted") == [
        1,
        3,
        7,
        9,
    ]
    assert positions(data_dir, capsys, "log", "--origin", "n2") == [10]
    assert positions(data_dir, capsys, "log", "--entity", "Bob", "--origin", "n1") == [3, 4, 5, 8]


def test_log_filters_by_position_range(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert positions(data_dir, capsys, "log", "--since", "5", "--until", "8") == [5, 6, 7, 8]


def test_log_filters_by_time_range(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert positions(data_dir, capsys, "log", "--since", at(5)) == [7, 8, 9, 10]
    assert positions(data_dir, capsys, "log", "--until", "2025-01-01T00:00:02Z") == [1, 2, 3, 4]
    assert positions(
        data_dir, capsys, "log", "--since", "2025-01-01T01:00:03+01:00", "--until", at(3)
    ) == [5]


def test_log_filters_by_transaction(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert positions(data_dir, capsys, "log", "--tx", "n1:7") == [7, 8]
    assert positions(data_dir, capsys, "log", "--tx", "n2:1") == [10]
    assert positions(data_dir, capsys, "log", "--tx", "n1:2") == []  # not a transaction's start


def test_log_stops_after_the_limit(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert positions(data_dir, capsys, "log", "--type", "ObservationAdded", "--limit", "1") == [2]


def test_log_starting_inside_a_transaction_still_finds_its_cause(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "log", "--since", "8", "--until", "8", "--json") == 0

    (found,) = records(capsys)
    assert found["transaction"] == "n1:7"
    assert found["cause"]["tool"] == "delete_entities"


def test_log_shows_a_dash_for_a_transaction_without_a_cause(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "log", "--type", "SchemaRegistered") == 0

    _, row = lines(capsys)
    assert row.split()[4:] == ["-", "SchemaRegistered", "person"]


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--type", "Nope"], "'Nope' is not an event type"),
        (["--since", "yesterday"], "neither a log position"),
        (["--tx", "n1"], "write it ORIGIN:TX"),
        (["--limit", "0"], "not a positive whole number"),
    ],
)
def test_log_refuses_filters_it_cannot_use(
    data_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], complaint: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli(data_dir, "log", *argv)

    assert exited.value.code == 2
    assert complaint in capsys.readouterr().err


# --- graphmem stats ------------------------------------------------------------------------------


def test_stats_figures_match_the_known_log(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "stats", "--json") == 0

    (figures,) = records(capsys)
    assert figures["dataDirBytes"] > 0
    del figures["dataDirBytes"]
    replication = figures.pop("replication")  # off here: what the log holds, no server state
    assert (replication["enabled"], replication["server"]) == (False, None)
    assert [(o["origin"], o["received"]) for o in replication["origins"]] == [("n1", 9), ("n2", 1)]
    assert figures == {
        "dataDir": str(data_dir),
        "events": 10,
        "eventsByType": {
            "EntityCreated": 3,
            "ObservationAdded": 2,
            "EntityDeleted": 1,
            "EntityUpdated": 1,
            "RelationCreated": 1,
            "RelationDeleted": 1,
            "SchemaRegistered": 1,
        },
        "origins": {"n1": {"events": 9, "lastSeq": 9}, "n2": {"events": 1, "lastSeq": 1}},
        "transactions": 7,
        "firstPosition": 1,
        "lastPosition": 10,
        "firstTime": at(1),
        "lastTime": at(7),
        "entities": {"alive": 2, "deleted": 1},
        "relations": 0,
        "observations": 1,
        "schemas": ["person"],
        "checkpoints": [],
    }


def test_stats_as_text_names_each_figure(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "stats") == 0

    text = capsys.readouterr().out
    assert "events        10 in 7 transactions" in text
    assert "entities      2 alive, 1 deleted" in text
    assert "schemas       person" in text
    assert "checkpoints   -" in text


def test_stats_list_checkpoints_and_agree_with_the_graphs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "data"
    log = LmdbEventLog.open(folder, node_id="n1")
    try:
        app = start_actors(Settings(data_dir=folder), log)
        try:
            app.graph.execute_blocking(
                CreateEntities([EntityInput("A", "t", ["x"]), EntityInput("B", "t", [])]),
                Cause(tool="create_entities"),
            )
            app.graph.execute_blocking(
                UpdateEntities([EntityUpdate("A", "C", None)]), Cause(tool="update_entities")
            )
        finally:
            stop_actors(app)  # saves the final checkpoints
    finally:
        log.close()
    capsys.readouterr()  # the actors' log lines (structlog prints until configured)

    assert cli(folder, "stats", "--json") == 0

    (figures,) = records(capsys)
    assert figures["entities"] == {"alive": 2, "deleted": 1}
    assert figures["observations"] == 1
    assert "graph" in {c["name"] for c in figures["checkpoints"]}
    assert all(c["problem"] is None for c in figures["checkpoints"])


# --- the real command ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
def test_python_m_graphmem_history_prints_an_entitys_history(data_dir: Path) -> None:
    env = {**os.environ, "GRAPHMEM_DIR": str(data_dir), "GRAPHMEM_LOG_LEVEL": "WARNING"}
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "history", "Carol", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    (found,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert (found["position"], found["event"], found["cause"]["client"]) == (
        9,
        "EntityCreated",
        "cursor",
    )
