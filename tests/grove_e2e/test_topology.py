"""Grove's topology-aware scheduling e2e tests (operator/e2e/tests/topology_test.go, TAS1-TAS23)
on the embedded cluster, with Grove's tas-*.yaml unmodified.

Ported from the ClusterTopology era of that file (scaled PodGangs named by their offset above
minAvailable; TAS1-TAS16 as at Grove commit f02e7df8, TAS4's TopologyLevelsUnavailable check
and TAS17-TAS23 from the version that added them; TAS18, TAS19's drift checks, TAS21 and TAS22
from Grove fcc3b3b, with ClusterTopologyBinding). The YAML files are those of f02e7df8 moved to
Grove's current API as Grove moved its own: `ClusterTopologyBinding` for `ClusterTopology`,
`pack.required` for `packDomain`, and a `topologyName` on each top-level constraint. The e2e
cluster has 28 schedulable nodes in racks of 7, blocks of 14 and one zone; `grove-topology` is
its ClusterTopologyBinding (some of the older YAML files bring their own `e2e-topology` with
the same levels). TAS17 and TAS23
use YAML files the stored Grove sources lack (tas-multi-topology-{h100,gb200}.yaml,
tas-preferred-pack.yaml); their workloads are written inline from what the tests assert.

Placement is checked as Grove checks it (VerifyPodsInSameTopologyDomain), and each KAI
PodGroup's top-level constraint and SubGroups as Grove's VerifyPodGroupTopology does.

Issue 14 made these pass: TAS10, TAS12 and TAS15 place a replica's scaled PodGangs inside
the domain its base PodGang landed in (the PodCliqueSet-level pack constraint holds across
the base and scaled gangs, as in Grove); TAS4's two scaling-group replicas each pack into a
rack of their own and bin-packing plus keeping a gang's scopes together puts them in the
same one, as Grove asserts.

TAS21 and TAS22 apply objects the webhooks (and CRD rules) must refuse; here they are offered
to the embedded cluster's admission, as `phalanx run` and the operator's webhook run it. One
deliberate difference: Grove's ClusterTopologyBinding webhook names the field
`spec.schedulerTopologyReferences[i]` (an older name); Phalanx names the field users write,
`spec.schedulerTopologyBindings[i]`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from . import kai
from .harness import (
    BLOCK,
    HOST,
    PCS_REPLICA,
    PCSG,
    PCSG_REPLICA,
    PODCLIQUE,
    RACK,
    ZONE,
    assert_all_running_and_ready,
    assert_pending_with_unschedulable_events,
    assert_same_domain,
    cluster_topology,
    condition,
    label,
    node_of,
    nodes,
    objects,
    pods_of,
    run_e2e,
)


def _deploy(tmp_path: Path, workload: str, name: str, pods: int, **kw):  # type: ignore[no-untyped-def]
    """DeployWorkloadAndGetPods: the workload on 28 nodes, every pod Running and Ready."""
    run = run_e2e(tmp_path, workload, nodes=kw.pop("nodes", 28), **kw)
    all_pods = pods_of(run.final, name)
    assert_all_running_and_ready(all_pods, pods)
    return run, all_pods


def _labelled(pods: list[dict], key: str, value: str, count: int) -> list[dict]:
    """VerifyLabeledPodsInTopologyDomain's selection: `count` pods with label key=value."""
    chosen = [p for p in pods if label(p, key) == value]
    assert len(chosen) == count, (key, value, len(chosen), count)
    return chosen


def _pcsg_replicas_in(run, pods: list[dict], pcsg: str, replicas: int, per_replica: int,  # type: ignore[no-untyped-def]
                      key: str) -> None:
    """VerifyPCSGReplicasInTopologyDomain: each replica's pods share one `key` domain."""
    of_group = [p for p in pods if label(p, PCSG) == pcsg]
    for j in range(replicas):
        replica = [p for p in of_group if label(p, PCSG_REPLICA) == str(j)]
        assert len(replica) == per_replica, (pcsg, j, len(replica))
        assert_same_domain(run, replica, key)


def _topology_levels_available(run, pcs: str) -> None:  # type: ignore[no-untyped-def]
    cond = condition(objects(run.final, "PodCliqueSet")[pcs], "TopologyLevelsUnavailable")
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "False", "AllClusterTopologyLevelsAvailable"), cond


