"""The rest of the pod spec the scheduler reads, ported from kube 1.36's validation_test.go
(ids = kube's row names): TestValidateSchedulingGates, TestValidatePodCreateWithSchedulingGates,
TestValidateOverhead, TestValidatePodResources, TestValidatePodResourceConsistency,
TestValidatePodResourceNames, and TestValidatePodSpec / TestValidatePod rows on these
fields ("bad nodeName", "bad volume", "populate Overhead", "populate PodLevelResources ...",
"bad OS for PodLevelResources hides bad cpu limit", "basic fields", "just about
everything"). Then how the rules reach users: every error listed, the first one's field
in `Invalid.field`; updates; PodCliqueSet templates.

"bad volume" (a volume with no name and no source) reports only the missing name here: the
API server turns a volume without a source into an emptyDir before validating.
Container names and images, probes, os, DNS policy, hostname, deadlines and image pull
secrets are checked too, one row of ours per rule: test_pod_validation_general.py.
Not ported: TestValidatePodSpec's rows on fields the scheduler does not read (DNS policy,
service account, restart policy, host aliases, security context, deadlines, priority class
and runtime class names, fsGroup / supplemental groups policies), and TestValidatePod's
rows outside the scheduler's fields (metadata names and labels, images, seccomp and
AppArmor, sysctls, pod-deletion-cost, mirror-pod annotations, projected volumes:
service account tokens, ClusterTrustBundle, PodCertificate; StopSignal). Its extended
resource rows are tests/cluster/test_podresources.py's; its affinity, toleration and volume
rows are in the other test_pod_validation_*.py modules.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.grove import PodCliqueSet
from phalanx.api.pod import Pod, PodSpec
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.podresources import (
    _pod_level_name_error,
    overhead_errors,
    pod_level_consistency_errors,
    pod_level_resource_errors,
)
from phalanx.cluster.podvalidation import scheduling_gate_errors
from phalanx.operator.admission import validate_podcliqueset

from .podvalidation_cases import create_verdict, fields, pod_json, spec_errors

NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
             "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
             "[A-Za-z0-9]')")

GATES: dict[str, tuple[list[str] | None, list[tuple[str, str]]]] = {
    "nil gates": (None, []),
    "empty string in gates": (["foo", ""], [
        ("field[1]", 'Invalid value: "": name part must be non-empty'),
        ("field[1]", f'Invalid value: "": {NAME_PART}')]),
    "legal gates": (["foo", "bar"], []),
    "illegal gates": (["foo", "\nbar"], [("field[1]", f'Invalid value: "\\nbar": {NAME_PART}')]),
    "duplicated gates (single duplication)": (
        ["foo", "bar", "bar"], [("field[2]", 'Duplicate value: "bar"')]),
    "duplicated gates (multiple duplications)": (
        ["foo", "bar", "foo", "baz", "foo", "bar"],
        [("field[2]", 'Duplicate value: "foo"'), ("field[4]", 'Duplicate value: "foo"'),
         ("field[5]", 'Duplicate value: "bar"')]),
}


@pytest.mark.parametrize("gates,want", GATES.values(), ids=GATES.keys())
def test_validate_scheduling_gates(gates: list[str] | None,
                                   want: list[tuple[str, str]]) -> None:
    assert scheduling_gate_errors(gates or [], "field") == want


CREATE_WITH_GATES = {
    "create a Pod with nodeName and schedulingGates, feature enabled": (
        {"nodeName": "node", "schedulingGates": [{"name": "foo"}]},
        ("spec.nodeName", "Forbidden: cannot be set until all schedulingGates have been "
                          "cleared")),
    "create a Pod with schedulingGates, feature enabled": (
        {"schedulingGates": [{"name": "foo"}]}, None),
}


@pytest.mark.parametrize("spec,want", CREATE_WITH_GATES.values(), ids=CREATE_WITH_GATES.keys())
def test_validate_pod_create_with_scheduling_gates(spec: dict[str, Any],
                                                   want: tuple[str, str] | None) -> None:
    err = create_verdict(pod_json(spec, name="pod"))
    if want is None:
        assert err is None
    else:
        assert err is not None and err.field == want[0] and want[1] in err.message


def test_validate_overhead() -> None:
    """Success case "Valid Overhead for CPU + Memory"; error case "Invalid Overhead
    Resources"."""
    assert overhead_errors({"cpu": "10", "memory": "10G"}, "overheads") == []
    assert overhead_errors({"my.org": "10m"}, "resources") != []


