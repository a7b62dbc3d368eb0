"""graph_ingest and graph_read_transcript over stdio against a real `graphmem serve` process
(its fast path for tools/call included), both protocol eras: the queued file is on disk when
the answer arrives, graph_stats counts it, and a transcript is read by session id while an id
that tries to leave the transcripts folder is refused."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, ClientSession

from tests.e2e.support import call, legacy_session, modern_client, text, value

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("era", ["legacy", "modern"])]

FIXTURE = Path(__file__).parent.parent / "fixtures" / "transcripts" / "every-line-kind.jsonl"


@asynccontextmanager
async def served(era: str, data_dir: Path, **env: str) -> AsyncIterator[ClientSession | Client]:
    if era == "legacy":
        async with legacy_session(data_dir, tools="memory,graph", **env) as session:
            yield session
    else:
        async with modern_client(data_dir, tools="memory,graph", **env) as client:
            yield client


async def answer(client: ClientSession | Client, tool: str, arguments: dict[str, Any]) -> Any:
    result = await call(client, tool, arguments)
    assert not result.is_error, text(result)
    return value(result)


async def test_a_document_is_queued_and_counted_and_a_transcript_read_over_stdio(
    tmp_path: Path, era: str
) -> None:
    transcripts = tmp_path / "projects"
    (transcripts / "-home-ana").mkdir(parents=True)
    shutil.copy(FIXTURE, transcripts / "-home-ana" / "s-1.jsonl")
    (tmp_path / "outside.jsonl").write_bytes(FIXTURE.read_bytes())
    env = {"GRAPHMEM_TRANSCRIPTS_DIR": str(transcripts)}
    async with served(era, tmp_path / "data", **env) as client:
        queued = await answer(
            client,
            "graph_ingest",
            {"action": "queue", "content": "Ana leads Apollo.", "file_name": "note.md"},
        )
        assert Path(queued["destination"]).read_text() == "Ana leads Apollo."
        status = await answer(client, "graph_ingest", {"action": "status"})
        assert [p["file"] for p in status["pending"]] == ["note.md"]
        health = (await answer(client, "graph_stats", {}))["health"]
        assert (health["pending_ingest_docs"], health["total_ingested_docs"]) == (1, 0)
        read = await answer(client, "graph_read_transcript", {"session_id": "s-1"})
        assert [m["uuid"] for m in read["messages"]] == ["u1", "a1", "s1", "a2"]
        refused = await call(client, "graph_read_transcript", {"session_id": "../outside"})
        assert refused.is_error
        assert "session_id" in text(refused)
