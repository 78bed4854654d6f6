"""Test-only kinds: a namespaced kind with spec+status, a cluster-scoped kind, a kind
without spec, and the Pod/Event used by the cluster (phalanx.api.core when it exists,
otherwise a minimal stand-in of the same shape)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from phalanx.api.base import Condition, KubeModel, ObjectMeta, Resource


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


try:  # the real core kinds, once phalanx.api.core lands
    from phalanx.api.core import Event, Pod  # type: ignore[attr-defined]
    REAL_CORE = True
except ImportError:
    REAL_CORE = False

    class PodSchedulingGate(KubeModel):
        name: str

    class Container(KubeModel):
        name: str
        image: str = ""

    class PodSpec(KubeModel):
        containers: list[Container] = Field(default_factory=list)
        node_name: str | None = None
        scheduler_name: str | None = None
        scheduling_gates: list[PodSchedulingGate] = Field(default_factory=list)
        node_selector: dict[str, str] = Field(default_factory=dict)
        tolerations: list[dict[str, Any]] = Field(default_factory=list)
        priority: int | None = None

    class PodCondition(KubeModel):
        type: str
        status: str
        reason: str | None = None
        message: str | None = None
        last_transition_time: datetime | None = None

    class PodStatus(KubeModel):
        phase: str | None = None
        conditions: list[PodCondition] = Field(default_factory=list)

    class Pod(Resource):  # type: ignore[no-redef]
        API_VERSION = "v1"
        KIND = "Pod"
        PLURAL = "pods"
        HAS_STATUS = True

        spec: PodSpec = Field(default_factory=PodSpec)
        status: PodStatus = Field(default_factory=PodStatus)

    class ObjectReference(KubeModel):
        api_version: str | None = None
        kind: str | None = None
        name: str | None = None
        namespace: str | None = None
        uid: str | None = None
        resource_version: str | None = None
        field_path: str | None = None

    class EventSource(KubeModel):
        component: str | None = None
        host: str | None = None

    class Event(Resource):  # type: ignore[no-redef]
        API_VERSION = "v1"
        KIND = "Event"
        PLURAL = "events"

        involved_object: ObjectReference = Field(default_factory=ObjectReference)
        reason: str | None = None
        message: str | None = None
        source: EventSource | None = None
        first_timestamp: datetime | None = None
        last_timestamp: datetime | None = None
        count: int | None = None
        type: str | None = None
        reporting_component: str | None = None
        reporting_instance: str | None = None


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