def _spec(**fields_: Any) -> PodSpec:
    return PodSpec.model_validate({"containers": [{"name": "container"}], **fields_})


POD_RESOURCES = {
    "supported os": ("linux", {
        "requests": {"cpu": "10", "memory": "10Mi"},
        "limits": {"cpu": "20", "memory": "20Mi", "hugepages-2Mi": "100Mi"}}, []),
    "unsupported os": ("windows", {
        "requests": {"cpu": "10", "memory": "10Mi"},
        "limits": {"cpu": "20", "memory": "20Mi", "hugepages-2Mi": "100Mi"}},
        [("spec.resources", "Forbidden: may not be set for a windows pod")]),
    "unsupported resource claims at pod level resources": ("linux", {
        "requests": {"cpu": "10", "memory": "10Mi"},
        "limits": {"cpu": "20", "memory": "20Mi", "hugepages-2Mi": "100Mi"},
        "claims": [{"name": "resource-claim"}]},
        [("spec.resources.claims",
          "Forbidden: claims may not be set for Resources at pod-level")]),
}


@pytest.mark.parametrize("os_name,resources,want", POD_RESOURCES.values(),
                         ids=POD_RESOURCES.keys())
def test_validate_pod_resources(os_name: str, resources: dict[str, Any],
                                want: list[tuple[str, str]]) -> None:
    spec = _spec(resources=resources, os={"name": os_name},
                 resourceClaims=[{"name": "resource-claim"}])
    assert pod_level_resource_errors(spec) == want


def _ctrs(*resources: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]


CPU_MEM = ("cpu", "memory")


def _rl(cpu: str, memory: str, hugepages: str | None = None) -> dict[str, str]:
    out = {"cpu": cpu, "memory": memory}
    if hugepages is not None:
        out["hugepages-2Mi"] = hugepages
    return out


CONSISTENCY: dict[str, tuple[dict[str, Any], list[dict[str, Any]], list[str]]] = {
    "aggregate container requests less than pod requests": (
        {"requests": _rl("10", "10Mi")},
        _ctrs({"requests": _rl("5", "5Mi")}, {"requests": _rl("4", "3Mi")}), []),
    "aggregate container requests equal to pod requests": (
        {"requests": _rl("10", "10Mi")},
        _ctrs({"requests": _rl("5", "5Mi")}, {"requests": _rl("5", "5Mi")}), []),
    "aggregate container requests greater than pod requests": (
        {"requests": _rl("10", "10Mi")},
        _ctrs({"requests": _rl("6", "5Mi")}, {"requests": _rl("8", "7Mi")}),
        ["must be greater than or equal to aggregate container requests"] * 2),
    "container requests with resources unsupported at pod-level": (
        {"requests": _rl("10", "10Mi")},
        _ctrs({"requests": {**_rl("6", "5Mi"), "storage": "10Gi"}},
              {"requests": {**_rl("4", "3Mi"), "storage": "5Gi"}}), []),
    "aggregate container limits less than pod limits": (
        {"limits": _rl("10", "10Mi", "10Mi")},
        _ctrs({"limits": _rl("5", "5Mi", "4Mi")}, {"limits": _rl("4", "3Mi", "4Mi")}), []),
    "aggregate container limits equal to pod limits": (
        {"limits": _rl("10", "10Mi", "8Mi")},
        _ctrs({"limits": _rl("5", "5Mi", "4Mi")}, {"limits": _rl("5", "5Mi", "4Mi")}), []),
    "aggregate container limits greater than pod limits": (
        {"limits": _rl("10", "10Mi")},
        _ctrs({"limits": _rl("5", "5Mi")}, {"limits": _rl("6", "9Mi")}), []),
    "hugepage aggregate container limits greater than pod limits": (
        {"limits": {"cpu": "10", "hugepages-2Mi": "4Mi"}},
        _ctrs({"limits": {"cpu": "6", "hugepages-2Mi": "4Mi"}},
              {"limits": {"cpu": "6", "hugepages-2Mi": "4Mi"}}),
        ["must be greater than or equal to aggregate container limits"]),
    "individual container limits greater than pod limits": (
        {"limits": _rl("10", "10Mi", "2Mi")},
        _ctrs({"limits": _rl("11", "12Mi", "4Mi")}),
        ["must be greater than or equal to aggregate container limits"]
        + ["must be less than or equal to pod limits"] * 3),
}


