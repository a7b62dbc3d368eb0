"""A subgraph answer (entities and relations) spilled as it is read, to be written in slices.

A whole-graph answer at a million entities is a 680 MB line; built as one value it was the
views' dicts, the encoded value, the indented text and the line all alive at once (2.4 GB
above the graph). Here the writer's thread, in the one query that reads the graph (so the
answer is one snapshot), encodes the entities and relations batch by batch into a spooled
file: in memory while small, on disk (in the data dir, never a RAM-backed /tmp) once past
`IN_MEMORY_BYTES`. The file holds the compact JSON of each batch as an array; the answer's
two forms are made from it a slice at a time, each batch as it is read back:

- `structured_pieces`: the compact JSON of {"entities": [...], "relations": [...]};
- `text_pieces`: the same value indented as `JSON.stringify(value, null, 2)` writes it
  (graphmem.tools.base.render), each batch formatted alone at its depth in the answer
  (formatting is local: an array's formatting is its elements' joined by ",\\n").

Joined, the pieces are byte for byte the unstreamed answer's (property tests hold them to it).
"""

from __future__ import annotations

import tempfile
import weakref
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import IO, Any

import msgspec

from projections.graph import EntityView

__all__ = ["IN_MEMORY_BYTES", "SLICE_BYTES", "GraphBody"]

# An answer's compact JSON kept in memory up to this size; past it, spooled to disk.
IN_MEMORY_BYTES = 1024 * 1024
# The compact JSON of one batch, aimed at: a slice's memory is a small multiple of it (the
# batch read back, formatted, escaped: some five copies alive at once). Below glibc's default
# mmap threshold (128 KiB) on purpose: once a process has freed a larger block, the threshold
# rises and blocks that size come from the heap, where what a broad answer frees stays
# resident. At 1 MiB a broad answer at 50k left ~14 MiB there; at 64 KiB, under 1 (no slower:
# design-notes, "What a broad answer leaves behind").
SLICE_BYTES = 64 * 1024
_FIRST_BATCH = 32
_MAX_BATCH = 65_536

_encode = msgspec.json.Encoder().encode
_WRAP_HEAD = len(b'{\n  "k": [\n')
_WRAP_TAIL = len(b"\n  ]\n}")


class _Entity(msgspec.Struct):
    """An entity in the official JSON shape (graph_values.entity_value)."""

    name: str
    entityType: str  # the wire name
    observations: list[str]


class _Relation(msgspec.Struct, rename={"source": "from"}):
    """A relation in the official JSON shape (graph_values.relation_value)."""

    source: str
    to: str
    relationType: str  # the wire name


class _Spill:
    """The spooled file and the lengths of the batches written to it, section by section."""

    def __init__(self, directory: Path | None, in_memory_bytes: int) -> None:
        self.file: IO[bytes] = tempfile.SpooledTemporaryFile(  # noqa: SIM115 - GraphBody owns it
            max_size=in_memory_bytes, dir=None if directory is None else str(directory)
        )
        self.in_memory_bytes = in_memory_bytes
        self.sections: list[list[int]] = []

    def write(self, items: Iterable[Any], slice_bytes: int) -> None:
        """One section: `items` encoded as arrays of about `slice_bytes` each."""
        lengths: list[int] = []
        remaining = iter(items)
        size = _FIRST_BATCH
        while batch := list(islice(remaining, size)):
            encoded = _encode(batch)
            self.file.write(encoded)
            lengths.append(len(encoded))
            # Aim the next batch at slice_bytes, from this one's bytes per item.
            size = max(1, min(_MAX_BATCH, len(batch) * slice_bytes // len(encoded)))
        self.sections.append(lengths)


class GraphBody:
    """A spilled {"entities": [...], "relations": [...]} answer; `close` frees its file."""

    def __init__(self, spill: _Spill) -> None:
        self._file = spill.file
        self._entities, self._relations = spill.sections
        self._in_memory_bytes = spill.in_memory_bytes
        # A body dropped unwritten (its call cancelled) still frees its file, quietly.
        self._closer = weakref.finalize(self, spill.file.close)

    @classmethod
    def spill(
        cls,
        entities: Iterable[EntityView],
        relation_keys: Iterable[tuple[str, str, str]],
        *,
        directory: Path | None = None,
        in_memory_bytes: int = IN_MEMORY_BYTES,
        slice_bytes: int = SLICE_BYTES,
    ) -> GraphBody:
        """The answer of `entities` (views, read one at a time) and the relations of
        `relation_keys` (from, to, type), in the order given."""
        spill = _Spill(directory, in_memory_bytes)
        try:
            shaped = (_Entity(e.name, e.entity_type, e.observations) for e in entities)
            spill.write(shaped, slice_bytes)
            spill.write((_Relation(*key) for key in relation_keys), slice_bytes)
        except BaseException:
            spill.file.close()
            raise
        return cls(spill)

    @property
    def on_disk(self) -> bool:
        """True once the answer outgrew memory: then it is worth writing in slices."""
        # As the spooled file decides: it moves to disk when its size passes the bound.
        return sum(self._entities) + sum(self._relations) > self._in_memory_bytes

    def close(self) -> None:
        self._closer()

    def _batches(self, lengths: list[int], start: int) -> Iterator[bytes]:
        offset = start
        for length in lengths:
            self._file.seek(offset)
            yield self._file.read(length)
            offset += length

    def structured_pieces(self) -> Iterator[bytes]:
        """The compact JSON, a batch at a time."""
        relations_at = sum(self._entities)
        yield b'{"entities":['
        for i, batch in enumerate(self._batches(self._entities, 0)):
            yield batch[1:-1] if i == 0 else b"," + batch[1:-1]
        yield b'],"relations":['
        for i, batch in enumerate(self._batches(self._relations, relations_at)):
            yield batch[1:-1] if i == 0 else b"," + batch[1:-1]
        yield b"]}"

    def text_pieces(self) -> Iterator[bytes]:
        """The indented JSON text (UTF-8), a batch at a time."""
        relations_at = sum(self._entities)
        yield b"{\n"
        yield from _indented_section(b"entities", self._batches(self._entities, 0), last=False)
        yield from _indented_section(
            b"relations", self._batches(self._relations, relations_at), last=True
        )
        yield b"}"

    def materialized(self) -> tuple[str, bytes]:
        """(the indented text, the compact JSON) whole: for the paths that cannot stream."""
        text = b"".join(self.text_pieces()).decode()
        return text, b"".join(self.structured_pieces())


def _indented_section(key: bytes, batches: Iterator[bytes], *, last: bool) -> Iterator[bytes]:
    """`  "key": [...]` of an object at the top level, its items one level deeper."""
    end = b"\n" if last else b",\n"
    first = True
    for batch in batches:
        # Formatted as the value of a key, the items come out at their depth in the answer:
        # '{\n  "k": [\n    item,\n    item\n  ]\n}'; the items are cut out of it.
        wrapped = msgspec.json.format(b'{"k":' + batch + b"}", indent=2)
        items = memoryview(wrapped)[_WRAP_HEAD:-_WRAP_TAIL]
        piece = (b'  "' + key + b'": [\n' if first else b",\n") + items
        # Not held while the piece is escaped and written: one copy fewer at a time.
        del batch, wrapped, items
        yield piece
        first = False
    yield b'  "' + key + b'": []' + end if first else b"\n  ]" + end
