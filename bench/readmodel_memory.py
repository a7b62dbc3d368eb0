"""Read-model memory: what the graph, the search index and the imported modules take, measured.

Run: python -m bench.readmodel_memory [--entities 50000] [--trace] [--json PATH]

Each figure is an RSS difference in this process (or a fresh one), for bench.dataset's graph of
N entities (three observations and one relation each):

- `imports_*`: a fresh interpreter importing the MCP SDK alone and the whole server (the floor
  every server process pays before holding any data);
- `graph_folded`: the graph folded from envelopes as a replay or live writes hand them over
  (decoded from msgpack, so every string is the envelope's own copy; every event its own
  clock reading, as separate MCP calls give);
- `search_index`: the search index built over that graph;
- `graph_restored`: a fresh process restoring the graph from the folded one's snapshot (what a
  start from a checkpoint holds: occurrences kept encoded, stamps and strings shared).

With `--trace`, tracemalloc's top allocation sites of the fold (slower) are printed too.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.dataset import entity_record, relation_record
from bench.log_data import host_facts
from eventstore.events import (
    AnyEvent,
    EntityCreated,
    Envelope,
    ObservationAdded,
    RelationCreated,
    decode_envelope,
    encode_envelope,
)
from projections.graph import GraphProjection
from projections.search import SearchProjection

MIB = 1 << 20


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / MIB


def _events(n: int) -> Iterator[AnyEvent]:
    rng = random.Random(0)
    for i in range(n):
        record = entity_record(i, rng)
        name = str(record["name"])
        yield EntityCreated(name=name, entity_type=str(record["entityType"]))
        for content in record["observations"]:  # type: ignore[attr-defined]
            yield ObservationAdded(entity=name, content=content)
    for i in range(n if n >= 2 else 0):
        relation = relation_record(i, n, rng)
        yield RelationCreated(
            from_entity=str(relation["from"]),
            to_entity=str(relation["to"]),
            relation_type=str(relation["relationType"]),
        )


def envelopes(n: int) -> Iterator[Envelope]:
    """The data set's events as a log replay hands them over: decoded, a stamp each."""
    hlc = 1_700_000_000_000 << 16
    for position, event in enumerate(_events(n), 1):
        envelope = Envelope(
            position=position,
            origin="0f3c9a6e-1b2d-4c5e-8f70-123456789abc",
            origin_seq=position,
            hlc=hlc + position,
            tx=position,
            event=event,
        )
        yield decode_envelope(encode_envelope(envelope))


def _fresh_rss(code: str) -> float:
    """RSS (MiB) of a fresh interpreter once it has run `code`."""
    probe = f"{code}\nimport gc; gc.collect()\nprint(open('/proc/self/statm').read().split()[1])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) * 4096 / MIB


def _restored_rss(snapshot: Path) -> float:
    code = (
        "from projections.graph import GraphProjection\n"
        "import gc\n"
        f"data = open({str(snapshot)!r}, 'rb').read()\n"
        "before = int(open('/proc/self/statm').read().split()[1])\n"
        "graph = GraphProjection.from_snapshot(data)\n"
        "del data; gc.collect()\n"
        "print(int(open('/proc/self/statm').read().split()[1]) - before)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) * 4096 / MIB


def measure(n: int, *, trace: bool = False) -> dict[str, Any]:
    floor = _fresh_rss("pass")
    figures: dict[str, Any] = {
        "entities": n,
        "imports_interpreter_mib": floor,
        "imports_mcp_sdk_mib": _fresh_rss("import mcp.server.lowlevel"),
        "imports_server_mib": _fresh_rss("import graphmem.server"),
    }
    start = rss_mib()
    if trace:
        tracemalloc.start()
    graph = GraphProjection()
    stream = envelopes(n)
    while chunk := list(itertools.islice(stream, 1024)):
        graph.apply_all(chunk)
    if trace:
        for stat in tracemalloc.take_snapshot().statistics("lineno")[:12]:
            print(stat)
        tracemalloc.stop()
    gc.collect()
    folded = rss_mib()
    search = SearchProjection()
    search.note_names(list(graph.state.entities))
    search.search(graph, "no such text")
    gc.collect()
    searched = rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "graph.snapshot"
        snapshot.write_bytes(graph.to_snapshot())
        figures["graph_snapshot_bytes"] = snapshot.stat().st_size
        restored = _restored_rss(snapshot)
    for name, mib in (
        ("graph_folded", folded - start),
        ("search_index", searched - folded),
        ("graph_restored", restored),
    ):
        figures[f"{name}_mib"] = mib
        figures[f"{name}_bytes_per_entity"] = mib * MIB / n
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=50_000)
    parser.add_argument("--trace", action="store_true", help="tracemalloc's top sites of the fold")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = measure(args.entities, trace=args.trace)
    for key, value in figures.items():
        print(f"{key:36} {value:14.1f}" if isinstance(value, float) else f"{key:36} {value:14}")
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": host_facts(), "memory": figures}, indent=2))


if __name__ == "__main__":
    main()
