"""The plain prefix's C kernel (projections/_prefix_scan.c) against its pure-Python path.

The kernel reads raw msgpack records into a PrefixGraph's columns while it takes them for
certain and hands every other record to the Python path. Whatever the log (random logs of
tests/property/test_plain_prefix.py, the same logs with a record damaged, records of msgpack
shapes a real log does not have), both leave the same state: the same columns, index, origin
table and newest stamp, the same snapshots, or the same error. The kernel's own decisions (what
it takes and where it stops) are unit-tested rule by rule.
"""

from __future__ import annotations

import struct
from dataclasses import astuple
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    Envelope,
    ObservationAdded,
    RelationCreated,
    encode_envelope,
)
from eventstore.log import DamagedLogError
from projections.plain_prefix import COMPILED, PlainPrefix
from tests.property.test_plain_prefix import MODELS, feed_records, folded, logs

# Where it is not built, tests/test_compiled_accelerators.py fails if CI required it.
pytestmark = pytest.mark.skipif(not COMPILED, reason="projections._prefix_scan is not built")


def state(prefix: PlainPrefix) -> tuple[Any, ...]:
    """Everything a PlainPrefix holds that later records or the snapshot writers read."""
    return (
        prefix.ended,
        prefix.position,
        astuple(prefix.graph),
        prefix._index,
        prefix._origin_ids,
        prefix._last,
        prefix.snapshots(model.name for model in MODELS).snapshots if prefix.position else {},
    )


def outcome(records: list[bytes], chunks: list[int], compiled: bool) -> tuple[Any, ...]:
    """The state one scan leaves, or the error it raises."""
    try:
        prefix = feed_records(records, chunks, compiled)
    except Exception as error:  # compared between the two scans, whatever it is
        return ("raised", type(error), str(error))
    return state(prefix)


def same_either_way(records: list[bytes], chunks: list[int] | None = None) -> tuple[Any, ...]:
    """The outcome, asserted equal for the C and the Python scan."""
    compiled = outcome(records, chunks or [], True)
    assert compiled == outcome(records, chunks or [], False)
    return compiled


def kernel_reads(records: list[bytes]) -> int:
    """How many records, from the first, the C kernel takes itself."""
    return PlainPrefix(compiled=True)._compiled(records, 0)


def envelope(
    position: int, event: Any, *, hlc: int | None = None, origin: str = "n1", seq: int | None = None
) -> bytes:
    return encode_envelope(
        Envelope(
            position=position,
            origin=origin,
            origin_seq=position if seq is None else seq,
            hlc=position if hlc is None else hlc,
            tx=position,
            event=event,
        )
    )


def entity(name: str) -> EntityCreated:
    return EntityCreated(name=name, entity_type="t")


def observation(name: str) -> ObservationAdded:
    return ObservationAdded(entity=name, content="x")


def relation(source: str, target: str) -> RelationCreated:
    return RelationCreated(from_entity=source, to_entity=target, relation_type="r")


# --- random logs ------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(logs(), st.lists(st.integers(1, 30), max_size=8))
def test_the_c_scan_leaves_the_same_columns_and_snapshots_as_the_python_scan_for_any_log(
    envelopes: list[Envelope], chunks: list[int]
) -> None:
    records = list(map(encode_envelope, envelopes))
    compiled = same_either_way(records, chunks)
    assert compiled[-1] == (folded(envelopes[: compiled[1]]) if compiled[1] else {})


MUTATIONS = st.sampled_from(["truncate", "flip", "insert", "append", "drop"])


