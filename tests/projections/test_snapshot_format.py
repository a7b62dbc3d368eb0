"""The checkpoint format is frozen: snapshots written by earlier code restore, byte for byte.

The fixtures under tests/fixtures/snapshots/ were written by the code before the graph
projection became a package (issue 13): the graph, schema and conflict snapshots of a seeded
log, once halfway and once at its end. Folding the same log must give the same bytes, and
restoring the stored bytes must give a model that answers, folds on and snapshots again as
the fold does. Regenerate them only with a projection version bump.
"""

from __future__ import annotations

import random
from pathlib import Path

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
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
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection

FIXTURES = Path(__file__).parent.parent / "fixtures" / "snapshots"
EVENTS = 3000
HALF = EVENTS // 2
NAMES = [f"n{i}" for i in range(40)]
TYPES = ["person", "place", "thing"]
ORIGINS = ["node-a", "node-b", "node-c"]
SCHEMA = '{"type": "object", "properties": {"age": {"type": "integer"}}}'


def _event(rng: random.Random) -> AnyEvent:
    name, other = rng.choice(NAMES), rng.choice(NAMES)
    kind = rng.randrange(100)
    if kind < 20:
        return EntityCreated(name=name, entity_type=rng.choice(TYPES))
    if kind < 50:
        return ObservationAdded(entity=name, content=f"fact {rng.randrange(30)}")
    if kind < 56:
        return ObservationDeleted(entity=name, content=f"fact {rng.randrange(30)}")
    if kind < 61:
        return EntityDeleted(name=name)
    if kind < 64:
        return EntityUpdated(name=name, entity_type=rng.choice(TYPES))
    relation_type = rng.choice(["knows", "owns"])
    if kind < 80:
        if rng.random() < 0.7:
            return RelationCreated(from_entity=name, to_entity=other, relation_type=relation_type)
        return RelationCreated(
            from_entity=name,
            to_entity=other,
            relation_type=relation_type,
            weight=rng.random(),
            properties={"since": rng.randrange(2000, 2030), "tags": ["a", "b"]},
            valid_at=rng.randrange(10**12),
            source_session="s1",
        )
    if kind < 88:
        return RelationUpdated(
            from_entity=name,
            to_entity=other,
            relation_type=relation_type,
            weight=rng.random() if rng.random() < 0.5 else None,
            properties={"k": rng.randrange(5)} if rng.random() < 0.5 else None,
            invalid_at=rng.randrange(10**12) if rng.random() < 0.3 else None,
            source_type="chat" if rng.random() < 0.3 else None,
        )
    if kind < 96:
        return RelationDeleted(from_entity=name, to_entity=other, relation_type=relation_type)
    if kind < 98:
        return SchemaRegistered(
            type_name=rng.choice(TYPES), schema_json=SCHEMA, digest=str(rng.randrange(9))
        )
    return SchemaRetired(type_name=rng.choice(TYPES))


def seeded_log() -> list[Envelope]:
    """Several origins, tied and out-of-order clocks, collisions on a small alphabet."""
    rng = random.Random(13)
    envelopes = []
    seqs = dict.fromkeys(ORIGINS, 0)
    for position in range(1, EVENTS + 1):
        origin = rng.choice(ORIGINS)
        seqs[origin] += 1
        # Mostly rising, sometimes from the past (a late replica), sometimes tied.
        hlc = (position << 16) - (rng.randrange(400) << 16 if rng.random() < 0.1 else 0)
        envelopes.append(
            Envelope(
                position=position,
                origin=origin,
                origin_seq=seqs[origin],
                hlc=hlc,
                tx=position,
                event=_event(rng),
            )
        )
    return envelopes


def _snapshots(envelopes: list[Envelope]) -> dict[str, bytes]:
    graph, schemas, conflicts = GraphProjection(), SchemaProjection(), ConflictsProjection()
    for model in (graph, schemas, conflicts):
        model.apply_all(envelopes)
    return {
        "graph": graph.to_snapshot(),
        "schemas": schemas.to_snapshot(),
        "conflicts": conflicts.to_snapshot(),
    }


def _fixture(name: str, stage: str) -> bytes:
    return (FIXTURES / f"{name}-{stage}.msgpack").read_bytes()


def write_fixtures() -> None:
    """Run once, by hand, with the code whose format is to be frozen."""
    log = seeded_log()
    for stage, envelopes in (("half", log[:HALF]), ("full", log)):
        for name, data in _snapshots(envelopes).items():
            (FIXTURES / f"{name}-{stage}.msgpack").write_bytes(data)


def test_folding_the_seeded_log_gives_the_stored_snapshot_bytes() -> None:
    log = seeded_log()
    for stage, envelopes in (("half", log[:HALF]), ("full", log)):
        for name, data in _snapshots(envelopes).items():
            assert data == _fixture(name, stage), f"{name} snapshot at {stage} changed"


def test_a_stored_graph_snapshot_restores_to_the_fold_and_encodes_to_the_same_bytes() -> None:
    log = seeded_log()
    folded = GraphProjection()
    folded.apply_all(log)
    stored = _fixture("graph", "full")
    restored = GraphProjection.from_snapshot(stored)
    # Before any read: a read may re-sort the listings, which a snapshot records.
    assert restored.to_snapshot() == stored
    assert restored.position == folded.position == EVENTS
    assert restored.snapshot() == folded.snapshot()
    assert restored.entities_page(3, 10) == folded.entities_page(3, 10)


def test_a_stored_half_way_snapshot_folds_on_to_the_stored_end() -> None:
    log = seeded_log()
    graph = GraphProjection.from_snapshot(_fixture("graph", "half"))
    schemas = SchemaProjection.from_snapshot(_fixture("schemas", "half"))
    conflicts = ConflictsProjection.from_snapshot(_fixture("conflicts", "half"))
    for model in (graph, schemas, conflicts):
        model.apply_all(log[HALF:])
    assert graph.to_snapshot() == _fixture("graph", "full")
    assert schemas.to_snapshot() == _fixture("schemas", "full")
    assert conflicts.to_snapshot() == _fixture("conflicts", "full")
