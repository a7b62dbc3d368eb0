"""A WorkingGraph resolves names like the fold would after its events: the overlay of the
names a command created, deleted or re-aliased over the graph beneath, whether its lookup is
first used before, between or after those events."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.working_graph import WorkingGraph
from eventstore.events import AnyEvent, EntityCreated, EntityDeleted, EntityUpdated, Envelope
from projections.graph import GraphProjection
from projections.naming import fold_name, slug
from tests.helpers import stamp
from tests.property.test_fold_name_index import REFERENCES
from tests.property.test_graph_fold import envelope_sets

NAMES = st.sampled_from(["a", "b", "c", "A", "ab"])
ALIASES = st.sampled_from([[], ["A"], ["b", "C"], ["ab"]])
ENTITY_EVENTS: st.SearchStrategy[AnyEvent] = st.one_of(
    st.builds(EntityCreated, name=NAMES, entity_type=st.just("t"), aliases=ALIASES),
    st.builds(EntityDeleted, name=NAMES),
    st.builds(EntityUpdated, name=NAMES, aliases=ALIASES),
    st.builds(EntityUpdated, name=NAMES, cleared=st.just(["aliases"])),
)


@settings(max_examples=200, deadline=None)
@given(st.data(), envelope_sets(max_size=30), st.lists(ENTITY_EVENTS, max_size=12))
def test_a_working_graph_resolves_like_the_fold_of_its_events(
    data: st.DataObject, envelopes: list[Envelope], events: list[AnyEvent]
) -> None:
    base = GraphProjection()
    base.apply_all(envelopes)
    work = WorkingGraph(base, 10_000)
    first_use = data.draw(st.integers(0, len(events)))
    for index, event in enumerate(events):
        if index == first_use:
            work.name_lookup()
        work.apply(event)
    folded = GraphProjection()
    folded.apply_all(envelopes)
    folded.apply_all(stamp(events, origin="w", start_seq=1, hlc=1_000, start_position=1_000))
    lookup, expected = work.name_lookup(), folded.name_lookup()
    for reference in REFERENCES:
        assert work.resolve_name(reference) == folded.resolve_name(reference), reference
        key, folded_reference = slug(reference), fold_name(reference)
        assert lookup.has_name(reference) == expected.has_name(reference)
        assert list(lookup.names_with_alias(folded_reference)) == list(
            expected.names_with_alias(folded_reference)
        )
        assert list(lookup.names_with_slug(key)) == list(expected.names_with_slug(key))
