"""graph_merge decided purely (contract §8.13, §4.3-4.4, §3.5): the pure rules, then the
decision into a projection at chosen wall times."""

from __future__ import annotations

import msgspec
import pytest

from actors.commands import CreateEntities
from actors.decide import decide
from actors.errors import GraphWriteRefusedError
from actors.graph_commands import BatchEntity, GraphRelate, GraphRelateBatch, Provenance
from actors.graph_merge import adopted_properties, links_both, repointed, stored_under
from actors.graph_merge_commands import GraphMerge, GraphMergeResult
from actors.working_graph import WorkingGraph
from eventstore.events import AuditRecorded, DecayApplied, EntitiesMerged
from projections.graph import GraphProjection
from tests.actors.graph_support import DAY, T0, apply_at, run_at
from tests.helpers import entity, graph_with, relation


def relate(
    graph: GraphProjection,
    from_name: str,
    to_name: str,
    relation_type: str,
    weight: float,
    at: int = T0,
    **fields: str,
) -> None:
    provenance = {k: fields.pop(k) for k in list(fields) if k.startswith("source_")}
    run_at(
        graph,
        GraphRelate(
            from_name=from_name,
            from_type="Person",
            to_name=to_name,
            to_type="Person",
            relation=relation_type,
            weight=weight,
            provenance=Provenance(**provenance),
            **fields,  # type: ignore[arg-type]
        ),
        at,
    )


def merge(
    graph: GraphProjection,
    source: str = "Bob",
    target: str = "Robert",
    at: int = T0 + DAY,
    **fields: object,
) -> GraphMergeResult:
    result = run_at(
        graph,
        GraphMerge(source_id=source, target_id=target, reason="same", **fields),  # type: ignore[arg-type]
        at,
    )
    assert isinstance(result, GraphMergeResult)
    return result


def weights(graph: GraphProjection, name: str) -> dict[tuple[str, str, str], float]:
    return {
        (r.from_entity, r.to_entity, r.relation_type): r.weight for r in graph.relations_of(name)
    }


# --- the pure rules ---------------------------------------------------------------------------


def test_only_edges_running_between_source_and_target_link_both() -> None:
    assert links_both(("S", "T", "ALIAS_OF"), "S", "T")
    assert links_both(("T", "S", "KNOWS"), "S", "T")
    assert not links_both(("S", "S", "LIKES"), "S", "T")
    assert not links_both(("S", "X", "KNOWS"), "S", "T")


def test_repointing_replaces_every_source_end_so_a_self_loop_stays_one() -> None:
    assert repointed(("S", "X", "R"), "S", "T") == ("T", "X", "R")
    assert repointed(("X", "S", "R"), "S", "T") == ("X", "T", "R")
    assert repointed(("S", "S", "R"), "S", "T") == ("T", "T", "R")


def test_only_keys_the_target_lacks_are_adopted_sorted_and_the_target_wins() -> None:
    merged, keys = adopted_properties(
        {"role": "engineer", "team": None}, {"role": "manager", "nickname": "Bobby", "age": 40}
    )
    assert keys == ["age", "nickname"]
    assert merged == {"role": "engineer", "team": None, "nickname": "Bobby", "age": 40}


def test_a_symmetric_edge_is_found_under_its_reverse_key_and_others_are_not() -> None:
    graph = GraphProjection()
    relate(graph, "X", "T", "KNOWS", 0.5)
    relate(graph, "X", "T", "MENTORS", 0.5)
    work = WorkingGraph(graph, T0)
    assert stored_under(work, ("T", "X", "KNOWS")) == ("X", "T", "KNOWS")
    assert stored_under(work, ("T", "X", "MENTORS")) is None
    assert stored_under(work, ("X", "T", "MENTORS")) == ("X", "T", "MENTORS")


# --- the decision ---------------------------------------------------------------------------


@pytest.mark.parametrize(("source_weight", "target_weight"), [(0.4, 0.7), (0.7, 0.4)])
def test_a_shared_edge_keeps_the_larger_weight_either_way(
    source_weight: float, target_weight: float
) -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Acme", "WORKS_ON", source_weight)
    relate(graph, "Robert", "Acme", "WORKS_ON", target_weight)
    result = merge(graph)
    assert (result.edges_added, result.edges_consolidated) == (0, 1)
    assert weights(graph, "Robert") == {("Robert", "Acme", "WORKS_ON"): 0.7}


def test_consolidation_confirms_now_keeps_the_earlier_ingestion_and_the_targets_others() -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Acme", "WORKS_ON", 0.9, T0, evidence="bob's", source_session="s-bob")
    relate(
        graph,
        "Robert",
        "Acme",
        "WORKS_ON",
        0.5,
        T0 + DAY,
        evidence="robert's",
        valid_at="2024-01-01",
    )
    merge(graph, at=T0 + 3 * DAY)
    kept = graph.relation("Robert", "Acme", "WORKS_ON")
    details = graph.relation_details("Robert", "Acme", "WORKS_ON")
    assert kept is not None and details is not None
    assert kept.weight == 0.9
    assert (details.last_confirmed, details.ingested_at) == (T0 + 3 * DAY, T0)
    assert (details.evidence, kept.source_session, kept.valid_at) == (
        "robert's",
        None,
        1704067200000,
    )


