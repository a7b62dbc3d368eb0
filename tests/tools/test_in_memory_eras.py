"""The in-memory clients speak the era they are named for, so a tool test that uses both
covers both: legacy_session the `initialize` handshake, modern_client 2026-07-28."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.support import call, legacy_session, modern_client, value

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


async def test_legacy_session_speaks_the_handshake_era_and_modern_client_the_2026_one(
    tmp_path: Path,
) -> None:
    entity = {"name": "Ada", "entityType": "person", "observations": ["likes tea"]}
    async with legacy_session(tmp_path) as s:
        assert s.protocol_version is not None and s.protocol_version < MODERN  # dated versions
        assert s.initialize_result is not None
        assert value(await call(s, "create_entities", {"entities": [entity]})) == [entity]
    async with modern_client(tmp_path) as client:
        assert client.protocol_version == MODERN
        assert client.session.initialize_result is None
        assert value(await call(client, "read_graph", {}))["entities"] == [entity]
