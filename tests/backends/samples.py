"""Grove sample workloads and the PodGangs Grove lays out for them.

`MULTINODE_DISAGGREGATED` is Grove's concept-overview sample (prefill and decode scaling
groups, each a leader and workers). With one PodCliqueSet replica and minAvailable 1 for
both scaling groups, the base PodGang holds replica 0 of each scaling group:
4 groups, minReplicas 1 + 4 + 1 + 2.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from phalanx.api import labels
from phalanx.api.grove import ClusterTopology, PodCliqueSet, PodGang
from phalanx.api.pod import Pod
from phalanx.cluster.client import Client

MULTINODE_DISAGGREGATED = yaml.safe_load(
    """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: multinode-disaggregated
  namespace: default
spec:
  replicas: 1
  template:
    priorityClassName: inference-high
    cliques:
    - name: pleader
      spec:
        roleName: pleader
        replicas: 1
        podSpec:
          containers:
          - name: prefill-leader
            image: nginx:latest
            resources: {requests: {cpu: 10m, memory: 32Mi}}
    - name: pworker
      spec:
        roleName: pworker
        replicas: 4
        podSpec:
          containers:
          - name: prefill-worker
            image: nginx:latest
            resources: {requests: {cpu: 10m, memory: 32Mi}}
    - name: dleader
      spec:
        roleName: dleader
        replicas: 1
        podSpec:
          containers:
          - name: decode-leader
            image: nginx:latest
            resources: {requests: {cpu: 10m, memory: 32Mi}}
    - name: dworker
      spec:
        roleName: dworker
        replicas: 2
        podSpec:
          containers:
          - name: decode-worker
            image: nginx:latest
            resources: {requests: {cpu: 10m, memory: 32Mi}}
    podCliqueScalingGroups:
    - name: prefill
      cliqueNames: [pleader, pworker]
      replicas: 2
    - name: decode
      cliqueNames: [dleader, dworker]
      replicas: 1
