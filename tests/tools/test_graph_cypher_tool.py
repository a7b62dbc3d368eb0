"""graph_cypher end to end through a real MCP client, both protocol eras, on the real engine
(issue 19, contract §8.8): reads cross-checked with graph_query, refused writes that leave
nothing behind, the timeout, a worker crash and an exhausted worker survived, the projection
following writes, the row cap and as_of. Skipped without the `cypher` extra (CI installs it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from graphmem.cypher import INSTALL_HINT, available
from tests.tools.graph_write_support import (
    ERAS,
    GraphClient,
    create_slug_twins,
    graph_client,
    tool_call,
    tool_error,
    tool_value,
)
from tests.tools.test_as_of_reads import watching

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not available(), reason="needs the cypher extra: graphmem[cypher]"),
]

SLOW = (
    "UNWIND range(1, 20000) AS x UNWIND range(1, 20000) AS y "
    "WITH x, y WHERE x * y % 7 = 3 RETURN count(*) AS n"
)


async def cypher(client: GraphClient, query: str, **more: Any) -> dict[str, Any]:
    answer: dict[str, Any] = await tool_value(client, "graph_cypher", {"cypher": query, **more})
    return answer


async def seed(client: GraphClient) -> None:
    await tool_value(
        client,
        "graph_relate",
        {
            "batch": {
                "entities": [
                    {
                        "localId": "a",
                        "name": "Alice",
                        "type": "Person",
                        "properties": {"role": "dev"},
                    },
                    {"localId": "b", "name": "Bob", "type": "Person"},
                    {"localId": "p", "name": "Postgres Migration", "type": "Project"},
                    {"localId": "q", "name": "Search Revamp", "type": "Project"},
                    {"localId": "t", "name": "Postgres", "type": "Technology"},
                ],
                "relations": [
                    {"from": "a", "to": "p", "relation": "WORKS_ON", "weight": 0.9},
                    {"from": "b", "to": "p", "relation": "WORKS_ON", "weight": 0.6},
                    {"from": "a", "to": "q", "relation": "WORKS_ON", "weight": 0.4},
                    {"from": "p", "to": "t", "relation": "USES", "weight": 0.8},
                    {"from": "a", "to": "b", "relation": "KNOWS", "weight": 0.7},
                ],
            }
        },
    )


def relate(
    source: str, source_type: str, target: str, target_type: str, relation: str, weight: float = 0.5
) -> dict[str, Any]:
    return {
        "from_name": source,
        "from_type": source_type,
        "to_name": target,
        "to_type": target_type,
        "relation": relation,
        "weight": weight,
    }


async def memory_write(client: GraphClient, tool: str, arguments: dict[str, Any]) -> None:
    """A memory family write (its answers are the official server's text)."""
    result = await tool_call(client, tool, arguments)
    assert not result.is_error, result.content


def write_config(data_dir: Path, timeout_ms: int) -> None:
    home = data_dir / "graph-memory"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"query": {"cypher_timeout_ms": timeout_ms}}))


@pytest.mark.parametrize("era", ERAS)
async def test_graph_cypher_is_listed_read_only_and_the_instructions_do_not_ask_to_install_it(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        hints = tools["graph_cypher"].annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            True,
            False,
            True,
        )
        assert hints.open_world_hint is False
        assert set(tools["graph_cypher"].input_schema["properties"]) == {
            "cypher",
            "params",
            "as_of",
        }
        if isinstance(client, ClientSession):
            init = client.initialize_result
            assert init is not None
            instructions = init.instructions
        else:
            instructions = client.instructions
        assert instructions is not None
        assert "graph_cypher runs one read-only Cypher query" in instructions
        assert INSTALL_HINT not in instructions


