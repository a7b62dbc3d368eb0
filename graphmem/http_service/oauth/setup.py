"""OAuth mode from the settings: first a plan (checked before the store opens, so a bad setting
stops `serve` at once), then the pieces `transports` puts around the SDK's app."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenVerifier,
)
from mcp.server.auth.routes import build_resource_metadata_url, validate_issuer_url
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from pydantic import AnyHttpUrl, ValidationError
from starlette.routing import Route
from starlette.types import ASGIApp

from graphmem.config import OAuthSettings
from graphmem.http_service.auth import DEFAULT_TOKEN_NAME, NamedToken, TokenError, named_token
from graphmem.http_service.oauth.consent import CONSENT_PATH, INTROSPECTION_PATH, consent_routes
from graphmem.http_service.oauth.gate import OAuthGate
from graphmem.http_service.oauth.introspection import IntrospectionVerifier
from graphmem.http_service.oauth.jwks import JwksVerifier
from graphmem.http_service.oauth.provider import SingleUserProvider
from graphmem.http_service.oauth.state import STATE_FILE, BuiltinState

# The built-in server's endpoints (the SDK's paths, and ours); clients reach them unauthenticated.
BUILTIN_PATHS = frozenset(
    {"/authorize", "/token", "/register", "/revoke", CONSENT_PATH, INTROSPECTION_PATH}
)
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


class OAuthConfigError(ValueError):
    """OAuth mode cannot run with these settings; the message says which and what to do."""


@dataclass(frozen=True)
class OAuthPlan:
    """OAuth mode's settings, checked: the URLs in force and who may approve clients."""

    settings: OAuthSettings
    resource: str
    issuer: str
    metadata_url: str
    owner: tuple[NamedToken, ...]  # builtin: the secrets that approve a client

    @property
    def mode(self) -> str:
        return self.settings.mode


def _checked_url(url: str, name: str) -> AnyHttpUrl:
    try:
        parsed = AnyHttpUrl(url)
        validate_issuer_url(parsed)
    except (ValidationError, ValueError) as error:
        raise OAuthConfigError(
            f"{name}={url!r} cannot be used: {error}; OAuth needs https, except on a "
            "loopback host (127.0.0.1, localhost, ::1)"
        ) from None
    return parsed


def plan_oauth(
    oauth: OAuthSettings, host: str, port: int, tokens: tuple[NamedToken, ...]
) -> OAuthPlan | None:
    """The plan for serving on host:port, or None when GRAPHMEM_OAUTH is off."""
    if oauth.mode == "off":
        return None
    if oauth.resource_url is None and host in WILDCARD_HOSTS:
        raise OAuthConfigError(
            f"serving on {host!r} with GRAPHMEM_OAUTH={oauth.mode} needs "
            "GRAPHMEM_OAUTH_RESOURCE_URL: the URL clients reach /mcp at (e.g. "
            "https://memory.example.com/mcp), the audience its tokens are bound to"
        )
    shown = f"[{host}]" if ":" in host else host
    resource = oauth.resource_url or f"http://{shown}:{port}/mcp"
    _checked_url(resource, "GRAPHMEM_OAUTH_RESOURCE_URL")
    parts = urlsplit(resource)
    issuer = oauth.issuer_url or f"{parts.scheme}://{parts.netloc}"
    _checked_url(issuer, "GRAPHMEM_OAUTH_ISSUER_URL")
    owner: tuple[NamedToken, ...] = ()
    if oauth.mode == "builtin":
        if oauth.owner_secret:
            try:
                owner = (named_token("owner", oauth.owner_secret, "GRAPHMEM_OAUTH_OWNER_SECRET"),)
            except TokenError as error:
                raise OAuthConfigError(str(error)) from None
        else:
            # GRAPHMEM_HTTP_TOKEN's only: a token file's named tokens are other people's.
            owner = tuple(t for t in tokens if t.name == DEFAULT_TOKEN_NAME)
        if not owner:
            raise OAuthConfigError(
                "GRAPHMEM_OAUTH=builtin approves each client with the owner's secret, and none "
                "is set: set GRAPHMEM_OAUTH_OWNER_SECRET (or GRAPHMEM_HTTP_TOKEN, which then "
                "serves as the owner secret too; a token file's tokens do not) to a long "
                "random secret"
            )
    metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource)))
    return OAuthPlan(oauth, resource, issuer, metadata_url, owner)


