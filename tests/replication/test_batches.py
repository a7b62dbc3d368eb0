"""Wire version 2 against a real nats-server: batch messages of consecutive events converge
nodes; a feed starting inside a batch's range, an overlapping re-publish and a repeated message
fold to the same graph; a node of version 1 in the group gets one event per message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats

from eventstore.events import decode_envelope
from graphmem.replication import names
from graphmem.replication.batches import frame, message_range, unframe
from graphmem.replication.hub import Hub
from graphmem.replication.status import STATE_FILE, read_state
from tests.e2e.cli_support import graphmem
from tests.replication.nodes import Link, Node, converged, wait_for


async def _messages(url: str, node: str) -> list[tuple[bytes, dict[str, str]]]:
    """Every message of `node`'s stream, in order."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        stream = names.stream_name("t", node)
        state = (await js.stream_info(stream)).state
        found = []
        for seq in range(state.first_seq, state.last_seq + 1):
            msg = await js.get_msg(stream, seq)
            found.append((bytes(msg.data or b""), dict(msg.headers or {})))
        return found
    finally:
        await nc.close()


def _hub_holds(node: Node, origin: str) -> int:
    held: int = ((read_state(node.dir / STATE_FILE) or {}).get("hub_holds") or {}).get(origin, 0)
    return held


def _published(node: Node) -> None:
    """Wait until the hub holds every event of `node`'s own."""
    assert node.log is not None
    mine = node.log.last_origin_seq(node.node_id)
    wait_for(lambda: _hub_holds(node, node.node_id) >= mine, what=f"{node.name}'s events out")


