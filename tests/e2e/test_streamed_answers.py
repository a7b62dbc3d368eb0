"""A whole-graph answer past graphmem.tools.graph_body.IN_MEMORY_BYTES goes out over stdio in
slices (graphmem.wire.stdio_wire.Wire._write_streamed), through a real pipe to a raw client:
the line arrives whole and parses; a request sent behind it is answered after it, never inside
it; a write that lands while the line is still going out does not show in it; and a client
that goes away mid-line does not keep the server from ending."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.e2e.support import server_params

TIMEOUT = 60.0
HELLO = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"},
}
WIDE = 'a "quoted" \\ line\nthen é 🚀 \t ' * 60


class Pipe:
    """A graphmem process's stdio, read with a deadline on every wait."""

    def __init__(self, data_dir: Path) -> None:
        params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO")
        self.process = subprocess.Popen(
            [sys.executable, *params.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=params.env,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self.stdin = self.process.stdin
        self.out = self.process.stdout.fileno()
        self.buffer = b""
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any], *, notify: bool = False) -> int:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()
        return self.next_id

    def read_some(self, deadline: float) -> bytes:
        ready, _, _ = select.select([self.out], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, "the server wrote nothing before the deadline"
        chunk = os.read(self.out, 1 << 20)
        assert chunk, "the server closed its stdout"
        return chunk

    def line(self) -> bytes:
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in self.buffer:
            self.buffer += self.read_some(deadline)
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def answer(self, request_id: int) -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(self.line())
            if message.get("id") == request_id and "method" not in message:
                return message

    def initialize(self) -> None:
        self.answer(self.send("initialize", HELLO))
        self.send("notifications/initialized", {}, notify=True)

    def call(self, name: str, arguments: dict[str, Any]) -> int:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def stderr(self) -> list[dict[str, Any]]:
        assert self.process.stderr is not None
        return [json.loads(line) for line in self.process.stderr if line.startswith(b"{")]


@contextmanager
def serving(data_dir: Path) -> Iterator[Pipe]:
    pipe = Pipe(data_dir)
    try:
        pipe.initialize()
        yield pipe
    finally:
        if pipe.process.poll() is None:
            pipe.process.kill()
            pipe.process.wait(TIMEOUT)
        for stream in (pipe.process.stdin, pipe.process.stdout, pipe.process.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def fill(pipe: Pipe, count: int) -> None:
    """`count` entities of about 2 KB each: a read_graph of some 3 MB per 1,000."""
    people = [
        {"name": f"wide-{i:05d}", "entityType": "person", "observations": [f"{WIDE} {i}"]}
        for i in range(count)
    ]
    relations = [
        {"from": f"wide-{i:05d}", "to": f"wide-{i + 1:05d}", "relationType": "knows"}
        for i in range(count - 1)
    ]
    created = pipe.answer(pipe.call("create_entities", {"entities": people}))
    assert "isError" not in created["result"]
    related = pipe.answer(pipe.call("create_relations", {"relations": relations}))
    assert "isError" not in related["result"]


def test_a_large_read_graph_arrives_whole_with_the_calls_behind_it_answered_after_it(
    tmp_path: Path,
) -> None:
    with serving(tmp_path) as pipe:
        fill(pipe, 1500)
        read = pipe.call("read_graph", {})
        # Sent at once, behind it: answered after the whole line, never inside it.
        behind = pipe.call(
            "create_entities",
            {"entities": [{"name": "late", "entityType": "x", "observations": []}]},
        )
        search = pipe.call("search_nodes", {"query": "wide"})
        answer = pipe.answer(read)
        graph = answer["result"]["structuredContent"]
        assert len(graph["entities"]) == 1500 and len(graph["relations"]) == 1499
        assert json.loads(answer["result"]["content"][0]["text"]) == graph
        # The write queued behind the read does not show in it: one snapshot.
        assert "late" not in {e["name"] for e in graph["entities"]}
        assert "isError" not in pipe.answer(behind)["result"]
        found = pipe.answer(search)["result"]["structuredContent"]
        assert len(found["entities"]) == 1500
        pipe.stdin.close()
        assert pipe.process.wait(TIMEOUT) == 0
        streamed = [e for e in pipe.stderr() if e.get("event") == "answer_streamed"]
        assert len(streamed) == 2 and all(e["slices"] > 4 for e in streamed)


def test_a_client_that_goes_away_mid_answer_does_not_keep_the_server_from_ending(
    tmp_path: Path,
) -> None:
    with serving(tmp_path) as pipe:
        fill(pipe, 3000)
        pipe.call("read_graph", {})
        deadline = time.monotonic() + TIMEOUT
        assert pipe.read_some(deadline)  # the answer has started
        assert pipe.process.stdout is not None
        pipe.process.stdout.close()  # gone, mid-line
        pipe.stdin.close()
        assert pipe.process.wait(TIMEOUT) == 0  # not a crash on the broken pipe
        events = [e.get("event") for e in pipe.stderr()]
        assert "client_gone" in events and "answer_streamed" not in events


def test_a_large_read_graph_is_written_whole_to_a_regular_file(tmp_path: Path) -> None:
    """stdout a file (a worker thread writes it): the slices still make one line."""
    with serving(tmp_path / "data") as pipe:
        fill(pipe, 1200)
    requests = tmp_path / "requests.jsonl"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_graph"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_graph"}},
    ]
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines))
    answers = tmp_path / "answers.jsonl"
    params = server_params(tmp_path / "data")
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, *params.args],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            env=params.env,
            timeout=TIMEOUT * 2,
            check=False,
        )
    assert done.returncode == 0
    written = answers.read_bytes().splitlines()
    assert len(written) == 3 and written[1] == written[2].replace(b'"id":3', b'"id":2', 1)
    assert len(json.loads(written[1])["result"]["structuredContent"]["entities"]) == 1200
