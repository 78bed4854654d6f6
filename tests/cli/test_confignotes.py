"""What `phalanx run` and `validate` say about the configuration before anything runs
(phalanx/cli/confignotes.py): a workload file's OperatorConfiguration or ClusterSpec that a
flag replaced (a warning naming the file; checked all the same), fields Phalanx does not act
on (a warning, e.g. `authorizer.enabled`), and the settings only `phalanx operator` reads
(one dim note)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from phalanx.api.config import ConfigError
from phalanx.cli.main import app
from tests.sim.workloads import pcs

HEAD = "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"
PHX = "scheduler: {profiles: [{name: phalanx-scheduler}], defaultProfileName: phalanx-scheduler}\n"
CLUSTER = ("apiVersion: sim.phalanx.dev/v1alpha1\nkind: ClusterSpec\nmetadata: {name: c}\n"
           "spec:\n  nodePools:\n  - {name: p, count: 8, allocatable: {cpu: '64', "
           "nvidia.com/gpu: '8'}}\n")
COMMANDS = [("validate",), ("run", "--dry-run")]


def invoke(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=True)
    if isinstance(result.exception, ConfigError):
        raise result.exception
    return result.exit_code, " ".join(result.stderr.split())


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_replaced_workload_document_is_named(tmp_path: Path, command: tuple[str, ...]) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(pcs() + "---\n" + HEAD + PHX + "---\n" + CLUSTER)
    cfg, cluster = tmp_path / "cfg.yaml", tmp_path / "cluster.yaml"
    cfg.write_text(HEAD + PHX)
    cluster.write_text(CLUSTER)
    code, err = invoke(tmp_path, *command, str(wl), "--config", str(cfg), "--cluster",
                       str(cluster))
    assert code == 0, err
    assert (f"warning: {wl}: its OperatorConfiguration is not used, --config {cfg} is "
            "(it was checked)") in err
    assert f"warning: {wl}: its ClusterSpec is not used, --cluster {cluster} is" in err
    # Without the flags, no such warning.
    code, err = invoke(tmp_path, *command, str(wl))
    assert code == 0 and "not used" not in err, err


def test_a_replaced_workload_config_is_still_checked(tmp_path: Path) -> None:
    wl = tmp_path / "w.yaml"
    wl.write_text(pcs() + "---\n" + HEAD + "scheduler: {defaultProfileName: volcano}\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(HEAD + PHX)
    with pytest.raises(ConfigError) as err:
        invoke(tmp_path, "validate", str(wl), "--config", str(cfg))
    assert str(err.value).startswith(f"{wl}: ") and "scheduler.defaultProfileName" in str(
        err.value)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_fields_phalanx_does_not_act_on_are_warned_about(tmp_path: Path,
                                                          command: tuple[str, ...]) -> None:
    wl, cfg = tmp_path / "w.yaml", tmp_path / "cfg.yaml"
    wl.write_text(pcs())
    cfg.write_text(HEAD + PHX + "authorizer: {enabled: true}\n")
    code, err = invoke(tmp_path, *command, str(wl), "--config", str(cfg))
    assert code == 0, err
    assert f"warning: {cfg}: authorizer.enabled: ignored: Phalanx has no authorizer webhook" \
        in err


def test_service_settings_get_one_note(tmp_path: Path) -> None:
    wl, cfg = tmp_path / "w.yaml", tmp_path / "cfg.yaml"
    wl.write_text(pcs())
    cfg.write_text(HEAD + PHX + "logLevel: debug\nleaderElection: {enabled: true}\n"
                   "server: {metrics: {bindAddress: 1.2.3.4}}\n"
                   "runtimeClientConnection: {qps: 1}\n")
    code, err = invoke(tmp_path, "run", "--dry-run", str(wl), "--config", str(cfg))
    assert code == 0, err
    assert (f"note: {cfg}: server, leaderElection, runtimeClientConnection, logLevel: read by "
            "`phalanx operator` on a real cluster only") in err
    assert err.count("note:") == 1
    # Defaults (as written or left out) are not noted.
    cfg.write_text(HEAD + PHX + "logLevel: info\nserver: {healthProbes: {port: 2751}}\n")
    code, err = invoke(tmp_path, "run", "--dry-run", str(wl), "--config", str(cfg))
    assert code == 0 and "note:" not in err and "warning" not in err, err


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_the_scheduler_plugins_profile_is_known(tmp_path: Path, command: tuple[str, ...]) -> None:
    wl, cfg = tmp_path / "w.yaml", tmp_path / "cfg.yaml"
    wl.write_text(pcs(scheduler="scheduler-plugins-scheduler"))
    cfg.write_text(HEAD + "scheduler:\n  profiles:\n  - name: scheduler-plugins\n"
                   "    config: {scheduleTimeout: 90s}\n  - name: phalanx-scheduler\n")
    code, err = invoke(tmp_path, *command, str(wl), "--config", str(cfg))
    assert code == 0, err
