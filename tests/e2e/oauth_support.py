"""The client side of OAuth for the tests: the SDK's OAuthClientProvider, with the owner's
browser played by httpx (follow the authorize redirect to the consent page, type the owner
secret, read the code off the redirect back)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2 as httpx
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

WAIT = 15.0
# Never listened on: the code is read off the redirect, which no browser follows here.
REDIRECT_URI = "http://127.0.0.1:9/callback"
OWNER_SECRET = "the-owner-secret-0123456789abcdef"
STATIC_TOKEN = "static-token-0123456789abcdef012345"


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory: what a client would keep between runs."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


class OwnersBrowser:
    """Plays the browser the SDK client hands the authorize URL to; `secret`: what the owner
    types on the consent page (None: the test expects no consent page at all)."""

    def __init__(self, secret: str | None = OWNER_SECRET) -> None:
        self.secret = secret
        self.visits = 0
        self.result: AuthorizationCodeResult | None = None

    async def open(self, authorize_url: str) -> None:
        self.visits += 1
        assert self.secret is not None, f"the owner was asked again: {authorize_url}"
        location = await consent(authorize_url, self.secret)
        answer = query(location)
        assert "code" in answer, location
        self.result = AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


async def consent(authorize_url: str, secret: str, decision: str = "approve") -> str:
    """GET the authorize URL, follow it to the consent page, POST `secret`; the redirect back
    to the client (its Location) is returned."""
    async with httpx.AsyncClient(timeout=WAIT) as browser:
        sent = await browser.get(authorize_url)
        assert sent.status_code == 302, sent.text
        page_url = sent.headers["location"]
        page = await browser.get(page_url)
        assert page.status_code == 200, page.text
        assert page.headers["x-frame-options"] == "DENY"
        form = {"request": query(page_url)["request"], "secret": secret, "decision": decision}
        decided = await browser.post(page_url.split("?")[0], data=form)
        assert decided.status_code == 302, decided.text
        location: str = decided.headers["location"]
        return location


def client_metadata(**extra: Any) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="graphmem test client",
        redirect_uris=[AnyUrl(REDIRECT_URI)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope="memory",
        **extra,
    )


@asynccontextmanager
async def oauth_client(
    url: str, storage: MemoryStorage, browser: OwnersBrowser, mode: str = "auto"
) -> AsyncIterator[Client]:
    """The SDK's client on `url`, signing in with the SDK's OAuth client provider."""
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=client_metadata(),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    async with (
        create_mcp_http_client(auth=provider) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client