@dataclass(frozen=True)
class OAuthService:
    """What OAuth mode adds to the SDK's app (its keyword arguments) and the gate before it."""

    plan: OAuthPlan
    verifier: TokenVerifier
    provider: SingleUserProvider | None
    routes: list[Route]

    def app_arguments(self) -> dict[str, Any]:
        """`streamable_http_app` keywords: the metadata routes, and the built-in server's."""
        builtin = self.provider is not None
        scopes = list(self.plan.settings.scopes)
        # Validated from strings, so that a path-less issuer keeps its exact spelling (no
        # trailing slash): clients compare it with the `iss` of the redirect as strings.
        auth = AuthSettings.model_validate(
            {
                "issuer_url": self.plan.issuer,
                "resource_server_url": self.plan.resource,
                "required_scopes": scopes or None,
                "client_registration_options": ClientRegistrationOptions(
                    enabled=builtin, valid_scopes=scopes or None, default_scopes=scopes or None
                ),
                "revocation_options": RevocationOptions(enabled=builtin),
                # The gate checks the audience (OAuthGate): the SDK's own check stays off.
                "validate_token_resource": False,
            }
        )
        return {
            "auth": auth,
            "auth_server_provider": self.provider,
            "custom_starlette_routes": self.routes,
        }

    def gate(
        self, app: ASGIApp, static_tokens: tuple[NamedToken, ...], now: Callable[[], float]
    ) -> OAuthGate:
        return OAuthGate(
            app,
            verifier=self.verifier,
            static_tokens=static_tokens,
            resource=self.plan.resource,
            scopes=self.plan.settings.scopes,
            metadata_url=self.plan.metadata_url,
            public_paths=BUILTIN_PATHS if self.provider is not None else frozenset(),
            now=now,
        )


def start_oauth(plan: OAuthPlan, data_dir: Path, now: Callable[[], float]) -> OAuthService:
    """The service for `plan`; builtin reads its state from `data_dir`."""
    oauth = plan.settings
    if plan.mode == "external":
        return OAuthService(plan, _external_verifier(plan), None, [])
    # Typed as the SDK's protocol, so mypy holds the provider to it.
    provider: OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
    provider = SingleUserProvider(
        BuiltinState(data_dir / STATE_FILE, now),
        issuer=plan.issuer,
        resources=(plan.resource.rstrip("/"), *oauth.audiences),
        scopes=oauth.scopes,
        consent_url=plan.issuer.rstrip("/") + CONSENT_PATH,
        access_seconds=oauth.access_token_seconds,
        refresh_seconds=oauth.refresh_token_seconds,
    )
    return OAuthService(plan, provider, provider, consent_routes(provider, plan.owner))


class _ByShape:
    """JWTs (three dot-separated parts) to the JWKS check, other tokens to introspection."""

    def __init__(self, jwts: JwksVerifier, others: IntrospectionVerifier) -> None:
        self.jwts = jwts
        self.others = others

    async def verify_token(self, token: str) -> AccessToken | None:
        if token.count(".") == 2:
            return await self.jwts.verify_token(token)
        return await self.others.verify_token(token)


def _external_verifier(plan: OAuthPlan) -> TokenVerifier:
    oauth = plan.settings
    jwts = (
        JwksVerifier(oauth.jwks_url, issuer=plan.issuer, resource=plan.resource)
        if oauth.jwks_url
        else None
    )
    if oauth.introspection_url is None:
        assert jwts is not None  # OAuthSettings.from_env requires one of the two
        return jwts
    others = IntrospectionVerifier(
        oauth.introspection_url,
        issuer=plan.issuer,
        resource=plan.resource,
        client_id=oauth.client_id,
        client_secret=oauth.client_secret,
    )
    return others if jwts is None else _ByShape(jwts, others)
