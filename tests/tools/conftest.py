from __future__ import annotations

from pathlib import Path

import pytest

from tests.schema_samples import LOCATION_SCHEMA, NPC_SCHEMA
from tests.tools.support import write_schema


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def seed_schemas(tmp_path: Path) -> Path:
    """A user schema folder holding the seed's npc and location schemas."""
    folder = tmp_path / "schemas"
    folder.mkdir()
    write_schema(folder, "npc", NPC_SCHEMA)
    write_schema(folder, "location", LOCATION_SCHEMA)
    return folder
