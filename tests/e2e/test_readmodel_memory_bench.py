"""The read-model memory benchmark at a tiny size: it folds the benchmark's data set, builds
the search index, restores a snapshot in a fresh process and reports every figure. No figure
is judged (RSS on a shared machine is noisy; at this size the differences are pages)."""

from __future__ import annotations

from collections import Counter

from bench import readmodel_memory
from projections.graph import GraphProjection


def test_the_bench_folds_the_data_set_it_names_three_observations_and_a_relation_each() -> None:
    envelopes = list(readmodel_memory.envelopes(40))
    kinds = Counter(type(envelope.event).__name__ for envelope in envelopes)
    assert kinds == {"EntityCreated": 40, "ObservationAdded": 120, "RelationCreated": 40}
    graph = GraphProjection()
    graph.apply_all(envelopes)
    assert graph.entity_count() == 40
    assert graph.relation_count() == 40


def test_the_bench_reports_the_imports_the_fold_the_search_index_and_the_restore() -> None:
    figures = readmodel_memory.measure(200)
    assert figures["entities"] == 200
    assert figures["graph_snapshot_bytes"] > 0
    assert figures["imports_server_mib"] > figures["imports_interpreter_mib"] > 0
    for name in ("graph_folded", "search_index", "graph_restored"):
        assert f"{name}_mib" in figures
        assert f"{name}_bytes_per_entity" in figures
