"""Rebuilding read models from the log: fresh folds with progress, checked and checkpointed.

Used by `graphmem rebuild` (fold the log from scratch, compare with the newest checkpoints,
save fresh ones) and by the graph writer's background rebuild (fold on a worker thread while
the old models keep serving). Both build the log's plain prefix directly
(projections.plain_prefix: most of a real log, about twice as fast as folding it) and fold
only the rest. Only reads the log, so it runs beside a live writer, in this
process or another.
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import lmdb
import structlog

from actors.bridge import Reply
from actors.catch_up import CatchUpCancelledError
from actors.checkpointer import CHECKPOINT_EVERY, CHECKPOINTS_KEPT, restore_newest
from actors.read_models import ReadModels
from eventstore.checkpoints import Retention
from eventstore.events import encode_envelope
from eventstore.lmdb_log import LmdbEventLog
from eventstore.lmdb_txn import READ_CHUNK, read_chunk
from eventstore.log import Checkpoint, EventLog
from projections.graph_diff import diff_graphs, encode_change
from projections.plain_prefix import PlainPrefix, PrefixSnapshots
from projections.projection import REGISTERED, registered
from projections.schemas import SchemaProjection

__all__ = [
    "PROJECTIONS",
    "BackgroundFold",
    "Folded",
    "Mismatch",
    "RebuildReport",
    "RebuildResult",
    "fold_fresh",
    "read_prefix",
    "rebuild_checkpoints",
    "stored_records",
]

log = structlog.get_logger(__name__)

PROJECTIONS = tuple(entry.name for entry in REGISTERED)
"""What can be rebuilt and checkpointed, in the order they are saved."""
LAZY = tuple(entry.name for entry in REGISTERED if entry.lazy)
"""What a server folds only when read: a background rebuild hands them over as bytes."""

# --- in the background -----------------------------------------------------------------------


@dataclass(frozen=True)
class Folded:
    """What a background fold produced: fresh models up to their position, or the error."""

    models: ReadModels | None
    error: BaseException | None
    events: int
    seconds: float


@dataclass(frozen=True)
class RebuildResult:
    """A finished background rebuild: the position the new models serve from, the events
    folded into them and how long it took."""

    position: int
    events: int
    seconds: float


class BackgroundFold:
    """Folds the whole log into fresh models on a worker thread (reads only), then hands the
    outcome to `done`, on that thread; `cancel` makes it stop at the next chunk. `waiters` are
    the requests its result answers."""

    def __init__(
        self,
        event_log: EventLog,
        done: Callable[[Folded], None],
        names: Iterable[str] | None = None,
    ) -> None:
        self._log = event_log
        self._done = done
        self._names = None if names is None else tuple(names)
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="graphmem-rebuild", daemon=True)
        self.waiters: list[Reply[RebuildResult]] = []

    def start(self) -> None:
        self._thread.start()

    def settle(self, outcome: RebuildResult | BaseException) -> None:
        """Answer every waiter with the result, or fail them with the error."""
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if isinstance(outcome, BaseException):
                waiter.fail(outcome)
            else:
                waiter.ok(outcome)

    def abandon(self, error: BaseException) -> None:
        """Stop the fold at its next chunk and fail the waiters with `error`."""
        self._cancel.set()
        self.settle(error)

    def join(self, timeout: float) -> bool:
        """Wait for the worker to end; True if it did."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            models, events, _ = fold_fresh(
                self._log, self._names, cancelled=self._cancel.is_set, hold=LAZY
            )
            outcome = Folded(models, None, events, time.perf_counter() - started)
        except Exception as error:  # the worker's edge: the error goes to whoever asked
            outcome = Folded(None, error, 0, time.perf_counter() - started)
        self._done(outcome)


# --- a fresh fold: the plain prefix built directly, the rest folded ------------------------


