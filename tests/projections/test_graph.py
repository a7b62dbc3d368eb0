"""GraphProjection: each fold rule, the read API, ordering and adjacency."""

from __future__ import annotations

import itertools
from typing import Any

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
    SchemaRegistered,
)
from projections.graph import EntityView, GraphProjection, RelationView

_positions = itertools.count(1)


def at(hlc: int, event: AnyEvent, origin: str = "a", seq: int | None = None) -> Envelope:
    """An envelope stamped (hlc, origin, seq); seq defaults to hlc, unique within an origin."""
    return Envelope(
        position=next(_positions),
        origin=origin,
        origin_seq=hlc if seq is None else seq,
        hlc=hlc,
        tx=hlc,
        event=event,
    )


def fold(*envelopes: Envelope) -> GraphProjection:
    graph = GraphProjection()
    graph.apply_all(envelopes)
    return graph


def created(name: str, entity_type: str = "person") -> EntityCreated:
    return EntityCreated(name=name, entity_type=entity_type)


def obs(entity: str, content: str) -> ObservationAdded:
    return ObservationAdded(entity=entity, content=content)


def rel(
    from_entity: str, to_entity: str, relation_type: str = "knows", **attrs: Any
) -> RelationCreated:
    return RelationCreated(
        from_entity=from_entity, to_entity=to_entity, relation_type=relation_type, **attrs
    )


def triples(relations: list[RelationView]) -> list[tuple[str, str, str]]:
    return [(r.from_entity, r.to_entity, r.relation_type) for r in relations]


# --- entities -------------------------------------------------------------------------------


def test_a_created_entity_is_alive_with_its_type_and_observations_in_stamp_order() -> None:
    graph = fold(
        at(1, created("Alice")), at(2, obs("Alice", "likes tea")), at(3, obs("Alice", "b"))
    )

    assert graph.has_entity("Alice")
    assert graph.entity("Alice") == EntityView("Alice", "person", ["likes tea", "b"])
    assert graph.entity_type("Alice") == "person"
    assert graph.entity_count() == 1


def test_an_unknown_name_reads_as_absent() -> None:
    graph = fold(at(1, created("Alice")))

    assert not graph.has_entity("Bob")
    assert graph.entity("Bob") is None
    assert graph.entity_type("Bob") is None
    assert graph.observations("Bob") == []
    assert not graph.has_observation("Bob", "x")
    assert graph.relations_of("Bob") == []


def test_a_deleted_entity_is_gone_with_its_observations() -> None:
    graph = fold(
        at(1, created("Alice")), at(2, obs("Alice", "x")), at(3, EntityDeleted(name="Alice"))
    )

    assert not graph.has_entity("Alice")
    assert graph.entity("Alice") is None
    assert graph.observations("Alice") == []
    assert graph.entity_count() == 0
    assert list(graph.entities()) == []


def test_a_delete_older_than_the_creation_does_not_kill_the_entity() -> None:
    graph = fold(at(5, created("Alice")), at(3, EntityDeleted(name="Alice")))

    assert graph.has_entity("Alice")


def test_a_re_created_entity_starts_fresh() -> None:
    graph = fold(
        at(1, created("Alice", "person")),
        at(2, obs("Alice", "old")),
        at(3, EntityUpdated(name="Alice", entity_type="robot")),
        at(4, EntityDeleted(name="Alice")),
        at(5, created("Alice", "company")),
        at(6, obs("Alice", "new")),
    )

    assert graph.entity("Alice") == EntityView("Alice", "company", ["new"])


def test_re_creation_without_a_delete_also_hides_older_observations() -> None:
    graph = fold(at(1, created("Alice")), at(2, obs("Alice", "old")), at(3, created("Alice", "x")))

    assert graph.entity("Alice") == EntityView("Alice", "x", [])


def test_observations_arriving_before_their_entity_show_once_it_is_created_earlier() -> None:
    graph = fold(at(2, obs("Alice", "b")), at(3, obs("Alice", "c")))
    assert not graph.has_entity("Alice")

    graph.apply(at(1, created("Alice")))

    assert graph.observations("Alice") == ["b", "c"]


def test_a_late_observation_older_than_the_latest_creation_is_rejected() -> None:
    graph = fold(
        at(1, created("Alice")), at(4, EntityDeleted(name="Alice")), at(5, created("Alice"))
    )

    graph.apply(at(2, obs("Alice", "stale")))
    graph.apply(at(6, obs("Alice", "fresh")))

    assert graph.observations("Alice") == ["fresh"]


