"""Writes over the image decide and answer what the fold does (projections.image_overlay).

A random graph (the fold's random logs over unicode names and texts: several origins, out of
order, deletions and re-creations) is imaged; then random official write commands are decided
both against the fold and against the image's overlay, each decision (events, result, or the
refusal) compared, and their envelopes, stamped newer than everything (as one writer's own
appends are), folded into both. After each command every official read is compared through
the read tools' own functions (graphmem.tools.memory_reads): search_nodes with every argument,
open_nodes, read_graph and its pages. At a random point the overlay is compacted as the
writer's is (a new image of the fold there, the envelopes since folded over it), and an
overlay over the first image refolded from all of them must answer the same.
"""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.command_inputs import EntityInput, ObservationDeletion, ObservationInput, RelationInput
from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    CreateRelations,
    DeleteEntities,
    DeleteObservations,
    DeleteRelations,
)
from actors.decide import decide
from actors.errors import CommandRejectedError
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
    RelationCreated,
    RelationDeleted,
    SchemaRegistered,
)
from graphmem.tools.memory_reads import graph_page, opened, searched
from projections.graph import GraphProjection
from projections.graph_image import GraphImage, encode_image, open_image, write_image
from projections.image_overlay import ImageOverlay
from projections.search import SearchProjection
from tests.property.test_graph_image import NAMES, QUERY_CHARS, TEXTS, unicode_logs

TYPES = st.sampled_from(["Person", "tool", "日"])
KINDS = st.sampled_from(["knows", "Owns", "ß"])


def _contents(graph: GraphProjection) -> st.SearchStrategy[str]:
    """Observation contents: random, or ones the graph holds (random ones seldom delete any)."""
    held = sorted({o for e in graph.entities() for o in e.observations})
    return TEXTS | st.sampled_from(held) if held else TEXTS


def _commands(
    names: list[str], keys: list[tuple[str, str, str]], contents: st.SearchStrategy[str] = TEXTS
) -> st.SearchStrategy[Command]:
    name = st.sampled_from(names) | NAMES
    relation = st.builds(RelationInput, from_entity=name, to_entity=name, relation_type=KINDS)
    if keys:  # the image's relations too, which random triples seldom hit
        relation |= st.sampled_from(keys).map(lambda key: RelationInput(*key))
    few = {"max_size": 4}
    return st.one_of(
        st.builds(
            CreateEntities,
            entities=st.lists(
                st.builds(
                    EntityInput,
                    name=name,
                    entity_type=TYPES,
                    observations=st.lists(TEXTS, max_size=3),
                ),
                **few,
            ),
        ),
        st.builds(CreateRelations, relations=st.lists(relation, **few)),
        st.builds(
            AddObservations,
            observations=st.lists(
                st.builds(ObservationInput, entity_name=name, contents=st.lists(TEXTS, **few)),
                **few,
            ),
        ),
        st.builds(DeleteEntities, entity_names=st.lists(name, **few)),
        st.builds(
            DeleteObservations,
            deletions=st.lists(
                st.builds(
                    ObservationDeletion, entity_name=name, observations=st.lists(contents, **few)
                ),
                **few,
            ),
        ),
        st.builds(DeleteRelations, relations=st.lists(relation, **few)),
    )


POOL = ["a", "b", "c", "İ", "日本"]


def _populated(graph: GraphProjection, data: st.DataObject) -> None:
    """Fold into `graph` some creations over a small pool of names, then events among them
    (newer than all before): random logs alone seldom leave relations visible."""
    names = sorted({e.name for e in graph.entities()} | set(POOL))
    created = data.draw(st.lists(st.sampled_from(names), max_size=6, unique=True))
    events: list[AnyEvent] = [EntityCreated(name=name, entity_type="tool") for name in created]
    if created:
        among = st.sampled_from(created)
        keys = data.draw(st.lists(st.tuples(among, among, KINDS), max_size=6))
        events += [RelationCreated(*key) for key in keys]
    events += data.draw(st.lists(_events(names, []), max_size=20))
    graph.apply_all(_Log(graph, hlc=_newest(graph) + 1).append(events))


def _newest(graph: GraphProjection) -> int:
    return graph.position + 10**6  # past any hlc of the random logs (small integers)


