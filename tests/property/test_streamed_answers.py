"""A large subgraph answer is spooled as the writer reads it (graphmem.tools.graph_body) and
written in slices on the stdio fast path (graphmem.wire.fast_calls.StreamedLine). Over random
logs folded in random orders, whatever the slice size, the line written slice by slice is byte
for byte the line of the unstreamed answer (`ok` over the dict value, as it was before), in
both protocol eras, for read_graph and for a search."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.lowlevel import Server

from actors.frozen_search import FrozenSearch
from eventstore.events import Cause, Envelope
from graphmem.tools.base import ToolOutcome, answered, ok, render
from graphmem.tools.graph_body import GraphBody
from graphmem.tools.graph_values import whole_graph
from graphmem.tools.memory_reads import graph_selection, search_selection, searched
from graphmem.wire.fast_calls import FastCalls, StreamedLine
from projections.graph import EntityView, GraphProjection
from tests.property.test_graph_fold import envelope_sets

VERSIONS = ("2025-06-18", "2024-11-05", "2026-07-28")


async def _never_called(name: str, arguments: dict[str, Any], cause: Cause) -> ToolOutcome:
    raise AssertionError("the tests encode outcomes directly")


FAST = FastCalls(_never_called, Server("test", version="1"))


def _graph(envelopes: list[Envelope], rng: Any) -> GraphProjection:
    rng.shuffle(envelopes)
    graph = GraphProjection()
    graph.apply_all(envelopes)
    return graph


def _streamed(body: GraphBody, request_id: int | str, version: str) -> bytes:
    line = FAST.streamed(request_id, ToolOutcome(texts=[], body=body), version)
    assert isinstance(line, StreamedLine)
    try:
        return b"".join(line.pieces())
    finally:
        line.close()


@given(
    envelope_sets(),
    st.randoms(use_true_random=False),
    st.sampled_from([1, 40, 1 << 20]),
    st.sampled_from(VERSIONS),
    st.one_of(st.integers(0, 2**40), st.text(max_size=8)),
)
def test_a_read_graph_written_in_slices_is_the_line_of_the_whole_answer(
    envelopes: list[Envelope], rng: Any, slice_bytes: int, version: str, request_id: int | str
) -> None:
    graph = _graph(envelopes, rng)
    value = whole_graph(graph)
    expected = FAST.encode(request_id, ok(value, value), version)
    body = GraphBody.spill(
        *graph_selection(graph, None, None), in_memory_bytes=0, slice_bytes=slice_bytes
    )
    assert _streamed(body, request_id, version) == expected


@given(
    envelope_sets(),
    st.randoms(use_true_random=False),
    st.sampled_from(["", "a", "x", "t"]),
    st.sampled_from([None, "t", "person"]),
    st.sampled_from([1, 1 << 20]),
)
def test_a_search_written_in_slices_is_the_line_of_the_whole_answer(
    envelopes: list[Envelope], rng: Any, query: str, entity_type: str | None, slice_bytes: int
) -> None:
    graph = _graph(envelopes, rng)
    search = FrozenSearch(graph)
    value = searched(graph, search, query, entity_type=entity_type, offset=None, limit=None)
    for version in VERSIONS[::2]:
        selection = search_selection(
            graph, search, query, entity_type=entity_type, offset=None, limit=None
        )
        body = GraphBody.spill(*selection, in_memory_bytes=0, slice_bytes=slice_bytes)
        assert _streamed(body, 7, version) == FAST.encode(7, ok(value, value), version)


@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=6),
            st.text(max_size=4),
            st.lists(st.text(max_size=12), max_size=3),
        ),
        max_size=12,
    ),
    st.lists(st.tuples(st.text(max_size=4), st.text(max_size=4), st.text(max_size=4)), max_size=6),
    st.sampled_from([0, 1 << 20]),
    st.sampled_from([1, 25, 1 << 20]),
)
def test_a_spooled_answer_reads_back_as_the_official_text_and_structured_content(
    entities: list[tuple[str, str, list[str]]],
    relations: list[tuple[str, str, str]],
    in_memory_bytes: int,
    slice_bytes: int,
) -> None:
    """Any text at all (quotes, escapes, control characters, non-ASCII): the text is
    JSON.stringify(value, null, 2) and the structured content the value, small or spooled."""
    views = [EntityView(name, kind, observations) for name, kind, observations in entities]
    value = {
        "entities": [{"name": n, "entityType": k, "observations": o} for n, k, o in entities],
        "relations": [{"from": f, "to": t, "relationType": r} for f, t, r in relations],
    }
    body = GraphBody.spill(
        views, relations, in_memory_bytes=in_memory_bytes, slice_bytes=slice_bytes
    )
    outcome = answered(body)
    assert (outcome.body is not None) == body.on_disk
    whole = outcome.materialized()
    assert whole.texts == [render(value)]
    assert whole.structured == value
    assert whole.structured_json == msgspec.json.encode(value)
