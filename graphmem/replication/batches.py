"""Batch messages (wire version 2): many consecutive events of one origin in one hub message.

One NATS message per event made the hub store, index and acknowledge every event (its CPU per
write was as much as the sender's and the writer's extra together on a 2-core box). A batch
message carries the log's stored records back to back, each after its length (4 bytes, big
endian), and says which events it holds in the `Gm-Batch` header, `<first> <last>` origin_seq:
the header is also the wire version mark, a message without it is one event the old way
(payload = the record). Pure functions: what goes in which message, framing, reading back.
"""

from __future__ import annotations

import bisect
import itertools
import struct
from collections.abc import Mapping, Sequence

from graphmem.replication import names

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_BATCH_EVENTS",
    "frame",
    "framed_size",
    "framed_sizes",
    "message_range",
    "split",
    "unframe",
]

MAX_BATCH_EVENTS = 512  # events per message at most
MAX_BATCH_BYTES = 256 * 1024  # payload bytes per message at most (a single larger event alone)
_LENGTH = struct.Struct(">I")


def split(
    sizes: Sequence[int],
    tx_ends: Sequence[bool],
    max_events: int = MAX_BATCH_EVENTS,
    max_bytes: int = MAX_BATCH_BYTES,
) -> list[tuple[int, int, bool]]:
    """Cut records (their framed `sizes`; `tx_ends[i]`: record i ends its transaction) into
    messages, as (start, end, whether the message's last record ends a transaction). Every
    message holds at most `max_events` records and `max_bytes` of framed payload, unless it is
    one record alone. A message ends at a transaction's end whenever one lies in it, so a
    receiver mostly gets whole transactions per message; only a transaction larger than a
    message is cut inside (the receiver folds it once its last part came: `Gm-Tx-End`).

    A message's end is found by bisection over the running sizes and the transactions' ends
    (a step per message, not per record: the sender runs this on every event it sends)."""
    count = len(sizes)
    reach = [0, *itertools.accumulate(sizes)]  # reach[i]: the bytes of records [0, i)
    ends = list(itertools.compress(range(1, count + 1), tx_ends))  # i: record i-1 ends a tx
    chunks: list[tuple[int, int, bool]] = []
    start = 0
    while start < count:
        cap = min(start + max_events, count)
        # The most records from `start` whose bytes fit, at least one.
        end = max(
            bisect.bisect_right(reach, reach[start] + max_bytes, start + 1, cap + 1) - 1, start + 1
        )
        if end < count:
            at = bisect.bisect_right(ends, end) - 1
            if at >= 0 and ends[at] > start:
                end = ends[at]  # the rest of the open transaction goes in the next message
        chunks.append((start, end, bool(tx_ends[end - 1])))
        start = end
    return chunks


def frame(records: Sequence[bytes]) -> bytes:
    """The payload of a batch message: each record after its length."""
    return b"".join(_LENGTH.pack(len(record)) + record for record in records)


def framed_size(record: bytes) -> int:
    return _LENGTH.size + len(record)


def framed_sizes(records: Sequence[bytes]) -> list[int]:
    """framed_size of every record (in C: no Python call per record)."""
    return list(map(_LENGTH.size.__add__, map(len, records)))


def unframe(payload: bytes) -> list[bytes]:
    """The records of a batch message's payload; ValueError when it is not one."""
    records: list[bytes] = []
    offset, size = 0, len(payload)
    view = memoryview(payload)
    while offset < size:
        if offset + _LENGTH.size > size:
            raise ValueError("a batch message ends inside a record's length")
        (length,) = _LENGTH.unpack_from(payload, offset)
        offset += _LENGTH.size
        if offset + length > size:
            raise ValueError("a batch message ends inside a record")
        records.append(bytes(view[offset : offset + length]))
        offset += length
    return records


def message_range(headers: Mapping[str, str] | None) -> tuple[int, int] | None:
    """A batch message's first and last origin_seq (its `Gm-Batch` header); None for a
    message of one event the old way (its envelope says which)."""
    value = (headers or {}).get(names.BATCH)
    if value is None:
        return None
    first, _, last = value.partition(" ")
    return int(first), int(last)
