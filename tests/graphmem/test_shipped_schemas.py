"""The shipped schema files: the default agent-memory set, MemoryMesh's RPG set and the seed's
smaller RPG set (both opt-in)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from actors.schema_registry import scan_folders
from graphmem.config import shipped_schemas_dir
from graphmem.tools.catalog import STATIC_TOOL_NAMES
from projections.entity_schema import EntitySchema, parse_schema

SHIPPED = shipped_schemas_dir()
RPG = SHIPPED / "rpg"
RPG_SEED = SHIPPED / "rpg-seed"
# MemoryMesh's own set, its facts written down as our test fixtures (tests/fixtures/memorymesh).
MEMORYMESH = Path(__file__).resolve().parent.parent / "fixtures" / "memorymesh" / "schemas"
DEFAULT_TYPES = {
    "person",
    "project",
    "preference",
    "concept",
    "decision",
    "fact",
    "event",
    "object",
}
# The seed's set: the type and, where it has one, its relationship property and edge type.
RPG_SEED_RELATIONSHIPS: dict[str, tuple[str, str] | None] = {
    "npc": ("currentLocation", "located_in"),
    "location": ("parentLocation", "contained_in"),
    "artifact": ("owner", "owned_by"),
    "quest": ("location", "takes_place_in"),
    "faction": ("headquarters", "based_in"),
    "player_character": ("currentLocation", "located_in"),
    "inventory": ("owner", "belongs_to"),
    "skills": None,
    "currency": None,
    "transportation": ("owner", "owned_by"),
    "temporal": ("location", "occurred_at"),
}
SNAKE_CASE = re.compile(r"^[a-z]+(_[a-z]+)*$")


def load(folder: Path) -> dict[str, EntitySchema]:
    schemas = {}
    for path in sorted(folder.glob("*.schema.json")):
        schema = parse_schema(json.loads(path.read_text(encoding="utf-8")))
        assert path.name == f"{schema.type_name}.schema.json", "file named after its type"
        schemas[schema.type_name] = schema
    return schemas


@pytest.mark.parametrize(
    "folder", [SHIPPED, RPG, RPG_SEED, MEMORYMESH], ids=["default", "rpg", "rpg-seed", "fixture"]
)
def test_every_shipped_file_loads_without_a_problem(folder: Path) -> None:
    scan = scan_folders([folder], STATIC_TOOL_NAMES)

    assert scan.problems == []
    assert set(scan.definitions) == set(load(folder))


def test_the_default_set_holds_the_eight_agent_memory_types() -> None:
    assert set(load(SHIPPED)) == DEFAULT_TYPES


def facts(schema: EntitySchema) -> list[tuple[object, ...]]:
    """What a MemoryMesh user's data depends on: each property's name, kind, required flag,
    allowed values and edge type (descriptions are free)."""
    return [
        (
            p.name,
            p.kind,
            p.required,
            p.enum,
            None if p.relationship is None else p.relationship.edge_type,
        )
        for p in schema.properties
    ]


def test_the_rpg_set_has_exactly_memorymeshs_types_properties_and_edge_types() -> None:
    shipped, memorymesh = load(RPG), load(MEMORYMESH)

    assert set(shipped) == set(memorymesh) and len(shipped) == 11
    for type_name, schema in shipped.items():
        assert facts(schema) == facts(memorymesh[type_name]), type_name
        assert schema.additional_properties == memorymesh[type_name].additional_properties


def test_the_rpg_npc_has_memorymeshs_properties_and_no_enums() -> None:
    npc = load(RPG)["npc"]

    assert [p.name for p in npc.required] == [
        "name",
        "role",
        "status",
        "currentLocation",
        "description",
    ]
    assert all(p.enum is None for p in npc.properties)
    origin = npc.find("origin")
    assert origin is not None and origin.relationship is not None
    assert origin.relationship.edge_type == "originates_from"
    owner = load(RPG)["inventory"].find("owner")
    assert owner is not None and owner.relationship is not None
    assert owner.relationship.edge_type == "owned_by"


def test_the_rpg_seed_set_holds_the_seeds_eleven_types_with_their_relationships() -> None:
    schemas = load(RPG_SEED)

    assert set(schemas) == set(RPG_SEED_RELATIONSHIPS)
    for type_name, expected in RPG_SEED_RELATIONSHIPS.items():
        relationships = [
            (p.name, p.relationship.edge_type)
            for p in schemas[type_name].properties
            if p.relationship is not None
        ]
        assert relationships == ([expected] if expected else []), type_name


def test_the_rpg_seed_npc_is_the_seeds_example() -> None:
    npc = load(RPG_SEED)["npc"]

    assert [p.name for p in npc.required] == ["name", "role", "status"]
    role, status = npc.find("role"), npc.find("status")
    assert role is not None and role.enum == (
        "Warrior",
        "Wizard",
        "Merchant",
        "Noble",
        "Peasant",
        "Thief",
    )
    assert status is not None and status.enum == ("Active", "Inactive", "Deceased", "Missing")
    location = npc.find("currentLocation")
    assert location is not None and location.relationship is not None
    assert location.relationship.node_type == "location"


@pytest.mark.parametrize(
    "folder", [SHIPPED, RPG, RPG_SEED, MEMORYMESH], ids=["default", "rpg", "rpg-seed", "fixture"]
)
def test_relationships_use_snake_case_edge_types_and_point_at_types_of_their_set(
    folder: Path,
) -> None:
    schemas = load(folder)

    for schema in schemas.values():
        for prop in schema.properties:
            if prop.relationship is None:
                continue
            assert SNAKE_CASE.match(prop.relationship.edge_type), prop.relationship.edge_type
            node_type = prop.relationship.node_type
            assert node_type is None or node_type in schemas, (schema.type_name, node_type)


def test_the_default_set_names_no_type_twice_with_the_rpg_sets() -> None:
    assert not set(load(SHIPPED)) & set(load(RPG))
    assert not set(load(SHIPPED)) & set(load(RPG_SEED))


def test_the_default_set_records_what_an_agent_needs_about_each_type() -> None:
    schemas = load(SHIPPED)

    def edge_types(type_name: str) -> set[str]:
        return {
            p.relationship.edge_type
            for p in schemas[type_name].properties
            if p.relationship is not None
        }

    project_status = schemas["project"].find("status")
    assert project_status is not None and project_status.enum
    decision_status = schemas["decision"].find("status")
    assert decision_status is not None and decision_status.enum
    assert schemas["decision"].find("rationale") is not None
    assert {"has_decider", "concerns"} <= edge_types("decision")
    assert "has_owner" in edge_types("project")
    assert "works_on" in edge_types("person")
    assert schemas["fact"].find("confidence") is not None
    assert schemas["fact"].find("source") is not None
    participants = schemas["event"].find("participants")
    assert participants is not None and participants.relationship is not None
    assert schemas["event"].find("date") is not None
