"""Two replicas of the operator and two of `phalanx scheduler`, leader-elected, as the install
runs them, against the real kube-apiserver (issue 12 item 2).

Each replica is a subprocess with a service-account token of its own (`operator-a`,
`operator-b`, `scheduler-a`, `scheduler-b`) bound by the install's least-privilege RBAC
(`phalanx manifests all`), so the API server's audit log tells apart what each one wrote.
The cluster-wide RBAC is granted only after the replicas started: until then each leader
says on /readyz which cache it cannot fill and why. Then: exactly one replica of each leads
and the standbys write nothing; kill -9 of the operator leader in the middle of creating a
300-pod PodCliqueSet converges with every pod created once; kill -9 of the scheduler leader
hands over within the lease timing and the pods get bound; no log holds a traceback.
Tests run in file order and share the replicas; each scenario has its own namespace.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.api.config import OperatorConfiguration
from phalanx.api.core import Lease
from phalanx.api.crds import crds
from phalanx.api.grove import PodCliqueSet, PodGang
from phalanx.api.pod import Pod
from phalanx.cluster.client import NotFound
from phalanx.envtest import (
    Pending,
    PhalanxService,
    apply_documents,
    create_nodes,
    delete_nodes,
    gpu_cluster_spec,
    install_crds,
    running_kubelet,
    start_operator,
    start_phalanx_scheduler,
    wait_until,
    wait_until_async,
)
from phalanx.envtest.ports import free_port
from phalanx.manifests.install import InstallOptions, install_manifests
from tests.podnames import hostnames

REPO = Path(__file__).resolve().parents[2]
OPERATOR_LEASE = "phalanx-operator-leader-election"
SCHEDULER_LEASE = "phalanx-scheduler-leader-election"
# Short leases keep a fail-over test short: a standby takes over at most LEASE + RETRY
# seconds after the leader's last renewal.
LEASE, RENEW, RETRY = 6.0, 4.0, 1.0
TIMING = (f"{LEASE:g}s", f"{RENEW:g}s", f"{RETRY:g}s")
SCENARIO_TIMEOUT = 90.0
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


@dataclass
class Replicas:
    plane: Any
    ns: str  # the install namespace: Leases, service accounts, Roles
    config: dict[str, Any]
    operators: dict[str, PhalanxService] = field(default_factory=dict)
    schedulers: dict[str, PhalanxService] = field(default_factory=dict)
    # Every process ever started (killed ones included), for the traceback check.
    started: list[PhalanxService] = field(default_factory=list)
    # /readyz?verbose of each replica before the cluster-wide RBAC was granted.
    before_rbac: dict[str, tuple[int, str]] = field(default_factory=dict)
    cluster_rbac: list[dict[str, Any]] = field(default_factory=list)

    def user(self, replica: str) -> str:
        return self.plane.service_account_user(self.ns, replica)

    def start_operator(self, replica: str, *, wait: bool = True) -> PhalanxService:
        probe, metrics = free_port(), free_port()
        cfg = {**self.config, "server": {"healthProbes": {"port": probe},
                                         "metrics": {"port": metrics},
                                         "webhooks": {"port": free_port()}}}
        svc = start_operator(self.plane, config=cfg, namespace=self.ns, name=f"op-{replica}-"
                             f"{len(self.started)}", wait=wait, env={"POD_NAME": replica},
                             kubeconfig=self.plane.service_account_kubeconfig(self.ns, replica))
        self.operators[replica] = svc
        self.started.append(svc)
        return svc

    def start_scheduler(self, replica: str, *, wait: bool = True) -> PhalanxService:
        svc = start_phalanx_scheduler(
            self.plane, leader_elect=True, lease_namespace=self.ns, lease_timing=TIMING,
            name=f"sched-{replica}-{len(self.started)}", wait=wait, env={"POD_NAME": replica},
            kubeconfig=self.plane.service_account_kubeconfig(self.ns, replica))
        self.schedulers[replica] = svc
        self.started.append(svc)
        return svc

    async def holder_of(self, kube: Any, lease: str) -> str | None:
        """The replica (POD_NAME, the identity's prefix) holding `lease`, or None."""
        try:
            held = (await kube.get(Lease, lease, self.ns)).spec.holder_identity
        except NotFound:
            return None
        return held.split("_")[0] if held else None

    def holder(self, lease: str) -> str | None:
        async def get() -> str | None:
            async with self.plane.client() as kube:
                return await self.holder_of(kube, lease)

        return asyncio.run(get())

    async def wait_for_new_holder(self, kube: Any, lease: str, old: str,
                                  since: float) -> tuple[str, float]:
        """The replica that took `lease` over from `old`, and the seconds since `since`."""
        async def taken() -> object:
            held = await self.holder_of(kube, lease)
            return held not in (None, old) and held or Pending(f"holder {held}")

        new = await wait_until_async(taken, LEASE + RETRY + 20, interval=0.2,
                                     what=f"a new holder of Lease {lease} after {old} was killed")
        return new, time.monotonic() - since

    def run(self, body: Any, *, kubelet: bool = True) -> Any:
        async def main() -> Any:
            async with self.plane.client() as kube:
                if not kubelet:
                    return await asyncio.wait_for(body(kube), SCENARIO_TIMEOUT)
                async with running_kubelet(kube):
                    return await asyncio.wait_for(body(kube), SCENARIO_TIMEOUT)

        try:
            return asyncio.run(main())
        except BaseException:
            for s in self.started:
                print(f"--- {s.name} (tail) ---\n{s.log_text(3000)}")
            raise


def rbac_documents(ns: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The install's RBAC for namespace `ns`, bound to the replicas' service accounts:
    (namespaced Roles and bindings, cluster-wide ones). The ClusterRoles get names of their
    own so nothing else on the shared server (e.g. `manifests all` applied by another test)
    is touched."""
    subjects = {"phalanx-operator": ["operator-a", "operator-b"],
                "phalanx-scheduler": ["scheduler-a", "scheduler-b"]}
    docs = [d for d in install_manifests(InstallOptions(namespace=ns, webhook=False))
            if d["kind"] in RBAC_KINDS]
    local, cluster = [], []
    for doc in docs:
        component = doc["metadata"]["name"]
        if doc["kind"].startswith("Cluster"):
            doc["metadata"]["name"] = f"{ns}-{component}"
            cluster.append(doc)
        else:
            local.append(doc)
        if doc["kind"].endswith("Binding"):
            if doc["kind"] == "ClusterRoleBinding":
                doc["roleRef"]["name"] = f"{ns}-{component}"
            doc["subjects"] = [{"kind": "ServiceAccount", "name": sa, "namespace": ns}
                               for sa in subjects[component]]
    return local, cluster


def pcs(name: str, ns: str, cliques: list[tuple[str, int]], *, replicas: int = 1,
        cpu: str = "100m", scheduler: str = "phalanx-scheduler",
        groups: list[dict[str, Any]] | None = None) -> PodCliqueSet:
    resources = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "template": {"cliques": [
            {"name": c, "spec": {"roleName": c, "replicas": n, "podSpec": {
                "schedulerName": scheduler,
                "containers": [{"name": "c", "image": "busybox", "resources": resources}]}}}
            for c, n in cliques], **({"podCliqueScalingGroups": groups} if groups else {})}}})


def readyz(service: PhalanxService) -> tuple[int, str]:
    status, body = service.probe("/readyz?verbose")
    return status, body.decode()


@pytest.fixture(scope="module")
def replicas(control_plane: Any) -> Iterator[Replicas]:
    ns = control_plane.create_namespace("phalanx-ha")
    config = yaml.safe_load((REPO / "examples" / "operator-config.yaml").read_text())
    # default-scheduler PodGangs get Workload API objects (backend objects to clean up).
    for profile in config["scheduler"]["profiles"]:
        if profile["name"] == "default-scheduler":
            profile["config"] = {"gangScheduling": True}
    config["leaderElection"] = {"enabled": True, "resourceNamespace": ns,
                                "leaseDuration": TIMING[0], "renewDeadline": TIMING[1],
                                "retryPeriod": TIMING[2]}
    OperatorConfiguration.model_validate(config)  # a typo here is a test bug, said early
    r = Replicas(control_plane, ns, config)
    local, cluster = rbac_documents(ns)
    nodes: list[str] = []

    async def setup() -> None:
        async with control_plane.client() as kube:
            await install_crds(kube, crds())
            await apply_documents(kube, local)
            made = await create_nodes(kube, gpu_cluster_spec(4, name_prefix="ha"))
            nodes.extend(n.name for n in made)

    async def grant() -> None:
        async with control_plane.client() as kube:
            r.cluster_rbac = await apply_documents(kube, cluster)

    async def teardown() -> None:
        async with control_plane.client() as kube:
            await delete_nodes(kube, nodes)
            for doc in cluster:
                path = (f"/apis/rbac.authorization.k8s.io/v1/{doc['kind'].lower()}s/"
                        f"{doc['metadata']['name']}")
                try:
                    await kube.transport.request("DELETE", path)
                except NotFound:
                    pass

    try:
        asyncio.run(setup())
        for replica in ("a", "b"):
            r.start_operator(f"operator-{replica}", wait=False)
            r.start_scheduler(f"scheduler-{replica}", wait=False)
        # Leases are allowed (the namespaced Role), the cluster-wide kinds not yet: each
        # service elects a leader, whose caches cannot sync.
        for lease, group in ((OPERATOR_LEASE, r.operators), (SCHEDULER_LEASE, r.schedulers)):
            leader = wait_until(lambda lease=lease: r.holder(lease), 60, interval=0.3,
                                what=f"a holder of Lease {lease}")
            for name, svc in group.items():
                # The leader: 500 once an informer was refused; a standby: 200.
                want = (500, "Forbidden") if name == leader else (200, "")
                r.before_rbac[name] = wait_until(
                    lambda svc=svc, want=want: (got := readyz(svc))[0] == want[0]
                    and want[1] in got[1] and got or Pending(got), 60, interval=0.3,
                    what=f"{name} /readyz answering {want} before RBAC is granted")
        asyncio.run(grant())
        for svc in r.started:
            svc.wait_ready(60)
        yield r
    finally:
        for svc in r.started:
            svc.stop()
        asyncio.run(teardown())


def test_before_rbac_is_granted_each_leader_says_which_cache_it_cannot_fill(
        replicas: Replicas) -> None:
    leaders = {"operator": replicas.holder(OPERATOR_LEASE),
               "scheduler": replicas.holder(SCHEDULER_LEASE)}
    for name, (status, body) in replicas.before_rbac.items():
        if name in leaders.values():
            assert status == 500, body
            assert "[-]informer-sync failed: waiting for" in body, body
            assert "Forbidden" in body and replicas.user(name) in body, body
            assert "[+]leader-election ok" in body and "[+]api-server ok" in body, body
        else:  # a standby has nothing to sync: ready to take over
            assert (status, "[+]informer-sync ok" in body) == (200, True), body
    # Once granted, every replica is ready (the fixture waited for it) and says so.
    for svc in replicas.started:
        status, body = readyz(svc)
        assert status == 200 and body.endswith("readyz check passed\n"), body
        for check in ("api-server", "leader-election", "informer-sync"):
            assert f"[+]{check} ok" in body, body


def test_one_replica_of_each_leads_and_the_standbys_write_nothing(replicas: Replicas) -> None:
    ns = replicas.plane.create_namespace("ha-steady")

    async def body(kube: Any) -> None:
        await kube.create(pcs("steady", ns, [("a", 2), ("b", 2)]))

        async def running() -> object:
            pods = (await kube.list(Pod, ns)).items
            n = sum(p.status.phase == "Running" for p in pods)
            return len(pods) == 4 and n == 4 or Pending(f"{n}/{len(pods)} Running")

        await wait_until_async(running, 60, interval=0.3, what="the 4 pods of steady Running")

    replicas.run(body)
    for lease, group, wrote in ((OPERATOR_LEASE, replicas.operators, "pods"),
                                (SCHEDULER_LEASE, replicas.schedulers, "pods/binding")):
        leader = replicas.holder(lease)
        assert leader in group
        for name, svc in group.items():
            assert svc.metric("phalanx_leader", lease=lease) == (1.0 if name == leader
                                                                 else 0.0), name
            # Successful writes: both replicas may have tried to create the Lease at
            # start-up, and the loser's attempt was refused (409).
            writes = [w for w in replicas.plane.audit_events(replicas.user(name))
                      if w.code < 300]
            if name == leader:
                assert {"leases", wrote} <= {w.resource for w in writes}, writes[:20]
            else:
                assert writes == [], [str(w) for w in writes[:20]]
    # The leaders did what each component does: the operator created the pods (each once:
    # no second attempt answered 409 because its cache lagged), the scheduler bound them.
    op = replicas.plane.audit_events(replicas.user(replicas.holder(OPERATOR_LEASE) or ""))
    sched = replicas.plane.audit_events(replicas.user(replicas.holder(SCHEDULER_LEASE) or ""))
    # (Pods have generated names: the audit log's create has none, so they are counted.)
    creates = [w.code for w in op
               if (w.verb, w.resource, w.namespace) == ("create", "pods", ns)]
    assert creates == [201] * 4
    binds = [w.code for w in sched
             if (w.verb, w.resource, w.namespace) == ("create", "pods/binding", ns)]
    assert binds == [201] * 4


def within_lease_timing(waited: float) -> bool:
    """A standby takes over once the record it last saw renewed is LEASE old, checking
    every RETRY; the leader renewed at most RETRY before it died. Slack for a loaded host."""
    return waited <= LEASE + 2 * RETRY + 3


def test_kill_9_of_the_operator_leader_mid_materialisation_creates_every_pod_once(
        replicas: Replicas) -> None:
    """300 pods in 10 PodGangs; the leader is SIGKILLed once some but not all pods exist,
    and restarted (as the kubelet would restart its container). The standby or the
    restarted replica takes over within the lease timing and finishes the job: every pod
    was created once (one ADDED event and one successful create each, never deleted)."""
    ns = replicas.plane.create_namespace("ha-kill")
    total = 10 * 30
    killed: dict[str, Any] = {}

    async def body(kube: Any) -> tuple[dict[str, list[tuple[str, str]]], list[Pod]]:
        seen: dict[str, list[tuple[str, str]]] = {}  # pod name -> [(event type, uid)]
        start = (await kube.list(Pod, ns)).resource_version

        async def record() -> None:
            async for ev in kube.watch(Pod, ns, resource_version=start):
                seen.setdefault(ev.object.name, []).append((ev.type, ev.object.metadata.uid))

        watcher = asyncio.ensure_future(record())
        try:
            await kube.create(pcs("big", ns, [("a", 20), ("b", 10)], replicas=10, cpu="10m"))
            await wait_until_async(lambda: len(seen) >= total // 5 or Pending(len(seen)), 60,
                                   interval=0.01, what=f"{total // 5} pods of big created")
            leader = await replicas.holder_of(kube, OPERATOR_LEASE) or ""
            replicas.operators[leader].kill()
            killed.update(name=leader, at=time.monotonic(), pods=len(seen))
            replicas.start_operator(leader, wait=False)  # the restarted container
            killed["new"], killed["waited"] = await replicas.wait_for_new_holder(
                kube, OPERATOR_LEASE, leader, killed["at"])

            async def converged() -> object:
                pods = (await kube.list(Pod, ns)).items
                gangs = (await kube.list(PodGang, ns)).items
                running = sum(p.status.phase == "Running" for p in pods)
                phases = sorted({g.status.phase or "" for g in gangs})
                return (running == total and len(gangs) == 10 and phases == ["Running"]
                        and pods) or Pending(f"{running}/{len(pods)} pods Running, "
                                             f"{len(gangs)} gangs {phases}")

            pods = await wait_until_async(converged, 80, interval=0.5,
                                          what=f"all {total} pods of big Running")
        finally:
            watcher.cancel()
        return seen, pods

    seen, pods = replicas.run(body)
    assert 0 < killed["pods"] < total, f"the kill landed after {killed['pods']} pods"
    assert within_lease_timing(killed["waited"]), killed
    assert sorted(seen) == sorted(p.name for p in pods) and len(seen) == total
    added = {n: [uid for t, uid in evs if t == "ADDED"] for n, evs in seen.items()}
    assert all(len(uids) == 1 for uids in added.values()), [
        n for n, u in added.items() if len(u) != 1][:10]
    assert not [n for n, evs in seen.items() if any(t == "DELETED" for t, _ in evs)]
    assert all(p.metadata.uid == added[p.name][0] for p in pods)
    # One pod per index: the names are generated, so a second create for an index would be
    # a second pod (then deleted as excess), not a refused one.
    assert hostnames(pods) == sorted(f"big-{r}-{c}-{k}" for r in range(10)
                                     for c, n in (("a", 20), ("b", 10)) for k in range(n))
    # The API server agrees: every create succeeded (201) except those in flight when
    # their client was killed (504 "context canceled" in the audit log, whether or not the
    # pod got stored: the single ADDED event per pod above says which), and no more pods
    # were stored than the workload has.
    codes = []
    for w in replicas.plane.audit_events():
        if (w.verb, w.resource, w.namespace) == ("create", "pods", ns):
            assert w.user in (replicas.user("operator-a"), replicas.user("operator-b")), w
            codes.append(w.code)
    assert set(codes) <= {201, 504}, sorted(set(codes))
    in_flight = codes.count(504)
    assert codes.count(201) <= total <= codes.count(201) + in_flight
    assert not [w for w in replicas.plane.audit_events()
                if (w.verb, w.resource, w.namespace) == ("delete", "pods", ns)]
    print(f"killed {killed['name']} after {killed['pods']}/{total} pods; {killed['new']} led "
          f"{killed['waited']:.1f}s later; {in_flight} create(s) cut off by the kill")


def test_kill_9_of_the_scheduler_leader_hands_over_within_the_lease_timing(
        replicas: Replicas) -> None:
    """The leader dies; a gang created right after waits, unbound, until the standby (or
    the restarted replica) takes the Lease over and binds it."""
    ns = replicas.plane.create_namespace("ha-sched")
    leader = replicas.holder(SCHEDULER_LEASE) or ""
    replicas.schedulers[leader].kill()
    killed_at = time.monotonic()
    replicas.start_scheduler(leader, wait=False)

    async def body(kube: Any) -> tuple[list[Pod], str, float]:
        await kube.create(pcs("after", ns, [("leader", 1), ("worker", 3)]))
        new, waited = await replicas.wait_for_new_holder(kube, SCHEDULER_LEASE, leader,
                                                         killed_at)

        async def bound() -> object:
            pods = (await kube.list(Pod, ns)).items
            n = sum(bool(p.spec.node_name) for p in pods)
            return len(pods) == 4 and n == 4 and pods or Pending(f"{n}/{len(pods)} bound")

        pods = await wait_until_async(bound, 60, interval=0.3,
                                      what="the 4 pods of after bound by the new leader")
        return pods, new, waited

    pods, new, waited = replicas.run(body)
    print(f"killed {leader}; {new} led {waited:.1f}s later")
    assert within_lease_timing(waited), f"{new} took over after {waited:.1f}s"
    assert replicas.schedulers[new].metric("phalanx_leader", lease=SCHEDULER_LEASE) == 1.0
    binders = {w.user for w in replicas.plane.audit_events()
               if (w.resource, w.namespace) == ("pods/binding", ns)}
    assert binders == {replicas.user(new)} and len(pods) == 4


def test_deleting_podcliquesets_cascades_with_the_garbage_collector(
        replicas: Replicas, controller_manager: Any) -> None:
    """kube-controller-manager's garbage collector takes PodCliques, scaling groups,
    PodGangs and pods; the PodGangs' backend finalizer holds each until the operator (with
    the install's RBAC) removed its scheduler objects: the Workload and PodGroups of a
    default-scheduler PodCliqueSet with gangScheduling."""
    from phalanx.api.grove import PodClique, PodCliqueScalingGroup
    from phalanx.api.workloads import PodGroupV1Alpha2, WorkloadV1Alpha2

    ns = replicas.plane.create_namespace("ha-cascade")
    kinds = (PodCliqueSet, PodClique, PodCliqueScalingGroup, PodGang, Pod, WorkloadV1Alpha2,
             PodGroupV1Alpha2)

    async def counts(kube: Any) -> dict[str, int]:
        return {k.KIND if k is not PodGroupV1Alpha2 else "PodGroup":
                len((await kube.list(k, ns)).items) for k in kinds}

    async def body(kube: Any) -> tuple[dict[str, int], dict[str, int]]:
        group = [{"name": "sg", "cliqueNames": ["leader", "worker"], "replicas": 2,
                  "minAvailable": 1}]
        await kube.create(pcs("gang", ns, [("router", 1), ("leader", 1), ("worker", 2)],
                              groups=group))
        await kube.create(pcs("kube", ns, [("a", 2), ("b", 1)], scheduler="default-scheduler"))

        async def materialised() -> object:
            pods = (await kube.list(Pod, ns)).items
            running = sum(p.status.phase == "Running" for p in pods)
            have = await counts(kube)
            # gang: 7 pods Running (bound); kube: 3 pods (no kube-scheduler here: Pending).
            return (len(pods) == 10 and running == 7 and have["Workload"] == 1
                    and have["PodGroup"] >= 1 and have) or Pending(f"{running}/{len(pods)} "
                                                                   f"Running, {have}")

        before = await wait_until_async(materialised, 60, interval=0.5,
                                        what="gang Running and kube's Workload API objects")
        for name in ("gang", "kube"):
            await kube.delete(PodCliqueSet, name, ns)

        async def collected() -> object:
            have = await counts(kube)
            return not any(have.values()) and have or Pending(have)

        after = await wait_until_async(collected, 60, interval=0.5,
                                       what="every object of both PodCliqueSets deleted")
        return before, after

    before, after = replicas.run(body)
    assert before["PodClique"] == 7 and before["PodCliqueScalingGroup"] == 1, before
    assert before["PodGang"] == 3, before  # gang-0, gang-0-sg-0, kube-0
    assert set(after.values()) == {0}


def test_zz_no_replica_logged_a_traceback(replicas: Replicas) -> None:
    for svc in replicas.started:
        assert svc.tracebacks() == [], f"{svc.name}:\n{svc.log_text()[-6000:]}"
    live = [s for s in replicas.started if s.process.alive]
    codes = {s.name: s.stop(grace=30) for s in live}
    assert set(codes.values()) <= {0}, codes
    for svc in live:
        assert svc.tracebacks() == [], f"{svc.name}:\n{svc.log_text()[-6000:]}"
