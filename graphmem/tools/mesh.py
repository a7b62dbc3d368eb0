"""The mesh family: MemoryMesh's static node, edge, metadata and read tools over graphmem's graph.

Each mutation is one command, decided and appended atomically (a refused item refuses the
call). Answers are MemoryMesh's `{data, actionTaken, timestamp}` envelope (see mesh_format);
where upstream MemoryMesh takes other argument shapes than the seed, both are accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import msgspec

from actors.commands import (
    AddEdges,
    AddMetadata,
    AddNodes,
    DeleteEdges,
    DeleteMetadata,
    DeleteNodes,
    EdgeInput,
    MetadataChange,
    UpdateEdges,
    UpdateNodes,
)
from actors.time_travel import AsOfPoint, GraphModels
from graphmem.tools import mesh_schemas as s
from graphmem.tools.as_of import as_of_data, as_of_phrase, read_models
from graphmem.tools.base import (
    Runner,
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_count,
    check_names,
    check_text,
)
from graphmem.tools.definition import ToolDefinition
from graphmem.tools.input_checks import check_command
from graphmem.tools.mesh_args import (
    AddEdgesArgs,
    MeshInputError,
    OpenArgs,
    SearchArgs,
    add_metadata_changes,
    check_weight,
    checked_changes,
    delete_metadata_changes,
    mesh_command,
    parse,
)
from graphmem.tools.mesh_format import mesh_ok
from graphmem.tools.mesh_values import (
    mesh_graph,
    neighbourhood,
)
from projections.metadata import key_spellings

__all__ = ["MESH_TOOLS", "mesh_read"]

T = TypeVar("T")

# --- action texts -----------------------------------------------------------------------------


def _listed(verb: str, noun: str, items: Sequence[str]) -> str:
    """E.g. "Added 2 nodes: a, b", "Added 1 node: a", "Added no nodes"."""
    if not items:
        return f"{verb} no {noun}s"
    plural = "" if len(items) == 1 else "s"
    return f"{verb} {len(items)} {noun}{plural}: {', '.join(items)}"


def _edge_text(from_: str, to: str, edge_type: str) -> str:
    return f"{from_} -> {to} ({edge_type})"


def _entries(count: int) -> str:
    return f"{count} metadata {'entry' if count == 1 else 'entries'}"


def _not_found(action: str, missing: Iterable[str]) -> str:
    missing = list(missing)
    return f"{action}. Not found: {', '.join(missing)}" if missing else action


# --- nodes ------------------------------------------------------------------------------------


async def add_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = mesh_command("add_nodes", raw, AddNodes, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    names = [n.name for n in result.nodes]
    data = {"nodes": msgspec.to_builtins(result.nodes)}
    return mesh_ok(data, _listed("Added", "node", names), mutated=True, clock=ctx.clock)


async def update_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = mesh_command("update_nodes", raw, UpdateNodes, ctx.limits)
    result = await ctx.graph.execute(command, ctx.cause)
    names = [n.name for n in result.nodes]
    data = {"nodes": msgspec.to_builtins(result.nodes)}
    return mesh_ok(data, _listed("Updated", "node", names), mutated=True, clock=ctx.clock)


async def delete_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    command = mesh_command("delete_nodes", raw, DeleteNodes, ctx.limits)
    result = await ctx.graph.execute(DeleteNodes(command.names), ctx.cause)
    action = _listed("Deleted", "node", result.deleted)
    if result.edges_removed:
        count = len(result.edges_removed)
        action += f" and {count} connected edge{'' if count == 1 else 's'}"
    data = {
        "deleted": list(result.deleted),
        "notFound": list(result.not_found),
        "edgesRemoved": msgspec.to_builtins(result.edges_removed),
    }
    return mesh_ok(data, _not_found(action, result.not_found), mutated=True, clock=ctx.clock)


# --- edges ------------------------------------------------------------------------------------


async def add_edges(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "add_edges"
    args = parse(tool, raw, AddEdgesArgs)
    for i, e in enumerate(args.edges):
        check_weight(tool, f"edges[{i}].weight", e.weight)
    command = AddEdges(
        [
            EdgeInput(e.from_, e.to, e.edgeType, 1.0 if e.weight is None else e.weight)
            for e in args.edges
        ]
    )
    check_command(tool, ctx.limits, command)
    result = await ctx.graph.execute(command, ctx.cause)
    texts = [_edge_text(e.from_entity, e.to_entity, e.edge_type) for e in result.edges]
    data = {"edges": msgspec.to_builtins(result.edges)}
    return mesh_ok(data, _listed("Added", "edge", texts), mutated=True, clock=ctx.clock)


async def update_edges(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "update_edges"
    command = mesh_command(tool, raw, UpdateEdges, ctx.limits)
    for i, e in enumerate(command.updates):
        check_weight(tool, f"edges[{i}].weight", e.weight)
        check_weight(tool, f"edges[{i}].newWeight", e.new_weight)
    result = await ctx.graph.execute(command, ctx.cause)
    texts = [_edge_text(e.from_entity, e.to_entity, e.edge_type) for e in result.edges]
    data = {"edges": msgspec.to_builtins(result.edges)}
    return mesh_ok(data, _listed("Updated", "edge", texts), mutated=True, clock=ctx.clock)


async def delete_edges(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "delete_edges"
    command = mesh_command(tool, raw, DeleteEdges, ctx.limits)
    keys = command.edges
    result = await ctx.graph.execute(command, ctx.cause)
    deleted = set(result.deleted)
    missing = [k for k in dict.fromkeys(keys) if k not in deleted]
    texts = [_edge_text(k.from_entity, k.to_entity, k.edge_type) for k in result.deleted]
    action = _not_found(
        _listed("Deleted", "edge", texts),
        (_edge_text(k.from_entity, k.to_entity, k.edge_type) for k in missing),
    )
    data = {
        "deleted": msgspec.to_builtins(result.deleted),
        "notFound": msgspec.to_builtins(missing),
    }
    return mesh_ok(data, action, mutated=True, clock=ctx.clock)


# --- metadata ---------------------------------------------------------------------------------


def _per_node(verb: str, preposition: str, results: Sequence[MetadataChange]) -> str:
    count = sum(len(r.entries) for r in results)
    nodes = ", ".join(dict.fromkeys(r.node_name for r in results))
    return f"{verb} {_entries(count)} {preposition} {nodes}" if nodes else f"{verb} no metadata"


async def add_metadata(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "add_metadata"
    changes = checked_changes(tool, ctx.limits, add_metadata_changes(tool, raw), "contents")
    result = await ctx.graph.execute(AddMetadata(changes), ctx.cause)
    data = {
        "metadata": [
            {"nodeName": r.node_name, "addedMetadata": list(r.entries)} for r in result.results
        ]
    }
    return mesh_ok(data, _per_node("Added", "to", result.results), mutated=True, clock=ctx.clock)


async def delete_metadata(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "delete_metadata"
    changes = checked_changes(tool, ctx.limits, delete_metadata_changes(tool, raw), "metadata")
    result = await ctx.graph.execute(DeleteMetadata(changes), ctx.cause)
    data = {
        "deletions": [
            {"nodeName": r.node_name, "deletedMetadata": list(r.entries)} for r in result.results
        ]
    }
    return mesh_ok(
        data, _per_node("Deleted", "from", result.results), mutated=True, clock=ctx.clock
    )


# --- reads ------------------------------------------------------------------------------------


_AS_OF_SUGGESTIONS = (
    "Give as_of as a log position (e.g. 120, or 0 for before the first write) or an ISO-8601 "
    'time (e.g. "2026-03-01T12:00:00Z", or "2026-03-01" for the start of that day UTC)',
    "Omit as_of to read the graph as it is now",
)


async def mesh_read(
    ctx: ToolContext, tool: str, raw: dict[str, Any], query: Callable[[GraphModels], T]
) -> tuple[T, AsOfPoint | None]:
    """`query` now, or as of the call's `as_of` (its problems with the mesh suggestions)."""
    try:
        return await read_models(ctx, tool, raw.get("as_of"), query)
    except ToolInputError as problem:
        raise MeshInputError(str(problem), _AS_OF_SUGGESTIONS) from None


