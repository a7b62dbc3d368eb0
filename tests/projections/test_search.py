"""SearchProjection answers exactly what the official substring scan answers, in listing order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    DeleteEntities,
    DeleteObservations,
    EntityInput,
    ObservationDeletion,
    ObservationInput,
)
from actors.decide import decide
from actors.errors import CommandRejectedError
from eventstore.events import EntityCreated, ObservationAdded
from projections.graph import GraphProjection
from projections.search import SearchProjection
from tests.helpers import stamp


def naive(graph: GraphProjection, query: str) -> list[str]:
    q = query.lower()
    return [
        e.name
        for e in graph.entities()
        if q in e.name.lower()
        or q in e.entity_type.lower()
        or any(q in o.lower() for o in e.observations)
    ]


class Model:
    def __init__(self) -> None:
        self.graph = GraphProjection()
        self.search = SearchProjection()

    def run(self, command: Command) -> None:
        try:
            decision = decide(self.graph, command)
        except CommandRejectedError:
            return
        start = self.graph.position + 1
        envelopes = stamp(decision.events, start_seq=start, hlc=start)
        self.graph.apply_all(envelopes)
        self.search.note(envelopes)


NAMES = st.sampled_from(["Alice", "Bob", "Carol", "Dave", "Éva", "acme"])
WORDS = st.sampled_from(["likes coffee", "works at Acme", "İstanbul", "ß", "Tea", "a", ""])
QUERIES = st.sampled_from(["", "a", "ACME", "coffee", "alice", "e", "ß", "i̇", "tea", "zzz", "b"])

commands = st.one_of(
    st.builds(
        lambda name, obs: CreateEntities(entities=[EntityInput(name, "person", obs)]),
        NAMES,
        st.lists(WORDS, max_size=3),
    ),
    st.builds(
        lambda name, obs: AddObservations(observations=[ObservationInput(name, obs)]),
        NAMES,
        st.lists(WORDS, min_size=1, max_size=2),
    ),
    st.builds(
        lambda name, obs: DeleteObservations(deletions=[ObservationDeletion(name, obs)]),
        NAMES,
        st.lists(WORDS, min_size=1, max_size=2),
    ),
    st.builds(lambda name: DeleteEntities(entity_names=[name]), NAMES),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(commands, QUERIES), max_size=25))
def test_search_equals_the_official_scan_after_any_history(
    steps: list[tuple[Command, str]],
) -> None:
    model = Model()
    for command, query in steps:
        model.run(command)
        assert model.search.search(model.graph, query) == naive(model.graph, query)


def test_an_entity_keeps_its_place_when_it_gains_an_observation() -> None:
    model = Model()
    for name in ["first", "second"]:
        model.run(CreateEntities(entities=[EntityInput(name, "t", ["common"])]))
    model.run(AddObservations(observations=[ObservationInput("first", ["more common"])]))
    assert model.search.search(model.graph, "common") == ["first", "second"]


def test_a_late_older_creation_from_another_node_is_listed_in_stamp_order() -> None:
    graph, search = GraphProjection(), SearchProjection()
    late = stamp(
        [EntityCreated(name="old", entity_type="t"), ObservationAdded(entity="old", content="x")],
        origin="n2",
        start_seq=1,
        hlc=5,
        start_position=3,
    )
    early = stamp(
        [EntityCreated(name="new", entity_type="t"), ObservationAdded(entity="new", content="x")],
        origin="n1",
        start_seq=1,
        hlc=10,
    )
    for batch in (early, late):
        graph.apply_all(batch)
        search.note(batch)
        search.search(graph, "x")  # refresh between arrivals
    assert search.search(graph, "x") == ["old", "new"] == naive(graph, "x")
