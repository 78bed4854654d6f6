"""matchLabelKeys / mismatchLabelKeys of pod (anti-)affinity terms, merged into the label
selector on create (phalanx.cluster.pod_affinity_keys).

Ported from kube 1.36's pkg/registry/core/pod/strategy_test.go Test_mutatePodAffinity, one
test per row (ids = kube's names). Not ported: "the feature gate is disabled and
matchLabelKeys is ignored": MatchLabelKeysInPodAffinity is GA and Phalanx has no feature
gates, so the merge always happens (as on a 1.36 API server, where the gate is locked on).

The contract tests run on every Client (the embedded cluster, and the real API server in the
real tier): a create merges, an update does not merge again.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from phalanx.api.core import Pod
from phalanx.cluster.pod_affinity_keys import apply_match_label_keys, merge_label_keys

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
ASIA = {"matchLabels": {"region": "Asia"}}
LABELS = {"country": "Japan", "city": "Kyoto"}


def _pod(aff: dict[str, Any], labels: dict[str, str] | None = None) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": "p", "namespace": "default", "labels": labels or LABELS},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], "affinity": aff},
    })


def _keys_term(selector: dict | None, match: list[str] | None = None,
               mismatch: list[str] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if selector is not None:
        t["labelSelector"] = copy.deepcopy(selector)
    if match:
        t["matchLabelKeys"] = match
    if mismatch:
        t["mismatchLabelKeys"] = mismatch
    return t


def _merged(t: dict[str, Any], exprs: list[tuple[str, str, str]]) -> dict[str, Any]:
    out = copy.deepcopy(t)
    out["labelSelector"]["matchExpressions"] = [
        {"key": k, "operator": op, "values": [v]} for k, op, v in exprs]
    return out


def _all_groups(t: dict[str, Any]) -> dict[str, Any]:
    def group() -> dict[str, Any]:
        return {REQ: [copy.deepcopy(t)], PREF: [{"weight": 1, "podAffinityTerm": copy.deepcopy(t)}]}

    return {"podAffinity": group(), "podAntiAffinity": group()}


_BOTH = _keys_term(ASIA, ["country"], ["city"])
_BOTH_MERGED = _merged(_BOTH, [("country", "In", "Japan"), ("city", "NotIn", "Kyoto")])
_NOT_FOUND = _keys_term(ASIA, ["city", "not-found"])
_NO_SELECTOR = _keys_term(None, ["country"], ["city"])

MUTATE = [
    ("matchLabelKeys are merged into labelSelector with In and mismatchLabelKeys are merged "
     "with NotIn", _all_groups(_BOTH), _all_groups(_BOTH_MERGED)),
    ("keys, which are not found in Pod labels, are ignored",
     {"podAffinity": {REQ: [_NOT_FOUND]}},
     {"podAffinity": {REQ: [_merged(_NOT_FOUND, [("city", "In", "Kyoto")])]}}),
    ("matchLabelKeys is ignored if the labelSelector is nil",
     {"podAffinity": {REQ: [_NO_SELECTOR]}}, {"podAffinity": {REQ: [_NO_SELECTOR]}}),
]


@pytest.mark.parametrize(("aff", "want"), [r[1:] for r in MUTATE], ids=[r[0] for r in MUTATE])
def test_mutate_pod_affinity(aff: dict[str, Any], want: dict[str, Any]) -> None:
    pod = _pod(copy.deepcopy(aff))
    apply_match_label_keys(pod)
    got = pod.spec.affinity.model_dump(by_alias=True, exclude_none=True)
    assert got == want


def test_merge_keeps_existing_expressions_and_does_not_change_its_input() -> None:
    t = _keys_term({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, ["country"])
    before = copy.deepcopy(t)
    out = merge_label_keys(t, LABELS)
    assert t == before
    assert out["labelSelector"]["matchExpressions"] == [
        {"key": "tier", "operator": "Exists"},
        {"key": "country", "operator": "In", "values": ["Japan"]},
    ]
    assert out["matchLabelKeys"] == ["country"]  # the keys stay on the term


def test_created_pods_get_the_merged_selector_and_updates_do_not_merge_again(client_factory):
    term = _keys_term({"matchLabels": {"app": "web"}}, ["pod-template-hash"])
    aff = {"podAntiAffinity": {REQ: [dict(term, topologyKey="kubernetes.io/hostname")]}}

    async def main():
        c = client_factory()
        pod = _pod(copy.deepcopy(aff), {"app": "web", "pod-template-hash": "abc"})
        created = await c.create(pod)
        sel = created.spec.affinity.pod_anti_affinity[REQ][0]["labelSelector"]
        assert sel == {"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]}
        created.metadata.labels["note"] = "x"
        updated = await c.update(created)
        assert updated.spec.affinity.pod_anti_affinity[REQ][0]["labelSelector"] == sel
    client_factory.run(main)
