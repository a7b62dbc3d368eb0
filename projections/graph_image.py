"""A graph's read image: what the official read tools answer, in one file read in place.

A server spawned by a host answers a search or two and is often never written to. Restoring
the graph and building its search index for that holds the whole graph in the heap (~40 MiB
at 50,000 entities) for the life of the process. The image is the same graph laid out for
reading where it lies: the file is mapped, and a call touches the pages it reads (a
selective search: a few rows of the filter, one or two segments, its entities' records), which
the kernel shares with its page cache and takes back under pressure; a whole-graph answer
hands its pages back once written (`release`).

It holds the alive entities in listing order (their latest creation stamp), the visible
relations in listing order, and per entity: its name, type and observations (stamp order),
its incident relations, its place in name order, and its search text, exactly as
projections.search makes it (`name NUL type NUL obs...`, lowercased), in segments of
SEGMENT_SIZE entities with the same trigram filter, exact here. `GraphImage` answers the reads
the official tools make (graphmem.tools.memory_reads) with GraphProjection's methods and
semantics, and `ImageSearch` with SearchProjection's: the answers are the same bytes (held by
tests/property/test_graph_image.py over random folds).

An image is written beside the log when the graph is checkpointed, for the graph at that
position, and used only while the log still ends there: its header names the log (its node
id) and the crc32 of the log's record at its position, as a checkpoint's does (a data dir
restored from a backup, a log cut short or grown, is simply not served from it).

Layout (little-endian): a fixed header, the section table, then the sections, each 8-byte
aligned; a crc32 of everything after its own field covers the whole file, checked once when
the file is opened (its pages handed back after).
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import operator
import os
import struct
import sys
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import count, repeat
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

import msgspec

from eventstore.events import Envelope
from eventstore.log import EventLog
from projections.graph import GraphProjection, graph_neutral
from projections.search import BUCKETS, SEGMENT_SIZE, SearchProjection, entity_text
from projections.trigrams import filter_rows, ones, query_buckets
from projections.views import EntityView

__all__ = [
    "IMAGE_FILE",
    "GraphImage",
    "ImageError",
    "ImageReads",
    "ImageSearch",
    "ImageSource",
    "encode_image",
    "install_image",
    "neutral_tail",
    "open_current_image",
    "open_image",
    "restamp_image",
    "restamp_in_place",
    "write_image",
]

IMAGE_FILE = "graph.image"
"""The image's file name in the data dir (one: the newest checkpoint's)."""

MAGIC = b"GMIM"
LAYOUT = 1
MODELS = GraphProjection.version << 16 | SearchProjection.version
"""The versions of the folds whose answers an image holds: an upgrade that changes what the
graph or the search answer (their versions bumped, their checkpoints refolded) leaves an
image made before it unused, as it does their checkpoints."""
# magic, layout, byte order (1 little), the folds' versions (MODELS), position, tip, entities,
# relations, segment size, buckets, sections, log id length; then the log id, the section
# table, the crc32.
_HEAD = struct.Struct("<4sIBIQIIIIIIB")
_SECTION = struct.Struct("<QQ")
_CRC = struct.Struct("<I")
_U32_MAX = 0xFFFFFFFF

# Sections, in this order.
_NAME_OFFSETS, _NAMES, _RECORD_OFFSETS, _RECORDS, _BY_NAME, _SLOTS = range(6)
_REL_FROM, _REL_TO, _REL_TYPE, _TYPE_OFFSETS, _TYPES = range(6, 11)
_INCIDENT_OFFSETS, _INCIDENT, _TEXT_OFFSETS, _TEXTS, _FILTER = range(11, 16)
_SECTIONS = 16

_RECORD_ENCODER = msgspec.msgpack.Encoder()
_RECORD_DECODER = msgspec.msgpack.Decoder(tuple[str, list[str]])
_SEPARATOR = b"\x01"  # after each entity's text (projections.search's entity separator)
_SEPARATOR_TEXT = _SEPARATOR.decode()
# Matches past 1/_DENSE of what is searched: read as for a whole-graph answer.
_DENSE = 8


class ImageError(ValueError):
    """An image that cannot be used: the message says why (its file is then left unused)."""


class ImageSource(Protocol):
    """What an image is made from (a GraphProjection)."""

    @property
    def position(self) -> int: ...

    def entities(self) -> Iterator[EntityView]: ...

    def relation_keys(self) -> list[tuple[str, str, str]]: ...


@runtime_checkable
class RelationRows(Protocol):
    """An ImageSource that also lists its relations by the listing indexes of their endpoints
    (a bulk import holds them so): `relation_rows` then stands in for `relation_keys`, with
    no key tuple nor name lookup a relation."""

    def relation_rows(self) -> tuple[array[int], array[int], list[str]]: ...


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # as projections.trigrams reads texts


def _text(data: memoryview | bytes) -> str:
    return str(data, "utf-8", "surrogatepass")


def _offsets(parts: Iterable[bytes]) -> tuple[array[int], bytes]:
    """The parts joined, and where each begins (then the end): `u32` offsets."""
    listed = parts if isinstance(parts, list) else list(parts)
    ends = list(itertools.accumulate(map(len, listed), initial=0))
    if ends[-1] > _U32_MAX:
        raise ImageError("a section of the image would pass 4 GiB")
    return array("I", ends), b"".join(listed)


def _records(views: list[EntityView]) -> tuple[array[int], bytes]:
    """Each entity's record (its type and observations, msgpack) appended to one buffer, and
    where each begins (then the end): no bytes object an entity, nor a join of them."""
    buffer = bytearray()
    ends = array("I", [0])
    encode_into = _RECORD_ENCODER.encode_into
    append = ends.append
    for view in views:
        encode_into((view.entity_type, view.observations), buffer, -1)
        append(len(buffer))
    if len(buffer) > _U32_MAX:
        raise ImageError("a section of the image would pass 4 GiB")
    return ends, bytes(buffer)


def _texts(texts: list[str]) -> tuple[array[int], bytes]:
    """The texts, each followed by the separator, as UTF-8 in one blob, and where each begins
    (then the end). Encoded once, whole: a text's bytes are its characters when the blob is
    ASCII (nearly always), else each is measured encoded."""
    joined = _SEPARATOR_TEXT.join(texts) + _SEPARATOR_TEXT if texts else ""
    blob = _utf8(joined)
    lengths = map(len, texts) if len(blob) == len(joined) else map(len, map(_utf8, texts))
    ends = array("I", itertools.accumulate(map((1).__add__, lengths), initial=0))
    if len(blob) > _U32_MAX:
        raise ImageError("a section of the image would pass 4 GiB")
    return ends, blob


def _name_slots(raw_names: list[bytes]) -> array[int]:
    """The open-addressing table of the names (crc32, linear probing): slot -> listing index
    + 1, 0 empty. Filled as inserting in the order of the names' home slots would, which
    `accumulate` computes without a Python loop: the k-th name in that order lands at
    max(home_k, slot_(k-1) + 1), i.e. at k + the running max of home_k - k."""
    slots = array("I", bytes(4 * _table_size(len(raw_names))))
    mask = len(slots) - 1
    homes = sorted(zip(map(operator.and_, map(zlib.crc32, raw_names), repeat(mask)), count(1)))
    places = list(
        map(
            operator.add,
            itertools.accumulate(map(operator.sub, (home for home, _ in homes), count()), max),
            count(),
        )
    )
    if places and places[-1] > mask:  # a run passes the end: wraps round, one at a time
        for home, entry in homes:
            at = home
            while slots[at]:
                at = (at + 1) & mask
            slots[at] = entry
        return slots
    for place, (_, entry) in zip(places, homes, strict=True):
        slots[place] = entry
    return slots


def _incidence(n: int, rel_from: array[int], rel_to: array[int]) -> tuple[array[int], array[int]]:
    """Each entity's incident relations (as `from` or `to`, a loop once), in listing order, as
    offsets into one flat array: relation r at entity e is coded e * m + r and the codes sorted."""
    m = len(rel_from)
    width = max(m, 1)
    codes = list(map(operator.add, map(operator.mul, rel_from, repeat(width)), range(m)))
    codes.extend(
        itertools.compress(
            map(operator.add, map(operator.mul, rel_to, repeat(width)), range(m)),
            map(operator.ne, rel_from, rel_to),
        )
    )
    codes.sort()
    starts = map(bisect_left, repeat(codes), map(operator.mul, range(n + 1), repeat(width)))
    return array("I", starts), array("I", map(operator.mod, codes, repeat(width)))


def _entity_view(name: str, contents: tuple[str, list[str]]) -> EntityView:
    return EntityView(name, *contents)


def _table_size(n: int) -> int:
    size = 8
    while size < 2 * n:
        size *= 2
    return size


def _relation_columns(
    graph: ImageSource, listed: list[str]
) -> tuple[array[int], array[int], list[str]]:
    """Each relation's endpoints as listing indexes, and its type, in listing order."""
    if isinstance(graph, RelationRows):
        rel_from, rel_to, kinds = graph.relation_rows()
        if len(rel_from) != len(kinds) or len(rel_to) != len(kinds):
            raise ImageError("the relation rows' columns differ in length")
        return rel_from, rel_to, kinds
    keys = graph.relation_keys()
    if not keys:
        return array("I"), array("I"), []
    froms, tos, kinds = (list(column) for column in zip(*keys, strict=True))
    index = {name: i for i, name in enumerate(listed)}
    return array("I", map(index.__getitem__, froms)), array("I", map(index.__getitem__, tos)), kinds


