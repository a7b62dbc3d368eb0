"""bench.compare's per-size workload against a real `graphmem serve`: every call it times is
answered by the server itself, at every size, not by the early reads that answer while the
server loads (which a store under ~140k entities gets and a larger one does not), so that a
cell at 1k and one at 1M time the same code."""

from __future__ import annotations

import json
from pathlib import Path

from bench import search_paths
from bench.dataset import write_jsonl
from bench.servers import seed
from bench.workload import OPERATIONS, Plan, run_size


def _answered(log: Path) -> list[bool]:
    """For each tool call in the server's log, in order: whether the early reads answered it."""
    lines = (json.loads(line) for line in log.read_text().splitlines() if line.startswith("{"))
    return [bool(line.get("early")) for line in lines if line.get("event") == "tool_called"]


def test_every_call_the_workload_times_is_answered_by_the_server_not_the_early_reads(
    tmp_path: Path,
) -> None:
    dataset = write_jsonl(tmp_path / "graph.jsonl", 300)
    store = seed("graphmem", dataset.path, tmp_path / "work", tmp_path / "seed.log")
    plan = Plan(warmups=2, cheap_calls=5, broad_calls=2, read_graph_calls=2, budget_s=60)
    logs = tmp_path / "logs"
    logs.mkdir()

    result = run_size(
        store, 300, plan, logs, progress=lambda _: None, server_env={"GRAPHMEM_LOG_LEVEL": "INFO"}
    )

    assert all(result["ops"][op]["errors"] == 0 for op in OPERATIONS), result["ops"]
    early = _answered(logs / "graphmem-300.stderr.log")
    # The start-up's first call (its own figure) may be the early reads'; none after it is.
    assert len(early) == 1 + sum(plan.warmups + plan.calls(op) for op in OPERATIONS)
    assert not any(early[1:]), early


def test_the_search_paths_benchmark_times_both_paths_at_every_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    argv = ["--sizes", "200,400", "--rounds", "1", "--pairs", "3", "--dir", str(tmp_path)]
    assert search_paths.main([*argv, "--json", str(out)]) == 0

    figures = json.loads(out.read_text())
    assert {(run["n"], run["path"]) for run in figures["runs"]} == {
        (n, path) for n in (200, 400) for path in search_paths.PATHS
    }
    for row in figures["summary"]:
        assert row["search_p50_ms"] > 0 and row["open_nodes_p50_ms"] > 0, row
    assert [row["search_ratio_to_smallest"] for row in figures["summary"]][::2] == [1.0, 1.0]
