"""SchemaProjection: the schemas in force, folded last-writer-wins from SchemaRegistered/Retired."""

from __future__ import annotations

import itertools
import json
from typing import Any

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    Envelope,
    SchemaRegistered,
    SchemaRetired,
)
from projections.entity_schema import canonical_json
from projections.schemas import SchemaProjection


def document(type_name: str, description: str = "A thing") -> dict[str, Any]:
    return {
        "name": f"add_{type_name}",
        "description": description,
        "properties": {"name": {"type": "string", "description": "Its name"}},
    }


def registered(type_name: str, description: str = "A thing", source: str = "") -> SchemaRegistered:
    text, digest = canonical_json(document(type_name, description))
    return SchemaRegistered(type_name=type_name, schema_json=text, digest=digest, source=source)


def at(position: int, hlc: int, event: AnyEvent, origin: str = "a") -> Envelope:
    return Envelope(
        position=position, origin=origin, origin_seq=position, hlc=hlc, tx=position, event=event
    )


def fold(*envelopes: Envelope) -> SchemaProjection:
    projection = SchemaProjection()
    projection.apply_all(envelopes)
    return projection


def test_a_registered_schema_is_in_force_with_its_digest_and_source() -> None:
    event = registered("npc", source="/schemas/npc.schema.json")

    projection = fold(at(1, 1, event))

    schema = projection.schema("npc")
    assert schema is not None and schema.type_name == "npc"
    record = projection.record("npc")
    assert record is not None
    assert (record.digest, record.source) == (event.digest, "/schemas/npc.schema.json")
    assert [s.type_name for s in projection.schemas()] == ["npc"]
    assert projection.position == 1


def test_the_latest_registration_wins() -> None:
    projection = fold(
        at(1, 1, registered("npc", "First")),
        at(2, 2, registered("npc", "Second")),
    )

    schema = projection.schema("npc")
    assert schema is not None and schema.description == "Second"


def test_a_registration_with_an_older_stamp_arriving_later_loses() -> None:
    projection = fold(
        at(1, 5, registered("npc", "Newer")),
        at(2, 3, registered("npc", "Older"), origin="b"),
    )

    schema = projection.schema("npc")
    assert schema is not None and schema.description == "Newer"
    assert projection.position == 2


def test_a_retired_schema_is_out_of_force_until_registered_again() -> None:
    projection = fold(at(1, 1, registered("npc")), at(2, 2, SchemaRetired(type_name="npc")))

    assert projection.schema("npc") is None
    assert projection.schemas() == []
    record = projection.record("npc")
    assert record is not None and record.digest == "" and record.schema is None

    projection.apply_all([at(3, 3, registered("npc", "Back"))])
    schema = projection.schema("npc")
    assert schema is not None and schema.description == "Back"


def test_an_unparsable_document_is_kept_out_of_force_without_failing_the_fold() -> None:
    broken = SchemaRegistered(type_name="npc", schema_json="{not json", digest="d1")
    invalid_text = json.dumps({"name": "npc", "description": "x", "properties": {}})
    invalid = SchemaRegistered(type_name="orc", schema_json=invalid_text, digest="d2")

    projection = fold(at(1, 1, broken), at(2, 2, invalid), at(3, 3, registered("elf")))

    assert projection.schema("npc") is None
    assert projection.schema("orc") is None
    assert [s.type_name for s in projection.schemas()] == ["elf"]
    record = projection.record("npc")
    assert record is not None and record.digest == "d1"


def test_other_events_are_ignored_but_advance_the_position() -> None:
    projection = fold(at(1, 1, EntityCreated(name="Gandalf", entity_type="npc")))

    assert projection.records() == []
    assert projection.revision == 0
    assert projection.position == 1


def test_every_change_bumps_the_version_and_a_stale_event_does_not() -> None:
    projection = fold(at(1, 2, registered("npc")))
    assert projection.revision == 1

    projection.apply_all([at(2, 1, registered("npc", "Stale"), origin="b")])
    assert projection.revision == 1

    projection.apply_all([at(3, 3, SchemaRetired(type_name="npc"))])
    assert projection.revision == 2


def test_the_fold_does_not_depend_on_the_order_events_arrive_in() -> None:
    envelopes = [
        at(1, 1, registered("npc", "One")),
        at(2, 2, registered("elf")),
        at(3, 3, SchemaRetired(type_name="elf")),
        at(4, 4, registered("npc", "Two"), origin="b"),
        at(5, 4, registered("npc", "Two from c"), origin="c"),
        at(6, 6, registered("orc")),
    ]

    def state(projection: SchemaProjection) -> list[tuple[str, str, bool]]:
        return [(r.type_name, r.digest, r.schema is None) for r in projection.records()]

    expected = state(fold(*envelopes))
    for order in itertools.permutations(envelopes):
        assert state(fold(*order)) == expected
    npc = fold(*envelopes).schema("npc")
    assert npc is not None and npc.description == "Two from c"
