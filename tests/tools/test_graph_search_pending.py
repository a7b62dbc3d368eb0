"""graph_search's `pending` through a real MCP client, both protocol eras (contract §7, §8.22):
a search answers while an entity's embedding is held, counts it as pending, and counts nothing
once it is embedded. The embedder is held on an Event, never timed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from mcp import Client

from graphmem.app import running
from graphmem.embedding.embedders import HashEmbedder, Matrix
from graphmem.embedding.service import EmbeddingService
from graphmem.transports import serving
from tests.tools.graph_write_support import ERAS, GraphClient, tool_value
from tests.tools.support import CALL_TIMEOUT, settings_for

pytestmark = pytest.mark.anyio

WAIT = 60.0  # bounds every wait: a held worker that never moves fails the test


class HeldEmbedder(HashEmbedder):
    """The hash embedder, except that Slow Sam's entity text waits for the test's gate (a
    query's text, without the type, is embedded at once)."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.holding = threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        if any(text.startswith("Slow Sam —") for text in texts):
            self.holding.set()
            assert self.gate.wait(WAIT), "the test never opened the gate"
        return super().embed(texts)


@asynccontextmanager
async def held_client(
    era: str, data_dir: Path, embedder: HashEmbedder
) -> AsyncIterator[tuple[GraphClient, EmbeddingService]]:
    """A client of `era` on a server composed as `graphmem serve` composes it, with the
    embedding service on `embedder` (the server's own would load GRAPHMEM_EMBEDDER's)."""
    settings = settings_for(data_dir, tools="memory,graph")
    with running(settings, serve_stale=True) as bare:
        service = EmbeddingService.in_data_dir(
            embedder,
            lambda query: bare.graph.query_models_blocking(lambda m: query(m.graph)),
            settings.data_dir,
        )
        service.start(bare.graph.subscribe)
        app = replace(bare, embeddings=service)
        try:
            with serving(app) as (notifier, server):
                notifier.bind_loop(asyncio.get_running_loop())
                # As tests.tools.support's two clients connect: the modern era is the default.
                if era == "legacy":
                    async with Client(
                        server, mode="legacy", read_timeout_seconds=CALL_TIMEOUT
                    ) as legacy:
                        yield legacy.session, service
                else:
                    async with Client(server, read_timeout_seconds=CALL_TIMEOUT) as modern:
                        yield modern, service
        finally:
            service.stop()


@pytest.mark.parametrize("era", ERAS)
async def test_a_search_answers_while_an_embedding_is_held_and_counts_it_pending_until_done(
    tmp_path: Path, era: str
) -> None:
    embedder = HeldEmbedder()
    async with held_client(era, tmp_path, embedder) as (client, service):
        try:
            await tool_value(
                client,
                "create_entities",
                {"entities": [{"name": "Slow Sam", "entityType": "Person", "observations": []}]},
            )
            assert await anyio.to_thread.run_sync(embedder.holding.wait, WAIT)
            held = await tool_value(client, "graph_search", {"query": "Slow Sam"})
            assert held["pending"] > 0
            assert held["embedder"] == "hash"
            # Answered all the same: the name matches exactly, vector or not.
            assert [seed["name"] for seed in held["seeds"]] == ["Slow Sam"]
            assert service.vector_of("Slow Sam") is None
        finally:
            embedder.gate.set()
        assert await anyio.to_thread.run_sync(service.wait_idle, WAIT)
        done = await tool_value(
            client, "graph_search", {"query": "Slow Sam person", "min_similarity": 0.1}
        )
        assert done["pending"] == 0
        assert "Slow Sam" in [seed["name"] for seed in done["seeds"]]
        assert service.vector_of("Slow Sam") is not None