def test_TAS1_topology_infrastructure(tmp_path: Path) -> None:
    run = run_e2e(tmp_path, [], nodes=28)
    topology = objects(run.final, "ClusterTopologyBinding")["grove-topology"]
    assert [(lv["domain"], lv["key"]) for lv in topology["spec"]["levels"]] == [
        ("zone", ZONE), ("block", BLOCK), ("rack", RACK), ("host", HOST)]
    kai_topology = objects(run.final, "Topology").get("grove-topology")
    assert kai_topology is not None, "no KAI Topology mirrors grove-topology"
    assert [lv["nodeLabel"] for lv in kai_topology["spec"]["levels"]] == [ZONE, BLOCK, RACK, HOST]
    owner = kai_topology["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("ClusterTopologyBinding", "grove-topology")
    workers = [n for n in run.record.nodes if n.labels.get("node_role.e2e.grove.nvidia.com")]
    assert len(workers) == 28
    for n in workers:
        for key in (ZONE, BLOCK, RACK, HOST):
            assert n.labels.get(key), (n.name, key)


def test_TAS2_multiple_cliques_with_different_constraints(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-indep-clq.yaml", "tas-indep-clq", 7)
    assert_same_domain(run, _labelled(pods, PODCLIQUE, "tas-indep-clq-0-worker-rack", 3), RACK)
    assert_same_domain(run, _labelled(pods, PODCLIQUE, "tas-indep-clq-0-worker-block", 4), BLOCK)
    pg = kai.podgroup_of(run.final, "tas-indep-clq", "tas-indep-clq-0")
    kai.verify(pg, "", "", [kai.standalone("tas-indep-clq", 0, "worker-rack", 3, RACK),
                            kai.standalone("tas-indep-clq", 0, "worker-block", 4, BLOCK)])


def test_TAS3_pcs_only_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-sl-pcs-only.yaml", "tas-sl-pcs-only", 4)
    assert_same_domain(run, pods, RACK)
    pg = kai.podgroup_of(run.final, "tas-sl-pcs-only", "tas-sl-pcs-only-0")
    # No PCSG parent SubGroups: the scaling group has no constraint of its own.
    kai.verify(pg, RACK, "", [kai.standalone("tas-sl-pcs-only", 0, "workers-0-worker", 1),
                              kai.standalone("tas-sl-pcs-only", 0, "workers-1-worker", 1),
                              kai.standalone("tas-sl-pcs-only", 0, "router", 2)])


def test_TAS4_pcsg_only_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-sl-pcsg-only.yaml", "tas-sl-pcsg-only", 4)
    assert_same_domain(run, _labelled(pods, PCSG, "tas-sl-pcsg-only-0-workers", 2), RACK)
    pg = kai.podgroup_of(run.final, "tas-sl-pcsg-only", "tas-sl-pcsg-only-0")
    name = "tas-sl-pcsg-only"
    kai.verify(pg, "", "", [kai.pcsg_parent(name, 0, "workers", 0, RACK),
                            kai.pcsg_parent(name, 0, "workers", 1, RACK),
                            kai.in_pcsg(name, 0, "workers", 0, "worker", 1),
                            kai.in_pcsg(name, 0, "workers", 1, "worker", 1),
                            kai.standalone(name, 0, "router", 2)])
    _topology_levels_available(run, name)


def test_TAS5_host_level_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-host-level.yaml", "tas-host-level", 2)
    assert_same_domain(run, pods, HOST)
    assert node_of(pods[0]) == node_of(pods[1])
    pg = kai.podgroup_of(run.final, "tas-host-level", "tas-host-level-0")
    kai.verify(pg, "", "", [kai.standalone("tas-host-level", 0, "worker", 2, HOST)])


def test_TAS6_standalone_pclq_only_pcs_zone_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-standalone-pclq-only-pcs-zone.yaml",
                        "tas-standalone-pclq", 4)
    assert_same_domain(run, pods, ZONE)
    pg = kai.podgroup_of(run.final, "tas-standalone-pclq", "tas-standalone-pclq-0")
    kai.verify(pg, ZONE, "", [kai.standalone("tas-standalone-pclq", 0, "worker", 4)])


def test_TAS7_no_topology_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-no-constraint.yaml", "tas-no-constraint", 4)
    assert len(pods) == 4
    pg = kai.podgroup_of(run.final, "tas-no-constraint", "tas-no-constraint-0")
    kai.verify(pg, "", "", [kai.standalone("tas-no-constraint", 0, "workers-0-worker", 2),
                            kai.standalone("tas-no-constraint", 0, "workers-1-worker", 2)])


def test_TAS8_full_hierarchy_with_cascading_constraints(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-hierarchy.yaml", "tas-hierarchy", 8, nodes=8)
    for j in range(2):
        for clique in ("prefill", "decode"):
            assert_same_domain(run, _labelled(
                pods, PODCLIQUE, f"tas-hierarchy-0-inference-group-{j}-{clique}", 2), HOST)
    _pcsg_replicas_in(run, pods, "tas-hierarchy-0-inference-group", 2, 4, RACK)
    assert_same_domain(run, pods, BLOCK)
    pg = kai.podgroup_of(run.final, "tas-hierarchy", "tas-hierarchy-0")
    name, grp = "tas-hierarchy", "inference-group"
    kai.verify(pg, BLOCK, "", [kai.pcsg_parent(name, 0, grp, 0, RACK),
                               kai.pcsg_parent(name, 0, grp, 1, RACK),
                               kai.in_pcsg(name, 0, grp, 0, "prefill", 2, HOST),
                               kai.in_pcsg(name, 0, grp, 0, "decode", 2, HOST),
                               kai.in_pcsg(name, 0, grp, 1, "prefill", 2, HOST),
                               kai.in_pcsg(name, 0, grp, 1, "decode", 2, HOST)])


def test_TAS9_pcs_plus_pclq_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-pcs-pclq.yaml", "tas-pcs-pclq", 2)
    assert_same_domain(run, pods, HOST)
    pg = kai.podgroup_of(run.final, "tas-pcs-pclq", "tas-pcs-pclq-0")
    kai.verify(pg, BLOCK, "", [kai.standalone("tas-pcs-pclq", 0, "worker", 2, HOST)])


def test_TAS10_pcsg_scaling_with_topology_constraints(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-pcsg-scale.yaml", "tas-pcsg-scale", 6)
    _pcsg_replicas_in(run, pods, "tas-pcsg-scale-0-inference-group", 3, 2, RACK)
    assert_same_domain(run, pods, RACK)  # the PodCliqueSet's rack, base and scaled gangs
    pg = kai.podgroup_of(run.final, "tas-pcsg-scale", "tas-pcsg-scale-0")
    name, grp = "tas-pcsg-scale", "inference-group"
    kai.verify(pg, RACK, "", [kai.pcsg_parent(name, 0, grp, 0, RACK),
                              kai.in_pcsg(name, 0, grp, 0, "worker", 2)])


def test_TAS12_large_scaling_ratio(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-large-scale.yaml", "tas-large-scale", 20)
    _pcsg_replicas_in(run, pods, "tas-large-scale-0-workers", 10, 2, HOST)
    assert_same_domain(run, pods, BLOCK)  # the PodCliqueSet's block, base and scaled gangs
    name = "tas-large-scale"
    base = kai.podgroup_of(run.final, name, f"{name}-0")
    kai.verify(base, BLOCK, "", [kai.in_pcsg(name, 0, "workers", j, "worker", 2, HOST,
                                             parent=False) for j in range(3)])
    for k in range(7):  # scaled PodGangs, named by offset above minAvailable 3
        scaled = kai.podgroup_of(run.final, name, f"{name}-0-workers-{k}")
        kai.verify(scaled, BLOCK, "", [kai.in_pcsg(name, 0, "workers", 3 + k, "worker", 2,
                                                   HOST, parent=False)])


def test_TAS11_pcsg_plus_pclq_no_parent_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-pcsg-pclq.yaml", "tas-pcsg-pclq", 4)
    _pcsg_replicas_in(run, pods, "tas-pcsg-pclq-0-workers", 2, 2, HOST)
    pg = kai.podgroup_of(run.final, "tas-pcsg-pclq", "tas-pcsg-pclq-0")
    name = "tas-pcsg-pclq"
    kai.verify(pg, "", "", [kai.pcsg_parent(name, 0, "workers", 0, RACK),
                            kai.pcsg_parent(name, 0, "workers", 1, RACK),
                            kai.in_pcsg(name, 0, "workers", 0, "worker", 2, HOST),
                            kai.in_pcsg(name, 0, "workers", 1, "worker", 2, HOST)])


def test_TAS13_insufficient_nodes_for_constraint(tmp_path: Path) -> None:
    steps = [{"at": "2m", "label": {"node": "agent-000", "labels": {"e2e.checkpoint": "t13"}}}]
    run = run_e2e(tmp_path, "tas-insuffic.yaml", nodes=28, steps=steps)
    for objs, at in ((run.before(1), run.t(1)), (run.final, run.record.meta.duration + 1)):
        pods = pods_of(objs, "tas-insuffic")
        assert len(pods) == 10
        assert_pending_with_unschedulable_events(run, pods, at)
        assert not any(node_of(p) for p in pods)  # all or nothing: nothing placed
    gang = run.record.gang("tas-insuffic-0")
    assert gang is not None and gang.phase == "Pending" and gang.explanation
    pg = kai.podgroup_of(run.final, "tas-insuffic", "tas-insuffic-0")
    kai.verify(pg, RACK, "", [kai.standalone("tas-insuffic", 0, "worker", 10)])


def test_TAS14_multi_replica_with_rack_constraint(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-multirep.yaml", "tas-multirep", 4)
    for r in range(2):
        replica = [p for p in pods if label(p, PCS_REPLICA) == str(r)]
        assert len(replica) == 2
        assert_same_domain(run, replica, RACK)
        pg = kai.podgroup_of(run.final, "tas-multirep", f"tas-multirep-{r}")
        kai.verify(pg, RACK, "", [kai.standalone("tas-multirep", r, "worker", 2)])


def test_TAS15_disaggregated_inference_multiple_pcsgs(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-pcs-multi-pcsg.yaml", "tas-pcs-multi-pcsg", 10)
    name = "tas-pcs-multi-pcsg"
    assert_same_domain(run, pods, BLOCK)  # base and scaled gangs in the PodCliqueSet's block
    for grp in ("decoder", "prefill"):
        _pcsg_replicas_in(run, pods, f"{name}-0-{grp}", 2, 2, RACK)
    assert len(_labelled(pods, PODCLIQUE, f"{name}-0-router", 2)) == 2
    base = kai.podgroup_of(run.final, name, f"{name}-0")
    kai.verify(base, BLOCK, "", [kai.pcsg_parent(name, 0, "decoder", 0, RACK),
                                 kai.pcsg_parent(name, 0, "prefill", 0, RACK),
                                 kai.in_pcsg(name, 0, "decoder", 0, "dworker", 1),
                                 kai.in_pcsg(name, 0, "decoder", 0, "dleader", 1),
                                 kai.in_pcsg(name, 0, "prefill", 0, "pworker", 1),
                                 kai.in_pcsg(name, 0, "prefill", 0, "pleader", 1),
                                 kai.standalone(name, 0, "router", 2)])
    for grp, cliques in (("decoder", ("dworker", "dleader")), ("prefill", ("pworker", "pleader"))):
        scaled = kai.podgroup_of(run.final, name, f"{name}-0-{grp}-0")  # replica 1, offset 0
        kai.verify(scaled, RACK, "", [kai.in_pcsg(name, 0, grp, 1, c, 1, parent=False)
                                      for c in cliques])


def test_TAS16_multi_replica_pcs_with_three_level_hierarchy(tmp_path: Path) -> None:
    run, pods = _deploy(tmp_path, "tas-pcs-multi-pcsg-multi-replica.yaml",
                        "tas-pcs-multi-pcsg", 20)
    name = "tas-pcs-multi-pcsg"
    for r in range(2):
        replica = [p for p in pods if label(p, PCS_REPLICA) == str(r)]
        assert len(replica) == 10
        assert_same_domain(run, replica, BLOCK)
        for grp in ("decoder", "prefill"):
            _pcsg_replicas_in(run, replica, f"{name}-{r}-{grp}", 2, 2, RACK)
        assert len(_labelled(replica, PODCLIQUE, f"{name}-{r}-router", 2)) == 2
        pg = kai.podgroup_of(run.final, name, f"{name}-{r}")
        kai.verify(pg, BLOCK, "", [kai.pcsg_parent(name, r, "decoder", 0, RACK),
                                   kai.pcsg_parent(name, r, "prefill", 0, RACK),
                                   kai.in_pcsg(name, r, "decoder", 0, "dworker", 1),
                                   kai.in_pcsg(name, r, "decoder", 0, "dleader", 1),
                                   kai.in_pcsg(name, r, "prefill", 0, "pworker", 1, HOST),
                                   kai.in_pcsg(name, r, "prefill", 0, "pleader", 1),
                                   kai.standalone(name, r, "router", 2)])


# --- TAS17-TAS23 --------------------------------------------------------------------------

NVL_BLOCK, NVL_DOMAIN = "example.com/nvl-block", "example.com/nvlink-domain"


def _clique(name: str, replicas: int, min_available: int, memory: str = "10Mi",
            constraint: dict | None = None) -> dict:
    """A clique as Grove's tas-*.yaml write one (KAI queue, e2e agent affinity/toleration)."""
    clique: dict = {
        "name": name, "labels": {"kai.scheduler/queue": "test"},
        "spec": {"roleName": name, "replicas": replicas, "minAvailable": min_available,
                 "podSpec": {
                     "terminationGracePeriodSeconds": 5, "schedulerName": "kai-scheduler",
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchExpressions": [{
                             "key": "node_role.e2e.grove.nvidia.com", "operator": "In",
                             "values": ["agent"]}]}]}}},
                     "tolerations": [{"key": "node_role.e2e.grove.nvidia.com",
                                      "operator": "Equal", "value": "agent",
                                      "effect": "NoSchedule"}],
                     "containers": [{"name": name, "image": "registry:5001/busybox:latest",
                                     "command": ["sleep", "infinity"],
                                     "resources": {"requests": {"memory": memory}}}]}}}
    if constraint is not None:
        clique["topologyConstraint"] = constraint
    return clique


