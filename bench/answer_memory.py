"""What a broad answer leaves behind: a real server's RssAnon after broad calls, revision by
revision, and where the process's heap holds it.

Run: python -m bench.answer_memory [--entities 50000] [--revs main,HEAD] [--rounds 3]
     [--skip-stdio] [--heap] [--cpu-reps 6] [--data-dir DIR] [--json PATH]

For bench.dataset's graph of N entities, imported once (`graphmem import`; the store is
copied fresh for every server):

- `stdio`: for each round, each revision in turn (a `git archive` of it; `WT` is the work
  tree), a real `graphmem serve` spawned over stdio (bench.servers) is asked a selective
  `search_nodes` (loaded), then broad `search_nodes`, `read_graph`, broad `search_nodes`,
  `read_graph`: its RssAnon after each (read right after the answer, as bench.compare reads
  RSS), the server's CPU per call (user + system, all threads), and VmHWM at the end;
- `heap` (with --heap): the same calls in process, in a fresh interpreter per revision (the
  real App and tool handler, bench.inprocess; each streamed answer written to a pipe through
  an asyncio StreamWriter as the stdio wire writes it, a thread reading the other end): after
  each call, glibc's heaps (`malloc_info`: each arena's size and free bytes; the main arena
  is the event loop's, the others worker threads'), `mallinfo2`'s totals and pymalloc's
  arenas (`sys._debugmallocstats`), then glibc's mmap threshold as it stands (probed);
- `cpu` (with --cpu-reps K): in process as `heap`, a fresh interpreter per revision, the
  revisions alternating for --rounds rounds: the process's CPU (all threads) per broad
  `search_nodes` and `read_graph`, answer written, K of each after a first pair.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.dataset import COMMON_WORD, unique_token
from bench.emit import emit_figures
from bench.inprocess import served
from bench.machine import load_average
from bench.server_memory import imported_store
from bench.servers import Store, graphmem_source, sample, start
from graphmem.wire.fast_calls import StreamedLine

CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("search_nodes", {"query": COMMON_WORD}),
    ("read_graph", {}),
    ("search_nodes", {"query": COMMON_WORD}),
    ("read_graph", {}),
)
MIB = 1 << 20


def _status_mib(pid: int) -> dict[str, float]:
    parts: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile", "VmHWM"):
            parts[key] = round(int(value.split()[0]) / 1024, 1)
    return parts


def _stdio(store: Path, src: Path | None, workdir: Path, n: int) -> dict[str, Any]:
    data_dir = workdir / "served"
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.copytree(store, data_dir)
    client = start(Store("graphmem", data_dir, 0.0, src), workdir / "serve.stderr.log")
    try:
        client.call("search_nodes", {"query": unique_token(n // 3)})
        # Held by the early reads until the server has loaded: from then on, the server's own.
        client.call("no_such_tool", {})
        client.call("search_nodes", {"query": unique_token(n // 5)})
        figures: dict[str, Any] = {"loaded_anon": _status_mib(client.pid)["RssAnon"], "calls": []}
        for tool, arguments in CALLS:
            before = sample(client.pid).cpu_seconds
            reply = client.call(tool, arguments)
            cpu = sample(client.pid).cpu_seconds - before
            if reply.failed:
                raise RuntimeError(f"{tool} failed: {reply.describe()}")
            anon = _status_mib(client.pid)["RssAnon"]
            figures["calls"].append({"tool": tool, "anon": anon, "cpu_ms": round(cpu * 1000)})
        figures["hwm"] = _status_mib(client.pid)["VmHWM"]
    finally:
        client.close(timeout=120)
    return figures


# --- in process: where the heap holds it ------------------------------------------------------


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            *("arena", "ordblks", "smblks", "hblks", "hblkhd"),
            *("usmblks", "fsmblks", "uordblks", "fordblks", "keepcost"),
        )
    ]


def _heap(libc: ctypes.CDLL) -> dict[str, Any]:
    totals = libc.mallinfo2()
    with tempfile.NamedTemporaryFile(suffix=".xml") as sink:
        stream = libc.fopen(sink.name.encode(), b"w")
        libc.malloc_info(0, ctypes.c_void_p(stream))
        libc.fclose(ctypes.c_void_p(stream))
        xml = Path(sink.name).read_text()
    arenas = []
    for number, body in re.findall(r'<heap nr="(\d+)">(.*?)</heap>', xml, re.S):
        size = re.search(r'<system type="current" size="(\d+)"/>', body)
        free = sum(
            int(s)
            for s in re.findall(r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"/>', body)
        )
        assert size is not None
        if int(size.group(1)) >= MIB:
            arenas.append(
                {"arena": int(number), "mib": _mib(int(size.group(1))), "free_mib": _mib(free)}
            )
    return {
        "heap_mib": _mib(totals.arena),
        "free_held_mib": _mib(totals.fordblks),
        "top_free_mib": _mib(totals.keepcost),
        "mapped_blocks": totals.hblks,
        "arenas_over_1mib": arenas,
        "pymalloc_arenas": _pymalloc_arenas(),
        "anon": _status_mib(os.getpid())["RssAnon"],
    }


def _mib(count: int) -> float:
    return round(count / MIB, 1)


def _pymalloc_arenas() -> int:
    """pymalloc's arenas (1 MiB each) in use: `sys._debugmallocstats` writes them to fd 2."""
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        found = re.search(rb"# arenas allocated current\s*=\s*([\d,]+)", sink.read())
    return int(found.group(1).replace(b",", b"")) if found else -1