def encode_image(
    graph: ImageSource,
    *,
    log_id: str,
    tip: int,
    segment_size: int = SEGMENT_SIZE,
    buckets: int = BUCKETS,
) -> bytes:
    """The image of `graph` at its position, for the log `log_id` whose record there has
    crc32 `tip`."""
    views = list(graph.entities())
    n = len(views)
    listed = [view.name for view in views]
    raw_names = list(map(_utf8, listed))
    name_offsets, names = _offsets(raw_names)
    record_offsets, records = _records(views)
    by_name = array("I", sorted(range(n), key=listed.__getitem__))
    slots = _name_slots(raw_names)
    rel_from, rel_to, kinds = _relation_columns(graph, listed)
    m = len(kinds)
    type_ids = {kind: t for t, kind in enumerate(dict.fromkeys(kinds))}
    rel_type = array("I", map(type_ids.__getitem__, kinds))
    type_offsets, type_names = _offsets([_utf8(name) for name in type_ids])
    incident_offsets, flat = _incidence(n, rel_from, rel_to)
    texts = [entity_text(view) for view in views]
    text_offsets, text_blob = _texts(texts)
    matrix = filter_rows(texts, segment_size, buckets)
    sections: list[bytes] = [
        name_offsets.tobytes(),
        names,
        record_offsets.tobytes(),
        records,
        by_name.tobytes(),
        slots.tobytes(),
        rel_from.tobytes(),
        rel_to.tobytes(),
        rel_type.tobytes(),
        type_offsets.tobytes(),
        type_names,
        incident_offsets.tobytes(),
        flat.tobytes(),
        text_offsets.tobytes(),
        text_blob,
        matrix,
    ]
    if sys.byteorder != "little":  # arrays are written in the machine's order
        raise ImageError("images are written on little-endian machines only")
    raw_id = log_id.encode()
    head = _HEAD.pack(
        MAGIC,
        LAYOUT,
        1,
        MODELS,
        graph.position,
        tip,
        n,
        m,
        segment_size,
        buckets,
        _SECTIONS,
        len(raw_id),
    )
    start = len(head) + len(raw_id) + _SECTION.size * _SECTIONS + _CRC.size
    table = bytearray()
    body = bytearray()
    for section in sections:
        body += bytes(-(start + len(body)) % 8)
        table += _SECTION.pack(start + len(body), len(section))
        body += section
    covered = head + raw_id + bytes(table)
    crc = zlib.crc32(body, zlib.crc32(covered))
    return covered + _CRC.pack(crc) + bytes(body)


