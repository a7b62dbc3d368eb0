"""graph_relate decided purely (contract §3-5, §8.2): entities, weights, supersession, batch."""

from __future__ import annotations

import pytest

from actors.decide import decide
from actors.errors import AmbiguousReferenceError, GraphWriteRefusedError
from actors.graph_commands import (
    BatchEntity,
    BatchRelation,
    GraphRelate,
    GraphRelateBatch,
    Provenance,
)
from actors.graph_results import GraphRelateBatchResult, GraphRelateResult
from eventstore.events import DecayApplied, RelationUpdated
from projections.graph import GraphProjection
from projections.graph_time import parse_time
from tests.actors.graph_support import DAY, T0, apply_at, run_at
from tests.helpers import entity, graph_with


def relate(
    graph: GraphProjection,
    from_name: str = "Alice",
    to_name: str = "Project X",
    relation: str = "WORKS_ON",
    *,
    at: int = T0,
    from_type: str = "Person",
    to_type: str = "Project",
    **fields: object,
) -> GraphRelateResult:
    command = GraphRelate(
        from_name=from_name,
        from_type=from_type,
        to_name=to_name,
        to_type=to_type,
        relation=relation,
        **fields,  # type: ignore[arg-type]
    )
    result = run_at(graph, command, at)
    assert isinstance(result, GraphRelateResult)
    return result


def batch(graph: GraphProjection, at: int = T0, **fields: object) -> GraphRelateBatchResult:
    result = run_at(graph, GraphRelateBatch(**fields), at)  # type: ignore[arg-type]
    assert isinstance(result, GraphRelateBatchResult)
    return result


def ms(text: str) -> int:
    return parse_time(text)


# --- entities and edges -----------------------------------------------------------------------


def test_a_new_edge_creates_its_ends_at_the_edge_weight_mentioned_once_and_seen_now() -> None:
    graph = GraphProjection()
    result = relate(graph, relation="works on", weight=0.7, at=T0)
    assert result.action == "created"
    assert result.created_entities == ["Alice", "Project X"]
    assert (result.edge.from_id, result.edge.to_id, result.edge.relation_type) == (
        "alice",
        "project-x",
        "WORKS_ON",
    )
    alice = graph.entity_attributes("Alice")
    assert alice is not None
    assert (alice.confidence, alice.times_mentioned, alice.last_seen) == (0.7, 1, T0)
    assert graph.entity_type("Project X") == "Project"
    details = graph.relation_details("Alice", "Project X", "WORKS_ON")
    assert details is not None and (details.ingested_at, details.last_confirmed) == (T0, T0)


def test_a_higher_weight_replaces_and_a_lower_or_equal_one_adds_the_mention_boost() -> None:
    graph = GraphProjection()
    relate(graph, weight=0.5)
    assert relate(graph, weight=0.8).edge.weight == 0.8
    again = relate(graph, weight=0.7)
    assert again.action == "strengthened" and again.edge.weight == 0.85
    graph2 = GraphProjection()
    relate(graph2, weight=0.7)
    assert relate(graph2, weight=0.7).edge.weight == 0.75


def test_the_mention_boost_never_passes_one() -> None:
    graph = GraphProjection()
    relate(graph, weight=1.0)
    assert relate(graph, weight=0.2).edge.weight == 1.0


def test_confidence_never_goes_down_through_relate_and_every_call_counts_a_mention() -> None:
    graph = GraphProjection()
    relate(graph, weight=0.8, at=T0)
    relate(graph, to_name="Project Y", weight=0.3, at=T0 + DAY)
    alice = graph.entity_attributes("Alice")
    assert alice is not None
    assert (alice.confidence, alice.times_mentioned, alice.last_seen) == (0.8, 2, T0 + DAY)


def test_a_self_loop_counts_one_mention() -> None:
    graph = GraphProjection()
    relate(graph, "Alice", "Alice", "RELATED_TO")
    relate(graph, "Alice", "Alice", "RELATED_TO")
    alice = graph.entity_attributes("Alice")
    assert alice is not None and alice.times_mentioned == 2


def test_an_existing_entity_keeps_its_type_and_the_result_warns() -> None:
    graph = GraphProjection()
    relate(graph)
    result = relate(graph, from_type="Project")
    assert graph.entity_type("Alice") == "Person"
    assert result.warnings == ["entity 'Alice' keeps its type 'Person' (given: 'Project')"]


