"""TimeTravel: read models as of a past log position or time, built beside the graph writer.

`as_of` names a point of the log: a position (an integer >= 0, or its decimal string; 0 is the
empty graph before the first event) or an ISO-8601 time (a zone-less time is UTC, a date alone
the start of that day UTC). A time maps to the last position whose event's hybrid-clock wall
time (hlc >> 16, in ms) is at or before it, found by binary search over positions: local
writes, of every process sharing the log, are stamped in position order (the clock is kept in
the log's meta and never goes back), so the search is exact for them. Events replicated from
elsewhere are placed by arrival, not by their stamps: around them a time names the point where
they arrived, not necessarily the first position at which every older-stamped event is in.

The models as of position P are the graph restored from the nearest checkpoint at or before P,
then folded from the log up to P, and a search over that graph (FrozenSearch); the schemas in
force at P (restored and folded the same way) and the schema view over both are built only when
a query first reads them, so the graph-only reads never pay for them. They are built by
whoever calls `query`: the MCP edge runs it on a worker thread, so the writer keeps serving
while an old graph is rebuilt. Both logs are safe to read from any thread: the LMDB log opens a
read transaction per chunk, begun and ended in the calling thread (py-lmdb always sets
MDB_NOTLS, and the resize gate is per thread), and the in-memory log copies under its lock.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar

import structlog

from actors.checkpointer import Checkpointer
from actors.frozen_search import FrozenSearch
from actors.read_models import ReadModels
from eventstore.hlc import ms_of
from eventstore.log import EventLog
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.graph_time import iso_ms
from projections.schema_view import SchemaViewProjection
from projections.schemas import SchemaProjection

__all__ = [
    "ACCEPTED_FORMS",
    "AsOfError",
    "AsOfModels",
    "AsOfPoint",
    "FrozenSearch",
    "GraphModels",
    "Searcher",
    "TimeTravel",
    "folded_at",
    "iso_ms",
    "models_at",
    "parse_as_of",
    "position_at_time",
    "schemas_at",
]

log = structlog.get_logger(__name__)

T = TypeVar("T")

ACCEPTED_FORMS = (
    'a log position (an integer >= 0 such as 120, or the string "120"; 0 is the empty graph '
    'before the first event) or an ISO-8601 time ("2026-03-01T12:00:00Z", '
    '"2026-03-01T12:00:00+02:00", "2026-03-01T12:00" read as UTC, or "2026-03-01" for the '
    "start of that day UTC)"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
# Models kept for reuse: at most this many, holding at most this many folded events in all
# (the one just built is always kept). A 1M-event graph with its search takes about 0.8 GB.
CACHED_MODELS = 4
CACHED_EVENTS = 1_500_000


class AsOfError(ValueError):
    """An `as_of` that names no point of this log: unreadable, or past the log's end. The
    message says what is accepted (or the last position); the edge shows it as a tool error."""


class Searcher(Protocol):
    """search_nodes' matching: names of the alive entities whose name, type or an observation
    contains `query` (case-insensitive), in listing order."""

    def search(self, graph: GraphProjection, query: str) -> list[str]: ...


class GraphModels(Protocol):
    """The read models a read tool queries: the writer's current ones or an as-of set."""

    @property
    def graph(self) -> GraphProjection: ...

    @property
    def search(self) -> Searcher: ...

    @property
    def schemas(self) -> SchemaProjection: ...

    @property
    def schema_view(self) -> SchemaViewProjection: ...

    @property
    def conflicts(self) -> ConflictsProjection: ...


class AsOfModels:
    """The graph as of one log position, and what is derived from it on first use: its search,
    the schemas in force then (`load_schemas`, called once; models_at folds them from the log;
    by default none are in force) and the schema view over both."""

    def __init__(
        self,
        graph: GraphProjection,
        load_schemas: Callable[[], SchemaProjection] = SchemaProjection,
        load_conflicts: Callable[[], ConflictsProjection] = ConflictsProjection,
    ) -> None:
        self.graph = graph
        self._load_schemas = load_schemas
        self._load_conflicts = load_conflicts
        self._conflicts: ConflictsProjection | None = None
        self._search: FrozenSearch | None = None
        self._schemas: SchemaProjection | None = None
        self._schema_view: SchemaViewProjection | None = None

    @property
    def search(self) -> FrozenSearch:
        if self._search is None:
            self._search = FrozenSearch(self.graph)
        return self._search

    @property
    def schemas(self) -> SchemaProjection:
        if self._schemas is None:
            self._schemas = self._load_schemas()
        return self._schemas

    @property
    def schema_view(self) -> SchemaViewProjection:
        if self._schema_view is None:
            # Neither model changes again, so the view parses every entity once, on first use.
            self._schema_view = SchemaViewProjection(self.graph, self.schemas)
        return self._schema_view

    @property
    def conflicts(self) -> ConflictsProjection:
        """The replica conflicts as of the point (folded on first use: few reads need them)."""
        if self._conflicts is None:
            self._conflicts = self._load_conflicts()
        return self._conflicts


