"""Scenario steps on the full stack (operator, scheduler, kubelet), through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from phalanx.cli.main import app
from phalanx.sim.record import load_record
from tests.podnames import hostname

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
        roleName: w
        replicas: 4
        podSpec:
          schedulerName: phalanx-scheduler
          containers:
          - name: c
            image: x
            resources: {limits: {nvidia.com/gpu: "8"}}
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
    # The failed pod's container is restarted in place (restartPolicy Always, Grove's
    # default): svc-0 never drops below minAvailable and none of its pods is replaced.
    assert "Degraded" not in [tr.state for tr in svc0.history]
    svc0_pods = [p for p in rec.pods if p.gang == "svc-0"]
    assert len(svc0_pods) == 4 and all(p.phase == "Running" for p in svc0_pods)
    # The pod lost with the node is replaced and placed on another node.
    lost = [p for p in rec.pods if p.gang == "svc-1" and p.node == node]
    assert lost and lost[0].deleted == 120.0
    replacement = [p for p in rec.pods if p.gang == "svc-1" and p.created and p.created >= 120]
    assert replacement and replacement[0].node != node and replacement[0].running is not None
    assert any(tr.state == "Running" and 120 < tr.t < 360 for tr in svc1.history)
    assert svc1.history[-1].state == "Deleted"
    assert svc2.created >= 240.0 and svc2.running is not None
    assert all(g.deleted is not None for g in rec.gangs)


NODE_STEPS = """
apiVersion: sim.phalanx.dev/v1alpha1
kind: ClusterSpec
metadata: {name: four}
spec:
  topology:
  - {domain: rack, key: example.com/rack}
  - {domain: host, key: kubernetes.io/hostname}
  nodePools:
  - name: n
    count: 4
    allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "8", pods: "110"}
    nodesPer: {rack: 2}
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: svc}
spec:
  replicas: 1
  template:
    cliques:
    - name: w
      spec:
        roleName: w
        replicas: 3
        minAvailable: 2
        podSpec:
          schedulerName: phalanx-scheduler
          containers:
          - name: c
            image: x
            resources: {requests: {nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {name: nodes}
spec:
  snapshotEvery: 30s
  steps:
  - at: 0s
    cordon: {nodes: [n-000, n-001]}         # before the workload: only n-002, n-003 usable
  - at: 1m
    uncordon: {nodes: [n-000, n-001]}
  - at: 2m
    deletePod: {pod: svc-0-w-0, cordon: true}
  - at: 3m
    label: {selector: example.com/rack=rack-1, labels: {example.com/rack: rack-9, gone: null}}
  - at: 4m
    cordon: {node: nope}
"""


def _get(tmp_path: Path, *args: str):
    """`phalanx get ARGS --run run.json` in this process (a process start per call made
    this test the slowest of its kind; the error cases below still go through the entry point)."""
    return CliRunner().invoke(app, ["get", *args, "--run", str(tmp_path / "run.json")])


def test_cordon_uncordon_delete_pod_and_label_steps_with_snapshots_and_get(
        tmp_path: Path) -> None:
    r, rec = _run(tmp_path, NODE_STEPS)
    assert [(s.t, s.action, s.ok) for s in rec.steps] == [
        (0.0, "cordon", True), (60.0, "uncordon", True), (120.0, "deletePod", True),
        (180.0, "label", True), (240.0, "cordon", False)]
    assert rec.steps[-1].error == "node nope does not exist"
    assert "step at 4m failed" in r.stdout

    def pods_at(t: str) -> dict[str, str]:
        out = _get(tmp_path, "pods", "--at", t, "-o", "wide")
        assert out.exit_code == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                    "NOMINATED", "NODE", "READINESS", "GATES"]
        table = {ln.split()[0]: ln.split()[6] for ln in lines[1:]}
        # By hostname (`<podclique>-<index>`): the table shows the pods' generated names.
        listed = json.loads(_get(tmp_path, "pods", "--at", t, "-o", "json").stdout)
        host = {o["metadata"]["name"]: hostname(o) for o in listed.get("items", [listed])}
        return {host[name]: node for name, node in table.items()}

    # Cordoned before the workload existed: 2 pods (minAvailable) ran on n-002 and n-003, the
    # third waited for the uncordon at 1m.
    before_uncordon = pods_at("59s")
    assert sorted(before_uncordon.values()) == ["<none>", "n-002", "n-003"]
    after = pods_at("1m59s")
    assert "<none>" not in after.values() and len(set(after.values())) == 3
    # deletePod with cordon: its node is cordoned, the replacement lands elsewhere.
    victim = after["svc-0-w-0"]
    final = pods_at("10m")
    assert final["svc-0-w-0"] not in (victim, "<none>")
    nodes = {n["metadata"]["name"]: n for n in rec.objects["Node"]}
    assert nodes[victim]["spec"]["unschedulable"] is True
    assert [n for n, o in nodes.items() if o["spec"].get("unschedulable")] == [victim]
    relabelled = [n for n, o in nodes.items()
                  if o["metadata"]["labels"].get("example.com/rack") == "rack-9"]
    assert sorted(relabelled) == ["n-002", "n-003"]
    assert {s.label for s in rec.snapshots if s.label.startswith("before")} == {
        "before step 1 (cordon)", "before step 2 (uncordon)", "before step 3 (deletePod)",
        "before step 4 (label)", "before step 5 (cordon)"}
    assert [s.t for s in rec.snapshots if s.label == "every 30s"][:4] == [30.0, 60.0, 90.0, 120.0]

    got = _get(tmp_path, "node", victim, "-o", "json")
    assert got.exit_code == 0 and json.loads(got.stdout)["spec"]["unschedulable"] is True
    table = _get(tmp_path, "nodes").stdout
    assert f"{victim}   Ready,SchedulingDisabled" in table
    for args, message in ((["widgets"], "widgets"), (["pods", "nope"], 'pods "nope" not found'),
                          (["pods", "--at", "soon"], "--at: invalid duration"),
                          (["pods", "-o", "xml"], "--output"),
                          (["pods", "-l", "a==="], "--selector")):
        # Through the entry point, which turns expected errors into one line.
        bad = subprocess.run([sys.executable, "-m", "phalanx.cli.main", "get", *args,
                              "--run", "run.json"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60)
        assert bad.returncode != 0 and message in bad.stderr and "Traceback" not in bad.stderr
