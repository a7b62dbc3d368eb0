"""Reports from one comparison run: the target checks, the markdown tables and the chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display here

import matplotlib.pyplot as plt

from bench.workload import OPERATIONS

MB = 1024 * 1024
FLAT_OPERATIONS = ("create_entities", "add_observations", "open_nodes", "search_nodes_selective")
LABELS = {
    "search_nodes_selective": "search_nodes (selective)",
    "search_nodes_broad": "search_nodes (broad)",
}


def label(operation: str) -> str:
    return LABELS.get(operation, operation)


def _by_size(results: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {row["n"]: row["servers"] for row in results["sizes"]}


def _p50(servers: dict[str, Any], server: str, operation: str) -> float | None:
    cell = servers.get(server, {}).get("ops", {}).get(operation)
    return None if cell is None else float(cell["p50_ms"])


def _ratio_check(
    sizes: dict[int, dict[str, Any]], n: int, operation: str, limit: float, name: str
) -> dict[str, Any]:
    servers = sizes.get(n, {})
    ours, theirs = _p50(servers, "graphmem", operation), _p50(servers, "official", operation)
    if ours is None or theirs is None:
        return {"target": name, "passed": None, "detail": f"not measured (no N={n:,} run)"}
    ratio = ours / theirs
    return {
        "target": name,
        "passed": ratio <= limit,
        "ratio": ratio,
        "limit": limit,
        "detail": f"graphmem {ours:.3f} ms / official {theirs:.3f} ms = {ratio:.4f} "
        f"({_times(ratio)}); limit {limit:.4g}",
    }


def _times(ratio: float) -> str:
    return f"{1 / ratio:.1f}x faster" if ratio < 1 else f"{ratio:.2f}x slower"


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, judged on ratios measured in this run."""
    sizes = _by_size(results)
    checks = [
        _ratio_check(
            sizes,
            50_000,
            "create_entities",
            1 / 50,
            "create_entities p50 at 50k <= 1/50 of official",
        ),
        _ratio_check(
            sizes,
            50_000,
            "search_nodes_selective",
            1 / 20,
            "search_nodes p50 at 50k <= 1/20 of official (judged on the selective query)",
        ),
    ]
    broad = _ratio_check(
        sizes,
        50_000,
        "search_nodes_broad",
        1 / 20,
        "search_nodes (broad) p50 at 50k, reported only",
    )
    broad["passed"] = None if broad.get("ratio") is None else broad["passed"]
    broad["informational"] = True
    checks.append(broad)
    for operation in FLAT_OPERATIONS:
        small = _p50(sizes.get(1_000, {}), "graphmem", operation)
        large = _p50(sizes.get(1_000_000, {}), "graphmem", operation)
        name = f"graphmem {label(operation)} p50 at 1M within 1.5x of its p50 at 1k"
        if small is None or large is None:
            checks.append({"target": name, "passed": None, "detail": "not measured (no 1M run)"})
            continue
        checks.append(
            {
                "target": name,
                "passed": large / small <= 1.5,
                "ratio": large / small,
                "limit": 1.5,
                "detail": f"{large:.3f} ms at 1M / {small:.3f} ms at 1k = {large / small:.2f}x",
            }
        )
    for operation in OPERATIONS:
        checks.append(
            _ratio_check(sizes, 0, operation, 1.2, f"{label(operation)} at N=0 <= 1.2x official")
        )
    lost = [row for row in results.get("lost_writes", []) if row["server"] == "graphmem"]
    if lost:
        total = sum(sum(row["lost"]) for row in lost)
        errors = sum(sum(row["error_replies"]) for row in lost)
        checks.append(
            {
                "target": "zero lost writes for graphmem",
                "passed": total == 0 and errors == 0,
                "detail": f"{total} lost, {errors} error replies over "
                + ", ".join(f"{row['scenario']} x{len(row['found'])}" for row in lost),
            }
        )
    return checks


def _verdict(check: dict[str, Any]) -> str:
    if check.get("informational"):
        return "info"
    return {True: "PASS", False: "FAIL", None: "n/a"}[check["passed"]]


def target_lines(checks: list[dict[str, Any]]) -> list[str]:
    return [f"[{_verdict(c)}] {c['target']}: {c['detail']}" for c in checks]


def _cell(servers: dict[str, Any], server: str, operation: str) -> str:
    cell = servers.get(server, {}).get("ops", {}).get(operation)
    if cell is None:
        return "—"
    errors = f" ({cell['errors']} err)" if cell["errors"] else ""
    return f"{cell['p50_ms']:.2f} / {cell['p95_ms']:.2f}{errors}"


def _cpu(servers: dict[str, Any], server: str, operation: str) -> str:
    cell = servers.get(server, {}).get("ops", {}).get(operation)
    return "—" if cell is None else f"{cell['cpu_ms_per_call']:.2f}"


def _latency_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| N | operation | calls (g/o) | graphmem p50 / p95 ms | official p50 / p95 ms "
        "| ratio p50 g/o | graphmem CPU ms/call | official CPU ms/call |",
        "|---:|---|---|---|---|---:|---:|---:|",
    ]
    for row in results["sizes"]:
        servers = row["servers"]
        for operation in OPERATIONS:
            ours, theirs = (_p50(servers, s, operation) for s in ("graphmem", "official"))
            ratio = f"{ours / theirs:.3f}" if ours is not None and theirs else "—"
            calls = "/".join(
                str(servers[s]["ops"][operation]["calls"]) if s in servers else "—"
                for s in ("graphmem", "official")
            )
            cells = [_cell(servers, s, operation) for s in ("graphmem", "official")]
            cpus = [_cpu(servers, s, operation) for s in ("graphmem", "official")]
            lines.append(
                f"| {row['n']:,} | {label(operation)} | {calls} | {cells[0]} | {cells[1]} "
                f"| {ratio} | {cpus[0]} | {cpus[1]} |"
            )
    return lines


