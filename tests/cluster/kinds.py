"""Test-only kinds (a namespaced kind with spec+status, a cluster-scoped kind, a kind
without spec), plus the real core Pod and Event for the pod rules and the recorder."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from phalanx.api.base import Condition, KubeModel, ObjectMeta, Resource
from phalanx.api.core import Event, Pod

__all__ = ["Event", "Gadget", "Note", "Pod", "PodTemplate", "Widget", "make_pod", "widget"]


class WidgetSpec(KubeModel):
    replicas: int = 1
    image: str = ""
    node_name: str | None = None


class WidgetStatus(KubeModel):
    ready: int = 0
    phase: str = ""
    conditions: list[Condition] = Field(default_factory=list)


class Widget(Resource):
    """Namespaced, with spec and a status subresource."""

    API_VERSION = "test.phalanx.dev/v1"
    KIND = "Widget"
    PLURAL = "widgets"
    HAS_STATUS = True

    spec: WidgetSpec = Field(default_factory=WidgetSpec)
    status: WidgetStatus = Field(default_factory=WidgetStatus)


class GadgetSpec(KubeModel):
    size: int = 0


class Gadget(Resource):
    """Cluster-scoped, spec only (status, if any, is written with the object)."""

    API_VERSION = "test.phalanx.dev/v1"
    KIND = "Gadget"
    PLURAL = "gadgets"
    NAMESPACED = False

    spec: GadgetSpec = Field(default_factory=GadgetSpec)


class Note(Resource):
    """Namespaced, no spec: any non-metadata change bumps the generation."""

    API_VERSION = "test.phalanx.dev/v1"
    KIND = "Note"
    PLURAL = "notes"

    data: dict[str, str] = Field(default_factory=dict)


def widget(name: str, ns: str | None = "default", **spec: Any) -> Widget:
    return Widget(metadata=ObjectMeta(name=name, namespace=ns), spec=WidgetSpec(**spec))


def make_pod(name: str, ns: str = "default", *, gates: tuple[str, ...] = (),
             node: str | None = None, labels: dict[str, str] | None = None,
             scheduler: str | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if node:
        spec["nodeName"] = node
    if scheduler:
        spec["schedulerName"] = scheduler
    return Pod.model_validate({
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": spec,
    })


class PodTemplate(Resource):
    """core/v1 PodTemplate, modelled loosely: the one built-in kind the real test server
    serves without a watch cache (tests/conftest.py), so etcd itself answers its watches."""

    API_VERSION = "v1"
    KIND = "PodTemplate"
    PLURAL = "podtemplates"

    template: dict[str, Any] = Field(default_factory=dict)
