"""A paged listing is a slice of the name-ordered listing, whatever was created, deleted or
re-created, in any order, and whether the name index was built before, during or after."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import EntityCreated, EntityDeleted, Envelope
from projections.graph import EntityView, GraphProjection
from tests.property.test_graph_fold import envelope_sets

PAGES = st.tuples(st.integers(0, 6), st.none() | st.integers(1, 4))


def by_name(graph: GraphProjection) -> list[EntityView]:
    return sorted(graph.entities(), key=lambda entity: entity.name)


def assert_pages_slice_the_listing(
    graph: GraphProjection, pages: list[tuple[int, int | None]]
) -> None:
    listing = by_name(graph)
    for offset, limit in [(0, None), *pages]:
        stop = None if limit is None else offset + limit
        assert graph.entities_page(offset, limit) == listing[offset:stop]


@settings(max_examples=200, deadline=None)
@given(st.data(), envelope_sets(), st.lists(PAGES, max_size=4))
def test_a_page_is_a_slice_of_the_name_ordered_listing_with_pages_read_between_groups(
    data: st.DataObject, envelopes: list[Envelope], pages: list[tuple[int, int | None]]
) -> None:
    shuffled = data.draw(st.permutations(envelopes))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(shuffled)), max_size=5)))
    graph = GraphProjection()
    start = 0
    for end in [*cuts, len(shuffled)]:
        graph.apply_all(shuffled[start:end])
        if data.draw(st.booleans()):  # the index is built here, then kept by the fold
            assert_pages_slice_the_listing(graph, pages)
        start = end
    assert_pages_slice_the_listing(graph, pages)


@settings(max_examples=100, deadline=None)
@given(st.data(), envelope_sets(), st.lists(PAGES, max_size=4))
def test_a_restored_graph_pages_like_the_one_it_was_saved_from(
    data: st.DataObject, envelopes: list[Envelope], pages: list[tuple[int, int | None]]
) -> None:
    split = data.draw(st.integers(0, len(envelopes)))
    before = GraphProjection()
    before.apply_all(envelopes[:split])
    before.entities_page(0, 1)  # an index built before the snapshot is not part of it
    restored = GraphProjection.from_snapshot(before.to_snapshot())
    if data.draw(st.booleans()):
        restored.entities_page(0, 1)
    restored.apply_all(envelopes[split:])
    folded = GraphProjection()
    folded.apply_all(envelopes)
    assert restored.snapshot() == folded.snapshot()
    assert_pages_slice_the_listing(restored, pages)


def test_pages_skip_deleted_and_follow_renames_and_re_creations() -> None:
    graph = GraphProjection()
    events = [
        *(EntityCreated(name=f"n{i:02d}", entity_type="t") for i in range(20)),
        *(EntityDeleted(name=f"n{i:02d}") for i in range(0, 20, 2)),
        # a rename is the old name deleted and the new one created
        EntityDeleted(name="n03"),
        EntityCreated(name="a-renamed", entity_type="t"),
        EntityCreated(name="n04", entity_type="t"),
    ]
    graph.entities_page(0, 1)
    graph.apply_all(
        Envelope(position=i, origin="n1", origin_seq=i, hlc=i, tx=i, event=event)
        for i, event in enumerate(events, start=1)
    )
    names = [entity.name for entity in graph.entities_page(0, None)]
    assert names == [
        "a-renamed",
        "n01",
        "n04",
        "n05",
        "n07",
        "n09",
        "n11",
        "n13",
        "n15",
        "n17",
        "n19",
    ]
    assert [entity.name for entity in graph.entities_page(2, 3)] == ["n04", "n05", "n07"]
    assert graph.entities_page(11, 5) == []
