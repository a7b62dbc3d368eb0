"""`/health` and `/metrics`, answered before a request reaches the MCP app (and after the
bearer-token check, so they need the same token as `/mcp`)."""

from __future__ import annotations

import anyio
import msgspec
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from graphmem.metrics import CONTENT_TYPE, ServiceMetrics

__all__ = ["HEALTH_PATH", "METRICS_PATH", "Observability"]

HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"


class Observability:
    """ASGI middleware: GET `/health` (200 when ready, 503 when not, JSON either way) and GET
    `/metrics` (Prometheus text format); every other request passes on."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path not in (HEALTH_PATH, METRICS_PATH):
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            response = Response("use GET\n", status_code=405, headers={"Allow": "GET, HEAD"})
        elif path == HEALTH_PATH:
            # Off the event loop: the check asks the writer actor and waits for its answer.
            health = await anyio.to_thread.run_sync(self.metrics.health)
            response = Response(
                msgspec.json.encode(health.to_json()),
                status_code=200 if health.ready else 503,
                media_type="application/json",
            )
        else:
            body = await anyio.to_thread.run_sync(self.metrics.exposition)
            response = Response(body, media_type=CONTENT_TYPE)
        await response(scope, receive, send)
