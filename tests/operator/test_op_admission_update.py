"""What an update may not change (phalanx/operator/admission_update.py), with Grove's rows
ported from operator/internal/webhook/admission/pcs/validation/podcliqueset_test.go, each
test named after Grove's row: TestPodCliqueUpdateValidation, the clique rows of
TestImmutableFieldsValidation (the resource sharing rows: test_op_resource_sharing.py) and
TestPodCliqueScalingGroupConfigsUpdateValidation (resource sharing rows as well). Grove's
fixtures: a PodCliqueSet `test` with clique `test` (role `dummy-role`, 1 replica,
minAvailable 1) and cliques `createDummyPodCliqueTemplate(name)`."""

from __future__ import annotations

import pytest
from op_harness import NS, make_pcs

from phalanx.api.grove import PodCliqueScalingGroupConfig, PodCliqueSet
from phalanx.cluster.client import Invalid
from phalanx.cluster.clock import run_virtual
from phalanx.cluster.memory import MemoryCluster
from phalanx.operator import default_podcliqueset, install_admission, validate_podcliqueset
from phalanx.operator.admission_update import update_errors

ANY, IN_ORDER, EXPLICIT = ("CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder",
                           "CliqueStartupTypeExplicit")


def dummy(*names: str, startup: str = ANY) -> PodCliqueSet:
    """createTestPodCliqueSet with its cliques replaced by createDummyPodCliqueTemplate(n)."""
    pcs = make_pcs("test", [("test", 1, 1)], startup=startup)
    pcs.spec.template.cliques = [  # (models do not validate on assignment: [] is kept)
        make_pcs("test", [(n, 1, 1)]).spec.template.cliques[0] for n in names]
    for c in pcs.spec.template.cliques:
        c.spec.role_name = f"dummy-{c.name}-role"
    return pcs


def grove_test_pcs() -> PodCliqueSet:
    """createTestPodCliqueSet("test")."""
    pcs = make_pcs("test", [("test", 1, 1)], startup=ANY)
    pcs.spec.template.cliques[0].spec.role_name = "dummy-role"
    return pcs


def messages(new: PodCliqueSet, old: PodCliqueSet) -> str:
    return str([f"{path}: {why}" for path, why in update_errors(new, old)])


# --- TestPodCliqueUpdateValidation ------------------------------------------------------------

@pytest.mark.parametrize(("startup", "old", "new", "expected"), [
    pytest.param(ANY, ["prefill", "decode"], ["decode", "prefill"], None,
                 id="Valid: same cliques in different order with AnyOrder"),
    pytest.param(ANY, ["prefill"], ["prefill", "decode"],
                 "not allowed to change clique composition", id="Invalid: adding new clique"),
    pytest.param(ANY, ["prefill", "decode"], ["prefill"],
                 "not allowed to change clique composition", id="Invalid: removing clique"),
    pytest.param(IN_ORDER, ["prefill", "decode"], ["decode", "prefill"],
                 "clique order cannot be changed when StartupType is InOrder or Explicit",
                 id="Invalid: InOrder doesn't allow order change"),
    pytest.param(EXPLICIT, ["prefill", "decode"], ["decode", "prefill"],
                 "clique order cannot be changed when StartupType is InOrder or Explicit",
                 id="Invalid: Explicit doesn't allow order change"),
    pytest.param(IN_ORDER, ["prefill", "decode"], ["prefill", "decode"], None,
                 id="Valid: InOrder allows same order"),
    pytest.param(IN_ORDER, [], [], None, id="Edge case: empty arrays"),
])
def test_pod_clique_update_validation(startup: str, old: list[str], new: list[str],
                                      expected: str | None) -> None:
    got = messages(dummy(*new, startup=startup), dummy(*old, startup=startup))
    if expected is None:
        assert got == "[]"
    else:
        assert expected in got


