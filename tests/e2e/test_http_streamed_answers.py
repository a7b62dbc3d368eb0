"""Whole-graph answers over streamable HTTP written in slices (graphmem.http_service.answer_splicer)
are byte for byte what the SDK sends for the whole result, in both handshake eras, as SSE and as
JSON; refusals stay the SDK's; a client gone mid-answer frees the spool and leaves its session
usable; the 2026-07-28 era takes the SDK's path. Real `graphmem serve --http` processes on
loopback, the same data dir served once streaming and once with GRAPHMEM_FAST_CALLS=0 (every
answer whole, through the SDK), raw httpx for the bytes and the SDK's client for the values.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.http_support import HttpService, free_port, http_service
from tests.e2e.support import call, value
from tests.e2e.test_http_oauth_jwt import (
    Issuer,
    issuer,  # noqa: F401 - the JWT issuer fixture
)

WAIT = 60.0
ERAS = ("2025-06-18", "2025-11-25")
ACCEPT = "application/json, text/event-stream"
# Characters JSON escapes, and some it does not: the text is escaped a slice at a time (the
# graph refuses other control characters).
ALPHABET = 'abcxyz ABC09 "\\/\n\t é ü ß 中文 🚀 \u2028 <>&'
# Headers that differ between two servers for reasons other than the answer.
VOLATILE = {"date", "mcp-session-id"}


def random_graph(seed: int, entities: int) -> list[dict[str, Any]]:
    """Official JSONL records: entities with awkward text, and relations between them."""
    rng = random.Random(seed)

    def text(length: int) -> str:
        return "".join(rng.choice(ALPHABET) for _ in range(length))

    names = [f"n{i} {text(rng.randint(0, 12)).replace(chr(10), '')}" for i in range(entities)]
    records: list[dict[str, Any]] = [
        {
            "type": "entity",
            "name": name,
            "entityType": f"kind {rng.choice('ABC')}",
            "observations": [text(rng.randint(0, 200)) for _ in range(rng.randint(0, 5))],
        }
        for name in names
    ]
    for _ in range(entities):
        source, target = rng.choice(names), rng.choice(names)
        records.append({"type": "relation", "from": source, "to": target, "relationType": text(8)})
    return records


def imported(data_dir: Path, records: list[dict[str, Any]]) -> Path:
    """`data_dir` filled by `graphmem import` of `records`."""
    source = data_dir.parent / f"{data_dir.name}.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    env = {**os.environ, "GRAPHMEM_DIR": str(data_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "import", str(source)],
        env=env,
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return data_dir


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def comparable(self) -> tuple[int, dict[str, str], bytes]:
        kept = {k: v for k, v in self.headers.items() if k not in VOLATILE}
        return self.status, kept, self.body


class RawSession:
    """A handshake-era session driven by hand, so every byte of a reply can be compared."""

    def __init__(
        self, http: httpx.Client, url: str, version: str, *, token: str | None = None
    ) -> None:
        self.http, self.url, self.version = http, url, version
        self.token = token
        self.next_id = 0
        opened = self.post("initialize", self.hello(), session=None)
        assert opened.status == 200, opened.body
        self.session = opened.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        acknowledged = self.http.post(self.url, json=note, headers=self.headers(self.session))
        assert acknowledged.status_code == 202

    def hello(self) -> dict[str, Any]:
        return {
            "protocolVersion": self.version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }

    def headers(self, session: str | None) -> dict[str, str]:
        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if session is not None:
            headers["mcp-session-id"] = session
            headers["mcp-protocol-version"] = self.version
        return headers

    def post(self, method: str, params: dict[str, Any], *, session: str | None) -> Reply:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        answer = self.http.post(self.url, json=message, headers=self.headers(session))
        return Reply(answer.status_code, dict(answer.headers), answer.read())

    def call(self, tool: str, arguments: dict[str, Any], *, session: str | None = "") -> Reply:
        chosen = self.session if session == "" else session
        return self.post("tools/call", {"name": tool, "arguments": arguments}, session=chosen)


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_graph", {}),
    ("search_nodes", {"query": "kind"}),  # every entity's type: a broad search
    ("search_nodes", {"query": "kind A"}),  # a third: under 1 MB, answered whole as before
]
LARGE = {0, 1}


def replies(service: HttpService) -> dict[tuple[str, int], Reply]:
    """Every call of CALLS in each era, as received."""
    got: dict[tuple[str, int], Reply] = {}
    with httpx.Client(timeout=WAIT) as http:
        for version in ERAS:
            session = RawSession(http, service.url, version)
            for number, (tool, arguments) in enumerate(CALLS):
                got[version, number] = session.call(tool, arguments)
    return got


def unbounded(service: HttpService) -> Any:
    """The SDK's client transport, reading SSE events of any size (its default stops at 1 MB)."""
    return streamable_http_client(service.url, max_sse_event_size=None)


def streamed(service: HttpService) -> int:
    return service.log_path.read_text(errors="replace").count('"answer_streamed"')


