"""Grove's e2e queues (operator/e2e/yaml/queues.yaml, unmodified: KAI Queues `default` and its
child `test`) apply on the embedded cluster, as Grove's e2e setup applies them before any
workload (operator/e2e/setup/kai_scheduler.go); workload1.yaml, whose cliques name queue `test`,
then schedules in full and the queues report what it holds."""

from __future__ import annotations

from pathlib import Path

from phalanx.api.loader import load_file

from tests.grove_e2e.harness import FIXTURES, pods_of, run_e2e


def test_grove_queues_yaml_loads_as_kai_queues() -> None:
    objs = load_file(FIXTURES / "queues.yaml")
    assert [(o.KIND, o.metadata.name, o.parent) for o in objs] == [
        ("Queue", "default", ""), ("Queue", "test", "default")]


def test_grove_queues_yaml_then_workload1_runs_in_queue_test(tmp_path: Path) -> None:
    run = run_e2e(tmp_path, "workload1.yaml", nodes=10)  # queues.yaml first
    pods = pods_of(run.final, "workload1")
    assert len(pods) == 10 and all(p["spec"].get("nodeName") for p in pods)
    queues = {q["metadata"]["name"]: q for q in run.final["Queue"]}
    assert queues["default"]["status"]["childQueues"] == ["test"]
    # Every workload1 pod asks for 80Mi: the leaf and its parent both hold all ten.
    for name in ("test", "default"):
        assert queues[name]["status"]["allocated"]["memory"] == "800Mi", name
