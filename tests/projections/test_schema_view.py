"""SchemaViewProjection: entity metadata parsed against the schema in force, kept current lazily."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    DeleteObservations,
    ObservationDeletion,
    ObservationInput,
)
from actors.decide import decide
from actors.schema_plans import plan_add, plan_update
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    ObservationAdded,
    ObservationDeleted,
    SchemaRegistered,
    SchemaRetired,
)
from projections.entity_schema import canonical_json, parse_schema
from projections.graph import GraphProjection
from projections.schema_view import Problem, SchemaViewProjection, parse_entity
from projections.schemas import SchemaProjection
from tests.helpers import entity, stamp

NPC: dict[str, Any] = {
    "name": "add_npc",
    "description": "A non-player character",
    "properties": {
        "name": {"type": "string", "description": "Its name", "required": True},
        "role": {
            "type": "string",
            "description": "Occupation",
            "required": True,
            "enum": ["Warrior", "Wizard", "Merchant"],
        },
        "traits": {"type": "array", "description": "Traits", "enum": ["brave", "wise", "sly"]},
        "age": {"type": "integer", "description": "Age in years"},
        "height": {"type": "number", "description": "Height in metres"},
        "alive": {"type": "boolean", "description": "Still alive"},
        "currentLocation": {
            "type": "string",
            "description": "Where it is",
            "relationship": {"edgeType": "located_in", "nodeType": "location"},
        },
        "allies": {
            "type": "array",
            "description": "Allies",
            "relationship": {"edgeType": "allied_with"},
        },
    },
    "additionalProperties": False,
}

LOCATION: dict[str, Any] = {
    "name": "add_location",
    "description": "A place",
    "properties": {
        "kind": {"type": "string", "description": "Kind", "enum": ["town", "forest"]},
    },
}


def registered(document: dict[str, Any]) -> SchemaRegistered:
    text, digest = canonical_json(document)
    return SchemaRegistered(
        type_name=document["name"].removeprefix("add_"), schema_json=text, digest=digest
    )


def narrowed(document: dict[str, Any], prop: str, enum: list[str]) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["properties"][prop]["enum"] = enum
    return changed


class World:
    """A graph, the schemas and a view over both, fed as the writer feeds them."""

    def __init__(self, *documents: dict[str, Any]) -> None:
        self.graph = GraphProjection()
        self.schemas = SchemaProjection()
        self.view = SchemaViewProjection(self.graph, self.schemas)
        self.apply(*(registered(document) for document in documents))

    def apply(self, *events: AnyEvent) -> None:
        start = max(self.graph.position, self.schemas.position) + 1
        envelopes = stamp(events, start_seq=start, hlc=start)
        self.graph.apply_all(envelopes)
        self.schemas.apply_all(envelopes)
        self.view.note(envelopes)

    def run(self, command: Command) -> None:
        """Decide `command` as the writer would, then apply and note its events."""
        start = max(self.graph.position, self.schemas.position) + 1
        envelopes = stamp(decide(self.graph, command).events, start_seq=start, hlc=start)
        self.graph.apply_all(envelopes)
        self.view.note(envelopes)

    def create(self, name: str, entity_type: str, *observations: str) -> None:
        self.apply(
            EntityCreated(name=name, entity_type=entity_type),
            *(ObservationAdded(entity=name, content=content) for content in observations),
        )

    def kinds(self, name: str) -> list[tuple[str, str, str]]:
        return [(p.kind, p.key, p.value) for p in self.view.problems_of(name)]


def test_a_conforming_entity_has_no_problems_and_typed_fields() -> None:
    world = World(NPC, LOCATION)
    world.create(
        "Gandalf",
        "npc",
        "Role: Wizard",
        "Traits: wise, brave",
        "Age: 2019",
        "Height: 1.85",
        "Alive: true",
        "Current Location: Rivendell",
        "Allies: Frodo, Aragorn",
        "A free note without a key",
    )

    assert world.view.problems() == []
    assert world.view.nonconforming_count() == 0
    assert world.view.fields("Gandalf") == {
        "name": "Gandalf",
        "role": "Wizard",
        "traits": ["wise", "brave"],
        "age": 2019,
        "height": 1.85,
        "alive": True,
        "currentLocation": "Rivendell",
        "allies": ["Frodo", "Aragorn"],
    }


def test_entries_are_matched_to_properties_by_their_normalized_key() -> None:
    world = World(NPC)
    world.create("Bree", "npc", "role: WIZARD", "current_location: Shire", "ALIVE: False")

    assert world.view.problems() == []
    assert world.view.fields("Bree") == {
        "name": "Bree",
        "role": "Wizard",  # the enum's own spelling
        "currentLocation": "Shire",
        "alive": False,
    }


def test_a_node_written_by_the_schema_tools_conforms_and_reads_back_its_values() -> None:
    schema = parse_schema(NPC)
    world = World(NPC)
    world.run(CreateEntities([entity("Moria", "location"), entity("Frodo", "npc")]))
    arguments = {
        "name": "Gimli",
        "role": "warrior",
        "traits": ["brave", "sly"],
        "age": 139,
        "height": 1.37,
        "alive": True,
        "currentLocation": "Moria",
        "allies": ["Frodo"],
    }
    world.run(plan_add(schema, arguments))
    world.run(plan_update(schema, {"name": "Gimli", "age": 140}))

    assert world.view.problems(type_name="npc") == [
        Problem(
            "Frodo",
            "npc",
            "missing_required",
            "role",
            "",
            'Required property "role" is missing: set it with update_npc, or add the entry '
            '"role: ...".',
        )
    ]
    assert world.view.fields("Gimli") == {**arguments, "role": "Warrior", "age": 140}


def test_a_required_property_without_an_entry_is_missing_required() -> None:
    world = World(NPC)
    world.create("Nobody", "npc", "Role:", "Name: Somebody else")

    assert world.kinds("Nobody") == [("missing_required", "role", "")]
    assert world.view.fields("Nobody") == {"name": "Nobody"}


def test_a_value_outside_the_enum_is_not_in_enum_for_strings_and_each_array_item() -> None:
    world = World(NPC)
    world.create("Bilbo", "npc", "Role: Burglar", "Traits: brave, greedy, lucky")

    assert world.kinds("Bilbo") == [
        ("not_in_enum", "role", "Burglar"),
        ("not_in_enum", "traits", "greedy"),
        ("not_in_enum", "traits", "lucky"),
    ]
    problem = world.view.problems_of("Bilbo")[0]
    assert "Warrior, Wizard, Merchant" in problem.detail
    assert world.view.fields("Bilbo") == {
        "name": "Bilbo",
        "role": "Burglar",
        "traits": ["brave", "greedy", "lucky"],
    }


def test_a_key_the_schema_does_not_list_is_unknown_when_other_keys_are_refused() -> None:
    world = World(NPC, LOCATION)
    world.create("Sam", "npc", "Role: Merchant", "Favourite Food: potatoes")
    world.create("Shire", "location", "Kind: town", "Favourite Food: second breakfast")

    assert world.kinds("Sam") == [("unknown_key", "Favourite Food", "potatoes")]
    assert world.view.problems_of("Shire") == []
    assert world.view.fields("Shire") == {
        "name": "Shire",
        "kind": "town",
        "Favourite Food": "second breakfast",
    }


def test_a_value_that_is_not_of_its_kind_is_wrong_kind_and_has_no_typed_field() -> None:
    world = World(NPC)
    world.create("Ent", "npc", "Role: Warrior", "Age: old", "Height: 1.5.2", "Alive: maybe")
    world.create("Huge", "npc", "Role: Warrior", "Age: 3.0", "Height: 1e999")

    assert world.kinds("Ent") == [
        ("wrong_kind", "age", "old"),
        ("wrong_kind", "height", "1.5.2"),
        ("wrong_kind", "alive", "maybe"),
    ]
    assert world.kinds("Huge") == [("wrong_kind", "age", "3.0"), ("wrong_kind", "height", "1e999")]
    assert world.view.fields("Ent") == {"name": "Ent", "role": "Warrior"}


def test_a_property_given_twice_is_a_duplicate_and_the_latest_entry_counts() -> None:
    world = World(NPC)
    world.create("Merry", "npc", "Role: Warrior", "Age: 36", "age: 37")

    [problem] = world.view.problems_of("Merry")
    assert (problem.kind, problem.key, problem.value) == ("duplicate_key", "age", "36")
    assert '"Age: 36"' in problem.detail
    assert world.view.fields("Merry") == {"name": "Merry", "role": "Warrior", "age": 37}


def test_an_entity_whose_type_has_no_schema_has_no_problems_and_no_fields() -> None:
    world = World(NPC)
    world.create("Alice", "person", "Role: anything", "Age: unknown")

    assert world.view.problems() == []
    assert world.view.fields("Alice") is None
    assert world.view.fields("Nobody") is None


def test_problems_are_ordered_by_type_then_entity_and_can_be_filtered_and_limited() -> None:
    world = World(NPC, LOCATION)
    world.create("Zed", "npc")
    world.create("Amy", "npc", "Traits: odd")
    world.create("Bog", "location", "Kind: swamp")

    listed = [(p.entity_type, p.entity, p.kind) for p in world.view.problems()]
    assert listed == [
        ("location", "Bog", "not_in_enum"),
        ("npc", "Amy", "missing_required"),
        ("npc", "Amy", "not_in_enum"),
        ("npc", "Zed", "missing_required"),
    ]
    assert [p.entity for p in world.view.problems(type_name="npc")] == ["Amy", "Amy", "Zed"]
    assert [p.entity for p in world.view.problems(limit=2)] == ["Bog", "Amy"]
    assert world.view.problems(type_name="person") == []
    assert world.view.nonconforming_count() == 3
    assert world.view.nonconforming_count("npc") == 2


def test_a_tightened_enum_reports_the_violators_and_reparses_only_that_type() -> None:
    world = World(NPC, LOCATION)
    for name, role in (("Aragorn", "Warrior"), ("Saruman", "Wizard"), ("Bill", "Merchant")):
        world.create(name, "npc", f"Role: {role}")
    world.create("Bree", "location", "Kind: town")
    world.create("Fangorn", "location", "Kind: forest")
    assert world.view.problems() == []
    before = world.view.parses
    bree = world.view.fields("Bree")

    world.apply(registered(narrowed(NPC, "role", ["Warrior"])))

    assert [(p.entity, p.kind, p.value) for p in world.view.problems()] == [
        ("Bill", "not_in_enum", "Merchant"),
        ("Saruman", "not_in_enum", "Wizard"),
    ]
    assert world.view.parses - before == 3  # the npcs, not the locations
    assert world.view.fields("Bree") == bree


def test_registering_the_same_schema_again_reparses_nothing() -> None:
    world = World(NPC)
    world.create("Aragorn", "npc", "Role: Warrior")
    world.view.problems()
    before = world.view.parses

    world.apply(registered(NPC))

    assert world.view.problems() == []
    assert world.view.parses == before


def test_a_schema_registered_later_applies_to_the_entities_already_of_its_type() -> None:
    world = World()
    world.create("Legolas", "npc", "Role: Archer")
    assert world.view.problems() == []

    world.apply(registered(NPC))

    assert world.kinds("Legolas") == [("not_in_enum", "role", "Archer")]


def test_a_retired_schema_clears_the_problems_and_fields_of_its_type() -> None:
    world = World(NPC)
    world.create("Boromir", "npc", "Role: Captain")
    assert world.view.nonconforming_count() == 1

    world.apply(SchemaRetired(type_name="npc"))

    assert world.view.problems() == []
    assert world.view.nonconforming_count() == 0
    assert world.view.fields("Boromir") is None


def test_an_observation_edit_reparses_only_that_entity() -> None:
    world = World(NPC)
    world.create("Pippin", "npc", "Role: Thief")
    world.create("Merry", "npc", "Role: Warrior")
    assert world.view.nonconforming_count() == 1
    before = world.view.parses

    world.apply(
        ObservationDeleted(entity="Pippin", content="Role: Thief"),
        ObservationAdded(entity="Pippin", content="Role: Warrior"),
    )

    assert world.view.problems() == []
    assert world.view.parses - before == 1


def test_a_type_change_or_deletion_moves_or_drops_the_entity() -> None:
    world = World(NPC, LOCATION)
    world.create("Tom", "npc", "Kind: hill")
    assert world.kinds("Tom") == [("unknown_key", "Kind", "hill"), ("missing_required", "role", "")]

    world.apply(EntityUpdated(name="Tom", entity_type="location"))
    assert world.kinds("Tom") == [("not_in_enum", "kind", "hill")]

    world.apply(SchemaRetired(type_name="npc"), EntityDeleted(name="Tom"))
    world.apply(registered(narrowed(LOCATION, "kind", ["town"])))
    assert world.view.problems() == []
    assert world.view.fields("Tom") is None


def test_a_view_built_over_an_existing_graph_parses_it_on_its_first_query() -> None:
    world = World(NPC)
    world.create("Radagast", "npc", "Role: Druid")

    fresh = SchemaViewProjection(world.graph, world.schemas)

    assert [(p.entity, p.kind) for p in fresh.problems()] == [("Radagast", "not_in_enum")]


def test_parse_entity_is_the_pure_reading_of_one_entity() -> None:
    fields, problems = parse_entity(parse_schema(LOCATION), "Moria", ["Kind: mine", "dark"])

    assert fields == {"name": "Moria", "kind": "mine"}
    assert [(p.entity, p.entity_type, p.kind) for p in problems] == [
        ("Moria", "location", "not_in_enum")
    ]


# --- the lazily kept view equals one built from scratch -------------------------------------

NAMES = st.sampled_from(["a", "b", "c"])
TYPES = st.sampled_from(["npc", "location", "other"])
CONTENTS = st.sampled_from(
    ["Role: Warrior", "Role: Wizard", "role: thief", "Age: 3", "Age: x", "Kind: town", "free"]
)
SCHEMA_EVENTS = st.sampled_from(
    [
        registered(NPC),
        registered(narrowed(NPC, "role", ["Warrior"])),
        registered(LOCATION),
        registered(narrowed(LOCATION, "kind", ["forest"])),
        SchemaRetired(type_name="npc"),
        SchemaRetired(type_name="location"),
    ]
)
STEPS = st.lists(
    st.one_of(
        st.builds(EntityCreated, name=NAMES, entity_type=TYPES),
        st.builds(EntityUpdated, name=NAMES, entity_type=TYPES),
        st.builds(EntityDeleted, name=NAMES),
        st.builds(ObservationAdded, entity=NAMES, content=CONTENTS),
        st.builds(ObservationDeleted, entity=NAMES, content=CONTENTS),
        SCHEMA_EVENTS,
        SCHEMA_EVENTS,
        st.just(None),  # a query
        st.just(None),
    ),
    max_size=40,
)


def snapshot(view: SchemaViewProjection) -> tuple[list[Problem], dict[str, Any]]:
    return view.problems(), {name: view.fields(name) for name in ("a", "b", "c")}


@given(STEPS)
def test_the_lazily_kept_view_equals_one_built_from_scratch(steps: list[AnyEvent | None]) -> None:
    world = World()
    for step in steps:
        if step is None:
            world.view.problems()
        else:
            world.apply(step)

    assert snapshot(world.view) == snapshot(SchemaViewProjection(world.graph, world.schemas))


def test_edits_through_the_official_tools_are_seen_like_any_other() -> None:
    world = World(LOCATION)
    world.run(CreateEntities([entity("Shire", "location", "Kind: town")]))
    assert world.view.problems() == []

    world.run(AddObservations([ObservationInput("Shire", ["Kind: hobbit hole"])]))
    world.run(DeleteObservations([ObservationDeletion("Shire", ["Kind: town"])]))

    assert [(p.kind, p.value) for p in world.view.problems()] == [("not_in_enum", "hobbit hole")]