_POSITION_AT = struct.calcsize("<4sIBI")  # where the header's position, then tip, lie


def restamp_image(data: bytearray, *, position: int, tip: int) -> bytes:
    """An image encoded before its position was known (with 0 and 0: a bulk import encodes
    it while it appends), given its position and the crc32 of the log's record there; the
    checksum redone. Equal to the image encoded at that position (the position and tip are
    nowhere else in it)."""
    restamp_in_place(data, position=position, tip=tip)
    return bytes(data)


def restamp_in_place(data: bytearray | mmap.mmap, *, position: int, tip: int) -> None:
    """restamp_image on a writable buffer (a mapped file: no copy of the image is made)."""
    struct.pack_into("<QI", data, _POSITION_AT, position, tip)
    sections, id_length = _HEAD.unpack_from(data, 0)[10:]
    at = _HEAD.size + id_length + sections * _SECTION.size
    with memoryview(data) as whole:
        crc = zlib.crc32(whole[at + _CRC.size :], zlib.crc32(whole[:at]))
    _CRC.pack_into(data, at, crc)


def write_image(directory: str | Path, data: bytes) -> Path:
    """Write an image into `directory` under IMAGE_FILE, whole or not at all (a temporary
    file synced, then renamed over the old one, the directory synced)."""
    temporary = Path(directory) / f".{IMAGE_FILE}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        return install_image(directory, temporary)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def install_image(directory: str | Path, synced: Path) -> Path:
    """Rename an image file already written and synced (in `directory`) to IMAGE_FILE over
    the old one, then sync the directory."""
    directory = Path(directory)
    final = directory / IMAGE_FILE
    os.replace(synced, final)
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return final


