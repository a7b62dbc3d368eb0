"""`graphmem backup` / `graphmem restore` as real processes, beside a real server writing
through a real MCP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import lmdb
import pytest

from tests.e2e.cli_support import fault_line, graphmem
from tests.e2e.support import call, legacy_session

pytestmark = pytest.mark.anyio

MANIFEST = "graphmem-backup.json"


def one(name: str) -> dict[str, Any]:
    return {"entities": [{"name": name, "entityType": "t", "observations": [f"about {name}"]}]}


def manifest_of(backup: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((backup / MANIFEST).read_text())
    return found


def seeded(tmp_path: Path, count: int = 20) -> Path:
    """A data dir holding `count` entities, written by `graphmem import`."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    data_dir = tmp_path / "data"
    source = tmp_path / "seed.jsonl"
    lines = (
        json.dumps({"type": "entity", "name": f"s{i}", "entityType": "t", "observations": ["o"]})
        for i in range(count)
    )
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = graphmem(data_dir, "import", str(source))
    assert done.returncode == 0, done.stderr
    return data_dir


async def test_a_backup_taken_while_a_server_writes_restores_the_graph_as_of_its_position(
    tmp_path: Path,
) -> None:
    data_dir, backup = tmp_path / "data", tmp_path / "backup"
    written = 0
    backup_done = anyio.Event()
    during: list[int] = []

    async def take_backup() -> None:
        before = written
        done = await anyio.to_thread.run_sync(graphmem, data_dir, "backup", str(backup))
        assert done.returncode == 0, done.stderr
        during.append(written - before)
        backup_done.set()

    async with legacy_session(data_dir) as session:
        with anyio.fail_after(240):
            for _ in range(20):  # a log with something in it before the backup starts
                assert not (await call(session, "create_entities", one(f"e{written}"))).is_error
                written += 1
            async with anyio.create_task_group() as group:
                group.start_soon(take_backup)
                while not backup_done.is_set():
                    result = await call(session, "create_entities", one(f"e{written}"))
                    assert not result.is_error
                    written += 1
            for _ in range(5):  # and after it
                assert not (await call(session, "create_entities", one(f"e{written}"))).is_error
                written += 1

    assert during[0] > 0, "the server wrote nothing while the backup ran"
    manifest = manifest_of(backup)
    position = manifest["position"]
    # Each create is two events (the entity, its observation): 20 before, the last 5 after.
    assert 40 <= position <= 2 * (written - 5)
    restored = tmp_path / "restored"
    done = graphmem(restored, "restore", str(backup))
    assert done.returncode == 0, done.stderr
    assert graphmem(restored, "check").returncode == 0
    as_of = graphmem(data_dir, "export", "--as-of", str(position))
    assert as_of.returncode == 0, as_of.stderr
    now = graphmem(restored, "export")
    assert now.returncode == 0, now.stderr
    assert now.stdout == as_of.stdout
    # Writes are acknowledged in order: the copy holds the first n of them, none after.
    names = [json.loads(line)["name"] for line in now.stdout.splitlines()]
    assert 20 <= len(names) < written
    assert names == [f"e{i}" for i in range(len(names))]


def test_a_backup_copies_every_lmdb_environment_and_the_other_files(tmp_path: Path) -> None:
    data_dir = seeded(tmp_path)
    cache = lmdb.open(str(data_dir / "embeddings.lmdb"), subdir=False)
    with cache.begin(write=True) as txn:
        txn.put(b"key", b"vector")
    cache.close()
    (data_dir / "graph-memory" / "logs").mkdir(parents=True)
    (data_dir / "graph-memory" / "logs" / "dream-audit.jsonl").write_text('{"a": 1}\n')

    backup = tmp_path / "backup"
    done = graphmem(data_dir, "backup", str(backup))
    assert done.returncode == 0, done.stderr
    listed = set(manifest_of(backup)["files"])
    assert listed == {"data.mdb", "embeddings.lmdb", "graph-memory/logs/dream-audit.jsonl"}
    assert not any(p.name.endswith(("lock.mdb", "-lock")) for p in backup.rglob("*"))
    assert manifest_of(backup)["position"] == 40  # 20 entities, 20 observations
    restored = tmp_path / "restored"
    assert graphmem(restored, "restore", str(backup)).returncode == 0
    copy = lmdb.open(str(restored / "embeddings.lmdb"), subdir=False, readonly=True, lock=False)
    with copy.begin() as txn:
        assert txn.get(b"key") == b"vector"
    copy.close()
    assert (restored / "graph-memory/logs/dream-audit.jsonl").read_text() == '{"a": 1}\n'


