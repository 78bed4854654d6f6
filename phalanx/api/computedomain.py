"""resource.nvidia.com/v1beta1 ComputeDomain, NVIDIA's k8s-dra-driver-gpu kind (the shape of
its CRD, api/nvidia.com/resource/v1beta1/computedomain.go): a multi-node NVLink (IMEX) domain.
Its driver creates the ResourceClaimTemplate `spec.channel.resourceClaimTemplate.name` whose
claims give pods an IMEX channel. Phalanx's operator creates one per PodCliqueSet replica and
MNNVL group (Grove's auto-MNNVL, phalanx/operator/computedomain.py); the driver owns status.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from . import registry as _registry
from .base import KubeModel, Resource


class ComputeDomainResourceClaimTemplate(KubeModel):
    name: str


class ComputeDomainChannelSpec(KubeModel):
    resource_claim_template: ComputeDomainResourceClaimTemplate
    allocation_mode: Literal["Single", "All"] | None = None


class ComputeDomainSpec(KubeModel):
    num_nodes: int = 0
    channel: ComputeDomainChannelSpec | None = None


class ComputeDomain(Resource):
    API_VERSION = "resource.nvidia.com/v1beta1"
    KIND = "ComputeDomain"
    PLURAL = "computedomains"

    spec: ComputeDomainSpec = Field(default_factory=ComputeDomainSpec)
    status: dict[str, Any] | None = None  # the driver's (status, nodes); not read by Phalanx


_registry.register(ComputeDomain)
