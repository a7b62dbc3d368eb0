"""What the link puts on the wire: the log's stored records byte for byte, in batch messages
with their headers, published through nats-py's private pending buffer (the extra pins
nats-py; these tests fail first if that private call changes)."""

from __future__ import annotations

import asyncio
import inspect
import re
import tomllib
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import nats
from nats.aio.client import Client

from eventstore.events import decode_envelope
from graphmem.replication import names
from graphmem.replication.batches import unframe
from graphmem.replication.hub import Hub
from graphmem.replication.nats_link import _queue_raw
from graphmem.replication.status import STATE_FILE, read_state
from tests.replication.nodes import Node, wait_for

ROOT = Path(__file__).resolve().parents[2]


async def _stream_messages(url: str, node: str) -> list[tuple[bytes, dict[str, str]]]:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        stream = names.stream_name("t", node)
        last = (await js.stream_info(stream)).state.last_seq
        found = []
        for seq in range(1, last + 1):
            msg = await js.get_msg(stream, seq)
            found.append((bytes(msg.data or b""), dict(msg.headers or {})))
        return found
    finally:
        await nc.close()


def test_the_hub_holds_the_log_records_byte_for_byte_in_batch_messages_with_their_headers(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a = nodes("a", hub.url)
    a.create("p", "q", "r")  # one transaction of several events
    a.create("s")
    assert a.log is not None
    held = a.log.last_origin_seq("a")
    wait_for(
        lambda: (read_state(a.dir / STATE_FILE) or {}).get("hub_holds", {}).get("a") == held,
        what="a's events to be published",
    )
    stored = a.log.read_origin_records("a")
    messages = asyncio.run(_stream_messages(hub.url, "a"))

    records = [r for data, _ in messages for r in unframe(data)]
    assert records == [record for _, record in stored]
    txs = [head.tx for head, _ in stored]
    for index, (data, headers) in enumerate(messages):
        first, last = (int(n) for n in headers[names.BATCH].split(" "))
        assert [decode_envelope(r).origin_seq for r in unframe(data)] == list(
            range(first, last + 1)
        )
        assert headers[names.MSG_ID] == f"a:{first}-{last}"
        assert headers[names.EXPECTED_LAST] == str(index)  # the stream's, not origin_seq
        assert headers[names.TX_END] == (
            "1" if last == len(txs) or txs[last] != txs[last - 1] else "0"
        )


def test_raw_commands_queued_on_the_pinned_nats_py_reach_a_subscriber_with_their_headers(
    hub: Hub,
) -> None:
    async def round_trip() -> tuple[bytes, dict[str, str]]:
        nc = await nats.connect(hub.url)
        try:
            sub = await nc.subscribe("raw.check")
            headers = b"NATS/1.0\r\nGm-Check: yes\r\n\r\n"
            payload = b"stored-bytes"
            command = b"HPUB raw.check %d %d\r\n%s%s\r\n" % (
                len(headers),
                len(headers) + len(payload),
                headers,
                payload,
            )
            await _queue_raw(nc, command)
            await nc.flush(timeout=5)  # what the round's acknowledged publish does for it
            msg = await sub.next_msg(timeout=5)
            return msg.data, dict(msg.headers or {})
        finally:
            await nc.close()

    assert asyncio.run(round_trip()) == (b"stored-bytes", {"Gm-Check": "yes"})


def test_the_installed_nats_py_is_the_pinned_one_with_the_private_call_the_link_uses() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["replication"]
    pinned = next(re.sub(r"^nats-py==", "", d) for d in extra if d.startswith("nats-py=="))
    assert version("nats-py") == pinned, "the link's raw publish is written against the pin"
    send = Client._send_command
    assert inspect.iscoroutinefunction(send)
    assert list(inspect.signature(send).parameters) == ["self", "cmd", "priority"]
