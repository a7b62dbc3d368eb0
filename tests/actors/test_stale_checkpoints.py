"""Checkpoints of an earlier projection version after an upgrade: a server answers from them
while the background rebuild folds the log anew, then serves the fresh models; anything else
refolds before serving and never takes another version's snapshot for its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from structlog.testing import capture_logs

from actors.checkpointer import Checkpointer
from actors.read_models import ReadModels
from eventstore.events import EntityCreated, Envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint, EventLog
from eventstore.memory_log import InMemoryEventLog
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection
from tests.actors.writer_support import (
    WAIT,
    GatedReads,
    Writer,
    events_of,
    first_answer,
    folded,
    people,
    write_some,
)

SNAPSHOTS = Path(__file__).parent.parent / "fixtures" / "snapshots"
OLD = GraphProjection.version
NEW = OLD + 1


@pytest.fixture
def upgraded(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process stands in for a graphmem whose graph fold changed but whose snapshot
    layout did not: version NEW, reading OLD's snapshots."""
    monkeypatch.setattr(GraphProjection, "version", NEW)
    monkeypatch.setattr(GraphProjection, "readable_versions", frozenset({OLD}))


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "data"


def old_checkpoint(event_log: EventLog, version: int = OLD) -> None:
    """A checkpoint at the log's end, as the old fold left it: it holds an entity, Ghost, that
    the log's events do not make (what makes the stale model tell itself apart)."""
    graph = GraphProjection()
    graph.apply_all(event_log.read_from(1))
    last = event_log.last_position()
    graph.apply(Envelope(position=last, origin="old", origin_seq=1, hlc=1, tx=1,
                         event=EntityCreated(name="Ghost", entity_type="t")))  # fmt: skip
    schemas = SchemaProjection()
    schemas.apply_all(event_log.read_from(1))
    event_log.checkpoints.save(
        Checkpoint("graph", version, last, graph.to_snapshot()),
        Checkpoint("schemas", SchemaProjection.version, last, schemas.to_snapshot()),
    )


def prepared(event_log: EventLog) -> None:
    """Some writes by the old version, then its checkpoint (Ghost included)."""
    writer = Writer(event_log, checkpoint_every=None)
    try:
        write_some(writer, "Ann", "Bob")
    finally:
        writer.stop()
    old_checkpoint(event_log)


@pytest.mark.usefixtures("upgraded")
def test_a_server_answers_from_the_stale_checkpoint_until_the_background_rebuild_replaces_it(
    data_dir: Path,
) -> None:
    with LmdbEventLog.open(data_dir) as inner:
        prepared(inner)
        gated = GatedReads(inner)
        with capture_logs() as logs:
            writer = Writer(gated, serve_stale=True, checkpoint_every=1)  # type: ignore[arg-type]
            try:
                # The rebuild started on its own and is held at the gate: the stale model serves,
                # writes go on, and nothing is saved from it however often a checkpoint is due.
                assert gated.reading.wait(WAIT)
                assert writer.ask(lambda g: g.has_entity("Ghost"))
                write_some(writer, "Cy", "Dee")
                assert writer.ask(lambda g: g.has_entity("Cy"))
                assert {e.version for e in inner.checkpoints.entries("graph")} == {OLD}

                joined = writer.rebuild()  # answered by the rebuild already running
                gated.gate.set()
                result = joined.wait(WAIT)

                assert result.position == inner.last_position()
                assert not writer.ask(lambda g: g.has_entity("Ghost"))
                assert writer.ask(lambda g: g.snapshot()) == folded(inner)
                assert writer.ask_models(lambda m: m.search.search(m.graph, "Ghost")) == []
                writer.run(people("Eve"))
                assert writer.ask(lambda g: g.has_entity("Eve"))
            finally:
                gated.gate.set()
                writer.stop()
        started = events_of(logs, "rebuild_started")
        assert [e["reason"] for e in started] == ["stale_checkpoint"]
        assert events_of(logs, "checkpoint_stale")
        # Fresh checkpoints of the new version replace the stale ones.
        stored = inner.checkpoints.entries("graph")
        assert {e.version for e in stored} == {NEW}
        assert stored[-1].position == inner.last_position()


@pytest.mark.usefixtures("upgraded")
def test_the_next_start_after_the_rebuild_restores_the_new_checkpoint(data_dir: Path) -> None:
    with LmdbEventLog.open(data_dir) as inner:
        prepared(inner)
        writer = Writer(inner, serve_stale=True)
        try:
            writer.rebuild().wait(WAIT)  # joins the stale rebuild, or follows it
        finally:
            writer.stop()
        answered, logs = first_answer(inner, serve_stale=True)
        assert answered == folded(inner)
        assert not events_of(logs, "rebuild_started")
        assert not events_of(logs, "checkpoint_stale")


@pytest.mark.usefixtures("upgraded")
def test_a_one_shot_process_refolds_instead_of_answering_from_a_stale_checkpoint() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    prepared(event_log)
    answered, logs = first_answer(event_log)  # serve_stale is off: import, export, tests
    assert answered == folded(event_log)  # no Ghost
    assert not events_of(logs, "rebuild_started")


def test_a_checkpoint_of_a_version_this_one_cannot_read_is_ignored_even_by_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(GraphProjection, "version", NEW)  # and OLD is not readable
    event_log = InMemoryEventLog(node_id="n1")
    prepared(event_log)
    answered, logs = first_answer(event_log, serve_stale=True)
    assert answered == folded(event_log)
    assert not events_of(logs, "rebuild_started")
    assert not events_of(logs, "checkpoint_stale")


