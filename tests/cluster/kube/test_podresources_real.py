"""MemoryCluster's pod resource validation agrees with a real kube-apiserver (issue 15 item 4).

Each case is created on the real server (dry run) and on a MemoryCluster: both must accept
it, or both refuse it with the API server's wording, naming the field the server names.
Runs on the session's real control plane (tests/conftest.py), skipped without binaries.
"""

from __future__ import annotations

import asyncio
from typing import Any

from phalanx.api.pod import Pod
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster

GPU = "nvidia.com/gpu"
CASES: list[tuple[str, dict, str | None]] = [
    # (name, container resources, the API server's words when it refuses; None = accepted)
    ("gpu-request-only", {"requests": {"cpu": "1", GPU: "8"}},
     "Limit must be set for non overcommitable resources"),
    ("gpu-limit-only", {"limits": {GPU: "8"}}, None),
    ("gpu-equal", {"requests": {GPU: "8"}, "limits": {GPU: "8"}}, None),
    ("gpu-below-limit", {"requests": {GPU: "4"}, "limits": {GPU: "8"}},
     f"must be equal to {GPU} limit of 8"),
    ("gpu-fraction", {"limits": {GPU: "500m"}}, "must be an integer"),
    ("cpu-overcommit", {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}, None),
    ("cpu-above-limit", {"requests": {"cpu": "4"}, "limits": {"cpu": "2"}},
     "must be less than or equal to cpu limit of 2"),
    ("memory-negative", {"requests": {"memory": "-1Gi"}}, "must be greater than or equal to 0"),
    ("hugepages-no-limit", {"requests": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}},
     "Limit must be set for non overcommitable resources"),
    ("hugepages-ok", {"requests": {"memory": "1Gi", "hugepages-2Mi": "4Mi"},
                      "limits": {"hugepages-2Mi": "4Mi"}}, None),
    ("hugepages-alone", {"limits": {"hugepages-2Mi": "4Mi"}}, "HugePages require cpu or memory"),
    ("hugepages-not-a-multiple", {"limits": {"memory": "1Gi", "hugepages-2Mi": "3Mi"}},
     "is not positive integer multiple of hugepages-2Mi"),
    ("unknown-unprefixed", {"requests": {"gpu": "1"}}, "must be a standard resource"),
]


def _pod(name: str, resources: dict, ns: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}}


def test_memory_cluster_refuses_what_the_api_server_refuses(control_plane: Any,
                                                            kube_namespace: str) -> None:
    async def real_verdicts() -> dict[str, Invalid | None]:
        out: dict[str, Invalid | None] = {}
        async with control_plane.client() as kube:
            for name, resources, _ in CASES:
                try:
                    await asyncio.wait_for(kube.transport.request(
                        "POST", f"/api/v1/namespaces/{kube_namespace}/pods",
                        query=[("dryRun", "All")],
                        body=_pod(name, resources, kube_namespace)), 30)
                    out[name] = None
                except Invalid as err:
                    out[name] = err
        return out

    async def our_verdicts() -> dict[str, Invalid | None]:
        cluster = MemoryCluster()
        out: dict[str, Invalid | None] = {}
        for name, resources, _ in CASES:
            try:
                await cluster.create(Pod.model_validate(_pod(name, resources)))
                out[name] = None
            except Invalid as err:
                out[name] = err
        return out

    real = asyncio.run(real_verdicts())
    ours = run_virtual(our_verdicts)
    for name, _, words in CASES:
        got, mine = real[name], ours[name]
        if words is None:
            assert got is None, f"{name}: the API server refused it: {got}"
            assert mine is None, f"{name}: MemoryCluster refuses what the API server " \
                                 f"accepts: {mine}"
            continue
        assert got is not None, f"{name}: the API server accepted it"
        assert words in got.message, f"{name}: the API server said {got.message}"
        assert mine is not None, f"{name}: MemoryCluster accepts what the API server refuses " \
                                 f"({got.message})"
        assert words in mine.message, (name, mine.message)
        assert f"{got.field}: " in mine.message, (name, got.field, mine.message)
