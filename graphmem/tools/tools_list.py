"""The `tools/list` result as the MCP SDK writes it on stdio, made without the SDK.

The SDK's path for a `tools/list` answer (mcp 2.3, mcp.server.runner.ServerRunner._serialize):
the handler's `ListToolsResult` is dumped (by alias, JSON mode, None left out), then validated
and dumped again through the wire model of the negotiated version
(mcp_types.methods.SERVER_RESULTS: the "sieve"), whose models ignore fields the version does
not define and write fields in their declared order, extra keys after them in the order given;
a 2026-07-28 result then gets `_meta` stamped with the server's identity; graphmem's stdio
writer encodes the dict with msgspec. What the sieve does, version by version:

- 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 (the handshake era) all map to the
  2025-11-25 models: the result is `{"tools": [...]}` alone (the SDK's `ttlMs`, `cacheScope`
  and `resultType` are dropped); each tool is written `annotations, description, execution,
  inputSchema, name, outputSchema, title`; a schema `$schema, properties, required, type`, then
  its other keys.
- 2026-07-28: `cacheScope` ("private", the SDK's default), `resultType` ("complete"), `tools`,
  `ttlMs` (0), then `_meta` with `io.modelcontextprotocol/serverInfo`; a tool loses
  `execution`; an input schema is written `$schema, type`, then its other keys; an output
  schema `$schema`, then its other keys.

Everywhere, annotations are written `destructiveHint, idempotentHint, openWorldHint,
readOnlyHint, title`, a key whose value is None is left out (at a schema's top level too, not
inside it). tests/e2e/test_tools_list_result.py compares these bytes with what a real server's
SDK answers, for every version and tool profile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from graphmem.protocol import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    SERVER_INFO_META_KEY,
)
from graphmem.tools.definition import ToolAnnotations, ToolDefinition

# The SDK's versions and meta key come from graphmem.protocol's copies: importing mcp_types
# would load the SDK's pydantic types.
__all__ = ["tools_list_result"]

# The fields each version's JSON-Schema model declares, in its order; other keys follow.
_HANDSHAKE_SCHEMA = ("$schema", "properties", "required", "type")
_MODERN_INPUT_SCHEMA = ("$schema", "type")
_MODERN_OUTPUT_SCHEMA = ("$schema",)

_encode = msgspec.json.Encoder().encode


def tools_list_result(
    definitions: Iterable[ToolDefinition],
    protocol_version: str,
    *,
    server_info: Mapping[str, Any] | None = None,
) -> bytes:
    """The JSON of the `result` member of a `tools/list` response listing `definitions` (in
    their order) at `protocol_version`: byte for byte what graphmem's SDK server writes on
    stdio for that session, so a front may answer `tools/list` itself with
    `{"jsonrpc":"2.0","id":<id>,"result":` + these bytes + `}`.

    `definitions`: the server's current list (graphmem.tool_runner.ToolRunner.definitions(),
    which refreshes the schema tools first). `server_info`: the server's `Implementation`
    (ToolRunner.server_info), required for 2026-07-28, whose result carries it in `_meta`;
    unused for the handshake era. This is the answer of a server with no cache hints (as
    graphmem's), to a request without a cursor (graphmem does not page the list).

    Raises ValueError for a version the SDK does not speak, a 2026-07-28 result without
    `server_info`, or a schema the SDK would refuse to send (an input schema whose type is
    not "object"; at the handshake era an output schema's too: the SDK answers those with an
    internal error). Finer shape rules the SDK's models check (each of `properties` an object
    or a boolean, `required` a list of strings) are not checked again here: graphmem's
    definitions keep them, and the comparison test holds every profile's list to the SDK's.
    """
    if protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        return _encode({"tools": [_tool(d, modern=False) for d in definitions]})
    if protocol_version not in MODERN_PROTOCOL_VERSIONS:
        raise ValueError(f"unknown MCP protocol version {protocol_version!r}")
    if server_info is None:
        raise ValueError(f"a {protocol_version} tools/list result needs the server's info")
    return _encode(
        {
            "cacheScope": "private",
            "resultType": "complete",
            "tools": [_tool(d, modern=True) for d in definitions],
            "ttlMs": 0,
            "_meta": {SERVER_INFO_META_KEY: _stated(server_info)},
        }
    )


def _tool(definition: ToolDefinition, *, modern: bool) -> dict[str, Any]:
    name = definition.name
    wire: dict[str, Any] = {}
    if definition.annotations is not None:
        wire["annotations"] = _annotations(definition.annotations)
    if definition.description is not None:
        wire["description"] = definition.description
    if definition.execution is not None and not modern:
        execution = definition.execution.task_support
        wire["execution"] = {} if execution is None else {"taskSupport": execution}
    input_order = _MODERN_INPUT_SCHEMA if modern else _HANDSHAKE_SCHEMA
    wire["inputSchema"] = _schema(definition.input_schema, input_order, f"{name}'s input schema")
    wire["name"] = name
    if definition.output_schema is not None:
        # The 2026-07-28 output schema may be any JSON Schema: no type is required.
        output_order = _MODERN_OUTPUT_SCHEMA if modern else _HANDSHAKE_SCHEMA
        where = None if modern else f"{name}'s output schema"
        wire["outputSchema"] = _schema(definition.output_schema, output_order, where)
    if definition.title is not None:
        wire["title"] = definition.title
    return wire


def _annotations(annotations: ToolAnnotations) -> dict[str, Any]:
    return _stated(
        {
            "destructiveHint": annotations.destructive_hint,
            "idempotentHint": annotations.idempotent_hint,
            "openWorldHint": annotations.open_world_hint,
            "readOnlyHint": annotations.read_only_hint,
            "title": annotations.title,
        }
    )


def _schema(
    schema: Mapping[str, Any], declared: tuple[str, ...], where: str | None
) -> dict[str, Any]:
    """`schema` as the version's model writes it: its declared keys first, in their order,
    then the others as given; a key whose value is None left out. `where`: the schema must
    have type "object" (named so in the error)."""
    if where is not None and schema.get("type") != "object":
        raise ValueError(f"{where} must have type 'object'; the SDK refuses to list it")
    ordered = {key: schema[key] for key in declared if schema.get(key) is not None}
    ordered.update((k, v) for k, v in schema.items() if k not in ordered and v is not None)
    return ordered


def _stated(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}
