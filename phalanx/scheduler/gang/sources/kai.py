"""scheduling.run.ai PodGroup (KAI) -> Gang.

Pods point at their PodGroup with the `pod-group-name` annotation and at their subGroup with
the `kai.scheduler/subgroup-name` label. SubGroups form a tree (`parent`): pods sit in the
leaves, so each leaf is a member group with its own minMember, and a parent's topology
constraint packs the pods of all leaves below it. Topology levels are node-label keys.
"""

from __future__ import annotations

from typing import Any, ClassVar

from phalanx.api import labels
from phalanx.api.scheduling import KaiPodGroup

from ..model import Gang, GangMode, MemberGroup, MemberRef, ObjectRef, PackConstraint, PackScope, Source, gang_id
from .base import annotations_of, labels_of


def kai_constraints(tc: Any) -> tuple[PackConstraint, ...]:
    if tc is None:
        return ()
    out: list[PackConstraint] = []
    if tc.required_topology_level:
        out.append(PackConstraint(tc.required_topology_level, True))
    if tc.preferred_topology_level and tc.preferred_topology_level != tc.required_topology_level:
        out.append(PackConstraint(tc.preferred_topology_level, False))
    return tuple(out)


class KaiSource:
    source: ClassVar[Source] = Source.KAI
    kind: ClassVar[type[KaiPodGroup]] = KaiPodGroup

    def gangs(self, obj: KaiPodGroup) -> list[Gang]:
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        spec = obj.spec
        subs = list(spec.sub_groups or ())
        children: dict[str, list[str]] = {}
        for sg in subs:
            if sg.parent:
                children.setdefault(sg.parent, []).append(sg.name)

        def leaves(n: str) -> list[str]:
            kids = children.get(n)
            if not kids:
                return [n]
            return [leaf for k in kids for leaf in leaves(k)]

        groups: list[MemberGroup] = []
        packs: list[PackScope] = []
        top = kai_constraints(spec.topology_constraint)
        if top:
            packs.append(PackScope("podgroup", None, top))
        for sg in subs:
            under = tuple(leaves(sg.name))
            if sg.name not in children:
                groups.append(MemberGroup(sg.name, sg.min_member or 0))
            cs = kai_constraints(sg.topology_constraint)
            if cs:
                packs.append(PackScope(sg.name, under, cs))
        min_member = spec.min_member if spec.min_member is not None else sum(g.min_member for g in groups)
        return [
            Gang(
                id=gang_id(Source.KAI, ns, name),
                source=Source.KAI,
                namespace=ns,
                name=name,
                min_member=max(min_member, 1),
                groups=tuple(groups),
                mode=GangMode.STRICT,
                packs=tuple(packs),
                # Named after its PodGang, as the base's is: follow the base's domain.
                follows=gang_id(Source.KAI, ns, base)
                if (base := labels_of(obj).get(labels.LABEL_BASE_PODGANG))
                else None,
                object_ref=ObjectRef(obj.api_version, obj.kind, ns, name),
                generation=obj.metadata.generation,
            )
        ]

    def member(self, pod: Any) -> MemberRef | None:
        name = annotations_of(pod).get(labels.ANNOTATION_KAI_POD_GROUP)
        if not name:
            return None
        return MemberRef(
            gang_id(Source.KAI, pod.metadata.namespace or "", name),
            labels_of(pod).get(labels.LABEL_KAI_SUBGROUP),
        )

    def gang_from_pod(self, pod: Any) -> Gang | None:
        return None
