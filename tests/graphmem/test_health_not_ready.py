"""`/health` answers 503 (live, not ready) with the reason once the writer is gone: a real
LMDB log and real actors behind the real Observability middleware, asked over ASGI.

Stopping the actors while the log stays open is what a server looks like when its writer is
gone; the check then fails at once (the dead supervisor answers nothing), no timer involved."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from eventstore.lmdb_log import LmdbEventLog
from graphmem.app import start_actors, stop_actors
from graphmem.config import Settings
from graphmem.http_service.observability import Observability
from graphmem.metrics import ServiceMetrics

pytestmark = pytest.mark.anyio


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("mcp", status_code=404)(scope, receive, send)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_health_answers_503_not_ready_with_the_reason_once_the_writer_is_gone(
    tmp_path: Path,
) -> None:
    with LmdbEventLog.open(tmp_path) as event_log:
        app = start_actors(Settings(data_dir=tmp_path), event_log)
        metrics = ServiceMetrics(app)
        transport = httpx.ASGITransport(app=Observability(_inner, metrics))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            with anyio.fail_after(30):
                ready = await client.get("/health")
            assert ready.status_code == 200, ready.text
            assert ready.json()["ready"] is True

            assert await anyio.to_thread.run_sync(stop_actors, app)
            with anyio.fail_after(30):
                gone = await client.get("/health")
            assert gone.status_code == 503, gone.text
            health = gone.json()
            assert health["status"] == "not_ready"
            assert health["live"] is True
            assert health["ready"] is False
            assert health["log_position"] == ready.json()["log_position"]
            assert health["problem"].startswith("the writer did not answer"), health
            assert "restart the service" in health["problem"]  # says what to do
            with anyio.fail_after(30):
                scraped = await client.get("/metrics")
            assert scraped.status_code == 200
            assert "graphmem_up 0.0" in scraped.text
