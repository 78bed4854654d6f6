"""End to end on MemoryCluster: the operator materialises Grove's multi-node disaggregated
sample under each backend, and the cluster then holds exactly the objects that backend's
scheduler needs, each pod points at one of them, and they all existed before the first
scheduling gate was lifted. No scheduler runs: only the operator and the backends."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api import labels
from phalanx.api.base import ObjectMeta, Resource
from phalanx.api.core import PriorityClass
from phalanx.api.config import OperatorConfiguration
from phalanx.api.grove import PodCliqueSet, PodGang
from phalanx.api.pod import Pod
from phalanx.api.queue import unlimited_queue
from phalanx.api.schedulerplugins import POD_GROUP_LABEL, SchedulerPluginsPodGroup
from phalanx.api.scheduling import GANG_OBJECT_KINDS
from phalanx.api.workloads import WORKLOAD_KINDS
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import OperatorManager

from . import samples as s

SCHEDULER_KINDS: list[type[Resource]] = list(
    dict.fromkeys(
        [*GANG_OBJECT_KINDS, SchedulerPluginsPodGroup,
         *(k for pair in WORKLOAD_KINDS.values() for k in pair if k)]
    )
)

CASES: list[tuple[str, dict[str, Any] | None]] = [
    ("default-scheduler", None),
    ("default-scheduler", {"gangScheduling": True, "workloadAPIVersion": "v1alpha1"}),
    ("default-scheduler", {"gangScheduling": True, "workloadAPIVersion": "v1alpha2"}),
    ("default-scheduler", {"gangScheduling": True}),  # newest: v1beta1
    ("kai-scheduler", None),
    ("volcano", None),
    ("koordinator", None),
    ("scheduler-plugins", None),
    ("phalanx-scheduler", None),
]


def _expected(profile: str, config: dict[str, Any] | None, gangs: list[PodGang]) -> set[tuple[str, str]]:
    """(apiVersion/kind, name) of every object the backend's scheduler needs."""
    out: set[tuple[str, str]] = set()
    for g in gangs:
        groups = [grp.name for grp in g.spec.pod_groups]
        if profile == "default-scheduler" and config and config.get("gangScheduling"):
            version = f"scheduling.k8s.io/{config.get('workloadAPIVersion', 'v1beta1')}"
            # One gang per PodGang: kube-scheduler cannot tie PodGroups together.
            out.add((f"{version}/Workload", g.name))
            if version != "scheduling.k8s.io/v1alpha1":
                out.add((f"{version}/PodGroup", g.name))
        elif profile == "kai-scheduler":
            out.add(("scheduling.run.ai/v2alpha2/PodGroup", g.name))
        elif profile == "volcano":
            out.add(("scheduling.volcano.sh/v1beta1/PodGroup", g.name))
        elif profile == "koordinator":
            out |= {("scheduling.sigs.k8s.io/v1alpha1/PodGroup", name) for name in groups}
        elif profile == "scheduler-plugins":
            out.add(("scheduling.x-k8s.io/v1alpha1/PodGroup", g.name))
    return out


async def _scheduler_objects(cluster: MemoryCluster) -> dict[tuple[str, str], Resource]:
    found: dict[tuple[str, str], Resource] = {}
    for kind in SCHEDULER_KINDS:
        for obj in (await cluster.list(kind, "default")).items:
            found[(f"{obj.api_version}/{obj.kind}", obj.name)] = obj
    return found


def _pod_target(pod: Pod) -> tuple[str, str] | None:
    """The (kind, name) of the object a pod's scheduler will look up for it."""
    ann, lbl, spec = pod.metadata.annotations, pod.metadata.labels, pod.spec
    if spec.workload_ref is not None:
        return ("scheduling.k8s.io/v1alpha1/Workload", spec.workload_ref.name)
    if spec.scheduling_group is not None:
        return ("PodGroup", spec.scheduling_group.pod_group_name)
    if labels.ANNOTATION_KAI_POD_GROUP in ann:
        return ("scheduling.run.ai/v2alpha2/PodGroup", ann[labels.ANNOTATION_KAI_POD_GROUP])
    if labels.ANNOTATION_VOLCANO_GROUP_NAME in ann:
        return ("scheduling.volcano.sh/v1beta1/PodGroup", ann[labels.ANNOTATION_VOLCANO_GROUP_NAME])
    if labels.LABEL_POD_GROUP in lbl:
        return ("scheduling.sigs.k8s.io/v1alpha1/PodGroup", lbl[labels.LABEL_POD_GROUP])
    if POD_GROUP_LABEL in lbl:
        return ("scheduling.x-k8s.io/v1alpha1/PodGroup", lbl[POD_GROUP_LABEL])
    return None


