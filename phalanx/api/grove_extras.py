"""Parts of Grove's API kept apart from grove.py: resource sharing and update progress.

- Resource sharing (`resourceSharing` at PodCliqueSet, scaling-group and clique level) and
  `resourceClaimTemplates`: DRA ResourceClaims shared between pods (phalanx/operator/
  resourceclaim.py creates them and injects the references).
- Update progress (`status.updateProgress` of PodCliqueSet, PodClique, scaling group): what
  Grove's rolling update writes. Phalanx reads it from objects Grove wrote (so they load) and
  writes none.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict

from .base import KubeModel
from .crdtypes import Int32, crd

ResourceSharingScope = Literal["AllReplicas", "PerReplica"]


class ResourceSharingSpec(KubeModel):
    """A clique's reference to a ResourceClaimTemplate (its own or another namespace's)."""

    name: str
    namespace: str | None = None
    scope: ResourceSharingScope


class PCSResourceSharingFilter(KubeModel):
    child_clique_names: list[str] | None = None
    child_scaling_group_names: list[str] | None = None


class PCSResourceSharingSpec(ResourceSharingSpec):
    filter: PCSResourceSharingFilter | None = None


class PCSGResourceSharingFilter(KubeModel):
    child_clique_names: list[str] | None = None


class PCSGResourceSharingSpec(ResourceSharingSpec):
    filter: PCSGResourceSharingFilter | None = None


class ResourceClaimTemplateConfig(KubeModel):
    """A named resource.k8s.io ResourceClaimTemplateSpec (kept as written)."""

    name: str
    template_spec: dict[str, Any]


# --- update progress (written by Grove's rolling update; read, not written, by Phalanx) ------


class PodCliqueSetReplicaUpdateProgress(KubeModel):
    replica_index: Int32
    update_started_at: datetime | None = None
    update_ended_at: datetime | None = None


class PodCliqueSetUpdateProgress(KubeModel):
    update_started_at: datetime | None = None
    update_ended_at: datetime | None = None
    updated_pod_cliques_count: Int32 = 0
    total_pod_cliques_count: Int32 = 0
    updated_pod_clique_scaling_groups_count: Int32 = 0
    total_pod_clique_scaling_groups_count: Int32 = 0
    currently_updating: list[PodCliqueSetReplicaUpdateProgress] | None = None


class PodsSelectedToUpdate(KubeModel):
    current: str
    completed: list[str] | None = None


class PodCliqueUpdateProgress(KubeModel):
    update_started_at: datetime | None = None
    update_ended_at: datetime | None = None
    pod_clique_set_generation_hash: str
    pod_template_hash: str
    ready_pods_selected_to_update: PodsSelectedToUpdate | None = None


class PodCliqueScalingGroupReplicaUpdateProgress(KubeModel):
    current: Int32
    completed: list[Int32] | None = None


class PodCliqueScalingGroupUpdateProgress(KubeModel):
    model_config = ConfigDict(json_schema_extra=crd(
        required=["podCliqueSetGenerationHash", "updateStartedAt"]))

    update_started_at: datetime | None = None
    update_ended_at: datetime | None = None
    pod_clique_set_generation_hash: str
    updated_pod_cliques_count: Int32 = 0
    total_pod_cliques_count: Int32 = 0
    ready_replica_indices_selected_to_update: PodCliqueScalingGroupReplicaUpdateProgress | None \
        = None
