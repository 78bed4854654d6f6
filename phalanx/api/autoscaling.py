"""autoscaling/v2 HorizontalPodAutoscaler: the parts Grove's operator writes (one per
autoscaled PodClique or scaling group; see phalanx.operator.hpa). Metrics and behavior stay
as written (the API server validates them); status is the HPA controller's, kept opaque."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource, _is_empty
from .quantity import Quantity
from .scheduling import LabelSelector

Opaque = dict[str, Any]


class CrossVersionObjectReference(KubeModel):
    kind: str
    name: str
    api_version: str | None = None


# autoscaling/v2 MetricSpec, field for field: a metric a user writes (a PodClique's
# `autoScalingConfig.metrics`, a scaling group's `scaleConfig.metrics`) is read through these
# models first, so an unknown or mistyped field is refused by name
# (phalanx.cluster.hpavalidation), not copied into an HPA that ignores it.


class MetricTarget(KubeModel):
    type: str = ""
    value: Quantity | None = None
    average_value: Quantity | None = None
    average_utilization: int | None = None


class MetricIdentifier(KubeModel):
    name: str = ""
    selector: LabelSelector | None = None


class MetricObjectReference(KubeModel):
    """CrossVersionObjectReference as a metric names it (missing fields read as empty, so
    validation says which is required)."""

    kind: str = ""
    name: str = ""
    api_version: str | None = None


# Missing members read as empty, as the API server decodes them, and are then reported by
# validation ("Required value"), not by the schema.
class ObjectMetricSource(KubeModel):
    described_object: MetricObjectReference = Field(default_factory=MetricObjectReference)
    target: MetricTarget = Field(default_factory=MetricTarget)
    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)


class PodsMetricSource(KubeModel):
    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)
    target: MetricTarget = Field(default_factory=MetricTarget)


class ResourceMetricSource(KubeModel):
    name: str = ""
    target: MetricTarget = Field(default_factory=MetricTarget)


class ContainerResourceMetricSource(KubeModel):
    name: str = ""
    target: MetricTarget = Field(default_factory=MetricTarget)
    container: str = ""


class ExternalMetricSource(KubeModel):
    metric: MetricIdentifier = Field(default_factory=MetricIdentifier)
    target: MetricTarget = Field(default_factory=MetricTarget)


class MetricSpec(KubeModel):
    type: str = ""
    object: ObjectMetricSource | None = None
    pods: PodsMetricSource | None = None
    resource: ResourceMetricSource | None = None
    container_resource: ContainerResourceMetricSource | None = None
    external: ExternalMetricSource | None = None


class HorizontalPodAutoscalerSpec(KubeModel):
    scale_target_ref: CrossVersionObjectReference
    min_replicas: int | None = None
    max_replicas: int
    metrics: list[Opaque] | None = None
    behavior: Opaque | None = None


class HorizontalPodAutoscaler(Resource):
    API_VERSION = "autoscaling/v2"
    KIND = "HorizontalPodAutoscaler"
    PLURAL = "horizontalpodautoscalers"
    SHORT_NAMES = ("hpa",)
    NAMESPACED = True
    HAS_STATUS = True

    spec: HorizontalPodAutoscalerSpec
    status: dict[str, Any] = Field(default_factory=dict, exclude_if=_is_empty)


_registry.register(HorizontalPodAutoscaler)
