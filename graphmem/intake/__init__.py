"""The graph family's intake side: the document queue graph_ingest fills and reports
(ingest_queue), and Claude Code session transcripts read through one canonical parser
(transcript: pure; transcript_files: finding and streaming the file)."""

from graphmem.intake.ingest_queue import (
    MAX_CONTENT_BYTES,
    MAX_PENDING_LISTED,
    IngestError,
    Queued,
    check_meta,
    queue_content,
    queue_file,
    queue_status,
)
from graphmem.intake.transcript import Message, Page, TranscriptReader, read_lines
from graphmem.intake.transcript_files import (
    MAX_LINE_BYTES,
    TranscriptError,
    find_session,
    read_transcript,
    transcript_path,
)

__all__ = [
    "MAX_CONTENT_BYTES",
    "MAX_LINE_BYTES",
    "MAX_PENDING_LISTED",
    "IngestError",
    "Message",
    "Page",
    "Queued",
    "TranscriptError",
    "TranscriptReader",
    "check_meta",
    "find_session",
    "queue_content",
    "queue_file",
    "queue_status",
    "read_lines",
    "read_transcript",
    "transcript_path",
]
