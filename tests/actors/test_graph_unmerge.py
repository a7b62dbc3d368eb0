"""graph_unmerge decided purely (contract §8.11, §3.4's lookup rules)."""

from __future__ import annotations

import msgspec
import pytest

from actors.commands import CreateEntities
from actors.decide import decide
from actors.errors import GraphWriteRefusedError
from actors.graph_commands import GraphRelate, Provenance
from actors.graph_merge_commands import EdgeToMove, GraphMerge, GraphUnmerge, GraphUnmergeResult
from actors.graph_unmerge import split_key
from eventstore.events import AuditRecorded, EntitySplit
from projections.graph import GraphProjection
from tests.actors.graph_support import DAY, T0, run_at
from tests.helpers import entity, graph_with, relation


def relate(
    graph: GraphProjection, from_name: str, to_name: str, relation_type: str, weight: float = 0.5
) -> None:
    run_at(
        graph,
        GraphRelate(
            from_name=from_name,
            from_type="Person",
            to_name=to_name,
            to_type="Person",
            relation=relation_type,
            weight=weight,
        ),
    )


def out(other: str, relation_type: str) -> EdgeToMove:
    return EdgeToMove(other_entity_id=other, relation_type=relation_type, direction="out")


def into(other: str, relation_type: str) -> EdgeToMove:
    return EdgeToMove(other_entity_id=other, relation_type=relation_type, direction="in")


def unmerge(
    graph: GraphProjection,
    *items: EdgeToMove,
    entity_id: str = "Ann",
    new: str = "Anne",
    new_type: str = "person",
    at: int = T0 + DAY,
    **fields: object,
) -> GraphUnmergeResult:
    command = GraphUnmerge(
        entity_id=entity_id,
        new_entity_name=new,
        new_entity_type=new_type,
        edges_to_move=list(items),
        reason="two people",
        **fields,  # type: ignore[arg-type]
    )
    result = run_at(graph, command, at)
    assert isinstance(result, GraphUnmergeResult)
    return result


def keys(graph: GraphProjection, name: str) -> set[tuple[str, str, str]]:
    return {(r.from_entity, r.to_entity, r.relation_type) for r in graph.relations_of(name)}


def test_split_keys_replace_every_end_that_is_the_original() -> None:
    assert split_key(("A", "X", "R"), "A", "N") == ("N", "X", "R")
    assert split_key(("X", "A", "R"), "A", "N") == ("X", "N", "R")
    assert split_key(("A", "A", "R"), "A", "N") == ("N", "N", "R")


def test_the_listed_edge_moves_and_the_original_keeps_the_rest() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Acme", "WORKS_ON", 0.8)
    relate(graph, "Ann", "Bob", "KNOWS", 0.6)
    result = unmerge(graph, out("bob", "knows"))
    assert (result.new_id, result.new_name, result.new_type) == ("anne", "Anne", "Person")
    assert (result.original_id, result.remaining_edges) == ("ann", 1)
    assert keys(graph, "Anne") == {("Anne", "Bob", "KNOWS")}
    assert keys(graph, "Ann") == {("Ann", "Acme", "WORKS_ON")}
    anne = graph.entity_attributes("Anne")
    assert anne is not None and (anne.confidence, anne.times_mentioned) == (0.5, 1)


def test_a_moved_edge_keeps_every_attribute_its_window_included() -> None:
    graph = GraphProjection()
    run_at(
        graph,
        GraphRelate(
            from_name="Bob",
            from_type="Person",
            to_name="Ann",
            to_type="Person",
            relation="MANAGES",
            weight=0.7,
            properties={"since": 2020},
            evidence="org chart",
            valid_at="2020-01-01",
            provenance=Provenance(source_session="s", source_transcript="t", source_type="chat"),
        ),
    )
    run_at(
        graph,
        GraphRelate(
            from_name="Bob",
            from_type="Person",
            to_name="Carl",
            to_type="Person",
            relation="MANAGES",
            weight=0.7,
            valid_at="2021-01-01",
        ),
        T0 + DAY,
    )  # closes Bob MANAGES Ann
    before = graph.relation("Bob", "Ann", "MANAGES")
    details = graph.relation_details("Bob", "Ann", "MANAGES")
    assert before is not None and before.invalid_at is not None and details is not None
    unmerge(graph, into("Bob", "MANAGES"), at=T0 + 5 * DAY)
    assert graph.relation("Bob", "Anne", "MANAGES") == msgspec.structs.replace(
        before, to_entity="Anne"
    )
    assert graph.relation_details("Bob", "Anne", "MANAGES") == msgspec.structs.replace(
        details, to_entity="Anne"
    )


