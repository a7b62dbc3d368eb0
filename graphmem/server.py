"""The MCP server: the SDK's low-level server over a ToolRunner (graphmem.tool_runner), the
resource, and the handlers the SDK calls. Everything of the SDK a session needs is here; the
tools, their runs and the server's identity are the runner's, which imports none of it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from eventstore.events import Cause
from graphmem.app import App
from graphmem.graph_resource import GRAPH_RESOURCE, GRAPH_URI
from graphmem.notifier import Notifier
from graphmem.spliced_answers import slot_of
from graphmem.tool_runner import ToolRunner
from graphmem.tools.base import ToolOutcome, render
from graphmem.tools.definition import ToolDefinition
from graphmem.tools.graph_values import whole_graph

if TYPE_CHECKING:  # prometheus_client: only the HTTP service has /metrics to serve
    from graphmem.metrics import ServiceMetrics
from graphmem.wire.fast_calls import FastCalls, ToolCaller
from graphmem.wire.stdio_transport import WireReadStream

__all__ = ["MemoryServer", "build_server", "server_over"]


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
    resource = types.Resource.model_validate(GRAPH_RESOURCE, by_name=False)
    return types.ListResourcesResult(resources=[resource])


async def on_list_resource_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


def build_server(
    app: App, notifier: Notifier, metrics: ServiceMetrics | None = None
) -> MemoryServer:
    """The MCP server over `app`'s graph, exposing the tools of its settings' profile;
    `metrics` counts and times its tool calls."""
    return server_over(ToolRunner(app, notifier, metrics))


def server_over(runner: ToolRunner) -> MemoryServer:
    """The SDK's server over `runner`: its tools, calls and identity, and the resource."""
    graph = runner.app.graph
    notifier = runner.notifier
    sdk_tools = _SdkTools()

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=sdk_tools.of(await runner.definitions()))

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        outcome = await runner.call_tool(
            params.name, params.arguments or {}, _cause(ctx, params.name)
        )
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
        # The first request is answered: build the family index in the background now,
        # not in the first graph read (~210 s at 1,000,000 entities, past its bound).
        runner.start_family_index()

    server = MemoryServer(
        runner.name,
        version=runner.version,
        title=runner.title,
        instructions=runner.instructions,
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
    server.call_tool = runner.call_tool
    server.metrics = runner.metrics
    server.fast_calls = runner.app.settings.fast_calls
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, on_initialized
    )
    return server


class _SdkTools:
    """The SDK's `Tool` of each definition, made once per definition: a schema tool's
    definition is new only when the schemas in force change."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[ToolDefinition, types.Tool]] = {}

    def of(self, definitions: list[ToolDefinition]) -> list[types.Tool]:
        made: dict[str, tuple[ToolDefinition, types.Tool]] = {}
        for definition in definitions:
            known = self._made.get(definition.name)
            if known is None or known[0] is not definition:
                known = (definition, definition.to_sdk())
            made[definition.name] = known
        self._made = made
        return [tool for _, tool in made.values()]
