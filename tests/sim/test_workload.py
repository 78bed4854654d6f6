from pathlib import Path

import pytest

from phalanx.api.config import ConfigError
from phalanx.api.errors import ManifestError
from phalanx.sim.workload import Workload, load_cluster_spec, load_config, load_workload

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


PCS_HEAD = ("apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata:\n  name: x\n"
            "  annotations: {PCS}\nspec:\n  template:\n    cliques:\n    - name: a\n"
            "      annotations: {CLIQUE}\n      spec:\n        roleName: a\n        replicas: 1\n"
            "        podSpec: {containers: [{name: c}]}\n")


def _pcs(pcs: str = "{}", clique: str = "{}") -> str:
    return PCS_HEAD.replace("{PCS}", pcs).replace("{CLIQUE}", clique)


RUN, FAIL, CODE = "sim.phalanx.dev/run-for", "sim.phalanx.dev/fail-after", \
    "sim.phalanx.dev/exit-code"


@pytest.mark.parametrize(("pcs", "clique", "where"), [
    (f"{{{RUN}: 10s, {FAIL}: 30s}}", "{}", "metadata.annotations: "),
    ("{}", f"{{{RUN}: 10s, {FAIL}: 30s}}", r"spec.template.cliques\[0\].annotations: "),
    (f"{{{FAIL}: 30s}}", f"{{{RUN}: 10s}}",
     rf"spec.template.cliques\[0\].annotations\[{RUN}\]: "),
])
def test_a_pod_scripted_to_both_finish_and_fail_is_refused(tmp_path: Path, pcs: str,
                                                            clique: str, where: str) -> None:
    """fail-after would win and run-for be lost: refused, naming both annotations."""
    with pytest.raises(ManifestError, match=where) as err:
        load_workload([_write(tmp_path, _pcs(pcs, clique))])
    assert RUN in str(err.value) and FAIL in str(err.value)


def test_a_podcliquesets_run_for_with_a_cliques_fail_after_is_the_cliques_own_script(
        tmp_path: Path) -> None:
    """The narrower script wins, which is what fail-after's precedence gives here."""
    wl = load_workload([_write(tmp_path, _pcs(f"{{{RUN}: 10m}}", f"{{{FAIL}: 20m}}"))])
    assert [o.kind for o in wl.objects] == ["PodCliqueSet"]


def test_a_scripted_failure_with_exit_code_0_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=rf"\[{CODE}\]: must not be 0"):
        load_workload([_write(tmp_path, _pcs(f"{{{FAIL}: 30s, {CODE}: '0'}}"))])


SCENARIO = ("apiVersion: sim.phalanx.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
            "spec:\n  steps:\n  - at: 10s\n    apply:\n")


@pytest.mark.parametrize("doc", [
    ("{apiVersion: sim.phalanx.dev/v1alpha1, kind: ClusterSpec, metadata: {name: bigger}, "
     "spec: {nodePools: [{name: p, count: 100, allocatable: {cpu: '1'}}]}}"),
    ("{apiVersion: sim.phalanx.dev/v1alpha1, kind: Scenario, metadata: {name: nested}, "
     "spec: {steps: [{at: 20s, cordon: {node: node-000}}]}}"),
    ("{apiVersion: operator.config.grove.io/v1alpha1, kind: OperatorConfiguration, "
     "metadata: {name: x}}"),
    "{apiVersion: kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration}",
])
def test_a_step_cannot_apply_what_is_read_when_the_run_starts(tmp_path: Path, doc: str) -> None:
    """A step created these as if they were API objects and reported them "created", and
    they did nothing: refused when the scenario is read, naming the step."""
    kind = doc.split("kind: ")[1].split(",")[0].rstrip("}")
    with pytest.raises(ManifestError) as err:
        load_workload([_write(tmp_path, SCENARIO + f"    - {doc}\n")])
    assert str(err.value).startswith(
        f"{tmp_path / 'w.yaml'}: Scenario s: spec.steps[0].apply[0] (the step at 10s): a {kind} "
        "is read when the run starts, not created by a step")


CONFIG_DOC = ("apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
              "scheduler: {defaultProfileName: volcano}\n")


def test_a_workload_files_config_is_checked_and_named_even_when_config_replaces_it(
        tmp_path: Path) -> None:
    wl = load_workload([_write(tmp_path, CONFIG_DOC)])
    given = tmp_path / "given.yaml"
    given.write_text("apiVersion: operator.config.grove.io/v1alpha1\n"
                     "kind: OperatorConfiguration\n")
    for flag in (given, None):
        with pytest.raises(ConfigError) as err:
            load_config(flag, wl)
        assert str(err.value).startswith(f"{tmp_path / 'w.yaml'}: ")
        assert [e.path for e in err.value.errors] == ["scheduler.defaultProfileName"]


def test_the_scheduler_plugins_profile_is_known_to_run_and_validate(tmp_path: Path) -> None:
    """Registered by the backends package, imported before the configuration is checked
    (from a flag's file or a workload file)."""
    text = ("apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
            "scheduler:\n  profiles:\n  - name: scheduler-plugins\n"
            "    config: {scheduleTimeout: 90s}\n  - name: phalanx-scheduler\n")
    path = _write(tmp_path, text)
    for flag, wl in ((path, Workload()), (None, load_workload([path]))):
        cfg, _ = load_config(flag, wl)
        assert cfg.scheduler.profile_names()[0] == "scheduler-plugins"
