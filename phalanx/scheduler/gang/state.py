"""What the scheduler knows about one gang right now (counts, reservations, representative).

`GangState` is plain bookkeeping with no I/O, owned by `GangCache`. Pods are identified by
their key ("namespace/name"); the informer events and the plugin's Reserve/Unreserve/PostBind
calls keep it current.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from .model import Gang, GangId


class Phase(StrEnum):
    """Where a gang stands, as the status controller reports it."""

    NOT_FOUND = "GangNotFound"  # pods name a gang object the scheduler has not seen
    INCOMPLETE = "GangIncomplete"  # fewer members created than minMember
    GROUP_INCOMPLETE = "GangGroupIncomplete"  # a gang of its gang group is missing/incomplete
    PENDING = "Pending"  # complete, being scheduled (no failure yet)
    WAITING = "WaitingForMembers"  # some members assumed, waiting at Permit for the rest
    UNSCHEDULABLE = "Unschedulable"  # last attempt failed; `last_failure` says why
    TIMED_OUT = "GangScheduleTimeout"  # reservations released after the schedule timeout
    SCHEDULED = "Scheduled"  # minMember assumed and allowed to bind (once satisfied)


@dataclass(slots=True)
class Member:
    key: str
    uid: str
    group: str | None
    # Creation time (seconds) then key: the deterministic order representatives follow.
    created: float
    node: str | None = None  # spec.nodeName once bound
    # Still carries scheduling gates (e.g. Grove's podgang-pending-creation): it exists but
    # cannot be scheduled yet, so it does not count towards starting the gang.
    gated: bool = False
    # The informer's latest object (shared, read-only): what preemption sizes the member by.
    pod: object = None


@dataclass(slots=True)
class Failure:
    """Why the gang's last attempt failed, as users read it."""

    reason: str  # CamelCase: Unschedulable, GangScheduleTimeout, MemberRejected...
    message: str  # "member ns/p-3: 0/512 nodes are available: 480 Insufficient nvidia.com/gpu..."
    pod: str  # the member whose failure it was
    at: float  # clock.now()
    diagnosis: dict[str, object] | None = None  # Diagnosis.to_dict() of that member


@dataclass(slots=True)
class GangState:
    id: GangId
    spec: Gang | None = None
    # Live members (created, not terminated, not being deleted), by pod key.
    members: dict[str, Member] = field(default_factory=dict)
    # Members this scheduler assumed (reserved on a node) and that are not bound yet.
    assumed: dict[str, str] = field(default_factory=dict)
    # Assumed members parked at Permit (a subset of `assumed`).
    waiting: set[str] = field(default_factory=set)
    # Members bound to a node (from the informer or PostBind).
    bound: dict[str, str] = field(default_factory=dict)
    # minMember was reached once and the gang was allowed to bind: later members (e.g. a
    # replacement for a crashed pod) schedule like ordinary pods (Koordinator's "after gang").
    once_satisfied: bool = False
    # Attempts that ended in releasing the gang's reservations (strict failure or timeout).
    resets: int = 0
    timeouts: int = 0
    last_failure: Failure | None = None
    # Bumped on every change the status controller may report.
    version: int = 0

    # --- counts --------------------------------------------------------------------------

    @property
    def created(self) -> int:
        return len(self.members)

    @property
    def placed(self) -> int:
        """Members holding a node: assumed or bound."""
        return len(self.assumed) + sum(1 for k in self.bound if k not in self.assumed)

    def created_in(self, group: str) -> int:
        return sum(1 for m in self.members.values() if m.group == group)

    def placed_in(self, group: str) -> int:
        n = 0
        for key, m in self.members.items():
            if m.group == group and (key in self.assumed or key in self.bound):
                n += 1
        return n

    def pending_members(self) -> list[Member]:
        """Members neither assumed nor bound, in representative order."""
        out = [m for k, m in self.members.items() if k not in self.assumed and k not in self.bound]
        out.sort(key=lambda m: (m.created, m.key))
        return out

    # --- conditions --------------------------------------------------------------------------

    def missing_members(self) -> list[str]:
        """Human descriptions of what is missing before the gang can be scheduled (empty: complete)."""
        spec = self.spec
        if spec is None:
            return []
        out: list[str] = []
        if self.created < spec.min_member:
            out.append(f"{self.created}/{spec.min_member} members created")
        for g in spec.groups:
            have = self.created_in(g.name)
            if have < g.min_member:
                out.append(f"group {g.name}: {have}/{g.min_member} created")
        if not out:
            ready = sum(1 for m in self.members.values() if not m.gated)
            if ready < spec.min_member:
                gated = self.created - ready
                out.append(f"all {self.created} members created but {gated} still have scheduling gates")
        return out

    @property
    def complete(self) -> bool:
        return self.spec is not None and not self.missing_members()

    def min_satisfied(self) -> bool:
        """Enough members assumed or bound (in total and per group) to let them bind."""
        spec = self.spec
        if spec is None:
            return False
        if self.once_satisfied:
            return True
        if self.placed < spec.min_member:
            return False
        return all(self.placed_in(g.name) >= g.min_member for g in spec.groups)

    def still_needed(self) -> int:
        """Members that must still be placed to reach minMember (at least one per short group)."""
        spec = self.spec
        if spec is None or self.once_satisfied:
            return 0
        need_total = max(0, spec.min_member - self.placed)
        need_groups = sum(max(0, g.min_member - self.placed_in(g.name)) for g in spec.groups)
        return max(need_total, need_groups)

    def touch(self) -> None:
        self.version += 1