@pytest.mark.parametrize(("profile", "config"), CASES, ids=[
    f"{p}-{(c or {}).get('workloadAPIVersion', 'gang' if c else 'plain')}" for p, c in CASES
])
def test_each_backend_writes_exactly_what_its_scheduler_needs(
    profile: str, config: dict[str, Any] | None
) -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        # The sample's pods name this class; the API server rejects pods naming a missing one.
        await cluster.create(PriorityClass(metadata=ObjectMeta(name="inference-high"), value=1000))
        gate_lifts: list[str] = []
        missing_at_lift: list[str] = []

        async def check_gate_lift(new: Pod, old: Pod | None) -> None:
            # Runs inside the write that lifts Phalanx's gate: the backend's objects for
            # this pod's gang must already exist.
            gate = labels.GATE_PODGANG_PENDING_CREATION
            if old is None or not old.has_gate(gate) or new.has_gate(gate):
                return
            gate_lifts.append(new.name)
            gang = await cluster.get(PodGang, new.metadata.labels[labels.LABEL_PODGANG], "default")
            have = await _scheduler_objects(cluster)
            for key in _expected(profile, config, [gang]):
                if key not in have:
                    missing_at_lift.append(f"{new.name}: {key}")

        cluster.register_admission(Pod, validate=check_gate_lift)
        op_config = OperatorConfiguration.model_validate(
            {"scheduler": {"profiles": [{"name": profile, "config": config}],
                           "defaultProfileName": profile}}
        )
        async with OperatorManager(cluster, op_config) as op:
            backend = op.registry.get(profile)
            queue = "team-a" if profile == "kai-scheduler" else None  # KAI needs one
            if queue:  # that exists (admission refuses a PodCliqueSet naming a missing one)
                await cluster.create(unlimited_queue(queue))
            pcs = s.pcs(backend.scheduler_name, queue=queue)
            await cluster.create(pcs)
            await op.wait_idle()

            gangs = (await cluster.list(PodGang, "default")).items
            assert sorted(g.name for g in gangs) == [s.BASE_PODGANG, f"{s.PCS_NAME}-0-prefill-0"]  # prefill replica 1
            have = await _scheduler_objects(cluster)
            assert set(have) == _expected(profile, config, gangs)
            for obj in have.values():
                owner = obj.metadata.owner_references[0]
                assert owner.kind == "PodGang" and owner.name in {g.name for g in gangs}

            pods = (await cluster.list(Pod, "default")).items
            assert len(pods) == 2 * (1 + 4) + (1 + 2)
            for pod in pods:
                assert pod.spec.scheduler_name == backend.scheduler_name
                target = _pod_target(pod)
                if not have:
                    assert target is None  # nothing to point at
                    continue
                assert target is not None, pod.name
                kind, name = target
                assert any(k[1] == name and k[0].endswith(kind) for k in have), (pod.name, target)
                if profile == "default-scheduler":  # the pod's own PodGang's gang object
                    assert name == pod.metadata.labels[labels.LABEL_PODGANG], (pod.name, target)
            # The base gang's pods were released; its objects were there first.
            assert gate_lifts and missing_at_lift == []

            # Deleting the PodCliqueSet removes every scheduler object (finalizer path;
            # 1.36+ PodGroups only once their pods are gone).
            await cluster.delete(PodCliqueSet, s.PCS_NAME, "default")
            await op.wait_idle()
            assert await _scheduler_objects(cluster) == {}
            assert cluster.count(PodGang) == 0 and cluster.count(Pod) == 0

    run_virtual(main)
