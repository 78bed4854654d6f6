from pathlib import Path

import pytest

from phalanx.api.errors import ManifestError
from phalanx.sim.workload import load_cluster_spec, load_config, load_workload

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_examples_load_with_their_steps() -> None:
    wl = load_workload([EXAMPLES / "preemption.yaml"])
    assert [f"{o.kind}/{o.name}" for o in wl.objects] == [
        "PriorityClass/low", "PriorityClass/urgent", "PodCliqueSet/batch"]
    assert [(s.seconds, s.describe()) for s in wl.steps] == [
        (120.0, "create PodCliqueSet urgent")]


def test_cluster_and_config_default_when_not_given() -> None:
    wl = load_workload([EXAMPLES / "training-rack.yaml"])
    spec, source = load_cluster_spec(None, wl)
    assert (spec.node_count(), source) == (64, "built-in")
    cfg, source = load_config(None, wl)
    assert source == "built-in"
    assert "phalanx-scheduler" in cfg.scheduler.profile_names()


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "w.yaml"
    p.write_text(text)
    return p


def test_missing_file() -> None:
    with pytest.raises(FileNotFoundError):
        load_workload(["/nonexistent/workload.yaml"])


@pytest.mark.parametrize(("text", "message"), [
    ("kind: [unclosed\n", "malformed YAML at line 2"),
    ("", "holds no objects"),
    ("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x}\n"
     "spec: {replicas: -1, template: {cliques: []}}\n", "spec.replicas"),
    ("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata:\n  name: x\n  annotations:\n"
     "    sim.phalanx.dev/run-for: forever\n"
     "spec:\n  template:\n    cliques:\n    - name: a\n      spec:\n        roleName: a\n        replicas: 1\n"
     "        podSpec: {containers: [{name: c}]}\n", "sim.phalanx.dev/run-for"),
    ("apiVersion: sim.phalanx.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n"
     "  steps:\n  - at: 1m\n    apply: {apiVersion: v1, kind: PriorityClass, metadata: {name: p}}\n",
     r"spec.steps\[0\].apply\[0\]"),
])
def test_bad_input_names_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_workload([_write(tmp_path, text)])