def test_entity_type_is_last_writer_wins_on_the_stamp_whatever_the_arrival_order() -> None:
    writes = [
        at(1, created("Alice", "person")),
        at(2, EntityUpdated(name="Alice", entity_type="engineer"), origin="a"),
        at(2, EntityUpdated(name="Alice", entity_type="manager"), origin="b"),
        at(3, EntityUpdated(name="Alice")),  # sets nothing
    ]
    for order in itertools.permutations(writes):
        assert fold(*order).entity_type("Alice") == "manager"  # hlc tie: origin "b" > "a"


def test_a_type_update_newer_than_a_re_creation_shows_even_when_it_arrives_first() -> None:
    graph = fold(at(9, EntityUpdated(name="Alice", entity_type="robot")), at(5, created("Alice")))

    assert graph.entity_type("Alice") == "robot"


# --- observations ---------------------------------------------------------------------------


def test_duplicate_contents_are_separate_occurrences() -> None:
    graph = fold(at(1, created("Alice")), at(2, obs("Alice", "x")), at(3, obs("Alice", "x")))

    assert graph.observations("Alice") == ["x", "x"]
    assert graph.has_observation("Alice", "x")


def test_applying_the_same_envelope_twice_adds_one_occurrence() -> None:
    add = at(2, obs("Alice", "x"))
    graph = fold(at(1, created("Alice")), add, add)
    graph.apply(add)

    assert graph.observations("Alice") == ["x"]


def test_a_content_delete_hides_only_older_occurrences_of_that_content() -> None:
    graph = fold(
        at(1, created("Alice")),
        at(2, obs("Alice", "x")),
        at(3, obs("Alice", "y")),
        at(4, obs("Alice", "x")),
        at(5, ObservationDeleted(entity="Alice", content="x")),
        at(6, obs("Alice", "x")),
    )

    assert graph.observations("Alice") == ["y", "x"]


def test_an_occurrence_older_than_a_content_delete_arriving_late_stays_hidden() -> None:
    graph = fold(at(1, created("Alice")), at(5, ObservationDeleted(entity="Alice", content="x")))

    graph.apply(at(3, obs("Alice", "x")))
    graph.apply(at(4, obs("Alice", "y")))

    assert graph.observations("Alice") == ["y"]
    assert not graph.has_observation("Alice", "x")


def test_observations_applied_out_of_order_read_in_stamp_order() -> None:
    graph = fold(
        at(1, created("Alice")),
        at(4, obs("Alice", "d")),
        at(2, obs("Alice", "b")),
        at(3, obs("Alice", "c"), origin="z"),
        at(3, obs("Alice", "c0"), origin="m"),
    )

    assert graph.observations("Alice") == ["b", "c0", "c", "d"]


# --- relations ------------------------------------------------------------------------------


def people(*names: str) -> list[Envelope]:
    return [at(index + 1, created(name)) for index, name in enumerate(names)]


def test_a_relation_between_alive_entities_is_visible_with_its_attributes() -> None:
    graph = fold(
        *people("Alice", "Bob"),
        at(10, rel("Alice", "Bob", weight=0.5, properties={"since": 2020}, valid_at=7)),
    )

    assert graph.has_relation("Alice", "Bob", "knows")
    assert graph.relation_count() == 1
    assert list(graph.relations()) == [
        RelationView("Alice", "Bob", "knows", 0.5, {"since": 2020}, valid_at=7)
    ]


def test_a_deleted_relation_is_hidden_and_a_re_created_one_starts_from_its_creation() -> None:
    graph = fold(
        *people("Alice", "Bob"),
        at(10, rel("Alice", "Bob", weight=0.5, source_type="chat")),
        at(
            11,
            RelationUpdated(
                from_entity="Alice", to_entity="Bob", relation_type="knows", weight=2.0
            ),
        ),
        at(12, RelationDeleted(from_entity="Alice", to_entity="Bob", relation_type="knows")),
    )
    assert not graph.has_relation("Alice", "Bob", "knows")
    assert graph.relation_count() == 0

    graph.apply(at(13, rel("Alice", "Bob")))

    assert list(graph.relations()) == [RelationView("Alice", "Bob", "knows")]