@pytest.mark.parametrize("era", ERAS)
async def test_a_neo4j_style_query_answers_what_graph_query_shows_for_the_same_graph(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        answer = await cypher(
            client,
            "MATCH (p:Person)-[w:WORKS_ON]->(x:Project) "
            "RETURN p.name AS person, x.name AS project, w.weight AS weight "
            "ORDER BY person, project",
        )
        assert answer["result_count"] == 3
        assert answer["truncated"] is False
        assert answer["execution_time_ms"] >= 0
        assert answer["cypher"].startswith("MATCH (p:Person)")
        found = {(r["person"], r["project"], r["weight"]) for r in answer["results"]}
        walked = await tool_value(
            client, "graph_query", {"entities": ["Alice", "Bob"], "max_hops": 1, "min_weight": 0}
        )
        names = {node["id"]: node["name"] for node in walked["nodes"]}
        expected = {
            (names[e["from"]], names[e["to"]], e["weight"])
            for e in walked["edges"]
            if e["type"] == "WORKS_ON"
        }
        assert (
            found
            == expected
            == {
                ("Alice", "Postgres Migration", 0.9),
                ("Alice", "Search Revamp", 0.4),
                ("Bob", "Postgres Migration", 0.6),
            }
        )


@pytest.mark.parametrize("era", ERAS)
async def test_the_issues_question_is_answered_with_parameters_and_properties(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        answer = await cypher(
            client,
            "MATCH (p:Person)-[w:WORKS_ON]->(x:Project)-[:USES]->(t:Technology {name: $tech}) "
            "RETURN p.name AS who, w.weight AS weight, p.properties AS props ORDER BY who",
            params={"tech": "Postgres"},
        )
        assert answer["results"] == [
            {"who": "Alice", "weight": 0.9, "props": {"role": "dev"}},
            {"who": "Bob", "weight": 0.6, "props": {}},
        ]
        typed = await cypher(
            client, "MATCH (a {name: 'Alice'})-[r]->(b) RETURN type(r) AS t ORDER BY t"
        )
        assert [row["t"] for row in typed["results"]] == ["KNOWS", "WORKS_ON", "WORKS_ON"]


REFUSED = [
    "CREATE (e:Entity {name: 'Mallory'})",
    "MERGE (e:Entity {name: 'Mallory'})",
    "MATCH (e:Entity {name: 'Alice'}) SET e.confidence = 0.0",
    "MATCH (e:Entity {name: 'Alice'}) DETACH DELETE e",
    "MATCH (e:Entity) RETURN count(*); COMMIT; CREATE (m:Entity {name: 'Mallory'})",
    "MATCH (e:Entity) WITH e LIMIT 1 CREATE (m:Entity {name: 'Mallory'})",
    "MATCH (e:Entity) /* hidden */ DELETE e",
]


@pytest.mark.parametrize("era", ERAS)
async def test_writes_and_multi_statements_are_refused_and_change_nothing(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        before = await cypher(client, "MATCH (e) RETURN e.name AS n, e.confidence AS c ORDER BY n")
        for query in REFUSED:
            message = await tool_error(client, "graph_cypher", {"cypher": query})
            assert "graph_cypher refused the query" in message, query
        after = await cypher(client, "MATCH (e) RETURN e.name AS n, e.confidence AS c ORDER BY n")
        assert after["results"] == before["results"]
        assert "Mallory" not in {row["n"] for row in after["results"]}


@pytest.mark.parametrize("era", ERAS)
async def test_file_reads_and_writes_are_refused_and_no_file_is_written(
    tmp_path: Path, era: str
) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("name\nhunter2\n")
    copied = tmp_path / "copied.csv"
    exported = tmp_path / "exported"
    async with graph_client(era, tmp_path / "data") as client:
        await seed(client)
        attempts = [
            f"LOAD FROM '{secret}' RETURN *",
            f"MATCH (e) WITH e LOAD FROM '{secret}' RETURN *",
            f"COPY (MATCH (e:Entity) RETURN e.name) TO '{copied}'",
            f"MATCH (e) RETURN e.name; COPY (MATCH (e:Entity) RETURN e.name) TO '{copied}'",
            f"EXPORT DATABASE '{exported}'",
            "CALL threads=1",
            "INSTALL json",
            f"ATTACH '{tmp_path / 'other.lbug'}' AS other",
        ]
        for query in attempts:
            message = await tool_error(client, "graph_cypher", {"cypher": query})
            assert "refused" in message, query
            assert "hunter2" not in message, query
        assert not copied.exists()
        assert not exported.exists()
        assert not (tmp_path / "other.lbug").exists()


@pytest.mark.parametrize("era", ERAS)
async def test_a_slow_query_is_stopped_by_the_timeout_and_the_next_query_works(
    tmp_path: Path, era: str
) -> None:
    write_config(tmp_path, 1000)
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        message = await tool_error(client, "graph_cypher", {"cypher": SLOW})
        assert "1 s limit" in message
        answer = await cypher(client, "MATCH (e:Person) RETURN count(*) AS n")
        assert answer["results"] == [{"n": 2}]


@pytest.mark.parametrize("era", ERAS)
async def test_a_query_that_crashes_the_engine_is_an_error_and_the_next_query_works(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        await cypher(client, "RETURN 1 AS one")
        message = await tool_error(client, "graph_cypher", {"cypher": "RETURN map(NULL, NULL)"})
        assert "rebuilt from the log" in message
        # A write while the worker is gone is in the rebuilt projection.
        await tool_value(
            client,
            "graph_relate",
            relate("Carol", "Person", "Search Revamp", "Project", "WORKS_ON"),
        )
        answer = await cypher(
            client,
            "MATCH (p)-[:WORKS_ON]->(x {name: 'Search Revamp'}) RETURN p.name AS n ORDER BY n",
        )
        assert [row["n"] for row in answer["results"]] == ["Alice", "Carol"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_query_that_exhausts_memory_is_an_error_and_the_next_query_works(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        message = await tool_error(
            client, "graph_cypher", {"cypher": "UNWIND range(1, 2000000000) AS x RETURN sum(x)"}
        )
        assert "memory" in message or "rebuilt" in message
        answer = await cypher(client, "MATCH (e) RETURN count(*) AS n")
        assert answer["results"] == [{"n": 5}]


@pytest.mark.parametrize("era", ERAS)
async def test_the_projection_follows_writes_made_after_it_was_built(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        count = "MATCH (e) RETURN count(*) AS n"
        assert (await cypher(client, count))["results"] == [{"n": 5}]
        await tool_value(
            client,
            "graph_relate",
            relate("Dana", "Person", "Postgres", "Technology", "USES", 0.3),
        )
        await tool_value(
            client,
            "graph_boost",
            {
                "from_name": "Alice",
                "to_name": "Search Revamp",
                "relation": "WORKS_ON",
                "amount": 0.2,
            },
        )
        await tool_value(
            client,
            "add_observations",
            {"observations": [{"entityName": "Bob", "contents": ["likes tea"]}]},
        )
        await tool_value(client, "graph_delete", {"entity_id": "Postgres Migration"})
        answer = await cypher(
            client,
            "MATCH (a)-[r]->(b) RETURN a.name AS src, r.type AS t, b.name AS dst, r.weight AS w "
            "ORDER BY src, t, dst",
        )
        assert answer["results"] == [
            {"src": "Alice", "t": "KNOWS", "dst": "Bob", "w": 0.7},
            {"src": "Alice", "t": "WORKS_ON", "dst": "Search Revamp", "w": 0.6},
            {"src": "Dana", "t": "USES", "dst": "Postgres", "w": 0.3},
        ]
        bob = await cypher(client, "MATCH (e {name: 'Bob'}) RETURN e.observations AS o")
        assert bob["results"] == [{"o": ["likes tea"]}]
        assert (await cypher(client, count))["results"] == [{"n": 5}]


@pytest.mark.parametrize("era", ERAS)
async def test_results_past_the_row_cap_are_dropped_and_flagged(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        answer = await cypher(client, "UNWIND range(1, 5000) AS x RETURN x")
        assert answer["result_count"] == 1000
        assert answer["truncated"] is True
        assert answer["results"][-1] == {"x": 1000}


@pytest.mark.parametrize("era", ERAS)
async def test_as_of_queries_the_graph_as_it_was(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        await tool_value(
            client, "graph_relate", relate("Ann", "Person", "Xylo", "Technology", "USES")
        )
        with watching(tmp_path) as watch:
            point = watch.position()
        await tool_value(
            client, "graph_relate", relate("Ben", "Person", "Xylo", "Technology", "USES")
        )
        now = await cypher(client, "MATCH (a)-[:USES]->(b) RETURN a.name AS n ORDER BY n")
        assert [r["n"] for r in now["results"]] == ["Ann", "Ben"]
        then = await cypher(
            client, "MATCH (a)-[:USES]->(b) RETURN a.name AS n ORDER BY n", as_of=point
        )
        assert [r["n"] for r in then["results"]] == ["Ann"]
        assert then["as_of"]["position"] == point


@pytest.mark.parametrize("era", ERAS)
async def test_bad_input_is_an_error_that_says_what_to_do(tmp_path: Path, era: str) -> None:
    async with graph_client(era, tmp_path) as client:
        assert "unknown argument" in await tool_error(
            client, "graph_cypher", {"cypher": "RETURN 1", "parameters": {}}
        )
        assert "start with MATCH" in await tool_error(client, "graph_cypher", {"cypher": "SHOW x"})
        message = await tool_error(client, "graph_cypher", {"cypher": "MATCH (n RETURN n"})
        assert "could not run the query" in message
        message = await tool_error(client, "graph_cypher", {"cypher": "MATCH (n:A|B) RETURN n"})
        assert "WHERE n.type IN" in message


EVERYTHING = (
    "MATCH (e:Entity) OPTIONAL MATCH (e)-[r:RELATES]->(o:Entity) "
    "RETURN e.name AS name, e.id AS id, e.type AS type, e.confidence AS confidence, "
    "e.times_mentioned AS mentioned, e.aliases AS aliases, e.properties AS props, "
    "e.observations AS observations, r.type AS rel, o.name AS other, r.weight AS weight, "
    "r.valid_at AS valid_at, r.invalid_at AS invalid_at, r.evidence AS evidence "
    "ORDER BY name, rel, other"
)


@pytest.mark.parametrize("era", ERAS)
async def test_the_projection_kept_by_changes_equals_one_built_afresh(
    tmp_path: Path, era: str
) -> None:
    async with graph_client(era, tmp_path) as client:
        await seed(client)
        applied = "RETURN 1 AS applied"  # each change reaches the worker on its own
        await cypher(client, applied)
        await create_slug_twins(client)
        await cypher(client, applied)
        await memory_write(
            client,
            "update_entities",
            {
                "entities": [
                    {"name": "Bob", "newName": "Robert"},
                    {"name": "Postgres", "newEntityType": "Database"},
                ]
            },
        )
        await cypher(client, applied)
        await tool_value(
            client,
            "graph_relate",
            {**relate("Alice", "Person", "Search Revamp", "Project", "WORKS_ON", 0.95),
             "valid_at": "2026-03-01", "evidence": "standup"},
        )  # fmt: skip
        await cypher(client, applied)
        await tool_value(
            client,
            "graph_merge",
            {"source_id": "Search Revamp", "target_id": "Postgres Migration", "reason": "same"},
        )
        await cypher(client, applied)
        await memory_write(
            client,
            "add_observations",
            {"observations": [{"entityName": "data lake", "contents": ["raw files", "old"]}]},
        )
        await cypher(client, applied)
        await memory_write(
            client,
            "delete_observations",
            {"deletions": [{"entityName": "data lake", "observations": ["old"]}]},
        )
        await cypher(client, applied)
        await tool_value(client, "graph_delete", {"entity_id": "Data Lake"})
        await cypher(client, applied)
        kept = await cypher(client, EVERYTHING)
        with watching(tmp_path) as watch:
            position = watch.position()
        fresh = await cypher(client, EVERYTHING, as_of=position)
        assert fresh["as_of"]["position"] == position
        assert kept["results"] == fresh["results"]
        names = {row["name"] for row in kept["results"]}
        assert {"Robert", "data lake", "Postgres Migration"} <= names
        assert not names & {"Bob", "Data Lake", "Search Revamp"}
        twin = next(row for row in kept["results"] if row["name"] == "data lake")
        assert twin["id"] == "data-lake"  # its twin is gone: the slug is its id again
        assert twin["observations"] == ["raw files"]
