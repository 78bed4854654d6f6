"""Which PodGang changes wake the PodCliqueSet controller (podcliqueset._gang_changed).

The PodClique controller writes each PodGang's pod references; the PodCliqueSet controller
plans nothing from them, so they must not cost it a reconcile of every replica. Any other
change of the spec, or the start of a deletion, must."""

from datetime import UTC, datetime

from phalanx.api.grove import PodGang
from phalanx.operator.podcliqueset import _gang_changed


def _gang(generation: int, refs: list[str], min_replicas: int = 2) -> PodGang:
    return PodGang.model_validate({
        "apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
        "metadata": {"name": "g", "namespace": "ns", "generation": generation},
        "spec": {"podgroups": [{"name": "a", "minReplicas": min_replicas, "podReferences": [
            {"namespace": "ns", "name": r} for r in refs]}]}})


def test_pod_references_alone_wake_nothing():
    assert not _gang_changed(_gang(1, []), _gang(2, ["p0", "p1"]))


def test_a_status_or_metadata_update_wakes_nothing():
    assert not _gang_changed(_gang(2, ["p0"]), _gang(2, ["p0"]))


def test_any_other_spec_change_wakes_it_even_with_new_references():
    assert _gang_changed(_gang(1, []), _gang(2, [], min_replicas=1))
    assert _gang_changed(_gang(1, []), _gang(2, ["p0"], min_replicas=1))


def test_the_start_of_a_deletion_wakes_it():
    old, new = _gang(2, ["p0"]), _gang(2, ["p0"])
    new.metadata.deletion_timestamp = datetime(2026, 1, 1, tzinfo=UTC)
    assert _gang_changed(old, new)
