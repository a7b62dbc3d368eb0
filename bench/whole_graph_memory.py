"""Peak memory of one whole-graph answer: what a `read_graph` at N entities costs the server
beyond the graph it holds (issue 21, item 3: "at 1M ... report peak RSS during the call").

For each N, seeds a store (as bench.compare does), starts the server, asks one selective
search (everything loaded and warm), then resets the kernel's peak-RSS mark
(/proc/PID/clear_refs, 5) and times one `read_graph` (and one broad `search_nodes`), reading
VmHWM after each: the peak during the call, whatever the sampling could miss. Linux only.

    python -m bench.whole_graph_memory --sizes 50000,1000000
    python -m bench.whole_graph_memory --sizes 50000 --official   # the official server too
    python -m bench.whole_graph_memory --sizes 1000000 --keep /var/tmp/wgm  # seed once, reuse
    python -m bench.whole_graph_memory --sizes 50000 --http sse,json,sse-whole   # over HTTP too
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

from bench.dataset import COMMON_WORD, unique_token, write_jsonl
from bench.machine import load_average, machine_facts
from bench.rpc import base_env
from bench.servers import ServerName, Store, sample, seed, start

RESULTS = Path(__file__).resolve().parent / "results"
MB = 2**20
WARM_UP_SECONDS = 900.0


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def seeded(server: ServerName, n: int, root: Path, *, reuse: bool) -> Store:
    """A store of the benchmark's graph of `n` entities: seeded under `root`, or, with `reuse`,
    the one a run before seeded there (at a million entities the import takes minutes)."""
    workdir = root / f"{server}-{n}"
    if reuse:
        found = workdir / ("memory.jsonl" if server == "official" else "graphmem-data")
        if found.exists():
            return Store(server, found, 0.0)
    jsonl = root / f"graph-{n}.jsonl"
    write_jsonl(jsonl, n)
    try:
        return seed(server, jsonl, workdir, root / "seed.log")
    finally:
        jsonl.unlink()


def measure(server: ServerName, n: int, root: Path, *, reuse: bool = False) -> dict[str, Any]:
    store = seeded(server, n, root, reuse=reuse)
    client = start(store, root / f"{server}-{n}.stderr.log")
    try:
        # At 1M the first search may outlast the server's 60 s call bound on a loaded
        # machine (its search index is built on first use): asked again, bounded.
        deadline = time.monotonic() + WARM_UP_SECONDS
        while (reply := client.call("search_nodes", {"query": unique_token(0)})).failed:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{server}: search failed: {reply.describe()}")
        steady = sample(client.pid)
        row: dict[str, Any] = {"server": server, "n": n, "rss_before_mb": steady.rss_bytes / MB}
        for label, tool, arguments in (
            ("read_graph", "read_graph", {}),
            ("search_nodes_broad", "search_nodes", {"query": COMMON_WORD}),
        ):
            before = sample(client.pid)
            _reset_peak(client.pid)
            started = time.perf_counter()
            answer = client.call(tool, arguments)
            seconds = time.perf_counter() - started
            after = sample(client.pid)
            if answer.failed:
                raise RuntimeError(f"{server}: {tool} failed: {answer.describe()}")
            row[label] = {
                "seconds": round(seconds, 3),
                "rss_before_mb": round(before.rss_bytes / MB, 1),
                "peak_mb": round(after.peak_rss_bytes / MB, 1),
                "peak_over_before_mb": round((after.peak_rss_bytes - before.rss_bytes) / MB, 1),
                "rss_after_mb": round(after.rss_bytes / MB, 1),
                "reply_mb": round(answer.size / MB, 1),
            }
        return row
    finally:
        client.close(timeout=600)


HTTP_PORT = 18765
PROTOCOL_VERSION = "2025-06-18"
HELLO: dict[str, Any] = {
    "protocolVersion": PROTOCOL_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "graphmem-bench", "version": "1"},
}


# Over streamable HTTP: the answer streamed as an SSE event or a JSON body, or (`whole`) the
# SDK's own path with the whole result built, as before issue 21's HTTP streaming.
HTTP_MODES: dict[str, dict[str, str]] = {
    "sse": {},
    "json": {"GRAPHMEM_HTTP_JSON_RESPONSE": "1"},
    "sse-whole": {"GRAPHMEM_FAST_CALLS": "0"},
}


def measure_http(n: int, root: Path, mode: str, *, reuse: bool = False) -> dict[str, Any]:
    """One read_graph and one broad search over streamable HTTP in `mode`: their peak RSS."""
    store = seeded("graphmem", n, root, reuse=reuse)
    env = base_env(GRAPHMEM_DIR=str(store.path), GRAPHMEM_LOG_LEVEL="WARNING", **HTTP_MODES[mode])
    address = f"127.0.0.1:{HTTP_PORT}"
    row: dict[str, Any] = {"server": f"graphmem-http-{mode}", "n": n}
    with (root / "http.stderr.log").open("ab") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-m", "graphmem", "serve", "--http", address], env=env, stderr=stderr
        )
    try:
        post = _http_client(f"http://{address}/mcp")
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        selective = {"name": "search_nodes", "arguments": {"query": unique_token(0)}}
        post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": selective})
        row["rss_before_mb"] = round(sample(server.pid).rss_bytes / MB, 1)
        for number, (label, tool, arguments) in enumerate(
            (
                ("read_graph", "read_graph", {}),
                ("search_nodes_broad", "search_nodes", {"query": COMMON_WORD}),
            )
        ):
            before = sample(server.pid)
            _reset_peak(server.pid)
            started = time.perf_counter()
            call = {"name": tool, "arguments": arguments}
            size = len(
                post({"jsonrpc": "2.0", "id": 3 + number, "method": "tools/call", "params": call})
            )
            seconds = time.perf_counter() - started
            after = sample(server.pid)
            row[label] = {
                "seconds": round(seconds, 3),
                "rss_before_mb": round(before.rss_bytes / MB, 1),
                "peak_mb": round(after.peak_rss_bytes / MB, 1),
                "peak_over_before_mb": round((after.peak_rss_bytes - before.rss_bytes) / MB, 1),
                "rss_after_mb": round(after.rss_bytes / MB, 1),
                "reply_mb": round(size / MB, 1),
            }
    finally:
        server.terminate()
        server.wait(600)
    return row


def _http_client(url: str) -> Callable[[dict[str, Any]], bytes]:
    """POST a JSON-RPC message in the session `initialize` (sent first, retried while the
    server starts) opens; returns the response body."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def post(message: dict[str, Any]) -> bytes:
        request = Request(url, data=json.dumps(message).encode(), headers=headers, method="POST")
        with urlopen(request, timeout=WARM_UP_SECONDS) as response:
            if "mcp-session-id" in response.headers:
                headers["mcp-session-id"] = response.headers["mcp-session-id"]
                headers["mcp-protocol-version"] = PROTOCOL_VERSION
            body: bytes = response.read()
            return body

    deadline = time.monotonic() + WARM_UP_SECONDS
    while True:
        try:
            post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO})
            return post
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)  # the server is still loading the graph


