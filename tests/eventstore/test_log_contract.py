"""The EventLog contract, run against every backend (in memory, LMDB everysec, LMDB strict)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore.events import (
    AnyEvent,
    Cause,
    EntityCreated,
    EntityDeleted,
    Envelope,
    ObservationAdded,
    RelationCreated,
    decode_envelope,
)
from eventstore.hlc import HybridLogicalClock, WallClock, ms_of, stamp_of, wall_ms
from eventstore.log import EventLog, LogError, LogTransaction
from tests.eventstore.backends import BACKENDS, LogFactory, SteppingClock, open_backend


class Boom(Exception):
    pass


@pytest.fixture(params=BACKENDS)
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LogFactory]:
    """Opens logs of the parametrized backend (each call a fresh data dir) and closes them."""
    opened: list[EventLog] = []

    def factory(clock: HybridLogicalClock | None = None, node_id: str | None = None) -> EventLog:
        log = open_backend(request.param, tmp_path / f"log{len(opened)}", clock, node_id)
        opened.append(log)
        return log

    yield factory
    for log in opened:
        log.close()


def created(*names: str) -> list[EntityCreated]:
    return [EntityCreated(name=name, entity_type="person") for name in names]


def test_appended_events_read_back_with_their_envelopes(make_log: LogFactory) -> None:
    log = make_log()
    cause = Cause(tool="create_entities", client="test", session="s1")
    events: list[AnyEvent] = [
        EntityCreated(name="alice", entity_type="person"),
        ObservationAdded(entity="alice", content="likes tea"),
        RelationCreated(from_entity="alice", to_entity="bob", relation_type="knows"),
    ]

    appended = log.append(events, cause)

    assert [e.event for e in appended] == events
    assert appended[0].cause == cause  # stored once per transaction, on its first event
    assert all(e.cause is None for e in appended[1:])
    assert all(e.origin == log.node_id for e in appended)
    assert list(log.read_from(1)) == appended


def test_positions_start_at_one_and_are_contiguous(make_log: LogFactory) -> None:
    log = make_log()
    assert log.last_position() == 0
    assert list(log.read_from(1)) == []

    for i in range(5):
        log.append(created(*(f"e{i}.{j}" for j in range(i + 1))))

    positions = [e.position for e in log.read_from(1)]
    assert positions == list(range(1, 16))
    assert log.last_position() == 15
    assert [e.position for e in log.read_from(11)] == list(range(11, 16))
    assert list(log.read_from(16)) == []
    assert [e.position for e in log.read_from(0)] == positions


def test_a_transaction_that_raises_leaves_nothing_behind(make_log: LogFactory) -> None:
    log = make_log()
    log.append(created("before"))

    def fails(txn: LogTransaction) -> None:
        txn.append(created("a", "b"))
        txn.append([EntityDeleted(name="before")])
        raise Boom

    with pytest.raises(Boom):
        log.transact(fails)

    assert [e.event.name for e in log.read_from(1)] == ["before"]  # type: ignore[union-attr]
    assert log.last_position() == 1
    assert log.last_origin_seq(log.node_id) == 1
    after = log.append(created("after"))
    assert (after[0].position, after[0].origin_seq, after[0].tx) == (2, 2, 2)


def test_appends_in_one_transaction_get_their_own_tx_and_commit_together(
    make_log: LogFactory,
) -> None:
    log = make_log()
    outside_view: list[Envelope] = []

    def group_commit(txn: LogTransaction) -> list[list[Envelope]]:
        batches = [
            txn.append(created("a", "b")),
            txn.append(created("c")),
            txn.append(created("d")),
        ]
        outside_view.extend(log.read_from(1))  # a fresh reader, not this transaction
        return batches

    first, second, third = log.transact(group_commit)

    assert outside_view == []
    assert [e.tx for e in first] == [1, 1]
    assert [e.tx for e in second] == [3]
    assert [e.tx for e in third] == [4]
    assert first[0].hlc == first[1].hlc < second[0].hlc < third[0].hlc
    assert list(log.read_from(1)) == first + second + third


def test_origin_seq_is_gap_free_and_read_origin_returns_ranges(make_log: LogFactory) -> None:
    log = make_log()
    for size in (3, 1, 4):
        log.append(created(*(f"n{size}.{i}" for i in range(size))))
    me = log.node_id

    assert [e.origin_seq for e in log.read_from(1)] == list(range(1, 9))
    assert log.last_origin_seq(me) == 8
    assert [e.origin_seq for e in log.read_origin(me)] == list(range(1, 9))
    assert [e.origin_seq for e in log.read_origin(me, 3, 5)] == [3, 4, 5]
    assert [e.position for e in log.read_origin(me, 7)] == [7, 8]
    assert log.read_origin(me, 9) == []
    assert log.read_origin(me, 5, 4) == []
    assert log.read_origin("someone-else") == []
    assert log.last_origin_seq("someone-else") == 0


def test_read_origin_records_are_the_stored_bytes_of_read_origins_envelopes(
    make_log: LogFactory,
) -> None:
    log = make_log()
    for size in (3, 1, 4):
        log.append(created(*(f"n{size}.{i}" for i in range(size))))
    me = log.node_id

    for bounds in ((1, None), (2, 6), (7, None), (9, None), (5, 4)):
        envelopes = log.read_origin(me, *bounds)
        records = log.read_origin_records(me, *bounds)
        assert [decode_envelope(record) for _, record in records] == envelopes
        assert [envelope for envelope, _ in records] == envelopes
    assert log.read_origin_records("someone-else") == []


def test_hlc_increases_strictly_even_when_the_wall_clock_steps_back(
    make_log: LogFactory,
) -> None:
    clock = HybridLogicalClock(now_ms=SteppingClock(5_000, 4_000, 3_000, 9_000, 1_000, 1_000))
    log = make_log(clock=clock)

    stamps = [log.append(created(f"e{i}"))[0].hlc for i in range(6)]

    assert stamps == sorted(set(stamps))
    assert stamps[0] == stamp_of(5_000)
    assert stamps[1] == stamp_of(5_000, 1)
    assert stamps[3] == stamp_of(9_000)
    assert stamps[5] == stamp_of(9_000, 2)


def test_a_log_stamps_with_the_clock_it_exposes_as_now_for_rules(make_log: LogFactory) -> None:
    offset = WallClock.shifted_by_days(10)
    log = make_log(clock=HybridLogicalClock(offset))

    before = wall_ms() + offset.offset_ms
    stamped = ms_of(log.append(created("shifted"))[0].hlc)
    now = log.clock.now_ms()

    assert before <= stamped <= now <= wall_ms() + offset.offset_ms


def test_reads_inside_a_transaction_see_commits_before_it_and_its_own_appends(
    make_log: LogFactory,
) -> None:
    log = make_log()
    log.append(created("committed"))

    def fold_then_append(txn: LogTransaction) -> tuple[list[str], int, list[str], int]:
        before = [e.event.name for e in txn.read_from(1)]  # type: ignore[union-attr]
        txn.append(created("staged"))
        after = [e.event.name for e in txn.read_from(1)]  # type: ignore[union-attr]
        return before, txn.last_position(), after, txn.attempt

    before, last, after, attempt = log.transact(fold_then_append)

    assert before == ["committed"]
    assert after == ["committed", "staged"]
    assert last == 2
    assert attempt == 0


def test_a_read_inside_a_transaction_is_fixed_when_called(make_log: LogFactory) -> None:
    log = make_log()
    log.append(created("a", "b"))

    def append_while_reading(txn: LogTransaction) -> list[int]:
        seen = []
        for envelope in txn.read_from(1):
            seen.append(envelope.position)
            txn.append(created(f"after-{envelope.position}"))
        return seen

    assert log.transact(append_while_reading) == [1, 2]
    assert log.last_position() == 4


def test_an_empty_append_writes_nothing(make_log: LogFactory) -> None:
    log = make_log()
    assert log.append([]) == []
    assert log.last_position() == 0
    assert log.last_origin_seq(log.node_id) == 0


def test_a_transaction_cannot_be_nested_in_the_same_thread(make_log: LogFactory) -> None:
    log = make_log()

    with pytest.raises(LogError, match="not reentrant"):
        log.transact(lambda txn: log.append(created("nested")))

    assert log.last_position() == 0


def test_a_transaction_object_is_dead_after_transact_returns(make_log: LogFactory) -> None:
    log = make_log()
    txn = log.transact(lambda txn: txn)

    with pytest.raises(LogError, match="ended"):
        txn.append(created("late"))
    with pytest.raises(LogError, match="ended"):
        list(txn.read_from(1))


def test_writers_in_several_threads_all_land_exactly_once(make_log: LogFactory) -> None:
    log = make_log()
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(20):
                log.append(created(f"t{t}.{i}"))
        except BaseException as exc:  # reported below; a thread cannot raise into the test
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert not errors
    assert not any(thread.is_alive() for thread in threads)
    log_entries = list(log.read_from(1))
    assert [e.position for e in log_entries] == list(range(1, 61))
    assert [e.origin_seq for e in log_entries] == list(range(1, 61))
    names = {e.event.name for e in log_entries}  # type: ignore[union-attr]
    assert names == {f"t{t}.{i}" for t in range(3) for i in range(20)}


def test_a_closed_log_refuses_work(make_log: LogFactory) -> None:
    log = make_log()
    log.close()

    with pytest.raises(LogError, match="closed"):
        log.append(created("late"))
    with pytest.raises(LogError, match="closed"):
        list(log.read_from(1))
