"""The graph family's benchmark operations: which tool, which arguments, which target.

Targets are a tenth of the contract's §12 latencies, since the graph is ten times the design's
scale (issue 14, item 6). Operations without a target are measured for the record. Arguments
come from the generated graph's manifest (bench.graph_data): random existing entities, edges
known to exist, project directories, and keyword queries of known selectivity.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from projections.graph_time import DAY_MS, format_ms

Args = dict[str, Any]


@dataclass(frozen=True)
class Operation:
    label: str
    tool: str
    target_ms: float | None  # p50 target; None: reported only
    calls: int  # measured calls at full size (scaled down by --calls)
    arguments: Callable[[CallArgs], Args]
    after_write: bool = False  # one untimed graph_relate before each measured call
    # The arguments of that graph_relate (default: a new edge between existing entities).
    write: Callable[[CallArgs], Args] | None = None
    note: str = ""
    # Wait (bounded) until the embedding worker has caught up before the first call.
    settle: bool = False


class CallArgs:
    """Deterministic argument streams over one generated graph."""

    def __init__(self, manifest: dict[str, Any], now_ms: int, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.names: list[str] = manifest["names"]
        self.type_of = dict(zip(self.names, manifest["types"], strict=True))
        self.by_type: dict[str, list[str]] = {}
        for name, entity_type in self.type_of.items():
            self.by_type.setdefault(entity_type, []).append(name)
        self.edges: list[list[str]] = manifest["edges"]
        self.hubs: list[str] = manifest["hubs"]
        self.projects: list[list[str]] = manifest["projects"]
        self.queries: dict[str, list[dict[str, Any]]] = manifest["queries"]
        self.now_ms = now_ms
        self.deleted: set[str] = set()
        self._serial = 0
        self._days_ahead = 0

    def serial(self) -> int:
        self._serial += 1
        return self._serial

    def next_day(self) -> int:
        """A day later than the last call's (1, 2, 3 ... days after `now_ms`), in ms."""
        self._days_ahead += 1
        return self.now_ms + self._days_ahead * DAY_MS

    def name(self) -> str:
        while True:
            name = self.rng.choice(self.names)
            if name not in self.deleted:
                return name

    def of_type(self, entity_type: str) -> str:
        while True:
            name = self.rng.choice(self.by_type.get(entity_type) or self.names)
            if name not in self.deleted:
                return name

    def edge(self) -> tuple[str, str, str]:
        while True:
            source, target, relation = self.rng.choice(self.edges)
            if source not in self.deleted and target not in self.deleted:
                return source, target, relation

    def weight(self) -> float:
        return round(self.rng.uniform(0.3, 0.95), 2)

    def relate_new(self) -> Args:
        source, target = self.name(), self.name()
        return {
            "from_name": source,
            "from_type": self.type_of[source],
            "to_name": target,
            "to_type": self.type_of[target],
            "relation": "MENTIONED_WITH",
            "weight": self.weight(),
            "evidence": f"bench note {self.serial()}",
            "source_session": "bench-session",
            "source_type": "conversation",
        }

    def relate_contradiction(self) -> Args:
        """A new unresolved CONTRADICTS edge between two Facts, as a client records one."""
        first, second = self.of_type("Fact"), self.of_type("Fact")
        return {
            "from_name": first,
            "from_type": "Fact",
            "to_name": second,
            "to_type": "Fact",
            "relation": "CONTRADICTS",
            "weight": 0.5,
            "properties": {
                "description": f"bench conflict {self.serial()}",
                "detected_date": format_ms(self.now_ms),
                "resolved": False,
            },
        }

    def relate_again(self) -> Args:
        source, target, relation = self.edge()
        return {
            "from_name": source,
            "from_type": self.type_of[source],
            "to_name": target,
            "to_type": self.type_of[target],
            "relation": relation,
            "weight": self.weight(),
        }

    def relate_dated(self) -> Args:
        person, project = self.of_type("Person"), self.of_type("Project")
        return {
            "from_name": person,
            "from_type": "Person",
            "to_name": project,
            "to_type": "Project",
            "relation": "WORKS_ON",
            "weight": self.weight(),
            "valid_at": format_ms(self.now_ms - self.rng.randrange(30) * DAY_MS),
        }

    def relate_batch(self) -> Args:
        """Five new entities, two existing ones, ten relations: a transcript's extraction."""
        serial = self.serial()
        entities = [
            {"localId": f"n{k}", "name": f"Bench Batch {serial} Item {k}", "type": "Concept"}
            for k in range(5)
        ]
        known = [self.name(), self.name()]
        ends = [f"n{k}" for k in range(5)] + known
        relations = [
            {
                "from": ends[k % 5],
                "to": ends[(k + 1 + k // 5) % len(ends)],
                "relation": "RELATED_TO" if k % 2 else "MENTIONS",
                "weight": self.weight(),
            }
            for k in range(10)
        ]
        return {"batch": {"entities": entities, "relations": relations, "source_type": "ingest"}}

    def prunable_batch(self) -> Args:
        """Five new entities below the prune thresholds (confidence 0.05), weakly related to
        each other and to two existing entities (weight 0.01): what graph_prune removes."""
        serial = self.serial()
        entities = [
            {
                "localId": f"n{k}",
                "name": f"Bench Prunable {serial} Item {k}",
                "type": "Concept",
                "confidence": 0.05,
            }
            for k in range(5)
        ]
        pairs = [("n0", "n1"), ("n1", "n2"), ("n2", "n3"), ("n3", self.name()), ("n4", self.name())]
        relations = [
            {"from": source, "to": target, "relation": "MENTIONS", "weight": 0.01}
            for source, target in pairs
        ]
        return {"batch": {"entities": entities, "relations": relations, "source_type": "ingest"}}

    def query(
        self, hops: int, start: str | None = None, project: bool = False, busy: bool = False
    ) -> Args:
        args: Args = {"entities": [start or self.name()], "max_hops": hops}
        if project:
            _, directory = self.rng.choice(self.projects[:20] if busy else self.projects)
            args["project_context"] = f"{directory}/src/lib"  # a working dir inside it
        return args

    def weight_change(self) -> Args:
        source, target, relation = self.edge()
        return {"from_name": source, "to_name": target, "relation": relation}

    def search(self, kind: str) -> Args:
        return {"search": self.rng.choice(self.queries[kind])["search"]}

    def listing(self) -> Args:
        return {"sort_by": self.rng.choice(("confidence", "last_seen", "name"))}

    def delete(self) -> Args:
        name = self.name()
        self.deleted.add(name)
        return {"entity_id": name, "reason": "bench"}


OPERATIONS: tuple[Operation, ...] = (
    Operation("graph_query 2 hops", "graph_query", 10, 200, lambda a: a.query(2)),
    Operation(
        "graph_query 2 hops + project_context",
        "graph_query",
        10,
        200,
        lambda a: a.query(2, project=True),
        note="project_context: a folder inside a random Project's directory",
    ),
    Operation(
        "graph_query 2 hops + project_context of a busy project",
        "graph_query",
        None,
        50,
        lambda a: a.query(2, project=True, busy=True),
        note="project_context: one of the twenty busiest Projects",
    ),
    Operation("graph_query 3 hops", "graph_query", None, 100, lambda a: a.query(3)),
    Operation("graph_query 4 hops", "graph_query", None, 50, lambda a: a.query(4)),
    Operation(
        "graph_query 2 hops from a hub",
        "graph_query",
        None,
        30,
        lambda a: a.query(2, start=a.rng.choice(a.hubs)),
        note="start: one of the ten busiest entities",
    ),
    Operation(
        "graph_entities search: 2-letter prefix",
        "graph_entities",
        10,
        100,
        lambda a: a.search("prefix2"),
    ),
    Operation(
        "graph_entities search: 4-letter prefix",
        "graph_entities",
        10,
        200,
        lambda a: a.search("prefix4"),
    ),
    Operation(
        "graph_entities search: rare token", "graph_entities", 10, 200, lambda a: a.search("token")
    ),
    Operation(
        "graph_entities search: two tokens",
        "graph_entities",
        10,
        200,
        lambda a: a.search("two_tokens"),
    ),
    Operation(
        "graph_entities listing (no search)", "graph_entities", None, 50, lambda a: a.listing()
    ),
    Operation("graph_stats", "graph_stats", 15, 100, lambda a: {}),
    Operation("graph_contradictions", "graph_contradictions", 20, 100, lambda a: {}),
    Operation(
        "graph_contradictions include_resolved",
        "graph_contradictions",
        None,
        50,
        lambda a: {"include_resolved": True},
    ),
    Operation(
        "graph_contradictions (after a new contradiction)",
        "graph_contradictions",
        20,
        50,
        lambda a: {},
        after_write=True,
        write=lambda a: a.relate_contradiction(),
        note="a CONTRADICTS edge written before each call: the answer cannot be reused",
    ),
    Operation("graph_relate new edge", "graph_relate", 5, 200, lambda a: a.relate_new()),
    Operation("graph_relate re-assert", "graph_relate", 5, 200, lambda a: a.relate_again()),
    Operation(
        "graph_relate dated (supersedes)",
        "graph_relate",
        5,
        200,
        lambda a: a.relate_dated(),
        note="a Person WORKS_ON a Project with valid_at: closes the person's current WORKS_ON",
    ),
    Operation(
        "graph_relate batch (5 new + 2 known entities; 10 edges)",
        "graph_relate",
        None,
        100,
        lambda a: a.relate_batch(),
    ),
    Operation("graph_boost", "graph_boost", 3, 200, lambda a: a.weight_change()),
    Operation("graph_weaken", "graph_weaken", 3, 200, lambda a: a.weight_change()),
    Operation(
        "graph_query 2 hops (after a write)",
        "graph_query",
        10,
        100,
        lambda a: a.query(2),
        after_write=True,
    ),
    Operation(
        "graph_entities search: 4-letter prefix (after a write)",
        "graph_entities",
        10,
        100,
        lambda a: a.search("prefix4"),
        after_write=True,
    ),
    Operation(
        "graph_stats (after a write)", "graph_stats", 15, 100, lambda a: {}, after_write=True
    ),
    Operation("graph_delete", "graph_delete", None, 100, lambda a: a.delete()),
    Operation("graph_export", "graph_export", None, 3, lambda a: {"keep": 1}),
)

# --- issue 15 items 4 and 8: graph_unmerge and graph_merge --------------------------------------
# They change the graph for good (an unmerged edge is gone from its sample; a merged source is
# deleted), so each draws what it has not used; they run last.


def _unmerge(a: CallArgs, hub: bool = False) -> Args:
    """Move one sampled edge of an entity (a hub's, with `hub`) onto a new entity."""
    for _ in range(10_000):
        source, target, relation = a.edge()
        if not hub or source in a.hubs or target in a.hubs:
            break
    a.edges.remove([source, target, relation])  # moved: never drawn again
    out = not hub or source in a.hubs
    entity, other = (source, target) if out else (target, source)
    direction = "out" if out else "in"
    return {
        "entity_id": entity,
        "new_entity_name": f"Bench Split {a.serial()}",
        "new_entity_type": a.type_of[entity],
        "edges_to_move": [
            {
                "other_entity_id": other,
                "relation_type": relation,
                "direction": direction,
            }
        ],
        "reason": "bench",
    }


def _merge(a: CallArgs, hub: bool = False, dry_run: bool = False) -> Args:
    """Fold an entity (a hub, with `hub`) into another of its type."""
    source = a.rng.choice([h for h in a.hubs if h not in a.deleted]) if hub else a.name()
    target = source
    while target == source:
        target = a.of_type(a.type_of[source])
    if not dry_run:
        a.deleted.add(source)
    return {"source_id": source, "target_id": target, "reason": "bench", "dry_run": dry_run}


MERGE_OPERATIONS: tuple[Operation, ...] = (
    Operation("graph_unmerge (one edge)", "graph_unmerge", 20, 200, _unmerge),
    Operation(
        "graph_unmerge (one edge of a hub)",
        "graph_unmerge",
        None,
        50,
        lambda a: _unmerge(a, hub=True),
        note="the entity split is one of the ten busiest (thousands of edges stay)",
    ),
    Operation("graph_merge", "graph_merge", None, 100, _merge, note="a random entity into another"),
    Operation(
        "graph_merge dry run of a hub",
        "graph_merge",
        None,
        20,
        lambda a: _merge(a, hub=True, dry_run=True),
    ),
    Operation(
        "graph_merge of a hub",
        "graph_merge",
        None,
        5,
        lambda a: _merge(a, hub=True),
        note="one of the ten busiest entities folded into another: thousands of edges move",
    ),
)
# --- issue 15 items 5, 6 and 8: validate, communities, build context, the conflict view ------
INSIGHT_OPERATIONS: tuple[Operation, ...] = (
    Operation("graph_build_context", "graph_build_context", 50, 100, lambda a: {}),
    Operation(
        "graph_build_context + topic",
        "graph_build_context",
        50,
        100,
        lambda a: {"topic": a.name()},
        note="topic: a random entity (its 2-hop neighbourhood, 15 nodes / 25 edges shown)",
    ),
    Operation(
        "graph_build_context (after a write)",
        "graph_build_context",
        None,
        30,
        lambda a: {},
        after_write=True,
        note="a write re-derives the kept orderings (first_seen, ingested_at, hub degrees)",
    ),
    Operation("graph_validate", "graph_validate", None, 50, lambda a: {}),
    Operation(
        "graph_validate (after a write)", "graph_validate", None, 10, lambda a: {}, after_write=True
    ),
    Operation(
        "graph_validate source_session",
        "graph_validate",
        None,
        10,
        lambda a: {"source_session": "bench-session"},
    ),
    Operation("graph_communities", "graph_communities", None, 50, lambda a: {}),
    Operation(
        "graph_communities (after a write)",
        "graph_communities",
        None,
        10,
        lambda a: {},
        after_write=True,
    ),
    Operation(
        "graph_contradictions include_conflicts",
        "graph_contradictions",
        None,
        20,
        lambda a: {"include_conflicts": True},
        note="the one conflict view (read_conflicts view all computes the same)",
    ),
)
OPERATIONS = (*OPERATIONS, *INSIGHT_OPERATIONS)


# --- issue 16 items 4, 5 and 8: fuzzy resolution, merge suggestions ---------------------------
def _misspelt(a: CallArgs) -> str:
    """A random name with two neighbour letters of one of its longer words swapped."""
    for _ in range(100):
        words = a.name().split()
        long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
        if long:
            i = a.rng.choice(long)
            w, j = words[i], len(words[i]) // 2
            words[i] = w[: j - 1] + w[j] + w[j - 1] + w[j + 1 :]
            return " ".join(words)
    return a.name()


def _suggest(a: CallArgs, **scope: Any) -> Args:
    return {**scope, "log_to_audit": False}


RESOLVE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "graph_entities misspelt search",
        "graph_entities",
        5,
        200,
        lambda a: {"search": _misspelt(a)},
        note="a random name with two letters swapped: keyword search finds nothing, fuzzy does",
    ),
    Operation(
        "graph_query misspelt entry",
        "graph_query",
        5,
        200,
        lambda a: {"entities": [_misspelt(a)], "max_hops": 0, "context_level": "minimal"},
        note="the fallback to the best fuzzy match, no traversal",
    ),
    Operation(
        "graph_merge_suggestions entity",
        "graph_merge_suggestions",
        50,
        100,
        lambda a: _suggest(a, entity_id=a.name()),
        settle=True,
        note="hash embedder; defaults (0.85 / 0.8); log_to_audit false",
    ),
    Operation(
        "graph_merge_suggestions type",
        "graph_merge_suggestions",
        None,
        10,
        lambda a: _suggest(a, entity_type=a.rng.choice(sorted(a.by_type))),
        settle=True,
        note="200 seeds of a random type",
    ),
    Operation(
        "graph_merge_suggestions global",
        "graph_merge_suggestions",
        None,
        5,
        _suggest,
        settle=True,
        note="the 200 best-connected seeds",
    ),
)
OPERATIONS = (*OPERATIONS, *RESOLVE_OPERATIONS)
# The merge rows change the graph for good: they run after every other row.
OPERATIONS = (*OPERATIONS, *MERGE_OPERATIONS)
# --- issue 15 items 2, 3 and 8: graph_decay, graph_prune (last: execute removes elements) ---
_YEAR_MS = 365 * DAY_MS
MAINTENANCE_OPERATIONS: tuple[Operation, ...] = (
    Operation("graph_decay dry run", "graph_decay", 200, 30, lambda a: {"dry_run": True}),
    Operation(
        "graph_decay dry run a year ahead",
        "graph_decay",
        None,
        10,
        lambda a: {"dry_run": True, "at": format_ms(a.now_ms + _YEAR_MS)},
        note="every element crosses day boundaries: the whole graph is recomputed",
    ),
    Operation(
        "graph_decay dry run on a new day",
        "graph_decay",
        200,
        30,
        lambda a: {"dry_run": True, "at": format_ms(a.next_day())},
        note="each call a day later than the last: every value differs from the one shown",
    ),
    Operation(
        "graph_decay (whole graph)",
        "graph_decay",
        200,
        30,
        lambda a: {},
        note="the first call (a warm-up) is the day's run unless the scheduler ran it; measured "
        "calls are repeats that day (a new day's run and the read after it: bench.decay_days)",
    ),
    Operation("graph_prune preview", "graph_prune", 50, 50, lambda a: {}),
    Operation(
        "graph_prune execute",
        "graph_prune",
        200,
        30,
        lambda a: {"mode": "execute"},
        after_write=True,
        write=CallArgs.prunable_batch,
        note="before each call an untimed graph_relate adds 5 entities and 5 edges below the "
        "thresholds: each measured call selects and removes them (the warm-up removes what "
        "decay left below)",
    ),
)
OPERATIONS = (*OPERATIONS, *MAINTENANCE_OPERATIONS)
GRAPH_TOOLS = tuple(dict.fromkeys(op.tool for op in OPERATIONS))


# --- graph_search / graph_reembed (issue 16): the server's default embedder (hash) ----------
# The semantic embedder's figures, the first start's embedding and 1M entities are
# bench.graph_search's.


def _search(a: CallArgs, typed: bool = False) -> Args:
    name = a.name()
    if typed:
        return {"query": name, "entity_types": [a.type_of[name]]}
    cut = a.rng.randrange(len(name))  # one letter dropped: a mistyped name
    return {"query": name[:cut] + name[cut + 1 :], "min_similarity": 0.3}


SEARCH_OPERATIONS: tuple[Operation, ...] = (
    Operation("graph_search (a mistyped name)", "graph_search", 20, 200, _search),
    Operation(
        "graph_search (entity_types)", "graph_search", 20, 200, lambda a: _search(a, typed=True)
    ),
    Operation(
        "graph_reembed (nothing stale)",
        "graph_reembed",
        None,
        5,
        lambda a: {},
        note="reads every entity's embed text and checks its vector",
    ),
)
OPERATIONS = (*OPERATIONS, *SEARCH_OPERATIONS)
GRAPH_TOOLS = tuple(dict.fromkeys(op.tool for op in OPERATIONS))
