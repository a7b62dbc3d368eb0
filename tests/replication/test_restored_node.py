"""A node restored from an old backup while replication is on never loses a write: the
restore gives its data dir a new node id, so what it writes next is numbered afresh, and
what the old id wrote after the backup comes back from the hub like another node's. A data
dir that writes as an id whose history the hub holds differently is paused, not merged."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import nats
import pytest
from nats.js.errors import NotFoundError

from eventstore.events import decode_envelope
from eventstore.log import RetiredNodeIdError
from graphmem.replication import names
from graphmem.replication.batches import message_range
from graphmem.replication.hub import Hub
from graphmem.replication.status import STATE_FILE, read_state
from tests.e2e.cli_support import graphmem
from tests.replication.nodes import Node, converged, wait_for


def _hub_last(hub: Hub, node: str) -> int:
    """The last origin_seq the hub holds of `node` (its last message's; 0 when none)."""

    async def ask() -> int:
        nc = await nats.connect(hub.url)
        try:
            js = nc.jetstream()
            stream = names.stream_name("t", node)
            try:
                last = (await js.stream_info(stream)).state.last_seq
                msg = await js.get_msg(stream, last) if last else None
            except NotFoundError:
                return 0
            if msg is None:
                return 0
            span = message_range(msg.headers)
            return span[1] if span else decode_envelope(msg.data or b"").origin_seq
        finally:
            await nc.close()

    return asyncio.run(ask())


def _names(node: Node) -> set[str]:
    return {json.loads(line)["name"] for line in node.export() if line}


def _backup(node: Node, dest: Path) -> None:
    done = graphmem(node.dir, "backup", str(dest))  # a real process beside the running node
    assert done.returncode == 0, done.stderr


def test_a_node_restored_from_an_old_backup_loses_no_write_and_converges_with_its_peer(
    hub: Hub, nodes: Callable[..., Node], tmp_path: Path
) -> None:
    a, b = nodes("a", hub.url), nodes("b", hub.url)
    a.create("before-1", "before-2")
    b.create("from-b")
    converged([a, b])
    _backup(a, tmp_path / "old-backup")
    a.create("after-backup-1")
    a.create("after-backup-2")  # acknowledged, published, and then the disk is lost
    wait_for(lambda: {"after-backup-1", "after-backup-2"} <= _names(b), what="b to see them")
    a.stop()

    restored = graphmem(
        a.dir,
        "restore",
        "--force",
        str(tmp_path / "old-backup"),
        env={"GRAPHMEM_NODE_ID": "a"},
    )
    assert restored.returncode == 0, restored.stderr
    retired = re.search(r"never again as ([^:]+):", restored.stdout)
    assert retired is not None and "a" in retired.group(1).split(", "), restored.stdout
    assert "GRAPHMEM_NODE_ID is set to a" in restored.stdout
    with pytest.raises(RetiredNodeIdError, match="set GRAPHMEM_NODE_ID to a new id"):
        Node(a.dir.parent, "a", hub.url).start()  # as before: refused, nothing written

    a2 = nodes("a", hub.url, stored_id=True)
    assert a2.node_id != "a"
    a2.create("after-restore-1")
    a2.create("after-restore-2")
    b.create("b-later")

    converged([a2, b])
    wanted = {"before-1", "before-2", "from-b", "after-backup-1", "after-backup-2"}
    wanted |= {"after-restore-1", "after-restore-2", "b-later"}
    assert _names(a2) == _names(b) == wanted
    assert a2.export() == b.export()
    # The old id's later events came back to the restored node from the hub, as a peer's.
    assert a2.frontier()["a"] == b.frontier()["a"] == _hub_last(hub, "a")

    # The old id shows as a departed member to retire; as GRAPHMEM_NODE_ID, as a problem.
    shown = graphmem(a2.dir, "replication", "status", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["node"] == a2.node_id
    assert "a" in [o["origin"] for o in report["origins"] if o["former"]]
    assert "graphmem replication retire" in report["notes"][0]
    doctor = graphmem(a2.dir, "doctor", env={"GRAPHMEM_NODE_ID": "a"})
    assert doctor.returncode == 1
    assert "PROBLEM  node id: node id a (GRAPHMEM_NODE_ID) is one this data dir wrote as" in (
        doctor.stdout
    )


def test_a_data_dir_writing_as_a_node_whose_history_the_hub_holds_otherwise_is_paused(
    hub: Hub, nodes: Callable[..., Node], tmp_path: Path
) -> None:
    a, b = nodes("a", hub.url), nodes("b", hub.url)
    a.create("one", "two")
    copied = a.frontier()["a"]
    wait_for(lambda: _hub_last(hub, "a") == copied, what="the hub to hold a's first events")
    a.stop()
    stale = tmp_path / "stale-copy"
    shutil.copytree(a.dir, stale)  # a plain copy: nothing gives it a new id
    a = nodes("a", hub.url)
    a.create("three")
    held = a.frontier()["a"]
    wait_for(lambda: _hub_last(hub, "a") == held, what="the hub to hold a's later event")
    wait_for(lambda: "three" in _names(b), what="b to see a's later write")
    a.stop()
    shutil.rmtree(a.dir)
    shutil.copytree(stale, a.dir)

    a = nodes("a", hub.url)  # writes as a again, from the copy that lacks "three"
    a.create("four", "five")  # numbered from copied + 1: the hub's copied + 1 is "three"
    assert a.frontier()["a"] > held
    wait_for(
        lambda: (
            "another data dir writes as a"
            in ((read_state(a.dir / STATE_FILE) or {}).get("last_error") or "")
        ),
        what="the link to report the two histories",
    )
    # Nothing was published on top of the hub's history, nor dropped as a duplicate: the
    # writes stay in this log, and the error says what to do.
    assert _hub_last(hub, "a") == held
    assert {"four", "five"}.isdisjoint(_names(b))


async def _purge(url: str, node: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().purge_stream(names.stream_name("t", node))
    finally:
        await nc.close()


def test_a_node_whose_own_stream_was_purged_publishes_on_after_it(
    hub: Hub, nodes: Callable[..., Node]
) -> None:
    a, b = nodes("a", hub.url), nodes("b", hub.url)
    a.create("one", "two")
    converged([a, b])
    held = a.frontier()["a"]
    a.stop()
    asyncio.run(_purge(hub.url, "a"))  # the hub keeps the last sequence, not the events

    a = nodes("a", hub.url)  # its fresh look finds no event to compare: nothing contradicts
    a.create("three")
    wait_for(lambda: _hub_last(hub, "a") > held, what="a to publish past the purge")
    converged([a, b])
