"""tools_list_result in process: every tool graphmem defines (graph_cypher and the schema tools
too, whether served here or not) is written as the SDK's own pipeline writes it, the version
lists it and the notifier keep are the SDK's, and what the SDK would refuse is refused.

The SDK's pipeline here is its public pieces in the order its server runs them (the handler
result's dump, mcp_types.methods.serialize_server_result, the 2026-07-28 `_meta` stamp) and the
stdio writer's msgspec encoding; tests/e2e/test_tools_list_result.py compares with a real
server's bytes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from mcp import types
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from graphmem import notifier, protocol
from graphmem.tools.definition import ToolAnnotations, ToolDefinition, ToolExecution
from graphmem.tools.dynamic import dynamic_tools
from graphmem.tools.graph_cypher_tool import GRAPH_CYPHER_TOOLS
from graphmem.tools.graph_tools import GRAPH_TOOLS
from graphmem.tools.history_tools import HISTORY_TOOLS
from graphmem.tools.memory import MEMORY_TOOLS
from graphmem.tools.memory_extensions import MEMORY_EXTENSION_TOOLS
from graphmem.tools.mesh import MESH_TOOLS
from graphmem.tools.schema_checks import SCHEMA_STATIC_TOOLS
from graphmem.tools.tools_list import tools_list_result
from projections.entity_schema import parse_schema

SERVER_INFO = {"name": "memory-server", "title": "graphmem", "version": "1.2.3"}
VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)

NPC = parse_schema(
    {
        "name": "add_npc",
        "description": "A non-player character",
        "properties": {
            "name": {"type": "string", "description": "The name", "required": True},
            "home": {
                "type": "string",
                "description": "Where it lives",
                "relationship": {"edgeType": "lives_in", "description": "its home"},
            },
        },
    }
)

EVERY_DEFINITION = [
    spec.tool
    for spec in (
        *MEMORY_TOOLS,
        *MEMORY_EXTENSION_TOOLS,
        *HISTORY_TOOLS,
        *MESH_TOOLS,
        *SCHEMA_STATIC_TOOLS,
        *GRAPH_TOOLS,
        *GRAPH_CYPHER_TOOLS,
        *dynamic_tools([NPC]),
    )
]


def sdk_result(definitions: list[ToolDefinition], version: str) -> bytes:
    """What the SDK's server writes on stdio for a list handler returning these tools."""
    handed = types.ListToolsResult(tools=[d.to_sdk() for d in definitions])
    dumped = handed.model_dump(by_alias=True, mode="json", exclude_none=True)
    sieved = methods.serialize_server_result("tools/list", version, dumped)
    if version in MODERN_PROTOCOL_VERSIONS:
        sieved["_meta"] = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
    return msgspec.json.encode(sieved)


def test_the_version_lists_are_the_sdks() -> None:
    assert protocol.HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert protocol.MODERN_PROTOCOL_VERSIONS == MODERN_PROTOCOL_VERSIONS
    assert notifier.MODERN_PROTOCOL_VERSIONS == MODERN_PROTOCOL_VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
def test_every_tool_graphmem_defines_is_written_as_the_sdk_writes_it(version: str) -> None:
    ours = tools_list_result(EVERY_DEFINITION, version, server_info=SERVER_INFO)
    assert ours == sdk_result(EVERY_DEFINITION, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_unset_hints_none_values_and_empty_parts_are_written_as_the_sdk_writes_them(
    version: str,
) -> None:
    odd = [
        ToolDefinition(
            name="bare",
            input_schema={"type": "object", "z": None, "properties": {"a": {"default": None}}},
        ),
        ToolDefinition(
            name="hinted",
            title="Hinted",
            input_schema={"additionalProperties": False, "type": "object", "$schema": "s"},
            output_schema={"required": ["x"], "type": "object", "properties": {"x": True}},
            annotations=ToolAnnotations(title="A title", read_only_hint=True),
            execution=ToolExecution(),
        ),
        ToolDefinition(
            name="empty", input_schema={"type": "object"}, annotations=ToolAnnotations()
        ),
    ]
    assert tools_list_result(odd, version, server_info=SERVER_INFO) == sdk_result(odd, version)


def test_an_empty_list_is_the_sdks_too() -> None:
    for version in VERSIONS:
        assert tools_list_result([], version, server_info=SERVER_INFO) == sdk_result([], version)


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown MCP protocol version '2099-01-01'"):
        tools_list_result(EVERY_DEFINITION, "2099-01-01")


def test_a_2026_result_needs_the_servers_identity() -> None:
    with pytest.raises(ValueError, match="needs the server's info"):
        tools_list_result(EVERY_DEFINITION, "2026-07-28")


@pytest.mark.parametrize("version", VERSIONS)
def test_an_input_schema_the_sdk_would_refuse_is_refused(version: str) -> None:
    wrong: list[ToolDefinition] = [ToolDefinition(name="x", input_schema={"type": "array"})]
    with pytest.raises(ValueError, match="x's input schema must have type 'object'"):
        tools_list_result(wrong, version, server_info=SERVER_INFO)
    with pytest.raises(Exception, match="validation error"):
        sdk_result(wrong, version)


def test_an_untyped_output_schema_is_refused_at_the_handshake_era_only() -> None:
    untyped: list[ToolDefinition] = [
        ToolDefinition(name="x", input_schema={"type": "object"}, output_schema={"items": {}})
    ]
    modern = tools_list_result(untyped, "2026-07-28", server_info=SERVER_INFO)
    assert modern == sdk_result(untyped, "2026-07-28")
    with pytest.raises(ValueError, match="x's output schema must have type 'object'"):
        tools_list_result(untyped, "2025-11-25")


def test_to_sdk_sets_only_the_fields_a_definition_sets() -> None:
    # An output schema set to None would go out as `"outputSchema": null` where the SDK's
    # model is written with the fields set (exclude_unset).
    tool = ToolDefinition(name="x", input_schema={"type": "object"}).to_sdk()
    assert tool.model_fields_set == {"name", "input_schema"}


def as_sdk_sees_it(definition: ToolDefinition) -> dict[str, Any]:
    return definition.to_sdk().model_dump(by_alias=True, exclude_none=True, mode="json")


def test_every_definition_survives_the_sdks_model_unchanged() -> None:
    for definition in EVERY_DEFINITION:
        dumped = as_sdk_sees_it(definition)
        assert dumped["name"] == definition.name
        assert dumped["inputSchema"] == definition.input_schema
        assert dumped.get("outputSchema") == definition.output_schema
