"""The checkpoint format is frozen: snapshots written by earlier code restore, byte for byte.

The fixtures under tests/fixtures/snapshots/ were written by the code before the graph
projection became a package (issue 13): the graph, schema and conflict snapshots of a seeded
log, once halfway and once at its end. Folding the same log must give the same bytes, and
restoring the stored bytes must give a model that answers, folds on and snapshots again as
the fold does. Regenerate them only with a projection version bump.

The graph's are version 4 (packed occurrences index their origins, issue 21), of the seeded
log with some events carrying the graph attributes (`attributed_log`); graph-v3-*.msgpack are
the version 3 snapshots of the same log (written by the code before issue 21), kept to show
that this version still restores them (converting their packed occurrences) to the model it
folds; graph-v2-*.msgpack are the version 2 snapshots of the plain seeded log, kept to show
that this version refuses them (its layout lacks the attribute column), so that they are
refolded rather than taken for its own.
"""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import pytest

from eventstore.events import (
    AnyEvent,
    DecayApplied,
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
from projections.graph import GraphProjection, SnapshotError
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


def _attribute_event(rng: random.Random) -> AnyEvent:
    """An event carrying the graph attributes (version 3 of the graph fold)."""
    name, other = rng.choice(NAMES), rng.choice(NAMES)
    kind = rng.randrange(5)
    if kind == 4:
        return DecayApplied(at=rng.randrange(10**12), rate=0.01, rates={"person": 0.02}, floor=0.1)
    if kind == 0:
        return EntityCreated(
            name=name,
            entity_type=rng.choice(TYPES),
            confidence=rng.choice([0.3, 0.9]),
            times_mentioned=rng.randrange(1, 5),
            last_seen=rng.randrange(10**12),
            subtype=rng.choice([None, "lead"]),
            aliases=rng.choice([[], [name.upper()]]),
            properties=rng.choice([{}, {"team": "core"}]),
        )
    if kind == 1:
        return EntityUpdated(
            name=name,
            confidence=rng.choice([None, 0.7]),
            times_mentioned=rng.choice([None, 3]),
            source_file=rng.choice([None, "notes.md"]),
            cleared=rng.choice([[], ["subtype"]]),
        )
    relation_type = rng.choice(["knows", "owns"])
    if kind == 2:
        return RelationCreated(
            from_entity=name,
            to_entity=other,
            relation_type=relation_type,
            evidence=rng.choice([None, "said so"]),
            ingested_at=rng.choice([None, rng.randrange(10**12)]),
        )
    return RelationUpdated(
        from_entity=name,
        to_entity=other,
        relation_type=relation_type,
        evidence=rng.choice([None, "confirmed"]),
        last_confirmed=rng.choice([None, rng.randrange(10**12)]),
        cleared=rng.choice([[], ["invalid_at"], ["evidence", "weight"]]),
    )


def attributed_log() -> list[Envelope]:
    """The seeded log with a quarter of its events replaced by ones carrying attributes."""
    rng = random.Random(14)
    return [
        msgspec.structs.replace(envelope, event=_attribute_event(rng))
        if rng.random() < 0.25
        else envelope
        for envelope in seeded_log()
    ]


def _snapshots(envelopes: list[Envelope]) -> dict[str, bytes]:
    schemas, conflicts = SchemaProjection(), ConflictsProjection()
    for model in (schemas, conflicts):
        model.apply_all(envelopes)
    return {"schemas": schemas.to_snapshot(), "conflicts": conflicts.to_snapshot()}


def _graph_snapshot(envelopes: list[Envelope]) -> bytes:
    graph = GraphProjection()
    graph.apply_all(envelopes)
    return graph.to_snapshot()


def _fixture(name: str, stage: str) -> bytes:
    return (FIXTURES / f"{name}-{stage}.msgpack").read_bytes()


def write_fixtures() -> None:
    """Run once, by hand, with the code whose format is to be frozen."""
    log = seeded_log()
    for stage, envelopes in (("half", log[:HALF]), ("full", log)):
        for name, data in _snapshots(envelopes).items():
            (FIXTURES / f"{name}-{stage}.msgpack").write_bytes(data)
    log = attributed_log()
    for stage, envelopes in (("half", log[:HALF]), ("full", log)):
        (FIXTURES / f"graph-v4-{stage}.msgpack").write_bytes(_graph_snapshot(envelopes))


def test_folding_the_seeded_log_gives_the_stored_snapshot_bytes() -> None:
    log = seeded_log()
    for stage, envelopes in (("half", log[:HALF]), ("full", log)):
        for name, data in _snapshots(envelopes).items():
            assert data == _fixture(name, stage), f"{name} snapshot at {stage} changed"
    log = attributed_log()
    for stage, envelopes in (("half", log[:HALF]), ("full", log)):
        assert _graph_snapshot(envelopes) == _fixture("graph-v4", stage), f"graph at {stage}"


def _attributes(graph: GraphProjection) -> list[object]:
    """Every alive entity's attributes and visible relation's details."""
    return [
        *(graph.entity_attributes(view.name) for view in graph.entities()),
        *(graph.relation_details(*key) for key in graph.relation_keys()),
    ]


def test_a_stored_graph_snapshot_restores_to_the_fold_and_encodes_to_the_same_bytes() -> None:
    log = attributed_log()
    folded = GraphProjection()
    folded.apply_all(log)
    stored = _fixture("graph-v4", "full")
    restored = GraphProjection.from_snapshot(stored)
    # Before any read: a read may re-sort the listings, which a snapshot records.
    assert restored.to_snapshot() == stored
    assert restored.position == folded.position == EVENTS
    assert restored.snapshot() == folded.snapshot()
    assert _attributes(restored) == _attributes(folded)
    assert restored.decay_runs() == folded.decay_runs() != []
    assert any(a.confidence != 0.5 for a in _attributes(folded) if hasattr(a, "confidence"))
    assert restored.entities_page(3, 10) == folded.entities_page(3, 10)


def test_a_stored_half_way_snapshot_folds_on_to_the_stored_end() -> None:
    log = seeded_log()
    schemas = SchemaProjection.from_snapshot(_fixture("schemas", "half"))
    conflicts = ConflictsProjection.from_snapshot(_fixture("conflicts", "half"))
    for model in (schemas, conflicts):
        model.apply_all(log[HALF:])
    assert schemas.to_snapshot() == _fixture("schemas", "full")
    assert conflicts.to_snapshot() == _fixture("conflicts", "full")
    graph = GraphProjection.from_snapshot(_fixture("graph-v4", "half"))
    graph.apply_all(attributed_log()[HALF:])
    assert graph.to_snapshot() == _fixture("graph-v4", "full")


def test_a_version_3_graph_snapshot_restores_to_the_fold_and_encodes_as_version_4() -> None:
    # A checkpoint written before the packed occurrences indexed their origins (main's code
    # before issue 21): read as the upgrade path reads it, it is the model this version folds.
    assert GraphProjection.version == 4
    assert 3 in GraphProjection.readable_versions
    log = attributed_log()
    folded = GraphProjection()
    folded.apply_all(log)
    restored = GraphProjection.from_snapshot(_fixture("graph-v3", "full"))
    assert restored.to_snapshot() == _fixture("graph-v4", "full")
    assert restored.snapshot() == folded.snapshot()
    assert _attributes(restored) == _attributes(folded)
    # Writes that unpack the occurrences (a deletion of a content, a recreation) fold on as
    # they do on the fold's own model.
    half = GraphProjection.from_snapshot(_fixture("graph-v3", "half"))
    half.apply_all(log[HALF:])
    assert half.to_snapshot() == _fixture("graph-v4", "full")
    assert half.snapshot() == folded.snapshot()


@pytest.mark.parametrize("stage", ["half", "full"])
def test_a_version_2_graph_snapshot_is_refused_so_that_the_log_is_refolded(stage: str) -> None:
    # Version 2's fold dropped attribute writes and its layout has no attribute column: its
    # snapshots are not readable by versions 3 and 4, and the decoder says so rather than
    # restoring a model without attributes.
    assert GraphProjection.version == 4
    assert 2 not in GraphProjection.readable_versions
    with pytest.raises(SnapshotError, match="not a graph snapshot"):
        GraphProjection.from_snapshot(_fixture("graph-v2", stage))
