"""graph_validate (contract §8.19): quality issues of entities — generic names, reference
language, near-duplicates, orphans — and, graphmem's addition, typed entities whose
observations do not conform to their type's schema in force.

- generic_name (high): the casefolded, trimmed name is on the blocklist, or the name is
  shorter than 3 characters with no upper-case letter or digit (`Go`, `AI`, `R`, `C3` are
  spared);
- reference_language (high): the casefolded name starts with `the `, `this ` ... and is
  shorter than 40 characters (an entity with a generic name is not also reported for this);
- near_duplicate (medium): another live entity has the same slug; a pair is reported once,
  on its name first in code-point order;
- schema_violation (medium): the schema view found problems with its observations;
- orphan (low): no edges, confidence <= 0.4, times_mentioned <= 1.

Issues are ordered by severity, then casefolded entity name, then code point (then check), and
cut once to `max_issues`. The graph checks' issues are kept in that order by an IssueIndex
that the FamilyIndex tells which entities each write touched; the schema view's are merged in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from heapq import merge
from itertools import islice
from typing import Any

from sortedcontainers import SortedKeyList

from projections.graph import GraphProjection
from projections.graph_family._build import family_index
from projections.graph_family._values import Reading, _slug

__all__ = [
    "BLOCKLIST",
    "ORPHAN_MAX_CONFIDENCE",
    "REFERENCE_PREFIXES",
    "SEVERITIES",
    "Issue",
    "generic_name",
    "graph_validate",
    "ordered_issues",
    "reference_language",
]

_WORDS = (
    "it this that the a an some thing things item items something anything everything "
    "nothing one other another each all both they them we i you he she data info "
    "information here there now then later unknown various server client system process "
    "service tool"
)
BLOCKLIST = frozenset(_WORDS.split())  # the contract's 44 words
REFERENCE_PREFIXES = ("the ", "this ", "that ", "a ", "an ", "my ", "our ", "your ", "their ")
REFERENCE_MAX_CHARS = 40
SHORT_NAME_CHARS = 3
ORPHAN_MAX_CONFIDENCE = 0.4
SEVERITIES = ("high", "medium", "low")
_RANK = {severity: rank for rank, severity in enumerate(SEVERITIES)}


@dataclass(frozen=True, slots=True)
class Issue:
    severity: str
    check: str
    name: str
    description: str

    def sort_key(self) -> tuple[int, str, str, str]:
        return (_RANK[self.severity], self.name.casefold(), self.name, self.check)


def generic_name(name: str) -> str | None:
    """Why `name` is generic (a blocklisted word, or short without a capital or digit)."""
    trimmed = name.strip()
    if trimmed.casefold() in BLOCKLIST:
        return f"'{trimmed}' is a generic word, not the name of one thing"
    if len(trimmed) < SHORT_NAME_CHARS and not any(c.isupper() or c.isdigit() for c in trimmed):
        return (
            f"'{trimmed}' is shorter than {SHORT_NAME_CHARS} characters and has no capital or "
            "digit, so it is unlikely to name one thing"
        )
    return None


def reference_language(name: str) -> str | None:
    """Why `name` reads as a reference (`the project`) rather than a name."""
    folded = name.strip().casefold()
    if len(name.strip()) >= REFERENCE_MAX_CHARS:
        return None
    for prefix in REFERENCE_PREFIXES:
        if folded.startswith(prefix):
            return (
                f"'{name.strip()}' starts with '{prefix.strip()}': a reference to something "
                "named elsewhere; use the thing's own name"
            )
    return None


def ordered_issues(issues: Sequence[Issue]) -> list[Issue]:
    """High, medium, low; then casefolded name, then code point, then check."""
    return sorted(issues, key=Issue.sort_key)


class IssueIndex:
    """Every alive entity's issues of the checks that read the graph alone (all but
    schema_violation), in answer order, kept current by the FamilyIndex's refreshes: a write
    re-checks the entities it touched and those sharing their slugs; a decay run, all."""

    def __init__(self, graph: GraphProjection) -> None:
        self._graph = graph
        self._of: dict[str, tuple[Issue, ...]] = {}
        self.ranked: SortedKeyList[Issue, tuple[int, str, str, str]] = SortedKeyList(
            key=Issue.sort_key
        )
        self._dirty: set[str] = set()
        self._everything = True

    def touched(self, names: set[str], *, everything: bool) -> None:
        if everything:
            self._everything = True
            self._dirty = set()
        elif not self._everything:
            self._dirty |= names

    def refresh(self) -> None:
        graph = self._graph
        if self._everything:
            self._everything = False
            self._dirty = set()
            self._of = {}
            found = _graph_issues(graph, graph.entity_names())
            for issue in found:
                self._of[issue.name] = (*self._of.get(issue.name, ()), issue)
            self.ranked = SortedKeyList(found, key=Issue.sort_key)
            return
        dirty, self._dirty = self._dirty, set()
        lookup = graph.name_lookup()
        names = set(dirty)
        for name in dirty:  # a name coming or going changes its slug partners' issues
            names.update(lookup.names_with_slug(_slug(name)))
        for name in names:
            for issue in self._of.pop(name, ()):
                self.ranked.remove(issue)
        for issue in _graph_issues(graph, [n for n in names if graph.has_entity(n)]):
            self._of[issue.name] = (*self._of.get(issue.name, ()), issue)
            self.ranked.add(issue)

    def issues_of(self, name: str) -> tuple[Issue, ...]:
        return self._of.get(name, ())


def graph_validate(
    graph: GraphProjection,
    *,
    schema_problems: Mapping[str, Sequence[str]],
    source_session: str | None = None,
    max_issues: int = 50,
) -> dict[str, Any]:
    """The answer object. `schema_problems` maps an entity name to the schema view's problem
    details for it (only non-conforming typed entities appear)."""
    index = family_index(graph)
    kept = index.listener("graph_validate", lambda: IssueIndex(graph))
    kept.refresh()
    schema = [
        _schema_issue(graph, name, details)
        for name, details in schema_problems.items()
        if details and graph.has_entity(name)
    ]
    if source_session is None:
        scope = "full graph"
        total = len(kept.ranked) + len(schema)
        # The kept issues are in order already: merge the first max_issues with the schema's.
        first = kept.ranked.islice(0, max_issues)
        chosen = list(
            islice(merge(first, sorted(schema, key=Issue.sort_key), key=Issue.sort_key), max_issues)
        )
    else:
        scope = f"session:{source_session}"
        names = _session_scope(graph, source_session)
        found = [issue for name in names for issue in kept.issues_of(name)]
        found += [issue for issue in schema if issue.name in names]
        total = len(found)
        chosen = ordered_issues(found)[:max_issues]
    reading = Reading(graph)
    returned = [_issue_value(reading, issue) for issue in chosen]
    by_severity = dict.fromkeys(SEVERITIES, 0)
    for item in returned:
        by_severity[item["severity"]] += 1
    return {
        "issues": returned,
        "issue_count": len(returned),
        "total_found": total,
        "by_severity": by_severity,
        "scope": scope,
    }


def _schema_issue(graph: GraphProjection, name: str, details: Sequence[str]) -> Issue:
    entity_type = graph.entity_type(name) or ""
    return Issue(
        "medium",
        "schema_violation",
        name,
        f"does not conform to the {entity_type} schema: " + "; ".join(details),
    )


def _graph_issues(graph: GraphProjection, names: Iterable[str]) -> list[Issue]:
    index = family_index(graph)
    lookup = graph.name_lookup()
    found: list[Issue] = []
    for name in names:
        why = generic_name(name)
        if why is not None:
            found.append(Issue("high", "generic_name", name, why))
        else:
            why = reference_language(name)
            if why is not None:
                found.append(Issue("high", "reference_language", name, why))
        sharing = lookup.names_with_slug(_slug(name))
        if len(sharing) > 1:
            later = [other for other in sharing if other > name]
            if later:
                listed = ", ".join(f"'{other}'" for other in later)
                found.append(
                    Issue(
                        "medium",
                        "near_duplicate",
                        name,
                        f"'{name}' and {listed} differ only in case, spacing or punctuation "
                        f"(id {_slug(name)}); merge them with graph_merge if they are one thing",
                    )
                )
        entry = index.entry(name)
        if (
            entry is not None
            and entry.confidence <= ORPHAN_MAX_CONFIDENCE
            and not index.has_edges(name)
        ):
            attrs = graph.entity_attributes(name)
            if attrs is not None and attrs.times_mentioned <= 1:
                found.append(
                    Issue(
                        "low",
                        "orphan",
                        name,
                        f"no edges, confidence {entry.confidence:g}, mentioned "
                        f"{attrs.times_mentioned} time(s): relate it or let it be pruned",
                    )
                )
    return found


def _session_scope(graph: GraphProjection, session: str) -> set[str]:
    """Entities with an edge whose source_session is `session`, or that property themselves
    (from the FamilyIndex's entries; the map of every session is kept until the next write)."""
    index = family_index(graph)

    def by_session() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for key, relation in index.relation_entries().items():
            if relation.session is not None:
                found.setdefault(relation.session, set()).update(key[:2])
        for entry in index.entries():
            if entry.session is not None:
                found.setdefault(entry.session, set()).add(entry.name)
        return found

    return index.derived(("sessions",), by_session).get(session, set())


def _issue_value(reading: Reading, issue: Issue) -> dict[str, Any]:
    return {
        "severity": issue.severity,
        "type": issue.check,
        "entity_id": reading.entity_id(issue.name),
        "entity_name": issue.name,
        "entity_type": reading.entity_type(issue.name),
        "description": issue.description,
    }