@dataclass(frozen=True)
class AsOfPoint:
    """A resolved `as_of`: the position read at, and the stamp of the event there (None at
    position 0). `latest` is True when it was the log's end as resolution saw it."""

    position: int
    hlc: int | None
    latest: bool = False

    @property
    def time(self) -> str | None:
        """The wall time of the event at the position (ISO 8601, UTC, ms); None at 0."""
        return None if self.hlc is None else iso_ms(ms_of(self.hlc))

    def value(self) -> dict[str, Any]:
        """The point as JSON: `{"position": 12, "time": "2026-...Z"}`."""
        return {"position": self.position, "time": self.time}

    def describe(self) -> str:
        """`position 12 (2026-...Z)`, or `position 0 (before the first event)`."""
        when = self.time if self.time is not None else "before the first event"
        return f"position {self.position} ({when})"


def parse_as_of(value: object) -> int | datetime:
    """A log position, or an aware UTC time; raises AsOfError naming the accepted forms."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise AsOfError(f"as_of {value} is negative; give {ACCEPTED_FORMS}")
        return value
    if not isinstance(value, str):
        raise AsOfError(f"as_of must be {ACCEPTED_FORMS}; got {type(value).__name__}")
    text = value.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise AsOfError(f"as_of {value!r} is not {ACCEPTED_FORMS}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _hlc_at(event_log: EventLog, position: int) -> int | None:
    # A reader holds no transaction between chunks, so one left unfinished costs nothing.
    envelope = next(iter(event_log.read_from(position)), None)
    return None if envelope is None or envelope.position != position else envelope.hlc


def position_at_time(event_log: EventLog, moment: datetime, last: int) -> int:
    """The last position in 1..`last` whose event's wall time is at or before `moment`; 0 if
    none is (a time before the first event)."""
    limit_ms = (moment - _EPOCH) // _MS
    low, high = 0, last  # invariant: `low` is at or before the time, `high + 1` after it
    while low < high:
        middle = (low + high + 1) // 2
        hlc = _hlc_at(event_log, middle)
        if hlc is not None and ms_of(hlc) <= limit_ms:
            low = middle
        else:
            high = middle - 1
    return low


def folded_at(event_log: EventLog, position: int, *names: str) -> ReadModels:
    """The registered projections `names` as of `position` (at most the log's end): the
    nearest checkpoint at or before it, then the log's events after it up to it."""
    models = ReadModels.folding(event_log, names, Checkpointer(event_log))
    models.restore(at_or_before=position)
    models.catch_up(upto=position)
    return models


def schemas_at(event_log: EventLog, position: int) -> SchemaProjection:
    """The schemas in force as of `position` (at most the log's end): the nearest checkpoint at
    or before it, then the log's events after the checkpoint up to it."""
    started = time.perf_counter()
    schemas = folded_at(event_log, position, SchemaProjection.name).schemas
    log.info(
        "as_of_schemas_built",
        position=position,
        schemas=len(schemas.schemas()),
        seconds=round(time.perf_counter() - started, 3),
    )
    return schemas


def models_at(event_log: EventLog, position: int) -> AsOfModels:
    """The graph and search index as of `position` (at most the log's end): the nearest
    checkpoint at or before it, then the log's events after the checkpoint up to it. The
    schemas and the schema view as of it are built the same way, when first read."""
    graph = folded_at(event_log, position, GraphProjection.name).graph
    return AsOfModels(
        graph,
        lambda: schemas_at(event_log, position),
        lambda: folded_at(event_log, position, ConflictsProjection.name).conflicts,
    )


@dataclass
class TimeTravel:
    """Answers queries as of a log position, off the writer's thread.

    The models last used are kept (LRU, by position; see CACHED_MODELS and CACHED_EVENTS), so
    paging through one as-of read, or asking several questions of one point, folds the log
    once. A projection is not safe to read from two threads at once (reads may re-sort it),
    so queries run one at a time under one lock; that also bounds the memory to one build in
    flight.
    """

    event_log: EventLog
    cache_size: int = CACHED_MODELS
    cache_events: int = CACHED_EVENTS
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _cache: OrderedDict[int, AsOfModels] = field(
        default_factory=OrderedDict, init=False, repr=False
    )

    def resolve(self, as_of: object) -> AsOfPoint:
        """The point `as_of` names (see parse_as_of); raises AsOfError. Reads the log."""
        wanted = parse_as_of(as_of)
        last = self.event_log.last_position()
        if isinstance(wanted, datetime):
            position = position_at_time(self.event_log, wanted, last)
        elif wanted > last:
            raise AsOfError(
                f"as_of position {wanted} is past the end of the log: the last position is {last}"
            )
        else:
            position = wanted
        hlc = _hlc_at(self.event_log, position) if position else None
        return AsOfPoint(position, hlc, latest=position == last)

    def query(self, position: int, query: Callable[[AsOfModels], T], *, keep: bool = True) -> T:
        """`query` applied to the models as of `position` (built, or taken from the cache).
        `keep=False`: a one-off read (an export) whose models are dropped after it rather than
        cached, so a second whole graph is not held for the next as-of read."""
        with self._lock:
            models = self._cache.get(position)
            if models is None:
                started = time.perf_counter()
                models = models_at(self.event_log, position)
                log.info(
                    "as_of_models_built",
                    position=position,
                    entities=models.graph.entity_count(),
                    seconds=round(time.perf_counter() - started, 3),
                    kept=keep,
                )
                if not keep:
                    return query(models)
                self._cache[position] = models
                self._evict()
            else:
                self._cache.move_to_end(position)
            return query(models)

    def _evict(self) -> None:
        cache = self._cache
        while len(cache) > 1 and (len(cache) > self.cache_size or sum(cache) > self.cache_events):
            cache.popitem(last=False)
        if self.cache_size < 1:
            cache.clear()