def test_the_reordered_clique_is_named_with_its_expected_position() -> None:
    got = update_errors(dummy("decode", "prefill", startup=IN_ORDER),
                        dummy("prefill", "decode", startup=IN_ORDER))
    message = ('Invalid value: "decode": clique order cannot be changed when StartupType is '
               "InOrder or Explicit. Expected 'prefill' at position 0, got 'decode'")
    assert ("spec.template.cliques", message) in got


# --- TestImmutableFieldsValidation (the clique rows) ------------------------------------------

def _with(**changes: object) -> PodCliqueSet:
    pcs = grove_test_pcs()
    for key, value in changes.items():
        if key == "priority_class_name":
            pcs.spec.template.priority_class_name = value  # type: ignore[assignment]
        elif key == "scheduler_name":
            pcs.spec.template.cliques[0].spec.pod_spec.scheduler_name = value  # type: ignore[assignment]
        else:
            setattr(pcs.spec.template.cliques[0].spec, key, value)
    return pcs


@pytest.mark.parametrize(("old", "new", "field"), [
    pytest.param({"priority_class_name": "old-priority"}, {"priority_class_name": "new-priority"},
                 None, id="Valid: PriorityClassName can be updated"),
    pytest.param({"role_name": "old-role"}, {"role_name": "new-role"}, "roleName",
                 id="Invalid: RoleName is immutable"),
    pytest.param({"min_available": 1}, {"min_available": 2}, "minAvailable",
                 id="Invalid: MinAvailable is immutable"),
    pytest.param({"role_name": "old-role", "min_available": 1, "starts_after": ["dep1"]},
                 {"role_name": "new-role", "min_available": 2, "starts_after": ["dep1", "dep2"]},
                 "roleName", id="Edge case: Multiple immutable field violations"),
    pytest.param({"scheduler_name": ""}, {"scheduler_name": "default-scheduler"},
                 "podSpec.schedulerName", id="Invalid: schedulerName is immutable"),
])
def test_immutable_fields_validation(old: dict, new: dict, field: str | None) -> None:
    errs = dict(update_errors(_with(**new), _with(**old)))
    if field is None:
        assert errs == {}
        return
    assert errs[f"spec.template.cliques[0].spec.{field}"].endswith(": field is immutable"), errs
    if len(new) > 1:
        assert len(errs) == len(new)


def test_starts_after_is_immutable() -> None:
    """Invalid: StartsAfter is immutable (Grove's row: a second clique `clique2`)."""
    def pcs(after: list[str]) -> PodCliqueSet:
        out = dummy("test", "clique2", startup=EXPLICIT)
        out.spec.template.cliques[0].spec.starts_after = []
        out.spec.template.cliques[1].spec.starts_after = after
        return out

    errs = dict(update_errors(pcs(["test", "another"]), pcs(["test"])))
    assert errs == {"spec.template.cliques[1].spec.startsAfter":
                    'Invalid value: ["test","another"]: field is immutable'}


def test_a_reordered_clique_is_compared_with_its_old_self() -> None:
    """Under AnyOrder cliques are matched by name: a reorder alone changes nothing, and an
    immutable field changed in a reordered clique is named at its new index."""
    old = default_podcliqueset(make_pcs("x", [("a", 2), ("b", 1)]))
    new = old.model_copy(deep=True)
    new.spec.template.cliques.reverse()
    assert validate_podcliqueset(new, old) == []
    new.spec.template.cliques[1].spec.min_available = 1
    assert dict(update_errors(new, old)) == {
        "spec.template.cliques[1].spec.minAvailable": "Invalid value: 1: field is immutable"}


def test_a_node_name_added_by_an_update_is_refused() -> None:
    old = default_podcliqueset(make_pcs("x", [("a", 1)]))
    new = old.model_copy(deep=True)
    new.spec.template.cliques[0].spec.pod_spec.node_name = "node-1"
    assert dict(update_errors(new, old)) == {
        "spec.template.cliques[0].spec.podSpec.nodeName": 'Invalid value: "node-1": must not '
                                                          "be set"}


# --- TestPodCliqueScalingGroupConfigsUpdateValidation -----------------------------------------

