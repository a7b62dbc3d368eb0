"""The graph fold is a CRDT: its read model depends only on the set of envelopes applied.

Event sets come from several origins with interleaved, often tied clocks over a tiny alphabet,
so creations, deletions, re-creations and concurrent writes collide. Every order, every
grouping and any repetition must give the same snapshot, and that snapshot must equal a
brute-force reading of the rules (docs/architecture.md §3) straight off the set.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import (
    AnyEvent,
    AuditRecorded,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    Stamp,
)
from projections.graph import EntityView, GraphProjection, GraphSnapshot, RelationView

# Few names and relation keys, weighted, so that events about the same element collide.
NAMES = st.sampled_from(["a", "a", "b", "b", "c"])
CONTENTS = st.sampled_from(["x", "x", "y"])
TYPES = st.sampled_from(["t1", "t2"])
RELATION_TYPES = st.sampled_from(["r", "r", "r", "s"])
WEIGHTS = st.sampled_from([0.5, 1.0, 2.0])
STAMPS = st.sampled_from([None, 1, 2])
ORIGINS = ["n1", "n2", "n3"]

EVENTS: st.SearchStrategy[AnyEvent] = st.one_of(
    st.builds(EntityCreated, name=NAMES, entity_type=TYPES),
    st.builds(EntityCreated, name=NAMES, entity_type=TYPES),
    st.builds(EntityUpdated, name=NAMES, entity_type=st.none() | TYPES),
    st.builds(EntityDeleted, name=NAMES),
    st.builds(ObservationAdded, entity=NAMES, content=CONTENTS),
    st.builds(ObservationAdded, entity=NAMES, content=CONTENTS),
    st.builds(ObservationDeleted, entity=NAMES, content=CONTENTS),
    st.builds(
        RelationCreated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        weight=WEIGHTS,
        valid_at=STAMPS,
        properties=st.sampled_from([{}, {"k": 1}]),
    ),
    st.builds(RelationCreated, from_entity=NAMES, to_entity=NAMES, relation_type=RELATION_TYPES),
    st.builds(
        RelationUpdated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        weight=st.none() | WEIGHTS,
        invalid_at=STAMPS,
        source_type=st.sampled_from([None, "chat"]),
    ),
    st.builds(RelationDeleted, from_entity=NAMES, to_entity=NAMES, relation_type=RELATION_TYPES),
    st.builds(AuditRecorded, action=st.just("note")),
)


@st.composite
def envelope_sets(draw: st.DrawFn, max_size: int = 60) -> list[Envelope]:
    """Distinct envelopes: each origin numbers its own events; clocks are small so they tie."""
    size = draw(st.integers(0, max_size))  # a list's own size averages far smaller
    event = st.tuples(st.sampled_from(ORIGINS), st.integers(0, 8), EVENTS)
    drawn = draw(st.lists(event, min_size=size, max_size=size))
    sequence: dict[str, int] = defaultdict(int)
    envelopes = []
    for position, (origin, hlc, event) in enumerate(drawn, start=1):
        sequence[origin] += 1
        envelopes.append(
            Envelope(
                position=position,
                origin=origin,
                origin_seq=sequence[origin],
                hlc=hlc,
                tx=sequence[origin],
                event=event,
            )
        )
    return envelopes


def folded(envelopes: list[Envelope]) -> GraphSnapshot:
    graph = GraphProjection()
    graph.apply_all(envelopes)
    return graph.snapshot()


# --- the rules, read straight off the set ---------------------------------------------------


def reference(envelopes: list[Envelope]) -> GraphSnapshot:
    """Brute force: every element decided from all the events about it, by the rules alone."""
    by_stamp = {envelope.stamp: envelope.event for envelope in envelopes}
    events = sorted(by_stamp.items(), key=lambda item: item[0])

    def latest(kind: type, *key: str, fields: tuple[str, ...]) -> Stamp | None:
        stamps = [
            s for s, e in events if type(e) is kind and tuple(getattr(e, f) for f in fields) == key
        ]
        return max(stamps) if stamps else None

    entity_fields = ("name",)
    created = {
        e.name: latest(EntityCreated, e.name, fields=entity_fields)
        for _, e in events
        if isinstance(e, EntityCreated)
    }
    alive: dict[str, Stamp] = {}
    for name, stamp in created.items():
        deleted = latest(EntityDeleted, name, fields=entity_fields)
        if stamp is not None and (deleted is None or stamp > deleted):
            alive[name] = stamp

    entities = []
    for name, since in sorted(alive.items(), key=lambda item: item[1]):
        type_writes = [
            (s, e.entity_type)
            for s, e in events
            if isinstance(e, EntityCreated | EntityUpdated)
            and e.name == name
            and e.entity_type is not None
        ]
        observations = []
        for s, e in events:
            if isinstance(e, ObservationAdded) and e.entity == name and s > since:
                deleted = latest(ObservationDeleted, name, e.content, fields=("entity", "content"))
                if deleted is None or s > deleted:
                    observations.append(e.content)
        entities.append(EntityView(name, max(type_writes)[1], observations))

    relation_fields = ("from_entity", "to_entity", "relation_type")
    relations = []
    keys = {
        tuple(getattr(e, f) for f in relation_fields)
        for _, e in events
        if isinstance(e, RelationCreated)
    }
    visible: list[tuple[Stamp, RelationView]] = []
    for key in keys:
        since = latest(RelationCreated, *key, fields=relation_fields)
        deleted = latest(RelationDeleted, *key, fields=relation_fields)
        ends = (key[0], key[1])
        if since is None or (deleted is not None and deleted > since):
            continue
        if not all(end in alive and since > alive[end] for end in ends):
            continue
        attributes: dict[str, Any] = {}
        for field in (
            "weight",
            "properties",
            "valid_at",
            "invalid_at",
            "source_session",
            "source_transcript",
            "source_type",
        ):
            writes = [
                (s, getattr(e, field))
                for s, e in events
                if isinstance(e, RelationCreated | RelationUpdated)
                and tuple(getattr(e, f) for f in relation_fields) == key
                and (isinstance(e, RelationCreated) or getattr(e, field) is not None)
            ]
            attributes[field] = max(writes, key=lambda write: write[0])[1]
        visible.append((since, RelationView(*key, **attributes)))
    relations = [view for _, view in sorted(visible, key=lambda item: item[0])]
    return GraphSnapshot(tuple(entities), tuple(relations))


# --- properties -----------------------------------------------------------------------------


@given(envelope_sets())
def test_the_fold_follows_the_rules(envelopes: list[Envelope]) -> None:
    assert folded(envelopes) == reference(envelopes)


@given(st.data(), envelope_sets())
def test_any_order_gives_the_same_read_model(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    shuffled = data.draw(st.permutations(envelopes))

    assert folded(shuffled) == folded(envelopes)


@given(st.data(), envelope_sets())
def test_duplicates_change_nothing(data: st.DataObject, envelopes: list[Envelope]) -> None:
    repeats = data.draw(st.lists(st.sampled_from(envelopes), max_size=20)) if envelopes else []
    with_repeats = data.draw(st.permutations(envelopes + repeats + envelopes[:3]))

    assert folded(with_repeats) == folded(envelopes)


@given(st.data(), envelope_sets())
def test_any_grouping_with_reads_in_between_gives_the_same_read_model(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    shuffled = data.draw(st.permutations(envelopes))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(shuffled)), max_size=6)))
    graph = GraphProjection()
    start = 0
    for end in [*cuts, len(shuffled)]:
        group = shuffled[start:end]
        if data.draw(st.booleans()):
            graph.apply_all(group)
        else:
            for envelope in group:
                graph.apply(envelope)
        graph.snapshot()  # reads re-sort lazily; they must not disturb what follows
        graph.relations_of_any(["a", "b", "c"])
        start = end

    assert graph.snapshot() == folded(envelopes)


@given(st.data(), envelope_sets())
def test_replay_from_zero_equals_incremental_application(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    one_by_one = GraphProjection()
    for envelope in envelopes:
        one_by_one.apply(envelope)
    split = data.draw(st.integers(0, len(envelopes)))
    prefix_then_rest = GraphProjection()
    prefix_then_rest.apply_all(envelopes[:split])
    prefix_then_rest.snapshot()
    prefix_then_rest.apply_all(envelopes[split:])
    replayed = GraphProjection()
    replayed.apply_all(envelopes)

    assert one_by_one.snapshot() == replayed.snapshot() == prefix_then_rest.snapshot()
    assert one_by_one.position == replayed.position == prefix_then_rest.position
    assert replayed.position == max((e.position for e in envelopes), default=0)


@given(envelope_sets())
def test_point_reads_and_counts_agree_with_the_listings(envelopes: list[Envelope]) -> None:
    graph = GraphProjection()
    graph.apply_all(envelopes)
    entities = list(graph.entities())
    relations = list(graph.relations())

    assert graph.entity_count() == len(entities)
    assert graph.relation_count() == len(relations)
    for view in entities:
        assert graph.entity(view.name) == view
        assert graph.has_entity(view.name)
        assert all(graph.has_observation(view.name, content) for content in view.observations)
    for name in ["a", "b", "c"]:
        touching = [r for r in relations if name in (r.from_entity, r.to_entity)]
        assert graph.relations_of(name) == touching
    for relation in relations:
        assert graph.has_relation(relation.from_entity, relation.to_entity, relation.relation_type)
    assert graph.relations_of_any(["a", "b", "c", "a"]) == relations
    assert graph.entities_named(["c", "b", "a", "c"], listing_order=True) == entities
    keys = [graph.creation_key(view.name) for view in entities]
    assert keys == sorted(keys)  # type: ignore[type-var]
