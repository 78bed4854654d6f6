"""Admission: defaulting and validation (pure functions a webhook can call), and the same
checks run by MemoryCluster on create and update."""

from __future__ import annotations


import pytest
from op_harness import NS, make_pcs

from phalanx.api.errors import ManifestError
from phalanx.api.grove import PodCliqueSet
from phalanx.api.registry import from_dict
from phalanx.backends.registry import BackendRegistry
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import default_podcliqueset, install_admission, validate_podcliqueset


def errors(pcs: PodCliqueSet, old: PodCliqueSet | None = None) -> dict[str, str]:
    return dict(validate_podcliqueset(default_podcliqueset(pcs), old))


def test_defaults() -> None:
    pcs = default_podcliqueset(make_pcs("d", [("a", 3), ("b", 2, 1)],
                                        groups=[("g", ["b"], None, None)]))  # type: ignore[list-item]
    t = pcs.spec.template
    assert t.clique_startup_type == "CliqueStartupTypeAnyOrder"
    assert t.termination_delay == "4h"
    assert pcs.termination_delay_seconds() == 4 * 3600
    assert [c.spec.min_available for c in t.cliques] == [3, 1]
    group = t.pod_clique_scaling_groups[0]
    assert (group.replicas, group.min_available) == (1, 1)
    assert t.cliques[0].spec.pod_spec.restart_policy == "Always"
    assert t.cliques[0].spec.pod_spec.termination_grace_period_seconds == 30
    assert validate_podcliqueset(pcs, None) == []
    assert default_podcliqueset(pcs.model_copy(deep=True)) == pcs  # idempotent


@pytest.mark.parametrize(
    ("pcs", "field", "words"),
    [
        (make_pcs("x", [("a", 2, 3)]), "spec.template.cliques[0].spec.minAvailable",
         "minAvailable (3) must not exceed replicas (2)"),
        (make_pcs("x", [("a", 1), ("a", 2)]), "spec.template.cliques[1].name",
         "duplicate clique name 'a'"),
        (make_pcs("x", [("a", 1), ("b", 1)], startup="CliqueStartupTypeExplicit",
                  starts_after={"a": ["b"], "b": ["a"]}),
         "spec.template.cliques[0].spec.startsAfter", "cycle: a -> b -> a"),
        (make_pcs("x", [("a", 1)], startup="CliqueStartupTypeExplicit",
                  starts_after={"a": ["zz"]}),
         "spec.template.cliques[0].spec.startsAfter[0]", "unknown clique 'zz'"),
        (make_pcs("x", [("a", 1)], startup="CliqueStartupTypeExplicit",
                  starts_after={"a": ["a"]}),
         "spec.template.cliques[0].spec.startsAfter[0]", "cannot start after itself"),
        (make_pcs("x", [("a", 1), ("b", 1)], starts_after={"b": ["a"]}),
         "spec.template.cliques[1].spec.startsAfter", "only allowed with cliqueStartupType"),
        (make_pcs("x", [("a", 1)], groups=[("g", ["a", "nope"], 1, 1)]),
         "spec.template.podCliqueScalingGroups[0].cliqueNames[1]",
         "names clique 'nope', which is not in spec.template.cliques"),
        (make_pcs("x", [("a", 1)], groups=[("g", ["a"], 1, 2)]),
         "spec.template.podCliqueScalingGroups[0].minAvailable",
         "minAvailable (2) must not exceed replicas (1)"),
        (make_pcs("x", [("a", 1)], groups=[("g", ["a"], 1, 1), ("h", ["a"], 1, 1)]),
         "spec.template.podCliqueScalingGroups[1].cliqueNames[0]",
         "already in scaling group 'g'"),
        (make_pcs("Bad_Name", [("a", 1)]), "metadata.name", "must be a DNS label"),
        (make_pcs("x", [("Wrong", 1)]), "spec.template.cliques[0].name", "must be a DNS label"),
        (make_pcs("x" * 40, [("clique-name", 1)]), "spec.template.cliques[0].name",
         "at most 45 are allowed"),
        # Grove's defaulting makes replicas 0 a 1 but minAvailable the 0 written (C5).
        (make_pcs("x", [("a", 0)]), "spec.template.cliques[0].spec.minAvailable",
         "must be >= 1, got 0 (it defaults to the clique's replicas as written"),
        (make_pcs("x", [("a", 1)], termination_delay="0s"),
         "spec.template.terminationDelay", "positive"),
    ],
)
def test_validation_messages(pcs: PodCliqueSet, field: str, words: str) -> None:
    errs = errors(pcs)
    assert field in errs, errs
    assert words in errs[field], errs[field]


