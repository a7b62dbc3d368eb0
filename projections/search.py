"""SearchProjection: the official `search_nodes` semantics, fast — a case-insensitive substring
of an entity's name, type or any observation, at a cost that stays flat as the graph grows.

Each alive entity has one lowercased text, `name \\0 type \\0 obs1 \\0 obs2 ...`; a query (which
cannot contain NUL: the edge refuses control characters) matches the entity iff it occurs in
that text, and can never match across a separator. Texts are packed into segments of about a
hundred entities joined by a separator, so one `str.find` rejects a whole segment at C speed;
only segments that contain a hit are walked entity by entity.

A trigram filter picks the segments worth scanning. For each segment it holds the byte trigrams
(UTF-8) inside the words of its texts, hashed into a fixed number of buckets and stored inverted:
bucket -> bitset of segments (a Python int). Every trigram inside a query's words lies inside a
word of any text holding the query, so ANDing the bitsets of the query's buckets leaves every
segment that can match (and a few that cannot); a query without a word of three bytes scans
every segment, as it is broad anyway. The filter may hold more than a segment's texts, never
less: an edit adds the new text's trigrams and leaves the old ones until enough edits have piled
up in the segment, which is then recomputed. Extra bits cost a scan, never a wrong answer.

The index follows the graph projection: the writer tells it which entity names the applied
events touched, and those are re-read from the graph lazily, on the next search. It keeps
entities in the graph's listing order (latest creation first-to-last): an entity keeps its place
while its creation stands, and goes last when a noted creation replaces it. When an older
creation arrives late (replication), results are sorted by creation stamp before they are
returned.
"""

from __future__ import annotations

import itertools
import sys
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from typing import Protocol

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    Stamp,
)
from projections.trigrams import ones, query_buckets, text_buckets

__all__ = ["BUCKETS", "SEGMENT_SIZE", "WARM_BUDGET", "EntitySource", "SearchProjection"]

SEGMENT_SIZE = 128
"""Entities per segment: a selective query scans one or two segments of this many."""
BUCKETS = 32749
"""Trigram buckets (a prime, so trigram % BUCKETS mixes all three bytes). The filter takes at
most BUCKETS bits per segment: 32 bytes an entity, bounded whatever the texts."""

_FIELD = "\x00"
_ENTITY = "\x01"
_BLOCK = 1024  # segments whose trigram rows a build fills at once (rows of this many bytes)
_AS_BINARY = bytes.maketrans(b"\x00\x01", b"01")
_NO_STAMP: Stamp = (-1, "", -1)  # older than any
WARM_BUDGET = 2048
"""Entities a step of `SearchProjection.warm` handles: tens of ms, what a request may wait."""
SCAN_WHILE_WARMING = 100_000
"""Entities the filter may lack while a warm-up is under way for a search to scan them rather
than finish the filter (a few ms of scanning on this machine's benchmark data)."""


