"""Grove's OperatorConfiguration, as Grove writes and validates it (issue 22, Grove row of item
4): Grove's own files (operator/cmd/cli/testdata) load, each field Phalanx does not honour is
named by `ignored_fields`, and Grove's validation tests
(operator/api/config/validation/validation_test.go) for the fields Phalanx honours, one
parametrized test per Go test with the Go row names as ids.

Phalanx validates a configuration after defaulting it (`load_operator_config`), as Grove's
operator does at start-up; Grove's tests call the validators on un-defaulted structs. Rows
whose outcome comes only from skipping the defaults are listed here, not ported:
- TestValidateSchedulerConfiguration "invalid: empty profiles and empty defaultProfileName",
  "invalid: empty profiles with defaultProfileName set", "invalid: single kai without kube
  profile", "invalid: defaultProfileName omitted", "invalid: defaultProfileName not in
  profiles (default-scheduler but only kai in profiles)" (its Required half): Grove's
  defaulting (and GREP-375's) adds the default-scheduler profile and the default profile
  name, so after defaulting these are valid in Grove too; the Invalid half of the last row
  cannot occur after defaulting either.
- TestValidateControllerConfiguration "invalid: all concurrentSyncs nil" and
  TestValidateOperatorConfiguration "invalid: scheduler missing kube profile and controller
  nil syncs": nil means "the default" (Grove's defaulting sets 10 / 5).
- TestValidateLeaderElectionConfiguration "invalid: leaseDuration is zero", "invalid:
  renewDeadline is zero", "invalid: retryPeriod is zero", "invalid: empty resourceLock",
  "invalid: empty resourceName", "invalid: all durations zero, missing resourceLock and
  resourceName": Grove's DecodeOperatorConfig defaults a zero duration (15s / 10s / 2s), an
  empty lock (leases) and name before it validates, so these load in Grove too (ported as
  such: test_config_defaults.py); a negative duration is refused.
Deliberate differences, ported as such:
- "valid: multiple schedulers kube default" and "valid: lpx enabled with kube default" name
  `lpx-scheduler`, a backend Phalanx does not have: refused naming the profile (it could not
  be honoured), so those rows expect that error.
- "invalid: profile with empty name": one error at scheduler.profiles[0].name (Grove adds two
  pre-defaulting ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.api.config import ConfigError, ignored_fields, load_operator_config

# Grove's sources beside the checkout (../ref/grove), when present.
GROVE_TESTDATA = Path(__file__).resolve().parents[3] / "ref/grove/operator/cmd/cli/testdata"
HEAD = {"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration"}


def _load(**fields: Any) -> Any:
    return load_operator_config({**HEAD, **fields})


def _problems(**fields: Any) -> list[str]:
    try:
        _load(**fields)
    except ConfigError as err:
        return [e.path for e in err.errors] or [err.message]
    return []


# --- Grove's own configuration files ----------------------------------------------------------

VALID_CONFIG = """\
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
runtimeClientConnection:
  qps: 100
  burst: 150
leaderElection:
  enabled: true
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
  resourceLock: leases
  resourceName: grove-operator-leader-election
  resourceNamespace: default
server:
  webhooks:
    bindAddress: 0.0.0.0
    port: 9443
    serverCertDir: /etc/grove-operator/webhook-certs
  healthProbes:
    bindAddress: 0.0.0.0
    port: 9444
  metrics:
    bindAddress: 0.0.0.0
    port: 9445
controllers:
  podCliqueSet:
    concurrentSyncs: 3
  podClique:
    concurrentSyncs: 3
  podCliqueScalingGroup:
    concurrentSyncs: 2
scheduler:
  profiles:
    - name: kai-scheduler
logLevel: info
logFormat: json
authorizer:
  enabled: false
clusterTopology:
  enabled: false
network:
  autoMNNVLEnabled: {mnnvl}
