"""What the scheduler knows about one gang right now (counts, reservations, representative).

`GangState` is plain bookkeeping with no I/O, owned by `GangCache`. Pods are identified by
their key ("namespace/name"); the informer events and the plugin's Reserve/Unreserve/PostBind
calls keep it current.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from enum import StrEnum

from .model import Gang, GangId, MatchPolicy, SatisfiedScope


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
    # Plugins' cache of the PodInfo built from `pod` (rebuilt when `pod` changes).
    _info: object = None
    # Larger members go first in representative order, so a gang's big pods are not left
    # without a node by small peers spread over it: (-gpus, -cpu, -memory).
    size: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(slots=True)
class Failure:
    """Why the gang's last attempt failed, as users read it."""

    reason: str  # CamelCase: Unschedulable, GangScheduleTimeout, MemberRejected...
    message: str  # "member ns/p-3: 0/512 nodes are available: 480 Insufficient nvidia.com/gpu..."
    pod: str  # the member whose failure it was
    at: float  # clock.now()
    diagnosis: dict[str, object] | None = None  # Diagnosis.to_dict() of that member
    # Members that ran a cycle in this attempt (the failed one and those released from
    # Permit): the scheduler wrote their PodScheduled condition itself.
    attempted: frozenset[str] = frozenset()


