from pathlib import Path

import pytest

from phalanx.api.config import (
    KNOWN_SCHEDULER_NAMES,
    ConfigError,
    OperatorConfiguration,
    load_operator_config,
    register_scheduler_name,
)
from phalanx.api.errors import ManifestError

HEAD = "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_operator_config(HEAD + text)
    assert isinstance(info.value, ManifestError)  # the CLI shows it without a traceback
    return [str(e) for e in info.value.errors]


def test_known_names():
    assert KNOWN_SCHEDULER_NAMES[:5] == [
        "default-scheduler",
        "kai-scheduler",
        "volcano",
        "koordinator",
        "phalanx-scheduler",
    ]


def test_all_defaults():
    cfg = load_operator_config()
    assert [p.name for p in cfg.scheduler.profiles] == ["default-scheduler"]
    assert cfg.scheduler.default_profile_name == "default-scheduler"
    assert cfg.controllers.pod_clique.concurrent_syncs >= 1
    assert cfg.server.webhooks.port == 2750 and not cfg.leader_election.enabled  # as Grove
    assert cfg.runtime_client_connection.burst == 120  # Grove's default
    assert cfg.log_level == "info"


def test_empty_profiles_mean_default_scheduler():
    cfg = load_operator_config(HEAD + "scheduler:\n  profiles: []\n")
    assert [p.name for p in cfg.scheduler.profiles] == ["default-scheduler"]


def test_default_scheduler_always_added():
    cfg = load_operator_config(HEAD + "scheduler:\n  profiles:\n  - name: kai-scheduler\n")
    assert cfg.scheduler.profile_names() == ["kai-scheduler", "default-scheduler"]
    assert cfg.scheduler.default_profile_name == "default-scheduler"


def test_listed_default_profile():
    cfg = load_operator_config(
        {
            "scheduler": {
                "profiles": [
                    {"name": "default-scheduler", "config": {"gangScheduling": True}},
                    {"name": "kai-scheduler", "config": {"anything": "the backend checks"}},
                ],
                "defaultProfileName": "kai-scheduler",
            }
        }
    )
    assert cfg.scheduler.default_profile_name == "kai-scheduler"
    assert cfg.scheduler.profile("default-scheduler").config == {"gangScheduling": True}


def test_default_profile_must_be_listed():
    errs = _errors("scheduler:\n  profiles: [{name: kai-scheduler}]\n  defaultProfileName: volcano\n")
    assert errs == [
        'scheduler.defaultProfileName: "volcano" is not a listed profile '
        "(profiles: kai-scheduler, default-scheduler)"
    ]


def test_duplicates_rejected():
    errs = _errors("scheduler:\n  profiles: [{name: kai-scheduler}, {name: kai-scheduler}]\n")
    assert errs == ['scheduler.profiles[1].name: duplicate profile "kai-scheduler"']


def test_unknown_backend_rejected_with_suggestion():
    errs = _errors("scheduler:\n  profiles: [{name: kai}]\n")
    assert errs[0].startswith('scheduler.profiles[0].name: unknown scheduler backend "kai"; ')
    assert 'did you mean "kai-scheduler"?' in errs[0]


def test_default_scheduler_config_keys():
    errs = _errors(
        "scheduler:\n  profiles:\n  - name: default-scheduler\n"
        "    config: {gangScheduling: 'yes', workloadAPIVersion: scheduling.k8s.io/v1alpha2, "
        "gangSchedulng: true}\n"
    )
    assert errs == [
        "scheduler.profiles[0].config.gangScheduling: must be a boolean (true or false), got 'yes'",
        'scheduler.profiles[0].config.gangSchedulng: unknown field for default-scheduler; '
        'did you mean "gangScheduling"? (allowed: gangScheduling, workloadAPIVersion, '
        'mismatchPolicy, podSchedulingGate)',
    ]
    ok = load_operator_config(
        HEAD + "scheduler:\n  profiles:\n  - name: default-scheduler\n"
        "    config: {gangScheduling: true, workloadAPIVersion: scheduling.k8s.io/v1alpha2}\n"
    )
    assert ok.scheduler.profiles[0].config["gangScheduling"] is True


def test_workload_api_version_without_gang_scheduling_is_refused():
    """It picks the API of the Workload objects gang scheduling writes: without
    gangScheduling: true nothing is written, so the field would do nothing."""
    for config in ("{workloadAPIVersion: scheduling.k8s.io/v1alpha1}",
                   "{gangScheduling: false, workloadAPIVersion: v1alpha2}"):
        errs = _errors(f"scheduler:\n  profiles:\n  - name: default-scheduler\n"
                       f"    config: {config}\n")
        assert errs == [("scheduler.profiles[0].config.workloadAPIVersion: has no effect "
                         "without gangScheduling: true (only gang scheduling writes Workload "
                         "API objects); set gangScheduling: true or remove it")]


def test_every_problem_reported_at_once():
    errs = _errors(
        "scheduler:\n  profiles: [{name: volcano}, {name: volcano}, {name: nope}]\n"
        "  defaultProfileName: other\n"
    )
    assert [e.split(":")[0] for e in errs] == [
        "scheduler.profiles[1].name",
        "scheduler.profiles[2].name",
        "scheduler.defaultProfileName",
    ]


def test_schema_errors_name_the_field(tmp_path: Path):
    path = tmp_path / "operator.yaml"
    path.write_text(HEAD + "scheduler:\n  profile: []\nserver:\n  webhooks: {port: 70000}\n")
    with pytest.raises(ConfigError) as info:
        load_operator_config(path)
    text = str(info.value)
    assert text.startswith(f"{path}, document 1 (OperatorConfiguration): 2 problems")
    assert "line 4: scheduler.profile: unknown field; did you mean 'profiles'?" in text
    assert "line 6: server.webhooks.port: must be <= 65535, got integer 70000" in text


def test_leader_election_timing_checked():
    errs = _errors("leaderElection: {enabled: true, leaseDuration: 10s, renewDeadline: 15s}\n")
    # Grove names leaseDuration ("LeaseDuration must be greater than RenewDeadline").
    assert errs == ["leaderElection.leaseDuration: must be greater than renewDeadline "
                    "(10s <= 15s)"]


def test_backends_can_extend_the_known_names():
    register_scheduler_name("test-only-scheduler")
    try:
        cfg = load_operator_config({"scheduler": {"profiles": [{"name": "test-only-scheduler"}]}})
        assert "test-only-scheduler" in cfg.scheduler.profile_names()
    finally:
        KNOWN_SCHEDULER_NAMES.remove("test-only-scheduler")


def test_one_document_expected():
    with pytest.raises(ConfigError, match="exactly one OperatorConfiguration"):
        load_operator_config(HEAD + "---\n" + HEAD)


def test_round_trip_dump_has_no_metadata():
    cfg = load_operator_config()
    data = cfg.to_dict()
    assert "metadata" not in data and data["kind"] == "OperatorConfiguration"
    assert load_operator_config(data) == cfg
    assert isinstance(load_operator_config(cfg), OperatorConfiguration)