class _Entity(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def entity_type(self) -> str: ...

    @property
    def observations(self) -> list[str]: ...


class EntitySource(Protocol):
    """What the index reads from the graph projection."""

    def entity(self, name: str) -> _Entity | None: ...

    def creation_key(self, name: str) -> Stamp | None: ...

    def entities(self) -> Iterator[_Entity]: ...

    def entity_count(self) -> int: ...


def entity_text(entity: _Entity) -> str:
    """The searchable text of an entity: `name NUL type NUL obs...`, lowercased."""
    return _FIELD.join((entity.name, entity.entity_type, *entity.observations)).lower()


ENTITY_SEPARATOR = _ENTITY


class _Segment:
    """Up to SEGMENT_SIZE entities: their names, and their texts either as a list (while
    edited) or packed into one string (while searched)."""

    __slots__ = ("fresh", "joined", "names", "slot", "stale", "starts", "texts")

    def __init__(self, slot: int, names: list[str], texts: list[str]) -> None:
        self.slot = slot  # its bit in the filter's bitsets
        self.names = names
        self.texts: list[str] | None = texts
        self.joined: str | None = None
        # Where each text begins in `joined`, then the end + 1: a packed array (8 bytes an
        # entity) rather than a list of int objects (~40), a tenth of the index's memory.
        self.starts: array[int] = array("q")
        self.fresh = texts.copy()  # texts (or parts) whose trigrams the filter lacks
        self.stale = 0  # texts replaced or removed since the filter was exact for this one

    @classmethod
    def built(cls, slot: int, names: list[str], texts: list[str]) -> _Segment:
        """A segment a build filled: packed at once, its fresh trigrams read from the packed
        string. Left as a string per entity until first searched, a restored million took
        ~220 bytes an entity (an object header each) instead of ~150, and a selective search
        packs only the segments it scans."""
        segment = cls(slot, names, texts)
        segment.fresh = [segment.pack()]
        return segment

    def current_texts(self) -> list[str]:
        if self.texts is not None:
            return self.texts
        joined, starts = self.joined, self.starts
        assert joined is not None
        return [joined[a : b - 1] for a, b in itertools.pairwise(starts)]

    def edit(self) -> list[str]:
        self.texts = self.current_texts()
        self.joined = None
        return self.texts

    def pack(self) -> str:
        if self.joined is None:
            texts = self.texts
            assert texts is not None
            self.joined = _ENTITY.join(texts)
            starts = array("q", itertools.accumulate((len(t) + 1 for t in texts), initial=0))
            # 4 bytes an offset where they fit (a segment's text under 4 GiB: always, in use).
            self.starts = array("I", starts) if starts[-1] <= 0xFFFFFFFF else starts
            self.texts = None  # the joined string holds them: keep one copy
        return self.joined

    def matches(self, needle: str) -> list[str]:
        joined = self.pack()
        at = joined.find(needle)
        if at < 0:
            return []
        found: list[str] = []
        starts, names = self.starts, self.names
        index = -1
        while at >= 0:
            # A broad query's next hit is mostly in the next text: checked before bisecting
            # (each probe of the packed offsets makes an int).
            if index >= 0 and starts[index + 1] <= at < starts[index + 2]:
                index += 1
            else:
                index = bisect_right(starts, at, index + 1) - 1
            found.append(names[index])
            at = joined.find(needle, starts[index + 1])
        return found


class _Build:
    """A whole-index build under way (SearchProjection.warm): the graph's listing, read a step
    at a time, and the segment being filled."""

    def __init__(self, graph: EntitySource, noted: set[str]) -> None:
        self.graph = graph
        # Iterates a copy of the listing taken now and reads each entity when it gets there,
        # so writes in between are seen (and noted again, for the next refresh to settle).
        self.listing = graph.entities()
        self.noted = noted
        self.names: list[str] = []
        self.texts: list[str] = []
        self.last_key: Stamp | None = None


class SearchProjection:
    """Substring search over alive entities, in listing order."""

    name = "search"
    version = 1

    def __init__(
        self, *, segment_size: int = SEGMENT_SIZE, buckets: int = BUCKETS, hollow_min: int = 64
    ) -> None:
        """`segment_size` and `buckets` tune the filter, `hollow_min` how many emptied
        segments it holds at least before it starts over (tests make them tiny)."""
        self._segment_size = segment_size
        self._buckets = buckets
        self._hollow_min = hollow_min
        self.reset()

    @classmethod
    def of_graph(
        cls, graph: EntitySource, *, segment_size: int = SEGMENT_SIZE, buckets: int = BUCKETS
    ) -> SearchProjection:
        """The index of a whole graph in one pass over its listing (the early reads' start,
        as cheap as a plain scan's text): segments packed, ready to scan; the filter left to
        `warm`, which the caller is to call, the searches meanwhile scanning what it lacks."""
        index = cls(segment_size=segment_size, buckets=buckets)
        names: list[str] = []
        texts: list[str] = []
        for entity in graph.entities():
            names.append(entity.name)
            texts.append(entity_text(entity))
            if len(names) == index._segment_size:
                index._place(names, texts)
                names, texts = [], []
        if names:
            index._place(names, texts)
        keys = (graph.creation_key(segment.names[-1]) for segment in index._segments)
        index._last_key = max((key for key in keys if key is not None), default=None)
        index._warming = bool(index._unfiltered)
        return index

    def _place(self, names: list[str], texts: list[str]) -> None:
        segment = _Segment.built(len(self._segments), names, texts)
        self._segments.append(segment)
        self._unfiltered.add(segment.slot)  # keyed by name at the first edit (`_located`)

    def note(self, envelopes: Iterable[Envelope]) -> None:
        """Remember which entities the applied envelopes touched (cheap; re-read later)."""
        dirty, created = self._dirty, self._created
        for envelope in envelopes:
            event = envelope.event
            if isinstance(event, ObservationAdded | ObservationDeleted):
                dirty.add(event.entity)
            elif isinstance(event, EntityUpdated | EntityDeleted):
                dirty.add(event.name)
            elif isinstance(event, EntityCreated):
                name, stamp = event.name, envelope.stamp
                before = created.get(name, _NO_STAMP)
                if before is not None and stamp > before:
                    created[name] = stamp

    def note_names(self, names: Iterable[str]) -> None:
        """Remember entities to (re-)read, e.g. every one of a graph restored from a snapshot:
        the index itself is never stored, it is rebuilt from the graph on the next search."""
        self._created.update(dict.fromkeys(names))

    def reset(self) -> None:
        self._dirty: set[str] = set()  # names whose text may have changed
        # Names with a noted creation: its newest stamp (None: unknown, place it afresh).
        self._created: dict[str, Stamp | None] = {}
        self._building: _Build | None = None
        self._warming = False  # the last `warm` had work left: searches leave it to the next
        self._clear()

    @property
    def warmed(self) -> bool:
        """True if a search would find nothing to do before searching."""
        return not (self._building or self._unfiltered or self._dirty or self._created)

    def warm(self, graph: EntitySource, budget: int | None = None) -> bool:
        """Do about `budget` (default WARM_BUDGET) entities' worth of what the next search
        would do first; True while some is left. The writer calls it while idle, a step per
        message, so that the first search after a start (a whole index to build: seconds on a
        large graph) finds the work done, and requests wait at most one step. A search
        finishes the segments' build (a step of the filter too, unless a warm-up is under
        way) and scans the segments the filter has not reached yet."""
        self._warming = self._warm_step(graph, budget or WARM_BUDGET)
        return self._warming

    def _warm_step(self, graph: EntitySource, budget: int) -> bool:
        if self._building is None and (self._dirty or self._created):
            if not self._starts_over(graph):
                self._refresh(graph)  # a few edits: all at once
                return self._sync_filter(max(1, budget // self._segment_size))
            self._begin_build(graph)
        if self._building is not None:
            return self._build_some(budget) or bool(self._unfiltered)
        return self._sync_filter(max(1, budget // self._segment_size))

    def _clear(self) -> None:
        self._segments: list[_Segment] = []
        # name -> its segment, for edits: None until the first edit needs it (see _located).
        self._where: dict[str, _Segment] | None = None
        self._last_key: Stamp | None = None
        self._maybe_unordered = False
        self._bits: list[int] = [0] * self._buckets  # bucket -> bitset of segment slots
        self._unfiltered: set[int] = set()  # slots with fresh texts or due a recomputation
        # Segments emptied by removals. New entities go last, so a graph whose entities come
        # and go leaves a trail of them, and every bitset grows a bit per segment ever made.
        self._hollow = 0

    def search(self, graph: EntitySource, query: str) -> list[str]:
        """Names of alive entities whose name, type or an observation contains `query`."""
        self._refresh(graph)
        if not self._warming or len(self._unfiltered) * self._segment_size > SCAN_WHILE_WARMING:
            # The whole filter, as a search always did. While `warm` is being called and what
            # the filter lacks is small enough to scan (the early reads' graph), none: the
            # warm-up finishes it between requests and a search never waits for it. A larger
            # one is finished here: scanned instead, every search of a million-entity warm-up
            # took ~40 ms (bench.compare), and a warm-up advances a step per request only.
            self._sync_filter()
        needle = query.lower()
        found: list[str] = []
        for segment in self._candidates(needle):
            found.extend(segment.matches(needle))
        if self._maybe_unordered and len(found) > 1:
            found.sort(key=graph.creation_key)  # type: ignore[arg-type]
        return found

    def share_names(self, names: Iterable[str]) -> None:
        """Hold the entity names as these equal strings (the graph's own): an index built
        from another copy of the graph (the early reads') then keeps no second copy of them."""
        if self._building is not None:
            return  # its listing holds the other copy's entities: not worth a special case
        own = {name: name for name in names}
        for segment in self._segments:
            segment.names = [own.get(name, name) for name in segment.names]
        self._where = None  # keyed again from the shared names at the first edit

    def filter_bytes(self) -> int:
        """The trigram filter's memory, for benchmarks."""
        return sys.getsizeof(self._bits) + sum(sys.getsizeof(bits) for bits in self._bits if bits)

    def _candidates(self, needle: str) -> list[_Segment]:
        segments = self._segments
        buckets = query_buckets(needle, self._buckets)
        if not buckets:
            return [segment for segment in segments if segment.names]
        bits = self._bits
        hits = -1
        for bucket in buckets:
            hits &= bits[bucket]
            if not hits:
                break
        for slot in self._unfiltered:  # the filter may lack their trigrams: scanned
            hits |= 1 << slot
        return [segments[slot] for slot in ones(hits)]

    # --- following the graph --------------------------------------------------------------

    def _starts_over(self, graph: EntitySource) -> bool:
        """True if the noted names call for a whole build: nothing is indexed yet (a start, a
        restore, a rebuild) and they are at least half the graph."""
        noted = len(self._dirty) + len(self._created)
        # Unkeyed (`_where` None), the segments are a build's, none emptied: any is an entity.
        indexed = bool(self._segments) if self._where is None else bool(self._where)
        return not indexed and 2 * noted >= graph.entity_count()

    def _located(self) -> dict[str, _Segment]:
        """name -> segment, made from the segments on the first edit since a build: a served
        graph that is only read never needs it (a dict slot an entity: ~30 MiB at a million,
        a seventh of the index)."""
        where = self._where
        if where is None:
            where = self._where = {}
            for segment in self._segments:
                where.update(dict.fromkeys(segment.names, segment))
        return where

    def _take_noted(self) -> tuple[set[str], dict[str, Stamp | None]]:
        names, created = self._dirty, self._created
        self._dirty, self._created = set(), {}
        names.update(created)
        return names, created

    def _refresh(self, graph: EntitySource) -> None:
        if self._building is not None:
            self._build_some(sys.maxsize)
        if not self._dirty and not self._created:
            return
        if self._starts_over(graph):
            self._begin_build(graph)
            self._build_some(sys.maxsize)
            return
        names, created = self._take_noted()
        added: list[tuple[Stamp, str]] = []
        where = self._located()
        for name in names:
            key = graph.creation_key(name)
            segment = where.get(name)
            if key is None:
                if segment is not None:
                    self._remove(name)
                continue
            if segment is not None:
                if name not in created or created[name] not in (None, key):
                    # Its creation stands (none noted, or the noted ones lost to it): it keeps
                    # its place, with its new text.
                    self._replace(segment, name, entity_text(self._entity(graph, name)))
                    continue
                self._remove(name)
            added.append((key, name))
        # New incarnations go last, in creation order, which is the graph's listing order.
        added.sort()
        for key, name in added:
            self._append(name, entity_text(self._entity(graph, name)), key)
        # Emptied segments: more than `hollow_min`, and more than those in use.
        if self._hollow > max(self._hollow_min, len(self._segments) - self._hollow):
            self._compact(graph)

    def _compact(self, graph: EntitySource) -> None:
        """Index the alive entities anew, in as few segments as they need: what the index
        holds then depends on the graph alone, not on how many entities came and went (a
        build reads each alive entity once; it comes after at least `hollow_min` segments'
        worth of removals, so its cost is spread over those)."""
        self.note_names(self._located())
        self._begin_build(graph)
        self._build_some(sys.maxsize)

    @staticmethod
    def _entity(graph: EntitySource, name: str) -> _Entity:
        entity = graph.entity(name)
        assert entity is not None, "an entity with a creation key is alive"
        return entity

    def _begin_build(self, graph: EntitySource) -> None:
        """Start indexing the noted entities into an empty index (a start, a rebuild): read in
        listing order, sequentially, with nothing to sort, a segment at a time."""
        noted, _ = self._take_noted()
        self._clear()  # no entity indexed: drop the empty segments too
        self._building = _Build(graph, noted)

    def _build_some(self, budget: int) -> bool:
        """Read up to `budget` more entities of the build; True while the listing goes on."""
        build = self._building
        assert build is not None
        read = 0
        noted, names, texts, size = build.noted, build.names, build.texts, self._segment_size
        # Created since the listing was copied (a new name, or one alive again or re-created):
        # the next refresh places it last, in creation order; the build keeps to the copy's
        # order, so the last key it places is the newest.
        created_since = self._created
        for entity in itertools.islice(build.listing, budget):
            read += 1
            if entity.name in noted and entity.name not in created_since:
                names.append(entity.name)
                texts.append(entity_text(entity))
                if len(names) == size:
                    self._add_segment(build)
                    names, texts = build.names, build.texts
        if read == budget:
            self._note_last_key(build)  # still alive now: between steps it may not be
            return True
        if names:
            self._add_segment(build)
        self._last_key = build.last_key
        self._building = None
        return False

    def _add_segment(self, build: _Build) -> None:
        segment = _Segment.built(len(self._segments), build.names, build.texts)
        self._segments.append(segment)
        if self._where is not None:  # a build's segments are keyed by the first edit
            self._where.update(dict.fromkeys(segment.names, segment))
        self._unfiltered.add(segment.slot)
        build.names, build.texts = [], []
        self._note_last_key(build, segment.names[-1])

    @staticmethod
    def _note_last_key(build: _Build, name: str | None = None) -> None:
        # Kept as the newest key placed, whatever the order the build met them in.
        if name is None:
            name = build.names[-1] if build.names else None
        key = None if name is None else build.graph.creation_key(name)
        if key is not None and (build.last_key is None or key > build.last_key):
            build.last_key = key

    def _order(self, key: Stamp) -> None:
        """Note an entity placed last: the order stays the listing order unless it is older
        than the last one placed."""
        if self._last_key is not None and key < self._last_key:
            self._maybe_unordered = True
        else:
            self._last_key = key

    def _replace(self, segment: _Segment, name: str, text: str) -> None:
        texts = segment.edit()
        index = segment.names.index(name)
        old, texts[index] = texts[index], text
        if text == old:
            return
        # Observations added after the others only extend the text: the filter holds the old
        # part already, and no trigram spans the separator before the new ones. The separator
        # must follow the old text: a late observation placed before a last one that is its
        # prefix ("c", then an older "coffee") also leaves the old text as a prefix.
        if text.startswith(old) and text[len(old)] == _FIELD:
            segment.fresh.append(text[len(old) :])
        else:
            segment.fresh.append(text)
            segment.stale += 1
        self._unfiltered.add(segment.slot)

    def _remove(self, name: str) -> None:
        segment = self._located().pop(name)
        texts = segment.edit()
        index = segment.names.index(name)
        del segment.names[index]
        del texts[index]
        segment.stale += 1
        if not segment.names:
            self._hollow += 1
        self._unfiltered.add(segment.slot)

    def _append(self, name: str, text: str, key: Stamp) -> None:
        self._order(key)
        segments = self._segments
        if not segments or len(segments[-1].names) >= self._segment_size:
            if segments:
                # Full: appends go to the next one from now on, so it is packed as a build
                # packs its segments. Left a string per entity until a search scanned it, a
                # server filled through writes held ~60 bytes an entity more (an object
                # header and a list slot each), its selective searches scanning few segments.
                segments[-1].pack()
            segments.append(_Segment(len(segments), [], []))
        elif not segments[-1].names:
            self._hollow -= 1  # an emptied last segment fills again
        segment = segments[-1]
        segment.names.append(name)
        segment.edit().append(text)
        segment.fresh.append(text)
        self._unfiltered.add(segment.slot)
        self._located()[name] = segment

    # --- the trigram filter ---------------------------------------------------------------

    def _sync_filter(self, limit: int | None = None) -> bool:
        """Bring the filter up to date with the segments' texts (with `limit`, that many
        segments at most, the first): recompute the segments whose stale trigrams have piled
        up, add every other segment's fresh texts. True while some segment is left."""
        if not self._unfiltered:
            return False
        slots = sorted(self._unfiltered)
        if limit is not None and len(slots) > limit:
            slots = slots[:limit]
            self._unfiltered.difference_update(slots)
        else:
            self._unfiltered = set()
        segments, bits = self._segments, self._bits
        due = [slot for slot in slots if segments[slot].stale > self._segment_size // 4]
        if due:
            keep = ~sum(1 << slot for slot in due)
            for bucket, held in enumerate(bits):
                if held:
                    bits[bucket] = held & keep
            for slot in due:
                segment = segments[slot]
                segment.stale = 0
                segment.fresh = list(segment.current_texts())
        if len(slots) > 16:
            self._fill_rows(slots)
            return bool(self._unfiltered)
        # A few segments (as after a write): OR their bit into their buckets directly.
        for slot in slots:
            segment = segments[slot]
            bit = 1 << slot
            for bucket in text_buckets(segment.fresh, self._buckets):
                bits[bucket] |= bit
            segment.fresh = []
        return bool(self._unfiltered)

    def _fill_rows(self, slots: list[int]) -> None:
        """Add many segments' fresh texts (a build): per block of slots, one byte per slot in a
        row per bucket, set without a Python-level loop per (segment, bucket), then each row
        read as a binary number into the bucket's bitset."""
        segments, bits, count = self._segments, self._bits, self._buckets
        set_byte: Callable[[bytearray, int, int], None] = bytearray.__setitem__
        for _, block in itertools.groupby(slots, lambda slot: slot // _BLOCK):
            found = []
            for slot in block:
                segment = segments[slot]
                found.append((slot, text_buckets(segment.fresh, count)))
                segment.fresh = []
            base = found[0][0]  # rows span these slots only: a warm-up step fills a few
            # Buckets every segment of the block holds (common words) take all their bits at
            # once: often half the (segment, bucket) pairs.
            common = set.intersection(*(buckets for _, buckets in found))
            if common:
                every = sum(1 << slot for slot, _ in found)
                for bucket in common:
                    bits[bucket] |= every
                for _, buckets in found:
                    buckets.difference_update(common)
            touched = set().union(*(buckets for _, buckets in found))
            width = found[-1][0] - base + 1
            rows = {bucket: bytearray(width) for bucket in touched}
            row_of = rows.__getitem__
            for slot, buckets in found:
                # rows[bucket][slot - base] = 1 for each bucket.
                deque(map(set_byte, map(row_of, buckets), repeat(slot - base), repeat(1)), maxlen=0)
            for bucket, row in rows.items():
                bits[bucket] |= int(row.translate(_AS_BINARY)[::-1], 2) << base