def _events(
    names: list[str], keys: list[tuple[str, str, str]], contents: st.SearchStrategy[str] = TEXTS
) -> st.SearchStrategy[AnyEvent]:
    name = st.sampled_from(names) | st.sampled_from(POOL) | NAMES
    relation = st.tuples(name, name, KINDS)
    if keys:
        relation |= st.sampled_from(keys)
    return st.one_of(
        st.builds(EntityCreated, name=name, entity_type=TYPES),
        st.builds(ObservationAdded, entity=name, content=TEXTS),
        st.builds(ObservationAdded, entity=name, content=TEXTS),
        st.builds(ObservationDeleted, entity=name, content=contents),
        st.builds(EntityDeleted, name=name),
        relation.map(lambda key: RelationCreated(*key)),
        relation.map(lambda key: RelationCreated(*key)),
        relation.map(lambda key: RelationDeleted(*key)),
    )


class _Log:
    """Envelopes appended after a fold: each newer than anything before, from one origin."""

    def __init__(self, after: GraphProjection, hlc: int) -> None:
        self.position = after.position
        self.hlc = hlc
        self.appended: list[Envelope] = []

    def append(self, events: list[AnyEvent]) -> list[Envelope]:
        envelopes = []
        for event in events:
            self.position += 1
            self.hlc += 1
            envelopes.append(
                Envelope(
                    position=self.position,
                    origin="writer",
                    origin_seq=self.position,
                    hlc=self.hlc,
                    tx=self.position,
                    event=event,
                )
            )
        self.appended.extend(envelopes)
        return envelopes


def _image(graph: GraphProjection, directory: str) -> GraphImage:
    write_image(directory, encode_image(graph, log_id="node-1", tip=7))
    return open_image(directory, lambda _: ("node-1", graph.position, 7))


def _decided(graph: Any, command: Command) -> Any:
    try:
        decision = decide(graph, command)
    except CommandRejectedError as refusal:
        return type(refusal), str(refusal)
    return decision.events, decision.result


def _texts(graph: GraphProjection) -> list[str]:
    return ["\x00".join((e.name, e.entity_type, *e.observations)) for e in graph.entities()]


def _same_answers(
    graph: GraphProjection, overlay: ImageOverlay, data: st.DataObject, imaged: list[str]
) -> None:
    """Every official read alike; the queries drawn from the texts as they are now and as
    the image has them (a changed entity that no longer matches must not be found)."""
    index = SearchProjection()
    index.note_names(graph.entity_names())
    texts = _texts(graph) + imaged
    queries = ["", "a", "A", "日本", "zzz-not-there"]
    queries += data.draw(st.lists(st.text(QUERY_CHARS.replace("\x01", ""), max_size=3), max_size=3))
    for text in data.draw(st.lists(st.sampled_from(texts), max_size=3)) if texts else []:
        start = data.draw(st.integers(0, len(text)))
        piece = text[start : start + data.draw(st.integers(0, 6))]
        if "\x00" not in piece and "\x01" not in piece:  # the edge refuses them in a query
            queries.append(data.draw(st.sampled_from([piece, piece.upper()])))
    for query in queries:
        arguments: dict[str, Any] = {
            "entity_type": data.draw(st.sampled_from([None, "Person", "tool", "x"])),
            "offset": data.draw(st.none() | st.integers(0, 4)),
            "limit": data.draw(st.none() | st.integers(1, 4)),
        }
        expected = searched(graph, index, query, **arguments)
        assert searched(overlay, overlay, query, **arguments) == expected, query
    names = [e.name for e in graph.entities()] + ["missing"]
    asked = data.draw(st.lists(st.sampled_from(names), max_size=6))
    assert opened(overlay, asked) == opened(graph, asked)
    assert overlay.entities_named(asked) == graph.entities_named(asked)
    for offset, limit in ((None, None), (0, None), (1, 2), (3, None), (50, 1)):
        assert graph_page(overlay, offset, limit) == graph_page(graph, offset, limit)
    assert overlay.entity_count() == graph.entity_count()
    assert overlay.relation_keys() == graph.relation_keys()


