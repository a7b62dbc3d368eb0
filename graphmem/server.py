"""The MCP server: the tools of its profile, the resource, and the handlers the SDK calls."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import structlog
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from actors.errors import CommandRejectedError
from actors.tally import tallying
from eventstore.events import Cause
from graphmem.app import App
from graphmem.cypher import INSTALL_HINT
from graphmem.cypher import available as cypher_available
from graphmem.faults import FAULTS, explain
from graphmem.notifier import GRAPH_URI, Notifier
from graphmem.spliced_answers import slot_of
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    error,
    render,
)
from graphmem.tools.catalog import ToolCatalog
from graphmem.tools.error_text import closest_tools, existing_suggestions, public_message
from graphmem.tools.graph_family import GraphFamily
from graphmem.tools.graph_values import whole_graph
from graphmem.tools.mesh_format import mesh_error
from graphmem.version import graphmem_version

if TYPE_CHECKING:  # prometheus_client: only the HTTP service has /metrics to serve
    from graphmem.metrics import ServiceMetrics
from graphmem.wire.fast_calls import FastCalls, ToolCaller
from graphmem.wire.stdio_transport import WireReadStream
from projections.graph_family import FamilyIndexBuildingError

log = structlog.get_logger(__name__)

# The official server's identity, so clients configured for it see no difference.
SERVER_NAME = "memory-server"
MEMORY_INSTRUCTIONS = (
    "graphmem is a knowledge-graph memory: entities (with a type and observations) and typed "
    "relations between them. Call read_graph, search_nodes or open_nodes before answering "
    "from memory; record new facts with create_entities, create_relations and "
    "add_observations. Every change is kept in an append-only log, so nothing is lost.\n\n"
    "To change what is already there, prefer the extension tools to composing delete_* and "
    "create_* calls (which lose observations and relations and race with other writers); each "
    "is one atomic call: update_entities renames an entity and/or changes its type, moving its "
    "observations and relations with it; update_observations replaces an observation's "
    "content; update_relations changes a relation's type or endpoints; merge_entities folds a "
    "duplicate entity into another (observations unioned, relations repointed). read_conflicts "
    "lists what more than one machine wrote and which write was kept (view all: with superseded "
    "edges and contradictions too); read_history lists "
    "every change ever made to an entity, with when, by which tool and client (the provenance "
    "of a fact). On a large graph, read_graph and search_nodes take limit/offset (and "
    "search_nodes an entityType filter) to read a page at a time; the read tools take as_of "
    "(a log position or an ISO time) to answer as the graph was then."
)
MESH_INSTRUCTIONS = (
    'The graph is one of nodes (a name, a nodeType and "Key: Value" metadata strings) and '
    "directed, weighted edges (from, to, edgeType, weight in [0, 1], default 1). Read it with "
    "read_graph, search_nodes or open_nodes (search and open also return each match's "
    "neighbours and the edges to them); change it with add_nodes, update_nodes, delete_nodes "
    "(which removes the node's edges too), add_edges, update_edges (weight is new evidence, "
    "averaged with the current weight), delete_edges, add_metadata and delete_metadata. Each "
    "call is atomic: on an error nothing is written, and the answer suggests what to do."
)
SCHEMA_INSTRUCTIONS = (
    "Typed entities: each entity-type schema in force has add_<type>, update_<type> and "
    "delete_<type> tools (e.g. add_person), taking the properties under the type's name, e.g. "
    '{"person": {"name": ...}}. They check required properties and allowed values, store '
    'each property as a "Key: Value" observation, and turn relationship properties into '
    "relations (their targets must already exist). update_<type> changes only the properties "
    "given; delete_<type> removes the entity and its relations. The tool list changes when "
    "schema files change (notifications/tools/list_changed)."
)


GRAPH_INSTRUCTIONS = (
    "Weighted, time-bounded knowledge (graph_* tools): graph_relate records facts as edges "
    "between entities (created when missing) with a weight in [0, 1], evidence, provenance "
    "and an optional valid_at; a dated fact supersedes the source's earlier target of the same "
    "relation. graph_query walks up to 4 hops from entities (current facts by default), "
    "graph_entities searches (misspelt names too) and lists, graph_boost and graph_weaken "
    "adjust a fact's weight, "
    "graph_contradictions lists CONTRADICTS edges (include_conflicts: with replica conflicts and "
    "superseded edges), graph_validate flags low-quality entities, graph_communities clusters, "
    "graph_build_context opens a session, graph_stats summarises, graph_delete removes "
    "an entity and its edges, graph_export writes a JSONL backup, graph_audit appends to the "
    "audit log. graph_decay lets unconfirmed knowledge fade (also run daily by the server), "
    "graph_prune previews or removes what fell below the thresholds. Every read takes as_of "
    "(a log position or an ISO time) to read the past. Each call is atomic: on an error "
    "nothing is written. graph_merge folds a duplicate into the entity it duplicates (dry_run "
    "shows the counts first); graph_unmerge splits a wrong merge; graph_merge_suggestions "
    "finds likely duplicates to review before merging."
)
CYPHER_ON = (
    " graph_cypher runs one read-only Cypher query (Neo4j-style labels work) for what no "
    "fixed tool answers."
)
CYPHER_OFF = (
    " graph_cypher (read-only Cypher) is not available: install the extra with "
    f"`{INSTALL_HINT}` and restart to enable it."
)


def instructions(families: Iterable[str]) -> str:
    """The server instructions for a tool profile: one paragraph per family it serves."""
    chosen = set(families)
    parts = [
        text
        for family, text in (
            ("memory", MEMORY_INSTRUCTIONS),
            ("mesh", MESH_INSTRUCTIONS),
            ("schema", SCHEMA_INSTRUCTIONS),
            ("graph", GRAPH_INSTRUCTIONS + (CYPHER_ON if cypher_available() else CYPHER_OFF)),
        )
        if family in chosen
    ]
    return "\n\n".join(parts)


class MemoryServer(Server[Any]):
    """The SDK's low-level server, advertising list-changed and subscribe on every transport.

    The streamable-HTTP manager builds its initialization options with no arguments, which
    would advertise `listChanged: false`; this override makes every path agree.

    Over graphmem's own stdio transport, plain tool calls are answered by its fast path
    (graphmem.wire.fast_calls) with `call_tool`, the very function on_call_tool runs.
    """

    call_tool: ToolCaller | None = None
    fast_calls: bool = True  # GRAPHMEM_FAST_CALLS
    metrics: ServiceMetrics | None = None  # what /metrics serves (graphmem.transports)

    async def run(
        self,
        read_stream: Any,
        write_stream: Any,
        initialization_options: InitializationOptions,
        raise_exceptions: bool = False,
    ) -> None:
        call_tool = self.call_tool
        if (
            call_tool is not None
            and isinstance(read_stream, WireReadStream)
            and self.fast_calls
            # What the fast path does not do: raise handler exceptions, run middleware, add
            # cache hints to a tools/call result.
            and not raise_exceptions
            and not self.middleware
            and "tools/call" not in self.cache_hints
        ):
            read_stream.attach(FastCalls(call_tool, self))
        await super().run(read_stream, write_stream, initialization_options, raise_exceptions)

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions,
        )


def _wire_result(ctx: ServerRequestContext[Any, Any], outcome: ToolOutcome) -> dict[str, Any]:
    """The result the SDK is handed: a spooled answer that came over HTTP as stand-ins the
    HTTP service writes it in place of, slice by slice (graphmem.spliced_answers)."""
    slot = slot_of(ctx.request) if outcome.body is not None else None
    if slot is not None:
        return slot.stand_in(outcome)
    return outcome.to_wire()


def _cause(ctx: ServerRequestContext[Any, Any], tool: str) -> Cause:
    client = None
    params = ctx.session.client_params
    if params is not None and params.client_info is not None:
        client = params.client_info.name
    session = None
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is not None:
        session = headers.get("mcp-session-id")
    return Cause(tool=tool, client=client, session=session)


async def on_list_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[
            types.Resource(
                uri=GRAPH_URI,
                name="knowledge-graph",
                title="Knowledge Graph",
                description="The full knowledge graph with all entities and relations",
                mime_type="application/json",
            )
        ]
    )


async def on_list_resource_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


def _record_call(
    metrics: ServiceMetrics | None,
    name: str,
    cause: Cause,
    *,
    known: bool,
    outcome: ToolOutcome,
    started: float,
    events: int,
) -> None:
    """The canonical line of a call (one per call, whatever its transport and outcome) and
    its metrics."""
    seconds = time.perf_counter() - started
    log.info(
        "tool_called",
        tool=name,
        client=cause.client,
        session=cause.session,
        outcome="error" if outcome.is_error else "ok",
        is_error=outcome.is_error,
        ms=round(seconds * 1000, 3),
        events=events,
    )
    if metrics is not None:
        metrics.tool_called(name, known, outcome.is_error, seconds)


def build_server(
    app: App, notifier: Notifier, metrics: ServiceMetrics | None = None
) -> MemoryServer:
    """The MCP server over `app`'s graph, exposing the tools of its settings' profile;
    `metrics` counts and times its tool calls."""
    graph = app.graph
    limits = app.settings.limits
    catalog = ToolCatalog(app.settings.tools)
    family = (
        GraphFamily.from_settings(app.settings, app.embeddings, app.cypher)
        if "graph" in app.settings.tools
        else None
    )
    clock = app.settings.graph.wall_clock()

    async def find_tool(name: str) -> ToolSpec | None:
        # Static tools need no look-up; a schema tool is the one of the schemas in force now.
        spec = catalog.static.get(name)
        if spec is None and catalog.uses_schemas:
            await catalog.refresh(graph)
            spec = catalog.get(name)
        return spec

    async def current_tools() -> Callable[[str], bool]:
        await catalog.refresh(graph)
        return catalog.has

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        await catalog.refresh(graph)
        return types.ListToolsResult(tools=catalog.tools())

    async def call_tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        # Every transport's tool call: the SDK's handler below and the stdio fast path.
        started = time.perf_counter()
        if family is not None:
            graph.start_family_index()  # once; a client may call before `initialized`
        with tallying() as tally:
            spec = await find_tool(name)
            if spec is None:
                outcome = error(_unknown_tool(name, catalog.names()))
            else:
                tool_context = ToolContext(
                    graph,
                    limits,
                    cause,
                    app.transactions,
                    app.hooks,
                    app.time_travel,
                    family,
                    clock,
                    app.settings.data_dir,
                )
                outcome = await _run(spec, tool_context, arguments, tool_names=current_tools)
                if outcome.mutated and not outcome.is_error:
                    # Before the answer, as the official server does.
                    await notifier.resource_updated(GRAPH_URI)
        _record_call(
            metrics,
            name,
            cause,
            known=spec is not None,
            outcome=outcome,
            started=started,
            events=tally.events,
        )
        return outcome

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        outcome = await call_tool(params.name, params.arguments or {}, _cause(ctx, params.name))
        # A dict is a valid handler result for the SDK (see ToolOutcome.to_wire).
        return _wire_result(ctx, outcome)  # type: ignore[return-value]

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != GRAPH_URI:
            raise MCPError(
                -32002, f"Resource {params.uri} not found; the one resource is {GRAPH_URI}"
            )
        value = await graph.query(whole_graph)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=GRAPH_URI, mime_type="application/json", text=render(value)
                )
            ]
        )

    async def on_subscribe(
        ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        notifier.subscribe(ctx, str(params.uri))
        return types.EmptyResult()

    async def on_unsubscribe(
        ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        notifier.unsubscribe(ctx, str(params.uri))
        return types.EmptyResult()

    async def on_initialized(
        ctx: ServerRequestContext[Any, Any], params: types.NotificationParams | None
    ) -> None:
        notifier.track(ctx)
        if family is not None:
            # The first request is answered: build the family index in the background now,
            # not in the first graph read (~210 s at 1,000,000 entities, past its bound).
            graph.start_family_index()

    server = MemoryServer(
        SERVER_NAME,
        version=graphmem_version(),
        title="graphmem",
        instructions=instructions(catalog.families),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
        on_subscribe_resource=on_subscribe,
        on_unsubscribe_resource=on_unsubscribe,
        on_subscriptions_listen=ListenHandler(notifier.bus),
    )
    # The SDK wraps every message in an OpenTelemetry span by default; with no exporter it
    # records nothing, yet it costs a fifth of a small call. Structured logs carry the timings.
    server.middleware = []
    server.call_tool = call_tool
    server.metrics = metrics
    server.fast_calls = app.settings.fast_calls
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, on_initialized
    )
    return server


def _unknown_tool(name: str, names: Iterable[str]) -> str:
    # The official server's words, byte for byte when no tool is close (its transcripts replay
    # identically); else the closest names after them.
    closest = closest_tools(name, names)
    official = f"MCP error -32602: Tool {name} not found"
    if name == "graph_cypher":  # served only with its extra: say how to get it
        official += f"; install {INSTALL_HINT} to enable it"
    return f"{official}. Did you mean: {', '.join(closest)}?" if closest else official


def _any_tool(name: str) -> bool:
    return True


async def _run(
    spec: ToolSpec,
    ctx: ToolContext,
    arguments: dict[str, Any],
    *,
    tool_names: Callable[[], Awaitable[Callable[[str], bool]]],
) -> ToolOutcome:
    def failed(
        message: str,
        suggestions: list[str] | None = None,
        exists: Callable[[str], bool] = _any_tool,
    ) -> ToolOutcome:
        if spec.error_style == "mesh":
            return mesh_error(
                public_message(spec.tool.name, message),
                clock=ctx.clock,
                suggestions=existing_suggestions(suggestions or (), exists),
            )
        return error(message)

    async def refused(message: str, suggestions: list[str] | None) -> ToolOutcome:
        # Which tools exist is asked only for a refusal with suggestions (a static tool's
        # call does not refresh the schema tools on its way in).
        if spec.error_style != "mesh" or not suggestions:
            return failed(message, suggestions)
        return failed(message, suggestions, await tool_names())

    try:
        outcome: ToolOutcome = await _run_when_indexed(spec, ctx, arguments)
    except FamilyIndexBuildingError as building:
        return failed(f"{spec.tool.name}: {building}")
    except ToolInputError as problem:
        return await refused(str(problem), getattr(problem, "suggestions", None))
    except CommandRejectedError as rejection:
        return await refused(rejection.message, getattr(rejection, "suggestions", None))
    except FAULTS as fault:  # a damaged log, a full or read-only disk: say so, not "internal"
        log.error("tool_failed", tool=spec.tool.name, reason=str(fault))
        return failed(f"{spec.tool.name} failed: {explain(fault)}")
    except TimeoutError:
        return failed(
            f"{spec.tool.name} did not finish within {ctx.graph.timeout:g} s; the graph may be "
            "busy. Read the graph to see whether the change was applied before retrying."
        )
    except Exception:  # the edge: an unexpected failure is one tool's error, never a crash
        log.exception("tool_failed", tool=spec.tool.name)
        return failed(
            f"{spec.tool.name} failed with an internal error (logged on the server). Read the "
            "graph to see its current state before retrying."
        )
    return outcome


# How long a graph call that met the family index being built waits for it before answering
# so (FamilyIndexBuildingError): part of the request's bound, so that the call itself fits.
INDEX_WAIT_SHARE = 0.5


async def _run_when_indexed(
    spec: ToolSpec, ctx: ToolContext, arguments: dict[str, Any]
) -> ToolOutcome:
    """The tool's outcome; one that met the family index being built (refused before
    anything was done) waits for it, bounded, and runs once more."""
    try:
        return await spec.run(ctx, arguments)
    except FamilyIndexBuildingError:
        progress = ctx.graph.family_index
        wait = ctx.graph.timeout * INDEX_WAIT_SHARE
        if not await asyncio.to_thread(progress.wait_built, wait):
            raise
    return await spec.run(ctx, arguments)
