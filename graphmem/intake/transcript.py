"""The canonical parser of Claude Code session transcripts (contract §8.16): pure, fed one
line at a time, so a file of any size is read in bounded memory by whoever owns the file.

- Blank lines are skipped and not counted; `n` in `Line <n>: …` counts the others from 1.
- A line that is not JSON, not an object, or has no string `type` adds a warning and is
  skipped. Lines of any other `type` than user, assistant, system (queue-operation,
  attachment, last-prompt, summary, file-history-snapshot, kinds not yet invented) are skipped
  silently, as are lines without a `message` object and messages whose role (`message.role`,
  else the line's `type`) is not one of the three.
- Text: `message.content` as a string, or the `text` of its `text` blocks joined with `\\n`;
  trimmed either way (upstream trims both). tool_use, tool_result, thinking and any other
  block contribute nothing: a tool result's content is never returned.
- `isMeta: true` (injected command caveats) marks a message `meta`; text-only reading keeps
  the messages with non-empty text and no `meta`.
- Format: `v1` when one of the first five lines that parse as JSON objects has `type`,
  `message` and `sessionId`; else `unknown`, with a warning.

Paging selects after text_only and `since`, keeps only the page `[offset, offset + limit)`
and counts the rest, so memory holds one page whatever the transcript's length. Warnings are
kept up to MAX_WARNINGS, then summarised in one more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from projections.graph_time import TimeFormatError, parse_time
from projections.json_depth import nesting_exceeds

__all__ = [
    "MAX_NESTING",
    "MAX_WARNINGS",
    "Message",
    "Page",
    "TranscriptReader",
    "message_of",
    "read_lines",
]

ROLES = frozenset({"user", "assistant", "system"})
# Claude Code's lines nest a handful of levels (a tool input inside a content block inside a
# message); far deeper is hostile or broken, and refused before the parser recurses.
MAX_NESTING = 200
MAX_WARNINGS = 100
_FORMAT_SAMPLE = 5
FORMAT_WARNING = (
    "Unrecognised transcript format: none of the first lines has type, message and sessionId. "
    "The Claude Code transcript format may have changed; messages may be missing."
)
_decode = msgspec.json.Decoder().decode


@dataclass(frozen=True)
class Message:
    """One user, assistant or system message of a transcript."""

    role: str
    text: str
    timestamp: str | None
    uuid: str | None
    parent_uuid: str | None
    session_id: str | None
    cwd: str | None
    meta: bool = False

    @property
    def has_text(self) -> bool:
        """Kept by text-only reading: some text, and not an injected meta message."""
        return bool(self.text) and not self.meta

    def value(self) -> dict[str, Any]:
        value: dict[str, Any] = {
            "role": self.role,
            "text": self.text,
            "timestamp": self.timestamp,
            "uuid": self.uuid,
            "parentUuid": self.parent_uuid,
            "session_id": self.session_id,
            "cwd": self.cwd,
        }
        if self.meta:
            value["meta"] = True
        return value


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(parts).strip()


def message_of(line: dict[str, Any]) -> Message | None:
    """The message a decoded line carries, or None when the line carries none."""
    kind = line.get("type")
    if kind not in ROLES:
        return None
    message = line.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    role = role if isinstance(role, str) and role else kind
    if role not in ROLES:
        return None
    return Message(
        role=role,
        text=_text(message.get("content")),
        timestamp=_string(line.get("timestamp")),
        uuid=_string(line.get("uuid")),
        parent_uuid=_string(line.get("parentUuid")),
        session_id=_string(line.get("sessionId")),
        cwd=_string(line.get("cwd")),
        meta=line.get("isMeta") is True,
    )


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


@dataclass
class Page:
    """Which messages to return: after text_only and since, from offset, at most limit."""

    text_only: bool = True
    since_ms: int | None = None
    offset: int = 0
    limit: int = 500

    def selects(self, message: Message) -> bool:
        if self.text_only and not message.has_text:
            return False
        if self.since_ms is None:
            return True
        if message.timestamp is None:
            return False  # not stamped, so not stamped later
        try:
            return parse_time(message.timestamp, "timestamp") > self.since_ms
        except TimeFormatError:
            return False


@dataclass
class TranscriptReader:
    """A fold over a transcript's lines (bytes, without or with their newline)."""

    page: Page = field(default_factory=Page)
    line_count: int = 0
    message_count: int = 0
    text_message_count: int = 0
    selected_count: int = 0
    session_id: str | None = None
    cwd: str | None = None
    messages: list[Message] = field(default_factory=list)
    _warnings: list[str] = field(default_factory=list, init=False)
    _more_warnings: int = field(default=0, init=False)
    _sampled: int = field(default=0, init=False)
    _v1: bool = field(default=False, init=False)

    def feed(self, raw: bytes) -> None:
        if not raw.strip():
            return
        self.line_count += 1
        line = self._decoded(raw)
        if line is None:
            return
        self._observe(line)
        message = message_of(line)
        if message is None:
            return
        self.message_count += 1
        if message.has_text:
            self.text_message_count += 1
        if self.page.selects(message):
            index = self.selected_count
            self.selected_count += 1
            if self.page.offset <= index < self.page.offset + self.page.limit:
                self.messages.append(message)

    def skip_line(self, reason: str) -> None:
        """A non-blank line the caller could not hand over (too long to hold)."""
        self.line_count += 1
        self.warn(f"Line {self.line_count}: {reason}, skipped")

    def warn(self, warning: str) -> None:
        if len(self._warnings) < MAX_WARNINGS:
            self._warnings.append(warning)
        else:
            self._more_warnings += 1

    def _decoded(self, raw: bytes) -> dict[str, Any] | None:
        n = self.line_count
        if nesting_exceeds(raw, MAX_NESTING):
            self.warn(f"Line {n}: JSON nested deeper than {MAX_NESTING} levels, skipped")
            return None
        try:
            value = _decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            self.warn(f"Line {n}: not valid JSON, skipped")
            return None
        if self._sampled < _FORMAT_SAMPLE:
            self._sampled += 1
            if isinstance(value, dict) and {"type", "message", "sessionId"} <= value.keys():
                self._v1 = True
        if not isinstance(value, dict):
            self.warn(f"Line {n}: {_kind_of(value)}, not a JSON object, skipped")
            return None
        if not isinstance(value.get("type"), str):
            self.warn(f'Line {n}: no "type" field, skipped')
            return None
        return value

    def _observe(self, line: dict[str, Any]) -> None:
        if self.session_id is None:
            self.session_id = _string(line.get("sessionId"))
        if self.cwd is None:
            self.cwd = _string(line.get("cwd"))

    @property
    def format_version(self) -> str:
        return "v1" if self._v1 else "unknown"

    @property
    def warnings(self) -> list[str]:
        found = list(self._warnings)
        if self._more_warnings:
            found.append(f"… and {self._more_warnings:,} more warnings like these")
        if not self._v1:
            found.insert(0, FORMAT_WARNING)
        return found

    @property
    def next_offset(self) -> int | None:
        end = self.page.offset + self.page.limit
        return end if self.selected_count > end else None

    def value(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "cwd": self.cwd,
            "format_version": self.format_version,
            "line_count": self.line_count,
            "message_count": self.message_count,
            "text_message_count": self.text_message_count,
            "messages": [message.value() for message in self.messages],
            "next_offset": self.next_offset,
            "warnings": self.warnings,
        }


def read_lines(lines: Any, page: Page | None = None) -> TranscriptReader:
    """Every line of `lines` (an iterable of bytes) folded into a reader."""
    reader = TranscriptReader(page or Page())
    for raw in lines:
        reader.feed(raw)
    return reader