def open_image(
    directory: str | Path, anchor: Callable[[int], tuple[str, int, int | None]]
) -> GraphImage:
    """The image in `directory` if it was made from the log `anchor` describes (given the
    image's position: the log's id, its end, and the crc32 of its record at the position,
    None when it has none: LmdbCheckpointStore.anchor); ImageError says why not. Whether
    the log still ends there is the caller's to see (`neutral_tail`)."""
    path = Path(directory) / IMAGE_FILE
    try:
        with open(path, "rb") as file:
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise ImageError("no image") from None
    except (OSError, ValueError) as error:  # an empty file cannot be mapped
        raise ImageError(f"the image cannot be mapped: {error}") from None
    try:
        image = GraphImage(mapped)
    except BaseException:
        with contextlib.suppress(BufferError):  # else closed once its views are collected
            mapped.close()
        raise
    try:
        log_id, _, tip = anchor(image.position)
        if image.log_id != log_id:
            raise ImageError("the image is of another log")
        if tip != image.tip:
            raise ImageError(
                "the log's record at the image's position is not the one it was made at"
            )
    except BaseException:
        image.close()
        raise
    return image


def open_current_image(
    directory: str | Path,
    anchor: Callable[[int], tuple[str, int, int | None]],
    event_log: EventLog,
) -> tuple[GraphImage, int]:
    """The image in `directory` (`open_image`) if it answers for `event_log` as it ends now,
    and the position it answers for: the log's end, past the image's own when only events
    that change no read of the graph follow it (`neutral_tail`); else ImageError."""
    image = open_image(directory, anchor)
    tail = neutral_tail(event_log, image.position)
    if tail is None:
        image.close()
        raise ImageError("the graph changed since the image was made")
    return image, tail[-1].position if tail else image.position


NEUTRAL_TAIL_MAX = 1_000
"""Events after an image that `neutral_tail` reads at most before giving up on it."""


def neutral_tail(event_log: EventLog, after: int) -> list[Envelope] | None:
    """The envelopes after position `after` up to the log's end if none changes the graph
    (schemas registered by a server's start, markers): an image at `after` still answers for
    the log. None when one does, or there are more than NEUTRAL_TAIL_MAX."""
    tail: list[Envelope] = []
    for envelope in event_log.read_from(after + 1):
        if len(tail) == NEUTRAL_TAIL_MAX or not graph_neutral(envelope.event):
            return None
        tail.append(envelope)
    return tail


class _Head(NamedTuple):
    position: int
    tip: int
    n: int
    m: int
    segment_size: int
    buckets: int


