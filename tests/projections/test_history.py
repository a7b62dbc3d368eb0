"""HistoryProjection: per entity, the positions of every event that touched it, in log order."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eventstore.events import (
    AnyEvent,
    AuditRecorded,
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
from projections.history import EVENT_TAGS, HistoryProjection, kind_of, tag_of, touched
from tests.helpers import stamp


def logged(*events: AnyEvent) -> list[Envelope]:
    """`events` at positions 1, 2, ..., one transaction."""
    return stamp(events)


def indexed(envelopes: list[Envelope]) -> HistoryProjection:
    history = HistoryProjection()
    history.apply_all(envelopes)
    return history


LOG = logged(
    EntityCreated(name="A", entity_type="person"),  # 1
    EntityCreated(name="B", entity_type="person"),  # 2
    ObservationAdded(entity="A", content="likes tea"),  # 3
    RelationCreated(from_entity="A", to_entity="B", relation_type="knows"),  # 4
    SchemaRegistered(type_name="person", schema_json="{}", digest="d"),  # 5
    EntityUpdated(name="A", entity_type="friend"),  # 6
    ObservationDeleted(entity="A", content="likes tea"),  # 7
    RelationDeleted(from_entity="A", to_entity="B", relation_type="knows"),  # 8
    EntityDeleted(name="A"),  # 9
)


def test_every_event_about_an_entity_is_indexed_in_log_order() -> None:
    history = indexed(LOG)

    assert history.positions("A") == [1, 3, 4, 6, 7, 8, 9]
    assert history.positions("B") == [2, 4, 8]
    assert history.position == 9


def test_observations_and_relations_can_be_left_out() -> None:
    history = indexed(LOG)

    assert history.positions("A", observations=False) == [1, 4, 6, 8, 9]
    assert history.positions("A", relations=False) == [1, 3, 6, 7, 9]
    assert history.positions("A", observations=False, relations=False) == [1, 6, 9]


def test_event_types_select_by_tag() -> None:
    history = indexed(LOG)

    assert history.positions("A", event_types={"EntityCreated", "EntityDeleted"}) == [1, 9]
    assert history.positions("A", event_types={"RelationCreated"}, relations=False) == []


def test_a_deleted_entity_is_still_known_and_one_never_touched_is_not() -> None:
    history = indexed(LOG)

    assert history.knows("A")
    assert not history.knows("person")  # a schema's type name is no entity
    assert history.positions("Nobody") == []


def test_schema_and_decay_events_touch_no_entity() -> None:
    assert touched(SchemaRegistered(type_name="t", schema_json="{}", digest="d")) == ()
    assert touched(SchemaRetired(type_name="t")) == ()
    assert touched(DecayApplied(at=1, rate=0.5)) == ()


def test_markers_touch_every_entity_they_name_once() -> None:
    assert touched(EntitiesMerged(sources=["A", "B", "A"], target="C")) == ("A", "B", "C")
    assert touched(EntityRenamed(old_name="A", new_name="B")) == ("A", "B")
    assert touched(EntitySplit(source="C", targets=["A", "B"])) == ("C", "A", "B")


def test_a_self_relation_touches_its_entity_once() -> None:
    history = indexed(logged(RelationCreated(from_entity="A", to_entity="A", relation_type="r")))

    assert history.positions("A") == [1]


def test_audit_notes_touch_the_entities_their_detail_names() -> None:
    assert touched(AuditRecorded(action="x", detail={"entity": "A"})) == ("A",)
    assert touched(AuditRecorded(action="x", detail={"entities": ["A", "B", 3]})) == ("A", "B")
    assert touched(AuditRecorded(action="x", detail={"entity": "A", "entities": ["A"]})) == ("A",)
    assert touched(AuditRecorded(action="x", detail={"other": "A"})) == ()
    assert touched(AuditRecorded(action="x", detail={"entity": 7})) == ()


def test_envelopes_applied_again_add_nothing() -> None:
    history = indexed(LOG)
    history.apply_all(LOG[3:])
    history.apply(LOG[0])

    assert history.positions("A") == [1, 3, 4, 6, 7, 8, 9]


def test_applying_in_chunks_equals_applying_at_once() -> None:
    history = HistoryProjection()
    for start in range(0, len(LOG), 2):
        history.apply_all(LOG[start : start + 2])

    assert history.positions("A") == indexed(LOG).positions("A")


def test_a_snapshot_restores_the_same_index() -> None:
    history = indexed(LOG)

    restored = HistoryProjection.from_snapshot(history.to_snapshot())

    assert restored.position == 9
    for name in ("A", "B"):
        assert restored.positions(name) == history.positions(name)
        assert restored.positions(name, relations=False) == history.positions(name, relations=False)


def test_a_damaged_snapshot_is_refused() -> None:
    with pytest.raises(ValueError, match="not a history snapshot"):
        HistoryProjection.from_snapshot(b"\x01\x02")


def test_every_event_type_has_a_tag_code_and_a_kind() -> None:
    tags = {cls.__struct_config__.tag for cls in get_args(AnyEvent)}

    assert tags == set(EVENT_TAGS)
    assert kind_of("ObservationAdded") == "observation"
    assert kind_of("RelationUpdated") == "relation"
    assert kind_of("EntityRenamed") == "entity"
    assert tag_of(EntityDeleted(name="A")) == "EntityDeleted"


# --- property: the index equals a brute-force scan -----------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d"])
NAME_LISTS = st.lists(NAMES, max_size=3)

EVENTS: st.SearchStrategy[AnyEvent] = st.one_of(
    st.builds(EntityCreated, name=NAMES, entity_type=st.just("t")),
    st.builds(EntityUpdated, name=NAMES, entity_type=st.none() | st.just("u")),
    st.builds(EntityDeleted, name=NAMES),
    st.builds(ObservationAdded, entity=NAMES, content=st.just("x")),
    st.builds(ObservationDeleted, entity=NAMES, content=st.just("x")),
    st.builds(RelationCreated, from_entity=NAMES, to_entity=NAMES, relation_type=st.just("r")),
    st.builds(RelationUpdated, from_entity=NAMES, to_entity=NAMES, relation_type=st.just("r")),
    st.builds(RelationDeleted, from_entity=NAMES, to_entity=NAMES, relation_type=st.just("r")),
    st.builds(SchemaRegistered, type_name=NAMES, schema_json=st.just("{}"), digest=st.just("d")),
    st.builds(SchemaRetired, type_name=NAMES),
    st.builds(EntitiesMerged, sources=NAME_LISTS, target=NAMES),
    st.builds(EntitySplit, source=NAMES, targets=NAME_LISTS),
    st.builds(EntityRenamed, old_name=NAMES, new_name=NAMES),
    st.builds(DecayApplied, at=st.just(1), rate=st.just(0.5)),
    st.builds(
        AuditRecorded,
        action=st.just("note"),
        detail=st.fixed_dictionaries(
            {}, optional={"entity": NAMES, "entities": NAME_LISTS, "other": NAMES}
        ),
    ),
)


def mentions(event: Any, name: str) -> bool:
    """Written from the definition, field by field, independently of `touched`."""
    if isinstance(event, EntityCreated | EntityUpdated | EntityDeleted):
        return bool(event.name == name)
    if isinstance(event, ObservationAdded | ObservationDeleted):
        return bool(event.entity == name)
    if isinstance(event, RelationCreated | RelationUpdated | RelationDeleted):
        return name in (event.from_entity, event.to_entity)
    if isinstance(event, EntitiesMerged):
        return name in event.sources or name == event.target
    if isinstance(event, EntitySplit):
        return name == event.source or name in event.targets
    if isinstance(event, EntityRenamed):
        return name in (event.old_name, event.new_name)
    if isinstance(event, AuditRecorded):
        return event.detail.get("entity") == name or name in event.detail.get("entities", [])
    return False


@given(
    st.lists(EVENTS, max_size=40),
    st.lists(st.integers(min_value=1, max_value=40), max_size=5),
    st.booleans(),
    st.booleans(),
)
def test_the_index_equals_a_scan_for_events_touching_each_name(
    events: list[AnyEvent], cuts: list[int], observations: bool, relations: bool
) -> None:
    log = logged(*events)
    history = HistoryProjection()
    # Fed in arbitrary chunks, some overlapping what was fed already.
    start = 0
    for cut in sorted(cuts):
        history.apply_all(log[max(start - 2, 0) : cut])
        start = cut
    history.apply_all(log[max(start - 2, 0) :])
    left_out = {
        k for k, keep in (("observation", observations), ("relation", relations)) if not keep
    }

    for name in ("a", "b", "c", "d"):
        expected = [
            e.position
            for e in log
            if mentions(e.event, name) and kind_of(tag_of(e.event)) not in left_out
        ]
        assert history.positions(name, observations=observations, relations=relations) == (expected)
        assert history.knows(name) == any(mentions(e.event, name) for e in log)