def test_three_nodes_exchanging_batch_messages_end_with_identical_graphs(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a, b, c = (nodes(n, hub.url) for n in "abc")
    for i in range(20):
        for node in (a, b, c):
            node.create(f"{node.name}-{i}")
    # One transaction larger than a message (MAX_BATCH_EVENTS): cut inside, marked open.
    a.create(*(f"big-{i}" for i in range(700)))
    b.delete("a-1")
    converged([a, b, c])
    assert a.digest() == b.digest() == c.digest()
    assert a.export() == b.export() == c.export()

    _published(a)
    messages = asyncio.run(_messages(hub.url, "a"))
    spans = [message_range(headers) for _, headers in messages]
    assert all(span is not None for span in spans)
    assert len(messages) < a.frontier()["a"] / 10  # far fewer messages than events
    covered = [seq for span in spans if span for seq in range(span[0], span[1] + 1)]
    assert covered == list(range(1, a.frontier()["a"] + 1))
    open_ends = [h for _, h in messages if h[names.TX_END] == "0"]
    assert open_ends  # the big transaction went out in more than one message
    for data, headers in messages:
        span = message_range(headers)
        assert span is not None
        assert headers[names.MSG_ID] == f"a:{span[0]}-{span[1]}"
        records = unframe(data)
        assert [decode_envelope(r).origin_seq for r in records] == list(range(span[0], span[1] + 1))


def test_a_fresh_node_whose_next_event_lies_inside_a_batch_message_catches_up_from_it(
    hub: Hub, links: Callable[[], Link], nodes: Callable[..., Node]
) -> None:
    link_a, link_b = links(), links()
    link_a.down()
    a = nodes("a", link_a.url)
    for i in range(6):  # written offline: they go out together, in one message
        a.create(f"x{i}")
    link_a.up()
    _published(a)
    messages = asyncio.run(_messages(hub.url, "a"))
    assert len(messages) == 1 and message_range(messages[0][1]) == (1, a.frontier()["a"])

    link_b.down()
    b = nodes("b", link_b.url)
    assert a.log is not None and b.app is not None
    # b holds a's first two transactions already (from another route, say): its feed must
    # start at the message holding its next event, the one message, not at sequence 3.
    events = a.log.read_origin("a")
    first_two = [e for e in events if e.tx in sorted({e.tx for e in events})[:2]]
    b.app.graph.apply_remote_blocking(first_two)
    assert 1 < b.frontier()["a"] < a.frontier()["a"]
    link_b.up()
    converged([a, b])
    assert a.digest() == b.digest()


async def _overlap(url: str, records: list[bytes], first: int, *, retry: bool = False) -> Any:
    """Publish a's `records` (origin_seq `first`..) again as one more message of its stream,
    in place (after its last message): a later batch starting inside one already stored.
    `retry`: the same message again, as after a lost ack (without the expected-sequence
    guard, which the hub checks before its duplicate window)."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        stream = names.stream_name("t", "a")
        last = (await js.stream_info(stream)).state.last_seq
        high = first + len(records) - 1
        headers = {
            names.MSG_ID: f"a:{first}-{high}",
            names.EXPECTED_LAST: str(last),
            names.TX_END: "1",
            names.BATCH: f"{first} {high}",
        }
        if retry:
            del headers[names.EXPECTED_LAST]
        return await js.publish(names.subject("t", "a"), frame(records), headers=headers)
    finally:
        await nc.close()


def test_an_overlapping_republish_and_a_repeated_message_fold_to_the_same_graph(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a = nodes("a", hub.url)
    for i in range(4):
        a.create(f"y{i}")
    _published(a)
    assert a.log is not None
    held = a.frontier()["a"]
    tail = [record for _, record in a.log.read_origin_records("a", 3, held)]
    a.stop()
    ack = asyncio.run(_overlap(hub.url, tail, 3))  # 3..held once more, after 1..held
    assert not ack.duplicate
    assert asyncio.run(_overlap(hub.url, tail, 3, retry=True)).duplicate  # stored once
    _, headers = asyncio.run(_messages(hub.url, "a"))[-1]
    assert message_range(headers) == (3, held)

    a = nodes("a", hub.url)  # resumes after the last message's last event
    a.create("after")
    c = nodes("c", hub.url)  # reads 1..held, 3..held again (skipped), then the rest
    converged([a, c])
    assert a.digest() == c.digest()
    assert a.export() == c.export()
    spans = [message_range(h) for _, h in asyncio.run(_messages(hub.url, "a"))]
    assert spans[-1] is not None and spans[-1][0] == held + 1


async def _publish_v1(url: str, node: Node) -> None:
    """What a node of wire version 1 publishes: one message per event, stream sequence ==
    origin_seq, no batch header; and it says nothing in the wire bucket."""
    assert node.log is not None
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        await js.add_stream(
            name=names.stream_name("t", node.name), subjects=[names.subject("t", node.name)]
        )
        stored = node.log.read_origin_records(node.name)
        for index, (envelope, record) in enumerate(stored):
            after = stored[index + 1][0] if index + 1 < len(stored) else None
            await js.publish(
                names.subject("t", node.name),
                record,
                headers={
                    names.MSG_ID: f"{node.name}:{envelope.origin_seq}",
                    names.EXPECTED_LAST: str(envelope.origin_seq - 1),
                    names.TX_END: "1" if after is None or after.tx != envelope.tx else "0",
                },
            )
    finally:
        await nc.close()


async def _say_reads_batches(url: str, node: str) -> None:
    nc = await nats.connect(url)
    try:
        kv = await nc.jetstream().key_value(names.wire_bucket("t"))
        await kv.put(node, str(names.WIRE_VERSION).encode())
    finally:
        await nc.close()


def test_a_group_with_a_node_of_wire_version_1_gets_one_event_per_message_until_it_upgrades(
    hub: Hub, links: Callable[[], Link], nodes: Callable[..., Node]
) -> None:
    # "o" stands for a node of the previous version: its own log, events on the hub the old
    # way, no word in the wire bucket (its link to the hub stays cut: we publish for it).
    link_o = links()
    link_o.down()
    o = nodes("o", link_o.url)
    o.create("old-1", "old-2")
    o.create("old-3")
    asyncio.run(_publish_v1(hub.url, o))

    a = nodes("a", hub.url)
    a.create("new-1", "new-2")
    a.create("new-3")
    wait_for(  # o's link stays cut: only a is checked
        lambda: a.frontier().get("o") == o.frontier()["o"], what="a to fold o's events"
    )
    _published(a)
    # The sender reports its wire in its own state line, merged apart from the hub's figures.
    wait_for(
        lambda: (read_state(a.dir / STATE_FILE) or {}).get("wire") == 1, what="a's wire reported"
    )
    shown = graphmem(a.dir, "replication", "status")
    assert "wire          1: one event per message" in shown.stdout, shown.stderr
    messages = asyncio.run(_messages(hub.url, "a"))
    assert a.log is not None
    assert [data for data, _ in messages] == [r for _, r in a.log.read_origin_records("a")]
    for seq, (data, headers) in enumerate(messages, start=1):
        assert names.BATCH not in headers  # what o can read: one envelope per message
        assert decode_envelope(data).origin_seq == seq
        assert headers[names.MSG_ID] == f"a:{seq}"
        assert headers[names.EXPECTED_LAST] == str(seq - 1)

    asyncio.run(_say_reads_batches(hub.url, "o"))  # o upgraded
    a.stop()
    a = nodes("a", hub.url)  # its fresh look sees every node read batches
    for i in range(3):
        a.create(f"later-{i}")
    _published(a)
    wait_for(
        lambda: (read_state(a.dir / STATE_FILE) or {}).get("wire") == 2, what="a's wire reported"
    )
    assert "wire          2: batch messages" in graphmem(a.dir, "replication", "status").stdout
    tail = asyncio.run(_messages(hub.url, "a"))[len(messages) :]
    assert tail and all(names.BATCH in headers for _, headers in tail)

    c = nodes("c", hub.url)  # a fresh node reads a's mixed stream and o's old one
    wait_for(
        lambda: c.frontier() == {"a": a.frontier()["a"], "o": o.frontier()["o"]},
        what="c to hold a's and o's events",
    )
    assert c.export() == a.export()


def test_a_node_not_allowed_the_wire_bucket_sends_one_event_per_message_and_converges(
    tmp_path: Path, nodes: Callable[..., Node]
) -> None:
    # A user's own NATS may not grant the bucket: sending goes on the way every node reads.
    include = tmp_path / "auth.conf"
    include.write_text(
        "authorization {\n  users = [\n"
        '    {user: a, password: pa, permissions: {publish: {allow: [">"], '
        'deny: ["$KV.GM_t_wire.>"]}, subscribe: {allow: [">"]}}}\n'
        "    {user: b, password: pb}\n  ]\n}\n"
    )
    hub = Hub(tmp_path / "auth-hub", include=include).start()
    try:
        host = hub.url.removeprefix("nats://")
        a = nodes("a", f"nats://a:pa@{host}")
        b = nodes("b", f"nats://b:pb@{host}")
        a.create("p", "q")
        a.create("r")
        converged([a, b])
        assert a.export() == b.export()
        messages = asyncio.run(_messages(f"nats://b:pb@{host}", "a"))
        assert messages and all(names.BATCH not in headers for _, headers in messages)
        wait_for(
            lambda: (
                "wire versions" in ((read_state(a.dir / STATE_FILE) or {}).get("last_error") or "")
            ),
            what="a to say why it sends one event per message",
        )
    finally:
        hub.stop()
