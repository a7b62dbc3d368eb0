"""Transactions are all or nothing, and a WorkingGraph reads exactly like the folded graph.

A transaction of random schema-family commands (some of them invalid) either is refused as a
whole, leaving the graph untouched, or decides exactly the events that deciding its steps one
by one against the graph, folding each step's events in, would. That rests on WorkingGraph:
any events applied on top of any graph must answer every GraphReader question the same as
folding those events into the graph itself.
"""

from __future__ import annotations

from itertools import combinations

from hypothesis import example, given
from hypothesis import strategies as st

from actors.commands import (
    AddEdges,
    AddMetadata,
    AddNodes,
    Command,
    CommitTransaction,
    CommitTransactionResult,
    CreateRelations,
    DeleteEdges,
    DeleteMetadata,
    DeleteNodes,
    EdgeInput,
    EdgeKey,
    EdgeTargets,
    EdgeUpdate,
    EntityUpdate,
    MetadataChange,
    NodeInput,
    NodeUpdate,
    PropertyEntry,
    RelationInput,
    SetNodeProperties,
    UpdateEdges,
    UpdateEntities,
    UpdateNodes,
)
from actors.decide import decide
from actors.errors import CommandRejectedError
from actors.graph_reader import GraphReader
from actors.working_graph import WorkingGraph
from eventstore.events import AnyEvent, EntityCreated, Envelope, RelationCreated
from projections.graph import GraphProjection
from tests.helpers import stamp
from tests.property.test_graph_fold import EVENTS, envelope_sets

NODE_NAMES = ["a", "b", "c", "d"]
NAMES = st.sampled_from(NODE_NAMES)
TYPES = st.sampled_from(["npc", "place"])
EDGE_TYPES = st.sampled_from(["r", "s"])
ENTRIES = st.sampled_from(["Role: x", "role: y", "Home: a", "note"])
WEIGHTS = st.sampled_from([0.0, 0.3, 0.5, 0.5, 1.0, 1.0, 1.5])
MAYBE_WEIGHT = st.none() | WEIGHTS
ENTRY_LISTS = st.lists(ENTRIES, max_size=3)


