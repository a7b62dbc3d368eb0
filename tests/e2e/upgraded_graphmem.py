"""`python -m tests.e2e.upgraded_graphmem ARGS` runs graphmem as a later release would, for
tests of an upgrade: its graph fold is one version newer and still reads the snapshots of the
current one. With GRAPHMEM_TEST_REBUILD_GATE naming a FIFO, a background rebuild starts
folding only once the test has opened that FIFO for writing and closed it again."""

import os
import sys

import actors.rebuild
from graphmem.cli import main
from projections.graph import GraphProjection

CURRENT = GraphProjection.version
GraphProjection.version = CURRENT + 1
GraphProjection.readable_versions = frozenset({CURRENT})

_gate = os.environ.get("GRAPHMEM_TEST_REBUILD_GATE")
if _gate:
    _run = actors.rebuild.BackgroundFold._run

    def _gated_run(fold: actors.rebuild.BackgroundFold) -> None:
        with open(_gate, "rb") as fifo:  # blocks until the test opens it for writing
            fifo.read()  # and until it closes it
        _run(fold)

    actors.rebuild.BackgroundFold._run = _gated_run  # type: ignore[method-assign, assignment]

sys.exit(main())