@pytest.mark.parametrize("pod,containers,want", CONSISTENCY.values(), ids=CONSISTENCY.keys())
def test_validate_pod_resource_consistency(pod: dict[str, Any],
                                           containers: list[dict[str, Any]],
                                           want: list[str]) -> None:
    spec = PodSpec.model_validate({"containers": containers, "resources": pod})
    errs = pod_level_consistency_errors(spec, pod.get("requests") or {},
                                        pod.get("limits") or {}, "resources")
    assert len(errs) == len(want), errs
    for words in want:
        assert any(words in message for _, message in errs), (words, errs)


@pytest.mark.parametrize("name,fails", [
    ("memory", False), ("cpu", False), ("storage", True), ("hugepages-2Mi", False),
    ("hugepages-1Gi", False), ("requests.cpu", True), ("requests.memory", True),
    ("requests.storage", True), ("limits.cpu", True), ("limits.memory", True),
    ("limits.storage", True), ("network", True), ("disk", True), ("", True), (".", True),
    ("..", True), ("my.favorite.app.co/12345", True), ("my.favorite.app.co/_12345", True),
    ("my.favorite.app.co/12345_", True), ("kubernetes.io/..", True),
    ("kubernetes.io/" + "a" * 64, True), ("kubernetes.io/cpu", True),
    ("kubernetes.io/memory", True), ("kubernetes.io//", True), ("kubernetes.io", True),
    ("kubernetes.io/will/not/work/", True),
])
def test_validate_pod_resource_names(name: str, fails: bool) -> None:
    assert (_pod_level_name_error(name) is not None) == fails


SPEC_ROWS: dict[str, tuple[dict[str, Any], str | None]] = {
    "bad nodeName": ({"nodeName": "node name"}, "spec.nodeName"),
    "bad volume": ({"volumes": [{}]}, "spec.volumes[0].name"),
    "populate PodLevelResources without OS": (
        {"resources": {"limits": {"cpu": "100m", "memory": "200Mi"}}}, None),
    "populate PodLevelResources with valid OS": (
        {"resources": {"limits": {"cpu": "100m", "memory": "200Mi"}}, "os": {"name": "linux"}},
        None),
    "bad OS for PodLevelResources hides bad cpu limit": (
        {"resources": {"limits": {"cpu": "100m", "memory": "200Mi"}},
         "containers": [{"name": "container", "image": "i",
                         "resources": {"limits": {"cpu": "200m", "memory": "200Mi"}}}],
         "os": {"name": "windows"}}, "spec.resources"),
    # TestValidatePod
    "basic fields": ({}, None),
    "just about everything": (
        {"initContainers": [{"name": "ictr", "image": "image"}],
         "volumes": [{"name": "vol", "emptyDir": {}}], "nodeSelector": {"key": "value"},
         "nodeName": "foobar", "serviceAccountName": "acct"}, None),
}


@pytest.mark.parametrize("spec,field", SPEC_ROWS.values(), ids=SPEC_ROWS.keys())
def test_validate_pod_spec(spec: dict[str, Any], field: str | None) -> None:
    name = "abc.123.do-re-mi" if field is None else "123"
    err = create_verdict(pod_json(spec, name=name))
    assert (err and err.field) == field, err and err.message


