"""kube-apiserver's validation of an autoscaling/v2 metric (MetricSpec), field by field.

The rules of pkg/apis/autoscaling/validation (validateMetricSpec and the source and target
checks under it), with its messages: the type is one of the five sources and names the one
source that is set; a source's metric name is a path segment, its resource a container
resource name, its container a DNS label; a target is Utilization, Value or AverageValue,
with the numbers its source needs, each positive. Fields the API does not have are refused
by name first (the schema's check), so nothing written is ignored.

`metric_errors(data, path)` takes a metric as written (a dict) and returns FieldErrors with
paths under `path`; `spec_bound_errors` checks the replica bounds of
validateHorizontalPodAutoscalerSpec (minReplicas at least 1, unless the stored HPA already
had 0; maxReplicas set, at least 1 and not below minReplicas); `install_hpa_validation`
makes the embedded API server refuse an HPA with either, as kube-apiserver does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from phalanx.api.autoscaling import (
    ContainerResourceMetricSource,
    ExternalMetricSource,
    HorizontalPodAutoscaler,
    MetricIdentifier,
    MetricSpec,
    MetricTarget,
    ObjectMetricSource,
    PodsMetricSource,
    ResourceMetricSource,
)
from phalanx.api.quantity import parse_quantity

from .podresources import container_resource_name_error
from .podvalidation.fielderrors import (
    FieldErrors,
    dns_label_errors,
    forbidden,
    invalid,
    not_supported,
    required,
)
from .storage import raise_errors

if TYPE_CHECKING:
    from .memory import MemoryCluster

SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_FIELD_OF = {"Object": "object", "Pods": "pods", "Resource": "resource",
             "External": "external", "ContainerResource": "containerResource"}
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
_NEED_VALUE = "must set either a target value for metric or a per-pod target"
_BOTH_VALUES = "may not set both a target value for metric and a per-pod target"
_NEED_RESOURCE = "must set either a target raw value or a target utilization"
_BOTH_RESOURCE = "may not set both a target raw value and a target utilization"
_QUANTITY_WHY = ("quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def metric_errors(data: Any, path: str) -> FieldErrors:
    """Every problem with one autoscaling/v2 metric, as kube-apiserver words it."""
    if not isinstance(data, dict):
        return [invalid(path, data, "must be an object (autoscaling/v2 MetricSpec)")]
    try:
        spec = MetricSpec.model_validate(data)
    except ValidationError as err:
        return [_schema_error(path, e) for e in err.errors()]
    return _spec_errors(spec, path)


def _schema_error(path: str, e: Any) -> tuple[str, str]:
    at = ".".join([path, *(str(x) for x in e["loc"])])
    if e["type"] == "extra_forbidden":
        return at, "Unknown field: autoscaling/v2 MetricSpec has no such field"
    return at, f"Invalid value: {e['msg']}"


def _spec_errors(spec: MetricSpec, path: str) -> FieldErrors:
    errs: FieldErrors = []
    if not spec.type:
        errs.append(required(f"{path}.type", "must specify a metric source type"))
    sources = [(name, src) for name, src in (
        ("object", spec.object), ("external", spec.external), ("pods", spec.pods),
        ("resource", spec.resource), ("containerResource", spec.container_resource))
        if src is not None]
    present = [name for name, _ in sources]
    if sources:  # as kube: only the first source set is checked further
        name, src = sources[0]
        errs.extend(_source_errors(src, f"{path}.{name}"))
    expected = _FIELD_OF.get(spec.type)
    if expected is None:
        errs.append(not_supported(f"{path}.type", spec.type, SOURCE_TYPES))
    elif expected not in present:
        errs.append(required(f"{path}.{expected}",
                             "must populate information for the given metric source"))
    if len(present) != 1:
        errs.extend(forbidden(f"{path}.{name}", "must populate the given metric source only")
                    for name in present if name != expected)
    return errs


def _source_errors(src: Any, path: str) -> FieldErrors:
    if isinstance(src, ObjectMetricSource):
        return _object_errors(src, path)
    if isinstance(src, ExternalMetricSource):
        return _external_errors(src, path)
    if isinstance(src, PodsMetricSource):
        return _pods_errors(src, path)
    assert isinstance(src, ResourceMetricSource | ContainerResourceMetricSource)
    return _resource_errors(src, path)


def _object_errors(src: ObjectMetricSource, path: str) -> FieldErrors:
    ref = src.described_object
    errs = [required(f"{path}.describedObject.{f}") for f in ("kind", "name")
            if not getattr(ref, f)]
    errs += [invalid(f"{path}.describedObject.{f}", getattr(ref, f), why)
             for f in ("kind", "name") if getattr(ref, f)
             for why in _path_segment_errors(getattr(ref, f))]
    if ref.api_version and ref.api_version.count("/") > 1:  # schema.ParseGroupVersion
        errs.append(invalid(f"{path}.describedObject.apiVersion", ref.api_version,
                            f"unexpected GroupVersion string: {ref.api_version}"))
    errs += _identifier_errors(src.metric, f"{path}.metric")
    errs += _target_errors(src.target, f"{path}.target")
    if src.target.value is None and src.target.average_value is None:
        errs.append(required(f"{path}.target.averageValue",
                             "must set either a target value or averageValue"))
    return errs


def _external_errors(src: ExternalMetricSource, path: str) -> FieldErrors:
    errs = _identifier_errors(src.metric, f"{path}.metric")
    errs += _target_errors(src.target, f"{path}.target")
    t = src.target
    return errs + _one_of(path, ("value", t.value), ("averageValue", t.average_value),
                          need=("averageValue", _NEED_VALUE), both=("value", _BOTH_VALUES))


def _pods_errors(src: PodsMetricSource, path: str) -> FieldErrors:
    errs = _identifier_errors(src.metric, f"{path}.metric")
    errs += _target_errors(src.target, f"{path}.target")
    if src.target.average_value is None:
        errs.append(required(f"{path}.target.averageValue",
                             "must specify a positive target averageValue"))
    return errs


def _resource_errors(src: ResourceMetricSource | ContainerResourceMetricSource,
                     path: str) -> FieldErrors:
    errs: FieldErrors = []
    if not src.name:
        errs.append(required(f"{path}.name", "must specify a resource name"))
    elif isinstance(src, ContainerResourceMetricSource) and \
            (why := container_resource_name_error(src.name)) is not None:
        errs.append(invalid(f"{path}.name", src.name, why))
    if isinstance(src, ContainerResourceMetricSource):
        if not src.container:
            errs.append(required(f"{path}.container", "must specify a container"))
        else:
            errs += [invalid(f"{path}.container", src.container, why)
                     for why in dns_label_errors(src.container)]
    errs += _target_errors(src.target, f"{path}.target")
    t = src.target
    return errs + _one_of(path, ("averageUtilization", t.average_utilization),
                          ("averageValue", t.average_value),
                          need=("averageUtilization", _NEED_RESOURCE),
                          both=("averageValue", _BOTH_RESOURCE))


def _one_of(path: str, a: tuple[str, Any], b: tuple[str, Any], *, need: tuple[str, str],
            both: tuple[str, str]) -> FieldErrors:
    """A source's target sets one of two numbers: neither is `need` (Required at its field),
    both is `both` (Forbidden at its field)."""
    set_a, set_b = a[1] is not None, b[1] is not None
    if not (set_a or set_b):
        return [required(f"{path}.target.{need[0]}", need[1])]
    if set_a and set_b:
        return [forbidden(f"{path}.target.{both[0]}", both[1])]
    return []


def _target_errors(t: MetricTarget, path: str) -> FieldErrors:
    errs: FieldErrors = []
    if not t.type:
        errs.append(required(f"{path}.type", "must specify a metric target type"))
    if t.type not in TARGET_TYPES:
        errs.append(invalid(f"{path}.type", t.type,
                            "must be either Utilization, Value, or AverageValue"))
    for field, value in (("value", t.value), ("averageValue", t.average_value)):
        if value is None:
            continue
        try:
            positive = parse_quantity(value) > 0
        except (TypeError, ValueError):
            errs.append(invalid(f"{path}.{field}", value, _QUANTITY_WHY))
            continue
        if not positive:
            errs.append(invalid(f"{path}.{field}", value, "must be positive"))
    if t.average_utilization is not None and t.average_utilization < 1:
        errs.append(invalid(f"{path}.averageUtilization", t.average_utilization,
                            "must be greater than 0"))
    return errs


def _identifier_errors(m: MetricIdentifier, path: str) -> FieldErrors:
    if not m.name:
        return [required(f"{path}.name", "must specify a metric name")]
    return [invalid(f"{path}.name", m.name, why) for why in _path_segment_errors(m.name)]


def _path_segment_errors(name: str) -> list[str]:
    """apimachinery's IsPathSegmentName."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def spec_bound_errors(min_replicas: int | None, max_replicas: int,
                      old_min_replicas: int | None = None) -> FieldErrors:
    """validateHorizontalPodAutoscalerSpec's replica bounds. The lower bound of minReplicas
    is 1, or 0 when the stored HPA already has minReplicas 0 (kube's ratchet; the
    HPAScaleToZero feature gate, alpha and off by default, is not modelled)."""
    errs: FieldErrors = []
    lower = 0 if old_min_replicas == 0 else 1
    if min_replicas is not None and min_replicas < lower:
        errs.append(invalid("spec.minReplicas", min_replicas,
                            f"must be greater than or equal to {lower}"))
    if max_replicas == 0:
        errs.append(required("spec.maxReplicas", "must be set and greater than 0"))
    elif max_replicas < 0:
        errs.append(invalid("spec.maxReplicas", max_replicas,
                            "must be greater than or equal to 1"))
    if min_replicas is not None and max_replicas < min_replicas:
        errs.append(invalid("spec.maxReplicas", max_replicas,
                            "must be greater than or equal to `minReplicas`"))
    return errs


def install_hpa_validation(cluster: MemoryCluster) -> None:
    """The embedded API server refuses an HorizontalPodAutoscaler whose replica bounds or
    metrics kube-apiserver would refuse, every problem listed (`Invalid.field`: the first
    one's path)."""

    def check(hpa: HorizontalPodAutoscaler, old: HorizontalPodAutoscaler | None) -> None:
        spec = hpa.spec
        errs = spec_bound_errors(spec.min_replicas, spec.max_replicas,
                                 old.spec.min_replicas if old is not None else None)
        errs += [e for j, metric in enumerate(spec.metrics or ())
                 for e in metric_errors(metric, f"spec.metrics[{j}]")]
        raise_errors(hpa, errs, resource="HorizontalPodAutoscaler.autoscaling")

    cluster.register_admission(HorizontalPodAutoscaler, validate=check)
