"""The gate-free path (issue 28) against the real kube-apiserver: `phalanx operator` with
`podSchedulingGate: false` on its phalanx-scheduler profile and `phalanx scheduler`, as
subprocesses. Pods are created without Grove's gate, and still none is bound before its
PodGang is Initialized and BackendSynced.

The order is read from one watch per kind started before the PodCliqueSet exists: the
resourceVersions of a single etcd are one global sequence (the stand-in API server here has
one), so a pod's bind must come after the write that made its PodGang ready.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from phalanx.api import labels as L
from phalanx.api.crds import crds
from phalanx.api.grove import PodGang
from phalanx.api.pod import Pod
from phalanx.api.podgang import PODGANG_INITIALIZED
from phalanx.envtest import (
    create_nodes,
    delete_nodes,
    gpu_cluster_spec,
    install_crds,
    operator_config,
    start_operator,
    start_phalanx_scheduler,
    wait_until_async,
)
from phalanx.envtest.ports import free_port
from phalanx.operator.conditions import BACKEND_SYNCED
from tests.services.real_stack import SCENARIO_TIMEOUT, STALL, Stack, clear_namespace, small_pcs

GATE = L.GATE_PODGANG_PENDING_CREATION
# Inside the scenario's backstop, so the wait reports what it saw first.
WAIT_TIMEOUT = SCENARIO_TIMEOUT - 10.0


@pytest.fixture(scope="module")
def stack(control_plane: Any) -> Iterator[Stack]:
    system_ns = control_plane.create_namespace("gate-free-system")
    s = Stack(control_plane, system_ns)
    nodes: list[str] = []

    async def setup() -> None:
        async with control_plane.client() as kube:
            await install_crds(kube, crds())
            made = await create_nodes(kube, gpu_cluster_spec(
                4, nodes_per_rack=2, racks_per_block=2, name_prefix="gatefree"))
            nodes.extend(n.name for n in made)

    async def teardown() -> None:
        async with control_plane.client() as kube:
            await delete_nodes(kube, nodes)

    try:
        asyncio.run(setup())
        config = operator_config(
            probe_port=free_port(), metrics_port=free_port(), webhook_port=free_port(),
            lease_namespace=system_ns,
            profile_configs={"phalanx-scheduler": {"podSchedulingGate": False}})
        s.operator = start_operator(control_plane, config=config, namespace=system_ns)
        s.scheduler = start_phalanx_scheduler(control_plane)
        yield s
    finally:
        for service in (s.operator, s.scheduler):
            if service is not None:
                service.stop()
        asyncio.run(teardown())


def _ready(gang: PodGang) -> bool:
    return gang.is_condition_true(PODGANG_INITIALIZED) and gang.is_condition_true(BACKEND_SYNCED)


def test_no_pod_is_bound_before_its_podgang_is_ready_without_gates(stack: Stack) -> None:
    ns = stack.plane.create_namespace("gate-free")
    # Two cliques, 1 GPU each: 4 pods in one PodGang on 4 nodes of 8 GPUs.
    pcs = small_pcs("gatefree", ns, [("a", 1), ("b", 3)], gpus=1)

    async def body(kube: Any) -> None:
        rv = (await kube.list(Pod, ns)).resource_version
        created_gated: dict[str, bool] = {}
        bound_at: dict[str, int] = {}
        gang_of: dict[str, str] = {}
        ready_at: dict[str, int] = {}

        async def follow_pods() -> None:
            async for ev in kube.watch(Pod, ns, resource_version=rv):
                pod = ev.object
                if ev.type == "ADDED" and pod.name not in created_gated:
                    created_gated[pod.name] = pod.has_gate(GATE)
                gang_of[pod.name] = pod.metadata.labels.get(L.LABEL_PODGANG, "")
                if pod.spec.node_name and pod.name not in bound_at:
                    bound_at[pod.name] = int(pod.metadata.resource_version)

        async def follow_gangs() -> None:
            async for ev in kube.watch(PodGang, ns, resource_version=rv):
                if _ready(ev.object) and ev.object.name not in ready_at:
                    ready_at[ev.object.name] = int(ev.object.metadata.resource_version)

        watchers = [asyncio.create_task(follow_pods()), asyncio.create_task(follow_gangs())]
        try:
            await kube.create(pcs)
            await wait_until_async(
                lambda: (len(bound_at), len(ready_at)) if len(bound_at) == 4 else None,
                timeout=WAIT_TIMEOUT, what="all 4 pods bound", stall=STALL)
        finally:
            for t in watchers:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t
        assert created_gated == {p: False for p in bound_at}, "pods were created with the gate"
        for pod, at in bound_at.items():
            gang = gang_of[pod]
            assert gang in ready_at, f"{pod} bound but {gang} never seen ready"
            assert at > ready_at[gang], f"{pod} bound at rv {at}, {gang} ready at {ready_at[gang]}"
        await clear_namespace(kube, ns)

    stack.run(body)
