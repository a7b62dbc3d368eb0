"""Logging setup: structlog, one JSON object per line, to stderr — stdout belongs to MCP."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import msgspec
import structlog

_json = msgspec.json.Encoder(enc_hook=repr)


def _serialize(obj: Any, **_kwargs: Any) -> str:
    # JSONRenderer passes json.dumps-style keywords that msgspec does not take.
    return _json.encode(obj).decode()


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Send structlog and stdlib logging (mcp, uvicorn, pykka) to `stream` as JSON lines."""
    out = stream or sys.stderr
    numeric_level = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.dict_tracebacks,
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.JSONRenderer(serializer=_serialize)],
        logger_factory=structlog.WriteLoggerFactory(file=out),
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(serializer=_serialize),
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
