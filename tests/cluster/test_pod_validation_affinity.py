"""spec.affinity and spec.nodeSelector validation on pod creation, ported from kube 1.36's
pkg/apis/core/validation/validation_test.go: the affinity rows of TestValidatePod (success
and error cases, ids = kube's row names), TestValidatePodSpec's "populate Affinity", plus the
node-selector rules the rows do not cover.

Each row is created on a MemoryCluster (model load, the API server's defaulting and label-key
merge, then validation) and must be accepted, or refused with kube's expected text (a field
path or words) in the message, as kube's test checks `ToAggregate().Error()`.

Not ported: none of the affinity rows; the row "invalid node selector requirement in node
affinity, operator can't be null" is refused by the Pod model itself (operator is required),
with the same field path.
"""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.cluster.podvalidation.affinity import node_selector_term_errors

from .podvalidation_cases import create_verdict, label_term, pod_json, spec_errors

NA = "spec.affinity.nodeAffinity"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
TERMS = f"{NA}.{REQ}.nodeSelectorTerms"


def node_affinity(required: list[dict[str, Any]] | None = None,
                  preferred: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    na: dict[str, Any] = {}
    if required is not None:
        na[REQ] = {"nodeSelectorTerms": required}
    if preferred is not None:
        na[PREF] = preferred
    return {"affinity": {"nodeAffinity": na}}


def pod_affinity(kind: str, required: list[dict[str, Any]] | None = None,
                 preferred: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pa: dict[str, Any] = {}
    if required is not None:
        pa[REQ] = required
    if preferred is not None:
        pa[PREF] = preferred
    return {"affinity": {kind: pa}}


def weighted(term: dict[str, Any], weight: int = 10) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": term}


def selector(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(exprs)}


NOT_IN_12 = label_term("key", "NotIn", "value1", "value2")
KEY2_IN_12 = label_term("key2", "In", "value1", "value2")
KEY2_NOT_IN_12 = label_term("key2", "NotIn", "value1", "value2")
MERGED_KEY = [label_term("key", "In", "value1"), label_term("key", "NotIn", "value2")]
KEYS_TERM = selector(NOT_IN_12, label_term("key2", "In", "value1"),
                     label_term("key3", "NotIn", "value1"))


def keys_term(**extra: Any) -> dict[str, Any]:
    return {"labelSelector": KEYS_TERM, "topologyKey": "k8s.io/zone", **extra}


VALID: dict[str, dict[str, Any]] = {
    "serialized node affinity requirements": node_affinity(
        required=[{"matchExpressions": [KEY2_IN_12],
                   "matchFields": [label_term("metadata.name", "In", "host1")]}],
        preferred=[{"weight": 10, "preference": {
            "matchExpressions": [label_term("foo", "In", "bar")]}}]),
    "serialized node affinity requirements, II": node_affinity(
        required=[{"matchExpressions": []}],
        preferred=[{"weight": 10, "preference": {"matchExpressions": []}}]),
    "serialized pod affinity in affinity requirements in annotations": pod_affinity(
        "podAffinity",
        required=[{"labelSelector": selector(KEY2_IN_12), "topologyKey": "zone",
                   "namespaces": ["ns"],
                   "namespaceSelector": selector(label_term("key", "In", "value1", "value2"))}],
        preferred=[weighted({"labelSelector": selector(KEY2_NOT_IN_12), "namespaces": ["ns"],
                             "topologyKey": "region"})]),
    "serialized pod anti affinity with different Label Operators in affinity requirements in "
    "annotations": pod_affinity(
        "podAntiAffinity",
        required=[{"labelSelector": selector(label_term("key2", "Exists")),
                   "topologyKey": "zone", "namespaces": ["ns"]}],
        preferred=[weighted({"labelSelector": selector(label_term("key2", "DoesNotExist")),
                             "namespaces": ["ns"], "topologyKey": "region"})]),
    "MatchLabelKeys/MismatchLabelKeys in required PodAffinity": pod_affinity(
        "podAffinity", required=[keys_term(matchLabelKeys=["key2"],
                                           mismatchLabelKeys=["key3"])]),
    "MatchLabelKeys/MismatchLabelKeys in preferred PodAffinity": pod_affinity(
        "podAffinity", preferred=[weighted(keys_term(matchLabelKeys=["key2"],
                                                     mismatchLabelKeys=["key3"]))]),
    "MatchLabelKeys/MismatchLabelKeys in required PodAntiAffinity": pod_affinity(
        "podAntiAffinity", required=[keys_term(matchLabelKeys=["key2"],
                                               mismatchLabelKeys=["key3"])]),
    "MatchLabelKeys/MismatchLabelKeys in preferred PodAntiAffinity": pod_affinity(
        "podAntiAffinity", preferred=[weighted(keys_term(matchLabelKeys=["key2"],
                                                         mismatchLabelKeys=["key3"]))]),
    "LabelSelector can have the same key as MismatchLabelKeys": pod_affinity(
        "podAffinity", required=[{
            "labelSelector": selector(NOT_IN_12, label_term("key2", "In", "value1"),
                                      label_term("key2", "NotIn", "value1")),
            "topologyKey": "k8s.io/zone", "mismatchLabelKeys": ["key2"]}]),
    # TestValidatePodSpec
    "populate Affinity": node_affinity(
        required=[{"matchExpressions": [KEY2_IN_12],
                   "matchFields": [label_term("metadata.name", "In", "host1")]}],
        preferred=[{"weight": 10, "preference": {
            "matchExpressions": [label_term("foo", "In", "bar")]}}]),
}


@pytest.mark.parametrize("spec", VALID.values(), ids=VALID.keys())
def test_valid(spec: dict[str, Any]) -> None:
    assert create_verdict(pod_json(spec)) is None


def _soft_hard(kind: str, soft: bool, term: dict[str, Any]) -> dict[str, Any]:
    return pod_affinity(kind, preferred=[weighted(term)]) if soft else \
        pod_affinity(kind, required=[term])


def _key_rows() -> dict[str, tuple[str, dict[str, Any], dict[str, str] | None]]:
    """The matchLabelKeys / mismatchLabelKeys error rows: soft and hard, affinity and
    anti-affinity, four rules each."""
    rows: dict[str, tuple[str, dict[str, Any], dict[str, str] | None]] = {}
    for kind, what in (("podAffinity", "pod affinity"), ("podAntiAffinity",
                                                         "pod anti-affinity")):
        for soft in (True, False):
            hardness = "soft" if soft else "hard"
            plain = {"labelSelector": selector(NOT_IN_12), "topologyKey": "k8s.io/zone"}
            rows[f"invalid {hardness} {what}, key in MatchLabelKeys isn't correctly defined"] = (
                "prefix part must be non-empty",
                _soft_hard(kind, soft, {**plain, "matchLabelKeys": ["/simple"]}), None)
            rows[f"invalid {hardness} {what}, key in MismatchLabelKeys isn't correctly "
                 "defined"] = (
                "prefix part must be non-empty",
                _soft_hard(kind, soft, {**plain, "mismatchLabelKeys": ["/simple"]}), None)
            # kube's soft pod affinity row carries no pod labels; the other three do.
            labels = None if (soft and kind == "podAffinity") else {"key": "value1"}
            rows[f"invalid {hardness} {what}, key exists in both matchLabelKeys and "
                 "labelSelector"] = (
                "exists in both matchLabelKeys and labelSelector",
                _soft_hard(kind, soft, {"labelSelector": selector(*MERGED_KEY),
                                        "topologyKey": "k8s.io/zone",
                                        "matchLabelKeys": ["key"]}), labels)
            rows[f"invalid {hardness} {what}, key exists in both MatchLabelKeys and "
                 "MismatchLabelKeys"] = (
                "exists in both matchLabelKeys and mismatchLabelKeys",
                _soft_hard(kind, soft, {**plain, "matchLabelKeys": ["samekey"],
                                        "mismatchLabelKeys": ["samekey"]}), None)
    return rows


INVALID: dict[str, tuple[str, dict[str, Any], dict[str, str] | None]] = {
    "invalid node selector requirement in node affinity, operator can't be null": (
        f"{TERMS}[0].matchExpressions[0].operator",
        node_affinity(required=[{"matchExpressions": [{"key": "key1"}]}]), None),
    "invalid node selector requirement in node affinity, key is invalid": (
        f"{TERMS}[0].matchExpressions[0].key",
        node_affinity(required=[{"matchExpressions": [
            label_term("invalid key ___@#", "Exists")]}]), None),
    "invalid node field selector requirement in node affinity, more values for field "
    "selector": (
        f"{TERMS}[0].matchFields[0].values",
        node_affinity(required=[{"matchFields": [
            label_term("metadata.name", "In", "host1", "host2")]}]), None),
    "invalid node field selector requirement in node affinity, invalid operator": (
        f"{TERMS}[0].matchFields[0].operator",
        node_affinity(required=[{"matchFields": [label_term("metadata.name", "Exists")]}]),
        None),
    "invalid node field selector requirement in node affinity, invalid key": (
        f"{TERMS}[0].matchFields[0].key",
        node_affinity(required=[{"matchFields": [
            label_term("metadata.namespace", "In", "ns1")]}]), None),
    "invalid preferredSchedulingTerm in node affinity, weight should be in range 1-100": (
        "must be in the range 1-100",
        node_affinity(preferred=[{"weight": 199, "preference": {
            "matchExpressions": [label_term("foo", "In", "bar")]}}]), None),
    "invalid requiredDuringSchedulingIgnoredDuringExecution node selector, nodeSelectorTerms "
    "must have at least one term": (TERMS, node_affinity(required=[]), None),
    "invalid weight in preferredDuringSchedulingIgnoredDuringExecution in pod affinity "
    "annotations, weight should be in range 1-100": (
        "must be in the range 1-100",
        pod_affinity("podAffinity", preferred=[weighted(
            {"labelSelector": selector(KEY2_NOT_IN_12), "namespaces": ["ns"],
             "topologyKey": "region"}, weight=109)]), None),
    "invalid labelSelector in preferredDuringSchedulingIgnoredDuringExecution in podaffinity "
    "annotations, values should be empty if the operator is Exists": (
        f"spec.affinity.podAntiAffinity.{PREF}[0].podAffinityTerm.labelSelector"
        ".matchExpressions[0].values",
        pod_affinity("podAntiAffinity", preferred=[weighted(
            {"labelSelector": selector(label_term("key2", "Exists", "value1", "value2")),
             "namespaces": ["ns"], "topologyKey": "region"})]), None),
    "invalid namespaceSelector in preferredDuringSchedulingIgnoredDuringExecution in "
    "podaffinity, In operator must include Values": (
        f"spec.affinity.podAntiAffinity.{PREF}[0].podAffinityTerm.namespaceSelector"
        ".matchExpressions[0].values",
        pod_affinity("podAntiAffinity", preferred=[weighted(
            {"namespaceSelector": selector(label_term("key2", "In")), "namespaces": ["ns"],
             "topologyKey": "region"})]), None),
    "invalid namespaceSelector in preferredDuringSchedulingIgnoredDuringExecution in "
    "podaffinity, Exists operator can not have values": (
        f"spec.affinity.podAntiAffinity.{PREF}[0].podAffinityTerm.namespaceSelector"
        ".matchExpressions[0].values",
        pod_affinity("podAntiAffinity", preferred=[weighted(
            {"namespaceSelector": selector(label_term("key2", "Exists", "value1", "value2")),
             "namespaces": ["ns"], "topologyKey": "region"})]), None),
    "invalid name space in preferredDuringSchedulingIgnoredDuringExecution in podaffinity "
    "annotations, namespace should be valid": (
        f"spec.affinity.podAffinity.{PREF}[0].podAffinityTerm.namespace",
        pod_affinity("podAffinity", preferred=[weighted(
            {"labelSelector": selector(label_term("key2", "Exists")),
             "namespaces": ["INVALID_NAMESPACE"], "topologyKey": "region"})]), None),
    "invalid hard pod affinity, empty topologyKey is not allowed for hard pod affinity": (
        "can not be empty",
        pod_affinity("podAffinity", required=[{"labelSelector": selector(KEY2_IN_12),
                                               "namespaces": ["ns"]}]), None),
    "invalid hard pod anti-affinity, empty topologyKey is not allowed for hard pod "
    "anti-affinity": (
        "can not be empty",
        pod_affinity("podAntiAffinity", required=[{"labelSelector": selector(KEY2_IN_12),
                                                   "namespaces": ["ns"]}]), None),
    "invalid soft pod affinity, empty topologyKey is not allowed for soft pod affinity": (
        "can not be empty",
        pod_affinity("podAffinity", preferred=[weighted(
            {"labelSelector": selector(KEY2_NOT_IN_12), "namespaces": ["ns"]})]), None),
    "invalid soft pod anti-affinity, empty topologyKey is not allowed for soft pod "
    "anti-affinity": (
        "can not be empty",
        pod_affinity("podAntiAffinity", preferred=[weighted(
            {"labelSelector": selector(KEY2_NOT_IN_12), "namespaces": ["ns"]})]), None),
    **_key_rows(),
    "invalid required node affinity, value of NodeSelectorRequirement should be a valid "
    "label value": (
        f"{TERMS}[0].matchExpressions[0].values[0]: Invalid value: \"-1\": a valid label must "
        "be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
        "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
        "[A-Za-z0-9])?')",
        node_affinity(required=[{"matchExpressions": [label_term("foo", "In", "-1")]}]),
        None),
}


@pytest.mark.parametrize("expected,spec,labels", INVALID.values(), ids=INVALID.keys())
def test_invalid(expected: str, spec: dict[str, Any], labels: dict[str, str] | None) -> None:
    err = create_verdict(pod_json(spec, labels=labels))
    assert err is not None, "the pod was created"
    assert expected in err.message, err.message


def test_the_pods_match_label_keys_are_merged_before_validation() -> None:
    """kube merges `key In (value)` for each matchLabelKeys key the pod carries, then
    validates: a key the user also wrote in the selector is refused only when the pod has
    that label (the merge adds the second mention), at the term path indexed by the key."""
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone",
            "matchLabelKeys": ["app"]}
    spec = pod_affinity("podAffinity", required=[term])
    assert create_verdict(pod_json(spec)) is None
    err = create_verdict(pod_json(spec, labels={"app": "web"}))
    assert err is not None
    assert err.field == f"spec.affinity.podAffinity.{REQ}[0][0]"
    assert "exists in both matchLabelKeys and labelSelector" in err.message


def test_required_values_are_label_values_preferred_ones_anything() -> None:
    bad = label_term("zone", "In", "not a label value")
    required = spec_errors(node_affinity(required=[{"matchExpressions": [bad]}]))
    assert [f for f, _ in required] == [
        f"field.affinity.nodeAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values[0]"]
    assert spec_errors(node_affinity(preferred=[{"weight": 1, "preference": {
        "matchExpressions": [bad]}}])) == []


@pytest.mark.parametrize("req,field", [
    (label_term("k", "In"), "values"),
    (label_term("k", "NotIn"), "values"),
    (label_term("k", "Exists", "v"), "values"),
    (label_term("k", "DoesNotExist", "v"), "values"),
    (label_term("k", "Gt"), "values"),
    (label_term("k", "Lt", "1", "2"), "values"),
], ids=["In-without-values", "NotIn-without-values", "Exists-with-values",
        "DoesNotExist-with-values", "Gt-without-value", "Lt-with-two-values"])
def test_operators_decide_the_values(req: dict[str, Any], field: str) -> None:
    errs = spec_errors(node_affinity(required=[{"matchExpressions": [req]}]))
    assert [f.rsplit(".", 1)[1] for f, _ in errs] == [field]


def test_gt_lt_values_are_not_checked_as_integers() -> None:
    """kube-apiserver accepts `Gt ["abc"]` (a label value); such a term just never matches.
    The real-tier differential test sends the same pod to a real server."""
    assert spec_errors(node_affinity(required=[{"matchExpressions": [
        label_term("k", "Gt", "abc")]}])) == []


def test_match_fields_name_nodes() -> None:
    errs = spec_errors(node_affinity(required=[{"matchFields": [
        label_term("metadata.name", "NotIn", "Not_A_Node")]}]))
    assert [f for f, _ in errs] == [
        f"field.affinity.nodeAffinity.{REQ}.nodeSelectorTerms[0].matchFields[0].values[0]"]


def test_node_selector_keys_and_values() -> None:
    assert spec_errors({"nodeSelector": {"kubernetes.io/hostname": "n-1"}}) == []
    errs = spec_errors({"nodeSelector": {"bad key!": "v", "zone": "-a"}})
    assert [f for f, _ in errs] == ["field.nodeSelector", "field.nodeSelector"]
    assert 'Invalid value: "bad key!"' in errs[0][1] and 'Invalid value: "-a"' in errs[1][1]


def test_node_selector_term_errors_is_usable_alone() -> None:
    """PersistentVolume node affinity and other callers may check one term."""
    from phalanx.api.pod import NodeSelectorTerm
    term = NodeSelectorTerm.model_validate({"matchExpressions": [label_term("k", "In")]})
    assert node_selector_term_errors(term, "t", check_values=True) == [
        ("t.matchExpressions[0].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'")]


def test_every_error_is_listed_first_one_named() -> None:
    spec = {"affinity": {"nodeAffinity": {REQ: {"nodeSelectorTerms": []}},
                         "podAntiAffinity": {REQ: [{"labelSelector": {}}]}}}
    err = create_verdict(pod_json(spec))
    assert err is not None and err.field == TERMS
    assert f"podAntiAffinity.{REQ}[0].topologyKey: Required value: can not be empty" \
        in err.message
