"""The graph fold is a CRDT: its read model depends only on the set of envelopes applied.

Event sets come from several origins with interleaved, often tied clocks over a tiny alphabet,
so creations, deletions, re-creations and concurrent writes collide. Every order, every
grouping and any repetition must give the same snapshot, and that snapshot must equal a
brute-force reading of the rules (docs/architecture.md §3) straight off the set. The snapshot
compared includes the graph attributes (entity confidence, mentions, last seen, subtype, source
file, aliases, properties; relation evidence, ingestion and confirmation times), written and
cleared as last-writer-wins registers; and a snapshot's round trip at any point folds on to
the same model.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import (
    AnyEvent,
    AuditRecorded,
    DecayApplied,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    JsonValue,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    RelationUpdated,
    Stamp,
)
from eventstore.hlc import ms_of
from projections.graph import (
    EntityAttributes,
    EntityView,
    GraphProjection,
    GraphSnapshot,
    RelationDetails,
    RelationView,
)

# Few names and relation keys, weighted, so that events about the same element collide.
NAMES = st.sampled_from(["a", "a", "b", "b", "c"])
CONTENTS = st.sampled_from(["x", "x", "y"])
TYPES = st.sampled_from(["t1", "t2"])
RELATION_TYPES = st.sampled_from(["r", "r", "r", "s"])
WEIGHTS = st.sampled_from([0.5, 1.0, 2.0])
STAMPS = st.sampled_from([None, 1, 2])
ORIGINS = ["n1", "n2", "n3"]
CONFIDENCES = st.none() | st.sampled_from([0.2, 0.9])
COUNTS = st.none() | st.sampled_from([2, 7])
TIMES = st.none() | st.sampled_from([5, 9])
LABELS = st.none() | st.sampled_from(["u", "v"])
ALIASES = st.sampled_from([[], ["A"], ["A", "B"]])
PROPERTIES = st.sampled_from([{}, {"p": 1}, {"p": 2, "q": [1]}])
ENTITY_CLEARS = st.lists(
    st.sampled_from(["confidence", "subtype", "source_file", "aliases", "properties"]),
    max_size=2,
)
RELATION_CLEARS = st.lists(
    st.sampled_from(["weight", "invalid_at", "evidence", "last_confirmed", "properties"]),
    max_size=2,
)

EVENTS: st.SearchStrategy[AnyEvent] = st.one_of(
    st.builds(EntityCreated, name=NAMES, entity_type=TYPES),
    st.builds(EntityCreated, name=NAMES, entity_type=TYPES),
    st.builds(EntityUpdated, name=NAMES, entity_type=st.none() | TYPES),
    st.builds(
        EntityCreated,
        name=NAMES,
        entity_type=TYPES,
        confidence=CONFIDENCES,
        times_mentioned=COUNTS,
        last_seen=TIMES,
        subtype=LABELS,
        source_file=LABELS,
        aliases=ALIASES,
        properties=PROPERTIES,
    ),
    st.builds(
        EntityUpdated,
        name=NAMES,
        confidence=CONFIDENCES,
        times_mentioned=COUNTS,
        last_seen=TIMES,
        subtype=LABELS,
        aliases=st.none() | ALIASES,
        properties=st.none() | PROPERTIES,
    ),
    # An attribute is never both given and cleared by one event: clears come on their own.
    st.builds(EntityUpdated, name=NAMES, cleared=ENTITY_CLEARS),
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
    st.builds(
        RelationCreated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        evidence=LABELS,
        ingested_at=TIMES,
        last_confirmed=TIMES,
    ),
    st.builds(
        RelationUpdated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        evidence=LABELS,
        last_confirmed=TIMES,
    ),
    st.builds(
        RelationUpdated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        cleared=RELATION_CLEARS,
    ),
    st.builds(
        RelationUpdated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        cleared=RELATION_CLEARS,
    ),
    # The shapes graph_relate writes: a creation with its whole window and provenance, and a
    # dated re-assert that re-opens a superseded edge (valid_at given, invalid_at cleared).
    st.builds(
        RelationCreated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        weight=WEIGHTS,
        valid_at=STAMPS,
        invalid_at=STAMPS,
        source_session=st.sampled_from([None, "s1"]),
        source_transcript=st.sampled_from([None, "t.jsonl"]),
        evidence=LABELS,
        ingested_at=TIMES,
        last_confirmed=TIMES,
    ),
    st.builds(
        RelationUpdated,
        from_entity=NAMES,
        to_entity=NAMES,
        relation_type=RELATION_TYPES,
        weight=st.none() | WEIGHTS,
        valid_at=STAMPS,
        last_confirmed=TIMES,
        cleared=st.just(["invalid_at"]),
    ),
    st.builds(RelationDeleted, from_entity=NAMES, to_entity=NAMES, relation_type=RELATION_TYPES),
    st.builds(AuditRecorded, action=st.just("note")),
    st.builds(
        DecayApplied,
        at=st.sampled_from([10, 20]),
        rate=st.sampled_from([0.01, 0.02]),
        rates=st.sampled_from([{}, {"t1": 0.05}]),
        floor=st.none() | st.just(0.1),
    ),
)


@st.composite
def envelope_sets(draw: st.DrawFn, max_size: int = 60) -> list[Envelope]:
    """Distinct envelopes: each origin numbers its own events; clocks are small so they tie."""
    size = draw(st.integers(0, max_size))  # a list's own size averages far smaller
    event = st.tuples(st.sampled_from(ORIGINS), st.integers(0, 8), EVENTS)
    return numbered(draw(st.lists(event, min_size=size, max_size=size)))


def numbered(drawn: list[tuple[str, int, AnyEvent]]) -> list[Envelope]:
    """Envelopes of (origin, clock, event) in log order: each origin numbers its own events
    (one per transaction)."""
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


FoldView = tuple[
    GraphSnapshot,
    tuple[EntityAttributes | None, ...],
    tuple[RelationDetails | None, ...],
    list[DecayApplied],
]


def observed(graph: GraphProjection) -> FoldView:
    """Everything the projection answers about the visible graph, attributes included."""
    snapshot = graph.snapshot()
    return (
        snapshot,
        tuple(graph.entity_attributes(view.name) for view in snapshot.entities),
        tuple(
            graph.relation_details(view.from_entity, view.to_entity, view.relation_type)
            for view in snapshot.relations
        ),
        graph.decay_runs(),
    )


def folded(envelopes: list[Envelope]) -> FoldView:
    graph = GraphProjection()
    graph.apply_all(envelopes)
    return observed(graph)


# --- the rules, read straight off the set ---------------------------------------------------


_RELATION_DEFAULTS: dict[str, JsonValue] = {
    "weight": 1.0,
    "properties": {},
    "valid_at": None,
    "invalid_at": None,
    "source_session": None,
    "source_transcript": None,
    "source_type": None,
}
_ENTITY_FIELDS = (
    "confidence",
    "times_mentioned",
    "last_seen",
    "subtype",
    "source_file",
    "aliases",
    "properties",
)


def reference(envelopes: list[Envelope]) -> GraphSnapshot:
    """The visible graph by the rules (as other fold properties compare theirs with)."""
    return reference_all(envelopes)[0]


def reference_all(envelopes: list[Envelope]) -> FoldView:
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
    attributes_of: list[EntityAttributes | None] = []
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
        # Attributes: the latest creation's, then each newer update's writes and clears.
        attribute_values: dict[str, JsonValue] = {}
        for field in _ENTITY_FIELDS:
            writes = [
                (s, getattr(e, field) if field not in getattr(e, "cleared", ()) else None)
                for s, e in events
                if (isinstance(e, EntityCreated) and s == since)
                or (
                    isinstance(e, EntityUpdated)
                    and s > since
                    and (getattr(e, field) is not None or field in e.cleared)
                )
                if getattr(e, "name", None) == name
            ]
            value = max(writes, key=lambda write: write[0])[1]
            if value is not None and not (
                isinstance(e_value := value, list | dict) and not e_value
            ):
                attribute_values[field] = value
        attribute_values.setdefault("last_seen", ms_of(since[0]))
        attributes_of.append(EntityAttributes(name, **attribute_values))

    relation_fields = ("from_entity", "to_entity", "relation_type")
    keys = {
        tuple(getattr(e, f) for f in relation_fields)
        for _, e in events
        if isinstance(e, RelationCreated)
    }
    visible: list[tuple[Stamp, RelationView, RelationDetails]] = []
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
            attributes[field] = _register(events, key, since, field, _RELATION_DEFAULTS[field])
        base = by_stamp[since]
        assert isinstance(base, RelationCreated)
        at = ms_of(since[0])
        evidence = _register(events, key, since, "evidence", None)
        confirmed = _register(events, key, since, "last_confirmed", None)
        details = RelationDetails(
            *key,
            evidence,
            at if base.ingested_at is None else base.ingested_at,
            at if confirmed is None else confirmed,
        )
        visible.append((since, RelationView(*key, **attributes), details))
    in_order = sorted(visible, key=lambda item: item[0])
    return (
        GraphSnapshot(tuple(entities), tuple(view for _, view, _ in in_order)),
        tuple(attributes_of),
        tuple(details for _, _, details in in_order),
        [e for _, e in events if isinstance(e, DecayApplied)],  # each run once, by stamp
    )


def _register(
    events: list[tuple[Stamp, AnyEvent]],
    key: tuple[str, ...],
    since: Stamp,
    field: str,
    default: JsonValue,
) -> JsonValue:
    """A relation attribute: its latest creation's value, then each newer update's write or
    clear (which reads as the default)."""
    relation_fields = ("from_entity", "to_entity", "relation_type")
    writes = [
        (s, default if field in getattr(e, "cleared", ()) else getattr(e, field))
        for s, e in events
        if isinstance(e, RelationCreated | RelationUpdated)
        and tuple(getattr(e, f) for f in relation_fields) == key
        and (
            (isinstance(e, RelationCreated) and s == since)
            or (
                isinstance(e, RelationUpdated)
                and s > since
                and (getattr(e, field) is not None or field in e.cleared)
            )
        )
    ]
    value = max(writes, key=lambda write: write[0])[1]
    return default if value is None else value


@st.composite
def relation_histories(draw: st.DrawFn) -> list[Envelope]:
    """Both ends of one relation key created first, then writes, clears and deletions of that
    key alone: in the general sets a relation is seldom visible with a clear after it."""
    key = {"from_entity": st.just("a"), "to_entity": st.just("b"), "relation_type": st.just("r")}
    writes = st.one_of(
        st.builds(RelationCreated, **key, weight=WEIGHTS, valid_at=STAMPS, evidence=LABELS),
        st.builds(RelationCreated, **key, ingested_at=TIMES, last_confirmed=TIMES),
        st.builds(
            RelationUpdated,
            **key,
            weight=st.none() | WEIGHTS,
            invalid_at=STAMPS,
            evidence=LABELS,
            last_confirmed=TIMES,
            properties=st.none() | PROPERTIES,
        ),
        st.builds(
            RelationUpdated,
            **key,
            cleared=st.lists(
                st.sampled_from(
                    ["weight", "properties", "invalid_at", "evidence", "last_confirmed"]
                ),
                min_size=1,
                max_size=2,
            ),
        ),
        st.builds(RelationDeleted, **key),
    )
    drawn = draw(
        st.lists(st.tuples(st.sampled_from(ORIGINS), st.integers(1, 8), writes), max_size=12)
    )
    # The ends, then a creation writing every attribute a clear can reset.
    first = RelationCreated(
        from_entity="a",
        to_entity="b",
        relation_type="r",
        weight=2.0,
        properties={"p": 1},
        invalid_at=1,
        evidence="u",
        last_confirmed=9,
    )
    ends = [EntityCreated(name="a", entity_type="t1"), EntityCreated(name="b", entity_type="t1")]
    envelopes = [
        Envelope(position=i, origin="n0", origin_seq=i, hlc=hlc << 16, tx=i, event=event)
        for i, (hlc, event) in enumerate([(0, ends[0]), (0, ends[1]), (1, first)], start=1)
    ]
    sequence: dict[str, int] = defaultdict(int)
    for position, (origin, hlc, event) in enumerate(drawn, start=len(envelopes) + 1):
        sequence[origin] += 1
        seq = sequence[origin]
        envelopes.append(
            Envelope(
                position=position, origin=origin, origin_seq=seq, hlc=hlc << 16, tx=seq, event=event
            )
        )
    return envelopes


# --- properties -----------------------------------------------------------------------------


@given(envelope_sets())
def test_the_fold_follows_the_rules(envelopes: list[Envelope]) -> None:
    assert folded(envelopes) == reference_all(envelopes)


@given(st.data(), relation_histories())
def test_relation_writes_and_clears_follow_the_rules_in_any_order(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    shuffled = data.draw(st.permutations(envelopes))

    assert folded(shuffled) == reference_all(envelopes)


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

    assert observed(graph) == folded(envelopes)


@given(st.data(), envelope_sets())
def test_a_snapshot_round_trip_at_any_point_folds_on_to_the_same_model(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    shuffled = data.draw(st.permutations(envelopes))
    split = data.draw(st.integers(0, len(shuffled)))
    graph = GraphProjection()
    graph.apply_all(shuffled[:split])
    restored = GraphProjection.from_snapshot(graph.to_snapshot())
    restored.apply_all(shuffled[split:])
    direct = GraphProjection()
    direct.apply_all(shuffled)

    assert observed(restored) == observed(direct) == folded(envelopes)
    again = GraphProjection.from_snapshot(direct.to_snapshot())
    assert observed(again) == observed(direct)


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

    assert observed(one_by_one) == observed(replayed) == observed(prefix_then_rest)
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
