"""`phalanx scheduler` against a stock kube-apiserver (no alpha APIs: no Workload API) that
serves none of Grove's, KAI's or Volcano's CRDs: it must get ready and bind plain pods.

It gets a control plane of its own: the shared one has Grove's CRDs installed by other
tests. Before the fix, the gang-wait metric added a PodGang informer that could never sync,
the scheduler waited for it before its first cycle, and /readyz stayed 500 for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from phalanx.api.pod import Pod
from phalanx.envtest import (
    BinariesNotFound,
    ControlPlane,
    ControlPlaneOptions,
    create_nodes,
    find_binaries,
    gpu_cluster_spec,
    start_phalanx_scheduler,
    wait_until_async,
)

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
        log = scheduler.log_text()
        assert "PodGang is not served" in log
        assert "Traceback" not in log
    finally:
        scheduler.stop()
