"""Definitions of graph_validate, graph_communities and graph_build_context (contract §8.19,
8.20, 8.21): names, descriptions, input schemas and annotations (§9: read only)."""

from __future__ import annotations

from graphmem.tools.graph_read_schemas import GRAPH_AS_OF
from graphmem.tools.memory_schemas import READ, tool
from graphmem.tools.schema import Schema, obj, string

__all__ = ["GRAPH_BUILD_CONTEXT", "GRAPH_COMMUNITIES", "GRAPH_VALIDATE"]


def _integer(description: str, low: int, high: int | None, default: int) -> Schema:
    schema: Schema = {"type": "integer", "minimum": low, "default": default}
    if high is not None:
        schema["maximum"] = high
    schema["description"] = description
    return schema


GRAPH_VALIDATE = tool(
    "graph_validate",
    "Validate Graph",
    "Find low-quality entities: generic names (high), names that are references such as "
    "'the project' (high), near-duplicates differing only in case or punctuation (medium), "
    "typed entities whose observations do not conform to their schema (medium) and orphans "
    "with no edges, low confidence and one mention (low). Ordered by severity, then name.",
    obj(
        {
            "source_session": string(
                "Only entities with an edge from this session, or that property themselves"
            ),
            "max_issues": _integer("The most issues to return", 1, 200, 50),
            "as_of": GRAPH_AS_OF,
        }
    ),
    None,
    READ,
)

GRAPH_COMMUNITIES = tool(
    "graph_communities",
    "Find Communities",
    "Group entities into communities: from the best-connected hubs, breadth-first over strong "
    "current edges (weight above weight_threshold), never taking an entity an earlier "
    "community holds. Returns each community's seed, size, dominant type and members (at "
    "most 30 shown), and how much of the graph they cover.",
    obj(
        {
            "weight_threshold": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.4,
                "description": "Only edges heavier than this (strictly) connect a community",
            },
            "max_communities": _integer("The most communities to form", 1, 30, 10),
            "max_hops": _integer(
                "How far from its hub a community reaches (above 4: 4, with a warning)", 1, None, 3
            ),
            "min_size": _integer("Drop communities smaller than this", 2, None, 2),
            "as_of": GRAPH_AS_OF,
        }
    ),
    None,
    READ,
)

GRAPH_BUILD_CONTEXT = tool(
    "graph_build_context",
    "Build Session Context",
    "One call for a session's opening context: graph health, pending work (unprocessed "
    "transcripts, queued documents, the last dream run), recent additions, top hubs, "
    "unresolved contradictions and, with a topic, its neighbourhood (a 2-hop graph_query).",
    obj(
        {
            "topic": string("An entity to centre on: name, alias or id (keyword fallback)"),
            "project_cwd": string("A project's name or a directory inside it, for the topic"),
            "recent_days": _integer("What counts as recent, in days", 1, 90, 7),
            "hub_count": _integer("The most hubs to list", 1, 20, 5),
            "include_contradictions": {
                "type": "boolean",
                "default": True,
                "description": "List the unresolved contradictions",
            },
            "max_recent": _integer("The most recent entities to list", 1, 50, 15),
            "as_of": GRAPH_AS_OF,
        }
    ),
    None,
    READ,
)
