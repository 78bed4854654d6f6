"""Scenario steps on the full stack (operator, scheduler, kubelet), through the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from phalanx.sim.record import load_record

WORKLOAD = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: svc}
spec:
  replicas: 2
  template:
    cliques:
    - name: w
      spec:
        replicas: 4
        podSpec:
          schedulerName: phalanx-scheduler
          containers:
          - name: c
            resources: {requests: {nvidia.com/gpu: "8"}}
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {name: chaos}
spec:
  steps:
  - at: 1m
    fail: {podGang: svc-0, count: 1}
  - at: 2m
    nodeDown: {node: NODE}
  - at: 3m
    nodeUp: {node: NODE}
  - at: 4m
    scale: {name: svc, replicas: 3}
  - at: 6m
    delete: {kind: PodCliqueSet, name: svc}
  - at: 7m
    delete: {kind: PodCliqueSet, name: svc}
"""


def _run(tmp_path: Path, text: str, *args: str):  # type: ignore[no-untyped-def]
    (tmp_path / "w.yaml").write_text(text)
    r = subprocess.run([sys.executable, "-m", "phalanx.cli.main", "run", "w.yaml",
                        "--save", "run.json", *args], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r, load_record(tmp_path / "run.json")


def test_fail_node_down_scale_and_delete_steps(tmp_path: Path) -> None:
    # Find where svc-1 lands first, so the step takes down one of its nodes.
    _, first = _run(tmp_path, WORKLOAD.replace("NODE", "node-000"), "--until", "30s")
    node = first.gang("svc-1").nodes[0]
    r, rec = _run(tmp_path, WORKLOAD.replace("NODE", node))
    steps = [(s.t, s.action, s.ok) for s in rec.steps]
    assert steps == [(60.0, "fail", True), (120.0, "nodeDown", True), (180.0, "nodeUp", True),
                     (240.0, "scale", True), (360.0, "delete", True), (420.0, "delete", False)]
    assert "not found" in rec.steps[-1].error
    assert "step at 7m failed" in r.stdout
    svc0, svc1, svc2 = (rec.gang(f"svc-{i}") for i in range(3))
    # The failed pod leaves svc-0 below minAvailable (Grove replaces pods only above it).
    assert "Degraded" in [tr.state for tr in svc0.history]
    # The pod lost with the node is replaced and placed on another node.
    lost = [p for p in rec.pods if p.gang == "svc-1" and p.node == node]
    assert lost and lost[0].deleted == 120.0
    replacement = [p for p in rec.pods if p.gang == "svc-1" and p.created and p.created >= 120]
    assert replacement and replacement[0].node != node and replacement[0].running is not None
    assert any(tr.state == "Running" and 120 < tr.t < 360 for tr in svc1.history)
    assert svc1.history[-1].state == "Deleted"
    assert svc2.created >= 240.0 and svc2.running is not None
    assert all(g.deleted is not None for g in rec.gangs)