def _pcs(name: str, constraint: dict, cliques: list[dict], groups: list[dict] = ()) -> dict:  # type: ignore[assignment]
    template: dict = {"topologyConstraint": constraint, "cliques": cliques}
    if groups:
        template["podCliqueScalingGroups"] = list(groups)
    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": 1, "template": template}}


def _kai_topology_keys(objs: dict, name: str) -> list[str]:
    """WaitForKAITopology: the KAI Topology's node-label keys, broadest first."""
    topology = objects(objs, "Topology").get(name)
    assert topology is not None, f"no KAI Topology {name}"
    owner = topology["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("ClusterTopologyBinding", name)
    return [lv["nodeLabel"] for lv in topology["spec"]["levels"]]


def test_TAS17_heterogeneous_gpu_cluster(tmp_path: Path) -> None:
    """Two hardware segments; the same domain `block` is a different node label in each
    ClusterTopologyBinding. Grove's tas-multi-topology-{h100,gb200}.yaml are not in the stored
    sources, so the two workloads are written here as the test describes them (2 pods each,
    packed at block)."""
    h100_nodes, gb200_nodes = nodes(0, 14), nodes(14, 28)
    relabel = [{"at": "0s", "label": {"node": n, "labels": {
        RACK: None, NVL_BLOCK: f"block-{idx // 7}", NVL_DOMAIN: f"nvl-domain-{idx}"}}}
        for idx, n in enumerate(gb200_nodes)]
    topologies = [
        cluster_topology("h100-topology", (("block", RACK), ("host", HOST))),
        cluster_topology("gb200-topology", (("block", NVL_BLOCK), ("rack", NVL_DOMAIN),
                                            ("host", HOST))),
    ]
    workloads = [
        _pcs(name, {"topologyName": topo, "pack": {"required": "block"}},
             [_clique("worker", 2, 2)])
        for name, topo in (("tas-h100-workload", "h100-topology"),
                           ("tas-gb200-workload", "gb200-topology"))]
    run = run_e2e(tmp_path, [], nodes=28, steps=relabel, extra=[*topologies, *workloads])
    assert _kai_topology_keys(run.final, "h100-topology") == [RACK, HOST]
    assert _kai_topology_keys(run.final, "gb200-topology") == [NVL_BLOCK, NVL_DOMAIN, HOST]
    h100 = pods_of(run.final, "tas-h100-workload")
    gb200 = pods_of(run.final, "tas-gb200-workload")
    assert_all_running_and_ready(h100, 2)
    assert_all_running_and_ready(gb200, 2)
    assert_same_domain(run, h100, RACK)
    assert_same_domain(run, gb200, NVL_BLOCK)
    assert {node_of(p) for p in h100} <= set(h100_nodes)
    assert {node_of(p) for p in gb200} <= set(gb200_nodes)


def test_TAS18_cluster_topology_drift_detection(tmp_path: Path) -> None:
    """A binding naming an admin-managed KAI Topology that does not exist: Drift, and the
    status entry names the reference, not in sync."""
    binding = cluster_topology("drift-detect-topo", (("zone", ZONE), ("rack", RACK),
                                                     ("host", HOST)))
    binding["spec"]["schedulerTopologyBindings"] = [
        {"schedulerName": "kai-scheduler", "topologyReference": "non-existent-kai-topo"}]
    run = run_e2e(tmp_path, [], nodes=1, extra=[binding])
    ct = objects(run.final, "ClusterTopologyBinding")["drift-detect-topo"]
    cond = condition(ct, "SchedulerTopologyDrift")
    assert (cond["status"], cond["reason"]) == ("True", "Drift")
    [status] = ct["status"]["schedulerTopologyStatuses"]
    assert (status["inSync"], status["topologyReference"]) == (False, "non-existent-kai-topo")
    assert "non-existent-kai-topo" not in objects(run.final, "Topology")


def test_TAS19_auto_managed_cluster_topology_lifecycle(tmp_path: Path) -> None:
    """The KAI Topology follows its ClusterTopologyBinding: created with it, and replaced when
    its levels change; SchedulerTopologyDrift stays False/InSync throughout."""
    two = cluster_topology("lifecycle-topo", (("zone", ZONE), ("host", HOST)))
    three = cluster_topology("lifecycle-topo", (("zone", ZONE), ("rack", RACK), ("host", HOST)))
    steps = [{"at": "1m", "apply": two}, {"at": "2m", "apply": three},
             {"at": "3m", "label": {"node": "agent-000", "labels": {"e2e.checkpoint": "t19"}}}]
    run = run_e2e(tmp_path, [], nodes=1, steps=steps)  # Grove needs none; a cluster has one
    for step, keys in ((2, [ZONE, HOST]), (3, [ZONE, RACK, HOST])):
        assert _kai_topology_keys(run.before(step), "lifecycle-topo") == keys
        ct = objects(run.before(step), "ClusterTopologyBinding")["lifecycle-topo"]
        cond = condition(ct, "SchedulerTopologyDrift")
        assert (cond["status"], cond["reason"]) == ("False", "InSync")


def test_TAS20_pcs_topology_levels_unavailable_condition(tmp_path: Path) -> None:
    """The ClusterTopologyBinding goes away under a PodCliqueSet and comes back. Grove's test
    starts from a zero-replica PodCliqueSet; tas-topology-condition.yaml (as stored) has one
    replica, so the first step scales it to zero."""
    name = "tas-topology-condition"
    levels = (("zone", ZONE), ("rack", RACK), ("host", HOST))
    steps = [
        {"at": "1m", "scale": {"name": name, "replicas": 0}},
        {"at": "2m", "delete": {"kind": "ClusterTopologyBinding", "name": "tas20-topology"}},
        {"at": "3m", "scale": {"name": name, "replicas": 1}},
        {"at": "4m", "scale": {"name": name, "replicas": 0}},
        {"at": "5m", "apply": cluster_topology("tas20-topology", levels)},
    ]
    run = run_e2e(tmp_path, "tas-topology-condition.yaml", nodes=2, steps=steps,
                  extra=[cluster_topology("tas20-topology", levels)])

    def cond(objs: dict) -> tuple[str, str]:
        c = condition(objects(objs, "PodCliqueSet")[name], "TopologyLevelsUnavailable")
        assert c is not None
        return c["status"], c["reason"]

    assert cond(run.before(1)) == ("False", "AllClusterTopologyLevelsAvailable")
    assert cond(run.before(3)) == ("Unknown", "ClusterTopologyNotFound")
    scaled_up = run.before(4)
    assert cond(scaled_up) == ("Unknown", "ClusterTopologyNotFound")
    assert_all_running_and_ready(pods_of(scaled_up, name), 2)
    gang = objects(scaled_up, "PodGang")[f"{name}-0"]
    assert "grove.io/topology-name" not in (gang["metadata"].get("annotations") or {})
    clique = objects(scaled_up, "PodClique")[f"{name}-0-worker"]
    assert "grove.io/topology-name" not in (clique["metadata"].get("annotations") or {})
    pg = kai.podgroup_of(scaled_up, name, f"{name}-0")
    kai.verify(pg, "", "", [kai.standalone(name, 0, "worker", 2)])
    assert pods_of(run.before(5), name) == []
    assert cond(run.final) == ("False", "AllClusterTopologyLevelsAvailable")


def test_TAS23_preferred_pack_constraint_propagation(tmp_path: Path) -> None:
    """Preferred pack domains reach the KAI PodGroups. Grove's tas-preferred-pack.yaml is not
    in the stored sources; the workload is written here from what the test asserts (PCS
    pack required block, preferred rack; scaling group `workers` of 2 replicas, minAvailable
    1, preferred host; standalone `router` preferred host)."""
    name = "tas-preferred-pack"
    pcs = _pcs(name, {"topologyName": "grove-topology",
                      "pack": {"required": "block", "preferred": "rack"}},
               [_clique("worker", 1, 1),
                _clique("router", 1, 1, constraint={"pack": {"preferred": "host"}})],
               [{"name": "workers", "replicas": 2, "minAvailable": 1,
                 "topologyConstraint": {"pack": {"preferred": "host"}},
                 "cliqueNames": ["worker"]}])
    run = run_e2e(tmp_path, [], nodes=28, extra=[pcs])
    assert_all_running_and_ready(pods_of(run.final, name), 3)
    base = kai.podgroup_of(run.final, name, f"{name}-0")
    kai.verify(base, BLOCK, RACK, [
        kai.SubGroup(f"{name}-0-workers-0", 0, None, "", HOST),
        kai.in_pcsg(name, 0, "workers", 0, "worker", 1),
        kai.SubGroup(f"{name}-0-router", 1, None, "", HOST)])
    scaled = kai.podgroup_of(run.final, name, f"{name}-0-workers-0")  # replica 1, offset 0
    kai.verify(scaled, "", HOST, [kai.in_pcsg(name, 0, "workers", 1, "worker", 1, parent=False)])
    _topology_levels_available(run, name)


# --- TAS21, TAS22: what the webhooks and CRD rules refuse ------------------------------------


def _refusal(objs: list[dict]) -> str | None:
    """Create `objs` in order on an embedded cluster with the operator's admission (Grove's
    e2e install: KAI, topology-aware scheduling on) and grove-topology; the last one's
    refusal, or None when it was admitted."""
    from phalanx.api.config import load_operator_config
    from phalanx.api.registry import from_dict
    from phalanx.backends.registry import BackendRegistry
    from phalanx.cluster.client import Invalid
    from phalanx.cluster.clock import run_virtual
    from phalanx.cluster.memory import MemoryCluster
    from phalanx.operator.admission import install_admission

    from .harness import FIXTURES, OPERATOR_CONFIG

    async def main() -> str | None:
        import phalanx.backends  # noqa: F401  (registers the backends)

        cluster = MemoryCluster()
        cfg = load_operator_config(OPERATOR_CONFIG)
        install_admission(cluster, BackendRegistry.from_config(cfg), topology_aware=True)
        await cluster.create(from_dict(cluster_topology()))
        for queue in yaml.safe_load_all((FIXTURES / "queues.yaml").read_text()):
            await cluster.create(from_dict(queue))  # Grove's e2e setup applies its queues
        try:
            for obj in objs:
                await cluster.create(from_dict(obj))
        except Invalid as err:
            return err.message
        return None

    return run_virtual(main)


def _binding(name: str, levels: tuple, refs: tuple[tuple[str, str], ...] = ()) -> dict:
    ct = cluster_topology(name, levels)
    if refs:
        ct["spec"]["schedulerTopologyBindings"] = [
            {"schedulerName": s, "topologyReference": r} for s, r in refs]
    return ct


TAS21 = [
    ("duplicate topology domains",
     _binding("tas21-invalid-topology", (("zone", ZONE), ("zone", RACK))),
     ["spec.levels[1].domain", "Duplicate value"]),
    ("duplicate scheduler backend references",
     _binding("tas22-duplicate-backend", (("zone", ZONE), ("rack", RACK)),
              (("kai-scheduler", "kai-topology-a"), ("kai-scheduler", "kai-topology-b"))),
     ["spec.schedulerTopologyBindings[1].schedulerName", "Duplicate value"]),
    ("unknown scheduler backend reference",
     _binding("tas22-unknown-backend", (("zone", ZONE), ("rack", RACK)),
              (("unknown-scheduler", "topology"),)),
     ["spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend is not enabled"]),
    ("non topology aware scheduler backend reference",
     _binding("tas22-non-tas-backend", (("zone", ZONE), ("rack", RACK)),
              (("default-scheduler", "default-topology"),)),
     ["spec.schedulerTopologyBindings[0].schedulerName",
      "scheduler backend does not implement topology-aware scheduling"]),
]


@pytest.mark.parametrize(("binding", "words"), [r[1:] for r in TAS21], ids=[r[0] for r in TAS21])
def test_TAS21_topology_validation_webhooks(binding: dict, words: list[str]) -> None:
    refused = _refusal([binding])
    assert refused is not None and all(w in refused for w in words), refused


def test_TAS21_pcs_with_an_inherited_topology_name_is_admitted() -> None:
    worker = _clique("worker", 1, 1, constraint={"pack": {"required": "host"}})
    assert _refusal([_pcs("tas21-pcs-optional-topology-name",
                          {"topologyName": "grove-topology", "pack": {"required": "zone"}},
                          [worker])]) is None


def _tas22(name: str, constraint: dict, clique: dict | None = None,
           group: dict | None = None) -> dict:
    pcs = _pcs(name, constraint, [_clique("worker", 1, 1, constraint=clique)],
               [{"name": "workers", "cliqueNames": ["worker"], "replicas": 1,
                 "minAvailable": 1, "topologyConstraint": group}] if group else ())
    pcs["spec"]["replicas"] = 0
    return pcs


NO_PACK_DOMAIN = "packDomain is deprecated and cannot be used on new workloads; use pack.required"
RACK_PACK = {"topologyName": "grove-topology", "pack": {"required": "rack"}}
TAS22 = [
    ("deprecated packDomain on PCS create",
     _tas22("tas22-legacy-pcs", {"topologyName": "grove-topology", "packDomain": "host"}),
     NO_PACK_DOMAIN),
    ("topologyConstraint without pack",
     _tas22("tas22-missing-pack", {"topologyName": "grove-topology"}),
     "topologyConstraint must specify pack or deprecated packDomain"),
    ("empty pack",
     _tas22("tas22-empty-pack", {"topologyName": "grove-topology", "pack": {}}),
     "pack must specify at least one of required or preferred"),
    ("deprecated packDomain with pack.required",
     _tas22("tas22-ambiguous-pack", {"topologyName": "grove-topology", "packDomain": "host",
                                     "pack": {"required": "host"}}),
     "must not set both pack.required and deprecated packDomain"),
    ("deprecated packDomain on PodClique create",
     _tas22("tas22-legacy-pclq", RACK_PACK, clique={"packDomain": "host"}), NO_PACK_DOMAIN),
    ("deprecated packDomain on PodCliqueScalingGroup create",
     _tas22("tas22-legacy-pcsg", RACK_PACK, group={"packDomain": "host"}), NO_PACK_DOMAIN),
]


@pytest.mark.parametrize(("pcs", "words"), [r[1:] for r in TAS22], ids=[r[0] for r in TAS22])
def test_TAS22_podcliqueset_topology_cel_validation(pcs: dict, words: str) -> None:
    refused = _refusal([pcs])
    assert refused is not None and words in refused, refused


def test_TAS22_preferred_only_pack_passes() -> None:
    assert _refusal([_tas22("tas22-valid-preferred-only", {
        "topologyName": "grove-topology", "pack": {"preferred": "host"}})]) is None
