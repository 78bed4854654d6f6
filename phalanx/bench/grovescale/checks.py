"""Grove's final checks of a scale test (operator/e2e/tests/scale/scale_checks_test.go).

After a scale step the object graph must match the target exactly: as many live pods as
the target, one PodClique per replica, nothing stuck with a deletionTimestamp, no PodGang
left over from a removed replica, and the PodCliqueSet's and PodCliques' status converged
(`availableReplicas`, `readyReplicas`). Each check returns what is wrong, or nothing.
"""

from __future__ import annotations

from typing import Any

from phalanx.api import labels as L
from phalanx.api.grove import PodClique, PodCliqueScalingGroup, PodCliqueSet, PodGang
from phalanx.api.pod import Pod


async def object_graph_problems(kube: Any, namespace: str, pcs_name: str, *,
                                replicas: int, pods: int, cliques: int) -> list[str]:
    """Grove's checkExpectedObjectGraph, checkNoStuckDeletions and checkPodGangCleanup."""
    sel = {L.LABEL_PART_OF: pcs_name}
    live_pods = (await kube.list(Pod, namespace, label_selector=sel)).items
    pclqs = (await kube.list(PodClique, namespace, label_selector=sel)).items
    pcsgs = (await kube.list(PodCliqueScalingGroup, namespace, label_selector=sel)).items
    gangs = (await kube.list(PodGang, namespace, label_selector=sel)).items
    problems = []
    if len(live_pods) != pods:
        problems.append(f"live pod count = {len(live_pods)}, want {pods} (potential leak)")
    if len(pclqs) != cliques:
        problems.append(f"PodClique count = {len(pclqs)}, want {cliques}")
    for kind, items in (("Pod", live_pods), ("PodClique", pclqs),
                        ("PodCliqueScalingGroup", pcsgs), ("PodGang", gangs)):
        stuck = [o.name for o in items if o.metadata.deletion_timestamp is not None]
        if stuck:
            problems.append(f"{len(stuck)} {kind}s stuck deleting, e.g. {stuck[0]}")
    if replicas == 0 and gangs:
        problems.append(f"{len(gangs)} PodGangs left after scaling to zero, e.g. {gangs[0].name}")
    return problems


async def status_problems(kube: Any, namespace: str, pcs_name: str, *,
                          replicas: int) -> list[str]:
    """Grove's checkPCSStatusConvergence and checkPodCliqueStatusConvergence."""
    pcs = await kube.get(PodCliqueSet, pcs_name, namespace)
    problems = []
    st = pcs.status
    if st.replicas != replicas or (st.available_replicas or 0) != replicas:
        problems.append(f"PodCliqueSet status: replicas {st.replicas}, available "
                        f"{st.available_replicas or 0}, want {replicas}")
    sel = {L.LABEL_PART_OF: pcs_name}
    for pclq in (await kube.list(PodClique, namespace, label_selector=sel)).items:
        if (pclq.status.ready_replicas or 0) != pclq.spec.replicas:
            problems.append(f"PodClique {pclq.name}: readyReplicas "
                            f"{pclq.status.ready_replicas or 0}, want {pclq.spec.replicas}")
            break
    return problems