@settings(max_examples=400, deadline=None)
@given(logs(), st.data())
def test_a_damaged_record_gives_the_same_error_or_decision_in_c_as_in_python(
    envelopes: list[Envelope], data: st.DataObject
) -> None:
    records = list(map(encode_envelope, envelopes))
    if not records:
        return
    at = data.draw(st.integers(0, len(records) - 1))
    raw = bytearray(records[at])
    offset = data.draw(st.integers(0, len(raw) - 1))
    mutation = data.draw(MUTATIONS)
    if mutation == "truncate":
        del raw[offset:]
    elif mutation == "flip":
        raw[offset] ^= data.draw(st.integers(1, 255))
    elif mutation == "insert":
        raw[offset:offset] = data.draw(st.binary(min_size=1, max_size=4))
    elif mutation == "append":
        raw += data.draw(st.binary(min_size=1, max_size=4))
    else:
        del raw[offset]
    records[at] = bytes(raw)
    same_either_way(records, data.draw(st.lists(st.integers(1, 30), max_size=4)))


def test_a_truncated_record_is_the_same_damaged_log_error_in_c_as_in_python() -> None:
    records = [envelope(1, entity("a")), envelope(2, observation("a"))[:-3]]
    raised = same_either_way(records)
    assert raised[:2] == ("raised", DamagedLogError) and "position 2" in raised[2]
    assert kernel_reads(records) == 1


# --- msgpack shapes: what the kernel takes, and what it hands over ------------------------


def mp_str(text: str | bytes, code: int = 0) -> bytes:
    """A msgpack str (of any bytes), in the width `code` names (0: the shortest)."""
    data = text.encode() if isinstance(text, str) else text
    if code == 0 and len(data) < 32:
        return bytes([0xA0 | len(data)]) + data
    code = code or 0xDB
    width = {0xD9: "B", 0xDA: ">H", 0xDB: ">I"}[code]
    return bytes([code]) + struct.pack(width, len(data)) + data


def mp_map(pairs: list[tuple[str, bytes]], code: int = 0) -> bytes:
    head = (
        bytes([0x80 | len(pairs)])
        if code == 0
        else (bytes([code]) + struct.pack(">H" if code == 0xDE else ">I", len(pairs)))
    )
    return head + b"".join(mp_str(key) + value for key, value in pairs)


def mp_int(value: int, code: int = 0) -> bytes:
    if code == 0:
        return msgspec.msgpack.encode(value)
    width = {
        0xCC: ">B",
        0xCD: ">H",
        0xCE: ">I",
        0xCF: ">Q",
        0xD0: ">b",
        0xD1: ">h",
        0xD2: ">i",
        0xD3: ">q",
    }[code]
    return bytes([code]) + struct.pack(width, value)


def record(position: int, event: list[tuple[str, bytes]], **change: bytes | None) -> bytes:
    """A stored envelope field by field: `change` replaces a field's value (None drops it)."""
    fields = {
        "p": mp_int(position),
        "o": mp_str("n1"),
        "s": mp_int(position),
        "h": mp_int(position),
        "x": mp_int(position),
        "e": mp_map(event),
    }
    fields.update({key: value for key, value in change.items() if value is not None})
    return mp_map(
        [(key, value) for key, value in fields.items() if change.get(key, b"") is not None]
    )


def created(name: str | bytes = "b", *extra: tuple[str, bytes]) -> list[tuple[str, bytes]]:
    return [
        ("type", mp_str("EntityCreated")),
        ("name", mp_str(name)),
        ("entity_type", mp_str("t")),
        *extra,
    ]


FIRST = envelope(1, entity("a"))

# Records the kernel takes itself, in shapes msgspec reads the same as the usual one.
TAKEN = {
    "the usual shape": record(2, created()),
    "the event's keys in another order": record(2, created()[::-1]),
    "the envelope's keys in another order": mp_map(
        [
            ("e", mp_map(created())),
            ("x", mp_int(2)),
            ("h", mp_int(2)),
            ("s", mp_int(2)),
            ("o", mp_str("n1")),
            ("p", mp_int(2)),
        ]
    ),
    "ints in wider encodings": record(
        2, created(), p=mp_int(2, 0xCF), s=mp_int(2, 0xD3), h=mp_int(2, 0xCD), x=mp_int(2, 0xD0)
    ),
    "strs in wider encodings": record(
        2,
        [
            ("type", mp_str("EntityCreated", 0xDA)),
            ("name", mp_str("b", 0xD9)),
            ("entity_type", mp_str("t", 0xDB)),
        ],
    ),
    "a map in a wider encoding": record(2, created()).replace(b"\x86", b"\xde\x00\x06", 1),
    "a cause": record(2, created(), c=mp_map([("tool", mp_str("t")), ("client", b"\xc0")])),
    "no cause (nil)": record(2, created(), c=b"\xc0"),
    "a name in UTF-8": record(2, created("Zoë 名前")),
    "an hlc past 32 bits": record(2, created(), h=mp_int(2**40)),
}

