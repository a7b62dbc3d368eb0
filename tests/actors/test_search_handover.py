"""The writer adopting a search index built before it loaded (actors.search_handover)."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from actors.search_handover import AdoptSearch, SearchHandover
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from projections.graph import GraphProjection
from projections.search import SearchProjection
from tests.actors.writer_support import Writer, events_of, people, write_some

POLLS = 200  # requests, each queued behind a warm-up step: far more than a tiny index needs


def _filled(event_log: EventLog) -> int:
    writer = Writer(event_log)
    write_some(writer, "Alice", "Bob", "Carol")
    writer.stop()
    return event_log.last_position()


def _index_of(event_log: EventLog) -> SearchProjection:
    """A search index built as the early reads build theirs: from the graph folded anew."""
    graph = GraphProjection()
    graph.apply_all(event_log.read_from(1))
    return SearchProjection.of_graph(graph)  # the filter left to the writer's warm-up


def _warmed_within_polls(writer: Writer) -> bool:
    return any(writer.ask_models(lambda m: m.search.warmed) for _ in range(POLLS))


def test_the_writer_serves_an_index_handed_over_at_its_position_and_finishes_its_filter(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        position = _filled(event_log)
        index = _index_of(event_log)
        handover = SearchHandover(awaited=True)
        with capture_logs() as logs:
            writer = Writer(event_log, search_handover=handover)
            try:
                writer.ref.tell(AdoptSearch(position, index))
                assert writer.ask_models(lambda m: m.search is index)
                assert not handover.awaited
                assert _warmed_within_polls(writer)  # its filter finished by the warm-up
                assert writer.ask_models(lambda m: m.search.search(m.graph, "tea")) == ["Carol"]
                writer.run(people("Dora"))  # kept current like the writer's own
                found = writer.ask_models(lambda m: m.search.search(m.graph, "here"))
                assert found == ["Alice", "Bob", "Carol", "Dora"]
            finally:
                writer.stop()
    [handed] = events_of(logs, "search_handed_over")
    assert handed["adopted"] is True and handed["position"] == position


def test_an_index_of_another_position_is_not_adopted_and_the_writer_warms_its_own(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        _filled(event_log)
        stale = _index_of(event_log)
        writer = Writer(event_log)
        writer.run(people("Dora"))  # the log moved on after the index was built
        writer.stop()
        writer = Writer(event_log, search_handover=SearchHandover(awaited=True))
        try:
            writer.ref.tell(AdoptSearch(event_log.last_position() - 1, stale))
            assert writer.ask_models(lambda m: m.search is not stale)
            assert _warmed_within_polls(writer)
            assert writer.ask_models(lambda m: m.search.search(m.graph, "dora")) == ["Dora"]
        finally:
            writer.stop()


def test_while_an_index_is_awaited_the_writer_does_not_warm_its_own(tmp_path: Path) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        _filled(event_log)
        writer = Writer(event_log, search_handover=SearchHandover(awaited=True))
        try:
            # Each request would queue behind a warm-up step if one had been sent.
            assert not _warmed_within_polls(writer)
            writer.ref.tell(AdoptSearch(0, None))  # none after all: the writer's own, then
            assert _warmed_within_polls(writer)
        finally:
            writer.stop()
