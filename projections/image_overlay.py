"""The graph as its read image plus what the official writes changed since: writes over the
image, the graph's records and texts staying off the heap.

A server that restores its graph at its first write holds all of it in the heap from then on
(~64 MiB of objects at 50,000 entities, arenas pymalloc never hands back). Over the image, the
graph is the mapped image (its pages the kernel's to keep or drop) and an overlay holding only
what the writes since it changed: entities of the image gone or with other observations, and
entities and relations created since. The writer folds its own official writes into it, and
has it compacted into a new image from time to time (actors.image_compaction), so the heap
holds a bounded overlay whatever the graph's size.

The overlay folds the six events the official writes make (EntityCreated, EntityDeleted,
ObservationAdded, ObservationDeleted, RelationCreated, RelationDeleted) with GraphProjection's
semantics for events that arrive in stamp order, each newer than everything before it, which
is how one writer's own appends arrive: a creation starts an entity afresh and lists it last,
with no observations and none of its older relations; a deletion ends it and its relations; an
observation is one more occurrence at the end of its entity's list; a deleted content loses
every occurrence; a relation between alive entities is visible, listed last (again, if it was
before). Any other event (attributes, decay, another node's writes, whose stamps may be older)
is not folded here: `apply` says so and the writer restores the graph instead.
tests/property/test_image_overlay.py holds every decision and read to the fold's.

Searches match as projections.search does: the image's texts, those of the image's entities
whose observations changed (their text made anew), and a SearchProjection over the entities
created since. A query that holds the entity separator (U+0001, which the edge refuses as a
control character) could match across two texts of the image; it is matched within each
text here.
"""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, TypeVar

from eventstore.events import (
    EntityCreated,
    EntityDeleted,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    Stamp,
)
from projections.graph import graph_neutral
from projections.graph_image import GraphImage
from projections.search import SearchProjection, entity_text
from projections.views import EntityView

__all__ = ["ImageOverlay", "OverlayReads", "RelationKeyView"]

Key = tuple[str, str, str]
T = TypeVar("T")


class RelationKeyView(NamedTuple):
    """A visible relation as the official decisions read it (RelationView's key fields)."""

    from_entity: str
    to_entity: str
    relation_type: str


class _Added:
    """An entity created since the image: its creation's stamp, type and observations."""

    __slots__ = ("entity_type", "observations", "stamp")

    def __init__(self, stamp: Stamp, entity_type: str) -> None:
        self.stamp = stamp
        self.entity_type = entity_type
        self.observations: list[str] = []


class _AddedSource:
    """The entities created since the image, as a SearchProjection reads a graph."""

    def __init__(self, added: dict[str, _Added]) -> None:
        self._added = added

    def entity(self, name: str) -> EntityView | None:
        entry = self._added.get(name)
        return None if entry is None else EntityView(name, entry.entity_type, entry.observations)

    def creation_key(self, name: str) -> Stamp | None:
        entry = self._added.get(name)
        return None if entry is None else entry.stamp

    def entities(self) -> Iterator[EntityView]:
        return (EntityView(n, e.entity_type, e.observations) for n, e in list(self._added.items()))

    def entity_count(self) -> int:
        return len(self._added)


