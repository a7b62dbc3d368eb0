"""A damaged log never leaves the graph writer's callers waiting: start-up refuses with the
damaged position, and damage met later is the answer to every request."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from actors.bridge import BlockingReply
from actors.checkpointer import Checkpointer
from actors.graph_writer import GraphWriterActor
from eventstore.events import EntityCreated
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import DamagedLogError
from eventstore.verify import verify_log
from graphmem.app import start_actors, stop_actors
from graphmem.config import Settings
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection
from tests.actors.writer_support import WAIT, Writer, people
from tests.damage import damage_event, damage_open_log, write_people


def _checkpoint_at_end(data_dir: Path) -> int:
    """Fold the log and save a graph checkpoint at its end; returns that position."""
    with LmdbEventLog.open(data_dir) as event_log:
        graph, schemas = GraphProjection(), SchemaProjection()
        envelopes = list(event_log.read_from(1))
        graph.apply_all(envelopes)
        schemas.apply_all(envelopes)
        Checkpointer(event_log, every=1).save([graph, schemas], [ConflictsProjection()])
        return graph.position


def test_start_up_refuses_at_once_when_the_log_it_folds_is_damaged(tmp_path: Path) -> None:
    write_people(tmp_path, 10)
    damage_event(tmp_path, 13, "truncated")
    with LmdbEventLog.open(tmp_path) as event_log, pytest.raises(DamagedLogError) as raised:
        start_actors(Settings(data_dir=tmp_path, checkpoint_every=0), event_log)
    assert raised.value.position == 13


def test_a_start_from_a_checkpoint_replays_the_tail_strictly(tmp_path: Path) -> None:
    write_people(tmp_path, 10)
    assert _checkpoint_at_end(tmp_path) == 20
    write_people(tmp_path, 5)  # 21..30, replayed after the checkpoint
    damage_event(tmp_path, 25, "wrong_shape")
    with LmdbEventLog.open(tmp_path) as event_log, pytest.raises(DamagedLogError) as raised:
        start_actors(Settings(data_dir=tmp_path), event_log)
    assert raised.value.position == 25


def test_damage_before_the_checkpoint_is_left_to_check_which_finds_it(tmp_path: Path) -> None:
    write_people(tmp_path, 10)
    _checkpoint_at_end(tmp_path)
    damage_event(tmp_path, 4, "junk")
    with LmdbEventLog.open(tmp_path) as event_log:
        app = start_actors(Settings(data_dir=tmp_path), event_log)
        try:
            assert app.graph.query_blocking(lambda g: g.entity_count()) == 10
        finally:
            stop_actors(app)
        assert verify_log(event_log).damaged_positions == [4]


def test_a_writer_that_meets_damage_answers_every_request_with_it(tmp_path: Path) -> None:
    write_people(tmp_path, 3)
    with LmdbEventLog.open(tmp_path) as event_log:
        writer = Writer(event_log, checkpoint_every=None)
        assert writer.ask(lambda g: g.entity_count()) == 3
        # Another writer of the log appends; then its record is damaged on disk.
        event_log.append([EntityCreated(name="late", entity_type="person")])
        damage_open_log(event_log, 7, "junk")
        with capture_logs() as logs:
            for _ in range(2):  # the first meets it, the second is refused: no restart loop
                with pytest.raises(DamagedLogError) as raised:
                    writer.ask(lambda g: g.entity_count())
                assert raised.value.position == 7
            with pytest.raises(DamagedLogError):
                writer.run(people("Ann"))
        assert writer.ref.is_alive()
        assert [e["position"] for e in logs if e["event"] == "log_damaged"] == [7]
        writer.stop()
        assert event_log.last_position() == 7  # nothing was appended


def test_the_writer_settles_its_ready_reply_with_the_damage(tmp_path: Path) -> None:
    write_people(tmp_path, 2)
    damage_event(tmp_path, 2, "empty")
    with LmdbEventLog.open(tmp_path) as event_log:
        ready: BlockingReply[None] = BlockingReply()
        ref = GraphWriterActor.start(event_log, checkpoint_every=None, ready=ready)
        with pytest.raises(DamagedLogError):
            ready.wait(WAIT)
        ref.stop(block=True, timeout=WAIT)
