"""A server's background rebuild hands over the models it serves lazily as their snapshots:
the conflicts model built directly from the log's plain prefix is neither restored nor folded
on until a read asks for it (restoring it is seconds at 1,000,000 events, and most servers
never read it), and is saved as built. Whatever comes in between, it then answers as the
fold of the whole log does."""

from __future__ import annotations

from pathlib import Path

import pytest

from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from tests.actors.test_stale_checkpoints import NEW, OLD, prepared
from tests.actors.writer_support import WAIT, Writer, folded, people, write_some


def conflicts_folded(event_log: EventLog, upto: int | None = None) -> bytes:
    conflicts = ConflictsProjection()
    conflicts.apply_all(e for e in event_log.read_from(1) if upto is None or e.position <= upto)
    return conflicts.to_snapshot()


@pytest.fixture
def upgraded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GraphProjection, "version", NEW)
    monkeypatch.setattr(GraphProjection, "readable_versions", frozenset({OLD}))


@pytest.mark.usefixtures("upgraded")
def test_after_a_background_rebuild_the_conflicts_model_waits_as_bytes_until_it_is_read(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path / "data") as inner:
        prepared(inner)  # the old version's writes and stale graph checkpoint
        built_at = inner.last_position()
        writer = Writer(inner, serve_stale=True)
        try:
            writer.rebuild().wait(WAIT)
            assert writer.ask_models(lambda m: m.held()) == {"conflicts"}
            # Saved as built, at the prefix's end: the fold's bytes.
            stored = inner.checkpoints.entries("conflicts")
            assert [(e.version, e.position) for e in stored] == [
                (ConflictsProjection.version, built_at)
            ]
            saved = inner.checkpoints.load("conflicts", ConflictsProjection.version)
            assert saved is not None
            assert saved.payload == conflicts_folded(inner, built_at)
            write_some(writer, "Cy", "Dee")  # folded into the graph; the held model waits
            assert writer.ask_models(lambda m: m.held()) == {"conflicts"}

            served = writer.ask_models(lambda m: m.conflicts.to_snapshot())

            assert served == conflicts_folded(inner)
            assert writer.ask_models(lambda m: m.held()) == frozenset()
            writer.run(people("Eve"))
            assert writer.ask_models(lambda m: m.conflicts.to_snapshot()) == conflicts_folded(inner)
            assert writer.ask(lambda g: g.snapshot()) == folded(inner)
        finally:
            writer.stop()


@pytest.mark.usefixtures("upgraded")
def test_a_restart_after_the_rebuild_restores_the_conflicts_it_saved_and_folds_on(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path / "data") as inner:
        prepared(inner)
        writer = Writer(inner, serve_stale=True)
        try:
            writer.rebuild().wait(WAIT)
            write_some(writer, "Cy", "Dee")
        finally:
            writer.stop()  # never read: the conflicts model is saved as the rebuild built it
        writer = Writer(inner, serve_stale=True)
        try:
            served = writer.ask_models(lambda m: m.conflicts.to_snapshot())
        finally:
            writer.stop()
        assert served == conflicts_folded(inner)