def test_validate_pod_spec_populate_overhead() -> None:
    """kube's row "populate Overhead": pod validation accepts it. (Creating such a pod is
    refused, 403, by the RuntimeClass admission plugin, as on a real server, since no
    RuntimeClass set that overhead: tests/cluster/test_runtimeclass_admission.py.)"""
    assert spec_errors({"overhead": {}}) == []


def test_pod_level_requests_default_from_the_containers() -> None:
    """Limits at pod level only: cpu / memory requests default to the containers' sum, so
    containers asking for more than the pod's limit are refused, as on a real server."""
    spec = _spec(resources={"limits": {"cpu": "1"}},
                 containers=[{"name": "a", "resources": {"requests": {"cpu": "2"}}}])
    assert fields(pod_level_resource_errors(spec)) == ["spec.resources.requests"]
    assert pod_level_resource_errors(_spec(resources={"limits": {"cpu": "4"}})) == []


# ------------------------------------------------------------------ how errors reach users


def test_all_errors_listed_in_api_server_order_first_field_named() -> None:
    spec = {"tolerations": [{"key": "bad key!", "operator": "Exists"}],
            "nodeSelector": {"zone": "-a"},
            "topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "zone",
                                           "whenUnsatisfiable": "DoNotSchedule"}],
            "volumes": [{"name": "Vol"}]}
    err = create_verdict(pod_json(spec))
    assert err is not None
    assert err.field == "spec.volumes[0].name"
    order = [err.message.index(f) for f in (
        "spec.volumes[0].name", "spec.nodeSelector", "spec.topologySpreadConstraints[0]",
        "spec.tolerations[0].key")]
    assert order == sorted(order), err.message
    assert err.message.startswith('Pod "123" is invalid: [')


def test_updates_check_what_may_change() -> None:
    async def main() -> None:
        c = MemoryCluster()
        p = await c.create(Pod.model_validate(pod_json(
            {"schedulingGates": [{"name": "example.com/wait"}]}, name="p")))
        p.spec.node_selector = {"zone": "not valid!"}
        with pytest.raises(Invalid) as err:
            await c.update(p)
        assert err.value.field == "spec.nodeSelector"
        p = await c.get(Pod, "p", "ns")
        p.spec.affinity = Pod.model_validate(pod_json({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}})
        ).spec.affinity
        with pytest.raises(Invalid) as err:
            await c.update(p)
        assert err.value.field == ("spec.affinity.nodeAffinity."
                                   "requiredDuringSchedulingIgnoredDuringExecution"
                                   ".nodeSelectorTerms")
        p = await c.get(Pod, "p", "ns")
        p.spec.scheduling_gates = []
        await c.update(p)  # a gate removal touches nothing else

    run_virtual(main)


def _pcs(pod_spec: dict[str, Any]) -> PodCliqueSet:
    return PodCliqueSet.model_validate({
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "template": {"cliques": [
            {"name": "ok", "spec": {"roleName": "ok", "replicas": 1, "podSpec": {
                "containers": [{"name": "c", "image": "i"}]}}},
            {"name": "bad", "spec": {"roleName": "bad", "replicas": 1, "podSpec": {
                "containers": [{"name": "c", "image": "i"}], **pod_spec}}}]}}})


def test_pod_templates_get_the_same_errors_under_their_path() -> None:
    errs = validate_podcliqueset(_pcs({"tolerations": [{"operator": "Equal", "value": "x"}],
                                       "affinity": {"nodeAffinity": {
                                           "requiredDuringSchedulingIgnoredDuringExecution": {
                                               "nodeSelectorTerms": [{"matchFields": [
                                                   {"key": "metadata.name", "operator": "In",
                                                    "values": ["a", "b"]}]}]}}}}))
    at = "spec.template.cliques[1].spec.podSpec"
    assert fields(errs) == [
        f"{at}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchFields[0].values",
        f"{at}.tolerations[0].operator"]
    assert validate_podcliqueset(_pcs({"nodeSelector": {"zone": "a"}})) == []


def test_a_plain_pod_has_nothing_to_report() -> None:
    assert spec_errors({"containers": [{"name": "c", "image": "x", "resources": {
        "requests": {"cpu": "1", "memory": "1Gi"}}}],
        "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}]}) == []
