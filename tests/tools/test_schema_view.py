"""The schema view: tightening a schema file makes check_schemas report the entities that no
longer conform, and changing the schema appends nothing but SchemaRegistered; asked `as_of` a
point before the change, check_schemas answers against the schemas in force then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession

from eventstore.lmdb_log import LmdbEventLog
from tests.schema_samples import NPC_SCHEMA
from tests.tools.support import call, legacy_session, text, value, write_schema

pytestmark = pytest.mark.anyio

WAIT = 15.0


class ToolChanges:
    def __init__(self) -> None:
        self._arrived = anyio.Event()

    async def on_message(self, message: Any) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            self._arrived.set()

    async def next(self) -> None:
        with anyio.fail_after(WAIT):
            await self._arrived.wait()
        self._arrived = anyio.Event()


def npc_with_roles(*roles: str) -> dict[str, Any]:
    schema = {**NPC_SCHEMA, "properties": dict(NPC_SCHEMA["properties"])}
    schema["properties"]["role"] = {**schema["properties"]["role"], "enum": list(roles)}
    return schema


async def add_npcs(session: ClientSession, *roles: tuple[str, str]) -> None:
    """Each (name, role) as an active npc, through add_npc."""
    for name, role in roles:
        added = await call(
            session, "add_npc", {"npc": {"name": name, "role": role, "status": "Active"}}
        )
        assert not added.is_error, text(added)


async def test_tightening_an_enum_reports_the_violating_entities_and_appends_only_the_schema(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    write_schema(folder, "npc", npc_with_roles("Wizard", "Thief", "Warrior"))
    data = tmp_path / "data"
    changes = ToolChanges()
    async with legacy_session(
        data, message_handler=changes.on_message, GRAPHMEM_SCHEMAS_DIR=str(folder)
    ) as s:
        await add_npcs(s, ("Gandalf", "Wizard"), ("Bilbo", "Thief"), ("Boromir", "Warrior"))
        clean = value(await call(s, "check_schemas", {}))
        assert clean["data"] == {"problems": [], "nonconforming": 0}
        with LmdbEventLog.open(data) as peek:  # the server's log, as any other reader opens it
            before = peek.last_position()

        write_schema(folder, "npc", npc_with_roles("Wizard", "Warrior"))
        await changes.next()

        report = value(await call(s, "check_schemas", {"entityType": "npc"}))["data"]
        assert report["nonconforming"] == 1
        [problem] = report["problems"]
        assert problem["entity"] == "Bilbo"
        assert problem["kind"] == "not_in_enum"
        assert problem["value"] == "Thief"

    with LmdbEventLog.open(data) as event_log:
        appended = [e.event for e in event_log.read_from(before + 1)]
    assert [type(e).__name__ for e in appended] == ["SchemaRegistered"]


async def test_check_schemas_as_of_a_point_checks_the_entities_against_the_schemas_then(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    write_schema(folder, "npc", npc_with_roles("Wizard", "Thief", "Warrior"))
    data = tmp_path / "data"
    changes = ToolChanges()
    async with legacy_session(
        data, message_handler=changes.on_message, GRAPHMEM_SCHEMAS_DIR=str(folder)
    ) as s:
        await add_npcs(s, ("Gandalf", "Wizard"), ("Bilbo", "Thief"))
        with LmdbEventLog.open(data) as peek:
            before = peek.last_position()
        write_schema(folder, "npc", npc_with_roles("Wizard", "Warrior"))
        await changes.next()
        with LmdbEventLog.open(data) as peek:
            after = peek.last_position()
        assert after > before

        then = value(await call(s, "check_schemas", {"entityType": "npc", "as_of": before}))
        assert then["data"]["problems"] == []
        assert then["data"]["nonconforming"] == 0
        assert then["data"]["asOf"]["position"] == before
        assert f" as of position {before} (" in then["actionTaken"]

        as_text = value(await call(s, "check_schemas", {"as_of": str(after)}))
        assert [p["entity"] for p in as_text["data"]["problems"]] == ["Bilbo"]
        assert as_text["data"]["asOf"]["position"] == after
        empty = value(await call(s, "check_schemas", {"as_of": 0}))["data"]
        assert empty == {"problems": [], "nonconforming": 0, "asOf": {"position": 0, "time": None}}

        now = value(await call(s, "check_schemas", {"entityType": "npc"}))
        assert set(now["data"]) == {"problems", "nonconforming"}  # no asOf without as_of
        assert " as of " not in now["actionTaken"]
        assert now["data"]["problems"] == as_text["data"]["problems"]

        unreadable = await call(s, "check_schemas", {"as_of": "soon"})
        assert unreadable.is_error
        body = json.loads(text(unreadable))
        assert "log position" in body["error"] and "ISO-8601 time" in body["error"]
        read_graph = await call(s, "read_graph", {"as_of": "soon"})
        # The same words, without the wire-level prefix the official family keeps.
        official = text(read_graph).replace("read_graph", "check_schemas")
        assert official == f"MCP error -32602: Input validation error: {body['error']}".replace(
            "arguments for check_schemas", "arguments for tool check_schemas"
        )
        assert any("as_of" in suggestion for suggestion in body["suggestions"])
        past_end = await call(s, "check_schemas", {"as_of": after + 5})
        assert past_end.is_error
        assert f"the last position is {after}" in json.loads(text(past_end))["error"]
