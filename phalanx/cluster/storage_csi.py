"""What kube-apiserver 1.36 defaults and refuses on CSINodes, CSIDrivers and
VolumeAttachments (pkg/apis/storage/validation, storage/v1 defaults and the registry
strategies), as functions returning `[(field path, why)]` worded as the API server words them,
and `install_csi_admission(cluster)`, which runs them on the embedded cluster's writes.

Feature gates as 1.36 ships them: MutableCSINodeAllocatableCount is on (a driver's
`allocatable` may change, nothing else of it), VolumeLimitScaling is off (a CSIDriver's
`preventPodSchedulingIfMissing` is dropped on write), SELinuxMountReadWriteOncePod is on
(`seLinuxMount` defaults to false).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phalanx.api.storage_csi import CSIDriver, CSINode, CSINodeDriver, VolumeAttachment

from .podvalidation.fielderrors import (
    FieldErrors,
    dns_subdomain_errors,
    duplicate,
    each_invalid,
    invalid,
    not_supported,
    qualified_name_errors,
    required,
)
from .storage import raise_errors

if TYPE_CHECKING:
    from .memory import MemoryCluster

CSI_NODE_ID_MAX_LENGTH = 256
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Persistent", "Ephemeral")
NEGATIVE = "must be greater than or equal to 0"


def csi_driver_name_errors(name: str, path: str) -> FieldErrors:
    """ValidateCSIDriverName: required, at most 63 bytes, a DNS subdomain (any case)."""
    if not name:
        return [required(path)]
    errs: FieldErrors = []
    if len(name) > 63:
        errs.append((path, "Too long: may not be more than 63 bytes"))
    errs += each_invalid(path, name, dns_subdomain_errors(name.lower()))
    return errs


# --- CSINode -------------------------------------------------------------------------------


def validate_csi_node(node: CSINode) -> FieldErrors:
    errs: FieldErrors = []
    seen: set[str] = set()
    for i, driver in enumerate(node.spec.drivers):
        errs += _driver_errors(driver, seen, f"spec.drivers[{i}]")
    return errs


def _driver_errors(driver: CSINodeDriver, seen: set[str], path: str) -> FieldErrors:
    errs = csi_driver_name_errors(driver.name, f"{path}.name")
    node_id = driver.node_id
    if not node_id:
        errs.append(required(f"{path}.nodeID"))
    if len(node_id) > CSI_NODE_ID_MAX_LENGTH:
        errs.append(invalid(f"{path}.nodeID", node_id,
                            f"must be {CSI_NODE_ID_MAX_LENGTH} characters or less"))
    count = driver.allocatable.count if driver.allocatable is not None else None
    if count is not None and count < 0:
        errs.append(invalid(f"{path}.allocatable.count", count, NEGATIVE))
    if driver.name in seen:
        errs.append(duplicate(f"{path}.name", driver.name))
    seen.add(driver.name)
    keys: set[str] = set()
    for key in driver.topology_keys or ():
        if not key:
            errs.append(required(path))
        if key in keys:
            errs.append(duplicate(path, key))
        keys.add(key)
        errs += each_invalid(path, key, qualified_name_errors(key))
    return errs


def validate_csi_node_update(old: CSINode, new: CSINode) -> FieldErrors:
    """A driver already listed keeps its nodeID and topology keys (its allocatable count
    may change: MutableCSINodeAllocatableCount, on in 1.36)."""
    errs = validate_csi_node(new)
    for before in old.spec.drivers:
        for after in new.spec.drivers:
            if before.name != after.name:
                continue
            if before.model_copy(update={"allocatable": None}) != \
                    after.model_copy(update={"allocatable": None}):
                errs.append(("spec.drivers", "Invalid value: field is immutable"))
    return errs


# --- CSIDriver -----------------------------------------------------------------------------


def default_csi_driver(driver: CSIDriver) -> None:
    """storage/v1 SetDefaults_CSIDriver, and the strategy's drop of gated-off fields."""
    spec = driver.spec
    if spec.attach_required is None:
        spec.attach_required = True
    if spec.pod_info_on_mount is None:
        spec.pod_info_on_mount = False
    if spec.storage_capacity is None:
        spec.storage_capacity = False
    if spec.fs_group_policy is None:
        spec.fs_group_policy = "ReadWriteOnceWithFSType"
    if not spec.volume_lifecycle_modes:
        spec.volume_lifecycle_modes = ["Persistent"]
    if spec.requires_republish is None:
        spec.requires_republish = False
    if spec.se_linux_mount is None:
        spec.se_linux_mount = False
    spec.prevent_pod_scheduling_if_missing = None  # VolumeLimitScaling is off in 1.36


