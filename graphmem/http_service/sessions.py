"""Session limits for the handshake era: per client and in all, so no one client locks others out.

The SDK keeps one transport and one server task per session until the client ends it or it
has been idle for its idle timeout, and past its one global cap it refuses every newcomer.
One client that opens sessions and walks away would so lock everybody out. Here a client (the
token it presented and its address) holds at most `per_client` sessions: one more closes its
own session idle longest, or is refused with 429 when all of them are busy. When the whole
service is full, a newcomer closes the session idle longest of the client holding the most.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphmem.http_service.auth import TOKEN_NAME_KEY
from graphmem.http_service.responses import error_response

log = structlog.get_logger(__name__)

# (the token's name or None, the client's address)
ClientKey = tuple[str | None, str]


@dataclass
class _Session:
    client: ClientKey
    last_active: float
    in_flight: int = 0


@dataclass(frozen=True)
class SessionLimits:
    max_sessions: int
    per_client: int
    idle_seconds: float


def _client(scope: Scope) -> ClientKey:
    address = scope.get("client")
    return scope.get(TOKEN_NAME_KEY), address[0] if address else "unknown"


def _opens_session(scope: Scope, headers: Headers) -> bool:
    """Whether the SDK would open a session for this request (a handshake-era POST)."""
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    return scope["method"] == "POST" and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)


class SessionGuard:
    """ASGI middleware in front of the SDK's session manager; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        path: str,
        limits: SessionLimits,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.path = path
        self.limits = limits
        self.clock = clock
        self._sessions: dict[str, _Session] = {}
        self._held: Counter[ClientKey] = Counter()  # sessions and openings under way

    def open_sessions(self) -> int:
        """Handshake-era sessions open now (read by /metrics from another thread: a len)."""
        return len(self._sessions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        session_id = headers.get(MCP_SESSION_ID_HEADER)
        if session_id is None:
            if _opens_session(scope, headers):
                await self._open(scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        session = self._sessions.get(session_id)
        if session is None:  # unknown or ended: the SDK answers 404
            await self.app(scope, receive, send)
            return
        if session.client[0] != _client(scope)[0]:
            # Another token's session: answered as if it did not exist, as the SDK would.
            await error_response(404, "Session not found")(scope, receive, send)
            return
        await self._serve(session_id, session, scope, receive, send)

    async def _serve(
        self, session_id: str, session: _Session, scope: Scope, receive: Receive, send: Send
    ) -> None:
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        session.in_flight += 1
        try:
            await self.app(scope, receive, watch)
        finally:
            session.in_flight -= 1
            session.last_active = self.clock()
            if status == 404 or (scope["method"] == "DELETE" and status < 300):
                self._forget(session_id)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = _client(scope)
        victims, refusal = self._admit(client)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        opened: list[tuple[str, _Session]] = []

        async def register(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                found = Headers(raw=message.get("headers", [])).get(MCP_SESSION_ID_HEADER)
                if found is not None and found not in self._sessions:
                    # The opening holds its place in `_held` from here on as the session.
                    session = _Session(client, self.clock(), in_flight=1)
                    self._sessions[found] = session
                    opened.append((found, session))
                    log.info(
                        "http_session_opened",
                        client=client[1],
                        token=client[0],
                        client_sessions=self._held[client],
                        sessions=len(self._sessions),
                    )
            await send(message)

        try:
            for victim in victims:
                await self._close(victim, scope)
            await self.app(scope, receive, register)
        finally:
            if opened:
                session = opened[0][1]
                session.in_flight -= 1
                session.last_active = self.clock()
            else:
                self._release(client)

    def _admit(self, client: ClientKey) -> tuple[list[str], Response | None]:
        """Sessions to close to make room for one more of `client`'s, or why it gets none.

        Runs with no await and reserves the place, so concurrent openings cannot both take
        the last one."""
        limits = self.limits
        victims = []
        if self._held[client] >= limits.per_client:
            self._forget_expired()
        if self._held[client] >= limits.per_client:
            victim = self._idle_longest(client)
            if victim is None:
                log.warning("http_session_refused", client=client[1], token=client[0])
                return [], error_response(
                    429,
                    f"Too many open sessions from this client ({limits.per_client}, all "
                    "busy): end sessions you no longer use (HTTP DELETE) and retry",
                    headers={"Retry-After": "5"},
                )
            victims.append(victim)
        elif sum(self._held.values()) >= limits.max_sessions:
            self._forget_expired()
            if sum(self._held.values()) >= limits.max_sessions:
                victim = self._idle_longest(None)
                if victim is None:
                    log.warning("http_session_refused", client=client[1], token=client[0])
                    return [], error_response(
                        503,
                        f"Too many open sessions ({limits.max_sessions}, all busy); retry later",
                        headers={"Retry-After": "5"},
                    )
                victims.append(victim)
        for victim in victims:
            held_by = self._sessions[victim].client
            log.info(
                "http_session_evicted", client=held_by[1], token=held_by[0], to_admit=client[1]
            )
            self._forget(victim)
        self._held[client] += 1
        return victims, None

    def _idle_longest(self, client: ClientKey | None) -> str | None:
        """The session idle longest of `client`, or of the client holding the most."""
        if client is None:
            holders = Counter(s.client for s in self._sessions.values() if not s.in_flight)
            if not holders:
                return None
            client = max(holders, key=lambda c: (self._held[c], holders[c]))
        idle = [
            (s.last_active, sid)
            for sid, s in self._sessions.items()
            if s.client == client and not s.in_flight
        ]
        return min(idle)[1] if idle else None

    def _forget_expired(self) -> None:
        """Forget sessions idle past the timeout: the SDK has closed them (it counts from
        just before this guard does, so it is never behind)."""
        deadline = self.clock() - self.limits.idle_seconds
        expired = [
            sid for sid, s in self._sessions.items() if not s.in_flight and s.last_active < deadline
        ]
        for sid in expired:
            self._forget(sid)

    def _forget(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._release(session.client)

    def _release(self, client: ClientKey) -> None:
        self._held[client] -= 1
        if self._held[client] <= 0:
            del self._held[client]

    async def _close(self, session_id: str, scope: Scope) -> None:
        """End a session the way its client would: a DELETE, through the SDK's own handling."""
        headers = [(name, value) for name, value in scope["headers"] if name == b"host"] + [
            (MCP_SESSION_ID_HEADER.encode(), session_id.encode())
        ]
        request = dict(
            scope,
            method="DELETE",
            path=self.path,
            raw_path=self.path.encode(),
            headers=headers,
            query_string=b"",
        )
        request.pop(TOKEN_NAME_KEY, None)
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            pass

        await self.app(request, receive, discard)
