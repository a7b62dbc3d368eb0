"""append_remote: another node's envelopes kept with their stamps, idempotent, gaps refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore.events import Cause, EntityCreated, Envelope, ObservationAdded
from eventstore.hlc import HybridLogicalClock, stamp_of, wall_ms
from eventstore.log import EventLog
from tests.eventstore.backends import BACKENDS, LogFactory, open_backend


@pytest.fixture(params=BACKENDS)
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogFactory]:
    opened: list[EventLog] = []

    def factory(clock: HybridLogicalClock | None = None, node_id: str | None = None) -> EventLog:
        log = open_backend(request.param, tmp_path / f"log{len(opened)}", clock, node_id)
        opened.append(log)
        return log

    yield factory
    for log in opened:
        log.close()


def _authored(log: EventLog, count: int) -> list[Envelope]:
    """`count` one-event commands on `log`, as its origin stamped them."""
    for i in range(count):
        log.append(
            [EntityCreated(name=f"{log.node_id}-{i}", entity_type="thing")],
            Cause(tool="t", client=None, session=None),
        )
    return log.read_origin(log.node_id)


def test_remote_envelopes_keep_their_origin_sequence_clock_and_cause(
    make_log: LogFactory,
) -> None:
    a, b = make_log(node_id="a"), make_log(node_id="b")
    _authored(b, 1)
    sent = _authored(a, 3)
    result = b.append_remote(sent)
    assert result.skipped == 0 and result.gaps == {}
    held = b.read_origin("a")
    assert [(e.origin, e.origin_seq, e.hlc, e.tx, e.event, e.cause) for e in held] == [
        (e.origin, e.origin_seq, e.hlc, e.tx, e.event, e.cause) for e in sent
    ]
    # Re-positioned after what b already held; b's own sequence is untouched.
    assert [e.position for e in held] == [2, 3, 4]
    assert b.last_origin_seq("a") == 3 and b.last_origin_seq("b") == 1
    assert b.origins() == {"a": 3, "b": 1}


def test_envelopes_already_held_are_skipped_so_a_redelivery_changes_nothing(
    make_log: LogFactory,
) -> None:
    a, b = make_log(node_id="a"), make_log(node_id="b")
    sent = _authored(a, 4)
    b.append_remote(sent[:2])
    again = b.append_remote(sent)
    assert (len(again.stored), again.skipped, again.gaps) == (2, 2, {})
    assert b.append_remote(sent).stored == []
    assert b.last_position() == 4 and b.last_origin_seq("a") == 4


def test_an_envelope_past_a_gap_is_refused_with_the_rest_of_its_origin(
    make_log: LogFactory,
) -> None:
    a, c, b = make_log(node_id="a"), make_log(node_id="c"), make_log(node_id="b")
    from_a, from_c = _authored(a, 3), _authored(c, 1)
    result = b.append_remote([from_a[0], from_a[2], from_c[0], from_a[1]])
    assert [(e.origin, e.origin_seq) for e in result.stored] == [("a", 1), ("c", 1)]
    assert result.gaps == {"a": 2}
    assert b.last_origin_seq("a") == 1
    # Redelivered from the missing one, the rest lands.
    assert len(b.append_remote(from_a[1:]).stored) == 2


def test_the_local_clock_observes_remote_stamps_so_later_local_writes_sort_after_them(
    make_log: LogFactory,
) -> None:
    a = make_log(node_id="a")
    sent = _authored(a, 1)
    ahead = sent[0].hlc + stamp_of(30_000)  # a peer's clock 30 s ahead (within the skew bound)
    b = make_log(node_id="b")
    b.append_remote([Envelope(**{**_fields(sent[0]), "hlc": ahead})])
    local = b.append([ObservationAdded(entity="a-0", content="later")])
    assert local[0].hlc > ahead
    assert stamp_of(wall_ms() + 60_000) > local[0].hlc


def test_a_multi_event_transaction_arrives_whole_with_its_tx(make_log: LogFactory) -> None:
    a, b = make_log(node_id="a"), make_log(node_id="b")
    a.append([EntityCreated(name=n, entity_type="t") for n in ("x", "y", "z")])
    b.append_remote(a.read_origin("a"))
    assert [(e.origin_seq, e.tx) for e in b.read_origin("a")] == [(1, 1), (2, 1), (3, 1)]


def test_remote_frontiers_survive_a_reopen(tmp_path: Path) -> None:
    a = open_backend("lmdb-strict", tmp_path / "a", node_id="a")
    b = open_backend("lmdb-strict", tmp_path / "b", node_id="b")
    b.append_remote(_authored(a, 5))
    b.close()
    b = open_backend("lmdb-strict", tmp_path / "b", node_id="b")
    try:
        assert b.origins() == {"a": 5}
        assert b.append_remote(a.read_origin("a")).skipped == 5
        # b's own appends still start at 1: a's counter is a's.
        assert b.append([EntityCreated(name="mine", entity_type="t")])[0].origin_seq == 1
    finally:
        a.close()
        b.close()


def _fields(envelope: Envelope) -> dict[str, object]:
    return {f: getattr(envelope, f) for f in envelope.__struct_fields__}
