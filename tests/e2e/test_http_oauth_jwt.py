"""GRAPHMEM_OAUTH=external with JWT access tokens checked against the issuer's JWKS.

The authorization server's part is played by the test: it signs tokens with an EC key of its
own and publishes the public half as a JWKS from a real HTTP server on loopback; the service
fetches it from there and checks every token itself, with no call per request.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

from tests.e2e.http_support import HttpService, bearer_client, free_port, http_service
from tests.e2e.support import call, value

pytestmark = pytest.mark.anyio

WAIT = 15.0
KID = "key-1"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@dataclass
class Issuer:
    """A signing key, and the JWKS server publishing its public half."""

    url: str
    key: EllipticCurvePrivateKey
    jwks_url: str
    fetches: int = 0

    def sign(self, audience: str, *, key: Any = None, **claims: Any) -> str:
        body = {
            "iss": self.url,
            "aud": audience,
            "sub": "someone",
            "client_id": "hosted-client",
            "scope": "memory",
            "exp": int(time.time()) + 600,
            **claims,
        }
        return jwt.encode(body, key or self.key, algorithm="ES256", headers={"kid": KID})


def hs256(header: dict[str, Any], claims: dict[str, Any], secret: str) -> str:
    """A token signed by hand (PyJWT refuses to make these, rightly)."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    signing = f"{part(json.dumps(header).encode())}.{part(json.dumps(claims).encode())}"
    mac = hmac.new(secret.encode(), signing.encode(), hashlib.sha256).digest()
    return f"{signing}.{part(mac) if secret else ''}"


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    key = ec.generate_private_key(ec.SECP256R1())
    public = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    document = json.dumps({"keys": [{**public, "kid": KID, "use": "sig", "alg": "ES256"}]})

    published: list[Issuer] = []

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            published[0].fetches += 1
            body = document.encode()
            self.send_response(200 if self.path == "/jwks.json" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    published.append(Issuer(base, key, f"{base}/jwks.json"))
    try:
        yield published[0]
    finally:
        server.shutdown()
        thread.join(timeout=WAIT)
        server.server_close()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, issuer: Issuer) -> Iterator[HttpService]:
    root = tmp_path_factory.mktemp("oauth-jwt")
    with http_service(
        root / "data",
        root / "service.log",
        port=free_port(),
        GRAPHMEM_OAUTH="external",
        GRAPHMEM_OAUTH_ISSUER_URL=issuer.url,
        GRAPHMEM_OAUTH_JWKS_URL=issuer.jwks_url,
    ) as running:
        yield running


async def initialize(service: HttpService, token: str) -> httpx.Response:
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
    }
    async with httpx.AsyncClient(timeout=WAIT) as http:
        return await http.post(service.url, json=INITIALIZE, headers=headers)


def refused_because(response: httpx.Response) -> str:
    assert response.status_code == 401, response.text
    assert "resource_metadata=" in response.headers["www-authenticate"]
    description: str = response.json()["error_description"]
    return description


async def test_a_jwt_signed_by_the_issuer_for_this_service_calls_tools(
    service: HttpService, issuer: Issuer
) -> None:
    token = issuer.sign(service.url)
    async with bearer_client(service.url, token, mode="legacy") as client:
        note = {"entities": [{"name": "JWT", "entityType": "t", "observations": []}]}
        assert value(await call(client, "create_entities", note)) == note["entities"]
    async with bearer_client(service.url, token) as modern:
        assert modern.protocol_version == "2026-07-28"


async def test_a_jwt_for_another_audience_or_expired_is_refused_with_401(
    service: HttpService, issuer: Issuer
) -> None:
    other = "http://127.0.0.1:9/other/mcp"
    assert "issued for " + other in refused_because(await initialize(service, issuer.sign(other)))
    expired = issuer.sign(service.url, exp=int(time.time()) - 60)
    assert "expired" in refused_because(await initialize(service, expired))
    listed = issuer.sign(service.url, aud=["http://127.0.0.1:9/x", service.url])
    assert (await initialize(service, listed)).status_code == 200


async def test_a_jwt_not_signed_by_the_issuers_key_or_from_another_issuer_is_refused(
    service: HttpService, issuer: Issuer
) -> None:
    forged = issuer.sign(service.url, key=ec.generate_private_key(ec.SECP256R1()))
    assert "unknown" in refused_because(await initialize(service, forged))
    elsewhere = issuer.sign(service.url, iss="http://127.0.0.1:9")
    assert "unknown" in refused_because(await initialize(service, elsewhere))
    # HS256 keyed with the public key's text: the classic algorithm confusion.
    public_jwk = jwt.algorithms.ECAlgorithm.to_jwk(issuer.key.public_key())
    claims = {"iss": issuer.url, "aud": service.url, "exp": int(time.time()) + 600}
    confused = hs256({"alg": "HS256", "kid": KID}, {**claims, "scope": "memory"}, public_jwk)
    assert "unknown" in refused_because(await initialize(service, confused))
    unsigned = hs256({"alg": "none", "kid": KID}, claims, "")
    assert "unknown" in refused_because(await initialize(service, unsigned))
    no_scope = issuer.sign(service.url, scope="other")
    refused = await initialize(service, no_scope)
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]


async def test_the_keys_are_fetched_once_not_on_every_request(
    service: HttpService, issuer: Issuer
) -> None:
    assert (await initialize(service, issuer.sign(service.url))).status_code == 200
    fetched = issuer.fetches
    for _ in range(3):
        assert (await initialize(service, issuer.sign(service.url))).status_code == 200
    assert issuer.fetches == fetched == 1
