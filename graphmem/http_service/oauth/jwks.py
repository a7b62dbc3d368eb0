"""JWT access tokens of an external authorization server, checked here against the keys it
publishes (its JWKS), without a call per request.

Only asymmetric algorithms are accepted (never `none` or a shared-secret HMAC, which a public
key would otherwise sign). The keys are fetched with a bounded wait, kept for a while, and
fetched again when a token names a key not yet seen (at most once per cool-down, so tokens
with made-up key ids cannot make this service hammer the authorization server).
"""

from __future__ import annotations

import time

import httpx2 as httpx
import jwt
import structlog
from mcp.server.auth.provider import AccessToken

from graphmem.http_service.oauth.introspection import access_token_from

log = structlog.get_logger(__name__)

ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
TIMEOUT_SECONDS = 10.0
KEYS_SECONDS = 300.0  # how long fetched keys are trusted before they are fetched again
COOLDOWN_SECONDS = 30.0  # the least time between two fetches


class JwksVerifier:
    """The SDK's TokenVerifier protocol for JWT access tokens signed with the keys at
    `jwks_url`; the claims are read as an introspection answer (`access_token_from`)."""

    def __init__(self, jwks_url: str, *, issuer: str, resource: str) -> None:
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.resource = resource
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched = -float("inf")

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        algorithm = header.get("alg")
        key = await self._key(str(header.get("kid") or ""))
        if key is None or algorithm not in ALGORITHMS:
            return None
        try:
            claims = jwt.decode(
                token,
                key=key.key,
                algorithms=[algorithm],
                # Audience and expiry are the gate's to judge (it says which failed); the
                # issuer is compared in access_token_from, a trailing slash aside.
                options={"verify_aud": False, "verify_exp": False, "require": ["iss", "exp"]},
            )
        except jwt.InvalidTokenError as error:
            log.warning("oauth_jwt_refused", reason=str(error))
            return None
        return access_token_from(
            {**claims, "active": True}, token, issuer=self.issuer, resource=self.resource
        )

    async def _key(self, kid: str) -> jwt.PyJWK | None:
        age = time.monotonic() - self._fetched
        if (kid not in self._keys or age > KEYS_SECONDS) and age >= COOLDOWN_SECONDS:
            await self._fetch()
        if not kid and len(self._keys) == 1:
            return next(iter(self._keys.values()))  # a lone key may go unnamed
        return self._keys.get(kid)

    async def _fetch(self) -> None:
        self._fetched = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS) as http:
                answer = await http.get(self.jwks_url)
                answer.raise_for_status()
                found = jwt.PyJWKSet.from_dict(answer.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWKSetError) as error:
            # The keys fetched before stay in use until a fetch succeeds.
            log.warning("oauth_jwks_unavailable", url=self.jwks_url, error=str(error))
            return
        self._keys = {str(k.key_id or ""): k for k in found.keys}
