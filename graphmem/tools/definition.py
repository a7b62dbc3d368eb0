"""A tool's definition as graphmem's own frozen data: what `tools/list` publishes of it.

The tool layer and the tool runner build and read these without the MCP SDK (whose pydantic
models cost a stdio server ~30 MiB of RSS: issue 21, item 2). The SDK's `types.Tool` is made
only at the SDK's edge (`ToolDefinition.to_sdk`, called by graphmem.server's list handler);
graphmem.tools.tools_list writes the `tools/list` result itself, byte for byte as the SDK does.

The fields are those of the SDK's `Tool` that graphmem sets, under the SDK's Python names, so
code that reads a definition reads it as it read the SDK's object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from mcp import types

__all__ = ["ToolAnnotations", "ToolDefinition", "ToolExecution"]

TaskSupport = Literal["forbidden", "optional", "required"]


class ToolAnnotations(msgspec.Struct, frozen=True, kw_only=True):
    """Hints on how a tool behaves (MCP's ToolAnnotations); None: not stated."""

    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None
    title: str | None = None


class ToolExecution(msgspec.Struct, frozen=True, kw_only=True):
    """How a tool may be run (MCP's ToolExecution, 2025-11-25): whether as a task."""

    task_support: TaskSupport | None = None


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """One tool as `tools/list` describes it. `output_schema` None: the tool declares none
    (the key is absent from the wire, never null)."""

    name: str
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    execution: ToolExecution | None = None

    def to_sdk(self) -> types.Tool:
        """The SDK's `Tool` for this definition, with only the fields set that are set here
        (the SDK's stdio writer sends every field that was set, None as null)."""
        from mcp import types  # noqa: PLC0415 - the SDK's edge only: the tool layer runs without it

        fields: dict[str, Any] = {"name": self.name, "input_schema": self.input_schema}
        if self.title is not None:
            fields["title"] = self.title
        if self.description is not None:
            fields["description"] = self.description
        if self.output_schema is not None:
            fields["output_schema"] = self.output_schema
        if self.annotations is not None:
            fields["annotations"] = types.ToolAnnotations(
                **msgspec.structs.asdict(self.annotations)
            )
        if self.execution is not None:
            fields["execution"] = types.ToolExecution(**msgspec.structs.asdict(self.execution))
        return types.Tool(**fields)