def test_consolidation_into_an_older_edge_keeps_its_own_ingestion() -> None:
    graph = GraphProjection()
    relate(graph, "Robert", "Acme", "WORKS_ON", 0.5, T0)
    relate(graph, "Bob", "Acme", "WORKS_ON", 0.6, T0 + DAY)
    merge(graph, at=T0 + 2 * DAY)
    details = graph.relation_details("Robert", "Acme", "WORKS_ON")
    assert details is not None
    assert (details.ingested_at, details.last_confirmed) == (T0, T0 + 2 * DAY)


def test_weights_are_compared_as_they_read_now_after_decay() -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Acme", "WORKS_ON", 0.8, T0)
    relate(graph, "Robert", "Acme", "WORKS_ON", 0.7, T0 + 50 * DAY)
    apply_at(graph, [DecayApplied(at=T0 + 50 * DAY, rate=0.996, edge_rate=0.997)], T0 + 50 * DAY)
    merge(graph, at=T0 + 50 * DAY)
    # Bob's 0.8 reads 0.6884 after 50 days: Robert's fresh 0.7 is the larger.
    assert weights(graph, "Robert") == {("Robert", "Acme", "WORKS_ON"): 0.7}


def test_a_symmetric_edge_consolidates_with_its_reverse_on_the_target() -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Carol", "KNOWS", 0.8)
    relate(graph, "Carol", "Robert", "KNOWS", 0.3)
    result = merge(graph)
    assert (result.edges_added, result.edges_consolidated) == (0, 1)
    assert weights(graph, "Robert") == {("Carol", "Robert", "KNOWS"): 0.8}


def test_edges_between_the_two_are_dropped_and_a_sources_self_loop_moves_whole() -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Robert", "ALIAS_OF", 0.9)
    relate(graph, "Robert", "Bob", "MENTORS", 0.4)
    relate(graph, "Bob", "Bob", "TALKS_TO", 0.3)
    result = merge(graph)
    assert (result.self_loops_dropped, result.edges_added) == (2, 1)
    assert weights(graph, "Robert") == {("Robert", "Robert", "TALKS_TO"): 0.3}


def test_a_moved_edge_keeps_every_attribute() -> None:
    graph = GraphProjection()
    relate(
        graph,
        "Bob",
        "Vim",
        "USES",
        0.6,
        T0,
        evidence="said",
        source_type="chat",
        valid_at="2025-01-01",
    )
    relate(graph, "Robert", "Acme", "WORKS_ON", 0.5, T0 + DAY)
    before = graph.relation("Bob", "Vim", "USES"), graph.relation_details("Bob", "Vim", "USES")
    merge(graph, at=T0 + 5 * DAY)
    moved = graph.relation("Robert", "Vim", "USES")
    details = graph.relation_details("Robert", "Vim", "USES")
    assert before[0] is not None and before[1] is not None
    assert moved == msgspec.structs.replace(before[0], from_entity="Robert")
    assert details is not None
    assert (details.evidence, details.ingested_at, details.last_confirmed) == ("said", T0, T0)


def test_the_target_takes_max_confidence_summed_mentions_aliases_and_source_only_keys() -> None:
    graph = GraphProjection()
    run_at(
        graph,
        GraphRelateBatch(
            entities=[
                BatchEntity(
                    local_id="b",
                    name="Bob",
                    entity_type="Person",
                    properties={"aliases": ["Bobby"], "nickname": "B", "role": "x"},
                    confidence=0.9,
                ),
                BatchEntity(
                    local_id="r",
                    name="Robert",
                    entity_type="Person",
                    properties={"aliases": ["Rob"], "role": "engineer"},
                    confidence=0.6,
                ),
            ]
        ),
    )
    relate(graph, "Bob", "Robert", "ALIAS_OF", 0.5)  # Bob mentioned twice, Robert twice
    result = merge(graph, at=T0 + 2 * DAY)
    robert = graph.entity_attributes("Robert")
    assert robert is not None
    assert (robert.confidence, robert.times_mentioned, robert.last_seen) == (0.9, 4, T0 + 2 * DAY)
    assert robert.aliases == ["Rob", "Bob", "Bobby"]
    assert robert.properties == {"role": "engineer", "nickname": "B"}
    assert result.properties_adopted == ["nickname"]
    assert not graph.has_entity("Bob")


