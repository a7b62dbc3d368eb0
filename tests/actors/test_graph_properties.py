"""Properties of graph writes: merged key by key, reserved keys dropped, meaningful keys used."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from actors.graph_properties import (
    RESERVED_EDGE_KEYS,
    RESERVED_ENTITY_KEYS,
    edge_properties,
    entity_properties,
    merge_properties,
)


def test_a_write_replaces_the_keys_it_gives_removes_nulls_and_keeps_the_rest() -> None:
    merged = merge_properties({"a": 1, "b": 2, "c": 3}, {"b": 20, "c": None, "d": [4]})
    assert merged == {"a": 1, "b": 20, "d": [4]}


def test_reserved_edge_keys_are_dropped_with_a_warning_each() -> None:
    outcome = edge_properties({"weight": 0.9, "tenant_id": "t", "role": "lead"})
    assert outcome.properties == {"role": "lead"}
    assert len(outcome.warnings) == 2
    assert "'weight' is reserved" in outcome.warnings[0]


def test_reserved_entity_keys_cannot_overwrite_the_counters_or_the_identity() -> None:
    given = dict.fromkeys(RESERVED_ENTITY_KEYS, 1) | {"team": "core"}
    outcome = entity_properties(given)
    assert outcome.properties == {"team": "core"}
    assert len(outcome.warnings) == len(RESERVED_ENTITY_KEYS)


def test_subtype_and_source_file_become_attributes_and_null_clears_them() -> None:
    outcome = entity_properties({"subtype": "rule", "source_file": None})
    assert outcome.set_attributes == {"subtype": "rule"}
    assert outcome.cleared == ("source_file",)
    assert outcome.properties == {} and outcome.warnings == ()
    assert entity_properties({"subtype": 3}).warnings != ()


def test_aliases_are_added_from_a_string_or_a_list_distinct_under_folding() -> None:
    assert entity_properties({"aliases": "Ally"}).aliases == ("Ally",)
    assert entity_properties({"aliases": ["Ally", " ally ", "Al", ""]}).aliases == ("Ally", "Al")
    assert entity_properties({"aliases": ["A", "B", "a"]}).aliases == ("A", "B")
    bad = entity_properties({"aliases": ["Ally", 3]})
    assert bad.aliases == () and len(bad.warnings) == 1


def test_a_numeric_confidence_is_an_input_and_prose_is_kept_as_a_note() -> None:
    assert entity_properties({"confidence": 0.8}).confidence == 0.8
    for value in ("high", 1.5, True, 10**400):
        outcome = entity_properties({"confidence": value})
        assert outcome.confidence is None
        assert outcome.properties == {"confidence_note": value}
        assert len(outcome.warnings) == 1


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
keys = st.sampled_from(sorted(RESERVED_ENTITY_KEYS | RESERVED_EDGE_KEYS)) | st.text(max_size=6)


@given(st.dictionaries(keys, json_values, max_size=8))
def test_no_reserved_key_ever_survives_and_every_dropped_key_is_warned(
    given_properties: dict[str, Any],
) -> None:
    edge = edge_properties(given_properties)
    assert not set(edge.properties) & RESERVED_EDGE_KEYS
    assert len(edge.warnings) == len(set(given_properties) & RESERVED_EDGE_KEYS)
    entity = entity_properties(given_properties)
    assert not set(entity.properties) & RESERVED_ENTITY_KEYS
    assert entity.confidence is None or 0.0 <= entity.confidence <= 1.0
