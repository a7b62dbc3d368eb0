"""The schema view: tightening a schema file makes check_schemas report the entities that no
longer conform, and changing the schema appends nothing but SchemaRegistered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from eventstore.lmdb_log import LmdbEventLog
from tests.e2e.support import NPC_SCHEMA, call, legacy_session, text, value, write_schema

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
        for name, role in (("Gandalf", "Wizard"), ("Bilbo", "Thief"), ("Boromir", "Warrior")):
            added = await call(
                s, "add_npc", {"npc": {"name": name, "role": role, "status": "Active"}}
            )
            assert not added.is_error, text(added)
        clean = value(await call(s, "check_schemas", {}))
        assert clean["data"] == {"problems": [], "nonconforming": 0}
        with LmdbEventLog.open(data) as peek:  # the server's log, shared as by any process
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
