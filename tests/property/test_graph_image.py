"""A graph's read image answers what the graph answers (projections.graph_image).

Over random folds (the fold's own random logs in random orders, and graphs of unicode names and
texts with deletions and re-creations), the image of the folded graph, written to a file and
mapped, answers the official reads — search_nodes (every argument), open_nodes, read_graph
(pages too) — exactly as the graph and its search index do, through the same functions
(graphmem.tools.memory_reads); its search with tiny segments and few buckets (so segments
are many and buckets collide) as with the defaults.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
)
from graphmem.tools.memory_reads import graph_page, opened, searched
from projections import graph_image
from projections.graph import GraphProjection
from projections.graph_image import (
    IMAGE_FILE,
    GraphImage,
    ImageError,
    ImageSearch,
    encode_image,
    open_image,
    write_image,
)
from projections.search import SearchProjection
from tests.property.test_graph_fold import envelope_sets, numbered

QUERY_CHARS = "abcAB0 İiß日本😀\u0307\udc80\xa0\u3000-"
# A lone surrogate reaches a query, never the log (its events are msgpack: strict UTF-8).
STORED_CHARS = QUERY_CHARS.replace("\udc80", "")
TEXT_CHARS = STORED_CHARS + "\t\n\x00\x01"
NAMES = st.text(STORED_CHARS, min_size=1, max_size=4)
TEXTS = st.text(TEXT_CHARS, max_size=8)


@st.composite
def unicode_logs(draw: st.DrawFn) -> list[Envelope]:
    names = draw(st.lists(NAMES, min_size=1, max_size=12, unique=True))
    name = st.sampled_from(names)
    event = st.one_of(
        st.builds(EntityCreated, name=name, entity_type=st.sampled_from(["Person", "tool", "日"])),
        st.builds(EntityCreated, name=name, entity_type=st.sampled_from(["Person", "x"])),
        st.builds(ObservationAdded, entity=name, content=TEXTS),
        st.builds(ObservationAdded, entity=name, content=TEXTS),
        st.builds(ObservationDeleted, entity=name, content=TEXTS),
        st.builds(EntityDeleted, name=name),
        st.builds(
            RelationCreated,
            from_entity=name,
            to_entity=name,
            relation_type=st.sampled_from(["knows", "Owns", "ß"]),
        ),
        st.builds(
            RelationDeleted, from_entity=name, to_entity=name, relation_type=st.just("knows")
        ),
    )
    drawn: list[tuple[str, int, AnyEvent]] = draw(
        st.lists(st.tuples(st.sampled_from(["n1", "n2"]), st.integers(0, 6), event), max_size=70)
    )
    return numbered(drawn)


def _mapped(graph: GraphProjection, directory: str, **layout: int) -> GraphImage:
    write_image(directory, encode_image(graph, log_id="node-1", tip=7, **layout))
    return open_image(directory, lambda _: ("node-1", graph.position, 7))


def _queries(graph: GraphProjection, data: st.DataObject) -> list[str]:
    texts = ["\x00".join((e.name, e.entity_type, *e.observations)) for e in graph.entities()]
    queries = ["", "a", "A", "日本", "zzz-not-there"]
    queries += data.draw(st.lists(st.text(QUERY_CHARS, max_size=4), max_size=4))
    for text in data.draw(st.lists(st.sampled_from(texts), max_size=4)) if texts else []:
        start = data.draw(st.integers(0, len(text)))
        piece = text[start : start + data.draw(st.integers(0, 6))]
        if "\x00" not in piece and "\x01" not in piece:  # the edge refuses them in a query
            queries.append(data.draw(st.sampled_from([piece, piece.upper(), piece.lower()])))
    return queries


def _same_answers(graph: GraphProjection, image: GraphImage, data: st.DataObject) -> None:
    index = SearchProjection()
    index.note_names(graph.entity_names())
    mapped = ImageSearch(image)
    types = [None, "Person", "tool", "x", "t1"]
    for query in _queries(graph, data):
        entity_type = data.draw(st.sampled_from(types))
        offset = data.draw(st.none() | st.integers(0, 5))
        limit = data.draw(st.none() | st.integers(1, 5))
        arguments: dict[str, Any] = {"entity_type": entity_type, "offset": offset, "limit": limit}
        expected = searched(graph, index, query, **arguments)
        assert searched(image, mapped, query, **arguments) == expected, query
    names = [e.name for e in graph.entities()] + ["missing", "A"]
    asked = data.draw(st.lists(st.sampled_from(names), max_size=6))
    assert opened(image, asked) == opened(graph, asked)
    for offset, limit in ((None, None), (0, None), (1, 2), (3, None), (0, 100), (50, 1)):
        assert graph_page(image, offset, limit) == graph_page(graph, offset, limit)
    assert image.entity_count() == graph.entity_count()
    assert list(image.relation_keys_read()) == list(graph.relation_keys_read())


@settings(max_examples=150, deadline=None)
@given(envelope_sets(), st.randoms(use_true_random=False), st.data())
def test_the_image_of_a_fold_answers_what_the_fold_answers(
    envelopes: list[Envelope], rng: Any, data: st.DataObject
) -> None:
    rng.shuffle(envelopes)
    graph = GraphProjection()
    graph.apply_all(envelopes)
    with tempfile.TemporaryDirectory() as directory:
        image = _mapped(graph, directory)
        try:
            _same_answers(graph, image, data)
        finally:
            image.close()


@settings(max_examples=150, deadline=None)
@given(
    unicode_logs(), st.randoms(use_true_random=False), st.data(), st.sampled_from([1, 2, 3, 128])
)
def test_an_image_of_unicode_texts_searches_as_the_index_does(
    envelopes: list[Envelope], rng: Any, data: st.DataObject, segment_size: int
) -> None:
    rng.shuffle(envelopes)
    graph = GraphProjection()
    graph.apply_all(envelopes)
    with tempfile.TemporaryDirectory() as directory:
        image = _mapped(graph, directory, segment_size=segment_size, buckets=7)
        try:
            _same_answers(graph, image, data)
        finally:
            image.close()


def _graph() -> GraphProjection:
    graph = GraphProjection()
    events: list[AnyEvent] = [
        EntityCreated(name="alice", entity_type="Person"),
        ObservationAdded(entity="alice", content="likes tea"),
        EntityCreated(name="bob", entity_type="Person"),
        RelationCreated(from_entity="alice", to_entity="bob", relation_type="knows"),
    ]
    graph.apply_all(
        [
            Envelope(position=i, origin="n", origin_seq=i, hlc=i, tx=i, event=event)
            for i, event in enumerate(events, start=1)
        ]
    )
    return graph


def test_an_image_is_used_only_for_the_log_and_the_record_it_was_made_at(tmp_path: Any) -> None:
    graph = _graph()
    write_image(tmp_path, encode_image(graph, log_id="node-1", tip=11))
    image = open_image(tmp_path, lambda _: ("node-1", 4, 11))
    assert [e.name for e in image.entities()] == ["alice", "bob"]
    image.close()
    for log_id, tip, reason in (
        ("node-2", 11, "another log"),
        ("node-1", 12, "not the one it was made at"),
        ("node-1", None, "not the one it was made at"),
    ):
        with pytest.raises(ImageError, match=reason):
            open_image(tmp_path, lambda _, i=log_id, t=tip: (i, 4, t))  # type: ignore[misc]


def test_a_damaged_or_missing_image_is_refused_with_its_reason(tmp_path: Any) -> None:
    with pytest.raises(ImageError, match="no image"):
        open_image(tmp_path, lambda _: ("node-1", 4, 11))
    data = bytearray(encode_image(_graph(), log_id="node-1", tip=11))
    data[-3] ^= 0xFF
    (tmp_path / IMAGE_FILE).write_bytes(bytes(data))
    with pytest.raises(ImageError, match="checksum"):
        open_image(tmp_path, lambda _: ("node-1", 4, 11))
    (tmp_path / IMAGE_FILE).write_bytes(bytes(data[:10]))
    with pytest.raises(ImageError, match="shorter than its header"):
        open_image(tmp_path, lambda _: ("node-1", 4, 11))
    (tmp_path / IMAGE_FILE).write_bytes(b"")
    with pytest.raises(ImageError, match="cannot be mapped"):
        open_image(tmp_path, lambda _: ("node-1", 4, 11))


def test_an_image_made_by_another_version_of_the_folds_is_refused(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upgrade that bumps the graph's or the search's fold version (their checkpoints
    refolded) leaves an image made before it unused."""
    graph = _graph()
    write_image(tmp_path, encode_image(graph, log_id="node-1", tip=11))
    monkeypatch.setattr(graph_image, "MODELS", (GraphProjection.version + 1) << 16 | 1)
    with pytest.raises(ImageError, match="another version of the graph's fold"):
        open_image(tmp_path, lambda _: ("node-1", 4, 11))


def test_a_broad_match_finds_texts_that_hold_the_entity_separator_themselves(
    tmp_path: Any,
) -> None:
    """An observation may hold U+0001, the separator after each text: a segment matched
    text by text (most of its texts hold the query) cuts them by their offsets, not at it."""
    graph = GraphProjection()
    events: list[AnyEvent] = [
        EntityCreated(name="0", entity_type="Person"),
        ObservationAdded(entity="0", content="\x01A"),
        EntityCreated(name="1", entity_type="Person"),
        ObservationAdded(entity="1", content="a\x01\x01b"),
    ]
    graph.apply_all(
        [
            Envelope(position=i, origin="n", origin_seq=i, hlc=i, tx=i, event=event)
            for i, event in enumerate(events, start=1)
        ]
    )
    for size in (1, 2):
        directory = tmp_path / f"segments-{size}"
        directory.mkdir()
        image = _mapped(graph, str(directory), segment_size=size, buckets=7)
        try:
            index = SearchProjection()
            index.note_names(graph.entity_names())
            for query in ("a", "b", "person"):
                expected = index.search(graph, query)
                assert ImageSearch(image).search(image, query) == expected, query
            assert index.search(graph, "a") == ["0", "1"]
        finally:
            image.close()
