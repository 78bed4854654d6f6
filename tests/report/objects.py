"""A hand-built saved run with stored objects and their history, for `get`, `describe` and
`diff` (no cluster involved): synthetic_record() plus kubectl-shaped objects."""

from __future__ import annotations

from typing import Any

from phalanx.sim.record import EventRecord, ObjectChange, RunRecord

from .synthetic import synthetic_record

TS = "2026-01-01T00:00:00Z"


def _meta(name: str, *, namespace: str | None = "default", labels: dict[str, str] | None = None,
          owner: tuple[str, str] | None = None, rv: str = "1") -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": rv,
                         "creationTimestamp": TS}
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = labels
    if owner:
        m["ownerReferences"] = [{"apiVersion": "grove.io/v1alpha1", "kind": owner[0],
                                 "name": owner[1], "uid": f"uid-{owner[1]}",
                                 "controller": True}]
    return m


def _cond(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": TS}


def pod(name: str, gang: str, clique: str, node: str | None, phase: str,
        ns: str = "default") -> dict[str, Any]:
    labels = {"app.kubernetes.io/part-of": gang.rsplit("-", 1)[0], "grove.io/podgang": gang,
              "grove.io/podclique": clique}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}],
                            "schedulerName": "phalanx-scheduler"}
    if node:
        spec["nodeName"] = node
    ready = "True" if phase == "Running" else "False"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": _meta(name, namespace=ns, labels=labels, owner=("PodClique", clique)),
            "spec": spec,
            "status": {"phase": phase, "conditions": [_cond("Ready", ready)]}}


def podgang(name: str, phase: str, scheduled: str) -> dict[str, Any]:
    return {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
            "metadata": _meta(name, labels={"app.kubernetes.io/part-of": "train"},
                              owner=("PodCliqueSet", "train")),
            "spec": {"podgroups": [{"name": f"{name}-worker", "minReplicas": 4}]},
            "status": {"phase": phase, "conditions": [
                _cond("Initialized", "True", "Ready", "every pod exists and is referenced"),
                _cond("Scheduled", scheduled, "PodsScheduled" if scheduled == "True"
                      else "PodsUnscheduled", "")]}}


def node(name: str, rack: str, unschedulable: bool = False) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": _meta(name, namespace=None,
                              labels={"topology.phalanx.dev/rack": rack,
                                      "kubernetes.io/hostname": name}),
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8"},
                       "conditions": [_cond("Ready", "True", "KubeletReady")]}}


def object_record() -> RunRecord:
    rec = synthetic_record()
    rec.objects = {
        "PodCliqueSet": [
            {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
             "metadata": _meta("train"), "spec": {"replicas": 3, "template": {"cliques": []}},
             "status": {"availableReplicas": 3, "conditions": [
                 _cond("SchedulerCompatible", "True", "AllFeaturesSupported")]}},
            {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
             "metadata": _meta("idle"), "spec": {"template": {"cliques": []}}},  # replicas 0
        ],
        "PodClique": [
            {"apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
             "metadata": _meta("train-0-worker", labels={"grove.io/podgang": "train-0"},
                               owner=("PodCliqueSet", "train")),
             "spec": {"replicas": 4, "podSpec": {"containers": [{"name": "c"}]}},
             "status": {"replicas": 4, "readyReplicas": 4, "conditions": [
                 _cond("PodCliqueScheduled", "True", "SufficientScheduledPods",
                       "4 pods scheduled")]}},
        ],
        "PodCliqueScalingGroup": [
            {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueScalingGroup",
             "metadata": _meta("train-0-model", owner=("PodCliqueSet", "train")),
             "spec": {"replicas": 2, "cliqueNames": ["worker"]}},
        ],
        "PodGang": [podgang("train-0", "Running", "True"), podgang("big-0", "Pending", "False")],
        "Pod": [pod(f"train-0-worker-{k}", "train-0", "train-0-worker", f"node-00{k}",
                    "Running") for k in range(4)]
        + [pod("big-0-w-0", "big-0", "big-0-w", None, "Pending"),
           pod("other-0", "other-0", "other-0-w", None, "Pending", ns="team-a")],
        "Node": [node("node-000", "rack-0"), node("node-001", "rack-0", unschedulable=True)],
    }
    # History: big-0 was Running at 60s and Pending again from 119s; node-001 cordoned at 300s.
    early = podgang("big-0", "Running", "True")
    early["metadata"]["resourceVersion"] = "0"
    cordon = node("node-001", "rack-0")
    rec.history = [
        *(ObjectChange(t=0.0, kind=k, key=_key(o), object=o)
          for k, objs in rec.objects.items() if k not in ("PodGang", "Node") for o in objs),
        ObjectChange(t=0.0, kind="Node", key="node-000", object=rec.objects["Node"][0]),
        ObjectChange(t=0.0, kind="Node", key="node-001", object=cordon),
        ObjectChange(t=0.0, kind="PodGang", key="default/train-0",
                     object=rec.objects["PodGang"][0]),
        ObjectChange(t=60.0, kind="PodGang", key="default/big-0", object=early),
        ObjectChange(t=119.0, kind="PodGang", key="default/big-0",
                     object=rec.objects["PodGang"][1]),
        ObjectChange(t=300.0, kind="Node", key="node-001", object=rec.objects["Node"][1]),
    ]
    rec.history.sort(key=lambda c: c.t)
    # Many events on big-0's pods: the earliest is the one that explains the wait.
    rec.events.append(EventRecord(t=31.0, type="Warning", reason="FailedScheduling", kind="Pod",
                                  name="big-0-w-3", namespace="default",
                                  message="0/16 nodes are available: preemption: nominated "
                                          "node node-007"))
    for k in range(8):
        rec.events.append(EventRecord(t=40.0 + k, type="Normal", reason=f"Note{k}", kind="Pod",
                                      name=f"big-0-w-{k}", namespace="default",
                                      message=f"note {k}"))
    rec.events.sort(key=lambda e: e.t)
    return rec


def _key(o: dict[str, Any]) -> str:
    m = o["metadata"]
    return f"{m['namespace']}/{m['name']}" if m.get("namespace") else m["name"]