def test_restore_refuses_a_data_dir_that_is_not_empty_unless_forced_and_keeps_it_aside(
    tmp_path: Path,
) -> None:
    data_dir = seeded(tmp_path, count=3)
    backup = tmp_path / "backup"
    assert graphmem(data_dir, "backup", str(backup)).returncode == 0
    other = seeded(tmp_path / "other", count=7)
    before = graphmem(other, "export").stdout

    line = fault_line(graphmem(other, "restore", str(backup)))
    assert "not empty" in line
    assert "--force" in line
    assert graphmem(other, "export").stdout == before

    done = graphmem(other, "restore", str(backup), "--force")
    assert done.returncode == 0, done.stderr
    assert graphmem(other, "export").stdout == graphmem(data_dir, "export").stdout
    aside = [p for p in other.parent.iterdir() if p.name.startswith("data.before-restore-")]
    assert len(aside) == 1
    assert graphmem(aside[0], "export").stdout == before
    assert str(aside[0]) in done.stdout


def test_restore_refuses_a_backup_whose_file_changed_and_leaves_the_data_dir_alone(
    tmp_path: Path,
) -> None:
    data_dir = seeded(tmp_path, count=3)
    backup = tmp_path / "backup"
    assert graphmem(data_dir, "backup", str(backup)).returncode == 0
    with (backup / "data.mdb").open("r+b") as file:
        file.seek(5000)
        byte = file.read(1)
        file.seek(5000)
        file.write(bytes([byte[0] ^ 0xFF]))

    target = tmp_path / "target"
    line = fault_line(graphmem(target, "restore", str(backup), "--force"))
    assert "data.mdb: checksum differs" in line
    assert "nothing was restored" in line
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_restore_of_a_folder_that_is_no_backup_says_so(tmp_path: Path) -> None:
    data_dir = seeded(tmp_path, count=1)
    line = fault_line(graphmem(tmp_path / "target", "restore", str(data_dir)))
    assert "is not a graphmem backup" in line


async def test_restore_refuses_a_data_dir_a_running_server_holds_even_when_forced(
    tmp_path: Path,
) -> None:
    data_dir = seeded(tmp_path, count=2)
    backup = tmp_path / "backup"
    assert graphmem(data_dir, "backup", str(backup)).returncode == 0
    async with legacy_session(data_dir) as session:
        await call(session, "create_entities", one("while-running"))
        done = await anyio.to_thread.run_sync(graphmem, data_dir, "restore", str(backup), "--force")
        line = fault_line(done)
        assert "open in a running graphmem" in line
    names = graphmem(data_dir, "export").stdout
    assert "while-running" in names


def test_backup_refuses_a_destination_that_is_not_empty_or_inside_the_data_dir(
    tmp_path: Path,
) -> None:
    data_dir = seeded(tmp_path, count=1)
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    assert "not an empty folder" in fault_line(graphmem(data_dir, "backup", str(full)))
    assert (full / "keep.txt").read_text() == "mine"
    inside = fault_line(graphmem(data_dir, "backup", str(data_dir / "b")))
    assert "inside the data dir" in inside
    nothing = fault_line(graphmem(tmp_path / "none", "backup", str(tmp_path / "b")))
    assert "no graphmem log" in nothing


def test_dated_backups_keep_the_newest_n_and_touch_nothing_else(tmp_path: Path) -> None:
    data_dir = seeded(tmp_path, count=2)
    into = tmp_path / "backups"
    into.mkdir()
    (into / "notes.txt").write_text("mine")
    (into / "graphmem-by-hand").mkdir()  # no manifest: not one of ours
    taken = []
    for _ in range(3):
        done = graphmem(data_dir, "backup", "--into", str(into), "--keep", "2")
        assert done.returncode == 0, done.stderr
        taken.append(done.stdout.split(": ", 1)[1].split(" holds ")[0])
    assert "removed 1 older backup(s)" in done.stdout
    dated = sorted(str(p) for p in into.iterdir() if (p / MANIFEST).is_file())
    assert dated == sorted(taken[1:])
    assert (into / "notes.txt").read_text() == "mine"
    assert (into / "graphmem-by-hand").is_dir()
    assert "--into" in fault_line(graphmem(data_dir, "backup"))


async def test_serve_takes_scheduled_backups_and_keeps_the_newest(tmp_path: Path) -> None:
    into = tmp_path / "backups"
    log = tmp_path / "server.log"
    with log.open("w") as errlog:
        async with legacy_session(
            tmp_path / "data",
            errlog=errlog,
            GRAPHMEM_LOG_LEVEL="INFO",
            GRAPHMEM_BACKUP_DIR=str(into),
            GRAPHMEM_BACKUP_EVERY_HOURS="0.0002",  # 0.72 s
            GRAPHMEM_BACKUP_KEEP="2",
        ) as session:
            await call(session, "create_entities", one("kept"))
            with anyio.fail_after(120):
                while log.read_text().count('"backup_scheduled_run"') < 3:
                    await anyio.sleep(0.2)  # polling a child's work, bounded above
    runs = [json.loads(line) for line in log.read_text().splitlines() if "backup_scheduled" in line]
    assert all(run["ok"] for run in runs), runs
    dated = [p for p in into.iterdir() if (p / MANIFEST).is_file()]
    assert 1 <= len(dated) <= 2
    newest = max(dated)
    assert manifest_of(newest)["position"] >= 2
