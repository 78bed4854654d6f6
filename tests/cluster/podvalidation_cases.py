"""Helpers for the pod validation tests (tests/cluster/test_pod_validation_*.py): pods as the
JSON a user sends, and the embedded cluster's verdict on them."""

from __future__ import annotations

import copy
from typing import Any

from phalanx.api.pod import Pod, PodSpec
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.objects import from_dict
from phalanx.cluster.podvalidation import FieldErrors, pod_spec_errors

CONTAINER = {"name": "ctr", "image": "image", "imagePullPolicy": "IfNotPresent"}


def pod_json(spec: dict[str, Any] | None = None, *, name: str = "123",
             labels: dict[str, str] | None = None,
             annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod with one container plus `spec` (which may replace the containers)."""
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [dict(CONTAINER)], **copy.deepcopy(spec or {})}}


def create_verdict(pod: dict[str, Any]) -> Invalid | None:
    """What creating `pod` on a fresh MemoryCluster answers: None (created) or the Invalid.
    The model load comes first, as a real server decodes before it validates."""
    try:
        obj = from_dict(Pod, pod, pod["metadata"]["name"])
    except Invalid as err:
        return err

    async def create() -> Invalid | None:
        try:
            await MemoryCluster().create(obj, returning=False)
        except Invalid as err:
            return err
        return None

    return run_virtual(create)


def spec_errors(spec: dict[str, Any], path: str = "field") -> FieldErrors:
    """pod_spec_errors of a spec fragment (one container added unless given), at `path`."""
    model = PodSpec.model_validate({"containers": [dict(CONTAINER)], **copy.deepcopy(spec)})
    return pod_spec_errors(model, path)


def fields(errs: FieldErrors) -> list[str]:
    return [f for f, _ in errs]


def label_term(key: str, op: str, *values: str) -> dict[str, Any]:
    """One matchExpressions / NodeSelectorRequirement entry."""
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out
