"""Graph diffs: what changed between two graphs, and applying it to the first gives the second."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
    EdgeUpdate,
    EntityUpdate,
    ObservationDeletion,
    ObservationInput,
    UpdateEdges,
    UpdateEntities,
)
from actors.errors import CommandRejectedError
from eventstore.events import Envelope
from projections.graph import GraphProjection, GraphSnapshot
from projections.graph_diff import (
    AddEntity,
    AddObservation,
    AddRelation,
    Change,
    ChangeRelation,
    DiffError,
    MoveEntity,
    MoveRelation,
    RemoveEntity,
    RemoveObservation,
    RemoveRelation,
    RetypeEntity,
    apply_diff,
    decode_changes,
    diff_graphs,
    encode_change,
)
from tests.helpers import entity, relation, run
from tests.property.test_graph_fold import envelope_sets


def snapshot_after(*commands: Command) -> GraphSnapshot:
    graph = GraphProjection()
    for command in commands:
        run(graph, command)
    return graph.snapshot()


def steps(*commands: Command) -> list[GraphSnapshot]:
    """The graph before any command and after each."""
    graph = GraphProjection()
    found = [graph.snapshot()]
    for command in commands:
        run(graph, command)
        found.append(graph.snapshot())
    return found


def json_round_trip(changes: list[Change]) -> list[Change]:
    return decode_changes(encode_change(change) for change in changes)


ALICE_BOB = CreateEntities([entity("Alice", "person", "likes tea"), entity("Bob")])


def test_equal_graphs_have_an_empty_diff() -> None:
    graph = snapshot_after(ALICE_BOB)

    assert diff_graphs(graph, graph) == []
    assert apply_diff([], graph) == graph


def test_an_added_entity_comes_with_its_type_observations_and_place() -> None:
    before, after = steps(CreateEntities([entity("Alice", "person", "likes tea", "likes tea")]))

    assert diff_graphs(before, after) == [
        AddEntity("Alice", "person", ["likes tea", "likes tea"], at=0)
    ]


def test_a_deleted_entity_is_removed_with_what_it_held() -> None:
    _, before, after = steps(ALICE_BOB, DeleteEntities(["Alice"]))

    assert diff_graphs(before, after) == [RemoveEntity("Alice", "person", ["likes tea"])]


def test_a_retyped_entity_says_from_what_to_what() -> None:
    _, before, after = steps(ALICE_BOB, UpdateEntities([EntityUpdate("Bob", None, "robot")]))

    assert diff_graphs(before, after) == [RetypeEntity("Bob", "person", "robot")]


def test_observation_changes_count_duplicates_and_keep_places() -> None:
    _, before, after = steps(
        CreateEntities([entity("Alice", "person", "a", "b", "a")]),
        DeleteObservations([ObservationDeletion("Alice", ["b"])]),
    )
    _, _, _, later = steps(
        CreateEntities([entity("Alice", "person", "a", "b", "a")]),
        DeleteObservations([ObservationDeletion("Alice", ["b"])]),
        AddObservations([ObservationInput("Alice", ["c"])]),
    )

    assert diff_graphs(before, after) == [RemoveObservation("Alice", at=1, content="b")]
    # The two "a"s that stay are matched, not removed and added again.
    assert diff_graphs(before, later) == [
        RemoveObservation("Alice", at=1, content="b"),
        AddObservation("Alice", at=2, content="c"),
    ]
    assert diff_graphs(later, before) == [
        RemoveObservation("Alice", at=2, content="c"),
        AddObservation("Alice", at=1, content="b"),
    ]


def test_relations_added_removed_and_reweighted() -> None:
    _, _, with_one, reweighted, replaced = steps(
        CreateEntities([entity("A"), entity("B"), entity("C")]),
        CreateRelations([relation("A", "B", "knows")]),
        UpdateEdges([EdgeUpdate("A", "B", "knows", new_weight=0.5)]),
        CreateRelations([relation("A", "C", "knows")]),
    )

    assert diff_graphs(with_one, reweighted) == [
        ChangeRelation("A", "B", "knows", attribute="weight", before=1.0, after=0.5)
    ]
    assert diff_graphs(reweighted, replaced) == [AddRelation("A", "C", "knows", weight=1.0, at=1)]
    assert diff_graphs(replaced, with_one) == [
        RemoveRelation("A", "C", "knows"),
        ChangeRelation("A", "B", "knows", attribute="weight", before=0.5, after=1.0),
    ]


def test_a_recreated_entity_moves_to_the_end_of_the_listing() -> None:
    _, before, _, after = steps(
        CreateEntities([entity("A"), entity("B"), entity("C")]),
        DeleteEntities(["A"]),
        CreateEntities([entity("A", "robot")]),
    )

    assert diff_graphs(before, after) == [
        MoveEntity("A", at=2),
        RetypeEntity("A", "person", "robot"),
    ]
    assert apply_diff(diff_graphs(before, after), before) == after


def test_a_recreated_relation_moves_to_the_end_of_the_listing() -> None:
    _, _, before, _, after = steps(
        CreateEntities([entity("A"), entity("B"), entity("C")]),
        CreateRelations([relation("A", "B", "knows"), relation("B", "C", "knows")]),
        DeleteRelations([relation("A", "B", "knows")]),
        CreateRelations([relation("A", "B", "knows")]),
    )

    assert diff_graphs(before, after) == [MoveRelation("A", "B", "knows", at=1)]
    assert apply_diff(diff_graphs(before, after), before) == after


def test_every_change_survives_its_json_form() -> None:
    changes: list[Change] = [
        AddEntity("A", "person", ["x", "x"], at=0),
        RemoveEntity("B", "person", []),
        MoveEntity("C", at=1),
        RetypeEntity("C", "person", "robot"),
        RemoveObservation("C", at=0, content="old"),
        AddObservation("C", at=1, content="new"),
        AddRelation("A", "C", "knows", weight=0.5, at=0, properties={"since": 2020}),
        RemoveRelation("A", "B", "knows"),
        MoveRelation("C", "A", "knows", at=1),
        ChangeRelation("C", "A", "knows", attribute="validAt", before=None, after=17),
    ]

    assert json_round_trip(changes) == changes
    assert encode_change(MoveEntity("A", at=2)) == b'{"op":"move_entity","name":"A","at":2}'
    assert encode_change(AddRelation("A", "C", "knows", weight=1.0, at=0)) == (
        b'{"op":"add_relation","from":"A","to":"C","relationType":"knows","weight":1.0,"at":0}'
    )


def test_a_diff_refuses_a_graph_it_was_not_made_from() -> None:
    _, before, after = steps(ALICE_BOB, DeleteEntities(["Alice"]))
    changes = diff_graphs(before, after)

    with pytest.raises(DiffError, match="Alice is missing"):
        apply_diff(changes, after)
    with pytest.raises(DiffError, match="no observation 'nope' at 0"):
        apply_diff([RemoveObservation("Bob", at=0, content="nope")], before)
    with pytest.raises(DiffError, match="line 1 is not a change"):
        decode_changes([b'{"op":"explode"}'])


def test_a_diff_of_a_graph_to_itself_later_or_earlier_applies_both_ways() -> None:
    states = steps(
        ALICE_BOB,
        AddObservations([ObservationInput("Bob", ["likes tea", "likes tea"])]),
        CreateRelations([relation("Alice", "Bob", "knows"), relation("Bob", "Alice", "knows")]),
        DeleteObservations([ObservationDeletion("Alice", ["likes tea"])]),
        DeleteRelations([relation("Alice", "Bob", "knows")]),
        DeleteEntities(["Bob"]),
        CreateEntities([entity("Bob", "robot", "beeps")]),
    )
    for a in states:
        for b in states:
            assert apply_diff(diff_graphs(a, b), a) == b


# --- properties -------------------------------------------------------------------------------


def fold(envelopes: list[Envelope]) -> GraphSnapshot:
    graph = GraphProjection()
    graph.apply_all(envelopes)
    return graph.snapshot()


@given(
    envelope_sets(max_size=80),
    st.lists(st.integers(0, 80), min_size=2, max_size=5),
    st.booleans(),
)
def test_applying_the_diff_of_two_log_prefixes_to_the_first_gives_the_second(
    envelopes: list[Envelope], cuts: list[int], in_order: bool
) -> None:
    """Events from several nodes with tied, out-of-order clocks (or, as in a local log, in
    clock order): creations, deletions and re-creations collide, so entities and relations
    move in the listing."""
    if in_order:
        envelopes = [msgspec.structs.replace(e, hlc=e.position) for e in envelopes]
    states = [fold(envelopes[: min(cut, len(envelopes))]) for cut in cuts]

    for first in states:
        for second in states:
            changes = diff_graphs(first, second)

            assert apply_diff(changes, first) == second
            assert apply_diff(json_round_trip(changes), first) == second
            assert (changes == []) == (first == second)


NAMES = st.sampled_from(["a", "b", "c", "d"])
CONTENTS = st.sampled_from(["x", "y", "z"])
TYPES = st.sampled_from(["person", "robot"])
ENDS = st.sampled_from(["a", "b", "c"])  # created first, so relations between them are made
COMMANDS: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        CreateEntities,
        st.lists(st.builds(entity, NAMES, TYPES), min_size=1, max_size=2),
    ),
    st.builds(
        AddObservations,
        st.lists(
            st.builds(ObservationInput, NAMES, st.lists(CONTENTS, min_size=1, max_size=3)),
            min_size=1,
            max_size=1,
        ),
    ),
    st.builds(
        DeleteObservations,
        st.lists(
            st.builds(ObservationDeletion, NAMES, st.lists(CONTENTS, min_size=1, max_size=2)),
            min_size=1,
            max_size=1,
        ),
    ),
    st.builds(DeleteEntities, st.lists(NAMES, min_size=1, max_size=2)),
    st.builds(
        UpdateEntities,
        st.lists(st.builds(EntityUpdate, NAMES, st.none(), TYPES), min_size=1, max_size=1),
    ),
    st.builds(
        CreateRelations,
        st.lists(st.builds(relation, ENDS, ENDS, st.just("knows")), min_size=1, max_size=2),
    ),
    st.builds(
        DeleteRelations,
        st.lists(st.builds(relation, ENDS, ENDS, st.just("knows")), min_size=1, max_size=1),
    ),
    st.builds(
        UpdateEdges,
        st.lists(
            st.builds(EdgeUpdate, NAMES, NAMES, st.just("knows"), st.sampled_from([0.0, 0.5, 1.0])),
            min_size=1,
            max_size=1,
        ),
    ),
)


@given(st.lists(COMMANDS, max_size=25))
def test_applying_the_diff_between_two_points_of_a_command_history_gives_the_later(
    commands: list[Command],
) -> None:
    graph = GraphProjection()
    run(graph, CreateEntities([entity(name) for name in ("a", "b", "c")]))
    states = [graph.snapshot()]
    for command in commands:
        try:
            run(graph, command)
        except CommandRejectedError:
            continue
        states.append(graph.snapshot())

    for first in states:
        for second in states:
            assert apply_diff(diff_graphs(first, second), first) == second
