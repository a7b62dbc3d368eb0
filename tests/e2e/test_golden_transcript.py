"""The official server's 24-call golden transcript (tests/fixtures/official-memory-wire-
fixture.json), replayed over stdio: identical responses, except the deliberate differences the
README lists (we follow the official main branch where it fixed a flaw)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest

from tests.e2e.support import call, legacy_session

pytestmark = pytest.mark.anyio

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/official-memory-wire-fixture.json"
GRAPH_URI = "memory://knowledge-graph"


def _fixture() -> dict[str, Any]:
    if not FIXTURE.exists():
        pytest.fail(f"the wire fixture is missing at {FIXTURE}")
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def _render(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _graph(entities: list[dict[str, Any]], relations: list[Any]) -> dict[str, Any]:
    return {"entities": entities, "relations": relations}


def _entity(name: str, entity_type: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


ALICE_4 = _entity("Alice", "person", "works at Acme Corp", "likes coffee", "has a dog", "has a dog")
ALICE_2 = _entity("Alice", "person", "works at Acme Corp", "likes coffee")
BOB = _entity("Bob", "person")
CAROL = _entity("Carol", "person", "x")


def _ok(value: Any, structured: dict[str, Any], *extra_texts: str) -> dict[str, Any]:
    texts = [_render(value) if not isinstance(value, str) else value, *extra_texts]
    return {"texts": texts, "structured": structured, "is_error": False}


def _status(message: str) -> dict[str, Any]:
    return _ok(message, {"success": True, "message": message})


def _failure(message: str) -> dict[str, Any]:
    return {"texts": [message], "structured": None, "is_error": True}


# Where our answer differs from the released server, and why (README "Deliberate differences").
DIFFERENCES: dict[int, dict[str, Any]] = {
    # Duplicates within one batch are skipped, and skipped names are reported (main branch).
    1: _ok(
        [CAROL],
        {"entities": [CAROL], "skipped": ["Alice", "Carol"]},
        "Skipped 2 entities that already exist: Alice, Carol. Their observations were not "
        "added; use add_observations for existing entities.",
    ),
    # Relations to missing entities are rejected, the whole batch with them (main, #4477).
    3: _failure("Entity with name Ghost not found"),
    # ...so the relations step 3 would have created are absent from every later answer.
    6: _ok(_graph([BOB], []), _graph([BOB], [])),
    7: _ok(_graph([ALICE_4], []), _graph([ALICE_4], [])),
    10: _ok(_graph([ALICE_4, BOB, CAROL], []), _graph([ALICE_4, BOB, CAROL], [])),
    # Partial deletes say what was missed (main, #4738).
    11: _status("Deleted 1 of 3 observations. Entities not found: Nobody"),
    12: _status("Deleted 0 of 1 relations. The rest matched nothing."),
    13: _status("Deleted 1 of 2 entities. Not found: Nobody"),
    14: _ok(_graph([ALICE_2, BOB], []), _graph([ALICE_2, BOB], [])),
    15: _ok(_graph([ALICE_2, BOB], []), _graph([ALICE_2, BOB], [])),
}
# Input validation: the wording is the SDK's own; the prefix and isError are the contract.
VALIDATION_ERRORS = {16, 18, 19, 20}


def _observed(result: types.CallToolResult) -> dict[str, Any]:
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    return {
        "texts": texts,
        "structured": result.structured_content,
        "is_error": bool(result.is_error),
    }


def _expected(step: dict[str, Any]) -> dict[str, Any]:
    result = step["result"]
    return {
        "texts": [c["text"] for c in result["content"]],
        "structured": result.get("structuredContent"),
        "is_error": bool(result.get("isError")),
    }


# Served by graphmem's front until the resource subscription loads the SDK, and by the SDK's
# session from the start (graphmem.wire.front).
@pytest.mark.parametrize("lazy_sdk", ["1", "0"])
async def test_the_golden_transcript_replays_identically(tmp_path: Path, lazy_sdk: str) -> None:
    fixture = _fixture()
    notifications: list[str] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            notifications.append(str(root.params.uri))

    async with legacy_session(
        tmp_path, message_handler=on_message, GRAPHMEM_LAZY_SDK=lazy_sdk
    ) as s:
        for index, step in enumerate(fixture["golden_transcript"]):
            observed = _observed(await call(s, step["tool"], step["arguments"]))
            if index in VALIDATION_ERRORS:
                assert observed["is_error"], index
                prefix = (
                    "MCP error -32602: Input validation error: Invalid arguments for tool "
                    f"{step['tool']}: "
                )
                assert observed["texts"][0].startswith(prefix), (index, observed)
                continue
            expected = DIFFERENCES.get(index) or _expected(step)
            assert observed == expected, f"step {index} ({step['tool']})"

        tail = fixture["golden_transcript_tail"]
        await s.subscribe_resource(GRAPH_URI)  # type: ignore[arg-type]
        zed = tail[1]
        observed = _observed(await call(s, zed["tool"], zed["arguments"]))
        assert observed == _expected(zed)
        with anyio.fail_after(10):
            while not notifications:
                await anyio.lowlevel.checkpoint()
        assert notifications == [GRAPH_URI]
        read = await s.read_resource(GRAPH_URI)  # type: ignore[arg-type]
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert content.text == tail[2]["result"]["contents"][0]["text"]
