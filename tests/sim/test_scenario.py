import pytest
from pydantic import ValidationError

from phalanx.sim.scenario import Scenario


def _scenario(steps: list[dict]) -> Scenario:
    return Scenario.model_validate({"apiVersion": "sim.phalanx.dev/v1alpha1",
                                    "kind": "Scenario", "metadata": {"name": "s"},
                                    "spec": {"steps": steps}})


def test_steps_sort_by_time_and_keep_written_order_at_equal_times() -> None:
    s = _scenario([
        {"at": "2m", "delete": {"name": "a"}},
        {"at": 30, "scale": {"name": "a", "replicas": 3}},
        {"at": "1m", "fail": {"podGang": "a-0", "count": 1}},
        {"at": "1m", "nodeDown": {"node": "node-003"}},
    ])
    assert [(st.seconds, st.action) for st in s.ordered_steps()] == [
        (30.0, "scale"), (60.0, "fail"), (60.0, "nodeDown"), (120.0, "delete")]
    assert s.ordered_steps()[1].describe() == "fail 1 pods of gang a-0"


def test_apply_takes_one_object_or_a_list() -> None:
    obj = {"apiVersion": "v1", "kind": "PriorityClass", "metadata": {"name": "x"}, "value": 1}
    assert _scenario([{"at": "1s", "apply": obj}]).spec.steps[0].apply == [obj]


@pytest.mark.parametrize(("step", "message"), [
    ({"at": "soon", "delete": {"name": "a"}}, "invalid duration"),
    ({"at": "1s"}, "exactly one action"),
    ({"at": "1s", "delete": {"name": "a"}, "scale": {"name": "a", "replicas": 1}},
     "got scale, delete"),
    ({"at": "1s", "fail": {}}, "name the pods"),
    ({"at": "1s", "nodeDown": {}}, "name the nodes"),
    ({"at": "1s", "scale": {"name": "a", "replicas": -1}}, "greater than or equal to 0"),
    ({"at": "1s", "explode": {}}, "explode"),
    ({"at": "1s", "cordon": {}}, "name the nodes: set node, nodes or selector"),
    ({"at": "1s", "uncordon": {"nodes": "a"}}, "uncordon.nodes"),
    ({"at": "1s", "label": {"node": "a"}}, "label.labels"),
    ({"at": "1s", "label": {"node": "a", "labels": {}}}, "at least 1"),
    ({"at": "1s", "deletePod": {"count": 1}}, "name the pods"),
    ({"at": "1s", "deletePod": {"pod": "p", "exitCode": 1}}, "a deleted pod has no exit code"),
    ({"at": "1s", "cordon": {"node": "a"}, "uncordon": {"node": "a"}}, "got cordon, uncordon"),
])
def test_bad_steps_are_rejected_with_the_reason(step: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _scenario([step])


def test_new_steps_describe_themselves_and_node_steps_are_marked() -> None:
    s = _scenario([
        {"at": "0s", "cordon": {"nodes": ["n1", "n2"]}},
        {"at": "1m", "deletePod": {"podClique": "c", "count": 2, "ready": True, "cordon": True}},
        {"at": "2m", "label": {"selector": "pool=a", "labels": {"x": "y", "gone": None}}},
        {"at": "3m", "uncordon": {"node": "n1", "selector": "pool=a"}},
        {"at": "4m", "deletePod": {"node": "n2"}},
    ])
    steps = s.ordered_steps()
    assert [st.describe() for st in steps] == [
        "cordon nodes n1, n2", "delete 2 ready pods of clique c",
        "label nodes pool=a: x=y, gone-", "uncordon node n1 and nodes pool=a",
        "delete pods of node n2"]
    assert [st.acts_on_nodes_only for st in steps] == [True, False, True, True, False]


def test_snapshot_every_is_a_positive_duration() -> None:
    ok = Scenario.model_validate({"apiVersion": "sim.phalanx.dev/v1alpha1", "kind": "Scenario",
                                  "metadata": {"name": "s"}, "spec": {"snapshotEvery": "30s"}})
    assert ok.spec.snapshot_seconds == 30.0
    with pytest.raises(ValidationError, match="positive duration"):
        Scenario.model_validate({"apiVersion": "sim.phalanx.dev/v1alpha1", "kind": "Scenario",
                                 "metadata": {"name": "s"}, "spec": {"snapshotEvery": "0s"}})


@pytest.mark.parametrize(("step", "path", "message"), [
    ({"finish": {"podClique": "w", "exitCode": 3}}, "spec.steps.0.finish.exit_code",
     "a pod whose container exits 3 ends Failed, not Succeeded"),
    ({"fail": {"podClique": "w", "exitCode": 0}}, "spec.steps.0.fail.exit_code",
     "exit code 0 is a success, not a failure"),
])
def test_exit_codes_are_what_a_kubelet_would_report(step: dict, path: str,
                                                    message: str) -> None:
    """A kubelet reports Succeeded only when the containers exited 0, and exit code 0 is
    never a failure: finish with a non-zero code, fail with 0, are refused at the field."""
    with pytest.raises(ValidationError) as err:
        _scenario([{"at": "1s", **step}])
    [problem] = err.value.errors()
    assert ".".join(str(p) for p in problem["loc"]).replace("exitCode", "exit_code") == path
    assert message in problem["msg"]


def test_fail_and_finish_keep_their_codes() -> None:
    steps = _scenario([{"at": "1s", "fail": {"pod": "p", "exitCode": 137}},
                       {"at": "2s", "finish": {"pod": "p", "exitCode": 0}},
                       {"at": "3s", "finish": {"pod": "p"}}]).spec.steps
    assert [s.fail.exit_code if s.fail else s.finish.exit_code for s in steps] == [137, 0, None]
