"""The graph's read image beside an LMDB log: written when the graph is checkpointed, opened
when a process starts on a log that still ends where it was made (projections.graph_image).

Both are only ever an optimisation, as checkpoints are: a failure to write one is logged and
the image left out; one that cannot be used (none, another log's, the log moved on, damaged)
is passed over and the graph restored as before.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import structlog

from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from projections.graph_image import (
    IMAGE_FILE,
    GraphImage,
    ImageError,
    ImageSource,
    encode_image,
    neutral_tail,
    open_image,
)
from projections.graph_image import write_image as write_image_file

log = structlog.get_logger(__name__)

__all__ = [
    "IMAGE_MAX_ENTITIES",
    "IMAGE_MIN_ENTITIES",
    "IMAGE_SECONDS_PER_ENTITY",
    "open_usable_image",
    "write_graph_image",
]

IMAGE_MAX_ENTITIES = 300_000
"""Graphs past this many entities get no image: writing one costs seconds a checkpoint there
(encoded in Python) for what a restore of that size costs once per start anyway."""


IMAGE_MIN_ENTITIES = 5_000
"""A serving writer goes back to its image when idle (actors.graph_writer) only for graphs of
at least this many entities: a smaller one holds little, and its restore would still cost the
next write a few milliseconds."""


IMAGE_SECONDS_PER_ENTITY = 30e-6
"""What writing an image takes per entity, at most, on a loaded two-core machine (~14 us
measured at 50,000 entities): a stop's deadline is checked against it."""


def _lmdb(event_log: EventLog) -> LmdbEventLog | None:
    return event_log if isinstance(event_log, LmdbEventLog) else None


def write_graph_image(event_log: EventLog, graph: ImageSource, entity_count: int) -> bool:
    """Write the image of `graph` (at the log's end: the caller has folded every committed
    event) beside `event_log`; False when there is none to write or it failed (logged)."""
    lmdb_log = _lmdb(event_log)
    if lmdb_log is None:
        return False
    if entity_count > IMAGE_MAX_ENTITIES:
        # An image of the graph when it was smaller is never served again: its space back.
        with contextlib.suppress(OSError):
            (Path(lmdb_log.path) / IMAGE_FILE).unlink()
        return False
    started = time.perf_counter()
    try:
        log_id, end, tip = lmdb_log.checkpoints.anchor()
        if end != graph.position or tip is None:
            return False  # the log moved on meanwhile: the next checkpoint writes one
        data = encode_image(graph, log_id=log_id, tip=tip)
        write_image_file(lmdb_log.path, data)
    except Exception as error:  # an image only saves memory and time: never stop for one
        log.warning("graph_image_not_written", reason=repr(error))
        return False
    log.info(
        "graph_image_written",
        position=graph.position,
        bytes=len(data),
        seconds=round(time.perf_counter() - started, 3),
    )
    return True


def open_usable_image(event_log: EventLog) -> tuple[GraphImage, int] | None:
    """The image beside `event_log` if it is the graph as the log ends now, and the position
    it answers for (the log's end: past the image's own when only graph-neutral events
    follow it); else None (why is logged at debug level: most starts after writes find
    none)."""
    lmdb_log = _lmdb(event_log)
    if lmdb_log is None:
        return None
    try:
        image = open_image(lmdb_log.path, lmdb_log.checkpoints.anchor)
    except ImageError as reason:
        log.debug("graph_image_unused", reason=str(reason))
        return None
    except Exception as error:  # any failure: restore as before
        log.warning("graph_image_unused", reason=repr(error))
        return None
    tail = neutral_tail(event_log, image.position)
    if tail is None:
        log.debug("graph_image_unused", reason="the graph changed since the image was made")
        image.close()
        return None
    return image, tail[-1].position if tail else image.position
