"""What a mesh-style error may say: no wire prefix, only tools that exist, the closest names."""

from __future__ import annotations

import pytest

from graphmem.tools.base import invalid_arguments
from graphmem.tools.error_text import closest_tools, existing_suggestions, public_message

TOOLS = ["add_nodes", "add_npc", "add_person", "update_npc", "search_nodes", "read_graph"]


def test_the_wire_prefix_gives_way_to_plain_words() -> None:
    message = invalid_arguments("open_nodes", "names must be an array")

    assert public_message("open_nodes", message) == (
        "Invalid arguments for open_nodes: names must be an array"
    )
    assert public_message("open_nodes", "Node not found: A") == "Node not found: A"


def test_a_suggestion_naming_a_missing_tool_is_dropped_and_placeholders_are_kept() -> None:
    suggestions = [
        'Use update_hobbit or delete_hobbit for "Bilbo"',
        'Create "Bilbo" first with an add_<type> tool',
        "Look up the exact name with search_nodes",
    ]

    kept = existing_suggestions(suggestions, TOOLS.__contains__)

    assert kept == suggestions[1:]


def test_when_no_suggestion_is_left_one_naming_no_tool_remains() -> None:
    kept = existing_suggestions(["Record it with add_observations"], TOOLS.__contains__)

    assert len(kept) == 1 and "add_observations" not in kept[0]
    assert existing_suggestions([], TOOLS.__contains__) == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("add_npcs", ["add_npc"]),
        ("serch_nodes", ["search_nodes"]),
        ("readgraph", ["read_graph"]),
        ("add_dragon", []),  # not add_person: the type part is nothing alike
        ("summon_dragon", []),
    ],
)
def test_the_closest_tool_names_are_close_in_whole_and_after_the_verb(
    name: str, expected: list[str]
) -> None:
    assert closest_tools(name, TOOLS) == expected
