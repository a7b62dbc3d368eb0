"""What a served store of N entities holds, model by model, and the RSS of a real server on it.

Run: python -m bench.server_memory [--entities 50000] [--json PATH] [--data-dir DIR]
     [--skip-serve] [--skip-models] [--skip-mcp]   (at 1M: --skip-models --skip-mcp)

For bench.dataset's graph of N entities (three observations and one relation each):

- `serve_import`: the store filled by `graphmem import`, then a real `graphmem serve` spawned on
  it (stdio, bench.servers): its RSS (what a user's client sees) at the first answer (which the
  early reads may give before the server has loaded), once loaded (after a selective
  `search_nodes`), and after one broad `search_nodes`; again with the early reads off;
- `models_import`: the same store opened in-process as the server opens it (bench.inprocess:
  the real App), one selective search answered; tracemalloc's live bytes grouped by the module
  that allocated them (the graph's records, the search index, the conflicts model, ...), per
  entity;
- `lazy_models_import`: the models folded only when a query first reads them (conflicts,
  history), folded from that store's log, traced;
- `serve_mcp`: a real server on an empty store filled through MCP calls over stdio (batches
  of 200), its RSS once filled and after a broad search, then a fresh server on that store;
- `models_mcp`: a fresh store filled in-process through MCP `create_entities` and
  `create_relations` calls (batches of 200, as an agent's bulk writes come), then the same
  grouping: the graph as live writes leave it (folded, not restored).

Each in-process figure runs in a fresh interpreter so one does not inherit another's arenas.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import random
import subprocess
import sys
import tempfile
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.dataset import COMMON_WORD, entity_record, relation_record, unique_token, write_jsonl
from bench.emit import emit_figures
from bench.inprocess import served
from bench.machine import load_average
from bench.servers import Store, start
from eventstore.lmdb_log import LmdbEventLog
from projections.conflicts import ConflictsProjection
from projections.history import HistoryProjection

MIB = 1 << 20
BATCH = 200
_REPOSITORY = str(Path(__file__).resolve().parents[1]) + "/"  # cut from the lines shown
TOP = 14


def _grouped(snapshot: tracemalloc.Snapshot, n: int) -> list[dict[str, Any]]:
    """Live bytes by allocating module (the innermost frame inside the repository)."""
    by_file: dict[str, int] = defaultdict(int)
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename
        for root in ("projections/", "actors/", "eventstore/", "graphmem/", "site-packages/"):
            if root in name:
                name = root + name.split(root, 1)[1]
                break
        by_file[name] += stat.size
    rows = sorted(by_file.items(), key=lambda item: -item[1])[:TOP]
    return [
        {"module": name, "mib": round(size / MIB, 2), "bytes_per_entity": round(size / n, 1)}
        for name, size in rows
    ]


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / MIB


async def _models(data_dir: Path, n: int, fill: bool) -> dict[str, Any]:
    tracemalloc.start(1)
    async with served(data_dir) as call:
        if fill:
            rng = random.Random(0)
            for start in range(0, n, BATCH):
                batch = [entity_record(i, rng) for i in range(start, min(n, start + BATCH))]
                await call("create_entities", {"entities": [_entity_arg(r) for r in batch]})
            for start in range(0, n, BATCH):
                relations = [
                    _relation_arg(relation_record(i, n, rng))
                    for i in range(start, min(n, start + BATCH))
                ]
                await call("create_relations", {"relations": relations})
        await call("search_nodes", {"query": unique_token(n // 2)})
        await call("search_nodes", {"query": COMMON_WORD, "limit": 1})
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        traced = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        rss = _rss_mib()
    return {
        "rss_mib": round(rss, 1),
        "traced_mib": round(traced / MIB, 1),
        "traced_bytes_per_entity": round(traced / n, 1),
        "by_module": _grouped(snapshot, n),
        "by_line": [
            {
                "line": str(stat.traceback[0]).split(_REPOSITORY)[-1],
                "bytes_per_entity": round(stat.size / n, 1),
                "count": stat.count,
            }
            for stat in snapshot.statistics("lineno")[:TOP]
        ],
    }


def _lazy_models(data_dir: Path, n: int) -> dict[str, Any]:
    """The models a served process folds only when a query first reads them (the conflicts
    model: `list_conflicts`; the history: the provenance tools), each folded from the whole
    log as that first query does, its live bytes traced."""
    figures: dict[str, Any] = {}
    log = LmdbEventLog.open(data_dir)
    try:
        for kind in (ConflictsProjection, HistoryProjection):
            gc.collect()
            tracemalloc.start(1)
            model = kind()
            stream = log.read_from(1)
            while chunk := list(itertools.islice(stream, 4096)):
                model.apply_all(chunk)
            del chunk, stream
            gc.collect()
            traced = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            figures[kind.__name__] = {
                "traced_mib": round(traced / MIB, 1),
                "bytes_per_entity": round(traced / n, 1),
            }
            del model
    finally:
        log.close()
    return figures


def _entity_arg(record: dict[str, object]) -> dict[str, object]:
    return {k: record[k] for k in ("name", "entityType", "observations")}


def _relation_arg(record: dict[str, object]) -> dict[str, object]:
    return {k: record[k] for k in ("from", "to", "relationType")}


def _in_fresh_process(mode: str, data_dir: Path, n: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.server_memory", "--child", mode, str(data_dir), str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def _status_mib(pid: int) -> dict[str, float]:
    """The kernel's resident figures: RssAnon is the heap (what the process holds), RssFile
    mapped files (the LMDB log and libraries: the page cache, reclaimable)."""
    parts: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            parts[key] = round(int(value.split()[0]) / 1024, 1)
    return parts


def _serve(data_dir: Path, workdir: Path, n: int, **env: str) -> dict[str, Any]:
    client = start(Store("graphmem", data_dir, 0.0), workdir / "serve.stderr.log", **env)
    try:
        client.call("search_nodes", {"query": unique_token(n // 2)})
        early = _status_mib(client.pid)
        # A call the early reads hold (an unknown tool) is answered by the server once it has
        # loaded: what it holds from then on, not the start-up's early graph alone.
        client.call("no_such_tool", {})
        client.call("search_nodes", {"query": unique_token(n // 3)})
        loaded = _status_mib(client.pid)
        client.call("search_nodes", {"query": COMMON_WORD})
        broad = _status_mib(client.pid)
    finally:
        client.close(timeout=120)
    return {
        "first_answer": early,
        "loaded_selective_search": loaded,
        "after_broad_search": broad,
        "bytes_per_entity_loaded": round(loaded["VmRSS"] * MIB / n, 1),
    }


def _serve_filled_by_mcp(workdir: Path, n: int) -> dict[str, Any]:
    """A real server on an empty store, filled through MCP calls over stdio (batches of 200
    entities, then of 200 relations), then asked a selective search: its RSS then, and after
    a broad search; then a fresh server on that store (restored from its checkpoint)."""
    data_dir = workdir / "mcp-stdio"
    client = start(Store("graphmem", data_dir, 0.0), workdir / "serve-mcp.stderr.log")
    try:
        rng = random.Random(0)
        for begin in range(0, n, BATCH):
            batch = [entity_record(i, rng) for i in range(begin, min(n, begin + BATCH))]
            client.call("create_entities", {"entities": [_entity_arg(r) for r in batch]})
        for begin in range(0, n, BATCH):
            relations = [
                _relation_arg(relation_record(i, n, rng))
                for i in range(begin, min(n, begin + BATCH))
            ]
            client.call("create_relations", {"relations": relations})
        client.call("search_nodes", {"query": unique_token(n // 3)})
        filled = _status_mib(client.pid)
        client.call("search_nodes", {"query": COMMON_WORD})
        broad = _status_mib(client.pid)
    finally:
        client.close(timeout=120)
    return {
        "filled_selective_search": filled,
        "after_broad_search": broad,
        "bytes_per_entity_filled": round(filled["VmRSS"] * MIB / n, 1),
        "restarted": _serve(data_dir, workdir, n),
    }


def imported_store(workdir: Path, n: int, reuse: Path | None) -> Path:
    """A store of bench.dataset's N entities filled by `graphmem import`: `reuse` if it holds
    one already (building 1M takes minutes; a server does not change an imported store it
    only reads), else built there (or in `workdir`). Give a copy if the tree's graph version
    differs from the one that wrote it: the server would rewrite its checkpoint."""
    data_dir = reuse if reuse is not None else workdir / "imported"
    if (data_dir / "data.mdb").exists():
        return data_dir
    jsonl = workdir / "graph.jsonl"
    write_jsonl(jsonl, n)
    subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "import", str(jsonl)],
        check=True,
        capture_output=True,
    )
    jsonl.unlink()
    return data_dir


def measure(
    n: int,
    *,
    serve: bool = True,
    models: bool = True,
    mcp: bool = True,
    reuse: Path | None = None,
) -> dict[str, Any]:
    figures: dict[str, Any] = {"entities": n, "load_before": load_average()}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        data_dir = imported_store(workdir, n, reuse)
        if serve:
            figures["serve_import"] = _serve(data_dir, workdir, n)
            figures["serve_import_early_reads_off"] = _serve(
                data_dir, workdir, n, GRAPHMEM_EARLY_READS="0"
            )
        if models:
            figures["models_import"] = _in_fresh_process("open", data_dir, n)
            figures["lazy_models_import"] = _in_fresh_process("lazy", data_dir, n)
        if mcp:
            figures["serve_mcp"] = _serve_filled_by_mcp(workdir, n)
            if models:
                figures["models_mcp"] = _in_fresh_process("fill", workdir / "mcp", n)
    figures["load_after"] = load_average()
    return figures


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        mode, data_dir, n = argv[1], Path(argv[2]), int(argv[3])
        if mode == "lazy":
            print(json.dumps(_lazy_models(data_dir, n)))
        else:
            print(json.dumps(asyncio.run(_models(data_dir, n, fill=mode == "fill"))))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=50_000)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--skip-serve", action="store_true")
    parser.add_argument("--skip-models", action="store_true", help="no in-process breakdown")
    parser.add_argument("--skip-mcp", action="store_true")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="an imported store to reuse (built if absent)"
    )
    args = parser.parse_args(argv)
    figures = measure(
        args.entities,
        serve=not args.skip_serve,
        models=not args.skip_models,
        mcp=not args.skip_mcp,
        reuse=args.data_dir,
    )
    emit_figures(figures, args.json)


if __name__ == "__main__":
    main()
