"""Schema files for tests: the seed's npc example and a location schema in its style."""

from __future__ import annotations

from typing import Any

# MemoryMesh's example npc schema, and a location schema in the same style that refuses keys it
# does not list (additionalProperties false).
NPC_SCHEMA: dict[str, Any] = {
    "name": "add_npc",
    "description": "Add a non-player character to the knowledge graph",
    "properties": {
        "name": {"type": "string", "description": "The name of the NPC", "required": True},
        "role": {
            "type": "string",
            "description": "The NPC's role or occupation",
            "required": True,
            "enum": ["Warrior", "Wizard", "Merchant", "Noble", "Peasant", "Thief"],
        },
        "status": {
            "type": "string",
            "description": "Current status of the NPC",
            "required": True,
            "enum": ["Active", "Inactive", "Deceased", "Missing"],
        },
        "currentLocation": {
            "type": "string",
            "description": "Where the NPC currently is",
            "required": False,
            "relationship": {
                "edgeType": "located_in",
                "nodeType": "location",
                "description": "The location where this NPC resides",
            },
        },
        "description": {
            "type": "string",
            "description": "Physical or personality description",
            "required": False,
        },
        "traits": {"type": "array", "description": "Character traits", "required": False},
    },
    "additionalProperties": True,
}
LOCATION_SCHEMA: dict[str, Any] = {
    "name": "add_location",
    "description": "Add a location to the knowledge graph",
    "properties": {
        "name": {"type": "string", "description": "The name of the location", "required": True},
        "atmosphere": {"type": "string", "description": "How the place feels", "required": False},
        "region": {"type": "string", "description": "The wider region", "required": False},
        "parentLocation": {
            "type": "string",
            "description": "The location this one lies in",
            "required": False,
            "relationship": {"edgeType": "contained_in", "nodeType": "location"},
        },
    },
    "additionalProperties": False,
}