def test_a_version_2_graph_checkpoint_is_refolded_even_by_a_server() -> None:
    # The real version 2 snapshot (tests/fixtures/snapshots), of a log of 40 other entities:
    # versions 3 and 4 do not read it (its layout lacks the attribute column), so a server
    # refolds this log before answering rather than serving that model.
    assert GraphProjection.version == 4
    assert 2 not in GraphProjection.readable_versions
    event_log = InMemoryEventLog(node_id="n1")
    writer = Writer(event_log, checkpoint_every=None)
    try:
        write_some(writer, "Ann", "Bob")
    finally:
        writer.stop()
    stored = (SNAPSHOTS / "graph-v2-full.msgpack").read_bytes()
    event_log.checkpoints.save(Checkpoint("graph", 2, event_log.last_position(), stored))

    answered, logs = first_answer(event_log, serve_stale=True)

    assert answered == folded(event_log)
    assert {view.name for view in answered.entities} == {"Ann", "Bob"}
    assert not events_of(logs, "rebuild_started")


@pytest.mark.usefixtures("upgraded")
def test_a_checkpoint_of_the_current_version_wins_over_a_newer_stale_one() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    event_log.append([EntityCreated(name="Ann", entity_type="t")])
    current = GraphProjection()
    current.apply_all(event_log.read_from(1))
    event_log.checkpoints.save(Checkpoint("graph", NEW, 1, current.to_snapshot()))
    event_log.append([EntityCreated(name="Bob", entity_type="t")])
    old_checkpoint(event_log)

    models = ReadModels.serving(event_log, Checkpointer(event_log), accept_stale=True)

    assert models.restore()
    assert (models.graph.position, models.stale) == (1, False)


def test_a_stale_conflict_view_is_served_while_the_rebuild_replaces_it(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    old = ConflictsProjection.version
    with LmdbEventLog.open(data_dir) as inner:
        writer = Writer(inner)
        try:
            write_some(writer, "Ann", "Bob")
            assert writer.ask_models(lambda m: m.conflicts.position) == inner.last_position()
        finally:
            writer.stop()  # saves the conflict view, at version `old`
        assert {e.version for e in inner.checkpoints.entries("conflicts")} == {old}
        monkeypatch.setattr(ConflictsProjection, "version", old + 1)
        monkeypatch.setattr(ConflictsProjection, "readable_versions", frozenset({old}))
        gated = GatedReads(inner)
        with capture_logs() as logs:
            writer = Writer(gated, serve_stale=True)  # type: ignore[arg-type]
            try:
                # The graph's checkpoint is current; the conflict view, restored on first use,
                # is not: it answers, and the rebuild starts then.
                assert writer.ask_models(lambda m: m.conflicts.position) == inner.last_position()
                assert gated.reading.wait(WAIT)
                joined = writer.rebuild()
                gated.gate.set()
                joined.wait(WAIT)
            finally:
                gated.gate.set()
                writer.stop()
        assert [e["reason"] for e in events_of(logs, "rebuild_started")] == ["stale_checkpoint"]
        assert {e.version for e in inner.checkpoints.entries("conflicts")} == {old + 1}


def _as_version_3(snapshot: bytes) -> bytes:
    """A version 4 graph snapshot in version 3's layout, as the code before issue 21 wrote it
    (tests/fixtures/snapshots/graph-v3-*.msgpack are such snapshots, written by that code):
    no `layout` field, and each stamp of the packed occurrences whole, its origin's string in
    place of its index."""
    fields = msgspec.msgpack.decode(snapshot)
    assert fields.pop() == 4  # the layout
    origins = fields[7]
    packed = fields[18]
    for i, raw in enumerate(packed):
        contents, hlcs, at, seqs = msgspec.msgpack.decode(raw)
        stamps = [[hlc, origins[o], seq] for hlc, o, seq in zip(hlcs, at, seqs, strict=True)]
        packed[i] = msgspec.msgpack.encode([contents, stamps])
    return msgspec.msgpack.encode(fields)


def test_a_version_3_checkpoint_serves_a_server_until_its_rebuild_saves_version_4(
    data_dir: Path,
) -> None:
    # An upgrade from the code before issue 21: its checkpoints are read (their packed
    # occurrences converted), answer as the log's fold does, and are replaced by version 4's.
    assert (GraphProjection.version, GraphProjection.readable_versions) == (4, frozenset({3}))
    with LmdbEventLog.open(data_dir) as inner:
        writer = Writer(inner, checkpoint_every=None)
        try:
            write_some(writer, "Ann", "Bob")
        finally:
            writer.stop()
        last = inner.last_position()
        graph = GraphProjection()
        graph.apply_all(inner.read_from(1))
        inner.checkpoints.save(Checkpoint("graph", 3, last, _as_version_3(graph.to_snapshot())))
        assert [e.version for e in inner.checkpoints.entries("graph")] == [3]

        with capture_logs() as logs:
            writer = Writer(inner, serve_stale=True)
            try:
                assert writer.ask(lambda g: g.snapshot()) == folded(inner)
                assert writer.ask(lambda g: g.observations("Ann")) == graph.observations("Ann")
                writer.rebuild().wait(WAIT)
            finally:
                writer.stop()
        assert events_of(logs, "checkpoint_stale")
        assert {e.version for e in inner.checkpoints.entries("graph")} == {4}
        answered, logs = first_answer(inner, serve_stale=True)
        assert answered == folded(inner)
        assert not events_of(logs, "checkpoint_stale")


@pytest.mark.parametrize("stage", ["half", "full"])
def test_the_version_3_stand_in_is_what_the_code_before_wrote_byte_for_byte(stage: str) -> None:
    current = (SNAPSHOTS / f"graph-v4-{stage}.msgpack").read_bytes()
    assert _as_version_3(current) == (SNAPSHOTS / f"graph-v3-{stage}.msgpack").read_bytes()
