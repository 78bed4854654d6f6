"""A hand-built RunRecord (no cluster involved) for testing reports in isolation."""

from __future__ import annotations

from phalanx.sim.record import (
    EventRecord,
    GangRecord,
    NodeInfo,
    PodRecord,
    RunMeta,
    RunRecord,
    Sample,
    StepRecord,
    TopologyLevel,
)

RACK_KEY = "topology.phalanx.dev/rack"
ZONE_KEY = "topology.kubernetes.io/zone"
HOST_KEY = "kubernetes.io/hostname"


def synthetic_record(racks: int = 4, nodes_per_rack: int = 4) -> RunRecord:
    nodes = []
    for r in range(racks):
        for i in range(nodes_per_rack):
            name = f"node-{r * nodes_per_rack + i:03d}"
            nodes.append(
                NodeInfo(
                    name=name,
                    pool="gpu",
                    labels={ZONE_KEY: f"zone-{r // 2}", RACK_KEY: f"rack-{r}", HOST_KEY: name},
                    gpu=8,
                    cpu=96,
                    memory=1024**4,
                )
            )
    rec = RunRecord(
        meta=RunMeta(inputs=["examples/synthetic.yaml"], cluster="synthetic", duration=600.0,
                     settled=True, started_at="2026-01-01T00:00:00+00:00"),
        topology=[
            TopologyLevel(domain="zone", key=ZONE_KEY),
            TopologyLevel(domain="rack", key=RACK_KEY),
            TopologyLevel(domain="host", key=HOST_KEY),
        ],
        nodes=nodes,
    )
    # Three training gangs of 4 x 8 GPUs, one per rack; the third waits 2 minutes.
    used = 0
    samples: list[Sample] = [Sample(t=0)]
    for j, start in enumerate([2.0, 3.0, 120.0]):
        gang = f"train-{j}"
        rack_nodes = [n.name for n in nodes[j * nodes_per_rack:(j + 1) * nodes_per_rack]]
        pods = [f"{gang}-worker-{k}" for k in range(nodes_per_rack)]
        rec.gangs.append(
            GangRecord(
                name=gang, podcliqueset="train", scheduler="phalanx-scheduler",
                priority_class="batch", priority=100, min_member=len(pods), pods=pods,
                created=1.0, initialized=1.2, gates_lifted=1.3, scheduled=start,
                running=start + 5, phase="Running", nodes=rack_nodes,
                domain=f"rack=rack-{j}", pack_constraint="required rack",
            )
        )
        for k, p in enumerate(pods):
            rec.pods.append(PodRecord(name=p, gang=gang, clique="worker", node=rack_nodes[k],
                                      phase="Running", gpu=8, cpu=16, created=1.0,
                                      bound=start, running=start + 5))
        used += 8 * len(pods)
        samples.append(Sample(t=start, gpu_used=used, cpu_used=used * 2,
                              pods_running=(j + 1) * nodes_per_rack))
    # A preempted low-priority gang, then a pending one with an explanation.
    rec.gangs.append(
        GangRecord(name="scavenger-0", podcliqueset="scavenger", scheduler="phalanx-scheduler",
                   priority_class="low", priority=-10, min_member=2,
                   pods=["scavenger-0-w-0", "scavenger-0-w-1"], created=0.5, initialized=0.6,
                   gates_lifted=0.7, scheduled=1.0, running=6.0, preempted=[119.0],
                   phase="Pending", explanation="preempted by train-2")
    )
    rec.gangs.append(
        GangRecord(name="big-0", podcliqueset="big", scheduler="phalanx-scheduler",
                   min_member=8, pods=[f"big-0-w-{k}" for k in range(8)], created=30.0,
                   initialized=30.2, gates_lifted=30.3, phase="Pending",
                   explanation="0/16 nodes fit 8 pods x 8 nvidia.com/gpu in one rack: "
                   "every rack has at most 4 free nodes (needs 8)")
    )
    for k in range(8):
        rec.pods.append(PodRecord(name=f"big-0-w-{k}", gang="big-0", clique="w", gpu=8,
                                  created=30.0, message="gang big-0 does not fit"))
    rec.pods.append(PodRecord(name="frontend-0", gang="train-0", clique="frontend",
                              node="node-000", phase="Running", cpu=2, created=1.0,
                              bound=2.0, running=3.0))
    rec.samples = samples
    rec.events = [
        EventRecord(t=30.5, type="Warning", reason="FailedScheduling", kind="Pod",
                    name="big-0-w-0", message="0/16 nodes are available", count=12),
        EventRecord(t=119.0, type="Normal", reason="Preempted", kind="PodGang",
                    name="scavenger-0", message="preempted by train-2 (priority 100 > -10)"),
        EventRecord(t=2.0, type="Normal", reason="Scheduled", kind="Pod", name="train-0-worker-0",
                    message="assigned to node-000"),
    ]
    rec.steps = [StepRecord(t=120.0, action="apply", description="create PodCliqueSet train")]
    rec.objects = {
        "PodCliqueSet": [
            {"metadata": {"name": "train", "namespace": "default"}, "spec": {"replicas": 3},
             "status": {"conditions": [{"type": "SchedulerCompatible", "status": "True",
                                        "reason": "AllFeaturesSupported"}]}},
            {"metadata": {"name": "big", "namespace": "default"}, "spec": {"replicas": 1}},
        ]
    }
    return rec


def two_namespace_record() -> RunRecord:
    """The same PodCliqueSet, gang and pod names in two namespaces: `pretrain` in team-a
    running (4 pods), in team-b waiting (4 pods, none bound)."""
    rec = synthetic_record()
    rec.gangs, rec.pods, rec.objects = [], [], {"PodCliqueSet": []}
    for ns, running in (("team-a", True), ("team-b", False)):
        pods = [f"pretrain-0-w-{k}" for k in range(4)]
        rec.objects["PodCliqueSet"].append({
            "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
            "metadata": {"name": "pretrain", "namespace": ns}, "spec": {"replicas": 1}})
        rec.gangs.append(GangRecord(
            name="pretrain-0", namespace=ns, podcliqueset="pretrain",
            scheduler="phalanx-scheduler", min_member=4, pods=pods, created=1.0,
            scheduled=2.0 if running else None, running=3.0 if running else None,
            phase="Running" if running else "Pending",
            nodes=[f"node-00{k}" for k in range(4)] if running else []))
        for k, p in enumerate(pods):
            rec.pods.append(PodRecord(
                name=p, namespace=ns, gang="pretrain-0", clique="w",
                node=f"node-00{k}" if running else "", phase="Running" if running else "Pending",
                gpu=8, created=1.0))
    return rec