@settings(max_examples=150, deadline=None)
@given(unicode_logs(), st.data())
def test_writes_over_an_image_decide_and_answer_what_the_fold_does(
    log: list[Envelope], data: st.DataObject
) -> None:
    graph = GraphProjection()
    graph.apply_all(log)
    _populated(graph, data)
    names = sorted({e.name for e in graph.entities()} | set(POOL))
    keys = graph.relation_keys()
    commands = data.draw(
        st.lists(_commands(names, keys, _contents(graph)), min_size=1, max_size=12)
    )
    compact_after = data.draw(st.integers(0, len(commands)))
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        imaged_texts = _texts(graph)
        imaged = _image(graph, first)
        overlay = ImageOverlay(imaged)
        appended = _Log(graph, hlc=_newest(graph))
        compacted: list[Envelope] = []
        for step, command in enumerate(commands):
            if step == compact_after:
                compacted = list(appended.appended)
                overlay = ImageOverlay(_image(graph, second))
            decided = _decided(graph, command)
            assert _decided(overlay, command) == decided
            if isinstance(decided[0], type) or not decided[0]:
                continue
            envelopes = appended.append(decided[0])
            graph.apply_all(envelopes)
            assert overlay.apply(envelopes)
            assert overlay.position == graph.position
            _same_answers(graph, overlay, data, imaged_texts)
        refolded = ImageOverlay(imaged)
        assert refolded.apply(appended.appended)
        _same_answers(graph, refolded, data, imaged_texts)
        assert compacted == appended.appended[: len(compacted)]
        imaged.close()
        overlay.image.close()


@settings(max_examples=150, deadline=None)
@given(unicode_logs(), st.data())
def test_the_official_events_folded_over_an_image_in_stamp_order_read_as_the_fold(
    log: list[Envelope], data: st.DataObject
) -> None:
    """Any sequence of the six events, each newer than all before (not only what decisions
    make: a creation of an alive entity, a relation created again, an entity deleted with its
    relations left to the visibility rule)."""
    graph = GraphProjection()
    graph.apply_all(log)
    _populated(graph, data)
    names = sorted({e.name for e in graph.entities()} | set(POOL))
    keys = graph.relation_keys()
    later = data.draw(st.lists(_events(names, keys, _contents(graph)), max_size=30))
    appended = _Log(graph, hlc=_newest(graph))
    envelopes = appended.append(later)
    with tempfile.TemporaryDirectory() as directory:
        overlay = ImageOverlay(_image(graph, directory))
        imaged_texts = _texts(graph)
        graph.apply_all(envelopes)
        assert overlay.apply(envelopes)
        _same_answers(graph, overlay, data, imaged_texts)
        for name in data.draw(st.lists(st.sampled_from([*graph.entity_names(), "x"]), max_size=4)):
            assert overlay.has_entity(name) == graph.has_entity(name)
            assert overlay.observations(name) == graph.observations(name)
        for key in [*graph.relation_keys(), ("x", "x", "knows")]:
            assert overlay.has_relation(*key) == graph.has_relation(*key)
        overlay.image.close()


def test_an_event_it_cannot_fold_is_refused_and_a_neutral_one_passes() -> None:
    graph = GraphProjection()
    with tempfile.TemporaryDirectory() as directory:
        overlay = ImageOverlay(_image(graph, directory))
        neutral = Envelope(
            position=1,
            origin="w",
            origin_seq=1,
            hlc=1,
            tx=1,
            event=SchemaRegistered(type_name="s", schema_json="{}", digest="d"),
        )
        assert overlay.apply([neutral])
        assert overlay.position == 1
        assert not overlay.changed
        update = Envelope(
            position=2, origin="w", origin_seq=2, hlc=2, tx=2, event=EntityUpdated(name="a")
        )
        assert not overlay.apply([update])
        overlay.image.close()


def test_an_entity_of_the_image_whose_observations_changed_is_searched_as_it_is_now() -> None:
    graph = GraphProjection()
    log = _Log(graph, hlc=1)
    graph.apply_all(
        log.append(
            [
                EntityCreated(name="a", entity_type="drink"),
                ObservationAdded(entity="a", content="coffee"),
                ObservationAdded(entity="a", content="tea"),
                EntityCreated(name="b", entity_type="drink"),
                EntityCreated(name="c", entity_type="drink"),
                ObservationAdded(entity="c", content="coffee"),
            ]
        )
    )
    with tempfile.TemporaryDirectory() as directory:
        overlay = ImageOverlay(_image(graph, directory))
        later = log.append(
            [
                ObservationDeleted(entity="a", content="coffee"),
                ObservationAdded(entity="b", content="more coffee"),
                EntityDeleted(name="c"),
            ]
        )
        assert overlay.apply(later)
        assert overlay.search(None, "coffee") == ["b"]
        assert overlay.search(None, "tea") == ["a"]
        assert overlay.search(None, "DRINK") == ["a", "b"]
        overlay.image.close()
