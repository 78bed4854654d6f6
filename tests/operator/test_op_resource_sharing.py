"""Admission and reconciling of Grove's resource sharing (phalanx/operator/
admission_resourcesharing.py, resourceclaim.py), beyond what RS1 (tests/grove_e2e/
test_resource_sharing.py) covers: each of Grove's webhook rules for `resourceClaimTemplates`
and `resourceSharing`, and a missing external template reported, not ignored."""

from __future__ import annotations

from typing import Any

import pytest
from op_harness import NS, Env, make_pcs, run

from phalanx.api.base import get_condition
from phalanx.api.errors import ManifestError
from phalanx.api.registry import from_dict
from phalanx.api.resource import ResourceClaim
from phalanx.operator import default_podcliqueset, validate_podcliqueset
from phalanx.operator.errors import CONDITION_RECONCILE_FAILURE

REQ = {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
    "deviceClassName": "gpu.example.com"}}]}}}


def _data(**template: Any) -> dict[str, Any]:
    data = make_pcs("x", [("a", 2), ("b", 1)], groups=[("g", ["b"], 2, 1)]).to_dict()
    data["spec"]["template"].update(template)
    return data


def errors(data: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, str]:
    pcs = default_podcliqueset(from_dict(data))  # type: ignore[arg-type]
    prev = default_podcliqueset(from_dict(old)) if old else None  # type: ignore[arg-type]
    return dict(validate_podcliqueset(pcs, prev))  # type: ignore[arg-type]


def test_sharing_at_every_level_is_admitted() -> None:
    data = _data(resourceClaimTemplates=[{"name": "gpus", "templateSpec": REQ}],
                 resourceSharing=[{"name": "gpus", "scope": "PerReplica",
                                   "filter": {"childScalingGroupNames": ["g"]}}])
    t = data["spec"]["template"]
    t["cliques"][0]["resourceSharing"] = [{"name": "gpus", "scope": "PerReplica"},
                                          {"name": "ext", "namespace": "o", "scope": "AllReplicas"}]
    t["podCliqueScalingGroups"][0]["resourceSharing"] = [
        {"name": "gpus", "scope": "AllReplicas", "filter": {"childCliqueNames": ["b"]}}]
    assert errors(data) == {}


def test_templates_need_a_unique_name_and_a_device_request() -> None:
    data = _data(resourceClaimTemplates=[
        {"name": "gpus", "templateSpec": REQ}, {"name": "gpus", "templateSpec": REQ},
        {"name": "none", "templateSpec": {"spec": {"devices": {"requests": []}}}}])
    errs = errors(data)
    assert "Duplicate value" in errs["spec.template.resourceClaimTemplates.name"]
    assert "at least one device request" in errs[
        "spec.template.resourceClaimTemplates[2].templateSpec.spec.devices.requests"]


def test_references_are_unique_with_a_known_scope_and_no_namespace_on_own_templates() -> None:
    data = _data(resourceClaimTemplates=[{"name": "gpus", "templateSpec": REQ}],
                 resourceSharing=[{"name": "gpus", "scope": "PerReplica"},
                                  {"name": "gpus", "namespace": "o", "scope": "AllReplicas"}])
    errs = errors(data)
    assert "Duplicate value" in errs["spec.template.resourceSharing[1].name"]
    assert "must be empty" in errs["spec.template.resourceSharing[1].namespace"]
    bad = _data(resourceSharing=[{"name": "gpus", "scope": "Sometimes"}])
    with pytest.raises(ManifestError) as err:
        from_dict(bad)
    assert "spec.template.resourceSharing[0].scope" in str(err.value)


def test_filters_name_existing_children() -> None:
    data = _data(resourceSharing=[
        {"name": "t", "scope": "AllReplicas", "filter": {"childCliqueNames": ["zz"]}},
        {"name": "u", "scope": "AllReplicas", "filter": {"childScalingGroupNames": ["zz"]}},
        {"name": "v", "scope": "AllReplicas", "filter": {}}])
    data["spec"]["template"]["podCliqueScalingGroups"][0]["resourceSharing"] = [
        {"name": "w", "scope": "AllReplicas", "filter": {"childCliqueNames": ["a"]}}]
    errs = errors(data)
    assert "Not found" in errs["spec.template.resourceSharing[0].filter.childCliqueNames[0]"]
    assert "Not found" in errs[
        "spec.template.resourceSharing[1].filter.childScalingGroupNames[0]"]
    assert "at least one" in errs["spec.template.resourceSharing[2].filter"]
    # a scaling group's filter may only name its own cliques ("a" is standalone)
    assert "Not found" in errs[
        "spec.template.podCliqueScalingGroups[0].resourceSharing[0].filter.childCliqueNames[0]"]


@pytest.mark.parametrize("where", [
    "spec.template.resourceClaimTemplates", "spec.template.resourceSharing",
    "spec.template.cliques[0].resourceSharing",
    "spec.template.podCliqueScalingGroups[0].resourceSharing"])
def test_sharing_is_immutable(where: str) -> None:
    old = _data(resourceClaimTemplates=[{"name": "gpus", "templateSpec": REQ}])
    new = _data(resourceClaimTemplates=[{"name": "gpus", "templateSpec": REQ}])
    t = new["spec"]["template"]
    ref = [{"name": "gpus", "scope": "AllReplicas"}]
    if where.endswith("resourceClaimTemplates"):
        t["resourceClaimTemplates"].append({"name": "more", "templateSpec": REQ})
    elif where == "spec.template.resourceSharing":
        t["resourceSharing"] = ref
    elif "cliques" in where:
        t["cliques"][0]["resourceSharing"] = ref
    else:
        t["podCliqueScalingGroups"][0]["resourceSharing"] = ref
    assert errors(old) == {}
    assert errors(new, old) == {where: "field is immutable"}


def test_missing_external_template_is_reported_and_claim_follows_when_it_appears() -> None:
    async def scenario(env: Env) -> None:
        data = _data(resourceSharing=[{"name": "later", "scope": "AllReplicas"}])
        await env.create(from_dict(data))
        await env.settle()
        claims = (await env.cluster.list(ResourceClaim, NS)).items
        assert claims == []
        pcs = await env.pcs("x")
        failure = get_condition(pcs.status.conditions, CONDITION_RECONCILE_FAILURE)
        assert failure is not None and failure.reason == "ResourceClaimTemplateNotFound"
        assert "default/later" in failure.message
        await env.create(from_dict({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "later", "namespace": NS}, "spec": REQ}))
        await env.settle()
        names = sorted(c.name for c in (await env.cluster.list(ResourceClaim, NS)).items)
        assert names == ["x-all-later"]
        for pod in await env.pods():
            assert [c["resourceClaimName"] for c in pod.spec.resource_claims or ()] == \
                ["x-all-later"]
        pcs = await env.pcs("x")
        assert get_condition(pcs.status.conditions, CONDITION_RECONCILE_FAILURE) is None

    run(scenario)
