"""The RuntimeClass admission plugin on the embedded cluster (phalanx.cluster.runtimeclass).

Ported row by row (ids = kube's names) from Kubernetes 1.36:
- plugin/pkg/admission/runtimeclass/admission_test.go: TestSetOverhead, TestSetScheduling,
  TestAdmit, TestValidate, TestValidateOverhead;
- pkg/util/tolerations/tolerations_test.go: TestIsSuperset, TestMergeTolerations and the
  MergeTolerations half of TestFuzzed (the merge the plugin uses).
Not ported: TestValidateInitialization (a Go plugin's wiring to its informer and client; the
embedded cluster reads its own store), TestVerifyAgainstWhitelist and the whitelist half of
TestFuzzed (PodTolerationRestriction's helper, which RuntimeClass does not use).

TestAdmit's "found by lister" and "found by client" differ in kube only by informer lag,
which the embedded cluster does not have: both are a class that exists (named
"runtime-class-name": kube's "runtimeClassName" is no valid object name, which its test,
bypassing the API server, never notices).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from phalanx.api.core import Pod
from phalanx.api.pod import Toleration
from phalanx.api.runtimeclass import Overhead, RuntimeClass, Scheduling
from phalanx.cluster.client import Forbidden
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.cluster.runtimeclass import (
    is_superset,
    merge_tolerations,
    set_overhead,
    set_scheduling,
    validate_overhead,
)

OVERHEAD = {"cpu": "100m", "memory": "1"}


def overhead_pod(name: str, containers: int = 1, resources: dict[str, Any] | None = None,
                 set_overhead_: bool = False) -> Pod:
    """newOverheadValidPod."""
    return Pod.model_validate({
        "metadata": {"name": name, "namespace": "test"},
        "spec": {"containers": [{"name": f"foo-{i}", "image": f"foo:V{i}",
                                 **({"resources": resources} if resources else {})}
                                for i in range(containers)],
                 **({"overhead": dict(OVERHEAD)} if set_overhead_ else {})}})


GUARANTEED = {"limits": {"cpu": "1", "memory": "10"}, "requests": {"cpu": "1", "memory": "10"}}


def runtime_class(overhead: dict[str, str] | None = None, *,
                  scheduling: Scheduling | None = None) -> RuntimeClass:
    return RuntimeClass.model_validate({"metadata": {"name": "foo"}, "handler": "bar"}) \
        .model_copy(update={"overhead": Overhead(pod_fixed=overhead) if overhead else None,
                            "scheduling": scheduling})


def raises_forbidden(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except Forbidden:
        return True
    return False


# --- TestSetOverhead --------------------------------------------------------------------------


@pytest.mark.parametrize(("rc", "p", "error", "want"), [
    pytest.param(runtime_class(OVERHEAD), overhead_pod("no-resource-req-no-overhead"), False,
                 OVERHEAD, id="overhead, no container requirements"),
    pytest.param(runtime_class(OVERHEAD), overhead_pod("guaranteed", resources=GUARANTEED), False,
                 OVERHEAD, id="overhead, guaranteed pod"),
    pytest.param(runtime_class({"cpu": "10", "memory": "10G"}),
                 overhead_pod("empty-requiremennts-overhead", set_overhead_=True), True, None,
                 id="overhead, pod with differing overhead already set"),
    pytest.param(runtime_class(OVERHEAD),
                 overhead_pod("empty-requiremennts-overhead", set_overhead_=True), False,
                 OVERHEAD, id="overhead, pod with same overhead already set"),
])
def test_set_overhead(rc: RuntimeClass, p: Pod, error: bool, want: Any) -> None:
    assert raises_forbidden(set_overhead, p, rc) == error
    if not error:
        assert p.spec.overhead == want


# --- TestSetScheduling ------------------------------------------------------------------------


def tol(key: str, value: str) -> Toleration:
    return Toleration(key=key, operator="Equal", value=value, effect="NoSchedule")


def scheduling_pod(selector: dict[str, str] | None, tolerations: list[Toleration] | None) -> Pod:
    """newSchedulingValidPod."""
    return Pod.model_validate({"metadata": {"name": "p", "namespace": "test"},
                               "spec": {"containers": [{"name": "c"}]}}).model_copy(
        update={"spec": Pod.model_validate({"spec": {"containers": [{"name": "c"}]}}).spec
                .model_copy(update={"node_selector": selector, "tolerations": tolerations})})


@pytest.mark.parametrize(("scheduling", "p", "error", "selector", "tolerations"), [
    pytest.param(None, scheduling_pod({"foo": "bar"}, []), False, {"foo": "bar"}, [],
                 id="scheduling, nil scheduling"),
    pytest.param(Scheduling(node_selector={"foo": "conflict"}),
                 scheduling_pod({"foo": "bar"}, []), True, None, None,
                 id="scheduling, conflict node selector"),
    pytest.param(Scheduling(node_selector={"foo": "bar"}), scheduling_pod(None, None), False,
                 {"foo": "bar"}, None, id="scheduling, nil node selector"),
    pytest.param(Scheduling(node_selector={"foo": "bar"}),
                 scheduling_pod({"foo": "bar"}, None), False, {"foo": "bar"}, None,
                 id="scheduling, node selector with the same key value"),
    pytest.param(Scheduling(node_selector={"foo": "bar", "fizz": "buzz"}),
                 scheduling_pod({"foo": "bar"}, None), False, {"foo": "bar", "fizz": "buzz"},
                 None, id="scheduling, node selector with different key value"),
    pytest.param(Scheduling(tolerations=[tol("foo", "bar"), tol("fizz", "buzz")]),
                 scheduling_pod({"foo": "bar"}, [tol("foo", "bar")]), False, {"foo": "bar"},
                 [tol("foo", "bar"), tol("fizz", "buzz")],
                 id="scheduling, multiple tolerations"),
])
def test_set_scheduling(scheduling: Scheduling | None, p: Pod, error: bool, selector: Any,
                        tolerations: Any) -> None:
    rc = runtime_class(scheduling=scheduling)
    assert raises_forbidden(set_scheduling, p, rc) == error
    if not error:
        assert p.spec.node_selector == selector
        assert p.spec.tolerations == tolerations


def test_conflict_message_names_both_values() -> None:
    rc = runtime_class(scheduling=Scheduling(node_selector={"foo": "conflict"}))
    with pytest.raises(Forbidden) as err:
        set_scheduling(scheduling_pod({"foo": "bar"}, []), rc)
    assert str(err.value) == ('pods "p" is forbidden: conflict: runtimeClass.scheduling.'
                              "nodeSelector[foo] = conflict; pod.spec.nodeSelector[foo] = bar")


# --- TestAdmit (on the embedded cluster) ------------------------------------------------------


def create(objects: list[Any]) -> Any:
    """Create `objects` in order on a fresh MemoryCluster: the last one's stored form, or
    the Forbidden it got."""

    async def main() -> Any:
        c = MemoryCluster()
        for obj in objects[:-1]:
            await c.create(obj)
        try:
            return await c.create(objects[-1])
        except Forbidden as err:
            return err

    return run_virtual(main)


def named_class(name: str = "runtime-class-name", **fields: Any) -> RuntimeClass:
    return RuntimeClass.model_validate({"metadata": {"name": name}, "handler": "bar", **fields})


def class_pod(runtime_class_name: str | None = "runtime-class-name", **spec: Any) -> Pod:
    return Pod.model_validate({"metadata": {"name": "podname", "namespace": "default"}, "spec": {
        "containers": [{"name": "c", "image": "i"}],
        **({"runtimeClassName": runtime_class_name} if runtime_class_name else {}), **spec}})


@pytest.mark.parametrize(("objects", "error"), [
    pytest.param([named_class(), class_pod()], False, id="runtimeClass found by lister"),
    pytest.param([named_class(), class_pod()], False, id="runtimeClass found by client"),
    pytest.param([class_pod()], True, id="runtimeClass not found by lister nor client"),
])
def test_admit(objects: list[Any], error: bool) -> None:
    got = create(objects)
    assert isinstance(got, Forbidden) == error
    if error:
        assert got.code == 403
        assert str(got) == ('pods "podname" is forbidden: pod rejected: RuntimeClass '
                            '"runtime-class-name" not found')


# --- TestValidate (the plugin's Validate: the pod names no class) -----------------------------


@pytest.mark.parametrize(("p", "error"), [
    pytest.param(overhead_pod("no-resource-req-no-overhead", resources=GUARANTEED,
                              set_overhead_=True), True,
                 id="No Overhead in RunntimeClass, Overhead set in pod"),
    pytest.param(overhead_pod("no-resource-req-no-overhead", set_overhead_=True), True,
                 id="Non-matching Overheads"),
    pytest.param(overhead_pod("no-resource-req-no-overhead"), False, id="Matching Overheads"),
])
def test_validate(p: Pod, error: bool) -> None:
    assert p.spec.runtime_class_name is None
    assert raises_forbidden(validate_overhead, p, None) == error
    got = create([p])
    assert isinstance(got, Forbidden) == error


# --- TestValidateOverhead ---------------------------------------------------------------------


@pytest.mark.parametrize(("rc", "p", "error"), [
    pytest.param(runtime_class(OVERHEAD), overhead_pod("no-requirements"), True,
                 id="Overhead part of RuntimeClass, no Overhead defined in pod"),
    pytest.param(runtime_class(), overhead_pod("no-resource-req-no-overhead",
                                               resources=GUARANTEED, set_overhead_=True), True,
                 id="No Overhead in RunntimeClass, Overhead set in pod"),
    pytest.param(None, overhead_pod("no-resource-req-no-overhead", resources=GUARANTEED,
                                    set_overhead_=True), True,
                 id="No RunntimeClass, Overhead set in pod"),
    pytest.param(runtime_class({"cpu": "10", "memory": "10G"}),
                 overhead_pod("no-resource-req-no-overhead", set_overhead_=True), True,
                 id="Non-matching Overheads"),
    pytest.param(runtime_class(OVERHEAD),
                 overhead_pod("no-resource-req-no-overhead", set_overhead_=True), False,
                 id="Matching Overheads"),
])
def test_validate_overhead(rc: RuntimeClass | None, p: Pod, error: bool) -> None:
    assert raises_forbidden(validate_overhead, p, rc) == error


def test_overheads_are_compared_as_quantities() -> None:
    """apimachinery's semantic equality: 100m equals 0.1."""
    p = overhead_pod("p", set_overhead_=True)
    p.spec.overhead = {"cpu": "0.1", "memory": "1"}
    assert not raises_forbidden(validate_overhead, p, runtime_class(OVERHEAD))


