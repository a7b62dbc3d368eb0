"""A rebuild's direct path (projections.plain_prefix) against the fold, for any log.

Random logs mix what the direct path reads (new entities, observations, relations, schema
events, markers, decay runs, creations with attributes) with what ends it (deletions,
updates, re-creations, names written to before their creation, older stamps, other origins),
from the graph fold's own event strategy (tests/property/test_graph_fold.py) and plain runs of
the shape a real log has. For each: the snapshots written at the prefix's end are, byte for
byte, the fold's of that prefix; restored and folded on, they end as the fold of the whole
log; and whatever the chunking of the records, the prefix ends at the same place. Each test
runs both implementations of the scan: the C kernel (projections._prefix_scan, skipped only
where it is not built) and the pure-Python path (tests/property/test_prefix_scan.py compares
the two with each other).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    Envelope,
    ObservationAdded,
    RelationCreated,
    SchemaRegistered,
    SchemaRetired,
    encode_envelope,
)
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.plain_prefix import COMPILED, PlainPrefix
from projections.schemas import SchemaProjection
from tests.property.test_graph_fold import EVENTS

MODELS = (GraphProjection, SchemaProjection, ConflictsProjection)
# The scan's two implementations, by `compiled`.
SCANS = pytest.mark.parametrize(
    "compiled",
    [
        pytest.param(True, id="C", marks=pytest.mark.skipif(not COMPILED, reason="not built")),
        pytest.param(False, id="Python"),
    ],
)
NAMES = ["a", "b", "c", "d", "e", "f", "Zoë", "名前"]
PLAIN: st.SearchStrategy[AnyEvent] = st.one_of(
    st.builds(EntityCreated, name=st.sampled_from(NAMES), entity_type=st.sampled_from("tu")),
    st.builds(
        ObservationAdded, entity=st.sampled_from(NAMES), content=st.sampled_from(["x", "y", ""])
    ),
    st.builds(
        RelationCreated,
        from_entity=st.sampled_from(NAMES),
        to_entity=st.sampled_from(NAMES),
        relation_type=st.sampled_from(["r", "s"]),
    ),
    st.builds(
        SchemaRegistered,
        type_name=st.sampled_from("tu"),
        schema_json=st.just('{"type": "object"}'),
        digest=st.just("d"),
    ),
    st.builds(SchemaRetired, type_name=st.sampled_from("tu")),
)


@st.composite
def logs(draw: st.DrawFn) -> list[Envelope]:
    """A log: runs of plain events in one origin's rising stamps (its clock going back once,
    now and then), and between them now and then any event of the graph fold's, from any
    origin, its clock anywhere near."""
    drawn: list[tuple[str, int, AnyEvent]] = []
    hlc = 100
    for _ in range(draw(st.integers(0, 6))):
        origin = draw(st.sampled_from(["n1", "n1", "n1", "n2"]))
        back = draw(st.none() | st.integers(0, 25))  # where the clock goes back, if it does
        for i, event in enumerate(draw(st.lists(PLAIN, max_size=25))):
            hlc += -2 if i == back else draw(st.sampled_from([0, 0, 1]))
            drawn.append((origin, hlc, event))
        if draw(st.booleans()):
            hlc += draw(st.integers(-3, 2))
            drawn.append((draw(st.sampled_from(["n1", "n2", "n3"])), hlc, draw(EVENTS)))
    sequence: dict[str, int] = defaultdict(int)
    envelopes = []
    for position, (origin, clock, event) in enumerate(drawn, start=1):
        sequence[origin] += 1
        envelopes.append(
            Envelope(
                position=position,
                origin=origin,
                origin_seq=sequence[origin],
                hlc=clock,
                tx=sequence[origin],
                event=event,
            )
        )
    return envelopes


def folded(envelopes: list[Envelope]) -> dict[str, bytes]:
    snapshots = {}
    for model in MODELS:
        projection = model()
        projection.apply_all(envelopes)
        snapshots[model.name] = projection.to_snapshot()
    return snapshots


def read_directly(
    envelopes: list[Envelope], chunks: list[int], compiled: bool = COMPILED
) -> PlainPrefix:
    """The direct path over the log's stored records, fed in chunks of the given sizes."""
    return feed_records(list(map(encode_envelope, envelopes)), chunks, compiled)


