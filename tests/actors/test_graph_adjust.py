"""graph_boost / graph_weaken, graph_delete and graph_audit decided purely (contract §4.5,
§8.3-8.4, 8.15, 8.17)."""

from __future__ import annotations

import pytest

from actors.decide import decide
from actors.errors import (
    AmbiguousReferenceError,
    GraphEdgeNotFoundError,
    GraphEntityNotFoundError,
)
from actors.graph_commands import GraphAdjust, GraphAudit, GraphDelete, GraphRelate
from actors.graph_results import GraphAdjustResult, GraphDeleteResult
from actors.graph_weights import below_prune_threshold
from eventstore.events import AuditRecorded, DecayApplied, RelationUpdated
from projections.graph import GraphProjection
from tests.actors.graph_support import DAY, T0, apply_at, run_at
from tests.helpers import entity, graph_with, relation


def edge(graph: GraphProjection, weight: float = 0.5, relation_type: str = "WORKS_ON") -> None:
    run_at(
        graph,
        GraphRelate(
            from_name="Bob",
            from_type="Person",
            to_name="Project X",
            to_type="Project",
            relation=relation_type,
            weight=weight,
        ),
    )


def adjust(
    graph: GraphProjection, amount: float, *, weaken: bool = False, at: int = T0, **fields: object
) -> GraphAdjustResult:
    command = GraphAdjust(
        from_name=str(fields.pop("from_name", "bob")),
        to_name=str(fields.pop("to_name", "project-x")),
        relation=str(fields.pop("relation", "WORKS_ON")),
        amount=amount,
        weaken=weaken,
        **fields,  # type: ignore[arg-type]
    )
    result = run_at(graph, command, at)
    assert isinstance(result, GraphAdjustResult)
    return result


def test_boost_adds_the_amount_and_repeated_boosts_stop_at_one() -> None:
    graph = GraphProjection()
    edge(graph, 0.5)
    result = adjust(graph, 0.15)
    assert (result.previous_weight, result.new_weight, result.pruned) == (0.5, 0.65, None)
    for _ in range(5):
        result = adjust(graph, 0.15)
    assert result.new_weight == 1.0


def test_weaken_subtracts_and_floors_at_zero() -> None:
    graph = GraphProjection()
    edge(graph, 0.5)
    assert adjust(graph, 0.2, weaken=True).new_weight == 0.3
    assert adjust(graph, 0.9, weaken=True).new_weight == 0.0


@pytest.mark.parametrize(("start", "amount"), [(0.35, 0.3), (0.34, 0.3), (0.5, 0.3)])
def test_weakens_pruned_flag_is_the_prune_comparison(start: float, amount: float) -> None:
    graph = GraphProjection()
    edge(graph, start)
    result = adjust(graph, amount, weaken=True, prune_threshold=0.05)
    assert result.pruned is below_prune_threshold(result.new_weight, 0.05)
    if start == 0.35:
        assert (result.new_weight, result.pruned) == (0.05, False)  # exactly at: kept
    if start == 0.34:
        assert result.pruned is True


def test_boost_confirms_the_edge_now_and_leaves_the_entities_last_seen() -> None:
    graph = GraphProjection()
    edge(graph)
    adjust(graph, 0.1, at=T0 + 3 * DAY)
    details = graph.relation_details("Bob", "Project X", "WORKS_ON")
    bob = graph.entity_attributes("Bob")
    assert details is not None and details.last_confirmed == T0 + 3 * DAY
    assert details.ingested_at == T0
    assert bob is not None and bob.last_seen == T0


def test_boost_starts_from_the_decayed_weight() -> None:
    graph = GraphProjection()
    edge(graph, 0.8)
    apply_at(graph, [DecayApplied(at=T0 + 50 * DAY, rate=0.996, edge_rate=0.997)], T0 + 50 * DAY)
    result = adjust(graph, 0.1, at=T0 + 50 * DAY)
    assert result.previous_weight == round(0.8 * 0.997**50, 6)  # ~0.6884


def test_a_missing_edge_or_entity_is_an_error_pointing_to_graph_relate() -> None:
    graph = GraphProjection()
    edge(graph)
    with pytest.raises(GraphEdgeNotFoundError) as missing:
        adjust(graph, 0.1, relation="LEADS")
    assert "graph_relate" in missing.value.message
    with pytest.raises(GraphEntityNotFoundError) as nobody:
        adjust(graph, 0.1, from_name="Nobody")
    assert "graph_relate" in nobody.value.message


def test_symmetric_edges_are_found_from_either_side_and_other_families_spellings_too() -> None:
    graph = GraphProjection()
    edge(graph, 0.5, "KNOWS")
    assert (
        adjust(graph, 0.1, from_name="Project X", to_name="Bob", relation="knows").new_weight == 0.6
    )
    other = graph_with(entity("A"), entity("B"), relations=(relation("A", "B", "knows"),))
    assert (
        adjust(other, 0.1, weaken=True, from_name="a", to_name="b", relation="knows").new_weight
        == 0.9
    )


def test_a_reason_rides_in_an_audit_event_of_the_same_decision() -> None:
    graph = GraphProjection()
    edge(graph)
    command = GraphAdjust(
        from_name="Bob",
        to_name="Project X",
        relation="WORKS_ON",
        amount=0.3,
        weaken=True,
        reason="user corrected",
        tool="graph_weaken",
    )
    events = decide(graph, command, now_ms=T0).events
    assert isinstance(events[0], RelationUpdated)
    assert events[1] == AuditRecorded(
        action="graph_weaken",
        detail={
            "entities": ["Bob", "Project X"],
            "relation": "WORKS_ON",
            "previous_weight": 0.5,
            "new_weight": 0.2,
            "reason": "user corrected",
        },
    )


def test_delete_removes_the_entity_and_its_edges_and_an_unknown_one_is_not_found() -> None:
    graph = GraphProjection()
    edge(graph)
    result = run_at(graph, GraphDelete(entity_id="project-x", reason="obsolete"))
    assert result == GraphDeleteResult(
        reference="project-x",
        found=True,
        id="project-x",
        name="Project X",
        entity_type="Project",
        edges_removed=1,
    )
    assert not graph.has_entity("Project X") and graph.relation_count() == 0
    assert decide(graph, GraphDelete(entity_id="ghost"), now_ms=T0).events == []
    missing = run_at(graph, GraphDelete(entity_id="ghost"))
    assert missing == GraphDeleteResult(reference="ghost", found=False)


def test_delete_refuses_an_ambiguous_reference() -> None:
    graph = graph_with(entity("Data Lake"), entity("data lake"))
    with pytest.raises(AmbiguousReferenceError):
        run_at(graph, GraphDelete(entity_id="data-lake"))
    assert graph.entity_count() == 2


def test_audit_data_cannot_forge_the_servers_event_or_timestamp() -> None:
    command = GraphAudit(
        event="run_end",
        timestamp="2026-01-01T00:00:00.000Z",
        data={"event": "error", "errors": 0, "timestamp": "1999"},
    )
    (event,) = decide(GraphProjection(), command, now_ms=T0).events
    assert isinstance(event, AuditRecorded)
    assert list(event.detail.items()) == [
        ("errors", 0),
        ("event", "run_end"),
        ("timestamp", "2026-01-01T00:00:00.000Z"),
    ]


def test_graph_commands_need_a_time_to_be_decided_at() -> None:
    with pytest.raises(ValueError, match="now_ms"):
        decide(GraphProjection(), GraphDelete(entity_id="x"))
