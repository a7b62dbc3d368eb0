"""Definitions of graph_ingest and graph_read_transcript (contract §8.7, §8.16, §9): names,
descriptions, input schemas describing every argument, closed output schemas, annotations."""

from __future__ import annotations

from graphmem.tools.definition import ToolAnnotations
from graphmem.tools.memory_schemas import READ, tool
from graphmem.tools.schema import Schema, array, closed_copy, obj, root, string

__all__ = ["GRAPH_INGEST", "GRAPH_READ_TRANSCRIPT"]

# Queueing writes files, never the graph; queueing the same document again replaces it.
QUEUES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

_COUNT: Schema = {"type": "integer", "minimum": 0}
_NULLABLE_COUNT: Schema = {"type": ["integer", "null"], "minimum": 0}
_NULLABLE_STRING: Schema = {"type": ["string", "null"]}
_INTEGER_OR_NULL: Schema = {"type": ["integer", "null"], "minimum": 0}

_META = obj(
    {
        "source": string(
            "Where the document comes from (claude-code-cloud marks a cloud "
            "session's messages: status then reports its cursor)"
        ),
        "author": string("Who wrote it"),
        "date": string("When it was written"),
        "session_id": string("The session it was taken from"),
        "through": string("ISO time of the newest message it holds"),
        "last_event_id": string("Id of the newest message it holds"),
        "topic_hints": array(string(), "Topics to look for"),
        "weight_override": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Weight for the facts extracted from it",
        },
    },
    description="Sidecar written beside the document as <file>.meta.json; other keys are kept "
    "as given",
)

INGEST_OUTPUT = root(
    closed_copy(
        obj(
            {
                "action": {"enum": ["queued"], "description": "Present after queueing"},
                "file": string("The queued document's name"),
                "destination": string("Its absolute path in <graph home>/ingest/pending"),
                "meta_written": {"type": "boolean"},
                "pending": array(
                    obj(
                        {
                            "file": string(),
                            "queued_at": string(),
                            "size": string('KiB to one decimal, as "2.1 KB"'),
                            "size_bytes": _COUNT,
                        },
                        ["file", "queued_at", "size", "size_bytes"],
                    ),
                    "Pending documents, oldest first (at most 200; pending_count counts all)",
                ),
                "recently_completed": array(
                    obj(
                        {
                            "file": string(),
                            "processed_at": string(),
                            "entities": _NULLABLE_COUNT,
                            "edges": _NULLABLE_COUNT,
                        },
                        ["file", "processed_at", "entities", "edges"],
                    ),
                    "The five newest completed documents",
                ),
                "pending_count": _COUNT,
                "completed_count": _COUNT,
                "session_cursors": {
                    "type": "object",
                    "description": "Per cloud session id, the newest queued cursor",
                },
            },
        )
    )
)
# closed_copy closes "session_cursors" itself; its keys are session ids, each holding a cursor.
INGEST_OUTPUT["properties"]["session_cursors"]["additionalProperties"] = obj(
    {"through": string(), "last_event_id": _NULLABLE_STRING, "file": string()},
    ["through", "last_event_id", "file"],
    closed=True,
)

GRAPH_INGEST = tool(
    "graph_ingest",
    "Queue Document",
    "Queue a document for later extraction into the graph, or report the queue (no "
    "extraction happens here). queue: give file_path (an absolute path of a file on the "
    "server, copied) or content with file_name (inline text, at most 2 MB); the name must be "
    "a plain file name ending .md, .txt or .json. It goes to <graph home>/ingest/pending/, "
    "replacing a pending document of the same name, with meta written beside it as "
    "<file>.meta.json. status: the pending documents (oldest first), the five newest "
    "completed, full counts, and per cloud session the newest queued cursor.",
    obj(
        {
            "action": {
                "type": "string",
                "enum": ["queue", "status"],
                "description": "queue a document, or report the queue's status",
            },
            "file_path": string(
                "queue: absolute path (~ expanded) of a .md, .txt or .json file on the server"
            ),
            "content": string("queue: the document's text inline, at most 2 MB of UTF-8"),
            "file_name": string("With content: a plain file name ending .md, .txt or .json"),
            "meta": _META,
        },
        ["action"],
    ),
    INGEST_OUTPUT,
    QUEUES,
)

_MESSAGE = obj(
    {
        "role": {"enum": ["user", "assistant", "system"]},
        "text": string("The message's text (text blocks joined; tool calls and results left out)"),
        "timestamp": _NULLABLE_STRING,
        "uuid": _NULLABLE_STRING,
        "parentUuid": _NULLABLE_STRING,
        "session_id": _NULLABLE_STRING,
        "cwd": _NULLABLE_STRING,
        "meta": {"type": "boolean", "description": "An injected message (a command caveat)"},
    },
    ["role", "text", "timestamp", "uuid", "parentUuid", "session_id", "cwd"],
)

TRANSCRIPT_OUTPUT = root(
    closed_copy(
        obj(
            {
                "session_id": _NULLABLE_STRING,
                "cwd": _NULLABLE_STRING,
                "format_version": {"enum": ["v1", "unknown"]},
                "line_count": _COUNT,
                "message_count": _COUNT,
                "text_message_count": _COUNT,
                "messages": array(_MESSAGE),
                "next_offset": _INTEGER_OR_NULL,
                "warnings": array(string()),
            },
            [
                "session_id",
                "cwd",
                "format_version",
                "line_count",
                "message_count",
                "text_message_count",
                "messages",
                "next_offset",
                "warnings",
            ],
        )
    )
)

GRAPH_READ_TRANSCRIPT = tool(
    "graph_read_transcript",
    "Read Transcript",
    "Read a Claude Code session transcript (JSONL) as messages: role, text, time and ids. "
    "Give session_id (looked up one folder below GRAPHMEM_TRANSCRIPTS_DIR) or file_path "
    "(absolute, .jsonl; wins over session_id). Tool calls, tool results and thinking are "
    "left out; text_only (default) keeps messages with text and drops injected ones. since "
    "keeps messages stamped later; offset and limit page through them (next_offset).",
    obj(
        {
            "session_id": string(
                "The session's id: letters, digits, '.', '_' and '-', no '..' (the "
                "transcript's file name without .jsonl)"
            ),
            "file_path": string("Absolute path of a .jsonl transcript; wins over session_id"),
            "text_only": {
                "type": "boolean",
                "default": True,
                "description": "Keep only messages with text, without injected ones",
            },
            "since": string("ISO time: only messages stamped later (a resumed session's delta)"),
            "offset": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "Index of the first selected message to return",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 5000,
                "default": 500,
                "description": "Most messages to return (1-5000)",
            },
        }
    ),
    TRANSCRIPT_OUTPUT,
    READ,
)
