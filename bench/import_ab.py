"""Bulk import A/B: `graphmem import` of bench.import_bulk's files by this tree and another
revision's source tree (`--src`, e.g. `git -C ../main archive HEAD | tar -x -C /tmp/main`),
alternating which goes first each round, on a shared machine where only side-by-side runs and
CPU seconds compare. Imports only (bench.import_bulk also times a re-import).

    python -m bench.import_ab --src /tmp/main-src --sizes 200000,1000000 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.import_bulk import RESULTS, dataset, run_import
from bench.machine import load_average, machine_facts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--src", type=Path, required=True, help="the other revision's tree")
    parser.add_argument("--sizes", default="200000,1000000", help="entities per file")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "import_bulk-ab.json")
    args = parser.parse_args(argv)
    sources: dict[str, Path | None] = {"this": None, "other": args.src}
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="import-ab-") as scratch:
        for round_ in range(args.rounds):
            for n in (int(s) for s in args.sizes.split(",")):
                order = ("this", "other") if round_ % 2 == 0 else ("other", "this")
                for who in order:
                    data = Path(scratch) / f"data-{who}-{n}"
                    before = load_average()[0]
                    log = Path(scratch) / f"{who}-{n}.log"
                    result = run_import(dataset(n), data, log, sources[who])
                    shutil.rmtree(data, ignore_errors=True)
                    row = {"who": who, "n": n, "round": round_ + 1, "load_before": before}
                    row["load_after"] = load_average()[0]
                    row |= {
                        k: result[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "checkpoint_s")
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    report = {"machine": machine_facts(), "other": str(args.src), "runs": rows}
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
