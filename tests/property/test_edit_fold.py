"""The fold stays a CRDT with renames, retypes, content and relation edits and merges in the mix.

Three nodes decide random commands against their own graphs (so renames and merges race with
each other and with plain writes), stamp them with their own clocks, and now and then pull each
other's events. Whatever they wrote, the union folds to the same graph in any order, equals
the brute-force reading of the rules, and every node that has seen everything agrees with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    EntityInput,
    EntityMerge,
    EntityUpdate,
    MergeEntities,
    ObservationInput,
    ObservationUpdate,
    RelationInput,
    RelationUpdate,
    UpdateEntities,
    UpdateObservations,
    UpdateRelations,
)
from actors.decide import decide
from actors.errors import CommandRejectedError
from eventstore.events import EntitiesMerged, EntityRenamed, Envelope
from projections.graph import GraphProjection, GraphSnapshot
from tests.property.test_graph_fold import reference

NAMES = st.sampled_from(["a", "a", "b", "b", "c", "d"])
CONTENTS = st.sampled_from(["x", "y", "z"])
TYPES = st.sampled_from(["t1", "t2"])
RELATION_TYPES = st.sampled_from(["r", "s"])
MAYBE_NAME = st.none() | st.sampled_from(["a", "b", "c", "d", "e"])

COMMANDS: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        CreateEntities,
        st.lists(
            st.builds(EntityInput, NAMES, TYPES, st.lists(CONTENTS, max_size=2)),
            min_size=1,
            max_size=2,
        ),
    ),
    st.builds(
        CreateRelations,
        st.lists(st.builds(RelationInput, NAMES, NAMES, RELATION_TYPES), min_size=1, max_size=2),
    ),
    st.builds(
        AddObservations,
        st.lists(
            st.builds(ObservationInput, NAMES, st.lists(CONTENTS, max_size=2)),
            min_size=1,
            max_size=1,
        ),
    ),
    st.builds(DeleteEntities, st.lists(NAMES, min_size=1, max_size=1)),
    st.builds(
        UpdateEntities,
        st.lists(
            st.builds(EntityUpdate, NAMES, MAYBE_NAME, st.none() | TYPES), min_size=1, max_size=2
        ),
    ),
    st.builds(
        UpdateObservations,
        st.lists(st.builds(ObservationUpdate, NAMES, CONTENTS, CONTENTS), min_size=1, max_size=1),
    ),
    st.builds(
        UpdateRelations,
        st.lists(
            st.builds(
                RelationUpdate,
                NAMES,
                NAMES,
                RELATION_TYPES,
                MAYBE_NAME,
                MAYBE_NAME,
                st.none() | RELATION_TYPES,
            ),
            max_size=1,
        ),
    ),
    st.builds(
        MergeEntities, st.lists(st.builds(EntityMerge, NAMES, NAMES), min_size=1, max_size=2)
    ),
)
EDITS: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        UpdateEntities, st.lists(st.builds(EntityUpdate, NAMES, MAYBE_NAME), min_size=1, max_size=1)
    ),
    st.builds(
        MergeEntities, st.lists(st.builds(EntityMerge, NAMES, NAMES), min_size=1, max_size=1)
    ),
)
ORIGINS = ["n1", "n2", "n3"]


@dataclass
class Node:
    origin: str
    graph: GraphProjection = field(default_factory=GraphProjection)
    clock: int = 0
    seq: int = 0
    written: list[Envelope] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # origin -> how many of its events


def write(node: Node, command: Command, positions: list[int]) -> None:
    try:
        events = decide(node.graph, command).events
    except CommandRejectedError:
        return
    if not events:
        return
    node.clock += 1
    tx = node.seq + 1
    envelopes = []
    for event in events:
        node.seq += 1
        positions[0] += 1
        envelopes.append(
            Envelope(
                position=positions[0],
                origin=node.origin,
                origin_seq=node.seq,
                hlc=node.clock,
                tx=tx,
                event=event,
            )
        )
    node.graph.apply_all(envelopes)
    node.written.extend(envelopes)
    node.seen[node.origin] = len(node.written)


def pull(into: Node, source: Node) -> None:
    """`into` folds what it has not yet seen of `source`'s own events; its clock observes them."""
    start = into.seen.get(source.origin, 0)
    fresh = source.written[start:]
    if not fresh:
        return
    into.graph.apply_all(fresh)
    into.seen[source.origin] = len(source.written)
    into.clock = max(into.clock, *(e.hlc for e in fresh))


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Node], list[Envelope]]:
    nodes = [Node(origin) for origin in ORIGINS]
    positions = [0]
    # A shared start, so that the random commands mostly find something to edit.
    first = nodes[0]
    start = [EntityInput(n, draw(TYPES), draw(st.lists(CONTENTS, max_size=2))) for n in "abc"]
    write(first, CreateEntities(start), positions)
    relations = st.builds(RelationInput, NAMES, NAMES, RELATION_TYPES)
    write(first, CreateRelations(draw(st.lists(relations, max_size=4))), positions)
    for node in nodes[1:]:
        if draw(st.booleans()):
            pull(node, first)
    for _ in range(draw(st.integers(3, 30))):
        node = draw(st.sampled_from(nodes))
        choice = draw(st.integers(0, 5))
        if choice == 0:
            pull(node, draw(st.sampled_from(nodes)))
        else:
            write(node, draw(EDITS if choice == 1 else COMMANDS), positions)
    union = [e for node in nodes for e in node.written]
    return nodes, union


