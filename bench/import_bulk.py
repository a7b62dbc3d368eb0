"""Bulk import: `graphmem import` of the official JSONL as a subprocess, timed end to end.

For each size N, bench.dataset writes N entities (three observations each) then N relations,
deterministically, as the official server writes its file. Each run imports it into a fresh data
dir: wall time (spawn to exit, the progress bar and the one checkpoint at the end included),
the child's CPU seconds (the figure to compare on a shared, loaded machine), its peak RSS, and
the final checkpoint's own seconds from its log line. Then the same file is imported again into
the same dir (idempotent: nothing created) and timed too. The target (issue 21 item 4) is
>= 50,000 entities/s on wall time, i.e. 1M entities in <= 20 s.

    python -m bench.import_bulk                      # 200k and 1M, into results/import_bulk.json
    python -m bench.import_bulk --sizes 20000        # quick look, written to .cache/quick/

Files are kept in bench/.cache/import_bulk/ (`--cache-dir`; about 160 bytes a line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.dataset import write_jsonl
from bench.machine import load_average, machine_facts
from bench.rpc import base_env

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "import_bulk"
RESULTS = HERE / "results"
TARGET_ENTITIES_PER_S = 50_000
FULL_SIZES = (200_000, 1_000_000)


def dataset(n: int, cache: Path = CACHE) -> Path:
    """The JSONL of N entities and N relations, written once and kept."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"official-{n}.jsonl"
    if not path.exists():
        partial = path.with_suffix(".partial")
        write_jsonl(partial, n)
        partial.replace(path)
    return path


def run_import(jsonl: Path, data_dir: Path, log: Path, src: Path | None) -> dict[str, Any]:
    """One `graphmem import` in a subprocess: wall and CPU seconds, peak RSS, its summary."""
    argv = [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "import", str(jsonl)]
    # A source tree given (another revision, to compare) comes first on the path.
    env = base_env(GRAPHMEM_LOG_LEVEL="INFO", **({"PYTHONPATH": str(src)} if src else {}))
    started = time.perf_counter()
    with log.open("wb") as stderr:
        child = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=src or HERE.parent
        )
        assert child.stdout is not None
        summary = child.stdout.read().decode()
        # wait4 gives this child's own rusage (RUSAGE_CHILDREN would mix the runs).
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"graphmem import failed (exit {child.returncode}); see {log}")
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: kilobytes
        "checkpoint_s": _checkpoint_seconds(log),
        "summary": summary.strip().splitlines(),
    }


def _checkpoint_seconds(log: Path) -> float | None:
    """The final checkpoint's seconds, from its `checkpoint_saved` log line."""
    found = None
    for raw in log.read_bytes().replace(b"\r", b"\n").splitlines():
        # The line may follow the progress bar's last redraw.
        if b'"checkpoint_saved"' in raw:
            found = json.loads(raw[raw.index(b'{"') :]).get("seconds")
    return found


def measure(n: int, scratch: Path, cache: Path = CACHE, src: Path | None = None) -> dict[str, Any]:
    jsonl = dataset(n, cache)
    data_dir = scratch / f"data-{n}"
    shutil.rmtree(data_dir, ignore_errors=True)
    load_before = load_average()
    first = run_import(jsonl, data_dir, scratch / f"import-{n}.log", src)
    again = run_import(jsonl, data_dir, scratch / f"reimport-{n}.log", src)
    shutil.rmtree(data_dir, ignore_errors=True)
    return {
        "entities": n,
        "relations": n if n >= 2 else 0,
        "file_bytes": jsonl.stat().st_size,
        "load_before": load_before,
        "load_after": load_average(),
        "import": first,
        "entities_per_s": round(n / first["wall_s"]),
        "entities_per_cpu_s": round(n / first["cpu_s"]),
        "records_per_s": round(2 * n / first["wall_s"]),
        "reimport": again,
        "target_entities_per_s": TARGET_ENTITIES_PER_S,
        "meets_target": n / first["wall_s"] >= TARGET_ENTITIES_PER_S,
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Bulk import (`python -m bench.import_bulk`)",
        "",
        f"{report['machine']['date']}, {report['machine']['cpu_model']}, "
        f"{report['machine']['logical_cores']} cores, commit {report['machine']['git_commit']}.",
        "",
        "| entities + relations | wall s | entities/s | CPU s | entities/CPU-s | peak RSS MB "
        "| final checkpoint s | re-import s | load before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["runs"]:
        first, again = row["import"], row["reimport"]
        lines.append(
            f"| {row['entities']:,} + {row['relations']:,} | {first['wall_s']} "
            f"| {row['entities_per_s']:,} | {first['cpu_s']} | {row['entities_per_cpu_s']:,} "
            f"| {first['peak_rss_mb']} | {first['checkpoint_s']} | {again['wall_s']} "
            f"| {row['load_before'][0]} |"
        )
    lines += ["", f"Target: >= {TARGET_ENTITIES_PER_S:,} entities/s of wall time.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sizes", default=",".join(map(str, FULL_SIZES)), help="entities per file, comma-separated"
    )
    parser.add_argument("--out-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=CACHE, help="where the files are kept")
    parser.add_argument(
        "--src", type=Path, default=None, help="run graphmem from this source tree (a baseline)"
    )
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    out_dir = args.out_dir or (RESULTS if sizes == FULL_SIZES else HERE / ".cache" / "quick")
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="import-bulk-") as scratch:
        for n in sizes:
            row = measure(n, Path(scratch), args.cache_dir, args.src)
            runs.append(row)
            print(
                f"N={n:,}: {row['import']['wall_s']} s wall ({row['entities_per_s']:,} "
                f"entities/s), {row['import']['cpu_s']} s CPU, peak RSS "
                f"{row['import']['peak_rss_mb']} MB; re-import {row['reimport']['wall_s']} s",
                flush=True,
            )
    source = str(args.src) if args.src else "work tree"
    report = {"machine": machine_facts(), "graphmem_source": source, "runs": runs}
    (out_dir / "import_bulk.json").write_text(json.dumps(report, indent=1) + "\n")
    (out_dir / "import_bulk.md").write_text(markdown(report))
    print(f"written to {out_dir}/import_bulk.{{json,md}}")


if __name__ == "__main__":
    main()
