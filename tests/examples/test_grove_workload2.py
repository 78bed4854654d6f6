"""Grove's workload2 (operator/e2e/yaml/workload2.yaml; scenarios GS5-GS7) through the
operator and scheduler, as `phalanx run` runs it: a gang is satisfied when every group
reaches its own minimum, and an extra never takes the room a minimum needs.

pc-a 2 replicas (min 1) plus scaling group sg-x (pc-b 1 min 1, pc-c 3 min 1; 2 replicas,
minAvailable 1): the base PodGang holds pc-a, sg-x-0-pc-b, sg-x-0-pc-c; replica 1 of sg-x is
a scaled PodGang. One pod fits a node (80Mi of 150Mi). 3 nodes up, 2 down until 5m and 6m.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLIQUE = """    - name: {name}
      spec:
        roleName: role-{name}
        replicas: {replicas}
        minAvailable: 1
        podSpec:
          schedulerName: {scheduler}
          containers: [{{name: {name}, image: busybox, resources: {{requests: {{memory: 80Mi}}}}}}]
"""
WORKLOAD = """apiVersion: sim.phalanx.dev/v1alpha1
kind: ClusterSpec
metadata: {{name: five}}
spec:
  nodePools:
  - {{name: agent, count: 5, allocatable: {{cpu: "2", memory: 150Mi, pods: "110"}}}}
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {{name: uncordon}}
spec:
  steps:
  - {{at: 0s, nodeDown: {{node: agent-003}}}}
  - {{at: 0s, nodeDown: {{node: agent-004}}}}
  - {{at: 5m, nodeUp: {{node: agent-003}}}}
  - {{at: 6m, nodeUp: {{node: agent-004}}}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {{name: test}}
spec:
  resources:
    gpu: {{quota: -1, limit: -1, overQuotaWeight: 1}}
    cpu: {{quota: -1, limit: -1, overQuotaWeight: 1}}
    memory: {{quota: -1, limit: -1, overQuotaWeight: 1}}
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: workload2, labels: {{kai.scheduler/queue: test}}}}
spec:
  replicas: 1
  template:
    cliques:
{cliques}    podCliqueScalingGroups:
    - {{name: sg-x, replicas: 2, minAvailable: 1, cliqueNames: [pc-b, pc-c]}}
"""


@pytest.mark.parametrize("scheduler", ["phalanx-scheduler", "kai-scheduler"])
def test_minimums_first_and_the_scaled_gangs_minimum_before_the_base_gangs_extras(
    tmp_path: Path, scheduler: str
) -> None:
    cliques = "".join(
        CLIQUE.format(name=n, replicas=r, scheduler=scheduler)
        for n, r in (("pc-a", 2), ("pc-b", 1), ("pc-c", 3))
    )
    path = tmp_path / "workload2.yaml"
    path.write_text(WORKLOAD.format(cliques=cliques))
    first = subprocess.run(
        [sys.executable, "-m", "phalanx.cli.main", "run", str(path), "--until", "4m", "-o", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert first.returncode == 0, first.stderr
    early = json.loads(first.stdout)
    # GS5: with 3 nodes the base gang runs its minimum, one pod of each group (not nothing).
    assert early["totals"]["pods_running"] == 3
    assert {g["name"]: g["phase"] for g in early["gangs"]}["workload2-0"] == "Running"
    later = subprocess.run(
        [
            sys.executable,
            "-m",
            "phalanx.cli.main",
            "run",
            str(path),
            "--until",
            "10m",
            "-o",
            "json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert later.returncode == 0, later.stderr
    done = json.loads(later.stdout)
    # GS7: the 2 nodes that come back go to the scaled gang's minimum (pc-b, pc-c of sg-x-1),
    # although the base gang's 3 extras were waiting first.
    assert done["totals"]["pods_running"] == 5
    assert all(g["phase"] == "Running" for g in done["gangs"]), done["gangs"]
