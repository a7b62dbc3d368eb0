"""graph_ingest and graph_read_transcript (contract §8.7, §8.16): the arguments (strict, see
graph_args) and the answers; the files are graphmem.intake's, read and written on a worker
thread so a large copy or transcript never holds up the event loop."""

from __future__ import annotations

from typing import Any, Literal

import anyio

from graphmem.intake import (
    IngestError,
    Page,
    TranscriptError,
    check_meta,
    find_session,
    queue_content,
    queue_file,
    queue_status,
    read_transcript,
    transcript_path,
)
from graphmem.tools import graph_intake_schemas as s
from graphmem.tools.base import (
    ToolContext,
    ToolInputError,
    ToolOutcome,
    ToolSpec,
    check_text,
    invalid_arguments,
    ok,
)
from graphmem.tools.graph_args import GraphArgs, check_range, parse_graph_args, time_ms
from graphmem.tools.graph_write_values import family_of

__all__ = ["GRAPH_INTAKE_TOOLS"]

MAX_LIMIT = 5000
MAX_PATH_CHARS = 4096


class IngestArgs(GraphArgs, frozen=True):
    action: Literal["queue", "status"]
    file_path: str | None = None
    content: str | None = None
    file_name: str | None = None
    meta: dict[str, Any] | None = None


class TranscriptArgs(GraphArgs, frozen=True):
    session_id: str | None = None
    file_path: str | None = None
    text_only: bool = True
    since: str | None = None
    offset: int = 0
    limit: int = 500


def _refused(tool: str, detail: str) -> ToolInputError:
    return ToolInputError(invalid_arguments(tool, detail))


def _path_text(tool: str, value: str, where: str) -> None:
    check_text(tool, value, where, MAX_PATH_CHARS, multiline=False)


# --- graph_ingest -----------------------------------------------------------------------------


def _utf8(tool: str, content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError:
        raise _refused(
            tool, "content contains invalid Unicode (a lone surrogate); send valid UTF-8"
        ) from None


def _queue_form(tool: str, args: IngestArgs) -> None:
    if args.file_path is not None and args.content is not None:
        raise _refused(tool, "give file_path or content with file_name, not both")
    if args.file_path is None and args.content is None:
        raise _refused(
            tool, "queue needs file_path (a file on the server) or content with file_name"
        )
    if args.content is not None and args.file_name is None:
        raise _refused(tool, "content needs file_name, a plain name ending .md, .txt or .json")
    if args.file_path is not None and args.file_name is not None:
        raise _refused(
            tool, "file_name goes with content; a file_path is queued under its own name"
        )


async def ingest_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_ingest"
    args = parse_graph_args(tool, raw, IngestArgs)
    home = family_of(ctx, tool).home
    if args.action == "status":
        given = [n for n in ("file_path", "content", "file_name", "meta") if n in raw]
        if given:
            raise _refused(tool, f"status takes no {', '.join(given)}; only queue does")
        value = await anyio.to_thread.run_sync(queue_status, home)
        return ok(value, value)
    _queue_form(tool, args)
    try:
        meta = None if args.meta is None else check_meta(args.meta)
        if args.content is not None and args.file_name is not None:
            _path_text(tool, args.file_name, "file_name")
            content = _utf8(tool, args.content)
            queued = await anyio.to_thread.run_sync(
                queue_content, home, args.file_name, content, meta
            )
        else:
            assert args.file_path is not None
            _path_text(tool, args.file_path, "file_path")
            queued = await anyio.to_thread.run_sync(queue_file, home, args.file_path, meta)
    except IngestError as problem:
        raise _refused(tool, f"{problem}. Nothing was queued.") from None
    except OSError as problem:
        raise _refused(
            tool,
            f"cannot write to {home / 'ingest'} ({problem.strerror}); nothing was queued. "
            "Make the graph home writable and call again.",
        ) from None
    value = {
        "action": "queued",
        "file": queued.file,
        "destination": str(queued.destination),
        "meta_written": queued.meta_written,
    }
    return ok(value, value)  # files only: the graph, and its resource, are unchanged


# --- graph_read_transcript --------------------------------------------------------------------


async def transcript_tool(ctx: ToolContext, raw: dict[str, Any]) -> ToolOutcome:
    tool = "graph_read_transcript"
    args = parse_graph_args(tool, raw, TranscriptArgs)
    family = family_of(ctx, tool)
    if args.offset < 0:
        raise _refused(tool, f"offset is {args.offset}; it must be 0 or more")
    check_range(tool, args.limit, "limit", 1, MAX_LIMIT)
    page = Page(args.text_only, time_ms(tool, args.since, "since"), args.offset, args.limit)
    try:
        if args.file_path is not None:
            _path_text(tool, args.file_path, "file_path")
            path = transcript_path(args.file_path)
        elif args.session_id is not None:
            _path_text(tool, args.session_id, "session_id")
            if family.transcripts_dir is None:
                raise TranscriptError("no transcripts folder is set (GRAPHMEM_TRANSCRIPTS_DIR)")
            path = await anyio.to_thread.run_sync(
                find_session, family.transcripts_dir, args.session_id
            )
        else:
            raise TranscriptError("give session_id or file_path")
        reader = await anyio.to_thread.run_sync(read_transcript, path, page)
    except TranscriptError as problem:
        raise _refused(tool, str(problem)) from None
    value = reader.value()
    return ok(value, value)


GRAPH_INTAKE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(s.GRAPH_INGEST, ingest_tool),
    ToolSpec(s.GRAPH_READ_TRANSCRIPT, transcript_tool),
)
