"""Checkpointer: the graph writer's read models to and from checkpoints beside the log.

Checkpoints only save time: a model is restored from the newest one that passes every check
(eventstore.checkpoints) and restores, else folded from the log; any failure to load or save
is logged and otherwise ignored, so it can never stop writes or start-up.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import structlog

from eventstore.checkpoints import Retention
from eventstore.log import Checkpoint, EventLog, StorageError
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.schemas import SchemaProjection

log = structlog.get_logger(__name__)

# Events folded between two checkpoints, and how many checkpoints of each projection to keep.
CHECKPOINT_EVERY = 100_000
CHECKPOINTS_KEPT = 8
_CATCH_UP_CHUNK = 50_000


class _Positioned(Protocol):
    @property
    def position(self) -> int: ...


P = TypeVar("P", bound=_Positioned)


@dataclass(frozen=True)
class CheckpointKind(Generic[P]):
    """A checkpointed projection: its name, snapshot versions and how to restore one."""

    name: str
    version: int
    readable_versions: frozenset[int]
    restore: Callable[[bytes], P]


# Read when used, not when imported: a test may stand in for another projection version.
def graph_kind() -> CheckpointKind[GraphProjection]:
    cls = GraphProjection
    return CheckpointKind(cls.name, cls.version, cls.readable_versions, cls.from_snapshot)


def schemas_kind() -> CheckpointKind[SchemaProjection]:
    cls = SchemaProjection
    return CheckpointKind(cls.name, cls.format_version, cls.readable_versions, cls.from_snapshot)


def conflicts_kind() -> CheckpointKind[ConflictsProjection]:
    cls = ConflictsProjection
    return CheckpointKind(cls.name, cls.version, cls.readable_versions, cls.from_snapshot)


def checkpoint_kind(name: str) -> CheckpointKind[Any]:
    """The checkpointed projection called `name` (graph, schemas or conflicts)."""
    kinds: dict[str, Callable[[], CheckpointKind[Any]]] = {
        "graph": graph_kind,
        "schemas": schemas_kind,
        "conflicts": conflicts_kind,
    }
    return kinds[name]()


def restore_newest(
    event_log: EventLog, kind: CheckpointKind[P], version: int, at_or_before: int | None
) -> P | None:
    """The projection restored from the newest checkpoint of `kind` at `version` (at or before
    a position, if given) that loads and restores; one that does not is logged and passed over
    for the one before it. None without one."""
    while True:
        found: Checkpoint | None = None
        try:
            found = event_log.checkpoints.load(kind.name, version, at_or_before=at_or_before)
            if found is None:
                return None
            restored = kind.restore(found.payload)
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


@dataclass(frozen=True)
class Restored:
    """The graph and schema views a checkpoint restored; `stale` if either came from one of
    an earlier version (Checkpointer.restore)."""

    graph: GraphProjection
    schemas: SchemaProjection
    stale: bool


class Checkpointer:
    """Loads and saves the checkpoints of the graph, schema and conflict views.

    The graph and schema views are saved together, at the graph's position, every `every`
    folded events; the conflict view (folded only when used) whenever it has moved on as far.
    `every=None` turns checkpoints off: nothing is loaded or saved.
    """

    def __init__(
        self,
        event_log: EventLog,
        every: int | None = CHECKPOINT_EVERY,
        kept: int = CHECKPOINTS_KEPT,
    ) -> None:
        self._log = event_log
        self.every = every
        self._retention = Retention(every or 1, kept)
        self.graph_at = 0  # position of the graph checkpoint last loaded or saved
        self.conflicts_at = 0

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
        return position - self.graph_at >= interval * intervals

    # --- loading --------------------------------------------------------------------------

    def restore(self, *, accept_stale: bool = False) -> Restored | None:
        """The graph and schema views as of the newest valid graph checkpoint, level with each
        other; None without one (fold from the start). With `accept_stale`, a checkpoint of an
        earlier version the projection still reads (its `readable_versions`) is restored when
        none of the current version is found, and the result is marked stale: it may differ
        from what this version folds, so it serves only until a rebuild replaces it."""
        self.graph_at = self.conflicts_at = 0
        if not self.enabled:
            return None
        found = self._load(graph_kind(), None, accept_stale)
        if found is None:
            return None
        graph, graph_stale = found
        loaded = self._load(schemas_kind(), graph.position, accept_stale)
        schemas, schemas_stale = loaded if loaded is not None else (SchemaProjection(), False)
        if schemas.position < graph.position:
            # Both are saved together, so only a damaged record lags: bring it level.
            fresh = self._log.read_from(schemas.position + 1)
            while chunk := list(itertools.islice(fresh, _CATCH_UP_CHUNK)):
                schemas.apply_all(e for e in chunk if e.position <= graph.position)
                if chunk[-1].position >= graph.position:
                    break
            schemas.position = graph.position
        self.graph_at = graph.position
        return Restored(graph, schemas, graph_stale or schemas_stale)

    def restore_conflicts(
        self, at_or_before: int, *, accept_stale: bool = False
    ) -> tuple[ConflictsProjection, bool] | None:
        """The conflict view as of its newest valid checkpoint at or before a position, and
        whether it is stale (see `restore`); None without one."""
        if not self.enabled:
            return None
        found = self._load(conflicts_kind(), at_or_before, accept_stale)
        if found is not None and not found[1]:
            self.conflicts_at = found[0].position
        return found

    def _load(
        self, kind: CheckpointKind[P], at_or_before: int | None, accept_stale: bool
    ) -> tuple[P, bool] | None:
        """The newest usable checkpoint of `kind` at its version, else (with `accept_stale`)
        the newest of its readable versions, with whether it is one of those."""
        current = self._load_version(kind, kind.version, at_or_before)
        if current is not None or not accept_stale:
            return None if current is None else (current, False)
        stale: P | None = None
        stale_version = kind.version
        for readable in sorted(kind.readable_versions):
            found = self._load_version(kind, readable, at_or_before)
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
        self, kind: CheckpointKind[P], version: int, at_or_before: int | None
    ) -> P | None:
        started = time.perf_counter()
        restored = restore_newest(self._log, kind, version, at_or_before)
        if restored is not None:
            log.info(
                "checkpoint_loaded",
                checkpoint=kind.name,
                version=version,
                position=restored.position,
                seconds=round(time.perf_counter() - started, 3),
            )
        return restored

    # --- saving ---------------------------------------------------------------------------

    def save(
        self,
        graph: GraphProjection,
        schemas: SchemaProjection,
        conflicts: ConflictsProjection,
        *,
        final: bool = False,
    ) -> None:
        """Save the views in one write transaction; the caller vouches that they hold only
        committed events. A failure is logged and retried only an interval later, so a full
        disk costs one attempt per interval, never a write."""
        if self.every is None:
            return
        started = time.perf_counter()
        position = graph.position
        items: list[Checkpoint] = []
        try:
            items.append(Checkpoint(graph.name, graph.version, position, graph.to_snapshot()))
            items.append(
                Checkpoint(
                    schemas.name, schemas.format_version, schemas.position, schemas.to_snapshot()
                )
            )
            moved = conflicts.position - self.conflicts_at
            if moved > 0 and (final or moved >= self.every):
                items.append(
                    Checkpoint(
                        conflicts.name,
                        conflicts.version,
                        conflicts.position,
                        conflicts.to_snapshot(),
                    )
                )
            written = self._log.checkpoints.save(*items, retention=self._retention)
        except StorageError as fault:  # a full or read-only disk: expected, no stack
            log.warning("checkpoint_save_failed", position=position, reason=str(fault))
            self.graph_at = position
            return
        except Exception:  # checkpoints are an optimisation: a failure must not stop writes
            log.exception("checkpoint_save_failed", position=position)
            self.graph_at = position
            return
        self.graph_at = position
        self.conflicts_at = max(self.conflicts_at, conflicts.position)
        log.info(
            "checkpoint_saved",
            position=position,
            checkpoints=len(items),
            bytes=written,
            seconds=round(time.perf_counter() - started, 3),
        )