def _mmap_threshold(libc: ctypes.CDLL) -> str:
    """glibc's mmap threshold as it stands: the smallest power of two it maps (freeing that
    block raises the threshold to it: read last)."""
    size = 64 * 1024
    while size <= 64 * MIB:
        before = libc.mallinfo2().hblks
        block = libc.malloc(ctypes.c_size_t(size))
        mapped = libc.mallinfo2().hblks > before
        libc.free(ctypes.c_void_p(block))
        if mapped:
            return f"({size // 2048}, {size // 1024}] KiB"
        size *= 2
    return "> 64 MiB"


async def _pipe_writer() -> asyncio.StreamWriter:
    """A StreamWriter on a pipe, as graphmem.wire.stdio_transport opens stdout (the same
    write-ahead), a thread reading the other end as a client would (its own glibc arena)."""
    reading, writing = os.pipe()
    threading.Thread(
        target=lambda: [None for _ in iter(lambda: os.read(reading, MIB), b"")], daemon=True
    ).start()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(writing, "wb", buffering=0)
    )
    transport.set_write_buffer_limits(high=4 * MIB)
    return asyncio.StreamWriter(transport, protocol, None, loop)


async def _answer(call: Any, writer: asyncio.StreamWriter, tool: str, arguments: Any) -> None:
    """One call, its answer written in slices as the stdio wire writes a streamed line."""
    outcome = await call(tool, arguments)
    if outcome.body is not None:
        line = StreamedLine(1, b"", b"", b"", outcome.body)
        for piece in line.pieces():
            writer.write(piece)
            await writer.drain()
        line.close()