# Records it hands to the Python path, which decides (each is taken there, ends the prefix, or
# is a DamagedLogError): the same outcome either way.
HANDED_OVER = {
    "an unknown envelope key": record(2, created(), z=mp_int(1)),
    "a repeated envelope key": b"\x87" + record(2, created())[1:] + mp_str("p") + mp_int(2),
    "a repeated event key": record(2, [*created(), ("name", mp_str("c"))]),
    "an unknown event field": record(
        2, created("b", ("confidence", b"\xcb" + struct.pack(">d", 0.5)))
    ),
    "another kind": envelope(2, EntityDeleted(name="a")),
    "an unknown tag": record(2, [("type", mp_str("Nothing")), ("name", mp_str("b"))]),
    "no tag": record(2, created()[1:]),
    "a missing field": record(2, created()[:2]),
    "a missing tx": record(2, created(), x=None),
    "a missing position": record(2, created(), p=None),
    "an int that is a bool": record(2, created(), h=b"\xc3"),
    "an int that is a float": record(2, created(), h=b"\xcb" + struct.pack(">d", 2.0)),
    "an hlc past int64": record(2, created(), h=mp_int(2**64 - 1, 0xCF)),
    "a negative hlc": record(2, created(), h=mp_int(-5, 0xD3)),
    "a name that is not UTF-8": record(2, created(b"\xff\xfe")),
    "a name that is an encoded surrogate": record(2, created(b"\xed\xa0\x80")),
    "an origin that is not UTF-8": record(2, created(), o=mp_str(b"n\xff")),
    "a cause's tool that is not UTF-8": record(2, created(), c=mp_map([("tool", mp_str(b"\xc3"))])),
    "a cause without a tool": record(2, created(), c=mp_map([("client", mp_str("x"))])),
    "a cause's unknown key": record(
        2, created(), c=mp_map([("tool", mp_str("t")), ("y", b"\xc0")])
    ),
    "a cause that is a str": record(2, created(), c=mp_str("t")),
    "trailing bytes": record(2, created()) + b"\x00",
    "an array, not a map": b"\x96" + record(2, created())[1:],
    "a str longer than the record": record(2, created())[:-2] + b"\xdb\xff\xff\xff\xff",
    "a map longer than the record": b"\xdf\xff\xff\xff\xff" + record(2, created())[1:],
    "a key that is not a str": b"\x86\x01" + record(2, created())[3:],
    "an empty record": b"",
    "not bytes but a bytearray": bytearray(record(2, created())),
}


@pytest.mark.parametrize("raw", TAKEN.values(), ids=TAKEN.keys())
def test_the_kernel_takes_a_plain_record_in_every_shape_msgspec_reads_the_same(raw: bytes) -> None:
    records = [FIRST, raw, envelope(3, observation("b"), hlc=2**41)]
    assert kernel_reads(records) == 3
    taken = same_either_way(records)
    assert taken[:2] == (False, 3)


@pytest.mark.parametrize("raw", HANDED_OVER.values(), ids=HANDED_OVER.keys())
def test_the_kernel_hands_a_record_it_does_not_take_for_certain_to_the_python_path(
    raw: bytes,
) -> None:
    records: list[Any] = [FIRST, raw, envelope(3, observation("a"))]
    assert kernel_reads(records) == 1
    same_either_way(records)
    same_either_way(records, [1, 1, 1])


