"""The graph family's writing tools among the others: what is listed (annotations per the
contract's §9, schemas that describe every argument), the memory family's as_of reads seeing
graph writes, and the one clock GRAPHMEM_CLOCK_OFFSET_DAYS moves."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.tools.graph_write_support import (
    ERAS,
    graph_client,
    history,
    latest_fields,
    tool_value,
    whole_graph,
)
from tests.tools.support import call, legacy_session, value

pytestmark = pytest.mark.anyio

WRITE_TOOLS = {
    # name: (readOnly, destructive, idempotent), contract §9
    "graph_relate": (False, False, False),
    "graph_boost": (False, False, False),
    "graph_weaken": (False, False, False),
    "graph_audit": (False, False, False),
    "graph_delete": (False, True, True),
}
DAY_MS = 86_400_000


def described(schema: dict[str, Any], where: str) -> None:
    """Every argument at every level has a description (an object may describe its parts)."""
    for name, sub in schema.get("properties", {}).items():
        assert "description" in sub or sub.get("type") == "object", f"{where}.{name}"
        described(sub, f"{where}.{name}")
        if "items" in sub:
            described(sub["items"], f"{where}.{name}[]")


@pytest.mark.parametrize("era", ERAS)
async def test_the_writing_tools_are_listed_with_truthful_annotations_and_described_arguments(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name, (read_only, destructive, idempotent) in WRITE_TOOLS.items():
            tool = tools[name]
            assert tool.annotations is not None
            hints = (
                tool.annotations.read_only_hint,
                tool.annotations.destructive_hint,
                tool.annotations.idempotent_hint,
            )
            assert hints == (read_only, destructive, idempotent), name
            assert tool.annotations.open_world_hint is False
            described(tool.input_schema, name)
            assert tool.output_schema is not None
            assert tool.output_schema["additionalProperties"] is False


async def test_the_memory_profile_does_not_list_them(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert not names & set(WRITE_TOOLS)


@pytest.mark.parametrize("era", ERAS)
async def test_as_of_reads_of_the_memory_family_see_graph_writes(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(
            client,
            "graph_relate",
            {
                "from_name": "Ann",
                "from_type": "Person",
                "to_name": "Bo",
                "to_type": "Person",
                "relation": "MENTOR_OF",
            },
        )
        position = (await history(client, "Ann"))[-1]["position"]
        await tool_value(client, "graph_delete", {"entity_id": "bo"})
        assert (await whole_graph(client))["relations"] == []
        then = value(await call(client, "read_graph", {"as_of": position}))
        assert then["relations"] == [{"from": "Ann", "to": "Bo", "relationType": "MENTOR_OF"}]
        deleted = (await history(client, "Bo"))[-2:]
        assert [(e["event"], e["cause"]["tool"]) for e in deleted] == [
            ("EntityDeleted", "graph_delete"),
            ("RelationDeleted", "graph_delete"),
        ]


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


async def test_the_clock_offset_moves_stamps_last_seen_ingestion_and_audit_times(
    tmp_path: Path,
) -> None:
    offset_days = 100
    async with graph_client(
        "legacy", tmp_path, GRAPHMEM_CLOCK_OFFSET_DAYS=str(offset_days)
    ) as client:
        real = time.time_ns() // 1_000_000
        await tool_value(
            client,
            "graph_relate",
            {
                "from_name": "Ann",
                "from_type": "Person",
                "to_name": "Bo",
                "to_type": "Person",
                "relation": "KNOWS",
            },
        )
        expected = real + offset_days * DAY_MS
        created = await latest_fields(client, "Ann", "EntityCreated")
        edge = await latest_fields(client, "Ann", "RelationCreated")
        stamped = _ms((await history(client, "Ann"))[-1]["time"])
        audit = await tool_value(client, "graph_audit", {"event": "run_start"})
        for moment in (created["lastSeen"], edge["ingestedAt"], edge["lastConfirmed"], stamped):
            assert abs(moment - expected) < DAY_MS / 2
        assert abs(_ms(audit["timestamp"]) - expected) < DAY_MS / 2


async def test_the_mesh_familys_timestamp_reads_the_offset_clock(tmp_path: Path) -> None:
    async with legacy_session(tmp_path, tools="mesh", GRAPHMEM_CLOCK_OFFSET_DAYS="30") as session:
        real = time.time_ns() // 1_000_000
        answer = value(
            await call(
                session, "add_nodes", {"nodes": [{"name": "A", "nodeType": "t", "metadata": []}]}
            )
        )
        assert abs(_ms(answer["timestamp"]) - (real + 30 * DAY_MS)) < DAY_MS / 2
