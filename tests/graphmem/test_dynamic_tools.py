"""The schema family's tools: generated from an EntitySchema, run as one transaction per call,
and served (listed, called, announced) by the MCP server as the schemas in force change."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client

from actors.commands import RegisterSchemas, SchemaDefinition
from actors.schema_plans import SchemaViolationError
from eventstore.events import Cause
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import App, start_actors, stop_actors
from graphmem.config import Settings
from graphmem.limits import InputLimits
from graphmem.notifier import Notifier
from graphmem.server import build_server
from graphmem.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from graphmem.tools.dynamic import dynamic_tools, schema_tools
from projections.entity_schema import EntitySchema, canonical_json, parse_schema

WAIT = 10.0

NPC: dict[str, Any] = {
    "name": "add_npc",
    "description": "Add a non-player character",
    "properties": {
        "role": {
            "type": "string",
            "description": "The NPC's role",
            "required": True,
            "enum": ["Warrior", "Wizard"],
        },
        "currentLocation": {
            "type": "string",
            "description": "Where the NPC is",
            "relationship": {"edgeType": "located_in", "nodeType": "location"},
        },
    },
}
LOCATION: dict[str, Any] = {
    "name": "add_location",
    "description": "Add a location",
    "properties": {"region": {"type": "string", "description": "The wider region"}},
}


def npc_schema() -> EntitySchema:
    return parse_schema(NPC)


def definition(document: dict[str, Any]) -> SchemaDefinition:
    text, digest = canonical_json(document)
    return SchemaDefinition(document["name"].removeprefix("add_"), text, digest)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    started = start_actors(Settings(data_dir=tmp_path), InMemoryEventLog(), load_schemas=False)
    yield started
    stop_actors(started)


def context(
    app: App, *, transactions: bool = True, limits: InputLimits | None = None
) -> ToolContext:
    return ToolContext(
        app.graph,
        limits or InputLimits(),
        Cause(tool="test"),
        app.transactions if transactions else None,
        app.hooks,
    )


def invoke(spec: ToolSpec, ctx: ToolContext, arguments: dict[str, Any]) -> ToolOutcome:
    """Run one tool to completion, as the server's handler would."""

    async def call() -> ToolOutcome:
        return await spec.run(ctx, arguments)

    return asyncio.run(call())


