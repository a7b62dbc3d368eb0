"""What graph_stats reads from the graph home (contract §8.14): the last dream run from the
audit log or the manifest, and the document queue's counts."""

from __future__ import annotations

import json
from pathlib import Path

from graphmem.graph_home_files import home_facts


def audit(home: Path, *lines: str) -> None:
    (home / "logs").mkdir(parents=True, exist_ok=True)
    (home / "logs" / "dream-audit.jsonl").write_text("".join(f"{line}\n" for line in lines))


def line(event: str, timestamp: str) -> str:
    return json.dumps({"run_id": 1, "event": event, "timestamp": timestamp})


def test_an_empty_home_has_no_dream_run_and_no_documents(tmp_path: Path) -> None:
    facts = home_facts(tmp_path / "missing")

    assert (facts.last_dream_run, facts.pending_ingest_docs, facts.total_ingested_docs) == (
        None,
        0,
        0,
    )


def test_the_newest_run_end_counts_when_it_follows_the_newest_run_start(tmp_path: Path) -> None:
    audit(
        tmp_path,
        line("run_start", "2026-01-01T10:00:00Z"),
        line("edge_created", "2026-01-01T10:01:00Z"),
        line("run_end", "2026-01-01T10:02:00Z"),
    )

    assert home_facts(tmp_path).last_dream_run == "2026-01-01T10:02:00.000Z"


def test_a_run_start_after_the_last_run_end_is_the_last_run(tmp_path: Path) -> None:
    audit(
        tmp_path,
        line("run_end", "2026-01-01T10:02:00Z"),
        "not json at all",
        line("run_start", "2026-01-02T08:00:00Z"),
        line("run_start", "not a time"),
    )

    assert home_facts(tmp_path).last_dream_run == "2026-01-02T08:00:00.000Z"


def test_a_long_audit_log_is_read_from_its_end(tmp_path: Path) -> None:
    filler = [line("edge_created", "2026-01-01T00:00:00Z")] * 5000
    audit(
        tmp_path, line("run_start", "2025-01-01T00:00:00Z"), *filler, line("run_end", "2026-03-01")
    )

    assert home_facts(tmp_path).last_dream_run == "2026-03-01T00:00:00.000Z"


def test_without_runs_in_the_audit_log_the_manifest_says_when(tmp_path: Path) -> None:
    (tmp_path / "processed").mkdir()
    (tmp_path / "processed" / "manifest.json").write_text(
        json.dumps({"last_dream_run": "2026-02-03T04:05:06Z", "sessions": {}})
    )

    assert home_facts(tmp_path).last_dream_run == "2026-02-03T04:05:06.000Z"


def test_documents_are_counted_without_their_meta_files(tmp_path: Path) -> None:
    pending = tmp_path / "ingest" / "pending"
    pending.mkdir(parents=True)
    for name in ("a.md", "a.md.meta.json", "b.txt", "b.txt.meta.json", "c.pdf"):
        (pending / name).write_text("x")
    (pending / "folder").mkdir()

    facts = home_facts(tmp_path)

    assert (facts.pending_ingest_docs, facts.total_ingested_docs) == (3, 0)


def test_a_pending_error_marker_is_no_document_but_a_completed_file_of_that_name_is(
    tmp_path: Path,
) -> None:
    """§8.7: pending documents exclude `*.error` (the processor's failure markers); graph_stats
    counted them as pending documents."""
    for folder in ("pending", "completed"):
        (tmp_path / "ingest" / folder).mkdir(parents=True)
        for name in ("a.md", "a.md.error", "a.md.meta.json"):
            (tmp_path / "ingest" / folder / name).write_text("x")

    facts = home_facts(tmp_path)

    assert (facts.pending_ingest_docs, facts.total_ingested_docs) == (1, 2)
