"""Host and Origin checks (DNS-rebinding protection) on every bind address, loopback or not."""

from __future__ import annotations

import re
import socket

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from graphmem.http_service.auth import LOOPBACK_NAMES

# Binding these listens on every interface: no one name to derive, so the machine's name is.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
_HAS_PORT = re.compile(r":(\d+|\*)$")


def _host_patterns(name: str) -> list[str]:
    """Host-header patterns for `name`: as given if it names a port, else any port or none."""
    name = name.strip().lower()
    if name.count(":") > 1 and not name.startswith("["):
        name = f"[{name}]"  # a bare IPv6 address, as a Host header writes it
    if _HAS_PORT.search(name) and not name.endswith("]"):
        return [name]
    return [name, f"{name}:*"]


def security_settings(
    bind_host: str, extra_hosts: tuple[str, ...] = (), extra_origins: tuple[str, ...] = ()
) -> TransportSecuritySettings:
    """The hosts and origins accepted: the loopback names, the bind address (the machine's
    name for a wildcard bind), and those configured; each host's origins over http and https."""
    names = sorted(LOOPBACK_NAMES)
    names.append(socket.gethostname() if bind_host in WILDCARD_HOSTS else bind_host)
    hosts = list(dict.fromkeys(p for n in (*names, *extra_hosts) for p in _host_patterns(n)))
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    origins.extend(o.strip().rstrip("/").lower() for o in extra_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=list(dict.fromkeys(origins)),
    )


class HostCheck:
    """ASGI middleware: 421 for a Host, 403 for an Origin, that is not allowed.

    The SDK checks too, but only deep inside a session's transport; checking first means no
    guard behind this one (authentication, session admission) acts for a foreign page.
    """

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self.app = app
        self.check = TransportSecurityMiddleware(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self.check.validate_request(Request(scope, receive), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)
