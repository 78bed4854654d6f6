"""spec.topologySpreadConstraints validation, ported from kube 1.36's validation_test.go
TestValidateTopologySpreadConstraints (ids = kube's row names). kube's test compares the
type and field of every error; so do these (the type as the message's first words).

Phalanx validates as a 1.36 API server creates a pod: MatchLabelKeysInPodTopologySpread and
its SelectorMerge gate on (both default on), no old pod. Not ported, because they need
options that only exist with a gate off or when an old, already invalid pod is updated:
- "key in MatchLabelKeys isn't correctly defined when
  AllowMatchLabelKeysInPodTopologySpreadSelectorMerge is false"
- "key exists in both MatchLabelKeys and LabelSelector when
  AllowMatchLabelKeysInPodTopologySpreadSelectorMerge is false"
- "key in MatchLabelKeys is forbidden to be specified when LabelSelector is not set and
  AllowMatchLabelKeysInPodTopologySpreadSelectorMerge is false"
- "invalid MatchLabels set on LabelSelector when
  AllowInvalidTopologySpreadConstraintLabelSelector is true"
- "invalid MatchLabelKeys when OldPodViolatesMatchLabelKeysValidation is true"
- "invalid MatchLabelKeys when AllowMatchLabelKeysInPodTopologySpreadSelectorMerge is false
  and OldPodViolatesLegacyMatchLabelKeysValidation is false" (and "... is true", and "valid
  MatchLabelKeys when ... is false and ... is false")
- "invalid MatchLabelKeys when AllowMatchLabelKeysInPodTopologySpread is false and
  AllowMatchLabelKeysInPodTopologySpreadSelectorMerge is true"
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.cluster.podvalidation.spread import spread_errors

from .podvalidation_cases import create_verdict, label_term, pod_json

F = "field[0]"
ZONE = "k8s.io/zone"


def c(max_skew: int | None = 1, key: str | None = ZONE, action: str | None = "DoNotSchedule",
      **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in (("maxSkew", max_skew), ("topologyKey", key),
                        ("whenUnsatisfiable", action)):
        if value is not None:
            out[name] = value
    return {**out, **extra}


MERGED_FOO = {"matchExpressions": [label_term("foo", "NotIn", "value1"),
                                   label_term("foo", "NotIn", "value2", "value3")]}

ROWS: dict[str, tuple[list[dict[str, Any]], list[tuple[str, str]]]] = {
    "all required fields ok": ([c(minDomains=3)], []),
    "missing MaxSkew": ([c(max_skew=None)], [(f"{F}.maxSkew", "Invalid value")]),
    "negative MaxSkew": ([c(max_skew=-1)], [(f"{F}.maxSkew", "Invalid value")]),
    "can use MinDomains with ScheduleAnyway, when MinDomains = nil": (
        [c(action="ScheduleAnyway")], []),
    "negative minDomains is invalid": (
        [c(minDomains=-1)], [(f"{F}.minDomains", "Invalid value")]),
    "cannot use non-nil MinDomains with ScheduleAnyway": (
        [c(action="ScheduleAnyway", minDomains=10)], [(f"{F}.minDomains", "Invalid value")]),
    "use negative MinDomains with ScheduleAnyway(invalid)": (
        [c(action="ScheduleAnyway", minDomains=-1)],
        [(f"{F}.minDomains", "Invalid value"), (f"{F}.minDomains", "Invalid value")]),
    "missing TopologyKey": ([c(key=None)], [(f"{F}.topologyKey", "Required value")]),
    "missing scheduling mode": (
        [c(action=None)], [(f"{F}.whenUnsatisfiable", "Unsupported value")]),
    "unsupported scheduling mode": (
        [c(action="N/A")], [(f"{F}.whenUnsatisfiable", "Unsupported value")]),
    "multiple constraints ok with all required fields": (
        [c(), c(max_skew=2, key="k8s.io/node", action="ScheduleAnyway")], []),
    "multiple constraints missing TopologyKey on partial ones": (
        [c(key=None, action="ScheduleAnyway"), c(max_skew=2)],
        [(f"{F}.topologyKey", "Required value")]),
    "duplicate constraints": (
        [c(), c(max_skew=2)], [(f"{F}.{{topologyKey, whenUnsatisfiable}}", "Duplicate value")]),
    "supported policy name set on NodeAffinityPolicy and NodeTaintsPolicy": (
        [c(nodeAffinityPolicy="Honor", nodeTaintsPolicy="Ignore")], []),
    "unsupported policy name set on NodeAffinityPolicy": (
        [c(nodeAffinityPolicy="Unknown", nodeTaintsPolicy="Ignore")],
        [(f"{F}.nodeAffinityPolicy", "Unsupported value")]),
    "unsupported policy name set on NodeTaintsPolicy": (
        [c(nodeAffinityPolicy="Honor", nodeTaintsPolicy="Unknown")],
        [(f"{F}.nodeTaintsPolicy", "Unsupported value")]),
    "key in MatchLabelKeys isn't correctly defined": (
        [c(labelSelector={}, matchLabelKeys=["/simple"])],
        [(f"{F}.matchLabelKeys[0]", "Invalid value")]),
    "key exists in both MatchLabelKeys and LabelSelector": (
        [c(matchLabelKeys=["foo"], labelSelector=MERGED_FOO)], [(f"{F}[0]", "Invalid value")]),
    "key in MatchLabelKeys is forbidden to be specified when LabelSelector is not set": (
        [c(matchLabelKeys=["foo"])], [(f"{F}.matchLabelKeys", "Forbidden")]),
    "invalid MatchLabels set on LabelSelector when "
    "AllowInvalidTopologySpreadConstraintLabelSelector is false": (
        [c(labelSelector={"matchLabels": {"NoUppercaseOrSpecialCharsLike=Equals": "foo"}})],
        [(f"{F}.labelSelector.matchLabels", "Invalid value")]),
    "valid MatchLabels set on LabelSelector when "
    "AllowInvalidTopologySpreadConstraintLabelSelector is false": (
        [c(labelSelector={"matchLabels": {"foo": "foo"}})], []),
    "invalid MatchLabelKeys when OldPodViolatesMatchLabelKeysValidation is false": (
        [c(matchLabelKeys=["foo"], labelSelector=MERGED_FOO)], [(f"{F}[0]", "Invalid value")]),
    "valid MatchLabelKeys when OldPodViolatesMatchLabelKeysValidation is false": (
        [c(matchLabelKeys=["foo"],
           labelSelector={"matchExpressions": [label_term("foo", "NotIn", "value1")]})], []),
}


@pytest.mark.parametrize("constraints,want", ROWS.values(), ids=ROWS.keys())
def test_validate_topology_spread_constraints(constraints: list[dict[str, Any]],
                                              want: list[tuple[str, str]]) -> None:
    got = spread_errors(constraints, "field")
    assert [(f, m.split(":")[0]) for f, m in got] == want, got


def test_messages_name_the_value_and_what_is_allowed() -> None:
    [(_, skew), (_, key), (_, action)] = spread_errors([c(max_skew=0, key="", action="N/A")],
                                                       "f")
    assert skew == "Invalid value: 0: must be greater than zero"
    assert key == "Required value: can not be empty"
    assert action == ('Unsupported value: "N/A": supported values: "DoNotSchedule", '
                      '"ScheduleAnyway"')
    [(_, dup)] = spread_errors([c(), c()], "f")
    assert dup == 'Duplicate value: "{k8s.io/zone, DoNotSchedule}"'
    [(_, min_domains)] = spread_errors([c(action="ScheduleAnyway", minDomains=2)], "f")
    assert min_domains.endswith("can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                                "not ScheduleAnyway")


def test_a_pod_with_bad_spread_is_refused_naming_the_field() -> None:
    err = create_verdict(pod_json({"topologySpreadConstraints": [c(), c(minDomains=0)]}))
    assert err is not None
    assert err.field == "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"
    assert "spec.topologySpreadConstraints[1].minDomains: Invalid value: 0" in err.message
    assert create_verdict(pod_json({"topologySpreadConstraints": [
        c(labelSelector={"matchLabels": {"app": "web"}}, matchLabelKeys=["pod-template-hash"]),
        c(key="kubernetes.io/hostname", action="ScheduleAnyway")]})) is None