async def _in_process(data_dir: Path, n: int) -> dict[str, Any]:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    libc.fopen.restype = ctypes.c_void_p
    libc.malloc.restype = ctypes.c_void_p
    writer = await _pipe_writer()
    figures: dict[str, Any] = {}
    async with served(data_dir) as call:
        await call("search_nodes", {"query": unique_token(n // 3)})
        gc.collect()
        figures["loaded"] = _heap(libc)
        for i, (tool, arguments) in enumerate(CALLS):
            await _answer(call, writer, tool, arguments)
            gc.collect()
            figures[f"{i}:{tool}"] = _heap(libc)
    figures["mmap_threshold"] = _mmap_threshold(libc)
    return figures


async def _cpu(data_dir: Path, n: int, reps: int) -> dict[str, list[float]]:
    """The process's CPU (all threads) per broad call, answer written: `reps` of each after a
    first pair (which makes the lazily built indexes and the relations' keys)."""
    writer = await _pipe_writer()
    times: dict[str, list[float]] = {tool: [] for tool, _ in CALLS[:2]}
    async with served(data_dir) as call:
        await call("search_nodes", {"query": unique_token(n // 3)})
        for rep in range(reps + 1):
            for tool, arguments in CALLS[:2]:
                started = time.process_time()
                await _answer(call, writer, tool, arguments)
                if rep:
                    times[tool].append(round((time.process_time() - started) * 1000, 1))
    return times


def _in_fresh_process(
    mode: list[str], store: Path, src: Path | None, workdir: Path, n: int
) -> dict[str, Any]:
    data_dir = workdir / "in-process"
    shutil.rmtree(data_dir, ignore_errors=True)
    shutil.copytree(store, data_dir)
    env = {**os.environ, "PYTHONPATH": str(src)} if src else None
    # This file run by path (main's tree may not hold it), with graphmem and bench.inprocess
    # from `src` (PYTHONPATH comes before the editable install); -P: not bench/ on sys.path.
    script = Path(__file__).resolve()
    out = subprocess.run(
        [sys.executable, "-P", str(script), "--child", str(data_dir), str(n), *mode],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=src or script.parents[1],
    )
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def measure(
    n: int,
    revs: list[str],
    rounds: int,
    *,
    stdio: bool = True,
    heap: bool = False,
    cpu_reps: int = 0,
    reuse: Path | None = None,
) -> dict[str, Any]:
    figures: dict[str, Any] = {"entities": n, "load_before": load_average(), "revs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        store = imported_store(workdir, n, reuse)
        sources: dict[str, Path | None] = {}
        for rev in revs:
            (workdir / rev).mkdir()
            src, info = graphmem_source(None if rev == "WT" else rev, workdir / rev)
            sources[rev] = src
            figures["revs"][rev] = {"source": info, "stdio": [], "heap": [], "cpu": []}
        for _ in range(rounds if stdio else 0):
            for rev in revs:
                run = _stdio(store, sources[rev], workdir, n)
                figures["revs"][rev]["stdio"].append(run)
                print(rev, json.dumps(run), file=sys.stderr, flush=True)
        if heap:
            for rev in revs:
                found = _in_fresh_process([], store, sources[rev], workdir, n)
                figures["revs"][rev]["heap"].append(found)
                print(rev, json.dumps(found), file=sys.stderr, flush=True)
        for _ in range(rounds if cpu_reps else 0):
            for rev in revs:
                mode = ["cpu", str(cpu_reps)]
                found = _in_fresh_process(mode, store, sources[rev], workdir, n)
                figures["revs"][rev]["cpu"].append(found)
                print(rev, json.dumps(found), file=sys.stderr, flush=True)
    for rev in revs:
        runs = figures["revs"][rev]["stdio"]
        if runs:
            figures["revs"][rev]["summary"] = _summary(runs)
        if cpu_reps:
            figures["revs"][rev]["cpu_summary"] = {
                tool: {
                    "median_ms": statistics.median(t for run in cpu for t in run[tool]),
                    "per_process_medians": [statistics.median(run[tool]) for run in cpu],
                }
                for cpu in (figures["revs"][rev]["cpu"],)
                for tool in cpu[0]
            }
    figures["load_after"] = load_average()
    return figures


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per call position: RssAnon above loaded (min-max) and CPU ms (median, all runs)."""
    rows: dict[str, Any] = {}
    for i, (tool, _) in enumerate(CALLS):
        grown = [run["calls"][i]["anon"] - run["loaded_anon"] for run in runs]
        cpu = [run["calls"][i]["cpu_ms"] for run in runs]
        rows[f"{i}:{tool}"] = {
            "anon_above_loaded_mib": [round(min(grown), 1), round(max(grown), 1)],
            "anon_mib": [
                min(run["calls"][i]["anon"] for run in runs),
                max(run["calls"][i]["anon"] for run in runs),
            ],
            "cpu_ms_median": statistics.median(cpu),
        }
    return rows


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        data_dir, n = Path(argv[1]), int(argv[2])
        if argv[3:4] == ["cpu"]:
            print(json.dumps(asyncio.run(_cpu(data_dir, n, int(argv[4])))))
        else:
            print(json.dumps(asyncio.run(_in_process(data_dir, n))))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=50_000)
    parser.add_argument("--revs", default="main,HEAD", help="comma-separated; WT: the work tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-stdio", action="store_true", help="no real servers")
    parser.add_argument("--heap", action="store_true", help="also the in-process heap figures")
    parser.add_argument(
        "--cpu-reps", type=int, default=0, help="also the in-process CPU A/B: calls per process"
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="an imported store to reuse")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    revs = args.revs.split(",")
    figures = measure(
        args.entities,
        revs,
        args.rounds,
        stdio=not args.skip_stdio,
        heap=args.heap,
        cpu_reps=args.cpu_reps,
        reuse=args.data_dir,
    )
    emit_figures(figures, args.json)


if __name__ == "__main__":
    main()