async def read_graph(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    # Upstream refuses a call without arguments; any arguments but as_of are ignored here.
    ctx.hooks.before("ReadGraph")
    value, point = await mesh_read(ctx, "read_graph", raw, lambda m: mesh_graph(m.graph))
    ctx.hooks.after("ReadGraph", data={"results": value, **as_of_data(point)})
    nodes, edges = len(value["nodes"]), len(value["edges"])
    if nodes == 0 and edges == 0:
        action = "Read complete knowledge graph (graph is empty - no nodes or edges exist yet)"
    else:
        action = f"Read complete knowledge graph ({nodes} nodes, {edges} edges)"
    return mesh_ok(value, action + as_of_phrase(point), clock=ctx.clock)


async def search_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "search_nodes"
    query = parse(tool, raw, SearchArgs).query
    check_text(tool, query, "query", ctx.limits.max_query_chars, multiline=True)
    ctx.hooks.before("Search", data={"query": query})

    def search(models: GraphModels) -> dict[str, Any]:
        graph = models.graph
        spellings = key_spellings(query)
        if len(spellings) == 1:
            return neighbourhood(graph, graph.entities_named(models.search.search(graph, query)))
        # A key is one property however it is spelled (projections.metadata).
        found = {name for form in spellings for name in models.search.search(graph, form)}
        return neighbourhood(graph, graph.entities_named(found, listing_order=True))

    value, point = await mesh_read(ctx, tool, raw, search)
    ctx.hooks.after("Search", data={"query": query, "results": value, **as_of_data(point)})
    found = len(value["nodes"])
    outcome = f"found {found} nodes" if found else "no matching nodes found"
    return mesh_ok(
        value,
        f'Searched nodes with query: "{query}"{as_of_phrase(point)} - {outcome}',
        clock=ctx.clock,
    )


async def open_nodes(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "open_nodes"
    names = list(parse(tool, raw, OpenArgs).names)
    check_count(tool, len(names), "names", ctx.limits.max_items)
    check_names(tool, ctx.limits, [(f"names[{i}]", n) for i, n in enumerate(names)])
    ctx.hooks.before("OpenNodes", data={"names": names})

    def open_(models: GraphModels) -> dict[str, Any]:
        graph = models.graph
        return neighbourhood(graph, graph.entities_named(names, listing_order=True))

    value, point = await mesh_read(ctx, tool, raw, open_)
    ctx.hooks.after("OpenNodes", data={"names": names, "results": value, **as_of_data(point)})
    requested = list(dict.fromkeys(names))
    returned = {node["name"] for node in value["nodes"]}
    missing = [n for n in requested if n not in returned]
    if not value["nodes"]:
        action = f"None of the requested nodes were found: {', '.join(requested)}"
    elif missing:
        action = f"Retrieved {len(value['nodes'])} nodes. Not found: {', '.join(missing)}"
    else:
        action = f"Retrieved nodes: {', '.join(requested)}"
    return mesh_ok(value, action + as_of_phrase(point), clock=ctx.clock)


def _spec(tool: ToolDefinition, run: Runner) -> ToolSpec:
    return ToolSpec(tool, run, error_style="mesh")


MESH_TOOLS: tuple[ToolSpec, ...] = (
    _spec(s.ADD_NODES, add_nodes),
    _spec(s.UPDATE_NODES, update_nodes),
    _spec(s.DELETE_NODES, delete_nodes),
    _spec(s.ADD_EDGES, add_edges),
    _spec(s.UPDATE_EDGES, update_edges),
    _spec(s.DELETE_EDGES, delete_edges),
    _spec(s.ADD_METADATA, add_metadata),
    _spec(s.DELETE_METADATA, delete_metadata),
    _spec(s.READ_GRAPH, read_graph),
    _spec(s.SEARCH_NODES, search_nodes),
    _spec(s.OPEN_NODES, open_nodes),
)