"""
)

PCS_NAME = "multinode-disaggregated"
BASE_PODGANG = f"{PCS_NAME}-0"
# (group name, minReplicas) of the base PodGang, in Grove's order.
BASE_GROUPS = [
    (f"{PCS_NAME}-0-prefill-0-pleader", 1),
    (f"{PCS_NAME}-0-prefill-0-pworker", 4),
    (f"{PCS_NAME}-0-decode-0-dleader", 1),
    (f"{PCS_NAME}-0-decode-0-dworker", 2),
]
ZONE, BLOCK, RACK, HOST = (
    "topology.kubernetes.io/zone",
    "example.com/block",
    "example.com/rack",
    "kubernetes.io/hostname",
)


def pcs(scheduler: str | None = None, *, queue: str | None = None, **template: Any) -> PodCliqueSet:
    """The sample, every clique on `scheduler`, optionally with a KAI queue label and
    extra template fields (e.g. topologyConstraint=...)."""
    data = copy.deepcopy(MULTINODE_DISAGGREGATED)
    for clique in data["spec"]["template"]["cliques"]:
        if scheduler:
            clique["spec"]["podSpec"]["schedulerName"] = scheduler
    if queue:
        data["metadata"]["labels"] = {labels.LABEL_KAI_QUEUE: queue}
    data["spec"]["template"].update(template)
    return PodCliqueSet.model_validate(data)


def cluster_topology(name: str = "grove-topology") -> ClusterTopology:
    return ClusterTopology.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "levels": [
                    {"domain": "zone", "key": ZONE},
                    {"domain": "block", "key": BLOCK},
                    {"domain": "rack", "key": RACK},
                    {"domain": "host", "key": HOST},
                ]
            },
        }
    )


def podgang(*, topology: bool = False, refs: bool = False, name: str = BASE_PODGANG) -> PodGang:
    """The base PodGang as Grove writes it (before pods exist unless `refs`).

    `topology`: the PCS packs each replica in a zone and each scaling-group replica in a
    rack, so the PodGang gets a zone constraint and one rack group config per replica.
    """
    groups = [
        {
            "name": g,
            "minReplicas": n,
            "podReferences": (
                [{"namespace": "default", "name": f"{g}-{i}"} for i in range(n)] if refs else []
            ),
        }
        for g, n in BASE_GROUPS
    ]
    spec: dict[str, Any] = {"podgroups": groups, "priorityClassName": "inference-high"}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "labels": {labels.LABEL_PART_OF: PCS_NAME},
    }
    if topology:
        spec["topologyConstraint"] = {"packConstraint": {"required": ZONE}}
        spec["topologyConstraintGroupConfigs"] = [
            {
                "name": f"{PCS_NAME}-0-prefill-0",
                "podGroupNames": [BASE_GROUPS[0][0], BASE_GROUPS[1][0]],
                "topologyConstraint": {"packConstraint": {"required": RACK}},
            },
            {
                "name": f"{PCS_NAME}-0-decode-0",
                "podGroupNames": [BASE_GROUPS[2][0], BASE_GROUPS[3][0]],
                "topologyConstraint": {"packConstraint": {"required": RACK}},
            },
        ]
        meta["annotations"] = {labels.ANNOTATION_TOPOLOGY_NAME: "grove-topology"}
    return PodGang.model_validate({"metadata": meta, "spec": spec})


def grove_pod(group: str, index: int = 0, podgang_name: str = BASE_PODGANG) -> Pod:
    """A pod of `group` as the operator hands it to prepare_pod (labels set, gated)."""
    return Pod.model_validate(
        {
            "metadata": {
                "name": f"{group}-{index}",
                "namespace": "default",
                "labels": {labels.LABEL_PODGANG: podgang_name, labels.LABEL_PODCLIQUE: group},
            },
            "spec": {
                "containers": [{"name": "c", "image": "nginx"}],
                "schedulingGates": [{"name": labels.GATE_PODGANG_PENDING_CREATION}],
            },
        }
    )


async def create_podgang(client: Client, pg: PodGang) -> PodGang:
    """Store the PodGang (so it has a uid for owner references) and return it."""
    return await client.create(pg)


class RecordingClient:
    """Delegates to a Client and records every write as (verb, kind, name)."""

    def __init__(self, inner: Client) -> None:
        self._inner = inner
        self.writes: list[tuple[str, str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def create(self, obj: Any, **kw: Any) -> Any:
        self.writes.append(("create", f"{obj.api_version}/{obj.kind}", obj.name))
        return await self._inner.create(obj, **kw)

    async def update(self, obj: Any, **kw: Any) -> Any:
        self.writes.append(("update", f"{obj.api_version}/{obj.kind}", obj.name))
        return await self._inner.update(obj, **kw)

    async def delete(self, kind: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        self.writes.append(("delete", f"{kind.API_VERSION}/{kind.KIND}", name))
        return await self._inner.delete(kind, name, *args, **kwargs)


class CallLog(RecordingClient):
    """Records reads (get, list) beside the writes, in one sequence."""

    def __init__(self, inner: Client) -> None:
        super().__init__(inner)
        self.calls = self.writes  # one list, in call order

    async def get(self, kind: Any, name: str, *args: Any, **kw: Any) -> Any:
        self.calls.append(("get", f"{kind.API_VERSION}/{kind.KIND}", name))
        return await self._inner.get(kind, name, *args, **kw)

    async def list(self, kind: Any, *args: Any, **kw: Any) -> Any:
        self.calls.append(("list", f"{kind.API_VERSION}/{kind.KIND}", ""))
        return await self._inner.list(kind, *args, **kw)


def leader_workers(ns: str, workers: int, *, replicas: int = 1,
                   worker_min: int | None = None) -> PodCliqueSet:
    """A leader and `workers` workers of one GPU each, on default-scheduler: one PodGang of
    two groups per replica (`replicas` PodGangs)."""
    res = {"cpu": "1", "nvidia.com/gpu": "1"}

    def clique(name: str, n: int, minimum: int | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"roleName": name, "replicas": n, "podSpec": {
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": res, "limits": res}}]}}
        if minimum is not None:
            spec["minAvailable"] = minimum
        return {"name": name, "spec": spec}

    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": "lw", "namespace": ns},
        "spec": {"replicas": replicas, "template": {"cliques": [
            clique("leader", 1), clique("worker", workers, worker_min)]}}})
