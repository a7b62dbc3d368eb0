"""Running the MCP server over streamable HTTP: one long-running service many clients share.

Apart from graphmem.transports (stdio) so that a stdio server never imports uvicorn, starlette's
middleware stack, the guards or OAuth (PyJWT, cryptography's x509): `graphmem serve --http`
imports this module when it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import structlog
import uvicorn
from starlette.types import ASGIApp
from uvicorn.server import HANDLED_SIGNALS

from graphmem.app import App
from graphmem.http_service import (
    AnswerSplicer,
    BearerAuth,
    HostCheck,
    InvalidIdCheck,
    MetricsTokenGate,
    NamedToken,
    Observability,
    SessionGuard,
    SessionLimits,
    header_timeout_protocol,
    security_settings,
)
from graphmem.http_service.oauth import OAuthPlan, start_oauth
from graphmem.server import MemoryServer
from graphmem.transports import HTTP_PATH, serving

__all__ = ["serve_http"]

log = structlog.get_logger(__name__)


class _UvicornServer(uvicorn.Server):
    """uvicorn, except that a stop signal only stops the HTTP service.

    uvicorn re-raises a caught SIGTERM once its own shutdown is done, and SIGTERM's default
    action ends the process on the spot: the actors would never stop nor the log close. Here
    the signal makes `serve_http` return, and the caller's shutdown runs as on any other exit.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():  # signals: main only
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def _guarded_app(
    server: MemoryServer,
    app: App,
    host: str,
    tokens: tuple[NamedToken, ...],
    scraper: NamedToken | None = None,
    *,
    oauth: OAuthPlan | None = None,
) -> ASGIApp:
    """The SDK's streamable-HTTP app behind the guards of `graphmem.http_service`; with
    `oauth`, the OAuth gate stands where the static-token check does."""
    http = app.settings.http
    # The host clients name in the resource URL is accepted like the bind address.
    public_host = (urlsplit(oauth.resource).netloc,) if oauth is not None else ()
    security = security_settings(host, (*http.allowed_hosts, *public_host), http.allowed_origins)
    wall_clock = app.settings.graph.wall_clock()

    def now() -> float:
        return wall_clock() / 1000

    service = start_oauth(oauth, app.settings.data_dir, now) if oauth is not None else None
    limits = SessionLimits(
        max_sessions=http.max_sessions,
        per_client=http.max_sessions_per_client,
        idle_seconds=http.session_idle_seconds,
    )
    sdk_app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        json_response=http.json_response,
        host=host,
        transport_security=security,
        session_idle_timeout=http.session_idle_seconds,
        # The guard admits sessions; the SDK's own cap only backs it up.
        max_sessions=2 * http.max_sessions,
        **(service.app_arguments() if service is not None else {}),
    )
    # Whole-graph answers streamed into the SDK's responses; GRAPHMEM_FAST_CALLS=0: all whole.
    inner: ASGIApp = AnswerSplicer(sdk_app) if server.fast_calls else sdk_app
    sessions = SessionGuard(inner, HTTP_PATH, limits)
    guarded: ASGIApp = InvalidIdCheck(sessions)
    observability = None
    if server.metrics is not None:
        server.metrics.open_sessions = sessions.open_sessions
        guarded = observability = Observability(guarded, server.metrics)
    if service is not None:
        guarded = service.gate(guarded, tokens, now)
    else:
        guarded = BearerAuth(guarded, tokens)
    if scraper is not None and observability is not None:
        guarded = MetricsTokenGate(guarded, scraper, observability)
    return HostCheck(guarded, security)


def serve_http(
    app: App,
    host: str,
    port: int,
    tokens: tuple[NamedToken, ...] = (),
    scraper: NamedToken | None = None,
    *,
    oauth: OAuthPlan | None = None,
) -> None:
    """Serve streamable HTTP on host:port; `tokens` (required off loopback unless `oauth`: the
    caller checks with `http_service.exposure_problem`) are the bearer tokens clients must
    present; `scraper` (GRAPHMEM_METRICS_TOKEN) one good for /health and /metrics only;
    `oauth` (GRAPHMEM_OAUTH) OAuth 2.1 access tokens besides the static ones."""
    with serving(app) as (notifier, server):
        config = uvicorn.Config(
            _guarded_app(server, app, host, tokens, scraper, oauth=oauth),
            host=host,
            port=port,
            log_config=None,
            lifespan="on",
            http=header_timeout_protocol(app.settings.http.header_timeout_seconds),
        )
        http = _UvicornServer(config)

        async def main() -> None:
            notifier.bind_loop(asyncio.get_running_loop())
            log.info(
                "http_listening",
                url=f"http://{host}:{port}{HTTP_PATH}",
                tokens=[t.name for t in tokens],
                oauth=oauth.mode if oauth is not None else "off",
            )
            await http.serve()

        asyncio.run(main())
