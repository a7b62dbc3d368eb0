"""A realistic graph-family graph, written straight into an LMDB log, and cached by its sizes.

The graph the graph family's benchmark (bench.graph_family) runs on: entities of the nine
canonical types plus two ad-hoc ones (`Technology`, `Organization`) with confidence, mention
counts, last-seen times, subtypes, aliases and properties (every `Project` has a `directory`);
edges with weights in [0, 1], provenance and evidence, a share of them dated (`valid_at`) with
superseded predecessors (`invalid_at`), some `CONTRADICTS` edges with the contradiction
properties, and skewed degrees (a few hubs with thousands of edges, most entities with a few).
One `DecayApplied` run a day ago makes every read compute decayed values, as a live graph does.

Names are built from a synthetic token vocabulary drawn with a Zipf law, so keyword search has
real prefix work: a two-letter prefix matches thousands of names, a whole rare token a few.
Building bypasses the tools (events are appended in large transactions, as bench.log_data
does), so 100,000 entities and 300,000 edges take seconds, not the hours 400,000 tool calls
would. The log and a manifest (names, sample edges, queries with their match counts) are kept
under bench/.cache/graph-family/<key>/, keyed by the sizes, seed and generator version.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from eventstore.events import (
    AnyEvent,
    Cause,
    DecayApplied,
    EntityCreated,
    RelationCreated,
)
from eventstore.lmdb_log import LmdbEventLog
from eventstore.log import Durability, LogTransaction
from projections.graph_time import DAY_MS, format_ms
from projections.naming import SYMMETRIC_RELATION_TYPES, slug

GENERATOR_VERSION = 3
CACHE = Path(__file__).resolve().parent / ".cache" / "graph-family"
MANIFEST = "manifest.json"

# Share of the entities per type: people, concepts and facts dominate a personal memory.
TYPE_SHARES: tuple[tuple[str, float], ...] = (
    ("Person", 0.18),
    ("Project", 0.04),
    ("Preference", 0.05),
    ("Concept", 0.15),
    ("Decision", 0.08),
    ("Fact", 0.15),
    ("Event", 0.08),
    ("Object", 0.06),
    ("Reasoning", 0.05),
    ("Technology", 0.11),  # ad hoc, as upstream's live graphs have them
    ("Organization", 0.05),
)
# (from type, relation, to type, share of the edges, dated: supersession applies)
TEMPLATES: tuple[tuple[str, str, str, float, bool], ...] = (
    ("Person", "WORKS_ON", "Project", 0.12, True),
    ("Person", "KNOWS", "Person", 0.08, False),
    ("Person", "COLLABORATES_WITH", "Person", 0.03, False),
    ("Person", "PREFERS", "Preference", 0.05, False),
    ("Person", "DECIDED", "Decision", 0.05, False),
    ("Person", "MEMBER_OF", "Organization", 0.04, True),
    ("Project", "USES", "Technology", 0.10, True),
    ("Project", "DEPENDS_ON", "Project", 0.03, False),
    ("Decision", "ABOUT", "Project", 0.05, False),
    ("Fact", "ABOUT", "Person", 0.06, False),
    ("Fact", "MENTIONS", "Concept", 0.08, False),
    ("Concept", "RELATED_TO", "Concept", 0.09, False),
    ("Event", "INVOLVES", "Person", 0.05, False),
    ("Reasoning", "SUPPORTS", "Decision", 0.05, False),
    ("Object", "OWNED_BY", "Person", 0.04, False),
    ("Technology", "RELATED_TO", "Concept", 0.05, False),
    ("Fact", "CONTRADICTS", "Fact", 0.004, False),
)
DATED_SHARE = 0.4  # of the edges of a dated template: those given a valid_at
HUB_SHARE = 0.03  # of the endpoints of a type: drawn among its few hubs
HUBS_PER = 5_000  # one hub per this many entities of a type (at least one)
SKEW = 1.7  # the rest: index = size * u ** SKEW (low indices busier)
TAILS = ("service", "platform", "pipeline", "migration", "dashboard", "api", "review", "plan")
SOURCE_TYPES = ("conversation", "ingest", "manual", "bootstrap")
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "", "", "n", "l", "r", "s", "x")
VOCABULARY = 6_000
TWO_YEARS_MS = 730 * DAY_MS
CAUSE = Cause(tool="graph_relate", client="bench")


@dataclass(frozen=True)
class GraphSpec:
    entities: int
    edges: int
    seed: int = 7

    @property
    def key(self) -> str:
        return f"e{self.entities}-r{self.edges}-s{self.seed}-v{GENERATOR_VERSION}"


@dataclass
class _Edge:
    source: int
    target: int
    relation: str
    weight: float
    valid_at: int | None = None
    invalid_at: int | None = None
    properties: dict[str, Any] = field(default_factory=dict)


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    ordered: list[str] = []
    while len(ordered) < size:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        word += rng.choice(_CODAS)
        if word not in words:
            words.add(word)
            ordered.append(word)
    return ordered


class _Zipf:
    """Draws from a list with weight 1/rank: a few tokens are everywhere, most are rare."""

    def __init__(self, items: list[str]) -> None:
        self.items = items
        self.cumulative = list(accumulate(1.0 / (rank + 1) for rank in range(len(items))))

    def __call__(self, rng: random.Random) -> str:
        point = rng.random() * self.cumulative[-1]
        return self.items[min(bisect_left(self.cumulative, point), len(self.items) - 1)]


def _name(rng: random.Random, entity_type: str, draw: _Zipf) -> str:
    words = [draw(rng) for _ in range(rng.choice((2, 2, 3) if entity_type == "Person" else (2, 3)))]
    if entity_type in ("Project", "Decision", "Event") and rng.random() < 0.5:
        words.append(rng.choice(TAILS))
    return " ".join(word.capitalize() for word in words)


def _entities(rng: random.Random, spec: GraphSpec, now: int) -> tuple[list[str], list[str]]:
    """Unique names (by slug) and their types, types in blocks so each has a contiguous range."""
    draw = _Zipf(_vocabulary(rng, VOCABULARY))
    names: list[str] = []
    types: list[str] = []
    slugs: set[str] = set()
    total = sum(share for _, share in TYPE_SHARES)
    for index, (entity_type, share) in enumerate(TYPE_SHARES):
        count = round(spec.entities * share / total)
        if index == len(TYPE_SHARES) - 1:
            count = spec.entities - len(names)
        for _ in range(max(0, count)):
            name = _name(rng, entity_type, draw)
            while slug(name) in slugs:  # one more token until it is new
                name = f"{name} {draw(rng).capitalize()}"
            slugs.add(slug(name))
            names.append(name)
            types.append(entity_type)
    return names, types


def _entity_event(
    rng: random.Random, name: str, entity_type: str, now: int, names: set[str]
) -> EntityCreated:
    properties: dict[str, Any] = {}
    subtype = None
    aliases: list[str] = []
    if entity_type == "Project":
        properties["directory"] = f"/home/dev/src/{slug(name)}"
        properties["description"] = f"the {name} codebase"
    elif entity_type in ("Fact", "Concept", "Reasoning"):
        properties["description"] = f"note on {name.lower()}"
    if entity_type == "Preference" and rng.random() < 0.1:
        subtype = "rule"
    if entity_type in ("Person", "Technology") and rng.random() < 0.02:
        words = name.split()
        alias = f"{words[0]} {words[-1][0]}."
        if alias not in names:
            aliases.append(alias)
    return EntityCreated(
        name=name,
        entity_type=entity_type,
        confidence=round(rng.betavariate(3, 2), 6),
        times_mentioned=1 + int(rng.expovariate(0.3)),
        last_seen=now - rng.randrange(TWO_YEARS_MS),
        subtype=subtype,
        aliases=aliases,
        properties=properties,
    )


class _Picker:
    """Endpoints of one type: a few hubs take HUB_SHARE of the picks, the rest are skewed."""

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.size = start, stop - start
        self.hubs = max(1, self.size // HUBS_PER)

    def __call__(self, rng: random.Random) -> int:
        if rng.random() < HUB_SHARE:
            return self.start + rng.randrange(self.hubs)
        return self.start + min(self.size - 1, int(self.size * rng.random() ** SKEW))


def _edges(
    rng: random.Random, spec: GraphSpec, types: list[str], now: int
) -> tuple[list[_Edge], list[int]]:
    ranges: dict[str, list[int]] = {}
    for index, entity_type in enumerate(types):
        ranges.setdefault(entity_type, [index, index])[1] = index + 1
    pickers = {t: _Picker(a, b) for t, (a, b) in ranges.items() if b > a}
    templates = [t for t in TEMPLATES if t[0] in pickers and t[2] in pickers]
    shares = list(accumulate(t[3] for t in templates))
    edges: list[_Edge] = []
    keys: set[tuple[int, int, str]] = set()
    # Current dated edge per (source, relation): the next dated one supersedes it.
    latest: dict[tuple[int, str], _Edge] = {}
    attempts = 0
    while len(edges) < spec.edges and attempts < spec.edges * 20:
        attempts += 1
        source_type, relation, target_type, _, dated = rng.choices(templates, cum_weights=shares)[0]
        source, target = pickers[source_type](rng), pickers[target_type](rng)
        key = (source, target, relation)
        if relation in SYMMETRIC_RELATION_TYPES:
            key = (min(source, target), max(source, target), relation)
        if source == target or key in keys:
            continue
        keys.add(key)
        edge = _Edge(source, target, relation, round(rng.betavariate(2.5, 1.8), 6))
        if dated and rng.random() < DATED_SHARE:
            previous = latest.get((source, relation))
            start = now - 6 * 365 * DAY_MS if previous is None else previous.valid_at or now
            edge.valid_at = min(now - DAY_MS, start + rng.randrange(30, 400) * DAY_MS)
            if previous is not None and previous.valid_at is not None:
                previous.invalid_at = edge.valid_at
            latest[(source, relation)] = edge
        if relation == "CONTRADICTS":
            edge.properties = {
                "description": f"conflicting accounts {len(edges)}",
                "detected_date": format_ms(now - rng.randrange(TWO_YEARS_MS)),
            }
            if rng.random() < 0.7:
                edge.properties["resolved"] = rng.random() < 0.3
        edges.append(edge)
    return edges, [a for a, _ in ranges.values()]


def _relation_event(rng: random.Random, edge: _Edge, names: list[str], now: int) -> RelationCreated:
    ingested = now - rng.randrange(TWO_YEARS_MS)
    with_source = rng.random() < 0.5
    return RelationCreated(
        from_entity=names[edge.source],
        to_entity=names[edge.target],
        relation_type=edge.relation,
        weight=edge.weight,
        properties=edge.properties,
        valid_at=edge.valid_at,
        invalid_at=edge.invalid_at,
        source_session=f"session-{rng.randrange(5000):04d}" if with_source else None,
        source_type=rng.choice(SOURCE_TYPES) if with_source else None,
        evidence="stated in a planning session" if rng.random() < 0.2 else None,
        ingested_at=ingested,
        last_confirmed=ingested + rng.randrange(max(1, now - ingested)),
    )


def _append_all(path: Path, events: list[AnyEvent]) -> None:
    with LmdbEventLog.open(path, durability=Durability.EVERYSEC, map_size=4 << 30) as log:
        chunk, per_txn = 100, 20_000
        for start in range(0, len(events), per_txn):
            part = events[start : start + per_txn]

            def fill(txn: LogTransaction, part: list[AnyEvent] = part) -> None:
                if txn.attempt:
                    raise RuntimeError("the map grew mid-build: raise map_size")
                for offset in range(0, len(part), chunk):
                    txn.append(part[offset : offset + chunk], CAUSE)

            log.transact(fill)


def _queries(rng: random.Random, names: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Keyword-search queries of four selectivities, with how many names each matches
    (prefix of a name token, the contract's §8.5 rule over names; ids and aliases add few)."""
    tokens_of = [name.casefold().split() for name in names]
    counts: Counter[str] = Counter(t for tokens in tokens_of for t in set(tokens))
    by_prefix: Counter[str] = Counter()
    for tokens in tokens_of:
        for prefix in {t[:n] for t in tokens for n in (2, 3, 4) if len(t) >= n}:
            by_prefix[prefix] += 1
    common = [t for t, _ in counts.most_common(200)]
    rare = [t for t, c in counts.items() if c <= 5]
    picks: dict[str, list[dict[str, Any]]] = {"prefix2": [], "prefix4": [], "token": []}
    picks["two_tokens"] = []
    for _ in range(50):
        two = rng.choice(common)[:2]
        picks["prefix2"].append({"search": two, "matches": by_prefix[two]})
        four = rng.choice(common)[:4]
        picks["prefix4"].append({"search": four, "matches": by_prefix[four]})
        whole = rng.choice(rare or common)
        picks["token"].append({"search": whole, "matches": counts[whole]})
        tokens = rng.choice(tokens_of)
        both = f"{tokens[0]} {tokens[-1][:3]}"
        matches = sum(
            1
            for other in tokens_of
            if tokens[0] in other and any(t.startswith(tokens[-1][:3]) for t in other)
        )
        picks["two_tokens"].append({"search": both, "matches": matches})
    return picks