def _checked_head(mapped: mmap.mmap) -> tuple[_Head, str, list[tuple[int, int]]]:
    """The header of the image `mapped`, its log id and its section table (offset, length),
    once the header is one this build reads and the checksum matches; else ImageError."""
    size = len(mapped)
    if size < _HEAD.size:
        raise ImageError("the image is shorter than its header")
    head = _HEAD.unpack_from(mapped, 0)
    magic, layout, little, models = head[:4]
    sections, id_length = head[10:]
    if magic != MAGIC or layout != LAYOUT:
        raise ImageError("not an image of this layout")
    if models != MODELS:
        raise ImageError("the image was made by another version of the graph's fold")
    fields = _Head(*head[4:10])
    if little != 1 or sys.byteorder != "little" or sections != _SECTIONS or fields.segment_size < 1:
        raise ImageError("an image this build cannot read")
    at = _HEAD.size
    log_id = mapped[at : at + id_length].decode(errors="replace")
    at += id_length
    table = [_SECTION.unpack_from(mapped, at + i * _SECTION.size) for i in range(sections)]
    at += sections * _SECTION.size
    (crc,) = _CRC.unpack_from(mapped, at)
    with memoryview(mapped) as whole:
        if zlib.crc32(whole[at + _CRC.size :], zlib.crc32(whole[:at])) != crc:
            raise ImageError("the image's checksum does not match")
    if any(offset + length > size for offset, length in table):
        raise ImageError("a section of the image lies past its end")
    return fields, log_id, table


