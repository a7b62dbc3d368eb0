"""graph_relate single mode end to end through a real MCP client, both protocol eras."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.graph_write_support import ERAS, graph_client, tool_error, tool_value

pytestmark = pytest.mark.anyio


def relate(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "from_name": "Alice",
        "from_type": "person",
        "to_name": "Project X",
        "to_type": "project",
        "relation": "works on",
    }
    return {**base, **fields}


@pytest.mark.parametrize("era", ERAS)
async def test_graph_relate_creates_both_entities_and_the_edge_read_by_open_nodes(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        answer = await tool_value(client, "graph_relate", relate(weight=0.7))
        assert answer == {
            "action": "created",
            "edge": {
                "from": "alice",
                "to": "project-x",
                "type": "WORKS_ON",
                "weight": 0.7,
                "valid_at": None,
                "invalid_at": None,
            },
            "created_entities": ["Alice", "Project X"],
            "superseded": [],
        }
        opened = await tool_value(client, "open_nodes", {"names": ["Alice"]})
        assert opened["entities"][0]["entityType"] == "Person"
        assert opened["relations"] == [
            {"from": "Alice", "to": "Project X", "relationType": "WORKS_ON"}
        ]


@pytest.mark.parametrize("era", ERAS)
async def test_re_asserting_an_edge_is_strengthened_with_the_mention_boost_capped_at_one(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(client, "graph_relate", relate(weight=0.98))
        again = await tool_value(client, "graph_relate", relate(weight=0.5))
        assert again["action"] == "strengthened"
        assert again["created_entities"] == []
        assert again["edge"]["weight"] == 1.0


@pytest.mark.parametrize("era", ERAS)
async def test_a_misspelt_argument_is_refused_listing_the_accepted_ones_and_nothing_is_written(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        before = await tool_value(client, "read_graph", {})
        message = await tool_error(client, "graph_relate", relate(weigth=0.7))
        assert "weigth" in message and "weight" in message and "from_name" in message
        assert await tool_value(client, "read_graph", {}) == before
