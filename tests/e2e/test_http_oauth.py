"""OAuth 2.1 on the HTTP service, end to end on loopback: the built-in single-user
authorization server, and the same server acting as the external one of a second service.

Each flow is the SDK's own OAuth client (discovery, dynamic registration, PKCE, code, token)
against a real `graphmem serve --http`; the owner's browser is httpx (tests.e2e.oauth_support).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import httpx2 as httpx
import pytest

from tests.e2e.http_support import HttpService, free_port, http_service
from tests.e2e.oauth_support import (
    OWNER_SECRET,
    REDIRECT_URI,
    STATIC_TOKEN,
    WAIT,
    MemoryStorage,
    OwnersBrowser,
    consent,
    oauth_client,
    query,
)
from tests.e2e.support import call, value

pytestmark = pytest.mark.anyio

OTHER_RESOURCE = "http://127.0.0.1:9/other-memory/mcp"
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
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def entity(name: str) -> dict[str, object]:
    return {"entities": [{"name": name, "entityType": "note", "observations": ["x"]}]}


@pytest.fixture
def builtin(tmp_path: Path) -> Iterator[HttpService]:
    with http_service(
        tmp_path / "data",
        tmp_path / "service.log",
        GRAPHMEM_OAUTH_AUDIENCES=OTHER_RESOURCE,
        GRAPHMEM_HTTP_TOKEN=STATIC_TOKEN,
        GRAPHMEM_OAUTH="builtin",
        GRAPHMEM_OAUTH_OWNER_SECRET=OWNER_SECRET,
    ) as running:
        yield running


@contextmanager
def builtin_on(port: int, tmp_path: Path, offset_days: str = "0") -> Iterator[HttpService]:
    """The built-in server on `port` (its tokens are bound to the URL), one data dir a test."""
    with http_service(
        tmp_path / "data",
        tmp_path / "service.log",
        port=port,
        GRAPHMEM_OAUTH="builtin",
        GRAPHMEM_OAUTH_OWNER_SECRET=OWNER_SECRET,
        GRAPHMEM_CLOCK_OFFSET_DAYS=offset_days,
    ) as running:
        yield running


def origin(service: HttpService) -> str:
    return f"http://{service.host}:{service.port}"


async def post_initialize(service: HttpService, token: str | None) -> httpx.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        return await http.post(service.url, json=INITIALIZE, headers=headers)


def assert_refused(response: httpx.Response, service: HttpService, reason: str) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    metadata = f"{origin(service)}/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer "), challenge
    assert f'resource_metadata="{metadata}"' in challenge, challenge
    assert 'error="invalid_token"' in challenge, challenge
    assert reason in response.json()["error_description"], response.text


async def tokens_by_hand(
    service: HttpService, resource: str, secret: str = OWNER_SECRET
) -> dict[str, str]:
    """Registration, authorize (with `resource`), consent and token, by plain HTTP calls."""
    base = origin(service)
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    async with httpx.AsyncClient(timeout=WAIT) as http:
        registered = await http.post(
            f"{base}/register",
            json={
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "scope": "memory",
            },
        )
        assert registered.status_code == 201, registered.text
        client_id = registered.json()["client_id"]
        authorize = f"{base}/authorize?" + urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "code_challenge": challenge.decode().rstrip("="),
                "code_challenge_method": "S256",
                "state": "s1",
                "scope": "memory",
                "resource": resource,
            }
        )
        code = query(await consent(authorize, secret))["code"]
        issued = await http.post(
            f"{base}/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT_URI,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": resource,
            },
        )
        assert issued.status_code == 200, issued.text
        tokens: dict[str, str] = {**issued.json(), "client_id": client_id}
        return tokens


async def test_a_client_signs_in_with_the_owners_approval_and_calls_tools_in_both_eras(
    builtin: HttpService,
) -> None:
    storage, browser = MemoryStorage(), OwnersBrowser()
    async with oauth_client(builtin.url, storage, browser, mode="legacy") as legacy:
        result = await call(legacy, "create_entities", entity("Signed In"))
        assert value(result) == entity("Signed In")["entities"]
    assert browser.visits == 1
    assert storage.tokens is not None and storage.tokens.refresh_token
    # The modern era on the same tokens: no second approval.
    async with oauth_client(builtin.url, storage, OwnersBrowser(secret=None)) as modern:
        assert modern.protocol_version == "2026-07-28"
        graph = value(await call(modern, "open_nodes", {"names": ["Signed In"]}))
        assert [e["name"] for e in graph["entities"]] == ["Signed In"]


async def test_without_a_token_the_service_answers_401_naming_its_metadata(
    builtin: HttpService,
) -> None:
    refused = await post_initialize(builtin, None)
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    metadata_url = f"{origin(builtin)}/.well-known/oauth-protected-resource/mcp"
    assert challenge == f'Bearer resource_metadata="{metadata_url}"'
    async with httpx.AsyncClient(timeout=WAIT) as http:
        metadata = (await http.get(metadata_url)).json()
        assert metadata["resource"] == builtin.url
        assert metadata["authorization_servers"] == [origin(builtin)]
        assert metadata["scopes_supported"] == ["memory"]
        server = (
            await http.get(f"{origin(builtin)}/.well-known/oauth-authorization-server")
        ).json()
        assert server["code_challenge_methods_supported"] == ["S256"]
        assert server["registration_endpoint"] == f"{origin(builtin)}/register"
        # /health is behind the same door.
        assert (await http.get(f"{origin(builtin)}/health")).status_code == 401


async def test_the_static_token_still_opens_the_service_in_oauth_mode(
    builtin: HttpService,
) -> None:
    answered = await post_initialize(builtin, STATIC_TOKEN)
    assert answered.status_code == 200, answered.text


async def test_the_consent_step_gives_no_code_without_the_owner_secret(
    builtin: HttpService,
) -> None:
    storage, browser = MemoryStorage(), OwnersBrowser(secret="not-the-owner-secret-at-all-0000")
    # The owner's browser gets the 403 page, not a redirect with a code: the sign-in fails.
    with pytest.raises(ExceptionGroup) as refused:
        async with oauth_client(builtin.url, storage, browser):
            pass
    assert refused.group_contains(AssertionError, match="not the owner secret")
    assert storage.tokens is None and browser.result is None
    assert "oauth_consent_wrong_secret" in builtin.log_path.read_text()


async def test_a_wrong_owner_secret_is_refused_on_the_consent_page(builtin: HttpService) -> None:
    base = origin(builtin)
    async with httpx.AsyncClient(timeout=WAIT) as http:
        registered = await http.post(
            f"{base}/register",
            json={"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"},
        )
        client_id = registered.json()["client_id"]
        authorize = f"{base}/authorize?" + urlencode(
            {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT_URI,
                "code_challenge": "x" * 43,
                "code_challenge_method": "S256",
                "state": "s",
            }
        )
        page_url = (await http.get(authorize)).headers["location"]
        form = {"request": query(page_url)["request"], "decision": "approve"}
        wrong = await http.post(f"{base}/consent", data={**form, "secret": "guess" * 8})
        assert wrong.status_code == 403
        assert "location" not in wrong.headers
        assert "not the owner secret" in wrong.text
        # The static token is not the owner secret when GRAPHMEM_OAUTH_OWNER_SECRET is set.
        static = await http.post(f"{base}/consent", data={**form, "secret": STATIC_TOKEN})
        assert static.status_code == 403


async def test_a_token_issued_for_another_resource_is_refused_with_401(
    builtin: HttpService,
) -> None:
    elsewhere = await tokens_by_hand(builtin, OTHER_RESOURCE)
    assert_refused(
        await post_initialize(builtin, elsewhere["access_token"]),
        builtin,
        f"issued for {OTHER_RESOURCE}",
    )
    here = await tokens_by_hand(builtin, builtin.url)
    assert (await post_initialize(builtin, here["access_token"])).status_code == 200


async def test_a_restart_keeps_clients_and_tokens_and_an_expired_token_gets_401(
    tmp_path: Path,
) -> None:
    data, port = tmp_path / "data", free_port()
    storage = MemoryStorage()
    with builtin_on(port, tmp_path) as first:
        async with oauth_client(first.url, storage, OwnersBrowser(), mode="legacy") as client:
            await call(client, "create_entities", entity("Kept"))
    assert storage.tokens is not None and storage.tokens.refresh_token is not None
    access, refresh = storage.tokens.access_token, storage.tokens.refresh_token
    state = (data / "oauth-builtin.json").read_text()
    assert access not in state and refresh not in state  # digests only

    with builtin_on(port, tmp_path) as again:
        # The same client, the same tokens: no second approval.
        async with oauth_client(again.url, storage, OwnersBrowser(secret=None)) as client:
            graph = value(await call(client, "open_nodes", {"names": ["Kept"]}))
            assert [e["name"] for e in graph["entities"]] == ["Kept"]

    # A day later (the test clock), the hour-long access token has expired ...
    with builtin_on(port, tmp_path, offset_days="1") as later:
        assert_refused(await post_initialize(later, access), later, "expired")
        # ... and the month-long refresh token, kept across both restarts, renews it.
        assert storage.client is not None
        async with httpx.AsyncClient(timeout=WAIT) as http:
            renewed = await http.post(
                f"{origin(later)}/token",
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": refresh,
                    "client_id": storage.client.client_id or "",
                    "client_secret": storage.client.client_secret or "",
                },
            )
        assert renewed.status_code == 200, renewed.text
        fresh = renewed.json()["access_token"]
        assert (await post_initialize(later, fresh)).status_code == 200
        # Rotation: the used refresh token and its access token are gone.
        assert_refused(await post_initialize(later, access), later, "unknown")


async def register_introspector(service: HttpService) -> tuple[str, str]:
    """A confidential client at `service` (what the resource server authenticates as)."""
    async with httpx.AsyncClient(timeout=WAIT) as http:
        registered = await http.post(
            f"{origin(service)}/register",
            json={
                "client_name": "another graphmem",
                "redirect_uris": [REDIRECT_URI],
                "token_endpoint_auth_method": "client_secret_basic",
            },
        )
    assert registered.status_code == 201, registered.text
    answer = registered.json()
    return answer["client_id"], answer["client_secret"]


async def test_an_external_authorization_server_vouches_for_tokens_by_introspection(
    tmp_path: Path,
) -> None:
    """Service B trusts service A (the built-in server) as its external authorization server:
    the SDK's client discovers A from B's metadata, signs in at A, and calls tools at B."""
    a_port, b_port = free_port(), free_port()
    b_url = f"http://127.0.0.1:{b_port}/mcp"
    with http_service(
        tmp_path / "a",
        tmp_path / "a.log",
        port=a_port,
        GRAPHMEM_OAUTH="builtin",
        GRAPHMEM_OAUTH_OWNER_SECRET=OWNER_SECRET,
        GRAPHMEM_OAUTH_AUDIENCES=b_url,
    ) as a:
        client_id, client_secret = await register_introspector(a)
        with http_service(
            tmp_path / "b",
            tmp_path / "b.log",
            port=b_port,
            GRAPHMEM_OAUTH="external",
            GRAPHMEM_OAUTH_ISSUER_URL=origin(a),
            GRAPHMEM_OAUTH_INTROSPECTION_URL=f"{origin(a)}/introspect",
            GRAPHMEM_OAUTH_CLIENT_ID=client_id,
            GRAPHMEM_OAUTH_CLIENT_SECRET=client_secret,
        ) as b:
            async with httpx.AsyncClient(timeout=WAIT) as http:
                metadata = await http.get(f"{origin(b)}/.well-known/oauth-protected-resource/mcp")
                assert metadata.json()["authorization_servers"] == [origin(a)]
                # B is no authorization server itself.
                assert (await http.post(f"{origin(b)}/register", json={})).status_code == 401
            storage = MemoryStorage()
            browser = OwnersBrowser()
            async with oauth_client(b.url, storage, browser, mode="legacy") as client:
                written = await call(client, "create_entities", entity("Via A"))
                assert value(written) == entity("Via A")["entities"]
            assert browser.visits == 1
            async with oauth_client(b.url, storage, OwnersBrowser(secret=None)) as modern:
                assert modern.protocol_version == "2026-07-28"
                graph = value(await call(modern, "open_nodes", {"names": ["Via A"]}))
                assert [e["name"] for e in graph["entities"]] == ["Via A"]
            assert storage.tokens is not None
            access = storage.tokens.access_token

            # A token A issued for A itself is no token for B.
            for_a = await tokens_by_hand(a, a.url)
            assert_refused(
                await post_initialize(b, for_a["access_token"]), b, f"issued for {a.url}"
            )
            # Revoked at A: refused at B on the next request (introspection every time).
            assert (await post_initialize(b, access)).status_code == 200
            assert storage.client is not None
            async with httpx.AsyncClient(timeout=WAIT) as http:
                revoked = await http.post(
                    f"{origin(a)}/revoke",
                    data={
                        "token": access,
                        "client_id": storage.client.client_id or "",
                        "client_secret": storage.client.client_secret or "",
                    },
                )
            assert revoked.status_code == 200, revoked.text
            assert_refused(await post_initialize(b, access), b, "unknown, revoked or expired")


async def test_introspection_needs_a_confidential_client_of_the_authorization_server(
    builtin: HttpService,
) -> None:
    token = (await tokens_by_hand(builtin, builtin.url))["access_token"]
    client_id, client_secret = await register_introspector(builtin)
    endpoint = f"{origin(builtin)}/introspect"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        anonymous = await http.post(endpoint, data={"token": token})
        assert anonymous.status_code == 401
        wrong = await http.post(
            endpoint, data={"token": token, "client_id": client_id}, auth=(client_id, "wrong")
        )
        assert wrong.status_code == 401
        answer = await http.post(
            endpoint,
            data={"token": token, "client_id": client_id},
            auth=(client_id, client_secret),
        )
        assert answer.status_code == 200
        claims = answer.json()
        assert claims["active"] is True
        assert claims["aud"] == builtin.url
        assert claims["iss"] == origin(builtin)
        assert claims["scope"] == "memory"
        unknown = await http.post(
            endpoint,
            data={"token": "no-such-token", "client_id": client_id},
            auth=(client_id, client_secret),
        )
        assert unknown.json() == {"active": False}


def serve_refusal(tmp_path: Path, **env: str) -> tuple[int, str]:
    """`serve --http` with `env`, expected to refuse at once: its status and stderr."""
    environment = {
        "GRAPHMEM_DIR": str(tmp_path / "data"),
        "GRAPHMEM_SCHEMAS_DIR": str(tmp_path / "schemas"),
        "PATH": os.environ.get("PATH", ""),
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "serve", "--http", f"127.0.0.1:{free_port()}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr


def test_builtin_mode_without_an_owner_secret_refuses_to_start_and_says_how(
    tmp_path: Path,
) -> None:
    status, stderr = serve_refusal(tmp_path, GRAPHMEM_OAUTH="builtin")
    assert status == 2, stderr
    assert "GRAPHMEM_OAUTH_OWNER_SECRET" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "data").exists(), "the store was opened before the refusal"


def test_a_damaged_oauth_state_file_stops_the_service_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "oauth-builtin.json").write_text("{damaged")
    status, stderr = serve_refusal(
        tmp_path, GRAPHMEM_OAUTH="builtin", GRAPHMEM_OAUTH_OWNER_SECRET=OWNER_SECRET
    )
    assert status == 2, stderr
    assert "move it aside" in stderr and "Traceback" not in stderr
