"""The mesh family's JSON shapes and neighbour expansion (as MemoryMesh defines it), over a real
graph projection; and its read tools' hooks, run against that graph without actors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

import msgspec
import pytest

from actors.commands import Command, CreateEntities, CreateRelations, EdgeInput, EdgeKey, NodeInput
from actors.decide import decide
from actors.gateway import GraphGateway
from actors.hooks import HookEvent, Hooks, HookVetoError
from actors.read_models import ReadModels
from eventstore.events import AnyEvent, Cause, RelationCreated
from eventstore.memory_log import InMemoryEventLog
from graphmem.limits import InputLimits
from graphmem.tools.base import ToolContext, ToolOutcome
from graphmem.tools.mesh import MESH_TOOLS
from graphmem.tools.mesh_values import (
    mesh_graph,
    neighbourhood,
)
from projections.graph import GraphProjection
from projections.search import SearchProjection
from tests.helpers import entity, relation, stamp

T = TypeVar("T")


class Models:
    """A writer's read models, fed the envelopes of the commands run as the writer feeds them."""

    def __init__(self) -> None:
        self.read = ReadModels.serving(InMemoryEventLog(node_id="n1"))

    @property
    def graph(self) -> GraphProjection:
        return self.read.graph

    @property
    def search(self) -> SearchProjection:
        return self.read.search

    def apply(self, events: list[AnyEvent]) -> None:
        start = self.graph.position + 1
        self.read.apply(stamp(events, start_seq=start, hlc=start))

    def run(self, command: Command) -> None:
        self.apply(decide(self.graph, command).events)


def abc(*relations: tuple[str, str, str]) -> Models:
    """Nodes A, B and C (in that order), then the given edges."""
    models = Models()
    models.run(
        CreateEntities(
            [
                entity("A", "thing", "Colour: red"),
                entity("B", "thing", "Colour: blue"),
                entity("C", "thing", "Colour: green"),
            ]
        )
    )
    if relations:
        models.run(CreateRelations([relation(*r) for r in relations]))
    return models


def names(value: dict[str, Any]) -> list[str]:
    return [node["name"] for node in value["nodes"]]


def edges(value: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["from"], e["to"], e["edgeType"]) for e in value["edges"]]


# --- shapes -----------------------------------------------------------------------------------


def test_the_whole_graph_lists_nodes_and_weighted_edges_in_the_mesh_shape() -> None:
    models = abc(("A", "B", "knows"))
    models.apply([RelationCreated("B", "C", "likes", weight=0.25)])
    assert mesh_graph(models.graph) == {
        "nodes": [
            {"name": "A", "nodeType": "thing", "metadata": ["Colour: red"]},
            {"name": "B", "nodeType": "thing", "metadata": ["Colour: blue"]},
            {"name": "C", "nodeType": "thing", "metadata": ["Colour: green"]},
        ],
        "edges": [
            {"from": "A", "to": "B", "edgeType": "knows", "weight": 1.0},
            {"from": "B", "to": "C", "edgeType": "likes", "weight": 0.25},
        ],
    }


def test_an_empty_graph_has_no_nodes_and_no_edges() -> None:
    assert mesh_graph(GraphProjection()) == {"nodes": [], "edges": []}


def test_command_inputs_encode_in_the_mesh_wire_shape() -> None:
    assert msgspec.to_builtins(NodeInput("A", "thing", ["k: v"])) == {
        "name": "A",
        "nodeType": "thing",
        "metadata": ["k: v"],
    }
    assert msgspec.to_builtins(EdgeInput("A", "B", "knows", 0.5)) == {
        "from": "A",
        "to": "B",
        "edgeType": "knows",
        "weight": 0.5,
    }
    assert msgspec.to_builtins(EdgeKey("A", "B", "knows")) == {
        "from": "A",
        "to": "B",
        "edgeType": "knows",
    }


# --- neighbour expansion ----------------------------------------------------------------------


def test_a_search_matching_only_a_returns_a_and_its_neighbour_b_with_the_edge_between() -> None:
    models = abc(("A", "B", "knows"))
    matches = models.graph.entities_named(models.search.search(models.graph, "RED"))
    value = neighbourhood(models.graph, matches)
    assert names(value) == ["A", "B"]
    assert edges(value) == [("A", "B", "knows")]


def test_opening_a_returns_its_neighbour_but_not_the_edges_beyond_it() -> None:
    models = abc(("A", "B", "knows"), ("B", "C", "knows"))
    value = neighbourhood(models.graph, models.graph.entities_named(["A"], listing_order=True))
    assert names(value) == ["A", "B"]
    assert edges(value) == [("A", "B", "knows")]


def test_edges_between_two_neighbours_are_left_out() -> None:
    models = abc(("A", "B", "knows"), ("A", "C", "knows"), ("B", "C", "likes"))
    value = neighbourhood(models.graph, models.graph.entities_named(["A"]))
    assert names(value) == ["A", "B", "C"]
    assert edges(value) == [("A", "B", "knows"), ("A", "C", "knows")]