class ImageOverlay:
    """An image and the official writes folded over it (a ReadGraph, and the GraphReader
    the official write decisions read: has_entity, observations, has_relation,
    relations_of_any)."""

    def __init__(self, image: GraphImage) -> None:
        self.image = image
        self.position = image.position  # the last envelope folded (the image's, at first)
        self._gone: set[int] = set()  # the image's entities no longer alive as it has them
        self._changed: dict[int, list[str]] = {}  # image entity -> its observations now
        self._changed_texts: dict[int, str] = {}  # their search texts, made when searched
        self._added: dict[str, _Added] = {}  # created since, in creation (listing) order
        self._gone_relations: set[int] = set()
        self._relations: dict[Key, int] = {}  # created since -> sequence, in listing order
        self._sequence = itertools.count()
        # Every name -> the keys created since with it as an endpoint (some deleted since):
        # an entity's end reaches its relations without a scan of all of them.
        self._edges: dict[str, list[Key]] = {}
        self._search = SearchProjection()
        self._source = _AddedSource(self._added)

    # --- folding ----------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Entities and relations the overlay holds (what compaction bounds)."""
        return (
            len(self._gone)
            + len(self._changed)
            + len(self._added)
            + len(self._gone_relations)
            + len(self._relations)
        )

    @property
    def changed(self) -> bool:
        """Whether anything was folded that changes a read of the image."""
        return self.size > 0

    def apply(self, envelopes: Iterable[Envelope]) -> bool:
        """Fold `envelopes` (in stamp order, each newer than what came before); False at the
        first one this overlay cannot fold (the overlay is then to be dropped)."""
        for envelope in envelopes:
            event = envelope.event
            match event:
                case ObservationAdded(entity=name, content=content):
                    self._add_observation(name, content)
                case EntityCreated(name=name, entity_type=entity_type):
                    self._create(name, entity_type, envelope.stamp)
                case RelationCreated(from_entity=f, to_entity=t, relation_type=kind):
                    self._relate((f, t, kind))
                case ObservationDeleted(entity=name, content=content):
                    self._delete_observation(name, content)
                case EntityDeleted(name=name):
                    self._delete(name)
                case RelationDeleted(from_entity=f, to_entity=t, relation_type=kind):
                    self._unrelate((f, t, kind))
                case _:
                    if not graph_neutral(event):
                        return False
            self._search.note((envelope,))
            self.position = envelope.position
        return True

    def _base(self, name: str) -> int | None:
        """The image's listing index of `name` if it is alive as the image has it."""
        i = self.image.index_of(name)
        return None if i is None or i in self._gone else i

    def _create(self, name: str, entity_type: str, stamp: Stamp) -> None:
        if name in self._added:
            self._end_added(name)
        else:
            i = self._base(name)
            if i is not None:
                self._end_base(i, name)
        self._added[name] = _Added(stamp, entity_type)

    def _delete(self, name: str) -> None:
        if name in self._added:
            self._end_added(name)
            return
        i = self._base(name)
        if i is not None:
            self._end_base(i, name)

    def _end_base(self, i: int, name: str) -> None:
        self._gone.add(i)
        self._changed.pop(i, None)
        self._changed_texts.pop(i, None)
        self._gone_relations.update(self.image.incident(i))
        self._end_relations(name)

    def _end_added(self, name: str) -> None:
        del self._added[name]
        self._end_relations(name)

    def _end_relations(self, name: str) -> None:
        for key in self._edges.pop(name, ()):
            self._relations.pop(key, None)

    def _add_observation(self, name: str, content: str) -> None:
        entry = self._added.get(name)
        if entry is not None:
            entry.observations.append(content)
            return
        i = self._base(name)
        if i is not None:
            self._observations_to_change(i).append(content)

    def _delete_observation(self, name: str, content: str) -> None:
        entry = self._added.get(name)
        if entry is not None:
            if content in entry.observations:
                entry.observations = [o for o in entry.observations if o != content]
            return
        i = self._base(name)
        if i is not None and content in self._observations_at(i):
            kept = [o for o in self._observations_at(i) if o != content]
            self._changed[i] = kept
            self._changed_texts.pop(i, None)

    def _observations_at(self, i: int) -> list[str]:
        changed = self._changed.get(i)
        return self.image.view(i).observations if changed is None else changed

    def _observations_to_change(self, i: int) -> list[str]:
        self._changed_texts.pop(i, None)
        changed = self._changed.get(i)
        if changed is None:
            changed = self._changed[i] = self.image.view(i).observations
        return changed

    def _relate(self, key: Key) -> None:
        if not (self.has_entity(key[0]) and self.has_entity(key[1])):
            return  # older than an endpoint's next creation, if any: never visible
        self._unrelate(key)  # listed last, as its newest creation
        self._relations[key] = next(self._sequence)
        self._edges.setdefault(key[0], []).append(key)
        if key[1] != key[0]:
            self._edges.setdefault(key[1], []).append(key)

    def _unrelate(self, key: Key) -> None:
        if self._relations.pop(key, None) is not None:
            return
        r = self.image.relation_index(*key)
        if r is not None:
            self._gone_relations.add(r)

    # --- what the official decisions read ----------------------------------------------------

    def has_entity(self, name: str) -> bool:
        return name in self._added or self._base(name) is not None

    def observations(self, name: str) -> list[str]:
        """The entity's visible observations in order; [] if it is not alive."""
        entry = self._added.get(name)
        if entry is not None:
            return list(entry.observations)
        i = self._base(name)
        return [] if i is None else list(self._observations_at(i))

    def has_relation(self, from_entity: str, to_entity: str, relation_type: str) -> bool:
        key = (from_entity, to_entity, relation_type)
        if key in self._relations:
            return True
        r = self.image.relation_index(*key)
        return r is not None and r not in self._gone_relations

    def relations_of_any(self, names: Iterable[str]) -> list[RelationKeyView]:
        """Visible relations with either endpoint in `names`, each once, in creation order."""
        return [RelationKeyView(*key) for key in self.relation_keys_of_any(names)]

    # --- the official reads (projections.read_graph.ReadGraph) ------------------------------

    def entity_count(self) -> int:
        return self.image.n - len(self._gone) + len(self._added)

    def entities(self) -> Iterator[EntityView]:
        """Alive entities in listing order: the image's, then those created since."""
        views: Iterator[EntityView] = self.image.entities()
        if self._gone or self._changed:
            views = self._current(views)
        return itertools.chain(views, map(self._added_view, list(self._added)))

    def _current(self, views: Iterator[EntityView]) -> Iterator[EntityView]:
        """The image's views as they stand now: the runs between the entities gone or
        changed passed through whole (a broad answer reads 50,000 of them), those replaced
        or skipped."""
        gone, changed = self._gone, self._changed

        def runs() -> Iterator[Iterable[EntityView]]:
            at = 0
            for i in sorted(gone | changed.keys()):
                yield itertools.islice(views, i - at)  # consumed before the next step
                view = next(views)
                if i not in gone:
                    yield (self._changed_view(view, changed[i]),)
                at = i + 1
            yield views

        return itertools.chain.from_iterable(runs())

    @staticmethod
    def _changed_view(view: EntityView, observations: list[str]) -> EntityView:
        return EntityView(view.name, view.entity_type, list(observations))

    def _image_view(self, i: int) -> EntityView:
        view = self.image.view(i)
        observations = self._changed.get(i)
        return view if observations is None else self._changed_view(view, observations)

    def _added_view(self, name: str) -> EntityView:
        entry = self._added[name]
        return EntityView(name, entry.entity_type, list(entry.observations))

    def entities_named(
        self, names: Iterable[str], *, listing_order: bool = False
    ) -> list[EntityView]:
        """The alive entities among `names`, each once: in the order given, or in listing
        order; missing names skipped."""
        found: dict[str | int, None] = {}
        for name in names:
            if name in self._added:
                found[name] = None
            else:
                i = self._base(name)
                if i is not None:
                    found[i] = None
        if not listing_order:
            return [
                self._image_view(item) if isinstance(item, int) else self._added_view(item)
                for item in found
            ]
        indexes = sorted(item for item in found if isinstance(item, int))
        created = {item for item in found if isinstance(item, str)}
        views = [self._image_view(i) for i in indexes]
        views.extend(self._added_view(name) for name in self._added if name in created)
        return views

    def entities_page(self, offset: int, limit: int | None) -> list[EntityView]:
        """The alive entities in name order, skipping `offset`, then at most `limit`."""
        image = self.image
        stop = None if limit is None else offset + limit
        if not self._gone and not self._added:
            return [self._image_view(i) for i in image.name_order()[offset:stop]]
        gone = self._gone
        by_name = ((image.name(i), i) for i in image.name_order() if i not in gone)
        created = ((name, -1) for name in sorted(self._added))
        page = itertools.islice(heapq.merge(by_name, created), offset, stop)
        return [self._added_view(name) if i < 0 else self._image_view(i) for name, i in page]

    def relation_keys_read(self) -> Iterator[Key]:
        """The visible relations' keys in listing order: the image's, then those since."""
        keys: Iterator[Key] = self.image.relation_keys_read()
        if self._gone_relations:
            keys = _skipping(keys, sorted(self._gone_relations))
        return itertools.chain(keys, list(self._relations))

    def relation_keys(self) -> list[Key]:
        return list(self.relation_keys_read())

    def relation_keys_of_any(self, names: Iterable[str]) -> list[Key]:
        """Keys of the visible relations with either endpoint in `names`, each once, in
        listing order."""
        image = self.image
        found: set[int] = set()
        since: dict[Key, int] = {}
        for name in names:
            i = image.index_of(name)
            if i is not None:
                found.update(image.incident(i))
            for key in self._edges.get(name, ()):
                sequence = self._relations.get(key)
                if sequence is not None:
                    since[key] = sequence
        found -= self._gone_relations
        keys = [image.relation_key(r) for r in sorted(found)]
        keys.extend(sorted(since, key=since.__getitem__))
        return keys

    # --- search (a Searcher: graphmem.tools.memory_reads) ------------------------------------

    def search(self, graph: object, query: str) -> list[str]:
        """Names of the alive entities whose name, type or an observation holds `query`, in
        listing order."""
        image = self.image
        found: Sequence[int] = image.matching(query)
        if self._gone or self._changed:
            found = self._matching_now(found, query.lower())
        names = image.names_at(found)
        if self._added:
            names.extend(self._search.search(self._source, query))
        return names

    def _matching_now(self, found: Sequence[int], needle: str) -> Sequence[int]:
        """The image's matches `found` (ascending) as the entities stand now: the gone ones
        and the changed ones that no longer match left out, the changed ones that match now
        put in. Only those few are looked at; a broad query's 50,000 pass through whole."""
        hits = {i for i in self._changed if needle in self._changed_text(i)}
        drop = {*self._gone, *(i for i in self._changed if i not in hits)}
        present = {i for i in (*drop, *hits) if _holds(found, i)}
        drop &= present
        hits -= present
        if not drop and not hits:
            return found
        kept = (
            _skipping(iter(found), sorted(bisect_left(found, i) for i in drop)) if drop else found
        )
        return list(heapq.merge(kept, sorted(hits))) if hits else list(kept)

    def _changed_text(self, i: int) -> str:
        text = self._changed_texts.get(i)
        if text is None:
            view = self.image.view(i)
            text = self._changed_texts[i] = entity_text(
                EntityView(view.name, view.entity_type, self._changed[i])
            )
        return text


class OverlayReads:
    """An overlay as the official read tools read the models: `graph` and `search`."""

    def __init__(self, overlay: ImageOverlay) -> None:
        self.graph = overlay
        self.search = overlay
        self.position = overlay.position


def _holds(ascending: Sequence[int], value: int) -> bool:
    at = bisect_left(ascending, value)
    return at < len(ascending) and ascending[at] == value


def _skipping(items: Iterator[T], skipped: Sequence[int]) -> Iterator[T]:
    """`items` without those at the (ascending) positions `skipped`: the runs between them
    passed through whole."""

    def runs() -> Iterator[Iterable[T]]:
        at = 0
        for position in skipped:
            yield itertools.islice(items, position - at)  # consumed before the next step
            next(items, None)
            at = position + 1
        yield items

    return itertools.chain.from_iterable(runs())