def feed_records(
    records: list[bytes],
    chunks: list[int],
    compiled: bool,
    between: Callable[[PlainPrefix], None] | None = None,
) -> PlainPrefix:
    """A PlainPrefix fed the stored records in chunks of the given sizes, by one scan;
    `between` is handed it after each chunk that leaves records to read."""
    prefix = PlainPrefix(compiled=compiled)
    start = 0
    for size in [*chunks, len(records)]:
        prefix.feed(records[start : start + size])
        start += size
        if prefix.ended or start >= len(records):
            break
        if between is not None:
            between(prefix)
    return prefix


# A log of every plain kind, in two runs (the second after a schema event, read record by
# record), then a deletion that ends the prefix: a stub (an observation of a name not yet
# created, and a relation to one), an observation content added twice, a relation created
# twice, a creation with attributes, a relation with a weight.
EVERY_CASE: list[tuple[str, int, AnyEvent]] = [
    ("n1", 1, EntityCreated(name="a", entity_type="t")),
    ("n1", 1, ObservationAdded(entity="a", content="x")),
    ("n1", 2, ObservationAdded(entity="ghost", content="y")),
    ("n1", 2, RelationCreated(from_entity="a", to_entity="nobody", relation_type="r")),
    ("n1", 3, EntityCreated(name="b", entity_type="u", confidence=0.9, aliases=["B"])),
    ("n1", 3, RelationCreated(from_entity="a", to_entity="b", relation_type="r")),
    ("n1", 3, ObservationAdded(entity="a", content="x")),
    ("n1", 4, SchemaRegistered(type_name="t", schema_json='{"type": "object"}', digest="d")),
    ("n2", 5, RelationCreated(from_entity="a", to_entity="b", relation_type="r", weight=2.0)),
    ("n2", 5, ObservationAdded(entity="a", content="x")),
    ("n2", 5, RelationCreated(from_entity="b", to_entity="b", relation_type="s")),
    ("n1", 6, EntityDeleted(name="a")),
    ("n1", 6, ObservationAdded(entity="b", content="z")),
]


def every_case() -> list[Envelope]:
    sequence: dict[str, int] = defaultdict(int)
    envelopes = []
    for position, (origin, hlc, event) in enumerate(EVERY_CASE, start=1):
        sequence[origin] += 1
        seq = sequence[origin]
        envelopes.append(Envelope(position=position, origin=origin, origin_seq=seq, hlc=hlc,
                                  tx=seq, event=event))  # fmt: skip
    return envelopes


@SCANS
@settings(max_examples=300, deadline=None)
@given(logs(), st.lists(st.integers(1, 30), max_size=8))
@example(every_case(), [4])
@example(every_case(), [])
def test_the_snapshots_written_at_the_end_of_a_plain_prefix_are_the_fold_s_byte_for_byte(
    compiled: bool, envelopes: list[Envelope], chunks: list[int]
) -> None:
    prefix = read_directly(envelopes, chunks, compiled)
    built = prefix.snapshots(model.name for model in MODELS)
    assert built.position == prefix.position
    assert built.snapshots == folded(envelopes[: prefix.position])


@SCANS
@settings(max_examples=300, deadline=None)
@given(logs(), st.lists(st.integers(1, 30), max_size=8))
@example(every_case(), [4])
def test_the_prefix_restored_and_the_rest_folded_equals_folding_the_whole_log(
    compiled: bool, envelopes: list[Envelope], chunks: list[int]
) -> None:
    prefix = read_directly(envelopes, chunks, compiled)
    built = prefix.snapshots(model.name for model in MODELS).snapshots
    rest = envelopes[prefix.position :]
    snapshots = {}
    for model in MODELS:
        projection = model.from_snapshot(built[model.name]) if prefix.position else model()
        projection.apply_all(rest)
        snapshots[model.name] = projection.to_snapshot()
    assert snapshots == folded(envelopes)