def validate_csi_driver(driver: CSIDriver) -> FieldErrors:
    spec, path = driver.spec, "spec"
    errs: FieldErrors = []
    for attr, name in (("attach_required", "attachedRequired"),
                       ("pod_info_on_mount", "podInfoOnMount"),
                       ("storage_capacity", "storageCapacity")):
        if getattr(spec, attr) is None:
            errs.append(required(f"{path}.{name}"))
    if spec.fs_group_policy is not None and spec.fs_group_policy not in FS_GROUP_POLICIES:
        errs.append(not_supported(f"{path}.fsGroupPolicy", spec.fs_group_policy,
                                  FS_GROUP_POLICIES))
    audiences: set[str] = set()
    for i, token in enumerate(spec.token_requests or ()):
        at = f"{path}.tokenRequests[{i}]"
        if token.audience in audiences:
            errs.append(duplicate(f"{at}.audience", token.audience))
            continue
        audiences.add(token.audience)
        seconds = token.expiration_seconds
        if seconds is not None and seconds < 600:
            errs.append(invalid(f"{at}.expirationSeconds", seconds,
                                "may not specify a duration less than 10 minutes"))
        if seconds is not None and seconds > 1 << 32:
            errs.append(invalid(f"{at}.expirationSeconds", seconds,
                                "may not specify a duration larger than 2^32 seconds"))
    for mode in spec.volume_lifecycle_modes or ():
        if mode not in LIFECYCLE_MODES:
            errs.append(not_supported(f"{path}.volumeLifecycleModes", mode, LIFECYCLE_MODES))
    if spec.se_linux_mount is None:
        errs.append(required(f"{path}.seLinuxMount"))
    period = spec.node_allocatable_update_period_seconds
    if period is not None and period < 10:
        errs.append(invalid(f"{path}.nodeAllocatableUpdatePeriodSeconds", period,
                            "must be greater than or equal to 10 seconds"))
    if spec.service_account_token_in_secrets is not None and not spec.token_requests:
        errs.append(invalid(f"{path}.serviceAccountTokenInSecrets",
                            spec.service_account_token_in_secrets,
                            "serviceAccountTokenInSecrets is set but no tokenRequests are "
                            "specified"))
    return errs


def validate_csi_driver_update(old: CSIDriver, new: CSIDriver) -> FieldErrors:
    errs = validate_csi_driver(new)
    if old.spec.attach_required != new.spec.attach_required:
        errs.append(("spec.attachedRequired", "Invalid value: field is immutable"))
    if old.spec.volume_lifecycle_modes != new.spec.volume_lifecycle_modes:
        errs.append(("spec.volumeLifecycleModes", "Invalid value: field is immutable"))
    return errs


# --- VolumeAttachment ----------------------------------------------------------------------


def validate_volume_attachment(va: VolumeAttachment) -> FieldErrors:
    spec = va.spec
    errs = csi_driver_name_errors(spec.attacher, "spec.attacher")
    source, at = spec.source, "spec.source"
    pv_name, inline = source.persistent_volume_name, source.inline_volume_spec
    if pv_name is None and inline is None:
        errs.append(required(at, "must specify exactly one of inlineVolumeSpec and "
                                 "persistentVolumeName"))
    elif pv_name is not None and inline is not None:
        errs.append((at, ("Forbidden: must specify exactly one of inlineVolumeSpec and "
                          "persistentVolumeName")))
    elif pv_name is not None and not pv_name:
        errs.append(required(f"{at}.persistentVolumeName",
                             "must specify non empty persistentVolumeName"))
    errs += each_invalid("spec.nodeName", spec.node_name, dns_subdomain_errors(spec.node_name))
    for name, error in (("attachError", va.status.attach_error),
                        ("detachError", va.status.detach_error)):
        code = error.error_code if error is not None else None
        if code is not None and code < 0:
            errs.append(invalid(f"status.{name}.errorCode", code,
                                "must be between 0 and 2147483647, inclusive"))
    if pv_name:
        errs += each_invalid("spec.source.persistentVolumeName", pv_name,
                             dns_subdomain_errors(pv_name))
    return errs


def validate_volume_attachment_update(old: VolumeAttachment,
                                      new: VolumeAttachment) -> FieldErrors:
    errs = validate_volume_attachment(new)
    if old.spec != new.spec:
        errs.append(("spec", "Invalid value: field is immutable"))
    return errs


# --- admission on the embedded cluster -----------------------------------------------------


def install_csi_admission(cluster: MemoryCluster) -> None:
    """Defaulting and validation of the three kinds, as built-in admission of `cluster`."""

    def node_check(obj: CSINode, old: CSINode | None) -> None:
        raise_errors(obj, validate_csi_node(obj) if old is None
                     else validate_csi_node_update(old, obj))

    def driver_check(obj: CSIDriver, old: CSIDriver | None) -> None:
        raise_errors(obj, validate_csi_driver(obj) if old is None
                     else validate_csi_driver_update(old, obj))

    def attachment_check(obj: VolumeAttachment, old: VolumeAttachment | None) -> None:
        raise_errors(obj, validate_volume_attachment(obj) if old is None
                     else validate_volume_attachment_update(old, obj))

    cluster.register_admission(CSINode, validate=node_check)
    cluster.register_admission(CSIDriver, mutate=lambda o, _old: default_csi_driver(o),
                               validate=driver_check)
    cluster.register_admission(VolumeAttachment, validate=attachment_check)
