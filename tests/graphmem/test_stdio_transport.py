"""The stdio wire with its fast path, in process: answers, their order, cancellation, drain."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from structlog.testing import capture_logs

from eventstore.events import Cause
from graphmem.early_handshake import Handshake
from graphmem.tools.base import ToolOutcome
from graphmem.wire.fast_calls import FastCalls
from graphmem.wire.front import Front
from graphmem.wire.initialize_answer import ServerIdentity
from graphmem.wire.stdio_wire import Wire, WireReadStream
from graphmem.wire.wire_lines import LineReader

pytestmark = pytest.mark.anyio

WAIT = 10.0
Tool = Callable[[str, dict[str, Any], Cause], Awaitable[ToolOutcome]]
# Each wire's input, for a test that feeds more once the wire runs.
feeds: dict[Wire, asyncio.StreamReader] = {}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Pipe:
    """Stands in for the write side of the stdout pipe."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        await anyio.lowlevel.checkpoint()

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in bytes(self.data).splitlines()]


def call(
    request_id: int,
    name: str = "read_graph",
    arguments: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta is not None:
        params["_meta"] = meta
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message).encode() + b"\n"


def cancel(request_id: int) -> bytes:
    params = {"requestId": request_id, "reason": "user"}
    message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    return json.dumps(message).encode()


async def serve(
    lines: list[bytes],
    tool: Tool,
    started: Callable[[Wire], Coroutine[Any, Any, None]],
    *,
    eof: bool = True,
    sdk_work: Callable[[types.JSONRPCRequest], Awaitable[None]] | None = None,
    fast: bool = True,
) -> Pipe:
    """Feed `lines` (then EOF, unless `started` will) to a wire whose fast path runs `tool`,
    with an initialized session; `started` runs beside it. Returns once the wire has drained,
    as at EOF."""
    reader = asyncio.StreamReader()
    pipe = Pipe()
    wire = Wire(LineReader(lambda: reader.read(65536), 1 << 20), pipe)
    feeds[wire] = reader
    if fast:
        WireReadStream(wire).attach(FastCalls(tool, Server("test", version="1")))
    wire.session.era, wire.session.version = "legacy", "2025-06-18"
    for line in lines:
        reader.feed_data(line if line.endswith(b"\n") else line + b"\n")
    if eof:
        reader.feed_eof()

    async def handle(message: types.JSONRPCRequest) -> None:
        if sdk_work is not None:
            await sdk_work(message)
        reply = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result={"sdk": True})
        await wire.outgoing.send(SessionMessage(reply))

    async def sdk() -> None:  # the SDK's side: like the SDK, runs each request in a task
        async with anyio.create_task_group() as handlers:
            async for forwarded in wire.incoming:
                if isinstance(forwarded.message, types.JSONRPCRequest):
                    handlers.start_soon(handle, forwarded.message)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(wire.write_lines)
            group.start_soon(sdk)
            group.start_soon(started, wire)
            await wire.read_lines()
            group.cancel_scope.cancel()
    wire.outgoing.close()
    wire.incoming.close()
    return pipe


def answer(request_id: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"text":"ok","type":"text"}]}}' % (
        request_id
    )


async def test_pipelined_calls_run_one_at_a_time_in_the_order_sent_and_are_all_answered() -> None:
    running: list[int] = []
    ran: list[int] = []

    async def tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        running.append(arguments["n"])
        assert len(running) == 1, f"calls overlap: {running}"
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        ran.append(running.pop())
        return ToolOutcome(texts=["ok"])

    async def nothing(wire: Wire) -> None:
        return None

    pipe = await serve([call(i, arguments={"n": i}) for i in range(8)], tool, nothing)
    assert ran == list(range(8))
    assert [m["id"] for m in pipe.messages()] == list(range(8))


async def test_a_call_behind_one_the_sdk_runs_waits_for_its_answer() -> None:
    """A call with a progress token goes to the SDK; the plain call behind it, which the fast
    path would take, must not overtake it."""
    order: list[str] = []

    async def tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        order.append("fast")
        return ToolOutcome(texts=["ok"])

    async def slow_sdk(message: types.JSONRPCRequest) -> None:
        for _ in range(20):
            await anyio.lowlevel.checkpoint()
        order.append("sdk")

    progress = call(1, arguments={}, meta={"progressToken": "p"})
    pipe = await serve([progress, call(2)], tool, nothing_more, sdk_work=slow_sdk)
    assert order == ["sdk", "fast"]
    assert [m["id"] for m in pipe.messages()] == [1, 2]


async def nothing_more(wire: Wire) -> None:
    return None


async def test_with_the_fast_path_off_the_sdk_gets_a_request_once_the_one_before_is_answered() -> (
    None
):
    """The SDK runs requests concurrently: handed both at once, the quick second call would
    apply (and be answered) before the slow first one."""
    order: list[object] = []

    async def first_is_slow(message: types.JSONRPCRequest) -> None:
        if message.id == 1:
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
        order.append(message.id)

    pipe = await serve(
        [call(1), call(2)], never_ends, nothing_more, sdk_work=first_is_slow, fast=False
    )
    assert order == [1, 2]
    assert [m["id"] for m in pipe.messages()] == [1, 2]


