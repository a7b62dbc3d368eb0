"""Hooks named in GRAPHMEM_HOOKS run in a real server: a before-hook vetoes a tool call with
its message, an after-hook sees each committed write once, and nothing runs on restart."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.support import call, legacy_session, text

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def hook_env(log: Path) -> dict[str, str]:
    return {
        "GRAPHMEM_HOOKS": "tests.e2e.sample_hooks:policy",
        "GRAPHMEM_TEST_HOOK_LOG": str(log),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def entity(name: str) -> dict[str, object]:
    return {"name": name, "entityType": "person", "observations": ["x"]}


async def test_a_configured_before_hook_vetoes_and_an_after_hook_sees_commits_once(
    tmp_path: Path,
) -> None:
    log = tmp_path / "hooks.jsonl"
    data = tmp_path / "data"
    async with legacy_session(data, tools="memory", **hook_env(log)) as s:
        refused = await call(s, "create_entities", {"entities": [entity("Forbidden")]})
        assert refused.is_error
        assert "Forbidden is a reserved name" in text(refused)
        created = await call(s, "create_entities", {"entities": [entity("Alice")]})
        assert not created.is_error, text(created)
        graph = json.loads(text(await call(s, "read_graph", {})))
        assert [e["name"] for e in graph["entities"]] == ["Alice"]

    seen = [json.loads(line) for line in log.read_text().splitlines()]
    # The shipped schemas registered at start-up, then Alice (entity + observation): once each.
    assert [entry["name"] for entry in seen] == ["afterRegisterSchemas", "afterAddNodes"]
    first, alice = seen[1]["positions"]
    assert alice == first + 1

    # A restart replays the log; after-hooks never run on replay.
    async with legacy_session(data, tools="memory", **hook_env(log)) as s:
        await call(s, "read_graph", {})
    assert [json.loads(line) for line in log.read_text().splitlines()] == seen
