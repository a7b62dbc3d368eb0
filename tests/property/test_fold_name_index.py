"""The fold's name index resolves like a NameIndex of the alive entities and their aliases,
whatever was created, deleted, re-created or re-aliased, in any order, and whether the index
was built before, during or after (then kept by the fold), or after a snapshot's restore."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eventstore.events import Envelope
from projections.graph import GraphProjection
from projections.naming import NameIndex, fold_name, resolve, slug
from tests.property.test_graph_fold import envelope_sets

# The names and aliases the generated events use, spelt in the ways resolution matches.
REFERENCES = ["a", "b", "c", "A", "B", "C", " a ", "ab", "nobody", "-"]


def brute_force(graph: GraphProjection) -> NameIndex:
    """A NameIndex built afresh from what the projection answers."""
    alive = []
    for view in graph.entities():
        attributes = graph.entity_attributes(view.name)
        assert attributes is not None
        alive.append((view.name, attributes.aliases))
    return NameIndex(alive)


def assert_resolves_like_a_fresh_index(graph: GraphProjection) -> None:
    expected = brute_force(graph)
    lookup = graph.name_lookup()
    for reference in REFERENCES:
        assert graph.resolve_name(reference) == resolve(reference, expected), reference
        folded, key = fold_name(reference), slug(reference)
        assert lookup.has_name(reference) == expected.has_name(reference)
        assert list(lookup.names_folded(folded)) == list(expected.names_folded(folded))
        assert list(lookup.names_with_alias(folded)) == list(expected.names_with_alias(folded))
        assert list(lookup.names_with_slug(key)) == list(expected.names_with_slug(key))


@settings(max_examples=200, deadline=None)
@given(st.data(), envelope_sets())
def test_the_fold_resolves_names_like_a_fresh_index_with_lookups_between_groups(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    shuffled = data.draw(st.permutations(envelopes))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(shuffled)), max_size=5)))
    graph = GraphProjection()
    start = 0
    for end in [*cuts, len(shuffled)]:
        graph.apply_all(shuffled[start:end])
        if data.draw(st.booleans()):  # the index is built here, then kept by the fold
            assert_resolves_like_a_fresh_index(graph)
        start = end
    assert_resolves_like_a_fresh_index(graph)


@given(st.data(), envelope_sets())
def test_a_restored_graph_resolves_names_like_the_fold(
    data: st.DataObject, envelopes: list[Envelope]
) -> None:
    split = data.draw(st.integers(0, len(envelopes)))
    before = GraphProjection()
    before.apply_all(envelopes[:split])
    before.name_lookup()  # an index built before the snapshot is not part of it
    restored = GraphProjection.from_snapshot(before.to_snapshot())
    if data.draw(st.booleans()):
        restored.name_lookup()
    restored.apply_all(envelopes[split:])
    assert_resolves_like_a_fresh_index(restored)
