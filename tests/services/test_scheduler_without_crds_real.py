"""`phalanx scheduler` against a stock kube-apiserver (no alpha APIs: no Workload API) that
serves none of Grove's, KAI's or Volcano's CRDs: it must get ready and bind plain pods;
and once Phalanx's CRDs are installed, with the scheduler running, read PodGangs and bind
their pods (no restart).

It gets a control plane of its own: the shared one has Grove's CRDs installed by other
tests. Before, the gang-wait metric added a PodGang informer that could never sync, the
scheduler waited for it before its first cycle, and /readyz stayed 500 for ever; and a
PodGang kind not served at start was never read (its pods waited as GangNotFound).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from phalanx.api.crds import crds
from phalanx.api.pod import Pod
from phalanx.cluster.deferred_informers import RECHECK_SECONDS
from phalanx.envtest import (
    BinariesNotFound,
    ControlPlane,
    ControlPlaneOptions,
    create_nodes,
    find_binaries,
    gpu_cluster_spec,
    install_crds,
    start_phalanx_scheduler,
    wait_until_async,
)
from tests.scheduler.gang.builders import members, podgang

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(150)]

READY_TIMEOUT = 60.0  # the scheduler's start-up: imports, informer sync
BIND_TIMEOUT = 30.0  # one pod on one empty node


@pytest.fixture
def bare_plane() -> Iterator[ControlPlane]:
    try:
        binaries = find_binaries()
    except BinariesNotFound as err:
        pytest.skip(str(err))
    # A stock kube-apiserver: no alpha feature gates or APIs (the Workload API is off).
    plane = ControlPlane.start(binaries=binaries,
                               options=ControlPlaneOptions(feature_gates={}, runtime_config={}))
    try:
        yield plane
    finally:
        plane.stop()


def test_the_scheduler_binds_plain_pods_on_a_server_without_gang_crds(
        bare_plane: ControlPlane) -> None:
    ns = bare_plane.create_namespace("no-crds")
    pod = Pod.model_validate({
        "metadata": {"name": "plain", "namespace": ns},
        "spec": {"schedulerName": "phalanx-scheduler", "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}})

    async def setup() -> None:
        async with bare_plane.client() as kube:
            await create_nodes(kube, gpu_cluster_spec(1))
            await kube.create(pod)

    asyncio.run(setup())
    scheduler = start_phalanx_scheduler(bare_plane, wait=True, timeout=READY_TIMEOUT)
    try:
        async def bound() -> None:
            async with bare_plane.client() as kube:
                async def node_name() -> str:
                    return (await kube.get(Pod, "plain", ns)).spec.node_name or ""

                await wait_until_async(node_name, BIND_TIMEOUT, what=f"pod {ns}/plain bound")

        asyncio.run(bound())

        async def gang_bound() -> None:
            async with bare_plane.client() as kube:
                await install_crds(kube, crds())
                await kube.create(podgang("g", {"w": 2}, namespace=ns))
                for member in members("g", "w", 2, gpu=1, cpu="100m"):
                    member.metadata.namespace = ns
                    await kube.create(member)

                async def both() -> bool:
                    pods = [await kube.get(Pod, f"w-{i}", ns) for i in range(2)]
                    return all(p.spec.node_name for p in pods)

                await wait_until_async(both, RECHECK_SECONDS + BIND_TIMEOUT,
                                       what=f"the members of PodGang {ns}/g bound")

        asyncio.run(gang_bound())
        log = scheduler.log_text()
        assert "PodGang is not served" in log
        assert "PodGang is served now" in log
        assert "Traceback" not in log
    finally:
        scheduler.stop()
