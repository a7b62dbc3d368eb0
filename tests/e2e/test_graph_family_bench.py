"""The graph family's benchmark at a tiny size: its generator writes the graph it says it
writes, and its harness drives a real `graphmem serve --tools memory,graph` through every
operation and reports each one. No figure is judged here (the machine is shared and noisy)."""

from __future__ import annotations

from pathlib import Path

from bench import decay_days, graph_family
from bench.graph_calls import GRAPH_TOOLS, OPERATIONS
from bench.graph_data import GraphSpec, cached
from eventstore.lmdb_log import LmdbEventLog
from projections.graph import GraphProjection


def test_the_generated_graph_folds_into_the_entities_and_edges_its_manifest_counts(
    tmp_path: Path,
) -> None:
    log_dir, manifest = cached(GraphSpec(300, 900), lambda _: None, tmp_path)
    graph = GraphProjection()
    with LmdbEventLog.open(log_dir) as log:
        graph.apply_all(log.read_from(1))
    counts = manifest["counts"]
    assert graph.entity_count() == counts["entities"] == 300
    assert graph.relation_count() == counts["edges"] == 900
    views = list(graph.relations())
    assert sum(1 for v in views if v.invalid_at is not None) == counts["superseded_edges"] > 0
    assert sum(1 for v in views if v.relation_type == "CONTRADICTS") == counts["contradictions"]
    assert all(0.0 <= v.weight <= 1.0 for v in views)
    types = {graph.entity_type(name) for name in manifest["names"]}
    assert {"Person", "Project", "Reasoning", "Technology", "Organization"} <= types
    project, directory = manifest["projects"][0]
    attributes = graph.entity_attributes(project)
    assert attributes is not None and attributes.properties["directory"] == directory
    # A second call is a cache hit: the same manifest, nothing rebuilt.
    assert cached(GraphSpec(300, 900), lambda _: None, tmp_path) == (log_dir, manifest)


def test_the_graph_benchmark_reports_every_operation_of_every_tool_it_times(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    args = graph_family.parse_args(
        [
            *("--entities", "200", "--calls", "2", "--warmups", "1", "--out-dir", str(out)),
            *("--cache-dir", str(tmp_path / "cache"), "--dir", str(tmp_path)),
            *("--logs-dir", str(tmp_path / "logs")),
        ]
    )
    results = graph_family.run(args, progress=lambda _: None)

    # Every tool the benchmark times is served, and every operation ran without an error
    # answer: the arguments it sends are ones the tools accept.
    assert set(GRAPH_TOOLS) <= set(results["server"]["graph_tools_listed"])
    assert [row["label"] for row in results["operations"]] == [op.label for op in OPERATIONS]
    for row in results["operations"]:
        assert row["calls"] >= 1, row
        assert row["errors"] == row["warmup_errors"] == row["write_errors"] == 0, row
        assert row["verdict"] in {"PASS", "FAIL", "report"}, row
    answers = {row["label"]: row["last_answer"] for row in results["operations"]}
    assert "superseded" in answers["graph_relate dated (supersedes)"]
    assert answers["graph_stats"]["nodes.total"] == 200
    assert answers["graph_delete"]["deleted"] is True
    # Each measured prune really prunes: the batch written before it, nothing else.
    assert (
        answers["graph_prune execute"]["nodes_pruned"],
        answers["graph_prune execute"]["edges_pruned"],
    ) == (5, 5)
    assert answers["graph_decay dry run on a new day"]["nodes_decayed"] > 0
    assert results["server"]["startup_cold_ms"] > 0 and results["server"]["rss_loaded_bytes"] > 0
    text = graph_family.markdown(results)
    for operation in OPERATIONS:
        assert f"| {operation.label} |" in text


def test_the_new_day_benchmark_times_a_run_a_day_and_the_reads_after_it(tmp_path: Path) -> None:
    args = decay_days.parse_args(
        [
            *("--entities", "200", "--days", "2", "--out-dir", str(tmp_path / "out")),
            *("--cache-dir", str(tmp_path / "cache"), "--dir", str(tmp_path)),
        ]
    )
    args.load_before = None
    results = decay_days.run(args)
    assert [row["day"] for row in results["days"]] == [1, 2]
    first, second = results["days"]
    for key in ("nodes_decayed", "edges_decayed"):
        # A day later every element not exempt moves again: the same ones each day.
        assert first[key] == second[key] > 0.9 * (200 if key == "nodes_decayed" else 600)
    for row in results["days"]:
        assert min(row["decide_ms"], row["first_stats_ms"], row["first_listing_ms"]) > 0
