"""What the graph writer serves from the graph's read image before it restores the graph.

A spawned server's start-up asks the writer three things besides its callers' reads: the
schemas in force (the schema registry's scan), and, on a store's first start, to register the
shipped schemas. None needs the graph: the schemas projection is small and restored alone, and
a RegisterSchemas is decided against it only. Its events change no read of the graph, so the
image still answers for the log after them (projections.graph_image.neutral_tail); anything
else makes the writer restore the graph, as a start without an image does.

The official writes (create_entities, create_relations, add_observations and the three
deletions) are decided and appended here too, over the image: folded into an overlay of what
they changed (projections.image_overlay), which the reads then answer from. The overlay is
compacted into a new image by a child process (actors.image_compaction) once it holds
`compaction_due` entities and relations, so the writer's heap holds a bounded overlay, never
the whole graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import structlog

from actors.catch_up import catch_up
from actors.checkpointer import restore_newest
from actors.commands import (
    AddObservations,
    Command,
    CommandResult,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
    RegisterSchemas,
)
from actors.decide import decide
from actors.errors import CommandRejectedError
from actors.graph_reader import GraphReader
from eventstore.events import Cause, Envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import EventLog, LogTransaction
from projections.graph_image import GraphImage, ImageReads, neutral_tail
from projections.image_overlay import ImageOverlay, OverlayReads
from projections.schemas import SchemaProjection

log = structlog.get_logger(__name__)

__all__ = ["COMPACT_AT_LEAST", "OVER_IMAGE", "ImageServing", "Outcome"]

OVER_IMAGE = (
    CreateEntities,
    CreateRelations,
    AddObservations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
    RegisterSchemas,
)
"""The commands decided over the image: the official writes (their six events are what the
overlay folds) and a start's schema registrations (which change no read of the graph)."""

COMPACT_AT_LEAST = 8_192
"""Entities and relations the overlay holds before it is compacted, at least (an eighth of
the image's entities on larger graphs, so that a compaction's cost, in proportion to the
graph, is spread over as many writes)."""

Outcome = tuple[CommandResult, list[Envelope]] | BaseException
"""A command decided over the image: its result and envelopes, or why it was refused."""


class _Moved(Exception):
    """Another process appended since the image was last seen to answer for the log."""