def report(results: dict[str, Any]) -> str:
    lines = [
        "Peak RSS during one whole-graph answer (VmHWM reset just before the call; load "
        f"average before {results['load_before']}, after {results['load_after']}).",
        "",
        "| server | entities | call | seconds | RSS before | peak during the call | "
        "peak - before | reply line |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        for label in ("read_graph", "search_nodes_broad"):
            if label not in row:
                continue
            cell = row[label]
            lines.append(
                f"| {row['server']} | {row['n']:,} | {label} | {cell['seconds']:.2f} s | "
                f"{cell['rss_before_mb']:,.0f} MB | {cell['peak_mb']:,.0f} MB | "
                f"{cell['peak_over_before_mb']:,.0f} MB | {cell['reply_mb']:,.0f} MB |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50000,1000000", help="entities, comma-separated")
    parser.add_argument("--official", action="store_true", help="measure the official too")
    parser.add_argument("--out", type=Path, default=RESULTS / "whole_graph_memory.json")
    parser.add_argument(
        "--http",
        default="",
        help=f"graphmem over HTTP too, in modes (comma-separated): {', '.join(HTTP_MODES)}",
    )
    parser.add_argument("--no-stdio", action="store_true", help="measure over HTTP only")
    parser.add_argument(
        "--keep", type=Path, help="seed the stores in this dir and reuse them in later runs"
    )
    args = parser.parse_args()
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    servers: tuple[ServerName, ...] = ("graphmem", "official") if args.official else ("graphmem",)
    results: dict[str, Any] = {"load_before": load_average(), "machine": machine_facts()}
    rows = []
    with contextlib.ExitStack() as stack:
        if args.keep is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="graphmem-wgm-")))
        else:
            root = args.keep
            root.mkdir(parents=True, exist_ok=True)
        modes = [mode for mode in args.http.split(",") if mode]
        for n in sizes:
            for server in () if args.no_stdio else servers:
                rows.append(measure(server, n, root, reuse=args.keep is not None))
                print(json.dumps(rows[-1]), flush=True)
            for mode in modes:
                rows.append(measure_http(n, root, mode, reuse=True))
                print(json.dumps(rows[-1]), flush=True)
    results.update(rows=rows, load_after=load_average())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    table = report(results)
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
