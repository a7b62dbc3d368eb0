"""graph_ingest and graph_read_transcript end to end through a real MCP client, both protocol
eras (contract §8.7, §8.16, §9, §13's "transcript ids that try to leave the transcripts
folder"), with GRAPHMEM_GRAPH_HOME and GRAPHMEM_TRANSCRIPTS_DIR pointed at test folders."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.tools.graph_write_support import ERAS, GraphClient, graph_client, tool_error, tool_value
from tests.tools.test_graph_write_family import described

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("era", ERAS)]

FIXTURE = Path(__file__).parent.parent / "fixtures" / "transcripts" / "every-line-kind.jsonl"
SESSION = "0f8e2c1a-every-kind"


class Folders:
    def __init__(self, root: Path) -> None:
        self.data = root / "data"
        self.home = root / "home"
        self.transcripts = root / "projects"
        project = self.transcripts / "-home-ana-proj"
        project.mkdir(parents=True)
        shutil.copy(FIXTURE, project / f"{SESSION}.jsonl")
        self.outside = root / "outside"
        self.outside.mkdir()
        shutil.copy(FIXTURE, self.outside / "secret.jsonl")

    def env(self) -> dict[str, str]:
        return {
            "GRAPHMEM_GRAPH_HOME": str(self.home),
            "GRAPHMEM_TRANSCRIPTS_DIR": str(self.transcripts),
        }


@pytest.fixture
def folders(tmp_path: Path) -> Folders:
    return Folders(tmp_path)


def client_of(era: str, folders: Folders) -> Any:
    return graph_client(era, folders.data, **folders.env())


async def read(client: GraphClient, **arguments: Any) -> dict[str, Any]:
    answer: dict[str, Any] = await tool_value(client, "graph_read_transcript", arguments)
    return answer


async def test_both_tools_are_listed_with_the_contracts_annotations_and_described_arguments(
    era: str, folders: Folders
) -> None:
    async with client_of(era, folders) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        expected = {
            "graph_ingest": (False, False, True),
            "graph_read_transcript": (True, False, True),
        }
        for name, hints in expected.items():
            annotations = tools[name].annotations
            assert annotations is not None
            assert (
                annotations.read_only_hint,
                annotations.destructive_hint,
                annotations.idempotent_hint,
                annotations.open_world_hint,
            ) == (*hints, False)
            described(tools[name].input_schema, name)
            assert tools[name].output_schema is not None


async def test_a_session_is_read_by_id_text_only_by_default(era: str, folders: Folders) -> None:
    async with client_of(era, folders) as client:
        answer = await read(client, session_id=SESSION)
        assert answer["session_id"] == "sess-1"
        assert answer["format_version"] == "v1"
        assert (answer["line_count"], answer["message_count"], answer["text_message_count"]) == (
            17,
            6,
            4,
        )
        assert [m["uuid"] for m in answer["messages"]] == ["u1", "a1", "s1", "a2"]
        assert answer["messages"][1]["text"] == "Looking at it.\nFound it."
        assert answer["next_offset"] is None
        assert len(answer["warnings"]) == 3
        everything = await read(client, session_id=SESSION, text_only=False)
        assert [m.get("meta", False) for m in everything["messages"]].count(True) == 1


async def test_since_offset_and_limit_page_through_a_session(era: str, folders: Folders) -> None:
    async with client_of(era, folders) as client:
        first = await read(client, session_id=SESSION, limit=2)
        assert [m["uuid"] for m in first["messages"]] == ["u1", "a1"]
        assert first["next_offset"] == 2
        rest = await read(client, session_id=SESSION, limit=2, offset=first["next_offset"])
        assert [m["uuid"] for m in rest["messages"]] == ["s1", "a2"]
        assert rest["next_offset"] is None
        later = await read(client, session_id=SESSION, since="2026-11-01T10:00:06Z")
        assert [m["uuid"] for m in later["messages"]] == ["s1", "a2"]


async def test_a_file_path_wins_over_a_session_id(era: str, folders: Folders) -> None:
    async with client_of(era, folders) as client:
        answer = await read(
            client, session_id="no-such-session", file_path=str(folders.outside / "secret.jsonl")
        )
        assert answer["message_count"] == 6


@pytest.mark.parametrize(
    "session_id",
    ["../outside/secret", "..", "-home-ana-proj/" + SESSION, "/etc/passwd", "..%2Fsecret"],
)
async def test_a_session_id_never_leaves_the_transcripts_folder(
    era: str, folders: Folders, session_id: str
) -> None:
    async with client_of(era, folders) as client:
        problem = await tool_error(client, "graph_read_transcript", {"session_id": session_id})
        assert "session_id" in problem


async def test_symlinks_out_of_the_transcripts_folder_are_refused(
    era: str, folders: Folders
) -> None:
    (folders.transcripts / "linked-project").symlink_to(folders.outside)
    (folders.transcripts / "-home-ana-proj" / "leak.jsonl").symlink_to(
        folders.outside / "secret.jsonl"
    )
    async with client_of(era, folders) as client:
        for session_id in ("secret", "leak"):
            problem = await tool_error(client, "graph_read_transcript", {"session_id": session_id})
            assert "links outside the transcripts folder" in problem


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "give session_id or file_path"),
        ({"file_path": "relative.jsonl"}, "not absolute"),
        ({"file_path": "/etc/passwd"}, "not a .jsonl file"),
        ({"file_path": "/no/such/file.jsonl"}, "not found"),
        ({"session_id": "nope"}, "Transcript not found"),
        ({"session_id": SESSION, "limit": 0}, "between 1 and 5000"),
        ({"session_id": SESSION, "limit": 5001}, "between 1 and 5000"),
        ({"session_id": SESSION, "offset": -1}, "offset is -1; it must be 0 or more"),
        ({"session_id": SESSION, "since": "last week"}, "since"),
        ({"session_id": SESSION, "text_onyl": False}, "graph_read_transcript accepts"),
    ],
)
async def test_bad_transcript_arguments_are_refused_saying_what_to_fix(
    era: str, folders: Folders, arguments: dict[str, Any], problem: str
) -> None:
    async with client_of(era, folders) as client:
        assert problem in await tool_error(client, "graph_read_transcript", arguments)


async def test_queued_documents_are_counted_by_status_and_by_graph_stats(
    era: str, folders: Folders, tmp_path: Path
) -> None:
    source = tmp_path / "report.txt"
    source.write_text("quarterly report")
    pending = folders.home / "ingest" / "pending"
    async with client_of(era, folders) as client:
        inline = await tool_value(
            client,
            "graph_ingest",
            {
                "action": "queue",
                "content": "# Meeting\nAna leads Apollo.",
                "file_name": "meeting.md",
                "meta": {
                    "source": "claude-code-cloud",
                    "session_id": "sess-9",
                    "through": "2026-11-01T10:00:00Z",
                    "last_event_id": "evt-3",
                    "topic_hints": ["Apollo"],
                },
            },
        )
        assert inline == {
            "action": "queued",
            "file": "meeting.md",
            "destination": str((pending / "meeting.md").absolute()),
            "meta_written": True,
        }
        copied = await tool_value(
            client, "graph_ingest", {"action": "queue", "file_path": str(source)}
        )
        assert (copied["file"], copied["meta_written"]) == ("report.txt", False)
        assert (pending / "report.txt").read_text() == "quarterly report"
        completed = folders.home / "ingest" / "completed"
        completed.mkdir()
        (completed / "old.md").write_text("done")
        (completed / "old.md.meta.json").write_text('{"entities": 3, "edges": 1}')
        status = await tool_value(client, "graph_ingest", {"action": "status"})
        assert sorted(p["file"] for p in status["pending"]) == ["meeting.md", "report.txt"]
        assert (status["pending_count"], status["completed_count"]) == (2, 1)
        assert status["recently_completed"][0]["entities"] == 3
        assert status["session_cursors"] == {
            "sess-9": {
                "through": "2026-11-01T10:00:00Z",
                "last_event_id": "evt-3",
                "file": "meeting.md",
            }
        }
        health = (await tool_value(client, "graph_stats", {}))["health"]
        assert (health["pending_ingest_docs"], health["total_ingested_docs"]) == (2, 1)


async def test_queueing_the_same_name_again_replaces_it(era: str, folders: Folders) -> None:
    async with client_of(era, folders) as client:
        for text in ("first", "second"):
            await tool_value(
                client,
                "graph_ingest",
                {"action": "queue", "content": text, "file_name": "n.txt", "meta": {"a": 1}},
            )
        await tool_value(
            client, "graph_ingest", {"action": "queue", "content": "third", "file_name": "n.txt"}
        )
        pending = folders.home / "ingest" / "pending"
        assert sorted(p.name for p in pending.iterdir()) == ["n.txt"]
        assert (pending / "n.txt").read_text() == "third"
        status = await tool_value(client, "graph_ingest", {"action": "status"})
        assert status["pending_count"] == 1


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"action": "queue"}, "queue needs file_path"),
        ({"action": "queue", "content": "x"}, "content needs file_name"),
        ({"action": "queue", "content": "x", "file_name": "../escape.md"}, "path separator"),
        ({"action": "queue", "content": "x", "file_name": "/tmp/abs.md"}, "path separator"),
        ({"action": "queue", "content": "x", "file_name": "..md"}, "'..'"),
        ({"action": "queue", "content": "x", "file_name": ".bashrc.md"}, "hidden"),
        ({"action": "queue", "content": "x", "file_name": "run.sh"}, ".md, .txt or .json"),
        ({"action": "queue", "content": "x", "file_name": "a.md.meta.json"}, "sidecar"),
        (
            {"action": "queue", "content": "x" * (2 * 1024 * 1024 + 1), "file_name": "big.md"},
            "2 MB",
        ),
        (
            {"action": "queue", "content": "é" * (1024 * 1024 + 1), "file_name": "big.md"},
            "bytes of UTF-8",
        ),
        ({"action": "queue", "file_path": "relative/notes.md"}, "not absolute"),
        ({"action": "queue", "file_path": "/etc"}, "plain file name"),
        ({"action": "queue", "file_path": "/no/such/notes.md"}, "does not exist"),
        ({"action": "queue", "file_path": "/tmp/x.md", "content": "x"}, "not both"),
        (
            {"action": "queue", "file_path": "/tmp/x.md", "file_name": "y.md"},
            "file_name goes with content",
        ),
        (
            {
                "action": "queue",
                "content": "x",
                "file_name": "a.md",
                "meta": {"weight_override": 2},
            },
            "between 0 and 1",
        ),
        (
            {"action": "queue", "content": "x", "file_name": "a.md", "meta": {"through": "soon"}},
            "through",
        ),
        ({"action": "status", "file_name": "a.md"}, "status takes no file_name"),
        ({"action": "purge"}, "action"),
        (
            {"action": "queue", "content": "x", "file_name": "a.md", "metadata": {}},
            "graph_ingest accepts",
        ),
    ],
)
async def test_a_refused_queueing_says_what_to_fix_and_writes_nothing(
    era: str, folders: Folders, arguments: dict[str, Any], problem: str
) -> None:
    async with client_of(era, folders) as client:
        assert problem in await tool_error(client, "graph_ingest", arguments)
        status = await tool_value(client, "graph_ingest", {"action": "status"})
        assert status["pending_count"] == 0
    pending = folders.home / "ingest" / "pending"
    assert not pending.exists() or not any(pending.iterdir())
    assert not (folders.home.parent / "escape.md").exists()


async def test_a_directory_given_as_file_path_is_refused(
    era: str, folders: Folders, tmp_path: Path
) -> None:
    (tmp_path / "folder.md").mkdir()
    async with client_of(era, folders) as client:
        problem = await tool_error(
            client, "graph_ingest", {"action": "queue", "file_path": str(tmp_path / "folder.md")}
        )
        assert "not a regular file" in problem


async def test_a_queue_that_cannot_be_written_is_an_error_naming_the_folder(
    era: str, folders: Folders
) -> None:
    folders.home.mkdir()
    (folders.home / "ingest").write_text("a file where the queue's folder should be")
    async with client_of(era, folders) as client:
        problem = await tool_error(
            client, "graph_ingest", {"action": "queue", "content": "x", "file_name": "a.md"}
        )
        assert "cannot write to" in problem
        assert "nothing was queued" in problem
        status = await tool_value(client, "graph_ingest", {"action": "status"})
        assert (status["pending_count"], status["completed_count"]) == (0, 0)
