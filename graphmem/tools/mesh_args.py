"""The mesh family's arguments: their wire shapes (MemoryMesh's where
they differ), how they are parsed, and the input checks that need no graph."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec

from actors.commands import MetadataChange
from graphmem.limits import InputLimits
from graphmem.tools.base import (
    ToolInputError,
    check_contents,
    check_count,
    check_names,
    invalid_arguments,
    parse_args,
)
from graphmem.tools.input_checks import check_command

__all__ = [
    "AddEdgesArgs",
    "MeshInputError",
    "OpenArgs",
    "SearchArgs",
    "add_metadata_changes",
    "check_weight",
    "checked_changes",
    "delete_metadata_changes",
    "mesh_command",
    "parse",
]

T = TypeVar("T")
C = TypeVar("C", bound=msgspec.Struct)


class MeshInputError(ToolInputError):
    """Unusable arguments, with suggestions the mesh error body lists (as MemoryMesh defines it)."""

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions = list(suggestions)


# --- argument shapes (camelCase wire names; extra keys are ignored, as upstream) -------------


class EdgeArg(msgspec.Struct):
    """add_edges' edge: unlike EdgeInput, a null weight is accepted and means 1."""

    from_: str = msgspec.field(name="from")
    to: str = msgspec.field()
    edgeType: str = msgspec.field()
    weight: float | None = None


class AddEdgesArgs(msgspec.Struct):
    edges: list[EdgeArg]


class NodeMetadataArgs(msgspec.Struct):
    """The seed's add_metadata and delete_metadata: one node."""

    nodeName: str
    metadata: list[str]


class MetadataContentsArg(msgspec.Struct):
    nodeName: str
    contents: list[str]


class UpstreamAddMetadataArgs(msgspec.Struct):
    metadata: list[MetadataContentsArg]


class UpstreamDeleteMetadataArgs(msgspec.Struct):
    deletions: list[NodeMetadataArgs]


class SearchArgs(msgspec.Struct):
    query: str


class OpenArgs(msgspec.Struct):
    names: list[str]


# Shown as a suggestion when arguments do not parse.
_EXAMPLES = {
    "add_nodes": '{"nodes": [{"name": "Ada", "nodeType": "person", "metadata": ["Role: '
    'Engineer"]}]}',
    "update_nodes": '{"nodes": [{"name": "Ada", "metadata": ["Role: Architect"]}]}',
    "delete_nodes": '{"nodeNames": ["Ada"]}',
    "add_edges": '{"edges": [{"from": "Ada", "to": "Acme", "edgeType": "works_at", '
    '"weight": 0.9}]}',
    "update_edges": '{"edges": [{"from": "Ada", "to": "Acme", "edgeType": "works_at", '
    '"weight": 0.6}]}',
    "delete_edges": '{"edges": [{"from": "Ada", "to": "Acme", "edgeType": "works_at"}]}',
    "add_metadata": '{"nodeName": "Ada", "metadata": ["Status: Active"]}',
    "delete_metadata": '{"nodeName": "Ada", "metadata": ["Status: Active"]}',
    "search_nodes": '{"query": "engineer"}',
    "open_nodes": '{"names": ["Ada"]}',
}


def mesh_command(tool: str, raw: dict[str, Any], shape: type[C], limits: InputLimits) -> C:
    """The tool's arguments as its command (a shape problem answered with an example call),
    every field within the input limits (graphmem.tools.input_checks)."""
    command = parse(tool, raw, shape)
    check_command(tool, limits, command)
    return command


def parse(tool: str, raw: dict[str, Any], shape: type[T]) -> T:
    try:
        return parse_args(tool, raw, shape)
    except ToolInputError as problem:
        raise MeshInputError(
            str(problem), [f"Call {tool} with arguments shaped like {_EXAMPLES[tool]}"]
        ) from None


# --- input checks -----------------------------------------------------------------------------


def check_weight(tool: str, where: str, weight: float | None) -> None:
    if weight is None or (math.isfinite(weight) and 0.0 <= weight <= 1.0):
        return
    raise MeshInputError(
        invalid_arguments(tool, f"{where} is {weight!r}: Edge weight must be between 0 and 1"),
        ["Give a weight from 0 (no confidence) to 1 (certain), or omit it for 1."],
    )


def _seed_change(tool: str, raw: dict[str, Any]) -> list[tuple[str, MetadataChange]]:
    one = parse(tool, raw, NodeMetadataArgs)
    return [("", MetadataChange(one.nodeName, list(one.metadata)))]


def add_metadata_changes(tool: str, raw: dict[str, Any]) -> list[tuple[str, MetadataChange]]:
    """(where, change) pairs from the seed's {nodeName, metadata: [str]} or upstream's
    {metadata: [{nodeName, contents}]}; a list of strings is the seed's shape even when
    nodeName was forgotten, so the error names what is missing."""
    items = raw.get("metadata")
    upstream = (
        "nodeName" not in raw
        and isinstance(items, list)
        and all(isinstance(item, dict) for item in items)
    )
    if not upstream:
        return _seed_change(tool, raw)
    args = parse(tool, raw, UpstreamAddMetadataArgs)
    return [
        (f"metadata[{i}].", MetadataChange(m.nodeName, list(m.contents)))
        for i, m in enumerate(args.metadata)
    ]


def delete_metadata_changes(tool: str, raw: dict[str, Any]) -> list[tuple[str, MetadataChange]]:
    """(where, change) pairs from the seed's {nodeName, metadata} or upstream's
    {deletions: [{nodeName, metadata}]}."""
    if "nodeName" in raw or "deletions" not in raw:
        return _seed_change(tool, raw)
    args = parse(tool, raw, UpstreamDeleteMetadataArgs)
    return [
        (f"deletions[{i}].", MetadataChange(d.nodeName, list(d.metadata)))
        for i, d in enumerate(args.deletions)
    ]


def checked_changes(
    tool: str, limits: InputLimits, pairs: list[tuple[str, MetadataChange]], entries: str
) -> list[MetadataChange]:
    """The changes, once their names and entries pass the input checks; `entries` is the wire
    name of an item's entry list (for messages)."""
    check_count(tool, len(pairs), "items", limits.max_items)
    for where, change in pairs:
        field = "metadata" if not where else entries
        check_names(tool, limits, [(f"{where}nodeName", change.node_name)])
        check_count(tool, len(change.entries), f"{where}{field}", limits.max_items)
        check_contents(tool, limits, f"{where}{field}", change.entries)
    return [change for _, change in pairs]
