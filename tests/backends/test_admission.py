"""PodCliqueSet admission: backend resolution, immutability, reject and pass-through."""

from __future__ import annotations

import pytest

from phalanx.api.grove import TopologyConstraint
from phalanx.backends import BackendRegistry, Capability, check_podcliqueset
from phalanx.backends.admission import (
    REASON_ALL_FEATURES_SUPPORTED,
    REASON_UNSUPPORTED_FEATURES_IGNORED,
)

from . import samples as s

ZONE_PACK = {"packDomain": "zone"}


def _registry(*profiles: tuple[str, dict | None], default: str = "default-scheduler") -> BackendRegistry:
    return BackendRegistry.from_profiles(list(profiles), default)


def test_default_scheduler_accepts_the_plain_sample() -> None:
    check = check_podcliqueset(s.pcs(), None, _registry())
    assert check.allowed and check.ignored == []
    assert check.backend is not None and check.backend.name == "default-scheduler"
    assert check.condition() == (
        True,
        REASON_ALL_FEATURES_SUPPORTED,
        "default-scheduler supports every requested feature",
    )


def test_empty_scheduler_name_resolves_to_the_default_profile() -> None:
    registry = _registry(("kai-scheduler", {"defaultQueue": "q"}), default="kai-scheduler")
    pcs = s.pcs()
    for clique in pcs.spec.template.cliques:
        clique.spec.pod_spec.scheduler_name = ""
    check = check_podcliqueset(pcs, None, registry)
    assert check.allowed and check.backend is not None and check.backend.name == "kai-scheduler"


def test_unlisted_scheduler_is_rejected_naming_the_field() -> None:
    check = check_podcliqueset(s.pcs("volcano"), None, _registry())
    assert not check.allowed and check.backend is None
    fields = [e.field for e in check.errors]
    assert fields == [f"spec.template.cliques[{i}].spec.podSpec.schedulerName" for i in range(4)]
    assert "'volcano' is not enabled" in check.errors[0].message


def test_cliques_on_different_backends_are_rejected() -> None:
    registry = _registry(("volcano", None))
    pcs = s.pcs()
    pcs.spec.template.cliques[2].spec.pod_spec.scheduler_name = "volcano"
    check = check_podcliqueset(pcs, None, registry)
    assert [e.field for e in check.errors] == ["spec.template.cliques[2].spec.podSpec.schedulerName"]
    assert "same scheduler" in check.errors[0].message and "'dleader'" in check.errors[0].message


def test_scheduler_name_is_immutable() -> None:
    registry = _registry(("volcano", None))
    old = s.pcs("default-scheduler")
    new = s.pcs("volcano")
    check = check_podcliqueset(new, old, registry)
    assert len(check.errors) == 4
    assert "immutable" in check.errors[0].message and "'default-scheduler'" in check.errors[0].message
    assert check_podcliqueset(old, old, registry).allowed


def test_reject_required_topology_on_a_backend_without_topology() -> None:
    check = check_podcliqueset(s.pcs(topologyConstraint=ZONE_PACK), None, _registry())
    assert not check.allowed
    [err] = check.errors
    assert err.field == "spec.template.topologyConstraint.packDomain"
    assert err.feature is Capability.TOPOLOGY
    assert "required pack domain 'zone'" in check.error_message()
    assert "TopologyAwarePlacement" in check.error_message()


def test_pass_through_admits_and_lists_what_is_ignored() -> None:
    registry = _registry(("default-scheduler", {"mismatchPolicy": "pass-through"}))
    pcs = s.pcs(topologyConstraint=ZONE_PACK, queue="team-a")
    check = check_podcliqueset(pcs, None, registry)
    assert check.allowed
    assert [(i.field, i.feature) for i in check.ignored] == [
        ("spec.template.topologyConstraint.packDomain", Capability.TOPOLOGY),
        ("metadata.labels[kai.scheduler/queue]", Capability.KAI_QUEUES),
    ]
    status, reason, message = check.condition()
    assert (status, reason) == (False, REASON_UNSUPPORTED_FEATURES_IGNORED)
    assert "ignores 2 requested feature(s)" in message
    assert "spec.template.topologyConstraint.packDomain" in message
    assert "metadata.labels[kai.scheduler/queue]" in message


