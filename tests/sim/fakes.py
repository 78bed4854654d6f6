"""Tiny stand-ins for the operator, scheduler and kubelet, to test the run machinery alone.

MiniOperator: one PodGang per PodCliqueSet replica holding every clique's pods (no scaling
groups), pods created gated, gates lifted once the gang is Initialized. MiniScheduler: binds
a whole gang first-fit by GPUs (in one domain of a required pack key) or nothing, and evicts
nothing. MiniKubelet: bound pods run after a delay.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from phalanx.api import labels
from phalanx.api.base import ObjectMeta, set_condition
from phalanx.api.core import Node, Pod
from phalanx.api.grove import PodCliqueSet
from phalanx.api.pod import PodSchedulingGate
from phalanx.api.podgang import (
    NamespacedName, PodGang, PodGangGroup, PodGangPackConstraint, PodGangSpec,
    PodGangTopologyConstraint,
)
from phalanx.cluster.client import Client, Conflict, NotFound
from phalanx.sim.runner import Components, Simulation


class _Loop:
    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self.tick()
            await asyncio.sleep(1.0)

    async def tick(self) -> None:
        raise NotImplementedError


class MiniOperator(_Loop):
    def __init__(self, client: Client, sim: Simulation) -> None:
        super().__init__()
        self.client, self.levels = client, {t.domain: t.key for t in sim.cluster_spec.spec.topology}
        self.done: set[str] = set()

    async def tick(self) -> None:
        for pcs in (await self.client.list(PodCliqueSet)).items:
            for i in range(pcs.spec.replicas):
                name = f"{pcs.name}-{i}"
                if name not in self.done:
                    self.done.add(name)
                    await self._make(pcs, name)

    async def _make(self, pcs: PodCliqueSet, name: str) -> None:
        tmpl = pcs.spec.template
        domain = tmpl.topology_constraint.required_domain if tmpl.topology_constraint else None
        tc = (PodGangTopologyConstraint(pack_constraint=PodGangPackConstraint(
            required=self.levels[domain])) if domain else None)
        groups, pods = [], []
        for clique in tmpl.cliques:
            refs = []
            for j in range(clique.spec.replicas):
                pod_name = f"{name}-{clique.name}-{j}"
                spec = clique.spec.pod_spec.model_copy(deep=True)
                spec.scheduling_gates = [PodSchedulingGate(name=labels.GATE_PODGANG_PENDING_CREATION)]
                pods.append(Pod(metadata=ObjectMeta(name=pod_name, labels={
                    labels.LABEL_PODGANG: name, labels.LABEL_PODCLIQUE: f"{name}-{clique.name}",
                    labels.LABEL_PART_OF: pcs.name}), spec=spec))
                refs.append(NamespacedName(namespace="default", name=pod_name))
            groups.append(PodGangGroup(name=clique.name, min_replicas=clique.spec.replicas,
                                       pod_references=refs))
        pg = await self.client.create(PodGang(
            metadata=ObjectMeta(name=name, labels={labels.LABEL_PART_OF: pcs.name}),
            spec=PodGangSpec(pod_groups=groups, topology_constraint=tc,
                             priority_class_name=tmpl.priority_class_name)))
        for pod in pods:
            await self.client.create(pod)
        set_condition(pg.status.conditions, "Initialized", True, "Ready")
        await self.client.update_status(pg)
        for pod in pods:
            live = await self.client.get(Pod, pod.name, "default")
            live.spec.scheduling_gates = []
            await self.client.update(live)


class MiniScheduler(_Loop):
    def __init__(self, client: Client, sim: Simulation) -> None:
        super().__init__()
        self.client = client

    def is_idle(self) -> bool:
        return True

    def diagnosis(self, key: str) -> Any:
        return None

    async def tick(self) -> None:
        pods = (await self.client.list(Pod)).items
        if all(p.spec.node_name or p.is_gated for p in pods):
            return
        nodes = (await self.client.list(Node)).items
        free = {n.name: n.allocatable_resources().get("nvidia.com/gpu", 0.0) for n in nodes
                if n.is_ready}
        for p in pods:
            if p.spec.node_name and not p.is_terminal and p.spec.node_name in free:
                free[p.spec.node_name] -= p.resource_requests().get("nvidia.com/gpu", 0.0)
        by_gang: dict[str, list[Pod]] = {}
        for p in pods:
            by_gang.setdefault(p.metadata.labels.get(labels.LABEL_PODGANG, ""), []).append(p)
        for pg in (await self.client.list(PodGang)).items:
            members = by_gang.get(pg.name, [])
            waiting = [p for p in members if not p.spec.node_name and not p.is_gated]
            if not waiting or len(members) < pg.min_member():
                continue
            key = (pg.spec.topology_constraint.pack_constraint.required
                   if pg.spec.topology_constraint and pg.spec.topology_constraint.pack_constraint
                   else None)
            domains: dict[str, list[Node]] = {}
            for n in nodes:
                domains.setdefault(n.metadata.labels.get(key, "") if key else "", []).append(n)
            for members_nodes in domains.values():
                plan, left = {}, {n.name: free.get(n.name, 0.0) for n in members_nodes}
                for p in waiting:
                    need = p.resource_requests().get("nvidia.com/gpu", 0.0)
                    spot = next((n for n, g in left.items() if g >= need), None)
                    if spot is None:
                        break
                    plan[p.name] = spot
                    left[spot] -= need
                if len(plan) == len(waiting):
                    for pod_name, node in plan.items():
                        await self.client.bind(pod_name, "default", node)
                        free[node] -= 8
                    break


class MiniKubelet(_Loop):
    def __init__(self, client: Client, sim: Simulation) -> None:
        super().__init__()
        self.client = client
        self.delay = sim.cluster_spec.spec.kubelet.start_delay_seconds
        self.seen: dict[str, float] = {}

    async def tick(self) -> None:
        now = asyncio.get_running_loop().time()
        for p in (await self.client.list(Pod)).items:
            if not p.spec.node_name or p.status.phase != "Pending":
                continue
            since = self.seen.setdefault(p.key, now)
            if now - since >= self.delay:
                p.status.phase = "Running"
                p.set_condition("Ready", True, "Started")
                with contextlib.suppress(Conflict, NotFound):
                    await self.client.update_status(p)


def mini_components() -> Components:
    return Components(operator=MiniOperator, scheduler=MiniScheduler, kubelet=MiniKubelet)
