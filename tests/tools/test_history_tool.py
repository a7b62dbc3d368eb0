"""read_history through a real MCP client (in memory): it sees the provenance of every fact,
including the tool and the client (its clientInfo name) that wrote it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import ClientSession

from tests.tools.support import call, legacy_session, text, value

pytestmark = pytest.mark.anyio

CLIENT = "history-e2e"


@asynccontextmanager
async def session(data_dir: Path) -> AsyncIterator[ClientSession]:
    """A handshake-era session whose clientInfo names it CLIENT."""
    client_info = types.Implementation(name=CLIENT, version="1.0")
    async with legacy_session(data_dir, client_info=client_info) as opened:
        yield opened


async def history(s: ClientSession, name: str, **options: Any) -> dict[str, Any]:
    found: dict[str, Any] = value(await call(s, "read_history", {"name": name, **options}))
    return found


def steps(found: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(event type, tool of its cause) per event."""
    return [(e["event"], e["cause"] and e["cause"]["tool"]) for e in found["events"]]


async def seed(s: ClientSession) -> None:
    await call(
        s,
        "create_entities",
        {
            "entities": [
                {"name": "Alice", "entityType": "person", "observations": ["likes tea"]},
                {"name": "Bob", "entityType": "person", "observations": []},
            ]
        },
    )
    await call(
        s,
        "create_relations",
        {"relations": [{"from": "Alice", "to": "Bob", "relationType": "knows"}]},
    )


async def test_history_shows_the_tool_and_client_that_wrote_each_event(tmp_path: Path) -> None:
    async with session(tmp_path) as s:
        await seed(s)

        found = await history(s, "Alice")

    assert found["name"] == "Alice"
    assert found["total"] == 3
    assert steps(found) == [
        ("EntityCreated", "create_entities"),
        ("ObservationAdded", "create_entities"),
        ("RelationCreated", "create_relations"),
    ]
    assert {e["cause"]["client"] for e in found["events"]} == {CLIENT}
    assert found["events"][1]["fields"] == {"entityName": "Alice", "content": "likes tea"}
    assert found["events"][2]["fields"]["relationType"] == "knows"
    first = found["events"][0]
    assert first["transaction"] == f"{first['node']}:{first['seq']}"


async def test_a_rename_shows_in_the_history_of_both_names(tmp_path: Path) -> None:
    async with session(tmp_path) as s:
        await seed(s)
        await call(s, "update_entities", {"entities": [{"name": "Alice", "newName": "Alicia"}]})

        old = await history(s, "Alice")
        new = await history(s, "Alicia")

    renamed = [e for e in old["events"] if e["event"] == "EntityRenamed"]
    assert [e["fields"] for e in renamed] == [{"oldName": "Alice", "newName": "Alicia"}]
    assert renamed == [e for e in new["events"] if e["event"] == "EntityRenamed"]
    assert ("EntityDeleted", "update_entities") in steps(old)
    assert steps(new)[0] == ("EntityCreated", "update_entities")
    # The observation moved with the name: the new name's history says so.
    assert ("ObservationAdded", "update_entities") in steps(new)


async def test_a_deleted_entity_still_has_its_history(tmp_path: Path) -> None:
    async with session(tmp_path) as s:
        await seed(s)
        await call(s, "delete_entities", {"entityNames": ["Bob"]})

        found = await history(s, "Bob")
        without_relations = await history(s, "Bob", includeRelations=False)
        last = await history(s, "Bob", limit=1)

    assert steps(found)[0] == ("EntityCreated", "create_entities")
    assert ("RelationCreated", "create_relations") in steps(found)
    assert steps(found)[-1][1] == "delete_entities"
    assert steps(without_relations) == [
        ("EntityCreated", "create_entities"),
        ("EntityDeleted", "delete_entities"),
    ]
    assert (last["total"], len(last["events"])) == (found["total"], 1)
    assert last["events"] == found["events"][-1:]


async def test_history_of_a_name_never_used_says_how_to_find_the_right_one(
    tmp_path: Path,
) -> None:
    async with session(tmp_path) as s:
        await seed(s)

        result = await call(s, "read_history", {"name": "Zed"})

    assert result.is_error
    assert text(result) == (
        "No history for Zed: no event ever touched it. Check the name with search_nodes."
    )


async def test_read_history_is_listed_as_a_read_only_tool(tmp_path: Path) -> None:
    async with session(tmp_path) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}

    listed = tools["read_history"]
    assert listed.annotations is not None and listed.annotations.read_only_hint is True
    assert listed.input_schema["required"] == ["name"]
