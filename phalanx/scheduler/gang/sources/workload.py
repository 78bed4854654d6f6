"""scheduling.k8s.io Workload -> Gangs (what default-scheduler reads with gangScheduling).

As in kube-scheduler's GangScheduling plugin (KEP-4671), each Workload pod group is its own
gang: a `gang` policy's minCount members must be placed together; a `basic` policy group has
no gang semantics (its pods are scheduled one by one). Pods point at their pod group with
`spec.workloadRef {name, podGroup}`.

A Workload that mirrors a PodGang (label `grove.io/podgang`) with a pod group per PodGang
group is the exception: its gang pod groups form one gang group, as the PodGang's groups do
(see `WorkloadSource.gangs`).

Kubernetes 1.36+ (`spec.schedulingGroup.podGroupName` on pods, standalone PodGroup objects of
scheduling.k8s.io/v1alpha2 and v1beta1): `PodGroupSource` below.
"""

from __future__ import annotations

from typing import Any, ClassVar

from phalanx.api import labels
from phalanx.api.scheduling import Workload

from ..model import Gang, GangMode, MemberRef, ObjectRef, Source, gang_id


def _gang_name(workload: str, pod_group: str) -> str:
    return f"{workload}/{pod_group}"


class WorkloadSource:
    source: ClassVar[Source] = Source.WORKLOAD
    kind: ClassVar[type[Workload]] = Workload

    def gangs(self, obj: Workload) -> list[Gang]:
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        out: list[Gang] = []
        # A Workload that mirrors a PodGang (it carries the PodGang's label) with one pod
        # group per PodGang group keeps the PodGang's meaning: the gang is satisfied when
        # every group reaches its own minimum, so its gang pod groups form one gang group.
        # Other Workloads keep KEP-4671's meaning: each pod group is scheduled on its own.
        # (Phalanx's kube backend writes one pod group per PodGang, minCount = the sum, as
        # kube-scheduler cannot tie pod groups together: per-group minimums are then lost,
        # which admission reports as PerGroupMinimums.)
        together: tuple[str, ...] = ()
        if (obj.metadata.labels or {}).get(labels.LABEL_PODGANG):
            together = tuple(sorted(gang_id(Source.WORKLOAD, ns, _gang_name(name, pg.name))
                                    for pg in obj.spec.pod_groups if pg.policy.gang is not None))
        for pg in obj.spec.pod_groups:
            gang = pg.policy.gang
            gname = _gang_name(name, pg.name)
            out.append(
                Gang(
                    id=gang_id(Source.WORKLOAD, ns, gname),
                    source=Source.WORKLOAD,
                    namespace=ns,
                    name=gname,
                    # 0: a `basic` group, scheduled pod by pod.
                    min_member=gang.min_count if gang is not None else 0,
                    mode=GangMode.STRICT,
                    gang_group=together if gang is not None and len(together) > 1 else (),
                    object_ref=ObjectRef(obj.api_version, obj.kind, ns, name),
                    generation=obj.metadata.generation,
                )
            )
        return out

    def member(self, pod: Any) -> MemberRef | None:
        ref = getattr(pod.spec, "workload_ref", None)
        ns = pod.metadata.namespace or ""
        if ref is not None:
            return MemberRef(gang_id(Source.WORKLOAD, ns, _gang_name(ref.name, ref.pod_group)))
        sg = getattr(pod.spec, "scheduling_group", None)
        if sg is not None and sg.pod_group_name:
            return MemberRef(gang_id(Source.WORKLOAD, ns, sg.pod_group_name))
        return None

    def gang_from_pod(self, pod: Any) -> Gang | None:
        return None


class PodGroupSource:
    """scheduling.k8s.io/v1alpha2+ standalone PodGroup -> one Gang (Kubernetes 1.36+).

    Added by the backends engineer (issue 9). Each PodGroup is a gang of its own, with the
    policy copied from its Workload's template (`gang.minCount`, or `basic`: no gang). Pods
    point at it with `spec.schedulingGroup.podGroupName`, which `WorkloadSource.member`
    already maps to this gang id. One instance per API version (the kind differs).
    """

    source: ClassVar[Source] = Source.WORKLOAD

    def __init__(self, kind: type[Any]) -> None:
        self.kind = kind  # e.g. phalanx.api.workloads.PodGroupV1Beta1

    def gangs(self, obj: Any) -> list[Gang]:
        ns, name = obj.metadata.namespace or "", obj.metadata.name or ""
        gang = obj.spec.scheduling_policy.gang
        return [
            Gang(
                id=gang_id(Source.WORKLOAD, ns, name),
                source=Source.WORKLOAD,
                namespace=ns,
                name=name,
                min_member=gang.min_count if gang is not None else 0,
                mode=GangMode.STRICT,
                object_ref=ObjectRef(obj.api_version, obj.kind, ns, name),
                generation=obj.metadata.generation,
            )
        ]

    def member(self, pod: Any) -> MemberRef | None:
        return None  # WorkloadSource.member answers for spec.schedulingGroup

    def gang_from_pod(self, pod: Any) -> Gang | None:
        return None
