"""Where a group's events live on the hub: one stream per node, one subject per stream.

Stream `GM_<group>_<node>` holds node `<node>`'s events in its own order, subject
`gm.<group>.ev.<node>`; each publish says which stream sequence it expects to follow. A message
holds one event (wire version 1: stream sequence == origin_seq while only those are sent) or a
batch of consecutive ones (version 2, header `Gm-Batch`: see graphmem.replication.batches).
Groups have no "_", so the first "_" after `GM_` ends the group.
"""

from __future__ import annotations

__all__ = [
    "BATCH",
    "EXPECTED_LAST",
    "MSG_ID",
    "TX_END",
    "WIRE_VERSION",
    "frontier_bucket",
    "node_of_subject",
    "retired_bucket",
    "stream_name",
    "subject",
    "wire_bucket",
]

MSG_ID = "Nats-Msg-Id"  # <node>:<seq>: the hub drops a retried publish within its window
EXPECTED_LAST = "Nats-Expected-Last-Sequence"  # refuses a publish out of place
TX_END = "Gm-Tx-End"  # "1" on the last event of a transaction: receivers fold whole ones
BATCH = "Gm-Batch"  # "<first> <last>" origin_seq of a batch message (wire version 2)
WIRE_VERSION = 2  # what this code reads and, once every node of the group does, sends


def stream_name(group: str, node: str) -> str:
    return f"GM_{group}_{node}"


def subject(group: str, node: str) -> str:
    return f"gm.{group}.ev.{node}"


def node_of_subject(group: str, subject_: str) -> str | None:
    """The node whose stream has `subject_`, if it is one of `group`'s."""
    parts = subject_.split(".")
    if len(parts) == 4 and parts[:3] == ["gm", group, "ev"] and parts[3]:
        return parts[3]
    return None


def frontier_bucket(group: str) -> str:
    """The KV bucket where each node keeps its received-frontier ({origin: last seq})."""
    return f"GM_{group}_frontiers"


def retired_bucket(group: str) -> str:
    """The KV bucket of the nodes an operator retired (`graphmem replication retire`)."""
    return f"GM_{group}_retired"


def wire_bucket(group: str) -> str:
    """The KV bucket where each node says which wire version it reads ({node: "2"}); a node
    of version 1 says nothing, and while one has a stream in the group nobody sends batches."""
    return f"GM_{group}_wire"
