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
])
def test_bad_steps_are_rejected_with_the_reason(step: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _scenario([step])