def test_preferred_topology_is_never_rejected_only_reported() -> None:
    pcs = s.pcs(topologyConstraint={"pack": {"preferred": "rack"}})
    check = check_podcliqueset(pcs, None, _registry())  # reject policy
    assert check.allowed
    assert [(i.field, i.best_effort) for i in check.ignored] == [
        ("spec.template.topologyConstraint.pack.preferred", True)
    ]


def test_scaling_group_pack_needs_subgroups() -> None:
    groups = [
        {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": 2,
         "topologyConstraint": {"packDomain": "rack"}},
        {"name": "decode", "cliqueNames": ["dleader", "dworker"], "replicas": 1},
    ]
    field = "spec.template.podCliqueScalingGroups[0].topologyConstraint.packDomain"
    volcano = check_podcliqueset(s.pcs("volcano", podCliqueScalingGroups=groups), None, _registry(("volcano", None)))
    assert [(e.field, e.feature) for e in volcano.errors] == [(field, Capability.SUBGROUPS)]
    kai = check_podcliqueset(
        s.pcs("kai-scheduler", queue="q", podCliqueScalingGroups=groups), None, _registry(("kai-scheduler", None))
    )
    assert kai.allowed and kai.ignored == []


def test_gang_wide_topology_backends_reject_per_clique_packs() -> None:
    pcs = s.pcs("koord-scheduler")
    pcs.spec.template.cliques[1].topology_constraint = TopologyConstraint(pack_domain="host")
    check = check_podcliqueset(pcs, None, _registry(("koordinator", None)))
    [err] = check.errors
    assert err.field == "spec.template.cliques[1].topologyConstraint.packDomain"
    assert "can only pack a whole gang" in err.message
    # The same PodCliqueSet packed as a whole is fine.
    whole = s.pcs("koord-scheduler", topologyConstraint=ZONE_PACK)
    assert check_podcliqueset(whole, None, _registry(("koordinator", None))).allowed


def test_volcano_cannot_pack_onto_one_host() -> None:
    pcs = s.pcs("volcano", topologyConstraint={"packDomain": "host"})
    check = check_podcliqueset(pcs, None, _registry(("volcano", None)))
    assert [e.field for e in check.errors] == ["spec.template.topologyConstraint"]
    assert "HyperNode" in check.errors[0].message


def test_a_queue_label_is_reported_not_rejected_on_a_scheduler_without_queues() -> None:
    check = check_podcliqueset(s.pcs(queue="team-a"), None, _registry())  # reject policy
    assert check.allowed
    assert [(i.field, i.feature, i.best_effort) for i in check.ignored] == [
        ("metadata.labels[kai.scheduler/queue]", Capability.KAI_QUEUES, True)
    ]


def _with_claims(scheduler: str):
    pcs = s.pcs(scheduler)
    pcs.spec.template.cliques[1].spec.pod_spec.resource_claims = [
        {"name": "gpus", "resourceClaimTemplateName": "gpu-template"}]
    return pcs


def test_resource_claims_are_admitted_on_phalanx_scheduler() -> None:
    """phalanx-scheduler runs DynamicResources in its default profile: claims are its own."""
    from phalanx.backends.phalanx_scheduler import missing_plugins

    assert "DynamicResources" not in missing_plugins()
    registry = _registry(("phalanx-scheduler", None), default="phalanx-scheduler")
    check = check_podcliqueset(_with_claims("phalanx-scheduler"), None, registry)
    assert check.allowed and check.ignored == []


def test_resource_claims_are_refused_on_a_scheduler_without_dynamic_resources() -> None:
    registry = _registry(("volcano", None))
    check = check_podcliqueset(_with_claims("volcano"), None, registry)
    assert not check.allowed
    [err] = check.errors
    assert err.field == "spec.template.cliques[1].spec.podSpec.resourceClaims"
    assert err.feature is Capability.DYNAMIC_RESOURCES
    assert "DynamicResources, which volcano does not support" in check.error_message()


def test_resource_claims_pass_through_are_admitted_and_named_in_the_condition() -> None:
    registry = _registry(("volcano", {"mismatchPolicy": "pass-through"}))
    check = check_podcliqueset(_with_claims("volcano"), None, registry)
    assert check.allowed
    status, reason, message = check.condition()
    assert (status, reason) == (False, REASON_UNSUPPORTED_FEATURES_IGNORED)
    assert "spec.template.cliques[1].spec.podSpec.resourceClaims" in message


def test_resource_claims_are_admitted_for_kube_scheduler() -> None:
    check = check_podcliqueset(_with_claims("default-scheduler"), None, _registry())
    assert check.allowed and check.ignored == []
