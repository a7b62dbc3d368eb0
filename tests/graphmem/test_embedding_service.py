"""The embedding service over a real graphmem (log, writer, subscribers): vectors follow the
graph off the writer's thread, are reused across restarts and rebuilds from the cache in the
data dir, and a failing or slow embedder never costs a write (contract §7, §8.23)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from actors.command_inputs import EntityUpdate
from actors.commands import CreateEntities, DeleteEntities, EntityInput, UpdateEntities
from actors.gateway import GraphGateway
from actors.subscribers import Subscribers
from graphmem.app import App, running
from graphmem.config import Settings
from graphmem.embedding.cache import CACHE_FILE
from graphmem.embedding.embedders import HashEmbedder, Matrix
from graphmem.embedding.service import EmbeddingService
from projections.graph import GraphProjection

WAIT = 60.0  # bounds every wait; a hung worker fails the test instead of hanging it
REPO = Path(__file__).resolve().parents[2]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds (the cache must spare it)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.texts.extend(texts)
        return super().embed(texts)


class GatedEmbedder(HashEmbedder):
    """Blocks on texts that mention "Slow" until the test opens the gate."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.blocked = threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        if any("Slow" in text for text in texts):
            self.blocked.set()
            assert self.gate.wait(WAIT), "the test never opened the gate"
        return super().embed(texts)


class FailingEmbedder(HashEmbedder):
    """Fails on texts that mention "Bad" once `failing` is set."""

    def __init__(self) -> None:
        self.failing = False

    def embed(self, texts: Sequence[str]) -> Matrix:
        if self.failing and any("Bad" in text for text in texts):
            raise RuntimeError("this embedder cannot embed Bad")
        return super().embed(texts)


def settings(data_dir: Path) -> Settings:
    return Settings.from_env({"GRAPHMEM_DIR": str(data_dir), "GRAPHMEM_LOG_LEVEL": "WARNING"})


@contextmanager
def served(data_dir: Path, embedder: HashEmbedder) -> Iterator[tuple[App, EmbeddingService]]:
    with running(settings(data_dir), load_schemas=False) as app:
        service = EmbeddingService.in_data_dir(
            embedder,
            lambda query: app.graph.query_models_blocking(lambda m: query(m.graph)),
            app.settings.data_dir,
        )
        service.start(app.graph.subscribe)
        try:
            yield app, service
        finally:
            service.stop()


def create(app: App, *names: str) -> None:
    app.graph.execute_blocking(CreateEntities([EntityInput(n, "Person", []) for n in names]))


def idle(service: EmbeddingService) -> None:
    assert service.wait_idle(WAIT), f"still pending: {service.pending()}"


def test_new_entities_are_embedded_and_a_restart_takes_every_vector_from_the_cache(
    tmp_path: Path,
) -> None:
    first = CountingEmbedder()
    with served(tmp_path, first) as (app, service):
        create(app, "Alice", "Bob", "Carol")
        idle(service)
        before = service.vector_of("Alice")
    assert sorted(first.texts) == ["Alice — Person", "Bob — Person", "Carol — Person"]
    assert (tmp_path / CACHE_FILE).is_file()

    second = CountingEmbedder()
    with served(tmp_path, second) as (app, service):
        idle(service)
        after = service.vector_of("Alice")
        assert second.texts == []  # nothing re-embedded
        assert before is not None and after is not None
        assert np.array_equal(before, after)
        assert [n for n, _ in service.similar(service.embed_query("Bob"), 1)] == ["Bob"]
        second.texts.clear()  # the query's text
        # A changed embed text is embedded again, and only it.
        app.graph.execute_blocking(
            UpdateEntities([EntityUpdate("Carol", new_entity_type="Organization")])
        )
        idle(service)
        assert second.texts == ["Carol — Organization"]


