"""The read answers pause cyclic collection while they build (graphmem.tools.memory_reads):
it must come back as it was, whatever happens inside."""

from __future__ import annotations

import gc

import pytest

from actors.frozen_search import FrozenSearch
from graphmem.tools.memory_reads import graph_page, opened, searched
from projections.graph import GraphProjection
from tests.helpers import entity, graph_with, relation


def test_every_read_answer_leaves_cyclic_collection_on_as_it_found_it() -> None:
    graph = graph_with(
        entity("Ada", "person", "wrote notes"),
        entity("Engine", "machine"),
        relations=(relation("Ada", "Engine", "programmed"),),
    )
    search = FrozenSearch(graph)
    assert gc.isenabled()
    assert [e["name"] for e in graph_page(graph, None, None)["entities"]] == ["Ada", "Engine"]
    assert gc.isenabled()
    answer = searched(graph, search, "", entity_type=None, offset=None, limit=None)
    assert len(answer["relations"]) == 1
    assert gc.isenabled()
    assert opened(graph, ["Engine"])["relations"] == [
        {"from": "Ada", "to": "Engine", "relationType": "programmed"}
    ]
    assert gc.isenabled()
    gc.disable()
    try:
        graph_page(graph, 0, 1)
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()


class _BrokenSearch:
    """A search whose answer fails the answer's building (inside the pause)."""

    def search(self, graph: GraphProjection, query: str) -> list[str]:
        return None  # type: ignore[return-value]


def test_a_failing_answer_still_turns_collection_back_on() -> None:
    graph = graph_with(entity("Ada"))
    with pytest.raises(TypeError):
        searched(graph, _BrokenSearch(), "a", entity_type=None, offset=None, limit=None)
    assert gc.isenabled()
