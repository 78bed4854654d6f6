"""scheduler.grove.io PodGang -> Gang (what phalanx-scheduler reads directly).

Every PodGang podGroup is a sub-group with minReplicas; the gang's minMember is their sum.
Pods point at their PodGang with the `grove.io/podgang` label and at their group with the
`grove.io/podclique` label (Grove names each podGroup after its PodClique). Pack constraints
hold node-label keys already: the gang's, each group's, and each topologyConstraintGroupConfig's
(a subset of groups, e.g. one scaling-group replica). A scaled PodGang (label
`grove.io/base-podgang`) follows its base PodGang's domain (`Gang.follows`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from phalanx.api import labels
from phalanx.api.podgang import PODGANG_INITIALIZED, PodGang

from ..model import Gang, GangMode, MemberGroup, MemberRef, ObjectRef, PackConstraint, PackScope, Source, gang_id
from .base import labels_of


def pack_constraints(tc: Any) -> tuple[PackConstraint, ...]:
    pc = getattr(tc, "pack_constraint", None) if tc is not None else None
    if pc is None:
        return ()
    out: list[PackConstraint] = []
    if pc.required:
        out.append(PackConstraint(pc.required, True))
    if pc.preferred and pc.preferred != pc.required:
        out.append(PackConstraint(pc.preferred, False))
    return tuple(out)


# The PodGang conditions the Grove operator sets before a pod of the gang may be scheduled
# (it lifts its scheduling gate only then: phalanx.operator.podclique).
_READY_CONDITIONS = (PODGANG_INITIALIZED, "BackendSynced")


def operator_hold(obj: PodGang) -> str | None:
    """Why an operator-managed PodGang's pods must still wait, or None.

    The operator creates pods without a gate for schedulers that hold them here, so this is
    the guarantee the gate gave: no pod binds before its PodGang is Initialized (every pod
    exists and is referenced) and its backend objects exist. PodGangs nobody manages (written
    by hand) have no such conditions and are not held."""
    if (obj.metadata.labels or {}).get(labels.LABEL_MANAGED_BY) != labels.MANAGED_BY_VALUE:
        return None
    for cond in _READY_CONDITIONS:
        if not obj.is_condition_true(cond):
            c = obj.condition(cond)
            detail = f" ({c.reason}: {c.message})" if c is not None and c.message else ""
            return f"PodGang {obj.metadata.name} is not {cond} yet{detail}"
    return None


class PodGangSource:
    source: ClassVar[Source] = Source.PODGANG
    kind: ClassVar[type[PodGang]] = PodGang

    def gangs(self, obj: PodGang) -> list[Gang]:
        # A PodGang handed to another backend (grove.io/scheduler-name) is scheduled through
        # that backend's object (Workload, PodGroup); as a gang of its own it would have no
        # members and be reported GangIncomplete forever.
        owner = (obj.metadata.labels or {}).get(labels.LABEL_SCHEDULER_NAME)
        if owner and owner != labels.SCHEDULER_PHALANX:
            return []
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        spec = obj.spec
        groups = tuple(MemberGroup(g.name, g.min_replicas) for g in spec.pod_groups)
        packs: list[PackScope] = []
        top = pack_constraints(spec.topology_constraint)
        if top:
            packs.append(PackScope("podgang", None, top))
        for cfg in spec.topology_constraint_group_configs or ():
            cs = pack_constraints(cfg.topology_constraint)
            if cs and cfg.pod_group_names:
                packs.append(PackScope(cfg.name, tuple(cfg.pod_group_names), cs))
        for g in spec.pod_groups:
            cs = pack_constraints(g.topology_constraint)
            if cs:
                packs.append(PackScope(g.name, (g.name,), cs))
        return [
            Gang(
                id=gang_id(Source.PODGANG, ns, name),
                source=Source.PODGANG,
                namespace=ns,
                name=name,
                min_member=sum(g.min_member for g in groups),
                groups=groups,
                mode=GangMode.STRICT,
                packs=tuple(packs),
                follows=gang_id(Source.PODGANG, ns, base)
                if (base := (obj.metadata.labels or {}).get(labels.LABEL_BASE_PODGANG))
                else None,
                object_ref=ObjectRef(obj.api_version, obj.kind, ns, name),
                generation=obj.metadata.generation,
                hold=operator_hold(obj),
            )
        ]

    def member(self, pod: Any) -> MemberRef | None:
        lbl = labels_of(pod)
        name = lbl.get(labels.LABEL_PODGANG)
        if not name:
            return None
        return MemberRef(
            gang_id(Source.PODGANG, pod.metadata.namespace or "", name),
            lbl.get(labels.LABEL_PODCLIQUE),
        )

    def gang_from_pod(self, pod: Any) -> Gang | None:
        return None
