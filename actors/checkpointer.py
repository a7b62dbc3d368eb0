"""Checkpointer: the graph writer's read models to and from checkpoints beside the log.

Checkpoints only save time: a model is restored from the newest one that passes every check
(eventstore.checkpoints) and restores, else folded from the log; any failure to load or save
is logged and otherwise ignored, so it can never stop writes or start-up.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TypeVar

import structlog

from actors.catch_up import catch_up
from actors.graph_handover import GraphLender, LentGraph
from actors.stopping import Stopping
from eventstore.checkpoints import Retention, check_abandoned
from eventstore.log import Checkpoint, CheckpointAbandonedError, EventLog, StorageError
from projections.projection import Projection

log = structlog.get_logger(__name__)

# Events folded between two checkpoints, and how many checkpoints of each projection to keep.
CHECKPOINT_EVERY = 100_000
CHECKPOINTS_KEPT = 8


P = TypeVar("P", bound=Projection)


def restore_newest(
    event_log: EventLog, kind: type[P], at_or_before: int | None, version: int | None = None
) -> P | None:
    """The projection restored from the newest checkpoint of `kind` at `version` (default: its
    current one; at or before a position, if given) that loads and restores; one that does not
    is logged and passed over for the one before it. None without one."""
    version = kind.version if version is None else version
    while True:
        found: Checkpoint | None = None
        try:
            found = event_log.checkpoints.load(kind.name, version, at_or_before=at_or_before)
            if found is None:
                return None
            restored = kind.from_snapshot(found.payload)
            if restored.position != found.position:
                raise ValueError("the snapshot's position is not the checkpoint's")
        except Exception as error:  # a checkpoint only saves time: never trust a bad one
            log.warning("checkpoint_unusable", checkpoint=kind.name, reason=repr(error))
            if found is None:
                return None
            at_or_before = found.position - 1
            continue
        return restored


# On a long log, a checkpoint is due only after this fraction of the position (1 / value).
SPARSER_AFTER = 4
# A save's seconds per second its checkpoint took to load, for a guess before any save was
# measured (1,000,000 entities, loaded machine: loaded in 53 s, saved in 75-108 s).
SAVE_PER_LOAD = 1.5


class Checkpointer:
    """Loads and saves the checkpoints of the registered projections (projections.projection).

    The eagerly folded ones are saved together, at their common position, every `every`
    folded events; a lazily folded one (folded only when used) whenever it has moved on as
    far. `every=None` turns checkpoints off: nothing is loaded or saved.
    """

    def __init__(
        self,
        event_log: EventLog,
        every: int | None = CHECKPOINT_EVERY,
        kept: int = CHECKPOINTS_KEPT,
        stopping: Stopping | None = None,
    ) -> None:
        """`stopping`: once a stop is asked, a save that would not end before its deadline
        (going by the last one) is skipped, and one in progress is abandoned at the deadline."""
        self._log = event_log
        self._stopping = stopping
        self.every = every
        self.kept = kept
        self._retention = Retention(every or 1, kept)
        self.saved_at = 0  # position of the eager checkpoints last loaded or saved
        self._lazy_at: dict[str, int] = {}  # the same, per lazily folded projection

    @property
    def enabled(self) -> bool:
        return self.every is not None

    def due(self, position: int, intervals: int = 1) -> bool:
        """True once `intervals` intervals of events were folded since the last checkpoint.

        An interval is `every` events, or a quarter of the position if that is more: a save
        costs time in proportion to the graph, so on a long log saves grow sparser and a bulk
        load pays for a few dozen of them, not one per `every` events.
        """
        if self.every is None:
            return False
        interval = max(self.every, position // SPARSER_AFTER)
        return position - self.saved_at >= interval * intervals

    # --- loading --------------------------------------------------------------------------

    def restore(
        self,
        kinds: Sequence[type[Projection]],
        *,
        at_or_before: int | None = None,
        accept_stale: bool = False,
        lend: GraphLender | None = None,
    ) -> tuple[list[Projection], bool] | None:
        """The `kinds` as of the newest valid checkpoint of the first (at or before a position,
        if given), level with each other: each other one from its newest checkpoint at or
        before that, else empty, folded up to it from the log. None without one (fold from
        the start). With `accept_stale`, a checkpoint of an earlier version the projection
        still reads (its `readable_versions`) is restored when none of the current version is
        found, and the result is marked stale: it may differ from what this version folds, so
        it serves only until a rebuild replaces it. `lend` (a start-up's restore only): the
        graph restored elsewhere from the newest checkpoint and folded to the log's end, taken
        instead of loading it again (actors.graph_handover); the others are brought level."""
        if at_or_before is None:
            self.saved_at = 0
            self._lazy_at.clear()
        if not self.enabled or not kinds:
            return None
        anchor, *others = kinds
        # A start-up's restore is logged; an as-of read's (at_or_before) logs its own build.
        announce = at_or_before is None
        lent = self._borrow(anchor, lend) if lend is not None and at_or_before is None else None
        found: tuple[Projection, bool] | None = None if lent is None else (lent.graph, False)
        if found is None:
            found = self._load(anchor, at_or_before, accept_stale, announce)
        if found is None:
            return None
        first, stale = found
        position = first.position
        restored: list[Projection] = [first]
        for kind in others:
            loaded = self._load(kind, position, accept_stale, announce)
            other = loaded[0] if loaded is not None else kind()
            stale = stale or (loaded is not None and loaded[1])
            # Saved together, so only a damaged record (or a missing one) lags: bring it level.
            catch_up(self._log, other.apply_all, other.position, upto=position)
            restored.append(other)
        if at_or_before is None:
            # Where the checkpoint is, not the lent graph's position: the events after it
            # are not saved yet.
            self.saved_at = position if lent is None else lent.checkpoint
        return restored, stale

    def _borrow(self, anchor: type[Projection], lend: GraphLender) -> LentGraph | None:
        """The graph `lend` gives if it is the fold of the whole log as it is now: restored
        from the newest checkpoint and folded on to the log's end, as `_load` and the
        catch-up after it would make it (the same log folds to the same graph). Not by
        listing the checkpoints here: that reads every stored record's pages (~30 MB at
        50,000 entities), which the early reads' restore has just done (actors.graph_handover)."""
        end = self._log.last_position()
        lent = lend(end)
        if lent is None or type(lent.graph) is not anchor or lent.graph.position != end:
            return None
        self._expect_save(lent.seconds)
        log.info(
            "checkpoint_adopted",
            checkpoint=anchor.name,
            version=anchor.version,
            position=lent.checkpoint,
            folded_to=lent.graph.position,
        )
        return lent

    def restore_lazy(
        self, kind: type[P], at_or_before: int, *, accept_stale: bool = False
    ) -> tuple[P, bool] | None:
        """A lazily folded projection as of its newest valid checkpoint at or before a
        position, and whether it is stale (see `restore`); None without one."""
        if not self.enabled:
            return None
        found = self._load(kind, at_or_before, accept_stale)
        if found is not None and not found[1]:
            self._lazy_at[kind.name] = found[0].position
        return found

    def _load(
        self, kind: type[P], at_or_before: int | None, accept_stale: bool, announce: bool = True
    ) -> tuple[P, bool] | None:
        """The newest usable checkpoint of `kind` at its version, else (with `accept_stale`)
        the newest of its readable versions, with whether it is one of those."""
        current = self._load_version(kind, kind.version, at_or_before, announce)
        if current is not None or not accept_stale:
            return None if current is None else (current, False)
        stale: P | None = None
        stale_version = kind.version
        for readable in sorted(kind.readable_versions):
            found = self._load_version(kind, readable, at_or_before, announce)
            if found is not None and (stale is None or found.position > stale.position):
                stale, stale_version = found, readable
        if stale is None:
            return None
        log.warning(
            "checkpoint_stale",
            checkpoint=kind.name,
            version=stale_version,
            current_version=kind.version,
            position=stale.position,
        )
        return stale, True

    def _load_version(
        self, kind: type[P], version: int, at_or_before: int | None, announce: bool
    ) -> P | None:
        started = time.perf_counter()
        restored = restore_newest(self._log, kind, at_or_before, version)
        seconds = time.perf_counter() - started
        if restored is not None:
            self._expect_save(seconds)
        if restored is not None and announce:
            log.info(
                "checkpoint_loaded",
                checkpoint=kind.name,
                version=version,
                position=restored.position,
                seconds=round(seconds, 3),
            )
        return restored

    def _expect_save(self, load_seconds: float) -> None:
        """Until this process has saved a checkpoint, what one costs is guessed from loading
        one: a stop's final save of a 1,000,000-entity graph that nobody knew would take
        ~100 s was started, and outlived the stop's wait (the log left open at exit)."""
        stopping = self._stopping
        if stopping is not None and not stopping.save_measured:
            guess = SAVE_PER_LOAD * load_seconds
            stopping.last_save_seconds = max(stopping.last_save_seconds, guess)

    # --- saving ---------------------------------------------------------------------------

    def save(
        self,
        eager: Sequence[Projection],
        lazy: Sequence[Projection | Checkpoint],
        *,
        final: bool = False,
    ) -> None:
        """Save the projections in one write transaction; the caller vouches that they hold
        only committed events, and that the eager ones are level (a lazy one may come as its
        checkpoint already: a rebuild's snapshot not restored yet, saved as it is). A failure
        is logged and retried only an interval later, so a full disk costs one attempt per
        interval, never a write."""
        if self.every is None or not eager:
            return
        position = eager[0].position
        stopping = self._stopping
        if stopping is not None and not stopping.fits(stopping.last_save_seconds):
            # The log is the truth: the next start folds these events from it instead.
            log.info(
                "checkpoint_skipped",
                position=position,
                reason="a stop was asked and the save would not end before its deadline",
                last_save_seconds=round(stopping.last_save_seconds, 3),
            )
            return
        abandoned = stopping.passed if stopping is not None else None
        started = time.perf_counter()
        items: list[Checkpoint] = []
        try:
            for projection in eager:
                check_abandoned(abandoned)  # each snapshot is in proportion to the graph
                items.append(_checkpoint(projection))
            for model in lazy:
                moved = model.position - self._lazy_at.get(model.name, 0)
                if moved > 0 and (final or moved >= self.every):
                    check_abandoned(abandoned)
                    items.append(model if isinstance(model, Checkpoint) else _checkpoint(model))
            written = self._log.checkpoints.save(
                *items, retention=self._retention, abandoned=abandoned
            )
        except CheckpointAbandonedError:
            log.info(
                "checkpoint_abandoned",
                position=position,
                reason="a stop was asked and its deadline passed",
                seconds=round(time.perf_counter() - started, 3),
            )
            return
        except StorageError as fault:  # a full or read-only disk: expected, no stack
            log.warning("checkpoint_save_failed", position=position, reason=str(fault))
            self.saved_at = position
            return
        except Exception:  # checkpoints are an optimisation: a failure must not stop writes
            log.exception("checkpoint_save_failed", position=position)
            self.saved_at = position
            return
        self.saved_at = position
        for item in items[len(eager) :]:
            self._lazy_at[item.name] = max(self._lazy_at.get(item.name, 0), item.position)
        seconds = time.perf_counter() - started
        if stopping is not None:
            stopping.last_save_seconds = seconds
            stopping.save_measured = True
        log.info(
            "checkpoint_saved",
            position=position,
            checkpoints=len(items),
            bytes=written,
            seconds=round(seconds, 3),
        )


def _checkpoint(projection: Projection) -> Checkpoint:
    """`projection` as a checkpoint of its current version, at its position."""
    return Checkpoint(
        projection.name, projection.version, projection.position, projection.to_snapshot()
    )