def test_a_full_rebuild_of_the_read_models_never_re_embeds(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with served(tmp_path, embedder) as (app, service):
        create(app, "Alice", "Bob")
        idle(service)
        embedder.texts.clear()
        asyncio.run(app.graph.rebuild(WAIT))
        done = service.reembed(force=False)
        assert (done.embedded, done.skipped, done.errors) == (0, 2, 0)
        assert embedder.texts == []
        forced = service.reembed(force=True)
        assert (forced.embedded, forced.skipped) == (2, 0)
        assert len(embedder.texts) == 2


def test_a_write_is_answered_while_its_embedding_is_still_pending(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    with served(tmp_path, embedder) as (app, service):
        try:
            create(app, "Slow Sam")
            assert embedder.blocked.wait(WAIT)
            # The embedder is stuck on Slow Sam; the writer still answers writes and reads.
            create(app, "Quick Quinn")
            alive = app.graph.query_models_blocking(lambda m: m.graph.entity_names())
            assert set(alive) == {"Slow Sam", "Quick Quinn"}
            assert service.pending() >= 1
            assert service.vector_of("Slow Sam") is None
        finally:
            embedder.gate.set()
        idle(service)
        assert service.pending() == 0
        assert service.vector_of("Slow Sam") is not None
        assert service.vector_of("Quick Quinn") is not None


def test_a_writer_busy_past_the_read_bound_at_start_delays_the_scan_and_loses_nothing(
    tmp_path: Path,
) -> None:
    # At 1,000,000 entities a due decay run held the writer for minutes: the start-up read
    # timed out, which either stopped the server's start or left every entity unembedded
    # with `pending` at 0. Here a read of the graph holds the writer past a short bound.
    with running(settings(tmp_path), load_schemas=False) as app:
        create(app, "Alice", "Bob", "Carol")
        gate, holding = threading.Event(), threading.Event()

        def hold(_: object) -> bool:
            holding.set()
            return gate.wait(WAIT)

        holder = threading.Thread(target=app.graph.query_models_blocking, args=(hold,))
        holder.start()
        short = GraphGateway(app.supervisor, Subscribers(), timeout=0.2)
        timed_out = threading.Event()

        def read(query: Callable[[GraphProjection], object]) -> object:
            try:
                return short.query_models_blocking(lambda m: query(m.graph))
            except TimeoutError:
                timed_out.set()
                raise

        service = EmbeddingService.in_data_dir(HashEmbedder(), read, app.settings.data_dir)
        try:
            assert holding.wait(WAIT)
            try:
                service.start(app.graph.subscribe)
                assert timed_out.wait(WAIT)
                assert service.pending() >= 1
            finally:
                gate.set()
                holder.join(WAIT)
            idle(service)
            assert service.pending() == 0
            assert all(service.vector_of(n) is not None for n in ("Alice", "Bob", "Carol"))
        finally:
            service.stop()


def test_deleted_and_renamed_entities_leave_the_vector_search(tmp_path: Path) -> None:
    with served(tmp_path, HashEmbedder()) as (app, service):
        create(app, "Alice", "Bob")
        idle(service)
        app.graph.execute_blocking(DeleteEntities(["Alice"]))
        app.graph.execute_blocking(UpdateEntities([EntityUpdate("Bob", new_name="Robert")]))
        idle(service)
        assert service.vector_of("Alice") is None
        assert service.vector_of("Bob") is None
        assert service.vector_of("Robert") is not None
        found = service.similar(service.embed_query("Alice — Person"), 10)
        assert [name for name, _ in found] == ["Robert"]


def test_an_entity_that_fails_to_embed_is_counted_and_keeps_its_old_vector(
    tmp_path: Path,
) -> None:
    embedder = FailingEmbedder()
    with served(tmp_path, embedder) as (app, service):
        create(app, "Bad Bart", "Good Gus")
        idle(service)
        old = service.vector_of("Bad Bart")
        embedder.failing = True
        done = service.reembed(force=True)
        assert (done.embedded, done.errors) == (1, 1)
        kept = service.vector_of("Bad Bart")
        assert old is not None and kept is not None
        assert np.array_equal(old, kept)
        # A new entity that cannot be embedded is missing from the search, not a crash, and
        # graph_reembed (force false) counts it as an error again.
        create(app, "Bad Bea")
        idle(service)
        assert service.vector_of("Bad Bea") is None
        again = service.reembed(force=False)
        assert (again.embedded, again.errors) == (0, 1)


def test_the_semantic_embedder_without_its_extra_stops_serve_with_exit_2_naming_it(
    tmp_path: Path,
) -> None:
    # The extra is hidden from this one process (CI installs it): importing it then fails.
    script = (
        "import sys; sys.modules['onnxruntime'] = None;"
        "from graphmem.cli import main; sys.exit(main(['serve']))"
    )
    env = {
        **os.environ,
        "GRAPHMEM_DIR": str(tmp_path),
        "GRAPHMEM_TOOLS": "memory,graph",
        "GRAPHMEM_EMBEDDER": "semantic",
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "pip install 'graphmem[semantic]'" in done.stderr
    assert "GRAPHMEM_EMBEDDER=hash" in done.stderr
    assert done.stdout == ""
