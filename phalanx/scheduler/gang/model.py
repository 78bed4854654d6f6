"""One gang model for every backend's scheduler objects.

A PodGang, a Workload pod group, a KAI / Volcano / scheduler-plugins PodGroup and a set of
Koordinator gang annotations all say the same few things: which pods belong together, how
many of them (per sub-group) must be placed before any is bound, how long to wait, whether
a failure of one member resets the others (Koordinator's Strict / NonStrict), which other
gangs must be placed with it (a gang group), and how tightly to pack it in the topology.
The gang sources (`phalanx.scheduler.gang.sources`) translate each object into a `Gang`;
the coscheduling, topology and preemption plugins only ever see `Gang`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

# "<source>:<namespace>/<name>". The source is part of the id because different backends
# legitimately create objects with the same name (the KAI PodGroup is named after its PodGang).
GangId = str


class GangMode(StrEnum):
    """Koordinator's gang modes.

    Strict: when any member fails its cycle, every member waiting at Permit is rejected and
    its reservation released; the gang starts over in one piece.
    NonStrict: a member's failure touches no one else; assumed members keep their
    reservations and the gang keeps accumulating until minMember is reached (friendlier to
    very large gangs, at the risk of gangs deadlocking on each other's partial holdings).
    """

    STRICT = "Strict"
    NON_STRICT = "NonStrict"


class MatchPolicy(StrEnum):
    """Which members count towards minMember at Permit (Koordinator's match policy, the
    `gang.scheduling.koordinator.sh/match-policy` annotation).

    ONCE_SATISFIED: members waiting at Permit or bound; once the gang was allowed to bind,
    later members (a replacement for a crashed pod) schedule like ordinary pods.
    WAITING_AND_RUNNING: members waiting at Permit or bound, every time: a new member passes
    Permit only while the bound ones and the waiting ones reach minMember together.
    ONLY_WAITING: members waiting at Permit only: every new set of members must reach
    minMember by itself, however many are running.
    """

    ONCE_SATISFIED = "once-satisfied"
    WAITING_AND_RUNNING = "waiting-and-running"
    ONLY_WAITING = "only-waiting"

    @classmethod
    def parse(cls, value: str | None) -> MatchPolicy | None:
        """The policy spelled exactly as Koordinator spells it; None for anything else."""
        for policy in cls:
            if policy.value == value:
                return policy
        return None


class SatisfiedScope(StrEnum):
    """How long a gang stays "satisfied once" (its later members scheduled freely).

    OBJECT (Koordinator): for as long as the gang's object exists (a PodGroup), or, for a
    gang its pods declare, as long as any of its pods exists; a bound member marks it, as
    a member only binds once its gang passed Permit.
    PLACEMENT (Phalanx's default): while some member holds a node; once every placed member
    is gone (the gang was preempted, its pods replaced) the new pods are gang-scheduled
    again. A gang found with minMember bound (after a restart) is marked.
    """

    OBJECT = "object"
    PLACEMENT = "placement"


class Source(StrEnum):
    """Which object a gang was read from (also the prefix of its id)."""

    PODGANG = "podgang"  # scheduler.grove.io PodGang (phalanx-scheduler)
    WORKLOAD = "workload"  # scheduling.k8s.io Workload pod group (default-scheduler)
    KAI = "kai"  # scheduling.run.ai PodGroup (kai-scheduler)
    VOLCANO = "volcano"  # scheduling.volcano.sh PodGroup (volcano)
    COSCHEDULING = "coscheduling"  # scheduling.sigs.k8s.io PodGroup (+ Koordinator annotations)
    SCHEDULER_PLUGINS = "schedulerplugins"  # scheduling.x-k8s.io PodGroup (scheduler-plugins)
    ANNOTATION = "annotation"  # Koordinator's annotation-only gangs (no object)


def gang_id(source: Source | str, namespace: str, name: str) -> GangId:
    return f"{source}:{namespace}/{name}"


def split_gang_id(gid: GangId) -> tuple[str, str, str]:
    """(source, namespace, name) of a gang id."""
    source, _, rest = gid.partition(":")
    namespace, _, name = rest.partition("/")
    return source, namespace, name


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The API object a gang was read from: where the status controller writes its condition."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PackConstraint:
    """Keep pods within one topology domain.

    `topology_key` is a node label key (e.g. "topology.kubernetes.io/zone"): every pod of the
    scope must land on nodes with the same value of it. Required constraints filter; preferred
    ones only score.
    """

    topology_key: str
    required: bool

    def __str__(self) -> str:
        return f"{'required' if self.required else 'preferred'} {self.topology_key}"


@dataclass(frozen=True, slots=True)
class MemberGroup:
    """A named sub-group of a gang with its own minimum (PodGang podGroup, KAI subGroup,
    Volcano task, Workload pod group)."""

    name: str
    min_member: int


@dataclass(frozen=True, slots=True)
class PackScope:
    """Pack constraints over some of a gang's pods.

    `groups` None means every member (the gang-level constraint); otherwise the members of
    those sub-groups (one podGroup's own constraint, a PodGang topologyConstraintGroupConfig
    over a scaling-group replica's groups, a KAI parent subGroup over its children).
    """

    name: str
    groups: tuple[str, ...] | None
    constraints: tuple[PackConstraint, ...]

    def covers(self, group: str | None) -> bool:
        return self.groups is None or (group is not None and group in self.groups)

    @property
    def required(self) -> PackConstraint | None:
        for c in self.constraints:
            if c.required:
                return c
        return None

    @property
    def preferred(self) -> tuple[PackConstraint, ...]:
        return tuple(c for c in self.constraints if not c.required)


@dataclass(frozen=True, slots=True)
class Gang:
    """What a gang asks of the scheduler. Immutable: a changed object yields a new Gang."""

    id: GangId
    source: Source
    namespace: str
    name: str
    # Total members that must be assumed before any is bound.
    min_member: int
    # Per-sub-group minima (may be empty: then only `min_member` counts).
    groups: tuple[MemberGroup, ...] = ()
    mode: GangMode = GangMode.STRICT
    # Every gang (ids, sorted, including this one) that must reach its minimum before any
    # member of any of them is bound. A lone gang's group is just (id,).
    gang_group: tuple[GangId, ...] = ()
    # Seconds the gang may hold reservations at Permit; None = the plugin's default.
    schedule_timeout: float | None = None
    # Expected number of members (Koordinator total-number); informational.
    total_number: int | None = None
    # Topology pack constraints: the whole gang's, each group's, each group subset's.
    packs: tuple[PackScope, ...] = ()
    # A gang whose domain this one follows: a scaled PodGang follows its base PodGang into
    # the domain of the base's whole-gang pack constraint (the PodCliqueSet-level one),
    # required or preferred as the base has it (TopologyPacking).
    follows: GangId | None = None
    # The object to report on (None for annotation-only gangs).
    object_ref: ObjectRef | None = None
    # The object's metadata.generation when read (conditions carry it as observedGeneration).
    generation: int | None = None
    # Which members count towards minMember (None: the profile's default policy).
    match_policy: MatchPolicy | None = None
    # Reasons the object could not be read completely (surfaced in conditions and events).
    warnings: tuple[str, ...] = field(default=(), compare=False)
    # Why the gang's owner says it is not ready yet (a Grove PodGang not Initialized, or its
    # backend objects not synced): members wait in PreEnqueue as for missing members, which
    # is what lets the operator create pods without a scheduling gate (issue 28).
    hold: str | None = None

    def __post_init__(self) -> None:
        if not self.gang_group:
            object.__setattr__(self, "gang_group", (self.id,))
        elif self.id not in self.gang_group:
            object.__setattr__(self, "gang_group", tuple(sorted({*self.gang_group, self.id})))

    @property
    def display(self) -> str:
        """How users name it: the object ("PodGang ns/name") or the annotation gang."""
        if self.object_ref is not None:
            return str(self.object_ref)
        return f"gang {self.namespace}/{self.name}"

    def group(self, name: str | None) -> MemberGroup | None:
        if name is None:
            return None
        for g in self.groups:
            if g.name == name:
                return g
        return None

    @property
    def is_gang(self) -> bool:
        """False for a pod group without gang semantics (a Workload `basic` policy): its pods
        are scheduled one by one, like ordinary pods."""
        return self.min_member > 0

    def packs_for(self, group: str | None) -> tuple[PackScope, ...]:
        """The pack scopes a member of `group` falls under, broadest first."""
        return tuple(p for p in self.packs if p.covers(group))

    @property
    def in_group(self) -> bool:
        """Whether other gangs must be placed together with this one."""
        return len(self.gang_group) > 1


@dataclass(frozen=True, slots=True)
class MemberRef:
    """Which gang (and sub-group) a pod says it belongs to."""

    gang_id: GangId
    group: str | None = None
