"""The sender reads its own events back with a bounded `read_origin_records`, which the LMDB log
reads run by run: the same records, envelopes and errors as its index walk (an open-ended
read), whatever the positions' runs, and the messages built from them byte for byte what they
were."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import Cause, EntityCreated, Envelope, ObservationAdded
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import DamagedLogError
from eventstore.memory_log import InMemoryEventLog
from graphmem.replication.nats_link import _messages

CAUSE = Cause(tool="t", client=None, session=None)


def read_own_records(
    log: LmdbEventLog | InMemoryEventLog, origin: str, first: int, count: int
) -> list[tuple[Envelope, bytes]]:
    """What the sender reads: `count` records from `first`, a bounded read."""
    return log.read_origin_records(origin, first, first + count - 1) if count > 0 else []


def walked(
    log: LmdbEventLog | InMemoryEventLog, origin: str, first: int, count: int
) -> list[tuple[Envelope, bytes]]:
    """The same records read by walking the index (an open-ended read)."""
    return log.read_origin_records(origin, first)[:count]


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[tuple[LmdbEventLog, LmdbEventLog]]:
    """This node's log (`me`) and a peer's (`peer`), whose events `me` receives."""
    me = LmdbEventLog.open(tmp_path / "me", node_id="me")
    peer = LmdbEventLog.open(tmp_path / "peer", node_id="peer")
    yield me, peer
    me.close()
    peer.close()


def _write(log: LmdbEventLog, commands: int, per: int) -> None:
    for _ in range(commands):
        n = log.last_origin_seq(log.node_id)
        log.append(
            [
                EntityCreated(name=f"{log.node_id}-{n}", entity_type="thing"),
                *(
                    ObservationAdded(entity=f"{log.node_id}-{n}", content=str(i))
                    for i in range(per)
                ),
            ],
            CAUSE,
        )


def _receive(me: LmdbEventLog, peer: LmdbEventLog, commands: int) -> None:
    """`commands` new commands of the peer, appended to `me` between its own events."""
    held = me.last_origin_seq("peer")
    _write(peer, commands, 0)
    me.append_remote(peer.read_origin("peer", held + 1))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=8
    ),
    st.data(),
)
def test_own_records_read_in_runs_equal_the_logs_reader_with_peers_events_between_them(
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[int, int, int]],
    data: st.DataObject,
) -> None:
    root = tmp_path_factory.mktemp("runs")
    with (
        LmdbEventLog.open(root / "me", node_id="me") as me,
        LmdbEventLog.open(root / "peer", node_id="peer") as peer,
    ):
        for own, per, received in steps:
            _write(me, own, per)
            _receive(me, peer, received)
        last = me.last_origin_seq("me")
        if last == 0:
            assert read_own_records(me, "me", 1, 0) == []
            return
        first = data.draw(st.integers(1, last))
        count = data.draw(st.integers(1, last - first + 1))
        expected = walked(me, "me", first, count)
        assert read_own_records(me, "me", first, count) == expected
        assert [e.origin_seq for e, _ in expected] == list(range(first, first + count))


def test_a_read_past_the_logs_end_returns_what_is_there(
    logs: tuple[LmdbEventLog, LmdbEventLog],
) -> None:
    me, peer = logs
    _write(me, 3, 1)
    _receive(me, peer, 2)
    _write(me, 1, 0)
    assert read_own_records(me, "me", 5, 10) == walked(me, "me", 5, 10)
    assert read_own_records(me, "me", 8, 3) == []


def test_a_log_in_memory_is_read_by_its_own_reader() -> None:
    log = InMemoryEventLog(node_id="me")
    log.append([EntityCreated(name="a", entity_type="t")], CAUSE)
    log.append([EntityCreated(name="b", entity_type="t")], CAUSE)
    assert read_own_records(log, "me", 2, 1) == walked(log, "me", 2, 1)


def test_a_damaged_record_is_refused_not_sent(logs: tuple[LmdbEventLog, LmdbEventLog]) -> None:
    me, _ = logs
    _write(me, 4, 0)
    shared = me.shared
    with shared.env.begin(write=True, db=shared.log_db) as txn:
        txn.put((3).to_bytes(8, "big"), b"\xc1 not msgpack", db=shared.log_db)
    with pytest.raises(DamagedLogError):
        read_own_records(me, "me", 1, 4)


def test_the_messages_of_a_round_are_the_same_bytes_as_from_the_logs_reader(
    logs: tuple[LmdbEventLog, LmdbEventLog],
) -> None:
    me, peer = logs
    for _ in range(20):
        _write(me, 7, 2)
        _receive(me, peer, 1)
    last = me.last_origin_seq("me")
    own = read_own_records(me, "me", 1, last)
    theirs = walked(me, "me", 1, last)
    for as_batches in (True, False):
        built = _messages("me", own[:-3], own[-3][0], 41, as_batches=as_batches, max_payload=4096)
        before = _messages(
            "me", theirs[:-3], theirs[-3][0], 41, as_batches=as_batches, max_payload=4096
        )
        assert built == before and len(built) > 1
