"""graph_relate end to end through a real MCP client, both protocol eras (contract §8.2 and
the §13 checks of entities, edges, batch, validity and supersession)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tools.graph_write_support import (
    ERAS,
    GraphClient,
    create_slug_twins,
    graph_client,
    history,
    latest_fields,
    tool_error,
    tool_value,
    whole_graph,
)

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("era", ERAS)]


def relate(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "from_name": "Alice",
        "from_type": "person",
        "to_name": "Project X",
        "to_type": "project",
        "relation": "works on",
    }
    return {**base, **fields}


def person(local_id: str, name: str, **extra: object) -> dict[str, object]:
    return {"localId": local_id, "name": name, "type": "Person", **extra}


async def refused_without_writing(client: GraphClient, arguments: dict[str, Any]) -> str:
    """The error text of a refused graph_relate, after checking it wrote nothing."""
    before = await whole_graph(client)
    message = await tool_error(client, "graph_relate", arguments)
    assert await whole_graph(client) == before
    return message


# --- single mode ------------------------------------------------------------------------------


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


async def test_a_higher_weight_replaces_a_lower_one_adds_the_boost_capped_at_one(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(client, "graph_relate", relate(weight=0.5))
        higher = await tool_value(client, "graph_relate", relate(weight=0.8))
        assert (higher["action"], higher["edge"]["weight"]) == ("strengthened", 0.8)
        lower = await tool_value(client, "graph_relate", relate(weight=0.7))
        assert lower["edge"]["weight"] == 0.85
        for _ in range(4):
            capped = await tool_value(client, "graph_relate", relate(weight=0.1))
        assert capped["edge"]["weight"] == 1.0
        assert capped["created_entities"] == []


async def test_an_edge_keeps_its_properties_evidence_and_provenance(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(
            client,
            "graph_relate",
            relate(
                properties={"role": "lead"},
                evidence="she said so",
                source_session="s1",
                source_transcript="t.jsonl",
                source_type="conversation",
            ),
        )
        fields = await latest_fields(client, "Alice", "RelationCreated")
        assert fields["properties"] == {"role": "lead"}
        assert (fields["evidence"], fields["sourceSession"], fields["sourceType"]) == (
            "she said so",
            "s1",
            "conversation",
        )
        assert fields["sourceTranscript"] == "t.jsonl"


async def test_an_existing_entity_of_another_family_is_touched_and_keeps_its_type(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(
            client,
            "create_entities",
            {"entities": [{"name": "Alice", "entityType": "engineer", "observations": ["x"]}]},
        )
        answer = await tool_value(client, "graph_relate", relate(from_name="alice"))
        assert answer["created_entities"] == ["Project X"]
        assert answer["warnings"] == ["entity 'Alice' keeps its type 'engineer' (given: 'Person')"]
        fields = await latest_fields(client, "Alice", "EntityUpdated")
        assert fields["timesMentioned"] == 2
        opened = await tool_value(client, "open_nodes", {"names": ["Alice"]})
        assert opened["entities"][0]["observations"] == ["x"]


async def test_weights_out_of_range_are_clamped_with_a_warning(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        answer = await tool_value(client, "graph_relate", relate(weight=1.4))
        assert answer["edge"]["weight"] == 1.0
        assert answer["warnings"] == ["weight 1.4 clamped to 1.0"]
        below = await tool_value(client, "graph_relate", relate(to_name="Y", weight=-2))
        assert below["warnings"] == ["weight -2.0 clamped to 0.0"]


async def test_unicode_names_get_unicode_slug_ids(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        answer = await tool_value(
            client, "graph_relate", relate(from_name="Zoë", to_name="東京", relation="lives in")
        )
        assert (answer["edge"]["from"], answer["edge"]["to"]) == ("zoë", "東京")
        again = await tool_value(
            client, "graph_relate", relate(from_name="zoë", to_name="東京", relation="LIVES_IN")
        )
        assert again["action"] == "strengthened"


async def test_a_reverse_write_of_a_symmetric_relation_reinforces_the_one_edge(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(
            client, "graph_relate", relate(to_name="Bob", to_type="person", relation="knows")
        )
        answer = await tool_value(
            client,
            "graph_relate",
            relate(from_name="Bob", to_name="Alice", to_type="person", relation="KNOWS"),
        )
        assert answer["action"] == "strengthened"
        assert (answer["edge"]["from"], answer["edge"]["to"]) == ("alice", "bob")
        assert len((await whole_graph(client))["relations"]) == 1


# --- supersession -----------------------------------------------------------------------------


async def test_a_dated_new_target_closes_the_old_edge_and_valid_at_round_trips(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        first = await tool_value(client, "graph_relate", relate(valid_at="2025-01-01"))
        assert first["edge"]["valid_at"] == "2025-01-01T00:00:00.000Z"
        second = await tool_value(
            client, "graph_relate", relate(to_name="Project Y", valid_at="2026-03-01T12:00:00")
        )
        assert second["superseded"] == [
            {
                "from": "alice",
                "to": "project-x",
                "type": "WORKS_ON",
                "invalid_at": "2026-03-01T12:00:00.000Z",
            }
        ]
        # Superseding never deletes: the memory family still shows both.
        assert len((await whole_graph(client))["relations"]) == 2
        undated = await tool_value(client, "graph_relate", relate(to_name="Project Z"))
        assert undated["superseded"] == []


async def test_a_dated_reassert_reopens_a_superseded_edge(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(client, "graph_relate", relate(valid_at="2025-01-01"))
        await tool_value(client, "graph_relate", relate(to_name="Y", valid_at="2026-01-01"))
        back = await tool_value(client, "graph_relate", relate(valid_at="2026-06-01"))
        assert back["action"] == "strengthened"
        assert (back["edge"]["valid_at"], back["edge"]["invalid_at"]) == (
            "2026-06-01T00:00:00.000Z",
            None,
        )
        assert [s["to"] for s in back["superseded"]] == ["y"]
        reopened = await latest_fields(client, "Project X", "RelationUpdated")
        assert reopened["cleared"] == ["invalid_at"]


async def test_a_past_fact_recorded_late_is_written_already_over(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(client, "graph_relate", relate(to_name="New", valid_at="2026-01-01"))
        old = await tool_value(client, "graph_relate", relate(to_name="Old", valid_at="2024-01-01"))
        assert old["superseded"] == []
        assert old["edge"]["invalid_at"] == "2026-01-01T00:00:00.000Z"


# --- batch mode -------------------------------------------------------------------------------


async def test_a_batch_creates_entities_and_relations_with_slug_ids_and_provenance(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        answer = await tool_value(
            client,
            "graph_relate",
            {
                "batch": {
                    "entities": [
                        person("d", "Dave", properties={"role": "dev"}),
                        person("e", "Erin"),
                        person("f", "Frank"),
                    ],
                    "relations": [
                        {"from": "d", "to": "e", "relation": "knows", "weight": 0.6},
                        {"from": "e", "to": "f", "relation": "MENTOR_OF"},
                    ],
                    "source_session": "batch-1",
                },
                "source_type": "ingest",
            },
        )
        assert {k: answer[k] for k in ("entities_created", "entities_merged")} == {
            "entities_created": 3,
            "entities_merged": 0,
        }
        assert (answer["edges_created"], answer["edges_strengthened"]) == (2, 0)
        assert answer["details"][:3] == [
            {"entity": "Dave", "id": "dave", "action": "created"},
            {"entity": "Erin", "id": "erin", "action": "created"},
            {"entity": "Frank", "id": "frank", "action": "created"},
        ]
        assert answer["details"][3] == {
            "edge": "Dave→KNOWS→Erin",
            "from": "dave",
            "to": "erin",
            "type": "KNOWS",
            "action": "created",
            "weight": 0.6,
        }
        edge = await latest_fields(client, "Frank", "RelationCreated")
        assert (edge["sourceSession"], edge["sourceType"], edge["weight"]) == (
            "batch-1",
            "ingest",
            0.5,
        )
        dave = await latest_fields(client, "Dave", "EntityCreated")
        assert (dave["confidence"], dave["timesMentioned"], dave["properties"]) == (
            0.5,
            1,
            {"role": "dev"},
        )


async def test_batch_confidence_rises_by_max_and_every_batch_counts_one_mention(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        for confidence in (None, 0.8, 0.3):
            extra = {} if confidence is None else {"confidence": confidence}
            await tool_value(
                client, "graph_relate", {"batch": {"entities": [person("x", "Xena", **extra)]}}
            )
        fields = await latest_fields(client, "Xena", "EntityUpdated")
        assert (fields["confidence"], fields["timesMentioned"]) == (0.8, 3)
        clamped = await tool_value(
            client,
            "graph_relate",
            {"batch": {"entities": [person("x", "Xena", confidence=3)]}},
        )
        assert clamped["warnings"] == ["batch.entities[0].confidence 3.0 clamped to 1.0"]


async def test_a_failing_batch_lists_every_failing_item_and_writes_nothing(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await create_slug_twins(client)
        message = await refused_without_writing(
            client,
            {
                "batch": {
                    "entities": [person("a", "Ann"), person("a", "Again")],
                    "relations": [
                        {"from": "a", "to": "nobody", "relation": "KNOWS"},
                        {"from": "a", "to": "data-lake", "relation": "USES"},
                        {"from": "a", "to": "a", "relation": "NOT OK!"},
                        {"from": "a", "to": "a", "relation": "X", "valid_at": "someday"},
                    ],
                }
            },
        )
        for where in (
            "entities[1]",
            "relations[0].to",
            "relations[1].to",
            "relations[2].relation",
            "relations[3].valid_at",
        ):
            assert where in message
        assert "'Data Lake'" in message and "'data lake'" in message


async def test_a_single_mode_field_next_to_batch_is_refused(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        message = await refused_without_writing(
            client, {"batch": {"entities": [person("a", "Ann")]}, "weight": 0.5}
        )
        assert "weight cannot be given with batch" in message


async def test_batch_supersession_applies_per_relation_in_order_with_the_date_check(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:

        def works_on(target: str, valid_at: str) -> dict[str, str]:
            return {"from": "Liz", "to": target, "relation": "WORKS_ON", "valid_at": valid_at}

        await tool_value(client, "graph_relate", relate(from_name="Liz", to_name="A"))
        answer = await tool_value(
            client,
            "graph_relate",
            {
                "batch": {
                    "entities": [person("c", "C"), person("b", "B")],
                    "relations": [works_on("c", "2027-01-01"), works_on("b", "2025-01-01")],
                }
            },
        )
        # C closes the undated A; B (2025), recorded after the newer C, is over when C began.
        assert answer["superseded"] == [
            {"from": "liz", "to": "a", "type": "WORKS_ON", "invalid_at": "2027-01-01T00:00:00.000Z"}
        ]
        last = answer["details"][-1]
        assert (last["to"], last["action"]) == ("b", "created")
        fields = await latest_fields(client, "B", "RelationCreated")
        assert fields["invalidAt"] is not None


# --- bad input --------------------------------------------------------------------------------


async def test_a_misspelt_argument_is_refused_listing_the_accepted_ones(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        message = await refused_without_writing(client, relate(weigth=0.7))
        assert "unknown argument `weigth`" in message
        assert "weight" in message and "from_name" in message and "batch" in message
        nested = await refused_without_writing(
            client, {"batch": {"entities": [{"locaId": "a", "name": "A", "type": "Person"}]}}
        )
        assert "unknown field `locaId` in `batch.entities[0]`" in nested


async def test_missing_single_mode_fields_are_named(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        message = await refused_without_writing(client, {"from_name": "Alice", "relation": "KNOWS"})
        assert "missing from_type, to_name, to_type" in message


async def test_an_unparseable_valid_at_is_refused(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        message = await refused_without_writing(client, relate(valid_at="last tuesday"))
        assert "valid_at" in message


async def test_names_with_control_characters_are_refused(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        message = await refused_without_writing(client, relate(to_name="Bad\x07Name"))
        assert "control character U+0007" in message
        message = await refused_without_writing(client, relate(from_name="   "))
        assert "from_name is empty" in message


async def test_an_ambiguous_reference_is_refused_naming_the_candidates(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await create_slug_twins(client)
        message = await refused_without_writing(client, relate(to_name="DATA LAKE"))
        assert "'Data Lake'" in message and "'data lake'" in message


async def test_an_unusable_relation_name_is_refused(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        message = await refused_without_writing(client, relate(relation="WORKS ON!"))
        assert "relation 'WORKS ON!' is not usable" in message


async def test_a_batch_over_the_item_limit_is_refused(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path, GRAPHMEM_MAX_ITEMS="2") as client:
        message = await refused_without_writing(
            client,
            {"batch": {"entities": [person("a", "A"), person("b", "B"), person("c", "C")]}},
        )
        assert "batch.entities has 3 items; the limit is 2" in message


async def test_oversized_properties_are_refused(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path, GRAPHMEM_MAX_OBSERVATION_CHARS="100") as client:
        message = await refused_without_writing(client, relate(properties={"note": "x" * 200}))
        assert "properties is" in message and "the limit is 100" in message


async def test_several_current_predecessors_all_close_and_other_types_stay_current(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(client, "graph_relate", relate(to_name="A", valid_at="2024-01-01"))
        await tool_value(client, "graph_relate", relate(to_name="B"))
        await tool_value(client, "graph_relate", relate(to_name="C", relation="LIKES"))
        answer = await tool_value(
            client, "graph_relate", relate(to_name="D", valid_at="2025-01-01")
        )
        assert sorted(s["to"] for s in answer["superseded"]) == ["a", "b"]
        likes = await latest_fields(client, "C", "RelationCreated")
        assert "invalidAt" not in likes
        assert [e["event"] for e in await history(client, "C")] == [
            "EntityCreated",
            "RelationCreated",
        ]


async def test_a_name_over_the_name_limit_is_refused(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path, GRAPHMEM_MAX_NAME_CHARS="20") as client:
        message = await refused_without_writing(client, relate(to_name="P" * 21))
        assert "to_name is 21 characters long; the limit is 20" in message
