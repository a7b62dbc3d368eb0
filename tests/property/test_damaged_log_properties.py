"""Whatever bytes of a stored event are damaged, reading the log either returns envelopes that
fold, or stops with a DamagedLogError naming exactly that event, which `verify_log` names too;
never another exception."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import lmdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import DamagedLogError
from eventstore.verify import verify_log
from projections.graph import GraphProjection
from tests.damage import KINDS, Kind, damage_event, write_people

EVENTS = 12
Flips = list[tuple[int, int]]


def _flip(data_dir: Path, position: int, flips: Flips) -> None:
    """Set bytes of the record at `position` (offsets wrap around its length)."""
    env = lmdb.open(str(data_dir), max_dbs=8)
    try:
        with env.begin(write=True, db=env.open_db(b"log")) as txn:
            key = struct.pack(">Q", position)
            value = bytearray(txn.get(key) or b"")
            for offset, byte in flips:
                value[offset % len(value)] = byte
            txn.put(key, bytes(value))
    finally:
        env.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    position=st.integers(1, EVENTS),
    kind=st.sampled_from([*KINDS, None]),
    flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_a_damaged_event_reads_back_or_is_named_never_anything_else(
    position: int, kind: Kind | None, flips: Flips
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder)
        write_people(data_dir, EVENTS // 2)
        if kind is None:
            _flip(data_dir, position, flips)
        else:
            damage_event(data_dir, position, kind)
        with LmdbEventLog.open(data_dir) as event_log:
            try:
                envelopes = list(event_log.read_from(1))
            except DamagedLogError as damage:
                assert damage.position == position
                assert verify_log(event_log).damaged_positions == [position]
            else:
                GraphProjection().apply_all(envelopes)  # what decodes also folds
