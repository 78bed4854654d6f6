"""scheduling.k8s.io Workload -> Gangs (what default-scheduler reads with gangScheduling).

As in kube-scheduler's GangScheduling plugin (KEP-4671), each Workload pod group is its own
gang: a `gang` policy's minCount members must be placed together; a `basic` policy group has
no gang semantics (its pods are scheduled one by one). Pods point at their pod group with
`spec.workloadRef {name, podGroup}`.

Not covered: `spec.schedulingGroup` (1.36+ standalone PodGroup objects) is recognised on pods
but its PodGroup kind is not modelled yet, so such pods are held with GangNotFound.
"""

from __future__ import annotations

from typing import Any, ClassVar

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
