"""The built-in authorization server's lasting state: registered clients and issued tokens, in
one JSON file in the data dir, so a restart keeps both.

Tokens are kept as SHA-256 digests only: the file (mode 0600) never holds a usable bearer
token. Client secrets are kept as issued, because the SDK's client authentication compares
them as given. Every change is written whole to a temporary file and renamed over the old one,
so a crash leaves either the old state or the new, never a torn file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec
import structlog
from mcp.shared.auth import OAuthClientInformationFull

log = structlog.get_logger(__name__)

STATE_FILE = "oauth-builtin.json"
# Registration is open to anyone who reaches the service (RFC 7591 dynamic registration), so
# the number of clients is bounded: past it, the oldest client holding no live token goes.
MAX_CLIENTS = 200


class TokenRecord(msgspec.Struct, frozen=True):
    kind: Literal["access", "refresh"]
    client_id: str
    scopes: list[str]
    expires_at: int
    resource: str
    grant: str  # links an access token to the refresh token issued with it


class _File(msgspec.Struct):
    version: int = 1
    clients: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    client_order: list[str] = msgspec.field(default_factory=list)
    tokens: dict[str, TokenRecord] = msgspec.field(default_factory=dict)


class OAuthStateError(RuntimeError):
    """The state file cannot be read; the message says which file and what to do."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class BuiltinState:
    """Clients and token digests, read once at start-up and written through on each change."""

    def __init__(
        self, path: Path, now: Callable[[], float], max_clients: int = MAX_CLIENTS
    ) -> None:
        self.path = path
        self.now = now
        self.max_clients = max_clients
        self._data = self._read()

    def _read(self) -> _File:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return _File()
        except OSError as error:
            raise OAuthStateError(f"{self.path} cannot be read: {error}") from None
        try:
            return msgspec.json.decode(raw, type=_File)
        except msgspec.DecodeError as error:
            raise OAuthStateError(
                f"{self.path} is not the built-in authorization server's state ({error}); move "
                "it aside to start over (registered clients then register again and the owner "
                "approves them again)"
            ) from None

    def _write(self) -> None:
        now = self.now()
        self._data.tokens = {k: t for k, t in self._data.tokens.items() if t.expires_at > now}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(msgspec.json.encode(self._data))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)

    def client(self, client_id: str) -> OAuthClientInformationFull | None:
        record = self._data.clients.get(client_id)
        return None if record is None else OAuthClientInformationFull.model_validate(record)

    def add_client(self, client: OAuthClientInformationFull) -> bool:
        """Register `client`; False when every registered client still holds a live token."""
        assert client.client_id is not None  # the SDK's registration handler assigns one
        data = self._data
        if len(data.clients) >= self.max_clients:
            holding = {t.client_id for t in data.tokens.values() if t.expires_at > self.now()}
            idle = next((c for c in data.client_order if c not in holding), None)
            if idle is None:
                return False
            data.clients.pop(idle, None)
            data.client_order.remove(idle)
            log.info("oauth_client_dropped", client_id=idle, reason="too_many_clients")
        data.clients[client.client_id] = client.model_dump(mode="json", exclude_none=True)
        data.client_order.append(client.client_id)
        self._write()
        return True

    def client_count(self) -> int:
        return len(self._data.clients)

    def token(self, token: str, kind: str) -> TokenRecord | None:
        record = self._data.tokens.get(digest(token))
        return record if record is not None and record.kind == kind else None

    def add_tokens(self, records: dict[str, TokenRecord]) -> None:
        """Store `records` by their tokens (digested here)."""
        self._data.tokens.update({digest(t): r for t, r in records.items()})
        self._write()

    def revoke_grant(self, token: str) -> None:
        """Forget `token` and every token issued with it (an access token and its refresh)."""
        record = self._data.tokens.get(digest(token))
        if record is None:
            return
        self._data.tokens = {k: t for k, t in self._data.tokens.items() if t.grant != record.grant}
        self._write()
