"""A restored graph's relation keys listed from its columns (projections.restored_keys and
projections/_restored_keys.c) against the fold's listing.

For any event set in any arrival order, snapshotted anywhere: the restored graph lists the
fold's keys in the fold's order without keying its records (they stay unkeyed, the memory the
listing saves); the compiled lister and its Python twin give the same list; entity events
applied after the restore (they hide relations through an endpoint, never key them) are seen;
and a graph keyed later lists the same. Columns that do not fit are refused, never read past.
"""

from __future__ import annotations

from array import array
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings

from eventstore.events import Envelope, RelationCreated, RelationDeleted, RelationUpdated
from projections.graph import GraphProjection
from projections.restored_keys import listed_keys
from tests.property.test_checkpoint_properties import arrivals

try:
    from projections import _restored_keys
except ImportError:  # not built: only the Python twin is tested
    _restored_keys = None  # type: ignore[assignment]

needs_compiled = pytest.mark.skipif(_restored_keys is None, reason="the C lister is not built")
RELATION_EVENTS = (RelationCreated, RelationDeleted, RelationUpdated)


def restored_at(envelopes: list[Envelope], cut: int) -> tuple[GraphProjection, GraphProjection]:
    before = GraphProjection()
    before.apply_all(envelopes[:cut])
    return before, GraphProjection.from_snapshot(before.to_snapshot())


def unkeyed(graph: GraphProjection) -> tuple[Any, ...]:
    state = graph.state
    assert state.keyed is None, "a restore's relations are keyed only when looked up by key"
    return state.unkeyed


@settings(max_examples=300)
@given(arrivals())
def test_a_restored_graph_lists_the_fold_s_keys_without_keying_its_records(
    case: tuple[list[Envelope], int],
) -> None:
    envelopes, cut = case
    before, restored = restored_at(envelopes, cut)

    in_order = not restored.state.relations_unsorted  # else sorted once, by key
    assert restored.relation_keys() == before.relation_keys()
    if in_order:
        unkeyed(restored)
    # A later read by key keys them, and the listing is the same from the dict.
    restored.relation_count()
    restored.has_relation("a", "b", "x")
    assert restored.relation_keys() == before.relation_keys()


@given(arrivals())
def test_the_compiled_lister_and_its_python_twin_list_the_same_keys(
    case: tuple[list[Envelope], int],
) -> None:
    envelopes, cut = case
    _, restored = restored_at(envelopes, cut)
    records = restored.state.unkeyed
    if not records:
        return
    columns = records[0].stamps
    python = listed_keys(records, columns, compiled=False)
    assert python == listed_keys(records, columns)
    if _restored_keys is not None:
        assert _restored_keys.listed_keys(records, columns) == python


@given(arrivals())
def test_entity_events_after_a_restore_are_seen_by_the_unkeyed_listing(
    case: tuple[list[Envelope], int],
) -> None:
    envelopes, cut = case
    folded, restored = restored_at(envelopes, cut)
    for envelope in envelopes[cut:]:
        if isinstance(envelope.event, RELATION_EVENTS):
            continue
        folded.apply(envelope)
        restored.apply(envelope)
        assert restored.relation_keys() == folded.relation_keys()

    assert restored.snapshot() == folded.snapshot()


def columns_of(
    names: tuple[Any, ...] = ("a", "b"),
    strings: tuple[Any, ...] = ("knows",),
    ends: tuple[int, int, int] = (0, 1, 0),
    code: str = "I",
) -> SimpleNamespace:
    source, target, kind = ends
    return SimpleNamespace(
        names=names,
        strings=strings,
        from_entities=array(code, [source]),
        to_entities=array(code, [target]),
        relation_types=array(code, [kind]),
    )


def record(row: int = 0, visible: bool = True) -> SimpleNamespace:
    return SimpleNamespace(row=row, visible=visible)


@pytest.mark.parametrize("compiled", [pytest.param(False, id="python"), True])
def test_listing_a_fitting_column_gives_its_key_and_skips_hidden_records(
    compiled: bool,
) -> None:
    if compiled and _restored_keys is None:
        pytest.skip("the C lister is not built")
    columns = columns_of()
    keys = listed_keys((record(), record(visible=False)), columns, compiled=compiled)
    assert keys == [("a", "b", "knows")]


@needs_compiled
@pytest.mark.parametrize(
    ("case", "error"),
    [
        ({"ends": (2, 1, 0)}, IndexError),  # an endpoint outside the names
        ({"ends": (0, 7, 0)}, IndexError),
        ({"ends": (0, 1, 1)}, IndexError),  # a type outside the strings
        ({"code": "Q"}, TypeError),  # 8-byte columns
        ({"code": "H"}, TypeError),  # 2-byte columns
        ({"names": ["a", "b"]}, TypeError),  # not a tuple
    ],
)
def test_the_compiled_lister_refuses_columns_that_do_not_fit(
    case: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        listed_keys((record(),), columns_of(**case), compiled=True)


@needs_compiled
def test_the_compiled_lister_refuses_a_row_past_its_columns() -> None:
    with pytest.raises(IndexError):
        listed_keys((record(row=1),), columns_of(), compiled=True)
    with pytest.raises(OverflowError):
        listed_keys((record(row=2**70),), columns_of(), compiled=True)
    with pytest.raises(AttributeError):
        listed_keys((object(),), columns_of(), compiled=True)