def _pair(servers: dict[str, Any], key: str, scale: float, fmt: str) -> str:
    values = [servers[s][key] / scale if s in servers else None for s in ("graphmem", "official")]
    return " / ".join("—" if v is None else format(v, fmt) for v in values)


def _size_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| N | JSONL MB | graphmem import s | graphmem data MB | startup ms (g / o) "
        "| first call ms (g / o) | RSS after writes MB (g / o) | peak RSS MB (g / o) |",
        "|---:|---:|---:|---:|---|---|---|---|",
    ]
    for row in results["sizes"]:
        servers = row["servers"]
        ours = servers["graphmem"]
        lines.append(
            f"| {row['n']:,} | {row['dataset']['bytes'] / MB:.1f} | {ours['seed_seconds']:.1f} "
            f"| {ours['disk_bytes_before'] / MB:.1f} | {_pair(servers, 'startup_ms', 1, '.0f')} "
            f"| {_pair(servers, 'first_call_ms', 1, '.1f')} "
            f"| {_pair(servers, 'rss_bytes_after_writes', MB, '.0f')} "
            f"| {_pair(servers, 'peak_rss_bytes', MB, '.0f')} |"
        )
    return lines


def _lost_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| scenario | server | pre-loaded | expected | found (per run) | lost (per run) "
        "| error replies |",
        "|---|---|---:|---:|---|---|---|",
    ]
    for row in results.get("lost_writes", []):
        lines.append(
            f"| {row['scenario']} | {row['server']} | {row['preloaded']:,} | {row['expected']} "
            f"| {', '.join(map(str, row['found']))} | {', '.join(map(str, row['lost']))} "
            f"| {', '.join(map(str, row['error_replies']))} |"
        )
    return lines


def _source_line(results: dict[str, Any]) -> str:
    source = results.get("graphmem_source", {})
    prints = {
        row["servers"]["graphmem"].get("source_fingerprint")
        for row in results["sizes"]
        if "graphmem" in row["servers"]
    } - {None}
    line = f"graphmem ran from {source.get('from', 'the work tree')}"
    if source.get("commit"):
        line += f" (commit {source['commit'][:10]})"
    if len(prints) > 1:
        line += (
            f". **Warning: graphmem's sources changed during the run** ({len(prints)} "
            "different source fingerprints across sizes): sizes are not measured on the same code"
        )
    return line + "."


def markdown(results: dict[str, Any], checks: list[dict[str, Any]]) -> str:
    m = results["machine"]
    head = [
        "# graphmem vs the official memory server",
        "",
        f"Run {m['date']} on {m['cpu_model']} ({m['logical_cores']} logical cores, "
        f"{m['ram_bytes'] / 2**30:.1f} GiB), Python {m['python']}, Node {m['node']}; "
        f"official server {m['official_server']['installed']} (SDK {m['official_server']['sdk']}), "
        f"graphmem {m['packages']['graphmem']} at {str(m['git_commit'])[:10]} "
        f"({m['git_dirty_files']} files changed in the work tree); "
        f"load average before {results['load_before']}, after {results['load_after']}. "
        f"Command: `{results['command']}`; wall time {results['wall_seconds'] / 60:.1f} min. "
        + _source_line(results),
        "",
        "Each latency cell is p50 / p95 in ms over the given number of calls, one call in flight, "
        "timed around each request/response by the same raw JSON-RPC client. The ratio is "
        "graphmem p50 / official p50 from this run (below 1: graphmem faster). CPU is the server "
        "process's user+system time per measured call, the figure least disturbed by other load.",
        "",
        "## Targets",
        "",
        *(f"- {line}" for line in target_lines(checks)),
        "",
        "## Latency",
        "",
        *_latency_table(results),
        "",
        "## Sizes, start-up and memory",
        "",
        "graphmem's import time is `graphmem import` of the JSONL into a fresh data dir, before "
        "the server starts; it is not part of any call figure. Start-up is spawn to the end of "
        "`initialize`; the first call is one selective search right after it. A `ping` follows "
        "it, so that every call in the latency table is the server's own (graphmem's early "
        "reads, which answer a small store's reads while the server loads, stop there).",
        "",
        *_size_table(results),
        "",
        "## Lost writes",
        "",
        "Concurrent one-entity `create_entities` calls on a fresh store of "
        "1,000 entities; a fresh server process then counts the new entities with `read_graph`. "
        "`two-process`: two server processes on the same file / data dir, 50 calls each, one in "
        "flight per process. `eight-in-flight`: one connection, eight calls in flight, 100 in all.",
        "",
        *_lost_table(results),
        "",
    ]
    return "\n".join(head)


def chart(results: dict[str, Any], path: Path) -> None:
    """p50 against N, log-log, one line per server and operation (N = 0 cannot be shown)."""
    figure, axes = plt.subplots(figsize=(10, 6.5))
    colours = plt.get_cmap("tab10")
    for index, operation in enumerate(OPERATIONS):
        for server, style in (("graphmem", "-"), ("official", "--")):
            points = [
                (row["n"], row["servers"][server]["ops"][operation]["p50_ms"])
                for row in results["sizes"]
                if row["n"] > 0 and server in row["servers"]
            ]
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            axes.plot(
                xs,
                ys,
                style,
                marker="o" if server == "graphmem" else "s",
                color=colours(index),
                label=f"{server}: {label(operation)}",
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("entities pre-loaded (N)")
    axes.set_ylabel("p50 latency per call (ms)")
    axes.set_title("graphmem (solid) vs official memory server (dashed), raw stdio client")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, ncol=2, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
