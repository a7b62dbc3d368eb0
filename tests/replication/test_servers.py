"""Two real `graphmem serve` processes replicating through a real nats-server, driven by real
MCP clients over stdio: writes cross, schemas and their typed tools follow, conflicts show,
and `graphmem replication status` reports the state."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from graphmem.replication.hub import Hub
from tests.e2e.support import call, legacy_session, value, write_schema
from tests.schema_samples import NPC_SCHEMA

pytestmark = pytest.mark.anyio

WAIT = 60.0


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if await check():
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"timed out after {WAIT:g} s waiting for {what}")


def _env(hub: Hub, node: str, schemas: Path) -> dict[str, str]:
    return {
        "GRAPHMEM_REPLICATE": hub.url,
        "GRAPHMEM_REPLICA_GROUP": "e2e",
        "GRAPHMEM_REPLICA_DISCOVER_SECONDS": "0.2",
        "GRAPHMEM_NODE_ID": node,
        "GRAPHMEM_SCHEMAS_DIR": str(schemas),
    }


async def _names(session: ClientSession) -> set[str]:
    graph = value(await call(session, "read_graph", {}))
    return {e["name"] for e in graph["entities"]}


async def test_two_servers_share_writes_schemas_and_conflicts_through_a_hub(
    hub: Hub, tmp_path: Path
) -> None:
    schemas_a, schemas_b = tmp_path / "schemas-a", tmp_path / "schemas-b"
    schemas_a.mkdir()
    schemas_b.mkdir()
    write_schema(schemas_a, "npc", NPC_SCHEMA)  # only a has the schema file
    tools = "memory,schema"
    async with (
        legacy_session(tmp_path / "a", tools=tools, **_env(hub, "a", schemas_a)) as a,
        legacy_session(tmp_path / "b", tools=tools, **_env(hub, "b", schemas_b)) as b,
    ):
        entity = {"name": "Ada", "entityType": "person", "observations": ["wrote on a"]}
        value(await call(a, "create_entities", {"entities": [entity]}))

        async def b_sees_ada() -> bool:
            return "Ada" in await _names(b)

        await eventually(b_sees_ada, "b to read a's write")

        # a's schema registration replicated: b serves the typed tool it generates.
        async def b_has_add_npc() -> bool:
            return "add_npc" in {t.name for t in (await b.list_tools()).tools}

        await eventually(b_has_add_npc, "b to list add_npc")
        npc = {"name": "Gandalf", "role": "Wizard", "status": "Active"}
        result = await call(b, "add_npc", {"npc": npc})
        assert not result.is_error, result

        async def a_sees_gandalf() -> bool:
            return "Gandalf" in await _names(a)

        await eventually(a_sees_gandalf, "a to read b's typed write")

        # Both nodes write the same entity: the loser shows in read_conflicts on both.
        deleted = await call(b, "delete_entities", {"entityNames": ["Ada"]})
        assert not deleted.is_error, deleted

        async def a_lost_ada() -> bool:
            return "Ada" not in await _names(a)

        await eventually(a_lost_ada, "b's delete to reach a")
        conflicts_a = value(await call(a, "read_conflicts", {"entityName": "Ada"}))
        conflicts_b = value(await call(b, "read_conflicts", {"entityName": "Ada"}))
        assert conflicts_a == conflicts_b
        (ada,) = [c for c in conflicts_a if c["element"] == "entity"]
        assert {w["node"] for w in ada["writes"]} == {"a", "b"}
        assert ada["kept"]["node"] == "b" and ada["kept"]["event"] == "EntityDeleted"

        # The status command, run beside the live server.
        report = _status(tmp_path / "b", hub)
        assert report["enabled"] and report["node"] == "b"
        origins = {o["origin"]: o for o in report["origins"]}
        assert origins["a"]["received"] >= 2 and origins["b"]["self"]

        async def b_reports_reachable() -> bool:
            server = _status(tmp_path / "b", hub)["server"]
            return bool(server and server["hub_reachable"] and server["to_send"] == 0)

        await eventually(b_reports_reachable, "b's state file to say the hub is reachable")


def _status(data_dir: Path, hub: Hub) -> Any:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphmem",
            "--data-dir",
            str(data_dir),
            "replication",
            "status",
            "--json",
        ],
        env={"GRAPHMEM_REPLICATE": hub.url, "GRAPHMEM_NODE_ID": "b", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)
