"""autoscaling/v2 HPA validation, ported from kube 1.36's
pkg/apis/autoscaling/validation/validation_test.go: the replica bounds against
`spec_bound_errors` (the minReplicas/maxReplicas rows of TestValidateHorizontalPodAutoscaler,
TestValidateHorizontalPodAutoscalerScaleToZeroDisabled and ...ScaleToZeroUpdateDisabled, at
the end of this file), and metrics against `metric_errors`: every metric row
of TestValidateHorizontalPodAutoscaler (the valid HPAs' metrics, the error rows about
`metrics`, and its loop giving each source spec the three other source types), plus the
metric half of TestValidateHorizontalPodAutoscalerUpdateInvalidHPA (a describedObject whose
apiVersion is no GroupVersion). kube's rows have no names: ids say the source and kube's
expected text.

Each metric is the JSON a user writes (a Go field left unset is a key left out, a Go zero
struct written out is {}; quantities as kube prints them, e.g. 300m), judged at
`spec.metrics[0]`; an error row passes when some error, rendered as kube's `path: message`,
contains kube's expected substring (and, where the row implies a field, is at that field).
kube checks only the first error; the order of ours is not checked. A missing `kind`,
`metric` or `target` key reads as empty, as kube decodes it, so validation names the field
required. One row is a strict xfail, its reason naming the difference: a bad container
resource name is worded otherwise (one error where kube gives two).

Not ported: the scaleTargetRef rows (kind, name, apiVersion required/invalid; the operator
writes the reference), TestValidateScale, TestValidateBehavior, the ScaleToZeroEnabled tests
(the HPAScaleToZero feature gate, alpha and off by default, is not modelled),
ConfigurableTolerance and the other UpdateInvalidHPA tests (behavior, update ratcheting of an
unchanged invalid apiVersion, which needs an old object that `metric_errors` does not take).
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.cluster.hpavalidation import metric_errors, spec_bound_errors

PATH = "spec.metrics[0]"
SELECTOR = {"matchLabels": {"label": "value"}}  # metav1.ParseToLabelSelector("label=value")


def util(n: int) -> dict[str, Any]:
    return {"type": "Utilization", "averageUtilization": n}


def avg(q: str, kind: str = "AverageValue") -> dict[str, Any]:
    return {"type": kind, "averageValue": q}


def val(q: str) -> dict[str, Any]:
    return {"type": "Value", "value": q}


def resource(target: dict[str, Any], name: str | None = "cpu") -> dict[str, Any]:
    src: dict[str, Any] = {"target": target}
    if name is not None:
        src["name"] = name
    return {"type": "Resource", "resource": src}


def container_resource(target: dict[str, Any], name: str | None = "cpu",
                       container: str | None = "test-application") -> dict[str, Any]:
    src: dict[str, Any] = {"target": target}
    if name is not None:
        src["name"] = name
    if container is not None:
        src["container"] = container
    return {"type": "ContainerResource", "containerResource": src}


def pods(target: dict[str, Any], metric: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "Pods",
            "pods": {"metric": {"name": "somemetric"} if metric is None else metric,
                     "target": target}}


def obj(target: dict[str, Any], described: dict[str, Any] | None = None,
        metric: dict[str, Any] | None = None) -> dict[str, Any]:
    src: dict[str, Any] = {
        "describedObject": described or {"kind": "ReplicationController", "name": "myrc"},
        "target": target,
    }
    if metric is not None:
        src["metric"] = metric
    return {"type": "Object", "object": src}


def external(target: dict[str, Any] | None, name: str | None = "somemetric") -> dict[str, Any]:
    metric: dict[str, Any] = {"selector": SELECTOR}
    if name is not None:
        metric["name"] = name
    src: dict[str, Any] = {"metric": metric}
    if target is not None:
        src["target"] = target
    return {"type": "External", "external": src}


SOMEMETRIC = {"name": "somemetric"}

# TestValidateHorizontalPodAutoscaler's successCases (all but the one without metrics).
VALID_ROWS: list[tuple[str, dict[str, Any]]] = [
    ("resource cpu Utilization 70", resource(util(70))),
    ("resource cpu AverageValue 300m", resource(avg("300m"))),
    ("pods somemetric AverageValue 300m", pods(avg("300m"))),
    ("containerResource cpu Utilization 70",
     container_resource(util(70), container="test-container")),
    ("containerResource cpu AverageValue 300m",
     container_resource(avg("300m"), container="test-container")),
    ("object ReplicationController Value 300m", obj(val("300m"), metric=SOMEMETRIC)),
    ("object networking.k8s.io/v1 Ingress Value 300m",
     obj(val("300m"),
         {"apiVersion": "networking.k8s.io/v1", "name": "my-ingress", "kind": "Ingress"},
         {"name": "requests-per-second"})),
    ("external Value 300m", external(val("300m"))),
    ("external AverageValue 300m", external(avg("300m"))),
    ("external AverageValue 300m, Deployment target", external(avg("300m"))),
]


@pytest.mark.parametrize("metric", [r[1] for r in VALID_ROWS], ids=[r[0] for r in VALID_ROWS])
def test_valid_metric(metric):
    assert metric_errors(metric, PATH) == []


def bad(name: str, metric: dict[str, Any], msg: str, field: str | None,
        xfail: str | None = None) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(metric, msg, field, id=name, marks=marks)


# TestValidateHorizontalPodAutoscaler's errorCases about metrics: bad(id, metric, kube's msg,
# the field under spec.metrics[0] the error is at (None: the row implies none), xfail=why).
ERROR_ROWS: list[Any] = [
    bad("resource: may not set both a target raw value and a target utilization",
        resource({**util(70), "averageValue": "300m"}),
        "may not set both a target raw value and a target utilization",
        "resource.target.averageValue"),
    bad("containerResource: may not set both a target raw value and a target utilization",
        container_resource({**util(70), "averageValue": "300m"}),
        "may not set both a target raw value and a target utilization",
        "containerResource.target.averageValue"),
    bad("resource: must specify a resource name", resource(util(70), name=None),
        "must specify a resource name", "resource.name"),
    bad("containerResource: must specify a resource name",
        container_resource(util(70), name=None),
        "must specify a resource name", "containerResource.name"),
    bad("containerResource: InvalidResource must be a standard resource type",
        container_resource(util(70), "InvalidResource"),
        'Invalid value: "InvalidResource": must be a standard resource type or fully qualified',
        "containerResource.name",
        xfail="kube gives two errors, 'Invalid value: \"InvalidResource\": must be a "
              "standard resource type or fully qualified' then '...: must be a standard "
              "resource for containers'; Phalanx gives one, 'Invalid value: "
              "\"InvalidResource\": 'InvalidResource' must be a standard resource for "
              "containers (cpu, memory, ephemeral-storage, hugepages-<size>) or an extended "
              "resource such as nvidia.com/gpu'"),
    bad("resource: averageUtilization -10 must be greater than 0", resource(util(-10)),
        "must be greater than 0", "resource.target.averageUtilization"),
    bad("containerResource: averageUtilization -10 must be greater than 0",
        container_resource(util(-10)),
        "must be greater than 0", "containerResource.target.averageUtilization"),
    bad("containerResource: must specify a container",
        container_resource(util(-10), container=None),
        "must specify a container", "containerResource.container"),
    bad("containerResource: container ---*** is invalid",
        container_resource(util(-10), container="---***"),
        'Invalid value: "---***"', "containerResource.container"),
    bad("resource: must set either a target raw value or a target utilization",
        resource({"type": "Value"}),
        "must set either a target raw value or a target utilization",
        "resource.target.averageUtilization"),
    bad("containerResource: must set either a target raw value or a target utilization",
        container_resource({"type": "Value"}),
        "must set either a target raw value or a target utilization",
        "containerResource.target.averageUtilization"),
    bad("pods: must specify a metric name", pods(avg("100m", "Value"), metric={}),
        "must specify a metric name", "pods.metric.name"),
    bad("pods: must specify a positive target averageValue", pods({"type": "Value"}),
        "must specify a positive target averageValue", "pods.target.averageValue"),
    bad("object: must set either a target value or averageValue",
        obj({"type": "Value"}, metric=SOMEMETRIC),
        "must set either a target value or averageValue", "object.target.averageValue"),
    bad("object: describedObject.kind Required",
        obj(val("100m"), {"name": "myrc"}, SOMEMETRIC),
        "object.describedObject.kind: Required", "object.describedObject.kind"),
    bad("object: must specify a metric name", obj(val("100m")),
        "must specify a metric name", "object.metric.name"),
    bad("external: must specify a metric name", external(val("300m"), name=None),
        "must specify a metric name", "external.metric.name"),
    bad("external: metric name foo/../ may not contain '/'",
        external(val("300m"), "foo/../"),
        "'/'", "external.metric.name"),
    bad("external: must set either a target value for metric or a per-pod target",
        external({"type": "Value"}),
        "must set either a target value for metric or a per-pod target",
        "external.target.averageValue"),
    bad("external: value -300m must be positive", external(val("-300m")),
        "must be positive", "external.target.value"),
    bad("external: averageValue -300m must be positive", external(avg("-300m", "Value")),
        "must be positive", "external.target.averageValue"),
    bad("external: may not set both a target value for metric and a per-pod target",
        external({**val("300m"), "averageValue": "300m"}),
        "may not set both a target value for metric and a per-pod target",
        "external.target.value"),
    bad("external: target type boogity", external({"type": "boogity", "value": "300m"}),
        "must be either Utilization, Value, or AverageValue", "external.target.type"),
    bad("external: must specify a metric target type", external({"value": "300m"}),
        "must specify a metric target type", "external.target.type"),
    bad("external: must specify a metric target", external(None),
        "must specify a metric target", "external.target.type"),
    bad("empty metric: must specify a metric source type", {},
        "must specify a metric source type", "type"),
    bad("type InvalidType: Unsupported value", {"type": "InvalidType"},
        "type: Unsupported value", "type"),
    bad("resource and pods: must populate the given metric source only",
        {**resource(avg("100m")), "pods": pods(avg("100m"))["pods"]},
        "must populate the given metric source only", "pods"),
    # TestValidateHorizontalPodAutoscalerUpdateInvalidHPA: the metrics changed, so the
    # describedObject's apiVersion is checked (kube's test wants some error, no text).
    bad("object: describedObject.apiVersion invalidAPIVersion/v1/v3",
        obj(val("300m"), {"kind": "ReplicationController", "name": "myrc",
                          "apiVersion": "invalidAPIVersion/v1/v3"}, SOMEMETRIC),
        "unexpected GroupVersion string", "object.describedObject.apiVersion"),
]


@pytest.mark.parametrize("metric,msg,field", ERROR_ROWS)
def test_invalid_metric(metric, msg, field):
    errs = metric_errors(metric, PATH)
    assert errs
    assert any(msg in f"{p}: {m}" and (field is None or p == f"{PATH}.{field}")
               for p, m in errs), errs


# TestValidateHorizontalPodAutoscaler's last loop: each source spec, typed as each other.
SOURCES: dict[str, dict[str, Any]] = {
    "Resource": resource(avg("100m")),
    "ContainerResource": container_resource(avg("100m")),
    "Pods": pods(avg("100m")),
    "Object": obj(val("100m"),
                  {"kind": "Deployment", "name": "mydeployment", "apiVersion": "apps/v1"},
                  SOMEMETRIC),
}
FIELD_OF = {"Resource": "resource", "ContainerResource": "containerResource",
            "Pods": "pods", "Object": "object"}
MISTYPED = [pytest.param({**spec, "type": wrong}, FIELD_OF[wrong],
                         id=f"{right} source typed {wrong}")
            for right, spec in SOURCES.items() for wrong in SOURCES if wrong != right]


@pytest.mark.parametrize("metric,field", MISTYPED)
def test_source_of_another_type(metric, field):
    errs = metric_errors(metric, PATH)
    assert any(p == f"{PATH}.{field}"
               and "must populate information for the given metric source" in m
               for p, m in errs), errs


# --- replica bounds (validateHorizontalPodAutoscalerSpec) -----------------------------------
# (minReplicas, maxReplicas, the stored HPA's minReplicas on update or None on create,
# kube's expected text or None when valid, the field it is at).
BOUND_ROWS = [
    # TestValidateHorizontalPodAutoscaler: every valid HPA has minReplicas 1, maxReplicas 5.
    pytest.param(1, 5, None, None, None, id="valid HPA: minReplicas 1, maxReplicas 5"),
    pytest.param(-1, 5, None, "must be greater than or equal to 1", "spec.minReplicas",
                 id="minReplicas -1: must be greater than or equal to 1"),
    pytest.param(7, 5, None, "must be greater than or equal to `minReplicas`",
                 "spec.maxReplicas", id="minReplicas 7, maxReplicas 5"),
    # TestValidateHorizontalPodAutoscalerScaleToZeroDisabled.
    pytest.param(0, 5, None, "must be greater than or equal to 1", "spec.minReplicas",
                 id="scale to zero disabled: minReplicas 0 refused"),
    # TestValidateHorizontalPodAutoscalerScaleToZeroUpdateDisabled: to 0 refused, from 0 not.
    pytest.param(0, 5, 1, "must be greater than or equal to 1", "spec.minReplicas",
                 id="scale to zero update disabled: 1 -> 0 refused"),
    pytest.param(1, 5, 0, None, None, id="scale to zero update disabled: 0 -> 1 accepted"),
    # The registry's ratchet (validationOptionsForHorizontalPodAutoscaler): an HPA stored
    # with minReplicas 0 keeps it.
    pytest.param(0, 5, 0, None, None, id="stored minReplicas 0 kept"),
    # validateHorizontalPodAutoscalerSpec's maxReplicas checks (no kube row of their own).
    pytest.param(None, 0, None, "Required value: must be set and greater than 0",
                 "spec.maxReplicas", id="maxReplicas 0"),
    pytest.param(None, -1, None, "must be greater than or equal to 1", "spec.maxReplicas",
                 id="maxReplicas -1"),
]


@pytest.mark.parametrize("min_replicas,max_replicas,old_min,msg,field", BOUND_ROWS)
def test_replica_bounds(min_replicas, max_replicas, old_min, msg, field):
    errs = spec_bound_errors(min_replicas, max_replicas, old_min)
    if msg is None:
        assert errs == []
    else:
        assert any(p == field and msg in m for p, m in errs), errs