def test_types_are_written_in_canonical_case() -> None:
    graph = GraphProjection()
    relate(graph, from_type="person", to_type="PROJECT")
    assert (graph.entity_type("Alice"), graph.entity_type("Project X")) == ("Person", "Project")


def test_bad_relation_types_and_times_are_refused_together_and_nothing_is_decided() -> None:
    graph = GraphProjection()
    with pytest.raises(GraphWriteRefusedError) as refused:
        relate(graph, relation="WORKS ON!", from_type="9lives", valid_at="next tuesday")
    message = refused.value.message
    assert "relation" in message and "from_type" in message and "valid_at" in message
    assert graph.entity_count() == 0


def test_references_resolve_case_insensitively_by_alias_and_by_id() -> None:
    graph = GraphProjection()
    batch(
        graph,
        entities=[
            BatchEntity(
                local_id="a", name="Alice Smith", entity_type="Person", properties={"aliases": "Al"}
            )
        ],
    )
    relate(graph, "alice smith", "P", weight=0.6)
    relate(graph, "Al", "P", "LIKES")
    relate(graph, "alice-smith", "P", "KNOWS")
    assert graph.entity_count() == 2
    assert {r.relation_type for r in graph.relations_of("Alice Smith")} == {
        "WORKS_ON",
        "LIKES",
        "KNOWS",
    }


def test_an_ambiguous_reference_is_refused_naming_the_candidates() -> None:
    graph = graph_with(entity("Data Lake", "Concept"), entity("data lake", "Concept"))
    with pytest.raises(AmbiguousReferenceError) as refused:
        relate(graph, "DATA LAKE", "X")
    assert refused.value.candidates == ("Data Lake", "data lake")
    assert "'Data Lake'" in refused.value.message
    assert not graph.has_entity("X")


def test_unicode_names_get_unicode_ids() -> None:
    graph = GraphProjection()
    result = relate(graph, "Zoë", "東京", "LIVES_IN")
    assert (result.edge.from_id, result.edge.to_id) == ("zoë", "東京")


def test_provenance_and_evidence_are_kept_and_the_latest_given_wins() -> None:
    graph = GraphProjection()
    relate(graph, evidence="said so", provenance=Provenance(source_session="s1"))
    relate(graph, evidence="", provenance=Provenance(source_type="manual"))
    relate(graph, evidence="  ")
    view = graph.relation("Alice", "Project X", "WORKS_ON")
    details = graph.relation_details("Alice", "Project X", "WORKS_ON")
    assert view is not None and details is not None
    assert (view.source_session, view.source_type, details.evidence) == ("s1", "manual", "said so")


def test_reserved_edge_properties_are_dropped_with_a_warning_and_null_removes_a_key() -> None:
    graph = GraphProjection()
    first = relate(graph, properties={"role": "lead", "weight": 3, "team": "a"})
    assert first.warnings and "'weight'" in first.warnings[0]
    relate(graph, properties={"team": None})
    view = graph.relation("Alice", "Project X", "WORKS_ON")
    assert view is not None and view.properties == {"role": "lead"}


def test_a_reverse_write_of_a_symmetric_type_reinforces_the_one_edge() -> None:
    graph = GraphProjection()
    relate(graph, "Alice", "Bob", "KNOWS", weight=0.6, to_type="Person")
    result = relate(graph, "Bob", "Alice", "knows", weight=0.6, from_type="Person")
    assert result.action == "strengthened" and result.edge.weight == 0.65
    assert (result.edge.from_id, result.edge.to_id) == ("alice", "bob")
    assert not graph.has_relation("Bob", "Alice", "KNOWS")


def test_a_touch_raises_the_decayed_confidence_and_moves_its_reference() -> None:
    graph = GraphProjection()
    relate(graph, weight=0.8, at=T0)
    run = DecayApplied(at=T0 + 100 * DAY, rate=0.996, rates={"person": 0.998}, edge_rate=0.997)
    apply_at(graph, [run], T0 + 100 * DAY)
    relate(graph, to_name="Y", weight=0.1, at=T0 + 100 * DAY)
    alice = graph.entity_attributes("Alice")
    assert alice is not None
    assert alice.confidence == round(0.8 * 0.998**100, 6)
    assert alice.last_seen == T0 + 100 * DAY
    # The edge re-asserted after decay starts from its decayed weight (§4.1 on the read value).
    again = relate(graph, weight=0.1, at=T0 + 100 * DAY)
    assert again.edge.weight == round(0.8 * 0.997**100 + 0.05, 6)