class _Retried(Exception):
    """The log transaction is run again (its map grew): the overlay holds the first run's
    uncommitted events, so the writer restores instead."""


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
        self.overlay = ImageOverlay(image)
        self.end = end  # the log position the image answers for (its own, or past schemas)
        self._others_appended = others_appended
        self._schemas: SchemaProjection | None = None
        self._folded_at = image.position  # the overlay's position before a transaction

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

    @property
    def image(self) -> GraphImage:
        return self.overlay.image

    def reads(self, query: Callable[[Any], Any]) -> Any:
        """An official read's query, on the image and what was written over it; its pages
        handed back after."""
        overlay = self.overlay
        try:
            return query(OverlayReads(overlay) if overlay.changed else ImageReads(overlay.image))
        finally:
            overlay.image.release()

    def schemas(self) -> SchemaProjection | None:
        """The schemas projection at `end` (restored from its newest checkpoint at or before
        the image, then caught up); None without such a checkpoint (folding the whole log for
        it is the restore's job)."""
        if self._schemas is None:
            restored = restore_newest(self._log, SchemaProjection, self.image.position)
            if restored is None:
                if self.image.position:
                    return None
                restored = SchemaProjection()  # an empty graph's image: the log is neutral
            catch_up(self._log, restored.apply_all, restored.position, upto=self.end)
            self._schemas = restored
        return self._schemas

    def execute(
        self, commands: list[tuple[Command, Cause | None]], now_ms: int
    ) -> list[Outcome] | None:
        """Decide `commands` (OVER_IMAGE) over the image in one log transaction, append their
        events and fold them into the overlay; each one's outcome (a refusal is one). None
        when that cannot be done here (another process appended meanwhile, no schemas
        checkpoint for a registration, the transaction was run again): nothing is appended
        then, and the caller restores the graph and decides them as usual. A failed commit
        is raised (nothing appended; the overlay refolded from the log)."""
        registering = any(isinstance(command, RegisterSchemas) for command, _ in commands)
        schemas = self.schemas() if registering else self._schemas
        if registering and schemas is None:
            return None
        end, overlay = self.end, self.overlay
        graph = cast(GraphReader, overlay)

        def append(txn: LogTransaction) -> list[Outcome]:
            if txn.last_position() != end:
                raise _Moved
            if txn.attempt > 0 and overlay.position > self._folded_at:
                raise _Retried
            outcomes: list[Outcome] = []
            for command, cause in commands:
                try:
                    decision = decide(graph, command, schemas, now_ms)
                except CommandRejectedError as refusal:
                    outcomes.append(refusal)  # the caller is told; nothing appended
                    continue
                except Exception as error:  # decide is pure: a bug fails this command only
                    log.exception("decide_failed", command=type(command).__name__)
                    outcomes.append(error)
                    continue
                envelopes = txn.append(decision.events, cause) if decision.events else []
                if not overlay.apply(envelopes):  # OVER_IMAGE decisions make none such
                    raise AssertionError(f"{type(command).__name__} made an event not folded")
                if schemas is not None:  # a later registration of the batch reads this one
                    schemas.apply_all(envelopes)
                outcomes.append((decision.result, envelopes))
            return outcomes

        self._folded_at = overlay.position
        try:
            outcomes = self._log.transact(append)
        except (_Moved, _Retried):
            self._uncommitted()
            return None
        except BaseException:
            self._uncommitted()
            raise
        finally:
            # The pages the decisions read stay cached by the kernel, not in this process.
            self.image.release()
        appended = [e for o in outcomes if not isinstance(o, BaseException) for e in o[1]]
        if appended:
            self.end = appended[-1].position
        return outcomes

    def _uncommitted(self) -> None:
        """What a transaction that did not commit left folded is dropped: the overlay refolded
        from the log, the schemas restored again when next asked."""
        self._schemas = None
        self._refold()

    def _refold(self) -> None:
        """The overlay anew from the committed log (what a failed transaction left in it
        was never committed)."""
        if self.overlay.position == self._folded_at:
            return
        fresh = ImageOverlay(self.image)
        fresh.apply(e for e in self._log.read_from(fresh.position + 1) if e.position <= self.end)
        self.overlay = fresh
        _release_log_pages(self._log)

    def compaction_due(self, at_least: int = COMPACT_AT_LEAST) -> bool:
        """Whether the overlay holds enough to be compacted into a new image: `at_least`
        entities and relations, and an eighth of the image's entities."""
        return self.overlay.size >= max(at_least, self.image.n // 8)

    def adopt(self, image: GraphImage) -> bool:
        """Serve from `image` (made from this log at or after the current image's position,
        at most at `end`), with an overlay of what was appended after it; False (the image
        closed, nothing changed) when that cannot be folded or the image is of no use."""
        if not self.image.position < image.position <= self.end:
            image.close()
            return False
        fresh = ImageOverlay(image)
        tail = (e for e in self._log.read_from(image.position + 1) if e.position <= self.end)
        if not fresh.apply(tail):
            image.close()
            return False
        old, self.overlay = self.overlay, fresh
        old.image.close()
        _release_log_pages(self._log)
        return True

    def close(self) -> None:
        self.image.close()


def _release_log_pages(event_log: EventLog) -> None:
    # A tail read anew leaves its pages of the log's map resident in this process (~16 MiB
    # after a fill's compactions at 50,000 entities); the page cache keeps them anyway.
    if isinstance(event_log, LmdbEventLog):
        event_log.release_pages()
