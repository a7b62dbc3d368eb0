"""The nats-py connect options every hub client shares: servers, credentials, TLS."""

from __future__ import annotations

import ssl
from typing import Any

from graphmem.config import ReplicationSettings

__all__ = ["auth_options", "hub_urls"]


def hub_urls(settings: ReplicationSettings) -> list[str]:
    return [u.strip() for u in (settings.url or "").split(",") if u.strip()]


def auth_options(settings: ReplicationSettings) -> dict[str, Any]:
    """Credentials (a .creds file) and TLS (a CA, a client certificate for mutual TLS)."""
    options: dict[str, Any] = {}
    if settings.creds is not None:
        options["user_credentials"] = str(settings.creds)
    tls_url = any(u.startswith("tls://") for u in hub_urls(settings))
    if settings.tls_ca or settings.tls_cert or tls_url:
        context = ssl.create_default_context(
            cafile=str(settings.tls_ca) if settings.tls_ca else None
        )
        if settings.tls_cert is not None:
            context.load_cert_chain(
                str(settings.tls_cert), str(settings.tls_key) if settings.tls_key else None
            )
        options["tls"] = context
    return options