def test_a_symmetric_edge_is_found_whichever_way_it_is_stored() -> None:
    graph = GraphProjection()
    relate(graph, "Bob", "Ann", "KNOWS")
    unmerge(graph, out("bob", "KNOWS"))
    assert keys(graph, "Anne") == {("Bob", "Anne", "KNOWS")}


def test_another_familys_spelling_is_found_as_given() -> None:
    graph = graph_with(entity("Ann"), entity("Bob"), relations=(relation("Bob", "Ann", "knows"),))
    unmerge(graph, into("Bob", "knows"))
    assert keys(graph, "Anne") == {("Bob", "Anne", "knows")}


def test_a_self_loop_moves_whole_and_an_edge_listed_twice_moves_once() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Ann", "TALKS_TO")
    result = unmerge(graph, out("Ann", "TALKS_TO"), into("ann", "talks to"))
    assert keys(graph, "Anne") == {("Anne", "Anne", "TALKS_TO")}
    assert len(result.moved) == 1 and result.remaining_edges == 0


def test_no_items_only_creates_the_entity_with_the_given_properties() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Bob", "KNOWS")
    result = unmerge(
        graph, properties={"role": "designer", "confidence": 0.8, "aliases": ["Annie"]}
    )
    anne = graph.entity_attributes("Anne")
    assert anne is not None
    assert (anne.confidence, anne.aliases, anne.properties) == (
        0.8,
        ["Annie"],
        {"role": "designer"},
    )
    assert result.moved == [] and result.remaining_edges == 1


def test_every_item_matching_no_edge_is_named_and_nothing_is_written() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Bob", "KNOWS")
    relate(graph, "Ann", "Acme", "WORKS_ON")
    with pytest.raises(GraphWriteRefusedError) as refused:
        unmerge(
            graph,
            out("Bob", "KNOWS"),
            into("Acme", "WORKS_ON"),
            out("Nobody", "KNOWS"),
            out("Bob", "LIKES"),
        )
    problems = refused.value.problems
    assert [p.split(" ")[0] for p in problems] == [
        "edges_to_move[1]",
        "edges_to_move[2]",
        "edges_to_move[3]",
    ]
    assert "no edge Acme -[WORKS_ON]-> Ann" in problems[0]
    assert "names no entity" in problems[1]
    assert not graph.has_entity("Anne")


def test_a_taken_name_a_bad_type_and_an_unknown_entity_are_refused_together() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Bob", "KNOWS")
    with pytest.raises(GraphWriteRefusedError) as refused:
        unmerge(graph, entity_id="Zed", new="bob", new_type="not a type!")
    problems = refused.value.problems
    assert problems[0].startswith("new_entity_type")
    assert problems[1].startswith("entity_id") and "'Zed'" in problems[1]
    assert problems[2].startswith("new_entity_name") and "('Bob')" in problems[2]


def test_the_name_a_merge_left_as_an_alias_is_taken_back() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Bob", "KNOWS")
    relate(graph, "Anne", "Acme", "WORKS_ON")
    run_at(graph, GraphMerge(source_id="Anne", target_id="Ann", reason="same"))
    ann = graph.entity_attributes("Ann")
    assert ann is not None and ann.aliases == ["Anne"]
    result = unmerge(graph, out("acme", "WORKS_ON"), at=T0 + 2 * DAY)
    assert result.new_id == "anne"
    ann = graph.entity_attributes("Ann")
    assert ann is not None and ann.aliases == []
    assert keys(graph, "Anne") == {("Anne", "Acme", "WORKS_ON")}


def test_an_alias_of_another_entity_is_not_taken() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Bob", "KNOWS")
    run_at(graph, CreateEntities([entity("Robert")]))
    run_at(
        graph,
        GraphRelate(
            from_name="Robert",
            from_type="Person",
            to_name="Ann",
            to_type="Person",
            relation="KNOWS",
            weight=0.5,
        ),
    )
    run_at(graph, GraphMerge(source_id="Bob", target_id="Robert", reason="same"))
    with pytest.raises(GraphWriteRefusedError, match="already names an entity"):
        unmerge(graph, new="Bob")


def test_the_split_is_marked_for_history_and_carries_the_reason() -> None:
    graph = GraphProjection()
    relate(graph, "Ann", "Bob", "KNOWS")
    command = GraphUnmerge(
        entity_id="Ann",
        new_entity_name="Anne",
        new_entity_type="Person",
        edges_to_move=[out("Bob", "KNOWS")],
        reason="two people",
    )
    events = decide(graph, command, now_ms=T0).events
    assert events[-2:] == [
        EntitySplit(source="Ann", targets=["Anne"]),
        AuditRecorded(
            action="graph_unmerge",
            detail={
                "entities": ["Ann", "Anne"],
                "moved": [["Anne", "Bob", "KNOWS"]],
                "reason": "two people",
            },
        ),
    ]