def test_matches_come_first_then_neighbours_in_listing_order_each_once() -> None:
    # C is matched; A and B are its neighbours, reached by edges in either direction.
    models = abc(("B", "C", "knows"), ("C", "A", "knows"), ("A", "C", "likes"))
    value = neighbourhood(models.graph, models.graph.entities_named(["C"]))
    assert names(value) == ["C", "A", "B"]
    assert edges(value) == [("B", "C", "knows"), ("C", "A", "knows"), ("A", "C", "likes")]


def test_an_edge_between_two_matches_is_listed_once_and_adds_no_neighbour() -> None:
    models = abc(("A", "B", "knows"))
    value = neighbourhood(models.graph, models.graph.entities_named(["A", "B"]))
    assert names(value) == ["A", "B"]
    assert edges(value) == [("A", "B", "knows")]


def test_a_self_loop_adds_no_neighbour() -> None:
    models = abc(("A", "A", "mirrors"))
    value = neighbourhood(models.graph, models.graph.entities_named(["A"]))
    assert names(value) == ["A"]
    assert edges(value) == [("A", "A", "mirrors")]


def test_no_matches_give_an_empty_graph() -> None:
    models = abc(("A", "B", "knows"))
    assert neighbourhood(models.graph, []) == {"nodes": [], "edges": []}


# --- the read tools, run against the graph without actors -------------------------------------


class LocalGraph:
    """Answers the read queries a GraphGateway would, from `models`, on the calling thread."""

    timeout = 5.0

    def __init__(self, models: Models) -> None:
        self.models = models

    async def query(self, query: Callable[[GraphProjection], T]) -> T:
        return query(self.models.graph)

    async def query_models(self, query: Callable[[ReadModels], T]) -> T:
        return query(self.models.read)


TOOLS = {spec.tool.name: spec for spec in MESH_TOOLS}


def call(models: Models, hooks: Hooks, tool: str, args: dict[str, Any]) -> ToolOutcome:
    graph = cast(GraphGateway, LocalGraph(models))
    ctx = ToolContext(graph, InputLimits(), Cause(tool=tool), hooks=hooks)

    async def run() -> ToolOutcome:
        return await TOOLS[tool].run(ctx, args)

    return asyncio.run(run())


def body(outcome: ToolOutcome) -> dict[str, Any]:
    assert not outcome.is_error
    value: dict[str, Any] = json.loads(outcome.texts[0])
    assert value == outcome.structured
    return value


@pytest.mark.parametrize(
    ("tool", "args", "operation", "before"),
    [
        ("search_nodes", {"query": "red"}, "Search", {"query": "red"}),
        ("open_nodes", {"names": ["A"]}, "OpenNodes", {"names": ["A"]}),
        ("read_graph", {}, "ReadGraph", {}),
    ],
)
def test_read_tools_run_before_and_after_hooks_with_the_query_and_the_results(
    tool: str, args: dict[str, Any], operation: str, before: dict[str, Any]
) -> None:
    seen: list[HookEvent] = []
    outcome = call(abc(("A", "B", "knows")), Hooks([seen.append]), tool, args)
    assert [e.name for e in seen] == [f"before{operation}", f"after{operation}"]
    assert dict(seen[0].data) == before
    assert seen[1].data["results"] == body(outcome)["data"]


def test_a_vetoing_before_hook_stops_a_search_with_its_message() -> None:
    def veto(event: HookEvent) -> None:
        if event.name == "beforeSearch":
            raise HookVetoError(f"no searching for {event.data['query']}")

    with pytest.raises(HookVetoError, match="no searching for red"):
        call(abc(), Hooks([veto]), "search_nodes", {"query": "red"})


def test_read_actions_say_what_was_found_and_what_was_not() -> None:
    models = abc(("A", "B", "knows"))
    hooks = Hooks()

    def action(tool: str, args: dict[str, Any]) -> str:
        taken: str = body(call(models, hooks, tool, args))["actionTaken"]
        return taken

    assert action("read_graph", {}) == "Read complete knowledge graph (3 nodes, 1 edges)"
    assert action("search_nodes", {"query": "red"}) == (
        'Searched nodes with query: "red" - found 2 nodes'
    )
    assert action("search_nodes", {"query": "purple"}) == (
        'Searched nodes with query: "purple" - no matching nodes found'
    )
    assert action("open_nodes", {"names": ["A", "C"]}) == "Retrieved nodes: A, C"
    assert action("open_nodes", {"names": ["C", "X"]}) == "Retrieved 1 nodes. Not found: X"
    assert action("open_nodes", {"names": ["X", "Y"]}) == (
        "None of the requested nodes were found: X, Y"
    )
    empty = body(call(Models(), hooks, "read_graph", {}))
    assert empty["actionTaken"] == (
        "Read complete knowledge graph (graph is empty - no nodes or edges exist yet)"
    )
    assert empty["data"] == {"nodes": [], "edges": []}
