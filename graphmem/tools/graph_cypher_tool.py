"""graph_cypher (contract §8.8, issue 19): read-only Cypher over the graph's projection in a
supervised LadybugDB worker (graphmem.cypher). Listed only when the `cypher` extra is
installed; the query runs on a worker thread, the worker answers within its deadline.
"""

from __future__ import annotations

from typing import Any

import anyio

from graphmem.cypher.gate import MAX_QUERY_CHARS, CypherRefusedError
from graphmem.cypher.rows import snapshot
from graphmem.cypher.service import CypherAnswer, CypherEngineError, CypherService
from graphmem.tools.as_of import query_as_of, resolve_as_of
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    error,
    invalid_arguments,
    ok,
)
from graphmem.tools.graph_args import GraphArgs, parse_graph_args
from graphmem.tools.graph_read_schemas import GRAPH_AS_OF
from graphmem.tools.memory_schemas import READ, tool
from graphmem.tools.schema import obj, string

__all__ = ["GRAPH_CYPHER", "GRAPH_CYPHER_TOOLS"]

TOOL = "graph_cypher"

GRAPH_CYPHER = tool(
    TOOL,
    "Cypher Query (read-only)",
    "Run one read-only Cypher query over the graph (LadybugDB dialect). Model: nodes "
    "(:Entity {name (the key), id, type, subtype, confidence, times_mentioned, first_seen, "
    "last_seen, source_file, aliases, properties, observations}); relations "
    "[:RELATES {type, weight, valid_at, invalid_at (null: current), ingested_at, "
    "last_confirmed, source_session, source_transcript, source_type, evidence, properties}]. "
    "Neo4j-style labels work: (p:Person) means (p:Entity {type: 'Person'}) and "
    "[w:WORKS_ON] means [w:RELATES {type: 'WORKS_ON'}]; type(r) and labels(n) are rewritten. "
    "properties is a string map (non-string values as JSON text): read it with "
    "map_extract(n.properties, 'key') (a list). No list comprehensions, shortestPath "
    "(use -[* SHORTEST 1..5]->), APOC, or size() of a pattern (use COUNT { ... }). Writes, "
    "LOAD/COPY/EXPORT, CALL and multiple statements are refused. Results: at most 1,000 rows "
    "(truncated is then true); queries stop after 5 s.",
    obj(
        {
            "cypher": string(
                "One read query: MATCH / OPTIONAL MATCH / WITH / UNWIND / RETURN",
                maxLength=MAX_QUERY_CHARS,
            ),
            "params": {
                "type": "object",
                "description": "Values for $parameters in the query",
                "default": {},
            },
            "as_of": GRAPH_AS_OF,
        },
        ["cypher"],
    ),
    None,
    READ,
)


class CypherArgs(GraphArgs, frozen=True):
    cypher: str
    params: dict[str, Any] = {}
    as_of: Any = None


def _service(ctx: ToolContext) -> CypherService:
    family = ctx.family
    if family is None or family.cypher is None:
        raise ToolInputError(
            invalid_arguments(
                TOOL,
                "graph_cypher is not served; install graphmem[cypher] and start with --tools graph",
            )
        )
    return family.cypher


async def cypher_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    args = parse_graph_args(TOOL, raw, CypherArgs)
    service = _service(ctx)
    point = None
    try:
        if args.as_of is None:
            answer: CypherAnswer = await anyio.to_thread.run_sync(
                service.query, args.cypher, args.params
            )
        else:
            point = await resolve_as_of(ctx, TOOL, args.as_of)
            rows = await query_as_of(ctx, TOOL, point, lambda models: snapshot(models.graph))
            answer = await anyio.to_thread.run_sync(
                service.query_snapshot, rows, args.cypher, args.params
            )
    except CypherRefusedError as refused:
        return error(f"graph_cypher refused the query: {refused}")
    except CypherEngineError as failed:
        return error(_engine_message(failed, service))
    value: dict[str, Any] = {
        "cypher": args.cypher,
        "results": answer.results,
        "result_count": len(answer.results),
        "execution_time_ms": answer.execution_time_ms,
        "truncated": answer.truncated,
    }
    if answer.cypher != args.cypher:
        value["rewritten"] = answer.cypher
    if point is not None:
        value["as_of"] = point.value()
    return ok(value, value)


def _engine_message(failed: CypherEngineError, service: CypherService) -> str:
    seconds = service.timeout_ms / 1000
    if failed.kind == "timeout":
        return (
            f"graph_cypher stopped the query at its {seconds:g} s limit; narrow it (a start "
            "node, fewer hops, a LIMIT)"
        )
    if failed.kind == "gone":
        return (
            f"the Cypher engine stopped while running this query ({failed}); it is rebuilt "
            "from the log for the next call. Simplify the query if it happens again"
        )
    if failed.kind == "memory" or "bad_alloc" in str(failed):
        return "graph_cypher ran out of memory on this query; narrow it (LIMIT, fewer rows)"
    return f"graph_cypher could not run the query: {failed}"


GRAPH_CYPHER_TOOLS: tuple[ToolSpec, ...] = (ToolSpec(GRAPH_CYPHER, cypher_tool),)
