"""The tool runner: a server's tools, their calls and its identity, without the MCP SDK.

Everything a session needs of graphmem's tools lives here: the catalog of the profile (static
tools, and the schema tools of the schemas in force), the look-up and run of a call with its
errors made tool results, the canonical log line of every call, the server instructions and
identity. graphmem.server puts the SDK's low-level server over one ToolRunner; the stdio
fast path (graphmem.wire.fast_calls) calls `call_tool` directly. Nothing here imports `mcp`,
`mcp_types` or pydantic (tests/graphmem/test_tool_layer_imports.py holds it), so a front
that answers a session without the SDK can use the runner as it is (issue 21, item 2).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import structlog

from actors.errors import CommandRejectedError
from actors.tally import tallying
from eventstore.events import Cause
from graphmem.app import App
from graphmem.cypher import INSTALL_HINT
from graphmem.faults import FAULTS, explain
from graphmem.graph_resource import GRAPH_URI
from graphmem.instructions import instructions
from graphmem.notifier import Notifier
from graphmem.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec, error
from graphmem.tools.catalog import ToolCatalog
from graphmem.tools.definition import ToolDefinition
from graphmem.tools.error_text import closest_tools, existing_suggestions, public_message
from graphmem.tools.graph_family import GraphFamily
from graphmem.tools.mesh_format import mesh_error
from graphmem.version import graphmem_version
from projections.graph_family import FamilyIndexBuildingError

if TYPE_CHECKING:  # prometheus_client: only the HTTP service has /metrics to serve
    from graphmem.metrics import ServiceMetrics

__all__ = ["INDEX_WAIT_SHARE", "SERVER_NAME", "SERVER_TITLE", "ToolRunner"]

log = structlog.get_logger(__name__)

# The official server's identity, so clients configured for it see no difference.
SERVER_NAME = "memory-server"
SERVER_TITLE = "graphmem"

# How long a graph call that met the family index being built waits for it before answering
# so (FamilyIndexBuildingError): part of the request's bound, so that the call itself fits.
INDEX_WAIT_SHARE = 0.5


class ToolRunner:
    """The tools of `app`'s profile, run for any transport. `notifier` hears of each change
    a call made (before its answer, as the official server does); `metrics` counts and times
    the calls."""

    def __init__(self, app: App, notifier: Notifier, metrics: ServiceMetrics | None = None) -> None:
        self.app = app
        self.notifier = notifier
        self.metrics = metrics
        self.catalog = ToolCatalog(app.settings.tools)
        self.family = (
            GraphFamily.from_settings(app.settings, app.embeddings, app.cypher)
            if "graph" in app.settings.tools
            else None
        )
        self.clock = app.settings.graph.wall_clock()
        self.name = SERVER_NAME
        self.title = SERVER_TITLE
        self.version = graphmem_version()
        self.instructions = instructions(self.catalog.families)

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's `Implementation` as the SDK writes it (name, title, version): the
        `serverInfo` of `initialize` and of a 2026-07-28 result's `_meta` stamp."""
        return {"name": self.name, "title": self.title, "version": self.version}

    async def definitions(self) -> list[ToolDefinition]:
        """The tools as `tools/list` lists them now: the schema tools brought up to the
        schemas in force first (one query to the writer; a rebuild only when they changed)."""
        await self.catalog.refresh(self.app.graph)
        return self.catalog.tools()

    def start_family_index(self) -> None:
        """Build the graph family's index in the background, once (no-op without the family):
        called when the first request is answered, so no graph read waits for the whole of it."""
        if self.family is not None:
            self.app.graph.start_family_index()

    async def call_tool(self, name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        """Every transport's tool call: its outcome, errors included (never an exception for
        a bad call), and its canonical log line."""
        started = time.perf_counter()
        self.start_family_index()  # a client may call before `initialized`
        with tallying() as tally:
            spec = await self._find_tool(name)
            if spec is None:
                outcome = error(_unknown_tool(name, self.catalog.names()))
            else:
                outcome = await _run(spec, self._context(cause), arguments, tool_names=self._has)
                if outcome.mutated and not outcome.is_error:
                    # Before the answer, as the official server does.
                    await self.notifier.resource_updated(GRAPH_URI)
        _record_call(
            self.metrics,
            name,
            cause,
            known=spec is not None,
            outcome=outcome,
            started=started,
            events=tally.events,
        )
        return outcome

    def _context(self, cause: Cause) -> ToolContext:
        app = self.app
        return ToolContext(
            app.graph,
            app.settings.limits,
            cause,
            app.transactions,
            app.hooks,
            app.time_travel,
            self.family,
            self.clock,
            app.settings.data_dir,
        )

    async def _find_tool(self, name: str) -> ToolSpec | None:
        # Static tools need no look-up; a schema tool is the one of the schemas in force now.
        catalog = self.catalog
        spec = catalog.static.get(name)
        if spec is None and catalog.uses_schemas:
            await catalog.refresh(self.app.graph)
            spec = catalog.get(name)
        return spec

    async def _has(self) -> Callable[[str], bool]:
        await self.catalog.refresh(self.app.graph)
        return self.catalog.has


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