# --- the plainness rules the kernel decides ------------------------------------------------


def test_the_kernel_reads_creations_observations_and_relations_in_rising_stamps_to_the_end() -> (
    None
):
    records = [
        envelope(1, entity("a")),
        envelope(2, observation("a")),
        envelope(3, entity("b")),
        envelope(4, relation("a", "b")),
        envelope(5, observation("b")),
    ]
    assert kernel_reads(records) == 5
    assert same_either_way(records)[:2] == (False, 5)


def test_the_kernel_stops_before_a_record_not_at_the_next_position_and_the_prefix_ends() -> None:
    records = [FIRST, envelope(3, entity("b"))]
    assert kernel_reads(records) == 1
    assert same_either_way(records)[:2] == (True, 1)


@pytest.mark.parametrize(
    "stamp",
    [{"hlc": 1, "seq": 1}, {"hlc": 0}, {"hlc": 1, "origin": "n0"}, {"hlc": 1, "seq": 0}],
    ids=["the same stamp", "an older clock", "an earlier origin", "an earlier seq"],
)
def test_the_kernel_stops_before_a_stamp_that_is_not_newer_and_the_prefix_ends(
    stamp: dict[str, Any],
) -> None:
    records = [FIRST, envelope(2, entity("b"), **stamp)]
    assert kernel_reads(records) == 1
    assert same_either_way(records)[:2] == (True, 1)


def test_the_kernel_takes_a_stamp_newer_by_its_origin_or_its_seq_alone() -> None:
    records = [
        FIRST,
        envelope(2, entity("b"), hlc=1, origin="n2"),
        envelope(3, entity("c"), hlc=1, origin="n2", seq=5),
    ]
    assert kernel_reads(records) == 3
    taken = same_either_way(records)
    assert taken[:2] == (False, 3) and taken[4] == {"": 0, "n1": 1, "n2": 2}


def test_the_kernel_stops_before_a_name_created_again_and_the_prefix_ends() -> None:
    records = [FIRST, envelope(2, observation("a")), envelope(3, entity("a"))]
    assert kernel_reads(records) == 2
    assert same_either_way(records)[:2] == (True, 2)


def test_the_kernel_gives_a_name_written_to_before_its_creation_a_stub_and_stops_at_it() -> None:
    records = [
        FIRST,
        envelope(2, observation("ghost")),
        envelope(3, relation("a", "nobody")),
        envelope(4, relation("other", "ghost")),
        envelope(5, entity("ghost")),
    ]
    assert kernel_reads(records) == 4
    prefix = feed_records(records, [], True)
    assert prefix.graph.stubs == [1, 2, 3] and prefix.graph.names == [
        "a",
        "ghost",
        "nobody",
        "other",
    ]
    assert same_either_way(records)[:2] == (True, 4)


def test_the_kernel_numbers_each_new_origin_in_first_seen_order() -> None:
    records = [
        envelope(1, entity("a"), origin="n2"),
        envelope(2, entity("b"), origin="n1"),
        envelope(3, entity("c"), origin="n2", seq=3),
    ]
    assert kernel_reads(records) == 3
    prefix = feed_records(records, [], True)
    assert prefix.graph.origins == ["", "n2", "n1"]
    assert list(prefix.graph.entity_origin) == [1, 2, 1]
    same_either_way(records)


def test_the_kernel_goes_on_after_a_record_the_python_path_found_plain() -> None:
    attributed = EntityCreated(name="b", entity_type="t", aliases=["B"])
    records = [FIRST, envelope(2, attributed), envelope(3, observation("b"))]
    assert kernel_reads(records) == 1
    prefix = feed_records(records, [], True)
    assert prefix.position == 3 and not prefix.ended
    assert [i for i, _ in prefix.graph.attributed] == [1]
    same_either_way(records)
