"""The tombstone gate: which deletions every member has seen, so that collecting their
tombstones can never let a late, older event revive what was deleted.

A tombstone written by origin n at origin_seq s may be collected when, for every active
member m (the explicit members, minus the retired ones, plus this node):

- m's received-frontier covers it: F_m[n] >= s (m has folded the deletion), and
- this node holds everything m had received from itself: own[m] >= F_m[m] (no event of m
  older than what m reported can still arrive here).

Any later event of m carries a stamp above what it had seen, so nothing older than the
tombstone can come from m afterwards. A member that never reported a frontier blocks
everything, as does a node that writes without being a member: members are explicit, and a
departed one is retired by an operator, never by a timeout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Gate", "tombstone_gate"]


@dataclass(frozen=True)
class Gate:
    """`watermark[n]`: tombstones of origin n with origin_seq <= it may be collected (0:
    none). `blocked_by`: why nothing may be collected (empty when the watermark applies)."""

    watermark: dict[str, int] = field(default_factory=dict)
    blocked_by: list[str] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return not self.blocked_by


def tombstone_gate(
    me: str,
    own: Mapping[str, int],
    members: Sequence[str],
    retired: Sequence[str],
    frontiers: Mapping[str, Mapping[str, int]],
) -> Gate:
    """The gate for node `me`, whose log holds `own` ({origin: last seq}), given the declared
    `members`, the `retired` ones and every member's last reported frontier."""
    gone = set(retired)
    active = [m for m in dict.fromkeys([*members, me]) if m not in gone]
    blocked: list[str] = []
    if not members:
        blocked.append("no members are declared (GRAPHMEM_REPLICA_MEMBERS)")
    for origin in sorted(own):
        if origin not in active and origin not in gone:
            blocked.append(
                f"node {origin} writes but is not a member: add it to "
                "GRAPHMEM_REPLICA_MEMBERS, or retire it"
            )
    reported: dict[str, Mapping[str, int]] = {}
    for m in active:
        if m == me:
            reported[m] = own
            continue
        frontier = frontiers.get(m)
        if frontier is None:
            blocked.append(f"member {m} has not reported what it received")
            continue
        reported[m] = frontier
        if own.get(m, 0) < frontier.get(m, 0):
            blocked.append(
                f"this node holds {own.get(m, 0)} of member {m}'s events, {m} reported "
                f"{frontier.get(m, 0)}: wait until they arrive"
            )
    if blocked:
        return Gate({}, blocked)
    origins = set().union(*(f.keys() for f in reported.values())) | set(own)
    watermark = {o: min(f.get(o, 0) for f in reported.values()) for o in sorted(origins)}
    return Gate(watermark, [])
