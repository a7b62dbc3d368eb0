"""The nine tool definitions are the official server's, field for field (wire fixture), except
the two main-branch schema changes, the optional paging inputs and the optional `as_of` of the
read tools (with `asOf` in their output) that the README lists."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from graphmem.tools.memory import MEMORY_TOOLS
from graphmem.tools.tools_list import tools_list_result

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/official-memory-wire-fixture.json"


def official_tools() -> dict[str, dict[str, Any]]:
    if not FIXTURE.exists():
        pytest.fail(f"the wire fixture is missing at {FIXTURE}")
    tools = json.loads(FIXTURE.read_text(encoding="utf-8"))["tools_list_result"]["tools"]
    return {tool["name"]: tool for tool in tools}


def with_main_branch_changes(tools: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    expected = copy.deepcopy(tools)
    output = expected["create_entities"]["outputSchema"]["properties"]
    output["skipped"] = {"type": "array", "items": {"type": "string"}}
    query = expected["search_nodes"]["inputSchema"]["properties"]["query"]
    query["maxLength"] = 2048
    limit = {
        "type": "integer",
        "minimum": 1,
        "description": "The most entities to return, in name order; omit for all of them",
    }
    read_graph = expected["read_graph"]["inputSchema"]["properties"]
    read_graph["limit"] = limit
    read_graph["offset"] = {
        "type": "integer",
        "minimum": 0,
        "description": "How many entities (in name order) to skip before the page; omit for none",
    }
    search = expected["search_nodes"]["inputSchema"]["properties"]
    search["entityType"] = {
        "type": "string",
        "description": "Only entities of this exact type; omit to match every type",
    }
    search["limit"] = limit
    search["offset"] = {
        "type": "integer",
        "minimum": 0,
        "description": "How many matches (in name order) to skip before the page; omit for none",
    }
    # As-of reads: an optional `as_of` on the three read tools answers as the graph was then;
    # the text keeps the official shape, the structured content adds `asOf` (which point).
    as_of = {
        "type": ["integer", "string"],
        "minimum": 0,
        "description": "Answer as the graph was at this point of its history: a log position "
        "(0 = before the first write) or an ISO-8601 time (e.g. 2026-03-01T12:00:00Z; without a "
        "zone, UTC; a date alone, the start of that day); omit for the graph as it is now",
    }
    as_of_output = {
        "type": "object",
        "properties": {"position": {"type": "integer"}, "time": {"type": ["string", "null"]}},
        "required": ["position", "time"],
        "additionalProperties": False,
    }
    for name in ("read_graph", "search_nodes", "open_nodes"):
        expected[name]["inputSchema"]["properties"]["as_of"] = as_of
        expected[name]["outputSchema"]["properties"]["asOf"] = as_of_output
    return expected


def test_the_nine_tools_match_the_official_definitions() -> None:
    listed = tools_list_result([spec.tool for spec in MEMORY_TOOLS], "2025-11-25")
    ours = {tool["name"]: tool for tool in json.loads(listed)["tools"]}
    expected = with_main_branch_changes(official_tools())
    assert list(ours) == list(expected)  # same names, same order
    for name, definition in expected.items():
        assert ours[name] == definition, name