def _items(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[list[object]]:
    return st.lists(strategy, min_size=1, max_size=2)


COMMANDS: st.SearchStrategy[Command] = st.one_of(
    st.builds(AddNodes, _items(st.builds(NodeInput, NAMES, TYPES, ENTRY_LISTS))),
    st.builds(
        UpdateNodes,
        _items(st.builds(NodeUpdate, NAMES, st.none() | TYPES, st.none() | ENTRY_LISTS)),
    ),
    st.builds(DeleteNodes, st.lists(NAMES, max_size=2), st.none() | TYPES),
    st.builds(AddEdges, _items(st.builds(EdgeInput, NAMES, NAMES, EDGE_TYPES, WEIGHTS))),
    st.builds(
        UpdateEdges,
        _items(
            st.builds(
                EdgeUpdate,
                NAMES,
                NAMES,
                EDGE_TYPES,
                MAYBE_WEIGHT,
                MAYBE_WEIGHT,
                st.none() | NAMES,
                st.none() | NAMES,
                st.none() | EDGE_TYPES,
            )
        ),
    ),
    st.builds(DeleteEdges, _items(st.builds(EdgeKey, NAMES, NAMES, EDGE_TYPES))),
    st.builds(AddMetadata, _items(st.builds(MetadataChange, NAMES, ENTRY_LISTS))),
    st.builds(DeleteMetadata, _items(st.builds(MetadataChange, NAMES, ENTRY_LISTS))),
    st.builds(
        SetNodeProperties,
        NAMES,
        TYPES,
        st.lists(st.builds(PropertyEntry, st.sampled_from(["role", "Home"]), st.none() | ENTRIES)),
        st.lists(st.builds(EdgeTargets, EDGE_TYPES, st.lists(NAMES, max_size=2)), max_size=2),
    ),
    # The memory family shares the graph: its commands mix into transactions too.
    st.builds(CreateRelations, _items(st.builds(RelationInput, NAMES, NAMES, EDGE_TYPES))),
    st.builds(
        UpdateEntities, _items(st.builds(EntityUpdate, NAMES, st.none() | NAMES, st.none() | TYPES))
    ),
)


def apply_decided(graph: GraphProjection, log: list[Envelope], events: list[AnyEvent]) -> None:
    """Stamp one command's events after the graph's position, fold them, keep them in `log`."""
    start = graph.position + 1
    envelopes = stamp(events, start_seq=start, hlc=start)
    graph.apply_all(envelopes)
    log.extend(envelopes)


# Most steps need existing nodes: every graph starts with some ("d" stays missing).
SEED = AddNodes(
    [NodeInput("a", "npc", ["Role: x"]), NodeInput("b", "place", []), NodeInput("c", "npc", [])]
)


def graph_after(commands: list[Command]) -> list[Envelope]:
    """The log of a graph built by deciding SEED and `commands` in turn, skipping refused
    ones."""
    graph = GraphProjection()
    log: list[Envelope] = []
    for command in [SEED, *commands]:
        try:
            events = decide(graph, command).events
        except CommandRejectedError:
            continue
        apply_decided(graph, log, events)
    return log


def folded(log: list[Envelope]) -> GraphProjection:
    graph = GraphProjection()
    graph.apply_all(log)
    return graph


@given(
    st.lists(COMMANDS, max_size=8),
    st.lists(COMMANDS, min_size=1, max_size=3),
)
def test_a_transaction_is_refused_whole_or_equals_its_steps_decided_one_by_one(
    setup: list[Command], steps: list[Command]
) -> None:
    log = graph_after(setup)
    graph = folded(log)
    before = graph.snapshot()

    one_by_one = folded(log)
    expected_events: list[AnyEvent] = []
    expected_results = []
    failed_at: tuple[int, type[CommandRejectedError]] | None = None
    for index, step in enumerate(steps, start=1):
        try:
            decision = decide(one_by_one, step)
        except CommandRejectedError as rejection:
            failed_at = (index, type(rejection))
            break
        expected_events.extend(decision.events)
        expected_results.append(decision.result)
        apply_decided(one_by_one, [], decision.events)

    transaction = CommitTransaction(steps)
    if failed_at is not None:
        index, error = failed_at
        try:
            decide(graph, transaction)
        except CommandRejectedError as rejection:
            assert type(rejection) is error
            assert rejection.message.startswith(f"Step {index} of {len(steps)} (")
        else:
            raise AssertionError("the transaction should have been refused")
        assert graph.snapshot() == before
        return

    decision = decide(graph, transaction)

    assert decision.events == expected_events
    assert decision.result == CommitTransactionResult(expected_results)
    assert graph.snapshot() == before
    apply_decided(graph, [], decision.events)
    assert graph.snapshot() == one_by_one.snapshot()


# --- WorkingGraph against the fold ------------------------------------------------------------

READ_NAMES = ["a", "b", "c"]
RELATION_TYPES = ["r", "s"]


def answers(reader: GraphReader) -> dict[str, object]:
    """Every GraphReader answer about the small alphabet the events draw from."""
    found: dict[str, object] = {}
    for name in READ_NAMES:
        found[f"has_entity {name}"] = reader.has_entity(name)
        found[f"entity {name}"] = reader.entity(name)
        found[f"entity_type {name}"] = reader.entity_type(name)
        found[f"observations {name}"] = reader.observations(name)
        found[f"relations_of {name}"] = reader.relations_of(name)
        for to in READ_NAMES:
            for kind in RELATION_TYPES:
                found[f"has_relation {name} {to} {kind}"] = reader.has_relation(name, to, kind)
                found[f"relation {name} {to} {kind}"] = reader.relation(name, to, kind)
    for size in (2, 3):
        for names in combinations(READ_NAMES, size):
            found[f"relations_of_any {names}"] = reader.relations_of_any(names)
    return found


# A relation created again is listed after those created since: ordered by latest creation.
RECREATED: list[AnyEvent] = [
    EntityCreated(name="a", entity_type="t"),
    EntityCreated(name="b", entity_type="t"),
    RelationCreated(from_entity="a", to_entity="b", relation_type="r"),
    RelationCreated(from_entity="b", to_entity="a", relation_type="r"),
    RelationCreated(from_entity="a", to_entity="b", relation_type="r", weight=0.5),
]


@given(envelope_sets(max_size=40), st.lists(EVENTS, max_size=30), st.integers(0, 30))
@example([], RECREATED, 0)
@example([], RECREATED, 3)
@example(stamp(RECREATED[:3]), RECREATED[3:], 1)
def test_a_working_graph_answers_like_the_graph_with_the_events_folded_in(
    base: list[Envelope], events: list[AnyEvent], split: int
) -> None:
    graph = GraphProjection()
    graph.apply_all(base)
    expected = GraphProjection()
    expected.apply_all(base)
    # Stamped after everything in the base, as a command's events are.
    expected.apply_all(stamp(events, origin="n9", start_seq=1, hlc=100, start_position=1000))

    work = WorkingGraph(graph)
    work.apply_all(events)
    # A working graph over a working graph (a step of a transaction) reads the same.
    inner = WorkingGraph(graph)
    inner.apply_all(events[:split])
    outer = WorkingGraph(inner)
    outer.apply_all(events[split:])

    assert answers(work) == answers(expected)
    assert answers(outer) == answers(expected)
    assert graph.snapshot() == folded(base).snapshot()