async def test_a_notification_sent_during_a_call_goes_out_before_its_answer() -> None:
    wires: list[Wire] = []

    async def tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        updated = types.JSONRPCNotification(
            jsonrpc="2.0",
            method="notifications/resources/updated",
            params={"uri": "memory://knowledge-graph"},
        )
        await wires[0].outgoing.send(SessionMessage(updated))
        return ToolOutcome(texts=["ok"], mutated=True)

    async def keep(wire: Wire) -> None:
        wires.append(wire)

    pipe = await serve([call(1, "create_entities")], tool, keep)
    assert [m.get("method", "answer") for m in pipe.messages()] == [
        "notifications/resources/updated",
        "answer",
    ]


async def test_a_call_the_client_cancels_is_never_answered_nor_holds_up_the_drain() -> None:
    cancelled = anyio.Event()
    entered = anyio.Event()

    async def cancel_once_running(wire: Wire) -> None:
        await entered.wait()
        feeds[wire].feed_data(cancel(1) + b"\n" + call(2, "other"))
        feeds[wire].feed_eof()

    tool = slow_then(blocked_until_cancelled(entered, cancelled))
    pipe = await serve([call(1)], tool, cancel_once_running, eof=False)
    assert cancelled.is_set()
    assert [m["id"] for m in pipe.messages()] == [2]


async def test_a_call_cancelled_before_it_runs_is_never_answered() -> None:
    async def nothing(wire: Wire) -> None:
        return None

    pipe = await serve([call(1), cancel(1), call(2, "other")], slow_then(never_ends), nothing)
    assert [m["id"] for m in pipe.messages()] == [2]


async def never_ends(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def blocked_until_cancelled(entered: anyio.Event, cancelled: anyio.Event) -> Tool:
    """A tool that sets `entered`, then waits until its call is cancelled and sets
    `cancelled`."""

    async def tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        entered.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    return tool


def slow_then(first: Tool) -> Tool:
    """`first` for read_graph, an immediate answer for any other tool."""

    async def tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        if name == "read_graph":
            return await first(name, arguments, cause)
        return ToolOutcome(texts=["ok"])

    return tool


async def test_a_failing_handler_gets_the_error_the_sdk_would_send() -> None:
    async def tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        raise RuntimeError("catalog unavailable")

    async def nothing(wire: Wire) -> None:
        return None

    with capture_logs() as logs:
        pipe = await serve([call(5)], tool, nothing)
    assert [entry["event"] for entry in logs][-1] == "tool_call_failed"
    assert bytes(pipe.data) == (
        b'{"jsonrpc":"2.0","id":5,"error":{"code":0,"message":"catalog unavailable"}}\n'
    )


async def test_a_call_read_while_an_initialize_is_unanswered_waits_for_its_answer() -> None:
    causes: list[Cause] = []

    async def tool(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
        causes.append(cause)
        return ToolOutcome(texts=["ok"])

    async def nothing(wire: Wire) -> None:
        return None

    init = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "0"},
        },
    }
    pipe = await serve([call(1), json.dumps(init).encode(), call(2)], tool, nothing)
    answered_by = [(m["id"], "sdk" if "sdk" in m["result"] else "fast") for m in pipe.messages()]
    assert answered_by == [(1, "fast"), ("init", "sdk"), (2, "fast")]


async def test_a_queued_call_the_client_cancels_is_dropped_unanswered() -> None:
    async def nothing(wire: Wire) -> None:
        return None

    lines = [call(1), call(2, "other"), cancel(2), cancel(1), call(3, "other")]
    pipe = await serve(lines, slow_then(never_ends), nothing)
    assert [m["id"] for m in pipe.messages()] == [3]


async def test_a_fast_call_cancelled_before_the_sdk_loads_is_never_answered_nor_loads_it() -> None:
    """With graphmem's front serving the session (no SDK loaded), a cancellation cancels the
    running fast call as before; the session ends without the SDK ever being wanted."""
    cancelled = anyio.Event()
    entered = anyio.Event()

    async def never_listed(version: str) -> bytes:
        raise AssertionError("not asked")

    identity = ServerIdentity("test", "Test", "1", "")
    reader = asyncio.StreamReader()
    pipe = Pipe()
    front = Front(identity, Handshake(b""), list_tools=never_listed)
    wire = Wire(LineReader(lambda: reader.read(65536), 1 << 20), pipe, front=front)
    wire.fast = FastCalls(slow_then(blocked_until_cancelled(entered, cancelled)))
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "0"},
    }
    opening = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize}
    reader.feed_data(json.dumps(opening).encode() + b"\n" + call(1))

    async def cancel_once_running() -> None:
        await entered.wait()
        reader.feed_data(cancel(1) + b"\n" + call(2, "other"))
        reader.feed_eof()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(wire.write_lines)
            group.start_soon(cancel_once_running)
            await wire.read_lines()
            group.cancel_scope.cancel()
    wire.outgoing.close()
    wire.incoming.close()
    assert cancelled.is_set()
    assert [m["id"] for m in pipe.messages()] == [0, 2]
    assert wire.sdk_decided.is_set() and not wire.sdk_wanted
