"""Each backend on its peer's own CRDs, on a real kube-apiserver 1.36 (issue 22 item 4).

One test per peer (KAI, Volcano, Koordinator, scheduler-plugins). Each loads only that peer's
CRDs from ../shared/peer-crds (no Phalanx CRD for the same kinds) plus Grove's for the
operator's kinds, runs `phalanx operator` with that backend enabled and `phalanx scheduler`
standing in for the peer's scheduler (its profile named as the peer's scheduler), both as
service accounts so the audit log holds their writes, and applies a PodCliqueSet with a
scaling group and a pack constraint (fieldValidation=Strict). Then: every pod Running, every
PodGang Initialized and Running, the backend's objects as the peer's scheduler reads them
(and the gang verdict written where the peer's schema has room for it, through the status
subresource or, for Volcano's PodGroup, which has none, with the object), no 4xx answer to a
write of the operator or the scheduler in the audit log (409 aside: that is optimistic
concurrency, a write retried after another writer's, not a refusal), and no traceback in
their logs.

The module runs its own control plane: Grove's ClusterTopologyBinding claims the short name
`ct`, as Phalanx's ClusterTopology CRD does, so the two cannot be installed in the session's
shared server side by side. Each test removes its peer's CRDs when done, so the next one
finds only its own. Without ../shared/peer-crds (or the Kubernetes binaries) the tests skip
with the reason.

The pack constraint each peer can honour: KAI a required one on the PodCliqueSet and on the
scaling group (per-subgroup constraints); Volcano and Koordinator a required one on the whole
gang (their network topology has no per-group constraint); scheduler-plugins' Coscheduling has
no topology, so a preferred one, which admission reports and does not refuse.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from phalanx.api import labels as L
from phalanx.api.grove import ClusterTopologyBinding, PodCliqueSet, PodGang
from phalanx.api.kai_topology import KaiTopology
from phalanx.api.queue import unlimited_queue
from phalanx.api.koordinator_topology import ClusterNetworkTopology
from phalanx.api.pod import Pod
from phalanx.api.schedulerplugins import POD_GROUP_LABEL, SchedulerPluginsPodGroup
from phalanx.api.scheduling import CoschedulingPodGroup, KaiPodGroup, VolcanoPodGroup
from phalanx.api.volcano_topology import HyperNode
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
from phalanx.envtest.ports import free_port
from phalanx.sim.clusterspec import BLOCK_KEY, RACK_KEY, ZONE_KEY
from tests.conftest import REAL_SERVER_TIMEOUT

# Each test well under the real tier's timeout (about 5 s here, plus 10 s for the module's
# control plane on the first).
pytestmark = [pytest.mark.real_cluster,
              pytest.mark.timeout(REAL_SERVER_TIMEOUT, func_only=True)]

TOPOLOGY = "phalanx-topology"
SYSTEM_NS = "phalanx-system"
KAI_QUEUE = "team-a"
PODS = 1 + 2 * (1 + 2)  # a router, and 2 scaling-group replicas of a leader and 2 workers
# A wait ends when nothing has changed for STALL seconds (phalanx.envtest.wait): a loaded
# machine is slower, not stuck. The test's timeout is the backstop.
STALL = 60.0
GANG_SCHEDULED = "GangScheduled"


@dataclass(frozen=True)
class Peer:
    name: str  # folder in ../shared/peer-crds
    profile: str  # OperatorConfiguration profile
    scheduler: str  # the pods' schedulerName, phalanx-scheduler's profile
    pack: str  # "required" or "preferred"
    group_pack: bool  # a pack constraint on the scaling group too


PEERS = [
    Peer("kai", "kai-scheduler", "kai-scheduler", "required", True),
    Peer("volcano", "volcano", "volcano", "required", False),
    Peer("koordinator", "koordinator", "koord-scheduler", "required", False),
    Peer("scheduler-plugins", "scheduler-plugins", "scheduler-plugins-scheduler", "preferred",
         False),
]


@pytest.fixture(scope="module")
def peer_plane() -> Iterator[ControlPlane]:
    """A control plane of this module's own, with Grove's CRDs, 8 GPU nodes in 2 blocks of
    2 racks, the ClusterTopologyBinding of their labels, and the service account both
    services run as (cluster-admin: this checks what they write, not RBAC)."""
    try:
        peer_crds("grove")
        binaries = find_binaries()
    except (PeerCRDsNotFound, BinariesNotFound) as err:
        pytest.skip(str(err))
    plane = ControlPlane.start(binaries=binaries)
    try:
        _admin_post(plane, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": SYSTEM_NS}})
        for account in ("operator", "scheduler"):
            plane.service_account_kubeconfig(SYSTEM_NS, account)
            bind_cluster_role(plane.server, plane.token, SYSTEM_NS, account)

        async def setup() -> None:
            async with plane.client() as kube:
                await install_crds(kube, peer_crds("grove"))
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


def _admin_post(plane: ControlPlane, path: str, body: dict[str, Any]) -> None:
    from phalanx.envtest.ports import http_post_json

    http_post_json(f"{plane.server}{path}", body, token=plane.token)


def pcs(peer: Peer, ns: str) -> PodCliqueSet:
    res = {"cpu": "1", "nvidia.com/gpu": "1"}

    def clique(name: str, replicas: int, gpu: bool = True) -> dict[str, Any]:
        r = res if gpu else {"cpu": "1"}
        return {"name": name, "spec": {"roleName": name, "replicas": replicas, "podSpec": {
            "schedulerName": peer.scheduler,
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": r, "limits": r}}]}}}

    group: dict[str, Any] = {"name": "model", "cliqueNames": ["leader", "worker"],
                             "replicas": 2, "minAvailable": 1}
    if peer.group_pack:
        group["topologyConstraint"] = {"pack": {"required": "rack"}}
    meta: dict[str, Any] = {"name": "serve", "namespace": ns}
    if peer.name == "kai":
        meta["labels"] = {L.LABEL_KAI_QUEUE: KAI_QUEUE}
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": meta,
        "spec": {"replicas": 1, "template": {
            "topologyConstraint": {"topologyName": TOPOLOGY, "pack": {peer.pack: "block"}},
            "cliques": [clique("router", 1, gpu=False), clique("leader", 1),
                        clique("worker", 2)],
            "podCliqueScalingGroups": [group]}}})


def start_services(plane: ControlPlane, peer: Peer) -> list[PhalanxService]:
    cfg = operator_config(
        profiles=("default-scheduler", peer.profile), default_profile=peer.profile,
        probe_port=free_port(), metrics_port=free_port(), webhook_port=free_port(),
        lease_namespace=SYSTEM_NS, topologyAwareScheduling={"enabled": True})
    op = start_operator(plane, config=cfg, namespace=SYSTEM_NS, name=f"op-{peer.name}",
                        kubeconfig=plane.service_account_kubeconfig(SYSTEM_NS, "operator"))
    services = [op]
    try:
        services.append(start_phalanx_scheduler(
            plane, scheduler_names=(peer.scheduler,), name=f"sched-{peer.name}",
            lease_namespace=SYSTEM_NS,
            kubeconfig=plane.service_account_kubeconfig(SYSTEM_NS, "scheduler")))
    except BaseException:
        op.stop()
        raise
    return services


async def _running(kube: Any, ns: str) -> tuple[list[Pod], list[PodGang]]:
    async def all_running() -> object:
        pods = (await kube.list(Pod, ns)).items
        phases = sorted((p.name, p.status.phase or "") for p in pods)
        ok = len(pods) == PODS and all(ph == "Running" for _, ph in phases)
        return pods if ok else Pending(phases)

    pods = await wait_until_async(all_running, REAL_SERVER_TIMEOUT, interval=0.5, stall=STALL,
                                  what=f"the {PODS} pods Running")

    async def gangs_running() -> object:
        gangs = (await kube.list(PodGang, ns)).items
        state = sorted((g.name, g.is_initialized, g.status.phase) for g in gangs)
        ok = len(gangs) == 2 and all(i and ph == "Running" for _, i, ph in state)
        return gangs if ok else Pending(state)

    gangs = await wait_until_async(gangs_running, REAL_SERVER_TIMEOUT, interval=0.5,
                                   stall=STALL, what="both PodGangs Initialized and Running")
    return pods, gangs


def _gang_condition(obj: Any) -> Any:
    return next((c for c in obj.status.conditions if c.type == GANG_SCHEDULED), None)


async def _kai(kube: Any, ns: str, pods: list[Pod], gangs: list[PodGang]) -> None:
    topo = await kube.get(KaiTopology, TOPOLOGY)
    assert [lv.node_label for lv in topo.spec.levels] == [
        ZONE_KEY, BLOCK_KEY, RACK_KEY, "kubernetes.io/hostname"]
    for gang in gangs:
        pg = await kube.get(KaiPodGroup, gang.name, ns)
        assert pg.spec.queue == KAI_QUEUE and pg.spec.min_member == gang.min_member()
        assert {s.name for s in pg.spec.sub_groups or ()} >= {g.name for g in gang.spec.pod_groups}
        constraints = [pg.spec.topology_constraint, *(s.topology_constraint
                                                      for s in pg.spec.sub_groups or ())]
        assert {c.topology for c in constraints if c is not None} == {TOPOLOGY}
        # phalanx-scheduler's verdict, through the status subresource, without the
        # observedGeneration KAI's schema lacks (issue 22 item 6).
        cond = await _eventually_condition(kube, KaiPodGroup, gang.name, ns)
        assert cond.status == "True" and cond.observed_generation is None
    for pod in pods:
        assert pod.metadata.annotations[L.ANNOTATION_KAI_POD_GROUP] == \
            pod.metadata.labels[L.LABEL_PODGANG]


async def _volcano(kube: Any, ns: str, pods: list[Pod], gangs: list[PodGang]) -> None:
    hypernodes = {h.name: h for h in (await kube.list(HyperNode)).items}
    tiers = sorted({(h.spec.tier, h.spec.tier_name) for h in hypernodes.values() if h.spec})
    assert tiers == [(1, "rack"), (2, "block"), (3, "zone")], tiers
    assert sum(h.spec.tier == 1 for h in hypernodes.values() if h.spec) == 4
    for gang in gangs:
        pg = await kube.get(VolcanoPodGroup, gang.name, ns)
        assert pg.spec.min_member == gang.min_member()
        assert pg.spec.min_task_member == {g.name: g.min_replicas for g in gang.spec.pod_groups}
        nt = pg.spec.network_topology
        assert nt is not None and (nt.mode, nt.highest_tier_allowed) == ("hard", 2)  # block
        # No status subresource in Volcano's CRD: the verdict is written with the object.
        cond = await _eventually_condition(kube, VolcanoPodGroup, gang.name, ns)
        assert cond.status == "True"
    for pod in pods:
        assert pod.metadata.annotations[L.ANNOTATION_VOLCANO_GROUP_NAME] == \
            pod.metadata.labels[L.LABEL_PODGANG]


async def _koordinator(kube: Any, ns: str, pods: list[Pod], gangs: list[PodGang]) -> None:
    cnt = await kube.get(ClusterNetworkTopology, "default")
    assert cnt.spec is not None
    layers = {lv.topology_layer: lv for lv in cnt.spec.network_topology_spec}
    chain, layer = [], "NodeTopologyLayer"  # koord-scheduler's walk up from the node
    while layer:
        chain.append(layer)
        layer = layers[layer].parent_topology_layer or ""
    assert chain == ["NodeTopologyLayer", "RackTopologyLayer", "BlockTopologyLayer",
                     "ZoneTopologyLayer"]
    assert layers["BlockTopologyLayer"].label_key == [BLOCK_KEY]
    for gang in gangs:
        for group in gang.spec.pod_groups:
            pg = await kube.get(CoschedulingPodGroup, group.name, ns)
            assert pg.spec.min_member == group.min_replicas
            spec = pg.metadata.annotations.get(L.ANNOTATION_KOORD_NETWORK_TOPOLOGY_SPEC)
            assert spec is not None
            assert {r["layer"] for r in json.loads(spec)["gatherStrategy"]} <= set(chain)
    for pod in pods:
        assert pod.metadata.labels[L.LABEL_POD_GROUP] == pod.metadata.labels[L.LABEL_PODCLIQUE]


async def _scheduler_plugins(kube: Any, ns: str, pods: list[Pod], gangs: list[PodGang]) -> None:
    for gang in gangs:
        pg = await kube.get(SchedulerPluginsPodGroup, gang.name, ns)
        assert pg.spec.min_member == gang.min_member()
    for pod in pods:
        assert pod.metadata.labels[POD_GROUP_LABEL] == pod.metadata.labels[L.LABEL_PODGANG]
    pcs_ = await kube.get(PodCliqueSet, "serve", ns)
    compatible = next((c for c in pcs_.status.conditions if c.type == "SchedulerCompatible"), None)
    # Coscheduling has no topology: the preferred pack is admitted and reported as ignored.
    assert compatible is not None and compatible.status == "False", pcs_.status.conditions
    assert "spec.template.topologyConstraint.pack.preferred" in compatible.message


async def _eventually_condition(kube: Any, kind: Any, name: str, ns: str) -> Any:
    async def written() -> object:
        obj = await kube.get(kind, name, ns)
        cond = _gang_condition(obj)
        return cond if cond is not None and cond.status == "True" else Pending(obj.status)

    return await wait_until_async(written, REAL_SERVER_TIMEOUT, interval=0.5, stall=STALL,
                                  what=f"{kind.KIND} {ns}/{name} GangScheduled=True")


CHECKS: dict[str, Callable[..., Any]] = {
    "kai": _kai, "volcano": _volcano, "koordinator": _koordinator,
    "scheduler-plugins": _scheduler_plugins,
}


@pytest.mark.parametrize("peer", PEERS, ids=[p.name for p in PEERS])
def test_a_backend_runs_a_gang_on_its_peers_own_crds(peer_plane: ControlPlane, peer: Peer) -> None:
    plane = peer_plane
    try:
        crds = peer_crds(peer.name)
    except PeerCRDsNotFound as err:
        pytest.skip(str(err))
    ns = plane.create_namespace(peer.name)

    async def install() -> list[str]:
        async with plane.client() as kube:
            return await install_crds(kube, crds)

    names = asyncio.run(install())
    services: list[PhalanxService] = []
    users = [plane.service_account_user(SYSTEM_NS, a) for a in ("operator", "scheduler")]
    before = {u: len(plane.audit_events(u)) for u in users}  # earlier tests' writes

    async def body() -> None:
        async with plane.client() as kube:
            if peer.name == "kai":  # a PodCliqueSet may name only an existing queue
                await kube.create(unlimited_queue(KAI_QUEUE))
            await kube.create(pcs(peer, ns))
            async with running_kubelet(kube):
                pods, gangs = await _running(kube, ns)
                await CHECKS[peer.name](kube, ns, pods, gangs)

    try:
        services = start_services(plane, peer)
        asyncio.run(body())
    except BaseException:
        for s in services:
            print(f"--- {s.name} (tail) ---\n{s.log_text(4000)}")
        raise
    finally:
        for s in services:
            s.stop()

        async def cleanup() -> None:
            async with plane.client() as kube:
                await uninstall_crds(kube, names)

        asyncio.run(cleanup())
    writes = [e for u in users for e in plane.audit_events(u)[before[u]:]]
    assert writes, "the audit log holds no write of the operator or the scheduler"
    # 409 is optimistic concurrency (another writer got there first; the loser re-reads and
    # retries), not a refusal of what was written: every other 4xx is.
    refused = [e for e in client_errors(writes) if e.code != 409]
    assert refused == [], "\n".join(f"{e} -> {e.code}" for e in refused)
    conflicts = [e for e in client_errors(writes) if e.code == 409]
    print(f"{len(writes)} writes, {len(conflicts)} answered 409 (retried):",
          sorted({f"{e.verb} {e.resource}" for e in conflicts}))
    for s in services:
        assert s.tracebacks() == [], f"{s.name}:\n{s.log_text(6000)}"
    # Where the peer's PodGroup has no conditions, phalanx-scheduler says so once.
    said = services[1].log_text().count("has no status.conditions in its schema")
    assert said == (1 if peer.name in ("koordinator", "scheduler-plugins") else 0), said


@pytest.mark.parametrize(("queue", "refused"), [
    ("research", None),
    ("closed", "Volcano queue 'closed' is Closed"),
    ("absent", "Not found: Volcano queue 'absent' does not exist"),
])
def test_a_volcano_queue_is_read_from_volcanos_own_crd(peer_plane: ControlPlane, queue: str,
                                                        refused: str | None) -> None:
    """Admission reads Volcano's Queue (its full schema: spec.weight, capability, ...) from the
    real server that serves it, as Volcano's PodGroup webhook checks it: the queue must exist
    and be Open. Without Volcano's CRD the server has no queues to look in: nothing checked."""
    from phalanx.api.volcano_queue import VolcanoQueue
    from phalanx.backends.registry import BackendRegistry
    from phalanx.operator.admission_queue import volcano_queue_problem

    try:
        crds = [c for c in peer_crds("volcano") if c["spec"]["names"]["kind"] == "Queue"]
    except PeerCRDsNotFound as err:
        pytest.skip(str(err))
    assert BackendRegistry  # the backends' module imports cleanly next to the real client

    async def main() -> tuple[str, str]:
        async with peer_plane.client() as kube:
            before = await volcano_queue_problem(kube, queue)  # Volcano's CRD not served
            names = await install_crds(kube, crds)
            try:
                for name, state in (("research", "Open"), ("closed", "Closed")):
                    # Volcano's full Queue as a user writes it; admission reads the state
                    # Volcano's controller sets (here by hand, through the status subresource).
                    _admin_post(peer_plane, "/apis/scheduling.volcano.sh/v1beta1/queues", {
                        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                        "metadata": {"name": name}, "spec": {
                            "weight": 4, "reclaimable": True,
                            "capability": {"nvidia.com/gpu": "16"}}})
                    made = await kube.get(VolcanoQueue, name)
                    made.status.state = state
                    await kube.update_status(made)
                return before, await volcano_queue_problem(kube, queue)
            finally:
                for name in ("research", "closed"):
                    with contextlib.suppress(Exception):
                        await kube.delete(VolcanoQueue, name)
                await uninstall_crds(kube, names)

    before, problem = asyncio.run(main())
    assert before == ""
    if refused is None:
        assert problem == ""
    else:
        assert refused in problem
