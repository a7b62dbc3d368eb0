"""`/health` and `/metrics`, answered before a request reaches the MCP app (and after the
bearer-token check, so they need the same token as `/mcp`)."""

from __future__ import annotations

import anyio
import msgspec
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from graphmem.http_service.auth import NamedToken, match
from graphmem.metrics import CONTENT_TYPE, ServiceMetrics

__all__ = ["HEALTH_PATH", "METRICS_PATH", "MetricsTokenGate", "Observability"]

HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"


class MetricsTokenGate:
    """ASGI middleware outside `BearerAuth`: a request for `/health` or `/metrics` carrying the
    metrics token (GRAPHMEM_METRICS_TOKEN) is answered here; everything else, including those
    paths with any other credential, goes on to `BearerAuth`. The metrics token opens nothing
    else: a scraper's secret never reaches the memory."""

    def __init__(self, app: ASGIApp, token: NamedToken, observability: Observability) -> None:
        self.app = app
        self.token = (token,)
        self.observability = observability

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") in (HEALTH_PATH, METRICS_PATH):
            authorization = Headers(scope=scope).get("authorization") or ""
            scheme, _, credential = authorization.partition(" ")
            if scheme.lower() == "bearer" and match(self.token, credential.strip()):
                await self.observability(scope, receive, send)
                return
        await self.app(scope, receive, send)


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
