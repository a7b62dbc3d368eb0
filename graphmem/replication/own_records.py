"""Reading this node's events back for the sender: its stored records, in a few C-level walks.

The sender reads every local event once more, to put it on the wire as the log stores it.
`LmdbEventLog.read_origin_records` walks the origins index in Python (a key compared per
event) and gets each record by its position (a call per event): about 0.8 us an event, half
of it in those loops, on a 2-core box where a write is 70-100 us and makes two events. Here
the first and last index entries wanted are read, and when their positions are as far apart
as their sequences (no peer's event appended between: the usual case) the records are one
cursor walk over the log from the first; otherwise the index is walked with LMDB's own
iterator for exactly the number of entries wanted, and the records read run by run (a run of
consecutive positions is one cursor walk). Every record
is still decoded whole and checked against the index (eventstore.records.origin_records): a
damaged event is never passed on to peers. Anything unexpected (a record missing, a log that
is not LMDB) takes the log's own reader, which says precisely what is wrong.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator
from typing import cast

import lmdb

from eventstore import keys
from eventstore.events import Envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from eventstore.records import origin_records

__all__ = ["read_own_records"]


def read_own_records(
    event_log: EventLog, origin: str, first: int, count: int
) -> list[tuple[Envelope, bytes]]:
    """`origin`'s records `first` .. `first + count - 1`, each with its envelope, as the
    log's `read_origin_records` returns them (fewer when the log ends before)."""
    if count <= 0:
        return []
    if not isinstance(event_log, LmdbEventLog):
        return event_log.read_origin_records(origin, first, first + count - 1)
    shared = event_log.shared
    start = keys.origin_key(origin, first)

    def read(txn: lmdb.Transaction) -> tuple[list[int], list[bytes]] | None:
        index = txn.cursor(db=shared.origins_db)
        # An origin's entries are numbered without a hole: when the last one wanted is there,
        # so are all before it, and values alone (no key compared per entry) are exactly them.
        if not index.set_key(keys.origin_key(origin, first + count - 1)):
            return None
        high = keys.from_u64(cast(bytes, index.value()))
        if not index.set_key(start):
            return None
        low = keys.from_u64(cast(bytes, index.value()))
        if high - low == count - 1:
            # One origin's positions rise with its sequence: `count` of them from `low` to
            # `low + count - 1` are every position between, so the index need not be walked.
            positions = list(range(low, high + 1))
        else:
            packed = index.iternext(keys=False)
            positions = keys.u64_list(list(itertools.islice(cast(Iterator[bytes], packed), count)))
        records: list[bytes] = []
        log = txn.cursor(db=shared.log_db)
        for low, size in _runs(positions):
            if not log.set_key(keys.u64(low)):
                return None
            expected = len(records) + size
            records.extend(itertools.islice(cast(Iterator[bytes], log.iternext(keys=False)), size))
            if len(records) != expected:  # the log ends inside the run
                return None
        return positions, records

    found = event_log.read(read)
    if found is None:
        return event_log.read_origin_records(origin, first, first + count - 1)
    positions, records = found
    return origin_records(records, positions, origin, first, shared.path)


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Consecutive positions as (first, how many), in order; computed without a Python step
    per position when there are few runs (the usual case: one)."""
    if not positions:
        return []
    breaks = list(
        itertools.compress(
            range(1, len(positions)),
            map(operator.ne, positions[1:], map((1).__add__, positions[:-1])),
        )
    )
    bounds = [0, *breaks, len(positions)]
    return [(positions[a], b - a) for a, b in itertools.pairwise(bounds)]
