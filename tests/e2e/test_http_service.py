"""One long-running streamable-HTTP service shared by many clients of both protocol eras."""

from __future__ import annotations

import http.client
import json
import math
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import mcp.types as types
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import Client, ClientSession
from mcp.shared.subscriptions import ResourceUpdated

from tests.e2e.http_support import HOST, HttpService, http_service
from tests.e2e.support import call, legacy_session, value

pytestmark = pytest.mark.anyio

GRAPH_URI = "memory://knowledge-graph"
WAIT = 15.0
CLI_TIMEOUT = 60.0
NINE_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}
EXTENSION_TOOLS = {
    "update_entities",
    "update_observations",
    "update_relations",
    "merge_entities",
    "read_conflicts",
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpService]:
    """One service for the module; each test writes names of its own."""
    root = tmp_path_factory.mktemp("http-service")
    with http_service(root / "data", root / "service.log") as running:
        yield running


@pytest.fixture
def fresh_service(tmp_path: Path) -> Iterator[HttpService]:
    """A service of its own, for a test that asserts on the whole graph."""
    with http_service(tmp_path / "data", tmp_path / "service.log") as running:
        yield running


def entity(name: str) -> dict[str, Any]:
    return {"name": name, "entityType": "t", "observations": [f"about {name}"]}


def create(*names: str) -> dict[str, Any]:
    return {"entities": [entity(name) for name in names]}


async def open_names(client: Client | ClientSession, *names: str) -> list[str]:
    found = value(await call(client, "open_nodes", {"names": list(names)}))
    return [e["name"] for e in found["entities"]]


@asynccontextmanager
async def resource_updates(
    service: HttpService,
) -> AsyncIterator[tuple[Client, MemoryObjectReceiveStream[str]]]:
    """A handshake-era client whose notifications/resources/updated arrive on a stream."""
    send, receive = anyio.create_memory_object_stream[str](max_buffer_size=math.inf)

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            send.send_nowait(str(root.params.uri))

    with send, receive:
        async with Client(service.url, mode="legacy", message_handler=on_message) as client:
            yield client, receive


async def next_update(updates: MemoryObjectReceiveStream[str], service: HttpService) -> str:
    try:
        with anyio.fail_after(WAIT):
            return await updates.receive()
    except TimeoutError:
        pytest.fail(f"no notifications/resources/updated within {WAIT:g} s\n{service.log_tail()}")


async def next_event(events: AsyncIterator[Any], service: HttpService) -> Any:
    try:
        with anyio.fail_after(WAIT):
            return await events.__anext__()
    except TimeoutError:
        pytest.fail(f"no subscriptions/listen event within {WAIT:g} s\n{service.log_tail()}")