@pytest.mark.parametrize("json_response", ["0", "1"], ids=["sse", "json"])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_streamed_answer_is_the_sdks_answer_byte_for_byte(
    tmp_path: Path, seed: int, json_response: str
) -> None:
    data_dir = imported(tmp_path / "data", random_graph(seed, 4000))
    with http_service(
        data_dir, tmp_path / "streamed.log", GRAPHMEM_HTTP_JSON_RESPONSE=json_response
    ) as service:
        spliced = replies(service)
        assert streamed(service) == len(ERAS) * len(LARGE), "the large answers were streamed"
    with http_service(
        data_dir,
        tmp_path / "whole.log",
        GRAPHMEM_FAST_CALLS="0",
        GRAPHMEM_HTTP_JSON_RESPONSE=json_response,
    ) as service:
        whole = replies(service)
        assert streamed(service) == 0
    kind = "application/json" if json_response == "1" else "text/event-stream"
    for key, reply in whole.items():
        assert reply.status == 200 and reply.headers["content-type"].startswith(kind)
        if key[1] in LARGE:
            assert len(reply.body) > 2 * 1024 * 1024, "large enough to be spooled to disk"
        assert spliced[key].comparable() == reply.comparable(), key


def test_the_sdks_client_reads_a_streamed_answer_as_the_sdk_path_answers_it(
    tmp_path: Path,
) -> None:
    data_dir = imported(tmp_path / "data", random_graph(3, 4000))

    async def read(service: HttpService) -> list[Any]:
        # The SDK's client refuses an SSE event over 1 MB unless told otherwise.
        async with Client(unbounded(service), mode="legacy") as client:
            results = [await call(client, tool, arguments) for tool, arguments in CALLS]
            return [(value(r), r.structured_content) for r in results]

    with http_service(data_dir, tmp_path / "streamed.log") as service:
        spliced = anyio.run(read, service)
        assert streamed(service) == len(LARGE)
    with http_service(data_dir, tmp_path / "whole.log", GRAPHMEM_FAST_CALLS="0") as service:
        whole = anyio.run(read, service)
    assert spliced == whole
    graph, structured = spliced[0]
    assert graph == structured and len(graph["entities"]) > 3000 and graph["relations"]


def refusals(service: HttpService) -> list[Reply]:
    """A streamable call with an unknown session id, without one, with the wrong Accept."""
    with httpx.Client(timeout=WAIT) as http:
        session = RawSession(http, service.url, ERAS[0])
        unknown = session.call("read_graph", {}, session="f" * 32)
        missing = session.call("read_graph", {}, session=None)
        message = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "read_graph"},
        }
        headers = {**session.headers(session.session), "Accept": "text/plain"}
        wrong = http.post(service.url, json=message, headers=headers)
        return [unknown, missing, Reply(wrong.status_code, dict(wrong.headers), wrong.read())]


def test_an_unknown_or_missing_session_id_is_refused_exactly_as_the_sdk_refuses_it(
    tmp_path: Path,
) -> None:
    data_dir = imported(tmp_path / "data", random_graph(4, 4000))
    with http_service(data_dir, tmp_path / "streamed.log") as service:
        spliced = refusals(service)
    with http_service(data_dir, tmp_path / "whole.log", GRAPHMEM_FAST_CALLS="0") as service:
        whole = refusals(service)
    assert [r.status for r in whole] == [404, 400, 406]
    # The refusals carry no session header: nothing here differs between the two servers.
    assert [r.comparable() for r in spliced] == [r.comparable() for r in whole]


def result_of(reply: Reply) -> bytes:
    """A reply's bytes from its result on: the same answer to requests of different ids."""
    return reply.body.split(b'"result":', 1)[1]


def deleted_spools(service: HttpService) -> list[str]:
    """Open files of the service in its data dir that are unlinked: spools still held."""
    fds = Path(f"/proc/{service.process.pid}/fd")
    held = []
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith(str(service.data_dir)) and target.endswith("(deleted)"):
            held.append(target)
    return held


def wait_for(condition: Any, what: str, service: HttpService) -> None:
    deadline = time.monotonic() + WAIT
    pause = threading.Event()
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {WAIT:g} s\n{service.log_tail()}"
        pause.wait(0.05)


def slow_reader(service: HttpService, session: RawSession) -> socket.socket:
    """A socket with a small window that has POSTed read_graph on `session` and read the
    start of the answer: the rest waits in the server until it reads on."""
    message = json.dumps(
        {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "read_graph"}}
    ).encode()
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {service.host}:{service.port}\r\n"
        f"Accept: {ACCEPT}\r\nContent-Type: application/json\r\n"
        f"mcp-session-id: {session.session}\r\nmcp-protocol-version: {session.version}\r\n"
        f"Content-Length: {len(message)}\r\nConnection: close\r\n\r\n"
    ).encode() + message
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.settimeout(WAIT)
    raw.connect((service.host, service.port))
    raw.sendall(request)
    received = b""
    while len(received) < 64 * 1024:
        chunk = raw.recv(4096)
        assert chunk, "the server closed the connection before the answer was under way"
        received += chunk
    assert received.startswith(b"HTTP/1.1 200")
    return raw


