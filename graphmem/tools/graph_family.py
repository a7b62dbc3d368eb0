"""The graph family (`graph_*` tools, contract graph-memory): what its tools share at run
time, and the family's tool list.

A server whose profile names `graph` builds one GraphFamily at start: the graph home, the
tunables of its config.json (read once; a restart picks up changes), and the process's one
wall clock, which also stamps the log (GRAPHMEM_CLOCK_OFFSET_DAYS moves both).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from actors.graph_tunables import Tunables
from eventstore.hlc import WallClock
from graphmem.config import Settings
from graphmem.cypher.service import CypherService
from graphmem.graph_config import load_tunables

if TYPE_CHECKING:
    # The embeddings (and numpy with them) are loaded by a server that serves the graph
    # family (graphmem.app.start_embeddings), not by every server that loads the tools.
    from graphmem.embedding.service import EmbeddingService

__all__ = ["GraphFamily"]


@dataclass(frozen=True)
class GraphFamily:
    """What the graph tools read besides the graph: files, tunables and the clock."""

    home: Path
    tunables: Tunables = field(default_factory=Tunables)
    config_warnings: tuple[str, ...] = ()
    clock: WallClock = field(default_factory=WallClock)
    # GRAPHMEM_TRANSCRIPTS_DIR: graph_read_transcript looks session ids up there;
    # graph_build_context counts the unprocessed ones. None: none.
    transcripts_dir: Path | None = None
    # graph_search and graph_reembed's vectors; None where no server runs them.
    embeddings: EmbeddingService | None = None
    # graph_cypher's projection; None without the `cypher` extra or where no server runs.
    cypher: CypherService | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        embeddings: EmbeddingService | None = None,
        cypher: CypherService | None = None,
    ) -> GraphFamily:
        home = settings.graph_home
        loaded = load_tunables(home)
        return cls(
            home,
            loaded.tunables,
            loaded.warnings,
            settings.graph.wall_clock(),
            settings.graph.transcripts_dir,
            embeddings,
            cypher,
        )

    def now_ms(self) -> int:
        return self.clock()

    @property
    def backups_dir(self) -> Path:
        return self.home / "backups"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"
