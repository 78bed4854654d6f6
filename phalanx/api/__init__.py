"""Typed Kubernetes resources: core objects, grove.io, scheduler CRs, OperatorConfiguration.

    from phalanx.api import Pod, PodCliqueSet, load_yaml, dump_yaml
    pcs, = load_yaml(text)               # ManifestError names file/document/object/field
    pod.resource_requests()              # {"cpu": 0.5, "memory": 1073741824.0}

Construct in Python with snake_case, load with `Model.model_validate(dict)` or
`registry.from_dict(dict)`, dump with `obj.to_dict()` (camelCase, empty fields left out).
"""

from . import labels, registry
from .autoscaling import HorizontalPodAutoscaler
from .rbac import Role, RoleBinding, Secret, ServiceAccount
from .base import (
    Condition,
    KubeModel,
    ObjectMeta,
    OwnerReference,
    Resource,
    get_condition,
    set_condition,
    set_status_condition,
)
from .config import (
    KNOWN_SCHEDULER_NAMES,
    ConfigError,
    OperatorConfiguration,
    SchedulerConfiguration,
    SchedulerProfile,
    default_operator_config,
    load_operator_config,
    register_scheduler_name,
    validate_operator_config,
)
from .core import (
    Affinity,
    ConfigMap,
    Container,
    EnvVar,
    Event,
    Lease,
    Namespace,
    Node,
    NodeAffinity,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectReference,
    Pod,
    PodCondition,
    PodSpec,
    PodStatus,
    PriorityClass,
    ResourceRequirements,
    Service,
    Taint,
    Toleration,
    WorkloadReference,
)
from .duration import format_duration, parse_duration
from .errors import FieldError, ManifestError
from .grove import (
    ClusterTopology,
    ClusterTopologyBinding,
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueSpec,
    PodCliqueTemplateSpec,
    TopologyConstraint,
    TopologyLevel,
    default_podcliqueset,
)
from .loader import dump_yaml, load_file, load_path, load_yaml
from .podgang import NamespacedName, PodGang, PodGangGroup, PodGangSpec, PodGangStatus
from .quantity import format_quantity, format_resources, parse_quantity, parse_resources
from .registry import UnknownKind, from_dict
from .storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from .resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from .storage_csi import CSIDriver, CSINode, VolumeAttachment
from .runtimeclass import RuntimeClass
from .computedomain import ComputeDomain
from .scheduling import (
    GANG_INCOMPLETE,
    CoschedulingPodGroup,
    KaiPodGroup,
    VolcanoPodGroup,
    Workload,
)

__all__ = [
    "ComputeDomain",
    "GANG_INCOMPLETE",
    "KNOWN_SCHEDULER_NAMES",
    "Affinity",
    "ClusterTopology",
    "ClusterTopologyBinding",
    "Condition",
    "ConfigError",
    "CSIDriver",
    "DeviceClass",
    "CSINode",
    "ConfigMap",
    "Container",
    "CoschedulingPodGroup",
    "EnvVar",
    "Event",
    "FieldError",
    "KaiPodGroup",
    "KubeModel",
    "Lease",
    "ManifestError",
    "NamespacedName",
    "Namespace",
    "Node",
    "NodeAffinity",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "ObjectReference",
    "OperatorConfiguration",
    "OwnerReference",
    "Pod",
    "PodClique",
    "PodCliqueScalingGroup",
    "PodCliqueScalingGroupConfig",
    "PodCliqueSet",
    "PodCliqueSpec",
    "PodCliqueTemplateSpec",
    "PodCondition",
    "PodGang",
    "PodGangGroup",
    "PodGangSpec",
    "PodGangStatus",
    "PodSpec",
    "PodStatus",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PriorityClass",
    "Resource",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceRequirements",
    "ResourceSlice",
    "RuntimeClass",
    "SchedulerConfiguration",
    "SchedulerProfile",
    "Service", "HorizontalPodAutoscaler", "ServiceAccount", "Secret", "Role", "RoleBinding",
    "StorageClass",
    "Taint",
    "Toleration",
    "TopologyConstraint",
    "TopologyLevel",
    "UnknownKind",
    "VolcanoPodGroup",
    "VolumeAttachment",
    "Workload",
    "WorkloadReference",
    "default_operator_config",
    "default_podcliqueset",
    "dump_yaml",
    "format_duration",
    "format_quantity",
    "format_resources",
    "from_dict",
    "get_condition",
    "labels",
    "load_file",
    "load_operator_config",
    "load_path",
    "load_yaml",
    "parse_duration",
    "parse_quantity",
    "parse_resources",
    "register_scheduler_name",
    "registry",
    "set_condition",
    "set_status_condition",
    "validate_operator_config",
]