def test_a_relation_is_hidden_while_an_endpoint_is_deleted_and_stays_hidden_after_re_creation() -> (
    None
):
    graph = fold(*people("Alice", "Bob"), at(10, rel("Alice", "Bob")))

    graph.apply(at(11, EntityDeleted(name="Bob")))
    assert graph.relations_of("Alice") == []
    assert graph.relation_count() == 0

    graph.apply(at(12, created("Bob")))
    assert not graph.has_relation("Alice", "Bob", "knows")
    assert graph.relation_count() == 0

    graph.apply(at(13, rel("Alice", "Bob")))
    assert graph.has_relation("Alice", "Bob", "knows")
    assert graph.relation_count() == 1


def test_a_relation_older_than_an_endpoint_re_creation_is_hidden_without_any_delete() -> None:
    graph = fold(*people("Alice", "Bob"), at(10, rel("Alice", "Bob")), at(11, created("Bob")))

    assert graph.has_entity("Bob")
    assert not graph.has_relation("Alice", "Bob", "knows")


def test_a_relation_to_an_entity_created_only_later_stays_hidden() -> None:
    graph = fold(at(1, created("Alice")), at(2, rel("Alice", "Bob")), at(3, created("Bob")))

    assert list(graph.relations()) == []


def test_a_relation_whose_endpoint_creation_arrives_late_but_is_older_shows() -> None:
    graph = fold(at(1, created("Alice")), at(5, rel("Alice", "Bob")))
    assert list(graph.relations()) == []

    graph.apply(at(2, created("Bob")))

    assert triples(list(graph.relations())) == [("Alice", "Bob", "knows")]


def test_relation_weight_is_last_writer_wins_in_any_arrival_order() -> None:
    def update(hlc: int, weight: float, origin: str = "a") -> Envelope:
        event = RelationUpdated(
            from_entity="Alice", to_entity="Bob", relation_type="knows", weight=weight
        )
        return at(hlc, event, origin=origin)

    writes = [
        at(10, rel("Alice", "Bob", weight=1.0)),
        update(12, 3.0),
        update(11, 2.0),
        update(9, 9.0),
    ]
    for order in itertools.permutations(writes):
        graph = fold(*people("Alice", "Bob"), *order)
        (view,) = graph.relations()
        assert view.weight == 3.0


def test_an_update_older_than_the_latest_creation_is_ignored_per_field() -> None:
    graph = fold(
        *people("Alice", "Bob"),
        at(
            12,
            RelationUpdated(
                from_entity="Alice", to_entity="Bob", relation_type="knows", invalid_at=99
            ),
        ),
        at(
            10,
            RelationUpdated(
                from_entity="Alice", to_entity="Bob", relation_type="knows", weight=5.0
            ),
        ),
        at(11, rel("Alice", "Bob", weight=0.25, valid_at=1)),
    )

    assert list(graph.relations()) == [
        RelationView("Alice", "Bob", "knows", 0.25, valid_at=1, invalid_at=99)
    ]


def test_relation_views_are_copies() -> None:
    graph = fold(*people("Alice", "Bob"), at(10, rel("Alice", "Bob", properties={"k": 1})))

    (view,) = graph.relations()
    view.properties["k"] = 2

    assert next(graph.relations()).properties == {"k": 1}


def test_self_relations_are_listed_once() -> None:
    graph = fold(*people("Alice"), at(10, rel("Alice", "Alice")))

    assert triples(graph.relations_of("Alice")) == [("Alice", "Alice", "knows")]
    assert triples(graph.relations_of_any(["Alice", "Alice"])) == [("Alice", "Alice", "knows")]


# --- ordering and adjacency -----------------------------------------------------------------


def test_entities_list_in_creation_stamp_order_whatever_the_arrival_order() -> None:
    graph = fold(at(3, created("C")), at(1, created("A")), at(2, created("B")))

    assert [entity.name for entity in graph.entities()] == ["A", "B", "C"]

    graph.apply(at(4, EntityDeleted(name="A")))
    graph.apply(at(5, created("A")))
    assert [entity.name for entity in graph.entities()] == ["B", "C", "A"]


def test_relations_list_in_creation_stamp_order_and_a_re_creation_moves_to_the_end() -> None:
    graph = fold(
        *people("A", "B", "C"),
        at(12, rel("B", "C")),
        at(10, rel("A", "B")),
        at(11, rel("A", "C")),
    )
    assert triples(list(graph.relations())) == [
        ("A", "B", "knows"),
        ("A", "C", "knows"),
        ("B", "C", "knows"),
    ]

    graph.apply(at(13, RelationDeleted(from_entity="A", to_entity="B", relation_type="knows")))
    graph.apply(at(14, rel("A", "B")))
    assert triples(list(graph.relations())) == [
        ("A", "C", "knows"),
        ("B", "C", "knows"),
        ("A", "B", "knows"),
    ]


