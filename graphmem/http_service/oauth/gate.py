"""The resource server's door: in OAuth mode it takes the place of `BearerAuth`.

A request for anything but the public OAuth paths (the metadata documents, and the built-in
server's own endpoints) needs `Authorization: Bearer <token>`: one of the static tokens, or an
OAuth access token that the verifier vouches for and that is unexpired, issued for this
service's URL (its audience), and carries the required scopes. A refusal is 401 with a
`WWW-Authenticate` challenge naming the protected-resource metadata (RFC 9728 §5.1), which is
how a client finds where to get a token; a token short of scopes is 403 insufficient_scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import msgspec
import structlog
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from graphmem.http_service.auth import TOKEN_NAME_KEY, NamedToken, match

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str
    description: str


def refusal(
    token: AccessToken | None, *, resource: str, scopes: tuple[str, ...], now: float
) -> Refusal | None:
    """Why `token` (None: not known to the authorization server) opens nothing here, or None."""
    if token is None:
        return Refusal(401, "invalid_token", "the token is unknown, revoked or expired")
    if token.expires_at is not None and token.expires_at <= now:
        return Refusal(401, "invalid_token", "the token has expired; refresh it or sign in again")
    if (token.resource or "").rstrip("/") != resource.rstrip("/"):
        return Refusal(
            401,
            "invalid_token",
            f"the token was issued for {token.resource or 'no resource'}, not for {resource}",
        )
    if missing := [s for s in scopes if s not in token.scopes]:
        return Refusal(403, "insufficient_scope", f"the token lacks scope {' '.join(missing)}")
    return None


def challenge(metadata_url: str, refused: Refusal | None) -> str:
    """The WWW-Authenticate value: no error code when no token came at all (RFC 6750 §3)."""
    parts = (
        []
        if refused is None
        else [
            f'error="{refused.error}"',
            f'error_description="{refused.description}"',
        ]
    )
    parts.append(f'resource_metadata="{metadata_url}"')
    return "Bearer " + ", ".join(parts)


class OAuthGate:
    """ASGI middleware; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        verifier: TokenVerifier,
        static_tokens: tuple[NamedToken, ...],
        resource: str,
        scopes: tuple[str, ...],
        metadata_url: str,
        public_paths: frozenset[str],
        now: Callable[[], float],
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.static_tokens = static_tokens
        self.resource = resource
        self.scopes = scopes
        self.metadata_url = metadata_url
        self.public_paths = public_paths
        self.now = now

    def _public(self, path: str) -> bool:
        return path in self.public_paths or path.startswith("/.well-known/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._public(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        scheme, _, credential = (Headers(scope=scope).get("authorization") or "").partition(" ")
        credential = credential.strip() if scheme.lower() == "bearer" else ""
        if not credential:
            await self._refuse(scope, receive, send, None)
            return
        if (name := match(self.static_tokens, credential)) is not None:
            scope[TOKEN_NAME_KEY] = name
            await self.app(scope, receive, send)
            return
        token = await self.verifier.verify_token(credential)
        refused = refusal(token, resource=self.resource, scopes=self.scopes, now=self.now())
        if refused is not None or token is None:
            await self._refuse(scope, receive, send, refused)
            return
        scope[TOKEN_NAME_KEY] = f"oauth:{token.client_id}"
        scope["user"] = AuthenticatedUser(token)
        scope["auth"] = AuthCredentials(token.scopes)
        await self.app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, refused: Refusal | None
    ) -> None:
        client = scope.get("client")
        log.warning(
            "http_unauthorized",
            reason=refused.description if refused else "missing_token",
            client=client[0] if client else None,
        )
        status = refused.status if refused else 401
        body = {
            "error": refused.error if refused else "invalid_token",
            "error_description": refused.description
            if refused
            else "this service needs `Authorization: Bearer <token>`: an OAuth access token "
            f"(its authorization server is named at {self.metadata_url}) or a static token",
        }
        response = Response(
            msgspec.json.encode(body),
            status_code=status,
            media_type="application/json",
            headers={"WWW-Authenticate": challenge(self.metadata_url, refused)},
        )
        await response(scope, receive, send)
