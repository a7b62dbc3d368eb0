"""`graphmem compact`: collect the tombstones the gate allows from the data dir's graph.

The graph keeps a record per deleted element so that a late, older event from another node is
still rejected (docs/design-notes.md "Memory of long runs and deleted history"). Once every
member has seen a deletion (graphmem.replication.gate), no such event can come, and the record
may go. Without replication this node is the only member: every tombstone is collectable.

The collection works on the graph checkpoint: the newest one is restored, brought up to the
log's end, collected and saved again, so the next start of a server restores the smaller
graph. The log is not rewritten: history and as-of reads fold it, deletions included.
"""

from __future__ import annotations

from dataclasses import dataclass

from actors.catch_up import catch_up
from actors.checkpointer import restore_newest
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Checkpoint
from graphmem.config import Settings
from graphmem.replication.gate import Gate, tombstone_gate
from projections.graph import GraphProjection

__all__ = ["Compaction", "compact", "local_gate", "replicated_gate"]


@dataclass(frozen=True)
class Compaction:
    """What `compact` did: the gate it applied, the records dropped, the checkpoint saved."""

    gate: Gate
    entities: int = 0
    relations: int = 0
    position: int = 0  # the graph checkpoint saved (0: none, nothing was collected)


def local_gate(own: dict[str, int]) -> Gate:
    """The gate of a node that does not replicate: it is the only member, so every event that
    will ever be folded is written after all it holds."""
    return Gate(dict(own), [])


def replicated_gate(settings: Settings, own: dict[str, int], node: str) -> Gate:
    """The gate from every member's frontier as the hub holds it (HubUnreachableError)."""
    from graphmem.replication.hub_client import read_membership  # noqa: PLC0415 (nats-py)

    frontiers, retired = read_membership(settings.replication)
    return tombstone_gate(node, own, settings.replication.members, retired, frontiers)


def compact(event_log: LmdbEventLog, gate: Gate) -> Compaction:
    """Collect under `gate` in the newest graph checkpoint brought up to the log's end, and
    save it when anything was dropped. A closed gate collects nothing."""
    if not gate.open:
        return Compaction(gate)
    graph = restore_newest(event_log, GraphProjection, None) or GraphProjection()
    catch_up(event_log, graph.apply_all, graph.position)
    collected = graph.collect_tombstones(gate.watermark)
    if not collected.entities and not collected.relations:
        return Compaction(gate)
    event_log.checkpoints.save(
        Checkpoint(graph.name, graph.version, graph.position, graph.to_snapshot())
    )
    return Compaction(gate, collected.entities, collected.relations, graph.position)