def walk_away_mid_answer(service: HttpService, session: RawSession) -> None:
    """Start a read_graph from a slow reader and close its connection with unread data (RST)."""
    with slow_reader(service, session) as raw:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def test_an_answer_is_one_snapshot_and_writes_go_on_while_it_is_read(tmp_path: Path) -> None:
    data_dir = imported(tmp_path / "data", random_graph(8, 12_000))
    with (
        http_service(data_dir, tmp_path / "service.log") as service,
        httpx.Client(timeout=WAIT) as http,
    ):
        session = RawSession(http, service.url, ERAS[0])
        with slow_reader(service, session) as raw:
            # The answer is spooled: the writer is free while the client reads slowly.
            note = {
                "entities": [{"name": "written meanwhile", "entityType": "t", "observations": []}]
            }
            write = session.call("create_entities", note)
            assert write.status == 200 and b"written meanwhile" in write.body
            rest = b""
            while chunk := raw.recv(1 << 16):
                rest += chunk
        assert b"written meanwhile" not in rest
        wait_for(lambda: streamed(service) == 1, "answer_streamed logged", service)
        later = session.call("read_graph", {})
        assert b"written meanwhile" in later.body


@pytest.mark.parametrize("json_response", ["0", "1"], ids=["sse", "json"])
def test_a_client_gone_mid_answer_frees_the_spool_and_its_session_stays_usable(
    tmp_path: Path, json_response: str
) -> None:
    # ~12 MB of answer: far more than the socket buffers hold for a client that stops reading.
    data_dir = imported(tmp_path / "data", random_graph(5, 12_000))
    with (
        http_service(
            data_dir, tmp_path / "service.log", GRAPHMEM_HTTP_JSON_RESPONSE=json_response
        ) as service,
        httpx.Client(timeout=WAIT) as http,
    ):
        session = RawSession(http, service.url, ERAS[1])
        first = session.call("read_graph", {})
        walk_away_mid_answer(service, session)

        def gone() -> bool:
            return '"client_gone"' in service.log_path.read_text(errors="replace")

        wait_for(gone, "client_gone logged", service)
        wait_for(lambda: not deleted_spools(service), "the spool freed", service)
        again = session.call("read_graph", {})
        assert again.status == 200 and result_of(again) == result_of(first)
        write = session.call(
            "create_entities",
            {"entities": [{"name": "after", "entityType": "t", "observations": []}]},
        )
        assert write.status == 200 and b'"isError"' not in write.body


def test_the_2026_era_takes_the_sdks_path_with_the_same_answer(tmp_path: Path) -> None:
    data_dir = imported(tmp_path / "data", random_graph(6, 4000))

    async def both() -> tuple[Any, Any]:
        async with (
            Client(unbounded(service), mode="legacy") as legacy,
            Client(unbounded(service)) as modern,
        ):
            assert modern.protocol_version == "2026-07-28"
            return (
                value(await call(legacy, "read_graph", {})),
                value(await call(modern, "read_graph", {})),
            )

    with http_service(data_dir, tmp_path / "service.log") as service:
        streamed_value, modern_value = anyio.run(both)
        assert streamed(service) == 1, "only the handshake-era call was streamed"
    assert modern_value == streamed_value


def test_oauth_scope_and_the_sessions_owner_are_enforced_before_an_answer_is_streamed(
    tmp_path: Path,
    issuer: Issuer,  # noqa: F811 - the fixture imported above
) -> None:
    data_dir = imported(tmp_path / "data", random_graph(7, 4000))
    with (
        http_service(
            data_dir,
            tmp_path / "service.log",
            port=free_port(),
            GRAPHMEM_OAUTH="external",
            GRAPHMEM_OAUTH_ISSUER_URL=issuer.url,
            GRAPHMEM_OAUTH_JWKS_URL=issuer.jwks_url,
        ) as service,
        httpx.Client(timeout=WAIT) as http,
    ):
        owner = RawSession(http, service.url, ERAS[0], token=issuer.sign(service.url))
        assert owner.call("read_graph", {}).status == 200
        assert streamed(service) == 1
        session = owner.session
        owner.token = issuer.sign(service.url, scope="other")
        unscoped = owner.call("read_graph", {})
        assert unscoped.status == 403
        assert 'error="insufficient_scope"' in unscoped.headers["www-authenticate"]
        # A valid token of someone else: the SDK answers as if the session did not exist.
        owner.token = issuer.sign(service.url, sub="someone else", client_id="another")
        foreign = owner.call("read_graph", {}, session=session)
        assert foreign.status == 404 and b"Session not found" in foreign.body
        assert streamed(service) == 1, "nothing was streamed to a refused request"
