"""Grove's scale tests (ai-dynamo/grove operator/e2e/tests/scale/), as data.

Every Grove scale workload is one PodCliqueSet of `replicas` replicas of one clique of two
pods (`yaml/`, copied unmodified). A scenario deploys it at `initial` replicas, then (scale
tests) patches `spec.replicas` to `target`, as Grove's `ScalePCS` does; ScaleTest_1000 instead
deletes it once it is available. `PcsgScaleUp` is ours (issue 28, Grove #847): a scaling group
scaled up by 100 replicas, timed until every new pod's gate is lifted.

`scaled(factor)` shrinks a scenario for a machine or a CI run that cannot afford Grove's
size; the result records the replica counts actually run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import yaml

PODS_PER_REPLICA = 2  # every Grove scale workload: one clique, replicas: 2


@dataclass(frozen=True)
class Scenario:
    name: str
    yaml_file: str | None  # None: built here (PcsgScaleUp)
    initial: int           # PodCliqueSet (or scaling group) replicas deployed
    target: int | None     # replicas after the scale step; None: deploy, then delete
    worker_nodes: int      # Grove's kwok node count for it
    soak_cycles: int = 0   # SoakChurn: scale initial -> target -> initial this many times
    soak_hold: float = 0.0  # seconds held at the peak in each cycle (Grove: 30 s)

    @property
    def kind(self) -> str:
        if self.soak_cycles:
            return "soak"
        if self.yaml_file is None:
            return "pcsg-scale-up"
        return "deploy-delete" if self.target is None else "scale"

    def scaled(self, factor: float) -> Scenario:
        """The scenario with replica counts multiplied by `factor` (at least 1 where Grove's
        count is not 0)."""
        def f(n: int | None) -> int | None:
            return None if n is None else (0 if n == 0 else max(1, math.floor(n * factor)))

        target = f(self.target)
        initial = f(self.initial) or 0
        if self.kind == "soak" and target is not None and target <= initial:
            target = initial + 1
        return replace(self, initial=initial, target=target)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("ScaleTest_1000", "scale-test-1000.yaml", 500, None, 100),
    Scenario("ScaleUp_Tiny", "scale-up-tiny.yaml", 0, 5, 5),
    Scenario("ScaleUp_FromZero", "scale-up-from-zero.yaml", 0, 500, 30),
    Scenario("ScaleUp", "scale-up.yaml", 250, 500, 30),
    Scenario("ScaleDown_Tiny", "scale-down-tiny.yaml", 5, 0, 5),
    Scenario("ScaleDown_ToZero", "scale-down-to-zero.yaml", 500, 0, 30),
    Scenario("ScaleDown", "scale-down.yaml", 500, 250, 30),
    Scenario("SoakChurn", "soak-churn.yaml", 25, 50, 30, soak_cycles=10, soak_hold=30.0),
    Scenario("PcsgScaleUp", None, 1, 101, 30),
)}

# Grove's kwok nodes: what its workloads' node affinity and tolerations expect (the scale
# workloads select `type: kwok`, its e2e workloads such as workload1 the agent role).
NODE_LABELS = {"type": "kwok", "node_role.e2e.grove.nvidia.com": "agent"}
NODE_TAINT = {"key": "node_role.e2e.grove.nvidia.com", "value": "agent", "effect": "NoSchedule"}


def workload(scenario: Scenario, *, scheduler_name: str) -> dict[str, Any]:
    """The PodCliqueSet document the scenario deploys, at its initial replicas, its pods
    naming `scheduler_name` (Grove's YAML names default-scheduler)."""
    if scenario.yaml_file is None:
        doc = _pcsg_workload()
    else:
        text = resources.files(__package__).joinpath("yaml", scenario.yaml_file).read_text()
        doc = next(d for d in yaml.safe_load_all(text) if d)
    doc["spec"]["replicas"] = 1 if scenario.kind == "pcsg-scale-up" else scenario.initial
    for clique in doc["spec"]["template"]["cliques"]:
        clique["spec"]["podSpec"]["schedulerName"] = scheduler_name
    if scenario.kind == "pcsg-scale-up":
        doc["spec"]["template"]["podCliqueScalingGroups"][0]["replicas"] = scenario.initial
    return doc


def _pcsg_workload() -> dict[str, Any]:
    """Grove's scale workload with its clique in a scaling group (the shape of Grove #847)."""
    text = resources.files(__package__).joinpath("yaml", "scale-up-tiny.yaml").read_text()
    doc = next(d for d in yaml.safe_load_all(text) if d)
    doc["metadata"]["name"] = doc["metadata"]["labels"]["app"] = "pcsg-scale-up"
    doc["spec"]["template"]["podCliqueScalingGroups"] = [
        {"name": "sg", "cliqueNames": [doc["spec"]["template"]["cliques"][0]["name"]],
         "replicas": 1, "minAvailable": 1}]
    return doc


def pods_for(scenario: Scenario, replicas: int) -> int:
    return replicas * PODS_PER_REPLICA