# --- tolerations_test.go -------------------------------------------------------------------


def t(key: str = "", op: str = "Exists", value: str = "", effect: str = "",
      seconds: int | None = None) -> Toleration:
    return Toleration(key=key or None, operator=op, value=value or None,  # type: ignore[arg-type]
                      effect=effect or None, toleration_seconds=seconds)  # type: ignore[arg-type]


TOLERATIONS: dict[str, Toleration] = {
    "all": t(),
    "all-nosched": t(effect="NoSchedule"),
    "all-noexec": t(effect="NoExecute"),
    "foo": t("foo"),
    "foo-bar": t("foo", "Equal", "bar"),
    "foo-nosched": t("foo", effect="NoSchedule"),
    "foo-bar-nosched": t("foo", "Equal", "bar", "NoSchedule"),
    "foo-baz-nosched": t("foo", "Equal", "baz", "NoSchedule"),
    "faz-nosched": t("faz", effect="NoSchedule"),
    "faz-baz-nosched": t("faz", "Equal", "baz", "NoSchedule"),
    "foo-prefnosched": t("foo", effect="PreferNoSchedule"),
    "foo-noexec": t("foo", effect="NoExecute"),
    "foo-bar-noexec": t("foo", "Equal", "bar", "NoExecute"),
    "foo-noexec-10": t("foo", effect="NoExecute", seconds=10),
    "foo-noexec-0": t("foo", effect="NoExecute", seconds=0),
    "foo-bar-noexec-10": t("foo", "Equal", "bar", "NoExecute", 10),
}