# --- supersession -----------------------------------------------------------------------------


def test_a_new_dated_target_closes_the_old_edge_at_its_valid_at() -> None:
    graph = GraphProjection()
    relate(graph, to_name="X", valid_at="2025-01-01")
    result = relate(graph, to_name="Y", valid_at="2026-01-01")
    assert [(s.to_id, s.invalid_at) for s in result.superseded] == [("x", ms("2026-01-01"))]
    old = graph.relation("Alice", "X", "WORKS_ON")
    assert old is not None and old.invalid_at == ms("2026-01-01")
    assert graph.has_relation("Alice", "X", "WORKS_ON")  # superseding never deletes


def test_without_valid_at_nothing_is_superseded() -> None:
    graph = GraphProjection()
    relate(graph, "Carol", "Vue", "USES")
    result = relate(graph, "Carol", "Svelte", "USES")
    assert result.superseded == []
    assert all(r.invalid_at is None for r in graph.relations_of("Carol"))


def test_reconfirming_the_same_target_moves_valid_at_and_never_closes_itself() -> None:
    graph = GraphProjection()
    relate(graph, valid_at="2025-01-01")
    result = relate(graph, valid_at="2025-06-01")
    assert result.superseded == []
    assert result.edge.valid_at == ms("2025-06-01") and result.edge.invalid_at is None


def test_several_predecessors_all_close_and_other_types_are_independent() -> None:
    graph = GraphProjection()
    relate(graph, to_name="A", valid_at="2024-01-01")
    relate(graph, to_name="B")
    relate(graph, to_name="C", relation="LIKES")
    result = relate(graph, to_name="D", valid_at="2025-01-01")
    assert sorted(s.to_id for s in result.superseded) == ["a", "b"]
    likes = graph.relation("Alice", "C", "LIKES")
    assert likes is not None and likes.invalid_at is None


def test_a_past_fact_recorded_late_leaves_the_newer_one_current_and_is_itself_over() -> None:
    graph = GraphProjection()
    relate(graph, to_name="New", valid_at="2026-01-01")
    result = relate(graph, to_name="Old", valid_at="2025-01-01")
    assert result.superseded == []
    assert result.edge.invalid_at == ms("2026-01-01")
    newer = graph.relation("Alice", "New", "WORKS_ON")
    assert newer is not None and newer.invalid_at is None


def test_never_supersede_types_keep_every_target_current() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Kid 1", "FAMILY_OF", valid_at="2010-01-01")
    result = relate(graph, "Ann", "Kid 2", "FAMILY_OF", valid_at="2012-01-01")
    assert result.superseded == []


def test_a_dated_reassert_reopens_a_superseded_edge_and_closes_its_sibling() -> None:
    graph = GraphProjection()
    relate(graph, to_name="X", valid_at="2025-01-01")
    relate(graph, to_name="Y", valid_at="2026-01-01")
    command = GraphRelate(
        from_name="Alice",
        from_type="Person",
        to_name="X",
        to_type="Project",
        relation="WORKS_ON",
        valid_at="2026-06-01",
    )
    events = decide(graph, command, now_ms=T0).events
    reopen = [e for e in events if isinstance(e, RelationUpdated) and e.to_entity == "X"]
    assert reopen[0].cleared == ["invalid_at"]
    run_at(graph, command)
    x = graph.relation("Alice", "X", "WORKS_ON")
    y = graph.relation("Alice", "Y", "WORKS_ON")
    assert x is not None and (x.valid_at, x.invalid_at) == (ms("2026-06-01"), None)
    assert y is not None and y.invalid_at == ms("2026-06-01")


def test_an_undated_reassert_of_a_superseded_edge_leaves_its_window_closed() -> None:
    graph = GraphProjection()
    relate(graph, to_name="X", valid_at="2025-01-01", weight=0.5)
    relate(graph, to_name="Y", valid_at="2026-01-01")
    result = relate(graph, to_name="X", weight=0.5)
    assert result.edge.invalid_at == ms("2026-01-01") and result.edge.weight == 0.55


