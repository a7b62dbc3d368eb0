"""Change notifications to MCP clients of both protocol eras.

Handshake-era clients (`initialize`, what hosts speak today) get pushes on their connection's
standalone channel, after `resources/subscribe` for resource updates. 2026-07-28 clients get
them on their `subscriptions/listen` stream, fed by the SDK's subscription bus. Every change is
sent both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from typing import Any

import structlog
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from actors.graph_writer import Published

log = structlog.get_logger(__name__)

GRAPH_URI = "memory://knowledge-graph"


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The SDK offers no public handle on the connection for pushes outside a request
    # (marked TODO(L53) upstream); this is the one place that reaches for it.
    return ctx.session._connection


class Notifier:
    """Knows which connections want which notifications, and sends them."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._legacy: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        self._loop: asyncio.AbstractEventLoop | None = None

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
        await self.bus.publish(ResourceUpdated(uri=uri))
        for connection, uris in list(self._legacy.items()):
            if uri in uris:
                await self._send(connection.send_resource_updated(uri))

    async def tools_changed(self) -> None:
        await self.bus.publish(ToolsListChanged())
        for connection in list(self._legacy):
            await self._send(connection.send_tool_list_changed())

    async def _send(self, push: Any) -> None:
        try:
            await push
        except Exception:  # a gone client must not fail the caller's request
            log.debug("notification_not_delivered", exc_info=True)

    def on_published(self, published: Published) -> None:
        """Writer subscriber: other processes' writes reach this process's clients too.

        Local writes are announced by the tool handler itself, before its response, as the
        official server does; this covers what arrives from other processes sharing the log.
        """
        loop = self._loop
        if published.local or loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(lambda: loop.create_task(self.resource_updated()))
