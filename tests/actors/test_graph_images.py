"""The graph's read image beside an LMDB log (actors.graph_images): written for the graph at
the log's end, opened only while the log still ends there (or past graph-neutral events), and
removed once the graph outgrows images."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from actors import graph_images
from actors.checkpointer import Checkpointer
from actors.command_inputs import EntityInput, RelationInput
from actors.commands import CreateEntities, CreateRelations
from actors.errors import EntityNotFoundError
from actors.graph_images import ImageInBackground, open_usable_image, write_graph_image
from eventstore.events import EntityCreated, SchemaRegistered
from eventstore.lmdb_log import LmdbEventLog
from eventstore.memory_log import InMemoryEventLog
from graphmem.app import running
from projections.graph import GraphProjection
from projections.graph_image import IMAGE_FILE, encode_image, restamp_image
from projections.schemas import SchemaProjection
from projections.views import EntityView
from tests.damage import write_people
from tests.tools.support import settings_for

WAIT = 60.0  # the bound on the image child's work


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


class _Plain:
    """Two entities and a relation, as a bulk import hands them to its image's child."""

    def __init__(self, position: int) -> None:
        self.position = position

    def entities(self) -> Iterator[EntityView]:
        return iter([EntityView("a", "t", ["x"]), EntityView("b", "t", [])])

    def relation_keys(self) -> list[tuple[str, str, str]]:
        return [("a", "b", "knows")]


def test_an_image_encoded_before_its_position_is_known_is_the_one_encoded_at_it() -> None:
    early = bytearray(encode_image(_Plain(0), log_id="node-1", tip=0))
    later = encode_image(_Plain(41), log_id="node-1", tip=1234)
    assert restamp_image(early, position=41, tip=1234) == later


@pytest.mark.skipif(sys.platform != "linux", reason="the image's child is forked on Linux only")
def test_an_image_in_background_is_written_stamped_or_discarded_and_its_child_reaped(
    tmp_path: Path,
) -> None:
    end = write_people(tmp_path, 2)
    with LmdbEventLog.open(tmp_path) as event_log:
        background = ImageInBackground.start(event_log, _Plain(0), 2)
        assert background is not None
        assert background.finish(end, timeout=WAIT)
        usable = open_usable_image(event_log)
        assert usable is not None
        assert [e.name for e in usable[0].entities()] == ["a", "b"]
        usable[0].close()
        with capture_logs() as logged:
            assert not background.finish(end, timeout=WAIT)  # finished once: nothing to reap
        assert logged == []  # not a warning about a child already reaped
        discarded = ImageInBackground.start(event_log, _Plain(0), 2)
        assert discarded is not None
        assert not discarded.finish(None, timeout=WAIT)
    assert not list(tmp_path.glob(f".{IMAGE_FILE}.*"))


def test_a_writer_leaving_its_image_publishes_each_event_once(tmp_path: Path) -> None:
    """A start on the image registers the shipped schemas (published as it commits them);
    the restore a write brings catches up from the checkpoint without publishing them again,
    so a subscriber sees each event once, as with a writer that loaded at start."""
    write_people(tmp_path, 5)
    with LmdbEventLog.open(tmp_path) as event_log:
        graph = _folded(event_log)
        Checkpointer(event_log, every=1).save([graph, SchemaProjection()], [])
        assert write_graph_image(event_log, graph, graph.entity_count())
    seen: list[tuple[int, bool]] = []
    settings = settings_for(tmp_path)
    with running(settings, graph_images=True) as app:  # the schema registry registers
        app.graph.subscribe(lambda p: seen.extend((e.position, p.local) for e in p.envelopes))
        registered = app.graph.query_schemas_blocking(lambda schemas: schemas.revision)
        assert registered > 0
        app.graph.execute_blocking(
            CreateEntities(
                entities=[EntityInput(name="late", entity_type="person", observations=[])]
            )
        )
        assert app.graph.query_blocking(lambda g: g.has_entity("late"))
    positions = [position for position, _ in seen]
    assert positions == sorted(set(positions))  # none twice
    assert all(local for _, local in seen)  # this process's commits only


def _person(name: str) -> EntityInput:
    return EntityInput(name=name, entity_type="person", observations=[f"about {name}"])


def test_writes_go_over_the_image_until_another_process_writes_then_are_decided_restored(
    tmp_path: Path,
) -> None:
    """The official writes are decided over the image (actors.image_serving) without
    restoring the graph; once another process appends to the graph, the next batch is decided
    against the restored graph, which holds that process's write."""
    write_people(tmp_path, 5)
    with LmdbEventLog.open(tmp_path) as event_log:
        graph = _folded(event_log)
        Checkpointer(event_log, every=1).save([graph, SchemaProjection()], [])
        assert write_graph_image(event_log, graph, graph.entity_count())
    settings = settings_for(tmp_path)
    with capture_logs() as logs, running(settings, graph_images=True) as app:
        created = app.graph.execute_blocking(CreateEntities(entities=[_person("a")]))
        assert [e.name for e in created.created] == ["a"]
        assert not [e for e in logs if e["event"] == "graph_image_left"]
        with LmdbEventLog.open(tmp_path, node_id="another-process") as other:
            other.append([EntityCreated(name="b", entity_type="person")])
        result = app.graph.execute_blocking(
            CreateEntities(entities=[_person("b"), _person("c"), _person("a")])
        )
        assert result.skipped == ["b", "a"]
        assert [e.name for e in result.created] == ["c"]
        names = app.graph.query_blocking(lambda g: [e.name for e in g.entities()])
        assert names == [*(f"person{i}" for i in range(5)), "a", "b", "c"]
    left = [e.get("asked") for e in logs if e["event"] == "graph_image_left"]
    assert left == ["CreateEntities"]


def test_a_refused_write_over_the_image_appends_nothing(tmp_path: Path) -> None:
    write_people(tmp_path, 3)
    with LmdbEventLog.open(tmp_path) as event_log:
        graph = _folded(event_log)
        Checkpointer(event_log, every=1).save([graph, SchemaProjection()], [])
        assert write_graph_image(event_log, graph, graph.entity_count())
        end = event_log.last_position()
    with capture_logs() as logs, running(settings_for(tmp_path), graph_images=True) as app:
        schemas_end = app.graph.query_schemas_blocking(lambda schemas: schemas.position)
        with pytest.raises(EntityNotFoundError):
            app.graph.execute_blocking(
                CreateRelations(
                    relations=[
                        RelationInput(from_entity="person0", to_entity="nobody", relation_type="r")
                    ]
                )
            )
        with LmdbEventLog.open(tmp_path) as event_log:
            assert event_log.last_position() == max(end, schemas_end)
    assert not [e for e in logs if e["event"] == "graph_image_left" and e["asked"] != "a stop"]
