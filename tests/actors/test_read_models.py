"""One set of read models: a projection added to the registry is folded, checkpointed,
restored, rebuilt and read as of a past position with nothing else to change; every fold
goes through one catch-up that refuses a log that does not continue position by position."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest
from structlog.testing import capture_logs

from actors.catch_up import CHUNK, CatchUpCancelledError, catch_up
from actors.read_models import ReadModels
from actors.rebuild import rebuild_checkpoints
from actors.time_travel import folded_at
from eventstore.events import EntityCreated, Envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import DamagedLogError, EventLog
from eventstore.memory_log import InMemoryEventLog
from projections import projection as registry
from projections.projection import Registered
from tests.actors.writer_support import Writer, write_some
from tests.damage import damage_event, write_people


class CountingProjection:
    """A stand-in for a new read model: how many events were folded."""

    name: ClassVar[str] = "counting"
    version: ClassVar[int] = 1
    readable_versions: ClassVar[frozenset[int]] = frozenset()

    def __init__(self) -> None:
        self.position = 0
        self.count = 0

    def apply_all(self, envelopes: Iterable[Envelope]) -> None:
        for envelope in envelopes:
            self.count += 1
            self.position = envelope.position

    def to_snapshot(self) -> bytes:
        return msgspec.msgpack.encode((self.position, self.count))

    @classmethod
    def from_snapshot(cls, data: bytes | memoryview) -> CountingProjection:
        projection = cls()
        projection.position, projection.count = msgspec.msgpack.decode(data, type=tuple[int, int])
        return projection


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> None:
    """CountingProjection registered: the one change adding a read model needs."""
    monkeypatch.setattr(
        registry, "REGISTERED", (*registry.REGISTERED, Registered(CountingProjection))
    )


def count_of(models: ReadModels) -> int:
    return models.get(CountingProjection).count


@pytest.mark.usefixtures("counting")
def test_a_registered_projection_is_folded_checkpointed_and_restored_by_the_writer(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        writer = Writer(event_log, checkpoint_every=1)
        try:
            write_some(writer, "Ann", "Bob")
            assert writer.ask_models(count_of) == event_log.last_position()
        finally:
            writer.stop()
        last = event_log.last_position()
        saved = {(c.name, c.position) for c in event_log.checkpoints.entries()}
        assert ("counting", last) in saved

        with capture_logs() as logs:
            writer = Writer(event_log)
            try:
                assert writer.ask_models(count_of) == last
            finally:
                writer.stop()
    loaded = [e for e in logs if e["event"] == "checkpoint_loaded"]
    assert {"checkpoint": "counting", "position": last} in [
        {"checkpoint": e["checkpoint"], "position": e["position"]} for e in loaded
    ]


@pytest.mark.usefixtures("counting")
def test_a_registered_projection_is_rebuilt_checked_and_read_as_of_a_past_position(
    tmp_path: Path,
) -> None:
    last = write_people(tmp_path, 5)
    with LmdbEventLog.open(tmp_path) as event_log:
        first = rebuild_checkpoints(event_log)
        again = rebuild_checkpoints(event_log)  # checks the checkpoints the first one saved

        assert "counting" in first.names
        assert ("counting", last) in again.checked and not again.mismatches
        assert count_of(folded_at(event_log, 3, "counting")) == 3
        assert count_of(folded_at(event_log, last, "counting")) == last


def test_catch_up_folds_in_chunks_up_to_where_asked() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    for i in range(CHUNK + 10):
        event_log.append([EntityCreated(name=f"e{i}", entity_type="t")])
    chunks: list[list[Envelope]] = []

    folded = catch_up(event_log, chunks.append, 5, upto=CHUNK + 7)

    assert folded == CHUNK + 2
    assert [len(c) for c in chunks] == [CHUNK, 2]
    assert (chunks[0][0].position, chunks[-1][-1].position) == (6, CHUNK + 7)
    assert catch_up(event_log, chunks.append, CHUNK + 10) == 0


def test_a_cancelled_catch_up_stops_after_the_chunk_it_folded() -> None:
    event_log = InMemoryEventLog(node_id="n1")
    event_log.append([EntityCreated(name="e", entity_type="t")])
    chunks: list[list[Envelope]] = []

    with pytest.raises(CatchUpCancelledError, match="stopped at position 1"):
        catch_up(event_log, chunks.append, 0, cancelled=lambda: True)
    assert len(chunks) == 1


def test_catch_up_over_a_damaged_record_raises_with_its_position_after_folding_what_precedes(
    tmp_path: Path,
) -> None:
    write_people(tmp_path, 10)
    damage_event(tmp_path, 13, "truncated")
    models_seen: list[int] = []
    with LmdbEventLog.open(tmp_path) as event_log, pytest.raises(DamagedLogError) as raised:
        catch_up(event_log, lambda c: models_seen.extend(e.position for e in c), 0)
    assert raised.value.position == 13
    assert models_seen == []  # the chunk holding it is never folded in part


class _Skipping:
    """A log whose reads leave out one position (as a broken backend would)."""

    def __init__(self, inner: EventLog, missing: int) -> None:
        self._inner = inner
        self._missing = missing

    def read_from(self, position: int) -> Iterator[Envelope]:
        return (e for e in self._inner.read_from(position) if e.position != self._missing)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize("missing", [1, 4])
def test_catch_up_refuses_a_log_that_skips_a_position(missing: int) -> None:
    event_log = InMemoryEventLog(node_id="n1")
    for i in range(6):
        event_log.append([EntityCreated(name=f"e{i}", entity_type="t")])
    models = ReadModels.folding(_Skipping(event_log, missing))  # type: ignore[arg-type]

    with pytest.raises(DamagedLogError) as raised:
        models.catch_up()
    assert raised.value.position == missing
    assert models.position == 0  # nothing folded out of place