def build(spec: GraphSpec, path: Path, say: Any = print) -> dict[str, Any]:
    """Write the graph into a fresh log at `path`; returns the manifest."""
    rng = random.Random(spec.seed)
    now = int(time.time() * 1000)
    started = time.perf_counter()
    names, types = _entities(rng, spec, now)
    known = set(names)
    events: list[AnyEvent] = [
        _entity_event(rng, name, entity_type, now, known)
        for name, entity_type in zip(names, types, strict=True)
    ]
    edges, _ = _edges(rng, spec, types, now)
    events.extend(_relation_event(rng, edge, names, now) for edge in edges)
    events.append(
        DecayApplied(
            at=now - DAY_MS,
            rate=0.996,
            rates={t.casefold(): 0.996 for t, _ in TYPE_SHARES},
            edge_rate=0.997,
            floor=0.01,
        )
    )
    generated = time.perf_counter() - started
    _append_all(path, events)
    degree: Counter[int] = Counter()
    for edge in edges:
        degree[edge.source] += 1
        degree[edge.target] += 1
    current = [e for e in edges if e.invalid_at is None]
    sample = rng.sample(current, min(5_000, len(current)))
    projects = [i for i, t in enumerate(types) if t == "Project"]
    manifest: dict[str, Any] = {
        "spec": {"entities": spec.entities, "edges": spec.edges, "seed": spec.seed},
        "generator_version": GENERATOR_VERSION,
        "built_at": format_ms(now),
        "events": len(events),
        "generate_s": round(generated, 2),
        "build_s": round(time.perf_counter() - started, 2),
        "counts": {
            "entities": len(names),
            "edges": len(edges),
            "dated_edges": sum(1 for e in edges if e.valid_at is not None),
            "superseded_edges": len(edges) - len(current),
            "contradictions": sum(1 for e in edges if e.relation == "CONTRADICTS"),
            "by_type": dict(Counter(types)),
            "by_relation": dict(Counter(e.relation for e in edges)),
            "max_degree": max(degree.values(), default=0),
            "median_degree": sorted(degree.values())[len(degree) // 2] if degree else 0,
            "hubs_over_1000_edges": sum(1 for d in degree.values() if d > 1000),
        },
        "names": names,
        "types": types,
        "hubs": [names[i] for i, _ in degree.most_common(10)],
        # Every Project, busiest first (low indices of a type get the most edges).
        "projects": [[names[i], f"/home/dev/src/{slug(names[i])}"] for i in projects],
        "edges": [[names[e.source], names[e.target], e.relation] for e in sample],
        "queries": _queries(rng, names),
    }
    say(
        f"built a graph of {len(names):,} entities and {len(edges):,} edges "
        f"({len(events):,} events) in {manifest['build_s']:.1f} s"
    )
    return manifest


def cached(spec: GraphSpec, say: Any = print, cache: Path = CACHE) -> tuple[Path, dict[str, Any]]:
    """The cached log dir for `spec` under `cache` (built now if missing) and its manifest."""
    home = cache / spec.key
    manifest_path = home / MANIFEST
    if manifest_path.is_file():
        manifest: dict[str, Any] = json.loads(manifest_path.read_text())
        return home / "log", manifest
    partial = cache / f"{spec.key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    manifest = build(spec, partial / "log", say)
    # The manifest last, then the rename: a build cut short is never taken for a cache hit.
    (partial / MANIFEST).write_text(json.dumps(manifest) + "\n")
    shutil.rmtree(home, ignore_errors=True)
    partial.rename(home)
    return home / "log", manifest


def fresh_copy(log_dir: Path, target: Path) -> Path:
    """A writable copy of a cached log for one server run (the benchmark's writes stay there)."""
    target.mkdir(parents=True, exist_ok=True)
    for item in log_dir.iterdir():
        if item.is_file():
            shutil.copyfile(item, target / item.name)
    return target