def test_relations_of_returns_incoming_and_outgoing_in_creation_order() -> None:
    graph = fold(
        *people("A", "B", "C", "D"),
        at(10, rel("A", "B")),
        at(11, rel("B", "C")),
        at(12, rel("C", "D")),
        at(13, rel("B", "B", "self")),
    )

    assert triples(graph.relations_of("B")) == [
        ("A", "B", "knows"),
        ("B", "C", "knows"),
        ("B", "B", "self"),
    ]
    assert triples(graph.relations_of("D")) == [("C", "D", "knows")]


def test_relations_of_any_lists_each_relation_once_including_links_to_other_nodes() -> None:
    graph = fold(
        *people("A", "B", "C", "D"),
        at(10, rel("A", "B")),
        at(11, rel("B", "C")),
        at(12, rel("C", "D")),
    )

    assert triples(graph.relations_of_any(["B", "A", "missing"])) == [
        ("A", "B", "knows"),
        ("B", "C", "knows"),
    ]
    assert graph.relations_of_any([]) == []


def test_many_relations_on_one_entity_are_all_found() -> None:
    names = [f"n{index}" for index in range(30)]
    graph = fold(
        *people("hub", *names), *(at(100 + i, rel("hub", name)) for i, name in enumerate(names))
    )

    assert [r.to_entity for r in graph.relations_of("hub")] == names
    graph.apply(at(200, EntityDeleted(name="hub")))
    assert graph.relation_count() == 0


# --- position, other events, snapshot --------------------------------------------------------


def test_schema_and_marker_events_are_ignored_but_advance_the_position() -> None:
    graph = GraphProjection()
    graph.apply(
        Envelope(
            position=7,
            origin="a",
            origin_seq=1,
            hlc=1,
            tx=1,
            event=SchemaRegistered(type_name="person", schema_json="{}", digest="d"),
        )
    )
    graph.apply(
        Envelope(position=8, origin="a", origin_seq=2, hlc=2, tx=2, event=AuditRecorded(action="x"))
    )

    assert graph.position == 8
    assert graph.snapshot() == GraphProjection().snapshot()


def test_position_is_the_highest_applied_whatever_the_order() -> None:
    graph = GraphProjection()
    high = Envelope(position=9, origin="a", origin_seq=2, hlc=2, tx=2, event=created("A"))
    low = Envelope(position=3, origin="a", origin_seq=1, hlc=1, tx=1, event=created("B"))
    graph.apply_all([high, low])

    assert graph.position == 9
    assert graph.name == "graph"
    assert isinstance(graph.version, int) and graph.version >= 1


def test_snapshot_captures_entities_observations_and_relations_in_order() -> None:
    graph = fold(*people("A", "B"), at(5, obs("A", "x")), at(10, rel("A", "B")))

    snapshot = graph.snapshot()

    assert snapshot.entities == (EntityView("A", "person", ["x"]), EntityView("B", "person", []))
    assert snapshot.relations == (RelationView("A", "B", "knows"),)
    assert (
        snapshot == fold(at(10, rel("A", "B")), at(5, obs("A", "x")), *people("A", "B")).snapshot()
    )
    assert snapshot != fold(*people("A", "B"), at(10, rel("A", "B"))).snapshot()


def test_creation_key_is_the_latest_creation_stamp_of_an_alive_entity() -> None:
    graph = fold(at(1, created("A")), at(2, EntityDeleted(name="A")), at(3, created("A", "x")))
    graph.apply(at(4, created("B"), origin="b"))
    graph.apply(at(5, EntityDeleted(name="B")))

    assert graph.creation_key("A") == (3, "a", 3)
    assert graph.creation_key("B") is None
    assert graph.creation_key("missing") is None


def test_entities_named_skips_missing_and_repeated_names_in_given_or_listing_order() -> None:
    graph = fold(*people("A", "B", "C"), at(5, obs("C", "x")), at(6, EntityDeleted(name="B")))

    assert graph.entities_named(["C", "missing", "A", "B", "C"]) == [
        EntityView("C", "person", ["x"]),
        EntityView("A", "person", []),
    ]
    assert [e.name for e in graph.entities_named(["C", "A", "C"], listing_order=True)] == ["A", "C"]
    assert graph.entities_named([]) == []
