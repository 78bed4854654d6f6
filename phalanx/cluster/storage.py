"""What kube-apiserver defaults and refuses on PersistentVolumes, PersistentVolumeClaims and
StorageClasses (pkg/apis/core/validation, pkg/apis/storage/validation), as functions that
return `[(field path, why)]`, messages worded as the API server words them, and
`install_storage_admission(cluster)`, which runs them on the embedded cluster's writes.

Only the rules that matter to scheduling and binding are here: required fields, access
modes, the storage request / capacity, one volume source, node affinity terms, binding mode
and reclaim policy values, and what may change on update. Status starts as the API server
starts it: a new PersistentVolume is `Pending`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from phalanx.api.pod import NodeSelector, NodeSelectorTerm
from phalanx.api.quantity import parse_quantity
from phalanx.api.storage import (
    SOURCE_FIELDS,
    ACCESS_MODES,
    ANN_BETA_STORAGE_CLASS,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

from .client import Invalid
from .selectors import SelectorError, parse_label_selector

if TYPE_CHECKING:
    from phalanx.api.base import Resource

    from .memory import MemoryCluster

Errors = list[tuple[str, str]]

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _supported(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{v}"' for v in sorted(values))


def _access_modes(modes: list[str] | None, path: str, required_why: str) -> Errors:
    if not modes:
        return [(path, f"Required value{': ' + required_why if required_why else ''}")]
    errs: Errors = []
    rwop = other = False
    for m in modes:
        if m not in ACCESS_MODES:
            errs.append((path, f'Unsupported value: "{m}": supported values: '
                               f"{_supported(ACCESS_MODES)}"))
        elif m == "ReadWriteOncePod":
            rwop = True
        else:
            other = True
    if rwop and other:
        errs.append((path, "Forbidden: may not use ReadWriteOncePod with other access modes"))
    return errs


def _class_name(name: str | None, path: str) -> Errors:
    if name and (len(name) > 253 or not _DNS_SUBDOMAIN.match(name)):
        return [(path, f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
                       "of lower case alphanumeric characters, '-' or '.', and must start and "
                       "end with an alphanumeric character")]
    return []


def _positive_quantity(value: Any, path: str) -> Errors:
    try:
        amount = parse_quantity(value)
    except (TypeError, ValueError) as e:
        return [(path, f"Invalid value: {value!r}: {e}")]
    if amount <= 0:
        return [(path, f'Invalid value: "{value}": must be greater than zero')]
    return []


def node_selector_errors(selector: NodeSelector, path: str) -> Errors:
    """ValidateNodeSelector: at least one term; each requirement's operator/values agree."""
    terms_path = f"{path}.nodeSelectorTerms"
    if not selector.node_selector_terms:
        return [(terms_path, "Required value: must have at least one node selector term")]
    errs: Errors = []
    for i, term in enumerate(selector.node_selector_terms):
        errs += _term_errors(term, f"{terms_path}[{i}]")
    return errs


def _term_errors(term: NodeSelectorTerm, path: str) -> Errors:
    errs: Errors = []
    for j, req in enumerate(term.match_expressions or ()):
        p = f"{path}.matchExpressions[{j}]"
        values = req.values or []
        if req.operator in ("In", "NotIn") and not values:
            errs.append((f"{p}.values", "Required value: must be specified when `operator` "
                                        "is 'In' or 'NotIn'"))
        elif req.operator in ("Exists", "DoesNotExist") and values:
            errs.append((f"{p}.values", "Forbidden: may not be specified when `operator` is "
                                        "'Exists' or 'DoesNotExist'"))
        elif req.operator in ("Gt", "Lt"):
            if len(values) != 1:
                errs.append((f"{p}.values", "Required value: must be specified single value "
                                            "when `operator` is 'Lt' or 'Gt'"))
            elif not values[0].lstrip("-").isdigit():
                errs.append((f"{p}.values[0]", f'Invalid value: "{values[0]}": must be an '
                                               "integer"))
    for j, req in enumerate(term.match_fields or ()):
        p = f"{path}.matchFields[{j}]"
        if req.key != "metadata.name":
            errs.append((f"{p}.key", f'Invalid value: "{req.key}": not a valid field '
                                     "selector key"))
        if req.operator not in ("In", "NotIn"):
            errs.append((f"{p}.operator", f'Invalid value: "{req.operator}": not a valid '
                                          "selector operator"))
        elif len(req.values or ()) != 1:
            errs.append((f"{p}.values", "Required value: must be only one value when "
                                        "`operator` is 'In' or 'NotIn' for node field "
                                        "selector"))
    return errs


