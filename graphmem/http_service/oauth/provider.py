"""The built-in single-user authorization server: the SDK's provider protocol over
`BuiltinState`, with the owner's approval between a client's authorize request and its code.

The SDK's handlers do the protocol (registration, PKCE S256, redirect-URI and scope checks, the
token endpoint); this module decides what is granted. `authorize` grants nothing: it parks the
request and sends the browser to the consent page (`consent`), where only the owner's secret
turns it into a code. Codes and parked requests live in memory (minutes long, lost on restart
like a half-finished login); clients and tokens persist.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import structlog
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from graphmem.http_service.oauth.state import BuiltinState, TokenRecord

log = structlog.get_logger(__name__)

# The SDK's token endpoint checks a code's expiry against the real clock, so codes use it too.
CODE_SECONDS = 300.0
PENDING_SECONDS = 600.0
MAX_PENDING = 100
# Wrong owner secrets a parked request survives; the next wrong one drops it.
MAX_ATTEMPTS = 5
OWNER = "owner"


@dataclass
class PendingAuthorization:
    """An authorize request waiting for the owner's decision."""

    client: OAuthClientInformationFull
    params: AuthorizationParams
    resource: str
    created: float = field(default_factory=time.time)
    attempts: int = 0


class SingleUserProvider:
    """OAuthAuthorizationServerProvider for one owner; tokens bound to `resources`."""

    def __init__(
        self,
        state: BuiltinState,
        *,
        issuer: str,
        resources: tuple[str, ...],
        scopes: tuple[str, ...],
        consent_url: str,
        access_seconds: float,
        refresh_seconds: float,
    ) -> None:
        self.state = state
        self.issuer = issuer
        self.resources = resources  # the first: this service's own /mcp
        self.scopes = scopes
        self.consent_url = consent_url
        self.access_seconds = access_seconds
        self.refresh_seconds = refresh_seconds
        self.pending: OrderedDict[str, PendingAuthorization] = OrderedDict()
        self.codes: dict[str, AuthorizationCode] = {}

    # --- registration -------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.state.client(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if not self.state.add_client(client_info):
            raise RegistrationError(
                "invalid_client_metadata",
                "too many registered clients hold live tokens; the owner can revoke some, or "
                "wait for their tokens to expire",
            )
        log.info("oauth_client_registered", client_id=client_info.client_id)

    # --- authorization: parked until the owner decides ------------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        resource = (params.resource or self.resources[0]).rstrip("/")
        if resource not in self.resources:
            raise AuthorizeError(
                "invalid_target",
                f"this authorization server issues tokens for {', '.join(self.resources)} "
                f"only, not {resource}",
            )
        self._drop_stale()
        request_id = secrets.token_urlsafe(24)
        self.pending[request_id] = PendingAuthorization(client, params, resource)
        while len(self.pending) > MAX_PENDING:
            self.pending.popitem(last=False)
        return construct_redirect_uri(self.consent_url, request=request_id)

    def _drop_stale(self) -> None:
        cutoff = time.time() - PENDING_SECONDS
        for key in [k for k, p in self.pending.items() if p.created < cutoff]:
            del self.pending[key]
        for key in [k for k, c in self.codes.items() if c.expires_at < time.time()]:
            del self.codes[key]

    def parked(self, request_id: str) -> PendingAuthorization | None:
        self._drop_stale()
        return self.pending.get(request_id)

    def wrong_secret(self, request_id: str) -> None:
        """Count a wrong owner secret against the request; too many drop it."""
        pending = self.pending.get(request_id)
        if pending is not None:
            pending.attempts += 1
            if pending.attempts >= MAX_ATTEMPTS:
                del self.pending[request_id]
                log.warning("oauth_consent_dropped", client_id=pending.client.client_id)

    def approve(self, request_id: str) -> str:
        """The owner approved: a code for the client, sent by redirect to its redirect URI."""
        pending = self.pending.pop(request_id)
        params = pending.params
        code = secrets.token_urlsafe(32)
        assert pending.client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or list(self.scopes),
            expires_at=time.time() + CODE_SECONDS,
            client_id=pending.client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=pending.resource,
            subject=OWNER,
        )
        log.info("oauth_consent_given", client_id=pending.client.client_id)
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=self.issuer
        )

    def deny(self, request_id: str) -> str:
        pending = self.pending.pop(request_id)
        log.info("oauth_consent_refused", client_id=pending.client.client_id)
        return construct_redirect_uri(
            str(pending.params.redirect_uri),
            error="access_denied",
            error_description="the owner refused",
            state=pending.params.state,
            iss=self.issuer,
        )

    # --- tokens -------------------------------------------------------------------------

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the authorization code was already used")
        resource = authorization_code.resource or self.resources[0]
        return self._issue(authorization_code.client_id, authorization_code.scopes, resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        record = self.state.token(refresh_token, "refresh")
        if record is None or record.client_id != client.client_id:
            return None
        if record.expires_at <= self.state.now():
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=record.client_id,
            scopes=record.scopes,
            expires_at=record.expires_at,
            resource=record.resource,
            subject=OWNER,
        )

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: RefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        # Rotation: the old pair goes, so a stolen refresh token is good once at most.
        self.state.revoke_grant(refresh_token.token)
        resource = refresh_token.resource or self.resources[0]
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, resource)

    def _issue(self, client_id: str, scopes: list[str], resource: str) -> OAuthToken:
        now = self.state.now()
        access, refresh, grant = (secrets.token_urlsafe(32) for _ in range(3))
        self.state.add_tokens(
            {
                access: TokenRecord(
                    "access", client_id, scopes, int(now + self.access_seconds), resource, grant
                ),
                refresh: TokenRecord(
                    "refresh", client_id, scopes, int(now + self.refresh_seconds), resource, grant
                ),
            }
        )
        log.info("oauth_tokens_issued", client_id=client_id, resource=resource)
        return OAuthToken(
            access_token=access,
            expires_in=int(self.access_seconds),
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        """The token's record, expired or not: the gate tells an expired token apart."""
        record = self.state.token(token, "access")
        if record is None:
            return None
        return AccessToken(
            token=token,
            client_id=record.client_id,
            scopes=record.scopes,
            expires_at=record.expires_at,
            resource=record.resource,
            subject=OWNER,
            claims={"iss": self.issuer},
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.state.revoke_grant(token.token)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's TokenVerifier protocol, so the gate asks this provider directly."""
        return await self.load_access_token(token)

    async def introspect(self, token: str) -> dict[str, object]:
        """RFC 7662's answer for `token`: active with its claims, or only `active: false`."""
        found = await self.load_access_token(token)
        if found is None or found.expires_at is None or found.expires_at <= self.state.now():
            return {"active": False}
        return {
            "active": True,
            "client_id": found.client_id,
            "scope": " ".join(found.scopes),
            "exp": found.expires_at,
            "aud": found.resource,
            "iss": self.issuer,
            "sub": OWNER,
            "token_type": "Bearer",
        }

    # The SEP-990 identity-assertion grant is not offered (AuthSettings leaves it off).
    async def exchange_identity_assertion(self, client: object, params: object) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "the identity-assertion grant is not offered")
