"""`graphmem diff A B`, `graphmem export --as-of X` and `graphmem rebuild` over a known log."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.bridge import BlockingReply
from actors.commands import CreateEntities, EntityInput
from actors.graph_writer import Execute, GraphWriterActor
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationUpdated,
)
from eventstore.hlc import HybridLogicalClock
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint
from graphmem.cli import run_command
from graphmem.cli.arguments import parse_point
from graphmem.cli.replay import MISMATCH_EXIT, add_parsers, export_as_of
from graphmem.config import Settings
from graphmem.migration import export_jsonl
from projections.graph import GraphProjection
from projections.graph_diff import apply_diff, decode_changes

# 2025-01-01T00:00:00Z; transaction k of the known log is written k seconds after it.
EPOCH_MS = 1_735_689_600_000

# (second, events): the known log, one transaction per row; positions in the comments.
KNOWN: list[tuple[int, list[AnyEvent]]] = [
    (
        1,
        [
            EntityCreated(name="Alice", entity_type="person"),  # 1
            ObservationAdded(entity="Alice", content="likes tea"),  # 2
            ObservationAdded(entity="Alice", content="likes tea"),  # 3
            EntityCreated(name="Bob", entity_type="person"),  # 4
        ],
    ),
    (2, [RelationCreated(from_entity="Alice", to_entity="Bob", relation_type="knows")]),  # 5
    (3, [ObservationAdded(entity="Bob", content="plays chess")]),  # 6
    (
        4,
        [
            RelationUpdated(
                from_entity="Alice", to_entity="Bob", relation_type="knows", weight=0.5
            ),  # 7
            ObservationDeleted(entity="Alice", content="likes tea"),  # 8
            EntityUpdated(name="Bob", entity_type="friend"),  # 9
        ],
    ),
    (5, [EntityDeleted(name="Alice"), EntityCreated(name="Carol", entity_type="person")]),
]  # 10, 11


class Clock:
    def __init__(self) -> None:
        self.ms = EPOCH_MS

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    clock = Clock()
    with LmdbEventLog.open(folder, node_id="n1", clock=HybridLogicalClock(clock)) as event_log:
        for second, events in KNOWN:
            clock.ms = EPOCH_MS + second * 1000
            event_log.append(events)
    return folder


def cli(data_dir: Path, *argv: str) -> int:
    """The command as `graphmem --data-dir DIR ...` runs it (argparse included)."""
    parser = argparse.ArgumentParser(prog="graphmem")
    add_parsers(parser.add_subparsers(dest="command"))
    return run_command(parser.parse_args(list(argv)), Settings(data_dir=data_dir))


def graph_upto(data_dir: Path, position: int) -> GraphProjection:
    with LmdbEventLog.open(data_dir) as event_log:
        graph = GraphProjection()
        graph.apply_all(e for e in event_log.read_from(1) if e.position <= position)
    return graph


# --- diff ----------------------------------------------------------------------------------------


def test_diff_as_a_table_says_what_changed_between_two_positions(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "diff", "6", "11") == 0

    assert capsys.readouterr().out.splitlines() == [
        "the graph from position 6 (2025-01-01T00:00:03.000Z) to position 11 "
        "(2025-01-01T00:00:05.000Z): 4 changes",
        "- entity    Alice [person]",
        "~ entity    Bob: type person -> friend",
        "+ entity    Carol [person] (0 observations)",
        "- relation  Alice -[knows]-> Bob",
    ]


def test_diff_as_json_lines_applied_to_the_first_graph_gives_the_second(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for a, b in ((0, 11), (5, 9), (9, 5), (11, 0), (3, 8)):
        assert cli(data_dir, "diff", str(a), str(b), "--json") == 0
        changes = decode_changes(capsys.readouterr().out.splitlines())

        first, second = graph_upto(data_dir, a), graph_upto(data_dir, b)
        assert apply_diff(changes, first.snapshot()) == second.snapshot()


def test_diff_reports_observations_each_occurrence_and_relation_attributes(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "diff", "6", "9", "--json") == 0

    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == [
        {"op": "remove_observation", "entity": "Alice", "at": 0, "content": "likes tea"},
        {"op": "remove_observation", "entity": "Alice", "at": 1, "content": "likes tea"},
        {"op": "retype_entity", "name": "Bob", "before": "person", "after": "friend"},
        {
            "op": "change_relation",
            "from": "Alice",
            "to": "Bob",
            "relationType": "knows",
            "attribute": "weight",
            "before": 1.0,
            "after": 0.5,
        },
    ]


def test_diff_takes_times_and_dates(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(data_dir, "diff", "2025-01-01", "2025-01-01T00:00:02.500Z", "--json") == 0
    by_time = capsys.readouterr().out
    assert cli(data_dir, "diff", "0", "5", "--json") == 0

    assert by_time == capsys.readouterr().out
    assert by_time.count('"op":"add_entity"') == 2


def test_diff_of_equal_points_has_no_changes(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "diff", "4", "2025-01-01T00:00:01.999") == 0

    assert capsys.readouterr().out.endswith(": 0 changes\n")


def test_a_point_past_the_end_or_not_a_point_is_refused(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "diff", "0", "12") == 1
    assert "position 12 is past the log's end (11)" in capsys.readouterr().err
    with pytest.raises(argparse.ArgumentTypeError, match="ISO-8601"):
        parse_point("yesterday")


def test_a_data_dir_without_a_log_is_reported_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(tmp_path / "none", "rebuild") == 1

    assert "no graphmem log in" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


# --- export --as-of ------------------------------------------------------------------------------


def test_export_as_of_a_point_is_the_official_jsonl_of_the_graph_then(data_dir: Path) -> None:
    settings = Settings(data_dir=data_dir)

    for position in range(12):
        expected = export_jsonl(graph_upto(data_dir, position))
        assert export_as_of(settings, parse_point(str(position))) == expected
    assert export_as_of(settings, parse_point("2025-01-01T00:00:03Z")) == export_jsonl(
        graph_upto(data_dir, 6)
    )
    assert export_as_of(settings, parse_point("2024-12-31")) == b""


@pytest.mark.slow
@pytest.mark.e2e
def test_python_m_graphmem_export_as_of_writes_the_file(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "then.jsonl"
    env = {**os.environ, "GRAPHMEM_DIR": str(data_dir), "GRAPHMEM_LOG_LEVEL": "WARNING"}
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "export", "--as-of", "6", "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == export_jsonl(graph_upto(data_dir, 6))


# --- rebuild -------------------------------------------------------------------------------------


def test_rebuild_folds_the_log_saves_checkpoints_and_prints_the_rate(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(data_dir, "rebuild") == 0

    out = capsys.readouterr()
    assert out.out.startswith("rebuilt graph, schemas, conflicts from 11 events in ")
    assert "events/s" in out.out
    assert "no earlier checkpoint of this version to check against" in out.out
    assert "saved fresh checkpoints at position 11" in out.out
    assert "rebuilding" in out.err  # the progress bar
    with LmdbEventLog.open(data_dir) as event_log:
        assert {(e.name, e.position) for e in event_log.checkpoints.entries()} == {
            ("graph", 11),
            ("schemas", 11),
            ("conflicts", 11),
        }

    assert cli(data_dir, "rebuild", "--projection", "graph") == 0
    assert "checked against the newest checkpoints: graph at 11: agree" in (capsys.readouterr().out)


def test_rebuild_reports_a_checkpoint_that_disagrees_with_the_log_as_a_bug(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = graph_upto(data_dir, 5)
    wrong.position = 6
    with LmdbEventLog.open(data_dir) as event_log:
        event_log.checkpoints.save(Checkpoint("graph", wrong.version, 6, wrong.to_snapshot()))

    assert cli(data_dir, "rebuild", "--projection", "graph") == MISMATCH_EXIT

    out = capsys.readouterr()
    assert "graph at 6: DISAGREE" in out.out
    assert "BUG: the graph checkpoint at position 6 disagrees with the log" in out.err
    assert "plays chess" in out.err


def test_rebuild_runs_beside_a_live_writer(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with LmdbEventLog.open(data_dir) as event_log:
        writer = GraphWriterActor.start(event_log)
        try:
            assert cli(data_dir, "rebuild") == 0
            reply: BlockingReply[object] = BlockingReply()
            writer.tell(Execute(CreateEntities([EntityInput("Dee", "person", [])]), None, reply))
            reply.wait(10)
        finally:
            writer.stop(block=True, timeout=10)
        graph_checkpoints = [e.position for e in event_log.checkpoints.entries("graph")]

    assert "saved fresh checkpoints at position 11" in capsys.readouterr().out
    assert graph_checkpoints == [11, 12]  # the rebuild's, then the writer's on stop
