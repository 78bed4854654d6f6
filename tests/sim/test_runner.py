"""The run machinery (recorder, settling, steps, feasibility, explanations) with tiny
stand-ins for the operator, scheduler and kubelet; the real ones run in tests/examples."""

from pathlib import Path

import pytest

from phalanx.cluster.clock import run_virtual
from phalanx.sim.runner import RunFailed, RunOptions, Simulation
from phalanx.sim.workload import load_cluster_spec, load_config, load_workload

from .fakes import mini_components

PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: job
  annotations: {{sim.phalanx.dev/run-for: 10m}}
spec:
  replicas: {replicas}
  template:
    topologyConstraint: {{topologyName: phalanx-topology, pack: {{required: rack}}}}
    cliques:
    - name: w
      spec:
        roleName: w
        replicas: {pods}
        podSpec:
          containers:
          - name: c
            image: x
            resources: {{limits: {{nvidia.com/gpu: "8"}}}}
"""


def _run(tmp_path: Path, text: str, **opts: object):  # type: ignore[no-untyped-def]
    f = tmp_path / "w.yaml"
    f.write_text(text)
    wl = load_workload([f])
    spec, _ = load_cluster_spec(None, wl)
    cfg, _ = load_config(None, wl)
    sim = Simulation(wl, spec, cfg, RunOptions(**opts), components=mini_components())
    return run_virtual(sim.run())


def test_a_run_settles_after_scripted_pods_finish(tmp_path: Path) -> None:
    record = _run(tmp_path, PCS.format(replicas=2, pods=8))
    assert record.meta.settled
    assert [g.name for g in record.gangs] == ["job-0", "job-1"]
    for g in record.gangs:
        assert g.scheduled is not None and g.finished is not None
        assert g.finished - g.running == pytest.approx(600, abs=2)
        assert g.domain.startswith("rack=")
    # The run ends shortly after the last change, not at the 24h cap.
    assert 600 < record.meta.duration < 700
    assert record.objects["PodCliqueSet"][0]["metadata"]["name"] == "job"
    assert {t.domain for t in record.topology} == {"zone", "block", "rack", "host"}


def test_until_stops_at_the_given_time(tmp_path: Path) -> None:
    record = _run(tmp_path, PCS.format(replicas=1, pods=8), until=120.0)
    assert not record.meta.settled and record.meta.duration == pytest.approx(120, abs=1)
    assert record.gangs[0].finished is None and record.gangs[0].phase != "Succeeded"


def test_a_gang_that_can_never_fit_stays_pending_with_the_reason(tmp_path: Path) -> None:
    record = _run(tmp_path, PCS.format(replicas=1, pods=9))
    gang = record.gang("job-0")
    assert gang.phase == "Pending" and gang.scheduled is None
    assert gang.explanation.startswith("can never be scheduled on cluster default-64xh100: it "
                                       "needs 9 pods of 8 nvidia.com/gpu in one rack")


def test_scenario_steps_are_recorded_with_their_outcome(tmp_path: Path) -> None:
    steps = """
---
apiVersion: sim.phalanx.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  steps:
  - at: 1m
    nodeDown: {node: node-000}
  - at: 2m
    delete: {kind: PodCliqueSet, name: nope}
"""
    record = _run(tmp_path, PCS.format(replicas=1, pods=4) + steps, until=180.0)
    assert [(s.t, s.action, s.ok) for s in record.steps] == [
        (60.0, "nodeDown", True), (120.0, "delete", False)]
    assert "not found" in record.steps[1].error
    assert not record.node("node-000").ready


@pytest.mark.parametrize("kind", ["ClusterTopologyBinding", "ClusterTopology"])
def test_a_cluster_topology_with_labels_no_node_carries_is_refused(tmp_path: Path,
                                                                   kind: str) -> None:
    topology = f"""
---
apiVersion: grove.io/v1alpha1
kind: {kind}
metadata: {{name: dc}}
spec:
  levels:
  - {{domain: rack, key: example.com/rack}}
"""
    with pytest.raises(RunFailed, match="level rack uses node label example.com/rack, which no "
                                        "node of the cluster carries"):
        _run(tmp_path, PCS.format(replicas=1, pods=2) + topology)