def run(app: App, tool: str, arguments: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Run one dynamic tool of the npc and location schemas; its MemoryMesh-style body."""
    specs = {s.tool.name: s for s in dynamic_tools([npc_schema(), parse_schema(LOCATION)])}
    outcome = invoke(specs[tool], context(app, **options), arguments)
    assert not outcome.is_error and outcome.mutated
    assert outcome.structured is not None
    assert json.loads(outcome.texts[0]) == outcome.structured
    return outcome.structured


def test_each_schema_gives_an_add_an_update_and_a_delete_tool() -> None:
    add, update, delete = schema_tools(npc_schema())

    assert [s.tool.name for s in (add, update, delete)] == ["add_npc", "update_npc", "delete_npc"]
    for spec in (add, update, delete):
        assert spec.error_style == "mesh"
        assert spec.tool.input_schema["required"] == ["npc"]
        assert spec.tool.input_schema["$schema"].startswith("http://json-schema.org/draft-07")
        assert spec.tool.title and spec.tool.description
    assert add.tool.input_schema["properties"]["npc"]["required"] == ["name", "role"]
    assert update.tool.input_schema["properties"]["npc"]["required"] == ["name"]
    assert add.tool.description is not None and add.tool.description.startswith("Add a non")
    assert add.tool.annotations is not None and add.tool.annotations.destructive_hint is False
    assert delete.tool.annotations is not None and delete.tool.annotations.destructive_hint


def test_three_schemas_give_nine_tools_in_schema_order() -> None:
    schemas = [parse_schema({**LOCATION, "name": f"add_{n}"}) for n in ("a", "b", "c")]
    names = [spec.tool.name for spec in dynamic_tools(schemas)]
    assert names == [f"{action}_{n}" for n in "abc" for action in ("add", "update", "delete")]


def test_add_update_and_delete_answer_with_what_they_did(app: App) -> None:
    run(app, "add_location", {"location": {"name": "Rivendell"}})
    run(app, "add_location", {"location": {"name": "Mordor"}})

    added = run(
        app,
        "add_npc",
        {"npc": {"name": "Gandalf", "role": "Wizard", "currentLocation": "Rivendell"}},
    )
    assert added["actionTaken"] == "Created npc: Gandalf"
    assert added["data"] == {
        "nodes": [
            {
                "name": "Gandalf",
                "nodeType": "npc",
                "metadata": ["role: Wizard", "currentLocation: Rivendell"],
            }
        ],
        "edges": [{"from": "Gandalf", "to": "Rivendell", "edgeType": "located_in", "weight": 1.0}],
    }

    updated = run(
        app, "update_npc", {"update_npc": {"name": "Gandalf", "currentLocation": "Mordor"}}
    )
    assert updated["actionTaken"] == "Updated npc: Gandalf"
    assert updated["data"]["edgeChanges"] == {
        "remove": [{"from": "Gandalf", "to": "Rivendell", "edgeType": "located_in", "weight": 1.0}],
        "add": [{"from": "Gandalf", "to": "Mordor", "edgeType": "located_in", "weight": 1.0}],
    }
    assert "currentLocation: Mordor" in updated["data"]["updatedNode"]["metadata"]

    deleted = run(app, "delete_npc", {"npc": {"name": "Gandalf"}}, transactions=False)
    assert deleted["actionTaken"] == "Deleted npc: Gandalf"
    assert deleted["data"] == {
        "deletedNode": "Gandalf",
        "removedEdges": [{"from": "Gandalf", "to": "Mordor", "edgeType": "located_in"}],
    }
    assert app.graph.query_blocking(lambda g: g.entity("Gandalf")) is None


def test_a_call_whose_edge_step_fails_writes_nothing(app: App) -> None:
    add_npc = schema_tools(npc_schema())[0]
    before = app.event_log.last_position()
    arguments = {"npc": {"name": "Gandalf", "role": "Wizard", "currentLocation": "Nowhere"}}

    with pytest.raises(Exception, match="Nowhere") as raised:
        invoke(add_npc, context(app), arguments)

    assert getattr(raised.value, "message", None)  # a rejection, shown as the tool's error
    assert app.event_log.last_position() == before
    assert app.graph.query_blocking(lambda g: g.entity("Gandalf")) is None


@pytest.mark.parametrize(
    ("values", "fragment"),
    [
        ({"name": "G" * 2_000, "role": "Wizard"}, "name is 2,000 characters long"),
        ({"name": "Gandalf", "role": "Wizard", "currentLocation": "Rivendell\n"}, "U+000A"),
        ({"name": "Gandalf", "role": "Wizard", "note": "bell\x07"}, "U+0007"),
        ({"name": "Gandalf", "role": "Wizard", "note\x00": "x"}, "U+0000"),
    ],
)
def test_names_and_texts_are_checked_before_anything_is_planned(
    app: App, values: dict[str, Any], fragment: str
) -> None:
    add_npc = schema_tools(npc_schema())[0]

    with pytest.raises(ToolInputError, match=re.escape(fragment)) as raised:
        invoke(add_npc, context(app), {"npc": values})

    assert getattr(raised.value, "suggestions", None)
    assert app.event_log.last_position() == 0


def test_values_of_the_wrong_kind_are_left_to_the_plan_to_explain(app: App) -> None:
    add_npc = schema_tools(npc_schema())[0]

    with pytest.raises(SchemaViolationError, match="role") as raised:
        invoke(add_npc, context(app), {"npc": {"name": "Gandalf", "role": 7}})

    assert raised.value.suggestions


@pytest.mark.anyio
async def test_a_schema_registered_while_serving_is_announced_listed_and_callable(
    app: App,
) -> None:
    notifier = Notifier(announce_tool_changes=True)
    notifier.bind_loop(asyncio.get_running_loop())
    app.graph.subscribe(notifier.on_published)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            changed.set()

    try:
        async with Client(
            build_server(app, notifier), mode="legacy", message_handler=on_message
        ) as client:
            assert "add_npc" not in {t.name for t in (await client.list_tools()).tools}

            await asyncio.to_thread(app.graph.execute_blocking, RegisterSchemas([definition(NPC)]))
            with anyio.fail_after(WAIT):
                await changed.wait()

            names = {t.name for t in (await client.list_tools()).tools}
            assert {"add_npc", "update_npc", "delete_npc", "create_entities"} <= names
            refused = await client.call_tool("add_npc", {"npc": {"name": "G", "role": "Elf"}})
            assert refused.is_error
            error = json.loads(refused.content[0].text)  # type: ignore[union-attr]
            assert "Warrior, Wizard" in error["error"] and error["suggestions"]
            added = await client.call_tool("add_npc", {"npc": {"name": "G", "role": "Wizard"}})
            assert not added.is_error
    finally:
        app.graph.unsubscribe(notifier.on_published)


@pytest.mark.anyio
async def test_without_the_schema_family_no_schema_tool_is_served(app: App) -> None:
    await asyncio.to_thread(app.graph.execute_blocking, RegisterSchemas([definition(NPC)]))
    memory_only = App(
        app.settings.with_tools(("memory",)),
        app.event_log,
        app.supervisor,
        app.graph,
        app.transactions,
        app.hooks,
    )

    async with Client(build_server(memory_only, Notifier()), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        called = await client.call_tool("add_npc", {"npc": {"name": "G", "role": "Wizard"}})

    assert "add_npc" not in names and "create_entities" in names
    assert called.is_error
    assert called.content[0].text == "MCP error -32602: Tool add_npc not found"  # type: ignore[union-attr]