SUPERSETS: dict[str, list[str]] = {
    "all": [n for n in TOLERATIONS if n != "all"],
    "all-nosched": ["foo-nosched", "foo-bar-nosched", "foo-baz-nosched", "faz-nosched",
                    "faz-baz-nosched"],
    "all-noexec": ["foo-noexec", "foo-bar-noexec", "foo-noexec-10", "foo-noexec-0",
                   "foo-bar-noexec-10"],
    "foo": ["foo-bar", "foo-nosched", "foo-bar-nosched", "foo-baz-nosched", "foo-prefnosched",
            "foo-noexec", "foo-bar-noexec", "foo-noexec-10", "foo-noexec-0", "foo-bar-noexec-10"],
    "foo-bar": ["foo-bar-nosched", "foo-bar-noexec", "foo-bar-noexec-10"],
    "foo-nosched": ["foo-bar-nosched", "foo-baz-nosched"],
    "foo-bar-nosched": [],
    "faz-nosched": ["faz-baz-nosched"],
    "faz-baz-nosched": [],
    "foo-prenosched": [],  # (sic: a name missing from the map, as in kube's table)
    "foo-noexec": ["foo-noexec", "foo-bar-noexec", "foo-noexec-10", "foo-noexec-0",
                   "foo-bar-noexec-10"],
    "foo-bar-noexec": ["foo-bar-noexec-10"],
    "foo-noexec-10": ["foo-noexec-0", "foo-bar-noexec-10"],
    "foo-noexec-0": [],
    "foo-bar-noexec-10": [],
}