def test_scaling_group_termination_delay_is_not_a_grove_field() -> None:
    """Grove has one terminationDelay, the PodCliqueSet's; a scaling group's is refused as
    an unknown field (it was Phalanx's own, never Grove's)."""
    data = make_pcs("x", [("a", 1)], groups=[("g", ["a"], 1, 1)]).to_dict()
    data["spec"]["template"]["podCliqueScalingGroups"][0]["terminationDelay"] = "1m"
    with pytest.raises(ManifestError) as err:
        from_dict(data)
    assert "spec.template.podCliqueScalingGroups[0].terminationDelay: unknown field" in \
        str(err.value)


def test_negative_replicas() -> None:
    pcs = make_pcs("x", [("a", 1)])
    pcs.spec.replicas = -1  # models do not validate on assignment; a webhook may see this
    assert "must be >= 0" in errors(pcs)["spec.replicas"]


def test_immutable_fields_on_update() -> None:
    """More rows, Grove's: test_op_admission_update.py."""
    old = default_podcliqueset(make_pcs("x", [("a", 1), ("b", 1)],
                                        groups=[("g", ["b"], 1, 1)]))
    new = old.model_copy(deep=True)
    new.spec.template.cliques.append(new.spec.template.cliques[0].model_copy(
        update={"name": "c"}, deep=True))
    new.spec.template.cliques[2].spec.role_name = "c"
    assert "not allowed to change clique composition" in \
        errors(new, old)["spec.template.cliques"]
    new = old.model_copy(deep=True)
    new.spec.template.pod_clique_scaling_groups[0].min_available = 2
    new.spec.template.pod_clique_scaling_groups[0].replicas = 2
    assert "field is immutable" in \
        errors(new, old)["spec.template.podCliqueScalingGroups[0].minAvailable"]
    new = old.model_copy(deep=True)
    new.spec.replicas = 5
    new.spec.template.cliques[0].spec.replicas = 4
    assert errors(new, old) == {}


def test_a_template_change_of_any_clique_is_accepted_under_either_strategy() -> None:
    """Both standalone and scaling-group cliques roll (issue 23), so a pod template change
    is taken with RollingRecreate and with OnDelete."""
    old = default_podcliqueset(make_pcs("x", [("a", 1), ("b", 1)],
                                        groups=[("g", ["b"], 1, 1)]))
    for strategy in ("RollingRecreate", "OnDelete"):
        new = old.model_copy(deep=True)
        new.spec.update_strategy.type = strategy
        for c in new.spec.template.cliques:
            c.spec.pod_spec.containers[0].image = "new:2"
        assert errors(new, old) == {}, strategy


def test_an_invalid_new_template_is_refused_naming_the_field() -> None:
    """An update is validated as a create is: a broken new pod template never starts a
    rollout (issue 23 item 8)."""
    async def main() -> None:
        cluster = MemoryCluster()
        install_admission(cluster, None)
        pcs = await cluster.create(make_pcs("up", [("a", 2)]))
        new = pcs.copy_deep()
        new.spec.template.cliques[0].spec.pod_spec.containers = []
        with pytest.raises(Invalid) as err:
            await cluster.update(new)
        assert err.value.field == "spec.template.cliques[0].spec.podSpec.containers"
        kept = await cluster.get(PodCliqueSet, "up", NS)
        assert kept.spec.template.cliques[0].spec.pod_spec.containers

    run_virtual(main())


def test_the_coherent_strategy_is_refused_naming_the_field() -> None:
    """Grove's model names Coherent (GREP-393) but nothing implements it: refused."""
    data = make_pcs("x", [("a", 1)]).to_dict()
    data["spec"]["updateStrategy"] = {"type": "Coherent"}
    with pytest.raises(ManifestError) as err:
        from_dict(data)
    assert "spec.updateStrategy.type" in str(err.value)
    assert "OnDelete" in str(err.value) and "RollingRecreate" in str(err.value)


def test_memory_cluster_runs_admission() -> None:
    async def main() -> None:
        import phalanx.backends  # noqa: F401

        cluster = MemoryCluster()
        install_admission(cluster, BackendRegistry.from_profiles([], "default-scheduler"))
        install_admission(cluster, None)  # idempotent: one set of hooks
        created = await cluster.create(make_pcs("ok", [("a", 2)]))
        assert created.spec.template.cliques[0].spec.min_available == 2  # defaulted
        assert created.spec.template.termination_delay == "4h"
        with pytest.raises(Invalid) as err:
            await cluster.create(make_pcs("bad", [("a", 2, 5)]))
        assert err.value.field == "spec.template.cliques[0].spec.minAvailable"
        assert 'PodCliqueSet "bad" is invalid' in str(err.value)
        # Backend checks: an unknown scheduler is rejected, naming the enabled ones.
        with pytest.raises(Invalid) as err:
            await cluster.create(make_pcs("sched", [("a", 1)], scheduler="volcano"))
        assert err.value.field == "spec.template.cliques[0].spec.podSpec.schedulerName"
        assert "not enabled" in str(err.value)
        # On update too.
        with pytest.raises(Invalid):
            await cluster.patch(PodCliqueSet, "ok", {"spec": {"template": {"cliques": [
                {"name": "a", "spec": {"replicas": 1, "minAvailable": 2,
                                       "podSpec": {"containers": [{"name": "c"}]}}}]}}}, NS)
        assert (await cluster.get(PodCliqueSet, "ok", NS)).spec.template.cliques[0].spec \
            .replicas == 2

    run_virtual(main)


