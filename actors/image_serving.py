"""What the graph writer serves from the graph's read image before it restores the graph.

A spawned server's start-up asks the writer three things besides its callers' reads: the
schemas in force (the schema registry's scan), and, on a store's first start, to register the
shipped schemas. None needs the graph: the schemas projection is small and restored alone, and
a RegisterSchemas is decided against it only. Its events change no read of the graph, so the
image still answers for the log after them (projections.graph_image.neutral_tail); anything
else makes the writer restore the graph, as a start without an image does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from actors.catch_up import catch_up
from actors.checkpointer import restore_newest
from actors.commands import CommandResult, RegisterSchemas
from actors.decide import Decision, decide
from eventstore.events import Cause, Envelope
from eventstore.log import EventLog, LogTransaction
from projections.graph_image import GraphImage, ImageReads, neutral_tail
from projections.schemas import SchemaProjection

__all__ = ["ImageServing"]


class _Moved(Exception):
    """Another process appended since the image was last seen to answer for the log."""


class ImageServing:
    """The image, the log position it answers for, and the schemas as of that position.

    `others_appended` is handed what other processes appended once the image is seen to
    answer past it (a loaded writer publishes their events as it catches up on them), so
    that, with what the writer publishes of its own registrations, every event after the
    image's start-up `end` up to `end` has been published once: a restore catching up from
    the checkpoint publishes only what comes after (GraphWriterActor._load)."""

    def __init__(
        self,
        event_log: EventLog,
        image: GraphImage,
        end: int,
        others_appended: Callable[[list[Envelope]], None],
    ) -> None:
        self._log = event_log
        self.image = image
        self.end = end  # the log position the image answers for (its own, or past schemas)
        self._others_appended = others_appended
        self._schemas: SchemaProjection | None = None

    def current(self) -> bool:
        """Whether the image still answers for the log as it ends now (what others appended
        since changes no read of the graph); the schemas follow those appends."""
        if self._log.last_position() == self.end:
            return True
        tail = neutral_tail(self._log, self.end)
        if tail is None:
            return False
        if tail:
            if self._schemas is not None:
                self._schemas.apply_all(tail)
            self._others_appended(tail)
            self.end = tail[-1].position
        return True

    def reads(self, query: Callable[[Any], Any]) -> Any:
        """An official read's query, on the image; its pages handed back after."""
        try:
            return query(ImageReads(self.image))
        finally:
            self.image.release()

    def schemas(self) -> SchemaProjection | None:
        """The schemas projection at `end` (restored from its newest checkpoint at or before
        the image, then caught up); None without such a checkpoint (folding the whole log for
        it is the restore's job)."""
        if self._schemas is None:
            restored = restore_newest(self._log, SchemaProjection, self.image.position)
            if restored is None:
                return None
            catch_up(self._log, restored.apply_all, restored.position, upto=self.end)
            self._schemas = restored
        return self._schemas

    def register(
        self, command: RegisterSchemas, cause: Cause | None, now_ms: int
    ) -> tuple[CommandResult, list[Envelope]] | None:
        """Decide and append a RegisterSchemas against the schemas alone; None when that
        cannot be done here (no schemas checkpoint, or another process appended meanwhile:
        the caller restores the graph and decides it as usual). A refusal is raised."""
        schemas = self.schemas()
        if schemas is None:
            return None
        end = self.end

        def append(txn: LogTransaction) -> tuple[Decision, list[Envelope]]:
            if txn.last_position() != end:
                raise _Moved
            # RegisterSchemas reads the schemas only, never the graph.
            decision = decide(cast(Any, None), command, schemas)
            envelopes = txn.append(decision.events, cause) if decision.events else []
            return decision, envelopes

        try:
            decision, envelopes = self._log.transact(append)
        except _Moved:
            return None
        schemas.apply_all(envelopes)
        if envelopes:
            self.end = envelopes[-1].position
        return decision.result, envelopes

    def close(self) -> None:
        self.image.close()
