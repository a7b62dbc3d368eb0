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
        return self._access_token(token, answer) if isinstance(answer, dict) else None

    def _access_token(self, token: str, answer: dict[str, Any]) -> AccessToken | None:
        if answer.get("active") is not True:
            return None
        issuer = answer.get("iss")
        if issuer is not None and str(issuer).rstrip("/") != self.issuer:
            log.warning("oauth_token_from_another_issuer", issuer=str(issuer))
            return None
        audience = answer.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        ours = [a for a in audiences if isinstance(a, str) and a.rstrip("/") == self.resource]
        resource = ours[0] if ours else next((a for a in audiences if isinstance(a, str)), None)
        expires = answer.get("exp")
        scope = answer.get("scope")
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id") or "unknown"),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=int(expires) if isinstance(expires, int | float) else None,
            resource=resource,
            subject=str(answer["sub"]) if answer.get("sub") is not None else None,
            claims={"iss": issuer} if issuer is not None else None,
        )