def test_a_pod_template_the_api_server_would_reject_is_rejected_naming_the_field() -> None:
    """Issue 15 item 4: a GPU request without a limit makes every pod creation fail on a real
    server; admission says so up front, naming the clique's field."""
    from phalanx.api.pod import ResourceRequirements

    pcs = make_pcs("x", [("a", 1), ("b", 1)])
    pcs.spec.template.cliques[1].spec.pod_spec.containers[0].resources = ResourceRequirements(
        requests={"cpu": "4", "nvidia.com/gpu": "8"})
    at = "spec.template.cliques[1].spec.podSpec.containers[0].resources"
    errs = errors(pcs)
    assert list(errs) == [f"{at}.limits"]
    assert errs[f"{at}.limits"].startswith(
        "Required value: Limit must be set for non overcommitable resources (nvidia.com/gpu")
    pcs.spec.template.cliques[1].spec.pod_spec.containers[0].resources = \
        ResourceRequirements.from_requests({"cpu": "4", "nvidia.com/gpu": "8"})
    assert errors(pcs) == {}


def test_role_names_are_required_and_unique() -> None:
    pcs = make_pcs("x", [("a", 1), ("b", 1)])
    pcs.spec.template.cliques[1].spec.role_name = "a"
    assert "Duplicate value" in errors(pcs)["spec.template.cliques[1].spec.roleName"]
    data = make_pcs("x", [("a", 1)]).to_dict()
    del data["spec"]["template"]["cliques"][0]["spec"]["roleName"]
    with pytest.raises(ManifestError) as err:
        from_dict(data)
    assert "spec.template.cliques[0].spec.roleName: required field is missing" in str(err.value)


def test_admission_does_not_keep_a_cluster_alive() -> None:
    """The operator's backends hold a client of the cluster whose admission checks against
    them: that cycle must not keep a finished cluster alive (a module-level map keyed by the
    cluster did, and every embedded run stayed in memory)."""
    import gc
    import types
    import weakref

    cluster = MemoryCluster()
    install_admission(cluster, types.SimpleNamespace(client=cluster))  # type: ignore[arg-type]
    gone = weakref.ref(cluster)
    del cluster
    gc.collect()
    assert gone() is None


def test_a_replicas_zero_clique_with_min_available_is_defaulted_to_one() -> None:
    """Grove's defaulting webhook (C5): replicas 0 becomes 1; an explicit minAvailable 1
    then fits, so the PodCliqueSet is admitted."""
    pcs = default_podcliqueset(make_pcs("x", [("a", 0, 1)]))
    assert (pcs.spec.template.cliques[0].spec.replicas,
            pcs.spec.template.cliques[0].spec.min_available) == (1, 1)
    assert validate_podcliqueset(pcs) == []


@pytest.mark.parametrize(("field", "value"), [
    ("nodeName", "node-001"),
    ("topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                    "whenUnsatisfiable": "DoNotSchedule"}]),
])
def test_pod_spec_fields_the_operator_owns_are_refused_on_create(field: str, value) -> None:
    """Grove's validatePodSpec on create: `must not be set` (B3). An update may keep them
    (Grove checks create only); a nodeName an update adds is refused as well, as its pods
    could never be created (test_op_admission_update.py)."""
    data = make_pcs("x", [("a", 1)]).to_dict()
    data["spec"]["template"]["cliques"][0]["spec"]["podSpec"][field] = value
    pcs = from_dict(data)
    at = f"spec.template.cliques[0].spec.podSpec.{field}"
    errs = errors(pcs)  # type: ignore[arg-type]
    assert list(errs) == [at] and errs[at].endswith(": must not be set"), errs
    stored = default_podcliqueset(pcs)  # type: ignore[arg-type]
    assert validate_podcliqueset(stored, stored) == []  # kept on update


def test_duplicate_starts_after_entries_are_refused() -> None:
    """Grove's sliceMustHaveUniqueElements on startsAfter (B5): Duplicate."""
    pcs = make_pcs("x", [("a", 1), ("b", 1)], startup="CliqueStartupTypeExplicit",
                   starts_after={"b": ["a", "a"]})
    assert errors(pcs) == {"spec.template.cliques[1].spec.startsAfter[1]":
                           'Duplicate value: "a"'}
