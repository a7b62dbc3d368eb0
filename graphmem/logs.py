"""Logging setup: structlog to stderr — stdout belongs to MCP (and to a command's output).

JSON lines, one object each, for the server and for anything that reads stderr (scripts,
tests); for a one-shot command run by a person at a terminal, short `warning: ...` lines.
With a log file (GRAPHMEM_LOG_FILE) the JSON lines go to it instead, rotated by size: entries
then pass through stdlib logging, whose handler does the rotating under its own lock.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import msgspec
import structlog
from structlog.typing import EventDict, WrappedLogger

_json = msgspec.json.Encoder(enc_hook=repr)

# Tracebacks as structured frames, without each frame's local variables: structlog includes
# them by default, and a tool's locals hold what the user stored (observation text, names),
# which no log line above debug may carry.
_tracebacks = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)


def _serialize(obj: Any, **_kwargs: Any) -> str:
    # JSONRenderer passes json.dumps-style keywords that msgspec does not take.
    return _json.encode(obj).decode()


def _human(_logger: WrappedLogger, _name: str, event_dict: EventDict) -> str:
    """One line a person reads: `warning: checkpoint_unusable (checkpoint=graph, ...)`, then
    the traceback if one was logged (a bug: it should be seen whole)."""
    level = event_dict.pop("level", "info")
    event = event_dict.pop("event", "")
    event_dict.pop("timestamp", None)
    trace = event_dict.pop("exception", None)
    details = ", ".join(f"{key}={value}" for key, value in event_dict.items())
    line = f"{level}: {event}" + (f" ({details})" if details else "")
    return f"{line}\n{trace}" if trace else line


@dataclass(frozen=True)
class LogFile:
    """A log file rotated when it reaches `max_bytes`, keeping `backups` older ones."""

    path: Path
    max_bytes: int = 10 << 20
    backups: int = 5


def configure_logging(
    level: str = "INFO",
    stream: TextIO | None = None,
    *,
    human: bool = False,
    log_file: LogFile | None = None,
) -> None:
    """Send structlog and stdlib logging (mcp, uvicorn, pykka) to `stream`, or to `log_file`:
    JSON lines, or with `human` (never to a file) one plain line per entry."""
    out = stream or sys.stderr
    human = human and log_file is None
    numeric_level = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    stamp: list[Any] = [structlog.contextvars.merge_contextvars, structlog.processors.add_log_level]
    shared: list[Any]
    renderer: Any
    if human:  # no timestamp: a person sees the line as it is written
        shared = [
            *stamp,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
        ]
        renderer = _human
    else:
        shared = [
            *stamp,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            _tracebacks,
        ]
        renderer = structlog.processors.JSONRenderer(serializer=_serialize)
    handler: logging.Handler
    if log_file is None:
        structlog.configure(
            processors=[*shared, renderer],
            logger_factory=structlog.WriteLoggerFactory(file=out),
            wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
            cache_logger_on_first_use=True,
        )
        handler = logging.StreamHandler(out)
    else:
        log_file.path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            log_file.path,
            maxBytes=log_file.max_bytes,
            backupCount=log_file.backups,
            encoding="utf-8",
        )
        structlog.configure(
            processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
            cache_logger_on_first_use=True,
        )
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