async def test_handshake_era_over_http_advertises_and_round_trips(service: HttpService) -> None:
    async with Client(service.url, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        caps = client.server_capabilities
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.resources is not None and caps.resources.subscribe is True
        listed = {t.name for t in (await client.list_tools()).tools}
        assert listed >= NINE_TOOLS | EXTENSION_TOOLS
        assert {"add_person", "update_person", "delete_person"} <= listed

        created = value(await call(client, "create_entities", create("legacy-http")))
        assert created == [entity("legacy-http")]
        graph = value(await call(client, "read_graph", {}))
        assert entity("legacy-http") in graph["entities"]


async def test_modern_era_over_http_round_trips_and_hears_other_clients(
    service: HttpService,
) -> None:
    async with Client(service.url) as listener, Client(service.url) as writer:
        assert listener.protocol_version == "2026-07-28"
        created = value(await call(listener, "create_entities", create("modern-http")))
        assert created == [entity("modern-http")]
        graph = value(await call(listener, "read_graph", {}))
        assert entity("modern-http") in graph["entities"]

        async with listener.listen(resource_subscriptions=[GRAPH_URI]) as stream:
            events = stream.__aiter__()
            await call(writer, "create_entities", create("modern-from-other-client"))
            event = await next_event(events, service)
            assert isinstance(event, ResourceUpdated) and event.uri == GRAPH_URI

            async with Client(service.url, mode="legacy") as handshake_writer:
                await call(handshake_writer, "create_entities", create("modern-from-legacy"))
            event = await next_event(events, service)
            assert isinstance(event, ResourceUpdated) and event.uri == GRAPH_URI


async def test_handshake_era_subscriber_hears_another_clients_mutation(
    service: HttpService,
) -> None:
    async with resource_updates(service) as (subscriber, updates):
        await subscriber.subscribe_resource(GRAPH_URI)
        async with Client(service.url) as writer:
            result = await call(writer, "create_entities", create("legacy-from-other-client"))
            assert not result.is_error
        assert await next_update(updates, service) == GRAPH_URI

        async with Client(service.url, mode="legacy") as handshake_writer:
            await call(handshake_writer, "create_entities", create("legacy-from-legacy"))
        assert await next_update(updates, service) == GRAPH_URI


CLIENTS = 8
PER_CLIENT = 25
IN_FLIGHT = 5


async def test_many_concurrent_clients_of_both_eras_lose_nothing(
    fresh_service: HttpService,
) -> None:
    async def client_writes(number: int) -> None:
        mode = "legacy" if number % 2 else "auto"
        async with Client(fresh_service.url, mode=mode) as client:

            async def create_one(name: str) -> None:
                assert value(await call(client, "create_entities", create(name))) == [entity(name)]

            for start in range(0, PER_CLIENT, IN_FLIGHT):
                async with anyio.create_task_group() as calls:
                    for i in range(start, start + IN_FLIGHT):
                        calls.start_soon(create_one, f"c{number}-e{i}")

    with anyio.fail_after(60):
        async with anyio.create_task_group() as clients:
            for number in range(CLIENTS):
                clients.start_soon(client_writes, number)

    async with Client(fresh_service.url) as reader:
        graph = value(await call(reader, "read_graph", {}))
    names = [e["name"] for e in graph["entities"]]
    expected = {f"c{n}-e{i}" for n in range(CLIENTS) for i in range(PER_CLIENT)}
    assert len(names) == len(expected) == CLIENTS * PER_CLIENT
    assert set(names) == expected


async def test_a_stdio_process_and_the_service_see_each_others_writes(
    service: HttpService,
) -> None:
    async with (
        Client(service.url) as over_http,
        legacy_session(service.data_dir) as over_stdio,
    ):
        await call(over_http, "create_entities", create("from-http"))
        assert await open_names(over_stdio, "from-http") == ["from-http"]

        async with over_http.listen(resource_subscriptions=[GRAPH_URI]) as stream:
            await call(over_stdio, "create_entities", create("from-stdio"))
            assert await open_names(over_http, "from-stdio") == ["from-stdio"]
            # The service learns of another process's write on its next call, and tells
            # its listeners then.
            event = await next_event(stream.__aiter__(), service)
            assert isinstance(event, ResourceUpdated) and event.uri == GRAPH_URI

        again = await call(over_http, "create_entities", create("from-stdio"))
        assert value(again) == []  # decided against the stdio process's write


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "host-header-probe", "version": "0"},
        },
    }
)


def _post_with_host(port: int, host_header: str) -> int:
    connection = http.client.HTTPConnection(HOST, port, timeout=WAIT)
    try:
        connection.putrequest("POST", "/mcp", skip_host=True)
        connection.putheader("Host", host_header)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Accept", "application/json, text/event-stream")
        body = INITIALIZE.encode()
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_service_rejects_a_foreign_host_header(service: HttpService) -> None:
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not reach the memory.
    assert _post_with_host(service.port, "evil.example") == 421
    assert _post_with_host(service.port, f"evil.example:{service.port}") == 421
    assert _post_with_host(service.port, f"{HOST}:{service.port}") == 200


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False)


def test_serve_help_describes_the_http_service() -> None:
    done = _run(sys.executable, "-m", "graphmem", "serve", "--help")
    assert done.returncode == 0, done.stderr
    assert "--http" in done.stdout
    assert "HOST:PORT" in done.stdout
    assert "/mcp" in done.stdout


def test_the_graphmem_command_lists_its_commands() -> None:
    script = Path(sys.executable).parent / "graphmem"
    if not script.exists():
        pytest.skip("the graphmem console script is not installed in this environment")
    done = _run(str(script), "--help")
    assert done.returncode == 0, done.stderr
    for command in ("serve", "import", "export", "--data-dir"):
        assert command in done.stdout


INVALID_IDS = [{"an": "object"}, True, 1.5, None, [1]]


def test_a_request_with_an_invalid_id_gets_the_invalid_request_error(
    service: HttpService,
) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=WAIT, headers=headers) as client:
        opened = client.post(service.url, content=INITIALIZE)
        assert opened.status_code == 200, opened.text
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = "2025-11-25"
        for bad in INVALID_IDS:
            request = {"jsonrpc": "2.0", "id": bad, "method": "tools/list"}
            answer = client.post(service.url, json=request, headers=headers)
            assert answer.status_code == 400, (bad, answer.status_code, answer.text)
            error = answer.json()
            assert error["id"] is None and error["error"]["code"] == -32600, error
            assert "string or an integer" in error["error"]["message"]
        # The session still serves a well-formed request.
        fine = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        assert client.post(service.url, json=fine, headers=headers).status_code == 200
