"""What every tool family shares: the tool spec, its outcome, input checks and limits."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from actors.gateway import GraphGateway
from actors.hooks import Hooks
from actors.time_travel import TimeTravel
from actors.transaction_coordinator import TransactionGateway
from eventstore.events import Cause
from eventstore.hlc import WallClock
from graphmem.limits import InputLimits
from graphmem.tools.definition import ToolDefinition
from graphmem.tools.graph_body import GraphBody
from graphmem.tools.graph_family import GraphFamily

T = TypeVar("T")


class ToolInputError(ValueError):
    """The arguments of a tool call are unusable; the message says what to fix."""


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may use."""

    graph: GraphGateway
    limits: InputLimits
    cause: Cause
    transactions: TransactionGateway | None = None
    hooks: Hooks = field(default_factory=Hooks)
    time_travel: TimeTravel | None = None
    # The graph family's files, tunables and clock; None when the profile does not serve it.
    family: GraphFamily | None = None
    # The process's one wall clock (the log's; GRAPHMEM_CLOCK_OFFSET_DAYS moves it): answers
    # that carry a time read it.
    clock: WallClock = field(default_factory=WallClock)
    # Where a large answer is spooled while it is written out (the data dir: never a
    # RAM-backed /tmp); None: the system's temporary directory.
    spill_dir: Path | None = None


@dataclass(frozen=True)
class ToolOutcome:
    """A tool's answer before it becomes a CallToolResult."""

    texts: list[str]
    structured: dict[str, Any] | None = None
    is_error: bool = False
    mutated: bool = False
    # `structured` as JSON, when it was encoded already for the text (`ok`): the stdio fast
    # path writes these bytes rather than encoding a whole graph a second time.
    structured_json: bytes | None = field(default=None, repr=False, compare=False)
    # A large subgraph answer spooled to disk, to be written in slices (graph_body): then
    # `texts` and `structured` are empty, and `materialized()` is the outcome in full.
    body: GraphBody | None = field(default=None, repr=False, compare=False)

    def materialized(self) -> ToolOutcome:
        """This outcome with its body (if any) read whole into `texts` and `structured`: for
        the paths that cannot write an answer in slices. The body is closed."""
        if self.body is None:
            return self
        try:
            text, compact = self.body.materialized()
        finally:
            self.body.close()
        return ToolOutcome(
            texts=[text],
            structured=msgspec.json.decode(compact),
            is_error=self.is_error,
            mutated=self.mutated,
            structured_json=compact,
        )

    def to_wire(self) -> dict[str, Any]:
        """The CallToolResult as its wire dict. Handing the SDK a dict spares one pydantic pass
        over a result that can hold a whole graph; the SDK still validates its shape."""
        if self.body is not None:
            return self.materialized().to_wire()
        wire: dict[str, Any] = {
            "content": [{"type": "text", "text": t} for t in self.texts],
            # Required on the 2026-07-28 wire; the SDK's per-version sieve drops it on older ones.
            "resultType": "complete",
        }
        if self.structured is not None:
            wire["structuredContent"] = self.structured
        if self.is_error:
            wire["isError"] = True
        return wire


def error(message: str) -> ToolOutcome:
    return ToolOutcome(texts=[message], is_error=True)


_encode_json = msgspec.json.Encoder().encode


def render(value: Any) -> str:
    """The official server's text: JSON.stringify(value, null, 2), byte for byte.

    msgspec's formatter writes exactly what `json.dumps(value, indent=2, ensure_ascii=False)`
    does (tests hold it to that), about twenty times faster on a large graph.
    """
    return msgspec.json.format(_encode_json(value), indent=2).decode()


def ok(value: Any, structured: dict[str, Any], *, mutated: bool = False) -> ToolOutcome:
    encoded = _encode_json(value)
    return ToolOutcome(
        texts=[msgspec.json.format(encoded, indent=2).decode()],  # render(value)
        structured=structured,
        mutated=mutated,
        structured_json=encoded if structured is value else None,
    )


def answered(body: GraphBody) -> ToolOutcome:
    """The outcome of a subgraph answer: kept spooled when it outgrew memory (written in
    slices by the stdio fast path), else read back whole at once, as `ok` would make it."""
    if body.on_disk:
        return ToolOutcome(texts=[], body=body)
    return ToolOutcome(texts=[], body=body).materialized()


Runner = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolOutcome]]


@dataclass(frozen=True)
class ToolSpec:
    tool: ToolDefinition
    run: Runner
    # How a rejection reads: the official plain text ("memory"), or MemoryMesh's JSON body
    # with suggestions ("mesh", for the mesh and schema families).
    error_style: str = "memory"


def parse_args(tool_name: str, args: dict[str, Any], shape: type[T]) -> T:
    """Validate arguments against a msgspec Struct; unknown keys are ignored, as upstream."""
    try:
        return msgspec.convert(args, shape)
    except msgspec.ValidationError as problem:
        raise ToolInputError(invalid_arguments(tool_name, str(problem))) from None


# The official server's wording; mesh-style errors drop it (graphmem.tools.error_text).
INVALID_ARGUMENTS_PREFIX = "MCP error -32602: Input validation error: Invalid arguments for tool"


def invalid_arguments(tool_name: str, detail: str) -> str:
    return f"{INVALID_ARGUMENTS_PREFIX} {tool_name}: {detail}"


# Tabs and line breaks are ordinary in observation text; no other control character is.
_CONTROL_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_SINGLE_LINE = re.compile(r"[\x00-\x1f\x7f]")


def check_text(tool_name: str, value: str, where: str, max_chars: int, *, multiline: bool) -> None:
    """Reject text that cannot be stored faithfully or is far too large to be meant."""
    if len(value) > max_chars:
        raise ToolInputError(
            invalid_arguments(
                tool_name,
                f"{where} is {len(value):,} characters long; the limit is {max_chars:,}. "
                "Split it into smaller pieces.",
            )
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolInputError(
                invalid_arguments(
                    tool_name,
                    f"{where} contains invalid Unicode (a lone surrogate); send valid UTF-8.",
                )
            ) from None
    found = (_CONTROL_MULTILINE if multiline else _CONTROL_SINGLE_LINE).search(value)
    if found:
        raise ToolInputError(
            invalid_arguments(
                tool_name,
                f"{where} contains the control character U+{ord(found.group()):04X}; remove it.",
            )
        )


def check_names(
    tool_name: str, limits: InputLimits, values: Iterable[tuple[str, str | None]]
) -> None:
    """Check (where, value) pairs of names, types and relation types; None means omitted."""
    for where, value in values:
        if value is not None:
            check_text(tool_name, value, where, limits.max_name_chars, multiline=False)


def check_contents(tool_name: str, limits: InputLimits, where: str, contents: list[str]) -> None:
    """Check observation contents; `where` names the list (each item gets its index)."""
    for i, content in enumerate(contents):
        check_text(tool_name, content, f"{where}[{i}]", limits.max_content_chars, multiline=True)


def check_count(tool_name: str, count: int, where: str, limit: int) -> None:
    if count > limit:
        raise ToolInputError(
            invalid_arguments(
                tool_name,
                f"{where} has {count:,} items; the limit is {limit:,} per call. "
                "Send them in several calls.",
            )
        )
