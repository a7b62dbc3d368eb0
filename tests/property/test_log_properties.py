"""Properties of the event logs: the log is exactly its committed batches; envelopes round-trip."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import (
    AnyEvent,
    AuditRecorded,
    Cause,
    EntitiesMerged,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    RelationCreated,
    decode_envelope,
    encode_envelope,
)
from eventstore.log import LogTransaction
from tests.eventstore.backends import open_backend

names = st.text(min_size=1, max_size=12)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
optional_ms = st.none() | st.integers(min_value=0, max_value=2**53)

events: st.SearchStrategy[AnyEvent] = st.one_of(
    st.builds(EntityCreated, name=names, entity_type=names),
    st.builds(EntityUpdated, name=names, entity_type=st.none() | names),
    st.builds(EntityDeleted, name=names),
    st.builds(ObservationAdded, entity=names, content=st.text(max_size=200)),
    st.builds(
        RelationCreated,
        from_entity=names,
        to_entity=names,
        relation_type=names,
        weight=st.floats(allow_nan=False),
        properties=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
        valid_at=optional_ms,
        invalid_at=optional_ms,
        source_session=st.none() | names,
    ),
    st.builds(
        EntitiesMerged,
        sources=st.lists(names, max_size=3),
        target=names,
        moved_relations=st.lists(st.tuples(names, names, names), max_size=3),
    ),
    st.builds(AuditRecorded, action=names, detail=st.dictionaries(names, json_values, max_size=3)),
)
causes = st.none() | st.builds(
    Cause, tool=names, client=st.none() | names, session=st.none() | names
)
u64 = st.integers(min_value=0, max_value=2**64 - 1)

envelopes = st.builds(
    Envelope,
    position=u64,
    origin=st.text(min_size=1, max_size=32),
    origin_seq=u64,
    hlc=u64,
    tx=u64,
    event=events,
    cause=causes,
)


@given(envelopes)
def test_an_envelope_survives_encoding_and_decoding(envelope: Envelope) -> None:
    assert decode_envelope(encode_envelope(envelope)) == envelope


# A transaction: the commands it appends, and whether it raises after appending them.
commands = st.lists(st.lists(events, min_size=1, max_size=4), min_size=0, max_size=4)
transactions = st.lists(st.tuples(commands, st.booleans()), max_size=8)


class Abort(Exception):
    pass


def run_transactions(backend: str, path: Path, txns: list[tuple[Any, bool]]) -> None:
    log = open_backend(backend, path)
    committed: list[list[AnyEvent]] = []
    try:
        for batch, raises in txns:

            def fn(
                txn: LogTransaction, batch: list[list[AnyEvent]] = batch, raises: bool = raises
            ) -> None:
                for command in batch:
                    txn.append(command, Cause(tool="prop"))
                if raises:
                    raise Abort

            if raises:
                with pytest.raises(Abort):
                    log.transact(fn)
            else:
                log.transact(fn)
                committed.extend(batch)

        stored = list(log.read_from(1))
        assert [e.event for e in stored] == [event for command in committed for event in command]
        assert [e.position for e in stored] == list(range(1, len(stored) + 1))
        assert [e.origin_seq for e in stored] == list(range(1, len(stored) + 1))
        by_tx: dict[int, list[AnyEvent]] = {}
        hlc_by_tx: dict[int, set[int]] = {}
        for e in stored:
            by_tx.setdefault(e.tx, []).append(e.event)
            hlc_by_tx.setdefault(e.tx, set()).add(e.hlc)
        assert list(by_tx.values()) == committed
        assert all(len(stamps) == 1 for stamps in hlc_by_tx.values())
        hlcs = [stamps.pop() for stamps in hlc_by_tx.values()]
        assert hlcs == sorted(set(hlcs))
    finally:
        log.close()


@pytest.mark.parametrize("backend", ["memory", "lmdb-everysec"])
@given(txns=transactions)
def test_the_log_is_exactly_the_committed_batches_in_order(
    backend: str, txns: list[tuple[Any, bool]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_transactions(backend, Path(tmp), txns)