# --- batch ------------------------------------------------------------------------------------


def people(*names: str) -> list[BatchEntity]:
    return [BatchEntity(local_id=n.lower(), name=n, entity_type="Person") for n in names]


def test_a_batch_creates_its_entities_and_edges_with_slug_ids_and_provenance() -> None:
    graph = GraphProjection()
    result = batch(
        graph,
        entities=people("Dave", "Erin", "Frank"),
        relations=[
            BatchRelation(from_ref="dave", to_ref="erin", relation="KNOWS"),
            BatchRelation(from_ref="erin", to_ref="frank", relation="MENTOR_OF", weight=0.9),
        ],
        provenance=Provenance(source_session="s9", source_type="conversation"),
    )
    assert (result.entities_created, result.entities_merged) == (3, 0)
    assert (result.edges_created, result.edges_strengthened) == (2, 0)
    assert [d.id for d in result.entity_details] == ["dave", "erin", "frank"]
    mentor = graph.relation("Erin", "Frank", "MENTOR_OF")
    assert mentor is not None and mentor.weight == 0.9 and mentor.source_session == "s9"
    dave = graph.entity_attributes("Dave")
    assert dave is not None and (dave.confidence, dave.times_mentioned) == (0.5, 1)


def test_batch_confidence_starts_new_entities_and_raises_existing_ones_by_max() -> None:
    graph = GraphProjection()
    batch(graph, entities=[BatchEntity(local_id="x", name="X", entity_type="Fact")])
    batch(graph, entities=[BatchEntity(local_id="x", name="X", entity_type="Fact", confidence=0.8)])
    batch(graph, entities=[BatchEntity(local_id="x", name="X", entity_type="Fact", confidence=0.3)])
    x = graph.entity_attributes("X")
    assert x is not None and (x.confidence, x.times_mentioned) == (0.8, 3)


def test_items_naming_one_entity_fold_into_one_and_count_one_mention() -> None:
    graph = GraphProjection()
    batch(graph, entities=people("Gina"))
    result = batch(
        graph,
        entities=[
            BatchEntity(local_id="g1", name="Gina", entity_type="Person", properties={"a": 1}),
            BatchEntity(local_id="g2", name="gina", entity_type="Person", properties={"b": 2}),
        ],
    )
    assert (result.entities_created, result.entities_merged) == (0, 1)
    gina = graph.entity_attributes("Gina")
    assert gina is not None and gina.times_mentioned == 2 and gina.properties == {"a": 1, "b": 2}


def test_relation_ends_outside_the_entity_list_are_not_counted_as_mentions() -> None:
    graph = GraphProjection()
    batch(graph, entities=people("Hal"))
    batch(
        graph,
        entities=people("Ida"),
        relations=[BatchRelation(from_ref="ida", to_ref="Hal", relation="KNOWS")],
    )
    hal = graph.entity_attributes("Hal")
    assert hal is not None and hal.times_mentioned == 1


def test_a_failing_batch_lists_every_failing_item_by_index_and_writes_nothing() -> None:
    graph = graph_with(entity("Data Lake", "Concept"), entity("data lake", "Concept"))
    before = graph.snapshot()
    with pytest.raises(GraphWriteRefusedError) as refused:
        batch(
            graph,
            entities=[
                *people("Jo", "Kim"),
                BatchEntity(local_id="jo", name="Other", entity_type="Person"),
                BatchEntity(local_id="t", name="T", entity_type="not a type!"),
            ],
            relations=[
                BatchRelation(from_ref="jo", to_ref="kim", relation="KNOWS"),
                BatchRelation(from_ref="jo", to_ref="nobody", relation="KNOWS"),
                BatchRelation(from_ref="jo", to_ref="DATA LAKE", relation="USES"),
                BatchRelation(from_ref="jo", to_ref="kim", relation="BAD RELATION!"),
                BatchRelation(from_ref="jo", to_ref="kim", relation="X", valid_at="soon"),
            ],
        )
    problems = refused.value.problems
    assert [p.split(":")[0] for p in problems] == [
        "entities[2]",
        "entities[3].type",
        "relations[1].to",
        "relations[2].to",
        "relations[3].relation",
        "relations[4].valid_at",
    ]
    assert graph.snapshot() == before


