"""Tokens from an external authorization server, checked at its RFC 7662 introspection
endpoint on every request (so a revocation there takes effect at once)."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import structlog
from mcp.server.auth.provider import AccessToken

log = structlog.get_logger(__name__)

# Bounded: an authorization server that hangs costs a client one refused request, not a
# request stuck forever.
TIMEOUT_SECONDS = 10.0


class IntrospectionVerifier:
    """The SDK's TokenVerifier protocol over an introspection endpoint.

    The answer's `aud` is reported as the token's resource (the gate compares it with this
    service's URL): the entry equal to `resource` when `aud` is a list. An answer from another
    issuer than `issuer` is refused."""

    def __init__(
        self,
        endpoint: str,
        *,
        issuer: str,
        resource: str,
        client_id: str | None,
        client_secret: str | None,
    ) -> None:
        self.endpoint = endpoint
        self.issuer = issuer.rstrip("/")
        self.resource = resource
        self.client_id = client_id
        self.auth = (
            httpx.BasicAuth(client_id, client_secret) if client_id and client_secret else None
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        form = {"token": token, "token_type_hint": "access_token"}
        if self.client_id:
            form["client_id"] = self.client_id
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, auth=self.auth) as http:
                response = await http.post(self.endpoint, data=form)
        except httpx.HTTPError as error:
            log.warning("oauth_introspection_failed", endpoint=self.endpoint, error=str(error))
            return None
        if response.status_code != 200:
            log.warning(
                "oauth_introspection_refused", endpoint=self.endpoint, status=response.status_code
            )
            return None
        try:
            answer = response.json()
        except ValueError:
            log.warning("oauth_introspection_not_json", endpoint=self.endpoint)
            return None
        if not isinstance(answer, dict):
            return None
        return access_token_from(answer, token, issuer=self.issuer, resource=self.resource)


def access_token_from(
    answer: dict[str, Any], token: str, *, issuer: str, resource: str
) -> AccessToken | None:
    """The access token an introspection `answer` (or a verified JWT's claims, with
    `active`) describes; None when it is inactive or from another issuer. Its resource: the
    entry of `aud` that is this service's `resource`, else the first."""
    if answer.get("active") is not True:
        return None
    said_issuer = answer.get("iss")
    if said_issuer is not None and str(said_issuer).rstrip("/") != issuer.rstrip("/"):
        log.warning("oauth_token_from_another_issuer", issuer=str(said_issuer))
        return None
    audience = answer.get("aud")
    audiences = [
        a for a in (audience if isinstance(audience, list) else [audience]) if isinstance(a, str)
    ]
    ours = [a for a in audiences if a.rstrip("/") == resource.rstrip("/")]
    expires = answer.get("exp")
    scope = answer.get("scope")
    # `scp`: the list some servers (Okta, Entra) put in a JWT instead of a `scope` string.
    listed = answer.get("scp")
    scopes = scope.split() if isinstance(scope, str) else []
    if not scopes and isinstance(listed, list):
        scopes = [s for s in listed if isinstance(s, str)]
    return AccessToken(
        token=token,
        client_id=str(answer.get("client_id") or answer.get("azp") or "unknown"),
        scopes=scopes,
        expires_at=int(expires) if isinstance(expires, int | float) else None,
        resource=next(iter(ours or audiences), None),
        subject=str(answer["sub"]) if answer.get("sub") is not None else None,
        claims={"iss": said_issuer} if said_issuer is not None else None,
    )
