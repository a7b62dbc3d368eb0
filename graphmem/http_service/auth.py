"""Bearer-token authentication: named tokens, compared in constant time, never logged."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, field

import structlog
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from graphmem.config import HttpSettings
from graphmem.http_service.responses import error_response

log = structlog.get_logger(__name__)

# The hosts that are loopback by name. Anything else (0.0.0.0, a LAN address, even another
# 127.x alias) may be reachable from elsewhere, so it needs a token.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
DEFAULT_TOKEN_NAME = "default"
MIN_TOKEN_CHARS = 16
# Where BearerAuth leaves the name of the token a request presented (None: no tokens set).
TOKEN_NAME_KEY = "graphmem.token_name"
HOW_TO_SET = (
    "set GRAPHMEM_HTTP_TOKEN to a long random secret (e.g. the output of "
    "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`), or point "
    "GRAPHMEM_HTTP_TOKEN_FILE at a file of `name:token` lines; clients then send "
    "`Authorization: Bearer <token>`"
)


class TokenError(ValueError):
    """The configured tokens cannot be used; the message says which and what to do."""


@dataclass(frozen=True)
class NamedToken:
    name: str
    # Compared as a digest, so that the comparison takes as long whatever the lengths.
    digest: bytes = field(repr=False)


def _digest(secret: str | bytes) -> bytes:
    raw = secret.encode() if isinstance(secret, str) else secret
    return hashlib.sha256(raw).digest()


def _named(name: str, secret: str, where: str) -> NamedToken:
    if len(secret) < MIN_TOKEN_CHARS:
        raise TokenError(
            f"{where}: the token is shorter than {MIN_TOKEN_CHARS} characters; use a long "
            "random secret (e.g. `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
        )
    return NamedToken(name, _digest(secret))


def named_token(name: str, secret: str, where: str) -> NamedToken:
    """`secret` as a token named `name`; TokenError (naming `where`) when it is too short."""
    return _named(name, secret.strip(), where)


def _from_file(lines: Iterable[str], where: str) -> list[NamedToken]:
    tokens = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, sep, secret = text.partition(":")
        if not sep or not name.strip() or not secret.strip():
            raise TokenError(
                f"{where} line {number} is not `name:token` (blank lines and # comments are "
                "allowed)"
            )
        tokens.append(_named(name.strip(), secret.strip(), f"{where} line {number}"))
    return tokens


def metrics_token(http: HttpSettings) -> NamedToken | None:
    """GRAPHMEM_METRICS_TOKEN as a named token ("metrics"), or None when unset."""
    if not http.metrics_token:
        return None
    return _named("metrics", http.metrics_token.strip(), "GRAPHMEM_METRICS_TOKEN")


def load_tokens(http: HttpSettings) -> tuple[NamedToken, ...]:
    """The tokens GRAPHMEM_HTTP_TOKEN and GRAPHMEM_HTTP_TOKEN_FILE set, each with its name."""
    tokens = []
    if http.token:
        tokens.append(_named(DEFAULT_TOKEN_NAME, http.token.strip(), "GRAPHMEM_HTTP_TOKEN"))
    if http.token_file is not None:
        where = f"GRAPHMEM_HTTP_TOKEN_FILE={str(http.token_file)!r}"
        try:
            text = http.token_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise TokenError(f"{where} cannot be read: {error}") from None
        tokens.extend(_from_file(text.splitlines(), where))
        if not tokens:
            raise TokenError(f"{where} holds no `name:token` line")
    names = [t.name for t in tokens]
    if duplicates := sorted({n for n in names if names.count(n) > 1}):
        raise TokenError(
            "token names must be unique in GRAPHMEM_HTTP_TOKEN_FILE (the name of "
            f"GRAPHMEM_HTTP_TOKEN is {DEFAULT_TOKEN_NAME!r}); repeated: {', '.join(duplicates)}"
        )
    return tuple(tokens)


def exposure_problem(host: str, tokens: tuple[NamedToken, ...]) -> str | None:
    """Why serving on `host` with `tokens` would be unsafe, or None when it is not."""
    if tokens or host in LOOPBACK_NAMES:
        return None
    return (
        f"serving HTTP on {host!r} makes the memory reachable beyond this machine's loopback, "
        f"so it needs a bearer token: {HOW_TO_SET}. To serve this machine only, use "
        "--http 127.0.0.1:PORT"
    )


def match(tokens: tuple[NamedToken, ...], presented: str) -> str | None:
    """The name of the token `presented` is, or None; every token is compared, no early exit."""
    digest = _digest(presented)
    found = None
    for token in tokens:
        if hmac.compare_digest(token.digest, digest):
            found = token.name
    return found


class BearerAuth:
    """ASGI middleware: a request must carry `Authorization: Bearer <one of the tokens>`."""

    def __init__(self, app: ASGIApp, tokens: tuple[NamedToken, ...]) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.tokens:
            await self.app(scope, receive, send)
            return
        scheme, _, credential = (Headers(scope=scope).get("authorization") or "").partition(" ")
        name = match(self.tokens, credential.strip()) if scheme.lower() == "bearer" else None
        if name is None:
            reason = "invalid_token" if credential else "missing_token"
            client = scope.get("client")
            log.warning("http_unauthorized", reason=reason, client=client[0] if client else None)
            challenge = 'Bearer realm="graphmem"'
            if credential:
                challenge += ', error="invalid_token"'
            await error_response(
                401,
                "Unauthorized: this service needs `Authorization: Bearer <token>` with one of "
                "its tokens (GRAPHMEM_HTTP_TOKEN or GRAPHMEM_HTTP_TOKEN_FILE where it runs)",
                headers={"WWW-Authenticate": challenge},
            )(scope, receive, send)
            return
        scope[TOKEN_NAME_KEY] = name
        await self.app(scope, receive, send)