class GraphImage:
    """A mapped image: GraphProjection's official reads (entities, pages, relation keys)."""

    def __init__(self, mapped: mmap.mmap) -> None:
        head, self.log_id, table = _checked_head(mapped)
        self._mapped = mapped
        self._release_pages()  # read whole for the checksum: handed back
        # Every view of the map, released by `close` (the map cannot close while one is held).
        self._views: list[memoryview] = [memoryview(mapped)]
        self._sections = [self._held(self._views[0][o : o + n]) for o, n in table]
        self.position: int = head.position
        self.tip: int = head.tip
        self.n: int = head.n
        self.m: int = head.m
        self.segment_size: int = head.segment_size
        self.buckets: int = head.buckets
        n, m, segment_size, buckets = self.n, self.m, self.segment_size, self.buckets
        u32 = self._u32
        self._name_offsets = u32(_NAME_OFFSETS, n + 1)
        self._record_offsets = u32(_RECORD_OFFSETS, n + 1)
        self._by_name = u32(_BY_NAME, n)
        self._slots = u32(_SLOTS, None)
        self._rel_from, self._rel_to = u32(_REL_FROM, m), u32(_REL_TO, m)
        self._rel_type = u32(_REL_TYPE, m)
        self._type_offsets = u32(_TYPE_OFFSETS, None)
        self._incident_offsets = u32(_INCIDENT_OFFSETS, n + 1)
        self._incident = u32(_INCIDENT, None)
        self._text_offsets = u32(_TEXT_OFFSETS, n + 1)
        self._names = self._sections[_NAMES]
        self._records = self._sections[_RECORDS]
        self._texts = self._sections[_TEXTS]
        self._filter = self._sections[_FILTER]
        self.segments = (n + segment_size - 1) // segment_size
        self.row_bytes = (self.segments + 7) // 8
        slots = len(self._slots)
        if slots & (slots - 1) or slots < 2 * n or len(self._filter) != buckets * self.row_bytes:
            raise ImageError("the image's tables are not the sizes its counts make")
        self._types = [
            _text(self._sections[_TYPES][a:b]) for a, b in itertools.pairwise(self._type_offsets)
        ]
        # Every name decoded at once, for a whole-graph read (`_every_name`); dropped by
        # `release`, after the answer, so that it never outlives the call that made it.
        self._name_list: list[str] | None = None

    def _held(self, view: memoryview) -> memoryview:
        self._views.append(view)
        return view

    def _u32(self, section: int, count: int | None) -> memoryview:
        data = self._sections[section]
        if len(data) % 4 or (count is not None and len(data) != 4 * count):
            raise ImageError(f"the image's section {section} is not the size its counts make")
        return self._held(data.cast("I"))

    def _release_pages(self) -> None:
        # The kernel keeps them cached; this process stops counting them (a later read faults
        # them in again, cheaply). Not every platform has madvise.
        with contextlib.suppress(AttributeError, OSError, ValueError):
            self._mapped.madvise(mmap.MADV_DONTNEED)

    def release(self) -> None:
        """Hand back the pages read so far and what a whole-graph read decoded (after an
        answer)."""
        self._name_list = None
        self._release_pages()

    def close(self) -> None:
        """Unmap the file (nothing may be read from the image afterwards)."""
        self._name_list = None
        for view in reversed(self._views):
            view.release()
        self._mapped.close()

    # --- the graph's reads ----------------------------------------------------------------

    def name(self, i: int) -> str:
        if self._name_list is not None:
            return self._name_list[i]
        offsets = self._name_offsets
        return _text(self._names[offsets[i] : offsets[i + 1]])

    def names_at(self, indexes: Sequence[int]) -> list[str]:
        """The names at these listing indexes (most of them: every name decoded at once)."""
        if len(indexes) * _DENSE > self.n:
            names = self._every_name()
            return list(map(names.__getitem__, indexes))
        return list(map(self.name, indexes))

    def _every_name(self) -> list[str]:
        """Every name in listing order, decoded once for the read that asks (a whole-graph
        answer reads each name up to three times: its entity, its relations' ends)."""
        if self._name_list is None:
            offsets = self._name_offsets
            self._name_list = list(
                map(_text, map(self._names.__getitem__, map(slice, offsets[:-1], offsets[1:])))
            )
        return self._name_list

    def view(self, i: int) -> EntityView:
        """The entity at listing index `i`."""
        return self._view(i)

    def name_order(self) -> memoryview:
        """The listing indexes in name order."""
        return self._by_name

    def incident(self, i: int) -> memoryview:
        """The indexes of the relations with the entity at listing index `i` as an endpoint,
        ascending (listing order)."""
        offsets = self._incident_offsets
        return self._incident[offsets[i] : offsets[i + 1]]

    def relation_index(self, from_entity: str, to_entity: str, relation_type: str) -> int | None:
        """The index of the relation with this key, else None."""
        i, j = self.index_of(from_entity), self.index_of(to_entity)
        if i is None or j is None:
            return None
        rel_from, rel_to, rel_type, types = (
            self._rel_from,
            self._rel_to,
            self._rel_type,
            self._types,
        )
        for r in self.incident(i):
            if rel_from[r] == i and rel_to[r] == j and types[rel_type[r]] == relation_type:
                return r
        return None

    def relation_key(self, r: int) -> tuple[str, str, str]:
        """The key of the relation at index `r`."""
        return self._key(r)

    def _view(self, i: int) -> EntityView:
        offsets = self._record_offsets
        entity_type, observations = _RECORD_DECODER.decode(
            self._records[offsets[i] : offsets[i + 1]]
        )
        return EntityView(self.name(i), entity_type, observations)

    def index_of(self, name: str) -> int | None:
        """The listing index of the alive entity `name`, else None."""
        raw = _utf8(name)
        slots, names, offsets = self._slots, self._names, self._name_offsets
        mask = len(slots) - 1
        at = zlib.crc32(raw) & mask
        while True:
            slot = slots[at]
            if not slot:
                return None
            i = slot - 1
            if names[offsets[i] : offsets[i + 1]] == raw:
                return i
            at = (at + 1) & mask

    def entity_count(self) -> int:
        return self.n

    def entities(self) -> Iterator[EntityView]:
        """Alive entities in listing order."""
        offsets, records = self._record_offsets, self._records
        contents = map(
            _RECORD_DECODER.decode, map(records.__getitem__, map(slice, offsets[:-1], offsets[1:]))
        )
        return map(_entity_view, self._every_name(), contents)

    def entities_at(self, indexes: Iterable[int]) -> list[EntityView]:
        return list(map(self._view, indexes))

    def entities_named(
        self, names: Iterable[str], *, listing_order: bool = False
    ) -> list[EntityView]:
        """The alive entities among `names`, each once: in the order given, or in listing
        order; missing names skipped (GraphProjection.entities_named)."""
        found: dict[int, None] = {}
        for name in names:
            i = self.index_of(name)
            if i is not None:
                found[i] = None
        return self.entities_at(sorted(found) if listing_order else found)

    def entities_page(self, offset: int, limit: int | None) -> list[EntityView]:
        """The alive entities in name order, skipping `offset`, then at most `limit`."""
        stop = self.n if limit is None else min(self.n, offset + limit)
        return self.entities_at(self._by_name[offset:stop]) if offset < stop else []

    def _key(self, r: int) -> tuple[str, str, str]:
        return (
            self.name(self._rel_from[r]),
            self.name(self._rel_to[r]),
            self._types[self._rel_type[r]],
        )

    def relation_keys_read(self) -> Iterator[tuple[str, str, str]]:
        """The visible relations' keys in listing order."""
        names = self._every_name()
        return zip(
            map(names.__getitem__, self._rel_from),
            map(names.__getitem__, self._rel_to),
            map(self._types.__getitem__, self._rel_type),
            strict=True,
        )

    def relation_keys(self) -> list[tuple[str, str, str]]:
        return list(self.relation_keys_read())

    def relation_keys_of_any(self, names: Iterable[str]) -> list[tuple[str, str, str]]:
        """Keys of the visible relations with either endpoint in `names`, each once, in
        listing order."""
        found: set[int] = set()
        offsets, incident = self._incident_offsets, self._incident
        for name in names:
            i = self.index_of(name)
            if i is not None:
                found.update(incident[offsets[i] : offsets[i + 1]])
        return [self._key(r) for r in sorted(found)]

    # --- search ---------------------------------------------------------------------------

    def matching(self, query: str) -> list[int]:
        """Listing indexes of the entities whose search text holds `query` (case-insensitive,
        as projections.search matches), in listing order."""
        lowered = query.lower()
        needle = _utf8(lowered)
        size, segments = self.segment_size, self.segments
        buckets = query_buckets(lowered, self.buckets)
        if buckets:
            hits = -1
            row_bytes, matrix = self.row_bytes, self._filter
            for bucket in buckets:
                at = bucket * row_bytes
                hits &= int.from_bytes(matrix[at : at + row_bytes], "little")
                if not hits:
                    return []
            candidates: Sequence[int] = ones(hits)
        else:
            candidates = range(segments)
        found: list[int] = []
        offsets, texts = self._text_offsets, self._texts
        # A needle without the separator lies inside one text wherever it is found: when a
        # segment holds it many times, its texts cut out by their offsets (an observation may
        # hold the separator itself) and tested one by one is cheaper than finding each and
        # bisecting for its text (a broad query: every text).
        splittable = needle and _SEPARATOR not in needle
        for k in candidates:
            low, high = k * size, min(self.n, (k + 1) * size)
            base = offsets[low]
            chunk = bytes(texts[base : offsets[high]])
            if splittable and chunk.count(needle) * _DENSE > high - low:
                starts = map(operator.sub, offsets[low:high], repeat(base))
                ends = map(operator.sub, offsets[low + 1 : high + 1], repeat(base))
                cut = map(chunk.__getitem__, map(slice, starts, ends))
                holds = map(operator.contains, cut, repeat(needle))
                found.extend(itertools.compress(range(low, high), holds))
                continue
            at = chunk.find(needle)
            i = low - 1
            end = len(chunk)  # an empty query is found there too: past the last text
            while 0 <= at < end:
                i = bisect_right(offsets, base + at, i + 1, high) - 1
                found.append(i)
                at = chunk.find(needle, offsets[i + 1] - base)
        return found


class ImageReads:
    """An image as the official read tools read the models: `graph` and `search`."""

    def __init__(self, image: GraphImage) -> None:
        self.graph = image
        self.search = ImageSearch(image)
        self.position = image.position


class ImageSearch:
    """The search index of an image (a Searcher: graphmem.tools.memory_reads)."""

    def __init__(self, image: GraphImage) -> None:
        self._image = image

    def search(self, graph: object, query: str) -> list[str]:
        """Names of the alive entities whose name, type or an observation holds `query`."""
        image = self._image
        return image.names_at(image.matching(query))
