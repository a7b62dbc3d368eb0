"""The writer serving from the early reads' graph instead of restoring a second one
(graphmem.early_reads.EarlyReads.lend_graph, actors.graph_handover)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from actors.search_handover import SearchHandover
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from graphmem.config import Settings
from graphmem.early_reads import EarlyReads
from projections.graph import GraphProjection
from tests.actors.writer_support import Writer, events_of, folded, people, write_some
from tests.damage import damage_checkpoint

_SEARCH = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "search_nodes", "arguments": {"query": "tea"}},
        }
    ).encode()
    + b"\n"
)


def _stored(event_log: EventLog, *names: str) -> None:
    """`names` written by a writer that stops, saving its final checkpoint at the log's end."""
    writer = Writer(event_log)
    write_some(writer, *names)
    writer.stop()


def _restored_early(data_dir: Path) -> EarlyReads:
    """Early reads on `data_dir` with the graph restored (on this thread, as their restorer
    thread does it), answering nothing yet."""
    settings = Settings.from_env().with_data_dir(str(data_dir))
    early = EarlyReads(settings, "2025-06-18", None, bytearray(), data_dir / "kept.json")
    early._restore_models()
    assert early.has_search_index and early.problem is None
    return early


def _graph_loads(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    loaded = events_of(logs, "checkpoint_loaded")
    return [entry for entry in loaded if entry["checkpoint"] == GraphProjection.name]


def _early_graph(early: EarlyReads) -> GraphProjection:
    assert early._models is not None
    return early._models.graph


def test_the_writer_serves_the_early_reads_graph_itself_when_it_is_at_the_logs_end(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        _stored(event_log, "Alice", "Bob", "Carol")
        early = _restored_early(tmp_path)
        graph = _early_graph(early)
        expected = folded(event_log)
        with capture_logs() as logs:
            writer = Writer(event_log, search_handover=SearchHandover(lend_graph=early.lend_graph))
            try:
                assert writer.ask(lambda g: g is graph)  # one graph, not a second restored
                assert writer.ask(lambda g: g.snapshot()) == expected
                writer.run(people("Dora"))  # folded on, into the same graph
                assert writer.ask(lambda g: g is graph and "Dora" in g.entity_names())
            finally:
                writer.stop()
        assert _graph_loads(logs) == []  # the schemas' checkpoint is still loaded, small
        [adopted] = events_of(logs, "checkpoint_adopted")
        assert adopted["checkpoint"] == GraphProjection.name
        # The writer's last-saved mark is the checkpoint, so the events after it get saved:
        # a new writer restores Dora from the checkpoint its predecessor saved at its stop.
        assert _a_new_writer_restores(event_log, "Dora")


def _a_new_writer_restores(event_log: EventLog, name: str) -> bool:
    """Whether a writer started now finds `name`, restored from a checkpoint at the end."""
    with capture_logs() as logs:
        writer = Writer(event_log)
        try:
            found = writer.ask(lambda g: name in g.entity_names())
        finally:
            writer.stop()
    [loaded] = _graph_loads(logs)
    return found and loaded["position"] == event_log.last_position()


def test_once_lent_the_early_reads_leave_a_read_to_the_server_and_lend_no_more(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        _stored(event_log, "Alice", "Bob", "Carol")
        end = event_log.last_position()
    early = _restored_early(tmp_path)
    lent = early.lend_graph(end)
    assert lent is not None and lent.graph is _early_graph(early)
    assert lent.checkpoint == end
    early.pending += _SEARCH
    early._answer_pending()  # would write the answer to fd 1 if it still read the graph
    assert early.pending == _SEARCH and early.answered == []  # held, for the server
    assert early.lend_graph(end) is None  # a restarted writer restores its own


def test_a_log_that_moved_on_after_the_early_restore_gets_the_writer_its_own_graph(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        _stored(event_log, "Alice", "Bob", "Carol")
        early = _restored_early(tmp_path)
        graph = _early_graph(early)
        # Another process appends meanwhile (no checkpoint saved: only the log moved on).
        other = Writer(event_log, checkpoint_every=None)
        other.run(people("Dora"))
        other.stop()
        with capture_logs() as logs:
            writer = Writer(event_log, search_handover=SearchHandover(lend_graph=early.lend_graph))
            try:
                assert writer.ask(lambda g: g is not graph and "Dora" in g.entity_names())
            finally:
                writer.stop()
        assert events_of(logs, "checkpoint_adopted") == []
        assert len(_graph_loads(logs)) == 1
        # Not lent: the early reads still answer from their own graph, as of their restore.
        assert "Dora" not in graph.entity_names()
        assert early.lend_graph(event_log.last_position()) is None


def test_a_writer_restarted_after_taking_the_early_graph_restores_its_own(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        _stored(event_log, "Alice", "Bob", "Carol")
        early = _restored_early(tmp_path)
        graph = _early_graph(early)
        handover = SearchHandover(lend_graph=early.lend_graph)
        first = Writer(event_log, search_handover=handover)
        try:
            assert first.ask(lambda g: g is graph)
        finally:
            first.stop()
        again = Writer(event_log, search_handover=handover)  # as the supervisor restarts it
        try:
            assert again.ask(lambda g: g is not graph and g.entity_count() == 3)
        finally:
            again.stop()


def test_an_early_graph_restored_from_an_older_checkpoint_than_the_newest_is_not_lent(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        _stored(event_log, "Alice", "Bob", "Carol")
        _stored(event_log, "Dora", "Eve")  # a newer checkpoint at the new end
        newest = event_log.last_position()
    damage_checkpoint(tmp_path, GraphProjection.name, newest)  # fails only when loaded
    # The early reads pass over it for the one before and fold on to the end: the graph is
    # right, but the writer's restore would not make it from that checkpoint, so it
    # restores its own (passing over the damaged one, as before).
    early = _restored_early(tmp_path)
    graph = _early_graph(early)
    assert graph.position == newest and "Eve" in graph.entity_names()
    with LmdbEventLog.open(tmp_path) as event_log:
        with capture_logs() as logs:
            writer = Writer(event_log, search_handover=SearchHandover(lend_graph=early.lend_graph))
            try:
                assert writer.ask(lambda g: g is not graph and "Eve" in g.entity_names())
            finally:
                writer.stop()
        assert events_of(logs, "checkpoint_adopted") == []
        [loaded] = _graph_loads(logs)  # the one before the damaged one, as before
        assert loaded["position"] < newest
        assert early.lend_graph(event_log.last_position()) is None