class GangState:
    """Counts are kept incrementally: PreEnqueue, PreFilter and Permit ask them for every
    member, so they must not walk the member list. Change members, reservations and bindings
    only through the methods below."""

    __slots__ = (
        "id", "spec", "members", "assumed", "waiting", "bound", "once_satisfied", "resets", "timeouts",
        "last_failure", "version", "_created_in", "_placed", "_placed_in", "_gated", "_order", "_cursor",
        "_moves", "_quota", "scheduler", "policy", "scope", "_bound_in", "succeeded",
    )

    def __init__(self, gid: GangId, spec: Gang | None = None) -> None:
        self.id = gid
        self.spec = spec
        # Live members (created, not terminated, not being deleted), by pod key. Read-only.
        self.members: dict[str, Member] = {}
        # Members this scheduler assumed (reserved on a node), not bound yet. Read-only.
        self.assumed: dict[str, str] = {}
        # Assumed members parked at Permit (a subset of `assumed`); the manager edits it.
        self.waiting: set[str] = set()
        # Members bound to a node (from the informer or PostBind). Read-only.
        self.bound: dict[str, str] = {}
        # minMember was reached once and the gang was allowed to bind: later members (e.g. a
        # replacement for a crashed pod) schedule like ordinary pods (Koordinator's "after gang").
        self.once_satisfied = False
        # Attempts that ended in releasing the gang's reservations (strict failure or timeout).
        self.resets = 0
        self.timeouts = 0
        # Members that left because they ran to completion (phase Succeeded).
        self.succeeded = 0
        self.last_failure: Failure | None = None
        # Bumped on every change the status controller may report.
        self.version = 0
        self._created_in: dict[str | None, int] = {}
        self._placed: set[str] = set()  # assumed or bound
        self._placed_in: dict[str | None, int] = {}
        self._gated = 0
        self._order: list[str] | None = None  # member keys in representative order (lazy)
        self._cursor = 0  # no pending member before this index of _order
        self._moves = 0  # bumped whenever a member is placed or unplaced
        self._quota: tuple[tuple[object, ...], tuple[dict[str | None, int], int] | None] | None = (
            None
        )
        self._bound_in: dict[str | None, int] = {}
        # The schedulerName of its members (the profile whose defaults apply), and what the
        # cache resolved from the spec and those defaults (see gang/defaults.py).
        self.scheduler: str | None = None
        self.policy = MatchPolicy.ONCE_SATISFIED
        self.scope = SatisfiedScope.PLACEMENT

    def __repr__(self) -> str:
        return f"GangState({self.id}, created={self.created}, placed={self.placed}, once_satisfied={self.once_satisfied})"

    # --- mutations ---------------------------------------------------------------------------

    def add_member(self, m: Member) -> None:
        self.members[m.key] = m
        self._created_in[m.group] = self._created_in.get(m.group, 0) + 1
        self._gated += m.gated
        self._order = None

    def remove_member(self, key: str) -> Member | None:
        m = self.members.pop(key, None)
        if m is None:
            return None
        self._created_in[m.group] -= 1
        self._gated -= m.gated
        self.waiting.discard(key)
        self.assumed.pop(key, None)
        if self.bound.pop(key, None) is not None:
            self._bound_in[m.group] -= 1
        self._unplace(key, m.group)
        self._order = None
        return m

    def set_gated(self, m: Member, gated: bool) -> None:
        if m.gated != gated:
            self._gated += 1 if gated else -1
            m.gated = gated
            self._cursor = 0

    def assume(self, key: str, node: str) -> None:
        self.assumed[key] = node
        self._place(key)

    def forget(self, key: str) -> bool:
        """Drop an assumption (not a binding). True when there was one."""
        self.waiting.discard(key)
        if self.assumed.pop(key, None) is None:
            return False
        if key not in self.bound:
            m = self.members.get(key)
            self._unplace(key, m.group if m is not None else None)
        return True

    def bind(self, key: str, node: str) -> None:
        self.assumed.pop(key, None)
        self.waiting.discard(key)
        m = self.members.get(key)
        if key not in self.bound and m is not None:
            self._bound_in[m.group] = self._bound_in.get(m.group, 0) + 1
            self._moves += 1
        self.bound[key] = node
        if m is not None:
            m.node = node
        self._place(key)

    def _place(self, key: str) -> None:
        m = self.members.get(key)
        if m is not None and key not in self._placed:
            self._placed.add(key)
            self._placed_in[m.group] = self._placed_in.get(m.group, 0) + 1
            self._moves += 1

    def _unplace(self, key: str, group: str | None) -> None:
        if key in self._placed:
            self._placed.discard(key)
            self._placed_in[group] -= 1
            self._moves += 1
            self._cursor = 0  # an earlier member may be pending again

    # --- counts --------------------------------------------------------------------------

    @property
    def created(self) -> int:
        return len(self.members)

    @property
    def placed(self) -> int:
        """Members holding a node: assumed or bound."""
        return len(self._placed)

    def created_in(self, group: str) -> int:
        return self._created_in.get(group, 0)

    def placed_in(self, group: str) -> int:
        return self._placed_in.get(group, 0)

    @property
    def counted(self) -> int:
        """Members that count towards minMember under the gang's match policy: placed ones
        (waiting at Permit or bound), or only those waiting for `only-waiting`."""
        if self.policy is MatchPolicy.ONLY_WAITING:
            return len(self._placed) - len(self.bound)
        return len(self._placed)

    def counted_in(self, group: str | None) -> int:
        n = self._placed_in.get(group, 0)
        if self.policy is MatchPolicy.ONLY_WAITING:
            n -= self._bound_in.get(group, 0)
        return n

    @property
    def free(self) -> bool:
        """Members schedule like ordinary pods: satisfied once under `once-satisfied`, or a
        pod group without gang semantics."""
        spec = self.spec
        if spec is not None and not spec.is_gang:
            return True
        return self.once_satisfied and self.policy is MatchPolicy.ONCE_SATISFIED

    def _met_after_satisfied(self) -> bool:
        """Under `waiting-and-running` / `only-waiting`, a gang satisfied once whose placed
        members still reach every minimum: a new member (a replacement, an extra) is
        admitted, and Permit counts it under the policy."""
        spec = self.spec
        if spec is None or not self.once_satisfied or self.policy is MatchPolicy.ONCE_SATISFIED:
            return False
        if len(self._placed) < spec.min_member:
            return False
        return all(self._placed_in.get(g.name, 0) >= g.min_member for g in spec.groups)

    def is_pending(self, key: str) -> bool:
        """Created, not gated, not placed: could be scheduled now."""
        m = self.members.get(key)
        return m is not None and not m.gated and key not in self._placed

    def pending_members(self) -> list[Member]:
        """Members neither assumed nor bound, in representative order (largest first, then
        oldest, then by key)."""
        return [self.members[k] for k in self._ordered() if k not in self._placed]

    def first_pending(self, exclude: Container[str] = ()) -> str | None:
        """The first schedulable pending member in representative order, not in `exclude`,
        that counts towards the gang's minimum (see `counts_towards_minimum`); any pending
        member once the gang was satisfied. Amortised O(1) when every group is short (the
        usual case): members before the cursor are placed or gated; anything that undoes
        that resets it."""
        order = self._ordered()
        i = self._cursor
        while i < len(order) and not self.is_pending(order[i]):
            i += 1
        self._cursor = i
        quota = self._minimum_quota()
        for key in order[i:]:
            if (
                key not in exclude
                and self.is_pending(key)
                and self._counts(quota, self.members[key].group)
            ):
                return key
        return None

    # --- per-group minimums ----------------------------------------------------------------

    def _minimum_quota(self) -> tuple[dict[str | None, int], int] | None:
        """(members still needed per group, members needed beyond every group's own
        minimum), or None when any member counts (satisfied once, or no spec)."""
        spec = self.spec
        if spec is None or self.free or not spec.is_gang or self._met_after_satisfied():
            return None
        cached = self._quota
        if (
            cached is not None
            and cached[0][0] == self._moves
            and cached[0][1] is spec
            and cached[0][2] is self.policy
        ):
            return cached[1]
        stamp = (self._moves, spec, self.policy)
        per_group = {g.name: max(0, g.min_member - self.counted_in(g.name)) for g in spec.groups}
        beyond = max(0, spec.min_member - self.counted - sum(per_group.values()))
        quota = (per_group, beyond)
        self._quota = (stamp, quota)
        return quota

    @staticmethod
    def _counts(quota: tuple[dict[str | None, int], int] | None, group: str | None) -> bool:
        if quota is None:
            return True
        per_group, beyond = quota
        return per_group.get(group, 0) > 0 or beyond > 0

    def counts_towards_minimum(self, key: str) -> bool:
        """Whether placing this member brings the gang closer to its minimum: its group is
        below its own minReplicas, or the gang's total minMember asks for more than the
        groups' minima add up to. Members beyond every minimum are extras: they wait until
        the gang is satisfied, so they never take the room another group's minimum needs."""
        m = self.members.get(key)
        return m is not None and self._counts(self._minimum_quota(), m.group)

    def is_extra(self, key: str) -> bool:
        """A pending member beyond every minimum of a gang that has them all placed (its
        group at its minReplicas and the gang at minMember): placing it adds capacity but
        completes nothing."""
        spec = self.spec
        m = self.members.get(key)
        if spec is None or m is None or not spec.is_gang or key in self._placed:
            return False
        g = spec.group(m.group)
        if g is not None and self.counted_in(g.name) < g.min_member:
            return False
        return self.counted >= spec.min_member

    def needed_members(self, first: str | None = None) -> list[Member]:
        """The pending (ungated) members that bring the gang to its minimum, per group, in
        representative order (`first` ahead of the others when it counts). Empty once
        satisfied."""
        quota = self._minimum_quota()
        if quota is None:
            return []
        per_group, beyond = dict(quota[0]), quota[1]
        pending = [m for m in self.pending_members() if not m.gated]
        if first is not None:
            pending.sort(key=lambda m: m.key != first)
        out: list[Member] = []
        for m in pending:
            if per_group.get(m.group, 0) > 0:
                per_group[m.group] -= 1
            elif beyond > 0:
                beyond -= 1
            else:
                continue
            out.append(m)
        return out

    def _ordered(self) -> list[str]:
        if self._order is None:
            self._order = sorted(
                self.members, key=lambda k: (self.members[k].size, self.members[k].created, k)
            )
            self._cursor = 0
        return self._order

    # --- conditions --------------------------------------------------------------------------

    def missing_members(self) -> list[str]:
        """Human descriptions of what is missing before the gang can be scheduled (empty: complete)."""
        spec = self.spec
        if spec is None:
            return []
        if self._all_created(spec):
            if self._gates_hold(spec):
                return [(f"all {self.created} members created but {self._gated} still have "
                         "scheduling gates")]
            return [spec.hold] if spec.hold else []
        out: list[str] = []
        if self.created < spec.min_member:
            out.append(f"{self.created}/{spec.min_member} members created")
        if len(spec.groups) > 1 or not out:  # one group's count is the gang's: say it once
            for g in spec.groups:
                have = self.created_in(g.name)
                if have < g.min_member:
                    out.append(f"group {g.name}: {have}/{g.min_member} created")
        return out

    def held_by_owner(self) -> bool:
        """Every member the gang needs exists; only its owner still holds it back (members
        behind a scheduling gate, or the owner's `hold`, e.g. a PodGang not Initialized)."""
        spec = self.spec
        return spec is not None and self._all_created(spec) and \
            (self._gates_hold(spec) or bool(spec.hold))

    def _all_created(self, spec: Gang) -> bool:
        """As many members exist as the gang needs, in total and in every group."""
        return self.created >= spec.min_member and all(
            self.created_in(g.name) >= g.min_member for g in spec.groups)

    def _gates_hold(self, spec: Gang) -> bool:
        """Too few members are free of scheduling gates to reach the minimum."""
        return self.created - self._gated < spec.min_member

    @property
    def complete(self) -> bool:
        return self.spec is not None and not self.missing_members()

    def min_satisfied(self) -> bool:
        """Enough members assumed or bound (in total and per group) to let them bind."""
        spec = self.spec
        if spec is None:
            return False
        if self.free:
            return True
        if self.counted < spec.min_member:
            return False
        return all(self.counted_in(g.name) >= g.min_member for g in spec.groups)

    def still_needed(self) -> int:
        """Members that must still be placed to reach minMember (at least one per short group)."""
        spec = self.spec
        if spec is None or self.free:
            return 0
        need_total = max(0, spec.min_member - self.counted)
        need_groups = sum(max(0, g.min_member - self.counted_in(g.name)) for g in spec.groups)
        return max(need_total, need_groups)

    def touch(self) -> None:
        self.version += 1
