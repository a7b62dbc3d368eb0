"""graph_merge and graph_unmerge over stdio against a real `graphmem serve` process, both
protocol eras: the merge audit file is on disk when the answer arrives, and a restarted server
shows the merge and the split in read_history."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, ClientSession

from tests.e2e.support import call, legacy_session, modern_client, value

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("era", ["legacy", "modern"])]


@asynccontextmanager
async def served(era: str, data_dir: Path) -> AsyncIterator[ClientSession | Client]:
    if era == "legacy":
        async with legacy_session(data_dir, tools="memory,graph") as session:
            yield session
    else:
        async with modern_client(data_dir, tools="memory,graph") as client:
            yield client


async def answer(client: ClientSession | Client, tool: str, arguments: dict[str, Any]) -> Any:
    return value(await call(client, tool, arguments))


async def test_merge_and_unmerge_are_audited_on_disk_and_survive_a_restart(
    tmp_path: Path, era: str
) -> None:
    audit = tmp_path / "graph-memory" / "logs" / "merge-audit.jsonl"
    async with served(era, tmp_path) as client:
        for source, target in (("Bob", "Acme"), ("Robert", "Acme"), ("Bob", "Vim")):
            await answer(
                client,
                "graph_relate",
                {
                    "from_name": source,
                    "from_type": "Person",
                    "to_name": target,
                    "to_type": "Object",
                    "relation": "USES",
                },
            )
        merged = await answer(
            client, "graph_merge", {"source_id": "bob", "target_id": "robert", "reason": "dup"}
        )
        assert (merged["edges_added"], merged["edges_consolidated"]) == (1, 1)
        assert [json.loads(line)["action"] for line in audit.read_text().splitlines()] == ["merge"]
        split = await answer(
            client,
            "graph_unmerge",
            {
                "entity_id": "robert",
                "new_entity_name": "Bob",
                "new_entity_type": "Person",
                "edges_to_move": [
                    {"other_entity_id": "vim", "relation_type": "USES", "direction": "out"}
                ],
                "reason": "not a dup",
            },
        )
        assert split["new_entity"] == {
            "id": "bob",
            "name": "Bob",
            "type": "Person",
            "moved_edges": 1,
        }
    async with served(era, tmp_path) as client:
        events = (await answer(client, "read_history", {"name": "Bob"}))["events"]
        tools = [(e["event"], e["cause"]["tool"]) for e in events if e["event"].startswith("Entit")]
        assert ("EntitiesMerged", "graph_merge") in tools
        assert ("EntitySplit", "graph_unmerge") in tools
    assert [json.loads(line)["action"] for line in audit.read_text().splitlines()] == [
        "merge",
        "unmerge",
    ]