def folded(envelopes: list[Envelope]) -> GraphSnapshot:
    graph = GraphProjection()
    graph.apply_all(envelopes)
    return graph.snapshot()


@given(st.data(), histories())
def test_any_order_of_edits_and_merges_gives_the_same_read_model(
    data: st.DataObject, history: tuple[list[Node], list[Envelope]]
) -> None:
    _, union = history
    shuffled = data.draw(st.permutations(union))

    assert folded(shuffled) == folded(union)


@given(histories())
def test_edits_and_merges_fold_by_the_rules(history: tuple[list[Node], list[Envelope]]) -> None:
    _, union = history

    assert folded(union) == reference(union)


@given(histories())
def test_nodes_that_have_seen_everything_agree(history: tuple[list[Node], list[Envelope]]) -> None:
    nodes, union = history
    for node in nodes:
        for other in nodes:
            pull(node, other)

    assert all(node.graph.snapshot() == folded(union) for node in nodes)


def test_concurrent_renames_leave_a_duplicate_that_a_merge_combines() -> None:
    one, two = Node("n1"), Node("n2")
    positions = [0]
    write(one, CreateEntities([EntityInput("a", "t", ["x"]), EntityInput("d", "t", [])]), positions)
    write(one, CreateRelations([RelationInput("a", "d", "r")]), positions)
    pull(two, one)
    write(one, UpdateEntities([EntityUpdate("a", "b")]), positions)
    write(two, UpdateEntities([EntityUpdate("a", "c")]), positions)
    pull(one, two)
    pull(two, one)
    assert one.graph.snapshot() == two.graph.snapshot()
    assert [v.name for v in one.graph.entities()] == ["d", "b", "c"]

    write(one, MergeEntities([EntityMerge("c", "b")]), positions)
    pull(two, one)

    assert two.graph.snapshot() == one.graph.snapshot()
    assert [(v.name, v.observations) for v in one.graph.entities()] == [("d", []), ("b", ["x"])]
    assert [(r.from_entity, r.to_entity) for r in one.graph.relations()] == [("b", "d")]
    markers = [
        type(e.event) for e in one.written if type(e.event) in (EntityRenamed, EntitiesMerged)
    ]
    assert markers == [EntityRenamed, EntitiesMerged]
