"""graph_decay and graph_prune decided purely at chosen times (contract §6, §8.9, §8.10, §13's
decay and prune checks, and graphmem's own: non-compounding decay, Reasoning and ad-hoc types,
prune execute equal to its preview and atomic, weaken's `pruned` agreeing with prune)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.decide import decide
from actors.errors import GraphWriteRefusedError
from actors.graph_commands import (
    BatchEntity,
    BatchRelation,
    GraphAdjust,
    GraphRelate,
    GraphRelateBatch,
)
from actors.graph_maintenance import (
    GraphDecayResult,
    GraphPrune,
    GraphPruneResult,
    decay_command,
    prune_preview,
)
from actors.graph_tunables import Decay
from actors.working_graph import WorkingGraph
from eventstore.events import DecayApplied, EntityDeleted, RelationDeleted
from projections.graph import GraphProjection
from projections.graph_family import Reading
from tests.actors.graph_support import DAY, T0, apply_at, run_at

DECAY = Decay()


def relate(
    graph: GraphProjection,
    source: tuple[str, str],
    target: tuple[str, str],
    relation: str = "RELATED_TO",
    weight: float = 0.5,
    at: int = T0,
) -> None:
    run_at(
        graph,
        GraphRelate(
            from_name=source[0],
            from_type=source[1],
            to_name=target[0],
            to_type=target[1],
            relation=relation,
            weight=weight,
        ),
        at,
    )


def batch(
    graph: GraphProjection,
    entities: list[tuple[str, str, float]],
    relations: list[tuple[str, str, str, float]] = (),  # type: ignore[assignment]
    at: int = T0,
    **properties: dict[str, object],
) -> None:
    run_at(
        graph,
        GraphRelateBatch(
            entities=[
                BatchEntity(
                    local_id=name,
                    name=name,
                    entity_type=kind,
                    confidence=confidence,
                    properties=properties.get(name, {}),
                )
                for name, kind, confidence in entities
            ],
            relations=[
                BatchRelation(from_ref=a, to_ref=b, relation=r, weight=w)
                for a, b, r, w in relations
            ],
        ),
        at,
    )


def decay(graph: GraphProjection, at: int, **fields: object) -> GraphDecayResult:
    command = decay_command(DECAY, **fields)  # type: ignore[arg-type]
    result = run_at(graph, command, at)
    assert isinstance(result, GraphDecayResult)
    return result


def confidence(graph: GraphProjection, name: str) -> float:
    return Reading(graph).confidence(name)


def weight(graph: GraphProjection, key: tuple[str, str, str]) -> float:
    facts = Reading(graph).edge(key)
    assert facts is not None
    return facts.weight


# --- §13's decay checks -------------------------------------------------------------------


def test_a_person_at_0_8_last_seen_30_days_ago_decays_to_0_8_times_0_998_to_the_30th() -> None:
    graph = GraphProjection()
    batch(graph, [("Alice", "Person", 0.8)])
    result = decay(graph, T0 + 30 * DAY)
    assert (
        confidence(graph, "Alice") == round(0.8 * 0.998**30, 6) == pytest.approx(0.7534, abs=1e-4)
    )
    assert result.report.nodes_decayed == 1
    assert result.report.details[0].old == 0.8


def test_a_project_decays_faster_than_a_preference() -> None:
    graph = GraphProjection()
    batch(graph, [("Atlas", "Project", 0.8), ("Dark mode", "Preference", 0.8)])
    decay(graph, T0 + 100 * DAY)
    assert confidence(graph, "Atlas") < confidence(graph, "Dark mode") < 0.8


def test_the_floor_holds_at_0_01_for_an_event_after_1000_days() -> None:
    graph = GraphProjection()
    batch(graph, [("Launch", "Event", 0.5)])
    decay(graph, T0 + 1000 * DAY)
    assert confidence(graph, "Launch") == 0.01


def test_nothing_decays_within_a_day() -> None:
    graph = GraphProjection()
    batch(graph, [("Alice", "Person", 0.8)], [("Alice", "Alice", "KNOWS", 0.8)])
    result = decay(graph, T0 + DAY - 1)
    assert (result.report.nodes_decayed, result.report.edges_decayed) == (0, 0)
    assert confidence(graph, "Alice") == 0.8


def test_an_edge_at_0_8_confirmed_50_days_ago_decays_to_0_8_times_0_997_to_the_50th() -> None:
    graph = GraphProjection()
    relate(graph, ("Bob", "Person"), ("Atlas", "Project"), "WORKS_ON", 0.8)
    result = decay(graph, T0 + 50 * DAY)
    key = ("Bob", "Atlas", "WORKS_ON")
    assert weight(graph, key) == round(0.8 * 0.997**50, 6) == pytest.approx(0.6884, abs=1e-4)
    assert result.report.edges_decayed == 1
    assert result.report.edge_details[0].key == key


def test_a_dry_run_writes_nothing_and_reports_what_the_run_would_do() -> None:
    graph = GraphProjection()
    relate(graph, ("Bob", "Person"), ("Atlas", "Project"), "WORKS_ON", 0.8)
    decision = decide(graph, decay_command(DECAY, dry_run=True), now_ms=T0 + 50 * DAY)
    assert decision.events == []
    assert confidence(graph, "Bob") == 0.8
    dry = decision.result
    real = decay(graph, T0 + 50 * DAY)
    assert dry.report == real.report and dry.dry_run and not real.dry_run


def test_a_dry_run_at_a_later_time_previews_decay_then() -> None:
    graph = GraphProjection()
    batch(graph, [("Alice", "Person", 0.8)])
    preview = decide(
        graph, decay_command(DECAY, dry_run=True, at=T0 + 30 * DAY), now_ms=T0 + 1
    ).result
    assert preview.report.at == T0 + 30 * DAY
    assert preview.report.details[0].new == round(0.8 * 0.998**30, 6)
    assert confidence(graph, "Alice") == 0.8


def test_an_event_at_0_5_500_days_old_whose_only_edge_weighs_0_04_is_flagged_for_pruning() -> None:
    graph = GraphProjection()
    batch(
        graph,
        [("Launch", "Event", 0.5), ("Alice", "Person", 0.9)],
        [("Alice", "Launch", "ATTENDED", 0.04)],
    )
    report = decay(graph, T0 + 500 * DAY).report
    assert report.nodes_flagged == 1  # Launch; Alice keeps 0.9 x 0.998^500 = 0.33
    assert report.edges_below == 1


# --- graphmem's own decay decisions ---------------------------------------------------------


def test_two_runs_30_days_apart_give_exactly_what_one_run_at_the_end_gives() -> None:
    once, twice = GraphProjection(), GraphProjection()
    for graph in (once, twice):
        batch(graph, [("Alice", "Person", 0.8)], [("Alice", "Alice", "KNOWS", 0.7)])
    decay(twice, T0 + 30 * DAY)
    second = decay(twice, T0 + 60 * DAY)
    decay(once, T0 + 60 * DAY)
    assert confidence(twice, "Alice") == confidence(once, "Alice") == round(0.8 * 0.998**60, 6)
    key = ("Alice", "Alice", "KNOWS")
    assert weight(twice, key) == weight(once, key) == round(0.7 * 0.997**60, 6)
    assert second.report.details[0].old == round(0.8 * 0.998**30, 6)


def test_running_decay_twice_the_same_day_changes_nothing_the_second_time() -> None:
    graph = GraphProjection()
    batch(graph, [("Alice", "Person", 0.8)])
    decay(graph, T0 + 30 * DAY)
    again = decay(graph, T0 + 30 * DAY + 3_600_000)
    assert again.report.nodes_decayed == 0
    assert confidence(graph, "Alice") == round(0.8 * 0.998**30, 6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=2000), min_size=1, max_size=6),
    st.floats(min_value=0.0, max_value=1.0).map(lambda v: round(v, 6)),
)
def test_any_sequence_of_runs_gives_the_value_of_the_newest_run_alone(
    run_days: list[int], base: float
) -> None:
    graph, alone = GraphProjection(), GraphProjection()
    for g in (graph, alone):
        batch(g, [("Alice", "Person", base)], [("Alice", "Alice", "KNOWS", base)])
    rates = decay_command(DECAY).rates
    for days in run_days:  # in any order: only the newest matters
        run = DecayApplied(
            at=T0 + days * DAY,
            rate=rates.rate,
            rates=rates.rates,
            edge_rate=rates.edge_rate,
            floor=rates.floor,
        )
        apply_at(graph, [run], T0 + 3000 * DAY)
    decay(alone, T0 + max(run_days) * DAY)
    key = ("Alice", "Alice", "KNOWS")
    assert confidence(graph, "Alice") == confidence(alone, "Alice")
    assert weight(graph, key) == weight(alone, key)
    expected = (
        base if max(run_days) < 1 else min(base, round(max(0.01, base * 0.998 ** max(run_days)), 6))
    )
    assert math.isclose(confidence(graph, "Alice"), expected, abs_tol=1e-9)


def test_reasoning_and_ad_hoc_types_decay_at_their_rate_and_the_default() -> None:
    graph = GraphProjection()
    batch(
        graph,
        [("Why", "Reasoning", 0.8), ("Rust", "Technology", 0.8), ("Acme", "organization", 0.8)],
    )
    decay(graph, T0 + 100 * DAY)
    expected = round(0.8 * 0.996**100, 6)
    assert confidence(graph, "Why") == confidence(graph, "Rust") == expected
    assert confidence(graph, "Acme") == expected


def test_types_match_their_rate_case_insensitively() -> None:
    graph = GraphProjection()
    batch(graph, [("Alice", "person", 0.8)])
    decay(graph, T0 + 30 * DAY)
    assert confidence(graph, "Alice") == round(0.8 * 0.998**30, 6)


def test_rule_entities_and_every_edge_touching_one_never_decay() -> None:
    graph = GraphProjection()
    batch(
        graph,
        [("Tabs", "Preference", 0.8), ("Alice", "Person", 0.8)],
        [("Alice", "Tabs", "PREFERS", 0.6)],
        Tabs={"subtype": "rule"},
    )
    report = decay(graph, T0 + 400 * DAY).report
    assert confidence(graph, "Tabs") == 0.8
    assert weight(graph, ("Alice", "Tabs", "PREFERS")) == 0.6
    assert (report.nodes_decayed, report.edges_decayed) == (1, 0)  # Alice alone


def test_a_touch_writes_the_decayed_value_and_resets_the_reference() -> None:
    graph = GraphProjection()
    relate(graph, ("Bob", "Person"), ("Atlas", "Project"), "WORKS_ON", 0.8)
    decay(graph, T0 + 50 * DAY)
    decayed_weight = round(0.8 * 0.997**50, 6)
    # A weaker re-assertion: max rule on the decayed weight, then the mention boost.
    relate(graph, ("Bob", "Person"), ("Atlas", "Project"), "WORKS_ON", 0.1, at=T0 + 50 * DAY)
    touched = round(decayed_weight + 0.05, 6)
    assert weight(graph, ("Bob", "Atlas", "WORKS_ON")) == touched
    decay(graph, T0 + 60 * DAY)  # counts 10 days from the touch, not 60 from creation
    assert weight(graph, ("Bob", "Atlas", "WORKS_ON")) == round(touched * 0.997**10, 6)


def test_details_list_at_most_100_largest_drop_first_then_name() -> None:
    graph = GraphProjection()
    entities = [(f"P{i:03}", "Person", round(0.2 + i / 500, 6)) for i in range(150)]
    entities.append(("Same", "Person", entities[-1][2]))
    batch(graph, entities)
    details = decay(graph, T0 + 30 * DAY).report.details
    assert len(details) == 100
    assert [d.name for d in details[:2]] == ["P149", "Same"]
    drops = [round(d.old - d.new, 6) for d in details]
    assert drops == sorted(drops, reverse=True)


def test_a_run_older_than_the_newest_changes_nothing() -> None:
    graph = GraphProjection()
    batch(graph, [("Alice", "Person", 0.8)])
    decay(graph, T0 + 60 * DAY)
    old = decide(graph, decay_command(DECAY, dry_run=True), now_ms=T0 + 30 * DAY).result
    assert old.report.nodes_decayed == 0


def test_decay_and_prune_refuse_to_be_a_step_of_a_transaction() -> None:
    graph = GraphProjection()
    with pytest.raises(GraphWriteRefusedError, match="on its own"):
        decide(WorkingGraph(graph, T0), decay_command(DECAY), now_ms=T0)
    with pytest.raises(GraphWriteRefusedError, match="on its own"):
        decide(WorkingGraph(graph, T0), GraphPrune(), now_ms=T0)


# --- prune ------------------------------------------------------------------------------------


def prune(graph: GraphProjection, at: int, **fields: object) -> GraphPruneResult:
    result = run_at(graph, GraphPrune(**fields), at)  # type: ignore[arg-type]
    assert isinstance(result, GraphPruneResult)
    return result


def aged_graph() -> GraphProjection:
    """An Event that decayed away, a weak edge, a rule entity holding a weak edge, an old
    orphan, a young orphan and a strong pair."""
    graph = GraphProjection()
    batch(
        graph,
        [
            ("Launch", "Event", 0.5),
            ("Alice", "Person", 0.9),
            ("Tabs", "Preference", 0.05),
            ("Faint", "Concept", 0.05),
            ("Old orphan", "Fact", 0.9),
            ("Bob", "Person", 0.9),
        ],
        [
            ("Alice", "Launch", "ATTENDED", 0.04),
            ("Faint", "Tabs", "RELATED_TO", 0.01),
            ("Alice", "Bob", "KNOWS", 0.9),
        ],
        Tabs={"subtype": "rule"},
    )
    batch(graph, [("Young orphan", "Fact", 0.9)], at=T0 + 490 * DAY)
    decay(graph, T0 + 500 * DAY)
    return graph


def test_prune_selects_weak_edges_faded_entities_and_old_orphans_never_rules() -> None:
    graph = aged_graph()
    preview = prune_preview(graph, GraphPrune(), T0 + 500 * DAY)
    assert [(e.from_id, e.to_id, e.relation_type) for e in preview.edges] == [
        ("alice", "launch", "ATTENDED")
    ]
    assert [(n.name, n.reason) for n in preview.nodes] == [
        ("Launch", "low_confidence"),
        ("Old orphan", "orphan"),
    ]
    launch = preview.nodes[0]
    assert (launch.edge_count, launch.entity_type) == (1, "Event")


def test_prune_execute_removes_exactly_its_preview_in_one_command_edges_first() -> None:
    graph = aged_graph()
    at = T0 + 500 * DAY
    preview = prune_preview(graph, GraphPrune(), at)
    decision = decide(graph, GraphPrune(), now_ms=at)
    events = decision.events
    assert [type(e) for e in events] == [RelationDeleted, EntityDeleted, EntityDeleted]
    assert decision.result.edges == preview.edges and decision.result.nodes == preview.nodes
    run_at(graph, GraphPrune(), at)
    assert not graph.has_entity("Launch") and not graph.has_entity("Old orphan")
    assert graph.has_entity("Faint") and graph.has_entity("Tabs")
    assert prune_preview(graph, GraphPrune(), at) == GraphPruneResult(edges=[], nodes=[])


def test_a_faded_entitys_weak_edges_are_listed_and_deleted_before_it() -> None:
    graph = GraphProjection()
    batch(
        graph,
        [("Faint", "Concept", 0.05), ("Bob", "Person", 0.9)],
        [("Faint", "Bob", "KNOWS", 0.6)],
    )
    decision = decide(graph, GraphPrune(edge_threshold=0.7), now_ms=T0)
    assert [type(e) for e in decision.events] == [RelationDeleted, EntityDeleted]
    assert [n.name for n in decision.result.nodes] == ["Faint"]
    assert decision.result.extra_edges == []


def test_a_young_orphan_and_include_orphans_false_keep_orphans() -> None:
    graph = aged_graph()
    at = T0 + 500 * DAY
    preview = prune_preview(graph, GraphPrune(include_orphans=False), at)
    assert [n.name for n in preview.nodes] == ["Launch"]
    preview = prune_preview(graph, GraphPrune(max_age_days=1000), at)
    assert [n.name for n in preview.nodes] == ["Launch"]


@pytest.mark.parametrize(("amount", "pruned"), [(0.45, False), (0.450001, True)])
def test_weakens_pruned_flag_agrees_with_what_prune_removes(amount: float, pruned: bool) -> None:
    graph = GraphProjection()
    relate(graph, ("Bob", "Person"), ("Atlas", "Project"), "WORKS_ON", 0.5)
    result = run_at(
        graph,
        GraphAdjust(
            from_name="bob", to_name="atlas", relation="WORKS_ON", amount=amount, weaken=True
        ),
    )
    assert result.pruned is pruned  # type: ignore[union-attr]
    selected = prune_preview(graph, GraphPrune(), T0).edges
    assert bool(selected) is pruned


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.floats(min_value=0.0, max_value=1.0).map(lambda v: round(v, 2)), min_size=1, max_size=12
    ),
    st.integers(min_value=0, max_value=900),
)
def test_prune_execute_always_removes_exactly_what_its_preview_lists(
    weights: list[float], age_days: int
) -> None:
    graph = GraphProjection()
    names = [f"E{i}" for i in range(len(weights) + 1)]
    batch(
        graph,
        [
            (n, "Event" if i % 2 else "Person", weights[i % len(weights)])
            for i, n in enumerate(names)
        ],
        [(names[i], names[i + 1], "RELATED_TO", w) for i, w in enumerate(weights) if i % 3],
    )
    at = T0 + age_days * DAY
    decay(graph, at)
    preview = prune_preview(graph, GraphPrune(), at)
    decision = decide(graph, GraphPrune(), now_ms=at)
    deleted_edges = {
        (e.from_entity, e.to_entity, e.relation_type)
        for e in decision.events
        if isinstance(e, RelationDeleted)
    }
    deleted_nodes = {e.name for e in decision.events if isinstance(e, EntityDeleted)}
    assert deleted_nodes == {n.name for n in preview.nodes}
    assert {(e.from_id, e.to_id) for e in preview.edges} == {
        (a.lower(), b.lower()) for a, b, _ in deleted_edges
    }


def test_a_preview_follows_every_change_after_an_earlier_one() -> None:
    graph = GraphProjection()
    batch(graph, [("Alice", "Person", 0.9), ("Lonely", "Fact", 0.9)])
    relate(graph, ("Bob", "Person"), ("Atlas", "Project"), "WORKS_ON", 0.5)
    assert prune_preview(graph, GraphPrune(), T0) == GraphPruneResult(edges=[], nodes=[])
    # Time alone: the orphans age (nothing written).
    aged = prune_preview(graph, GraphPrune(), T0 + 31 * DAY)
    assert [(n.name, n.reason) for n in aged.nodes] == [("Alice", "orphan"), ("Lonely", "orphan")]
    # A write: an edge weakened below the threshold.
    run_at(
        graph,
        GraphAdjust(
            from_name="bob", to_name="atlas", relation="WORKS_ON", amount=0.46, weaken=True
        ),
    )
    assert [e.to_id for e in prune_preview(graph, GraphPrune(), T0).edges] == ["atlas"]
    # A decay run: confidences fall below the node threshold.
    decay(graph, T0 + 900 * DAY)
    names = {n.name for n in prune_preview(graph, GraphPrune(), T0 + 900 * DAY).nodes}
    assert {"Bob", "Atlas"} <= names
    # Other thresholds are their own selection.
    strict = prune_preview(graph, GraphPrune(edge_threshold=0.0, node_threshold=0.0), T0)
    assert strict == GraphPruneResult(edges=[], nodes=[])