def test_an_alias_naming_another_entity_is_dropped_with_a_warning() -> None:
    graph = GraphProjection()
    run_at(
        graph,
        GraphRelateBatch(
            entities=[
                BatchEntity(
                    local_id="b", name="Bob", entity_type="Person", properties={"aliases": "Bobby"}
                ),
                BatchEntity(local_id="r", name="Robert", entity_type="Person"),
            ]
        ),
    )
    run_at(graph, CreateEntities([entity("Bobby")]))  # the memory family checks no aliases
    result = merge(graph)
    robert = graph.entity_attributes("Robert")
    assert robert is not None and robert.aliases == ["Bob"]
    assert result.warnings == ["alias 'Bobby' of 'Robert' is the name of another entity; dropped"]


def test_the_source_observations_the_target_lacks_move_in_order() -> None:
    graph = graph_with(entity("Bob", "person", "tall", "kind"), entity("Robert", "person", "kind"))
    merge(graph)
    assert graph.observations("Robert") == ["kind", "tall"]


def test_a_dry_run_appends_nothing_and_answers_what_the_merge_does() -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Acme", "WORKS_ON", 0.4)
    relate(graph, "Robert", "Acme", "WORKS_ON", 0.7)
    relate(graph, "Bob", "Robert", "ALIAS_OF", 0.9)
    relate(graph, "Carol", "Bob", "MENTORS", 0.5)
    command = GraphMerge(source_id="bob", target_id="robert", reason="same", dry_run=True)
    dry = decide(graph, command, now_ms=T0 + DAY)
    assert dry.events == []
    real = merge(graph, source="bob", target="robert")
    assert dry.result == msgspec.structs.replace(real, dry_run=True)


def test_the_merge_is_marked_for_history_with_what_moved_and_what_was_dropped() -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Acme", "WORKS_ON", 0.4)
    relate(graph, "Robert", "Acme", "WORKS_ON", 0.7)
    relate(graph, "Bob", "Vim", "USES", 0.6)
    relate(graph, "Bob", "Robert", "ALIAS_OF", 0.9)
    events = decide(
        graph, GraphMerge(source_id="Bob", target_id="Robert", reason="same"), now_ms=T0
    ).events
    (marker,) = [e for e in events if isinstance(e, EntitiesMerged)]
    assert marker.sources == ["Bob"] and marker.target == "Robert"
    assert marker.moved_relations == [("Bob", "Vim", "USES")]
    assert sorted(marker.dropped_relations) == [
        ("Bob", "Acme", "WORKS_ON"),
        ("Bob", "Robert", "ALIAS_OF"),
    ]
    assert events[-1] == AuditRecorded(
        action="graph_merge",
        detail={
            "entities": ["Bob", "Robert"],
            "reason": "same",
            "edges_added": 1,
            "edges_consolidated": 1,
            "self_loops_dropped": 1,
            "properties_adopted": 0,
        },
    )


def test_self_unknown_and_ambiguous_references_are_refused_naming_each() -> None:
    graph = graph_with(entity("Bob"), entity("Robert"), entity("Data Lake"), entity("data lake"))
    with pytest.raises(GraphWriteRefusedError, match="with itself"):
        merge(graph, source="bob", target="Bob")
    with pytest.raises(GraphWriteRefusedError) as missing:
        merge(graph, source="Zed", target="Yan")
    assert len(missing.value.problems) == 2
    assert missing.value.problems[0].startswith("source_id")
    assert missing.value.problems[1].startswith("target_id")
    with pytest.raises(GraphWriteRefusedError, match="ambiguous"):
        merge(graph, source="data-lake", target="Bob")


def test_adopted_properties_past_the_element_limit_are_refused() -> None:
    graph = GraphProjection()
    run_at(
        graph,
        GraphRelateBatch(
            entities=[
                BatchEntity(
                    local_id="b", name="Bob", entity_type="Person", properties={"a": "x" * 60}
                ),
                BatchEntity(
                    local_id="r", name="Robert", entity_type="Person", properties={"b": "y" * 60}
                ),
            ]
        ),
    )
    with pytest.raises(GraphWriteRefusedError, match="limit is 100"):
        merge(graph, max_properties_chars=100)
    assert graph.has_entity("Bob")


def test_merging_entities_of_the_memory_family_keeps_their_relations() -> None:
    graph = graph_with(
        entity("Bob"),
        entity("Robert"),
        entity("Acme", "project"),
        relations=(relation("Bob", "Acme", "works_at"), relation("Robert", "Acme", "works_at")),
    )
    result = merge(graph)
    assert result.edges_consolidated == 1
    assert weights(graph, "Robert") == {("Robert", "Acme", "works_at"): 1.0}


def test_both_directions_of_a_symmetric_edge_on_the_source_become_one_on_the_target() -> None:
    graph = graph_with(
        entity("Bob"),
        entity("Robert"),
        entity("Carol"),
        relations=(relation("Bob", "Carol", "knows"), relation("Carol", "Bob", "knows")),
    )
    result = merge(graph)
    assert (result.edges_added, result.edges_consolidated) == (1, 1)
    assert weights(graph, "Robert") == {("Robert", "Carol", "knows"): 1.0}