# --- PersistentVolume ----------------------------------------------------------------------


def default_volume(pv: PersistentVolume) -> None:
    spec = pv.spec
    if spec.persistent_volume_reclaim_policy is None:
        spec.persistent_volume_reclaim_policy = "Retain"
    if spec.volume_mode is None:
        spec.volume_mode = "Filesystem"


def validate_volume(pv: PersistentVolume) -> Errors:
    spec = pv.spec
    errs = _access_modes(spec.access_modes, "spec.accessModes", "")
    capacity = spec.capacity or {}
    if not capacity:
        errs.append(("spec.capacity", "Required value"))
    elif "storage" not in capacity or len(capacity) > 1:
        errs.append(("spec.capacity", f"Unsupported value: {sorted(capacity)}: supported "
                                      'values: "storage"'))
    for key, value in sorted(capacity.items()):
        errs += _positive_quantity(value, f"spec.capacity[{key}]")
    sources = spec.sources()
    if not sources:
        errs.append(("spec", "Required value: must specify a volume type"))
    for extra in sources[1:]:
        errs.append((f"spec.{extra}", "Forbidden: may not specify more than 1 volume type"))
    if spec.node_affinity is not None:
        if spec.node_affinity.required is None:
            errs.append(("spec.nodeAffinity.required",
                         "Required value: must specify required node constraints"))
        else:
            errs += node_selector_errors(spec.node_affinity.required, "spec.nodeAffinity.required")
    errs += _class_name(spec.storage_class_name, "spec.storageClassName")
    return errs


def validate_volume_update(old: PersistentVolume, new: PersistentVolume) -> Errors:
    errs = validate_volume(new)
    before, after = old.spec, new.spec
    if before.sources() != after.sources() or any(
            getattr(before, f) != getattr(after, f) for f in sorted(SOURCE_FIELDS)):
        errs.append(("spec.persistentvolumesource",
                     "Forbidden: spec.persistentvolumesource is immutable after creation"))
    if before.volume_mode != after.volume_mode:
        errs.append(("volumeMode", "Invalid value: field is immutable"))
    if before.node_affinity is not None and before.node_affinity != after.node_affinity:
        errs.append(("nodeAffinity", "Invalid value: field is immutable"))
    return errs


# --- PersistentVolumeClaim -----------------------------------------------------------------


def default_claim(pvc: PersistentVolumeClaim) -> None:
    if pvc.spec.volume_mode is None:
        pvc.spec.volume_mode = "Filesystem"


def validate_claim(pvc: PersistentVolumeClaim) -> Errors:
    spec = pvc.spec
    errs = _access_modes(spec.access_modes, "spec.accessModes", "at least 1 access mode is "
                                                                "required")
    if spec.selector is not None:
        try:
            parse_label_selector(spec.selector)
        except SelectorError as e:
            errs.append(("spec.selector", f"Invalid value: {e}"))
    requests = spec.resources.requests or {}
    if "storage" not in requests:
        errs.append(("spec.resources[storage]", "Required value"))
    else:
        errs += _positive_quantity(requests["storage"], "spec.resources[storage]")
    errs += _class_name(spec.storage_class_name, "spec.storageClassName")
    return errs


def validate_claim_update(old: PersistentVolumeClaim, new: PersistentVolumeClaim) -> Errors:
    """The spec is immutable except: volumeName may be set once (the PV controller binds),
    storage requests may grow on a bound claim, and a class may be set where none was."""
    errs = validate_claim(new)
    before, after = old.spec.model_copy(), new.spec.model_copy()
    if not before.volume_name:
        before.volume_name = after.volume_name
    if before.storage_class_name is None and ANN_BETA_STORAGE_CLASS not in \
            old.metadata.annotations:
        before.storage_class_name = after.storage_class_name
    if old.status.phase == "Bound":
        before.resources = after.resources
        old_req = parse_quantity((old.spec.resources.requests or {}).get("storage", 0))
        new_req = (new.spec.resources.requests or {}).get("storage", 0)
        try:
            shrinks = parse_quantity(new_req) < old_req
        except ValueError:
            shrinks = False
        if shrinks:
            errs.append(("spec.resources.requests.storage",
                         "Forbidden: field can not be less than status.capacity"))
    if before != after:
        errs.append(("spec", "Forbidden: spec is immutable after creation except "
                             "resources.requests and volumeAttributesClassName for bound "
                             "claims"))
    old_class = old.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if old_class is not None and new.metadata.annotations.get(ANN_BETA_STORAGE_CLASS) != \
            old_class:
        errs.append((f"metadata.annotations[{ANN_BETA_STORAGE_CLASS}]",
                     "Invalid value: field is immutable"))
    return errs