@SCANS
@settings(max_examples=200, deadline=None)
@given(logs(), st.lists(st.integers(1, 30), min_size=1, max_size=8))
@example(every_case(), [2, 3])
def test_snapshots_taken_between_chunks_are_the_fold_s_there_and_leave_the_rest_unchanged(
    compiled: bool, envelopes: list[Envelope], chunks: list[int]
) -> None:
    # `graphmem rebuild` compares stored checkpoints inside the prefix by taking its snapshots
    # there and reading on (actors.rebuild.read_prefix's stops).
    def there(prefix: PlainPrefix) -> None:
        taken = prefix.snapshots(model.name for model in MODELS)
        assert taken.snapshots == folded(envelopes[: prefix.position])

    records = list(map(encode_envelope, envelopes))
    prefix = feed_records(records, chunks, compiled, between=there)
    built = prefix.snapshots(model.name for model in MODELS)
    assert built == read_directly(envelopes, chunks, compiled).snapshots(
        model.name for model in MODELS
    )
    assert built.snapshots == folded(envelopes[: prefix.position])


@SCANS
@settings(max_examples=200, deadline=None)
@given(logs(), st.lists(st.integers(1, 30), max_size=8))
def test_the_prefix_ends_at_the_same_place_however_the_records_are_chunked(
    compiled: bool, envelopes: list[Envelope], chunks: list[int]
) -> None:
    assert (
        read_directly(envelopes, chunks, compiled).position
        == read_directly(envelopes, [], compiled).position
    )


@SCANS
def test_the_prefix_reaches_past_stubs_repeats_attributes_and_schemas_to_the_first_deletion(
    compiled: bool,
) -> None:
    envelopes = every_case()
    for chunks in ([], [4], [1] * len(envelopes)):
        prefix = read_directly(envelopes, chunks, compiled)
        assert prefix.ended
        assert prefix.position == 11, chunks  # EntityDeleted is the 12th


@SCANS
def test_a_log_that_starts_with_an_event_that_is_not_plain_has_an_empty_prefix(
    compiled: bool,
) -> None:
    envelopes = [
        Envelope(position=1, origin="n1", origin_seq=1, hlc=1, tx=1,
                 event=EntityDeleted(name="a")),
        Envelope(position=2, origin="n1", origin_seq=2, hlc=2, tx=2,
                 event=EntityCreated(name="a", entity_type="t")),
    ]  # fmt: skip
    prefix = read_directly(envelopes, [], compiled)
    assert prefix.ended and prefix.position == 0


@SCANS
def test_an_older_stamp_ends_the_prefix_before_it_wherever_the_chunks_end(compiled: bool) -> None:
    events: list[tuple[str, int, AnyEvent]] = [
        ("n1", 5, EntityCreated(name="a", entity_type="t")),
        ("n1", 6, EntityCreated(name="b", entity_type="t")),
        ("n1", 4, ObservationAdded(entity="a", content="x")),  # the same node's clock went back
        ("n2", 7, ObservationAdded(entity="b", content="y")),
    ]
    envelopes = [
        Envelope(position=p, origin=o, origin_seq=p, hlc=h, tx=p, event=e)
        for p, (o, h, e) in enumerate(events, start=1)
    ]
    for chunks in ([], [1], [2], [1, 1, 1]):
        prefix = read_directly(envelopes, chunks, compiled)
        assert prefix.ended and prefix.position == 2, chunks
        assert prefix.snapshots(["graph"]).snapshots["graph"] == folded(envelopes[:2])["graph"]