@pytest.mark.parametrize("name", list(SUPERSETS))
def test_is_superset(name: str) -> None:
    """Go reads the missing "foo-prenosched" as the zero Toleration (a key-less Equal)."""
    ss = TOLERATIONS.get(name, Toleration())
    for other, tol_ in TOLERATIONS.items():
        want = other == name or other in SUPERSETS[name]
        assert is_superset(ss, tol_) == want, (name, other)


def names(*keys: str) -> list[Toleration]:
    return [TOLERATIONS[k] for k in keys]


@pytest.mark.parametrize(("a", "b", "want"), [
    pytest.param(["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                 ["foo-prefnosched", "foo-baz-nosched"],
                 ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10", "foo-prefnosched",
                  "foo-baz-nosched"], id="disjoint"),
    pytest.param(["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                 ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                 ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"], id="duplicate"),
    pytest.param(["foo-bar-nosched", "foo-baz-nosched"], ["foo-nosched", "faz-baz-nosched"],
                 ["foo-nosched", "faz-baz-nosched"], id="merge redundant"),
    pytest.param(["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"], ["all"], ["all"],
                 id="merge all"),
    pytest.param(["all"], ["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"], ["all"],
                 id="merge into all"),
])
def test_merge_tolerations(a: list[str], b: list[str], want: list[str]) -> None:
    assert merge_tolerations(names(*a), names(*b)) == names(*want)


def test_fuzzed_merge_tolerations() -> None:
    """TestFuzzed/MergeTolerations: every input toleration is covered by the merge."""
    r = random.Random(1234)
    effects = ["", "NoExecute", "NoSchedule", "PreferNoSchedule"]

    def gen() -> Toleration:
        effect = r.choice(effects)
        if r.random() < 0.01:
            return TOLERATIONS["all"]
        key = "a" * (r.randrange(6) + 1)
        if r.random() < 0.3:
            op, value = "Exists", ""
        else:
            op, value = "Equal", "b" * (r.randrange(6) + 1)
        seconds = r.randrange(10) if effect == "NoExecute" and r.random() < 0.5 else None
        return t(key, op, value, effect, seconds)

    for _ in range(1000):
        a = [gen() for _ in range(r.randrange(10))]
        b = [gen() for _ in range(r.randrange(10))]
        result = merge_tolerations(a, b)
        for x in a + b:
            assert any(is_superset(m, x) for m in result), (a, b, result)
