"""Benchmark data: official-format JSONL graphs of N entities, and the names and queries they hold.

Entity i is named `<type>-<i:08d>` and has three short observations. One of them carries a token
unique to that entity (`uid<i:08d>`), so a search for it matches exactly one entity; every
entity also holds the common word `COMMON_WORD`, so a search for it matches them all. Entity i
has one outgoing relation, to a random other entity. Everything is a pure function of (N, seed).
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from pathlib import Path

COMMON_WORD = "meeting"
"""In one observation of every pre-loaded entity: the broad query."""

TYPES = ("person", "project", "service", "team", "document", "decision")
RELATION_TYPES = ("works_on", "owns", "knows", "depends_on", "reviewed", "mentors")
_SUBJECTS = (
    "prefers tea over coffee",
    "works remotely from Lisbon",
    "reviews pull requests in the morning",
    "uses neovim with a custom config",
    "owns the billing service since 2023",
    "mentors two juniors on the platform team",
    "is allergic to peanuts",
    "speaks Portuguese and German",
    "deploys on Tuesdays and Thursdays",
    "wrote the incident runbook for the payments outage",
    "moved the nightly job to the new scheduler",
    "asked for a dark mode in the admin console",
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def entity_name(i: int) -> str:
    return f"{TYPES[i % len(TYPES)]}-{i:08d}"


def unique_token(i: int) -> str:
    """A token found in entity i only (fixed width, so no token contains another)."""
    return f"uid{i:08d}"


def entity_record(i: int, rng: random.Random) -> dict[str, object]:
    return {
        "type": "entity",
        "name": entity_name(i),
        "entityType": TYPES[i % len(TYPES)],
        "observations": [
            rng.choice(_SUBJECTS),
            f"weekly {COMMON_WORD} on {rng.choice(_DAYS)} with the {rng.choice(TYPES)} group",
            f"badge {unique_token(i)} issued at the {rng.choice(_DAYS)} onboarding",
        ],
    }


def relation_record(i: int, n: int, rng: random.Random) -> dict[str, object]:
    target = rng.randrange(n - 1)
    target += target >= i  # any entity but i itself
    return {
        "type": "relation",
        "from": entity_name(i),
        "to": entity_name(target),
        "relationType": rng.choice(RELATION_TYPES),
    }


@dataclass(frozen=True)
class Dataset:
    """A written JSONL file and what it holds."""

    path: Path
    entities: int
    relations: int
    bytes: int


def write_jsonl(path: Path, n: int, seed: int = 0) -> Dataset:
    """Write N entities then N relations (none when N < 2), as the official server writes them:
    compact JSON, entity lines first, joined by newlines with no trailing newline."""
    rng = random.Random(seed)
    relations = n if n >= 2 else 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    with path.open("w", encoding="utf-8") as out:
        first = True
        for i in range(n):
            out.write(("" if first else "\n") + dumps(entity_record(i, rng)))
            first = False
        for i in range(relations):
            out.write("\n" + dumps(relation_record(i, n, rng)))
    return Dataset(path, n, relations, path.stat().st_size)


def sizes_argument(value: str) -> list[int]:
    """A command line's comma-separated list of N (`1000,50_000`), for argparse's `type=`."""
    try:
        return [int(part.replace("_", "")) for part in value.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list") from None
