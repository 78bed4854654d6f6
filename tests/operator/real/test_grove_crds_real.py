"""Phalanx's operator on Grove's own CRDs, on a real kube-apiserver 1.36 (issue 22, items 1-3:
the Grove row of the real-tier matrix).

The module runs a control plane of its own, into which it loads ONLY Grove's CRDs
(../shared/peer-crds/grove: PodCliqueSet, PodClique, PodCliqueScalingGroup,
ClusterTopologyBinding, PodGang; no Phalanx CRD for those kinds). `phalanx operator` (with
topology-aware scheduling on) and `phalanx scheduler` run as service accounts, so the API
server's audit log holds their writes. A ClusterTopologyBinding names the nodes' levels; a
PodCliqueSet with a scaling group, a required block constraint on the PodCliqueSet (named by
`topologyName`, inherited below) and a required rack constraint on the scaling group is
created with fieldValidation=Strict. Then: every pod Running, each replica's pods in one
block and each scaling-group replica's in one rack; both PodGangs Initialized and Running
with Grove's status only; PodClique and scaling-group status counts written (not refused as
before: `status.lastScheduled` was unknown to Grove's schema); the binding's status written;
no 4xx answer to any write of the operator or the scheduler in the audit log; no traceback
in their logs.

A second test swaps in Phalanx's own PodCliqueSet CRD (as `phalanx manifests crds` writes it)
for Grove's and shows that it enforces Grove's CEL rules on the same server: `packDomain` is
refused on a new PodCliqueSet and accepted on an existing one, `roleName` is required, a
`pack` needs required or preferred. It puts Grove's CRD back, so the tests do not depend on
their order.

Without ../shared/peer-crds (or the Kubernetes binaries) the tests skip with the reason.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import pytest

from phalanx.api.core import Node
from phalanx.api.crds import crd_for
from phalanx.api.grove import (
    ClusterTopologyBinding,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueSet,
    PodGang,
)
from phalanx.api.pod import Pod
from phalanx.cluster.client import Invalid
from phalanx.envtest import (
    BinariesNotFound,
    ControlPlane,
    Pending,
    PeerCRDsNotFound,
    PhalanxService,
    bind_cluster_role,
    client_errors,
    create_nodes,
    find_binaries,
    gpu_cluster_spec,
    install_crds,
    operator_config,
    peer_crds,
    running_kubelet,
    start_operator,
    start_phalanx_scheduler,
    uninstall_crds,
    wait_until_async,
)
from phalanx.envtest.ports import free_port, http_post_json
from phalanx.sim.clusterspec import BLOCK_KEY, RACK_KEY, ZONE_KEY
from tests.conftest import REAL_SERVER_TIMEOUT

pytestmark = [pytest.mark.real_cluster,
              pytest.mark.timeout(REAL_SERVER_TIMEOUT, func_only=True)]

TOPOLOGY = "grove-topology"
SYSTEM_NS = "phalanx-system"
SCHEDULER = "phalanx-scheduler"
PODS = 1 + 2 * (1 + 2)  # a router, and 2 scaling-group replicas of a leader and 2 workers
# A wait ends when nothing has changed for STALL seconds (phalanx.envtest.wait): a loaded
# machine is slower, not stuck. The test's timeout is the backstop.
STALL = 60.0


@pytest.fixture(scope="module")
def grove_plane() -> Iterator[ControlPlane]:
    """A control plane of this module's own: Grove's CRDs only, 8 GPU nodes in 2 blocks of
    2 racks, the ClusterTopologyBinding of their labels, and the two service accounts the
    services run as (cluster-admin: this checks what they write, not RBAC)."""
    try:
        grove = peer_crds("grove")
        binaries = find_binaries()
    except (PeerCRDsNotFound, BinariesNotFound) as err:
        pytest.skip(str(err))
    plane = ControlPlane.start(binaries=binaries)
    try:
        http_post_json(f"{plane.server}/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NS}},
            token=plane.token)
        for account in ("operator", "scheduler"):
            plane.service_account_kubeconfig(SYSTEM_NS, account)
            bind_cluster_role(plane.server, plane.token, SYSTEM_NS, account)

        async def setup() -> None:
            async with plane.client() as kube:
                await install_crds(kube, grove)
                await create_nodes(kube, gpu_cluster_spec(8, gpus=8, nodes_per_rack=2,
                                                          racks_per_block=2, name_prefix="gpu"))
                await kube.create(ClusterTopologyBinding.model_validate({
                    "metadata": {"name": TOPOLOGY}, "spec": {"levels": [
                        {"domain": "zone", "key": ZONE_KEY},
                        {"domain": "block", "key": BLOCK_KEY},
                        {"domain": "rack", "key": RACK_KEY},
                        {"domain": "host", "key": "kubernetes.io/hostname"}]}}))

        asyncio.run(setup())
        yield plane
    finally:
        plane.stop()


def _pcs(ns: str) -> dict[str, Any]:
    """Grove's current API: roleName, topologyName, pack.required."""
    def clique(name: str, replicas: int, gpus: int) -> dict[str, Any]:
        res = {"cpu": "1", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
        return {"name": name, "spec": {"roleName": name, "replicas": replicas, "podSpec": {
            "schedulerName": SCHEDULER,
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": res, "limits": res}}]}}}

    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
            "metadata": {"name": "serve", "namespace": ns},
            "spec": {"replicas": 1, "template": {
                "topologyConstraint": {"topologyName": TOPOLOGY, "pack": {"required": "block"}},
                "cliques": [clique("router", 1, 0), clique("leader", 1, 1),
                            clique("worker", 2, 1)],
                "podCliqueScalingGroups": [{
                    "name": "model", "cliqueNames": ["leader", "worker"], "replicas": 2,
                    "minAvailable": 1, "topologyConstraint": {"pack": {"required": "rack"}}}]}}}


def _start_services(plane: ControlPlane) -> list[PhalanxService]:
    cfg = operator_config(profiles=("default-scheduler", SCHEDULER), default_profile=SCHEDULER,
                          probe_port=free_port(), metrics_port=free_port(),
                          webhook_port=free_port(), lease_namespace=SYSTEM_NS,
                          topologyAwareScheduling={"enabled": True})
    services = [start_operator(
        plane, config=cfg, namespace=SYSTEM_NS, name="op-grove",
        kubeconfig=plane.service_account_kubeconfig(SYSTEM_NS, "operator"))]
    try:
        services.append(start_phalanx_scheduler(
            plane, name="sched-grove", lease_namespace=SYSTEM_NS,
            kubeconfig=plane.service_account_kubeconfig(SYSTEM_NS, "scheduler")))
    except BaseException:
        services[0].stop()
        raise
    return services


async def _create_strict(kube: Any, obj: dict[str, Any]) -> Any:
    """Create through the API with fieldValidation=Strict (an unknown field is refused)."""
    kind = PodCliqueSet
    ns = obj["metadata"]["namespace"]
    return await kube.transport.request(
        "POST", f"/apis/grove.io/v1alpha1/namespaces/{ns}/{kind.PLURAL}", body=obj,
        query=[("fieldValidation", "Strict")], kind=kind.KIND, name=obj["metadata"]["name"])


async def _all_running(kube: Any, ns: str) -> tuple[list[Pod], list[PodGang]]:
    async def pods_running() -> object:
        pods = (await kube.list(Pod, ns)).items
        phases = sorted((p.name, p.status.phase or "") for p in pods)
        ok = len(pods) == PODS and all(ph == "Running" for _, ph in phases)
        return pods if ok else Pending(phases)

    pods = await wait_until_async(pods_running, REAL_SERVER_TIMEOUT, interval=0.5, stall=STALL,
                                  what=f"the {PODS} pods Running")

    async def gangs_running() -> object:
        gangs = (await kube.list(PodGang, ns)).items
        state = sorted((g.name, g.is_initialized, g.status.phase) for g in gangs)
        ok = len(gangs) == 2 and all(i and ph == "Running" for _, i, ph in state)
        return gangs if ok else Pending(state)

    gangs = await wait_until_async(gangs_running, REAL_SERVER_TIMEOUT, interval=0.5,
                                   stall=STALL, what="both PodGangs Initialized and Running")
    return pods, gangs


async def _status_written(kube: Any, ns: str) -> tuple[list[PodClique], list[Any]]:
    """The PodCliques' and scaling groups' counts, as the operator wrote them."""
    async def counted() -> object:
        cliques = (await kube.list(PodClique, ns)).items
        groups = (await kube.list(PodCliqueScalingGroup, ns)).items
        state = sorted((c.name, c.status.scheduled_replicas, c.status.ready_replicas,
                        c.spec.replicas) for c in cliques)
        ok = len(cliques) == 5 and all(s == r == n for _, s, r, n in state) and groups and \
            all(g.status.available_replicas == 2 for g in groups)
        return (cliques, groups) if ok else Pending(state)

    return await wait_until_async(counted, REAL_SERVER_TIMEOUT, interval=0.5, stall=STALL,
                                  what="the PodCliques' status counts written")


def test_the_operator_runs_a_gang_on_groves_own_crds(grove_plane: ControlPlane) -> None:
    plane = grove_plane
    ns = plane.create_namespace("grove")
    users = [plane.service_account_user(SYSTEM_NS, a) for a in ("operator", "scheduler")]
    services: list[PhalanxService] = []
    nodes: dict[str, dict[str, str]] = {}

    async def body() -> tuple[Any, ...]:
        async with plane.client() as kube:
            nodes.update({n.name: n.metadata.labels for n in (await kube.list(Node)).items})
            await _create_strict(kube, _pcs(ns))
            async with running_kubelet(kube):
                pods, gangs = await _all_running(kube, ns)
                cliques, groups = await _status_written(kube, ns)
            pcs = await kube.get(PodCliqueSet, "serve", ns)
            binding = await kube.get(ClusterTopologyBinding, TOPOLOGY)
            return pods, gangs, cliques, groups, pcs, binding

    try:
        services = _start_services(plane)
        pods, gangs, cliques, groups, pcs, binding = asyncio.run(body())
    except BaseException:
        for s in services:
            print(f"--- {s.name} (tail) ---\n{s.log_text(4000)}")
        raise
    finally:
        for s in services:
            s.stop()

    # Placement: one block for the replica, one rack per scaling-group replica.
    assert len({nodes[p.spec.node_name][BLOCK_KEY] for p in pods}) == 1
    for j in (0, 1):
        members = [p for p in pods if f"-model-{j}-" in p.name]
        assert len(members) == 3 and len({nodes[p.spec.node_name][RACK_KEY]
                                          for p in members}) == 1
    # Grove's status only, and what Phalanx keeps is in the conditions.
    for gang in gangs:
        assert set(gang.to_dict()["status"]) <= {"phase", "conditions", "placementScore"}
        assert gang.true_since("Scheduled") is not None and gang.true_since("Ready") is not None
        assert gang.metadata.annotations.get("grove.io/topology-name") == TOPOLOGY
    base = next(g for g in gangs if g.name == "serve-0")
    assert base.spec.topology_constraint.pack_constraint.required == BLOCK_KEY
    for clique in cliques:
        breached = next(c for c in clique.status.conditions if c.type == "MinAvailableBreached")
        assert breached.status == "False" and breached.reason == "SufficientReadyPods"
    cond = next(c for c in pcs.status.conditions if c.type == "TopologyLevelsUnavailable")
    assert (cond.status, cond.reason) == ("False", "AllClusterTopologyLevelsAvailable")
    assert not any(c.type == "ReconcileFailure" for c in pcs.status.conditions)
    assert binding.status.observed_generation == binding.metadata.generation
    # The audit log: every write of the operator and the scheduler accepted (409 is optimistic
    # concurrency, a write retried after another writer's, not a refusal).
    writes = [e for u in users for e in plane.audit_events(u)]
    assert any(e.resource == "podcliques/status" for e in writes)
    assert any(e.resource == "podgangs/status" for e in writes)
    assert any(e.resource == "clustertopologybindings/status" for e in writes)
    refused = [e for e in client_errors(writes) if e.code != 409]
    assert refused == [], "\n".join(f"{e} -> {e.code}" for e in refused)
    for s in services:
        assert s.tracebacks() == [], f"{s.name}:\n{s.log_text(6000)}"


def test_phalanxs_own_crds_enforce_groves_rules(grove_plane: ControlPlane) -> None:
    plane = grove_plane
    ns = plane.create_namespace("own-crds")
    ours = [crd_for(PodCliqueSet)]
    grove = peer_crds("grove", only=("PodCliqueSet",))

    async def swap(install: list[dict[str, Any]], remove: list[dict[str, Any]]) -> None:
        async with plane.client() as kube:
            await uninstall_crds(kube, [c["metadata"]["name"] for c in remove])
            await wait_until_async(lambda: _gone(kube, remove), 60, interval=0.2,
                                   what="the PodCliqueSet CRD deleted")
            await install_crds(kube, install)

    async def body() -> None:
        async with plane.client() as kube:
            def refused_with(words: str) -> Any:
                return pytest.raises(Invalid, match=words)

            legacy = _pcs(ns)
            legacy["metadata"]["name"] = "legacy"
            legacy["spec"]["template"]["topologyConstraint"] = {
                "topologyName": TOPOLOGY, "packDomain": "block"}
            with refused_with("packDomain is deprecated and cannot be used on new workloads"):
                await _create_strict(kube, legacy)
            no_role = _pcs(ns)
            del no_role["spec"]["template"]["cliques"][0]["spec"]["roleName"]
            with refused_with("roleName: Required value"):
                await _create_strict(kube, no_role)
            empty_pack = _pcs(ns)
            empty_pack["spec"]["template"]["topologyConstraint"]["pack"] = {}
            with refused_with("pack must specify at least one of required or preferred"):
                await _create_strict(kube, empty_pack)
            # An existing object keeps (and may take) packDomain on update: the rule reads
            # oldSelf, as Grove's does.
            created = await _create_strict(kube, _pcs(ns))
            changed = copy.deepcopy(created)
            changed["spec"]["template"]["topologyConstraint"] = {
                "topologyName": TOPOLOGY, "packDomain": "block"}
            await kube.transport.request(
                "PUT", f"/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquesets/serve",
                body=changed, query=[("fieldValidation", "Strict")], kind="PodCliqueSet",
                name="serve")

    asyncio.run(swap(ours, grove))
    try:
        asyncio.run(body())
    finally:
        asyncio.run(swap(grove, ours))


async def _gone(kube: Any, removed: list[dict[str, Any]]) -> object:
    from phalanx.cluster.client import NotFound

    left = []
    for crd in removed:
        try:
            await kube.transport.request(
                "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                       f"{crd['metadata']['name']}")
            left.append(crd["metadata"]["name"])
        except NotFound:
            pass
    return True if not left else Pending(left)
