"""What kube-apiserver defaults and refuses on resource.k8s.io/v1 DeviceClasses,
ResourceSlices, ResourceClaims and ResourceClaimTemplates (pkg/apis/resource/validation and
the defaulting of k8s.io/api/resource/v1), for what the scheduler reads, as functions that
return `[(field path, why)]`, and `install_dra_admission(cluster)`, which runs them on the
embedded cluster's writes.

Defaults: a request's (and a subrequest's) `allocationMode` is `ExactCount`, its `count` 1;
a device toleration's `operator` is `Equal`. Rules: request and subrequest names (unique DNS
labels), exactly one of `exactly` / `firstAvailable` (at most 8 alternatives), a device
class name, the allocation mode and count, CEL selectors that compile to a bool, constraint
and config request references, one `matchAttribute` per constraint (a fully qualified
name); slices: driver, pool, exactly one node selection, unique device names, limits; the
claim spec and a class-less template spec are immutable; status: `reservedFor` only with an
allocation, unique, at most 256; an allocation is immutable once written, its results
(at most 32) name requests of the claim.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from phalanx.api.devicecel import compile_selector
from phalanx.api.resource import (
    ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    CEL_MAX_LENGTH,
    DEVICE_REQUESTS_MAX_SIZE,
    EXACT_COUNT,
    FIRST_AVAILABLE_MAX_SIZE,
    MAX_ATTRIBUTES_AND_CAPACITIES,
    RESERVED_FOR_MAX_SIZE,
    SLICE_MAX_DEVICES,
    SLICE_MAX_DEVICES_ADVANCED,
    DeviceClaim,
    DeviceClass,
    DeviceSelector,
    DeviceToleration,
    ResourceClaim,
    ResourceClaimStatus,
    ResourceClaimTemplate,
    ResourceSlice,
)

from .storage import Errors, node_selector_errors, raise_errors

if TYPE_CHECKING:
    from .memory import MemoryCluster

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _label(value: str, path: str) -> Errors:
    if not value:
        return [(path, "Required value")]
    if len(value) > 63 or not _DNS_LABEL.match(value):
        return [(path, f'Invalid value: "{value}": a lowercase RFC 1123 label must consist of '
                       "lower case alphanumeric characters or '-', and must start and end "
                       "with an alphanumeric character")]
    return []


def _subdomain(value: str, path: str) -> Errors:
    if not value:
        return [(path, "Required value")]
    if len(value) > 253 or not _DNS_SUBDOMAIN.match(value):
        return [(path, f'Invalid value: "{value}": a lowercase RFC 1123 subdomain must '
                       "consist of lower case alphanumeric characters, '-' or '.', and must "
                       "start and end with an alphanumeric character")]
    return []


def _driver(value: str, path: str) -> Errors:
    errs = _subdomain(value, path)
    if not errs and len(value) > 63:
        errs.append((path, "Too long: may not be more than 63 bytes"))
    return errs


def _fully_qualified(name: str, path: str) -> Errors:
    domain, slash, ident = name.rpartition("/")
    if not slash:
        return [(path, "Required value: a fully qualified name must be a domain and a name "
                       "separated by a slash")]
    return _subdomain(domain, path) + _identifier(ident, path)


def _identifier(ident: str, path: str) -> Errors:
    if not ident:
        return [(path, "Required value")]
    if len(ident) > 32 or not _C_IDENTIFIER.match(ident):
        return [(path, f'Invalid value: "{ident}": a valid C identifier must start with '
                       "alphabetic character or '_', followed by a string of alphanumeric "
                       "characters or '_' (at most 32)")]
    return []


def _qualified(name: str, path: str) -> Errors:
    domain, slash, ident = name.rpartition("/")
    return (_subdomain(domain, path) if slash else []) + _identifier(ident, path)


# --- defaults -----------------------------------------------------------------------------


def default_device_claim(devices: DeviceClaim) -> None:
    for req in devices.requests:
        for r in ([req.exactly] if req.exactly is not None else []) + list(
                req.first_available or ()):
            if not r.allocation_mode:
                r.allocation_mode = EXACT_COUNT
            if r.allocation_mode == EXACT_COUNT and r.count is None:
                r.count = 1
            _default_tolerations(r.tolerations)


def _default_tolerations(tolerations: list[DeviceToleration] | None) -> None:
    for t in tolerations or ():
        if t.operator is None:
            t.operator = "Equal"


# --- claims -------------------------------------------------------------------------------


def request_names(devices: DeviceClaim) -> dict[str, set[str] | None]:
    """Request name -> its subrequest names (None for an `exactly` request)."""
    out: dict[str, set[str] | None] = {}
    for req in devices.requests:
        out[req.name] = {s.name for s in req.first_available} if req.first_available else None
    return out


def _has_request(names: dict[str, set[str] | None], ref: str) -> bool:
    parts = ref.split("/")
    if len(parts) > 2 or parts[0] not in names:
        return False
    subs = names[parts[0]]
    return len(parts) == 1 or (subs is not None and parts[1] in subs)


def _request_ref(ref: str, path: str, names: dict[str, set[str] | None]) -> Errors:
    if not _has_request(names, ref):
        return [(path, f'Invalid value: "{ref}": must be the name of a request in the claim '
                       "or the name of a request and a subrequest separated by '/'")]
    return []


def selector_errors(selectors: list[DeviceSelector] | None, path: str) -> Errors:
    errs: Errors = []
    for i, sel in enumerate(selectors or ()):
        p = f"{path}[{i}].cel"
        if sel.cel is None:
            errs.append((p, "Required value"))
            continue
        expr = sel.cel.expression
        if len(expr) > CEL_MAX_LENGTH:
            errs.append((f"{p}.expression", f"Too long: may not be more than {CEL_MAX_LENGTH} "
                                            "bytes"))
            continue
        compiled = compile_selector(expr)
        if compiled.error:
            errs.append((f"{p}.expression", f"Invalid value: {expr!r}: {compiled.error}"))
    return errs


def _mode_errors(mode: str | None, count: int | None, path: str) -> Errors:
    if mode == ALL:
        if count:
            return [(f"{path}.count", f"Invalid value: {count}: must not be specified when "
                                      "allocationMode is 'All'")]
        return []
    if mode == EXACT_COUNT:
        if count is None or count <= 0:
            return [(f"{path}.count", f"Invalid value: {count or 0}: must be greater than zero")]
        return []
    return [(f"{path}.allocationMode", f'Unsupported value: "{mode or ""}": supported values: '
                                       '"All", "ExactCount"')]


def device_claim_errors(devices: DeviceClaim, path: str) -> Errors:
    errs: Errors = []
    names = request_names(devices)
    if len(devices.requests) > DEVICE_REQUESTS_MAX_SIZE:
        errs.append((f"{path}.requests", f"Too many: {len(devices.requests)}: must have at most "
                                         f"{DEVICE_REQUESTS_MAX_SIZE} items"))
    seen: set[str] = set()
    for i, req in enumerate(devices.requests):
        p = f"{path}.requests[{i}]"
        errs += _label(req.name, f"{p}.name")
        if req.name in seen:
            errs.append((f"{p}.name", f'Duplicate value: "{req.name}"'))
        seen.add(req.name)
        if req.exactly is not None and req.first_available:
            errs.append((p, "Invalid value: exactly one of `exactly` or `firstAvailable` is "
                            "required, but multiple fields are set"))
        elif req.exactly is not None:
            e = req.exactly
            errs += _class_name(e.device_class_name, f"{p}.exactly.deviceClassName")
            errs += selector_errors(e.selectors, f"{p}.exactly.selectors")
            errs += _mode_errors(e.allocation_mode, e.count, f"{p}.exactly")
        elif req.first_available:
            if len(req.first_available) > FIRST_AVAILABLE_MAX_SIZE:
                errs.append((f"{p}.firstAvailable", f"Too many: {len(req.first_available)}: "
                             f"must have at most {FIRST_AVAILABLE_MAX_SIZE} items"))
            sub_seen: set[str] = set()
            for j, sub in enumerate(req.first_available):
                sp = f"{p}.firstAvailable[{j}]"
                errs += _label(sub.name, f"{sp}.name")
                if sub.name in sub_seen:
                    errs.append((f"{sp}.name", f'Duplicate value: "{sub.name}"'))
                sub_seen.add(sub.name)
                errs += _class_name(sub.device_class_name, f"{sp}.deviceClassName")
                errs += selector_errors(sub.selectors, f"{sp}.selectors")
                errs += _mode_errors(sub.allocation_mode, sub.count, sp)
        else:
            errs.append((p, "Required value: exactly one of `exactly` or `firstAvailable` is "
                            "required"))
    for i, c in enumerate(devices.constraints or ()):
        p = f"{path}.constraints[{i}]"
        for j, ref in enumerate(c.requests or ()):
            errs += _request_ref(ref, f"{p}.requests[{j}]", names)
        if c.match_attribute is not None:
            errs += _fully_qualified(c.match_attribute, f"{p}.matchAttribute")
        elif c.distinct_attribute is not None:
            errs += _fully_qualified(c.distinct_attribute, f"{p}.distinctAttribute")
        else:
            errs.append((f"{p}.matchAttribute", "Required value"))
    for i, cfg in enumerate(devices.config or ()):
        p = f"{path}.config[{i}]"
        for j, ref in enumerate(cfg.requests or ()):
            errs += _request_ref(ref, f"{p}.requests[{j}]", names)
        if cfg.opaque is None:
            errs.append((f"{p}.opaque", "Required value"))
        else:
            errs += _driver(cfg.opaque.driver, f"{p}.opaque.driver")
    return errs


def _class_name(name: str, path: str) -> Errors:
    return _subdomain(name, path)


def validate_claim(claim: ResourceClaim) -> Errors:
    return device_claim_errors(claim.spec.devices, "spec.devices")


def validate_claim_update(old: ResourceClaim, new: ResourceClaim) -> Errors:
    if new.spec != old.spec:
        return [("spec", "Invalid value: field is immutable")]
    return []


def validate_claim_status(old: ResourceClaim, new: ResourceClaim) -> Errors:
    """validateResourceClaimStatusUpdate."""
    st, old_st = new.status, old.status
    errs: Errors = []
    reserved = st.reserved_for or []
    if len(reserved) > RESERVED_FOR_MAX_SIZE:
        errs.append(("status.reservedFor", f"Too many: {len(reserved)}: must have at most "
                                           f"{RESERVED_FOR_MAX_SIZE} items"))
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        p = f"status.reservedFor[{i}]"
        for attr in ("resource", "name", "uid"):
            if not getattr(ref, attr):
                errs.append((f"{p}.{attr}", "Required value"))
        if ref.uid in uids:
            errs.append((p, f'Duplicate value: "{ref.uid}"'))
        uids.add(ref.uid)
    if reserved:
        if st.allocation is None:
            errs.append(("status.reservedFor", "Forbidden: may not be specified when "
                                               "`allocated` is not set"))
        elif new.metadata.deletion_timestamp is not None:
            before = {r.uid for r in old_st.reserved_for or ()}
            if uids - before:
                errs.append(("status.reservedFor", "Forbidden: new entries may not be added "
                                                   "while `deallocationRequested` or "
                                                   "`deletionTimestamp` are set"))
    if old_st.allocation is not None and st.allocation is not None:
        if st.allocation != old_st.allocation:
            errs.append(("status.allocation", "Invalid value: field is immutable"))
    elif st.allocation is not None:
        errs += _allocation_errors(new, st)
    return errs


def _allocation_errors(claim: ResourceClaim, st: ResourceClaimStatus) -> Errors:
    assert st.allocation is not None
    names = request_names(claim.spec.devices)
    results = st.allocation.devices.results
    errs: Errors = []
    if len(results) > ALLOCATION_RESULTS_MAX_SIZE:
        errs.append(("status.allocation.devices.results", f"Too many: {len(results)}: must "
                     f"have at most {ALLOCATION_RESULTS_MAX_SIZE} items"))
    for i, r in enumerate(results):
        p = f"status.allocation.devices.results[{i}]"
        errs += _request_ref(r.request, f"{p}.request", names)
        errs += _driver(r.driver, f"{p}.driver")
        if not r.pool:
            errs.append((f"{p}.pool", "Required value"))
        errs += _label(r.device, f"{p}.device")
    for i, cfg in enumerate(st.allocation.devices.config or ()):
        p = f"status.allocation.devices.config[{i}]"
        if cfg.source not in ("FromClass", "FromClaim"):
            errs.append((f"{p}.source", f'Unsupported value: "{cfg.source}": supported '
                                        'values: "FromClaim", "FromClass"'))
        for j, ref in enumerate(cfg.requests or ()):
            errs += _request_ref(ref, f"{p}.requests[{j}]", names)
    if st.allocation.node_selector is not None:
        errs += node_selector_errors(st.allocation.node_selector,
                                     "status.allocation.nodeSelector")
    return errs


def validate_template(tpl: ResourceClaimTemplate) -> Errors:
    return device_claim_errors(tpl.spec.spec.devices, "spec.spec.devices")


def validate_template_update(old: ResourceClaimTemplate,
                             new: ResourceClaimTemplate) -> Errors:
    if new.spec != old.spec:
        return [("spec", "Invalid value: field is immutable")]
    return []


# --- classes and slices -------------------------------------------------------------------


def validate_class(dc: DeviceClass) -> Errors:
    errs = selector_errors(dc.spec.selectors, "spec.selectors")
    for i, cfg in enumerate(dc.spec.config or ()):
        if cfg.opaque is None:
            errs.append((f"spec.config[{i}].opaque", "Required value"))
        else:
            errs += _driver(cfg.opaque.driver, f"spec.config[{i}].opaque.driver")
    return errs


def validate_slice(rs: ResourceSlice) -> Errors:
    spec = rs.spec
    errs = _driver(spec.driver, "spec.driver")
    if not spec.pool.name:
        errs.append(("spec.pool.name", "Required value"))
    if spec.pool.resource_slice_count <= 0:
        errs.append(("spec.pool.resourceSliceCount", f"Invalid value: "
                     f"{spec.pool.resource_slice_count}: must be greater than zero"))
    if spec.pool.generation < 0:
        errs.append(("spec.pool.generation", f"Invalid value: {spec.pool.generation}: must be "
                                             "greater than or equal to zero"))
    chosen = [n for n, v in (("nodeName", spec.node_name), ("nodeSelector", spec.node_selector),
                             ("allNodes", spec.all_nodes),
                             ("perDeviceNodeSelection", spec.per_device_node_selection)) if v]
    if spec.shared_counters and spec.devices:
        errs.append(("spec", "Invalid value: only one of `devices` and `sharedCounters` may "
                             "be set"))
    if not spec.shared_counters and len(chosen) != 1:
        what = "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, " \
               "`perDeviceNodeSelection` is required"
        errs.append(("spec", what if not chosen else what.replace(
            "Required value", "Invalid value") + ", but multiple fields are set"))
    if spec.node_selector is not None:
        errs += node_selector_errors(spec.node_selector, "spec.nodeSelector")
    advanced = any(d.taints or d.consumes_counters for d in spec.devices)
    limit = SLICE_MAX_DEVICES_ADVANCED if advanced else SLICE_MAX_DEVICES
    if len(spec.devices) > limit:
        errs.append(("spec.devices", f"Too many: {len(spec.devices)}: must have at most "
                                     f"{limit} items"))
    names: set[str] = set()
    for i, d in enumerate(spec.devices):
        p = f"spec.devices[{i}]"
        errs += _label(d.name, f"{p}.name")
        if d.name in names:
            errs.append((f"{p}.name", f'Duplicate value: "{d.name}"'))
        names.add(d.name)
        if len(d.attributes) + len(d.capacity) > MAX_ATTRIBUTES_AND_CAPACITIES:
            errs.append((p, f"Too many: {len(d.attributes) + len(d.capacity)}: must have at "
                            f"most {MAX_ATTRIBUTES_AND_CAPACITIES} attributes and capacities "
                            "combined"))
        for name, attr in d.attributes.items():
            ap = f"{p}.attributes[{name}]"
            errs += _qualified(name, ap)
            set_ = [k for k in ("int_value", "bool_value", "string", "version", "ints",
                                "bools", "strings", "versions") if getattr(attr, k) is not None]
            if len(set_) != 1:
                errs.append((ap, "Invalid value: exactly one value must be specified"))
        for name in d.capacity:
            errs += _qualified(name, f"{p}.capacity[{name}]")
        per_device = [n for n in (d.node_name, d.node_selector, d.all_nodes) if n]
        if spec.per_device_node_selection and len(per_device) != 1:
            errs.append((p, "Required value: exactly one of `nodeName`, `nodeSelector`, "
                            "`allNodes` is required when `perDeviceNodeSelection` is set"))
        if not spec.per_device_node_selection and per_device:
            errs.append((p, "Forbidden: `nodeName`, `nodeSelector` and `allNodes` may only be "
                            "set when `perDeviceNodeSelection` is set"))
    return errs


def validate_slice_update(old: ResourceSlice, new: ResourceSlice) -> Errors:
    errs = validate_slice(new)
    if new.spec.driver != old.spec.driver:
        errs.append(("spec.driver", "Invalid value: field is immutable"))
    if new.spec.node_name != old.spec.node_name:
        errs.append(("spec.nodeName", "Invalid value: field is immutable"))
    return errs


# --- admission on the embedded cluster -----------------------------------------------------


def install_dra_admission(cluster: MemoryCluster) -> None:
    """Defaulting and validation of the four kinds, and of claim status writes."""

    def claim_defaults(claim: ResourceClaim, old: Any) -> None:
        if old is None:
            default_device_claim(claim.spec.devices)

    def claim_check(claim: ResourceClaim, old: ResourceClaim | None) -> None:
        raise_errors(claim, validate_claim(claim) if old is None
                     else validate_claim_update(old, claim))

    def template_defaults(tpl: ResourceClaimTemplate, old: Any) -> None:
        if old is None:
            default_device_claim(tpl.spec.spec.devices)

    def template_check(tpl: ResourceClaimTemplate, old: ResourceClaimTemplate | None) -> None:
        raise_errors(tpl, validate_template(tpl) if old is None
                     else validate_template_update(old, tpl))

    def slice_check(rs: ResourceSlice, old: ResourceSlice | None) -> None:
        raise_errors(rs, validate_slice(rs) if old is None else validate_slice_update(old, rs))

    def status_check(new: ResourceClaim, old: ResourceClaim) -> None:
        raise_errors(new, validate_claim_status(old, new))

    cluster.register_admission(ResourceClaim, mutate=claim_defaults, validate=claim_check)
    cluster.register_admission(ResourceClaimTemplate, mutate=template_defaults,
                               validate=template_check)
    cluster.register_admission(DeviceClass, validate=lambda o, _old: raise_errors(
        o, validate_class(o)))
    cluster.register_admission(ResourceSlice, validate=slice_check)
    register = getattr(cluster, "register_status_validation", None)
    if register is not None:
        register(ResourceClaim, status_check)
