"""The scheduler's configuration file (kube-scheduler's KubeSchedulerConfiguration):
loaded, refused by field, merged onto the embedded profiles, and honoured by `phalanx run`,
`phalanx validate`, `phalanx export`, `phalanx scheduler --config` and
`phalanx manifests all --scheduler-config`. On a real API server:
tests/services/test_scheduler_config_real.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from phalanx.api.errors import ManifestError
from phalanx.cluster.clock import run_virtual
from phalanx.scheduler import configfile
from phalanx.scheduler.configfile import KubeSchedulerConfiguration, SchedulerConfigError
from phalanx.scheduler.framework.config import PROFILE_NAMES
from phalanx.sim.runner import Simulation
from phalanx.sim.workload import (
    embedded_default_config,
    load_cluster_spec,
    load_scheduler_config,
    load_workload,
)

PHALANX = [sys.executable, "-m", "phalanx.cli.main"]
SPREAD = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "podMaxBackoffSeconds": 20,
    "profiles": [{"schedulerName": "phalanx-scheduler", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "LeastAllocated"}}}]}],
}


def _write(path: Path, *docs: dict) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def _pods(n: int, scheduler: str = "phalanx-scheduler") -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"},
             "spec": {"schedulerName": scheduler, "containers": [
                 {"name": "c", "image": "x", "resources": {
                     "requests": {"cpu": "32", "nvidia.com/gpu": "1"},
                     "limits": {"nvidia.com/gpu": "1"}}}]}} for i in range(n)]


def test_a_kube_scheduler_configuration_file_loads_as_written(tmp_path: Path) -> None:
    cfg = configfile.load(_write(tmp_path / "s.yaml", SPREAD))
    assert isinstance(cfg, KubeSchedulerConfiguration)
    assert cfg.pod_max_backoff_seconds == 20
    assert cfg.to_dict() == SPREAD  # what was written, no defaults added


@pytest.mark.parametrize(("change", "message"), [
    ({"leaderElection": {"leaderElect": True}}, "leaderElection: unknown field"),
    ({"metadata": {"name": "x"}}, "metadata: unknown field"),
    ({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}, "v1beta3"),
    ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore"),
    ({"profiles": [{"schedulerName": "a", "pluginConfig": [
        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 500}}]}]},
     "hardPodAffinityWeight"),
    ({"profiles": [{"schedulerName": "a", "plugins": {"score": {"enabled": [
        {"name": "NoSuchPlugin"}]}}}]}, "NoSuchPlugin"),
])
def test_a_bad_field_is_refused_by_name(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(ManifestError) as err:
        configfile.load(_write(tmp_path / "s.yaml", {**SPREAD, **change}))
    assert message in str(err.value) and "s.yaml" in str(err.value)


def test_a_file_must_hold_only_the_configuration(tmp_path: Path) -> None:
    with pytest.raises(SchedulerConfigError, match="holds KubeSchedulerConfiguration, Pod"):
        configfile.load(_write(tmp_path / "s.yaml", SPREAD, *_pods(1)))


def test_the_embedded_profiles_are_replaced_by_name_and_the_rest_kept() -> None:
    user = KubeSchedulerConfiguration.model_validate({
        **SPREAD, "profiles": [*SPREAD["profiles"], {"schedulerName": "mine"}]})
    merged = configfile.embedded(user)
    names = [p.scheduler_name for p in merged.profiles]
    assert sorted(names) == sorted({*PROFILE_NAMES, "mine"})
    assert merged.profile("phalanx-scheduler").args_for("NodeResourcesFit") == {
        "scoringStrategy": {"type": "LeastAllocated"}}
    assert merged.profile("kai-scheduler").plugin_config == []
    assert merged.pod_max_backoff_seconds == 20
    assert [p.scheduler_name for p in configfile.embedded(None).profiles] == list(PROFILE_NAMES)


def _nodes_used(files: list[Path], scheduler_config: Path | None = None) -> set[str]:
    wl = load_workload(files)
    spec, _ = load_cluster_spec(None, wl)
    sched, source = load_scheduler_config(scheduler_config, wl)
    sim = Simulation(wl, spec, embedded_default_config(), scheduler_config=sched,
                     scheduler_config_source=source)
    sim.prepare()
    record = run_virtual(sim.run())
    assert record.meta.scheduler_config == (str(scheduler_config or "") if scheduler_config
                                            else wl.scheduler_config_source)
    return {p["spec"]["nodeName"] for p in record.objects["Pod"]}


def test_phalanx_run_schedules_with_the_given_profile(tmp_path: Path) -> None:
    pods = _write(tmp_path / "pods.yaml", *_pods(3))
    spread = _write(tmp_path / "spread.yaml", SPREAD)
    assert len(_nodes_used([pods])) == 1  # the default packs GPUs (MostAllocated)
    assert len(_nodes_used([pods, spread])) == 3  # a document among the workload files
    assert len(_nodes_used([pods], spread)) == 3  # --scheduler-config


def test_validate_checks_and_export_leaves_out_the_configuration(tmp_path: Path) -> None:
    pods = _write(tmp_path / "pods.yaml", *_pods(1))
    bad = _write(tmp_path / "bad.yaml", {**SPREAD, "profiles": [{"schedulerName": "a",
                 "pluginConfig": [{"name": "InterPodAffinity",
                                   "args": {"hardPodAffinityWeight": 500}}]}]})
    for argv in (["validate", str(pods), str(bad)],
                 ["validate", str(pods), "--scheduler-config", str(bad)]):
        done = subprocess.run([*PHALANX, *argv], capture_output=True, text=True, check=False)
        assert done.returncode == 1 and "hardPodAffinityWeight" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    good = _write(tmp_path / "good.yaml", SPREAD)
    done = subprocess.run([*PHALANX, "export", str(pods), str(good)], capture_output=True,
                          text=True, check=True)
    assert "KubeSchedulerConfiguration" not in done.stdout
    assert "left out the KubeSchedulerConfiguration" in done.stderr


def test_phalanx_scheduler_refuses_a_bad_config_before_connecting(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.yaml", {**SPREAD, "parallelism": 16})
    done = subprocess.run([*PHALANX, "scheduler", "--config", str(bad), "--kubeconfig",
                           str(tmp_path / "absent")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1 and "parallelism: unknown field" in done.stderr, done.stderr
    good = _write(tmp_path / "good.yaml", SPREAD)
    done = subprocess.run([*PHALANX, "scheduler", "--config", str(good), "--scheduler-name",
                           "x"], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "give one or the other" in done.stderr


def test_manifests_mount_the_configuration_into_the_scheduler(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.yaml", SPREAD)
    done = subprocess.run([*PHALANX, "manifests", "all", "--scheduler-config", str(good)],
                          capture_output=True, text=True, check=True)
    docs = list(yaml.safe_load_all(done.stdout))
    [cm] = [d for d in docs if d["kind"] == "ConfigMap"
            and d["metadata"]["name"] == "phalanx-scheduler-config"]
    assert yaml.safe_load(cm["data"]["config.yaml"]) == SPREAD
    [deploy] = [d for d in docs if d["kind"] == "Deployment"
                and d["metadata"]["name"] == "phalanx-scheduler"]
    pod = deploy["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    path = args[args.index("--config") + 1]
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "config"]
    assert path.startswith(mount["mountPath"] + "/")
    assert {"name": "config", "configMap": {"name": "phalanx-scheduler-config"}} in pod["volumes"]
    other = _write(tmp_path / "other.yaml", {**SPREAD, "profiles": [{"schedulerName": "x"}]})
    done = subprocess.run([*PHALANX, "manifests", "all", "--scheduler-config", str(other)],
                          capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "no profile has schedulerName 'phalanx-scheduler'" \
        in done.stderr
    assert json.dumps(SPREAD)  # the fixture itself is plain data
