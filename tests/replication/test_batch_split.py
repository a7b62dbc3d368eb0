"""How a round's records are cut into batch messages, and how a batch's payload frames them
(pure: graphmem.replication.batches)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem.replication.batches import frame, message_range, split, unframe
from graphmem.replication.names import BATCH

records = st.lists(
    st.tuples(st.integers(min_value=1, max_value=300), st.booleans()), min_size=1, max_size=200
)


@given(records, st.integers(min_value=1, max_value=20), st.integers(min_value=1, max_value=900))
def test_messages_cover_every_record_once_in_order_within_limits_and_end_at_transactions(
    shape: list[tuple[int, bool]], max_events: int, max_bytes: int
) -> None:
    sizes = [size for size, _ in shape]
    ends = [end for _, end in shape]
    ends[-1] = True  # the log's last record ends its transaction
    chunks = split(sizes, ends, max_events, max_bytes)

    assert [start for start, _, _ in chunks] == [0, *(end for _, end, _ in chunks[:-1])]
    assert chunks[-1][1] == len(sizes)
    for start, end, tx_end in chunks:
        assert end > start
        assert tx_end == ends[end - 1]
        if end - start > 1:  # only a record alone may pass the limits
            assert end - start <= max_events
            assert sum(sizes[start:end]) <= max_bytes
        # Cut inside a transaction only when no transaction ends in the message at all: a
        # receiver then gets whole transactions per message whenever they fit.
        if not tx_end:
            assert not any(ends[start:end])


@given(st.lists(st.binary(max_size=64), max_size=50))
def test_a_framed_payload_gives_back_its_records(items: list[bytes]) -> None:
    assert unframe(frame(items)) == items


def test_a_truncated_payload_is_refused_not_misread() -> None:
    payload = frame([b"abc", b"defg"])
    for cut in (1, 5, len(payload) - 1):
        with pytest.raises(ValueError, match="ends inside"):
            unframe(payload[:cut])


def test_the_batch_header_gives_the_range_and_its_absence_marks_one_event_of_version_1() -> None:
    assert message_range({BATCH: "7 12"}) == (7, 12)
    assert message_range({"Gm-Tx-End": "1"}) is None
    assert message_range(None) is None


def _split_one_record_at_a_time(
    sizes: list[int], tx_ends: list[bool], max_events: int, max_bytes: int
) -> list[tuple[int, int, bool]]:
    """The split as first written (a step per record), the model the bisecting one must
    equal: the cut decides which events share a message id on the wire."""
    chunks: list[tuple[int, int, bool]] = []
    start, count = 0, len(sizes)
    while start < count:
        end, size, last_tx_end = start, 0, None
        while end < count and (
            end == start or (end - start < max_events and size + sizes[end] <= max_bytes)
        ):
            size += sizes[end]
            end += 1
            if tx_ends[end - 1]:
                last_tx_end = end
        if end < count and last_tx_end is not None:
            end = last_tx_end
        chunks.append((start, end, tx_ends[end - 1]))
        start = end
    return chunks


@given(records, st.integers(min_value=1, max_value=20), st.integers(min_value=1, max_value=900))
def test_the_split_cuts_exactly_where_the_record_by_record_split_did(
    shape: list[tuple[int, bool]], max_events: int, max_bytes: int
) -> None:
    sizes = [size for size, _ in shape]
    ends = [end for _, end in shape]
    assert split(sizes, ends, max_events, max_bytes) == _split_one_record_at_a_time(
        sizes, ends, max_events, max_bytes
    )