def read_prefix(
    event_log: EventLog,
    names: Iterable[str],
    upto: int,
    *,
    progress: Callable[[int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    stops: Iterable[int] = (),
    at_stop: Callable[[PlainPrefix], None] | None = None,
) -> PrefixSnapshots:
    """The snapshots of `names` at the end of the log's plain prefix, up to `upto`, built
    without a fold (projections.plain_prefix); position 0 if the log starts with an event that
    is not plain. `progress` is told the events of each chunk read; `at_stop` is handed the
    prefix at each of `stops` before `upto` that it reaches (its snapshots can be taken
    there: reading goes on after)."""
    names = tuple(names)
    if not PlainPrefix.BUILDS.issuperset(names):
        return PrefixSnapshots(0, {})  # a model it cannot build: every one is folded
    prefix = PlainPrefix(getattr(event_log, "path", None))
    # Millions of columns' items and keys that live until the snapshots are written, none in
    # a cycle: collections would only scan them (they took half the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        inner = sorted(stop for stop in set(stops) if 0 < stop < upto)
        for chunk in stored_records(event_log, upto):
            raws = chunk
            # A stop inside this chunk: the records up to it first, then the stop's check.
            while inner and not prefix.ended and prefix.position + len(raws) >= inner[0]:
                cut = inner.pop(0) - prefix.position
                head, raws = raws[:cut], raws[cut:]
                read = prefix.feed(head)
                if progress is not None and read:
                    progress(read)
                if at_stop is not None and not prefix.ended:
                    at_stop(prefix)
            read = prefix.feed(raws) if raws and not prefix.ended else 0
            if progress is not None and read:
                progress(read)
            if prefix.ended:
                break
            if cancelled is not None and cancelled():
                raise CatchUpCancelledError(f"stopped at position {prefix.position}")
        built = prefix.snapshots(names) if prefix.position else PrefixSnapshots(0, {})
    finally:
        if collecting:
            gc.enable()
    return built


def fold_fresh(
    event_log: EventLog,
    names: Iterable[str] | None = None,
    *,
    upto: int | None = None,
    progress: Callable[[int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    hold: Iterable[str] = (),
) -> tuple[ReadModels, int, int]:
    """Fresh models of `names` (default: every registered one) up to `upto` (default: the
    log's end), the events that took, and how many of them were the plain prefix built
    directly (the rest folded). The models are what folding the whole log gives, byte for
    byte in their snapshots. Those of `hold` built directly are held as their snapshots,
    restored and folded on only when first read (ReadModels.start_from)."""
    models = ReadModels.folding(event_log, names)
    end = event_log.last_position() if upto is None else upto
    prefix = read_prefix(event_log, models.names(), end, progress=progress, cancelled=cancelled)
    _start_from(models, prefix, frozenset(hold))
    events = models.catch_up(
        upto=end,
        each_chunk=None if progress is None else lambda c: progress(len(c)),
        cancelled=cancelled,
    )
    return models, prefix.position + events, prefix.position


def _start_from(
    models: ReadModels, prefix: PrefixSnapshots, hold: frozenset[str] = frozenset()
) -> None:
    if prefix.position:
        kinds = {name: registered(name).projection for name in prefix.snapshots}
        models.start_from(
            {
                name: kinds[name].from_snapshot(data)
                for name, data in prefix.snapshots.items()
                if name not in hold
            },
            {
                name: Checkpoint(name, kinds[name].version, prefix.position, data)
                for name, data in prefix.snapshots.items()
                if name in hold
            },
        )


def stored_records(event_log: EventLog, upto: int) -> Iterator[list[bytes]]:
    """The log's stored records from position 1 to `upto`, a chunk at a time: as stored in an
    LMDB log (decoding them is the direct path's own business), encoded from any other."""
    position = 1
    if isinstance(event_log, LmdbEventLog):
        db = event_log.shared.log_db
        while position <= upto:
            raws = event_log.read(partial(_chunk, db=db, position=position))
            raws = raws[: upto - position + 1]
            if not raws:
                return
            yield raws
            position += len(raws)
        return
    envelopes = event_log.read_from(position)
    while position <= upto:
        chunk = list(itertools.islice(envelopes, min(READ_CHUNK, upto - position + 1)))
        if not chunk:
            return
        yield list(map(encode_envelope, chunk))
        position += len(chunk)


def _chunk(txn: lmdb.Transaction, *, db: lmdb._Database, position: int) -> list[bytes]:
    return read_chunk(txn, db, position)


# --- checkpoints -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    """A checkpoint that disagrees with the log it was saved from: always a bug."""

    name: str
    position: int
    detail: str


@dataclass
class RebuildReport:
    """What `rebuild_checkpoints` did."""

    names: tuple[str, ...]
    position: int = 0
    events: int = 0
    fold_seconds: float = 0.0
    checked: list[tuple[str, int]] = field(default_factory=list)
    direct_events: int = 0  # of `events`, the plain prefix built directly (read_prefix)
    mismatches: list[Mismatch] = field(default_factory=list)
    saved_bytes: int = 0

    @property
    def events_per_second(self) -> float:
        return self.events / self.fold_seconds if self.fold_seconds > 0 else 0.0


SHOWN_CHANGES = 5


def _difference(name: str, fresh: Any, stored: Any) -> str | None:
    """How a stored projection differs from the fresh fold at the same position; None: not."""
    if name == "graph":
        if fresh.entity_count() != stored.entity_count():
            return f"{stored.entity_count()} entities, the log has {fresh.entity_count()}"
        if fresh.relation_count() != stored.relation_count():
            return f"{stored.relation_count()} relations, the log has {fresh.relation_count()}"
        changes = diff_graphs(stored.snapshot(), fresh.snapshot())
        if not changes:
            return None
        shown = "; ".join(encode_change(c).decode() for c in changes[:SHOWN_CHANGES])
        more = f" and {len(changes) - SHOWN_CHANGES} more" if len(changes) > SHOWN_CHANGES else ""
        return f"{len(changes)} changes turn it into the log's graph: {shown}{more}"
    if name == "schemas":
        if fresh.records() == stored.records():
            return None
        return f"schemas in force {_types(stored)}, the log says {_types(fresh)}"
    if name == "conflicts":
        if fresh.count() == stored.count() and fresh.conflicts() == stored.conflicts():
            return None
        return f"{stored.count()} conflicts, the log has {fresh.count()}"
    # Any other projection: its snapshot is its complete state.
    return None if fresh.to_snapshot() == stored.to_snapshot() else "its snapshot differs"


def _types(schemas: SchemaProjection) -> list[str]:
    return [r.type_name for r in schemas.records() if r.schema is not None]


class _Checks:
    """`rebuild_checkpoints`' comparisons of fresh models with each name's newest stored
    checkpoint (`kept`, as bytes), into `report`."""

    def __init__(
        self,
        event_log: EventLog,
        report: RebuildReport,
        kinds: dict[str, Any],
        kept: dict[str, Checkpoint | None],
    ) -> None:
        self._log, self._report, self._kinds, self._kept = event_log, report, kinds, kept
        self.seconds = 0.0  # spent in `at_stop`: not the rebuild's own time

    def due(self, name: str, stop: int) -> bool:
        checkpoint = self._kept[name]
        return checkpoint is not None and checkpoint.position == stop

    def compare(self, name: str, stop: int, fresh: Any) -> None:
        """Compare the fresh model `name` at `stop` with the stored checkpoint there,
        restored."""
        stored = restore_newest(self._log, self._kinds[name], stop)
        if stored is None or stored.position != stop:
            # It does not restore (restore_newest logged why): an older one is not compared
            # either, the fold having passed it.
            return
        self._report.checked.append((name, stop))
        detail = _difference(name, fresh, stored)
        if detail is not None:
            self._report.mismatches.append(Mismatch(name, stop, detail))
            log.error("checkpoint_mismatch", checkpoint=name, position=stop, detail=detail)

    def built(self, name: str, stop: int, data: bytes) -> None:
        """Compare `name`'s snapshot built directly at `stop` with the stored one there."""
        checkpoint = self._kept[name]
        if checkpoint is None or checkpoint.position != stop:
            return
        if data == checkpoint.payload:  # the fold's own bytes: they restore to the same model
            self._report.checked.append((name, stop))
            return
        self.compare(name, stop, self._kinds[name].from_snapshot(data))

    def at_stop(self, prefix: PlainPrefix) -> None:
        started = time.perf_counter()
        due = [name for name in self._kept if self.due(name, prefix.position)]
        for name, data in prefix.snapshots(due).snapshots.items():
            self.built(name, prefix.position, data)
        self.seconds += time.perf_counter() - started


def rebuild_checkpoints(
    event_log: EventLog,
    names: Iterable[str] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    retention: Retention | None = None,
) -> RebuildReport:
    """Fold the log from scratch into fresh `names` projections; where the newest stored
    checkpoint of one covers a position, compare the fold with it there (a difference is a
    Mismatch, and that checkpoint is deleted); then save fresh checkpoints at the log's end,
    dropping those of older projection versions. The log's plain prefix is built directly
    (`read_prefix`), its snapshots compared with the stored checkpoints inside it byte for
    byte (restored and compared model by model only where the bytes differ); the rest is
    folded."""
    models = ReadModels.folding(event_log, names)
    report = RebuildReport(models.names())
    end = event_log.last_position()
    kinds = {name: registered(name).projection for name in report.names}
    # Each name's newest stored checkpoint, as bytes: restored only where it must be compared
    # model by model (a difference, or past the prefix).
    kept = {
        name: event_log.checkpoints.load(name, kind.version, at_or_before=end)
        for name, kind in kinds.items()
    }
    stops = sorted({c.position for c in kept.values() if c is not None} | {end})
    retention = retention or Retention(CHECKPOINT_EVERY, CHECKPOINTS_KEPT)
    checks = _Checks(event_log, report, kinds, kept)
    started = time.perf_counter()
    prefix = read_prefix(
        event_log, report.names, end, progress=progress, stops=stops, at_stop=checks.at_stop
    )
    report.fold_seconds += time.perf_counter() - started - checks.seconds
    report.events += prefix.position
    report.direct_events = prefix.position
    if prefix.position == end:
        # The whole log was plain: its snapshots are saved as built (restored and encoded
        # again, they are the same bytes).
        for name, built in prefix.snapshots.items():
            checks.built(name, end, built)
        report.position = end
        report.saved_bytes = event_log.checkpoints.save(
            *(
                Checkpoint(name, kinds[name].version, end, data)
                for name, data in prefix.snapshots.items()
            ),
            retention=retention,
        )
    else:
        _start_from(models, prefix)
        for stop in (stop for stop in stops if stop > prefix.position):
            started = time.perf_counter()
            report.events += models.catch_up(
                upto=stop, each_chunk=None if progress is None else lambda c: progress(len(c))
            )
            report.fold_seconds += time.perf_counter() - started
            for name, projection in models.items():
                if checks.due(name, stop):
                    checks.compare(name, stop, projection)
        report.position = models.position
        report.saved_bytes = event_log.checkpoints.save(
            *(
                Checkpoint(name, projection.version, projection.position, projection.to_snapshot())
                for name, projection in models.items()
            ),
            retention=retention,
        )
    for mismatch in report.mismatches:
        if mismatch.position != report.position:
            event_log.checkpoints.delete(mismatch.name, mismatch.position)
    return report