"""


@pytest.mark.parametrize("mnnvl", [False, True], ids=["valid-config.yaml",
                                                     "valid-config-mnnvl-enabled.yaml"])
def test_grove_valid_config_files_load(tmp_path: Path, mnnvl: bool) -> None:
    """Grove's testdata files (copied here; compared with Grove's when its sources are
    beside the checkout) load; what Phalanx does not do is named, never refused."""
    text = VALID_CONFIG.replace("{mnnvl}", str(mnnvl).lower())
    name = "valid-config-mnnvl-enabled.yaml" if mnnvl else "valid-config.yaml"
    if (GROVE_TESTDATA / name).exists():
        assert (GROVE_TESTDATA / name).read_text().strip() == text.strip()
    path = tmp_path / name
    path.write_text(text)
    cfg = load_operator_config(path)
    assert cfg.scheduler.profile_names() == ["kai-scheduler", "default-scheduler"]
    assert cfg.leader_election.resource_name == "grove-operator-leader-election"
    assert cfg.controllers.pod_clique_scaling_group.concurrent_syncs == 2
    assert (cfg.server.webhooks.port, cfg.server.health_probes.port) == (9443, 9444)
    ignored = ignored_fields(cfg)
    assert cfg.network.auto_mnnvl_enabled is mnnvl  # honoured: operator/computedomain.py
    assert [line.split(":")[0] for line in ignored] == ["clusterTopology"]


def test_grove_invalid_config_file_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "invalid-config.yaml"
    path.write_text(VALID_CONFIG.replace("burst: 150", "burst: -10 # invalid value")
                    .replace("{mnnvl}", "false"))
    with pytest.raises(ConfigError) as err:
        load_operator_config(path)
    assert [e.path for e in err.value.errors] == ["runtimeClientConnection.burst"]


def test_every_grove_field_set_to_something_phalanx_does_not_do_is_named() -> None:
    cfg = _load(authorizer={"enabled": True, "exemptServiceAccountUserNames": ["a"]},
                debugging={"enableProfiling": True, "pprofBindPort": 2753},
                runtimeClientConnection={"contentType": "application/vnd.kubernetes.protobuf",
                                         "acceptContentTypes": "application/json"})
    assert [line.split(":")[0] for line in ignored_fields(cfg)] == [
        "authorizer.enabled", "debugging.enableProfiling", "runtimeClientConnection.contentType"]
    assert ignored_fields(_load(authorizer={"enabled": False})) == []
    # What Phalanx does anyway is not named: JSON, profiling off.
    assert ignored_fields(_load(debugging={"enableProfiling": False},
                                runtimeClientConnection={"contentType": "application/json",
                                                         "acceptContentTypes":
                                                         "application/json"})) == []
    assert [line.split(":")[0] for line in ignored_fields(_load(runtimeClientConnection={
        "acceptContentTypes": "application/vnd.kubernetes.protobuf"}))] == [
        "runtimeClientConnection.acceptContentTypes"]


# --- TestValidateSchedulerConfiguration -------------------------------------------------------

SCHEDULER = [
    ("valid: single kube default", [{"name": "default-scheduler"}], "default-scheduler", []),
    ("valid: kai and kube profiles with kai default",
     [{"name": "kai-scheduler"}, {"name": "default-scheduler"}], "kai-scheduler", []),
    ("valid: multiple schedulers kube default",
     [{"name": "default-scheduler"}, {"name": "kai-scheduler"}, {"name": "lpx-scheduler"}],
     "default-scheduler", ["scheduler.profiles[2].name"]),
    ("valid: lpx enabled with kube default",
     [{"name": "default-scheduler"}, {"name": "lpx-scheduler"}], "default-scheduler",
     ["scheduler.profiles[1].name"]),
    ("valid: multiple schedulers kai default",
     [{"name": "default-scheduler"}, {"name": "kai-scheduler"}], "kai-scheduler", []),
    ("valid: volcano and kube profiles with volcano default",
     [{"name": "volcano"}, {"name": "default-scheduler"}], "volcano", []),
    ("invalid: defaultProfileName not in profiles (e.g. invalid-scheduler)",
     [{"name": "default-scheduler"}, {"name": "kai-scheduler"}], "invalid-scheduler",
     ["scheduler.defaultProfileName"]),
    ("invalid: profile with empty name", [{"name": ""}], "default-scheduler",
     ["scheduler.profiles[0].name"]),
    ("invalid: unsupported profile name",
     [{"name": "unknown-scheduler"}, {"name": "default-scheduler"}], "unknown-scheduler",
     ["scheduler.profiles[0].name", "scheduler.defaultProfileName"]),
    ("invalid: duplicate profile names",
     [{"name": "default-scheduler"}, {"name": "default-scheduler"}], "default-scheduler",
     ["scheduler.profiles[1].name"]),
]


@pytest.mark.parametrize(("profiles", "default", "fields"), [r[1:] for r in SCHEDULER],
                         ids=[r[0] for r in SCHEDULER])
def test_ValidateSchedulerConfiguration(profiles: list[dict[str, str]], default: str,
                                        fields: list[str]) -> None:
    assert _problems(scheduler={"profiles": profiles, "defaultProfileName": default}) == fields


# --- TestValidateLeaderElectionConfiguration --------------------------------------------------

VALID_LE = {"enabled": True, "leaseDuration": "15s", "renewDeadline": "10s",
            "retryPeriod": "2s", "resourceLock": "leases",
            "resourceName": "grove-operator-leader-election"}
LE = [
    ("valid: disabled - skips all checks", {"enabled": False, "leaseDuration": "-1s",
                                            "renewDeadline": "5s"}, []),
    ("valid: all fields properly configured", {}, []),
    ("invalid: leaseDuration is negative", {"leaseDuration": "-15s"},
     ["leaderElection.leaseDuration", "leaderElection.leaseDuration"]),
    ("invalid: renewDeadline is negative", {"renewDeadline": "-1s"},
     ["leaderElection.renewDeadline"]),
    ("invalid: retryPeriod is negative", {"retryPeriod": "-1s"}, ["leaderElection.retryPeriod"]),
    ("invalid: leaseDuration equal to renewDeadline",
     {"leaseDuration": "10s", "renewDeadline": "10s"}, ["leaderElection.leaseDuration"]),
    ("invalid: leaseDuration less than renewDeadline",
     {"leaseDuration": "5s", "renewDeadline": "10s"}, ["leaderElection.leaseDuration"]),
    # client-go's NewLeaderElector (Grove's operator fails to start): renewDeadline >
    # retryPeriod * 1.2.
    ("invalid: retryPeriod not below renewDeadline",
     {"renewDeadline": "10s", "retryPeriod": "12s"}, ["leaderElection.renewDeadline"]),
    ("invalid: renewDeadline within retryPeriod's jitter",
     {"renewDeadline": "2.2s", "retryPeriod": "2s"}, ["leaderElection.renewDeadline"]),
]


@pytest.mark.parametrize(("change", "fields"), [r[1:] for r in LE], ids=[r[0] for r in LE])
def test_ValidateLeaderElectionConfiguration(change: dict[str, Any], fields: list[str]) -> None:
    assert _problems(leaderElection={**VALID_LE, **change}) == fields


def test_the_retry_rule_is_named_with_both_values() -> None:
    with pytest.raises(ConfigError) as err:
        _load(leaderElection={"enabled": True, "leaseDuration": "15s", "renewDeadline": "10s",
                              "retryPeriod": "12s"})
    assert [str(e) for e in err.value.errors] == [
        ("leaderElection.renewDeadline: must be greater than retryPeriod x 1.2 (client-go's "
         "JitterFactor: 10s <= 14.4s)")]


# --- TestValidateClientConnectionConfiguration ------------------------------------------------

CLIENT = [
    ("valid: zero burst", {"burst": 0}, []),
    ("valid: positive burst", {"burst": 120}, []),
    ("valid: positive QPS and burst", {"qps": 100.0, "burst": 120}, []),
    ("invalid: negative burst", {"burst": -1}, ["runtimeClientConnection.burst"]),
]


@pytest.mark.parametrize(("conn", "fields"), [r[1:] for r in CLIENT], ids=[r[0] for r in CLIENT])
def test_ValidateClientConnectionConfiguration(conn: dict[str, Any], fields: list[str]) -> None:
    assert _problems(runtimeClientConnection=conn) == fields


def test_zero_qps_and_burst_mean_the_defaults() -> None:
    cfg = _load(runtimeClientConnection={"qps": 0, "burst": 0}, logLevel="", logFormat="")
    conn = cfg.runtime_client_connection
    assert (conn.qps, conn.burst, cfg.log_level, cfg.log_format) == (100.0, 120, "info", "json")


# --- TestValidateControllerConfiguration ------------------------------------------------------

VALID_CONTROLLERS = {"podCliqueSet": {"concurrentSyncs": 10}, "podClique": {"concurrentSyncs": 10},
                     "podCliqueScalingGroup": {"concurrentSyncs": 5},
                     "podGang": {"concurrentSyncs": 5}}
CONTROLLERS = [
    ("valid: all controllers properly configured", {}, []),
    ("invalid: only podCliqueSet has invalid concurrentSyncs",
     {"podCliqueSet": {"concurrentSyncs": 0}}, ["controllers.podCliqueSet.concurrentSyncs"]),
    ("invalid: only podGang has invalid concurrentSyncs",
     {"podGang": {"concurrentSyncs": -1}}, ["controllers.podGang.concurrentSyncs"]),
]


@pytest.mark.parametrize(("change", "fields"), [r[1:] for r in CONTROLLERS],
                         ids=[r[0] for r in CONTROLLERS])
def test_ValidateControllerConfiguration(change: dict[str, Any], fields: list[str]) -> None:
    assert _problems(controllers={**VALID_CONTROLLERS, **change}) == fields


# --- TestValidateOperatorConfiguration --------------------------------------------------------

VALID_OPERATOR = {"logLevel": "info", "logFormat": "json",
                  "scheduler": {"profiles": [{"name": "default-scheduler"}],
                                "defaultProfileName": "default-scheduler"},
                  "leaderElection": VALID_LE, "runtimeClientConnection": {"qps": 100.0,
                                                                          "burst": 120},
                  "controllers": VALID_CONTROLLERS,
                  "topologyAwareScheduling": {"enabled": False}}
OPERATOR = [
    ("valid: fully configured", {}, 0),
    ("valid: leader election disabled", {"leaderElection": {"enabled": False}}, 0),
    ("valid: empty log level and format (skipped)", {"logLevel": "", "logFormat": ""}, 0),
    ("invalid: unsupported log level", {"logLevel": "verbose"}, 1),
    ("invalid: unsupported log format", {"logFormat": "yaml"}, 1),
    ("invalid: errors from multiple sections",
     {"logLevel": "verbose", "runtimeClientConnection": {"burst": -1},
      "controllers": {**VALID_CONTROLLERS, "podCliqueSet": {"concurrentSyncs": 0}}}, 3),
]


@pytest.mark.parametrize(("change", "count"), [r[1:] for r in OPERATOR],
                         ids=[r[0] for r in OPERATOR])
def test_ValidateOperatorConfiguration(change: dict[str, Any], count: int) -> None:
    assert len(_problems(**{**VALID_OPERATOR, **change})) == count


def test_SetDefaults_ControllerConfigurations() -> None:
    """Grove's defaults.go: PodCliqueSet and PodClique 10 workers, PodCliqueScalingGroup and
    PodGang 5."""
    c = load_operator_config().controllers
    assert (c.pod_clique_set.concurrent_syncs, c.pod_clique.concurrent_syncs,
            c.pod_clique_scaling_group.concurrent_syncs, c.pod_gang.concurrent_syncs) == (
        10, 10, 5, 5)


def test_a_controller_grove_does_not_have_is_refused_naming_it() -> None:
    import yaml

    text = yaml.safe_dump({**HEAD, "controllers": {"gangStatus": {"concurrentSyncs": 3}}})
    with pytest.raises(ConfigError, match="gangStatus"):
        load_operator_config(text)