def test_batch_supersession_runs_per_relation_in_order_with_the_date_check() -> None:
    graph = GraphProjection()

    def works_on(target: str, valid_at: str) -> BatchRelation:
        return BatchRelation(from_ref="liz", to_ref=target, relation="WORKS_ON", valid_at=valid_at)

    result = batch(
        graph,
        entities=[
            *people("Liz"),
            *[BatchEntity(local_id=t, name=t, entity_type="Project") for t in "ABC"],
        ],
        relations=[
            works_on("A", "2024-01-01"),
            works_on("C", "2027-01-01"),
            works_on("B", "2025-01-01"),
        ],
    )
    # C (2027) closes A (2024); B (2025), recorded after the newer C, leaves C current and is
    # itself over when C began.
    assert [(s.to_id, s.invalid_at) for s in result.superseded] == [("a", ms("2027-01-01"))]
    assert [d.edge.invalid_at for d in result.edge_details] == [None, None, ms("2027-01-01")]
    c = graph.relation("Liz", "C", "WORKS_ON")
    assert c is not None and c.invalid_at is None


def test_batch_relations_resolve_a_local_id_before_a_name() -> None:
    graph = GraphProjection()
    batch(graph, entities=people("Mo"))
    result = batch(
        graph,
        entities=[BatchEntity(local_id="Mo", name="Nia", entity_type="Person")],
        relations=[BatchRelation(from_ref="Mo", to_ref="mo", relation="KNOWS")],
    )
    assert graph.has_relation("Nia", "Mo", "KNOWS")
    assert result.edge_details[0].edge.from_id == "nia"


def test_an_alias_naming_another_entity_is_refused_with_a_warning() -> None:
    graph = graph_with(entity("Bob"))
    result = batch(
        graph,
        entities=[
            BatchEntity(
                local_id="a",
                name="Alice",
                entity_type="Person",
                properties={"aliases": ["bob", "Ali", "ali", "Alice"]},
            )
        ],
    )
    alice = graph.entity_attributes("Alice")
    assert alice is not None and alice.aliases == ["Ali"]
    assert result.warnings == ["alias 'bob' of 'Alice' is the name of another entity; dropped"]


def test_entity_properties_set_attributes_and_prose_confidence_becomes_a_note() -> None:
    graph = GraphProjection()
    result = batch(
        graph,
        entities=[
            BatchEntity(
                local_id="p",
                name="Tea",
                entity_type="preference",
                properties={
                    "subtype": "rule",
                    "source_file": "prefs.md",
                    "confidence": "pretty sure",
                    "id": "forged",
                },
            )
        ],
    )
    tea = graph.entity_attributes("Tea")
    assert tea is not None
    assert (tea.subtype, tea.source_file, tea.confidence) == ("rule", "prefs.md", 0.5)
    assert tea.properties == {"confidence_note": "pretty sure"}
    assert len(result.warnings) == 2
    batch(
        graph,
        entities=[
            BatchEntity(
                local_id="p", name="Tea", entity_type="Preference", properties={"subtype": None}
            )
        ],
    )
    cleared = graph.entity_attributes("Tea")
    assert cleared is not None and cleared.subtype is None and cleared.source_file == "prefs.md"


def test_properties_that_would_grow_past_the_limit_when_merged_are_refused() -> None:
    graph = GraphProjection()
    relate(graph, properties={"a": "x" * 30}, max_properties_chars=60)
    with pytest.raises(GraphWriteRefusedError) as refused:
        relate(graph, properties={"b": "y" * 30}, max_properties_chars=60)
    assert "edge Alice -[WORKS_ON]-> Project X" in refused.value.message
    view = graph.relation("Alice", "Project X", "WORKS_ON")
    assert view is not None and view.properties == {"a": "x" * 30}
    relate(graph, properties={"a": None, "b": "y" * 30}, max_properties_chars=60)
    with pytest.raises(GraphWriteRefusedError, match="entity 'Ann'"):
        batch(
            graph,
            entities=[
                BatchEntity(
                    local_id="a", name="Ann", entity_type="Person", properties={"n": "z" * 99}
                )
            ],
            max_properties_chars=60,
        )
