"""Envelopes of every event type, with every field set, as an older graphmem wrote them.

The bytes each envelope encoded to then are in tests/fixtures/stored-envelopes-v1.hex (generated
once, before the graph family's fields were added, and never regenerated): a log written then
must decode to the same facts now and re-encode to the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from eventstore.events import (
    AuditRecorded,
    Cause,
    DecayApplied,
    EntitiesMerged,
    EntityCreated,
    EntityDeleted,
    EntityRenamed,
    EntitySplit,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    SchemaRegistered,
    SchemaRetired,
)

EVENTS = [
    EntityCreated(name="Alice", entity_type="Person"),
    EntityUpdated(name="Alice", entity_type="Engineer"),
    EntityUpdated(name="Alice"),
    EntityDeleted(name="Alice"),
    ObservationAdded(entity="Zoë", content="likes 東京"),
    ObservationDeleted(entity="Zoë", content="likes 東京"),
    RelationCreated(from_entity="Alice", to_entity="Bob", relation_type="knows"),
    RelationCreated(
        from_entity="Alice",
        to_entity="project-x",
        relation_type="WORKS_ON",
        weight=0.7,
        properties={"role": "lead", "since": [2024, None]},
        valid_at=1_735_689_600_000,
        invalid_at=1_767_225_600_000,
        source_session="s-1",
        source_transcript="t.jsonl",
        source_type="conversation",
    ),
    RelationUpdated(from_entity="Alice", to_entity="Bob", relation_type="knows", weight=0.25),
    RelationUpdated(
        from_entity="Alice",
        to_entity="Bob",
        relation_type="knows",
        properties={},
        valid_at=0,
        invalid_at=1,
        source_session="s",
        source_transcript="t",
        source_type="manual",
    ),
    RelationDeleted(from_entity="Alice", to_entity="Bob", relation_type="knows"),
    SchemaRegistered(type_name="npc", schema_json="{}", digest="abc", source="rpg/npc.json"),
    SchemaRetired(type_name="npc"),
    EntitiesMerged(
        sources=["A", "a"],
        target="Alpha",
        moved_observations=["o"],
        moved_relations=[("A", "B", "r")],
        dropped_relations=[("a", "B", "r")],
    ),
    EntitySplit(source="Alpha", targets=["A", "a"]),
    EntityRenamed(old_name="A", new_name="B"),
    DecayApplied(at=1_700_000_000_000, rate=0.996, affected=3),
    AuditRecorded(action="graph_boost", detail={"reason": "confirmed", "amount": 0.15}),
]

ENVELOPES = [
    Envelope(
        position=i + 1,
        origin="node-1",
        origin_seq=i + 1,
        hlc=(1_700_000_000_000 + i) << 16,
        tx=i + 1 if i % 2 == 0 else i,
        event=event,
        cause=Cause(tool="create_entities", client="c", session="s") if i % 2 == 0 else None,
    )
    for i, event in enumerate(EVENTS)
]

STORED_BYTES = [
    bytes.fromhex(line)
    for line in (Path(__file__).parent.parent / "fixtures" / "stored-envelopes-v1.hex")
    .read_text()
    .split()
]
