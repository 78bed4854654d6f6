"""default-scheduler with gangScheduling: one PodGroup per PodGang keeps the gang whole but
not each group's own minimum. That loss is a `PerGroupMinimums` capability mismatch, and the
backend's mismatchPolicy decides: reject (default) or pass-through with a condition."""

from __future__ import annotations

from typing import Any

from phalanx.backends import BackendRegistry, Capability, check_podcliqueset
from phalanx.backends.admission import REASON_UNSUPPORTED_FEATURES_IGNORED

from . import samples as s

WORKER = 1  # cliques[1] is pworker: 4 replicas, in the base PodGang with three other groups


def _registry(config: dict[str, Any] | None, profile: str = "default-scheduler") -> BackendRegistry:
    return BackendRegistry.from_profiles([(profile, config)], profile)


def _with_worker(pcs_name: str = "default-scheduler", **spec: Any) -> Any:
    pcs = s.pcs(pcs_name)
    for key, value in spec.items():
        setattr(pcs.spec.template.cliques[WORKER].spec, key, value)
    return pcs


def test_a_clique_above_its_minimum_in_a_shared_gang_is_rejected_by_default() -> None:
    pcs = _with_worker(min_available=2)
    check = check_podcliqueset(pcs, None, _registry({"gangScheduling": True}))
    assert not check.allowed
    [err] = check.errors
    assert (err.field, err.feature) == (
        f"spec.template.cliques[{WORKER}].spec.minAvailable", Capability.GROUP_MINIMUMS)
    assert "'pworker' needs 2 of up to 4 pods" in err.message
    assert "PerGroupMinimums" in err.message and "one PodGroup" in err.message


def test_pass_through_admits_and_names_the_lost_minimum_in_the_condition() -> None:
    pcs = _with_worker(min_available=2)
    registry = _registry({"gangScheduling": True, "mismatchPolicy": "pass-through"})
    check = check_podcliqueset(pcs, None, registry)
    assert check.allowed
    assert [(i.field, i.feature) for i in check.ignored] == [
        (f"spec.template.cliques[{WORKER}].spec.minAvailable", Capability.GROUP_MINIMUMS)]
    status, reason, message = check.condition()
    assert (status, reason) == (False, REASON_UNSUPPORTED_FEATURES_IGNORED)
    assert f"spec.template.cliques[{WORKER}].spec.minAvailable" in message
    assert "PerGroupMinimums" in message


def test_an_autoscaler_above_the_minimum_counts_too() -> None:
    from phalanx.api.grove import AutoScalingConfig

    pcs = _with_worker(auto_scaling_config=AutoScalingConfig(max_replicas=8))
    [err] = check_podcliqueset(pcs, None, _registry({"gangScheduling": True})).errors
    assert err.field == f"spec.template.cliques[{WORKER}].spec.autoScalingConfig.maxReplicas"
    assert "needs 4 of up to 8 pods" in err.message


def test_nothing_is_lost_when_every_group_runs_its_minimum() -> None:
    # The sample: every clique's minAvailable defaults to its replicas, so minCount = all pods.
    pcs = s.pcs("default-scheduler")
    check = check_podcliqueset(pcs, None, _registry({"gangScheduling": True}))
    assert check.allowed and check.ignored == []


def test_a_single_group_gang_keeps_its_minimum() -> None:
    pcs = s.pcs("default-scheduler")
    pcs.spec.template.cliques = pcs.spec.template.cliques[1:2]
    pcs.spec.template.cliques[0].spec.min_available = 2
    pcs.spec.template.pod_clique_scaling_groups = None
    check = check_podcliqueset(pcs, None, _registry({"gangScheduling": True}))
    assert check.allowed and check.ignored == []


def test_scaled_podgangs_of_a_two_clique_scaling_group_are_shared_gangs() -> None:
    """With minAvailable 0 the scaling group has no replica in the base PodGang, but each
    scaled PodGang holds its leader and its workers: two groups under one minCount."""
    pcs = _with_worker(min_available=2)
    pcs.spec.template.cliques = pcs.spec.template.cliques[:2]
    groups = pcs.spec.template.pod_clique_scaling_groups
    assert groups is not None
    pcs.spec.template.pod_clique_scaling_groups = groups[:1]
    groups[0].min_available = 0
    [err] = check_podcliqueset(pcs, None, _registry({"gangScheduling": True})).errors
    assert err.feature is Capability.GROUP_MINIMUMS


def test_without_gang_scheduling_nothing_is_flagged() -> None:
    """Grove's default: kube-scheduler places pods one by one; no gang, nothing to lose."""
    check = check_podcliqueset(_with_worker(min_available=2), None, _registry(None))
    assert check.allowed and check.ignored == []


def test_backends_that_keep_group_minimums_are_unaffected() -> None:
    for profile, config in (("phalanx-scheduler", None), ("kai-scheduler", {"defaultQueue": "q"})):
        registry = _registry(config, profile)
        pcs = _with_worker(registry.get(profile).scheduler_name, min_available=2)
        check = check_podcliqueset(pcs, None, registry)
        assert check.allowed and check.ignored == [], profile
