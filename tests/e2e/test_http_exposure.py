"""A service reachable beyond loopback: bearer tokens, Host/Origin checks, slow headers.

127.0.0.2 stands for an address beyond loopback: graphmem treats every host but the three
loopback names (127.0.0.1, localhost, ::1) as one, and the test never leaves the machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from tests.e2e.http_support import HttpService, bearer_client, free_port, http_service
from tests.e2e.support import call, value

pytestmark = pytest.mark.anyio

EXPOSED = "127.0.0.2"
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"
START_TIMEOUT = 30.0
WAIT = 15.0
HEADER_TIMEOUT = "1"
# A connection is closed by the header timeout well within this; the bound only keeps a
# broken service from hanging the test.
CLOSE_BOUND = 30.0
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "exposure-probe", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def exposed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpService]:
    """A service on 127.0.0.2 with two named tokens, one extra host and one extra origin."""
    root = tmp_path_factory.mktemp("http-exposed")
    tokens = root / "tokens"
    tokens.write_text(f"# who may call\nalice:{ALICE}\n\nbob: {BOB}\n")
    with http_service(
        root / "data",
        root / "service.log",
        host=EXPOSED,
        GRAPHMEM_HTTP_TOKEN_FILE=str(tokens),
        GRAPHMEM_HTTP_ALLOWED_HOSTS="memory.example",
        GRAPHMEM_HTTP_ALLOWED_ORIGINS="https://app.example",
        GRAPHMEM_HTTP_HEADER_TIMEOUT_SECONDS=HEADER_TIMEOUT,
    ) as running:
        yield running


def _post(service: HttpService, token: str | None = None, **headers: str) -> httpx.Response:
    sent = dict(JSON_HEADERS)
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update({name.replace("_", "-"): v for name, v in headers.items()})
    with httpx.Client(timeout=WAIT) as client:
        return client.post(service.url, json=INITIALIZE, headers=sent)


def _serve_exit(tmp_path: Path, host: str, **env: str) -> tuple[int, str]:
    """Start `serve --http host:port` and return its exit status and stderr; fails if it
    is still serving after START_TIMEOUT (it should refuse at once)."""
    port = free_port()
    environment = {
        "GRAPHMEM_DIR": str(tmp_path / "data"),
        "GRAPHMEM_SCHEMAS_DIR": str(tmp_path / "schemas"),
        "PATH": os.environ.get("PATH", ""),
        **env,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "graphmem", "serve", "--http", f"{host}:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environment,
        text=True,
    )
    try:
        _, stderr = process.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=START_TIMEOUT)
        pytest.fail(f"serve --http {host} was still serving after {START_TIMEOUT:g} s")
    return process.returncode, stderr


def test_serving_beyond_loopback_without_a_token_refuses_to_start_and_says_how(
    tmp_path: Path,
) -> None:
    status, stderr = _serve_exit(tmp_path, EXPOSED)
    assert status == 2, stderr
    assert "GRAPHMEM_HTTP_TOKEN" in stderr and "Authorization: Bearer" in stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "data").exists(), "the store was opened before the refusal"


def test_a_short_token_or_a_malformed_token_file_refuses_to_start(tmp_path: Path) -> None:
    status, stderr = _serve_exit(tmp_path, EXPOSED, GRAPHMEM_HTTP_TOKEN="short")
    assert status == 2 and "shorter than 16" in stderr, stderr
    assert "short'" not in stderr and "=short" not in stderr  # the token is never echoed
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice:{ALICE}\nno separator here\n")
    status, stderr = _serve_exit(tmp_path, EXPOSED, GRAPHMEM_HTTP_TOKEN_FILE=str(tokens))
    assert status == 2 and "line 2" in stderr and "name:token" in stderr, stderr
    status, stderr = _serve_exit(
        tmp_path, EXPOSED, GRAPHMEM_HTTP_TOKEN_FILE=str(tmp_path / "missing")
    )
    assert status == 2 and "cannot be read" in stderr, stderr


async def test_with_a_token_the_real_client_of_either_era_is_served_beyond_loopback(
    exposed: HttpService,
) -> None:
    async with bearer_client(exposed.url, ALICE, mode="legacy") as legacy:
        await call(legacy, "create_entities", {"entities": [_entity("from-alice")]})
    async with bearer_client(exposed.url, BOB) as modern:
        assert modern.protocol_version == "2026-07-28"
        found = value(await call(modern, "open_nodes", {"names": ["from-alice"]}))
        assert [e["name"] for e in found["entities"]] == ["from-alice"]


def test_a_missing_or_unknown_token_gets_401_with_a_bearer_challenge(
    exposed: HttpService,
) -> None:
    for token in (None, "not-a-token-of-this-service", ALICE + "x", ALICE[:-1]):
        answer = _post(exposed, token)
        assert answer.status_code == 401, (token, answer.text)
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        assert answer.json()["error"]["code"] == -32600
    basic = _post(exposed, Authorization="Basic YWxpY2U6eA==")
    assert basic.status_code == 401


def test_the_log_names_tokens_but_never_holds_one(exposed: HttpService) -> None:
    assert _post(exposed, BOB).status_code == 200
    assert _post(exposed, "wrong-token-wrong-token").status_code == 401
    log = exposed.log_path.read_text(errors="replace")
    assert ALICE not in log and BOB not in log and "wrong-token-wrong-token" not in log
    assert '"token":"bob"' in log
    assert '"http_unauthorized"' in log


def test_a_foreign_host_or_origin_is_refused_beyond_loopback_even_with_a_token(
    exposed: HttpService,
) -> None:
    port = exposed.port
    assert _post(exposed, ALICE, Host="evil.example").status_code == 421
    assert _post(exposed, ALICE, Host=f"evil.example:{port}").status_code == 421
    assert _post(exposed, ALICE, Origin="http://evil.example").status_code == 403
    assert _post(exposed, ALICE, Host=f"{EXPOSED}:{port}").status_code == 200
    # The configured ones are allowed.
    assert _post(exposed, ALICE, Host="memory.example").status_code == 200
    assert _post(exposed, ALICE, Host=f"memory.example:{port}").status_code == 200
    assert _post(exposed, ALICE, Origin="https://app.example").status_code == 200
    assert _post(exposed, ALICE, Origin=f"http://{EXPOSED}:{port}").status_code == 200


def test_a_token_set_on_loopback_is_required_there_too(tmp_path: Path) -> None:
    with http_service(
        tmp_path / "data", tmp_path / "service.log", GRAPHMEM_HTTP_TOKEN=ALICE
    ) as service:
        assert _post(service).status_code == 401
        assert _post(service, ALICE).status_code == 200


def _closed_within(sock: socket.socket, bound: float, dribble: bytes = b"") -> bool:
    """Whether the server closes `sock` within `bound` seconds, sending `dribble` a byte at a
    time meanwhile (a socket timeout paces the bytes; no sleeps)."""
    sock.settimeout(0.2)
    remaining = int(bound / 0.2)
    for _ in range(remaining):
        try:
            if sock.recv(1024) == b"":
                return True
        except TimeoutError:
            pass
        except ConnectionResetError:
            return True
        if dribble:
            try:
                sock.sendall(dribble[:1])
            except (BrokenPipeError, ConnectionResetError):
                return True
            dribble = dribble[1:]
    return False


def _connect(service: HttpService) -> socket.socket:
    return socket.create_connection((service.host, service.port), timeout=WAIT)


def test_a_connection_that_sends_part_of_a_header_is_closed(exposed: HttpService) -> None:
    with _connect(exposed) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.2\r\n")
        assert _closed_within(sock, CLOSE_BOUND)


def test_a_connection_that_dribbles_its_header_is_closed(exposed: HttpService) -> None:
    header = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.2\r\nX-Slow: " + b"a" * 400
    with _connect(exposed) as sock:
        assert _closed_within(sock, CLOSE_BOUND, dribble=header)


def test_a_connection_that_sends_nothing_is_closed_and_the_service_goes_on(
    exposed: HttpService,
) -> None:
    with _connect(exposed) as sock:
        assert _closed_within(sock, CLOSE_BOUND)
    assert _post(exposed, ALICE).status_code == 200


def _entity(name: str) -> dict[str, Any]:
    return {"name": name, "entityType": "t", "observations": [f"about {name}"]}
