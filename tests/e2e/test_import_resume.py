"""`graphmem import` killed halfway (SIGKILL, no chance to clean up) and run again: the second
run imports exactly the rest, and the graph is the one a clean import gives. Into an empty
store the killed run takes the bulk path (graphmem.plain_import); into one that holds a graph
already, the graph writer's commands."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TIMEOUT = 180
ENTITIES = 6000
# tqdm's progress line: "importing:  41%|####1     | 4920/12000 [00:01<00:02, ...]".
PROGRESS = re.compile(rb"(\d+)/(\d+) \[")


def memory_file(path: Path) -> Path:
    """ENTITIES entities (two observations each) then a relation from each to the next."""
    lines = [
        json.dumps(
            {
                "type": "entity",
                "name": f"entity-{i:05d}",
                "entityType": "thing",
                "observations": [f"number {i}", 'imported "quoted"\nover two lines'],
            },
            separators=(",", ":"),
        )
        for i in range(ENTITIES)
    ]
    lines += [
        json.dumps(
            {
                "type": "relation",
                "from": f"entity-{i:05d}",
                "to": f"entity-{(i + 1) % ENTITIES:05d}",
                "relationType": "precedes",
            },
            separators=(",", ":"),
        )
        for i in range(ENTITIES)
    ]
    path.write_text("\n".join(lines))
    return path


def env() -> dict[str, str]:
    found = {**os.environ, "GRAPHMEM_LOG_LEVEL": "WARNING"}
    found.pop("GRAPHMEM_DIR", None)
    # tqdm's own settings: a progress line after every batch, however fast, so the test sees
    # the import advance batch by batch (its default shows one every 0.1 s at most).
    found.update(TQDM_MININTERVAL="0", TQDM_MINITERS="1")
    return found


def graphmem(data_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args]
    return subprocess.run(argv, capture_output=True, env=env(), timeout=TIMEOUT, check=False)


def import_killed_at(data_dir: Path, source: Path, low: float, high: float) -> int:
    """Start an import and SIGKILL it once its progress bar shows a share of the records in
    [low, high); returns the records the bar had shown done."""
    argv = [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "import"]
    child = subprocess.Popen(
        [*argv, str(source), "--batch-size", "100"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env(),
    )
    assert child.stderr is not None
    deadline = time.monotonic() + TIMEOUT
    seen = b""
    try:
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no progress in [{low}, {high}) within {TIMEOUT} s: {seen[-500:]!r}"
            ready, _, _ = select.select([child.stderr], [], [], left)
            if not ready:
                continue
            chunk = os.read(child.stderr.fileno(), 65536)
            assert chunk, f"the import ended before the bar reached {low:.0%}: {seen[-500:]!r}"
            seen += chunk
            shown = PROGRESS.findall(seen)
            if shown:
                done, total = (int(n) for n in shown[-1])
                assert done / total < high, f"the bar jumped past {high:.0%}: {seen[-500:]!r}"
                if done / total >= low:
                    child.send_signal(signal.SIGKILL)
                    break
    finally:
        child.kill()
        child.wait(timeout=TIMEOUT)
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    return done


def counts(summary: str, what: str) -> tuple[int, int]:
    found = re.search(rf"{what}:\s+(\d+) (?:created|added), (\d+) already present", summary)
    assert found is not None, summary
    return int(found.group(1)), int(found.group(2))


def prefill(data_dir: Path, tmp_path: Path) -> None:
    """A store that holds a graph already: one entity the memory file lacks."""
    other = tmp_path / "other.jsonl"
    other.write_text('{"type":"entity","name":"elsewhere","entityType":"place","observations":[]}')
    assert graphmem(data_dir, "import", str(other)).returncode == 0


@pytest.mark.parametrize("prefilled", [False, True], ids=["empty-store", "store-with-a-graph"])
@pytest.mark.parametrize(
    ("low", "high"),
    [(0.15, 0.45), (0.6, 0.95)],
    ids=["while-creating-entities", "while-creating-relations"],
)
def test_an_import_killed_halfway_then_run_again_gives_the_graph_of_a_clean_import(
    tmp_path: Path, low: float, high: float, prefilled: bool
) -> None:
    source = memory_file(tmp_path / "memory.jsonl")
    clean_dir, killed_dir = tmp_path / "clean", tmp_path / "killed"
    if prefilled:
        prefill(clean_dir, tmp_path)
        prefill(killed_dir, tmp_path)
    clean = graphmem(clean_dir, "import", str(source))
    assert clean.returncode == 0, clean.stderr.decode()

    shown_done = import_killed_at(killed_dir, source, low, high)
    rerun = graphmem(killed_dir, "import", str(source))

    assert rerun.returncode == 0, rerun.stderr.decode()
    summary = rerun.stdout.decode()
    entities_created, entities_present = counts(summary, "entities")
    relations_created, relations_present = counts(summary, "relations")
    # What the killed run committed is kept and not imported again; the rest is imported.
    assert entities_created + entities_present == ENTITIES
    assert relations_created + relations_present == ENTITIES
    assert entities_present + relations_present >= shown_done
    assert entities_created + relations_created > 0
    assert "problems:     0" in summary
    assert counts(summary, "observations")[0] == 2 * entities_created
    clean_export = graphmem(clean_dir, "export")
    resumed_export = graphmem(killed_dir, "export")
    assert clean_export.returncode == resumed_export.returncode == 0
    assert resumed_export.stdout == clean_export.stdout
    assert clean_export.stdout.count(b"\n") == 2 * ENTITIES - 1 + prefilled


def test_importing_a_resumed_import_again_changes_nothing(tmp_path: Path) -> None:
    source = memory_file(tmp_path / "memory.jsonl")
    data_dir = tmp_path / "data"
    import_killed_at(data_dir, source, 0.3, 0.7)
    assert graphmem(data_dir, "import", str(source)).returncode == 0
    before = graphmem(data_dir, "export").stdout

    again = graphmem(data_dir, "import", str(source))

    assert again.returncode == 0, again.stderr.decode()
    assert counts(again.stdout.decode(), "entities") == (0, ENTITIES)
    assert counts(again.stdout.decode(), "relations") == (0, ENTITIES)
    assert graphmem(data_dir, "export").stdout == before