def _groups(*groups: tuple[list[str], int | None]) -> PodCliqueSet:
    pcs = grove_test_pcs()
    pcs.spec.template.pod_clique_scaling_groups = [
        # Grove's rows leave the name empty, which Phalanx's model refuses: built unchecked.
        PodCliqueScalingGroupConfig.model_construct(name="", clique_names=names,
                                                    min_available=floor)
        for names, floor in groups]
    return pcs


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param([(["clique1", "clique2"], 1)], [(["clique1", "clique2"], 1)], None,
                 id="same configs - should pass"),
    pytest.param([(["clique1", "clique2"], 1)], [(["clique1", "clique3"], 1)],
                 "field is immutable", id="different clique names - should fail"),
    pytest.param([(["clique1", "clique2"], 1)], [(["clique1", "clique2"], 2)],
                 "field is immutable", id="different min available - should fail"),
    pytest.param([(["clique1"], 1)], [(["clique1"], 1), (["clique2"], 1)],
                 "not allowed to add or remove", id="adding new config - should fail"),
    pytest.param([(["clique1"], 1), (["clique2"], 1)], [(["clique1"], 1)],
                 "not allowed to add or remove", id="removing config - should fail"),
    pytest.param(None, [], None, id="nil to empty slice - should pass"),
    pytest.param([], None, None, id="empty slice to nil - should pass"),
    pytest.param([(["clique1"], None)], [(["clique1"], None)], None,
                 id="nil min available in both - should pass"),
    pytest.param([(["clique1"], None)], [(["clique1"], 1)], "field is immutable",
                 id="nil to non-nil min available - should fail"),
])
def test_pod_clique_scaling_group_configs_update_validation(old, new, expected) -> None:
    before, after = _groups(*(old or ())), _groups(*(new or ()))
    if old is None:
        before.spec.template.pod_clique_scaling_groups = None
    if new is None:
        after.spec.template.pod_clique_scaling_groups = None
    got = messages(after, before)
    if expected is None:
        assert got == "[]"
    else:
        assert expected in got


def test_scaling_groups_are_matched_by_name() -> None:
    """Grove keys the old groups by name: reordering them is no change (C2), a new name is."""
    old = default_podcliqueset(make_pcs("x", [("a", 1), ("b", 1)],
                                        groups=[("g", ["a"], 1, 1), ("h", ["b"], 2, 1)]))
    new = old.model_copy(deep=True)
    new.spec.template.pod_clique_scaling_groups.reverse()
    assert validate_podcliqueset(new, old) == []
    new.spec.template.pod_clique_scaling_groups[0].name = "k"
    assert dict(update_errors(new, old)) == {
        "spec.template.podCliqueScalingGroups[0].name": "Forbidden: not allowed to change "
        "scaling group composition, new scaling group name 'k' is not allowed"}


def test_reorders_are_admitted_by_the_cluster_and_order_changes_refused_under_in_order() -> None:
    async def main() -> None:
        cluster = MemoryCluster()
        install_admission(cluster, None)
        for name, startup in (("any", None), ("ordered", IN_ORDER)):
            pcs = await cluster.create(make_pcs(name, [("a", 1), ("b", 1)], startup=startup,
                                                groups=[("g", ["a"], 1, 1),
                                                        ("h", ["b"], 1, 1)]))
            pcs.spec.template.pod_clique_scaling_groups.reverse()
            pcs = await cluster.update(pcs)
            pcs.spec.template.cliques.reverse()
            if startup is None:
                stored = await cluster.update(pcs)
                assert [c.name for c in stored.spec.template.cliques] == ["b", "a"]
            else:
                with pytest.raises(Invalid) as err:
                    await cluster.update(pcs)
                assert err.value.field == "spec.template.cliques"
        assert [g.name for g in (await cluster.get(PodCliqueSet, "ordered", NS))
                .spec.template.pod_clique_scaling_groups] == ["h", "g"]

    run_virtual(main)
