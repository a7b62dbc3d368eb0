"""An upgrade of the HTTP service whose graph projection changed version: it answers from the
earlier version's checkpoint while it refolds the log in the background, keeps taking writes,
then answers from the fresh fold and checkpoints it."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import pytest
from mcp import Client

from eventstore.events import EntityCreated, ObservationAdded
from eventstore.lmdb_log import LmdbEventLog
from projections.graph import GraphProjection
from tests.actors.test_stale_checkpoints import old_checkpoint
from tests.e2e.http_support import HttpService, http_service
from tests.e2e.support import call, value

pytestmark = pytest.mark.anyio

WAIT = 30.0
POLL = 0.05


def prepare(data_dir: Path) -> None:
    """A log written by the current version, and its checkpoint with an entity (Ghost) that
    the old fold had and the log's events do not make."""
    data_dir.mkdir(parents=True)
    with LmdbEventLog.open(data_dir) as event_log:
        event_log.append([EntityCreated(name="Ann", entity_type="person")])
        event_log.append([ObservationAdded(entity="Ann", content="likes tea")])
        old_checkpoint(event_log)


def open_gate(fifo: Path) -> None:
    """Let the rebuild fold: open the FIFO it waits on (once it does) and close it."""
    deadline = time.monotonic() + WAIT
    pause = threading.Event()
    while True:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return
        except OSError as error:  # ENXIO: the rebuild has not opened its end yet
            if error.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
        pause.wait(POLL)


def wait_for_log(service: HttpService, line: str) -> None:
    deadline = time.monotonic() + WAIT
    pause = threading.Event()
    while line not in service.log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"no {line!r} in the log\n{service.log_tail()}"
        pause.wait(POLL)


async def names(client: Client, *wanted: str) -> list[str]:
    found = value(await call(client, "open_nodes", {"names": list(wanted)}))
    return [entity["name"] for entity in found["entities"]]


async def test_the_service_serves_the_old_model_until_the_background_rebuild_has_caught_up(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    prepare(data_dir)
    gate = tmp_path / "rebuild-gate"
    os.mkfifo(gate)
    with http_service(
        data_dir,
        tmp_path / "service.log",
        module="tests.e2e.upgraded_graphmem",
        GRAPHMEM_TEST_REBUILD_GATE=str(gate),
    ) as service:
        async with Client(service.url, mode="legacy") as client:
            # The rebuild is held: the old model answers (Ghost), writes are taken.
            assert sorted(await names(client, "Ann", "Ghost")) == ["Ann", "Ghost"]
            created = {"entities": [{"name": "Cy", "entityType": "person", "observations": []}]}
            value(await call(client, "create_entities", created))
        assert "rebuild_finished" not in service.log_path.read_text(errors="replace")

        open_gate(gate)
        wait_for_log(service, "rebuild_finished")

        async with Client(service.url) as client:
            assert await names(client, "Ann", "Ghost", "Cy") == ["Ann", "Cy"]
            graph = value(await call(client, "read_graph", {}))
            assert [e["name"] for e in graph["entities"]] == ["Ann", "Cy"]
            assert graph["entities"][0]["observations"] == ["likes tea"]
    log_text = service.log_path.read_text(errors="replace")
    assert '"checkpoint_stale"' in log_text
    assert '"reason":"stale_checkpoint"' in log_text
    with LmdbEventLog.open(data_dir) as event_log:
        stored = event_log.checkpoints.entries("graph")
        # The upgraded version's, covering the write made during the rebuild; no stale one.
        assert {e.version for e in stored} == {GraphProjection.version + 1}
        assert stored[-1].position == event_log.last_position()
