"""Bad input never hurts: every malformed call gets an isError result that says what to fix,
nothing is half-written, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.tools.support import call, legacy_session, text, value

pytestmark = pytest.mark.anyio


async def assert_rejected(s: ClientSession, tool: str, args: Any, *fragments: str) -> str:
    result = await call(s, tool, args)
    assert result.is_error, f"{tool} accepted {args!r}"
    message = text(result)
    for fragment in fragments:
        assert fragment in message, message
    return message


async def graph(s: ClientSession) -> dict[str, Any]:
    result: dict[str, Any] = value(await call(s, "read_graph", {}))
    return result


async def test_wrong_types_and_missing_fields_are_tool_errors(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        prefix = "Invalid arguments for tool"
        await assert_rejected(s, "create_entities", {}, prefix, "entities")
        await assert_rejected(
            s,
            "create_entities",
            {"entities": [{"name": "Dan", "entityType": "person"}]},
            prefix,
            "observations",
        )
        await assert_rejected(s, "search_nodes", {"query": 5}, prefix, "query")
        await assert_rejected(s, "open_nodes", {"names": "Bob"}, prefix, "names")
        await assert_rejected(s, "create_relations", {"relations": [{"from": "a"}]}, prefix)
        await assert_rejected(s, "no_such_tool", {}, "Tool no_such_tool not found")
        assert await graph(s) == {"entities": [], "relations": []}


async def test_extra_properties_are_ignored_like_upstream(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        created = await call(
            s,
            "create_entities",
            {"entities": [{"name": "Dan", "entityType": "p", "observations": [], "extra": 1}]},
        )
        assert value(created) == [{"name": "Dan", "entityType": "p", "observations": []}]


async def test_huge_inputs_are_refused_with_the_limit_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    async with legacy_session(tmp_path) as s:
        huge = "x" * (10 * 1024 * 1024)
        message = await assert_rejected(
            s,
            "create_entities",
            {"entities": [{"name": "Big", "entityType": "t", "observations": ["ok", huge]}]},
            "limit",
        )
        assert "observations[1]" in message
        many = [{"name": f"n{i}", "entityType": "t", "observations": []} for i in range(100_000)]
        await assert_rejected(s, "create_entities", {"entities": many}, "limit", "several calls")
        assert await graph(s) == {"entities": [], "relations": []}
        # still serving
        ok = await call(
            s,
            "create_entities",
            {"entities": [{"name": "Small", "entityType": "t", "observations": []}]},
        )
        assert not ok.is_error


async def test_control_characters_and_lone_surrogates_are_refused(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await assert_rejected(
            s,
            "create_entities",
            {"entities": [{"name": "a\x00b", "entityType": "t", "observations": []}]},
            "control character U+0000",
        )
        fine = await call(
            s,
            "create_entities",
            {
                "entities": [
                    {"name": "ok", "entityType": "t", "observations": ["line\nbreak\tand tab"]}
                ]
            },
        )
        assert not fine.is_error
        assert (await graph(s))["entities"][0]["observations"] == ["line\nbreak\tand tab"]


async def test_a_batch_with_one_bad_item_writes_none_of_it(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(
            s,
            "create_entities",
            {"entities": [{"name": "Bob", "entityType": "p", "observations": []}]},
        )
        result = await call(
            s,
            "add_observations",
            {
                "observations": [
                    {"entityName": "Bob", "contents": ["b1"]},
                    {"entityName": "Nobody", "contents": ["z"]},
                ]
            },
        )
        assert result.is_error
        assert text(result) == "Entity with name Nobody not found"
        assert (await graph(s))["entities"][0]["observations"] == []
        dangling = await call(
            s,
            "create_relations",
            {
                "relations": [
                    {"from": "Bob", "to": "Bob", "relationType": "self"},
                    {"from": "Ghost", "to": "Bob", "relationType": "haunts"},
                ]
            },
        )
        assert dangling.is_error
        assert text(dangling) == "Entity with name Ghost not found"
        assert (await graph(s))["relations"] == []


async def test_empty_lists_are_fine(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        for tool, args in [
            ("create_entities", {"entities": []}),
            ("create_relations", {"relations": []}),
            ("add_observations", {"observations": []}),
            ("delete_entities", {"entityNames": []}),
            ("delete_observations", {"deletions": []}),
            ("delete_relations", {"relations": []}),
            ("open_nodes", {"names": []}),
        ]:
            result = await call(s, tool, args)
            assert not result.is_error, (tool, text(result))
