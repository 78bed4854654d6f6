"""Per-object cost of the hot Pod operations (not a test; run it by hand).

    /work/venv/bin/python tests/api/bench_api.py

Prints the best of several rounds (CPU microseconds per object) for a realistic Grove pod:
model_validate(dict), to_dict(), copy_deep(), and the alternatives copy_deep was chosen over.
"""

from __future__ import annotations

import time
import timeit
from typing import Any

from phalanx.api.core import Pod

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "llm-0-prefill-3",
        "namespace": "inference",
        "uid": "8b7c1c9e-0000-4000-8000-000000000003",
        "resourceVersion": "1234",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {
            "app.kubernetes.io/managed-by": "grove-operator",
            "app.kubernetes.io/part-of": "llm",
            "grove.io/podclique": "llm-0-prefill",
            "grove.io/podgang": "llm-0",
            "grove.io/podcliqueset-replica-index": "0",
            "grove.io/podclique-pod-index": "3",
        },
        "ownerReferences": [
            {
                "apiVersion": "grove.io/v1alpha1",
                "kind": "PodClique",
                "name": "llm-0-prefill",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "schedulerName": "phalanx-scheduler",
        "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}],
        "priorityClassName": "inference-high",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "containers": [
            {
                "name": "prefill",
                "image": "dynamo/vllm-runtime:0.4",
                "args": ["--is-prefill-worker"],
                "env": [
                    {"name": "GROVE_PCS_NAME", "value": "llm"},
                    {"name": "GROVE_PCLQ_NAME", "value": "llm-0-prefill"},
                    {"name": "GROVE_PCLQ_POD_INDEX", "value": "3"},
                ],
                "resources": {
                    "requests": {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": 2},
                    "limits": {"nvidia.com/gpu": 2},
                },
                "ports": [{"name": "http", "containerPort": 8000}],
                "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            }
        ],
    },
    "status": {"phase": "Pending"},
}


def per_object_us(stmt: Any, number: int = 5000, rounds: int = 7) -> float:
    # CPU time of this process: steadier than wall time on a shared machine.
    times = timeit.repeat(stmt, number=number, repeat=rounds, timer=time.process_time)
    return min(times) / number * 1e6


def main() -> None:
    pod = Pod.model_validate(POD)
    cls = type(pod)
    rows = [
        ("Pod.model_validate(dict)", lambda: Pod.model_validate(POD)),
        ("pod.to_dict()", pod.to_dict),
        ("pod.copy_deep()", pod.copy_deep),
        ("  model_copy(deep=True)", lambda: pod.model_copy(deep=True)),
        ("  model_validate(model_dump())", lambda: cls.model_validate(pod.model_dump())),
        ("pod.resource_requests() (cached)", pod.resource_requests),
        (
            "pod.resource_requests() (first call)",
            lambda: (pod.spec.invalidate_requests(), pod.resource_requests()),
        ),
    ]
    for label, fn in rows:
        print(f"{label:40s} {per_object_us(fn):8.2f} us")


if __name__ == "__main__":
    main()
