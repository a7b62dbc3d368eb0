"""Key and value layout of the LMDB log's sub-databases.

Integers are big-endian u64 so that LMDB's bytewise key order is numeric order; little-endian
keys would sort 256 before 1.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from eventstore.log import LogError

FORMAT_VERSION = b"1"

_U64 = struct.Struct(">Q")
_MAX_ORIGIN_BYTES = 255

# meta keys. Per-origin sequence counters live under a prefix so they can never collide with
# the fixed keys, whatever the origin's name.
META_FORMAT = b"format"
META_NODE_ID = b"node_id"
META_HLC = b"hlc"
# The ids this data dir wrote as before it was restored from a backup, newline-separated:
# never written as again (eventstore.identity).
META_FORMER_NODE_IDS = b"former_node_ids"
_META_SEQ_PREFIX = b"seq:"


u64: Callable[[int], bytes] = _U64.pack


def from_u64(data: bytes) -> int:
    value: int = _U64.unpack(data)[0]
    return value


def u64_list(packed: list[bytes]) -> list[int]:
    """Many u64 keys at once, unpacked in C."""
    return [value for (value,) in _U64.iter_unpack(b"".join(packed))]


def origin_bytes(origin: str) -> bytes:
    """The origin as stored; its length must fit the one-byte prefix of an origins key."""
    raw = origin.encode()
    if not 0 < len(raw) <= _MAX_ORIGIN_BYTES:
        raise LogError(f"node id must be 1 to {_MAX_ORIGIN_BYTES} bytes of UTF-8: {origin!r}")
    return raw


def origin_prefix(origin: str) -> bytes:
    # The length prefix keeps "ab" + seq from interleaving with "abc" + seq.
    raw = origin_bytes(origin)
    return bytes((len(raw),)) + raw


def origin_key(origin: str, origin_seq: int) -> bytes:
    return origin_prefix(origin) + _U64.pack(origin_seq)


def seq_of_origin_key(key: bytes) -> int:
    return from_u64(key[-_U64.size :])


def seq_counter_key(origin: str) -> bytes:
    return _META_SEQ_PREFIX + origin_bytes(origin)


# checkpoints keys: length-prefixed projection name + big-endian position, so a name's records
# are adjacent, in position order, and never interleave with a longer name's.


def checkpoint_prefix(name_raw: bytes) -> bytes:
    return bytes((len(name_raw),)) + name_raw


def checkpoint_key(name_raw: bytes, position: int) -> bytes:
    return checkpoint_prefix(name_raw) + _U64.pack(position)


def split_checkpoint_key(key: bytes) -> tuple[bytes, int] | None:
    """(name, position) of a checkpoints key; None if it is not one."""
    if not key or len(key) != 1 + key[0] + _U64.size:
        return None
    return key[1 : 1 + key[0]], from_u64(key[-_U64.size :])
