"""GraphWriterActor: the one appender of a process — decides, group-commits, applies, publishes."""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pykka
import structlog

from actors.bridge import Reply
from actors.catch_up import catch_up
from actors.checkpointer import CHECKPOINT_EVERY, CHECKPOINTS_KEPT, Checkpointer
from actors.commands import Command, CommandResult
from actors.decide import Decision, decide
from actors.errors import CommandRejectedError
from actors.family_index_progress import FamilyIndexProgress
from actors.graph_images import (
    IMAGE_MAX_ENTITIES,
    IMAGE_MIN_ENTITIES,
    IMAGE_SECONDS_PER_ENTITY,
    empty_image,
    open_image_at_or_after,
    open_usable_image,
    write_graph_image,
)
from actors.hooks import Hooks, operation_of
from actors.idle_timer import IdleTimer
from actors.image_compaction import Compacted, Compaction
from actors.image_serving import COMPACT_AT_LEAST, OVER_IMAGE, ImageServing
from actors.read_models import ModelsQuery, ReadModels
from actors.rebuild import BackgroundFold, Folded, RebuildResult
from actors.search_handover import AdoptSearch, SearchHandover
from actors.stopping import Stopping
from actors.subscribers import Subscribers
from actors.supervisor import SupervisorHandle
from actors.tally import EventTally
from eventstore.events import Cause, Envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import DamagedLogError, EventLog, LogTransaction, RemoteAppend, StorageError
from projections.graph import GraphProjection
from projections.graph_family import (
    FamilyIndex,
    FamilyIndexBuild,
    FamilyIndexBuildingError,
    family_index_built,
)
from projections.graph_image import GraphImage
from projections.heap import keep_large_blocks_once_loaded, return_freed_heap
from projections.schemas import SchemaProjection
from projections.search import SearchProjection

log = structlog.get_logger(__name__)

Query = Callable[[GraphProjection], Any]

# A decided command once appended: its result, its envelopes, the command and its decision.
_Outcome = tuple[CommandResult, list[Envelope], Command, Decision]


@dataclass(frozen=True)
class Execute:
    command: Command
    cause: Cause | None
    reply: Reply[CommandResult]
    # A side output that must exist before the command's events do (graph_merge's audit line):
    # called with the decided result, on the writer's thread inside the log transaction, only
    # when the decision has events. Raising CommandRejectedError refuses the command (nothing
    # appended). A retried transaction decides again and calls it again: keep it idempotent.
    before_append: Callable[[CommandResult], None] | None = None
    # Told how many events the command appended, before its reply (actors.tally).
    tally: EventTally | None = None


@dataclass(frozen=True)
class Ask:
    query: Query
    reply: Reply[Any]


@dataclass(frozen=True)
class AskModels:
    query: ModelsQuery
    reply: Reply[Any]


@dataclass(frozen=True)
class AskReads:
    """A read of the official read tools (search_nodes, open_nodes, read_graph): `query`
    reads `.graph` and `.search` of the read models, or of the graph's image while the writer
    serves from one (projections.graph_image.ImageReads)."""

    query: Callable[[Any], Any]
    reply: Reply[Any]


@dataclass(frozen=True)
class AskSchemas:
    """A look at the schemas in force (the schema registry's): `query` reads the schemas
    projection, which the writer has without restoring the graph (actors.image_serving)."""

    query: Callable[[SchemaProjection], Any]
    reply: Reply[Any]


@dataclass(frozen=True)
class ApplyRemote:
    """Append other nodes' envelopes with their own stamps (the replicator's inbound) and fold
    them like any other: `reply` gets the log's RemoteAppend once they are committed."""

    envelopes: Sequence[Envelope]
    reply: Reply[RemoteAppend]


@dataclass(frozen=True)
class SaveCheckpoint:
    """Checkpoint the read models now, whatever the interval, once queued commands are
    committed, unless the last checkpoint is already at their position; `reply` gets the
    position saved at (unchanged if the save was refused)."""

    reply: Reply[int]


@dataclass(frozen=True)
class Rebuild:
    """Rebuild the read models from the log in the background while the old ones keep serving;
    `reply` gets a RebuildResult once the new ones have caught up and replaced them."""

    reply: Reply[RebuildResult]


@dataclass(frozen=True)
class _IdleCheck:
    """Sent by the writer's idle timer (actors.idle_timer): serve from the image again?"""


@dataclass(frozen=True)
class _CompactionDone:
    """Sent by the compaction child's waiter (actors.image_compaction) once it has ended."""

    compaction: Compaction
    compacted: Compacted


@dataclass(frozen=True)
class _Rebuilt:
    """Sent to itself by the background fold when it is done."""

    folded: Folded


@dataclass(frozen=True)
class BuildFamilyIndex:
    """Build the graph family's FamilyIndex in the background, a step per message, unless it
    is built or being built (and again after the read models are replaced)."""


@dataclass(frozen=True)
class _FamilyIndexStep:
    """Sent to itself while the family index build has work left (like _WarmSearch)."""


@dataclass(frozen=True)
class _FamilyIndexAssembled:
    """Sent by the thread that assembled `build`'s index (None: the assembly failed)."""

    build: FamilyIndexBuild
    index: FamilyIndex | None


