"""Hot reload: a schema file written into the watched folder brings its tools to a running
server, announced with notifications/tools/list_changed in both protocol eras; a broken file
changes nothing and is reported on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.shared.subscriptions import ToolsListChanged

from tests.e2e.support import (
    call,
    legacy_session,
    modern_client,
    text,
    write_schema,
)
from tests.schema_samples import NPC_SCHEMA

pytestmark = pytest.mark.anyio

WAIT = 15.0
QUEST_SCHEMA: dict[str, Any] = {
    "name": "add_quest",
    "description": "Add a quest",
    "properties": {
        "status": {
            "type": "string",
            "description": "Where the quest stands",
            "required": True,
            "enum": ["Active", "Completed", "Failed"],
        }
    },
}
ARTIFACT_SCHEMA: dict[str, Any] = {
    "name": "add_artifact",
    "description": "Add an artifact",
    "properties": {"rarity": {"type": "string", "description": "How rare it is"}},
}
QUEST_TOOLS = {"add_quest", "update_quest", "delete_quest"}
ARTIFACT_TOOLS = {"add_artifact", "update_artifact", "delete_artifact"}


class Changes:
    """Counts notifications/tools/list_changed on a handshake-era session."""

    def __init__(self) -> None:
        self.count = 0
        self._arrived = anyio.Event()

    async def on_message(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            self.count += 1
            self._arrived.set()

    async def next(self) -> None:
        with anyio.fail_after(WAIT):
            await self._arrived.wait()
        self._arrived = anyio.Event()


async def test_a_new_schema_file_reaches_handshake_era_clients(tmp_path: Path) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    write_schema(folder, "npc", NPC_SCHEMA)
    changes = Changes()
    async with legacy_session(
        tmp_path / "data", message_handler=changes.on_message, GRAPHMEM_SCHEMAS_DIR=str(folder)
    ) as s:
        before = {t.name for t in (await s.list_tools()).tools}
        assert "add_npc" in before and not QUEST_TOOLS & before

        write_schema(folder, "quest", QUEST_SCHEMA)
        await changes.next()

        after = {t.name for t in (await s.list_tools()).tools}
        assert after == before | QUEST_TOOLS
        added = await call(s, "add_quest", {"quest": {"name": "Ring", "status": "active"}})
        assert not added.is_error, text(added)


async def test_a_new_schema_file_reaches_modern_era_listeners(tmp_path: Path) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    async with modern_client(tmp_path / "data", GRAPHMEM_SCHEMAS_DIR=str(folder)) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        async with client.listen(tools_list_changed=True) as stream:
            events = stream.__aiter__()
            write_schema(folder, "quest", QUEST_SCHEMA)
            with anyio.fail_after(WAIT):
                event = await events.__anext__()
        assert isinstance(event, ToolsListChanged)
        after = {t.name for t in (await client.list_tools(cache_mode="bypass")).tools}
        assert after == before | QUEST_TOOLS


async def test_broken_schema_files_change_nothing_and_are_reported(tmp_path: Path) -> None:
    folder = tmp_path / "schemas"
    folder.mkdir()
    write_schema(folder, "npc", NPC_SCHEMA)
    stderr_path = tmp_path / "stderr.log"
    changes = Changes()
    with stderr_path.open("w") as errlog:
        async with legacy_session(
            tmp_path / "data",
            message_handler=changes.on_message,
            errlog=errlog,
            GRAPHMEM_SCHEMAS_DIR=str(folder),
        ) as s:
            before = {t.name for t in (await s.list_tools()).tools}

            write_schema(folder, "npc", '{"name": "add_npc", "description": ')
            write_schema(folder, "quest", {**QUEST_SCHEMA, "name": "quest"})
            # A valid file written after the broken ones: once its tools are announced, the
            # registry has seen the broken files too.
            write_schema(folder, "artifact", ARTIFACT_SCHEMA)
            await changes.next()

            after = {t.name for t in (await s.list_tools()).tools}
            assert after == before | ARTIFACT_TOOLS
            kept = await call(s, "add_npc", {"npc": {"name": "Bilbo", "role": "Thief"}})
            assert kept.is_error and "status" in text(kept)  # the npc schema still in force
    assert changes.count == 1
    logged = stderr_path.read_text()
    assert "npc.schema.json" in logged and "quest.schema.json" in logged
