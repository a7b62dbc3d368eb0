"""The server instructions: what `initialize` tells a client of the tools of its profile."""

from __future__ import annotations

from collections.abc import Iterable

from graphmem.cypher import INSTALL_HINT
from graphmem.cypher import available as cypher_available

__all__ = ["instructions"]

MEMORY_INSTRUCTIONS = (
    "graphmem is a knowledge-graph memory: entities (with a type and observations) and typed "
    "relations between them. Call read_graph, search_nodes or open_nodes before answering "
    "from memory; record new facts with create_entities, create_relations and "
    "add_observations. Every change is kept in an append-only log, so nothing is lost.\n\n"
    "To change what is already there, prefer the extension tools to composing delete_* and "
    "create_* calls (which lose observations and relations and race with other writers); each "
    "is one atomic call: update_entities renames an entity and/or changes its type, moving its "
    "observations and relations with it; update_observations replaces an observation's "
    "content; update_relations changes a relation's type or endpoints; merge_entities folds a "
    "duplicate entity into another (observations unioned, relations repointed). read_conflicts "
    "lists what more than one machine wrote and which write was kept (view all: with superseded "
    "edges and contradictions too); read_history lists "
    "every change ever made to an entity, with when, by which tool and client (the provenance "
    "of a fact). On a large graph, read_graph and search_nodes take limit/offset (and "
    "search_nodes an entityType filter) to read a page at a time; the read tools take as_of "
    "(a log position or an ISO time) to answer as the graph was then."
)
MESH_INSTRUCTIONS = (
    'The graph is one of nodes (a name, a nodeType and "Key: Value" metadata strings) and '
    "directed, weighted edges (from, to, edgeType, weight in [0, 1], default 1). Read it with "
    "read_graph, search_nodes or open_nodes (search and open also return each match's "
    "neighbours and the edges to them); change it with add_nodes, update_nodes, delete_nodes "
    "(which removes the node's edges too), add_edges, update_edges (weight is new evidence, "
    "averaged with the current weight), delete_edges, add_metadata and delete_metadata. Each "
    "call is atomic: on an error nothing is written, and the answer suggests what to do."
)
SCHEMA_INSTRUCTIONS = (
    "Typed entities: each entity-type schema in force has add_<type>, update_<type> and "
    "delete_<type> tools (e.g. add_person), taking the properties under the type's name, e.g. "
    '{"person": {"name": ...}}. They check required properties and allowed values, store '
    'each property as a "Key: Value" observation, and turn relationship properties into '
    "relations (their targets must already exist). update_<type> changes only the properties "
    "given; delete_<type> removes the entity and its relations. The tool list changes when "
    "schema files change (notifications/tools/list_changed)."
)


GRAPH_INSTRUCTIONS = (
    "Weighted, time-bounded knowledge (graph_* tools): graph_relate records facts as edges "
    "between entities (created when missing) with a weight in [0, 1], evidence, provenance "
    "and an optional valid_at; a dated fact supersedes the source's earlier target of the same "
    "relation. graph_query walks up to 4 hops from entities (current facts by default), "
    "graph_entities searches (misspelt names too) and lists, graph_boost and graph_weaken "
    "adjust a fact's weight, "
    "graph_contradictions lists CONTRADICTS edges (include_conflicts: with replica conflicts and "
    "superseded edges), graph_validate flags low-quality entities, graph_communities clusters, "
    "graph_build_context opens a session, graph_stats summarises, graph_delete removes "
    "an entity and its edges, graph_export writes a JSONL backup, graph_audit appends to the "
    "audit log. graph_decay lets unconfirmed knowledge fade (also run daily by the server), "
    "graph_prune previews or removes what fell below the thresholds. Every read takes as_of "
    "(a log position or an ISO time) to read the past. Each call is atomic: on an error "
    "nothing is written. graph_merge folds a duplicate into the entity it duplicates (dry_run "
    "shows the counts first); graph_unmerge splits a wrong merge; graph_merge_suggestions "
    "finds likely duplicates to review before merging."
)
CYPHER_ON = (
    " graph_cypher runs one read-only Cypher query (Neo4j-style labels work) for what no "
    "fixed tool answers."
)
CYPHER_OFF = (
    " graph_cypher (read-only Cypher) is not available: install the extra with "
    f"`{INSTALL_HINT}` and restart to enable it."
)


def instructions(families: Iterable[str]) -> str:
    """The server instructions for a tool profile: one paragraph per family it serves."""
    chosen = set(families)
    parts = [
        text
        for family, text in (
            ("memory", MEMORY_INSTRUCTIONS),
            ("mesh", MESH_INSTRUCTIONS),
            ("schema", SCHEMA_INSTRUCTIONS),
            ("graph", GRAPH_INSTRUCTIONS + (CYPHER_ON if cypher_available() else CYPHER_OFF)),
        )
        if family in chosen
    ]
    return "\n\n".join(parts)
