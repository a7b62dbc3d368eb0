"""The merge audit line (graph_merge, graph_unmerge): its shape, written once however often the
writer calls it (a retried log transaction decides again), and a file that cannot be written
is a refusal naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.errors import CommandRejectedError
from actors.graph_merge_commands import GraphMergeResult, GraphUnmergeResult, MovedEdge
from graphmem.tools.graph_merge_tools import AuditLine, merge_audit_line, unmerge_audit_line

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z

MERGED = GraphMergeResult(
    source_id="bob",
    source_name="Bob",
    target_id="robert",
    target_name="Robert",
    edges_added=2,
    edges_consolidated=1,
    self_loops_dropped=1,
    properties_adopted=["nickname", "team"],
    at_ms=T0,
)


def test_the_merge_line_holds_the_contracts_keys_with_ids_names_and_counts() -> None:
    assert merge_audit_line(MERGED, "same person") == {
        "action": "merge",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "source": {"id": "bob", "name": "Bob"},
        "target": {"id": "robert", "name": "Robert"},
        "counts": {
            "edges_added": 2,
            "edges_consolidated": 1,
            "self_loops_dropped": 1,
            "properties_adopted": 2,
        },
        "reason": "same person",
    }


def test_the_unmerge_line_lists_the_moved_edges() -> None:
    result = GraphUnmergeResult(
        original_id="ann",
        original_name="Ann",
        remaining_edges=1,
        new_id="anne",
        new_name="Anne",
        new_type="Person",
        moved=[MovedEdge(from_id="anne", to_id="bob", relation_type="KNOWS")],
        at_ms=T0,
    )
    line = unmerge_audit_line(result, "two people")
    assert line["moved"] == [{"from": "anne", "to": "bob", "type": "KNOWS"}]
    assert list(line) == ["action", "timestamp", "original", "new_entity", "moved", "reason"]


def test_it_writes_one_line_however_often_it_is_called(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "merge-audit.jsonl"
    line = AuditLine("graph_merge", path, lambda r: merge_audit_line(r, "x"))
    line(MERGED)
    line(MERGED)
    assert line.written
    assert [json.loads(text)["action"] for text in path.read_text().splitlines()] == ["merge"]


def test_a_file_that_cannot_be_written_is_a_refusal_naming_it(tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("a file where the folder should be")
    path = tmp_path / "logs" / "merge-audit.jsonl"
    line = AuditLine("graph_merge", path, lambda r: merge_audit_line(r, "x"))
    with pytest.raises(CommandRejectedError, match=r"cannot append to .*merge-audit\.jsonl"):
        line(MERGED)
    assert not line.written
