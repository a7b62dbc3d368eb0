"""Change notifications to MCP clients of both protocol eras.

Handshake-era clients (`initialize`, what hosts speak today) get pushes on their connection's
standalone channel, after `resources/subscribe` for resource updates. 2026-07-28 clients get
them on their `subscriptions/listen` stream, fed by the SDK's subscription bus. Every change is
sent both ways.

The tool list changes when schemas come into force or are retired (SchemaRegistered,
SchemaRetired), whether this process's registry wrote them or another process sharing the log
did; a notifier that announces tool changes tells every client of either era.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import structlog

from actors.subscribers import Published
from eventstore.events import SchemaRegistered, SchemaRetired
from graphmem.graph_resource import GRAPH_URI
from graphmem.protocol import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.subscriptions import InMemorySubscriptionBus

log = structlog.get_logger(__name__)


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The SDK offers no public handle on the connection for pushes outside a request
    # (marked TODO(L53) upstream); this is the one place that reaches for it.
    return ctx.session._connection


def tools_changed_by(published: Published) -> bool:
    """Whether `published` changes the schemas in force, and with them the tool list."""
    return any(
        isinstance(envelope.event, SchemaRegistered | SchemaRetired)
        for envelope in published.envelopes
    )


class Notifier:
    """Knows which connections want which notifications, and sends them."""

    def __init__(self, *, announce_tool_changes: bool = False) -> None:
        self._bus: InMemorySubscriptionBus | None = None
        self.announce_tool_changes = announce_tool_changes
        self._legacy: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self._loop: asyncio.AbstractEventLoop | None = None
        # The loop keeps only weak references to tasks: hold them until they are done.
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def bus(self) -> InMemorySubscriptionBus:
        """The SDK's subscription bus, feeding 2026-07-28 `subscriptions/listen` streams:
        made when the SDK's server is (graphmem.server), so a process that serves no SDK
        session never loads the SDK for it."""
        if self._bus is None:
            from mcp.server.subscriptions import InMemorySubscriptionBus  # noqa: PLC0415

            self._bus = InMemorySubscriptionBus()
        return self._bus

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def track(self, ctx: ServerRequestContext[Any, Any]) -> set[str] | None:
        """Remember a handshake-era connection; None for the 2026-07-28 era."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        return self._legacy.setdefault(_connection_of(ctx), set())

    def subscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        uris = self.track(ctx)
        if uris is not None:
            uris.add(uri)

    def unsubscribe(self, ctx: ServerRequestContext[Any, Any], uri: str) -> None:
        uris = self.track(ctx)
        if uris is not None:
            uris.discard(uri)

    async def resource_updated(self, uri: str = GRAPH_URI) -> None:
        if self._bus is not None:  # no bus: no SDK server, so no listening stream either
            from mcp.server.subscriptions import ResourceUpdated  # noqa: PLC0415

            await self._bus.publish(ResourceUpdated(uri=uri))
        for connection, uris in list(self._legacy.items()):
            if uri in uris:
                await self._send(connection.send_resource_updated(uri))

    async def tools_changed(self) -> None:
        if self._bus is not None:
            from mcp.server.subscriptions import ToolsListChanged  # noqa: PLC0415

            await self._bus.publish(ToolsListChanged())
        for connection in list(self._legacy):
            await self._send(connection.send_tool_list_changed())

    async def _send(self, push: Any) -> None:
        try:
            await push
        except Exception:  # a gone client must not fail the caller's request
            log.debug("notification_not_delivered", exc_info=True)

    def on_published(self, published: Published) -> None:
        """Writer subscriber (runs on the writer's thread): announce what clients must hear of.

        Local graph writes are announced by the tool handler itself, before its response, as
        the official server does; this covers what arrives from other processes sharing the
        log, and every change of the schemas in force, from wherever it came.
        """
        graph_changed = not published.local and bool(published.envelopes)
        if self.announce_tool_changes and tools_changed_by(published):
            self._soon(self.tools_changed)
        if graph_changed:
            self._soon(self.resource_updated)

    def _soon(self, announce: Callable[[], Coroutine[Any, Any, None]]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def start() -> None:
            task = loop.create_task(announce())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(start)
