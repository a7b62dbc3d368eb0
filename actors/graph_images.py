"""The graph's read image beside an LMDB log: written when the graph is checkpointed, opened
when a process starts on a log that still ends where it was made (projections.graph_image).

Both are only ever an optimisation, as checkpoints are: a failure to write one is logged and
the image left out; one that cannot be used (none, another log's, the log moved on, damaged)
is passed over and the graph restored as before.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import sys
import time
from pathlib import Path

import structlog

from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog
from projections.graph import GraphProjection
from projections.graph_image import (
    IMAGE_FILE,
    GraphImage,
    ImageError,
    ImageSource,
    encode_image,
    install_image,
    neutral_tail,
    open_current_image,
    open_image,
    restamp_in_place,
)
from projections.graph_image import write_image as write_image_file

log = structlog.get_logger(__name__)

__all__ = [
    "IMAGE_MAX_ENTITIES",
    "IMAGE_MIN_ENTITIES",
    "IMAGE_SECONDS_PER_ENTITY",
    "ImageInBackground",
    "empty_image",
    "open_image_at_or_after",
    "open_usable_image",
    "write_graph_image",
    "write_graph_image_at",
]

IMAGE_MAX_ENTITIES = 300_000
"""Graphs past this many entities get no image: writing one costs seconds a checkpoint there
(~7 us an entity, mostly Python; the writer waits for it) for what a restore of that size
costs once per start anyway."""


IMAGE_MIN_ENTITIES = 5_000
"""A serving writer goes back to its image when idle (actors.graph_writer) only for graphs of
at least this many entities: a smaller one holds little, and its restore would still cost the
next write a few milliseconds."""


_CHILD_TIMEOUT = 300.0
"""The longest an image's child is waited for (the encoding takes ~7 us an entity, 300,000
at most); past it, it is killed and no image written."""

IMAGE_SECONDS_PER_ENTITY = 30e-6
"""What writing an image takes per entity, at most, on a loaded two-core machine (~14 us
measured at 50,000 entities with the filter in Python, ~7 with it compiled): a stop's
deadline is checked against it."""


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
    return _written(lmdb_log, graph, at_end=True)


def write_graph_image_at(event_log: EventLog, graph: ImageSource, entity_count: int) -> bool:
    """Write the image of `graph` at its own position, which the log may have passed since
    (a compaction child's: the writer goes on appending meanwhile); False when none was
    written (too many entities, not LMDB, a failure: logged)."""
    lmdb_log = _lmdb(event_log)
    if lmdb_log is None or entity_count > IMAGE_MAX_ENTITIES:
        return False
    return _written(lmdb_log, graph, at_end=False)


def _written(lmdb_log: LmdbEventLog, graph: ImageSource, *, at_end: bool) -> bool:
    """Encode and write the image of `graph`, stamped with the log's record at its position
    (`at_end`: only if that is still the log's end); False when none was written."""
    started = time.perf_counter()
    try:
        log_id, end, tip = lmdb_log.checkpoints.anchor(None if at_end else graph.position)
        if tip is None or (at_end and end != graph.position):
            # Moved on meanwhile (the next checkpoint writes one), or no record there.
            return False
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


def open_image_at_or_after(event_log: EventLog, position: int) -> GraphImage | None:
    """The image beside `event_log` if it was made from this log at `position` or later
    (whatever came after it: the caller folds that); else None."""
    lmdb_log = _lmdb(event_log)
    if lmdb_log is None:
        return None
    try:
        image = open_image(lmdb_log.path, lmdb_log.checkpoints.anchor)
    except ImageError as reason:
        log.debug("graph_image_unused", reason=str(reason))
        return None
    if image.position < position:
        image.close()
        return None
    return image


def empty_image(event_log: EventLog) -> tuple[GraphImage, int] | None:
    """An image of the empty graph (in memory, not a file) and the position it answers for,
    when the log holds no event that changes the graph (a new store: its start's schema
    registrations at most); else None. Writes then go over it as over any image."""
    lmdb_log = _lmdb(event_log)
    if lmdb_log is None:
        return None
    tail = neutral_tail(lmdb_log, 0)
    if tail is None:
        return None
    data = encode_image(GraphProjection(), log_id=lmdb_log.checkpoints.anchor(0)[0], tip=0)
    mapped = mmap.mmap(-1, len(data))
    mapped.write(data)
    return GraphImage(mapped), tail[-1].position if tail else 0


def open_usable_image(event_log: EventLog) -> tuple[GraphImage, int] | None:
    """The image beside `event_log` if it is the graph as the log ends now, and the position
    it answers for (the log's end: past the image's own when only graph-neutral events
    follow it); else None (why is logged at debug level: most starts after writes find
    none)."""
    lmdb_log = _lmdb(event_log)
    if lmdb_log is None:
        return None
    try:
        return open_current_image(lmdb_log.path, lmdb_log.checkpoints.anchor, lmdb_log)
    except ImageError as reason:
        log.debug("graph_image_unused", reason=str(reason))
        return None
    except Exception as error:  # any failure: restore as before
        log.warning("graph_image_unused", reason=repr(error))
        return None


class ImageInBackground:
    """The image of a graph whose log position is not known yet, encoded by a forked child
    while this process goes on (a bulk import's appends, on the other core: the encoding takes
    about as long as they do), then stamped with the log's anchor and written by `finish`.

    The child only encodes and writes a file of its own, then leaves with `os._exit`: it takes
    no lock, log or LMDB handle of the parent's. Off Linux none is started and the caller
    writes the image itself afterwards."""

    def __init__(self, pid: int, part: Path, lmdb_log: LmdbEventLog, started: float) -> None:
        self._pid = pid
        self._part = part
        self._log = lmdb_log
        self._started = started
        self._entities = 0
        self._finished = False

    @classmethod
    def start(
        cls, event_log: EventLog, graph: ImageSource, entity_count: int
    ) -> ImageInBackground | None:
        """Fork the child encoding `graph` (its position a placeholder, 0); None when there
        is nothing to start (not LMDB, too many entities, no fork)."""
        lmdb_log = _lmdb(event_log)
        # Linux only: elsewhere a fork of a threaded process is not one to rely on (macOS
        # runtimes abort in such children); the caller then encodes the image itself.
        if lmdb_log is None or entity_count > IMAGE_MAX_ENTITIES or sys.platform != "linux":
            return None
        started = time.perf_counter()
        log_id = lmdb_log.checkpoints.anchor()[0]
        part = Path(lmdb_log.path) / f".{IMAGE_FILE}.{os.getpid()}.part"
        try:
            pid = os.fork()
        except OSError as error:
            log.warning("graph_image_not_forked", reason=repr(error))
            return None
        if pid == 0:  # the child: encode, write, leave without running the parent's exits
            code = 1
            try:
                gc.disable()  # its pages stay shared with the parent's as long as they can
                data = encode_image(graph, log_id=log_id, tip=0)
                with open(part, "wb") as file:
                    file.write(data)
                    file.flush()
                    os.fsync(file.fileno())  # here, beside the parent's appends
                code = 0
            finally:
                os._exit(code)
        background = cls(pid, part, lmdb_log, started)
        background._entities = entity_count
        return background

    def __enter__(self) -> ImageInBackground:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.finish(None)  # after `finish`: nothing more is done

    def finish(self, position: int | None, *, timeout: float = _CHILD_TIMEOUT) -> bool:
        """Wait for the child (at most `timeout` seconds, then it is killed); with
        `position` (where the caller's graph ends: the log's end) write the image, stamped;
        with None (the import did not complete) only clean up. False when none was written.
        Once only: a second call (the context's exit after the import's own) does nothing."""
        if self._finished:
            return False
        self._finished = True
        try:
            if not self._reaped(timeout):
                log.warning("graph_image_not_written", reason="its encoding timed out")
                return False
            if position is None:
                return False
            _, end, tip = self._log.checkpoints.anchor()
            if end != position or tip is None:
                return False  # the log moved on meanwhile: the next checkpoint writes one
            # Stamped in place, the file mapped: no copy of its megabytes read or written;
            # only the header's pages are dirtied, and synced before the rename.
            with open(self._part, "r+b") as file, mmap.mmap(file.fileno(), 0) as data:
                size = len(data)
                restamp_in_place(data, position=position, tip=tip)
                data.flush()
            install_image(self._log.path, self._part)
        except Exception as error:  # an image only saves memory and time: never stop for one
            log.warning("graph_image_not_written", reason=repr(error))
            return False
        finally:
            with contextlib.suppress(OSError):
                self._part.unlink()
        log.info(
            "graph_image_written",
            position=position,
            bytes=size,
            seconds=round(time.perf_counter() - self._started, 3),
            entities=self._entities,
            forked=True,
        )
        return True

    def _reaped(self, timeout: float) -> bool:
        """Whether the child ended well within `timeout` (killed and reaped if not)."""
        deadline = time.monotonic() + timeout
        while True:
            pid, status = os.waitpid(self._pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status) == 0
            if time.monotonic() > deadline:
                os.kill(self._pid, 9)
                os.waitpid(self._pid, 0)
                return False
            time.sleep(0.005)  # the child's work is seconds: a short poll costs nothing
