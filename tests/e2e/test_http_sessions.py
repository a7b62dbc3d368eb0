"""Session limits: one greedy or careless client cannot lock the others out.

Clients are told apart by address (127.0.0.x aliases stand for other machines) and, when
tokens are set, by the token's name. Limits are set low so that a few hundred sessions show
what ten thousand would.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import Client

from tests.e2e.http_support import HttpService, bearer_client, http_service
from tests.e2e.support import call, value

pytestmark = pytest.mark.anyio

WAIT = 15.0
REAP_BOUND = 60.0
IDLE_SECONDS = 1
GREEDY_SESSIONS = 300
PER_CLIENT = 5
CONCURRENT = 40
IN_ALL = 10
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "session-probe", "version": "0"},
    },
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
GREEDY_TOKEN = "greedy-token-0123456789abcdef"
POLITE_TOKEN = "polite-token-0123456789abcdef"


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[HttpService]:
    with http_service(
        tmp_path / "data",
        tmp_path / "service.log",
        GRAPHMEM_HTTP_MAX_SESSIONS_PER_CLIENT=str(PER_CLIENT),
        GRAPHMEM_HTTP_MAX_SESSIONS=str(IN_ALL),
    ) as service:
        yield service


@contextmanager
def from_address(address: str, token: str | None = None) -> Iterator[httpx.Client]:
    """An HTTP client whose connections come from `address` (a 127.0.0.x alias)."""
    headers = dict(HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, timeout=WAIT, headers=headers) as client:
        yield client


def open_session(client: httpx.Client, service: HttpService) -> str:
    answer = client.post(service.url, json=INITIALIZE)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


def is_open(client: httpx.Client, service: HttpService, session_id: str) -> bool:
    answer = client.post(
        service.url,
        json=PING,
        headers={"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"},
    )
    assert answer.status_code in (200, 404), answer.text
    return answer.status_code == 200


async def test_a_client_opening_hundreds_of_sessions_keeps_only_its_share(
    limited: HttpService,
) -> None:
    with from_address("127.0.0.5") as greedy:
        opened = [open_session(greedy, limited) for _ in range(GREEDY_SESSIONS)]
        still_open = [sid for sid in opened if is_open(greedy, limited, sid)]
    # Its newest sessions are kept; each one past its share closed its oldest idle one.
    assert still_open == opened[-PER_CLIENT:]

    async with Client(limited.url, mode="legacy") as newcomer:
        created = value(await call(newcomer, "create_entities", {"entities": [_entity("n")]}))
        assert created == [_entity("n")]
    log = limited.log_path.read_text(errors="replace")
    assert "Too many open sessions" not in log


async def test_concurrent_openings_from_one_client_never_exceed_its_share(
    limited: HttpService,
) -> None:
    with from_address("127.0.0.5") as greedy_first:
        # Its share, idle: each concurrent opening below then closes one to make room.
        opened = [open_session(greedy_first, limited) for _ in range(PER_CLIENT)]
    transport = httpx.AsyncHTTPTransport(local_address="127.0.0.5")
    async with httpx.AsyncClient(transport=transport, timeout=WAIT, headers=HEADERS) as greedy:

        async def open_one() -> None:
            answer = await greedy.post(limited.url, json=INITIALIZE)
            # 429 when its share is all openings still under way (busy, so none is closed).
            assert answer.status_code in (200, 429), answer.text
            if answer.status_code == 200:
                opened.append(answer.headers["mcp-session-id"])

        with anyio.fail_after(120):
            async with anyio.create_task_group() as openings:
                for _ in range(CONCURRENT):
                    openings.start_soon(open_one)
    assert opened
    with from_address("127.0.0.5") as greedy_again:
        assert sum(is_open(greedy_again, limited, sid) for sid in opened) <= PER_CLIENT


async def test_a_client_whose_sessions_are_all_busy_is_refused_and_no_one_else(
    limited: HttpService,
) -> None:
    with from_address("127.0.0.5") as busy, from_address("127.0.0.6") as other:
        streams = []
        try:
            for _ in range(PER_CLIENT):
                session_id = open_session(busy, limited)
                # An open GET stream keeps a session busy: it is never closed for another.
                stream = busy.stream(
                    "GET",
                    limited.url,
                    headers={
                        "mcp-session-id": session_id,
                        "mcp-protocol-version": "2025-11-25",
                        "Accept": "text/event-stream",
                    },
                )
                response = stream.__enter__()
                streams.append(stream)
                assert response.status_code == 200
            refused = busy.post(limited.url, json=INITIALIZE)
            assert refused.status_code == 429, refused.text
            assert refused.json()["error"]["code"] == -32600
            assert "DELETE" in refused.json()["error"]["message"]
            assert open_session(other, limited)
        finally:
            for stream in streams:
                stream.__exit__(None, None, None)


def test_when_the_service_is_full_a_newcomer_takes_an_idle_place_of_the_biggest_holder(
    limited: HttpService,
) -> None:
    with (
        from_address("127.0.0.5") as big,
        from_address("127.0.0.6") as small,
        from_address("127.0.0.7") as newcomer,
    ):
        bigs = [open_session(big, limited) for _ in range(PER_CLIENT)]
        smalls = [open_session(small, limited) for _ in range(IN_ALL - PER_CLIENT - 1)]
        # One place left, then none: the newcomers' sessions are admitted all the same.
        first = open_session(newcomer, limited)
        second = open_session(newcomer, limited)
        assert is_open(newcomer, limited, first) and is_open(newcomer, limited, second)
        assert [is_open(big, limited, sid) for sid in bigs] == [False] + [True] * (PER_CLIENT - 1)
        assert all(is_open(small, limited, sid) for sid in smalls)


async def test_token_names_are_separate_clients_on_one_address(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"greedy:{GREEDY_TOKEN}\npolite:{POLITE_TOKEN}\n")
    with (
        http_service(
            tmp_path / "data",
            tmp_path / "service.log",
            GRAPHMEM_HTTP_TOKEN_FILE=str(tokens),
            GRAPHMEM_HTTP_MAX_SESSIONS_PER_CLIENT=str(PER_CLIENT),
            GRAPHMEM_HTTP_MAX_SESSIONS=str(IN_ALL),
        ) as service,
        from_address("127.0.0.1", GREEDY_TOKEN) as greedy,
        from_address("127.0.0.1", POLITE_TOKEN) as polite,
    ):
        polite_session = open_session(polite, service)
        opened = [open_session(greedy, service) for _ in range(3 * PER_CLIENT)]
        assert is_open(polite, service, polite_session)
        assert sum(is_open(greedy, service, sid) for sid in opened) == PER_CLIENT
        # A session answers only the token that opened it.
        assert not is_open(greedy, service, polite_session)
        async with bearer_client(service.url, POLITE_TOKEN, mode="legacy") as client:
            assert not (await call(client, "read_graph", {})).is_error


def test_an_abandoned_session_is_closed_once_idle_past_the_timeout(tmp_path: Path) -> None:
    with (
        http_service(
            tmp_path / "data",
            tmp_path / "service.log",
            GRAPHMEM_HTTP_SESSION_IDLE_SECONDS=str(IDLE_SECONDS),
        ) as service,
        from_address("127.0.0.1") as client,
    ):
        session_id = open_session(client, service)
        deadline = time.monotonic() + REAP_BOUND
        pause = threading.Event()
        # Each probe is activity that restarts the idle countdown: probe less often than that.
        while pause.wait(IDLE_SECONDS * 2.5) or is_open(client, service, session_id):
            assert time.monotonic() < deadline, f"still open after {REAP_BOUND:g} s"


def _entity(name: str) -> dict[str, object]:
    return {"name": name, "entityType": "t", "observations": [f"about {name}"]}
