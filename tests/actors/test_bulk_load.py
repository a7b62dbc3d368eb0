"""A writer started for a bulk load (graphmem import) derives its search index and schema view
when they are first read instead of event by event: reads after a load, after more writes and
after a restart from its checkpoint answer as a normal writer's do."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from actors.commands import (
    AddObservations,
    CreateEntities,
    DeleteEntities,
    EntityInput,
    ObservationInput,
)
from actors.read_models import ReadModels
from graphmem.app import App, running
from graphmem.config import Settings


@contextmanager
def app(data_dir: Path, *, bulk_load: bool) -> Iterator[App]:
    with running(Settings(data_dir=data_dir), load_schemas=False, bulk_load=bulk_load) as found:
        yield found


def load(started: App) -> None:
    started.graph.execute_blocking(
        CreateEntities(
            [
                EntityInput("Ada", "person", ["writes the engine notes"]),
                EntityInput("Babbage", "person", ["designed the engine"]),
                EntityInput("Loom", "machine", ["weaves patterns"]),
            ]
        )
    )


def searches(started: App) -> list[list[str]]:
    def ask(models: ReadModels) -> list[list[str]]:
        graph = models.graph
        return [models.search.search(graph, word) for word in ("engine", "weaves", "person")]

    return started.graph.query_models_blocking(ask)


def test_a_bulk_loading_writer_finds_what_it_loaded_as_a_normal_writer_does(
    tmp_path: Path,
) -> None:
    with (
        app(tmp_path / "bulk", bulk_load=True) as bulk,
        app(tmp_path / "plain", bulk_load=False) as plain,
    ):
        for started in (bulk, plain):
            load(started)

        assert (
            searches(bulk) == searches(plain) == [["Ada", "Babbage"], ["Loom"], ["Ada", "Babbage"]]
        )

        # Writes after a read: the index is behind again and is brought level at the next.
        for started in (bulk, plain):
            started.graph.execute_blocking(DeleteEntities(["Ada"]))
            started.graph.execute_blocking(
                AddObservations([ObservationInput("Loom", ["runs the engine cards"])])
            )

        assert searches(bulk) == searches(plain) == [["Babbage", "Loom"], ["Loom"], ["Babbage"]]


def test_a_bulk_load_restarted_from_its_checkpoint_serves_searches(tmp_path: Path) -> None:
    with app(tmp_path, bulk_load=True) as bulk:
        load(bulk)

    with app(tmp_path, bulk_load=False) as served:
        assert searches(served) == [["Ada", "Babbage"], ["Loom"], ["Ada", "Babbage"]]
