"""The graph's read image beside an LMDB log (actors.graph_images): written for the graph at
the log's end, opened only while the log still ends there (or past graph-neutral events), and
removed once the graph outgrows images."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors import graph_images
from actors.graph_images import open_usable_image, write_graph_image
from eventstore.events import EntityCreated, SchemaRegistered
from eventstore.lmdb_log import LmdbEventLog
from eventstore.memory_log import InMemoryEventLog
from projections.graph import GraphProjection
from projections.graph_image import IMAGE_FILE
from tests.damage import write_people


def _folded(event_log: LmdbEventLog) -> GraphProjection:
    graph = GraphProjection()
    graph.apply_all(list(event_log.read_from(1)))
    return graph


def test_an_image_written_at_the_end_is_served_until_the_graph_changes(tmp_path: Path) -> None:
    end = write_people(tmp_path, 5)
    with LmdbEventLog.open(tmp_path) as event_log:
        graph = _folded(event_log)
        assert write_graph_image(event_log, graph, graph.entity_count())
        usable = open_usable_image(event_log)
        assert usable is not None
        image, position = usable
        assert (image.position, position) == (end, end)
        assert [e.name for e in image.entities()] == [f"person{i}" for i in range(5)]
        image.close()
        # A schema registered changes no read of the graph: still served, for the new end.
        event_log.append([SchemaRegistered(type_name="s", schema_json="{}", digest="d")])
        usable = open_usable_image(event_log)
        assert usable is not None
        usable[0].close()
        assert usable[1] == end + 1
        # An entity created does: the graph is restored instead.
        event_log.append([EntityCreated(name="late", entity_type="person")])
        assert open_usable_image(event_log) is None


def test_an_image_is_not_written_for_a_graph_behind_the_log(tmp_path: Path) -> None:
    write_people(tmp_path, 3)
    with LmdbEventLog.open(tmp_path) as event_log:
        graph = _folded(event_log)
        event_log.append([EntityCreated(name="late", entity_type="person")])
        assert not write_graph_image(event_log, graph, graph.entity_count())
        assert not (tmp_path / IMAGE_FILE).exists()


def test_a_graph_past_the_limit_gets_no_image_and_loses_its_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_people(tmp_path, 3)
    with LmdbEventLog.open(tmp_path) as event_log:
        graph = _folded(event_log)
        assert write_graph_image(event_log, graph, graph.entity_count())
        monkeypatch.setattr(graph_images, "IMAGE_MAX_ENTITIES", 2)
        assert not write_graph_image(event_log, graph, graph.entity_count())
        assert not (tmp_path / IMAGE_FILE).exists()
        assert open_usable_image(event_log) is None


def test_a_log_that_is_not_lmdb_has_no_image() -> None:
    event_log = InMemoryEventLog()
    graph = GraphProjection()
    assert not write_graph_image(event_log, graph, 0)
    assert open_usable_image(event_log) is None
