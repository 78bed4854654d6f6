"""autoscaling/v2 HorizontalPodAutoscaler: the parts Grove's operator writes (one per
autoscaled PodClique or scaling group; see phalanx.operator.hpa). Metrics and behavior stay
as written (the API server validates them); status is the HPA controller's, kept opaque."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource, _is_empty

Opaque = dict[str, Any]


class CrossVersionObjectReference(KubeModel):
    kind: str
    name: str
    api_version: str | None = None


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
