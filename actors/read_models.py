"""ReadModels: the read models of a process, kept together — applied, reset, restored, caught
up and swapped in one place.

The set is projections.projection.REGISTERED (checkpointed, folded from the log; read when a
set is made) plus what is derived from them without a checkpoint of its own: the search index
and the schema view, started over from the graph after every restore or swap and kept current
by noting the envelopes folded, and the history, folded lazily from committed events only. The
graph writer serves from a serving set; `graphmem rebuild`, the background rebuild and the
as-of reads fold a folding set (the registered projections asked for, eagerly, nothing
derived).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from actors.catch_up import catch_up
from actors.checkpointer import Checkpointer
from actors.graph_handover import GraphLender
from eventstore.events import Envelope
from eventstore.log import Checkpoint, EventLog
from projections import projection as registry
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.history import HistoryProjection
from projections.projection import Projection, Registered, registered
from projections.schema_view import SchemaViewProjection
from projections.schemas import SchemaProjection
from projections.search import SearchProjection

__all__ = ["ModelsQuery", "ReadModels"]

P = TypeVar("P", bound=Projection)


class ReadModels:
    """Every read model of one fold, level with each other.

    Build one with `serving` (the writer's: lazily folded projections restored and folded on
    first use, derived indexes, history) or `folding` (registered projections by name, all
    folded eagerly, nothing derived). Reads: `graph`, `schemas`, `conflicts`, `search`,
    `schema_view`, `history`, or `get(cls)` for any registered projection.
    """

    def __init__(
        self,
        event_log: EventLog,
        entries: Sequence[Registered],
        *,
        serving: bool,
        checkpoints: Checkpointer | None = None,
        accept_stale: bool = False,
        on_stale: Callable[[], None] | None = None,
        derive_lazily: bool = False,
    ) -> None:
        # For folding, and for reading events back (history) off the writer's thread.
        self.event_log = event_log
        self._entries = tuple(entries)
        self._serving = serving
        self._eager = tuple(e for e in self._entries if not (serving and e.lazy))
        self._checkpoints = checkpoints
        self._accept_stale = accept_stale
        self._on_stale = on_stale
        # True while some model came from a checkpoint of an earlier version: never saved
        # as a checkpoint, replaced by a rebuild.
        self.stale = False
        self._projections: dict[str, Projection] = {}
        self._unrestored: set[str] = set()  # lazy ones whose checkpoint is still to be read
        # Lazy ones a rebuild built as snapshot bytes (start_from): restored from them on first
        # use, and saved as they are; until then, an empty stand-in holds their place.
        self._held: dict[str, Checkpoint] = {}
        # Holds committed events only (it skips what it has seen), so a reset never drops it.
        self._history = HistoryProjection()
        self._search: SearchProjection | None = None
        self._schema_view: SchemaViewProjection | None = None
        # A bulk load (graphmem import) never searches: the derived indexes are started over
        # from the graph on their first use instead of noting every event folded (a tenth of
        # the writer's time on an import). `_underived`: they are behind the projections.
        self._derive_lazily = derive_lazily
        self._underived = False
        self._empty()

    @classmethod
    def serving(
        cls,
        event_log: EventLog,
        checkpoints: Checkpointer | None = None,
        *,
        accept_stale: bool = False,
        on_stale: Callable[[], None] | None = None,
        derive_lazily: bool = False,
    ) -> ReadModels:
        """Every registered projection and what derives from them, as a writer serves them;
        with `derive_lazily`, the derived indexes are made afresh when next read rather than
        kept current event by event (for a bulk load)."""
        return cls(
            event_log,
            registry.REGISTERED,
            serving=True,
            checkpoints=checkpoints,
            accept_stale=accept_stale,
            on_stale=on_stale,
            derive_lazily=derive_lazily,
        )

    @classmethod
    def folding(
        cls,
        event_log: EventLog,
        names: Iterable[str] | None = None,
        checkpoints: Checkpointer | None = None,
    ) -> ReadModels:
        """The registered projections called `names` (default: all), folded together (and
        restored from `checkpoints`, if given); ValueError for a name not registered."""
        wanted = None if names is None else {registered(name).name for name in names}
        entries = [e for e in registry.REGISTERED if wanted is None or e.name in wanted]
        return cls(event_log, entries, serving=False, checkpoints=checkpoints)

    # --- reads ----------------------------------------------------------------------------

    def get(self, kind: type[P]) -> P:
        """The registered projection `kind`, caught up to the others if folded lazily."""
        projection = self._projections[kind.name]
        lazy = kind.name in self._unrestored or kind.name in self._held
        if lazy or projection.position < self.position:
            projection = self._bring_level(kind.name)
        return cast(P, projection)

    @property
    def graph(self) -> GraphProjection:
        return self.get(GraphProjection)

    @property
    def schemas(self) -> SchemaProjection:
        return self.get(SchemaProjection)

    @property
    def conflicts(self) -> ConflictsProjection:
        return self.get(ConflictsProjection)

    @property
    def search(self) -> SearchProjection:
        if self._underived:
            self._derive_now()
        assert self._search is not None, "a serving set"
        return self._search

    def adopt_search(self, index: SearchProjection, position: int) -> bool:
        """Serve `index` (built elsewhere from the graph at `position`, e.g. by the early
        reads) as the search index instead of this set's own, if the projections are at that
        position, current (not stale) and derived; True if it was adopted. The same log up to
        the same position folds to the same graph, so the index matches it."""
        if not self._serving or self._underived or self.stale or self.position != position:
            return False
        graph = cast(GraphProjection, self._projections[GraphProjection.name])
        index.share_names(graph.entity_names())  # not the other graph's copies of them
        self._search = index
        return True

    @property
    def schema_view(self) -> SchemaViewProjection:
        if self._underived:
            self._derive_now()
        assert self._schema_view is not None, "a serving set"
        return self._schema_view

    @property
    def history(self) -> HistoryProjection:
        """Folded lazily, from the log's committed events."""
        history = self._history
        if history.position < self.position:
            catch_up(self.event_log, history.apply_all, history.position)
        return history

    @property
    def position(self) -> int:
        """The position the eagerly folded projections are at (0: none folded)."""
        return min((self._projections[e.name].position for e in self._eager), default=0)

    def names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self._entries)

    def held(self) -> frozenset[str]:
        """The lazily folded models still held as a rebuild's snapshot (see start_from)."""
        return frozenset(self._held)

    def items(self) -> list[tuple[str, Projection]]:
        """(name, projection) of every projection in the set, in registration order, each
        caught up."""
        return [(e.name, self.get(e.projection)) for e in self._entries]

    # --- folding --------------------------------------------------------------------------

    def apply(self, envelopes: Sequence[Envelope]) -> None:
        """Fold `envelopes` (the next ones after `position`) into the eager projections and
        note them for the derived indexes (or, deriving lazily, mark those behind)."""
        self._fold(envelopes)
        if self._derive_lazily:
            self._underived = self._serving
        elif self._search is not None and self._schema_view is not None:
            self._search.note(envelopes)
            self._schema_view.note(envelopes)

    def catch_up(
        self,
        *,
        upto: int | None = None,
        each_chunk: Callable[[list[Envelope]], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        derive_after: bool = False,
    ) -> int:
        """Fold the log after `position` up to `upto` (default: its end); returns how many
        events. With `derive_after`, the derived indexes are started over from the folded
        projections instead of noting every event (cheaper for a long fold)."""
        fold = self._fold if derive_after else self.apply
        folded = catch_up(
            self.event_log,
            fold,
            self.position,
            upto=upto,
            each_chunk=each_chunk,
            cancelled=cancelled,
        )
        if derive_after:
            self._derive()
        return folded

    def _fold(self, envelopes: Sequence[Envelope]) -> None:
        for entry in self._eager:
            self._projections[entry.name].apply_all(envelopes)

    def _bring_level(self, name: str) -> Projection:
        """A lazily folded projection, restored on its first use, then caught up."""
        entry = registered(name)
        held = self._held.pop(name, None)
        if held is not None:
            self._unrestored.discard(name)
            self._projections[name] = entry.projection.from_snapshot(held.payload)
        elif name in self._unrestored:
            self._unrestored.discard(name)
            if self._checkpoints is not None:
                found = self._checkpoints.restore_lazy(
                    entry.projection, self.position, accept_stale=self._accept_stale
                )
                if found is not None:
                    self._projections[name], stale = found
                    if stale:
                        self.stale = True
                        if self._on_stale is not None:
                            self._on_stale()
        projection = self._projections[name]
        if projection.position < self.position:
            # To the log's end: it holds committed events only, as the others do when read.
            catch_up(self.event_log, projection.apply_all, projection.position)
        return projection

    # --- reset, restore, swap -------------------------------------------------------------

    def _empty(self) -> None:
        self._projections = {e.name: e.projection() for e in self._entries}
        self._unrestored = {e.name for e in self._entries if e not in self._eager}
        self._held = {}
        self.stale = False
        self._derive()

    def _derive(self) -> None:
        """The derived indexes started over from the projections: the search index learns
        the names (and is built while idle, or by the first search), the schema view parses
        the graph lazily, on its first query. Deriving lazily, all that waits for a read."""
        if self._derive_lazily:
            self._underived = self._serving
        else:
            self._derive_now()

    def _derive_now(self) -> None:
        self._underived = False
        if not self._serving:
            return
        graph = cast(GraphProjection, self._projections[GraphProjection.name])
        schemas = cast(SchemaProjection, self._projections[SchemaProjection.name])
        self._search = SearchProjection()
        self._search.note_names(graph.entity_names())
        self._schema_view = SchemaViewProjection(graph, schemas)

    def restore(self, *, at_or_before: int | None = None, lend: GraphLender | None = None) -> bool:
        """Back to the newest valid checkpoint (at or before a position, if given), dropping
        whatever was folded since (it may hold uncommitted events); empty without one.
        Lazily folded projections are restored on their first use. True if one was found.
        `lend`: the graph as restored elsewhere from that checkpoint, if one is on offer
        (Checkpointer.restore)."""
        self._empty()
        if self._checkpoints is None:
            return False
        found = self._checkpoints.restore(
            [e.projection for e in self._eager],
            at_or_before=at_or_before,
            accept_stale=self._accept_stale,
            lend=lend,
        )
        if found is None:
            return False
        restored, self.stale = found
        for entry, projection in zip(self._eager, restored, strict=True):
            self._projections[entry.name] = projection
        self._derive()
        return True

    def start_from(
        self, projections: Mapping[str, Projection], held: Mapping[str, Checkpoint] | None = None
    ) -> None:
        """Fold on from `projections` (by name, each built at one position, as a rebuild's
        direct path builds them) instead of the empty ones this set began with. The `held`
        ones, snapshots at that position, are not restored now: only on their first use
        (restoring the conflicts model is seconds at 1,000,000 events, and a served graph may
        never read it), folded on from there to the log's end; they are saved as they are."""
        for name, projection in projections.items():
            self._projections[registered(name).name] = projection
        for name, checkpoint in (held or {}).items():
            entry = registered(name)
            self._held[entry.name] = checkpoint
            self._projections[entry.name] = entry.projection()  # the stand-in
        self._eager = tuple(e for e in self._eager if e.name not in self._held)
        self._derive()

    def swap(self, fresh: ReadModels) -> None:
        """Serve from `fresh` (a folding set of every projection here, level with this one)
        from now on; the derived indexes start over from it."""
        assert fresh.names() == self.names(), "a full rebuild"
        assert not {e.name for e in self._eager} & set(fresh._held), "only lazy ones are held"
        self._projections = dict(fresh._projections)
        self._unrestored.clear()  # no older checkpoint may replace the fresh fold
        self._held = dict(fresh._held)
        self.stale = False
        self._derive()

    def save(self, *, final: bool = False) -> None:
        """Checkpoint the projections (the caller vouches they hold committed events only)."""
        if self._checkpoints is None or self.stale:
            return
        eager = [self._projections[e.name] for e in self._eager]
        lazy = [
            self._held.get(e.name) or self._projections[e.name]
            for e in self._entries
            if e not in self._eager
        ]
        self._checkpoints.save(eager, lazy, final=final)


ModelsQuery = Callable[[ReadModels], Any]
