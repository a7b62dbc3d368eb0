"""A data dir's node identity after a restore: a fresh node id, and the ids it wrote as
before never written as again.

A node numbers its own events 1, 2, 3, ... (origin_seq) and every other copy of them, on a
replication hub or on peers, is keyed by (node id, origin_seq). A data dir restored from a
backup lacks the events its node wrote after the backup, which may exist elsewhere; writing
on as the same id would number new, different events like those, and everyone holding the
originals would drop the new ones as duplicates: acknowledged writes that never leave the
node, graphs that never converge. So a restore gives the data dir a new id and records the
old ones as former: they become another node's history (a replicating node receives their
later events from the hub like any peer's), and the log refuses to write as them again
(RetiredNodeIdError). This needs nothing from the hub, so it is as safe when the hub is
unreachable as when it is not.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable

import lmdb

from eventstore import keys

__all__ = ["renew_node_id"]


def renew_node_id(
    path: str | os.PathLike[str], retire: Iterable[str] = ()
) -> tuple[str, frozenset[str]]:
    """Give the log in the data dir `path` (closed, in no process's use) a new random node
    id, and add its former stored id and `retire` (ids it wrote as by GRAPHMEM_NODE_ID) to its
    former ids; returns the new id and all former ones."""
    env = lmdb.open(os.fspath(path), max_dbs=16)  # an upper bound of named databases, as a backup's
    try:
        meta = env.open_db(b"meta")
        with env.begin(write=True, db=meta) as txn:
            old = bytes(txn.get(keys.META_NODE_ID) or b"").decode()
            known = bytes(txn.get(keys.META_FORMER_NODE_IDS) or b"").decode().split("\n")
            former = frozenset({*known, old, *retire}) - {""}
            new = secrets.token_hex(8)
            txn.put(keys.META_NODE_ID, new.encode())
            txn.put(keys.META_FORMER_NODE_IDS, "\n".join(sorted(former)).encode())
        env.sync(True)
    finally:
        env.close()
    return new, former