# Entities or relations derived per step of the family index build: ~0.1 s of the writer's
# time (the whole build took ~210 s at 1,000,000 entities and 3,000,000 edges).
FAMILY_INDEX_STEP = 2_000


@dataclass(frozen=True)
class _WarmSearch:
    """Sent to itself while the search index has work left: one step per message, so that
    requests queued meanwhile wait for a step at most."""


class GraphWriterActor(pykka.ThreadingActor):
    """Owns the graph read model and is the only writer of the log in its process.

    Commands queue up while a commit is in progress; when the inbox runs dry (or the batch is
    full) every queued command is decided and appended in ONE log transaction (group commit),
    and all their callers are answered after it commits. Inside that transaction the actor
    first folds whatever other processes appended since it last looked, so every decision is
    made against the latest state of the shared log (serializable across processes).
    """

    max_batch = 256

    def __init__(
        self,
        event_log: EventLog,
        subscribers: Subscribers | None = None,
        supervision: SupervisorHandle | None = None,
        hooks: Hooks | None = None,
        *,
        checkpoint_every: int | None = CHECKPOINT_EVERY,
        checkpoints_kept: int = CHECKPOINTS_KEPT,
        serve_stale: bool = False,
        ready: Reply[None] | None = None,
        stopping: Stopping | None = None,
        family_index: FamilyIndexProgress | None = None,
        bulk_load: bool = False,
        search_handover: SearchHandover | None = None,
        images: bool = False,
        image_idle: float | None = None,
        image_compact_at: int = COMPACT_AT_LEAST,
    ) -> None:
        """`serve_stale`: a long-running server's choice. When the only checkpoints are of an
        earlier projection version this one still reads (after an upgrade), answer from them
        while a background rebuild folds the log anew, instead of refolding before serving.
        `ready` is settled once the start-up fold is done: ok, or failed with why it could
        not load the log (whoever starts the writer waits on it, bounded). `stopping`: asked
        by whoever stops the process before it stops the writer; checkpoint saves are skipped
        or abandoned rather than run past its deadline (actors.stopping). `family_index`: how
        far a BuildFamilyIndex has come, for readers on other threads. `bulk_load`: a process
        that only writes (graphmem import): no search warm-up while idle, and the search index
        and schema view are derived from the graph when first read, not noted event by
        event. `search_handover`: while it says a search index is awaited (AdoptSearch), no
        warm-up of the writer's own. `images`: the graph's read image is written beside the
        log with each checkpoint, and at start, when the log still ends where the image was
        made, the writer serves the official reads from it (AskReads) and restores the graph
        only when something else is asked (actors.graph_images). `image_idle`: seconds idle
        after which a writer that restored the graph saves a checkpoint and its image and
        serves from the image again, its graph's memory handed back (None: never).
        `image_compact_at`: the official writes are decided over the image (actors.
        image_serving), and compacted into a new image by a child process once this many
        entities and relations were written over it (or an eighth of the image's entities)."""
        super().__init__()
        self._ready = ready
        self._stopping = stopping
        # Set when the stored log is damaged (DamagedLogError): nothing can be folded past
        # it, so every request is answered with it from then on (a restart would fail again).
        self._fault: DamagedLogError | None = None
        self._log = event_log
        self._subscribers = subscribers or Subscribers()
        self._supervision = supervision
        self._hooks = hooks if hooks is not None else Hooks()
        # checkpoint_every=None turns checkpoints off (neither loaded nor saved).
        self._checkpoints = Checkpointer(
            event_log, checkpoint_every, checkpoints_kept, stopping=stopping
        )
        # Stale models (from a checkpoint of an earlier version) serve only until the
        # background rebuild replaces them; they are never saved.
        self._serve_stale = serve_stale
        self._bulk_load = bulk_load
        self._models = self._unloaded_models()
        self._handover = search_handover
        # True while the read model may hold events of a transaction that did not commit.
        self._dirty = False
        self._pending: list[Execute] = []
        self._rebuild: BackgroundFold | None = None  # the background rebuild running, if any
        self._warming = False  # a _WarmSearch is queued
        self._heap_settled = False  # see _settle_heap_once_loaded
        self._family_index = family_index if family_index is not None else FamilyIndexProgress()
        self._family_wanted = False  # a BuildFamilyIndex was received
        self._family_stepping = False  # a _FamilyIndexStep is queued
        self._family_assembling: FamilyIndexBuild | None = None  # on its own thread
        self._family_started = 0.0
        self._images = images
        # The image served from until the graph is restored (on the first other message).
        self._image: ImageServing | None = None
        # Commands to decide over the image, queued as `_pending` is (group commit).
        self._image_batch: list[Execute] = []
        self._compaction: Compaction | None = None  # its child compacting the overlay
        self._compact_at = image_compact_at
        self._idle = (
            IdleTimer(image_idle, lambda: self.actor_ref.tell(_IdleCheck()))
            if images and image_idle
            else None
        )

    def _unloaded_models(self) -> ReadModels:
        # Stale models (from a checkpoint of an earlier version) serve only until the
        # background rebuild replaces them; they are never saved.
        return ReadModels.serving(
            self._log,
            self._checkpoints if self._checkpoints.enabled else None,
            accept_stale=self._serve_stale,
            on_stale=self._rebuild_if_stale,
            derive_lazily=self._bulk_load,
        )

    # --- pykka hooks ----------------------------------------------------------------------

    def on_start(self) -> None:
        if self._stopping is not None:
            self._stopping.writer_stopped.clear()
        # pykka neither calls on_failure nor answers queued tells when on_start raises, so a
        # failure here is settled on `ready` for whoever waits on the start.
        if self._images and self._checkpoints.enabled:
            # A new store's graph is empty: written over an empty image from the start.
            usable = open_usable_image(self._log) or empty_image(self._log)
            if usable is not None:
                self._image = self._serving(*usable)
                log.info("graph_image_served", position=usable[0].position, end=usable[1])
                if self._ready is not None:
                    self._ready.ok(None)
                return
        try:
            self._load()
        except DamagedLogError as fault:
            self._enter_fault(fault)
            if self._ready is not None:
                self._ready.fail(fault)
            return
        except BaseException as error:
            if self._ready is not None:
                self._ready.fail(error)
            self._done_with_log()
            raise
        if self._ready is not None:
            self._ready.ok(None)
        self._settle_heap_once_loaded()

    def _settle_heap_once_loaded(self) -> None:
        # The start-up's large transients (the restore's, the search index's first build)
        # are over once the index is warm; a server whose heap was held for them lets large
        # blocks come from the heap from then on (projections.heap). Later warm-ups (after a
        # rebuild) find it settled.
        if self._heap_settled or self._warming:
            return
        if self._handover is not None and self._handover.awaited:
            return  # the early reads' index is on its way: warmed once here
        self._heap_settled = True
        if keep_large_blocks_once_loaded():
            log.info("heap_settled", position=self._models.position)

    def _load(self, *, published_through: int = 0) -> None:
        """Restore the models and catch up to the log's end, publishing what the catch-up
        folds past `published_through`."""
        started = time.perf_counter()
        # The early reads' graph, if they restored the one this restore would (one graph
        # held, not two: actors.graph_handover).
        lend = self._handover.graph_lender() if self._handover is not None else None
        if self._models.restore(lend=lend):
            self._warm_search_soon()
        # Decodes strictly: damage in the tail is raised here.
        self._catch_up(start_up=True, published_through=published_through)
        log.info(
            "graph_loaded",
            position=self._models.position,
            entities=self._models.graph.entity_count(),
            seconds=round(time.perf_counter() - started, 3),
            checkpoint=self._checkpoints.saved_at,
            # Events after the checkpoint, each decoded and checked; those before it are
            # verified by `graphmem check` only.
            verified_tail=self._models.position - self._checkpoints.saved_at,
        )
        if self._checkpoint_due(1):
            # Saved here, before `ready` settles, not once idle: nothing is queued yet, and a
            # save after the start-up fold is in proportion to the graph (39 s at 1,000,000
            # entities, more under load). Queued instead, it made the start-up's next steps
            # (the schema registry's scan, the embedding service's first read) wait behind it
            # within a request's 60 s bound, and a server that missed it exited before its
            # handshake; the start-up wait for `ready` has the load's bound.
            self._save_checkpoints()
        self._rebuild_if_stale()

    def on_receive(self, message: Any) -> Any:
        if self._fault is not None:
            _fail(message, self._fault)
            return None
        if self._image is not None and self._answered_from_image(message):
            if self._image is not None and self._image_batch and self.actor_inbox.empty():
                self._flush_image_batch()
            return None
        if self._idle is not None and not isinstance(message, _IdleCheck):
            self._idle.touch()
        try:
            if self._image is not None:
                self._load_instead_of_image(_asked(message))
            self._handle(message)
            if self._pending and self.actor_inbox.empty():
                # Commands wait for the inbox to run dry (group commit); when the last message
                # was not one that commits them, commit them now.
                self._flush()
        except DamagedLogError as fault:
            self._enter_fault(fault)
            self._fail_pending(fault)
            _fail(message, fault)
            return None
        except Exception as error:  # a bug: fail what is waiting, then let the supervisor restart
            self._fail_pending(error)
            _fail(message, error)
            raise
        # Saving a checkpoint makes whatever is queued wait: do it when idle, unless overdue.
        if self._checkpoint_due(1 if self.actor_inbox.empty() else 2):
            self._save_checkpoints()
        return None

    def _answered_from_image(self, message: Any) -> bool:
        """Answer `message` from the image (actors.image_serving) if it is an official read,
        a look at the schemas or a schema registration, and the image still answers for the
        log; False when the graph must be restored for it."""
        serving = self._image
        assert serving is not None
        match message:
            case Execute(command=command) if (
                isinstance(command, OVER_IMAGE)
                and self._hooks.empty
                and message.before_append is None
            ):
                self._image_batch.append(message)
                if len(self._image_batch) >= self.max_batch or self.actor_inbox.empty():
                    self._flush_image_batch()
                return True
            case AskReads(query=query, reply=reply):
                self._flush_image_batch()  # read your own writes
                now = self._image  # the flush may have left the image
                if now is None or not now.current():
                    return False  # another process wrote: restored, caught up, then read
                reads = now.reads
                _settle(reply, lambda: reads(query))
                return True
            case AskSchemas(query=query, reply=reply):
                self._flush_image_batch()
                now = self._image
                schemas = now.schemas() if now is not None and now.current() else None
                if schemas is None:
                    return False
                _settle(reply, lambda: query(schemas))
                return True
            case _CompactionDone(compaction=compaction, compacted=compacted):
                if compaction is not self._compaction:
                    return True  # waited for and handled already (_compact_if_due)
                return self._compacted(serving, compacted)
            case _IdleCheck():
                assert self._idle is not None
                self._idle.fired()  # nothing loaded: the next restore arms it again
                return True
            case AdoptSearch():
                # The early reads served from the image too: no index comes, none is built.
                if self._handover is not None:
                    self._handover.awaited = False
                return True
        return False

    def _flush_image_batch(self) -> None:
        """Decide the queued commands over the image in one log transaction (ImageServing.
        execute) and answer them; when that cannot be done there, restore the graph and
        decide them as a loaded writer does."""
        batch, self._image_batch = self._image_batch, []
        serving = self._image
        if not batch or serving is None:
            self._pending.extend(batch)
            return
        try:
            outcomes = (
                serving.execute([(i.command, i.cause) for i in batch], self._log.clock.now_ms())
                if serving.current()
                else None
            )
        except DamagedLogError as fault:
            for item in batch:
                item.reply.fail(fault)
            raise  # on_receive enters the fault state
        except Exception as error:
            # A refused commit (disk full, read-only) stores nothing of the batch, as in _flush.
            if isinstance(error, StorageError):
                log.error("log_commit_failed", commands=len(batch), reason=str(error))
            else:
                log.exception("log_commit_failed", commands=len(batch))
            for item in batch:
                item.reply.fail(error)
            return
        if outcomes is None:
            self._pending.extend(batch)  # decided once the graph is restored, in order
            self._load_instead_of_image(_asked(batch[0]))
            self._flush()
            return
        appended = [e for o in outcomes if not isinstance(o, BaseException) for e in o[1]]
        # As a commit does (_flush): subscribers first, then the callers.
        self._publish(appended, local=True)
        _settle_batch(batch, outcomes)
        log.debug("events_appended", commands=len(batch), events=len(appended), over_image=True)
        self._compact_if_due(serving)

    def _compact_if_due(self, serving: ImageServing) -> None:
        """Start compacting the overlay in a child process when it holds enough; past the
        largest graph an image is made for, restore the graph instead. Writes faster than
        compactions (a fill through MCP) wait for the running one once the overlay holds
        twice what starts one: the heap holds a bounded overlay, whatever the write rate."""
        running = self._compaction
        if running is not None:
            if serving.compaction_due(2 * self._compact_at) and not self._compacted(
                serving, running.wait()
            ):
                self._load_instead_of_image("an overlay its compaction could not fold")
            return
        if not serving.compaction_due(self._compact_at):
            return
        if serving.overlay.entity_count() > IMAGE_MAX_ENTITIES or not isinstance(
            self._log, LmdbEventLog
        ):
            self._load_instead_of_image("a graph past the image's size")
            return
        ref = self.actor_ref

        def done(compacted: Compacted) -> None:
            with contextlib.suppress(pykka.ActorDeadError):  # stopped meanwhile
                ref.tell(_CompactionDone(compaction, compacted))

        log.info(
            "graph_image_compaction_started",
            position=serving.end,
            image=serving.image.position,
            overlay=serving.overlay.size,
        )
        every, kept = self._checkpoints.every, self._checkpoints.kept
        assert every is not None, "images are written with checkpoints only"
        try:
            compaction = self._compaction = Compaction(self._log, done, every=every, kept=kept)
        except OSError as error:  # no child can be started: the graph is restored instead
            log.warning("graph_image_compaction_failed", reason=repr(error))
            self._load_instead_of_image("an overlay that cannot be compacted")

    def _compacted(self, serving: ImageServing, compacted: Compacted) -> bool:
        """Serve from the compacted image (with an overlay of what was written since); False
        when there is none to serve from (the writer restores the graph instead)."""
        self._compaction = None
        self._flush_image_batch()  # committed first: the new overlay folds them from the log
        if self._image is not serving:
            return True  # left the image meanwhile: its checkpoint serves the restores
        image = open_image_at_or_after(self._log, serving.image.position + 1)
        if not compacted.ok or image is None or not serving.adopt(image):
            log.warning("graph_image_compaction_failed", reason=compacted.reason or "no image")
            return False
        log.info(
            "graph_image_compacted",
            position=serving.image.position,
            end=serving.end,
            overlay=serving.overlay.size,
            seconds=round(compacted.seconds, 3),
        )
        return True

    def _on_idle_check(self) -> None:
        idle = self._idle
        assert idle is not None
        idle.fired()
        left = idle.left()
        if left > 0:
            idle.arm(left)
            return
        if (
            self._pending
            or self._dirty
            or self._warming
            or self._rebuild is not None
            or self._models.stale
            or (self._handover is not None and self._handover.awaited)
        ):
            idle.arm(idle.seconds)  # busy in the background: idle once that is done
            return
        if self._family_wanted:
            return  # the graph family's index is built on the graph: kept while it is used
        count = self._models.graph.entity_count()
        if IMAGE_MIN_ENTITIES <= count <= IMAGE_MAX_ENTITIES:
            self._serve_image_again(count)

    def _serve_image_again(self, count: int) -> None:
        """Save the graph's checkpoint and image (if not saved at its position yet), then
        drop the loaded models and serve from the image, as a start on this log would."""
        self._catch_up()
        if self._models.position > self._checkpoints.saved_at:
            self._save_checkpoints(final=True)  # and its image
        usable = open_usable_image(self._log)
        if usable is None and write_graph_image(self._log, self._models.graph, count):
            usable = open_usable_image(self._log)  # saved before images were kept
        if usable is None:
            return  # another process wrote meanwhile, or no image could be written
        self._image = self._serving(*usable)
        self._models = self._unloaded_models()
        gc.collect()  # the graph's cycles, if any, before the heap is trimmed
        returned = return_freed_heap()
        log.info("graph_image_resumed", position=usable[1], entities=count, heap_returned=returned)

    def _serving(self, image: GraphImage, end: int) -> ImageServing:
        return ImageServing(
            self._log, image, end, lambda appended: self._publish(appended, local=False)
        )

    def _load_instead_of_image(self, asked: str) -> None:
        """Restore the graph (for what was `asked`, the first the image cannot answer), as a
        start does; commands queued over the image are decided there first."""
        if self._image_batch:
            self._flush_image_batch()
            if self._image is None:
                return  # the batch could not be decided there: restored for it
        serving, self._image = self._image, None
        assert serving is not None
        serving.close()
        log.info("graph_image_left", position=serving.end, asked=asked)
        # What came after the image up to `end` is published already (ImageServing).
        self._load(published_through=serving.end)
        self._settle_heap_once_loaded()
        if self._idle is not None:
            self._idle.touch()  # idle from here on, until it is asked again

    def on_stop(self) -> None:
        if self._idle is not None:
            self._idle.close()
        if self._image is not None:
            with contextlib.suppress(Exception):  # failed replies say why
                self._flush_image_batch()
        running, self._compaction = self._compaction, None
        if running is not None:
            # Its end awaited within the stop's deadline (killed past it: LMDB aborts its
            # transaction; its image is a rename, whole or absent); served from if it ended.
            running.stop(self._stopping.remaining() if self._stopping is not None else 60.0)
            serving = self._image
            if serving is not None and running.result is not None:
                with contextlib.suppress(Exception):
                    self._compacted(serving, running.result)
        serving = self._image
        if serving is not None and serving.overlay.changed and self._fault is None:
            # What was written over the image: restored and checkpointed with its image, so
            # that the next start serves from an image again (unless the stop is too near).
            count = serving.overlay.entity_count()
            if self._stopping is None or self._stopping.fits(2 * count * IMAGE_SECONDS_PER_ENTITY):
                self._image = None
                serving.close()
                log.info("graph_image_left", position=serving.end, asked="a stop")
                # Everything up to the end was published as it was committed; nothing is
                # derived for a graph that is only saved (no message may be sent now).
                self._models.restore()
                self._models.catch_up(derive_after=True)
        if self._image is not None:
            self._image.close()
            self._image = None
        try:
            self._wind_down()
        finally:
            self._done_with_log()

    def _wind_down(self) -> None:
        if self._fault is not None:
            self._drain_inbox()
            return  # models folded short of a damaged record: never checkpointed
        self._flush()
        self._abandon_rebuild(pykka.ActorDeadError("the graph writer stopped during a rebuild"))
        self._drain_inbox()
        if self._checkpoints.enabled and self._models.position > self._checkpoints.saved_at:
            self._save_checkpoints(final=True)

    def on_failure(self, *exc_info: Any) -> None:
        try:
            self._fail_pending(exc_info[1] or RuntimeError("graph writer failed"))
            self._abandon_rebuild(exc_info[1] or RuntimeError("graph writer failed"))
            self._drain_inbox()
        finally:
            self._done_with_log()  # before the report: a restarted writer clears it again
        if self._supervision is not None:
            self._supervision.report_failure(exc_info[1])

    def _done_with_log(self) -> None:
        if self._stopping is not None:
            self._stopping.writer_stopped.set()

    def _enter_fault(self, fault: DamagedLogError) -> None:
        self._fault = fault
        self._abandon_rebuild(fault)
        log.error(
            "log_damaged", position=fault.position, reason=fault.reason, refusing_requests=True
        )

    # --- messages -------------------------------------------------------------------------

    def _handle(self, message: Any) -> None:
        match message:
            case Execute():
                self._pending.append(message)
                if len(self._pending) >= self.max_batch or self.actor_inbox.empty():
                    self._flush()
            case ApplyRemote(envelopes=envelopes, reply=reply):
                self._flush()  # queued local commands first: they were acknowledged earlier
                self._apply_remote(envelopes, reply)
            case Ask(query=query, reply=reply):
                self._answer(reply, query, lambda: self._models.graph)
            case AskModels(query=models_query, reply=reply):
                self._answer(reply, models_query, lambda: self._models)
            case AskReads(query=reads_query, reply=reply):
                self._answer(reply, reads_query, lambda: self._models)
            case AskSchemas(query=schemas_query, reply=reply):
                self._answer(reply, schemas_query, lambda: self._models.schemas)
            case SaveCheckpoint(reply=reply):
                self._flush()
                self._catch_up()  # only committed events in what is saved
                if self._models.position > self._checkpoints.saved_at:  # else nothing to add
                    self._save_checkpoints(final=True)
                reply.ok(self._checkpoints.saved_at)
            case Rebuild(reply=reply):
                self._start_rebuild("requested").waiters.append(reply)
            case _Rebuilt(folded=folded):
                self._finish_rebuild(folded)
            case BuildFamilyIndex():
                self._family_wanted = True
                self._step_family_index_soon()
            case _FamilyIndexStep():
                self._family_stepping = False
                self._flush()  # queued commands first: a step only fills idle time
                self._catch_up()  # may replace the models: build on whichever serve now
                self._step_family_index()
            case _FamilyIndexAssembled(build=build, index=index):
                self._install_family_index(build, index)
            case AdoptSearch(position=position, index=index):
                self._adopt_search(position, index)
            case _IdleCheck():
                # Handled here, not before: commands queued behind it still commit after it.
                self._on_idle_check()
            case _CompactionDone(compaction=compaction):
                if compaction is self._compaction:
                    self._compaction = None  # the graph is restored: its checkpoint is a bonus
            case _WarmSearch():
                self._warm_search_step()
            case _:
                super().on_receive(message)

    def _warm_search_step(self) -> None:
        self._warming = False
        self._flush()  # queued commands first: a warm-up step only fills idle time
        self._catch_up()  # may replace the models: warm whichever serve now
        if self._models.search.warm(self._models.graph):
            self._warm_search_soon()
        else:  # the point from which searches find their index ready (bench.warm_up)
            log.info("search_warmed", position=self._models.position)
            self._settle_heap_once_loaded()

    def _answer(
        self, reply: Reply[Any], query: Callable[[Any], Any], models: Callable[[], Any]
    ) -> None:
        self._flush()  # read your own writes
        self._catch_up()  # may replace the read models: look them up only after it
        try:
            reply.ok(query(models()))
        except Exception as error:
            reply.fail(error)

    # --- the write path -------------------------------------------------------------------

    def _flush(self) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        try:
            caught_up, outcomes = self._log.transact(lambda txn: self._decide_batch(txn, batch))
        except DamagedLogError as fault:  # met catching up on other processes' appends
            self._enter_fault(fault)
            for item in batch:
                item.reply.fail(fault)
            return
        except StorageError as fault:
            # The disk refused the commit (full, read-only): expected, not a bug; nothing of
            # the batch is stored, and the next batch starts from the committed log.
            log.error("log_commit_failed", commands=len(batch), reason=str(fault))
            for item in batch:
                item.reply.fail(fault)
            return
        except Exception as error:
            log.exception("log_commit_failed", commands=len(batch))
            for item in batch:
                item.reply.fail(error)
            return
        self._dirty = False
        self._publish(caught_up, local=False)
        # Subscribers see a commit before its callers hear of it, so whoever is answered can
        # count on hooks and notifications having run.
        appended = [e for o in outcomes if not isinstance(o, BaseException) for e in o[1]]
        self._publish(appended, local=True)
        if not self._hooks.empty:
            for outcome in outcomes:
                if not isinstance(outcome, BaseException):
                    self._run_after_hooks(outcome)
        _settle_batch(batch, outcomes)
        log.debug("events_appended", commands=len(batch), events=len(appended))

    def _apply_remote(self, envelopes: Sequence[Envelope], reply: Reply[RemoteAppend]) -> None:
        def append(txn: LogTransaction) -> tuple[list[Envelope], RemoteAppend]:
            if txn.attempt > 0 or self._dirty:
                self._reset_models()
            caught_up: list[Envelope] = []
            catch_up(txn, self._models.apply, self._models.position, each_chunk=caught_up.extend)
            self._dirty = True
            result = txn.append_remote(envelopes)
            self._models.apply(result.stored)
            return caught_up, result

        try:
            caught_up, result = self._log.transact(append)
        except DamagedLogError:
            raise  # on_receive enters the fault state and fails the reply
        except Exception as error:
            # A refused commit (disk full) stores nothing: the replicator tries again later.
            log.error("remote_append_failed", events=len(envelopes), reason=repr(error))
            reply.fail(error)
            return
        self._dirty = False
        self._publish(caught_up, local=False)
        self._publish(result.stored, local=False)  # another node's writes: not this process's
        reply.ok(result)

    def _decide_batch(
        self, txn: LogTransaction, batch: list[Execute]
    ) -> tuple[list[Envelope], list[_Outcome | BaseException]]:
        if txn.attempt > 0 or self._dirty:
            self._reset_models()
        # Other processes' appends since, as this transaction sees them: decisions are made
        # against the latest state of the shared log.
        caught_up: list[Envelope] = []
        catch_up(txn, self._models.apply, self._models.position, each_chunk=caught_up.extend)
        self._dirty = True
        outcomes: list[_Outcome | BaseException] = []
        # "Now" for every time-based rule of this batch: the clock that stamps its events.
        now_ms = self._log.clock.now_ms()
        for item in batch:
            try:
                decision = decide(self._models.graph, item.command, self._models.schemas, now_ms)
                if not self._hooks.empty:
                    self._run_before_hooks(item.command, decision)
                if item.before_append is not None and decision.events:
                    item.before_append(decision.result)
            except (CommandRejectedError, FamilyIndexBuildingError) as refusal:
                outcomes.append(refusal)  # expected: the caller is told, nothing appended
                continue
            except Exception as error:  # decide is pure: a bug there fails this command only
                log.exception("decide_failed", command=type(item.command).__name__)
                outcomes.append(error)
                continue
            envelopes = txn.append(decision.events, item.cause) if decision.events else []
            self._models.apply(envelopes)
            outcomes.append((decision.result, envelopes, item.command, decision))
        return caught_up, outcomes

    # --- hooks ----------------------------------------------------------------------------

    def _run_before_hooks(self, command: Command, decision: Decision) -> None:
        """Raises HookVetoError (a rejection) when a before-hook refuses the command."""
        for step, events in decision.steps:
            self._hooks.before(operation_of(step), step, events)
        self._hooks.before(operation_of(command), command, decision.events)

    def _run_after_hooks(self, outcome: _Outcome) -> None:
        _, envelopes, command, decision = outcome
        start = 0
        for step, events in decision.steps:
            self._hooks.after(operation_of(step), step, envelopes[start : start + len(events)])
            start += len(events)
        self._hooks.after(operation_of(command), command, envelopes)

    # --- models --------------------------------------------------------------------------

    def _reset_models(self) -> None:
        """Drop models that may hold uncommitted events: back to the newest checkpoint (the
        search index is rebuilt from the graph on its next use; lazily folded projections
        are restored on their first use)."""
        if self._models.restore():
            self._warm_search_soon()
        self._family_index_lost()
        self._rebuild_if_stale()

    # --- the family index, built in steps ---------------------------------------------------

    def _step_family_index_soon(self) -> None:
        if not self._family_stepping:
            self._family_stepping = True
            self.actor_ref.tell(_FamilyIndexStep())

    def _family_index_lost(self) -> None:
        """New read models (a reset, a rebuild's swap): build the index on their graph too."""
        if self._family_wanted:
            self._family_index.lost()
            self._step_family_index_soon()

    def _step_family_index(self) -> None:
        graph = self._models.graph
        if family_index_built(graph):
            self._family_index.finished()
            return
        build = graph.followed_by()
        if not isinstance(build, FamilyIndexBuild):
            build = graph.follower(FamilyIndexBuild, lambda _: FamilyIndexBuild(graph))
            self._family_started = time.perf_counter()
            log.info("family_index_build_started", items=build.total)
        if build is self._family_assembling:
            return  # its _FamilyIndexAssembled comes next
        derived = build.step(FAMILY_INDEX_STEP)
        self._family_index.building(build.done, build.total)
        if not derived:
            self._step_family_index_soon()  # also when displaced: the next step says built
            return
        self._assemble_family_index(build)

    def _assemble_family_index(self, build: FamilyIndexBuild) -> None:
        """Assemble the derived entries into the index on a thread of its own: at 1,000,000
        entities and 3,000,000 edges that is about a minute of tallies and sorts, which on
        the writer outlasted every request's 60 s bound. Family reads meanwhile still
        answer that the index is being built; the fold goes on marking what it touches."""
        self._family_assembling = build
        ref = self.actor_ref

        def assemble() -> None:
            index: FamilyIndex | None = None
            try:
                index = build.assemble()
            except Exception:
                log.exception("family_index_assembly_failed")
            with contextlib.suppress(pykka.ActorDeadError):  # stopped meanwhile
                ref.tell(_FamilyIndexAssembled(build, index))

        threading.Thread(target=assemble, name="family-index-assembly", daemon=True).start()

    def _install_family_index(self, build: FamilyIndexBuild, index: FamilyIndex | None) -> None:
        if build is self._family_assembling:
            self._family_assembling = None
        if index is None:  # the failure is logged: assemble here, as a one-shot read would
            index = build.assemble()
        if build.install(index) is None:  # displaced (new models): build on those
            self._step_family_index_soon()
            return
        self._family_index.finished()
        log.info(
            "family_index_built",
            entities=index.entity_count,
            items=build.total,
            seconds=round(time.perf_counter() - self._family_started, 3),
        )

    # --- background rebuild ---------------------------------------------------------------

    def _start_rebuild(self, reason: str) -> BackgroundFold:
        """The background rebuild, started unless one is running (it answers for both)."""
        if self._rebuild is None:
            ref = self.actor_ref

            def done(folded: Folded) -> None:
                with contextlib.suppress(pykka.ActorDeadError):  # stopped meanwhile
                    ref.tell(_Rebuilt(folded))

            self._rebuild = BackgroundFold(self._log, done)
            self._rebuild.start()
            log.info("rebuild_started", position=self._models.position, reason=reason)
        return self._rebuild

    def _rebuild_if_stale(self) -> None:
        if self._models.stale and self._rebuild is None:
            self._start_rebuild("stale_checkpoint")

    def _finish_rebuild(self, folded: Folded) -> None:
        """On the writer's thread: catch the fresh models up to where the old ones are, then
        serve from them (queries were answered by the old ones until now)."""
        rebuild, self._rebuild = self._rebuild, None
        assert rebuild is not None, "only a running rebuild reports back"
        models = folded.models
        if models is None:
            error = folded.error or RuntimeError("the rebuild produced nothing")
            # Stale models go on serving (the next start tries again): better than none.
            log.error("rebuild_failed", reason=repr(error), serving_stale=self._models.stale)
            rebuild.settle(error)
            return
        started = time.perf_counter()
        self._flush()
        self._catch_up()  # the old models: committed events only, up to the log's end
        # Only as far as the old models: whatever lies beyond has not been published yet.
        caught_up = models.catch_up(upto=self._models.position)
        self._models.swap(models)
        self._warm_search_soon()
        self._family_index_lost()
        if self._checkpoints.enabled:
            self._save_checkpoints(final=True)
        seconds = folded.seconds + time.perf_counter() - started
        result = RebuildResult(models.position, folded.events + caught_up, seconds)
        log.info("rebuild_finished", position=result.position, events=result.events)
        rebuild.settle(result)

    def _adopt_search(self, position: int, index: SearchProjection | None) -> None:
        if self._handover is not None:
            self._handover.awaited = False
        self._flush()
        self._catch_up()  # committed events only, up to the log's end: then compared
        adopted = index is not None and self._models.adopt_search(index, position)
        log.info("search_handed_over", adopted=adopted, position=position)
        self._warm_search_soon()  # the adopted index's filter, if unfinished, or our own

    def _warm_search_soon(self) -> None:
        # A bulk load never searches; its idle moments are between two of its own batches.
        # An index on its way (AdoptSearch) is warmed once it is here, not ours meanwhile.
        awaited = self._handover is not None and self._handover.awaited
        if not self._warming and not self._bulk_load and not awaited:
            self._warming = True
            self.actor_ref.tell(_WarmSearch())

    def _abandon_rebuild(self, error: BaseException) -> None:
        if self._rebuild is not None:
            self._rebuild.abandon(error)
            self._rebuild = None

    # --- checkpoints ----------------------------------------------------------------------

    def _checkpoint_due(self, intervals: int) -> bool:
        return (
            not self._dirty
            and not self._models.stale
            and self._checkpoints.due(self._models.position, intervals)
        )

    def _save_checkpoints(self, *, final: bool = False) -> None:
        if self._dirty:
            return  # never a model that may hold uncommitted events (nor a stale one: save)
        saved_before = self._checkpoints.saved_at
        self._models.save(final=final)
        graph = self._models.graph
        if self._images and self._checkpoints.saved_at == graph.position != saved_before:
            count = graph.entity_count()
            stopping = self._stopping
            # A stop's final save first; its image only if it ends in time (the next start
            # restores instead: an image only saves memory).
            if stopping is not None and not stopping.fits(count * IMAGE_SECONDS_PER_ENTITY):
                log.info("graph_image_skipped", position=graph.position, entities=count)
            else:
                write_graph_image(self._log, graph, count)

    def _catch_up(self, *, start_up: bool = False, published_through: int = 0) -> None:
        if self._dirty:
            self._reset_models()
            self._dirty = False
        if self._log.last_position() <= self._models.position:
            return

        # Possibly the whole log at start-up (a rebuild, when no checkpoint fits): fold the
        # projections only, then start the derived indexes over from them, as after a
        # restore; noting every event for them costs more than the fold itself.
        def publish(chunk: Sequence[Envelope]) -> None:
            if chunk and chunk[0].position <= published_through:
                chunk = [e for e in chunk if e.position > published_through]
                if not chunk:
                    return
            self._publish(chunk, local=False)

        self._models.catch_up(each_chunk=publish, derive_after=start_up)
        if start_up:
            self._warm_search_soon()

    def _publish(self, envelopes: Sequence[Envelope], *, local: bool) -> None:
        self._subscribers.publish(envelopes, local=local)

    def _fail_pending(self, error: BaseException) -> None:
        batch, self._pending = self._image_batch + self._pending, []
        self._image_batch = []
        for item in batch:
            item.reply.fail(error)

    def _drain_inbox(self) -> None:
        """Answer requests still queued when the actor stops; pykka drops tells silently."""
        dead = self._fault or pykka.ActorDeadError(
            "the graph writer stopped before handling the request"
        )
        while not self.actor_inbox.empty():
            _fail(self.actor_inbox.get().message, dead)


def _settle_batch(
    batch: Sequence[Execute],
    outcomes: Sequence[tuple[CommandResult, list[Envelope], *tuple[Any, ...]] | BaseException],
) -> None:
    """Answer each command of a committed batch: its result (its events counted), or why it
    was refused."""
    for item, outcome in zip(batch, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            item.reply.fail(outcome)
        else:
            if item.tally is not None:
                item.tally.add(len(outcome[1]))
            item.reply.ok(outcome[0])


def _settle(reply: Reply[Any], answer: Callable[[], Any]) -> None:
    try:
        reply.ok(answer())
    except Exception as error:
        reply.fail(error)


def _asked(message: Any) -> str:
    """What a message asks, for the log: its command's type, else its own."""
    command = getattr(message, "command", None)
    if command is not None:
        return type(command).__name__
    query = getattr(message, "query", None)
    where = getattr(query, "__qualname__", None)
    return type(message).__name__ if where is None else f"{type(message).__name__} {where}"


def _fail(message: Any, error: BaseException) -> None:
    """Fail the reply `message` carries, if it is a request (a no-op once it is settled)."""
    if isinstance(
        message, Execute | Ask | AskModels | AskReads | AskSchemas | Rebuild | ApplyRemote
    ):
        message.reply.fail(error)