# --- StorageClass --------------------------------------------------------------------------


def default_storage_class(sc: StorageClass) -> None:
    if sc.reclaim_policy is None:
        sc.reclaim_policy = "Delete"
    if sc.volume_binding_mode is None:
        sc.volume_binding_mode = "Immediate"


def validate_storage_class(sc: StorageClass) -> Errors:
    errs: Errors = []
    if not sc.provisioner:
        errs.append(("provisioner", "Required value"))
    elif not _qualified_name(sc.provisioner.lower()):
        errs.append(("provisioner", f'Invalid value: "{sc.provisioner}": must be a qualified '
                                    "name"))
    params = sc.parameters or {}
    if len(params) > 512:
        errs.append(("parameters", "Too long: must have at most 512 items"))
    if any(not k for k in params):
        errs.append(("parameters", 'Invalid value: "": field can not be empty.'))
    if sc.reclaim_policy == "Recycle":
        errs.append(("reclaimPolicy", 'Unsupported value: "Recycle": supported values: '
                                      '"Delete", "Retain"'))
    if sc.volume_binding_mode is None:
        errs.append(("volumeBindingMode", "Required value"))
    for i, term in enumerate(sc.allowed_topologies or ()):
        p = f"allowedTopologies[{i}].matchLabelExpressions"
        exprs = term.match_label_expressions or []
        if not exprs:
            errs.append((p, "Required value: must have at least one label requirement"))
        seen: set[str] = set()
        for j, req in enumerate(exprs):
            if req.key in seen:
                errs.append((f"{p}[{j}].key", f'Duplicate value: "{req.key}"'))
            seen.add(req.key)
            if not req.values:
                errs.append((f"{p}[{j}].values", "Required value: must specify as least one "
                                                 "value"))
    return errs


def _qualified_name(value: str) -> bool:
    """[prefix/]name: a DNS-subdomain prefix, a name of at most 63 characters."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def validate_storage_class_update(old: StorageClass, new: StorageClass) -> Errors:
    errs = validate_storage_class(new)
    for attr, path in (("parameters", "parameters"), ("provisioner", "provisioner"),
                       ("reclaim_policy", "reclaimPolicy"),
                       ("volume_binding_mode", "volumeBindingMode")):
        if getattr(old, attr) != getattr(new, attr):
            errs.append((path, "Invalid value: field is immutable"))
    return errs


# --- admission on the embedded cluster -----------------------------------------------------


def raise_errors(obj: Resource, errs: Errors, *, resource: str | None = None) -> None:
    """Invalid naming the first field, with every error in the message (as kube does);
    `resource` is how the message names the kind (kube's `Kind.group`), else its KIND."""
    if not errs:
        return
    detail = "; ".join(f"{path}: {why}" for path, why in errs)
    raise Invalid(f'{resource or obj.KIND} "{obj.name}" is invalid: '
                  + (detail if len(errs) == 1 else f"[{detail}]"),
                  kind=obj.KIND, name=obj.name, field=errs[0][0])


def install_storage_admission(cluster: MemoryCluster) -> None:
    """Defaulting and validation of the three kinds, as built-in admission of `cluster`."""

    def pv_defaults(pv: PersistentVolume, old: PersistentVolume | None) -> None:
        default_volume(pv)
        if old is None:
            pv.status.phase = "Pending"

    def pv_check(pv: PersistentVolume, old: PersistentVolume | None) -> None:
        raise_errors(pv, validate_volume(pv) if old is None else validate_volume_update(old, pv))

    def pvc_check(pvc: PersistentVolumeClaim, old: PersistentVolumeClaim | None) -> None:
        raise_errors(pvc, validate_claim(pvc) if old is None else validate_claim_update(old, pvc))

    def sc_check(sc: StorageClass, old: StorageClass | None) -> None:
        raise_errors(sc, validate_storage_class(sc) if old is None
                     else validate_storage_class_update(old, sc))

    cluster.register_admission(PersistentVolume, mutate=pv_defaults, validate=pv_check)
    cluster.register_admission(PersistentVolumeClaim, mutate=lambda o, _old: default_claim(o),
                               validate=pvc_check)
    cluster.register_admission(StorageClass, mutate=lambda o, _old: default_storage_class(o),
                               validate=sc_check)
