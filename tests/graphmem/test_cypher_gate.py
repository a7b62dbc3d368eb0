"""The lexical gate of graph_cypher (its first read-only layer) and the Neo4j label rewrite:
pure, no engine needed."""

from __future__ import annotations

import pytest

from graphmem.cypher.gate import MAX_QUERY_CHARS, CypherRefusedError, gate

HOSTILE = [
    "CREATE (n:Entity {name: 'x'})",
    "MERGE (n:Entity {name: 'x'})",
    "MATCH (n) SET n.name = 'x'",
    "MATCH (n) REMOVE n.name",
    "MATCH (n) DELETE n",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n) RETURN n; COMMIT; CREATE (m:Entity {name: 'x'})",
    "MATCH (n) RETURN n ; MATCH (m) RETURN m",
    "MATCH (n) WITH n LOAD FROM '/etc/passwd' RETURN *",
    "MATCH (n) WITH n. LOAD FROM '/etc/passwd' RETURN *",
    "LOAD FROM '/etc/passwd' RETURN *",
    "COPY (MATCH (n) RETURN n.name) TO '/tmp/out.csv'",
    "EXPORT DATABASE '/tmp/dump'",
    "IMPORT DATABASE '/tmp/dump'",
    "ATTACH '/tmp/other' AS other (dbtype lbug)",
    "INSTALL json",
    "CALL threads = 1",
    "CALL current_setting('threads') RETURN *",
    "BEGIN TRANSACTION",
    "MATCH (n) /* DETACH */ DETACH DELETE n",
    "MATCH (n) // tidy\nDELETE n",
    "MATCH (n) RETURN 'unterminated",
    "MATCH (n) RETURN n /* unterminated",
    "MATCH (n) RETURN `unterminated",
    "UNWIND [1] AS x FOREACH (y IN [1] | CREATE (:Entity {name: 'x'}))",
    "DROP TABLE Entity",
    "ALTER TABLE Entity ADD x INT64",
    "CHECKPOINT",
    "",
    "   ;  ",
]

ACCEPTED = {
    "MATCH (n) RETURN 'CREATE (x)' AS text": "MATCH (n) RETURN 'CREATE (x)' AS text",
    "MATCH (n) WHERE n.set = 1 RETURN n.delete": "MATCH (n) WHERE n.set = 1 RETURN n.delete",
    "MATCH (n:Entity) RETURN n.name;": "MATCH (n:Entity) RETURN n.name",
    "MATCH (n) RETURN n // a comment with DELETE": "MATCH (n) RETURN n",
    'RETURN "it\\"s; DELETE" AS s': 'RETURN "it\\"s; DELETE" AS s',
    "MATCH (n)-[r:`CREATE`]->(m) RETURN r": (
        "MATCH (n)-[r:RELATES {type: 'CREATE'}]->(m) RETURN r"
    ),
    "UNWIND range(1, 3) AS x RETURN x": "UNWIND range(1, 3) AS x RETURN x",
    "CALL show_tables() RETURN *": "CALL show_tables() RETURN *",
    "MATCH (n) RETURN n.name[1..3]": "MATCH (n) RETURN n.name[1..3]",
}

REWRITES = {
    "MATCH (p:Person)-[w:WORKS_ON]->(x:Project) RETURN p.name, w.weight": (
        "MATCH (p:Entity {type: 'Person'})-[w:RELATES {type: 'WORKS_ON'}]->"
        "(x:Entity {type: 'Project'}) RETURN p.name, w.weight"
    ),
    "MATCH (p:Entity:Person {name: $n}) RETURN p": (
        "MATCH (p:Entity {type: 'Person', name: $n}) RETURN p"
    ),
    "MATCH (:Person)<-[:KNOWS]-(b) RETURN type(r), labels(b)": (
        "MATCH (:Entity {type: 'Person'})<-[:RELATES {type: 'KNOWS'}]-(b) "
        "RETURN r.type, ['Entity', b.type]"
    ),
    "MATCH (a)-[:KNOWS*1..3]->(b) RETURN b": (
        "MATCH (a)-[:RELATES*1..3 (_gm_r, _gm_n | WHERE _gm_r.type IN ['KNOWS'])]->(b) RETURN b"
    ),
    "MATCH (a:`Odd 'Type`) RETURN a": "MATCH (a:Entity {type: 'Odd \\'Type'}) RETURN a",
    "MATCH (a:Entity)-[r:RELATES]->(b) RETURN r.type": (
        "MATCH (a:Entity)-[r:RELATES]->(b) RETURN r.type"
    ),
}


@pytest.mark.parametrize("query", HOSTILE)
def test_a_hostile_or_malformed_query_is_refused(query: str) -> None:
    with pytest.raises(CypherRefusedError):
        gate(query)


@pytest.mark.parametrize(("query", "expected"), ACCEPTED.items())
def test_a_read_with_keywords_in_strings_comments_or_property_names_is_accepted(
    query: str, expected: str
) -> None:
    assert gate(query) == expected


@pytest.mark.parametrize(("query", "expected"), REWRITES.items())
def test_neo4j_labels_and_functions_are_rewritten_onto_the_two_tables(
    query: str, expected: str
) -> None:
    assert gate(query) == expected


def test_label_alternatives_and_two_types_are_refused_with_the_form_to_write_instead() -> None:
    with pytest.raises(CypherRefusedError, match=r"WHERE n.type IN"):
        gate("MATCH (n:Person|Project) RETURN n")
    with pytest.raises(CypherRefusedError, match="one type"):
        gate("MATCH (n:Person:Project) RETURN n")
    with pytest.raises(CypherRefusedError, match=r"r.type IN"):
        gate("MATCH (a)-[r:KNOWS|USES]->(b) RETURN r")


def test_a_pattern_size_is_refused_because_the_engine_miscounts_it() -> None:
    with pytest.raises(CypherRefusedError, match="COUNT"):
        gate("MATCH (a) RETURN size((a)-->())")


def test_an_overlong_query_is_refused_naming_the_limit() -> None:
    with pytest.raises(CypherRefusedError, match=str(MAX_QUERY_CHARS)):
        gate("RETURN 1 " + " " * MAX_QUERY_CHARS)
