"""scheduling.volcano.sh PodGroup -> Gang.

Pods point at their PodGroup with the `scheduling.k8s.io/group-name` annotation and at their
task with `volcano.sh/task-spec`; `minTaskMember` gives per-task minima. `networkTopology`
(HyperNode tiers) is turned back into a node-label key through the ClusterTopology (tier 1 =
the narrowest level above a node); without one it cannot be honoured and the gang says so.
"""

from __future__ import annotations

from typing import Any, ClassVar

from phalanx.api import labels
from phalanx.api.scheduling import VolcanoPodGroup

from ..model import Gang, GangMode, MemberGroup, MemberRef, ObjectRef, PackConstraint, PackScope, Source, gang_id
from .base import Levels, LevelsProvider, annotations_of, labels_of, positive_int


class VolcanoSource:
    source: ClassVar[Source] = Source.VOLCANO
    kind: ClassVar[type[VolcanoPodGroup]] = VolcanoPodGroup

    def __init__(self, levels: LevelsProvider | None = None) -> None:
        self._levels = levels

    def gangs(self, obj: VolcanoPodGroup) -> list[Gang]:
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        spec = obj.spec
        groups = tuple(MemberGroup(t, n) for t, n in sorted((spec.min_task_member or {}).items()) if n > 0)
        warnings: list[str] = []
        packs: tuple[PackScope, ...] = ()
        nt = spec.network_topology.to_dict() if spec.network_topology is not None else {}
        if nt:
            tier = positive_int(nt.get("highestTierAllowed"))
            levels: Levels | None = self._levels() if self._levels else None
            key = levels.key_of_tier(tier) if levels is not None and tier is not None else None
            if key is None:
                warnings.append(f"networkTopology {nt} ignored: no ClusterTopology level for that tier")
            else:
                packs = (PackScope("podgroup", None, (PackConstraint(key, nt.get("mode", "hard") == "hard"),)),)
        min_member = spec.min_member if spec.min_member is not None else sum(g.min_member for g in groups)
        return [
            Gang(
                id=gang_id(Source.VOLCANO, ns, name),
                source=Source.VOLCANO,
                namespace=ns,
                name=name,
                min_member=max(min_member, 1),
                groups=groups,
                mode=GangMode.STRICT,
                packs=packs,
                # Named after its PodGang, as the base's is: follow the base's domain.
                follows=gang_id(Source.VOLCANO, ns, base)
                if (base := labels_of(obj).get(labels.LABEL_BASE_PODGANG))
                else None,
                object_ref=ObjectRef(obj.api_version, obj.kind, ns, name),
                generation=obj.metadata.generation,
                warnings=tuple(warnings),
            )
        ]

    def member(self, pod: Any) -> MemberRef | None:
        ann = annotations_of(pod)
        name = ann.get(labels.ANNOTATION_VOLCANO_GROUP_NAME)
        if not name:
            return None
        return MemberRef(
            gang_id(Source.VOLCANO, pod.metadata.namespace or "", name),
            ann.get(labels.ANNOTATION_VOLCANO_TASK_SPEC),
        )

    def gang_from_pod(self, pod: Any) -> Gang | None:
        return None
