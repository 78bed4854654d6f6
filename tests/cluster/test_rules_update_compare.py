"""The one comparison an update makes (`rules.spec_field_changes`), and the generation and
no-op checks built on it, agree with comparing the objects whole."""

import pytest

from phalanx.cluster import rules

from .kinds import Pod, Widget, make_pod, widget


def _variants() -> list[tuple[str, Pod, Pod]]:
    base = make_pod("p", gates=("a.io/x",), labels={"app": "a"})
    same = base.copy_deep()
    ungated = base.copy_deep()
    ungated.spec.scheduling_gates = []
    relabelled = base.copy_deep()
    relabelled.metadata.labels["app"] = "b"
    restatused = base.copy_deep()
    restatused.status.phase = "Running"
    cached = base.copy_deep()
    _ = base.spec.total_requests  # a derived value cached on one side only is no change
    return [("identical", base, same), ("gate removed", base, ungated),
            ("label changed", base, relabelled), ("status changed", base, restatused),
            ("cached value on one side", base, cached)]


@pytest.mark.parametrize(("case", "old", "new"), _variants(), ids=lambda v: v if isinstance(v, str) else "")
def test_spec_field_changes_agree_with_whole_comparison(case, old, new):
    fields = rules.spec_field_changes(old, new)
    assert fields is not None
    assert bool(fields) == (old.spec != new.spec)
    assert rules.spec_changed(Pod, old, new, fields) == rules.spec_changed(Pod, old, new)
    assert rules.unchanged(Pod, old, new, fields) == (old == new)


def test_a_gate_removal_is_one_changed_field():
    old = make_pod("p", gates=("a.io/x",))
    new = old.copy_deep()
    new.spec.scheduling_gates = []
    assert rules.spec_field_changes(old, new) == {"scheduling_gates"}


def test_the_same_spec_object_is_no_change():
    pod = make_pod("p")
    assert rules.spec_field_changes(pod, pod.model_copy()) == set()


def test_another_kind_counts_its_spec_changes():
    old = widget("w")
    new = old.copy_deep()
    new.spec.replicas = 3
    fields = rules.spec_field_changes(old, new)
    assert fields == {"replicas"}
    assert rules.spec_changed(Widget, old, new, fields)
    assert not rules.unchanged(Widget, old, new, fields)
