"""Plain creations (a bulk import's events) are stored exactly as the events they stand for:
the same bytes as an Envelope of the event, and on every backend the same log as `append`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import Cause, Envelope, decode_envelope, encode_envelope
from eventstore.log import EventLog
from eventstore.plain_events import (
    PlainEntity,
    PlainEvent,
    PlainObservation,
    PlainRecord,
    PlainRelation,
    as_event,
    encode_plain,
)
from tests.eventstore.backends import BACKENDS, open_backend

TEXT = st.text(min_size=0, max_size=12)
PLAIN_EVENTS: st.SearchStrategy[PlainEvent] = st.one_of(
    st.builds(PlainEntity, TEXT, TEXT),
    st.builds(PlainObservation, TEXT, st.text(max_size=40)),
    st.builds(PlainRelation, TEXT, TEXT, TEXT),
)
CAUSES = st.none() | st.builds(Cause, tool=TEXT, client=st.none() | TEXT, session=st.none() | TEXT)
INTS = st.integers(min_value=0, max_value=2**63 - 1)


@given(
    event=PLAIN_EVENTS,
    position=INTS,
    origin=st.text(min_size=1, max_size=16),
    seq=INTS,
    hlc=INTS,
    tx=INTS,
    cause=CAUSES,
)
def test_a_plain_record_encodes_to_the_bytes_of_its_events_envelope(
    event: PlainEvent, position: int, origin: str, seq: int, hlc: int, tx: int, cause: Cause | None
) -> None:
    envelope = Envelope(
        position=position,
        origin=origin,
        origin_seq=seq,
        hlc=hlc,
        tx=tx,
        event=as_event(event),
        cause=cause,
    )

    stored = encode_plain(PlainRecord(position, origin, seq, hlc, tx, event, cause))

    assert stored == encode_envelope(envelope)
    assert decode_envelope(stored) == envelope


@pytest.fixture(params=BACKENDS)
def logs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[EventLog, EventLog]]:
    """Two fresh logs of the parametrized backend with the same node id."""
    pair = (
        open_backend(request.param, tmp_path / "plain", node_id="n1"),
        open_backend(request.param, tmp_path / "events", node_id="n1"),
    )
    yield pair
    for log in pair:
        log.close()


def test_append_plain_stores_what_append_stores_and_says_where(
    logs: tuple[EventLog, EventLog],
) -> None:
    plain_log, event_log = logs
    cause = Cause(tool="import", client="graphmem-cli")
    batches: list[list[PlainEvent]] = [
        [
            PlainEntity("ada", "person"),
            PlainObservation("ada", "writes\ncode"),
            PlainObservation("ada", "writes\ncode"),
        ],
        [],
        [
            PlainEntity("Zoë", "person"),
            PlainRelation("ada", "Zoë", "knows"),
            PlainRelation("ada", "ada", "is"),
        ],
    ]

    placed = [
        plain_log.transact(lambda txn, b=batch: txn.append_plain(b, cause)) for batch in batches
    ]
    for batch in batches:
        event_log.append([as_event(plain) for plain in batch], cause)

    stored = list(plain_log.read_from(1))
    expected = list(event_log.read_from(1))
    assert [(e.position, e.origin, e.origin_seq, e.tx, e.event, e.cause) for e in stored] == [
        (e.position, e.origin, e.origin_seq, e.tx, e.event, e.cause) for e in expected
    ]
    assert [(p.first_position, p.first_seq, p.origin) for p in placed] == [
        (1, 1, "n1"),
        (4, 4, "n1"),
        (4, 4, "n1"),
    ]
    assert {e.hlc for e in stored[:3]} == {placed[0].hlc}
    assert {e.hlc for e in stored[3:]} == {placed[2].hlc}
    assert plain_log.origins() == {"n1": 6}
    assert plain_log.read_origin("n1", 4, 4) == [stored[3]]
