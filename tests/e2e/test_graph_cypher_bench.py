"""The graph_cypher benchmark at a tiny size: it runs end to end against a real server and
reports its figures. No latency is judged (the machine is shared and noisy); what must hold
is that every query right after a write saw that write."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import graph_cypher
from graphmem.cypher import available

pytestmark = pytest.mark.skipif(not available(), reason="needs the cypher extra")


def test_the_cypher_bench_builds_the_projection_times_queries_and_sees_every_write(
    tmp_path: Path,
) -> None:
    args = graph_cypher.parse_args(
        ["--entities", "300", "--calls", "3", "--cache-dir", str(tmp_path / "cache")]
    )
    results = graph_cypher.run(args, progress=lambda _: None)
    assert results["build"]["entities"] == 300
    assert results["build"]["relations"] > 0
    for key in ("two_hop", "two_hop_hub", "neo4j_labels", "aggregation"):
        assert results[key]["calls"] >= 3
        assert results[key]["p50_ms"] > 0
    assert results["after_write"]["visible"] == results["after_write"]["calls"]
    assert "graph_cypher at scale" in graph_cypher.markdown(results)
